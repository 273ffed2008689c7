/* test_ged.c — graph edit distance (engine/graph/ged.h) against independent
 * answers: the small checks of docs/graphs.md (C4–K4 2, P4–star 2, K3–K1 5,
 * G–G 0, symmetry), and on samples of Graph Atlas pairs (up to 7 nodes;
 * unlabelled with unit costs, labelled with other costs, and directed
 * graphs) a brute force over every node map written here, with its own cost
 * of an edit path: exact equals it, lower <= exact <= upper. ged_pairs gives
 * the same results at 1, 2, 3 and 8 threads as one call per pair, and with
 * its controls (a progress callback, a stop flag) as without; a stop flag
 * ends a long search promptly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/graph/ged.h"
#include "engine/graph/graph.h"
#include "reduce/pool.h"
#include "tests/proc_util.h"

static const int thread_counts[4] = {1, 2, 3, 8};
static pool *pools[4];

static int setup(void **state)
{
    (void)state;
    ls_err err;
    for (int i = 0; i < 4; i++)
        if (pool_create(&pools[i], thread_counts[i], &err) != LS_OK)
            return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++)
        pool_destroy(pools[i]);
    return 0;
}

/* "0-1 1-2 ..." on n nodes. */
static graph *make(int n, const char *edges, int directed, const int32_t *labels)
{
    int32_t s[64], d[64];
    int m = 0;
    const char *p = edges;
    while (*p) {
        char *e;
        s[m] = (int32_t)strtol(p, &e, 10);
        d[m] = (int32_t)strtol(e + 1, &e, 10);
        m++;
        p = e;
        while (*p == ' ')
            p++;
    }
    graph *g;
    ls_err err = {{0}};
    if (graph_create(&g, n, directed, s, d, m, labels, NULL, &err) != LS_OK)
        fail_msg("%s", err.msg);
    return g;
}

static ged_result ged(const graph *a, const graph *b, const ged_costs *c)
{
    ged_result r;
    ls_err err = {{0}};
    if (ged_compute(a, b, c, 10, &r, &err) != LS_OK)
        fail_msg("%s", err.msg);
    return r;
}

/* ---- the brute force ---------------------------------------------------- */

typedef struct {
    const graph *a, *b;
    const ged_costs *c;
    int32_t map[16];
    int used[16];
    uint8_t A[16][16], B[16][16];   /* adjacency, read once through graph_has_edge */
    int64_t best;
} brute;

/* The cost of the edit path of a complete map, from the definition: node
 * deletions, insertions and relabellings; every edge of a without an edge
 * at its image is deleted; every edge of b without an edge at its preimage
 * is inserted. */
static int64_t brute_path_cost(const brute *s)
{
    const graph *a = s->a, *b = s->b;
    const ged_costs *c = s->c;
    int32_t pre[16];
    int64_t cost = 0;
    for (int j = 0; j < b->n; j++)
        pre[j] = -1;
    for (int i = 0; i < a->n; i++) {
        if (s->map[i] < 0) {
            cost += c->node_del;
            continue;
        }
        pre[s->map[i]] = i;
        if (a->label[i] != b->label[s->map[i]])
            cost += c->node_sub;
    }
    for (int j = 0; j < b->n; j++)
        if (pre[j] < 0)
            cost += c->node_ins;
    for (int i = 0; i < a->n; i++)
        for (int k = 0; k < a->n; k++) {
            if (!a->directed && k <= i)
                continue;
            if (!s->A[i][k])
                continue;
            if (s->map[i] < 0 || s->map[k] < 0 || !s->B[s->map[i]][s->map[k]])
                cost += c->edge_del;
        }
    for (int j = 0; j < b->n; j++)
        for (int l = 0; l < b->n; l++) {
            if (!b->directed && l <= j)
                continue;
            if (!s->B[j][l])
                continue;
            if (pre[j] < 0 || pre[l] < 0 || !s->A[pre[j]][pre[l]])
                cost += c->edge_ins;
        }
    return cost;
}

static void brute_rec(brute *s, int i)
{
    if (i == s->a->n) {
        int64_t cost = brute_path_cost(s);
        if (cost < s->best)
            s->best = cost;
        return;
    }
    s->map[i] = -1;
    brute_rec(s, i + 1);
    for (int j = 0; j < s->b->n; j++) {
        if (s->used[j])
            continue;
        s->used[j] = 1;
        s->map[i] = j;
        brute_rec(s, i + 1);
        s->used[j] = 0;
    }
}

