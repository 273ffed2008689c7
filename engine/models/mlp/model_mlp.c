/* model_mlp.c — the `mlp` model: the dense network of mlp.h behind a
 * descriptor. Keys: hidden (widths), leaf (samples per leaf).
 *
 * A leaf gathers its samples from the data set into the front of the
 * worker's scratch (floats in [0,1] and labels) and hands the rest of the
 * scratch to mlp_leaf. The task trains on the batch mean: finish divides the
 * tree sum by B, once (one float division per element). W
 * transposed for the input gradients is prepared in parts on the engine's
 * threads (mlp_prepare_part).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/simd.h"
#include "engine/data/dataset.h"
#include "engine/models/mlp/mlp.h"
#include "engine/core/model.h"

#define SCRATCH_ALIGN 64
#define MLP_MAX_HIDDEN 8

static size_t round_up(size_t n)
{
    return (n + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
}

typedef struct {
    mlp *net;
    size_t dim, classes;
    size_t max_leaf;
    size_t x_bytes, y_bytes;  /* gather area at the front of the scratch */
    ls_tensor tensors[2 * MLP_MAX_LAYERS];
    char names[2 * MLP_MAX_LAYERS][24];  /* "W1", "b1", ... (room for any size_t) */
    unsigned char no_decay[2 * MLP_MAX_LAYERS];   /* the biases (decay_groups=weights) */
} mlp_model_t;

static void mm_init(const void *self, float *params, uint64_t seed)
{
    const mlp_model_t *a = self;
    mlp_init(a->net, params, seed);
}

/* W transposed for the input gradients, in parts on the engine's threads
 * (it was a serial 2% of a step at 2 threads). */
static void mm_prepare_part(void *self, const float *params, size_t part)
{
    mlp_model_t *a = self;
    mlp_prepare_part(a->net, params, part);
}

static double mm_leaf(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
                      void *scratch)
{
    const mlp_model_t *a = self;
    const size_t first = leaf * a->max_leaf;
    const size_t count = b->batch - first < a->max_leaf ? b->batch - first : a->max_leaf;
    float *x = scratch;
    int32_t *y = (int32_t *)(void *)((char *)scratch + a->x_bytes);
    dataset_gather(b->data, &b->data->train, b->ids + first, count, x, y);
    return mlp_leaf(a->net, params, x, y, count, buf, mode, (char *)scratch + a->x_bytes + a->y_bytes);
}

static size_t mm_eval(const void *self, const float *params, const ls_dataset *data, size_t first, size_t count,
                      void *scratch)
{
    const mlp_model_t *a = self;
    float *x = scratch;
    int32_t *pred = (int32_t *)(void *)((char *)scratch + a->x_bytes);
    const ls_split *s = &data->test;
    uint32_t ids[256];
    size_t correct = 0;
    for (size_t done = 0; done < count;) {
        size_t n = count - done;
        if (n > a->max_leaf)
            n = a->max_leaf;
        if (n > 256)
            n = 256;
        for (size_t i = 0; i < n; i++)
            ids[i] = (uint32_t)(first + done + i);
        dataset_gather(data, s, ids, n, x, NULL);
        mlp_predict(a->net, params, x, n, pred, (char *)scratch + a->x_bytes + a->y_bytes);
        for (size_t i = 0; i < n; i++)
            correct += pred[i] == dataset_label(data, s, first + done + i);
        done += n;
    }
    return correct;
}

static void mm_scores(const void *self, const float *params, const float *x, size_t count, float *out,
                      void *scratch)
{
    const mlp_model_t *a = self;
    const size_t classes = a->classes;
    for (size_t done = 0; done < count;) {
        const size_t n = count - done < a->max_leaf ? count - done : a->max_leaf;
        mlp_logits(a->net, params, x + done * a->dim, n, out + done * classes,
                   (char *)scratch + a->x_bytes + a->y_bytes);
        done += n;
    }
}

static void mm_destroy(void *self)
{
    mlp_model_t *a = self;
    if (a == NULL)
        return;
    mlp_destroy(a->net);
    free(a);
}

static ls_status mm_check(const ls_config *cfg, ls_err *err)
{
    const size_t *hidden;
    if (ls_config_list(cfg, "hidden", &hidden) > MLP_MAX_HIDDEN)
        return ls_fail(err, LS_EINVAL, "hidden: at most %d hidden layers", MLP_MAX_HIDDEN);
    return LS_OK;
}

