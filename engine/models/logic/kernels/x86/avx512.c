/* avx512.c — the AVX-512F path of the logic kernels (engine/models/logic/logic.h).
 *
 * 16 lanes per register. The soft layer kernels keep the four statistics of
 * a gate in one zmm register each, its 16 virtual accumulators in the 16
 * lanes, and reduce them with tree_z, the same pairwise tree as the scalar
 * twin's tree16; short rows (a CA part's update network, a gol sample) get
 * kernels unrolled for one or two vectors; gates that see no gradient are
 * written without their arithmetic ("Silent gates" below). logic_coeffs
 * runs dmath_exp's operations on binary64 lanes, 16 gates a block with one
 * gate per lane; logic_expand puts a gate's 16 ops on the 16 lanes.
 * Every function is built with target("avx512f"); logic.c calls the entry
 * points (kernels/x86/x86.h) only on a CPU that has it. What each kernel
 * must reproduce, and why its shortcuts keep the bits, is in logic.c's
 * header comment and the comments below.
 */
#include "engine/models/logic/kernels/x86/x86.h"

#if LOGIC_X86

#include <math.h>
#include <string.h>

#include "base/simd.h"
#include "engine/models/logic/logic_ref.h"

/* ---- AVX-512F: 16 lanes per register, one register per statistic. ---- */

/* Rows of one or two vectors (a CA part's update network, a gol sample)
 * spend as much on the per-gate loop as on the arithmetic, so
 * logic_avx512_forward and logic_avx512_backward call these with nv (nf,
 * tail) constant for the short rows: the compiler unrolls the row and keeps
 * the gate loop alone. */
static FORCE_INLINE __attribute__((target("avx512f")))
void forward_z_rows(float *y, const float *x, const logic_layer *L, const float *coef, size_t ld, const size_t nv)
{
    /* The wiring in locals: the vector stores may alias anything, so the
     * compiler would reload L's fields for every gate (the update network's
     * forward, rows of two vectors: 13% faster). */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const float *xa = x + (size_t)wa[g] * ld;
        const float *xb = x + (size_t)wb[g] * ld;
        float *yg = y + g * ld;
        const float *cg = coef + 4 * g;
        for (size_t v = 0; v < nv; v++) {
            const __m512 av = _mm512_loadu_ps(xa + 16 * v), bv = _mm512_loadu_ps(xb + 16 * v);
            __m512 t = simd_add_bcast_z(simd_mul_bcast_z(av, cg + 1), cg);   /* c0 + cA·a */
            t = _mm512_add_ps(t, simd_mul_bcast_z(bv, cg + 2));
            t = _mm512_add_ps(t, simd_mul_bcast_z(_mm512_mul_ps(av, bv), cg + 3));
            _mm512_storeu_ps(yg + 16 * v, t);
        }
    }
}

__attribute__((target("avx512f")))
void logic_avx512_forward(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld)
{
    /* Lanes n .. ld-1 of y are unspecified, so the last vector is computed
     * whole (it lies inside the row: ld is a multiple of 16). */
    const size_t nv = (n + 15) / 16;
    if (nv == 1)
        forward_z_rows(y, x, L, coef, ld, 1);
    else if (nv == 2)
        forward_z_rows(y, x, L, coef, ld, 2);
    else
        forward_z_rows(y, x, L, coef, ld, nv);
}

/* The lanes of a dx row to read: none for the row's first update under
 * LOGIC_DX_SET (first flag `bit` set in f), else all. */
static inline __mmask16 dx_read_mask(unsigned f, unsigned bit)
{
    return (f & bit) ? 0 : 0xFFFF;
}

/* The lanes grad_floor keeps: |d| not below the floor, or NaN. */
static FORCE_INLINE __attribute__((target("avx512f")))
__mmask16 live_lanes_z(__m512 d)
{
    return _mm512_cmp_ps_mask(_mm512_abs_ps(d), _mm512_set1_ps(LOGIC_GRAD_FLOOR), _CMP_NLT_UQ);
}

/* grad_floor on 16 lanes: |d| not below the floor (or NaN) keeps d, else +0. */
static FORCE_INLINE __attribute__((target("avx512f")))
__m512 grad_floor_z(__m512 d)
{
    return _mm512_maskz_mov_ps(live_lanes_z(d), d);
}

/* ---- Silent gates ----
 * A gate whose floored gradient is +0 on every lane (deep in a CA rollout,
 * most of them early in training: 73% of a checkerboard step's gates at
 * step 0, 12% at step 600) adds ±0 to each dx lane and +0 to each of its
 * 16 accumulators, so its statistics are +0, provided every product is
 * finite: with its inputs and coefficients at most SILENT_BOUND in
 * magnitude no product exceeds 2^122. Adding ±0 leaves a dx lane as it is
 * unless the lane holds −0, and a row LOGIC_DX_SET sets (or clears) never
 * does: it starts as 0.0f + t or +0, and a sum is −0 only when both terms
 * are. So under LOGIC_DX_SET (or without dx) the kernels give a silent
 * gate's results without its arithmetic and dx traffic: +0 stored into
 * the rows it updates first, its statistics written as +0 or added +0 (a
 * caller's −0 becomes +0, as the full sum makes it). The same bits as the
 * scalar twin, which runs every gate. */
#define SILENT_BOUND 0x1p60f

/* The lanes of v above SILENT_BOUND in magnitude, or NaN. */
static FORCE_INLINE __attribute__((target("avx512f")))
__mmask16 wide_lanes_z(__m512 v)
{
    return _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(SILENT_BOUND), _CMP_NLE_UQ);
}

static inline int coef_narrow(const float *cg)
{
    return fabsf(cg[1]) <= SILENT_BOUND && fabsf(cg[2]) <= SILENT_BOUND && fabsf(cg[3]) <= SILENT_BOUND;
}

/* Every lane < 16·nf + tail of dg is silent (checked vector by vector,
 * stopping at the first live one). */
static FORCE_INLINE __attribute__((target("avx512f")))
int row_silent_z(const float *dg, const size_t nf, const size_t tail)
{
    for (size_t v = 0; v < nf; v++)
        if (live_lanes_z(_mm512_loadu_ps(dg + 16 * v)) != 0)
            return 0;
    return tail == 0 || live_lanes_z(_mm512_maskz_loadu_ps((__mmask16)((1u << tail) - 1u), dg + 16 * nf)) == 0;
}

