/* tree.c — the canonical tree: stream, blocks, parallel top, unordered foil.
 *
 * The reducer owns one workspace of float buffers planned before the workers
 * start (block results, then every worker's stream stack), each buffer padded
 * to a 64-byte multiple so no two workers write one cache line. Workers never
 * allocate; a plan that needs more room grows the workspace first, on the
 * calling thread.
 */
#include "reduce/tree.h"

#include "base/simd.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TREE_NONE SIZE_MAX
#define TREE_ALIGN_FLOATS 16   /* 64 bytes */

size_t tree_split(size_t n)
{
    size_t k = 1;
    while (k * 2 < n)
        k *= 2;
    return k;
}

LS_SIMD_CLONES
static void tree_add_lanes(float *restrict a, const float *restrict b, size_t n)
{
    #pragma omp simd
    for (size_t i = 0; i < n; i++)
        a[i] = a[i] + b[i];
}

/* The cloned loop stays static: clang 14 gives a function with
 * target_clones no symbol that other files' plain declarations can reach.
 * Each element is one rounded addition, so every clone gives the same bits. */
void tree_add(float *restrict a, const float *restrict b, size_t n)
{
    tree_add_lanes(a, b, n);
}

/* out[i] = a[i] + b[i]: a leaf written and its sibling added in one pass. */
LS_SIMD_CLONES
static void tree_add2(float *restrict out, const float *restrict a, const float *restrict b, size_t n)
{
    #pragma omp simd
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

/* --- stream --------------------------------------------------------------- */

void tree_stream_init(tree_stream *s, float *const *bufs, int n_bufs, size_t len)
{
    s->bufs = bufs;
    s->n_bufs = n_bufs < TREE_MAX_DEPTH ? n_bufs : TREE_MAX_DEPTH;
    s->len = len;
    s->depth = 0;
    s->high_water = 0;
    s->pending_add = 0;
}

float *tree_stream_slot(tree_stream *s, int *mode)
{
    /* A single leaf on top is the new leaf's sibling: add onto it. */
    s->pending_add = s->depth >= 1 && s->count[s->depth - 1] == 1;
    *mode = s->pending_add ? TREE_ADD : TREE_WRITE;
    if (s->pending_add)
        return s->bufs[s->depth - 1];
    return s->depth < s->n_bufs ? s->bufs[s->depth] : NULL;
}

void tree_stream_push(tree_stream *s, double leaf_loss)
{
    if (s->pending_add) {
        int top = s->depth - 1;
        s->loss[top] = s->loss[top] + leaf_loss;
        s->count[top] = 2;
        s->pending_add = 0;
    } else {
        int d = s->depth++;
        s->count[d] = 1;
        s->loss[d] = leaf_loss;
        if (s->depth > s->high_water)
            s->high_water = s->depth;
    }
    /* Binary counter: two partials of equal count are siblings in the tree. */
    while (s->depth >= 2 && s->count[s->depth - 1] == s->count[s->depth - 2]) {
        int top = s->depth - 1;
        tree_add_lanes(s->bufs[top - 1], s->bufs[top], s->len);
        s->loss[top - 1] = s->loss[top - 1] + s->loss[top];
        s->count[top - 1] += s->count[top];
        s->depth--;
    }
}

float *tree_stream_finish(tree_stream *s, double *loss)
{
    /* Unequal partials left on the stack: the right spine of the tree, folded
     * from the top so the lower leaves stay the left operand. */
    while (s->depth >= 2) {
        int top = s->depth - 1;
        tree_add_lanes(s->bufs[top - 1], s->bufs[top], s->len);
        s->loss[top - 1] = s->loss[top - 1] + s->loss[top];
        s->count[top - 1] += s->count[top];
        s->depth--;
    }
    *loss = s->loss[0];
    return s->bufs[0];
}

/* --- leaves held by the caller -------------------------------------------- */

void tree_span_sum(const float *const *leaves, size_t n, size_t lo, size_t len, float *out, float *scratch)
{
    /* The stream holds at most floor(log2 n) + 1 partials, the first in out. */
    int depth = 1;
    while (depth < TREE_MAX_DEPTH && ((size_t)1 << depth) <= n)
        depth++;
    size_t stretch = depth > 1 ? TREE_SPAN_FLOATS / (size_t)(depth - 1) / 16 * 16 : len;
    if (stretch == 0)
        stretch = 1;   /* over 2^64 leaves: cannot happen */
    float *bufs[TREE_MAX_DEPTH];
    for (size_t a = 0; a < len; a += stretch) {
        const size_t m = len - a < stretch ? len - a : stretch;
        bufs[0] = out + a;
        for (int i = 1; i < depth; i++)
            bufs[i] = scratch + (size_t)(i - 1) * stretch;
        tree_stream s;
        tree_stream_init(&s, bufs, depth, m);
        for (size_t i = 0; i < n; i++) {
            int mode;
            float *slot = tree_stream_slot(&s, &mode);
            if (mode == TREE_ADD) {
                tree_add_lanes(slot, leaves[i] + lo + a, m);
            } else if (i + 1 < n) {
                /* A leaf written is the next one's sibling (the stream then
                 * hands out TREE_ADD onto it): both in one pass, not a copy
                 * and an add. The same bits: the copy is exact. */
                tree_add2(slot, leaves[i] + lo + a, leaves[i + 1] + lo + a, m);
                tree_stream_push(&s, 0.0);
                (void)tree_stream_slot(&s, &mode);
                i++;
            } else {
                memcpy(slot, leaves[i] + lo + a, m * sizeof(float));
            }
            tree_stream_push(&s, 0.0);
        }
        double unused;
        tree_stream_finish(&s, &unused);
    }
}

double tree_loss_sum(const double *losses, size_t n)
{
    if (n == 1)
        return losses[0];
    const size_t k = tree_split(n);
    return tree_loss_sum(losses, k) + tree_loss_sum(losses + k, n - k);
}

/* --- reducer -------------------------------------------------------------- */

struct tree_reducer {
    pool *pool;
    int n_workers;
    size_t len, stride;        /* floats per buffer, and the padded distance between buffers */
    size_t n_leaves;

    float *work;               /* [cap_slots + n_workers * cap_depth][stride] */
    size_t cap_slots;          /* block-result buffers */
    size_t cap_depth;          /* stream buffers per worker besides its block's result */

    tree_block *plan;          /* [n_leaves] the default plan */
    tree_block *unit;          /* [n_leaves] one block per leaf (tree_reduce_buffers) */
    tree_block *sub;           /* [n_leaves] a rank's pieces cut into workers' blocks (tree_reduce_pieces) */
    size_t plan_blocks;
    size_t *block_at;          /* [n_leaves] index of the block starting at a leaf, or TREE_NONE */
    double *block_loss;        /* [max(n_leaves, n_workers)] */
    size_t *worker_leaves;     /* [n_workers] */
    int *worker_high;          /* [n_workers] */
    const tree_block *deferred; /* the blocks of the last tree_reduce_deferred, combined by tree_top_chunk */
    size_t deferred_blocks;
};

static float *tree_slot(const tree_reducer *r, size_t i)
{
    return r->work + i * r->stride;
}

static float *tree_stack(const tree_reducer *r, int worker, size_t d)
{
    return r->work + (r->cap_slots + (size_t)worker * r->cap_depth + d) * r->stride;
}

static int tree_log2_floor(size_t n)
{
    int m = 0;
    while (n > 1) {
        n >>= 1;
        m++;
    }
    return m;
}

/* Grow the workspace (on the calling thread) to hold slots block results and
 * depth stream buffers per worker. Contents are not kept. */
static ls_status tree_reserve(tree_reducer *r, size_t slots, size_t depth, ls_err *err)
{
    if (slots <= r->cap_slots && depth <= r->cap_depth)
        return LS_OK;
    if (slots < r->cap_slots)
        slots = r->cap_slots;
    if (depth < r->cap_depth)
        depth = r->cap_depth;
    size_t n_bufs = slots + (size_t)r->n_workers * depth;
    if (r->stride != 0 && n_bufs > SIZE_MAX / sizeof(float) / r->stride)
        return ls_fail(err, LS_ENOMEM, "reduce: workspace too large");
    size_t bytes = n_bufs * r->stride * sizeof(float);
    float *work = aligned_alloc(64, bytes > 0 ? bytes : 64);
    if (work == NULL)
        return ls_fail(err, LS_ENOMEM, "reduce: cannot allocate %zu bytes of workspace", bytes);
    free(r->work);
    r->work = work;
    r->cap_slots = slots;
    r->cap_depth = depth;
    return LS_OK;
}

/* Leaves the busiest worker computes when blocks of bs leaves are handed out
 * round-robin. */
static size_t tree_max_load(size_t n_leaves, size_t n_workers, size_t bs)
{
    size_t n_blocks = (n_leaves + bs - 1) / bs, worst = 0;
    for (size_t w = 0; w < n_workers && w < n_blocks; w++) {
        size_t load = 0;
        for (size_t b = w; b < n_blocks; b += n_workers)
            load += n_leaves - b * bs < bs ? n_leaves - b * bs : bs;
        if (load > worst)
            worst = load;
    }
    return worst;
}

size_t tree_block_size(size_t n_leaves, int n_workers)
{
    /* The largest block size whose busiest worker has no more leaves than
     * with blocks of one leaf: big blocks keep merges inside a worker's
     * stream (where a leaf can be added straight onto its sibling), small
     * ones balance the load. */
    size_t nw = n_workers < 1 ? 1 : (size_t)n_workers;
    size_t best = 1, target = tree_max_load(n_leaves, nw, 1);
    for (size_t bs = 2; bs / 2 < n_leaves; bs *= 2)
        if (tree_max_load(n_leaves, nw, bs) <= target)
            best = bs;
    return best;
}

ls_status tree_reducer_create(tree_reducer **out, pool *p, size_t len, size_t n_leaves, ls_err *err)
{
    *out = NULL;
    if (n_leaves == 0)
        return ls_fail(err, LS_EINVAL, "reduce: no leaves");
    int nw = pool_threads(p);
    /* block_loss holds a loss per block, and in the unordered foil one per
     * worker: more workers than leaves must not run past it. */
    const size_t n_losses = n_leaves > (size_t)nw ? n_leaves : (size_t)nw;
    size_t bytes = sizeof(tree_reducer) + n_leaves * (3 * sizeof(tree_block) + sizeof(size_t)) +
                   n_losses * sizeof(double) + (size_t)nw * (sizeof(size_t) + sizeof(int));
    tree_reducer *r = calloc(1, bytes);
    if (r == NULL)
        return ls_fail(err, LS_ENOMEM, "reduce: out of memory");
    r->pool = p;
    r->n_workers = nw;
    r->len = len;
    r->stride = (len + TREE_ALIGN_FLOATS - 1) / TREE_ALIGN_FLOATS * TREE_ALIGN_FLOATS;
    r->n_leaves = n_leaves;
    r->plan = (tree_block *)(r + 1);
    r->unit = r->plan + n_leaves;
    r->sub = r->unit + n_leaves;
    r->block_at = (size_t *)(r->sub + n_leaves);
    r->block_loss = (double *)(r->block_at + n_leaves);
    r->worker_leaves = (size_t *)(r->block_loss + n_losses);
    r->worker_high = (int *)(r->worker_leaves + nw);

    for (size_t i = 0; i < n_leaves; i++) {
        r->unit[i].first = i;
        r->unit[i].count = 1;
    }
    /* Blocks sized for the threads that run at once: with more threads than
     * CPUs, smaller blocks would only mean more buffers and merges (any plan
     * gives the same bits). */
    size_t bs = tree_block_size(n_leaves, pool_active(p));
    for (size_t first = 0; first < n_leaves; first += bs) {
        r->plan[r->plan_blocks].first = first;
        r->plan[r->plan_blocks].count = n_leaves - first < bs ? n_leaves - first : bs;
        r->plan_blocks++;
    }
    size_t depth = (size_t)tree_log2_floor(bs);
    size_t slots = r->plan_blocks > (size_t)nw ? r->plan_blocks : (size_t)nw;
    ls_status st = tree_reserve(r, slots, depth, err);
    if (st != LS_OK) {
        tree_reducer_destroy(r);
        return st;
    }
    *out = r;
    return LS_OK;
}

void tree_reducer_destroy(tree_reducer *r)
{
    if (r == NULL)
        return;
    free(r->work);
    free(r);
}

const size_t *tree_worker_leaves(const tree_reducer *r)
{
    return r->worker_leaves;
}

int tree_high_water(const tree_reducer *r)
{
    int h = 0;
    for (int w = 0; w < r->n_workers; w++)
        if (r->worker_high[w] > h)
            h = r->worker_high[w];
    return h;
}

/* Checks that blocks partition [0, n) into aligned blocks and fills block_at. */
static ls_status tree_check_plan(tree_reducer *r, const tree_block *blocks, size_t n_blocks, ls_err *err)
{
    size_t n = r->n_leaves;
    for (size_t l = 0; l < n; l++)
        r->block_at[l] = TREE_NONE;
    for (size_t i = 0; i < n_blocks; i++) {
        size_t first = blocks[i].first, count = blocks[i].count;
        if (count == 0 || first >= n || count > n - first)
            return ls_fail(err, LS_EINVAL, "reduce: block %zu [%zu, +%zu) is outside 0..%zu", i, first, count, n);
        size_t p = 1;
        while (p < count)
            p *= 2;
        if (first % p != 0 || (p != count && first + count != n))
            return ls_fail(err, LS_EINVAL, "reduce: block %zu [%zu, +%zu) is not an aligned block", i, first, count);
        if (r->block_at[first] != TREE_NONE)
            return ls_fail(err, LS_EINVAL, "reduce: two blocks start at leaf %zu", first);
        r->block_at[first] = i;
    }
    size_t seen = 0, l = 0;
    while (l < n) {
        size_t i = r->block_at[l];
        if (i == TREE_NONE)
            return ls_fail(err, LS_EINVAL, "reduce: leaf %zu is in no block (or blocks overlap)", l);
        l += blocks[i].count;
        seen++;
    }
    if (l != n || seen != n_blocks)
        return ls_fail(err, LS_EINVAL, "reduce: blocks overlap");
    return LS_OK;
}

typedef struct {
    tree_reducer *r;
    const tree_block *blocks;
    size_t n_blocks;
    tree_leaf_fn fn;
    void *ctx;
    float *result;      /* set for the combine phase */
    float *const *bufs; /* block results given by the caller instead of the reducer's slots */
    const double *losses;
} tree_job;

static float *tree_block_buf(const tree_job *job, size_t i)
{
    return job->bufs != NULL ? job->bufs[i] : tree_slot(job->r, i);
}

static void tree_blocks_worker(void *arg, int worker, int n_workers)
{
    tree_job *job = arg;
    tree_reducer *r = job->r;
    float *bufs[TREE_MAX_DEPTH];
    size_t leaves = 0;
    int high = 0;
    for (size_t i = (size_t)worker; i < job->n_blocks; i += (size_t)n_workers) {
        const tree_block *b = &job->blocks[i];
        bufs[0] = tree_slot(r, i);
        int n_bufs = 1 + tree_log2_floor(b->count);
        for (int d = 1; d < n_bufs; d++)
            bufs[d] = tree_stack(r, worker, (size_t)d - 1);
        tree_stream s;
        tree_stream_init(&s, bufs, n_bufs, r->len);
        for (size_t leaf = b->first; leaf < b->first + b->count; leaf++) {
            int mode;
            float *buf = tree_stream_slot(&s, &mode);
            tree_stream_push(&s, job->fn(job->ctx, leaf, buf, mode, worker));
        }
        tree_stream_finish(&s, &r->block_loss[i]);
        leaves += b->count;
        if (s.high_water > high)
            high = s.high_water;
    }
    r->worker_leaves[worker] = leaves;
    r->worker_high[worker] = high;
}

/* sum(l, n) restricted to coordinates [lo, hi), in place into the block
 * buffer of the leftmost block; returns that buffer. */
static float *tree_combine(const tree_job *job, size_t l, size_t n, size_t lo, size_t hi)
{
    const tree_reducer *r = job->r;
    size_t i = r->block_at[l];
    if (i != TREE_NONE && job->blocks[i].count == n)
        return tree_block_buf(job, i);
    size_t k = tree_split(n);
    float *a = tree_combine(job, l, k, lo, hi);
    float *b = tree_combine(job, l + k, n - k, lo, hi);
    tree_add_lanes(a + lo, b + lo, hi - lo);
    return a;
}

static double tree_combine_loss(const tree_job *job, size_t l, size_t n)
{
    const tree_reducer *r = job->r;
    size_t i = r->block_at[l];
    if (i != TREE_NONE && job->blocks[i].count == n)
        return job->losses != NULL ? job->losses[i] : r->block_loss[i];
    size_t k = tree_split(n);
    double a = tree_combine_loss(job, l, k);
    double b = tree_combine_loss(job, l + k, n - k);
    return a + b;
}

/* Chunk w of n_workers: a 64-byte aligned slice of [0, len). */
static void tree_chunk(size_t len, int worker, int n_workers, size_t *lo, size_t *hi)
{
    size_t units = (len + TREE_ALIGN_FLOATS - 1) / TREE_ALIGN_FLOATS;
    size_t u0 = units * (size_t)worker / (size_t)n_workers;
    size_t u1 = units * (size_t)(worker + 1) / (size_t)n_workers;
    *lo = u0 * TREE_ALIGN_FLOATS < len ? u0 * TREE_ALIGN_FLOATS : len;
    *hi = u1 * TREE_ALIGN_FLOATS < len ? u1 * TREE_ALIGN_FLOATS : len;
}

static void tree_top_worker(void *arg, int worker, int n_workers)
{
    tree_job *job = arg;
    size_t lo, hi;
    tree_chunk(job->r->len, worker, n_workers, &lo, &hi);
    float *res = tree_combine(job, 0, job->r->n_leaves, lo, hi);
    if (worker == 0)
        job->result = res;
}

/* The blocks of a plan summed, their loss combined; with sum != NULL the
 * blocks combined too (else tree_top_chunk does it, chunk by chunk). */
static ls_status tree_reduce_run(tree_reducer *r, const tree_block *blocks, size_t n_blocks, tree_leaf_fn fn,
                                 void *ctx, const float **sum, double *loss)
{
    r->deferred = NULL;
    ls_err err;
    ls_status st = tree_check_plan(r, blocks, n_blocks, &err);
    if (st != LS_OK)
        return st;
    size_t depth = 0;
    for (size_t i = 0; i < n_blocks; i++) {
        size_t d = (size_t)tree_log2_floor(blocks[i].count);
        if (d > depth)
            depth = d;
    }
    st = tree_reserve(r, n_blocks, depth, &err);
    if (st != LS_OK)
        return st;
    tree_job job = { r, blocks, n_blocks, fn, ctx, NULL, NULL, NULL };
    pool_run(r->pool, tree_blocks_worker, &job);
    *loss = tree_combine_loss(&job, 0, r->n_leaves);
    r->deferred = sum == NULL ? blocks : NULL;
    r->deferred_blocks = n_blocks;
    if (sum == NULL)
        return LS_OK;
    if (n_blocks == 1) {
        job.result = tree_slot(r, 0);
    } else {
        pool_run(r->pool, tree_top_worker, &job);
    }
    *sum = job.result;
    return LS_OK;
}

ls_status tree_reduce_plan(tree_reducer *r, const tree_block *blocks, size_t n_blocks,
                           tree_leaf_fn fn, void *ctx, const float **sum, double *loss)
{
    return tree_reduce_run(r, blocks, n_blocks, fn, ctx, sum, loss);
}

ls_status tree_reduce(tree_reducer *r, tree_leaf_fn fn, void *ctx, const float **sum, double *loss)
{
    return tree_reduce_run(r, r->plan, r->plan_blocks, fn, ctx, sum, loss);
}

ls_status tree_reduce_deferred(tree_reducer *r, tree_leaf_fn fn, void *ctx, double *loss)
{
    return tree_reduce_run(r, r->plan, r->plan_blocks, fn, ctx, NULL, loss);
}

const float *tree_top_chunk(tree_reducer *r, size_t lo, size_t hi)
{
    if (r->deferred == NULL)
        return NULL;
    if (r->deferred_blocks == 1)
        return tree_slot(r, 0);   /* one block: its stream already summed every leaf */
    tree_job job = { r, r->deferred, r->deferred_blocks, NULL, NULL, NULL, NULL, NULL };
    return tree_combine(&job, 0, r->n_leaves, lo < r->len ? lo : r->len, hi < r->len ? hi : r->len);
}

int tree_top_halves(tree_reducer *r, size_t lo, size_t hi, const float **a, const float **b)
{
    if (r->deferred == NULL || r->deferred_blocks == 1)
        return 0;
    const size_t n = r->n_leaves, i = r->block_at[0];
    if (i != TREE_NONE && r->deferred[i].count == n)
        return 0;   /* one block holds every leaf (tree_combine's first case) */
    tree_job job = { r, r->deferred, r->deferred_blocks, NULL, NULL, NULL, NULL, NULL };
    lo = lo < r->len ? lo : r->len;
    hi = hi < r->len ? hi : r->len;
    const size_t k = tree_split(n);   /* tree_combine's split at the top */
    *a = tree_combine(&job, 0, k, lo, hi);
    *b = tree_combine(&job, k, n - k, lo, hi);
    return 1;
}

ls_status tree_reduce_buffers(tree_reducer *r, float *const *bufs, const double *losses, const float **sum,
                              double *loss)
{
    r->deferred = NULL;   /* block_at is rewritten: nothing is left to tree_top_chunk */
    /* Every leaf is its own block. */
    size_t n = r->n_leaves;
    for (size_t i = 0; i < n; i++)
        r->block_at[i] = i;
    tree_job job = { r, r->unit, n, NULL, NULL, NULL, bufs, losses };
    if (n == 1)
        job.result = bufs[0];
    else
        pool_run(r->pool, tree_top_worker, &job);
    *sum = job.result;
    *loss = tree_combine_loss(&job, 0, n);
    return LS_OK;
}

/* --- the unordered foil --------------------------------------------------- */

typedef struct {
    tree_reducer *r;
    tree_leaf_fn fn;
    void *ctx;
    int base;            /* first worker that had leaves */
} tree_unordered_job;

static void tree_unordered_leaves(void *arg, int worker, int n_workers)
{
    tree_unordered_job *job = arg;
    tree_reducer *r = job->r;
    size_t l0 = r->n_leaves * (size_t)worker / (size_t)n_workers;
    size_t l1 = r->n_leaves * (size_t)(worker + 1) / (size_t)n_workers;
    float *acc = tree_slot(r, (size_t)worker);
    double loss = 0.0;
    for (size_t leaf = l0; leaf < l1; leaf++) {
        double l = job->fn(job->ctx, leaf, acc, leaf == l0 ? TREE_WRITE : TREE_ADD, worker);
        loss = leaf == l0 ? l : loss + l;
    }
    r->block_loss[worker] = loss;
    r->worker_leaves[worker] = l1 - l0;
    r->worker_high[worker] = l1 > l0 ? 1 : 0;
}

static void tree_unordered_top(void *arg, int worker, int n_workers)
{
    tree_unordered_job *job = arg;
    tree_reducer *r = job->r;
    size_t lo, hi;
    tree_chunk(r->len, worker, n_workers, &lo, &hi);
    float *acc = tree_slot(r, (size_t)job->base);
    for (int w = job->base + 1; w < n_workers; w++)
        if (r->worker_leaves[w] > 0)
            tree_add_lanes(acc + lo, tree_slot(r, (size_t)w) + lo, hi - lo);
}

ls_status tree_reduce_unordered(tree_reducer *r, tree_leaf_fn fn, void *ctx, const float **sum,
                                double *loss)
{
    r->deferred = NULL;
    ls_err err;
    ls_status st = tree_reserve(r, (size_t)r->n_workers, 0, &err);
    if (st != LS_OK)
        return st;
    tree_unordered_job job = { r, fn, ctx, 0 };
    pool_run(r->pool, tree_unordered_leaves, &job);
    while (r->worker_leaves[job.base] == 0)
        job.base++;
    pool_run(r->pool, tree_unordered_top, &job);
    double total = r->block_loss[job.base];
    for (int w = job.base + 1; w < r->n_workers; w++)
        if (r->worker_leaves[w] > 0)
            total = total + r->block_loss[w];
    *sum = tree_slot(r, (size_t)job.base);
    *loss = total;
    return LS_OK;
}

/* --- ranks ---------------------------------------------------------------- */

/* Leaves of the busiest rank when blocks of g leaves are dealt out
 * contiguously: rank r takes blocks [nb·r/R, nb·(r+1)/R). */
static size_t tree_rank_load(size_t n_leaves, size_t ranks, size_t g, size_t r, size_t *lo, size_t *hi)
{
    size_t nb = (n_leaves + g - 1) / g;
    size_t b0 = nb * r / ranks, b1 = nb * (r + 1) / ranks;
    *lo = b0 * g < n_leaves ? b0 * g : n_leaves;
    *hi = b1 * g < n_leaves ? b1 * g : n_leaves;
    return *hi - *lo;
}

static size_t tree_rank_max_load(size_t n_leaves, size_t ranks, size_t g)
{
    size_t worst = 0, lo, hi;
    for (size_t r = 0; r < ranks; r++) {
        size_t load = tree_rank_load(n_leaves, ranks, g, r, &lo, &hi);
        if (load > worst)
            worst = load;
    }
    return worst;
}

size_t tree_rank_pieces(size_t n_leaves, int ranks, tree_block *pieces, size_t *first)
{
    size_t R = ranks < 1 ? 1 : (size_t)ranks;
    /* Bigger blocks mean fewer pieces per rank (fewer buffers to send), as
     * long as the busiest rank gets no more leaves than with single leaves. */
    size_t g = 1, target = tree_rank_max_load(n_leaves, R, 1);
    for (size_t c = 2; c / 2 < n_leaves; c *= 2)
        if (tree_rank_max_load(n_leaves, R, c) <= target)
            g = c;
    size_t top = 1;   /* a power of two >= n_leaves: the alignment of leaf 0 */
    while (top < n_leaves)
        top *= 2;
    size_t n = 0;
    for (size_t r = 0; r < R; r++) {
        first[r] = n;
        size_t l, b;
        tree_rank_load(n_leaves, R, g, r, &l, &b);
        while (l < b) {
            /* The largest aligned block starting at l: a partial last block
             * when it reaches the end of the leaves, else one inside [l, b). */
            size_t p = l == 0 ? top : (l & (~l + 1));
            if (b == n_leaves && l + p >= n_leaves) {
                pieces[n++] = (tree_block){ l, n_leaves - l };
                break;
            }
            while (l + p > b)
                p /= 2;
            pieces[n++] = (tree_block){ l, p };
            l += p;
        }
    }
    first[R] = n;
    return n;
}

/* Sums the pieces' sub-blocks in parallel over chunks of the buffer. */
typedef struct {
    tree_job job;
    const tree_block *pieces;
    size_t n_pieces;
} tree_pieces_job;

static void tree_pieces_top_worker(void *arg, int worker, int n_workers)
{
    tree_pieces_job *pj = arg;
    size_t lo, hi;
    tree_chunk(pj->job.r->len, worker, n_workers, &lo, &hi);
    for (size_t i = 0; i < pj->n_pieces; i++)
        tree_combine(&pj->job, pj->pieces[i].first, pj->pieces[i].count, lo, hi);
}

ls_status tree_reduce_pieces(tree_reducer *r, const tree_block *pieces, size_t n_pieces, tree_leaf_fn fn,
                             void *ctx, float **sums, double *losses)
{
    r->deferred = NULL;
    ls_err err;
    size_t mine = 0;
    for (size_t i = 0; i < n_pieces; i++)
        mine += pieces[i].count;
    /* Each piece is cut into the blocks the workers take: the size the
     * default plan would use for this many leaves, at most the piece's own
     * (a power of two no smaller than the piece, by which it is aligned). */
    size_t bs = tree_block_size(mine > 0 ? mine : 1, r->n_workers), n_sub = 0, depth = 0;
    for (size_t l = 0; l < r->n_leaves; l++)
        r->block_at[l] = TREE_NONE;
    for (size_t i = 0; i < n_pieces; i++) {
        const tree_block *pc = &pieces[i];
        if (pc->count == 0 || pc->first >= r->n_leaves || pc->count > r->n_leaves - pc->first)
            return LS_EINVAL;
        size_t p = 1;
        while (p < pc->count)
            p *= 2;
        size_t b = bs < p ? bs : p;
        if (pc->first % p != 0 || (p != pc->count && pc->first + pc->count != r->n_leaves))
            return LS_EINVAL;
        for (size_t f = pc->first; f < pc->first + pc->count; f += b) {
            size_t end = pc->first + pc->count;
            r->sub[n_sub] = (tree_block){ f, end - f < b ? end - f : b };
            if (r->block_at[f] != TREE_NONE)
                return LS_EINVAL;
            r->block_at[f] = n_sub++;
        }
        size_t d = (size_t)tree_log2_floor(b);
        if (d > depth)
            depth = d;
    }
    ls_status st = tree_reserve(r, n_sub, depth, &err);
    if (st != LS_OK)
        return st;
    tree_pieces_job pj = { { r, r->sub, n_sub, fn, ctx, NULL, NULL, NULL }, pieces, n_pieces };
    if (n_sub > 0)
        pool_run(r->pool, tree_blocks_worker, &pj.job);
    if (n_sub > n_pieces)
        pool_run(r->pool, tree_pieces_top_worker, &pj);
    for (size_t i = 0; i < n_pieces; i++) {
        sums[i] = tree_slot(r, r->block_at[pieces[i].first]);
        losses[i] = tree_combine_loss(&pj.job, pieces[i].first, pieces[i].count);
    }
    return LS_OK;
}

typedef struct {
    const tree_block *blocks;
    size_t n_blocks;
    float *const *bufs;
    size_t len;
    const double *losses;
} tree_top;

/* The block starting at leaf l with count n, or TREE_NONE (blocks sorted). */
static size_t tree_top_find(const tree_top *t, size_t l, size_t n)
{
    size_t a = 0, b = t->n_blocks;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (t->blocks[m].first < l)
            a = m + 1;
        else
            b = m;
    }
    return a < t->n_blocks && t->blocks[a].first == l && t->blocks[a].count == n ? a : TREE_NONE;
}

