/* logic_ca.c — the differentiable logic cellular automaton (logic_ca.h): the
 * model behind ls_model's batch mode, its two tasks and its hard circuit.
 *
 * Memory. The model owns, allocated once at create for the configured batch:
 * the wiring (with its first flags), the neighbour table, the softmax/coefficients of the current
 * step, and the per-batch arrays that outlive a phase (state history,
 * targets, gradient patches, gradients of the states). A unit's working set
 * — the activations of one CA step of its cells and two gradient buffers —
 * lives in the per-call scratch, so units never share a writable byte: a
 * unit writes only its own cells' entries of the per-batch arrays and reads
 * other units' entries only in a later phase.
 *
 * Layout of a part's activations (logic.h: rows of ld floats, one lane per
 * cell): the perception runs with lanes (c, i) = c·nc + i, every channel's
 * cells side by side (the kernel logits are shared by the channels, so a
 * channel is just more lanes), ldp = nc·C rounded up to 16; the update
 * network runs with lanes i = the part's nc cells, ldu = nc rounded up to 16.
 * Row blocks: perception [9 patch rows | layer 0 out | layer 1 out | ...],
 * update [C + C·S·K inputs | layer 0 out | ...]: the inputs are the C state
 * rows, then the last kernel layer's outputs, rows (c, s, k); when every
 * part's channel width is whole vectors, that layer writes them there
 * itself, in the order (k, s, c), and its own rows in the perception
 * block go unused (choose_layout). The per-batch arrays are
 * channel planes, [C][G²], so a part's cells of one channel are contiguous.
 *
 * Lanes mode (R = 1 and few lanes per sample, e.g. gol's 9 cells, which
 * would fill 9 of a row's 16 lanes and cost a horizontal tree per gate and
 * sample): a unit is a group of m <= 16 samples, and a row is [virtual lane
 * vl][m floats] packed, vl the lane index above ((c, i) = c·N + i, or i) and
 * the m floats samples s0 .. s0+m−1 (W = m floats per virtual lane; a row's
 * tail past nvl·m, up to whole vectors, holds zeros in the input rows and
 * whatever the kernels computed from them elsewhere: lane-wise operations
 * carry it along, but no statistic, state or loss is ever taken from it).
 * gol's groups of 10 samples of 9 cells fill 6 vectors a row where 16
 * floats a virtual lane took 9. logic_forward runs
 * unchanged on n = nvl·m lanes, every float doing its sample's scalar
 * operations; logic_backward_lanes gives each sample's statistics exactly
 * as logic_backward would alone, written to its own leaf. Gathers and
 * scatters (patches, states, dY, down, dpatch, loss) run per sample in the
 * same order as the per-part path, which is the same code with W = 1 and
 * m = 1 (where the gathers and scatters keep their plain loops and
 * copies).
 *
 * Backward through neighbours. The gradient with respect to a neighbour's
 * state belongs to another part, so the backward of step t stores, per cell n
 * and patch position p, the gradient w.r.t. the state of the cell at position
 * p of n's patch (dpatch[p][c][n]), and the gradient through the cell's own
 * input rows (down[c][n]). In the phase of step t−1 each part gathers its
 * cells' gradient d_state_t[c][n] = down[c][n] + Σ_{p=0..8} dpatch[p][c][m_p]
 * (m_p = the cell whose position p covers n, i.e. n's neighbour at position
 * 8−p; borders: wrap or nothing) + (async, n did not fire at step t)
 * d_state_{t+1}[c][n], in that order. dpatch is double-buffered by the parity
 * of t because step t−1's phase writes it while reading step t's.
 */
#include "engine/models/logic_ca/logic_ca.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/num/rng.h"

#define CA_ALIGN 64

/* Patch positions read as input a by kernel layer 1 (the centre, 4, is b). */
static const uint32_t CA_NB[8] = { 0, 1, 2, 3, 5, 6, 7, 8 };

enum { PH_FWD = 0, PH_LAST = 1, PH_BWD = 2 };

/* The model's settings, read once from the config's keys. */
typedef struct {
    char task[16];
    uint64_t seed;
    size_t batch;
    size_t channels, kernels, ca_steps, grid, parts;
    size_t perception[LOGIC_CA_MAX_PERCEPTION], n_perception;
    size_t layers[LOGIC_MAX_LAYERS], n_layers;
    int periodic, async;
    float fire_rate, residual;
} ca_config;

/* Lists longer than the model's arrays are refused by check_config first;
 * here they are only cut to size. */
static void ca_config_read(ca_config *c, const ls_config *cfg)
{
    memset(c, 0, sizeof *c);
    snprintf(c->task, sizeof c->task, "%s", cfg->task);
    c->seed = cfg->seed;
    c->batch = cfg->batch;
    c->channels = (size_t)ls_config_int(cfg, "channels");
    c->kernels = (size_t)ls_config_int(cfg, "kernels");
    c->ca_steps = (size_t)ls_config_int(cfg, "ca_steps");
    c->grid = (size_t)ls_config_int(cfg, "grid");
    c->parts = (size_t)ls_config_int(cfg, "parts");
    c->periodic = (int)ls_config_int(cfg, "periodic");
    c->async = (int)ls_config_int(cfg, "async");
    c->fire_rate = ls_config_float(cfg, "fire_rate");
    c->residual = ls_config_float(cfg, "residual");
    const size_t *v;
    size_t n = ls_config_list(cfg, "perception", &v);
    c->n_perception = n < LOGIC_CA_MAX_PERCEPTION ? n : LOGIC_CA_MAX_PERCEPTION;
    memcpy(c->perception, v, c->n_perception * sizeof *v);
    n = ls_config_list(cfg, "layers", &v);
    c->n_layers = n < LOGIC_MAX_LAYERS ? n : LOGIC_MAX_LAYERS;
    memcpy(c->layers, v, c->n_layers * sizeof *v);
}

typedef struct {
    ca_config cfg;
    size_t C, K, S, G, N, R, T, B, np, nu;
    size_t uin;               /* update input rows: C + C·S·K */
    int periodic, async, gol;
    float fire_rate;
    logic_ca_hard net;        /* shape and wiring (ops NULL) */
    /* scratch plan (per part, sized for the largest part) */
    size_t prow[LOGIC_CA_MAX_PERCEPTION];   /* first row of kernel layer l's output */
    size_t urow[LOGIC_MAX_LAYERS];       /* first row of update layer j's output */
    size_t prows, urows;      /* rows of each block */
    size_t max_nc;            /* most cells of a unit */
    int lanes;                /* lanes mode: a unit is a group of samples (header comment) */
    size_t units;             /* units of a phase: B·R, or the groups in lanes mode */
    size_t max_m;             /* most samples of a unit: 1, or the largest group */
    int skip_silent;          /* silent units skip their backward (logic_ca_set_silent) */
    int shared_in;            /* the update's input rows are the perception's output in place (choose_layout) */
    logic_layer in_layer;     /* update layer 0 wired to that layout's row numbers */
    size_t off_pa, off_ua, off_d0, off_d1, off_mask;   /* byte offsets in the scratch */

    uint32_t *wires;          /* [2][gates]: net.a, net.b; [2][update layer 0's gates]: in_layer's a, b;
                                 then [gates] bytes: each layer's first flags */
    size_t *row_lo;           /* [R + 1] first grid row of each part */
    int32_t *nbr;             /* [9][N]: the cell at patch position p of cell n, or −1 */
    uint8_t *gol_want;        /* gol: [512][9] the board after T life steps, by the board's bits */
    float *p, *coef;          /* [gates][16], [gates][4]: set by ca_prepare_part */
    /* per batch */
    float *state;             /* [T + 1][B][C][N] state_t of every sample */
    float *target;            /* [B][N] channel-0 target */
    float *dpatch;            /* [2][B][9][C][N] see the header comment */
    float *down;              /* [B][C][N] */
    float *dstate;            /* [B][C][N] d loss / d state_{t+1}, own cells */
    float *leaf_store;        /* [B·R][leaf_stride] each leaf's gate statistics */
    double *leaf_loss;        /* [B·R] each leaf's loss */
    size_t leaf_stride;       /* gates·4 rounded up to 16 floats */
    void *tables, *coefmem, *batchmem;
} logic_ca;

static size_t round16(size_t n) { return (n + 15) / 16 * 16; }
static size_t round_bytes(size_t n) { return (n + CA_ALIGN - 1) / CA_ALIGN * CA_ALIGN; }

static void *alloc_aligned(size_t bytes)
{
    return aligned_alloc(CA_ALIGN, round_bytes(bytes ? bytes : 1));
}

/* ---- Tasks ---- */

void logic_ca_life_step(uint8_t *next, const uint8_t *cur, size_t width, size_t height, int periodic)
{
    for (size_t y = 0; y < height; y++)
        for (size_t x = 0; x < width; x++) {
            int n = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    if (dy == 0 && dx == 0)
                        continue;
                    long ny = (long)y + dy, nx = (long)x + dx;
                    if (periodic) {
                        ny = (ny + (long)height) % (long)height;
                        nx = (nx + (long)width) % (long)width;
                    } else if (ny < 0 || nx < 0 || ny >= (long)height || nx >= (long)width) {
                        continue;
                    }
                    n += cur[(size_t)ny * width + (size_t)nx] != 0;
                }
            const int alive = cur[y * width + x] != 0;
            next[y * width + x] = (uint8_t)(n == 3 || (alive && n == 2));
        }
}

