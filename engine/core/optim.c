/* optim.c — SGD with momentum and AdamW, element-wise. */
#include "engine/core/optim.h"

#include "base/simd.h"
#include "engine/num/dmath.h"
#include "reduce/tree.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define OPTIM_X86 1
#include <immintrin.h>
#else
#define OPTIM_X86 0
#endif

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OPT_SGD, OPT_ADAMW };

/* The persistent part, saved in checkpoints as one block: header then
 * moments. Every field is a 32-bit word, so the checkpoint stores the block
 * as little-endian words on any host (record/checkpoint.h); the 64-bit counts
 * are two words, low first, which on a little-endian host is the layout of
 * an int64_t, so files written before are read as they were. */
typedef struct {
    uint32_t t_lo, t_hi;   /* steps taken */
    float beta1_t;         /* β1^t */
    float beta2_t;         /* β2^t */
    uint32_t n_lo, n_hi;   /* elements per moment */
} optim_header;

static int64_t optim_get_t(const optim_header *h)
{
    return (int64_t)((uint64_t)h->t_hi << 32 | h->t_lo);
}

static void optim_set_t(optim_header *h, int64_t t)
{
    h->t_lo = (uint32_t)((uint64_t)t & 0xffffffffu);
    h->t_hi = (uint32_t)((uint64_t)t >> 32);
}

/* A range of θ that takes no weight decay (decay_groups=weights). */
typedef struct {
    size_t lo, hi;
} optim_range;

struct optim {
    int kind;
    float lr, momentum, beta1, beta2, eps, weight_decay, clip;
    ls_config sched;      /* the config, for the schedule (optim_lr_at) */
    float clip_norm;      /* global-norm clip, 0 = none */
    /* Derived once per step from the header, so updates only read them. */
    float bc1, bc2, decay;
    float lr_now;         /* the schedule's learning rate of this step */
    float gscale;         /* the global-norm clip's factor of this step (1: none) */
    optim_range *no_decay;   /* sorted, disjoint; NULL when every element decays */
    size_t n_no_decay;
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
    o->sched = *cfg;
    o->clip_norm = cfg->clip_norm;
    o->lr_now = cfg->lr;
    o->gscale = 1.0f;
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
    optim_set_t(o->head, 0);
    o->head->beta1_t = 1.0f;
    o->head->beta2_t = 1.0f;
    o->head->n_lo = (uint32_t)((uint64_t)n_params & 0xffffffffu);
    o->head->n_hi = (uint32_t)((uint64_t)n_params >> 32);
    *out = o;
    return LS_OK;
}

void optim_destroy(optim *o)
{
    if (o == NULL)
        return;
    free(o->state_mem);
    free(o->no_decay);
    free(o);
}

ls_status optim_set_groups(optim *o, const ls_tensor *tensors, size_t n_tensors, const unsigned char *no_decay,
                           ls_err *err)
{
    free(o->no_decay);
    o->no_decay = NULL;
    o->n_no_decay = 0;
    if (strcmp(o->sched.decay_groups, "weights") != 0 || no_decay == NULL || tensors == NULL)
        return LS_OK;
    o->no_decay = malloc((n_tensors ? n_tensors : 1) * sizeof *o->no_decay);
    if (o->no_decay == NULL)
        return ls_fail(err, LS_ENOMEM, "optimiser: out of memory");
    for (size_t i = 0; i < n_tensors; i++) {
        if (!no_decay[i])
            continue;
        size_t count = 1;
        for (size_t k = 0; k < tensors[i].ndim; k++)
            count *= tensors[i].shape[k];
        const size_t lo = tensors[i].offset, hi = lo + count;
        if (hi > o->n || (o->n_no_decay > 0 && lo < o->no_decay[o->n_no_decay - 1].hi))
            return ls_fail(err, LS_EINVAL, "optimiser: tensor %zu (%s) is out of order or past θ", i,
                           tensors[i].name ? tensors[i].name : "?");
        if (o->n_no_decay > 0 && lo == o->no_decay[o->n_no_decay - 1].hi)
            o->no_decay[o->n_no_decay - 1].hi = hi;   /* adjacent: one range */
        else
            o->no_decay[o->n_no_decay++] = (optim_range){ lo, hi };
    }
    return LS_OK;
}

static float exact_reciprocal(float div);

/* 1 (binary64) multiplied by g k times, by squaring from k's lowest bit:
 * a fixed sequence of binary64 products for each k. */
static double pow_steps(double g, uint64_t k)
{
    double r = 1.0;
    while (k != 0) {
        if (k & 1u)
            r = r * g;
        g = g * g;
        k >>= 1;
    }
    return r;
}

float optim_lr_at(const ls_config *cfg, int64_t t)
{
    const double lr = cfg->lr;
    if (strcmp(cfg->lr_schedule, "step") == 0) {
        const uint64_t k = t > 0 ? (uint64_t)(t - 1) / (uint64_t)cfg->lr_step : 0;
        return (float)(lr * pow_steps((double)cfg->lr_gamma, k));
    }
    if (strcmp(cfg->lr_schedule, "cosine") == 0) {
        const int64_t w = cfg->warmup, d = cfg->decay_steps;
        const double lo = cfg->lr_min;
        if (t <= w)   /* a step has t >= 1, so w >= 1 here; t = 0 (no step) with w = 0 gives lr */
            return w > 0 ? (float)(lr * (double)t / (double)w) : (float)lr;
        if (t >= d)
            return (float)lo;
        const double p = (double)(t - w) / (double)(d - w);
        return (float)(lo + (lr - lo) * (0.5 * (1.0 + dmath_cospi(p))));
    }
    return cfg->lr;
}

void optim_begin_step(optim *o)
{
    optim_header *h = o->head;
    optim_set_t(h, optim_get_t(h) + 1);
    h->beta1_t = h->beta1_t * o->beta1;
    h->beta2_t = h->beta2_t * o->beta2;
    o->bc1 = 1.0f - h->beta1_t;
    o->bc2 = 1.0f - h->beta2_t;
    o->lr_now = optim_lr_at(&o->sched, optim_get_t(h));
    o->decay = 1.0f - o->lr_now * o->weight_decay;
    o->gscale = 1.0f;
}