/* A silent gate's inputs and coefficients are narrow enough (above). */
static FORCE_INLINE __attribute__((target("avx512f")))
int gate_narrow_z(const float *xa, const float *xb, const float *cg, const size_t nf, const size_t tail)
{
    if (!coef_narrow(cg))
        return 0;
    __mmask16 w = 0;
    for (size_t v = 0; v < nf; v++)
        w |= wide_lanes_z(_mm512_loadu_ps(xa + 16 * v)) | wide_lanes_z(_mm512_loadu_ps(xb + 16 * v));
    if (tail > 0) {
        const __mmask16 m = (__mmask16)((1u << tail) - 1u);
        w |= wide_lanes_z(_mm512_maskz_loadu_ps(m, xa + 16 * nf));
        w |= wide_lanes_z(_mm512_maskz_loadu_ps(m, xb + 16 * nf));
    }
    return w == 0;
}

/* A silent gate's results: statistics +0 (or + 0), and +0 in the lanes
 * < 16·nf + tail of each dx row it updates first (flags f). */
static FORCE_INLINE __attribute__((target("avx512f")))
void silent_gate_z(float *st, float *dxa, float *dxb, unsigned f, const size_t nf, const size_t tail,
                   const int accumulate)
{
    const __m128 z4 = _mm_setzero_ps();
    _mm_storeu_ps(st, accumulate ? _mm_add_ps(_mm_loadu_ps(st), z4) : z4);
    const __m512 z = _mm512_setzero_ps();
    for (unsigned bit = LOGIC_FIRST_A; bit <= LOGIC_FIRST_B; bit <<= 1) {
        float *row = bit == LOGIC_FIRST_A ? dxa : dxb;
        if (!(f & bit))
            continue;
        for (size_t v = 0; v < nf; v++)
            _mm512_storeu_ps(row + 16 * v, z);
        if (tail > 0)
            _mm512_mask_storeu_ps(row + 16 * nf, (__mmask16)((1u << tail) - 1u), z);
    }
}

/* The pairwise tree of logic.h for the four statistics at once: acc[k] holds
 * accumulators v0..v15 of statistic k. Level 1 adds adjacent pairs (v0+v1,
 * v2+v3, ... — the left operand always the lower index), level 2 pairs of
 * pairs, then the 128-bit blocks (0+1, 2+3) and finally (01)+(23): the same
 * additions as tree16, so the result is (S0, S1, S2, S3). */
