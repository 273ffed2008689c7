/* logic.c — layers of differentiable two-input logic gates (logic.h).
 *
 * The soft layer kernels (logic_forward / logic_backward) come as a scalar
 * twin, written as the definitions in logic.h, and SIMD paths (AVX-512F,
 * AVX2) that vectorise over lanes: every lane performs the scalar twin's
 * operations for its own element, in the same order, one rounded multiply
 * then one rounded add (never an FMA; the build pins -ffp-contract=off). The
 * only sums across lanes are the four statistics of a gate, kept in 16
 * virtual accumulators (lane l into accumulator l mod 16): a zmm register
 * holds all 16, two ymm registers hold 0..7 and 8..15, the scalar twin keeps
 * an array of 16; the final pairwise tree is done in registers with shuffles
 * that pair the same accumulators in the same order (tree_z, tree_y). Lanes
 * at or beyond n are masked: they never touch an accumulator nor dx (their x
 * may hold anything, even NaN). Rows are read in wiring order, i.e. at
 * random; they are not prefetched in software: a layer's rows sit in L2,
 * and the address work of a prefetch cost more than it saved (8% of a
 * checkerboard step, 15% of a gol step).
 *
 * LOGIC_DX_SET: a row's first update (the layer's first[] flags, computed
 * once from the wiring) adds its term to a zero vector in place of the row
 * (a masked or and-ed load, so the row's old bytes never reach the sum):
 * bit for bit the update of a cleared row, without the clearing, and on the
 * AVX-512 path (maskz) without half of the row loads (a perception layer's
 * backward: 30% faster); AVX2 loads the row and ands it with zero.
 *
 * Silent gates (AVX-512 backward): a gate whose gradient is below the
 * floor on every lane adds nothing, so the kernel writes its results
 * (+0 statistics, +0 in the rows it updates first) without its arithmetic
 * when every product is known to be finite; see "Silent gates" in
 * kernels/x86/avx512.c.
 *
 * logic_backward_lanes (samples side by side, packed) keeps one
 * vector per virtual accumulator and builds the tree vertically as the
 * accumulators come; its comment block in kernels/x86/x86.h says why its
 * shortcuts keep the bits of logic_backward run on each sample alone.
 *
 * The once-per-step functions are vectorised too, each with its scalar
 * twin: logic_coeffs works on blocks of 16 (8) gates with one gate per lane
 * and evaluates dmath_exp's exact sequence of operations on binary64 lanes
 * (tests check it against dmath_exp bit for bit) — only when a shorter
 * exp cannot vouch for its float rounding (expf8d_group_z, expf4d_group_y;
 * a test runs every float argument in [-88, 0] through both on each path);
 * logic_expand puts a gate's 16 ops on 16 lanes.
 *
 * Where the code is: this file holds the gate tables, the wiring, the hard
 * ops, the scalar twins (with logic_ref.h, the pieces the vector paths
 * reuse) and the dispatch; the SIMD paths live beside them as BLIS keeps
 * kernels/<arch>/ beside its reference kernels: kernels/x86/avx512.c and
 * kernels/x86/avx2.c, with what they share and their entry points in
 * kernels/x86/x86.h. Each vector function carries its ISA as a target
 * attribute, so the default build needs no -march flag.
 *
 * The path is chosen at run time as in engine/num/dense.c: once
 * (pthread_once) from the CPU and LOCKSTEP_SIMD ("off", "0", "scalar":
 * scalar twins; "avx2": at most AVX2), then logic_set_simd (0 off, 1 best,
 * 2 at most AVX2) through an atomic.
 *
 * Wiring uses rng_permutation with the address word  a = 4·addr + role:
 *   role 0: random wiring, the permutation of 2·out    (c = perm % in)
 *   role 1: random wiring, the relabelling permutation of in
 *   role 2: unique wiring, the shuffle of the gate order
 *   role 3: not used here (free for other wiring of the same layer address)
 * i.e. the draw for Fisher-Yates position k of role r is
 * rng_below(seed, RNG_WIRING, 4·addr + r, k, 0, k + 1). Frozen.
 */
