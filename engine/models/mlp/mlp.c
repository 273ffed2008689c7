/* mlp.c — the dense network: linear layers, ReLU between them, softmax
 * cross-entropy on the last (mlp.h).
 *
 * Layers are numbered l = 0 .. L-1 here (mlp.h calls them 1 .. L): layer l
 * maps sizes[l] inputs to sizes[l+1] outputs with W_l [sizes[l]][sizes[l+1]]
 * and b_l [sizes[l+1]]. All the arithmetic of the dense layers goes through
 * dense.h, whose order of every sum is fixed, so a leaf's gradient and loss
 * have the same bits on every path and every thread count. The softmax and
 * the loss are computed in binary64 with dmath_exp / dmath_log, never libm.
 *
 * Memory: one allocation holds the struct and the prepared state (the
 * transposed weights backward needs); the per-call buffers live in the
 * caller's scratch (mlp_scratch_bytes), so mlp_leaf and mlp_predict never
 * allocate and may run on any number of workers at once.
 */
#include "engine/models/mlp/mlp.h"

#include <math.h>    /* sqrtf only (correctly rounded, IEEE 754) */
#include <stdlib.h>
#include <string.h>

#include "base/simd.h"
#include "engine/num/dense.h"
#include "engine/num/dmath.h"
#include "engine/num/rng.h"
#include "reduce/tree.h"

#define MLP_ALIGN 64
/* Classes whose softmax numerators mlp_leaf keeps on its stack (every net of
 * byte labels); more take a row of the scratch. */
#define MLP_STACK_CLASSES 256

struct mlp {
    size_t n_layers;                      /* L = n_sizes - 1 */
    size_t sizes[MLP_MAX_LAYERS + 1];     /* [L + 1]: inputs, hidden widths, classes */
    size_t max_leaf;
    size_t n_params;
    size_t max_width;                     /* max of sizes[1 .. L] */
    size_t w_off[MLP_MAX_LAYERS];         /* W_l = params + w_off[l]: [sizes[l]][sizes[l+1]] */
    size_t b_off[MLP_MAX_LAYERS];         /* b_l = params + b_off[l]: [sizes[l+1]] */
    /* Scratch, byte offsets (multiples of 64) into the caller's buffer. */
    size_t act_off[MLP_MAX_LAYERS];       /* act_l: [max_leaf][sizes[l+1]]: post-ReLU output of
                                           * layer l (l < L-1), the logits for l = L-1 */
    size_t grad_off[2];                   /* two ping-pong buffers [max_leaf][max_width]: d(loss)
                                           * w.r.t. a layer's output (pre-activation) */
    size_t e_off;                         /* over MLP_STACK_CLASSES classes: [classes] doubles,
                                           * a sample's softmax numerators */
    size_t scratch_bytes;
    /* Prepared state, in the same allocation after the struct (64-aligned).
     * wt[l] for l = 1 .. L-1: [sizes[l+1]][sizes[l]] = W_l transposed, so
     * d(input of l) = dout · W_l^T is dense_forward(dout, wt[l]). wt[0] is
     * NULL: no gradient is needed for the network's input. */
    float *wt[MLP_MAX_LAYERS];
};

static size_t round_up(size_t n)
{
    return (n + MLP_ALIGN - 1) / MLP_ALIGN * MLP_ALIGN;
}

/* a * b into *out; 0 on overflow. Sizes come from the user's config. */
static int mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > (SIZE_MAX / 4) / a)   /* keep room for bytes and rounding */
        return 0;
    *out = a * b;
    return 1;
}

static int add_ok(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX / 4 - a)
        return 0;
    *out = a + b;
    return 1;
}

