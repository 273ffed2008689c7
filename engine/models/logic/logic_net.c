/* logic_net.c — the `logic` classification model (logic_net.h): input
 * thresholds, layers of soft gates (logic.h), GroupSum, softmax
 * cross-entropy; hard bit-parallel evaluation.
 *
 * A leaf runs with one lane per sample: every activation is a row of ld
 * floats (ld = max_leaf rounded up to 16), so a gate reads two rows and
 * writes one, and logic_forward / logic_backward vectorise over the leaf's
 * samples. Everything a leaf needs lives in the caller's scratch: the
 * gathered features, the input bit rows, every layer's activations and two
 * gradient row buffers (ping-pong between layers). The statistics of layer l
 * go straight into the leaf buffer at gate offset gate_off[l], written or
 * added as the leaf mode says (logic_backward's LOGIC_STATS_ADD flag is exactly
 * TREE_WRITE = 0 / TREE_ADD = 1).
 *
 * The arithmetic of the head, per lane b (sample), fixed here:
 *   s_c     = 0.0f + y_{c·G} + y_{c·G+1} + ... + y_{c·G+G−1}   (float, G = W/k)
 *   logit_c = s_c / tau                                         (float)
 *   m       = (double) max_c logit_c
 *   S       = 0.0 + e_0 + ... + e_{k−1},  e_c = dmath_exp((double)logit_c − m)
 *   loss_b  = dmath_log(S) − ((double)logit_y − m)
 *   dlogit_c = (float)(e_c / S) − (c == y ? 1.0f : 0.0f)
 *   dy_i    = dlogit_c / tau   for every gate i of group c      (float)
 * and the leaf loss = 0.0 + loss_0 + loss_1 + ... in sample order (as mlp.c).
 *
 * Memory: one allocation holds the ls_model, this struct and the wiring;
 * the prepared state (p [gates][16] and coef [gates][4]) is a second one.
 */
#include "engine/models/logic/logic_net.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/num/dmath.h"
#include "engine/models/logic/logic.h"
#include "engine/num/rng.h"

#define NET_ALIGN 64
#define EVAL_CHUNK 1024               /* samples per eval call: 16 words of 64 */
#define EVAL_WORDS (EVAL_CHUNK / 64)
#define GATHER_BLOCK 64               /* samples gathered at once in eval */
#define COUNT_PLANES 32               /* bit planes of the eval group counters */

typedef struct {
    size_t n_layers;
    size_t width[LOGIC_MAX_LAYERS];
    size_t gate_off[LOGIC_MAX_LAYERS];   /* first gate of layer l */
    size_t total;                         /* gates in all layers */
    size_t dim, bits, in0;                /* features, thresholds, in0 = dim·bits input rows */
    size_t classes, group;                /* k and G = last width / k */
    int planes;                           /* bit planes a group count needs (G < 2^planes) */
    size_t max_width;                     /* widest layer */
    float tau, residual;
    float thr[16];                        /* (float)(i+1) / (float)(bits+1) */
    size_t max_leaf, ld;                  /* ld = max_leaf rounded up to LOGIC_LANES */
    logic_layer layer[LOGIC_MAX_LAYERS];
    /* leaf scratch, byte offsets (multiples of 64) */
    size_t s_xf, s_y, s_in, s_act[LOGIC_MAX_LAYERS], s_g[2], s_head, leaf_bytes;
    /* eval scratch */
    size_t e_ops, e_xf, e_in, e_col, e_act[2], e_cnt, eval_bytes;
    /* prepared state: p [total][16], coef [total][4] */
    float *p, *coef;
} logic_net;

static size_t round_up(size_t n)
{
    return (n + NET_ALIGN - 1) / NET_ALIGN * NET_ALIGN;
}

/* a * b into *out, with room left for byte counts and rounding; 0 on overflow. */
static int mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > (SIZE_MAX / 8) / a)
        return 0;
    *out = a * b;
    return 1;
}

/* Scratch areas are laid out one after another; 0 on overflow. */
static int take(size_t *cursor, size_t bytes, size_t *off)
{
    const size_t r = round_up(bytes);
    if (r < bytes || r > SIZE_MAX / 8 - *cursor)
        return 0;
    *off = *cursor;
    *cursor += r;
    return 1;
}

