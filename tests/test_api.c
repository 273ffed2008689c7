/* test_api.c — the model author's public API (include/lockstep.h):
 *   - ls_rng_* and ls_exp / ls_log / ... give the bits of the engine's own
 *     functions (engine/num/rng.h, engine/num/dmath.h), compared with memcmp
 *     over many inputs, special values included, and a known answer;
 *   - the size field: a descriptor or options of a wrong size (0, or one the
 *     library does not know) is refused with LS_EINVAL naming the struct and
 *     both sizes; every built-in descriptor carries the right one;
 *   - ls_session_predict: the scores do not depend on the chunking or the
 *     session's thread count, their argmax reproduces test_acc exactly, and
 *     predicting between steps leaves the trajectory as it was; a model
 *     without scores is refused;
 *   - named tensors: they tile θ, point into it, and are found by name;
 *   - ls_equiv: identical runs at 1, 2 and 3 threads, with and without a
 *     record; a repeated thread count or a taken name refused before
 *     anything is recorded; a model that breaks the contract is caught.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/core/api_size.h"
#include "engine/num/dmath.h"
#include "engine/num/rng.h"
#include "include/lockstep.h"

#define N_MATH 200000

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/lockstep-test-api-XXXXXX");
    return mkdtemp(g_dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *path_in_dir(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", g_dir, name);
    return buf;
}

/* ---- random numbers and exp/log: the engine's bits ------------------------- */

/* Address i of a test stream: every word varied, small and large. */
static void address(uint64_t i, uint64_t *seed, uint32_t *purpose, uint64_t *a, uint64_t *b, uint64_t *c)
{
    uint64_t h = rng_mix64(i + 1);
    *seed = (i & 3) == 0 ? i : h;
    *purpose = (uint32_t)(i % 11 == 0 ? LS_RNG_USER + i % 7 : i % 9);
    *a = i & 0xff;
    *b = (i & 1) ? rng_mix64(h) : i >> 3;
    *c = (i % 5 == 0) ? UINT64_MAX - i : i % 13;
}

static void test_rng_is_the_engines(void **state)
{
    (void)state;
    const size_t n = 100000;
    uint64_t *pu = malloc(n * sizeof *pu), *iu = malloc(n * sizeof *iu);
    float *pf = malloc(2 * n * sizeof *pf), *jf = malloc(2 * n * sizeof *jf);
    double *pd = malloc(n * sizeof *pd), *id = malloc(n * sizeof *id);
    uint64_t *pb = malloc(n * sizeof *pb), *ib = malloc(n * sizeof *ib);
    assert_true(pu && iu && pf && jf && pd && id && pb && ib);
    for (size_t i = 0; i < n; i++) {
        uint64_t seed, a, b, c;
        uint32_t p;
        address(i, &seed, &p, &a, &b, &c);
        const uint64_t bound = i % 3 == 0 ? (uint64_t)i + 1 : rng_mix64(i) >> (i % 64);
        pu[i] = ls_rng_u64(seed, p, a, b, c);
        iu[i] = rng_u64(seed, p, a, b, c);
        pf[2 * i] = ls_rng_uniformf(seed, p, a, b, c);
        jf[2 * i] = rng_uniformf(seed, p, a, b, c);
        pf[2 * i + 1] = ls_rng_normalf(seed, p, a, b, c);
        jf[2 * i + 1] = rng_normalf(seed, p, a, b, c);
        pd[i] = ls_rng_uniform(seed, p, a, b, c);
        id[i] = rng_uniform(seed, p, a, b, c);
        pb[i] = ls_rng_below(seed, p, a, b, c, bound);
        ib[i] = rng_below(seed, p, a, b, c, bound);
    }
    assert_memory_equal(pu, iu, n * sizeof *pu);
    assert_memory_equal(pf, jf, 2 * n * sizeof *pf);
    assert_memory_equal(pd, id, n * sizeof *pd);
    assert_memory_equal(pb, ib, n * sizeof *pb);
    /* A known answer (tests/test_rng.c, from an independent implementation):
     * the public function is pinned as the engine's is. */
    assert_true(ls_rng_u64(0, LS_RNG_INIT, 0, 0, 0) == UINT64_C(0x902714a85994d302));
    assert_true(ls_rng_u64(42, 2, 3, 7, 0) == UINT64_C(0x9aca4768b8a1b5b0));
    /* Permutations, of several lengths. */
    for (size_t len = 0; len < 300; len += 7) {
        uint32_t p1[300], p2[300];
        ls_rng_permutation(p1, len, 99 + len, LS_RNG_USER, len);
        rng_permutation(p2, len, 99 + len, LS_RNG_USER, len);
        assert_memory_equal(p1, p2, len * sizeof p1[0]);
    }
    free(pu), free(iu), free(pf), free(jf), free(pd), free(id), free(pb), free(ib);
}

