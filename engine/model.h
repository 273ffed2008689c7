/* model.h — the interface between the engine and a model (DESIGN.md §2.1).
 *
 * A model computes, for one leaf, the summed loss and the summed gradient
 * statistics of the leaf's samples into a caller-owned buffer, as a pure
 * function of (parameters, the leaf's samples, addressed random numbers); and
 * once per step maps the tree-summed buffer to the parameter gradient
 * (finish). Models know nothing of threads (only of per-worker scratch they
 * are handed) or of SQLite. model_create picks the implementation by name.
 */
#ifndef LS_MODEL_H
#define LS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dataset.h"
#include "status.h"

/* The samples of one leaf. */
typedef struct {
    const ls_dataset *data;   /* the task's data, or NULL for generated tasks */
    const uint32_t *ids;      /* [count] training-sample ids, in slot order */
    size_t count;
    int64_t step;             /* 1-based step this leaf belongs to */
    size_t first_slot;        /* batch slot of ids[0] */
    uint64_t seed;
} ls_leaf;

/* Engine service for models that split samples into parts (DESIGN.md §2.1):
 * run fn for parts 0..n_parts-1, in parallel, and return when all are done
 * (a barrier). A model calls it once per phase; it sees parts and a scratch
 * area (scratch_bytes, 64-byte aligned) per call, never threads. */
typedef void (*ls_part_fn)(void *ctx, size_t part, void *scratch);
typedef struct {
    void (*run)(void *engine, size_t n_parts, ls_part_fn fn, void *ctx);
    void *engine;
} ls_parallel;

/* A whole batch, for batch-mode models. */
typedef struct {
    const ls_dataset *data;   /* the task's data, or NULL for generated tasks */
    const uint32_t *ids;      /* [batch] training-sample ids (NULL without data) */
    size_t batch;
    int64_t step;             /* 1-based */
    uint64_t seed;
} ls_batch;

/* One evaluation figure, recorded under its name. */
typedef struct {
    char name[32];            /* "test_acc", "hard_acc", "hard_acc_64", ... */
    double value;
} ls_metric;
#define LS_MAX_METRICS 8

typedef struct ls_model ls_model;
struct ls_model {
    const char *name;
    size_t n_params;          /* floats in θ */
    size_t leaf_len;          /* floats in one leaf buffer */
    size_t finish_units;      /* finish works on ranges of [0, finish_units) */
    size_t scratch_bytes;     /* per-worker scratch for one leaf or eval chunk */
    size_t eval_chunk;        /* most samples one eval call takes */
    int mean_loss;            /* 1: the task trains on the batch mean (sums / B after the tree) */
    void *impl;

    void (*init)(const ls_model *m, float *params, uint64_t seed);
    /* Once per step, before the leaves: read-only state derived from θ. */
    void (*prepare)(ls_model *m, const float *params);
    /* The leaf's statistics into buf as mode says (reduce/tree.h: TREE_WRITE
     * buf = leaf; TREE_ADD buf = buf + leaf, the leaf summed on its own
     * first); returns the leaf's summed loss. */
    double (*leaf)(const ls_model *m, const float *params, const ls_leaf *leaf, float *buf,
                   int mode, void *scratch);
    /* grad for finish units [lo, hi) from the tree sum over a batch of `batch` samples. */
    void (*finish)(const ls_model *m, const float *sum, size_t batch, float *grad, size_t lo, size_t hi);
    /* Correct predictions on test samples [first, first + count), count <= eval_chunk. */
    size_t (*eval)(const ls_model *m, const float *params, const ls_dataset *data, size_t first,
                   size_t count, void *scratch);
    void (*destroy)(ls_model *m);

    /* Batch-mode models (parts > 0; leaf and eval may then be NULL): the
     * leaves of a batch are the (sample, part) pairs, leaf s·parts + r.
     * batch_grad writes each leaf's statistics into leaves[s·parts + r]
     * (leaf_len floats, overwritten) and its loss into losses[...], running
     * its phases through par. The engine then sums the leaves with the
     * canonical tree. */
    size_t parts;
    ls_status (*batch_grad)(ls_model *m, const float *params, const ls_batch *b, float *const *leaves,
                            double *losses, const ls_parallel *par, ls_err *err);
    /* Optional: evaluation figures of the current parameters (instead of
     * eval's test_acc). *n_out <= LS_MAX_METRICS. */
    ls_status (*metrics)(ls_model *m, const float *params, const ls_dataset *data, const ls_parallel *par,
                         ls_metric *out, size_t *n_out, ls_err *err);
};

/* max_leaf: the most samples one leaf call sees (the config's leaf, capped by batch). */
ls_status model_create(ls_model **out, const ls_config *cfg, const ls_dataset *data, size_t max_leaf,
                       ls_err *err);
void model_destroy(ls_model *m);   /* accepts NULL */

#endif
