/* test_hash.c — the parameter and trajectory hashes against independently built
 * byte strings.
 *
 * record/hash.c compiles its own copy of XXH3 (XXH_INLINE_ALL); these tests
 * hash hand-built little-endian buffers with the shared libxxhash instead, so
 * the byte layout (endianness, NaN canonicalisation, field order) and the
 * hash function itself are each checked by a second path. The one hard-coded
 * value, XXH3_64bits("") = 0x2d06800538d394c2, is xxHash's published
 * known answer (its sanity tests and documentation).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "record/hash.h"

/* Little-endian bytes written with shifts: independent of the host's order. */
static void put32(unsigned char *dst, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        dst[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *dst, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        dst[i] = (unsigned char)(v >> (8 * i));
}

static float f_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double d_of_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint32_t bits_of_f(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Deterministic test data: SplitMix64 mapped to ordinary floats in [-2, 2). */
static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void fill(float *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((double)(splitmix(&seed) >> 11) / 9007199254740992.0 * 4.0 - 2.0);
}

/* The reference: XXH3 (shared library) over an explicit LE buffer with NaN
 * replaced by 0x7fc00000, as hash.h defines param_hash. */
static uint64_t ref_params(const float *p, size_t n)
{
    unsigned char *buf = malloc(n * 4 + 1);
    assert_non_null(buf);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = bits_of_f(p[i]);
        if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
            u = 0x7fc00000u;
        put32(buf + 4 * i, u);
    }
    uint64_t h = XXH3_64bits(buf, n * 4);
    free(buf);
    return h;
}

static void test_empty_known_answer(void **state)
{
    (void)state;
    const uint64_t kat = UINT64_C(0x2d06800538d394c2);
    assert_true(XXH3_64bits(NULL, 0) == kat);
    assert_true(hash_bytes("", 0) == kat);
    assert_true(hash_params(NULL, 0) == kat);
}

static void test_bytes_matches_library(void **state)
{
    (void)state;
    unsigned char buf[3000];
    uint64_t s = 7;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)splitmix(&s);
    /* Lengths cross XXH3's internal size classes (16, 128, 240, stripes). */
    const size_t lens[] = {1, 3, 8, 16, 17, 128, 129, 240, 241, 1024, 2999, 3000};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
        assert_true(hash_bytes(buf, lens[k]) == XXH3_64bits(buf, lens[k]));
}

static void test_params_match_le_buffer(void **state)
{
    (void)state;
    /* 1024 is the streaming chunk; sizes straddle it. */
    const size_t sizes[] = {1, 2, 3, 17, 60, 1023, 1024, 1025, 2048, 5003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        float *p = malloc(n * sizeof *p);
        assert_non_null(p);
        fill(p, n, 100 + k);
        uint64_t fast = hash_params(p, n);
        assert_true(fast == ref_params(p, n));
        /* One NaN anywhere forces the streamed path; it must agree with the
         * reference built the same way. */
        p[n - 1] = f_of_bits(0x7fc00000u);
        assert_true(hash_params(p, n) == ref_params(p, n));
        if (n > 1)
            assert_true(hash_params(p, n) != fast);
        free(p);
    }
}

static void test_nan_payloads_hash_equal(void **state)
{
    (void)state;
    const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7fc00001u, 0x7f800001u,
                             0xff800001u, 0x7fffffffu, 0xffffffffu, 0x7fa5a5a5u};
    enum { N = 2500 };
    float *p = malloc(N * sizeof *p);
    assert_non_null(p);
    fill(p, N, 42);
    p[5] = f_of_bits(nans[0]);
    p[1500] = f_of_bits(nans[0]);
    uint64_t canon = hash_params(p, N);
    assert_true(canon == ref_params(p, N));
    for (size_t k = 1; k < sizeof nans / sizeof nans[0]; k++) {
        p[5] = f_of_bits(nans[k]);
        p[1500] = f_of_bits(nans[(k + 3) % (sizeof nans / sizeof nans[0])]);
        assert_true(hash_params(p, N) == canon);
    }
    /* Infinities are not NaN and stay distinct. */
    p[5] = f_of_bits(0x7f800000u);
    assert_true(hash_params(p, N) != canon);
    free(p);
}

