/* hard.c — the logic CA's hard circuit (logic_ca.h): every gate its argmax
 * op, bits instead of floats. What the model's metrics, `lockstep export`
 * and `lockstep render` run.
 *
 * hard_run steps any number of grids at once, bit-sliced: lane (grid,
 * cell) is one bit of a 64-bit word, so a gate is one bitwise expression
 * per word (logic_hard_forward) over every cell of every grid. The public
 * entry points check a circuit's structure first (hard_check), since a
 * circuit may be built or rewired by hand. Evaluation (logic_ca_hard_eval)
 * adds the protocol's fire masks; which grids to run and how to score them
 * is the task's (its metrics hook), so nothing here knows a task.
 */
#include "engine/models/logic_ca/logic_ca_impl.h"

#include <string.h>

#include "engine/num/rng.h"

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

ls_status ca_hard_create(logic_ca_hard **out, const logic_ca *ca, const float *params, ls_err *err)
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
    return ca_hard_create(out, m->self, params, err);
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

ls_status logic_ca_hard_eval(const logic_ca_hard *h, const logic_ca_settings *s, uint8_t *state, size_t grid0,
                             size_t count, size_t side, size_t steps, ls_err *err)
{
    ls_status st = hard_check(h, err);
    if (st != LS_OK)
        return st;
    if (count == 0 || side == 0)
        return ls_fail(err, LS_EINVAL, "logic-ca circuit: %zu grids of side %zu", count, side);
    const size_t lanes = count * side * side, state_bytes = round_bytes(lanes * h->channels);
    uint8_t *mem = alloc_aligned(state_bytes + round_bytes(lanes) + hard_work_words(h, lanes) * sizeof(uint64_t));
    if (mem == NULL)
        return ls_fail(err, LS_ENOMEM, "logic-ca metrics: out of memory");
    uint8_t *a = state, *b = mem, *mask = mem + state_bytes;
    uint64_t *work = (uint64_t *)(void *)(mask + round_bytes(lanes));
    eval_rollout(h, s, &a, &b, mask, grid0, count, side, steps, work);
    if (a != state)   /* an odd number of steps: the result is in the second buffer */
        memcpy(state, a, lanes * h->channels);
    free(mem);
    return LS_OK;
}

ls_status ca_hard_metrics(const logic_ca_hard *h, const logic_ca_task *task, const ca_config *cfg, ls_metric *out,
                          size_t *n_out, ls_err *err)
{
    *n_out = 0;
    ls_status st = hard_check(h, err);
    if (st != LS_OK)
        return st;
    if (task == NULL || task->metrics == NULL)
        return ls_fail(err, LS_EINVAL, "logic-ca: the task gives no figures for the model (ls_task_desc.model_hooks)");
    if (h->channels != cfg->channels)
        return ls_fail(err, LS_EINVAL, "logic-ca: the circuit does not fit the config");
    if (task->check != NULL && (st = task->check(cfg, err)) != LS_OK)
        return st;
    return task->metrics(h, cfg, out, n_out, err);
}

ls_status logic_ca_hard_metrics(const logic_ca_hard *h, const ls_config *cfg, ls_metric *out, size_t *n_out,
                                ls_err *err)
{
    ca_config c;
    logic_ca_settings_read(&c, cfg);
    return ca_hard_metrics(h, logic_ca_task_of(cfg), &c, out, n_out, err);
}