/* sum(l, n) over the blocks, in place into the leftmost block's buffer. */
static float *tree_top_combine(const tree_top *t, size_t l, size_t n, double *loss)
{
    size_t i = tree_top_find(t, l, n);
    if (i != TREE_NONE) {
        *loss = t->losses[i];
        return t->bufs != NULL ? t->bufs[i] : NULL;
    }
    size_t k = tree_split(n);
    double la, lb;
    float *a = tree_top_combine(t, l, k, &la);
    float *b = tree_top_combine(t, l + k, n - k, &lb);
    if (a != NULL)
        tree_add_lanes(a, b, t->len);
    *loss = la + lb;
    return a;
}

ls_status tree_combine_blocks(size_t n_leaves, const tree_block *blocks, size_t n_blocks, float *const *bufs,
                              size_t len, const double *losses, float **sum, double *loss, ls_err *err)
{
    /* Every recursion step must end on a block: a partition of [0, n) into
     * aligned blocks in leaf order guarantees it. */
    size_t l = 0;
    for (size_t i = 0; i < n_blocks; i++) {
        size_t first = blocks[i].first, count = blocks[i].count, p = 1;
        while (p < count)
            p *= 2;
        if (first != l || count == 0 || count > n_leaves - first || first % p != 0 ||
            (p != count && first + count != n_leaves))
            return ls_fail(err, LS_EINVAL, "reduce: block %zu [%zu, +%zu) does not continue an aligned partition "
                           "of %zu leaves", i, first, count, n_leaves);
        l += count;
    }
    if (l != n_leaves || n_leaves == 0)
        return ls_fail(err, LS_EINVAL, "reduce: the blocks cover %zu of %zu leaves", l, n_leaves);
    tree_top t = { blocks, n_blocks, bufs, bufs != NULL ? len : 0, losses };
    float *res = tree_top_combine(&t, 0, n_leaves, loss);
    if (sum != NULL)
        *sum = res;
    return LS_OK;
}