static double double_of(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Input i: special values first, then any bit pattern, then the ranges the
 * functions are used in (a logit difference, a sum of exps, an activation). */
static double math_input(size_t i)
{
    static const double special[] = { 0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 709.7, 709.9, -745.1, -745.3, -700.0,
                                      1e-310, 4.9e-324, 1.7976931348623157e308, 1e300, -1e300 };
    const size_t ns = sizeof special / sizeof special[0];
    if (i < ns)
        return special[i];
    if (i == ns)
        return double_of(UINT64_C(0x7ff0000000000000));   /* +inf */
    if (i == ns + 1)
        return double_of(UINT64_C(0xfff0000000000000));   /* -inf */
    if (i == ns + 2)
        return double_of(UINT64_C(0x7ff8000000000000));   /* NaN */
    const uint64_t h = rng_u64(7, RNG_TEST, i, 0, 0);
    switch (i % 4) {
    case 0: return double_of(h);
    case 1: return (rng_uniform(7, RNG_TEST, i, 1, 0) - 0.5) * 1500.0;
    case 2: return rng_uniform(7, RNG_TEST, i, 2, 0) * 64.0;
    default: return (rng_uniform(7, RNG_TEST, i, 3, 0) - 0.5) * 40.0;
    }
}

static void test_math_is_the_engines(void **state)
{
    (void)state;
    double *pd = malloc(2 * N_MATH * sizeof *pd), *id = malloc(2 * N_MATH * sizeof *id);
    float *pf = malloc(4 * N_MATH * sizeof *pf), *jf = malloc(4 * N_MATH * sizeof *jf);
    assert_true(pd && id && pf && jf);
    for (size_t i = 0; i < N_MATH; i++) {
        const double x = math_input(i);
        pd[2 * i] = ls_exp(x);
        id[2 * i] = dmath_exp(x);
        pd[2 * i + 1] = ls_log(x);
        id[2 * i + 1] = dmath_log(x);
        const float f = i % 3 == 0 ? float_of((uint32_t)rng_u64(8, RNG_TEST, i, 0, 0)) : (float)x;
        pf[4 * i] = ls_expf(f);
        jf[4 * i] = dmath_expf(f);
        pf[4 * i + 1] = ls_logf(f);
        jf[4 * i + 1] = dmath_logf(f);
        pf[4 * i + 2] = ls_sigmoidf(f);
        jf[4 * i + 2] = dmath_sigmoidf(f);
        pf[4 * i + 3] = ls_tanhf(f);
        jf[4 * i + 3] = dmath_tanhf(f);
    }
    assert_memory_equal(pd, id, 2 * N_MATH * sizeof *pd);
    assert_memory_equal(pf, jf, 4 * N_MATH * sizeof *pf);
    /* The edges the header states. */
    assert_true(ls_exp(0.0) == 1.0);
    assert_true(ls_exp(-746.0) == 0.0);
    assert_true(ls_exp(710.0) > 1.7976931348623157e308);
    assert_true(ls_log(1.0) == 0.0);
    assert_true(ls_log(0.0) < -1.7976931348623157e308);
    assert_true(ls_log(-1.0) != ls_log(-1.0));
    free(pd), free(id), free(pf), free(jf);
}

/* ---- the size field ------------------------------------------------------------ */

/* err names the struct and both sizes. */
static void expect_size_message(const ls_err *err, const char *type, size_t got, size_t known)
{
    char num[32];
    if (strstr(err->msg, type) == NULL)
        fail_msg("'%s' does not name %s", err->msg, type);
    snprintf(num, sizeof num, "%zu", known);
    if (strstr(err->msg, num) == NULL)
        fail_msg("'%s' does not give the library's size %s", err->msg, num);
    snprintf(num, sizeof num, "%zu", got);
    if (strstr(err->msg, num) == NULL)
        fail_msg("'%s' does not give the caller's size %s", err->msg, num);
}

static void test_size_refused(void **state)
{
    (void)state;
    ls_err err;
    static ls_model_desc m;
    m = *ls_model_find("mlp");
    m.name = "api-sized";
    m.tasks = "teacher";
    const size_t wrong[] = { 0, sizeof m - sizeof(void *), sizeof m + 8, 1 };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        m.size = wrong[i];
        err.msg[0] = '\0';
        assert_int_equal(ls_register_model(&m, &err), LS_EINVAL);
        expect_size_message(&err, "ls_model_desc", wrong[i], sizeof m);
        assert_null(ls_model_find("api-sized"));
    }
    static ls_task_desc t;
    t = *ls_task_find("teacher");
    t.name = "api-sized";
    /* sizeof t - sizeof(void *) is 1.0's layout (before figures), which
     * registers: one pointer less than that stands in for it. */
    const size_t wrong_task[] = { 0, LS_TASK_DESC_SIZE_1_0 - sizeof(void *), sizeof t + 8, 1 };
    for (size_t i = 0; i < sizeof wrong_task / sizeof wrong_task[0]; i++) {
        t.size = wrong_task[i];
        assert_int_equal(ls_register_task(&t, &err), LS_EINVAL);
        expect_size_message(&err, "ls_task_desc", wrong_task[i], sizeof t);
        assert_null(ls_task_find("api-sized"));
    }
    /* Defaults: one key=value a line; two on one line (space-separated, as a
     * table prints them) or a line without '=' is named at registration. */
    {
        static ls_task_desc bad;
        bad = *ls_task_find("teacher");
        bad.name = "api-defaults";
        const ls_task_defaults two[] = { { "*", "batch=20 lr=0.1\n" }, { NULL, NULL } };
        const ls_task_defaults noeq[] = { { "mlp", "batch=20\nhidden\n" }, { NULL, NULL } };
        const ls_task_defaults good[] = { { "*", "batch=20\nlr=0.1\n" }, { "mlp", "hidden=8" }, { NULL, NULL } };
        bad.defaults = two;
        assert_int_equal(ls_register_task(&bad, &err), LS_EINVAL);
        assert_non_null(strstr(err.msg, "line 1 'batch=20 lr=0.1'"));
        bad.defaults = noeq;
        assert_int_equal(ls_register_task(&bad, &err), LS_EINVAL);
        assert_non_null(strstr(err.msg, "defaults for mlp, line 2 'hidden'"));
        assert_null(ls_task_find("api-defaults"));
        bad.defaults = good;
        assert_int_equal(ls_register_task(&bad, &err), LS_OK);
    }
    /* With the right size the same descriptors register. */
    m.size = sizeof m;
    assert_int_equal(ls_register_model(&m, &err), LS_OK);
    t.size = sizeof t;
    t.models = "api-sized";
    assert_int_equal(ls_register_task(&t, &err), LS_OK);
    /* A task descriptor of 1.0's layout registers too; its figures (past
     * its end) read as NULL, whatever follows it in the caller's memory. */
    static ls_task_desc t10;
    t10 = t;
    t10.name = "api-sized-10";
    t10.size = LS_TASK_DESC_SIZE_1_0;
    t10.figures = (void (*)(const ls_config *, ls_metric *, size_t *))1;
    assert_int_equal(ls_register_task(&t10, &err), LS_OK);
    assert_non_null(ls_task_find("api-sized-10"));
    assert_null(ls_task_find("api-sized-10")->figures);

    /* Session options: NULL is every default; a set size is accepted; 0 and
     * others are not. */
    assert_int_equal(api_size_session_opts(NULL, &err), LS_OK);
    ls_session_opts o = { .size = sizeof(ls_session_opts) };
    assert_int_equal(api_size_session_opts(&o, &err), LS_OK);
    o.size = 0;
    assert_int_equal(api_size_session_opts(&o, &err), LS_EINVAL);
    expect_size_message(&err, "ls_session_opts", 0, sizeof o);
    o.size = sizeof o - 8;
    assert_int_equal(api_size_session_opts(&o, &err), LS_EINVAL);
    expect_size_message(&err, "ls_session_opts", sizeof o - 8, sizeof o);

    /* ls_equiv checks its own size and its sessions' before anything runs. */
    ls_config *cfg;
    assert_int_equal(ls_config_create(&cfg, "teacher", NULL, &err), LS_OK);
    static const int threads[] = { 1, 2 };
    ls_equiv_opts eo = { .size = sizeof(ls_equiv_opts), .threads = threads, .n_threads = 2,
                         .session = { .size = 0, .steps = 2 } };
    static ls_equiv_result res;
    assert_int_equal(ls_equiv(cfg, &eo, &res, &err), LS_EINVAL);
    expect_size_message(&err, "ls_session_opts", 0, sizeof(ls_session_opts));
    assert_int_equal(res.n_runs, 0);
    eo.session.size = sizeof(ls_session_opts);
    eo.size = sizeof eo + 16;
    assert_int_equal(ls_equiv(cfg, &eo, &res, &err), LS_EINVAL);
    expect_size_message(&err, "ls_equiv_opts", sizeof eo + 16, sizeof eo);
    assert_int_equal(res.n_runs, 0);
    ls_config_destroy(cfg);
}

