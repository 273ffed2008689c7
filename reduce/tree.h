/* tree.h — the canonical tree that sums leaf buffers (docs/contract.md, the canonical tree).
 *
 *     sum(l, n) = leaf(l)                           if n == 1
 *               = sum(l, k) + sum(l + k, n - k)     k = largest power of two < n
 *
 * Each node adds two buffers element by element (left operand the lower
 * leaves) and two binary64 losses. The tree depends only on the number of
 * leaves, never on threads: work is cut into aligned power-of-two blocks of
 * leaves (each a subtree), a worker sums its block with the binary-counter
 * stream (at most floor(log2 count) + 1 partial buffers), and the block
 * results are combined along the same tree, in parallel over chunks of the
 * buffer (a chunk split changes no coordinate's arithmetic).
 *
 * Knows nothing of models: a leaf is computed by a callback.
 * tree_reduce_unordered is the benchmark's foil: per-worker accumulators
 * combined in worker order, whose bits depend on the thread count.
 */
#ifndef LS_TREE_H
#define LS_TREE_H

#include <stddef.h>

#include "reduce/pool.h"
#include "include/lockstep.h"

#define TREE_MAX_DEPTH 64

/* Largest power of two strictly below n; n >= 2. */
size_t tree_split(size_t n);

/* a[i] = a[i] + b[i] for i in [0, n). */
void tree_add(float *a, const float *b, size_t n);

/* How a leaf is computed into the buffer it is handed.
 *   TREE_WRITE  buf = leaf
 *   TREE_ADD    buf = buf + leaf, where the leaf is summed on its own first
 *               and then added, element by element, as a right operand.
 * The stream hands out TREE_ADD when the new leaf's sibling is the single
 * leaf on top of the stack: the same bits as a WRITE and then a merge, with
 * one buffer and one pass over it fewer. The unordered foil uses it to add
 * each leaf onto a worker's accumulator. */
enum { TREE_WRITE = 0, TREE_ADD = 1 };

/* --- atoms of binary64 values (a leaf's loss) ------------------------------ */
/* The canonical tree over atoms (include/lockstep.h) for one binary64 value
 * per sample: tree_atoms_add for each sample in order, tree_atoms_end for
 * the sum (0.0 when no sample was added). An atom's sum starts at 0.0 and
 * adds its samples in order; a finished atom merges into the stack while
 * the two newest partials cover equal numbers of atoms. A leaf of
 * LS_ATOM·2^m samples gives its subtree's sum, as the kernels do for the
 * gradient. */
typedef struct {
    double part[TREE_MAX_DEPTH];
    int depth;
    size_t atoms;          /* atoms finished */
    size_t in_atom;        /* samples in the open atom */
    double open;
} tree_atoms;

static inline void tree_atoms_init(tree_atoms *t)
{
    t->depth = 0;
    t->atoms = 0;
    t->in_atom = 0;
    t->open = 0.0;
}

static inline void tree_atoms_close_(tree_atoms *t)
{
    t->part[t->depth++] = t->open;
    for (size_t j = t->atoms; j & 1; j >>= 1, t->depth--)
        t->part[t->depth - 2] = t->part[t->depth - 2] + t->part[t->depth - 1];
    t->atoms++;
    t->in_atom = 0;
    t->open = 0.0;
}

static inline void tree_atoms_add(tree_atoms *t, double v)
{
    t->open = t->open + v;
    if (++t->in_atom == LS_ATOM)
        tree_atoms_close_(t);
}

static inline double tree_atoms_end(tree_atoms *t)
{
    if (t->in_atom > 0)
        tree_atoms_close_(t);
    if (t->depth == 0)
        return 0.0;
    for (; t->depth > 1; t->depth--)
        t->part[t->depth - 2] = t->part[t->depth - 2] + t->part[t->depth - 1];
    return t->part[0];
}

/* --- the binary-counter stream ------------------------------------------- */
/* Partial i always lives in bufs[i]: a merge writes into the lower (older)
 * buffer, so no copy is ever needed, and the result ends in bufs[0]. */
