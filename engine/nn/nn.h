/* nn.h — what every layer of engine/nn/ shares: the layer record, its
 * descriptor (shapes, parameter tensors, activation and scratch sizes), and
 * the SIMD switch of the layers' own loops.
 *
 * A layer is a forward/backward pair over n samples with one argument order
 * for every family (after llm.c's kernels: outputs first, then what forward
 * saved, then inputs, then weights, then the count):
 *
 *   nn_<fam>_forward (l, y,  act, x, w, n, scratch)
 *   nn_<fam>_backward(l, dx, dw, dy, act, x, y, w, n, scratch)
 *
 * (dense, conv2d, the pools, layernorm, attention); the layers with nothing
 * to save or weigh (nn_act.h), the embeddings (int32 ids in) and the loss
 * (int32 labels in, a sum out) keep that order and drop what they lack.
 * Tensors are row-major per sample, samples one after the other: a sample's
 * input holds l->in[0] x l->in[1] x l->in[2] floats (rows, width, features:
 * tokens x 1 x channels for sequence layers, H x W x C for images: NHWC), its
 * output l->out[0..2]. `w` is the layer's block of the parameter vector
 * (l->n_params floats, tensors at l->tensor[i].off), `dw` its gradient block,
 * `act` n x l->act_floats floats forward keeps for backward, `scratch`
 * nn_scratch_bytes(l, n) bytes (64-aligned for speed; 8-aligned suffices).
 * Layers never allocate and may run on any number of workers at once.
 *
 * The atom rule (docs/contract.md): backward WRITES dw (never accumulates)
 * as the sum over the call's n samples, in the order its family documents
 * (the families on dense.h sum the call's rows as dense_backward_weights
 * does: atoms of LS_ATOM rows, the canonical tree; the others in sample
 * order); a model calls it on one atom of samples at a time and adds atoms
 * with the canonical tree, so the bits depend on the atom alone. dx is written too (dx may be
 * NULL: the first layer needs no input gradient). Gradients of a tensor
 * used twice (a residual's skip) are added by the caller with
 * nn_act_add_forward, the first consumer's gradient the left operand.
 *
 * Composing: a model is a table of nn_layer; each layer's `in` is the
 * previous layer's `out` (a flatten is only that: {H, W, C} read as
 * {1, 1, H·W·C}, the same floats); parameter blocks, activations and saved
 * floats are laid end to end (running sums of n_params, out_size and
 * act_floats), scratch is the largest nn_scratch_bytes, so a plan is one
 * allocation per kind.
 *
 * Every sum has a written order (each family's header), every exp, log and
 * tanh comes from engine/num/dmath.h, so a layer's bits depend on nothing
 * but its inputs. Each loop that the compiler may vectorise has a scalar
 * twin selected by nn_set_simd(0) (or LOCKSTEP_SIMD=off); the matrix work
 * goes through engine/num/dense.h, whose own switch is dense_set_simd.
 */
#ifndef LS_NN_H
#define LS_NN_H

#include <stddef.h>
#include <stdint.h>

#include "base/simd.h"
#include "include/lockstep.h"

/* The layer kinds. Never renumber: a declared model's text form will name them. */
typedef enum {
    NN_DENSE = 1,     /* nn_dense.h: y = x W + b over the last axis */
    NN_CONV2D = 2,    /* nn_conv.h: k x k, stride 1, 'same' or 'valid', NHWC */
    NN_MAXPOOL = 3,   /* nn_conv.h: k x k windows, stride k */
    NN_AVGPOOL = 4,   /* nn_conv.h: k x k windows, stride k */
    NN_LAYERNORM = 5, /* nn_norm.h: over the last axis, gain and bias */
    NN_EMBED = 6,     /* nn_embed.h: token ids (int32) -> rows of a table */
    NN_POSEMBED = 7,  /* nn_embed.h: y = x + P[row] (learned positions) */
    NN_ATTN = 8,      /* nn_attn.h: causal multi-head self-attention */
    NN_GELU = 9,      /* nn_act.h: tanh form */
    NN_RELU = 10,     /* nn_act.h */
    NN_ADD = 11,      /* nn_act.h: residual add y = x + x2 */
    NN_DROPOUT = 12,  /* nn_act.h: addressed mask */
    NN_XENT = 13      /* nn_loss.h: softmax cross-entropy, int32 labels */
} nn_kind;

#define NN_MAX_TENSORS 4

typedef struct {
    const char *name;   /* "w", "b", "gain", "table", "wqkv", ... (unique in the layer) */
    size_t off;         /* floats from the layer's block start */
    size_t ndim;
    size_t shape[2];    /* row-major */
    size_t count;       /* product of the shape */
} nn_tensor;

