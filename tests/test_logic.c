/* test_logic.c — the logic gate layer (engine/models/logic/logic.h): the gate table, the
 * four-coefficient form, hard ops, softmax coefficients, the SIMD paths
 * against their scalar twins bit for bit (tails, a == b wiring, accumulate,
 * dx NULL, garbage in the padding lanes), the scalar twin against a naive
 * loop written here from the text of logic.h, the order of the statistics,
 * the lanes kernel (samples side by side) on every path against
 * logic_backward_scalar run on each sample alone (−0, denormals, cancelling
 * sums, LOGIC_DX_SET on garbage), the first flags, the expansion
 * to logit gradients, and both wirings (random: balanced; unique:
 * difflogic's pair sequence, no repeated pair, refusals). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/num/dmath.h"
#include "engine/models/logic/logic.h"
#include "engine/num/rng.h"

static uint64_t rng_state = 0x243f6a8885a308d3ULL;

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

static float unit(void)   /* [0, 1), 24 bits */
{
    return (float)(next_u32() >> 8) / 16777216.0f;
}

static float signed_val(void)   /* [-1, 1) with some zeros and scaled values */
{
    const uint32_t r = next_u32();
    float v = unit() * 2.0f - 1.0f;
    switch (r & 15) {
    case 0: v = 0.0f; break;
    case 1: v = -0.0f; break;
    case 2: v = v * 1e-3f; break;
    case 3: v = v * 1e3f; break;
    default: break;
    }
    return v;
}

static void *xalloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    assert_non_null(p);
    return p;
}

/* The truth tables of difflogic/functional.py's comment table (AB = 00, 01,
 * 10, 11), typed in from it, not derived from the index. */
static const int TRUTH[LOGIC_OPS][4] = {
    { 0, 0, 0, 0 }, { 0, 0, 0, 1 }, { 0, 0, 1, 0 }, { 0, 0, 1, 1 },
    { 0, 1, 0, 0 }, { 0, 1, 0, 1 }, { 0, 1, 1, 0 }, { 0, 1, 1, 1 },
    { 1, 0, 0, 0 }, { 1, 0, 0, 1 }, { 1, 0, 1, 0 }, { 1, 0, 1, 1 },
    { 1, 1, 0, 0 }, { 1, 1, 0, 1 }, { 1, 1, 1, 0 }, { 1, 1, 1, 1 },
};

/* ---- The gate table. ---- */

static void test_hard_truth_tables(void **state)
{
    (void)state;
    for (int j = 0; j < LOGIC_OPS; j++) {
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                assert_int_equal(logic_hard_bit(j, a, b), TRUTH[j][2 * a + b]);
                /* the relaxation at the corners is the truth table */
                assert_true(logic_relaxed(j, (float)a, (float)b) == (float)TRUTH[j][2 * a + b]);
            }
        /* bit k of the words: a = bit 1 of k, b = bit 0 of k, for k = 0..3 */
        const uint64_t wa = 0xCCCCCCCCCCCCCCCCULL, wb = 0xAAAAAAAAAAAAAAAAULL;
        const uint64_t w = logic_hard_word(j, wa, wb);
        for (int bit = 0; bit < 64; bit++) {
            const int a = (int)((wa >> bit) & 1), b = (int)((wb >> bit) & 1);
            assert_int_equal((int)((w >> bit) & 1), TRUTH[j][2 * a + b]);
        }
    }
}

/* y = Σ p_i f_i with one-hot p is f_j; the coefficient form through the real
 * kernels (scalar and SIMD) must give logic_relaxed. Exact (bits) for every op
 * but NOR (8) and XNOR (9), whose table form 1 − (a + b − ab) rounds
 * differently from ((1 − a) − b) + ab: there within 4·2^-24 (a few ulps of
 * values in [0, 1]). */
static void test_relaxed_equals_coefficient_form(void **state)
{
    (void)state;
    enum { N = 160 };
    const size_t ld = N;
    float *x = xalloc(2 * ld * sizeof(float));
    float *y = xalloc(LOGIC_OPS * ld * sizeof(float));
    float *ys = xalloc(LOGIC_OPS * ld * sizeof(float));
    for (size_t l = 0; l < N; l++) {
        if (l < 81) {   /* a 9 x 9 grid on multiples of 1/8 */
            x[l] = (float)(l / 9) / 8.0f;
            x[ld + l] = (float)(l % 9) / 8.0f;
        } else {
            x[l] = unit();
            x[ld + l] = unit();
        }
    }
    uint32_t ia[LOGIC_OPS], ib[LOGIC_OPS];
    float coef[LOGIC_OPS * 4];
    for (int j = 0; j < LOGIC_OPS; j++) {
        ia[j] = 0;
        ib[j] = 1;
        float p[LOGIC_OPS] = { 0 };
        p[j] = 1.0f;
        /* the coefficient formulas of docs/models.md, written out here */
        coef[4 * j + 0] = p[8] + p[9] + p[10] + p[11] + p[12] + p[13] + p[14] + p[15];
        coef[4 * j + 1] = p[2] + p[3] + p[6] + p[7] - p[8] - p[9] - p[12] - p[13];
        coef[4 * j + 2] = p[4] + p[5] + p[6] + p[7] - p[8] - p[9] - p[10] - p[11];
        coef[4 * j + 3] = p[1] - p[2] - p[4] - 2 * p[6] - p[7] + p[8] + 2 * p[9] + p[11] + p[13] - p[14];
    }
    const logic_layer L = { 2, LOGIC_OPS, ia, ib, NULL, 0 };
    logic_forward_scalar(ys, x, &L, coef, N, ld);
    logic_forward(y, x, &L, coef, N, ld);
    for (int j = 0; j < LOGIC_OPS; j++) {
        assert_memory_equal(y + j * ld, ys + j * ld, N * sizeof(float));
        for (size_t l = 0; l < N; l++) {
            const float r = logic_relaxed(j, x[l], x[ld + l]);
            if (j == 8 || j == 9)
                assert_true(fabsf(ys[j * ld + l] - r) <= 4.0f * 0x1p-24f);
            else
                assert_memory_equal(&ys[j * ld + l], &r, sizeof r);
        }
    }
    free(x);
    free(y);
    free(ys);
}

/* LOGIC_AFFINE against the relaxations, in double (|diff| <= 1e-6). */
static void test_affine_matches_relaxed(void **state)
{
    (void)state;
    for (int j = 0; j < LOGIC_OPS; j++)
        for (int t = 0; t < 200; t++) {
            const float a = t < 25 ? (float)(t / 5) / 4.0f : unit();
            const float b = t < 25 ? (float)(t % 5) / 4.0f : unit();
            const int *f = LOGIC_AFFINE[j];
            const double v = f[0] + f[1] * (double)a + f[2] * (double)b + f[3] * (double)a * (double)b;
            assert_true(fabs(v - (double)logic_relaxed(j, a, b)) <= 1e-6);
        }
}

/* ---- Coefficients. ---- */

static void test_coeffs_against_double(void **state)
{
    (void)state;
    enum { G = 200 };
    float *z = xalloc(G * LOGIC_OPS * sizeof(float));
    float *p = xalloc(G * LOGIC_OPS * sizeof(float));
    float *c = xalloc(G * 4 * sizeof(float));
    for (size_t i = 0; i < G * LOGIC_OPS; i++) {
        const float scale = i / LOGIC_OPS < 50 ? 1.0f : i / LOGIC_OPS < 100 ? 10.0f : 40.0f;
        z[i] = signed_val() * scale;
    }
    z[5 * LOGIC_OPS + 3] = 10.0f;   /* the residual init's shape */
    logic_coeffs(z, G, p, c);
    for (size_t g = 0; g < G; g++) {
        double e[LOGIC_OPS], s = 0.0, m = -INFINITY;
        for (int i = 0; i < LOGIC_OPS; i++)
            m = fmax(m, (double)z[g * LOGIC_OPS + i]);
        for (int i = 0; i < LOGIC_OPS; i++) {
            e[i] = exp((double)z[g * LOGIC_OPS + i] - m);
            s += e[i];
        }
        double q[LOGIC_OPS], psum = 0.0;
        for (int i = 0; i < LOGIC_OPS; i++) {
            q[i] = e[i] / s;
            psum += (double)p[g * LOGIC_OPS + i];
            /* relative: a few ulps, plus the rounding of the float z_i − m
             * (up to |z_i − m|·2^-24 in the exponent) */
            const double tol = (1e-6 + fabs((double)z[g * LOGIC_OPS + i] - m) * 0x1p-23) * q[i] + 1e-37;
            assert_true(fabs((double)p[g * LOGIC_OPS + i] - q[i]) <= tol);
        }
        assert_true(fabs(psum - 1.0) <= 1e-6);
        /* coefficients from the double p, via LOGIC_AFFINE's columns */
        for (int k = 0; k < 4; k++) {
            double ck = 0.0;
            for (int i = 0; i < LOGIC_OPS; i++)
                ck += q[i] * LOGIC_AFFINE[i][k];
            assert_true(fabs((double)c[g * 4 + k] - ck) <= 4e-7);
        }
    }
    free(z);
    free(p);
    free(c);
}