ls_status mlp_create(mlp **out, const size_t *sizes, size_t n_sizes, size_t max_leaf, ls_err *err)
{
    *out = NULL;
    if (n_sizes < 2 || n_sizes > MLP_MAX_LAYERS + 1)
        return ls_fail(err, LS_EINVAL, "mlp: %zu layer sizes given, need 2 .. %d (inputs, hidden..., classes)",
                       n_sizes, MLP_MAX_LAYERS + 1);
    for (size_t i = 0; i < n_sizes; i++)
        if (sizes[i] == 0)
            return ls_fail(err, LS_EINVAL, "mlp: layer size %zu is 0; every width must be at least 1", i);
    if (sizes[n_sizes - 1] > INT32_MAX)
        return ls_fail(err, LS_EINVAL, "mlp: %zu classes; labels are int32, so at most 2147483647",
                       sizes[n_sizes - 1]);
    if (max_leaf == 0)
        return ls_fail(err, LS_EINVAL, "mlp: max_leaf is 0; a leaf holds at least one sample");

    mlp tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.n_layers = n_sizes - 1;
    tmp.max_leaf = max_leaf;
    for (size_t i = 0; i < n_sizes; i++)
        tmp.sizes[i] = sizes[i];

    size_t np = 0, prepared = 0, scratch = 0;
    for (size_t l = 0; l < tmp.n_layers; l++) {
        const size_t fan_in = sizes[l], width = sizes[l + 1];
        size_t nw, act;
        if (!mul_ok(fan_in, width, &nw) || !mul_ok(max_leaf, width, &act) || !mul_ok(act, sizeof(float), &act))
            return ls_fail(err, LS_EINVAL, "mlp: layer %zu (%zu x %zu) is too large", l + 1, fan_in, width);
        tmp.w_off[l] = np;
        if (!add_ok(np, nw, &np))
            return ls_fail(err, LS_EINVAL, "mlp: too many parameters");
        tmp.b_off[l] = np;
        if (!add_ok(np, width, &np))
            return ls_fail(err, LS_EINVAL, "mlp: too many parameters");
        if (l > 0 && !add_ok(prepared, round_up(nw * sizeof(float)), &prepared))
            return ls_fail(err, LS_EINVAL, "mlp: too many parameters");
        tmp.act_off[l] = scratch;
        if (!add_ok(scratch, round_up(act), &scratch))
            return ls_fail(err, LS_EINVAL, "mlp: scratch too large");
        if (width > tmp.max_width)
            tmp.max_width = width;
    }
    size_t gbytes;
    if (!mul_ok(max_leaf, tmp.max_width, &gbytes) || !mul_ok(gbytes, sizeof(float), &gbytes))
        return ls_fail(err, LS_EINVAL, "mlp: scratch too large");
    gbytes = round_up(gbytes);
    tmp.grad_off[0] = scratch;
    tmp.grad_off[1] = scratch + gbytes;
    if (!add_ok(scratch, 2 * gbytes, &scratch))
        return ls_fail(err, LS_EINVAL, "mlp: scratch too large");
    /* Up to MLP_STACK_CLASSES the numerators live on mlp_leaf's stack (the
     * scratch of a 1.1 net is unchanged); beyond, a row of them here. */
    tmp.e_off = scratch;
    if (sizes[n_sizes - 1] > MLP_STACK_CLASSES &&
        !add_ok(scratch, round_up(sizes[n_sizes - 1] * sizeof(double)), &scratch))
        return ls_fail(err, LS_EINVAL, "mlp: scratch too large");
    tmp.scratch_bytes = scratch;
    tmp.n_params = np;

    const size_t head = round_up(sizeof(mlp));
    mlp *m = aligned_alloc(MLP_ALIGN, round_up(head + prepared));
    if (m == NULL)
        return ls_fail(err, LS_ENOMEM, "mlp: out of memory for %zu bytes of prepared weights", prepared);
    *m = tmp;
    char *p = (char *)m + head;
    for (size_t l = 1; l < m->n_layers; l++) {
        m->wt[l] = (float *)(void *)p;
        p += round_up(sizes[l] * sizes[l + 1] * sizeof(float));
    }
    /* Prepared state starts as zeros so a leaf before mlp_prepare is wrong
     * but deterministic. */
    memset((char *)m + head, 0, prepared);
    *out = m;
    return LS_OK;
}

void mlp_destroy(mlp *m)
{
    free(m);
}

size_t mlp_n_params(const mlp *m)
{
    return m->n_params;
}

/* Layout of the scratch (offsets from its start, each a multiple of 64; pass
 * a 64-aligned buffer for speed, any float-aligned buffer works):
 * act_0 .. act_{L-1} then the two gradient buffers, see struct mlp. */
size_t mlp_scratch_bytes(const mlp *m)
{
    return m->scratch_bytes;
}