static void *at(void *scratch, size_t off)
{
    return (char *)scratch + off;
}

/* ---- init, prepare, finish ---- */

/* residual > 0: logit 3 (gate A) = residual, the others 0. Otherwise
 * Gaussian: logit j of gate g of layer l = rng_normalf(seed, RNG_INIT, l,
 * g·16 + j, 0). */
static void net_init(const void *self, float *params, uint64_t seed)
{
    const logic_net *n = self;
    for (size_t l = 0; l < n->n_layers; l++) {
        float *z = params + n->gate_off[l] * LOGIC_OPS;
        for (size_t g = 0; g < n->width[l]; g++)
            for (size_t j = 0; j < LOGIC_OPS; j++) {
                if (n->residual > 0.0f)
                    z[g * LOGIC_OPS + j] = j == 3 ? n->residual : 0.0f;
                else
                    z[g * LOGIC_OPS + j] = rng_normalf(seed, RNG_INIT, l, g * LOGIC_OPS + j, 0);
            }
    }
}

/* The softmax of every gate, in parts over the engine's threads. */
static void net_prepare_part(void *self, const float *params, size_t part)
{
    logic_net *n = self;
    logic_coeffs_part(params, n->total, part, n->p, n->coef);
}

/* grad[g][j] = logic_expand's p_j (F_j − Y) on the tree sum, then / (float)B. */
static void net_finish(const void *self, const float *sum, size_t batch, float *grad, size_t lo, size_t hi)
{
    const logic_net *n = self;
    if (hi <= lo)
        return;
    logic_expand(grad, sum, n->p, n->coef, lo, hi);
    const float d = (float)batch;
    float *g = grad + lo * LOGIC_OPS;
    const size_t cnt = (hi - lo) * LOGIC_OPS;
    #pragma omp simd   /* element-wise: exact whatever the vector width */
    for (size_t i = 0; i < cnt; i++)
        g[i] = g[i] / d;
}

/* ---- the leaf ---- */

