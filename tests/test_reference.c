/* test_reference.c — a deliberately simple sequential trainer, written apart
 * from the engine: it uses only the model's descriptor (init, prepare and its
 * parts in order through model_prepare, the phases one after the other,
 * leaf, finish) and the optimiser step — no
 * pool, no reduce/ — computes every atom as a leaf of its own (the model
 * created with leaf = LS_ATOM) into its own buffer and sums them with its
 * own recursive tree, straight from the definition in docs/contract.md (and
 * include/lockstep.h). The engine, at the config's leaf size (several atoms
 * a leaf for the mlp) and any thread count, must produce the same
 * parameters at every step, bit for bit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/model.h"
#include "engine/core/optim.h"
#include "engine/num/rng.h"
#include "engine/core/train.h"
#include "engine/tasks/teacher.h"
#include "record/hash.h"

typedef struct {
    size_t len;
    float **leaf;      /* [n] leaf buffers */
    double *loss;      /* [n] */
} leaves;

/* sum(l, n) = leaf(l) if n == 1, else sum(l, k) + sum(l + k, n - k), k the
 * largest power of two below n; the result goes to a fresh buffer. */
static float *ref_tree(const leaves *lv, size_t l, size_t n, double *loss)
{
    float *out = malloc(lv->len * sizeof(float));
    if (n == 1) {
        memcpy(out, lv->leaf[l], lv->len * sizeof(float));
        *loss = lv->loss[l];
        return out;
    }
    size_t k = 1;
    while (2 * k < n)
        k *= 2;
    double la, lb;
    float *a = ref_tree(lv, l, k, &la);
    float *b = ref_tree(lv, l + k, n - k, &lb);
    for (size_t i = 0; i < lv->len; i++)
        out[i] = a[i] + b[i];
    *loss = la + lb;
    free(a);
    free(b);
    return out;
}

/* Trains `steps` steps; params_out[s] receives θ_s (s = 0..steps), losses[s-1] the loss.
 * d is NULL for a task whose samples the model generates. */
static void reference_run(ls_config cfg, const ls_dataset *d, int steps, float **params_out, double *losses)
{
    cfg.data_hash = d != NULL ? d->hash : 0;
    const size_t B = cfg.batch;
    if (config_has_key(&cfg, "leaf"))
        assert_int_equal(config_set(&cfg, "leaf", "16", 0, NULL), LS_OK);   /* a leaf an atom */
    ls_model *m;
    assert_int_equal(model_create(&m, &cfg, d, NULL), LS_OK);
    const ls_model_info *info = &m->info;
    const size_t n_leaves = info->leaves;
    if (info->phases == 0) {
        /* a leaf model: one leaf an atom, the last one short */
        assert_int_equal(n_leaves, (B + LS_ATOM - 1) / LS_ATOM);
    }
    optim *opt;
    assert_int_equal(optim_create(&opt, &cfg, info->n_params, NULL), LS_OK);
    float *theta = malloc(info->n_params * sizeof(float));
    float *grad = malloc(info->n_params * sizeof(float));
    void *scratch = aligned_alloc(64, (info->scratch_bytes + 63) / 64 * 64 + 64);
    uint32_t *perm = d != NULL ? malloc(d->train.n * sizeof(uint32_t)) : NULL;
    uint32_t *ids = d != NULL ? malloc(B * sizeof(uint32_t)) : NULL;
    leaves lv = { info->leaf_len, malloc(n_leaves * sizeof(float *)), malloc(n_leaves * sizeof(double)) };
    for (size_t i = 0; i < n_leaves; i++)
        lv.leaf[i] = malloc(info->leaf_len * sizeof(float));

    m->desc->init(m->self, theta, cfg.seed);
    memcpy(params_out[0], theta, info->n_params * sizeof(float));
    for (int t = 1; t <= steps; t++) {
        /* Data order, docs/contract.md: slot j takes stream position (t-1)·B + j. */
        for (size_t j = 0; d != NULL && j < B; j++) {
            uint64_t q = (uint64_t)(t - 1) * B + j;
            rng_permutation(perm, d->train.n, cfg.seed, RNG_EPOCH_PERM, q / d->train.n);
            ids[j] = perm[q % d->train.n];
        }
        const ls_batch batch = { d, ids, B, t, cfg.seed };
        ls_err err = { { 0 } };
        if (m->desc->prepare != NULL || m->info.prepare_parts > 0)
            assert_int_equal(model_prepare(m, theta, &batch, NULL, &err), LS_OK);
        /* the phases one after the other, their units in order, one scratch */
        for (size_t ph = 0; ph < info->phases; ph++)
            for (size_t u = 0; u < info->units; u++)
                m->desc->phase(m->self, theta, &batch, ph, u, scratch);
        for (size_t l = 0; l < n_leaves; l++)
            lv.loss[l] = m->desc->leaf(m->self, theta, &batch, l, lv.leaf[l], LS_LEAF_WRITE, scratch);
        double loss;
        float *sum = ref_tree(&lv, 0, n_leaves, &loss);
        if (info->mean_loss)
            loss = loss / (double)B;
        losses[t - 1] = loss;
        m->desc->finish(m->self, sum, B, grad, 0, info->finish_units);
        optim_begin_step(opt);
        optim_update(opt, theta, theta, grad, 1.0f, 0, info->n_params);   /* finish apart, as written */
        memcpy(params_out[t], theta, info->n_params * sizeof(float));
        free(sum);
    }
    for (size_t i = 0; i < n_leaves; i++)
        free(lv.leaf[i]);
    free(lv.leaf);
    free(lv.loss);
    free(ids);
    free(perm);
    free(scratch);
    free(grad);
    free(theta);
    optim_destroy(opt);
    model_destroy(m);
}