double optim_sumsq(const float *grad, float grad_div, size_t lo, size_t hi)
{
    const float scale = exact_reciprocal(grad_div);
    double s = 0.0;
    for (size_t i = lo; i < hi; i++) {
        const float g = scale != 0.0f ? grad[i] * scale : grad[i] / grad_div;   /* the update's g, bit for bit */
        s = s + (double)g * (double)g;   /* exact product; the sum in index order */
    }
    return s;
}

float optim_clip_norm(optim *o, const double *chunk_sums, size_t n_chunks, double *norm)
{
    const double total = n_chunks > 0 ? tree_loss_sum(chunk_sums, n_chunks) : 0.0;
    const double nrm = sqrt(total);
    if (norm != NULL)
        *norm = nrm;
    o->gscale = o->clip_norm > 0.0f && nrm > (double)o->clip_norm ? (float)((double)o->clip_norm / nrm) : 1.0f;
    return o->gscale;
}

int optim_clips_norm(const optim *o)
{
    return o->clip_norm > 0.0f;
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

/* ---- Tiny values: AdamW's float arithmetic without subnormal operands. ----
 *
 * Why. A weight whose gradient is exactly 0 for good (a dead ReLU unit, an
 * input pixel that is 0 in every image) has its moments decay to the bottom
 * of the subnormal range and stay there: 0.9·m rounds back to m once m is
 * at most 4·2^-149, and 0.999·v once v is at most 500·2^-149. Intel cores
 * take a microcode assist of about 130 cycles for every vector multiply,
 * divide or square root that reads or makes a subnormal (add, compare and
 * the conversions between float and binary64 do not), so a long MLP
 * training spent half its time in this loop (README, Performance).
 * Flushing them to zero would change the bits, which the contract forbids.
 *
 * How. A lane where some operand is tiny (below the TINY_ bounds, and not
 * 0), and all four finite, is computed in binary64: each float operation
 * of ADAMW_LOOP done in binary64, in the same order, and rounded to float
 * by a conversion (ADAMW_BINARY64_VEC). For +, −, ×, ÷ and sqrt of floats, rounding the
 * binary64 result to float gives the correctly rounded float result
 * (binary64 has more than 2·24 + 2 bits: double rounding is innocuous),
 * overflow and underflow included, and a product or sum of two floats is
 * exact in binary64. Every binary64 intermediate is normal, and the
 * conversions handle subnormals at full speed (measured on the Xeon:
 * vcvtpd2ps making subnormals and vcvtps2pd reading them run as fast as on
 * normal numbers, where a vector multiply that reads one takes 80 times as
 * long). So the paths give the same bits for every finite input, and which
 * lanes take which is only a matter of speed: where subnormal arithmetic
 * costs no assist (subnormals_slow: AMD's Zen 3) no lane takes binary64,
 * which there only cost time. The AVX-512 path (adamw_z)
 * packs the tiny lanes with vcompressps and computes them 32 at a time; the
 * AVX2 path (adamw_y), which has no compress, does a vector of 8 holding a
 * tiny lane whole in binary64 (unless a lane of it holds a NaN or an
 * infinity: then plain); the scalar path runs the plain loop. Where the
 * tests ask for every lane in binary64 (optim_set_exact_lanes), the scalar
 * path runs adamw_binary64, the C form of the same operations, which
 * compilers may narrow back into float operations (same bits, assists and
 * all). test_reference.c compares every path and mode with the float
 * formula, element by element. */

/* A lane is tiny when an operand is below these (and not 0): then an
 * operation of the formula reads or makes a subnormal, for the usual
 * hyperparameters; above them the plain operations meet none. Too wide,
 * they send lanes to binary64 for nothing (at 2^-96 for θ, m, v and 2^-40
 * for g, AdamW took twice as long in a gol training, whose gates' logits
 * have small but normal gradients and moments); too narrow, the assists
 * come back. Only speed depends on them, never bits. */
#define TINY_THETA 0x1p-120f   /* θ·(1 − lr·wd) */
#define TINY_M 0x1p-110f       /* β1·m, and lr·m̂/(√v̂ + ε) for lr ≥ 2^-10 and √v̂ + ε ≤ 2^6 */
#define TINY_V 0x1p-120f       /* β2·v, v̂ and √v̂ */
#define TINY_G 0x1p-56f        /* of g = grad / div: g·g and (1 − β2)·g·g for 1 − β2 ≥ 2^-14 */
#define EXACT_LANES 32         /* tiny lanes computed together (adamw_binary64_z) */

static simd_switch simd_choice = SIMD_SWITCH_INIT;

LS_SIMD_CLONES
static void adamw_range(float *po, const float *p, const float *restrict grad, float *restrict m,
                        float *restrict v, size_t n, float lr, float b1, float b2, float bc1, float bc2, float eps,
                        float decay, float c, float div, float scale);

/* The AdamW hyperparameters of a step, as adamw_range's arguments. */
typedef struct {
    float lr, b1, b2, bc1, bc2, eps, decay, c, div, scale;
} adamw_hyper;

/* ADAMW_LOOP's operations, one by one, in binary64, each result rounded to
 * float by a conversion (F32): the C form of ADAMW_BINARY64_VEC, for the
 * scalar path when the tests ask for it. The divisions by bc1 and bc2 are
 * always done: by 1.0 they are exact, as the plain loop's skipping them. */
#define F32(x) ((double)(float)(x))
#define ADAMW_BINARY64_LOOP(GRAD)                                                             \
    _Pragma("omp simd")                                                                       \
    for (size_t i = 0; i < n; i++) {                                                          \
        float gf = (float)(GRAD);   /* clipped in float, as the plain loop: compares only */  \
        gf = gf > c ? c : gf;                                                                 \
        gf = gf < -c ? -c : gf;                                                               \
        const double g = gf;                                                                  \
        const double mi = F32(F32(b1 * (double)m[i]) + F32(one_b1 * g));                     \
        const double vi = F32(F32(b2 * (double)v[i]) + F32(one_b2 * F32(g * g)));            \
        const double mhat = F32(mi / bc1), vhat = F32(vi / bc2);                              \
        const double q = F32((double)p[i] * decay);                                          \
        const double den = F32(F32(sqrt(vhat)) + eps);                                       \
        po[i] = (float)(q - F32(lr * F32(mhat / den)));                                      \
        m[i] = (float)mi;                                                                     \
        v[i] = (float)vi;                                                                     \
    }

LS_SIMD_CLONES
static void adamw_binary64(float *po, const float *p, const float *restrict grad, float *restrict m,
                           float *restrict v, size_t n, const adamw_hyper *h)
{
    const float c = h->c;
    const double b1 = h->b1, b2 = h->b2, one_b1 = 1.0f - h->b1, one_b2 = 1.0f - h->b2;
    const double bc1 = h->bc1, bc2 = h->bc2, eps = h->eps, decay = h->decay, lr = h->lr;
    const double scale = h->scale, div = h->div;
    if (scale != 0.0) {
        ADAMW_BINARY64_LOOP((double)grad[i] * scale)
    } else {
        ADAMW_BINARY64_LOOP((double)grad[i] / div)
    }
}


/* -1: no lane takes the binary64 path, 0: the tiny lanes, 1: every finite
 * lane, 2 (the default): 0 where subnormal arithmetic is slow, else -1
 * (optim_set_exact_lanes). */
#define EXACT_AUTO 2
static _Atomic int exact_lanes = EXACT_AUTO;
static atomic_size_t binary64_lanes;   /* optim_binary64_lanes */

#if OPTIM_X86
/* |x| in (0, bound) as bits: x's magnitude bits minus 1 below bound's minus
 * 1, unsigned (0 wraps around; NaN and infinities are above any bound). */
static FORCE_INLINE __attribute__((target("avx512f")))
__mmask16 tiny_z(__m512 x, uint32_t bound)
{
    const __m512i mag = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF));
    return _mm512_cmplt_epu32_mask(_mm512_sub_epi32(mag, _mm512_set1_epi32(1)), _mm512_set1_epi32((int)(bound - 1)));
}