int logic_ca_checkerboard_target(size_t x, size_t y)
{
    return (int)((x / 2 + y / 2) % 2);
}

void logic_ca_start_state(float *state, size_t channels, size_t cells, uint64_t seed, int64_t step, size_t sample)
{
    for (size_t c = 0; c < channels; c++)
        for (size_t n = 0; n < cells; n++)
            state[c * cells + n] =
                rng_uniformf(seed, RNG_CA_START, (uint64_t)step, sample, n * channels + c) < 0.5f ? 1.0f : 0.0f;
}

/* The board after `steps` life steps on a 3×3 grid. */
static void gol_target(uint8_t out[9], const uint8_t board[9], size_t steps, int periodic)
{
    uint8_t a[9], b[9];
    for (int j = 0; j < 9; j++)
        a[j] = board[j] != 0;
    for (size_t u = 0; u < steps; u++) {
        logic_ca_life_step(b, a, 3, 3, periodic);
        memcpy(a, b, sizeof a);
    }
    memcpy(out, a, 9);
}

ls_status logic_ca_make_data(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    *out = NULL;
    if (strcmp(cfg->task, "checkerboard") == 0)
        return LS_OK;
    if (strcmp(cfg->task, "gol") != 0)
        return ls_fail(err, LS_EINVAL, "logic-ca: task '%s' has no data set (gol or checkerboard)", cfg->task);
    const size_t n = LOGIC_CA_GOL_BOARDS, dim = 9;
    ls_dataset *d = calloc(1, sizeof *d);
    uint8_t *mem = d != NULL ? malloc(n * dim + n) : NULL;
    if (mem == NULL) {
        free(d);
        return ls_fail(err, LS_ENOMEM, "gol data set: out of memory");
    }
    uint8_t *x = mem, *y = mem + n * dim;
    for (size_t b = 0; b < n; b++)
        for (size_t j = 0; j < dim; j++)
            x[b * dim + j] = (uint8_t)((b >> j) & 1);
    memset(y, 0, n);
    snprintf(d->name, sizeof d->name, "%s", "gol");
    d->n_classes = 0;
    d->hash = XXH3_64bits(x, n * dim);
    d->train = (ls_split){ .n = n, .dim = dim, .x8 = x, .xf = NULL, .y = y };
    d->test = d->train;
    d->mem = mem;
    *out = d;
    return LS_OK;
}

/* ---- Wiring ---- */

/* Fill net's shape (widths, offsets, layers pointing into a/b) from cfg and
 * wire it; a and b must hold net->gates entries. */
static ls_status wire_net(logic_ca_hard *net, const ca_config *cfg, ls_err *err)
{
    const size_t C = cfg->channels, K = cfg->kernels, np = cfg->n_perception, nu = cfg->n_layers;
    const size_t S = cfg->perception[np - 1];
    const uint64_t seed = cfg->seed;
    uint32_t perm[8];
    rng_permutation(perm, 8, seed, RNG_WIRING, LOGIC_CA_PERM_ADDR);
    for (size_t l = 0; l < np + nu; l++) {
        logic_layer *L = &net->layer[l];
        const size_t off = net->gate_off[l];
        uint32_t *a = net->a + off, *b = net->b + off;
        L->a = a;
        L->b = b;
        if (l == 0) {
            L->in = 9;
            L->out = K * 8;
            for (size_t k = 0; k < K; k++)
                for (size_t g = 0; g < 8; g++) {
                    a[k * 8 + g] = CA_NB[perm[g]];
                    b[k * 8 + g] = 4;
                }
        } else if (l < np) {
            const size_t win = cfg->perception[l - 1], w = cfg->perception[l];
            L->in = K * win;
            L->out = K * w;
            ls_err e = { { 0 } };
            ls_status st = logic_wire_unique(a, b, win, w, seed, l, &e);
            if (st != LS_OK)
                return ls_fail(err, st, "perception: kernel layer %zu (%zu -> %zu): %s", l + 1, win, w, e.msg);
            /* Kernel k reads its own block of the previous layer; kernel 0's
             * copy (offset 0) is already in place, so fill the others from it. */
            for (size_t k = K; k-- > 1;)
                for (size_t g = 0; g < w; g++) {
                    a[k * w + g] = a[g] + (uint32_t)(k * win);
                    b[k * w + g] = b[g] + (uint32_t)(k * win);
                }
        } else {
            const size_t j = l - np;
            const size_t in = j == 0 ? C + C * S * K : cfg->layers[j - 1];
            L->in = in;
            L->out = cfg->layers[j];
            ls_err e = { { 0 } };
            ls_status st = logic_wire_unique(a, b, in, cfg->layers[j], seed, LOGIC_CA_MAX_PERCEPTION + j, &e);
            if (st != LS_OK)
                return ls_fail(err, st, "layers: update layer %zu (%zu -> %zu): %s", j + 1, in, cfg->layers[j],
                               e.msg);
        }
    }
    return LS_OK;
}

/* Shape of the circuit: widths and gate offsets. */
static void net_shape(logic_ca_hard *net, const ca_config *cfg)
{
    memset(net, 0, sizeof *net);
    net->channels = cfg->channels;
    net->kernels = cfg->kernels;
    net->n_perception = cfg->n_perception;
    net->n_update = cfg->n_layers;
    net->n_layers = cfg->n_perception + cfg->n_layers;
    size_t g = 0;
    for (size_t l = 0; l < net->n_layers; l++) {
        net->gate_off[l] = g;
        if (l < net->n_perception) {
            net->width[l] = cfg->perception[l];
            g += cfg->kernels * cfg->perception[l];
        } else {
            net->width[l] = cfg->layers[l - net->n_perception];
            g += net->width[l];
        }
    }
    net->gate_off[net->n_layers] = g;
    net->gates = g;
}

/* ---- The hard circuit ---- */

/* The circuit's structure is consistent (for hand-built circuits). */
static ls_status hard_check(const logic_ca_hard *h, ls_err *err)
{
    if (h->channels == 0 || h->kernels == 0 || h->n_perception == 0 || h->n_update == 0 ||
        h->n_layers != h->n_perception + h->n_update || h->n_layers > LOGIC_CA_MAX_LAYERS)
        return ls_fail(err, LS_EINVAL, "logic-ca circuit: bad shape (%zu channels, %zu kernels, %zu+%zu layers)",
                       h->channels, h->kernels, h->n_perception, h->n_update);
    const size_t C = h->channels, K = h->kernels, S = h->width[h->n_perception - 1];
    for (size_t l = 0; l < h->n_layers; l++) {
        const logic_layer *L = &h->layer[l];
        size_t in, out;
        if (l < h->n_perception) {
            in = l == 0 ? 9 : K * h->width[l - 1];
            out = K * h->width[l];
        } else {
            in = l == h->n_perception ? C + C * S * K : h->width[l - 1];
            out = h->width[l];
        }
        if (L->in != in || L->out != out || h->gate_off[l + 1] - h->gate_off[l] != out)
            return ls_fail(err, LS_EINVAL, "logic-ca circuit: layer %zu is %zu -> %zu, expected %zu -> %zu", l,
                           L->in, L->out, in, out);
        for (size_t g = 0; g < out; g++)
            if (L->a[g] >= in || L->b[g] >= in || h->ops[h->gate_off[l] + g] > 15)
                return ls_fail(err, LS_EINVAL, "logic-ca circuit: gate %zu of layer %zu reads outside its input", g,
                               l);
    }
    if (h->width[h->n_layers - 1] != C)
        return ls_fail(err, LS_EINVAL, "logic-ca circuit: the last layer has %zu gates for %zu channels",
                       h->width[h->n_layers - 1], C);
    return LS_OK;
}

static void hard_rows(const logic_ca_hard *h, size_t *prows, size_t *urows)
{
    size_t p = 9, u = h->layer[h->n_perception].in;
    for (size_t l = 0; l < h->n_layers; l++) {
        if (l < h->n_perception)
            p += h->layer[l].out;
        else
            u += h->layer[l].out;
    }
    *prows = p;
    *urows = u;
}

static size_t hard_work_words(const logic_ca_hard *h, size_t lanes)
{
    size_t prows, urows;
    hard_rows(h, &prows, &urows);
    return (prows + urows) * ((lanes + 63) / 64);
}

static uint8_t bit_of(const uint64_t *row, size_t lane)
{
    return (uint8_t)((row[lane >> 6] >> (lane & 63)) & 1);
}

/* One hard step of `count` grids side by side: in, out [count][C][H][W],
 * mask [count][H][W] or NULL; lanes = (grid, cell). */
