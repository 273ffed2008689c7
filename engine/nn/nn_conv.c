/* nn_conv.c — convolution through im2col and the dense kernels, and the
 * pools (nn_conv.h). */
#include "engine/nn/nn_conv.h"

#include <string.h>

#include "engine/num/dense.h"

ls_status nn_conv_describe(nn_layer *l, ls_err *err)
{
    const size_t H = l->in[0], W = l->in[1], C = l->in[2], k = l->k;
    const char *what = l->kind == NN_CONV2D ? "conv2d" : l->kind == NN_MAXPOOL ? "maxpool" : "avgpool";
    if (k == 0)
        return ls_fail(err, LS_EINVAL, "%s: kernel side k is 0", what);
    if (l->kind != NN_CONV2D) {
        if (H < k || W < k)
            return ls_fail(err, LS_EINVAL, "%s: a %zu x %zu window does not fit a %zu x %zu image", what, k, k, H, W);
        l->out[0] = H / k;
        l->out[1] = W / k;
        l->out[2] = C;
        return LS_OK;
    }
    if (l->units == 0)
        return ls_fail(err, LS_EINVAL, "conv2d: units (output channels) is 0");
    if (l->same && k % 2 == 0)
        return ls_fail(err, LS_EINVAL, "conv2d: 'same' padding needs an odd kernel side, not %zu", k);
    if (!l->same && (H < k || W < k))
        return ls_fail(err, LS_EINVAL, "conv2d: a %zu x %zu kernel does not fit a %zu x %zu image ('valid')", k, k, H, W);
    l->out[0] = l->same ? H : H - k + 1;
    l->out[1] = l->same ? W : W - k + 1;
    l->out[2] = l->units;
    size_t q, cols, wt;
    if (!nn_mul(k * k, C, &q) || !nn_tensor_add(l, "w", q, l->units) || (l->bias && !nn_tensor_add(l, "b", l->units, 0)) ||
        !nn_mul(l->out[0] * l->out[1], q, &cols) || !nn_mul(cols, 2 * sizeof(float), &cols) ||
        !nn_mul(q * l->units, sizeof(float), &wt))
        return ls_fail(err, LS_EINVAL, "conv2d: %zu x %zu x %zu -> %zu is too large", k, k, C, l->units);
    l->scratch_fixed = nn_round64(wt);
    l->scratch_per_sample = cols;
    return LS_OK;
}

/* The column matrix of n samples: [n·Ho·Wo][k·k·C] (nn_conv.h). */
static void im2col(const nn_layer *l, float *col, const float *x, size_t n)
{
    const size_t H = l->in[0], W = l->in[1], C = l->in[2], k = l->k;
    const size_t Ho = l->out[0], Wo = l->out[1], pad = l->same ? (k - 1) / 2 : 0;
    for (size_t b = 0; b < n; b++) {
        const float *xb = x + b * H * W * C;
        for (size_t oy = 0; oy < Ho; oy++)
            for (size_t ox = 0; ox < Wo; ox++)
                for (size_t ky = 0; ky < k; ky++) {
                    /* iy = oy + ky - pad, in unsigned arithmetic: out of range wraps high */
                    const size_t iy = oy + ky - pad;
                    for (size_t kx = 0; kx < k; kx++) {
                        const size_t ix = ox + kx - pad;
                        if (iy < H && ix < W)
                            memcpy(col, xb + (iy * W + ix) * C, C * sizeof(float));
                        else
                            memset(col, 0, C * sizeof(float));
                        col += C;
                    }
                }
    }
}

void nn_conv_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                     void *scratch)
{
    (void)act;
    const size_t q = l->k * l->k * l->in[2], O = l->units, R = n * l->out[0] * l->out[1];
    float *col = (float *)(void *)((char *)scratch + l->scratch_fixed);
    im2col(l, col, x, n);
    dense_forward(y, col, w, l->bias ? w + q * O : NULL, R, q, O);
}