static FORCE_INLINE __attribute__((target("avx512f")))
__m128 tree_z(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    const __m512 b01 = _mm512_add_ps(_mm512_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512 b23 = _mm512_add_ps(_mm512_shuffle_ps(a2, a3, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_ps(a2, a3, _MM_SHUFFLE(3, 1, 3, 1)));
    /* per 128-bit block j: (q_j of S0, q_j of S1, q_j of S2, q_j of S3) */
    const __m512 c = _mm512_add_ps(_mm512_shuffle_ps(b01, b23, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(b01, b23, _MM_SHUFFLE(3, 1, 3, 1)));
    /* blocks (0, 2, ., .) + (1, 3, ., .) */
    const __m512 d = _mm512_add_ps(_mm512_shuffle_f32x4(c, c, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(c, c, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm_add_ps(_mm512_castps512_ps128(d), _mm512_extractf32x4_ps(d, 1));
}

/* ka, kb: the lanes of dxa, dxb to read (0 for a row's first update under
 * LOGIC_DX_SET: the maskz load then gives +0.0f without touching the row).
 * nf full vectors, then tail (0..15) masked lanes. */
static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_gate(float *st, const float *dg, const float *xa, const float *xb, float *dxa,
                     float *dxb, const float *cg, const size_t nf, const size_t tail, int accumulate,
                     const int with_dx, __mmask16 ka, __mmask16 kb, const int silent_ok)
{
    if (silent_ok && row_silent_z(dg, nf, tail) && gate_narrow_z(xa, xb, cg, nf, tail)) {
        /* first-touch rows are the ones not read (ka, kb zero) */
        silent_gate_z(st, dxa, dxb, with_dx ? (ka ? 0u : LOGIC_FIRST_A) | (kb ? 0u : LOGIC_FIRST_B) : 0u, nf, tail,
                      accumulate);
        return;
    }
    const __m512 ca = _mm512_set1_ps(cg[1]), cb = _mm512_set1_ps(cg[2]), cab = _mm512_set1_ps(cg[3]);
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    for (size_t v = 0; v < nf; v++) {
        const size_t l = 16 * v;
        const __m512 d = grad_floor_z(_mm512_loadu_ps(dg + l));
        const __m512 av = _mm512_loadu_ps(xa + l), bv = _mm512_loadu_ps(xb + l);
        s0 = _mm512_add_ps(s0, d);
        s1 = _mm512_add_ps(s1, _mm512_mul_ps(d, av));
        s2 = _mm512_add_ps(s2, _mm512_mul_ps(d, bv));
        s3 = _mm512_add_ps(s3, _mm512_mul_ps(d, _mm512_mul_ps(av, bv)));
        if (with_dx) {
            const __m512 ta = _mm512_mul_ps(d, _mm512_add_ps(ca, _mm512_mul_ps(cab, bv)));
            _mm512_storeu_ps(dxa + l, _mm512_add_ps(_mm512_maskz_loadu_ps(ka, dxa + l), ta));
            const __m512 tb = _mm512_mul_ps(d, _mm512_add_ps(cb, _mm512_mul_ps(cab, av)));
            _mm512_storeu_ps(dxb + l, _mm512_add_ps(_mm512_maskz_loadu_ps(kb, dxb + l), tb));
        }
    }
    if (tail > 0) {
        /* Masked lanes keep their accumulators (mask_add) and their dx. */
        const size_t l = 16 * nf;
        const __mmask16 m = (__mmask16)((1u << tail) - 1u);
        const __m512 d = grad_floor_z(_mm512_maskz_loadu_ps(m, dg + l));
        const __m512 av = _mm512_maskz_loadu_ps(m, xa + l), bv = _mm512_maskz_loadu_ps(m, xb + l);
        s0 = _mm512_mask_add_ps(s0, m, s0, d);
        s1 = _mm512_mask_add_ps(s1, m, s1, _mm512_mul_ps(d, av));
        s2 = _mm512_mask_add_ps(s2, m, s2, _mm512_mul_ps(d, bv));
        s3 = _mm512_mask_add_ps(s3, m, s3, _mm512_mul_ps(d, _mm512_mul_ps(av, bv)));
        if (with_dx) {
            const __m512 ta = _mm512_mul_ps(d, _mm512_add_ps(ca, _mm512_mul_ps(cab, bv)));
            _mm512_mask_storeu_ps(dxa + l, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m & ka, dxa + l), ta));
            const __m512 tb = _mm512_mul_ps(d, _mm512_add_ps(cb, _mm512_mul_ps(cab, av)));
            _mm512_mask_storeu_ps(dxb + l, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m & kb, dxb + l), tb));
        }
    }
    __m128 s = tree_z(s0, s1, s2, s3);
    if (accumulate)
        s = _mm_add_ps(_mm_loadu_ps(st), s);
    _mm_storeu_ps(st, s);
}

static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_rows(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                     const float *coef, const size_t nf, const size_t tail, size_t ld, int flags,
                     const uint8_t *first)
{
    const int accumulate = flags & LOGIC_STATS_ADD, silent_ok = (flags & SILENT_OK) != 0;
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const size_t ra = wa[g], rb = wb[g];
        if (dx != NULL) {
            const unsigned f = first != NULL ? first[g] : 0u;
            const __mmask16 ka = dx_read_mask(f, LOGIC_FIRST_A), kb = dx_read_mask(f, LOGIC_FIRST_B);
            backward_z_gate(stats + 4 * g, dy + g * ld, x + ra * ld, x + rb * ld, dx + ra * ld, dx + rb * ld,
                            coef + 4 * g, nf, tail, accumulate, 1, ka, kb, silent_ok);
        } else {
            backward_z_gate(stats + 4 * g, dy + g * ld, x + ra * ld, x + rb * ld, NULL, NULL,
                            coef + 4 * g, nf, tail, accumulate, 0, 0, 0, silent_ok);
        }
    }
}

/* One vector of one gate: the floored gradient, the inputs and the two dx
 * terms (the statistics are summed by the caller, in backward_z_gate's
 * order). */
typedef struct {
    __m512 d, av, bv, ta, tb;
} vec_z;

static FORCE_INLINE __attribute__((target("avx512f")))
vec_z backward_z_vec(__m512 d, const float *xa, const float *xb, __m512 ca, __m512 cb, __m512 cab,
                     const __mmask16 m)
{
    vec_z r;
    r.d = d;
    r.av = m == 0xFFFF ? _mm512_loadu_ps(xa) : _mm512_maskz_loadu_ps(m, xa);
    r.bv = m == 0xFFFF ? _mm512_loadu_ps(xb) : _mm512_maskz_loadu_ps(m, xb);
    r.ta = _mm512_mul_ps(r.d, _mm512_add_ps(ca, _mm512_mul_ps(cab, r.bv)));
    r.tb = _mm512_mul_ps(r.d, _mm512_add_ps(cb, _mm512_mul_ps(cab, r.av)));
    return r;
}

/* The four statistics of a two-vector row, (0 + v0) + v1 as backward_z_gate
 * sums them (reduced by tree_z). */
typedef struct {
    __m512 s0, s1, s2, s3;
} stats_z;

static FORCE_INLINE __attribute__((target("avx512f")))
stats_z backward_z_sums2(vec_z v0, vec_z v1, const __mmask16 m)
{
    /* lanes outside m keep the first vector's sum, as backward_z_gate's
     * masked tail does */
    const __m512 z = _mm512_setzero_ps();
    const __m512 a0 = _mm512_add_ps(z, v0.d), a1 = _mm512_add_ps(z, _mm512_mul_ps(v0.d, v0.av));
    const __m512 a2 = _mm512_add_ps(z, _mm512_mul_ps(v0.d, v0.bv));
    const __m512 a3 = _mm512_add_ps(z, _mm512_mul_ps(v0.d, _mm512_mul_ps(v0.av, v0.bv)));
    stats_z r;
    r.s0 = _mm512_mask_add_ps(a0, m, a0, v1.d);
    r.s1 = _mm512_mask_add_ps(a1, m, a1, _mm512_mul_ps(v1.d, v1.av));
    r.s2 = _mm512_mask_add_ps(a2, m, a2, _mm512_mul_ps(v1.d, v1.bv));
    r.s3 = _mm512_mask_add_ps(a3, m, a3, _mm512_mul_ps(v1.d, _mm512_mul_ps(v1.av, v1.bv)));
    return r;
}

static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_store_stats(float *st, stats_z s, const int accumulate)
{
    __m128 r = tree_z(s.s0, s.s1, s.s2, s.s3);
    if (accumulate)
        r = _mm_add_ps(_mm_loadu_ps(st), r);
    _mm_storeu_ps(st, r);
}

static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_dx2(float *row, __mmask16 k, __m512 t0, __m512 t1, const __mmask16 m)
{
    _mm512_storeu_ps(row, _mm512_add_ps(_mm512_maskz_loadu_ps(k, row), t0));
    if (m == 0xFFFF)
        _mm512_storeu_ps(row + 16, _mm512_add_ps(_mm512_maskz_loadu_ps(k, row + 16), t1));
    else   /* lanes outside m are not written */
        _mm512_mask_storeu_ps(row + 16, m, _mm512_add_ps(_mm512_maskz_loadu_ps(k & m, row + 16), t1));
}

/* Rows of 17 to 32 lanes with dx (a CA part's update network: two rows of
 * 16 cells, or of 14 for the asynchronous task; the second vector masked
 * below 32): one gate's work is too short for the core to overlap it with
 * the next one's (about 20 cycles of arithmetic behind two index loads and
 * six vector loads), so gates g and g + 1 are written out side by side.
 * Each gate's arithmetic and the order of each dx row's updates are those
 * of backward_z_gate: the dx rows are read, added to and stored gate by
 * gate, a's rows before b's, so a row both gates update gets g's term
 * first. Loading gate g + 1's inputs before gate g's dx and stats stores
 * is safe because neither dx nor stats overlaps dy or x (logic.h). A
 * kernel alone on a 256-gate layer of 32-lane rows: 5.9 -> 4.85 ns per
 * vector. */
static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_pairs2_body(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                            const float *coef, size_t ld, const int accumulate, const uint8_t *first,
                            const size_t tail, const int silent_ok)
{
    const __mmask16 m = (__mmask16)(tail == 16 ? 0xFFFFu : (1u << tail) - 1u);   /* the second vector's lanes */
    const size_t nf = tail == 16 ? 2 : 1, rt = tail % 16;   /* the row as the single-gate kernel takes it */
    size_t g = 0;
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (; g + 2 <= out; g += 2) {
        const size_t ra0 = wa[g], rb0 = wb[g], ra1 = wa[g + 1], rb1 = wb[g + 1];
        const unsigned f0 = first != NULL ? first[g] : 0u, f1 = first != NULL ? first[g + 1] : 0u;
        const float *c0 = coef + 4 * g, *c1 = c0 + 4;
        const float *dg0 = dy + g * ld, *dg1 = dg0 + ld;
        const float *xa0 = x + ra0 * ld, *xb0 = x + rb0 * ld, *xa1 = x + ra1 * ld, *xb1 = x + rb1 * ld;
        const __m512 r00 = _mm512_loadu_ps(dg0), r10 = _mm512_loadu_ps(dg1);
        const __m512 r01 = m == 0xFFFF ? _mm512_loadu_ps(dg0 + 16) : _mm512_maskz_loadu_ps(m, dg0 + 16);
        const __m512 r11 = m == 0xFFFF ? _mm512_loadu_ps(dg1 + 16) : _mm512_maskz_loadu_ps(m, dg1 + 16);
        const __mmask16 l00 = live_lanes_z(r00), l01 = live_lanes_z(r01);
        const __mmask16 l10 = live_lanes_z(r10), l11 = live_lanes_z(r11);
        /* Silent gates: a silent pair is written out at once; a silent gate
         * beside a live one leaves the live one to the single-gate kernel,
         * in gate order. */
        const int q0 = silent_ok && (l00 | l01) == 0 && gate_narrow_z(xa0, xb0, c0, nf, rt);
        const int q1 = silent_ok && (l10 | l11) == 0 && gate_narrow_z(xa1, xb1, c1, nf, rt);
        if (q0 | q1) {
            if (q0)
                silent_gate_z(stats + 4 * g, dx + ra0 * ld, dx + rb0 * ld, f0, nf, rt, accumulate);
            else
                backward_z_gate(stats + 4 * g, dg0, xa0, xb0, dx + ra0 * ld, dx + rb0 * ld, c0, nf, rt, accumulate, 1,
                                dx_read_mask(f0, LOGIC_FIRST_A), dx_read_mask(f0, LOGIC_FIRST_B), 0);
            if (q1)
                silent_gate_z(stats + 4 * g + 4, dx + ra1 * ld, dx + rb1 * ld, f1, nf, rt, accumulate);
            else
                backward_z_gate(stats + 4 * g + 4, dg1, xa1, xb1, dx + ra1 * ld, dx + rb1 * ld, c1, nf, rt, accumulate,
                                1, dx_read_mask(f1, LOGIC_FIRST_A), dx_read_mask(f1, LOGIC_FIRST_B), 0);
            continue;
        }
        const __m512 ca0 = _mm512_set1_ps(c0[1]), cb0 = _mm512_set1_ps(c0[2]), cab0 = _mm512_set1_ps(c0[3]);
        const __m512 ca1 = _mm512_set1_ps(c1[1]), cb1 = _mm512_set1_ps(c1[2]), cab1 = _mm512_set1_ps(c1[3]);
        const vec_z v00 = backward_z_vec(_mm512_maskz_mov_ps(l00, r00), xa0, xb0, ca0, cb0, cab0, 0xFFFF);
        const vec_z v10 = backward_z_vec(_mm512_maskz_mov_ps(l10, r10), xa1, xb1, ca1, cb1, cab1, 0xFFFF);
        const vec_z v01 = backward_z_vec(_mm512_maskz_mov_ps(l01, r01), xa0 + 16, xb0 + 16, ca0, cb0, cab0, m);
        const vec_z v11 = backward_z_vec(_mm512_maskz_mov_ps(l11, r11), xa1 + 16, xb1 + 16, ca1, cb1, cab1, m);
        const stats_z s0 = backward_z_sums2(v00, v01, m), s1 = backward_z_sums2(v10, v11, m);
        backward_z_dx2(dx + ra0 * ld, dx_read_mask(f0, LOGIC_FIRST_A), v00.ta, v01.ta, m);
        backward_z_dx2(dx + rb0 * ld, dx_read_mask(f0, LOGIC_FIRST_B), v00.tb, v01.tb, m);
        backward_z_dx2(dx + ra1 * ld, dx_read_mask(f1, LOGIC_FIRST_A), v10.ta, v11.ta, m);
        backward_z_dx2(dx + rb1 * ld, dx_read_mask(f1, LOGIC_FIRST_B), v10.tb, v11.tb, m);
        backward_z_store_stats(stats + 4 * g, s0, accumulate);
        backward_z_store_stats(stats + 4 * g + 4, s1, accumulate);
    }
    if (g < out) {
        const unsigned f = first != NULL ? first[g] : 0u;
        backward_z_gate(stats + 4 * g, dy + g * ld, x + wa[g] * ld, x + wb[g] * ld, dx + wa[g] * ld,
                        dx + wb[g] * ld, coef + 4 * g, nf, rt, accumulate, 1,
                        dx_read_mask(f, LOGIC_FIRST_A), dx_read_mask(f, LOGIC_FIRST_B), silent_ok);
    }
}

/* n = 16 + tail lanes, tail 1..16 (16: two full vectors). */
static __attribute__((target("avx512f")))
void backward_z_pairs2(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                       const float *coef, size_t ld, int flags, const uint8_t *first, size_t tail)
{
    /* the checkerboard's rows (tail 16) with constants, the rest as they come */
    const int acc = flags & LOGIC_STATS_ADD, silent_ok = (flags & SILENT_OK) != 0;
    if (tail == 16 && acc)
        backward_z_pairs2_body(dx, stats, dy, x, L, coef, ld, 1, first, 16, silent_ok);
    else if (tail == 16)
        backward_z_pairs2_body(dx, stats, dy, x, L, coef, ld, 0, first, 16, silent_ok);
    else
        backward_z_pairs2_body(dx, stats, dy, x, L, coef, ld, acc, first, tail, silent_ok);
}

__attribute__((target("avx512f")))
void logic_avx512_backward(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                           const float *coef, size_t n, size_t ld, int flags, const uint8_t *first)
{
    const size_t nf = n / 16, tail = n % 16;
    if (n > 16 && n <= 32 && dx != NULL)   /* a CA part's update network: two rows of 16 or 14 cells */
        backward_z_pairs2(dx, stats, dy, x, L, coef, ld, flags, first, n - 16);
    else if (n == 32)
        backward_z_rows(dx, stats, dy, x, L, coef, 2, 0, ld, flags, first);
    else if (nf == 0)
        backward_z_rows(dx, stats, dy, x, L, coef, 0, tail, ld, flags, first);
    else if (nf == 1)
        backward_z_rows(dx, stats, dy, x, L, coef, 1, tail, ld, flags, first);
    else
        backward_z_rows(dx, stats, dy, x, L, coef, nf, tail, ld, flags, first);
}

/* The four statistics of one node of the tree, for 16 (8) samples. */
typedef struct { __m512 s0, s1, s2, s3; } stat4_z;

static FORCE_INLINE __attribute__((target("avx512f")))
stat4_z add4_z(stat4_z a, stat4_z b)
{
    return (stat4_z){ _mm512_add_ps(a.s0, b.s0), _mm512_add_ps(a.s1, b.s1), _mm512_add_ps(a.s2, b.s2),
                      _mm512_add_ps(a.s3, b.s3) };
}

/* The dx of one gate over its rows' ld floats (nvl·m elements and the
 * tail), 16 at a time: each element is one (virtual lane, sample), touched
 * once by the gate, so any grouping of elements gives the same bits; row a
 * before row b. Whole vectors, the tail included: a masked store of the
 * last one made a later gate's load of that row wait for it (no store
 * forwarding from a masked store), which cost more than the tail's
 * arithmetic. A first touch loads nothing: +0 (maskz). */
static FORCE_INLINE __attribute__((target("avx512f")))
void lanes_dx_z(size_t ld, const float *dg, const float *xa, const float *xb, float *dxa, float *dxb, __m512 ca,
                __m512 cb, __m512 cab, __mmask16 keep_a, __mmask16 keep_b)
{
    for (size_t o = 0; o < ld; o += 16) {
        const __m512 d = grad_floor_z(_mm512_loadu_ps(dg + o));
        const __m512 av = _mm512_loadu_ps(xa + o), bv = _mm512_loadu_ps(xb + o);
        const __m512 ta = _mm512_mul_ps(d, _mm512_add_ps(ca, _mm512_mul_ps(cab, bv)));
        _mm512_storeu_ps(dxa + o, _mm512_add_ps(_mm512_maskz_loadu_ps(keep_a, dxa + o), ta));
        const __m512 tb = _mm512_mul_ps(d, _mm512_add_ps(cb, _mm512_mul_ps(cab, av)));
        _mm512_storeu_ps(dxb + o, _mm512_add_ps(_mm512_maskz_loadu_ps(keep_b, dxb + o), tb));
    }
}

/* Virtual lane vl of a gate (row offset o = vl·m, lanes j < m live by km):
 * its four terms, lanes >= m +0. */
static FORCE_INLINE __attribute__((target("avx512f")))
stat4_z lanes_vl_z(size_t o, __mmask16 km, const float *dg, const float *xa, const float *xb)
{
    const __m512 d = grad_floor_z(_mm512_maskz_loadu_ps(km, dg + o));
    const __m512 av = _mm512_maskz_loadu_ps(km, xa + o), bv = _mm512_maskz_loadu_ps(km, xb + o);
    return (stat4_z){ d, _mm512_mul_ps(d, av), _mm512_mul_ps(d, bv), _mm512_mul_ps(d, _mm512_mul_ps(av, bv)) };
}

/* Accumulator v of a gate (virtual lanes v, v + 16, ... < nvl; v < nvl),
 * its first term as it is (f comes at the root). */
static FORCE_INLINE __attribute__((target("avx512f")))
stat4_z lanes_acc_z(size_t v, size_t nvl, size_t m, __mmask16 km, const float *dg, const float *xa, const float *xb)
{
    stat4_z t = lanes_vl_z(v * m, km, dg, xa, xb);
    for (size_t vl = v + LOGIC_LANES; vl < nvl; vl += LOGIC_LANES)
        t = add4_z(t, lanes_vl_z(vl * m, km, dg, xa, xb));
    return t;
}

/* The node ((v0 + v1) + (v2 + v3)) of accumulators v0 = 4q .. 4q + 3, those
 * at or above P empty (v0 < P). */
static FORCE_INLINE __attribute__((target("avx512f")))
stat4_z lanes_quad_z(size_t v0, size_t P, size_t nvl, size_t m, __mmask16 km, const float *dg, const float *xa,
                     const float *xb)
{
    stat4_z q = lanes_acc_z(v0, nvl, m, km, dg, xa, xb);
    if (v0 + 1 < P)
        q = add4_z(q, lanes_acc_z(v0 + 1, nvl, m, km, dg, xa, xb));
    if (v0 + 2 < P) {
        stat4_z u = lanes_acc_z(v0 + 2, nvl, m, km, dg, xa, xb);
        if (v0 + 3 < P)
            u = add4_z(u, lanes_acc_z(v0 + 3, nvl, m, km, dg, xa, xb));
        q = add4_z(q, u);
    }
    return q;
}

/* Lane l of four vectors (a, b, c, d) as the quadruple (a_l, b_l, c_l,
 * d_l), two levels of unpacks: 128-bit block q of u[r] holds lane 4q + r's. */
static FORCE_INLINE __attribute__((target("avx512f")))
void quads_z(__m512 a, __m512 b, __m512 c, __m512 d, __m512 *u)
{
    const __m512d t0 = _mm512_castps_pd(_mm512_unpacklo_ps(a, b)), t1 = _mm512_castps_pd(_mm512_unpackhi_ps(a, b));
    const __m512d t2 = _mm512_castps_pd(_mm512_unpacklo_ps(c, d)), t3 = _mm512_castps_pd(_mm512_unpackhi_ps(c, d));
    u[0] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
}

/* (S0, S1, S2, S3) of sample j to st + j·stride for j < m: after the two
 * unpacks, 128-bit block b of u_r holds sample 4b + r's four statistics. */
static FORCE_INLINE __attribute__((target("avx512f")))
void lanes_store_z(float *st, size_t stride, stat4_z S, size_t m, int accumulate)
{
    __m512 u[4];
    quads_z(S.s0, S.s1, S.s2, S.s3, u);
    const __m512 u0 = u[0], u1 = u[1], u2 = u[2], u3 = u[3];
#define LANES_PUT_Z(j, u, b)                                                             \
    do {                                                                                 \
        if ((j) >= m)                                                                    \
            return;                                                                      \
        lanes_put4(st + (size_t)(j) * stride, _mm512_extractf32x4_ps(u, b), accumulate); \
    } while (0)
    LANES_PUT_Z(0, u0, 0); LANES_PUT_Z(1, u1, 0); LANES_PUT_Z(2, u2, 0); LANES_PUT_Z(3, u3, 0);
    LANES_PUT_Z(4, u0, 1); LANES_PUT_Z(5, u1, 1); LANES_PUT_Z(6, u2, 1); LANES_PUT_Z(7, u3, 1);
    LANES_PUT_Z(8, u0, 2); LANES_PUT_Z(9, u1, 2); LANES_PUT_Z(10, u2, 2); LANES_PUT_Z(11, u3, 2);
    LANES_PUT_Z(12, u0, 3); LANES_PUT_Z(13, u1, 3); LANES_PUT_Z(14, u2, 3); LANES_PUT_Z(15, u3, 3);
#undef LANES_PUT_Z
}

/* A gate's four statistics for each of its m samples, to st + j·stride. */
static FORCE_INLINE __attribute__((target("avx512f")))
void lanes_stats_z(float *st, size_t stride, const float *dg, const float *xa, const float *xb, size_t nvl, size_t m,
                   int accumulate)
{
    const __mmask16 km = (__mmask16)((1u << m) - 1u);
    const __m512 zero = _mm512_setzero_ps();
    const size_t P = nvl < LOGIC_LANES ? nvl : LOGIC_LANES;
    stat4_z h = { zero, zero, zero, zero };
    if (P > 0) {
        h = lanes_quad_z(0, P, nvl, m, km, dg, xa, xb);
        if (P > 4)
            h = add4_z(h, lanes_quad_z(4, P, nvl, m, km, dg, xa, xb));
        if (P > 8) {
            stat4_z q = lanes_quad_z(8, P, nvl, m, km, dg, xa, xb);
            if (P > 12)
                q = add4_z(q, lanes_quad_z(12, P, nvl, m, km, dg, xa, xb));
            h = add4_z(h, q);
        }
    }
    lanes_store_z(st, stride, add4_z(h, (stat4_z){ zero, zero, zero, zero }), m, accumulate);   /* f */
}

__attribute__((target("avx512f")))
void logic_avx512_backward_lanes(float *dx, float *stats, size_t stride, const float *dy, const float *x,
                                 const logic_layer *L, const float *coef, const uint8_t *first, size_t nvl,
                                 size_t m, int accumulate)
{
    const size_t ld = LOGIC_LANES_LD(nvl, m);
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const size_t ra = wa[g], rb = wb[g];
        const float *dg = dy + g * ld, *xa = x + ra * ld, *xb = x + rb * ld;
        if (dx != NULL) {
            const float *cg = coef + 4 * g;
            const unsigned fg = first != NULL ? first[g] : 0u;
            const __mmask16 keep_a = (fg & LOGIC_FIRST_A) ? 0 : 0xFFFF, keep_b = (fg & LOGIC_FIRST_B) ? 0 : 0xFFFF;
            lanes_dx_z(ld, dg, xa, xb, dx + ra * ld, dx + rb * ld, _mm512_set1_ps(cg[1]), _mm512_set1_ps(cg[2]),
                       _mm512_set1_ps(cg[3]), keep_a, keep_b);
        }
        lanes_stats_z(stats + 4 * g, stride, dg, xa, xb, nvl, m, accumulate);
    }
}

