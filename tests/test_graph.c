/* test_graph.c — CSR graphs and their readers (engine/graph/graph.h): the CSR
 * invariants on every graph read here (rows sorted, no repeats, no self
 * loops, undirected rows symmetric, a directed graph's in-rows the transpose
 * of its out-rows), sizes against independent counts (the published sizes of
 * karate and Les Misérables; the Atlas's graph counts per node count from
 * Read & Wilson, and its edge lines counted here with zlib), ids a function
 * of the set of edges (the same file shuffled gives the same graph), and bad
 * files refused with one line naming file, line and field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "engine/graph/graph.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/lockstep-graph-XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *data_path(const char *name)
{
    static char buf[4096];
    const char *root = getenv("LOCKSTEP_ROOT");
    snprintf(buf, sizeof buf, "%s/data/graphs/%s", root != NULL ? root : ".", name);
    return buf;
}

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* The invariants every graph keeps. */
static void check_csr(const graph *g)
{
    assert_true(g->n >= 0);
    assert_int_equal(g->out_off[0], 0);
    int64_t arcs = 0;
    int32_t maxdeg = 0;
    for (int32_t v = 0; v < g->n; v++) {
        assert_true(g->out_off[v + 1] >= g->out_off[v]);
        for (int64_t e = g->out_off[v]; e < g->out_off[v + 1]; e++) {
            int32_t w = g->out_adj[e];
            assert_true(w >= 0 && w < g->n);
            assert_true(w != v);
            if (e > g->out_off[v])
                assert_true(g->out_adj[e - 1] < w);
            /* Undirected: w's row holds v; directed: w's in-row holds v. */
            assert_true(g->directed ? 1 : graph_has_edge(g, w, v));
            arcs++;
        }
        if (graph_degree(g, v) > maxdeg)
            maxdeg = (int32_t)graph_degree(g, v);
        assert_true(g->label[v] >= 0 && g->label[v] <= g->max_label);
    }
    assert_int_equal(maxdeg, g->max_degree);
    assert_int_equal(arcs, g->directed ? g->n_edges : 2 * g->n_edges);
    if (!g->directed) {
        assert_ptr_equal(g->in_off, g->out_off);
        assert_ptr_equal(g->in_adj, g->out_adj);
        return;
    }
    /* Directed: in-rows sorted, and u in in(v) exactly when v in out(u). */
    int64_t in_arcs = 0;
    for (int32_t v = 0; v < g->n; v++)
        for (int64_t e = g->in_off[v]; e < g->in_off[v + 1]; e++) {
            int32_t u = g->in_adj[e];
            assert_true(graph_has_edge(g, u, v));
            if (e > g->in_off[v])
                assert_true(g->in_adj[e - 1] < u);
            in_arcs++;
        }
    assert_int_equal(in_arcs, g->n_edges);
}

static void test_create(void **state)
{
    (void)state;
    ls_err err = {{0}};
    /* 0-1 twice (once reversed), a self loop, 2-3, 1-2. */
    int32_t src[] = {0, 1, 2, 2, 1, 3};
    int32_t dst[] = {1, 0, 2, 3, 2, 2};
    graph_stats d;
    graph *g;
    assert_int_equal(graph_create(&g, 5, 0, src, dst, 6, NULL, &d, &err), LS_OK);
    check_csr(g);
    assert_int_equal(g->n, 5);
    assert_int_equal(g->n_edges, 3);
    assert_int_equal(d.self_loops, 1);
    assert_int_equal(d.duplicates, 2);
    assert_int_equal(graph_degree(g, 4), 0);
    assert_true(graph_has_edge(g, 2, 1) && graph_has_edge(g, 3, 2) && !graph_has_edge(g, 0, 2));
    graph *c;
    assert_int_equal(graph_clone(&c, g, &err), LS_OK);
    check_csr(c);
    assert_int_equal(c->n_edges, 3);
    assert_memory_equal(c->out_adj, g->out_adj, sizeof(int32_t) * (size_t)g->out_off[g->n]);
    graph_destroy(c);
    graph_destroy(g);

    /* Directed: 1->0 and 0->1 are two arcs; labels kept. */
    int32_t lab[] = {3, 0, 7, 1, 1};
    assert_int_equal(graph_create(&g, 5, 1, src, dst, 6, lab, &d, &err), LS_OK);
    check_csr(g);
    assert_int_equal(g->n_edges, 5);   /* 0->1 1->0 2->3 1->2 3->2: no repeat among arcs */
    assert_int_equal(d.self_loops, 1);
    assert_int_equal(d.duplicates, 0);
    graph_destroy(g);
    int32_t s2[] = {0, 1, 2, 1, 3}, d2[] = {1, 0, 3, 2, 2};
    assert_int_equal(graph_create(&g, 5, 1, s2, d2, 5, lab, &d, &err), LS_OK);
    check_csr(g);
    assert_int_equal(g->n_edges, 5);
    assert_int_equal(d.duplicates, 0);
    assert_int_equal(g->label[2], 7);
    assert_int_equal(g->max_label, 7);
    assert_true(graph_has_edge(g, 1, 0) && graph_has_edge(g, 0, 1) && !graph_has_edge(g, 0, 2));
    graph_destroy(g);

    /* Refused: an id out of range, a negative label. */
    int32_t bad_dst[] = {5};
    assert_int_equal(graph_create(&g, 5, 0, src, bad_dst, 1, NULL, NULL, &err), LS_EINVAL);
    assert_null(g);
    int32_t neg[] = {0, -1, 0, 0, 0};
    assert_int_equal(graph_create(&g, 5, 0, src, dst, 1, neg, NULL, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "label"));
    /* The empty graph. */
    assert_int_equal(graph_create(&g, 0, 0, NULL, NULL, 0, NULL, NULL, &err), LS_OK);
    check_csr(g);
    graph_destroy(g);
}

