/* config.c — keys, defaults, parsing, validation and canonical text, all
 * generated from the engine's key table and the model and task descriptors. */
#include "engine/core/config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/core/registry.h"

/* ---- the engine's keys ---------------------------------------------------- */

typedef struct {
    ls_key key;
    size_t offset, size;         /* the ls_config field */
    /* 1: the key is left out of the canonical text while it holds its
     * default, so the text of a config that does not use it is the text
     * of format 1 (the keys added after it: schedules, clip_norm,
     * decay_groups, init_hash). */
    int quiet_default;
} engine_key;

#define FIELD(f) offsetof(ls_config, f), sizeof(((ls_config *)0)->f)

static const engine_key ENGINE[] = {
    { { "batch", LS_KEY_INT, "32", 1, 1 << 20, NULL, NULL, "samples per step", 0 }, FIELD(batch), 0 },
    { { "beta1", LS_KEY_FLOAT, "0.9", 0, 0.999999, NULL, "optimizer=adamw", "AdamW first-moment decay", 0 },
      FIELD(beta1), 0 },
    { { "beta2", LS_KEY_FLOAT, "0.999", 0, 0.999999, NULL, "optimizer=adamw", "AdamW second-moment decay", 0 },
      FIELD(beta2), 0 },
    { { "clip", LS_KEY_FLOAT, "0", 0, 1e30, NULL, NULL, "element-wise gradient clip, 0 = none", 0 }, FIELD(clip), 0 },
    { { "clip_norm", LS_KEY_FLOAT, "0", 0, 1e30, NULL, NULL,
        "global-norm clip: the largest L2 norm of the whole gradient, 0 = none", 0 }, FIELD(clip_norm), 1 },
    { { "data_hash", LS_KEY_U64, "0", 0, 0, NULL, NULL, "identity of the data (set by the engine)", 0 },
      FIELD(data_hash), 0 },
    { { "decay_groups", LS_KEY_TEXT, "all", 0, 0, "all weights", NULL,
        "weight decay on every tensor, or only on those the model does not mark as biases or norms", 0 },
      FIELD(decay_groups), 1 },
    { { "decay_steps", LS_KEY_INT, "1000", 1, 2147483647, NULL, "lr_schedule=cosine",
        "the step where the cosine decay reaches lr_min", 0 }, FIELD(decay_steps), 0 },
    { { "eps", LS_KEY_FLOAT, "1e-8", 0, 1, NULL, "optimizer=adamw", "AdamW epsilon", 0 }, FIELD(eps), 0 },
    { { "format", LS_KEY_INT, "2", CONFIG_FORMAT, CONFIG_FORMAT, NULL, NULL, "engine format version", 0 },
      FIELD(format), 0 },
    { { "init_hash", LS_KEY_U64, "0", 0, 0, NULL, NULL, "identity of the starting weights (set by the engine)", 0 },
      FIELD(init_hash), 1 },
    { { "lr", LS_KEY_FLOAT, "0.001", 0, 1e6, NULL, NULL, "learning rate (the peak of a schedule)", 0 }, FIELD(lr), 0 },
    { { "lr_gamma", LS_KEY_FLOAT, "0.1", 0, 1, NULL, "lr_schedule=step", "factor of each decay of the step schedule",
        0 }, FIELD(lr_gamma), 0 },
    { { "lr_min", LS_KEY_FLOAT, "0", 0, 1e6, NULL, "lr_schedule=cosine", "learning rate at the end of the cosine decay",
        0 }, FIELD(lr_min), 0 },
    { { "lr_schedule", LS_KEY_TEXT, "constant", 0, 0, "constant cosine step", NULL,
        "learning rate by step: constant, warmup then cosine decay, or step decay", 0 }, FIELD(lr_schedule), 1 },
    { { "lr_step", LS_KEY_INT, "100", 1, 2147483647, NULL, "lr_schedule=step",
        "steps between two decays of the step schedule", 0 }, FIELD(lr_step), 0 },
    { { "model", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL, "model", 0 }, FIELD(model), 0 },
    { { "momentum", LS_KEY_FLOAT, "0.9", 0, 0.999999, NULL, "optimizer=sgd", "SGD momentum", 0 },
      FIELD(momentum), 0 },
    { { "optimizer", LS_KEY_TEXT, "adamw", 0, 0, "sgd adamw", NULL, "optimiser", 0 }, FIELD(optimizer), 0 },
    { { "reduce", LS_KEY_TEXT, "tree", 0, 0, "tree unordered", NULL,
        "tree (bit-identical) or unordered (benchmarks only)", 0 }, FIELD(reduce), 0 },
    { { "seed", LS_KEY_U64, "1", 0, 0, NULL, NULL, "seed of every random number", 0 }, FIELD(seed), 0 },
    { { "task", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL, "task", 0 }, FIELD(task), 0 },
    { { "warmup", LS_KEY_INT, "0", 0, 2147483647, NULL, "lr_schedule=cosine",
        "steps of linear warmup from 0 to lr before the cosine decay", 0 }, FIELD(warmup), 0 },
    { { "weight_decay", LS_KEY_FLOAT, "0", 0, 1e6, NULL, NULL, "decoupled weight decay (AdamW) or L2 (SGD)", 0 },
      FIELD(weight_decay), 0 },
};
#define N_ENGINE (sizeof ENGINE / sizeof ENGINE[0])
_Static_assert(sizeof ENGINE / sizeof ENGINE[0] <= 32 && CONFIG_MAX_KEYS <= 32, "a set mask has a bit per key");

