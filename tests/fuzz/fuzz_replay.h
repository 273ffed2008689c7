/* fuzz_replay.h — one input through one parser, with the checks every input
 * must pass. Shared by the libFuzzer targets (tests/fuzz/fuzz_*.c, built with
 * clang and sanitizers by tests/fuzz/fuzz.mk) and by the regression test
 * tests/test_fuzz_regress.c (built by the normal Makefile), so a saved crash
 * input is replayed through exactly the code that found it.
 *
 * Each fr_* function returns 0 when the input was handled as the parser's
 * contract says, or 1 with a line in why[] naming the broken rule. The rules:
 * the status is LS_OK or one of the codes the parser documents, an error comes
 * with a non-empty message, and what a parser accepts means one thing (the IDX
 * data ends where the header says; a parsed golden file written back and
 * parsed again gives the same rows; canonical config text read back gives the
 * same text; a checkpoint image re-encoded from its view gives the same
 * bytes). Everything allocated is freed, so ASan's leak check stays quiet.
 *
 * Static inline so that a file using only some of them builds warning-free.
 */
#ifndef LS_FUZZ_REPLAY_H
#define LS_FUZZ_REPLAY_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/config.h"
#include "engine/data/dataset.h"
#include "engine/data/idx.h"
#include "engine/data/safetensors.h"
#include "include/lockstep.h"
#include "record/checkpoint.h"
#include "record/golden.h"
#include "record/hash.h"

#define FR_WHY 600
#define FR_MAX_ARGS 256

__attribute__((format(printf, 2, 3)))
static inline int fr_fail(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, FR_WHY, fmt, ap);
    va_end(ap);
    return 1;
}

/* st must be LS_OK or one of allowed[0..n); an error needs a message. */
static inline int fr_status(const char *fn, ls_status st, const ls_err *e, const ls_status *allowed,
                            size_t n, char *why)
{
    if (st == LS_OK)
        return 0;
    int ok = 0;
    for (size_t i = 0; i < n; i++)
        if (st == allowed[i])
            ok = 1;
    if (!ok)
        return fr_fail(why, "%s returned status %d (%s), not a documented code", fn, (int)st,
                       ls_strerror(st));
    if (e->msg[0] == '\0' || strnlen(e->msg, sizeof e->msg) == sizeof e->msg)
        return fr_fail(why, "%s returned status %d (%s) with an empty or unterminated message", fn,
                       (int)st, ls_strerror(st));
    return 0;
}

/* ---------- IDX ---------- */

/* idx_parse with one requested magic; on success the data must be exactly
 * the bytes after the header and their count the product of the dimensions. */
static inline int fr_idx_magic(const uint8_t *buf, size_t len, uint32_t magic, char *why)
{
    static const ls_status allowed[] = { LS_EFORMAT, LS_EINVAL };
    uint32_t dims[3];
    const uint8_t *data = NULL;
    size_t data_len = 0;
    ls_err e;
    memset(&e, 0, sizeof e);
    ls_status st = idx_parse(buf, len, magic, dims, &data, &data_len, "fuzz.idx", &e);
    if (fr_status("idx_parse", st, &e, allowed, 2, why))
        return 1;
    uint32_t nd = magic & 0xffu;
    if (st != LS_OK) {
        if ((magic >> 8) == 0x08u && nd >= 1 && nd <= 3 && st == LS_EINVAL && buf != NULL)
            return fr_fail(why, "idx_parse: LS_EINVAL for the supported magic 0x%08x", (unsigned)magic);
        return 0;
    }
    if ((magic >> 8) != 0x08u || nd < 1 || nd > 3)
        return fr_fail(why, "idx_parse accepted the unsupported magic 0x%08x", (unsigned)magic);
    size_t hdr = 4 + 4 * (size_t)nd;
    /* Recompute the product in 128-bit so an overflow in the parser shows. */
    unsigned __int128 need = 1;
    for (uint32_t i = 0; i < nd; i++)
        need *= dims[i];
    /* Compared as addresses: buf + hdr may lie past a short buffer. */
    if ((uintptr_t)data != (uintptr_t)buf + hdr || (unsigned __int128)data_len != need || hdr + data_len != len)
        return fr_fail(why, "idx_parse: accepted %zu bytes but data is at offset %zu with %zu bytes",
                       len, (size_t)((uintptr_t)data - (uintptr_t)buf), data_len);
    return 0;
}

/* The raw bytes as an image file and as a label file, and with the magic the
 * buffer claims (so 1-, 2- and 3-dimension headers and unsupported magics are
 * all reached). */