static double net_leaf(const void *self, const float *params, const ls_batch *b, size_t leaf, float *buf,
                       int mode, void *scratch)
{
    const logic_net *n = self;
    (void)params;   /* the leaf reads the prepared p and coef, derived from params */
    const size_t first = leaf * n->max_leaf;
    const size_t cnt = b->batch - first < n->max_leaf ? b->batch - first : n->max_leaf;
    const size_t ld = n->ld, dim = n->dim, bits = n->bits;
    float *xf = at(scratch, n->s_xf);
    int32_t *lab = at(scratch, n->s_y);
    float *in = at(scratch, n->s_in);
    dataset_gather(b->data, &b->data->train, b->ids + first, cnt, xf, lab);

    /* Input bits, one lane per sample; padding lanes 0. */
    for (size_t f = 0; f < dim; f++)
        for (size_t i = 0; i < bits; i++) {
            float *row = in + (f * bits + i) * ld;
            const float t = n->thr[i];
            for (size_t s = 0; s < cnt; s++)
                row[s] = xf[s * dim + f] > t ? 1.0f : 0.0f;
            for (size_t s = cnt; s < ld; s++)
                row[s] = 0.0f;
        }

    const float *x = in;
    for (size_t l = 0; l < n->n_layers; l++) {
        float *y = at(scratch, n->s_act[l]);
        logic_forward(y, x, &n->layer[l], n->coef + n->gate_off[l] * 4, cnt, ld);
        x = y;
    }

    /* GroupSum and the loss (header comment). */
    const size_t L = n->n_layers, k = n->classes, G = n->group;
    const float *yl = at(scratch, n->s_act[L - 1]);
    float *logit = at(scratch, n->s_head);   /* [k][ld], then dlogit in place */
    for (size_t c = 0; c < k; c++) {
        float *lc = logit + c * ld;
        for (size_t s = 0; s < cnt; s++)
            lc[s] = 0.0f;
        for (size_t i = c * G; i < (c + 1) * G; i++) {
            const float *yi = yl + i * ld;
            /* lane by lane (no sum across lanes), so vectorising is exact */
            #pragma omp simd
            for (size_t s = 0; s < cnt; s++)
                lc[s] = lc[s] + yi[s];
        }
        for (size_t s = 0; s < cnt; s++)
            lc[s] = lc[s] / n->tau;
    }
    double loss = 0.0;
    for (size_t s = 0; s < cnt; s++) {
        float zmax = logit[s];
        for (size_t c = 1; c < k; c++)
            if (logit[c * ld + s] > zmax)
                zmax = logit[c * ld + s];
        const double mb = (double)zmax;
        double S = 0.0;
        for (size_t c = 0; c < k; c++)
            S = S + dmath_exp((double)logit[c * ld + s] - mb);
        const size_t yb = lab[s] >= 0 ? (size_t)lab[s] : k;
        const double lb = yb < k ? dmath_log(S) - ((double)logit[yb * ld + s] - mb) : (double)NAN;
        loss = loss + lb;
        for (size_t c = 0; c < k; c++) {
            const double e = dmath_exp((double)logit[c * ld + s] - mb);
            logit[c * ld + s] = (float)(e / S) - (c == yb ? 1.0f : 0.0f);
        }
    }

    /* Backward, last layer first; dy of the last layer from the head. */
    float *dy = at(scratch, n->s_g[0]);
    for (size_t c = 0; c < k; c++) {
        float *dc = logit + c * ld;
        for (size_t s = 0; s < cnt; s++)
            dc[s] = dc[s] / n->tau;
        for (size_t s = cnt; s < ld; s++)
            dc[s] = 0.0f;
        for (size_t i = c * G; i < (c + 1) * G; i++)
            memcpy(dy + i * ld, dc, ld * sizeof(float));
    }
    int cur = 0;
    for (size_t l = L; l-- > 0;) {
        const float *xin = l == 0 ? in : (const float *)at(scratch, n->s_act[l - 1]);
        float *dx = NULL;
        if (l > 0)
            dx = at(scratch, n->s_g[1 - cur]);   /* LOGIC_DX_SET: no clearing */
        logic_backward(dx, buf + n->gate_off[l] * 4, dy, xin, &n->layer[l], n->coef + n->gate_off[l] * 4, cnt,
                       ld, (mode == LS_LEAF_ADD ? LOGIC_STATS_ADD : 0) | LOGIC_DX_SET);
        dy = dx;
        cur = 1 - cur;
    }
    return loss;
}

/* ---- hard evaluation ---- */

/* Adds one word of bits to the bit-sliced counters plane[0..]: 64 counters,
 * counter s is Σ_k bit s of plane[k] · 2^k (ripple carry). */
static void count_add(uint64_t *plane, uint64_t w)
{
    for (int k = 0; w != 0 && k < COUNT_PLANES; k++) {
        const uint64_t carry = plane[k] & w;
        plane[k] ^= w;
        w = carry;
    }
}

