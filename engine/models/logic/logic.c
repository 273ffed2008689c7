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
 * when every product is known to be finite; see "Silent gates" below.
 *
 * logic_backward_lanes (samples side by side, packed) keeps one
 * vector per virtual accumulator and builds the tree vertically as the
 * accumulators come; its comment block below says why its shortcuts keep
 * the bits of logic_backward run on each sample alone.
 *
 * The once-per-step functions are vectorised too, each with its scalar
 * twin: logic_coeffs works on blocks of 16 (8) gates with one gate per lane
 * and evaluates dmath_exp's exact sequence of operations on binary64 lanes
 * (tests check it against dmath_exp bit for bit) — only when a shorter
 * exp cannot vouch for its float rounding (expf8d_group_z, expf4d_group_y;
 * a test runs every float argument in [-88, 0] through both on each path);
 * logic_expand puts a gate's 16 ops on 16 lanes.
 *
 * The path is chosen at run time as in dense.c: once (pthread_once) from the
 * CPU and LOCKSTEP_SIMD ("off", "0", "scalar": scalar twins; "avx2": at most
 * AVX2), then logic_set_simd (0 off, 1 best, 2 at most AVX2) through an atomic.
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

#include "engine/num/dmath.h"
#include "engine/num/rng.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define LOGIC_X86 1
#include <immintrin.h>
#else
#define LOGIC_X86 0
#endif

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

/* The coefficients from p (logic.h's sums, left to right). */
static void coef_from_p(const float *q, float *c)
{
    float c0 = q[8];
    for (int i = 9; i < LOGIC_OPS; i++)
        c0 = c0 + q[i];
    const float ca = (((q[2] + q[3]) + q[6]) + q[7]) - (((q[8] + q[9]) + q[12]) + q[13]);
    const float cb = (((q[4] + q[5]) + q[6]) + q[7]) - (((q[8] + q[9]) + q[10]) + q[11]);
    float cab = q[1] - q[2];
    cab = cab - q[4];
    cab = cab - 2.0f * q[6];
    cab = cab - q[7];
    cab = cab + q[8];
    cab = cab + 2.0f * q[9];
    cab = cab + q[11];
    cab = cab + q[13];
    cab = cab - q[14];
    c[0] = c0;
    c[1] = ca;
    c[2] = cb;
    c[3] = cab;
}

/* s = e_0 + e_1 + ... + e_15 in order, then p_i = e_i / s. */
static void p_from_e(const float *e, float *q)
{
    float s = e[0];
    for (int i = 1; i < LOGIC_OPS; i++)
        s = s + e[i];
    for (int i = 0; i < LOGIC_OPS; i++)
        q[i] = e[i] / s;
}

/* One gate, the scalar twin of the SIMD paths (logic.h's definition). */
static void gate_coeffs_scalar(const float *z, float *q, float *c)
{
    float m = z[0];
    for (int i = 1; i < LOGIC_OPS; i++)
        if (z[i] > m)
            m = z[i];
    float e[LOGIC_OPS];
    for (int i = 0; i < LOGIC_OPS; i++)
        e[i] = dmath_expf(z[i] - m);
    p_from_e(e, q);
    coef_from_p(q, c);
}

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

/* ---- Run-time choice of the path (engine/simd.c). ---- */

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

#if LOGIC_X86

#define FORCE_INLINE inline __attribute__((always_inline))

/* ---- AVX-512F: 16 lanes per register, one register per statistic. ---- */

/* Rows of one or two vectors (a CA part's update network, a gol sample)
 * spend as much on the per-gate loop as on the arithmetic, so forward_z and
 * backward_z call these with nv (nf, tail) constant for the short rows: the
 * compiler unrolls the row and keeps the gate loop alone. */
static FORCE_INLINE __attribute__((target("avx512f")))
void forward_z_rows(float *y, const float *x, const logic_layer *L, const float *coef, size_t ld, const size_t nv)
{
    /* The wiring in locals: the vector stores may alias anything, so the
     * compiler would reload L's fields for every gate (the update network's
     * forward, rows of two vectors: 13% faster). */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const float *xa = x + (size_t)wa[g] * ld;
        const float *xb = x + (size_t)wb[g] * ld;
        float *yg = y + g * ld;
        const float *cg = coef + 4 * g;
        for (size_t v = 0; v < nv; v++) {
            const __m512 av = _mm512_loadu_ps(xa + 16 * v), bv = _mm512_loadu_ps(xb + 16 * v);
            __m512 t = simd_add_bcast_z(simd_mul_bcast_z(av, cg + 1), cg);   /* c0 + cA·a */
            t = _mm512_add_ps(t, simd_mul_bcast_z(bv, cg + 2));
            t = _mm512_add_ps(t, simd_mul_bcast_z(_mm512_mul_ps(av, bv), cg + 3));
            _mm512_storeu_ps(yg + 16 * v, t);
        }
    }
}

static __attribute__((target("avx512f")))
void forward_z(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld)
{
    /* Lanes n .. ld-1 of y are unspecified, so the last vector is computed
     * whole (it lies inside the row: ld is a multiple of 16). */
    const size_t nv = (n + 15) / 16;
    if (nv == 1)
        forward_z_rows(y, x, L, coef, ld, 1);
    else if (nv == 2)
        forward_z_rows(y, x, L, coef, ld, 2);
    else
        forward_z_rows(y, x, L, coef, ld, nv);
}

/* The lanes of a dx row to read: none for the row's first update under
 * LOGIC_DX_SET (first flag `bit` set in f), else all. */
static inline __mmask16 dx_read_mask(unsigned f, unsigned bit)
{
    return (f & bit) ? 0 : 0xFFFF;
}

/* The lanes grad_floor keeps: |d| not below the floor, or NaN. */
static FORCE_INLINE __attribute__((target("avx512f")))
__mmask16 live_lanes_z(__m512 d)
{
    return _mm512_cmp_ps_mask(_mm512_abs_ps(d), _mm512_set1_ps(LOGIC_GRAD_FLOOR), _CMP_NLT_UQ);
}

/* grad_floor on 16 lanes: |d| not below the floor (or NaN) keeps d, else +0. */
static FORCE_INLINE __attribute__((target("avx512f")))
__m512 grad_floor_z(__m512 d)
{
    return _mm512_maskz_mov_ps(live_lanes_z(d), d);
}

/* ---- Silent gates ----
 * A gate whose floored gradient is +0 on every lane (deep in a CA rollout,
 * most of them early in training: 73% of a checkerboard step's gates at
 * step 0, 12% at step 600) adds ±0 to each dx lane and +0 to each of its
 * 16 accumulators, so its statistics are +0, provided every product is
 * finite: with its inputs and coefficients at most SILENT_BOUND in
 * magnitude no product exceeds 2^122. Adding ±0 leaves a dx lane as it is
 * unless the lane holds −0, and a row LOGIC_DX_SET sets (or clears) never
 * does: it starts as 0.0f + t or +0, and a sum is −0 only when both terms
 * are. So under LOGIC_DX_SET (or without dx) the kernels give a silent
 * gate's results without its arithmetic and dx traffic: +0 stored into
 * the rows it updates first, its statistics written as +0 or added +0 (a
 * caller's −0 becomes +0, as the full sum makes it). The same bits as the
 * scalar twin, which runs every gate. */
#define SILENT_BOUND 0x1p60f
#define SILENT_OK 0x100   /* internal flag: the dx rows hold no −0 (above) */

/* The lanes of v above SILENT_BOUND in magnitude, or NaN. */
static FORCE_INLINE __attribute__((target("avx512f")))
__mmask16 wide_lanes_z(__m512 v)
{
    return _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(SILENT_BOUND), _CMP_NLE_UQ);
}

static inline int coef_narrow(const float *cg)
{
    return fabsf(cg[1]) <= SILENT_BOUND && fabsf(cg[2]) <= SILENT_BOUND && fabsf(cg[3]) <= SILENT_BOUND;
}

/* Every lane < 16·nf + tail of dg is silent (checked vector by vector,
 * stopping at the first live one). */
static FORCE_INLINE __attribute__((target("avx512f")))
int row_silent_z(const float *dg, const size_t nf, const size_t tail)
{
    for (size_t v = 0; v < nf; v++)
        if (live_lanes_z(_mm512_loadu_ps(dg + 16 * v)) != 0)
            return 0;
    return tail == 0 || live_lanes_z(_mm512_maskz_loadu_ps((__mmask16)((1u << tail) - 1u), dg + 16 * nf)) == 0;
}

/* A silent gate's inputs and coefficients are narrow enough (above). */
static FORCE_INLINE __attribute__((target("avx512f")))
int gate_narrow_z(const float *xa, const float *xb, const float *cg, const size_t nf, const size_t tail)
{
    if (!coef_narrow(cg))
        return 0;
    __mmask16 w = 0;
    for (size_t v = 0; v < nf; v++)
        w |= wide_lanes_z(_mm512_loadu_ps(xa + 16 * v)) | wide_lanes_z(_mm512_loadu_ps(xb + 16 * v));
    if (tail > 0) {
        const __mmask16 m = (__mmask16)((1u << tail) - 1u);
        w |= wide_lanes_z(_mm512_maskz_loadu_ps(m, xa + 16 * nf));
        w |= wide_lanes_z(_mm512_maskz_loadu_ps(m, xb + 16 * nf));
    }
    return w == 0;
}

/* A silent gate's results: statistics +0 (or + 0), and +0 in the lanes
 * < 16·nf + tail of each dx row it updates first (flags f). */
static FORCE_INLINE __attribute__((target("avx512f")))
void silent_gate_z(float *st, float *dxa, float *dxb, unsigned f, const size_t nf, const size_t tail,
                   const int accumulate)
{
    const __m128 z4 = _mm_setzero_ps();
    _mm_storeu_ps(st, accumulate ? _mm_add_ps(_mm_loadu_ps(st), z4) : z4);
    const __m512 z = _mm512_setzero_ps();
    for (unsigned bit = LOGIC_FIRST_A; bit <= LOGIC_FIRST_B; bit <<= 1) {
        float *row = bit == LOGIC_FIRST_A ? dxa : dxb;
        if (!(f & bit))
            continue;
        for (size_t v = 0; v < nf; v++)
            _mm512_storeu_ps(row + 16 * v, z);
        if (tail > 0)
            _mm512_mask_storeu_ps(row + 16 * nf, (__mmask16)((1u << tail) - 1u), z);
    }
}

/* The pairwise tree of logic.h for the four statistics at once: acc[k] holds
 * accumulators v0..v15 of statistic k. Level 1 adds adjacent pairs (v0+v1,
 * v2+v3, ... — the left operand always the lower index), level 2 pairs of
 * pairs, then the 128-bit blocks (0+1, 2+3) and finally (01)+(23): the same
 * additions as tree16, so the result is (S0, S1, S2, S3). */
