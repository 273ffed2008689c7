/* sweep.c — many sessions' steps as work units of one pool (sweep.h).
 *
 * A round: every active run's trainer begins its step (the batch, the
 * model's prepare); the phases of every run that has them, phase by phase,
 * as (run, unit); the leaves as (run, block); the top of each run's tree as
 * (run, chunk); finish and optimiser as (run) (in the block's own unit for
 * a run of one block, while its buffers are in cache); then each session's step
 * on the calling thread, in run order (hashes, record, checkpoint); and the
 * evaluations that are due, as (run). Units of one stage go
 * into one list that the workers take from with an atomic counter, biggest
 * runs first, so a worker that finishes early takes what is left of any run.
 *
 * Memory is planned once, before the first round: each run's block sums
 * (blocks × its padded buffer), and per worker one model scratch (the
 * largest any run asks) and one stream stack (the deepest any run's blocks
 * need). Workers never allocate.
 *
 * A run's block size is a power of two chosen from its share of the work:
 * a run with a small share is one block (its leaves summed on one worker,
 * no top of tree at all), a big one is cut for several workers. The block
 * size changes no bit (§2.2): blocks are aligned subtrees, and the tree
 * over the block sums is the canonical tree over the leaves.
 */
#include "engine/core/sweep.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/simd.h"
#include "record/runlog.h"
#include "reduce/pool.h"
#include "reduce/tree.h"
#include "engine/core/session.h"
#include "engine/core/train.h"

#define SWEEP_ALIGN_FLOATS 16       /* 64 bytes: no two workers write one cache line */
#define SWEEP_CHUNK_FLOATS 16384    /* a top-of-tree unit adds at least this many floats per block */
#define SWEEP_INLINE_TOP 65536      /* a run's whole top of tree below this many adds runs on the caller */

enum { RUN_ACTIVE = 0, RUN_DONE = 1, RUN_FAILED = 2 };

typedef struct {
    ls_session *s;
    trainer *t;
    int64_t eval_every, target;
    int state;                  /* RUN_* */
    ls_status st;               /* RUN_FAILED: why */
    ls_err err;
    int eval_due;               /* this round: evaluate after the step */
    size_t n_leaves, len, stride;   /* leaves per step, floats per leaf buffer, padded */
    size_t block, n_blocks;     /* leaves per block (a power of two), blocks */
    size_t n_chunks;            /* top-of-tree units; 0: summed on the calling thread */
    size_t phases, units;
    double cost;                /* estimated work of one step, for the block size and the order */
    float *blocks;              /* [n_blocks][stride] block sums; the tree sum ends in block 0 */
    double *block_loss;         /* [n_blocks] */
    ls_metric metrics[LS_MAX_METRICS];
    size_t n_metrics;
} sweep_run;

typedef struct {
    size_t run, index;
} sweep_unit;

struct sweep {
    pool *pool;
    int threads;
    sweep_run *runs;
    size_t n_runs, cap_runs;
    size_t *order;              /* [n_runs] run indices, biggest cost first */
    unsigned char *scratch;     /* [threads][scratch_stride] model scratch */
    size_t scratch_stride;
    float *stacks;              /* [threads][stack_floats] stream partials below a block's own sum */
    size_t stack_floats;
    sweep_unit *units;          /* [cap_units] the current stage's units */
    size_t cap_units;
    int planned;
};

typedef struct sweep_job sweep_job;
typedef void (*sweep_unit_fn)(sweep_job *job, const sweep_unit *u, int worker);

struct sweep_job {
    sweep *sw;
    size_t n;
    sweep_unit_fn fn;
    size_t phase;               /* the phase stage's phase */
    atomic_size_t next;         /* the next unit to hand out */
};

