/* model_gnn.c — the `gnn` model: a GIN-style message-passing network
 * (engine/models/gnn/gnn.h) over graph rows (the row layouts are in gnn.h). Keys:
 * hidden (width H), layers, gin_eps (ε), leaf (samples per leaf).
 *
 * What a sample is depends on the data's kind (the first feature of a row):
 *   GRAPH  a graph; its class from the sum readout of every layer (gnn.h),
 *          through the head.
 *   EDIT   a graph with a class per node (keep 0 / delete 1): the head on
 *          every node's embedding (every layer's output); the graph's loss = 0.0 + loss_0 + loss_1 + ... (nodes
 *          ascending).
 *   NODE   one node of one shared graph (built once, at create, from every
 *          row of both splits); its class from the head on its embedding.
 * A leaf is `leaf` consecutive samples: graphs for GRAPH and EDIT, a fixed
 * block of nodes for NODE. A graph leaf builds each graph's CSR (in- and
 * out-edges, gnn.h) from its row into the worker's scratch — no allocation
 * in workers — and runs forward and backward graph by graph, slots in order,
 * adding each graph's gradient onto the leaf's running sum. A NODE leaf runs
 * the forward pass over the whole shared graph, takes the loss of its own
 * nodes (slot order; dlogits of a node drawn twice added in slot order),
 * and runs the backward pass over the whole graph. The leaf loss is 0.0 +
 * the samples' losses in slot order. A leaf is only ever written: the
 * engine sums it on its own and adds it for LS_LEAF_ADD (leaf_adds 0). Finish
 * divides the tree sum by (float)B (the mean over samples).
 *
 * Evaluation (metrics, on the test split, one thread): GRAPH: test_acc,
 * train_acc, and the 1-WL ceiling — wl_ceiling, the best accuracy over all
 * graphs of both splits that any function of the 1-WL colour histogram of
 * the structure alone can reach (per 1-WL class, its most common label),
 * wl_ceiling_test the same over the test graphs only, and wl_mixed, the
 * 1-WL classes whose graphs carry different labels; wl_ceiling_feat and
 * wl_mixed_feat the same with the node features as the initial colours
 * (the bound for this network on these inputs). NODE: test_acc,
 * train_acc. EDIT: node_acc, graph_acc (every node right), and mean_ged:
 * each test graph with the nodes the model deletes removed, against the
 * target (the graph with the nodes the rule deletes removed), exact unit-cost
 * graph edit distance with node labels (engine/graph/ged.h), averaged; and
 * mean_ged_unedited, the same for the graphs left as they are (the distance
 * the edits have to close). Each example's distances are integers summed in
 * example order. (One thread: ls_model_desc.metrics is handed no pool.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/graph/ged.h"
#include "engine/models/gnn/gnn.h"
#include "engine/graph/graph.h"
#include "engine/core/model.h"
#include "engine/data/dataset.h"

#define ALIGN 64

static size_t round_up(size_t n)
{
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

typedef struct {
    gnn_net net;
    int kind;
    size_t N, F, dim, C, max_leaf;
    /* NODE: the shared graph and its features [N][F] */
    int64_t *g_off;           /* in [N+1], then out [N+1] */
    int32_t *g_adj;           /* in, then out */
    float *g_x;
    gnn_csr g;
    /* scratch layout, byte offsets */
    size_t s_csr_off, s_csr_adj, s_acts, s_work, s_dh, s_out, s_small, s_total;
    /* GRAPH: the 1-WL figures (fixed by the data) */
    double wl_ceiling[2];     /* [0] the structure alone, [1] with the node features */
    double wl_ceiling_test;   /* the structure alone, on the test graphs */
    size_t wl_mixed[2];
    ls_tensor tensors[4 * GNN_MAX_LAYERS + 2];
    char names[4 * GNN_MAX_LAYERS + 2][16];
    /* EDIT: one slot per test graph, written by gm_metric_part (one writer
     * each, on any thread), summed in graph order by gm_metrics. */
    struct edit_slot *slots;
    size_t n_slots;
} gnn_inst;