static FORCE_INLINE __attribute__((target("avx512f")))
__m128 tree_z(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    const __m512 b01 = _mm512_add_ps(_mm512_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512 b23 = _mm512_add_ps(_mm512_shuffle_ps(a2, a3, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_ps(a2, a3, _MM_SHUFFLE(3, 1, 3, 1)));
    /* per 128-bit block j: (q_j of S0, q_j of S1, q_j of S2, q_j of S3) */
    const __m512 c = _mm512_add_ps(_mm512_shuffle_ps(b01, b23, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(b01, b23, _MM_SHUFFLE(3, 1, 3, 1)));
    /* blocks (0, 2, ., .) + (1, 3, ., .) */
    const __m512 d = _mm512_add_ps(_mm512_shuffle_f32x4(c, c, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(c, c, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm_add_ps(_mm512_castps512_ps128(d), _mm512_extractf32x4_ps(d, 1));
}

/* ka, kb: the lanes of dxa, dxb to read (0 for a row's first update under
 * LOGIC_DX_SET: the maskz load then gives +0.0f without touching the row).
 * nf full vectors, then tail (0..15) masked lanes. */
static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_gate(float *st, const float *dg, const float *xa, const float *xb, float *dxa,
                     float *dxb, const float *cg, const size_t nf, const size_t tail, int accumulate,
                     const int with_dx, __mmask16 ka, __mmask16 kb, const int silent_ok)
{
    if (silent_ok && row_silent_z(dg, nf, tail) && gate_narrow_z(xa, xb, cg, nf, tail)) {
        /* first-touch rows are the ones not read (ka, kb zero) */
        silent_gate_z(st, dxa, dxb, with_dx ? (ka ? 0u : LOGIC_FIRST_A) | (kb ? 0u : LOGIC_FIRST_B) : 0u, nf, tail,
                      accumulate);
        return;
    }
    const __m512 ca = _mm512_set1_ps(cg[1]), cb = _mm512_set1_ps(cg[2]), cab = _mm512_set1_ps(cg[3]);
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    for (size_t v = 0; v < nf; v++) {
        const size_t l = 16 * v;
        const __m512 d = grad_floor_z(_mm512_loadu_ps(dg + l));
        const __m512 av = _mm512_loadu_ps(xa + l), bv = _mm512_loadu_ps(xb + l);
        s0 = _mm512_add_ps(s0, d);
        s1 = _mm512_add_ps(s1, _mm512_mul_ps(d, av));
        s2 = _mm512_add_ps(s2, _mm512_mul_ps(d, bv));
        s3 = _mm512_add_ps(s3, _mm512_mul_ps(d, _mm512_mul_ps(av, bv)));
        if (with_dx) {
            const __m512 ta = _mm512_mul_ps(d, _mm512_add_ps(ca, _mm512_mul_ps(cab, bv)));
            _mm512_storeu_ps(dxa + l, _mm512_add_ps(_mm512_maskz_loadu_ps(ka, dxa + l), ta));
            const __m512 tb = _mm512_mul_ps(d, _mm512_add_ps(cb, _mm512_mul_ps(cab, av)));
            _mm512_storeu_ps(dxb + l, _mm512_add_ps(_mm512_maskz_loadu_ps(kb, dxb + l), tb));
        }
    }
    if (tail > 0) {
        /* Masked lanes keep their accumulators (mask_add) and their dx. */
        const size_t l = 16 * nf;
        const __mmask16 m = (__mmask16)((1u << tail) - 1u);
        const __m512 d = grad_floor_z(_mm512_maskz_loadu_ps(m, dg + l));
        const __m512 av = _mm512_maskz_loadu_ps(m, xa + l), bv = _mm512_maskz_loadu_ps(m, xb + l);
        s0 = _mm512_mask_add_ps(s0, m, s0, d);
        s1 = _mm512_mask_add_ps(s1, m, s1, _mm512_mul_ps(d, av));
        s2 = _mm512_mask_add_ps(s2, m, s2, _mm512_mul_ps(d, bv));
        s3 = _mm512_mask_add_ps(s3, m, s3, _mm512_mul_ps(d, _mm512_mul_ps(av, bv)));
        if (with_dx) {
            const __m512 ta = _mm512_mul_ps(d, _mm512_add_ps(ca, _mm512_mul_ps(cab, bv)));
            _mm512_mask_storeu_ps(dxa + l, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m & ka, dxa + l), ta));
            const __m512 tb = _mm512_mul_ps(d, _mm512_add_ps(cb, _mm512_mul_ps(cab, av)));
            _mm512_mask_storeu_ps(dxb + l, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m & kb, dxb + l), tb));
        }
    }
    __m128 s = tree_z(s0, s1, s2, s3);
    if (accumulate)
        s = _mm_add_ps(_mm_loadu_ps(st), s);
    _mm_storeu_ps(st, s);
}

static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_rows(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                     const float *coef, const size_t nf, const size_t tail, size_t ld, int flags,
                     const uint8_t *first)
{
    const int accumulate = flags & LOGIC_STATS_ADD, silent_ok = (flags & SILENT_OK) != 0;
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const size_t ra = wa[g], rb = wb[g];
        if (dx != NULL) {
            const unsigned f = first != NULL ? first[g] : 0u;
            const __mmask16 ka = dx_read_mask(f, LOGIC_FIRST_A), kb = dx_read_mask(f, LOGIC_FIRST_B);
            backward_z_gate(stats + 4 * g, dy + g * ld, x + ra * ld, x + rb * ld, dx + ra * ld, dx + rb * ld,
                            coef + 4 * g, nf, tail, accumulate, 1, ka, kb, silent_ok);
        } else {
            backward_z_gate(stats + 4 * g, dy + g * ld, x + ra * ld, x + rb * ld, NULL, NULL,
                            coef + 4 * g, nf, tail, accumulate, 0, 0, 0, silent_ok);
        }
    }
}

/* One vector of one gate: the floored gradient, the inputs and the two dx
 * terms (the statistics are summed by the caller, in backward_z_gate's
 * order). */
typedef struct {
    __m512 d, av, bv, ta, tb;
} vec_z;

static FORCE_INLINE __attribute__((target("avx512f")))
vec_z backward_z_vec(__m512 d, const float *xa, const float *xb, __m512 ca, __m512 cb, __m512 cab,
                     const __mmask16 m)
{
    vec_z r;
    r.d = d;
    r.av = m == 0xFFFF ? _mm512_loadu_ps(xa) : _mm512_maskz_loadu_ps(m, xa);
    r.bv = m == 0xFFFF ? _mm512_loadu_ps(xb) : _mm512_maskz_loadu_ps(m, xb);
    r.ta = _mm512_mul_ps(r.d, _mm512_add_ps(ca, _mm512_mul_ps(cab, r.bv)));
    r.tb = _mm512_mul_ps(r.d, _mm512_add_ps(cb, _mm512_mul_ps(cab, r.av)));
    return r;
}

/* The four statistics of a two-vector row, (0 + v0) + v1 as backward_z_gate
 * sums them (reduced by tree_z). */
typedef struct {
    __m512 s0, s1, s2, s3;
} stats_z;

static FORCE_INLINE __attribute__((target("avx512f")))
stats_z backward_z_sums2(vec_z v0, vec_z v1, const __mmask16 m)
{
    /* lanes outside m keep the first vector's sum, as backward_z_gate's
     * masked tail does */
    const __m512 z = _mm512_setzero_ps();
    const __m512 a0 = _mm512_add_ps(z, v0.d), a1 = _mm512_add_ps(z, _mm512_mul_ps(v0.d, v0.av));
    const __m512 a2 = _mm512_add_ps(z, _mm512_mul_ps(v0.d, v0.bv));
    const __m512 a3 = _mm512_add_ps(z, _mm512_mul_ps(v0.d, _mm512_mul_ps(v0.av, v0.bv)));
    stats_z r;
    r.s0 = _mm512_mask_add_ps(a0, m, a0, v1.d);
    r.s1 = _mm512_mask_add_ps(a1, m, a1, _mm512_mul_ps(v1.d, v1.av));
    r.s2 = _mm512_mask_add_ps(a2, m, a2, _mm512_mul_ps(v1.d, v1.bv));
    r.s3 = _mm512_mask_add_ps(a3, m, a3, _mm512_mul_ps(v1.d, _mm512_mul_ps(v1.av, v1.bv)));
    return r;
}

static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_store_stats(float *st, stats_z s, const int accumulate)
{
    __m128 r = tree_z(s.s0, s.s1, s.s2, s.s3);
    if (accumulate)
        r = _mm_add_ps(_mm_loadu_ps(st), r);
    _mm_storeu_ps(st, r);
}

static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_dx2(float *row, __mmask16 k, __m512 t0, __m512 t1, const __mmask16 m)
{
    _mm512_storeu_ps(row, _mm512_add_ps(_mm512_maskz_loadu_ps(k, row), t0));
    if (m == 0xFFFF)
        _mm512_storeu_ps(row + 16, _mm512_add_ps(_mm512_maskz_loadu_ps(k, row + 16), t1));
    else   /* lanes outside m are not written */
        _mm512_mask_storeu_ps(row + 16, m, _mm512_add_ps(_mm512_maskz_loadu_ps(k & m, row + 16), t1));
}

/* Rows of 17 to 32 lanes with dx (a CA part's update network: two rows of
 * 16 cells, or of 14 for the asynchronous task; the second vector masked
 * below 32): one gate's work is too short for the core to overlap it with
 * the next one's (about 20 cycles of arithmetic behind two index loads and
 * six vector loads), so gates g and g + 1 are written out side by side.
 * Each gate's arithmetic and the order of each dx row's updates are those
 * of backward_z_gate: the dx rows are read, added to and stored gate by
 * gate, a's rows before b's, so a row both gates update gets g's term
 * first. Loading gate g + 1's inputs before gate g's dx and stats stores
 * is safe because neither dx nor stats overlaps dy or x (logic.h). A
 * kernel alone on a 256-gate layer of 32-lane rows: 5.9 -> 4.85 ns per
 * vector. */
static FORCE_INLINE __attribute__((target("avx512f")))
void backward_z_pairs2_body(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                            const float *coef, size_t ld, const int accumulate, const uint8_t *first,
                            const size_t tail, const int silent_ok)
{
    const __mmask16 m = (__mmask16)(tail == 16 ? 0xFFFFu : (1u << tail) - 1u);   /* the second vector's lanes */
    const size_t nf = tail == 16 ? 2 : 1, rt = tail % 16;   /* the row as the single-gate kernel takes it */
    size_t g = 0;
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (; g + 2 <= out; g += 2) {
        const size_t ra0 = wa[g], rb0 = wb[g], ra1 = wa[g + 1], rb1 = wb[g + 1];
        const unsigned f0 = first != NULL ? first[g] : 0u, f1 = first != NULL ? first[g + 1] : 0u;
        const float *c0 = coef + 4 * g, *c1 = c0 + 4;
        const float *dg0 = dy + g * ld, *dg1 = dg0 + ld;
        const float *xa0 = x + ra0 * ld, *xb0 = x + rb0 * ld, *xa1 = x + ra1 * ld, *xb1 = x + rb1 * ld;
        const __m512 r00 = _mm512_loadu_ps(dg0), r10 = _mm512_loadu_ps(dg1);
        const __m512 r01 = m == 0xFFFF ? _mm512_loadu_ps(dg0 + 16) : _mm512_maskz_loadu_ps(m, dg0 + 16);
        const __m512 r11 = m == 0xFFFF ? _mm512_loadu_ps(dg1 + 16) : _mm512_maskz_loadu_ps(m, dg1 + 16);
        const __mmask16 l00 = live_lanes_z(r00), l01 = live_lanes_z(r01);
        const __mmask16 l10 = live_lanes_z(r10), l11 = live_lanes_z(r11);
        /* Silent gates: a silent pair is written out at once; a silent gate
         * beside a live one leaves the live one to the single-gate kernel,
         * in gate order. */
        const int q0 = silent_ok && (l00 | l01) == 0 && gate_narrow_z(xa0, xb0, c0, nf, rt);
        const int q1 = silent_ok && (l10 | l11) == 0 && gate_narrow_z(xa1, xb1, c1, nf, rt);
        if (q0 | q1) {
            if (q0)
                silent_gate_z(stats + 4 * g, dx + ra0 * ld, dx + rb0 * ld, f0, nf, rt, accumulate);
            else
                backward_z_gate(stats + 4 * g, dg0, xa0, xb0, dx + ra0 * ld, dx + rb0 * ld, c0, nf, rt, accumulate, 1,
                                dx_read_mask(f0, LOGIC_FIRST_A), dx_read_mask(f0, LOGIC_FIRST_B), 0);
            if (q1)
                silent_gate_z(stats + 4 * g + 4, dx + ra1 * ld, dx + rb1 * ld, f1, nf, rt, accumulate);
            else
                backward_z_gate(stats + 4 * g + 4, dg1, xa1, xb1, dx + ra1 * ld, dx + rb1 * ld, c1, nf, rt, accumulate,
                                1, dx_read_mask(f1, LOGIC_FIRST_A), dx_read_mask(f1, LOGIC_FIRST_B), 0);
            continue;
        }
        const __m512 ca0 = _mm512_set1_ps(c0[1]), cb0 = _mm512_set1_ps(c0[2]), cab0 = _mm512_set1_ps(c0[3]);
        const __m512 ca1 = _mm512_set1_ps(c1[1]), cb1 = _mm512_set1_ps(c1[2]), cab1 = _mm512_set1_ps(c1[3]);
        const vec_z v00 = backward_z_vec(_mm512_maskz_mov_ps(l00, r00), xa0, xb0, ca0, cb0, cab0, 0xFFFF);
        const vec_z v10 = backward_z_vec(_mm512_maskz_mov_ps(l10, r10), xa1, xb1, ca1, cb1, cab1, 0xFFFF);
        const vec_z v01 = backward_z_vec(_mm512_maskz_mov_ps(l01, r01), xa0 + 16, xb0 + 16, ca0, cb0, cab0, m);
        const vec_z v11 = backward_z_vec(_mm512_maskz_mov_ps(l11, r11), xa1 + 16, xb1 + 16, ca1, cb1, cab1, m);
        const stats_z s0 = backward_z_sums2(v00, v01, m), s1 = backward_z_sums2(v10, v11, m);
        backward_z_dx2(dx + ra0 * ld, dx_read_mask(f0, LOGIC_FIRST_A), v00.ta, v01.ta, m);
        backward_z_dx2(dx + rb0 * ld, dx_read_mask(f0, LOGIC_FIRST_B), v00.tb, v01.tb, m);
        backward_z_dx2(dx + ra1 * ld, dx_read_mask(f1, LOGIC_FIRST_A), v10.ta, v11.ta, m);
        backward_z_dx2(dx + rb1 * ld, dx_read_mask(f1, LOGIC_FIRST_B), v10.tb, v11.tb, m);
        backward_z_store_stats(stats + 4 * g, s0, accumulate);
        backward_z_store_stats(stats + 4 * g + 4, s1, accumulate);
    }
    if (g < out) {
        const unsigned f = first != NULL ? first[g] : 0u;
        backward_z_gate(stats + 4 * g, dy + g * ld, x + wa[g] * ld, x + wb[g] * ld, dx + wa[g] * ld,
                        dx + wb[g] * ld, coef + 4 * g, nf, rt, accumulate, 1,
                        dx_read_mask(f, LOGIC_FIRST_A), dx_read_mask(f, LOGIC_FIRST_B), silent_ok);
    }
}

/* n = 16 + tail lanes, tail 1..16 (16: two full vectors). */
static __attribute__((target("avx512f")))
void backward_z_pairs2(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                       const float *coef, size_t ld, int flags, const uint8_t *first, size_t tail)
{
    /* the checkerboard's rows (tail 16) with constants, the rest as they come */
    const int acc = flags & LOGIC_STATS_ADD, silent_ok = (flags & SILENT_OK) != 0;
    if (tail == 16 && acc)
        backward_z_pairs2_body(dx, stats, dy, x, L, coef, ld, 1, first, 16, silent_ok);
    else if (tail == 16)
        backward_z_pairs2_body(dx, stats, dy, x, L, coef, ld, 0, first, 16, silent_ok);
    else
        backward_z_pairs2_body(dx, stats, dy, x, L, coef, ld, acc, first, tail, silent_ok);
}

static __attribute__((target("avx512f")))
void backward_z(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                const float *coef, size_t n, size_t ld, int flags, const uint8_t *first)
{
    const size_t nf = n / 16, tail = n % 16;
    if (n > 16 && n <= 32 && dx != NULL)   /* a CA part's update network: two rows of 16 or 14 cells */
        backward_z_pairs2(dx, stats, dy, x, L, coef, ld, flags, first, n - 16);
    else if (n == 32)
        backward_z_rows(dx, stats, dy, x, L, coef, 2, 0, ld, flags, first);
    else if (nf == 0)
        backward_z_rows(dx, stats, dy, x, L, coef, 0, tail, ld, flags, first);
    else if (nf == 1)
        backward_z_rows(dx, stats, dy, x, L, coef, 1, tail, ld, flags, first);
    else
        backward_z_rows(dx, stats, dy, x, L, coef, nf, tail, ld, flags, first);
}

/* ---- AVX2: 8 lanes per register; accumulators 0..7 and 8..15 in two. ---- */

static __attribute__((target("avx2")))
void forward_y(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld)
{
    const size_t nv = (n + 7) / 8;
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const float *xa = x + (size_t)wa[g] * ld;
        const float *xb = x + (size_t)wb[g] * ld;
        float *yg = y + g * ld;
        const __m256 c0 = _mm256_set1_ps(coef[4 * g]), ca = _mm256_set1_ps(coef[4 * g + 1]);
        const __m256 cb = _mm256_set1_ps(coef[4 * g + 2]), cab = _mm256_set1_ps(coef[4 * g + 3]);
        for (size_t v = 0; v < nv; v++) {
            const __m256 av = _mm256_loadu_ps(xa + 8 * v), bv = _mm256_loadu_ps(xb + 8 * v);
            __m256 t = _mm256_add_ps(c0, _mm256_mul_ps(ca, av));
            t = _mm256_add_ps(t, _mm256_mul_ps(cb, bv));
            t = _mm256_add_ps(t, _mm256_mul_ps(cab, _mm256_mul_ps(av, bv)));
            _mm256_storeu_ps(yg + 8 * v, t);
        }
    }
}