/* W_l is tensor 2l and b_l tensor 2l + 1 (the order of the parameter
 * vector); element e of W_l is W_l[k][n] with e = k * sizes[l+1] + n. The
 * draw is u = rng_uniformf(seed, RNG_INIT, 2l, e, 0) in [0,1) and the weight
 * (2.0f * u - 1.0f) * bound with bound = 1.0f / sqrtf((float)fan_in), all in
 * binary32: 2u and 2u - 1 are exact, so the one rounding is the product and
 * the weight lies in [-bound, bound). */
void mlp_init(const mlp *m, float *params, uint64_t seed)
{
    for (size_t l = 0; l < m->n_layers; l++) {
        const size_t fan_in = m->sizes[l], width = m->sizes[l + 1];
        const float bound = 1.0f / sqrtf((float)fan_in);
        float *w = params + m->w_off[l];
        for (size_t e = 0; e < fan_in * width; e++) {
            const float u = rng_uniformf(seed, RNG_INIT, 2 * l, e, 0);
            w[e] = (2.0f * u - 1.0f) * bound;
        }
        memset(params + m->b_off[l], 0, width * sizeof(float));
    }
}

/* Columns of W per prepare part: 256 x 32 floats (32 KiB) is a few
 * microseconds of transposing, so a 256-wide layer makes 8 parts. */
#define PREPARE_COLS 32

size_t mlp_prepare_parts(const mlp *m)
{
    size_t parts = 0;
    for (size_t l = 1; l < m->n_layers; l++)
        parts += (m->sizes[l + 1] + PREPARE_COLS - 1) / PREPARE_COLS;
    /* A network without hidden layers transposes nothing; it still declares
     * one (empty) part, as the model API wants of a prepare_part. */
    return parts > 0 ? parts : 1;
}

void mlp_prepare_part(mlp *m, const float *params, size_t part)
{
    for (size_t l = 1; l < m->n_layers; l++) {
        const size_t K = m->sizes[l], N = m->sizes[l + 1];
        const size_t blocks = (N + PREPARE_COLS - 1) / PREPARE_COLS;
        if (part >= blocks) {
            part -= blocks;
            continue;
        }
        /* wt[n][k] = w[k][n] for the columns n0 .. n0 + cols - 1 of w */
        const size_t n0 = part * PREPARE_COLS, cols = N - n0 < PREPARE_COLS ? N - n0 : PREPARE_COLS;
        dense_transpose_block(m->wt[l] + n0 * K, K, params + m->w_off[l] + n0, N, K, cols);
        return;
    }
}

void mlp_prepare(mlp *m, const float *params)
{
    const size_t parts = mlp_prepare_parts(m);
    for (size_t i = 0; i < parts; i++)
        mlp_prepare_part(m, params, i);
}

/* ReLU in place: x > 0 ? x : 0 (NaN and -0.0 become +0.0). Element-wise, so
 * every vector width gives the same bits (base/simd.h). */
