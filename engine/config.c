/* config.c — defaults, the key table, parsing and canonical text. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef enum { K_STR, K_SIZE, K_U64, K_F32, K_LIST, K_INT, K_BOOL } key_type;

typedef struct {
    const char *name;
    key_type type;
    size_t offset;
    size_t size;                 /* K_STR: buffer size; K_LIST: capacity in entries */
    const char *choices;         /* K_STR: space-separated allowed values, or NULL */
    double lo, hi;               /* numeric range (inclusive) */
    int (*applies)(const ls_config *cfg);
    const char *help;
    size_t count_offset;         /* K_LIST: offset of its size_t count */
} key_def;

static int always(const ls_config *c) { (void)c; return 1; }
static int is_adamw(const ls_config *c) { return strcmp(c->optimizer, "adamw") == 0; }
static int is_sgd(const ls_config *c) { return strcmp(c->optimizer, "sgd") == 0; }
static int is_mlp(const ls_config *c) { return strcmp(c->model, "mlp") == 0; }
static int is_logic(const ls_config *c) { return strcmp(c->model, "logic") == 0; }
static int is_ca(const ls_config *c) { return strcmp(c->model, "logic-ca") == 0; }
static int is_gates(const ls_config *c) { return is_logic(c) || is_ca(c); }
static int is_leafed(const ls_config *c) { return !is_ca(c); }
static int is_ca_async(const ls_config *c) { return is_ca(c) && c->async; }

#define OFF(f) offsetof(ls_config, f), sizeof(((ls_config *)0)->f)
#define LIST(f, cap, n) offsetof(ls_config, f), cap

/* Sorted by name: the canonical text is written in this order. */
static const key_def KEYS[] = {
    { "async", K_BOOL, OFF(async), NULL, 0, 1, is_ca, "asynchronous CA steps (checkerboard: 14x14, 50 steps, batch 1)", 0 },
    { "batch", K_SIZE, OFF(batch), NULL, 1, 1 << 20, always, "samples per step", 0 },
    { "beta1", K_F32, OFF(beta1), NULL, 0, 0.999999, is_adamw, "AdamW first-moment decay", 0 },
    { "beta2", K_F32, OFF(beta2), NULL, 0, 0.999999, is_adamw, "AdamW second-moment decay", 0 },
    { "bits", K_SIZE, OFF(bits), NULL, 1, 15, is_logic, "thresholds per input value (at i/(bits+1))", 0 },
    { "ca_steps", K_SIZE, OFF(ca_steps), NULL, 1, 1000, is_ca, "CA steps per rollout", 0 },
    { "channels", K_SIZE, OFF(channels), NULL, 1, 64, is_ca, "binary channels per cell", 0 },
    { "clip", K_F32, OFF(clip), NULL, 0, 1e30, always, "element-wise gradient clip, 0 = none", 0 },
    { "data_hash", K_U64, OFF(data_hash), NULL, 0, 0, always, "identity of the data (set by the engine)", 0 },
    { "eps", K_F32, OFF(eps), NULL, 0, 1, is_adamw, "AdamW epsilon", 0 },
    { "fire_rate", K_F32, OFF(fire_rate), NULL, 0, 1, is_ca_async, "probability that a cell fires in a step", 0 },
    { "format", K_INT, OFF(format), NULL, CONFIG_FORMAT, CONFIG_FORMAT, always, "engine format version", 0 },
    { "grid", K_SIZE, OFF(grid), NULL, 1, 4096, is_ca, "grid side in cells", 0 },
    { "hidden", K_LIST, LIST(hidden, CONFIG_MAX_HIDDEN, n_hidden), NULL, 1, 65536, is_mlp,
      "hidden widths, e.g. 256,256", offsetof(ls_config, n_hidden) },
    { "kernels", K_SIZE, OFF(kernels), NULL, 1, 256, is_ca, "perception kernels", 0 },
    { "layers", K_LIST, LIST(layers, CONFIG_MAX_LAYERS, n_layers), NULL, 1, 1 << 20, is_gates,
      "gate layer widths, e.g. 8000x6 or 128x17,64,32", offsetof(ls_config, n_layers) },
    { "leaf", K_SIZE, OFF(leaf), NULL, 1, 1 << 20, is_leafed, "samples per leaf (unit of gradient work)", 0 },
    { "lr", K_F32, OFF(lr), NULL, 0, 1e6, always, "learning rate", 0 },
    { "model", K_STR, OFF(model), "mlp logic logic-ca", 0, 0, always, "model", 0 },
    { "momentum", K_F32, OFF(momentum), NULL, 0, 0.999999, is_sgd, "SGD momentum", 0 },
    { "optimizer", K_STR, OFF(optimizer), "sgd adamw", 0, 0, always, "optimiser", 0 },
    { "parts", K_SIZE, OFF(parts), NULL, 1, 4096, is_ca, "parts (blocks of cell rows) per sample", 0 },
    { "perception", K_LIST, LIST(perception, CONFIG_MAX_PERCEPTION, n_perception), NULL, 1, 64, is_ca,
      "perception kernel layer widths, e.g. 8,4,2,1", offsetof(ls_config, n_perception) },
    { "periodic", K_BOOL, OFF(periodic), NULL, 0, 1, is_ca, "wrap-around borders (else zero padding)", 0 },
    { "reduce", K_STR, OFF(reduce), "tree unordered", 0, 0, always,
      "tree (bit-identical) or unordered (benchmarks only)", 0 },
    { "residual", K_F32, OFF(residual), NULL, 0, 1e6, is_gates,
      "init: logit of gate A (pass-through), others 0; 0 = Gaussian logits", 0 },
    { "seed", K_U64, OFF(seed), NULL, 0, 0, always, "seed of every random number", 0 },
    { "task", K_STR, OFF(task), "fashion-mnist teacher gol checkerboard", 0, 0, always, "task", 0 },
    { "tau", K_F32, OFF(tau), NULL, 1e-6, 1e6, is_logic, "GroupSum temperature", 0 },
    { "weight_decay", K_F32, OFF(weight_decay), NULL, 0, 1e6, always, "decoupled weight decay (AdamW) or L2 (SGD)", 0 },
    { "wiring", K_STR, OFF(wiring), "random unique", 0, 0, is_logic, "gate wiring", 0 },
};
#define N_KEYS (sizeof KEYS / sizeof KEYS[0])

