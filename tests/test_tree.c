/* test_tree.c — the canonical tree: stream, blocks, chaos plans, unordered
 * foil, leaves read where they are.
 *
 * The reference is the recursive definition of docs/contract.md written out
 * plainly here; every other path must equal it bit for bit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "reduce/tree.h"

#define LEN 5          /* floats per leaf buffer: small, so the exhaustive sweep is quick */
#define MAX_N 300

static float leaf_vals[MAX_N * 4][LEN];
static double leaf_loss[MAX_N * 4];

/* Values of very different magnitudes, so the order of additions shows in the bits. */
static void fill_leaves(unsigned seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t l = 0; l < MAX_N * 4; l++) {
        for (size_t i = 0; i < LEN; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            int e = (int)(x % 40) - 20;
            float m = (float)((x >> 20) % 100000) / 100000.0f + 0.5f;
            leaf_vals[l][i] = ldexpf((x & 1) ? m : -m, e);
        }
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        leaf_loss[l] = ldexp((double)(x >> 11) / 9007199254740992.0, (int)(x % 30) - 15);
    }
}

/* The definition: sum(l, n) = sum(l, k) + sum(l + k, n - k). */
static void ref_sum(size_t l, size_t n, float *out, double *loss)
{
    if (n == 1) {
        memcpy(out, leaf_vals[l], sizeof leaf_vals[l]);
        *loss = leaf_loss[l];
        return;
    }
    size_t k = 1;
    while (k * 2 < n)
        k *= 2;
    float a[LEN], b[LEN];
    double la, lb;
    ref_sum(l, k, a, &la);
    ref_sum(l + k, n - k, b, &lb);
    for (size_t i = 0; i < LEN; i++)
        out[i] = a[i] + b[i];
    *loss = la + lb;
}

static int floor_log2(size_t n)
{
    int m = 0;
    while (n > 1) {
        n >>= 1;
        m++;
    }
    return m;
}

static void test_split(void **state)
{
    (void)state;
    assert_int_equal(tree_split(2), 1);
    assert_int_equal(tree_split(3), 2);
    assert_int_equal(tree_split(4), 2);
    assert_int_equal(tree_split(5), 4);
    assert_int_equal(tree_split(8), 4);
    assert_int_equal(tree_split(9), 8);
    assert_int_equal(tree_split(300), 256);
}

/* The test can fail: a plain left-to-right sum differs from the tree for some n. */
static void test_order_matters(void **state)
{
    (void)state;
    fill_leaves(1);
    int differ = 0;
    for (size_t n = 3; n <= 64 && !differ; n++) {
        float t[LEN], s[LEN];
        double lt;
        ref_sum(0, n, t, &lt);
        memcpy(s, leaf_vals[0], sizeof s);
        for (size_t l = 1; l < n; l++)
            for (size_t i = 0; i < LEN; i++)
                s[i] = s[i] + leaf_vals[l][i];
        differ = memcmp(s, t, sizeof s) != 0;
    }
    assert_true(differ);
}

static void test_stream_exhaustive(void **state)
{
    (void)state;
    fill_leaves(2);
    static float store[TREE_MAX_DEPTH][LEN];
    float *bufs[TREE_MAX_DEPTH];
    for (int i = 0; i < TREE_MAX_DEPTH; i++)
        bufs[i] = store[i];
    for (size_t n = 1; n <= MAX_N; n++) {
        int cap = floor_log2(n) + 1;
        tree_stream s;
        tree_stream_init(&s, bufs, cap, LEN);
        for (size_t l = 0; l < n; l++) {
            int mode;
            float *slot = tree_stream_slot(&s, &mode);
            assert_non_null(slot);
            for (size_t i = 0; i < LEN; i++)
                slot[i] = mode == TREE_ADD ? slot[i] + leaf_vals[l][i] : leaf_vals[l][i];
            tree_stream_push(&s, leaf_loss[l]);
        }
        double loss;
        float *res = tree_stream_finish(&s, &loss);
        float ref[LEN];
        double rl;
        ref_sum(0, n, ref, &rl);
        assert_memory_equal(res, ref, sizeof ref);
        assert_memory_equal(&loss, &rl, sizeof rl);
        assert_true(s.high_water <= cap);
        assert_true(res == bufs[0]);
    }
}

