/* runlog_read.c — reading runs back: finding a run by id or name, a run's
 * row, the list of runs, its steps, evaluations, verdicts, checkpoints,
 * processes and settings, and where two runs first differ.
 *
 * Reads of runs, steps, evaluations and divergences first flush this
 * handle's buffered steps, so a handle always sees its own writes. A "running" row whose writer is gone
 * reads as "interrupted" (runlog_live.c); the row itself is not rewritten.
 */
#include "record/runlog_impl.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char RUNLOG_FIRST_DIVERGENCE_SQL[] =
    "SELECT min(a.step)\n"
    "  FROM steps AS a\n"
    "  JOIN steps AS b ON b.run = ?2 AND b.step = a.step\n"
    " WHERE a.run = ?1\n"
    "   AND (a.param_hash <> b.param_hash\n"
    "        OR (a.step >= 1 AND a.loss_bits IS NOT b.loss_bits))";

/* "no run 'X' in DB", X escaped: what was typed may hold anything, and the
 * error is one line. */
static ls_status rl_no_run(const runlog *r, const char *id_or_name, ls_err *err)
{
    char shown[RUNLOG_NAME_BYTES * 4];
    rl_escape_name(id_or_name, shown, sizeof shown);
    return ls_fail(err, LS_ENOTFOUND, "no run '%s' in %s", shown, r->path);
}

ls_status runlog_find(runlog *r, const char *id_or_name, int64_t *run_id, ls_err *err)
{
    if (id_or_name == NULL || id_or_name[0] == 0)
        return ls_fail(err, LS_ENOTFOUND, "no run '' in %s", r->path);
    int by_id = rl_all_digits(id_or_name);
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, by_id ? "SELECT id FROM runs WHERE id = ?1"
                                      : "SELECT id FROM runs WHERE name = ?1",
                             &st, "finding a run", err);
    if (s != LS_OK)
        return s;
    if (by_id) {
        errno = 0;
        char *end;
        long long v = strtoll(id_or_name, &end, 10);
        if (errno != 0 || *end != 0) {
            sqlite3_finalize(st);
            return rl_no_run(r, id_or_name, err);
        }
        sqlite3_bind_int64(st, 1, v);
    } else {
        sqlite3_bind_text(st, 1, id_or_name, -1, SQLITE_TRANSIENT);
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *run_id = sqlite3_column_int64(st, 0);
        s = LS_OK;
    } else if (rc == SQLITE_DONE) {
        s = rl_no_run(r, id_or_name, err);
    } else {
        s = rl_dberr(r, "finding a run", err);
    }
    sqlite3_finalize(st);
    return s;
}

/* Column order of rl_run_sql; rl_fill_run reads by these numbers. */
enum {
    RC_ID, RC_NAME, RC_MODEL, RC_TASK, RC_STATUS, RC_STARTED, RC_ENDED, RC_ENGINE, RC_COMPILER,
    RC_CFLAGS, RC_HOST, RC_CPU, RC_GIT, RC_REDUCE, RC_THREADS, RC_CONFIG_HASH, RC_CONFIG_TEXT,
    RC_PID, RC_PID_START, RC_BOOT, RC_LAST_STEP, RC_LAST_TRAJ, RC_TARGET, RC_CKPT_EVERY, RC_CKPT_DIR
};

#define RL_RUN_SQL                                                                       \
    "SELECT r.id, r.name, r.model, r.task, r.status, r.started, r.ended,"              \
    " r.engine_version, r.compiler, r.cflags, r.host, r.cpu, r.git_commit, r.reduce,"  \
    " r.threads, r.config_hash, r.config_text, r.pid, r.pid_start, r.boot_id,"         \
    " (SELECT s.step FROM steps AS s WHERE s.run = r.id ORDER BY s.step DESC LIMIT 1),"   \
    " (SELECT s.traj_hash FROM steps AS s WHERE s.run = r.id ORDER BY s.step DESC LIMIT 1)," \
    " r.target_steps, r.checkpoint_every, r.checkpoint_dir"                            \
    " FROM runs AS r"

