/* avx2.c — the AVX2 path of the logic kernels (engine/models/logic/logic.h).
 *
 * 8 lanes per register: the 16 virtual accumulators of a statistic are two
 * ymm registers (accumulators 0..7 and 8..15) reduced by tree_y, the same
 * pairwise tree as the scalar twin's tree16. The kernels follow the
 * AVX-512 ones in avx512.c step for step, on half the lanes; comments name
 * their AVX-512 counterpart (a `_z` suffix) where the reasoning is written
 * down once. AVX2 has no mask registers: masked lanes come from and-ed or
 * blended vectors, the table of logic_coeffs from a gather. Every function
 * is built with target("avx2"); logic.c calls the entry points
 * (kernels/x86/x86.h) only on a CPU that has it, or when LOCKSTEP_SIMD=avx2
 * caps the path there.
 */
#include "engine/models/logic/kernels/x86/x86.h"

#if LOGIC_X86

#include <math.h>
#include <string.h>

#include "base/simd.h"
#include "engine/models/logic/logic_ref.h"

/* ---- AVX2: 8 lanes per register; accumulators 0..7 and 8..15 in two. ---- */

__attribute__((target("avx2")))
void logic_avx2_forward(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld)
{
    const size_t nv = (n + 7) / 8;
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const float *xa = x + (size_t)wa[g] * ld;
        const float *xb = x + (size_t)wb[g] * ld;
        float *yg = y + g * ld;
        const __m256 c0 = _mm256_set1_ps(coef[4 * g]), ca = _mm256_set1_ps(coef[4 * g + 1]);
        const __m256 cb = _mm256_set1_ps(coef[4 * g + 2]), cab = _mm256_set1_ps(coef[4 * g + 3]);
        for (size_t v = 0; v < nv; v++) {
            const __m256 av = _mm256_loadu_ps(xa + 8 * v), bv = _mm256_loadu_ps(xb + 8 * v);
            __m256 t = _mm256_add_ps(c0, _mm256_mul_ps(ca, av));
            t = _mm256_add_ps(t, _mm256_mul_ps(cb, bv));
            t = _mm256_add_ps(t, _mm256_mul_ps(cab, _mm256_mul_ps(av, bv)));
            _mm256_storeu_ps(yg + 8 * v, t);
        }
    }
}

