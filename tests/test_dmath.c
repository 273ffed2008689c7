/* test_dmath.c — engine/num/dmath.c: accuracy against libm, special values,
 * frozen output bits, and the floating-point environment check.
 *
 * libm is the reference here (only in tests): double functions are compared
 * with the long double libm function (64-bit significand on x86-64, so the
 * reference error is ~1/2000 of a double ulp); float functions with the libm
 * double function rounded once to float. Each sweep prints its maximum error
 * so the accuracy is visible in the test output.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_FPCR 1
#endif

#include "engine/num/dmath.h"

/* Sweep sizes: n samples, or n / LOCKSTEP_TEST_SWEEP_DIV when that is set
 * (make check-cross sets it under qemu, where aarch64's 128-bit long double
 * libm reference is emulated in software and the full sweeps take minutes;
 * the bits there are checked by the known answers and the frozen grids,
 * which always run whole). */
static int sweep_div(void)
{
    static long d = 0;
    if (d == 0) {
        const char *e = getenv("LOCKSTEP_TEST_SWEEP_DIV");
        const long v = e != NULL ? strtol(e, NULL, 10) : 1;
        d = v > 1 && v < 1000000 ? v : 1;
    }
    return (int)d;
}

static int sweep_count(int n)
{
    return sweep_div() > 1 ? n / sweep_div() + 1 : n;
}
#define SWEEP(n) sweep_count(n)

/* Bounds asserted by the sweeps. The measured maxima are lower (about 0.8
 * ulp for the double functions); the contract asks for a few ulps. */
#define MAX_ULP_DOUBLE 1.0
#define MAX_ULP_FLOAT 1