/* logic_coeffs on every path gives the scalar path's bits (the SIMD paths
 * evaluate dmath_expf's operations on vector lanes; a gate with an argument
 * below -700, an infinity or a NaN takes the scalar path). Logits of many
 * scales sweep exp's argument over [-700, 0]. */
static void test_coeffs_paths(void **state)
{
    (void)state;
    enum { G = 6007 };   /* blocks of 16 and 8 gates, and a tail */
    float *z = xalloc(G * LOGIC_OPS * sizeof(float));
    float *p0 = xalloc(G * LOGIC_OPS * sizeof(float)), *c0 = xalloc(G * 4 * sizeof(float));
    float *p1 = xalloc(G * LOGIC_OPS * sizeof(float)), *c1 = xalloc(G * 4 * sizeof(float));
    static const float scales[] = { 1e-6f, 0.01f, 1.0f, 4.0f, 30.0f, 200.0f, 349.0f, 600.0f };
    for (size_t g = 0; g < G; g++) {
        const float sc = scales[g % 8];
        for (int j = 0; j < LOGIC_OPS; j++)
            z[g * LOGIC_OPS + j] = signed_val() * sc;
    }
    /* special gates */
    for (int j = 0; j < LOGIC_OPS; j++) {
        z[0 * LOGIC_OPS + j] = 0.0f;                          /* all equal */
        z[1 * LOGIC_OPS + j] = j % 2 ? 0.0f : -0.0f;          /* signed zeros */
        z[2 * LOGIC_OPS + j] = (float)j * -46.6f;             /* down to -699 */
        z[3 * LOGIC_OPS + j] = (float)j * -47.0f;             /* past -700: scalar */
        z[4 * LOGIC_OPS + j] = j == 5 ? INFINITY : 1.0f;
        z[5 * LOGIC_OPS + j] = j == 5 ? -INFINITY : 1.0f;
        z[6 * LOGIC_OPS + j] = j == 5 ? NAN : 1.0f;
        z[7 * LOGIC_OPS + j] = j == 3 ? 10.0f : 0.0f;         /* residual init */
        z[8 * LOGIC_OPS + j] = 3e38f * (j % 3 == 0 ? 1.0f : -1.0f);
    }
    const int prev = logic_set_simd(0);
    logic_coeffs(z, G, p0, c0);
    for (int path = 1; path <= 2; path++) {
        logic_set_simd(path);
        memset(p1, 0, G * LOGIC_OPS * sizeof(float));
        logic_coeffs(z, G, p1, c1);
        for (size_t g = 0; g < G; g++) {
            if (memcmp(p0 + g * LOGIC_OPS, p1 + g * LOGIC_OPS, LOGIC_OPS * sizeof(float)) != 0 ||
                memcmp(c0 + g * 4, c1 + g * 4, 4 * sizeof(float)) != 0)
                fail_msg("path %s, gate %zu: p or coef differs from the scalar path", logic_simd_name(), g);
        }
    }
    /* logic_coeffs_part over every part (a prepare_part's share) equals the
     * one call over all gates; 6007 gates: a short last part, not a
     * multiple of 16. */
    for (int path = 0; path <= 2; path++) {
        logic_set_simd(path);
        memset(p1, 0xff, G * LOGIC_OPS * sizeof(float));
        memset(c1, 0xff, G * 4 * sizeof(float));
        const size_t parts = logic_prepare_parts(G);
        assert_int_equal(parts, (G + LOGIC_PREPARE_GATES - 1) / LOGIC_PREPARE_GATES);
        for (size_t k = parts; k-- > 0;)   /* any order */
            logic_coeffs_part(z, G, k, p1, c1);
        logic_coeffs_part(z, G, parts, p1, c1);   /* past the end: nothing */
        assert_memory_equal(p0, p1, G * LOGIC_OPS * sizeof(float));
        assert_memory_equal(c0, c1, G * 4 * sizeof(float));
    }
    logic_set_simd(prev);
    free(z); free(p0); free(c0); free(p1); free(c1);
}

/* The vector lanes of logic_coeffs' exp equal dmath_exp in double, bit for
 * bit, on every path: random arguments over [-700, 0] and near 0, the
 * points where the reduction's rounding of x/ln2 switches k, ±0, tiny
 * values. (The float results alone would hide most double differences.) */
static void test_exp_lanes(void **state)
{
    (void)state;
    enum { N = 400000 };
    double *x = malloc(N * sizeof(double)), *y = malloc(N * sizeof(double));
    assert_non_null(x);
    assert_non_null(y);
    for (size_t i = 0; i < N; i++) {
        const double u = (double)next_u32() / 4294967296.0 + (double)next_u32() / 18446744073709551616.0;
        switch (i % 6) {
        case 0: x[i] = -700.0 * u; break;
        case 1: x[i] = -u; break;
        case 2: x[i] = -1e-6 * u; break;
        case 3: /* around (k + 1/2)·ln 2, where k switches */
            x[i] = -((double)(i / 6 % 1010) + 0.5) * 0x1.62e42fefa39efp-1 * (1.0 + (u - 0.5) * 1e-15);
            break;
        case 4: x[i] = -(double)(float)(u * 80.0); break;   /* float arguments, as logic_coeffs' */
        default: x[i] = -u * 1e-300; break;
        }
    }
    x[0] = 0.0;
    x[1] = -0.0;
    x[2] = -700.0;
    x[3] = -0x1p-1074;
    for (int path = 0; path <= 2; path++) {
        const int prev = logic_set_simd(path);
        logic_exp_lanes(x, y, N - path);   /* n not a multiple of 8 too */
        for (size_t i = 0; i < N - (size_t)path; i++) {
            const double want = dmath_exp(x[i]);
            if (memcmp(&y[i], &want, sizeof want) != 0)
                fail_msg("path %s: exp(%a) = %a, dmath_exp gives %a", logic_simd_name(), x[i], y[i], want);
        }
        logic_set_simd(prev);
    }
    free(x);
    free(y);
}

/* logic_coeffs' float exp equals dmath_expf bit for bit on every float
 * argument in [-88, 0], 1.1e9 of them (each SIMD path's shortcut rests on
 * a bound that, if wrong, would show on a few arguments only), and on
 * random ones down to -700. The reference is the same function without the
 * shortcut: dmath_exp's operations lane by lane, which test_exp_lanes holds
 * to dmath_exp. Under a sanitizer (tens of times slower) one chunk in 16. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EXPF_CHUNK_STEP 16
#else
#define EXPF_CHUNK_STEP 1
#endif
enum { EXPF_CHUNK = 1 << 20, EXPF_THREADS = 2 };

/* One thread's share: chunks first, first + EXPF_THREADS, ...; the first
 * mismatch it meets, if any, in bad/got/want. */
typedef struct {
    size_t first, checked;
    int mismatch;
    float bad, got, want;
} expf_share;