/* settings: NULL-terminated key, value pairs over the defaults of task and model. */
static void compare_with_engine(const char *task, const char *model, const ls_dataset *d, const char *const *settings,
                                int steps)
{
    ls_config cfg;
    ls_err err = { { 0 } };
    assert_int_equal(config_defaults(&cfg, task, model, &err), LS_OK);
    char what[256];
    size_t at = (size_t)snprintf(what, sizeof what, "%s/%s", task, cfg.model);
    for (size_t i = 0; settings[i] != NULL; i += 2) {
        if (config_set(&cfg, settings[i], settings[i + 1], 0, &err) != LS_OK)
            fail_msg("config_set %s=%s: %s", settings[i], settings[i + 1], err.msg);
        if (at < sizeof what)
            at += (size_t)snprintf(what + at, sizeof what - at, " %s %s", settings[i], settings[i + 1]);
    }
    ls_config probe = cfg;
    trainer *t;
    if (trainer_create(&t, &probe, 1, d, &err) != LS_OK)
        fail_msg("%s: %s", what, err.msg);
    size_t n = trainer_n_params(t);
    trainer_destroy(t);

    float **ref = malloc((size_t)(steps + 1) * sizeof(float *));
    for (int s = 0; s <= steps; s++)
        ref[s] = malloc(n * sizeof(float));
    double *losses = malloc((size_t)steps * sizeof(double));
    reference_run(cfg, d, steps, ref, losses);

    int threads[] = { 1, 3, 8 };
    for (size_t ti = 0; ti < 3; ti++) {
        ls_config c = cfg;
        assert_int_equal(trainer_create(&t, &c, threads[ti], d, &err), LS_OK);
        assert_memory_equal(trainer_params(t), ref[0], n * sizeof(float));
        for (int s = 1; s <= steps; s++) {
            double loss;
            assert_int_equal(trainer_step(t, &loss, &err), LS_OK);
            if (memcmp(&loss, &losses[s - 1], sizeof loss) != 0 ||
                memcmp(trainer_params(t), ref[s], n * sizeof(float)) != 0)
                fail_msg("%s: engine at %d threads differs from the reference at step %d", what, threads[ti], s);
        }
        trainer_destroy(t);
    }
    printf("%s: engine (threads 1,3,8) == simple reference for %d steps\n", what, steps);
    for (int s = 0; s <= steps; s++)
        free(ref[s]);
    free(ref);
    free(losses);
}

#define SET(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void test_teacher(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    compare_with_engine("teacher", NULL, d, SET("batch", "20", "leaf", "32", "optimizer", "adamw"), 6);
    compare_with_engine("teacher", NULL, d, SET("batch", "37", "leaf", "16", "optimizer", "sgd"), 6);
    compare_with_engine("teacher", NULL, d, SET("batch", "5", "leaf", "64", "optimizer", "adamw"), 6);
    /* Many steps at a large batch: crosses epoch boundaries (2048 samples);
     * leaves of 4 atoms and the whole batch (19 atoms) in one leaf. */
    compare_with_engine("teacher", NULL, d, SET("batch", "300", "leaf", "64", "optimizer", "adamw"), 15);
    compare_with_engine("teacher", NULL, d, SET("batch", "300", "leaf", "512", "optimizer", "adamw"), 6);
    /* the logic and linear models on the same data */
    compare_with_engine("teacher", "logic", d, SET("batch", "23", "leaf", "32", "layers", "64x3,40", "optimizer", "adamw"),
                        5);
    compare_with_engine("teacher", "linear", d, SET("batch", "50", "leaf", "64", "optimizer", "sgd"), 5);
    dataset_destroy(d);
}