static void hard_run(const logic_ca_hard *h, uint8_t *out, const uint8_t *in, size_t count, size_t W, size_t H,
                     int periodic, const uint8_t *mask, uint64_t *work)
{
    const size_t C = h->channels, K = h->kernels, np = h->n_perception, S = h->width[np - 1];
    const size_t cells = W * H, lanes = count * cells, words = (lanes + 63) / 64;
    size_t prows, urows;
    hard_rows(h, &prows, &urows);
    uint64_t *P = work, *U = work + prows * words;
    size_t plast = 0;
    for (size_t c = 0; c < C; c++) {
        memset(P, 0, 9 * words * sizeof *P);
        for (size_t g = 0; g < count; g++) {
            const uint8_t *src = in + (g * C + c) * cells;
            for (size_t y = 0; y < H; y++)
                for (size_t x = 0; x < W; x++) {
                    const size_t lane = g * cells + y * W + x;
                    for (size_t p = 0; p < 9; p++) {
                        long ny = (long)y + (long)(p / 3) - 1, nx = (long)x + (long)(p % 3) - 1;
                        if (periodic) {
                            ny = (ny + (long)H) % (long)H;
                            nx = (nx + (long)W) % (long)W;
                        } else if (ny < 0 || nx < 0 || ny >= (long)H || nx >= (long)W) {
                            continue;
                        }
                        if (src[(size_t)ny * W + (size_t)nx])
                            P[p * words + (lane >> 6)] |= UINT64_C(1) << (lane & 63);
                    }
                }
        }
        size_t rin = 0, rout = 9;
        for (size_t l = 0; l < np; l++) {
            logic_hard_forward(P + rout * words, P + rin * words, &h->layer[l], h->ops + h->gate_off[l], words);
            rin = rout;
            rout += h->layer[l].out;
        }
        plast = rin;
        for (size_t s = 0; s < S; s++)
            for (size_t k = 0; k < K; k++)
                memcpy(U + (C + c * S * K + s * K + k) * words, P + (plast + k * S + s) * words,
                       words * sizeof *U);
    }
    memset(U, 0, C * words * sizeof *U);
    for (size_t g = 0; g < count; g++)
        for (size_t c = 0; c < C; c++)
            for (size_t n = 0; n < cells; n++)
                if (in[(g * C + c) * cells + n]) {
                    const size_t lane = g * cells + n;
                    U[c * words + (lane >> 6)] |= UINT64_C(1) << (lane & 63);
                }
    size_t rin = 0, rout = h->layer[np].in;
    for (size_t l = np; l < h->n_layers; l++) {
        logic_hard_forward(U + rout * words, U + rin * words, &h->layer[l], h->ops + h->gate_off[l], words);
        rin = rout;
        rout += h->layer[l].out;
    }
    const uint64_t *Y = U + rin * words;
    for (size_t g = 0; g < count; g++)
        for (size_t c = 0; c < C; c++)
            for (size_t n = 0; n < cells; n++) {
                const size_t lane = g * cells + n, i = (g * C + c) * cells + n;
                const int fire = mask == NULL || mask[g * cells + n] != 0;
                out[i] = fire ? bit_of(Y + c * words, lane) : (uint8_t)(in[i] != 0);
            }
}

static ls_status hard_create(logic_ca_hard **out, const logic_ca *ca, const float *params, ls_err *err)
{
    *out = NULL;
    logic_ca_hard *h = calloc(1, sizeof *h);
    uint8_t *mem = h != NULL ? malloc(ca->net.gates * (2 * sizeof(uint32_t) + 1)) : NULL;
    if (mem == NULL) {
        free(h);
        return ls_fail(err, LS_ENOMEM, "logic-ca circuit: out of memory");
    }
    *h = ca->net;
    h->a = (uint32_t *)(void *)mem;
    h->b = h->a + h->gates;
    h->ops = (uint8_t *)(h->b + h->gates);
    memcpy(h->a, ca->net.a, h->gates * sizeof(uint32_t));
    memcpy(h->b, ca->net.b, h->gates * sizeof(uint32_t));
    for (size_t l = 0; l < h->n_layers; l++) {
        h->layer[l].a = h->a + h->gate_off[l];
        h->layer[l].b = h->b + h->gate_off[l];
        h->layer[l].first = NULL;   /* the model's; a circuit may be rewired */
        h->layer[l].reads_all = 0;
    }
    logic_hard_ops(h->ops, params, h->gates);
    *out = h;
    return LS_OK;
}

ls_status logic_ca_hard_create(logic_ca_hard **out, const ls_model *m, const float *params, ls_err *err)
{
    *out = NULL;
    if (m == NULL || m->desc != &logic_ca_model)
        return ls_fail(err, LS_EINVAL, "logic_ca_hard_create: the model is not logic-ca");
    return hard_create(out, m->self, params, err);
}

void logic_ca_hard_destroy(logic_ca_hard *h)
{
    if (h == NULL)
        return;
    free(h->a);   /* a, b and ops are one allocation */
    free(h);
}

ls_status logic_ca_hard_rollout(const logic_ca_hard *h, uint8_t *frames, size_t width, size_t height,
                                size_t steps, int periodic, const uint8_t *masks, ls_err *err)
{
    ls_status st = hard_check(h, err);
    if (st != LS_OK)
        return st;
    if (width == 0 || height == 0)
        return ls_fail(err, LS_EINVAL, "logic-ca circuit: empty grid %zux%zu", width, height);
    uint64_t *work = alloc_aligned(hard_work_words(h, width * height) * sizeof(uint64_t));
    if (work == NULL)
        return ls_fail(err, LS_ENOMEM, "logic-ca circuit: out of memory for a %zux%zu grid", width, height);
    const size_t frame = h->channels * width * height;
    for (size_t u = 0; u < steps; u++)
        hard_run(h, frames + (u + 1) * frame, frames + u * frame, 1, width, height, periodic,
                 masks != NULL ? masks + u * width * height : NULL, work);
    free(work);
    return LS_OK;
}

ls_status logic_ca_hard_step(const logic_ca_hard *h, uint8_t *out, const uint8_t *in, size_t width,
                             size_t height, int periodic, const uint8_t *mask, ls_err *err)
{
    ls_status st = hard_check(h, err);
    if (st != LS_OK)
        return st;
    if (width == 0 || height == 0)
        return ls_fail(err, LS_EINVAL, "logic-ca circuit: empty grid %zux%zu", width, height);
    uint64_t *work = alloc_aligned(hard_work_words(h, width * height) * sizeof(uint64_t));
    if (work == NULL)
        return ls_fail(err, LS_ENOMEM, "logic-ca circuit: out of memory for a %zux%zu grid", width, height);
    hard_run(h, out, in, 1, width, height, periodic, mask, work);
    free(work);
    return LS_OK;
}

/* Evaluation masks of `count` grids (first index grid0) at CA step u. */
static void eval_masks(uint8_t *mask, size_t grid0, size_t count, size_t cells, size_t u, float fire_rate)
{
    for (size_t g = 0; g < count; g++)
        for (size_t n = 0; n < cells; n++)
            mask[g * cells + n] =
                rng_uniformf(LOGIC_CA_EVAL_SEED, RNG_EVAL, grid0 + g, 1 + u, n) < fire_rate;
}

/* Roll `count` grids for `steps` hard steps from a (result in a; b is a
 * second buffer of the same size). */
static void eval_rollout(const logic_ca_hard *h, const ca_config *cfg, uint8_t **a, uint8_t **b, uint8_t *mask,
                         size_t grid0, size_t count, size_t side, size_t steps, uint64_t *work)
{
    for (size_t u = 0; u < steps; u++) {
        if (cfg->async)
            eval_masks(mask, grid0, count, side * side, u, cfg->fire_rate);
        hard_run(h, *b, *a, count, side, side, cfg->periodic, cfg->async ? mask : NULL, work);
        uint8_t *t = *a;
        *a = *b;
        *b = t;
    }
}

static void eval_start(uint8_t *state, size_t grid0, size_t count, size_t C, size_t cells)
{
    for (size_t g = 0; g < count; g++)
        for (size_t c = 0; c < C; c++)
            for (size_t n = 0; n < cells; n++)
                state[(g * C + c) * cells + n] =
                    rng_uniformf(LOGIC_CA_EVAL_SEED, RNG_EVAL, grid0 + g, 0, n * C + c) < 0.5f;
}

static ls_status hard_metrics(const logic_ca_hard *h, const ca_config *cfg, ls_metric *out, size_t *n_out,
                             ls_err *err)
{
    *n_out = 0;
    ls_status st = hard_check(h, err);
    if (st != LS_OK)
        return st;
    const size_t C = h->channels;
    const int gol = strcmp(cfg->task, "gol") == 0;
    if (!gol && strcmp(cfg->task, "checkerboard") != 0)
        return ls_fail(err, LS_EINVAL, "logic-ca: unknown task '%s'", cfg->task);
    if (C != cfg->channels || (gol && cfg->grid != 3))
        return ls_fail(err, LS_EINVAL, "logic-ca: the circuit does not fit the config");
    size_t count, side;
    if (gol) {
        count = LOGIC_CA_GOL_BOARDS;
        side = 3;
    } else {
        count = LOGIC_CA_EVAL_GRIDS;
        side = cfg->grid;
    }
    size_t lanes = count * side * side, big = LOGIC_CA_BIG_GRID * LOGIC_CA_BIG_GRID;
    if (!gol && big > lanes)
        lanes = big;
    const size_t state_bytes = round_bytes(lanes * C);
    uint8_t *mem = alloc_aligned(2 * state_bytes + round_bytes(lanes) +
                                 hard_work_words(h, lanes) * sizeof(uint64_t));
    if (mem == NULL)
        return ls_fail(err, LS_ENOMEM, "logic-ca metrics: out of memory");
    uint8_t *a = mem, *b = mem + state_bytes, *mask = b + state_bytes;
    uint64_t *work = (uint64_t *)(void *)(mask + round_bytes(lanes));
    const size_t cells = side * side;
    if (gol) {
        memset(a, 0, count * C * cells);
        for (size_t g = 0; g < count; g++)
            for (size_t j = 0; j < 9; j++)
                a[g * C * cells + j] = (uint8_t)((g >> j) & 1);
        eval_rollout(h, cfg, &a, &b, mask, 0, count, side, cfg->ca_steps, work);
        size_t right = 0;
        for (size_t g = 0; g < count; g++) {
            uint8_t board[9], want[9];
            for (size_t j = 0; j < 9; j++)
                board[j] = (uint8_t)((g >> j) & 1);
            gol_target(want, board, cfg->ca_steps, cfg->periodic);
            right += memcmp(want, a + g * C * cells, 9) == 0;
        }
        snprintf(out[0].name, sizeof out[0].name, "%s", "hard_acc");
        out[0].value = (double)right / (double)count;
        *n_out = 1;
    } else {
        eval_start(a, 0, count, C, cells);
        eval_rollout(h, cfg, &a, &b, mask, 0, count, side, cfg->ca_steps, work);
        size_t right = 0;
        for (size_t g = 0; g < count; g++)
            for (size_t n = 0; n < cells; n++)
                right += a[g * C * cells + n] == logic_ca_checkerboard_target(n % side, n / side);
        snprintf(out[0].name, sizeof out[0].name, "%s", "hard_acc");
        out[0].value = (double)right / (double)(count * cells);

        const size_t bs = LOGIC_CA_BIG_GRID;
        eval_start(a, LOGIC_CA_EVAL_GRIDS, 1, C, big);
        eval_rollout(h, cfg, &a, &b, mask, LOGIC_CA_EVAL_GRIDS, 1, bs, LOGIC_CA_BIG_STEPS, work);
        right = 0;
        for (size_t n = 0; n < big; n++)
            right += a[n] == logic_ca_checkerboard_target(n % bs, n / bs);
        snprintf(out[1].name, sizeof out[1].name, "%s", "hard_acc_64");
        out[1].value = (double)right / (double)big;
        *n_out = 2;
    }
    free(mem);
    return LS_OK;
}

