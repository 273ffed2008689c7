/* train.c — one run's training loop: the data order, and the step as the
 * plan chosen when the trainer is created says (engine/core/plan.h). */
#include "engine/core/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record/hash.h"
#include "reduce/tree.h"
#include "engine/num/dmath.h"
#include "engine/core/optim.h"
#include "engine/data/idx.h"
#include "engine/data/safetensors.h"
#include "reduce/pool.h"
#include "engine/num/rng.h"

struct trainer {
    ls_config cfg;
    const ls_dataset *data;
    ls_dataset *owned_data;     /* set when the trainer loaded the data itself */
    ls_model *model;
    pool *pool;
    tree_reducer *reducer;
    optim *opt;
    plan plan;                  /* how every step runs: chosen at create and by trainer_set_ranks */
    plan_reduce step_reduce;    /* the current step's reduction: plan.reduce, or PLAN_STAGED */
    int unordered;              /* cfg.reduce == "unordered" */
    int64_t done;               /* steps applied */

    float *params;              /* [n_params] θ: one of param_buf */
    float *param_buf[PLAN_PARAM_BUFS]; /* θ's buffers (trainer_step: why three) */
    int param_at;               /* param_buf[param_at] == params */
    float *params_next;         /* where the step's update writes θ: params, or the next buffer */
    float *grad;                /* [n_params] finish output */
    uint64_t *hash_parts;       /* θ's hash in parts, from the update's workers (trainer_param_hash) */
    uint64_t *hash_nan;         /* [threads] a worker's piece held a NaN; one allocation with hash_parts */
    uint64_t *nonfinite;        /* [threads] a worker's piece of θ is no longer finite; the same allocation */
    int hash_fresh;             /* hash_parts are those of params */
    hash_tensors *tensor_hashes; /* the session's per-tensor hashes, summed by the update too; or NULL */
    int tensor_parts;           /* an update summed them since they were set (fresh with hash_fresh) */
    trainer_times times;        /* where the steps' time went (trainer_step_times) */
    void *param_mem;            /* param_buf and grad: one allocation */
    unsigned char *scratch;     /* [threads][scratch_bytes] per-worker model scratch */
    size_t scratch_stride;
    uint32_t *ids;              /* [batch] sample ids of the current step */
    uint32_t *perm[2];          /* [N] permutations of two consecutive epochs */
    int64_t perm_epoch[2];      /* epoch held by perm[i], -1 when none */
    ls_batch batch;             /* the current step's batch */
    size_t phase;               /* the phase being run */
    const float *sum;           /* tree sum of the current step */
    size_t *worker_work;        /* [threads] units, leaves and update pieces each worker ran in the last step */
    _Atomic size_t *unit_done;  /* [units] phases each unit finished, when the model declares phase_group */
    const float **held;         /* [leaves] the model's own leaf buffers (leaf_held, PLAN_HELD) */
    double *held_loss;          /* [leaves] their losses; one allocation with held */
    float *held_sum;            /* [leaf_len] the step's sum, each finish slice's coordinates */
    float *held_part;           /* [threads][TREE_SPAN_FLOATS] each slice's stream partials; one
                                   allocation with held_sum */
    double *norm_sums;          /* [chunks] clip_norm's sums of squares (OPTIM_NORM_CHUNK each); NULL: no clip_norm */
    void (*test_hook)(void *);  /* test-only, see trainer_set_test_hook */
    void *test_hook_ctx;
    struct trainer_ranks *ranks; /* NULL: one process (trainer_set_ranks) */
    size_t unit_base;           /* first phase unit this process runs */
    const float *staged_sum;    /* trainer_stage_apply: the step's tree sum, computed outside */
    double staged_total;
    int applied;                /* trainer_stage_apply took the step: the next trainer_step reports it */
    ls_status applied_st;
    double applied_loss;
    ls_err applied_err;
    /* The test loss's last, shorter batch (trainer_test_loss): an instance
     * of the model made for a batch of that many samples, its tree and its
     * per-worker scratch; made at the first evaluation that needs them. */
    ls_model *tail_model;
    tree_reducer *tail_reducer;
    unsigned char *tail_scratch;
    size_t tail_stride;
};

/* This rank's share of every step (trainer_set_ranks), one allocation. */
struct trainer_ranks {
    trainer_combine_fn fn;
    void *ctx;
    trainer_rank_sums in;
    tree_block *pieces;         /* [n_leaves] */
    size_t *first;              /* [ranks + 1] */
    float **mine;               /* [n_leaves] */
    double *mine_loss;          /* [n_leaves] */
    float *sum;                 /* [len] the combined sum */
};

ls_status trainer_load_data(const ls_config *cfg, ls_dataset **data, ls_err *err)
{
    *data = NULL;
    if (cfg->task_desc == NULL)
        return ls_fail(err, LS_EINVAL, "--task: unknown task '%s'", cfg->task);
    return cfg->task_desc->load(cfg, data, err);
}

void trainer_destroy(trainer *t)
{
    if (t == NULL)
        return;
    tree_reducer_destroy(t->reducer);
    tree_reducer_destroy(t->tail_reducer);
    model_destroy(t->tail_model);
    free(t->tail_scratch);
    pool_destroy(t->pool);
    model_destroy(t->model);
    optim_destroy(t->opt);
    dataset_destroy(t->owned_data);
    free(t->param_mem);
    free(t->hash_parts);
    free(t->scratch);
    free(t->ids);
    free(t->perm[0]);
    free(t->worker_work);
    free((void *)t->unit_done);
    free(t->held);
    free(t->held_sum);
    free(t->ranks);
    free(t->norm_sums);
    free(t);
}

