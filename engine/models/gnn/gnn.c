/* gnn.c — the GIN kernels of gnn.h: pull aggregation, the two-layer MLP per
 * layer, the head, softmax cross-entropy, and 1-WL colour refinement. Every
 * sum's order is the one gnn.h writes down. */
#include "engine/models/gnn/gnn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "engine/num/dmath.h"
#include "engine/graph/graph.h"
#include "engine/num/rng.h"

size_t gnn_row_dim(int kind, size_t N, size_t F)
{
    switch (kind) {
    case GNN_KIND_GRAPH:
        return GNN_HEADER + N * F + N * N;
    case GNN_KIND_EDIT:
        return GNN_HEADER + N * F + N * N + N;
    case GNN_KIND_NODE:
        return GNN_HEADER + F + N;
    default:
        return 0;
    }
}

void gnn_csr_from_row(const float *row, int64_t *off_in, int32_t *adj_in, int64_t *off_out, int32_t *adj_out,
                      gnn_csr *g)
{
    const size_t N = (size_t)row[1], F = (size_t)row[2], n = (size_t)row[3];
    const float *adj = row + GNN_HEADER + N * F;
    /* In-edges of v: row v of adj, sources ascending; out-edges of u:
     * column u, destinations ascending — the transpose, built by a second
     * pass rather than by scattering. */
    int64_t e = 0;
    off_in[0] = 0;
    for (size_t v = 0; v < n; v++) {
        for (size_t u = 0; u < n; u++)
            if (adj[v * N + u] != 0.0f)
                adj_in[e++] = (int32_t)u;
        off_in[v + 1] = e;
    }
    e = 0;
    off_out[0] = 0;
    for (size_t u = 0; u < n; u++) {
        for (size_t v = 0; v < n; v++)
            if (adj[v * N + u] != 0.0f)
                adj_out[e++] = (int32_t)v;
        off_out[u + 1] = e;
    }
    *g = (gnn_csr){ (int32_t)n, off_in, adj_in, off_out, adj_out };
}

void gnn_row_of_graph(float *row, int kind, size_t N, size_t F, const graph *g, const float *feat)
{
    const size_t n = (size_t)g->n;
    memset(row, 0, gnn_row_dim(kind, N, F) * sizeof(float));
    row[0] = (float)kind;
    row[1] = (float)N;
    row[2] = (float)F;
    row[3] = (float)n;
    for (size_t i = 0; i < n * F; i++)
        row[GNN_HEADER + i] = feat != NULL ? feat[i] : 1.0f;
    float *adj = row + GNN_HEADER + N * F;
    for (size_t v = 0; v < n; v++)
        for (int64_t e = g->in_off[v]; e < g->in_off[v + 1]; e++)
            adj[v * N + (size_t)g->in_adj[e]] = 1.0f;
}

ls_status gnn_atlas_load(graph ***out, int32_t *count, ls_err *err)
{
    *out = NULL;
    *count = 0;
    if (access(GRAPH_ATLAS_PATH, R_OK) != 0)
        return ls_fail(err, LS_EIO, "%s: missing; it comes with Debian's python3-networkx (make deps)",
                       GRAPH_ATLAS_PATH);
    return graph_load_atlas(out, count, GRAPH_ATLAS_PATH, err);
}

ls_status gnn_net_init(gnn_net *net, size_t F, size_t H, size_t C, size_t L, float eps, ls_err *err)
{
    if (F == 0 || F > 4096 || H == 0 || H > 4096 || C < 2 || C > 256 || L == 0 || L > GNN_MAX_LAYERS)
        return ls_fail(err, LS_EINVAL, "model gnn: sizes out of range (features %zu, hidden %zu, classes %zu, "
                       "layers %zu)", F, H, C, L);
    memset(net, 0, sizeof *net);
    net->F = F;
    net->H = H;
    net->C = C;
    net->L = L;
    net->eps = eps;
    size_t o = 0;
    for (size_t l = 0; l < L; l++) {
        const size_t d = l == 0 ? F : H;
        net->off_w1[l] = o;
        o += d * H;
        net->off_b1[l] = o;
        o += H;
        net->off_w2[l] = o;
        o += H * H;
        net->off_b2[l] = o;
        o += H;
    }
    net->E = L * H;
    net->off_wo = o;
    o += net->E * C;
    net->off_bo = o;
    o += C;
    net->n_params = o;
    return LS_OK;
}

static void init_weight(float *w, size_t fan_in, size_t count, uint64_t seed, uint64_t tensor)
{
    const float s = (float)(1.0 / sqrt((double)fan_in));
    for (size_t i = 0; i < count; i++)
        w[i] = (2.0f * rng_uniformf(seed, RNG_INIT, tensor, i, 0) - 1.0f) * s;
}