ls_status sweep_create(sweep **out, int threads, ls_err *err)
{
    *out = NULL;
    if (threads < 1 || threads > POOL_MAX_THREADS)
        return ls_fail(err, LS_EINVAL, "--threads: %d is out of range (1..%d)", threads, POOL_MAX_THREADS);
    sweep *sw = calloc(1, sizeof *sw);
    if (sw == NULL)
        return ls_fail(err, LS_ENOMEM, "sweep: out of memory");
    sw->threads = threads;
    ls_status st = pool_create(&sw->pool, threads, err);
    if (st != LS_OK) {
        free(sw);
        return st;
    }
    *out = sw;
    return LS_OK;
}

void sweep_destroy(sweep *sw)
{
    if (sw == NULL)
        return;
    for (size_t i = 0; i < sw->n_runs; i++) {
        free(sw->runs[i].blocks);
        free(sw->runs[i].block_loss);
    }
    pool_destroy(sw->pool);
    free(sw->runs);
    free(sw->order);
    free(sw->scratch);
    free(sw->stacks);
    free(sw->units);
    free(sw);
}

ls_status sweep_add(sweep *sw, ls_session *s, int64_t eval_every, ls_err *err)
{
    if (sw->planned)
        return ls_fail(err, LS_EINVAL, "sweep: runs are added before it trains");
    trainer *t = session_trainer(s);
    ls_session_state ss;
    ls_session_state_get(s, &ss);
    if (t == NULL || ss.step >= ss.target)
        return ls_fail(err, LS_EINVAL, "sweep: run %lld has nothing to do", (long long)ss.run_id);
    if (strcmp(trainer_config(t)->reduce, "tree") != 0)
        return ls_fail(err, LS_EINVAL, "--reduce: a sweep sums by the canonical tree, not '%s'",
                       trainer_config(t)->reduce);
    if (sw->n_runs == sw->cap_runs) {
        size_t cap = sw->cap_runs ? 2 * sw->cap_runs : 8;
        sweep_run *runs = realloc(sw->runs, cap * sizeof *runs);
        if (runs == NULL)
            return ls_fail(err, LS_ENOMEM, "sweep: out of memory");
        sw->runs = runs;
        sw->cap_runs = cap;
    }
    const ls_model_info *mi = &trainer_model(t)->info;
    sweep_run *r = &sw->runs[sw->n_runs++];
    memset(r, 0, sizeof *r);
    r->s = s;
    r->t = t;
    r->eval_every = eval_every;
    r->target = ss.target;
    r->st = LS_EINTR;
    r->n_leaves = mi->leaves;
    r->len = mi->leaf_len;
    r->stride = (r->len + SWEEP_ALIGN_FLOATS - 1) / SWEEP_ALIGN_FLOATS * SWEEP_ALIGN_FLOATS;
    r->phases = mi->phases;
    r->units = mi->units;
    /* The model's own count when it gives one, else a dense-layer guess. */
    double per_sample = mi->flops_per_sample > 0 ? mi->flops_per_sample : 6.0 * (double)mi->n_params;
    r->cost = per_sample * (double)trainer_config(t)->batch;
    return LS_OK;
}

size_t sweep_runs(const sweep *sw)
{
    return sw->n_runs;
}

ls_session *sweep_session(sweep *sw, size_t i)
{
    return sw->runs[i].s;
}

ls_status sweep_run_status(const sweep *sw, size_t i, ls_err *err)
{
    const sweep_run *r = &sw->runs[i];
    if (r->state == RUN_DONE)
        return LS_OK;
    if (r->state == RUN_FAILED) {
        if (err != NULL)
            *err = r->err;
        return r->st;
    }
    if (err != NULL)
        snprintf(err->msg, sizeof err->msg, "not finished");
    return LS_EINTR;
}

const ls_metric *sweep_run_metrics(const sweep *sw, size_t i, size_t *n)
{
    *n = sw->runs[i].n_metrics;
    return *n > 0 ? sw->runs[i].metrics : NULL;
}

