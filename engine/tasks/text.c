/* text.c — the `text` task: next-byte prediction on any file of bytes
 * (`--file F [--val-file V] [--context T]`).
 *
 * A sample is a window of T consecutive bytes (the task key `context`), its
 * label the byte after it: 256 classes. Every window of the training text
 * is a sample (stride 1): a text of L bytes gives L − T samples, window i =
 * bytes [i, i + T), label byte i + T. The validation windows start every S
 * bytes (the key `val_stride`, default 1): (L − T − 1) / S + 1 of them,
 * window i = bytes [i·S, i·S + T), label byte i·S + T (S = T: a token model,
 * trained at every position, predicts each validation byte once).
 *
 * Features: the window's bytes as the data set's byte features (x8), in
 * text order, so a model that reads features as floats sees byte v as
 * v/255 (every byte feature's encoding: mlp and linear train on it as they
 * train on pixels), and a token model reads x8's bytes as token ids; a
 * float feature f given to a model's scores (lockstep sample, predict) is
 * the byte lrintf(f · 255), which gives back v for every v/255.0f.
 *
 * Training text: F. Validation text (the data set's test split): V when
 * given, else the last 10% of F — F's first L − L/10 bytes train, the rest
 * (L/10 bytes, integer division) validates, each split's windows lying
 * inside its own bytes. A text shorter than T + 1 bytes (so with no
 * window), an empty file, a directory or an unreadable file: LS_EINVAL /
 * LS_EIO naming the file.
 *
 * The data's identity (data_hash) = XXH3_64bits of: XXH3_64bits of F's
 * bytes, then of V's bytes (only with --val-file), then T, then S (only
 * when it is not 1), each 8 bytes LE; so a changed byte, another context,
 * stride or validation file is another config.
 *
 * Evaluation: the model's figures on the validation windows (test_loss, the
 * mean cross-entropy in nats, and test_acc, docs/formats.md), with the loss
 * first — it is the run's figure — and its bits per byte beside it:
 * test_bpb = test_loss / ln 2 (ln 2 rounded once to binary64), one
 * division, as text_figures writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/file.h"
#include "engine/data/dataset.h"

/* The models, the default first: the byte-level decoder. */
#define TEXT_MODELS "gpt mlp linear"

/* The decoder's settings (docs/models.md): windows of 64 bytes, trained
 * at every position; validation on the windows every 64 bytes, so each
 * validation byte is predicted once; AdamW with a linear warmup and a
 * cosine decay over the task's 500 steps. */
#define GPT_DEFAULTS \
    "context=64\nval_stride=64\nbatch=32\nlr=0.003\nlr_schedule=cosine\nwarmup=50\ndecay_steps=500\n" \
    "lr_min=0.0003\n"

/* A file is read whole; the windows take T bytes each. */
#define TEXT_MAX_FILE ((size_t)1 << 30)
#define TEXT_MAX_WINDOW_BYTES ((size_t)1 << 32)

typedef struct {
    const char *path;
    unsigned char *buf;
    size_t len;
} text_file;

static ls_status text_read(text_file *f, const char *path, ls_err *err)
{
    f->path = path;
    ls_status st = file_read_all(path, TEXT_MAX_FILE, &f->buf, &f->len, err);
    if (st != LS_OK)
        return st;
    if (f->len == 0)
        return ls_fail(err, LS_EINVAL, "%s: empty file; task text needs a file of text", path);
    return LS_OK;
}

/* Windows of bytes [lo, hi) of f, one starting every S bytes: *n of
 * them; LS_EINVAL naming the file when there is none. what: "" or " (its
 * last 10%, the validation text)". */
static ls_status text_windows(const text_file *f, size_t lo, size_t hi, size_t T, size_t S, const char *what,
                              size_t *n, ls_err *err)
{
    const size_t len = hi - lo;
    if (len < T + 1)
        return ls_fail(err, LS_EINVAL, "%s: %zu bytes%s: shorter than context %zu + 1, so no window (a longer "
                       "text or a smaller --context)", f->path, len, what, T);
    if (len - T > UINT32_MAX || (len - T) > TEXT_MAX_WINDOW_BYTES / T)
        return ls_fail(err, LS_EINVAL, "%s: %zu windows of %zu bytes: too many (at most %zu bytes of windows and "
                       "%u windows)", f->path, len - T, T, TEXT_MAX_WINDOW_BYTES, UINT32_MAX);
    *n = (len - T - 1) / S + 1;
    return LS_OK;
}

