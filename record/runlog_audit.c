/* runlog_audit.c — audits: the verdict of proving a recorded run, one row
 * per audit in table `audits` (runlog.h says what each field means).
 *
 * The table is made, and an older one given its build column, by
 * rl_audit_table (runlog.c) before the first audit is written; a database
 * without it has no audits to list.
 */
#include "record/runlog_impl.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ls_status runlog_audit_add(runlog *r, int64_t run_id, const runlog_audit *a, ls_err *err)
{
    ls_status s = rl_audit_table(r, "recording an audit", err);
    if (s != LS_OK)
        return s;
    sqlite3_stmt *st;
    s = rl_prepare(r,
        "INSERT INTO audits(run, created, version, host, threads, mode, steps, verdict, first_bad_step, detail,"
        " build) VALUES(?1, " RL_NOW ", ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        &st, "recording an audit", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    rl_bind_text_or_null(st, 2, a->version);
    rl_bind_text_or_null(st, 3, a->host);
    if (a->threads > 0) sqlite3_bind_int(st, 4, a->threads); else sqlite3_bind_null(st, 4);
    sqlite3_bind_text(st, 5, a->mode, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 6, a->steps);
    sqlite3_bind_text(st, 7, a->proved ? "proved" : "failed", -1, SQLITE_STATIC);
    if (a->first_bad >= 0) sqlite3_bind_int64(st, 8, a->first_bad); else sqlite3_bind_null(st, 8);
    rl_bind_text_or_null(st, 9, a->detail);
    rl_bind_text_or_null(st, 10, a->build[0] ? a->build : NULL);
    return rl_write_one(r, st, "recording an audit", err);
}

ls_status runlog_audits(runlog *r, int64_t run_id, runlog_audit **rows, size_t *n, ls_err *err)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    /* A database from before the table existed has no audits to list. */
    if (sqlite3_prepare_v2(r->db, "SELECT created, version, host, threads, mode, steps, verdict, first_bad_step,"
                                  " detail, build FROM audits WHERE run = ?1 ORDER BY id", -1, &st, NULL) != SQLITE_OK &&
        sqlite3_prepare_v2(r->db, "SELECT created, version, host, threads, mode, steps, verdict, first_bad_step,"
                                  " detail, NULL FROM audits WHERE run = ?1 ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return LS_OK;
    sqlite3_bind_int64(st, 1, run_id);
    size_t cap = 0;
    ls_status s = LS_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t c = cap ? 2 * cap : 4;
            runlog_audit *p = realloc(*rows, c * sizeof *p);
            if (p == NULL) {
                s = ls_fail(err, LS_ENOMEM, "reading audits: out of memory");
                break;
            }
            *rows = p;
            cap = c;
        }
        runlog_audit *p = &(*rows)[(*n)++];
        memset(p, 0, sizeof *p);
        const unsigned char *t;
        if ((t = sqlite3_column_text(st, 0)) != NULL)
            snprintf(p->created, sizeof p->created, "%s", (const char *)t);
        if ((t = sqlite3_column_text(st, 1)) != NULL)
            snprintf(p->version, sizeof p->version, "%s", (const char *)t);
        if ((t = sqlite3_column_text(st, 2)) != NULL)
            snprintf(p->host, sizeof p->host, "%s", (const char *)t);
        p->threads = sqlite3_column_int(st, 3);
        if ((t = sqlite3_column_text(st, 4)) != NULL)
            snprintf(p->mode, sizeof p->mode, "%s", (const char *)t);
        p->steps = sqlite3_column_int64(st, 5);
        t = sqlite3_column_text(st, 6);
        p->proved = t != NULL && strcmp((const char *)t, "proved") == 0;
        p->first_bad = sqlite3_column_type(st, 7) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 7);
        if ((t = sqlite3_column_text(st, 8)) != NULL)
            snprintf(p->detail, sizeof p->detail, "%s", (const char *)t);
        if ((t = sqlite3_column_text(st, 9)) != NULL)
            snprintf(p->build, sizeof p->build, "%s", (const char *)t);
    }
    if (s == LS_OK && rc != SQLITE_DONE)
        s = rl_dberr(r, "reading audits", err);
    sqlite3_finalize(st);
    if (s != LS_OK) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    return s;
}
