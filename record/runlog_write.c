/* runlog_write.c — recording runs: a run's row, its steps, evaluations,
 * checkpoints, verdicts, processes and settings, and claiming a run to
 * resume it.
 *
 * Step rows are buffered in the handle and written RUNLOG_BATCH at a time in
 * one transaction, because one commit per step would make the fsync of the
 * log cost more than the step. Runs, evaluations, checkpoints and verdicts
 * are rare and are committed at once, each in its own transaction, so a
 * crash never loses them.
 *
 * The loss is stored twice: as REAL for people and SQL (SQLite turns NaN
 * into NULL there) and as its exact binary64 bits, which is what every
 * comparison uses.
 */
#include "record/runlog_impl.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ls_status runlog_run_begin(runlog *r, const runlog_run_info *info, int64_t *run_id, ls_err *err)
{
    const char *name = info->name;
    int auto_name = name == NULL || name[0] == 0;
    if (info->config_text == NULL)
        return ls_fail(err, LS_EINVAL, "run config text is missing");
    if (!auto_name) {
        ls_status ns = runlog_check_name(name, err);
        if (ns != LS_OK)
            return ns;
    }

    char boot[64];
    rl_boot_id(boot, sizeof boot);
    long long pid = (long long)getpid();
    char state = 0;
    unsigned long long start = 0;
    int have_start = rl_proc_stat(pid, &state, &start) == 0;

    sqlite3_stmt *st;
    ls_status s = rl_prepare(r,
        "INSERT INTO runs(name, model, task, config_text, config_hash, status, started,"
        " engine_version, compiler, cflags, host, cpu, threads, reduce, git_commit,"
        " pid, pid_start, boot_id, target_steps, checkpoint_every, checkpoint_dir)"
        " VALUES(?1, ?2, ?3, ?4, ?5, 'running', " RL_NOW ","
        " ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
        &st, "starting a run", err);
    if (s != LS_OK)
        return s;
    /* An automatic name is filled in once the id is known; "" is never a
     * committed name (the UPDATE below runs in the same transaction). */
    sqlite3_bind_text(st, 1, auto_name ? "" : name, -1, SQLITE_TRANSIENT);
    rl_bind_text_or_null(st, 2, info->model);
    rl_bind_text_or_null(st, 3, info->task);
    sqlite3_bind_text(st, 4, info->config_text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, rl_i64(info->config_hash));
    rl_bind_text_or_null(st, 6, info->engine_version);
    rl_bind_text_or_null(st, 7, info->compiler);
    rl_bind_text_or_null(st, 8, info->cflags);
    rl_bind_text_or_null(st, 9, info->host);
    rl_bind_text_or_null(st, 10, info->cpu);
    sqlite3_bind_int(st, 11, info->threads);
    rl_bind_text_or_null(st, 12, info->reduce);
    rl_bind_text_or_null(st, 13, info->git_commit);
    sqlite3_bind_int64(st, 14, pid);
    if (have_start)
        sqlite3_bind_int64(st, 15, rl_i64(start));
    else
        sqlite3_bind_null(st, 15);
    rl_bind_text_or_null(st, 16, boot[0] ? boot : NULL);
    rl_bind_pos_or_null(st, 17, info->target_steps);
    rl_bind_pos_or_null(st, 18, info->checkpoint_every);
    rl_bind_text_or_null(st, 19, info->checkpoint_dir != NULL && info->checkpoint_dir[0] ? info->checkpoint_dir : NULL);

    s = rl_begin(r, "starting a run", err);
    if (s != LS_OK) {
        sqlite3_finalize(st);
        return s;
    }
    if (sqlite3_step(st) != SQLITE_DONE) {
        if ((sqlite3_extended_errcode(r->db)) == SQLITE_CONSTRAINT_UNIQUE)
            s = ls_fail(err, LS_EEXIST, "run name '%s' is already used in %s",
                        auto_name ? "" : name, r->path);   /* checked above: prints as itself */
        else
            s = rl_dberr(r, "starting a run", err);
        sqlite3_finalize(st);
        rl_rollback(r);
        return s;
    }
    sqlite3_finalize(st);
    int64_t id = (int64_t)sqlite3_last_insert_rowid(r->db);

    if (info->source_text != NULL && info->source_text[0] != '\0') {
        if (sqlite3_exec(r->db, rl_sources_schema, NULL, NULL, NULL) != SQLITE_OK ||
            rl_prepare(r, "INSERT INTO run_sources(run, text) VALUES(?1, ?2)", &st, "recording a run's sources",
                       err) != LS_OK) {
            s = rl_dberr(r, "recording a run's sources", err);
            rl_rollback(r);
            return s;
        }
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, info->source_text, -1, SQLITE_TRANSIENT);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            s = rl_dberr(r, "recording a run's sources", err);
            rl_rollback(r);
            return s;
        }
    }
    if (info->framework != NULL) {
        if (rl_prepare(r, "INSERT INTO run_external(run, framework) VALUES(?1, ?2)", &st, "recording an external run",
                       err) != LS_OK) {
            s = rl_dberr(r, "recording an external run", err);
            rl_rollback(r);
            return s;
        }
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, info->framework, -1, SQLITE_TRANSIENT);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            s = rl_dberr(r, "recording an external run", err);
            rl_rollback(r);
            return s;
        }
    }
    if (auto_name) {
        /* "run-<id>", or "run-<id>.2", ... when a person already chose that name. */
        s = rl_prepare(r, "UPDATE runs SET name = ?1 WHERE id = ?2", &st, "naming a run", err);
        for (int k = 1; s == LS_OK; k++) {
            char auto_buf[64];
            if (k == 1)
                snprintf(auto_buf, sizeof auto_buf, "run-%lld", (long long)id);
            else
                snprintf(auto_buf, sizeof auto_buf, "run-%lld.%d", (long long)id, k);
            sqlite3_reset(st);
            sqlite3_bind_text(st, 1, auto_buf, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 2, id);
            if (sqlite3_step(st) == SQLITE_DONE)
                break;
            if (sqlite3_extended_errcode(r->db) != SQLITE_CONSTRAINT_UNIQUE || k >= 1000)
                s = rl_dberr(r, "naming a run", err);
        }
        sqlite3_finalize(st);
        if (s != LS_OK) {
            rl_rollback(r);
            return s;
        }
    }
    s = rl_commit(r, "starting a run", err);
    if (s == LS_OK)
        *run_id = id;
    return s;
}

