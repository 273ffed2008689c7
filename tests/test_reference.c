/* test_reference.c — a deliberately simple sequential trainer, written apart
 * from the engine: it uses only the model's leaf and finish functions and
 * the optimiser step — no pool, no reduce/ — computes every leaf into its own
 * buffer and sums them with its own recursive tree, straight from the
 * definition in DESIGN.md §2.2. The engine at any thread count must produce
 * the same parameters at every step, bit for bit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/model.h"
#include "../engine/optim.h"
#include "../engine/rng.h"
#include "../engine/train.h"
#include "../record/hash.h"

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

/* Trains `steps` steps; params_out[s] receives θ_s (s = 0..steps), losses[s-1] the loss. */
static void reference_run(ls_config cfg, const ls_dataset *d, int steps, float **params_out, double *losses)
{
    cfg.data_hash = d->hash;
    size_t B = cfg.batch, L = cfg.leaf < B ? cfg.leaf : B, n_leaves = (B + L - 1) / L;
    ls_model *m;
    assert_int_equal(model_create(&m, &cfg, d, L, NULL), LS_OK);
    optim *opt;
    assert_int_equal(optim_create(&opt, &cfg, m->n_params, NULL), LS_OK);
    float *theta = malloc(m->n_params * sizeof(float));
    float *grad = malloc(m->n_params * sizeof(float));
    void *scratch = aligned_alloc(64, (m->scratch_bytes + 63) / 64 * 64);
    uint32_t *perm = malloc(d->train.n * sizeof(uint32_t));
    uint32_t *ids = malloc(B * sizeof(uint32_t));
    leaves lv = { m->leaf_len, malloc(n_leaves * sizeof(float *)), malloc(n_leaves * sizeof(double)) };
    for (size_t i = 0; i < n_leaves; i++)
        lv.leaf[i] = malloc(m->leaf_len * sizeof(float));

    m->init(m, theta, cfg.seed);
    memcpy(params_out[0], theta, m->n_params * sizeof(float));
    for (int t = 1; t <= steps; t++) {
        /* Data order, DESIGN.md §2.4: slot j takes stream position (t-1)·B + j. */
        for (size_t j = 0; j < B; j++) {
            uint64_t q = (uint64_t)(t - 1) * B + j;
            rng_permutation(perm, d->train.n, cfg.seed, RNG_EPOCH_PERM, q / d->train.n);
            ids[j] = perm[q % d->train.n];
        }
        m->prepare(m, theta);
        for (size_t l = 0; l < n_leaves; l++) {
            size_t first = l * L, count = B - first < L ? B - first : L;
            ls_leaf leaf = { d, ids + first, count, t, first, cfg.seed };
            lv.loss[l] = m->leaf(m, theta, &leaf, lv.leaf[l], 0, scratch);
        }
        double loss;
        float *sum = ref_tree(&lv, 0, n_leaves, &loss);
        if (m->mean_loss)
            loss = loss / (double)B;
        losses[t - 1] = loss;
        m->finish(m, sum, B, grad, 0, m->finish_units);
        optim_begin_step(opt);
        optim_update(opt, theta, grad, 0, m->n_params);
        memcpy(params_out[t], theta, m->n_params * sizeof(float));
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

static void compare_with_engine(const char *task, const ls_dataset *d, const char *batch, const char *leaf,
                                const char *opt, int steps)
{
    ls_config cfg;
    assert_int_equal(config_defaults(&cfg, task, NULL, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "batch", batch, 0, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "leaf", leaf, 0, NULL), LS_OK);
    assert_int_equal(config_set(&cfg, "optimizer", opt, 0, NULL), LS_OK);
    if (strcmp(task, "fashion-mnist") == 0)
        assert_int_equal(config_set(&cfg, "hidden", "32,16", 0, NULL), LS_OK);
    ls_config probe = cfg;
    trainer *t;
    assert_int_equal(trainer_create(&t, &probe, 1, d, NULL), LS_OK);
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
        ls_err err;
        assert_int_equal(trainer_create(&t, &c, threads[ti], d, &err), LS_OK);
        assert_memory_equal(trainer_params(t), ref[0], n * sizeof(float));
        for (int s = 1; s <= steps; s++) {
            double loss;
            assert_int_equal(trainer_step(t, &loss, &err), LS_OK);
            if (memcmp(&loss, &losses[s - 1], sizeof loss) != 0 ||
                memcmp(trainer_params(t), ref[s], n * sizeof(float)) != 0)
                fail_msg("%s batch %s leaf %s %s: engine at %d threads differs from the reference at step %d",
                         task, batch, leaf, opt, threads[ti], s);
        }
        trainer_destroy(t);
    }
    printf("%s batch %s leaf %s %s: engine (threads 1,3,8) == simple reference for %d steps\n", task, batch, leaf,
           opt, steps);
    for (int s = 0; s <= steps; s++)
        free(ref[s]);
    free(ref);
    free(losses);
}

static void test_teacher(void **state)
{
    (void)state;
    ls_dataset *d;
    assert_int_equal(dataset_make_teacher(&d, NULL), LS_OK);
    compare_with_engine("teacher", d, "20", "4", "adamw", 6);
    compare_with_engine("teacher", d, "37", "1", "sgd", 6);
    compare_with_engine("teacher", d, "5", "8", "adamw", 6);
    /* Many steps at a large batch: crosses epoch boundaries (2048 samples). */
    compare_with_engine("teacher", d, "300", "16", "adamw", 15);
    dataset_destroy(d);
}

static void test_fashion(void **state)
{
    (void)state;
    ls_dataset *d;
    ls_err err;
    assert_int_equal(dataset_load_fashion(&d, trainer_data_dir(), &err), LS_OK);
    compare_with_engine("fashion-mnist", d, "64", "8", "adamw", 4);
    compare_with_engine("fashion-mnist", d, "13", "4", "sgd", 4);
    dataset_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_teacher),
        cmocka_unit_test(test_fashion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