/* A key of a config: the engine's (slot = its index in ENGINE), the
 * model's or the task's (slot = its index in the descriptor's table). */
enum { OWNER_ENGINE, OWNER_MODEL, OWNER_TASK, OWNER_SOURCE };
typedef struct {
    const ls_key *k;
    int owner;
    size_t slot;
} keyref;

static void normalise(char *out, size_t cap, const char *key)
{
    size_t i = 0;
    for (; key[i] && i + 1 < cap; i++)
        out[i] = key[i] == '-' ? '_' : key[i];
    out[i] = '\0';
}

static int find_in(const ls_key *keys, size_t n, const char *name, size_t *slot)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i].name, name) == 0) {
            *slot = i;
            return 1;
        }
    return 0;
}

/* The engine's one source: where the starting weights are (--init). */
static const ls_key INIT_SOURCE = { "init", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL,
                                    "starting weights: a FILE.safetensors with the model's tensors, in F32", 0 };

static int lookup(const ls_config *cfg, const char *key, keyref *r)
{
    char name[64];
    if (strlen(key) >= sizeof name)
        return 0;
    normalise(name, sizeof name, key);
    for (size_t i = 0; i < N_ENGINE; i++)
        if (strcmp(ENGINE[i].key.name, name) == 0) {
            *r = (keyref){ &ENGINE[i].key, OWNER_ENGINE, i };
            return 1;
        }
    size_t slot;
    if (cfg->model_desc != NULL && find_in(cfg->model_desc->keys, cfg->model_desc->n_keys, name, &slot)) {
        *r = (keyref){ &cfg->model_desc->keys[slot], OWNER_MODEL, slot };
        return 1;
    }
    if (cfg->task_desc != NULL && find_in(cfg->task_desc->keys, cfg->task_desc->n_keys, name, &slot)) {
        *r = (keyref){ &cfg->task_desc->keys[slot], OWNER_TASK, slot };
        return 1;
    }
    if (cfg->task_desc != NULL && find_in(cfg->task_desc->sources, cfg->task_desc->n_sources, name, &slot)) {
        *r = (keyref){ &cfg->task_desc->sources[slot], OWNER_SOURCE, slot };
        return 1;
    }
    if (strcmp(name, INIT_SOURCE.name) == 0) {
        *r = (keyref){ &INIT_SOURCE, OWNER_SOURCE, CONFIG_INIT_SOURCE };
        return 1;
    }
    return 0;
}

/* ---- values --------------------------------------------------------------- */

static void load(const ls_config *cfg, const keyref *r, config_value *v)
{
    if (r->owner == OWNER_SOURCE) {
        memset(v, 0, sizeof *v);
        /* Only for --help, which shows no source's value: a prefix will do. */
        const size_t n = strnlen(cfg->src[r->slot], sizeof v->s - 1);
        memcpy(v->s, cfg->src[r->slot], n);
        v->s[n] = '\0';
        return;
    }
    if (r->owner == OWNER_MODEL) {
        *v = cfg->mv[r->slot];
        return;
    }
    if (r->owner == OWNER_TASK) {
        *v = cfg->tv[r->slot];
        return;
    }
    const engine_key *e = &ENGINE[r->slot];
    const char *field = (const char *)cfg + e->offset;
    memset(v, 0, sizeof *v);
    switch (r->k->type) {
    case LS_KEY_TEXT: snprintf(v->s, sizeof v->s, "%s", field); break;
    case LS_KEY_INT:
    case LS_KEY_SWITCH:
        v->u = e->size == sizeof(int) ? (uint64_t)*(const int *)(const void *)field
                                      : (uint64_t)*(const size_t *)(const void *)field;
        break;
    case LS_KEY_U64: v->u = *(const uint64_t *)(const void *)field; break;
    case LS_KEY_FLOAT: v->f = *(const float *)(const void *)field; break;
    case LS_KEY_LIST: break;
    }
}