void nn_conv_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                      const float *x, const float *y, const float *w, size_t n, void *scratch)
{
    (void)act;
    (void)y;
    const size_t H = l->in[0], W = l->in[1], C = l->in[2], k = l->k;
    const size_t Ho = l->out[0], Wo = l->out[1], pad = l->same ? (k - 1) / 2 : 0;
    const size_t q = k * k * C, O = l->units, R = n * Ho * Wo;
    float *wt = scratch;
    float *col = (float *)(void *)((char *)scratch + l->scratch_fixed);
    float *dcol = col + R * q;
    im2col(l, col, x, n);
    dense_backward_weights(dw, l->bias ? dw + q * O : NULL, col, dy, R, q, O, 0);
    if (dx == NULL)
        return;
    dense_transpose(wt, w, q, O);
    dense_forward(dcol, dy, wt, NULL, R, O, q);
    memset(dx, 0, n * H * W * C * sizeof(float));
    const float *d = dcol;
    for (size_t b = 0; b < n; b++) {
        float *dxb = dx + b * H * W * C;
        for (size_t oy = 0; oy < Ho; oy++)
            for (size_t ox = 0; ox < Wo; ox++)
                for (size_t ky = 0; ky < k; ky++) {
                    const size_t iy = oy + ky - pad;
                    for (size_t kx = 0; kx < k; kx++, d += C) {
                        const size_t ix = ox + kx - pad;
                        if (iy >= H || ix >= W)
                            continue;
                        float *t = dxb + (iy * W + ix) * C;
                        for (size_t c = 0; c < C; c++)
                            t[c] = t[c] + d[c];
                    }
                }
    }
}

void nn_conv_pool_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                          void *scratch)
{
    (void)act;
    (void)w;
    (void)scratch;
    const size_t H = l->in[0], W = l->in[1], C = l->in[2], k = l->k, Ho = l->out[0], Wo = l->out[1];
    const float area = (float)(k * k);
    for (size_t b = 0; b < n; b++) {
        const float *xb = x + b * H * W * C;
        for (size_t oy = 0; oy < Ho; oy++)
            for (size_t ox = 0; ox < Wo; ox++)
                for (size_t c = 0; c < C; c++, y++) {
                    const float *p = xb + (oy * k * W + ox * k) * C + c;
                    float s = l->kind == NN_MAXPOOL ? p[0] : 0.0f;
                    for (size_t ky = 0; ky < k; ky++)
                        for (size_t kx = 0; kx < k; kx++) {
                            const float v = p[(ky * W + kx) * C];
                            if (l->kind == NN_MAXPOOL)
                                s = v > s ? v : s;
                            else
                                s = s + v;
                        }
                    *y = l->kind == NN_MAXPOOL ? s : s / area;
                }
    }
}

void nn_conv_pool_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                           const float *x, const float *y, const float *w, size_t n, void *scratch)
{
    (void)dw;
    (void)act;
    (void)y;
    (void)w;
    (void)scratch;
    const size_t H = l->in[0], W = l->in[1], C = l->in[2], k = l->k, Ho = l->out[0], Wo = l->out[1];
    const float area = (float)(k * k);
    memset(dx, 0, n * H * W * C * sizeof(float));
    for (size_t b = 0; b < n; b++) {
        const float *xb = x + b * H * W * C;
        float *dxb = dx + b * H * W * C;
        for (size_t oy = 0; oy < Ho; oy++)
            for (size_t ox = 0; ox < Wo; ox++)
                for (size_t c = 0; c < C; c++, dy++) {
                    const size_t base = (oy * k * W + ox * k) * C + c;
                    if (l->kind == NN_AVGPOOL) {
                        for (size_t ky = 0; ky < k; ky++)
                            for (size_t kx = 0; kx < k; kx++)
                                dxb[base + (ky * W + kx) * C] = *dy / area;
                        continue;
                    }
                    size_t best = base;
                    for (size_t ky = 0; ky < k; ky++)
                        for (size_t kx = 0; kx < k; kx++) {
                            const size_t i = base + (ky * W + kx) * C;
                            if (xb[i] > xb[best])
                                best = i;
                        }
                    dxb[best] = *dy;
                }
    }
}