typedef struct {
    float *const *bufs;            /* n_bufs buffers of len floats */
    int n_bufs;
    size_t len;
    int depth;                     /* partials held */
    int pending_add;               /* the slot handed out was TREE_ADD onto the top */
    int high_water;                /* most partials held at once (a leaf in its slot counts) */
    size_t count[TREE_MAX_DEPTH];  /* leaves covered by each partial */
    double loss[TREE_MAX_DEPTH];
} tree_stream;

void tree_stream_init(tree_stream *s, float *const *bufs, int n_bufs, size_t len);
/* The buffer the next leaf goes into and how (*mode: TREE_WRITE into
 * bufs[depth], or TREE_ADD onto the top partial when that is a single leaf);
 * NULL when all n_bufs are in use (cannot happen with floor(log2 n) + 1
 * buffers for n leaves). */
float *tree_stream_slot(tree_stream *s, int *mode);
/* The leaf in the slot is complete: merge the two top partials while they
 * cover equal counts. */
void tree_stream_push(tree_stream *s, double leaf_loss);
/* Fold the stack from the top; the sum is in bufs[0], its loss in *loss.
 * At least one leaf must have been pushed. */
float *tree_stream_finish(tree_stream *s, double *loss);

/* --- block-parallel reduction ------------------------------------------- */
/* Computes leaf `leaf` into buf as mode says (TREE_WRITE or TREE_ADD);
 * returns the leaf's own loss. Called on worker `worker`. */
typedef double (*tree_leaf_fn)(void *ctx, size_t leaf, float *buf, int mode, int worker);

/* An aligned block: first % 2^m == 0 and count == 2^m, or the partial last
 * block (first % 2^m == 0, first + count == n_leaves, count < 2^m). */
typedef struct {
    size_t first, count;
} tree_block;

typedef struct tree_reducer tree_reducer;

/* len floats per buffer; n_leaves per reduction (fixed for a run). */
ls_status tree_reducer_create(tree_reducer **out, pool *p, size_t len, size_t n_leaves, ls_err *err);
void tree_reducer_destroy(tree_reducer *r);   /* accepts NULL */

/* The block size the default plan uses: the largest power of two whose
 * round-robin hand-out loads the busiest worker no more than blocks of one
 * leaf would (so a thread count that does not divide the work stays
 * balanced, and merges stay inside workers' streams where they can). */
size_t tree_block_size(size_t n_leaves, int n_workers);

/* Sum every leaf along the canonical tree with the default plan. *sum points
 * into the reducer (valid until the next call). */
ls_status tree_reduce(tree_reducer *r, tree_leaf_fn fn, void *ctx, const float **sum, double *loss);
/* The same with an explicit plan: blocks in hand-out order, block at position
 * i to pool_run slice i % n_workers. The blocks must partition [0, n_leaves) into
 * aligned blocks (else LS_EINVAL). Any valid plan gives the same bits. */
ls_status tree_reduce_plan(tree_reducer *r, const tree_block *blocks, size_t n_blocks,
                           tree_leaf_fn fn, void *ctx, const float **sum, double *loss);
/* tree_reduce without its last pass: the leaves summed into the blocks of
 * the default plan and *loss final, but the blocks not yet combined; the
 * caller combines them where it reads the sum, chunk by chunk:
 * tree_top_chunk(r, lo, hi) combines coordinates [lo, hi) in place and
 * returns the buffer that holds the sum (the same for every chunk; only
 * [lo, hi) of it is meant). Chunks may run on any threads at once, each
 * coordinate in exactly one chunk, until the next reduction; a chunk split
 * changes no coordinate's arithmetic, so the bits are tree_reduce's.
 * tree_top_chunk returns NULL when the last reduction was not deferred. */
ls_status tree_reduce_deferred(tree_reducer *r, tree_leaf_fn fn, void *ctx, double *loss);
const float *tree_top_chunk(tree_reducer *r, size_t lo, size_t hi);
/* tree_top_chunk without its very last addition, for a caller that does it
 * where it reads the sum (the optimiser: optim_update_sum): when the last
 * deferred reduction had two blocks or more, combines the tree's two
 * halves at [lo, hi) in place and sets *a and *b to them (the left half's
 * buffer and the right's: coordinate i of the sum is a[i] + b[i], one
 * float addition, as tree_top_chunk makes it) and returns 1; else returns
 * 0 and sets neither (one block, or nothing deferred: tree_top_chunk). */
