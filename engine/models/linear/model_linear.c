/* model_linear.c — the `linear` model: softmax regression, logits = x·W + b,
 * softmax cross-entropy. Trains fashion-mnist and teacher; the baseline a
 * network has to beat. Keys: leaf (samples per leaf).
 *
 * Parameters, in hash order: W [dim][classes], b [classes]. θ_0:
 * W[i][k] = (u − 0.5) / 16 with u = rng_uniformf(seed, RNG_INIT, 0, i·classes
 * + k, 0); b = 0. The leaf buffer is the summed gradient, same layout.
 *
 * The arithmetic, per sample, fixed here:
 *   z_k     = b_k + x_0·W[0][k] + x_1·W[1][k] + ...     (float, i ascending)
 *   m       = (double) max_k z_k
 *   S       = 0.0 + e_0 + ... + e_{K−1},  e_k = dmath_exp((double)z_k − m)
 *   loss    = dmath_log(S) − ((double)z_y − m)
 *   dz_k    = (float)(e_k / S) − (k == y ? 1.0f : 0.0f)
 *   dW[i][k] += x_i·dz_k,  db[k] += dz_k                 (float, samples in order)
 * and the leaf loss = 0.0 + loss_0 + loss_1 + ... in sample order. A leaf
 * is only ever written: the engine sums it on its own and adds it for
 * LS_LEAF_ADD (leaf_adds 0). The task trains on the mean: finish
 * divides the tree sum by (float)B.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/data/dataset.h"
#include "engine/num/dmath.h"
#include "engine/core/model.h"
#include "engine/num/rng.h"

#define LINEAR_MAX_CLASSES 256

typedef struct {
    size_t dim, classes, max_leaf, n_params;
    ls_tensor tensors[2];     /* W [dim][classes], b [classes] */
} linear;

static const unsigned char LIN_NO_DECAY[2] = { 0, 1 };   /* the bias (decay_groups=weights) */

static void lin_init(const void *self, float *params, uint64_t seed)
{
    const linear *l = self;
    const size_t nw = l->dim * l->classes;
    for (size_t i = 0; i < nw; i++)
        params[i] = (rng_uniformf(seed, RNG_INIT, 0, i, 0) - 0.5f) / 16.0f;
    memset(params + nw, 0, l->classes * sizeof(float));
}

/* One sample's logits into z, then its loss; dz = d loss / d z. */
static double lin_sample(const linear *l, const float *params, const float *x, unsigned y, float *z, float *dz)
{
    const size_t K = l->classes;
    const float *W = params, *b = params + l->dim * K;
    for (size_t k = 0; k < K; k++)
        z[k] = b[k];
    for (size_t i = 0; i < l->dim; i++)
        for (size_t k = 0; k < K; k++)
            z[k] = z[k] + x[i] * W[i * K + k];
    size_t best = 0;
    for (size_t k = 1; k < K; k++)
        if (z[k] > z[best])
            best = k;
    const double m = (double)z[best];
    double e[LINEAR_MAX_CLASSES], S = 0.0;
    for (size_t k = 0; k < K; k++) {
        e[k] = dmath_exp((double)z[k] - m);
        S = S + e[k];
    }
    for (size_t k = 0; k < K; k++)
        dz[k] = (float)(e[k] / S) - (k == y ? 1.0f : 0.0f);
    return dmath_log(S) - ((double)z[y] - m);
}

/* Scratch: x [dim], z [K], dz [K]. */
static double lin_leaf(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
                       void *scratch)
{
    const linear *l = self;
    const size_t K = l->classes, first = leaf * l->max_leaf;
    const size_t count = b->batch - first < l->max_leaf ? b->batch - first : l->max_leaf;
    (void)mode;   /* always LS_LEAF_WRITE: the engine adds (leaf_adds 0) */
    float *x = scratch, *z = x + l->dim, *dz = z + K;
    float *g = buf;
    memset(g, 0, l->n_params * sizeof(float));
    float *dW = g, *db = g + l->dim * K;
    double loss = 0.0;
    for (size_t s = 0; s < count; s++) {
        int32_t y;
        dataset_gather(b->data, &b->data->train, b->ids + first + s, 1, x, &y);
        loss = loss + lin_sample(l, params, x, (unsigned)y, z, dz);
        for (size_t i = 0; i < l->dim; i++)
            for (size_t k = 0; k < K; k++)
                dW[i * K + k] = dW[i * K + k] + x[i] * dz[k];
        for (size_t k = 0; k < K; k++)
            db[k] = db[k] + dz[k];
    }
    return loss;
}