struct edit_slot {
    size_t nodes, right;       /* the graph's nodes, and those predicted right */
    int64_t ged, ged_none;     /* exact GED to the target: edited as predicted, and unedited */
    ls_status st;
    ls_err err;
};

typedef struct {
    int64_t *off_in, *off_out;
    int32_t *adj_in, *adj_out;
    float *acts, *work, *dh, *out, *e, *de, *logits, *dl;
} gnn_scratch;

static gnn_scratch carve(const gnn_inst *m, void *scratch)
{
    char *s = scratch;
    const size_t N = m->N, C = m->C;
    gnn_scratch w;
    w.off_in = (int64_t *)(void *)(s + m->s_csr_off);
    w.off_out = w.off_in + N + 1;
    w.adj_in = (int32_t *)(void *)(s + m->s_csr_adj);
    w.adj_out = w.adj_in + N * N;
    w.acts = (float *)(void *)(s + m->s_acts);
    w.work = (float *)(void *)(s + m->s_work);
    w.dh = (float *)(void *)(s + m->s_dh);
    w.out = (float *)(void *)(s + m->s_out);   /* NODE: dlogits [N][C] */
    w.e = (float *)(void *)(s + m->s_small);
    w.de = w.e + m->net.E;
    w.logits = w.de + m->net.E;
    w.dl = w.logits + C;
    return w;
}

static const float *row_of(const gnn_inst *m, const ls_split *s, size_t id)
{
    return s->xf + id * m->dim;
}

static void gm_init(const void *self, float *params, uint64_t seed)
{
    const gnn_inst *m = self;
    gnn_init_params(&m->net, params, seed);
}

/* One GRAPH or EDIT sample: loss, gradient added onto g (g NULL: forward
 * only); *correct (may be NULL) = right nodes (EDIT) or 1 for a right graph;
 * pred (may be NULL) = the predicted class of each node (EDIT). */
static double graph_sample(const gnn_inst *m, const float *params, const float *row, unsigned y, float *g,
                           gnn_scratch *w, size_t *correct, uint8_t *pred)
{
    const size_t C = m->C, n = (size_t)row[3];
    gnn_csr csr;
    gnn_csr_from_row(row, w->off_in, w->adj_in, w->off_out, w->adj_out, &csr);
    gnn_forward(&m->net, params, &csr, row + GNN_HEADER, w->acts);
    double loss = 0.0;
    size_t right = 0;
    if (m->kind == GNN_KIND_GRAPH) {
        gnn_readout(&m->net, w->acts, n, w->e);
        gnn_head(&m->net, params, w->e, w->logits);
        loss = gnn_softmax_xent(w->logits, C, y, w->dl);
        right = gnn_argmax(w->logits, C) == y;
        if (g != NULL) {
            gnn_head_backward(&m->net, params, w->e, w->dl, g, w->de);
            for (size_t v = 0; v < n; v++)
                gnn_embedding_grad(&m->net, w->de, n, v, w->dh);
        }
    } else {
        const float *target = row + GNN_HEADER + m->N * m->F + m->N * m->N;
        for (size_t v = 0; v < n; v++) {
            const unsigned t = (unsigned)target[v];
            gnn_node_embedding(&m->net, w->acts, n, v, w->e);
            gnn_head(&m->net, params, w->e, w->logits);
            loss = loss + gnn_softmax_xent(w->logits, C, t, w->dl);
            const size_t p = gnn_argmax(w->logits, C);
            right += p == t;
            if (pred != NULL)
                pred[v] = (uint8_t)p;
            if (g != NULL) {
                gnn_head_backward(&m->net, params, w->e, w->dl, g, w->de);
                gnn_embedding_grad(&m->net, w->de, n, v, w->dh);
            }
        }
    }
    if (g != NULL)
        gnn_backward(&m->net, params, &csr, w->acts, w->dh, g, w->work);
    if (correct != NULL)
        *correct = right;
    return loss;
}

/* A NODE leaf (or evaluation): forward over the shared graph; the loss of
 * the listed nodes; with g, the gradient added onto g. */
