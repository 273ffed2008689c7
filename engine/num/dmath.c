/* dmath.c — the engine's own exp, log, sigmoid, tanh, sin and cos.
 *
 * libm's results differ between versions and vendors in the last bit, and a
 * last-bit difference in one activation changes every later step of a run.
 * So everything here is built from + - * /, sqrt and exponent-bit
 * manipulation, each expression in a fixed order: with -ffp-contract=off and
 * SSE2/NEON binary64 arithmetic every compiler and optimisation level
 * computes the same bits. The polynomials are truncated Taylor series (their
 * coefficients are exact rationals rounded once, so anyone can recompute
 * them) of a degree that leaves the truncation error far below half an ulp;
 * the constants split into hi/lo parts were derived with Python's decimal
 * module. Measured accuracy (tests/test_dmath.c prints it): exp, log, sin
 * and cos below 0.8 ulp; the float functions are evaluated in double and
 * rounded once, and agreed with libm's double rounded to float on every one
 * of ~2 million sampled inputs each (at most 1 ulp by construction).
 * Frozen: changing a result bit changes every golden file. The array forms
 * (dmath_tanhf_n, dmath_exp_n) repeat the same operations in AVX2 lanes and
 * give the same bits.
 *
 * Also the check of the floating-point environment: round to nearest and no
 * flush-to-zero / denormals-are-zero, which these bits assume.
 */
#include "engine/num/dmath.h"

#include "base/simd.h"

#include <fenv.h>
#include <float.h>
#include <math.h> /* INFINITY, NAN, signbit, fabs, copysign, sqrt only: no libm transcendental here */
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#endif

/* x87 excess precision would round every operation twice. */
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "dmath needs FLT_EVAL_METHOD == 0 (SSE2 or another strict binary64 unit)"
#endif

static uint64_t to_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* 2^k for a normal exponent, -1022 <= k <= 1023. */
static double pow2i(int k)
{
    return from_bits((uint64_t)(k + 1023) << 52);
}

/* Round a double to float once, spelled out for values beyond FLT_MAX (C
 * leaves that conversion undefined outside Annex F): anything at or above
 * FLT_MAX + half an ulp rounds to infinity, exactly as IEEE 754 would. */
static float narrow(double d)
{
    if (d >= 0x1.ffffffp127)
        return INFINITY;
    if (d <= -0x1.ffffffp127)
        return -INFINITY;
    return (float)d;
}

/* ln 2 = LN2_HI + LN2_LO; LN2_HI keeps 32 significant bits, so k * LN2_HI is
 * exact for every |k| < 2^21 (exponents of doubles need 11 bits). */
static const double LN2_HI = 0x1.62e42feep-1;
static const double LN2_LO = 0x1.a39ef35793c76p-33;
static const double INV_LN2 = 0x1.71547652b82fep+0;
static const double SQRT2 = 0x1.6a09e667f3bcdp+0;

/* exp: x = k ln2 + r, |r| <= ln2/2 (+ rounding), e^x = 2^k e^r.
 * e^r - 1 - r = r^2 (1/2! + r (1/3! + ... + r/13!)); the first omitted term,
 * r^14/14!, is below 4e-18 for |r| <= 0.35, i.e. under 0.04 ulp. r is carried
 * as hi - lo so the rounding of the reduction is not added to the result. */
