/* nn_loss.c — softmax cross-entropy (nn_loss.h). */
#include "engine/nn/nn_loss.h"

#include <math.h>

#include "engine/num/dmath.h"

ls_status nn_loss_describe(nn_layer *l, ls_err *err)
{
    if (l->in[1] != 1)
        return ls_fail(err, LS_EINVAL, "xent: input width %zu; logits come as rows x 1 x classes", l->in[1]);
    if (l->in[2] > (size_t)INT32_MAX + 1)
        return ls_fail(err, LS_EINVAL, "xent: %zu classes; labels are int32 (0 .. 2^31-1), so at most 2^31", l->in[2]);
    if (!nn_mul(l->in[2], sizeof(double), &l->scratch_fixed))
        return ls_fail(err, LS_EINVAL, "xent: %zu classes are too many", l->in[2]);
    l->scratch_fixed = nn_round64(l->scratch_fixed);
    l->out[0] = l->out[1] = l->out[2] = 1;
    return LS_OK;
}

/* The element-wise steps (nn.h's twins): e_i's argument, and dz before
 * its one-hot term: (float)(e_i / s), or that divided by div. The one-hot
 * term is then subtracted from one element only: x - 0.0f is x. */
NN_TWIN(shift, (double *restrict e, const float *restrict z, double m, size_t n), (e, z, m, n),
        for (size_t i = 0; i < n; i++) e[i] = (double)z[i] - m;)
NN_TWIN(probs, (float *restrict dz, const double *restrict e, double s, size_t n), (dz, e, s, n),
        for (size_t i = 0; i < n; i++) dz[i] = (float)(e[i] / s);)

/* e_i into e, returns s; *m the row's maximum. simd: nn_simd_on(), read
 * once per layer call. */
static double exps(const float *z, size_t C, double *e, double *m, int simd)
{
    float zmax = z[0];
    for (size_t i = 1; i < C; i++)
        if (z[i] > zmax)
            zmax = z[i];
    *m = (double)zmax;
    shift(e, z, *m, C);
    if (simd)   /* the same bits, four at a time */
        dmath_exp_n(e, e, C);
    else
        for (size_t i = 0; i < C; i++)
            e[i] = dmath_exp(e[i]);
    double s = 0.0;
    for (size_t i = 0; i < C; i++)
        s = s + e[i];
    return s;
}

double nn_loss_xent_forward(const nn_layer *l, const float *z, const int32_t *labels, size_t n, void *scratch)
{
    const size_t C = l->in[2], R = n * l->in[0];
    double *e = scratch, loss = 0.0, m;
    const int simd = nn_simd_on();
    for (size_t r = 0; r < R; r++, z += C) {
        const double s = exps(z, C, e, &m, simd);
        const int32_t y = labels[r];
        loss = loss + (y >= 0 && (size_t)y < C ? dmath_log(s) - ((double)z[y] - m) : (double)NAN);
    }
    return loss;
}

void nn_loss_xent_backward(const nn_layer *l, float *dz, const float *z, const int32_t *labels, size_t n,
                           void *scratch)
{
    const size_t C = l->in[2], R = n * l->in[0];
    double *e = scratch, m;
    const int simd = nn_simd_on();
    for (size_t r = 0; r < R; r++, z += C, dz += C) {
        const double s = exps(z, C, e, &m, simd);
        const size_t y = labels[r] >= 0 ? (size_t)labels[r] : C;
        for (size_t i = 0; i < C; i++)
            dz[i] = (float)(e[i] / s) - (i == y ? 1.0f : 0.0f);
    }
}

double nn_loss_xent_both(const nn_layer *l, float *dz, const float *z, const int32_t *labels, size_t n, float div,
                         void *scratch)
{
    const size_t C = l->in[2], R = n * l->in[0];
    double *e = scratch, loss = 0.0, m;
    const int simd = nn_simd_on();
    for (size_t r = 0; r < R; r++, z += C, dz += C) {
        const double s = exps(z, C, e, &m, simd);
        const int32_t y = labels[r];
        loss = loss + (y >= 0 && (size_t)y < C ? dmath_log(s) - ((double)z[y] - m) : (double)NAN);
        probs(dz, e, s, C);
        if (y >= 0 && (size_t)y < C)
            dz[y] = dz[y] - 1.0f;
        if (div != 1.0f)
            for (size_t i = 0; i < C; i++)
                dz[i] = dz[i] / div;
    }
    return loss;
}