static void store(ls_config *cfg, const keyref *r, const config_value *v)
{
    if (r->owner == OWNER_MODEL) {
        cfg->mv[r->slot] = *v;
        return;
    }
    if (r->owner == OWNER_TASK) {
        cfg->tv[r->slot] = *v;
        return;
    }
    const engine_key *e = &ENGINE[r->slot];
    char *field = (char *)cfg + e->offset;
    switch (r->k->type) {
    case LS_KEY_TEXT: snprintf(field, e->size, "%s", v->s); break;
    case LS_KEY_INT:
    case LS_KEY_SWITCH:
        if (e->size == sizeof(int))
            *(int *)(void *)field = (int)v->u;
        else
            *(size_t *)(void *)field = (size_t)v->u;
        break;
    case LS_KEY_U64: *(uint64_t *)(void *)field = v->u; break;
    case LS_KEY_FLOAT: *(float *)(void *)field = v->f; break;
    case LS_KEY_LIST: break;
    }
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

/* "128x17,64,32" into widths; 0 on success. */
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

/* Parse value for key k into v; errors name the key as `shown`. */
static ls_status parse_value(const ls_key *k, const char *value, config_value *v, const char *dash,
                             const char *shown, ls_err *err)
{
    switch (k->type) {
    case LS_KEY_TEXT: {
        size_t n = strlen(value);
        if (n >= sizeof v->s)
            return ls_fail(err, LS_EINVAL, "%s%s: a value of %zu characters; at most %zu", dash, shown, n,
                           sizeof v->s - 1);
        int ok = n > 0;
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
        if (!ok && k->choices == NULL)
            return ls_fail(err, LS_EINVAL, "%s%s: empty; give a value", dash, shown);
        if (!ok)
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not one of: %s", dash, shown, value, k->choices);
        memcpy(v->s, value, n + 1);
        return LS_OK;
    }
    case LS_KEY_INT:
    case LS_KEY_U64: {
        uint64_t u;
        if (parse_u64(value, &u) != LS_OK)
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not a non-negative integer", dash, shown, value);
        if (k->type == LS_KEY_INT && ((double)u < k->lo || (double)u > k->hi))
            return ls_fail(err, LS_EINVAL, "%s%s: %s is out of range (%.0f..%.0f)", dash, shown, value, k->lo, k->hi);
        v->u = u;
        return LS_OK;
    }
    case LS_KEY_FLOAT: {
        errno = 0;
        char *end;
        float f = strtof(value, &end);
        if (*value == '\0' || *end != '\0')
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not a number", dash, shown, value);
        if (errno == ERANGE)
            return ls_fail(err, LS_EINVAL, "%s%s: %s is outside the range of a 32-bit float", dash, shown, value);
        if (!isfinite(f))
            return ls_fail(err, LS_EINVAL, "%s%s: %s is not a finite number", dash, shown, value);
        /* In the key's own type: the bound as written (1e30) reads as the
         * float nearest it, which may lie past the double (1e30 does). */
        if (f < (float)k->lo || f > (float)k->hi)
            return ls_fail(err, LS_EINVAL, "%s%s: %s is out of range (%g..%g)", dash, shown, value, k->lo, k->hi);
        v->f = f;
        return LS_OK;
    }
    case LS_KEY_SWITCH:
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not 0 or 1", dash, shown, value);
        v->u = value[0] == '1';
        return LS_OK;
    case LS_KEY_LIST: {
        size_t n = 0;
        if (parse_widths(value, v->list, LS_LIST_MAX, (size_t)k->lo, (size_t)k->hi, &n) != 0)
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' is not a list of up to %d widths in %.0f..%.0f, like %s", dash,
                           shown, value, LS_LIST_MAX, k->lo, k->hi, k->list_runs ? "128x3,64" : "256,256");
        v->n = n;
        return LS_OK;
    }
    }
    return LS_EINVAL;
}

static size_t append(char *buf, size_t len, size_t at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t append(char *buf, size_t len, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(at < len ? buf + at : NULL, at < len ? len - at : 0, fmt, ap);
    va_end(ap);
    return at + (n > 0 ? (size_t)n : 0);
}

static size_t format_value(const ls_key *k, const config_value *v, char *buf, size_t len, size_t at)
{
    switch (k->type) {
    case LS_KEY_TEXT: return append(buf, len, at, "%s", v->s);
    case LS_KEY_INT:
    case LS_KEY_U64:
    case LS_KEY_SWITCH: return append(buf, len, at, "%llu", (unsigned long long)v->u);
    case LS_KEY_FLOAT: return append(buf, len, at, "%a", (double)v->f);
    case LS_KEY_LIST:
        for (size_t j = 0; j < v->n;) {
            size_t r = 1;
            while (k->list_runs && j + r < v->n && v->list[j + r] == v->list[j])
                r++;
            at = append(buf, len, at, j ? "," : "");
            at = r > 1 ? append(buf, len, at, "%zux%zu", v->list[j], r) : append(buf, len, at, "%zu", v->list[j]);
            j += r;
        }
        return at;
    }
    return at;
}

/* A key applies when it has no condition or its condition holds. */
static int applies(const ls_config *cfg, const ls_key *k)
{
    if (k->only_if == NULL)
        return 1;
    char name[64];
    const char *eq = strchr(k->only_if, '=');
    size_t nl = eq ? (size_t)(eq - k->only_if) : strlen(k->only_if);
    if (nl >= sizeof name)
        return 0;
    memcpy(name, k->only_if, nl);
    name[nl] = '\0';
    keyref r;
    if (!lookup(cfg, name, &r))
        return 0;
    config_value v;
    load(cfg, &r, &v);
    return eq ? r.k->type == LS_KEY_TEXT && strcmp(v.s, eq + 1) == 0 : v.u == 1;
}

/* A key is in the canonical text when it applies, unless it is one of the
 * engine's quiet keys holding its default (engine_key.quiet_default). */
static int in_text(const ls_config *cfg, const keyref *r)
{
    if (!applies(cfg, r->k))
        return 0;
    if (r->owner != OWNER_ENGINE || !ENGINE[r->slot].quiet_default)
        return 1;
    config_value v, d;
    ls_err e;
    load(cfg, r, &v);
    memset(&d, 0, sizeof d);
    if (parse_value(r->k, r->k->def, &d, "", r->k->name, &e) != LS_OK)
        return 1;
    char a[LS_TEXT_MAX + 32], b[LS_TEXT_MAX + 32];
    format_value(r->k, &v, a, sizeof a, 0);
    format_value(r->k, &d, b, sizeof b, 0);
    return strcmp(a, b) != 0;
}

/* ---- defaults and setting --------------------------------------------------- */

const char *config_default_model(const char *task)
{
    static _Thread_local char first[16];   /* per thread: sessions may open in parallel */
    const ls_task_desc *t = ls_task_find(task);
    if (t == NULL || t->models == NULL)
        return NULL;
    size_t w = strcspn(t->models, " ");
    if (w >= sizeof first)
        return NULL;
    /* Descriptors are constant; the copy holds the same word every time. */
    memcpy(first, t->models, w);
    first[w] = '\0';
    return first;
}

static int word_in(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *c = list; c != NULL && *c;) {
        size_t w = strcspn(c, " ");
        if (w == n && strncmp(c, word, n) == 0)
            return 1;
        c += w;
        while (*c == ' ')
            c++;
    }
    return 0;
}