static void test_signed_zero_differs(void **state)
{
    (void)state;
    float a[4] = {1.0f, 0.0f, 2.0f, 3.0f};
    float b[4] = {1.0f, 0.0f, 2.0f, 3.0f};
    b[1] = f_of_bits(0x80000000u);
    assert_true(hash_params(a, 4) != hash_params(b, 4));
    assert_true(hash_params(b, 4) == ref_params(b, 4));
}

static void test_loss_bits(void **state)
{
    (void)state;
    assert_true(hash_loss_bits(0.0) == UINT64_C(0));
    assert_true(hash_loss_bits(d_of_bits(UINT64_C(0x8000000000000000))) ==
                UINT64_C(0x8000000000000000));
    assert_true(hash_loss_bits(1.0) == UINT64_C(0x3ff0000000000000));
    assert_true(hash_loss_bits(d_of_bits(UINT64_C(0x7ff0000000000000))) ==
                UINT64_C(0x7ff0000000000000));
    const uint64_t nans[] = {UINT64_C(0x7ff8000000000000), UINT64_C(0xfff8000000000000),
                             UINT64_C(0x7ff0000000000001), UINT64_C(0x7ff8dead0000beef),
                             UINT64_C(0xffffffffffffffff)};
    for (size_t k = 0; k < sizeof nans / sizeof nans[0]; k++)
        assert_true(hash_loss_bits(d_of_bits(nans[k])) == UINT64_C(0x7ff8000000000000));
    /* bits_to_double is the exact inverse on any pattern, NaN payloads included. */
    const uint64_t pats[] = {0, UINT64_C(0x8000000000000000), UINT64_C(0x7ff0000000000001),
                             UINT64_C(0x400921fb54442d18), UINT64_C(0x0000000000000001)};
    for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++) {
        double d = hash_bits_to_double(pats[k]);
        uint64_t back;
        memcpy(&back, &d, sizeof back);
        assert_true(back == pats[k]);
    }
}

static void test_traj0(void **state)
{
    (void)state;
    const char *cfgs[] = {"", "model=mlp\nseed=1\n", "batch=64\nlr=0x1.99999999999ap-4\n"};
    const uint64_t ph[] = {0, UINT64_C(0x0123456789abcdef), UINT64_C(0xfedcba9876543210)};
    for (size_t c = 0; c < 3; c++) {
        for (size_t k = 0; k < 3; k++) {
            size_t len = strlen(cfgs[c]);
            unsigned char buf[128];
            memcpy(buf, cfgs[c], len);
            put64(buf + len, ph[k]);
            assert_true(hash_traj0(cfgs[c], ph[k]) == XXH3_64bits(buf, len + 8));
        }
    }
    /* A long config exercises the streamed path beyond one stripe block. */
    char *big = malloc(5001);
    assert_non_null(big);
    for (int i = 0; i < 5000; i++)
        big[i] = (char)('a' + i % 26);
    big[5000] = 0;
    unsigned char *buf = malloc(5008);
    assert_non_null(buf);
    memcpy(buf, big, 5000);
    put64(buf + 5000, ph[1]);
    assert_true(hash_traj0(big, ph[1]) == XXH3_64bits(buf, 5008));
    free(buf);
    free(big);
}