/* tree_z for accumulators held as lo (v0..v7) and hi (v8..v15). */
static FORCE_INLINE __attribute__((target("avx2")))
__m128 tree_y(const __m256 *lo, const __m256 *hi)
{
    __m256 q[2];
    for (int h = 0; h < 2; h++) {
        const __m256 *a = h == 0 ? lo : hi;
        const __m256 b01 = _mm256_add_ps(_mm256_shuffle_ps(a[0], a[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm256_shuffle_ps(a[0], a[1], _MM_SHUFFLE(3, 1, 3, 1)));
        const __m256 b23 = _mm256_add_ps(_mm256_shuffle_ps(a[2], a[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm256_shuffle_ps(a[2], a[3], _MM_SHUFFLE(3, 1, 3, 1)));
        q[h] = _mm256_add_ps(_mm256_shuffle_ps(b01, b23, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm256_shuffle_ps(b01, b23, _MM_SHUFFLE(3, 1, 3, 1)));
    }
    const __m128 q01 = _mm_add_ps(_mm256_castps256_ps128(q[0]), _mm256_extractf128_ps(q[0], 1));
    const __m128 q23 = _mm_add_ps(_mm256_castps256_ps128(q[1]), _mm256_extractf128_ps(q[1], 1));
    return _mm_add_ps(q01, q23);
}

/* Lane i of the mask for m live lanes: table[8 - m + i]. */
static const int32_t y_mask_table[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };

/* grad_floor on 8 lanes: |d| not below the floor (or NaN) keeps d, else +0. */
static FORCE_INLINE __attribute__((target("avx2")))
__m256 grad_floor_y(__m256 d)
{
    const __m256 mag = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), d);
    return _mm256_and_ps(d, _mm256_cmp_ps(mag, _mm256_set1_ps(LOGIC_GRAD_FLOOR), _CMP_NLT_UQ));
}

/* One vector of 8 lanes into accumulator set s (the stat vectors acc[0..3]);
 * masked: lanes outside mask keep their accumulators and their dx. */
static FORCE_INLINE __attribute__((target("avx2")))
void backward_y_vec(__m256 *acc, const float *dg, const float *xa, const float *xb, float *dxa, float *dxb,
                    __m256 ca, __m256 cb, __m256 cab, const int with_dx, const int masked, __m256i mask,
                    __m256 keepa, __m256 keepb)
{
    __m256 d, av, bv;
    if (masked) {
        d = grad_floor_y(_mm256_maskload_ps(dg, mask));
        av = _mm256_maskload_ps(xa, mask);
        bv = _mm256_maskload_ps(xb, mask);
    } else {
        d = grad_floor_y(_mm256_loadu_ps(dg));
        av = _mm256_loadu_ps(xa);
        bv = _mm256_loadu_ps(xb);
    }
    __m256 p[4];
    p[0] = d;
    p[1] = _mm256_mul_ps(d, av);
    p[2] = _mm256_mul_ps(d, bv);
    p[3] = _mm256_mul_ps(d, _mm256_mul_ps(av, bv));
    for (int k = 0; k < 4; k++) {
        const __m256 s = _mm256_add_ps(acc[k], p[k]);
        acc[k] = masked ? _mm256_blendv_ps(acc[k], s, _mm256_castsi256_ps(mask)) : s;
    }
    if (with_dx) {
        const __m256 ta = _mm256_mul_ps(d, _mm256_add_ps(ca, _mm256_mul_ps(cab, bv)));
        const __m256 tb = _mm256_mul_ps(d, _mm256_add_ps(cb, _mm256_mul_ps(cab, av)));
        /* keep: all ones, or zero for a row's first update (LOGIC_DX_SET): the
         * and gives +0.0f whatever the row held. */
        if (masked) {
            /* dxb may be dxa (a == b): read it after dxa's store */
            _mm256_maskstore_ps(dxa, mask, _mm256_add_ps(_mm256_and_ps(_mm256_maskload_ps(dxa, mask), keepa), ta));
            _mm256_maskstore_ps(dxb, mask, _mm256_add_ps(_mm256_and_ps(_mm256_maskload_ps(dxb, mask), keepb), tb));
        } else {
            _mm256_storeu_ps(dxa, _mm256_add_ps(_mm256_and_ps(_mm256_loadu_ps(dxa), keepa), ta));
            _mm256_storeu_ps(dxb, _mm256_add_ps(_mm256_and_ps(_mm256_loadu_ps(dxb), keepb), tb));
        }
    }
}

static FORCE_INLINE __attribute__((target("avx2")))
void backward_y_gate(float *st, const float *dg, const float *xa, const float *xb, float *dxa, float *dxb,
                     const float *cg, size_t n, int accumulate, const int with_dx, __m256 ka, __m256 kb)
{
    const __m256 ca = _mm256_set1_ps(cg[1]), cb = _mm256_set1_ps(cg[2]), cab = _mm256_set1_ps(cg[3]);
    __m256 lo[4], hi[4];
    for (int k = 0; k < 4; k++) {
        lo[k] = _mm256_setzero_ps();
        hi[k] = _mm256_setzero_ps();
    }
    const __m256i full = _mm256_set1_epi32(-1);
#define DXP(p, o) (with_dx ? (p) + (o) : NULL)
    size_t l = 0;
    for (; l + 16 <= n; l += 16) {
        backward_y_vec(lo, dg + l, xa + l, xb + l, DXP(dxa, l), DXP(dxb, l), ca, cb, cab, with_dx, 0, full, ka, kb);
        backward_y_vec(hi, dg + l + 8, xa + l + 8, xb + l + 8, DXP(dxa, l + 8), DXP(dxb, l + 8), ca, cb, cab,
                       with_dx, 0, full, ka, kb);
    }
    if (l < n) {
        const size_t r = n - l;   /* 1 .. 15 live lanes */
        const size_t r0 = r < 8 ? r : 8;
        const __m256i m0 = _mm256_loadu_si256((const __m256i *)(const void *)(y_mask_table + 8 - r0));
        backward_y_vec(lo, dg + l, xa + l, xb + l, DXP(dxa, l), DXP(dxb, l), ca, cb, cab, with_dx, 1, m0, ka, kb);
        if (r > 8) {
            const __m256i m1 = _mm256_loadu_si256((const __m256i *)(const void *)(y_mask_table + 16 - r));
            backward_y_vec(hi, dg + l + 8, xa + l + 8, xb + l + 8, DXP(dxa, l + 8), DXP(dxb, l + 8), ca, cb, cab,
                           with_dx, 1, m1, ka, kb);
        }
    }
#undef DXP
    __m128 s = tree_y(lo, hi);
    if (accumulate)
        s = _mm_add_ps(_mm_loadu_ps(st), s);
    _mm_storeu_ps(st, s);
}

static __attribute__((target("avx2")))
void backward_y(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                const float *coef, size_t n, size_t ld, int flags, const uint8_t *first)
{
    const int accumulate = flags & LOGIC_STATS_ADD;
    const __m256 keep = _mm256_castsi256_ps(_mm256_set1_epi32(-1)), drop = _mm256_setzero_ps();
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const size_t ra = wa[g], rb = wb[g];
        if (dx != NULL) {
            const unsigned f = first != NULL ? first[g] : 0u;
            const __m256 ka = (f & LOGIC_FIRST_A) ? drop : keep;
            const __m256 kb = (f & LOGIC_FIRST_B) ? drop : keep;
            backward_y_gate(stats + 4 * g, dy + g * ld, x + ra * ld, x + rb * ld, dx + ra * ld, dx + rb * ld,
                            coef + 4 * g, n, accumulate, 1, ka, kb);
        } else {
            backward_y_gate(stats + 4 * g, dy + g * ld, x + ra * ld, x + rb * ld, NULL, NULL,
                            coef + 4 * g, n, accumulate, 0, keep, keep);
        }
    }
}

/* ---- logic_backward_lanes: one vector per virtual accumulator. ----
 *
 * The rows are packed (logic.h): virtual lane vl of the m samples is the m
 * floats at vl·m. A load of 16 floats there, masked to m lanes, puts sample
 * j in lane j, so the 16 virtual accumulators of a statistic are 16 vectors
 * and the pairwise tree is vertical adds for all samples at once instead
 * of a horizontal tree per sample. Two shortcuts
 * keep the definition's bits. Write f(x) = x + 0.0f: it maps −0 to +0 and
 * leaves every other value (NaN and ±inf included) as it is. In
 * round-to-nearest without flush-to-zero (dmath refuses FTZ/DAZ) a sum is
 * −0 only when both operands are −0, hence
 *     f(a) + b = f(a + b)   and   f(a) + f(b) = f(a + b)   for all a, b.
 * An accumulator of the definition is (0.0f + t1) + t2 + ... = f(t1 + t2 +
 * ...), a node of the tree is the sum of two such values, an empty
 * accumulator is +0.0f and adding it is one more f; f(f(x)) = f(x). So the
 * definition's S is f applied once to the same tree computed without the
 * empty accumulators (those of virtual lanes >= nvl when nvl < 16) and
 * without the additions from 0.0f: a node whose right half is empty is its
 * left half. tests/test_logic.c checks it with −0, denormals and sums that
 * cancel, on every path.
 *
 * A gate's statistics are computed accumulator by accumulator
 * (accumulator v: virtual lanes v, v + 16, ... in increasing order), four
 * at a time into a node of the tree's second level, so the tree is built
 * as the accumulators come and stays in registers. Its dx comes first, in
 * a pass of its own over the packed rows, whole vectors: each element is
 * touched once by the gate, so how elements share a vector does not matter
 * (within an element, a gate still updates row a before row b, gates in
 * order), and packed, gol's groups of 10 samples of 9 cells take 6 vectors
 * a row where one vector a virtual lane took 9. A row's first update under
 * LOGIC_DX_SET adds to +0 instead of the row's contents, as in
 * logic_backward: a masked load of nothing (AVX-512) or the contents ANDed
 * with zero bits (AVX2). */

/* The four statistics of one node of the tree, for 16 (8) samples. */
typedef struct { __m512 s0, s1, s2, s3; } stat4_z;
typedef struct { __m256 s0, s1, s2, s3; } stat4_y;

static FORCE_INLINE __attribute__((target("avx512f")))
stat4_z add4_z(stat4_z a, stat4_z b)
{
    return (stat4_z){ _mm512_add_ps(a.s0, b.s0), _mm512_add_ps(a.s1, b.s1), _mm512_add_ps(a.s2, b.s2),
                      _mm512_add_ps(a.s3, b.s3) };
}

/* The dx of one gate over its rows' ld floats (nvl·m elements and the
 * tail), 16 at a time: each element is one (virtual lane, sample), touched
 * once by the gate, so any grouping of elements gives the same bits; row a
 * before row b. Whole vectors, the tail included: a masked store of the
 * last one made a later gate's load of that row wait for it (no store
 * forwarding from a masked store), which cost more than the tail's
 * arithmetic. A first touch loads nothing: +0 (maskz). */
static FORCE_INLINE __attribute__((target("avx512f")))
void lanes_dx_z(size_t ld, const float *dg, const float *xa, const float *xb, float *dxa, float *dxb, __m512 ca,
                __m512 cb, __m512 cab, __mmask16 keep_a, __mmask16 keep_b)
{
    for (size_t o = 0; o < ld; o += 16) {
        const __m512 d = grad_floor_z(_mm512_loadu_ps(dg + o));
        const __m512 av = _mm512_loadu_ps(xa + o), bv = _mm512_loadu_ps(xb + o);
        const __m512 ta = _mm512_mul_ps(d, _mm512_add_ps(ca, _mm512_mul_ps(cab, bv)));
        _mm512_storeu_ps(dxa + o, _mm512_add_ps(_mm512_maskz_loadu_ps(keep_a, dxa + o), ta));
        const __m512 tb = _mm512_mul_ps(d, _mm512_add_ps(cb, _mm512_mul_ps(cab, av)));
        _mm512_storeu_ps(dxb + o, _mm512_add_ps(_mm512_maskz_loadu_ps(keep_b, dxb + o), tb));
    }
}

/* Virtual lane vl of a gate (row offset o = vl·m, lanes j < m live by km):
 * its four terms, lanes >= m +0. */
static FORCE_INLINE __attribute__((target("avx512f")))
stat4_z lanes_vl_z(size_t o, __mmask16 km, const float *dg, const float *xa, const float *xb)
{
    const __m512 d = grad_floor_z(_mm512_maskz_loadu_ps(km, dg + o));
    const __m512 av = _mm512_maskz_loadu_ps(km, xa + o), bv = _mm512_maskz_loadu_ps(km, xb + o);
    return (stat4_z){ d, _mm512_mul_ps(d, av), _mm512_mul_ps(d, bv), _mm512_mul_ps(d, _mm512_mul_ps(av, bv)) };
}

/* Accumulator v of a gate (virtual lanes v, v + 16, ... < nvl; v < nvl),
 * its first term as it is (f comes at the root). */
static FORCE_INLINE __attribute__((target("avx512f")))
stat4_z lanes_acc_z(size_t v, size_t nvl, size_t m, __mmask16 km, const float *dg, const float *xa, const float *xb)
{
    stat4_z t = lanes_vl_z(v * m, km, dg, xa, xb);
    for (size_t vl = v + LOGIC_LANES; vl < nvl; vl += LOGIC_LANES)
        t = add4_z(t, lanes_vl_z(vl * m, km, dg, xa, xb));
    return t;
}

/* The node ((v0 + v1) + (v2 + v3)) of accumulators v0 = 4q .. 4q + 3, those
 * at or above P empty (v0 < P). */
static FORCE_INLINE __attribute__((target("avx512f")))
stat4_z lanes_quad_z(size_t v0, size_t P, size_t nvl, size_t m, __mmask16 km, const float *dg, const float *xa,
                     const float *xb)
{
    stat4_z q = lanes_acc_z(v0, nvl, m, km, dg, xa, xb);
    if (v0 + 1 < P)
        q = add4_z(q, lanes_acc_z(v0 + 1, nvl, m, km, dg, xa, xb));
    if (v0 + 2 < P) {
        stat4_z u = lanes_acc_z(v0 + 2, nvl, m, km, dg, xa, xb);
        if (v0 + 3 < P)
            u = add4_z(u, lanes_acc_z(v0 + 3, nvl, m, km, dg, xa, xb));
        q = add4_z(q, u);
    }
    return q;
}

/* st[0..3] = v, or st[k] = st[k] + v[k] with accumulate. */
static FORCE_INLINE __attribute__((target("avx2")))
void lanes_put4(float *st, __m128 v, int accumulate)
{
    if (accumulate)
        v = _mm_add_ps(_mm_loadu_ps(st), v);
    _mm_storeu_ps(st, v);
}

/* Lane l of four vectors (a, b, c, d) as the quadruple (a_l, b_l, c_l,
 * d_l), two levels of unpacks: 128-bit block q of u[r] holds lane 4q + r's. */
static FORCE_INLINE __attribute__((target("avx512f")))
void quads_z(__m512 a, __m512 b, __m512 c, __m512 d, __m512 *u)
{
    const __m512d t0 = _mm512_castps_pd(_mm512_unpacklo_ps(a, b)), t1 = _mm512_castps_pd(_mm512_unpackhi_ps(a, b));
    const __m512d t2 = _mm512_castps_pd(_mm512_unpacklo_ps(c, d)), t3 = _mm512_castps_pd(_mm512_unpackhi_ps(c, d));
    u[0] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
}

static FORCE_INLINE __attribute__((target("avx2")))
void quads_y(__m256 a, __m256 b, __m256 c, __m256 d, __m256 *u)
{
    const __m256d t0 = _mm256_castps_pd(_mm256_unpacklo_ps(a, b)), t1 = _mm256_castps_pd(_mm256_unpackhi_ps(a, b));
    const __m256d t2 = _mm256_castps_pd(_mm256_unpacklo_ps(c, d)), t3 = _mm256_castps_pd(_mm256_unpackhi_ps(c, d));
    u[0] = _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t2));
    u[1] = _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t2));
    u[2] = _mm256_castpd_ps(_mm256_unpacklo_pd(t1, t3));
    u[3] = _mm256_castpd_ps(_mm256_unpackhi_pd(t1, t3));
}