static void *expf_share_run(void *arg)
{
    expf_share *sh = arg;
    float *x = malloc(3 * EXPF_CHUNK * sizeof(float));
    if (x == NULL)
        return NULL;
    float *y = x + EXPF_CHUNK, *want = y + EXPF_CHUNK;
    const float lowest = -88.0f;
    uint32_t last;
    memcpy(&last, &lowest, sizeof last);
    const uint64_t step = (uint64_t)EXPF_CHUNK * EXPF_CHUNK_STEP;
    /* the sign bit set: -0, then upward in magnitude to -88 */
    for (uint64_t u0 = 0x80000000u + sh->first * step; u0 <= last && !sh->mismatch; u0 += EXPF_THREADS * step) {
        size_t n = 0;
        for (uint64_t u = u0; u < u0 + EXPF_CHUNK && u <= last; u++) {
            const uint32_t w = (uint32_t)u;
            memcpy(&x[n++], &w, sizeof w);
        }
        logic_expf_lanes(x, y, n, 1);
        logic_expf_lanes(x, want, n, 0);
        if (memcmp(y, want, n * sizeof *y) != 0)
            for (size_t i = 0; i < n && !sh->mismatch; i++)
                if (memcmp(&y[i], &want[i], sizeof *y) != 0)
                    *sh = (expf_share){ sh->first, sh->checked, 1, x[i], y[i], want[i] };
        sh->checked += n;
    }
    free(x);
    return NULL;
}

/* Every argument of [-88, 0] on the current path (EXPF_THREADS threads),
 * then random ones down to -700 against dmath_expf. */
static void expf_every_float_on_path(void)
{
    enum { CHUNK = EXPF_CHUNK };
    expf_share share[EXPF_THREADS];
    pthread_t th[EXPF_THREADS];
    for (size_t t = 0; t < EXPF_THREADS; t++) {
        share[t] = (expf_share){ .first = t };
        assert_int_equal(pthread_create(&th[t], NULL, expf_share_run, &share[t]), 0);
    }
    size_t checked = 0;
    for (size_t t = 0; t < EXPF_THREADS; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        if (share[t].mismatch)
            fail_msg("path %s: expf(%a) = %a, dmath_expf gives %a", logic_simd_name(), (double)share[t].bad,
                     (double)share[t].got, (double)share[t].want);
        checked += share[t].checked;
    }
    assert_true(checked > 1100000000u / EXPF_CHUNK_STEP);
    float *x = malloc(CHUNK * sizeof(float)), *y = malloc(CHUNK * sizeof(float));
    assert_non_null(x);
    assert_non_null(y);
    for (size_t i = 0; i < CHUNK; i++)
        x[i] = -700.0f * (float)((double)next_u32() / 4294967296.0);
    x[0] = 0.0f;
    x[1] = -0.0f;
    x[2] = -700.0f;
    x[3] = -87.0f;
    x[4] = nextafterf(-87.0f, 0.0f);
    x[5] = nextafterf(-87.0f, -88.0f);
    logic_expf_lanes(x, y, CHUNK - 3, 1);
    for (size_t i = 0; i < CHUNK - 3; i++) {
        const float w = dmath_expf(x[i]);
        if (memcmp(&y[i], &w, sizeof w) != 0)
            fail_msg("path %s: expf(%a) = %a, dmath_expf gives %a", logic_simd_name(), (double)x[i], (double)y[i],
                     (double)w);
    }
    free(x);
    free(y);
}

/* The AVX-512 and the AVX2 paths each (the scalar twin is dmath_expf). */
static void test_expf_lanes_every_float(void **state)
{
    (void)state;
    const int prev = logic_set_simd(1);
    char best[16];
    snprintf(best, sizeof best, "%s", logic_simd_name());
    if (strcmp(best, "scalar") != 0)
        expf_every_float_on_path();
    logic_set_simd(2);
    if (strcmp(logic_simd_name(), best) != 0 && strcmp(logic_simd_name(), "scalar") != 0)
        expf_every_float_on_path();
    logic_set_simd(prev);
}

/* logic_hard_ops: argmax, lowest index on ties. */
static void test_hard_ops_argmax(void **state)
{
    (void)state;
    float z[3 * LOGIC_OPS];
    for (int i = 0; i < 3 * LOGIC_OPS; i++)
        z[i] = 0.0f;
    z[0 * LOGIC_OPS + 7] = 1.0f;
    z[1 * LOGIC_OPS + 4] = 2.0f;
    z[1 * LOGIC_OPS + 12] = 2.0f;   /* tie: 4 wins */
    uint8_t ops[3];
    logic_hard_ops(ops, z, 3);
    assert_int_equal(ops[0], 7);
    assert_int_equal(ops[1], 4);
    assert_int_equal(ops[2], 0);    /* all equal: 0 */
}

/* logic_hard_forward against logic_hard_word gate by gate. */
static void test_hard_forward(void **state)
{
    (void)state;
    enum { IN = 13, OUT = 40, W = 3 };
    uint64_t x[IN * W], y[OUT * W];
    for (int i = 0; i < IN * W; i++)
        x[i] = ((uint64_t)next_u32() << 32) | next_u32();
    uint32_t a[OUT], b[OUT];
    uint8_t ops[OUT];
    for (int g = 0; g < OUT; g++) {
        a[g] = (uint32_t)below(IN);
        b[g] = g % 7 == 0 ? a[g] : (uint32_t)below(IN);
        ops[g] = (uint8_t)(g % LOGIC_OPS);
    }
    const logic_layer L = { IN, OUT, a, b, NULL, 0 };
    logic_hard_forward(y, x, &L, ops, W);
    for (int g = 0; g < OUT; g++)
        for (int w = 0; w < W; w++) {
            const uint64_t xa = x[a[g] * W + w], xb = x[b[g] * W + w];
            assert_true(y[g * W + w] == logic_hard_word(ops[g], xa, xb));
            for (int bit = 0; bit < 64; bit += 9)
                assert_int_equal((int)((y[g * W + w] >> bit) & 1),
                                 logic_hard_bit(ops[g], (int)((xa >> bit) & 1), (int)((xb >> bit) & 1)));
        }
}

/* ---- The soft kernels: naive references written from logic.h. ---- */

/* logic.h's gradient floor: |d| < 2^-64 reads as +0 (NaN compares false). */
static float ref_floor(float d)
{
    return (d > -0x1p-64f && d < 0x1p-64f) ? 0.0f : d;
}

/* A gradient: signed_val, or a value at the floor's edge (kept: ±2^-64,
 * 2^-60; zeroed: the float just below 2^-64, 2^-70, a subnormal). */
static float grad_val(void)
{
    const uint32_t r = next_u32();
    const float sign = (r & 16) ? -1.0f : 1.0f;
    switch (r & 15) {
    case 0: return sign * 0x1p-64f;
    case 1: return sign * nextafterf(0x1p-64f, 0.0f);
    case 2: return sign * 0x1p-70f;
    case 3: return sign * 0x1p-140f;
    case 4: return sign * 0x1p-60f;
    default: return signed_val();
    }
}

static float ref_tree(const float v[16])
{
    const float l1[8] = { v[0] + v[1], v[2] + v[3], v[4] + v[5], v[6] + v[7],
                          v[8] + v[9], v[10] + v[11], v[12] + v[13], v[14] + v[15] };
    const float l2[4] = { l1[0] + l1[1], l1[2] + l1[3], l1[4] + l1[5], l1[6] + l1[7] };
    return (l2[0] + l2[1]) + (l2[2] + l2[3]);
}

static void ref_forward(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld)
{
    for (size_t g = 0; g < L->out; g++)
        for (size_t l = 0; l < n; l++) {
            const float a = x[L->a[g] * ld + l], b = x[L->b[g] * ld + l];
            float t = coef[4 * g + 1] * a;
            t = coef[4 * g] + t;
            const float u = coef[4 * g + 2] * b;
            t = t + u;
            const float ab = a * b;
            const float w = coef[4 * g + 3] * ab;
            y[g * ld + l] = t + w;
        }
}

/* Statistics: accumulator v = l mod 16 collects lanes v, v + 16, ... in
 * increasing order, then the tree; dx updates gate by gate, a then b. */