ls_status sweep_tag(sweep *sw, const char *db_path, const char *sweep_id, ls_err *err)
{
    runlog *db;
    ls_status st = runlog_open(&db, db_path, err);
    if (st != LS_OK)
        return st;
    char threads[16];
    snprintf(threads, sizeof threads, "%d", sw->threads);
    for (size_t i = 0; i < sw->n_runs && st == LS_OK; i++) {
        ls_session_state ss;
        ls_session_state_get(sw->runs[i].s, &ss);
        if (ss.run_id < 0)
            continue;
        if ((st = runlog_setting_set(db, ss.run_id, "sweep", sweep_id, err)) == LS_OK)
            st = runlog_setting_set(db, ss.run_id, "sweep_threads", threads, err);
    }
    runlog_close(db);
    return st;
}

/* ---- planning ------------------------------------------------------------------------------ */

static int sweep_log2_floor(size_t n)
{
    int m = 0;
    while (n > 1) {
        n >>= 1;
        m++;
    }
    return m;
}

static ls_status sweep_plan(sweep *sw, ls_err *err)
{
    double total = 0;
    size_t scratch = 0, stack = 0, units = 1;
    for (size_t i = 0; i < sw->n_runs; i++)
        total += sw->runs[i].cost;
    for (size_t i = 0; i < sw->n_runs; i++) {
        sweep_run *r = &sw->runs[i];
        /* Workers this run deserves by its share of the work, doubled for
         * slack; its blocks are then cut as the reducer would for that many. */
        double share = total > 0 ? 2.0 * (double)sw->threads * r->cost / total : 1.0;
        int workers = share >= (double)sw->threads ? sw->threads : share < 1.0 ? 1 : (int)share + 1;
        if (workers > sw->threads)
            workers = sw->threads;
        r->block = tree_block_size(r->n_leaves, workers);
        r->n_blocks = (r->n_leaves + r->block - 1) / r->block;
        size_t adds = r->len * (r->n_blocks - 1);
        r->n_chunks = 0;
        if (r->n_blocks > 1 && adds >= SWEEP_INLINE_TOP) {
            r->n_chunks = (r->len + SWEEP_CHUNK_FLOATS - 1) / SWEEP_CHUNK_FLOATS;
            if (r->n_chunks > (size_t)sw->threads)
                r->n_chunks = (size_t)sw->threads;
        }
        r->blocks = aligned_alloc(64, r->n_blocks * r->stride * sizeof(float) + 64);
        r->block_loss = malloc(r->n_blocks * sizeof(double));
        if (r->blocks == NULL || r->block_loss == NULL)
            return ls_fail(err, LS_ENOMEM, "sweep: out of memory for run %zu's block sums", i);
        size_t sb = trainer_model(r->t)->info.scratch_bytes;
        if (sb > scratch)
            scratch = sb;
        size_t depth = (size_t)sweep_log2_floor(r->block);
        if (depth * r->stride > stack)
            stack = depth * r->stride;
        size_t most = r->n_blocks > r->units ? r->n_blocks : r->units;
        units += most > r->n_chunks ? most : r->n_chunks;
    }
    sw->scratch_stride = (scratch + 63) / 64 * 64;
    sw->stack_floats = stack;
    sw->scratch = aligned_alloc(64, (size_t)sw->threads * sw->scratch_stride + 64);
    sw->stacks = aligned_alloc(64, (size_t)sw->threads * sw->stack_floats * sizeof(float) + 64);
    sw->units = malloc(units * sizeof *sw->units);
    sw->order = malloc((sw->n_runs ? sw->n_runs : 1) * sizeof *sw->order);
    sw->cap_units = units;
    if (sw->scratch == NULL || sw->stacks == NULL || sw->units == NULL || sw->order == NULL)
        return ls_fail(err, LS_ENOMEM, "sweep: out of memory");
    /* Biggest first (ties in run order): the last units handed out are small. */
    for (size_t i = 0; i < sw->n_runs; i++) {
        size_t j = i;
        while (j > 0 && sw->runs[sw->order[j - 1]].cost < sw->runs[i].cost) {
            sw->order[j] = sw->order[j - 1];
            j--;
        }
        sw->order[j] = i;
    }
    sw->planned = 1;
    return LS_OK;
}

