/* mlp.h — the dense network: linear layers, ReLU between them, softmax
 * cross-entropy on the last.
 *
 * Parameters are one flat float vector owned by the caller, laid out tensor by
 * tensor: W1 [in][h1], b1 [h1], W2 [h1][h2], b2 [h2], ..., WL [h_{L-1}][classes],
 * bL [classes]. That order is the order the parameter hash sees. The leaf
 * buffer (gradient statistics of one leaf) has the same layout: it is the sum
 * over the leaf's samples of the per-sample loss gradient.
 */
#ifndef LS_MLP_H
#define LS_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

#define MLP_MAX_LAYERS 8

typedef struct mlp mlp;

/* sizes[0] = inputs, sizes[n_sizes-1] = classes, hidden widths between;
 * 2 <= n_sizes <= MLP_MAX_LAYERS + 1. max_leaf = most samples one leaf call sees. */
ls_status mlp_create(mlp **out, const size_t *sizes, size_t n_sizes, size_t max_leaf, ls_err *err);
void mlp_destroy(mlp *m);                 /* accepts NULL */

size_t mlp_n_params(const mlp *m);
/* Bytes of per-worker scratch one mlp_leaf/mlp_predict call needs. */
size_t mlp_scratch_bytes(const mlp *m);

/* θ_0: W[k][n] uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)) drawn at address
 * (seed, RNG_INIT, tensor index, element index, 0); biases 0. */
void mlp_init(const mlp *m, float *params, uint64_t seed);

/* Once per step, after the parameters change and before any leaf: derived
 * read-only state shared by all leaves (the transposed weights backward uses). */
void mlp_prepare(mlp *m, const float *params);
/* mlp_prepare in parts that may run at once on different threads (each
 * transposes its own block of 32 columns of one W, which are 32 rows of
 * W^T; together, in any order, they are mlp_prepare). At least 1 (a part
 * beyond the blocks does nothing). */
size_t mlp_prepare_parts(const mlp *m);
void mlp_prepare_part(mlp *m, const float *params, size_t part);

/* One leaf: x [count][in] in [0,1], y [count] labels in 0 .. classes - 1. Writes (accumulate == 0)
 * or adds (accumulate == 1) the summed gradient of the summed cross-entropy of
 * the leaf's samples into grad (mlp_n_params floats); returns the summed loss
 * (binary64, samples added in order). Pure: reads params and the prepared
 * state, writes only grad and scratch. count <= max_leaf. */
double mlp_leaf(const mlp *m, const float *params, const float *x, const int32_t *y,
                size_t count, float *grad, int accumulate, void *scratch);

/* The logits [count][classes] of count samples (count <= max_leaf), the
 * forward pass of mlp_leaf. */
void mlp_logits(const mlp *m, const float *params, const float *x, size_t count, float *logits, void *scratch);

/* Where layer l's weight (bias = 0, [sizes[l]][sizes[l+1]]) or bias
 * (bias = 1, [sizes[l+1]]: shape[0]) starts in θ. */
size_t mlp_tensor(const mlp *m, size_t l, int bias, size_t shape[2]);

/* Predicted class (argmax of the logits, lowest index on ties) of count samples. */
void mlp_predict(const mlp *m, const float *params, const float *x, size_t count,
                 int32_t *pred, void *scratch);

#endif