static FORCE_INLINE __attribute__((target("avx512f")))
__mmask16 finite_z(__m512 x)
{
    const __m512i mag = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF));
    return _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(0x7F800000));
}

/* adamw_binary64's operations on one vector of binary64 lanes: g the
 * clipped gradient, M, V, P the old m, v and θ; mi, vi and x (θ after the
 * step, not yet rounded) out. The vector forms below name R (round to
 * float and back), the operations and the broadcast hyperparameters. */
#define ADAMW_BINARY64_VEC(g, M, V, P, mi, vi, x)                \
    do {                                                         \
        mi = R(ADD(R(MUL(b1, M)), R(MUL(one_b1, g))));           \
        vi = R(ADD(R(MUL(b2, V)), R(MUL(one_b2, R(MUL(g, g))))));\
        x = R(ADD(R(SQRT(R(DIV(vi, bc2)))), eps));               \
        x = R(MUL(lr, R(DIV(R(DIV(mi, bc1)), x))));              \
        x = SUB(R(MUL(P, decay)), x);                            \
    } while (0)

/* adamw_binary64 on 32 lanes (four vectors of 8), written out so that no
 * compiler narrows a binary64 operation between two roundings back into
 * the float operation it equals (which would meet the subnormals again:
 * same bits, but the assists come back). */
static __attribute__((target("avx512f")))
void adamw_binary64_z(float *po, const float *p, const float *restrict grad, float *restrict m,
                      float *restrict v, const adamw_hyper *h)
{
#define R(x) _mm512_cvtps_pd(_mm512_cvtpd_ps(x))
#define ADD _mm512_add_pd
#define SUB _mm512_sub_pd
#define MUL _mm512_mul_pd
#define DIV _mm512_div_pd
#define SQRT _mm512_sqrt_pd
#define LOAD(a) _mm512_cvtps_pd(_mm256_loadu_ps(a))
    const __m512d b1 = _mm512_set1_pd(h->b1), b2 = _mm512_set1_pd(h->b2);
    const __m512d one_b1 = _mm512_set1_pd(1.0f - h->b1), one_b2 = _mm512_set1_pd(1.0f - h->b2);
    const __m512d bc1 = _mm512_set1_pd(h->bc1), bc2 = _mm512_set1_pd(h->bc2);
    const __m512d c = _mm512_set1_pd(h->c), nc = _mm512_set1_pd(-h->c);
    const __m512d eps = _mm512_set1_pd(h->eps), decay = _mm512_set1_pd(h->decay), lr = _mm512_set1_pd(h->lr);
    const __m512d scale = _mm512_set1_pd(h->scale), div = _mm512_set1_pd(h->div);
    for (int j = 0; j < 4; j++) {
        const size_t o = 8 * (size_t)j;
        __m512d g = h->scale != 0.0f ? R(MUL(LOAD(grad + o), scale)) : R(DIV(LOAD(grad + o), div));
        g = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(g, c, _CMP_GT_OQ), g, c);    /* g > c ? c : g */
        g = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(g, nc, _CMP_LT_OQ), g, nc);  /* g < -c ? -c : g */
        __m512d mi, vi, x;
        ADAMW_BINARY64_VEC(g, LOAD(m + o), LOAD(v + o), LOAD(p + o), mi, vi, x);
        _mm256_storeu_ps(m + o, _mm512_cvtpd_ps(mi));
        _mm256_storeu_ps(v + o, _mm512_cvtpd_ps(vi));
        _mm256_storeu_ps(po + o, _mm512_cvtpd_ps(x));
    }
#undef R
#undef ADD
#undef SUB
#undef MUL
#undef DIV
#undef SQRT
#undef LOAD
}

/* The bits of |x|, for the integer compares of tiny_z and adamw_y. The
 * gradient's bound applies to grad itself: TINY_G · div (at most +inf). */
static uint32_t magnitude_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u & 0x7FFFFFFFu;
}

/* The tiny lanes of a range wait here, packed, until there are EXACT_LANES
 * of them; the unused slots hold harmless values (1, 0) for the last call. */
typedef struct {
    float p[EXACT_LANES + 16], g[EXACT_LANES + 16], m[EXACT_LANES + 16], v[EXACT_LANES + 16];
    float out[EXACT_LANES + 16];
    uint32_t at[EXACT_LANES + 16];
    size_t n;
} tiny_lanes;

