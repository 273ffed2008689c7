/* optim.c — SGD with momentum and AdamW, element-wise. */
#include "optim.h"

#include "../base/simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_SGD, OPT_ADAMW };

/* The persistent part, saved in checkpoints as one block: header then moments. */
typedef struct {
    int64_t t;          /* steps taken */
    float beta1_t;      /* β1^t */
    float beta2_t;      /* β2^t */
    uint64_t n;         /* elements per moment */
} optim_header;

struct optim {
    int kind;
    float lr, momentum, beta1, beta2, eps, weight_decay, clip;
    /* Derived once per step from the header, so updates only read them. */
    float bc1, bc2, decay;
    size_t n;
    optim_header *head;   /* points at the start of state */
    float *m;             /* [n] momentum buffer (SGD) or first moment (AdamW) */
    float *v;             /* [n] second moment (AdamW only) */
    size_t state_bytes;
    unsigned char *state; /* header + m (+ v): one block, inside state_mem */
    void *state_mem;      /* the allocation; state starts inside it so that m is 64-byte aligned */
};

ls_status optim_create(optim **out, const ls_config *cfg, size_t n_params, ls_err *err)
{
    *out = NULL;
    optim *o = calloc(1, sizeof *o);
    if (o == NULL)
        return ls_fail(err, LS_ENOMEM, "optimiser: out of memory");
    o->kind = strcmp(cfg->optimizer, "sgd") == 0 ? OPT_SGD : OPT_ADAMW;
    o->lr = cfg->lr;
    o->momentum = cfg->momentum;
    o->beta1 = cfg->beta1;
    o->beta2 = cfg->beta2;
    o->eps = cfg->eps;
    o->weight_decay = cfg->weight_decay;
    o->clip = cfg->clip;
    o->n = n_params;
    size_t moments = o->kind == OPT_ADAMW ? 2 : 1;
    o->state_bytes = sizeof(optim_header) + moments * n_params * sizeof(float);
    /* The moments start 64 bytes aligned, so their vectors never straddle
     * two cache lines (the header before them is 24 bytes). */
    const size_t lead = (64 - sizeof(optim_header) % 64) % 64;
    o->state_mem = aligned_alloc(64, (lead + o->state_bytes + 63) / 64 * 64);
    o->state = o->state_mem != NULL ? (unsigned char *)o->state_mem + lead : NULL;
    if (o->state == NULL) {
        size_t bytes = o->state_bytes;
        free(o);
        return ls_fail(err, LS_ENOMEM, "optimiser: cannot allocate %zu bytes of state", bytes);
    }
    memset(o->state, 0, o->state_bytes);
    o->head = (optim_header *)(void *)o->state;
    o->m = (float *)(void *)(o->state + sizeof(optim_header));
    o->v = o->kind == OPT_ADAMW ? o->m + n_params : NULL;
    o->head->t = 0;
    o->head->beta1_t = 1.0f;
    o->head->beta2_t = 1.0f;
    o->head->n = n_params;
    *out = o;
    return LS_OK;
}

void optim_destroy(optim *o)
{
    if (o == NULL)
        return;
    free(o->state_mem);
    free(o);
}

void optim_begin_step(optim *o)
{
    optim_header *h = o->head;
    h->t++;
    h->beta1_t = h->beta1_t * o->beta1;
    h->beta2_t = h->beta2_t * o->beta2;
    o->bc1 = 1.0f - h->beta1_t;
    o->bc2 = 1.0f - h->beta2_t;
    o->decay = 1.0f - o->lr * o->weight_decay;
}

/* The element loops take plain pointers and no struct, so the compiler can
 * vectorise them (θ's out and in may be one array, so those two are not
 * restrict; `omp simd` vouches that no element depends on another); each
 * element's arithmetic is the same at any width. A clip of 0 means none and
 * is passed as +inf, which leaves every element (NaN included) as it is. */
/* The gradient element: grad[i] / div, computed as grad[i] · scale when
 * div is a power of two (scale = 1 / div exactly: both operations round the
 * same real number, so the bits are the same; 1.0f gives grad[i] itself,
 * never a signalling NaN), else divided. GRAD_SCALED is the first. */
#define GRAD_SCALED (grad[i] * scale)
#define GRAD_DIVIDED (grad[i] / div)