/* tree_z for accumulators held as lo (v0..v7) and hi (v8..v15). */
static FORCE_INLINE __attribute__((target("avx2")))
__m128 tree_y(const __m256 *lo, const __m256 *hi)
{
    __m256 q[2];
    for (int h = 0; h < 2; h++) {
        const __m256 *a = h == 0 ? lo : hi;
        const __m256 b01 = _mm256_add_ps(_mm256_shuffle_ps(a[0], a[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm256_shuffle_ps(a[0], a[1], _MM_SHUFFLE(3, 1, 3, 1)));
        const __m256 b23 = _mm256_add_ps(_mm256_shuffle_ps(a[2], a[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm256_shuffle_ps(a[2], a[3], _MM_SHUFFLE(3, 1, 3, 1)));
        q[h] = _mm256_add_ps(_mm256_shuffle_ps(b01, b23, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm256_shuffle_ps(b01, b23, _MM_SHUFFLE(3, 1, 3, 1)));
    }
    const __m128 q01 = _mm_add_ps(_mm256_castps256_ps128(q[0]), _mm256_extractf128_ps(q[0], 1));
    const __m128 q23 = _mm_add_ps(_mm256_castps256_ps128(q[1]), _mm256_extractf128_ps(q[1], 1));
    return _mm_add_ps(q01, q23);
}

/* Lane i of the mask for m live lanes: table[8 - m + i]. */
static const int32_t y_mask_table[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };

/* grad_floor on 8 lanes: |d| not below the floor (or NaN) keeps d, else +0. */
static FORCE_INLINE __attribute__((target("avx2")))
__m256 grad_floor_y(__m256 d)
{
    const __m256 mag = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), d);
    return _mm256_and_ps(d, _mm256_cmp_ps(mag, _mm256_set1_ps(LOGIC_GRAD_FLOOR), _CMP_NLT_UQ));
}

/* One vector of 8 lanes into accumulator set s (the stat vectors acc[0..3]);
 * masked: lanes outside mask keep their accumulators and their dx. */
static FORCE_INLINE __attribute__((target("avx2")))
void backward_y_vec(__m256 *acc, const float *dg, const float *xa, const float *xb, float *dxa, float *dxb,
                    __m256 ca, __m256 cb, __m256 cab, const int with_dx, const int masked, __m256i mask,
                    __m256 keepa, __m256 keepb)
{
    __m256 d, av, bv;
    if (masked) {
        d = grad_floor_y(_mm256_maskload_ps(dg, mask));
        av = _mm256_maskload_ps(xa, mask);
        bv = _mm256_maskload_ps(xb, mask);
    } else {
        d = grad_floor_y(_mm256_loadu_ps(dg));
        av = _mm256_loadu_ps(xa);
        bv = _mm256_loadu_ps(xb);
    }
    __m256 p[4];
    p[0] = d;
    p[1] = _mm256_mul_ps(d, av);
    p[2] = _mm256_mul_ps(d, bv);
    p[3] = _mm256_mul_ps(d, _mm256_mul_ps(av, bv));
    for (int k = 0; k < 4; k++) {
        const __m256 s = _mm256_add_ps(acc[k], p[k]);
        acc[k] = masked ? _mm256_blendv_ps(acc[k], s, _mm256_castsi256_ps(mask)) : s;
    }
    if (with_dx) {
        const __m256 ta = _mm256_mul_ps(d, _mm256_add_ps(ca, _mm256_mul_ps(cab, bv)));
        const __m256 tb = _mm256_mul_ps(d, _mm256_add_ps(cb, _mm256_mul_ps(cab, av)));
        /* keep: all ones, or zero for a row's first update (LOGIC_DX_SET): the
         * and gives +0.0f whatever the row held. */
        if (masked) {
            /* dxb may be dxa (a == b): read it after dxa's store */
            _mm256_maskstore_ps(dxa, mask, _mm256_add_ps(_mm256_and_ps(_mm256_maskload_ps(dxa, mask), keepa), ta));
            _mm256_maskstore_ps(dxb, mask, _mm256_add_ps(_mm256_and_ps(_mm256_maskload_ps(dxb, mask), keepb), tb));
        } else {
            _mm256_storeu_ps(dxa, _mm256_add_ps(_mm256_and_ps(_mm256_loadu_ps(dxa), keepa), ta));
            _mm256_storeu_ps(dxb, _mm256_add_ps(_mm256_and_ps(_mm256_loadu_ps(dxb), keepb), tb));
        }
    }
}

static FORCE_INLINE __attribute__((target("avx2")))
void backward_y_gate(float *st, const float *dg, const float *xa, const float *xb, float *dxa, float *dxb,
                     const float *cg, size_t n, int accumulate, const int with_dx, __m256 ka, __m256 kb)
{
    const __m256 ca = _mm256_set1_ps(cg[1]), cb = _mm256_set1_ps(cg[2]), cab = _mm256_set1_ps(cg[3]);
    __m256 lo[4], hi[4];
    for (int k = 0; k < 4; k++) {
        lo[k] = _mm256_setzero_ps();
        hi[k] = _mm256_setzero_ps();
    }
    const __m256i full = _mm256_set1_epi32(-1);
#define DXP(p, o) (with_dx ? (p) + (o) : NULL)
    size_t l = 0;
    for (; l + 16 <= n; l += 16) {
        backward_y_vec(lo, dg + l, xa + l, xb + l, DXP(dxa, l), DXP(dxb, l), ca, cb, cab, with_dx, 0, full, ka, kb);
        backward_y_vec(hi, dg + l + 8, xa + l + 8, xb + l + 8, DXP(dxa, l + 8), DXP(dxb, l + 8), ca, cb, cab,
                       with_dx, 0, full, ka, kb);
    }
    if (l < n) {
        const size_t r = n - l;   /* 1 .. 15 live lanes */
        const size_t r0 = r < 8 ? r : 8;
        const __m256i m0 = _mm256_loadu_si256((const __m256i *)(const void *)(y_mask_table + 8 - r0));
        backward_y_vec(lo, dg + l, xa + l, xb + l, DXP(dxa, l), DXP(dxb, l), ca, cb, cab, with_dx, 1, m0, ka, kb);
        if (r > 8) {
            const __m256i m1 = _mm256_loadu_si256((const __m256i *)(const void *)(y_mask_table + 16 - r));
            backward_y_vec(hi, dg + l + 8, xa + l + 8, xb + l + 8, DXP(dxa, l + 8), DXP(dxb, l + 8), ca, cb, cab,
                           with_dx, 1, m1, ka, kb);
        }
    }
#undef DXP
    __m128 s = tree_y(lo, hi);
    if (accumulate)
        s = _mm_add_ps(_mm_loadu_ps(st), s);
    _mm_storeu_ps(st, s);
}

__attribute__((target("avx2")))
void logic_avx2_backward(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                         const float *coef, size_t n, size_t ld, int flags, const uint8_t *first)
{
    const int accumulate = flags & LOGIC_STATS_ADD;
    const __m256 keep = _mm256_castsi256_ps(_mm256_set1_epi32(-1)), drop = _mm256_setzero_ps();
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const size_t ra = wa[g], rb = wb[g];
        if (dx != NULL) {
            const unsigned f = first != NULL ? first[g] : 0u;
            const __m256 ka = (f & LOGIC_FIRST_A) ? drop : keep;
            const __m256 kb = (f & LOGIC_FIRST_B) ? drop : keep;
            backward_y_gate(stats + 4 * g, dy + g * ld, x + ra * ld, x + rb * ld, dx + ra * ld, dx + rb * ld,
                            coef + 4 * g, n, accumulate, 1, ka, kb);
        } else {
            backward_y_gate(stats + 4 * g, dy + g * ld, x + ra * ld, x + rb * ld, NULL, NULL,
                            coef + 4 * g, n, accumulate, 0, keep, keep);
        }
    }
}

/* The four statistics of one node of the tree, for 16 (8) samples. */
typedef struct { __m256 s0, s1, s2, s3; } stat4_y;

/* quads_z on 8 lanes: 128-bit half q of u[r] holds lane 4q + r's. */
static FORCE_INLINE __attribute__((target("avx2")))
void quads_y(__m256 a, __m256 b, __m256 c, __m256 d, __m256 *u)
{
    const __m256d t0 = _mm256_castps_pd(_mm256_unpacklo_ps(a, b)), t1 = _mm256_castps_pd(_mm256_unpackhi_ps(a, b));
    const __m256d t2 = _mm256_castps_pd(_mm256_unpacklo_ps(c, d)), t3 = _mm256_castps_pd(_mm256_unpackhi_ps(c, d));
    u[0] = _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t2));
    u[1] = _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t2));
    u[2] = _mm256_castpd_ps(_mm256_unpacklo_pd(t1, t3));
    u[3] = _mm256_castpd_ps(_mm256_unpackhi_pd(t1, t3));
}