#include "engine/models/logic/logic.h"
#include "base/simd.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/models/logic/kernels/x86/x86.h"
#include "engine/models/logic/logic_ref.h"
#include "engine/num/dmath.h"
#include "engine/num/rng.h"


/* (1, a, b, ab) coefficients of each op, from the relaxations in
 * docs/models.md (the 16 gates). */
const int LOGIC_AFFINE[LOGIC_OPS][4] = {
    { 0, 0, 0, 0 },    /*  0 FALSE */
    { 0, 0, 0, 1 },    /*  1 AND: ab */
    { 0, 1, 0, -1 },   /*  2 A AND NOT B: a - ab */
    { 0, 1, 0, 0 },    /*  3 A */
    { 0, 0, 1, -1 },   /*  4 NOT A AND B: b - ab */
    { 0, 0, 1, 0 },    /*  5 B */
    { 0, 1, 1, -2 },   /*  6 XOR: a + b - 2ab */
    { 0, 1, 1, -1 },   /*  7 OR: a + b - ab */
    { 1, -1, -1, 1 },  /*  8 NOR: 1 - (a + b - ab) */
    { 1, -1, -1, 2 },  /*  9 XNOR: 1 - (a + b - 2ab) */
    { 1, 0, -1, 0 },   /* 10 NOT B */
    { 1, 0, -1, 1 },   /* 11 A OR NOT B: 1 - b + ab */
    { 1, -1, 0, 0 },   /* 12 NOT A */
    { 1, -1, 0, 1 },   /* 13 NOT A OR B: 1 - a + ab */
    { 1, 0, 0, -1 },   /* 14 NAND: 1 - ab */
    { 1, 0, 0, 0 },    /* 15 TRUE */
};

float logic_relaxed(int idx, float a, float b)
{
    const float ab = a * b;
    switch (idx) {
    case 0: return 0.0f;
    case 1: return ab;
    case 2: return a - ab;
    case 3: return a;
    case 4: return b - ab;
    case 5: return b;
    case 6: return (a + b) - 2.0f * ab;
    case 7: return (a + b) - ab;
    case 8: return 1.0f - ((a + b) - ab);
    case 9: return 1.0f - ((a + b) - 2.0f * ab);
    case 10: return 1.0f - b;
    case 11: return (1.0f - b) + ab;
    case 12: return 1.0f - a;
    case 13: return (1.0f - a) + ab;
    case 14: return 1.0f - ab;
    default: return 1.0f;
    }
}

int logic_hard_bit(int idx, int a, int b)
{
    return (idx >> (3 - (2 * (a != 0) + (b != 0)))) & 1;
}

uint64_t logic_hard_word(int idx, uint64_t a, uint64_t b)
{
    /* One bitwise expression per op (the row of the truth table for AB =
     * 00, 01, 10, 11 is idx's bits 3, 2, 1, 0). */
    switch (idx & 15) {
    case 0: return 0;
    case 1: return a & b;
    case 2: return a & ~b;
    case 3: return a;
    case 4: return ~a & b;
    case 5: return b;
    case 6: return a ^ b;
    case 7: return a | b;
    case 8: return ~(a | b);
    case 9: return ~(a ^ b);
    case 10: return ~b;
    case 11: return a | ~b;
    case 12: return ~a;
    case 13: return ~a | b;
    case 14: return ~(a & b);
    default: return ~(uint64_t)0;
    }
}

/* ---- Coefficients, expansion, hard ops. ---- */

/* The scalar twin of logic_expand (logic.h's formulas). */
static void expand_scalar(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo,
                          size_t hi)
{
    for (size_t g = lo; g < hi; g++) {
        const float *S = stats + g * 4;
        const float *c = coef + g * 4;
        const float *q = p + g * LOGIC_OPS;
        float *d = dlogits + g * LOGIC_OPS;
        const float Y = ((c[0] * S[0] + c[1] * S[1]) + c[2] * S[2]) + c[3] * S[3];
        for (int j = 0; j < LOGIC_OPS; j++) {
            const int *f = LOGIC_AFFINE[j];
            const float F = (((float)f[0] * S[0] + (float)f[1] * S[1]) + (float)f[2] * S[2]) + (float)f[3] * S[3];
            d[j] = q[j] * (F - Y);
        }
    }
}