/* (S0, S1, S2, S3) of sample j to st + j·stride for j < m: after the two
 * unpacks, 128-bit block b of u_r holds sample 4b + r's four statistics. */
static FORCE_INLINE __attribute__((target("avx512f")))
void lanes_store_z(float *st, size_t stride, stat4_z S, size_t m, int accumulate)
{
    __m512 u[4];
    quads_z(S.s0, S.s1, S.s2, S.s3, u);
    const __m512 u0 = u[0], u1 = u[1], u2 = u[2], u3 = u[3];
#define LANES_PUT_Z(j, u, b)                                                             \
    do {                                                                                 \
        if ((j) >= m)                                                                    \
            return;                                                                      \
        lanes_put4(st + (size_t)(j) * stride, _mm512_extractf32x4_ps(u, b), accumulate); \
    } while (0)
    LANES_PUT_Z(0, u0, 0); LANES_PUT_Z(1, u1, 0); LANES_PUT_Z(2, u2, 0); LANES_PUT_Z(3, u3, 0);
    LANES_PUT_Z(4, u0, 1); LANES_PUT_Z(5, u1, 1); LANES_PUT_Z(6, u2, 1); LANES_PUT_Z(7, u3, 1);
    LANES_PUT_Z(8, u0, 2); LANES_PUT_Z(9, u1, 2); LANES_PUT_Z(10, u2, 2); LANES_PUT_Z(11, u3, 2);
    LANES_PUT_Z(12, u0, 3); LANES_PUT_Z(13, u1, 3); LANES_PUT_Z(14, u2, 3); LANES_PUT_Z(15, u3, 3);
#undef LANES_PUT_Z
}

