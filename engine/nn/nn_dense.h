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
 *   backward  dW[k][j], db[j] = dense_backward_weights over the R rows:
 *                        atoms of LS_ATOM consecutive rows, each summed in
 *                        row order (s = fmaf(x[r][k], dy[r][j], s); for db
 *                        s = s + dy[r][j]), the atoms added by the canonical
 *                        tree (dense.h). With rows = 1, a call on one atom of
 *                        samples is one sum in sample order: the mlp's order;
 *                        with longer samples the tree runs over the atom's
 *                        rows, the same whatever the leaf.
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
