/* nn_act.h — the element-wise layers: ReLU, GELU (tanh form), the residual
 * add and dropout with addressed randomness. Output shape = input shape;
 * no parameters, no scratch; gelu saves t (act_floats = in_size), the
 * others nothing.
 *
 * Each element is computed on its own, so there is no order to state
 * beyond each formula's (binary32, left to right, no FMA):
 *   relu     y = x > 0 ? x : 0.0f (NaN and -0.0 give +0.0);
 *            dx = x > 0 ? dy : 0.0f (PyTorch's choice at 0).
 *   gelu     u = c·(x + a·((x·x)·x)), t = dmath_tanhf(u), y = (0.5f·x)·(1 + t),
 *            c = 0.7978845608f (sqrt(2/π) rounded), a = 0.044715f;
 *            dx = dy · (0.5f·(1 + t) + (0.5f·x)·((1 - t·t)·(c·(1 + (3a)·(x·x))))),
 *            t the forward's, saved (or recomputed from x: the same bits).
 *   add      y = x + x2; backward dx = dy and dx2 = dy (copies; the caller
 *            adds a skip's gradient to its other consumer's, nn.h).
 *   dropout  element i of the sample with absolute index s (sample0 + b:
 *            the position in the epoch, not in the call, so a leaf or atom
 *            split changes nothing) at step `step` is kept when
 *            rng_uniformf(seed, NN_RNG_DROPOUT, step, s, i) >= p; then
 *            y = x · scale with scale = 1.0f / (1.0f - p), else y = 0.0f.
 *            Backward: dx = dy · scale where kept, 0.0f elsewhere (the mask
 *            drawn again from its address: nothing is stored).
 * relu, add and the gelu's products are element-wise loops with SIMD
 * clones and scalar twins (nn.h); gelu's t comes from dmath_tanhf_n (the
 * same bits as dmath_tanhf) and dropout calls rng_uniformf, a plain loop.
 */
#ifndef LS_NN_ACT_H
#define LS_NN_ACT_H

#include "engine/nn/nn.h"

/* The rng.h purpose of dropout masks: a = step, b = sample, c = element.
 * (rng.h's enum lists it; never reuse the number.) */
#define NN_RNG_DROPOUT RNG_DROPOUT

ls_status nn_act_describe(nn_layer *l, ls_err *err);

void nn_act_relu_forward(const nn_layer *l, float *y, const float *x, size_t n);
void nn_act_relu_backward(const nn_layer *l, float *dx, const float *dy, const float *x, size_t n);
/* act: n x act_floats (= in_size) floats, forward's t for the backward, or
 * NULL (the backward then recomputes t: the same bits). */
void nn_act_gelu_forward(const nn_layer *l, float *y, float *act, const float *x, size_t n);
void nn_act_gelu_backward(const nn_layer *l, float *dx, const float *dy, const float *act, const float *x,
                          size_t n);
void nn_act_add_forward(const nn_layer *l, float *y, const float *x, const float *x2, size_t n);
void nn_act_add_backward(const nn_layer *l, float *dx, float *dx2, const float *dy, size_t n);
void nn_act_dropout_forward(const nn_layer *l, float *y, const float *x, size_t n,
                            uint64_t seed, uint64_t step, uint64_t sample0);
void nn_act_dropout_backward(const nn_layer *l, float *dx, const float *dy, size_t n,
                             uint64_t seed, uint64_t step, uint64_t sample0);
/* 1 when element i of sample s is kept (the rule above). */
int nn_act_dropout_keep(float p, uint64_t seed, uint64_t step, uint64_t s, uint64_t i);

#endif
