/* circuit.c — the flat hard circuit of a logic or logic-ca network and its
 * checks against the engine (circuit.h). */
#include "engine/models/logic/circuit.h"

#include <stdlib.h>
#include <string.h>

#include "engine/num/rng.h"

const char *const circuit_op_names[LOGIC_OPS] = {
    "FALSE", "AND", "A_AND_NOT_B", "A", "NOT_A_AND_B", "B", "XOR", "OR",
    "NOR", "XNOR", "NOT_B", "A_OR_NOT_B", "NOT_A", "NOT_A_OR_B", "NAND", "TRUE",
};

/* Whether op's output depends on operand a (which = 0) or b (which = 1). */
int circuit_op_reads(int op, int which)
{
    for (int x = 0; x < 2; x++)
        if (which == 0 ? logic_hard_bit(op, 0, x) != logic_hard_bit(op, 1, x)
                       : logic_hard_bit(op, x, 0) != logic_hard_bit(op, x, 1))
            return 1;
    return 0;
}

void circuit_free(circuit_flat *f)
{
    free(f->a);   /* a, b, op, live and out are one allocation */
    memset(f, 0, sizeof *f);
}

static ls_status circuit_alloc(circuit_flat *f, size_t n_in, size_t n_gates, size_t n_out, ls_err *err)
{
    f->n_in = n_in;
    f->n_gates = n_gates;
    f->n_out = n_out;
    if (n_in + n_gates > UINT32_MAX)
        return ls_fail(err, LS_EINVAL, "%zu gates are too many", n_gates);
    uint32_t *mem = malloc((2 * n_gates + n_out) * sizeof(uint32_t) + 2 * n_gates + 1);
    if (mem == NULL)
        return ls_fail(err, LS_ENOMEM, "out of memory for %zu gates", n_gates);
    f->a = mem;
    f->b = mem + n_gates;
    f->out = mem + 2 * n_gates;
    f->op = (uint8_t *)(f->out + n_out);
    f->live = f->op + n_gates;
    return LS_OK;
}

/* Marks the active gates (backwards from the outputs) and counts them. */
static void circuit_prune(circuit_flat *f)
{
    memset(f->live, 0, f->n_gates);
    for (size_t o = 0; o < f->n_out; o++)
        if (f->out[o] >= f->n_in)
            f->live[f->out[o] - f->n_in] = 1;
    f->active = f->trivial = 0;
    for (size_t g = f->n_gates; g-- > 0;) {
        if (!f->live[g])
            continue;
        f->active++;
        const int op = f->op[g];
        f->trivial += !(circuit_op_reads(op, 0) && circuit_op_reads(op, 1));
        if (circuit_op_reads(op, 0) && f->a[g] >= f->n_in)
            f->live[f->a[g] - f->n_in] = 1;
        if (circuit_op_reads(op, 1) && f->b[g] >= f->n_in)
            f->live[f->b[g] - f->n_in] = 1;
    }
}

/* The logic-ca circuit unrolled over channels (circuit.h). */
ls_status circuit_from_ca(circuit_flat *f, const logic_ca_hard *h, ls_err *err)
{
    const size_t C = h->channels, np = h->n_perception, K = h->kernels, S = h->width[np - 1];
    const size_t P = h->gate_off[np], U = h->gates - P, n_in = 9 * C;
    ls_status st = circuit_alloc(f, n_in, C * P + U, C, err);
    if (st != LS_OK)
        return st;
    f->per_channel = P;
    for (size_t c = 0; c < C; c++)
        for (size_t l = 0; l < np; l++)
            for (size_t i = 0; i < h->layer[l].out; i++) {
                const size_t g = h->gate_off[l] + i, x = c * P + g;
                const uint32_t ra = h->layer[l].a[i], rb = h->layer[l].b[i];
                if (l == 0) {
                    f->a[x] = (uint32_t)(c * 9 + ra);
                    f->b[x] = (uint32_t)(c * 9 + rb);
                } else {
                    f->a[x] = (uint32_t)(n_in + c * P + h->gate_off[l - 1] + ra);
                    f->b[x] = (uint32_t)(n_in + c * P + h->gate_off[l - 1] + rb);
                }
                f->op[x] = h->ops[g];
            }
    for (size_t l = np; l < h->n_layers; l++)
        for (size_t i = 0; i < h->layer[l].out; i++) {
            const size_t g = h->gate_off[l] + i, x = C * P + (g - P);
            const uint32_t r[2] = { h->layer[l].a[i], h->layer[l].b[i] };
            uint32_t node[2];
            for (int k = 0; k < 2; k++) {
                if (l > np) {
                    node[k] = (uint32_t)(n_in + C * P + (h->gate_off[l - 1] + r[k] - P));
                } else if (r[k] < C) {
                    node[k] = (uint32_t)(r[k] * 9 + 4);   /* own state = the patch centre */
                } else {
                    /* perception input C + c·S·K + s·K + k = kernel kk's output s on channel c */
                    const size_t q = r[k] - C, c = q / (S * K), s = q % (S * K) / K, kk = q % K;
                    node[k] = (uint32_t)(n_in + c * P + h->gate_off[np - 1] + kk * S + s);
                }
            }
            f->a[x] = node[0];
            f->b[x] = node[1];
            f->op[x] = h->ops[g];
        }
    const size_t last = h->gate_off[h->n_layers - 1];
    for (size_t c = 0; c < C; c++)
        f->out[c] = (uint32_t)(n_in + C * P + (last + c - P));
    circuit_prune(f);
    return LS_OK;
}

