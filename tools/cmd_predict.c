/* cmd_predict.c — `lockstep predict RUN --input X.npy -o Y.npy [--labels]`:
 * a recorded run's model applied to your samples.
 *
 * The run is restored to its last recorded step (run_restore: newest
 * checkpoint, then every later recorded step recomputed and checked against
 * the record), so the scores are provably those of the recorded parameters.
 * X.npy is read as the arrays task reads features (engine/data/npy.h,
 * engine/tasks/arrays.c): float32 as is, float64 rounded once to binary32,
 * uint8 as v/255.0f (as Fashion-MNIST's pixels); shape [N, ...], each sample
 * flattened in C order to the features the session's model takes
 * (ls_session_predict_shape). The scores come from ls_session_predict, in
 * chunks of PREDICT_CHUNK samples (it runs on one thread; a sample's scores
 * do not depend on the chunking or the thread count), and the summary names
 * θ's size from its tensors (ls_session_tensor): the public API alone, as
 * any program would. Y.npy is float32 [N, outputs], or with --labels int64 [N]:
 * the index of the highest score, the lowest on ties (as the model's own
 * evaluation counts a right answer, so predicting the test split with
 * --labels reproduces the recorded test_acc exactly). Both are written as
 * numpy.save writes them, through a temporary file and a rename.
 *
 * A model without scores (logic, logic-ca) is refused before anything is
 * recomputed, and so are a malformed or mis-shaped X.npy (after the restore:
 * the feature count is the model instance's) and an output path that is the
 * record.
 */
#include "tools/tools.h"
#include "tools/escape.h"

#include <stdlib.h>
#include <string.h>

#include "engine/data/npy.h"
#include "tools/commands.h"

#define PREDICT_CHUNK 1024

typedef struct {
    const char *input, *out;
    int labels;
} predict_flags_t;

/* predict's own flags beside the shared ones (tools/commands.c's table). */
static ls_status predict_flag(void *ctx, const flag_spec *f, const char *v, ls_err *err)
{
    (void)err;
    predict_flags_t *pf = ctx;
    if (strcmp(f->name, "--input") == 0)
        pf->input = v;
    else if (strcmp(f->name, "-o") == 0)
        pf->out = v;
    else if (strcmp(f->name, "--labels") == 0)
        pf->labels = 1;
    return LS_OK;
}