/* AVX2: the 16 lanes as two halves of 8 samples, each run on its own (a
 * half with no sample below m is skipped); the same order of sums. */
static FORCE_INLINE __attribute__((target("avx2")))
stat4_y add4_y(stat4_y a, stat4_y b)
{
    return (stat4_y){ _mm256_add_ps(a.s0, b.s0), _mm256_add_ps(a.s1, b.s1), _mm256_add_ps(a.s2, b.s2),
                      _mm256_add_ps(a.s3, b.s3) };
}

/* lanes_dx_z on 8 lanes. */
static FORCE_INLINE __attribute__((target("avx2")))
void lanes_dx_y(size_t ld, const float *dg, const float *xa, const float *xb, float *dxa, float *dxb, __m256 ca,
                __m256 cb, __m256 cab, __m256 keep_a, __m256 keep_b)
{
    for (size_t o = 0; o < ld; o += 8) {
        const __m256 d = grad_floor_y(_mm256_loadu_ps(dg + o));
        const __m256 av = _mm256_loadu_ps(xa + o), bv = _mm256_loadu_ps(xb + o);
        /* a first touch: whatever the row holds, and 0 bits: +0 */
        const __m256 ta = _mm256_mul_ps(d, _mm256_add_ps(ca, _mm256_mul_ps(cab, bv)));
        _mm256_storeu_ps(dxa + o, _mm256_add_ps(_mm256_and_ps(_mm256_loadu_ps(dxa + o), keep_a), ta));
        const __m256 tb = _mm256_mul_ps(d, _mm256_add_ps(cb, _mm256_mul_ps(cab, av)));
        _mm256_storeu_ps(dxb + o, _mm256_add_ps(_mm256_and_ps(_mm256_loadu_ps(dxb + o), keep_b), tb));
    }
}