/* A gate's four statistics for each of its m samples, to st + j·stride. */
static FORCE_INLINE __attribute__((target("avx512f")))
void lanes_stats_z(float *st, size_t stride, const float *dg, const float *xa, const float *xb, size_t nvl, size_t m,
                   int accumulate)
{
    const __mmask16 km = (__mmask16)((1u << m) - 1u);
    const __m512 zero = _mm512_setzero_ps();
    const size_t P = nvl < LOGIC_LANES ? nvl : LOGIC_LANES;
    stat4_z h = { zero, zero, zero, zero };
    if (P > 0) {
        h = lanes_quad_z(0, P, nvl, m, km, dg, xa, xb);
        if (P > 4)
            h = add4_z(h, lanes_quad_z(4, P, nvl, m, km, dg, xa, xb));
        if (P > 8) {
            stat4_z q = lanes_quad_z(8, P, nvl, m, km, dg, xa, xb);
            if (P > 12)
                q = add4_z(q, lanes_quad_z(12, P, nvl, m, km, dg, xa, xb));
            h = add4_z(h, q);
        }
    }
    lanes_store_z(st, stride, add4_z(h, (stat4_z){ zero, zero, zero, zero }), m, accumulate);   /* f */
}

static __attribute__((target("avx512f")))
void lanes_z(float *dx, float *stats, size_t stride, const float *dy, const float *x, const logic_layer *L,
             const float *coef, const uint8_t *first, size_t nvl, size_t m, int accumulate)
{
    const size_t ld = LOGIC_LANES_LD(nvl, m);
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const size_t ra = wa[g], rb = wb[g];
        const float *dg = dy + g * ld, *xa = x + ra * ld, *xb = x + rb * ld;
        if (dx != NULL) {
            const float *cg = coef + 4 * g;
            const unsigned fg = first != NULL ? first[g] : 0u;
            const __mmask16 keep_a = (fg & LOGIC_FIRST_A) ? 0 : 0xFFFF, keep_b = (fg & LOGIC_FIRST_B) ? 0 : 0xFFFF;
            lanes_dx_z(ld, dg, xa, xb, dx + ra * ld, dx + rb * ld, _mm512_set1_ps(cg[1]), _mm512_set1_ps(cg[2]),
                       _mm512_set1_ps(cg[3]), keep_a, keep_b);
        }
        lanes_stats_z(stats + 4 * g, stride, dg, xa, xb, nvl, m, accumulate);
    }
}

/* AVX2: the 16 lanes as two halves of 8 samples, each run on its own (a
 * half with no sample below m is skipped); the same order of sums. */
static FORCE_INLINE __attribute__((target("avx2")))
stat4_y add4_y(stat4_y a, stat4_y b)
{
    return (stat4_y){ _mm256_add_ps(a.s0, b.s0), _mm256_add_ps(a.s1, b.s1), _mm256_add_ps(a.s2, b.s2),
                      _mm256_add_ps(a.s3, b.s3) };
}

/* lanes_dx_z on 8 lanes. */
static FORCE_INLINE __attribute__((target("avx2")))
void lanes_dx_y(size_t ld, const float *dg, const float *xa, const float *xb, float *dxa, float *dxb, __m256 ca,
                __m256 cb, __m256 cab, __m256 keep_a, __m256 keep_b)
{
    for (size_t o = 0; o < ld; o += 8) {
        const __m256 d = grad_floor_y(_mm256_loadu_ps(dg + o));
        const __m256 av = _mm256_loadu_ps(xa + o), bv = _mm256_loadu_ps(xb + o);
        /* a first touch: whatever the row holds, and 0 bits: +0 */
        const __m256 ta = _mm256_mul_ps(d, _mm256_add_ps(ca, _mm256_mul_ps(cab, bv)));
        _mm256_storeu_ps(dxa + o, _mm256_add_ps(_mm256_and_ps(_mm256_loadu_ps(dxa + o), keep_a), ta));
        const __m256 tb = _mm256_mul_ps(d, _mm256_add_ps(cb, _mm256_mul_ps(cab, av)));
        _mm256_storeu_ps(dxb + o, _mm256_add_ps(_mm256_and_ps(_mm256_loadu_ps(dxb + o), keep_b), tb));
    }
}

/* 8 floats of a window, live lanes kl. A full half (8 live lanes) ends
 * within its virtual lane's m floats, so within the row: a plain load,
 * which runs faster than vmaskmovps. */
static FORCE_INLINE __attribute__((target("avx2")))
__m256 lanes_load_y(const float *p, __m256i kl, const int full)
{
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, kl);
}

/* lanes_vl_z on 8 samples. */
static FORCE_INLINE __attribute__((target("avx2")))
stat4_y lanes_vl_y(size_t o, __m256i kl, const float *dg, const float *xa, const float *xb, const int full)
{
    const __m256 d = grad_floor_y(lanes_load_y(dg + o, kl, full));
    const __m256 av = lanes_load_y(xa + o, kl, full), bv = lanes_load_y(xb + o, kl, full);
    return (stat4_y){ d, _mm256_mul_ps(d, av), _mm256_mul_ps(d, bv), _mm256_mul_ps(d, _mm256_mul_ps(av, bv)) };
}

static FORCE_INLINE __attribute__((target("avx2")))
stat4_y lanes_acc_y(size_t v, size_t nvl, size_t m, __m256i kl, const float *dg, const float *xa, const float *xb,
                    const int full)
{
    stat4_y t = lanes_vl_y(v * m, kl, dg, xa, xb, full);
    for (size_t vl = v + LOGIC_LANES; vl < nvl; vl += LOGIC_LANES)
        t = add4_y(t, lanes_vl_y(vl * m, kl, dg, xa, xb, full));
    return t;
}

static FORCE_INLINE __attribute__((target("avx2")))
stat4_y lanes_quad_y(size_t v0, size_t P, size_t nvl, size_t m, __m256i kl, const float *dg, const float *xa,
                     const float *xb, const int full)
{
    stat4_y q = lanes_acc_y(v0, nvl, m, kl, dg, xa, xb, full);
    if (v0 + 1 < P)
        q = add4_y(q, lanes_acc_y(v0 + 1, nvl, m, kl, dg, xa, xb, full));
    if (v0 + 2 < P) {
        stat4_y u = lanes_acc_y(v0 + 2, nvl, m, kl, dg, xa, xb, full);
        if (v0 + 3 < P)
            u = add4_y(u, lanes_acc_y(v0 + 3, nvl, m, kl, dg, xa, xb, full));
        q = add4_y(q, u);
    }
    return q;
}

static FORCE_INLINE __attribute__((target("avx2")))
void lanes_store_y(float *st, size_t stride, stat4_y S, size_t m, int accumulate)
{
    __m256 u[4];
    quads_y(S.s0, S.s1, S.s2, S.s3, u);
    const __m256 u0 = u[0], u1 = u[1], u2 = u[2], u3 = u[3];
#define LANES_PUT_Y(j, u, b)                                                             \
    do {                                                                                 \
        if ((j) >= m)                                                                    \
            return;                                                                      \
        lanes_put4(st + (size_t)(j) * stride, _mm256_extractf128_ps(u, b), accumulate);  \
    } while (0)
    LANES_PUT_Y(0, u0, 0); LANES_PUT_Y(1, u1, 0); LANES_PUT_Y(2, u2, 0); LANES_PUT_Y(3, u3, 0);
    LANES_PUT_Y(4, u0, 1); LANES_PUT_Y(5, u1, 1); LANES_PUT_Y(6, u2, 1); LANES_PUT_Y(7, u3, 1);
#undef LANES_PUT_Y
}

/* The statistics of samples o .. o + mh − 1 of one gate (row offset o
 * within a virtual lane of m samples); full: mh = 8. */
static FORCE_INLINE __attribute__((target("avx2")))
void lanes_y_half(float *st, size_t stride, const float *dg, const float *xa, const float *xb, size_t nvl, size_t m,
                  size_t mh, int accumulate, const int full)
{
    const __m256i kl = _mm256_loadu_si256((const __m256i *)(const void *)(y_mask_table + 8 - mh));
    const __m256 zero = _mm256_setzero_ps();
    const size_t P = nvl < LOGIC_LANES ? nvl : LOGIC_LANES;
    stat4_y h = { zero, zero, zero, zero };
    if (P > 0) {
        h = lanes_quad_y(0, P, nvl, m, kl, dg, xa, xb, full);
        if (P > 4)
            h = add4_y(h, lanes_quad_y(4, P, nvl, m, kl, dg, xa, xb, full));
        if (P > 8) {
            stat4_y q = lanes_quad_y(8, P, nvl, m, kl, dg, xa, xb, full);
            if (P > 12)
                q = add4_y(q, lanes_quad_y(12, P, nvl, m, kl, dg, xa, xb, full));
            h = add4_y(h, q);
        }
    }
    lanes_store_y(st, stride, add4_y(h, (stat4_y){ zero, zero, zero, zero }), mh, accumulate);   /* f */
}

static __attribute__((target("avx2")))
void lanes_y(float *dx, float *stats, size_t stride, const float *dy, const float *x, const logic_layer *L,
             const float *coef, const uint8_t *first, size_t nvl, size_t m, int accumulate)
{
    const size_t ld = LOGIC_LANES_LD(nvl, m);
    /* in locals, as in forward_z_rows */
    const uint32_t *wa = L->a, *wb = L->b;
    const size_t out = L->out;
    for (size_t g = 0; g < out; g++) {
        const size_t ra = wa[g], rb = wb[g];
        const float *dg = dy + g * ld, *xa = x + ra * ld, *xb = x + rb * ld;
        if (dx != NULL) {
            const float *cg = coef + 4 * g;
            const unsigned fg = first != NULL ? first[g] : 0u;
            const __m256 keep_a = _mm256_castsi256_ps(_mm256_set1_epi32((fg & LOGIC_FIRST_A) ? 0 : -1));
            const __m256 keep_b = _mm256_castsi256_ps(_mm256_set1_epi32((fg & LOGIC_FIRST_B) ? 0 : -1));
            lanes_dx_y(ld, dg, xa, xb, dx + ra * ld, dx + rb * ld, _mm256_set1_ps(cg[1]), _mm256_set1_ps(cg[2]),
                       _mm256_set1_ps(cg[3]), keep_a, keep_b);
        }
        for (size_t o = 0; o < m; o += 8) {
            float *sh = stats + o * stride + 4 * g;
            if (m - o >= 8)
                lanes_y_half(sh, stride, dg + o, xa + o, xb + o, nvl, m, 8, accumulate, 1);
            else
                lanes_y_half(sh, stride, dg + o, xa + o, xb + o, nvl, m, m - o, accumulate, 0);
        }
    }
}

