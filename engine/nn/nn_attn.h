/* nn_attn.h — causal multi-head self-attention with its projections.
 *
 * Settings: in = {T, 1, C}, heads H (C a multiple of H; hs = C / H).
 * Output {T, 1, C}. Tensors "wqkv" [C][3C], "bqkv" [3C], "wo" [C][C],
 * "bo" [C]. Column j of qkv is q for j < C, k for C <= j < 2C, v above;
 * head h owns columns h·hs .. h·hs + hs - 1 of each.
 * Saved per sample: qkv [T][3C], the attention weights att [H][T][T]
 * (0 above the diagonal), the heads' output o [T][C].
 * Scratch: W^T of both projections, one T x T matrix, T binary64; per
 * sample d(o) [T][C] and d(qkv) [T][3C].
 *
 * Orders (every dot product over d = 0 .. hs-1 is s = 0.0f, s = fmaf(a_d, b_d, s)):
 *   qkv      = dense_forward(x, wqkv, bqkv) (nn_dense.h's orders)
 *   score    = (q_t · k_u) · scale for u <= t, scale = (float)(1 / sqrt(hs))
 *   softmax  in binary64 over u = 0 .. t: m = max score, e_u = dmath_exp(score_u - m),
 *            S = 0.0 + e_0 + ... + e_t, att[t][u] = (float)(e_u / S)
 *   o[t][d]  = 0.0f, then fmaf(att[t][u], v[u][d], ·) for u = 0 .. t
 *   y        = dense_forward(o, wo, bo)
 * Backward:
 *   dwo, dbo = dense_backward_weights(o, dy); do = dy · wo^T (dense_forward)
 *   datt[t][u] = do_t · v_u;  D_t = 0.0 + att[t][0]·datt[t][0] + ... (binary64, u in order)
 *   ds[t][u] = (float)(att[t][u] · (datt[t][u] - D_t)) · scale
 *   dq[t][d] = 0.0f, fmaf(ds[t][u], k[u][d], ·) for u = 0 .. t
 *   dk[u][d] = 0.0f, fmaf(ds[t][u], q[t][d], ·) for t = u .. T-1
 *   dv[u][d] = 0.0f, fmaf(att[t][u], do[t][d], ·) for t = u .. T-1
 *   dwqkv, dbqkv = dense_backward_weights(x, dqkv); dx = dqkv · wqkv^T
 * The parameter sums are dense_backward_weights' over the call's rows
 * (sample, then t): atoms of LS_ATOM rows in order, the canonical tree.
 */
#ifndef LS_NN_ATTN_H
#define LS_NN_ATTN_H

#include "engine/nn/nn.h"

ls_status nn_attn_describe(nn_layer *l, ls_err *err);
void nn_attn_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                     void *scratch);
void nn_attn_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                      const float *x, const float *y, const float *w, size_t n, void *scratch);

#endif
