/* task_graph_edit.c — the `graph-edit` task: the graph-transform task. Each
 * example is a graph with node labels and a target graph made from it by a
 * fixed rule; the model predicts keep or delete for every node, and the
 * evaluation applies the predicted deletions and measures the exact graph
 * edit distance to the target (model gnn: mean_ged, besides node_acc and
 * graph_acc).
 *
 * Examples: every Graph Atlas graph of 3 to 7 nodes (atlas indices 4 ..
 * 1252, Debian's python3-networkx); node v of atlas graph i gets the label
 * rng_below(GRAPH_EDIT_SEED, RNG_DATA, i, v, 0, 3) (0, 1 or 2; addressed,
 * so the same for every run). The rule: delete every node of label 1 that
 * has a neighbour of label 2, with its edges — one hop of message passing
 * decides it. Split fixed by atlas index: index mod 5 == 0 is a test
 * example (250), the others train (999). Rows are EDIT rows (gnn.h): N = 7,
 * F = 3 (the label one-hot), the target of each node (0 keep, 1 delete);
 * y = 1 when the rule deletes some node. */
#include <stdlib.h>

#include "engine/models/gnn/gnn.h"
#include "engine/graph/graph.h"
#include "engine/num/rng.h"

#define EDIT_N 7
#define EDIT_F 3
#define EDIT_FIRST 4
#define GRAPH_EDIT_SEED 20261123u

static ls_status graph_edit_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    (void)cfg;
    *out = NULL;
    graph **gs = NULL;
    int32_t count = 0;
    ls_status st = gnn_atlas_load(&gs, &count, err);
    if (st != LS_OK)
        return st;
    size_t n_test = 0, n_train = 0;
    for (int32_t i = EDIT_FIRST; i < count && st == LS_OK; i++) {
        if (gs[i]->n < 3 || gs[i]->n > EDIT_N)
            st = ls_fail(err, LS_EFORMAT, "%s: graph %d has %d nodes; the atlas has 3 to 7 from index %d on",
                         GRAPH_ATLAS_PATH, (int)i, (int)gs[i]->n, EDIT_FIRST);
        else if (i % 5 == 0)
            n_test++;
        else
            n_train++;
    }
    const size_t dim = gnn_row_dim(GNN_KIND_EDIT, EDIT_N, EDIT_F);
    ls_dataset *d = NULL;
    if (st == LS_OK && n_test + n_train == 0)
        st = ls_fail(err, LS_EFORMAT, "%s: no graph with 3 or more nodes", GRAPH_ATLAS_PATH);
    if (st == LS_OK)
        st = ls_dataset_create(&d, "graph-edit", 2, dim, n_train, n_test, err);
    size_t at[2] = { 0, 0 };
    for (int32_t i = EDIT_FIRST; i < count && st == LS_OK; i++) {
        const graph *g = gs[i];
        const int test = i % 5 == 0;
        float *row = ls_dataset_x(d, test) + at[test] * dim;
        uint32_t label[EDIT_N];
        float feat[EDIT_N * EDIT_F] = { 0 };
        for (int32_t v = 0; v < g->n; v++) {
            label[v] = (uint32_t)rng_below(GRAPH_EDIT_SEED, RNG_DATA, (uint64_t)i, (uint64_t)v, 0, EDIT_F);
            feat[(size_t)v * EDIT_F + label[v]] = 1.0f;
        }
        gnn_row_of_graph(row, GNN_KIND_EDIT, EDIT_N, EDIT_F, g, feat);
        float *target = row + GNN_HEADER + EDIT_N * EDIT_F + EDIT_N * EDIT_N;
        uint8_t any = 0;
        for (int32_t v = 0; v < g->n; v++) {
            int del = 0;
            for (int64_t e = g->out_off[v]; e < g->out_off[v + 1] && label[v] == 1; e++)
                del |= label[g->out_adj[e]] == 2;
            target[v] = (float)del;
            any |= (uint8_t)del;
        }
        ls_dataset_y(d, test)[at[test]] = any;
        at[test]++;
    }
    if (st == LS_OK)
        st = ls_dataset_seal(d, err);
    graph_list_destroy(gs, count);
    if (st != LS_OK) {
        ls_dataset_destroy(d);
        return st;
    }
    *out = d;
    return LS_OK;
}

static const ls_task_defaults graph_edit_defaults[] = {
    { "*", "batch=32\nleaf=16\nlr=0.01\nlayers=2\nhidden=16\ngin_eps=7\n" },
    { NULL, NULL },
};

const ls_task_desc graph_edit_task = {
    .size = sizeof(ls_task_desc),
    .name = "graph-edit",
    .summary = "keep or delete each node (label 1 next to a label 2 goes); mean exact GED of the edited graphs",
    .models = "gnn",
    .default_steps = 200,
    .defaults = graph_edit_defaults,
    .load = graph_edit_load,
};
