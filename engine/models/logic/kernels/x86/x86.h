/* x86.h — what the x86-64 SIMD paths of the logic kernels share, and their
 * entry points for the dispatch in engine/models/logic/logic.c.
 *
 * The kernels live beside the reference (scalar twin) kernels the way BLIS
 * keeps kernels/<arch>/ beside its reference kernels: avx512.c holds the
 * AVX-512F path, avx2.c the AVX2 path, each built for the default target
 * with the ISA named per function (target attributes), so the default build
 * needs no -march flag and logic.c picks a path at run time (base/simd.h).
 * Every entry point computes exactly what its scalar twin in logic.c
 * computes, bit for bit (logic.c's header comment says how). This header
 * is private to engine/models/logic/: the constants and helpers below are
 * static, one copy per file that includes it.
 */
#ifndef LS_LOGIC_KERNELS_X86_H
#define LS_LOGIC_KERNELS_X86_H

#include <stddef.h>
#include <stdint.h>

#include "base/simd.h"
#include "engine/models/logic/logic.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define LOGIC_X86 1
#include <immintrin.h>
#else
#define LOGIC_X86 0
#endif

/* The exp arguments the vector paths take (below), and how many vectors
 * they evaluate side by side: logic.c's dispatch sizes its blocks by them. */
#define EXP_LO (-700.0f)
#define EXP_GROUP 8

/* Internal flag of logic_avx512_backward: the dx rows hold no −0 (avx512.c,
 * "Silent gates"); logic.c sets it when LOGIC_DX_SET (or no dx) says so. */
#define SILENT_OK 0x100

#if LOGIC_X86

/* The entry points: logic_forward, logic_backward, logic_backward_lanes,
 * logic_coeffs, logic_expand, logic_exp_lanes (8 lanes in [EXP_LO, 0]) and
 * logic_expf_lanes (one block of 64 floats; AVX2: 32) on one path. The
 * backward kernels take the first flags dx_set_plan left (logic.c). */
__attribute__((target("avx512f")))
void logic_avx512_forward(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld);
__attribute__((target("avx512f")))
void logic_avx512_backward(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                           const float *coef, size_t n, size_t ld, int flags, const uint8_t *first);
__attribute__((target("avx512f")))
void logic_avx512_backward_lanes(float *dx, float *stats, size_t stride, const float *dy, const float *x,
                                 const logic_layer *L, const float *coef, const uint8_t *first, size_t nvl,
                                 size_t m, int accumulate);
__attribute__((target("avx512f")))
void logic_avx512_coeffs(const float *logits, size_t gates, float *p, float *coef);
__attribute__((target("avx512f")))
void logic_avx512_expand(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo, size_t hi);
__attribute__((target("avx512f")))
void logic_avx512_exp_lanes(const double *x, double *out);
__attribute__((target("avx512f")))
void logic_avx512_expf_lanes(const float *x, float *out, int shortcut);

__attribute__((target("avx2")))
void logic_avx2_forward(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld);
__attribute__((target("avx2")))
void logic_avx2_backward(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                         const float *coef, size_t n, size_t ld, int flags, const uint8_t *first);
__attribute__((target("avx2")))
void logic_avx2_backward_lanes(float *dx, float *stats, size_t stride, const float *dy, const float *x,
                               const logic_layer *L, const float *coef, const uint8_t *first, size_t nvl, size_t m,
                               int accumulate);
__attribute__((target("avx2")))
void logic_avx2_coeffs(const float *logits, size_t gates, float *p, float *coef);
__attribute__((target("avx2")))
void logic_avx2_expand(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo, size_t hi);
__attribute__((target("avx2")))
void logic_avx2_exp_lanes(const double *x, double *out);
__attribute__((target("avx2")))
void logic_avx2_expf_lanes(const float *x, float *out, int shortcut);


