/* test_mlp.c — the dense network: gradients against central differences of an
 * independent double-precision reference written here, the loss against the
 * same reference, and the bit contracts — accumulate adds the leaf's sum,
 * a leaf is the ordered sum of its samples, results do not depend on the
 * SIMD path, the scratch contents or max_leaf — plus init, predict, create. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/num/dense.h"
#include "engine/num/dmath.h"
#include "engine/models/mlp/mlp.h"
#include "engine/num/rng.h"

static uint64_t rng_state = 1;

static uint32_t next_u32(void)
{
    /* xorshift64*: the test's own stream, independent of engine/rng. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32);
}

static float unit(void)   /* [0, 1) */
{
    return (float)(next_u32() >> 8) / 16777216.0f;
}

typedef struct {
    size_t sizes[MLP_MAX_LAYERS + 1];
    size_t n_sizes;
    size_t leaf;
    mlp *m;
    float *params, *grad, *x;
    int32_t *y;
    void *scratch;
    size_t np;
} net;

static void net_open(net *t, const size_t *sizes, size_t n_sizes, size_t leaf, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    memcpy(t->sizes, sizes, n_sizes * sizeof *sizes);
    t->n_sizes = n_sizes;
    t->leaf = leaf;
    ls_err err = { { 0 } };
    assert_int_equal(mlp_create(&t->m, sizes, n_sizes, leaf, &err), LS_OK);
    t->np = mlp_n_params(t->m);
    t->params = malloc(t->np * sizeof(float));
    t->grad = malloc(t->np * sizeof(float));
    t->x = malloc(leaf * sizes[0] * sizeof(float));
    t->y = malloc(leaf * sizeof(int32_t));
    t->scratch = aligned_alloc(64, (mlp_scratch_bytes(t->m) + 63) / 64 * 64);
    assert_true(t->params && t->grad && t->x && t->y && t->scratch);
    mlp_init(t->m, t->params, seed);
    rng_state = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (size_t i = 0; i < leaf * sizes[0]; i++)
        t->x[i] = unit();
    for (size_t i = 0; i < leaf; i++)
        t->y[i] = (int32_t)(next_u32() % sizes[n_sizes - 1]);
    mlp_prepare(t->m, t->params);
}

/* Nonzero biases, so their gradients are tested away from the init. */
static void net_random_biases(net *t)
{
    size_t off = 0;
    for (size_t l = 0; l + 1 < t->n_sizes; l++) {
        off += t->sizes[l] * t->sizes[l + 1];
        for (size_t n = 0; n < t->sizes[l + 1]; n++)
            t->params[off + n] = (unit() - 0.5f) * 0.2f;
        off += t->sizes[l + 1];
    }
    mlp_prepare(t->m, t->params);
}

static void net_close(net *t)
{
    mlp_destroy(t->m);
    free(t->params);
    free(t->grad);
    free(t->x);
    free(t->y);
    free(t->scratch);
}

/* ---- The double-precision reference: a plain re-implementation of the
 * forward pass and the summed cross-entropy with libm's exp and log. It
 * shares nothing with mlp.c but the parameter layout of mlp.h. ---- */

typedef struct {
    double loss;
    double min_abs_pre;   /* smallest |pre-activation| of a hidden unit */
    double logits[64][8]; /* [sample][class], for the small nets here */
} ref_out;

