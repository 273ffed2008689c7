/* test_optim.c — learning-rate schedules, global-norm clipping, weight-decay
 * groups and starting weights (--init).
 *
 *   - dmath_cospi at the points where cos(πx) is exact, and within an ulp
 *     of values mpmath computed at 200 bits (the table below);
 *   - optim_lr_at at hand-derived points (the end of the warmup, the
 *     cosine's midpoint where cos = 0 exactly, the end of the decay, the
 *     step schedule's powers of 1/2), and at every step of a few hundred
 *     against Python's float64 math (math.cos, **), rounded to binary32
 *     by struct: the same bits;
 *   - clip_norm on a hand-built gradient of two chunks (3 and 4: norm 5),
 *     and decay groups on a hand-built θ;
 *   - the canonical text of a config that sets none of the new keys has
 *     none of them;
 *   - whole runs with a schedule, clip_norm, decay_groups=weights and
 *     --init: trajectories equal at threads 1, 2, 3 and 8, a resume at
 *     another thread count and an audit equal to the uninterrupted run
 *     (compared between runs, never against stored hashes); clip_norm
 *     larger than any norm gives the parameters of no clip_norm at every
 *     step, a small one changes them;
 *   - `lockstep export RUN --weights F.safetensors` then `train --init F`:
 *     step 0's param_hash is the exported step's; other weights written
 *     under that path later make reopening the run a mismatch.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/core/config.h"
#include "engine/core/optim.h"
#include "engine/num/dmath.h"
#include "include/lockstep.h"
#include "tests/proc_util.h"

#define PYTHON "/usr/bin/python3"
#define DEADLINE 300.0

static char g_bin[PATH_MAX];

static int64_t dbits(double x)
{
    int64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static uint32_t fbits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* ---- dmath_cospi ---------------------------------------------------------- */

/* x, cos(πx) correctly rounded (mpmath, 200 bits). */
static const double COSPI[][2] = {
    { 0x1.0624dd2f1a9fcp-10, 0x1.ffff5a6a681ffp-1 },  { 0x1.999999999999ap-4, 0x1.e6f0e134454ffp-1 },
    { 0x1.999999999999ap-3, 0x1.9e3779b97f4a8p-1 },   { 0x1.0000000000000p-2, 0x1.6a09e667f3bcdp-1 },
    { 0x1.3333333333333p-2, 0x1.2cf2304755a5ep-1 },   { 0x1.5555555555555p-2, 0x1.0000000000000p-1 },
    { 0x1.999999999999ap-2, 0x1.3c6ef372fe94ep-2 },   { 0x1.ccccccccccccdp-2, 0x1.4060b67a85374p-3 },
    { 0x1.fffd60e94ee39p-2, 0x1.078930424b7efp-15 },  { 0x1.3333333333333p-1, -0x1.3c6ef372fe94ep-2 },
    { 0x1.5555555555555p-1, -0x1.ffffffffffffep-2 },  { 0x1.6666666666666p-1, -0x1.2cf2304755a5dp-1 },
    { 0x1.8000000000000p-1, -0x1.6a09e667f3bcdp-1 },  { 0x1.ccccccccccccdp-1, -0x1.e6f0e13445500p-1 },
    { 0x1.fae147ae147aep-1, -0x1.ffbf52e9d1086p-1 },  { 0x1.ffffde7210be9p-1, -0x1.fffffffff525fp-1 },
};

static void test_cospi(void **state)
{
    (void)state;
    assert_true(dmath_cospi(0.0) == 1.0);
    assert_true(dmath_cospi(0.5) == 0.0);
    assert_true(dmath_cospi(1.0) == -1.0);
    assert_true(isnan(dmath_cospi(-0.25)) && isnan(dmath_cospi(1.5)) && isnan(dmath_cospi(NAN)));
    for (size_t i = 0; i < sizeof COSPI / sizeof COSPI[0]; i++) {
        const double got = dmath_cospi(COSPI[i][0]), want = COSPI[i][1];
        const int64_t d = dbits(got) - dbits(want);
        if (d < -1 || d > 1)
            fail_msg("cospi(%a) = %a, mpmath %a: %lld ulps apart", COSPI[i][0], got, want, (long long)d);
    }
    /* The symmetry the schedule's midpoint relies on, where 1 − x is exact. */
    for (double x = 0.25; x <= 0.5; x += 1.0 / 64)
        assert_true(dmath_cospi(1.0 - x) == -dmath_cospi(x));
}

/* ---- schedules ------------------------------------------------------------ */

static ls_config *config(const char *const *kv)
{
    ls_config *c = NULL;
    ls_err err = { "" };
    if (ls_config_create(&c, "teacher", "mlp", &err) != LS_OK)
        fail_msg("config: %s", err.msg);
    for (size_t i = 0; kv != NULL && kv[i] != NULL; i += 2)
        if (ls_config_set(c, kv[i], kv[i + 1], &err) != LS_OK)
            fail_msg("config %s=%s: %s", kv[i], kv[i + 1], err.msg);
    if (ls_config_check(c, &err) != LS_OK)
        fail_msg("config check: %s", err.msg);
    return c;
}

