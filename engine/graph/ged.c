/* ged.c — graph edit distance: bounds and the exact value (ged.h).
 *
 * Both graphs become dense adjacency matrices (bytes) and labels are
 * renumbered 0..L-1 over the two graphs together. The assignment solver is
 * the Hungarian method with potentials (one row added at a time, a
 * Dijkstra-like search over columns); every minimum it takes is the first
 * one met in increasing column order, so ties go to the lowest index and
 * the assignment is a function of the matrix.
 *
 * The exact search assigns a's nodes in a fixed order (breadth first from
 * the highest degree), each to an unused node of b or to deletion, keeping
 * the cost g of the decided operations and a lower bound h of the rest: the
 * optimal node-only cost of the remaining label multisets, plus the larger
 * of the undecided edges' count difference and a degree-matching bound.
 * Candidates are tried by least g + h first (ties to the lower index); a
 * branch is cut when g + h >= the best path found so far, which starts at
 * the bipartite upper bound, and the search ends when a path reaches the
 * lower bound. The minimum it finds is unique: the order only changes how
 * fast.
 *
 * A pair's work needs a workspace sized for it; ged_pairs gives each worker
 * one, sized for the largest pair, before the workers start. */
#include "engine/graph/ged.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define GED_COST_MAX ((int64_t)1 << 20)
#define LSAP_FORBIDDEN ((int64_t)1 << 52)   /* a cell no assignment may use */
#define LSAP_INF ((int64_t)1 << 61)

typedef struct {
    int32_t cap_n, cap_m;     /* sized for up to cap_n and cap_m nodes */
    int64_t *cost;            /* [(n+m)^2] */
    int64_t *u, *v, *minv;    /* [n+m+1] */
    int32_t *p, *way, *assign;/* [n+m+1] */
    char *used;               /* [n+m+1] */
    uint8_t *A, *B;           /* adjacency [n*n], [m*m] */
    int32_t *la, *lb;         /* compact labels [n], [m] */
    int32_t *lab_tmp;         /* [n+m] */
    int32_t *cnt_a, *cnt_b;   /* [n+m]: remaining nodes per label */
    int32_t *order;           /* [n]: a's nodes in search order */
    int32_t *map, *pre;       /* [n]: image of a's node, [m]: preimage of b's node (-1: none) */
    int32_t *best_map;        /* [n] */
    int32_t *deg_a, *deg_b;   /* undirected degree or out-degree */
    int32_t *ideg_a, *ideg_b; /* in-degree (directed) */
    int32_t *cand_img;        /* [(n+1)(m+1)]: the exact search's candidates per depth */
    int64_t *cand_inc, *cand_dec, *cand_step;
    int32_t *sort_a, *sort_b;  /* [n], [m]: degree lists of the exact search's bound */
} ged_ws;

static void ws_free(ged_ws *w)
{
    if (w == NULL)
        return;
    free(w->cost);
    free(w->u);
    free(w->v);
    free(w->minv);
    free(w->p);
    free(w->way);
    free(w->assign);
    free(w->used);
    free(w->A);
    free(w->B);
    free(w->la);
    free(w->lb);
    free(w->lab_tmp);
    free(w->cnt_a);
    free(w->cnt_b);
    free(w->order);
    free(w->map);
    free(w->pre);
    free(w->best_map);
    free(w->deg_a);
    free(w->deg_b);
    free(w->ideg_a);
    free(w->ideg_b);
    free(w->cand_img);
    free(w->cand_inc);
    free(w->cand_dec);
    free(w->cand_step);
    free(w->sort_a);
    free(w->sort_b);
    memset(w, 0, sizeof *w);
}