/* The logic model's circuit. Its wiring is private to logic_net.c, so
 * it is rebuilt here from the config as logic_net.h documents it (layer l
 * wired by logic_wire_random / logic_wire_unique with (seed, addr = l)); the
 * self-check against the engine's test accuracy guards the two against
 * drifting apart. */
ls_status circuit_from_net(circuit_flat *f, const ls_config *cfg, const ls_dataset *data, const float *params,
                           ls_err *err)
{
    const size_t *layers;
    const size_t L = ls_config_list(cfg, "layers", &layers), dim = data->train.dim;
    const size_t bits = (size_t)ls_config_int(cfg, "bits"), k = data->n_classes;
    size_t total = 0;
    for (size_t l = 0; l < L; l++)
        total += layers[l];
    const size_t n_in = dim * bits, last = layers[L - 1];
    if (k == 0 || last % k != 0 || bits == 0 || bits > 15)
        return ls_fail(err, LS_EINVAL, "the run's network does not fit its data set");
    ls_status st = circuit_alloc(f, n_in, total, last, err);
    if (st != LS_OK)
        return st;
    f->dim = dim;
    f->bits = bits;
    f->classes = k;
    f->group = last / k;
    for (size_t i = 0; i < bits; i++)
        f->thr[i] = (float)(i + 1) / (float)(bits + 1);
    const int unique = strcmp(ls_config_str(cfg, "wiring"), "unique") == 0;
    size_t in = n_in, off = 0, prev = 0;
    for (size_t l = 0; l < L && st == LS_OK; l++) {
        const size_t w = layers[l];
        st = unique ? logic_wire_unique(f->a + off, f->b + off, in, w, cfg->seed, l, err)
                    : logic_wire_random(f->a + off, f->b + off, in, w, cfg->seed, l, err);
        /* layer-local input rows → nodes */
        const size_t base = l == 0 ? 0 : n_in + prev;
        for (size_t g = 0; g < w; g++) {
            f->a[off + g] = (uint32_t)(base + f->a[off + g]);
            f->b[off + g] = (uint32_t)(base + f->b[off + g]);
        }
        prev = off;
        off += w;
        in = w;
    }
    if (st != LS_OK) {
        circuit_free(f);
        return st;
    }
    logic_hard_ops(f->op, params, total);
    for (size_t i = 0; i < last; i++)
        f->out[i] = (uint32_t)(n_in + total - last + i);
    circuit_prune(f);
    return LS_OK;
}

/* Evaluates the active gates on `words` words per node: val [n_in + n_gates][words],
 * the inputs filled in by the caller. */
static void circuit_eval(const circuit_flat *f, uint64_t *val, size_t words)
{
    for (size_t g = 0; g < f->n_gates; g++) {
        if (!f->live[g])
            continue;
        uint64_t *y = val + (f->n_in + g) * words;
        const uint64_t *x = val + (size_t)f->a[g] * words, *z = val + (size_t)f->b[g] * words;
        for (size_t w = 0; w < words; w++)
            y[w] = logic_hard_word(f->op[g], x[w], z[w]);
    }
}

/* The pruned flat circuit against logic_ca_hard_step on a small random grid,
 * periodic and zero-bordered, every channel of every cell. */
