/* test_linear.c — the `linear` model (engine/models/linear/model_linear.c): its leaf
 * gradient against a double-precision softmax regression written here from
 * the formula (libm exp and log), the leaf modes bit for bit, and training
 * at 1, 2, 3 and 8 threads to one trajectory. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/core/config.h"
#include "engine/data/dataset.h"
#include "engine/core/model.h"
#include "engine/core/train.h"
#include "engine/tasks/teacher.h"
#include "record/hash.h"

typedef struct {
    ls_config cfg;
    ls_dataset *data;
    ls_model *m;
    float *params;
    void *scratch;
} fixture;

static void make(fixture *f, const char *batch, const char *leaf)
{
    ls_err err;
    assert_int_equal(teacher_make(&f->data, &err), LS_OK);
    assert_int_equal(config_defaults(&f->cfg, "teacher", "linear", &err), LS_OK);
    assert_int_equal(config_set(&f->cfg, "batch", batch, 0, &err), LS_OK);
    assert_int_equal(config_set(&f->cfg, "leaf", leaf, 0, &err), LS_OK);
    if (model_create(&f->m, &f->cfg, f->data, &err) != LS_OK)
        fail_msg("model_create: %s", err.msg);
    f->params = malloc(f->m->info.n_params * sizeof(float));
    f->m->desc->init(f->m->self, f->params, 7);
    /* Away from the init's small values so every class matters. */
    for (size_t i = 0; i < f->m->info.n_params; i++)
        f->params[i] += (float)((int)(i * 37 % 11) - 5) / 8.0f;
    f->scratch = aligned_alloc(64, (f->m->info.scratch_bytes + 63) / 64 * 64);
}

static void unmake(fixture *f)
{
    free(f->scratch);
    free(f->params);
    model_destroy(f->m);
    dataset_destroy(f->data);
}

/* The reference: summed loss and gradient of samples ids[0..n) in double. */
static double reference(const ls_dataset *d, const float *params, const uint32_t *ids, size_t n, double *grad)
{
    const size_t D = d->train.dim, K = d->n_classes;
    memset(grad, 0, (D * K + K) * sizeof *grad);
    double loss = 0;
    for (size_t s = 0; s < n; s++) {
        const float *x = d->train.xf + (size_t)ids[s] * D;
        const unsigned y = d->train.y[ids[s]];
        double z[16] = { 0 }, p[16] = { 0 }, S = 0, m = -INFINITY;
        for (size_t k = 0; k < K; k++) {
            z[k] = params[D * K + k];
            for (size_t i = 0; i < D; i++)
                z[k] += (double)x[i] * params[i * K + k];
            m = fmax(m, z[k]);
        }
        for (size_t k = 0; k < K; k++)
            S += p[k] = exp(z[k] - m);
        loss += log(S) - (z[y] - m);
        for (size_t k = 0; k < K; k++) {
            const double dz = p[k] / S - (k == y);
            for (size_t i = 0; i < D; i++)
                grad[i * K + k] += (double)x[i] * dz;
            grad[D * K + k] += dz;
        }
    }
    return loss;
}

static void test_gradient(void **state)
{
    (void)state;
    fixture f;
    make(&f, "40", "16");
    uint32_t ids[40];
    for (uint32_t i = 0; i < 40; i++)
        ids[i] = i * 97 % 2048;
    ls_batch b = { f.data, ids, 40, 1, 7 };
    const size_t np = f.m->info.n_params;
    assert_int_equal(f.m->info.leaves, 3);
    float *buf = malloc(np * sizeof *buf);
    double *want = malloc(np * sizeof *want);
    for (size_t leaf = 0; leaf < 3; leaf++) {
        const size_t first = leaf * 16, n = leaf == 2 ? 8 : 16;
        const double loss = f.m->desc->leaf(f.m->self, f.params, &b, leaf, buf, LS_LEAF_WRITE, f.scratch);
        const double ref = reference(f.data, f.params, ids + first, n, want);
        assert_true(fabs(loss - ref) <= 1e-5 * fabs(ref) + 1e-6);
        double worst = 0;
        for (size_t i = 0; i < np; i++)
            worst = fmax(worst, fabs((double)buf[i] - want[i]));
        if (worst > 1e-5)
            fail_msg("leaf %zu: gradient differs from the double reference by %g", leaf, worst);
    }
    free(want);
    free(buf);
    unmake(&f);
}

/* ADD mode: buf + (the leaf alone), element by element, bit for bit. */
static void test_leaf_modes(void **state)
{
    (void)state;
    fixture f;
    make(&f, "40", "16");
    uint32_t ids[40];
    for (uint32_t i = 0; i < 40; i++)
        ids[i] = 2047 - i * 13;
    ls_batch b = { f.data, ids, 40, 1, 7 };
    const size_t np = f.m->info.n_params;
    float *alone = malloc(np * sizeof *alone), *base = malloc(np * sizeof *base);
    float *added = malloc(np * sizeof *added), *want = malloc(np * sizeof *want);
    for (size_t i = 0; i < np; i++)
        base[i] = (float)i / 3.0f - 7.0f;
    const double l1 = f.m->desc->leaf(f.m->self, f.params, &b, 1, alone, LS_LEAF_WRITE, f.scratch);
    memcpy(added, base, np * sizeof *added);
    const double l2 = model_leaf(f.m, f.params, &b, 1, added, LS_LEAF_ADD, f.scratch);   /* the engine's add */
    for (size_t i = 0; i < np; i++)
        want[i] = base[i] + alone[i];
    assert_memory_equal(added, want, np * sizeof *want);
    assert_memory_equal(&l1, &l2, sizeof l1);
    free(alone);
    free(base);
    free(added);
    free(want);
    unmake(&f);
}