static void test_traj_next(void **state)
{
    (void)state;
    const uint64_t prev = UINT64_C(0x1111222233334444), ph = UINT64_C(0xa5a5a5a55a5a5a5a);
    const uint64_t losses[] = {UINT64_C(0x3fe0000000000000), 0, UINT64_C(0x8000000000000000),
                               UINT64_C(0x7ff0000000000000)};
    for (size_t k = 0; k < sizeof losses / sizeof losses[0]; k++) {
        unsigned char buf[24];
        put64(buf, prev);
        put64(buf + 8, ph);
        put64(buf + 16, losses[k]);
        assert_true(hash_traj_next(prev, ph, d_of_bits(losses[k])) == XXH3_64bits(buf, 24));
    }
    /* -0.0 and +0.0 losses give different trajectories. */
    assert_true(hash_traj_next(prev, ph, 0.0) !=
                hash_traj_next(prev, ph, d_of_bits(UINT64_C(0x8000000000000000))));
    /* Every NaN loss hashes as the canonical NaN. */
    unsigned char buf[24];
    put64(buf, prev);
    put64(buf + 8, ph);
    put64(buf + 16, UINT64_C(0x7ff8000000000000));
    uint64_t canon = XXH3_64bits(buf, 24);
    assert_true(hash_traj_next(prev, ph, d_of_bits(UINT64_C(0xfff0000000000123))) == canon);
    assert_true(hash_traj_next(prev, ph, d_of_bits(UINT64_C(0x7ff8000000000000))) == canon);
    /* Field order matters: swapping prev and param hash changes the result. */
    assert_true(hash_traj_next(ph, prev, 0.5) != hash_traj_next(prev, ph, 0.5));
}
/* Random bits over every exponent, any NaN turned into 1.0f's bits. */
static void fill_bits(float *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)(splitmix(&seed) >> 32);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            u = 0x3f800000u;
        p[i] = f_of_bits(u);
    }
    if (n > 3)
        p[n / 2] = f_of_bits(0x7f800000u);   /* infinity is not a NaN */
}

/* Cut [0, n) into pieces at random multiples of HASH_PART_FLOATS (some
 * empty, some the whole), hash them in a shuffled order; returns the OR of
 * the pieces' NaN flags and, per piece, which ones reported. */