static void test_karate_lesmis(void **state)
{
    (void)state;
    ls_err err = {{0}};
    graph *g;
    graph_stats d;
    assert_int_equal(graph_load_edgelist_stats(&g, data_path("karate.edgelist"), &d, &err), LS_OK);
    check_csr(g);
    assert_int_equal(g->n, 34);
    assert_int_equal(g->n_edges, 78);
    assert_int_equal(d.self_loops + d.duplicates, 0);
    assert_null(g->name);
    /* Node 33 has degree 17 and node 0 degree 16 (Zachary's table). */
    assert_int_equal(graph_degree(g, 33), 17);
    assert_int_equal(graph_degree(g, 0), 16);
    graph_destroy(g);

    assert_int_equal(graph_load_edgelist(&g, data_path("lesmis.edgelist"), &err), LS_OK);
    check_csr(g);
    assert_int_equal(g->n, 77);
    assert_int_equal(g->n_edges, 254);
    assert_non_null(g->name);
    for (int32_t v = 1; v < g->n; v++)
        assert_true(strcmp(g->name[v - 1], g->name[v]) < 0);   /* ids: ranks of the names */
    /* Valjean is the hub: 36 co-occurring characters. */
    int32_t valjean = -1;
    for (int32_t v = 0; v < g->n; v++)
        if (strcmp(graph_name(g, v), "Valjean") == 0)
            valjean = v;
    assert_true(valjean >= 0);
    assert_int_equal(graph_degree(g, valjean), 36);
    graph_destroy(g);
}

static void test_order_free(void **state)
{
    (void)state;
    /* The same set of edges in another order, with repeats and a reversed
     * pair: the same graph, byte for byte in its rows and names. */
    const char *a = write_file("a.el", "# names\nx y\ny z 2.5\nw x\n\nz x\n");
    ls_err err = {{0}};
    graph *ga, *gb;
    graph_stats d;
    assert_int_equal(graph_load_edgelist(&ga, a, &err), LS_OK);
    assert_int_equal(graph_load_edgelist_stats(&gb, write_file("c.el", "z x\nx w\ny z\t1\nx\ty # again\ny x\nz z\n"),
                                               &d, &err),
                     LS_OK);
    check_csr(ga);
    check_csr(gb);
    assert_int_equal(d.self_loops, 1);
    assert_int_equal(d.duplicates, 1);
    assert_int_equal(ga->n, 4);
    assert_int_equal(gb->n, 4);
    assert_int_equal(ga->n_edges, gb->n_edges);
    assert_memory_equal(ga->out_off, gb->out_off, sizeof(int64_t) * 5);
    assert_memory_equal(ga->out_adj, gb->out_adj, sizeof(int32_t) * (size_t)ga->out_off[4]);
    for (int32_t v = 0; v < 4; v++)
        assert_string_equal(ga->name[v], gb->name[v]);
    assert_string_equal(ga->name[0], "w");
    graph_destroy(ga);
    graph_destroy(gb);
}