static double node_block(const gnn_inst *m, const float *params, const ls_split *s, const uint32_t *ids,
                         size_t count, float *g, gnn_scratch *w, size_t *correct)
{
    const size_t C = m->C, N = m->N;
    gnn_forward(&m->net, params, &m->g, m->g_x, w->acts);
    float *dL = w->out;
    if (g != NULL)
        memset(dL, 0, N * C * sizeof(float));
    double loss = 0.0;
    size_t right = 0;
    for (size_t i = 0; i < count; i++) {
        const size_t id = ids != NULL ? ids[i] : i;
        const size_t v = (size_t)row_of(m, s, id)[3];
        const unsigned y = s->y[id];
        gnn_node_embedding(&m->net, w->acts, N, v, w->e);
        gnn_head(&m->net, params, w->e, w->logits);
        loss = loss + gnn_softmax_xent(w->logits, C, y, w->dl);
        right += gnn_argmax(w->logits, C) == y;
        if (g != NULL)
            for (size_t k = 0; k < C; k++)
                dL[v * C + k] = dL[v * C + k] + w->dl[k];
    }
    if (g != NULL) {
        /* Nodes of the block get the head's gradient (nodes ascending);
         * the others none: their rows of dh are zero. */
        memset(w->dh, 0, m->net.L * N * m->net.H * sizeof(float));
        for (size_t v = 0; v < N; v++) {
            int hit = 0;
            for (size_t k = 0; k < C; k++)
                hit |= dL[v * C + k] != 0.0f;
            if (hit) {
                gnn_node_embedding(&m->net, w->acts, N, v, w->e);
                gnn_head_backward(&m->net, params, w->e, dL + v * C, g, w->de);
                gnn_embedding_grad(&m->net, w->de, N, v, w->dh);
            }
        }
        gnn_backward(&m->net, params, &m->g, w->acts, w->dh, g, w->work);
    }
    if (correct != NULL)
        *correct = right;
    return loss;
}

static double gm_leaf(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
                      void *scratch)
{
    const gnn_inst *m = self;
    gnn_scratch w = carve(m, scratch);
    const size_t first = leaf * m->max_leaf;
    const size_t count = b->batch - first < m->max_leaf ? b->batch - first : m->max_leaf;
    (void)mode;   /* always LS_LEAF_WRITE: the engine adds (leaf_adds 0) */
    float *g = buf;
    memset(g, 0, m->net.n_params * sizeof(float));
    const ls_split *s = &b->data->train;
    double loss = 0.0;
    if (m->kind == GNN_KIND_NODE)
        loss = node_block(m, params, s, b->ids + first, count, g, &w, NULL);
    else
        for (size_t i = 0; i < count; i++) {
            const uint32_t id = b->ids[first + i];
            loss = loss + graph_sample(m, params, row_of(m, s, id), s->y[id], g, &w, NULL, NULL);
        }
    return loss;
}

/* Right predictions over [first, first + count) of a split: graphs (GRAPH),
 * graphs with every node right (EDIT), nodes (NODE). *nodes_right (may be
 * NULL): right nodes (EDIT). */
static size_t count_right(const gnn_inst *m, const float *params, const ls_split *s, size_t first, size_t count,
                          gnn_scratch *w, size_t *nodes_right)
{
    size_t right = 0, nodes = 0;
    if (m->kind == GNN_KIND_NODE) {
        uint32_t ids[256];
        for (size_t done = 0; done < count;) {
            const size_t k = count - done < 256 ? count - done : 256;
            for (size_t i = 0; i < k; i++)
                ids[i] = (uint32_t)(first + done + i);
            size_t r;
            node_block(m, params, s, ids, k, NULL, w, &r);
            right += r;
            done += k;
        }
    } else
        for (size_t i = first; i < first + count; i++) {
            const float *row = row_of(m, s, i);
            size_t r;
            graph_sample(m, params, row, s->y[i], NULL, w, &r, NULL);
            nodes += r;
            right += m->kind == GNN_KIND_GRAPH ? r : r == (size_t)row[3];
        }
    if (nodes_right != NULL)
        *nodes_right = nodes;
    return right;
}

static size_t gm_eval(const void *self, const float *params, const ls_dataset *data, size_t first, size_t count,
                      void *scratch)
{
    const gnn_inst *m = self;
    gnn_scratch w = carve(m, scratch);
    return count_right(m, params, &data->test, first, count, &w, NULL);
}