/* ---- logic_backward_lanes: one vector per virtual accumulator. ----
 *
 * The rows are packed (logic.h): virtual lane vl of the m samples is the m
 * floats at vl·m. A load of 16 floats there, masked to m lanes, puts sample
 * j in lane j, so the 16 virtual accumulators of a statistic are 16 vectors
 * and the pairwise tree is vertical adds for all samples at once instead
 * of a horizontal tree per sample. Two shortcuts
 * keep the definition's bits. Write f(x) = x + 0.0f: it maps −0 to +0 and
 * leaves every other value (NaN and ±inf included) as it is. In
 * round-to-nearest without flush-to-zero (dmath refuses FTZ/DAZ) a sum is
 * −0 only when both operands are −0, hence
 *     f(a) + b = f(a + b)   and   f(a) + f(b) = f(a + b)   for all a, b.
 * An accumulator of the definition is (0.0f + t1) + t2 + ... = f(t1 + t2 +
 * ...), a node of the tree is the sum of two such values, an empty
 * accumulator is +0.0f and adding it is one more f; f(f(x)) = f(x). So the
 * definition's S is f applied once to the same tree computed without the
 * empty accumulators (those of virtual lanes >= nvl when nvl < 16) and
 * without the additions from 0.0f: a node whose right half is empty is its
 * left half. tests/test_logic.c checks it with −0, denormals and sums that
 * cancel, on every path.
 *
 * A gate's statistics are computed accumulator by accumulator
 * (accumulator v: virtual lanes v, v + 16, ... in increasing order), four
 * at a time into a node of the tree's second level, so the tree is built
 * as the accumulators come and stays in registers. Its dx comes first, in
 * a pass of its own over the packed rows, whole vectors: each element is
 * touched once by the gate, so how elements share a vector does not matter
 * (within an element, a gate still updates row a before row b, gates in
 * order), and packed, gol's groups of 10 samples of 9 cells take 6 vectors
 * a row where one vector a virtual lane took 9. A row's first update under
 * LOGIC_DX_SET adds to +0 instead of the row's contents, as in
 * logic_backward: a masked load of nothing (AVX-512) or the contents ANDed
 * with zero bits (AVX2). */

/* st[0..3] = v, or st[k] = st[k] + v[k] with accumulate. */
static FORCE_INLINE __attribute__((target("avx2")))
void lanes_put4(float *st, __m128 v, int accumulate)
{
    if (accumulate)
        v = _mm_add_ps(_mm_loadu_ps(st), v);
    _mm_storeu_ps(st, v);
}

/* ---- logic_coeffs: dmath_expf on 8 (4) lanes of binary64. ----
 *
 * dmath_exp's operations (engine/num/dmath.c), lane by lane, for arguments in
 * [EXP_LO, 0], where its result is normal and it takes the k <= 1023,
 * k >= -1021 branch: t = x·INV_LN2, k = trunc(t ± 0.5) (toward zero, as
 * the (int) conversion), hi = x − k·LN2_HI, lo = k·LN2_LO, r = hi − lo, the
 * same Horner chain, q = (r·r)·p, s = 1 + hi, err = (1 − s) + hi,
 * y = s + (err + (q − lo)), y·2^k with 2^k built from its exponent bits;
 * then rounded once to float (y <= 1: no overflow, as narrow()). A gate with
 * any argument outside [EXP_LO, 0] (or NaN) takes gate_coeffs_scalar.
 * tests/test_logic.c compares the two for every path. If dmath_exp ever
 * changes, this copy must change with it (the test fails otherwise). */
static const double X_LN2_HI = 0x1.62e42feep-1;
static const double X_LN2_LO = 0x1.a39ef35793c76p-33;
static const double X_INV_LN2 = 0x1.71547652b82fep+0;
/* The Horner chain's constants after the first, 1/13!: 1/12!, ..., 1/2!. */
static const double EXP_C[11] = { 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                  1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0,
                                  1.0 / 24.0, 1.0 / 6.0, 0.5 };

/* p[j] = c[i] + r[j]·p[j] for i = 0 .. stages−1, stage by stage over the
 * n vectors (independent chains side by side, see below); _z and _y. */
#define HORNER_STAGES_FN(name, isa, T, add, mul, set1)                                         \
    static FORCE_INLINE __attribute__((target(isa)))                                           \
    void name(T *p, const T *r, const double *c, const int stages, const int n)                \
    {                                                                                          \
        _Pragma("GCC unroll 11") for (int i = 0; i < stages; i++)                              \
            _Pragma("GCC unroll 8") for (int j = 0; j < n; j++)                                \
                p[j] = add(set1(c[i]), mul(r[j], p[j]));                                       \
    }