static void test_fashion(void **state)
{
    (void)state;
    ls_config cfg;
    ls_err err = { { 0 } };
    assert_int_equal(config_defaults(&cfg, "fashion-mnist", NULL, &err), LS_OK);
    ls_dataset *d;
    if (trainer_load_data(&cfg, &d, &err) != LS_OK)
        fail_msg("fashion-mnist: %s", err.msg);
    compare_with_engine("fashion-mnist", NULL, d,
                        SET("batch", "64", "leaf", "32", "optimizer", "adamw", "hidden", "32,16"), 4);
    compare_with_engine("fashion-mnist", NULL, d,
                        SET("batch", "13", "leaf", "16", "optimizer", "sgd", "hidden", "32,16"), 4);
    dataset_destroy(d);
}

/* The logic CA: its phases run one after the other in the reference. */
static void test_ca(void **state)
{
    (void)state;
    ls_config cfg;
    ls_err err = { { 0 } };
    assert_int_equal(config_defaults(&cfg, "gol", NULL, &err), LS_OK);
    ls_dataset *d;
    assert_int_equal(trainer_load_data(&cfg, &d, &err), LS_OK);
    compare_with_engine("gol", NULL, d, SET("ca_steps", "2", "parts", "3"), 4);
    dataset_destroy(d);
    compare_with_engine("checkerboard", NULL, NULL,
                        SET("grid", "8", "ca_steps", "4", "parts", "3", "layers", "256,128,64,32,16,8", "batch", "3"), 3);
    compare_with_engine("checkerboard", NULL, NULL,
                        SET("async", "1", "grid", "6", "ca_steps", "5", "parts", "2", "layers", "256,128,64,32,16,8", "batch",
                            "2"),
                        3);
}

/* AdamW against its formula written out here with real divisions, for
 * 20,000 steps: past step 165 bc1 = 1 - β1^t is exactly 1.0f and past
 * 17,000 bc2 too, where engine/core/optim.c skips those divisions (x / 1.0f is
 * x for every value m and v can hold). 67 elements (a vector tail),
 * gradients with subnormals, zeros and infinities (clipped) now and then,
 * one element NaN from step 1000, weight decay and a clip. NaNs compare equal whatever their payload (which
 * payload two NaN operands give is not pinned, base/simd.h). */
static int same_float(float a, float b)
{
    return (a != a && b != b) || memcmp(&a, &b, sizeof a) == 0;
}

/* Divisors of the gradient (optim_update's grad_div, a batch folded in):
 * 1, powers of two (multiplied by the reciprocal: 0.125 too; 2^127's
 * reciprocal is subnormal, so it is divided) and others. */
static const float GRAD_DIVS[] = { 1.0f, 128.0f, 37.0f, 0.125f, 0x1p127f, 3.0f, 2.0f };
#define N_GRAD_DIVS (sizeof GRAD_DIVS / sizeof GRAD_DIVS[0])

/* AdamW's formula for one element, float by float (optim.h): θ after the
 * step from θ and the gradient sum g (divided by div); m and v updated. */
typedef struct {
    float b1, b2, lr, eps, c, decay, div, bc1, bc2;
} adamw_formula_args;

static float adamw_formula(float theta, float g, float *m, float *v, const adamw_formula_args *a)
{
    const float one_b1 = 1.0f - a->b1, one_b2 = 1.0f - a->b2;
    float gi = g / a->div;
    gi = gi > a->c ? a->c : gi;
    gi = gi < -a->c ? -a->c : gi;
    *m = a->b1 * *m + one_b1 * gi;
    *v = a->b2 * *v + one_b2 * (gi * gi);
    const float mhat = *m / a->bc1, vhat = *v / a->bc2;
    return theta * a->decay - a->lr * (mhat / (sqrtf(vhat) + a->eps));
}