static uint64_t dbits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double dfrom(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint32_t fbits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float ffrom(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* xorshift64: a fixed, reproducible input sequence for the sweeps. */
static uint64_t sweep_state;

static uint64_t next_u64(void)
{
    uint64_t x = sweep_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    sweep_state = x;
    return x;
}

/* Uniform in [lo, hi). */
static double next_in(double lo, double hi)
{
    double u = (double)(next_u64() >> 11) * 0x1p-53;
    return lo + (hi - lo) * u;
}

/* |got - ref| in units of the double ulp at ref (2^-1074 in the subnormal
 * range). Infinities must match exactly; two NaNs count as equal. */
static double ulp_err(double got, long double ref)
{
    if (isnan(got) || isnan(ref))
        return (isnan(got) && isnan(ref)) ? 0.0 : INFINITY;
    double refd = (double)ref;
    if (isinf(got) || isinf(refd))
        return got == refd ? 0.0 : INFINITY;
    long double a = fabsl(ref);
    long double ulp;
    if (a < (long double)DBL_MIN) {
        ulp = 0x1p-1074L;
    } else {
        int e;
        frexpl(a, &e);
        ulp = ldexpl(1.0L, e - 53);
    }
    return (double)(fabsl((long double)got - ref) / ulp);
}

/* Distance in representable floats (|a - b| in ulps, across zero too). */
static long long float_ulps(float a, float b)
{
    if (isnan(a) || isnan(b))
        return (isnan(a) && isnan(b)) ? 0 : 1LL << 40;
    uint32_t ua = fbits(a), ub = fbits(b);
    long long ka = (ua & 0x80000000u) ? -(long long)(ua & 0x7fffffffu) : (long long)ua;
    long long kb = (ub & 0x80000000u) ? -(long long)(ub & 0x7fffffffu) : (long long)ub;
    return ka > kb ? ka - kb : kb - ka;
}

/* ---- double sweeps -------------------------------------------------- */

struct dstat {
    double max_ulp;
    double worst_x;
    long n;
};

static void dstat_add(struct dstat *st, double x, double got, long double ref)
{
    double e = ulp_err(got, ref);
    if (e > st->max_ulp) {
        st->max_ulp = e;
        st->worst_x = x;
    }
    st->n++;
}

static void dstat_report(const char *name, const struct dstat *st)
{
    printf("%s: max %.3f ulp over %ld inputs (worst at %a)\n", name, st->max_ulp, st->n,
           st->worst_x);
    assert_true(st->max_ulp <= MAX_ULP_DOUBLE);
}

static void test_exp_accuracy(void **state)
{
    (void)state;
    struct dstat st = {0};
    sweep_state = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < SWEEP(500000); i++) { /* the whole finite range and past both ends */
        double x = next_in(-745.2, 709.8);
        dstat_add(&st, x, dmath_exp(x), expl((long double)x));
    }
    for (int i = 0; i < SWEEP(300000); i++) {
        double x = next_in(-1.0, 1.0);
        dstat_add(&st, x, dmath_exp(x), expl((long double)x));
    }
    for (int i = 0; i < SWEEP(100000); i++) { /* subnormal results */
        double x = next_in(-745.2, -708.3);
        dstat_add(&st, x, dmath_exp(x), expl((long double)x));
    }
    for (int i = 0; i < SWEEP(100000); i++) { /* near overflow */
        double x = next_in(705.0, 709.79);
        dstat_add(&st, x, dmath_exp(x), expl((long double)x));
    }
    dstat_report("dmath_exp", &st);
}

static void test_log_accuracy(void **state)
{
    (void)state;
    struct dstat st = {0};
    sweep_state = 0x6a09e667f3bcc909ULL;
    for (int i = 0; i < SWEEP(300000); i++) { /* any positive finite double */
        double x = dfrom(next_u64() & 0x7fffffffffffffffULL);
        if (!(x > 0.0) || isinf(x))
            continue;
        dstat_add(&st, x, dmath_log(x), logl((long double)x));
    }
    for (int i = 0; i < SWEEP(100000); i++) { /* subnormals */
        double x = dfrom((next_u64() & 0x000fffffffffffffULL) | 1);
        dstat_add(&st, x, dmath_log(x), logl((long double)x));
    }
    for (int i = 0; i < SWEEP(400000); i++) { /* [0.5, 2], where the reduction does nothing */
        double x = next_in(0.5, 2.0);
        dstat_add(&st, x, dmath_log(x), logl((long double)x));
    }
    for (int i = 0; i < SWEEP(200000); i++) { /* near 1, where log is small */
        double x = next_in(1.0 - 0x1p-10, 1.0 + 0x1p-10);
        dstat_add(&st, x, dmath_log(x), logl((long double)x));
    }
    dstat_report("dmath_log", &st);
}

/* Every double within 500 ulps of k pi/2 for |k| <= 5: where the reduction
 * cancels most, and where sin or cos is near zero. */
static void trig_near_multiples(struct dstat *sst, struct dstat *cst)
{
    for (int k = -5; k <= 5; k++) {
        if (k == 0)
            continue;
        double c = (double)((long double)k * 1.57079632679489661923132169163975144L);
        for (int j = 0; j < 500; j++)
            c = nextafter(c, -INFINITY);
        for (int j = 0; j <= 1000; j++) {
            dstat_add(sst, c, dmath_sin(c), sinl((long double)c));
            dstat_add(cst, c, dmath_cos(c), cosl((long double)c));
            c = nextafter(c, INFINITY);
        }
    }
}

static void test_trig_accuracy(void **state)
{
    (void)state;
    struct dstat sst = {0}, cst = {0};
    sweep_state = 0xbb67ae8584caa73bULL;
    for (int i = 0; i < SWEEP(400000); i++) {
        double x = next_in(-8.0, 8.0);
        dstat_add(&sst, x, dmath_sin(x), sinl((long double)x));
        dstat_add(&cst, x, dmath_cos(x), cosl((long double)x));
    }
    for (int i = 0; i < SWEEP(100000); i++) { /* the Box-Muller range */
        double x = next_in(0.0, 6.283185307179586);
        dstat_add(&sst, x, dmath_sin(x), sinl((long double)x));
        dstat_add(&cst, x, dmath_cos(x), cosl((long double)x));
    }
    for (int i = 0; i < SWEEP(50000); i++) { /* small arguments */
        double x = ldexp(next_in(1.0, 2.0), -(int)(next_u64() % 40));
        dstat_add(&sst, x, dmath_sin(x), sinl((long double)x));
        dstat_add(&cst, x, dmath_cos(x), cosl((long double)x));
    }
    trig_near_multiples(&sst, &cst);
    dstat_report("dmath_sin", &sst);
    dstat_report("dmath_cos", &cst);
}

/* ---- float sweeps --------------------------------------------------- */

static float ref_expf(float x) { return (float)exp((double)x); }
static float ref_logf(float x) { return (float)log((double)x); }
static float ref_sigmoidf(float x) { return (float)(1.0 / (1.0 + exp(-(double)x))); }
static float ref_tanhf(float x) { return (float)tanh((double)x); }

/* Every 2053rd float bit pattern of each sign (about 2^21 inputs, every
 * binade, subnormals included), against libm's double result rounded to
 * float. */
static void float_sweep(const char *name, float (*fn)(float), float (*ref)(float))
{
    long long max_ulp = 0;
    long n = 0, differ = 0;
    float worst = 0.0f;
    for (uint32_t sign = 0; sign < 2; sign++) {
        for (uint32_t u = 0; u < 0x7f800000u; u += 2053u * (uint32_t)sweep_div()) {
            float x = ffrom(u | (sign << 31));
            float got = fn(x), want = ref(x);
            long long d = float_ulps(got, want);
            if (d > max_ulp) {
                max_ulp = d;
                worst = x;
            }
            differ += d != 0;
            n++;
        }
    }
    printf("%s: max %lld ulp over %ld inputs (%ld differ from libm's double rounded to float; "
           "worst at %a)\n",
           name, max_ulp, n, differ, (double)worst);
    assert_true(max_ulp <= MAX_ULP_FLOAT);
}

static void test_float_accuracy(void **state)
{
    (void)state;
    float_sweep("dmath_expf", dmath_expf, ref_expf);
    float_sweep("dmath_logf", dmath_logf, ref_logf);
    float_sweep("dmath_sigmoidf", dmath_sigmoidf, ref_sigmoidf);
    float_sweep("dmath_tanhf", dmath_tanhf, ref_tanhf);
}

/* ---- special values ------------------------------------------------- */

static void assert_dbits(double got, double want)
{
    if (dbits(got) != dbits(want))
        fail_msg("got %a (%016llx), want %a (%016llx)", got, (unsigned long long)dbits(got),
                 want, (unsigned long long)dbits(want));
}

static void assert_fbits(float got, float want)
{
    if (fbits(got) != fbits(want))
        fail_msg("got %a (%08x), want %a (%08x)", (double)got, fbits(got), (double)want,
                 fbits(want));
}

/* dmath_tanhf_n against dmath_tanhf, bit for bit: every 61st bit pattern of
 * the 2^32 floats (all 2^32 agreed when the array form was written; a run
 * takes a minute), the branch edges, NaNs of both signs and kinds, and every
 * length up to 9 (the vector loop's tail), on both switch settings. */
static void tanhf_n_check(const float *x, size_t n)
{
    float y[64];
    assert_true(n <= 64);
    dmath_tanhf_n(y, x, n);
    for (size_t j = 0; j < n; j++)
        if (fbits(y[j]) != fbits(dmath_tanhf(x[j])))
            fail_msg("dmath_tanhf_n(%08x) = %08x, dmath_tanhf gives %08x", fbits(x[j]), fbits(y[j]),
                     fbits(dmath_tanhf(x[j])));
}

static void test_tanhf_array(void **state)
{
    (void)state;
    static const uint32_t edge[] = {
        0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x39800000,
        0x397fffff, 0x39800001, 0xb9800000, 0xb97fffff, 0x41b00000, 0x41afffff, 0x41b00001,
        0xc1b00000, 0xc1b00001, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000,
        0xffc00000, 0x7f800001, 0xff800001, 0x7fc12345, 0xffa54321, 0x3f800000, 0xbf800000,
        0x3e000000, 0x42300000, 0x4b000000, 0x3f317218, 0x3eb17218, 0x40000000,
    };
    const size_t ne = sizeof edge / sizeof edge[0];
    float x[64];
    for (int simd = 0; simd <= 1; simd++) {
        const int was = dmath_set_simd(simd);
        for (size_t j = 0; j < ne; j++)
            memcpy(&x[j], &edge[j], sizeof x[j]);
        tanhf_n_check(x, ne);
        for (size_t n = 0; n <= 9; n++)
            tanhf_n_check(x + 3, n);
        uint64_t u = 0;
        while (u < (1ULL << 32)) {
            size_t n = 0;
            for (; n < 64 && u < (1ULL << 32); n++, u += 61) {
                const uint32_t b = (uint32_t)u;
                memcpy(&x[n], &b, sizeof x[n]);
            }
            tanhf_n_check(x, n);
        }
        dmath_set_simd(was);
    }
}

/* dmath_exp_n against dmath_exp, bit for bit: 10^7 random bit patterns
 * (half of them spread over [-800, 800], the rest any double), 2·10^6 in
 * [-708, 709] with its ends, the branch and scaling edges, NaNs, and every
 * length up to 9, on both settings. */
static void exp_n_check(const double *x, size_t n)
{
    double y[64];
    assert_true(n <= 64);
    dmath_exp_n(y, x, n);
    for (size_t j = 0; j < n; j++)
        if (dbits(y[j]) != dbits(dmath_exp(x[j])))
            fail_msg("dmath_exp_n(%a) = %a, dmath_exp gives %a", x[j], y[j], dmath_exp(x[j]));
}

static void test_exp_array(void **state)
{
    (void)state;
    const double edge[] = {
        0.0, -0.0, 709.8, 709.79, nextafter(709.8, 1000.0), -745.2, nextafter(-745.2, -1000.0),
        nextafter(-745.2, 0.0), 709.78, 709.7, -708.4, -708.39, -709.0, -730.0, -744.4, -0x1p-1074,
        0x1p-1074, 1e-300, -1e-300, 0.5 * 0x1.62e42fefa39efp-1, -0.5 * 0x1.62e42fefa39efp-1,
        INFINITY, -INFINITY, NAN, -NAN, 1.0, -1.0, 88.7, -103.9, 1e308, -1e308, -5.0, -20.0,
    };
    const size_t ne = sizeof edge / sizeof edge[0];
    double x[64];
    for (int simd = 0; simd <= 1; simd++) {
        const int was = dmath_set_simd(simd);
        exp_n_check(edge, ne);
        for (size_t n = 0; n <= 9; n++)
            exp_n_check(edge + 5, n);
        uint64_t r = 0x9e3779b97f4a7c15ULL;
        for (size_t done = 0; done < 10000000; done += 64) {
            for (size_t j = 0; j < 64; j++) {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                if (j % 2 == 0) {
                    memcpy(&x[j], &r, sizeof x[j]);
                } else {
                    x[j] = ((double)(r >> 11) * 0x1p-53 - 0.5) * 1600.0;
                }
            }
            exp_n_check(x, 64);
        }
        /* Groups whose every lane is in [-708, 709] take the vector path's
         * shortcut (dmath.c, expg_plain_avx2): such groups, the range's
         * ends and their neighbours among them, and one lane just outside. */
        const double ends[] = { -708.0, 709.0, nextafter(-708.0, 0.0), nextafter(709.0, 0.0),
                                nextafter(-708.0, -1000.0), nextafter(709.0, 1000.0), -0.0, 0.0 };
        for (size_t done = 0; done < 2000000; done += 64) {
            for (size_t j = 0; j < 64; j++) {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                x[j] = (double)(r >> 11) * 0x1p-53 * 1417.0 - 708.0;
                if (j % 16 == 0 && (r & 7) < 3)
                    x[j] = ends[(r >> 3) % 8];
                if (j % 8 == 3 && (r & 0xf0) == 0)
                    x[j] = x[j] < 0.0 ? x[j] - 0.5 : -x[j];   /* a softmax-like argument */
            }
            exp_n_check(x, 64);
        }
        dmath_set_simd(was);
    }
}

static void test_exp_special(void **state)
{
    (void)state;
    assert_dbits(dmath_exp(0.0), 1.0);
    assert_dbits(dmath_exp(-0.0), 1.0);
    assert_dbits(dmath_exp(INFINITY), INFINITY);
    assert_dbits(dmath_exp(-INFINITY), 0.0);
    assert_true(isnan(dmath_exp(NAN)));
    assert_dbits(dmath_exp(1e-300), 1.0);
    assert_dbits(dmath_exp(-1e-300), 1.0);
    /* Overflow: 0x1.62e42fefa39efp+9 is the largest double whose e^x is
     * finite (e^x = 1.7976931348622732e308); the next one overflows. */
    assert_true(isfinite(dmath_exp(0x1.62e42fefa39efp+9)));
    assert_true(ulp_err(dmath_exp(0x1.62e42fefa39efp+9), expl(0x1.62e42fefa39efp+9L)) <= 1.0);
    assert_dbits(dmath_exp(0x1.62e42fefa39f0p+9), INFINITY);
    assert_dbits(dmath_exp(710.0), INFINITY);
    assert_dbits(dmath_exp(DBL_MAX), INFINITY);
    /* Underflow: e^x = 2^-1075 (half the smallest subnormal) at
     * x = -1075 ln 2 = -745.13321910194120762...; the double just above
     * rounds up to 2^-1074, the one just below to 0 (checked with Python's
     * decimal module). */
    assert_dbits(dmath_exp(-0x1.74910d52d3051p+9), 0x1p-1074);
    assert_dbits(dmath_exp(-0x1.74910d52d3052p+9), 0.0);
    assert_dbits(dmath_exp(-746.0), 0.0);
    assert_dbits(dmath_exp(-DBL_MAX), 0.0);
    /* Just below DBL_MIN: subnormal, accurate. */
    double x = -708.5;
    assert_true(dmath_exp(x) < DBL_MIN && dmath_exp(x) > 0.0);
    assert_true(ulp_err(dmath_exp(x), expl((long double)x)) <= 1.0);
}

static void test_log_special(void **state)
{
    (void)state;
    assert_dbits(dmath_log(1.0), 0.0);
    assert_dbits(dmath_log(0.0), -INFINITY);
    assert_dbits(dmath_log(-0.0), -INFINITY);
    assert_dbits(dmath_log(INFINITY), INFINITY);
    assert_true(isnan(dmath_log(-1.0)));
    assert_true(isnan(dmath_log(-DBL_TRUE_MIN)));
    assert_true(isnan(dmath_log(-INFINITY)));
    assert_true(isnan(dmath_log(NAN)));
    /* ln 2 correctly rounded is 0x1.62e42fefa39efp-1 (C's M_LN2). */
    assert_dbits(dmath_log(2.0), 0x1.62e42fefa39efp-1);
    assert_dbits(dmath_log(0.5), -0x1.62e42fefa39efp-1);
    assert_true(ulp_err(dmath_log(DBL_TRUE_MIN), logl((long double)DBL_TRUE_MIN)) <= 1.0);
    assert_true(ulp_err(dmath_log(DBL_MIN), logl((long double)DBL_MIN)) <= 1.0);
    assert_true(ulp_err(dmath_log(DBL_MAX), logl((long double)DBL_MAX)) <= 1.0);
}

static void test_float_special(void **state)
{
    (void)state;
    assert_fbits(dmath_expf(0.0f), 1.0f);
    assert_fbits(dmath_expf(-0.0f), 1.0f);
    assert_fbits(dmath_expf(INFINITY), INFINITY);
    assert_fbits(dmath_expf(-INFINITY), 0.0f);
    assert_true(isnan(dmath_expf(NAN)));
    assert_fbits(dmath_expf(88.8f), INFINITY); /* beyond FLT_MAX */
    assert_true(isfinite(dmath_expf(88.72f)));
    assert_true(dmath_expf(-100.0f) > 0.0f && dmath_expf(-100.0f) < FLT_MIN);
    assert_fbits(dmath_expf(-110.0f), 0.0f);

    assert_fbits(dmath_logf(1.0f), 0.0f);
    assert_fbits(dmath_logf(0.0f), -INFINITY);
    assert_fbits(dmath_logf(-0.0f), -INFINITY);
    assert_fbits(dmath_logf(INFINITY), INFINITY);
    assert_true(isnan(dmath_logf(-1.0f)));
    assert_true(isnan(dmath_logf(NAN)));
    assert_true(float_ulps(dmath_logf(FLT_TRUE_MIN), ref_logf(FLT_TRUE_MIN)) <= 1);

    assert_fbits(dmath_sigmoidf(0.0f), 0.5f);
    assert_fbits(dmath_sigmoidf(-0.0f), 0.5f);
    assert_fbits(dmath_sigmoidf(INFINITY), 1.0f);
    assert_fbits(dmath_sigmoidf(-INFINITY), 0.0f);
    assert_true(isnan(dmath_sigmoidf(NAN)));
    assert_fbits(dmath_sigmoidf(FLT_MAX), 1.0f);
    assert_fbits(dmath_sigmoidf(-FLT_MAX), 0.0f);
    assert_true(dmath_sigmoidf(-100.0f) > 0.0f); /* e^-100: a subnormal float, not 0 */

    assert_fbits(dmath_tanhf(0.0f), 0.0f);
    assert_fbits(dmath_tanhf(-0.0f), -0.0f);
    assert_fbits(dmath_tanhf(INFINITY), 1.0f);
    assert_fbits(dmath_tanhf(-INFINITY), -1.0f);
    assert_true(isnan(dmath_tanhf(NAN)));
    assert_fbits(dmath_tanhf(FLT_TRUE_MIN), FLT_TRUE_MIN);
    assert_fbits(dmath_tanhf(-1e-30f), -1e-30f);
    assert_fbits(dmath_tanhf(30.0f), 1.0f);
    /* tanh is odd bit for bit (the sign is applied last). */
    sweep_state = 0x3c6ef372fe94f82bULL;
    for (int i = 0; i < 10000; i++) {
        float x = (float)next_in(0.0, 12.0);
        assert_fbits(dmath_tanhf(-x), -dmath_tanhf(x));
    }
}

static void test_trig_special(void **state)
{
    (void)state;
    assert_dbits(dmath_cos(0.0), 1.0);
    assert_dbits(dmath_cos(-0.0), 1.0);
    assert_dbits(dmath_sin(0.0), 0.0);
    assert_dbits(dmath_sin(-0.0), -0.0);
    assert_dbits(dmath_sin(1e-300), 1e-300);
    assert_dbits(dmath_sin(-DBL_TRUE_MIN), -DBL_TRUE_MIN);
    assert_dbits(dmath_cos(1e-300), 1.0);
    assert_true(isnan(dmath_sin(NAN)));
    assert_true(isnan(dmath_cos(NAN)));
    assert_true(isnan(dmath_sin(INFINITY)));
    assert_true(isnan(dmath_cos(-INFINITY)));
    /* Outside the reduction's range (|x| > 2^19) the answer is NaN, not a
     * silently wrong number. */
    assert_true(isnan(dmath_cos(1e300)));
    assert_true(isnan(dmath_sin(-0x1.0000000000001p19)));
    assert_false(isnan(dmath_sin(0x1p19)));
    /* sin is odd and cos even, bit for bit: the reduction is symmetric. */
    sweep_state = 0xa54ff53a5f1d36f1ULL;
    for (int i = 0; i < 10000; i++) {
        double x = next_in(0.0, 10.0);
        assert_dbits(dmath_sin(-x), -dmath_sin(x));
        assert_dbits(dmath_cos(-x), dmath_cos(x));
    }
}

/* ---- frozen bits ---------------------------------------------------- */

/* Known answers. These freeze OUR outputs (the contract is that they never
 * change); they are not correctly rounded values from elsewhere. They were
 * printed by this implementation built with gcc -O0, gcc -O3, clang -O0 and
 * clang -O3 (identical), and each was checked with Python 3.11's math module
 * (math.exp/log/sin/cos/tanh; for the float functions the double result
 * packed with struct 'f', sigmoid as 1/(1+exp(-x)) or exp(x)/(1+exp(x))):
 * 127 of the 128 agree exactly; the other, exp(-0x1.6273333333333p+9), a
 * subnormal result, is 1 ulp below Python's (the exact value is 0.547 ulp
 * from ours by Python's decimal module). */
struct kat_d {
    double x;
    uint64_t bits;
};

struct kat_f {
    float x;
    uint32_t bits;
};

static const struct kat_d KAT_EXP[] = {
    {0x1p-1, 0x3ffa61298e1e069cULL},
    {-0x1p-1, 0x3fe368b2fc6f960aULL},
    {0x1p+0, 0x4005bf0a8b145769ULL},
    {-0x1p+0, 0x3fd78b56362cef38ULL},
    {0x1.999999999999ap-4, 0x3ff1aec7b35a00d4ULL},
    {0x1.4p+3, 0x40d5829dcf950560ULL},
    {-0x1.4p+3, 0x3f07cd79b5647c9bULL},
    {0x1.91p+6, 0x48f8c39b9134bac4ULL},
    {-0x1.91p+6, 0x36e4acd31e167ebbULL},
    {0x1.5e4p+9, 0x7f18625c7d4f56c2ULL},
    {0x1.62d999999999ap+9, 0x7fed75ae7a50ee14ULL},
    {-0x1.5e4p+9, 0x00c4ff475c68ca02ULL},
    {-0x1.6273333333333p+9, 0x0009ab77c6e3d8a4ULL},
    {-0x1.72p+9, 0x0000000000000055ULL},
    {0x1.b7cdfd9d7bdbbp-34, 0x3ff000000006df38ULL},
    {0x1.2ep+5, 0x43560902930f5fedULL},
};

static const struct kat_d KAT_LOG[] = {
    {0x1p+1, 0x3fe62e42fefa39efULL},
    {0x1p-1, 0xbfe62e42fefa39efULL},
    {0x1.4p+3, 0x40026bb1bbb55516ULL},
    {0x1.999999999999ap-4, 0xc0026bb1bbb55515ULL},
    {0x1.8p+0, 0x3fd9f323ecbf984cULL},
    {0x1.8p-1, 0xbfd269621134db92ULL},
    {0x1.00000004p+0, 0x3e0fffffffc00000ULL},
    {0x1.fffffff8p-1, 0xbe10000000200000ULL},
    {0x1.56e1fc2f8f359p-997, 0xc085963447f87fb5ULL},
    {0x1.7e43c8800759cp+996, 0x4085963447f87fb5ULL},
    {0x0.0000000000001p-1022, 0xc0874385446d71c3ULL},
    {0x1p-1022, 0xc086232bdd7abcd2ULL},
    {0x1.fffffffffffffp+1023, 0x40862e42fefa39efULL},
    {0x1.921f9f01b866ep+1, 0x3ff250cf662abf9aULL},
    {0x1.6a09e65dc27dfp-1, 0xbfd62e4300c77ae8ULL},
    {0x1.6a09e65dc27dfp+0, 0x3fd62e42fd2cf8f6ULL},
};

static const struct kat_f KAT_EXPF[] = {
    {0x1p-1f, 0x3fd3094cU},
    {-0x1p-1f, 0x3f1b4598U},
    {0x1p+0f, 0x402df854U},
    {-0x1p+0f, 0x3ebc5ab2U},
    {0x1.99999ap-4f, 0x3f8d763eU},
    {0x1.4p+3f, 0x46ac14eeU},
    {-0x1.4p+3f, 0x383e6bceU},
    {0x1.94p+5f, 0x63e7b299U},
    {-0x1.94p+5f, 0x1b0d6cfaU},
    {0x1.62p+6f, 0x7f4cdcc4U},
    {-0x1.5ep+6f, 0x006cb2bcU},
    {-0x1.9p+6f, 0x0000001bU},
    {0x1.4f8b58p-17f, 0x3f800054U},
    {0x1.ep+1f, 0x422a1597U},
    {-0x1.ep+1f, 0x3cc0a84aU},
    {0x1.4p+4f, 0x4de75844U},
};

static const struct kat_f KAT_LOGF[] = {
    {0x1p+1f, 0x3f317218U},
    {0x1p-1f, 0xbf317218U},
    {0x1.4p+3f, 0x40135d8eU},
    {0x1.99999ap-4f, 0xc0135d8eU},
    {0x1.8p+0f, 0x3ecf991fU},
    {0x1.8p-1f, 0xbe934b11U},
    {0x1.00001p+0f, 0x357ffff8U},
    {0x1.ffffep-1f, 0xb5800004U},
    {0x1.4484cp-100f, 0xc28a27b5U},
    {0x1.93e594p+99f, 0x428a27b5U},
    {0x1p-149f, 0xc2ce8ed0U},
    {0x1.fffffep+127f, 0x42b17218U},
    {0x1.921fap+1f, 0x3f92867cU},
    {0x1.6a0902p-1f, 0xbeb1735bU},
    {0x1.6a0902p+0f, 0x3eb170d5U},
    {0x1.edd2f2p+6f, 0x409a1bbaU},
};

static const struct kat_f KAT_SIGMOIDF[] = {
    {0x0p+0f, 0x3f000000U},
    {0x1p-1f, 0x3f1f597fU},
    {-0x1p-1f, 0x3ec14d03U},
    {0x1p+0f, 0x3f3b26a8U},
    {-0x1p+0f, 0x3e89b2b1U},
    {0x1p+1f, 0x3f617bebU},
    {-0x1p+1f, 0x3df420a9U},
    {0x1.4p+2f, 0x3f7e4961U},
    {-0x1.4p+2f, 0x3bdb4fb4U},
    {0x1.4p+3f, 0x3f7ffd06U},
    {-0x1.4p+3f, 0x383e6997U},
    {0x1.4p+4f, 0x3f800000U},
    {-0x1.4p+4f, 0x310da433U},
    {0x1.9p+5f, 0x3f800000U},
    {-0x1.9p+5f, 0x1b692bebU},
    {-0x1.9p+6f, 0x0000001bU},
};

static const struct kat_f KAT_TANHF[] = {
    {0x1p-1f, 0x3eec9a9fU},
    {-0x1p-1f, 0xbeec9a9fU},
    {0x1p+0f, 0x3f42f7d6U},
    {-0x1p+0f, 0xbf42f7d6U},
    {0x1.99999ap-4f, 0x3dcc1ebcU},
    {-0x1.99999ap-4f, 0xbdcc1ebcU},
    {0x1.0624dep-10f, 0x3a83126cU},
    {0x1.3a92a4p-12f, 0x399d4952U},
    {0x1.a36e2ep-13f, 0x3951b717U},
    {0x1.0c6f7ap-20f, 0x358637bdU},
    {0x1p+1f, 0x3f76ca83U},
    {-0x1p+1f, 0xbf76ca83U},
    {0x1.4p+2f, 0x3f7ffa0dU},
    {0x1.2p+3f, 0x3f7fffffU},
    {0x1.8p-1f, 0x3f22991fU},
    {0x1.8p+1f, 0x3f7ebbe9U},
};

static const struct kat_d KAT_COS[] = {
    {0x1.999999999999ap-4, 0x3fefd712f9a817c1ULL},
    {0x1p-1, 0x3fec1528065b7d50ULL},
    {0x1p+0, 0x3fe14a280fb5068cULL},
    {0x1.8p+0, 0x3fb21bd54fc5f9a7ULL},
    {0x1.921fb54442d18p+0, 0x3c91a62633145c07ULL},
    {0x1p+1, 0xbfdaa22657537205ULL},
    {0x1.8p+1, 0xbfefae04be85e5d2ULL},
    {0x1.921fb54442d18p+1, 0xbff0000000000000ULL},
    {0x1p+2, 0xbfe4eaa606db24c1ULL},
    {0x1.2d97c7f3321d2p+2, 0xbcaa79394c9e8a0aULL},
    {0x1.4p+2, 0x3fd22785706b4ad9ULL},
    {0x1.6p+2, 0x3fe6ad6c3c07d448ULL},
    {0x1.8p+2, 0x3feeb9b7097822f5ULL},
    {0x1.921fb54442d18p+2, 0x3ff0000000000000ULL},
    {-0x1p+0, 0x3fe14a280fb5068cULL},
    {-0x1.ep+2, 0x3fd62f45e66f5c2fULL},
};

static const struct kat_d KAT_SIN[] = {
    {0x1.999999999999ap-4, 0x3fb98eaecb8bcb2cULL},
    {0x1p-1, 0x3fdeaee8744b05f0ULL},
    {0x1p+0, 0x3feaed548f090ceeULL},
    {0x1.8p+0, 0x3fefeb7a9b2c6d8bULL},
    {0x1.921fb54442d18p+0, 0x3ff0000000000000ULL},
    {0x1p+1, 0x3fed18f6ead1b446ULL},
    {0x1.8p+1, 0x3fc210386db6d55bULL},
    {0x1.921fb54442d18p+1, 0x3ca1a62633145c07ULL},
    {0x1p+2, 0xbfe837b9dddc1eaeULL},
    {0x1.2d97c7f3321d2p+2, 0xbff0000000000000ULL},
    {0x1.4p+2, 0xbfeeaf81f5e09933ULL},
    {0x1.6p+2, 0xbfe693c94e0ab057ULL},
    {0x1.8p+2, 0xbfd1e1f18ab0a2c0ULL},
    {0x1.921fb54442d18p+2, 0xbcb1a62633145c07ULL},
    {-0x1p+0, 0xbfeaed548f090ceeULL},
    {-0x1.ep+2, 0xbfee041886fcae30ULL},
};

#define KAT_N(t) (sizeof(t) / sizeof((t)[0]))

static void kat_check_d(const char *name, double (*fn)(double), const struct kat_d *t, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t got = dbits(fn(t[i].x));
        if (got != t[i].bits) {
            printf("%s(%a): got %016llx, want %016llx\n", name, t[i].x, (unsigned long long)got,
                   (unsigned long long)t[i].bits);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

static void kat_check_f(const char *name, float (*fn)(float), const struct kat_f *t, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t got = fbits(fn(t[i].x));
        if (got != t[i].bits) {
            printf("%s(%a): got %08x, want %08x\n", name, (double)t[i].x, got, t[i].bits);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

static void test_known_answers(void **state)
{
    (void)state;
    kat_check_d("dmath_exp", dmath_exp, KAT_EXP, KAT_N(KAT_EXP));
    kat_check_d("dmath_log", dmath_log, KAT_LOG, KAT_N(KAT_LOG));
    kat_check_d("dmath_cos", dmath_cos, KAT_COS, KAT_N(KAT_COS));
    kat_check_d("dmath_sin", dmath_sin, KAT_SIN, KAT_N(KAT_SIN));
    kat_check_f("dmath_expf", dmath_expf, KAT_EXPF, KAT_N(KAT_EXPF));
    kat_check_f("dmath_logf", dmath_logf, KAT_LOGF, KAT_N(KAT_LOGF));
    kat_check_f("dmath_sigmoidf", dmath_sigmoidf, KAT_SIGMOIDF, KAT_N(KAT_SIGMOIDF));
    kat_check_f("dmath_tanhf", dmath_tanhf, KAT_TANHF, KAT_N(KAT_TANHF));
}

/* FNV-1a over the little-endian bytes of each output. */
static uint64_t fnv_add(uint64_t h, uint64_t v, int nbytes)
{
    for (int k = 0; k < nbytes; k++) {
        h ^= (v >> (8 * k)) & 0xffu;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* 65536 outputs per function on fixed grids, hashed. Like the table above
 * these freeze our outputs, over many more inputs, so that a compiler or
 * flag that changes any bit anywhere on the grids fails here. Obtained the
 * same way: the outputs were dumped by gcc -O0/-O3, clang -O0/-O3 and both
 * with -march=native (all identical); a Python 3.11 script recomputed the
 * grids, checked every output against the math module (at most 1 ulp for
 * the double functions, exact for the float ones) and computed these
 * hashes. The grids (i = 0..65535), mirrored in that script:
 *   exp:   x = -745.0 + i / 45.0           (past both ends of the range)
 *   log:   bits(x) = i * 0x00007ff00000000b + 1   (subnormal to 2^1023)
 *   cos, sin: x = -8.0 + i / 4095.0
 *   float: bits(x) = (i >> 1) * 0xfeff + 1, sign bit = i & 1 */
static void test_frozen_grids(void **state)
{
    (void)state;
    static const uint64_t want[8] = {
        0xd89a688249b6c4f4ULL, 0xe08e157ac0e7cbcaULL, 0xbb18cf4f36295463ULL,
        0xde51ef022888178aULL, 0x8ef0e18f90ebdf0dULL, 0xd54a48c9846a0867ULL,
        0xb514a4aaaab69debULL, 0x88105285bb09a5a5ULL,
    };
    static const char *const names[8] = {
        "dmath_exp", "dmath_log", "dmath_cos", "dmath_sin",
        "dmath_expf", "dmath_logf", "dmath_sigmoidf", "dmath_tanhf",
    };
    uint64_t h[8];
    for (int j = 0; j < 8; j++)
        h[j] = 0xcbf29ce484222325ULL;
    for (uint32_t i = 0; i < 65536; i++) {
        double xe = -745.0 + (double)i / 45.0;
        double xl = dfrom((uint64_t)i * 0x00007ff00000000bULL + 1);
        double xt = -8.0 + (double)i / 4095.0;
        float xf = ffrom((i >> 1) * 0xfeffu + 1u + ((i & 1u) << 31));
        h[0] = fnv_add(h[0], dbits(dmath_exp(xe)), 8);
        h[1] = fnv_add(h[1], dbits(dmath_log(xl)), 8);
        h[2] = fnv_add(h[2], dbits(dmath_cos(xt)), 8);
        h[3] = fnv_add(h[3], dbits(dmath_sin(xt)), 8);
        h[4] = fnv_add(h[4], fbits(dmath_expf(xf)), 4);
        h[5] = fnv_add(h[5], fbits(dmath_logf(xf)), 4);
        h[6] = fnv_add(h[6], fbits(dmath_sigmoidf(xf)), 4);
        h[7] = fnv_add(h[7], fbits(dmath_tanhf(xf)), 4);
    }
    int bad = 0;
    for (int j = 0; j < 8; j++) {
        if (h[j] != want[j]) {
            printf("%s: grid hash %016llx, want %016llx\n", names[j], (unsigned long long)h[j],
                   (unsigned long long)want[j]);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

/* ---- floating-point environment ------------------------------------- */

static void test_fpenv_ok(void **state)
{
    (void)state;
    ls_err err = {{0}};
    assert_int_equal(dmath_check_fpenv(&err), LS_OK);
    assert_int_equal(err.msg[0], 0);
    assert_int_equal(dmath_check_fpenv(NULL), LS_OK);
}

static void test_fpenv_rounding(void **state)
{
    (void)state;
    ls_err err = {{0}};
    assert_int_equal(fesetround(FE_UPWARD), 0);
    ls_status st = dmath_check_fpenv(&err);
    fesetround(FE_TONEAREST); /* restore before any assertion can jump out */
    assert_int_equal(st, LS_EFPENV);
    printf("  FE_UPWARD: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "rounding mode is upward"));

    assert_int_equal(fesetround(FE_TOWARDZERO), 0);
    st = dmath_check_fpenv(NULL);
    fesetround(FE_TONEAREST);
    assert_int_equal(st, LS_EFPENV);
    assert_int_equal(dmath_check_fpenv(NULL), LS_OK);
}

#ifdef HAVE_MXCSR
/* Sets MXCSR to csr | bits, runs the check, restores, then returns. */
static ls_status check_with_mxcsr(unsigned bits, ls_err *err)
{
    unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | bits);
    ls_status st = dmath_check_fpenv(err);
    _mm_setcsr(saved);
    return st;
}

static void test_fpenv_mxcsr(void **state)
{
    (void)state;
    ls_err err = {{0}};
    assert_int_equal(check_with_mxcsr(0x8000u, &err), LS_EFPENV); /* FTZ */
    printf("  FTZ: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "flush-to-zero is on (MXCSR=0x"));
    assert_non_null(strstr(err.msg, "lockstep needs IEEE denormals"));

    memset(&err, 0, sizeof err);
    assert_int_equal(check_with_mxcsr(0x0040u, &err), LS_EFPENV); /* DAZ */
    printf("  DAZ: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "denormals-are-zero is on"));

    memset(&err, 0, sizeof err);
    assert_int_equal(check_with_mxcsr(0x2000u, &err), LS_EFPENV); /* SSE round down only */
    printf("  MXCSR.RC: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "not to-nearest"));

    /* Everything restored. */
    assert_int_equal(dmath_check_fpenv(NULL), LS_OK);
    assert_int_equal(_mm_getcsr() & 0xe040u, 0);
}
#endif

#ifdef HAVE_FPCR
static uint64_t get_fpcr(void)
{
    uint64_t v;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
    return v;
}

static void set_fpcr(uint64_t v)
{
    __asm__ __volatile__("msr fpcr, %0" : : "r"(v));
}

/* Sets FPCR to fpcr | bits, runs the check, restores, then returns: the
 * aarch64 twin of check_with_mxcsr (run under qemu by make check-cross). */
static ls_status check_with_fpcr(uint64_t bits, ls_err *err)
{
    uint64_t saved = get_fpcr();
    set_fpcr(saved | bits);
    ls_status st = dmath_check_fpenv(err);
    set_fpcr(saved);
    return st;
}

static void test_fpenv_fpcr(void **state)
{
    (void)state;
    ls_err err = {{0}};
    assert_int_equal(check_with_fpcr(1ull << 24, &err), LS_EFPENV); /* FZ */
    printf("  FZ: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "flush-to-zero is on (FPCR=0x"));
    assert_non_null(strstr(err.msg, "lockstep needs IEEE denormals"));

    memset(&err, 0, sizeof err);
    assert_int_equal(check_with_fpcr(1ull << 25, &err), LS_EFPENV); /* DN */
    printf("  DN: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "default-NaN is on (FPCR=0x"));

    /* Everything restored. */
    assert_int_equal(dmath_check_fpenv(NULL), LS_OK);
    assert_int_equal(get_fpcr() & (3ull << 24), 0);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exp_accuracy),
        cmocka_unit_test(test_log_accuracy),
        cmocka_unit_test(test_trig_accuracy),
        cmocka_unit_test(test_float_accuracy),
        cmocka_unit_test(test_exp_special),
        cmocka_unit_test(test_log_special),
        cmocka_unit_test(test_float_special),
        cmocka_unit_test(test_tanhf_array),
        cmocka_unit_test(test_exp_array),
        cmocka_unit_test(test_trig_special),
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_frozen_grids),
        cmocka_unit_test(test_fpenv_ok),
        cmocka_unit_test(test_fpenv_rounding),
#ifdef HAVE_MXCSR
        cmocka_unit_test(test_fpenv_mxcsr),
#endif
#ifdef HAVE_FPCR
        cmocka_unit_test(test_fpenv_fpcr),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
