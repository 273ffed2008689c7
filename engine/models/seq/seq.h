/* seq.h — a declared network: a table of engine/nn/ layers, built once,
 * whose backward is derived by calling each layer's backward in reverse.
 * No network written with it has a backward pass of its own.
 *
 * Declaration: the text form (the `layers` key of the seq, cnn and gpt models)
 *
 *   layers := item ("," item)*
 *   item   := token
 *           | "res(" layers ")"      a residual: y = x + f(x), f the layers inside
 *           | R "x[" layers "]"      the layers inside, R times in a row
 *   token  := "dense:" N          dense layer, N outputs, with bias
 *           | "conv" K "x" K ":" N  K x K convolution ('same', stride 1, bias), N channels, K odd
 *           | "maxpool" K | "avgpool" K     K x K windows, stride K
 *           | "relu" | "gelu" | "layernorm"
 *           | "dropout:" P        dropout, P the probability of dropping
 *           | "embed:" N          token embedding of width N (first layer only)
 *           | "posembed"          learned positions added to the sequence
 *           | "attn:" N           causal self-attention, N heads
 * N, K and R are decimal integers 1 .. 65536 (R at most SEQ_MAX_LAYERS)
 * without sign or leading zeros; P is "0." and 1 .. 6 decimal digits, not
 * all zero (0 < P < 1: 0.1, 0.25, 0.5), its binary32 value strtof's of
 * the written digits (the config's float parsing); no spaces. Residual
 * branches do not nest (a res inside a repeat, a repeat inside a res are
 * fine). Example, a
 * two-block pre-norm decoder:
 *   embed:64,posembed,2x[res(layernorm,attn:4),res(layernorm,dense:256,gelu,dense:64)],layernorm,dense:256
 * A dense layer after an image reads it flat ({H, W, C} as {1, 1, H·W·C}, the
 * same floats, nn.h); softmax cross-entropy over the last layer's outputs is
 * appended, and they must number the task's classes. seq_parse checks the
 * text alone (errors name the token: its position counts the layer words of
 * the text from 1, as written, before repeats unroll), seq_create the shapes.
 * The unrolled list is the network: layer i (from 1) names its tensors
 * "<i>.<tensor>", and a res(...) is its branch's layers followed by one add
 * layer (NN_ADD) of its own number.
 *
 * Token networks: a network whose first layer is embed reads a sample's F
 * features as a sequence of T = F token ids (seq_token_id: the text task's
 * bytes, v/255.0f, back to v; the vocabulary is the task's classes), and
 * its dense layers and loss act on each of the T positions ({T, 1, C}).
 * It is trained at every position: position t < T-1 predicts the sample's
 * token t+1, position T-1 the sample's label. A sample's loss is the mean
 * over its positions: a call's loss is nn_loss.h's sum over its rows
 * (sample, then position) divided by T in binary64, its gradient the
 * loss's dz divided by (float)T in binary32 (exact for T a power of two).
 * Its scores (seq_logits) are the last position's logits: the next token
 * after the window.
 *
 * Dropout, training and evaluation: seq_leaf (a training step) applies it,
 * nn_act.h's mask at the address (seed, step, s, i) with s the sample's
 * stream position q = (t-1)·B + j (slot j of step t, include/lockstep.h's
 * ls_batch): sample b of a call has s = sample0 + b. q rather than the
 * position in the epoch: it is unique over the whole run, needs no data
 * size, and depends on neither the leaf size, the threads nor the ranks
 * (a leaf only says where its samples start). The element index i runs
 * over the layer's whole input of a sample, so in a token network one
 * address covers all of a sample's T x C values. seq_loss and seq_logits
 * evaluate (the engine's test loss, eval, predict, sample): dropout is the
 * identity there, y = x, PyTorch's train/eval convention; the training
 * loss a step reports is seq_leaf's, with the masks applied. Dropout has
 * no tensors and takes its position number like relu.
 *
 * Backward is derived: each layer's backward in reverse order. A residual's
 * add passes its dy to the branch unchanged and keeps a copy; at the
 * branch's first layer the input gradient is that layer's dx plus the copy,
 * added by nn_act_add_forward with the branch's gradient the left operand
 * and the skip's the right (nn.h: the first consumer's gradient left).
 *
 * Memory, one plan (after llm.c): parameters are one vector, each layer's
 * block after the previous one's (nn_layer.tensor offsets inside it);
 * per call of up to max_n samples the caller's scratch holds, end to end,
 * every layer's output, every layer's saved floats, four gradient buffers
 * (the largest layer input or output: two ping-pong, one for a residual
 * branch's first layer, one for the skip), the token ids and per-position
 * labels of a token network, and the largest scratch a layer asks for
 * (nn_scratch_bytes): seq_scratch_bytes.
 *
 * Orders: a call on n samples runs each layer on all n at once, so every
 * sum is the one its family's header writes (the headers of engine/nn/); a leaf is
 * one atom of samples (the model descriptor's leaf_atoms = 0), so dense's,
 * conv's and attention's weight sums run over that atom's rows only, and
 * the embedding's scatter-add over that atom's tokens.
 */
