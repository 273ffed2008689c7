/* runlog_tensors.c — per-tensor hashes in the record (schema version 2):
 * a run's tensor names, kept once, and the first tensor two runs disagree
 * on at a step. The steps' hash vectors are written with their step rows
 * (runlog_write.c, runlog_step_tensors), so a step and its vector are
 * committed together.
 *
 * A vector is a BLOB of 8 bytes per tensor, u64 little-endian, in the run's
 * tensor order (idx). Runs are compared by name, not by idx: lockstep's own
 * runs keep θ's order, external runs name order, and the first differing
 * tensor is the first in name (strcmp) order either way.
 */
#include "record/runlog_impl.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ls_status runlog_tensors_set(runlog *r, int64_t run_id, const runlog_tensor *t, size_t n, ls_err *err)
{
    ls_status s = rl_begin(r, "recording a run's tensors", err);
    if (s != LS_OK)
        return s;
    sqlite3_stmt *st;
    if ((s = rl_prepare(r, "INSERT INTO run_tensors(run, idx, name, dtype, shape) VALUES(?1, ?2, ?3, ?4, ?5)", &st,
                        "recording a run's tensors", err)) != LS_OK) {
        rl_rollback(r);
        return s;
    }
    for (size_t i = 0; i < n && s == LS_OK; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, (int64_t)i);
        sqlite3_bind_text(st, 3, t[i].name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, t[i].dtype, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, t[i].shape, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) != SQLITE_DONE)
            s = rl_dberr(r, "recording a run's tensors", err);
    }
    sqlite3_finalize(st);
    if (s != LS_OK) {
        rl_rollback(r);
        return s;
    }
    return rl_commit(r, "recording a run's tensors", err);
}

/* 1 when the file has the tables of schema version 2 (a version-1 file
 * opened read-only as a source has not). */
static int rl_has_v2(runlog *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'step_tensors'", -1,
                           &st, NULL) != SQLITE_OK)
        return 0;
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

ls_status runlog_tensors(runlog *r, int64_t run_id, runlog_tensor **t, size_t *n, ls_err *err)
{
    *t = NULL;
    *n = 0;
    if (!rl_has_v2(r))
        return LS_OK;
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, "SELECT idx, name, dtype, shape FROM run_tensors WHERE run = ?1 ORDER BY idx", &st,
                             "reading a run's tensors", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            runlog_tensor *nt = realloc(*t, nc * sizeof *nt);
            if (nt == NULL) {
                s = ls_fail(err, LS_ENOMEM, "%s: out of memory reading run %lld's tensors", r->path,
                            (long long)run_id);
                break;
            }
            *t = nt;
            cap = nc;
        }
        runlog_tensor *x = &(*t)[*n];
        rl_copy(x->name, sizeof x->name, sqlite3_column_text(st, 1));
        rl_copy(x->dtype, sizeof x->dtype, sqlite3_column_text(st, 2));
        rl_copy(x->shape, sizeof x->shape, sqlite3_column_text(st, 3));
        (*n)++;
    }
    if (s == LS_OK && rc != SQLITE_DONE)
        s = rl_dberr(r, "reading a run's tensors", err);
    sqlite3_finalize(st);
    if (s != LS_OK) {
        free(*t);
        *t = NULL;
        *n = 0;
    }
    return s;
}

ls_status runlog_step_hashes(runlog *r, int64_t run_id, int64_t step, uint64_t **hashes, size_t *n, ls_err *err)
{
    *hashes = NULL;
    *n = 0;
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK || !rl_has_v2(r))
        return s;
    sqlite3_stmt *st;
    if ((s = rl_prepare(r, "SELECT hashes FROM step_tensors WHERE run = ?1 AND step = ?2", &st,
                        "reading per-tensor hashes", err)) != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, step);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *b = sqlite3_column_blob(st, 0);
        size_t bytes = (size_t)sqlite3_column_bytes(st, 0);
        size_t m = bytes / 8;
        if (bytes % 8 != 0) {
            s = ls_fail(err, LS_EFORMAT, "%s: run %lld step %lld: per-tensor hashes of %zu bytes (not a multiple of "
                        "8)", r->path, (long long)run_id, (long long)step, bytes);
        } else if (m > 0) {
            *hashes = malloc(m * sizeof **hashes);
            if (*hashes == NULL) {
                s = ls_fail(err, LS_ENOMEM, "%s: out of memory reading per-tensor hashes", r->path);
            } else {
                for (size_t i = 0; i < m; i++) {
                    uint64_t v = 0;
                    for (int k = 0; k < 8; k++)
                        v |= (uint64_t)b[8 * i + (size_t)k] << (8 * k);
                    (*hashes)[i] = v;
                }
                *n = m;
            }
        }
    } else if (rc != SQLITE_DONE) {
        s = rl_dberr(r, "reading per-tensor hashes", err);
    }
    sqlite3_finalize(st);
    return s;
}