static __attribute__((target("avx512f")))
void tiny_flush(tiny_lanes *t, size_t count, float *po, float *restrict m, float *restrict v, const adamw_hyper *h)
{
    adamw_binary64_z(t->out, t->p, t->g, t->m, t->v, h);
    for (size_t j = 0; j < count; j++) {   /* copies of bits, no arithmetic */
        po[t->at[j]] = t->out[j];
        m[t->at[j]] = t->m[j];
        v[t->at[j]] = t->v[j];
    }
    /* The rest (fewer than 16) to the front: one vector each, loaded before
     * it is stored (the arrays have 16 slots past EXACT_LANES), where five
     * memmove calls of a few floats cost more than the lanes' arithmetic. */
    float *const rows[4] = { t->p, t->g, t->m, t->v };
    for (int r = 0; r < 4; r++)
        _mm512_storeu_ps(rows[r], _mm512_loadu_ps(rows[r] + count));
    _mm512_storeu_si512(t->at, _mm512_loadu_si512(t->at + count));
    t->n -= count;
}

/* ADAMW_LOOP on 16 lanes, the tiny ones set aside for the binary64 path
 * (tiny_flush, EXACT_LANES at a time): their operands are replaced by 1 and
 * 0 so the plain operations meet no subnormal, and their plain results are
 * overwritten by the binary64 ones (a flush comes after the plain stores of
 * the lanes it holds). mode: as exact_lanes. */
static __attribute__((target("avx512f")))
void adamw_z(float *po, const float *p, const float *restrict grad, float *restrict m, float *restrict v, size_t n,
             const adamw_hyper *h, int mode)
{
    const __m512 b1 = _mm512_set1_ps(h->b1), b2 = _mm512_set1_ps(h->b2);
    const __m512 one_b1 = _mm512_set1_ps(1.0f - h->b1), one_b2 = _mm512_set1_ps(1.0f - h->b2);
    const __m512 bc1 = _mm512_set1_ps(h->bc1), bc2 = _mm512_set1_ps(h->bc2), c = _mm512_set1_ps(h->c);
    const __m512 nc = _mm512_set1_ps(-h->c), eps = _mm512_set1_ps(h->eps), decay = _mm512_set1_ps(h->decay);
    const __m512 lr = _mm512_set1_ps(h->lr), scale = _mm512_set1_ps(h->scale), div = _mm512_set1_ps(h->div);
    const __m512 one = _mm512_set1_ps(1.0f);
    const int by_scale = h->scale != 0.0f, div1 = h->bc1 != 1.0f, div2 = h->bc2 != 1.0f;
    const uint32_t theta_bound = magnitude_bits(TINY_THETA), m_bound = magnitude_bits(TINY_M);
    const uint32_t v_bound = magnitude_bits(TINY_V), g_bound = magnitude_bits(TINY_G * h->div);
    tiny_lanes t;
    t.n = 0;
    size_t flushed = 0;
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 in = (__mmask16)(n - i >= 16 ? 0xFFFFu : (1u << (n - i)) - 1u);
        __m512 P = _mm512_maskz_loadu_ps(in, p + i), G = _mm512_maskz_loadu_ps(in, grad + i);
        __m512 M = _mm512_maskz_loadu_ps(in, m + i), V = _mm512_maskz_loadu_ps(in, v + i);
        __mmask16 tiny = 0;
        if (mode >= 0) {
            const __mmask16 fin = finite_z(P) & finite_z(G) & finite_z(M) & finite_z(V) & in;
            tiny = mode > 0 ? fin
                            : (tiny_z(P, theta_bound) | tiny_z(M, m_bound) | tiny_z(V, v_bound) |
                               tiny_z(G, g_bound)) & fin;
        }
        if (tiny) {
            const __m512i at = _mm512_add_epi32(_mm512_set1_epi32((int)i), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8,
                                                                                             9, 10, 11, 12, 13, 14, 15));
            _mm512_mask_compressstoreu_ps(t.p + t.n, tiny, P);
            _mm512_mask_compressstoreu_ps(t.g + t.n, tiny, G);
            _mm512_mask_compressstoreu_ps(t.m + t.n, tiny, M);
            _mm512_mask_compressstoreu_ps(t.v + t.n, tiny, V);
            _mm512_mask_compressstoreu_epi32(t.at + t.n, tiny, at);
            t.n += (size_t)__builtin_popcount(tiny);
            P = _mm512_mask_mov_ps(P, tiny, one);
            M = _mm512_mask_mov_ps(M, tiny, one);
            V = _mm512_mask_mov_ps(V, tiny, one);
            G = _mm512_mask_mov_ps(G, tiny, _mm512_setzero_ps());
        }
        __m512 g = by_scale ? _mm512_mul_ps(G, scale) : _mm512_div_ps(G, div);
        g = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(g, c, _CMP_GT_OQ), g, c);    /* g > c ? c : g */
        g = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(g, nc, _CMP_LT_OQ), g, nc);  /* g < -c ? -c : g */
        M = _mm512_add_ps(_mm512_mul_ps(b1, M), _mm512_mul_ps(one_b1, g));
        V = _mm512_add_ps(_mm512_mul_ps(b2, V), _mm512_mul_ps(one_b2, _mm512_mul_ps(g, g)));
        const __m512 mhat = div1 ? _mm512_div_ps(M, bc1) : M, vhat = div2 ? _mm512_div_ps(V, bc2) : V;
        const __m512 q = _mm512_mul_ps(P, decay);
        const __m512 out = _mm512_sub_ps(q, _mm512_mul_ps(lr, _mm512_div_ps(mhat, _mm512_add_ps(_mm512_sqrt_ps(vhat), eps))));
        _mm512_mask_storeu_ps(m + i, in, M);
        _mm512_mask_storeu_ps(v + i, in, V);
        _mm512_mask_storeu_ps(po + i, in, out);
        if (t.n >= EXACT_LANES) {
            tiny_flush(&t, EXACT_LANES, po, m, v, h);
            flushed += EXACT_LANES;
        }
    }
    if (t.n > 0) {
        for (size_t j = t.n; j < EXACT_LANES; j++) {
            t.p[j] = t.m[j] = t.v[j] = 1.0f;
            t.g[j] = 0.0f;
        }
        flushed += t.n;
        tiny_flush(&t, t.n, po, m, v, h);
    }
    atomic_fetch_add_explicit(&binary64_lanes, flushed, memory_order_relaxed);   /* once a call: no shared line a vector */
}