const char *config_default_model(const char *task)
{
    if (strcmp(task, "fashion-mnist") == 0 || strcmp(task, "teacher") == 0)
        return "mlp";
    if (strcmp(task, "gol") == 0 || strcmp(task, "checkerboard") == 0)
        return "logic-ca";
    return NULL;
}

/* Parse "128x17,64,32" into widths; 0 on success. */
static int parse_widths(const char *value, size_t *out, size_t cap, size_t lo, size_t hi, size_t *n_out);

static void set_layers(ls_config *cfg, const char *text)
{
    size_t n = 0;
    if (parse_widths(text, cfg->layers, CONFIG_MAX_LAYERS, 1, 1 << 20, &n) == 0)
        cfg->n_layers = n;
}

/* The notebook's asynchronous checkerboard (reference/difflogic.md). */
static void checkerboard_async_defaults(ls_config *cfg)
{
    cfg->async = 1;
    cfg->grid = 14;
    cfg->ca_steps = 50;
    cfg->batch = 1;
    cfg->parts = 7;
    set_layers(cfg, "256x14,128,64,32,16,8,8");
}

ls_status config_defaults(ls_config *cfg, const char *task, const char *model, ls_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    const char *dm = config_default_model(task);
    if (dm == NULL)
        return ls_fail(err, LS_EINVAL, "--task: unknown task '%s' (choices: fashion-mnist, teacher, gol, checkerboard)",
                       task);
    if (model == NULL)
        model = dm;
    int image = strcmp(dm, "mlp") == 0;
    if (strcmp(model, "mlp") != 0 && strcmp(model, "logic") != 0 && strcmp(model, "logic-ca") != 0)
        return ls_fail(err, LS_EINVAL, "--model: unknown model '%s' (choices: mlp, logic, logic-ca)", model);
    if (image != (strcmp(model, "logic-ca") != 0))
        return ls_fail(err, LS_EINVAL, "--model: model '%s' does not train task '%s' (it takes %s)", model, task,
                       image ? "mlp or logic" : "logic-ca");
    snprintf(cfg->task, sizeof cfg->task, "%s", task);
    snprintf(cfg->model, sizeof cfg->model, "%s", model);
    snprintf(cfg->optimizer, sizeof cfg->optimizer, "adamw");
    snprintf(cfg->reduce, sizeof cfg->reduce, "tree");
    snprintf(cfg->wiring, sizeof cfg->wiring, "random");
    cfg->format = CONFIG_FORMAT;
    cfg->seed = 1;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-8f;
    cfg->momentum = 0.9f;
    cfg->tau = 10.0f;
    cfg->bits = 3;
    if (strcmp(task, "fashion-mnist") == 0) {
        cfg->hidden[0] = 256;
        cfg->hidden[1] = 256;
        cfg->n_hidden = 2;
        cfg->batch = 128;
        cfg->leaf = 32;
        cfg->lr = 1e-3f;
        if (strcmp(model, "logic") == 0) {
            set_layers(cfg, "8000x6");
            cfg->lr = 1e-2f;
        }
    } else if (strcmp(task, "teacher") == 0) {
        cfg->hidden[0] = 32;
        cfg->n_hidden = 1;
        cfg->batch = 32;
        cfg->leaf = 4;
        cfg->lr = 1e-2f;
        if (strcmp(model, "logic") == 0)
            set_layers(cfg, "256x4");
    } else {
        /* The notebook's settings: AdamW(0.9, 0.99, wd 1e-2, eps 1e-8) after an
         * element-wise clip at 100, lr 0.05, seed 23, logit of gate A at 10. */
        cfg->seed = 23;
        cfg->lr = 0.05f;
        cfg->beta2 = 0.99f;
        cfg->weight_decay = 1e-2f;
        cfg->clip = 100.0f;
        cfg->residual = 10.0f;
        cfg->kernels = 16;
        cfg->fire_rate = 0.6f;
        cfg->leaf = 1;
        if (strcmp(task, "gol") == 0) {
            cfg->channels = 1;
            cfg->perception[0] = 8, cfg->perception[1] = 4, cfg->perception[2] = 2, cfg->perception[3] = 1;
            cfg->n_perception = 4;
            set_layers(cfg, "128x17,64,32,16,8,4,2,1");
            cfg->ca_steps = 1;
            cfg->grid = 3;
            cfg->periodic = 1;
            cfg->batch = 20;
            cfg->parts = 1;
        } else {
            cfg->channels = 8;
            cfg->perception[0] = 8, cfg->perception[1] = 4, cfg->perception[2] = 2;
            cfg->n_perception = 3;
            set_layers(cfg, "256x10,128,64,32,16,8,8");
            cfg->ca_steps = 20;
            cfg->grid = 16;
            cfg->periodic = 0;
            cfg->batch = 2;
            cfg->parts = 8;
        }
    }
    return LS_OK;
}