static void ref_forward(const size_t *sizes, size_t n_sizes, const double *theta,
                        const float *x, const int32_t *y, size_t count, ref_out *r)
{
    r->loss = 0.0;
    r->min_abs_pre = INFINITY;
    for (size_t b = 0; b < count; b++) {
        double h[64], nh[64];
        for (size_t k = 0; k < sizes[0]; k++)
            h[k] = (double)x[b * sizes[0] + k];
        const double *p = theta;
        for (size_t l = 0; l + 1 < n_sizes; l++) {
            const size_t K = sizes[l], N = sizes[l + 1];
            const double *W = p, *bias = p + K * N;
            for (size_t n = 0; n < N; n++) {
                double s = bias[n];
                for (size_t k = 0; k < K; k++)
                    s += h[k] * W[k * N + n];
                nh[n] = s;
            }
            p += K * N + N;
            const int hidden = l + 2 < n_sizes;
            for (size_t n = 0; n < N; n++) {
                if (hidden && fabs(nh[n]) < r->min_abs_pre)
                    r->min_abs_pre = fabs(nh[n]);
                h[n] = hidden ? (nh[n] > 0.0 ? nh[n] : 0.0) : nh[n];
            }
        }
        const size_t C = sizes[n_sizes - 1];
        double mx = h[0];
        for (size_t i = 1; i < C; i++)
            mx = h[i] > mx ? h[i] : mx;
        double s = 0.0;
        for (size_t i = 0; i < C; i++)
            s += exp(h[i] - mx);
        r->loss += log(s) + mx - h[y[b]];
        for (size_t i = 0; i < C; i++)
            r->logits[b][i] = h[i];
    }
}

static double *theta_of(const net *t)
{
    double *th = malloc(t->np * sizeof(double));
    assert_non_null(th);
    for (size_t i = 0; i < t->np; i++)
        th[i] = (double)t->params[i];
    return th;
}

static const size_t small_sizes[] = { 5, 7, 6, 3 };

/* mlp_leaf's float gradient against central differences of the double
 * reference's summed loss, h = 1e-6 (truncation error ~h^2, rounding error
 * ~1e-16 / h, both far below the tolerance). The float gradient carries
 * float rounding of the forward and backward passes (relative ~1e-6 for
 * these sizes, measured worst 1e-7 absolute), so the tolerance is
 * |g - fd| <= 1e-4 |fd| + 1e-6: calculus,
 * not the bit contract. No hidden pre-activation may be within 1e-4 of the
 * ReLU kink, where the derivative does not exist (checked, so a change of
 * data that lands on a kink fails loudly instead of silently). */
static void check_gradient(const size_t *sizes, size_t n_sizes, size_t leaf, uint64_t seed)
{
    net t;
    net_open(&t, sizes, n_sizes, leaf, seed);
    net_random_biases(&t);
    const double loss = mlp_leaf(t.m, t.params, t.x, t.y, leaf, t.grad, 0, t.scratch);
    double *th = theta_of(&t);
    ref_out r;
    ref_forward(sizes, n_sizes, th, t.x, t.y, leaf, &r);
    assert_true(r.min_abs_pre > 1e-4);
    assert_true(fabs(loss - r.loss) <= 1e-5 * fabs(r.loss) + 1e-6);
    const double h = 1e-6;
    double worst = 0.0;
    for (size_t j = 0; j < t.np; j++) {
        const double keep = th[j];
        th[j] = keep + h;
        ref_forward(sizes, n_sizes, th, t.x, t.y, leaf, &r);
        const double lp = r.loss;
        th[j] = keep - h;
        ref_forward(sizes, n_sizes, th, t.x, t.y, leaf, &r);
        const double lm = r.loss;
        th[j] = keep;
        const double fd = (lp - lm) / (2.0 * h);
        const double err = fabs((double)t.grad[j] - fd);
        if (err > 1e-4 * fabs(fd) + 1e-6)
            fail_msg("param %zu: mlp_leaf gradient %.9g, central difference %.9g", j,
                     (double)t.grad[j], fd);
        if (err > worst)
            worst = err;
    }
    printf("gradient check %zu params: worst |g - fd| = %.3g\n", t.np, worst);
    free(th);
    net_close(&t);
}

static void test_gradient_fd(void **state)
{
    (void)state;
    check_gradient(small_sizes, 4, 4, 11);
    const size_t two[] = { 6, 4 };           /* no hidden layer: softmax regression */
    check_gradient(two, 2, 3, 12);
    const size_t deep[] = { 4, 9, 8, 7, 5 }; /* three hidden layers, leaf of 6 */
    check_gradient(deep, 5, 6, 13);
}