static void text_fill(const unsigned char *bytes, size_t n, size_t T, size_t S, uint8_t *x, uint8_t *y)
{
    for (size_t i = 0; i < n; i++) {
        memcpy(x + i * T, bytes + i * S, T);
        y[i] = bytes[i * S + T];
    }
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static ls_status text_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    *out = NULL;
    const char *path = ls_config_source(cfg, "file"), *vpath = ls_config_source(cfg, "val_file");
    const size_t T = (size_t)ls_config_int(cfg, "context"), S = (size_t)ls_config_int(cfg, "val_stride");
    if (path[0] == '\0')
        return ls_fail(err, LS_EINVAL, "task text: needs --file FILE (the text to train on)");
    text_file f = { 0 }, v = { 0 };
    ls_status st = text_read(&f, path, err);
    if (st == LS_OK && vpath[0] != '\0')
        st = text_read(&v, vpath, err);
    size_t n_tr = 0, n_te = 0;
    const unsigned char *tr = f.buf, *te = NULL;
    if (st == LS_OK && v.buf != NULL) {
        st = text_windows(&f, 0, f.len, T, 1, "", &n_tr, err);
        if (st == LS_OK)
            st = text_windows(&v, 0, v.len, T, S, "", &n_te, err);
        te = v.buf;
    } else if (st == LS_OK) {
        const size_t cut = f.len - f.len / 10;
        st = text_windows(&f, 0, f.len, T, 1, "", &n_tr, err);   /* the whole file first: the plainer message */
        if (st == LS_OK)
            st = text_windows(&f, 0, cut, T, 1, " (its first 90%, the training text)", &n_tr, err);
        if (st == LS_OK)
            st = text_windows(&f, cut, f.len, T, S, " (its last 10%, the validation text)", &n_te, err);
        te = f.buf + cut;
    }
    ls_dataset *d = NULL;
    uint8_t *mem = NULL;
    if (st == LS_OK) {
        const size_t total = n_tr + n_te;
        d = calloc(1, sizeof *d);
        mem = d != NULL && total <= SIZE_MAX / (T + 1) ? malloc(total * (T + 1)) : NULL;
        if (mem == NULL)
            st = ls_fail(err, LS_ENOMEM, "%s: out of memory for %zu windows of %zu bytes", path, total, T);
    }
    if (st == LS_OK) {
        uint8_t *x = mem, *y = mem + (n_tr + n_te) * T;
        text_fill(tr, n_tr, T, 1, x, y);
        text_fill(te, n_te, T, S, x + n_tr * T, y + n_tr);
        snprintf(d->name, sizeof d->name, "%s", "text");
        d->n_classes = 256;
        d->train = (ls_split){ .n = n_tr, .dim = T, .x8 = x, .xf = NULL, .y = y };
        d->test = (ls_split){ .n = n_te, .dim = T, .x8 = x + n_tr * T, .xf = NULL, .y = y + n_tr };
        d->mem = mem;
        uint8_t hb[32];
        size_t at = 0;
        put64(hb + at, XXH3_64bits(f.buf, f.len));
        at += 8;
        if (v.buf != NULL) {
            put64(hb + at, XXH3_64bits(v.buf, v.len));
            at += 8;
        }
        put64(hb + at, (uint64_t)T);
        at += 8;
        if (S != 1) {
            put64(hb + at, (uint64_t)S);
            at += 8;
        }
        d->hash = XXH3_64bits(hb, at);
        *out = d;
    } else {
        free(mem);
        free(d);
    }
    free(f.buf);
    free(v.buf);
    return st;
}

/* The loss first (the run's figure), its bits per byte, then the rest. */
static void text_figures(const ls_config *cfg, ls_metric *m, size_t *n)
{
    (void)cfg;
    size_t at = *n;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(m[i].name, "test_loss") == 0)
            at = i;
    if (at == *n || *n >= LS_MAX_METRICS)
        return;
    ls_metric out[LS_MAX_METRICS];
    out[0] = m[at];
    snprintf(out[1].name, sizeof out[1].name, "%s", "test_bpb");
    out[1].value = m[at].value / 0.6931471805599453;   /* ln 2, rounded once to binary64 */
    size_t k = 2;
    for (size_t i = 0; i < *n; i++)
        if (i != at)
            out[k++] = m[i];
    memcpy(m, out, k * sizeof *m);
    *n = k;
}

static const ls_key text_keys[] = {
    { "context", LS_KEY_INT, "64", 1, 4096, NULL, NULL, "bytes a sample sees (T): the window before the byte it predicts",
      0 },
    { "val_stride", LS_KEY_INT, "1", 1, 1 << 20, NULL, NULL,
      "a validation window starts every S bytes (1: every window; gpt: its context, each byte once)", 0 },
};

static const ls_key text_sources[] = {
    { "file", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL, "the text to train on: any file of bytes", 0 },
    { "val_file", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL,
      "the validation text (default: the last 10% of --file)", 0 },
};

static const ls_task_defaults text_defaults[] = {
    { "*", "batch=64\n" },
    { "mlp", "lr=0.003\ncontext=16\n" },
    { "gpt", GPT_DEFAULTS },
    { NULL, NULL },
};

const ls_task_desc text_task = {
    .size = sizeof(ls_task_desc),
    .name = "text",
    .summary = "the next byte of any file of bytes from the T before it (--file F [--val-file V] [--context T])",
    .models = TEXT_MODELS,
    .default_steps = 500,
    .keys = text_keys,
    .n_keys = sizeof text_keys / sizeof text_keys[0],
    .defaults = text_defaults,
    .sources = text_sources,
    .n_sources = sizeof text_sources / sizeof text_sources[0],
    .load = text_load,
    .figures = text_figures,
};
