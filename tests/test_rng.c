/* test_rng.c — engine/num/rng.c: the frozen outputs of the addressed generator
 * (known answers from an independent Python reimplementation), and sanity
 * checks of ranges, permutations and the shape of the distributions.
 *
 * The known-answer values below were computed by a ~30-line Python 3 script
 * written from the formulas in the rng.c header comment (SplitMix64's
 * finaliser; the five-step absorption of (seed, purpose, a, b, c); the
 * uniform scalings; Box-Muller with math.log/math.cos; the 128-bit product
 * for rng_below; Fisher-Yates from the top), not by running this C code.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/num/rng.h"

static uint32_t fbits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static uint64_t dbits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* SplitMix64 finaliser, from the Python reimplementation. Sanity anchor:
 * mix(0x9e3779b97f4a7c15) = 0xe220a8397b1dcdaf is the widely published
 * first output of SplitMix64 seeded with 0. mix(0) = 0 (it is a bijection
 * fixing 0, which is why rng_u64 never feeds it a raw zero address). */
static void test_mix64_kat(void **state)
{
    (void)state;
    static const uint64_t kat[][2] = {
        {0x0000000000000000ULL, 0x0000000000000000ULL},
        {0x0000000000000001ULL, 0x5692161d100b05e5ULL},
        {0x0000000000000002ULL, 0xdbd238973a2b148aULL},
        {0x9e3779b97f4a7c15ULL, 0xe220a8397b1dcdafULL},
        {0xffffffffffffffffULL, 0xb4d055fcf2cbbd7bULL},
        {0x0123456789abcdefULL, 0xb2c058e4ebb5112cULL},
        {0x000000000000002aULL, 0xa759ea27d4727622ULL},
        {0x8000000000000000ULL, 0x25c26ea579cea98aULL},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++)
        assert_int_equal(rng_mix64(kat[i][0]), kat[i][1]);
}

/* Address → rng_u64, rng_uniformf bits, rng_uniform bits, rng_normalf bits.
 * The normalf column is Python's double Box-Muller rounded to float (it
 * uses libm's log/cos where rng.c uses dmath's; all ten agree exactly). */
struct kat_addr {
    uint64_t seed;
    uint32_t purpose;
    uint64_t a, b, c;
    uint64_t u64;
    uint32_t uniformf;
    uint64_t uniform;
    uint32_t normalf;
};

static const struct kat_addr KAT_ADDR[] = {
    {0ULL, 1, 0ULL, 0ULL, 0ULL, 0x902714a85994d302ULL, 0x3f102714U, 0x3fe204e2950b329aULL, 0xbe9bc0a3U},
    {1ULL, 1, 0ULL, 0ULL, 0ULL, 0x1ee9085e6ac4de50ULL, 0x3df74840U, 0x3fbee9085e6ac4d8ULL, 0x3fd0cbcfU},
    {42ULL, 2, 3ULL, 7ULL, 0ULL, 0x9aca4768b8a1b5b0ULL, 0x3f1aca47U, 0x3fe35948ed171436ULL, 0x3e1596e2U},
    {42ULL, 2, 3ULL, 0ULL, 7ULL, 0x153348643258c947ULL, 0x3da99a40U, 0x3fb53348643258c8ULL, 0x3ec73149U},
    {42ULL, 2, 0ULL, 3ULL, 7ULL, 0xe88c818c080a4e17ULL, 0x3f688c81U, 0x3fed119031810149ULL, 0xbd08fbdeU},
    {3735928559ULL, 99, 18446744073709551615ULL, 18446744073709551615ULL, 18446744073709551615ULL,
     0x7b07d821185998b3ULL, 0x3ef60fb0U, 0x3fdec1f608461666ULL, 0x3f3499aaU},
    {12345ULL, 6, 10ULL, 20ULL, 30ULL, 0x1f4541f40a05b264ULL, 0x3dfa2a08U, 0x3fbf4541f40a05b0ULL, 0x3dc70789U},
    {7ULL, 8, 1ULL, 2ULL, 3ULL, 0xbe45709661800f77ULL, 0x3f3e4570U, 0x3fe7c8ae12cc3001ULL, 0xbecac617U},
    {18446744073709551615ULL, 5, 0ULL, 0ULL, 0ULL, 0x538cf117a331e443ULL, 0x3ea719e2U, 0x3fd4e33c45e8cc78ULL, 0x3e690754U},
    {2024ULL, 4, 1000000ULL, 59999ULL, 0ULL, 0x923dba511875dd61ULL, 0x3f123dbaU, 0x3fe247b74a230ebbULL, 0xbeb64047U},
};

