/* seq.c — a declared network (seq.h): the text parsed into engine/nn/
 * layers, shapes chained once at create, memory planned once, the forward
 * pass each layer's forward in order and the backward each layer's
 * backward in reverse. */
#include "engine/models/seq/seq.h"

#include <math.h>    /* sqrtf, lrintf (correctly rounded / exact, IEEE 754) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/nn/nn_act.h"
#include "engine/nn/nn_attn.h"
#include "engine/nn/nn_conv.h"
#include "engine/nn/nn_dense.h"
#include "engine/nn/nn_embed.h"
#include "engine/nn/nn_loss.h"
#include "engine/nn/nn_norm.h"
#include "engine/num/rng.h"

#define SEQ_MAX_TENSORS (SEQ_MAX_LAYERS * 2)

#define SEQ_MAX_VALUE 65536
#define SEQ_LN_EPS 1e-5
#define SEQ_P_DIGITS 6   /* dropout:P: at most this many decimals after "0." */

struct seq {
    size_t n_layers;                   /* the declared layers and the loss last */
    nn_layer layer[SEQ_MAX_LAYERS + 1];
    size_t pos[SEQ_MAX_LAYERS + 1];    /* token position (from 1) of each layer, for names */
    size_t p_off[SEQ_MAX_LAYERS + 1];  /* layer i's parameter block in θ */
    size_t skip[SEQ_MAX_LAYERS + 1];   /* a residual's add: the first layer of its branch */
    size_t max_n;
    size_t inputs, classes;
    int tokens;                        /* 1: the first layer is embed (a token network) */
    size_t rows;                       /* the loss's rows per sample (positions of a token network) */
    size_t n_params;
    /* Scratch plan: byte offsets (multiples of 64) for max_n samples. */
    size_t out_off[SEQ_MAX_LAYERS + 1];   /* [max_n][out_size] each layer's output */
    size_t act_off[SEQ_MAX_LAYERS + 1];   /* [max_n][act_floats] what forward keeps */
    size_t grad_off[4];                   /* [max_n][largest in/out size]: ping-pong, join, skip */
    size_t ids_off, lab_off, lab_bytes;   /* token networks: [max_n][T] int32 ids and labels */
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

/* A dropout probability at s[0..len): "0." then 1 .. SEQ_P_DIGITS decimal
 * digits, not all zero (0 < P < 1 as written). Its binary32 value is
 * strtof's of those characters, the config's own float parsing
 * (engine/core/config.c; glibc's strtof rounds correctly). */
static int read_prob(const char *s, size_t len, float *out)
{
    if (len < 3 || len > 2 + SEQ_P_DIGITS || s[0] != '0' || s[1] != '.')
        return 0;
    int nonzero = 0;
    for (size_t i = 2; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        nonzero |= s[i] != '0';
    }
    if (!nonzero)
        return 0;
    char buf[2 + SEQ_P_DIGITS + 1];
    memcpy(buf, s, len);
    buf[len] = '\0';
    /* All of it read (a host's LC_NUMERIC with a decimal comma would stop
     * strtof at the point: refused, never a silent 0). */
    char *end;
    *out = strtof(buf, &end);
    return end == buf + len && *out > 0.0f && *out < 1.0f;
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
    if (is(t, len, "posembed")) {
        l->kind = NN_POSEMBED;
        return 1;
    }
    if (starts(t, len, "dropout:")) {
        l->kind = NN_DROPOUT;
        return read_prob(t + 8, len - 8, &l->p);
    }
    if (starts(t, len, "embed:")) {
        l->kind = NN_EMBED;
        return read_value(t + 6, len - 6, &l->units);
    }
    if (starts(t, len, "attn:")) {
        l->kind = NN_ATTN;
        return read_value(t + 5, len - 5, &l->heads);
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

/* The parser's state: the text, the next token's position (from 1) and
 * whether it is inside a residual branch. */
typedef struct {
    const char *p;
    size_t pos;
    int in_res;
    seq_decl *d;
    ls_err *err;
} seq_parser;

static ls_status parse_list(seq_parser *ps, char close);

static ls_status add_layer(seq_parser *ps, const nn_layer *l, size_t skip)
{
    seq_decl *d = ps->d;
    if (d->n == SEQ_MAX_LAYERS)
        return ls_fail(ps->err, LS_EINVAL, "layers: token %zu: more than %d layers", ps->pos, SEQ_MAX_LAYERS);
    d->layer[d->n] = *l;
    d->skip[d->n] = skip;
    d->pos[d->n] = ps->pos;
    d->n++;
    return LS_OK;
}

static size_t digits(const char *p)
{
    size_t k = 0;
    while (p[k] >= '0' && p[k] <= '9')
        k++;
    return k;
}

/* One item: a token, res(list) or Nx[list]. */
static ls_status parse_item(seq_parser *ps)
{
    seq_decl *d = ps->d;
    const size_t nd = digits(ps->p);
    if (strncmp(ps->p, "res(", 4) == 0) {
        if (ps->in_res)
            return ls_fail(ps->err, LS_EINVAL, "layers: token %zu 'res(': a residual inside a residual branch "
                           "(branches do not nest)", ps->pos + 1);
        const size_t first = d->n;
        ps->p += 4;
        ps->in_res = 1;
        ls_status st = parse_list(ps, ')');
        ps->in_res = 0;
        if (st != LS_OK)
            return st;
        nn_layer add;
        memset(&add, 0, sizeof add);
        add.kind = NN_ADD;
        return add_layer(ps, &add, first);
    }
    if (nd > 0 && ps->p[nd] == 'x' && ps->p[nd + 1] == '[') {
        size_t times;
        if (!read_value(ps->p, nd, &times) || times > SEQ_MAX_LAYERS)
            return ls_fail(ps->err, LS_EINVAL, "layers: token %zu '%.*s': repeat count %.*s is not 1 .. %d",
                           ps->pos + 1, (int)(nd + 2), ps->p, (int)nd, ps->p, SEQ_MAX_LAYERS);
        const size_t first = d->n;
        ps->p += nd + 2;
        ls_status st = parse_list(ps, ']');
        if (st != LS_OK)
            return st;
        const size_t len = d->n - first;
        for (size_t r = 1; r < times; r++)
            for (size_t i = 0; i < len; i++) {
                const size_t from = first + i;
                st = add_layer(ps, &d->layer[from], d->skip[from] + r * len);
                if (st != LS_OK)
                    return st;
                d->pos[d->n - 1] = d->pos[from];
            }
        return LS_OK;
    }
    const size_t len = strcspn(ps->p, ",)]");
    ps->pos++;
    nn_layer l;
    if (!parse_token(ps->p, len, &l))
        return ls_fail(ps->err, LS_EINVAL,
                       "layers: token %zu '%.*s' is not a layer (dense:N, convKxK:N with K odd, maxpoolK, "
                       "avgpoolK, relu, gelu, layernorm, dropout:P, embed:N, posembed, attn:N, res(...), "
                       "Nx[...]; N, K in 1..%d; P: 0. then 1..%d digits, 0 < P < 1)",
                       ps->pos, (int)(len > 40 ? 40 : len), ps->p, SEQ_MAX_VALUE, SEQ_P_DIGITS);
    ps->p += len;
    return add_layer(ps, &l, 0);
}

/* Items separated by commas up to `close` (')' or ']', or '\0' for the
 * whole text), which it consumes. */
static ls_status parse_list(seq_parser *ps, char close)
{
    for (;;) {
        ls_status st = parse_item(ps);
        if (st != LS_OK)
            return st;
        const char c = *ps->p;
        if (c == ',') {
            ps->p++;
            continue;
        }
        if (c == close) {
            if (c != '\0')
                ps->p++;
            return LS_OK;
        }
        if (c == '\0')
            return ls_fail(ps->err, LS_EINVAL, "layers: token %zu: '%c' missing at the end of the text", ps->pos,
                           close == ')' ? ')' : ']');
        if (close != '\0')   /* the other bracket than the one open */
            return ls_fail(ps->err, LS_EINVAL, "layers: token %zu: '%c' where '%c' closes the open '%s'", ps->pos, c,
                           close, close == ')' ? "res(" : "x[");
        return ls_fail(ps->err, LS_EINVAL, "layers: token %zu: '%c' closes nothing open", ps->pos, c);
    }
}

ls_status seq_parse(const char *text, seq_decl *d, ls_err *err)
{
    d->n = 0;
    if (text == NULL || *text == '\0')
        return ls_fail(err, LS_EINVAL, "layers: empty; declare at least one layer, e.g. dense:10");
    /* One line of printable ASCII: a newline or a control character would
     * also break the one-line error that names a token. */
    for (size_t i = 0; text[i] != '\0'; i++)
        if ((unsigned char)text[i] < 0x21 || (unsigned char)text[i] > 0x7e)
            return ls_fail(err, LS_EINVAL, "layers: character %zu is byte 0x%02x; a declaration is one line of "
                           "printable characters without spaces", i + 1, (unsigned)(unsigned char)text[i]);
    seq_parser ps = { text, 0, 0, d, err };
    return parse_list(&ps, '\0');
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
    case NN_EMBED: return "embed";
    case NN_POSEMBED: return "posembed";
    case NN_ATTN: return "attn";
    case NN_ADD: return "res";
    case NN_DROPOUT: return "dropout";
    default: return "layer";
    }
}

static ls_status create_fail(seq *s, ls_status st)
{
    free(s);
    return st;
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
    s->inputs = in[0] * in[1] * in[2];
    s->tokens = d->layer[0].kind == NN_EMBED;
    size_t shape[3] = { in[0], in[1], in[2] };
    if (s->tokens) {
        /* The features are the sequence's token ids, one per position. */
        shape[0] = s->inputs;
        shape[1] = shape[2] = 1;
    }
    size_t np = 0, nt = 0, widest = s->inputs, lay = 0;
    double flops = 0;
    for (size_t i = 0; i <= d->n; i++) {
        nn_layer *l = &s->layer[i];
        if (i < d->n) {
            *l = d->layer[i];
            s->skip[i] = d->skip[i];
            s->pos[i] = d->pos[i];
        } else {
            memset(l, 0, sizeof *l);
            l->kind = NN_XENT;
        }
        if (l->kind == NN_EMBED) {
            if (i > 0)
                return create_fail(s, ls_fail(err, LS_EINVAL, "layers: token %zu (embed): only the first layer "
                                              "reads token ids", s->pos[i]));
            l->vocab = classes;
        }
        /* A dense layer or the loss reads an image flat (the same floats);
         * in a token network they act on each position. */
        if (!s->tokens && (l->kind == NN_DENSE || l->kind == NN_XENT)) {
            shape[2] = shape[0] * shape[1] * shape[2];
            shape[0] = shape[1] = 1;
        }
        memcpy(l->in, shape, sizeof shape);
        ls_err e = { "" };
        if (nn_describe(l, &e) != LS_OK)
            return create_fail(s, i == d->n ? ls_fail(err, LS_EINVAL, "layers: the loss: %s", e.msg)
                                            : ls_fail(err, LS_EINVAL, "layers: token %zu (%s): %s", s->pos[i],
                                                      kind_name(l->kind), e.msg));
        if (l->kind == NN_ADD) {
            const nn_layer *f = &s->layer[s->skip[i]];
            if (memcmp(f->in, l->in, sizeof l->in) != 0)
                return create_fail(s, ls_fail(err, LS_EINVAL,
                                              "layers: token %zu (res): the branch maps %zu x %zu x %zu to "
                                              "%zu x %zu x %zu; a residual needs the same shape out as in",
                                              s->pos[s->skip[i]], f->in[0], f->in[1], f->in[2], l->in[0],
                                              l->in[1], l->in[2]));
        }
        if (i == d->n && l->in[2] != classes)
            return create_fail(s, ls_fail(err, LS_EINVAL,
                                          "layers: the last layer gives %zu output%s, the task has %zu classes",
                                          l->in[2], l->in[2] == 1 ? "" : "s", classes));
        if (l->n_tensors > 0 && nt + l->n_tensors > SEQ_MAX_TENSORS)
            return create_fail(s, ls_fail(err, LS_EINVAL, "layers: too many tensors"));
        s->p_off[i] = np;
        for (size_t t = 0; t < l->n_tensors; t++, nt++) {
            s->t_layer[nt] = i;
            s->t_index[nt] = t;
            snprintf(s->t_name[nt], sizeof s->t_name[nt], "%zu.%s", i + 1, l->tensor[t].name);
        }
        size_t b_out, b_act;
        if (!nn_add(np, l->n_params, &np) || !floats_bytes(max_n, l->out_size, &b_out) ||
            !floats_bytes(max_n, l->act_floats, &b_act))
            return create_fail(s, ls_fail(err, LS_EINVAL, "layers: token %zu (%s) is too large", s->pos[i],
                                          kind_name(l->kind)));
        s->out_off[i] = lay;
        s->act_off[i] = lay + b_out;
        if (!nn_add(lay, b_out + b_act, &lay))
            return create_fail(s, ls_fail(err, LS_EINVAL, "layers: the network is too large"));
        if (l->out_size > widest && l->kind != NN_XENT)
            widest = l->out_size;
        /* Multiply-adds of forward, weight gradient and input gradient. */
        if (l->kind == NN_DENSE || l->kind == NN_CONV2D) {
            const double mm = (double)l->tensor[0].count * (double)(l->out_size / l->units);
            flops += 2 * mm + 2 * mm + (i > 0 ? 2 * mm : 0);
        }
        if (l->kind == NN_ATTN) {
            /* The projections, then scores and weighted sums over the causal half. */
            const double T = (double)l->in[0], C = (double)l->in[2];
            const double mm = T * 4 * C * C + T * (T + 1) * C;
            flops += 6 * mm;
        }
        if (l->kind != NN_XENT)
            memcpy(shape, l->out, sizeof shape);
    }
    s->n_layers = d->n + 1;
    s->n_params = np;
    s->n_tensors = nt;
    s->flops = flops;
    s->rows = s->layer[d->n].in[0];
    size_t g, ids;
    if (!floats_bytes(max_n, widest, &g) || !floats_bytes(max_n, s->inputs, &ids) ||
        !floats_bytes(max_n, s->rows, &s->lab_bytes))
        return create_fail(s, ls_fail(err, LS_EINVAL, "layers: the network is too large"));
    /* Three gradient buffers (two ping-pong, one for a layer whose input a
     * residual's skip also reads), the skip's gradient, the token ids and
     * the per-position labels (int32, the size of floats). */
    for (int k = 0; k < 4; k++)
        s->grad_off[k] = lay + (size_t)k * g;
    s->ids_off = lay + 4 * g;
    s->lab_off = s->ids_off + ids;
    s->lay_off = s->lab_off + s->lab_bytes;
    size_t most = 0;
    for (size_t i = 0; i < s->n_layers; i++) {
        const size_t b = round64(nn_scratch_bytes(&s->layer[i], max_n));
        if (b > most)
            most = b;
    }
    s->scratch_bytes = s->lay_off + most;
    if (np == 0)
        return create_fail(s, ls_fail(err, LS_EINVAL,
                                      "layers: the network has no parameters; declare a dense or conv layer"));
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

int seq_tokens(const seq *s)
{
    return s->tokens;
}

size_t seq_n_layers(const seq *s)
{
    return s->n_layers;
}

const nn_layer *seq_layer(const seq *s, size_t i)
{
    return &s->layer[i];
}

size_t seq_n_tensors(const seq *s)
{
    return s->n_tensors;
}

/* The matrices that multiply (dense, conv, attention): the tensors that decay. */
static int is_matrix(const char *name)
{
    return strcmp(name, "w") == 0 || strcmp(name, "wqkv") == 0 || strcmp(name, "wo") == 0;
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
    *no_decay = !is_matrix(x->name);
}

void seq_init(const seq *s, float *params, uint64_t seed)
{
    for (size_t t = 0; t < s->n_tensors; t++) {
        const nn_layer *l = &s->layer[s->t_layer[t]];
        const nn_tensor *x = &l->tensor[s->t_index[t]];
        float *p = params + s->p_off[s->t_layer[t]] + x->off;
        if (x->ndim == 2) {
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

int32_t seq_token_id(float f)
{
    /* The text task's byte v arrives as v/255.0f, and lrintf(f·255) gives v
     * back; anything else is no token (-1: the embedding's NaN row). */
    if (!(f >= 0.0f && f <= 1.0f))
        return -1;
    return (int32_t)lrintf(f * 255.0f);
}

/* The token ids of n samples into the scratch (token networks). */
static const int32_t *token_ids(const seq *s, const float *x, size_t n, void *scratch)
{
    int32_t *ids = (int32_t *)(void *)((char *)scratch + s->ids_off);
    for (size_t i = 0; i < n * s->inputs; i++)
        ids[i] = seq_token_id(x[i]);
    return ids;
}

/* Input of layer i: the previous layer's output, x for the first. */
static const float *layer_in(const seq *s, size_t i, const float *x, void *scratch)
{
    return i == 0 ? x : at(scratch, s->out_off[i - 1]);
}

/* Where a training call's dropout masks are drawn (seq_leaf): the run's
 * seed, the step and the stream position of the call's first sample. */
typedef struct {
    uint64_t seed, step, sample0;
} seq_addr;

/* The layers' forward passes in order; the logits end in the last
 * declared layer's output. addr NULL: evaluation (dropout passes its
 * input through). */
static void forward(const seq *s, const float *params, const float *x, size_t n, const seq_addr *addr,
                    void *scratch)
{
    void *ls = (char *)scratch + s->lay_off;
    const int32_t *ids = s->tokens ? token_ids(s, x, n, scratch) : NULL;
    for (size_t i = 0; i + 1 < s->n_layers; i++) {
        const nn_layer *l = &s->layer[i];
        const float *w = params + s->p_off[i];
        const float *xi = layer_in(s, i, x, scratch);
        float *y = at(scratch, s->out_off[i]), *act = at(scratch, s->act_off[i]);
        switch (l->kind) {
        case NN_DENSE: nn_dense_forward(l, y, act, xi, w, n, ls); break;
        case NN_CONV2D: nn_conv_forward(l, y, act, xi, w, n, ls); break;
        case NN_MAXPOOL:
        case NN_AVGPOOL: nn_conv_pool_forward(l, y, act, xi, w, n, ls); break;
        case NN_LAYERNORM: nn_norm_forward(l, y, act, xi, w, n, ls); break;
        case NN_RELU: nn_act_relu_forward(l, y, xi, n); break;
        case NN_GELU: nn_act_gelu_forward(l, y, act, xi, n); break;
        case NN_EMBED: nn_embed_forward(l, y, ids, w, n); break;
        case NN_POSEMBED: nn_embed_pos_forward(l, y, xi, w, n); break;
        case NN_ATTN: nn_attn_forward(l, y, act, xi, w, n, ls); break;
        case NN_DROPOUT:
            if (addr != NULL)
                nn_act_dropout_forward(l, y, xi, n, addr->seed, addr->step, addr->sample0);
            else
                memcpy(y, xi, n * l->in_size * sizeof(float));
            break;
        case NN_ADD:
            /* y = skip + branch: the branch's input, then its output. */
            nn_act_add_forward(l, y, layer_in(s, s->skip[i], x, scratch), xi, n);
            break;
        default: break;   /* seq_parse makes no other kind */
        }
    }
}

/* The per-position labels of a token network: position t < T-1 predicts
 * the sample's token t+1, position T-1 its label. */
static const int32_t *row_labels(const seq *s, const int32_t *labels, size_t n, void *scratch)
{
    if (!s->tokens)
        return labels;
    const size_t T = s->rows;
    const int32_t *ids = (const int32_t *)(const void *)((const char *)scratch + s->ids_off);
    int32_t *lab = (int32_t *)(void *)((char *)scratch + s->lab_off);
    for (size_t b = 0; b < n; b++) {
        memcpy(lab + b * T, ids + b * T + 1, (T - 1) * sizeof(int32_t));
        lab[b * T + T - 1] = labels[b];
    }
    return lab;
}

double seq_loss(const seq *s, const float *params, const float *x, const int32_t *labels, size_t n, void *scratch)
{
    forward(s, params, x, n, NULL, scratch);
    void *ls = (char *)scratch + s->lay_off;
    const size_t L = s->n_layers - 1;
    const double sum = nn_loss_xent_forward(&s->layer[L], at(scratch, s->out_off[L - 1]),
                                            row_labels(s, labels, n, scratch), n, ls);
    return s->tokens ? sum / (double)s->rows : sum;
}

double seq_leaf(const seq *s, const float *params, const float *x, const int32_t *labels, size_t n, uint64_t seed,
                uint64_t step, uint64_t sample0, float *grad, void *scratch)
{
    const seq_addr addr = { seed, step, sample0 };
    forward(s, params, x, n, &addr, scratch);
    void *ls = (char *)scratch + s->lay_off;
    const size_t L = s->n_layers - 1;   /* the loss's index */
    const float *z = at(scratch, s->out_off[L - 1]);
    float *dy = at(scratch, s->grad_off[0]);
    /* seq_loss's sum and the loss's gradient from one pass over the logits;
     * a token network's per-sample loss is the mean over its positions, so
     * dy is divided by their number (in the same pass). */
    const float div = s->tokens && s->rows > 1 ? (float)s->rows : 1.0f;
    const double sum = nn_loss_xent_both(&s->layer[L], dy, z, row_labels(s, labels, n, scratch), n, div, ls);
    const double loss = s->tokens ? sum / (double)s->rows : sum;
    const int32_t *ids = s->tokens ? (const int32_t *)(const void *)((const char *)scratch + s->ids_off) : NULL;
    float *skip = at(scratch, s->grad_off[3]);
    size_t open = SIZE_MAX;   /* the first layer of the residual branch whose skip gradient is held */
    int cur = 0;
    /* Backward: each layer's backward in reverse; dx of layer i is dy of
     * layer i-1, none for the first layer. A residual's add passes dy to
     * its branch and keeps a copy, added to the gradient of the branch's
     * input when the backward reaches the branch's first layer. */
    for (size_t i = L; i-- > 0;) {
        const nn_layer *l = &s->layer[i];
        const float *w = params + s->p_off[i];
        float *dw = grad + s->p_off[i];
        const float *xi = layer_in(s, i, x, scratch);
        const float *y = at(scratch, s->out_off[i]), *act = at(scratch, s->act_off[i]);
        if (l->kind == NN_ADD) {
            memcpy(skip, dy, n * l->out_size * sizeof(float));
            open = s->skip[i];
            continue;
        }
        const int joins = open == i;
        float *dx = i == 0 ? NULL : at(scratch, s->grad_off[joins ? 2 : 1 - cur]);
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
                nn_act_gelu_backward(l, dx, dy, act, xi, n);
            break;
        case NN_EMBED: nn_embed_backward(l, dw, dy, ids, n); break;
        case NN_POSEMBED:
            /* Its dx is dy itself: written when a layer below needs it. */
            nn_embed_pos_backward(l, dx, dw, dy, n);
            break;
        case NN_ATTN: nn_attn_backward(l, dx, dw, dy, act, xi, y, w, n, ls); break;
        case NN_DROPOUT:
            /* The forward's mask, drawn again from the same address. */
            if (dx != NULL)
                nn_act_dropout_backward(l, dx, dy, n, seed, step, sample0);
            break;
        default: break;
        }
        if (joins) {
            /* The branch's gradient first, the skip's second (nn.h). */
            if (dx != NULL)
                nn_act_add_forward(l, at(scratch, s->grad_off[1 - cur]), dx, skip, n);
            open = SIZE_MAX;
            dx = i == 0 ? NULL : at(scratch, s->grad_off[1 - cur]);
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
    forward(s, params, x, n, NULL, scratch);
    const float *z = at(scratch, s->out_off[s->n_layers - 2]);
    if (!s->tokens) {
        memcpy(logits, z, n * s->classes * sizeof(float));
        return;
    }
    /* A token network's scores: its last position's logits. */
    const size_t T = s->rows, C = s->classes;
    for (size_t b = 0; b < n; b++)
        memcpy(logits + b * C, z + (b * T + T - 1) * C, C * sizeof(float));
}