#ifndef LS_SEQ_H
#define LS_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "engine/nn/nn.h"
#include "include/lockstep.h"

#define SEQ_MAX_LAYERS 128

typedef struct seq seq;

/* The parsed text: kinds and settings, no shapes yet. */
typedef struct {
    size_t n;
    nn_layer layer[SEQ_MAX_LAYERS];
    size_t skip[SEQ_MAX_LAYERS];   /* an NN_ADD layer: the first layer of its branch */
    size_t pos[SEQ_MAX_LAYERS];    /* the token (from 1) each layer comes from */
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
int seq_tokens(const seq *s);   /* 1: a token network (first layer embed) */
/* A feature as a token id: lrintf(f·255) for f in [0, 1] (the text task's
 * byte v as v/255.0f gives v), -1 (no token) otherwise. */
int32_t seq_token_id(float f);
size_t seq_scratch_bytes(const seq *s);
double seq_flops_per_sample(const seq *s);
/* The unrolled layers, the appended loss last: layer i's descriptor with
 * its shapes filled (nn_describe's), for tests and tools that look in. */
size_t seq_n_layers(const seq *s);
const nn_layer *seq_layer(const seq *s, size_t i);
/* Parameter tensors in order: index t's name ("<layer>.<tensor>", layer from
 * 1 as in the text), offset, shape; whether it takes no weight decay
 * (biases, norm gains and biases). */
size_t seq_n_tensors(const seq *s);
void seq_tensor(const seq *s, size_t t, const char **name, size_t *offset, size_t *ndim, size_t shape[2],
                int *no_decay);

/* θ_0. Tensor t (its index in the whole vector, counted over the layers)
 * with two axes [R][N] — the weights "w" of dense and conv (R = fan_in: K,
 * or k·k·C), attention's "wqkv" and "wo", the embedding tables: element e
 * = (2u − 1)·bound in binary32 with u = rng_uniformf(seed, RNG_INIT, t, e,
 * 0) and bound = 1.0f / sqrtf((float)R), the mlp's rule (so a declared MLP
 * starts where mlp does); every one-axis tensor 0 (biases, layernorm's
 * bias) but layernorm's gain, 1. Weight decay (seq_tensor's no_decay)
 * takes the matrices that multiply: "w", "wqkv", "wo". */
void seq_init(const seq *s, float *params, uint64_t seed);

/* One leaf of a training step: x [n][inputs], labels [n]. Writes the
 * gradient of the summed cross-entropy of the n samples into grad
 * (seq_n_params floats), returns the summed loss (binary64, nn_loss.h's
 * order; a token network's per sample the mean over its positions,
 * above). n <= max_n. Dropout's masks are drawn at (seed, step, sample0 +
 * b, element) for sample b: seed the run's, step the step's, sample0 the
 * stream position of x's first sample (above); without dropout they are
 * not read. */
double seq_leaf(const seq *s, const float *params, const float *x, const int32_t *labels, size_t n, uint64_t seed,
                uint64_t step, uint64_t sample0, float *grad, void *scratch);
/* The summed loss of n samples alone, evaluated (dropout passes its input
 * through): seq_leaf's value without the backward pass, the same bits for
 * a network without dropout. */
double seq_loss(const seq *s, const float *params, const float *x, const int32_t *labels, size_t n, void *scratch);
/* The logits [n][classes] of n samples (n <= max_n): the forward pass
 * evaluated, dropout the identity (a token network's: its last
 * position's). */
void seq_logits(const seq *s, const float *params, const float *x, size_t n, float *logits, void *scratch);

#endif