/* AVX2 has no compress: a vector of 8 with a tiny lane is done whole in
 * binary64 (its other lanes get the same bits that way too), as two
 * vectors of 4; a vector with a NaN or an infinity keeps the plain
 * operations. The last n % 8 elements go through adamw_range (the plain
 * loop).
 *
 * The test for tiny lanes cost a third of the update (AVX2, Zen 3: 380 µs
 * of 269k parameters against 250 µs without it), so the default mode makes
 * it in two stages. First, for two vectors (16 lanes) at once, whether any
 * operand may be tiny: each magnitude as a key (magnitude − 1 with the sign
 * bit flipped, one add: 0 wraps to the largest key), the smallest key of θ
 * and v (one bound), of m and of g over both vectors, three compares; a NaN
 * or an infinity is never tiny. That keeps no exactness to prove: which
 * lanes take binary64 is only a matter of speed, never of bits, and v's
 * sign is not masked (the update never makes a negative v; one would only
 * not be seen as tiny). Only when that says maybe does each vector of 8
 * take the full test below (NaN and infinities, then the tiny lanes). */
typedef struct {
    __m256 scale, div, c, nc, b1, one_b1, b2, one_b2, bc1, bc2, eps, decay, lr;
} adamw_y_hyper;

/* The plain float operations on the 8 lanes at i (ADAMW_LOOP's). */
static FORCE_INLINE __attribute__((target("avx2")))
void plain_y(float *po, float *restrict m, float *restrict v, size_t i, __m256 P, __m256 G, __m256 M, __m256 V,
             const adamw_y_hyper *k, int by_scale, int div1, int div2)
{
    __m256 g = by_scale ? _mm256_mul_ps(G, k->scale) : _mm256_div_ps(G, k->div);
    g = _mm256_blendv_ps(g, k->c, _mm256_cmp_ps(g, k->c, _CMP_GT_OQ));     /* g > c ? c : g */
    g = _mm256_blendv_ps(g, k->nc, _mm256_cmp_ps(g, k->nc, _CMP_LT_OQ));   /* g < -c ? -c : g */
    const __m256 mi = _mm256_add_ps(_mm256_mul_ps(k->b1, M), _mm256_mul_ps(k->one_b1, g));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(k->b2, V), _mm256_mul_ps(k->one_b2, _mm256_mul_ps(g, g)));
    const __m256 mhat = div1 ? _mm256_div_ps(mi, k->bc1) : mi;
    const __m256 vhat = div2 ? _mm256_div_ps(vi, k->bc2) : vi;
    const __m256 den = _mm256_add_ps(_mm256_sqrt_ps(vhat), k->eps);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(po + i, _mm256_sub_ps(_mm256_mul_ps(P, k->decay), _mm256_mul_ps(k->lr, _mm256_div_ps(mhat, den))));
}

/* The 8 lanes at i, each operation in binary64 (ADAMW_BINARY64_VEC), as
 * two vectors of 4. */
static __attribute__((target("avx2")))
void binary64_y(float *po, float *restrict m, float *restrict v, size_t i, __m256 P, __m256 G, __m256 M, __m256 V,
                const adamw_hyper *h)
{
#define R(x) _mm256_cvtps_pd(_mm256_cvtpd_ps(x))
#define ADD _mm256_add_pd
#define SUB _mm256_sub_pd
#define MUL _mm256_mul_pd
#define DIV _mm256_div_pd
#define SQRT _mm256_sqrt_pd
    const __m256d b1 = _mm256_set1_pd(h->b1), b2 = _mm256_set1_pd(h->b2);
    const __m256d one_b1 = _mm256_set1_pd(1.0f - h->b1), one_b2 = _mm256_set1_pd(1.0f - h->b2);
    const __m256d bc1 = _mm256_set1_pd(h->bc1), bc2 = _mm256_set1_pd(h->bc2);
    const __m256d eps = _mm256_set1_pd(h->eps), decay = _mm256_set1_pd(h->decay), lr = _mm256_set1_pd(h->lr);
    const __m256d c = _mm256_set1_pd(h->c), nc = _mm256_set1_pd(-h->c);
    const __m256d scale = _mm256_set1_pd(h->scale), div = _mm256_set1_pd(h->div);
    for (int k = 0; k < 2; k++) {
#define HALF(X) _mm256_cvtps_pd(k ? _mm256_extractf128_ps(X, 1) : _mm256_castps256_ps128(X))
        __m256d g = h->scale != 0.0f ? R(MUL(HALF(G), scale)) : R(DIV(HALF(G), div));
        g = _mm256_blendv_pd(g, c, _mm256_cmp_pd(g, c, _CMP_GT_OQ));    /* g > c ? c : g */
        g = _mm256_blendv_pd(g, nc, _mm256_cmp_pd(g, nc, _CMP_LT_OQ));  /* g < -c ? -c : g */
        __m256d mi, vi, x;
        ADAMW_BINARY64_VEC(g, HALF(M), HALF(V), HALF(P), mi, vi, x);
#undef HALF
        _mm_storeu_ps(m + i + 4 * (size_t)k, _mm256_cvtpd_ps(mi));
        _mm_storeu_ps(v + i + 4 * (size_t)k, _mm256_cvtpd_ps(vi));
        _mm_storeu_ps(po + i + 4 * (size_t)k, _mm256_cvtpd_ps(x));
    }
#undef R
#undef ADD
#undef SUB
#undef MUL
#undef DIV
#undef SQRT
}

/* The full test of one vector: whether it goes to binary64 (mode 1: every
 * vector whose lanes are all finite; 0: those that also hold a tiny lane),
 * from the exact bounds. */