static void test_adamw_is_its_formula(void **state)
{
    (void)state;
    ls_config cfg;
    ls_err err = { { 0 } };
    assert_int_equal(config_defaults(&cfg, "teacher", "mlp", &err), LS_OK);
    const char *set[][2] = { { "optimizer", "adamw" }, { "lr", "0.01" }, { "weight_decay", "0.1" }, { "clip", "3" } };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        assert_int_equal(config_set(&cfg, set[i][0], set[i][1], 0, &err), LS_OK);
    enum { N = 67, STEPS = 20000 };
    optim *o;
    assert_int_equal(optim_create(&o, &cfg, N, &err), LS_OK);
    float pbuf[2][N], q[N], m[N] = { 0 }, v[N] = { 0 }, g[N];
    float *p = pbuf[0];
    uint64_t x = 0x2545F4914F6CDD1Du;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = q[i] = (float)(int32_t)(x >> 40) * 0x1p-24f;
    }
    memset(pbuf[1], 0xff, sizeof pbuf[1]);   /* NaNs: an element the update skips shows */
    const float b1 = cfg.beta1, b2 = cfg.beta2, lr = cfg.lr, eps = cfg.eps, c = cfg.clip;
    const float decay = 1.0f - lr * cfg.weight_decay;
    float b1t = 1.0f, b2t = 1.0f;
    int shortcut1 = 0, shortcut2 = 0;
    for (int t = 1; t <= STEPS; t++) {
        for (size_t i = 0; i < N; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const uint32_t r = (uint32_t)(x >> 32);
            g[i] = (float)(int32_t)r * 0x1p-40f;
            if (r % 97 == 0)
                g[i] = (r & 0x100) ? 0x1p-140f : -0.0f;   /* subnormal, -0 */
            if (r % 499 == 0)
                g[i] = (r & 0x100) ? INFINITY : -INFINITY;   /* clipped to ±3 */
        }
        if (t == 1000)
            g[N - 1] = NAN;   /* one element goes NaN for good; the others stay finite */
        optim_begin_step(o);
        /* In place on two steps of three, into the other buffer on the
         * third, as trainer_step does with one thread and with several;
         * the gradient divided by a batch folded in (powers of two, which
         * optim.c multiplies by their reciprocal, and others). */
        float *next = t % 3 == 0 ? (p == pbuf[0] ? pbuf[1] : pbuf[0]) : p;
        volatile float div = GRAD_DIVS[t % N_GRAD_DIVS];
        optim_update(o, next, p, g, div, 0, N);
        p = next;
        b1t = b1t * b1;
        b2t = b2t * b2;
        volatile float bc1 = 1.0f - b1t, bc2 = 1.0f - b2t;   /* real divisions below */
        shortcut1 |= bc1 == 1.0f;
        shortcut2 |= bc2 == 1.0f;
        const adamw_formula_args a = { b1, b2, lr, eps, c, decay, div, bc1, bc2 };
        for (size_t i = 0; i < N; i++) {
            q[i] = adamw_formula(q[i], g[i], &m[i], &v[i], &a);
            if (!same_float(p[i], q[i]))
                fail_msg("step %d, element %zu: optimiser %a, formula %a", t, i, (double)p[i], (double)q[i]);
        }
    }
    assert_true(shortcut1 && shortcut2);   /* both shortcuts were exercised */
    for (size_t i = 0; i + 1 < N; i++)
        assert_true(isfinite(p[i]));
    optim_destroy(o);
}

/* AdamW where its operands are tiny: moments that decay to the bottom of
 * the subnormal range under gradients of exactly 0 (and stay there),
 * subnormal and near-subnormal gradients and weights. optim.c takes such
 * blocks through binary64 (no subnormal arithmetic, for speed on cores
 * that assist on it); every way of running the update must give the float
 * formula's bits, computed here with float operations: plain operations for
 * every lane, the binary64 path for every lane, and the default choice, on
 * the AVX-512 path (where the CPU has it), the AVX2 path and the scalar
 * one (there the compiler's loop, and the binary64 path's scalar twin).
 * β = 0.5 puts products exactly halfway between subnormals (ties to even). */
