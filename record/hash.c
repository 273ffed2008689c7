/* hash.c — the parameter and trajectory hashes of docs/formats.md.
 *
 * Every hash here is XXH3_64bits (seed 0) over a byte string whose layout is
 * frozen by hash.h: binary32 / binary64 / uint64 values little-endian, NaN bit
 * patterns canonicalised so that a NaN's payload or sign cannot make two runs
 * look different (or equal runs look different). -0.0 and +0.0 are distinct
 * bit patterns and hash differently on purpose: the contract is about bits.
 *
 * hash_params is on the per-step path and hashes the whole model, so the usual
 * case (little-endian host, no NaN) hashes the caller's memory as it is: in
 * one call to libxxhash's dispatched XXH3 when the library has it (below),
 * else streamed through an XXH3 state block by block; a block with a NaN
 * (or a big-endian host) streams canonical copies instead.
 */
#include "hash.h"

#include "../base/simd.h"

#include <string.h>

/* The implementation is compiled into this file: the stack-allocated
 * XXH3_state_t below then has the layout of the code that uses it, never that
 * of whatever libxxhash is loaded at run time (the state struct is not part of
 * the shared library's stable ABI), and the one-shot path can be inlined. The
 * output is the same frozen XXH3_64bits (frozen since xxHash 0.8.0, whichever
 * copy computes it); the tests check it against the shared library. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* Debian's shared libxxhash also exports XXH3 behind a run-time choice of
 * SSE2, AVX2 or AVX-512 (xxh_x86dispatch.h, which cannot be included next to
 * XXH_INLINE_ALL); the inline copy above is built for the baseline x86-64
 * (SSE2). The same function, 2.8 times faster on the AVX-512 path here;
 * with the NaN scan before it (a pass of its own: the one-shot call has no
 * state to stream into), hash_params took 57 µs instead of 75 for 1.1 MiB
 * of MLP parameters and 7 instead of 10.5 for gol's 160 KiB (a loop of
 * 2,000 calls, 2026-11-23). The Makefile defines LS_XXH_DISPATCH when the
 * header is there; the symbol is weak, because Debian's static libxxhash.a
 * and other builds of the library lack it: then it is NULL and the inline
 * copy streams as before. */
#if defined(LS_XXH_DISPATCH) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((weak)) XXH64_hash_t XXH3_64bits_dispatch(const void *input, size_t len);
#define HASH_DISPATCH 1
#else
#define HASH_DISPATCH 0
#endif

#define HASH_CANON_NAN32 UINT32_C(0x7fc00000)
#define HASH_CANON_NAN64 UINT64_C(0x7ff8000000000000)
#define HASH_CHUNK 1024   /* floats per canonicalised chunk (4 KiB on the stack) */
#define HASH_BLOCK 16384  /* floats scanned then hashed while in cache (64 KiB) */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HASH_BIG_ENDIAN 1
#else
#define HASH_BIG_ENDIAN 0
#endif

uint64_t hash_bytes(const void *p, size_t n)
{
    return (uint64_t)XXH3_64bits(p, n);
}

static void hash_put_u32le(unsigned char *dst, uint32_t v)
{
    dst[0] = (unsigned char)(v & 0xffu);
    dst[1] = (unsigned char)((v >> 8) & 0xffu);
    dst[2] = (unsigned char)((v >> 16) & 0xffu);
    dst[3] = (unsigned char)((v >> 24) & 0xffu);
}

static void hash_put_u64le(unsigned char *dst, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        dst[i] = (unsigned char)((v >> (8 * i)) & 0xffu);
}

/* NaN test on the bits, so it holds whatever the compiler assumes about NaN. */
static int hash_is_nan32(uint32_t u)
{
    return (u & UINT32_C(0x7f800000)) == UINT32_C(0x7f800000) && (u & UINT32_C(0x007fffff)) != 0;
}

