/* seq.c — a declared network (seq.h): the text parsed into engine/nn/
 * layers, shapes chained once at create, memory planned once, the forward
 * pass each layer's forward in order and the backward each layer's
 * backward in reverse. */
#include "engine/models/seq/seq.h"

#include <math.h>    /* sqrtf only (correctly rounded, IEEE 754) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/nn/nn_act.h"
#include "engine/nn/nn_conv.h"
#include "engine/nn/nn_dense.h"
#include "engine/nn/nn_loss.h"
#include "engine/nn/nn_norm.h"
#include "engine/num/rng.h"

#define SEQ_MAX_TENSORS (SEQ_MAX_LAYERS * 2)
#define SEQ_MAX_VALUE 65536
#define SEQ_LN_EPS 1e-5

struct seq {
    size_t n_layers;                   /* the declared layers and the loss last */
    nn_layer layer[SEQ_MAX_LAYERS + 1];
    size_t pos[SEQ_MAX_LAYERS + 1];    /* token position (from 1) of each layer, for names */
    size_t p_off[SEQ_MAX_LAYERS + 1];  /* layer i's parameter block in θ */
    size_t max_n;
    size_t inputs, classes;
    size_t n_params;
    /* Scratch plan: byte offsets (multiples of 64) for max_n samples. */
    size_t out_off[SEQ_MAX_LAYERS + 1];   /* [max_n][out_size] each layer's output */
    size_t act_off[SEQ_MAX_LAYERS + 1];   /* [max_n][act_floats] what forward keeps */
    size_t grad_off[2];                   /* [max_n][largest in/out size] ping-pong gradients */
    size_t lay_off;                       /* the largest nn_scratch_bytes(layer, max_n) */
    size_t scratch_bytes;
    double flops;
    size_t n_tensors;
    size_t t_layer[SEQ_MAX_TENSORS], t_index[SEQ_MAX_TENSORS];
    char t_name[SEQ_MAX_TENSORS][32];
};

/* A decimal 1 .. SEQ_MAX_VALUE without sign or leading zero at s[0..len). */
static int read_value(const char *s, size_t len, size_t *out)
{
    if (len == 0 || len > 5 || s[0] == '0')
        return 0;
    size_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (size_t)(s[i] - '0');
    }
    if (v > SEQ_MAX_VALUE)
        return 0;
    *out = v;
    return 1;
}

static int starts(const char *tok, size_t len, const char *word)
{
    const size_t w = strlen(word);
    return len >= w && memcmp(tok, word, w) == 0;
}

static int is(const char *tok, size_t len, const char *word)
{
    return len == strlen(word) && memcmp(tok, word, len) == 0;
}

/* One token into l; 0 when it is not one of the grammar's. */
static int parse_token(const char *t, size_t len, nn_layer *l)
{
    memset(l, 0, sizeof *l);
    if (is(t, len, "relu")) {
        l->kind = NN_RELU;
        return 1;
    }
    if (is(t, len, "gelu")) {
        l->kind = NN_GELU;
        return 1;
    }
    if (is(t, len, "layernorm")) {
        l->kind = NN_LAYERNORM;
        l->eps = SEQ_LN_EPS;
        return 1;
    }
    if (starts(t, len, "dense:")) {
        l->kind = NN_DENSE;
        l->bias = 1;
        return read_value(t + 6, len - 6, &l->units);
    }
    if (starts(t, len, "maxpool") || starts(t, len, "avgpool")) {
        l->kind = t[0] == 'm' ? NN_MAXPOOL : NN_AVGPOOL;
        return read_value(t + 7, len - 7, &l->k);
    }
    if (starts(t, len, "conv")) {
        /* conv<K>x<K>:<N> */
        const char *x = memchr(t, 'x', len), *colon = memchr(t, ':', len);
        if (x == NULL || colon == NULL || colon < x)
            return 0;
        size_t k1, k2;
        if (!read_value(t + 4, (size_t)(x - t) - 4, &k1) || !read_value(x + 1, (size_t)(colon - x) - 1, &k2) ||
            k1 != k2 || k1 % 2 == 0 || !read_value(colon + 1, len - (size_t)(colon - t) - 1, &l->units))
            return 0;
        l->kind = NN_CONV2D;
        l->k = k1;
        l->same = 1;
        l->bias = 1;
        return 1;
    }
    return 0;
}

