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
 * (or a big-endian host) streams canonical copies instead. The hash in
 * parts reads θ as little-endian 64-bit words on either byte order.
 */
#include "record/hash.h"

#include "base/bytes.h"
#include "base/simd.h"

#include <stdlib.h>
#include <string.h>

#include "include/lockstep.h"

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
        bytes_put_le32(buf + 4 * j, u);
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

/* ---- param_hash in parts (hash.h) ----
 *
 * XXH3's long-input loop with its default secret: 16 stripes a block, stripe
 * s of a block keyed by the secret from byte 8s, a scramble after each full
 * block, then the stripes of the last partial block, a last stripe ending at
 * the input's end, and the merge. The join takes the secret, the last
 * blocks' accumulate and the merge from the header (XXH_INLINE_ALL); written
 * here are a full block's sum of stripes, as two sums per lane (each lane's
 * products, and each lane's data, which XXH3 adds to the neighbour lane
 * i ^ 1) with a path per vector width, and the scramble on locals
 * (join_blocks). */
#define HASH_STRIPES_PER_BLOCK 16
#define HASH_BLOCK_BYTES (HASH_STRIPES_PER_BLOCK * XXH_STRIPE_LEN)
#define HASH_KEYS (HASH_STRIPES_PER_BLOCK + XXH_ACC_NB - 1)   /* the secret's words a block reads */
_Static_assert(HASH_PART_FLOATS * sizeof(float) == HASH_BLOCK_BYTES, "a part block is one XXH3 block");
_Static_assert((sizeof XXH3_kSecret - XXH_STRIPE_LEN) / XXH_SECRET_CONSUME_RATE == HASH_STRIPES_PER_BLOCK &&
                   XXH_SECRET_CONSUME_RATE == 8 && XXH_ACC_NB == 8,
               "XXH3's default block layout");

/* Full blocks before the last partial one (XXH3 keeps at least one byte
 * for it: a multiple of the block length ends with a full "partial" block). */
static size_t hash_full_blocks(size_t n)
{
    return (n * sizeof(float) - 1) / HASH_BLOCK_BYTES;
}

size_t hash_parts_words(size_t n)
{
    return n * sizeof(float) > XXH3_MIDSIZE_MAX ? XXH_ACC_NB * hash_full_blocks(n) : 0;
}

/* Two floats of θ as the little-endian 64-bit word their canonical bytes
 * make: a plain load on a little-endian host, the two host words swapped
 * into place on a big-endian one (each float's own bytes are its value). */
static inline uint64_t hash_load_pair(const unsigned char *p)
{
    uint32_t lo, hi;
    memcpy(&lo, p, sizeof lo);
    memcpy(&hi, p + 4, sizeof hi);
    return (uint64_t)lo | (uint64_t)hi << 32;
}

/* The secret's words as XXH3 reads them (little-endian). */
static void hash_load_key(uint64_t *key, const unsigned char *secret, size_t words)
{
    for (size_t i = 0; i < words; i++)
        key[i] = bytes_get_le64(secret + 8 * i);
}

/* The sums of `blocks` full blocks from in into out (8 words each), and
 * whether any of their floats is a NaN: a vector path per width (the
 * compilers do not find the 32 x 32 -> 64-bit multiply in the scalar loop)
 * and the scalar twin. Sums modulo 2^64: every path gives the same words. */