/* Every built-in model and task carries the size of its struct (a size
 * check at registration does not see them: they are in the table already). */
static void test_builtins_sized(void **state)
{
    (void)state;
    size_t models = 0, tasks = 0;
    for (size_t i = 0; ls_model_at(i) != NULL; i++, models++)
        if (ls_model_at(i)->size != sizeof(ls_model_desc))
            fail_msg("model %s: size %zu, not %zu", ls_model_at(i)->name, ls_model_at(i)->size,
                     sizeof(ls_model_desc));
    for (size_t i = 0; ls_task_at(i) != NULL; i++, tasks++)
        if (ls_task_at(i)->size != sizeof(ls_task_desc))
            fail_msg("task %s: size %zu, not %zu", ls_task_at(i)->name, ls_task_at(i)->size, sizeof(ls_task_desc));
    assert_true(models >= 5);
    assert_true(tasks >= 8);
}

/* ---- predict and tensors ---------------------------------------------------------- */

static ls_session *open_teacher(const ls_config *cfg, int threads, const ls_dataset *data)
{
    ls_err err = { "" };
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = threads, .data = data };
    ls_session *s = NULL;
    if (ls_session_open(&s, cfg, &o, &err) != LS_OK)
        fail_msg("open at %d threads: %s", threads, err.msg);
    return s;
}