static ls_status ws_alloc(ged_ws *w, int32_t n, int32_t m, ls_err *err)
{
    memset(w, 0, sizeof *w);
    size_t N = (size_t)n + (size_t)m + 1, sn = (size_t)n + 1, sm = (size_t)m + 1;
    w->cap_n = n;
    w->cap_m = m;
    w->cost = malloc(N * N * sizeof *w->cost);
    w->u = malloc(N * sizeof *w->u);
    w->v = malloc(N * sizeof *w->v);
    w->minv = malloc(N * sizeof *w->minv);
    w->p = malloc(N * sizeof *w->p);
    w->way = malloc(N * sizeof *w->way);
    w->assign = malloc(N * sizeof *w->assign);
    w->used = malloc(N);
    w->A = malloc(sn * sn);
    w->B = malloc(sm * sm);
    w->la = malloc(sn * sizeof *w->la);
    w->lb = malloc(sm * sizeof *w->lb);
    w->lab_tmp = malloc(N * sizeof *w->lab_tmp);
    w->cnt_a = malloc(N * sizeof *w->cnt_a);
    w->cnt_b = malloc(N * sizeof *w->cnt_b);
    w->order = malloc(sn * sizeof *w->order);
    w->map = malloc(sn * sizeof *w->map);
    w->pre = malloc(sm * sizeof *w->pre);
    w->best_map = malloc(sn * sizeof *w->best_map);
    w->deg_a = malloc(sn * sizeof *w->deg_a);
    w->deg_b = malloc(sm * sizeof *w->deg_b);
    w->ideg_a = malloc(sn * sizeof *w->ideg_a);
    w->ideg_b = malloc(sm * sizeof *w->ideg_b);
    w->cand_img = malloc(sn * sm * sizeof *w->cand_img);
    w->cand_inc = malloc(sn * sm * sizeof *w->cand_inc);
    w->cand_dec = malloc(sn * sm * sizeof *w->cand_dec);
    w->cand_step = malloc(sn * sm * sizeof *w->cand_step);
    w->sort_a = malloc(sn * sizeof *w->sort_a);
    w->sort_b = malloc(sm * sizeof *w->sort_b);
    if (!w->cost || !w->u || !w->v || !w->minv || !w->p || !w->way || !w->assign || !w->used || !w->A || !w->B ||
        !w->la || !w->lb || !w->lab_tmp || !w->cnt_a || !w->cnt_b || !w->order || !w->map || !w->pre ||
        !w->best_map || !w->deg_a || !w->deg_b || !w->ideg_a || !w->ideg_b || !w->cand_img || !w->cand_inc ||
        !w->cand_dec || !w->cand_step || !w->sort_a || !w->sort_b) {
        ws_free(w);
        return ls_fail(err, LS_ENOMEM, "ged: out of memory for graphs of %ld and %ld nodes", (long)n, (long)m);
    }
    return LS_OK;
}

/* ---- the linear sum assignment ------------------------------------------ */

/* Minimises sum cost[i][assign[i]] over permutations; N x N, row major.
 * Returns the total. */
