/* nn_act.c — ReLU, GELU, residual add, dropout (nn_act.h). */
#include "engine/nn/nn_act.h"

#include <string.h>

#include "engine/num/dmath.h"
#include "engine/num/rng.h"

ls_status nn_act_describe(nn_layer *l, ls_err *err)
{
    if (l->kind == NN_DROPOUT && !(l->p >= 0.0f && l->p < 1.0f))
        return ls_fail(err, LS_EINVAL, "dropout: p = %g; it must lie in [0, 1)", (double)l->p);
    memcpy(l->out, l->in, sizeof l->out);
    if (l->kind == NN_GELU)
        l->act_floats = l->in_size;   /* t, so the backward calls no tanh */
    return LS_OK;
}

NN_TWIN(relu_fwd, (float *restrict y, const float *restrict x, size_t n), (y, x, n),
        for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;)

NN_TWIN(relu_bwd, (float *restrict dx, const float *restrict dy, const float *restrict x, size_t n), (dx, dy, x, n),
        for (size_t i = 0; i < n; i++) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;)

NN_TWIN(add_fwd, (float *restrict y, const float *restrict a, const float *restrict b, size_t n), (y, a, b, n),
        for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];)

void nn_act_relu_forward(const nn_layer *l, float *y, const float *x, size_t n)
{
    relu_fwd(y, x, n * l->in_size);
}

void nn_act_relu_backward(const nn_layer *l, float *dx, const float *dy, const float *x, size_t n)
{
    relu_bwd(dx, dy, x, n * l->in_size);
}

#define GELU_C 0.7978845608f
#define GELU_A 0.044715f

/* Macros, not functions: the loops below are built for several targets
 * (LS_SIMD_CLONES), and clang does not inline a function built for the
 * default target (-march=native's features) into a clone built for fewer,
 * so the clone's loop would call it and stay scalar (-Wpass-failed). */
#define gelu_arg(x) (GELU_C * ((x) + GELU_A * (((x) * (x)) * (x))))

NN_TWIN(gelu_args, (float *restrict t, const float *restrict x, size_t n), (t, x, n),
        for (size_t i = 0; i < n; i++) t[i] = gelu_arg(x[i]);)

NN_TWIN(gelu_out, (float *restrict y, const float *restrict x, const float *restrict t, size_t n), (y, x, t, n),
        for (size_t i = 0; i < n; i++) y[i] = (0.5f * x[i]) * (1.0f + t[i]);)

#define gelu_slope(v, t) \
    (0.5f * (1.0f + (t)) + (0.5f * (v)) * ((1.0f - (t) * (t)) * (GELU_C * (1.0f + (3.0f * GELU_A) * ((v) * (v))))))

NN_TWIN(gelu_bwd,
        (float *restrict dx, const float *restrict dy, const float *restrict x, const float *restrict t, size_t n),
        (dx, dy, x, t, n), for (size_t i = 0; i < n; i++) dx[i] = dy[i] * gelu_slope(x[i], t[i]);)

/* t[j] = tanh(gelu_arg(x[j])) for j < n: with the SIMD switch on through
 * dmath_tanhf_n (vectorised, the same bits), else element by element. */
#define GELU_CHUNK 256
static void gelu_t(float *t, const float *x, size_t n, int simd)
{
    gelu_args(t, x, n);
    if (simd) {
        dmath_tanhf_n(t, t, n);
        return;
    }
    for (size_t j = 0; j < n; j++)
        t[j] = dmath_tanhf(t[j]);
}

void nn_act_gelu_forward(const nn_layer *l, float *y, float *act, const float *x, size_t n)
{
    const size_t m = n * l->in_size;
    const int simd = nn_simd_on();
    float buf[GELU_CHUNK];
    for (size_t i0 = 0; i0 < m; i0 += GELU_CHUNK) {
        const size_t len = m - i0 < GELU_CHUNK ? m - i0 : GELU_CHUNK;
        float *t = act != NULL ? act + i0 : buf;
        gelu_t(t, x + i0, len, simd);
        gelu_out(y + i0, x + i0, t, len);
    }
}

void nn_act_gelu_backward(const nn_layer *l, float *dx, const float *dy, const float *act, const float *x,
                          size_t n)
{
    const size_t m = n * l->in_size;
    if (act != NULL) {
        gelu_bwd(dx, dy, x, act, m);
        return;
    }
    const int simd = nn_simd_on();
    float tt[GELU_CHUNK];
    for (size_t i0 = 0; i0 < m; i0 += GELU_CHUNK) {
        const size_t len = m - i0 < GELU_CHUNK ? m - i0 : GELU_CHUNK;
        gelu_t(tt, x + i0, len, simd);
        gelu_bwd(dx + i0, dy + i0, x + i0, tt, len);
    }
}

void nn_act_add_forward(const nn_layer *l, float *y, const float *x, const float *x2, size_t n)
{
    add_fwd(y, x, x2, n * l->in_size);
}

void nn_act_add_backward(const nn_layer *l, float *dx, float *dx2, const float *dy, size_t n)
{
    const size_t bytes = n * l->in_size * sizeof(float);
    if (dx != NULL && dx != dy)
        memcpy(dx, dy, bytes);
    if (dx2 != NULL && dx2 != dy)
        memcpy(dx2, dy, bytes);
}

int nn_act_dropout_keep(float p, uint64_t seed, uint64_t step, uint64_t s, uint64_t i)
{
    return rng_uniformf(seed, NN_RNG_DROPOUT, step, s, i) >= p;
}

/* dropout's forward (x = input) and backward (x = dy): the same masking. */
static void dropout(const nn_layer *l, float *y, const float *x, size_t n, uint64_t seed, uint64_t step,
                    uint64_t sample0)
{
    const float scale = 1.0f / (1.0f - l->p);
    const size_t m = l->in_size;
    for (size_t b = 0; b < n; b++)
        for (size_t i = 0; i < m; i++)
            y[b * m + i] = nn_act_dropout_keep(l->p, seed, step, sample0 + b, i) ? x[b * m + i] * scale : 0.0f;
}

void nn_act_dropout_forward(const nn_layer *l, float *y, const float *x, size_t n,
                            uint64_t seed, uint64_t step, uint64_t sample0)
{
    dropout(l, y, x, n, seed, step, sample0);
}

void nn_act_dropout_backward(const nn_layer *l, float *dx, const float *dy, size_t n,
                             uint64_t seed, uint64_t step, uint64_t sample0)
{
    dropout(l, dx, dy, n, seed, step, sample0);
}
