/* api_num.c — the engine's addressed random numbers (engine/num/rng.h) and
 * its exp, log, sigmoid and tanh (engine/num/dmath.h) under their public
 * names (include/lockstep.h), for models written outside the library. Each
 * function only calls its internal twin, so the two give the same bits by
 * construction; the library's own models keep calling the internal ones.
 * tests/test_api.c compares the pairs over many inputs with memcmp. */
#include "engine/num/dmath.h"
#include "engine/num/rng.h"
#include "include/lockstep.h"

/* The public purposes are the engine's own numbers, which never change. */
_Static_assert((int)LS_RNG_INIT == (int)RNG_INIT, "LS_RNG_INIT is RNG_INIT");
_Static_assert((int)LS_RNG_DATA == (int)RNG_DATA, "LS_RNG_DATA is RNG_DATA");
_Static_assert((int)LS_RNG_EVAL == (int)RNG_EVAL, "LS_RNG_EVAL is RNG_EVAL");
_Static_assert((int)LS_RNG_USER > (int)RNG_TEST, "LS_RNG_USER is above every purpose of the engine");

uint64_t ls_rng_u64(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c)
{
    return rng_u64(seed, purpose, a, b, c);
}

float ls_rng_uniformf(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c)
{
    return rng_uniformf(seed, purpose, a, b, c);
}

double ls_rng_uniform(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c)
{
    return rng_uniform(seed, purpose, a, b, c);
}

float ls_rng_normalf(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c)
{
    return rng_normalf(seed, purpose, a, b, c);
}

uint64_t ls_rng_below(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c, uint64_t bound)
{
    return rng_below(seed, purpose, a, b, c, bound);
}

void ls_rng_permutation(uint32_t *perm, size_t n, uint64_t seed, uint32_t purpose, uint64_t a)
{
    rng_permutation(perm, n, seed, purpose, a);
}

double ls_exp(double x)
{
    return dmath_exp(x);
}

double ls_log(double x)
{
    return dmath_log(x);
}

float ls_expf(float x)
{
    return dmath_expf(x);
}

float ls_logf(float x)
{
    return dmath_logf(x);
}

float ls_sigmoidf(float x)
{
    return dmath_sigmoidf(x);
}

float ls_tanhf(float x)
{
    return dmath_tanhf(x);
}