static ls_status rl_fill_run(runlog *r, sqlite3_stmt *st, runlog_run *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    out->id = sqlite3_column_int64(st, RC_ID);
    rl_copy(out->name, sizeof out->name, sqlite3_column_text(st, RC_NAME));
    rl_copy(out->model, sizeof out->model, sqlite3_column_text(st, RC_MODEL));
    rl_copy(out->task, sizeof out->task, sqlite3_column_text(st, RC_TASK));
    rl_copy(out->status, sizeof out->status, sqlite3_column_text(st, RC_STATUS));
    rl_copy(out->started, sizeof out->started, sqlite3_column_text(st, RC_STARTED));
    rl_copy(out->ended, sizeof out->ended, sqlite3_column_text(st, RC_ENDED));
    rl_copy(out->engine_version, sizeof out->engine_version, sqlite3_column_text(st, RC_ENGINE));
    rl_copy(out->compiler, sizeof out->compiler, sqlite3_column_text(st, RC_COMPILER));
    rl_copy(out->cflags, sizeof out->cflags, sqlite3_column_text(st, RC_CFLAGS));
    rl_copy(out->host, sizeof out->host, sqlite3_column_text(st, RC_HOST));
    rl_copy(out->cpu, sizeof out->cpu, sqlite3_column_text(st, RC_CPU));
    rl_copy(out->git_commit, sizeof out->git_commit, sqlite3_column_text(st, RC_GIT));
    rl_copy(out->reduce, sizeof out->reduce, sqlite3_column_text(st, RC_REDUCE));
    out->threads = sqlite3_column_int(st, RC_THREADS);
    out->config_hash = rl_u64(sqlite3_column_int64(st, RC_CONFIG_HASH));
    if (sqlite3_column_type(st, RC_LAST_STEP) == SQLITE_NULL) {
        out->n_steps = -1;
        out->last_traj_hash = 0;
    } else {
        out->n_steps = sqlite3_column_int64(st, RC_LAST_STEP);
        out->last_traj_hash = rl_u64(sqlite3_column_int64(st, RC_LAST_TRAJ));
    }
    if (strcmp(out->status, "running") == 0 && rl_writer_gone(st, RC_PID, RC_PID_START, RC_BOOT))
        rl_copy(out->status, sizeof out->status, (const unsigned char *)"interrupted");
    out->pid = sqlite3_column_type(st, RC_PID) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, RC_PID);
    out->target_steps = sqlite3_column_type(st, RC_TARGET) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, RC_TARGET);
    out->checkpoint_every =
        sqlite3_column_type(st, RC_CKPT_EVERY) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, RC_CKPT_EVERY);
    if (sqlite3_column_type(st, RC_CKPT_DIR) != SQLITE_NULL) {
        const unsigned char *d = sqlite3_column_text(st, RC_CKPT_DIR);
        size_t dn = (size_t)sqlite3_column_bytes(st, RC_CKPT_DIR);
        out->checkpoint_dir = malloc(dn + 1);
        if (out->checkpoint_dir == NULL)
            return ls_fail(err, LS_ENOMEM, "%s: out of memory reading run %lld", r->path, (long long)out->id);
        if (dn > 0)
            memcpy(out->checkpoint_dir, d, dn);
        out->checkpoint_dir[dn] = 0;
    }

    const unsigned char *text = sqlite3_column_text(st, RC_CONFIG_TEXT);
    size_t n = (size_t)sqlite3_column_bytes(st, RC_CONFIG_TEXT);
    out->config_text = malloc(n + 1);
    if (out->config_text == NULL) {
        runlog_run_free(out);
        return ls_fail(err, LS_ENOMEM, "%s: out of memory reading run %lld", r->path,
                       (long long)out->id);
    }
    if (n > 0)
        memcpy(out->config_text, text, n);
    out->config_text[n] = 0;
    /* An external run (schema version 2): a row in run_external. A
     * version-1 file (read as a source) has no such table: none is. */
    sqlite3_stmt *xq;
    if (sqlite3_prepare_v2(r->db, "SELECT framework FROM run_external WHERE run = ?1", -1, &xq, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(xq, 1, out->id);
        if (sqlite3_step(xq) == SQLITE_ROW) {
            out->external = 1;
            rl_copy(out->framework, sizeof out->framework, sqlite3_column_text(xq, 0));
        }
        sqlite3_finalize(xq);
    }
    return LS_OK;
}