static void test_text_format(void **state)
{
    (void)state;
    const char *p = write_file("g.txt", "# two graphs\n"
                                        "GRAPH 0\nNODES 3\nLABELS 2 0 2\n0 1\n1 2\n"
                                        "graph\nnodes 4\ndirected\nlabels 1 1 1 1\n0 1\n1 0\n2 3\n3 3\n");
    ls_err err = {{0}};
    graph **gs;
    int32_t n;
    assert_int_equal(graph_load_text(&gs, &n, p, &err), LS_OK);
    assert_int_equal(n, 2);
    check_csr(gs[0]);
    check_csr(gs[1]);
    assert_int_equal(gs[0]->n, 3);
    assert_int_equal(gs[0]->directed, 0);
    assert_int_equal(gs[0]->label[0], 2);
    assert_int_equal(gs[0]->n_edges, 2);
    assert_int_equal(gs[1]->directed, 1);
    assert_int_equal(gs[1]->n_edges, 3);
    graph_list_destroy(gs, n);

    /* References: FILE:I, and a file of several graphs named alone refused. */
    graph *g;
    char ref[300];
    snprintf(ref, sizeof ref, "%s:1", p);
    assert_int_equal(graph_load_ref(&g, ref, &err), LS_OK);
    assert_int_equal(g->n, 4);
    graph_destroy(g);
    assert_int_equal(graph_load_ref(&g, p, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "holds 2 graphs"));
    snprintf(ref, sizeof ref, "%s:2", p);
    assert_int_equal(graph_load_ref(&g, ref, &err), LS_EINVAL);
    assert_int_equal(graph_load_ref(&g, data_path("karate.edgelist"), &err), LS_OK);
    assert_int_equal(g->n, 34);
    graph_destroy(g);

    /* gzip is read as such. */
    char gz[256];
    snprintf(gz, sizeof gz, "%s/g.txt.gz", dir);
    gzFile z = gzopen(gz, "wb");
    assert_non_null(z);
    gzputs(z, "GRAPH 7\nNODES 2\n0 1\n");
    assert_int_equal(gzclose(z), Z_OK);
    assert_int_equal(graph_load_ref(&g, gz, &err), LS_OK);
    assert_int_equal(g->n_edges, 1);
    graph_destroy(g);
}

/* Read & Wilson: graphs on 0..7 nodes, 1+1+2+4+11+34+156+1044 = 1253. */
static void test_atlas(void **state)
{
    (void)state;
    if (access(GRAPH_ATLAS_PATH, R_OK) != 0) {
        fail_msg("graph: %s cannot be read: install the Debian package python3-networkx (make deps)", GRAPH_ATLAS_PATH);
    }
    ls_err err = {{0}};
    graph **gs;
    int32_t n;
    assert_int_equal(graph_load_atlas(&gs, &n, GRAPH_ATLAS_PATH, &err), LS_OK);
    assert_int_equal(n, 1253);
    static const int per_n[8] = {1, 1, 2, 4, 11, 34, 156, 1044};
    int seen[8] = {0};
    int64_t edges = 0;
    for (int32_t i = 0; i < n; i++) {
        check_csr(gs[i]);
        assert_true(gs[i]->n <= 7);
        if (i > 0)
            assert_true(gs[i]->n >= gs[i - 1]->n);   /* ordered by node count */
        seen[gs[i]->n]++;
        edges += gs[i]->n_edges;
    }
    for (int k = 0; k < 8; k++)
        assert_int_equal(seen[k], per_n[k]);
    /* The edge lines of the file, counted here: none is a repeat. */
    gzFile z = gzopen(GRAPH_ATLAS_PATH, "rb");
    assert_non_null(z);
    char line[256];
    int64_t lines = 0;
    while (gzgets(z, line, sizeof line) != NULL)
        lines += strncmp(line, "GRAPH", 5) != 0 && strncmp(line, "NODES", 5) != 0;
    gzclose(z);
    assert_int_equal(edges, lines);
    /* G1252 is K7. */
    assert_int_equal(gs[1252]->n_edges, 21);
    graph_list_destroy(gs, n);
}

static void test_wormnet(void **state)
{
    (void)state;
    if (access(GRAPH_WORMNET_PATH, R_OK) != 0) {
        fail_msg("graph: %s cannot be read: install the Debian package python3-networkx (make deps)", GRAPH_WORMNET_PATH);
    }
    ls_err err = {{0}};
    graph *g;
    graph_stats d;
    assert_int_equal(graph_load_edgelist_stats(&g, GRAPH_WORMNET_PATH, &d, &err), LS_OK);
    check_csr(g);
    assert_int_equal(g->n, 2445);
    assert_int_equal(g->n_edges + d.duplicates + d.self_loops, 78736);   /* its line count */
    assert_non_null(g->name);
    graph_destroy(g);
}