/* ---- the units ------------------------------------------------------------------------------ */

static void *sweep_scratch(const sweep *sw, int worker)
{
    return sw->scratch + (size_t)worker * sw->scratch_stride;
}

static void sweep_job_worker(void *arg, int worker, int n_workers)
{
    (void)n_workers;
    sweep_job *job = arg;
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
        if (i >= job->n)
            break;
        job->fn(job, &job->sw->units[i], worker);
    }
}

/* Runs fn on sw->units[0, n) across the pool; returns when all are done. */
static void sweep_for(sweep *sw, size_t n, sweep_unit_fn fn, size_t phase)
{
    if (n == 0)
        return;
    sweep_job job = { sw, n, fn, phase, 0 };
    atomic_init(&job.next, 0);
    if (n == 1 || sw->threads == 1)
        sweep_job_worker(&job, 0, 1);   /* the caller is worker 0 */
    else
        pool_run(sw->pool, sweep_job_worker, &job);
}

static void sweep_fail(sweep_run *r, ls_status st)
{
    r->state = RUN_FAILED;
    r->st = st;
}

static void unit_begin(sweep_job *job, const sweep_unit *u, int worker)
{
    (void)worker;
    sweep_run *r = &job->sw->runs[u->run];
    ls_err e = { "" };
    ls_status st = trainer_stage_begin(r->t, &e);
    if (st != LS_OK) {
        ls_session_state ss;
        ls_session_state_get(r->s, &ss);
        ls_fail(&r->err, st, "step %lld: %s", (long long)ss.step + 1, e.msg[0] ? e.msg : ls_strerror(st));
        sweep_fail(r, st);
    }
}

static void unit_phase(sweep_job *job, const sweep_unit *u, int worker)
{
    trainer_stage_unit(job->sw->runs[u->run].t, job->phase, u->index, sweep_scratch(job->sw, worker));
}

/* Block u->index of the run, summed by the binary-counter stream into its
 * slot: the block's sum in its own buffer, the partials below it on the
 * worker's stack. */
static void unit_block(sweep_job *job, const sweep_unit *u, int worker)
{
    sweep *sw = job->sw;
    sweep_run *r = &sw->runs[u->run];
    size_t first = u->index * r->block;
    size_t count = r->n_leaves - first < r->block ? r->n_leaves - first : r->block;
    float *bufs[TREE_MAX_DEPTH];
    int n_bufs = 1 + sweep_log2_floor(count);
    bufs[0] = r->blocks + u->index * r->stride;
    float *stack = sw->stacks + (size_t)worker * sw->stack_floats;
    for (int d = 1; d < n_bufs; d++)
        bufs[d] = stack + (size_t)(d - 1) * r->stride;
    void *scratch = sweep_scratch(sw, worker);
    tree_stream s;
    tree_stream_init(&s, bufs, n_bufs, r->len);
    for (size_t leaf = first; leaf < first + count; leaf++) {
        int mode;
        float *buf = tree_stream_slot(&s, &mode);
        tree_stream_push(&s, trainer_stage_leaf(r->t, leaf, buf, mode, scratch));
    }
    tree_stream_finish(&s, &r->block_loss[u->index]);
    /* A run of one block has its tree sum now: the rest of its step follows
     * on this worker while its buffers are still in cache. */
    if (r->n_blocks == 1)
        trainer_stage_apply(r->t, r->blocks, r->block_loss[0]);
}

/* a[i] = a[i] + b[i]: one node of the tree, as tree_add does it (an
 * element-wise IEEE sum is exact per element, so every vector width gives
 * the same bits). Local because clang resolves a multiversioned function
 * (LS_SIMD_CLONES) only inside the file that defines it. */
LS_SIMD_CLONES
static void sweep_add_into(float *restrict a, const float *restrict b, size_t n)
{
    #pragma omp simd
    for (size_t i = 0; i < n; i++)
        a[i] = a[i] + b[i];
}