static void steps(ls_session *s, int n)
{
    ls_err err = { "" };
    for (int i = 0; i < n; i++)
        if (ls_session_step(s, NULL, &err) != LS_OK)
            fail_msg("step: %s", err.msg);
}

static void test_predict(void **state)
{
    (void)state;
    ls_err err = { "" };
    ls_config *cfg;
    assert_int_equal(ls_config_create(&cfg, "teacher", "mlp", &err), LS_OK);
    ls_dataset *data = NULL;
    assert_int_equal(ls_task_find("teacher")->load(cfg, &data, &err), LS_OK);
    assert_non_null(data);
    ls_session *s1 = open_teacher(cfg, 1, data), *s3 = open_teacher(cfg, 3, data);
    steps(s1, 12);
    steps(s3, 12);

    size_t in, outs, in3, outs3;
    assert_int_equal(ls_session_predict_shape(s1, &in, &outs, &err), LS_OK);
    assert_int_equal(ls_session_predict_shape(s3, &in3, &outs3, &err), LS_OK);
    assert_int_equal(in, data->test.dim);
    assert_int_equal(outs, data->n_classes);
    assert_int_equal(in3, in);
    assert_int_equal(outs3, outs);

    const size_t n = data->test.n;
    float *x = malloc(n * in * sizeof *x), *all = malloc(n * outs * sizeof *all);
    float *chunked = malloc(n * outs * sizeof *chunked), *at3 = malloc(n * outs * sizeof *at3);
    uint8_t *y = malloc(n);
    assert_true(x && all && chunked && at3 && y);
    for (size_t i = 0; i < n; i++) {
        uint32_t id = (uint32_t)i;
        ls_dataset_gather(&data->test, &id, 1, x + i * in, y + i);
    }
    /* All at once, in uneven chunks, and from the 3-thread session: one set of bits. */
    assert_int_equal(ls_session_predict(s1, x, n, all, &err), LS_OK);
    for (size_t first = 0, c = 1; first < n; first += c, c = c * 3 % 97 + 1) {
        size_t k = n - first < c ? n - first : c;
        assert_int_equal(ls_session_predict(s1, x + first * in, k, chunked + first * outs, &err), LS_OK);
    }
    assert_int_equal(ls_session_predict(s3, x, n, at3, &err), LS_OK);
    assert_memory_equal(all, chunked, n * outs * sizeof *all);
    assert_memory_equal(all, at3, n * outs * sizeof *all);
    assert_int_equal(ls_session_predict(s1, x, 0, NULL, &err), LS_OK);

    /* The highest score, the lowest index on ties, counts test_acc exactly. */
    size_t correct = 0;
    for (size_t i = 0; i < n; i++) {
        size_t best = 0;
        for (size_t k = 1; k < outs; k++)
            if (all[i * outs + k] > all[i * outs + best])
                best = k;
        correct += best == y[i];
    }
    ls_metric m[LS_MAX_METRICS];
    size_t nm = 0;
    assert_int_equal(ls_session_evaluate(s1, m, &nm, &err), LS_OK);
    assert_true(nm >= 1);
    assert_string_equal(m[0].name, "test_acc");
    assert_true((double)correct / (double)n == m[0].value);

    /* Predicting between steps changes nothing of the run: s1 (predicted
     * at step 12) and s3 (not, since) reach the same trajectory. */
    steps(s1, 8);
    steps(s3, 8);
    ls_session_state a, b;
    ls_session_state_get(s1, &a);
    ls_session_state_get(s3, &b);
    assert_int_equal(a.step, 20);
    assert_true(a.traj_hash == b.traj_hash);
    assert_true(a.param_hash == b.param_hash);

    ls_session_close(s1, LS_OK, NULL);
    ls_session_close(s3, LS_OK, NULL);
    free(x), free(all), free(chunked), free(at3), free(y);
    ls_dataset_destroy(data);
    ls_config_destroy(cfg);
}

