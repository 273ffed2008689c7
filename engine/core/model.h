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
} ls_model;

/* Creates cfg's model (data may be NULL for tasks that generate samples) and
 * checks what it declared (a leaf model needs leaves; phases need units). */
ls_status model_create(ls_model **out, const ls_config *cfg, const ls_dataset *data, ls_err *err);
void model_destroy(ls_model *m);   /* accepts NULL */

/* The model's prepare, then its prepare_part for every part: over p's
 * threads, or in order on this thread when p is NULL (inside a pool job,
 * a sweep's unit, a tool). */
ls_status model_prepare(const ls_model *m, const float *params, const ls_batch *b, pool *p, ls_err *err);

/* Models that group a batch's samples into leaves of L samples (L = the
 * config's leaf, capped by the batch): leaf i holds slots [i·L, min((i+1)·L, B)). */
static inline size_t model_leaf_size(size_t leaf, size_t batch)
{
    return leaf < batch ? leaf : batch;
}

#endif