/* 8 floats of a window, live lanes kl. A full half (8 live lanes) ends
 * within its virtual lane's m floats, so within the row: a plain load,
 * which runs faster than vmaskmovps. */
static FORCE_INLINE __attribute__((target("avx2")))
__m256 lanes_load_y(const float *p, __m256i kl, const int full)
{
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, kl);
}

/* lanes_vl_z on 8 samples. */
static FORCE_INLINE __attribute__((target("avx2")))
stat4_y lanes_vl_y(size_t o, __m256i kl, const float *dg, const float *xa, const float *xb, const int full)
{
    const __m256 d = grad_floor_y(lanes_load_y(dg + o, kl, full));
    const __m256 av = lanes_load_y(xa + o, kl, full), bv = lanes_load_y(xb + o, kl, full);
    return (stat4_y){ d, _mm256_mul_ps(d, av), _mm256_mul_ps(d, bv), _mm256_mul_ps(d, _mm256_mul_ps(av, bv)) };
}

static FORCE_INLINE __attribute__((target("avx2")))
stat4_y lanes_acc_y(size_t v, size_t nvl, size_t m, __m256i kl, const float *dg, const float *xa, const float *xb,
                    const int full)
{
    stat4_y t = lanes_vl_y(v * m, kl, dg, xa, xb, full);
    for (size_t vl = v + LOGIC_LANES; vl < nvl; vl += LOGIC_LANES)
        t = add4_y(t, lanes_vl_y(vl * m, kl, dg, xa, xb, full));
    return t;
}

static FORCE_INLINE __attribute__((target("avx2")))
stat4_y lanes_quad_y(size_t v0, size_t P, size_t nvl, size_t m, __m256i kl, const float *dg, const float *xa,
                     const float *xb, const int full)
{
    stat4_y q = lanes_acc_y(v0, nvl, m, kl, dg, xa, xb, full);
    if (v0 + 1 < P)
        q = add4_y(q, lanes_acc_y(v0 + 1, nvl, m, kl, dg, xa, xb, full));
    if (v0 + 2 < P) {
        stat4_y u = lanes_acc_y(v0 + 2, nvl, m, kl, dg, xa, xb, full);
        if (v0 + 3 < P)
            u = add4_y(u, lanes_acc_y(v0 + 3, nvl, m, kl, dg, xa, xb, full));
        q = add4_y(q, u);
    }
    return q;
}

static FORCE_INLINE __attribute__((target("avx2")))
void lanes_store_y(float *st, size_t stride, stat4_y S, size_t m, int accumulate)
{
    __m256 u[4];
    quads_y(S.s0, S.s1, S.s2, S.s3, u);
    const __m256 u0 = u[0], u1 = u[1], u2 = u[2], u3 = u[3];
#define LANES_PUT_Y(j, u, b)                                                             \
    do {                                                                                 \
        if ((j) >= m)                                                                    \
            return;                                                                      \
        lanes_put4(st + (size_t)(j) * stride, _mm256_extractf128_ps(u, b), accumulate);  \
    } while (0)
    LANES_PUT_Y(0, u0, 0); LANES_PUT_Y(1, u1, 0); LANES_PUT_Y(2, u2, 0); LANES_PUT_Y(3, u3, 0);
    LANES_PUT_Y(4, u0, 1); LANES_PUT_Y(5, u1, 1); LANES_PUT_Y(6, u2, 1); LANES_PUT_Y(7, u3, 1);
#undef LANES_PUT_Y
}