static FORCE_INLINE __attribute__((target("avx2")))
int exact_y(__m256 P, __m256 G, __m256 M, __m256 V, float div, int mode)
{
    /* the bounds as keys (KEY_Y below) */
#define BOUND_Y(x) _mm256_set1_epi32((int32_t)((magnitude_bits(x) - 1) ^ 0x80000000u))
    const __m256i pb = BOUND_Y(TINY_THETA), mb = BOUND_Y(TINY_M), vb = BOUND_Y(TINY_V), gb = BOUND_Y(TINY_G * div);
#undef BOUND_Y
    const __m256i mag_mask = _mm256_set1_epi32(0x7FFFFFFF), one_i = _mm256_set1_epi32(1);
    const __m256i flip = _mm256_set1_epi32(INT32_MIN);
    const __m256i finite_max = _mm256_set1_epi32(0x7F7FFFFF);
    const __m256i ap = _mm256_and_si256(_mm256_castps_si256(P), mag_mask);
    const __m256i ag = _mm256_and_si256(_mm256_castps_si256(G), mag_mask);
    const __m256i am = _mm256_and_si256(_mm256_castps_si256(M), mag_mask);
    const __m256i av = _mm256_and_si256(_mm256_castps_si256(V), mag_mask);
    /* a NaN or an infinity: a magnitude of at least 0x7F800000
     * (magnitudes are below 2^31: signed compares order them) */
    const __m256i most = _mm256_max_epi32(_mm256_max_epi32(ap, ag), _mm256_max_epi32(am, av));
    const __m256i special = _mm256_cmpgt_epi32(most, finite_max);
    if (!_mm256_testz_si256(special, special))
        return 0;
    if (mode > 0)
        return 1;
    /* tiny: magnitude − 1 with the sign bit flipped, so that a signed
     * compare orders them as unsigned and 0 (→ all ones) is above every
     * bound */
#define KEY_Y(A) _mm256_xor_si256(_mm256_sub_epi32(A, one_i), flip)
    const __m256i tiny = _mm256_or_si256(
        _mm256_or_si256(_mm256_cmpgt_epi32(pb, KEY_Y(ap)), _mm256_cmpgt_epi32(mb, KEY_Y(am))),
        _mm256_or_si256(_mm256_cmpgt_epi32(vb, KEY_Y(av)), _mm256_cmpgt_epi32(gb, KEY_Y(ag))));
#undef KEY_Y
    return !_mm256_testz_si256(tiny, tiny);
}

static FORCE_INLINE __attribute__((target("avx2")))
void adamw_y_body(float *po, const float *p, const float *restrict grad, const float *restrict grad2,
                  float *restrict m, float *restrict v, size_t n, const adamw_hyper *h, int mode, int by_scale,
                  int div1, int div2, int pair)
{
    /* the gradient's 8 lanes at i: with pair, grad + grad2 (the tree's last
     * addition, optim_update_sum) */
#define LOAD_G(i) (pair ? _mm256_add_ps(_mm256_loadu_ps(grad + (i)), _mm256_loadu_ps(grad2 + (i))) \
                        : _mm256_loadu_ps(grad + (i)))
    const adamw_y_hyper k = {
        _mm256_set1_ps(h->scale), _mm256_set1_ps(h->div),   _mm256_set1_ps(h->c),
        _mm256_set1_ps(-h->c),    _mm256_set1_ps(h->b1),    _mm256_set1_ps(1.0f - h->b1),
        _mm256_set1_ps(h->b2),    _mm256_set1_ps(1.0f - h->b2), _mm256_set1_ps(h->bc1),
        _mm256_set1_ps(h->bc2),   _mm256_set1_ps(h->eps),   _mm256_set1_ps(h->decay),
        _mm256_set1_ps(h->lr),
    };
    const float gdiv = h->div;
    size_t whole = 0;   /* lanes done in binary64 */
    size_t i = 0;
    if (mode == 0) {
        /* the keys of the first stage: magnitude + 0x7FFFFFFF is (magnitude
         * − 1) ^ 0x80000000 */
#define QKEY(x) _mm256_add_epi32(x, bias)
#define QMAG(x) QKEY(_mm256_and_si256(_mm256_castps_si256(x), mag_mask))
#define BOUND_Q(x) _mm256_set1_epi32((int32_t)((magnitude_bits(x) - 1) ^ 0x80000000u))
        const __m256i mag_mask = _mm256_set1_epi32(0x7FFFFFFF), bias = _mm256_set1_epi32(0x7FFFFFFF);
        const __m256i pvb = BOUND_Q(TINY_THETA > TINY_V ? TINY_THETA : TINY_V), mb = BOUND_Q(TINY_M);
        const __m256i gb = BOUND_Q(TINY_G * gdiv);
#undef BOUND_Q
        for (; i + 16 <= n; i += 16) {
            const __m256 P0 = _mm256_loadu_ps(p + i), G0 = LOAD_G(i);
            const __m256 M0 = _mm256_loadu_ps(m + i), V0 = _mm256_loadu_ps(v + i);
            const __m256 P1 = _mm256_loadu_ps(p + i + 8), G1 = LOAD_G(i + 8);
            const __m256 M1 = _mm256_loadu_ps(m + i + 8), V1 = _mm256_loadu_ps(v + i + 8);
            const __m256i pv = _mm256_min_epi32(
                _mm256_min_epi32(QMAG(P0), QKEY(_mm256_castps_si256(V0))),
                _mm256_min_epi32(QMAG(P1), QKEY(_mm256_castps_si256(V1))));
            const __m256i mm = _mm256_min_epi32(QMAG(M0), QMAG(M1)), gg = _mm256_min_epi32(QMAG(G0), QMAG(G1));
            const __m256i maybe = _mm256_or_si256(_mm256_cmpgt_epi32(pvb, pv),
                                                  _mm256_or_si256(_mm256_cmpgt_epi32(mb, mm), _mm256_cmpgt_epi32(gb, gg)));
            if (_mm256_testz_si256(maybe, maybe)) {
                plain_y(po, m, v, i, P0, G0, M0, V0, &k, by_scale, div1, div2);
                plain_y(po, m, v, i + 8, P1, G1, M1, V1, &k, by_scale, div1, div2);
                continue;
            }
            if (exact_y(P0, G0, M0, V0, gdiv, 0)) {
                binary64_y(po, m, v, i, P0, G0, M0, V0, h);
                whole += 8;
            } else {
                plain_y(po, m, v, i, P0, G0, M0, V0, &k, by_scale, div1, div2);
            }
            if (exact_y(P1, G1, M1, V1, gdiv, 0)) {
                binary64_y(po, m, v, i + 8, P1, G1, M1, V1, h);
                whole += 8;
            } else {
                plain_y(po, m, v, i + 8, P1, G1, M1, V1, &k, by_scale, div1, div2);
            }
        }
#undef QKEY
#undef QMAG
    }
    for (; i + 8 <= n; i += 8) {
        const __m256 P = _mm256_loadu_ps(p + i), G = LOAD_G(i);
        const __m256 M = _mm256_loadu_ps(m + i), V = _mm256_loadu_ps(v + i);
        if (mode >= 0 && exact_y(P, G, M, V, gdiv, mode)) {
            binary64_y(po, m, v, i, P, G, M, V, h);
            whole += 8;
        } else {
            plain_y(po, m, v, i, P, G, M, V, &k, by_scale, div1, div2);
        }
    }
