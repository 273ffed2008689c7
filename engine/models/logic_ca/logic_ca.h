/* logic_ca.h — the differentiable logic cellular automaton (model "logic-ca")
 * and what a task gives it (docs/models.md).
 *
 * A grid of G×G cells, C channels per cell. One CA step, for every cell:
 *   perception: K kernels, each a small gate network over the cell's 3×3 patch
 *     (row-major positions 0..8, centre 4; periodic borders wrap, otherwise the
 *     outside is 0), applied to every channel separately. Kernel layer 1 has 8
 *     gates: gate g reads (patch position NB[perm[g]], centre), NB = {0,1,2,3,
 *     5,6,7,8}, perm a random permutation of 0..7; later kernel layers use
 *     `unique` wiring. All kernels share the wiring; each has its own logits;
 *     the logits are shared by all channels.
 *   update: a gate network (`unique` wiring in every layer) reads
 *     [own state (C), perception (C·S·K)], the perception flattened in
 *     (c, s, k) order — input C + c·S·K + s·K + k is output s of kernel k on
 *     channel c (S = width of the last kernel layer) — and its C outputs
 *     replace the cell's state (asynchronous mode: only in cells that fire,
 *     probability fire_rate, one draw per cell and CA step shared by the
 *     channels).
 * The loss is the plain sum over cells of (x_0 − target)² on channel 0 after
 * ca_steps steps (mean_loss = 0); backprop runs through the whole rollout.
 *
 * Parameters: the 16 logits of every gate, [gates][16] with the gates in this
 * order (it is hashed): perception layer 0, 1, ... (in layer l, gate (k, g) =
 * kernel k's gate g is gate_off[l] + k·width_l + g), then update layer 0, 1, ...
 *
 * Parts (docs/contract.md, leaves): each sample's grid is cut into R = parts blocks
 * of whole rows, part r = rows [r·G/R, (r+1)·G/R) (integer division); leaf
 * s·R + r holds the gate statistics [gates][4] of part r of sample s summed
 * over its cells and all CA steps, and its loss. A step runs 2·T − 1 phases
 * as the engine schedules them (forward steps 0..T−2; step T−1 forward, loss and
 * backward; backward steps T−2..0, each recomputing that step's activations
 * from the stored state): every result is a pure function of (parameters,
 * seed, step, sample, part), whatever the schedule. A phase has B·R units,
 * unit s·R + r being part r of sample s; or, in lanes mode (R = 1, at most
 * LOGIC_CA_LANES_MAX virtual lanes C·G², taken at create when the groups are
 * full enough to pay, see logic_ca_set_lanes), ceil(B/16) units (at least 2
 * when B >= 2), unit u being the samples [u·B/U, (u+1)·B/U) side by side in
 * SIMD lanes: the same leaves, bit for bit.
 *
 * Random numbers (engine/num/rng.h), seed = the run's seed unless stated:
 *   wiring: kernel layer 1's perm: rng_permutation(perm, 8, seed, RNG_WIRING,
 *     LOGIC_CA_PERM_ADDR); kernel layer l >= 1: logic_wire_unique(..., seed,
 *     addr l); update layer j: logic_wire_unique(..., seed, addr
 *     LOGIC_CA_MAX_PERCEPTION + j).
 *   init: residual != 0: logit 3 = residual, others 0; residual == 0: logit i
 *     (flat index) = rng_normalf(seed, RNG_INIT, 0, i, 0).
 *   async fire mask: cell n fires at CA step u of slot s, training step t when
 *     rng_uniformf(seed, RNG_CA_MASK, t, s, u·G² + n) < fire_rate.
 *   evaluation (seed LOGIC_CA_EVAL_SEED, purpose RNG_EVAL): grid i's start
 *     state, when a task draws one: (i, 0, n·C + c) < 0.5; its mask at CA
 *     step u: (i, 1 + u, n) < fire_rate (logic_ca_hard_eval). A task's
 *     figures number their grids from 0; `lockstep render` draws the same.
 *
 * Tasks. The model knows no task by name: what differs between its tasks
 * (where a sample starts, what it must become, which settings fit, how a
 * circuit is scored) comes from the task's ls_task_desc.model_hooks as a
 * logic_ca_task (below). Hooks, not settings: a setting would be part of
 * the canonical config, and the runs of the built-in tasks (and their
 * golden files) must keep theirs. Nor the data set alone: a task whose
 * samples are generated has none (a data set would give it a data_hash and
 * a data order), and a task's figures need code, not rows. The built-in CA
 * tasks and their data are in engine/tasks/ (engine/tasks/ca_data.h).
 */
#ifndef LS_LOGIC_CA_H
#define LS_LOGIC_CA_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/config.h"
#include "engine/data/dataset.h"
#include "engine/models/logic/logic.h"
#include "engine/core/model.h"
#include "include/lockstep.h"

