/* nn_norm.h — layer normalisation over the last axis, with a gain and a
 * bias, statistics in binary64.
 *
 * Settings: in = {rows, width, C} (each of the rows·width vectors of C
 * features is normalised on its own), eps > 0. Output shape = input shape.
 * Tensors "gain" [C], "bias" [C]. Saved: per vector its mean and 1/σ as
 * two binary64 (act_floats = 4 per vector). No scratch.
 *
 * Orders, per vector x of C floats (i = 0 .. C-1 in index order, binary64
 * unless cast):
 *   mean  = (0.0 + x_0 + x_1 + ...) / C
 *   var   = (0.0 + d_0·d_0 + d_1·d_1 + ...) / C,  d_i = x_i - mean
 *   rstd  = 1.0 / sqrt(var + eps)
 *   xhat_i = (float)(d_i · rstd),  y_i = xhat_i · gain_i + bias_i  (binary32, no FMA)
 * Backward (r = every vector of the call in order: sample, then its rows):
 *   dgain_i = 0.0f then dgain_i = fmaf(dy[r][i], xhat[r][i], dgain_i) for every r
 *   dbias_i = 0.0f then dbias_i = dbias_i + dy[r][i] for every r
 *   g_i = dy_i · gain_i (binary32), then in binary64:
 *   a = (0.0 + g_0 + g_1 + ...) / C,  c = (0.0 + g_0·xhat_0 + ...) / C
 *   dx_i = (float)(rstd · ((g_i - a) - xhat_i · c))
 * with xhat_i recomputed from x, mean and rstd exactly as forward did.
 */
#ifndef LS_NN_NORM_H
#define LS_NN_NORM_H

#include "engine/nn/nn.h"

ls_status nn_norm_describe(nn_layer *l, ls_err *err);
void nn_norm_forward(const nn_layer *l, float *y, float *act, const float *x, const float *w, size_t n,
                     void *scratch);
void nn_norm_backward(const nn_layer *l, float *dx, float *dw, const float *dy, const float *act,
                      const float *x, const float *y, const float *w, size_t n, void *scratch);

#endif
