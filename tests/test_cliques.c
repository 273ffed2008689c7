/* test_cliques.c — k-clique counts and listings (engine/graph/cliques.h) against
 * independent answers: the published counts of docs/graphs.md (karate, Les
 * Misérables, WormNet k = 3 and 4), and on every graph of the Graph Atlas a
 * brute-force check of every node subset written here. Listings: every
 * listed clique is a clique, sorted, none twice, the set equal to the brute
 * force's; the bytes of a listing (XXH3) are the same at 1, 2, 3 and 8
 * threads, also when roots are listed past the buffer, and with a cap the
 * listing is a prefix of the full one. The popcnt path and the portable one
 * give the same counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include <cmocka.h>

#include "engine/graph/cliques.h"
#include "engine/graph/graph.h"
#include "reduce/pool.h"
#include "tests/proc_util.h"

/* Where python3-networkx puts WormNet without its version in the path. */
#define WORMNET_ALT "/usr/share/doc/python3-networkx/examples/algorithms/WormNet.v3.benchmark.txt"

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

static graph *load(const char *name)
{
    char path[4096];
    const char *root = getenv("LOCKSTEP_ROOT");
    snprintf(path, sizeof path, "%s/data/graphs/%s", root != NULL ? root : ".", name);
    ls_err err = {{0}};
    graph *g;
    if (graph_load_edgelist(&g, path, &err) != LS_OK)
        fail_msg("%s", err.msg);
    return g;
}

static uint64_t count_at(const graph *g, int k, pool *p)
{
    ls_err err = {{0}};
    uint64_t c = 0;
    if (cliques_count(g, k, p, &c, &err) != LS_OK)
        fail_msg("k=%d: %s", k, err.msg);
    return c;
}

/* The count at every thread count (and with no pool) must be `want`. */
static void expect_count(const graph *g, int k, uint64_t want)
{
    uint64_t c = count_at(g, k, NULL);
    if (c != want)
        fail_msg("k=%d: %llu cliques, the oracle says %llu", k, (unsigned long long)c, (unsigned long long)want);
    for (int i = 0; i < 4; i++)
        assert_true(count_at(g, k, pools[i]) == want);
}

static void test_oracles(void **state)
{
    (void)state;
    graph *g = load("karate.edgelist");
    expect_count(g, 1, 34);
    expect_count(g, 2, 78);
    static const uint64_t karate[] = {45, 11, 2, 0};
    for (int k = 3; k <= 6; k++)
        expect_count(g, k, karate[k - 3]);
    graph_destroy(g);
    g = load("lesmis.edgelist");
    static const uint64_t lesmis[] = {467, 639, 644, 476, 252, 91, 20, 2, 0};
    for (int k = 3; k <= 11; k++)
        expect_count(g, k, lesmis[k - 3]);
    /* The portable popcount (no popcnt instruction): the same integers. */
    int old = cliques_simd_set(0);
    for (int k = 3; k <= 11; k++)
        expect_count(g, k, lesmis[k - 3]);
    cliques_simd_set(old);
    graph_destroy(g);
}

/* Brute force: every subset of the nodes of a small graph, by size. */
static void brute_counts(const graph *g, uint64_t *by_size /* [n+1] */)
{
    int n = g->n;
    memset(by_size, 0, sizeof *by_size * (size_t)(n + 1));
    for (uint32_t s = 0; s < (1u << n); s++) {
        int ok = 1, size = 0;
        for (int a = 0; a < n && ok; a++) {
            if (!(s >> a & 1))
                continue;
            size++;
            for (int b = a + 1; b < n && ok; b++)
                if ((s >> b & 1) && !graph_has_edge(g, a, b))
                    ok = 0;
        }
        by_size[size] += (uint64_t)ok;
    }
}

static void test_atlas_brute_force(void **state)
{
    (void)state;
    const char *atlas = proc_need_file(GRAPH_ATLAS_PATH, NULL, "python3-networkx");
    ls_err err = {{0}};
    graph **gs;
    int32_t n;
    assert_int_equal(graph_load_atlas(&gs, &n, atlas, &err), LS_OK);
    assert_int_equal(n, 1253);
    uint64_t want[8];
    for (int32_t i = 0; i < n; i++) {
        brute_counts(gs[i], want);
        for (int k = 3; k <= 7; k++) {
            uint64_t w = k <= gs[i]->n ? want[k] : 0;
            uint64_t c = count_at(gs[i], k, pools[i % 4]);
            if (c != w)
                fail_msg("Atlas G%ld, k=%d: %llu cliques, brute force %llu", (long)i, k, (unsigned long long)c,
                         (unsigned long long)w);
        }
    }
    graph_list_destroy(gs, n);
}