static void ref_backward(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                         const float *coef, size_t n, size_t ld, int accumulate)
{
    for (size_t g = 0; g < L->out; g++) {
        for (int k = 0; k < 4; k++) {
            float v[16];
            for (size_t acc = 0; acc < 16; acc++) {
                float s = 0.0f;
                for (size_t l = acc; l < n; l += 16) {
                    const float d = ref_floor(dy[g * ld + l]), a = x[L->a[g] * ld + l], b = x[L->b[g] * ld + l];
                    const float term = k == 0 ? d : k == 1 ? d * a : k == 2 ? d * b : d * (a * b);
                    s = s + term;
                }
                v[acc] = s;
            }
            const float S = ref_tree(v);
            stats[4 * g + k] = accumulate ? stats[4 * g + k] + S : S;
        }
        if (dx != NULL)
            for (size_t l = 0; l < n; l++) {
                const float d = ref_floor(dy[g * ld + l]), a = x[L->a[g] * ld + l], b = x[L->b[g] * ld + l];
                const float ga = coef[4 * g + 1] + coef[4 * g + 3] * b;
                dx[L->a[g] * ld + l] = dx[L->a[g] * ld + l] + d * ga;
                const float gb = coef[4 * g + 2] + coef[4 * g + 3] * a;
                dx[L->b[g] * ld + l] = dx[L->b[g] * ld + l] + d * gb;
            }
    }
}

/* One random case: shapes, wiring with some a == b, garbage (NaN, huge) in
 * the padding lanes of x and dy, dx starting at random values with a
 * sentinel in its padding. Runs every path and compares everything. */
/* Set by a test: wire gate g's b to gate g+1's a, so every pair of gates
 * a kernel may run side by side updates one dx row in turn. */
static int chain_wiring;
/* Set by a test: half the gates get a silent dy row (every lane below the
 * floor: ±0, tiny, subnormal; now and then one NaN lane, which is not
 * silent; x86's default NaN, the one 0·inf gives, so that no sum meets
 * two different NaNs), a tenth of x's rows are 1e30 (a·b overflows: a
 * silent gate reading two of them has NaN statistics), an eighth are
 * negative (a silent gate run in full reading one has only −0 terms in a
 * statistic, whose sum from 0.0f is +0) and a tenth have one
 * lane 1e30, inf or NaN (often the last, a tail lane), a tenth of the
 * coefficients ±inf or NaN, and a tenth of the prior statistics −0. */
static int silent_mix;

static float silent_val(void)
{
    const uint32_t r = next_u32();
    const float sign = (r & 8) ? -1.0f : 1.0f;
    switch (r & 7) {
    case 0: return sign * nextafterf(0x1p-64f, 0.0f);
    case 1: return sign * 0x1p-70f;
    case 2: return sign * 0x1p-140f;
    default: return sign * 0.0f;
    }
}

static void kernel_case_flags(size_t in, size_t out, size_t n, int accumulate, int with_dx, int dx_set);

/* Every case runs twice: dx updated in place, and LOGIC_DX_SET on a dx full
 * of garbage (NaN and -0.0 among it), which must give the in-place result
 * on a cleared dx and leave the padding lanes alone. */
static void kernel_case(size_t in, size_t out, size_t n, int accumulate, int with_dx)
{
    kernel_case_flags(in, out, n, accumulate, with_dx, 0);
    if (with_dx)
        kernel_case_flags(in, out, n, accumulate, with_dx, 1);
}

static void kernel_case_flags(size_t in, size_t out, size_t n, int accumulate, int with_dx, int dx_set)
{
    const size_t ld = (n + 15) / 16 * 16 + 16 * below(2);
    float *x = xalloc(in * ld * sizeof(float));
    float *dy = xalloc(out * ld * sizeof(float));
    float *coef = xalloc(out * 4 * sizeof(float));
    uint32_t *a = xalloc(out * sizeof(uint32_t)), *b = xalloc(out * sizeof(uint32_t));
    for (size_t r = 0; r < in; r++) {
        const int wide = silent_mix && below(10) == 0, negative = silent_mix && below(8) == 0;
        for (size_t l = 0; l < ld; l++)
            x[r * ld + l] = l < n ? (wide ? 1e30f : negative ? -unit() : unit()) : (l % 3 == 0 ? NAN : 1e30f);
        if (silent_mix && n > 0 && below(10) == 0) {   /* one odd lane: often the last (a tail) */
            static const float odd[] = { 1e30f, INFINITY, -NAN };
            x[r * ld + (below(2) ? n - 1 : below(n))] = odd[below(3)];
        }
    }
    for (size_t g = 0; g < out; g++) {
        const int silent = silent_mix && below(2) == 0;
        for (size_t l = 0; l < ld; l++)
            dy[g * ld + l] = l < n ? (silent ? silent_val() : grad_val()) : (l % 2 ? NAN : -1e30f);
        if (silent && n > 0 && below(8) == 0)
            dy[g * ld + below(n)] = -NAN;
    }
    for (size_t i = 0; i < out * 4; i++)
        coef[i] = silent_mix && below(10) == 0 ? (below(3) == 0 ? -NAN : below(2) ? INFINITY : -INFINITY) : signed_val();
    for (size_t g = 0; g < out; g++) {
        /* with out >= in, the first gates read every row (LOGIC_DX_SET then
         * runs on the first flags, not on its cleared fallback) */
        a[g] = out >= in && g < in ? (uint32_t)((g * 7) % in) : (uint32_t)below(in);
        b[g] = below(4) == 0 ? a[g] : (uint32_t)below(in);
        if (chain_wiring && g > 0)   /* consecutive gates share a row: b of g-1 is a of g */
            b[g - 1] = a[g];
    }
    logic_layer L = { in, out, a, b, NULL, 0 };
    uint8_t *first = xalloc(out);
    if (dx_set) {
        /* with the first flags when every row is read (else the clearing fallback) */
        ls_err err;
        assert_int_equal(logic_layer_first(first, &L.reads_all, &L, &err), LS_OK);
        L.first = first;
        if (out >= in && in % 7 != 0)   /* (7g) mod in covers every row */
            assert_true(L.reads_all);
    }
    const size_t ybytes = out * ld * sizeof(float), xbytes = in * ld * sizeof(float);
    float *y_ref = xalloc(ybytes), *y = xalloc(ybytes);
    float *dx0 = xalloc(xbytes), *dx_ref = xalloc(xbytes), *dx = xalloc(xbytes);
    float *st0 = xalloc(out * 4 * sizeof(float)), *st_ref = xalloc(out * 4 * sizeof(float));
    float *st = xalloc(out * 4 * sizeof(float));
    for (size_t r = 0; r < in; r++)
        for (size_t l = 0; l < ld; l++)
            dx0[r * ld + l] = l < n ? signed_val() : -7.25f;
    for (size_t i = 0; i < out * 4; i++)
        st0[i] = silent_mix && below(10) == 0 ? -0.0f : signed_val();

    ref_forward(y_ref, x, &L, coef, n, ld);
    memcpy(dx_ref, dx0, xbytes);
    if (dx_set) {
        /* the reference runs on cleared lanes; the kernels get garbage there */
        for (size_t r = 0; r < in; r++)
            for (size_t l = 0; l < n; l++) {
                dx_ref[r * ld + l] = 0.0f;
                dx0[r * ld + l] = l % 3 == 0 ? NAN : l % 3 == 1 ? -0.0f : 1e30f;
            }
    }
    const int flags = (accumulate ? LOGIC_STATS_ADD : 0) | (dx_set ? LOGIC_DX_SET : 0);
    memcpy(st_ref, st0, out * 4 * sizeof(float));
    ref_backward(with_dx ? dx_ref : NULL, st_ref, dy, x, &L, coef, n, ld, accumulate);

    /* path 0: the scalar twins; then best, then at most AVX2 */
    for (int path = 0; path < 3; path++) {
        const int prev = logic_set_simd(path == 0 ? 0 : path == 1 ? 1 : 2);
        for (int twin = 0; twin < (path == 0 ? 2 : 1); twin++) {
            memset(y, 0, ybytes);
            memcpy(dx, dx0, xbytes);
            memcpy(st, st0, out * 4 * sizeof(float));
            if (twin) {
                logic_forward_scalar(y, x, &L, coef, n, ld);
                logic_backward_scalar(with_dx ? dx : NULL, st, dy, x, &L, coef, n, ld, flags);
            } else {
                logic_forward(y, x, &L, coef, n, ld);
                logic_backward(with_dx ? dx : NULL, st, dy, x, &L, coef, n, ld, flags);
            }
            for (size_t g = 0; g < out; g++)
                assert_memory_equal(y + g * ld, y_ref + g * ld, n * sizeof(float));
            /* whole rows of dx, padding included: lanes >= n are never written */
            assert_memory_equal(dx, with_dx ? dx_ref : dx0, xbytes);
            assert_memory_equal(st, st_ref, out * 4 * sizeof(float));
        }
        logic_set_simd(prev);
    }
    free(x); free(dy); free(coef); free(a); free(b); free(first);
    free(y_ref); free(y); free(dx0); free(dx_ref); free(dx); free(st0); free(st_ref); free(st);
}

