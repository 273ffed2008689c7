/* cliques.h — counting and listing the k-cliques of an undirected graph,
 * exact and the same at any thread count (docs/graphs.md).
 *
 * The algorithm is kClist (Danisch, Balalau, Sozio, WWW 2018): nodes are
 * ordered by degeneracy (repeatedly remove a node of least remaining degree,
 * a bucket queue, ties broken by the smaller node id, so the order is a
 * function of the graph alone); each edge is oriented from the earlier to the
 * later node, so every out-degree is at most the degeneracy δ. A clique is
 * found once, from its earliest node, the root: the root's out-neighbours
 * are the candidates, re-indexed locally 0..d-1 with bitsets of 64-bit words;
 * each level intersects the candidates with the chosen node's local
 * out-neighbours (an AND per word) and the last level is a popcount.
 *
 * Roots are the work units, handed out one at a time from an atomic counter
 * (the dense core holds most of the work). A count is an integer sum, exact
 * whatever the schedule. A listing gives each root its own buffer and
 * delivers the buffers in root order (the degeneracy order), each clique's
 * nodes sorted by id: the sequence is identical at any thread count.
 * Directed graphs are refused (LS_EINVAL); k from 1 to CLIQUES_MAX_K.
 */
#ifndef LS_CLIQUES_H
#define LS_CLIQUES_H

#include <stdint.h>

#include "include/lockstep.h"
#include "reduce/pool.h"
#include "engine/graph/graph.h"

#define CLIQUES_MAX_K 64

/* The number of k-cliques of g. k = 1 counts nodes, k = 2 edges. A count
 * beyond UINT64_MAX is an error (LS_EINVAL naming k). p NULL: the calling
 * thread alone. */
ls_status cliques_count(const graph *g, int k, pool *p, uint64_t *count, ls_err *err);

/* What a count cost each worker: CPU time (CLOCK_THREAD_CPUTIME_ID) and
 * roots taken. On a machine other programs load, wall-clock speedup is not
 * measurable, but the largest worker's CPU time bounds the wall time an
 * idle machine would take: total / largest is the balance of the split. */
typedef struct {
    int n_workers;
    int32_t degeneracy;
    double worker_cpu_seconds[POOL_MAX_THREADS];
    int64_t worker_roots[POOL_MAX_THREADS];
} cliques_stats;

/* cliques_count, filling *stats (may be NULL); k <= 2 leave it zero. */
ls_status cliques_count_stats(const graph *g, int k, pool *p, uint64_t *count, cliques_stats *stats, ls_err *err);

/* A long count's controls, as ls_session_train takes them (the library
 * never prints): either field may be NULL. progress is called from the
 * worker that finishes a root, so it must be thread-safe and cheap (a
 * caller that prints rate-limits it); *stop is read before each root is
 * taken, so a count stops within one root's search. */
typedef struct {
    const volatile int *stop;   /* nonzero: stop with LS_EINTR */
    void (*progress)(void *ctx, int64_t roots_done, int64_t n_roots);
    void *ctx;
} cliques_control;

/* cliques_count_stats under *ctl (NULL: none). LS_EINTR when *ctl->stop
 * became nonzero: *count is then 0 and *stats not filled. */
ls_status cliques_count_run(const graph *g, int k, pool *p, const cliques_control *ctl, uint64_t *count,
                            cliques_stats *stats, ls_err *err);

/* Calls fn(ctx, nodes, k) for each k-clique, nodes sorted by id, in root
 * order then the order of the search inside each root (both fixed), for at
 * most `max` cliques (0: no cap); *listed (may be NULL) gets how many were
 * delivered. fn runs on the calling thread only; a non-zero return stops
 * the listing (not an error). The search of roots runs on the pool, a window
 * of roots at a time, so memory stays bounded however many cliques there
 * are. */
ls_status cliques_list(const graph *g, int k, pool *p, uint64_t max, int (*fn)(void *ctx, const int32_t *nodes, int k),
                       void *ctx, uint64_t *listed, ls_err *err);
/* cliques_list with a stop flag (may be NULL), read before each root is
 * searched: LS_EINTR when it became nonzero; the cliques delivered before
 * are whole (a window of roots is delivered only when all are searched). */
ls_status cliques_list_run(const graph *g, int k, pool *p, uint64_t max,
                           int (*fn)(void *ctx, const int32_t *nodes, int k), void *ctx, const volatile int *stop,
                           uint64_t *listed, ls_err *err);

/* The degeneracy order: order[i] is the i-th node removed, rank[v] its
 * position; *degeneracy the largest remaining degree seen at a removal.
 * order and rank hold g->n each (either may be NULL). */
ls_status cliques_degeneracy(const graph *g, int32_t *order, int32_t *rank, int32_t *degeneracy, ls_err *err);

/* The popcnt instruction on (1, default: when the CPU has it and
 * LOCKSTEP_SIMD does not say off) or off (0): for tests; the results are the
 * same integers either way. Returns the previous setting. */
int cliques_simd_set(int enabled);
/* The most cliques a listing buffers at once (0, the default: 2^22 node ids
 * worth, 16 MiB; roots with more are listed on the calling thread straight
 * into the callback). For tests. Returns the previous value. */
uint64_t cliques_list_budget_set(uint64_t cliques);

#endif