static void test_tensors(void **state)
{
    (void)state;
    ls_err err = { "" };
    ls_config *cfg;
    assert_int_equal(ls_config_create(&cfg, "teacher", "mlp", &err), LS_OK);
    ls_session *s = open_teacher(cfg, 2, NULL);
    steps(s, 3);
    size_t n_params;
    const float *params = ls_session_params(s, &n_params);
    size_t n = ls_session_tensor_count(s);
    assert_true(n >= 2);
    size_t next = 0;
    for (size_t i = 0; i < n; i++) {
        ls_tensor_view t;
        assert_int_equal(ls_session_tensor(s, i, &t, &err), LS_OK);
        assert_int_equal(t.offset, next);   /* in order, no gap, no overlap */
        size_t count = 1;
        for (size_t d = 0; d < t.ndim; d++)
            count *= t.shape[d];
        assert_int_equal(t.count, count);
        assert_ptr_equal(t.data, params + t.offset);
        next += t.count;
        ls_tensor_view by_name;
        assert_int_equal(ls_session_tensor_find(s, t.name, &by_name, &err), LS_OK);
        assert_int_equal(by_name.offset, t.offset);
    }
    assert_int_equal(next, n_params);
    ls_tensor_view w1;
    assert_int_equal(ls_session_tensor_find(s, "W1", &w1, &err), LS_OK);
    assert_int_equal(w1.ndim, 2);
    assert_int_equal(ls_session_tensor(s, n, &w1, &err), LS_ENOTFOUND);
    assert_int_equal(ls_session_tensor_find(s, "nosuch", &w1, &err), LS_ENOTFOUND);
    assert_non_null(strstr(err.msg, "nosuch"));
    ls_session_close(s, LS_OK, NULL);

    /* A model without scores nor a tensor table (the logic network, trained
     * here on the teacher task): predict is refused naming the model, θ is
     * one tensor "params". */
    static ls_model_desc logic;
    logic = *ls_model_find("logic");
    logic.name = "api-logic";
    logic.tasks = "teacher";
    assert_int_equal(ls_register_model(&logic, &err), LS_OK);
    ls_config *lc;
    assert_int_equal(ls_config_create(&lc, "teacher", "api-logic", &err), LS_OK);
    s = open_teacher(lc, 1, NULL);
    size_t in, outs;
    assert_int_equal(ls_session_predict_shape(s, &in, &outs, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "api-logic"));
    float x[1] = { 0 }, o[1];
    assert_int_equal(ls_session_predict(s, x, 1, o, &err), LS_EINVAL);
    params = ls_session_params(s, &n_params);
    ls_tensor_view t;
    assert_int_equal(ls_session_tensor_count(s), 1);
    assert_int_equal(ls_session_tensor(s, 0, &t, &err), LS_OK);
    assert_string_equal(t.name, "params");
    assert_int_equal(t.ndim, 1);
    assert_int_equal(t.count, n_params);
    assert_ptr_equal(t.data, params);
    ls_session_close(s, LS_OK, NULL);
    ls_config_destroy(lc);
    ls_config_destroy(cfg);
}