/* The loss equals the reference's within the float forward's rounding, and
 * predict equals the reference's argmax wherever that is clear-cut. */
static void test_loss_and_predict_match_reference(void **state)
{
    (void)state;
    net t;
    net_open(&t, small_sizes, 4, 40, 21);
    net_random_biases(&t);
    const double loss = mlp_leaf(t.m, t.params, t.x, t.y, 40, t.grad, 0, t.scratch);
    double *th = theta_of(&t);
    ref_out r;
    ref_forward(small_sizes, 4, th, t.x, t.y, 40, &r);
    /* Relative 1e-5: the float logits differ from the double ones by ~1e-7. */
    assert_true(fabs(loss - r.loss) <= 1e-5 * fabs(r.loss));
    int32_t pred[40];
    mlp_predict(t.m, t.params, t.x, 40, pred, t.scratch);
    size_t checked = 0;
    for (size_t b = 0; b < 40; b++) {
        size_t best = 0;
        for (size_t i = 1; i < 3; i++)
            if (r.logits[b][i] > r.logits[b][best])
                best = i;
        double gap = INFINITY;
        for (size_t i = 0; i < 3; i++)
            if (i != best && r.logits[b][best] - r.logits[b][i] < gap)
                gap = r.logits[b][best] - r.logits[b][i];
        if (gap < 1e-4)
            continue;   /* too close for a float network to be held to it */
        assert_int_equal(pred[b], best);
        checked++;
    }
    assert_true(checked >= 35);
    free(th);
    net_close(&t);
}

/* The softmax formula of mlp.c, bit for bit. With no hidden layer and W = 0
 * the logits are exactly the biases, so a one-sample leaf's bias gradient is
 * dz itself (0.0f + dz_i) and its loss is the per-sample loss. Both are
 * recomputed here from the documented formula with dmath: dz_i =
 * (float)(e_i / s) - (i == y ? 1.0f : 0.0f) — a float subtraction, which a
 * double subtraction rounded once would not match for many of these. */
static void test_softmax_formula_bits(void **state)
{
    (void)state;
    const size_t sizes[] = { 3, 10 };
    mlp *m;
    assert_int_equal(mlp_create(&m, sizes, 2, 1, NULL), LS_OK);
    const size_t np = mlp_n_params(m);
    float *p = calloc(np, sizeof(float)), *g = malloc(np * sizeof(float));
    void *scr = malloc(mlp_scratch_bytes(m));
    assert_true(p && g && scr);
    const float x[3] = { 0.25f, 0.5f, 1.0f };
    float *bias = p + 3 * 10;
    rng_state = 99;
    for (int trial = 0; trial < 200; trial++) {
        for (int i = 0; i < 10; i++)
            bias[i] = (unit() - 0.5f) * (float)(1 + trial % 7) * 3.0f;
        const int32_t y = trial % 10;
        mlp_prepare(m, p);
        const double loss = mlp_leaf(m, p, x, &y, 1, g, 0, scr);
        float mx = bias[0];
        for (int i = 1; i < 10; i++)
            mx = bias[i] > mx ? bias[i] : mx;
        double s = 0.0;
        for (int i = 0; i < 10; i++)
            s = s + dmath_exp((double)bias[i] - (double)mx);
        const double expect_loss = 0.0 + (dmath_log(s) - ((double)bias[y] - (double)mx));
        assert_memory_equal(&loss, &expect_loss, sizeof loss);
        for (int i = 0; i < 10; i++) {
            const float dz = (float)(dmath_exp((double)bias[i] - (double)mx) / s) - (i == y ? 1.0f : 0.0f);
            assert_memory_equal(&g[30 + i], &dz, sizeof dz);
            for (int k = 0; k < 3; k++) {
                const float dw = 0.0f + x[k] * dz;
                assert_memory_equal(&g[k * 10 + i], &dw, sizeof dw);
            }
        }
    }
    free(p);
    free(g);
    free(scr);
    mlp_destroy(m);
}