/* The statistics of samples o .. o + mh − 1 of one gate (row offset o
 * within a virtual lane of m samples); full: mh = 8. */
static FORCE_INLINE __attribute__((target("avx2")))
void lanes_y_half(float *st, size_t stride, const float *dg, const float *xa, const float *xb, size_t nvl, size_t m,
                  size_t mh, int accumulate, const int full)
{
    const __m256i kl = _mm256_loadu_si256((const __m256i *)(const void *)(y_mask_table + 8 - mh));
    const __m256 zero = _mm256_setzero_ps();
    const size_t P = nvl < LOGIC_LANES ? nvl : LOGIC_LANES;
    stat4_y h = { zero, zero, zero, zero };
    if (P > 0) {
        h = lanes_quad_y(0, P, nvl, m, kl, dg, xa, xb, full);
        if (P > 4)
            h = add4_y(h, lanes_quad_y(4, P, nvl, m, kl, dg, xa, xb, full));
        if (P > 8) {
            stat4_y q = lanes_quad_y(8, P, nvl, m, kl, dg, xa, xb, full);
            if (P > 12)
                q = add4_y(q, lanes_quad_y(12, P, nvl, m, kl, dg, xa, xb, full));
            h = add4_y(h, q);
        }
    }
    lanes_store_y(st, stride, add4_y(h, (stat4_y){ zero, zero, zero, zero }), mh, accumulate);   /* f */
}

__attribute__((target("avx2")))
void logic_avx2_backward_lanes(float *dx, float *stats, size_t stride, const float *dy, const float *x,
                               const logic_layer *L, const float *coef, const uint8_t *first, size_t nvl, size_t m,
                               int accumulate)
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
            const __m256 keep_a = _mm256_castsi256_ps(_mm256_set1_epi32((fg & LOGIC_FIRST_A) ? 0 : -1));
            const __m256 keep_b = _mm256_castsi256_ps(_mm256_set1_epi32((fg & LOGIC_FIRST_B) ? 0 : -1));
            lanes_dx_y(ld, dg, xa, xb, dx + ra * ld, dx + rb * ld, _mm256_set1_ps(cg[1]), _mm256_set1_ps(cg[2]),
                       _mm256_set1_ps(cg[3]), keep_a, keep_b);
        }
        for (size_t o = 0; o < m; o += 8) {
            float *sh = stats + o * stride + 4 * g;
            if (m - o >= 8)
                lanes_y_half(sh, stride, dg + o, xa + o, xb + o, nvl, m, 8, accumulate, 1);
            else
                lanes_y_half(sh, stride, dg + o, xa + o, xb + o, nvl, m, m - o, accumulate, 0);
        }
    }
}

HORNER_STAGES_FN(horner_stages_y, "avx2", __m256d, _mm256_add_pd, _mm256_mul_pd, _mm256_set1_pd)