HORNER_STAGES_FN(horner_stages_z, "avx512f", __m512d, _mm512_add_pd, _mm512_mul_pd, _mm512_set1_pd)

/* exp on n vectors side by side: the Horner chain is 11 dependent
 * multiply-adds, so one vector at a time leaves the FP pipes idle for most
 * of its latency; stage by stage over n = 8 vectors they stay busy. Each
 * lane does the same operations in the same order whatever n is. */
static FORCE_INLINE __attribute__((target("avx512f")))
void exp8d_group_z(__m512d *v, const int n)
{
    __m512d hi[EXP_GROUP], lo[EXP_GROUP], r[EXP_GROUP], p[EXP_GROUP];
    __m256i k[EXP_GROUP];
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m512d t = _mm512_mul_pd(v[j], _mm512_set1_pd(X_INV_LN2));
        const __mmask8 neg = _mm512_cmp_pd_mask(t, _mm512_setzero_pd(), _CMP_LT_OQ);
        const __m512d u = _mm512_mask_blend_pd(neg, _mm512_add_pd(t, _mm512_set1_pd(0.5)),
                                               _mm512_sub_pd(t, _mm512_set1_pd(0.5)));
        k[j] = _mm512_cvttpd_epi32(u);
        const __m512d kd = _mm512_cvtepi32_pd(k[j]);
        hi[j] = _mm512_sub_pd(v[j], _mm512_mul_pd(kd, _mm512_set1_pd(X_LN2_HI)));
        lo[j] = _mm512_mul_pd(kd, _mm512_set1_pd(X_LN2_LO));
        r[j] = _mm512_sub_pd(hi[j], lo[j]);
        p[j] = _mm512_set1_pd(1.0 / 6227020800.0);
    }
    horner_stages_z(p, r, EXP_C, 11, n);
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m512d q = _mm512_mul_pd(_mm512_mul_pd(r[j], r[j]), p[j]);
        const __m512d one = _mm512_set1_pd(1.0);
        const __m512d s = _mm512_add_pd(one, hi[j]);
        const __m512d err = _mm512_add_pd(_mm512_sub_pd(one, s), hi[j]);
        const __m512d y = _mm512_add_pd(s, _mm512_add_pd(err, _mm512_sub_pd(q, lo[j])));
        const __m512i bits = _mm512_slli_epi64(_mm512_add_epi64(_mm512_cvtepi32_epi64(k[j]), _mm512_set1_epi64(1023)),
                                               52);
        v[j] = _mm512_mul_pd(y, _mm512_castsi512_pd(bits));
    }
}

