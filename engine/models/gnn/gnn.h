/* gnn.h — the kernels of the `gnn` model (a GIN-style message-passing
 * network, Xu et al. 2019) and the way a graph travels in a data set row.
 *
 * Per layer l (d_0 = the node features F, d_l = H after):
 *     z_v  = (1+ε)·h_v + Σ_{u ∈ N_in(v)} h_u               (pull, CSR order)
 *     r_v  = relu(W1_lᵀ z_v + b1_l),  h'_v = relu(W2_lᵀ r_v + b2_l)
 * except that the last layer's h'_v has no relu (W2_Lᵀ r_v + b2_L): the head
 * reads it directly, so a unit the relu would cut still passes gradient.
 * The messages are pulled (docs/graphs.md): node v's row z_v is written by
 * whoever computes v and sums its in-neighbours in CSR order (sources
 * ascending); the backward pass pulls again, over the out-CSR (the
 * transpose), so no row is ever scatter-added to and nothing is atomic.
 *
 * Sums, fixed here (float, no FMA: -ffp-contract=off is pinned):
 *   z_v[i]   = c·h_v[i] + h_{u0}[i] + h_{u1}[i] + ...    c = 1.0f + ε, u ascending
 *   a_v[j]   = b[j] + z_v[0]·W[0][j] + z_v[1]·W[1][j] + ...   (i ascending)
 *   backward, with da the gradient of a (zero where relu cut it):
 *   dW[i][j] += z_v[i]·da_v[j],  db[j] += da_v[j]      (v ascending, onto the
 *                                                       caller's running sum)
 *   dz_v[i]  = W[i][0]·da_v[0] + W[i][1]·da_v[1] + ...  (j ascending, from 0.0f)
 *   dh_u[i]  = c·dz_u[i] + dz_{v0}[i] + dz_{v1}[i] + ... (v ∈ N_out(u) ascending)
 *
 * The head reads every layer's output side by side (as Xu et al. do):
 * a node's embedding is [h^1_v, ..., h^L_v] (E = L·H floats), a graph's
 * [Σ_v h^1_v, ..., Σ_v h^L_v], each sum 0.0f + h_0 + h_1 + ... (v
 * ascending); logits = bo + Σ_j e[j]·Wo[j][·] (j ascending). Backward, the
 * gradient of layer l's output is the pull from layer l+1 plus the head's
 * part: pull[i] + head[i].
 *
 * Parameters (hash order): per layer W1 [d_l][H], b1 [H], W2 [H][H], b2 [H];
 * then the head Wo [L·H][C], bo [C]. θ_0: weights uniform in
 * [−1/sqrt(fan_in), 1/sqrt(fan_in)) at address (seed, RNG_INIT, tensor
 * index, element index, 0); biases 0 (as mlp.h).
 *
 * Graph rows. ls_dataset carries float features and one uint8 label per
 * sample; a graph sample is one fixed-width row (N = the most nodes a graph
 * may have, F = features per node):
 *   x[0] = kind, x[1] = N, x[2] = F, x[3] = n (nodes of this graph) or, for
 *   GNN_KIND_NODE, the node's id;
 *   GNN_KIND_GRAPH: feat [N][F] at 4, adj [N][N] at 4 + N·F (adj[v][u] = 1
 *     when the edge u→v exists; undirected graphs are symmetric); y = the
 *     graph's class.
 *   GNN_KIND_EDIT: as GRAPH, then the class of each node [N] (target per node:
 *     0 keep, 1 delete) at 4 + N·F + N·N; y = 1 when some node is deleted.
 *   GNN_KIND_NODE: one node of one shared graph of N nodes: feat [F] at 4,
 *     its adjacency row adj [N] at 4 + F (adj[u] = 1: edge u→node); y = the
 *     node's class. The graph is the union of every row of both splits
 *     (each id exactly once), so the data identity (data_hash) covers it.
 */
#ifndef LS_GNN_H
#define LS_GNN_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

enum { GNN_KIND_GRAPH = 1, GNN_KIND_NODE = 2, GNN_KIND_EDIT = 3 };
#define GNN_HEADER 4
#define GNN_MAX_NODES 256
#define GNN_MAX_LAYERS 8

/* A graph as the kernels see it: in-edges by destination (sources ascending)
 * and out-edges by source (destinations ascending). The same shape as
 * engine/graph/graph.h's CSR, so one of those can be viewed directly. */
typedef struct {
    int32_t n;
    const int64_t *in_off;    /* [n+1] */
    const int32_t *in_adj;    /* [in_off[n]] */
    const int64_t *out_off;   /* [n+1] */
    const int32_t *out_adj;   /* [out_off[n]] */
} gnn_csr;

/* Row width of a kind for N nodes and F features per node. */
size_t gnn_row_dim(int kind, size_t N, size_t F);