ls_status logic_ca_hard_metrics(const logic_ca_hard *h, const ls_config *cfg, ls_metric *out, size_t *n_out,
                                ls_err *err)
{
    ca_config c;
    ca_config_read(&c, cfg);
    return hard_metrics(h, &c, out, n_out, err);
}

/* ---- Training: one unit of one phase ---- */

typedef struct {
    logic_ca *ca;
    const ls_batch *b;
    size_t t;
    int kind;
} phase_ctx;

/* A unit's view: its samples s .. s+m−1 (one per part; up to LOGIC_LANES
 * in lanes mode), their cells cell0 .. cell0+nc−1 and its scratch. Element
 * (virtual lane vl, sample j) of a row is vl·W + j, W = m in lanes mode. */
typedef struct {
    size_t s, m, W, r, cell0, nc, ldp, ldu;
    float *pa, *ua, *d0, *d1;
    uint8_t *mask;            /* [2][max_m][max_nc]: fire masks of CA steps t and t+1 */
} part_view;

static void fire_mask(const logic_ca *ca, const ls_batch *b, const part_view *v, size_t j, size_t u, uint8_t *m)
{
    if (!ca->async) {
        memset(m, 1, v->nc);
        return;
    }
    for (size_t i = 0; i < v->nc; i++)
        m[i] = rng_uniformf(b->seed, RNG_CA_MASK, (uint64_t)b->step, v->s + j, u * ca->N + v->cell0 + i) <
               ca->fire_rate;
}

/* State plane of sample s at CA step t, [C][N]. */
static float *state_at(const logic_ca *ca, size_t t, size_t s)
{
    return ca->state + (t * ca->B + s) * ca->C * ca->N;
}

/* The dpatch planes [9][C][N] of sample s that the backward of CA step t
 * writes (buffer t & 1: the phase of t − 1 reads them while writing its own). */
static float *dpatch_at(const logic_ca *ca, size_t t, size_t s)
{
    return ca->dpatch + ((t & 1) * ca->B + s) * 9 * ca->C * ca->N;
}

/* The grid row of offset dy from row y: 1 when it exists (wrapped with
 * periodic borders), else 0 (outside a grid with borders). */
static int shifted_row(const logic_ca *ca, size_t y, long dy, size_t *out)
{
    long yy = (long)y + dy;
    if (yy < 0 || yy >= (long)ca->G) {
        if (!ca->periodic)
            return 0;
        yy = (yy + (long)ca->G) % (long)ca->G;
    }
    *out = (size_t)yy;
    return 1;
}

/* dst[(y − y0)·G + x] = the cell at patch position p of cell (x, y) in
 * `plane` for the rows y0 .. y1 − 1, 0 where a grid with borders has none:
 * the nbr table's gather as row copies (per-part path; the same values). */
static void gather_patch(const logic_ca *ca, float *dst, const float *plane, size_t p, size_t y0, size_t y1)
{
    const size_t G = ca->G;
    const long dy = (long)(p / 3) - 1, dx = (long)(p % 3) - 1;
    for (size_t y = y0; y < y1; y++, dst += G) {
        size_t yy;
        if (!shifted_row(ca, y, dy, &yy)) {
            memset(dst, 0, G * sizeof(float));
            continue;
        }
        const float *row = plane + yy * G;
        if (dx == 0) {
            memcpy(dst, row, G * sizeof(float));
        } else if (dx < 0) {
            memmove(dst + 1, row, (G - 1) * sizeof(float));
            dst[0] = ca->periodic ? row[G - 1] : 0.0f;
        } else {
            memmove(dst, row + 1, (G - 1) * sizeof(float));
            dst[G - 1] = ca->periodic ? row[0] : 0.0f;
        }
    }
}

/* acc[(y − y0)·G + x] += the term of (x, y)'s neighbour at offset (dx, dy)
 * in `plane`, for the rows y0 .. y1 − 1, where that neighbour exists (no
 * addition where a grid with borders has none, as the nbr table's −1):
 * one addition per cell, element-wise, so each cell's sum keeps its order
 * whatever the vector width. */
static void add_shifted(const logic_ca *ca, float *restrict acc, const float *restrict plane, long dx, long dy,
                        size_t y0, size_t y1)
{
    const size_t G = ca->G;
    for (size_t y = y0; y < y1; y++, acc += G) {
        size_t yy;
        if (!shifted_row(ca, y, dy, &yy))
            continue;
        const float *row = plane + yy * G;
        if (dx == 0) {
            #pragma omp simd
            for (size_t x = 0; x < G; x++)
                acc[x] = acc[x] + row[x];
        } else if (dx < 0) {
            if (ca->periodic)
                acc[0] = acc[0] + row[G - 1];
            #pragma omp simd
            for (size_t x = 1; x < G; x++)
                acc[x] = acc[x] + row[x - 1];
        } else {
            #pragma omp simd
            for (size_t x = 0; x < G - 1; x++)
                acc[x] = acc[x] + row[x + 1];
            if (ca->periodic)
                acc[G - 1] = acc[G - 1] + row[0];
        }
    }
}

/* n consecutive elements of each of the unit's m samples (sample j's at
 * src + j·stride) into a lanes row: dst[i·W + j]. The per-part path
 * (W = 1, m = 1) is a plain copy. */
static void into_lanes(float *dst, const float *src, size_t stride, size_t n, const part_view *v)
{
    if (v->W == 1) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < v->m; j++)
            dst[i * v->W + j] = src[j * stride + i];
}

/* Sample j's n elements of a lanes row: dst[i] = src[i·W + j]. */
static void out_of_lanes(float *dst, const float *src, size_t n, size_t j, const part_view *v)
{
    if (v->W == 1) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i * v->W + j];
}

/* Gate layer l as the training kernels run it: update layer 0 renumbered
 * when the update's input rows are the perception's output (choose_layout). */
static const logic_layer *soft_layer(const logic_ca *ca, size_t l)
{
    return ca->shared_in && l == ca->np ? &ca->in_layer : &ca->net.layer[l];
}

/* Zeros in the tails of rows [r0, r1) of ld floats, past their n lanes:
 * the forward runs whole vectors, and a tail of stale scratch could hold
 * subnormals (slow) though nothing is ever read back from it. */
static void clear_tails(float *rows, size_t r0, size_t r1, size_t n, size_t ld)
{
    if (n < ld)
        for (size_t r = r0; r < r1; r++)
            memset(rows + r * ld + n, 0, (ld - n) * sizeof(float));
}

/* Activations of CA step t of the unit's cells from state_t; returns the
 * update network's output rows (C rows of ldu). The tails of the input
 * rows are zeros (clear_tails): they run through the gates like the
 * other lanes and are never read back. */