static void test_schedule_points(void **state)
{
    (void)state;
    ls_config *c = config((const char *const[]){ "lr", "0.01", "lr_schedule", "cosine", "warmup", "10",
                                                 "decay_steps", "110", "lr_min", "0.001", NULL });
    const float lr = 0.01f, lo = 0.001f;
    assert_true(fbits(optim_lr_at(c, 10)) == fbits(lr));                       /* the end of the warmup */
    assert_true(fbits(optim_lr_at(c, 5)) == fbits((float)((double)lr * 5 / 10)));
    assert_true(fbits(optim_lr_at(c, 1)) == fbits((float)((double)lr / 10)));
    assert_true(fbits(optim_lr_at(c, 60)) == fbits((float)((double)lo + ((double)lr - lo) * 0.5)));   /* cos = 0 */
    assert_true(fbits(optim_lr_at(c, 110)) == fbits(lo));                     /* the end of the decay */
    assert_true(fbits(optim_lr_at(c, 100000)) == fbits(lo));                  /* flat after */
    for (int64_t t = 11; t < 110; t++)   /* decreasing from lr to lr_min */
        assert_true(optim_lr_at(c, t) <= optim_lr_at(c, t - 1) && optim_lr_at(c, t) >= lo);
    ls_config_destroy(c);

    c = config((const char *const[]){ "lr", "0.5", "lr_schedule", "step", "lr_step", "3", "lr_gamma", "0.5", NULL });
    const float want[] = { 0.5f, 0.5f, 0.5f, 0.25f, 0.25f, 0.25f, 0.125f, 0.125f, 0.125f, 0.0625f };
    for (int64_t t = 1; t <= 10; t++)
        assert_true(fbits(optim_lr_at(c, t)) == fbits(want[t - 1]));
    assert_true(fbits(optim_lr_at(c, 3 * 1000 + 1)) == fbits((float)ldexp(0.5, -1000)));   /* 0 in binary32 */
    ls_config_destroy(c);

    c = config(NULL);   /* constant: lr itself, every step */
    for (int64_t t = 1; t < 1000; t += 7)
        assert_true(fbits(optim_lr_at(c, t)) == fbits(0.01f));
    ls_config_destroy(c);
}

/* Python's float64 arithmetic (math.cos, **: another cos and another power
 * than the engine's), rounded to binary32 by struct, against optim_lr_at. */
static void test_schedule_python(void **state)
{
    (void)state;
    if (access(PYTHON, X_OK) != 0)
        fail_msg("%s is missing: install python3 (make deps)", PYTHON);
    static const char *const SCRIPT =
        PYTHON " -c '\n"
        "import math, struct\n"
        "f = lambda x: struct.unpack(\"<f\", struct.pack(\"<f\", x))[0]\n"
        "b = lambda x: struct.unpack(\"<I\", struct.pack(\"<f\", x))[0]\n"
        "lr, lo, W, D = f(0.003), f(0.0002), 37, 301\n"
        "for t in range(1, 400):\n"
        "    if t <= W: v = lr * t / W\n"
        "    elif t >= D: v = lo\n"
        "    else: v = lo + (lr - lo) * (0.5 * (1 + math.cos(math.pi * ((t - W) / (D - W)))))\n"
        "    print(b(v))\n"
        "lr, g, S = f(0.003), f(0.7), 9\n"
        "for t in range(1, 400):\n"
        "    print(b(lr * g ** ((t - 1) // S)))\n"
        "'";
    FILE *p = popen(SCRIPT, "r");
    assert_non_null(p);
    ls_config *cos = config((const char *const[]){ "lr", "0.003", "lr_schedule", "cosine", "warmup", "37",
                                                   "decay_steps", "301", "lr_min", "0.0002", NULL });
    ls_config *step = config((const char *const[]){ "lr", "0.003", "lr_schedule", "step", "lr_step", "9",
                                                    "lr_gamma", "0.7", NULL });
    size_t seen = 0;
    for (int k = 0; k < 2; k++)
        for (int64_t t = 1; t < 400; t++) {
            unsigned long want;
            if (fscanf(p, "%lu", &want) != 1)
                fail_msg("python stopped after %zu values", seen);
            const float got = optim_lr_at(k ? step : cos, t);
            if (fbits(got) != (uint32_t)want)
                fail_msg("%s schedule, step %lld: %a, python %a", k ? "step" : "cosine", (long long)t, (double)got,
                         (double)((union { uint32_t u; float f; }){ .u = (uint32_t)want }).f);
            seen++;
        }
    assert_int_equal(pclose(p), 0);
    ls_config_destroy(cos);
    ls_config_destroy(step);
}

