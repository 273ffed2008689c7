/* plan.h — how a trainer runs every step of one run, chosen once.
 *
 * A step is the same computation for every model: prepare, the model's
 * phases, its leaves summed along the canonical tree, the finish, the
 * optimiser. How the engine runs it depends on what the model declared (its
 * hints, include/lockstep.h), the thread count, the config's reduce and
 * whether the run is split over processes; none of these changes between
 * steps, so plan_choose decides it when the trainer is created (and again
 * when trainer_set_ranks splits the run), and trainer_step only executes
 * the plan. As ggml_graph_plan says how a graph's computation splits and how
 * much work memory it needs before ggml_graph_compute runs it, a plan says
 * which reduction, the tree's blocks, the phases as waves or behind
 * barriers, how the finish and the update split, and the scratch each
 * worker gets. plan_describe writes it as text (`lockstep train
 * --print-plan`).
 *
 * Every plan a run can choose gives the same bits, but for PLAN_UNORDERED
 * (the benchmark's foil, whose bits depend on the thread count): the
 * shortcuts only remove passes and barriers (tests/test_plan.c compares
 * them at several thread counts, with and without the model's hints).
 */
#ifndef LS_PLAN_H
#define LS_PLAN_H

#include <stddef.h>

#include "engine/core/model.h"

/* How a step's leaves are summed. */
typedef enum {
    PLAN_TREE = 0,       /* the canonical tree into per-worker buffers (tree_reduce), its last pass a pass of
                            its own that writes the whole sum before the finish reads it */
    PLAN_TREE_TOP = 1,   /* the same tree without its last pass (tree_reduce_deferred): the finish's workers
                            (finish_span) or the update's (finish_mean) combine the top where they read it */
    PLAN_HELD = 2,       /* no pass over the leaves: the model holds them (leaf_held) and each finish worker
                            sums, along the tree, the coordinates its finish reads (finish_span) */
    PLAN_UNORDERED = 3,  /* the benchmark's foil (reduce=unordered): per-worker accumulators in worker order */
    PLAN_RANKS = 4,      /* this process's pieces of the tree, combined over ranks by the caller's function */
    PLAN_STAGED = 5      /* a step the caller ran in stages (engine/core/sweep.c): its tree sum handed in.
                            Never chosen by plan_choose; a staged step runs the finish and update below */
} plan_reduce;

/* TREE_TOP, HELD: the finish takes whole chunks of this many units, so no
 * two workers write one cache line of the gradient; HELD needs at least
 * this many units per thread. */
#define PLAN_FINISH_CHUNK 16
/* Parameters an update worker takes at a time (16 KiB of each array): a
 * multiple of the hash's blocks (HASH_PART_FLOATS). */
#define PLAN_UPDATE_PIECE 4096
/* θ's buffers with more than one thread: the current one, and the two a
 * step writes into in turn (trainer_step says why three). */
#define PLAN_PARAM_BUFS 3

typedef struct {
    plan_reduce reduce;
    int threads;
    size_t batch;
    /* leaves */
    size_t leaves, leaf_len;   /* leaves of a step, floats in a leaf's buffer */
    size_t tree_block;         /* TREE, TREE_TOP: leaves of each aligned block dealt to the workers */
    int engine_adds;           /* the engine writes a leaf and adds it for LS_LEAF_ADD (model_leaf) */
    /* phases */
    size_t phases, units;      /* the model's phases and units of each */
    size_t unit_lo, unit_hi;   /* the units this process runs (all but with ranks) */
    int waves;                 /* 1: each unit starts when its neighbours of the phase before are done
                                  (pool_waves); 0: a barrier after each phase */
    size_t wave_group, wave_reach;
    int wave_wrap;
    /* finish */
    int finish_folded;         /* finish_mean: no finish pass; the update divides the sum by the batch */
    size_t finish_units, finish_span;
    /* update */
    size_t update_pieces;      /* pieces of PLAN_UPDATE_PIECE parameters, taken by free workers */
    size_t n_params;
    int param_bufs;            /* θ's buffers: 1 (in place) with one thread, else PLAN_PARAM_BUFS */
    /* scratch */
    size_t scratch_stride;     /* bytes of model scratch per worker, 64-byte aligned (with model_leaf's buffer) */
    size_t held_sum_floats;    /* HELD: floats of the sum the finish workers build, 16-float aligned; the
                                  workers' partials (TREE_SPAN_FLOATS each) follow it */
} plan;

/* The plan of model m's steps at `threads` threads: reduce_unordered from
 * the config's reduce, ranks > 1 for a run split over processes whose units
 * [unit_lo, unit_hi) this process runs (else all of them). A pure function
 * of its arguments. */
void plan_choose(plan *p, const ls_model *m, size_t batch, int threads, int reduce_unordered, int ranks,
                 size_t unit_lo, size_t unit_hi);

/* The reduction's name: "tree", "tree-top", "held", "unordered", "ranks", "staged". */
const char *plan_reduce_name(plan_reduce r);

/* The plan as text, a few lines each ending in '\n', into buf (always
 * terminated when len > 0); returns its full length. */
size_t plan_describe(const plan *p, const char *model_name, char *buf, size_t len);

#endif