void logic_hard_ops(uint8_t *ops, const float *logits, size_t gates)
{
    for (size_t g = 0; g < gates; g++) {
        const float *z = logits + g * LOGIC_OPS;
        int best = 0;
        for (int i = 1; i < LOGIC_OPS; i++)
            if (z[i] > z[best])   /* strict: the lowest index wins a tie */
                best = i;
        ops[g] = (uint8_t)best;
    }
}

void logic_hard_forward(uint64_t *y, const uint64_t *x, const logic_layer *L, const uint8_t *ops, size_t words)
{
    for (size_t g = 0; g < L->out; g++) {
        const uint64_t *xa = x + (size_t)L->a[g] * words;
        const uint64_t *xb = x + (size_t)L->b[g] * words;
        uint64_t *yg = y + g * words;
        /* The op is chosen once per gate; each loop is one bitwise expression. */
        switch (ops[g] & 15) {
        case 0: for (size_t w = 0; w < words; w++) yg[w] = 0; break;
        case 1: for (size_t w = 0; w < words; w++) yg[w] = xa[w] & xb[w]; break;
        case 2: for (size_t w = 0; w < words; w++) yg[w] = xa[w] & ~xb[w]; break;
        case 3: for (size_t w = 0; w < words; w++) yg[w] = xa[w]; break;
        case 4: for (size_t w = 0; w < words; w++) yg[w] = ~xa[w] & xb[w]; break;
        case 5: for (size_t w = 0; w < words; w++) yg[w] = xb[w]; break;
        case 6: for (size_t w = 0; w < words; w++) yg[w] = xa[w] ^ xb[w]; break;
        case 7: for (size_t w = 0; w < words; w++) yg[w] = xa[w] | xb[w]; break;
        case 8: for (size_t w = 0; w < words; w++) yg[w] = ~(xa[w] | xb[w]); break;
        case 9: for (size_t w = 0; w < words; w++) yg[w] = ~(xa[w] ^ xb[w]); break;
        case 10: for (size_t w = 0; w < words; w++) yg[w] = ~xb[w]; break;
        case 11: for (size_t w = 0; w < words; w++) yg[w] = xa[w] | ~xb[w]; break;
        case 12: for (size_t w = 0; w < words; w++) yg[w] = ~xa[w]; break;
        case 13: for (size_t w = 0; w < words; w++) yg[w] = ~xa[w] | xb[w]; break;
        case 14: for (size_t w = 0; w < words; w++) yg[w] = ~(xa[w] & xb[w]); break;
        default: for (size_t w = 0; w < words; w++) yg[w] = ~(uint64_t)0; break;
        }
    }
}

/* ---- Wiring. ---- */

enum { ROLE_RANDOM_C = 0, ROLE_RANDOM_RELABEL = 1, ROLE_UNIQUE_SHUFFLE = 2, N_ROLES = 4 };

static uint64_t wire_addr(uint64_t addr, int role)
{
    return addr * N_ROLES + (uint64_t)role;
}

ls_status logic_wire_random(uint32_t *a, uint32_t *b, size_t in, size_t out, uint64_t seed, uint64_t addr,
                            ls_err *err)
{
    if (out == 0)
        return LS_OK;
    if (in == 0)
        return ls_fail(err, LS_EINVAL, "logic: a layer of %zu gates has no inputs to wire", out);
    uint32_t *c = malloc((2 * out + in) * sizeof *c);
    if (c == NULL)
        return ls_fail(err, LS_ENOMEM, "logic: out of memory for the wiring of %zu gates", out);
    uint32_t *perm2 = c, *rel = c + 2 * out;
    rng_permutation(perm2, 2 * out, seed, RNG_WIRING, wire_addr(addr, ROLE_RANDOM_C));
    rng_permutation(rel, in, seed, RNG_WIRING, wire_addr(addr, ROLE_RANDOM_RELABEL));
    for (size_t g = 0; g < out; g++) {
        a[g] = rel[perm2[g] % in];
        b[g] = rel[perm2[out + g] % in];
    }
    free(c);
    return LS_OK;
}

