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
            int same = x->param_hash == y->param_hash && (i == 0 || x->loss_bits == y->loss_bits);
            if (!same) {
                out->equal = 0;
                out->first_diff = (int64_t)i;
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