/* ---- ls_equiv ------------------------------------------------------------------ */

static void test_equiv(void **state)
{
    (void)state;
    ls_err err = { "" };
    ls_config *cfg;
    assert_int_equal(ls_config_create(&cfg, "teacher", NULL, &err), LS_OK);
    static const int threads[] = { 1, 2, 3 };
    static ls_equiv_result res;

    /* No record: compared by the trajectory hash. */
    ls_equiv_opts eo = { .size = sizeof(ls_equiv_opts), .threads = threads, .n_threads = 3,
                         .session = { .size = sizeof(ls_session_opts), .steps = 6 } };
    assert_int_equal(ls_equiv(cfg, &eo, &res, &err), LS_OK);
    assert_int_equal(res.n_runs, 3);
    assert_true(res.equal);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(res.runs[i].threads, threads[i]);
        assert_int_equal(res.runs[i].steps, 6);
        assert_int_equal(res.runs[i].run_id, -1);
        assert_true(res.runs[i].same);
        assert_true(res.runs[i].traj_hash == res.runs[0].traj_hash);
        assert_true(res.runs[i].n_metrics >= 1);
    }
    const uint64_t traj = res.runs[0].traj_hash;

    /* Recorded and named: each run verified against the first at every step. */
    char db[512];
    eo.session.db = path_in_dir("equiv.db", db, sizeof db);
    eo.session.name = "eq";
    assert_int_equal(ls_equiv(cfg, &eo, &res, &err), LS_OK);
    assert_true(res.equal);
    assert_true(res.runs[0].traj_hash == traj);
    for (size_t i = 1; i < 3; i++) {
        assert_true(res.runs[i].run_id > res.runs[i - 1].run_id);
        assert_true(res.runs[i].verdict.equal);
        assert_true(res.runs[i].verdict.same_config);
        assert_int_equal(res.runs[i].verdict.steps, 7);
    }
    ls_verdict v;
    assert_int_equal(ls_verify(db, "eq-t1", "eq-t3", &v, &err), LS_OK);
    assert_true(v.equal);

    /* Refused before anything runs: the names taken, a count repeated. */
    assert_int_equal(ls_equiv(cfg, &eo, &res, &err), LS_EEXIST);
    assert_non_null(strstr(err.msg, "eq-t1"));
    assert_int_equal(res.n_runs, 0);
    static const int twice[] = { 2, 1, 2 };
    eo.threads = twice;
    eo.session.name = "other";
    assert_int_equal(ls_equiv(cfg, &eo, &res, &err), LS_EINVAL);
    assert_int_equal(res.n_runs, 0);
    assert_int_equal(ls_verify(db, "other-t2", "other-t1", &v, &err), LS_ENOTFOUND);

    /* Stopped: the first run ends interrupted, nothing after it. */
    volatile int stop = 1;
    eo.threads = threads;
    eo.session.db = NULL;
    eo.stop = &stop;
    assert_int_equal(ls_equiv(cfg, &eo, &res, &err), LS_EINTR);
    assert_int_equal(res.n_runs, 1);
    assert_int_equal(res.runs[0].status, LS_EINTR);
    assert_false(res.equal);
    ls_config_destroy(cfg);
}