/* "(5, 3, 4)" into buf. */
static const char *shape_text(const npy_array *x, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < x->ndim && at < cap; i++) {
        int w = snprintf(buf + at, cap - at, "%s%zu", i ? ", " : "(", x->shape[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
    if (at < cap)
        snprintf(buf + at, cap - at, "%s", x->ndim == 0 ? "()" : x->ndim == 1 ? ",)" : ")");
    return buf;
}

/* The features of X.npy as the arrays task takes them; LS_EFORMAT naming the file. */
static ls_status check_input(const char *path, const npy_array *x, ls_err *err)
{
    char sh[256];
    if (!(x->kind == 'f' || (x->kind == 'u' && x->size == 1)))
        return ls_fail(err, LS_EFORMAT, "%s: features are %c%zu; predict takes float32, float64 or uint8", path,
                       x->kind, x->size);
    if (x->ndim < 1)
        return ls_fail(err, LS_EFORMAT, "%s: shape %s: needs [N, ...], one row a sample", path,
                       shape_text(x, sh, sizeof sh));
    return LS_OK;
}

/* Scores (or labels) of every sample of x into out.f: in features a
 * sample, outs scores. */
static ls_status predict_write(FILE *f, ls_session *session, size_t in, size_t outs, const npy_array *x, size_t n,
                               int labels, ls_err *err)
{
    const size_t chunk = n < PREDICT_CHUNK ? (n > 0 ? n : 1) : PREDICT_CHUNK;
    if (in > SIZE_MAX / sizeof(float) / chunk || outs > SIZE_MAX / sizeof(float) / chunk)
        return ls_fail(err, LS_ENOMEM, "out of memory for %zu samples of %zu features", chunk, in);
    float *xb = malloc(chunk * in * sizeof *xb), *sc = malloc(chunk * outs * sizeof *sc);
    unsigned char *lb = malloc(chunk * 8);
    ls_status st = LS_OK;
    if (xb == NULL || sc == NULL || lb == NULL)
        st = ls_fail(err, LS_ENOMEM, "out of memory for %zu samples of %zu features", chunk, in);
    const int bytes = x->kind == 'u';
    const size_t shape[2] = { n, outs };
    if (st == LS_OK)
        cli_npy_header(f, labels ? "<i8" : "<f4", shape, labels ? 1 : 2);
    for (size_t first = 0; first < n && st == LS_OK; first += chunk) {
        if (run_interrupted) {
            st = ls_fail(err, LS_EINTR, "interrupted after %zu of %zu samples; nothing written", first, n);
            break;
        }
        const size_t c = n - first < chunk ? n - first : chunk;
        for (size_t i = 0; i < c * in; i++) {
            const size_t k = first * in + i;
            xb[i] = bytes ? (float)x->data[k] / 255.0f : npy_float(x, k);
        }
        if ((st = ls_session_predict(session, xb, c, sc, err)) != LS_OK)
            break;
        if (!labels) {
            cli_write_f32le(f, sc, c * outs);
            continue;
        }
        for (size_t s = 0; s < c; s++) {
            const float *z = sc + s * outs;
            uint64_t best = 0;
            for (size_t k = 1; k < outs; k++)
                if (z[k] > z[best])
                    best = k;
            for (int b = 0; b < 8; b++)
                lb[8 * s + (size_t)b] = (unsigned char)(best >> (8 * b));
        }
        fwrite(lb, 1, 8 * c, f);
    }
    free(lb);
    free(sc);
    free(xb);
    return st;
}

int cmd_predict(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    predict_flags_t pf;
    memset(&pf, 0, sizeof pf);
    ls_status st = cli_parse_cmd("predict", argc, argv, CLI_DB | CLI_THREADS | CLI_PROGRESS, 1, predict_flag, &pf, &a,
                                 &err);
    if (st == LS_OK && a.help) {
        command_usage(command_find("predict"), stdout);
        return EXIT_OK;
    }
    if (st == LS_OK && a.n_positional != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st == LS_OK && pf.input == NULL)
        st = ls_fail(&err, LS_EINVAL, "needs --input X.npy (the samples)");
    if (st == LS_OK && pf.out == NULL)
        st = ls_fail(&err, LS_EINVAL, "needs -o Y.npy (where the predictions go; - for stdout)");
    if (st != LS_OK) {
        cli_error("predict", &err, st);
        return EXIT_USAGE;
    }
    runlog *db;
    runlog_run run;
    int code = cli_open_run("predict", a.db, a.positional[0], &db, &run);
    if (code != EXIT_OK)
        return code;
    /* The output is checked against the record first of all. */
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t fh = 0;
    npy_array x;
    memset(&x, 0, sizeof x);
    cli_out out;
    memset(&out, 0, sizeof out);
    int opened = 0;
    const ls_model_desc *md = ls_model_find(run.model);
    st = cli_guard_output("-o", pf.out, a.db, db, &err);
    if (st == LS_OK && (md == NULL || md->scores == NULL))
        st = ls_fail(&err, LS_EINVAL, "run %lld '%s' (model %s, task %s): the model gives no scores to predict "
                     "with (mlp and linear do)", (long long)run.id, ESC_NAME(run.name), run.model, run.task);
    if (st == LS_OK)
        st = npy_read_file(pf.input, &buf, &len, &fh, &err);
    if (st == LS_OK)
        st = npy_parse(buf, len, &x, pf.input, &err);
    if (st == LS_OK)
        st = check_input(pf.input, &x, &err);
    if (st == LS_OK && (st = cli_out_open(&out, "-o", pf.out, a.db, db, &err)) == LS_OK)
        opened = 1;
    if (st != LS_OK) {
        cli_error("predict", &err, st);
        free(buf);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    run_install_signals();
    ls_session *session = NULL;
    ls_session_state info;
    st = run_restore(a.db, run.id, a.threads[0], a.progress, &session, &info, &err);
    int bad_input = st != LS_OK && st != LS_EMISMATCH && st != LS_EINTR;
    if (st == LS_OK && run_interrupted)
        st = ls_fail(&err, LS_EINTR, "interrupted; nothing written");
    size_t n = 0, inputs = 0, outputs = 0;
    if (st == LS_OK) {
        bad_input = 1;
        ls_err why;
        if (ls_session_predict_shape(session, &inputs, &outputs, &why) != LS_OK) {
            st = ls_fail(&err, LS_EINVAL, "run %lld '%s' (model %s, task %s): the model gives no scores to "
                         "predict with (mlp and linear do)", (long long)run.id, ESC_NAME(run.name), run.model, run.task);
        } else {
            size_t per = 1;
            for (size_t i = 1; i < x.ndim; i++)
                per *= x.shape[i];
            n = x.shape[0];
            char sh[256];
            if (per != inputs)
                st = ls_fail(&err, LS_EFORMAT, "%s: shape %s is %zu features a sample; run %lld '%s' (model %s) "
                             "takes %zu", pf.input, shape_text(&x, sh, sizeof sh), per, (long long)run.id, ESC_NAME(run.name),
                             run.model, inputs);
            /* A NaN or infinite feature would give NaN scores that look
             * like an answer: refused as training data is. */
            else
                st = npy_check_finite(&x, per, pf.input, &err);
        }
        if (st == LS_OK) {
            bad_input = 0;
            st = predict_write(out.f, session, inputs, outputs, &x, n, pf.labels, &err);
        }
        if (st == LS_OK) {
            st = cli_out_commit(&out, &err);
            bad_input = st != LS_OK;
        }
    }
    if (st != LS_OK) {
        if (opened)
            cli_out_abort(&out);
        cli_error("predict", &err, st);
        code = bad_input ? EXIT_USAGE : cli_exit_code_input(st, &err);
    } else {
        FILE *say = out.to_stdout ? stderr : stdout;
        char what[96];
        if (pf.labels)
            snprintf(what, sizeof what, "int64 labels [%zu]", n);
        else
            snprintf(what, sizeof what, "float32 scores [%zu, %zu]", n, outputs);
        /* θ's size, as its named tensors add up. */
        size_t n_tensors = ls_session_tensor_count(session), floats = 0;
        ls_tensor_view tv;
        for (size_t i = 0; i < n_tensors && ls_session_tensor(session, i, &tv, NULL) == LS_OK; i++)
            floats += tv.count;
        fprintf(say, "predict: run %lld '%s' at step %lld (recomputed %lld recorded steps from step %lld: "
                "identical; %zu parameters in %zu tensors), %zu samples of %s, wrote %s: %s\n", (long long)run.id,
                run.name, (long long)info.step, (long long)info.replayed, (long long)info.resumed_from, floats,
                n_tensors, n, pf.input, out.to_stdout ? "stdout" : pf.out, what);
    }
    ls_session_close(session, LS_OK, NULL);
    free(buf);
    runlog_run_free(&run);
    runlog_close(db);
    return code;
}