/* difflogic's get_unique_connections before its shuffle: the first `out`
 * pairs of the sequence (0,1),(2,3),... ; (1,2),(3,4),... ; then offset k =
 * 2, 3, ...: (0,k),(1,k+1),...,(in-1-k,in-1), a block added while the count
 * is below out and above k (difflogic's loop condition, kept so the pair
 * sequence and the cases it refuses are the same). Returns the number of
 * pairs written (<= out). */
static size_t unique_pairs(uint32_t *a, uint32_t *b, size_t in, size_t out)
{
    size_t n = 0;
    for (size_t i = 0; i + 1 < in && n < out; i += 2, n++) {
        a[n] = (uint32_t)i;
        b[n] = (uint32_t)(i + 1);
    }
    size_t count = in / 2;   /* pairs in the full first block */
    if (count < out) {
        for (size_t i = 1; i + 1 < in && n < out; i += 2, n++) {
            a[n] = (uint32_t)i;
            b[n] = (uint32_t)(i + 1);
        }
        count += (in - 1) / 2;
    }
    for (size_t k = 2; out > count && count > k; k++) {
        for (size_t i = 0; i + k < in && n < out; i++, n++) {
            a[n] = (uint32_t)i;
            b[n] = (uint32_t)(i + k);
        }
        count += k < in ? in - k : 0;
    }
    return n;
}

ls_status logic_wire_unique(uint32_t *a, uint32_t *b, size_t in, size_t out, uint64_t seed, uint64_t addr,
                            ls_err *err)
{
    if (2 * out < in)
        return ls_fail(err, LS_EINVAL,
                       "logic: unique wiring of %zu inputs needs at least %zu gates (2·out >= in), layer has %zu",
                       in, (in + 1) / 2, out);
    if (out == 0)
        return LS_OK;
    uint32_t *tmp = malloc(3 * out * sizeof *tmp);
    if (tmp == NULL)
        return ls_fail(err, LS_ENOMEM, "logic: out of memory for the wiring of %zu gates", out);
    uint32_t *sa = tmp, *sb = tmp + out, *perm = tmp + 2 * out;
    const size_t n = unique_pairs(sa, sb, in, out);
    if (n < out) {
        free(tmp);
        return ls_fail(err, LS_EINVAL,
                       "logic: unique wiring of %zu inputs gives only %zu distinct pairs, layer has %zu gates",
                       in, n, out);
    }
    rng_permutation(perm, out, seed, RNG_WIRING, wire_addr(addr, ROLE_UNIQUE_SHUFFLE));
    for (size_t g = 0; g < out; g++) {
        a[g] = sa[perm[g]];
        b[g] = sb[perm[g]];
    }
    free(tmp);
    return LS_OK;
}

/* ---- The scalar twins: the definitions in logic.h, written out. ---- */

/* A gradient below LOGIC_GRAD_FLOOR in magnitude is +0 (NaN kept: the
 * comparison is false). */
static inline float grad_floor(float d)
{
    return fabsf(d) < LOGIC_GRAD_FLOOR ? 0.0f : d;
}

void logic_forward_scalar(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld)
{
    for (size_t g = 0; g < L->out; g++) {
        const float *xa = x + (size_t)L->a[g] * ld;
        const float *xb = x + (size_t)L->b[g] * ld;
        float *yg = y + g * ld;
        const float c0 = coef[4 * g], ca = coef[4 * g + 1], cb = coef[4 * g + 2], cab = coef[4 * g + 3];
        for (size_t l = 0; l < n; l++) {
            const float av = xa[l], bv = xb[l];
            yg[l] = ((c0 + ca * av) + cb * bv) + cab * (av * bv);
        }
    }
}

/* The pairwise tree over the 16 virtual accumulators (logic.h). */
static float tree16(const float *v)
{
    return (((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])))
         + (((v[8] + v[9]) + (v[10] + v[11])) + ((v[12] + v[13]) + (v[14] + v[15])));
}

