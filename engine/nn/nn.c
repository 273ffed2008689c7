/* nn.c — the layer record's shared parts (nn.h): the descriptor dispatch,
 * scratch sizes, the SIMD switch of the layers' loops, size arithmetic. */
#include "engine/nn/nn.h"

#include <string.h>

#include "base/simd.h"
#include "engine/nn/nn_act.h"
#include "engine/nn/nn_attn.h"
#include "engine/nn/nn_conv.h"
#include "engine/nn/nn_dense.h"
#include "engine/nn/nn_embed.h"
#include "engine/nn/nn_loss.h"
#include "engine/nn/nn_norm.h"

static simd_switch nn_choice = SIMD_SWITCH_INIT;

int nn_set_simd(int enabled)
{
    return simd_set(&nn_choice, enabled ? SIMD_BEST : SIMD_OFF) != SIMD_OFF;
}

int nn_simd_on(void)
{
    return simd_path(&nn_choice) != SIMD_PATH_SCALAR;
}

int nn_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > (SIZE_MAX / 8) / a)   /* room for bytes and rounding */
        return 0;
    *out = a * b;
    return 1;
}

int nn_add(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX / 8 - a)
        return 0;
    *out = a + b;
    return 1;
}

int nn_tensor_add(nn_layer *l, const char *name, size_t d0, size_t d1)
{
    nn_tensor *t = &l->tensor[l->n_tensors++];
    t->name = name;
    t->off = l->n_params;
    t->ndim = d1 == 0 ? 1 : 2;
    t->shape[0] = d0;
    t->shape[1] = d1;
    if (!nn_mul(d0, d1 == 0 ? 1 : d1, &t->count))
        return 0;
    return nn_add(l->n_params, t->count, &l->n_params);
}

size_t nn_round64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

ls_status nn_describe(nn_layer *l, ls_err *err)
{
    for (int i = 0; i < 3; i++)
        if (l->in[i] == 0)
            return ls_fail(err, LS_EINVAL, "layer: input axis %d is 0; every axis is at least 1", i);
    memset(l->out, 0, sizeof l->out);
    l->n_params = l->n_tensors = l->act_floats = 0;
    l->scratch_fixed = l->scratch_per_sample = 0;
    memset(l->tensor, 0, sizeof l->tensor);
    if (!nn_mul(l->in[0], l->in[1], &l->in_size) || !nn_mul(l->in_size, l->in[2], &l->in_size))
        return ls_fail(err, LS_EINVAL, "layer: input %zu x %zu x %zu is too large", l->in[0], l->in[1], l->in[2]);
    ls_status st;
    switch (l->kind) {
    case NN_DENSE: st = nn_dense_describe(l, err); break;
    case NN_CONV2D:
    case NN_MAXPOOL:
    case NN_AVGPOOL: st = nn_conv_describe(l, err); break;
    case NN_LAYERNORM: st = nn_norm_describe(l, err); break;
    case NN_EMBED:
    case NN_POSEMBED: st = nn_embed_describe(l, err); break;
    case NN_ATTN: st = nn_attn_describe(l, err); break;
    case NN_GELU:
    case NN_RELU:
    case NN_ADD:
    case NN_DROPOUT: st = nn_act_describe(l, err); break;
    case NN_XENT: st = nn_loss_describe(l, err); break;
    default: return ls_fail(err, LS_EINVAL, "layer: kind %d is not a layer", (int)l->kind);
    }
    if (st != LS_OK)
        return st;
    if (!nn_mul(l->out[0], l->out[1], &l->out_size) || !nn_mul(l->out_size, l->out[2], &l->out_size))
        return ls_fail(err, LS_EINVAL, "layer: output %zu x %zu x %zu is too large", l->out[0], l->out[1], l->out[2]);
    return LS_OK;
}

size_t nn_scratch_bytes(const nn_layer *l, size_t n)
{
    return l->scratch_fixed + n * l->scratch_per_sample;
}
