/* test_nn.c — the layers of engine/nn/ against themselves and the kernels
 * under them, bit for bit (memcmp, never a tolerance; PyTorch checks the
 * values: test_nn_oracle.sh):
 *   - every layer's forward and backward give the same bits on every SIMD
 *     path: dense.h at its best path and capped at AVX2 with the layers'
 *     clones on, and both switched to their scalar twins;
 *   - the dense layer is dense_forward / dense_backward_weights / a
 *     transpose and dense_forward, called directly;
 *   - a network declared from layers (dense, relu, dense, relu, dense,
 *     xent) has the hand-written mlp model's loss and gradient bits;
 *   - parameter gradients are written, not accumulated, and dropout's mask
 *     does not depend on how the samples are split into calls;
 *   - layers keep no state: 1, 2, 3 and 8 threads running every layer at
 *     once each get the one-thread bits;
 *   - labels and ids outside the table give NaN, never a stray read;
 *   - bad settings are refused with LS_EINVAL naming them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/models/mlp/mlp.h"
#include "engine/nn/nn.h"
#include "engine/nn/nn_act.h"
#include "engine/nn/nn_attn.h"
#include "engine/nn/nn_conv.h"
#include "engine/nn/nn_dense.h"
#include "engine/nn/nn_embed.h"
#include "engine/nn/nn_loss.h"
#include "engine/nn/nn_norm.h"
#include "engine/num/dense.h"
#include "engine/num/rng.h"

static float *rnd(size_t n, uint64_t a, float scale)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        const float u = rng_uniformf(31, RNG_TEST, a, i, 0);
        /* exact zeros of both signs now and then: a changed start value or
         * order of additions shows in the bits */
        p[i] = i % 13 == 5 ? 0.0f : i % 17 == 3 ? -0.0f : (2.0f * u - 1.0f) * scale;
    }
    return p;
}

static int32_t *ids(size_t n, size_t bound, uint64_t a)
{
    int32_t *p = malloc((n ? n : 1) * sizeof(int32_t));
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (int32_t)rng_below(31, RNG_TEST, a, i, 1, bound);
    return p;
}

static void *zalloc64(size_t bytes)
{
    void *p = aligned_alloc(64, nn_round64(bytes ? bytes : 64));
    assert_non_null(p);
    memset(p, 0, nn_round64(bytes ? bytes : 64));
    return p;
}

/* Everything one run of a layer writes: y, dx (dx2 for add), dw, the loss. */
typedef struct {
    float *y, *dx, *dx2, *dw;
    double loss;
    size_t ny, nx, nw;
} outputs;

static void free_outputs(outputs *o)
{
    free(o->y), free(o->dx), free(o->dx2), free(o->dw);
}