/* ---- listings ----------------------------------------------------------- */

typedef struct {
    const graph *g;
    XXH3_state_t *h;
    int32_t *all;        /* when not NULL: the cliques, k ints each */
    uint64_t n, cap, stop_after;
    int bad;
} lister;

static int on_clique(void *ctx, const int32_t *nodes, int k)
{
    lister *l = ctx;
    for (int i = 0; i < k; i++) {
        if (i > 0 && nodes[i - 1] >= nodes[i])
            l->bad = 1;   /* not sorted */
        for (int j = 0; j < i; j++)
            if (!graph_has_edge(l->g, nodes[j], nodes[i]))
                l->bad = 1;   /* not a clique */
    }
    XXH3_64bits_update(l->h, nodes, sizeof *nodes * (size_t)k);
    if (l->all != NULL && l->n < l->cap)
        memcpy(l->all + l->n * (uint64_t)k, nodes, sizeof *nodes * (size_t)k);
    l->n++;
    return l->stop_after != 0 && l->n == l->stop_after;
}

static uint64_t list_hash(const graph *g, int k, pool *p, uint64_t max, uint64_t *n, int32_t *all, uint64_t cap)
{
    lister l = {g, XXH3_createState(), all, 0, cap, 0, 0};
    XXH3_64bits_reset(l.h);
    ls_err err = {{0}};
    uint64_t listed;
    if (cliques_list(g, k, p, max, on_clique, &l, &listed, &err) != LS_OK)
        fail_msg("%s", err.msg);
    assert_false(l.bad);
    assert_true(listed == l.n);
    uint64_t h = XXH3_64bits_digest(l.h);
    XXH3_freeState(l.h);
    *n = l.n;
    return h;
}

