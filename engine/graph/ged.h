/* ged.h — graph edit distance: a lower bound, the exact distance for small
 * graphs, and the bipartite upper bound, with integer costs so the results
 * are exact and the same at any thread count (docs/graphs.md).
 *
 * An edit path turns graph a into graph b by deleting, inserting and
 * relabelling nodes and deleting and inserting edges; deleting a node
 * deletes its edges, each at its own cost. With unit costs (the default)
 * every operation costs 1 and keeping a node's label costs 0. Both graphs
 * must be undirected or both directed (arcs are then the edges).
 *
 * - upper: Riesen & Bunke's bipartite bound — an (n+m)×(n+m) cost matrix
 *   (substitutions top left: the label cost plus the optimal assignment cost
 *   of the two nodes' incident edges; deletions on the diagonal of the top
 *   right block, insertions on the diagonal of the bottom left, zeros bottom
 *   right, forbidden elsewhere), solved by a linear sum assignment (the
 *   Hungarian method, ties to the lowest index); the cost of the edit path
 *   that node map induces.
 * - lower: the larger of a label-multiset bound (node operations needed to
 *   turn a's label multiset into b's, plus the edge count difference) and a
 *   bipartite lower bound (the same assignment with each substitution
 *   charged its label cost plus half of the degree difference's edge cost).
 * - exact: depth-first branch and bound over node maps of a's nodes in a
 *   fixed order, the upper bound as the first incumbent; computed only when
 *   both graphs have at most node_cap nodes, else -1.
 * lower <= exact <= upper whenever exact is computed.
 */
#ifndef LS_GED_H
#define LS_GED_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"
#include "reduce/pool.h"
#include "engine/graph/graph.h"

/* Non-negative integer costs. Substituting a node for one of the same label
 * costs 0, for another label node_sub. */
typedef struct {
    int64_t node_sub, node_del, node_ins;
    int64_t edge_del, edge_ins;
} ged_costs;

#define GED_COSTS_UNIT ((ged_costs){1, 1, 1, 1, 1})
#define GED_DEFAULT_NODE_CAP 10
#define GED_MAX_NODES 1024   /* larger graphs are refused: the matrix is (n+m)^2 int64, the solver O((n+m)^3) */

typedef struct {
    int64_t lower;
    int64_t exact;   /* -1: a graph has more than node_cap nodes */
    int64_t upper;
} ged_result;

/* c NULL: unit costs. Costs must be 0..2^40 (LS_EINVAL otherwise). */
ls_status ged_compute(const graph *a, const graph *b, const ged_costs *c, int node_cap, ged_result *r, ls_err *err);

/* How far ged_pairs_run has got: handed to the progress callback. */
typedef struct {
    size_t pairs_done;   /* pairs whose results are final */
    size_t n_pairs;
    uint64_t nodes;      /* exact-search nodes expanded so far, over all pairs and workers */
} ged_progress;

/* A long exact search's controls, as ls_session_train takes them: the
 * library never prints and never installs a signal handler; the caller
 * does both. Either field may be NULL. progress is called from whichever
 * worker thread finishes a pair or expands another GED_PROGRESS_NODES
 * search nodes, so it must be thread-safe and cheap (a caller that prints
 * rate-limits it); *stop is read at the same points and between pairs. */
typedef struct {
    const volatile int *stop;   /* nonzero: stop promptly with LS_EINTR */
    void (*progress)(void *ctx, const ged_progress *p);
    void *ctx;
} ged_control;

#define GED_PROGRESS_NODES ((uint64_t)1 << 10)
/* The largest node cap the command line takes. The exact search is
 * exponential in the nodes, but how long it takes depends on the pair (a
 * pair whose bounds meet costs nothing at any size), so no cap can say in
 * advance that it will finish: a long search shows progress and stops on
 * *stop instead. */
#define GED_MAX_NODE_CAP 64

/* Pairs (a[i], b[i]) for i < n_pairs, the pairs handed out to the pool's
 * workers dynamically, result i written to out[i] alone: the results are
 * the same at any thread count. p NULL: the calling thread. An error names
 * the first failing pair (by index). */
ls_status ged_pairs(const graph *const *a, const graph *const *b, size_t n_pairs, const ged_costs *c, int node_cap,
                    pool *p, ged_result *out, ls_err *err);

/* ged_pairs under *ctl (NULL: none). LS_EINTR when *ctl->stop became
 * nonzero: out[] is then incomplete and must not be used. The results of a
 * search that ends are the same as ged_pairs' (the controls only read). */
ls_status ged_pairs_run(const graph *const *a, const graph *const *b, size_t n_pairs, const ged_costs *c,
                        int node_cap, pool *p, const ged_control *ctl, ged_result *out, ls_err *err);

/* "1,1,1,1,1" or "node-sub=2,edge-del=3,..." (keys node-sub node-del
 * node-ins edge-del edge-ins; unnamed ones stay as in *c). */
ls_status ged_costs_parse(ged_costs *c, const char *text, ls_err *err);

/* The cost of the edit path given by a node map: map[i] is the b node of
 * a's node i, or -1 (deleted); b nodes not in map are inserted. */
int64_t ged_path_cost(const graph *a, const graph *b, const ged_costs *c, const int32_t *map);

#endif