/* The graph of an EDIT row with the nodes keep[v] == 0 removed, node
 * labels the index of each node's first nonzero feature. */
static ls_status edit_graph(const gnn_inst *m, const float *row, const uint8_t *keep, graph **out, ls_err *err)
{
    const size_t N = m->N, F = m->F, n = (size_t)row[3];
    const float *adj = row + GNN_HEADER + N * F;
    int32_t map[GNN_MAX_NODES], label[GNN_MAX_NODES], src[GNN_MAX_NODES * GNN_MAX_NODES / 2],
        dst[GNN_MAX_NODES * GNN_MAX_NODES / 2];
    int32_t k = 0;
    for (size_t v = 0; v < n; v++) {
        map[v] = keep[v] ? k : -1;
        if (keep[v]) {
            int32_t lab = 0;
            for (size_t f = 0; f < F; f++)
                if (row[GNN_HEADER + v * F + f] != 0.0f) {
                    lab = (int32_t)f;
                    break;
                }
            label[k++] = lab;
        }
    }
    size_t pairs = 0;
    for (size_t v = 0; v < n; v++)
        for (size_t u = v + 1; u < n; u++)
            if (adj[v * N + u] != 0.0f && map[v] >= 0 && map[u] >= 0) {
                src[pairs] = map[v];
                dst[pairs++] = map[u];
            }
    return graph_create(out, k, 0, src, dst, (int64_t)pairs, label, NULL, err);
}

/* Test graph i of a graph-edit task: its nodes predicted right, and the
 * exact GED from the graph edited as predicted (and unedited) to the target. */
static void gm_metric_part(void *self, const float *params, const ls_dataset *data, size_t i, void *scratch)
{
    gnn_inst *m = self;
    if (m->kind != GNN_KIND_EDIT || i >= m->n_slots)
        return;
    struct edit_slot *o = &m->slots[i];
    gnn_scratch w = carve(m, scratch);
    const ls_split *s = &data->test;
    uint8_t pred[GNN_MAX_NODES], keep_pred[GNN_MAX_NODES], keep_target[GNN_MAX_NODES], keep_all[GNN_MAX_NODES];
    const float *row = row_of(m, s, i);
    const size_t n = (size_t)row[3];
    const float *target = row + GNN_HEADER + m->N * m->F + m->N * m->N;
    size_t r;
    graph_sample(m, params, row, s->y[i], NULL, &w, &r, pred);
    o->nodes = n;
    o->right = r;
    for (size_t v = 0; v < n; v++) {
        keep_pred[v] = pred[v] == 0;
        keep_target[v] = target[v] == 0.0f;
        keep_all[v] = 1;
    }
    graph *a = NULL, *t = NULL, *all = NULL;
    ged_result res, res_all;
    o->err.msg[0] = '\0';
    ls_status st = edit_graph(m, row, keep_pred, &a, &o->err);
    if (st == LS_OK)
        st = edit_graph(m, row, keep_target, &t, &o->err);
    if (st == LS_OK)
        st = ged_compute(a, t, NULL, GNN_MAX_NODES, &res, &o->err);
    if (st == LS_OK)
        st = edit_graph(m, row, keep_all, &all, &o->err);
    if (st == LS_OK)
        st = ged_compute(all, t, NULL, GNN_MAX_NODES, &res_all, &o->err);
    o->ged = st == LS_OK ? res.exact : 0;
    o->ged_none = st == LS_OK ? res_all.exact : 0;
    o->st = st;
    graph_destroy(a);
    graph_destroy(t);
    graph_destroy(all);
}