/* A task and a model go together when either descriptor names the other. */
static int pairs(const ls_task_desc *t, const ls_model_desc *m)
{
    return word_in(t->models, m->name) || word_in(m->tasks, t->name);
}

void config_task_models(const ls_task_desc *t, const char *sep, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; ls_model_at(i) != NULL; i++)
        if (pairs(t, ls_model_at(i)))
            at = append(out, cap, at, "%s%s", at ? sep : "", ls_model_at(i)->name);
}

/* Apply "key=value" lines (descriptor settings) through config_set; a
 * task's defaults may also hold "steps=N" (steps_line), the model's default
 * number of steps: a run's target, not a config key (config_default_steps). */
static ls_status apply_settings(ls_config *cfg, const char *settings, const char *owner, int steps_line,
                                ls_err *err)
{
    for (const char *p = settings; p != NULL && *p;) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        char line[256];
        if (ll > 0) {
            if (ll >= sizeof line)
                return ls_fail(err, LS_EINVAL, "%s: a default setting is too long", owner);
            memcpy(line, p, ll);
            line[ll] = '\0';
            char *eq = strchr(line, '=');
            if (eq == NULL)
                return ls_fail(err, LS_EINVAL, "%s: default setting '%s' is not key=value", owner, line);
            *eq = '\0';
            ls_err e;
            if (steps_line && strcmp(line, "steps") == 0) {
                char *end;
                errno = 0;
                long long v = strtoll(eq + 1, &end, 10);
                if (errno != 0 || end == eq + 1 || *end != '\0' || v < 1)
                    return ls_fail(err, LS_EINVAL, "%s: default steps '%s' is not a positive integer", owner, eq + 1);
            } else if (config_set(cfg, line, eq + 1, 0, &e) != LS_OK)
                return ls_fail(err, LS_EINVAL, "%s: default setting: %s", owner, e.msg);
        }
        p += ll + (eol ? 1 : 0);
    }
    return LS_OK;
}

static void names_of(int models, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0;; i++) {
        const char *name = models ? (ls_model_at(i) ? ls_model_at(i)->name : NULL)
                                  : (ls_task_at(i) ? ls_task_at(i)->name : NULL);
        if (name == NULL)
            break;
        at = append(out, cap, at, "%s%s", i ? ", " : "", name);
    }
}

ls_status config_defaults(ls_config *cfg, const char *task, const char *model, ls_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    char names[512];
    const ls_task_desc *t = ls_task_find(task);
    if (t == NULL) {
        names_of(0, names, sizeof names);
        return ls_fail(err, LS_EINVAL, "--task: unknown task '%s' (choices: %s)", task, names);
    }
    if (model == NULL)
        model = config_default_model(task);
    const ls_model_desc *m = model != NULL ? ls_model_find(model) : NULL;
    if (m == NULL) {
        names_of(1, names, sizeof names);
        return ls_fail(err, LS_EINVAL, "--model: unknown model '%s' (choices: %s)", model ? model : "", names);
    }
    if (!pairs(t, m)) {
        config_task_models(t, " or ", names, sizeof names);
        return ls_fail(err, LS_EINVAL, "--model: model '%s' does not train task '%s' (it takes %s)", m->name, t->name,
                       names);
    }
    cfg->task_desc = t;
    cfg->model_desc = m;
    snprintf(cfg->task, sizeof cfg->task, "%s", t->name);
    snprintf(cfg->model, sizeof cfg->model, "%s", m->name);
    ls_status st;
    for (size_t i = 0; i < N_ENGINE; i++) {
        const ls_key *k = &ENGINE[i].key;
        if (k->def == NULL)
            continue;
        config_value v;
        memset(&v, 0, sizeof v);
        keyref r = { k, OWNER_ENGINE, i };
        if ((st = parse_value(k, k->def, &v, "", k->name, err)) != LS_OK)
            return st;
        store(cfg, &r, &v);
    }
    for (int owner = OWNER_MODEL; owner <= OWNER_TASK; owner++) {
        const ls_key *keys = owner == OWNER_MODEL ? m->keys : t->keys;
        size_t n = owner == OWNER_MODEL ? m->n_keys : t->n_keys;
        for (size_t i = 0; i < n; i++) {
            config_value *v = owner == OWNER_MODEL ? &cfg->mv[i] : &cfg->tv[i];
            if (keys[i].def != NULL &&
                (st = parse_value(&keys[i], keys[i].def, v, "", keys[i].name, err)) != LS_OK)
                return st;
        }
    }
    for (const ls_task_defaults *d = t->defaults; d != NULL && d->model != NULL; d++)
        if (strcmp(d->model, "*") == 0 || strcmp(d->model, m->name) == 0)
            if ((st = apply_settings(cfg, d->settings, t->name, 1, err)) != LS_OK)
                return st;
    /* Defaults are not choices: only what is set from here on is checked
     * for use. */
    cfg->set_engine = cfg->set_model = cfg->set_task = 0;
    return LS_OK;
}