static FORCE_INLINE __attribute__((target("avx2")))
__m256d exp4d_y(__m256d x)
{
    const __m256d t = _mm256_mul_pd(x, _mm256_set1_pd(X_INV_LN2));
    const __m256d neg = _mm256_cmp_pd(t, _mm256_setzero_pd(), _CMP_LT_OQ);
    const __m256d u = _mm256_blendv_pd(_mm256_add_pd(t, _mm256_set1_pd(0.5)), _mm256_sub_pd(t, _mm256_set1_pd(0.5)),
                                       neg);
    const __m128i k = _mm256_cvttpd_epi32(u);
    const __m256d kd = _mm256_cvtepi32_pd(k);
    const __m256d hi = _mm256_sub_pd(x, _mm256_mul_pd(kd, _mm256_set1_pd(X_LN2_HI)));
    const __m256d lo = _mm256_mul_pd(kd, _mm256_set1_pd(X_LN2_LO));
    const __m256d r = _mm256_sub_pd(hi, lo);
    __m256d p = _mm256_set1_pd(1.0 / 6227020800.0);
    for (int i = 0; i < 11; i++)
        p = _mm256_add_pd(_mm256_set1_pd(EXP_C[i]), _mm256_mul_pd(r, p));
    const __m256d q = _mm256_mul_pd(_mm256_mul_pd(r, r), p);
    const __m256d one = _mm256_set1_pd(1.0);
    const __m256d s = _mm256_add_pd(one, hi);
    const __m256d err = _mm256_add_pd(_mm256_sub_pd(one, s), hi);
    const __m256d y = _mm256_add_pd(s, _mm256_add_pd(err, _mm256_sub_pd(q, lo)));
    const __m256i bits = _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(k), _mm256_set1_epi64x(1023)), 52);
    return _mm256_mul_pd(y, _mm256_castsi256_pd(bits));
}

static FORCE_INLINE __attribute__((target("avx2")))
__m128 exp4_y(__m128 xf)
{
    return _mm256_cvtpd_ps(exp4d_y(_mm256_cvtps_pd(xf)));
}

/* expf8d_group_z on 4 lanes a vector: the same shorter exp and the same
 * test of its float rounding, the table read by a gather (AVX2 has no
 * two-register permute). Returns nonzero if any lane of the n vectors is
 * unsure. */
static FORCE_INLINE __attribute__((target("avx2")))
int expf4d_group_y(__m256d *v, const int n)
{
    __m256d r[EXP_GROUP], p[EXP_GROUP];
    __m128i k[EXP_GROUP];
    __m256d unsure = _mm256_setzero_pd();
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m256d kf = _mm256_round_pd(_mm256_mul_pd(v[j], _mm256_set1_pd(EXPF_INV)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r[j] = _mm256_sub_pd(_mm256_sub_pd(v[j], _mm256_mul_pd(kf, _mm256_set1_pd(EXPF_C1))),
                             _mm256_mul_pd(kf, _mm256_set1_pd(EXPF_C2)));
        k[j] = _mm256_cvtpd_epi32(kf);
        unsure = _mm256_or_pd(unsure, _mm256_cmp_pd(v[j], _mm256_set1_pd(-87.0), _CMP_NGE_UQ));   /* NaN too */
        p[j] = _mm256_set1_pd(1.0 / 120.0);
    }
    horner_stages_y(p, r, EXPF_P, 5, n);
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m256d t = _mm256_i32gather_pd(EXPF_T16, _mm_and_si128(k[j], _mm_set1_epi32(15)), 8);
        const __m256i e = _mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm_srai_epi32(k[j], 4)), 52);
        const __m256i bits = _mm256_add_epi64(_mm256_castpd_si256(_mm256_mul_pd(t, p[j])), e);
        /* low − (2^28 − 2^14) in [0, 2^15): AVX2 compares signed only */
        const __m256i d = _mm256_sub_epi64(_mm256_and_si256(bits, _mm256_set1_epi64x(0x1FFFFFFF)),
                                           _mm256_set1_epi64x(0x10000000 - 0x4000));
        const __m256i near = _mm256_and_si256(_mm256_cmpgt_epi64(d, _mm256_set1_epi64x(-1)),
                                              _mm256_cmpgt_epi64(_mm256_set1_epi64x(0x8000), d));
        unsure = _mm256_or_pd(unsure, _mm256_castsi256_pd(near));
        v[j] = _mm256_castsi256_pd(bits);
    }
    return _mm256_movemask_pd(unsure);
}

/* 4 vectors of 8 floats as 8 of 4 doubles. */
static FORCE_INLINE __attribute__((target("avx2")))
void widen4_y(const __m256 *x, __m256d *d)
{
    for (int j = 0; j < EXP_GROUP / 2; j++) {
        d[2 * j] = _mm256_cvtps_pd(_mm256_castps256_ps128(x[j]));
        d[2 * j + 1] = _mm256_cvtps_pd(_mm256_extractf128_ps(x[j], 1));
    }
}

