/* config.h — the run configuration and its canonical text (DESIGN.md §3.1).
 *
 * The config is every setting that can change some θ_t. Its canonical text is
 * one key=value per line, keys sorted, integers in decimal, floats in C's %a
 * hex form, only the keys that apply (an SGD run has no beta1). Two runs with
 * equal texts are comparable step by step. Settings that cannot change θ_t
 * (threads, database, name, step count, intervals) are not here.
 *
 * Every key can be set from text with config_set, so the command line, golden
 * files and the record share one parser. Frozen: the keys and their meaning
 * for format=1; a change bumps CONFIG_FORMAT.
 */
#ifndef LS_CONFIG_H
#define LS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define CONFIG_FORMAT 1
#define CONFIG_MAX_HIDDEN 8
#define CONFIG_MAX_LAYERS 48
#define CONFIG_MAX_PERCEPTION 8
#define CONFIG_TEXT_MAX 4096

typedef struct {
    char model[16];              /* "mlp", "logic", "logic-ca" */
    char task[16];               /* "fashion-mnist", "teacher", "gol", "checkerboard" */
    size_t hidden[CONFIG_MAX_HIDDEN];
    size_t n_hidden;
    uint64_t seed;
    size_t batch;                /* samples per step */
    size_t leaf;                 /* samples per leaf */
    char optimizer[8];           /* "sgd", "adamw" */
    float lr, momentum, beta1, beta2, eps, weight_decay;
    float clip;                  /* element-wise gradient clip; 0 = none */
    char reduce[12];             /* "tree"; "unordered" only for benchmarks */
    uint64_t data_hash;          /* identity of the task's data (set by the trainer) */
    int format;                  /* CONFIG_FORMAT */

    /* logic and logic-ca: gate layers (logic-ca: the update network) */
    size_t layers[CONFIG_MAX_LAYERS];   /* widths; text form "128x17,64,32" */
    size_t n_layers;
    float residual;              /* init: logit 3 (gate A) = residual, others 0; 0 = Gaussian logits */
    char wiring[8];              /* logic: "random" or "unique" */
    float tau;                   /* logic: GroupSum temperature */
    size_t bits;                 /* logic on images: thresholds per pixel, at i/(bits+1) */
    /* logic-ca */
    size_t channels, kernels;
    size_t perception[CONFIG_MAX_PERCEPTION];   /* kernel layer widths, e.g. 8,4,2,1 */
    size_t n_perception;
    size_t ca_steps;             /* CA steps per rollout */
    size_t grid;                 /* grid side (cells) */
    int periodic;                /* 1: wrap-around borders, 0: zero padding */
    int async;                   /* 1: each cell fires with probability fire_rate per step */
    float fire_rate;
    size_t parts;                /* R: parts (blocks of cell rows) per sample */
} ls_config;

/* Tasks and their default models. */
const char *config_default_model(const char *task);   /* NULL for an unknown task */

/* The defaults of a task ("fashion-mnist", "teacher", "gol", "checkerboard")
 * and model (NULL = the task's default; "mlp", "logic", "logic-ca"). Unknown
 * names and pairs that do not go together are LS_EINVAL naming them. */
ls_status config_defaults(ls_config *cfg, const char *task, const char *model, ls_err *err);

/* Set one key from text. Unknown keys and bad values are LS_EINVAL with a line
 * naming the key and the value. flag_style: 1 names the key "--key" in the
 * message (and accepts '-' for '_'), 0 names it "key". */
ls_status config_set(ls_config *cfg, const char *key, const char *value, int flag_style, ls_err *err);
/* 1 when key names a config key (accepts '-' for '_'). */
int config_has_key(const char *key);
/* 1 when key is an on/off switch (0 or 1): on the command line "--key" alone means 1. */
int config_key_is_switch(const char *key);

/* Cross-field checks (e.g. widths, optimiser); LS_EINVAL naming the field. */
ls_status config_validate(const ls_config *cfg, ls_err *err);

/* The canonical text; returns its length (< CONFIG_TEXT_MAX). */
size_t config_text(const ls_config *cfg, char *buf, size_t len);
uint64_t config_hash(const ls_config *cfg);   /* XXH3_64bits of the canonical text */

/* Parse canonical text (key=value lines) over cfg: task and model first, then
 * every key. "what" names the source in errors. */
ls_status config_parse_text(ls_config *cfg, const char *text, const char *what, ls_err *err);

/* One line per key for --help: "  --key VALUE   help (default)". */
size_t config_help(char *buf, size_t len);

#endif