static int block_sums_scalar(uint64_t *out, const unsigned char *in, size_t blocks, const uint64_t *key)
{
    int found = 0;
    for (size_t k = 0; k < blocks; k++) {
        uint64_t prod[XXH_ACC_NB] = { 0 }, data[XXH_ACC_NB] = { 0 };
        for (size_t s = 0; s < HASH_STRIPES_PER_BLOCK; s++) {
            const unsigned char *p = in + k * HASH_BLOCK_BYTES + s * XXH_STRIPE_LEN;
            for (size_t i = 0; i < XXH_ACC_NB; i++) {
                /* The canonical stream's little-endian word: float 2i in
                 * its low half, float 2i+1 in its high half. */
                const uint64_t d = hash_load_pair(p + 8 * i);
                const uint64_t x = d ^ key[s + i];
                prod[i] += (x & UINT64_C(0xffffffff)) * (x >> 32);
                data[i] += d;
                found |= hash_is_nan32((uint32_t)d) | hash_is_nan32((uint32_t)(d >> 32));
            }
        }
        for (size_t i = 0; i < XXH_ACC_NB; i++)
            out[k * XXH_ACC_NB + i] = prod[i] + data[i ^ 1];
    }
    return found;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HASH_X86 1

/* A NaN's magnitude bits exceed those of infinity (signed compare: both
 * sides are below 2^31). */
static __attribute__((target("avx512f"))) int block_sums_z(uint64_t *out, const unsigned char *in, size_t blocks,
                                                           const uint64_t *key)
{
    const __m512i magnitude = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    __mmask16 nan = 0;
    for (size_t k = 0; k < blocks; k++) {
        __m512i prod = _mm512_setzero_si512(), data = _mm512_setzero_si512();
        for (size_t s = 0; s < HASH_STRIPES_PER_BLOCK; s++) {
            const __m512i d = _mm512_loadu_si512((const void *)(in + k * HASH_BLOCK_BYTES + s * XXH_STRIPE_LEN));
            const __m512i x = _mm512_xor_si512(d, _mm512_loadu_si512((const void *)(key + s)));
            prod = _mm512_add_epi64(prod, _mm512_mul_epu32(x, _mm512_srli_epi64(x, 32)));
            data = _mm512_add_epi64(data, d);
            nan |= _mm512_cmpgt_epi32_mask(_mm512_and_si512(d, magnitude), inf);
        }
        /* lane i takes lane i ^ 1's data */
        data = _mm512_shuffle_epi32(data, (_MM_PERM_ENUM)_MM_SHUFFLE(1, 0, 3, 2));
        _mm512_storeu_si512((void *)(out + k * XXH_ACC_NB), _mm512_add_epi64(prod, data));
    }
    return nan != 0;
}

static __attribute__((target("avx2"))) int block_sums_y(uint64_t *out, const unsigned char *in, size_t blocks,
                                                        const uint64_t *key)
{
    const __m256i magnitude = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    __m256i nan = _mm256_setzero_si256();
    for (size_t k = 0; k < blocks; k++) {
        __m256i prod[2], data[2];
        for (int h = 0; h < 2; h++)
            prod[h] = data[h] = _mm256_setzero_si256();
        for (size_t s = 0; s < HASH_STRIPES_PER_BLOCK; s++)
            for (int h = 0; h < 2; h++) {
                const __m256i d =
                    _mm256_loadu_si256((const void *)(in + k * HASH_BLOCK_BYTES + s * XXH_STRIPE_LEN + 32 * h));
                const __m256i x = _mm256_xor_si256(d, _mm256_loadu_si256((const void *)(key + s + 4 * h)));
                prod[h] = _mm256_add_epi64(prod[h], _mm256_mul_epu32(x, _mm256_srli_epi64(x, 32)));
                data[h] = _mm256_add_epi64(data[h], d);
                nan = _mm256_or_si256(nan, _mm256_cmpgt_epi32(_mm256_and_si256(d, magnitude), inf));
            }
        for (int h = 0; h < 2; h++)
            _mm256_storeu_si256((void *)(out + k * XXH_ACC_NB + 4 * h),
                                _mm256_add_epi64(prod[h], _mm256_shuffle_epi32(data[h], _MM_SHUFFLE(1, 0, 3, 2))));
    }
    return !_mm256_testz_si256(nan, nan);
}
#else
#define HASH_X86 0
#endif

static simd_switch hash_simd = SIMD_SWITCH_INIT;

int hash_set_simd(int enabled)
{
    return simd_set(&hash_simd, enabled);
}

static int hash_block_sums(uint64_t *out, const unsigned char *in, size_t blocks, const uint64_t *key)
{
#if HASH_X86
    switch (simd_path(&hash_simd)) {
    case SIMD_PATH_AVX512:
        return block_sums_z(out, in, blocks, key);
    case SIMD_PATH_AVX2:
        return block_sums_y(out, in, blocks, key);
    default:
        break;
    }
#endif
    return block_sums_scalar(out, in, blocks, key);
}

int hash_params_part(uint64_t *parts, const float *params, size_t n, size_t lo, size_t hi)
{
    if (hi > n)
        hi = n;
    if (lo >= hi)
        return 0;
    const size_t full = hash_parts_words(n) / XXH_ACC_NB;
    size_t k0 = lo / HASH_PART_FLOATS, k1 = hi / HASH_PART_FLOATS;
    if (k1 > full)
        k1 = full;
    int nan = 0;
    size_t rest = lo;   /* floats past the piece's full blocks: scanned only */
    if (k0 < k1) {
        uint64_t key[HASH_KEYS];
        hash_load_key(key, XXH3_kSecret, HASH_KEYS);
        nan = hash_block_sums(parts + k0 * XXH_ACC_NB, (const unsigned char *)(params + k0 * HASH_PART_FLOATS),
                              k1 - k0, key);
        rest = k1 * HASH_PART_FLOATS;
    }
    if (rest < hi)
        nan |= hash_any_nan32(params + rest, hi - rest);
    return nan;
}

/* acc += block k's sums, then XXH3_scrambleAcc_scalar's steps, for each
 * block, on locals (the header's scramble keeps acc in memory: a store and
 * a reload in each block's chain). Kept scalar: the eight lanes are
 * independent chains of a few cycles, and gcc's SSE2 version of the loop
 * turned the multiply into a chain of 17 shifts and adds. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static void join_blocks(uint64_t *acc, const uint64_t *parts, size_t blocks, const unsigned char *secret)
{
    uint64_t a[XXH_ACC_NB], key[XXH_ACC_NB];
    memcpy(a, acc, sizeof a);
    hash_load_key(key, secret, XXH_ACC_NB);
    for (size_t k = 0; k < blocks; k++)
#if defined(__clang__)
        #pragma clang loop vectorize(disable) unroll(full)
#elif defined(__GNUC__)
        #pragma GCC unroll 8
#endif
        for (size_t i = 0; i < XXH_ACC_NB; i++) {
            uint64_t x = a[i] + parts[k * XXH_ACC_NB + i];
            x ^= x >> 47;
            x ^= key[i];
            a[i] = x * XXH_PRIME32_1;
        }
    memcpy(acc, a, sizeof a);
}

/* XXH3's long input after its full blocks: the stripes of the last partial
 * block, the last stripe (ending at the input's end) and the merge. tail
 * holds the input's bytes from `first` on (first <= blocks * 1024 and
 * first <= len - 64), as little-endian as XXH3 reads them. */
static uint64_t long_tail(xxh_u64 *acc, const unsigned char *tail, size_t first, size_t blocks, size_t len)
{
    const xxh_u8 *secret = XXH3_kSecret;
    const size_t stripes = (len - 1 - blocks * HASH_BLOCK_BYTES) / XXH_STRIPE_LEN;
    for (size_t s = 0; s < stripes; s++)
        XXH3_accumulate_512_scalar(acc, tail + (blocks * HASH_BLOCK_BYTES - first) + s * XXH_STRIPE_LEN,
                                   secret + s * XXH_SECRET_CONSUME_RATE);
    XXH3_accumulate_512_scalar(acc, tail + (len - XXH_STRIPE_LEN - first),
                               secret + sizeof XXH3_kSecret - XXH_STRIPE_LEN - XXH_SECRET_LASTACC_START);
    return (uint64_t)XXH3_mergeAccs(acc, secret + XXH_SECRET_MERGEACCS_START, (xxh_u64)len * XXH_PRIME64_1);
}

uint64_t hash_params_join(const uint64_t *parts, const float *params, size_t n)
{
    const size_t len = n * sizeof(float);
    if (len <= XXH3_MIDSIZE_MAX)
        return hash_params(params, n);   /* XXH3's short inputs have no blocks */
    XXH_ALIGN(XXH_ACC_ALIGN) xxh_u64 acc[XXH_ACC_NB] = XXH3_INIT_ACC;
    const size_t blocks = hash_full_blocks(n);
    join_blocks(acc, parts, blocks, XXH3_kSecret + sizeof XXH3_kSecret - XXH_STRIPE_LEN);
    /* The stripes after the full blocks read θ's bytes as XXH3 does: on a
     * big-endian host from a little-endian copy of the tail (the last
     * partial block and the stripe ending at len, at most 1088 bytes; no NaN
     * here, the caller checked). */
#if HASH_BIG_ENDIAN
    unsigned char tail[HASH_BLOCK_BYTES + XXH_STRIPE_LEN];
    const size_t first =
        blocks * HASH_BLOCK_BYTES < len - XXH_STRIPE_LEN ? blocks * HASH_BLOCK_BYTES : len - XXH_STRIPE_LEN;
    bytes_put_le32_words(tail, params + first / 4, (len - first) / 4);
    return long_tail(acc, tail, first, blocks, len);
#else
    return long_tail(acc, (const unsigned char *)params, 0, blocks, len);
#endif
}

/* ---- the tensor hashes in parts (hash.h) ----
 *
 * ls_tensor_hash of a float32 tensor is XXH3 over a header (name, dtype,
 * shape) followed by the tensor's bytes, so block k of its input is the
 * 1024 bytes from byte 1024k - head_len of the tensor: float-aligned only
 * when the header's length is. The sums of a block read it as bytes, so any
 * alignment will do on a little-endian host; a big-endian one hashes each
 * tensor whole (its floats' bytes reversed) in the join. A block is summed
 * by the piece that holds it whole; the few that straddle a piece's edge or
 * hold header bytes are summed in the join. */
typedef struct {
    size_t offset, count;   /* the tensor's floats in θ */
    size_t head_at, head_len;   /* its header's bytes in head */
    size_t blocks;          /* full blocks of its input (0 up to 1024 bytes) */
    size_t part_at;         /* its blocks' sums from parts[part_at] */
} hash_span;

struct hash_tensors {
    size_t n, n_params, piece;
    hash_span *span;        /* [n] */
    unsigned char *head;    /* the headers, back to back */
    uint64_t *parts;        /* the blocks' sums, 8 words a block */
    uint64_t key[HASH_KEYS];
};

/* ls_tensor_hash's header: the name and dtype with their 0 bytes, ndim and
 * each dimension as 8 bytes little-endian. */
static size_t tensor_head(unsigned char *out, const ls_tensor *t)
{
    size_t len = strlen(t->name) + 1;
    if (out != NULL)
        memcpy(out, t->name, len);
    static const char dtype[] = "float32";
    if (out != NULL)
        memcpy(out + len, dtype, sizeof dtype);
    len += sizeof dtype;
    for (size_t d = 0; d <= t->ndim; d++, len += 8)
        if (out != NULL)
            bytes_put_le64(out + len, d == 0 ? (uint64_t)t->ndim : (uint64_t)t->shape[d - 1]);
    return len;
}

ls_status hash_tensors_create(hash_tensors **out, const ls_tensor *tensors, size_t n, size_t n_params, size_t piece,
                              ls_err *err)
{
    *out = NULL;
    if (piece == 0 || piece % HASH_PART_FLOATS != 0)
        return ls_fail(err, LS_EINVAL, "tensor hashes: pieces of %zu floats (a multiple of %d)", piece,
                       HASH_PART_FLOATS);
    size_t head = 0, words = 0;
    for (size_t i = 0; i < n; i++) {
        const ls_tensor *t = &tensors[i];
        size_t count = 1;
        int over = t->ndim > 4;
        for (size_t d = 0; d < t->ndim && !over; d++) {
            over = t->shape[d] != 0 && count > n_params / t->shape[d];
            count *= t->shape[d];
        }
        if (t->name == NULL || over || t->offset > n_params || count > n_params - t->offset)
            return ls_fail(err, LS_EINVAL, "tensor hashes: tensor %zu lies outside the %zu parameters", i, n_params);
        const size_t h = tensor_head(NULL, t), len = h + count * sizeof(float);
        head += h;
        if (len > XXH3_MIDSIZE_MAX)
            words += XXH_ACC_NB * ((len - 1) / HASH_BLOCK_BYTES);
    }
    hash_tensors *ht = calloc(1, sizeof *ht);
    /* One allocation: the sums (each block's 64 bytes on a cache line of
     * their own, as different threads write neighbouring blocks), the
     * spans, the headers. */
    const size_t bytes = words * sizeof(uint64_t) + n * sizeof(hash_span) + head + 1;
    void *mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (ht == NULL || mem == NULL) {
        free(ht);
        free(mem);
        return ls_fail(err, LS_ENOMEM, "tensor hashes: out of memory");
    }
    ht->parts = mem;
    ht->span = (hash_span *)(ht->parts + words);
    ht->head = (unsigned char *)(ht->span + n);
    ht->n = n;
    ht->n_params = n_params;
    ht->piece = piece;
    hash_load_key(ht->key, XXH3_kSecret, HASH_KEYS);
    size_t at = 0, part_at = 0;
    for (size_t i = 0; i < n; i++) {
        const ls_tensor *t = &tensors[i];
        hash_span *s = &ht->span[i];
        s->count = 1;
        for (size_t d = 0; d < t->ndim; d++)
            s->count *= t->shape[d];
        s->offset = t->offset;
        s->head_at = at;
        s->head_len = tensor_head(ht->head + at, t);
        at += s->head_len;
        const size_t len = s->head_len + s->count * sizeof(float);
        s->blocks = len > XXH3_MIDSIZE_MAX ? (len - 1) / HASH_BLOCK_BYTES : 0;
        s->part_at = part_at;
        part_at += XXH_ACC_NB * s->blocks;
    }
    *out = ht;
    return LS_OK;
}

void hash_tensors_destroy(hash_tensors *ht)
{
    if (ht == NULL)
        return;
    free(ht->parts);
    free(ht);
}

/* The input's bytes [pos, pos + len) of tensor i: its header, then θ's. */
static void tensor_bytes(const hash_tensors *ht, size_t i, const float *params, size_t pos, size_t len,
                         unsigned char *out)
{
    const hash_span *s = &ht->span[i];
    for (; len > 0 && pos < s->head_len; len--)
        *out++ = ht->head[s->head_at + pos++];
    if (len > 0)
        memcpy(out, (const unsigned char *)(params + s->offset) + (pos - s->head_len), len);
}

void hash_tensors_part(hash_tensors *ht, const float *params, size_t lo, size_t hi)
{
    if (HASH_BIG_ENDIAN || ht == NULL)
        return;
    for (size_t i = 0; i < ht->n; i++) {
        const hash_span *s = &ht->span[i];
        if (s->blocks == 0 || hi <= s->offset || lo >= s->offset + s->count)
            continue;
        /* the piece's bytes of the tensor, then the blocks inside them */
        const size_t a = lo > s->offset ? lo - s->offset : 0;
        const size_t b = (hi < s->offset + s->count ? hi : s->offset + s->count) - s->offset;
        const size_t k0 = (a * sizeof(float) + s->head_len + HASH_BLOCK_BYTES - 1) / HASH_BLOCK_BYTES;
        size_t k1 = (b * sizeof(float) + s->head_len) / HASH_BLOCK_BYTES;
        if (k1 > s->blocks)
            k1 = s->blocks;
        if (k0 < k1)
            (void)hash_block_sums(ht->parts + s->part_at + XXH_ACC_NB * k0,
                                  (const unsigned char *)(params + s->offset) + k0 * HASH_BLOCK_BYTES - s->head_len,
                                  k1 - k0, ht->key);
    }
}

/* Whether hash_tensors_part summed block k of tensor i: the block holds no
 * header byte and lies whole in the piece that holds its first byte. */
static int block_in_piece(const hash_tensors *ht, const hash_span *s, size_t k)
{
    if (k * HASH_BLOCK_BYTES < s->head_len)
        return 0;
    const size_t r = k * HASH_BLOCK_BYTES - s->head_len;   /* the block's first byte in the tensor */
    const size_t j = (s->offset + r / sizeof(float)) / ht->piece;
    size_t end = (j + 1) * ht->piece;
    if (end > s->offset + s->count)
        end = s->offset + s->count;
    return r + HASH_BLOCK_BYTES <= (end - s->offset) * sizeof(float);
}

void hash_tensors_join(hash_tensors *ht, const float *params, int parts_fresh, uint64_t *out)
{
    for (size_t i = 0; i < ht->n; i++) {
        const hash_span *s = &ht->span[i];
        const size_t len = s->head_len + s->count * sizeof(float);
        if (HASH_BIG_ENDIAN) {
            XXH3_state_t st;   /* the header, then the floats as little-endian bytes */
            XXH3_64bits_reset(&st);
            XXH3_64bits_update(&st, ht->head + s->head_at, s->head_len);
            unsigned char chunk[HASH_CHUNK * 4];
            for (size_t j = 0; j < s->count; j += HASH_CHUNK) {
                const size_t c = s->count - j < HASH_CHUNK ? s->count - j : HASH_CHUNK;
                bytes_put_le32_words(chunk, params + s->offset + j, c);
                XXH3_64bits_update(&st, chunk, c * 4);
            }
            out[i] = (uint64_t)XXH3_64bits_digest(&st);
            continue;
        }
        if (len <= XXH3_MIDSIZE_MAX) {   /* a short input: XXH3 without stripes */
            unsigned char in[XXH3_MIDSIZE_MAX];
            tensor_bytes(ht, i, params, 0, len, in);
            out[i] = (uint64_t)XXH3_64bits(in, len);
            continue;
        }
        uint64_t *parts = ht->parts + s->part_at;
        const unsigned char *data = (const unsigned char *)(params + s->offset);
        size_t k = 0;
        for (; k < s->blocks && k * HASH_BLOCK_BYTES < s->head_len; k++) {   /* blocks with header bytes */
            unsigned char block[HASH_BLOCK_BYTES];
            tensor_bytes(ht, i, params, k * HASH_BLOCK_BYTES, HASH_BLOCK_BYTES, block);
            (void)hash_block_sums(parts + XXH_ACC_NB * k, block, 1, ht->key);
        }
        if (!parts_fresh && k < s->blocks)   /* every other block from θ, in one pass */
            (void)hash_block_sums(parts + XXH_ACC_NB * k, data + k * HASH_BLOCK_BYTES - s->head_len, s->blocks - k,
                                  ht->key);
        for (; parts_fresh && k < s->blocks; k++)
            if (!block_in_piece(ht, s, k))
                (void)hash_block_sums(parts + XXH_ACC_NB * k, data + k * HASH_BLOCK_BYTES - s->head_len, 1, ht->key);
        XXH_ALIGN(XXH_ACC_ALIGN) xxh_u64 acc[XXH_ACC_NB] = XXH3_INIT_ACC;
        join_blocks(acc, parts, s->blocks, XXH3_kSecret + sizeof XXH3_kSecret - XXH_STRIPE_LEN);
        unsigned char tail[HASH_BLOCK_BYTES + XXH_STRIPE_LEN];
        const size_t first =
            s->blocks * HASH_BLOCK_BYTES < len - XXH_STRIPE_LEN ? s->blocks * HASH_BLOCK_BYTES : len - XXH_STRIPE_LEN;
        tensor_bytes(ht, i, params, first, len - first, tail);
        out[i] = long_tail(acc, tail, first, s->blocks, len);
    }
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
    bytes_put_le64(tail, param_hash0);
    XXH3_64bits_update(&state, tail, sizeof tail);
    return (uint64_t)XXH3_64bits_digest(&state);
}

uint64_t hash_traj_next(uint64_t traj_prev, uint64_t param_hash, double loss)
{
    unsigned char buf[24];
    bytes_put_le64(buf, traj_prev);
    bytes_put_le64(buf + 8, param_hash);
    bytes_put_le64(buf + 16, hash_loss_bits(loss));
    return (uint64_t)XXH3_64bits(buf, sizeof buf);
}

/* ---- the canonical tensor hash (include/lockstep.h, LS_TENSOR_HASH_FORMAT) ----
 *
 * A tensor of any framework is hashed through its bytes, with its name,
 * dtype and shape in front so that two tensors with the same bytes but
 * another name, dtype or shape never hash alike. Elements are taken as the
 * bytes the framework holds (bfloat16 and float16 as their 2-byte patterns):
 * nothing is converted, so the hash says exactly whether two runs hold the
 * same bits. */

static const struct {
    const char *name;
    size_t size;
} hash_dtypes[] = {
    { "float32", 4 }, { "float64", 8 }, { "float16", 2 }, { "bfloat16", 2 }, { "int64", 8 },
    { "int32", 4 },   { "int16", 2 },   { "int8", 1 },    { "uint8", 1 },    { "bool", 1 },
};

size_t ls_dtype_size(const char *dtype)
{
    for (size_t i = 0; dtype != NULL && i < sizeof hash_dtypes / sizeof hash_dtypes[0]; i++)
        if (strcmp(dtype, hash_dtypes[i].name) == 0)
            return hash_dtypes[i].size;
    return 0;
}

ls_status ls_tensor_check(const ls_tensor_data *t, ls_err *err)
{
    if (t == NULL)
        return ls_fail(err, LS_EINVAL, "tensor: NULL");
    if (t->name == NULL || t->name[0] == 0)
        return ls_fail(err, LS_EINVAL, "tensor: empty name");
    size_t nl = strlen(t->name);
    if (nl > LS_TENSOR_NAME_MAX)
        return ls_fail(err, LS_EINVAL, "tensor %.40s...: name of %zu bytes (at most %d)", t->name, nl,
                       LS_TENSOR_NAME_MAX);
    if (strpbrk(t->name, "\n\r") != NULL)
        return ls_fail(err, LS_EINVAL, "tensor '%s': name holds a line break", t->name);
    size_t es = ls_dtype_size(t->dtype);
    if (es == 0)
        return ls_fail(err, LS_EINVAL, "tensor '%s': unknown dtype '%s' (float32, float64, float16, bfloat16, int64, "
                       "int32, int16, int8, uint8, bool)", t->name, t->dtype != NULL ? t->dtype : "(null)");
    if (t->ndim > LS_TENSOR_NDIM_MAX)
        return ls_fail(err, LS_EINVAL, "tensor '%s': %zu dimensions (at most %d)", t->name, t->ndim,
                       LS_TENSOR_NDIM_MAX);
    if (t->ndim > 0 && t->shape == NULL)
        return ls_fail(err, LS_EINVAL, "tensor '%s': %zu dimensions but no shape", t->name, t->ndim);
    size_t count = 1;
    for (size_t i = 0; i < t->ndim; i++) {
        if (t->shape[i] != 0 && count > SIZE_MAX / t->shape[i])
            return ls_fail(err, LS_EINVAL, "tensor '%s': shape overflows", t->name);
        count *= t->shape[i];
    }
    if (count > SIZE_MAX / es)
        return ls_fail(err, LS_EINVAL, "tensor '%s': shape overflows", t->name);
    if (count * es != t->nbytes)
        return ls_fail(err, LS_EINVAL, "tensor '%s': nbytes %zu, but its shape and dtype %s make %zu", t->name,
                       t->nbytes, t->dtype, count * es);
    if (t->nbytes > 0 && t->data == NULL)
        return ls_fail(err, LS_EINVAL, "tensor '%s': no data", t->name);
    return LS_OK;
}

uint64_t ls_tensor_hash(const ls_tensor_data *t)
{
    if (t == NULL || t->name == NULL || t->dtype == NULL)
        return 0;
    XXH3_state_t stt;
    XXH3_64bits_reset(&stt);
    XXH3_64bits_update(&stt, t->name, strlen(t->name) + 1);   /* with its 0 byte */
    XXH3_64bits_update(&stt, t->dtype, strlen(t->dtype) + 1);
    unsigned char b[8];
    bytes_put_le64(b, (uint64_t)t->ndim);
    XXH3_64bits_update(&stt, b, 8);
    for (size_t i = 0; i < t->ndim; i++) {
        bytes_put_le64(b, (uint64_t)t->shape[i]);
        XXH3_64bits_update(&stt, b, 8);
    }
    if (t->nbytes > 0 && t->data != NULL) {
#if HASH_BIG_ENDIAN
        /* Each element's bytes reversed into little-endian order. */
        size_t es = ls_dtype_size(t->dtype);
        unsigned char chunk[4096];
        const unsigned char *p = t->data;
        for (size_t off = 0; off < t->nbytes;) {
            size_t m = t->nbytes - off < sizeof chunk ? t->nbytes - off : sizeof chunk;
            m -= m % (es ? es : 1);
            for (size_t e = 0; e < m; e += es)
                for (size_t k = 0; k < es; k++)
                    chunk[e + k] = p[off + e + es - 1 - k];
            XXH3_64bits_update(&stt, chunk, m);
            off += m;
        }
#else
        XXH3_64bits_update(&stt, t->data, t->nbytes);
#endif
    }
    return XXH3_64bits_digest(&stt);
}

void ls_tensor_from_view(const ls_tensor_view *v, ls_tensor_data *out)
{
    out->name = v->name;
    out->dtype = "float32";
    out->ndim = v->ndim;
    out->shape = v->shape;
    out->data = v->data;
    out->nbytes = v->count * sizeof(float);
}

static int hash_name_cmp(const void *a, const void *b, void *names)
{
    const char *const *n = names;
    return strcmp(n[*(const size_t *)a], n[*(const size_t *)b]);
}

/* A small insertion sort of indices by name: tensor lists are short (tens
 * to a few thousand), and qsort_r is not in C11. */
static void hash_sort_idx(size_t *idx, size_t n, const char *const *names)
{
    for (size_t i = 1; i < n; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && hash_name_cmp(&idx[j - 1], &v, (void *)names) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

static void hash_feed_named(XXH3_state_t *stt, const char *name, uint64_t h)
{
    unsigned char b[8];
    XXH3_64bits_update(stt, name, strlen(name) + 1);
    bytes_put_le64(b, h);
    XXH3_64bits_update(stt, b, 8);
}

uint64_t ls_tensor_set_hash(const char *const *names, const uint64_t *hashes, size_t n)
{
    XXH3_state_t stt;
    XXH3_64bits_reset(&stt);
    size_t stack_idx[256];
    size_t *idx = n <= 256 ? stack_idx : malloc(n * sizeof *idx);
    if (idx != NULL) {
        for (size_t j = 0; j < n; j++)
            idx[j] = j;
        hash_sort_idx(idx, n, names);
        for (size_t i = 0; i < n; i++)
            hash_feed_named(&stt, names[idx[i]], hashes[idx[i]]);
        if (idx != stack_idx)
            free(idx);
    } else {
        /* No memory for an index (the function has no error to return):
         * each next name found by a scan, the smallest above the last one
         * taken. Quadratic, and only when malloc failed; names are unique
         * (the recorder refuses duplicates). */
        const char *prev = NULL;
        for (size_t i = 0; i < n; i++) {
            size_t k = n;
            for (size_t j = 0; j < n; j++)
                if ((prev == NULL || strcmp(names[j], prev) > 0) && (k == n || strcmp(names[j], names[k]) < 0))
                    k = j;
            if (k == n)
                break;
            hash_feed_named(&stt, names[k], hashes[k]);
            prev = names[k];
        }
    }
    return XXH3_64bits_digest(&stt);
}
