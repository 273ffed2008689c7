/* test_dense.c — the dense kernels: every SIMD path the host offers equals the
 * scalar twin bit for bit, and the scalar twin equals a naive loop written
 * here from the text of dense.h, for many shapes (tails of every size) and
 * the MLP's real shapes; masked stores never touch memory past the output;
 * blocks of larger matrices (the _ld forms) get the contiguous call's bits
 * and nothing outside them changes. */
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

/* Guard floats after every output buffer: a stray store changes them. */
#define GUARD 32
static const float guard_value = -12345.678f;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t next_u32(void)
{
    /* xorshift64*: the test's own stream, independent of engine/rng. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32);
}

static size_t below(size_t n)
{
    return (size_t)next_u32() % n;
}

/* Values in [-1, 1) with varied magnitudes, and some exact zeros of both
 * signs, so a different order of additions or a different start value
 * (0.0f against -0.0f) would show in the bits. */
static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t r = next_u32();
        float v = (float)(r >> 8) / 16777216.0f * 2.0f - 1.0f;
        switch (r & 15) {
        case 0: v = 0.0f; break;
        case 1: v = -0.0f; break;
        case 2: v = v * 1e-3f; break;
        case 3: v = v * 1e3f; break;
        default: break;
        }
        p[i] = v;
    }
}

/* n floats followed by GUARD guard floats. */
static float *alloc_out(size_t n)
{
    float *p = malloc((n + GUARD) * sizeof(float));
    assert_non_null(p);
    for (size_t i = 0; i < n + GUARD; i++)
        p[i] = guard_value;
    return p;
}

static void check_guard(const float *p, size_t n)
{
    for (size_t i = n; i < n + GUARD; i++)
        assert_true(memcmp(&p[i], &guard_value, sizeof(float)) == 0);
}

static float *alloc_in(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(p);
    fill(p, n);
    return p;
}

/* The naive references: dense.h's sentences, one output element at a time. */
static void naive_forward(float *out, const float *in, const float *w, const float *bias,
                          size_t B, size_t K, size_t N)
{
    for (size_t b = 0; b < B; b++)
        for (size_t n = 0; n < N; n++) {
            float s = bias != NULL ? bias[n] : 0.0f;
            for (size_t k = 0; k < K; k++)
                s = fmaf(in[b * K + k], w[k * N + n], s);
            out[b * N + n] = s;
        }
}

/* The contract's sum over samples written as its definition, recursively
 * (docs/contract.md): atoms of LS_ATOM rows summed in order, the atoms
 * [a, a + n) split at the largest power of two below n. An independent path
 * from the kernels' binary-counter stacks. with_w 0 sums dout alone (dbias). */
static float naive_atoms(const float *in, const float *dout, size_t B, size_t K, size_t N, size_t k, size_t n,
                         int with_w, size_t a, size_t count)
{
    if (count == 1) {
        const size_t b1 = (a + 1) * LS_ATOM < B ? (a + 1) * LS_ATOM : B;
        float s = 0.0f;
        for (size_t b = a * LS_ATOM; b < b1; b++)
            s = with_w ? fmaf(in[b * K + k], dout[b * N + n], s) : s + dout[b * N + n];
        return s;
    }
    size_t half = 1;
    while (half * 2 < count)
        half *= 2;
    const float left = naive_atoms(in, dout, B, K, N, k, n, with_w, a, half);
    return left + naive_atoms(in, dout, B, K, N, k, n, with_w, a + half, count - half);
}

static void naive_backward(float *dw, float *dbias, const float *in, const float *dout,
                           size_t B, size_t K, size_t N, int accumulate)
{
    const size_t atoms = (B + LS_ATOM - 1) / LS_ATOM;
    for (size_t n = 0; n < N; n++) {
        for (size_t k = 0; k < K; k++) {
            const float s = atoms == 0 ? 0.0f : naive_atoms(in, dout, B, K, N, k, n, 1, 0, atoms);
            dw[k * N + n] = accumulate ? dw[k * N + n] + s : s;
        }
        if (dbias != NULL) {
            const float s = atoms == 0 ? 0.0f : naive_atoms(in, dout, B, K, N, 0, n, 0, 0, atoms);
            dbias[n] = accumulate ? dbias[n] + s : s;
        }
    }
}