/* The tree over blocks [first, first + n), coordinates [lo, hi), in place
 * into the leftmost block (lower blocks the left operand). With blocks of
 * 2^m leaves this is the canonical tree over the leaves: the tree's split
 * of a range longer than one block falls on a block boundary. */
static float *sweep_combine(const sweep_run *r, size_t first, size_t n, size_t lo, size_t hi)
{
    if (n == 1)
        return r->blocks + first * r->stride;
    size_t k = tree_split(n);
    float *a = sweep_combine(r, first, k, lo, hi);
    const float *b = sweep_combine(r, first + k, n - k, lo, hi);
    sweep_add_into(a + lo, b + lo, hi - lo);
    return a;
}

static double sweep_combine_loss(const sweep_run *r, size_t first, size_t n)
{
    if (n == 1)
        return r->block_loss[first];
    size_t k = tree_split(n);
    double a = sweep_combine_loss(r, first, k);
    double b = sweep_combine_loss(r, first + k, n - k);
    return a + b;
}

/* Chunk c of n: a 64-byte aligned slice of [0, len). */
static void sweep_chunk(size_t len, size_t c, size_t n, size_t *lo, size_t *hi)
{
    size_t units = (len + SWEEP_ALIGN_FLOATS - 1) / SWEEP_ALIGN_FLOATS;
    size_t u0 = units * c / n, u1 = units * (c + 1) / n;
    *lo = u0 * SWEEP_ALIGN_FLOATS < len ? u0 * SWEEP_ALIGN_FLOATS : len;
    *hi = u1 * SWEEP_ALIGN_FLOATS < len ? u1 * SWEEP_ALIGN_FLOATS : len;
}

static void unit_top(sweep_job *job, const sweep_unit *u, int worker)
{
    (void)worker;
    const sweep_run *r = &job->sw->runs[u->run];
    size_t lo, hi;
    sweep_chunk(r->len, u->index, r->n_chunks, &lo, &hi);
    if (lo < hi)
        sweep_combine(r, 0, r->n_blocks, lo, hi);
}

/* The rest of a run of several blocks' step: the top of its tree when it
 * is small, then finish and optimiser (trainer_stage_apply). A run of one
 * block did this in its block's unit. */
static void unit_apply(sweep_job *job, const sweep_unit *u, int worker)
{
    (void)worker;
    sweep_run *r = &job->sw->runs[u->run];
    if (r->n_blocks > 1 && r->n_chunks == 0)
        sweep_combine(r, 0, r->n_blocks, 0, r->len);
    trainer_stage_apply(r->t, r->blocks, sweep_combine_loss(r, 0, r->n_blocks));
}

static void unit_eval(sweep_job *job, const sweep_unit *u, int worker)
{
    (void)worker;
    sweep_run *r = &job->sw->runs[u->run];
    ls_err e = { "" };
    ls_status st = ls_session_evaluate(r->s, r->metrics, &r->n_metrics, &e);
    if (st != LS_OK) {
        r->err = e;
        sweep_fail(r, st);
    }
}

/* ---- the round ------------------------------------------------------------------------------ */

enum { STAGE_BEGIN = 0, STAGE_PHASE = 1, STAGE_BLOCKS = 2, STAGE_TOP = 3, STAGE_APPLY = 4, STAGE_EVAL = 5 };

static size_t sweep_list(sweep *sw, int stage, size_t phase)
{
    size_t n = 0;
    for (size_t k = 0; k < sw->n_runs; k++) {
        size_t i = sw->order[k];
        const sweep_run *r = &sw->runs[i];
        if (r->state != RUN_ACTIVE)
            continue;
        size_t m = stage == STAGE_BEGIN ? 1 : stage == STAGE_PHASE ? (r->phases > phase ? r->units : 0)
                 : stage == STAGE_BLOCKS ? r->n_blocks : stage == STAGE_TOP ? r->n_chunks
                 : stage == STAGE_APPLY ? (size_t)(r->n_blocks > 1) : (size_t)r->eval_due;
        for (size_t j = 0; j < m; j++)
            sw->units[n++] = (sweep_unit){ i, j };
    }
    return n;
}