/* Ties go to the lowest index: all-zero logits give 0; classes 1 and 2 tied
 * above class 0 give 1. */
static void test_predict_ties(void **state)
{
    (void)state;
    net t;
    net_open(&t, small_sizes, 4, 4, 22);
    float *last = t.params + t.np - (6 * 3 + 3);
    memset(last, 0, (6 * 3 + 3) * sizeof(float));
    int32_t pred[4];
    mlp_predict(t.m, t.params, t.x, 4, pred, t.scratch);
    for (int b = 0; b < 4; b++)
        assert_int_equal(pred[b], 0);
    last[6 * 3 + 1] = 0.5f;
    last[6 * 3 + 2] = 0.5f;
    mlp_predict(t.m, t.params, t.x, 4, pred, t.scratch);
    for (int b = 0; b < 4; b++)
        assert_int_equal(pred[b], 1);
    net_close(&t);
}

/* accumulate == 1 on a buffer holding G gives G + (the accumulate == 0
 * result) element-wise, bit for bit, and the same loss. */
static void test_accumulate(void **state)
{
    (void)state;
    net t;
    net_open(&t, small_sizes, 4, 4, 31);
    net_random_biases(&t);
    const double l0 = mlp_leaf(t.m, t.params, t.x, t.y, 4, t.grad, 0, t.scratch);
    float *g = malloc(t.np * sizeof(float));
    assert_non_null(g);
    for (size_t i = 0; i < t.np; i++)
        g[i] = (unit() - 0.5f) * 4.0f;
    float *acc = malloc(t.np * sizeof(float));
    assert_non_null(acc);
    memcpy(acc, g, t.np * sizeof(float));
    const double l1 = mlp_leaf(t.m, t.params, t.x, t.y, 4, acc, 1, t.scratch);
    assert_memory_equal(&l0, &l1, sizeof l0);
    for (size_t i = 0; i < t.np; i++) {
        const float e = g[i] + t.grad[i];
        assert_memory_equal(&e, &acc[i], sizeof e);
    }
    free(g);
    free(acc);
    net_close(&t);
}

/* A leaf is its samples in order: the leaf loss is 0.0 + loss_0 + loss_1 + ...
 * of one-sample leaves; every bias gradient (a plain sum over the samples,
 * from +0.0) is what accumulating the one-sample bias gradients in order
 * gives; and the first layer's weight gradient is the fused sum, in sample
 * order from +0.0, of x[b][k] times the one-sample gradient of the first
 * bias, which is that sample's gradient at the first layer's output (dense.h:
 * s = fmaf(in[b][k], dout[b][n], s)). All bit for bit. (Accumulating whole
 * one-sample weight gradients would round each product on its own: a
 * different, unfused, sum.) */
static void test_leaf_is_ordered_sum_of_samples(void **state)
{
    (void)state;
    net t;
    const size_t n = 7;
    net_open(&t, small_sizes, 4, n, 41);
    net_random_biases(&t);
    const double leaf_loss = mlp_leaf(t.m, t.params, t.x, t.y, n, t.grad, 0, t.scratch);
    float *g = malloc(n * t.np * sizeof(float));
    assert_non_null(g);
    double sum = 0.0;
    for (size_t b = 0; b < n; b++)
        sum = sum + mlp_leaf(t.m, t.params, t.x + b * small_sizes[0], t.y + b, 1, g + b * t.np, 0, t.scratch);
    assert_memory_equal(&sum, &leaf_loss, sizeof sum);
    size_t shape[2];
    for (size_t l = 0; l < 3; l++) {
        const size_t off = mlp_tensor(t.m, l, 1, shape);
        for (size_t j = 0; j < shape[0]; j++) {
            float s = 0.0f;
            for (size_t b = 0; b < n; b++)
                s = s + g[b * t.np + off + j];
            assert_memory_equal(&s, &t.grad[off + j], sizeof s);
        }
    }
    const size_t w0 = mlp_tensor(t.m, 0, 0, shape), b0 = mlp_tensor(t.m, 0, 1, shape);
    const size_t K = small_sizes[0], N = small_sizes[1];
    for (size_t k = 0; k < K; k++)
        for (size_t j = 0; j < N; j++) {
            float s = 0.0f;
            for (size_t b = 0; b < n; b++)
                s = fmaf(t.x[b * K + k], g[b * t.np + b0 + j], s);
            assert_memory_equal(&s, &t.grad[w0 + k * N + j], sizeof s);
        }
    free(g);
    net_close(&t);
}