static void test_adamw_tiny_operands(void **state)
{
    (void)state;
    const char *betas[][2] = { { "0.9", "0.999" }, { "0.5", "0.75" } };
    enum { N = 1031, STEPS = 400, WAYS = 8 };
    /* simd 1: AVX-512 where the CPU has it, 2: at most AVX2, 0: scalar */
    const int modes[WAYS] = { -1, 1, 1, 0, 0, -1, 1, 0 }, simd[WAYS] = { 1, 1, 0, 1, 0, 2, 2, 2 };
    float *p[WAYS], *g = malloc(N * sizeof *g), *q = malloc(N * sizeof *q), *m = malloc(N * sizeof *m),
          *v = malloc(N * sizeof *v);
    for (int w = 0; w < WAYS; w++)
        p[w] = malloc(N * sizeof *p[w]);
    size_t sub_m = 0, sub_v = 0, sub_p = 0, sub_g = 0, lanes[WAYS] = { 0 };
    const char *path[WAYS];
    for (size_t k = 0; k < sizeof betas / sizeof betas[0]; k++) {
        ls_config cfg;
        ls_err err = { { 0 } };
        assert_int_equal(config_defaults(&cfg, "teacher", "mlp", &err), LS_OK);
        const char *set[][2] = { { "optimizer", "adamw" }, { "lr", "0.01" },       { "weight_decay", "0.1" },
                                 { "clip", "3" },          { "beta1", betas[k][0] }, { "beta2", betas[k][1] } };
        for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
            assert_int_equal(config_set(&cfg, set[i][0], set[i][1], 0, &err), LS_OK);
        optim *o[WAYS];
        for (int w = 0; w < WAYS; w++)
            assert_int_equal(optim_create(&o[w], &cfg, N, &err), LS_OK);
        uint64_t x = 0xD1B54A32D192ED03u + k;
        uint8_t kind[N];
        for (size_t i = 0; i < N; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            kind[i] = (uint8_t)(x % 5);   /* 0: dead after a start, 1: dead (and θ tiny), 2: tiny, 3, 4: live */
            const uint32_t r = (uint32_t)(x >> 32);
            float w0 = (float)(int32_t)r * 0x1p-32f;
            if (kind[i] == 1 || kind[i] == 2)
                w0 = ldexpf(w0, -(int)(r % 140));   /* down into the subnormals */
            for (int w = 0; w < WAYS; w++)
                p[w][i] = w0;
            q[i] = w0;
            m[i] = v[i] = 0.0f;
        }
        const float b1 = cfg.beta1, b2 = cfg.beta2, lr = cfg.lr, eps = cfg.eps, c = cfg.clip;
        const float decay = 1.0f - lr * cfg.weight_decay;
        float b1t = 1.0f, b2t = 1.0f;
        for (int t = 1; t <= STEPS; t++) {
            for (size_t i = 0; i < N; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                const uint32_t r = (uint32_t)(x >> 32);
                const float u = (float)(int32_t)r * 0x1p-31f;
                if (kind[i] <= 1)   /* 0 or -0: a negative moment that rounds to zero stays -0 */
                    g[i] = t <= 3 && kind[i] == 0 ? ldexpf(u, -(int)(r % 60)) : (r & 1) ? -0.0f : 0.0f;
                else if (kind[i] == 2)
                    g[i] = ldexpf(u, -40 - (int)(r % 110));
                else
                    g[i] = u;
                sub_g += fpclassify(g[i]) == FP_SUBNORMAL;
            }
            volatile float div = t % 3 == 0 ? 37.0f : t % 3 == 1 ? 128.0f : 1.0f;
            for (int w = 0; w < WAYS; w++) {
                const int mode = optim_set_exact_lanes(modes[w]), on = optim_set_simd(simd[w]);
                const size_t before = optim_binary64_lanes();
                optim_begin_step(o[w]);
                optim_update(o[w], p[w], p[w], g, div, 0, N / 2);   /* two ranges, as two threads */
                optim_update(o[w], p[w], p[w], g, div, N / 2, N);
                lanes[w] += optim_binary64_lanes() - before;
                path[w] = optim_simd_name();
                optim_set_exact_lanes(mode);
                optim_set_simd(on);
            }
            b1t = b1t * b1;
            b2t = b2t * b2;
            const adamw_formula_args a = { b1, b2, lr, eps, c, decay, div, 1.0f - b1t, 1.0f - b2t };
            for (size_t i = 0; i < N; i++) {
                q[i] = adamw_formula(q[i], g[i], &m[i], &v[i], &a);
                sub_m += fpclassify(m[i]) == FP_SUBNORMAL;
                sub_v += fpclassify(v[i]) == FP_SUBNORMAL;
                sub_p += fpclassify(q[i]) == FP_SUBNORMAL;
                for (int w = 0; w < WAYS; w++) {   /* θ and the moments (the state's last 2N floats) */
                    const float *mv = (const float *)((const unsigned char *)optim_state_ptr(o[w]) +
                                                      optim_state_bytes(o[w]) - 2 * N * sizeof(float));
                    const float got[3] = { p[w][i], mv[i], mv[N + i] }, want[3] = { q[i], m[i], v[i] };
                    for (int j = 0; j < 3; j++)
                        if (memcmp(&got[j], &want[j], sizeof got[j]) != 0)
                            fail_msg("betas %s/%s, step %d, element %zu, %s, way %d (blocks %d, simd %d): "
                                     "optimiser %a, formula %a",
                                     betas[k][0], betas[k][1], t, i, j == 0 ? "theta" : j == 1 ? "m" : "v", w,
                                     modes[w], simd[w], (double)got[j], (double)want[j]);
                }
            }
        }
        for (int w = 0; w < WAYS; w++)
            optim_destroy(o[w]);
    }
    print_message("subnormal m %zu, v %zu, theta %zu, gradients %zu\n", sub_m, sub_v, sub_p, sub_g);
    /* The binary64 path was taken: by every finite lane where asked (mode
     * 1; on AVX2 the last n % 8 lanes of a range keep the plain loop), by
     * some in the default mode on a SIMD path (AVX-512: the tiny lanes
     * alone; AVX2: whole vectors of 8 holding one), by none with -1 or on
     * the scalar path by default. Each way ran 2 × 400 updates of 1,031
     * lanes. */
    for (int w = 0; w < WAYS; w++) {
        print_message("way %d (lanes mode %d, %s): %zu lanes in binary64\n", w, modes[w], path[w], lanes[w]);
        const size_t all = 2 * STEPS * N;
        if (modes[w] < 0 || (modes[w] == 0 && strcmp(path[w], "scalar") == 0))
            assert_int_equal(lanes[w], 0);
        else if (modes[w] > 0)
            assert_true(lanes[w] >= all - 2 * STEPS * 2 * 7);   /* AVX2: up to 7 a range stay plain */
        else
            assert_true(lanes[w] > all / 10 && lanes[w] < (strcmp(path[w], "avx512") == 0 ? all / 2 : all));
    }
    /* the cases this test is for did occur, many times */
    assert_true(sub_m > 2000 && sub_v > 5000 && sub_p > 5000 && sub_g > 5000);
    for (int w = 0; w < WAYS; w++)
        free(p[w]);
    free(g);
    free(q);
    free(m);
    free(v);
}