static const float *part_forward(const logic_ca *ca, const part_view *v, size_t t)
{
    const size_t C = ca->C, K = ca->K, S = ca->S, N = ca->N, nc = v->nc, W = v->W, ldp = v->ldp, ldu = v->ldu;
    const float *st = state_at(ca, t, v->s);   /* sample s + j at st + j·C·N */
    float *pa = v->pa, *ua = v->ua;
    /* The per-part path (W = 1) copies rows. */
    const size_t y0 = ca->row_lo[v->r], y1 = ca->row_lo[v->r + 1];
    for (size_t p = 0; p < 9; p++) {
        const int32_t *nb = ca->nbr + p * N + v->cell0;
        for (size_t c = 0; c < C; c++) {
            float *dst = pa + p * ldp + c * nc * W;
            const float *src = st + c * N;
            if (W == 1)
                gather_patch(ca, dst, src, p, y0, y1);
            else
                for (size_t i = 0; i < nc; i++)
                    for (size_t j = 0; j < W; j++)
                        dst[i * W + j] = nb[i] >= 0 ? src[j * C * N + (size_t)nb[i]] : 0.0f;
        }
    }
    clear_tails(pa, 0, 9, C * nc * W, ldp);
    for (size_t l = 0; l < ca->np; l++) {
        const size_t off = ca->net.gate_off[l];
        /* the last kernel layer straight into the update's input rows when they share a layout */
        float *y = ca->shared_in && l + 1 == ca->np ? ua + C * ldu : pa + ca->prow[l] * ldp;
        logic_forward(y, pa + (l == 0 ? 0 : ca->prow[l - 1]) * ldp, &ca->net.layer[l], ca->coef + 4 * off,
                      C * nc * W, ldp);
    }
    for (size_t c = 0; c < C; c++)
        into_lanes(ua + c * ldu, st + c * N + v->cell0, C * N, nc, v);
    if (!ca->shared_in) {
        const float *plast = pa + ca->prow[ca->np - 1] * ldp;
        for (size_t c = 0; c < C; c++)
            for (size_t s = 0; s < S; s++)
                for (size_t k = 0; k < K; k++)
                    memcpy(ua + (C + c * S * K + s * K + k) * ldu, plast + (k * S + s) * ldp + c * nc * W,
                           nc * W * sizeof(float));
        clear_tails(ua, C, ca->uin, nc * W, ldu);
    }
    clear_tails(ua, 0, C, nc * W, ldu);
    for (size_t j = 0; j < ca->nu; j++) {
        const size_t l = ca->np + j, off = ca->net.gate_off[l];
        logic_forward(ua + ca->urow[j] * ldu, ua + (j == 0 ? 0 : ca->urow[j - 1]) * ldu, soft_layer(ca, l),
                      ca->coef + 4 * off, nc * W, ldu);
    }
    return ua + ca->urow[ca->nu - 1] * ldu;
}

/* Backward of gate layer l on the unit: nvl virtual lanes of its m
 * samples, sample j's statistics at stats + j·stride (stats of the whole
 * network); dx (when not NULL) set on each row's first update
 * (LOGIC_DX_SET), never cleared. */
static void layer_backward(const logic_ca *ca, const part_view *v, size_t l, float *dx, float *stats, size_t stride,
                           const float *dy, const float *x, size_t nvl, size_t ld, int acc)
{
    const logic_layer *L = soft_layer(ca, l);
    const size_t off = ca->net.gate_off[l];
    const int flags = (acc ? LOGIC_STATS_ADD : 0) | LOGIC_DX_SET;
    if (v->W == 1)
        logic_backward(dx, stats + 4 * off, dy, x, L, ca->coef + 4 * off, nvl, ld, flags);
    else   /* rows of LOGIC_LANES_LD(nvl, m) floats (ld): ldp and ldu are round16(nvl·m) */
        logic_backward_lanes(dx, stats + 4 * off, stride, dy, x, L, ca->coef + 4 * off, nvl, v->m, flags);
}

/* Backward of CA step t from dY (C rows of ldu in v->d0), activations from
 * part_forward. Sample j's statistics into stats + j·stride (written when
 * acc == 0, else added); with write_d the gradients w.r.t. the step's input
 * states go to down and dpatch (buffer t & 1). */
static void part_backward(logic_ca *ca, const part_view *v, size_t t, float *stats, size_t stride, int acc,
                          int write_d)
{
    const size_t C = ca->C, K = ca->K, S = ca->S, N = ca->N, nc = v->nc, W = v->W, ldp = v->ldp, ldu = v->ldu;
    float *cur = v->d0, *oth = v->d1, *tmp;
    for (size_t j = ca->nu; j-- > 0;) {
        layer_backward(ca, v, ca->np + j, oth, stats, stride, cur, v->ua + (j == 0 ? 0 : ca->urow[j - 1]) * ldu,
                       nc, ldu, acc);
        tmp = cur, cur = oth, oth = tmp;
    }
    if (write_d)
        for (size_t j = 0; j < v->m; j++) {
            float *down = ca->down + (v->s + j) * C * N + v->cell0;
            for (size_t c = 0; c < C; c++)
                out_of_lanes(down + c * N, cur + c * ldu, nc, j, v);
        }
    /* The kernels' last layer's dy: the update's input rows past the state
     * rows, in place or copied to the kernels' layout. */
    const float *dy = cur + C * ldu;
    if (!ca->shared_in) {
        for (size_t c = 0; c < C; c++)
            for (size_t s = 0; s < S; s++)
                for (size_t k = 0; k < K; k++)
                    memcpy(oth + (k * S + s) * ldp + c * nc * W, cur + (C + c * S * K + s * K + k) * ldu,
                           nc * W * sizeof(float));
        clear_tails(oth, 0, K * S, C * nc * W, ldp);
        tmp = cur, cur = oth, oth = tmp;
        dy = cur;
    }
    for (size_t l = ca->np; l-- > 0;) {
        float *dx = l > 0 || write_d ? oth : NULL;
        layer_backward(ca, v, l, dx, stats, stride, dy, v->pa + (l == 0 ? 0 : ca->prow[l - 1]) * ldp, C * nc,
                       ldp, acc);
        tmp = cur, cur = oth, oth = tmp;
        dy = cur;
    }
    if (write_d)
        for (size_t j = 0; j < v->m; j++) {
            float *dp = dpatch_at(ca, t, v->s + j) + v->cell0;
            for (size_t p = 0; p < 9; p++)
                for (size_t c = 0; c < C; c++)
                    out_of_lanes(dp + (p * C + c) * N, cur + p * ldp + c * nc * W, nc, j, v);
        }
}

/* Unit `unit`'s samples and cells: part unit % R of sample unit / R, or in
 * lanes mode group `unit`, samples [unit·B/groups, (unit+1)·B/groups).
 * Returns 0 when none of its samples is in a batch of `batch`. */
static int unit_view(const logic_ca *ca, size_t unit, size_t batch, void *scratch, part_view *v)
{
    if (ca->lanes) {
        v->s = unit * ca->B / ca->units;
        const size_t end = (unit + 1) * ca->B / ca->units;
        v->m = (end < batch ? end : batch) - v->s;
        v->W = v->m;   /* packed (header comment) */
        v->r = 0;
    } else {
        v->s = unit / ca->R;
        v->m = 1;
        v->W = 1;
        v->r = unit % ca->R;
    }
    if (v->s >= batch)
        return 0;
    v->cell0 = ca->row_lo[v->r] * ca->G;
    v->nc = (ca->row_lo[v->r + 1] - ca->row_lo[v->r]) * ca->G;
    v->ldp = round16(ca->C * v->nc * v->W);
    v->ldu = round16(v->nc * v->W);
    v->pa = (float *)(void *)((char *)scratch + ca->off_pa);
    v->ua = (float *)(void *)((char *)scratch + ca->off_ua);
    v->d0 = (float *)(void *)((char *)scratch + ca->off_d0);
    v->d1 = (float *)(void *)((char *)scratch + ca->off_d1);
    v->mask = (uint8_t *)scratch + ca->off_mask;
    return 1;
}

/* Silent units (logic_ca.h, logic_ca_set_silent). The unit's dY (v->d0,
 * built from d_state_{t+1}) is silent when every lane the backward reads
 * (cells i < nc of samples j < m) is below the kernels' floor in magnitude:
 * the gate backward reads each of them as +0 (NaN is not below it). */
static int unit_silent(const logic_ca *ca, const part_view *v)
{
    for (size_t c = 0; c < ca->C; c++) {
        const float *d = v->d0 + c * v->ldu;
        for (size_t i = 0; i < v->nc; i++)
            for (size_t j = 0; j < v->m; j++)
                if (!(fabsf(d[i * v->W + j]) < LOGIC_GRAD_FLOOR))
                    return 0;
    }
    return 1;
}

static atomic_size_t silent_units;

/* What part_backward gives a silent unit whose activations and
 * coefficients are finite and at most 2^60 in magnitude, without them:
 * every gate's d is +0, so every dx row it sets is +0 (a first update adds
 * ±0 to 0.0f, later ones add ±0 to +0) and each statistic gains +0, layer
 * after layer. So down and dpatch are +0, and the statistics keep their
 * bits: stats + 0.0f differs from stats only for −0, and these never are −0
 * (written by this unit's last phase as sums that start at +0.0f, then sums
 * with them; in round to nearest a sum is −0 only when both terms are). The
 * model defines a silent unit's backward to be this, whatever its
 * activations (logic_ca.h). */
static void silent_unit(logic_ca *ca, const part_view *v, size_t t)
{
    const size_t C = ca->C, N = ca->N;
    if (t > 0)
        for (size_t j = 0; j < v->m; j++) {
            float *down = ca->down + (v->s + j) * C * N + v->cell0;
            float *dp = dpatch_at(ca, t, v->s + j) + v->cell0;
            for (size_t c = 0; c < C; c++)
                memset(down + c * N, 0, v->nc * sizeof(float));
            for (size_t p = 0; p < 9 * C; p++)
                memset(dp + p * N, 0, v->nc * sizeof(float));
        }
}

