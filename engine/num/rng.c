/* rng.c — addressed random numbers: every draw is a pure function of
 * (seed, purpose, a, b, c), so no generator state exists to share, carry
 * across steps or restore on resume (docs/contract.md, addressed randomness).
 *
 * The address is absorbed one word at a time, each word multiplied by its
 * own odd constant and added to the running value, which then goes through
 * SplitMix64's finaliser (a bijection of 64-bit words). FROZEN formula —
 * every initial weight, permutation and synthetic sample depends on it, and
 * tests/test_rng.c pins its outputs with values computed by an independent
 * Python reimplementation:
 *
 *   mix(z)  = z ^= z >> 30; z *= 0xbf58476d1ce4e5b9;
 *             z ^= z >> 27; z *= 0x94d049bb133111eb; z ^ (z >> 31)
 *   h0 = mix(seed ^ 0x6a09e667f3bcc909)
 *   h1 = mix(h0 + (P + 1) * 0x9e3779b97f4a7c15)     P = purpose (64-bit)
 *   h2 = mix(h1 + (a + 1) * 0xbb67ae8584caa73b)
 *   h3 = mix(h2 + (b + 1) * 0x3c6ef372fe94f82b)
 *   u64 = mix(h3 + (c + 1) * 0xa54ff53a5f1d36f1)    all arithmetic mod 2^64
 *
 * The multipliers are 2^64 / golden ratio and the first 64 fractional bits
 * of sqrt 3, 5 and 7 (SHA-512's initial words H1..H3), all odd; the seed
 * salt is H0 (sqrt 2) with its low bit set. No structure chosen by us. Each absorbed word enters through a
 * bijection, so two addresses that differ only in their last word never
 * collide. Every word, zero or not, is followed by its own full mix, and the
 * +1 keeps a zero word from adding nothing, so c = 0 does not fold (a, b, 0)
 * onto some other address such as (a, 0, b).
 *
 * rng_u64 passes its uint32_t purpose as P. rng_normalf draws its two
 * uniforms with P = purpose + 2^32 and P = purpose + 2^33, which no uint32_t
 * purpose can reach, so a Gaussian never shares bits with any rng_u64 call.
 */
#include "engine/num/rng.h"

#include <math.h> /* sqrt only */

#include "engine/num/dmath.h"

static const uint64_t RNG_SEED_SALT = 0x6a09e667f3bcc909ULL;
static const uint64_t RNG_K_PURPOSE = 0x9e3779b97f4a7c15ULL;
static const uint64_t RNG_K_A = 0xbb67ae8584caa73bULL;
static const uint64_t RNG_K_B = 0x3c6ef372fe94f82bULL;
static const uint64_t RNG_K_C = 0xa54ff53a5f1d36f1ULL;

uint64_t rng_mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The frozen formula above, with a 64-bit purpose. */
static uint64_t addr_u64(uint64_t seed, uint64_t purpose, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = rng_mix64(seed ^ RNG_SEED_SALT);
    h = rng_mix64(h + (purpose + 1) * RNG_K_PURPOSE);
    h = rng_mix64(h + (a + 1) * RNG_K_A);
    h = rng_mix64(h + (b + 1) * RNG_K_B);
    return rng_mix64(h + (c + 1) * RNG_K_C);
}

uint64_t rng_u64(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c)
{
    return addr_u64(seed, (uint64_t)purpose, a, b, c);
}

/* The top 24 (53) bits times 2^-24 (2^-53): every value is exact, the
 * largest is 1 - 2^-24 (1 - 2^-53), and 0 is possible. */
float rng_uniformf(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c)
{
    return (float)(rng_u64(seed, purpose, a, b, c) >> 40) * 0x1p-24f;
}

double rng_uniform(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c)
{
    return (double)(rng_u64(seed, purpose, a, b, c) >> 11) * 0x1p-53;
}

/* Box-Muller, cosine branch: z = sqrt(-2 ln(1 - u1)) cos(2 pi u2), in double,
 * rounded once to float. u1, u2 are 53-bit uniforms at the address with the
 * 64-bit purposes purpose + 2^32 and purpose + 2^33 (see the header comment).
 * 1 - u1 is exact and in (0, 1], so the log is finite; the radius is written
 * 2 (0 - l) so that u1 = 0 gives +0, not -0. */
float rng_normalf(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c)
{
    static const double TWO_PI = 0x1.921fb54442d18p+2;
    uint64_t p1 = (uint64_t)purpose + (1ULL << 32);
    uint64_t p2 = (uint64_t)purpose + (2ULL << 32);
    double u1 = (double)(addr_u64(seed, p1, a, b, c) >> 11) * 0x1p-53;
    double u2 = (double)(addr_u64(seed, p2, a, b, c) >> 11) * 0x1p-53;
    double l = dmath_log(1.0 - u1);
    double radius = sqrt(2.0 * (0.0 - l));
    return (float)(radius * dmath_cos(TWO_PI * u2));
}

/* Lemire's multiply-shift without the rejection step: the bias is at most
 * bound / 2^64, invisible at the sizes used here, and a fixed number of draws
 * per call keeps addresses simple. bound = 0 gives 0. */
uint64_t rng_below(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c, uint64_t bound)
{
    __extension__ typedef unsigned __int128 u128;
    u128 prod = (u128)rng_u64(seed, purpose, a, b, c) * (u128)bound;
    return (uint64_t)(prod >> 64);
}

/* Fisher-Yates from the top: for k = n-1 down to 1, j = rng_below(seed,
 * purpose, a, k, 0, k + 1), swap perm[k] and perm[j]. Frozen. */
void rng_permutation(uint32_t *perm, size_t n, uint64_t seed, uint32_t purpose, uint64_t a)
{
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    for (size_t k = n; k-- > 1;) {
        size_t j = (size_t)rng_below(seed, purpose, a, (uint64_t)k, 0, (uint64_t)k + 1);
        uint32_t tmp = perm[k];
        perm[k] = perm[j];
        perm[j] = tmp;
    }
}