/* The slots of gm_metric_part, in graph order. */
static ls_status edit_metrics(const gnn_inst *m, const ls_split *s, ls_metric *out, size_t *n_out, ls_err *err)
{
    if (m->n_slots != s->n)
        return ls_fail(err, LS_EINVAL, "model gnn: %zu test graphs, %zu evaluated", s->n, m->n_slots);
    size_t nodes = 0, nodes_right = 0, graphs_right = 0;
    double ged_sum = 0.0, ged_none = 0.0;
    for (size_t i = 0; i < m->n_slots; i++) {
        const struct edit_slot *o = &m->slots[i];
        if (o->st != LS_OK)
            return ls_fail(err, o->st, "test graph %zu: %s", i, o->err.msg);
        nodes += o->nodes;
        nodes_right += o->right;
        graphs_right += o->right == o->nodes;
        ged_sum = ged_sum + (double)o->ged;
        ged_none = ged_none + (double)o->ged_none;
    }
    const double G = s->n ? (double)s->n : 1.0;
    snprintf(out[0].name, sizeof out[0].name, "node_acc");
    out[0].value = nodes ? (double)nodes_right / (double)nodes : 0.0;
    snprintf(out[1].name, sizeof out[1].name, "graph_acc");
    out[1].value = (double)graphs_right / G;
    snprintf(out[2].name, sizeof out[2].name, "mean_ged");
    out[2].value = ged_sum / G;
    snprintf(out[3].name, sizeof out[3].name, "mean_ged_unedited");
    out[3].value = ged_none / G;
    *n_out = 4;
    return LS_OK;
}

static ls_status gm_metrics(void *self, const float *params, const ls_dataset *data, ls_metric *out, size_t *n_out,
                            ls_err *err)
{
    const gnn_inst *m = self;
    *n_out = 0;
    void *scratch = aligned_alloc(ALIGN, m->s_total);
    if (scratch == NULL)
        return ls_fail(err, LS_ENOMEM, "model gnn: out of memory for the evaluation");
    gnn_scratch w = carve(m, scratch);
    ls_status st = LS_OK;
    if (m->kind == GNN_KIND_EDIT)
        st = edit_metrics(m, &data->test, out, n_out, err);
    else {
        const size_t te = count_right(m, params, &data->test, 0, data->test.n, &w, NULL);
        const size_t tr = count_right(m, params, &data->train, 0, data->train.n, &w, NULL);
        snprintf(out[0].name, sizeof out[0].name, "test_acc");
        out[0].value = data->test.n ? (double)te / (double)data->test.n : 0.0;
        snprintf(out[1].name, sizeof out[1].name, "train_acc");
        out[1].value = data->train.n ? (double)tr / (double)data->train.n : 0.0;
        *n_out = 2;
        if (m->kind == GNN_KIND_GRAPH) {
            snprintf(out[2].name, sizeof out[2].name, "wl_ceiling");
            out[2].value = m->wl_ceiling[0];
            snprintf(out[3].name, sizeof out[3].name, "wl_mixed");
            out[3].value = (double)m->wl_mixed[0];
            snprintf(out[4].name, sizeof out[4].name, "wl_ceiling_test");
            out[4].value = m->wl_ceiling_test;
            snprintf(out[5].name, sizeof out[5].name, "wl_ceiling_feat");
            out[5].value = m->wl_ceiling[1];
            snprintf(out[6].name, sizeof out[6].name, "wl_mixed_feat");
            out[6].value = (double)m->wl_mixed[1];
            *n_out = 7;
        }
    }
    free(scratch);
    return st;
}

static void gm_destroy(void *self)
{
    gnn_inst *m = self;
    if (m == NULL)
        return;
    free(m->g_off);
    free(m->g_adj);
    free(m->g_x);
    free(m->slots);
    free(m);
}

/* Every row of both splits has the first row's header; n within N. */
static ls_status check_rows(const gnn_inst *m, const ls_split *s, const char *which, ls_err *err)
{
    for (size_t i = 0; i < s->n; i++) {
        const float *r = row_of(m, s, i);
        if ((int)r[0] != m->kind || (size_t)r[1] != m->N || (size_t)r[2] != m->F)
            return ls_fail(err, LS_EINVAL, "model gnn: %s sample %zu: its header (kind %g, N %g, F %g) differs "
                           "from the first sample's", which, i, (double)r[0], (double)r[1], (double)r[2]);
        if (m->kind != GNN_KIND_NODE && (r[3] < 1.0f || (size_t)r[3] > m->N))
            return ls_fail(err, LS_EINVAL, "model gnn: %s sample %zu: %g nodes (1 .. %zu)", which, i, (double)r[3],
                           m->N);
    }
    return LS_OK;
}