/* The float results of exp8d_group_z, cheaper (Ziv's test). A shorter
 * exp — x = (16k' + j)·ln2/16 + r, |r| <= ln2/32, 2^(j/16) from a table
 * and e^r from its degree-5 Taylor polynomial — is within 2^-42 of
 * dmath_exp in relative terms (the polynomial's truncation, r^6/720, is
 * 1.4e-13; the table and the roundings add a few 2^-53). Rounded to float
 * it gives dmath_expf's bits unless dmath_exp's result and its own sit on
 * either side of a rounding point of float: both are then within 2^-39 of
 * the point, i.e. the low 29 bits of the double's significand (those float
 * drops) are within 2^14 of 2^28. Such a lane, or a lane below -87 (whose
 * float may be subnormal, with other rounding points), flags its group and
 * the group is redone with exp8d_group_z. tests/test_logic.c runs every
 * float argument in [-88, 0] through both and compares the bits. */
static const double EXPF_T16[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0,
};   /* 2^(j/16), rounded to double */
static const double EXPF_INV = 0x1.71547652b82fep+4;   /* 16/ln2 */
static const double EXPF_C1 = 0x1.62e42fefa0000p-5;    /* ln2/16, 36 bits: k·C1 exact for |k| < 2^17 */
static const double EXPF_C2 = 0x1.cf79abc9e3b3ap-44;   /* ln2/16 − C1 */
static const double EXPF_P[5] = { 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0 };   /* after 1/5! */

/* Blocks of W gates with one gate per lane (W = 16 for AVX-512, 8 for
 * AVX2): every sum of logic.h runs lane by lane in its own order, so each
 * gate's bits are the scalar twin's. The logits and p are transposed in
 * registers (lane l is gate g0 + l), coef through a small buffer. A block
 * with an exp argument outside [EXP_LO, 0] or a NaN is done gate by gate. */
#define COEF_TERMS(T, ADD, SUB, MUL, SET1, q, c)                                          \
    do {                                                                                  \
        T c0_ = q[8];                                                                     \
        for (int i_ = 9; i_ < LOGIC_OPS; i_++)                                            \
            c0_ = ADD(c0_, q[i_]);                                                        \
        c[0] = c0_;                                                                       \
        c[1] = SUB(ADD(ADD(ADD(q[2], q[3]), q[6]), q[7]), ADD(ADD(ADD(q[8], q[9]), q[12]), q[13])); \
        c[2] = SUB(ADD(ADD(ADD(q[4], q[5]), q[6]), q[7]), ADD(ADD(ADD(q[8], q[9]), q[10]), q[11])); \
        T cab_ = SUB(q[1], q[2]);                                                         \
        cab_ = SUB(cab_, q[4]);                                                           \
        cab_ = SUB(cab_, MUL(SET1(2.0f), q[6]));                                          \
        cab_ = SUB(cab_, q[7]);                                                           \
        cab_ = ADD(cab_, q[8]);                                                           \
        cab_ = ADD(cab_, MUL(SET1(2.0f), q[9]));                                          \
        cab_ = ADD(cab_, q[11]);                                                          \
        cab_ = ADD(cab_, q[13]);                                                          \
        cab_ = SUB(cab_, q[14]);                                                          \
        c[3] = cab_;                                                                      \
    } while (0)

/* logic_expf_lanes' block of 4 vectors on one path. */
#define EXPF_LANES_FN(name, isa, T, width, load, store, expf4)            \
    __attribute__((target(isa)))                                         \
    void name(const float *x, float *out, int shortcut)                  \
    {                                                                    \
        T v[EXP_GROUP / 2], q[EXP_GROUP / 2];                            \
        for (int j = 0; j < EXP_GROUP / 2; j++)                          \
            v[j] = load(x + (width) * j);                                \
        expf4(v, q, shortcut);                                           \
        for (int j = 0; j < EXP_GROUP / 2; j++)                          \
            store(out + (width) * j, q[j]);                              \
    }

#endif /* LOGIC_X86 */

#endif