/* --init: θ_0 from the file the config's source "init" names, whose
 * XXH3_64 is the config's init_hash (set here when 0, as data_hash). */
static ls_status trainer_init_weights(trainer *t, ls_config *cfg, ls_err *err)
{
    const char *path = cfg->src[CONFIG_INIT_SOURCE];
    if (path[0] == '\0')
        return cfg->init_hash == 0 ? LS_OK
                                   : ls_fail(err, LS_EINVAL, "init_hash: the config starts from weights %016llx but "
                                             "names no file of them (--init FILE.safetensors)",
                                             (unsigned long long)cfg->init_hash);
    const ls_model_info *mi = &t->model->info;
    uint64_t hash;
    ls_status st = safetensors_load_params(path, mi->tensors, mi->n_tensors, mi->n_params, t->params, &hash, err);
    if (st != LS_OK)
        return st;
    if (cfg->init_hash != 0 && cfg->init_hash != hash)
        return ls_fail(err, LS_EMISMATCH, "init_hash: the config starts from weights %016llx but %s has %016llx",
                       (unsigned long long)cfg->init_hash, path, (unsigned long long)hash);
    cfg->init_hash = t->cfg.init_hash = hash;
    return LS_OK;
}

ls_status trainer_create(trainer **out, ls_config *cfg, int threads, const ls_dataset *data, ls_err *err)
{
    *out = NULL;
    ls_status st = dmath_check_fpenv(err);
    if (st != LS_OK)
        return st;
    if ((st = config_validate(cfg, err)) != LS_OK)
        return st;
    if (threads < 1 || threads > POOL_MAX_THREADS)
        return ls_fail(err, LS_EINVAL, "--threads: %d is out of range (1..%d)", threads, POOL_MAX_THREADS);
    trainer *t = calloc(1, sizeof *t);
    if (t == NULL)
        return ls_fail(err, LS_ENOMEM, "trainer: out of memory");
    if (data == NULL) {
        const int prev = idx_load_threads(threads);   /* an IDX task decodes on up to 2 of them */
        st = trainer_load_data(cfg, &t->owned_data, err);
        idx_load_threads(prev);
        if (st != LS_OK)
            goto fail;
        data = t->owned_data;   /* still NULL for tasks that generate their samples */
    }
    uint64_t data_hash = data != NULL ? data->hash : 0;
    if (cfg->data_hash == 0) {
        cfg->data_hash = data_hash;
    } else if (cfg->data_hash != data_hash) {
        st = ls_fail(err, LS_EMISMATCH, "data_hash: the config names data %016llx but %s has %016llx",
                     (unsigned long long)cfg->data_hash, data != NULL ? data->name : cfg->task,
                     (unsigned long long)data_hash);
        goto fail;
    }
    t->cfg = *cfg;
    t->data = data;
    t->unordered = strcmp(cfg->reduce, "unordered") == 0;
    size_t B = cfg->batch;

    if ((st = model_create(&t->model, cfg, data, err)) != LS_OK)
        goto fail;
    const ls_model_info *mi = &t->model->info;
    plan_choose(&t->plan, t->model, B, threads, t->unordered, 1, 0, 0);
    t->worker_work = calloc((size_t)threads, sizeof(size_t));
    if (mi->hints.phase_group > 0)
        t->unit_done = calloc(mi->units, sizeof *t->unit_done);
    if (t->worker_work == NULL || (mi->hints.phase_group > 0 && t->unit_done == NULL)) {
        st = ls_fail(err, LS_ENOMEM, "trainer: out of memory");
        goto fail;
    }
    if ((st = pool_create(&t->pool, threads, err)) != LS_OK)
        goto fail;
    if (t->plan.reduce == PLAN_HELD) {
        const size_t sum_floats = t->plan.held_sum_floats;
        t->held = malloc(mi->leaves * (sizeof(float *) + sizeof(double)));
        t->held_loss = t->held != NULL ? (double *)(void *)(t->held + mi->leaves) : NULL;
        t->held_sum = aligned_alloc(64, (sum_floats + (size_t)threads * TREE_SPAN_FLOATS) * sizeof(float));
        t->held_part = t->held_sum != NULL ? t->held_sum + sum_floats : NULL;
        if (t->held == NULL || t->held_sum == NULL) {
            st = ls_fail(err, LS_ENOMEM, "trainer: out of memory");
            goto fail;
        }
    }
    if ((st = tree_reducer_create(&t->reducer, t->pool, mi->leaf_len, mi->leaves, err)) != LS_OK)
        goto fail;
    if ((st = optim_create(&t->opt, cfg, mi->n_params, err)) != LS_OK ||
        (st = optim_set_groups(t->opt, mi->tensors, mi->n_tensors, mi->no_decay, err)) != LS_OK)
        goto fail;
    if (optim_clips_norm(t->opt) &&
        (t->norm_sums = malloc((mi->n_params + OPTIM_NORM_CHUNK - 1) / OPTIM_NORM_CHUNK * sizeof(double))) == NULL) {
        st = ls_fail(err, LS_ENOMEM, "trainer: out of memory");
        goto fail;
    }

    size_t n = mi->n_params;
    /* θ's buffers and the gradient, each array starting 1 KiB further than
     * the one before modulo 4 KiB: the update streams three of them at the
     * same index, and arrays at the same offset modulo 4 KiB make the core
     * take loads for stores of the other (4K aliasing). */
    const size_t span = (n * sizeof(float) + 4095) / 4096 * 4096 + 1024;
    const int param_bufs = t->plan.param_bufs;   /* one thread: in place */
    t->param_mem = aligned_alloc(4096, ((size_t)(param_bufs + 1) * span + 4095) / 4096 * 4096);
    if (t->param_mem != NULL) {
        for (int k = 0; k < param_bufs; k++)
            t->param_buf[k] = (float *)(void *)((unsigned char *)t->param_mem + (size_t)k * span);
        t->grad = (float *)(void *)((unsigned char *)t->param_mem + (size_t)param_bufs * span);
        t->params = t->params_next = t->param_buf[0];
    }
    const size_t hash_words = hash_parts_words(n);
    t->hash_parts = malloc((hash_words + 2 * (size_t)threads) * sizeof(uint64_t));
    if (t->hash_parts != NULL) {
        t->hash_nan = t->hash_parts + hash_words;
        t->nonfinite = t->hash_nan + threads;
    }
    t->scratch_stride = t->plan.scratch_stride;
    t->scratch = aligned_alloc(64, (size_t)threads * t->scratch_stride + 64);
    t->ids = malloc(B * sizeof(uint32_t));
    size_t N = data != NULL ? data->train.n : 1;
    t->perm[0] = malloc(2 * N * sizeof(uint32_t));
    if (t->scratch == NULL) {
        /* The one allocation that grows with the threads and the model's
         * activations (a gpt's context): say how much and what shrinks it. */
        st = ls_fail(err, LS_ENOMEM, "trainer: out of memory for %d threads' scratch, %zu bytes each (%.3g GB): "
                     "fewer --threads, or a smaller model (a gpt: a shorter --context)", threads, t->scratch_stride,
                     (double)threads * (double)t->scratch_stride / 1e9);
        goto fail;
    }
    if (t->param_mem == NULL || t->hash_parts == NULL || t->ids == NULL || t->perm[0] == NULL) {
        st = ls_fail(err, LS_ENOMEM, "trainer: out of memory for %zu parameters", n);
        goto fail;
    }
    t->perm[1] = t->perm[0] + N;
    t->perm_epoch[0] = t->perm_epoch[1] = -1;
    t->model->desc->init(t->model->self, t->params, cfg->seed);
    if ((st = trainer_init_weights(t, cfg, err)) != LS_OK)
        goto fail;
    *out = t;
    return LS_OK;
fail:
    trainer_destroy(t);
    return st;
}

