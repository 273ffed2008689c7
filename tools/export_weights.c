/* export_weights.c — the parameters of a run as safetensors or .npy
 * (export_weights.h). */
#include "tools/export_weights.h"
#include "tools/escape.h"

#include "base/bytes.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A growing text buffer; oom set once an allocation failed. */
typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} text_buf;

static void tb_add(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tb_add(text_buf *b, const char *fmt, ...)
{
    for (;;) {
        if (b->oom)
            return;
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->p != NULL ? b->p + b->len : NULL, b->p != NULL ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            b->oom = 1;
            return;
        }
        if (b->p != NULL && b->len + (size_t)w < b->cap) {
            b->len += (size_t)w;
            return;
        }
        size_t cap = b->cap ? 2 * b->cap : 4096;
        while (cap <= b->len + (size_t)w)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (q == NULL) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

/* A tensor name as a JSON string. */
static void tb_json_string(text_buf *b, const char *s)
{
    tb_add(b, "\"");
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            tb_add(b, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            tb_add(b, "\\u%04x", c);
        else
            tb_add(b, "%c", c);
    }
    tb_add(b, "\"");
}

/* The model's tensors, or the one tensor "params"; checked to tile θ in
 * order with distinct names (a model that breaks this is a lockstep bug:
 * LS_EMISMATCH, nothing is written). */
static ls_status weight_tensors(const ls_model *m, ls_tensor *one, const ls_tensor **out, size_t *n, ls_err *err)
{
    const ls_model_info *mi = &m->info;
    if (mi->tensors == NULL || mi->n_tensors == 0) {
        *one = (ls_tensor){ "params", 0, 1, { mi->n_params, 0, 0, 0 } };
        *out = one;
        *n = 1;
        return LS_OK;
    }
    size_t at = 0;
    for (size_t i = 0; i < mi->n_tensors; i++) {
        const ls_tensor *t = &mi->tensors[i];
        size_t count = 1;
        int over = t->ndim > 4;
        for (size_t k = 0; k < t->ndim && !over; k++) {
            over = t->shape[k] != 0 && count > SIZE_MAX / t->shape[k];
            count *= t->shape[k];
        }
        if (t->name == NULL || t->name[0] == '\0' || strcmp(t->name, "__metadata__") == 0 || over ||
            t->offset != at || count > mi->n_params - at)
            return ls_fail(err, LS_EMISMATCH, "model %s: tensor %zu ('%s') does not continue θ at float %zu "
                           "(a lockstep bug; nothing written)", m->name, i, t->name != NULL ? t->name : "", at);
        for (size_t j = 0; j < i; j++)
            if (strcmp(mi->tensors[j].name, t->name) == 0)
                return ls_fail(err, LS_EMISMATCH, "model %s: two tensors are named '%s' (a lockstep bug; nothing "
                               "written)", m->name, t->name);
        at += count;
    }
    if (at != mi->n_params)
        return ls_fail(err, LS_EMISMATCH, "model %s: its tensors cover %zu of θ's %zu floats (a lockstep bug; "
                       "nothing written)", m->name, at, mi->n_params);
    *out = mi->tensors;
    *n = mi->n_tensors;
    return LS_OK;
}

/* The safetensors header: JSON, padded with spaces to a multiple of 8. */
static ls_status safetensors_header(text_buf *b, const ls_tensor *ts, size_t n, const runlog_run *run,
                                    const ls_session_state *info, ls_err *err)
{
    tb_add(b, "{");
    for (size_t i = 0; i < n; i++) {
        const ls_tensor *t = &ts[i];
        size_t count = 1;
        tb_json_string(b, t->name);
        tb_add(b, ":{\"dtype\":\"F32\",\"shape\":[");
        for (size_t k = 0; k < t->ndim; k++) {
            tb_add(b, "%s%zu", k ? "," : "", t->shape[k]);
            count *= t->shape[k];
        }
        tb_add(b, "],\"data_offsets\":[%zu,%zu]},", t->offset * sizeof(float), (t->offset + count) * sizeof(float));
    }
    tb_add(b, "\"__metadata__\":{\"lockstep_run\":\"%lld\",\"step\":\"%lld\",\"config_hash\":\"%016llx\","
           "\"param_hash\":\"%016llx\",\"format\":\"pt\"}}", (long long)run->id, (long long)info->step,
           (unsigned long long)info->config_hash, (unsigned long long)info->param_hash);
    while (!b->oom && b->len % 8 != 0)
        tb_add(b, " ");
    if (b->oom)
        return ls_fail(err, LS_ENOMEM, "out of memory for the safetensors header");
    return LS_OK;
}

static int has_suffix(const char *s, const char *sfx)
{
    const size_t n = strlen(s), k = strlen(sfx);
    return n > k && strcasecmp(s + n - k, sfx) == 0;
}

/* export --weights: the restored run's θ as .safetensors or .npy. */
int export_weights(const cli_args *a, const char *path)
{
    ls_err err = { "" };
    const int npy = has_suffix(path, ".npy");
    if (!npy && !has_suffix(path, ".safetensors")) {
        fprintf(stderr, "lockstep export: --weights %s: name the file FILE.safetensors or FILE.npy (the format "
                "follows the name)\n", path);
        return EXIT_USAGE;
    }
    runlog *db;
    runlog_run run;
    int code = cli_open_run("export", a->db, a->positional[0], &db, &run);
    if (code != EXIT_OK)
        return code;
    cli_out out;
    ls_status st = cli_out_open(&out, "--weights", path, a->db, db, &err);
    if (st != LS_OK) {
        cli_error("export", &err, st);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    run_install_signals();
    ls_session *session = NULL;
    ls_session_state info;
    st = run_restore(a->db, run.id, a->threads[0], a->progress, &session, &info, &err);
    int bad_input = st != LS_OK && st != LS_EMISMATCH && st != LS_EINTR;
    trainer *t = session != NULL ? session_trainer(session) : NULL;
    if (st == LS_OK && t == NULL)
        st = ls_fail(&err, LS_EMISMATCH, "run %lld: the restored session has no trainer", (long long)run.id);
    ls_tensor one;
    const ls_tensor *ts = NULL;
    size_t n_ts = 0, n_params = 0;
    const float *params = NULL;
    if (st == LS_OK) {
        params = trainer_params(t);
        n_params = trainer_n_params(t);
        st = weight_tensors(trainer_model(t), &one, &ts, &n_ts, &err);
    }
    /* What is written is what the record proves: the hash of these very
     * floats is the recorded one. */
    uint64_t ph = 0;
    if (st == LS_OK && (ph = hash_params(params, n_params)) != info.param_hash)
        st = ls_fail(&err, LS_EMISMATCH, "run %lld: the restored parameters hash to %016llx, the record says "
                     "%016llx", (long long)run.id, (unsigned long long)ph, (unsigned long long)info.param_hash);
    if (st == LS_OK) {
        if (npy) {
            cli_npy_header(out.f, "<f4", &n_params, 1);
        } else {
            text_buf hb = { NULL, 0, 0, 0 };
            st = safetensors_header(&hb, ts, n_ts, &run, &info, &err);
            if (st == LS_OK) {
                unsigned char len8[8];
                bytes_put_le64(len8, (uint64_t)hb.len);
                fwrite(len8, 1, sizeof len8, out.f);
                fwrite(hb.p, 1, hb.len, out.f);
            }
            free(hb.p);
        }
        if (st == LS_OK) {
            cli_write_f32le(out.f, params, n_params);
            st = cli_out_commit(&out, &err);
            bad_input = st != LS_OK;
        }
    }
    if (st != LS_OK) {
        cli_out_abort(&out);
        cli_error("export", &err, st);
        code = bad_input ? EXIT_USAGE : cli_exit_code_input(st, &err);
    } else {
        char what[64];
        if (npy)
            snprintf(what, sizeof what, "one float32 array");
        else
            snprintf(what, sizeof what, "%zu F32 tensor%s", n_ts, n_ts == 1 ? "" : "s");
        printf("export: run %lld '%s' at step %lld (recomputed %lld recorded steps from step %lld: identical), "
               "wrote %s: %s, %zu floats, param hash %016llx (the record's)\n", (long long)run.id, ESC_NAME(run.name),
               (long long)info.step, (long long)info.replayed, (long long)info.resumed_from, path, what, n_params,
               (unsigned long long)info.param_hash);
    }
    ls_session_close(session, LS_OK, NULL);
    runlog_run_free(&run);
    runlog_close(db);
    return code;
}