static size_t net_eval(const void *self, const float *params, const ls_dataset *data, size_t first,
                       size_t count, void *scratch)
{
    const logic_net *n = self;
    const ls_split *sp = &data->test;
    const size_t dim = n->dim, bits = n->bits;
    uint8_t *ops = at(scratch, n->e_ops);
    float *xf = at(scratch, n->e_xf);
    uint64_t *in = at(scratch, n->e_in);
    uint64_t *col = at(scratch, n->e_col);   /* [in0]: one word of every input row */
    uint64_t *act[2] = { at(scratch, n->e_act[0]), at(scratch, n->e_act[1]) };
    uint64_t *planes = at(scratch, n->e_cnt);   /* [k][COUNT_PLANES] */
    logic_hard_ops(ops, params, n->total);

    size_t correct = 0;
    for (size_t done = 0; done < count;) {
        size_t chunk = count - done;
        if (chunk > EVAL_CHUNK)
            chunk = EVAL_CHUNK;
        const size_t words = (chunk + 63) / 64;
        /* Input bits: sample s of the chunk is bit s % 64 of word s / 64. */
        for (size_t b0 = 0; b0 < chunk; b0 += GATHER_BLOCK) {
            const size_t nb = chunk - b0 < GATHER_BLOCK ? chunk - b0 : GATHER_BLOCK;
            uint32_t ids[GATHER_BLOCK];
            for (size_t s = 0; s < nb; s++)
                ids[s] = (uint32_t)(first + done + b0 + s);
            dataset_gather(NULL, sp, ids, nb, xf, NULL);
            const size_t w = b0 / 64;   /* GATHER_BLOCK == 64: one word */
            /* sample by sample into one word per input row (in L1), then
             * into column w of the rows */
            memset(col, 0, n->in0 * sizeof(uint64_t));
            for (size_t s = 0; s < nb; s++) {
                const float *v = xf + s * dim;
                for (size_t f = 0; f < dim; f++)
                    for (size_t i = 0; i < bits; i++)
                        col[f * bits + i] |= (uint64_t)(v[f] > n->thr[i]) << s;
            }
            for (size_t r = 0; r < n->in0; r++)
                in[r * words + w] = col[r];
        }
        const uint64_t *x = in;
        for (size_t l = 0; l < n->n_layers; l++) {
            uint64_t *y = act[l & 1];
            logic_hard_forward(y, x, &n->layer[l], ops + n->gate_off[l], words);
            x = y;
        }
        /* Group counts per sample, argmax (lowest class on ties). */
        const size_t k = n->classes, G = n->group;
        for (size_t w = 0; w < words; w++) {
            memset(planes, 0, k * COUNT_PLANES * sizeof(uint64_t));
            for (size_t c = 0; c < k; c++)
                for (size_t i = c * G; i < (c + 1) * G; i++)
                    count_add(planes + c * COUNT_PLANES, x[i * words + w]);
            const size_t live = chunk - 64 * w < 64 ? chunk - 64 * w : 64;
            for (size_t s = 0; s < live; s++) {
                size_t best = 0, best_count = 0;
                for (size_t c = 0; c < k; c++) {
                    size_t v = 0;
                    for (int b = 0; b < n->planes; b++)
                        v |= (size_t)((planes[c * COUNT_PLANES + b] >> s) & 1) << b;
                    if (c == 0 || v > best_count) {
                        best = c;
                        best_count = v;
                    }
                }
                correct += best == (size_t)dataset_label(data, sp, first + done + 64 * w + s);
            }
        }
        done += chunk;
    }
    return correct;
}

static void net_destroy(void *self)
{
    logic_net *n = self;
    if (n == NULL)
        return;
    free(n->p);
    free(n);
}

/* ---- create ---- */

/* Cross-field checks before anything is built. */
static ls_status net_check(const ls_config *cfg, ls_err *err)
{
    const size_t *layers;
    size_t n_layers = ls_config_list(cfg, "layers", &layers);
    if (n_layers == 0 || n_layers > LOGIC_MAX_LAYERS)
        return ls_fail(err, LS_EINVAL, "layers: %zu layers given, need 1 .. %d", n_layers, LOGIC_MAX_LAYERS);
    return LS_OK;
}