void trainer_drop_data(trainer *t)
{
    if (t->owned_data == NULL)
        t->data = NULL;
}

const ls_config *trainer_config(const trainer *t) { return &t->cfg; }
const ls_model *trainer_model(const trainer *t) { return t->model; }
const plan *trainer_plan(const trainer *t) { return &t->plan; }
const ls_dataset *trainer_data(const trainer *t) { return t->data; }
const float *trainer_params(const trainer *t) { return t->params; }
float *trainer_params_mut(trainer *t)
{
    t->hash_fresh = 0;   /* the caller may write θ: its parts no longer hold */
    return t->params;
}
size_t trainer_n_params(const trainer *t) { return t->model->info.n_params; }
int64_t trainer_steps_done(const trainer *t) { return t->done; }
int trainer_threads(const trainer *t) { return pool_threads(t->pool); }
const size_t *trainer_worker_leaves(const trainer *t) { return t->worker_work; }

void *trainer_optim_state(trainer *t, size_t *bytes)
{
    *bytes = optim_state_bytes(t->opt);
    return optim_state_ptr(t->opt);
}

void trainer_set_steps_done(trainer *t, int64_t steps)
{
    t->done = steps;
}

void trainer_set_test_hook(trainer *t, void (*hook)(void *ctx), void *ctx)
{
    t->test_hook = hook;
    t->test_hook_ctx = ctx;
}

/* The permutation of epoch e, computed on first use (two epochs cached, as a
 * batch can straddle an epoch boundary). */
static const uint32_t *trainer_perm(trainer *t, int64_t e)
{
    for (int i = 0; i < 2; i++)
        if (t->perm_epoch[i] == e)
            return t->perm[i];
    int slot = t->perm_epoch[0] < t->perm_epoch[1] ? 0 : 1;
    rng_permutation(t->perm[slot], t->data->train.n, t->cfg.seed, RNG_EPOCH_PERM, (uint64_t)e);
    t->perm_epoch[slot] = e;
    return t->perm[slot];
}

static void trainer_batch_ids(trainer *t, int64_t step)
{
    if (t->data == NULL)
        return;   /* generated samples are addressed by (step, slot) */
    uint64_t N = t->data->train.n, B = t->cfg.batch;
    for (uint64_t j = 0; j < B; j++) {
        uint64_t q = (uint64_t)(step - 1) * B + j;
        t->ids[j] = trainer_perm(t, (int64_t)(q / N))[q % N];
    }
}

/* The public leaf modes and the tree's are one contract. */
_Static_assert((int)TREE_WRITE == (int)LS_LEAF_WRITE && (int)TREE_ADD == (int)LS_LEAF_ADD, "leaf modes are the tree's");

static double trainer_leaf(void *ctx, size_t leaf, float *buf, int mode, int worker)
{
    trainer *t = ctx;
    t->worker_work[worker]++;
    return model_leaf(t->model, t->params, &t->batch, leaf, buf, mode, t->scratch + (size_t)worker * t->scratch_stride);
}