ls_status runlog_flush(runlog *r, ls_err *err)
{
    if (r->n_buf == 0)
        return LS_OK;
    char what[64];
    snprintf(what, sizeof what, "writing %zu steps", r->n_buf);
    ls_status st = rl_begin(r, what, err);
    if (st != LS_OK)
        return st;
    for (size_t i = 0; i < r->n_buf; i++) {
        const rl_row *row = &r->buf[i];
        sqlite3_stmt *q = r->ins_step;
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, row->run);
        sqlite3_bind_int64(q, 2, row->s.step);
        if (row->s.has_loss) {
            /* NaN binds as NULL and -0.0 may read back as +0.0 here; the
             * exact value lives in loss_bits. */
            sqlite3_bind_double(q, 3, hash_bits_to_double(row->s.loss_bits));
            sqlite3_bind_int64(q, 4, rl_i64(row->s.loss_bits));
        } else {
            sqlite3_bind_null(q, 3);
            sqlite3_bind_null(q, 4);
        }
        sqlite3_bind_int64(q, 5, rl_i64(row->s.param_hash));
        sqlite3_bind_int64(q, 6, rl_i64(row->s.traj_hash));
        sqlite3_bind_double(q, 7, row->s.seconds);
        if (sqlite3_step(q) != SQLITE_DONE) {
            char what_row[96];
            snprintf(what_row, sizeof what_row, "writing step %lld of run %lld",
                     (long long)row->s.step, (long long)row->run);
            st = rl_dberr(r, what_row, err);
            sqlite3_reset(q);
            rl_rollback(r);
            return st;  /* rows stay buffered: a later flush may retry */
        }
    }
    sqlite3_reset(r->ins_step);  /* release the statement before COMMIT */
    /* The steps' per-tensor hashes, in the same transaction as their rows. */
    sqlite3_stmt *qt = NULL;
    for (size_t i = 0; i < r->n_buf; i++) {
        const rl_row *row = &r->buf[i];
        if (row->thash == NULL)
            continue;
        if (qt == NULL && (st = rl_prepare(r, "INSERT INTO step_tensors(run, step, hashes) VALUES(?1, ?2, ?3)", &qt,
                                           "writing per-tensor hashes", err)) != LS_OK) {
            rl_rollback(r);
            return st;
        }
        sqlite3_reset(qt);
        sqlite3_bind_int64(qt, 1, row->run);
        sqlite3_bind_int64(qt, 2, row->s.step);
        sqlite3_bind_blob(qt, 3, row->thash, (int)row->thash_bytes, SQLITE_STATIC);
        if (sqlite3_step(qt) != SQLITE_DONE) {
            char what_row[96];
            snprintf(what_row, sizeof what_row, "writing the tensor hashes of step %lld of run %lld",
                     (long long)row->s.step, (long long)row->run);
            st = rl_dberr(r, what_row, err);
            sqlite3_finalize(qt);
            rl_rollback(r);
            return st;
        }
    }
    sqlite3_finalize(qt);
    if (r->commit_hook != NULL)
        r->commit_hook(r->commit_hook_ctx);
    st = rl_commit(r, what, err);
    if (st == LS_OK) {
        for (size_t i = 0; i < r->n_buf; i++) {
            free(r->buf[i].thash);
            r->buf[i].thash = NULL;
        }
        r->n_buf = 0;
    }
    return st;
}

