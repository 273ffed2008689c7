/* seq.h — a declared network: a table of engine/nn/ layers, built once,
 * whose backward is derived by calling each layer's backward in reverse.
 * No network written with it has a backward pass of its own.
 *
 * Declaration: the text form (the `layers` key of the seq and cnn models)
 *
 *   layers := token ("," token)*
 *   token  := "dense:" N          dense layer, N outputs, with bias
 *           | "conv" K "x" K ":" N  K x K convolution ('same', stride 1, bias), N channels, K odd
 *           | "maxpool" K | "avgpool" K     K x K windows, stride K
 *           | "relu" | "gelu" | "layernorm"
 * N and K are decimal integers 1 .. 65536 without sign or leading zeros. A
 * dense layer after an image reads it flat ({H, W, C} as {1, 1, H·W·C}, the
 * same floats, nn.h); softmax cross-entropy over the last layer's outputs is
 * appended, and they must number the task's classes. seq_parse checks the
 * text alone (token i counted from 1), seq_create the shapes.
 *
 * Memory, one plan (after llm.c): parameters are one vector, each layer's
 * block after the previous one's (nn_layer.tensor offsets inside it);
 * per call of up to max_n samples the caller's scratch holds, end to end,
 * the input, every layer's output, every layer's saved floats, two
 * gradient buffers (the largest layer input or output) and the largest
 * scratch a layer asks for (nn_scratch_bytes): seq_scratch_bytes.
 *
 * Orders: a call on n samples runs each layer on all n at once, so every
 * sum is the one its family's header writes (the headers of engine/nn/); a leaf is
 * one atom of samples (the model descriptor's leaf_atoms = 0), so dense's
 * and conv's weight sums run over that atom's rows only.
 */
#ifndef LS_SEQ_H
#define LS_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "engine/nn/nn.h"
#include "include/lockstep.h"

#define SEQ_MAX_LAYERS 64

typedef struct seq seq;

/* The parsed text: kinds and settings, no shapes yet. */
typedef struct {
    size_t n;
    nn_layer layer[SEQ_MAX_LAYERS];
} seq_decl;

/* Parse `text` into d; LS_EINVAL naming the token, its position (from 1)
 * and what is wrong. */
ls_status seq_parse(const char *text, seq_decl *d, ls_err *err);

/* Build the network for samples of in[0] x in[1] x in[2] floats and
 * `classes` classes, calls of at most max_n samples. LS_EINVAL naming the
 * layer (its token position) for a shape that does not fit. */
ls_status seq_create(seq **out, const seq_decl *d, const size_t in[3], size_t classes, size_t max_n, ls_err *err);
void seq_destroy(seq *s);   /* accepts NULL */

size_t seq_n_params(const seq *s);
size_t seq_scratch_bytes(const seq *s);
double seq_flops_per_sample(const seq *s);
/* Parameter tensors in order: index t's name ("<layer>.<tensor>", layer from
 * 1 as in the text), offset, shape; whether it takes no weight decay
 * (biases, norm gains and biases). */
size_t seq_n_tensors(const seq *s);
void seq_tensor(const seq *s, size_t t, const char **name, size_t *offset, size_t *ndim, size_t shape[2],
                int *no_decay);

/* θ_0. Tensor t (its index in the whole vector, counted over the layers)
 * of a dense or conv layer, weight "w" [fan_in][N] (fan_in = K, or k·k·C):
 * element e = (2u − 1)·bound in binary32 with u = rng_uniformf(seed,
 * RNG_INIT, t, e, 0) and bound = 1.0f / sqrtf((float)fan_in), the mlp's
 * rule (so a declared MLP starts where mlp does); biases 0; layernorm
 * gain 1, bias 0. */
void seq_init(const seq *s, float *params, uint64_t seed);

/* One leaf: x [n][inputs], labels [n]. Writes the gradient of the summed
 * cross-entropy of the n samples into grad (seq_n_params floats), returns
 * the summed loss (binary64, nn_loss.h's order). n <= max_n. */
double seq_leaf(const seq *s, const float *params, const float *x, const int32_t *labels, size_t n, float *grad,
                void *scratch);
/* The logits [n][classes] of n samples (n <= max_n): the forward pass. */
void seq_logits(const seq *s, const float *params, const float *x, size_t n, float *logits, void *scratch);

#endif