static int64_t brute_ged(const graph *a, const graph *b, const ged_costs *c)
{
    brute s;
    memset(&s, 0, sizeof s);
    s.a = a;
    s.b = b;
    s.c = c;
    s.best = INT64_MAX;
    assert_true(a->n <= 16 && b->n <= 16);
    for (int i = 0; i < a->n; i++)
        for (int k = 0; k < a->n; k++)
            s.A[i][k] = (uint8_t)graph_has_edge(a, i, k);
    for (int j = 0; j < b->n; j++)
        for (int l = 0; l < b->n; l++)
            s.B[j][l] = (uint8_t)graph_has_edge(b, j, l);
    brute_rec(&s, 0);
    return s.best;
}

static void check_pair(const graph *a, const graph *b, const ged_costs *c, const char *what, long i, long j)
{
    ged_result r = ged(a, b, c);
    int64_t want = brute_ged(a, b, c);
    if (r.exact != want || r.lower > r.exact || r.exact > r.upper || r.lower < 0)
        fail_msg("%s %ld–%ld: lower %lld exact %lld upper %lld; brute force %lld", what, i, j, (long long)r.lower,
                 (long long)r.exact, (long long)r.upper, (long long)want);
}

/* ---- cases -------------------------------------------------------------- */

static void test_small(void **state)
{
    (void)state;
    graph *c4 = make(4, "0-1 1-2 2-3 3-0", 0, NULL), *k4 = make(4, "0-1 0-2 0-3 1-2 1-3 2-3", 0, NULL);
    graph *p4 = make(4, "0-1 1-2 2-3", 0, NULL), *star = make(4, "0-1 0-2 0-3", 0, NULL);
    graph *k3 = make(3, "0-1 1-2 0-2", 0, NULL), *k1 = make(1, "", 0, NULL), *empty = make(0, "", 0, NULL);
    static const struct {
        int a, b;
        int64_t want;
    } checks[] = {{0, 1, 2}, {2, 3, 2}, {4, 5, 5}, {0, 0, 0}, {1, 1, 0}, {2, 2, 0}, {4, 4, 0}, {6, 6, 0},
                  {5, 6, 1}, {4, 6, 6}};
    graph *gs[] = {c4, k4, p4, star, k3, k1, empty};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        for (int rev = 0; rev < 2; rev++) {   /* symmetric for symmetric costs */
            const graph *a = gs[rev ? checks[i].b : checks[i].a], *b = gs[rev ? checks[i].a : checks[i].b];
            ged_result r = ged(a, b, NULL);
            if (r.exact != checks[i].want || r.lower > r.exact || r.exact > r.upper)
                fail_msg("check %zu%s: lower %lld exact %lld upper %lld, want %lld", i, rev ? " reversed" : "",
                         (long long)r.lower, (long long)r.exact, (long long)r.upper, (long long)checks[i].want);
        }
    }
    /* Over the node cap: no exact, the bounds still. */
    ged_result r;
    ls_err err = {{0}};
    assert_int_equal(ged_compute(c4, k3, NULL, 3, &r, &err), LS_OK);
    assert_int_equal(r.exact, -1);
    assert_true(r.lower >= 2 && r.lower <= r.upper);   /* a node and 1 edge at least */
    /* The path cost of a given map. */
    int32_t map[4] = {0, 1, 2, 3};
    assert_int_equal(ged_path_cost(c4, k4, NULL, map), 2);
    int32_t del[4] = {-1, -1, -1, -1};
    assert_int_equal(ged_path_cost(c4, k4, NULL, del), 4 + 4 + 4 + 6);
    /* Directed against undirected: refused. */
    graph *d = make(2, "0-1", 1, NULL);
    assert_int_equal(ged_compute(d, k3, NULL, 10, &r, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "directed"));
    graph *all[] = {c4, k4, p4, star, k3, k1, empty, d};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        graph_destroy(all[i]);
}

static graph **atlas(int32_t *n)
{
    const char *path = proc_need_file(GRAPH_ATLAS_PATH, NULL, "python3-networkx");
    ls_err err = {{0}};
    graph **gs;
    if (graph_load_atlas(&gs, n, path, &err) != LS_OK)
        fail_msg("%s", err.msg);
    return gs;
}