/* Unit `unit` of phase `wave` (pool_waves: the model's phase_group). */
static void trainer_wave_unit(void *ctx, size_t wave, size_t unit, int worker)
{
    trainer *t = ctx;
    t->worker_work[worker]++;
    t->model->desc->phase(t->model->self, t->params, &t->batch, wave, t->unit_base + unit,
                          t->scratch + (size_t)worker * t->scratch_stride);
}

/* Unit `unit` of phase t->phase (a phase between barriers). */
static void trainer_unit(void *ctx, size_t unit, int worker)
{
    trainer_wave_unit(ctx, ((trainer *)ctx)->phase, unit, worker);
}

/* The model's phases over the plan's units: as waves when the plan says so
 * (the model declared which units of the last phase a unit needs, and this
 * process runs whole groups of them), else with a barrier after each. */
static void trainer_phases(trainer *t)
{
    const plan *p = &t->plan;
    const size_t u0 = p->unit_lo, u1 = p->unit_hi;
    t->unit_base = u0;
    if (p->waves) {
        const pool_waves_job job = { p->phases,         u1 - u0, p->wave_group, p->wave_reach, p->wave_wrap,
                                     trainer_wave_unit, t,       t->unit_done };
        pool_waves(t->pool, &job);
        return;
    }
    for (t->phase = 0; t->phase < p->phases; t->phase++)
        pool_parallel_for(t->pool, u1 - u0, trainer_unit, t);
}

/* Worker's share [lo, hi) of n elements, in whole units of `unit`. */
static void chunk_of(size_t n, size_t unit, int worker, int n_workers, size_t *lo, size_t *hi)
{
    size_t units = (n + unit - 1) / unit;
    size_t u0 = units * (size_t)worker / (size_t)n_workers, u1 = units * (size_t)(worker + 1) / (size_t)n_workers;
    *lo = u0 * unit < n ? u0 * unit : n;
    *hi = u1 * unit < n ? u1 * unit : n;
}

/* The step's sum at coordinates [lo, hi): when the reduction left the
 * tree's last pass to the step (trainer_reduce), this worker combines those
 * coordinates here, where it reads them, instead of in a pool job of its
 * own that writes the whole sum out before the finish or update reads it. */
static const float *step_sum(trainer *t, size_t lo, size_t hi)
{
    return t->sum != NULL ? t->sum : tree_top_chunk(t->reducer, lo, hi);
}

static void trainer_finish_worker(void *ctx, int worker, int n_workers)
{
    trainer *t = ctx;
    size_t lo, hi;
    chunk_of(t->plan.finish_units, PLAN_FINISH_CHUNK, worker, n_workers, &lo, &hi);   /* no two workers share a line */
    const size_t span = t->plan.finish_span;
    if (lo >= hi)
        return;
    const float *sum;
    if (t->step_reduce == PLAN_HELD) {   /* the tree over the held leaves, at the coordinates this finish reads */
        float *scratch = t->held_part + (size_t)worker * TREE_SPAN_FLOATS;   /* slice `worker`'s */
        tree_span_sum(t->held, t->model->info.leaves, lo * span, (hi - lo) * span, t->held_sum + lo * span, scratch);
        sum = t->held_sum;
    } else {
        sum = step_sum(t, lo * span, hi * span);
    }
    t->model->desc->finish(t->model->self, sum, t->cfg.batch, t->grad, lo, hi);
}

/* Piece `piece` of the update (PLAN_UPDATE_PIECE parameters, starting at a
 * block of the hash), on whichever thread claims it: the optimiser's work
 * per element is not even (AdamW's exact path for tiny values), so pieces
 * go to the threads that are free rather than in fixed halves. What a
 * piece reads (the sum, combined here: step_sum) and writes (θ, hashed
 * here for the session's join, trainer_param_hash) is still in this core's
 * cache when it does. */
static void trainer_update_piece(void *ctx, size_t piece, int worker)
{
    trainer *t = ctx;
    const size_t n = t->plan.n_params, a = piece * PLAN_UPDATE_PIECE;
    const size_t b = n - a > PLAN_UPDATE_PIECE ? a + PLAN_UPDATE_PIECE : n;
    int bad;
    const float *half_a, *half_b;
    if (t->plan.finish_folded && t->sum == NULL && tree_top_halves(t->reducer, a, b, &half_a, &half_b))
        /* the tree's very last addition too, as the optimiser loads the two halves */
        bad = optim_update_sum(t->opt, t->params_next, t->params, half_a, half_b, (float)t->cfg.batch, a, b);
    else if (t->plan.finish_folded)   /* the finish folded in: grad = sum / (float)B, the same division */
        bad = optim_update(t->opt, t->params_next, t->params, step_sum(t, a, b), (float)t->cfg.batch, a, b);
    else
        bad = optim_update(t->opt, t->params_next, t->params, t->grad, 1.0f, a, b);
    t->nonfinite[worker] |= (uint64_t)bad;
    t->hash_nan[worker] |= (uint64_t)hash_params_part(t->hash_parts, t->params_next, n, a, b);
    hash_tensors_part(t->tensor_hashes, t->params_next, a, b);
    t->worker_work[worker]++;
}

/* clip_norm: chunk `piece`'s sum of squares of the gradient the update
 * takes (optim.h); the update's pieces are these chunks. */
