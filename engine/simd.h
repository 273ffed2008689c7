/* simd.h — run-time choice of vector width for element-wise loops.
 *
 * LS_SIMD_CLONES asks the compiler for AVX-512, AVX2 and baseline versions of
 * a function and picks one when the program starts (function multiversioning),
 * so the default binary needs no -march flag. Only for loops whose every
 * element is computed on its own (x[i] = f(a[i], b[i])): IEEE arithmetic is
 * exact per element, so every version gives the same bits. A sum across
 * elements must not use it: its order would change with the vector width.
 * Kernels that do sum (engine/dense.c) have hand-written SIMD paths with
 * scalar twins instead. The loops also carry `#pragma omp simd` (the build
 * has -fopenmp-simd, no OpenMP runtime): gcc's -O2 cost model would
 * otherwise leave them scalar. It allows no reassociation either.
 */
#ifndef LS_SIMD_H
#define LS_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(LS_NO_CLONES) && \
    (!defined(__clang__) || __clang_major__ >= 14)
#define LS_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LS_SIMD_CLONES
#endif

#endif