/* e^x on n vectors, as many as exp8d_group_z takes; returns the lanes
 * whose float rounding it cannot vouch for (then v holds garbage there). */
static FORCE_INLINE __attribute__((target("avx512f")))
__mmask8 expf8d_group_z(__m512d *v, const int n)
{
    const __m512d tlo = _mm512_loadu_pd(EXPF_T16), thi = _mm512_loadu_pd(EXPF_T16 + 8);
    __m512d r[EXP_GROUP], p[EXP_GROUP];
    __m512i k[EXP_GROUP];
    __mmask8 unsure = 0;
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m512d kf = _mm512_roundscale_pd(_mm512_mul_pd(v[j], _mm512_set1_pd(EXPF_INV)),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r[j] = _mm512_sub_pd(_mm512_sub_pd(v[j], _mm512_mul_pd(kf, _mm512_set1_pd(EXPF_C1))),
                             _mm512_mul_pd(kf, _mm512_set1_pd(EXPF_C2)));
        k[j] = _mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(kf));
        unsure |= _mm512_cmp_pd_mask(v[j], _mm512_set1_pd(-87.0), _CMP_NGE_UQ);   /* NaN too */
        p[j] = _mm512_set1_pd(1.0 / 120.0);
    }
    horner_stages_z(p, r, EXPF_P, 5, n);
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        /* 2^(j/16) by the low 4 bits of k, 2^(k >> 4) into the exponent */
        const __m512d y = _mm512_mul_pd(_mm512_permutex2var_pd(tlo, k[j], thi), p[j]);
        const __m512i bits = _mm512_add_epi64(_mm512_castpd_si512(y), _mm512_slli_epi64(_mm512_srai_epi64(k[j], 4), 52));
        const __m512i low = _mm512_and_si512(bits, _mm512_set1_epi64(0x1FFFFFFF));
        unsure |= _mm512_cmplt_epu64_mask(_mm512_sub_epi64(low, _mm512_set1_epi64(0x10000000 - 0x4000)),
                                          _mm512_set1_epi64(0x8000));
        v[j] = _mm512_castsi512_pd(bits);
    }
    return unsure;
}

