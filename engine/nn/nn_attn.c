/* nn_attn.c — causal multi-head self-attention (nn_attn.h). The
 * projections go through dense.h; the per-head loops are plain scalar code
 * with the orders the header writes. */
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

/* y[d] = fmaf(a, x[d], y[d]) for d < n: one step of n chains at once, each
 * chain in the order its caller walks (the header's orders). A dot product
 * over d of every u at once is hs such steps over u, with the other
 * operand transposed ([hs][T]): the same chain for each element. */
/* The twins by hand rather than NN_TWIN_FMA: the choice between them is read
 * once per layer call (axpy_pick), not once per call of these short loops. */
NN_FMA_CLONES static void attn_axpy_vec(float *restrict y, float a, const float *restrict x, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        y[i] = fmaf(a, x[i], y[i]);
}

static void attn_axpy_scalar(float *restrict y, float a, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = fmaf(a, x[i], y[i]);
}

typedef void axpy_fn(float *restrict y, float a, const float *restrict x, size_t n);

static axpy_fn *axpy_pick(void)
{
    return nn_simd_on() ? attn_axpy_vec : attn_axpy_scalar;
}

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
    const int simd = nn_simd_on();
    axpy_fn *const axpy = axpy_pick();
    dense_forward(qkv, x, wqkv, bqkv, n * T, C, C3);
    for (size_t b = 0; b < n; b++)
        for (size_t h = 0; h < H; h++) {
            const float *qb = qkv + b * T * C3 + h * hs;
            float *ab = att + (b * H + h) * T * T;
            float *ob = o + b * T * C + h * hs;
            dense_transpose_block(kt, T, qb + C, C3, T, hs);
            for (size_t t = 0; t < T; t++) {
                const float *q = qb + t * C3;
                float *arow = ab + t * T;
                memset(arow, 0, (t + 1) * sizeof(float));
                for (size_t d = 0; d < hs; d++)
                    axpy(arow, q[d], kt + d * T, t + 1);
                float m = 0.0f;
                for (size_t u = 0; u <= t; u++) {
                    arow[u] = arow[u] * scale;
                    if (u == 0 || arow[u] > m)
                        m = arow[u];
                }
                for (size_t u = 0; u <= t; u++)
                    e[u] = (double)arow[u] - (double)m;
                if (simd)   /* the same bits, four at a time */
                    dmath_exp_n(e, e, t + 1);
                else
                    for (size_t u = 0; u <= t; u++)
                        e[u] = dmath_exp(e[u]);
                double S = 0.0;
                for (size_t u = 0; u <= t; u++)
                    S = S + e[u];
                for (size_t u = 0; u < T; u++)
                    arow[u] = u <= t ? (float)(e[u] / S) : 0.0f;
                float *orow = ob + t * C;
                memset(orow, 0, hs * sizeof(float));
                for (size_t u = 0; u <= t; u++)
                    axpy(orow, arow[u], qb + u * C3 + 2 * C, hs);
            }
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
    axpy_fn *const axpy = axpy_pick();

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
            for (size_t t = 0; t < T; t++) {
                const float *arow = ab + t * T;
                float *drow = ds + t * T;   /* datt, replaced by ds below */
                memset(drow, 0, (t + 1) * sizeof(float));
                for (size_t d = 0; d < hs; d++)
                    axpy(drow, dob[t * C + d], vt + d * T, t + 1);
                double D = 0.0;
                for (size_t u = 0; u <= t; u++)
                    D = D + (double)arow[u] * (double)drow[u];
                for (size_t u = 0; u <= t; u++)
                    drow[u] = (float)((double)arow[u] * ((double)drow[u] - D)) * scale;
            }
            for (size_t t = 0; t < T; t++) {
                float *dq = dqb + t * C3;
                memset(dq, 0, hs * sizeof(float));
                for (size_t u = 0; u <= t; u++)
                    axpy(dq, ds[t * T + u], qb + u * C3 + C, hs);
            }
            for (size_t u = 0; u < T; u++) {
                float *dk = dqb + u * C3 + C, *dv = dqb + u * C3 + 2 * C;
                memset(dk, 0, hs * sizeof(float));
                memset(dv, 0, hs * sizeof(float));
                for (size_t t = u; t < T; t++) {
                    axpy(dk, ds[t * T + u], qb + t * C3, hs);
                    axpy(dv, ab[t * T + u], dob + t * C, hs);
                }
            }
        }
    dense_backward_weights(dwqkv, dbqkv, x, dqkv, n * T, C, C3, 0);
    if (dx == NULL)
        return;
    dense_transpose(wqkvt, wqkv, C, C3);
    dense_forward(dx, dqkv, wqkvt, NULL, n * T, C3, C);
}
