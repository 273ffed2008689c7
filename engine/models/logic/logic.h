/* logic.h — layers of differentiable two-input logic gates (difflogic).
 *
 * A gate has 16 logits z (one per two-input Boolean function, in the order of
 * docs/models.md: idx's 4-bit truth table for AB = 00, 01,
 * 10, 11 read MSB first). Training uses the soft gate: p = softmax(z) and
 * y = Σ p_i f_i(a, b), computed in the four-coefficient form
 *     y = ((c0 + cA·a) + cB·b) + cAB·(a·b)
 * with the coefficients computed once per step per gate (logic_coeffs).
 * Backward needs only four sums per gate over everything the gate saw,
 * S = (Σg, Σg·a, Σg·b, Σg·(a·b)), which logic_expand turns into the 16 logit
 * gradients once per step: ∂L/∂z_j = p_j · (F_j − Y), F_j = Σ_k coef_jk S_k,
 * Y = c0·S0 + cA·S1 + cB·S2 + cAB·S3.
 *
 * Activations are laid out [width][ld]: one row per gate output, one lane per
 * sample (or per CA cell), ld a multiple of LOGIC_LANES (16) floats, rows
 * 64-byte aligned. A gate reads its two input rows and writes its output row,
 * so its inputs stream through memory and the SIMD paths vectorise over
 * lanes. Every lane performs exactly the scalar twin's operations in the
 * same order; the only sums across lanes are the four gate statistics, whose
 * order is fixed below (16 virtual accumulators, then a pairwise tree), the
 * same whatever the vector width. LOCKSTEP_SIMD=off (or logic_set_simd(0))
 * forces the scalar twins.
 *
 * Lanes layout: when a sample has few lanes (a 3×3 CA grid has 9), a group
 * of m <= 16 samples goes side by side, each row being [virtual lane][m
 * samples], packed (ld = LOGIC_LANES_LD(nvl, m)): no lane is padding but
 * the row's tail, so a group of 10 samples of 9 lanes fills 6 vectors, not
 * 9. The forward is logic_forward on nvl·m lanes; logic_backward_lanes
 * gives every sample the statistics logic_backward would give it alone,
 * summing the virtual accumulators of all m samples at once, vertically
 * (one unaligned load a virtual lane).
 *
 * The hard gate (inference) is the argmax op (lowest index on ties); hard
 * layers run on 64-bit words, 64 lanes per word, one bitwise expression per
 * gate. Frozen: changing any result bit changes the golden files.
 */
#ifndef LS_LOGIC_H
#define LS_LOGIC_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

#define LOGIC_OPS 16
#define LOGIC_MAX_LAYERS 48   /* gate layers of one network */
#define LOGIC_LANES 16   /* lane padding and the number of virtual stat accumulators */
/* The row stride of logic_backward_lanes: nvl virtual lanes of m samples,
 * rounded up to whole vectors. */
#define LOGIC_LANES_LD(nvl, m) (((nvl) * (m) + LOGIC_LANES - 1) / LOGIC_LANES * LOGIC_LANES)

/* f_idx(a, b) = LOGIC_AFFINE[idx][0] + [1]·a + [2]·b + [3]·(a·b). */
extern const int LOGIC_AFFINE[LOGIC_OPS][4];
/* The relaxation of op idx written directly as in the reference table
 * (e.g. XOR: a + b − 2ab), evaluated in float — for tests. */
float logic_relaxed(int idx, float a, float b);
/* Hard output bit of op idx for input bits a, b: (idx >> (3 - (2a + b))) & 1. */
int logic_hard_bit(int idx, int a, int b);

/* Per gate, once per step: p = softmax(z) with m = max z, e_i = dmath_expf(z_i − m),
 * s = e_0 + e_1 + ... + e_15 in order, p_i = e_i / s; then
 *   c0  = p8 + p9 + ... + p15                      (left to right)
 *   cA  = (p2 + p3 + p6 + p7) − (p8 + p9 + p12 + p13)
 *   cB  = (p4 + p5 + p6 + p7) − (p8 + p9 + p10 + p11)
 *   cAB = p1 − p2 − p4 − 2·p6 − p7 + p8 + 2·p9 + p11 + p13 − p14 (left to right)
 * logits [gates][16] → p [gates][16], coef [gates][4] = (c0, cA, cB, cAB). */
void logic_coeffs(const float *logits, size_t gates, float *p, float *coef);
/* logic_coeffs of the gates of part `part` of a network of `gates` gates cut
 * into parts of LOGIC_PREPARE_GATES (a multiple of 16, so every part but the
 * last is whole blocks: the same bits as one call over all gates), for a
 * model's prepare_part; logic_prepare_parts(gates) parts in all. */
#define LOGIC_PREPARE_GATES 256
size_t logic_prepare_parts(size_t gates);
void logic_coeffs_part(const float *logits, size_t gates, size_t part, float *p, float *coef);
/* For tests: out[i] = dmath_exp(x[i]) computed as logic_coeffs does on the
 * current path (vector lanes for arguments in [-700, 0]); must equal
 * dmath_exp bit for bit. */