void gnn_init_params(const gnn_net *net, float *params, uint64_t seed)
{
    memset(params, 0, net->n_params * sizeof(float));
    const size_t H = net->H;
    for (size_t l = 0; l < net->L; l++) {
        const size_t d = l == 0 ? net->F : H;
        init_weight(params + net->off_w1[l], d, d * H, seed, 4 * l);
        init_weight(params + net->off_w2[l], H, H * H, seed, 4 * l + 2);
    }
    init_weight(params + net->off_wo, net->E, net->E * net->C, seed, 4 * net->L);
}

static size_t layer_in(const gnn_net *net, size_t l)
{
    return l == 0 ? net->F : net->H;
}

/* Floats of layer l's saved activations for n nodes: z, r, h. */
static size_t layer_floats(const gnn_net *net, size_t l, size_t n)
{
    return n * (layer_in(net, l) + 2 * net->H);
}

size_t gnn_acts_floats(const gnn_net *net, size_t n)
{
    size_t s = 0;
    for (size_t l = 0; l < net->L; l++)
        s += layer_floats(net, l, n);
    return s;
}

size_t gnn_work_floats(const gnn_net *net, size_t n)
{
    const size_t d = net->F > net->H ? net->F : net->H;
    return n * (d + 2 * net->H);   /* dz [n][d], dr [n][H], the pulled gradient [n][H] */
}

/* The pull: z_v = c·h_v + Σ_{u ∈ N_in(v)} h_u, row by row. */
static void aggregate(const gnn_csr *g, const int64_t *off, const int32_t *adj, float c, const float *h, size_t d,
                      float *z)
{
    for (int32_t v = 0; v < g->n; v++) {
        float *zv = z + (size_t)v * d;
        const float *hv = h + (size_t)v * d;
        for (size_t i = 0; i < d; i++)
            zv[i] = c * hv[i];
        for (int64_t e = off[v]; e < off[v + 1]; e++) {
            const float *hu = h + (size_t)adj[e] * d;
            for (size_t i = 0; i < d; i++)
                zv[i] = zv[i] + hu[i];
        }
    }
}

/* out_v = relu(b + in_v·W) (relu 0: b + in_v·W), in [n][din], W [din][dout]. */
static void dense_relu(const float *in, size_t n, size_t din, const float *W, const float *b, size_t dout,
                       int relu, float *out)
{
    for (size_t v = 0; v < n; v++) {
        float *o = out + v * dout;
        const float *x = in + v * din;
        for (size_t j = 0; j < dout; j++)
            o[j] = b[j];
        for (size_t i = 0; i < din; i++) {
            const float xi = x[i];
            const float *w = W + i * dout;
            for (size_t j = 0; j < dout; j++)
                o[j] = o[j] + xi * w[j];
        }
        for (size_t j = 0; j < dout && relu; j++)
            o[j] = o[j] > 0.0f ? o[j] : 0.0f;
    }
}

const float *gnn_forward(const gnn_net *net, const float *params, const gnn_csr *g, const float *x, float *acts)
{
    const size_t n = (size_t)g->n, H = net->H;
    const float c = 1.0f + net->eps;
    const float *h = x;
    for (size_t l = 0; l < net->L; l++) {
        const size_t d = layer_in(net, l);
        float *z = acts, *r = z + n * d, *ho = r + n * H;
        aggregate(g, g->in_off, g->in_adj, c, h, d, z);
        dense_relu(z, n, d, params + net->off_w1[l], params + net->off_b1[l], H, 1, r);
        dense_relu(r, n, H, params + net->off_w2[l], params + net->off_b2[l], H, l + 1 < net->L, ho);
        h = ho;
        acts += layer_floats(net, l, n);
    }
    return h;
}

/* Backward of out = relu(b + in·W) given dout (overwritten with da, the
 * gradient before the relu): dW, db added to; din_v = W·da_v. din may be
 * NULL (not needed). */
static void dense_relu_backward(const float *in, const float *out, size_t n, size_t din, const float *W, size_t dout,
                                int relu, float *dgrad_out, float *dW, float *db, float *dinp)
{
    for (size_t v = 0; v < n && relu; v++)
        for (size_t j = 0; j < dout; j++)
            if (!(out[v * dout + j] > 0.0f))
                dgrad_out[v * dout + j] = 0.0f;
    for (size_t v = 0; v < n; v++) {
        const float *x = in + v * din, *da = dgrad_out + v * dout;
        for (size_t i = 0; i < din; i++) {
            const float xi = x[i];
            float *w = dW + i * dout;
            for (size_t j = 0; j < dout; j++)
                w[j] = w[j] + xi * da[j];
        }
        for (size_t j = 0; j < dout; j++)
            db[j] = db[j] + da[j];
    }
    if (dinp == NULL)
        return;
    for (size_t v = 0; v < n; v++) {
        const float *da = dgrad_out + v * dout;
        float *o = dinp + v * din;
        for (size_t i = 0; i < din; i++) {
            const float *w = W + i * dout;
            float s = 0.0f;
            for (size_t j = 0; j < dout; j++)
                s = s + w[j] * da[j];
            o[i] = s;
        }
    }
}