/* The SIMD settings to compare with the scalar twin: every distinct path
 * this host runs (avx512 and avx2 on an AVX-512 host). */
static int simd_settings[2];
static const char *simd_names[2];
static int n_simd;
static int env_setting;   /* the setting before any dense_set_simd call */

static int setup_paths(void **state)
{
    (void)state;
    const int candidates[2] = { DENSE_SIMD_BEST, DENSE_SIMD_AVX2 };
    env_setting = dense_set_simd(DENSE_SIMD_BEST);
    n_simd = 0;
    for (int c = 0; c < 2; c++) {
        dense_set_simd(candidates[c]);
        const char *name = dense_simd_name();
        if (strcmp(name, "scalar") == 0)
            continue;
        int seen = 0;
        for (int j = 0; j < n_simd; j++)
            seen |= strcmp(simd_names[j], name) == 0;
        if (!seen) {
            simd_settings[n_simd] = candidates[c];
            simd_names[n_simd] = name;
            n_simd++;
        }
    }
    dense_set_simd(DENSE_SIMD_BEST);
    printf("dense paths compared with the scalar twin:");
    for (int j = 0; j < n_simd; j++)
        printf(" %s", simd_names[j]);
    printf("%s\n", n_simd == 0 ? " none (this host runs only the scalar twin)" : "");
    return 0;
}

/* One shape, everything: forward with and without bias, backward in both
 * modes with and without dbias; naive == scalar twin == each SIMD path. */
static void check_shape(size_t B, size_t K, size_t N)
{
    float *in = alloc_in(B * K), *w = alloc_in(K * N), *bias = alloc_in(N);
    float *dout = alloc_in(B * N), *g = alloc_in(K * N), *gb = alloc_in(N);
    float *ref = alloc_out(B * N), *got = alloc_out(B * N);
    float *refw = alloc_out(K * N), *gotw = alloc_out(K * N);
    float *refb = alloc_out(N), *gotb = alloc_out(N);
    const size_t ob = B * N * sizeof(float), wb = K * N * sizeof(float), bb = N * sizeof(float);
    const int prev = dense_set_simd(DENSE_SIMD_BEST);

    for (int with_bias = 0; with_bias < 2; with_bias++) {
        const float *bp = with_bias ? bias : NULL;
        naive_forward(ref, in, w, bp, B, K, N);
        dense_forward_scalar(got, in, w, bp, B, K, N);
        assert_memory_equal(ref, got, ob);
        check_guard(got, B * N);
        for (int j = 0; j < n_simd; j++) {
            dense_set_simd(simd_settings[j]);
            for (size_t i = 0; i < B * N; i++)
                got[i] = 7.0f;   /* every element must be written */
            dense_forward(got, in, w, bp, B, K, N);
            if (memcmp(ref, got, ob) != 0)
                fail_msg("forward %s B=%zu K=%zu N=%zu bias=%d differs from the scalar twin",
                         simd_names[j], B, K, N, with_bias);
            check_guard(got, B * N);
        }
    }

    for (int accumulate = 0; accumulate < 2; accumulate++) {
        for (int with_db = 0; with_db < 2; with_db++) {
            memcpy(refw, g, wb);
            memcpy(refb, gb, bb);
            naive_backward(refw, with_db ? refb : NULL, in, dout, B, K, N, accumulate);
            memcpy(gotw, g, wb);
            memcpy(gotb, gb, bb);
            dense_backward_weights_scalar(gotw, with_db ? gotb : NULL, in, dout, B, K, N, accumulate);
            assert_memory_equal(refw, gotw, wb);
            assert_memory_equal(refb, gotb, bb);
            for (int j = 0; j < n_simd; j++) {
                dense_set_simd(simd_settings[j]);
                memcpy(gotw, g, wb);
                memcpy(gotb, gb, bb);
                dense_backward_weights(gotw, with_db ? gotb : NULL, in, dout, B, K, N, accumulate);
                if (memcmp(refw, gotw, wb) != 0 || memcmp(refb, gotb, bb) != 0)
                    fail_msg("backward %s B=%zu K=%zu N=%zu acc=%d dbias=%d differs from the scalar twin",
                             simd_names[j], B, K, N, accumulate, with_db);
                check_guard(gotw, K * N);
                check_guard(gotb, N);
            }
        }
    }
    dense_set_simd(prev);
    free(in); free(w); free(bias); free(dout); free(g); free(gb);
    free(ref); free(got); free(refw); free(gotw); free(refb); free(gotb);
}