double dmath_exp(double x)
{
    if (x != x)
        return x + x; /* NaN in, quiet NaN out */
    if (x > 709.8)
        return INFINITY; /* e^709.8 > DBL_MAX */
    if (x < -745.2)
        return 0.0; /* below half the smallest subnormal */

    double t = x * INV_LN2;
    int k = (int)(t < 0.0 ? t - 0.5 : t + 0.5);
    double kd = (double)k;
    double hi = x - kd * LN2_HI; /* exact */
    double lo = kd * LN2_LO;
    double r = hi - lo;
    double p = 1.0 / 6227020800.0;         /* 1/13! */
    p = 1.0 / 479001600.0 + r * p;         /* 1/12! */
    p = 1.0 / 39916800.0 + r * p;          /* 1/11! */
    p = 1.0 / 3628800.0 + r * p;           /* 1/10! */
    p = 1.0 / 362880.0 + r * p;            /* 1/9! */
    p = 1.0 / 40320.0 + r * p;             /* 1/8! */
    p = 1.0 / 5040.0 + r * p;              /* 1/7! */
    p = 1.0 / 720.0 + r * p;               /* 1/6! */
    p = 1.0 / 120.0 + r * p;               /* 1/5! */
    p = 1.0 / 24.0 + r * p;                /* 1/4! */
    p = 1.0 / 6.0 + r * p;                 /* 1/3! */
    p = 0.5 + r * p;                       /* 1/2! */
    double q = (r * r) * p;                /* e^r - 1 - r */
    /* e^r = 1 + hi - lo + q, in [0.70, 1.42]. 1 + hi is split exactly into
     * s + err (Fast2Sum, |hi| < 1) so the small terms are added to its
     * rounding error and only the last addition rounds at the result's ulp. */
    double s = 1.0 + hi;
    double err = (1.0 - s) + hi;
    double y = s + (err + (q - lo));

    /* Scale by 2^k through the exponent bits. k = 1024 (x near the overflow
     * threshold) takes two steps so overflow happens in the multiply; below
     * -1021 the result may be subnormal, so scale exactly into the normal
     * range first and round only in the last multiply (y is already rounded,
     * so a subnormal result is rounded twice: still under 0.8 ulp). */
    if (k >= -1021) {
        if (k <= 1023)
            return y * pow2i(k);
        return (y * 2.0) * pow2i(k - 1);
    }
    return (y * pow2i(k + 60)) * pow2i(-60);
}

/* log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
 * s = f / (2 + f), log m = 2 atanh s = f - hfsq + s (hfsq + R) with
 * hfsq = f^2/2 and R = sum_{j>=1} 2/(2j+1) s^(2j). |s| <= 0.1716, so ten
 * terms leave a truncation error near 6e-19 (relative). The split of ln 2
 * keeps e * LN2_HI exact; the small terms are summed before the large ones. */