/* The leaf callback of the reducer tests. */
typedef struct {
    unsigned delay_seed;   /* 0: no delays */
    size_t calls;
} leaf_ctx;

static double leaf_fn(void *ctx, size_t leaf, float *buf, int mode, int worker)
{
    leaf_ctx *c = ctx;
    (void)worker;
    if (c->delay_seed != 0) {
        unsigned h = (unsigned)(leaf * 2654435761u) ^ c->delay_seed;
        struct timespec ts = { 0, (long)(h % 300) * 1000 };
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < LEN; i++)
        buf[i] = mode == TREE_WRITE ? leaf_vals[leaf][i] : buf[i] + leaf_vals[leaf][i];
    return leaf_loss[leaf];
}

static void check_plan(pool *p, size_t n, const tree_block *blocks, size_t nb, unsigned delay)
{
    tree_reducer *r;
    ls_err err;
    assert_int_equal(tree_reducer_create(&r, p, LEN, n, &err), LS_OK);
    leaf_ctx ctx = { delay, 0 };
    const float *sum;
    double loss;
    assert_int_equal(tree_reduce_plan(r, blocks, nb, leaf_fn, &ctx, &sum, &loss), LS_OK);
    float ref[LEN];
    double rl;
    ref_sum(0, n, ref, &rl);
    assert_memory_equal(sum, ref, sizeof ref);
    assert_memory_equal(&loss, &rl, sizeof rl);
    size_t total = 0;
    for (int w = 0; w < pool_threads(p); w++)
        total += tree_worker_leaves(r)[w];
    assert_int_equal(total, n);
    tree_reducer_destroy(r);
}

/* Every n <= 300, every power-of-two block size, at 1, 2 and 3 threads. */
static void test_blocks_exhaustive(void **state)
{
    (void)state;
    fill_leaves(3);
    static tree_block blocks[MAX_N];
    int threads[] = { 1, 2, 3 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        for (size_t n = 1; n <= MAX_N; n++) {
            for (size_t bs = 1; bs / 2 < n; bs *= 2) {
                size_t nb = 0;
                for (size_t f = 0; f < n; f += bs) {
                    blocks[nb].first = f;
                    blocks[nb].count = n - f < bs ? n - f : bs;
                    nb++;
                }
                check_plan(p, n, blocks, nb, 0);
            }
        }
        pool_destroy(p);
    }
}

/* The default plan at many thread counts, more threads than cores included,
 * and a check that the work really was spread over several workers. */
static void test_default_plan(void **state)
{
    (void)state;
    fill_leaves(4);
    int threads[] = { 1, 2, 3, 4, 7, 8, 16 };
    size_t sizes[] = { 1, 2, 3, 5, 16, 17, 100, 255, 256, 300 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t n = sizes[s];
            tree_reducer *r;
            assert_int_equal(tree_reducer_create(&r, p, LEN, n, NULL), LS_OK);
            leaf_ctx ctx = { 0, 0 };
            const float *sum;
            double loss;
            assert_int_equal(tree_reduce(r, leaf_fn, &ctx, &sum, &loss), LS_OK);
            float ref[LEN];
            double rl;
            ref_sum(0, n, ref, &rl);
            assert_memory_equal(sum, ref, sizeof ref);
            assert_memory_equal(&loss, &rl, sizeof rl);
            int busy = 0;
            for (int w = 0; w < threads[t]; w++)
                busy += tree_worker_leaves(r)[w] > 0;
            if (threads[t] >= 2 && n >= 2)
                assert_true(busy >= 2);
            assert_true(tree_high_water(r) <= floor_log2(n) + 1);
            tree_reducer_destroy(r);
        }
        pool_destroy(p);
    }
}

