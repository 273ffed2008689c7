/* train.h — the training loop of one run: data order, leaves, the tree,
 * finish and the optimiser.
 *
 * trainer_step(t) takes the B samples of step t from the epoch stream
 * (slot j takes stream position q = (t-1)·B + j, epoch e = q div N, sample
 * perm_e[q mod N]) and runs the one computation every model declares:
 * prepare on one thread and its parts on the pool, the model's phases (work
 * units in parallel, a barrier after each, or as waves when the model
 * declares phase_group), its leaves summed by the canonical tree (reduce/),
 * the finish step mapping the sum to the gradient, and the optimiser. How
 * (which reduction, waves or barriers, the finish folded or not, the
 * scratch) is the plan chosen once when the trainer is created
 * (engine/core/plan.h); a step only executes it. The parameters after every
 * step are a function of the config alone.
 */
#ifndef LS_TRAIN_H
#define LS_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/config.h"
#include "engine/data/dataset.h"
#include "engine/core/model.h"
#include "engine/core/plan.h"
#include "include/lockstep.h"
#include "record/hash.h"
#include "reduce/tree.h"

typedef struct trainer trainer;

/* Load (or generate) the data set of cfg's task into *data (caller
 * destroys; NULL for a task whose model generates its samples). */
ls_status trainer_load_data(const ls_config *cfg, ls_dataset **data, ls_err *err);

/* Validates cfg, checks the floating-point environment, builds the pool,
 * model, reducer and optimiser, and initialises θ_0. data may be NULL (the
 * trainer loads and owns it) or a data set for cfg->task that the caller keeps
 * alive. Sets cfg->data_hash when it is 0; a nonzero one that differs from the
 * data is LS_EMISMATCH. threads: 1..POOL_MAX_THREADS. */
ls_status trainer_create(trainer **out, ls_config *cfg, int threads, const ls_dataset *data, ls_err *err);
void trainer_destroy(trainer *t);   /* accepts NULL */
/* Forgets the data set t was created with (trainer_data is NULL from now
 * on), for a trainer whose model was made from a data set's shape alone
 * (no samples): it must not be stepped or evaluated (the caller makes a
 * trainer with the data for that). The caller keeps that data set. */
void trainer_drop_data(trainer *t);

const ls_config *trainer_config(const trainer *t);
const ls_model *trainer_model(const trainer *t);
/* How its steps run (plan.h): chosen at create, again by trainer_set_ranks. */
const plan *trainer_plan(const trainer *t);
const ls_dataset *trainer_data(const trainer *t);   /* NULL for generated samples */
/* θ now. The pointer is valid until the next step: with more than one
 * active thread a step writes θ into another of the trainer's buffers. */
const float *trainer_params(const trainer *t);
size_t trainer_n_params(const trainer *t);
int64_t trainer_steps_done(const trainer *t);
int trainer_threads(const trainer *t);

/* One step. *loss is the batch loss computed with θ_{t-1} (the mean for mean
 * tasks). A NaN or infinite loss is LS_EDIVERGED and leaves θ unchanged. So
 * is a θ that the update made non-finite while the loss was finite (the
 * message names the step and the first such parameter); the step is not
 * counted, but θ may hold its update (one thread updates in place). */
ls_status trainer_step(trainer *t, double *loss, ls_err *err);

/* The model's evaluation figures with the current parameters (test_acc for
 * models with a test split; hard_acc, ... for the CA). *n_out <= LS_MAX_METRICS. */
ls_status trainer_metrics(trainer *t, ls_metric *out, size_t *n_out, ls_err *err);

/* Test accuracy (correct / test samples) with the current parameters. */
ls_status trainer_evaluate(trainer *t, double *accuracy, ls_err *err);

/* Work units, leaves and update pieces each worker computed in the last
 * step ([trainer_threads]). */
const size_t *trainer_worker_leaves(const trainer *t);

/* The resumable state: parameters and optimiser state as two blocks. To
 * resume at step t, overwrite both with the state saved after step t and call
 * trainer_set_steps_done(t): the data order is recomputed from the step
 * (permutations are addressed by epoch), nothing else carries across steps. */
float *trainer_params_mut(trainer *t);   /* valid until the next step, as trainer_params */
/* hash_params(trainer_params(t), trainer_n_params(t)), from the parts the
 * last step's update hashed where each thread wrote them when it can (no
 * NaN, no trainer_params_mut since), else by hashing θ. */