void logic_exp_lanes(const double *x, double *out, size_t n);
/* For tests: out[i] = dmath_expf(x[i]) as logic_coeffs computes it on the
 * current path for arguments in [-700, 0] (AVX-512, AVX2: a shorter exp
 * whose float rounding is checked, logic.c; shortcut 0: dmath_exp's
 * operations on every lane); must equal dmath_expf bit for bit. */
void logic_expf_lanes(const float *x, float *out, size_t n, int shortcut);

/* One layer of gates: out gates reading in inputs; gate g reads rows a[g], b[g].
 * first and reads_all are optional (zero: LOGIC_DX_SET falls back to
 * clearing dx); logic_layer_first fills them from the wiring. */
typedef struct {
    size_t in, out;
    const uint32_t *a, *b;    /* [out], each < in */
    const uint8_t *first;     /* [out]: LOGIC_FIRST_A when gate g is the first gate to read row a[g],
                                 LOGIC_FIRST_B the first to read b[g] (a before b: a == b is A only) */
    int reads_all;            /* every row < in is read by some gate */
} logic_layer;

#define LOGIC_FIRST_A 1
#define LOGIC_FIRST_B 2
/* first[out] and L->reads_all from L's wiring (L->first is not read).
 * LS_ENOMEM (its scratch of L->in bytes). */
ls_status logic_layer_first(uint8_t *first, int *reads_all, const logic_layer *L, ls_err *err);

/* Wiring from the addressed RNG; a, b: [out]. Every permutation is
 * rng_permutation(perm, n, seed, RNG_WIRING, 4·addr + role) (frozen):
 * random: c = perm(2·out) (role 0) mod in, relabelled by perm(in) (role 1):
 *         a[g] = rel[c[g]], b[g] = rel[c[out + g]] (balanced fan-out; a == b
 *         allowed), as difflogic's LogicLayer.get_connections('random').
 * unique: difflogic's get_unique_connections: pairs (0,1),(2,3),..., then
 *         (1,2),(3,4),..., then pairs (i, i+k) at offset k = 2, 3, ... while
 *         fewer than out and more than k (difflogic's loop condition),
 *         truncated to out; gate g takes pair perm(out)[g] (role 2). Needs
 *         2·out >= in, and LS_EINVAL when the sequence has fewer than out
 *         pairs (tiny in, e.g. in = 3, out = 3, which difflogic refuses too).
 * Role 3 of every addr is left free for other wiring of the same layer. */
ls_status logic_wire_random(uint32_t *a, uint32_t *b, size_t in, size_t out, uint64_t seed, uint64_t addr,
                            ls_err *err);   /* LS_EINVAL when in == 0 < out; LS_ENOMEM */
ls_status logic_wire_unique(uint32_t *a, uint32_t *b, size_t in, size_t out, uint64_t seed, uint64_t addr,
                            ls_err *err);

/* y[g][l] = ((c0 + cA·x[a_g][l]) + cB·x[b_g][l]) + cAB·(x[a_g][l]·x[b_g][l]) for
 * lanes l < n (lanes n..ld−1 of y are written with unspecified values).
 * x: [in][ld], y: [out][ld], coef: [out][4]. */
void logic_forward(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld);

/* Gradients smaller than this in magnitude read as +0 in the backward
 * (below). Gradients that small come from decay through many gates (a CA
 * rollout of 20-50 steps of about 17 layers; in `logic`, the softmax
 * gradient of a sample classified with near certainty), and as they keep
 * decaying their products fall into the subnormal range, where producing a
 * result takes a microcode assist on x86 cores: flush-to-zero (an
 * experiment; lockstep refuses it) made a checkerboard step 13% and an
 * asynchronous one 20% faster (README). The floor changes bits, so it is
 * part of the golden files; no result the README quotes changed with it.
 * Frozen. */
#define LOGIC_GRAD_FLOOR 0x1p-64f

/* Backward of logic_forward. For g = 0 .. out−1 in order, for every lane l < n:
 *     d  = dy[g][l], replaced by +0.0f when |d| < LOGIC_GRAD_FLOOR (NaN kept),
 *     a = x[a_g][l], b = x[b_g][l]
 *     dx[a_g][l] = dx[a_g][l] + d·(cA + cAB·b)     (when dx is not NULL)
 *     dx[b_g][l] = dx[b_g][l] + d·(cB + cAB·a)     (after the line above)
 * and the four statistics of gate g over lanes 0..n−1, each summed in 16
 * virtual accumulators (lane l into accumulator l mod 16, increasing l,
 * starting at 0.0f) that are then combined by the pairwise tree
 * ((((v0+v1)+(v2+v3))+((v4+v5)+(v6+v7)))+(((v8+v9)+(v10+v11))+((v12+v13)+(v14+v15)))):
 *     S0 = Σ d, S1 = Σ d·a, S2 = Σ d·b, S3 = Σ d·(a·b)
 * written to stats[g][0..3] or, with LOGIC_STATS_ADD in flags, added to them
 * (stats[g][k] = stats[g][k] + S_k).
 * With LOGIC_DX_SET in flags, dx's prior content is ignored: the result is
 * the one the lines above give on a dx whose lanes 0..n−1 are all +0.0f,
 * so the caller need not clear dx. With L->first and L->reads_all set, a
 * row's first update adds its term to 0.0f instead of reading the row (the
 * same bits, no clearing); otherwise lanes 0..n−1 of
 * every row are cleared first. Lanes n..ld−1 of dx are never written.
 * dx: [in][ld] or NULL, dy: [out][ld], stats: [out][4]; neither dx nor
 * stats overlaps dy, x or the other (the kernels may read a later gate's
 * inputs before an earlier gate's dx and stats stores). A kernel may give
 * a gate whose every d is +0 its results without the arithmetic when they
 * are known (logic.c, "Silent gates"): the bits are the same. */