int tree_top_halves(tree_reducer *r, size_t lo, size_t hi, const float **a, const float **b);
/* Sum leaf buffers that already exist (models that compute a whole batch in
 * phases): bufs[i] holds leaf i (n_leaves of them, len floats each), losses[i]
 * its loss. Combined along the canonical tree in parallel over chunks, in
 * place: the buffers are overwritten and *sum points into one of them. */
ls_status tree_reduce_buffers(tree_reducer *r, float *const *bufs, const double *losses, const float **sum,
                              double *loss);
/* Leaves that already exist, read where they are (a model's own buffers,
 * ls_model_desc.leaf_held): out[0 .. len) = the canonical tree over
 * coordinates [lo, lo + len) of leaves[0 .. n), n >= 1, with the
 * binary-counter stream, a stretch of coordinates at a time (its partials
 * in `scratch`, TREE_SPAN_FLOATS floats of the caller's, 64-byte aligned;
 * the result built in out): the bits tree_reduce gives at those
 * coordinates. Any thread, any split of the coordinates. */
#define TREE_SPAN_FLOATS 8192
void tree_span_sum(const float *const *leaves, size_t n, size_t lo, size_t len, float *out, float *scratch);
/* The canonical tree over n >= 1 binary64 losses: tree_reduce's loss. */
double tree_loss_sum(const double *losses, size_t n);

/* Benchmark foil: worker w sums leaves [w·n/T, (w+1)·n/T) into its own
 * accumulator; accumulators are added in worker order. Bits depend on T. */
ls_status tree_reduce_unordered(tree_reducer *r, tree_leaf_fn fn, void *ctx, const float **sum,
                                double *loss);

/* --- ranks: one reduction over several processes -------------------------- */
/* How `ranks` processes share n_leaves leaves (a pure function of the two):
 * the leaves are dealt out contiguously in aligned blocks of g leaves, g the
 * largest power of two that loads the busiest rank no more than blocks of
 * one leaf would, and each rank's range is cut into the fewest aligned
 * blocks ("pieces", each a subtree of the canonical tree). Writes the
 * pieces in leaf order into pieces[] (room for n_leaves) and rank r's
 * pieces are [first[r], first[r + 1]) (first has ranks + 1 entries; a rank
 * may have none when ranks > n_leaves). Returns the number of pieces. */
size_t tree_rank_pieces(size_t n_leaves, int ranks, tree_block *pieces, size_t *first);

/* Sum only the leaves of the given pieces (aligned blocks of [0, n_leaves),
 * disjoint, in leaf order), each along its subtree of the canonical tree,
 * with the pool's workers. sums[i] receives a pointer to piece i's sum
 * (inside the reducer, valid until the next call), losses[i] its loss. */
ls_status tree_reduce_pieces(tree_reducer *r, const tree_block *pieces, size_t n_pieces, tree_leaf_fn fn,
                             void *ctx, float **sums, double *losses);

/* The top of the canonical tree over block sums that already exist, on
 * one thread: blocks partition [0, n_leaves) into aligned blocks, in leaf
 * order (else LS_EINVAL); bufs[i] holds len floats of block i's sum — any
 * slice of the buffer, as a slice changes no coordinate's arithmetic — and
 * losses[i] its loss. Combined in place: *sum points to the buffer holding
 * the sum (one of bufs), *loss is the loss's tree sum. bufs may be NULL
 * (len 0) to combine the losses alone. */
ls_status tree_combine_blocks(size_t n_leaves, const tree_block *blocks, size_t n_blocks, float *const *bufs,
                              size_t len, const double *losses, float **sum, double *loss, ls_err *err);

/* Leaves each worker computed in the last reduction ([pool_threads]). */
const size_t *tree_worker_leaves(const tree_reducer *r);
/* Most partial buffers any worker's stream held at once in the last reduction. */
int tree_high_water(const tree_reducer *r);

#endif