ls_status seq_parse(const char *text, seq_decl *d, ls_err *err)
{
    d->n = 0;
    if (text == NULL || *text == '\0')
        return ls_fail(err, LS_EINVAL, "layers: empty; declare at least one layer, e.g. dense:10");
    const char *p = text;
    for (size_t pos = 1;; pos++) {
        const size_t len = strcspn(p, ",");
        if (d->n == SEQ_MAX_LAYERS)
            return ls_fail(err, LS_EINVAL, "layers: token %zu: more than %d layers", pos, SEQ_MAX_LAYERS);
        if (!parse_token(p, len, &d->layer[d->n]))
            return ls_fail(err, LS_EINVAL,
                           "layers: token %zu '%.*s' is not a layer (dense:N, convKxK:N with K odd, maxpoolK, "
                           "avgpoolK, relu, gelu, layernorm; N, K in 1..%d)",
                           pos, (int)(len > 40 ? 40 : len), p, SEQ_MAX_VALUE);
        d->n++;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    return LS_OK;
}

static size_t round64(size_t n)
{
    return (n + 63) / 64 * 64;
}

/* Bytes of n_samples x floats, rounded to 64; 0 on overflow. */
static int floats_bytes(size_t n_samples, size_t floats, size_t *out)
{
    size_t b;
    if (!nn_mul(n_samples, floats, &b) || !nn_mul(b, sizeof(float), &b))
        return 0;
    *out = round64(b);
    return 1;
}

static const char *kind_name(nn_kind k)
{
    switch (k) {
    case NN_DENSE: return "dense";
    case NN_CONV2D: return "conv";
    case NN_MAXPOOL: return "maxpool";
    case NN_AVGPOOL: return "avgpool";
    case NN_LAYERNORM: return "layernorm";
    case NN_GELU: return "gelu";
    case NN_RELU: return "relu";
    default: return "layer";
    }
}

ls_status seq_create(seq **out, const seq_decl *d, const size_t in[3], size_t classes, size_t max_n, ls_err *err)
{
    *out = NULL;
    if (d->n == 0 || d->n > SEQ_MAX_LAYERS)
        return ls_fail(err, LS_EINVAL, "layers: %zu layers declared, need 1 .. %d", d->n, SEQ_MAX_LAYERS);
    if (max_n == 0)
        return ls_fail(err, LS_EINVAL, "seq: calls of 0 samples");
    seq *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ls_fail(err, LS_ENOMEM, "seq: out of memory");
    s->max_n = max_n;
    s->classes = classes;
    size_t shape[3] = { in[0], in[1], in[2] };
    s->inputs = in[0] * in[1] * in[2];
    size_t np = 0, nt = 0, widest = s->inputs, lay = 0;
    double flops = 0;
    for (size_t i = 0; i <= d->n; i++) {
        nn_layer *l = &s->layer[i];
        if (i < d->n) {
            *l = d->layer[i];
        } else {
            memset(l, 0, sizeof *l);
            l->kind = NN_XENT;
        }
        s->pos[i] = i + 1;
        /* A dense layer or the loss reads an image flat: the same floats. */
        if (l->kind == NN_DENSE || l->kind == NN_XENT) {
            shape[2] = shape[0] * shape[1] * shape[2];
            shape[0] = shape[1] = 1;
        }
        memcpy(l->in, shape, sizeof shape);
        ls_err e = { "" };
        if (nn_describe(l, &e) != LS_OK) {
            const ls_status st = i == d->n ? ls_fail(err, LS_EINVAL, "layers: the loss: %s", e.msg)
                                           : ls_fail(err, LS_EINVAL, "layers: token %zu (%s): %s", i + 1,
                                                     kind_name(l->kind), e.msg);
            free(s);
            return st;
        }
        if (i == d->n && l->in[2] != classes) {
            const ls_status st = ls_fail(err, LS_EINVAL,
                                         "layers: the last layer gives %zu outputs, the task has %zu classes",
                                         l->in[2], classes);
            free(s);
            return st;
        }
        if (l->n_tensors > 0 && nt + l->n_tensors > SEQ_MAX_TENSORS) {
            const ls_status st = ls_fail(err, LS_EINVAL, "layers: too many tensors");
            free(s);
            return st;
        }
        s->p_off[i] = np;
        for (size_t t = 0; t < l->n_tensors; t++, nt++) {
            s->t_layer[nt] = i;
            s->t_index[nt] = t;
            snprintf(s->t_name[nt], sizeof s->t_name[nt], "%zu.%s", i + 1, l->tensor[t].name);
        }
        size_t b_out, b_act;
        if (!nn_add(np, l->n_params, &np) || !floats_bytes(max_n, l->out_size, &b_out) ||
            !floats_bytes(max_n, l->act_floats, &b_act)) {
            const ls_status st =
                ls_fail(err, LS_EINVAL, "layers: token %zu (%s) is too large", i + 1, kind_name(l->kind));
            free(s);
            return st;
        }
        s->out_off[i] = lay;
        s->act_off[i] = lay + b_out;
        if (!nn_add(lay, b_out + b_act, &lay)) {
            const ls_status st = ls_fail(err, LS_EINVAL, "layers: the network is too large");
            free(s);
            return st;
        }
        if (l->out_size > widest && l->kind != NN_XENT)
            widest = l->out_size;
        /* Multiply-adds of forward, weight gradient and input gradient. */
        if (l->kind == NN_DENSE || l->kind == NN_CONV2D) {
            const double mm = (double)l->tensor[0].count * (double)(l->out_size / l->units);
            flops += 2 * mm + 2 * mm + (i > 0 ? 2 * mm : 0);
        }
        if (l->kind != NN_XENT)
            memcpy(shape, l->out, sizeof shape);
    }
    s->n_layers = d->n + 1;
    s->n_params = np;
    s->n_tensors = nt;
    s->flops = flops;
    size_t g;
    if (!floats_bytes(max_n, widest, &g)) {
        const ls_status st = ls_fail(err, LS_EINVAL, "layers: the network is too large");
        free(s);
        return st;
    }
    s->grad_off[0] = lay;
    s->grad_off[1] = lay + g;
    s->lay_off = lay + 2 * g;
    size_t most = 0;
    for (size_t i = 0; i < s->n_layers; i++) {
        const size_t b = round64(nn_scratch_bytes(&s->layer[i], max_n));
        if (b > most)
            most = b;
    }
    s->scratch_bytes = s->lay_off + most;
    if (np == 0) {
        free(s);
        return ls_fail(err, LS_EINVAL, "layers: the network has no parameters; declare a dense or conv layer");
    }
    *out = s;
    return LS_OK;
}

void seq_destroy(seq *s)
{
    free(s);
}

size_t seq_n_params(const seq *s)
{
    return s->n_params;
}

size_t seq_scratch_bytes(const seq *s)
{
    return s->scratch_bytes;
}

double seq_flops_per_sample(const seq *s)
{
    return s->flops;
}

size_t seq_n_tensors(const seq *s)
{
    return s->n_tensors;
}

void seq_tensor(const seq *s, size_t t, const char **name, size_t *offset, size_t *ndim, size_t shape[2],
                int *no_decay)
{
    const nn_layer *l = &s->layer[s->t_layer[t]];
    const nn_tensor *x = &l->tensor[s->t_index[t]];
    *name = s->t_name[t];
    *offset = s->p_off[s->t_layer[t]] + x->off;
    *ndim = x->ndim;
    shape[0] = x->shape[0];
    shape[1] = x->ndim > 1 ? x->shape[1] : 0;
    /* Only the matrices of dense and conv decay. */
    *no_decay = strcmp(x->name, "w") != 0;
}

void seq_init(const seq *s, float *params, uint64_t seed)
{
    for (size_t t = 0; t < s->n_tensors; t++) {
        const nn_layer *l = &s->layer[s->t_layer[t]];
        const nn_tensor *x = &l->tensor[s->t_index[t]];
        float *p = params + s->p_off[s->t_layer[t]] + x->off;
        if (strcmp(x->name, "w") == 0) {
            const float bound = 1.0f / sqrtf((float)x->shape[0]);
            for (size_t e = 0; e < x->count; e++) {
                const float u = rng_uniformf(seed, RNG_INIT, t, e, 0);
                p[e] = (2.0f * u - 1.0f) * bound;
            }
        } else {
            const float v = strcmp(x->name, "gain") == 0 ? 1.0f : 0.0f;
            for (size_t e = 0; e < x->count; e++)
                p[e] = v;
        }
    }
}

static float *at(void *scratch, size_t off)
{
    return (float *)(void *)((char *)scratch + off);
}

/* The layers' forward passes in order; the logits end in the last
 * declared layer's output. */
static void forward(const seq *s, const float *params, const float *x, size_t n, void *scratch)
{
    void *ls = (char *)scratch + s->lay_off;
    for (size_t i = 0; i + 1 < s->n_layers; i++) {
        const nn_layer *l = &s->layer[i];
        const float *w = params + s->p_off[i];
        float *y = at(scratch, s->out_off[i]), *act = at(scratch, s->act_off[i]);
        switch (l->kind) {
        case NN_DENSE: nn_dense_forward(l, y, act, x, w, n, ls); break;
        case NN_CONV2D: nn_conv_forward(l, y, act, x, w, n, ls); break;
        case NN_MAXPOOL:
        case NN_AVGPOOL: nn_conv_pool_forward(l, y, act, x, w, n, ls); break;
        case NN_LAYERNORM: nn_norm_forward(l, y, act, x, w, n, ls); break;
        case NN_RELU: nn_act_relu_forward(l, y, x, n); break;
        case NN_GELU: nn_act_gelu_forward(l, y, x, n); break;
        default: break;   /* seq_parse makes no other kind */
        }
        x = y;
    }
}

double seq_leaf(const seq *s, const float *params, const float *x, const int32_t *labels, size_t n, float *grad,
                void *scratch)
{
    forward(s, params, x, n, scratch);
    void *ls = (char *)scratch + s->lay_off;
    const size_t L = s->n_layers - 1;   /* the loss's index */
    const float *z = at(scratch, s->out_off[L - 1]);
    const double loss = nn_loss_xent_forward(&s->layer[L], z, labels, n, ls);
    float *dy = at(scratch, s->grad_off[0]);
    nn_loss_xent_backward(&s->layer[L], dy, z, labels, n, ls);
    int cur = 0;
    /* Backward: each layer's backward in reverse; dx of layer i is dy of
     * layer i-1, none for the first layer. */
    for (size_t i = L; i-- > 0;) {
        const nn_layer *l = &s->layer[i];
        const float *w = params + s->p_off[i];
        float *dw = grad + s->p_off[i];
        const float *xi = i == 0 ? x : at(scratch, s->out_off[i - 1]);
        const float *y = at(scratch, s->out_off[i]), *act = at(scratch, s->act_off[i]);
        float *dx = i == 0 ? NULL : at(scratch, s->grad_off[1 - cur]);
        switch (l->kind) {
        case NN_DENSE: nn_dense_backward(l, dx, dw, dy, act, xi, y, w, n, ls); break;
        case NN_CONV2D: nn_conv_backward(l, dx, dw, dy, act, xi, y, w, n, ls); break;
        case NN_MAXPOOL:
        case NN_AVGPOOL:
            if (dx != NULL)
                nn_conv_pool_backward(l, dx, dw, dy, act, xi, y, w, n, ls);
            break;
        case NN_LAYERNORM: nn_norm_backward(l, dx, dw, dy, act, xi, y, w, n, ls); break;
        case NN_RELU:
            if (dx != NULL)
                nn_act_relu_backward(l, dx, dy, xi, n);
            break;
        case NN_GELU:
            if (dx != NULL)
                nn_act_gelu_backward(l, dx, dy, xi, n);
            break;
        default: break;
        }
        if (dx == NULL)
            break;
        dy = dx;
        cur = 1 - cur;
    }
    return loss;
}

void seq_logits(const seq *s, const float *params, const float *x, size_t n, float *logits, void *scratch)
{
    forward(s, params, x, n, scratch);
    memcpy(logits, at(scratch, s->out_off[s->n_layers - 2]), n * s->classes * sizeof(float));
}
