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
        /* maxpool saves, per output, its maximum's offset from the window's
         * first element as a uint32_t in a float's slot: < k·W·C. */
        size_t span;
        if (l->kind == NN_MAXPOOL &&
            (!nn_mul(k * W, C, &span) || span > UINT32_MAX || !nn_mul(l->out[0] * l->out[1], C, &l->act_floats)))
            return ls_fail(err, LS_EINVAL, "maxpool: a %zu x %zu window over %zu x %zu x %zu is too large", k, k, H, W, C);
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

/* The valid kx of row (ox, ky): kx in [*lo, *hi) reads ix = ox + kx - pad
 * in [0, W); those inputs are contiguous in NHWC (and so are their column
 * entries), so im2col and col2im move a row's k·C floats as one run. */
static void kx_range(size_t ox, size_t pad, size_t k, size_t W, size_t *lo, size_t *hi)
{
    *lo = ox < pad ? pad - ox : 0;
    *hi = W + pad - ox < k ? W + pad - ox : k;
}

/* The column matrix of n samples: [n·Ho·Wo][k·k·C] (nn_conv.h). */
static void im2col(const nn_layer *l, float *col, const float *x, size_t n)
{
    const size_t H = l->in[0], W = l->in[1], C = l->in[2], k = l->k;
    const size_t Ho = l->out[0], Wo = l->out[1], pad = l->same ? (k - 1) / 2 : 0;
    for (size_t b = 0; b < n; b++) {
        const float *xb = x + b * H * W * C;
        for (size_t oy = 0; oy < Ho; oy++)
            for (size_t ox = 0; ox < Wo; ox++) {
                size_t lo, hi;
                kx_range(ox, pad, k, W, &lo, &hi);
                for (size_t ky = 0; ky < k; ky++, col += k * C) {
                    /* iy = oy + ky - pad, in unsigned arithmetic: out of range wraps high */
                    const size_t iy = oy + ky - pad;
                    if (iy >= H || lo >= hi) {
                        memset(col, 0, k * C * sizeof(float));
                        continue;
                    }
                    memset(col, 0, lo * C * sizeof(float));
                    memcpy(col + lo * C, xb + (iy * W + ox + lo - pad) * C, (hi - lo) * C * sizeof(float));
                    memset(col + hi * C, 0, (k - hi) * C * sizeof(float));
                }
            }
    }
}

/* t += d element-wise (col2im's adds: each element on its own). */
NN_TWIN(acc, (float *restrict t, const float *restrict d, size_t n), (t, d, n),
        for (size_t i = 0; i < n; i++) t[i] = t[i] + d[i];)

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
            for (size_t ox = 0; ox < Wo; ox++) {
                size_t lo, hi;
                kx_range(ox, pad, k, W, &lo, &hi);
                /* One run per (ky): its kx touch distinct dx elements, so
                 * each element still gets its terms in (r, ky, kx) order. */
                for (size_t ky = 0; ky < k; ky++, d += k * C) {
                    const size_t iy = oy + ky - pad;
                    if (iy < H && lo < hi)
                        acc(dxb + (iy * W + ox + lo - pad) * C, d + lo * C, (hi - lo) * C);
                }
            }
    }
}

/* One window element v (C channels) against the running maxima s: a
 * strict > (the first maximum wins, NaN never replaces), its offset kept in
 * at. Compares and selects only, so every width gives the same bits. */
NN_TWIN(max_step, (float *restrict s, uint32_t *restrict at, const float *restrict v, uint32_t off, size_t n),
        (s, at, v, off, n), for (size_t i = 0; i < n; i++) {
            const int gt = v[i] > s[i];
            s[i] = gt ? v[i] : s[i];
            at[i] = gt ? off : at[i];
        })
/* s += v element-wise (avgpool's sums, each channel on its own). */
NN_TWIN(sum_step, (float *restrict s, const float *restrict v, size_t n), (s, v, n),
        for (size_t i = 0; i < n; i++) s[i] = s[i] + v[i];)

void nn_conv_pool_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                          void *scratch)
{
    (void)w;
    (void)scratch;
    const size_t H = l->in[0], W = l->in[1], C = l->in[2], k = l->k, Ho = l->out[0], Wo = l->out[1];
    const float area = (float)(k * k);
    /* act holds uint32_t words in float slots (nn_conv_describe). */
    uint32_t *at = (uint32_t *)(void *)act;
    for (size_t b = 0; b < n; b++) {
        const float *xb = x + b * H * W * C;
        for (size_t oy = 0; oy < Ho; oy++)
            for (size_t ox = 0; ox < Wo; ox++, y += C) {
                /* the window's first element, channels c = 0..C-1 */
                const float *p = xb + (oy * k * W + ox * k) * C;
                if (l->kind == NN_MAXPOOL) {
                    /* at[c] = offset of channel c's maximum from p + c */
                    memcpy(y, p, C * sizeof(float));
                    memset(at, 0, C * sizeof(uint32_t));
                    for (size_t ky = 0; ky < k; ky++)
                        for (size_t kx = ky == 0; kx < k; kx++) {
                            const size_t off = (ky * W + kx) * C;
                            max_step(y, at, p + off, (uint32_t)off, C);
                        }
                    at += C;
                    continue;
                }
                for (size_t c = 0; c < C; c++)
                    y[c] = 0.0f;
                for (size_t ky = 0; ky < k; ky++)
                    for (size_t kx = 0; kx < k; kx++)
                        sum_step(y, p + (ky * W + kx) * C, C);
                for (size_t c = 0; c < C; c++)
                    y[c] = y[c] / area;
            }
    }
}

void nn_conv_pool_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                           const float *x, const float *y, const float *w, size_t n, void *scratch)
{
    (void)dw;
    (void)x;
    (void)y;
    (void)w;
    (void)scratch;
    const size_t H = l->in[0], W = l->in[1], C = l->in[2], k = l->k, Ho = l->out[0], Wo = l->out[1];
    const float area = (float)(k * k);
    const uint32_t *at = (const uint32_t *)(const void *)act;
    memset(dx, 0, n * H * W * C * sizeof(float));
    for (size_t b = 0; b < n; b++) {
        float *dxb = dx + b * H * W * C;
        for (size_t oy = 0; oy < Ho; oy++)
            for (size_t ox = 0; ox < Wo; ox++)
                for (size_t c = 0; c < C; c++, dy++) {
                    const size_t base = (oy * k * W + ox * k) * C + c;
                    if (l->kind == NN_MAXPOOL) {
                        /* the maximum forward found: no search, no branch */
                        dxb[base + *at++] = *dy;
                        continue;
                    }
                    for (size_t ky = 0; ky < k; ky++)
                        for (size_t kx = 0; kx < k; kx++)
                            dxb[base + (ky * W + kx) * C] = *dy / area;
                }
    }
}