/* Atlas graphs 0..208 have up to 6 nodes, 209..1252 have 7. */
static void test_atlas_unit(void **state)
{
    (void)state;
    int32_t n;
    graph **gs = atlas(&n);
    ged_costs unit = GED_COSTS_UNIT;
    long pairs = 0;
    for (long i = 1; i < 209; i += 5)
        for (long j = 2; j < 209; j += 13, pairs++)
            check_pair(gs[i], gs[j], &unit, "Atlas", i, j);
    for (long i = 209; i < 1253; i += 211)
        for (long j = 211; j < 1253; j += 263, pairs++)
            check_pair(gs[i], gs[j], &unit, "Atlas", i, j);
    printf("ged: %ld Atlas pairs equal to the brute force\n", pairs);
    graph_list_destroy(gs, n);
}

/* A copy of g with labels from a fixed sequence (0..L-1). */
static graph *relabel(const graph *g, uint32_t *seed, int L, int directed)
{
    int32_t lab[16], s[64], d[64];
    int m = 0;
    for (int v = 0; v < g->n; v++) {
        *seed = *seed * 1103515245u + 12345u;
        lab[v] = (int32_t)((*seed >> 16) % (uint32_t)L);
    }
    for (int v = 0; v < g->n; v++)
        for (int64_t e = g->out_off[v]; e < g->out_off[v + 1]; e++) {
            if (!directed && g->out_adj[e] < v)
                continue;
            /* Directed: each edge becomes an arc whose direction the
             * sequence picks, sometimes both. */
            *seed = *seed * 1103515245u + 12345u;
            uint32_t r = (*seed >> 16) % 3;
            s[m] = r == 1 ? g->out_adj[e] : v;
            d[m] = r == 1 ? v : g->out_adj[e];
            m++;
            if (directed && r == 2) {
                s[m] = g->out_adj[e];
                d[m] = v;
                m++;
            }
        }
    graph *out;
    ls_err err = {{0}};
    if (graph_create(&out, g->n, directed, s, d, m, lab, NULL, &err) != LS_OK)
        fail_msg("%s", err.msg);
    return out;
}

static void test_atlas_labelled_costs(void **state)
{
    (void)state;
    int32_t n;
    graph **gs = atlas(&n);
    static const ged_costs costs[3] = {{1, 1, 1, 1, 1}, {2, 3, 1, 2, 1}, {5, 1, 2, 1, 3}};
    uint32_t seed = 7;
    long pairs = 0;
    for (int directed = 0; directed < 2; directed++)
        for (long i = 3; i < 209; i += 11)
            for (long j = 5; j < 209; j += 23, pairs++) {
                graph *a = relabel(gs[i], &seed, 2 + (int)(i % 3), directed);
                graph *b = relabel(gs[j], &seed, 2 + (int)(j % 3), directed);
                check_pair(a, b, &costs[(i + j) % 3], directed ? "directed labelled" : "labelled", i, j);
                graph_destroy(a);
                graph_destroy(b);
            }
    printf("ged: %ld labelled or directed pairs equal to the brute force\n", pairs);
    graph_list_destroy(gs, n);
}

static void test_pairs_threads(void **state)
{
    (void)state;
    int32_t n;
    graph **gs = atlas(&n);
    enum { P = 400 };
    const graph *a[P], *b[P];
    ged_result one[P], many[P];
    uint32_t seed = 1;
    for (int i = 0; i < P; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = gs[209 + (seed >> 8) % 1044];
        seed = seed * 1103515245u + 12345u;
        b[i] = gs[150 + (seed >> 8) % 1103];
        ls_err err = {{0}};
        assert_int_equal(ged_compute(a[i], b[i], NULL, i % 2 ? 7 : 6, &one[i], &err), LS_OK);
    }
    for (int t = 0; t < 4; t++) {
        ls_err err = {{0}};
        /* Half the pairs under the cap, half over it: two calls. */
        memset(many, 0xa5, sizeof many);
        for (int half = 0; half < 2; half++) {
            const graph *ha[P / 2], *hb[P / 2];
            ged_result hr[P / 2];
            for (int i = 0; i < P / 2; i++) {
                ha[i] = a[2 * i + half];
                hb[i] = b[2 * i + half];
            }
            assert_int_equal(ged_pairs(ha, hb, P / 2, NULL, half ? 7 : 6, pools[t], hr, &err), LS_OK);
            for (int i = 0; i < P / 2; i++)
                many[2 * i + half] = hr[i];
        }
        if (memcmp(one, many, sizeof one) != 0)
            fail_msg("ged_pairs at %d threads differs from one call per pair", thread_counts[t]);
    }
    graph_list_destroy(gs, n);
}