static const key_def *find_key(const char *key)
{
    char norm[64];
    size_t n = strlen(key);
    if (n >= sizeof norm)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        norm[i] = key[i] == '-' ? '_' : key[i];
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(KEYS[i].name, norm) == 0)
            return &KEYS[i];
    return NULL;
}

int config_has_key(const char *key)
{
    return find_key(key) != NULL;
}

static ls_status parse_u64(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return LS_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return LS_EINVAL;
    *out = (uint64_t)v;
    return LS_OK;
}

ls_status config_set(ls_config *cfg, const char *key, const char *value, int flag_style, ls_err *err)
{
    const key_def *k = find_key(key);
    const char *dash = flag_style ? "--" : "";
    if (k == NULL)
        return ls_fail(err, LS_EINVAL, "%s%s: unknown %s", dash, key, flag_style ? "flag" : "config key");
    char shown[64];
    snprintf(shown, sizeof shown, "%s", k->name);
    if (flag_style)
        for (char *p = shown; *p; p++)
            if (*p == '_')
                *p = '-';
    char *field = (char *)cfg + k->offset;
    switch (k->type) {
    case K_STR: {
        size_t n = strlen(value);
        int ok = n > 0 && n < k->size;
        if (ok && k->choices != NULL) {
            ok = 0;
            for (const char *c = k->choices; *c;) {
                size_t w = strcspn(c, " ");
                if (w == n && strncmp(c, value, n) == 0)
                    ok = 1;
                c += w;
                while (*c == ' ')
                    c++;
            }
        }
        if (!ok)
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not one of: %s", dash, shown, value,
                           k->choices ? k->choices : "(non-empty text)");
        memcpy(field, value, n + 1);
        return LS_OK;
    }
    case K_SIZE:
    case K_U64:
    case K_INT: {
        uint64_t v;
        if (parse_u64(value, &v) != LS_OK)
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not a non-negative integer", dash, shown, value);
        if (k->type != K_U64 && ((double)v < k->lo || (double)v > k->hi))
            return ls_fail(err, LS_EINVAL, "%s%s: %s is out of range (%.0f..%.0f)", dash, shown, value, k->lo, k->hi);
        if (k->type == K_SIZE)
            *(size_t *)(void *)field = (size_t)v;
        else if (k->type == K_U64)
            *(uint64_t *)(void *)field = v;
        else
            *(int *)(void *)field = (int)v;
        return LS_OK;
    }
    case K_F32: {
        errno = 0;
        char *end;
        float v = strtof(value, &end);
        if (*value == '\0' || *end != '\0')
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not a number", dash, shown, value);
        if (errno == ERANGE)
            return ls_fail(err, LS_EINVAL, "%s%s: %s is outside the range of a 32-bit float", dash, shown, value);
        if (!isfinite(v))
            return ls_fail(err, LS_EINVAL, "%s%s: %s is not a finite number", dash, shown, value);
        if ((double)v < k->lo || (double)v > k->hi)
            return ls_fail(err, LS_EINVAL, "%s%s: %s is out of range (%g..%g)", dash, shown, value, k->lo, k->hi);
        *(float *)(void *)field = v;
        return LS_OK;
    }
    case K_LIST: {
        size_t n = 0;
        if (parse_widths(value, (size_t *)(void *)field, k->size, (size_t)k->lo, (size_t)k->hi, &n) != 0)
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not a list of up to %zu widths in %.0f..%.0f, like %s",
                           dash, shown, value, k->size, k->lo, k->hi, strcmp(k->name, "layers") == 0 ? "128x3,64" : "256,256");
        *(size_t *)(void *)((char *)cfg + k->count_offset) = n;
        return LS_OK;
    }
    case K_BOOL: {
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not 0 or 1", dash, shown, value);
        int on = value[0] == '1';
        /* The asynchronous checkerboard is its own set of defaults. */
        if (strcmp(k->name, "async") == 0 && on && !cfg->async && strcmp(cfg->task, "checkerboard") == 0)
            checkerboard_async_defaults(cfg);
        *(int *)(void *)field = on;
        return LS_OK;
    }
    }
    return LS_EINVAL;
}