static inline int fr_idx(const uint8_t *buf, size_t len, char *why)
{
    if (fr_idx_magic(buf, len, 0x00000803u, why) || fr_idx_magic(buf, len, 0x00000801u, why))
        return 1;
    if (len >= 4) {
        uint32_t m = ((uint32_t)buf[0] << 24) | ((uint32_t)buf[1] << 16) | ((uint32_t)buf[2] << 8) | buf[3];
        if (m != 0x803u && m != 0x801u && fr_idx_magic(buf, len, m, why))
            return 1;
    }
    return 0;
}

/* A file through idx_read_gz (read + gunzip), then what it inflates to
 * through fr_idx. */
static inline int fr_idx_gz_file(const char *path, char *why)
{
    static const ls_status allowed[] = { LS_EIO, LS_EFORMAT, LS_ENOMEM };
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t h = 0;
    ls_err e;
    memset(&e, 0, sizeof e);
    ls_status st = idx_read_gz(path, &buf, &len, &h, &e);
    if (fr_status("idx_read_gz", st, &e, allowed, 3, why)) {
        free(buf);
        return 1;
    }
    if (st != LS_OK) {
        if (buf != NULL) {
            free(buf);
            return fr_fail(why, "idx_read_gz failed but left a buffer behind");
        }
        return 0;
    }
    int r = fr_idx(buf, len, why);
    free(buf);
    return r;
}

/* ---------- golden files ---------- */

static inline int fr_golden_same(const golden_file *a, const golden_file *b, char *why)
{
    if (a->n_steps != b->n_steps)
        return fr_fail(why, "golden round trip: %zu rows became %zu", a->n_steps, b->n_steps);
    if (strcmp(a->config_text, b->config_text) != 0)
        return fr_fail(why, "golden round trip: the config text changed");
    for (size_t i = 0; i < a->n_steps; i++) {
        const ls_step *x = &a->steps[i], *y = &b->steps[i];
        if (x->step != y->step || x->has_loss != y->has_loss || x->loss_bits != y->loss_bits ||
            x->param_hash != y->param_hash || x->traj_hash != y->traj_hash)
            return fr_fail(why, "golden round trip: row %zu changed", i);
    }
    return 0;
}

/* golden_run_check (v2 golden files) over exactly len bytes: LS_OK, or
 * LS_EFORMAT / LS_ENOMEM with a message; what parses pins at least one step. */
static inline int fr_golden_run(const char *text, size_t len, char *why)
{
    static const ls_status allowed[] = { LS_EFORMAT, LS_ENOMEM };
    ls_err e;
    memset(&e, 0, sizeof e);
    size_t steps = 0, tensors = 0;
    ls_status st = golden_run_check(text, len, "fuzz.golden", &steps, &tensors, &e);
    if (fr_status("golden_run_check", st, &e, allowed, 2, why))
        return 1;
    if (st == LS_OK && steps == 0)
        return fr_fail(why, "golden_run_check accepted a file without rows");
    return 0;
}

/* golden_parse over exactly len bytes (the fuzzer's buffer has no NUL after
 * it, so ASan sees any read past the end). What parses must be well formed
 * and survive golden_write + golden_parse unchanged. */
static inline int fr_golden(const char *text, size_t len, char *why)
{
    static const ls_status allowed[] = { LS_EFORMAT, LS_EINVAL, LS_ENOMEM };
    golden_file g;
    ls_err e;
    memset(&e, 0, sizeof e);
    ls_status st = golden_parse(text, len, "fuzz.golden", &g, &e);
    if (fr_status("golden_parse", st, &e, allowed, 3, why)) {
        golden_free(&g);
        return 1;
    }
    if (st != LS_OK) {
        int leaked = g.mem != NULL;
        golden_free(&g);
        return leaked ? fr_fail(why, "golden_parse failed but left memory behind") : 0;
    }
    int r = 0;
    if (g.n_steps == 0 || g.config_text == NULL)
        r = fr_fail(why, "golden_parse accepted a file without rows");
    for (size_t i = 0; r == 0 && i < g.n_steps; i++)
        if (g.steps[i].step != (int64_t)i || g.steps[i].has_loss != (i > 0))
            r = fr_fail(why, "golden_parse: row %zu has step %lld, has_loss %d", i,
                        (long long)g.steps[i].step, g.steps[i].has_loss);
    if (r == 0) {
        char *out = NULL;
        size_t out_len = 0;
        FILE *f = open_memstream(&out, &out_len);
        if (f == NULL) {
            golden_free(&g);
            return 0;   /* out of memory in the harness: nothing to say about the parser */
        }
        ls_status wst = golden_write(f, g.config_text, g.steps, g.n_steps);
        fclose(f);
        if (wst != LS_OK) {
            r = fr_fail(why, "golden_write refused (status %d) what golden_parse accepted", (int)wst);
        } else {
            golden_file g2;
            memset(&e, 0, sizeof e);
            st = golden_parse(out, out_len, "fuzz.golden.rewritten", &g2, &e);
            if (st != LS_OK)
                r = fr_fail(why, "golden_parse refused what golden_write wrote: %s", e.msg);
            else
                r = fr_golden_same(&g, &g2, why);
            golden_free(&g2);
        }
        free(out);
    }
    golden_free(&g);
    return r;
}

