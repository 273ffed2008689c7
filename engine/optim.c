/* optim.c — SGD with momentum and AdamW, element-wise. */
#include "optim.h"

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
    unsigned char *state; /* header + m (+ v): one allocation */
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
    o->state = calloc(1, o->state_bytes);
    if (o->state == NULL) {
        size_t bytes = o->state_bytes;
        free(o);
        return ls_fail(err, LS_ENOMEM, "optimiser: cannot allocate %zu bytes of state", bytes);
    }
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
    free(o->state);
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

static float clip_element(float g, float c)
{
    if (c > 0.0f) {
        if (g > c)
            return c;
        if (g < -c)
            return -c;
    }
    return g;
}

void optim_update(const optim *o, float *params, const float *grad, size_t lo, size_t hi)
{
    if (o->kind == OPT_SGD) {
        float *u = o->m;
        for (size_t i = lo; i < hi; i++) {
            float g = clip_element(grad[i], o->clip) + o->weight_decay * params[i];
            u[i] = o->momentum * u[i] + g;
            params[i] = params[i] - o->lr * u[i];
        }
        return;
    }
    const float one_b1 = 1.0f - o->beta1, one_b2 = 1.0f - o->beta2;
    float *m = o->m, *v = o->v;
    for (size_t i = lo; i < hi; i++) {
        float g = clip_element(grad[i], o->clip);
        m[i] = o->beta1 * m[i] + one_b1 * g;
        v[i] = o->beta2 * v[i] + one_b2 * (g * g);
        float mhat = m[i] / o->bc1;
        float vhat = v[i] / o->bc2;
        float p = params[i] * o->decay;
        params[i] = p - o->lr * (mhat / (sqrtf(vhat) + o->eps));
    }
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