/* The CSR of the graph in a GRAPH or EDIT row, built into caller memory:
 * off_in, off_out [N+1], adj_in, adj_out [N·N]. No allocation (workers). */
void gnn_csr_from_row(const float *row, int64_t *off_in, int32_t *adj_in, int64_t *off_out, int32_t *adj_out,
                      gnn_csr *g);

/* Writes a GRAPH or EDIT row (dim = gnn_row_dim) of g: node features
 * feat [g->n][F] (NULL: every feature 1), adjacency from g's in-edges;
 * padding nodes all zero. EDIT's targets are the caller's. g->n <= N. */
struct graph;
void gnn_row_of_graph(float *row, int kind, size_t N, size_t F, const struct graph *g, const float *feat);

/* The networkx Graph Atlas (graph.h, GRAPH_ATLAS_PATH): all 1,253 graphs.
 * A missing file is LS_EIO naming it and Debian's python3-networkx. */
ls_status gnn_atlas_load(struct graph ***out, int32_t *count, ls_err *err);

/* Sizes of one network. */
typedef struct {
    size_t F, H, C, L;        /* node features, hidden width, classes, layers */
    size_t E;                 /* the head's input: L·H, every layer's output side by side */
    float eps;                /* ε of (1+ε)·h_v */
    size_t n_params;
    size_t off_w1[GNN_MAX_LAYERS], off_b1[GNN_MAX_LAYERS], off_w2[GNN_MAX_LAYERS], off_b2[GNN_MAX_LAYERS];
    size_t off_wo, off_bo;
} gnn_net;

/* Fills the offsets and n_params; LS_EINVAL naming a size out of range. */
ls_status gnn_net_init(gnn_net *net, size_t F, size_t H, size_t C, size_t L, float eps, ls_err *err);
void gnn_init_params(const gnn_net *net, float *params, uint64_t seed);

/* Floats of the activations gnn_forward keeps for n nodes, and of the
 * gradient work area gnn_backward needs. */
size_t gnn_acts_floats(const gnn_net *net, size_t n);
size_t gnn_work_floats(const gnn_net *net, size_t n);

/* The node embeddings after the last layer: acts holds, per layer, z [n][d_l],
 * r [n][H], h [n][H]; returns a pointer to the last h [n][H] inside acts.
 * x [n][F] are the input features. */
const float *gnn_forward(const gnn_net *net, const float *params, const gnn_csr *g, const float *x, float *acts);

/* The graph readout e [E] of the activations of n nodes; node v's
 * embedding e [E]; and the head's gradient de [E] of node v spread into
 * dh [L][n][H] (written, not added). */
void gnn_readout(const gnn_net *net, const float *acts, size_t n, float *e);
void gnn_node_embedding(const gnn_net *net, const float *acts, size_t n, size_t v, float *e);
void gnn_embedding_grad(const gnn_net *net, const float *de, size_t n, size_t v, float *dh);

/* Adds the parameter gradient of the message-passing layers into grad,
 * given dh [L][n][H], the head's gradient of every layer's output (the
 * head's own gradient is the caller's); dh is overwritten. work:
 * gnn_work_floats. */
void gnn_backward(const gnn_net *net, const float *params, const gnn_csr *g, const float *acts, float *dh,
                  float *grad, float *work);

/* The head: logits [C] = bo + Σ_j e[j]·Wo[j][·] (j ascending, e [E]). */
void gnn_head(const gnn_net *net, const float *params, const float *e, float *logits);
/* Softmax cross-entropy in binary64 (the engine's exp and log): returns the
 * loss and writes dlogits (float). Predicted class: gnn_argmax. */
double gnn_softmax_xent(const float *logits, size_t C, unsigned y, float *dlogits);
size_t gnn_argmax(const float *v, size_t C);   /* lowest index on ties */
/* The head's backward: dWo[j][k] += e[j]·dl[k], dbo[k] += dl[k]; de[j] =
 * Σ_k Wo[j][k]·dl[k] (k ascending, from 0.0f). */
void gnn_head_backward(const gnn_net *net, const float *params, const float *e, const float *dl, float *grad,
                       float *de);

/* 1-WL colour refinement over many graphs at once (colours shared between
 * them): the initial colour of a node is its feature vector (features 1)
 * or one colour for every node (features 0: the structure alone), each round a
 * node's colour becomes (its colour, the sorted multiset of its
 * in-neighbours' colours), until no class splits. class_of[i] receives a
 * class number such that two graphs get one class exactly when refinement
 * gives them equal colour histograms (1-WL cannot tell them apart, and so no
 * GIN can). rows: count GRAPH/EDIT rows of dim floats. Returns the number of
 * classes, or 0 when out of memory. */
size_t gnn_wl_classes(const float *const *rows, size_t count, int features, uint32_t *class_of);

#endif