static int hash_is_nan64(uint64_t u)
{
    return (u & UINT64_C(0x7ff0000000000000)) == UINT64_C(0x7ff0000000000000) &&
           (u & UINT64_C(0x000fffffffffffff)) != 0;
}

/* Branch-free, so the compiler vectorises the scan: a NaN's magnitude bits
 * exceed those of infinity. */
LS_SIMD_CLONES
static int hash_any_nan32(const float *params, size_t n)
{
    uint32_t found = 0;
    #pragma omp simd reduction(|:found)
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &params[i], sizeof u);
        found |= (u & UINT32_C(0x7fffffff)) > UINT32_C(0x7f800000);
    }
    return found != 0;
}

/* Canonical little-endian copy of params[0, m) into buf. */
static void hash_canonical_chunk(const float *params, size_t m, unsigned char *buf)
{
    for (size_t j = 0; j < m; j++) {
        uint32_t u;
        memcpy(&u, &params[j], sizeof u);
        if (hash_is_nan32(u))
            u = HASH_CANON_NAN32;
        hash_put_u32le(buf + 4 * j, u);
    }
}

uint64_t hash_params(const float *params, size_t n)
{
    if (n == 0)
        return (uint64_t)XXH3_64bits(NULL, 0);
#if HASH_DISPATCH
    /* The usual case: no NaN, so the array itself is the canonical bytes. */
    if (XXH3_64bits_dispatch != NULL && !HASH_BIG_ENDIAN && !hash_any_nan32(params, n))
        return (uint64_t)XXH3_64bits_dispatch(params, n * sizeof(float));
#endif
    /* One pass over memory: each L2-sized block is scanned for NaN and then
     * hashed while it is still in cache. Streaming XXH3 over the blocks gives
     * the one-shot value. A stack state avoids an allocation that could fail
     * in a function that cannot report failure. */
    XXH3_state_t state;
    XXH3_INITSTATE(&state);
    XXH3_64bits_reset(&state);
    unsigned char buf[HASH_CHUNK * 4];
    for (size_t i = 0; i < n; i += HASH_BLOCK) {
        size_t m = n - i < HASH_BLOCK ? n - i : HASH_BLOCK;
        if (!HASH_BIG_ENDIAN && !hash_any_nan32(params + i, m)) {
            XXH3_64bits_update(&state, params + i, m * sizeof(float));
            continue;
        }
        for (size_t j = 0; j < m; j += HASH_CHUNK) {
            size_t c = m - j < HASH_CHUNK ? m - j : HASH_CHUNK;
            hash_canonical_chunk(params + i + j, c, buf);
            XXH3_64bits_update(&state, buf, c * 4);
        }
    }
    return (uint64_t)XXH3_64bits_digest(&state);
}

uint64_t hash_loss_bits(double loss)
{
    uint64_t u;
    memcpy(&u, &loss, sizeof u);
    return hash_is_nan64(u) ? HASH_CANON_NAN64 : u;
}

double hash_bits_to_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

uint64_t hash_traj0(const char *config_text, uint64_t param_hash0)
{
    /* Streamed so that a config of any length needs no allocation. XXH3's
     * streaming digest equals the one-shot hash of the concatenation. */
    XXH3_state_t state;
    XXH3_INITSTATE(&state);
    XXH3_64bits_reset(&state);
    if (config_text != NULL)
        XXH3_64bits_update(&state, config_text, strlen(config_text));
    unsigned char tail[8];
    hash_put_u64le(tail, param_hash0);
    XXH3_64bits_update(&state, tail, sizeof tail);
    return (uint64_t)XXH3_64bits_digest(&state);
}

uint64_t hash_traj_next(uint64_t traj_prev, uint64_t param_hash, double loss)
{
    unsigned char buf[24];
    hash_put_u64le(buf, traj_prev);
    hash_put_u64le(buf + 8, param_hash);
    hash_put_u64le(buf + 16, hash_loss_bits(loss));
    return (uint64_t)XXH3_64bits(buf, sizeof buf);
}
