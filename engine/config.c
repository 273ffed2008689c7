/* config.c — defaults, the key table, parsing and canonical text. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef enum { K_STR, K_SIZE, K_U64, K_F32, K_LIST, K_INT } key_type;

typedef struct {
    const char *name;
    key_type type;
    size_t offset;
    size_t size;                 /* K_STR: buffer size */
    const char *choices;         /* K_STR: space-separated allowed values, or NULL */
    double lo, hi;               /* numeric range (inclusive) */
    int (*applies)(const ls_config *cfg);
    const char *help;
} key_def;

static int always(const ls_config *c) { (void)c; return 1; }
static int is_adamw(const ls_config *c) { return strcmp(c->optimizer, "adamw") == 0; }
static int is_sgd(const ls_config *c) { return strcmp(c->optimizer, "sgd") == 0; }
static int is_mlp(const ls_config *c) { return strcmp(c->model, "mlp") == 0; }

#define OFF(f) offsetof(ls_config, f), sizeof(((ls_config *)0)->f)

/* Sorted by name: the canonical text is written in this order. */
static const key_def KEYS[] = {
    { "batch", K_SIZE, OFF(batch), NULL, 1, 1 << 20, always, "samples per step" },
    { "beta1", K_F32, OFF(beta1), NULL, 0, 0.999999, is_adamw, "AdamW first-moment decay" },
    { "beta2", K_F32, OFF(beta2), NULL, 0, 0.999999, is_adamw, "AdamW second-moment decay" },
    { "clip", K_F32, OFF(clip), NULL, 0, 1e30, always, "element-wise gradient clip, 0 = none" },
    { "data_hash", K_U64, OFF(data_hash), NULL, 0, 0, always, "identity of the data (set by the engine)" },
    { "eps", K_F32, OFF(eps), NULL, 0, 1, is_adamw, "AdamW epsilon" },
    { "format", K_INT, OFF(format), NULL, CONFIG_FORMAT, CONFIG_FORMAT, always, "engine format version" },
    { "hidden", K_LIST, OFF(hidden), NULL, 1, 65536, is_mlp, "hidden widths, e.g. 256,256" },
    { "leaf", K_SIZE, OFF(leaf), NULL, 1, 1 << 20, always, "samples per leaf (unit of gradient work)" },
    { "lr", K_F32, OFF(lr), NULL, 0, 1e6, always, "learning rate" },
    { "model", K_STR, OFF(model), "mlp", 0, 0, always, "model" },
    { "momentum", K_F32, OFF(momentum), NULL, 0, 0.999999, is_sgd, "SGD momentum" },
    { "optimizer", K_STR, OFF(optimizer), "sgd adamw", 0, 0, always, "optimiser" },
    { "reduce", K_STR, OFF(reduce), "tree unordered", 0, 0, always,
      "tree (bit-identical) or unordered (benchmarks only)" },
    { "seed", K_U64, OFF(seed), NULL, 0, 0, always, "seed of every random number" },
    { "task", K_STR, OFF(task), "fashion-mnist teacher", 0, 0, always, "task" },
    { "weight_decay", K_F32, OFF(weight_decay), NULL, 0, 1e6, always, "decoupled weight decay (AdamW) or L2 (SGD)" },
};
#define N_KEYS (sizeof KEYS / sizeof KEYS[0])

const char *config_default_model(const char *task)
{
    if (strcmp(task, "fashion-mnist") == 0 || strcmp(task, "teacher") == 0)
        return "mlp";
    return NULL;
}

ls_status config_defaults(ls_config *cfg, const char *task, const char *model, ls_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    const char *dm = config_default_model(task);
    if (dm == NULL)
        return ls_fail(err, LS_EINVAL, "--task: unknown task '%s' (choices: fashion-mnist, teacher)", task);
    if (model == NULL)
        model = dm;
    if (strcmp(model, "mlp") != 0)
        return ls_fail(err, LS_EINVAL, "--model: unknown model '%s' (choices: mlp)", model);
    snprintf(cfg->task, sizeof cfg->task, "%s", task);
    snprintf(cfg->model, sizeof cfg->model, "%s", model);
    snprintf(cfg->optimizer, sizeof cfg->optimizer, "adamw");
    snprintf(cfg->reduce, sizeof cfg->reduce, "tree");
    cfg->format = CONFIG_FORMAT;
    cfg->seed = 1;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-8f;
    cfg->momentum = 0.9f;
    if (strcmp(task, "fashion-mnist") == 0) {
        cfg->hidden[0] = 256;
        cfg->hidden[1] = 256;
        cfg->n_hidden = 2;
        cfg->batch = 128;
        cfg->leaf = 32;
        cfg->lr = 1e-3f;
    } else {
        cfg->hidden[0] = 32;
        cfg->n_hidden = 1;
        cfg->batch = 32;
        cfg->leaf = 4;
        cfg->lr = 1e-2f;
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
        const char *p = value;
        while (*p) {
            char num[32];
            size_t w = strcspn(p, ",");
            uint64_t v;
            if (w == 0 || w >= sizeof num || n == CONFIG_MAX_HIDDEN)
                return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not a list of up to %d widths like 256,256",
                               dash, shown, value, CONFIG_MAX_HIDDEN);
            memcpy(num, p, w);
            num[w] = '\0';
            if (parse_u64(num, &v) != LS_OK || (double)v < k->lo || (double)v > k->hi)
                return ls_fail(err, LS_EINVAL, "%s%s: width '%s' is not in %.0f..%.0f", dash, shown, num, k->lo, k->hi);
            cfg->hidden[n++] = (size_t)v;
            p += w;
            if (*p == ',') {
                p++;
                if (*p == '\0')
                    return ls_fail(err, LS_EINVAL, "%s%s: '%s' ends with a comma", dash, shown, value);
            }
        }
        cfg->n_hidden = n;
        return LS_OK;
    }
    }
    return LS_EINVAL;
}

ls_status config_validate(const ls_config *cfg, ls_err *err)
{
    if (config_default_model(cfg->task) == NULL)
        return ls_fail(err, LS_EINVAL, "task: unknown task '%s'", cfg->task);
    if (cfg->batch == 0)
        return ls_fail(err, LS_EINVAL, "batch: must be at least 1");
    if (cfg->leaf == 0)
        return ls_fail(err, LS_EINVAL, "leaf: must be at least 1");
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
        case K_LIST:
            for (size_t j = 0; j < cfg->n_hidden; j++)
                at = append(buf, len, at, j ? ",%zu" : "%zu", cfg->hidden[j]);
            break;
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
