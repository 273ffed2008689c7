/* nn_attn.c — causal multi-head self-attention (nn_attn.h). The
 * projections go through dense.h; the per-head products are two loop
 * shapes (scores and mix, below), each an AVX2+FMA path and its scalar
 * twin with the orders the header writes. */
#include "engine/nn/nn_attn.h"

#include <math.h>
#include <string.h>

#include "engine/num/dense.h"
#include "engine/num/dmath.h"

/* Scratch layout (bytes from the start): wqkv^T [3C][C], wo^T [C][C],
 * ds [T][T], e [T] binary64, one head's k and v transposed [hs][T] each;
 * then per call do [n·T][C], dqkv [n·T][3C]. */
typedef struct {
    size_t wqkvt, wot, ds, e, kt, vt, fixed;
} layout;

static layout plan(const nn_layer *l)
{
    const size_t T = l->in[0], C = l->in[2];
    layout s;
    s.wqkvt = 0;
    s.wot = s.wqkvt + nn_round64(3 * C * C * sizeof(float));
    s.ds = s.wot + nn_round64(C * C * sizeof(float));
    s.e = s.ds + nn_round64(T * T * sizeof(float));
    s.kt = s.e + nn_round64(T * sizeof(double));
    s.vt = s.kt + nn_round64(C / l->heads * T * sizeof(float));
    s.fixed = s.vt + nn_round64(C / l->heads * T * sizeof(float));
    return s;
}

ls_status nn_attn_describe(nn_layer *l, ls_err *err)
{
    const size_t T = l->in[0], C = l->in[2], H = l->heads;
    if (l->in[1] != 1)
        return ls_fail(err, LS_EINVAL, "attn: input width %zu; a sequence is T x 1 x C", l->in[1]);
    if (H == 0 || C % H != 0)
        return ls_fail(err, LS_EINVAL, "attn: %zu heads do not divide %zu features", H, C);
    size_t tt, sq, att, rows4;
    /* Every product the layout forms: 3C·C, H·T·T, T·4C (qkv and o; do and dqkv). */
    if (!nn_mul(3 * C, C, &sq) || !nn_mul(T, T, &tt) || !nn_mul(tt, H, &att) || !nn_mul(T, 4 * C, &rows4) ||
        !nn_add(rows4, att, &l->act_floats) || !nn_mul(rows4, sizeof(float), &l->scratch_per_sample) ||
        !nn_tensor_add(l, "wqkv", C, 3 * C) || !nn_tensor_add(l, "bqkv", 3 * C, 0) ||
        !nn_tensor_add(l, "wo", C, C) || !nn_tensor_add(l, "bo", C, 0))
        return ls_fail(err, LS_EINVAL, "attn: %zu tokens x %zu features is too large", T, C);
    l->scratch_fixed = plan(l).fixed;
    memcpy(l->out, l->in, sizeof l->out);
    return LS_OK;
}

/* The two loop shapes of the header's orders, each with a scalar twin and
 * an AVX2+FMA path that performs, per output element, the same fmaf
 * sequence in the same order (vfmadd rounds once, like fmaf), so both give
 * the same bits. The vector paths keep a tile of outputs in registers over
 * the whole chain and share each loaded row between the tile's rows; the
 * plain form (one axpy call of 16 floats per term, its output stored and
 * reloaded every step) spent most of its time on the call and the store.
 *
 * scores: out[t][u] for u <= t < T (ldo apart):
 *   s = 0.0f, s = fmaf(a[t][d], B[d][u], s) for d = 0 .. hs-1,
 * B transposed ([hs][T], ldb = T). The vector path may also write entries
 * with t < u < T (a tile's width; deterministic, and never read).
 *
 * mix: out[r][c] for r < R, c < hs (ldo apart):
 *   s = 0.0f, s = fmaf(coef[r·crs + j·cs], V[j][c], s) for j = lo_r .. hi_r - 1,
 * lo_r = lo + r·dlo, hi_r = hi + r·dhi (the causal ranges: u <= t, or t >= u). */
typedef struct {
    const float *coef;
    size_t crs, cs;
    const float *V;
    size_t ldv;
    size_t lo, dlo, hi, dhi;
} mix_spec;

static void scores_scalar(float *out, size_t ldo, const float *a, size_t lda, const float *B, size_t T, size_t hs,
                          size_t t0, size_t t1)
{
    for (size_t t = t0; t < t1; t++)
        for (size_t u = 0; u <= t; u++) {
            float s = 0.0f;
            for (size_t d = 0; d < hs; d++)
                s = fmaf(a[t * lda + d], B[d * T + u], s);
            out[t * ldo + u] = s;
        }
}

