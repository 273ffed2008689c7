/* nn_norm.c — layer normalisation (nn_norm.h). */
#include "engine/nn/nn_norm.h"

#include <math.h>   /* sqrt: correctly rounded (IEEE 754), the same on every libm */
#include <string.h>

ls_status nn_norm_describe(nn_layer *l, ls_err *err)
{
    if (!(l->eps > 0.0))
        return ls_fail(err, LS_EINVAL, "layernorm: eps = %g; it must be > 0", l->eps);
    const size_t C = l->in[2];
    if (!nn_tensor_add(l, "gain", C, 0) || !nn_tensor_add(l, "bias", C, 0) ||
        !nn_mul(l->in[0] * l->in[1], 4, &l->act_floats))
        return ls_fail(err, LS_EINVAL, "layernorm: %zu features are too many", C);
    memcpy(l->out, l->in, sizeof l->out);
    return LS_OK;
}

/* gain·xhat + bias, and the two parameter sums of backward, per vector. */
NN_TWIN(affine, (float *restrict y, const float *restrict g, const float *restrict b, size_t n),
        (y, g, b, n), for (size_t i = 0; i < n; i++) y[i] = y[i] * g[i] + b[i];)
NN_TWIN_FMA(acc_gain, (float *restrict dg, float *restrict db, const float *restrict dy, const float *restrict xh, size_t n),
        (dg, db, dy, xh, n), for (size_t i = 0; i < n; i++) { dg[i] = fmaf(dy[i], xh[i], dg[i]); db[i] = db[i] + dy[i]; })

/* The statistics of NB rows (C apart) at once: each row's sums are its own
 * chains in index order, as nn_norm.h writes; interleaving NB of them only
 * lets the additions of different rows overlap (one row alone waits on
 * each addition's latency). */
#define NORM_ROWS 4
static FORCE_INLINE void stats_rows(const float *x, size_t C, double eps, double *st, const int NB)
{
    double s[NORM_ROWS], m[NORM_ROWS], v[NORM_ROWS];
#define EACH _Pragma("GCC unroll 4") for (int k = 0; k < NB; k++)
    EACH s[k] = 0.0;
    for (size_t i = 0; i < C; i++)
        EACH s[k] = s[k] + (double)x[(size_t)k * C + i];
    EACH {
        m[k] = s[k] / (double)C;
        v[k] = 0.0;
    }
    for (size_t i = 0; i < C; i++)
        EACH {
            const double d = (double)x[(size_t)k * C + i] - m[k];
            v[k] = v[k] + d * d;
        }
    EACH {
        st[2 * k] = m[k];
        st[2 * k + 1] = 1.0 / sqrt(v[k] / (double)C + eps);
    }
#undef EACH
}

NN_TWIN(normalise, (float *restrict xh, const float *restrict x, size_t n, double mean, double rstd),
        (xh, x, n, mean, rstd), for (size_t i = 0; i < n; i++) xh[i] = (float)(((double)x[i] - mean) * rstd);)

/* backward's dx_i (nn_norm.h). A macro, not a function: clang does not
 * inline a function built for the default target into the loop's clones
 * (LS_SIMD_CLONES), which would then stay scalar (-Wpass-failed). */
#define norm_dx1(dy, x, w, mean, rstd, a, c) \
    ((float)((rstd) * (((double)((dy) * (w)) - (a)) - (double)(float)(((double)(x) - (mean)) * (rstd)) * (c))))

NN_TWIN(norm_dx,
        (float *restrict dx, const float *restrict dy, const float *restrict x, const float *restrict w, size_t n,
         double mean, double rstd, double a, double c),
        (dx, dy, x, w, n, mean, rstd, a, c),
        for (size_t i = 0; i < n; i++) dx[i] = norm_dx1(dy[i], x[i], w[i], mean, rstd, a, c);)

void nn_norm_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                     void *scratch)
{
    (void)scratch;
    const size_t C = l->in[2], V = n * l->in[0] * l->in[1];
    double *st = (double *)(void *)act;
    size_t r0 = 0;
    for (; r0 + NORM_ROWS <= V; r0 += NORM_ROWS)
        stats_rows(x + r0 * C, C, l->eps, &st[2 * r0], NORM_ROWS);
    for (; r0 < V; r0++)
        stats_rows(x + r0 * C, C, l->eps, &st[2 * r0], 1);
    for (size_t r = 0; r < V; r++) {
        normalise(y + r * C, x + r * C, C, st[2 * r], st[2 * r + 1]);
        affine(y + r * C, w, w + C, C);
    }
}

/* Backward's a and c (already divided by C) of NB rows at once, each row's
 * two sums in index order (interleaved as stats_rows). */
static FORCE_INLINE void grad_sums_rows(const float *x, const float *dy, const float *w, const double *st, size_t C,
                                        double *ac, const int NB)
{
    double a[NORM_ROWS], c[NORM_ROWS];
#define EACH _Pragma("GCC unroll 4") for (int k = 0; k < NB; k++)
    EACH a[k] = c[k] = 0.0;
    for (size_t i = 0; i < C; i++)
        EACH {
            const size_t j = (size_t)k * C + i;
            const float g = dy[j] * w[i];
            const float xh = (float)(((double)x[j] - st[2 * k]) * st[2 * k + 1]);
            a[k] = a[k] + (double)g;
            c[k] = c[k] + (double)g * (double)xh;
        }
    EACH {
        ac[2 * k] = a[k] / (double)C;
        ac[2 * k + 1] = c[k] / (double)C;
    }
#undef EACH
}

void nn_norm_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                      const float *x, const float *y, const float *w, size_t n, void *scratch)
{
    (void)y;
    (void)scratch;
    const size_t C = l->in[2], V = n * l->in[0] * l->in[1];
    const double *st = (const double *)(const void *)act;
    float *dg = dw, *db = dw + C;
    memset(dw, 0, 2 * C * sizeof(float));
    for (size_t r = 0; r < V; r++) {
        const float *xr = x + r * C, *dyr = dy + r * C;
        const double mean = st[2 * r], rstd = st[2 * r + 1];
        /* xhat goes through a temporary; the parameter sums run over the
         * rows in order. */
        float tmp[256];
        for (size_t c0 = 0; c0 < C; c0 += 256) {
            const size_t m = C - c0 < 256 ? C - c0 : 256;
            normalise(tmp, xr + c0, m, mean, rstd);
            acc_gain(dg + c0, db + c0, dyr + c0, tmp, m);
        }
    }
    if (dx == NULL)
        return;
    for (size_t r0 = 0; r0 < V;) {
        double ac[2 * NORM_ROWS];
        const size_t nb = V - r0 >= NORM_ROWS ? NORM_ROWS : 1;
        if (nb == NORM_ROWS)
            grad_sums_rows(x + r0 * C, dy + r0 * C, w, st + 2 * r0, C, ac, NORM_ROWS);
        else
            grad_sums_rows(x + r0 * C, dy + r0 * C, w, st + 2 * r0, C, ac, 1);
        for (size_t k = 0; k < nb; k++) {
            const size_t r = r0 + k;
            norm_dx(dx + r * C, dy + r * C, x + r * C, w, C, st[2 * r], st[2 * r + 1], ac[2 * k], ac[2 * k + 1]);
        }
        r0 += nb;
    }
}