#define LOGIC_STATS_ADD 1
#define LOGIC_DX_SET 2
void logic_backward(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                    const float *coef, size_t n, size_t ld, int flags);

/* logic_backward for a group of m <= LOGIC_LANES samples side by side:
 * the rows are [nvl][m] packed, ld = LOGIC_LANES_LD(nvl, m) floats apart,
 * element vl·m + j being virtual lane vl of sample j. For every sample
 * j < m, dx's lanes of sample j and the statistics of sample j are exactly
 * what logic_backward computes for that sample alone with n = nvl lanes
 * and the same flags:
 *     for g = 0 .. out−1 in order, for every vl < nvl (e = vl·m + j),
 *     d = dy[g][e] with logic_backward's floor:
 *         dx[a_g][e] = dx[a_g][e] + d·(cA + cAB·b),  then
 *         dx[b_g][e] = dx[b_g][e] + d·(cB + cAB·a)      (when dx is not NULL)
 *     S_k of gate g: virtual lane vl into accumulator vl mod 16 (increasing
 *     vl, starting at 0.0f), then logic_backward's pairwise tree,
 * written to stats[j·stats_stride + 4g + k] or, with LOGIC_STATS_ADD,
 * added to it; LOGIC_DX_SET as in logic_backward (L->first and
 * L->reads_all, else elements 0 .. nvl·m − 1 of every row are cleared
 * first). The rows' tails (nvl·m .. ld − 1) are never read for a result;
 * dx's are left unspecified (the SIMD paths run whole vectors over them:
 * zeros in dy's tails keep them zeros, and no denormals). The SIMD paths
 * sum the 16 accumulators of all samples at once, one vector per
 * accumulator (logic.c says why skipping the empty ones and the additions
 * from 0.0f gives the same bits).
 * 1 <= m <= 16; stats rows of different samples must not overlap. */
void logic_backward_lanes(float *dx, float *stats, size_t stats_stride, const float *dy, const float *x,
                          const logic_layer *L, const float *coef, size_t nvl, size_t m, int flags);

/* The scalar twins (tests compare them with the above). */
void logic_forward_scalar(float *y, const float *x, const logic_layer *L, const float *coef, size_t n, size_t ld);
void logic_backward_scalar(float *dx, float *stats, const float *dy, const float *x, const logic_layer *L,
                           const float *coef, size_t n, size_t ld, int flags);
void logic_backward_lanes_scalar(float *dx, float *stats, size_t stats_stride, const float *dy, const float *x,
                                 const logic_layer *L, const float *coef, size_t nvl, size_t m, int flags);
/* 0: scalar twins (also LOCKSTEP_SIMD=off), 1: the best path the CPU offers
 * (default), 2: at most AVX2 (also LOCKSTEP_SIMD=avx2); returns the previous
 * setting. Applies to logic_forward, logic_backward, logic_backward_lanes,
 * logic_coeffs and logic_expand; every path gives the same bits. */
int logic_set_simd(int enabled);
const char *logic_simd_name(void);   /* "avx512", "avx2" or "scalar" */

/* dlogits[g][j] = p_j · (F_j − Y) with F_j = ((α_j·S0 + β_j·S1) + γ_j·S2) + δ_j·S3
 * (α..δ = LOGIC_AFFINE[j], as floats) and Y = ((c0·S0 + cA·S1) + cB·S2) + cAB·S3,
 * for gates [lo, hi). stats: the batch's summed statistics [gates][4]. */
void logic_expand(float *dlogits, const float *stats, const float *p, const float *coef, size_t lo, size_t hi);

/* ops[g] = argmax_j logits[g][j] (lowest index on ties). */
void logic_hard_ops(uint8_t *ops, const float *logits, size_t gates);
/* Hard layer on bit-packed lanes: y[g][w] = op_g(x[a_g][w], x[b_g][w]) bitwise,
 * x: [in][words], y: [out][words]. */
void logic_hard_forward(uint64_t *y, const uint64_t *x, const logic_layer *L, const uint8_t *ops, size_t words);
/* op idx applied bitwise to words a, b. */
uint64_t logic_hard_word(int idx, uint64_t a, uint64_t b);

#endif