#define LOGIC_CA_MAX_PERCEPTION 8                  /* frozen: update layer j is wired at address 8 + j */
#define LOGIC_CA_MAX_LAYERS (LOGIC_CA_MAX_PERCEPTION + LOGIC_MAX_LAYERS)
#define LOGIC_CA_PERM_ADDR (UINT64_C(1) << 40)   /* RNG_WIRING address of kernel layer 1's perm */
/* The evaluation protocol the tasks' figures and `lockstep render` share:
 * the seed of evaluation grids, how many grids of the run's side a task
 * scores, and the larger grid (its side and CA steps) it scores after them
 * when it checks that a pattern grows beyond the trained size. */
#define LOGIC_CA_EVAL_SEED 0u
#define LOGIC_CA_EVAL_GRIDS 16
#define LOGIC_CA_BIG_GRID 64
#define LOGIC_CA_BIG_STEPS 80

/* The model's settings, read once from the config's keys. */
typedef struct {
    uint64_t seed;
    size_t batch;
    size_t channels, kernels, ca_steps, grid, parts;
    size_t perception[LOGIC_CA_MAX_PERCEPTION], n_perception;
    size_t layers[LOGIC_MAX_LAYERS], n_layers;
    int periodic, async;
    float fire_rate, residual;
} logic_ca_settings;

/* s from cfg (a logic-ca config); lists longer than the model's arrays are
 * cut to size (the model's check refuses them first). */
void logic_ca_settings_read(logic_ca_settings *s, const ls_config *cfg);

/* The model's descriptor; its check validates the CA keys (kernel layer 1
 * of width 8, last update layer = channels, 1 <= parts <= grid), that the
 * task gives hooks, then the task's own check. Per-batch state is allocated for
 * the config's batch; a larger batch is refused. A step is 2·ca_steps − 1
 * phases of batch·parts units (fewer in lanes mode, see Parts above), then
 * batch·parts leaves. */
extern const ls_model_desc logic_ca_model;

/* Lanes mode (see Parts above): LOGIC_CA_LANES_AUTO (the default) takes it
 * when it pays, ALWAYS whenever parts = 1 and C·G² <= LOGIC_CA_LANES_MAX,
 * NEVER keeps one unit per (sample, part). Every mode gives the same bits;
 * the setting is read when a model is created. Returns the previous one.
 * For tests and benchmarks. */
enum { LOGIC_CA_LANES_NEVER = 0, LOGIC_CA_LANES_AUTO = 1, LOGIC_CA_LANES_ALWAYS = 2 };
#define LOGIC_CA_LANES_MAX 64
int logic_ca_set_lanes(int mode);

/* Silent units. In a backward phase, a unit whose gradient dY of the
 * update network's outputs (d_state_{t+1} of its fired cells, 0 for the
 * others) is below LOGIC_GRAD_FLOOR in magnitude on every lane — so that
 * the gate backward reads all of it as +0 — is defined to contribute
 * nothing: its gradients w.r.t. the step's input states (down, dpatch) are
 * +0 and its statistics keep their bits. That is exactly what the gate
 * backward computes when the unit's activations and gate coefficients are
 * finite and at most 2^60 in magnitude (every product of a +0 then is ±0),
 * which they are in training (the coefficients come from a softmax of
 * finite logits, and gate outputs of inputs in [0, 1] stay near [0, 1]);
 * the rule only fixes the result without them, so the unit's forward
 * recomputation and its backward are skipped. Early in training most of a
 * rollout's first CA steps see no gradient yet (README, "The logic CA:
 * where the time goes"). logic_ca_set_silent(0) makes models created
 * afterwards compute silent units in full (the same bits, tests compare
 * them); returns the previous setting (1, the default). For tests and
 * benchmarks, as is logic_ca_silent_units: the silent units every model
 * met since the program started (skipped or not). */
int logic_ca_set_silent(int on);
size_t logic_ca_silent_units(void);
/* For tests: the gradients w.r.t. the CA states that the backward phases
 * pass on (dpatch [2][B][9][C][G²], down [B][C][G²], then dstate
 * [B][C][G²]: logic_ca.c's header comment) of the model `self` (an
 * ls_model's self), which a test may read and change between phases;
 * returns their length in floats. */
size_t logic_ca_state_grads(void *self, float **grads);

/* ---- The hard circuit: argmax ops, for metrics, export and rendering. ----
 *
 * Layers 0 .. n_perception−1 are the kernel layers, run on one channel at a
 * time: layer 0 reads the 9 patch rows (in = 9), layer l reads layer l−1's
 * K·width[l−1] outputs; its K·width[l] gates are ordered (k, g). Layers
 * n_perception .. n_layers−1 are the update network: its layer 0 reads the
 * C + C·S·K inputs in the (c, s, k) order above; the last layer has C gates.
 * layer[i].a/.b point into a/b at gate_off[i]; a hand-built circuit may
 * rewrite a, b and ops (as long as every index stays below layer[i].in). */
