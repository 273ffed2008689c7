/* nn_embed.c — token and position embeddings (nn_embed.h). */
#include "engine/nn/nn_embed.h"

#include <math.h>
#include <string.h>

ls_status nn_embed_describe(nn_layer *l, ls_err *err)
{
    if (l->kind == NN_POSEMBED) {
        if (l->in[1] != 1)
            return ls_fail(err, LS_EINVAL, "posembed: input width %zu; a sequence is T x 1 x C", l->in[1]);
        if (!nn_tensor_add(l, "table", l->in[0], l->in[2]))
            return ls_fail(err, LS_EINVAL, "posembed: %zu x %zu is too large", l->in[0], l->in[2]);
        memcpy(l->out, l->in, sizeof l->out);
        return LS_OK;
    }
    if (l->in[1] != 1 || l->in[2] != 1)
        return ls_fail(err, LS_EINVAL, "embed: input %zu x %zu x %zu; ids come as T x 1 x 1", l->in[0], l->in[1], l->in[2]);
    if (l->vocab == 0 || l->vocab > (size_t)INT32_MAX + 1)
        return ls_fail(err, LS_EINVAL, "embed: vocab %zu; ids are int32, so 1 .. 2^31", l->vocab);
    if (l->units == 0)
        return ls_fail(err, LS_EINVAL, "embed: units (width) is 0");
    if (!nn_tensor_add(l, "table", l->vocab, l->units))
        return ls_fail(err, LS_EINVAL, "embed: %zu x %zu is too large", l->vocab, l->units);
    l->out[0] = l->in[0];
    l->out[1] = 1;
    l->out[2] = l->units;
    return LS_OK;
}

void nn_embed_forward(const nn_layer *l, float *y, const int32_t *ids, const float *w, size_t n)
{
    const size_t C = l->units, R = n * l->in[0];
    for (size_t r = 0; r < R; r++, y += C) {
        if (ids[r] < 0 || (size_t)ids[r] >= l->vocab) {
            for (size_t c = 0; c < C; c++)
                y[c] = NAN;
            continue;
        }
        memcpy(y, w + (size_t)ids[r] * C, C * sizeof(float));
    }
}

void nn_embed_backward(const nn_layer *l, float *dw, const float *dy, const int32_t *ids, size_t n)
{
    const size_t C = l->units, R = n * l->in[0];
    memset(dw, 0, l->vocab * C * sizeof(float));
    for (size_t r = 0; r < R; r++, dy += C) {
        if (ids[r] < 0 || (size_t)ids[r] >= l->vocab)
            continue;
        float *d = dw + (size_t)ids[r] * C;
        for (size_t c = 0; c < C; c++)
            d[c] = d[c] + dy[c];
    }
}

NN_TWIN(add_rows, (float *restrict y, const float *restrict a, const float *restrict b, size_t n), (y, a, b, n),
        for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];)
NN_TWIN(acc_rows, (float *restrict y, const float *restrict b, size_t n), (y, b, n),
        for (size_t i = 0; i < n; i++) y[i] = y[i] + b[i];)

void nn_embed_pos_forward(const nn_layer *l, float *y, const float *x, const float *w, size_t n)
{
    const size_t m = l->in_size;
    for (size_t b = 0; b < n; b++)
        add_rows(y + b * m, x + b * m, w, m);
}

void nn_embed_pos_backward(const nn_layer *l, float *dx, float *dw, const float *dy, size_t n)
{
    const size_t m = l->in_size;
    if (dx != NULL && dx != dy)
        memcpy(dx, dy, n * m * sizeof(float));
    memset(dw, 0, m * sizeof(float));
    for (size_t b = 0; b < n; b++)
        acc_rows(dw, dy + b * m, m);
}