static void trainer_norm_piece(void *ctx, size_t piece, int worker)
{
    trainer *t = ctx;
    const size_t n = t->plan.n_params, a = piece * OPTIM_NORM_CHUNK;
    const size_t b = n - a > OPTIM_NORM_CHUNK ? a + OPTIM_NORM_CHUNK : n;
    t->norm_sums[piece] = t->plan.finish_folded ? optim_sumsq(step_sum(t, a, b), (float)t->cfg.batch, a, b)
                                                : optim_sumsq(t->grad, 1.0f, a, b);
    (void)worker;
}

double trainer_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const trainer_times *trainer_step_times(const trainer *t)
{
    return &t->times;
}

uint64_t trainer_param_hash(const trainer *t)
{
    const size_t n = t->model->info.n_params;
    if (t->hash_fresh) {
        uint64_t nan = 0;
        for (int w = 0; w < pool_threads(t->pool); w++)
            nan |= t->hash_nan[w];
        if (!nan)
            return hash_params_join(t->hash_parts, t->params, n);
    }
    return hash_params(t->params, n);   /* NaNs hash as the canonical NaN */
}

void trainer_set_tensor_hashes(trainer *t, hash_tensors *ht)
{
    t->tensor_hashes = ht;
    t->tensor_parts = 0;
}

int trainer_tensor_parts_fresh(const trainer *t, const hash_tensors *ht)
{
    return ht != NULL && t->tensor_hashes == ht && t->hash_fresh && t->tensor_parts;
}

/* A rank's pieces summed here, every rank's combined by the caller. */
static ls_status trainer_reduce_ranks(trainer *t, double *total, ls_err *err)
{
    struct trainer_ranks *k = t->ranks;
    size_t p0 = k->first[k->in.rank], p1 = k->first[k->in.rank + 1];
    ls_status st = tree_reduce_pieces(t->reducer, k->pieces + p0, p1 - p0, trainer_leaf, t, k->mine, k->mine_loss);
    if (st != LS_OK)
        return ls_fail(err, st, "reduce: this rank's pieces are not aligned blocks");
    if ((st = k->fn(k->ctx, &k->in, k->sum, total, err)) != LS_OK)
        return st;
    t->sum = k->sum;
    return LS_OK;
}

/* Every step is the same computation, whatever the model: prepare (one
 * thread, then its parts on the pool: model_prepare), the model's phases
 * (trainer_phases), then the leaves summed by the canonical tree in the way
 * the plan chose. */
static ls_status trainer_reduce(trainer *t, int64_t step, double *total, ls_err *err)
{
    const ls_model *m = t->model;
    memset(t->worker_work, 0, (size_t)pool_threads(t->pool) * sizeof(size_t));
    t->batch = (ls_batch){ t->data, t->data != NULL ? t->ids : NULL, t->cfg.batch, step, t->cfg.seed };
    t->step_reduce = t->plan.reduce;
    double a = trainer_clock();
    ls_status st = model_prepare(m, t->params, &t->batch, t->pool, err);
    const double b = trainer_clock();
    t->times.prepare += b - a;
    if (st != LS_OK)
        return st;
    trainer_phases(t);
    const double c = trainer_clock();
    t->times.phases += c - b;
    switch (t->plan.reduce) {
    case PLAN_RANKS:
        st = trainer_reduce_ranks(t, total, err);
        break;
    case PLAN_UNORDERED:
        st = tree_reduce_unordered(t->reducer, trainer_leaf, t, &t->sum, total);
        break;
    case PLAN_HELD:   /* the finish sums the leaves where the model holds them */
        for (size_t i = 0; i < m->info.leaves; i++)
            t->held[i] = m->leaf_held(m->self, i, &t->held_loss[i]);
        *total = tree_loss_sum(t->held_loss, m->info.leaves);
        break;
    case PLAN_TREE_TOP:   /* the step's workers combine the top (step_sum) */
        t->sum = NULL;
        st = tree_reduce_deferred(t->reducer, trainer_leaf, t, total);
        break;
    case PLAN_TREE:
    case PLAN_STAGED:   /* never chosen: a staged step does not come here */
        st = tree_reduce(t->reducer, trainer_leaf, t, &t->sum, total);
        break;
    }
    t->times.leaves += trainer_clock() - c;
    return st;
}

static ls_status trainer_take_staged(trainer *t, double *total);