/* ---- logic_coeffs: dmath_expf on 8 (4) lanes of binary64. ----
 *
 * dmath_exp's operations (engine/dmath.c), lane by lane, for arguments in
 * [EXP_LO, 0], where its result is normal and it takes the k <= 1023,
 * k >= -1021 branch: t = x·INV_LN2, k = trunc(t ± 0.5) (toward zero, as
 * the (int) conversion), hi = x − k·LN2_HI, lo = k·LN2_LO, r = hi − lo, the
 * same Horner chain, q = (r·r)·p, s = 1 + hi, err = (1 − s) + hi,
 * y = s + (err + (q − lo)), y·2^k with 2^k built from its exponent bits;
 * then rounded once to float (y <= 1: no overflow, as narrow()). A gate with
 * any argument outside [EXP_LO, 0] (or NaN) takes gate_coeffs_scalar.
 * tests/test_logic.c compares the two for every path. If dmath_exp ever
 * changes, this copy must change with it (the test fails otherwise). */
#define EXP_LO (-700.0f)
static const double X_LN2_HI = 0x1.62e42feep-1;
static const double X_LN2_LO = 0x1.a39ef35793c76p-33;
static const double X_INV_LN2 = 0x1.71547652b82fep+0;
/* The Horner chain's constants after the first, 1/13!: 1/12!, ..., 1/2!. */
static const double EXP_C[11] = { 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                  1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0,
                                  1.0 / 24.0, 1.0 / 6.0, 0.5 };

/* p[j] = c[i] + r[j]·p[j] for i = 0 .. stages−1, stage by stage over the
 * n vectors (independent chains side by side, see below); _z and _y. */
#define HORNER_STAGES_FN(name, isa, T, add, mul, set1)                                         \
    static FORCE_INLINE __attribute__((target(isa)))                                           \
    void name(T *p, const T *r, const double *c, const int stages, const int n)                \
    {                                                                                          \
        _Pragma("GCC unroll 11") for (int i = 0; i < stages; i++)                              \
            _Pragma("GCC unroll 8") for (int j = 0; j < n; j++)                                \
                p[j] = add(set1(c[i]), mul(r[j], p[j]));                                       \
    }
HORNER_STAGES_FN(horner_stages_z, "avx512f", __m512d, _mm512_add_pd, _mm512_mul_pd, _mm512_set1_pd)
HORNER_STAGES_FN(horner_stages_y, "avx2", __m256d, _mm256_add_pd, _mm256_mul_pd, _mm256_set1_pd)
#undef HORNER_STAGES_FN

/* exp on n vectors side by side: the Horner chain is 11 dependent
 * multiply-adds, so one vector at a time leaves the FP pipes idle for most
 * of its latency; stage by stage over n = 8 vectors they stay busy. Each
 * lane does the same operations in the same order whatever n is. */
#define EXP_GROUP 8
static FORCE_INLINE __attribute__((target("avx512f")))
void exp8d_group_z(__m512d *v, const int n)
{
    __m512d hi[EXP_GROUP], lo[EXP_GROUP], r[EXP_GROUP], p[EXP_GROUP];
    __m256i k[EXP_GROUP];
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m512d t = _mm512_mul_pd(v[j], _mm512_set1_pd(X_INV_LN2));
        const __mmask8 neg = _mm512_cmp_pd_mask(t, _mm512_setzero_pd(), _CMP_LT_OQ);
        const __m512d u = _mm512_mask_blend_pd(neg, _mm512_add_pd(t, _mm512_set1_pd(0.5)),
                                               _mm512_sub_pd(t, _mm512_set1_pd(0.5)));
        k[j] = _mm512_cvttpd_epi32(u);
        const __m512d kd = _mm512_cvtepi32_pd(k[j]);
        hi[j] = _mm512_sub_pd(v[j], _mm512_mul_pd(kd, _mm512_set1_pd(X_LN2_HI)));
        lo[j] = _mm512_mul_pd(kd, _mm512_set1_pd(X_LN2_LO));
        r[j] = _mm512_sub_pd(hi[j], lo[j]);
        p[j] = _mm512_set1_pd(1.0 / 6227020800.0);
    }
    horner_stages_z(p, r, EXP_C, 11, n);
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m512d q = _mm512_mul_pd(_mm512_mul_pd(r[j], r[j]), p[j]);
        const __m512d one = _mm512_set1_pd(1.0);
        const __m512d s = _mm512_add_pd(one, hi[j]);
        const __m512d err = _mm512_add_pd(_mm512_sub_pd(one, s), hi[j]);
        const __m512d y = _mm512_add_pd(s, _mm512_add_pd(err, _mm512_sub_pd(q, lo[j])));
        const __m512i bits = _mm512_slli_epi64(_mm512_add_epi64(_mm512_cvtepi32_epi64(k[j]), _mm512_set1_epi64(1023)),
                                               52);
        v[j] = _mm512_mul_pd(y, _mm512_castsi512_pd(bits));
    }
}

/* The float results of exp8d_group_z, cheaper (Ziv's test). A shorter
 * exp — x = (16k' + j)·ln2/16 + r, |r| <= ln2/32, 2^(j/16) from a table
 * and e^r from its degree-5 Taylor polynomial — is within 2^-42 of
 * dmath_exp in relative terms (the polynomial's truncation, r^6/720, is
 * 1.4e-13; the table and the roundings add a few 2^-53). Rounded to float
 * it gives dmath_expf's bits unless dmath_exp's result and its own sit on
 * either side of a rounding point of float: both are then within 2^-39 of
 * the point, i.e. the low 29 bits of the double's significand (those float
 * drops) are within 2^14 of 2^28. Such a lane, or a lane below -87 (whose
 * float may be subnormal, with other rounding points), flags its group and
 * the group is redone with exp8d_group_z. tests/test_logic.c runs every
 * float argument in [-88, 0] through both and compares the bits. */
static const double EXPF_T16[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0,
};   /* 2^(j/16), rounded to double */
static const double EXPF_INV = 0x1.71547652b82fep+4;   /* 16/ln2 */
static const double EXPF_C1 = 0x1.62e42fefa0000p-5;    /* ln2/16, 36 bits: k·C1 exact for |k| < 2^17 */
static const double EXPF_C2 = 0x1.cf79abc9e3b3ap-44;   /* ln2/16 − C1 */
static const double EXPF_P[5] = { 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0 };   /* after 1/5! */

/* e^x on n vectors, as many as exp8d_group_z takes; returns the lanes
 * whose float rounding it cannot vouch for (then v holds garbage there). */
static FORCE_INLINE __attribute__((target("avx512f")))
__mmask8 expf8d_group_z(__m512d *v, const int n)
{
    const __m512d tlo = _mm512_loadu_pd(EXPF_T16), thi = _mm512_loadu_pd(EXPF_T16 + 8);
    __m512d r[EXP_GROUP], p[EXP_GROUP];
    __m512i k[EXP_GROUP];
    __mmask8 unsure = 0;
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m512d kf = _mm512_roundscale_pd(_mm512_mul_pd(v[j], _mm512_set1_pd(EXPF_INV)),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r[j] = _mm512_sub_pd(_mm512_sub_pd(v[j], _mm512_mul_pd(kf, _mm512_set1_pd(EXPF_C1))),
                             _mm512_mul_pd(kf, _mm512_set1_pd(EXPF_C2)));
        k[j] = _mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(kf));
        unsure |= _mm512_cmp_pd_mask(v[j], _mm512_set1_pd(-87.0), _CMP_NGE_UQ);   /* NaN too */
        p[j] = _mm512_set1_pd(1.0 / 120.0);
    }
    horner_stages_z(p, r, EXPF_P, 5, n);
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        /* 2^(j/16) by the low 4 bits of k, 2^(k >> 4) into the exponent */
        const __m512d y = _mm512_mul_pd(_mm512_permutex2var_pd(tlo, k[j], thi), p[j]);
        const __m512i bits = _mm512_add_epi64(_mm512_castpd_si512(y), _mm512_slli_epi64(_mm512_srai_epi64(k[j], 4), 52));
        const __m512i low = _mm512_and_si512(bits, _mm512_set1_epi64(0x1FFFFFFF));
        unsure |= _mm512_cmplt_epu64_mask(_mm512_sub_epi64(low, _mm512_set1_epi64(0x10000000 - 0x4000)),
                                          _mm512_set1_epi64(0x8000));
        v[j] = _mm512_castsi512_pd(bits);
    }
    return unsure;
}

/* 4 vectors of 16 floats as 8 of 8 doubles. */
static FORCE_INLINE __attribute__((target("avx512f")))
void widen4_z(const __m512 *x, __m512d *d)
{
    for (int j = 0; j < EXP_GROUP / 2; j++) {
        d[2 * j] = _mm512_cvtps_pd(_mm512_castps512_ps256(x[j]));
        d[2 * j + 1] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x[j]), 1)));
    }
}

/* dmath_expf on 4 vectors of 16 floats (x[j] -> q[j]): the double lanes of
 * expf8d_group_z, or of exp8d_group_z when it is unsure of any (or when
 * shortcut is 0, for tests). */
static FORCE_INLINE __attribute__((target("avx512f")))
void expf4_z(const __m512 *x, __m512 *q, const int shortcut)
{
    __m512d d[EXP_GROUP];
    widen4_z(x, d);
    if (!shortcut || expf8d_group_z(d, EXP_GROUP) != 0) {
        widen4_z(x, d);
        exp8d_group_z(d, EXP_GROUP);
    }
    for (int j = 0; j < EXP_GROUP / 2; j++)
        q[j] = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(d[2 * j]))),
                                                   _mm256_castps_pd(_mm512_cvtpd_ps(d[2 * j + 1])), 1));
}

static FORCE_INLINE __attribute__((target("avx512f")))
__m512d exp8d_z(__m512d x)
{
    exp8d_group_z(&x, 1);
    return x;
}

static FORCE_INLINE __attribute__((target("avx512f")))
__m256 exp8_z(__m256 xf)
{
    return _mm512_cvtpd_ps(exp8d_z(_mm512_cvtps_pd(xf)));
}

/* Gates one at a time: the 16 logits of a gate in one register. */
static __attribute__((target("avx512f")))
void coeffs_gates_z(const float *logits, size_t gates, float *p, float *coef)
{
    for (size_t g = 0; g < gates; g++) {
        const float *z = logits + g * LOGIC_OPS;
        const __m512 zv = _mm512_loadu_ps(z);
        /* max is exact; ±0 ties give the same e (exp(±0) = 1, z − ±0 = z) */
        const __m512 x = _mm512_sub_ps(zv, _mm512_set1_ps(_mm512_reduce_max_ps(zv)));
        if (_mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_LO), _CMP_GE_OQ) != 0xFFFF) {
            gate_coeffs_scalar(z, p + g * LOGIC_OPS, coef + g * 4);
            continue;
        }
        float e[LOGIC_OPS];
        _mm256_storeu_ps(e, exp8_z(_mm512_castps512_ps256(x)));
        _mm256_storeu_ps(e + 8, exp8_z(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))));
        p_from_e(e, p + g * LOGIC_OPS);
        coef_from_p(p + g * LOGIC_OPS, coef + g * 4);
    }
}