/* order[0, n) = 0 .. n - 1 in a random order (Fisher-Yates). */
static void shuffled(size_t *order, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(splitmix(seed) % i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

static int hash_in_pieces(uint64_t *parts, const float *p, size_t n, uint64_t seed, int *flagged_piece,
                          size_t nan_at)
{
    enum { MAX_PIECES = 12 };
    size_t cut[MAX_PIECES + 1];
    size_t pieces = 1 + (size_t)(splitmix(&seed) % MAX_PIECES);
    const size_t blocks = (n + HASH_PART_FLOATS - 1) / HASH_PART_FLOATS;
    cut[0] = 0;
    for (size_t i = 1; i < pieces; i++) {
        size_t c = (size_t)(splitmix(&seed) % (blocks + 1)) * HASH_PART_FLOATS;
        cut[i] = c > n ? n : c;
    }
    cut[pieces] = n;
    for (size_t i = 1; i < pieces; i++)   /* sort the inner cuts */
        for (size_t j = i; j > 1 && cut[j - 1] > cut[j]; j--) {
            size_t t = cut[j];
            cut[j] = cut[j - 1];
            cut[j - 1] = t;
        }
    size_t order[MAX_PIECES];
    shuffled(order, pieces, &seed);
    int any = 0;
    *flagged_piece = 1;
    for (size_t k = 0; k < pieces; k++) {
        const size_t i = order[k];
        const int nan = hash_params_part(parts, p, n, cut[i], cut[i + 1]);
        const int holds = nan_at >= cut[i] && nan_at < cut[i + 1];
        if (nan != holds)
            *flagged_piece = 0;   /* a piece reported a NaN it does not hold, or missed one */
        any |= nan;
    }
    return any;
}

/* The join of the parts equals XXH3_64bits of the little-endian buffer as
 * the shared libxxhash computes it, for lengths around XXH3's short inputs
 * (240 bytes), its stripes (64 bytes) and blocks (1 KiB), and the MLP's
 * 269,322 parameters, on every vector path of the parts. */
static void test_parts_join_matches_library(void **state)
{
    (void)state;
    const size_t sizes[] = { 1, 59, 60, 61, 64, 65, 255, 256, 257, 271, 511, 512, 513, 1024, 4096, 4097, 5003,
                             65553, 269322 };
    const int paths[] = { 0 /* scalar */, 2 /* at most AVX2 */, 1 /* the best */ };
    size_t joins = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const size_t n = sizes[k];
        float *p = malloc(n * sizeof *p);
        unsigned char *le = malloc(n * 4);
        uint64_t *parts = malloc((hash_parts_words(n) + 1) * sizeof *parts);
        assert_true(p != NULL && le != NULL && parts != NULL);
        fill_bits(p, n, 300 + k);
        for (size_t i = 0; i < n; i++)
            put32(le + 4 * i, bits_of_f(p[i]));
        const uint64_t want = XXH3_64bits(le, n * 4);
        for (size_t pi = 0; pi < sizeof paths / sizeof paths[0]; pi++) {
            const int prev = hash_set_simd(paths[pi]);
            for (uint64_t trial = 0; trial < 4; trial++) {
                int ok;
                memset(parts, 0xa5, hash_parts_words(n) * sizeof *parts);   /* no stale words help */
                assert_int_equal(hash_in_pieces(parts, p, n, 1000 * k + trial, &ok, (size_t)-1), 0);
                if (hash_params_join(parts, p, n) != want)
                    fail_msg("n %zu, path %d, cut %llu: join differs from XXH3_64bits", n, paths[pi],
                             (unsigned long long)trial);
                joins++;
            }
            hash_set_simd(prev);
        }
        /* One float changed anywhere changes the join. */
        p[n - 1] = f_of_bits(bits_of_f(p[n - 1]) ^ 1u);
        p[0] = f_of_bits(bits_of_f(p[0]) ^ 0x80000000u);
        int ok;
        hash_in_pieces(parts, p, n, 7, &ok, (size_t)-1);
        assert_true(hash_params_join(parts, p, n) != want);
        free(p);
        free(le);
        free(parts);
    }
    printf("parts: %zu joins equal to libxxhash\n", joins);
}

/* Exactly the piece that holds a NaN reports it, wherever the NaN sits (in
 * a full block, in the last partial block, past the last stripe boundary),
 * whatever its payload, on every path; the caller then uses hash_params. */
static void test_parts_report_nan(void **state)
{
    (void)state;
    const size_t n = 4097;
    float *p = malloc(n * sizeof *p);
    uint64_t *parts = malloc(hash_parts_words(n) * sizeof *parts);
    assert_true(p != NULL && parts != NULL);
    const uint32_t nans[] = { 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xffffffffu };
    const size_t where[] = { 0, 255, 256, 1000, 3839, 3840, 4000, 4095, 4096 };
    const int paths[] = { 0, 2, 1 };
    for (size_t pi = 0; pi < sizeof paths / sizeof paths[0]; pi++) {
        const int prev = hash_set_simd(paths[pi]);
        for (size_t w = 0; w < sizeof where / sizeof where[0]; w++)
            for (size_t v = 0; v < sizeof nans / sizeof nans[0]; v++) {
                fill_bits(p, n, 9);
                p[where[w]] = f_of_bits(nans[v]);
                int ok;
                assert_int_equal(hash_in_pieces(parts, p, n, 50 + w, &ok, where[w]), 1);
                if (!ok)
                    fail_msg("path %d: NaN %08x at %zu reported by the wrong piece", paths[pi], nans[v], where[w]);
            }
        hash_set_simd(prev);
    }
    free(p);
    free(parts);
}


/* The tensor hashes in parts against libxxhash over the documented bytes
 * (ls_tensor_hash: name and dtype with their 0 bytes, ndim and the shape as
 * 8 bytes little-endian each, then the floats little-endian): random
 * layouts of θ (names of every length, so headers leave the data at every
 * byte alignment to XXH3's blocks; gaps; empty, short and long tensors),
 * pieces of several sizes hashed in a random order, on every vector path;
 * the join with the parts fresh and without them. */
static int defined_big_endian(void)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return 1;
#else
    return 0;
#endif
}