ls_status runlog_step(runlog *r, int64_t run_id, const ls_step *s, ls_err *err)
{
    return runlog_step_tensors(r, run_id, s, NULL, 0, err);
}

ls_status runlog_step_tensors(runlog *r, int64_t run_id, const ls_step *s, const uint64_t *hashes, size_t n,
                              ls_err *err)
{
    /* A full buffer here means an earlier batch failed to commit: retry it
     * first, and refuse the new row rather than drop an old one. */
    if (r->n_buf == RUNLOG_BATCH) {
        ls_status st = runlog_flush(r, err);
        if (st != LS_OK)
            return st;
    }
    unsigned char *blob = NULL;
    if (hashes != NULL) {
        /* 8 bytes LE per tensor; a zero-length blob would bind as NULL. */
        blob = malloc(n > 0 ? 8 * n : 1);
        if (blob == NULL)
            return ls_fail(err, LS_ENOMEM, "%s: out of memory buffering step %lld", r->path, (long long)s->step);
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 8; k++)
                blob[8 * i + (size_t)k] = (unsigned char)(hashes[i] >> (8 * k));
    }
    r->buf[r->n_buf].run = run_id;
    r->buf[r->n_buf].s = *s;
    r->buf[r->n_buf].thash = blob;
    r->buf[r->n_buf].thash_bytes = 8 * n;
    r->n_buf++;
    return r->n_buf == RUNLOG_BATCH ? runlog_flush(r, err) : LS_OK;
}

ls_status runlog_eval(runlog *r, int64_t run_id, int64_t step, const char *name, double value,
                      ls_err *err)
{
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, "INSERT OR REPLACE INTO evals(run, step, name, value) VALUES(?1, ?2, ?3, ?4)",
                             &st, "recording an evaluation", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, step);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 4, value);
    return rl_write_one(r, st, "recording an evaluation", err);
}

