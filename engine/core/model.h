/* model.h — a model instance: a registered descriptor (include/lockstep.h,
 * ls_model_desc), the instance its create made, and what it told the engine
 * (ls_model_info). The engine calls the descriptor's functions with `self`;
 * model_create finds the descriptor by the config's model name.
 *
 * A model computes, for one leaf, the summed loss and the summed gradient
 * statistics of the leaf into a caller-owned buffer, as a pure function of
 * (parameters, the batch, addressed random numbers); phases before the
 * leaves (the logic CA's rollout) run as work units the engine schedules;
 * once per step finish maps the tree-summed buffer to the parameter gradient.
 * Models know nothing of threads (only of per-worker scratch they are
 * handed) or of SQLite.
 */
#ifndef LS_MODEL_H
#define LS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"
#include "reduce/pool.h"
#include "engine/core/config.h"

typedef struct ls_model {
    const ls_model_desc *desc;
    void *self;
    ls_model_info info;
    const char *name;          /* desc->name */
    /* The hints the engine follows (include/lockstep.h, ls_model_hints):
     * the descriptor's, or none under LOCKSTEP_HINTS=off (info.hints then
     * all zero too). */
    const float *(*leaf_held)(const void *self, size_t leaf, double *loss);   /* desc->leaf_held, or NULL */
    int leaf_adds;             /* the model's leaf computes LS_LEAF_ADD itself */
    size_t add_at;             /* !leaf_adds: offset in a worker's scratch of the leaf model_leaf adds */
} ls_model;

/* 1 when the environment says LOCKSTEP_HINTS=off: models are created
 * without their hints (the check mode of include/lockstep.h). */
int model_hints_off(void);

/* Creates cfg's model (data may be NULL for tasks that generate samples) and
 * checks what it declared (a leaf model needs leaves; phases need units). */
ls_status model_create(ls_model **out, const ls_config *cfg, const ls_dataset *data, ls_err *err);
/* The same with the hints on or off whatever the environment says. */
ls_status model_create_hinted(ls_model **out, const ls_config *cfg, const ls_dataset *data, int hints, ls_err *err);
void model_destroy(ls_model *m);   /* accepts NULL */

/* The model's prepare, then its prepare_part for every part: over p's
 * threads, or in order on this thread when p is NULL (inside a pool job,
 * a sweep's unit, a tool). */
ls_status model_prepare(const ls_model *m, const float *params, const ls_batch *b, pool *p, ls_err *err);

/* Leaf `leaf` into buf as mode says (LS_LEAF_WRITE or LS_LEAF_ADD), for
 * every model: one that does not add itself (leaf_adds 0) writes the leaf
 * into its worker's scratch at add_at and it is added to buf here, element
 * by element (tree_add), the sum LS_LEAF_ADD promises. scratch:
 * info.scratch_bytes, which model_create enlarged by that buffer. Returns
 * the leaf's loss. */
double model_leaf(const ls_model *m, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
                  void *scratch);

/* The finish of a model that trains on the batch mean (finish_mean):
 * grad[i] = sum[i] / (float)batch for i in [lo, hi). One correctly rounded
 * division per element, so its SIMD clones give the bits of the plain loop.
 * Shared so that one function carries the clones: clang gives a static
 * function's clone resolver a global name, two equal names clash. */
void model_finish_mean(const void *self, const float *sum, size_t batch, float *grad, size_t lo, size_t hi);

/* Models that group a batch's samples into leaves of L samples (L = the
 * config's leaf, capped by the batch): leaf i holds slots [i·L, min((i+1)·L, B)). */
static inline size_t model_leaf_size(size_t leaf, size_t batch)
{
    return leaf < batch ? leaf : batch;
}

#endif