static int parse_widths(const char *value, size_t *out, size_t cap, size_t lo, size_t hi, size_t *n_out)
{
    size_t n = 0;
    const char *p = value;
    while (*p) {
        char item[48];
        size_t w = strcspn(p, ",");
        if (w == 0 || w >= sizeof item)
            return -1;
        memcpy(item, p, w);
        item[w] = '\0';
        char *x = strchr(item, 'x');
        uint64_t width, rep = 1;
        if (x != NULL) {
            *x = '\0';
            if (parse_u64(x + 1, &rep) != LS_OK || rep == 0 || rep > cap)
                return -1;
        }
        if (parse_u64(item, &width) != LS_OK || width < lo || width > hi)
            return -1;
        for (uint64_t r = 0; r < rep; r++) {
            if (n == cap)
                return -1;
            out[n++] = (size_t)width;
        }
        p += w;
        if (*p == ',' && *++p == '\0')
            return -1;
    }
    *n_out = n;
    return 0;
}

int config_key_is_switch(const char *key)
{
    const key_def *k = find_key(key);
    return k != NULL && k->type == K_BOOL;
}

ls_status config_validate(const ls_config *cfg, ls_err *err)
{
    const char *dm = config_default_model(cfg->task);
    if (dm == NULL)
        return ls_fail(err, LS_EINVAL, "task: unknown task '%s'", cfg->task);
    /* The same pairing rule as config_defaults: a later task= or --task must
     * not leave a model behind that cannot train it. */
    int image = strcmp(dm, "mlp") == 0;
    if (image != (strcmp(cfg->model, "logic-ca") != 0))
        return ls_fail(err, LS_EINVAL, "model: '%s' does not train task '%s' (it takes %s)", cfg->model, cfg->task,
                       image ? "mlp or logic" : "logic-ca");
    if (cfg->batch == 0)
        return ls_fail(err, LS_EINVAL, "batch: must be at least 1");
    if (cfg->leaf == 0)
        return ls_fail(err, LS_EINVAL, "leaf: must be at least 1");
    if (strcmp(cfg->model, "logic-ca") == 0) {
        if (cfg->n_layers == 0 || cfg->layers[cfg->n_layers - 1] != cfg->channels)
            return ls_fail(err, LS_EINVAL, "layers: the last layer must have one gate per channel (%zu)", cfg->channels);
        if (cfg->n_perception == 0)
            return ls_fail(err, LS_EINVAL, "perception: needs at least one kernel layer");
        if (cfg->parts > cfg->grid)
            return ls_fail(err, LS_EINVAL, "parts: %zu parts for %zu rows of cells", cfg->parts, cfg->grid);
    }
    if (strcmp(cfg->model, "logic") == 0 && cfg->n_layers == 0)
        return ls_fail(err, LS_EINVAL, "layers: needs at least one layer of gates");
    if (cfg->format != CONFIG_FORMAT)
        return ls_fail(err, LS_EINVAL, "format: %d is not supported (this engine writes %d)", cfg->format, CONFIG_FORMAT);
    return LS_OK;
}

