/* config.h — the run configuration and its canonical text (docs/formats.md, the canonical config text).
 *
 * The config is every setting that can change some θ_t. Its keys come from
 * three places: the engine's own (seed, batch, the optimiser and its
 * hyperparameters, reduce, data_hash, format — typed fields of ls_config),
 * the model's descriptor and the task's descriptor (ls_key tables; their
 * values live in ls_config's value slots, in descriptor order). Defaults,
 * parsing, validation, --help and the canonical text are all generated from
 * those tables, so a model or task added to the registry needs nothing here.
 *
 * Canonical text: one key=value per line, keys sorted by strcmp, integers in
 * decimal, floats in C's %a hex form, only the keys that apply (an SGD run
 * has no beta1; a key with only_if only while its condition holds). Two runs
 * with equal texts are comparable step by step. Frozen for format=1: the
 * text of every built-in key; a change bumps LS_CONFIG_FORMAT.
 *
 * ls_config is a plain value (copy it with =); it points at the registry's
 * descriptors, which live as long as the process.
 */
#ifndef LS_CONFIG_H
#define LS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

#define CONFIG_FORMAT LS_CONFIG_FORMAT
#define CONFIG_MAX_KEYS 32          /* keys of one model, or of one task */
#define CONFIG_TEXT_MAX 4096
#define CONFIG_INIT_SOURCE LS_MAX_SOURCES   /* cfg->src slot of the engine's source "init" */

/* The value of one descriptor key. */
typedef struct {
    uint64_t u;                     /* INT, U64, SWITCH */
    float f;                        /* FLOAT */
    char s[LS_TEXT_MAX];            /* TEXT */
    size_t n;                       /* LIST: entries */
    size_t list[LS_LIST_MAX];
} config_value;

struct ls_config {
    const ls_model_desc *model_desc;
    const ls_task_desc *task_desc;
    char model[16];                 /* model_desc->name */
    char task[16];                  /* task_desc->name */
    /* The engine's keys. */
    uint64_t seed;
    size_t batch;                   /* samples per step */
    char optimizer[8];              /* "sgd", "adamw" */
    float lr, momentum, beta1, beta2, eps, weight_decay;
    float clip;                     /* element-wise gradient clip; 0 = none */
    char reduce[12];                /* "tree"; "unordered" only for benchmarks */
    uint64_t data_hash;             /* identity of the task's data (set by the trainer) */
    int format;                     /* CONFIG_FORMAT */
    /* Keys added after format 1, left out of the canonical text at their
     * defaults (docs/contract.md, Schedules and clipping). */
    char lr_schedule[12];           /* "constant", "cosine", "step" */
    int warmup, decay_steps;        /* cosine: warmup steps, the step where lr_min is reached */
    float lr_min;                   /* cosine: the learning rate from decay_steps on */
    float lr_gamma;                 /* step: factor of each decay */
    int lr_step;                    /* step: steps between decays */
    float clip_norm;                /* global-norm clip; 0 = none */
    char decay_groups[12];          /* "all", "weights" (no decay on the tensors the model marks) */
    uint64_t init_hash;             /* XXH3_64 of the starting weights' file (source "init"); 0 = none */
    /* The model's and the task's keys, in descriptor order. */
    config_value mv[CONFIG_MAX_KEYS];
    config_value tv[CONFIG_MAX_KEYS];
    /* Keys set after the defaults (bit = slot), so validation can refuse one
     * the run does not use (--beta1 with sgd) instead of dropping it. */
    uint32_t set_engine, set_model, set_task;
    /* The task's sources (where its data are), in descriptor order, then
     * the engine's own (CONFIG_INIT_SOURCE: the starting weights' file):
     * not part of the canonical text. */
    char src[LS_MAX_SOURCES + 1][LS_SOURCE_MAX];
};

/* The task's default model (NULL for an unknown task). */
const char *config_default_model(const char *task);

/* The defaults of task and model (NULL = the task's default): the engine's,
 * the model's, then the task's settings for the model. Unknown names and
 * pairs that do not go together are LS_EINVAL naming them. */
ls_status config_defaults(ls_config *cfg, const char *task, const char *model, ls_err *err);

/* Set one key from text. Unknown keys and bad values are LS_EINVAL with a line
 * naming the key and the value. flag_style: 1 names the key "--key" in the
 * message (and accepts '-' for '_'), 0 names it "key". */
ls_status config_set(ls_config *cfg, const char *key, const char *value, int flag_style, ls_err *err);
/* 1 when key names a key of cfg's engine, model or task (accepts '-' for '_'). */
int config_has_key(const ls_config *cfg, const char *key);
/* 1 when that key is an on/off switch: on the command line "--key" alone means 1. */
int config_key_is_switch(const ls_config *cfg, const char *key);
/* 1 when key is data_hash, init_hash or format: set by the engine, not by a flag. */
int config_key_is_internal(const char *key);
/* 1 for a key that only chooses how the work is cut (leaf): it is a key
 * like the others for parsing and --help, but stays out of the canonical
 * text, since no bit depends on it (the atoms of include/lockstep.h). */
int config_key_is_setting(const char *key);

/* Cross-field checks (pairing, format, a key set that the run does not use,
 * then the model's own check); LS_EINVAL naming the field. */
ls_status config_validate(const ls_config *cfg, ls_err *err);

/* The canonical text; returns its full length (written up to len - 1). */
size_t config_text(const ls_config *cfg, char *buf, size_t len);
uint64_t config_hash(const ls_config *cfg);   /* XXH3_64bits of the canonical text */

/* Parse canonical text (key=value lines) into cfg: task and model first
 * (their defaults), then every key. "what" names the source in errors.
 * LS_ENOTFOUND when the task or model is not registered in this process
 * (a program's own, ls_register_task/ls_register_model); LS_EFORMAT for
 * text that does not parse. */
ls_status config_parse_text(ls_config *cfg, const char *text, const char *what, ls_err *err);

/* --help text: "  --key VALUE   help (default)" for the engine's keys and
 * those of cfg's model and task. */
size_t config_help(const ls_config *cfg, char *buf, size_t len);

/* The models that train task t (either descriptor naming the other), in
 * registry order, joined by sep: "mlp or logic". */
void config_task_models(const ls_task_desc *t, const char *sep, char *out, size_t cap);

/* The sources as "key=value" lines, the task's then "init" ("" when none is given);
 * returns the full length. config_set takes such lines back. */
size_t config_source_text(const ls_config *cfg, char *buf, size_t len);

/* Steps a run of cfg's task takes when none are asked for. */
/* The default steps of `model` on task t: a "steps=N" line of the task's
 * defaults for it, else the task's default_steps (200 when it has none). */
int64_t config_task_steps(const ls_task_desc *t, const char *model);
int64_t config_default_steps(const ls_config *cfg);

/* Check a descriptor's key table (registry); LS_EINVAL naming the key. */
ls_status config_check_keys(const char *owner, const ls_key *keys, size_t n, ls_err *err);

#endif