/* Rows r0 .. r1-1, columns c0 .. c1-1 of mix, element by element. */
static void mix_scalar(float *out, size_t ldo, const mix_spec *m, size_t hs, size_t r0, size_t r1, size_t c0)
{
    for (size_t r = r0; r < r1; r++) {
        const size_t lo = m->lo + r * m->dlo, hi = m->hi + r * m->dhi;
        const float *cr = m->coef + r * m->crs;
        for (size_t c = c0; c < hs; c++) {
            float s = 0.0f;
            for (size_t j = lo; j < hi; j++)
                s = fmaf(cr[j * m->cs], m->V[j * m->ldv + c], s);
            out[r * ldo + c] = s;
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTN_X86 1
#include <immintrin.h>
#define ATTN_AVX2 __attribute__((target("avx2,fma")))

/* A tile of scores: NR rows from t, NV vectors of 8 columns from u. */
static FORCE_INLINE ATTN_AVX2 void scores_tile(float *out, size_t ldo, const float *a, size_t lda, const float *B,
                                               size_t T, size_t hs, size_t t, size_t u, int NR, int NV)
{
    __m256 acc[4][4];
    for (int r = 0; r < NR; r++)
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm256_setzero_ps();
    for (size_t d = 0; d < hs; d++) {
        __m256 b[4];
        for (int v = 0; v < NV; v++)
            b[v] = _mm256_loadu_ps(B + d * T + u + 8 * (size_t)v);
        for (int r = 0; r < NR; r++) {
            const __m256 x = _mm256_broadcast_ss(a + (t + (size_t)r) * lda + d);
            for (int v = 0; v < NV; v++)
                acc[r][v] = _mm256_fmadd_ps(x, b[v], acc[r][v]);
        }
    }
    for (int r = 0; r < NR; r++)
        for (int v = 0; v < NV; v++)
            _mm256_storeu_ps(out + (t + (size_t)r) * ldo + u + 8 * (size_t)v, acc[r][v]);
}

/* Columns 0 .. nu-1 of NR rows from t: tiles of NV·8 and 8 columns (NR·NV
 * accumulators, at most 8 and the loaded row: no spills), the rest scalar. */
static FORCE_INLINE ATTN_AVX2 void scores_rows(float *out, size_t ldo, const float *a, size_t lda, const float *B,
                                               size_t T, size_t hs, size_t t, size_t nu, int NR, int NV)
{
    size_t u = 0;
    for (; u + 8 * (size_t)NV <= nu; u += 8 * (size_t)NV)
        scores_tile(out, ldo, a, lda, B, T, hs, t, u, NR, NV);
    for (; u + 8 <= nu; u += 8)
        scores_tile(out, ldo, a, lda, B, T, hs, t, u, NR, 1);
    for (int r = 0; r < NR; r++)
        for (size_t v = u; v < nu; v++) {
            const size_t tr = t + (size_t)r;
            float s = 0.0f;
            for (size_t d = 0; d < hs; d++)
                s = fmaf(a[tr * lda + d], B[d * T + v], s);
            out[tr * ldo + v] = s;
        }
}

static ATTN_AVX2 void scores_avx2(float *out, size_t ldo, const float *a, size_t lda, const float *B, size_t T,
                                  size_t hs)
{
    size_t t = 0;
    for (; t + 4 <= T; t += 4) {   /* rows t .. t+3 need u <= t+3 */
        const size_t nu = (t + 4 + 7) / 8 * 8 < T ? (t + 4 + 7) / 8 * 8 : T;
        scores_rows(out, ldo, a, lda, B, T, hs, t, nu, 4, 2);
    }
    for (; t < T; t++)
        scores_rows(out, ldo, a, lda, B, T, hs, t, T, 1, 4);
}

/* Four rows from r0 of mix, 16 columns from c0, in 8 registers: each row's
 * own leading terms (j < the block's largest lo), the block's common terms
 * with each V row loaded once for the four, each row's trailing terms. */
static FORCE_INLINE ATTN_AVX2 void mix_tile4(float *out, size_t ldo, const mix_spec *m, size_t r0, size_t c0,
                                             size_t jl, size_t jh, int NV)
{
    __m256 acc[4][2];
    for (int k = 0; k < 4; k++) {
        const size_t r = r0 + (size_t)k, lo = m->lo + r * m->dlo;
        const float *cr = m->coef + r * m->crs;
        for (int v = 0; v < NV; v++)
            acc[k][v] = _mm256_setzero_ps();
        for (size_t j = lo; j < jl; j++)
            for (int v = 0; v < NV; v++)
                acc[k][v] = _mm256_fmadd_ps(_mm256_broadcast_ss(cr + j * m->cs),
                                            _mm256_loadu_ps(m->V + j * m->ldv + c0 + 8 * (size_t)v), acc[k][v]);
    }
    const float *c0p = m->coef + r0 * m->crs;
    for (size_t j = jl; j < jh; j++) {
        __m256 x[2];
        for (int v = 0; v < NV; v++)
            x[v] = _mm256_loadu_ps(m->V + j * m->ldv + c0 + 8 * (size_t)v);
        for (int k = 0; k < 4; k++) {
            const __m256 c = _mm256_broadcast_ss(c0p + (size_t)k * m->crs + j * m->cs);
            for (int v = 0; v < NV; v++)
                acc[k][v] = _mm256_fmadd_ps(c, x[v], acc[k][v]);
        }
    }
    for (int k = 0; k < 4; k++) {
        const size_t r = r0 + (size_t)k, hi = m->hi + r * m->dhi;
        const float *cr = m->coef + r * m->crs;
        for (size_t j = jh; j < hi; j++)
            for (int v = 0; v < NV; v++)
                acc[k][v] = _mm256_fmadd_ps(_mm256_broadcast_ss(cr + j * m->cs),
                                            _mm256_loadu_ps(m->V + j * m->ldv + c0 + 8 * (size_t)v), acc[k][v]);
        for (int v = 0; v < NV; v++)
            _mm256_storeu_ps(out + r * ldo + c0 + 8 * (size_t)v, acc[k][v]);
    }
}

static ATTN_AVX2 void mix_avx2(float *out, size_t ldo, const mix_spec *m, size_t hs, size_t R)
{
    size_t r0 = 0;
    for (; r0 + 4 <= R; r0 += 4) {
        const size_t jl = m->lo + (r0 + 3) * m->dlo, jh = m->hi + r0 * m->dhi;
        if (jl > jh) {   /* no common part: row by row */
            mix_scalar(out, ldo, m, hs, r0, r0 + 4, 0);
            continue;
        }
        size_t c = 0;
        for (; c + 16 <= hs; c += 16)
            mix_tile4(out, ldo, m, r0, c, jl, jh, 2);
        for (; c + 8 <= hs; c += 8)
            mix_tile4(out, ldo, m, r0, c, jl, jh, 1);
        if (c < hs)
            mix_scalar(out, ldo, m, hs, r0, r0 + 4, c);
    }
    mix_scalar(out, ldo, m, hs, r0, R, 0);
}
#endif

/* 1 when the AVX2+FMA paths run: read once per layer call. */
static int attn_vec(void)
{
#ifdef ATTN_X86
    return nn_simd_on() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static void scores(int vec, float *out, size_t ldo, const float *a, size_t lda, const float *B, size_t T, size_t hs)
{
#ifdef ATTN_X86
    if (vec) {
        scores_avx2(out, ldo, a, lda, B, T, hs);
        return;
    }
#endif
    (void)vec;
    scores_scalar(out, ldo, a, lda, B, T, hs, 0, T);
}

static void mix(int vec, float *out, size_t ldo, const mix_spec *m, size_t hs, size_t R)
{
#ifdef ATTN_X86
    if (vec) {
        mix_avx2(out, ldo, m, hs, R);
        return;
    }
#endif
    (void)vec;
    mix_scalar(out, ldo, m, hs, 0, R, 0);
}

/* The element-wise steps of the softmax and its gradient (nn.h's twins). */
NN_TWIN(scale_row, (float *restrict a, float scale, size_t n), (a, scale, n),
        for (size_t i = 0; i < n; i++) a[i] = a[i] * scale;)
NN_TWIN(shift_row, (double *restrict e, const float *restrict a, float m, size_t n), (e, a, m, n),
        for (size_t i = 0; i < n; i++) e[i] = (double)a[i] - (double)m;)
NN_TWIN(weights_row, (float *restrict a, const double *restrict e, double S, size_t n), (a, e, S, n),
        for (size_t i = 0; i < n; i++) a[i] = (float)(e[i] / S);)
NN_TWIN(ds_row, (float *restrict d, const float *restrict a, double D, float scale, size_t n), (d, a, D, scale, n),
        for (size_t i = 0; i < n; i++) d[i] = (float)((double)a[i] * ((double)d[i] - D)) * scale;)

static float *at(void *base, size_t off)
{
    return (float *)(void *)((char *)base + off);
}

void nn_attn_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                     void *scratch)
{
    const size_t T = l->in[0], C = l->in[2], H = l->heads, hs = C / H, C3 = 3 * C;
    const float scale = (float)(1.0 / sqrt((double)hs));
    const float *wqkv = w, *bqkv = w + C * C3, *wo = bqkv + C3, *bo = wo + C * C;
    float *qkv = act, *att = qkv + n * T * C3, *o = att + n * H * T * T;
    const layout lay = plan(l);
    double *e = (double *)(void *)at(scratch, lay.e);
    float *kt = at(scratch, lay.kt);
    const int simd = nn_simd_on(), vec = attn_vec();
    dense_forward(qkv, x, wqkv, bqkv, n * T, C, C3);
    for (size_t b = 0; b < n; b++)
        for (size_t h = 0; h < H; h++) {
            const float *qb = qkv + b * T * C3 + h * hs;
            float *ab = att + (b * H + h) * T * T;
            float *ob = o + b * T * C + h * hs;
            dense_transpose_block(kt, T, qb + C, C3, T, hs);
            scores(vec, ab, T, qb, C3, kt, T, hs);
            for (size_t t = 0; t < T; t++) {
                float *arow = ab + t * T;
                scale_row(arow, scale, t + 1);
                float m = arow[0];
                for (size_t u = 1; u <= t; u++)
                    if (arow[u] > m)
                        m = arow[u];
                shift_row(e, arow, m, t + 1);
                if (simd)   /* the same bits, four at a time */
                    dmath_exp_n(e, e, t + 1);
                else
                    for (size_t u = 0; u <= t; u++)
                        e[u] = dmath_exp(e[u]);
                double S = 0.0;
                for (size_t u = 0; u <= t; u++)
                    S = S + e[u];
                weights_row(arow, e, S, t + 1);
                for (size_t u = t + 1; u < T; u++)
                    arow[u] = 0.0f;
            }
            const mix_spec pv = {ab, T, 1, qb + 2 * C, C3, 0, 0, 1, 1};   /* u = 0 .. t */
            mix(vec, ob, C, &pv, hs, T);
        }
    dense_forward(y, o, wo, bo, n * T, C, C);
}

void nn_attn_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                      const float *x, const float *y, const float *w, size_t n, void *scratch)
{
    (void)y;
    const size_t T = l->in[0], C = l->in[2], H = l->heads, hs = C / H, C3 = 3 * C;
    const float scale = (float)(1.0 / sqrt((double)hs));
    const float *wqkv = w, *wo = w + C * C3 + C3;
    float *dwqkv = dw, *dbqkv = dw + C * C3, *dwo = dbqkv + C3, *dbo = dwo + C * C;
    const float *qkv = act, *att = qkv + n * T * C3, *o = att + n * H * T * T;
    const layout s = plan(l);
    float *wot = at(scratch, s.wot), *wqkvt = at(scratch, s.wqkvt), *ds = at(scratch, s.ds);
    float *dov = at(scratch, s.fixed), *dqkv = dov + n * T * C, *vt = at(scratch, s.vt);
    const int vec = attn_vec();

    dense_backward_weights(dwo, dbo, o, dy, n * T, C, C, 0);
    dense_transpose(wot, wo, C, C);
    dense_forward(dov, dy, wot, NULL, n * T, C, C);
    for (size_t b = 0; b < n; b++)
        for (size_t h = 0; h < H; h++) {
            const float *qb = qkv + b * T * C3 + h * hs;
            const float *ab = att + (b * H + h) * T * T;
            const float *dob = dov + b * T * C + h * hs;
            float *dqb = dqkv + b * T * C3 + h * hs;
            dense_transpose_block(vt, T, qb + 2 * C, C3, T, hs);
            scores(vec, ds, T, dob, C, vt, T, hs);   /* datt, replaced by ds below */
            for (size_t t = 0; t < T; t++) {
                const float *arow = ab + t * T;
                float *drow = ds + t * T;
                double D = 0.0;
                for (size_t u = 0; u <= t; u++)
                    D = D + (double)arow[u] * (double)drow[u];
                ds_row(drow, arow, D, scale, t + 1);
            }
            const mix_spec dq = {ds, T, 1, qb + C, C3, 0, 0, 1, 1};   /* u = 0 .. t */
            const mix_spec dk = {ds, 1, T, qb, C3, 0, 1, T, 0};       /* t = u .. T-1 */
            const mix_spec dv = {ab, 1, T, dob, C, 0, 1, T, 0};
            mix(vec, dqb, C3, &dq, hs, T);
            mix(vec, dqb + C, C3, &dk, hs, T);
            mix(vec, dqb + 2 * C, C3, &dv, hs, T);
        }
    dense_backward_weights(dwqkv, dbqkv, x, dqkv, n * T, C, C3, 0);
    if (dx == NULL)
        return;
    dense_transpose(wqkvt, wqkv, C, C3);
    dense_forward(dx, dqkv, wqkvt, NULL, n * T, C3, C);
}