/* The graph-edit task's shape: a labelled chain, and the chain without its
 * label-0 nodes (and their edges). Deleting those nodes is an edit path;
 * its cost is the exact distance exactly when the lower bound reaches it,
 * so exact must equal both. Chains of 12 to 24 nodes: far past the brute
 * force. (The search is exponential at worst: with this sequence a chain of
 * 27 nodes takes 24 s, one of 30 nodes 0.1 s.) */
static void test_chains(void **state)
{
    (void)state;
    uint32_t seed = 11;
    for (int n = 12; n <= 24; n += 3) {
        int32_t lab[32], s[32], d[32], keep_lab[32], ks[32], kd[32], idx[32], map[32];
        int nk = 0, ne = 0, nke = 0;
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            lab[i] = (int32_t)((seed >> 16) % 4);
            idx[i] = lab[i] != 0 ? nk : -1;
            map[i] = idx[i];
            if (lab[i] != 0)
                keep_lab[nk++] = lab[i];
        }
        for (int i = 0; i + 1 < n; i++) {
            s[ne] = i;
            d[ne++] = i + 1;
            if (idx[i] >= 0 && idx[i + 1] >= 0) {
                ks[nke] = idx[i];
                kd[nke++] = idx[i + 1];
            }
        }
        graph *a, *b;
        ls_err err = {{0}};
        assert_int_equal(graph_create(&a, n, 0, s, d, ne, lab, NULL, &err), LS_OK);
        assert_int_equal(graph_create(&b, nk, 0, ks, kd, nke, keep_lab, NULL, &err), LS_OK);
        int64_t path = ged_path_cost(a, b, NULL, map);
        assert_int_equal(path, (n - nk) + (ne - nke));   /* nodes and edges deleted */
        ged_result r;
        assert_int_equal(ged_compute(a, b, NULL, 32, &r, &err), LS_OK);
        if (r.exact != path || r.lower != path || r.upper < path)
            fail_msg("chain of %d: lower %lld exact %lld upper %lld, deletion path %lld", n, (long long)r.lower,
                     (long long)r.exact, (long long)r.upper, (long long)path);
        graph_destroy(a);
        graph_destroy(b);
    }
}

/* A pair whose exact search is long (16 nodes, 30 edges each, bounds far
 * apart: tens of seconds unstopped). */
static void hard_pair(graph **a, graph **b)
{
    for (int k = 0; k < 2; k++) {
        int32_t s[30], d[30];
        int m = 0;
        uint32_t x = k == 0 ? 12345u : 678901u;
        while (m < 30) {
            x = x * 1103515245u + 12345u;
            int32_t u = (int32_t)((x >> 16) % 16);
            x = x * 1103515245u + 12345u;
            int32_t v = (int32_t)((x >> 16) % 16);
            int dup = u == v;
            for (int i = 0; i < m && !dup; i++)
                dup = (s[i] == u && d[i] == v) || (s[i] == v && d[i] == u);
            if (!dup) {
                s[m] = u;
                d[m++] = v;
            }
        }
        ls_err err = {{0}};
        if (graph_create(k == 0 ? a : b, 16, 0, s, d, m, NULL, NULL, &err) != LS_OK)
            fail_msg("%s", err.msg);
    }
}

typedef struct {
    int calls;
    uint64_t last_nodes;
    volatile int *stop_after_first;   /* set on the first call, or NULL */
} progress_seen;

static void on_progress(void *ctx, const ged_progress *p)
{
    progress_seen *ps = ctx;
    __atomic_add_fetch(&ps->calls, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&ps->last_nodes, p->nodes, __ATOMIC_RELAXED);
    if (ps->stop_after_first != NULL)
        *ps->stop_after_first = 1;
}

/* The controls only read: with a progress callback and a stop flag left at
 * zero the results equal ged_pairs' at every thread count; a stop flag
 * already set, or set by the first progress call inside a long search,
 * ends the call promptly with LS_EINTR. */
