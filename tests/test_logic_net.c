/* test_logic_net.c — the `logic` model (engine/models/logic/logic_net.h): its gradient
 * against central finite differences of a double-precision forward written
 * here; the leaf modes (ADD = WRITE result added, bit for bit); determinism
 * across instances, scratch contents and SIMD paths; the hard evaluation
 * against a naive per-sample evaluation; init; and refused shapes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/config.h"
#include "engine/data/dataset.h"
#include "engine/models/logic/logic.h"
#include "engine/models/logic/logic_net.h"
#include "engine/core/model.h"
#include "engine/num/rng.h"
#include "engine/tasks/teacher.h"

static uint64_t rng_state = 0x13198a2e03707344ULL;

static uint32_t next_u32(void)
{
    /* xorshift64*: the test's own stream, independent of engine/rng. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32);
}

static float unit(void)
{
    return (float)(next_u32() >> 8) / 16777216.0f;
}

static void *xalloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    assert_non_null(p);
    return p;
}

/* A small data set of float features in [0, 1): dim features, classes
 * labels, n samples in each split. Some features sit exactly on a
 * threshold (v > t must be false there). */
typedef struct {
    ls_dataset d;
    float *x;
    uint8_t *y;
} small_set;

static void small_make(small_set *s, size_t dim, size_t classes, size_t n, size_t bits)
{
    memset(s, 0, sizeof *s);
    s->x = malloc(2 * n * dim * sizeof(float));
    s->y = malloc(2 * n);
    assert_non_null(s->x);
    assert_non_null(s->y);
    for (size_t i = 0; i < 2 * n * dim; i++)
        s->x[i] = next_u32() % 7 == 0 ? (float)(1 + next_u32() % bits) / (float)(bits + 1) : unit();
    for (size_t i = 0; i < 2 * n; i++)
        s->y[i] = (uint8_t)(next_u32() % classes);
    snprintf(s->d.name, sizeof s->d.name, "small");
    s->d.n_classes = classes;
    s->d.train = (ls_split){ n, dim, NULL, s->x, s->y };
    s->d.test = (ls_split){ n, dim, NULL, s->x + n * dim, s->y + n };
}

static void small_free(small_set *s)
{
    free(s->x);
    free(s->y);
}