/* Layer l's output h [n][H] inside acts. */
static const float *layer_h(const gnn_net *net, const float *acts, size_t n, size_t l)
{
    for (size_t k = 0; k < l; k++)
        acts += layer_floats(net, k, n);
    return acts + n * (layer_in(net, l) + net->H);
}

void gnn_readout(const gnn_net *net, const float *acts, size_t n, float *e)
{
    const size_t H = net->H;
    for (size_t l = 0; l < net->L; l++) {
        const float *h = layer_h(net, acts, n, l);
        float *el = e + l * H;
        for (size_t j = 0; j < H; j++)
            el[j] = 0.0f;
        for (size_t v = 0; v < n; v++)
            for (size_t j = 0; j < H; j++)
                el[j] = el[j] + h[v * H + j];
    }
}

void gnn_node_embedding(const gnn_net *net, const float *acts, size_t n, size_t v, float *e)
{
    for (size_t l = 0; l < net->L; l++)
        memcpy(e + l * net->H, layer_h(net, acts, n, l) + v * net->H, net->H * sizeof(float));
}

void gnn_embedding_grad(const gnn_net *net, const float *de, size_t n, size_t v, float *dh)
{
    for (size_t l = 0; l < net->L; l++)
        memcpy(dh + (l * n + v) * net->H, de + l * net->H, net->H * sizeof(float));
}

void gnn_backward(const gnn_net *net, const float *params, const gnn_csr *g, const float *acts, float *dh,
                  float *grad, float *work)
{
    const size_t n = (size_t)g->n, H = net->H;
    const float c = 1.0f + net->eps;
    const float *layer[GNN_MAX_LAYERS];
    for (size_t l = 0; l < net->L; l++) {
        layer[l] = acts;
        acts += layer_floats(net, l, n);
    }
    const size_t dmax = net->F > H ? net->F : H;
    float *dz = work, *dr = dz + n * dmax, *pull = dr + n * H;
    for (size_t l = net->L; l-- > 0;) {
        const size_t d = layer_in(net, l);
        const float *z = layer[l], *r = z + n * d, *ho = r + n * H;
        float *dhl = dh + l * n * H;
        dense_relu_backward(r, ho, n, H, params + net->off_w2[l], H, l + 1 < net->L, dhl, grad + net->off_w2[l],
                            grad + net->off_b2[l], dr);
        dense_relu_backward(z, r, n, d, params + net->off_w1[l], H, 1, dr, grad + net->off_w1[l],
                            grad + net->off_b1[l], l > 0 ? dz : NULL);
        if (l > 0) {
            /* The gradient of layer l-1's output: the pull over the
             * transpose, then the head's part: pull[i] + dh_{l-1}[i]. */
            float *prev = dh + (l - 1) * n * H;
            aggregate(g, g->out_off, g->out_adj, c, dz, d, pull);
            for (size_t i = 0; i < n * H; i++)
                prev[i] = pull[i] + prev[i];
        }
    }
}

void gnn_head(const gnn_net *net, const float *params, const float *e, float *logits)
{
    const size_t H = net->E, C = net->C;
    const float *W = params + net->off_wo, *b = params + net->off_bo;
    for (size_t k = 0; k < C; k++)
        logits[k] = b[k];
    for (size_t j = 0; j < H; j++)
        for (size_t k = 0; k < C; k++)
            logits[k] = logits[k] + e[j] * W[j * C + k];
}

size_t gnn_argmax(const float *v, size_t C)
{
    size_t best = 0;
    for (size_t k = 1; k < C; k++)
        if (v[k] > v[best])
            best = k;
    return best;
}

double gnn_softmax_xent(const float *logits, size_t C, unsigned y, float *dlogits)
{
    const double m = (double)logits[gnn_argmax(logits, C)];
    double e[256], S = 0.0;
    for (size_t k = 0; k < C; k++) {
        e[k] = dmath_exp((double)logits[k] - m);
        S = S + e[k];
    }
    for (size_t k = 0; k < C; k++)
        dlogits[k] = (float)(e[k] / S) - (k == y ? 1.0f : 0.0f);
    return dmath_log(S) - ((double)logits[y] - m);
}