/* expf4_z on 4 vectors of 8 floats. */
static FORCE_INLINE __attribute__((target("avx2")))
void expf4_y(const __m256 *x, __m256 *q, const int shortcut)
{
    __m256d d[EXP_GROUP];
    widen4_y(x, d);
    if (!shortcut || expf4d_group_y(d, EXP_GROUP) != 0) {
        widen4_y(x, d);
        for (int j = 0; j < EXP_GROUP; j++)
            d[j] = exp4d_y(d[j]);
    }
    for (int j = 0; j < EXP_GROUP / 2; j++)
        q[j] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(d[2 * j])), _mm256_cvtpd_ps(d[2 * j + 1]), 1);
}

__attribute__((target("avx2")))
void logic_avx2_exp_lanes(const double *x, double *out)
{
    _mm256_storeu_pd(out, exp4d_y(_mm256_loadu_pd(x)));
    _mm256_storeu_pd(out + 4, exp4d_y(_mm256_loadu_pd(x + 4)));
}

static __attribute__((target("avx2")))
void coeffs_gates_y(const float *logits, size_t gates, float *p, float *coef)
{
    for (size_t g = 0; g < gates; g++) {
        const float *z = logits + g * LOGIC_OPS;
        const __m256 z0 = _mm256_loadu_ps(z), z1 = _mm256_loadu_ps(z + 8);
        __m256 mx = _mm256_max_ps(z0, z1);
        mx = _mm256_max_ps(mx, _mm256_permute2f128_ps(mx, mx, 1));
        mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, _MM_SHUFFLE(1, 0, 3, 2)));
        mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, _MM_SHUFFLE(2, 3, 0, 1)));
        const __m256 x0 = _mm256_sub_ps(z0, mx), x1 = _mm256_sub_ps(z1, mx);
        const __m256 lim = _mm256_set1_ps(EXP_LO);
        const int ok = _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(x0, lim, _CMP_GE_OQ),
                                                        _mm256_cmp_ps(x1, lim, _CMP_GE_OQ)));
        if (ok != 0xFF) {
            gate_coeffs_scalar(z, p + g * LOGIC_OPS, coef + g * 4);
            continue;
        }
        float e[LOGIC_OPS];
        _mm_storeu_ps(e, exp4_y(_mm256_castps256_ps128(x0)));
        _mm_storeu_ps(e + 4, exp4_y(_mm256_extractf128_ps(x0, 1)));
        _mm_storeu_ps(e + 8, exp4_y(_mm256_castps256_ps128(x1)));
        _mm_storeu_ps(e + 12, exp4_y(_mm256_extractf128_ps(x1, 1)));
        p_from_e(e, p + g * LOGIC_OPS);
        coef_from_p(p + g * LOGIC_OPS, coef + g * 4);
    }
}

/* r[i][j] -> r[j][i] for an 8 x 8 block of floats (moves only). */
static FORCE_INLINE __attribute__((target("avx2")))
void transpose8_y(__m256 *r)
{
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) {
        u[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
    }
}

/* store_coef4_z on 8 gates: 128-bit half q of u[r] holds gate 4q + r. */
static FORCE_INLINE __attribute__((target("avx2")))
void store_coef4_y(float *out, const __m256 *c)
{
    __m256 u[4];
    quads_y(c[0], c[1], c[2], c[3], u);
    _mm256_storeu_ps(out, _mm256_permute2f128_ps(u[0], u[1], 0x20));        /* gates 0, 1 */
    _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u[2], u[3], 0x20));    /* 2, 3 */
    _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u[0], u[1], 0x31));   /* 4, 5 */
    _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u[2], u[3], 0x31));   /* 6, 7 */
}