/* A random partition of [0, n) into aligned power-of-two blocks. */
static size_t random_plan(size_t n, tree_block *blocks, uint64_t *x)
{
    size_t nb = 0, l = 0;
    while (l < n) {
        *x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17;
        size_t maxp = 1;
        while (l % (maxp * 2) == 0 && maxp * 2 <= 64)
            maxp *= 2;
        size_t p = 1 << (*x % (size_t)(floor_log2(maxp) + 1));
        blocks[nb].first = l;
        blocks[nb].count = n - l < p ? n - l : p;
        l += blocks[nb].count;
        nb++;
    }
    for (size_t i = nb; i > 1; i--) {   /* hand them out in random order */
        *x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17;
        size_t j = *x % i;
        tree_block tmp = blocks[i - 1];
        blocks[i - 1] = blocks[j];
        blocks[j] = tmp;
    }
    return nb;
}

static void test_chaos(void **state)
{
    (void)state;
    fill_leaves(5);
    static tree_block blocks[MAX_N];
    uint64_t x = 0x12345678abcdefull;
    int threads[] = { 2, 3, 4, 7, 8, 16 };
    int runs = 0;
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        for (int rep = 0; rep < 8; rep++) {
            size_t n = 1 + (size_t)(x % 200);
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            size_t nb = random_plan(n, blocks, &x);
            check_plan(p, n, blocks, nb, (unsigned)(rep + 1));
            runs++;
        }
        pool_destroy(p);
    }
    printf("chaos: %d random plans with random delays, all equal to the reference\n", runs);
}

static void test_bad_plans(void **state)
{
    (void)state;
    pool *p;
    assert_int_equal(pool_create(&p, 2, NULL), LS_OK);
    tree_reducer *r;
    assert_int_equal(tree_reducer_create(&r, p, LEN, 8, NULL), LS_OK);
    leaf_ctx ctx = { 0, 0 };
    const float *sum;
    double loss;
    tree_block misaligned[] = { { 0, 1 }, { 1, 2 }, { 3, 1 }, { 4, 4 } };
    assert_int_equal(tree_reduce_plan(r, misaligned, 4, leaf_fn, &ctx, &sum, &loss), LS_EINVAL);
    tree_block gap[] = { { 0, 4 }, { 6, 2 } };
    assert_int_equal(tree_reduce_plan(r, gap, 2, leaf_fn, &ctx, &sum, &loss), LS_EINVAL);
    tree_block overlap[] = { { 0, 4 }, { 2, 2 }, { 4, 4 } };
    assert_int_equal(tree_reduce_plan(r, overlap, 3, leaf_fn, &ctx, &sum, &loss), LS_EINVAL);
    tree_block not_pow2[] = { { 0, 3 }, { 3, 5 } };
    assert_int_equal(tree_reduce_plan(r, not_pow2, 2, leaf_fn, &ctx, &sum, &loss), LS_EINVAL);
    tree_reducer_destroy(r);
    pool_destroy(p);
}

/* The foil: equals per-worker sums (each leaf added onto the accumulator)
 * added in worker order, and its
 * bits change with the thread count (which is what the tree prevents). */
static void test_unordered(void **state)
{
    (void)state;
    fill_leaves(6);
    size_t n = 64;
    float first[LEN];
    int differs = 0;
    int threads[] = { 1, 2, 3, 4, 8 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        int T = threads[t];
        pool *p;
        assert_int_equal(pool_create(&p, T, NULL), LS_OK);
        tree_reducer *r;
        assert_int_equal(tree_reducer_create(&r, p, LEN, n, NULL), LS_OK);
        leaf_ctx ctx = { 0, 0 };
        const float *sum;
        double loss;
        assert_int_equal(tree_reduce_unordered(r, leaf_fn, &ctx, &sum, &loss), LS_OK);
        float ref[LEN] = { 0 };
        for (int w = 0; w < T; w++) {
            size_t l0 = n * (size_t)w / (size_t)T, l1 = n * (size_t)(w + 1) / (size_t)T;
            float acc[LEN];
            memcpy(acc, leaf_vals[l0], sizeof acc);
            for (size_t l = l0 + 1; l < l1; l++)
                for (size_t i = 0; i < LEN; i++)
                    acc[i] = acc[i] + leaf_vals[l][i];
            for (size_t i = 0; i < LEN; i++)
                ref[i] = w == 0 ? acc[i] : ref[i] + acc[i];
        }
        assert_memory_equal(sum, ref, sizeof ref);
        if (t == 0)
            memcpy(first, sum, sizeof first);
        else
            differs |= memcmp(first, sum, sizeof first) != 0;
        tree_reducer_destroy(r);
        /* Fewer leaves than workers: the workers without leaves keep to
         * their own slots (a loss per worker; the sanitizer builds watch). */
        assert_int_equal(tree_reducer_create(&r, p, LEN, 3, NULL), LS_OK);
        assert_int_equal(tree_reduce_unordered(r, leaf_fn, &ctx, &sum, &loss), LS_OK);
        size_t leaves = 0;
        for (int w = 0; w < T; w++)
            leaves += tree_worker_leaves(r)[w];
        assert_int_equal(leaves, 3);
        tree_reducer_destroy(r);
        pool_destroy(p);
    }
    assert_true(differs);
}