/* One forward and backward of l on n samples from fixed inputs. */
static outputs run(const nn_layer *l, size_t n)
{
    outputs o = {0};
    o.ny = n * l->out_size;
    o.nx = n * l->in_size;
    o.nw = l->n_params;
    float *x = rnd(o.nx, 1, 1.0f), *x2 = rnd(o.nx, 2, 1.0f), *w = rnd(o.nw, 3, 0.5f);
    float *dy = rnd(o.ny, 4, 1.0f);
    int32_t *id = ids(n * l->in[0], l->kind == NN_EMBED ? l->vocab : l->in[2], 5);
    float *act = zalloc64((n * l->act_floats + 1) * sizeof(float));
    void *scratch = zalloc64(nn_scratch_bytes(l, n));
    o.y = zalloc64(o.ny * sizeof(float));
    o.dx = zalloc64(o.nx * sizeof(float));
    o.dx2 = zalloc64(o.nx * sizeof(float));
    o.dw = zalloc64((o.nw + 1) * sizeof(float));
    switch (l->kind) {
    case NN_DENSE:
        nn_dense_forward(l, o.y, act, x, w, n, scratch);
        nn_dense_backward(l, o.dx, o.dw, dy, act, x, o.y, w, n, scratch);
        break;
    case NN_CONV2D:
        nn_conv_forward(l, o.y, act, x, w, n, scratch);
        nn_conv_backward(l, o.dx, o.dw, dy, act, x, o.y, w, n, scratch);
        break;
    case NN_MAXPOOL:
    case NN_AVGPOOL:
        nn_conv_pool_forward(l, o.y, act, x, w, n, scratch);
        nn_conv_pool_backward(l, o.dx, o.dw, dy, act, x, o.y, w, n, scratch);
        break;
    case NN_LAYERNORM:
        nn_norm_forward(l, o.y, act, x, w, n, scratch);
        nn_norm_backward(l, o.dx, o.dw, dy, act, x, o.y, w, n, scratch);
        break;
    case NN_ATTN:
        nn_attn_forward(l, o.y, act, x, w, n, scratch);
        nn_attn_backward(l, o.dx, o.dw, dy, act, x, o.y, w, n, scratch);
        break;
    case NN_EMBED:
        nn_embed_forward(l, o.y, id, w, n);
        nn_embed_backward(l, o.dw, dy, id, n);
        break;
    case NN_POSEMBED:
        nn_embed_pos_forward(l, o.y, x, w, n);
        nn_embed_pos_backward(l, o.dx, o.dw, dy, n);
        break;
    case NN_RELU:
        nn_act_relu_forward(l, o.y, x, n);
        nn_act_relu_backward(l, o.dx, dy, x, n);
        break;
    case NN_GELU:
        nn_act_gelu_forward(l, o.y, act, x, n);
        nn_act_gelu_backward(l, o.dx, dy, act, x, n);
        break;
    case NN_ADD:
        nn_act_add_forward(l, o.y, x, x2, n);
        nn_act_add_backward(l, o.dx, o.dx2, dy, n);
        break;
    case NN_DROPOUT:
        nn_act_dropout_forward(l, o.y, x, n, 1, 2, 3);
        nn_act_dropout_backward(l, o.dx, dy, n, 1, 2, 3);
        break;
    case NN_XENT:
        o.loss = nn_loss_xent_forward(l, x, id, n, scratch);
        nn_loss_xent_backward(l, o.dx, x, id, n, scratch);
        break;
    }
    free(x), free(x2), free(w), free(dy), free(id), free(act), free(scratch);
    return o;
}

static void same_bits(const outputs *a, const outputs *b, const char *what)
{
    if (memcmp(a->y, b->y, a->ny * sizeof(float)) != 0 || memcmp(a->dx, b->dx, a->nx * sizeof(float)) != 0 ||
        memcmp(a->dx2, b->dx2, a->nx * sizeof(float)) != 0 || memcmp(a->dw, b->dw, a->nw * sizeof(float)) != 0 ||
        memcmp(&a->loss, &b->loss, sizeof(double)) != 0)
        fail_msg("%s: the paths differ", what);
}

static nn_layer layer(nn_layer l)
{
    ls_err err;
    if (nn_describe(&l, &err) != LS_OK)
        fail_msg("nn_describe: %s", err.msg);
    return l;
}