ls_status trainer_step(trainer *t, double *loss, ls_err *err)
{
    if (t->applied) {
        t->applied = 0;
        *loss = t->applied_loss;
        if (t->applied_st != LS_OK && err != NULL)
            *err = t->applied_err;
        return t->applied_st;
    }
    int64_t step = t->done + 1;
    trainer_batch_ids(t, step);
    double total;
    ls_err e2 = { "" };
    ls_status st = t->staged_sum != NULL ? trainer_take_staged(t, &total) : trainer_reduce(t, step, &total, &e2);
    double b = trainer_clock();
    if (st != LS_OK)
        return ls_fail(err, st, "step %lld: %s", (long long)step, e2.msg[0] ? e2.msg : ls_strerror(st));
    if (t->model->info.mean_loss)
        total = total / (double)t->cfg.batch;
    *loss = total;
    if (!isfinite(total))
        return ls_fail(err, LS_EDIVERGED, "step %lld: the loss is %s; training diverged", (long long)step,
                       isnan(total) ? "NaN" : "infinite");
    /* A model whose finish is the batch mean has it folded into the update
     * (the plan's finish_folded): one pass over the gradient less. */
    if (!t->plan.finish_folded)
        pool_run(t->pool, trainer_finish_worker, t);
    double c = trainer_clock();
    t->times.finish += c - b;
    if (t->test_hook != NULL)
        t->test_hook(t->test_hook_ctx);
    optim_begin_step(t->opt);
    /* With one thread the update rewrites θ in place, in the lines the
     * leaves just read. With more (whatever the CPUs: one rule, and the
     * tests at several thread counts run it on any machine), each thread
     * updates pieces of θ that every thread read during the leaves, so
     * writing it in place first takes each line from the other cores'
     * caches, which a busy host made up to six times slower; θ goes instead
     * into the buffer of two steps ago, which no core has read since
     * (README, Performance). Three buffers, because the one of the step
     * before is still in the other cores' caches. Same bits either way:
     * each element's update reads only its own old value. */
    if (t->plan.param_bufs > 1) {
        t->param_at = (t->param_at + 1) % t->plan.param_bufs;
        t->params_next = t->param_buf[t->param_at];
    } else {
        t->params_next = t->params;
    }
    memset(t->hash_nan, 0, 2 * (size_t)pool_threads(t->pool) * sizeof *t->hash_nan);   /* and nonfinite */
    if (t->norm_sums != NULL) {   /* clip_norm: the gradient's norm first, the update then scales it */
        const size_t chunks = (t->plan.n_params + OPTIM_NORM_CHUNK - 1) / OPTIM_NORM_CHUNK;
        pool_parallel_for(t->pool, chunks, trainer_norm_piece, t);
        if (t->plan.finish_folded && t->sum == NULL)
            t->sum = tree_top_chunk(t->reducer, 0, 0);   /* the pass above combined every coordinate */
        optim_clip_norm(t->opt, t->norm_sums, chunks, NULL);
    }
    pool_parallel_for(t->pool, t->plan.update_pieces, trainer_update_piece, t);
    t->times.update += trainer_clock() - c;
    uint64_t bad = 0;
    for (int w = 0; w < pool_threads(t->pool); w++)
        bad |= t->nonfinite[w];
    if (bad) {
        /* The loss was finite but θ is not (a NaN hidden from the loss by a
         * ReLU, an overflow): the run has diverged all the same. The step
         * is not counted, as for a non-finite loss; which parameter is
         * named does not depend on the thread count. */
        const size_t n = t->model->info.n_params, i = optim_first_nonfinite(t->params_next, n);
        t->hash_fresh = 0;   /* the parts hashed this step are not those of t->params */
        return ls_fail(err, LS_EDIVERGED, "step %lld: parameter %zu is %s (the loss %.9g was finite); training "
                       "diverged", (long long)step, i, isnan(t->params_next[i]) ? "NaN" : "infinite", total);
    }
    t->hash_fresh = 1;
    t->tensor_parts = t->tensor_hashes != NULL;
    t->params = t->params_next;
    t->done = step;
    return LS_OK;
}

typedef struct {
    trainer *t;
    size_t chunk;
    size_t *correct;   /* [parts] */
} eval_job;

static void trainer_eval_part(void *ctx, size_t part, int worker)
{
    eval_job *job = ctx;
    trainer *t = job->t;
    size_t n = t->data->test.n, first = part * job->chunk;
    size_t count = n - first < job->chunk ? n - first : job->chunk;
    job->correct[part] = t->model->desc->eval(t->model->self, t->params, t->data, first, count,
                                              t->scratch + (size_t)worker * t->scratch_stride);
}

static ls_status trainer_prepare_eval(trainer *t, ls_err *err)
{
    const ls_model *m = t->model;
    return model_prepare(m, t->params, NULL, t->pool, err);
}

/* The model for the test loss's last batch of r < B samples: the model
 * created for a batch of r (leaves as its create groups r samples), with
 * its own tree and scratch. Its leaves are those of the first r slots of a
 * batch of B: a model groups slots into leaves of L = min(leaf, batch)
 * (model_leaf_size), and min(leaf, B) and min(leaf, r) group r slots alike
 * (both are leaf when leaf <= r, and one leaf of r slots otherwise). */
static ls_status trainer_tail_model(trainer *t, size_t r, ls_err *err)
{
    if (t->tail_reducer != NULL)
        return LS_OK;   /* made: the test split, hence r, is fixed for the trainer */
    ls_config c = t->cfg;
    c.batch = r;
    ls_status st = model_create(&t->tail_model, &c, t->data, err);
    if (st == LS_OK) {
        const ls_model_info *mi = &t->tail_model->info;
        t->tail_stride = (mi->scratch_bytes + 63) / 64 * 64;
        t->tail_scratch = aligned_alloc(64, (size_t)pool_threads(t->pool) * t->tail_stride + 64);
        st = t->tail_scratch == NULL ? ls_fail(err, LS_ENOMEM, "test loss: out of memory")
                                     : tree_reducer_create(&t->tail_reducer, t->pool, mi->leaf_len, mi->leaves, err);
    }
    if (st != LS_OK) {   /* all or nothing: the next evaluation tries again */
        model_destroy(t->tail_model);
        free(t->tail_scratch);
        t->tail_model = NULL;
        t->tail_scratch = NULL;
        t->tail_reducer = NULL;
    }
    return st;
}

static double trainer_tail_leaf(void *ctx, size_t leaf, float *buf, int mode, int worker)
{
    trainer *t = ctx;
    return model_leaf(t->tail_model, t->params, &t->batch, leaf, buf, mode,
                      t->tail_scratch + (size_t)worker * t->tail_stride);
}