static size_t append(char *buf, size_t len, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#include <stdarg.h>
static size_t append(char *buf, size_t len, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(at < len ? buf + at : NULL, at < len ? len - at : 0, fmt, ap);
    va_end(ap);
    return at + (n > 0 ? (size_t)n : 0);
}

size_t config_text(const ls_config *cfg, char *buf, size_t len)
{
    size_t at = 0;
    if (len > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < N_KEYS; i++) {
        const key_def *k = &KEYS[i];
        if (!k->applies(cfg))
            continue;
        const char *field = (const char *)cfg + k->offset;
        at = append(buf, len, at, "%s=", k->name);
        switch (k->type) {
        case K_STR: at = append(buf, len, at, "%s", field); break;
        case K_SIZE: at = append(buf, len, at, "%zu", *(const size_t *)(const void *)field); break;
        case K_U64: at = append(buf, len, at, "%llu", (unsigned long long)*(const uint64_t *)(const void *)field); break;
        case K_INT: at = append(buf, len, at, "%d", *(const int *)(const void *)field); break;
        case K_F32: at = append(buf, len, at, "%a", (double)*(const float *)(const void *)field); break;
        case K_BOOL: at = append(buf, len, at, "%d", *(const int *)(const void *)field); break;
        case K_LIST: {
            const size_t *v = (const size_t *)(const void *)field;
            size_t n = *(const size_t *)(const void *)((const char *)cfg + k->count_offset);
            for (size_t j = 0; j < n;) {
                size_t r = 1;
                while (j + r < n && v[j + r] == v[j])
                    r++;
                at = append(buf, len, at, j ? "," : "");
                if (strcmp(k->name, "layers") != 0)
                    r = 1;   /* only layers uses the WxN form (hidden stays as format 1 wrote it) */
                at = r > 1 ? append(buf, len, at, "%zux%zu", v[j], r) : append(buf, len, at, "%zu", v[j]);
                j += r;
            }
            break;
        }
        }
        at = append(buf, len, at, "\n");
    }
    return at;
}

uint64_t config_hash(const ls_config *cfg)
{
    char text[CONFIG_TEXT_MAX];
    size_t n = config_text(cfg, text, sizeof text);
    return XXH3_64bits(text, n < sizeof text ? n : sizeof text - 1);
}

/* Copy the value of "key=" from text into out; 0 when absent. */
static int text_value(const char *text, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = ll - kl - 1;
            if (vl >= len)
                vl = len - 1;
            memcpy(out, p + kl + 1, vl);
            out[vl] = '\0';
            return 1;
        }
        p += ll + (eol ? 1 : 0);
    }
    return 0;
}

ls_status config_parse_text(ls_config *cfg, const char *text, const char *what, ls_err *err)
{
    char task[64], model[64];
    if (!text_value(text, "task", task, sizeof task))
        return ls_fail(err, LS_EFORMAT, "%s: config has no task= line", what);
    int has_model = text_value(text, "model", model, sizeof model);
    ls_err e;
    ls_status st = config_defaults(cfg, task, has_model ? model : NULL, &e);
    if (st != LS_OK)
        return ls_fail(err, LS_EFORMAT, "%s: %s", what, e.msg);
    /* Keys that apply only to another optimiser (or model) may be absent:
     * the defaults stand for them and the text stays canonical. */
    int line = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        char buf[512];
        line++;
        if (ll >= sizeof buf)
            return ls_fail(err, LS_EFORMAT, "%s: config line %d is too long", what, line);
        memcpy(buf, p, ll);
        buf[ll] = '\0';
        char *eq = strchr(buf, '=');
        if (eq == NULL)
            return ls_fail(err, LS_EFORMAT, "%s: config line %d: '%s' is not key=value", what, line, buf);
        *eq = '\0';
        st = config_set(cfg, buf, eq + 1, 0, &e);
        if (st != LS_OK)
            return ls_fail(err, LS_EFORMAT, "%s: config line %d: %s", what, line, e.msg);
        p += ll + (eol ? 1 : 0);
    }
    return config_validate(cfg, err) == LS_OK ? LS_OK : LS_EFORMAT;
}

size_t config_help(char *buf, size_t len)
{
    size_t at = 0;
    if (len > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < N_KEYS; i++) {
        const key_def *k = &KEYS[i];
        if (strcmp(k->name, "data_hash") == 0 || strcmp(k->name, "format") == 0)
            continue;
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", k->name);
        for (char *p = flag; *p; p++)
            if (*p == '_')
                *p = '-';
        at = append(buf, len, at, "  %-16s %s\n", flag, k->help);
    }
    return at;
}