static void test_address_kat(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof KAT_ADDR / sizeof KAT_ADDR[0]; i++) {
        const struct kat_addr *k = &KAT_ADDR[i];
        uint64_t u = rng_u64(k->seed, k->purpose, k->a, k->b, k->c);
        uint32_t uf = fbits(rng_uniformf(k->seed, k->purpose, k->a, k->b, k->c));
        uint64_t ud = dbits(rng_uniform(k->seed, k->purpose, k->a, k->b, k->c));
        uint32_t nf = fbits(rng_normalf(k->seed, k->purpose, k->a, k->b, k->c));
        if (u != k->u64 || uf != k->uniformf || ud != k->uniform || nf != k->normalf) {
            printf("row %zu: u64 %016llx uniformf %08x uniform %016llx normalf %08x\n", i,
                   (unsigned long long)u, uf, (unsigned long long)ud, nf);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

static void test_below_kat(void **state)
{
    (void)state;
    static const struct {
        uint64_t seed;
        uint32_t purpose;
        uint64_t a, b, c, bound, want;
    } kat[] = {
        {11ULL, 99, 1, 2, 3, 10ULL, 8ULL},
        {11ULL, 99, 4, 5, 6, 1000ULL, 333ULL},
        {11ULL, 99, 7, 8, 9, 3ULL, 1ULL},
        {11ULL, 99, 0, 0, 0, 18446744073709551615ULL, 552447828055478766ULL},
        {9ULL, 2, 5, 6, 0, 60000ULL, 1612ULL},
        {9ULL, 2, 5, 6, 0, 9223372036854775808ULL, 247896819897717697ULL},
        {9ULL, 2, 5, 6, 0, 1ULL, 0ULL},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++)
        assert_int_equal(rng_below(kat[i].seed, kat[i].purpose, kat[i].a, kat[i].b, kat[i].c,
                                   kat[i].bound),
                         kat[i].want);
    assert_int_equal(rng_below(1, RNG_TEST, 1, 2, 3, 0), 0);
}

static void test_below_range(void **state)
{
    (void)state;
    static const uint64_t bounds[] = {1, 2, 3, 7, 10, 100, 60000, 1ULL << 32, (1ULL << 63) + 1,
                                      UINT64_MAX};
    for (size_t j = 0; j < sizeof bounds / sizeof bounds[0]; j++) {
        uint64_t max_seen = 0;
        for (uint64_t i = 0; i < 20000; i++) {
            uint64_t v = rng_below(3, RNG_TEST, j, i, 0, bounds[j]);
            assert_true(v < bounds[j]);
            if (v > max_seen)
                max_seen = v;
        }
        /* The top of the range is reached (for small bounds) or approached. */
        if (bounds[j] <= 100)
            assert_int_equal(max_seen, bounds[j] - 1);
        else
            assert_true(max_seen > bounds[j] / 10 * 9);
    }
    /* Every value of a small bound appears with about its share. */
    long count[7] = {0};
    for (uint64_t i = 0; i < 70000; i++)
        count[rng_below(5, RNG_TEST, 0, 0, i, 7)]++;
    for (int v = 0; v < 7; v++)
        assert_true(count[v] > 9400 && count[v] < 10600);
}

static void test_uniform(void **state)
{
    (void)state;
    const long n = 1000000;
    double sumf = 0.0, sumd = 0.0;
    float minf = 1.0f, maxf = 0.0f;
    double mind = 1.0, maxd = 0.0;
    for (long i = 0; i < n; i++) {
        float f = rng_uniformf(17, RNG_TEST, 0, (uint64_t)i, 0);
        double d = rng_uniform(17, RNG_TEST, 1, 0, (uint64_t)i);
        assert_true(f >= 0.0f && f < 1.0f);
        assert_true(d >= 0.0 && d < 1.0);
        sumf += (double)f;
        sumd += d;
        minf = f < minf ? f : minf;
        maxf = f > maxf ? f : maxf;
        mind = d < mind ? d : mind;
        maxd = d > maxd ? d : maxd;
    }
    double meanf = sumf / (double)n, meand = sumd / (double)n;
    printf("uniformf: mean %.5f min %g max %.8f; uniform: mean %.5f min %g max %.8f (n=%ld)\n",
           meanf, (double)minf, (double)maxf, meand, mind, maxd, n);
    /* Statistical sanity only (the standard error is 2.9e-4); the contract
     * is the bits, pinned above. */
    assert_true(fabs(meanf - 0.5) < 0.002);
    assert_true(fabs(meand - 0.5) < 0.002);
    assert_true(minf < 1e-5f && maxf > 1.0f - 1e-5f);
    /* The exact scaling: the top 24 (53) bits times 2^-24 (2^-53). */
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t u = rng_u64(i, RNG_TEST, i, 2 * i, 3 * i);
        assert_true(rng_uniformf(i, RNG_TEST, i, 2 * i, 3 * i) == (float)(u >> 40) * 0x1p-24f);
        assert_true(rng_uniform(i, RNG_TEST, i, 2 * i, 3 * i) == (double)(u >> 11) * 0x1p-53);
    }
}

static void test_normal(void **state)
{
    (void)state;
    const long n = 100000;
    double sum = 0.0, sumsq = 0.0, maxabs = 0.0;
    long beyond2 = 0;
    for (long i = 0; i < n; i++) {
        float z = rng_normalf(23, RNG_INIT, 4, (uint64_t)i, 0);
        assert_true(isfinite(z));
        double zd = (double)z;
        sum += zd;
        sumsq += zd * zd;
        if (fabs(zd) > maxabs)
            maxabs = fabs(zd);
        beyond2 += fabs(zd) > 2.0;
    }
    double mean = sum / (double)n;
    double var = sumsq / (double)n - mean * mean;
    printf("normalf: mean %.4f var %.4f max|z| %.3f P(|z|>2) %.4f (n=%ld)\n", mean, var, maxabs,
           (double)beyond2 / (double)n, n);
    assert_true(fabs(mean) < 0.02);         /* standard error 0.0032 */
    assert_true(fabs(var - 1.0) < 0.03);    /* standard error 0.0045 */
    assert_true(maxabs < 8.6);              /* sqrt(-2 ln 2^-53) = 8.57 */
    assert_true(fabs((double)beyond2 / (double)n - 0.0455) < 0.004);
    /* Different addresses, different draws; same address, same draw. */
    assert_true(fbits(rng_normalf(23, RNG_INIT, 4, 0, 0)) == fbits(rng_normalf(23, RNG_INIT, 4, 0, 0)));
    assert_true(rng_normalf(23, RNG_INIT, 4, 0, 0) != rng_normalf(23, RNG_INIT, 4, 0, 1));
}

static int is_permutation(const uint32_t *p, size_t n, unsigned char *seen)
{
    memset(seen, 0, n);
    for (size_t i = 0; i < n; i++) {
        if (p[i] >= n || seen[p[i]])
            return 0;
        seen[p[i]] = 1;
    }
    return 1;
}

static void test_permutation(void **state)
{
    (void)state;
    enum { BIG = 60000 };
    uint32_t *p = malloc(BIG * sizeof *p);
    uint32_t *q = malloc(BIG * sizeof *q);
    unsigned char *seen = malloc(BIG);
    assert_non_null(p);
    assert_non_null(q);
    assert_non_null(seen);

    for (size_t n = 0; n <= 100; n++) {
        rng_permutation(p, n, 77, RNG_EPOCH_PERM, 0);
        assert_true(is_permutation(p, n, seen));
        rng_permutation(q, n, 77, RNG_EPOCH_PERM, 0);
        if (n > 0)
            assert_memory_equal(p, q, n * sizeof *p); /* deterministic */
        if (n >= 10) { /* another epoch, another order */
            rng_permutation(q, n, 77, RNG_EPOCH_PERM, 1);
            assert_true(is_permutation(q, n, seen));
            assert_memory_not_equal(p, q, n * sizeof *p);
        }
    }

    rng_permutation(p, BIG, 77, RNG_EPOCH_PERM, 0);
    assert_true(is_permutation(p, BIG, seen));
    rng_permutation(q, BIG, 77, RNG_EPOCH_PERM, 0);
    assert_memory_equal(p, q, BIG * sizeof *p);
    long fixed = 0, same = 0;
    for (size_t i = 0; i < BIG; i++)
        fixed += p[i] == i;
    rng_permutation(q, BIG, 77, RNG_EPOCH_PERM, 1);
    assert_true(is_permutation(q, BIG, seen));
    for (size_t i = 0; i < BIG; i++)
        same += p[i] == q[i];
    /* A random permutation has about one fixed point, and two independent
     * ones agree in about one place: far fewer than 20 either way. */
    printf("permutation n=%d: %ld fixed points, %ld positions equal across epochs\n", BIG, fixed,
           same);
    assert_true(fixed < 20);
    assert_true(same < 20);
    rng_permutation(q, BIG, 78, RNG_EPOCH_PERM, 0); /* another seed */
    assert_memory_not_equal(p, q, BIG * sizeof *p);

    /* Known answers from the Python Fisher-Yates (rng_below at address
     * (seed, purpose, a, k, 0) with bound k + 1, k = n-1 down to 1). */
    static const uint32_t want0[10] = {9, 0, 2, 3, 4, 5, 1, 7, 6, 8};
    static const uint32_t want1[10] = {4, 6, 1, 9, 2, 0, 5, 8, 3, 7};
    static const uint32_t want2[16] = {1, 2, 14, 12, 5, 9, 11, 6, 0, 15, 10, 4, 7, 8, 13, 3};
    rng_permutation(p, 10, 5, RNG_EPOCH_PERM, 0);
    assert_memory_equal(p, want0, sizeof want0);
    rng_permutation(p, 10, 5, RNG_EPOCH_PERM, 1);
    assert_memory_equal(p, want1, sizeof want1);
    rng_permutation(p, 16, 0, RNG_TEST, 3);
    assert_memory_equal(p, want2, sizeof want2);

    free(p);
    free(q);
    free(seen);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Every purpose and every small address gives its own value: all 9 purposes
 * times a, b, c in 0..7 (4608 addresses), for two seeds, without one
 * collision; in particular (x,0,0), (0,x,0) and (0,0,x) differ. */
static void test_distinct_addresses(void **state)
{
    (void)state;
    static const uint32_t purposes[] = {RNG_INIT,    RNG_EPOCH_PERM, RNG_TEACHER,
                                        RNG_DATA,    RNG_WIRING,     RNG_CA_START,
                                        RNG_CA_MASK, RNG_EVAL,       RNG_TEST};
    enum { NP = sizeof purposes / sizeof purposes[0], NV = 2 * NP * 8 * 8 * 8 };
    uint64_t *v = malloc(NV * sizeof *v);
    assert_non_null(v);
    size_t k = 0;
    for (uint64_t seed = 0; seed < 2; seed++)
        for (size_t p = 0; p < NP; p++)
            for (uint64_t a = 0; a < 8; a++)
                for (uint64_t b = 0; b < 8; b++)
                    for (uint64_t c = 0; c < 8; c++)
                        v[k++] = rng_u64(seed, purposes[p], a, b, c);
    qsort(v, NV, sizeof *v, cmp_u64);
    for (size_t i = 1; i < NV; i++)
        assert_true(v[i] != v[i - 1]);
    free(v);

    for (uint64_t x = 1; x < 100; x++) {
        uint64_t ra = rng_u64(9, RNG_TEST, x, 0, 0);
        uint64_t rb = rng_u64(9, RNG_TEST, 0, x, 0);
        uint64_t rc = rng_u64(9, RNG_TEST, 0, 0, x);
        assert_true(ra != rb && rb != rc && ra != rc);
    }
}

/* Each output bit is set about half the time when only a, only b or only c
 * (or only the seed) counts up: the mixing reaches every bit from every
 * word of the address. Sanity, not a randomness test suite. */
static void test_bit_balance(void **state)
{
    (void)state;
    enum { N = 20000 };
    for (int which = 0; which < 4; which++) {
        long ones[64] = {0};
        for (uint64_t i = 0; i < N; i++) {
            uint64_t u = which == 0   ? rng_u64(i, RNG_TEST, 5, 6, 7)
                         : which == 1 ? rng_u64(1, RNG_TEST, i, 6, 7)
                         : which == 2 ? rng_u64(1, RNG_TEST, 5, i, 7)
                                      : rng_u64(1, RNG_TEST, 5, 6, i);
            for (int bit = 0; bit < 64; bit++)
                ones[bit] += (long)((u >> bit) & 1u);
        }
        for (int bit = 0; bit < 64; bit++)
            assert_true(ones[bit] > N * 48 / 100 && ones[bit] < N * 52 / 100);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mix64_kat),
        cmocka_unit_test(test_address_kat),
        cmocka_unit_test(test_below_kat),
        cmocka_unit_test(test_below_range),
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_normal),
        cmocka_unit_test(test_permutation),
        cmocka_unit_test(test_distinct_addresses),
        cmocka_unit_test(test_bit_balance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