/* NODE: the shared graph from every row (each id once). */
static ls_status build_shared(gnn_inst *m, const ls_dataset *data, ls_err *err)
{
    const size_t N = m->N, F = m->F;
    m->g_off = calloc(2 * (N + 1), sizeof *m->g_off);
    m->g_adj = calloc(2 * N * N + 1, sizeof *m->g_adj);
    m->g_x = calloc(N * F, sizeof *m->g_x);
    const float **row = calloc(N, sizeof *row);
    ls_status st = LS_OK;
    if (m->g_off == NULL || m->g_adj == NULL || m->g_x == NULL || row == NULL)
        st = ls_fail(err, LS_ENOMEM, "model gnn: out of memory for a graph of %zu nodes", N);
    for (int split = 0; split < 2 && st == LS_OK; split++) {
        const ls_split *s = split ? &data->test : &data->train;
        for (size_t i = 0; i < s->n && st == LS_OK; i++) {
            const float *r = row_of(m, s, i);
            const float id = r[3];
            if (!(id >= 0.0f && id < (float)N) || row[(size_t)id] != NULL)
                st = ls_fail(err, LS_EINVAL, "model gnn: %s sample %zu: node id %g is out of range or repeated",
                             split ? "test" : "train", i, (double)id);
            else
                row[(size_t)id] = r;
        }
    }
    for (size_t v = 0; v < N && st == LS_OK; v++)
        if (row[v] == NULL)
            st = ls_fail(err, LS_EINVAL, "model gnn: node %zu of %zu is in no sample", v, N);
    if (st == LS_OK) {
        int64_t *in_off = m->g_off, *out_off = m->g_off + N + 1;
        int32_t *in_adj = m->g_adj, *out_adj = m->g_adj + N * N;
        int64_t e = 0;
        for (size_t v = 0; v < N; v++) {
            memcpy(m->g_x + v * F, row[v] + GNN_HEADER, F * sizeof(float));
            in_off[v] = e;
            for (size_t u = 0; u < N; u++)
                if (row[v][GNN_HEADER + F + u] != 0.0f)
                    in_adj[e++] = (int32_t)u;
        }
        in_off[N] = e;
        e = 0;
        for (size_t u = 0; u < N; u++) {
            out_off[u] = e;
            for (size_t v = 0; v < N; v++)
                if (row[v][GNN_HEADER + F + u] != 0.0f)
                    out_adj[e++] = (int32_t)v;
        }
        out_off[N] = e;
        m->g = (gnn_csr){ (int32_t)N, in_off, in_adj, out_off, out_adj };
    }
    free(row);
    return st;
}

/* GRAPH: the 1-WL classes of all graphs; the test ceiling and the mixed
 * classes. */
static ls_status wl_figures(gnn_inst *m, const ls_dataset *data, int features, ls_err *err)
{
    const size_t ntr = data->train.n, nte = data->test.n, n = ntr + nte;
    const float **rows = calloc(n ? n : 1, sizeof *rows);
    uint32_t *cls = malloc((n ? n : 1) * sizeof *cls);
    size_t *cnt = NULL;
    uint8_t *first = NULL, *mixed = NULL;
    ls_status st = LS_OK;
    size_t k = 0;
    if (rows != NULL && cls != NULL) {
        for (size_t i = 0; i < n; i++)
            rows[i] = i < ntr ? row_of(m, &data->train, i) : row_of(m, &data->test, i - ntr);
        k = gnn_wl_classes(rows, n, features, cls);
    }
    if (k > 0) {
        cnt = calloc(2 * k * m->C, sizeof *cnt);   /* [all, test][class][label] */
        first = calloc(k, 1);
        mixed = calloc(k, 1);
    }
    if (n > 0 && (k == 0 || cnt == NULL || first == NULL || mixed == NULL))
        st = ls_fail(err, LS_ENOMEM, "model gnn: out of memory for 1-WL refinement");
    else if (n > 0) {
        uint8_t *lab = calloc(k, 1);
        if (lab == NULL)
            st = ls_fail(err, LS_ENOMEM, "model gnn: out of memory for 1-WL refinement");
        for (size_t i = 0; i < n && lab != NULL; i++) {
            const uint8_t y = i < ntr ? data->train.y[i] : data->test.y[i - ntr];
            if (!first[cls[i]]) {
                first[cls[i]] = 1;
                lab[cls[i]] = y;
            } else if (lab[cls[i]] != y)
                mixed[cls[i]] = 1;
            cnt[(size_t)cls[i] * m->C + y]++;
            if (i >= ntr)
                cnt[(k + (size_t)cls[i]) * m->C + y]++;
        }
        size_t best_sum[2] = { 0, 0 };
        for (size_t c = 0; c < 2 * k && lab != NULL; c++) {
            size_t best = 0;
            for (size_t y = 0; y < m->C; y++)
                if (cnt[c * m->C + y] > best)
                    best = cnt[c * m->C + y];
            best_sum[c >= k] += best;
            if (c < k)
                m->wl_mixed[features] += mixed[c];
        }
        m->wl_ceiling[features] = (double)best_sum[0] / (double)n;
        if (!features)
            m->wl_ceiling_test = nte ? (double)best_sum[1] / (double)nte : 0.0;
        free(lab);
    }
    free(rows);
    free(cls);
    free(cnt);
    free(first);
    free(mixed);
    return st;
}