static ls_status net_create(void **self, ls_model_info *info, const ls_config *cfg, const ls_dataset *data,
                            ls_err *err)
{
    *self = NULL;
    ls_status st0 = net_check(cfg, err);
    if (st0 != LS_OK)
        return st0;
    if (data == NULL)
        return ls_fail(err, LS_EINVAL, "model logic needs a data set (task %s has none)", cfg->task);
    const size_t *layers;
    const size_t n_layers = ls_config_list(cfg, "layers", &layers);
    const size_t bits = (size_t)ls_config_int(cfg, "bits");
    const float tau = ls_config_float(cfg, "tau");
    const char *wiring = ls_config_str(cfg, "wiring");
    const size_t max_leaf = model_leaf_size((size_t)ls_config_int(cfg, "leaf"), cfg->batch);
    if (bits == 0 || bits > 15)
        return ls_fail(err, LS_EINVAL, "bits: %zu, need 1 .. 15", bits);
    if (!(tau > 0.0f))
        return ls_fail(err, LS_EINVAL, "tau: %g, need > 0", (double)tau);
    if (max_leaf == 0)
        return ls_fail(err, LS_EINVAL, "logic: max_leaf is 0; a leaf holds at least one sample");
    const int unique = strcmp(wiring, "unique") == 0;
    if (!unique && strcmp(wiring, "random") != 0)
        return ls_fail(err, LS_EINVAL, "wiring: '%s', need random or unique", wiring);
    const size_t k = data->n_classes;
    if (k == 0 || k > 256)
        return ls_fail(err, LS_EINVAL,
                       "model logic: the data has %zu classes; the logic network takes 1 .. 256 (its last layer is "
                       "grouped by class, and an exported circuit's predictions are bytes)", k);
    const size_t last = layers[n_layers - 1];
    if (last % k != 0)
        return ls_fail(err, LS_EINVAL, "layers: the last layer has %zu gates, not a multiple of the %zu classes",
                       last, k);

    logic_net t;
    memset(&t, 0, sizeof t);
    t.n_layers = n_layers;
    t.dim = data->train.dim;
    t.bits = bits;
    if (!mul_ok(t.dim, t.bits, &t.in0) || t.in0 == 0 || t.in0 > UINT32_MAX)
        return ls_fail(err, LS_EINVAL, "logic: %zu features x %zu bits is not a usable input width", t.dim, t.bits);
    t.classes = k;
    t.group = last / k;
    while (t.planes < COUNT_PLANES && (t.group >> t.planes) != 0)
        t.planes++;
    t.tau = tau;
    t.residual = ls_config_float(cfg, "residual");
    for (size_t i = 0; i < t.bits; i++)
        t.thr[i] = (float)(i + 1) / (float)(t.bits + 1);
    t.max_leaf = max_leaf;
    t.ld = (max_leaf + LOGIC_LANES - 1) / LOGIC_LANES * LOGIC_LANES;
    for (size_t l = 0; l < t.n_layers; l++) {
        const size_t w = layers[l];
        if (w == 0 || w > UINT32_MAX)
            return ls_fail(err, LS_EINVAL, "layers: layer %zu has %zu gates", l + 1, w);
        t.width[l] = w;
        t.gate_off[l] = t.total;
        t.total += w;
        if (w > t.max_width)
            t.max_width = w;
    }
    size_t np;
    if (!mul_ok(t.total, LOGIC_OPS, &np))
        return ls_fail(err, LS_EINVAL, "layers: too many gates (%zu)", t.total);

    /* Scratch plans: the leaf's and eval's areas overlap (a call is one or
     * the other). */
    size_t cur = 0, bytes;
    int ok = 1;
    ok &= mul_ok(max_leaf, t.dim * sizeof(float), &bytes) && take(&cur, bytes, &t.s_xf);
    ok &= take(&cur, max_leaf * sizeof(int32_t), &t.s_y);
    ok &= mul_ok(t.in0, t.ld * sizeof(float), &bytes) && take(&cur, bytes, &t.s_in);
    for (size_t l = 0; ok && l < t.n_layers; l++)
        ok &= mul_ok(t.width[l], t.ld * sizeof(float), &bytes) && take(&cur, bytes, &t.s_act[l]);
    ok &= mul_ok(t.max_width, t.ld * sizeof(float), &bytes) && take(&cur, bytes, &t.s_g[0]) &&
          take(&cur, bytes, &t.s_g[1]);
    ok &= take(&cur, k * t.ld * sizeof(float), &t.s_head);
    t.leaf_bytes = cur;
    cur = 0;
    ok &= take(&cur, t.total, &t.e_ops);
    ok &= mul_ok(GATHER_BLOCK, t.dim * sizeof(float), &bytes) && take(&cur, bytes, &t.e_xf);
    ok &= mul_ok(t.in0, EVAL_WORDS * sizeof(uint64_t), &bytes) && take(&cur, bytes, &t.e_in);
    ok &= take(&cur, t.in0 * sizeof(uint64_t), &t.e_col);
    ok &= mul_ok(t.max_width, EVAL_WORDS * sizeof(uint64_t), &bytes) && take(&cur, bytes, &t.e_act[0]) &&
          take(&cur, bytes, &t.e_act[1]);
    ok &= take(&cur, k * COUNT_PLANES * sizeof(uint64_t), &t.e_cnt);
    t.eval_bytes = cur;
    if (!ok)
        return ls_fail(err, LS_EINVAL, "logic: the network is too large for a leaf of %zu samples", max_leaf);

    /* This struct, the wiring and its first flags (LOGIC_DX_SET): one allocation. */
    const size_t head = round_up(sizeof(logic_net));
    logic_net *n = calloc(1, head + 2 * t.total * sizeof(uint32_t) + t.total);
    if (n == NULL)
        return ls_fail(err, LS_ENOMEM, "logic: out of memory for the wiring of %zu gates", t.total);
    *n = t;
    uint32_t *wa = (uint32_t *)(void *)((char *)n + head), *wb = wa + t.total;
    uint8_t *first = (uint8_t *)(wb + t.total);
    size_t in = t.in0;
    for (size_t l = 0; l < t.n_layers; l++) {
        uint32_t *a = wa + t.gate_off[l], *b = wb + t.gate_off[l];
        const ls_status st = unique ? logic_wire_unique(a, b, in, t.width[l], cfg->seed, l, err)
                                    : logic_wire_random(a, b, in, t.width[l], cfg->seed, l, err);
        if (st != LS_OK) {
            free(n);
            return st;
        }
        n->layer[l] = (logic_layer){ in, t.width[l], a, b, first + t.gate_off[l], 0 };
        if (logic_layer_first(first + t.gate_off[l], &n->layer[l].reads_all, &n->layer[l], err) != LS_OK) {
            free(n);
            return LS_ENOMEM;
        }
        in = t.width[l];
    }
    const size_t pbytes = round_up(t.total * LOGIC_OPS * sizeof(float));
    n->p = aligned_alloc(NET_ALIGN, pbytes + round_up(t.total * 4 * sizeof(float)));
    if (n->p == NULL) {
        free(n);
        return ls_fail(err, LS_ENOMEM, "logic: out of memory for the prepared state of %zu gates", t.total);
    }
    n->coef = (float *)(void *)((char *)n->p + pbytes);
    /* Zeros until prepare: a leaf before it is wrong but deterministic. */
    memset(n->p, 0, pbytes + round_up(t.total * 4 * sizeof(float)));

    *info = (ls_model_info){
        .n_params = np,
        .leaf_len = t.total * 4,
        .leaves = (cfg->batch + max_leaf - 1) / max_leaf,
        .finish_units = t.total,
        .hints.finish_span = 4,   /* gate g's finish reads its four statistics */
        .scratch_bytes = t.leaf_bytes > t.eval_bytes ? t.leaf_bytes : t.eval_bytes,
        .eval_chunk = EVAL_CHUNK,
        .mean_loss = 1,
        .prepare_parts = logic_prepare_parts(t.total),
    };
    *self = n;
    return LS_OK;
}