/* A model that breaks the contract: θ_0 depends on how many runs came
 * before in this process, so the runs of one config differ. */
static unsigned g_inits;
static void impure_init(const void *self, float *params, uint64_t seed)
{
    ls_model_find("mlp")->init(self, params, seed);
    params[0] += (float)(g_inits++) * 0.25f;
}

static void test_equiv_catches_a_difference(void **state)
{
    (void)state;
    ls_err err = { "" };
    static ls_model_desc impure;
    impure = *ls_model_find("mlp");
    impure.name = "api-impure";
    impure.tasks = "teacher";
    impure.init = impure_init;
    assert_int_equal(ls_register_model(&impure, &err), LS_OK);
    ls_config *cfg;
    assert_int_equal(ls_config_create(&cfg, "teacher", "api-impure", &err), LS_OK);
    static const int threads[] = { 1, 2 };
    char db[512];
    ls_equiv_opts eo = { .size = sizeof(ls_equiv_opts), .threads = threads, .n_threads = 2,
                         .session = { .size = sizeof(ls_session_opts), .steps = 4,
                                      .db = path_in_dir("impure.db", db, sizeof db), .name = "imp" } };
    static ls_equiv_result res;
    assert_int_equal(ls_equiv(cfg, &eo, &res, &err), LS_OK);   /* a verdict, not an error */
    assert_int_equal(res.n_runs, 2);
    assert_false(res.equal);
    assert_true(res.runs[0].same);
    assert_false(res.runs[1].same);
    assert_false(res.runs[1].verdict.equal);
    assert_int_equal(res.runs[1].verdict.first_diff, 0);   /* θ_0 already differs */
    ls_config_destroy(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_is_the_engines),
        cmocka_unit_test(test_math_is_the_engines),
        cmocka_unit_test(test_size_refused),
        cmocka_unit_test(test_builtins_sized),
        cmocka_unit_test(test_predict),
        cmocka_unit_test(test_tensors),
        cmocka_unit_test(test_equiv),
        cmocka_unit_test(test_equiv_catches_a_difference),
    };
    return cmocka_run_group_tests(tests, setup, teardown) ? 1 : 0;
}