static void phase_part(void *ctx, size_t unit, void *scratch)
{
    const phase_ctx *ph = ctx;
    logic_ca *ca = ph->ca;
    const ls_batch *b = ph->b;
    const size_t C = ca->C, N = ca->N, R = ca->R, t = ph->t;
    part_view v;
    if (!unit_view(ca, unit, b->batch, scratch, &v))
        return;
    const size_t nc = v.nc, W = v.W, ldu = v.ldu;
    uint8_t *mask = v.mask, *mask1 = v.mask + ca->max_m * ca->max_nc;   /* sample j's at + j·nc */

    if (ph->kind == PH_BWD) {
        /* d_state_{t+1} of the unit's cells (see the header comment). */
        for (size_t j = 0; j < v.m; j++) {
            const size_t s = v.s + j;
            uint8_t *m1 = mask1 + j * nc;
            fire_mask(ca, b, &v, j, t + 1, m1);
            const float *down = ca->down + s * C * N;
            const float *dp = dpatch_at(ca, t + 1, s);
            float *dstate = ca->dstate + s * C * N;
            /* Term p of cell n comes from n's neighbour at patch position
             * 8 − p, added position by position over the unit's rows into
             * d0 (free until dY is built below). */
            float *acc = v.d0;
            const size_t y0 = v.cell0 / ca->G, y1 = y0 + nc / ca->G;   /* lanes mode: the whole grid */
            for (size_t c = 0; c < C; c++) {
                memcpy(acc, down + c * N + v.cell0, nc * sizeof(float));
                for (size_t p = 0; p < 9; p++)
                    add_shifted(ca, acc, dp + (p * C + c) * N, (long)((8 - p) % 3) - 1, (long)((8 - p) / 3) - 1, y0,
                                y1);
                for (size_t i = 0; i < nc; i++) {
                    const size_t n = v.cell0 + i;
                    float d = acc[i];
                    if (!m1[i])
                        d = d + dstate[c * N + n];
                    dstate[c * N + n] = d;
                }
            }
        }
    }

    for (size_t j = 0; j < v.m; j++)
        fire_mask(ca, b, &v, j, t, mask + j * nc);
    if (ph->kind == PH_FWD || ph->kind == PH_LAST) {
        const float *y = part_forward(ca, &v, t);
        for (size_t j = 0; j < v.m; j++) {
            const size_t s = v.s + j;
            const uint8_t *m = mask + j * nc;
            const float *st = state_at(ca, t, s);
            float *next = state_at(ca, t + 1, s);
            for (size_t c = 0; c < C; c++)
                for (size_t i = 0; i < nc; i++) {
                    const size_t n = v.cell0 + i;
                    next[c * N + n] = m[i] ? y[c * ldu + i * W + j] : st[c * N + n];
                }
            if (ph->kind == PH_FWD)
                continue;
            /* The loss on channel 0 after the last step, binary64 in cell order. */
            const float *tg = ca->target + s * N;
            float *dstate = ca->dstate + s * C * N;
            double loss = 0.0;
            for (size_t i = 0; i < nc; i++) {
                const size_t n = v.cell0 + i;
                const double e = (double)next[n] - (double)tg[n];
                loss = loss + e * e;
                dstate[n] = 2.0f * (next[n] - tg[n]);
            }
            for (size_t c = 1; c < C; c++)
                memset(dstate + c * N + v.cell0, 0, nc * sizeof(float));
            ca->leaf_loss[s * R + v.r] = loss;
        }
        if (ph->kind == PH_FWD)
            return;
    }
    for (size_t c = 0; c < C; c++) {
        if (W == 1) {
            const float *dstate = ca->dstate + v.s * C * N + c * N + v.cell0;
            for (size_t i = 0; i < nc; i++)
                v.d0[c * ldu + i] = mask[i] ? dstate[i] : 0.0f;
        } else {
            for (size_t i = 0; i < nc; i++)
                for (size_t j = 0; j < W; j++)
                    v.d0[c * ldu + i * W + j] =
                        mask[j * nc + i] ? ca->dstate[(v.s + j) * C * N + c * N + v.cell0 + i] : 0.0f;
        }
    }
    clear_tails(v.d0, 0, C, nc * W, ldu);   /* the kernels' dx tails then stay ±0 (logic.h) */
    float *stats = ca->leaf_store + (v.s * R + v.r) * ca->leaf_stride;
    if (ph->kind == PH_BWD) {
        if (unit_silent(ca, &v)) {
            atomic_fetch_add_explicit(&silent_units, 1, memory_order_relaxed);
            if (ca->skip_silent) {
                silent_unit(ca, &v, t);
                return;
            }
        }
        part_forward(ca, &v, t);
    }
    part_backward(ca, &v, t, stats, R * ca->leaf_stride, ph->kind == PH_BWD, t > 0);
}

/* The batch's start states and targets (one thread, before the phases). */
static ls_status ca_start_batch(logic_ca *ca, const ls_batch *b, ls_err *err)
{
    const size_t C = ca->C, N = ca->N;
    if (b->batch == 0 || b->batch > ca->B)
        return ls_fail(err, LS_EINVAL, "logic-ca: batch of %zu samples (the model holds %zu)", b->batch, ca->B);
    for (size_t s = 0; s < b->batch; s++) {
        float *st = ca->state + s * C * N;
        float *tg = ca->target + s * N;
        if (ca->gol) {
            if (b->data == NULL || b->ids == NULL || b->data->train.x8 == NULL || b->data->train.dim != 9 ||
                b->ids[s] >= b->data->train.n)
                return ls_fail(err, LS_EINVAL, "logic-ca: gol needs its data set of 3x3 boards");
            const uint8_t *board = b->data->train.x8 + (size_t)b->ids[s] * 9;
            size_t bits = 0;
            for (size_t n = 0; n < 9; n++)
                bits |= (size_t)(board[n] != 0) << n;
            const uint8_t *want = ca->gol_want + bits * 9;
            memset(st, 0, C * N * sizeof(float));
            for (size_t n = 0; n < 9; n++) {
                st[n] = board[n] ? 1.0f : 0.0f;
                tg[n] = (float)want[n];
            }
        } else {
            logic_ca_start_state(st, C, N, b->seed, b->step, s);
            for (size_t n = 0; n < N; n++)
                tg[n] = (float)logic_ca_checkerboard_target(n % ca->G, n / ca->G);
        }
    }
    return LS_OK;
}

/* Phases 0 .. T−2 step forward, phase T−1 is the last step forward with the
 * loss and its backward, phases T .. 2T−2 step backward through CA steps
 * T−2 .. 0. Unit u is part u % R of sample u / R. A batch of B' <= B
 * samples keeps the arrays' layout for B; its units index samples below B'. */
static void ca_phase(void *self, const float *params, const ls_batch *b, size_t phase, size_t unit, void *scratch)
{
    (void)params;   /* prepare derived the coefficients from params */
    logic_ca *ca = self;
    phase_ctx ph = { .ca = ca, .b = b };
    if (phase + 1 < ca->T) {
        ph.t = phase;
        ph.kind = PH_FWD;
    } else if (phase + 1 == ca->T) {
        ph.t = phase;
        ph.kind = PH_LAST;
    } else {
        ph.t = 2 * ca->T - 2 - phase;
        ph.kind = PH_BWD;
    }
    phase_part(&ph, unit, scratch);
}

/* Leaf s·R + r: the statistics part r of sample s gathered in the phases. */
static double ca_leaf(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
                      void *scratch)
{
    (void)params;
    (void)b;
    (void)scratch;
    const logic_ca *ca = self;
    const float *src = ca->leaf_store + leaf * ca->leaf_stride;
    const size_t n = ca->net.gates * 4;
    if (mode == LS_LEAF_ADD) {
        #pragma omp simd   /* element-wise: exact whatever the vector width */
        for (size_t i = 0; i < n; i++)
            buf[i] = buf[i] + src[i];
    } else {
        memcpy(buf, src, n * sizeof(float));
    }
    return ca->leaf_loss[leaf];
}

/* The same leaf where the phases left it (ls_model_desc.leaf_held). */
static const float *ca_leaf_held(const void *self, size_t leaf, double *loss)
{
    const logic_ca *ca = self;
    *loss = ca->leaf_loss[leaf];
    return ca->leaf_store + leaf * ca->leaf_stride;
}

/* ---- ls_model glue ---- */

static void ca_init(const void *self, float *params, uint64_t seed)
{
    const logic_ca *ca = self;
    const size_t n = ca->net.gates * LOGIC_OPS;
    const float residual = ca->cfg.residual;
    for (size_t i = 0; i < n; i++) {
        if (residual != 0.0f)
            params[i] = i % LOGIC_OPS == 3 ? residual : 0.0f;
        else
            params[i] = rng_normalf(seed, RNG_INIT, 0, i, 0);
    }
}

static ls_status ca_prepare(void *self, const float *params, const ls_batch *b, ls_err *err)
{
    (void)params;   /* the coefficients are ca_prepare_part's, on the engine's threads */
    logic_ca *ca = self;
    return b != NULL ? ca_start_batch(ca, b, err) : LS_OK;
}

static void ca_prepare_part(void *self, const float *params, size_t part)
{
    logic_ca *ca = self;
    logic_coeffs_part(params, ca->net.gates, part, ca->p, ca->coef);
}

static void ca_finish(const void *self, const float *sum, size_t batch, float *grad, size_t lo, size_t hi)
{
    (void)batch;   /* the CA tasks train on the plain sum */
    const logic_ca *ca = self;
    logic_expand(grad, sum, ca->p, ca->coef, lo, hi);
}

