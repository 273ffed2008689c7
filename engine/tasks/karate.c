/* task_karate.c — the `karate` task: node classification on Zachary's
 * karate club (1977; 34 members, 78 friendships, the two clubs it split
 * into), model gnn.
 *
 * Data: the edge list and the clubs the project ships,
 * data/graphs/karate.edgelist and data/graphs/karate.clubs (`node club` a
 * line, 0 = "Mr. Hi", 1 = "Officer"), built in below (tests/test_gnn.c
 * checks the copy against the files); --edges / --clubs read files instead. Each node is one NODE row
 * (gnn.h): its id, its features — a one-hot of its id (34 features, the
 * usual featureless setting) — and its adjacency row; the model builds the
 * graph once from all 34 rows, so the data identity covers the graph and
 * the clubs. Split: even nodes train (17), odd nodes test (17); test_acc is
 * the share of the odd nodes whose club is predicted right. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "engine/models/gnn/gnn.h"
#include "engine/graph/graph.h"

#define KARATE_N 34
#define KARATE_M 78
#define KARATE_EDGES "data/graphs/karate.edgelist"
#define KARATE_CLUBS "data/graphs/karate.clubs"

/* The same data, built in: the default when neither --edges nor --clubs is
 * given, so the task runs from any directory (golden check does). The test
 * checks that it gives the same data identity as the two files. */
static const int32_t KARATE_SRC[KARATE_M] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3,
    4, 4, 5, 5, 5, 6, 8, 8, 8, 9, 13, 14, 14, 15, 15, 18, 18, 19, 20, 20, 22, 22, 23, 23, 23, 23, 23, 24, 24,
    24, 25, 26, 26, 27, 28, 28, 29, 29, 30, 30, 31, 31, 32
};
static const int32_t KARATE_DST[KARATE_M] = {
    1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 17, 19, 21, 31, 2, 3, 7, 13, 17, 19, 21, 30, 3, 7, 8, 9, 13, 27,
    28, 32, 7, 12, 13, 6, 10, 6, 10, 16, 16, 30, 32, 33, 33, 33, 32, 33, 32, 33, 32, 33, 33, 32, 33, 32, 33,
    25, 27, 29, 32, 33, 25, 27, 31, 31, 29, 33, 33, 31, 33, 32, 33, 32, 33, 32, 33, 33
};
static const uint8_t KARATE_CLUB[KARATE_N] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
};

/* A clubs file names 34 nodes, a line each, with comments: far below this. */
#define KARATE_CLUBS_MAX_BYTES (1 << 20)

static ls_status read_clubs(const char *path, uint8_t *club, ls_err *err)
{
    /* Through the checked open: a FIFO would block, /dev/zero never end. */
    int fd;
    size_t size;
    ls_status open_st = file_open_regular(path, &fd, &size, err);
    if (open_st != LS_OK)
        return open_st;
    if (size > KARATE_CLUBS_MAX_BYTES) {
        close(fd);
        return ls_fail(err, LS_EFORMAT, "%s: %zu bytes is more than the limit of %d bytes for a clubs file", path,
                       size, KARATE_CLUBS_MAX_BYTES);
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        int e = errno;
        close(fd);
        return ls_fail(err, LS_EIO, "%s: %s", path, strerror(e));
    }
    int seen[KARATE_N] = { 0 };
    char line[256];
    ls_status st = LS_OK;
    for (int ln = 1; st == LS_OK && fgets(line, sizeof line, f) != NULL; ln++) {
        char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        int v, c;
        char extra;
        if (sscanf(p, "%d %d %c", &v, &c, &extra) != 2)
            st = ls_fail(err, LS_EFORMAT, "%s:%d: expected `node club`", path, ln);
        else if (v < 0 || v >= KARATE_N || seen[v])
            st = ls_fail(err, LS_EFORMAT, "%s:%d: field 1: node %d is out of range 0..%d or repeated", path, ln, v,
                         KARATE_N - 1);
        else if (c != 0 && c != 1)
            st = ls_fail(err, LS_EFORMAT, "%s:%d: field 2: club %d is not 0 or 1", path, ln, c);
        else {
            seen[v] = 1;
            club[v] = (uint8_t)c;
        }
    }
    fclose(f);
    for (int v = 0; v < KARATE_N && st == LS_OK; v++)
        if (!seen[v])
            st = ls_fail(err, LS_EFORMAT, "%s: node %d has no club", path, v);
    return st;
}

static ls_status karate_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    *out = NULL;
    const char *edges = ls_config_source(cfg, "edges"), *clubs = ls_config_source(cfg, "clubs");
    graph *g = NULL;
    uint8_t club[KARATE_N];
    ls_status st = edges[0] ? graph_load_edgelist(&g, edges, err)
                            : graph_create(&g, KARATE_N, 0, KARATE_SRC, KARATE_DST, KARATE_M, NULL, NULL, err);
    if (st == LS_OK && g->n != KARATE_N)
        st = ls_fail(err, LS_EFORMAT, "%s: %d nodes; the karate club has %d", edges, (int)g->n, KARATE_N);
    if (st == LS_OK && clubs[0])
        st = read_clubs(clubs, club, err);
    else if (st == LS_OK)
        memcpy(club, KARATE_CLUB, sizeof club);
    const size_t dim = gnn_row_dim(GNN_KIND_NODE, KARATE_N, KARATE_N);
    ls_dataset *d = NULL;
    if (st == LS_OK)
        st = ls_dataset_create(&d, "karate", 2, dim, KARATE_N / 2, KARATE_N / 2, err);
    for (int32_t v = 0; v < KARATE_N && st == LS_OK; v++) {
        const int test = v % 2;
        float *row = ls_dataset_x(d, test) + (size_t)(v / 2) * dim;
        row[0] = GNN_KIND_NODE;
        row[1] = KARATE_N;
        row[2] = KARATE_N;
        row[3] = (float)v;
        row[GNN_HEADER + v] = 1.0f;
        for (int64_t e = g->in_off[v]; e < g->in_off[v + 1]; e++)
            row[GNN_HEADER + KARATE_N + g->in_adj[e]] = 1.0f;
        ls_dataset_y(d, test)[v / 2] = club[v];
    }
    if (st == LS_OK)
        st = ls_dataset_seal(d, err);
    graph_destroy(g);
    if (st != LS_OK) {
        ls_dataset_destroy(d);
        return st;
    }
    *out = d;
    return LS_OK;
}

static const ls_key karate_sources[] = {
    { "clubs", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL, "`node club` lines (default: " KARATE_CLUBS ", built in)", 0 },
    { "edges", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL, "the edge list (default: " KARATE_EDGES ", built in)", 0 },
};

static const ls_task_defaults karate_defaults[] = {
    { "*", "batch=17\nleaf=16\nlr=0.01\nlayers=2\nhidden=16\n" },
    { NULL, NULL },
};

const ls_task_desc karate_task = {
    .size = sizeof(ls_task_desc),
    .name = "karate",
    .summary = "node classification: the two clubs of Zachary's karate club (even nodes train, odd nodes test)",
    .models = "gnn",
    .default_steps = 200,
    .defaults = karate_defaults,
    .sources = karate_sources,
    .n_sources = sizeof karate_sources / sizeof karate_sources[0],
    .load = karate_load,
};
