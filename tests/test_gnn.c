/* test_gnn.c — the message-passing network (engine/models/gnn/gnn.h, model gnn):
 *   - the pull aggregation equals a brute-force sum over a dense adjacency
 *     matrix in double (inputs exact in binary32, so equal bit for bit);
 *   - leaf gradients against central differences of an independent
 *     double-precision forward pass written here (dense adjacency, no CSR,
 *     the head over every layer's output),
 *     for the three row kinds (GRAPH, EDIT, NODE) and a directed graph, so
 *     the transpose in the backward pull is checked;
 *   - LS_LEAF_ADD adds the leaf's own sum;
 *   - 1-WL: a 6-cycle and two triangles fall in one class, a path does not;
 *     on the atlas, the class counts networkx gives;
 *   - graph-edit's GED of unedited graphs equals the size bound (exact for
 *     an induced subgraph); karate's built-in data equal data/graphs, bad
 *     karate files are named with line and field;
 *   - the tasks atlas, karate and graph-edit give one trajectory hash at
 *     threads 1, 2, 3 and 8. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/core/config.h"
#include "engine/models/gnn/gnn.h"
#include "engine/graph/graph.h"
#include "engine/core/model.h"
#include "include/lockstep.h"

static uint64_t rng_state = 1;

static uint32_t next_u32(void)
{
    /* xorshift64*: the test's own stream, independent of engine/rng. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32);
}

static double unit(void)   /* [0, 1) */
{
    return (double)(next_u32() >> 8) / 16777216.0;
}

/* ---- an independent reference in double --------------------------------- */

typedef struct {
    size_t F, H, C, L;
    double eps;
} ref_sizes;

/* Parameter offsets, walked in the order gnn.h documents. */
static double ref_forward_nodes(const ref_sizes *z, const double *p, size_t n, const double *A /* [n][n]: A[v][u]
                                 edge u->v */, const double *X /* [n][F] */, double *Hout /* [n][L*H]: every
                                 layer's output side by side */)
{
    double Hc[16 * 64], Z[16 * 64], R[16 * 64];
    size_t d = z->F, o = 0;
    memcpy(Hc, X, n * d * sizeof(double));
    for (size_t l = 0; l < z->L; l++) {
        const double *W1 = p + o, *b1 = W1 + d * z->H, *W2 = b1 + z->H, *b2 = W2 + z->H * z->H;
        o += d * z->H + z->H + z->H * z->H + z->H;
        for (size_t v = 0; v < n; v++)
            for (size_t i = 0; i < d; i++) {
                double s = (1.0 + z->eps) * Hc[v * d + i];
                for (size_t u = 0; u < n; u++)
                    s += A[v * n + u] * Hc[u * d + i];
                Z[v * d + i] = s;
            }
        for (size_t v = 0; v < n; v++)
            for (size_t j = 0; j < z->H; j++) {
                double s = b1[j];
                for (size_t i = 0; i < d; i++)
                    s += Z[v * d + i] * W1[i * z->H + j];
                R[v * z->H + j] = s > 0 ? s : 0;
            }
        for (size_t v = 0; v < n; v++)
            for (size_t j = 0; j < z->H; j++) {
                double s = b2[j];
                for (size_t i = 0; i < z->H; i++)
                    s += R[v * z->H + i] * W2[i * z->H + j];
                Hc[v * z->H + j] = s > 0 || l + 1 == z->L ? s : 0;
                Hout[v * z->L * z->H + l * z->H + j] = Hc[v * z->H + j];
            }
        d = z->H;
    }
    return (double)o;
}

static double ref_xent(const ref_sizes *z, const double *p, size_t o, const double *e, unsigned y)
{
    const size_t E = z->L * z->H;
    const double *Wo = p + o, *bo = Wo + E * z->C;
    double lg[16], m = -1e300, s = 0;
    for (size_t k = 0; k < z->C; k++) {
        lg[k] = bo[k];
        for (size_t j = 0; j < E; j++)
            lg[k] += e[j] * Wo[j * z->C + k];
        if (lg[k] > m)
            m = lg[k];
    }
    for (size_t k = 0; k < z->C; k++)
        s += exp(lg[k] - m);
    return log(s) + m - lg[y];
}

/* The loss of one row (GRAPH or EDIT kind), or of node `node` of a shared
 * graph given as a dense matrix (NODE kind). */