ls_status runlog_get_run(runlog *r, int64_t run_id, runlog_run *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK)
        return s;
    sqlite3_stmt *st;
    s = rl_prepare(r, RL_RUN_SQL " WHERE r.id = ?1", &st, "reading a run", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        s = rl_fill_run(r, st, out, err);
    else if (rc == SQLITE_DONE)
        s = ls_fail(err, LS_ENOTFOUND, "no run %lld in %s", (long long)run_id, r->path);
    else
        s = rl_dberr(r, "reading a run", err);
    sqlite3_finalize(st);
    if (s != LS_OK)
        return s;
    /* Its sources, when the database has the table and the run has a row. */
    if (sqlite3_prepare_v2(r->db, "SELECT text FROM run_sources WHERE run = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL) {
            const char *text = (const char *)sqlite3_column_text(st, 0);
            size_t n = strlen(text);
            out->source_text = malloc(n + 1);
            if (out->source_text == NULL)
                s = ls_fail(err, LS_ENOMEM, "reading a run: out of memory");
            else
                memcpy(out->source_text, text, n + 1);
        }
        sqlite3_finalize(st);
    }
    if (s != LS_OK)
        runlog_run_free(out);
    return s;
}

void runlog_run_free(runlog_run *run)
{
    if (run == NULL)
        return;
    free(run->config_text);
    run->config_text = NULL;
    free(run->checkpoint_dir);
    run->checkpoint_dir = NULL;
    free(run->source_text);
    run->source_text = NULL;
}

/* Grows a malloc'ed array geometrically; 0 on failure (the old block stays). */
static int rl_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (q == NULL)
        return 0;
    *p = q;
    *cap = c;
    return 1;
}

ls_status runlog_list(runlog *r, runlog_run **runs, size_t *n, ls_err *err)
{
    *runs = NULL;
    *n = 0;
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK)
        return s;
    sqlite3_stmt *st;
    s = rl_prepare(r, RL_RUN_SQL " ORDER BY r.id", &st, "listing runs", err);
    if (s != LS_OK)
        return s;
    runlog_run *arr = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!rl_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            s = ls_fail(err, LS_ENOMEM, "%s: out of memory listing runs", r->path);
            break;
        }
        s = rl_fill_run(r, st, &arr[cnt], err);
        if (s != LS_OK) {
            runlog_run_free(&arr[cnt]);
            break;
        }
        cnt++;
    }
    if (s == LS_OK && rc != SQLITE_DONE)
        s = rl_dberr(r, "listing runs", err);
    sqlite3_finalize(st);
    if (s != LS_OK) {
        for (size_t i = 0; i < cnt; i++)
            runlog_run_free(&arr[i]);
        free(arr);
        return s;
    }
    *runs = arr;
    *n = cnt;
    return LS_OK;
}

ls_status runlog_read_steps(runlog *r, int64_t run_id, ls_step **steps, size_t *n, ls_err *err)
{
    *steps = NULL;
    *n = 0;
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK)
        return s;
    sqlite3_stmt *st;
    s = rl_prepare(r, "SELECT step, loss_bits, param_hash, traj_hash, seconds"
                      " FROM steps WHERE run = ?1 ORDER BY step",
                   &st, "reading steps", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    ls_step *arr = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!rl_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            s = ls_fail(err, LS_ENOMEM, "%s: out of memory reading steps of run %lld", r->path,
                        (long long)run_id);
            break;
        }
        ls_step *o = &arr[cnt++];
        memset(o, 0, sizeof *o);
        o->step = sqlite3_column_int64(st, 0);
        o->has_loss = sqlite3_column_type(st, 1) != SQLITE_NULL;
        o->loss_bits = o->has_loss ? rl_u64(sqlite3_column_int64(st, 1)) : 0;
        o->param_hash = rl_u64(sqlite3_column_int64(st, 2));
        o->traj_hash = rl_u64(sqlite3_column_int64(st, 3));
        o->seconds = sqlite3_column_double(st, 4);
    }
    if (s == LS_OK && rc != SQLITE_DONE)
        s = rl_dberr(r, "reading steps", err);
    sqlite3_finalize(st);
    if (s != LS_OK) {
        free(arr);
        return s;
    }
    *steps = arr;
    *n = cnt;
    return LS_OK;
}