typedef struct {
    size_t channels, kernels;
    size_t n_perception, n_update, n_layers;
    size_t width[LOGIC_CA_MAX_LAYERS];        /* kernel layers: per kernel; update layers: gates */
    logic_layer layer[LOGIC_CA_MAX_LAYERS];
    size_t gate_off[LOGIC_CA_MAX_LAYERS + 1]; /* first gate of each layer; [n_layers] = gates */
    size_t gates;
    uint32_t *a, *b;                          /* [gates] wiring */
    uint8_t *ops;                             /* [gates] op index 0..15 */
} logic_ca_hard;

/* The circuit of model m (a logic-ca model) with ops = argmax of params. */
ls_status logic_ca_hard_create(logic_ca_hard **out, const ls_model *m, const float *params, ls_err *err);
void logic_ca_hard_destroy(logic_ca_hard *h);   /* accepts NULL */

/* One hard CA step on a width×height grid: in, out [C][height][width] bytes
 * 0/1 (nonzero counts as 1; out must not alias in); mask [height][width]
 * (nonzero = the cell fires) or NULL (all fire). */
ls_status logic_ca_hard_step(const logic_ca_hard *h, uint8_t *out, const uint8_t *in, size_t width,
                             size_t height, int periodic, const uint8_t *mask, ls_err *err);
/* steps hard CA steps keeping every frame: frames [steps+1][C][height][width],
 * frames[0] given; masks [steps][height][width] or NULL. */
ls_status logic_ca_hard_rollout(const logic_ca_hard *h, uint8_t *frames, size_t width, size_t height,
                                size_t steps, int periodic, const uint8_t *masks, ls_err *err);
/* Rolls `count` grids of side×side cells, state [count][C][side²] bytes 0/1
 * (nonzero counts as 1), `steps` hard steps of circuit h in place, borders
 * as s->periodic says; with s->async, cell n of grid grid0 + g fires at
 * step u when rng_uniformf(LOGIC_CA_EVAL_SEED, RNG_EVAL, grid0 + g, 1 + u,
 * n) < s->fire_rate, else every cell fires. The grids run side by side in
 * one bit-sliced pass a step. For a task's metrics hook. */
ls_status logic_ca_hard_eval(const logic_ca_hard *h, const logic_ca_settings *s, uint8_t *state, size_t grid0,
                             size_t count, size_t side, size_t steps, ls_err *err);
/* The evaluation figures of circuit h for cfg (what the model's metrics
 * report): the circuit checked against cfg's shape, then the figures of
 * cfg's task's metrics hook. */
ls_status logic_ca_hard_metrics(const logic_ca_hard *h, const ls_config *cfg, ls_metric *out, size_t *n_out,
                                ls_err *err);

/* ---- What a task gives the model (ls_task_desc.model_hooks). ----
 *
 * A task that logic-ca trains returns this struct from its model_hooks for
 * the name "logic-ca" (logic_ca_model.name). sample and metrics are
 * required, the rest optional. Every hook is a pure function of its
 * arguments (and of ctx, fixed at create), so runs stay bit-identical. */
typedef struct logic_ca_task {
    /* Settings the task needs beyond the model's checks: LS_EINVAL naming
     * the key (the grid side a data set's boards fix, say). */
    ls_status (*check)(const logic_ca_settings *s, ls_err *err);
    /* What the task computes once per model instance for its samples (a
     * table of targets, say), freed by destroy (which accepts NULL). */
    ls_status (*create)(void **ctx, const logic_ca_settings *s, ls_err *err);
    void (*destroy)(void *ctx);
    /* Slot `slot` of batch b: its start state [C][N] (N = grid², floats
     * 0/1, channel planes) and channel 0's target [N] (floats 0/1). Called
     * on one thread before the step's phases; ctx is create's (or NULL). */
    ls_status (*sample)(const void *ctx, const logic_ca_settings *s, const ls_batch *b, size_t slot, float *state,
                        float *target, ls_err *err);
    /* The figures of circuit h (at most LS_MAX_METRICS), h already checked
     * against s's shape; logic_ca_hard_eval runs the grids. */
    ls_status (*metrics)(const logic_ca_hard *h, const logic_ca_settings *s, ls_metric *out, size_t *n_out,
                         ls_err *err);
} logic_ca_task;

/* The hooks cfg's task gives logic-ca, or NULL when it gives none. */
const logic_ca_task *logic_ca_task_of(const ls_config *cfg);

#endif