static double ref_row_loss(const ref_sizes *z, const double *p, const float *row, unsigned y)
{
    const size_t N = (size_t)row[1], F = (size_t)row[2], n = (size_t)row[3];
    double A[16 * 16] = { 0 }, X[16 * 64] = { 0 }, Hn[16 * 256];
    for (size_t v = 0; v < n; v++) {
        for (size_t u = 0; u < n; u++)
            A[v * n + u] = row[GNN_HEADER + N * F + v * N + u];
        for (size_t f = 0; f < F; f++)
            X[v * F + f] = row[GNN_HEADER + v * F + f];
    }
    const size_t o = (size_t)ref_forward_nodes(z, p, n, A, X, Hn);
    if ((int)row[0] == GNN_KIND_GRAPH) {
        double e[256] = { 0 };
        for (size_t v = 0; v < n; v++)
            for (size_t j = 0; j < z->L * z->H; j++)
                e[j] += Hn[v * z->L * z->H + j];
        return ref_xent(z, p, o, e, y);
    }
    double loss = 0;
    for (size_t v = 0; v < n; v++)
        loss += ref_xent(z, p, o, Hn + v * z->L * z->H, (unsigned)row[GNN_HEADER + N * F + N * N + v]);
    return loss;
}

/* ---- data built here ------------------------------------------------------ */

#define T_N 6
#define T_F 3

/* A random graph row: n nodes, edges with probability 1/2 (symmetric
 * unless directed), features in [-1, 1). */
static void random_row(float *row, int kind, int directed)
{
    const size_t n = 3 + next_u32() % (T_N - 2);
    memset(row, 0, gnn_row_dim(kind, T_N, T_F) * sizeof(float));
    row[0] = (float)kind;
    row[1] = T_N;
    row[2] = T_F;
    row[3] = (float)n;
    for (size_t i = 0; i < n * T_F; i++)
        row[GNN_HEADER + i] = (float)(2 * unit() - 1);
    float *adj = row + GNN_HEADER + T_N * T_F;
    for (size_t v = 0; v < n; v++)
        for (size_t u = directed ? 0 : v + 1; u < n; u++)
            if (u != v && next_u32() % 2) {
                adj[v * T_N + u] = 1;
                if (!directed)
                    adj[u * T_N + v] = 1;
            }
    if (kind == GNN_KIND_EDIT)
        for (size_t v = 0; v < n; v++)
            adj[T_N * T_N + v] = (float)(next_u32() % 2);
}

static ls_dataset *make_rows(int kind, int directed, size_t n_train, size_t n_test)
{
    ls_dataset *d = NULL;
    ls_err err = { { 0 } };
    const size_t dim = gnn_row_dim(kind, T_N, T_F);
    assert_int_equal(ls_dataset_create(&d, "rows", 2, dim, n_train, n_test, &err), LS_OK);
    for (int test = 0; test < 2; test++)
        for (size_t i = 0; i < (test ? n_test : n_train); i++) {
            random_row(ls_dataset_x(d, test) + i * dim, kind, directed);
            ls_dataset_y(d, test)[i] = (uint8_t)(next_u32() % 2);
        }
    assert_int_equal(ls_dataset_seal(&*d, &err), LS_OK);
    return d;
}

/* NODE kind: one shared graph of T_NODES nodes. */
#define T_NODES 9
static ls_dataset *make_nodes(int directed)
{
    ls_dataset *d = NULL;
    ls_err err = { { 0 } };
    const size_t dim = gnn_row_dim(GNN_KIND_NODE, T_NODES, T_F);
    float A[T_NODES][T_NODES];
    memset(A, 0, sizeof A);
    for (size_t v = 0; v < T_NODES; v++)
        for (size_t u = directed ? 0 : v + 1; u < T_NODES; u++)
            if (u != v && next_u32() % 3 == 0) {
                A[v][u] = 1;
                if (!directed)
                    A[u][v] = 1;
            }
    assert_int_equal(ls_dataset_create(&d, "nodes", 2, dim, 6, T_NODES - 6, &err), LS_OK);
    for (size_t v = 0; v < T_NODES; v++) {
        const int test = v >= 6;
        float *row = ls_dataset_x(d, test) + (test ? v - 6 : v) * dim;
        row[0] = GNN_KIND_NODE;
        row[1] = T_NODES;
        row[2] = T_F;
        row[3] = (float)v;
        for (size_t f = 0; f < T_F; f++)
            row[GNN_HEADER + f] = (float)(2 * unit() - 1);
        for (size_t u = 0; u < T_NODES; u++)
            row[GNN_HEADER + T_F + u] = A[v][u];
        ls_dataset_y(d, test)[test ? v - 6 : v] = (uint8_t)(next_u32() % 2);
    }
    assert_int_equal(ls_dataset_seal(d, &err), LS_OK);
    return d;
}