/* A block of larger matrices (dense_forward_ld, dense_backward_weights_ld):
 * out, in and w (dw, dout) each inside a matrix of its own leading
 * dimension, at a column offset; the block must get the bits the
 * contiguous call gives on copies of the same blocks, on every path, and
 * nothing outside the block may change. */
static void check_block(size_t B, size_t K, size_t N)
{
    const size_t oo = below(20), oi = below(20), ow = below(20), od = below(20);   /* column offsets */
    const size_t ldo = oo + N + below(40), ldi = oi + K + below(40), ldw = ow + N + below(40), ldd = od + N + below(40);
    float *big_in = alloc_in(B * ldi), *big_w = alloc_in(K * ldw), *big_d = alloc_in(B * ldd);
    float *big_o = alloc_in(B * ldo), *big_g = alloc_in(K * ldw), *bias = alloc_in(N);
    float *o_before = alloc_out(B * ldo), *g_before = alloc_out(K * ldw);
    float *in = alloc_out(B * K), *w = alloc_out(K * N), *d = alloc_out(B * N);
    float *ref = alloc_out(B * N), *refw = alloc_out(K * N), *refb = alloc_out(N), *gotb = alloc_out(N);
    for (size_t b = 0; b < B; b++) {
        memcpy(in + b * K, big_in + b * ldi + oi, K * sizeof(float));
        memcpy(d + b * N, big_d + b * ldd + od, N * sizeof(float));
    }
    for (size_t k = 0; k < K; k++)
        memcpy(w + k * N, big_w + k * ldw + ow, N * sizeof(float));
    memcpy(o_before, big_o, B * ldo * sizeof(float));
    memcpy(g_before, big_g, K * ldw * sizeof(float));
    const int prev = dense_set_simd(DENSE_SIMD_BEST);
    for (int path = 0; path <= n_simd; path++) {
        dense_set_simd(path == 0 ? DENSE_SIMD_OFF : simd_settings[path - 1]);
        const char *name = path == 0 ? "scalar" : simd_names[path - 1];
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            dense_forward(ref, in, w, with_bias ? bias : NULL, B, K, N);
            memcpy(big_o, o_before, B * ldo * sizeof(float));
            dense_forward_ld(big_o + oo, ldo, big_in + oi, ldi, big_w + ow, ldw, with_bias ? bias : NULL, B, K, N);
            for (size_t b = 0; b < B; b++) {
                if (memcmp(big_o + b * ldo + oo, ref + b * N, N * sizeof(float)) != 0)
                    fail_msg("forward_ld %s B=%zu K=%zu N=%zu: row %zu differs from the contiguous call", name, B, K,
                             N, b);
                if (memcmp(big_o + b * ldo, o_before + b * ldo, oo * sizeof(float)) != 0 ||
                    memcmp(big_o + b * ldo + oo + N, o_before + b * ldo + oo + N, (ldo - oo - N) * sizeof(float)) != 0)
                    fail_msg("forward_ld %s B=%zu K=%zu N=%zu: wrote outside the block in row %zu", name, B, K, N, b);
            }
        }
        for (int accumulate = 0; accumulate < 2; accumulate++) {
            for (size_t k = 0; k < K; k++)
                memcpy(refw + k * N, g_before + k * ldw + ow, N * sizeof(float));
            memcpy(refb, bias, N * sizeof(float));
            memcpy(gotb, bias, N * sizeof(float));
            dense_backward_weights(refw, refb, in, d, B, K, N, accumulate);
            memcpy(big_g, g_before, K * ldw * sizeof(float));
            dense_backward_weights_ld(big_g + ow, ldw, gotb, big_in + oi, ldi, big_d + od, ldd, B, K, N, accumulate);
            assert_memory_equal(refb, gotb, N * sizeof(float));
            for (size_t k = 0; k < K; k++) {
                if (memcmp(big_g + k * ldw + ow, refw + k * N, N * sizeof(float)) != 0)
                    fail_msg("backward_ld %s B=%zu K=%zu N=%zu acc=%d: row %zu differs from the contiguous call",
                             name, B, K, N, accumulate, k);
                if (memcmp(big_g + k * ldw, g_before + k * ldw, ow * sizeof(float)) != 0 ||
                    memcmp(big_g + k * ldw + ow + N, g_before + k * ldw + ow + N,
                           (ldw - ow - N) * sizeof(float)) != 0)
                    fail_msg("backward_ld %s B=%zu K=%zu N=%zu: wrote outside the block in row %zu", name, B, K, N,
                             k);
            }
        }
    }
    dense_set_simd(prev);
    free(big_in); free(big_w); free(big_d); free(big_o); free(big_g); free(bias);
    free(o_before); free(g_before); free(in); free(w); free(d);
    free(ref); free(refw); free(refb); free(gotb);
}