/* The training loss of the current parameters on the whole test split: in
 * batches of the config's B consecutive samples, the last one of the
 * n_test mod B samples left (when there are any), each batch's loss the
 * canonical tree sum of its leaves as in a step (the last batch's leaves as
 * the model groups a batch of that size: trainer_tail_model), the batches
 * added in order starting from 0.0, divided by n_test for a mean-loss model.
 * So its bits depend on the config and θ alone, and every test sample
 * counts, as it does for test_acc. None (*has 0) for a model whose step has
 * phases. */
static ls_status trainer_test_loss(trainer *t, double *loss, int *has, ls_err *err)
{
    const ls_model *m = t->model;
    const size_t B = t->cfg.batch;
    *has = 0;
    if (m->info.phases > 0 || t->data == NULL || B == 0 || t->data->test.n == 0)
        return LS_OK;
    /* A leaf reads its samples from the train split. Field by field: a data
     * set laid out by 1.1's header has no int32 label fields, and one whose
     * labels are bytes (train.y set) is never asked for them. */
    ls_dataset test;
    memset(&test, 0, sizeof test);
    memcpy(test.name, t->data->name, sizeof test.name);
    test.n_classes = t->data->n_classes;
    test.hash = t->data->hash;
    test.train = t->data->test;
    test.test = t->data->test;
    test.mem = t->data->mem;
    if (t->data->train.y == NULL)
        test.train_labels = test.test_labels = t->data->test_labels;
    const size_t n = t->data->test.n, batches = (n + B - 1) / B;
    double total = 0;
    for (size_t k = 0; k < batches; k++) {
        const size_t count = n - k * B < B ? n - k * B : B;
        ls_status st = count < B ? trainer_tail_model(t, count, err) : LS_OK;
        if (st != LS_OK)
            return st;
        const ls_model *mk = count < B ? t->tail_model : m;
        for (size_t j = 0; j < count; j++)
            t->ids[j] = (uint32_t)(k * B + j);   /* trainer_step recomputes ids: overwriting is safe */
        t->batch = (ls_batch){ &test, t->ids, count, 0, t->cfg.seed };
        memset(t->worker_work, 0, (size_t)pool_threads(t->pool) * sizeof(size_t));
        if ((st = model_prepare(mk, t->params, &t->batch, t->pool, err)) != LS_OK)
            return st;
        double sum;
        const float *tail_sum;
        if (count < B)
            st = t->unordered ? tree_reduce_unordered(t->tail_reducer, trainer_tail_leaf, t, &tail_sum, &sum)
                              : tree_reduce_deferred(t->tail_reducer, trainer_tail_leaf, t, &sum);
        else
            st = t->unordered ? tree_reduce_unordered(t->reducer, trainer_leaf, t, &t->sum, &sum)
                              : tree_reduce_deferred(t->reducer, trainer_leaf, t, &sum);   /* the loss only */
        if (st != LS_OK)
            return ls_fail(err, st, "test loss: %s", ls_strerror(st));
        total += sum;
    }
    *loss = m->info.mean_loss ? total / (double)n : total;
    *has = 1;
    return LS_OK;
}

static void trainer_metric_part(void *ctx, size_t sample, int worker)
{
    trainer *t = ctx;
    t->model->desc->metric_part(t->model->self, t->params, t->data, sample,
                                t->scratch + (size_t)worker * t->scratch_stride);
}

static ls_status trainer_model_metrics(trainer *t, ls_metric *out, size_t *n_out, ls_err *err);

/* The model's figures, then the task's say in them (ls_task_desc.figures). */
ls_status trainer_metrics(trainer *t, ls_metric *out, size_t *n_out, ls_err *err)
{
    ls_status st = trainer_model_metrics(t, out, n_out, err);
    const ls_task_desc *task = t->cfg.task_desc;
    if (st == LS_OK && task != NULL && task->figures != NULL && *n_out > 0)
        task->figures(&t->cfg, out, n_out);
    return st;
}

static ls_status trainer_model_metrics(trainer *t, ls_metric *out, size_t *n_out, ls_err *err)
{
    *n_out = 0;
    if (t->model->desc->metrics != NULL) {
        ls_status st = trainer_prepare_eval(t, err);
        if (st != LS_OK)
            return st;
        if (t->model->desc->metric_part != NULL && t->data != NULL)
            pool_parallel_for(t->pool, t->data->test.n, trainer_metric_part, t);
        return t->model->desc->metrics(t->model->self, t->params, t->data, out, n_out, err);
    }
    if (t->model->desc->eval == NULL || t->data == NULL || t->data->test.n == 0)
        return LS_OK;   /* nothing to evaluate: no figures */
    double acc;
    ls_status st = trainer_evaluate(t, &acc, err);
    if (st != LS_OK)
        return st;
    snprintf(out[0].name, sizeof out[0].name, "test_acc");
    out[0].value = acc;
    *n_out = 1;
    double loss;
    int has_loss = 0;
    if ((st = trainer_test_loss(t, &loss, &has_loss, err)) != LS_OK)
        return st;
    if (has_loss) {
        snprintf(out[1].name, sizeof out[1].name, "test_loss");
        out[1].value = loss;
        *n_out = 2;
    }
    return LS_OK;
}