int config_has_key(const ls_config *cfg, const char *key)
{
    keyref r;
    return lookup(cfg, key, &r);
}

int config_key_is_switch(const ls_config *cfg, const char *key)
{
    keyref r;
    return lookup(cfg, key, &r) && r.k->type == LS_KEY_SWITCH;
}

int config_key_is_internal(const char *key)
{
    char name[64];
    if (strlen(key) >= sizeof name)
        return 0;
    normalise(name, sizeof name, key);
    return strcmp(name, "data_hash") == 0 || strcmp(name, "format") == 0 || strcmp(name, "init_hash") == 0;
}

/* Which other model or task has a key, for the message about an unknown one. */
static const char *owner_of(const char *name, char *buf, size_t cap)
{
    size_t slot;
    for (size_t i = 0; ls_model_at(i) != NULL; i++)
        if (find_in(ls_model_at(i)->keys, ls_model_at(i)->n_keys, name, &slot)) {
            snprintf(buf, cap, "model %s", ls_model_at(i)->name);
            return buf;
        }
    for (size_t i = 0; ls_task_at(i) != NULL; i++)
        if (find_in(ls_task_at(i)->keys, ls_task_at(i)->n_keys, name, &slot)) {
            snprintf(buf, cap, "task %s", ls_task_at(i)->name);
            return buf;
        }
    return NULL;
}

ls_status config_set(ls_config *cfg, const char *key, const char *value, int flag_style, ls_err *err)
{
    const char *dash = flag_style ? "--" : "";
    keyref r;
    if (!lookup(cfg, key, &r)) {
        char name[64], who[64];
        normalise(name, sizeof name, key);
        if (owner_of(name, who, sizeof who) != NULL)
            return ls_fail(err, LS_EINVAL, "%s%s: unknown %s for model %s (a setting of %s)", dash, key,
                           flag_style ? "flag" : "config key", cfg->model, who);
        return ls_fail(err, LS_EINVAL, "%s%s: unknown %s", dash, key, flag_style ? "flag" : "config key");
    }
    char shown[64];
    snprintf(shown, sizeof shown, "%s", r.k->name);
    if (flag_style)
        for (char *p = shown; *p; p++)
            if (*p == '_')
                *p = '-';
    if (r.owner == OWNER_ENGINE && (strcmp(r.k->name, "task") == 0 || strcmp(r.k->name, "model") == 0)) {
        /* The task and model choose every default: they are set first, by
         * config_defaults, and cannot change under the other keys. */
        const char *now = r.k->name[0] == 't' ? cfg->task : cfg->model;
        if (strcmp(value, now) != 0)
            return ls_fail(err, LS_EINVAL, "%s%s: '%s' cannot replace '%s' here (it is chosen first)", dash, shown,
                           value, now);
        return LS_OK;
    }
    if (r.owner == OWNER_SOURCE) {
        /* Where the data are: any non-empty text that fits, one line. */
        size_t n = strlen(value);
        if (n == 0 || n >= LS_SOURCE_MAX || strchr(value, '\n') != NULL)
            return ls_fail(err, LS_EINVAL, "%s%s: needs a value of 1 to %d characters on one line", dash, shown,
                           LS_SOURCE_MAX - 1);
        memcpy(cfg->src[r.slot], value, n + 1);
        return LS_OK;
    }
    config_value v;
    load(cfg, &r, &v);
    int was_on = r.k->type == LS_KEY_SWITCH && v.u == 1;
    ls_status st = parse_value(r.k, value, &v, dash, shown, err);
    if (st != LS_OK)
        return st;
    /* A task's variant (the asynchronous checkerboard) is its own set of
     * defaults, applied when its switch turns on, before the other keys. */
    const ls_task_desc *t = cfg->task_desc;
    if (t != NULL && t->switch_key != NULL && strcmp(t->switch_key, r.k->name) == 0 && v.u == 1 && !was_on &&
        (st = apply_settings(cfg, t->switch_settings, t->name, 0, err)) != LS_OK)
        return st;
    store(cfg, &r, &v);
    uint32_t *mask = r.owner == OWNER_ENGINE ? &cfg->set_engine : r.owner == OWNER_MODEL ? &cfg->set_model
                                                                                        : &cfg->set_task;
    *mask |= UINT32_C(1) << r.slot;
    return LS_OK;
}

/* A key that was set but does not apply would be silently left out of the
 * canonical text: the run would not be what was asked for. */
static ls_status check_unused(const ls_config *cfg, ls_err *err)
{
    for (int owner = OWNER_ENGINE; owner <= OWNER_TASK; owner++) {
        const uint32_t mask = owner == OWNER_ENGINE ? cfg->set_engine
                            : owner == OWNER_MODEL  ? cfg->set_model : cfg->set_task;
        for (size_t i = 0; i < 32; i++) {
            if (!(mask >> i & 1))
                continue;
            const ls_key *k = owner == OWNER_ENGINE ? &ENGINE[i].key
                            : owner == OWNER_MODEL  ? &cfg->model_desc->keys[i] : &cfg->task_desc->keys[i];
            if (!applies(cfg, k))
                return ls_fail(err, LS_EINVAL, "%s: set, but this run does not use it (it applies only with %s%s)",
                               k->name, k->only_if, strchr(k->only_if, '=') ? "" : "=1");
        }
    }
    return LS_OK;
}

