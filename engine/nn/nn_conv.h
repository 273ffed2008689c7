/* nn_conv.h — image layers in NHWC: the 2-D convolution (k x k kernel,
 * stride 1, 'same' or 'valid' padding) and the k x k max and average pools
 * (stride k).
 *
 * Layout: a sample is in = {H, W, C}, element (y, x, c) at (y·W + x)·C + c
 * (NHWC), so the convolution is im2col and one dense.h call: the column
 * matrix of a sample has a row per output position (oy, ox) and a column
 * per (ky, kx, c), index (ky·k + kx)·C + c, holding the input at
 * (oy + ky - pad, ox + kx - pad, c), 0.0f outside the image (pad = (k-1)/2
 * for 'same', 0 for 'valid'). NHWC was chosen because the dense product of
 * that matrix with W [k·k·C][Cout] writes the output in NHWC directly.
 *
 * conv2d: settings in, units = Cout, k (odd for 'same'), same, bias.
 *   Output {H, W, Cout} ('same') or {H-k+1, W-k+1, Cout} ('valid').
 *   Tensors "w" [k·k·C][Cout], "b" [Cout]. No saved activations (backward
 *   rebuilds the column matrix); scratch per sample: two column matrices.
 *   Orders (R = n·Ho·Wo rows, r = (sample·Ho + oy)·Wo + ox):
 *   forward   y[r][o]  = dense_forward(col, W, b): s = b[o], then
 *                        s = fmaf(col[r][q], W[q][o], s) for q in index order.
 *   backward  dW[q][o], db[o] = dense_backward_weights over the R rows of
 *                        col and dy (sample order, then output positions
 *                        row by row): atoms of LS_ATOM rows summed in order
 *                        with fmaf (db: s + dy), added by the canonical tree;
 *             dcol     = dense_forward(dy, W^T): over o in order;
 *             dx[y][x][c] = 0.0f + the dcol terms that read (y, x, c), added
 *                        in the order of their output position r, and for
 *                        one r in (ky, kx) order.
 *
 * maxpool / avgpool: settings in, k >= 1. Output {H/k, W/k, C} (floor: the
 *   last H mod k rows and W mod k columns are not read; their dx is 0).
 *   max: y = the window's maximum, read in (ky, kx) order with a strict >,
 *   so the first maximum wins; backward routes dy to that element and
 *   writes 0 elsewhere. Saved per sample (act_floats = Ho·Wo·C): per output
 *   the maximum's offset (ky·W + kx)·C from the window's first element, a
 *   uint32_t in a float's slot (k·W·C above UINT32_MAX is refused).
 *   avg: s = 0.0f + x in (ky, kx) order, y = s / (float)(k·k);
 *   backward dx = dy / (float)(k·k) on each window element. No saved
 *   activations.
 */
#ifndef LS_NN_CONV_H
#define LS_NN_CONV_H

#include "engine/nn/nn.h"

ls_status nn_conv_describe(nn_layer *l, ls_err *err);

void nn_conv_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                     void *scratch);
void nn_conv_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                      const float *x, const float *y, const float *w, size_t n, void *scratch);

/* The pools (kind NN_MAXPOOL or NN_AVGPOOL in l); w, scratch unused; act
 * only by maxpool (forward writes it, backward reads it; x only forward). */
void nn_conv_pool_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                          void *scratch);
void nn_conv_pool_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                           const float *x, const float *y, const float *w, size_t n, void *scratch);

#endif