/* ---- clipping and decay groups on hand-built values ------------------------ */

static void test_clip_norm_hand(void **state)
{
    (void)state;
    const size_t n = 5000;   /* two chunks: [0, 4096) and [4096, 5000) */
    float *theta = calloc(n, sizeof *theta), *grad = calloc(n, sizeof *grad);
    assert_non_null(theta);
    assert_non_null(grad);
    for (int div = 1; div <= 2; div++) {
        for (int clip = 0; clip < 2; clip++) {
            ls_config *c = config((const char *const[]){ "optimizer", "sgd", "momentum", "0", "lr", "1", "clip_norm",
                                                         clip ? "1" : "10", NULL });
            optim *o = NULL;
            ls_err err = { "" };
            assert_int_equal(optim_create(&o, c, n, &err), LS_OK);
            assert_true(optim_clips_norm(o));
            memset(theta, 0, n * sizeof *theta);
            memset(grad, 0, n * sizeof *grad);
            grad[0] = 3.0f * (float)div;
            grad[4500] = 4.0f * (float)div;
            optim_begin_step(o);
            const double sums[2] = { optim_sumsq(grad, (float)div, 0, 4096), optim_sumsq(grad, (float)div, 4096, n) };
            assert_true(sums[0] == 9.0 && sums[1] == 16.0);
            double norm;
            const float s = optim_clip_norm(o, sums, 2, &norm);
            assert_true(norm == 5.0);
            assert_true(fbits(s) == fbits(clip ? (float)(1.0 / 5.0) : 1.0f));
            assert_int_equal(optim_update(o, theta, theta, grad, (float)div, 0, n), 0);
            assert_true(fbits(theta[0]) == fbits(-(3.0f * s)));
            assert_true(fbits(theta[4500]) == fbits(-(4.0f * s)));
            assert_true(theta[1] == 0.0f && theta[4499] == 0.0f && theta[4999] == 0.0f);
            optim_destroy(o);
            ls_config_destroy(c);
        }
    }
    /* A norm summed by chunks: 10,000 ones, 100 exactly. */
    for (size_t i = 0; i < n; i++)
        grad[i] = 1.0f;
    ls_config *c = config((const char *const[]){ "clip_norm", "50", NULL });
    optim *o = NULL;
    ls_err err = { "" };
    assert_int_equal(optim_create(&o, c, n, &err), LS_OK);
    optim_begin_step(o);
    double sums[2] = { optim_sumsq(grad, 1.0f, 0, 4096), optim_sumsq(grad, 1.0f, 4096, n) }, norm;
    assert_true(fbits(optim_clip_norm(o, sums, 2, &norm)) == fbits((float)(50.0 / sqrt(5000.0))));
    assert_true(norm == sqrt(5000.0));
    optim_destroy(o);
    ls_config_destroy(c);
    free(theta);
    free(grad);
}

static void test_decay_groups_hand(void **state)
{
    (void)state;
    const ls_tensor ts[3] = { { "W", 0, 1, { 2 } }, { "b", 2, 1, { 2 } }, { "W2", 4, 1, { 3 } } };
    const unsigned char no_decay[3] = { 0, 1, 0 };
    for (int weights = 0; weights < 2; weights++)
        for (int sgd = 0; sgd < 2; sgd++) {
            ls_config *c = config((const char *const[]){ "optimizer", sgd ? "sgd" : "adamw", "lr", "0.1",
                                                         "weight_decay", "0.5", "decay_groups",
                                                         weights ? "weights" : "all", NULL });
            optim *o = NULL;
            ls_err err = { "" };
            assert_int_equal(optim_create(&o, c, 7, &err), LS_OK);
            assert_int_equal(optim_set_groups(o, ts, 3, no_decay, &err), LS_OK);
            float theta[7] = { 1, 1, 1, 1, 1, 1, 1 }, grad[7] = { 0 };
            optim_begin_step(o);
            for (size_t lo = 0; lo < 7; lo++)   /* every split of the range gives the same */
                assert_int_equal(optim_update(o, theta, theta, grad, 1.0f, lo, lo + 1), 0);
            /* AdamW: θ·(1 − lr·wd); SGD: θ − lr·(wd·θ). Grad 0: nothing else moves θ. */
            const float decayed = sgd ? 1.0f - 0.1f * (0.5f * 1.0f) : 1.0f * (1.0f - 0.1f * 0.5f);
            for (size_t i = 0; i < 7; i++) {
                const int off = weights && (i == 2 || i == 3);
                assert_true(fbits(theta[i]) == fbits(off ? 1.0f : decayed));
            }
            optim_destroy(o);
            ls_config_destroy(c);
        }
}

/* optim_update_sum(a, b) against optim_update on the sums a + b: θ and the
 * state bit for bit, on every SIMD path and tiny-lane mode, AdamW and SGD,
 * divisors that are powers of two and not, a clip and none, operands down
 * in the subnormals, two ranges as two threads would. */