__attribute__((target("avx2")))
void logic_avx2_coeffs(const float *logits, size_t gates, float *p, float *coef)
{
    size_t g0 = 0;
    for (; g0 + 8 <= gates; g0 += 8) {
        const float *z = logits + g0 * LOGIC_OPS;
        __m256 x[LOGIC_OPS];
        for (int l = 0; l < 8; l++) {
            x[l] = _mm256_loadu_ps(z + l * LOGIC_OPS);
            x[8 + l] = _mm256_loadu_ps(z + l * LOGIC_OPS + 8);
        }
        transpose8_y(x);       /* x[j], j < 8: logit j of gates g0 .. g0+7 */
        transpose8_y(x + 8);
        __m256 m = x[0];
        for (int j = 1; j < LOGIC_OPS; j++)
            m = _mm256_max_ps(m, x[j]);
        __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        for (int j = 0; j < LOGIC_OPS; j++) {
            x[j] = _mm256_sub_ps(x[j], m);
            ok = _mm256_and_ps(ok, _mm256_cmp_ps(x[j], _mm256_set1_ps(EXP_LO), _CMP_GE_OQ));
        }
        if (_mm256_movemask_ps(ok) != 0xFF) {
            coeffs_gates_y(z, 8, p + g0 * LOGIC_OPS, coef + g0 * 4);
            continue;
        }
        __m256 q[LOGIC_OPS];
        for (int j0 = 0; j0 < LOGIC_OPS; j0 += EXP_GROUP / 2)
            expf4_y(x + j0, q + j0, 1);
        __m256 sum = q[0];
        for (int j = 1; j < LOGIC_OPS; j++)
            sum = _mm256_add_ps(sum, q[j]);
        for (int j = 0; j < LOGIC_OPS; j++)
            q[j] = _mm256_div_ps(q[j], sum);
        __m256 c[4];
        COEF_TERMS(__m256, _mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_set1_ps, q, c);
        transpose8_y(q);
        transpose8_y(q + 8);
        for (int l = 0; l < 8; l++) {
            _mm256_storeu_ps(p + (g0 + (size_t)l) * LOGIC_OPS, q[l]);
            _mm256_storeu_ps(p + (g0 + (size_t)l) * LOGIC_OPS + 8, q[8 + l]);
        }
        store_coef4_y(coef + g0 * 4, c);
    }
    coeffs_gates_y(logits + g0 * LOGIC_OPS, gates - g0, p + g0 * LOGIC_OPS, coef + g0 * 4);
}

__attribute__((target("avx2")))
void logic_avx2_expand(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo, size_t hi)
{
    float col[4][LOGIC_OPS];
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < LOGIC_OPS; j++)
            col[k][j] = (float)LOGIC_AFFINE[j][k];
    for (size_t g = lo; g < hi; g++) {
        const float *S = stats + g * 4, *c = coef + g * 4;
        const float Y = ((c[0] * S[0] + c[1] * S[1]) + c[2] * S[2]) + c[3] * S[3];
        for (int h = 0; h < 2; h++) {
            const __m256 A = _mm256_loadu_ps(col[0] + 8 * h), B = _mm256_loadu_ps(col[1] + 8 * h);
            const __m256 C = _mm256_loadu_ps(col[2] + 8 * h), D = _mm256_loadu_ps(col[3] + 8 * h);
            __m256 F = _mm256_add_ps(_mm256_mul_ps(A, _mm256_set1_ps(S[0])), _mm256_mul_ps(B, _mm256_set1_ps(S[1])));
            F = _mm256_add_ps(F, _mm256_mul_ps(C, _mm256_set1_ps(S[2])));
            F = _mm256_add_ps(F, _mm256_mul_ps(D, _mm256_set1_ps(S[3])));
            const __m256 d = _mm256_mul_ps(_mm256_loadu_ps(p + g * LOGIC_OPS + 8 * h), _mm256_sub_ps(F, _mm256_set1_ps(Y)));
            _mm256_storeu_ps(dlogits + g * LOGIC_OPS + 8 * h, d);
        }
    }
}

EXPF_LANES_FN(logic_avx2_expf_lanes, "avx2", __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, expf4_y)
#undef HORNER_STAGES_FN
#undef EXPF_LANES_FN

#else
typedef int logic_avx2_none;   /* not an x86 target: no AVX2 path (ISO C wants a declaration) */
#endif /* LOGIC_X86 */