static void test_threads(void **state)
{
    (void)state;
    static const int threads[] = { 1, 2, 3, 8 };
    uint64_t first = 0;
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    for (size_t i = 0; i < 4; i++) {
        ls_config cfg;
        ls_err err;
        assert_int_equal(config_defaults(&cfg, "teacher", "linear", &err), LS_OK);
        assert_int_equal(config_set(&cfg, "batch", "37", 0, &err), LS_OK);
        assert_int_equal(config_set(&cfg, "leaf", "16", 0, &err), LS_OK);
        trainer *t;
        if (trainer_create(&t, &cfg, threads[i], d, &err) != LS_OK)
            fail_msg("trainer_create: %s", err.msg);
        char text[CONFIG_TEXT_MAX];
        config_text(&cfg, text, sizeof text);
        uint64_t traj = hash_traj0(text, hash_params(trainer_params(t), trainer_n_params(t)));
        for (int s = 0; s < 20; s++) {
            double loss;
            assert_int_equal(trainer_step(t, &loss, &err), LS_OK);
            traj = hash_traj_next(traj, hash_params(trainer_params(t), trainer_n_params(t)), loss);
        }
        int busy = 0;
        for (int w = 0; w < threads[i]; w++)
            busy += trainer_worker_leaves(t)[w] > 0;
        if (threads[i] > 1)
            assert_true(busy >= 2);
        if (i == 0)
            first = traj;
        assert_true(traj == first);
        trainer_destroy(t);
    }
    dataset_destroy(d);
}

/* The named tensors tile θ in order, and the scores' argmax (lowest index
 * on ties) counts as many right answers on the test split as eval does,
 * for every model that gives scores. */
static void test_tensors_and_scores(void **state)
{
    (void)state;
    static const char *models[] = { "linear", "mlp" };
    ls_dataset *d;
    assert_int_equal(teacher_make(&d, NULL), LS_OK);
    for (size_t mi = 0; mi < 2; mi++) {
        ls_config cfg;
        ls_err err;
        assert_int_equal(config_defaults(&cfg, "teacher", models[mi], &err), LS_OK);
        ls_model *m;
        assert_int_equal(model_create(&m, &cfg, d, &err), LS_OK);
        const ls_model_info *in = &m->info;
        assert_non_null(in->tensors);
        size_t at = 0;
        for (size_t t = 0; t < in->n_tensors; t++) {
            assert_int_equal(in->tensors[t].offset, at);
            size_t n = 1;
            for (size_t k = 0; k < in->tensors[t].ndim; k++)
                n *= in->tensors[t].shape[k];
            at += n;
        }
        assert_int_equal(at, in->n_params);
        assert_int_equal(in->inputs, d->test.dim);
        assert_int_equal(in->outputs, d->n_classes);
        float *params = malloc(in->n_params * sizeof *params);
        m->desc->init(m->self, params, 5);
        if (m->desc->prepare != NULL || m->info.prepare_parts > 0)
            assert_int_equal(model_prepare(m, params, NULL, NULL, &err), LS_OK);
        void *scratch = aligned_alloc(64, (in->scratch_bytes + 63) / 64 * 64);
        const size_t N = d->test.n;
        float *x = malloc(N * in->inputs * sizeof *x), *sc = malloc(N * in->outputs * sizeof *sc);
        uint32_t *ids = malloc(N * sizeof *ids);
        for (size_t i = 0; i < N; i++)
            ids[i] = (uint32_t)i;
        dataset_gather(NULL, &d->test, ids, N, x, NULL);
        m->desc->scores(m->self, params, x, N, sc, scratch);
        size_t right = 0;
        for (size_t i = 0; i < N; i++) {
            size_t best = 0;
            for (size_t k = 1; k < in->outputs; k++)
                if (sc[i * in->outputs + k] > sc[i * in->outputs + best])
                    best = k;
            right += best == d->test.y[i];
        }
        size_t want = 0;
        for (size_t first = 0; first < N; first += in->eval_chunk)
            want += m->desc->eval(m->self, params, d, first, N - first < in->eval_chunk ? N - first : in->eval_chunk,
                                  scratch);
        assert_int_equal(right, want);
        assert_true(right > 0 && right < N);   /* a real mix, not a degenerate count */
        free(ids);
        free(x);
        free(sc);
        free(scratch);
        free(params);
        model_destroy(m);
    }
    dataset_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient),
        cmocka_unit_test(test_leaf_modes),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_tensors_and_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