/* NODE loss of node ids in the reference: the shared graph from the rows. */
static double ref_node_loss(const ref_sizes *z, const double *p, const ls_dataset *d, const uint32_t *ids,
                            size_t count)
{
    const size_t dim = d->train.dim;
    double A[T_NODES * T_NODES], X[T_NODES * T_F], Hn[T_NODES * 256];
    for (int test = 0; test < 2; test++) {
        const ls_split *s = test ? &d->test : &d->train;
        for (size_t i = 0; i < s->n; i++) {
            const float *row = s->xf + i * dim;
            const size_t v = (size_t)row[3];
            for (size_t f = 0; f < T_F; f++)
                X[v * T_F + f] = row[GNN_HEADER + f];
            for (size_t u = 0; u < T_NODES; u++)
                A[v * T_NODES + u] = row[GNN_HEADER + T_F + u];
        }
    }
    const size_t o = (size_t)ref_forward_nodes(z, p, T_NODES, A, X, Hn);
    double loss = 0;
    for (size_t i = 0; i < count; i++) {
        const float *row = d->train.xf + ids[i] * dim;
        loss += ref_xent(z, p, o, Hn + (size_t)row[3] * z->L * z->H, d->train.y[ids[i]]);
    }
    return loss;
}

/* ---- the gradient check --------------------------------------------------- */

static ls_config *gnn_config(size_t batch, size_t leaf, const char *eps)
{
    ls_config *cfg = NULL;
    ls_err err = { { 0 } };
    char b[32], l[32];
    snprintf(b, sizeof b, "%zu", batch);
    snprintf(l, sizeof l, "%zu", leaf);
    assert_int_equal(ls_config_create(&cfg, "atlas", "gnn", &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "hidden", "5", &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "layers", "2", &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "gin_eps", eps, &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "batch", b, &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "leaf", l, &err), LS_OK);
    return cfg;
}

