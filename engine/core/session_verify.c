/* session_verify.c — ls_verify: two recorded runs compared bit for bit,
 * step by step, from the record alone (nothing is recomputed).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/core/session_impl.h"

ls_status ls_verify(const char *db, const char *run_a, const char *run_b, ls_verdict *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    out->first_diff = -1;
    if (db == NULL || access(db, F_OK) != 0)
        return ls_fail(err, LS_ENOTFOUND, "%s: no such database", db != NULL ? db : "(null)");
    runlog *r;
    ls_status st = runlog_open(&r, db, err);
    if (st != LS_OK)
        return st;
    int64_t ids[2];
    runlog_run runs[2];
    memset(runs, 0, sizeof runs);
    ls_step *rows[2] = { NULL, NULL };
    size_t n[2] = { 0, 0 };
    const char *names[2] = { run_a, run_b };
    for (int i = 0; i < 2 && st == LS_OK; i++) {
        if ((st = runlog_find(r, names[i], &ids[i], err)) == LS_OK &&
            (st = runlog_get_run(r, ids[i], &runs[i], err)) == LS_OK)
            st = runlog_read_steps(r, ids[i], &rows[i], &n[i], err);
    }
    if (st == LS_OK) {
        out->steps_a = (int64_t)n[0];
        out->steps_b = (int64_t)n[1];
        out->same_config = runs[0].config_hash == runs[1].config_hash;
        size_t common = n[0] < n[1] ? n[0] : n[1];
        out->steps = (int64_t)common;
        out->equal = 1;
        for (size_t i = 0; i < common; i++) {
            const ls_step *x = &rows[0][i], *y = &rows[1][i];
            /* Step 0 has no loss; an external run starts at step 1. */
            int same = x->step == y->step && x->param_hash == y->param_hash && x->has_loss == y->has_loss &&
                       (!x->has_loss || x->loss_bits == y->loss_bits);
            if (!same) {
                out->equal = 0;
                out->first_diff = x->step < y->step ? x->step : y->step;
                break;
            }
        }
        if (common == 0)
            out->equal = 0;   /* nothing compared proves nothing */
    }
    for (int i = 0; i < 2; i++) {
        free(rows[i]);
        runlog_run_free(&runs[i]);
    }
    runlog_close(r);
    return st;
}

ls_status ls_verify_ex(const char *db, const char *run_a, const char *run_b, const ls_verify_opts *opts,
                       ls_verify_result *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    out->verdict.first_diff = -1;
    out->tol_first = -1;
    if (opts != NULL && opts->size != sizeof *opts)
        return ls_fail(err, LS_EINVAL, "ls_verify_opts: size %zu, this library's is %zu", opts->size, sizeof *opts);
    if (opts != NULL && opts->loss_tolerance &&
        (!(opts->loss_rtol >= 0) || !(opts->loss_atol >= 0)))
        return ls_fail(err, LS_EINVAL, "loss tolerance: rtol %g and atol %g must be 0 or more", opts->loss_rtol,
                       opts->loss_atol);
    ls_status st = ls_verify(db, run_a, run_b, &out->verdict, err);
    if (st != LS_OK)
        return st;
    runlog *r;
    if ((st = runlog_open(&r, db, err)) != LS_OK)
        return st;
    int64_t ids[2];
    ls_step *rows[2] = { NULL, NULL };
    size_t n[2] = { 0, 0 };
    const char *names[2] = { run_a, run_b };
    for (int i = 0; i < 2 && st == LS_OK; i++)
        if ((st = runlog_find(r, names[i], &ids[i], err)) == LS_OK)
            st = runlog_read_steps(r, ids[i], &rows[i], &n[i], err);
    const int64_t fd = out->verdict.first_diff;
    const ls_step *xa = NULL, *xb = NULL;
    for (size_t i = 0; st == LS_OK && fd >= 0 && i < n[0]; i++)
        if (rows[0][i].step == fd)
            xa = &rows[0][i];
    for (size_t i = 0; st == LS_OK && fd >= 0 && i < n[1]; i++)
        if (rows[1][i].step == fd)
            xb = &rows[1][i];
    if (xa != NULL && xb != NULL) {
        if (xa->has_loss && xb->has_loss) {
            out->loss_a = hash_bits_to_double(xa->loss_bits);
            out->loss_b = hash_bits_to_double(xb->loss_bits);
        }
        if (xa->param_hash != xb->param_hash)
            st = runlog_first_tensor_diff(r, ids[0], ids[1], fd, out->first_tensor, sizeof out->first_tensor, err);
    }
    if (st == LS_OK && opts != NULL && opts->loss_tolerance) {
        size_t common = n[0] < n[1] ? n[0] : n[1];
        for (size_t i = 0; i < common; i++) {
            if (!rows[0][i].has_loss || !rows[1][i].has_loss)
                continue;
            double a = hash_bits_to_double(rows[0][i].loss_bits), b = hash_bits_to_double(rows[1][i].loss_bits);
            if (!runlog_loss_within(a, b, opts->loss_rtol, opts->loss_atol)) {
                out->tol_first = rows[0][i].step;
                out->tol_loss_a = a;
                out->tol_loss_b = b;
                break;
            }
        }
    }
    free(rows[0]);
    free(rows[1]);
    runlog_close(r);
    return st;
}