/* Buffers larger than a chunk boundary: the parallel top splits the buffer. */
static const float *big_vals;
static size_t big_len;

static double big_leaf(void *ctx, size_t leaf, float *buf, int mode, int worker)
{
    (void)ctx;
    (void)worker;
    for (size_t i = 0; i < big_len; i++)
        buf[i] = mode == TREE_WRITE ? big_vals[leaf * big_len + i] : buf[i] + big_vals[leaf * big_len + i];
    return (double)leaf;
}

static void test_long_buffers(void **state)
{
    (void)state;
    size_t len = 1000, n = 13;
    float *vals = malloc(n * len * sizeof(float));
    float *store = malloc(8 * len * sizeof(float));
    assert_non_null(vals);
    assert_non_null(store);
    for (size_t i = 0; i < n * len; i++)
        vals[i] = (float)((i * 7919) % 1000) / 7.0f - 60.0f;
    big_vals = vals;
    big_len = len;
    /* Reference: the stream, itself checked against the definition above. */
    float *bufs[8];
    for (int i = 0; i < 8; i++)
        bufs[i] = store + (size_t)i * len;
    tree_stream s;
    tree_stream_init(&s, bufs, 8, len);
    for (size_t l = 0; l < n; l++) {
        int mode;
        float *slot = tree_stream_slot(&s, &mode);
        for (size_t i = 0; i < len; i++)
            slot[i] = mode == TREE_ADD ? slot[i] + vals[l * len + i] : vals[l * len + i];
        tree_stream_push(&s, (double)l);
    }
    double ref_loss;
    const float *ref = tree_stream_finish(&s, &ref_loss);
    int threads[] = { 1, 2, 3, 8, 16 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        tree_reducer *r;
        assert_int_equal(tree_reducer_create(&r, p, len, n, NULL), LS_OK);
        const float *sum;
        double loss;
        assert_int_equal(tree_reduce(r, big_leaf, NULL, &sum, &loss), LS_OK);
        assert_memory_equal(sum, ref, len * sizeof(float));
        assert_memory_equal(&loss, &ref_loss, sizeof loss);
        tree_reducer_destroy(r);
        pool_destroy(p);
    }
    free(store);
    free(vals);
}

/* Leaves read where they are (tree_span_sum, tree_loss_sum): against the
 * definition at every leaf count up to MAX_N and every coordinate range of
 * the short buffers; against tree_reduce on long buffers (longer than one
 * stretch of the stack, at depths up to 7) at ranges cut at random. */