static void check_gradients(const ls_dataset *d, const char *what)
{
    const size_t B = 4;
    ls_config *cfg = gnn_config(B, B, "0.25");
    ls_model *m = NULL;
    ls_err err = { { 0 } };
    assert_int_equal(model_create(&m, cfg, d, &err), LS_OK);
    const size_t np = m->info.n_params;
    float *p = malloc(np * sizeof(float)), *g = malloc(np * sizeof(float)), *g2 = malloc(np * sizeof(float));
    double *pd = malloc(np * sizeof(double));
    void *scratch = aligned_alloc(64, (m->info.scratch_bytes + 63) / 64 * 64);
    assert_true(p && g && g2 && pd && scratch);
    m->desc->init(m->self, p, 7);
    for (size_t i = 0; i < np; i++)   /* biases away from zero too */
        p[i] = p[i] + (float)((unit() - 0.5) * 0.2);
    uint32_t ids[4] = { 0, 1, 2, 1 };   /* a sample twice: NODE's dlogits add */
    ls_batch b = { d, ids, B, 1, 7 };
    const double loss = m->desc->leaf(m->self, p, &b, 0, g, LS_LEAF_WRITE, scratch);
    for (size_t i = 0; i < np; i++)
        pd[i] = p[i];
    const int node = (int)d->train.xf[0] == GNN_KIND_NODE;
    ref_sizes z = { T_F, 5, 2, 2, 0.25 };
    double ref = 0;
    if (node)
        ref = ref_node_loss(&z, pd, d, ids, B);
    else
        for (size_t i = 0; i < B; i++)
            ref += ref_row_loss(&z, pd, d->train.xf + ids[i] * d->train.dim, d->train.y[ids[i]]);
    if (fabs(ref - loss) > 1e-4 * (1 + fabs(ref)))
        fail_msg("%s: loss %.9g, reference %.9g", what, loss, ref);
    size_t bad = 0;
    for (size_t i = 0; i < np; i++) {
        const double h = 1e-6, keep = pd[i];
        double lp = 0, lm = 0;
        pd[i] = keep + h;
        if (node)
            lp = ref_node_loss(&z, pd, d, ids, B);
        else
            for (size_t s = 0; s < B; s++)
                lp += ref_row_loss(&z, pd, d->train.xf + ids[s] * d->train.dim, d->train.y[ids[s]]);
        pd[i] = keep - h;
        if (node)
            lm = ref_node_loss(&z, pd, d, ids, B);
        else
            for (size_t s = 0; s < B; s++)
                lm += ref_row_loss(&z, pd, d->train.xf + ids[s] * d->train.dim, d->train.y[ids[s]]);
        pd[i] = keep;
        const double fd = (lp - lm) / (2 * h);
        if (fabs(fd - (double)g[i]) > 1e-3 + 1e-2 * fabs(fd)) {
            if (bad++ < 5)
                printf("%s: param %zu: gradient %.7g, finite difference %.7g\n", what, i, (double)g[i], fd);
        }
    }
    if (bad)
        fail_msg("%s: %zu of %zu gradients differ from finite differences", what, bad, np);
    /* LS_LEAF_ADD: buf + the leaf's own sum, element by element. */
    for (size_t i = 0; i < np; i++)
        g2[i] = (float)i * 0.5f;
    model_leaf(m, p, &b, 0, g2, LS_LEAF_ADD, scratch);   /* the engine's add (leaf_adds 0) */
    for (size_t i = 0; i < np; i++) {
        const float want = (float)i * 0.5f + g[i];
        assert_memory_equal(&g2[i], &want, sizeof want);
    }
    printf("%s: %zu gradients equal finite differences of the double reference\n", what, np);
    free(p);
    free(g);
    free(g2);
    free(pd);
    free(scratch);
    model_destroy(m);
    ls_config_destroy(cfg);
}

static void test_gradients(void **state)
{
    (void)state;
    rng_state = 11;
    ls_dataset *d = make_rows(GNN_KIND_GRAPH, 0, 8, 4);
    check_gradients(d, "graph rows, undirected");
    ls_dataset_destroy(d);
    d = make_rows(GNN_KIND_GRAPH, 1, 8, 4);
    check_gradients(d, "graph rows, directed");
    ls_dataset_destroy(d);
    d = make_rows(GNN_KIND_EDIT, 1, 8, 4);
    check_gradients(d, "edit rows, directed");
    ls_dataset_destroy(d);
    d = make_nodes(0);
    check_gradients(d, "one shared graph, undirected");
    ls_dataset_destroy(d);
    d = make_nodes(1);
    check_gradients(d, "one shared graph, directed");
    ls_dataset_destroy(d);
}

/* ---- the pull against a dense sum ---------------------------------------- */

static void test_pull_dense(void **state)
{
    (void)state;
    rng_state = 5;
    gnn_net net;
    ls_err err = { { 0 } };
    for (int trial = 0; trial < 200; trial++) {
        const int directed = trial % 2;
        const float eps = trial % 3 == 0 ? 0.0f : 0.5f;   /* 1+eps exact: the sums stay exact */
        assert_int_equal(gnn_net_init(&net, T_F, 4, 2, 1, eps, &err), LS_OK);
        float row[GNN_HEADER + T_N * T_F + T_N * T_N + T_N];
        random_row(row, GNN_KIND_GRAPH, directed);
        /* Features multiples of 1/8 in [-4, 4): every partial sum exact. */
        for (size_t i = 0; i < T_N * T_F; i++)
            row[GNN_HEADER + i] = (float)((int)(next_u32() % 64) - 32) / 8.0f;
        int64_t oi[T_N + 1], oo[T_N + 1];
        int32_t ai[T_N * T_N], ao[T_N * T_N];
        gnn_csr g;
        gnn_csr_from_row(row, oi, ai, oo, ao, &g);
        float *params = calloc(net.n_params, sizeof(float));
        float *acts = calloc(gnn_acts_floats(&net, T_N), sizeof(float));
        assert_true(params && acts);
        gnn_forward(&net, params, &g, row + GNN_HEADER, acts);
        const size_t n = (size_t)g.n;
        const float *adj = row + GNN_HEADER + T_N * T_F;
        for (size_t v = 0; v < n; v++)
            for (size_t i = 0; i < T_F; i++) {
                double s = (1.0 + (double)eps) * row[GNN_HEADER + v * T_F + i];
                for (size_t u = 0; u < n; u++)
                    s += adj[v * T_N + u] * row[GNN_HEADER + u * T_F + i];
                const float want = (float)s;
                assert_memory_equal(&acts[v * T_F + i], &want, sizeof want);
            }
        /* The transpose holds the same arcs, reversed. */
        for (int32_t v = 0; v < g.n; v++)
            for (int64_t e = g.in_off[v]; e < g.in_off[v + 1]; e++) {
                const int32_t u = g.in_adj[e];
                int found = 0;
                for (int64_t f = g.out_off[u]; f < g.out_off[u + 1]; f++)
                    found += g.out_adj[f] == v;
                assert_int_equal(found, 1);
            }
        assert_true(g.in_off[n] == g.out_off[n]);
        free(params);
        free(acts);
    }
}