#undef LOAD_G
    if (whole)
        atomic_fetch_add_explicit(&binary64_lanes, whole, memory_order_relaxed);
    if (i < n) {
        float g[8];   /* fewer than 8 left */
        const float *gi = grad + i;
        if (pair) {
            for (size_t j = 0; j < n - i; j++)
                g[j] = grad[i + j] + grad2[i + j];
            gi = g;
        }
        adamw_range(po + i, p + i, gi, m + i, v + i, n - i, h->lr, h->b1, h->b2, h->bc1, h->bc2, h->eps,
                    h->decay, h->c, h->div, h->scale);
    }
}

/* adamw_y_body with its three choices as constants for the usual cases (a
 * batch that is a power of two; m̂'s division gone once β1^t rounds 1 − β1^t
 * to 1, after 157 steps at β1 = 0.9; v̂'s, for β2 = 0.999, after 17,000), so
 * the loop tests none of them. */
static __attribute__((target("avx2")))
void adamw_y(float *po, const float *p, const float *restrict grad, const float *restrict grad2, float *restrict m,
             float *restrict v, size_t n, const adamw_hyper *h, int mode)
{
    const int by_scale = h->scale != 0.0f, div1 = h->bc1 != 1.0f, div2 = h->bc2 != 1.0f;
    if (by_scale && !div1 && div2) {
        if (grad2 != NULL)
            adamw_y_body(po, p, grad, grad2, m, v, n, h, mode, 1, 0, 1, 1);
        else
            adamw_y_body(po, p, grad, NULL, m, v, n, h, mode, 1, 0, 1, 0);
    } else if (by_scale && div1 && div2) {
        if (grad2 != NULL)
            adamw_y_body(po, p, grad, grad2, m, v, n, h, mode, 1, 1, 1, 1);
        else
            adamw_y_body(po, p, grad, NULL, m, v, n, h, mode, 1, 1, 1, 0);
    } else {
        adamw_y_body(po, p, grad, grad2, m, v, n, h, mode, by_scale, div1, div2, grad2 != NULL);
    }
}
#endif

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

/* Whether this core takes much longer for a float multiply that reads and
 * makes subnormals than for one on normal numbers: 1 where it does (Intel
 * cores take a microcode assist of about 130 cycles), 0 where not (on AMD's
 * Zen 3 the chain below takes 1.5 times as long, and the binary64 path was
 * 13% of a 1000-step fashion-mnist run, twice the plain update's time).
 * Measured once a process, the best of five rounds of a chain of 1024
 * products each way (about 1 µs): slow above 4 times as long (an assist of
 * 130 cycles on a product of 3 would be 40; a busy host disturbs a round,
 * rarely all five). Which lanes take binary64 is only a matter of speed,
 * never of bits, so neither a wrong answer nor one that differs between
 * runs changes a result. */
static double subnormal_chain(float x)
{
    struct timespec a, b;
    volatile float start = x, half = 0.5f, two = 2.0f;   /* volatile: nothing folded away */
    float y = start;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 512; i++)
        y = (y * half) * two;   /* x subnormal: both products read and make one */
    clock_gettime(CLOCK_MONOTONIC, &b);
    volatile float sink = y;
    (void)sink;
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}

static int subnormals_slow(void)
{
    static _Atomic int known = -1;   /* -1: not measured yet; threads that race both measure */
    int slow = atomic_load_explicit(&known, memory_order_relaxed);
    if (slow >= 0)
        return slow;
    double normal = INFINITY, tiny = INFINITY;
    for (int r = 0; r < 5; r++) {
        const double a = subnormal_chain(1.0f), b = subnormal_chain(0x1p-140f);
        normal = a < normal ? a : normal;
        tiny = b < tiny ? b : tiny;
    }
    slow = tiny > 4.0 * normal;
    atomic_store_explicit(&known, slow, memory_order_relaxed);
    return slow;
}

/* The SIMD paths send the tiny lanes to binary64 (adamw_z, adamw_y); the
 * scalar path runs the plain loop, or, with every lane asked for (tests),
 * adamw_binary64 on each finite one. */
/* grad2 (NULL or, on the AVX2 path only, a second gradient to add:
 * optim_update_sum). */
static void adamw(float *po, const float *p, const float *restrict grad, const float *restrict grad2,
                  float *restrict m, float *restrict v, size_t n, const adamw_hyper *h)
{
    (void)grad2;   /* read on the AVX2 path only */
    int mode = atomic_load_explicit(&exact_lanes, memory_order_relaxed);
    if (mode == EXACT_AUTO)
        mode = subnormals_slow() ? 0 : -1;
#if OPTIM_X86
    const int path = simd_path(&simd_choice);
    if (path == SIMD_PATH_AVX512) {
        for (size_t k = 0; k < n; k += (size_t)1 << 30)   /* the lanes' indices are 32-bit */
            adamw_z(po + k, p + k, grad + k, m + k, v + k, n - k < (size_t)1 << 30 ? n - k : (size_t)1 << 30, h,
                    mode);
        return;
    }
    if (path == SIMD_PATH_AVX2) {
        adamw_y(po, p, grad, grad2, m, v, n, h, mode);
        return;
    }
#endif
    if (mode > 0) {
        for (size_t i = 0; i < n; i++) {
            const int special = !isfinite(p[i]) || !isfinite(grad[i]) || !isfinite(m[i]) || !isfinite(v[i]);
            if (special)
                adamw_range(po + i, p + i, grad + i, m + i, v + i, 1, h->lr, h->b1, h->b2, h->bc1, h->bc2, h->eps,
                            h->decay, h->c, h->div, h->scale);
            else
                adamw_binary64(po + i, p + i, grad + i, m + i, v + i, 1, h);
            atomic_fetch_add_explicit(&binary64_lanes, !special, memory_order_relaxed);
        }
        return;
    }
    adamw_range(po, p, grad, m, v, n, h->lr, h->b1, h->b2, h->bc1, h->bc2, h->eps, h->decay, h->c, h->div, h->scale);
}