void gnn_head_backward(const gnn_net *net, const float *params, const float *e, const float *dl, float *grad,
                       float *de)
{
    const size_t H = net->E, C = net->C;
    const float *W = params + net->off_wo;
    float *dW = grad + net->off_wo, *db = grad + net->off_bo;
    for (size_t j = 0; j < H; j++)
        for (size_t k = 0; k < C; k++)
            dW[j * C + k] = dW[j * C + k] + e[j] * dl[k];
    for (size_t k = 0; k < C; k++)
        db[k] = db[k] + dl[k];
    for (size_t j = 0; j < H; j++) {
        float s = 0.0f;
        for (size_t k = 0; k < C; k++)
            s = s + W[j * C + k] * dl[k];
        de[j] = s;
    }
}

/* ---- 1-WL ----------------------------------------------------------------- */

static int words_cmp(const uint32_t *a, const uint32_t *b, size_t w)
{
    for (size_t i = 0; i < w; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* Ranks of count keys of w words: equal keys one rank, ranks in key order.
 * A stable merge sort of indices (qsort has no context argument in C11).
 * Returns the number of distinct keys. */
static size_t rank_keys(const uint32_t *keys, size_t count, size_t w, uint32_t *rank, uint32_t *idx, uint32_t *tmp)
{
    for (size_t i = 0; i < count; i++)
        idx[i] = (uint32_t)i;
    for (size_t width = 1; width < count; width *= 2) {
        for (size_t lo = 0; lo < count; lo += 2 * width) {
            size_t mid = lo + width < count ? lo + width : count, hi = lo + 2 * width < count ? lo + 2 * width : count;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = words_cmp(keys + (size_t)idx[b] * w, keys + (size_t)idx[a] * w, w) < 0 ? idx[b++] : idx[a++];
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, count * sizeof *idx);
    }
    size_t r = 0;
    for (size_t i = 0; i < count; i++) {
        if (i > 0 && words_cmp(keys + (size_t)idx[i] * w, keys + (size_t)idx[i - 1] * w, w) != 0)
            r++;
        rank[idx[i]] = (uint32_t)r;
    }
    return count ? r + 1 : 0;
}

static void sort_small(uint32_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && a[j - 1] > a[j]; j--) {
            uint32_t t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
}

size_t gnn_wl_classes(const float *const *rows, size_t count, int features, uint32_t *class_of)
{
    if (count == 0)
        return 0;
    const size_t N = (size_t)rows[0][1], F = (size_t)rows[0][2];
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += (size_t)rows[i][3];
    const size_t w = (F > N ? F : N) + 1, items = total > count ? total : count;
    uint32_t *keys = malloc(items * w * sizeof *keys);
    uint32_t *col = malloc(items * sizeof *col), *next = malloc(items * sizeof *next);
    uint32_t *idx = malloc(items * sizeof *idx), *tmp = malloc(items * sizeof *tmp);
    size_t *base = malloc(count * sizeof *base);
    size_t classes = 0;
    if (keys == NULL || col == NULL || next == NULL || idx == NULL || tmp == NULL || base == NULL)
        goto out;
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        base[i] = at;
        const size_t n = (size_t)rows[i][3];
        for (size_t v = 0; v < n; v++) {
            uint32_t *k = keys + (at + v) * w;
            memset(k, 0, w * sizeof *k);
            if (features)
                memcpy(k, rows[i] + GNN_HEADER + v * F, F * sizeof(float));
        }
        at += n;
    }
    size_t k_old = rank_keys(keys, total, w, col, idx, tmp);
    for (;;) {
        for (size_t i = 0; i < count; i++) {
            const size_t n = (size_t)rows[i][3];
            const float *adj = rows[i] + GNN_HEADER + N * F;
            for (size_t v = 0; v < n; v++) {
                uint32_t *k = keys + (base[i] + v) * w;
                size_t m = 0;
                k[0] = col[base[i] + v];
                for (size_t u = 0; u < n; u++)
                    if (adj[v * N + u] != 0.0f)
                        k[1 + m++] = col[base[i] + u];
                sort_small(k + 1, m);
                for (size_t j = 1 + m; j < w; j++)
                    k[j] = UINT32_MAX;
            }
        }
        const size_t k_new = rank_keys(keys, total, w, next, idx, tmp);
        memcpy(col, next, total * sizeof *col);
        if (k_new == k_old)   /* refinement only splits classes: no split, stable */
            break;
        k_old = k_new;
    }
    for (size_t i = 0; i < count; i++) {
        const size_t n = (size_t)rows[i][3];
        uint32_t *k = keys + i * w;
        k[0] = (uint32_t)n;
        for (size_t v = 0; v < n; v++)
            k[1 + v] = col[base[i] + v];
        sort_small(k + 1, n);
        for (size_t j = 1 + n; j < w; j++)
            k[j] = UINT32_MAX;
    }
    classes = rank_keys(keys, count, w, class_of, idx, tmp);
out:
    free(keys);
    free(col);
    free(next);
    free(idx);
    free(tmp);
    free(base);
    return classes;
}