/* The cases: shapes with tails of every SIMD width (odd sizes, 17, 33, 300). */
static nn_layer *cases(size_t *count)
{
    static nn_layer c[20];
    size_t k = 0;
    c[k++] = layer((nn_layer){.kind = NN_DENSE, .in = {1, 1, 37}, .units = 19, .bias = 1});
    c[k++] = layer((nn_layer){.kind = NN_DENSE, .in = {5, 1, 64}, .units = 33});
    c[k++] = layer((nn_layer){.kind = NN_CONV2D, .in = {9, 7, 3}, .units = 17, .k = 3, .same = 1, .bias = 1});
    c[k++] = layer((nn_layer){.kind = NN_CONV2D, .in = {8, 8, 5}, .units = 6, .k = 5, .bias = 1});
    c[k++] = layer((nn_layer){.kind = NN_MAXPOOL, .in = {9, 8, 5}, .k = 2});
    c[k++] = layer((nn_layer){.kind = NN_AVGPOOL, .in = {9, 8, 5}, .k = 3});
    c[k++] = layer((nn_layer){.kind = NN_LAYERNORM, .in = {3, 1, 300}, .eps = 1e-5});
    c[k++] = layer((nn_layer){.kind = NN_LAYERNORM, .in = {4, 1, 33}, .eps = 1e-5});
    c[k++] = layer((nn_layer){.kind = NN_EMBED, .in = {7, 1, 1}, .vocab = 13, .units = 33});
    c[k++] = layer((nn_layer){.kind = NN_POSEMBED, .in = {7, 1, 33}});
    c[k++] = layer((nn_layer){.kind = NN_ATTN, .in = {9, 1, 24}, .heads = 3});
    /* head sizes 16 (gpt's) and 20 with 70 and 37 tokens: the attention's
     * register tiles (nn_attn.c) with row and column tails */
    c[k++] = layer((nn_layer){.kind = NN_ATTN, .in = {70, 1, 32}, .heads = 2});
    c[k++] = layer((nn_layer){.kind = NN_ATTN, .in = {37, 1, 40}, .heads = 2});
    c[k++] = layer((nn_layer){.kind = NN_RELU, .in = {7, 1, 37}});
    c[k++] = layer((nn_layer){.kind = NN_GELU, .in = {7, 1, 37}});
    c[k++] = layer((nn_layer){.kind = NN_ADD, .in = {7, 1, 37}});
    c[k++] = layer((nn_layer){.kind = NN_DROPOUT, .in = {7, 1, 37}, .p = 0.25f});
    c[k++] = layer((nn_layer){.kind = NN_XENT, .in = {3, 1, 259}});
    *count = k;
    return c;
}

/* Every layer: best SIMD path = AVX2-capped = scalar twins, bit for bit. */
static void test_paths_equal(void **state)
{
    (void)state;
    size_t count;
    nn_layer *c = cases(&count);
    const size_t n = 5;
    for (size_t i = 0; i < count; i++) {
        dense_set_simd(DENSE_SIMD_BEST);
        nn_set_simd(1);
        outputs best = run(&c[i], n);
        dense_set_simd(DENSE_SIMD_AVX2);
        outputs avx2 = run(&c[i], n);
        dense_set_simd(DENSE_SIMD_OFF);
        nn_set_simd(0);
        outputs scalar = run(&c[i], n);
        char what[128];
        snprintf(what, sizeof what, "layer kind %d (case %zu), best vs scalar", (int)c[i].kind, i);
        same_bits(&best, &scalar, what);
        snprintf(what, sizeof what, "layer kind %d (case %zu), avx2 vs scalar", (int)c[i].kind, i);
        same_bits(&avx2, &scalar, what);
        free_outputs(&best), free_outputs(&avx2), free_outputs(&scalar);
    }
    dense_set_simd(DENSE_SIMD_BEST);
    nn_set_simd(1);
}

/* Layers keep no state between calls: threads running every case at once
 * (1, 2, 3 and 8 of them, more than this host's cores) get the bits one
 * thread got. */
#define WORKER_CASES 20
typedef struct {
    const nn_layer *c;
    size_t count;
    outputs out[WORKER_CASES];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (size_t i = 0; i < w->count; i++)
        w->out[i] = run(&w->c[i], 4);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    size_t count;
    nn_layer *c = cases(&count);
    assert_true(count <= WORKER_CASES);
    static worker ref, ws[8];
    ref.c = c;
    ref.count = count;
    work(&ref);
    const size_t threads[] = {1, 2, 3, 8};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pthread_t tid[8];
        for (size_t k = 0; k < threads[t]; k++) {
            ws[k].c = c;
            ws[k].count = count;
            assert_int_equal(pthread_create(&tid[k], NULL, work, &ws[k]), 0);
        }
        for (size_t k = 0; k < threads[t]; k++) {
            assert_int_equal(pthread_join(tid[k], NULL), 0);
            for (size_t i = 0; i < count; i++) {
                char what[128];
                snprintf(what, sizeof what, "case %zu on thread %zu of %zu", i, k, threads[t]);
                same_bits(&ws[k].out[i], &ref.out[i], what);
                free_outputs(&ws[k].out[i]);
            }
        }
    }
    for (size_t i = 0; i < count; i++)
        free_outputs(&ref.out[i]);
}