/* Same inputs, same bits: twice in a row, with the scratch poisoned in
 * between (no result may depend on what the scratch held), and with a net
 * created for a larger max_leaf (another scratch layout). */
static void test_deterministic(void **state)
{
    (void)state;
    net t;
    net_open(&t, small_sizes, 4, 5, 51);
    net_random_biases(&t);
    float *g1 = malloc(t.np * sizeof(float)), *g2 = malloc(t.np * sizeof(float));
    assert_true(g1 && g2);
    memset(t.scratch, 0, mlp_scratch_bytes(t.m));
    const double l1 = mlp_leaf(t.m, t.params, t.x, t.y, 5, g1, 0, t.scratch);
    memset(t.scratch, 0xff, mlp_scratch_bytes(t.m));   /* NaN patterns everywhere */
    memset(g2, 0x7f, t.np * sizeof(float));
    const double l2 = mlp_leaf(t.m, t.params, t.x, t.y, 5, g2, 0, t.scratch);
    assert_memory_equal(&l1, &l2, sizeof l1);
    assert_memory_equal(g1, g2, t.np * sizeof(float));

    mlp *big;
    assert_int_equal(mlp_create(&big, small_sizes, 4, 64, NULL), LS_OK);
    mlp_prepare(big, t.params);
    void *bs = malloc(mlp_scratch_bytes(big));
    assert_non_null(bs);
    const double l3 = mlp_leaf(big, t.params, t.x, t.y, 5, g2, 0, bs);
    assert_memory_equal(&l1, &l3, sizeof l1);
    assert_memory_equal(g1, g2, t.np * sizeof(float));
    free(bs);
    mlp_destroy(big);
    free(g1);
    free(g2);
    net_close(&t);
}

/* The prepare parts (blocks of 32 columns of each transposed W, run on the
 * engine's threads in any order) together are mlp_prepare: after a prepare
 * of other parameters, the parts in reverse order give the leaf of a plain
 * mlp_prepare bit for bit. 70 columns make a last block of 6. */
static void test_prepare_parts_any_order(void **state)
{
    (void)state;
    static const size_t sizes[] = { 19, 40, 70, 5 };
    net t;
    net_open(&t, sizes, 4, 6, 77);
    net_random_biases(&t);
    assert_int_equal(mlp_prepare_parts(t.m), 3 + 1);
    float *g1 = malloc(t.np * sizeof(float)), *g2 = malloc(t.np * sizeof(float)), *other = malloc(t.np * sizeof(float));
    assert_true(g1 && g2 && other);
    const double l1 = mlp_leaf(t.m, t.params, t.x, t.y, 6, g1, 0, t.scratch);
    for (size_t i = 0; i < t.np; i++)
        other[i] = unit() - 0.5f;
    mlp_prepare(t.m, other);
    for (size_t p = mlp_prepare_parts(t.m); p-- > 0;)
        mlp_prepare_part(t.m, t.params, p);
    const double l2 = mlp_leaf(t.m, t.params, t.x, t.y, 6, g2, 0, t.scratch);
    assert_memory_equal(&l1, &l2, sizeof l1);
    assert_memory_equal(g1, g2, t.np * sizeof(float));
    /* without hidden layers there is nothing to transpose, but one part */
    mlp *flat;
    static const size_t flat_sizes[] = { 19, 5 };
    assert_int_equal(mlp_create(&flat, flat_sizes, 2, 6, NULL), LS_OK);
    assert_int_equal(mlp_prepare_parts(flat), 1);
    mlp_prepare_part(flat, t.params, 0);
    mlp_destroy(flat);
    free(g1);
    free(g2);
    free(other);
    net_close(&t);
}