/* A bad file: refused with `status`, the message naming all of `parts`. */
static void expect_bad(int text, const char *content, ls_status status, const char *p1, const char *p2)
{
    const char *p = write_file(text ? "bad.txt" : "bad.el", content);
    ls_err err = {{0}};
    ls_status st;
    if (text) {
        graph **gs = NULL;
        int32_t n = 0;
        st = graph_load_text(&gs, &n, p, &err);
        assert_null(gs);
    } else {
        graph *g = NULL;
        st = graph_load_edgelist(&g, p, &err);
        assert_null(g);
    }
    if (st != status || strstr(err.msg, p) == NULL || strstr(err.msg, p1) == NULL ||
        (p2 != NULL && strstr(err.msg, p2) == NULL) || strchr(err.msg, '\n') != NULL)
        fail_msg("for %s: status %d, message '%s'; wanted %d naming '%s' '%s'", content, st, err.msg, status, p1,
                 p2 ? p2 : "");
}

static void test_bad_files(void **state)
{
    (void)state;
    expect_bad(0, "0 1\n1 x\n", LS_EFORMAT, ":2: field 2: 'x' is not a node id", NULL);
    expect_bad(0, "0 1\n-3 1\n", LS_EFORMAT, ":2: field 1: '-3' is not a node id", NULL);
    expect_bad(0, "# c\n\n0 1\n5\n", LS_EFORMAT, ":4: field 2: missing", NULL);
    expect_bad(0, "0 1 2 3\n", LS_EFORMAT, ":1: field 4: unexpected", NULL);
    expect_bad(0, "a b w\n", LS_EFORMAT, ":1: field 3: 'w' is not a number", NULL);
    expect_bad(0, "0 1\n1 99999999999\n", LS_EFORMAT, ":2: field 2:", "not a node id");
    expect_bad(0, "0 16777216\n", LS_EFORMAT, ":1: field 2: '16777216' is not a node id", "0..16777215");
    expect_bad(1, "GRAPH\nNODES 16777217\n", LS_EFORMAT, ":2: field 2: '16777217' is not a node count", NULL);
    expect_bad(1, "NODES 3\n", LS_EFORMAT, ":1: field 1: 'NODES' before the first GRAPH", NULL);
    expect_bad(1, "GRAPH\n0 1\n", LS_EFORMAT, ":2:", "before this GRAPH's NODES");
    expect_bad(1, "GRAPH\nNODES 3\n0 3\n", LS_EFORMAT, ":3: field 2: '3' is not a node id (NODES 3)", NULL);
    expect_bad(1, "GRAPH\nNODES x\n", LS_EFORMAT, ":2: field 2: 'x' is not a node count", NULL);
    expect_bad(1, "GRAPH\nNODES 2\nLABELS 1\n", LS_EFORMAT, ":3: LABELS has 1 values, NODES says 2", NULL);
    expect_bad(1, "GRAPH\nNODES 2\nLABELS 1 -1\n", LS_EFORMAT, ":3: field 3: '-1' is not a label", NULL);
    expect_bad(1, "GRAPH\nNODES 2\n0 1 1\n", LS_EFORMAT, ":3: field 3: unexpected", NULL);
    expect_bad(1, "GRAPH\nNODES 2\nfoo\n", LS_EFORMAT, ":3: field 1: 'foo' is not a keyword", NULL);
    expect_bad(1, "GRAPH\nNODES 2\nNODES 2\n", LS_EFORMAT, ":3: a second NODES", NULL);
    expect_bad(1, "GRAPH\nNODES 2\n0 1\nGRAPH\n", LS_EFORMAT, ":4: this GRAPH has no NODES", NULL);
    /* A NUL byte, a directory, a missing file. */
    char path[256];
    snprintf(path, sizeof path, "%s/nul.el", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite("0 1\n1 2\0\n", 1, 9, f);
    fclose(f);
    ls_err err = {{0}};
    graph *g;
    assert_int_equal(graph_load_edgelist(&g, path, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, ":2: a NUL byte"));
    assert_int_equal(graph_load_edgelist(&g, dir, &err), LS_EIO);
    assert_non_null(strstr(err.msg, "directory"));
    assert_int_equal(graph_load_edgelist(&g, "/nonexistent/x.el", &err), LS_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/x.el"));
    /* A damaged gzip stream. */
    snprintf(path, sizeof path, "%s/bad.gz", dir);
    gzFile z = gzopen(path, "wb");
    gzputs(z, "GRAPH\nNODES 2\n0 1\n");
    gzclose(z);
    f = fopen(path, "r+b");
    fseek(f, -6, SEEK_END);
    fputc(0x55, f);
    fclose(f);
    graph **gs;
    int32_t n;
    assert_int_not_equal(graph_load_text(&gs, &n, path, &err), LS_OK);
    assert_non_null(strstr(err.msg, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create),
        cmocka_unit_test(test_karate_lesmis),
        cmocka_unit_test(test_order_free),
        cmocka_unit_test(test_text_format),
        cmocka_unit_test(test_atlas),
        cmocka_unit_test(test_wormnet),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown) != 0;
}