static uint64_t ref_tensor(const ls_tensor *t, const float *params)
{
    size_t count = 1, at = 0;
    for (size_t d = 0; d < t->ndim; d++)
        count *= t->shape[d];
    unsigned char *b = malloc(strlen(t->name) + 1 + 8 + 8 * (t->ndim + 1) + 4 * count);
    assert_non_null(b);
    memcpy(b, t->name, strlen(t->name) + 1);
    at += strlen(t->name) + 1;
    memcpy(b + at, "float32", 8);
    at += 8;
    put64(b + at, t->ndim);
    at += 8;
    for (size_t d = 0; d < t->ndim; d++, at += 8)
        put64(b + at, t->shape[d]);
    for (size_t i = 0; i < count; i++, at += 4)
        put32(b + at, bits_of_f(params[t->offset + i]));
    const uint64_t h = XXH3_64bits(b, at);
    free(b);
    return h;
}

static void test_tensor_parts_match_library(void **state)
{
    (void)state;
    enum { MAX_T = 9 };
    const size_t pieces[] = { 256, 512, 4096 };
    const int paths[] = { 0, 2, 1 };
    size_t checked = 0;
    for (uint64_t trial = 0; trial < 40; trial++) {
        uint64_t seed = 7000 + trial;
        ls_tensor ts[MAX_T];
        char names[MAX_T][48];
        const size_t nt = 1 + (size_t)(splitmix(&seed) % MAX_T);
        size_t n = 0;
        for (size_t i = 0; i < nt; i++) {
            const size_t len = 1 + (size_t)(splitmix(&seed) % 40);
            for (size_t c = 0; c < len; c++)
                names[i][c] = (char)('a' + (c + i) % 26);
            names[i][len] = '\0';
            n += (size_t)(splitmix(&seed) % 3 == 0 ? splitmix(&seed) % 700 : 0);   /* a gap */
            const size_t kind = (size_t)(splitmix(&seed) % 4);
            const size_t count = kind == 0 ? (size_t)(splitmix(&seed) % 70)
                                : kind == 1 ? 4096 * (1 + (size_t)(splitmix(&seed) % 5))
                                            : (size_t)(splitmix(&seed) % 30000);
            ts[i] = (ls_tensor){ .name = names[i], .offset = n };
            if (count % 16 == 0 && count > 0) {
                ts[i].ndim = 3;
                ts[i].shape[0] = count / 16;
                ts[i].shape[1] = 4;
                ts[i].shape[2] = 4;
            } else {
                ts[i].ndim = count == 1 && kind == 0 ? 0 : 1;
                ts[i].shape[0] = count;
            }
            n += count;
        }
        n += (size_t)(splitmix(&seed) % 300);
        float *p = malloc((n ? n : 1) * sizeof *p);
        assert_non_null(p);
        fill_bits(p, n, 77 + trial);
        uint64_t want[MAX_T], got[MAX_T];
        for (size_t i = 0; i < nt; i++)
            want[i] = ref_tensor(&ts[i], p);
        for (size_t pc = 0; pc < sizeof pieces / sizeof pieces[0]; pc++) {
            const size_t piece = pieces[pc], np = (n + piece - 1) / piece;
            hash_tensors *ht;
            assert_int_equal(hash_tensors_create(&ht, ts, nt, n, piece, NULL), LS_OK);
            size_t *order = malloc((np ? np : 1) * sizeof *order);
            assert_non_null(order);
            for (size_t pi = 0; pi < sizeof paths / sizeof paths[0]; pi++) {
                const int prev = hash_set_simd(paths[pi]);
                shuffled(order, np, &seed);
                for (size_t k = 0; k < np; k++) {
                    const size_t a = order[k] * piece;
                    hash_tensors_part(ht, p, a, a + piece < n ? a + piece : n);
                }
                for (int fresh = 1; fresh >= 0; fresh--) {
                    memset(got, 0, sizeof got);
                    hash_tensors_join(ht, p, fresh, got);
                    for (size_t i = 0; i < nt; i++, checked++)
                        if (got[i] != want[i])
                            fail_msg("trial %llu, piece %zu, path %d, fresh %d: tensor %zu ('%s', %zu floats at %zu) "
                                     "differs from XXH3_64bits", (unsigned long long)trial, piece, paths[pi], fresh, i,
                                     ts[i].name, ts[i].ndim ? ts[i].shape[0] : 1, ts[i].offset);
                }
                hash_set_simd(prev);
            }
            /* θ written after the parts: the join without them sees it, the
             * stale parts do not (so the parts are really used). */
            /* (Not on a big-endian host, whose join hashes each tensor whole;
             * nor with pieces of one block: every block straddles two.) */
            const int little = !defined_big_endian();
            if (little && nt > 0 && n > 0 && piece > HASH_PART_FLOATS) {
                const size_t i = nt - 1;
                size_t count = 1;
                for (size_t d = 0; d < ts[i].ndim; d++)
                    count *= ts[i].shape[d];
                if (count > 4096) {   /* every float: some lie in blocks the parts summed */
                    for (size_t j = 0; j < count; j++)
                        p[ts[i].offset + j] = f_of_bits(bits_of_f(p[ts[i].offset + j]) ^ 1u);
                    hash_tensors_join(ht, p, 1, got);   /* first: the join without parts rewrites them */
                    assert_true(got[i] != ref_tensor(&ts[i], p));
                    hash_tensors_join(ht, p, 0, got);
                    assert_true(got[i] == ref_tensor(&ts[i], p));
                    for (size_t j = 0; j < count; j++)
                        p[ts[i].offset + j] = f_of_bits(bits_of_f(p[ts[i].offset + j]) ^ 1u);
                }
            }
            free(order);
            hash_tensors_destroy(ht);
        }
        free(p);
    }
    printf("tensor parts: %zu hashes equal to libxxhash\n", checked);
}

