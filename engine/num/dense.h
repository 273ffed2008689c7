/* dense.h — dense-layer kernels with a fixed order of arithmetic.
 *
 * Matrices are row-major. Every output element is one sequential sum whose
 * order is written below; each term is a fused multiply-add, fmaf(x, y, s):
 * the exact product added to s and rounded once, on every path. (The build
 * pins -ffp-contract=off, so the compiler fuses nothing on its own; docs/contract.md
 * ("Arithmetic order") allows FMA through an explicit fmaf on every build alike, and libm's
 * fmaf is correctly rounded where the CPU has no FMA.) The SIMD paths (chosen
 * at run time) and the scalar twins perform the identical operations in the
 * identical order, and tests compare them bit for bit (apart from which
 * payload wins when several operands are NaN, which IEEE leaves open and no
 * path pins). LOCKSTEP_SIMD=off in the environment, or dense_set_simd(0),
 * forces the scalar twins.
 */
#ifndef LS_DENSE_H
#define LS_DENSE_H

#include <stddef.h>

#include "include/lockstep.h"

/* out[b][n] = s, where s starts at bias[n] (0.0f when bias is NULL) and then,
 * for k = 0 .. K-1 in order, s = fmaf(in[b][k], w[k][n], s).
 * out: [B][N], in: [B][K], w: [K][N], bias: [N] or NULL. out must not alias in. */
void dense_forward(float *out, const float *in, const float *w, const float *bias,
                   size_t B, size_t K, size_t N);

/* The weight gradient, a sum over the B samples (rows of in and dout),
 * summed the way every sum over samples is (docs/contract.md, atoms): the
 * rows are cut into atoms of LS_ATOM consecutive rows from row 0 (the last
 * one shorter when LS_ATOM does not divide B); atom j's sum s_j starts at
 * 0.0f and, for its rows b in order, s_j = fmaf(in[b][k], dout[b][n], s_j);
 * the atom sums are added along the canonical tree over atom indices
 * (include/lockstep.h), giving S (0.0f when B == 0). Then dw[k][n] =
 * dw[k][n] + S when accumulate, else dw[k][n] = S. (So accumulating adds
 * the whole sum of this call: the result equals G + (the accumulate == 0
 * result) element-wise, as a node of the canonical tree would.) dbias[n]
 * (if not NULL) likewise with s_j = s_j + dout[b][n]. So rows that start at
 * an atom boundary of a batch and hold a power-of-two number of its atoms
 * give exactly that subtree's sum. dw: [K][N], dbias: [N], in: [B][K],
 * dout: [B][N]; B < LS_ATOM * 2^(DENSE_MAX_LEVELS - 1). */
#define DENSE_MAX_LEVELS 24
void dense_backward_weights(float *dw, float *dbias, const float *in, const float *dout,
                            size_t B, size_t K, size_t N, int accumulate);

/* The same two on blocks of larger row-major matrices (a block of columns
 * of w and of out, say): each matrix has its own leading dimension, the
 * distance between its rows, so element (r, c) of out is out[r·ldo + c],
 * of in in[r·ldi + c], of w or dw w[r·ldw + c], of dout dout[r·ldd + c]
 * (each at least its row's width). Every element's sum is the one written
 * above, so a block holds the bits the whole matrix has there; only the
 * block's elements are written. dense_forward is dense_forward_ld with
 * ldo = N, ldi = K, ldw = N; dense_backward_weights is ldw = N, ldi = K,
 * ldd = N. */
void dense_forward_ld(float *out, size_t ldo, const float *in, size_t ldi, const float *w, size_t ldw,
                      const float *bias, size_t B, size_t K, size_t N);
void dense_backward_weights_ld(float *dw, size_t ldw, float *dbias, const float *in, size_t ldi,
                               const float *dout, size_t ldd, size_t B, size_t K, size_t N, int accumulate);
/* dst[c][r] = src[r][c] for r < R, c < C: dst is [C][R], src [R][C], not
 * overlapping. A copy, so every path gives the same bits; the SIMD path
 * moves 8 x 8 blocks through registers. */
void dense_transpose(float *dst, const float *src, size_t R, size_t C);
/* The same for a block inside larger matrices: dst[c·ldd + r] = src[r·lds + c]
 * for r < R, c < C (dense_transpose is ldd = R, lds = C). */
void dense_transpose_block(float *dst, size_t ldd, const float *src, size_t lds, size_t R, size_t C);

/* The scalar twins, always available (tests compare them with the above). */
void dense_forward_scalar(float *out, const float *in, const float *w, const float *bias,
                          size_t B, size_t K, size_t N);
void dense_backward_weights_scalar(float *dw, float *dbias, const float *in, const float *dout,
                                   size_t B, size_t K, size_t N, int accumulate);

/* Settings of dense_set_simd. */
#define DENSE_SIMD_OFF 0    /* the scalar twins (also LOCKSTEP_SIMD=off) */
#define DENSE_SIMD_BEST 1   /* the best path the CPU offers (the default) */
#define DENSE_SIMD_AVX2 2   /* at most AVX2 (also LOCKSTEP_SIMD=avx2): tests use it to
                             * run the AVX2 path on AVX-512 hosts */

/* Enable (1) or force off (0) the SIMD paths, or cap them at AVX2 (2); returns
 * the previous setting. The first call of any dense_ function reads
 * LOCKSTEP_SIMD once. Safe to call from any thread at any time; every path
 * gives the same bits. */
int dense_set_simd(int enabled);
/* For tests: how the AVX-512 micro-kernel gives A's element to its FMAs:
 * 1 broadcast into a register, 0 as each FMA's memory operand, -1 the CPU's
 * choice (memory operands on AMD, registers elsewhere); returns the previous
 * form. Every form gives the same bits. */
int dense_set_broadcast(int form);
/* "avx512", "avx2" or "scalar": the path dense_forward takes now. */
const char *dense_simd_name(void);

#endif