/* ---- 1-WL ----------------------------------------------------------------- */

static void ring_row(float *row, size_t n, const int (*edges)[2], size_t m)
{
    const size_t N = 6;
    memset(row, 0, gnn_row_dim(GNN_KIND_GRAPH, N, 1) * sizeof(float));
    row[0] = GNN_KIND_GRAPH;
    row[1] = (float)N;
    row[2] = 1;
    row[3] = (float)n;
    for (size_t v = 0; v < n; v++)
        row[GNN_HEADER + v] = 1;
    for (size_t e = 0; e < m; e++) {
        row[GNN_HEADER + N + (size_t)edges[e][0] * N + (size_t)edges[e][1]] = 1;
        row[GNN_HEADER + N + (size_t)edges[e][1] * N + (size_t)edges[e][0]] = 1;
    }
}

static void test_wl(void **state)
{
    (void)state;
    static const int c6[6][2] = { { 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 4 }, { 4, 5 }, { 5, 0 } };
    static const int k3k3[6][2] = { { 0, 1 }, { 1, 2 }, { 2, 0 }, { 3, 4 }, { 4, 5 }, { 5, 3 } };
    static const int p6[5][2] = { { 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 4 }, { 4, 5 } };
    static const int star[5][2] = { { 0, 1 }, { 0, 2 }, { 0, 3 }, { 0, 4 }, { 0, 5 } };
    float r[4][GNN_HEADER + 6 + 36];
    ring_row(r[0], 6, c6, 6);
    ring_row(r[1], 6, k3k3, 6);
    ring_row(r[2], 6, p6, 5);
    ring_row(r[3], 6, star, 5);
    const float *rows[4] = { r[0], r[1], r[2], r[3] };
    uint32_t cls[4];
    assert_int_equal(gnn_wl_classes(rows, 4, 1, cls), 3);
    assert_int_equal(cls[0], cls[1]);
    assert_true(cls[2] != cls[0] && cls[3] != cls[0] && cls[2] != cls[3]);
    /* A feature that differs (a triangle count) separates the first two. */
    for (size_t v = 0; v < 6; v++)
        r[1][GNN_HEADER + v] = 2;
    assert_int_equal(gnn_wl_classes(rows, 4, 1, cls), 4);
    assert_int_equal(gnn_wl_classes(rows, 4, 0, cls), 3);
    assert_int_equal(cls[0], cls[1]);
}

static int have_atlas(void);

/* The atlas's 1,249 graphs of 3 to 7 nodes fall into 1,223 1-WL classes of
 * the structure alone, and 4 (has a 4-clique) and 12 (has a triangle) of
 * them hold graphs of both labels: counted independently with networkx
 * 2.8.8 (weisfeiler_lehman_graph_hash, 7 iterations, keyed with the node
 * count; find_cliques, triangles). */