#define SGD_LOOP(GRAD)                                                                     \
    _Pragma("omp simd")   /* po may be p: element i reads p[i] before it writes po[i] */ \
    for (size_t i = 0; i < n; i++) {                                                       \
        const float pi = p[i];                                                             \
        float g = GRAD;                                                                    \
        g = g > c ? c : g;                                                                 \
        g = g < -c ? -c : g;                                                               \
        g = g + wd * pi;                                                                   \
        u[i] = mu * u[i] + g;                                                              \
        po[i] = pi - lr * u[i];                                                            \
    }

LS_SIMD_CLONES
static void sgd_range(float *po, const float *p, const float *restrict grad, float *restrict u, size_t n,
                      float lr, float mu, float wd, float c, float div, float scale)
{
    if (scale != 0.0f) {
        SGD_LOOP(GRAD_SCALED)
    } else {
        SGD_LOOP(GRAD_DIVIDED)
    }
}

/* One AdamW element; GRAD gives the gradient element, MHAT and VHAT m̂ and
 * v̂ from m[i] and v[i]. */
#define ADAMW_LOOP(GRAD, MHAT, VHAT)                                  \
    _Pragma("omp simd")                                               \
    for (size_t i = 0; i < n; i++) {                                  \
        float g = GRAD;                                               \
        g = g > c ? c : g;                                            \
        g = g < -c ? -c : g;                                          \
        m[i] = b1 * m[i] + one_b1 * g;                                \
        v[i] = b2 * v[i] + one_b2 * (g * g);                          \
        float mhat = MHAT;                                            \
        float vhat = VHAT;                                            \
        float q = p[i] * decay;                                       \
        po[i] = q - lr * (mhat / (sqrtf(vhat) + eps));                \
    }

/* m̂ = m / bc1 and v̂ = v / bc2. Once β^t is below 2^-25, bc = 1 - β^t is
 * exactly 1.0f (after about 165 steps for β1 = 0.9, 17,000 for β2 =
 * 0.999), and x / 1.0f is x itself for every value m and v can hold (they
 * are results of arithmetic, so never a signalling NaN): the loops without
 * those divisions give the same bits and spare the divider, which bounds
 * this loop (three divisions and a square root per element). */
#define ADAMW_BIAS(GRAD)                          \
    if (bc1 == 1.0f && bc2 == 1.0f) {             \
        ADAMW_LOOP(GRAD, m[i], v[i])              \
    } else if (bc1 == 1.0f) {                     \
        ADAMW_LOOP(GRAD, m[i], v[i] / bc2)        \
    } else {                                      \
        ADAMW_LOOP(GRAD, m[i] / bc1, v[i] / bc2)  \
    }

LS_SIMD_CLONES
static void adamw_range(float *po, const float *p, const float *restrict grad, float *restrict m,
                        float *restrict v, size_t n, float lr, float b1, float b2, float bc1, float bc2, float eps,
                        float decay, float c, float div, float scale)
{
    const float one_b1 = 1.0f - b1, one_b2 = 1.0f - b2;
    if (scale != 0.0f) {
        ADAMW_BIAS(GRAD_SCALED)
    } else {
        ADAMW_BIAS(GRAD_DIVIDED)
    }
}

/* 1 / div when that is exact and x · (1 / div) rounds as x / div for every
 * x: div a power of two whose reciprocal is a normal float; else 0. */
static float exact_reciprocal(float div)
{
    int e;
    if (!(div > 0.0f) || isinf(div) || frexpf(div, &e) != 0.5f)
        return 0.0f;
    const float r = 1.0f / div;
    return isnormal(r) ? r : 0.0f;
}

void optim_update(const optim *o, float *out, const float *in, const float *grad, float grad_div, size_t lo,
                  size_t hi)
{
    if (hi <= lo)
        return;
    float c = o->clip > 0.0f ? o->clip : INFINITY;
    const float scale = exact_reciprocal(grad_div);
    if (o->kind == OPT_SGD)
        sgd_range(out + lo, in + lo, grad + lo, o->m + lo, hi - lo, o->lr, o->momentum, o->weight_decay, c, grad_div,
                  scale);
    else
        adamw_range(out + lo, in + lo, grad + lo, o->m + lo, o->v + lo, hi - lo, o->lr, o->beta1, o->beta2,
                    o->bc1, o->bc2, o->eps, o->decay, c, grad_div, scale);
}

size_t optim_state_bytes(const optim *o)
{
    return o->state_bytes;
}

void *optim_state_ptr(optim *o)
{
    return o->state;
}

int64_t optim_step(const optim *o)
{
    return o->head->t;
}