/* Blocks of random shapes (every row tail of the tiles, vector tails),
 * and the halves and quarters of the MLP's layers that a split of their
 * columns would compute. */
static void test_leading_dimensions(void **state)
{
    (void)state;
    for (int i = 0; i < 60; i++)
        check_block(1 + below(13), 1 + below(70), 1 + below(140));
    const size_t shapes[][3] = { { 64, 784, 128 }, { 64, 256, 128 }, { 64, 784, 64 }, { 64, 256, 64 }, { 64, 10, 128 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_block(shapes[i][0], shapes[i][1], shapes[i][2]);
}

/* Every N in 1..70 (all tails of 8 and 16 floats, one to four vectors and
 * more), every B in 1..9 (all row tails of the 6-row tiles), K random in 1..70. */
static void test_all_tails(void **state)
{
    (void)state;
    rng_state = 0x1234567ULL;
    for (size_t N = 1; N <= 70; N++)
        for (size_t B = 1; B <= 9; B++)
            check_shape(B, 1 + below(70), N);
}

static void test_random_shapes(void **state)
{
    (void)state;
    rng_state = 0xfeedULL;
    for (int t = 0; t < 300; t++)
        check_shape(1 + below(9), 1 + below(70), 1 + below(70));
    /* Longer reductions than the forward's block of 64 rows of w, and wider
     * outputs than one tile. */
    check_shape(5, 130, 77);
    check_shape(9, 200, 150);
    check_shape(3, 64, 64);
    check_shape(4, 65, 129);
}

/* Empty dimensions: K == 0 writes the start values (bias or 0), B == 0
 * writes dw = 0 or dw + 0, nothing is touched when N == 0. */
static void test_empty_dims(void **state)
{
    (void)state;
    rng_state = 0xabcULL;
    check_shape(3, 0, 17);
    check_shape(0, 5, 17);
    check_shape(0, 0, 3);
    check_shape(2, 3, 0);
}

/* The shapes of the 784-256-256-10 MLP at a leaf of 32 and of 64 (the
 * default): forward, backward weights, and the d(input) products
 * dense_forward(dout, W^T); 33 and 63 rows end in a partial row tile. */
static void test_real_shapes(void **state)
{
    (void)state;
    rng_state = 0x5eedULL;
    check_shape(32, 784, 256);
    check_shape(32, 256, 256);
    check_shape(32, 256, 10);
    check_shape(32, 10, 256);
    check_shape(33, 784, 256);
    check_shape(64, 784, 256);
    check_shape(64, 256, 256);
    check_shape(64, 256, 10);
    check_shape(64, 10, 256);
    check_shape(63, 257, 200);
    /* Atom counts that are not powers of two (the tree's ragged right
     * side), a last atom of 1 row, and a leaf of 63 atoms. */
    check_shape(100, 130, 77);
    check_shape(17, 50, 33);
    check_shape(112, 784, 64);
    check_shape(1000, 40, 70);
    /* gpt at its leaf of 16 samples x 64 positions: the weight gradient's
     * groups of tiles (dense.c, atoms_group_y) over 64 atoms, several
     * groups for K = 256; a ragged last group. */
    check_shape(1024, 64, 192);
    check_shape(1024, 256, 64);
    check_shape(1024, 64, 256);
    check_shape(1040, 250, 70);
}

/* The micro-kernel's two broadcast forms (registers, memory operands;
 * dense_set_broadcast) against the naive fused sums, each forced in turn
 * whatever this CPU would choose: full tiles, packed weight-gradient panels
 * (B <= 128, K >= 128) and every row tail of a 6-row tile. */
static void test_broadcast_forms(void **state)
{
    (void)state;
    for (int form = 0; form < 2; form++) {
        const int prev = dense_set_broadcast(form);
        rng_state = 0xb0b0ULL + (uint64_t)form;
        check_shape(64, 784, 256);
        check_shape(64, 256, 10);
        check_shape(128, 200, 130);
        for (size_t B = 1; B <= 13; B++)
            check_shape(B, 1 + below(150), 64 + below(140));
        dense_set_broadcast(prev);
    }
}

/* Full tiles (6 rows x 64 columns) next to every kind of edge: partial row
 * tiles, partial column panels of 1 to 4 vectors, and reductions of 1 and
 * of many rows, so the micro-kernel of full tiles and the edge tiles meet in
 * one call. */
static void test_panel_edges(void **state)
{
    (void)state;
    rng_state = 0xed6eULL;
    const size_t Ns[] = { 63, 64, 65, 80, 127, 128, 129, 191, 193, 255, 257 };
    const size_t Bs[] = { 4, 5, 7, 8, 11, 12, 13 };
    for (size_t i = 0; i < sizeof Ns / sizeof Ns[0]; i++)
        for (size_t j = 0; j < sizeof Bs / sizeof Bs[0]; j++)
            check_shape(Bs[j], 1 + below(100), Ns[i]);
    check_shape(8, 1, 128);
    check_shape(9, 1000, 130);
}

/* dense_transpose on every path against the definition, for all edge sizes
 * of the 8 x 8 blocks and the MLP's weights; no store past the output. */
static void check_transpose(size_t R, size_t C)
{
    float *src = alloc_in(R * C), *got = alloc_out(R * C);
    for (int path = 0; path <= n_simd; path++) {
        const int prev = dense_set_simd(path == 0 ? DENSE_SIMD_OFF : simd_settings[path - 1]);
        for (size_t i = 0; i < R * C; i++)
            got[i] = 7.0f;
        dense_transpose(got, src, R, C);
        for (size_t r = 0; r < R; r++)
            for (size_t c = 0; c < C; c++)
                if (memcmp(&got[c * R + r], &src[r * C + c], sizeof(float)) != 0)
                    fail_msg("transpose R=%zu C=%zu path %d: [%zu][%zu] wrong", R, C, path, c, r);
        check_guard(got, R * C);
        dense_set_simd(prev);
    }
    free(src);
    free(got);
}

/* dense_transpose_block: a block of R x C inside a source of row stride lds
 * goes to rows of stride ldd; elements of dst outside the block keep their
 * value (the other blocks' parts of an MLP prepare write them). */
static void check_transpose_block(size_t R, size_t C, size_t lds, size_t ldd)
{
    const size_t dst_n = (C - 1) * ldd + R;
    float *src = alloc_in(R * lds), *got = alloc_out(dst_n);
    for (int path = 0; path <= n_simd; path++) {
        const int prev = dense_set_simd(path == 0 ? DENSE_SIMD_OFF : simd_settings[path - 1]);
        for (size_t i = 0; i < dst_n; i++)
            got[i] = 7.0f;
        dense_transpose_block(got, ldd, src, lds, R, C);
        for (size_t i = 0; i < dst_n; i++) {
            const size_t c = i / ldd, r = i % ldd;
            const float want = r < R ? src[r * lds + c] : 7.0f;
            if (memcmp(&got[i], &want, sizeof(float)) != 0)
                fail_msg("transpose block R=%zu C=%zu lds=%zu ldd=%zu path %d: dst[%zu] wrong", R, C, lds, ldd,
                         path, i);
        }
        check_guard(got, dst_n);
        dense_set_simd(prev);
    }
    free(src);
    free(got);
}

static void test_transpose(void **state)
{
    (void)state;
    rng_state = 0x7a7aULL;
    for (size_t R = 1; R <= 19; R++)
        for (size_t C = 1; C <= 19; C++)
            check_transpose(R, C);
    check_transpose(256, 256);
    check_transpose(256, 10);
    check_transpose(784, 256);
    check_transpose(33, 250);
    for (size_t R = 1; R <= 17; R += 4)
        for (size_t C = 1; C <= 17; C += 3)
            check_transpose_block(R, C, C + 5, R + 3);
    check_transpose_block(256, 32, 256, 256);   /* an MLP prepare part */
    check_transpose_block(256, 10, 10, 256);
}

/* accumulate == 1 on G equals G + (the accumulate == 0 result), element-wise. */
static void test_accumulate_adds_sum(void **state)
{
    (void)state;
    rng_state = 0x77ULL;
    const size_t B = 7, K = 33, N = 45;
    float *in = alloc_in(B * K), *dout = alloc_in(B * N), *g = alloc_in(K * N), *gb = alloc_in(N);
    float *w0 = alloc_out(K * N), *b0 = alloc_out(N), *w1 = alloc_out(K * N), *b1 = alloc_out(N);
    for (int path = 0; path <= n_simd; path++) {
        const int prev = dense_set_simd(path == 0 ? DENSE_SIMD_OFF : simd_settings[path - 1]);
        dense_backward_weights(w0, b0, in, dout, B, K, N, 0);
        memcpy(w1, g, K * N * sizeof(float));
        memcpy(b1, gb, N * sizeof(float));
        dense_backward_weights(w1, b1, in, dout, B, K, N, 1);
        for (size_t i = 0; i < K * N; i++) {
            const float e = g[i] + w0[i];
            assert_memory_equal(&e, &w1[i], sizeof e);
        }
        for (size_t i = 0; i < N; i++) {
            const float e = gb[i] + b0[i];
            assert_memory_equal(&e, &b1[i], sizeof e);
        }
        dense_set_simd(prev);
    }
    free(in); free(dout); free(g); free(gb); free(w0); free(b0); free(w1); free(b1);
}

/* Every term is fused, on every path, worked out by hand: x = 1 + 2^-12
 * squared is 1 + 2^-11 + 2^-24 exactly, and added to -(1 + 2^-11) it leaves
 * 2^-24. A rounded product first (1 + 2^-24 is a tie between two floats,
 * which goes to the even 1 + 2^-11) would leave 0. The one term stands at
 * every position of the shapes (each row of a 6-row tile, each lane of each
 * vector, full micro-kernel tiles and edge tiles), the rest of the sum being
 * exact zeros (adding +0 x +0 to a nonzero sum changes nothing). */
static void test_terms_are_fused(void **state)
{
    (void)state;
    const float x = 1.0f + 0x1p-12f, start = -(1.0f + 0x1p-11f), want = 0x1p-24f;
    const size_t shapes[][3] = { { 4, 5, 64 }, { 9, 3, 70 }, { 64, 2, 256 }, { 1, 1, 1 }, { 3, 4, 17 }, { 2, 200, 128 } };
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        const size_t B = shapes[sh][0], K = shapes[sh][1], N = shapes[sh][2];
        float *in = calloc(B * K, sizeof(float)), *w = calloc(K * N, sizeof(float));
        float *bias = malloc(N * sizeof(float)), *out = alloc_out(B * N);
        float *dout = calloc(B * N, sizeof(float)), *dw = alloc_out(K * N);
        assert_true(in && w && bias && dout);
        for (size_t n = 0; n < N; n++)
            bias[n] = start;
        /* forward: in[b][k_b] = x, w[k_b][n] = x, where k_b = b mod K */
        for (size_t b = 0; b < B; b++)
            in[b * K + b % K] = x;
        for (size_t k = 0; k < K; k++)
            for (size_t n = 0; n < N; n++)
                w[k * N + n] = x;
        /* backward: dw starts at start (accumulate), the sum over b of
         * in[b][k] * dout[b][n] has one term x * x where b = k mod B */
        for (int path = 0; path <= n_simd; path++) {
            const int prev = dense_set_simd(path == 0 ? DENSE_SIMD_OFF : simd_settings[path - 1]);
            dense_forward(out, in, w, bias, B, K, N);
            for (size_t i = 0; i < B * N; i++)
                if (memcmp(&out[i], &want, sizeof want) != 0)
                    fail_msg("forward %s B=%zu K=%zu N=%zu: out[%zu] = %a, not 2^-24 (a term not fused)",
                             dense_simd_name(), B, K, N, i, (double)out[i]);
            dense_set_simd(prev);
        }
        /* backward (B >= 2): dw[k][n] = fmaf(in[1][k], dout[1][n], in[0][k] * dout[0][n]),
         * the first term -(1 + 2^-11) * 1, the second x * x; samples 2.. are +0 */
        memset(in, 0, B * K * sizeof(float));
        memset(dout, 0, B * N * sizeof(float));
        for (size_t k = 0; B >= 2 && k < K; k++) {
            in[k] = start;
            in[K + k] = x;
        }
        for (size_t n = 0; B >= 2 && n < N; n++) {
            dout[n] = 1.0f;
            dout[N + n] = x;
        }
        for (int path = 0; B >= 2 && path <= n_simd; path++) {
            const int prev = dense_set_simd(path == 0 ? DENSE_SIMD_OFF : simd_settings[path - 1]);
            dense_backward_weights(dw, NULL, in, dout, B, K, N, 0);
            for (size_t i = 0; i < K * N; i++)
                if (memcmp(&dw[i], &want, sizeof want) != 0)
                    fail_msg("backward %s B=%zu K=%zu N=%zu: dw[%zu] = %a, not 2^-24 (a term not fused)",
                             dense_simd_name(), B, K, N, i, (double)dw[i]);
            check_guard(dw, K * N);
            dense_set_simd(prev);
        }
        check_guard(out, B * N);
        free(in); free(w); free(bias); free(out); free(dout); free(dw);
    }
}

/* dense_set_simd(0) forces the scalar twin; the previous setting comes back. */
static void test_set_simd_off(void **state)
{
    (void)state;
    rng_state = 0x99ULL;
    const size_t B = 6, K = 50, N = 37;
    float *in = alloc_in(B * K), *w = alloc_in(K * N), *bias = alloc_in(N);
    float *ref = alloc_out(B * N), *got = alloc_out(B * N);
    const int prev = dense_set_simd(DENSE_SIMD_OFF);
    assert_string_equal(dense_simd_name(), "scalar");
    assert_int_equal(dense_set_simd(DENSE_SIMD_OFF), DENSE_SIMD_OFF);
    dense_forward_scalar(ref, in, w, bias, B, K, N);
    dense_forward(got, in, w, bias, B, K, N);
    assert_memory_equal(ref, got, B * N * sizeof(float));
    assert_int_equal(dense_set_simd(DENSE_SIMD_BEST), DENSE_SIMD_OFF);
    printf("dense_simd_name() with SIMD enabled: %s\n", dense_simd_name());
    dense_set_simd(prev);
    free(in); free(w); free(bias); free(ref); free(got);
}

/* LOCKSTEP_SIMD=off is read at the first call (main sets it before any):
 * the first dense_set_simd, in setup_paths, returned it as the setting. */
static void test_env_off(void **state)
{
    (void)state;
    assert_int_equal(env_setting, DENSE_SIMD_OFF);
}

int main(void)
{
    /* Must precede every dense_ call of the process: the variable is read once. */
    setenv("LOCKSTEP_SIMD", "off", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_off),
        cmocka_unit_test(test_set_simd_off),
        cmocka_unit_test(test_all_tails),
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_leading_dimensions),
        cmocka_unit_test(test_empty_dims),
        cmocka_unit_test(test_real_shapes),
        cmocka_unit_test(test_broadcast_forms),
        cmocka_unit_test(test_panel_edges),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_accumulate_adds_sum),
        cmocka_unit_test(test_terms_are_fused),
    };
    return cmocka_run_group_tests(tests, setup_paths, NULL) ? 1 : 0;
}