int optim_set_simd(int enabled)
{
    return simd_set(&simd_choice, enabled);
}

const char *optim_simd_name(void)
{
    return simd_path_name(simd_path(&simd_choice));
}

size_t optim_binary64_lanes(void)
{
    return atomic_load(&binary64_lanes);
}

int optim_set_exact_lanes(int mode)
{
    return atomic_exchange(&exact_lanes, mode < 0 ? -1 : mode == EXACT_AUTO ? EXACT_AUTO : mode > 0 ? 1 : 0);
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

/* Whether x[0, n) holds a NaN or an infinity (an exponent of all ones):
 * the largest magnitude as bits, an integer max per element and one compare
 * at the end, no branch and no float arithmetic, so it vectorises at any
 * width and reads the piece the update has just written while it is still
 * in this core's L1 (a piece is 16 KiB), leaving the update's loops, and
 * so their bits, as they are. Measured on AVX2: about 0.08 ns an element,
 * 2.5% of AdamW's update of the same piece (an OR of compares took half as
 * long again). */
LS_SIMD_CLONES
static int any_nonfinite(const float *x, size_t n)
{
    uint32_t most = 0;
    _Pragma("omp simd reduction(max:most)")
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        u &= 0x7FFFFFFFu;
        most = u > most ? u : most;
    }
    return most >= 0x7F800000u;
}

/* The kernels over [lo, hi) with weight decay on (decays) or off. */
static void update_range(const optim *o, float *out, const float *in, const float *grad, const float *grad2,
                         float grad_div, size_t lo,
                         size_t hi, int decays)
{
    if (hi <= lo)
        return;
    float c = o->clip > 0.0f ? o->clip : INFINITY;
    const float scale = exact_reciprocal(grad_div);
    if (o->kind == OPT_SGD)
        sgd_range(out + lo, in + lo, grad + lo, o->m + lo, hi - lo, o->lr_now, o->momentum,
                  decays ? o->weight_decay : 0.0f, c, grad_div, scale);
    else
    {
        const adamw_hyper h = { o->lr_now, o->beta1, o->beta2, o->bc1, o->bc2, o->eps, decays ? o->decay : 1.0f,
                                c, grad_div, scale };
        adamw(out + lo, in + lo, grad + lo, grad2 != NULL ? grad2 + lo : NULL, o->m + lo, o->v + lo, hi - lo, &h);
    }
}

/* [lo, hi) split where weight decay turns off and on (decay_groups). */
static void update_groups(const optim *o, float *out, const float *in, const float *grad, const float *grad2,
                          float grad_div, size_t lo,
                          size_t hi)
{
    size_t at = lo;
    for (size_t r = 0; r < o->n_no_decay && at < hi; r++) {
        const optim_range g = o->no_decay[r];
        if (g.hi <= at)
            continue;
        const size_t a = g.lo > at ? (g.lo < hi ? g.lo : hi) : at, b = g.hi < hi ? g.hi : hi;
        update_range(o, out, in, grad, grad2, grad_div, at, a, 1);
        update_range(o, out, in, grad, grad2, grad_div, a, b, 0);
        at = b;
    }
    update_range(o, out, in, grad, grad2, grad_div, at, hi, 1);
}

/* Elements per block of the clipped gradient (on the stack: 4 KiB). */
#define CLIP_BLOCK 1024

int optim_update(const optim *o, float *out, const float *in, const float *grad, float grad_div, size_t lo,
                 size_t hi)
{
    if (hi <= lo)
        return 0;
    if (o->gscale == 1.0f) {
        update_groups(o, out, in, grad, NULL, grad_div, lo, hi);
    } else {
        /* The global-norm clip: g·s, g the gradient element as the update
         * takes it (grad / div) and s the step's factor, one float multiply;
         * the kernels then take that with a divisor of 1 (x / 1 is x). */
        const float scale = exact_reciprocal(grad_div);
        float g[CLIP_BLOCK];
        for (size_t a = lo; a < hi; a += CLIP_BLOCK) {
            const size_t b = hi - a > CLIP_BLOCK ? a + CLIP_BLOCK : hi;
            for (size_t i = a; i < b; i++)
                g[i - a] = (scale != 0.0f ? grad[i] * scale : grad[i] / grad_div) * o->gscale;
            update_groups(o, out, in, g - a, NULL, 1.0f, a, b);
        }
    }
    return any_nonfinite(out + lo, hi - lo);
}

int optim_update_sum(const optim *o, float *out, const float *in, const float *grad, const float *grad2,
                     float grad_div, size_t lo, size_t hi)
{
    if (hi <= lo)
        return 0;
#if OPTIM_X86
    /* AdamW's AVX2 path adds the two as it loads them: the sum is never
     * written (the tree's buffer stays clean) nor read back. */
    if (o->kind == OPT_ADAMW && o->gscale == 1.0f && simd_path(&simd_choice) == SIMD_PATH_AVX2) {
        update_groups(o, out, in, grad, grad2, grad_div, lo, hi);
        return any_nonfinite(out + lo, hi - lo);
    }
#endif
    /* Elsewhere the sum in blocks on the stack, then optim_update. */
    float g[CLIP_BLOCK];
    int bad = 0;
    for (size_t a = lo; a < hi; a += CLIP_BLOCK) {
        const size_t b = hi - a > CLIP_BLOCK ? a + CLIP_BLOCK : hi;
        for (size_t i = a; i < b; i++)
            g[i - a] = grad[i] + grad2[i];
        bad |= optim_update(o, out, in, g - a, grad_div, a, b);
    }
    return bad;
}

size_t optim_first_nonfinite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return i;
    return n;
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
    return optim_get_t(o->head);
}
