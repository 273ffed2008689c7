/* graph.h — immutable graphs in CSR form, and the readers for graph files:
 * the input of the exact graph operations (cliques.h, ged.h) and of the
 * message-passing model.
 *
 * A graph is one allocation: the struct and every array it points to. Nodes
 * are 0..n-1. out_adj[out_off[v] .. out_off[v+1]) are v's out-neighbours and
 * in_adj[in_off[v] .. in_off[v+1]) the sources of the arcs into v, both
 * sorted by id with no repeats and no self loops. An undirected graph stores
 * each edge in both directions, and in_off/in_adj are the same arrays as
 * out_off/out_adj. Every order here is a function of the set of edges alone
 * (docs/graphs.md): nothing depends on the order of the input lines.
 *
 * Files (docs/formats.md):
 *   - an edge list: one edge `a b [weight]` a line, `#` starts a comment,
 *     fields split by blanks or tabs; the weight, when present, must be a
 *     number and is ignored. The first edge line decides the node ids: if
 *     both its fields are decimal digits, every node field must be an
 *     integer below GRAPH_FILE_MAX_NODES (node v is the integer v, n = the
 *     largest + 1; NODES has the same limit); otherwise the
 *     fields are names, and node ids are the ranks of the distinct names in
 *     byte order (strcmp), so the ids are a function of the set of edges;
 *     the names are kept (graph_name).
 *   - the graph text format, which is the networkx Graph Atlas format plus
 *     two optional keywords: `GRAPH [id]` starts a graph, `NODES n` gives
 *     its node count, `DIRECTED` makes it directed, `LABELS l0 l1 ...` gives
 *     n non-negative integer node labels, and every other line is an edge
 *     `a b` with 0 <= a, b < n. Keywords are case-insensitive; `#` comments.
 *     A file may hold any number of graphs. gzip-compressed files are read
 *     as such (zlib), so this reads the Atlas's atlas.dat.gz directly.
 * Every reader drops self loops and repeated edges (an undirected edge
 * given as a b and b a is one edge) and says how many in *dropped. Errors
 * are LS_EFORMAT (LS_EIO when the file cannot be read) with one line
 * naming file, line and field: "FILE:LINE: field 2: 'x' is not a node id".
 */
#ifndef LS_GRAPH_H
#define LS_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

/* The most nodes a graph may have: ids and counts fit in int32_t. */
#define GRAPH_MAX_NODES ((int32_t)0x3fffffff)
/* The most nodes a file may ask for with integer ids or NODES (2^24): one
 * line "0 999999999" must not make the reader allocate gigabytes. */
#define GRAPH_FILE_MAX_NODES ((int32_t)1 << 24)

typedef struct {
    int64_t self_loops;   /* pairs a a */
    int64_t duplicates;   /* pairs repeating an edge already given */
} graph_stats;

typedef struct graph {
    int32_t n;                 /* nodes 0..n-1 */
    int directed;              /* 0: undirected */
    int64_t n_edges;           /* undirected: edges; directed: arcs */
    const int64_t *out_off;    /* [n+1] */
    const int32_t *out_adj;    /* [out_off[n]]: out-neighbours, sorted by id */
    const int64_t *in_off;     /* [n+1] */
    const int32_t *in_adj;     /* [in_off[n]]: sources of arcs into v, sorted (== out_* when undirected) */
    const int32_t *label;      /* [n]: node labels, all 0 when unlabelled */
    const char *const *name;   /* [n] node names from an edge list of names, or NULL */
    int32_t max_label;         /* largest label (0 when unlabelled) */
    int32_t max_degree;        /* largest out-degree */
} graph;

/* A graph from n_pairs pairs (src[i], dst[i]), each id in [0, n). Undirected
 * unless `directed`. labels: n non-negative values, or NULL for all 0.
 * dropped (may be NULL) counts the self loops and repeats left out. */
ls_status graph_create(graph **out, int32_t n, int directed, const int32_t *src, const int32_t *dst, int64_t n_pairs,
                       const int32_t *labels, graph_stats *dropped, ls_err *err);
/* The same, with node names (n strings, copied), shown by graph_name. */
ls_status graph_create_named(graph **out, int32_t n, int directed, const int32_t *src, const int32_t *dst,
                             int64_t n_pairs, const int32_t *labels, const char *const *names, graph_stats *dropped,
                             ls_err *err);
void graph_destroy(graph *g);   /* accepts NULL */

/* A copy of g (its own allocation). */
ls_status graph_clone(graph **out, const graph *g, ls_err *err);

static inline int64_t graph_degree(const graph *g, int32_t v)
{
    return g->out_off[v + 1] - g->out_off[v];
}
/* 1 if the edge (arc) u -> v exists: a binary search in u's row. */
int graph_has_edge(const graph *g, int32_t u, int32_t v);
/* Node v's name when the graph has names, else NULL. */
const char *graph_name(const graph *g, int32_t v);

/* An edge list (see above). Undirected. */
ls_status graph_load_edgelist(graph **out, const char *path, ls_err *err);
/* The same, saying how many self loops and repeated edges were dropped. */
ls_status graph_load_edgelist_stats(graph **out, const char *path, graph_stats *dropped, ls_err *err);
/* Every graph of a file in the graph text format (plain or gzip); *count of
 * them in a malloc'ed array of graphs, freed by graph_list_destroy. */
ls_status graph_load_text(graph ***out, int32_t *count, const char *path, ls_err *err);
/* The networkx Graph Atlas (atlas.dat.gz): graph_load_text, and it must
 * hold at least one graph. */
ls_status graph_load_atlas(graph ***out, int32_t *count, const char *path, ls_err *err);
void graph_list_destroy(graph **gs, int32_t count);   /* accepts NULL */

/* Where Debian's python3-networkx puts the Atlas and WormNet v3. */
#define GRAPH_ATLAS_PATH "/usr/lib/python3/dist-packages/networkx/generators/atlas.dat.gz"
#define GRAPH_WORMNET_PATH "/usr/share/doc/networkx-2.8.8/examples/algorithms/WormNet.v3.benchmark.txt"

/* Graphs named by a reference (what `lockstep graph` takes): PATH, or PATH:I
 * for the I-th graph (from 0) of a file of several (I all digits). A file is
 * gunzipped if it is gzip, then read as the graph text format when its first
 * line with a field starts with GRAPH, else as an edge list. Without :I the
 * file must hold one graph. */
ls_status graph_load_ref(graph **out, const char *ref, ls_err *err);
/* The parts of graph_load_ref, for callers that read a file once for many
 * references: every graph of a file (an edge list is one), freed by
 * graph_list_destroy; a reference split into its path and index (-1: none);
 * the graph a reference picks out of a file's list (not a copy). */
ls_status graph_load_file(graph ***out, int32_t *count, const char *path, ls_err *err);
ls_status graph_ref_split(const char *ref, char *path, size_t cap, int32_t *index, ls_err *err);
ls_status graph_pick(graph **out, graph **list, int32_t count, const char *path, int32_t index, ls_err *err);

#endif