/* ---------- config ---------- */

/* What a parser accepted must be a config whose canonical text reads back
 * (config_parse_text) to the same canonical text and hash. */
static inline int fr_config_canonical(const ls_config *cfg, const char *who, char *why)
{
    ls_err e;
    memset(&e, 0, sizeof e);
    if (config_validate(cfg, &e) != LS_OK)
        return fr_fail(why, "%s accepted a config that config_validate refuses: %s", who, e.msg);
    char t1[CONFIG_TEXT_MAX], t2[CONFIG_TEXT_MAX];
    size_t n1 = config_text(cfg, t1, sizeof t1);
    if (n1 >= sizeof t1)
        return fr_fail(why, "config_text: %zu bytes, CONFIG_TEXT_MAX is %d", n1, CONFIG_TEXT_MAX);
    ls_config cfg2;
    memset(&e, 0, sizeof e);
    if (config_parse_text(&cfg2, t1, "canonical", &e) != LS_OK)
        return fr_fail(why, "%s accepted a config whose canonical text config_parse_text refuses: %s", who, e.msg);
    size_t n2 = config_text(&cfg2, t2, sizeof t2);
    if (n1 != n2 || memcmp(t1, t2, n1) != 0)
        return fr_fail(why, "%s: canonical config text does not read back to itself", who);
    if (config_hash(cfg) != config_hash(&cfg2))
        return fr_fail(why, "%s: config_hash differs for equal canonical texts", who);
    return 0;
}

/* config_parse_text over one NUL-terminated text (LS_ENOTFOUND: a task or
 * model this process has not registered, engine/core/config.h). */
static inline int fr_config_text1(const char *text, char *why)
{
    static const ls_status allowed[] = { LS_EFORMAT, LS_EINVAL, LS_ENOTFOUND };
    ls_config cfg;
    ls_err e;
    memset(&e, 0, sizeof e);
    ls_status st = config_parse_text(&cfg, text, "fuzz.config", &e);
    if (fr_status("config_parse_text", st, &e, allowed, 3, why))
        return 1;
    if (st != LS_OK)
        return 0;
    return fr_config_canonical(&cfg, "config_parse_text", why);
}

/* Split data on NUL bytes into a malloc'ed copy: (*mem)[...] holds the
 * strings, argv[0..*argc) points at them. A final NUL ends the last string
 * rather than starting an empty one. Returns 0 when out of memory. */
static inline int fr_split(const uint8_t *data, size_t size, char **mem, char **argv, int *argc)
{
    *argc = 0;
    *mem = malloc(size + 1);
    if (*mem == NULL)
        return 0;
    if (size > 0)
        memcpy(*mem, data, size);
    (*mem)[size] = '\0';
    size_t start = 0;
    while (start < size && *argc < FR_MAX_ARGS) {
        argv[(*argc)++] = *mem + start;
        start += strlen(*mem + start) + 1;
    }
    return 1;
}

/* Every NUL-separated piece of the input as config text. */
static inline int fr_config_text(const uint8_t *data, size_t size, char *why)
{
    char *mem, *argv[FR_MAX_ARGS];
    int argc;
    if (!fr_split(data, size, &mem, argv, &argc))
        return 0;
    int r = 0;
    if (argc == 0)
        r = fr_config_text1(mem, why);   /* the empty text */
    for (int i = 0; r == 0 && i < argc; i++)
        r = fr_config_text1(argv[i], why);
    free(mem);
    return r;
}

/* 1 when some registered model or task (not only cfg's) declares key
 * ('-' read as '_'): a config flag cli_parse knows, even where it does not
 * apply. */