static void test_span_sum(void **state)
{
    (void)state;
    fill_leaves(29);
    static float scratch[TREE_SPAN_FLOATS];
    const float *ptrs[MAX_N];
    for (size_t l = 0; l < MAX_N; l++)
        ptrs[l] = leaf_vals[l];
    for (size_t n = 1; n <= MAX_N; n++) {
        float want[LEN], got[LEN];
        double want_loss;
        ref_sum(0, n, want, &want_loss);
        const double loss = tree_loss_sum(leaf_loss, n);
        assert_memory_equal(&loss, &want_loss, sizeof loss);
        for (size_t lo = 0; lo < LEN; lo++)
            for (size_t len = 1; lo + len <= LEN; len++) {
                memset(got, 0xff, sizeof got);
                tree_span_sum(ptrs, n, lo, len, got, scratch);
                assert_memory_equal(got, want + lo, len * sizeof(float));
            }
    }
    const size_t len = 40000, counts[] = { 1, 2, 13, 20, 37, 64, 65, 127 };
    float *vals = malloc(127 * len * sizeof(float)), *got = malloc(len * sizeof(float));
    const float *rows[127];
    assert_non_null(vals);
    assert_non_null(got);
    uint64_t x = 77;
    for (size_t i = 0; i < 127 * len; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        vals[i] = ldexpf((float)(x >> 40) / 16777216.0f - 0.5f, (int)(x % 30) - 15);
    }
    for (size_t l = 0; l < 127; l++)
        rows[l] = vals + l * len;
    big_vals = vals;
    big_len = len;
    pool *p;
    assert_int_equal(pool_create(&p, 3, NULL), LS_OK);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        tree_reducer *r;
        assert_int_equal(tree_reducer_create(&r, p, len, counts[c], NULL), LS_OK);
        const float *sum;
        double loss;
        assert_int_equal(tree_reduce(r, big_leaf, NULL, &sum, &loss), LS_OK);
        for (int k = 0; k < 6; k++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            const size_t lo = k == 0 ? 0 : (size_t)(x % len), n_co = k == 0 ? len : (size_t)(x >> 32) % (len - lo) + 1;
            memset(got, 0xff, n_co * sizeof(float));
            tree_span_sum(rows, counts[c], lo, n_co, got, scratch);
            if (memcmp(got, sum + lo, n_co * sizeof(float)) != 0)
                fail_msg("%zu leaves, coordinates [%zu, %zu): not tree_reduce's sum", counts[c], lo, lo + n_co);
        }
        tree_reducer_destroy(r);
    }
    pool_destroy(p);
    free(got);
    free(vals);
}

/* tree_reduce_deferred, then tree_top_chunk over chunks cut at random
 * points and run on the pool's threads at once (as the trainer's update
 * does): the same sum and loss bits as tree_reduce, for leaf counts around
 * powers of two at 1, 2, 3 and 8 threads; NULL once a reduction was not
 * deferred. */
typedef struct {
    tree_reducer *r;
    size_t cut[17];           /* chunk w is [cut[w], cut[w + 1]) */
    const float *got[16];
} top_job;

static void top_worker(void *arg, int worker, int n_workers)
{
    top_job *j = arg;
    (void)n_workers;
    j->got[worker] = j->cut[worker] < j->cut[worker + 1] ? tree_top_chunk(j->r, j->cut[worker], j->cut[worker + 1])
                                                         : NULL;
}

