/* logic_ca.c — the differentiable logic cellular automaton (logic_ca.h): the
 * model behind ls_model's batch mode — its descriptor, create, checks and
 * once-per-step glue. The files beside it hold the wiring (wiring.c), the
 * hard circuit (hard.c) and the training phases (phase.c); logic_ca_impl.h
 * says what they share. What differs between its tasks comes from the
 * task's hooks (logic_ca_task), never from the task's name.
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

#include "engine/models/logic_ca/logic_ca_impl.h"

#include <stdatomic.h>
#include <string.h>

#include "engine/num/rng.h"

/* Lists longer than the model's arrays are refused by check_config first;
 * here they are only cut to size. */
void logic_ca_settings_read(ca_config *c, const ls_config *cfg)
{
    memset(c, 0, sizeof *c);
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

/* The model passes its own name: a task may give other models other hooks. */
const logic_ca_task *logic_ca_task_of(const ls_config *cfg)
{
    const ls_task_desc *t = cfg->task_desc;
    return t != NULL && t->model_hooks != NULL ? t->model_hooks(logic_ca_model.name) : NULL;
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
    (void)data;   /* the task's metrics hook says what to score */
    const logic_ca *ca = self;
    *n_out = 0;
    logic_ca_hard *h;
    ls_status st = ca_hard_create(&h, ca, params, err);
    if (st != LS_OK)
        return st;
    st = ca_hard_metrics(h, ca->task, &ca->cfg, out, n_out, err);
    logic_ca_hard_destroy(h);
    return st;
}

static void ca_destroy(void *self)
{
    logic_ca *ca = self;
    if (ca == NULL)
        return;
    if (ca->task != NULL && ca->task->destroy != NULL)
        ca->task->destroy(ca->task_ctx);
    free(ca->wires);
    free(ca->tables);
    free(ca->coefmem);
    free(ca->batchmem);
    free(ca);
}

static ls_status check_config(const ca_config *cfg, ls_err *err)
{
    if (cfg->channels == 0 || cfg->kernels == 0 || cfg->grid == 0 || cfg->ca_steps == 0 || cfg->batch == 0)
        return ls_fail(err, LS_EINVAL, "logic-ca: channels, kernels, grid, ca_steps and batch must be positive");
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
    logic_ca_settings_read(&c, config);
    ls_status st = check_config(&c, err);
    if (st != LS_OK)
        return st;
    const logic_ca_task *task = logic_ca_task_of(config);
    if (task == NULL || task->sample == NULL || task->metrics == NULL)
        return ls_fail(err, LS_EINVAL,
                       "logic-ca: the task gives the model no start states, targets and figures "
                       "(ls_task_desc.model_hooks)");
    return task->check != NULL ? task->check(&c, err) : LS_OK;
}

/* logic_ca_set_lanes's and logic_ca_set_silent's settings, read by create. */
static atomic_int lanes_setting = LOGIC_CA_LANES_AUTO;
static atomic_int silent_setting = 1;

int logic_ca_set_silent(int on)
{
    return atomic_exchange(&silent_setting, on != 0);
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
    (void)data;   /* a task's samples come with each batch (its sample hook) */
    *self = NULL;
    ls_status st = ca_check(config, err);
    if (st != LS_OK)
        return st;
    logic_ca *ca = calloc(1, sizeof *ca);
    if (ca == NULL)
        return ls_fail(err, LS_ENOMEM, "logic-ca: out of memory");
    logic_ca_settings_read(&ca->cfg, config);
    ca->task = logic_ca_task_of(config);   /* ca_check made sure there is one */
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
    const size_t C = ca->C, K = ca->K, N = ca->N, R = ca->R, G = ca->G, B = ca->B, T = ca->T;

    ca_net_shape(&ca->net, cfg);
    const size_t gates = ca->net.gates, in_gates = ca->net.width[ca->np];   /* update layer 0 */
    ca->wires = malloc(2 * (gates + in_gates) * sizeof(uint32_t) + gates);
    ca->tables = malloc((R + 1) * sizeof(size_t) + 9 * N * sizeof(int32_t));
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
    if ((st = ca_wire_net(&ca->net, cfg, err)) != LS_OK) {
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
    /* what the task precomputes for its samples (a table of targets, say) */
    if (ca->task->create != NULL && (st = ca->task->create(&ca->task_ctx, cfg, err)) != LS_OK) {
        ca_destroy(ca);
        return st;
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
    .size = sizeof(ls_model_desc),
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