static void test_wl_atlas(void **state)
{
    (void)state;
    if (!have_atlas())
        fail_msg("%s cannot be read: install the Debian package python3-networkx (make deps)", GRAPH_ATLAS_PATH);
    static const char *const label[2] = { "4-clique", "triangle" };
    static const size_t mixed_want[2] = { 4, 12 };
    for (int li = 0; li < 2; li++) {
        ls_config *cfg = NULL;
        ls_dataset *d = NULL;
        ls_err err = { { 0 } };
        assert_int_equal(ls_config_create(&cfg, "atlas", "gnn", &err), LS_OK);
        assert_int_equal(ls_config_set(cfg, "label", label[li], &err), LS_OK);
        if (ls_task_find("atlas")->load(cfg, &d, &err) != LS_OK)
            fail_msg("atlas: %s", err.msg);
        const size_t n = d->train.n + d->test.n;
        assert_int_equal(n, 1249);
        const float **rows = malloc(n * sizeof *rows);
        uint32_t *cls = malloc(n * sizeof *cls);
        uint8_t *lab = malloc(n), *seen = calloc(n, 1), *mixed = calloc(n, 1);
        assert_true(rows && cls && lab && seen && mixed);
        for (size_t i = 0; i < n; i++) {
            const int test = i >= d->train.n;
            const ls_split *s = test ? &d->test : &d->train;
            const size_t j = test ? i - d->train.n : i;
            rows[i] = s->xf + j * s->dim;
            lab[i] = s->y[j];
        }
        const size_t k = gnn_wl_classes(rows, n, 0, cls);
        assert_int_equal(k, 1223);
        uint8_t first[1249];
        size_t n_mixed = 0;
        for (size_t i = 0; i < n; i++) {
            if (!seen[cls[i]]) {
                seen[cls[i]] = 1;
                first[cls[i]] = lab[i];
            } else if (first[cls[i]] != lab[i] && !mixed[cls[i]]) {
                mixed[cls[i]] = 1;
                n_mixed++;
            }
        }
        assert_int_equal(n_mixed, mixed_want[li]);
        free(rows);
        free(cls);
        free(lab);
        free(seen);
        free(mixed);
        ls_dataset_destroy(d);
        ls_config_destroy(cfg);
    }
}

/* The built-in karate data equal the files the project ships (one data
 * identity). */
static void test_karate_files(void **state)
{
    (void)state;
    const char *root = getenv("LOCKSTEP_ROOT");
    char edges[4096], clubs[4096];
    snprintf(edges, sizeof edges, "%s/data/graphs/karate.edgelist", root != NULL ? root : ".");
    snprintf(clubs, sizeof clubs, "%s/data/graphs/karate.clubs", root != NULL ? root : ".");
    ls_dataset *d[2] = { NULL, NULL };
    for (int i = 0; i < 2; i++) {
        ls_config *cfg = NULL;
        ls_err err = { { 0 } };
        assert_int_equal(ls_config_create(&cfg, "karate", "gnn", &err), LS_OK);
        if (i == 1) {
            assert_int_equal(ls_config_set(cfg, "edges", edges, &err), LS_OK);
            assert_int_equal(ls_config_set(cfg, "clubs", clubs, &err), LS_OK);
        }
        if (ls_task_find("karate")->load(cfg, &d[i], &err) != LS_OK)
            fail_msg("karate: %s", err.msg);
        ls_config_destroy(cfg);
    }
    assert_true(d[0]->hash == d[1]->hash);
    /* 78 edges: the adjacency rows hold 156 ones. */
    size_t ones = 0;
    for (int test = 0; test < 2; test++) {
        const ls_split *s = test ? &d[0]->test : &d[0]->train;
        for (size_t i = 0; i < s->n; i++)
            for (size_t u = 0; u < 34; u++)
                ones += s->xf[i * s->dim + GNN_HEADER + 34 + u] != 0.0f;
    }
    assert_int_equal(ones, 156);
    ls_dataset_destroy(d[0]);
    ls_dataset_destroy(d[1]);
}