static ls_status ca_metrics(void *self, const float *params, const ls_dataset *data, ls_metric *out, size_t *n_out,
                            ls_err *err)
{
    (void)data;   /* gol's boards are all 512 boards: regenerated */
    const logic_ca *ca = self;
    *n_out = 0;
    logic_ca_hard *h;
    ls_status st = hard_create(&h, ca, params, err);
    if (st != LS_OK)
        return st;
    st = hard_metrics(h, &ca->cfg, out, n_out, err);
    logic_ca_hard_destroy(h);
    return st;
}

static void ca_destroy(void *self)
{
    logic_ca *ca = self;
    if (ca == NULL)
        return;
    free(ca->wires);
    free(ca->tables);
    free(ca->coefmem);
    free(ca->batchmem);
    free(ca);
}

static ls_status check_config(const ca_config *cfg, ls_err *err)
{
    const int gol = strcmp(cfg->task, "gol") == 0;
    if (!gol && strcmp(cfg->task, "checkerboard") != 0)
        return ls_fail(err, LS_EINVAL, "logic-ca: task '%s' is not a CA task (gol or checkerboard)", cfg->task);
    if (cfg->channels == 0 || cfg->kernels == 0 || cfg->grid == 0 || cfg->ca_steps == 0 || cfg->batch == 0)
        return ls_fail(err, LS_EINVAL, "logic-ca: channels, kernels, grid, ca_steps and batch must be positive");
    if (gol && cfg->grid != 3)
        return ls_fail(err, LS_EINVAL, "grid: the gol task uses 3x3 boards (grid=3), not %zu", cfg->grid);
    if (cfg->n_perception == 0 || cfg->n_perception > LOGIC_CA_MAX_PERCEPTION || cfg->perception[0] != 8)
        return ls_fail(err, LS_EINVAL, "perception: kernel layer 1 has 8 gates (one per neighbour)");
    if (cfg->n_layers == 0 || cfg->n_layers > LOGIC_MAX_LAYERS || cfg->layers[cfg->n_layers - 1] != cfg->channels)
        return ls_fail(err, LS_EINVAL, "layers: the last layer must have one gate per channel (%zu)", cfg->channels);
    for (size_t l = 0; l < cfg->n_perception; l++)
        if (cfg->perception[l] == 0)
            return ls_fail(err, LS_EINVAL, "perception: kernel layer %zu has no gates", l + 1);
    for (size_t l = 0; l < cfg->n_layers; l++)
        if (cfg->layers[l] == 0)
            return ls_fail(err, LS_EINVAL, "layers: update layer %zu has no gates", l + 1);
    if (cfg->parts == 0 || cfg->parts > cfg->grid)
        return ls_fail(err, LS_EINVAL, "parts: %zu parts for %zu rows of cells", cfg->parts, cfg->grid);
    if (cfg->async && !(cfg->fire_rate >= 0.0f && cfg->fire_rate <= 1.0f))
        return ls_fail(err, LS_EINVAL, "fire_rate: %g is not a probability", (double)cfg->fire_rate);
    return LS_OK;
}

static ls_status ca_check(const ls_config *config, ls_err *err)
{
    const size_t *v;
    if (ls_config_list(config, "perception", &v) > LOGIC_CA_MAX_PERCEPTION)
        return ls_fail(err, LS_EINVAL, "perception: at most %d kernel layers", LOGIC_CA_MAX_PERCEPTION);
    if (ls_config_list(config, "layers", &v) > LOGIC_MAX_LAYERS)
        return ls_fail(err, LS_EINVAL, "layers: at most %d update layers", LOGIC_MAX_LAYERS);
    ca_config c;
    ca_config_read(&c, config);
    return check_config(&c, err);
}

/* logic_ca_set_lanes's and logic_ca_set_silent's settings, read by create. */
static atomic_int lanes_setting = LOGIC_CA_LANES_AUTO;
static atomic_int silent_setting = 1;

int logic_ca_set_silent(int on)
{
    return atomic_exchange(&silent_setting, on != 0);
}

size_t logic_ca_silent_units(void)
{
    return atomic_load(&silent_units);
}

size_t logic_ca_state_grads(void *self, float **grads)
{
    logic_ca *ca = self;
    *grads = ca->dpatch;
    return (2 * 9 + 2) * ca->B * ca->C * ca->N;
}

int logic_ca_set_lanes(int mode)
{
    return atomic_exchange(&lanes_setting, mode);
}

/* Lanes mode pays when a group's statistics vectors are fuller than a
 * sample's padded rows, or nearly so (it also saves the horizontal tree of
 * every gate and sample): per sample and gate the per-part path runs
 * round16(n)/16 vectors of n virtual lanes, lanes mode's statistics n/m for
 * groups of at least m samples (one vector a virtual lane; its forward and
 * dx, packed, only about n/16). Taken when 2·16·n <= 3·round16(n)·m for
 * both networks (n = C·N and N), e.g. gol (n = 9) from groups of 6. */
static int lanes_pay(size_t n, size_t m)
{
    return 2 * LOGIC_LANES * n <= 3 * round16(n) * m;
}

/* Units of a phase: B·R parts, or in lanes mode (parts = 1 and at most
 * LOGIC_CA_LANES_MAX virtual lanes) ceil(B/16) groups of nearly equal size,
 * at least two when B >= 2 so that two threads have work. */
static void choose_units(logic_ca *ca)
{
    const size_t B = ca->B, N = ca->N, C = ca->C;
    const int mode = atomic_load(&lanes_setting);
    size_t groups = (B + LOGIC_LANES - 1) / LOGIC_LANES;
    if (groups < 2 && B >= 2)
        groups = 2;
    const size_t smallest = B / groups;
    ca->lanes = ca->R == 1 && C * N <= LOGIC_CA_LANES_MAX &&
                (mode == LOGIC_CA_LANES_ALWAYS ||
                 (mode == LOGIC_CA_LANES_AUTO && lanes_pay(C * N, smallest) && lanes_pay(N, smallest)));
    ca->units = ca->lanes ? groups : B * ca->R;
    ca->max_m = ca->lanes ? (B + groups - 1) / groups : 1;
    ca->skip_silent = atomic_load(&silent_setting);
}

/* The update network's input rows are the C state rows, then the kernels'
 * outputs in the order (c, s, k): row C + c·S·K + s·K + k. The last kernel
 * layer writes rows k·S + s of ldp floats, channel c's lanes at c·nc·W. With
 * one channel, or when every unit's channel width nc·W is a whole number of
 * vectors (W = 1, or in lanes mode W = m, any group size: nc a multiple of
 * 16), ldp = C·ldu,
 * so that output, placed right after the state rows, already is the update's
 * input rows, numbered C + (k·S + s)·C + c: the forward then writes it there
 * and the backward reads the kernels' dy there, with no copy either way,
 * and update layer 0 runs with its inputs renumbered (in_layer, wired in
 * `wires`). A gate reads the same values, gates run in the same order, and
 * each dx row is first updated by the same gate, so the bits are those of
 * the copies (the checkerboard's parts of 32 cells, gol's one channel). */
static void choose_layout(logic_ca *ca, uint32_t *wires)
{
    const size_t C = ca->C, S = ca->S, K = ca->K;
    ca->shared_in = 1;
    for (size_t r = 0; r < ca->R; r++)
        if (C > 1 && (ca->row_lo[r + 1] - ca->row_lo[r]) * ca->G % 16 != 0)
            ca->shared_in = 0;
    const logic_layer *L = &ca->net.layer[ca->np];
    ca->in_layer = *L;
    if (!ca->shared_in)
        return;
    uint32_t *a = wires, *b = wires + L->out;
    for (size_t g = 0; g < L->out; g++)
        for (int side = 0; side < 2; side++) {
            const size_t q = side == 0 ? L->a[g] : L->b[g];
            size_t row = q;
            if (q >= C) {
                const size_t c = (q - C) / (S * K), s = (q - C) / K % S, k = (q - C) % K;
                row = C + (k * S + s) * C + c;
            }
            (side == 0 ? a : b)[g] = (uint32_t)row;
        }
    ca->in_layer.a = a;
    ca->in_layer.b = b;
}