static void set_key(ls_config *cfg, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_key(ls_config *cfg, const char *key, const char *fmt, ...)
{
    char v[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    ls_err err = { { 0 } };
    const ls_status st = config_set(cfg, key, v, 0, &err);
    if (st != LS_OK)
        fail_msg("config_set %s=%s: %s", key, v, err.msg);
}

static void small_config(ls_config *cfg, const size_t *layers, size_t n_layers, size_t bits, float tau,
                         float residual, const char *wiring, uint64_t seed)
{
    ls_err err;
    assert_int_equal(config_defaults(cfg, "teacher", "logic", &err), LS_OK);
    char list[256];
    size_t at = 0;
    for (size_t l = 0; l < n_layers; l++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%zu", l ? "," : "", layers[l]);
    set_key(cfg, "layers", "%s", list);
    set_key(cfg, "bits", "%zu", bits);
    set_key(cfg, "tau", "%a", (double)tau);
    set_key(cfg, "residual", "%a", (double)residual);
    set_key(cfg, "wiring", "%s", wiring);
    cfg->seed = seed;
    const size_t *got;
    assert_int_equal(ls_config_list(cfg, "layers", &got), n_layers);
    assert_memory_equal(got, layers, n_layers * sizeof *layers);
    assert_true(ls_config_float(cfg, "tau") == tau && ls_config_float(cfg, "residual") == residual);
}

/* ---- The double-precision reference (written from logic_net.h). ---- */

typedef struct {
    size_t n_layers, width[8], in0, dim, bits, classes;
    uint32_t *a[8], *b[8];
    double tau;
} ref_net;

static void ref_make(ref_net *r, const ls_config *cfg, size_t dim, size_t classes)
{
    memset(r, 0, sizeof *r);
    const size_t *layers;
    r->n_layers = ls_config_list(cfg, "layers", &layers);
    assert_true(r->n_layers >= 1 && r->n_layers <= 8);
    r->dim = dim;
    r->bits = (size_t)ls_config_int(cfg, "bits");
    r->in0 = dim * r->bits;
    r->classes = classes;
    r->tau = (double)ls_config_float(cfg, "tau");
    const char *wiring = ls_config_str(cfg, "wiring");
    size_t in = r->in0;
    for (size_t l = 0; l < r->n_layers; l++) {
        r->width[l] = layers[l];
        r->a[l] = malloc(r->width[l] * sizeof(uint32_t));
        r->b[l] = malloc(r->width[l] * sizeof(uint32_t));
        if (strcmp(wiring, "unique") == 0)
            assert_int_equal(logic_wire_unique(r->a[l], r->b[l], in, r->width[l], cfg->seed, l, NULL), LS_OK);
        else
            assert_int_equal(logic_wire_random(r->a[l], r->b[l], in, r->width[l], cfg->seed, l, NULL), LS_OK);
        in = r->width[l];
    }
}

static void ref_free(ref_net *r)
{
    for (size_t l = 0; l < r->n_layers; l++) {
        free(r->a[l]);
        free(r->b[l]);
    }
}

/* Input bit of feature f, threshold i: v > (i+1)/(bits+1) in float. */
static int ref_bit(float v, size_t i, size_t bits)
{
    return v > (float)(i + 1) / (float)(bits + 1);
}

/* Summed cross-entropy of the samples, soft gates, all in double. */
static double ref_loss(const ref_net *r, const double *logits, const ls_split *sp, const uint32_t *ids, size_t n)
{
    double *buf[2];
    size_t maxw = r->in0;
    for (size_t l = 0; l < r->n_layers; l++)
        maxw = r->width[l] > maxw ? r->width[l] : maxw;
    buf[0] = malloc(maxw * sizeof(double));
    buf[1] = malloc(maxw * sizeof(double));
    double total = 0.0;
    for (size_t s = 0; s < n; s++) {
        const float *xv = sp->xf + (size_t)ids[s] * r->dim;
        for (size_t f = 0; f < r->dim; f++)
            for (size_t i = 0; i < r->bits; i++)
                buf[0][f * r->bits + i] = ref_bit(xv[f], i, r->bits);
        int cur = 0;
        const double *z = logits;
        for (size_t l = 0; l < r->n_layers; l++) {
            for (size_t g = 0; g < r->width[l]; g++, z += 16) {
                double m = z[0], e[16], S = 0.0, y = 0.0;
                for (int j = 1; j < 16; j++)
                    m = fmax(m, z[j]);
                for (int j = 0; j < 16; j++)
                    S += e[j] = exp(z[j] - m);
                const double av = buf[cur][r->a[l][g]], bv = buf[cur][r->b[l][g]];
                for (int j = 0; j < 16; j++) {
                    const int *f = LOGIC_AFFINE[j];
                    y += e[j] / S * (f[0] + f[1] * av + f[2] * bv + f[3] * av * bv);
                }
                buf[1 - cur][g] = y;
            }
            cur = 1 - cur;
        }
        const size_t W = r->width[r->n_layers - 1], G = W / r->classes;
        double lg[16], m = -INFINITY, S = 0.0;
        for (size_t c = 0; c < r->classes; c++) {
            double sum = 0.0;
            for (size_t i = c * G; i < (c + 1) * G; i++)
                sum += buf[cur][i];
            lg[c] = sum / r->tau;
            m = fmax(m, lg[c]);
        }
        for (size_t c = 0; c < r->classes; c++)
            S += exp(lg[c] - m);
        total += log(S) - (lg[sp->y[ids[s]]] - m);
    }
    free(buf[0]);
    free(buf[1]);
    return total;
}

/* Hard prediction of one test sample, one bit at a time. */
static size_t ref_hard_predict(const ref_net *r, const float *params, const ls_split *sp, size_t id)
{
    size_t maxw = r->in0;
    for (size_t l = 0; l < r->n_layers; l++)
        maxw = r->width[l] > maxw ? r->width[l] : maxw;
    int *buf[2] = { malloc(maxw * sizeof(int)), malloc(maxw * sizeof(int)) };
    const float *xv = sp->xf + id * r->dim;
    for (size_t f = 0; f < r->dim; f++)
        for (size_t i = 0; i < r->bits; i++)
            buf[0][f * r->bits + i] = ref_bit(xv[f], i, r->bits);
    int cur = 0;
    const float *z = params;
    for (size_t l = 0; l < r->n_layers; l++) {
        for (size_t g = 0; g < r->width[l]; g++, z += 16) {
            int op = 0;
            for (int j = 1; j < 16; j++)
                if (z[j] > z[op])
                    op = j;
            buf[1 - cur][g] = logic_hard_bit(op, buf[cur][r->a[l][g]], buf[cur][r->b[l][g]]);
        }
        cur = 1 - cur;
    }
    const size_t W = r->width[r->n_layers - 1], G = W / r->classes;
    size_t best = 0, best_n = 0;
    for (size_t c = 0; c < r->classes; c++) {
        size_t cnt = 0;
        for (size_t i = c * G; i < (c + 1) * G; i++)
            cnt += (size_t)buf[cur][i];
        if (c == 0 || cnt > best_n) {
            best = c;
            best_n = cnt;
        }
    }
    free(buf[0]);
    free(buf[1]);
    return best;
}

/* ---- Helpers around the model. ---- */

typedef struct {
    ls_model *m;
    float *params, *buf, *grad;
    void *scratch;
} inst;

static void inst_prepare(inst *in)
{
    ls_err err = { { 0 } };
    assert_int_equal(model_prepare(in->m, in->params, NULL, NULL, &err), LS_OK);
}

/* The model of cfg with leaves of max_leaf samples (the leaf key; the
 * config's batch must hold at least that many). */
static void inst_make(inst *in, const ls_config *cfg_in, const ls_dataset *d, size_t max_leaf)
{
    ls_config cfg = *cfg_in;
    set_key(&cfg, "leaf", "%zu", max_leaf);
    if (cfg.batch < max_leaf)
        cfg.batch = max_leaf;
    ls_err err;
    err.msg[0] = 0;
    const ls_status st = model_create(&in->m, &cfg, d, &err);
    if (st != LS_OK)
        fail_msg("model_create: %s", err.msg);
    assert_string_equal(in->m->name, "logic");
    assert_ptr_equal(in->m->desc, &logic_model);
    /* a leaf model: no phases; leaves of max_leaf samples */
    assert_int_equal(in->m->info.phases, 0);
    assert_null(in->m->desc->phase);
    assert_null(in->m->desc->metrics);
    assert_non_null(in->m->desc->eval);
    assert_int_equal(in->m->info.leaves, (cfg.batch + max_leaf - 1) / max_leaf);
    assert_int_equal(in->m->info.mean_loss, 1);
    in->params = xalloc(in->m->info.n_params * sizeof(float));
    in->buf = xalloc(in->m->info.leaf_len * sizeof(float));
    in->grad = xalloc(in->m->info.n_params * sizeof(float));
    in->scratch = xalloc(in->m->info.scratch_bytes);
    memset(in->scratch, 0, in->m->info.scratch_bytes);
    in->m->desc->init(in->m->self, in->params, cfg.seed);
    inst_prepare(in);
}

static void inst_free(inst *in)
{
    model_destroy(in->m);
    free(in->params);
    free(in->buf);
    free(in->grad);
    free(in->scratch);
}

/* Leaf `leaf` of a batch of `count` samples ids (slots [leaf·L, ...)). */
static double run_leaf_of(inst *in, const ls_dataset *d, const uint32_t *ids, size_t count, size_t leaf, float *buf,
                          int mode)
{
    const ls_batch b = { d, ids, count, 1, 0 };
    return in->m->desc->leaf(in->m->self, in->params, &b, leaf, buf, mode, in->scratch);
}

/* The leaf of exactly these count (<= max_leaf) samples. */
static double run_leaf(inst *in, const ls_dataset *d, const uint32_t *ids, size_t count, float *buf, int mode)
{
    return run_leaf_of(in, d, ids, count, 0, buf, mode);
}

/* ---- Tests. ---- */

/* 12 inputs (4 features x 3 bits) -> 16 -> 16 -> 8 gates, 2 classes, tau 2,
 * Gaussian logits. The batch of 8 is two leaves of 4 (WRITE, then ADD),
 * finish divides by 8: the gradient of the mean loss. Central differences
 * of the double reference with h = 1e-3 (its truncation error ~h², far
 * below the tolerance). Tolerance per element: |g − fd| <= 2e-3·|fd| +
 * 2e-5·max|fd| (the model's forward and sums are in float). */
static void check_gradient(const char *wiring, float residual)
{
    small_set s;
    small_make(&s, 4, 2, 16, 3);
    const size_t layers[] = { 16, 16, 8 };
    ls_config cfg;
    small_config(&cfg, layers, 3, 3, 2.0f, residual, wiring, 5);
    inst in;
    inst_make(&in, &cfg, &s.d, LS_ATOM);
    if (residual > 0.0f)   /* move away from the init so every gate has gradient */
        for (size_t i = 0; i < in.m->info.n_params; i++)
            in.params[i] = in.params[i] * 0.3f + (unit() - 0.5f);
    inst_prepare(&in);
    uint32_t ids[32];   /* two leaves of one atom each */
    for (size_t i = 0; i < 32; i++)
        ids[i] = (uint32_t)((i * 7 + 3) % 16);
    const double l0 = run_leaf_of(&in, &s.d, ids, 32, 0, in.buf, LS_LEAF_WRITE);
    const double l1 = run_leaf_of(&in, &s.d, ids, 32, 1, in.buf, LS_LEAF_ADD);
    in.m->desc->finish(in.m->self, in.buf, 32, in.grad, 0, in.m->info.finish_units);

    ref_net r;
    ref_make(&r, &cfg, 4, 2);
    const size_t np = in.m->info.n_params;
    double *z = calloc(np, sizeof(double)), *fd = calloc(np, sizeof(double));
    assert_non_null(z);
    assert_non_null(fd);
    for (size_t i = 0; i < np; i++)
        z[i] = (double)in.params[i];
    const double want = ref_loss(&r, z, &s.d.train, ids, 32);
    assert_true(fabs((l0 + l1) - want) <= 1e-5 * fabs(want));
    const double h = 1e-3;
    double fmax_abs = 0.0;
    for (size_t i = 0; i < np; i++) {
        const double keep = z[i];
        z[i] = keep + h;
        const double up = ref_loss(&r, z, &s.d.train, ids, 32);
        z[i] = keep - h;
        const double dn = ref_loss(&r, z, &s.d.train, ids, 32);
        z[i] = keep;
        fd[i] = (up - dn) / (2 * h) / 32.0;
        fmax_abs = fmax(fmax_abs, fabs(fd[i]));
    }
    assert_true(fmax_abs > 1e-4);   /* the check is not vacuous */
    for (size_t i = 0; i < np; i++) {
        const double tol = 2e-3 * fabs(fd[i]) + 2e-5 * fmax_abs;
        if (fabs((double)in.grad[i] - fd[i]) > tol)
            fail_msg("param %zu (gate %zu, op %zu): model %.9g, finite differences %.9g", i, i / 16, i % 16,
                     (double)in.grad[i], fd[i]);
    }
    free(z);
    free(fd);
    ref_free(&r);
    inst_free(&in);
    small_free(&s);
}

static void test_gradient_random_wiring(void **state)
{
    (void)state;
    check_gradient("random", 0.0f);
}

static void test_gradient_unique_wiring(void **state)
{
    (void)state;
    check_gradient("unique", 2.0f);
}

/* LS_LEAF_ADD: buf = buf + (the leaf summed on its own), bit for bit. Leaves
 * of a padded size (11 of max 16) and a full one. And leaf i of a batch is the
 * leaf of its slots [16i, min(16i + 16, B)). */
static void test_leaf_add_mode(void **state)
{
    (void)state;
    small_set s;
    small_make(&s, 6, 3, 40, 2);
    const size_t layers[] = { 30, 24, 12 };
    ls_config cfg;
    small_config(&cfg, layers, 3, 2, 3.0f, 0.0f, "random", 9);
    inst in;
    inst_make(&in, &cfg, &s.d, LS_ATOM);
    const size_t len = in.m->info.leaf_len;
    float *w = xalloc(len * sizeof(float)), *acc = xalloc(len * sizeof(float));
    const uint32_t ids[16] = { 1, 30, 2, 2, 39, 17, 8, 0, 4, 21, 33, 9, 9, 12, 5, 38 };
    for (size_t count = 11; count <= 16; count += 5) {
        const double lw = run_leaf(&in, &s.d, ids, count, w, LS_LEAF_WRITE);
        for (size_t i = 0; i < len; i++)
            acc[i] = unit() * 4.0f - 2.0f;
        float *want = xalloc(len * sizeof(float));
        for (size_t i = 0; i < len; i++)
            want[i] = acc[i] + w[i];
        const double la = run_leaf(&in, &s.d, ids, count, acc, LS_LEAF_ADD);
        assert_memory_equal(acc, want, len * sizeof(float));
        assert_memory_equal(&lw, &la, sizeof lw);
        free(want);
    }
    uint32_t bids[40];
    for (size_t i = 0; i < 40; i++)
        bids[i] = (uint32_t)(next_u32() % 40);
    for (size_t l = 0; l < 3; l++) {
        const size_t first = 16 * l, count = l < 2 ? 16 : 8;
        const double lb = run_leaf_of(&in, &s.d, bids, 40, l, acc, LS_LEAF_WRITE);
        const double lw = run_leaf(&in, &s.d, bids + first, count, w, LS_LEAF_WRITE);
        assert_memory_equal(acc, w, len * sizeof(float));
        assert_memory_equal(&lb, &lw, sizeof lb);
    }
    free(w);
    free(acc);
    inst_free(&in);
    small_free(&s);
}

/* Same config → same θ_0 and the same leaf bits: on a second instance, on
 * scratch full of garbage, on every SIMD path; and the leaf reads nothing
 * outside its count (the padding lanes). */
static void test_determinism(void **state)
{
    (void)state;
    small_set s;
    small_make(&s, 10, 4, 64, 3);
    const size_t layers[] = { 64, 64, 40, 32 };
    ls_config cfg;
    small_config(&cfg, layers, 4, 3, 4.0f, 0.0f, "random", 77);
    inst a, b;
    inst_make(&a, &cfg, &s.d, LS_ATOM);
    inst_make(&b, &cfg, &s.d, LS_ATOM);
    assert_memory_equal(a.params, b.params, a.m->info.n_params * sizeof(float));
    uint32_t ids[19];
    for (size_t i = 0; i < 19; i++)
        ids[i] = (uint32_t)(next_u32() % 64);
    const size_t len = a.m->info.leaf_len;
    const double la = run_leaf(&a, &s.d, ids, 19, a.buf, LS_LEAF_WRITE);
    for (int path = 0; path < 3; path++) {
        const int prev = logic_set_simd(path);
        memset(b.scratch, path == 1 ? 0xff : 0x7f, b.m->info.scratch_bytes);   /* NaNs / huge floats */
        memset(b.buf, 0xff, len * sizeof(float));
        const double lb = run_leaf(&b, &s.d, ids, 19, b.buf, LS_LEAF_WRITE);
        assert_memory_equal(a.buf, b.buf, len * sizeof(float));
        assert_memory_equal(&la, &lb, sizeof la);
        logic_set_simd(prev);
    }
    /* finish in two ranges equals finish in one */
    a.m->desc->finish(a.m->self, a.buf, 19, a.grad, 0, a.m->info.finish_units);
    b.m->desc->finish(b.m->self, a.buf, 19, b.grad, 0, 50);
    b.m->desc->finish(b.m->self, a.buf, 19, b.grad, 50, b.m->info.finish_units);
    assert_memory_equal(a.grad, b.grad, a.m->info.n_params * sizeof(float));
    /* another seed: another init and wiring */
    ls_config cfg2 = cfg;
    cfg2.seed = 78;
    inst c;
    inst_make(&c, &cfg2, &s.d, LS_ATOM);
    assert_true(memcmp(a.params, c.params, a.m->info.n_params * sizeof(float)) != 0);
    inst_free(&a);
    inst_free(&b);
    inst_free(&c);
    small_free(&s);
}

/* Init: residual > 0 puts logit 3 at the residual, others 0; residual 0
 * draws rng_normalf(seed, RNG_INIT, layer, gate·16 + j, 0). */
static void test_init(void **state)
{
    (void)state;
    small_set s;
    small_make(&s, 3, 2, 8, 2);
    const size_t layers[] = { 6, 4 };
    ls_config cfg;
    small_config(&cfg, layers, 2, 2, 1.0f, 10.0f, "random", 3);
    inst in;
    inst_make(&in, &cfg, &s.d, LS_ATOM);
    assert_int_equal(in.m->info.n_params, 10 * 16);
    assert_int_equal(in.m->info.leaf_len, 10 * 4);
    assert_int_equal(in.m->info.finish_units, 10);
    for (size_t i = 0; i < in.m->info.n_params; i++)
        assert_true(in.params[i] == (i % 16 == 3 ? 10.0f : 0.0f));
    inst_free(&in);
    set_key(&cfg, "residual", "0");
    inst_make(&in, &cfg, &s.d, LS_ATOM);
    for (size_t g = 0; g < 10; g++)
        for (size_t j = 0; j < 16; j++) {
            const size_t l = g < 6 ? 0 : 1, gl = g < 6 ? g : g - 6;
            const float want = rng_normalf(3, RNG_INIT, l, gl * 16 + j, 0);
            assert_memory_equal(&in.params[g * 16 + j], &want, sizeof want);
        }
    inst_free(&in);
    small_free(&s);
}

/* eval = the number of test samples the naive hard evaluation gets right,
 * for single samples and for ranges spanning words and chunks. */
static void check_eval(const ls_dataset *d, const ls_config *cfg, size_t dim)
{
    inst in;
    inst_make(&in, cfg, d, LS_ATOM);
    ref_net r;
    ref_make(&r, cfg, dim, d->n_classes);
    const size_t n = d->test.n;
    uint8_t *ok = malloc(n);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        ok[i] = ref_hard_predict(&r, in.params, &d->test, i) == d->test.y[i];
        total += ok[i];
    }
    for (size_t i = 0; i < n; i += 7)
        assert_int_equal(in.m->desc->eval(in.m->self, in.params, d, i, 1, in.scratch), ok[i]);
    size_t first = 0;
    while (first < n) {
        size_t count = 1 + next_u32() % (in.m->info.eval_chunk < 300 ? in.m->info.eval_chunk : 300);
        if (count > n - first)
            count = n - first;
        size_t want = 0;
        for (size_t i = first; i < first + count; i++)
            want += ok[i];
        assert_int_equal(in.m->desc->eval(in.m->self, in.params, d, first, count, in.scratch), want);
        first += count;
    }
    if (n <= in.m->info.eval_chunk)
        assert_int_equal(in.m->desc->eval(in.m->self, in.params, d, 0, n, in.scratch), total);
    /* not vacuous: some right, some wrong */
    assert_true(total > 0 && total < n);
    free(ok);
    ref_free(&r);
    inst_free(&in);
}

static void test_eval_small(void **state)
{
    (void)state;
    small_set s;
    small_make(&s, 5, 3, 700, 4);
    const size_t layers[] = { 40, 40, 30 };
    ls_config cfg;
    small_config(&cfg, layers, 3, 4, 1.0f, 0.0f, "random", 21);
    check_eval(&s.d, &cfg, 5);
    small_free(&s);
}

static void test_eval_teacher(void **state)
{
    (void)state;
    ls_dataset *d;
    ls_err err;
    assert_int_equal(teacher_make(&d, &err), LS_OK);
    ls_config cfg;
    assert_int_equal(config_defaults(&cfg, "teacher", "logic", &err), LS_OK);
    check_eval(d, &cfg, d->train.dim);
    set_key(&cfg, "wiring", "unique");
    check_eval(d, &cfg, d->train.dim);
    dataset_destroy(d);
}

/* A few steps of plain gradient descent on the teacher task lower the loss
 * (the gradient points downhill end to end). */
static void test_descent_lowers_loss(void **state)
{
    (void)state;
    ls_dataset *d;
    ls_err err;
    assert_int_equal(teacher_make(&d, &err), LS_OK);
    ls_config cfg;
    assert_int_equal(config_defaults(&cfg, "teacher", "logic", &err), LS_OK);
    inst in;
    inst_make(&in, &cfg, d, LS_ATOM);
    uint32_t ids[LS_ATOM];
    for (size_t i = 0; i < LS_ATOM; i++)
        ids[i] = (uint32_t)(i * 61 % d->train.n);
    double first = 0.0, last = 0.0;
    for (int step = 0; step < 20; step++) {
        inst_prepare(&in);
        const double loss = run_leaf(&in, d, ids, LS_ATOM, in.buf, LS_LEAF_WRITE);
        if (step == 0)
            first = loss;
        last = loss;
        in.m->desc->finish(in.m->self, in.buf, LS_ATOM, in.grad, 0, in.m->info.finish_units);
        for (size_t i = 0; i < in.m->info.n_params; i++)
            in.params[i] = in.params[i] - 100.0f * in.grad[i];
    }
    print_message("descent: loss %g -> %g\n", first, last);
    assert_true(last < first * 0.98);
    inst_free(&in);
    dataset_destroy(d);
}

static void test_refused_shapes(void **state)
{
    (void)state;
    small_set s;
    small_make(&s, 8, 3, 4, 3);
    ls_config cfg;
    ls_model *m = NULL;
    ls_err err;
    const size_t bad_head[] = { 32, 16 };   /* 16 gates, 3 classes */
    small_config(&cfg, bad_head, 2, 3, 1.0f, 0.0f, "random", 1);
    err.msg[0] = 0;
    assert_int_equal(model_create(&m, &cfg, &s.d, &err), LS_EINVAL);
    assert_null(m);
    assert_non_null(strstr(err.msg, "multiple"));
    const size_t narrow[] = { 9, 6 };       /* unique: 24 inputs need >= 12 gates */
    small_config(&cfg, narrow, 2, 3, 1.0f, 0.0f, "unique", 1);
    assert_int_equal(model_create(&m, &cfg, &s.d, &err), LS_EINVAL);
    assert_null(m);
    small_config(&cfg, narrow, 2, 3, 1.0f, 0.0f, "random", 1);
    assert_int_equal(model_create(&m, &cfg, &s.d, &err), LS_OK);
    model_destroy(m);
    m = (ls_model *)1;
    err.msg[0] = 0;
    assert_int_equal(model_create(&m, &cfg, NULL, &err), LS_EINVAL);   /* it needs a data set */
    assert_null(m);
    assert_true(err.msg[0] != 0);
    small_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient_random_wiring),
        cmocka_unit_test(test_gradient_unique_wiring),
        cmocka_unit_test(test_leaf_add_mode),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_eval_small),
        cmocka_unit_test(test_eval_teacher),
        cmocka_unit_test(test_descent_lowers_loss),
        cmocka_unit_test(test_refused_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