/* 4 vectors of 16 floats as 8 of 8 doubles. */
static FORCE_INLINE __attribute__((target("avx512f")))
void widen4_z(const __m512 *x, __m512d *d)
{
    for (int j = 0; j < EXP_GROUP / 2; j++) {
        d[2 * j] = _mm512_cvtps_pd(_mm512_castps512_ps256(x[j]));
        d[2 * j + 1] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x[j]), 1)));
    }
}

/* dmath_expf on 4 vectors of 16 floats (x[j] -> q[j]): the double lanes of
 * expf8d_group_z, or of exp8d_group_z when it is unsure of any (or when
 * shortcut is 0, for tests). */
static FORCE_INLINE __attribute__((target("avx512f")))
void expf4_z(const __m512 *x, __m512 *q, const int shortcut)
{
    __m512d d[EXP_GROUP];
    widen4_z(x, d);
    if (!shortcut || expf8d_group_z(d, EXP_GROUP) != 0) {
        widen4_z(x, d);
        exp8d_group_z(d, EXP_GROUP);
    }
    for (int j = 0; j < EXP_GROUP / 2; j++)
        q[j] = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(d[2 * j]))),
                                                   _mm256_castps_pd(_mm512_cvtpd_ps(d[2 * j + 1])), 1));
}