uint64_t trainer_param_hash(const trainer *t);
/* The per-tensor hashes in parts (record/hash.h): with ht set (the
 * caller's, or NULL), each update piece also sums ht's blocks, and
 * trainer_tensor_parts_fresh(t, ht) says whether ht's sums are θ's now
 * (ht is set, an update ran since it was, and nothing wrote θ after it). */
void trainer_set_tensor_hashes(trainer *t, hash_tensors *ht);
int trainer_tensor_parts_fresh(const trainer *t, const hash_tensors *ht);

/* Where the steps' time went, in seconds, summed since trainer_create:
 * prepare (with its parts), the phases, the leaves (with the tree's blocks,
 * or the ranks' exchange), the finish and the update (each with its share
 * of the tree's last pass; the update with the hash's parts). A staged
 * step (sweep) counts only its finish and update. */
typedef struct {
    double prepare, phases, leaves, finish, update;
} trainer_times;
const trainer_times *trainer_step_times(const trainer *t);
double trainer_clock(void);   /* a monotonic clock, in seconds */
void *trainer_optim_state(trainer *t, size_t *bytes);
void trainer_set_steps_done(trainer *t, int64_t steps);

/* Test-only hook for crash tests: when set, every trainer_step calls
 * hook(ctx) after the leaf reduction and the finish step, before the
 * optimiser update (so a hook that kills the process dies mid-step). It
 * cannot change any bits. NULL unsets it. */
void trainer_set_test_hook(trainer *t, void (*hook)(void *ctx), void *ctx);

/* --- one run over several processes (tools/mpi_main.c) ------------------ */
/* With ranks set, this trainer is rank `rank` of `ranks` processes that
 * train one run together, each with the same config and θ: it computes only
 * its pieces of every step's leaves (tree_rank_pieces: aligned blocks, each
 * a subtree of the canonical tree) — and, for a model whose phase units
 * are its (sample, part) leaves, only the units of the samples those pieces
 * touch — and hands the pieces' sums to combine. combine must return in
 * sum (len floats) and *loss the canonical tree's sum over every rank's
 * pieces (tree_combine_blocks does the arithmetic; moving the bytes is the
 * caller's: the library does no communication). Every rank then finishes
 * and updates alike, so θ stays the same on all, and equal to one
 * process's. combine's status ends the step (its message in err). */
typedef struct {
    int rank, ranks;
    size_t n_leaves, len;            /* leaves of one step; floats in one leaf buffer */
    const tree_block *pieces;        /* [n_pieces] every rank's pieces, in leaf order */
    size_t n_pieces;
    const size_t *rank_first;        /* [ranks + 1]: rank r has pieces [rank_first[r], rank_first[r + 1]) */
    float *const *mine;              /* this rank's pieces' sums, len floats each (set each step) */
    const double *mine_loss;         /* and their losses */
} trainer_rank_sums;
typedef ls_status (*trainer_combine_fn)(void *ctx, const trainer_rank_sums *in, float *sum, double *loss,
                                        ls_err *err);
/* Before the first step; ranks 1 (or fn NULL) is a single process again. */
ls_status trainer_set_ranks(trainer *t, int rank, int ranks, trainer_combine_fn fn, void *ctx, ls_err *err);
/* A step in stages, for a caller that runs the phases and leaves of many
 * trainers as work units of its own pool (engine/core/sweep.c) and sums each
 * trainer's leaves with the canonical tree itself:
 *   trainer_stage_begin     the batch of step trainer_steps_done + 1 and the
 *                           model's prepare and its parts (on the calling
 *                           thread: it runs inside the caller's unit);
 *   trainer_stage_unit      unit `unit` of phase `phase` (model info: phases,
 *                           units; a barrier between phases);
 *   trainer_stage_leaf      leaf `leaf` into buf as mode says (TREE_WRITE or
 *                           TREE_ADD), returns its loss;
 *   trainer_stage_apply     the tree sum of every leaf and its loss: the rest
 *                           of trainer_step (the loss check, finish,
 *                           optimiser) on the calling thread and this
 *                           trainer's own pool; the next trainer_step does
 *                           nothing but return what it returned (so a
 *                           session's step records it as usual).
 * scratch: model info scratch_bytes, 64-byte aligned, one per concurrent
 * caller. The bits are trainer_step's: the same model calls on the same
 * batch, and the caller's tree is the canonical one. Different trainers'
 * stages may run on different threads at once. */
ls_status trainer_stage_begin(trainer *t, ls_err *err);
void trainer_stage_unit(trainer *t, size_t phase, size_t unit, void *scratch);
double trainer_stage_leaf(trainer *t, size_t leaf, float *buf, int mode, void *scratch);
void trainer_stage_apply(trainer *t, const float *sum, double loss);

#endif