/* Bad karate files: LS_EFORMAT / LS_EIO naming the file, line and field. */
static void test_karate_bad_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_gnn_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char edges[64], clubs[64], missing[64];
    snprintf(edges, sizeof edges, "%s/e", dir);
    snprintf(clubs, sizeof clubs, "%s/c", dir);
    snprintf(missing, sizeof missing, "%s/none", dir);
    static const struct {
        const char *edges, *clubs, *want;
        ls_status st;
    } cases[] = {
        { "0 1\n1 x\n", NULL, ":2: field 2", LS_EFORMAT },
        { "0 1\n", NULL, "2 nodes; the karate club has 34", LS_EFORMAT },
        { NULL, "0 0\n1 7\n", ":2: field 2: club 7", LS_EFORMAT },
        { NULL, "0 0\n0 1\n", ":2: field 1: node 0", LS_EFORMAT },
        { NULL, "0 0\n", "node 1 has no club", LS_EFORMAT },
        { NULL, "", NULL, LS_EIO },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ls_config *cfg = NULL;
        ls_dataset *d = NULL;
        ls_err err = { { 0 } };
        assert_int_equal(ls_config_create(&cfg, "karate", "gnn", &err), LS_OK);
        if (cases[i].edges != NULL) {
            FILE *f = fopen(edges, "w");
            assert_non_null(f);
            fputs(cases[i].edges, f);
            fclose(f);
            assert_int_equal(ls_config_set(cfg, "edges", edges, &err), LS_OK);
        }
        if (cases[i].clubs != NULL && cases[i].st != LS_EIO) {
            FILE *f = fopen(clubs, "w");
            assert_non_null(f);
            fputs(cases[i].clubs, f);
            fclose(f);
            assert_int_equal(ls_config_set(cfg, "clubs", clubs, &err), LS_OK);
        }
        if (cases[i].st == LS_EIO)
            assert_int_equal(ls_config_set(cfg, "clubs", missing, &err), LS_OK);
        const ls_status st = ls_task_find("karate")->load(cfg, &d, &err);
        if (st != cases[i].st || d != NULL)
            fail_msg("karate case %zu: status %d, want %d (%s)", i, (int)st, (int)cases[i].st, err.msg);
        const char *file = cases[i].st == LS_EIO ? missing : cases[i].edges != NULL ? edges : clubs;
        if (strstr(err.msg, file) == NULL || (cases[i].want != NULL && strstr(err.msg, cases[i].want) == NULL))
            fail_msg("karate case %zu: '%s' does not name %s and '%s'", i, err.msg, file,
                     cases[i].want ? cases[i].want : "");
        ls_config_destroy(cfg);
    }
    remove(edges);
    remove(clubs);
    rmdir(dir);
}

/* graph-edit's distances: a target is an induced subgraph of its graph, so
 * the exact GED from the unedited graph is the size bound, |S| + the edges
 * touching S (S the deleted nodes): mean_ged_unedited must be its mean. */
static void test_graph_edit_ged(void **state)
{
    (void)state;
    if (!have_atlas())
        fail_msg("%s cannot be read: install the Debian package python3-networkx (make deps)", GRAPH_ATLAS_PATH);
    ls_config *cfg = NULL;
    ls_err err = { { 0 } };
    assert_int_equal(ls_config_create(&cfg, "graph-edit", "gnn", &err), LS_OK);
    ls_session_opts o = { .size = sizeof(ls_session_opts) };
    o.threads = 2;
    ls_session *s = NULL;
    if (ls_session_open(&s, cfg, &o, &err) != LS_OK)
        fail_msg("graph-edit: %s", err.msg);
    ls_metric m[LS_MAX_METRICS];
    size_t n = 0;
    assert_int_equal(ls_session_evaluate(s, m, &n, &err), LS_OK);
    ls_dataset *d = NULL;
    assert_int_equal(ls_task_find("graph-edit")->load(cfg, &d, &err), LS_OK);
    const size_t N = 7, F = 3;
    double sum = 0.0;
    for (size_t i = 0; i < d->test.n; i++) {
        const float *row = d->test.xf + i * d->test.dim;
        const size_t nv = (size_t)row[3];
        const float *adj = row + GNN_HEADER + N * F, *target = adj + N * N;
        int64_t cost = 0;
        for (size_t v = 0; v < nv; v++) {
            cost += target[v] != 0.0f;
            for (size_t u = v + 1; u < nv; u++)
                cost += adj[v * N + u] != 0.0f && (target[v] != 0.0f || target[u] != 0.0f);
        }
        sum = sum + (double)cost;
    }
    const double want = sum / (double)d->test.n;
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].name, "mean_ged_unedited") == 0) {
            found = 1;
            if (m[i].value != want)
                fail_msg("mean_ged_unedited %.17g, the size bound gives %.17g", m[i].value, want);
        }
    assert_true(found);
    printf("graph-edit: mean GED of the unedited graphs %.4f, as the size bound says\n", want);
    ls_dataset_destroy(d);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    ls_config_destroy(cfg);
}

