/* nn_loss.h — softmax cross-entropy over any number of classes, int32
 * labels (0 .. 2^31-1: classes up to 2^31).
 *
 * Settings: in = {rows, 1, C} logits (rows = tokens of a sequence, 1 for
 * a classifier), C >= 1 classes, one int32 label per row. Output: the loss
 * (out = {1, 1, 1}). No parameters; scratch: C binary64 (the exponentials).
 *
 * Per row z (the mlp model's formula, so a declared MLP keeps its bits),
 * in binary64 with dmath_exp and dmath_log:
 *   m    = (double) max_i z_i   (binary32 comparisons, strict >)
 *   s    = 0.0 + e_0 + e_1 + ... + e_{C-1},  e_i = dmath_exp((double)z_i - m)
 *   loss = dmath_log(s) - ((double)z_y - m)
 *   dz_i = (float)(e_i / s) - (i == y ? 1.0f : 0.0f)
 * forward returns 0.0 + loss_0 + loss_1 + ... over the call's rows in order
 * (sample, then row): the sum over samples in sample order, the gradient of
 * which is dz (no division by the count: the engine scales). A label
 * outside 0 .. C-1 gives a NaN loss (a corrupt data set diverges) and no
 * one-hot term in dz.
 */
#ifndef LS_NN_LOSS_H
#define LS_NN_LOSS_H

#include "engine/nn/nn.h"

ls_status nn_loss_describe(nn_layer *l, ls_err *err);
double nn_loss_xent_forward(const nn_layer *l, const float *z, const int32_t *labels, size_t n, void *scratch);
void nn_loss_xent_backward(const nn_layer *l, float *dz, const float *z, const int32_t *labels, size_t n,
                           void *scratch);
/* Both at once: forward's sum and backward's dz, the same bits, with the
 * exponentials computed once per row instead of twice (a training step);
 * when div != 1.0f each dz_i is then divided by it (binary32: a token
 * network's mean over positions) in the same pass. */
double nn_loss_xent_both(const nn_layer *l, float *dz, const float *z, const int32_t *labels, size_t n, float div,
                         void *scratch);

#endif