static void test_update_sum(void **state)
{
    (void)state;
    enum { N = 1031 };
    static const int simd[] = { 0, 1, 2 }, modes[] = { -1, 0, 1, 2 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *s = malloc(N * sizeof *s);
    float *p1 = malloc(N * sizeof *p1), *p2 = malloc(N * sizeof *p2), *q = malloc(N * sizeof *q);
    float *s2 = malloc(N * sizeof *s2);
    assert_non_null(a && b && s && p1 && p2 && q && s2);
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int sgd = 0; sgd < 2; sgd++)
        for (size_t si = 0; si < sizeof simd / sizeof simd[0]; si++)
            for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
                ls_config *c = config((const char *const[]){ "optimizer", sgd ? "sgd" : "adamw", "lr", "0.01",
                                                             "weight_decay", "0.1", "clip", mi == 1 ? "0.5" : "0",
                                                             NULL });
                optim *o1 = NULL, *o2 = NULL;
                ls_err err = { "" };
                assert_int_equal(optim_create(&o1, c, N, &err), LS_OK);
                assert_int_equal(optim_create(&o2, c, N, &err), LS_OK);
                const int on = optim_set_simd(simd[si]), mode = optim_set_exact_lanes(modes[mi]);
                for (size_t i = 0; i < N; i++) {
                    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                    p1[i] = p2[i] = ldexpf((float)(int32_t)(x >> 32) * 0x1p-31f, -(int)(x % 8) * (i % 7 == 0 ? 20 : 1));
                }
                for (int step = 0; step < 6; step++) {
                    for (size_t i = 0; i < N; i++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        const int e = i % 5 == 0 ? -(int)(x % 150) : -(int)(x % 12);
                        a[i] = i % 11 == 0 ? 0.0f : ldexpf((float)(int32_t)(x >> 32) * 0x1p-31f, e);
                        b[i] = i % 13 == 0 ? -a[i] : ldexpf((float)(int32_t)(uint32_t)x * 0x1p-31f, e);
                        s[i] = a[i] + b[i];
                    }
                    const float div = step % 2 ? 128.0f : 37.0f;
                    const int fresh = step % 3 != 0;   /* into another buffer, else in place */
                    float *o1_out = fresh ? q : p1, *o2_out = fresh ? s2 : p2;
                    optim_begin_step(o1);
                    optim_begin_step(o2);
                    const int bad1 = optim_update(o1, o1_out, p1, s, div, 0, N / 2) |
                                     optim_update(o1, o1_out, p1, s, div, N / 2, N);
                    const int bad2 = optim_update_sum(o2, o2_out, p2, a, b, div, 0, N / 2) |
                                     optim_update_sum(o2, o2_out, p2, a, b, div, N / 2, N);
                    assert_int_equal(bad1, bad2);
                    if (memcmp(o1_out, o2_out, N * sizeof *q) != 0)
                        fail_msg("%s, simd %d, mode %d, step %d: theta differs", sgd ? "sgd" : "adamw", simd[si],
                                 modes[mi], step);
                    if (fresh) {
                        memcpy(p1, q, N * sizeof *q);
                        memcpy(p2, s2, N * sizeof *q);
                    }
                    if (memcmp(optim_state_ptr(o1), optim_state_ptr(o2), optim_state_bytes(o1)) != 0)
                        fail_msg("%s, simd %d, mode %d, step %d: the state differs", sgd ? "sgd" : "adamw",
                                 simd[si], modes[mi], step);
                }
                optim_set_simd(on);
                optim_set_exact_lanes(mode);
                optim_destroy(o1);
                optim_destroy(o2);
                ls_config_destroy(c);
            }
    free(a), free(b), free(s), free(p1), free(p2), free(q), free(s2);
}

/* optim_update's answer "θ is no longer finite" on every path and mode
 * (AdamW's AVX2 loop checks θ as it writes it; the other paths scan it
 * after): a NaN or an infinity put at each position of a range of 37 (the
 * vectors, the pairs of vectors and the scalar tail), in θ or the gradient,
 * against a scan of θ afterwards. */