static ls_status ca_create(void **self, ls_model_info *info, const ls_config *config, const ls_dataset *data,
                           ls_err *err)
{
    (void)data;   /* gol's boards come with each batch */
    *self = NULL;
    ls_status st = ca_check(config, err);
    if (st != LS_OK)
        return st;
    logic_ca *ca = calloc(1, sizeof *ca);
    if (ca == NULL)
        return ls_fail(err, LS_ENOMEM, "logic-ca: out of memory");
    ca_config_read(&ca->cfg, config);
    const ca_config *cfg = &ca->cfg;
    ca->C = cfg->channels;
    ca->K = cfg->kernels;
    ca->np = cfg->n_perception;
    ca->nu = cfg->n_layers;
    ca->S = cfg->perception[ca->np - 1];
    ca->G = cfg->grid;
    ca->N = cfg->grid * cfg->grid;
    ca->R = cfg->parts;
    ca->T = cfg->ca_steps;
    ca->B = cfg->batch;
    ca->uin = ca->C + ca->C * ca->S * ca->K;
    ca->periodic = cfg->periodic != 0;
    ca->async = cfg->async != 0;
    ca->fire_rate = cfg->fire_rate;
    ca->gol = strcmp(cfg->task, "gol") == 0;
    const size_t C = ca->C, K = ca->K, N = ca->N, R = ca->R, G = ca->G, B = ca->B, T = ca->T;

    net_shape(&ca->net, cfg);
    const size_t gates = ca->net.gates, in_gates = ca->net.width[ca->np];   /* update layer 0 */
    ca->wires = malloc(2 * (gates + in_gates) * sizeof(uint32_t) + gates);
    ca->tables = malloc((R + 1) * sizeof(size_t) + 9 * N * sizeof(int32_t) + (ca->gol ? 512 * 9 : 0));
    ca->coefmem = alloc_aligned(gates * (LOGIC_OPS + 4) * sizeof(float));
    const size_t plane = C * N;
    ca->leaf_stride = round16(gates * 4);
    /* The rollout arrays, then (from a 64-byte boundary) the leaves and
     * their losses as doubles. */
    const size_t rollout_floats = round16((T + 1) * B * plane + B * N + 2 * B * 9 * plane + 2 * B * plane);
    const size_t batch_floats = rollout_floats + B * R * ca->leaf_stride + 2 * B * R;
    ca->batchmem = alloc_aligned(batch_floats * sizeof(float));
    if (ca->wires == NULL || ca->tables == NULL || ca->coefmem == NULL || ca->batchmem == NULL) {
        ca_destroy(ca);
        return ls_fail(err, LS_ENOMEM, "logic-ca: out of memory");
    }
    ca->net.a = ca->wires;
    ca->net.b = ca->wires + gates;
    if ((st = wire_net(&ca->net, cfg, err)) != LS_OK) {
        ca_destroy(ca);
        return st;
    }
    /* The backward sets each dx row on its first update (LOGIC_DX_SET). */
    uint8_t *first = (uint8_t *)(ca->wires + 2 * (gates + in_gates));
    for (size_t l = 0; l < ca->net.n_layers; l++) {
        logic_layer *L = &ca->net.layer[l];
        if ((st = logic_layer_first(first + ca->net.gate_off[l], &L->reads_all, L, err)) != LS_OK) {
            ca_destroy(ca);
            return st;
        }
        L->first = first + ca->net.gate_off[l];
    }
    ca->row_lo = ca->tables;
    ca->nbr = (int32_t *)(void *)(ca->row_lo + R + 1);
    if (ca->gol) {   /* every step's targets from one table: no life steps on the step's one thread */
        ca->gol_want = (uint8_t *)(ca->nbr + 9 * N);
        for (size_t bits = 0; bits < 512; bits++) {
            uint8_t board[9];
            for (size_t j = 0; j < 9; j++)
                board[j] = (uint8_t)(bits >> j & 1);
            gol_target(ca->gol_want + bits * 9, board, T, ca->periodic);
        }
    }
    for (size_t r = 0; r <= R; r++)
        ca->row_lo[r] = r * G / R;
    for (size_t p = 0; p < 9; p++)
        for (size_t y = 0; y < G; y++)
            for (size_t x = 0; x < G; x++) {
                long ny = (long)y + (long)(p / 3) - 1, nx = (long)x + (long)(p % 3) - 1;
                int32_t v;
                if (ca->periodic)
                    v = (int32_t)((size_t)((ny + (long)G) % (long)G) * G + (size_t)((nx + (long)G) % (long)G));
                else if (ny < 0 || nx < 0 || ny >= (long)G || nx >= (long)G)
                    v = -1;
                else
                    v = (int32_t)((size_t)ny * G + (size_t)nx);
                ca->nbr[p * N + y * G + x] = v;
            }
    ca->p = ca->coefmem;
    ca->coef = ca->p + gates * LOGIC_OPS;
    /* Until the first prepare: the coefficients of all-zero logits would be
     * as good as any; keep them defined. */
    memset(ca->coefmem, 0, gates * (LOGIC_OPS + 4) * sizeof(float));
    float *bm = ca->batchmem;
    ca->state = bm;
    bm += (T + 1) * B * plane;
    ca->target = bm;
    bm += B * N;
    ca->dpatch = bm;
    bm += 2 * B * 9 * plane;
    ca->down = bm;
    bm += B * plane;
    ca->dstate = bm;
    ca->leaf_store = (float *)ca->batchmem + rollout_floats;
    ca->leaf_loss = (double *)(void *)(ca->leaf_store + B * R * ca->leaf_stride);   /* 64-byte aligned */
    memset(ca->batchmem, 0, batch_floats * sizeof(float));

    /* Scratch plan for the largest unit. */
    size_t max_rows = 0;
    for (size_t r = 0; r < R; r++)
        if (ca->row_lo[r + 1] - ca->row_lo[r] > max_rows)
            max_rows = ca->row_lo[r + 1] - ca->row_lo[r];
    ca->max_nc = max_rows * G;
    choose_units(ca);
    choose_layout(ca, ca->wires + 2 * gates);
    const size_t W = ca->lanes ? ca->max_m : 1;   /* the widest unit's */
    const size_t ldp = round16(C * ca->max_nc * W), ldu = round16(ca->max_nc * W);
    size_t row = 9, dmax = 9 * ldp;
    for (size_t l = 0; l < ca->np; l++) {
        ca->prow[l] = row;
        row += K * cfg->perception[l];
        if (K * cfg->perception[l] * ldp > dmax)
            dmax = K * cfg->perception[l] * ldp;
    }
    ca->prows = row;
    row = ca->uin;
    if (ca->uin * ldu > dmax)
        dmax = ca->uin * ldu;
    for (size_t j = 0; j < ca->nu; j++) {
        ca->urow[j] = row;
        row += cfg->layers[j];
        if (cfg->layers[j] * ldu > dmax)
            dmax = cfg->layers[j] * ldu;
    }
    ca->urows = row;
    ca->off_pa = 0;
    ca->off_ua = ca->off_pa + round_bytes(ca->prows * ldp * sizeof(float));
    ca->off_d0 = ca->off_ua + round_bytes(ca->urows * ldu * sizeof(float));
    ca->off_d1 = ca->off_d0 + round_bytes(dmax * sizeof(float));
    ca->off_mask = ca->off_d1 + round_bytes(dmax * sizeof(float));

    *info = (ls_model_info){
        .n_params = gates * LOGIC_OPS,
        .leaf_len = gates * 4,
        .leaves = B * R,
        .phases = 2 * T - 1,
        .units = ca->units,
        .finish_units = gates,
        .hints.finish_span = 4,   /* gate g's finish reads its four statistics */
        .scratch_bytes = ca->off_mask + round_bytes(2 * ca->max_m * ca->max_nc),
        .mean_loss = 0,
        .prepare_parts = logic_prepare_parts(gates),
        /* A part's phase reads its own cells and the rows next to them, in
         * the parts beside it (every part has a row: parts <= grid), and
         * writes only its own cells' entries, including the dpatch buffer
         * those neighbours read in the phase before (the header comment):
         * so unit s·R + r needs parts r − 1, r, r + 1 of sample s, around
         * the grid with periodic borders. A lanes-mode group, or a sample in
         * one part, needs only itself. */
        .hints.phase_group = ca->lanes ? 1 : R,
        .hints.phase_reach = ca->lanes || R == 1 ? 0 : 1,
        .hints.phase_wrap = ca->periodic,
    };
    *self = ca;
    return LS_OK;
}

static const ls_key ca_keys[] = {
    { "async", LS_KEY_SWITCH, "0", 0, 1, NULL, NULL, "asynchronous CA steps (checkerboard: 14x14, 50 steps, batch 1)",
      0 },
    { "ca_steps", LS_KEY_INT, "20", 1, 1000, NULL, NULL, "CA steps per rollout", 0 },
    { "channels", LS_KEY_INT, "8", 1, 64, NULL, NULL, "binary channels per cell", 0 },
    { "fire_rate", LS_KEY_FLOAT, "0.6", 0, 1, NULL, "async", "probability that a cell fires in a step", 0 },
    { "grid", LS_KEY_INT, "16", 1, 4096, NULL, NULL, "grid side in cells", 0 },
    { "kernels", LS_KEY_INT, "16", 1, 256, NULL, NULL, "perception kernels", 0 },
    { "layers", LS_KEY_LIST, "256x10,128,64,32,16,8,8", 1, 1 << 20, NULL, NULL,
      "gate layer widths of the update network, e.g. 128x17,64,32", 1 },
    { "parts", LS_KEY_INT, "8", 1, 4096, NULL, NULL, "parts (blocks of cell rows) per sample", 0 },
    { "perception", LS_KEY_LIST, "8,4,2", 1, 64, NULL, NULL, "perception kernel layer widths, e.g. 8,4,2,1", 0 },
    { "periodic", LS_KEY_SWITCH, "0", 0, 1, NULL, NULL, "wrap-around borders (else zero padding)", 0 },
    { "residual", LS_KEY_FLOAT, "10", 0, 1e6, NULL, NULL,
      "init: logit of gate A (pass-through), others 0; 0 = Gaussian logits", 0 },
};

const ls_model_desc logic_ca_model = {
    .name = "logic-ca",
    .summary = "a differentiable logic cellular automaton (perception kernels and an update network of gates)",
    .keys = ca_keys,
    .n_keys = sizeof ca_keys / sizeof ca_keys[0],
    .create = ca_create,
    .destroy = ca_destroy,
    .check = ca_check,
    .init = ca_init,
    .prepare = ca_prepare,
    .phase = ca_phase,
    .leaf_held = ca_leaf_held,
    .leaf_adds = 1,   /* a leaf is added straight from where the phases left it */
    .leaf = ca_leaf,
    .finish = ca_finish,
    .metrics = ca_metrics,
    .prepare_part = ca_prepare_part,
};