static FORCE_INLINE __attribute__((target("avx512f")))
__m512d exp8d_z(__m512d x)
{
    exp8d_group_z(&x, 1);
    return x;
}

static FORCE_INLINE __attribute__((target("avx512f")))
__m256 exp8_z(__m256 xf)
{
    return _mm512_cvtpd_ps(exp8d_z(_mm512_cvtps_pd(xf)));
}

/* Gates one at a time: the 16 logits of a gate in one register. */
static __attribute__((target("avx512f")))
void coeffs_gates_z(const float *logits, size_t gates, float *p, float *coef)
{
    for (size_t g = 0; g < gates; g++) {
        const float *z = logits + g * LOGIC_OPS;
        const __m512 zv = _mm512_loadu_ps(z);
        /* max is exact; ±0 ties give the same e (exp(±0) = 1, z − ±0 = z) */
        const __m512 x = _mm512_sub_ps(zv, _mm512_set1_ps(_mm512_reduce_max_ps(zv)));
        if (_mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_LO), _CMP_GE_OQ) != 0xFFFF) {
            gate_coeffs_scalar(z, p + g * LOGIC_OPS, coef + g * 4);
            continue;
        }
        float e[LOGIC_OPS];
        _mm256_storeu_ps(e, exp8_z(_mm512_castps512_ps256(x)));
        _mm256_storeu_ps(e + 8, exp8_z(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))));
        p_from_e(e, p + g * LOGIC_OPS);
        coef_from_p(p + g * LOGIC_OPS, coef + g * 4);
    }
}

__attribute__((target("avx512f")))
void logic_avx512_exp_lanes(const double *x, double *out)
{
    _mm512_storeu_pd(out, exp8d_z(_mm512_loadu_pd(x)));
}