static void rl_sort_names(const runlog_tensor *t, size_t n, size_t *idx)
{
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    /* Insertion sort by name, without qsort's global comparator state. */
    for (size_t i = 1; i < n; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && strcmp(t[idx[j - 1]].name, t[v].name) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

ls_status runlog_first_tensor_diff(runlog *r, int64_t a, int64_t b, int64_t step, char *name, size_t cap,
                                   ls_err *err)
{
    return runlog_first_tensor_diff2(r, a, r, b, step, name, cap, err);
}

ls_status runlog_first_tensor_diff2(runlog *ra, int64_t a, runlog *rb, int64_t b, int64_t step, char *name,
                                    size_t cap, ls_err *err)
{
    runlog *const r = ra;   /* for messages */
    runlog *const dbs[2] = { ra, rb };
    name[0] = 0;
    runlog_tensor *t[2] = { NULL, NULL };
    size_t nt[2] = { 0, 0 }, nh[2] = { 0, 0 };
    uint64_t *h[2] = { NULL, NULL };
    size_t *idx[2] = { NULL, NULL };
    const int64_t run[2] = { a, b };
    ls_status s = LS_OK;
    for (int k = 0; k < 2 && s == LS_OK; k++) {
        if ((s = runlog_tensors(dbs[k], run[k], &t[k], &nt[k], err)) == LS_OK)
            s = runlog_step_hashes(dbs[k], run[k], step, &h[k], &nh[k], err);
    }
    /* Nothing to name unless both runs have a full vector at the step. */
    if (s != LS_OK || nt[0] == 0 || nt[1] == 0 || nh[0] != nt[0] || nh[1] != nt[1])
        goto out;
    for (int k = 0; k < 2; k++) {
        if ((idx[k] = malloc(nt[k] * sizeof *idx[k])) == NULL) {
            s = ls_fail(err, LS_ENOMEM, "%s: out of memory comparing tensors", r->path);
            goto out;
        }
        rl_sort_names(t[k], nt[k], idx[k]);
    }
    /* A merge of the two name-sorted lists: the first name only one run has,
     * or whose hashes differ. */
    size_t i = 0, j = 0;
    while (i < nt[0] || j < nt[1]) {
        const char *na = i < nt[0] ? t[0][idx[0][i]].name : NULL;
        const char *nb = j < nt[1] ? t[1][idx[1][j]].name : NULL;
        int c = na == NULL ? 1 : nb == NULL ? -1 : strcmp(na, nb);
        if (c != 0 || h[0][idx[0][i]] != h[1][idx[1][j]]) {
            snprintf(name, cap, "%s", c <= 0 ? na : nb);
            break;
        }
        i++;
        j++;
    }
out:
    for (int k = 0; k < 2; k++) {
        free(t[k]);
        free(h[k]);
        free(idx[k]);
    }
    return s;
}

/* The tolerance rule of verify --loss-rtol/--loss-atol: |a − b| <= atol +
 * rtol·|b|. Equal bit patterns always pass (two NaNs of one pattern
 * included); any other NaN fails. */
int runlog_loss_within(double a, double b, double rtol, double atol)
{
    if (memcmp(&a, &b, sizeof a) == 0)
        return 1;
    double d = a - b;
    if (d < 0)
        d = -d;
    double mb = b < 0 ? -b : b;
    return d <= atol + rtol * mb;   /* false for a NaN on either side */
}