LS_SIMD_CLONES
static void relu(float *restrict x, size_t n)
{
    #pragma omp simd
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* The ReLU's backward: d[i] passes where the layer's output h[i] is > 0. */
LS_SIMD_CLONES
static void relu_mask(float *restrict d, const float *restrict h, size_t n)
{
    #pragma omp simd
    for (size_t i = 0; i < n; i++)
        d[i] = h[i] > 0.0f ? d[i] : 0.0f;
}

static float *scratch_at(void *scratch, size_t off)
{
    return (float *)(void *)((char *)scratch + off);
}

/* The forward pass of count samples: act_l for every layer, the logits last. */
static void forward(const mlp *m, const float *params, const float *x, size_t count, void *scratch)
{
    const float *in = x;
    for (size_t l = 0; l < m->n_layers; l++) {
        const size_t K = m->sizes[l], N = m->sizes[l + 1];
        float *out = scratch_at(scratch, m->act_off[l]);
        dense_forward(out, in, params + m->w_off[l], params + m->b_off[l], count, K, N);
        if (l + 1 < m->n_layers) {
            /* ReLU; pre > 0 is false for NaN, which becomes 0 (a NaN loss
             * still shows up through the logits of a diverged run). */
            relu(out, count * N);
        }
        in = out;
    }
}

double mlp_leaf(const mlp *m, const float *params, const float *x, const int32_t *y,
                size_t count, float *grad, int accumulate, void *scratch)
{
    const size_t L = m->n_layers;
    const size_t C = m->sizes[L];
    forward(m, params, x, count, scratch);

    /* Softmax cross-entropy, per sample b, in binary64 (the one formula):
     *   m_b   = (double) max_i z_i
     *   s     = 0.0 + e_0 + e_1 + ... + e_{C-1},   e_i = dmath_exp((double)z_i - m_b)
     *   loss_b = dmath_log(s) - ((double)z_y - m_b)
     *   dz_i  = (float)(e_i / s) - (i == y ? 1.0f : 0.0f)     (a float subtraction)
     * and the leaf's loss is the sum of the loss_b over atoms (tree_atoms),
     * as every sum over samples is. A label >= C
     * (a corrupt data set) gives a NaN loss, which stops the run as diverged. */
    const float *z = scratch_at(scratch, m->act_off[L - 1]);
    float *dz = scratch_at(scratch, m->grad_off[0]);
    double e_stack[MLP_STACK_CLASSES];
    double *e = C <= MLP_STACK_CLASSES ? e_stack : (double *)(void *)scratch_at(scratch, m->e_off);
    tree_atoms loss;
    tree_atoms_init(&loss);
    for (size_t b = 0; b < count; b++) {
        const float *zb = z + b * C;
        float *db = dz + b * C;
        float zmax = zb[0];
        for (size_t i = 1; i < C; i++)
            if (zb[i] > zmax)
                zmax = zb[i];
        const double mb = (double)zmax;
        double s = 0.0;   /* each e_i is computed once */
        for (size_t i = 0; i < C; i++) {
            e[i] = dmath_exp((double)zb[i] - mb);
            s = s + e[i];
        }
        const size_t yb = y[b] >= 0 ? (size_t)y[b] : C;
        const double lb = yb < C ? dmath_log(s) - ((double)zb[yb] - mb) : (double)NAN;
        tree_atoms_add(&loss, lb);
        for (size_t i = 0; i < C; i++)
            db[i] = (float)(e[i] / s) - (i == yb ? 1.0f : 0.0f);
    }

    /* Backward, last layer first. dout is d(loss)/d(output of layer l) for
     * the leaf's samples; its weight gradient is a sum over the samples by
     * atoms (dense_backward_weights), added to grad when accumulating. */
    const float *dout = dz;
    int cur = 0;
    for (size_t l = L; l-- > 0;) {
        const size_t K = m->sizes[l], N = m->sizes[l + 1];
        const float *in = l == 0 ? x : scratch_at(scratch, m->act_off[l - 1]);
        dense_backward_weights(grad + m->w_off[l], grad + m->b_off[l], in, dout, count, K, N,
                               accumulate);
        if (l == 0)
            break;
        /* d(input of l) = dout · W_l^T, then through the ReLU of layer l-1:
         * its output h is > 0 exactly where its pre-activation was > 0. */
        float *dh = scratch_at(scratch, m->grad_off[1 - cur]);
        dense_forward(dh, dout, m->wt[l], NULL, count, N, K);
        relu_mask(dh, in, count * K);
        dout = dh;
        cur = 1 - cur;
    }
    return tree_atoms_end(&loss);
}

void mlp_logits(const mlp *m, const float *params, const float *x, size_t count, float *logits, void *scratch)
{
    forward(m, params, x, count, scratch);
    memcpy(logits, scratch_at(scratch, m->act_off[m->n_layers - 1]), count * m->sizes[m->n_layers] * sizeof(float));
}

size_t mlp_tensor(const mlp *m, size_t l, int bias, size_t shape[2])
{
    shape[0] = bias ? m->sizes[l + 1] : m->sizes[l];
    shape[1] = m->sizes[l + 1];
    return bias ? m->b_off[l] : m->w_off[l];
}

void mlp_predict(const mlp *m, const float *params, const float *x, size_t count,
                 int32_t *pred, void *scratch)
{
    const size_t L = m->n_layers;
    const size_t C = m->sizes[L];
    forward(m, params, x, count, scratch);
    const float *z = scratch_at(scratch, m->act_off[L - 1]);
    for (size_t b = 0; b < count; b++) {
        const float *zb = z + b * C;
        size_t best = 0;
        for (size_t i = 1; i < C; i++)
            if (zb[i] > zb[best])   /* strict: the lowest index wins a tie */
                best = i;
        pred[b] = (int32_t)best;
    }
}