static void test_kernels_every_tail(void **state)
{
    (void)state;
    for (size_t n = 0; n <= 70; n++)
        kernel_case(1 + below(9), 1 + below(20), n, (int)(n & 1), (n % 5) != 3);
}

/* The AVX-512 path's rows of one and two vectors and its tails, every row
 * read (LOGIC_DX_SET on the first flags), statistics written and added. */
static void avx512_row_cases(void)
{
    for (int acc = 0; acc < 2; acc++) {
        kernel_case(64, 64, 32, acc, 1);
        kernel_case(40, 80, 16, acc, 1);
        kernel_case(40, 50, 9, acc, 1);
        kernel_case(30, 40, 28, acc, 1);
        kernel_case(20, 30, 48, acc, 1);
        /* two-vector rows run two gates at a time: an odd last gate, and
         * fewer gates than rows (the cleared fallback) */
        kernel_case(33, 47, 32, acc, 1);
        kernel_case(47, 33, 32, acc, 1);
        kernel_case(3, 2, 32, acc, 1);
        kernel_case(33, 47, 28, acc, 1);   /* the async task's 28-cell parts */
        kernel_case(47, 33, 17, acc, 1);
        chain_wiring = 1;
        kernel_case(30, 41, 32, acc, 1);
        kernel_case(30, 40, 25, acc, 1);
        kernel_case(50, 20, 64, acc, 1);
        chain_wiring = 0;
    }
}

static void test_kernels_random_shapes(void **state)
{
    (void)state;
    for (int t = 0; t < 60; t++)
        kernel_case(1 + below(300), 1 + below(300), 1 + below(200), (int)below(2), below(4) != 0);
    /* the model's shapes: a leaf of 32 and a padded leaf */
    kernel_case(200, 400, 32, 0, 1);
    kernel_case(200, 400, 32, 1, 0);
    kernel_case(150, 100, 27, 0, 1);
    avx512_row_cases();
    /* 300 gates cannot read 5000 rows: LOGIC_DX_SET's cleared fallback */
    kernel_case(5000, 300, 20, 1, 1);
}

/* Silent gates (dy below the floor on every lane): the AVX-512 kernels skip
 * their arithmetic when the result is known (+0 statistics, dx rows
 * untouched or set to +0); the scalar reference runs them in full. The
 * model's shapes and the pair kernel's rows, with and without dx, in place
 * and with LOGIC_DX_SET. */
static void test_kernels_silent_gates(void **state)
{
    (void)state;
    silent_mix = 1;
    avx512_row_cases();
    for (int acc = 0; acc < 2; acc++) {   /* a CA part's perception rows */
        kernel_case(24, 40, 256, acc, 1);
        kernel_case(24, 40, 224, acc, 0);
    }
    for (int t = 0; t < 40; t++)
        kernel_case(1 + below(100), 1 + below(100), 1 + below(100), (int)below(2), below(4) != 0);
    silent_mix = 0;
}

/* ---- logic_backward_lanes: a group of samples side by side. ---- */

/* Values that probe the shortcuts of the lanes kernels: many zeros of both
 * signs (all-−0 accumulators, −0 terms), denormals, small integers whose
 * sums cancel exactly, and ordinary values. */
static float nasty(void)
{
    const uint32_t r = next_u32() % 16;
    const float sign = (next_u32() & 1) ? -1.0f : 1.0f;
    switch (r) {
    case 0: case 1: case 2: return 0.0f;
    case 3: case 4: case 5: return -0.0f;
    case 6: return sign * 0x1p-140f;               /* denormal */
    case 7: return sign * 0x1.8p-127f;             /* denormal */
    case 8: case 9: return sign;                   /* ±1: cancels */
    case 10: return sign * 3.0f;
    default: return signed_val();
    }
}

/* One case: nvl virtual lanes, m samples packed (element vl·m + j of rows
 * LOGIC_LANES_LD(nvl, m) apart), random wiring (a == b allowed), NaN in the
 * rows' tails. Every path of logic_backward_lanes
 * (and its scalar twin) against logic_backward_scalar run on each sample
 * alone with the same flags; stats and dx lanes of samples < m compared bit
 * for bit. dx_set: LOGIC_DX_SET on a dx full of garbage, with the layer's
 * first flags (cover: every row read) or the clearing fallback. */
static void lanes_case(size_t in, size_t out, size_t nvl, size_t m, int accumulate, int with_dx, int all_neg_zero,
                       int dx_set, int cover)
{
    const size_t W = LOGIC_LANES, ld = LOGIC_LANES_LD(nvl, m), live = nvl * m, lds = (nvl + 15) / 16 * 16 + 16;
    const size_t stride = out * 4 + 4 * below(3);   /* samples' stats rows, with gaps */
    float *x = xalloc(in * ld * sizeof(float)), *dy = xalloc(out * ld * sizeof(float));
    float *dx0 = xalloc(in * ld * sizeof(float)), *dx = xalloc(in * ld * sizeof(float));
    float *dx_ref = xalloc(in * ld * sizeof(float));
    float *coef = xalloc(out * 4 * sizeof(float));
    float *st0 = xalloc(W * stride * sizeof(float)), *st = xalloc(W * stride * sizeof(float));
    float *st_ref = xalloc(W * stride * sizeof(float));
    float *xs = xalloc(in * lds * sizeof(float)), *dys = xalloc(out * lds * sizeof(float));
    float *dxs = xalloc(in * lds * sizeof(float));
    uint32_t *a = xalloc(out * sizeof(uint32_t)), *b = xalloc(out * sizeof(uint32_t));
    uint8_t *first = xalloc(out);
    for (size_t i = 0; i < in * ld; i++) {
        x[i] = i % ld < live ? nasty() : NAN;
        dx0[i] = dx_set ? (i % 3 == 0 ? NAN : i % 3 == 1 ? -0.0f : 1e30f) : i % ld < live ? nasty() : 1e30f;
    }
    for (size_t i = 0; i < out * ld; i++)
        dy[i] = i % ld < live ? (all_neg_zero ? -0.0f : nasty()) : NAN;
    for (size_t i = 0; i < out * 4; i++)
        coef[i] = nasty();
    for (size_t i = 0; i < W * stride; i++)
        st0[i] = nasty();
    for (size_t g = 0; g < out; g++) {
        a[g] = cover && g < in ? (uint32_t)g : (uint32_t)below(in);
        b[g] = below(4) == 0 ? a[g] : (uint32_t)below(in);
    }
    logic_layer L = { in, out, a, b, NULL, 0 };
    if (dx_set) {
        ls_err err;
        assert_int_equal(logic_layer_first(first, &L.reads_all, &L, &err), LS_OK);
        L.first = first;
        if (cover && out >= in)
            assert_true(L.reads_all);
    }
    const int flags = (accumulate ? LOGIC_STATS_ADD : 0) | (dx_set ? LOGIC_DX_SET : 0);

    /* the reference: each sample alone, in logic_backward's layout */
    memcpy(st_ref, st0, W * stride * sizeof(float));
    memcpy(dx_ref, dx0, in * ld * sizeof(float));
    for (size_t j = 0; j < m; j++) {
        for (size_t r = 0; r < in; r++)
            for (size_t l = 0; l < lds; l++) {
                xs[r * lds + l] = l < nvl ? x[r * ld + l * m + j] : NAN;
                dxs[r * lds + l] = l < nvl ? dx0[r * ld + l * m + j] : NAN;
            }
        for (size_t g = 0; g < out; g++)
            for (size_t l = 0; l < lds; l++)
                dys[g * lds + l] = l < nvl ? dy[g * ld + l * m + j] : NAN;
        logic_backward_scalar(with_dx ? dxs : NULL, st_ref + j * stride, dys, xs, &L, coef, nvl, lds, flags);
        for (size_t r = 0; r < in; r++)
            for (size_t l = 0; l < nvl; l++)
                dx_ref[r * ld + l * m + j] = dxs[r * lds + l];
    }

    for (int path = 0; path < 3; path++) {
        const int prev = logic_set_simd(path);
        for (int twin = 0; twin < (path == 0 ? 2 : 1); twin++) {
            memcpy(dx, dx0, in * ld * sizeof(float));
            memcpy(st, st0, W * stride * sizeof(float));
            if (twin)
                logic_backward_lanes_scalar(with_dx ? dx : NULL, st, stride, dy, x, &L, coef, nvl, m, flags);
            else
                logic_backward_lanes(with_dx ? dx : NULL, st, stride, dy, x, &L, coef, nvl, m, flags);
            /* every sample's stats row, gaps and samples >= m untouched */
            assert_memory_equal(st, st_ref, W * stride * sizeof(float));
            for (size_t i = 0; i < in * ld; i++)   /* the rows' tails are unspecified */
                if (i % ld < live && memcmp(&dx[i], with_dx ? &dx_ref[i] : &dx0[i], sizeof(float)) != 0)
                    fail_msg("lanes: path %s, nvl %zu, m %zu, flags %d: dx element %zu is %a, expected %a",
                             logic_simd_name(), nvl, m, flags, i, (double)dx[i],
                             (double)(with_dx ? dx_ref[i] : dx0[i]));
        }
        logic_set_simd(prev);
    }
    free(x); free(dy); free(dx0); free(dx); free(dx_ref); free(coef); free(st0); free(st); free(st_ref);
    free(xs); free(dys); free(dxs); free(a); free(b); free(first);
}