double dmath_log(double x)
{
    if (x != x)
        return x + x;
    if (x < 0.0)
        return NAN;
    if (x == 0.0)
        return -INFINITY;
    if (x == INFINITY)
        return x;

    int e = 0;
    if (x < DBL_MIN) { /* subnormal: scale into the normal range, exactly */
        x *= 0x1p54;
        e = -54;
    }
    uint64_t u = to_bits(x);
    e += (int)(u >> 52) - 1023;
    double m = from_bits((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
    if (m > SQRT2) {
        m *= 0.5;
        e += 1;
    }
    double f = m - 1.0; /* exact (Sterbenz) */
    double s = f / (2.0 + f);
    double z = s * s;
    double R = 2.0 / 21.0 + z * (2.0 / 23.0);
    R = 2.0 / 19.0 + z * R;
    R = 2.0 / 17.0 + z * R;
    R = 2.0 / 15.0 + z * R;
    R = 2.0 / 13.0 + z * R;
    R = 2.0 / 11.0 + z * R;
    R = 2.0 / 9.0 + z * R;
    R = 2.0 / 7.0 + z * R;
    R = 2.0 / 5.0 + z * R;
    R = 2.0 / 3.0 + z * R;
    R = z * R;
    double hfsq = 0.5 * (f * f);
    double dk = (double)e;
    return dk * LN2_HI - ((hfsq - (s * (hfsq + R) + dk * LN2_LO)) - f);
}

float dmath_expf(float x)
{
    return narrow(dmath_exp((double)x));
}

float dmath_logf(float x)
{
    return narrow(dmath_log((double)x));
}

/* The branch keeps exp's argument <= 0, so nothing overflows and the large
 * |x| tails (1 - tiny, tiny) are computed without cancellation. */
float dmath_sigmoidf(float x)
{
    double xd = (double)x;
    if (xd >= 0.0)
        return narrow(1.0 / (1.0 + dmath_exp(-xd)));
    double e = dmath_exp(xd); /* also the NaN path: NaN >= 0 is false */
    return narrow(e / (1.0 + e));
}

/* tanh |x| = (e^{2|x|} - 1) / (e^{2|x|} + 1). The subtraction cancels for
 * small |x|: with e^{2|x|} within ~1 ulp of double the relative error is
 * ~1e-16 / |x|, harmless for a float result once |x| >= 2^-12; below that
 * x - x^3/3 is exact to far below a float ulp (next term 2x^5/15). Beyond
 * |x| = 22, tanh rounds to 1 in float (and in double). The sign is restored
 * at the end so tanh(-0) = -0 and the function is exactly odd. */
float dmath_tanhf(float x)
{
    double xd = (double)x;
    double ax = signbit(xd) ? -xd : xd;
    double t;
    if (ax > 22.0) {
        t = 1.0;
    } else if (ax < 0x1p-12) {
        t = ax - ax * (ax * ax) * (1.0 / 3.0);
    } else {
        double e = dmath_exp(2.0 * ax); /* NaN stays NaN */
        t = (e - 1.0) / (e + 1.0);
    }
    return narrow(signbit(xd) ? -t : t);
}

/* dmath_tanhf over an array: on x86 with AVX2 four lanes at a time, each
 * lane performing dmath_tanhf's IEEE operations in its order (exp's
 * reduction and polynomial inlined: its argument 2|x| is in [2^-11, 44], so
 * k is in [0, 64] and only the plain scaling y 2^k is reached). Every path is
 * computed and the result is chosen per lane, a choice that copies bits, so
 * each element equals dmath_tanhf's bit for bit (tests/test_dmath.c compares
 * them). No FMA: every product and sum is rounded on its own. The switch
 * follows LOCKSTEP_SIMD like the other kernels'. */
static simd_switch array_choice = SIMD_SWITCH_INIT;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DMATH_AVX2 1
#define V4(c) _mm256_set1_pd(c)
/* 2^k from the bits of int32 lanes k (normal exponents; other lanes give
 * meaningless bits that the callers discard). */
static inline __attribute__((target("avx2"), always_inline)) __m256d pow2_avx2(__m128i k)
{
    const __m256i b = _mm256_add_epi64(_mm256_cvtepi32_epi64(k), _mm256_set1_epi64x(1023));
    return _mm256_castsi256_pd(_mm256_slli_epi64(b, 52));
}

/* dmath_exp's body for lanes whose k is chosen (kd = k as a double): the
 * reduction xe - k ln 2 in two parts, the polynomial and the compensated
 * sum, statement for statement; returns ey, e^xe = ey 2^k. Shared by
 * tanhf_avx2 and exp_avx2. */
static inline __attribute__((target("avx2"), always_inline)) __m256d exp_reduced_avx2(__m256d xe, __m256d kd)
{
    const __m256d hi = _mm256_sub_pd(xe, _mm256_mul_pd(kd, V4(LN2_HI)));
    const __m256d lo = _mm256_mul_pd(kd, V4(LN2_LO));
    const __m256d r = _mm256_sub_pd(hi, lo);
    __m256d p = V4(1.0 / 6227020800.0);
    p = _mm256_add_pd(V4(1.0 / 479001600.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(1.0 / 39916800.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(1.0 / 3628800.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(1.0 / 362880.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(1.0 / 40320.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(1.0 / 5040.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(1.0 / 720.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(1.0 / 120.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(1.0 / 24.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(1.0 / 6.0), _mm256_mul_pd(r, p));
    p = _mm256_add_pd(V4(0.5), _mm256_mul_pd(r, p));
    const __m256d q = _mm256_mul_pd(_mm256_mul_pd(r, r), p);
    const __m256d s = _mm256_add_pd(V4(1.0), hi);
    const __m256d err = _mm256_add_pd(_mm256_sub_pd(V4(1.0), s), hi);
    return _mm256_add_pd(s, _mm256_add_pd(err, _mm256_sub_pd(q, lo)));
}

/* Four lanes of dmath_tanhf. */
static inline __attribute__((target("avx2"), always_inline)) __m128 tanhf4_avx2(__m128 x4)
{
    const __m256d sign = V4(-0.0);
    {
        const __m256d xd = _mm256_cvtps_pd(x4); /* exact */
        const __m256d ax = _mm256_andnot_pd(sign, xd);           /* -xd's bits when negative */
        const __m256d nan = _mm256_cmp_pd(ax, ax, _CMP_UNORD_Q);
        const __m256d big = _mm256_cmp_pd(ax, V4(22.0), _CMP_GT_OQ);
        const __m256d small = _mm256_cmp_pd(ax, V4(0x1p-12), _CMP_LT_OQ);
        const __m256d ac = _mm256_blendv_pd(ax, V4(1.0), _mm256_or_pd(nan, _mm256_or_pd(big, small)));
        /* dmath_exp(2 ac): t > 0, so k = (int)(t + 0.5) */
        const __m256d xe = _mm256_mul_pd(V4(2.0), ac);
        const __m256d t = _mm256_mul_pd(xe, V4(INV_LN2));
        const __m128i k = _mm256_cvttpd_epi32(_mm256_add_pd(t, V4(0.5)));
        const __m256d kd = _mm256_cvtepi32_pd(k);
        const __m256d ey = exp_reduced_avx2(xe, kd);
        const __m256d e = _mm256_mul_pd(ey, pow2_avx2(k));
        const __m256d mid = _mm256_div_pd(_mm256_sub_pd(e, V4(1.0)), _mm256_add_pd(e, V4(1.0)));
        if (_mm256_movemask_pd(_mm256_or_pd(nan, _mm256_or_pd(big, small))) == 0)   /* the usual case */
            return _mm256_cvtpd_ps(_mm256_or_pd(mid, _mm256_and_pd(xd, sign)));
        /* ax - ax * (ax * ax) * (1.0 / 3.0) */
        const __m256d lin =
            _mm256_sub_pd(ax, _mm256_mul_pd(_mm256_mul_pd(ax, _mm256_mul_pd(ax, ax)), V4(1.0 / 3.0)));
        /* NaN: dmath_exp returns (2 ax) + (2 ax) and the quotient keeps it,
         * the quiet ax: what ax + ax is too. */
        __m256d th = _mm256_blendv_pd(mid, _mm256_add_pd(ax, ax), nan);
        th = _mm256_blendv_pd(th, lin, small);
        th = _mm256_blendv_pd(th, V4(1.0), big);
        /* th has a clear sign bit (NaN too): -th is th with xd's sign; the
         * result lies in [-1, 1] or is NaN, so narrow is the plain rounding */
        th = _mm256_or_pd(th, _mm256_and_pd(xd, sign));
        return _mm256_cvtpd_ps(th);
    }
}

/* Two groups of four per step (independent chains for the out-of-order
 * core to overlap); the last 1-3 elements as lanes of a padded group. */
static __attribute__((target("avx2"))) void tanhf_avx2(float *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128 a = tanhf4_avx2(_mm_loadu_ps(x + i)), b = tanhf4_avx2(_mm_loadu_ps(x + i + 4));
        _mm_storeu_ps(y + i, a);
        _mm_storeu_ps(y + i + 4, b);
    }
    for (; i + 4 <= n; i += 4)
        _mm_storeu_ps(y + i, tanhf4_avx2(_mm_loadu_ps(x + i)));
    if (i < n) {
        float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        memcpy(t, x + i, (n - i) * sizeof(float));
        _mm_storeu_ps(t, tanhf4_avx2(_mm_loadu_ps(t)));
        memcpy(y + i, t, (n - i) * sizeof(float));
    }
}

/* dmath_exp four lanes at a time, the same statements lane by lane; its
 * branches become a clamped argument and chosen results. G groups of four
 * at a time: the polynomial is one long chain of dependent operations per
 * group, so a group alone waits on latency; G independent chains keep the
 * pipes busy (the same operations per lane). */
#define EXP_G 2

/* The part both group paths share, for arguments x already in range:
 * k = x/ln2 rounded half away from zero, and ey = exp_reduced_avx2, with
 * exp(x) = ey 2^k. The groups' chains are independent, so the core
 * overlaps them however they are written. */
static inline __attribute__((target("avx2"), always_inline)) void expg_core_avx2(__m256d *ey, __m128i *k,
                                                                                 const __m256d *x, const int G)
{
    _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) {
        const __m256d t = _mm256_mul_pd(x[g], V4(INV_LN2));
        const __m256d neg = _mm256_cmp_pd(t, V4(0.0), _CMP_LT_OQ);
        const __m256d tr = _mm256_blendv_pd(_mm256_add_pd(t, V4(0.5)), _mm256_sub_pd(t, V4(0.5)), neg);
        k[g] = _mm256_cvttpd_epi32(tr);
        ey[g] = exp_reduced_avx2(x[g], _mm256_cvtepi32_pd(k[g]));
    }
}

static inline __attribute__((target("avx2"), always_inline)) void expg_avx2(__m256d *res, const __m256d *v,
                                                                            const int G)
{
    __m256d nan[EXP_G], over[EXP_G], under[EXP_G], xe[EXP_G], ey[EXP_G];
    __m128i k[EXP_G];
#define EACH _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
    EACH {
        nan[g] = _mm256_cmp_pd(v[g], v[g], _CMP_UNORD_Q);
        over[g] = _mm256_cmp_pd(v[g], V4(709.8), _CMP_GT_OQ);
        under[g] = _mm256_cmp_pd(v[g], V4(-745.2), _CMP_LT_OQ);
        xe[g] = _mm256_blendv_pd(v[g], V4(0.0), _mm256_or_pd(nan[g], _mm256_or_pd(over[g], under[g])));
    }
    expg_core_avx2(ey, k, xe, G);
    EACH {
        /* k <= 1023: ey 2^k; k = 1024: (ey 2) 2^1023; k < -1021:
         * (ey 2^(k+60)) 2^-60 */
        const __m256d big = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm_cmpgt_epi32(k[g], _mm_set1_epi32(1023))));
        const __m256d tiny =
            _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm_cmplt_epi32(k[g], _mm_set1_epi32(-1021))));
        const __m256d twice = _mm256_mul_pd(ey[g], V4(2.0));
        const __m256d pre = _mm256_mul_pd(ey[g], pow2_avx2(_mm_add_epi32(k[g], _mm_set1_epi32(60))));
        const __m256d a = _mm256_blendv_pd(_mm256_blendv_pd(ey[g], pre, tiny), twice, big);
        const __m256d sc = _mm256_blendv_pd(_mm256_blendv_pd(pow2_avx2(k[g]), V4(0x1p-60), tiny),
                                            pow2_avx2(_mm_sub_epi32(k[g], _mm_set1_epi32(1))), big);
        __m256d x = _mm256_mul_pd(a, sc);
        x = _mm256_blendv_pd(x, V4(0.0), under[g]);
        x = _mm256_blendv_pd(x, V4(INFINITY), over[g]);
        res[g] = _mm256_blendv_pd(x, _mm256_add_pd(v[g], v[g]), nan[g]); /* x + x */
    }
#undef EACH
}

/* expg_avx2 for groups whose every lane lies in [-708, 709] (no NaN): there
 * k is in [-1021, 1023], so the general path's choices all pick the plain
 * ey 2^k, and this computes just that, with the same operations. The
 * softmaxes' arguments (<= 0, rarely below -708) nearly always qualify. */
static inline __attribute__((target("avx2"), always_inline)) void expg_plain_avx2(__m256d *res, const __m256d *v,
                                                                                  const int G)
{
    __m256d ey[EXP_G];
    __m128i k[EXP_G];
    expg_core_avx2(ey, k, v, G);
    _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) res[g] = _mm256_mul_pd(ey[g], pow2_avx2(k[g]));
}

/* 1 when every lane of the G groups lies in [-708, 709] (NaN does not). */
static inline __attribute__((target("avx2"), always_inline)) int exp_plain_avx2(const __m256d *v, const int G)
{
    __m256d ok = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    for (int g = 0; g < G; g++)
        ok = _mm256_and_pd(ok, _mm256_and_pd(_mm256_cmp_pd(v[g], V4(-708.0), _CMP_GE_OQ),
                                             _mm256_cmp_pd(v[g], V4(709.0), _CMP_LE_OQ)));
    return _mm256_movemask_pd(ok) == 0xF;
}

/* EXP_G groups per step, then single groups, the last 1-3 elements as
 * lanes of a padded group (not the scalar dmath_exp: the same bits). */
static __attribute__((target("avx2"))) void exp_avx2(double *y, const double *x, size_t n)
{
    size_t i = 0;
    __m256d v[EXP_G], res[EXP_G];
    for (; i + 4 * EXP_G <= n; i += 4 * EXP_G) {
        for (int g = 0; g < EXP_G; g++)
            v[g] = _mm256_loadu_pd(x + i + 4 * (size_t)g);
        if (exp_plain_avx2(v, EXP_G))
            expg_plain_avx2(res, v, EXP_G);
        else
            expg_avx2(res, v, EXP_G);
        for (int g = 0; g < EXP_G; g++)
            _mm256_storeu_pd(y + i + 4 * (size_t)g, res[g]);
    }
    for (; i + 4 <= n; i += 4) {
        v[0] = _mm256_loadu_pd(x + i);
        expg_avx2(res, v, 1);
        _mm256_storeu_pd(y + i, res[0]);
    }
    if (i < n) {
        double t[4] = {0.0, 0.0, 0.0, 0.0};
        memcpy(t, x + i, (n - i) * sizeof(double));
        v[0] = _mm256_loadu_pd(t);
        expg_avx2(res, v, 1);
        _mm256_storeu_pd(t, res[0]);
        memcpy(y + i, t, (n - i) * sizeof(double));
    }
}
#undef V4
#endif

void dmath_exp_n(double *y, const double *x, size_t n)
{
#ifdef DMATH_AVX2
    if (simd_path(&array_choice) != SIMD_PATH_SCALAR) {
        exp_avx2(y, x, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        y[i] = dmath_exp(x[i]);
}

void dmath_tanhf_n(float *y, const float *x, size_t n)
{
#ifdef DMATH_AVX2
    if (simd_path(&array_choice) != SIMD_PATH_SCALAR) {
        tanhf_avx2(y, x, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        y[i] = dmath_tanhf(x[i]);
}

int dmath_set_simd(int enabled)
{
    return simd_set(&array_choice, enabled ? SIMD_BEST : SIMD_OFF) != SIMD_OFF;
}

/* pi/2 = PIO2_1 + PIO2_2 + PIO2_3; the first two keep 33 bits so k * PIO2_1
 * and k * PIO2_2 are exact for |k| < 2^20. */
static const double PIO2_1 = 0x1.921fb544p+0;
static const double PIO2_2 = 0x1.0b4611a6p-34;
static const double PIO2_3 = 0x1.3198a2e037073p-69;
static const double INV_PIO2 = 0x1.45f306dc9c883p-1;

/* x = k pi/2 + (r + lo), |r| <= pi/4 (+ rounding), lo below half an ulp of
 * r. Returns k. Caller guarantees 2^-27 <= |x| <= 2^19. */
static int reduce_pio2(double x, double *r, double *lo)
{
    double t = x * INV_PIO2;
    int k = (int)(t < 0.0 ? t - 0.5 : t + 0.5);
    double kd = (double)k;
    double a = x - kd * PIO2_1; /* both steps exact (Sterbenz for k != 0) */
    double w = kd * PIO2_2;     /* exact */
    /* a - w as an exact sum s + err (Knuth's TwoSum, valid for any order of
     * magnitudes), then the third part of pi/2 joins the error term. */
    double s = a - w;
    double bv = s - a;
    double av = s - bv;
    double err = (a - av) - (w + bv);
    err = err - kd * PIO2_3;
    /* Renormalise: |err| is far below |s| for every double in range, since
     * no double comes within 2^-70 relative of a multiple of pi/2. */
    double hi = s + err;
    *lo = err - (hi - s);
    *r = hi;
    return k;
}

/* sin(r + lo) for |r| <= pi/4: r + r^3 S(r^2) + lo (1 - r^2/2), S the Taylor
 * series to r^17/17! (first omitted term r^19/19! < 1.1e-19 relative). */
static double kernel_sin(double r, double lo)
{
    double z = r * r;
    double S = 1.0 / 355687428096000.0;   /* 1/17! */
    S = -1.0 / 1307674368000.0 + z * S;   /* -1/15! */
    S = 1.0 / 6227020800.0 + z * S;       /* 1/13! */
    S = -1.0 / 39916800.0 + z * S;        /* -1/11! */
    S = 1.0 / 362880.0 + z * S;           /* 1/9! */
    S = -1.0 / 5040.0 + z * S;            /* -1/7! */
    S = 1.0 / 120.0 + z * S;              /* 1/5! */
    S = -1.0 / 6.0 + z * S;               /* -1/3! */
    double v = z * r;
    return r + ((lo - z * (0.5 * lo)) + v * S);
}

/* cos(r + lo) for |r| <= pi/4: 1 - r^2/2 + r^4 C(r^2) - r lo, C the Taylor
 * series to r^16/16! (first omitted term r^18/18! < 2e-18). 1 - r^2/2 is
 * rounded to w and its rounding error recovered exactly (fdlibm's trick),
 * which keeps the result within about an ulp near r = pi/4. */
static double kernel_cos(double r, double lo)
{
    double z = r * r;
    double C = 1.0 / 20922789888000.0;    /* 1/16! */
    C = -1.0 / 87178291200.0 + z * C;     /* -1/14! */
    C = 1.0 / 479001600.0 + z * C;        /* 1/12! */
    C = -1.0 / 3628800.0 + z * C;         /* -1/10! */
    C = 1.0 / 40320.0 + z * C;            /* 1/8! */
    C = -1.0 / 720.0 + z * C;             /* -1/6! */
    C = 1.0 / 24.0 + z * C;               /* 1/4! */
    double hz = 0.5 * z;
    double w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + ((z * z) * C - r * lo));
}

/* Inputs beyond 2^19 in magnitude would need a wider reduction; the engine
 * never asks (Box-Muller passes [0, 2 pi)), so they give NaN rather than a
 * silently inaccurate value. */
#define TRIG_MAX 0x1p19

double dmath_cos(double x)
{
    if (x != x)
        return x + x;
    double ax = x < 0.0 ? -x : x;
    if (!(ax <= TRIG_MAX))
        return NAN;
    if (ax < 0x1p-27)
        return 1.0; /* 1 - x^2/2 rounds to 1 */
    double r, lo;
    int k = reduce_pio2(x, &r, &lo);
    switch ((unsigned)k & 3u) {
    case 0: return kernel_cos(r, lo);
    case 1: return -kernel_sin(r, lo);
    case 2: return -kernel_cos(r, lo);
    default: return kernel_sin(r, lo);
    }
}

double dmath_sin(double x)
{
    if (x != x)
        return x + x;
    double ax = x < 0.0 ? -x : x;
    if (!(ax <= TRIG_MAX))
        return NAN;
    if (ax < 0x1p-27)
        return x; /* x - x^3/6 rounds to x; keeps the sign of zero */
    double r, lo;
    int k = reduce_pio2(x, &r, &lo);
    switch ((unsigned)k & 3u) {
    case 0: return kernel_sin(r, lo);
    case 1: return kernel_cos(r, lo);
    case 2: return -kernel_sin(r, lo);
    default: return -kernel_cos(r, lo);
    }
}

double dmath_cospi(double x)
{
    const double pi = 0x1.921fb54442d18p+1;
    if (!(x >= 0.0 && x <= 1.0))
        return NAN;
    return x <= 0.5 ? dmath_sin(pi * (0.5 - x)) : -dmath_sin(pi * (x - 0.5));
}

static const char *round_name(int mode)
{
#ifdef FE_UPWARD
    if (mode == FE_UPWARD)
        return "upward";
#endif
#ifdef FE_DOWNWARD
    if (mode == FE_DOWNWARD)
        return "downward";
#endif
#ifdef FE_TOWARDZERO
    if (mode == FE_TOWARDZERO)
        return "toward zero";
#endif
    return "unknown";
}

ls_status dmath_check_fpenv(ls_err *err)
{
    int mode = fegetround();
    if (mode != FE_TONEAREST)
        return ls_fail(err, LS_EFPENV,
                       "floating-point environment: rounding mode is %s (fegetround()=%d); "
                       "lockstep needs round-to-nearest",
                       round_name(mode), mode);
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
    /* glibc's fegetround reads the x87 control word only, so the SSE rounding
     * field (MXCSR.RC, bits 13-14) is checked here as well. */
    unsigned csr = _mm_getcsr();
    if (csr & 0x8000u)
        return ls_fail(err, LS_EFPENV,
                       "floating-point environment: flush-to-zero is on (MXCSR=0x%04x); "
                       "lockstep needs IEEE denormals",
                       csr);
    if (csr & 0x0040u)
        return ls_fail(err, LS_EFPENV,
                       "floating-point environment: denormals-are-zero is on (MXCSR=0x%04x); "
                       "lockstep needs IEEE denormals",
                       csr);
    if (csr & 0x6000u)
        return ls_fail(err, LS_EFPENV,
                       "floating-point environment: SSE rounding mode is not to-nearest "
                       "(MXCSR=0x%04x); lockstep needs round-to-nearest",
                       csr);
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    /* FZ (bit 24) flushes denormal results and inputs; FIZ (bit 0, FEAT_AFP,
     * reads 0 where not implemented) flushes denormal inputs. */
    if (fpcr & (1ull << 24))
        return ls_fail(err, LS_EFPENV,
                       "floating-point environment: flush-to-zero is on (FPCR=0x%llx); "
                       "lockstep needs IEEE denormals",
                       (unsigned long long)fpcr);
    if (fpcr & 1ull)
        return ls_fail(err, LS_EFPENV,
                       "floating-point environment: flush-inputs-to-zero is on (FPCR=0x%llx); "
                       "lockstep needs IEEE denormals",
                       (unsigned long long)fpcr);
    /* DN (bit 25) makes every NaN result the default NaN, whatever the
     * operands' payloads; x86-64 propagates the first operand's payload. The
     * hashes canonicalise NaNs, but a run that relies on DN is not the run the
     * contract describes, so it is refused like FZ. */
    if (fpcr & (1ull << 25))
        return ls_fail(err, LS_EFPENV,
                       "floating-point environment: default-NaN is on (FPCR=0x%llx); "
                       "lockstep needs NaN propagation as IEEE 754 describes it",
                       (unsigned long long)fpcr);
#endif
    return LS_OK;
}