static void store_stats(float *st, const float acc[4][LOGIC_LANES], int accumulate)
{
    for (int k = 0; k < 4; k++) {
        const float s = tree16(acc[k]);
        st[k] = accumulate ? st[k] + s : s;
    }
}

ls_status logic_layer_first(uint8_t *first, int *reads_all, const logic_layer *L, ls_err *err)
{
    uint8_t *seen = calloc(L->in > 0 ? L->in : 1, 1);
    if (seen == NULL)
        return ls_fail(err, LS_ENOMEM, "logic: out of memory");
    for (size_t g = 0; g < L->out; g++) {
        first[g] = 0;
        if (!seen[L->a[g]])
            first[g] |= LOGIC_FIRST_A;
        seen[L->a[g]] = 1;
        if (!seen[L->b[g]])
            first[g] |= LOGIC_FIRST_B;
        seen[L->b[g]] = 1;
    }
    *reads_all = 1;
    for (size_t r = 0; r < L->in; r++)
        *reads_all &= seen[r];
    free(seen);
    return LS_OK;
}

/* LOGIC_DX_SET without first flags: clear lanes 0..n-1, then add. Returns
 * the flags to run with; *first_flags: L->first when rows are set in place. */
static int dx_set_plan(float *dx, const logic_layer *L, size_t n, size_t ld, int flags, const uint8_t **first_flags)
{
    *first_flags = NULL;
    if (dx == NULL || (flags & LOGIC_DX_SET) == 0)
        return flags & ~LOGIC_DX_SET;
    if (L->first != NULL && L->reads_all) {
        *first_flags = L->first;
        return flags;
    }
    for (size_t r = 0; r < L->in; r++)
        memset(dx + r * ld, 0, n * sizeof(float));
    return flags & ~LOGIC_DX_SET;
}

void logic_backward_scalar(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                           const float *coef, size_t n, size_t ld, int flags)
{
    const uint8_t *first;
    flags = dx_set_plan(dx, L, n, ld, flags, &first);
    for (size_t g = 0; g < L->out; g++) {
        const size_t ra = L->a[g], rb = L->b[g];
        const float *xa = x + ra * ld;
        const float *xb = x + rb * ld;
        const float *dg = dy + g * ld;
        const float ca = coef[4 * g + 1], cb = coef[4 * g + 2], cab = coef[4 * g + 3];
        const int fa = first != NULL && (first[g] & LOGIC_FIRST_A), fb = first != NULL && (first[g] & LOGIC_FIRST_B);
        float acc[4][LOGIC_LANES];
        memset(acc, 0, sizeof acc);
        for (size_t l = 0; l < n; l++) {
            const float d = grad_floor(dg[l]), av = xa[l], bv = xb[l];
            const float ab = av * bv;
            const size_t v = l % LOGIC_LANES;
            acc[0][v] = acc[0][v] + d;
            acc[1][v] = acc[1][v] + d * av;
            acc[2][v] = acc[2][v] + d * bv;
            acc[3][v] = acc[3][v] + d * ab;
            if (dx != NULL) {
                dx[ra * ld + l] = (fa ? 0.0f : dx[ra * ld + l]) + d * (ca + cab * bv);
                dx[rb * ld + l] = (fb ? 0.0f : dx[rb * ld + l]) + d * (cb + cab * av);
            }
        }
        store_stats(stats + 4 * g, acc, flags & LOGIC_STATS_ADD);
    }
}

/* logic_backward_lanes, written as its definition: sample by sample, each
 * with its own 16 accumulators starting at 0.0f and tree16 (LOGIC_DX_SET
 * without first flags clears whole rows). */