static void test_backward_lanes(void **state)
{
    (void)state;
    static const size_t NVL[] = { 1, 2, 3, 9, 16, 17, 33 }, M[] = { 1, 5, 8, 9, 10, 16 };
    for (size_t i = 0; i < sizeof NVL / sizeof NVL[0]; i++)
        for (size_t j = 0; j < sizeof M / sizeof M[0]; j++)
            for (int acc = 0; acc < 2; acc++) {
                lanes_case(1 + below(40), 1 + below(40), NVL[i], M[j], acc, 0, 0, 0, 0);
                lanes_case(1 + below(40), 1 + below(40), NVL[i], M[j], acc, 1, 0, 0, 0);
                lanes_case(1 + below(40), 1 + below(40), NVL[i], M[j], acc, 1, 0, 1, 1);   /* first flags */
                lanes_case(1 + below(40), 1 + below(40), NVL[i], M[j], acc, 1, 0, 1, 0);   /* mostly cleared */
                if (j == 0 || M[j] == 16)
                    lanes_case(1 + below(10), 1 + below(10), NVL[i], M[j], acc, (int)below(2), 1, (int)below(2), 1);
            }
    for (int t = 0; t < 20; t++)
        lanes_case(1 + below(200), 1 + below(200), 1 + below(64), 1 + below(16), (int)below(2), below(4) != 0, 0,
                   (int)below(2), (int)below(2));
}

/* logic_layer_first against its definition, on random wirings (a == b
 * included) with rows that no gate reads. */
static void test_layer_first(void **state)
{
    (void)state;
    for (int t = 0; t < 200; t++) {
        const size_t in = 1 + below(30), out = 1 + below(30);
        uint32_t a[30], b[30];
        uint8_t first[30];
        for (size_t g = 0; g < out; g++) {
            a[g] = (uint32_t)below(in);
            b[g] = below(4) == 0 ? a[g] : (uint32_t)below(in);
        }
        const logic_layer L = { in, out, a, b, NULL, 0 };
        int reads_all = -1;
        assert_int_equal(logic_layer_first(first, &reads_all, &L, NULL), LS_OK);
        for (size_t g = 0; g < out; g++) {
            int seen_a = 0, seen_b = a[g] == b[g];
            for (size_t h = 0; h < g; h++) {
                seen_a |= a[h] == a[g] || b[h] == a[g];
                seen_b |= a[h] == b[g] || b[h] == b[g];
            }
            assert_int_equal(first[g], (!seen_a ? LOGIC_FIRST_A : 0) | (!seen_b ? LOGIC_FIRST_B : 0));
        }
        int all = 1;
        for (size_t r = 0; r < in; r++) {
            int read = 0;
            for (size_t g = 0; g < out; g++)
                read |= a[g] == r || b[g] == r;
            all &= read;
        }
        assert_int_equal(reads_all, all);
    }
}

/* The shortcuts are needed to be checked: on all-zero terms the statistics
 * of the definition are +0, while a sum without the additions from 0.0f
 * would be −0 (a check that could not tell them apart would pass either).
 * d = −0 reads as +0 (the gradient floor), so the −0 terms come from the
 * products: gate 0 reads a = −1, b = 1 (d·a and d·(a·b) are −0: S1, S3),
 * gate 1 the same rows the other way round (S2, S3). */
static void test_backward_lanes_negative_zero(void **state)
{
    (void)state;
    enum { NVL = 9, M = 16 };
    float *x = xalloc(2 * NVL * 16 * sizeof(float)), *dy = xalloc(2 * NVL * 16 * sizeof(float));
    for (size_t i = 0; i < NVL * 16; i++) {
        x[i] = -1.0f;
        x[NVL * 16 + i] = 1.0f;
        dy[i] = -0.0f;
        dy[NVL * 16 + i] = -0.0f;
    }
    const uint32_t a[2] = { 0, 1 }, b[2] = { 1, 0 };
    const float coef[8] = { 0.0f, 1.0f, 1.0f, 1.0f, 0.0f, 1.0f, 1.0f, 1.0f };
    const logic_layer L = { 2, 2, a, b, NULL, 0 };
    const float neg = -0.0f + -0.0f;   /* what a sum from the first term would give */
    assert_true(signbit(neg));
    for (int path = 0; path < 3; path++) {
        const int prev = logic_set_simd(path);
        float st[M * 8];
        for (int acc = 0; acc < 2; acc++) {
            for (size_t i = 0; i < M * 8; i++)
                st[i] = -0.0f;
            logic_backward_lanes(NULL, st, 8, dy, x, &L, coef, NVL, M, acc ? LOGIC_STATS_ADD : 0);
            for (size_t i = 0; i < M * 8; i++)   /* +0 written; −0 + +0 = +0 added */
                assert_false(signbit(st[i]));
        }
        logic_set_simd(prev);
    }
    free(x);
    free(dy);
}

/* The gradient floor (logic.h): one gate reading a = b = 1 with cA = 1, so
 * S0 and dx[a] are the one nonzero d itself, or +0 when it is floored.
 * Every path, logic_backward and logic_backward_lanes, at the floor's edge:
 * ±2^-64 kept, the float below it, 2^-70 and a subnormal zeroed, NaN kept. */
static void test_grad_floor(void **state)
{
    (void)state;
    enum { N = 20, LD = 32 };
    const float vals[] = { 0x1p-64f, -0x1p-64f, 0x1.000002p-64f, 0x1.fffffep-65f, -0x1.fffffep-65f, 0x1p-70f,
                           0x1p-140f, -0x1p-149f, NAN };
    const int kept[] = { 1, 1, 1, 0, 0, 0, 0, 0, 1 };
    float *x = xalloc(2 * LD * 16 * sizeof(float)), *dy = xalloc(LD * 16 * sizeof(float));
    float *dx = xalloc(2 * LD * 16 * sizeof(float));
    for (size_t i = 0; i < 2 * LD * 16; i++)
        x[i] = 1.0f;
    const uint32_t a = 0, b = 1;
    const float coef[4] = { 0.0f, 1.0f, 0.0f, 0.0f };
    const logic_layer L = { 2, 1, &a, &b, NULL, 0 };
    for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++)
        for (int path = 0; path < 3; path++) {
            const int prev = logic_set_simd(path);
            for (int probe = 0; probe < 4; probe++) {
                /* plain: lane 7 (a full vector) or 17 (the masked tail: n = 20);
                 * lanes: virtual lane 7 or 17 of the one sample, nvl = 20 */
                const int lanes = probe & 1;
                const size_t lane = probe < 2 ? 7 : 17;
                const size_t at = lane;
                memset(dy, 0, LD * 16 * sizeof(float));
                dy[at] = vals[v];
                float st[4];
                if (lanes)
                    logic_backward_lanes(dx, st, 4, dy, x, &L, coef, N, 1, LOGIC_DX_SET);
                else
                    logic_backward(dx, st, dy, x, &L, coef, N, LD, LOGIC_DX_SET);
                const float want = kept[v] ? vals[v] : 0.0f;
                if (memcmp(&st[0], &want, sizeof want) != 0 || memcmp(&dx[at], &want, sizeof want) != 0)
                    fail_msg("floor: path %s, %s, lane %zu, d = %a: S0 = %a, dx = %a, expected %a",
                             logic_simd_name(), lanes ? "lanes" : "plain", lane, (double)vals[v], (double)st[0],
                             (double)dx[at], (double)want);
            }
            logic_set_simd(prev);
        }
    free(x);
    free(dy);
    free(dx);
}