/* The dense layer is the kernels called directly. */
static void test_dense_is_kernels(void **state)
{
    (void)state;
    const size_t n = 6, T = 3, K = 29, N = 21, R = n * T;
    nn_layer l = layer((nn_layer){.kind = NN_DENSE, .in = {T, 1, K}, .units = N, .bias = 1});
    outputs o = run(&l, n);
    float *x = rnd(R * K, 1, 1.0f), *w = rnd(K * N + N, 3, 0.5f), *dy = rnd(R * N, 4, 1.0f);
    float *y = zalloc64(R * N * 4), *dw = zalloc64((K * N + N) * 4), *wt = zalloc64(K * N * 4), *dx = zalloc64(R * K * 4);
    dense_forward(y, x, w, w + K * N, R, K, N);
    dense_backward_weights(dw, dw + K * N, x, dy, R, K, N, 0);
    dense_transpose(wt, w, K, N);
    dense_forward(dx, dy, wt, NULL, R, N, K);
    assert_memory_equal(o.y, y, R * N * 4);
    assert_memory_equal(o.dw, dw, (K * N + N) * 4);
    assert_memory_equal(o.dx, dx, R * K * 4);
    free_outputs(&o);
    free(x), free(w), free(dy), free(y), free(dw), free(wt), free(dx);
}

/* Backward writes dw: a gradient buffer full of garbage changes nothing. */
static void test_backward_writes(void **state)
{
    (void)state;
    size_t count;
    nn_layer *c = cases(&count);
    const size_t n = 3;
    for (size_t i = 0; i < count; i++) {
        if (c[i].n_params == 0)
            continue;
        outputs a = run(&c[i], n);
        /* the same call with dw preset to NaN: run() zeroes, so do it here */
        float *x = rnd(n * c[i].in_size, 1, 1.0f), *w = rnd(c[i].n_params, 3, 0.5f);
        float *dy = rnd(n * c[i].out_size, 4, 1.0f), *y = zalloc64(n * c[i].out_size * 4);
        float *act = zalloc64((n * c[i].act_floats + 1) * 4), *dw = zalloc64(c[i].n_params * 4);
        void *scratch = zalloc64(nn_scratch_bytes(&c[i], n));
        int32_t *id = ids(n * c[i].in[0], c[i].kind == NN_EMBED ? c[i].vocab : c[i].in[2], 5);
        for (size_t j = 0; j < c[i].n_params; j++)
            dw[j] = 1e30f;
        switch (c[i].kind) {
        case NN_DENSE:
            nn_dense_forward(&c[i], y, act, x, w, n, scratch);
            nn_dense_backward(&c[i], NULL, dw, dy, act, x, y, w, n, scratch);
            break;
        case NN_CONV2D:
            nn_conv_forward(&c[i], y, act, x, w, n, scratch);
            nn_conv_backward(&c[i], NULL, dw, dy, act, x, y, w, n, scratch);
            break;
        case NN_LAYERNORM:
            nn_norm_forward(&c[i], y, act, x, w, n, scratch);
            nn_norm_backward(&c[i], NULL, dw, dy, act, x, y, w, n, scratch);
            break;
        case NN_ATTN:
            nn_attn_forward(&c[i], y, act, x, w, n, scratch);
            nn_attn_backward(&c[i], NULL, dw, dy, act, x, y, w, n, scratch);
            break;
        case NN_EMBED:
            nn_embed_backward(&c[i], dw, dy, id, n);
            break;
        case NN_POSEMBED: {
            float *dx = zalloc64(n * c[i].in_size * 4);
            nn_embed_pos_backward(&c[i], dx, dw, dy, n);
            free(dx);
            break;
        }
        default:
            fail_msg("kind %d has parameters and no case here", (int)c[i].kind);
        }
        if (memcmp(dw, a.dw, c[i].n_params * 4) != 0)
            fail_msg("layer kind %d: dw depends on what the buffer held (or on dx == NULL)", (int)c[i].kind);
        free_outputs(&a);
        free(x), free(w), free(dy), free(y), free(act), free(dw), free(scratch), free(id);
    }
}

/* Dropout's mask is addressed by the absolute sample: one call on 6 samples
 * equals two calls on 3 each (sample0 0 and 3). */
