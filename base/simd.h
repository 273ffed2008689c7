/* simd.h — run-time choice of vector width: element-wise loops and kernel paths.
 *
 * LS_SIMD_CLONES asks the compiler for AVX-512, AVX2 and baseline versions of
 * a function and picks one when the program starts (function multiversioning),
 * so the default binary needs no -march flag. Only for loops whose every
 * element is computed on its own (x[i] = f(a[i], b[i])): IEEE arithmetic is
 * exact per element, so every version gives the same bits. A sum across
 * elements must not use it: its order would change with the vector width.
 * Kernels that do sum (engine/num/dense.c) have hand-written SIMD paths with
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

/* A kernel's inner step that the compiler must inline, so that the
 * caller's accumulators stay in registers (dense, optimiser, logic kernels). */
#define FORCE_INLINE inline __attribute__((always_inline))

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

/* v * c and v + c (and acc + v * c fused, below) with the scalar *c
 * broadcast to 16 lanes as the AVX-512 instruction's memory operand ({1to16}): the same rounded operation as
 * _mm512_mul_ps / _mm512_add_ps with _mm512_set1_ps(*c), without a separate
 * vbroadcastss. On Zen 4 a vbroadcastss zmm competes with the multiplies and
 * adds for the FP pipes: a dense 4 x 4 tile with one broadcast per row ran
 * at about 82% of the mul+add peak, with the folded form at 99% (a
 * stand-alone copy of engine/num/dense.c's loop on the MLP's shapes). Compilers
 * do not reliably fold the broadcast when the intrinsics are used, so the
 * instruction is written out (AT&T syntax, the compilers' default). For
 * functions built with target("avx512f").
 *
 * When both operands are NaN, the result is v's NaN (an EVEX memory operand
 * is always the second source); which payload wins then is not part of the
 * contract (the intrinsics never pinned it either, and the record's hashes
 * canonicalise NaN). Sanitizers do not see memory read inside inline asm,
 * so ASan and TSan builds take the intrinsics: the same rounded results,
 * every read checked. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LS_SIMD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LS_SIMD_SANITIZED 1
#endif
#endif

#ifdef LS_SIMD_SANITIZED
#define LS_BCAST_BODY(insn, intrin) return intrin(v, _mm512_set1_ps(*c));
#else
#define LS_BCAST_BODY(insn, intrin)                                                          \
    __m512 r;                                                                                 \
    __asm__(insn " %[c]%{1to16%}, %[v], %[r]" : [r] "=v"(r) : [v] "v"(v), [c] "m"(*c)); \
    return r;
#endif

static inline __attribute__((always_inline, target("avx512f")))
__m512 simd_mul_bcast_z(__m512 v, const float *c)
{
    LS_BCAST_BODY("vmulps", _mm512_mul_ps)
}

static inline __attribute__((always_inline, target("avx512f")))
__m512 simd_add_bcast_z(__m512 v, const float *c)
{
    LS_BCAST_BODY("vaddps", _mm512_add_ps)
}

/* acc + v * c rounded once (a fused multiply-add, as fmaf(v, *c, acc) per
 * lane), *c broadcast as the memory operand like the two above. */
static inline __attribute__((always_inline, target("avx512f")))
__m512 simd_fmadd_bcast_z(__m512 acc, __m512 v, const float *c)
{
#ifdef LS_SIMD_SANITIZED
    return _mm512_fmadd_ps(v, _mm512_set1_ps(*c), acc);
#else
    __asm__("vfmadd231ps %[c]%{1to16%}, %[v], %[acc]" : [acc] "+v"(acc) : [v] "v"(v), [c] "m"(*c));
    return acc;
#endif
}
#endif

#endif