ls_status runlog_process_begin(runlog *r, int64_t run_id, const char *host, int threads, const char *build,
                               int64_t first_step, int64_t *process_id, ls_err *err)
{
    *process_id = -1;
    if (sqlite3_exec(r->db, rl_process_schema, NULL, NULL, NULL) != SQLITE_OK)
        return rl_dberr(r, "recording the process", err);
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, "INSERT INTO run_processes(run, started, host, pid, threads, build, first_step)"
                             " VALUES(?1, " RL_NOW ", ?2, ?3, ?4, ?5, ?6)", &st, "recording the process", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    rl_bind_text_or_null(st, 2, host);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)getpid());
    sqlite3_bind_int(st, 4, threads);
    rl_bind_text_or_null(st, 5, build);
    sqlite3_bind_int64(st, 6, first_step);
    s = rl_write_one(r, st, "recording the process", err);
    if (s == LS_OK)
        *process_id = (int64_t)sqlite3_last_insert_rowid(r->db);
    return s;
}

ls_status runlog_process_end(runlog *r, int64_t process_id, int64_t last_step, ls_err *err)
{
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, "UPDATE run_processes SET ended = " RL_NOW ", last_step = ?1 WHERE rowid = ?2", &st,
                             "recording the process", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, last_step);
    sqlite3_bind_int64(st, 2, process_id);
    return rl_write_one(r, st, "recording the process", err);
}

ls_status runlog_setting_set(runlog *r, int64_t run_id, const char *key, const char *value, ls_err *err)
{
    if (sqlite3_exec(r->db, rl_process_schema, NULL, NULL, NULL) != SQLITE_OK)
        return rl_dberr(r, "recording a run setting", err);
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, "INSERT OR REPLACE INTO run_settings(run, key, value) VALUES(?1, ?2, ?3)", &st,
                             "recording a run setting", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, value, -1, SQLITE_TRANSIENT);
    return rl_write_one(r, st, "recording a run setting", err);
}

ls_status runlog_run_end(runlog *r, int64_t run_id, const char *status, ls_err *err)
{
    static const char *const ok[] = {"done", "interrupted", "diverged", "failed"};
    int valid = 0;
    for (size_t i = 0; status != NULL && i < sizeof ok / sizeof ok[0]; i++)
        valid |= strcmp(status, ok[i]) == 0;
    if (!valid)
        return ls_fail(err, LS_EINVAL, "run status '%s' is not done, interrupted, diverged or failed",
                       status != NULL ? status : "(null)");
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK)
        return s;
    sqlite3_stmt *st;
    s = rl_prepare(r, "UPDATE runs SET status = ?1, ended = " RL_NOW " WHERE id = ?2", &st,
                   "ending a run", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_text(st, 1, status, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, run_id);
    s = rl_write_one(r, st, "ending a run", err);
    if (s == LS_OK && sqlite3_changes(r->db) == 0)
        return ls_fail(err, LS_ENOTFOUND, "no run %lld in %s", (long long)run_id, r->path);
    return s;
}

ls_status runlog_verdict(runlog *r, const char *kind, int64_t run_a, int64_t run_b, int equal,
                         int64_t first_diff_step, const char *detail, ls_err *err)
{
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r,
        "INSERT INTO verdicts(kind, run_a, run_b, equal, first_diff_step, detail, created)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, " RL_NOW ")",
        &st, "recording a verdict", err);
    if (s != LS_OK)
        return s;
    /* Negative ids and steps mean "none" (e.g. a comparison with a golden
     * file, or runs that never differ) and are stored as NULL. */
    sqlite3_bind_text(st, 1, kind != NULL ? kind : "", -1, SQLITE_TRANSIENT);
    if (run_a >= 0) sqlite3_bind_int64(st, 2, run_a); else sqlite3_bind_null(st, 2);
    if (run_b >= 0) sqlite3_bind_int64(st, 3, run_b); else sqlite3_bind_null(st, 3);
    sqlite3_bind_int(st, 4, equal != 0);
    if (first_diff_step >= 0) sqlite3_bind_int64(st, 5, first_diff_step);
    else sqlite3_bind_null(st, 5);
    rl_bind_text_or_null(st, 6, detail);
    return rl_write_one(r, st, "recording a verdict", err);
}