static void test_dropout_split(void **state)
{
    (void)state;
    const size_t m = 50;
    nn_layer l = layer((nn_layer){.kind = NN_DROPOUT, .in = {m, 1, 1}, .p = 0.5f});
    float *x = rnd(6 * m, 1, 1.0f), *y1 = zalloc64(6 * m * 4), *y2 = zalloc64(6 * m * 4);
    nn_act_dropout_forward(&l, y1, x, 6, 9, 4, 0);
    nn_act_dropout_forward(&l, y2, x, 3, 9, 4, 0);
    nn_act_dropout_forward(&l, y2 + 3 * m, x + 3 * m, 3, 9, 4, 3);
    assert_memory_equal(y1, y2, 6 * m * 4);
    size_t kept = 0;
    for (size_t i = 0; i < 6 * m; i++)
        kept += y1[i] != 0.0f || x[i] == 0.0f;
    assert_true(kept > 100 && kept < 200);   /* p = 0.5 of 300 */
    /* another step draws another mask */
    nn_act_dropout_forward(&l, y2, x, 6, 9, 5, 0);
    assert_memory_not_equal(y1, y2, 6 * m * 4);
    free(x), free(y1), free(y2);
}

/* nn_loss_xent_both = nn_loss_xent_forward's sum and nn_loss_xent_backward's
 * dz (then / div), bit for bit, on both paths: token rows of 256 classes
 * (gpt's head) and 5 classes, labels out of range (a NaN loss, no one-hot). */
static void test_xent_both(void **state)
{
    (void)state;
    const size_t T = 7, n = 3, R = T * n;
    const size_t classes[2] = {256, 5};
    for (int c = 0; c < 2; c++) {
        const size_t C = classes[c];
        nn_layer l = layer((nn_layer){.kind = NN_XENT, .in = {T, 1, C}});
        float *z = rnd(R * C, 11 + (uint64_t)c, 6.0f), *dz = zalloc64(R * C * 4), *dz2 = zalloc64(R * C * 4);
        void *scratch = zalloc64(nn_scratch_bytes(&l, n));
        int32_t lab[21];
        for (size_t r = 0; r < R; r++)
            lab[r] = r == 4 ? -1 : r == 9 ? (int32_t)C : (int32_t)rng_below(31, RNG_TEST, 9, r, 0, C);
        for (int simd = 0; simd < 2; simd++) {
            const int prev = nn_set_simd(simd);
            for (int d = 0; d < 2; d++) {
                const float div = d ? (float)T : 1.0f;
                const double ref = nn_loss_xent_forward(&l, z, lab, n, scratch);
                nn_loss_xent_backward(&l, dz, z, lab, n, scratch);
                for (size_t i = 0; d && i < R * C; i++)
                    dz[i] = dz[i] / div;
                const double got = nn_loss_xent_both(&l, dz2, z, lab, n, div, scratch);
                assert_memory_equal(&ref, &got, sizeof(double));
                assert_memory_equal(dz, dz2, R * C * 4);
            }
            nn_set_simd(prev);
        }
        free(z), free(dz), free(dz2), free(scratch);
    }
}

/* gelu's backward with forward's saved t = with t recomputed (act NULL),
 * bit for bit, on both paths; lengths past the recomputation's chunk. */
static void test_gelu_kept(void **state)
{
    (void)state;
    const size_t m = 300, n = 3;
    nn_layer l = layer((nn_layer){.kind = NN_GELU, .in = {1, 1, m}});
    assert_int_equal(l.act_floats, m);
    float *x = rnd(n * m, 21, 8.0f), *dy = rnd(n * m, 22, 1.0f), *act = zalloc64(n * m * 4);
    float *y = zalloc64(n * m * 4), *y2 = zalloc64(n * m * 4), *dx = zalloc64(n * m * 4), *dx2 = zalloc64(n * m * 4);
    for (int simd = 0; simd < 2; simd++) {
        const int prev = nn_set_simd(simd);
        nn_act_gelu_forward(&l, y, act, x, n);
        nn_act_gelu_forward(&l, y2, NULL, x, n);
        nn_act_gelu_backward(&l, dx, dy, act, x, n);
        nn_act_gelu_backward(&l, dx2, dy, NULL, x, n);
        assert_memory_equal(y, y2, n * m * 4);
        assert_memory_equal(dx, dx2, n * m * 4);
        nn_set_simd(prev);
    }
    free(x), free(dy), free(act), free(y), free(y2), free(dx), free(dx2);
}

