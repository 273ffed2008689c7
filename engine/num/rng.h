/* rng.h — addressed random numbers.
 *
 * Every random number is a pure function of (seed, purpose, a, b, c): no
 * generator state is shared between threads or carried across steps, so any
 * schedule, thread count or resume sees the same numbers (docs/contract.md, addressed randomness).
 * The mixing function is SplitMix64's finaliser applied to the address.
 * Frozen: the outputs are pinned by known-answer tests.
 */
#ifndef LS_RNG_H
#define LS_RNG_H

#include <stddef.h>
#include <stdint.h>

/* What a number is for; part of its address. Never renumber. */
enum rng_purpose {
    RNG_INIT = 1,       /* a = tensor index, b = element index */
    RNG_EPOCH_PERM = 2, /* a = epoch, b = Fisher-Yates position */
    RNG_TEACHER = 3,    /* synthetic task: teacher weights */
    RNG_DATA = 4,       /* synthetic task: inputs */
    RNG_WIRING = 5,     /* logic networks: a = layer */
    RNG_CA_START = 6,   /* CA start states: a = step, b = sample, c = cell */
    RNG_CA_MASK = 7,    /* CA async fire masks */
    RNG_EVAL = 8,       /* evaluation inputs */
    RNG_TEST = 99       /* tests only */
};

uint64_t rng_mix64(uint64_t x);  /* SplitMix64 finaliser, a bijection */
uint64_t rng_u64(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c);
float rng_uniformf(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c);  /* [0,1), 24 bits */
double rng_uniform(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c);  /* [0,1), 53 bits */
/* Standard normal by Box-Muller from two addressed uniforms, using dmath. */
float rng_normalf(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c);
/* Uniform integer in [0, bound) from the high 64 bits of a 128-bit product. */
uint64_t rng_below(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b, uint64_t c, uint64_t bound);
/* perm = a permutation of 0..n-1 by Fisher-Yates; the draw for position k
 * (k = n-1 down to 1) has address (seed, purpose, a, k, 0). */
void rng_permutation(uint32_t *perm, size_t n, uint64_t seed, uint32_t purpose, uint64_t a);

#endif