static ls_status mm_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                           ls_err *err)
{
    *self = NULL;
    if (data == NULL)
        return ls_fail(err, LS_EINVAL, "model mlp needs a data set (task %s has none)", cfg->task);
    ls_status st = mm_check(cfg, err);
    if (st != LS_OK)
        return st;
    const size_t *hidden;
    const size_t n_hidden = ls_config_list(cfg, "hidden", &hidden);
    size_t sizes[MLP_MAX_HIDDEN + 2];
    size_t n = 0;
    sizes[n++] = data->train.dim;
    for (size_t i = 0; i < n_hidden; i++)
        sizes[n++] = hidden[i];
    sizes[n++] = data->n_classes;
    const size_t max_leaf = model_leaf_size((size_t)ls_config_int(cfg, "leaf"), cfg->batch);
    mlp_model_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return ls_fail(err, LS_ENOMEM, "model: out of memory");
    if ((st = mlp_create(&a->net, sizes, n, max_leaf, err)) != LS_OK) {
        free(a);
        return st;
    }
    a->dim = data->train.dim;
    a->classes = data->n_classes;
    a->max_leaf = max_leaf;
    a->x_bytes = round_up(max_leaf * a->dim * sizeof(float));
    a->y_bytes = round_up(max_leaf * sizeof(int32_t));
    const size_t np = mlp_n_params(a->net);
    for (size_t l = 0; l < n - 1; l++)
        for (int bias = 0; bias < 2; bias++) {
            ls_tensor *t = &a->tensors[2 * l + (size_t)bias];
            snprintf(a->names[2 * l + (size_t)bias], sizeof a->names[0], "%c%zu", bias ? 'b' : 'W', l + 1);
            t->name = a->names[2 * l + (size_t)bias];
            t->offset = mlp_tensor(a->net, l, bias, t->shape);
            t->ndim = bias ? 1 : 2;
            a->no_decay[2 * l + (size_t)bias] = (unsigned char)bias;
        }
    /* Multiply-adds of the forward pass, the weight gradient and the input
     * gradient (none into the first layer's input), two operations each. */
    double flops = 0;
    for (size_t l = 0; l + 1 < n; l++) {
        const double mm = (double)sizes[l] * (double)sizes[l + 1];
        flops += 2 * mm + 2 * mm + (l > 0 ? 2 * mm : 0);
    }
    *info = (ls_model_info){
        .n_params = np,
        .leaf_len = np,
        .leaves = (cfg->batch + max_leaf - 1) / max_leaf,
        .finish_units = np,
        .hints.finish_mean = 1,
        .scratch_bytes = a->x_bytes + a->y_bytes + round_up(mlp_scratch_bytes(a->net)),
        .eval_chunk = 1024,
        .mean_loss = 1,
        .flops_per_sample = flops,
        .prepare_parts = mlp_prepare_parts(a->net),
        .tensors = a->tensors,
        .n_tensors = 2 * (n - 1),
        .no_decay = a->no_decay,
        .inputs = a->dim,
        .outputs = data->n_classes,
    };
    *self = a;
    return LS_OK;
}

static const ls_key mm_keys[] = {
    { "hidden", LS_KEY_LIST, "256,256", 1, 65536, NULL, NULL, "hidden widths, e.g. 256,256", 0 },
    { "leaf", LS_KEY_INT, "64", 1, 1 << 20, NULL, NULL, "samples per leaf, 16 times a power of two (speed only)", 0 },
};

const ls_model_desc mlp_model = {
    .size = sizeof(ls_model_desc),
    .name = "mlp",
    .summary = "a dense network: linear layers, ReLU between them, softmax cross-entropy",
    .keys = mm_keys,
    .n_keys = sizeof mm_keys / sizeof mm_keys[0],
    .create = mm_create,
    .destroy = mm_destroy,
    .check = mm_check,
    .init = mm_init,
    .prepare_part = mm_prepare_part,
    .leaf = mm_leaf,
    .leaf_adds = 1,   /* its kernels add a leaf's statistics into buf as they go */
    .leaf_atoms = 1,  /* its kernels sum a leaf over atoms (engine/num/dense.h) */
    .finish = model_finish_mean,
    .eval = mm_eval,
    .scores = mm_scores,
};
