/* simd.h — run-time choice of vector width: element-wise loops and kernel paths.
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

/* Run-time choice of the hand-written SIMD paths (dense and logic kernels).
 * The CPU is asked once; LOCKSTEP_SIMD ("off", "0" or "scalar": the scalar
 * twins; "avx2": at most AVX2; else the best the CPU offers) gives every
 * switch its starting setting, and each kernel module keeps its own switch so
 * tests can force one path without touching the other. Reading and setting
 * a switch are atomic, so a call made while kernels run is not a data race. */
#include <stdatomic.h>

enum { SIMD_PATH_SCALAR = 0, SIMD_PATH_AVX2 = 1, SIMD_PATH_AVX512 = 2 };
enum { SIMD_OFF = 0, SIMD_BEST = 1, SIMD_AVX2 = 2 };

typedef struct {
    atomic_int setting;   /* SIMD_OFF / SIMD_BEST / SIMD_AVX2, or -1 before first use */
} simd_switch;
#define SIMD_SWITCH_INIT { -1 }

int simd_path(simd_switch *s);              /* the path a kernel takes now */
int simd_set(simd_switch *s, int enabled);  /* returns the previous setting */
const char *simd_path_name(int path);       /* "avx512", "avx2", "scalar" */

#endif