/* The 16-accumulator order is really what the kernels compute: on this
 * input a plain left-to-right sum, and an order that pairs the accumulators
 * differently, give other bits, so the comparison above can fail. */
static void test_stats_order_matters(void **state)
{
    (void)state;
    enum { N = 48, LD = 48 };
    float *x = xalloc(2 * LD * sizeof(float)), *dy = xalloc(LD * sizeof(float));
    for (size_t l = 0; l < LD; l++) {
        x[l] = 1.0f;
        x[LD + l] = 1.0f;
        /* 1 then many small values: rounding depends on the grouping */
        dy[l] = l == 0 ? 1.0f : l % 16 == 1 ? 0x1p-24f * 3.0f : 0x1p-24f;
    }
    uint32_t a = 0, b = 1;
    const float coef[4] = { 0.0f, 1.0f, 0.0f, 0.0f };
    const logic_layer L = { 2, 1, &a, &b, NULL, 0 };
    float seq = 0.0f;
    for (size_t l = 0; l < N; l++)
        seq = seq + dy[l];
    float v[16] = { 0 };
    for (size_t l = 0; l < N; l++)
        v[l % 16] = v[l % 16] + dy[l];
    const float tree = ref_tree(v);
    float rev = 0.0f;   /* the accumulators folded left to right instead of the tree */
    for (int i = 0; i < 16; i++)
        rev = rev + v[i];
    assert_true(seq != tree);
    assert_true(rev != tree);
    for (int path = 0; path < 3; path++) {
        const int prev = logic_set_simd(path);
        float st[4];
        logic_backward(NULL, st, dy, x, &L, coef, N, LD, 0);
        assert_memory_equal(&st[0], &tree, sizeof tree);
        logic_set_simd(prev);
    }
    free(x);
    free(dy);
}

/* logic_expand against Σ_l d_l p_j (f_j(a_l, b_l) − y_l) in double, with y_l
 * = Σ_i p_i f_i(a_l, b_l). Tolerance: 1e-5 · Σ_l |d_l| p_j (float sums of a
 * few hundred terms). */
static void test_expand_against_direct(void **state)
{
    (void)state;
    enum { G = 24, N = 100, LD = 112, IN = 10 };
    float *z = xalloc(G * LOGIC_OPS * sizeof(float)), *p = xalloc(G * LOGIC_OPS * sizeof(float));
    float *coef = xalloc(G * 4 * sizeof(float)), *x = xalloc(IN * LD * sizeof(float));
    float *dy = xalloc(G * LD * sizeof(float)), *st = xalloc(G * 4 * sizeof(float));
    float *dz = xalloc(G * LOGIC_OPS * sizeof(float));
    for (size_t i = 0; i < G * LOGIC_OPS; i++)
        z[i] = signed_val() * 3.0f;
    logic_coeffs(z, G, p, coef);
    for (size_t i = 0; i < IN * LD; i++)
        x[i] = below(3) == 0 ? (float)below(2) : unit();
    for (size_t i = 0; i < G * LD; i++)
        dy[i] = unit() * 2.0f - 1.0f;
    uint32_t a[G], b[G];
    for (int g = 0; g < G; g++) {
        a[g] = (uint32_t)below(IN);
        b[g] = (uint32_t)below(IN);
    }
    const logic_layer L = { IN, G, a, b, NULL, 0 };
    logic_backward(NULL, st, dy, x, &L, coef, N, LD, 0);
    /* expand in two ranges: [lo, hi) touches only its gates */
    memset(dz, 0xff, G * LOGIC_OPS * sizeof(float));
    logic_expand(dz, st, p, coef, 0, 10);
    for (size_t i = 10 * LOGIC_OPS; i < G * LOGIC_OPS; i++)
        assert_true(isnan(dz[i]));
    logic_expand(dz, st, p, coef, 10, G);
    for (int g = 0; g < G; g++)
        for (int j = 0; j < LOGIC_OPS; j++) {
            double want = 0.0, scale = 0.0;
            const double pj = (double)p[g * LOGIC_OPS + j];
            for (int l = 0; l < N; l++) {
                const double av = x[a[g] * LD + l], bv = x[b[g] * LD + l], d = dy[g * LD + l];
                double yl = 0.0;
                for (int i = 0; i < LOGIC_OPS; i++) {
                    const int *f = LOGIC_AFFINE[i];
                    yl += (double)p[g * LOGIC_OPS + i] * (f[0] + f[1] * av + f[2] * bv + f[3] * av * bv);
                }
                const int *f = LOGIC_AFFINE[j];
                want += d * pj * ((f[0] + f[1] * av + f[2] * bv + f[3] * av * bv) - yl);
                scale += fabs(d) * pj;
            }
            assert_true(fabs((double)dz[g * LOGIC_OPS + j] - want) <= 1e-5 * scale + 1e-30);
        }
    free(z); free(p); free(coef); free(x); free(dy); free(st); free(dz);
}

/* logic_expand gives the same bits on every path (random p, coef, stats of
 * many magnitudes, some zeros and an infinity). */
static void test_expand_paths(void **state)
{
    (void)state;
    enum { G = 1001 };
    float *p = xalloc(G * LOGIC_OPS * sizeof(float)), *coef = xalloc(G * 4 * sizeof(float));
    float *st = xalloc(G * 4 * sizeof(float));
    float *d0 = xalloc(G * LOGIC_OPS * sizeof(float)), *d1 = xalloc(G * LOGIC_OPS * sizeof(float));
    for (size_t i = 0; i < G * LOGIC_OPS; i++)
        p[i] = unit();
    for (size_t i = 0; i < G * 4; i++) {
        coef[i] = signed_val();
        st[i] = signed_val() * (float)(1u << (next_u32() % 20));
    }
    st[4 * 7 + 2] = INFINITY;
    const int prev = logic_set_simd(0);
    logic_expand(d0, st, p, coef, 0, G);
    for (int path = 1; path <= 2; path++) {
        logic_set_simd(path);
        memset(d1, 0, G * LOGIC_OPS * sizeof(float));
        logic_expand(d1, st, p, coef, 0, 500);
        logic_expand(d1, st, p, coef, 500, G);
        assert_memory_equal(d0, d1, G * LOGIC_OPS * sizeof(float));
    }
    logic_set_simd(prev);
    free(p); free(coef); free(st); free(d0); free(d1);
}

/* logic_set_simd returns the previous setting; 0 forces "scalar". */
static void test_set_simd(void **state)
{
    (void)state;
    const int prev = logic_set_simd(0);
    assert_string_equal(logic_simd_name(), "scalar");
    assert_int_equal(logic_set_simd(1), 0);
    const char *best = logic_simd_name();
    assert_true(strcmp(best, "avx512") == 0 || strcmp(best, "avx2") == 0 || strcmp(best, "scalar") == 0);
    logic_set_simd(prev);
}

/* ---- Wiring. ---- */