static int cmp_clique_k;
static int cmp_clique(const void *a, const void *b)
{
    const int32_t *x = a, *y = b;
    for (int i = 0; i < cmp_clique_k; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* The set listed equals the brute force's k-subsets that are cliques. */
static void check_listing_set(const graph *g, int k)
{
    uint64_t want = count_at(g, k, NULL), n;
    int32_t *all = malloc(sizeof *all * (size_t)(want > 0 ? want : 1) * (size_t)k);
    list_hash(g, k, NULL, 0, &n, all, want);
    assert_true(n == want);
    cmp_clique_k = k;
    qsort(all, (size_t)n, sizeof *all * (size_t)k, cmp_clique);
    /* Brute force in lexicographic order: k nested choices. */
    int32_t idx[CLIQUES_MAX_K];
    uint64_t at = 0;
    for (int i = 0; i < k; i++)
        idx[i] = i;
    while (k <= g->n) {
        int ok = 1;
        for (int a = 0; a < k && ok; a++)
            for (int b = a + 1; b < k && ok; b++)
                ok = graph_has_edge(g, idx[a], idx[b]);
        if (ok) {
            assert_true(at < n);
            assert_memory_equal(all + at * (uint64_t)k, idx, sizeof *idx * (size_t)k);
            at++;
        }
        int i = k - 1;
        while (i >= 0 && idx[i] == g->n - k + i)
            i--;
        if (i < 0)
            break;
        idx[i]++;
        for (int j = i + 1; j < k; j++)
            idx[j] = idx[j - 1] + 1;
    }
    assert_true(at == n);
    free(all);
}

static void test_listing_sets(void **state)
{
    (void)state;
    graph *g = load("karate.edgelist");
    for (int k = 1; k <= 5; k++)
        check_listing_set(g, k);
    graph_destroy(g);
    g = load("lesmis.edgelist");
    for (int k = 2; k <= 4; k++)   /* (k = 5 would try 19 M subsets) */
        check_listing_set(g, k);
    graph_destroy(g);
}

/* The same bytes at every thread count, with the default buffer and with
 * one so small that most roots are listed past it; a cap gives a prefix. */
static void check_listing_threads(const graph *g, int k, uint64_t max)
{
    uint64_t n0, n;
    uint64_t h0 = list_hash(g, k, NULL, max, &n0, NULL, 0);
    uint64_t want = count_at(g, k, NULL);
    assert_true(n0 == (max != 0 && max < want ? max : want));
    for (int b = 0; b < 2; b++) {
        uint64_t old = cliques_list_budget_set(b == 0 ? 0 : 7);
        for (int i = 0; i < 4; i++) {
            uint64_t h = list_hash(g, k, pools[i], max, &n, NULL, 0);
            if (h != h0 || n != n0)
                fail_msg("k=%d max=%llu: %d threads (budget %s) listed %llu cliques, hash %016llx; 1 thread %llu, "
                         "%016llx",
                         k, (unsigned long long)max, thread_counts[i], b ? "7" : "default", (unsigned long long)n,
                         (unsigned long long)h, (unsigned long long)n0, (unsigned long long)h0);
        }
        cliques_list_budget_set(old);
    }
}

static void test_listing_threads(void **state)
{
    (void)state;
    graph *g = load("lesmis.edgelist");
    for (int k = 2; k <= 10; k++)
        check_listing_threads(g, k, 0);
    /* A cap: the first `max` of the full listing. */
    uint64_t n_full, n_cap;
    int32_t *full = malloc(sizeof *full * 644 * 5), *capped = malloc(sizeof *capped * 100 * 5);
    list_hash(g, 5, pools[2], 0, &n_full, full, 644);
    for (int i = 0; i < 4; i++) {
        list_hash(g, 5, pools[i], 100, &n_cap, capped, 100);
        assert_true(n_cap == 100);
        assert_memory_equal(full, capped, sizeof *full * 100 * 5);
    }
    check_listing_threads(g, 5, 100);
    check_listing_threads(g, 4, 1);
    /* The callback may stop the listing. */
    lister l = {g, XXH3_createState(), NULL, 0, 0, 5, 0};
    XXH3_64bits_reset(l.h);
    ls_err err = {{0}};
    uint64_t listed;
    assert_int_equal(cliques_list(g, 4, pools[3], 0, on_clique, &l, &listed, &err), LS_OK);
    assert_true(listed == 5 && l.n == 5);
    XXH3_freeState(l.h);
    free(full);
    free(capped);
    graph_destroy(g);
}

static void test_wormnet(void **state)
{
    (void)state;
    const char *wormnet = proc_need_file(GRAPH_WORMNET_PATH, WORMNET_ALT, "python3-networkx");
    ls_err err = {{0}};
    graph *g;
    assert_int_equal(graph_load_edgelist(&g, wormnet, &err), LS_OK);
    int32_t degeneracy;
    assert_int_equal(cliques_degeneracy(g, NULL, NULL, &degeneracy, &err), LS_OK);
    assert_int_equal(degeneracy, 125);   /* docs/graphs.md */
    expect_count(g, 3, 2015875);
    expect_count(g, 4, 44724424);
    /* The portable popcount gives the same integers. */
    int old = cliques_simd_set(0);
    assert_true(count_at(g, 4, pools[1]) == 44724424);
    cliques_simd_set(old);
    /* Listing: the 2,015,875 triangles, the same bytes at every thread count. */
    check_listing_threads(g, 3, 0);
    check_listing_threads(g, 5, 200000);
    graph_destroy(g);
}

static void test_refused(void **state)
{
    (void)state;
    ls_err err = {{0}};
    int32_t s[] = {0}, d[] = {1};
    graph *g;
    assert_int_equal(graph_create(&g, 2, 1, s, d, 1, NULL, NULL, &err), LS_OK);
    uint64_t c;
    assert_int_equal(cliques_count(g, 3, NULL, &c, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "directed"));
    graph_destroy(g);
    assert_int_equal(graph_create(&g, 2, 0, s, d, 1, NULL, NULL, &err), LS_OK);
    assert_int_equal(cliques_count(g, 0, NULL, &c, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "-k"));
    assert_int_equal(cliques_count(g, CLIQUES_MAX_K + 1, NULL, &c, &err), LS_EINVAL);
    graph_destroy(g);
    /* Degeneracy order, worked by hand: the path 2-0-1 plus the triangle
     * 3-4-5 hanging off 1 by the edge 1-3. Degrees 2:1 0:2 1:2 3:3 4:2 5:2.
     * Remove 2 (degree 1); then 0 (now 1); then 1 (now 1); then 3, 4, 5
     * (each of degree 2 when removed, ties to the smaller id). */
    int32_t s2[] = {2, 0, 1, 3, 4, 5}, d2[] = {0, 1, 3, 4, 5, 3};
    assert_int_equal(graph_create(&g, 6, 0, s2, d2, 6, NULL, NULL, &err), LS_OK);
    int32_t order[6], rank[6], dg;
    assert_int_equal(cliques_degeneracy(g, order, rank, &dg, &err), LS_OK);
    static const int32_t want[6] = {2, 0, 1, 3, 4, 5};
    assert_memory_equal(order, want, sizeof want);
    for (int i = 0; i < 6; i++)
        assert_int_equal(rank[order[i]], i);
    assert_int_equal(dg, 2);
    graph_destroy(g);
}

int main(int argc, char **argv)
{
    /* An optional argument runs the cases whose names match it. */
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oracles),
        cmocka_unit_test(test_atlas_brute_force),
        cmocka_unit_test(test_listing_sets),
        cmocka_unit_test(test_listing_threads),
        cmocka_unit_test(test_wormnet),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown) != 0;
}