/* An empty leaf: loss 0.0, gradient +0.0 everywhere, or G + 0.0f when accumulating. */
static void test_empty_leaf(void **state)
{
    (void)state;
    net t;
    net_open(&t, small_sizes, 4, 4, 61);
    memset(t.grad, 0x55, t.np * sizeof(float));
    const double l = mlp_leaf(t.m, t.params, t.x, t.y, 0, t.grad, 0, t.scratch);
    assert_true(l == 0.0 && !signbit(l));
    for (size_t i = 0; i < t.np; i++)
        assert_true(t.grad[i] == 0.0f && !signbit(t.grad[i]));
    for (size_t i = 0; i < t.np; i++)
        t.grad[i] = (float)i - 3.0f;
    mlp_leaf(t.m, t.params, t.x, t.y, 0, t.grad, 1, t.scratch);
    for (size_t i = 0; i < t.np; i++)
        assert_true(t.grad[i] == (float)i - 3.0f);
    net_close(&t);
}

/* The SIMD paths give the scalar twins' bits: the real 784-256-256-10 net at
 * a leaf of 32 and a partial leaf of 13, and the small net. */
static void check_paths(const size_t *sizes, size_t n_sizes, size_t leaf, size_t count, uint64_t seed)
{
    net t;
    net_open(&t, sizes, n_sizes, leaf, seed);
    net_random_biases(&t);
    const int settings[3] = { DENSE_SIMD_OFF, DENSE_SIMD_BEST, DENSE_SIMD_AVX2 };
    float *g[3];
    double l[3];
    int32_t pred[3][64];
    const int prev = dense_set_simd(DENSE_SIMD_BEST);
    for (int s = 0; s < 3; s++) {
        dense_set_simd(settings[s]);
        g[s] = malloc(t.np * sizeof(float));
        assert_non_null(g[s]);
        l[s] = mlp_leaf(t.m, t.params, t.x, t.y, count, g[s], 0, t.scratch);
        mlp_predict(t.m, t.params, t.x, count, pred[s], t.scratch);
        if (s > 0) {
            if (memcmp(&l[0], &l[s], sizeof l[0]) != 0 || memcmp(g[0], g[s], t.np * sizeof(float)) != 0)
                fail_msg("mlp_leaf on path %s differs from the scalar twins", dense_simd_name());
            assert_memory_equal(pred[0], pred[s], count * sizeof(int32_t));
        }
    }
    dense_set_simd(prev);
    for (int s = 0; s < 3; s++)
        free(g[s]);
    net_close(&t);
}

static void test_simd_paths_equal(void **state)
{
    (void)state;
    const size_t real[] = { 784, 256, 256, 10 };
    check_paths(real, 4, 32, 32, 71);
    check_paths(real, 4, 32, 13, 72);
    check_paths(small_sizes, 4, 9, 9, 73);
}

/* θ_0: the same bits for the same seed, others for another seed; W from the
 * documented address and expression, inside [-1/sqrt(fan_in), 1/sqrt(fan_in));
 * biases +0.0. */