/* A declared MLP (dense, relu, dense, relu, dense, xent) = mlp_leaf, bit for bit. */
static void test_declared_mlp(void **state)
{
    (void)state;
    const size_t sizes[4] = {23, 40, 17, 10}, n = 16;
    ls_err err;
    mlp *m;
    assert_int_equal(mlp_create(&m, sizes, 4, n, &err), LS_OK);
    const size_t P = mlp_n_params(m);
    float *params = zalloc64(P * 4);
    mlp_init(m, params, 5);
    mlp_prepare(m, params);
    float *x = rnd(n * sizes[0], 1, 1.0f);
    int32_t y32[16];
    for (size_t b = 0; b < n; b++)
        y32[b] = (int32_t)rng_below(31, RNG_TEST, 7, b, 0, sizes[3]);
    void *mscratch = zalloc64(mlp_scratch_bytes(m));
    float *g_ref = zalloc64(P * 4);
    const double loss_ref = mlp_leaf(m, params, x, y32, n, g_ref, 0, mscratch);

    nn_layer d[3], relu[2], xent;
    size_t off[3], at = 0;
    for (int i = 0; i < 3; i++) {
        d[i] = layer((nn_layer){.kind = NN_DENSE, .in = {1, 1, sizes[i]}, .units = sizes[i + 1], .bias = 1});
        off[i] = at;
        at += d[i].n_params;
    }
    assert_int_equal(at, P);   /* the mlp's parameter order: W_0 b_0 W_1 b_1 ... */
    for (int i = 0; i < 2; i++)
        relu[i] = layer((nn_layer){.kind = NN_RELU, .in = {1, 1, sizes[i + 1]}});
    xent = layer((nn_layer){.kind = NN_XENT, .in = {1, 1, sizes[3]}});
    float *pre[3], *post[2], *g = zalloc64(P * 4), *dz = zalloc64(n * 40 * 4), *dh = zalloc64(n * 40 * 4);
    size_t sbytes = nn_scratch_bytes(&xent, n);
    for (int i = 0; i < 3; i++) {
        pre[i] = zalloc64(n * sizes[i + 1] * 4);
        if (nn_scratch_bytes(&d[i], n) > sbytes)
            sbytes = nn_scratch_bytes(&d[i], n);
    }
    for (int i = 0; i < 2; i++)
        post[i] = zalloc64(n * sizes[i + 1] * 4);
    void *scratch = zalloc64(sbytes);
    const float *in = x;
    for (int i = 0; i < 3; i++) {
        nn_dense_forward(&d[i], pre[i], NULL, in, params + off[i], n, scratch);
        if (i < 2) {
            nn_act_relu_forward(&relu[i], post[i], pre[i], n);
            in = post[i];
        }
    }
    const double loss = nn_loss_xent_forward(&xent, pre[2], y32, n, scratch);
    nn_loss_xent_backward(&xent, dz, pre[2], y32, n, scratch);
    for (int i = 2; i >= 0; i--) {
        const float *layer_in = i == 0 ? x : post[i - 1];
        nn_dense_backward(&d[i], i == 0 ? NULL : dh, g + off[i], dz, NULL, layer_in, pre[i], params + off[i], n,
                          scratch);
        if (i > 0)
            nn_act_relu_backward(&relu[i - 1], dz, dh, pre[i - 1], n);
    }
    assert_memory_equal(&loss, &loss_ref, sizeof(double));
    assert_memory_equal(g, g_ref, P * 4);
    mlp_destroy(m);
    for (int i = 0; i < 3; i++)
        free(pre[i]);
    for (int i = 0; i < 2; i++)
        free(post[i]);
    free(params), free(x), free(mscratch), free(g_ref), free(g), free(dz), free(dh), free(scratch);
}

/* Labels and ids outside the table (a corrupt data set): a NaN loss or a
 * NaN row, never a read outside the buffers; valid rows are unchanged. */