static void test_nonfinite_answer(void **state)
{
    (void)state;
    enum { N = 37 };
    static const int simd[] = { 0, 1, 2 }, modes[] = { -1, 0, 1, 2 };
    const float bad[3] = { NAN, INFINITY, -INFINITY };
    for (size_t si = 0; si < sizeof simd / sizeof simd[0]; si++)
        for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++)
            for (int sgd = 0; sgd < 2; sgd++) {
                ls_config *c = config((const char *const[]){ "optimizer", sgd ? "sgd" : "adamw", NULL });
                optim *o = NULL;
                ls_err err = { "" };
                assert_int_equal(optim_create(&o, c, N, &err), LS_OK);
                const int on = optim_set_simd(simd[si]), mode = optim_set_exact_lanes(modes[mi]);
                for (int at = -1; at < N; at++)
                    for (int where = 0; where < 2; where++) {
                        float theta[N], grad[N];
                        for (int i = 0; i < N; i++) {
                            theta[i] = (i % 5 == 0) ? 0x1p-140f : 0.25f * (float)(i - 18);
                            grad[i] = (i % 7 == 0) ? 0x1p-140f : 0.01f * (float)(i - 9);
                        }
                        if (at >= 0)
                            (where ? grad : theta)[at] = bad[(at + where) % 3];
                        optim_begin_step(o);
                        const int got = optim_update(o, theta, theta, grad, 128.0f, 0, N);
                        const int want = optim_first_nonfinite(theta, N) < N;
                        if (got != want)
                            fail_msg("%s, simd %d, mode %d: bad value at %d in %s: answer %d, scan %d",
                                     sgd ? "sgd" : "adamw", simd[si], modes[mi], at, where ? "grad" : "theta", got,
                                     want);
                    }
                optim_set_simd(on);
                optim_set_exact_lanes(mode);
                optim_destroy(o);
                ls_config_destroy(c);
            }
}

static void test_canonical_text(void **state)
{
    (void)state;
    char a[CONFIG_TEXT_MAX], b[CONFIG_TEXT_MAX];
    ls_config *c = config(NULL);
    ls_config_text(c, a, sizeof a);
    static const char *const NEW[] = { "lr_schedule", "warmup", "decay_steps", "lr_min", "lr_gamma", "lr_step",
                                       "clip_norm", "decay_groups", "init_hash", "init=" };
    for (size_t i = 0; i < sizeof NEW / sizeof NEW[0]; i++)
        if (strstr(a, NEW[i]) != NULL)
            fail_msg("the default config's text has %s:\n%s", NEW[i], a);
    ls_config_destroy(c);
    /* Set to their defaults, they stay out. */
    c = config((const char *const[]){ "lr_schedule", "constant", "clip_norm", "0", "decay_groups", "all", NULL });
    ls_config_text(c, b, sizeof b);
    assert_string_equal(a, b);
    ls_config_destroy(c);
    c = config((const char *const[]){ "lr_schedule", "cosine", NULL });
    ls_config_text(c, b, sizeof b);
    assert_non_null(strstr(b, "lr_schedule=cosine\n"));
    assert_non_null(strstr(b, "warmup=0\n"));
    assert_non_null(strstr(b, "decay_steps=1000\n"));
    assert_non_null(strstr(b, "lr_min=0x0p+0\n"));
    assert_null(strstr(b, "lr_gamma"));
    ls_config_destroy(c);
}

/* A task's "steps=N" default for one model (fashion-mnist gives cnn the
 * 4690 steps its cosine decays over): that model's default target, the
 * task's 469 for the others, and never a key of the config's text. */
static void test_model_default_steps(void **state)
{
    (void)state;
    static const struct {
        const char *model;
        int64_t steps;
    } want[] = { { "cnn", 4690 }, { "mlp", 469 }, { "logic", 469 } };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ls_config *c = NULL;
        ls_err err = { "" };
        if (ls_config_create(&c, "fashion-mnist", want[i].model, &err) != LS_OK)
            fail_msg("config fashion-mnist/%s: %s", want[i].model, err.msg);
        char text[CONFIG_TEXT_MAX];
        ls_config_text(c, text, sizeof text);
        if (config_default_steps(c) != want[i].steps || strstr(text, "\nsteps=") != NULL)
            fail_msg("%s: default steps %lld (want %lld), config text:\n%s", want[i].model,
                     (long long)config_default_steps(c), (long long)want[i].steps, text);
        ls_config_destroy(c);
    }
}

/* ---- whole runs ----------------------------------------------------------- */

typedef struct {
    uint64_t traj, param[41];
} outcome;

static void fail_err(const char *what, ls_status st, const ls_err *e)
{
    fail_msg("%s: %s (%s)", what, e->msg, ls_strerror(st));
}

static ls_session_opts opts(int threads, const char *db, const char *name, int64_t steps)
{
    ls_session_opts o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.threads = threads;
    o.db = db;
    o.name = name;
    o.steps = steps;
    o.checkpoint_every = db != NULL ? 7 : 0;
    o.keep_checkpoints = -1;
    return o;
}

/* steps steps of cfg at `threads`, no record: the trajectory and every θ's hash. */
static outcome run(const ls_config *cfg, int threads, int steps)
{
    outcome r;
    memset(&r, 0, sizeof r);
    ls_session_opts o = opts(threads, NULL, NULL, steps);
    ls_session *s = NULL;
    ls_err e = { "" };
    ls_status st = ls_session_open(&s, cfg, &o, &e);
    if (st != LS_OK)
        fail_err("open", st, &e);
    ls_session_state ss;
    for (int t = 0; t <= steps; t++) {
        if (t > 0 && (st = ls_session_step(s, NULL, &e)) != LS_OK)
            fail_err("step", st, &e);
        ls_session_state_get(s, &ss);
        r.param[t] = ss.param_hash;
    }
    r.traj = ss.traj_hash;
    ls_session_close(s, LS_OK, &e);
    return r;
}