static int64_t lsap(ged_ws *w, int32_t N, const int64_t *cost, int32_t *assign)
{
    int64_t *u = w->u, *v = w->v, *minv = w->minv;
    int32_t *p = w->p, *way = w->way;
    char *used = w->used;
    /* 1-based columns and rows; column 0 is the virtual start. */
    for (int32_t j = 0; j <= N; j++) {
        u[j] = 0;
        v[j] = 0;
        p[j] = 0;
        way[j] = 0;
    }
    for (int32_t i = 1; i <= N; i++) {
        p[0] = i;
        int32_t j0 = 0;
        for (int32_t j = 0; j <= N; j++) {
            minv[j] = LSAP_INF;
            used[j] = 0;
        }
        do {
            used[j0] = 1;
            int32_t i0 = p[j0], j1 = 0;
            int64_t delta = LSAP_INF;
            const int64_t *row = cost + (size_t)(i0 - 1) * (size_t)N;
            for (int32_t j = 1; j <= N; j++) {
                if (used[j])
                    continue;
                int64_t cur = row[j - 1] - u[i0] - v[j];
                if (cur < minv[j]) {
                    minv[j] = cur;
                    way[j] = j0;
                }
                if (minv[j] < delta) {
                    delta = minv[j];
                    j1 = j;
                }
            }
            for (int32_t j = 0; j <= N; j++) {
                if (used[j]) {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
        } while (p[j0] != 0);
        do {
            int32_t j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
        } while (j0 != 0);
    }
    int64_t total = 0;
    for (int32_t j = 1; j <= N; j++) {
        assign[p[j] - 1] = j - 1;
        total += cost[(size_t)(p[j] - 1) * (size_t)N + (size_t)(j - 1)];
    }
    return total;
}

/* ---- setup -------------------------------------------------------------- */

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

static int32_t label_index(const int32_t *sorted, int32_t L, int32_t x)
{
    int32_t lo = 0, hi = L;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Adjacency matrices, compact labels, degrees. Returns the label count. */
static int32_t ws_setup(ged_ws *w, const graph *a, const graph *b)
{
    int32_t n = a->n, m = b->n;
    memset(w->A, 0, (size_t)n * (size_t)n);
    memset(w->B, 0, (size_t)m * (size_t)m);
    for (int32_t i = 0; i < n; i++) {
        w->deg_a[i] = (int32_t)(a->out_off[i + 1] - a->out_off[i]);
        w->ideg_a[i] = (int32_t)(a->in_off[i + 1] - a->in_off[i]);
        for (int64_t e = a->out_off[i]; e < a->out_off[i + 1]; e++)
            w->A[(size_t)i * (size_t)n + (size_t)a->out_adj[e]] = 1;
    }
    for (int32_t j = 0; j < m; j++) {
        w->deg_b[j] = (int32_t)(b->out_off[j + 1] - b->out_off[j]);
        w->ideg_b[j] = (int32_t)(b->in_off[j + 1] - b->in_off[j]);
        for (int64_t e = b->out_off[j]; e < b->out_off[j + 1]; e++)
            w->B[(size_t)j * (size_t)m + (size_t)b->out_adj[e]] = 1;
    }
    int32_t L = 0;
    for (int32_t i = 0; i < n; i++)
        w->lab_tmp[L++] = a->label[i];
    for (int32_t j = 0; j < m; j++)
        w->lab_tmp[L++] = b->label[j];
    qsort(w->lab_tmp, (size_t)L, sizeof *w->lab_tmp, cmp_i32);
    int32_t u = 0;
    for (int32_t i = 0; i < L; i++)
        if (i == 0 || w->lab_tmp[i] != w->lab_tmp[i - 1])
            w->lab_tmp[u++] = w->lab_tmp[i];
    for (int32_t i = 0; i < n; i++)
        w->la[i] = label_index(w->lab_tmp, u, a->label[i]);
    for (int32_t j = 0; j < m; j++)
        w->lb[j] = label_index(w->lab_tmp, u, b->label[j]);
    return u;
}

static int64_t edge_diff_cost(int64_t da, int64_t db, const ged_costs *c)
{
    return da > db ? (da - db) * c->edge_del : (db - da) * c->edge_ins;
}

/* The bipartite matrix. half = 0: the upper bound's matrix (a substitution
 * carries the assignment cost of the incident edges); half = 1: every cell
 * doubled, the edge parts counted once (an edge has two ends), for the
 * lower bound. */
static void fill_matrix(ged_ws *w, int32_t n, int32_t m, const ged_costs *c, int directed, int half)
{
    int32_t N = n + m;
    int64_t nodew = half ? 2 : 1;
    for (int32_t i = 0; i < N; i++) {
        int64_t *row = w->cost + (size_t)i * (size_t)N;
        for (int32_t j = 0; j < N; j++) {
            int64_t x;
            if (i < n && j < m) {
                x = (w->la[i] == w->lb[j] ? 0 : c->node_sub) * nodew + edge_diff_cost(w->deg_a[i], w->deg_b[j], c);
                if (directed)
                    x += edge_diff_cost(w->ideg_a[i], w->ideg_b[j], c);
            } else if (i < n) {
                x = j - m == i ? c->node_del * nodew + (int64_t)(w->deg_a[i] + (directed ? w->ideg_a[i] : 0)) *
                                                           c->edge_del
                               : LSAP_FORBIDDEN;
            } else if (j < m) {
                x = i - n == j ? c->node_ins * nodew + (int64_t)(w->deg_b[j] + (directed ? w->ideg_b[j] : 0)) *
                                                           c->edge_ins
                               : LSAP_FORBIDDEN;
            } else {
                x = 0;
            }
            row[j] = x;
        }
    }
}

static int64_t path_cost(const graph *a, const graph *b, const uint8_t *A, const uint8_t *B, const int32_t *la,
                         const int32_t *lb, const ged_costs *c, const int32_t *map, int32_t *pre)
{
    int32_t n = a->n, m = b->n;
    int64_t cost = 0;
    for (int32_t j = 0; j < m; j++)
        pre[j] = -1;
    for (int32_t i = 0; i < n; i++) {
        if (map[i] < 0) {
            cost += c->node_del;
        } else {
            pre[map[i]] = i;
            cost += la[i] == lb[map[i]] ? 0 : c->node_sub;
        }
    }
    for (int32_t j = 0; j < m; j++)
        cost += pre[j] < 0 ? c->node_ins : 0;
    /* Every edge (arc) of a kept or deleted; every one of b found or inserted. */
    for (int32_t i = 0; i < n; i++)
        for (int32_t k = a->directed ? 0 : i + 1; k < n; k++)
            if (A[(size_t)i * (size_t)n + (size_t)k] &&
                !(map[i] >= 0 && map[k] >= 0 && B[(size_t)map[i] * (size_t)m + (size_t)map[k]]))
                cost += c->edge_del;
    for (int32_t j = 0; j < m; j++)
        for (int32_t l = b->directed ? 0 : j + 1; l < m; l++)
            if (B[(size_t)j * (size_t)m + (size_t)l] &&
                !(pre[j] >= 0 && pre[l] >= 0 && A[(size_t)pre[j] * (size_t)n + (size_t)pre[l]]))
                cost += c->edge_ins;
    return cost;
}

/* ---- exact search ------------------------------------------------------- */

typedef struct {
    ged_ws *w;
    const ged_costs *c;
    int32_t n, m;
    int directed;
    int64_t best;
    int32_t common;          /* sum over labels of min(remaining in a, remaining in b) */
    int64_t ea_rem, eb_rem;  /* undecided edges of a, of b */
    int32_t used;            /* b nodes used so far */
    int64_t floor;           /* the lower bound: a path of this cost ends the search */
    int done;
    /* The controls: read every GED_PROGRESS_NODES nodes, never written
     * into the search's state, so they cannot change a result. */
    struct pairs_job *job;   /* NULL: no controls */
    uint64_t tick;           /* nodes since the last report */
    int stopped;             /* *stop was seen: the result is not exact */
} search;

static void job_tick(struct pairs_job *j, uint64_t nodes, int pair_done);
static int job_stopped(const struct pairs_job *j);

/* The least cost of the undecided operations (see the file comment). */
/* Degrees sorted in decreasing order (insertion sort: short lists). */
static void sort_desc(int32_t *x, int32_t n)
{
    for (int32_t i = 1; i < n; i++) {
        int32_t v = x[i], k = i;
        while (k > 0 && x[k - 1] < v) {
            x[k] = x[k - 1];
            k--;
        }
        x[k] = v;
    }
}

/* Twice a lower bound of the edge operations at the unplaced nodes of a
 * (order[t+1..n)) and the free nodes of b: a node u put at j keeps at most
 * min(deg u, deg j) of its edges, and an undecided edge has at most two
 * such ends, so half the sum over a matching of the degree differences'
 * costs (deletion and insertion: against degree 0) is a lower bound. The
 * cost is a convex function of the difference, so matching the sorted
 * sequences is the optimal matching. Directed: out- and in-degrees each. */
static int64_t degree_bound2(const search *s, int32_t t, int in)
{
    ged_ws *w = s->w;
    const int32_t *da = in ? w->ideg_a : w->deg_a, *db = in ? w->ideg_b : w->deg_b;
    int32_t na = 0, nb = 0;
    for (int32_t q = t + 1; q < s->n; q++)
        w->sort_a[na++] = da[w->order[q]];
    for (int32_t j = 0; j < s->m; j++)
        if (w->pre[j] < 0)
            w->sort_b[nb++] = db[j];
    sort_desc(w->sort_a, na);
    sort_desc(w->sort_b, nb);
    int64_t sum = 0;
    for (int32_t i = 0; i < na || i < nb; i++)
        sum += edge_diff_cost(i < na ? w->sort_a[i] : 0, i < nb ? w->sort_b[i] : 0, s->c);
    return sum;
}

static int64_t rest_bound(const search *s, int32_t t, int32_t ra, int32_t rb)
{
    const ged_costs *c = s->c;
    int64_t common = s->common;
    int64_t mn = ra < rb ? ra : rb;
    int64_t y0 = (ra - common) * c->node_del + (rb - common) * c->node_ins;
    int64_t y1 = (mn - common) * c->node_sub + (ra - mn) * c->node_del + (rb - mn) * c->node_ins;
    int64_t node = y0 < y1 ? y0 : y1;
    int64_t edges = edge_diff_cost(s->ea_rem, s->eb_rem, c);
    int64_t deg2 = degree_bound2(s, t, 0) + (s->directed ? degree_bound2(s, t, 1) : 0);
    if ((deg2 + 1) / 2 > edges)
        edges = (deg2 + 1) / 2;   /* the edge cost is an integer: round up */
    return node + edges;
}

static void take_label(int32_t *mine, const int32_t *other, int32_t l, int32_t *common)
{
    if (mine[l] <= other[l])
        (*common)--;
    mine[l]--;
}

static void give_label(int32_t *mine, const int32_t *other, int32_t l, int32_t *common)
{
    mine[l]++;
    if (mine[l] <= other[l])
        (*common)++;
}

/* The search below, at depth t with t nodes of a placed at cost g. The
 * candidates for the next node (each free b node, then deletion) are tried
 * cheapest step first, ties to the lower index, so the first descent is the
 * greedy path and good incumbents come early; the search ends as soon as a
 * path reaches the lower bound (nothing can be cheaper). */
static void dfs(search *s, int32_t t, int64_t g)
{
    ged_ws *w = s->w;
    const ged_costs *c = s->c;
    int32_t n = s->n, m = s->m;
    if (s->job != NULL && ++s->tick == GED_PROGRESS_NODES) {
        job_tick(s->job, s->tick, 0);
        s->tick = 0;
        if (job_stopped(s->job)) {
            s->stopped = 1;
            s->done = 1;
            return;
        }
    }
    if (t == n) {
        int32_t rb = m - s->used;
        int64_t total = g + rb * c->node_ins + s->eb_rem * c->edge_ins;
        if (total < s->best) {
            s->best = total;
            memcpy(w->best_map, w->map, (size_t)n * sizeof *w->map);
            if (total <= s->floor)
                s->done = 1;
        }
        return;
    }
    int32_t u = w->order[t];
    const uint8_t *A = w->A, *B = w->B;
    /* a-edges between u and the nodes placed before it: decided now. */
    int64_t a_dec = 0;
    for (int32_t q = 0; q < t; q++) {
        int32_t v = w->order[q];
        a_dec += A[(size_t)u * (size_t)n + (size_t)v];
        if (s->directed)
            a_dec += A[(size_t)v * (size_t)n + (size_t)u];
    }
    take_label(w->cnt_a, w->cnt_b, w->la[u], &s->common);
    s->ea_rem -= a_dec;
    int32_t ra = n - t - 1;
    /* This depth's candidates: image (-1: deletion), step cost plus the
     * bound of the rest after it, b-edges decided. */
    int32_t *cimg = w->cand_img + (size_t)t * ((size_t)m + 1);
    int64_t *cinc = w->cand_inc + (size_t)t * ((size_t)m + 1);
    int64_t *cdec = w->cand_dec + (size_t)t * ((size_t)m + 1);
    int64_t *cstep = w->cand_step + (size_t)t * ((size_t)m + 1);
    int32_t K = 0;
    for (int32_t j = 0; j <= m; j++) {
        int32_t img = j < m ? j : -1;
        if (img >= 0 && w->pre[img] >= 0)
            continue;
        int64_t inc;
        int64_t b_dec = 0;
        if (img < 0) {
            inc = c->node_del + a_dec * c->edge_del;
        } else {
            inc = w->la[u] == w->lb[img] ? 0 : c->node_sub;
            for (int32_t q = 0; q < t; q++) {
                int32_t v = w->order[q], iv = w->map[v];
                int ea = A[(size_t)u * (size_t)n + (size_t)v];
                if (iv < 0) {
                    inc += ea ? c->edge_del : 0;
                    if (s->directed && A[(size_t)v * (size_t)n + (size_t)u])
                        inc += c->edge_del;
                    continue;
                }
                int eb = B[(size_t)img * (size_t)m + (size_t)iv];
                b_dec += eb;
                inc += ea && !eb ? c->edge_del : !ea && eb ? c->edge_ins : 0;
                if (s->directed) {
                    int ea2 = A[(size_t)v * (size_t)n + (size_t)u];
                    int eb2 = B[(size_t)iv * (size_t)m + (size_t)img];
                    b_dec += eb2;
                    inc += ea2 && !eb2 ? c->edge_del : !ea2 && eb2 ? c->edge_ins : 0;
                }
            }
        }
        /* f = inc + the bound of the rest with u at img. */
        if (img >= 0) {
            w->pre[img] = u;
            s->used++;
            take_label(w->cnt_b, w->cnt_a, w->lb[img], &s->common);
            s->eb_rem -= b_dec;
        }
        int64_t f = inc + rest_bound(s, t, ra, m - s->used);
        if (img >= 0) {
            s->eb_rem += b_dec;
            give_label(w->cnt_b, w->cnt_a, w->lb[img], &s->common);
            s->used--;
            w->pre[img] = -1;
        }
        if (g + f >= s->best)
            continue;
        /* Insertion by (f, then the order of j): stable. */
        int32_t k = K++;
        while (k > 0 && cinc[k - 1] > f) {
            cimg[k] = cimg[k - 1];
            cinc[k] = cinc[k - 1];
            cdec[k] = cdec[k - 1];
            cstep[k] = cstep[k - 1];
            k--;
        }
        cimg[k] = img;
        cinc[k] = f;
        cdec[k] = b_dec;
        cstep[k] = inc;
    }
    for (int32_t k = 0; k < K && !s->done; k++) {
        int32_t img = cimg[k];
        int64_t f = cinc[k], b_dec = cdec[k];
        if (g + f >= s->best)
            break;   /* the rest cost as much or more */
        /* Place u at img; bound the rest. */
        w->map[u] = img;
        if (img >= 0) {
            w->pre[img] = u;
            s->used++;
            take_label(w->cnt_b, w->cnt_a, w->lb[img], &s->common);
            s->eb_rem -= b_dec;
        }
        dfs(s, t + 1, g + cstep[k]);
        if (img >= 0) {
            s->eb_rem += b_dec;
            give_label(w->cnt_b, w->cnt_a, w->lb[img], &s->common);
            s->used--;
            w->pre[img] = -1;
        }
        w->map[u] = -1;
    }
    s->ea_rem += a_dec;
    give_label(w->cnt_a, w->cnt_b, w->la[u], &s->common);
}

/* ---- one pair ----------------------------------------------------------- */

/* job: the controls (NULL: none). Returns 1 when the search was stopped
 * (r->exact is then -1: not computed). */
static int ged_one(ged_ws *w, const graph *a, const graph *b, const ged_costs *c, int node_cap, ged_result *r,
                   struct pairs_job *job)
{
    int32_t n = a->n, m = b->n, N = n + m;
    int32_t L = ws_setup(w, a, b);
    int directed = a->directed;
    /* Upper bound: the node map of the assignment, its path's cost. */
    int64_t upper = 0;
    if (N > 0) {
        fill_matrix(w, n, m, c, directed, 0);
        lsap(w, N, w->cost, w->assign);
        for (int32_t i = 0; i < n; i++)
            w->map[i] = w->assign[i] < m ? w->assign[i] : -1;
        upper = path_cost(a, b, w->A, w->B, w->la, w->lb, c, w->map, w->pre);
    }
    /* Lower bound: the doubled matrix's optimum, halved and rounded up (a
     * path's cost is an integer), or the size bound if larger. */
    int64_t lower = 0;
    if (N > 0) {
        fill_matrix(w, n, m, c, directed, 1);
        int64_t twice = lsap(w, N, w->cost, w->assign);
        lower = (twice + 1) / 2;
    }
    int64_t size = (n > m ? (int64_t)(n - m) * c->node_del : (int64_t)(m - n) * c->node_ins) +
                   edge_diff_cost(a->n_edges, b->n_edges, c);
    if (size > lower)
        lower = size;
    r->lower = lower;
    r->upper = upper;
    r->exact = -1;
    if (n > node_cap || m > node_cap)
        return 0;
    if (lower == upper) {
        r->exact = upper;
        return 0;
    }
    /* Exact: the search order is breadth first from the node of highest
     * degree (ties to the lower id), neighbours in id order, the next
     * component from the highest remaining degree: each node placed is
     * adjacent to nodes already placed, so its edges' costs count at once. */
    {
        char *seen = w->used;   /* free until the next lsap */
        memset(seen, 0, (size_t)n + 1);
        int32_t head = 0, tail = 0;
        while (tail < n) {
            if (head == tail) {
                int32_t best = -1, bd = -1;
                for (int32_t i = 0; i < n; i++)
                    if (!seen[i] && w->deg_a[i] + w->ideg_a[i] > bd) {
                        best = i;
                        bd = w->deg_a[i] + w->ideg_a[i];
                    }
                seen[best] = 1;
                w->order[tail++] = best;
            }
            int32_t v = w->order[head++];
            for (int32_t i = 0; i < n; i++)
                if (!seen[i] && (w->A[(size_t)v * (size_t)n + (size_t)i] || w->A[(size_t)i * (size_t)n + (size_t)v])) {
                    seen[i] = 1;
                    w->order[tail++] = i;
                }
        }
    }
    search s = {w, c, n, m, directed, upper + 1, 0, a->n_edges, b->n_edges, 0, lower, 0, job, 0, 0};
    memset(w->cnt_a, 0, (size_t)(L > 0 ? L : 1) * sizeof *w->cnt_a);
    memset(w->cnt_b, 0, (size_t)(L > 0 ? L : 1) * sizeof *w->cnt_b);
    for (int32_t i = 0; i < n; i++)
        w->cnt_a[w->la[i]]++;
    for (int32_t j = 0; j < m; j++)
        w->cnt_b[w->lb[j]]++;
    for (int32_t l = 0; l < L; l++)
        s.common += w->cnt_a[l] < w->cnt_b[l] ? w->cnt_a[l] : w->cnt_b[l];
    for (int32_t i = 0; i < n; i++)
        w->map[i] = -1;
    for (int32_t j = 0; j < m; j++)
        w->pre[j] = -1;
    /* best starts one above the upper bound, so the search also finds a
     * path of exactly that cost; nothing cheaper than `lower` exists. */
    dfs(&s, 0, 0);
    if (job != NULL)
        job_tick(job, s.tick, 0);
    if (s.stopped)
        return 1;
    r->exact = s.best;
    return 0;
}

static ls_status check_pair(const graph *a, const graph *b, const ged_costs *c, ls_err *err)
{
    if (a->directed != b->directed)
        return ls_fail(err, LS_EINVAL, "ged: one graph is directed and the other is not");
    if (a->n > GED_MAX_NODES || b->n > GED_MAX_NODES)
        return ls_fail(err, LS_EINVAL, "ged: graphs of %ld and %ld nodes (the most is %d)", (long)a->n, (long)b->n,
                       GED_MAX_NODES);
    const int64_t all[5] = {c->node_sub, c->node_del, c->node_ins, c->edge_del, c->edge_ins};
    for (int i = 0; i < 5; i++)
        if (all[i] < 0 || all[i] > GED_COST_MAX)
            return ls_fail(err, LS_EINVAL, "--costs: %lld is out of range (0..%lld)", (long long)all[i],
                           (long long)GED_COST_MAX);
    return LS_OK;
}

ls_status ged_compute(const graph *a, const graph *b, const ged_costs *c, int node_cap, ged_result *r, ls_err *err)
{
    ged_costs unit = GED_COSTS_UNIT;
    if (c == NULL)
        c = &unit;
    r->lower = r->exact = r->upper = -1;
    ls_status st = check_pair(a, b, c, err);
    if (st != LS_OK)
        return st;
    ged_ws w;
    if ((st = ws_alloc(&w, a->n, b->n, err)) != LS_OK)
        return st;
    ged_one(&w, a, b, c, node_cap, r, NULL);
    ws_free(&w);
    return LS_OK;
}

int64_t ged_path_cost(const graph *a, const graph *b, const ged_costs *c, const int32_t *map)
{
    ged_costs unit = GED_COSTS_UNIT;
    if (c == NULL)
        c = &unit;
    ged_ws w;
    if (ws_alloc(&w, a->n, b->n, NULL) != LS_OK)
        return -1;
    ws_setup(&w, a, b);
    int64_t cost = path_cost(a, b, w.A, w.B, w.la, w.lb, c, map, w.pre);
    ws_free(&w);
    return cost;
}

struct pairs_job {
    const graph *const *a, *const *b;
    const ged_costs *c;
    int node_cap;
    ged_result *out;
    ged_ws *ws;
    size_t n_pairs;
    atomic_size_t next;
    const ged_control *ctl;      /* NULL: no controls (and no counting) */
    atomic_size_t pairs_done;
    atomic_uint_fast64_t nodes;
    atomic_int stopped;
};

static void job_tick(struct pairs_job *j, uint64_t nodes, int pair_done)
{
    ged_progress p;
    p.nodes = (uint64_t)atomic_fetch_add_explicit(&j->nodes, nodes, memory_order_relaxed) + nodes;
    p.pairs_done = atomic_fetch_add_explicit(&j->pairs_done, pair_done ? 1u : 0u, memory_order_relaxed) +
                   (pair_done ? 1u : 0u);
    p.n_pairs = j->n_pairs;
    if (j->ctl->progress != NULL)
        j->ctl->progress(j->ctl->ctx, &p);
}

static int job_stopped(const struct pairs_job *j)
{
    return j->ctl->stop != NULL && __atomic_load_n(j->ctl->stop, __ATOMIC_RELAXED) != 0;
}

static void pairs_run(void *ctx, int worker, int n_workers)
{
    (void)n_workers;
    struct pairs_job *j = ctx;
    for (;;) {
        if (j->ctl != NULL && (atomic_load_explicit(&j->stopped, memory_order_relaxed) || job_stopped(j))) {
            atomic_store_explicit(&j->stopped, 1, memory_order_relaxed);
            break;
        }
        size_t i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (i >= j->n_pairs)
            break;
        if (ged_one(&j->ws[worker], j->a[i], j->b[i], j->c, j->node_cap, &j->out[i], j->ctl != NULL ? j : NULL)) {
            atomic_store_explicit(&j->stopped, 1, memory_order_relaxed);
            break;
        }
        if (j->ctl != NULL)
            job_tick(j, 0, 1);
    }
}

ls_status ged_pairs(const graph *const *a, const graph *const *b, size_t n_pairs, const ged_costs *c, int node_cap,
                    pool *p, ged_result *out, ls_err *err)
{
    return ged_pairs_run(a, b, n_pairs, c, node_cap, p, NULL, out, err);
}

ls_status ged_pairs_run(const graph *const *a, const graph *const *b, size_t n_pairs, const ged_costs *c,
                        int node_cap, pool *p, const ged_control *ctl, ged_result *out, ls_err *err)
{
    ged_costs unit = GED_COSTS_UNIT;
    if (c == NULL)
        c = &unit;
    int32_t max_n = 0, max_m = 0;
    for (size_t i = 0; i < n_pairs; i++) {
        out[i].lower = out[i].exact = out[i].upper = -1;
        ls_err e = {{0}};
        if (check_pair(a[i], b[i], c, &e) != LS_OK)
            return ls_fail(err, LS_EINVAL, "pair %zu: %s", i + 1, e.msg);
        if (a[i]->n > max_n)
            max_n = a[i]->n;
        if (b[i]->n > max_m)
            max_m = b[i]->n;
    }
    int nw = p != NULL ? pool_threads(p) : 1;
    ged_ws *ws = calloc((size_t)nw, sizeof *ws);
    if (ws == NULL)
        return ls_fail(err, LS_ENOMEM, "ged: out of memory");
    ls_status st = LS_OK;
    for (int i = 0; i < nw && st == LS_OK; i++)
        st = ws_alloc(&ws[i], max_n, max_m, err);
    if (st == LS_OK) {
        struct pairs_job j;
        memset(&j, 0, sizeof j);
        j.a = a;
        j.b = b;
        j.c = c;
        j.node_cap = node_cap;
        j.out = out;
        j.ws = ws;
        j.n_pairs = n_pairs;
        j.ctl = ctl;
        atomic_init(&j.next, 0);
        atomic_init(&j.pairs_done, 0);
        atomic_init(&j.nodes, 0);
        atomic_init(&j.stopped, 0);
        if (p != NULL)
            pool_run(p, pairs_run, &j);
        else
            pairs_run(&j, 0, 1);
        if (atomic_load(&j.stopped))
            st = ls_fail(err, LS_EINTR, "interrupted after %zu of %zu pairs: no result printed",
                         atomic_load(&j.pairs_done), n_pairs);
    }
    for (int i = 0; i < nw; i++)
        ws_free(&ws[i]);
    free(ws);
    return st;
}

ls_status ged_costs_parse(ged_costs *c, const char *text, ls_err *err)
{
    static const char *const keys[5] = {"node-sub", "node-del", "node-ins", "edge-del", "edge-ins"};
    ged_costs tmp = *c;
    int64_t *tfields[5] = {&tmp.node_sub, &tmp.node_del, &tmp.node_ins, &tmp.edge_del, &tmp.edge_ins};
    const char *s = text;
    int pos = 0;
    for (;;) {
        const char *e = strchr(s, ',');
        size_t len = e != NULL ? (size_t)(e - s) : strlen(s);
        char item[64];
        if (len == 0 || len >= sizeof item)
            return ls_fail(err, LS_EINVAL, "--costs: '%.40s' is not a cost list (node-sub=1,edge-del=2,... or 5 "
                                           "numbers: node-sub,node-del,node-ins,edge-del,edge-ins)", text);
        memcpy(item, s, len);
        item[len] = 0;
        char *eq = strchr(item, '=');
        int which = pos;
        const char *num = item;
        if (eq != NULL) {
            *eq = 0;
            which = -1;
            for (int k = 0; k < 5; k++)
                if (strcmp(item, keys[k]) == 0)
                    which = k;
            if (which < 0)
                return ls_fail(err, LS_EINVAL, "--costs: unknown cost '%s' (node-sub node-del node-ins edge-del "
                                               "edge-ins)", item);
            num = eq + 1;
        } else if (pos >= 5) {
            return ls_fail(err, LS_EINVAL, "--costs: more than 5 numbers");
        }
        char *end;
        long long v = strtoll(num, &end, 10);
        if (end == num || *end != 0 || v < 0 || v > GED_COST_MAX)
            return ls_fail(err, LS_EINVAL, "--costs: '%s' is not an integer cost 0..%lld", num,
                           (long long)GED_COST_MAX);
        *tfields[which] = v;
        pos++;
        if (e == NULL)
            break;
        s = e + 1;
    }
    *c = tmp;
    return LS_OK;
}