/* Layouts that cannot be θ's are refused. */
static void test_tensor_parts_refuse(void **state)
{
    (void)state;
    hash_tensors *ht = (hash_tensors *)1;
    ls_tensor t = { .name = "w", .offset = 10, .ndim = 2, .shape = { 5, 5 } };
    assert_int_equal(hash_tensors_create(&ht, &t, 1, 34, 4096, NULL), LS_EINVAL);
    assert_null(ht);
    assert_int_equal(hash_tensors_create(&ht, &t, 1, 35, 100, NULL), LS_EINVAL);
    t.shape[1] = SIZE_MAX / 2;
    assert_int_equal(hash_tensors_create(&ht, &t, 1, 35, 4096, NULL), LS_EINVAL);
    t.shape[1] = 5;
    assert_int_equal(hash_tensors_create(&ht, &t, 1, 35, 4096, NULL), LS_OK);
    hash_tensors_destroy(ht);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_known_answer),
        cmocka_unit_test(test_bytes_matches_library),
        cmocka_unit_test(test_params_match_le_buffer),
        cmocka_unit_test(test_parts_join_matches_library),
        cmocka_unit_test(test_parts_report_nan),
        cmocka_unit_test(test_tensor_parts_match_library),
        cmocka_unit_test(test_tensor_parts_refuse),
        cmocka_unit_test(test_nan_payloads_hash_equal),
        cmocka_unit_test(test_signed_zero_differs),
        cmocka_unit_test(test_loss_bits),
        cmocka_unit_test(test_traj0),
        cmocka_unit_test(test_traj_next),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