static FORCE_INLINE __attribute__((target("avx2")))
__m256d exp4d_y(__m256d x)
{
    const __m256d t = _mm256_mul_pd(x, _mm256_set1_pd(X_INV_LN2));
    const __m256d neg = _mm256_cmp_pd(t, _mm256_setzero_pd(), _CMP_LT_OQ);
    const __m256d u = _mm256_blendv_pd(_mm256_add_pd(t, _mm256_set1_pd(0.5)), _mm256_sub_pd(t, _mm256_set1_pd(0.5)),
                                       neg);
    const __m128i k = _mm256_cvttpd_epi32(u);
    const __m256d kd = _mm256_cvtepi32_pd(k);
    const __m256d hi = _mm256_sub_pd(x, _mm256_mul_pd(kd, _mm256_set1_pd(X_LN2_HI)));
    const __m256d lo = _mm256_mul_pd(kd, _mm256_set1_pd(X_LN2_LO));
    const __m256d r = _mm256_sub_pd(hi, lo);
    __m256d p = _mm256_set1_pd(1.0 / 6227020800.0);
    for (int i = 0; i < 11; i++)
        p = _mm256_add_pd(_mm256_set1_pd(EXP_C[i]), _mm256_mul_pd(r, p));
    const __m256d q = _mm256_mul_pd(_mm256_mul_pd(r, r), p);
    const __m256d one = _mm256_set1_pd(1.0);
    const __m256d s = _mm256_add_pd(one, hi);
    const __m256d err = _mm256_add_pd(_mm256_sub_pd(one, s), hi);
    const __m256d y = _mm256_add_pd(s, _mm256_add_pd(err, _mm256_sub_pd(q, lo)));
    const __m256i bits = _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(k), _mm256_set1_epi64x(1023)), 52);
    return _mm256_mul_pd(y, _mm256_castsi256_pd(bits));
}

static FORCE_INLINE __attribute__((target("avx2")))
__m128 exp4_y(__m128 xf)
{
    return _mm256_cvtpd_ps(exp4d_y(_mm256_cvtps_pd(xf)));
}

/* expf8d_group_z on 4 lanes a vector: the same shorter exp and the same
 * test of its float rounding, the table read by a gather (AVX2 has no
 * two-register permute). Returns nonzero if any lane of the n vectors is
 * unsure. */
static FORCE_INLINE __attribute__((target("avx2")))
int expf4d_group_y(__m256d *v, const int n)
{
    __m256d r[EXP_GROUP], p[EXP_GROUP];
    __m128i k[EXP_GROUP];
    __m256d unsure = _mm256_setzero_pd();
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m256d kf = _mm256_round_pd(_mm256_mul_pd(v[j], _mm256_set1_pd(EXPF_INV)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r[j] = _mm256_sub_pd(_mm256_sub_pd(v[j], _mm256_mul_pd(kf, _mm256_set1_pd(EXPF_C1))),
                             _mm256_mul_pd(kf, _mm256_set1_pd(EXPF_C2)));
        k[j] = _mm256_cvtpd_epi32(kf);
        unsure = _mm256_or_pd(unsure, _mm256_cmp_pd(v[j], _mm256_set1_pd(-87.0), _CMP_NGE_UQ));   /* NaN too */
        p[j] = _mm256_set1_pd(1.0 / 120.0);
    }
    horner_stages_y(p, r, EXPF_P, 5, n);
#pragma GCC unroll 8
    for (int j = 0; j < n; j++) {
        const __m256d t = _mm256_i32gather_pd(EXPF_T16, _mm_and_si128(k[j], _mm_set1_epi32(15)), 8);
        const __m256i e = _mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm_srai_epi32(k[j], 4)), 52);
        const __m256i bits = _mm256_add_epi64(_mm256_castpd_si256(_mm256_mul_pd(t, p[j])), e);
        /* low − (2^28 − 2^14) in [0, 2^15): AVX2 compares signed only */
        const __m256i d = _mm256_sub_epi64(_mm256_and_si256(bits, _mm256_set1_epi64x(0x1FFFFFFF)),
                                           _mm256_set1_epi64x(0x10000000 - 0x4000));
        const __m256i near = _mm256_and_si256(_mm256_cmpgt_epi64(d, _mm256_set1_epi64x(-1)),
                                              _mm256_cmpgt_epi64(_mm256_set1_epi64x(0x8000), d));
        unsure = _mm256_or_pd(unsure, _mm256_castsi256_pd(near));
        v[j] = _mm256_castsi256_pd(bits);
    }
    return _mm256_movemask_pd(unsure);
}

/* 4 vectors of 8 floats as 8 of 4 doubles. */
static FORCE_INLINE __attribute__((target("avx2")))
void widen4_y(const __m256 *x, __m256d *d)
{
    for (int j = 0; j < EXP_GROUP / 2; j++) {
        d[2 * j] = _mm256_cvtps_pd(_mm256_castps256_ps128(x[j]));
        d[2 * j + 1] = _mm256_cvtps_pd(_mm256_extractf128_ps(x[j], 1));
    }
}

/* expf4_z on 4 vectors of 8 floats. */
static FORCE_INLINE __attribute__((target("avx2")))
void expf4_y(const __m256 *x, __m256 *q, const int shortcut)
{
    __m256d d[EXP_GROUP];
    widen4_y(x, d);
    if (!shortcut || expf4d_group_y(d, EXP_GROUP) != 0) {
        widen4_y(x, d);
        for (int j = 0; j < EXP_GROUP; j++)
            d[j] = exp4d_y(d[j]);
    }
    for (int j = 0; j < EXP_GROUP / 2; j++)
        q[j] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(d[2 * j])), _mm256_cvtpd_ps(d[2 * j + 1]), 1);
}

static __attribute__((target("avx512f")))
void exp_lanes_z(const double *x, double *out)
{
    _mm512_storeu_pd(out, exp8d_z(_mm512_loadu_pd(x)));
}

static __attribute__((target("avx2")))
void exp_lanes_y(const double *x, double *out)
{
    _mm256_storeu_pd(out, exp4d_y(_mm256_loadu_pd(x)));
    _mm256_storeu_pd(out + 4, exp4d_y(_mm256_loadu_pd(x + 4)));
}

static __attribute__((target("avx2")))
void coeffs_gates_y(const float *logits, size_t gates, float *p, float *coef)
{
    for (size_t g = 0; g < gates; g++) {
        const float *z = logits + g * LOGIC_OPS;
        const __m256 z0 = _mm256_loadu_ps(z), z1 = _mm256_loadu_ps(z + 8);
        __m256 mx = _mm256_max_ps(z0, z1);
        mx = _mm256_max_ps(mx, _mm256_permute2f128_ps(mx, mx, 1));
        mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, _MM_SHUFFLE(1, 0, 3, 2)));
        mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, _MM_SHUFFLE(2, 3, 0, 1)));
        const __m256 x0 = _mm256_sub_ps(z0, mx), x1 = _mm256_sub_ps(z1, mx);
        const __m256 lim = _mm256_set1_ps(EXP_LO);
        const int ok = _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(x0, lim, _CMP_GE_OQ),
                                                        _mm256_cmp_ps(x1, lim, _CMP_GE_OQ)));
        if (ok != 0xFF) {
            gate_coeffs_scalar(z, p + g * LOGIC_OPS, coef + g * 4);
            continue;
        }
        float e[LOGIC_OPS];
        _mm_storeu_ps(e, exp4_y(_mm256_castps256_ps128(x0)));
        _mm_storeu_ps(e + 4, exp4_y(_mm256_extractf128_ps(x0, 1)));
        _mm_storeu_ps(e + 8, exp4_y(_mm256_castps256_ps128(x1)));
        _mm_storeu_ps(e + 12, exp4_y(_mm256_extractf128_ps(x1, 1)));
        p_from_e(e, p + g * LOGIC_OPS);
        coef_from_p(p + g * LOGIC_OPS, coef + g * 4);
    }
}

/* Blocks of W gates with one gate per lane (W = 16 for AVX-512, 8 for
 * AVX2): every sum of logic.h runs lane by lane in its own order, so each
 * gate's bits are the scalar twin's. The logits and p are transposed in
 * registers (lane l is gate g0 + l), coef through a small buffer. A block
 * with an exp argument outside [EXP_LO, 0] or a NaN is done gate by gate. */
#define COEF_TERMS(T, ADD, SUB, MUL, SET1, q, c)                                          \
    do {                                                                                  \
        T c0_ = q[8];                                                                     \
        for (int i_ = 9; i_ < LOGIC_OPS; i_++)                                            \
            c0_ = ADD(c0_, q[i_]);                                                        \
        c[0] = c0_;                                                                       \
        c[1] = SUB(ADD(ADD(ADD(q[2], q[3]), q[6]), q[7]), ADD(ADD(ADD(q[8], q[9]), q[12]), q[13])); \
        c[2] = SUB(ADD(ADD(ADD(q[4], q[5]), q[6]), q[7]), ADD(ADD(ADD(q[8], q[9]), q[10]), q[11])); \
        T cab_ = SUB(q[1], q[2]);                                                         \
        cab_ = SUB(cab_, q[4]);                                                           \
        cab_ = SUB(cab_, MUL(SET1(2.0f), q[6]));                                          \
        cab_ = SUB(cab_, q[7]);                                                           \
        cab_ = ADD(cab_, q[8]);                                                           \
        cab_ = ADD(cab_, MUL(SET1(2.0f), q[9]));                                          \
        cab_ = ADD(cab_, q[11]);                                                          \
        cab_ = ADD(cab_, q[13]);                                                          \
        cab_ = SUB(cab_, q[14]);                                                          \
        c[3] = cab_;                                                                      \
    } while (0)

/* r[i][j] -> r[j][i] for a 16 x 16 block of floats (moves only). */
static FORCE_INLINE __attribute__((target("avx512f")))
void transpose16_z(__m512 *r)
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* r[4i + c], 128-bit block b: column 4b + c of rows 4i .. 4i+3 */
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    __m512 o[16];
    for (int c = 0; c < 4; c++) {
        const __m512 u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512 u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
        const __m512 u2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512 u3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
        o[c] = _mm512_shuffle_f32x4(u0, u2, _MM_SHUFFLE(2, 0, 2, 0));
        o[8 + c] = _mm512_shuffle_f32x4(u0, u2, _MM_SHUFFLE(3, 1, 3, 1));
        o[4 + c] = _mm512_shuffle_f32x4(u1, u3, _MM_SHUFFLE(2, 0, 2, 0));
        o[12 + c] = _mm512_shuffle_f32x4(u1, u3, _MM_SHUFFLE(3, 1, 3, 1));
    }
    for (int i = 0; i < 16; i++)
        r[i] = o[i];
}

/* c[k] lane l (coefficient k of gate l) to out[4·l + k], 16 gates: quads_z
 * puts gate 4q + r in 128-bit block q of u[r], then two levels of block
 * shuffles gather blocks q of u[0..3]. Where 64 scalar moves took 8% of
 * the coefficients' time. */
static FORCE_INLINE __attribute__((target("avx512f")))
void store_coef4_z(float *out, const __m512 *c)
{
    __m512 u[4];
    quads_z(c[0], c[1], c[2], c[3], u);
    const __m512 lo01 = _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 lo23 = _mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 hi01 = _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 hi23 = _mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(3, 2, 3, 2));
    _mm512_storeu_ps(out, _mm512_shuffle_f32x4(lo01, lo23, _MM_SHUFFLE(2, 0, 2, 0)));        /* gates 0-3 */
    _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(lo01, lo23, _MM_SHUFFLE(3, 1, 3, 1)));   /* 4-7 */
    _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(hi01, hi23, _MM_SHUFFLE(2, 0, 2, 0)));   /* 8-11 */
    _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(hi01, hi23, _MM_SHUFFLE(3, 1, 3, 1)));   /* 12-15 */
}