ls_status runlog_checkpoint(runlog *r, int64_t run_id, int64_t step, const char *path,
                            uint64_t state_hash, ls_err *err)
{
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r,
        "INSERT INTO checkpoints(run, step, path, state_hash, created)"
        " VALUES(?1, ?2, ?3, ?4, " RL_NOW ")",
        &st, "recording a checkpoint", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, step);
    sqlite3_bind_text(st, 3, path != NULL ? path : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, rl_i64(state_hash));
    return rl_write_one(r, st, "recording a checkpoint", err);
}

ls_status runlog_checkpoint_delete(runlog *r, int64_t run_id, int64_t step, const char *path, ls_err *err)
{
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, "DELETE FROM checkpoints WHERE run = ?1 AND step = ?2 AND (?3 IS NULL OR path = ?3)",
                             &st, "forgetting a checkpoint", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, step);
    rl_bind_text_or_null(st, 3, path);
    return rl_write_one(r, st, "forgetting a checkpoint", err);
}

ls_status runlog_run_resume(runlog *r, int64_t run_id, int64_t target_steps, int64_t checkpoint_every,
                            const char *checkpoint_dir, ls_err *err)
{
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK)
        return s;
    char boot[64];
    rl_boot_id(boot, sizeof boot);
    long long pid = (long long)getpid();
    char state = 0;
    unsigned long long start = 0;
    int have_start = rl_proc_stat(pid, &state, &start) == 0;

    /* The liveness check and the claim happen under one write lock, so of
     * two processes resuming the same run at once exactly one wins. */
    if ((s = rl_begin(r, "resuming a run", err)) != LS_OK)
        return s;
    sqlite3_stmt *st;
    if ((s = rl_prepare(r, "SELECT status, pid, pid_start, boot_id FROM runs WHERE id = ?1", &st,
                        "resuming a run", err)) != LS_OK) {
        rl_rollback(r);
        return s;
    }
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *status = sqlite3_column_text(st, 0);
        if (status != NULL && strcmp((const char *)status, "running") == 0 && !rl_writer_gone(st, 1, 2, 3))
            s = ls_fail(err, LS_EEXIST, "run %lld is running (process %lld) in %s", (long long)run_id,
                        (long long)sqlite3_column_int64(st, 1), r->path);
    } else if (rc == SQLITE_DONE) {
        s = ls_fail(err, LS_ENOTFOUND, "no run %lld in %s", (long long)run_id, r->path);
    } else {
        s = rl_dberr(r, "resuming a run", err);
    }
    sqlite3_finalize(st);
    if (s == LS_OK)
        s = rl_prepare(r,
            "UPDATE runs SET status = 'running', ended = NULL, pid = ?1, pid_start = ?2, boot_id = ?3,"
            " target_steps = coalesce(?4, target_steps), checkpoint_every = coalesce(?5, checkpoint_every),"
            " checkpoint_dir = coalesce(?6, checkpoint_dir) WHERE id = ?7",
            &st, "resuming a run", err);
    if (s == LS_OK) {
        sqlite3_bind_int64(st, 1, pid);
        if (have_start)
            sqlite3_bind_int64(st, 2, rl_i64(start));
        else
            sqlite3_bind_null(st, 2);
        rl_bind_text_or_null(st, 3, boot[0] ? boot : NULL);
        rl_bind_pos_or_null(st, 4, target_steps);
        rl_bind_pos_or_null(st, 5, checkpoint_every);
        rl_bind_text_or_null(st, 6, checkpoint_dir != NULL && checkpoint_dir[0] ? checkpoint_dir : NULL);
        sqlite3_bind_int64(st, 7, run_id);
        if (sqlite3_step(st) != SQLITE_DONE)
            s = rl_dberr(r, "resuming a run", err);
        sqlite3_finalize(st);
    }
    if (s != LS_OK) {
        rl_rollback(r);
        return s;
    }
    return rl_commit(r, "resuming a run", err);
}

void runlog_set_commit_hook(runlog *r, void (*hook)(void *ctx), void *ctx)
{
    r->commit_hook = hook;
    r->commit_hook_ctx = ctx;
}