void logic_backward_lanes_scalar(float *dx, float *stats, size_t stats_stride, const float *dy, const float *x,
                                 const logic_layer *L, const float *coef, size_t nvl, size_t m, int flags)
{
    const size_t ld = LOGIC_LANES_LD(nvl, m);
    const uint8_t *first;
    flags = dx_set_plan(dx, L, nvl * m, ld, flags, &first);
    const int accumulate = flags & LOGIC_STATS_ADD;
    for (size_t g = 0; g < L->out; g++) {
        const size_t ra = L->a[g], rb = L->b[g];
        const float *xa = x + ra * ld;
        const float *xb = x + rb * ld;
        const float *dg = dy + g * ld;
        const float ca = coef[4 * g + 1], cb = coef[4 * g + 2], cab = coef[4 * g + 3];
        const int fa = first != NULL && (first[g] & LOGIC_FIRST_A), fb = first != NULL && (first[g] & LOGIC_FIRST_B);
        for (size_t j = 0; j < m; j++) {
            float acc[4][LOGIC_LANES];
            memset(acc, 0, sizeof acc);
            for (size_t vl = 0; vl < nvl; vl++) {
                const size_t e = vl * m + j;
                const float d = grad_floor(dg[e]), av = xa[e], bv = xb[e];
                const float ab = av * bv;
                const size_t v = vl % LOGIC_LANES;
                acc[0][v] = acc[0][v] + d;
                acc[1][v] = acc[1][v] + d * av;
                acc[2][v] = acc[2][v] + d * bv;
                acc[3][v] = acc[3][v] + d * ab;
                if (dx != NULL) {
                    dx[ra * ld + e] = (fa ? 0.0f : dx[ra * ld + e]) + d * (ca + cab * bv);
                    dx[rb * ld + e] = (fb ? 0.0f : dx[rb * ld + e]) + d * (cb + cab * av);
                }
            }
            store_stats(stats + j * stats_stride + 4 * g, acc, accumulate);
        }
    }
}

/* ---- Run-time choice of the path (base/simd.h). ---- */

enum { PATH_SCALAR = SIMD_PATH_SCALAR, PATH_AVX2 = SIMD_PATH_AVX2, PATH_AVX512 = SIMD_PATH_AVX512 };

static simd_switch simd_choice = SIMD_SWITCH_INIT;

static int current_path(void)
{
    return simd_path(&simd_choice);
}

int logic_set_simd(int enabled)
{
    return simd_set(&simd_choice, enabled);
}

const char *logic_simd_name(void)
{
    return simd_path_name(current_path());
}

void logic_expand(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo, size_t hi)
{
    const int path = current_path();
#if LOGIC_X86
    if (path == PATH_AVX512) {
        logic_avx512_expand(dlogits, stats, p, coef, lo, hi);
        return;
    }
    if (path == PATH_AVX2) {
        logic_avx2_expand(dlogits, stats, p, coef, lo, hi);
        return;
    }
#endif
    (void)path;
    expand_scalar(dlogits, stats, p, coef, lo, hi);
}

/* One block of logic_expf_lanes (64 floats) on `path`. */
static void expf_block(int path, const float *x, float *out, int shortcut)
{
#if LOGIC_X86
    if (path == PATH_AVX512) {
        logic_avx512_expf_lanes(x, out, shortcut);
        return;
    }
    if (path == PATH_AVX2) {
        logic_avx2_expf_lanes(x, out, shortcut);
        logic_avx2_expf_lanes(x + 32, out + 32, shortcut);
        return;
    }
#endif
    (void)path;
    (void)shortcut;
    for (size_t j = 0; j < 64; j++)
        out[j] = dmath_expf(x[j]);
}

void logic_expf_lanes(const float *x, float *out, size_t n, int shortcut)
{
    const int path = current_path();
    enum { BLOCK = 16 * (EXP_GROUP / 2) };
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK)
        expf_block(path, x + i, out + i, shortcut);
    if (i < n) {   /* the tail, padded with zeros */
        float a[BLOCK], r[BLOCK];
        for (size_t j = 0; j < BLOCK; j++)
            a[j] = i + j < n ? x[i + j] : 0.0f;
        expf_block(path, a, r, shortcut);
        memcpy(out + i, r, (n - i) * sizeof *out);
    }
}

void logic_exp_lanes(const double *x, double *out, size_t n)
{
    const int path = current_path();
    for (size_t i = 0; i < n; i += 8) {
        double a[8], r[8];
        int vec = path != PATH_SCALAR;
        for (size_t j = 0; j < 8; j++) {
            a[j] = i + j < n ? x[i + j] : 0.0;
            vec &= a[j] >= (double)EXP_LO && a[j] <= 0.0;
        }
#if LOGIC_X86
        if (vec && path == PATH_AVX512)
            logic_avx512_exp_lanes(a, r);
        else if (vec)
            logic_avx2_exp_lanes(a, r);
        else
#endif
            for (size_t j = 0; j < 8; j++)
                r[j] = dmath_exp(a[j]);
        (void)vec;
        for (size_t j = 0; j < 8 && i + j < n; j++)
            out[i + j] = r[j];
    }
}