ls_status config_validate(const ls_config *cfg, ls_err *err)
{
    const ls_task_desc *t = cfg->task_desc;
    const ls_model_desc *m = cfg->model_desc;
    if (t == NULL || m == NULL)
        return ls_fail(err, LS_EINVAL, "task: the config names no task and model");
    if (!pairs(t, m)) {
        char names[256];
        config_task_models(t, " or ", names, sizeof names);
        return ls_fail(err, LS_EINVAL, "model: '%s' does not train task '%s' (it takes %s)", m->name, t->name, names);
    }
    if (cfg->batch == 0)
        return ls_fail(err, LS_EINVAL, "batch: must be at least 1");
    if (cfg->format != CONFIG_FORMAT)
        return ls_fail(err, LS_EINVAL, "format: %d is not supported (this engine writes %d)", cfg->format,
                       CONFIG_FORMAT);
    ls_status st = check_unused(cfg, err);
    if (st != LS_OK)
        return st;
    if (config_has_key(cfg, "leaf")) {
        /* A leaf must be a subtree of the tree over atoms. */
        const int64_t leaf = ls_config_int(cfg, "leaf");
        if (leaf % LS_ATOM != 0 || ((leaf / LS_ATOM) & (leaf / LS_ATOM - 1)) != 0)
            return ls_fail(err, LS_EINVAL, "leaf: %lld is not %d times a power of two (%d, %d, %d, ...)", (long long)leaf,
                           LS_ATOM, LS_ATOM, 2 * LS_ATOM, 4 * LS_ATOM);
    }
    /* A cosine schedule decays from lr to lr_min: an lr_min above lr would
     * make it climb, which no one asks for by that name. */
    if (strcmp(cfg->lr_schedule, "cosine") == 0 && cfg->lr_min > cfg->lr)
        return ls_fail(err, LS_EINVAL, "lr_min: %g is above lr (%g); the cosine schedule decays from lr to lr_min",
                       (double)cfg->lr_min, (double)cfg->lr);
    if (strcmp(cfg->lr_schedule, "cosine") == 0 && cfg->decay_steps <= cfg->warmup)
        return ls_fail(err, LS_EINVAL, "decay_steps: %d must be greater than warmup (%d)", cfg->decay_steps,
                       cfg->warmup);
    return m->check != NULL ? m->check(cfg, err) : LS_OK;
}

/* ---- canonical text ------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(((const keyref *)a)->k->name, ((const keyref *)b)->k->name);
}

/* Every key of cfg that applies, sorted by name. */
static size_t applying_keys(const ls_config *cfg, keyref *out)
{
    size_t n = 0;
    for (size_t i = 0; i < N_ENGINE; i++) {
        const keyref r = { &ENGINE[i].key, OWNER_ENGINE, i };
        if (in_text(cfg, &r))
            out[n++] = r;
    }
    for (size_t i = 0; cfg->model_desc != NULL && i < cfg->model_desc->n_keys; i++)
        if (applies(cfg, &cfg->model_desc->keys[i]))
            out[n++] = (keyref){ &cfg->model_desc->keys[i], OWNER_MODEL, i };
    for (size_t i = 0; cfg->task_desc != NULL && i < cfg->task_desc->n_keys; i++)
        if (applies(cfg, &cfg->task_desc->keys[i]))
            out[n++] = (keyref){ &cfg->task_desc->keys[i], OWNER_TASK, i };
    qsort(out, n, sizeof *out, by_name);
    return n;
}

int config_key_is_setting(const char *key)
{
    return strcmp(key, "leaf") == 0;
}