typedef struct {
    /* Set by the caller before nn_describe. */
    nn_kind kind;
    size_t in[3];       /* a sample's input: rows, width, features (unused axes 1) */
    size_t units;       /* dense: outputs N; conv2d: output channels; embed: width C */
    size_t vocab;       /* embed: table rows (ids 0 .. vocab-1); xent: classes are in[2] */
    size_t k;           /* conv2d: kernel side (odd for 'same'); pools: window side = stride */
    int same;           /* conv2d: 1 'same' (pad (k-1)/2), 0 'valid' */
    int bias;           /* dense, conv2d: 1 with a bias, 0 without */
    size_t heads;       /* attn: heads (in[2] a multiple of it) */
    double eps;         /* layernorm: added to the variance (binary64) */
    float p;            /* dropout: probability of dropping, in [0, 1) */
    /* Filled by nn_describe. */
    size_t out[3];      /* a sample's output */
    size_t in_size, out_size;   /* floats per sample (embed: ids per sample in; xent: 1 out) */
    size_t n_params;            /* floats of this layer's parameter block */
    size_t n_tensors;
    nn_tensor tensor[NN_MAX_TENSORS];
    size_t act_floats;          /* per sample: what forward keeps for backward */
    size_t scratch_fixed;       /* bytes, whatever n */
    size_t scratch_per_sample;  /* bytes per sample of the call */
} nn_layer;

/* Check l's settings and fill its derived fields (out, sizes, tensors).
 * LS_EINVAL naming the field and value for a bad setting or a size that
 * overflows. */
ls_status nn_describe(nn_layer *l, ls_err *err);

/* Scratch a call on n samples needs (bytes); 0 when none. */
size_t nn_scratch_bytes(const nn_layer *l, size_t n);

/* The layers' own vectorised loops: 1 (default) the clones the CPU offers,
 * 0 the scalar twins; returns the previous setting. LOCKSTEP_SIMD=off starts
 * it at 0. Every setting gives the same bits. */
int nn_set_simd(int enabled);
int nn_simd_on(void);   /* for the families' dispatch */

/* Size arithmetic for the families: a * b, a + b into *out; 0 on overflow. */
int nn_mul(size_t a, size_t b, size_t *out);
int nn_add(size_t a, size_t b, size_t *out);
/* Append a tensor [d0] (d1 == 0) or [d0][d1] to l's parameter block; 0 on
 * overflow. */
int nn_tensor_add(nn_layer *l, const char *name, size_t d0, size_t d1);
/* Bytes rounded up to 64. */
size_t nn_round64(size_t bytes);

/* Loops of fmaf: LS_SIMD_CLONES's AVX2 clone has no FMA instructions, so
 * gcc leaves an fmaf loop as library calls there; this set asks for an FMA
 * clone instead (AVX and FMA, what every AVX2 CPU has). fmaf is correctly
 * rounded on every path, so every clone gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(LS_NO_CLONES) && \
    (!defined(__clang__) || __clang_major__ >= 14)
#define NN_FMA_CLONES __attribute__((target_clones("avx512f", "fma", "default")))
#else
#define NN_FMA_CLONES
#endif

/* An element-wise loop with its twins: NAME_vec, built by CLONES (one of
 * the two sets above; element-wise, so every width gives the same bits),
 * and NAME_scalar, the plain loop; NAME calls one of them by nn_simd_on().
 * BODY is one for-loop over i < n computing each element on its own (no
 * sum across elements). NN_TWIN uses LS_SIMD_CLONES, NN_TWIN_FMA the FMA set. */
#define NN_TWIN_WITH(CLONES, NAME, PARAMS, ARGS, BODY)    \
    CLONES static void NAME##_vec PARAMS                  \
    {                                                     \
        _Pragma("omp simd") BODY                          \
    }                                                     \
    static void NAME##_scalar PARAMS { BODY }             \
    static void NAME PARAMS                               \
    {                                                     \
        if (nn_simd_on())                                 \
            NAME##_vec ARGS;                              \
        else                                              \
            NAME##_scalar ARGS;                           \
    }
#define NN_TWIN(NAME, PARAMS, ARGS, BODY) NN_TWIN_WITH(LS_SIMD_CLONES, NAME, PARAMS, ARGS, BODY)
#define NN_TWIN_FMA(NAME, PARAMS, ARGS, BODY) NN_TWIN_WITH(NN_FMA_CLONES, NAME, PARAMS, ARGS, BODY)

#endif
