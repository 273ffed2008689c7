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

static void stats(const float *x, size_t C, double eps, double *mean, double *rstd)
{
    double s = 0.0;
    for (size_t i = 0; i < C; i++)
        s = s + (double)x[i];
    const double m = s / (double)C;
    double v = 0.0;
    for (size_t i = 0; i < C; i++) {
        const double d = (double)x[i] - m;
        v = v + d * d;
    }
    *mean = m;
    *rstd = 1.0 / sqrt(v / (double)C + eps);
}

static void normalise(float *xh, const float *x, size_t C, double mean, double rstd)
{
    for (size_t i = 0; i < C; i++)
        xh[i] = (float)(((double)x[i] - mean) * rstd);
}

void nn_norm_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                     void *scratch)
{
    (void)scratch;
    const size_t C = l->in[2], V = n * l->in[0] * l->in[1];
    double *st = (double *)(void *)act;
    for (size_t r = 0; r < V; r++) {
        stats(x + r * C, C, l->eps, &st[2 * r], &st[2 * r + 1]);
        normalise(y + r * C, x + r * C, C, st[2 * r], st[2 * r + 1]);
        affine(y + r * C, w, w + C, C);
    }
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
        /* xhat goes through dx's row as a temporary when dx is given; the
         * parameter sums need it either way. */
        float tmp[256];
        for (size_t c0 = 0; c0 < C; c0 += 256) {
            const size_t m = C - c0 < 256 ? C - c0 : 256;
            normalise(tmp, xr + c0, m, mean, rstd);
            acc_gain(dg + c0, db + c0, dyr + c0, tmp, m);
        }
        if (dx == NULL)
            continue;
        double a = 0.0, c = 0.0;
        for (size_t i = 0; i < C; i++) {
            const float g = dyr[i] * w[i];
            const float xh = (float)(((double)xr[i] - mean) * rstd);
            a = a + (double)g;
            c = c + (double)g * (double)xh;
        }
        a = a / (double)C;
        c = c / (double)C;
        for (size_t i = 0; i < C; i++) {
            const float g = dyr[i] * w[i];
            const float xh = (float)(((double)xr[i] - mean) * rstd);
            dx[r * C + i] = (float)(rstd * (((double)g - a) - (double)xh * c));
        }
    }
}