static void test_controls(void **state)
{
    (void)state;
    graph *g[6];
    g[0] = make(4, "0-1 1-2 2-3 3-0", 0, NULL);
    g[1] = make(4, "0-1 0-2 0-3 1-2 1-3 2-3", 0, NULL);
    g[2] = make(5, "0-1 1-2 2-3 3-4", 0, NULL);
    g[3] = make(5, "0-1 0-2 0-3 0-4", 0, NULL);
    g[4] = make(6, "0-1 1-2 2-0 3-4 4-5 5-3", 0, NULL);
    g[5] = make(6, "0-1 1-2 2-3 3-4 4-5 5-0", 0, NULL);
    const graph *pa[3] = {g[0], g[2], g[4]}, *pb[3] = {g[1], g[3], g[5]};
    ged_result want[3], got[3];
    ls_err err = {{0}};
    assert_int_equal(ged_pairs(pa, pb, 3, NULL, 10, NULL, want, &err), LS_OK);
    volatile int stop = 0;
    for (int t = 0; t < 4; t++) {
        progress_seen ps = {0, 0, NULL};
        const ged_control ctl = {&stop, on_progress, &ps};
        assert_int_equal(ged_pairs_run(pa, pb, 3, NULL, 10, pools[t], &ctl, got, &err), LS_OK);
        assert_memory_equal(got, want, sizeof want);
        assert_true(ps.calls >= 3);   /* at least once per finished pair */
    }
    stop = 1;
    const ged_control preset = {&stop, NULL, NULL};
    assert_int_equal(ged_pairs_run(pa, pb, 3, NULL, 10, pools[1], &preset, got, &err), LS_EINTR);
    assert_non_null(strstr(err.msg, "interrupted"));
    for (int i = 0; i < 6; i++)
        graph_destroy(g[i]);

    graph *a, *b;
    hard_pair(&a, &b);
    stop = 0;
    progress_seen ps = {0, 0, &stop};
    const ged_control ctl = {&stop, on_progress, &ps};
    const graph *ha[1] = {a}, *hb[1] = {b};
    ged_result r;
    assert_int_equal(ged_pairs_run(ha, hb, 1, NULL, 16, pools[0], &ctl, &r, &err), LS_EINTR);
    assert_true(ps.calls >= 1 && ps.last_nodes >= GED_PROGRESS_NODES && ps.last_nodes < 4 * GED_PROGRESS_NODES);
    graph_destroy(a);
    graph_destroy(b);
}

static void test_costs_parse(void **state)
{
    (void)state;
    ged_costs c = GED_COSTS_UNIT;
    ls_err err = {{0}};
    assert_int_equal(ged_costs_parse(&c, "2,3,4,5,6", &err), LS_OK);
    assert_true(c.node_sub == 2 && c.node_del == 3 && c.node_ins == 4 && c.edge_del == 5 && c.edge_ins == 6);
    c = GED_COSTS_UNIT;
    assert_int_equal(ged_costs_parse(&c, "edge-del=7,node-sub=0", &err), LS_OK);
    assert_true(c.node_sub == 0 && c.node_del == 1 && c.edge_del == 7 && c.edge_ins == 1);
    ged_costs before = c;
    assert_int_equal(ged_costs_parse(&c, "node-sub=x", &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "'x'"));
    assert_int_equal(ged_costs_parse(&c, "edge-move=1", &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "edge-move"));
    assert_int_equal(ged_costs_parse(&c, "1,2,3,4,5,6", &err), LS_EINVAL);
    assert_int_equal(ged_costs_parse(&c, "-1", &err), LS_EINVAL);
    assert_int_equal(ged_costs_parse(&c, "", &err), LS_EINVAL);
    assert_memory_equal(&c, &before, sizeof c);   /* a refused text changes nothing */
}

int main(int argc, char **argv)
{
    /* An optional argument runs the cases whose names match it. */
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_atlas_unit),
        cmocka_unit_test(test_atlas_labelled_costs),
        cmocka_unit_test(test_pairs_threads),
        cmocka_unit_test(test_chains),
        cmocka_unit_test(test_costs_parse),
        cmocka_unit_test(test_controls),
    };
    return cmocka_run_group_tests(tests, setup, teardown) != 0;
}