static inline int fr_key_anywhere(const char *key)
{
    char name[64];
    size_t n = strlen(key);
    if (n >= sizeof name)
        return 0;
    for (size_t i = 0; i <= n; i++)
        name[i] = key[i] == '-' ? '_' : key[i];
    for (size_t i = 0; ls_model_at(i) != NULL; i++)
        for (size_t k = 0; k < ls_model_at(i)->n_keys; k++)
            if (strcmp(ls_model_at(i)->keys[k].name, name) == 0)
                return 1;
    for (size_t i = 0; ls_task_at(i) != NULL; i++)
        for (size_t k = 0; k < ls_task_at(i)->n_keys; k++)
            if (strcmp(ls_task_at(i)->keys[k].name, name) == 0)
                return 1;
    return 0;
}

/* The NUL-separated pieces as command-line flags, applied the way
 * tools/cli.c does for the config keys: defaults from the last --task and
 * --model ("--task X" or "--task=X"; teacher when none), then config_set for
 * every "--key=value" / "--key value" in order (other words skipped; a flag
 * that is no config key, like --db, takes its value too), then
 * config_validate and the canonical round trip. The library half of
 * cli_parse, for builds that do not link tools/. */
static inline int fr_config_pairs(const uint8_t *data, size_t size, char *why)
{
    static const ls_status allowed[] = { LS_EINVAL };
    char *mem, *argv[FR_MAX_ARGS];
    int argc;
    if (!fr_split(data, size, &mem, argv, &argc))
        return 0;
    const char *task = "teacher", *model = NULL;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (strncmp(s, "--task", 6) == 0 && (s[6] == '\0' || s[6] == '='))
            task = s[6] == '=' ? s + 7 : (i + 1 < argc ? argv[i + 1] : "");
        else if (strncmp(s, "--model", 7) == 0 && (s[7] == '\0' || s[7] == '='))
            model = s[7] == '=' ? s + 8 : (i + 1 < argc ? argv[i + 1] : "");
    }
    ls_config cfg;
    ls_err e;
    memset(&e, 0, sizeof e);
    ls_status st = config_defaults(&cfg, task, model, &e);
    int r = fr_status("config_defaults", st, &e, allowed, 1, why);
    if (r != 0 || st != LS_OK) {
        free(mem);
        return r;
    }
    int all_ok = 1;
    for (int i = 0; r == 0 && i < argc; i++) {
        char *s = argv[i];
        if (strncmp(s, "--", 2) != 0 || s[2] == '\0')
            continue;
        if (strcmp(s, "--help") == 0 || strcmp(s, "--no-progress") == 0)
            continue;   /* the flags that take no value */
        const char *value;
        char *eq = strchr(s, '=');
        if (eq != NULL) {
            *eq = '\0';
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            value = "";
        }
        memset(&e, 0, sizeof e);
        const int known = config_has_key(&cfg, s + 2);
        st = config_set(&cfg, s + 2, value, 1, &e);
        r = fr_status("config_set", st, &e, allowed, 1, why);
        if (r == 0 && !known && st == LS_OK)
            r = fr_fail(why, "config_set accepted '%s', which config_has_key does not know", s + 2);
        /* a key of another model or task is a config flag cli_parse refuses */
        if (st != LS_OK && (known || fr_key_anywhere(s + 2)))
            all_ok = 0;
    }
    if (r == 0) {
        memset(&e, 0, sizeof e);
        st = config_validate(&cfg, &e);
        r = fr_status("config_validate", st, &e, allowed, 1, why);
        /* Only a config whose every config flag was taken stands for what
         * cli_parse would accept (other flags, like --db, are not config). */
        if (r == 0 && st == LS_OK && all_ok)
            r = fr_config_canonical(&cfg, "config_set + config_validate", why);
    }
    free(mem);
    return r;
}

/* ---------- checkpoints ---------- */

static inline uint64_t fr_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ckpt_parse over exactly len bytes; what it accepts must be laid out as
 * checkpoint.h says and re-encode (ckpt_encode) to the very same bytes. */