ls_status runlog_read_evals(runlog *r, int64_t run_id, runlog_evalrow **rows, size_t *n,
                            ls_err *err)
{
    *rows = NULL;
    *n = 0;
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK)
        return s;
    sqlite3_stmt *st;
    s = rl_prepare(r, "SELECT step, name, value FROM evals WHERE run = ?1 ORDER BY step, name",
                   &st, "reading evaluations", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    runlog_evalrow *arr = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!rl_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            s = ls_fail(err, LS_ENOMEM, "%s: out of memory reading evaluations of run %lld",
                        r->path, (long long)run_id);
            break;
        }
        runlog_evalrow *o = &arr[cnt++];
        memset(o, 0, sizeof *o);
        o->step = sqlite3_column_int64(st, 0);
        rl_copy(o->name, sizeof o->name, sqlite3_column_text(st, 1));
        /* A NaN value was stored as NULL by SQLite. */
        o->value = sqlite3_column_type(st, 2) == SQLITE_NULL ? (double)NAN
                                                             : sqlite3_column_double(st, 2);
    }
    if (s == LS_OK && rc != SQLITE_DONE)
        s = rl_dberr(r, "reading evaluations", err);
    sqlite3_finalize(st);
    if (s != LS_OK) {
        free(arr);
        return s;
    }
    *rows = arr;
    *n = cnt;
    return LS_OK;
}

ls_status runlog_first_divergence(runlog *r, int64_t a, int64_t b, int64_t *step, ls_err *err)
{
    *step = -1;
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK)
        return s;
    sqlite3_stmt *st;
    s = rl_prepare(r, RUNLOG_FIRST_DIVERGENCE_SQL, &st, "comparing runs", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) != SQLITE_NULL)
            *step = sqlite3_column_int64(st, 0);
    } else if (rc != SQLITE_DONE) {
        s = rl_dberr(r, "comparing runs", err);
    }
    sqlite3_finalize(st);
    return s;
}

int64_t runlog_divergence_rows(const ls_step *a, size_t na, const ls_step *b, size_t nb)
{
    /* RUNLOG_FIRST_DIVERGENCE_SQL over rows in memory: a merge of the two
     * step-ordered lists; "IS NOT" makes a missing loss equal only to a
     * missing loss. */
    for (size_t i = 0, j = 0; i < na && j < nb;) {
        if (a[i].step < b[j].step) {
            i++;
        } else if (a[i].step > b[j].step) {
            j++;
        } else {
            const ls_step *x = &a[i++], *y = &b[j++];
            if (x->param_hash != y->param_hash)
                return x->step;
            if (x->step >= 1 && (x->has_loss != y->has_loss || (x->has_loss && x->loss_bits != y->loss_bits)))
                return x->step;
        }
    }
    return -1;
}

ls_status runlog_verdicts(runlog *r, int64_t run_id, runlog_verdictrow **rows, size_t *n, ls_err *err)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, "SELECT kind, run_a, run_b, equal, first_diff_step, detail, created FROM verdicts"
                                " WHERE run_a = ?1 OR run_b = ?1 ORDER BY id",
                             &st, "reading verdicts", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!rl_grow((void **)rows, &cap, *n + 1, sizeof **rows)) {
            s = ls_fail(err, LS_ENOMEM, "%s: out of memory reading verdicts of run %lld", r->path,
                        (long long)run_id);
            break;
        }
        runlog_verdictrow *p = &(*rows)[(*n)++];
        memset(p, 0, sizeof *p);
        const unsigned char *t;
        if ((t = sqlite3_column_text(st, 0)) != NULL)
            snprintf(p->kind, sizeof p->kind, "%s", (const char *)t);
        p->run_a = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1);
        p->run_b = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
        p->equal = sqlite3_column_int(st, 3) != 0;
        p->first_diff_step = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 4);
        if ((t = sqlite3_column_text(st, 5)) != NULL)
            snprintf(p->detail, sizeof p->detail, "%s", (const char *)t);
        if ((t = sqlite3_column_text(st, 6)) != NULL)
            snprintf(p->created, sizeof p->created, "%s", (const char *)t);
    }
    if (s == LS_OK && rc != SQLITE_DONE)
        s = rl_dberr(r, "reading verdicts", err);
    sqlite3_finalize(st);
    if (s != LS_OK) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    return s;
}