void logic_coeffs(const float *logits, size_t gates, float *p, float *coef)
{
    const int path = current_path();
#if LOGIC_X86
    if (path == PATH_AVX512) {
        logic_avx512_coeffs(logits, gates, p, coef);
        return;
    }
    if (path == PATH_AVX2) {
        logic_avx2_coeffs(logits, gates, p, coef);
        return;
    }
#endif
    (void)path;
    for (size_t g = 0; g < gates; g++)
        gate_coeffs_scalar(logits + g * LOGIC_OPS, p + g * LOGIC_OPS, coef + g * 4);
}

void logic_forward(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld)
{
    const int path = current_path();
#if LOGIC_X86
    if (path == PATH_AVX512) {
        logic_avx512_forward(y, x, L, coef, n, ld);
        return;
    }
    if (path == PATH_AVX2) {
        logic_avx2_forward(y, x, L, coef, n, ld);
        return;
    }
#endif
    (void)path;
    logic_forward_scalar(y, x, L, coef, n, ld);
}

void logic_backward(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                    const float *coef, size_t n, size_t ld, int flags)
{
    const int path = current_path();
#if LOGIC_X86
    if (path == PATH_AVX512 || path == PATH_AVX2) {
        const uint8_t *first;
        /* rows LOGIC_DX_SET sets hold no -0 (silent gates, above) */
        const int silent_ok = dx == NULL || (flags & LOGIC_DX_SET) != 0;
        flags = dx_set_plan(dx, L, n, ld, flags, &first);
        if (path == PATH_AVX512)
            logic_avx512_backward(dx, stats, dy, x, L, coef, n, ld, (flags & ~SILENT_OK) | (silent_ok ? SILENT_OK : 0),
                                  first);
        else
            logic_avx2_backward(dx, stats, dy, x, L, coef, n, ld, flags, first);
        return;
    }
#endif
    (void)path;
    logic_backward_scalar(dx, stats, dy, x, L, coef, n, ld, flags);
}

size_t logic_prepare_parts(size_t gates)
{
    return (gates + LOGIC_PREPARE_GATES - 1) / LOGIC_PREPARE_GATES;
}

void logic_coeffs_part(const float *logits, size_t gates, size_t part, float *p, float *coef)
{
    const size_t lo = part * LOGIC_PREPARE_GATES;
    if (lo >= gates)
        return;
    const size_t n = gates - lo < LOGIC_PREPARE_GATES ? gates - lo : LOGIC_PREPARE_GATES;
    logic_coeffs(logits + lo * LOGIC_OPS, n, p + lo * LOGIC_OPS, coef + lo * 4);
}

void logic_backward_lanes(float *dx, float *stats, size_t stats_stride, const float *dy, const float *x,
                          const logic_layer *L, const float *coef, size_t nvl, size_t m, int flags)
{
    const int path = current_path();
#if LOGIC_X86
    if (path == PATH_AVX512 || path == PATH_AVX2) {
        const size_t ld = LOGIC_LANES_LD(nvl, m);
        const uint8_t *first;   /* whole rows: the kernels write the tails too */
        flags = dx_set_plan(dx, L, ld, ld, flags, &first);
        if (path == PATH_AVX512)
            logic_avx512_backward_lanes(dx, stats, stats_stride, dy, x, L, coef, first, nvl, m,
                                        flags & LOGIC_STATS_ADD);
        else
            logic_avx2_backward_lanes(dx, stats, stats_stride, dy, x, L, coef, first, nvl, m, flags & LOGIC_STATS_ADD);
        return;
    }
#endif
    (void)path;
    logic_backward_lanes_scalar(dx, stats, stats_stride, dy, x, L, coef, nvl, m, flags);
}