static ls_status gm_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                           ls_err *err)
{
    *self = NULL;
    if (data == NULL || data->train.xf == NULL || data->train.n == 0 || data->train.dim < GNN_HEADER)
        return ls_fail(err, LS_EINVAL, "model gnn needs graph rows (engine/models/gnn/gnn.h); task %s has none", cfg->task);
    /* Its labels are read as bytes (the split's y): a data set keeps them so
     * up to 256 classes, and the GIN's head takes no more (gnn_net_init). */
    if (data->n_classes > DATASET_BYTE_CLASSES || data->train.y == NULL)
        return ls_fail(err, LS_EINVAL, "model gnn: task %s has %zu classes; the GIN takes 2 .. 256", cfg->task,
                       data->n_classes);
    const float *r0 = data->train.xf;
    gnn_inst *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ls_fail(err, LS_ENOMEM, "model gnn: out of memory");
    m->kind = (int)r0[0];
    m->N = (size_t)r0[1];
    m->F = (size_t)r0[2];
    m->dim = data->train.dim;
    m->C = data->n_classes;
    ls_status st = LS_OK;
    if ((m->kind != GNN_KIND_GRAPH && m->kind != GNN_KIND_NODE && m->kind != GNN_KIND_EDIT) || m->N == 0 ||
        m->N > GNN_MAX_NODES || m->F == 0 || gnn_row_dim(m->kind, m->N, m->F) != m->dim)
        st = ls_fail(err, LS_EINVAL, "model gnn: task %s's rows are not graph rows (kind %g, N %g, F %g, %zu "
                     "features)", cfg->task, (double)r0[0], (double)r0[1], (double)r0[2], m->dim);
    if (st == LS_OK)
        st = gnn_net_init(&m->net, m->F, (size_t)ls_config_int(cfg, "hidden"), m->C,
                          (size_t)ls_config_int(cfg, "layers"), ls_config_float(cfg, "gin_eps"), err);
    if (st == LS_OK)
        st = check_rows(m, &data->train, "train", err);
    if (st == LS_OK && data->test.xf != NULL)
        st = check_rows(m, &data->test, "test", err);
    if (st == LS_OK && m->kind == GNN_KIND_NODE)
        st = build_shared(m, data, err);
    if (st == LS_OK && m->kind == GNN_KIND_GRAPH)
        st = wl_figures(m, data, 0, err);
    if (st == LS_OK && m->kind == GNN_KIND_GRAPH)
        st = wl_figures(m, data, 1, err);
    if (st != LS_OK) {
        gm_destroy(m);
        return st;
    }
    const size_t N = m->N, H = m->net.H, C = m->C, np = m->net.n_params;
    m->max_leaf = model_leaf_size((size_t)ls_config_int(cfg, "leaf"), cfg->batch);
    size_t o = 0;
    m->s_csr_off = o;
    o += round_up(2 * (N + 1) * sizeof(int64_t));
    m->s_csr_adj = o;
    o += round_up(2 * N * N * sizeof(int32_t) + sizeof(int32_t));
    m->s_acts = o;
    o += round_up(gnn_acts_floats(&m->net, N) * sizeof(float));
    m->s_work = o;
    o += round_up(gnn_work_floats(&m->net, N) * sizeof(float));
    m->s_dh = o;
    o += round_up(m->net.L * N * H * sizeof(float));
    m->s_out = o;
    o += round_up(N * C * sizeof(float));
    m->s_small = o;
    o += round_up((2 * m->net.E + 2 * C) * sizeof(float));
    m->s_total = o;
    size_t t = 0;
    for (size_t l = 0; l < m->net.L; l++) {
        const size_t d = l == 0 ? m->F : H;
        const size_t offs[4] = { m->net.off_w1[l], m->net.off_b1[l], m->net.off_w2[l], m->net.off_b2[l] };
        static const char *const what[4] = { "W1", "b1", "W2", "b2" };
        for (int j = 0; j < 4; j++, t++) {
            snprintf(m->names[t], sizeof m->names[t], "l%u.%s", (unsigned)(l + 1) % 100u, what[j]);   /* l < GNN_MAX_LAYERS */
            m->tensors[t] = (ls_tensor){ m->names[t], offs[j], (j & 1) ? 1u : 2u,
                                         { (j & 1) ? H : (j == 0 ? d : H), (j & 1) ? 0 : H } };
        }
    }
    snprintf(m->names[t], sizeof m->names[t], "Wo");
    m->tensors[t] = (ls_tensor){ m->names[t], m->net.off_wo, 2, { m->net.E, C } };
    t++;
    snprintf(m->names[t], sizeof m->names[t], "bo");
    m->tensors[t] = (ls_tensor){ m->names[t], m->net.off_bo, 1, { C } };
    t++;
    /* Multiply-adds of one graph of N nodes (or the shared graph): forward,
     * weight gradient and input gradient of each dense layer. */
    double flops = 0;
    for (size_t l = 0; l < m->net.L; l++)
        flops += 6.0 * (double)N * (double)((l == 0 ? m->F : H) * H + H * H);
    if (m->kind == GNN_KIND_EDIT && data->test.n > 0) {
        m->slots = calloc(data->test.n, sizeof *m->slots);
        if (m->slots == NULL) {
            gm_destroy(m);
            return ls_fail(err, LS_ENOMEM, "model gnn: out of memory");
        }
        m->n_slots = data->test.n;
    }
    *info = (ls_model_info){
        .n_params = np,
        .leaf_len = np,
        .leaves = (cfg->batch + m->max_leaf - 1) / m->max_leaf,
        .finish_units = np,
        .hints.finish_mean = 1,
        .scratch_bytes = m->s_total,
        .eval_chunk = 64,
        .mean_loss = 1,
        .flops_per_sample = flops,
        .tensors = m->tensors,
        .n_tensors = t,
    };
    *self = m;
    return LS_OK;
}

static const ls_key gm_keys[] = {
    { "gin_eps", LS_KEY_FLOAT, "0", -0.99, 16, NULL, NULL, "epsilon of the self term (1+eps)*h_v (fixed)", 0 },
    { "hidden", LS_KEY_INT, "32", 1, 1024, NULL, NULL, "hidden width of every layer", 0 },
    { "layers", LS_KEY_INT, "3", 1, GNN_MAX_LAYERS, NULL, NULL, "message-passing layers", 0 },
    { "leaf", LS_KEY_INT, "16", 1, 1 << 20, NULL, NULL, "samples per leaf (its leaves are atoms of 16: no effect)", 0 },
};

const ls_model_desc gnn_model = {
    .size = sizeof(ls_model_desc),
    .name = "gnn",
    .summary = "a GIN-style message-passing network (sum aggregation, 2-layer MLP per layer, pull form)",
    .keys = gm_keys,
    .n_keys = sizeof gm_keys / sizeof gm_keys[0],
    .create = gm_create,
    .destroy = gm_destroy,
    .init = gm_init,
    .leaf = gm_leaf,
    .finish = model_finish_mean,
    .eval = gm_eval,
    .metrics = gm_metrics,
    .metric_part = gm_metric_part,
};