static __attribute__((target("avx512f")))
void coeffs_z(const float *logits, size_t gates, float *p, float *coef)
{
    size_t g0 = 0;
    for (; g0 + 16 <= gates; g0 += 16) {
        const float *z = logits + g0 * LOGIC_OPS;
        __m512 x[LOGIC_OPS];
        for (int j = 0; j < LOGIC_OPS; j++)
            x[j] = _mm512_loadu_ps(z + j * LOGIC_OPS);
        transpose16_z(x);   /* x[j]: logit j of gates g0 .. g0+15 */
        __m512 m = x[0];
        for (int j = 1; j < LOGIC_OPS; j++)
            m = _mm512_max_ps(m, x[j]);
        __mmask16 ok = 0xFFFF;
        for (int j = 0; j < LOGIC_OPS; j++) {
            x[j] = _mm512_sub_ps(x[j], m);
            ok &= _mm512_cmp_ps_mask(x[j], _mm512_set1_ps(EXP_LO), _CMP_GE_OQ);
        }
        if (ok != 0xFFFF) {
            coeffs_gates_z(z, 16, p + g0 * LOGIC_OPS, coef + g0 * 4);
            continue;
        }
        __m512 q[LOGIC_OPS];
        for (int j0 = 0; j0 < LOGIC_OPS; j0 += EXP_GROUP / 2)
            expf4_z(x + j0, q + j0, 1);
        __m512 sum = q[0];
        for (int j = 1; j < LOGIC_OPS; j++)
            sum = _mm512_add_ps(sum, q[j]);
        for (int j = 0; j < LOGIC_OPS; j++)
            q[j] = _mm512_div_ps(q[j], sum);
        __m512 c[4];
        COEF_TERMS(__m512, _mm512_add_ps, _mm512_sub_ps, _mm512_mul_ps, _mm512_set1_ps, q, c);
        transpose16_z(q);
        for (int l = 0; l < 16; l++)
            _mm512_storeu_ps(p + (g0 + (size_t)l) * LOGIC_OPS, q[l]);
        store_coef4_z(coef + g0 * 4, c);
    }
    coeffs_gates_z(logits + g0 * LOGIC_OPS, gates - g0, p + g0 * LOGIC_OPS, coef + g0 * 4);
}

/* r[i][j] -> r[j][i] for an 8 x 8 block of floats (moves only). */
static FORCE_INLINE __attribute__((target("avx2")))
void transpose8_y(__m256 *r)
{
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) {
        u[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
    }
}

/* store_coef4_z on 8 gates: 128-bit half q of u[r] holds gate 4q + r. */
static FORCE_INLINE __attribute__((target("avx2")))
void store_coef4_y(float *out, const __m256 *c)
{
    __m256 u[4];
    quads_y(c[0], c[1], c[2], c[3], u);
    _mm256_storeu_ps(out, _mm256_permute2f128_ps(u[0], u[1], 0x20));        /* gates 0, 1 */
    _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u[2], u[3], 0x20));    /* 2, 3 */
    _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u[0], u[1], 0x31));   /* 4, 5 */
    _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u[2], u[3], 0x31));   /* 6, 7 */
}

static __attribute__((target("avx2")))
void coeffs_y(const float *logits, size_t gates, float *p, float *coef)
{
    size_t g0 = 0;
    for (; g0 + 8 <= gates; g0 += 8) {
        const float *z = logits + g0 * LOGIC_OPS;
        __m256 x[LOGIC_OPS];
        for (int l = 0; l < 8; l++) {
            x[l] = _mm256_loadu_ps(z + l * LOGIC_OPS);
            x[8 + l] = _mm256_loadu_ps(z + l * LOGIC_OPS + 8);
        }
        transpose8_y(x);       /* x[j], j < 8: logit j of gates g0 .. g0+7 */
        transpose8_y(x + 8);
        __m256 m = x[0];
        for (int j = 1; j < LOGIC_OPS; j++)
            m = _mm256_max_ps(m, x[j]);
        __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        for (int j = 0; j < LOGIC_OPS; j++) {
            x[j] = _mm256_sub_ps(x[j], m);
            ok = _mm256_and_ps(ok, _mm256_cmp_ps(x[j], _mm256_set1_ps(EXP_LO), _CMP_GE_OQ));
        }
        if (_mm256_movemask_ps(ok) != 0xFF) {
            coeffs_gates_y(z, 8, p + g0 * LOGIC_OPS, coef + g0 * 4);
            continue;
        }
        __m256 q[LOGIC_OPS];
        for (int j0 = 0; j0 < LOGIC_OPS; j0 += EXP_GROUP / 2)
            expf4_y(x + j0, q + j0, 1);
        __m256 sum = q[0];
        for (int j = 1; j < LOGIC_OPS; j++)
            sum = _mm256_add_ps(sum, q[j]);
        for (int j = 0; j < LOGIC_OPS; j++)
            q[j] = _mm256_div_ps(q[j], sum);
        __m256 c[4];
        COEF_TERMS(__m256, _mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_set1_ps, q, c);
        transpose8_y(q);
        transpose8_y(q + 8);
        for (int l = 0; l < 8; l++) {
            _mm256_storeu_ps(p + (g0 + (size_t)l) * LOGIC_OPS, q[l]);
            _mm256_storeu_ps(p + (g0 + (size_t)l) * LOGIC_OPS + 8, q[8 + l]);
        }
        store_coef4_y(coef + g0 * 4, c);
    }
    coeffs_gates_y(logits + g0 * LOGIC_OPS, gates - g0, p + g0 * LOGIC_OPS, coef + g0 * 4);
}

/* logic_expand with the 16 ops of a gate on 16 lanes (AVX2: two times 8):
 * lane j computes F_j with the columns of LOGIC_AFFINE as float vectors,
 * the operations and their order as expand_scalar's; Y is expand_scalar's
 * scalar expression, broadcast. */
static __attribute__((target("avx512f")))
void expand_z(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo, size_t hi)
{
    float col[4][LOGIC_OPS];
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < LOGIC_OPS; j++)
            col[k][j] = (float)LOGIC_AFFINE[j][k];
    const __m512 A = _mm512_loadu_ps(col[0]), B = _mm512_loadu_ps(col[1]);
    const __m512 C = _mm512_loadu_ps(col[2]), D = _mm512_loadu_ps(col[3]);
    for (size_t g = lo; g < hi; g++) {
        const float *S = stats + g * 4, *c = coef + g * 4;
        const float Y = ((c[0] * S[0] + c[1] * S[1]) + c[2] * S[2]) + c[3] * S[3];
        __m512 F = _mm512_add_ps(_mm512_mul_ps(A, _mm512_set1_ps(S[0])), _mm512_mul_ps(B, _mm512_set1_ps(S[1])));
        F = _mm512_add_ps(F, _mm512_mul_ps(C, _mm512_set1_ps(S[2])));
        F = _mm512_add_ps(F, _mm512_mul_ps(D, _mm512_set1_ps(S[3])));
        const __m512 d = _mm512_mul_ps(_mm512_loadu_ps(p + g * LOGIC_OPS), _mm512_sub_ps(F, _mm512_set1_ps(Y)));
        _mm512_storeu_ps(dlogits + g * LOGIC_OPS, d);
    }
}

static __attribute__((target("avx2")))
void expand_y(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo, size_t hi)
{
    float col[4][LOGIC_OPS];
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < LOGIC_OPS; j++)
            col[k][j] = (float)LOGIC_AFFINE[j][k];
    for (size_t g = lo; g < hi; g++) {
        const float *S = stats + g * 4, *c = coef + g * 4;
        const float Y = ((c[0] * S[0] + c[1] * S[1]) + c[2] * S[2]) + c[3] * S[3];
        for (int h = 0; h < 2; h++) {
            const __m256 A = _mm256_loadu_ps(col[0] + 8 * h), B = _mm256_loadu_ps(col[1] + 8 * h);
            const __m256 C = _mm256_loadu_ps(col[2] + 8 * h), D = _mm256_loadu_ps(col[3] + 8 * h);
            __m256 F = _mm256_add_ps(_mm256_mul_ps(A, _mm256_set1_ps(S[0])), _mm256_mul_ps(B, _mm256_set1_ps(S[1])));
            F = _mm256_add_ps(F, _mm256_mul_ps(C, _mm256_set1_ps(S[2])));
            F = _mm256_add_ps(F, _mm256_mul_ps(D, _mm256_set1_ps(S[3])));
            const __m256 d = _mm256_mul_ps(_mm256_loadu_ps(p + g * LOGIC_OPS + 8 * h), _mm256_sub_ps(F, _mm256_set1_ps(Y)));
            _mm256_storeu_ps(dlogits + g * LOGIC_OPS + 8 * h, d);
        }
    }
}

#endif /* LOGIC_X86 */

void logic_expand(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo, size_t hi)
{
    const int path = current_path();
#if LOGIC_X86
    if (path == PATH_AVX512) {
        expand_z(dlogits, stats, p, coef, lo, hi);
        return;
    }
    if (path == PATH_AVX2) {
        expand_y(dlogits, stats, p, coef, lo, hi);
        return;
    }
#endif
    (void)path;
    expand_scalar(dlogits, stats, p, coef, lo, hi);
}

#if LOGIC_X86
/* logic_expf_lanes' block of 4 vectors on one path. */
#define EXPF_LANES_FN(name, isa, T, width, load, store, expf4)            \
    static __attribute__((target(isa)))                                  \
    void name(const float *x, float *out, int shortcut)                  \
    {                                                                    \
        T v[EXP_GROUP / 2], q[EXP_GROUP / 2];                            \
        for (int j = 0; j < EXP_GROUP / 2; j++)                          \
            v[j] = load(x + (width) * j);                                \
        expf4(v, q, shortcut);                                           \
        for (int j = 0; j < EXP_GROUP / 2; j++)                          \
            store(out + (width) * j, q[j]);                              \
    }
EXPF_LANES_FN(expf_lanes_y, "avx2", __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, expf4_y)
EXPF_LANES_FN(expf_lanes_z, "avx512f", __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, expf4_z)
#undef EXPF_LANES_FN
#endif

/* One block of logic_expf_lanes (64 floats) on `path`. */
static void expf_block(int path, const float *x, float *out, int shortcut)
{
#if LOGIC_X86
    if (path == PATH_AVX512) {
        expf_lanes_z(x, out, shortcut);
        return;
    }
    if (path == PATH_AVX2) {
        expf_lanes_y(x, out, shortcut);
        expf_lanes_y(x + 32, out + 32, shortcut);
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
            exp_lanes_z(a, r);
        else if (vec)
            exp_lanes_y(a, r);
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
        coeffs_z(logits, gates, p, coef);
        return;
    }
    if (path == PATH_AVX2) {
        coeffs_y(logits, gates, p, coef);
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
        forward_z(y, x, L, coef, n, ld);
        return;
    }
    if (path == PATH_AVX2) {
        forward_y(y, x, L, coef, n, ld);
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
            backward_z(dx, stats, dy, x, L, coef, n, ld, (flags & ~SILENT_OK) | (silent_ok ? SILENT_OK : 0), first);
        else
            backward_y(dx, stats, dy, x, L, coef, n, ld, flags, first);
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
            lanes_z(dx, stats, stats_stride, dy, x, L, coef, first, nvl, m, flags & LOGIC_STATS_ADD);
        else
            lanes_y(dx, stats, stats_stride, dy, x, L, coef, first, nvl, m, flags & LOGIC_STATS_ADD);
        return;
    }
#endif
    (void)path;
    logic_backward_lanes_scalar(dx, stats, stats_stride, dy, x, L, coef, nvl, m, flags);
}