static void test_init(void **state)
{
    (void)state;
    const size_t sizes[] = { 9, 16, 5 };
    mlp *m;
    assert_int_equal(mlp_create(&m, sizes, 3, 4, NULL), LS_OK);
    const size_t np = mlp_n_params(m);
    assert_int_equal(np, 9 * 16 + 16 + 16 * 5 + 5);
    float *a = malloc(np * sizeof(float)), *b = malloc(np * sizeof(float));
    assert_true(a && b);
    memset(b, 0x33, np * sizeof(float));
    mlp_init(m, a, 5);
    mlp_init(m, b, 5);
    assert_memory_equal(a, b, np * sizeof(float));
    mlp_init(m, b, 6);
    assert_memory_not_equal(a, b, 9 * 16 * sizeof(float));
    size_t off = 0;
    for (size_t l = 0; l < 2; l++) {
        const size_t K = sizes[l], N = sizes[l + 1];
        const float bound = 1.0f / sqrtf((float)K);
        float lo = bound, hi = -bound;
        for (size_t e = 0; e < K * N; e++) {
            const float w = a[off + e];
            const float u = rng_uniformf(5, RNG_INIT, 2 * l, e, 0);
            const float expect = (2.0f * u - 1.0f) * bound;
            assert_memory_equal(&w, &expect, sizeof w);
            assert_true(w >= -bound && w < bound);
            lo = w < lo ? w : lo;
            hi = w > hi ? w : hi;
        }
        /* Spread over the range, not a constant. */
        assert_true(lo < -0.5f * bound && hi > 0.5f * bound);
        off += K * N;
        for (size_t n = 0; n < N; n++)
            assert_true(a[off + n] == 0.0f && !signbit(a[off + n]));
        off += N;
    }
    free(a);
    free(b);
    mlp_destroy(m);
}

static void expect_einval(const size_t *sizes, size_t n_sizes, size_t max_leaf)
{
    mlp *m = (mlp *)(uintptr_t)1;
    ls_err err = { { 0 } };
    assert_int_equal(mlp_create(&m, sizes, n_sizes, max_leaf, &err), LS_EINVAL);
    assert_null(m);
    assert_true(err.msg[0] != 0);
    /* NULL err is allowed. */
    assert_int_equal(mlp_create(&m, sizes, n_sizes, max_leaf, NULL), LS_EINVAL);
}

static void test_create_rejects(void **state)
{
    (void)state;
    const size_t ok[] = { 5, 7, 6, 3 };
    expect_einval(ok, 0, 4);
    expect_einval(ok, 1, 4);
    size_t many[MLP_MAX_LAYERS + 2];
    for (size_t i = 0; i < MLP_MAX_LAYERS + 2; i++)
        many[i] = 3;
    expect_einval(many, MLP_MAX_LAYERS + 2, 4);
    const size_t zero_in[] = { 0, 7, 3 }, zero_mid[] = { 5, 0, 3 }, zero_out[] = { 5, 7, 0 };
    expect_einval(zero_in, 3, 4);
    expect_einval(zero_mid, 3, 4);
    expect_einval(zero_out, 3, 4);
    const size_t too_many_classes[] = { 5, (size_t)INT32_MAX + 1 };
    expect_einval(too_many_classes, 2, 4);
    expect_einval(ok, 4, 0);
    const size_t huge[] = { SIZE_MAX / 2, SIZE_MAX / 2 };
    expect_einval(huge, 2, 4);

    mlp *m;
    assert_int_equal(mlp_create(&m, many, MLP_MAX_LAYERS + 1, 4, NULL), LS_OK);
    assert_true(mlp_scratch_bytes(m) % 64 == 0);
    mlp_destroy(m);
    mlp_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_rejects),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_gradient_fd),
        cmocka_unit_test(test_loss_and_predict_match_reference),
        cmocka_unit_test(test_softmax_formula_bits),
        cmocka_unit_test(test_predict_ties),
        cmocka_unit_test(test_accumulate),
        cmocka_unit_test(test_leaf_is_ordered_sum_of_samples),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_prepare_parts_any_order),
        cmocka_unit_test(test_empty_leaf),
        cmocka_unit_test(test_simd_paths_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
