/* nn_dense.c — the dense layer (nn_dense.h): the dense.h kernels, called on
 * all n·rows rows at once (each output element's sum runs over K or over
 * the rows in order, whatever the row count, so one call is the order the
 * header writes). */
#include "engine/nn/nn_dense.h"

#include "engine/num/dense.h"

ls_status nn_dense_describe(nn_layer *l, ls_err *err)
{
    if (l->in[1] != 1)
        return ls_fail(err, LS_EINVAL, "dense: input width %zu; a dense layer takes rows x 1 x features", l->in[1]);
    if (l->units == 0)
        return ls_fail(err, LS_EINVAL, "dense: units is 0; a layer has at least one output");
    const size_t K = l->in[2], N = l->units;
    size_t wt;
    if (!nn_tensor_add(l, "w", K, N) || (l->bias && !nn_tensor_add(l, "b", N, 0)) ||
        !nn_mul(K * N, sizeof(float), &wt))
        return ls_fail(err, LS_EINVAL, "dense: %zu x %zu weights are too many", K, N);
    l->out[0] = l->in[0];
    l->out[1] = 1;
    l->out[2] = N;
    l->scratch_fixed = nn_round64(wt);
    return LS_OK;
}

void nn_dense_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                      void *scratch)
{
    (void)act;
    (void)scratch;
    const size_t K = l->in[2], N = l->units;
    dense_forward(y, x, w, l->bias ? w + K * N : NULL, n * l->in[0], K, N);
}

void nn_dense_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                       const float *x, const float *y, const float *w, size_t n, void *scratch)
{
    (void)act;
    (void)y;
    const size_t K = l->in[2], N = l->units, R = n * l->in[0];
    dense_backward_weights(dw, l->bias ? dw + K * N : NULL, x, dy, R, K, N, 0);
    if (dx == NULL)
        return;
    float *wt = scratch;   /* [N][K] */
    dense_transpose(wt, w, K, N);
    dense_forward(dx, dy, wt, NULL, R, N, K);
}
