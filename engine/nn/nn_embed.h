/* nn_embed.h — embeddings: token ids to rows of a table, and learned
 * position vectors added to a sequence.
 *
 * embed: settings in = {T, 1, 1} (T int32 ids a sample), vocab = V,
 *   units = C. Output {T, 1, C}. Tensor "table" [V][C].
 *   forward  y[b][t] = table[id[b][t]] (a copy); an id outside 0 .. V-1 (a
 *            corrupt data set) gives a row of NaN, which the loss turns into
 *            a diverged run, and adds nothing in backward.
 *   backward dtable = 0.0f, then for every token of the call in order
 *            (sample, then t), dtable[id] = dtable[id] + dy[b][t]: the
 *            scatter-add is a sum over samples in sample order.
 * posembed: settings in = {T, 1, C}. Output = input. Tensor "table" [T][C].
 *   forward  y[b][t][c] = x[b][t][c] + table[t][c]
 *   backward dx = dy (a copy);
 *            dtable[t][c] = 0.0f + dy[0][t][c] + dy[1][t][c] + ... (sample order)
 * No saved activations, no scratch.
 */
#ifndef LS_NN_EMBED_H
#define LS_NN_EMBED_H

#include "engine/nn/nn.h"

ls_status nn_embed_describe(nn_layer *l, ls_err *err);
void nn_embed_forward(const nn_layer *l, float *y, const int32_t *ids, const float *w, size_t n);
void nn_embed_backward(const nn_layer *l, float *dw, const float *dy, const int32_t *ids, size_t n);
void nn_embed_pos_forward(const nn_layer *l, float *y, const float *x, const float *w, size_t n);
void nn_embed_pos_backward(const nn_layer *l, float *dx, float *dw, const float *dy, size_t n);

#endif