typedef struct {
    proc_ctx *ctx;
    char db[PATH_MAX], init[PATH_MAX];
} run_fixture;

static int setup_dir(void **state)
{
    return proc_ctx_setup(state, "/tmp/ls-optim-XXXXXX");
}

/* The binary in the test directory; fails the case unless it exits 0. */
static void ls_ok(const proc_ctx *c, const char *const *args)
{
    proc_res r;
    proc_child p;
    proc_describe("lockstep", args, r.cmd, sizeof r.cmd);
    proc_start_bin(&p, c->dir, NULL, NULL, g_bin, args);
    proc_finish(&p, &r, DEADLINE);
    if (r.timed_out || r.sig != 0 || r.code != 0)
        fail_msg("%s: exit %d (signal %d)\nstdout: %s\nstderr: %s", r.cmd, r.code, r.sig, r.out, r.err);
    proc_res_free(&r);
}

static ls_session *restore(const char *db, const char *name)
{
    ls_session_opts o = opts(1, NULL, NULL, 0);
    ls_session *s = NULL;
    ls_err e = { "" };
    ls_status st = ls_session_reopen(&s, db, name, LS_REOPEN_RESTORE, &o, &e);
    if (st != LS_OK)
        fail_err("restore", st, &e);
    return s;
}

/* export --weights then --init: step 0 of the new run is the exported θ. */
static void test_init_from_export(void **state)
{
    const proc_ctx *c = *state;
    char db[PATH_MAX], w[PATH_MAX];
    proc_tpath(c, "r.db", db, sizeof db);
    proc_tpath(c, "w.safetensors", w, sizeof w);
    ls_ok(c, (const char *const[]){ "train", "--task", "teacher", "--steps", "15", "--db", "r.db", "--name", "a",
                                    "--threads", "2", "--no-progress", NULL });
    ls_ok(c, (const char *const[]){ "export", "a", "--db", "r.db", "--weights", "w.safetensors", NULL });
    ls_ok(c, (const char *const[]){ "train", "--task", "teacher", "--steps", "5", "--db", "r.db", "--name", "b",
                                    "--threads", "3", "--init", "w.safetensors", "--no-progress", NULL });
    ls_session *a = restore(db, "a");
    ls_session_state sa, sb;
    ls_session_state_get(a, &sa);
    ls_err e = { "" };
    ls_session_opts o = opts(1, db, "b", 0);
    ls_session *b = NULL;
    ls_status st = ls_session_reopen(&b, db, "b", LS_REOPEN_AUDIT, &o, &e);   /* stands at θ_0 */
    if (st != LS_OK)
        fail_err("audit b", st, &e);
    ls_session_state_get(b, &sb);
    assert_int_equal(sb.step, 0);
    assert_true(sb.param_hash == sa.param_hash);
    size_t na, nb;
    const float *pa = ls_session_params(a, &na), *pb = ls_session_params(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(pa, pb, na * sizeof *pa);
    /* The config names the file's XXH3 and keeps the path as a source. */
    const ls_config *cb = ls_session_config(b);
    assert_true(ls_config_u64(cb, "init_hash") != 0);
    assert_string_equal(ls_config_source(cb, "init"), w);
    while (sb.step < sb.target) {
        if ((st = ls_session_step(b, NULL, &e)) != LS_OK)
            fail_err("audit b step", st, &e);
        ls_session_state_get(b, &sb);
    }
    ls_session_close(b, LS_OK, &e);
    ls_session_close(a, LS_OK, &e);
    /* Other weights under the recorded path: the run is not what the file
     * says any more; reopening it is a mismatch naming init_hash. */
    ls_ok(c, (const char *const[]){ "export", "b", "--db", "r.db", "--weights", "w2.safetensors", NULL });
    char w2[PATH_MAX];
    proc_tpath(c, "w2.safetensors", w2, sizeof w2);
    assert_int_equal(rename(w2, w), 0);   /* export itself refuses to write over a run's init file */
    o = opts(2, db, "b", 0);
    st = ls_session_reopen(&b, db, "b", LS_REOPEN_AUDIT, &o, &e);
    assert_int_equal(st, LS_EMISMATCH);
    assert_non_null(strstr(e.msg, "init_hash"));
    assert_non_null(strstr(e.msg, w));
}

/* The configs of the runs below: a schedule, clip_norm small enough to
 * clip, decay groups, --init; on an MLP (its finish folded into the
 * update, the tree's top combined by the norm's pass), a linear model with
 * SGD, a logic network (a finish of its own) and a wider MLP (k = 3). */
#define N_CONFIGS 4
static ls_config *run_config(int k, const char *init)
{
    switch (k) {
    case 0:
        return config((const char *const[]){ "lr_schedule", "cosine", "warmup", "4", "decay_steps", "30", "lr_min",
                                             "0.0005", "clip_norm", "0.05", "decay_groups", "weights",
                                             "weight_decay", "0.1", "init", init, NULL });
    case 3:   /* θ of 6,304 floats: two chunks of the norm, the tree's top combined by both */
        return config((const char *const[]){ "hidden", "300", "clip_norm", "0.05", "lr_schedule", "step", NULL });
    case 1: {
        ls_config *c = NULL;
        ls_err err = { "" };
        assert_int_equal(ls_config_create(&c, "teacher", "linear", &err), LS_OK);
        static const char *const kv[] = { "optimizer", "sgd", "lr", "0.2", "lr_schedule", "step", "lr_step", "6",
                                          "lr_gamma", "0.5", "clip_norm", "0.1", "decay_groups", "weights",
                                          "weight_decay", "0.01", NULL };
        for (size_t i = 0; kv[i] != NULL; i += 2)
            assert_int_equal(ls_config_set(c, kv[i], kv[i + 1], &err), LS_OK);
        return c;
    }
    case 2: {
        ls_config *c = NULL;
        ls_err err = { "" };
        assert_int_equal(ls_config_create(&c, "teacher", "logic", &err), LS_OK);
        static const char *const kv[] = { "lr_schedule", "cosine", "warmup", "3", "decay_steps", "20", "clip_norm",
                                          "0.01", NULL };
        for (size_t i = 0; kv[i] != NULL; i += 2)
            if (ls_config_set(c, kv[i], kv[i + 1], &err) != LS_OK)
                fail_msg("%s", err.msg);
        return c;
    }
    default:
        fail_msg("no config %d", k);
    }
    return NULL;
}

static const int THREADS[] = { 1, 2, 3, 8 };
#define N_THREADS (sizeof THREADS / sizeof THREADS[0])
#define STEPS 40

static void make_init(const proc_ctx *c, char *w, size_t cap)
{
    proc_tpath(c, "w0.safetensors", w, cap);
    if (access(w, R_OK) == 0)
        return;
    ls_ok(c, (const char *const[]){ "train", "--task", "teacher", "--steps", "9", "--db", "w.db", "--name", "w",
                                    "--threads", "1", "--no-progress", NULL });
    ls_ok(c, (const char *const[]){ "export", "w", "--db", "w.db", "--weights", "w0.safetensors", NULL });
}

static void test_threads_equal(void **state)
{
    const proc_ctx *c = *state;
    char w[PATH_MAX];
    make_init(c, w, sizeof w);
    for (int k = 0; k < N_CONFIGS; k++) {
        ls_config *cfg = run_config(k, w);
        const outcome ref = run(cfg, 1, STEPS);
        for (size_t i = 1; i < N_THREADS; i++) {
            const outcome o = run(cfg, THREADS[i], STEPS);
            if (o.traj != ref.traj)
                fail_msg("config %d: threads %d give trajectory %016llx, threads 1 %016llx", k, THREADS[i],
                         (unsigned long long)o.traj, (unsigned long long)ref.traj);
        }
        ls_config_destroy(cfg);
    }
}

/* clip_norm above every norm: the parameters of no clip_norm, step by
 * step (the norm's pass leaves the gradient as it is); a small one clips. */
static void test_clip_norm_neutral(void **state)
{
    (void)state;
    for (int model = 0; model < 2; model++) {
        const char *m = model ? "logic" : "mlp";
        ls_config *plain = NULL, *big = NULL, *small = NULL;
        ls_err err = { "" };
        assert_int_equal(ls_config_create(&plain, "teacher", m, &err), LS_OK);
        assert_int_equal(ls_config_create(&big, "teacher", m, &err), LS_OK);
        assert_int_equal(ls_config_create(&small, "teacher", m, &err), LS_OK);
        /* The bound as the help writes it (0..1e+30): its float lies past the double 1e30. */
        assert_int_equal(ls_config_set(big, "clip_norm", "1e30", &err), LS_OK);
        assert_int_equal(ls_config_set(small, "clip_norm", "0.001", &err), LS_OK);
        for (size_t i = 0; i < N_THREADS; i++) {
            const outcome a = run(plain, THREADS[i], 20), b = run(big, THREADS[i], 20), s = run(small, THREADS[i], 20);
            assert_memory_equal(a.param, b.param, sizeof a.param);
            assert_true(a.traj != b.traj);   /* the configs differ, so do their trajectories */
            assert_true(a.param[1] != s.param[1]);
        }
        ls_config_destroy(plain);
        ls_config_destroy(big);
        ls_config_destroy(small);
    }
}

/* A float key's bounds are compared in binary32, the key's own type: a bound
 * as written is accepted whatever side of the double its float lies (1e30's
 * float is above 1e30, 1e-6's below), the next float past it is not. */
static void test_float_bounds(void **state)
{
    (void)state;
    static const struct {
        const char *model, *key, *bound, *past;
    } K[] = { { "mlp", "clip", "1e30", "2e30" }, { "mlp", "clip_norm", "1e30", "1.0000001e30" },
              { "mlp", "lr", "1e6", "1000000.1" }, { "logic", "tau", "1e-6", "9.999999e-7" } };
    for (size_t i = 0; i < sizeof K / sizeof K[0]; i++) {
        ls_config *c = NULL;
        ls_err err = { "" };
        assert_int_equal(ls_config_create(&c, "teacher", K[i].model, &err), LS_OK);
        if (ls_config_set(c, K[i].key, K[i].bound, &err) != LS_OK || ls_config_check(c, &err) != LS_OK)
            fail_msg("%s=%s refused: %s", K[i].key, K[i].bound, err.msg);
        assert_int_equal(ls_config_set(c, K[i].key, K[i].past, &err), LS_EINVAL);
        assert_non_null(strstr(err.msg, K[i].past));
        assert_non_null(strstr(err.msg, "out of range"));
        ls_config_destroy(c);
    }
}

/* Resume at another thread count, and audit, equal to the uninterrupted run. */
static void test_resume_audit(void **state)
{
    const proc_ctx *c = *state;
    char w[PATH_MAX], db[PATH_MAX];
    make_init(c, w, sizeof w);
    proc_tpath(c, "runs.db", db, sizeof db);
    for (int k = 0; k < N_CONFIGS; k++) {
        ls_config *cfg = run_config(k, w);
        const outcome ref = run(cfg, 2, STEPS);
        for (size_t i = 0; i < N_THREADS; i++) {
            char name[32];
            snprintf(name, sizeof name, "c%d-t%d", k, THREADS[i]);
            ls_session_opts o = opts(THREADS[i], db, name, STEPS);
            ls_session *s = NULL;
            ls_err e = { "" };
            ls_status st = ls_session_open(&s, cfg, &o, &e);
            if (st != LS_OK)
                fail_err("open", st, &e);
            for (int t = 0; t < 17; t++)
                if ((st = ls_session_step(s, NULL, &e)) != LS_OK)
                    fail_err("step", st, &e);
            ls_session_close(s, LS_EINTR, &e);   /* interrupted at step 17: checkpoint at 14 */
            const int other = THREADS[(i + 1) % N_THREADS];
            o = opts(other, db, name, STEPS);
            if ((st = ls_session_reopen(&s, db, name, LS_REOPEN_RESUME, &o, &e)) != LS_OK)
                fail_err("resume", st, &e);
            if ((st = ls_session_train(s, 0, 0, NULL, NULL, NULL, &e)) != LS_OK)
                fail_err("train", st, &e);
            ls_session_state ss;
            ls_session_state_get(s, &ss);
            assert_int_equal(ss.resumed_from, 14);
            if (ss.traj_hash != ref.traj)
                fail_msg("config %d: resumed at %d threads after 17 at %d: %016llx, uninterrupted %016llx", k, other,
                         THREADS[i], (unsigned long long)ss.traj_hash, (unsigned long long)ref.traj);
            ls_session_close(s, LS_OK, &e);
            o = opts(THREADS[(i + 2) % N_THREADS], db, name, 0);
            if ((st = ls_session_reopen(&s, db, name, LS_REOPEN_AUDIT, &o, &e)) != LS_OK)
                fail_err("audit", st, &e);
            ls_session_state_get(s, &ss);
            while (ss.step < ss.target) {
                if ((st = ls_session_step(s, NULL, &e)) != LS_OK)
                    fail_err("audit step", st, &e);
                ls_session_state_get(s, &ss);
            }
            assert_true(ss.traj_hash == ref.traj);
            ls_session_close(s, LS_OK, &e);
        }
        ls_config_destroy(cfg);
    }
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_optim", 0) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cospi),
        cmocka_unit_test(test_schedule_points),
        cmocka_unit_test(test_schedule_python),
        cmocka_unit_test(test_clip_norm_hand),
        cmocka_unit_test(test_decay_groups_hand),
        cmocka_unit_test(test_update_sum),
        cmocka_unit_test(test_nonfinite_answer),
        cmocka_unit_test(test_canonical_text),
        cmocka_unit_test(test_model_default_steps),
        cmocka_unit_test(test_clip_norm_neutral),
        cmocka_unit_test(test_float_bounds),
        cmocka_unit_test_setup_teardown(test_init_from_export, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_threads_equal, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_resume_audit, setup_dir, proc_ctx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