ls_status trainer_evaluate(trainer *t, double *accuracy, ls_err *err)
{
    if (t->model->desc->eval == NULL || t->data == NULL || t->model->info.eval_chunk == 0)
        return ls_fail(err, LS_EINVAL, "model %s has no test accuracy", t->model->name);
    size_t n = t->data->test.n, chunk = t->model->info.eval_chunk;
    size_t parts = (n + chunk - 1) / chunk;
    size_t *correct = calloc(parts ? parts : 1, sizeof *correct);
    if (correct == NULL)
        return ls_fail(err, LS_ENOMEM, "evaluate: out of memory");
    eval_job job = { t, chunk, correct };
    ls_status st = trainer_prepare_eval(t, err);
    if (st != LS_OK) {
        free(correct);
        return st;
    }
    pool_parallel_for(t->pool, parts, trainer_eval_part, &job);
    size_t total = 0;
    for (size_t i = 0; i < parts; i++)
        total += correct[i];
    free(correct);
    *accuracy = n ? (double)total / (double)n : 0.0;
    return LS_OK;
}

ls_status trainer_set_ranks(trainer *t, int rank, int ranks, trainer_combine_fn fn, void *ctx, ls_err *err)
{
    free(t->ranks);
    t->ranks = NULL;
    plan_choose(&t->plan, t->model, t->cfg.batch, pool_threads(t->pool), t->unordered, 1, 0, 0);
    if (ranks <= 1 || fn == NULL)
        return LS_OK;
    if (rank < 0 || rank >= ranks)
        return ls_fail(err, LS_EINVAL, "rank %d of %d", rank, ranks);
    if (t->unordered)
        return ls_fail(err, LS_EINVAL, "--reduce unordered: has no meaning over several processes");
    const ls_model_info *mi = &t->model->info;
    size_t n = mi->leaves, len = mi->leaf_len, R = (size_t)ranks;
    size_t bytes = sizeof(struct trainer_ranks) + n * (sizeof(tree_block) + sizeof(float *) + sizeof(double)) +
                   (R + 1) * sizeof(size_t);
    size_t sum_at = (bytes + 63) / 64 * 64;
    struct trainer_ranks *k = aligned_alloc(64, (sum_at + len * sizeof(float) + 63) / 64 * 64);
    if (k == NULL)
        return ls_fail(err, LS_ENOMEM, "trainer: out of memory");
    memset(k, 0, sizeof *k);
    k->pieces = (tree_block *)(k + 1);
    k->mine = (float **)(k->pieces + n);
    k->mine_loss = (double *)(k->mine + n);
    k->first = (size_t *)(k->mine_loss + n);
    k->sum = (float *)((unsigned char *)k + sum_at);
    k->fn = fn;
    k->ctx = ctx;
    size_t n_pieces = tree_rank_pieces(n, ranks, k->pieces, k->first);
    size_t p0 = k->first[rank], p1 = k->first[rank + 1];
    k->in = (trainer_rank_sums){ rank, ranks, n, len, k->pieces, n_pieces, k->first, k->mine, k->mine_loss };
    /* A model whose units are its leaves ((sample, part) pairs, sample-major)
     * needs the units of the samples its pieces touch, all parts of each:
     * a part's phase reads its sample's other parts, never another sample. */
    size_t unit_lo = 0, unit_hi = mi->units;
    if (mi->phases > 0 && mi->units == n && t->cfg.batch > 0 && n % t->cfg.batch == 0) {
        size_t parts = n / t->cfg.batch;
        size_t a = p0 < p1 ? k->pieces[p0].first : 0, b = p0 < p1 ? k->pieces[p1 - 1].first + k->pieces[p1 - 1].count : 0;
        unit_lo = a / parts * parts;
        unit_hi = (b + parts - 1) / parts * parts;
    }
    t->ranks = k;
    plan_choose(&t->plan, t->model, t->cfg.batch, pool_threads(t->pool), t->unordered, ranks, unit_lo, unit_hi);
    return LS_OK;
}

/* --- a step in stages (engine/core/sweep.c) ---------------------------------------------------- */

ls_status trainer_stage_begin(trainer *t, ls_err *err)
{
    const ls_model *m = t->model;
    int64_t step = t->done + 1;
    trainer_batch_ids(t, step);
    memset(t->worker_work, 0, (size_t)pool_threads(t->pool) * sizeof(size_t));
    t->staged_sum = NULL;
    t->batch = (ls_batch){ t->data, t->data != NULL ? t->ids : NULL, t->cfg.batch, step, t->cfg.seed };
    return model_prepare(m, t->params, &t->batch, NULL, err);   /* inside a sweep's unit: no nested job */
}

void trainer_stage_unit(trainer *t, size_t phase, size_t unit, void *scratch)
{
    t->model->desc->phase(t->model->self, t->params, &t->batch, phase, unit, scratch);
}

double trainer_stage_leaf(trainer *t, size_t leaf, float *buf, int mode, void *scratch)
{
    return model_leaf(t->model, t->params, &t->batch, leaf, buf, mode, scratch);
}

void trainer_stage_apply(trainer *t, const float *sum, double loss)
{
    t->staged_sum = sum;
    t->staged_total = loss;
    ls_err e = { "" };
    double l = 0;
    t->applied_st = trainer_step(t, &l, &e);
    t->applied_loss = l;
    t->applied_err = e;
    t->applied = 1;
}

static ls_status trainer_take_staged(trainer *t, double *total)
{
    t->sum = t->staged_sum;
    t->step_reduce = PLAN_STAGED;
    *total = t->staged_total;
    t->staged_sum = NULL;
    t->worker_work[0] = 1;   /* the work was done elsewhere; one worker of this trainer took part */
    return LS_OK;
}