/* r[i][j] -> r[j][i] for a 16 x 16 block of floats (moves only). */
static FORCE_INLINE __attribute__((target("avx512f")))
void transpose16_z(__m512 *r)
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* r[4i + c], 128-bit block b: column 4b + c of rows 4i .. 4i+3 */
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    __m512 o[16];
    for (int c = 0; c < 4; c++) {
        const __m512 u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512 u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
        const __m512 u2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512 u3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
        o[c] = _mm512_shuffle_f32x4(u0, u2, _MM_SHUFFLE(2, 0, 2, 0));
        o[8 + c] = _mm512_shuffle_f32x4(u0, u2, _MM_SHUFFLE(3, 1, 3, 1));
        o[4 + c] = _mm512_shuffle_f32x4(u1, u3, _MM_SHUFFLE(2, 0, 2, 0));
        o[12 + c] = _mm512_shuffle_f32x4(u1, u3, _MM_SHUFFLE(3, 1, 3, 1));
    }
    for (int i = 0; i < 16; i++)
        r[i] = o[i];
}

/* c[k] lane l (coefficient k of gate l) to out[4·l + k], 16 gates: quads_z
 * puts gate 4q + r in 128-bit block q of u[r], then two levels of block
 * shuffles gather blocks q of u[0..3]. Where 64 scalar moves took 8% of
 * the coefficients' time. */
static FORCE_INLINE __attribute__((target("avx512f")))
void store_coef4_z(float *out, const __m512 *c)
{
    __m512 u[4];
    quads_z(c[0], c[1], c[2], c[3], u);
    const __m512 lo01 = _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 lo23 = _mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 hi01 = _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 hi23 = _mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(3, 2, 3, 2));
    _mm512_storeu_ps(out, _mm512_shuffle_f32x4(lo01, lo23, _MM_SHUFFLE(2, 0, 2, 0)));        /* gates 0-3 */
    _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(lo01, lo23, _MM_SHUFFLE(3, 1, 3, 1)));   /* 4-7 */
    _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(hi01, hi23, _MM_SHUFFLE(2, 0, 2, 0)));   /* 8-11 */
    _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(hi01, hi23, _MM_SHUFFLE(3, 1, 3, 1)));   /* 12-15 */
}

__attribute__((target("avx512f")))
void logic_avx512_coeffs(const float *logits, size_t gates, float *p, float *coef)
{
    size_t g0 = 0;
    for (; g0 + 16 <= gates; g0 += 16) {
        const float *z = logits + g0 * LOGIC_OPS;
        __m512 x[LOGIC_OPS];
        for (int j = 0; j < LOGIC_OPS; j++)
            x[j] = _mm512_loadu_ps(z + j * LOGIC_OPS);
        transpose16_z(x);   /* x[j]: logit j of gates g0 .. g0+15 */
        __m512 m = x[0];
        for (int j = 1; j < LOGIC_OPS; j++)
            m = _mm512_max_ps(m, x[j]);
        __mmask16 ok = 0xFFFF;
        for (int j = 0; j < LOGIC_OPS; j++) {
            x[j] = _mm512_sub_ps(x[j], m);
            ok &= _mm512_cmp_ps_mask(x[j], _mm512_set1_ps(EXP_LO), _CMP_GE_OQ);
        }
        if (ok != 0xFFFF) {
            coeffs_gates_z(z, 16, p + g0 * LOGIC_OPS, coef + g0 * 4);
            continue;
        }
        __m512 q[LOGIC_OPS];
        for (int j0 = 0; j0 < LOGIC_OPS; j0 += EXP_GROUP / 2)
            expf4_z(x + j0, q + j0, 1);
        __m512 sum = q[0];
        for (int j = 1; j < LOGIC_OPS; j++)
            sum = _mm512_add_ps(sum, q[j]);
        for (int j = 0; j < LOGIC_OPS; j++)
            q[j] = _mm512_div_ps(q[j], sum);
        __m512 c[4];
        COEF_TERMS(__m512, _mm512_add_ps, _mm512_sub_ps, _mm512_mul_ps, _mm512_set1_ps, q, c);
        transpose16_z(q);
        for (int l = 0; l < 16; l++)
            _mm512_storeu_ps(p + (g0 + (size_t)l) * LOGIC_OPS, q[l]);
        store_coef4_z(coef + g0 * 4, c);
    }
    coeffs_gates_z(logits + g0 * LOGIC_OPS, gates - g0, p + g0 * LOGIC_OPS, coef + g0 * 4);
}

/* logic_expand with the 16 ops of a gate on 16 lanes (AVX2: two times 8):
 * lane j computes F_j with the columns of LOGIC_AFFINE as float vectors,
 * the operations and their order as expand_scalar's; Y is expand_scalar's
 * scalar expression, broadcast. */
__attribute__((target("avx512f")))
void logic_avx512_expand(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo, size_t hi)
{
    float col[4][LOGIC_OPS];
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < LOGIC_OPS; j++)
            col[k][j] = (float)LOGIC_AFFINE[j][k];
    const __m512 A = _mm512_loadu_ps(col[0]), B = _mm512_loadu_ps(col[1]);
    const __m512 C = _mm512_loadu_ps(col[2]), D = _mm512_loadu_ps(col[3]);
    for (size_t g = lo; g < hi; g++) {
        const float *S = stats + g * 4, *c = coef + g * 4;
        const float Y = ((c[0] * S[0] + c[1] * S[1]) + c[2] * S[2]) + c[3] * S[3];
        __m512 F = _mm512_add_ps(_mm512_mul_ps(A, _mm512_set1_ps(S[0])), _mm512_mul_ps(B, _mm512_set1_ps(S[1])));
        F = _mm512_add_ps(F, _mm512_mul_ps(C, _mm512_set1_ps(S[2])));
        F = _mm512_add_ps(F, _mm512_mul_ps(D, _mm512_set1_ps(S[3])));
        const __m512 d = _mm512_mul_ps(_mm512_loadu_ps(p + g * LOGIC_OPS), _mm512_sub_ps(F, _mm512_set1_ps(Y)));
        _mm512_storeu_ps(dlogits + g * LOGIC_OPS, d);
    }
}

EXPF_LANES_FN(logic_avx512_expf_lanes, "avx512f", __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, expf4_z)
#undef HORNER_STAGES_FN
#undef EXPF_LANES_FN

#else
typedef int logic_avx512_none;   /* not an x86 target: no AVX-512 path (ISO C wants a declaration) */
#endif /* LOGIC_X86 */