static inline int fr_checkpoint1(const unsigned char *buf, size_t len, char *why)
{
    static const ls_status allowed[] = { LS_EFORMAT, LS_EINVAL };
    ckpt_view v;
    ls_err e;
    memset(&e, 0, sizeof e);
    /* Both versions through the reader resume uses; the current one must
     * also re-encode to the same bytes. */
    ls_status st = ckpt_parse_any(buf, len, "fuzz.ckpt", &v, &e);
    if (fr_status("ckpt_parse_any", st, &e, allowed, 2, why))
        return 1;
    if (st != LS_OK)
        return 0;
    /* Sizes as the parser saw them; 128-bit so no overflow hides here. */
    unsigned __int128 want = (unsigned __int128)v.header_bytes + (unsigned __int128)v.n_params * 4u +
                             v.opt_bytes + CKPT_TRAILER_BYTES;
    if (want != len)
        return fr_fail(why, "ckpt_parse accepted %zu bytes for %llu parameters and %llu state bytes", len,
                       (unsigned long long)v.n_params, (unsigned long long)v.opt_bytes);
    if ((v.version != CKPT_VERSION && v.version != 1) || v.step < 0 || v.params != buf + v.header_bytes ||
        v.opt_state != v.params + 4 * v.n_params)
        return fr_fail(why, "ckpt_parse: view does not match the layout (version %u, step %lld)",
                       (unsigned)v.version, (long long)v.step);
    if (v.checksum != fr_le64(buf + len - 8) || v.checksum != hash_bytes(buf, len - 8))
        return fr_fail(why, "ckpt_parse accepted a checksum that is not XXH3 of the contents");
    if (v.version != CKPT_VERSION)
        return 0;   /* version 1 is read, never written again */
    size_t n = (size_t)v.n_params, ob = (size_t)v.opt_bytes;
    float *params = malloc(4 * n + 1);   /* + 1: never a zero-byte (maybe NULL) block */
    unsigned char *img = malloc(len);
    if (params == NULL || img == NULL) {
        free(params);
        free(img);
        return 0;   /* out of memory in the harness */
    }
    memcpy(params, v.params, 4 * n);   /* little-endian host: see checkpoint.h */
    uint64_t sh = 0;
    memset(&e, 0, sizeof e);
    st = ckpt_encode_owned(img, len, v.has_owner ? &v.owner : NULL, v.config_hash, v.step, params, n,
                           ob > 0 ? v.opt_state : buf, ob, &sh, &e);
    int r = 0;
    if (st != LS_OK)
        r = fr_fail(why, "ckpt_encode refused what ckpt_parse accepted: %s", e.msg);
    else if (memcmp(img, buf, len) != 0 || sh != v.checksum)
        r = fr_fail(why, "ckpt_encode of a parsed checkpoint gives other bytes");
    free(params);
    free(img);
    return r;
}

/* The raw bytes, then (so the fuzzer gets past the checksum to the checks
 * after it) a copy whose trailing 8 bytes are set to the right checksum. */
static inline int fr_checkpoint(const unsigned char *buf, size_t len, char *why)
{
    if (fr_checkpoint1(buf, len, why))
        return 1;
    if (len < 8)
        return 0;
    unsigned char *copy = malloc(len);
    if (copy == NULL)
        return 0;
    memcpy(copy, buf, len);
    uint64_t h = hash_bytes(copy, len - 8);
    for (int i = 0; i < 8; i++)
        copy[len - 8 + (size_t)i] = (unsigned char)(h >> (8 * i));
    int r = fr_checkpoint1(copy, len, why);
    free(copy);
    return r;
}

/* ---------- safetensors ---------- */

/* safetensors_parse on the bytes: LS_OK, or LS_EFORMAT / LS_ENOMEM with a
 * message; what it accepts has every tensor's bytes inside the buffer,
 * after the header, as many as its shape and dtype say, and its names
 * distinct. */
static inline int fr_safetensors(const uint8_t *buf, size_t len, char *why)
{
    static const ls_status allowed[] = { LS_EFORMAT, LS_ENOMEM };
    safetensors_file f;
    ls_err e = { "" };
    ls_status st = safetensors_parse(buf, len, "fuzz.safetensors", &f, &e);
    if (fr_status("safetensors_parse", st, &e, allowed, 2, why))
        return 1;
    if (st != LS_OK)
        return f.tensors != NULL || f.n != 0 ? fr_fail(why, "safetensors_parse failed but left tensors behind") : 0;
    int r = 0;
    for (size_t i = 0; i < f.n && !r; i++) {
        const safetensors_tensor *t = &f.tensors[i];
        if (t->data < buf + 8 || t->bytes > len || t->data > buf + len - t->bytes)
            r = fr_fail(why, "tensor %zu '%s': its bytes lie outside the buffer", i, t->name);
        for (size_t j = 0; j < i && !r; j++)
            if (strcmp(f.tensors[j].name, t->name) == 0)
                r = fr_fail(why, "tensor name '%s' accepted twice", t->name);
        size_t count = 1;
        for (size_t k = 0; k < t->ndim; k++)
            count *= t->shape[k];
        const size_t es = strcmp(t->dtype, "F32") == 0 ? 4 : 0;
        if (!r && es != 0 && t->bytes != count * es)
            r = fr_fail(why, "tensor '%s': %zu bytes for %zu F32 elements", t->name, t->bytes, count);
    }
    safetensors_free(&f);
    return r;
}

#endif