/* AdamW's paths and modes on random operands against the float formula:
 * bit patterns over the whole exponent range (subnormals, ±0, the tiny
 * bounds' edges, values whose squares overflow), random hyperparameters
 * within the config's ranges, bias corrections of early steps and of 1, a
 * clip or none, divisors that are powers of two and others, in place and
 * into another buffer. Operands that are NaN or infinite in one round of
 * four (their lanes compared as "both NaN, or equal"). */
static uint64_t xs_next(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

static float any_float(uint64_t *x, int special)
{
    static const float edges[] = { 0.0f,        0x1p-149f,      0x1p-126f, 0x1.fffffcp-127f, 0x1p-96f,
                                   0x1.fffffep-97f, 0x1p-40f, 0x1.fffffep-41f, 1.0f, 0x1.fffffep127f,
                                   1e20f,       0x1p64f,        0x1.8p-149f, 0.5f };
    const uint64_t r = xs_next(x);
    uint32_t u = (uint32_t)r;
    switch ((r >> 32) % 4) {
    case 0: break;   /* any bits */
    case 1: u = (u & 0x807FFFFFu) | (uint32_t)((r >> 40) % 41) << 23; break;   /* subnormal or tiny */
    case 2: {
        float e = edges[(r >> 40) % (sizeof edges / sizeof edges[0])];
        memcpy(&u, &e, sizeof u);
        u |= (uint32_t)(r >> 63) << 31;
        break;
    }
    default: {
        const float f = (float)(int32_t)u * 0x1p-31f;   /* ordinary */
        memcpy(&u, &f, sizeof u);
    }
    }
    if (!special && (u & 0x7F800000u) == 0x7F800000u)
        u &= 0xFF7FFFFFu;   /* NaN or infinity: made finite */
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float unit_float(uint64_t *x)
{
    return (float)(xs_next(x) >> 40) * 0x1p-24f;
}

static void test_adamw_random_operands(void **state)
{
    (void)state;
    enum { ROUNDS = 600, NMAX = 80 };
    uint64_t x = 0x7A3C1E5B9D2F4861u;
    float p0[NMAX], g[NMAX], m0[NMAX], v0[NMAX], q[NMAX], m[NMAX], v[NMAX], out[NMAX], in[NMAX];
    size_t checked = 0;
    for (int round = 0; round < ROUNDS; round++) {
        const size_t n = 1 + xs_next(&x) % NMAX;
        const int special = round % 4 == 3;
        const float b1 = round % 3 == 0 ? 0.9f : unit_float(&x) * 0.999999f;
        const float b2 = round % 5 == 0 ? 0.999f : unit_float(&x) * 0.999999f;
        const float lr = round % 2 ? 0.01f : ldexpf(unit_float(&x), (int)(xs_next(&x) % 40) - 20);
        const float eps = round % 3 ? 1e-8f : unit_float(&x);
        const float wd = round % 4 ? 0.01f : unit_float(&x) * 100.0f;
        const float clip = round % 2 ? 0.0f : ldexpf(1.0f + unit_float(&x), (int)(xs_next(&x) % 160) - 80);
        const float divs[] = { 1.0f, 128.0f, 0x1p-20f, 37.0f, 3.0f, 0x1p100f };
        const float div = divs[xs_next(&x) % 6];
        const int steps = (int)(const int[]){ 1, 2, 5, 200, 20000 }[xs_next(&x) % 5];
        char text[7][32];
        snprintf(text[0], sizeof text[0], "%.9g", (double)b1);
        snprintf(text[1], sizeof text[1], "%.9g", (double)b2);
        snprintf(text[2], sizeof text[2], "%.9g", (double)lr);
        snprintf(text[3], sizeof text[3], "%.9g", (double)eps);
        snprintf(text[4], sizeof text[4], "%.9g", (double)wd);
        snprintf(text[5], sizeof text[5], "%.9g", (double)clip);
        ls_config cfg;
        ls_err err = { { 0 } };
        assert_int_equal(config_defaults(&cfg, "teacher", "mlp", &err), LS_OK);
        const char *set[][2] = { { "optimizer", "adamw" }, { "beta1", text[0] }, { "beta2", text[1] },
                                 { "lr", text[2] },        { "eps", text[3] },   { "weight_decay", text[4] },
                                 { "clip", text[5] } };
        for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
            assert_int_equal(config_set(&cfg, set[i][0], set[i][1], 0, &err), LS_OK);
        optim *o;
        assert_int_equal(optim_create(&o, &cfg, n, &err), LS_OK);
        float b1t = 1.0f, b2t = 1.0f;
        for (int t = 0; t < steps; t++) {
            optim_begin_step(o);
            b1t = b1t * cfg.beta1;
            b2t = b2t * cfg.beta2;
        }
        const float bc1 = 1.0f - b1t, bc2 = 1.0f - b2t, decay = 1.0f - cfg.lr * cfg.weight_decay;
        const float c = cfg.clip > 0.0f ? cfg.clip : INFINITY;
        const adamw_formula_args a = { cfg.beta1, cfg.beta2, cfg.lr, cfg.eps, c, decay, div, bc1, bc2 };
        for (size_t i = 0; i < n; i++) {
            p0[i] = any_float(&x, special);
            g[i] = any_float(&x, special);
            m0[i] = any_float(&x, special);
            v0[i] = xs_next(&x) % 8 ? fabsf(any_float(&x, special)) : any_float(&x, special);
            m[i] = m0[i];
            v[i] = v0[i];
            q[i] = adamw_formula(p0[i], g[i], &m[i], &v[i], &a);
        }
        float *mv = (float *)(void *)((unsigned char *)optim_state_ptr(o) + optim_state_bytes(o) - 2 * n * sizeof(float));
        for (int mode = -1; mode <= 1; mode++)
            for (int simd = 0; simd <= 2; simd++)
                for (int in_place = 0; in_place <= 1; in_place++) {
                    memcpy(mv, m0, n * sizeof(float));
                    memcpy(mv + n, v0, n * sizeof(float));
                    memcpy(in, p0, n * sizeof(float));
                    const int mode0 = optim_set_exact_lanes(mode), simd0 = optim_set_simd(simd);
                    float *dst = in_place ? in : out;
                    volatile float vdiv = div;
                    optim_update(o, dst, in, g, vdiv, 0, n);
                    optim_set_exact_lanes(mode0);
                    optim_set_simd(simd0);
                    for (size_t i = 0; i < n; i++) {
                        const int finite = isfinite(p0[i]) && isfinite(g[i]) && isfinite(m0[i]) && isfinite(v0[i]);
                        const float got[3] = { dst[i], mv[i], mv[n + i] }, want[3] = { q[i], m[i], v[i] };
                        for (int j = 0; j < 3; j++)
                            if (memcmp(&got[j], &want[j], sizeof got[j]) != 0 && (finite || !same_float(got[j], want[j])))
                                fail_msg("round %d, lane %zu, %s, mode %d, simd %d (%s), in place %d: optimiser %a, "
                                         "formula %a (θ %a g %a m %a v %a; β %a %a lr %a eps %a wd %a clip %a div %a, "
                                         "%d steps)",
                                         round, i, j == 0 ? "theta" : j == 1 ? "m" : "v", mode, simd, optim_simd_name(),
                                         in_place, (double)got[j], (double)want[j], (double)p0[i], (double)g[i],
                                         (double)m0[i], (double)v0[i], (double)cfg.beta1, (double)cfg.beta2,
                                         (double)cfg.lr, (double)cfg.eps, (double)cfg.weight_decay, (double)cfg.clip,
                                         (double)div, steps);
                        checked++;
                    }
                }
        optim_destroy(o);
    }
    print_message("%zu lanes checked\n", checked);
}

/* SGD with momentum, weight decay and a clip, against its formula (optim.h),
 * in place and into another buffer in turn. */
static void test_sgd_is_its_formula(void **state)
{
    (void)state;
    ls_config cfg;
    ls_err err = { { 0 } };
    assert_int_equal(config_defaults(&cfg, "teacher", "mlp", &err), LS_OK);
    const char *set[][2] = { { "optimizer", "sgd" }, { "lr", "0.05" }, { "momentum", "0.9" },
                             { "weight_decay", "0.01" }, { "clip", "2" } };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        assert_int_equal(config_set(&cfg, set[i][0], set[i][1], 0, &err), LS_OK);
    enum { N = 67, STEPS = 300 };
    optim *o;
    assert_int_equal(optim_create(&o, &cfg, N, &err), LS_OK);
    float pbuf[2][N], q[N], u[N] = { 0 }, g[N];
    float *p = pbuf[0];
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = q[i] = (float)(int32_t)(x >> 40) * 0x1p-24f;
    }
    memset(pbuf[1], 0xff, sizeof pbuf[1]);
    const float lr = cfg.lr, mu = cfg.momentum, wd = cfg.weight_decay, c = cfg.clip;
    for (int t = 1; t <= STEPS; t++) {
        for (size_t i = 0; i < N; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const uint32_t r = (uint32_t)(x >> 32);
            g[i] = (float)(int32_t)r * 0x1p-30f;
            if (r % 89 == 0)
                g[i] = (r & 0x100) ? INFINITY : -0.0f;
        }
        optim_begin_step(o);
        float *next = t % 2 == 0 ? (p == pbuf[0] ? pbuf[1] : pbuf[0]) : p;
        volatile float div = GRAD_DIVS[t % N_GRAD_DIVS];
        optim_update(o, next, p, g, div, 0, N);
        p = next;
        for (size_t i = 0; i < N; i++) {
            float gi = g[i] / div;
            gi = gi > c ? c : gi;
            gi = gi < -c ? -c : gi;
            gi = gi + wd * q[i];
            u[i] = mu * u[i] + gi;
            q[i] = q[i] - lr * u[i];
            if (!same_float(p[i], q[i]))
                fail_msg("step %d, element %zu: optimiser %a, formula %a", t, i, (double)p[i], (double)q[i]);
        }
    }
    optim_destroy(o);
}

/* The MLP's finish maps the tree sum to sum / batch, bit for bit, whatever
 * the batch (a multiply by an exact reciprocal would give the same bits for
 * a power-of-two batch; any such shortcut must keep them). Checked here
 * against a real division (the
 * divisor is volatile, so the compiler cannot turn it into a multiply) on
 * random bit patterns (NaNs, infinities and subnormals among them) and on
 * the edges of the subnormal range, for power-of-two batches and others. */
static void test_mlp_finish_is_division(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    ls_config cfg;
    ls_err err = { { 0 } };
    assert_int_equal(config_defaults(&cfg, "teacher", "mlp", &err), LS_OK);
    ls_model *m;
    assert_int_equal(model_create(&m, &cfg, d, &err), LS_OK);
    const size_t n = m->info.finish_units;
    assert_int_equal(n, m->info.n_params);
    assert_true(n >= 64);
    uint32_t *bits = malloc(n * sizeof(uint32_t));
    float *sum = malloc(n * sizeof(float)), *grad = malloc(n * sizeof(float));
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bits[i] = (uint32_t)(x >> 32);
    }
    const uint32_t edges[] = { 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x00800001u, 0x01000000u, 0x0C000000u,
                               0x0C7FFFFFu, 0x7F7FFFFFu, 0x7F800000u, 0x7FC00001u, 0x7F800001u, 0x80000000u,
                               0x80000001u, 0x80800000u, 0x8C000001u, 0xFF800000u, 0xFFC12345u, 0x3F800000u };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        bits[i] = edges[i];
    memcpy(sum, bits, n * sizeof(float));
    const size_t batches[] = { 1, 2, 64, 128, 4096, (size_t)1 << 24, 3, 37, 300, ((size_t)1 << 24) + 2 };
    for (size_t k = 0; k < sizeof batches / sizeof batches[0]; k++) {
        const size_t B = batches[k];
        m->desc->finish(m->self, sum, B, grad, 0, n / 3);   /* in two ranges, as threads would */
        m->desc->finish(m->self, sum, B, grad, n / 3, n);
        volatile float divisor = (float)B;
        for (size_t i = 0; i < n; i++) {
            const float want = sum[i] / divisor;
            if (memcmp(&grad[i], &want, sizeof want) != 0) {
                uint32_t g, w;
                memcpy(&g, &grad[i], sizeof g);
                memcpy(&w, &want, sizeof w);
                fail_msg("batch %zu: finish(0x%08x) = 0x%08x, division gives 0x%08x", B, (unsigned)bits[i],
                         (unsigned)g, (unsigned)w);
            }
        }
    }
    free(bits);
    free(sum);
    free(grad);
    model_destroy(m);
    dataset_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_finish_is_division),
        cmocka_unit_test(test_adamw_is_its_formula),
        cmocka_unit_test(test_adamw_tiny_operands),
        cmocka_unit_test(test_adamw_random_operands),
        cmocka_unit_test(test_sgd_is_its_formula),
        cmocka_unit_test(test_teacher),
        cmocka_unit_test(test_fashion),
        cmocka_unit_test(test_ca),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