ls_status runlog_checkpoints(runlog *r, int64_t run_id, runlog_ckpt **rows, size_t *n, ls_err *err)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, "SELECT step, path, state_hash FROM checkpoints WHERE run = ?1"
                                " ORDER BY step, created",
                             &st, "reading checkpoints", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    runlog_ckpt *arr = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!rl_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            s = ls_fail(err, LS_ENOMEM, "%s: out of memory reading checkpoints of run %lld", r->path,
                        (long long)run_id);
            break;
        }
        runlog_ckpt *o = &arr[cnt];
        o->step = sqlite3_column_int64(st, 0);
        o->state_hash = rl_u64(sqlite3_column_int64(st, 2));
        const unsigned char *p = sqlite3_column_text(st, 1);
        size_t pl = (size_t)sqlite3_column_bytes(st, 1);
        o->path = malloc(pl + 1);
        if (o->path == NULL) {
            s = ls_fail(err, LS_ENOMEM, "%s: out of memory reading checkpoints of run %lld", r->path,
                        (long long)run_id);
            break;
        }
        if (pl > 0)
            memcpy(o->path, p, pl);
        o->path[pl] = 0;
        cnt++;
    }
    if (s == LS_OK && rc != SQLITE_DONE)
        s = rl_dberr(r, "reading checkpoints", err);
    sqlite3_finalize(st);
    if (s != LS_OK) {
        runlog_checkpoints_free(arr, cnt);
        return s;
    }
    *rows = arr;
    *n = cnt;
    return LS_OK;
}

void runlog_checkpoints_free(runlog_ckpt *rows, size_t n)
{
    for (size_t i = 0; rows != NULL && i < n; i++)
        free(rows[i].path);
    free(rows);
}

ls_status runlog_processes(runlog *r, int64_t run_id, runlog_process **rows, size_t *n, ls_err *err)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    /* A database from before the table existed has no processes to list. */
    if (sqlite3_prepare_v2(r->db, "SELECT started, ended, host, pid, threads, build, first_step, last_step"
                                  " FROM run_processes WHERE run = ?1 ORDER BY rowid", -1, &st, NULL) != SQLITE_OK)
        return LS_OK;
    sqlite3_bind_int64(st, 1, run_id);
    size_t cap = 0;
    ls_status s = LS_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t c = cap ? 2 * cap : 4;
            runlog_process *p = realloc(*rows, c * sizeof *p);
            if (p == NULL) {
                s = ls_fail(err, LS_ENOMEM, "reading processes: out of memory");
                break;
            }
            *rows = p;
            cap = c;
        }
        runlog_process *p = &(*rows)[(*n)++];
        memset(p, 0, sizeof *p);
        const unsigned char *t;
        if ((t = sqlite3_column_text(st, 0)) != NULL)
            snprintf(p->started, sizeof p->started, "%s", (const char *)t);
        if ((t = sqlite3_column_text(st, 1)) != NULL)
            snprintf(p->ended, sizeof p->ended, "%s", (const char *)t);
        if ((t = sqlite3_column_text(st, 2)) != NULL)
            snprintf(p->host, sizeof p->host, "%s", (const char *)t);
        p->pid = sqlite3_column_int64(st, 3);
        p->threads = sqlite3_column_int(st, 4);
        if ((t = sqlite3_column_text(st, 5)) != NULL)
            snprintf(p->build, sizeof p->build, "%s", (const char *)t);
        p->first_step = sqlite3_column_int64(st, 6);
        p->last_step = sqlite3_column_type(st, 7) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 7);
    }
    if (s == LS_OK && rc != SQLITE_DONE)
        s = rl_dberr(r, "reading processes", err);
    sqlite3_finalize(st);
    if (s != LS_OK) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    return s;
}

int runlog_setting_get(runlog *r, int64_t run_id, const char *key, char *value, size_t cap)
{
    sqlite3_stmt *st;
    if (cap == 0 || sqlite3_prepare_v2(r->db, "SELECT value FROM run_settings WHERE run = ?1 AND key = ?2", -1, &st,
                                       NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
    int found = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL) {
        snprintf(value, cap, "%s", (const char *)sqlite3_column_text(st, 0));
        found = 1;
    }
    sqlite3_finalize(st);
    return found;
}