/* ---- the tasks at several thread counts ---------------------------------- */

/* The trajectory hash after `steps` steps; the evaluation then into m[*n]. */
static uint64_t run_task(const char *task, const char *const *sets, int threads, int steps, const ls_dataset *data,
                         ls_metric *m, size_t *n)
{
    ls_config *cfg = NULL;
    ls_err err = { { 0 } };
    assert_int_equal(ls_config_create(&cfg, task, "gnn", &err), LS_OK);
    for (size_t i = 0; sets != NULL && sets[i] != NULL; i += 2)
        if (ls_config_set(cfg, sets[i], sets[i + 1], &err) != LS_OK)
            fail_msg("%s: %s", task, err.msg);
    ls_session_opts o = { .size = sizeof(ls_session_opts) };
    o.threads = threads;
    o.data = data;
    ls_session *s = NULL;
    if (ls_session_open(&s, cfg, &o, &err) != LS_OK)
        fail_msg("%s: %s", task, err.msg);
    for (int t = 0; t < steps; t++)
        assert_int_equal(ls_session_step(s, NULL, &err), LS_OK);
    ls_session_state st;
    ls_session_state_get(s, &st);
    if (m != NULL && ls_session_evaluate(s, m, n, &err) != LS_OK)
        fail_msg("%s: evaluate: %s", task, err.msg);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    ls_config_destroy(cfg);
    return st.traj_hash;
}

static void threads_equal(const char *task, const char *const *sets, int steps)
{
    static const int THREADS[] = { 1, 2, 3, 8 };
    uint64_t ref = 0;
    ls_metric m0[LS_MAX_METRICS], m[LS_MAX_METRICS];
    size_t n0 = 0, n = 0;
    for (size_t i = 0; i < 4; i++) {
        const uint64_t h = run_task(task, sets, THREADS[i], steps, NULL, i == 0 ? m0 : m, i == 0 ? &n0 : &n);
        if (i == 0)
            ref = h;
        else if (h != ref)
            fail_msg("%s: threads %d trajectory %016llx != threads 1 %016llx", task, THREADS[i],
                     (unsigned long long)h, (unsigned long long)ref);
        /* The evaluation (graph-edit's GEDs computed per test graph on the
         * pool's threads) is the same to the bit at every thread count. */
        for (size_t k = 0; i > 0 && k < n0; k++)
            if (n != n0 || strcmp(m[k].name, m0[k].name) != 0 || memcmp(&m[k].value, &m0[k].value, sizeof(double)))
                fail_msg("%s: threads %d: %s %.17g != threads 1 %s %.17g", task, THREADS[i], m[k].name, m[k].value,
                         m0[k].name, m0[k].value);
    }
    assert_true(n0 > 0);
    printf("%s: %d steps, one trajectory hash %016llx at threads 1, 2, 3, 8\n", task, steps,
           (unsigned long long)ref);
}

static int have_atlas(void)
{
    FILE *f = fopen(GRAPH_ATLAS_PATH, "rb");
    if (f != NULL)
        fclose(f);
    return f != NULL;
}

static void test_atlas_threads(void **state)
{
    (void)state;
    if (!have_atlas())
        fail_msg("%s cannot be read: install the Debian package python3-networkx (make deps)", GRAPH_ATLAS_PATH);
    static const char *const sets[] = { "batch", "37", "leaf", "16", NULL };
    threads_equal("atlas", sets, 6);
}

static void test_graph_edit_threads(void **state)
{
    (void)state;
    if (!have_atlas())
        fail_msg("%s cannot be read: install the Debian package python3-networkx (make deps)", GRAPH_ATLAS_PATH);
    static const char *const sets[] = { "batch", "19", "leaf", "16", NULL };
    threads_equal("graph-edit", sets, 6);
}

static void test_karate_threads(void **state)
{
    (void)state;
    static const char *const sets[] = { "batch", "17", "leaf", "16", NULL };
    threads_equal("karate", sets, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pull_dense),
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_wl),
        cmocka_unit_test(test_wl_atlas),
        cmocka_unit_test(test_graph_edit_ged),
        cmocka_unit_test(test_karate_files),
        cmocka_unit_test(test_karate_bad_files),
        cmocka_unit_test(test_atlas_threads),
        cmocka_unit_test(test_karate_threads),
        cmocka_unit_test(test_graph_edit_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