static const ls_key net_keys[] = {
    { "bits", LS_KEY_INT, "3", 1, 15, NULL, NULL, "thresholds per input value (at i/(bits+1))", 0 },
    { "layers", LS_KEY_LIST, "8000x6", 1, 1 << 20, NULL, NULL, "gate layer widths, e.g. 8000x6 or 128x17,64,32", 1 },
    { "leaf", LS_KEY_INT, "16", 1, 1 << 20, NULL, NULL, "samples per leaf (its leaves are atoms of 16: no effect)", 0 },
    { "residual", LS_KEY_FLOAT, "0", 0, 1e6, NULL, NULL,
      "init: logit of gate A (pass-through), others 0; 0 = Gaussian logits", 0 },
    { "tau", LS_KEY_FLOAT, "10", 1e-6, 1e6, NULL, NULL, "GroupSum temperature", 0 },
    { "wiring", LS_KEY_TEXT, "random", 0, 0, "random unique", NULL, "gate wiring", 0 },
};

const ls_model_desc logic_model = {
    .size = sizeof(ls_model_desc),
    .name = "logic",
    .summary = "a difflogic network of two-input gates with a GroupSum head",
    .keys = net_keys,
    .n_keys = sizeof net_keys / sizeof net_keys[0],
    .create = net_create,
    .destroy = net_destroy,
    .check = net_check,
    .init = net_init,
    .prepare_part = net_prepare_part,
    .leaf = net_leaf,
    .leaf_adds = 1,   /* its kernels add a leaf's statistics into buf as they go */
    .finish = net_finish,
    .eval = net_eval,
};