ls_status circuit_check_ca(const circuit_flat *f, const logic_ca_hard *h, ls_err *err)
{
    const size_t C = h->channels, W = 61, H = 37, cells = W * H, words = (cells + 63) / 64;
    uint8_t *in = malloc(2 * C * cells);
    uint64_t *val = calloc((f->n_in + f->n_gates) * words, sizeof(uint64_t));
    ls_status st = in != NULL && val != NULL ? LS_OK : ls_fail(err, LS_ENOMEM, "out of memory");
    for (int periodic = 0; periodic < 2 && st == LS_OK; periodic++) {
        uint8_t *out = in + C * cells;
        for (size_t i = 0; i < C * cells; i++)
            in[i] = (uint8_t)(rng_u64(1, RNG_TEST, 0xe4, (uint64_t)periodic, i) & 1);
        if ((st = logic_ca_hard_step(h, out, in, W, H, periodic, NULL, err)) != LS_OK)
            break;
        memset(val, 0, f->n_in * words * sizeof(uint64_t));
        for (size_t c = 0; c < C; c++)
            for (size_t n = 0; n < cells; n++)
                for (size_t p = 0; p < 9; p++) {
                    long y = (long)(n / W) + (long)(p / 3) - 1, x = (long)(n % W) + (long)(p % 3) - 1;
                    if (periodic) {
                        y = (y + (long)H) % (long)H;
                        x = (x + (long)W) % (long)W;
                    } else if (y < 0 || x < 0 || y >= (long)H || x >= (long)W) {
                        continue;
                    }
                    if (in[c * cells + (size_t)y * W + (size_t)x])
                        val[(c * 9 + p) * words + n / 64] |= UINT64_C(1) << (n % 64);
                }
        circuit_eval(f, val, words);
        for (size_t c = 0; c < C && st == LS_OK; c++)
            for (size_t n = 0; n < cells; n++)
                if (((val[(size_t)f->out[c] * words + n / 64] >> (n % 64)) & 1) != out[c * cells + n]) {
                    st = ls_fail(err, LS_EMISMATCH, "the flattened circuit differs from the engine's hard "
                                 "step at cell %zu, channel %zu (a lockstep bug; nothing was written)", n, c);
                    break;
                }
    }
    free(in);
    free(val);
    return st;
}

/* Binarised inputs of samples [first, first + n) of split s, n <= 64, one word per input row. */
static void net_inputs(const circuit_flat *f, const ls_split *s, size_t first, size_t n, float *xf, uint64_t *in)
{
    /* Zeroed: gcc -O1 with the sanitizers cannot see that n <= 64 and
     * warns the gather may read past what the loop wrote. */
    uint32_t ids[64] = { 0 };
    for (size_t i = 0; i < n && i < 64; i++)
        ids[i] = (uint32_t)(first + i);
    dataset_gather(NULL, s, ids, n, xf, NULL);
    memset(in, 0, f->n_in * sizeof(uint64_t));
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < f->dim; d++)
            for (size_t t = 0; t < f->bits; t++)
                in[d * f->bits + t] |= (uint64_t)(xf[i * f->dim + d] > f->thr[t]) << i;
}

/* Class of lane j: argmax of the group bit counts, lowest class on ties. */
static size_t net_class(const circuit_flat *f, const uint64_t *val, size_t j)
{
    size_t best = 0, best_n = 0;
    for (size_t c = 0; c < f->classes; c++) {
        size_t n = 0;
        for (size_t i = c * f->group; i < (c + 1) * f->group; i++)
            n += (val[f->out[i]] >> j) & 1;
        if (c == 0 || n > best_n) {
            best = c;
            best_n = n;
        }
    }
    return best;
}

/* The pruned flat circuit's test accuracy against the engine's hard evaluation. */
ls_status circuit_check_net(const circuit_flat *f, trainer *t, const ls_dataset *data, ls_err *err)
{
    double engine_acc;
    ls_status st = trainer_evaluate(t, &engine_acc, err);
    if (st != LS_OK)
        return st;
    const ls_split *s = &data->test;
    float *xf = malloc(64 * f->dim * sizeof(float));
    uint64_t *val = calloc(f->n_in + f->n_gates, sizeof(uint64_t));
    if (xf == NULL || val == NULL) {
        free(xf);
        free(val);
        return ls_fail(err, LS_ENOMEM, "out of memory");
    }
    size_t right = 0;
    for (size_t first = 0; first < s->n; first += 64) {
        const size_t n = s->n - first < 64 ? s->n - first : 64;
        net_inputs(f, s, first, n, xf, val);
        circuit_eval(f, val, 1);
        for (size_t j = 0; j < n; j++)
            right += net_class(f, val, j) == (size_t)dataset_label(data, s, first + j);
    }
    free(xf);
    free(val);
    const double acc = s->n > 0 ? (double)right / (double)s->n : 0.0;
    if (acc != engine_acc)
        return ls_fail(err, LS_EMISMATCH, "the flattened circuit classifies %zu of %zu test samples right, "
                       "the engine's hard evaluation %.17g (a lockstep bug; nothing was written)", right, s->n,
                       engine_acc);
    return LS_OK;
}