static size_t lin_eval(const void *self, const float *params, const ls_dataset *data, size_t first, size_t count,
                       void *scratch)
{
    const linear *l = self;
    float *x = scratch, *z = x + l->dim, *dz = z + l->classes;
    size_t correct = 0;
    for (size_t s = first; s < first + count; s++) {
        const uint32_t id = (uint32_t)s;
        int32_t y;
        dataset_gather(data, &data->test, &id, 1, x, &y);
        lin_sample(l, params, x, (unsigned)y, z, dz);
        size_t best = 0;   /* lowest index on ties */
        for (size_t k = 1; k < l->classes; k++)
            if (z[k] > z[best])
                best = k;
        correct += best == (size_t)y;
    }
    return correct;
}

static void lin_scores(const void *self, const float *params, const float *x, size_t count, float *out,
                       void *scratch)
{
    const linear *l = self;
    float *dz = scratch;   /* lin_sample's gradient, not needed here */
    for (size_t s = 0; s < count; s++)
        lin_sample(l, params, x + s * l->dim, 0, out + s * l->classes, dz);
}

static void lin_destroy(void *self)
{
    free(self);
}

static ls_status lin_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                            ls_err *err)
{
    *self = NULL;
    if (data == NULL)
        return ls_fail(err, LS_EINVAL, "model linear needs a data set (task %s has none)", cfg->task);
    if (data->n_classes < 2 || data->n_classes > LINEAR_MAX_CLASSES)
        return ls_fail(err, LS_EINVAL, "model linear: %zu classes, need 2 .. %d", data->n_classes,
                       LINEAR_MAX_CLASSES);
    linear *l = calloc(1, sizeof *l);
    if (l == NULL)
        return ls_fail(err, LS_ENOMEM, "model linear: out of memory");
    l->dim = data->train.dim;
    l->classes = data->n_classes;
    l->max_leaf = model_leaf_size((size_t)ls_config_int(cfg, "leaf"), cfg->batch);
    l->n_params = l->dim * l->classes + l->classes;
    l->tensors[0] = (ls_tensor){ "W", 0, 2, { l->dim, l->classes } };
    l->tensors[1] = (ls_tensor){ "b", l->dim * l->classes, 1, { l->classes } };
    *info = (ls_model_info){
        .n_params = l->n_params,
        .leaf_len = l->n_params,
        .leaves = (cfg->batch + l->max_leaf - 1) / l->max_leaf,
        .finish_units = l->n_params,
        .hints.finish_mean = 1,
        .scratch_bytes = (l->dim + 2 * l->classes) * sizeof(float),
        .eval_chunk = 1024,
        .mean_loss = 1,
        .flops_per_sample = 6.0 * (double)(l->dim * l->classes),
        .tensors = l->tensors,
        .n_tensors = 2,
        .no_decay = LIN_NO_DECAY,
        .inputs = l->dim,
        .outputs = l->classes,
    };
    *self = l;
    return LS_OK;
}

static const ls_key lin_keys[] = {
    { "leaf", LS_KEY_INT, "16", 1, 1 << 20, NULL, NULL, "samples per leaf (its leaves are atoms of 16: no effect)", 0 },
};

const ls_model_desc linear_model = {
    .size = sizeof(ls_model_desc),
    .name = "linear",
    .summary = "softmax regression: logits = x W + b",
    .tasks = "fashion-mnist teacher",
    .keys = lin_keys,
    .n_keys = sizeof lin_keys / sizeof lin_keys[0],
    .create = lin_create,
    .destroy = lin_destroy,
    .init = lin_init,
    .leaf = lin_leaf,
    .finish = model_finish_mean,
    .eval = lin_eval,
    .scores = lin_scores,
};