static void sweep_round(sweep *sw)
{
    /* Prepare is the model's once-per-step work on one thread (softmaxes of
     * gate logits, say): units when some model has one; else the batch is
     * all there is, done here. */
    int prepare = 0;
    size_t max_phases = 0;
    for (size_t i = 0; i < sw->n_runs; i++) {
        const sweep_run *r = &sw->runs[i];
        if (r->state != RUN_ACTIVE)
            continue;
        prepare |= trainer_model(r->t)->desc->prepare != NULL || trainer_model(r->t)->info.prepare_parts > 0;
        if (r->phases > max_phases)
            max_phases = r->phases;
    }
    size_t n = sweep_list(sw, STAGE_BEGIN, 0);
    if (prepare) {
        sweep_for(sw, n, unit_begin, 0);
    } else {
        sweep_job job = { sw, n, unit_begin, 0, 0 };
        for (size_t i = 0; i < n; i++)
            unit_begin(&job, &sw->units[i], 0);
    }
    for (size_t p = 0; p < max_phases; p++)
        sweep_for(sw, sweep_list(sw, STAGE_PHASE, p), unit_phase, p);
    sweep_for(sw, sweep_list(sw, STAGE_BLOCKS, 0), unit_block, 0);
    sweep_for(sw, sweep_list(sw, STAGE_TOP, 0), unit_top, 0);
    sweep_for(sw, sweep_list(sw, STAGE_APPLY, 0), unit_apply, 0);

    /* Each session's step, in run order: the trainer's step is taken, so
     * this is the hashes, the record (one SQLite writer at a time) and any
     * checkpoint. */
    for (size_t i = 0; i < sw->n_runs; i++) {
        sweep_run *r = &sw->runs[i];
        if (r->state != RUN_ACTIVE)
            continue;
        ls_status st = ls_session_step(r->s, NULL, &r->err);
        if (st != LS_OK) {
            sweep_fail(r, st);
            continue;
        }
        ls_session_state ss;
        ls_session_state_get(r->s, &ss);
        r->eval_due = ss.step >= r->target || (r->eval_every > 0 && ss.step % r->eval_every == 0);
    }
    sweep_for(sw, sweep_list(sw, STAGE_EVAL, 0), unit_eval, 0);
    for (size_t i = 0; i < sw->n_runs; i++) {
        sweep_run *r = &sw->runs[i];
        if (r->state != RUN_ACTIVE)
            continue;
        r->eval_due = 0;
        ls_session_state ss;
        ls_session_state_get(r->s, &ss);
        if (ss.step >= r->target) {
            r->state = RUN_DONE;
            r->st = LS_OK;
        }
    }
}

ls_status sweep_train(sweep *sw, const volatile int *stop, void (*progress)(void *ctx, const sweep_progress *p),
                      void *ctx, ls_err *err)
{
    ls_status st;
    if (!sw->planned && (st = sweep_plan(sw, err)) != LS_OK)
        return st;
    sweep_progress pr = { .runs = sw->n_runs };
    for (;;) {
        pr.active = pr.done = pr.failed = 0;
        pr.steps = pr.target_steps = 0;
        for (size_t i = 0; i < sw->n_runs; i++) {
            const sweep_run *r = &sw->runs[i];
            ls_session_state ss;
            ls_session_state_get(r->s, &ss);
            pr.steps += ss.step;
            pr.target_steps += r->target;
            pr.active += r->state == RUN_ACTIVE;
            pr.done += r->state == RUN_DONE;
            pr.failed += r->state == RUN_FAILED;
        }
        if (pr.rounds > 0 && progress != NULL)
            progress(ctx, &pr);
        if (pr.active == 0)
            return LS_OK;
        if (stop != NULL && *stop)
            return ls_fail(err, LS_EINTR, "interrupted with %zu of %zu runs unfinished", pr.active, pr.runs);
        sweep_round(sw);
        pr.rounds++;
    }
}
