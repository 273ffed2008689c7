/* model.c — model_create and the adapter that puts the MLP behind ls_model.
 *
 * The adapter gathers a leaf's samples from the data set into the front of
 * the worker's scratch (floats in [0,1] and labels), then hands the rest of
 * the scratch to mlp_leaf. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "logic_ca.h"
#include "logic_net.h"
#include "mlp.h"
#include "simd.h"

#define SCRATCH_ALIGN 64

static size_t round_up(size_t n)
{
    return (n + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
}

typedef struct {
    mlp *net;
    size_t dim;
    size_t max_leaf;
    size_t x_bytes, y_bytes;  /* gather area at the front of the scratch */
} mlp_adapter;

static void mlp_a_init(const ls_model *m, float *params, uint64_t seed)
{
    const mlp_adapter *a = m->impl;
    mlp_init(a->net, params, seed);
}

static void mlp_a_prepare(ls_model *m, const float *params)
{
    mlp_adapter *a = m->impl;
    mlp_prepare(a->net, params);
}

static double mlp_a_leaf(const ls_model *m, const float *params, const ls_leaf *leaf, float *buf,
                         int mode, void *scratch)
{
    const mlp_adapter *a = m->impl;
    float *x = scratch;
    uint8_t *y = (uint8_t *)scratch + a->x_bytes;
    dataset_gather(&leaf->data->train, leaf->ids, leaf->count, x, y);
    return mlp_leaf(a->net, params, x, y, leaf->count, buf, mode,
                    (char *)scratch + a->x_bytes + a->y_bytes);
}

/* The task trains on the batch mean: divide the tree sum by B, once. */
LS_SIMD_CLONES
static void divide_range(float *restrict out, const float *restrict in, size_t n, float d)
{
    #pragma omp simd
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] / d;
}

static void mlp_a_finish(const ls_model *m, const float *sum, size_t batch, float *grad, size_t lo, size_t hi)
{
    (void)m;
    if (hi > lo)
        divide_range(grad + lo, sum + lo, hi - lo, (float)batch);
}

static size_t mlp_a_eval(const ls_model *m, const float *params, const ls_dataset *data, size_t first,
                         size_t count, void *scratch)
{
    const mlp_adapter *a = m->impl;
    float *x = scratch;
    uint8_t *pred = (uint8_t *)scratch + a->x_bytes;
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
        dataset_gather(s, ids, n, x, NULL);
        mlp_predict(a->net, params, x, n, pred, (char *)scratch + a->x_bytes + a->y_bytes);
        for (size_t i = 0; i < n; i++)
            correct += pred[i] == s->y[first + done + i];
        done += n;
    }
    return correct;
}

static void mlp_a_destroy(ls_model *m)
{
    mlp_adapter *a = m->impl;
    mlp_destroy(a->net);
    free(m);
}

static ls_status mlp_adapter_create(ls_model **out, const ls_config *cfg, const ls_dataset *data,
                                    size_t max_leaf, ls_err *err)
{
    size_t sizes[CONFIG_MAX_HIDDEN + 2];
    size_t n = 0;
    sizes[n++] = data->train.dim;
    for (size_t i = 0; i < cfg->n_hidden; i++)
        sizes[n++] = cfg->hidden[i];
    sizes[n++] = data->n_classes;
    ls_model *m = calloc(1, sizeof *m + sizeof(mlp_adapter));
    if (m == NULL)
        return ls_fail(err, LS_ENOMEM, "model: out of memory");
    mlp_adapter *a = (mlp_adapter *)(m + 1);
    ls_status st = mlp_create(&a->net, sizes, n, max_leaf, err);
    if (st != LS_OK) {
        free(m);
        return st;
    }
    a->dim = data->train.dim;
    a->max_leaf = max_leaf;
    a->x_bytes = round_up(max_leaf * a->dim * sizeof(float));
    a->y_bytes = round_up(max_leaf);
    m->name = "mlp";
    m->impl = a;
    m->n_params = mlp_n_params(a->net);
    m->leaf_len = m->n_params;
    m->finish_units = m->n_params;
    m->scratch_bytes = a->x_bytes + a->y_bytes + round_up(mlp_scratch_bytes(a->net));
    m->eval_chunk = 1024;
    m->mean_loss = 1;
    m->init = mlp_a_init;
    m->prepare = mlp_a_prepare;
    m->leaf = mlp_a_leaf;
    m->finish = mlp_a_finish;
    m->eval = mlp_a_eval;
    m->destroy = mlp_a_destroy;
    *out = m;
    return LS_OK;
}

ls_status model_create(ls_model **out, const ls_config *cfg, const ls_dataset *data, size_t max_leaf,
                       ls_err *err)
{
    *out = NULL;
    if (strcmp(cfg->model, "mlp") == 0) {
        if (data == NULL)
            return ls_fail(err, LS_EINVAL, "model mlp needs a data set (task %s has none)", cfg->task);
        return mlp_adapter_create(out, cfg, data, max_leaf, err);
    }
    if (strcmp(cfg->model, "logic-ca") == 0)
        return logic_ca_create(out, cfg, err);
    if (strcmp(cfg->model, "logic") == 0) {
        if (data == NULL)
            return ls_fail(err, LS_EINVAL, "model logic needs a data set (task %s has none)", cfg->task);
        return logic_net_create(out, cfg, data, max_leaf, err);
    }
    return ls_fail(err, LS_EINVAL, "--model: unknown model '%s'", cfg->model);
}

void model_destroy(ls_model *m)
{
    if (m != NULL)
        m->destroy(m);
}
