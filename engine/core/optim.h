/* optim.h — element-wise optimisers: SGD with momentum, AdamW.
 *
 * Every update is element-wise, so any split of the parameter vector over
 * threads gives the same bits. Bias correction uses the running products
 * β1^t and β2^t kept in the state (one float multiply per step), never pow().
 * An optional element-wise clip (optax `clip`) bounds each gradient element
 * before the update. The state (moments and products) is what a checkpoint
 * saves; optim_state_bytes/optim_state_ptr expose it as one block.
 *
 *   SGD:   g' = g + wd·θ;  u = μ·u + g';  θ = θ − lr·u
 *   AdamW: θ = θ·(1 − lr·wd);  m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·(g·g);
 *          θ = θ − lr·((m / (1−β1^t)) / (sqrt(v / (1−β2^t)) + ε))
 */
#ifndef LS_OPTIM_H
#define LS_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/config.h"
#include "include/lockstep.h"

typedef struct optim optim;

ls_status optim_create(optim **out, const ls_config *cfg, size_t n_params, ls_err *err);
void optim_destroy(optim *o);   /* accepts NULL */

/* Once per step, before any optim_update of that step: advances t and the
 * β products, takes the step's learning rate from the schedule
 * (optim_lr_at) and resets the global-norm factor to 1. */
void optim_begin_step(optim *o);

/* decay_groups=weights: tensors i with no_decay[i] set take no weight
 * decay (AdamW's θ·(1 − lr·wd) becomes θ·1, SGD's wd·θ is 0·θ). Tensors in
 * θ order. Without a call, or with decay_groups=all, every element decays. */
ls_status optim_set_groups(optim *o, const ls_tensor *tensors, size_t n_tensors, const unsigned char *no_decay,
                           ls_err *err);

/* The learning rate of step t (1-based) under cfg's lr_schedule, a pure
 * function of the config and t (docs/contract.md, Schedules and clipping):
 *   constant  lr;
 *   cosine    lr·t/W for t <= W (W = warmup), lr_min for t >= D (D =
 *             decay_steps), else lr_min + (lr − lr_min)·(0.5·(1 + cos(π·p)))
 *             with p = (t − W)/(D − W), cos(π·p) = dmath_cospi(p);
 *   step      lr·γ^k, k = (t − 1) div lr_step, γ^k by squaring;
 * every operation in binary64 on the keys' binary32 values, rounded once
 * to binary32 at the end. */
float optim_lr_at(const ls_config *cfg, int64_t t);

/* Global-norm clipping (clip_norm > 0). The gradient is cut into chunks of
 * OPTIM_NORM_CHUNK elements; chunk c's sum of squares, optim_sumsq over
 * [c·CHUNK, min(n, (c+1)·CHUNK)), is the binary64 sum in index order of
 * g·g (g = grad[i] / grad_div as the update takes it; the product exact);
 * the chunks are summed by the canonical tree (tree_loss_sum), norm = its
 * sqrt. optim_clip_norm sets the step's factor s = (float)(clip_norm /
 * norm) when norm > clip_norm (else 1), which optim_update applies as g·s
 * before the element-wise clip. Call between optim_begin_step and the
 * step's first optim_update; chunks may be computed on any threads. */
#define OPTIM_NORM_CHUNK 4096
int optim_clips_norm(const optim *o);
double optim_sumsq(const float *grad, float grad_div, size_t lo, size_t hi);
float optim_clip_norm(optim *o, const double *chunk_sums, size_t n_chunks, double *norm);
/* θ's elements [lo, hi) after the step, from θ before it (in) and the
 * gradient, into out: out == in updates in place; otherwise out and in do
 * not overlap. Gradient element i is grad[i] / grad_div, one float division
 * (bit for bit; 1.0f: grad[i] itself), so a model's mean over the batch
 * (finish dividing the tree sum by (float)B) can be folded in here.
 * Callable on disjoint ranges in parallel. Returns 1 when an element of
 * out[lo, hi) is now a NaN or an infinity, else 0: a run whose parameters
 * stop being finite has diverged even when its loss has not (a ReLU maps a
 * NaN input to 0 and hides it from the loss, not from the gradient). */
int optim_update(const optim *o, float *out, const float *in, const float *grad, float grad_div, size_t lo,
                 size_t hi);
/* optim_update with the gradient a sum of two arrays: element i is
 * (grad[i] + grad2[i]) / grad_div, one float addition then the division,
 * bit for bit what optim_update gives on an array holding the sums (the
 * tree's last addition, done where the update reads it: tree_top_halves).
 * Same contract otherwise. */
int optim_update_sum(const optim *o, float *out, const float *in, const float *grad, const float *grad2,
                     float grad_div, size_t lo, size_t hi);
/* The index of the first NaN or infinity in x[0, n), n when none (the
 * message of a run that diverged; one scan, after optim_update said so). */
size_t optim_first_nonfinite(const float *x, size_t n);

/* For tests: AdamW's lanes with tiny operands take a binary64 path that
 * gives the plain float loop's bits without subnormal arithmetic (optim.c).
 * -1: no lane takes it, 1: every lane whose operands are finite, 0: the
 * lanes with a tiny operand on the SIMD paths (AVX2: whole vectors of 8
 * holding one) and none on the scalar path, 2: the default, 0 on a core
 * where subnormal arithmetic is slow (measured once a process: Intel's
 * assists), else -1. Returns the previous mode. */
int optim_set_exact_lanes(int mode);
/* Lanes the binary64 path has computed since the program started (tests:
 * that the default mode does send the tiny lanes there). */
size_t optim_binary64_lanes(void);
/* AdamW's SIMD switch (base/simd.h): 0 the scalar path, 1 the best the CPU
 * has, 2 at most AVX2; returns the previous setting. Same bits on each. */
int optim_set_simd(int enabled);
/* "avx512", "avx2" or "scalar": the path AdamW takes now. */
const char *optim_simd_name(void);

/* The whole state as one block of bytes (for checkpoints and their hash). */
size_t optim_state_bytes(const optim *o);
void *optim_state_ptr(optim *o);
int64_t optim_step(const optim *o);

#endif
