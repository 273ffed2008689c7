/* nn_dense.h — the dense layer: y = x W + b over the last axis, through the
 * kernels of engine/num/dense.h, so a declared MLP has the hand-written
 * one's bits.
 *
 * Settings: in = {rows, 1, K} (any rows: tokens of a sequence, 1 for a
 * flat sample; in[1] must be 1), units = N, bias 0/1. Output {rows, 1, N}.
 * Tensors: "w" [K][N] then "b" [N] (with bias). No saved activations.
 * Scratch: K·N floats (W transposed, for dx).
 *
 * Orders (R = n·rows rows, r = sample·rows + row):
 *   forward   y[r][j]  = dense_forward: s = b[j] (0.0f without bias), then
 *                        s = fmaf(x[r][k], W[k][j], s) for k = 0 .. K-1.
 *   backward  dW[k][j] = dense_backward_weights: s = 0.0f, then
 *                        s = fmaf(x[r][k], dy[r][j], s) for r = 0 .. R-1
 *                        (sample order, then row order within a sample);
 *             db[j]    = likewise s = s + dy[r][j];
 *             dx[r][k] = dense_forward of dy with W^T and no bias: s = 0.0f,
 *                        s = fmaf(dy[r][j], W[k][j], s) for j = 0 .. N-1.
 */
#ifndef LS_NN_DENSE_H
#define LS_NN_DENSE_H

#include "engine/nn/nn.h"

ls_status nn_dense_describe(nn_layer *l, ls_err *err);
void nn_dense_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                      void *scratch);
void nn_dense_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                       const float *x, const float *y, const float *w, size_t n, void *scratch);

#endif