size_t config_text(const ls_config *cfg, char *buf, size_t len)
{
    keyref keys[N_ENGINE + 2 * CONFIG_MAX_KEYS];
    size_t n = applying_keys(cfg, keys), at = 0;
    if (len > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (config_key_is_setting(keys[i].k->name))
            continue;
        config_value v;
        load(cfg, &keys[i], &v);
        at = append(buf, len, at, "%s=", keys[i].k->name);
        at = format_value(keys[i].k, &v, buf, len, at);
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
    /* A task or model this process has not registered: the text may be
     * sound, written by a program that registered it (ls_register_task),
     * so it is not a malformed record but code this process lacks. */
    if (ls_task_find(task) == NULL)
        return ls_fail(err, LS_ENOTFOUND, "%s: task '%s' is not in this program (a task a program adds with "
                       "ls_register_task: open the run from that program)", what, task);
    if (has_model && ls_model_find(model) == NULL)
        return ls_fail(err, LS_ENOTFOUND, "%s: model '%s' is not in this program (a model a program adds with "
                       "ls_register_model: open the run from that program)", what, model);
    ls_status st = config_defaults(cfg, task, has_model ? model : NULL, &e);
    if (st != LS_OK)
        return ls_fail(err, LS_EFORMAT, "%s: %s", what, e.msg);
    /* A quiet key is left out of the text at the engine's default, so its
     * absence means that default, not a task's setting for the model (the
     * cnn's lr_schedule=cosine on fashion-mnist). */
    for (size_t i = 0; i < N_ENGINE; i++) {
        if (!ENGINE[i].quiet_default)
            continue;
        const keyref r = { &ENGINE[i].key, OWNER_ENGINE, i };
        config_value d;
        memset(&d, 0, sizeof d);
        if (parse_value(r.k, r.k->def, &d, "", r.k->name, &e) != LS_OK)
            return ls_fail(err, LS_EFORMAT, "%s: %s", what, e.msg);
        store(cfg, &r, &d);
    }
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

size_t config_help(const ls_config *cfg, char *buf, size_t len)
{
    keyref keys[N_ENGINE + 2 * CONFIG_MAX_KEYS + LS_MAX_SOURCES + 1];
    size_t n = 0, at = 0;
    if (len > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < N_ENGINE; i++)
        keys[n++] = (keyref){ &ENGINE[i].key, OWNER_ENGINE, i };
    for (size_t i = 0; i < cfg->model_desc->n_keys; i++)
        keys[n++] = (keyref){ &cfg->model_desc->keys[i], OWNER_MODEL, i };
    for (size_t i = 0; i < cfg->task_desc->n_keys; i++)
        keys[n++] = (keyref){ &cfg->task_desc->keys[i], OWNER_TASK, i };
    for (size_t i = 0; i < cfg->task_desc->n_sources; i++)
        keys[n++] = (keyref){ &cfg->task_desc->sources[i], OWNER_SOURCE, i };
    keys[n++] = (keyref){ &INIT_SOURCE, OWNER_SOURCE, CONFIG_INIT_SOURCE };
    qsort(keys, n, sizeof *keys, by_name);
    for (size_t i = 0; i < n; i++) {
        const ls_key *k = keys[i].k;
        if (config_key_is_internal(k->name) || strcmp(k->name, "task") == 0 || strcmp(k->name, "model") == 0)
            continue;
        char flag[64], value[256];
        snprintf(flag, sizeof flag, "--%s", k->name);
        for (char *p = flag; *p; p++)
            if (*p == '_')
                *p = '-';
        if (keys[i].owner == OWNER_SOURCE) {
            /* The path is a source (where the file is), the file's hash is
             * in the config (init_hash=, as `lockstep show` prints it). */
            at = append(buf, len, at, "  %-16s %s (%s: its path is recorded with the run, not part of its config)\n",
                        flag, k->help,
                        keys[i].slot == CONFIG_INIT_SOURCE ? "the file's XXH3 is init_hash in the config"
                                                           : "where the data are");
            continue;
        }
        config_value v;
        load(cfg, &keys[i], &v);
        size_t vl = format_value(k, &v, value, sizeof value, 0);
        if (k->type == LS_KEY_FLOAT)   /* %g reads better than %a in help */
            vl = (size_t)snprintf(value, sizeof value, "%g", (double)v.f);
        (void)vl;
        /* What it takes: its choices or its range. */
        char allowed[160] = "";
        if (k->type == LS_KEY_TEXT && k->choices != NULL)
            snprintf(allowed, sizeof allowed, "; one of: %s", k->choices);
        else if (strcmp(k->name, "leaf") == 0)   /* config_validate takes only 16 times a power of two */
            snprintf(allowed, sizeof allowed, "; %d, %d, %d, ... up to %.10g", LS_ATOM, 2 * LS_ATOM, 4 * LS_ATOM, k->hi);
        else if (k->type == LS_KEY_INT || k->type == LS_KEY_FLOAT)
            snprintf(allowed, sizeof allowed, "; %.10g..%.10g", k->lo, k->hi);
        else if (k->type == LS_KEY_LIST)
            snprintf(allowed, sizeof allowed, "; widths %.10g..%.10g", k->lo, k->hi);
        at = append(buf, len, at, "  %-16s %s (%s%s%s)%s%s\n", flag, k->help,
                    k->type == LS_KEY_SWITCH ? "" : "default ", k->type == LS_KEY_SWITCH ? (v.u ? "on" : "off") : value,
                    allowed, k->only_if ? "; with " : "", k->only_if ? k->only_if : "");
    }
    return at;
}

int64_t config_task_steps(const ls_task_desc *t, const char *model)
{
    int64_t steps = t != NULL && t->default_steps > 0 ? t->default_steps : 200;
    /* A "steps=N" line of the task's defaults for this model (or "*"), the
     * last one that applies: checked by config_defaults when a config is made. */
    for (const ls_task_defaults *d = t != NULL ? t->defaults : NULL; d != NULL && d->model != NULL; d++) {
        if (strcmp(d->model, "*") != 0 && strcmp(d->model, model) != 0)
            continue;
        for (const char *p = d->settings; p != NULL && (p = strstr(p, "steps=")) != NULL; p += 6)
            if (p == d->settings || p[-1] == '\n')
                steps = strtoll(p + 6, NULL, 10);
    }
    return steps;
}

int64_t config_default_steps(const ls_config *cfg)
{
    return config_task_steps(cfg->task_desc, cfg->model);
}

ls_status config_check_keys(const char *owner, const ls_key *keys, size_t n, ls_err *err)
{
    if (n > CONFIG_MAX_KEYS)
        return ls_fail(err, LS_EINVAL, "%s: %zu keys (at most %d)", owner, n, CONFIG_MAX_KEYS);
    if (n > 0 && keys == NULL)
        return ls_fail(err, LS_EINVAL, "%s: n_keys is %zu but keys is NULL", owner, n);
    for (size_t i = 0; i < n; i++) {
        const ls_key *k = &keys[i];
        size_t len = k->name ? strlen(k->name) : 0;
        if (len == 0 || len > 31 || strspn(k->name, "abcdefghijklmnopqrstuvwxyz0123456789_") != len)
            return ls_fail(err, LS_EINVAL, "%s: key %zu: name '%s' is not 1 to 31 of [a-z0-9_]", owner, i,
                           k->name ? k->name : "(null)");
        for (size_t j = 0; j < N_ENGINE; j++)
            if (strcmp(ENGINE[j].key.name, k->name) == 0)
                return ls_fail(err, LS_EINVAL, "%s: key '%s' is one of the engine's", owner, k->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(keys[j].name, k->name) == 0)
                return ls_fail(err, LS_EINVAL, "%s: key '%s' is declared twice", owner, k->name);
        if ((unsigned)k->type > LS_KEY_LIST)
            return ls_fail(err, LS_EINVAL, "%s: key '%s' has an unknown type", owner, k->name);
        config_value v;
        ls_err e;
        if (k->def != NULL && parse_value(k, k->def, &v, "", k->name, &e) != LS_OK)
            return ls_fail(err, LS_EINVAL, "%s: key '%s': its default: %s", owner, k->name, e.msg);
        if (k->help == NULL)
            return ls_fail(err, LS_EINVAL, "%s: key '%s' has no help line", owner, k->name);
    }
    return LS_OK;
}

size_t config_source_text(const ls_config *cfg, char *buf, size_t len)
{
    size_t at = 0;
    if (len > 0)
        buf[0] = '\0';
    for (size_t i = 0; cfg->task_desc != NULL && i < cfg->task_desc->n_sources; i++)
        if (cfg->src[i][0] != '\0')
            at = append(buf, len, at, "%s=%s\n", cfg->task_desc->sources[i].name, cfg->src[i]);
    if (cfg->src[CONFIG_INIT_SOURCE][0] != '\0')
        at = append(buf, len, at, "%s=%s\n", INIT_SOURCE.name, cfg->src[CONFIG_INIT_SOURCE]);
    return at;
}

const char *ls_config_source(const ls_config *cfg, const char *key)
{
    keyref r;
    return lookup(cfg, key, &r) && r.owner == OWNER_SOURCE ? cfg->src[r.slot] : "";
}

/* ---- the public config ------------------------------------------------------ */

ls_status ls_config_create(ls_config **out, const char *task, const char *model, ls_err *err)
{
    *out = NULL;
    ls_config *cfg = malloc(sizeof *cfg);
    if (cfg == NULL)
        return ls_fail(err, LS_ENOMEM, "config: out of memory");
    ls_status st = config_defaults(cfg, task != NULL ? task : "", model, err);
    if (st != LS_OK) {
        free(cfg);
        return st;
    }
    *out = cfg;
    return LS_OK;
}

ls_status ls_config_parse(ls_config **out, const char *text, ls_err *err)
{
    *out = NULL;
    ls_config *cfg = malloc(sizeof *cfg);
    if (cfg == NULL)
        return ls_fail(err, LS_ENOMEM, "config: out of memory");
    ls_status st = config_parse_text(cfg, text, "config", err);
    if (st != LS_OK) {
        free(cfg);
        return st;
    }
    *out = cfg;
    return LS_OK;
}

void ls_config_destroy(ls_config *cfg)
{
    free(cfg);
}

ls_status ls_config_set(ls_config *cfg, const char *key, const char *value, ls_err *err)
{
    return config_set(cfg, key, value, 0, err);
}

ls_status ls_config_check(const ls_config *cfg, ls_err *err)
{
    return config_validate(cfg, err);
}

size_t ls_config_text(const ls_config *cfg, char *buf, size_t len)
{
    return config_text(cfg, buf, len);
}

uint64_t ls_config_hash(const ls_config *cfg)
{
    return config_hash(cfg);
}

static int read_key(const ls_config *cfg, const char *key, config_value *v, ls_key_type *type)
{
    keyref r;
    if (!lookup(cfg, key, &r) || !applies(cfg, r.k))
        return 0;
    load(cfg, &r, v);
    *type = r.k->type;
    return 1;
}

int64_t ls_config_int(const ls_config *cfg, const char *key)
{
    config_value v;
    ls_key_type t;
    return read_key(cfg, key, &v, &t) && (t == LS_KEY_INT || t == LS_KEY_SWITCH || t == LS_KEY_U64) ? (int64_t)v.u
                                                                                                    : 0;
}

uint64_t ls_config_u64(const ls_config *cfg, const char *key)
{
    config_value v;
    ls_key_type t;
    return read_key(cfg, key, &v, &t) && (t == LS_KEY_INT || t == LS_KEY_SWITCH || t == LS_KEY_U64) ? v.u : 0;
}

float ls_config_float(const ls_config *cfg, const char *key)
{
    config_value v;
    ls_key_type t;
    return read_key(cfg, key, &v, &t) && t == LS_KEY_FLOAT ? v.f : 0.0f;
}

const char *ls_config_str(const ls_config *cfg, const char *key)
{
    keyref r;
    if (!lookup(cfg, key, &r) || !applies(cfg, r.k) || r.k->type != LS_KEY_TEXT)
        return "";
    if (r.owner == OWNER_ENGINE)
        return (const char *)cfg + ENGINE[r.slot].offset;
    return r.owner == OWNER_MODEL ? cfg->mv[r.slot].s : cfg->tv[r.slot].s;
}

size_t ls_config_list(const ls_config *cfg, const char *key, const size_t **values)
{
    keyref r;
    *values = NULL;
    if (!lookup(cfg, key, &r) || !applies(cfg, r.k) || r.k->type != LS_KEY_LIST || r.owner == OWNER_ENGINE)
        return 0;
    const config_value *v = r.owner == OWNER_MODEL ? &cfg->mv[r.slot] : &cfg->tv[r.slot];
    *values = v->list;
    return v->n;
}