static void test_deferred_top(void **state)
{
    (void)state;
    const size_t len = 777, max_n = 33;
    float *vals = malloc(max_n * len * sizeof(float));
    assert_non_null(vals);
    uint64_t x = 99;
    for (size_t i = 0; i < max_n * len; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        vals[i] = ldexpf((float)(x % 100000) / 100000.0f - 0.5f, (int)(x >> 40) % 30 - 15);
    }
    big_vals = vals;
    big_len = len;
    const size_t sizes[] = { 1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 33 };
    const int threads[] = { 1, 2, 3, 8 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            tree_reducer *r;
            assert_int_equal(tree_reducer_create(&r, p, len, sizes[k], NULL), LS_OK);
            const float *sum;
            double loss, dloss;
            assert_int_equal(tree_reduce(r, big_leaf, NULL, &sum, &loss), LS_OK);
            float *ref = malloc(len * sizeof(float));
            assert_non_null(ref);
            memcpy(ref, sum, len * sizeof(float));
            assert_null(tree_top_chunk(r, 0, len));
            for (int trial = 0; trial < 3; trial++) {
                assert_int_equal(tree_reduce_deferred(r, big_leaf, NULL, &dloss), LS_OK);
                assert_memory_equal(&dloss, &loss, sizeof loss);
                top_job j = { .r = r };
                const int w = threads[t];
                for (int i = 1; i < w; i++) {
                    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                    j.cut[i] = (size_t)(x % (len + 1));
                }
                j.cut[w] = len;
                for (int i = 1; i < w; i++)   /* sorted, so the chunks partition [0, len) */
                    for (int m = i; m > 1 && j.cut[m - 1] > j.cut[m]; m--) {
                        size_t tmp = j.cut[m];
                        j.cut[m] = j.cut[m - 1];
                        j.cut[m - 1] = tmp;
                    }
                pool_run(p, top_worker, &j);
                const float *res = NULL;
                for (int i = 0; i < w; i++) {
                    if (j.got[i] == NULL)
                        continue;
                    if (res != NULL)
                        assert_ptr_equal(j.got[i], res);   /* one buffer holds the sum */
                    res = j.got[i];
                }
                assert_non_null(res);
                if (memcmp(res, ref, len * sizeof(float)) != 0)
                    fail_msg("%zu leaves, %d threads: the deferred top differs from tree_reduce", sizes[k], w);
            }
            /* tree_top_halves: the two halves, whose sum lane by lane is the
             * tree's; 0 when one block holds every leaf. */
            for (int trial = 0; trial < 2; trial++) {
                assert_int_equal(tree_reduce_deferred(r, big_leaf, NULL, &dloss), LS_OK);
                const float *ha = NULL, *hb = NULL;
                const size_t cut = trial == 0 ? len : (size_t)(x % (len + 1));
                int halves = tree_top_halves(r, 0, cut, &ha, &hb);
                if (!halves) {
                    const float *one = tree_top_chunk(r, 0, len);
                    assert_memory_equal(one, ref, len * sizeof(float));
                    continue;
                }
                assert_int_equal(tree_top_halves(r, cut, len, &ha, &hb), 1);
                for (size_t i = 0; i < len; i++) {
                    const float s2 = ha[i] + hb[i];
                    if (memcmp(&s2, &ref[i], sizeof s2) != 0)
                        fail_msg("%zu leaves, %d threads: halves' sum differs at %zu", sizes[k], threads[t], i);
                }
            }
            /* Any other reduction leaves nothing to combine. */
            double uloss;
            assert_int_equal(tree_reduce_unordered(r, big_leaf, NULL, &sum, &uloss), LS_OK);
            assert_null(tree_top_chunk(r, 0, len));
            assert_int_equal(tree_reduce_deferred(r, big_leaf, NULL, &dloss), LS_OK);
            float *copies = malloc(sizes[k] * len * sizeof(float));
            float *leaf_bufs[33];
            double losses[33] = { 0 };
            assert_non_null(copies);
            for (size_t l = 0; l < sizes[k]; l++) {
                leaf_bufs[l] = copies + l * len;
                memcpy(leaf_bufs[l], vals + l * len, len * sizeof(float));
            }
            assert_int_equal(tree_reduce_buffers(r, leaf_bufs, losses, &sum, &uloss), LS_OK);
            assert_null(tree_top_chunk(r, 0, len));
            if (memcmp(sum, ref, len * sizeof(float)) != 0)
                fail_msg("%zu leaves: tree_reduce_buffers differs from tree_reduce", sizes[k]);
            free(copies);
            free(ref);
            tree_reducer_destroy(r);
        }
        pool_destroy(p);
    }
    free(vals);
}

/* Ranks (one reduction over several processes): for every n <= 300 and
 * every rank count 1..9, the pieces partition the leaves into aligned
 * blocks, contiguous per rank, no rank has more leaves than ceil(n / R)
 * (single-leaf dealing), and summing each rank's pieces (at 1, 2 and 3
 * threads) and then every piece with tree_combine_blocks — over the whole
 * buffer and over slices of it, as ranks that each own a chunk do — equals
 * the definition bit for bit. */