static void test_out_of_range(void **state)
{
    (void)state;
    nn_layer xent = layer((nn_layer){.kind = NN_XENT, .in = {1, 1, 5}});
    const float z[15] = {1, 2, 3, 4, 5, -1, 0, 1, 0, -1, 0.5f, 0.25f, 0, 0, 0};
    int32_t good[3] = {4, 0, 2}, bad[3] = {4, INT32_MAX, -1};
    void *scratch = zalloc64(nn_scratch_bytes(&xent, 3));
    float dz[15];
    const double lgood = nn_loss_xent_forward(&xent, z, good, 1, scratch);
    assert_true(lgood == lgood);
    assert_true(isnan(nn_loss_xent_forward(&xent, z, bad, 3, scratch)));
    assert_true(isnan(nn_loss_xent_forward(&xent, z + 10, bad + 2, 1, scratch)));
    nn_loss_xent_backward(&xent, dz, z, bad, 3, scratch);
    for (int i = 5; i < 15; i++)
        assert_true(dz[i] > 0.0f);   /* probabilities, no one-hot term */
    assert_true(dz[4] < 0.0f);

    nn_layer emb = layer((nn_layer){.kind = NN_EMBED, .in = {3, 1, 1}, .vocab = 4, .units = 2});
    const float table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const int32_t id[3] = {3, 4, INT32_MIN};
    float y[6], dw[8];
    const float dy[6] = {1, 1, 1, 1, 1, 1};
    nn_embed_forward(&emb, y, id, table, 1);
    assert_true(y[0] == 7.0f && y[1] == 8.0f && isnan(y[2]) && isnan(y[5]));
    nn_embed_backward(&emb, dw, dy, id, 1);
    for (int i = 0; i < 6; i++)
        assert_true(dw[i] == 0.0f);
    assert_true(dw[6] == 1.0f && dw[7] == 1.0f);
    free(scratch);
}

static void refused(nn_layer l, const char *needle)
{
    ls_err err = {{0}};
    assert_int_equal(nn_describe(&l, &err), LS_EINVAL);
    if (strstr(err.msg, needle) == NULL)
        fail_msg("message \"%s\" does not name \"%s\"", err.msg, needle);
}

static void test_bad_settings(void **state)
{
    (void)state;
    refused((nn_layer){.kind = NN_DENSE, .in = {1, 1, 4}, .units = 0}, "units");
    refused((nn_layer){.kind = NN_DENSE, .in = {1, 0, 4}, .units = 3}, "axis 1");
    refused((nn_layer){.kind = NN_CONV2D, .in = {5, 5, 1}, .units = 2, .k = 4, .same = 1}, "odd");
    refused((nn_layer){.kind = NN_CONV2D, .in = {2, 5, 1}, .units = 2, .k = 3}, "does not fit");
    refused((nn_layer){.kind = NN_MAXPOOL, .in = {1, 5, 1}, .k = 2}, "does not fit");
    refused((nn_layer){.kind = NN_MAXPOOL, .in = {70000, 70000, 1}, .k = 70000}, "too large");
    refused((nn_layer){.kind = NN_LAYERNORM, .in = {1, 1, 4}, .eps = 0.0}, "eps");
    refused((nn_layer){.kind = NN_ATTN, .in = {4, 1, 10}, .heads = 3}, "heads");
    refused((nn_layer){.kind = NN_EMBED, .in = {4, 1, 1}, .vocab = 0, .units = 3}, "vocab");
    refused((nn_layer){.kind = NN_DROPOUT, .in = {4, 1, 1}, .p = 1.0f}, "p = 1");
    refused((nn_layer){.kind = NN_XENT, .in = {1, 1, (size_t)INT32_MAX + 2}}, "at most 2^31");
    refused((nn_layer){.kind = (nn_kind)99, .in = {1, 1, 1}}, "kind 99");
    refused((nn_layer){.kind = NN_DENSE, .in = {1, 1, SIZE_MAX / 2}, .units = 4}, "too");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_equal),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_dense_is_kernels),
        cmocka_unit_test(test_backward_writes),
        cmocka_unit_test(test_dropout_split),
        cmocka_unit_test(test_declared_mlp),
        cmocka_unit_test(test_xent_both),
        cmocka_unit_test(test_gelu_kept),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_bad_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