static void test_wire_random_balanced(void **state)
{
    (void)state;
    const size_t shapes[][2] = { { 10, 5 }, { 784, 8000 }, { 8000, 8000 }, { 7, 100 }, { 100, 7 }, { 1, 4 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t in = shapes[s][0], out = shapes[s][1];
        uint32_t *a = xalloc(out * 4), *b = xalloc(out * 4), *a2 = xalloc(out * 4), *b2 = xalloc(out * 4);
        size_t *uses = calloc(in, sizeof *uses);
        assert_non_null(uses);
        assert_int_equal(logic_wire_random(a, b, in, out, 7, 3, NULL), LS_OK);
        for (size_t g = 0; g < out; g++) {
            assert_true(a[g] < in && b[g] < in);
            uses[a[g]]++;
            uses[b[g]]++;
        }
        const size_t lo = 2 * out / in, hi = (2 * out + in - 1) / in;
        for (size_t i = 0; i < in; i++)
            assert_true(uses[i] == lo || uses[i] == hi);
        /* deterministic; another addr or seed gives another wiring */
        assert_int_equal(logic_wire_random(a2, b2, in, out, 7, 3, NULL), LS_OK);
        assert_memory_equal(a, a2, out * 4);
        assert_memory_equal(b, b2, out * 4);
        if (in > 1 && out > 2) {
            assert_int_equal(logic_wire_random(a2, b2, in, out, 7, 4, NULL), LS_OK);
            assert_true(memcmp(a, a2, out * 4) != 0 || memcmp(b, b2, out * 4) != 0);
            assert_int_equal(logic_wire_random(a2, b2, in, out, 8, 3, NULL), LS_OK);
            assert_true(memcmp(a, a2, out * 4) != 0 || memcmp(b, b2, out * 4) != 0);
        }
        free(a); free(b); free(a2); free(b2); free(uses);
    }
    /* the documented recipe, replayed with rng_permutation */
    {
        const size_t in = 9, out = 11;
        uint32_t a[11], b[11], c[22], rel[9];
        assert_int_equal(logic_wire_random(a, b, in, out, 5, 2, NULL), LS_OK);
        rng_permutation(c, 2 * out, 5, RNG_WIRING, 4 * 2 + 0);
        rng_permutation(rel, in, 5, RNG_WIRING, 4 * 2 + 1);
        for (size_t g = 0; g < out; g++) {
            assert_int_equal(a[g], rel[c[g] % in]);
            assert_int_equal(b[g], rel[c[out + g] % in]);
        }
    }
    uint32_t a1, b1;
    ls_err err;
    assert_int_equal(logic_wire_random(&a1, &b1, 0, 1, 1, 0, &err), LS_EINVAL);
}

/* The pair sequences before the shuffle, from a Python replay of difflogic's
 * get_unique_connections (functional.py) using list slicing, which has the
 * semantics of the torch slicing there; NULL rows: difflogic asserts. */
typedef struct {
    size_t in, out;
    const uint32_t *a, *b;
} uniq_case;

static const uint32_t U8_4A[] = { 0, 2, 4, 6 }, U8_4B[] = { 1, 3, 5, 7 };
static const uint32_t U5_4A[] = { 0, 2, 1, 3 }, U5_4B[] = { 1, 3, 2, 4 };
static const uint32_t U4_5A[] = { 0, 2, 1, 0, 1 }, U4_5B[] = { 1, 3, 2, 2, 3 };
static const uint32_t U7_9A[] = { 0, 2, 4, 1, 3, 5, 0, 1, 2 }, U7_9B[] = { 1, 3, 5, 2, 4, 6, 2, 3, 4 };
static const uint32_t U10_20A[] = { 0, 2, 4, 6, 8, 1, 3, 5, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2 };
static const uint32_t U10_20B[] = { 1, 3, 5, 7, 9, 2, 4, 6, 8, 2, 3, 4, 5, 6, 7, 8, 9, 3, 4, 5 };
static const uint32_t U6_15A[] = { 0, 2, 4, 1, 3, 0, 1, 2, 3, 0, 1, 2, 0, 1, 0 };
static const uint32_t U6_15B[] = { 1, 3, 5, 2, 4, 2, 3, 4, 5, 3, 4, 5, 4, 5, 5 };
static const uint32_t U2_1A[] = { 0 }, U2_1B[] = { 1 };

static void test_wire_unique(void **state)
{
    (void)state;
    const uniq_case cases[] = {
        { 8, 4, U8_4A, U8_4B }, { 5, 4, U5_4A, U5_4B }, { 4, 5, U4_5A, U4_5B }, { 7, 9, U7_9A, U7_9B },
        { 10, 20, U10_20A, U10_20B }, { 6, 15, U6_15A, U6_15B }, { 2, 1, U2_1A, U2_1B },
        { 3, 3, NULL, NULL }, { 2, 2, NULL, NULL }, { 1, 1, NULL, NULL },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const uniq_case *u = &cases[c];
        uint32_t a[32], b[32], perm[32];
        ls_err err;
        const ls_status st = logic_wire_unique(a, b, u->in, u->out, 11, 6, &err);
        if (u->a == NULL) {
            assert_int_equal(st, LS_EINVAL);
            continue;
        }
        assert_int_equal(st, LS_OK);
        rng_permutation(perm, u->out, 11, RNG_WIRING, 4 * 6 + 2);
        for (size_t g = 0; g < u->out; g++) {
            assert_int_equal(a[g], u->a[perm[g]]);
            assert_int_equal(b[g], u->b[perm[g]]);
        }
    }
    /* 2·out < in is refused */
    uint32_t a[8], b[8];
    ls_err err;
    err.msg[0] = 0;
    assert_int_equal(logic_wire_unique(a, b, 17, 8, 1, 0, &err), LS_EINVAL);
    assert_true(err.msg[0] != 0);

    /* bigger layers (the CA's and fashion's shapes): no repeated pair,
     * a < b, every input used, deterministic, differs by addr and seed */
    const size_t shapes[][2] = { { 17, 128 }, { 264, 256 }, { 128, 64 }, { 2352, 8000 }, { 8000, 8000 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t in = shapes[s][0], out = shapes[s][1];
        uint32_t *ua = xalloc(out * 4), *ub = xalloc(out * 4), *a2 = xalloc(out * 4), *b2 = xalloc(out * 4);
        uint8_t *seen = calloc(in * in, 1), *used = calloc(in, 1);
        assert_non_null(seen);
        assert_non_null(used);
        assert_int_equal(logic_wire_unique(ua, ub, in, out, 3, 1, NULL), LS_OK);
        for (size_t g = 0; g < out; g++) {
            assert_true(ua[g] < ub[g] && ub[g] < in);
            assert_int_equal(seen[ua[g] * in + ub[g]], 0);
            seen[ua[g] * in + ub[g]] = 1;
            used[ua[g]] = used[ub[g]] = 1;
        }
        for (size_t i = 0; i < in; i++)
            assert_int_equal(used[i], 1);
        assert_int_equal(logic_wire_unique(a2, b2, in, out, 3, 1, NULL), LS_OK);
        assert_memory_equal(ua, a2, out * 4);
        assert_memory_equal(ub, b2, out * 4);
        assert_int_equal(logic_wire_unique(a2, b2, in, out, 3, 2, NULL), LS_OK);
        assert_true(memcmp(ua, a2, out * 4) != 0);
        assert_int_equal(logic_wire_unique(a2, b2, in, out, 4, 1, NULL), LS_OK);
        assert_true(memcmp(ua, a2, out * 4) != 0);
        free(ua); free(ub); free(a2); free(b2); free(seen); free(used);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hard_truth_tables),
        cmocka_unit_test(test_relaxed_equals_coefficient_form),
        cmocka_unit_test(test_affine_matches_relaxed),
        cmocka_unit_test(test_coeffs_against_double),
        cmocka_unit_test(test_coeffs_paths),
        cmocka_unit_test(test_exp_lanes),
        cmocka_unit_test(test_expf_lanes_every_float),
        cmocka_unit_test(test_hard_ops_argmax),
        cmocka_unit_test(test_hard_forward),
        cmocka_unit_test(test_set_simd),
        cmocka_unit_test(test_kernels_every_tail),
        cmocka_unit_test(test_kernels_random_shapes),
        cmocka_unit_test(test_kernels_silent_gates),
        cmocka_unit_test(test_backward_lanes),
        cmocka_unit_test(test_backward_lanes_negative_zero),
        cmocka_unit_test(test_grad_floor),
        cmocka_unit_test(test_layer_first),
        cmocka_unit_test(test_stats_order_matters),
        cmocka_unit_test(test_expand_against_direct),
        cmocka_unit_test(test_expand_paths),
        cmocka_unit_test(test_wire_random_balanced),
        cmocka_unit_test(test_wire_unique),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