static void test_ranks_exhaustive(void **state)
{
    (void)state;
    fill_leaves(11);
    static tree_block pieces[MAX_N];
    static float copy[MAX_N][LEN];
    float *bufs[MAX_N];
    static float *mine[MAX_N];
    static double losses[MAX_N];
    size_t first[10];
    pool *pools[3];
    for (int t = 0; t < 3; t++)
        assert_int_equal(pool_create(&pools[t], t + 1, NULL), LS_OK);
    for (size_t n = 1; n <= MAX_N; n++) {
        float ref[LEN];
        double rl;
        ref_sum(0, n, ref, &rl);
        for (int R = 1; R <= 9; R++) {
            size_t np = tree_rank_pieces(n, R, pieces, first);
            assert_int_equal(first[0], 0);
            assert_int_equal(first[R], np);
            size_t l = 0, ceil_load = (n + (size_t)R - 1) / (size_t)R;
            for (int r = 0; r < R; r++) {
                size_t load = 0;
                for (size_t i = first[r]; i < first[r + 1]; i++) {
                    size_t c = pieces[i].count, p = 1;
                    while (p < c)
                        p *= 2;
                    assert_int_equal(pieces[i].first, l);
                    assert_true(c > 0 && pieces[i].first % p == 0 && (p == c || pieces[i].first + c == n));
                    l += c;
                    load += c;
                }
                assert_true(load <= ceil_load);
            }
            assert_int_equal(l, n);
            /* Each rank's pieces, by a reducer of its own. */
            pool *p = pools[(n + (size_t)R) % 3];
            for (int r = 0; r < R; r++) {
                size_t p0 = first[r], p1 = first[r + 1];
                tree_reducer *red;
                assert_int_equal(tree_reducer_create(&red, p, LEN, n, NULL), LS_OK);
                leaf_ctx ctx = { 0, 0 };
                assert_int_equal(tree_reduce_pieces(red, pieces + p0, p1 - p0, leaf_fn, &ctx, mine, losses + p0),
                                 LS_OK);
                for (size_t i = p0; i < p1; i++) {
                    float want[LEN];
                    double wl;
                    ref_sum(pieces[i].first, pieces[i].count, want, &wl);
                    assert_memory_equal(mine[i - p0], want, sizeof want);
                    assert_memory_equal(&losses[i], &wl, sizeof wl);
                    memcpy(copy[i], mine[i - p0], sizeof copy[i]);
                }
                tree_reducer_destroy(red);
            }
            /* The top over slices [0, 2) and [2, LEN), as two chunk owners. */
            float out[LEN];
            double loss;
            for (int half = 0; half < 2; half++) {
                size_t lo = half ? 2 : 0, hi = half ? LEN : 2;
                static float slice[MAX_N][LEN];
                for (size_t i = 0; i < np; i++) {
                    memcpy(slice[i], copy[i] + lo, (hi - lo) * sizeof(float));
                    bufs[i] = slice[i];
                }
                float *sum;
                assert_int_equal(tree_combine_blocks(n, pieces, np, bufs, hi - lo, losses, &sum, &loss, NULL), LS_OK);
                memcpy(out + lo, sum, (hi - lo) * sizeof(float));
            }
            assert_memory_equal(out, ref, sizeof ref);
            assert_memory_equal(&loss, &rl, sizeof rl);
        }
    }
    /* Not a partition: refused. */
    tree_block bad[2] = { { 0, 2 }, { 1, 2 } };
    double bl[2] = { 1, 2 }, loss;
    ls_err err;
    assert_int_equal(tree_combine_blocks(4, bad, 2, NULL, 0, bl, NULL, &loss, &err), LS_EINVAL);
    tree_block gap[1] = { { 0, 2 } };
    assert_int_equal(tree_combine_blocks(4, gap, 1, NULL, 0, bl, NULL, &loss, &err), LS_EINVAL);
    for (int t = 0; t < 3; t++)
        pool_destroy(pools[t]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_order_matters),
        cmocka_unit_test(test_stream_exhaustive),
        cmocka_unit_test(test_blocks_exhaustive),
        cmocka_unit_test(test_default_plan),
        cmocka_unit_test(test_chaos),
        cmocka_unit_test(test_bad_plans),
        cmocka_unit_test(test_unordered),
        cmocka_unit_test(test_long_buffers),
        cmocka_unit_test(test_deferred_top),
        cmocka_unit_test(test_span_sum),
        cmocka_unit_test(test_ranks_exhaustive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
