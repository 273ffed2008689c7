/* runlog_manage.c — moving runs between databases and within one: import,
 * delete, rename.
 *
 * An import attaches the other database as `src` and copies, in one
 * transaction, each run and every row that hangs off it through a map of
 * old to new run ids (a temporary table); the tables added to schema
 * version 1 are copied only when the source has them. The source is
 * attached read-only, and each run's name must pass the rule train and
 * rename follow (runlog_check_name) before anything is copied. A delete removes a
 * run's rows from every table that exists, verdicts naming it included.
 */
#include "record/runlog_impl.h"

#include "base/file.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* 1 when schema.name is a table. */
static int rl_has_table(runlog *r, const char *schema, const char *name)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT 1 FROM %s.sqlite_master WHERE type = 'table' AND name = ?1", schema);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* One statement with up to two integer parameters; LS_EDB naming `what`. */
static ls_status rl_exec_ids(runlog *r, const char *sql, int64_t a, int64_t b, const char *what, ls_err *err)
{
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, sql, &st, what, err);
    if (s != LS_OK)
        return s;
    int n = sqlite3_bind_parameter_count(st);
    if (n >= 1)
        sqlite3_bind_int64(st, 1, a);
    if (n >= 2)
        sqlite3_bind_int64(st, 2, b);
    if (sqlite3_step(st) != SQLITE_DONE)
        s = rl_dberr(r, what, err);
    sqlite3_finalize(st);
    return s;
}

/* Everything of the listed runs inside one transaction, src attached. */
static ls_status rl_import_rows(runlog *r, const char *src_path, const int64_t *ids, size_t n, int64_t *new_ids,
                                ls_err *err)
{
    ls_status s = rl_exec_ids(r, "CREATE TEMP TABLE IF NOT EXISTS import_map(old INTEGER PRIMARY KEY, new INTEGER)",
                              0, 0, "importing", err);
    if (s == LS_OK)
        s = rl_exec_ids(r, "DELETE FROM temp.import_map", 0, 0, "importing", err);
    for (size_t i = 0; i < n && s == LS_OK; i++) {
        sqlite3_stmt *st;
        if ((s = rl_prepare(r, "SELECT name, status, pid, pid_start, boot_id, (SELECT count(*) FROM main.runs AS m"
                               " WHERE m.name = src.runs.name) FROM src.runs WHERE id = ?1", &st, "importing",
                            err)) != LS_OK)
            break;
        sqlite3_bind_int64(st, 1, ids[i]);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
            s = rc == SQLITE_DONE ? ls_fail(err, LS_ENOTFOUND, "no run %lld in the database imported from",
                                            (long long)ids[i])
                                  : rl_dberr(r, "importing", err);
            sqlite3_finalize(st);
            break;
        }
        /* The rule train and rename follow, on the whole stored name: a name
         * an older database holds against it could read as a flag or an id,
         * or forge lines when printed. */
        ls_err why = { "" };
        const unsigned char *stored = sqlite3_column_text(st, 0);
        if (runlog_check_name(stored != NULL ? (const char *)stored : "", &why) != LS_OK) {
            s = ls_fail(err, LS_EINVAL, "run %lld of %s: %s; rename it there first (lockstep rename %lld NEW --db "
                        "%s)", (long long)ids[i], src_path, why.msg, (long long)ids[i], src_path);
            sqlite3_finalize(st);
            break;
        }
        char name[RUNLOG_NAME_BYTES];
        rl_copy(name, sizeof name, stored);
        const int running = sqlite3_column_text(st, 1) != NULL &&
                            strcmp((const char *)sqlite3_column_text(st, 1), "running") == 0;
        const int live = running && !rl_writer_gone(st, 2, 3, 4);
        const int clash = sqlite3_column_int(st, 5) > 0;
        sqlite3_finalize(st);
        if (clash) {
            char shown[RUNLOG_NAME_BYTES * 4];
            rl_escape_name(name, shown, sizeof shown);
            s = ls_fail(err, LS_EEXIST, "run %lld '%s': %s already has a run of that name (rename one first)",
                        (long long)ids[i], shown, r->path);
            break;
        }
        if (live) {
            s = ls_fail(err, LS_EEXIST, "run %lld is running; import it once it stops", (long long)ids[i]);
            break;
        }
        if ((s = rl_exec_ids(r,
                 "INSERT INTO main.runs(name, model, task, config_text, config_hash, status, started, ended,"
                 " engine_version, compiler, cflags, host, cpu, threads, reduce, git_commit, pid, pid_start, boot_id,"
                 " target_steps, checkpoint_every, checkpoint_dir)"
                 " SELECT name, model, task, config_text, config_hash,"
                 " iif(?2, 'interrupted', status), started, ended,"
                 " engine_version, compiler, cflags, host, cpu, threads, reduce, git_commit, pid, pid_start, boot_id,"
                 " target_steps, checkpoint_every, checkpoint_dir FROM src.runs WHERE id = ?1",
                 ids[i], running, "importing a run", err)) != LS_OK)
            break;
        new_ids[i] = sqlite3_last_insert_rowid(r->db);
        s = rl_exec_ids(r, "INSERT INTO temp.import_map(old, new) VALUES(?1, ?2)", ids[i], new_ids[i], "importing",
                        err);
    }
    static const char *const copies[] = {
        "INSERT INTO main.steps(run, step, loss, loss_bits, param_hash, traj_hash, seconds)"
        " SELECT m.new, s.step, s.loss, s.loss_bits, s.param_hash, s.traj_hash, s.seconds"
        " FROM src.steps AS s JOIN temp.import_map AS m ON s.run = m.old",
        "INSERT INTO main.evals(run, step, name, value)"
        " SELECT m.new, e.step, e.name, e.value FROM src.evals AS e JOIN temp.import_map AS m ON e.run = m.old",
        "INSERT INTO main.checkpoints(run, step, path, state_hash, created)"
        " SELECT m.new, c.step, c.path, c.state_hash, c.created"
        " FROM src.checkpoints AS c JOIN temp.import_map AS m ON c.run = m.old ORDER BY c.rowid",
        /* Verdicts whose runs all come along. */
        "INSERT INTO main.verdicts(kind, run_a, run_b, equal, first_diff_step, detail, created)"
        " SELECT v.kind, a.new, b.new, v.equal, v.first_diff_step, v.detail, v.created FROM src.verdicts AS v"
        " LEFT JOIN temp.import_map AS a ON v.run_a = a.old LEFT JOIN temp.import_map AS b ON v.run_b = b.old"
        " WHERE (v.run_a IS NOT NULL OR v.run_b IS NOT NULL) AND (v.run_a IS NULL OR a.new IS NOT NULL)"
        " AND (v.run_b IS NULL OR b.new IS NOT NULL) ORDER BY v.id",
    };
    for (size_t i = 0; i < sizeof copies / sizeof copies[0] && s == LS_OK; i++)
        s = rl_exec_ids(r, copies[i], 0, 0, "importing rows", err);
    if (s == LS_OK && rl_has_table(r, "src", "run_sources")) {
        if (sqlite3_exec(r->db, rl_sources_schema, NULL, NULL, NULL) != SQLITE_OK)
            s = rl_dberr(r, "importing sources", err);
        else
            s = rl_exec_ids(r, "INSERT INTO main.run_sources(run, text) SELECT m.new, x.text FROM src.run_sources"
                               " AS x JOIN temp.import_map AS m ON x.run = m.old", 0, 0, "importing sources", err);
    }
    if (s == LS_OK && (rl_has_table(r, "src", "run_processes") || rl_has_table(r, "src", "run_settings")) &&
        sqlite3_exec(r->db, rl_process_schema, NULL, NULL, NULL) != SQLITE_OK)
        s = rl_dberr(r, "importing processes", err);
    if (s == LS_OK && rl_has_table(r, "src", "run_processes"))
        s = rl_exec_ids(r, "INSERT INTO main.run_processes(run, started, ended, host, pid, threads, build, first_step,"
                           " last_step) SELECT m.new, p.started, p.ended, p.host, p.pid, p.threads, p.build,"
                           " p.first_step, p.last_step FROM src.run_processes AS p JOIN temp.import_map AS m"
                           " ON p.run = m.old ORDER BY p.rowid", 0, 0, "importing processes", err);
    if (s == LS_OK && rl_has_table(r, "src", "run_settings"))
        s = rl_exec_ids(r, "INSERT INTO main.run_settings(run, key, value) SELECT m.new, x.key, x.value"
                           " FROM src.run_settings AS x JOIN temp.import_map AS m ON x.run = m.old", 0, 0,
                        "importing settings", err);
    /* Schema version 2's tables: a version-1 source has none of them. */
    if (s == LS_OK && rl_has_table(r, "src", "run_external"))
        s = rl_exec_ids(r, "INSERT INTO main.run_external(run, framework) SELECT m.new, x.framework"
                           " FROM src.run_external AS x JOIN temp.import_map AS m ON x.run = m.old", 0, 0,
                        "importing external runs", err);
    if (s == LS_OK && rl_has_table(r, "src", "run_tensors"))
        s = rl_exec_ids(r, "INSERT INTO main.run_tensors(run, idx, name, dtype, shape) SELECT m.new, x.idx, x.name,"
                           " x.dtype, x.shape FROM src.run_tensors AS x JOIN temp.import_map AS m ON x.run = m.old",
                        0, 0, "importing tensor names", err);
    if (s == LS_OK && rl_has_table(r, "src", "step_tensors"))
        s = rl_exec_ids(r, "INSERT INTO main.step_tensors(run, step, hashes) SELECT m.new, x.step, x.hashes"
                           " FROM src.step_tensors AS x JOIN temp.import_map AS m ON x.run = m.old", 0, 0,
                        "importing per-tensor hashes", err);
    if (s == LS_OK && rl_has_table(r, "src", "audits")) {
        sqlite3_stmt *st;
        const int has_build = sqlite3_prepare_v2(r->db, "SELECT build FROM src.audits LIMIT 0", -1, &st, NULL) ==
                              SQLITE_OK;
        if (has_build)
            sqlite3_finalize(st);
        if ((s = rl_audit_table(r, "creating the audits table", err)) == LS_OK)
            s = rl_exec_ids(r, has_build
                ? "INSERT INTO main.audits(run, created, version, host, threads, mode, steps, verdict,"
                  " first_bad_step, detail, build) SELECT m.new, x.created, x.version, x.host, x.threads, x.mode,"
                  " x.steps, x.verdict, x.first_bad_step, x.detail, x.build FROM src.audits AS x"
                  " JOIN temp.import_map AS m ON x.run = m.old ORDER BY x.id"
                : "INSERT INTO main.audits(run, created, version, host, threads, mode, steps, verdict,"
                  " first_bad_step, detail) SELECT m.new, x.created, x.version, x.host, x.threads, x.mode,"
                  " x.steps, x.verdict, x.first_bad_step, x.detail FROM src.audits AS x"
                  " JOIN temp.import_map AS m ON x.run = m.old ORDER BY x.id", 0, 0, "importing audits", err);
    }
    return s;
}

ls_status runlog_import(runlog *r, const char *src_path, const int64_t *ids, size_t n, int64_t *new_ids,
                        ls_err *err)
{
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK)
        return s;
    /* ATTACH would open a FIFO or a device, or create an absent file: the
     * source must be a database file that is there. */
    struct stat sb;
    if (stat(src_path, &sb) != 0)
        return ls_fail(err, LS_ENOTFOUND, "%s: no such database", src_path);
    if ((s = file_check_regular(NULL, src_path, err)) != LS_OK)
        return s;
    /* Attached read-only through a URI name (runlog_open turns them on), so
     * the source is never written: not a schema, not a journal. */
    size_t cap = 3 * strlen(src_path) + 32;
    char *uri = malloc(cap);
    if (uri == NULL)
        return ls_fail(err, LS_ENOMEM, "out of memory attaching %s", src_path);
    size_t o = (size_t)snprintf(uri, cap, "file:%s", src_path[0] == '/' ? "//" : "");
    for (const unsigned char *p = (const unsigned char *)src_path; *p; p++)
        o += (size_t)(*p == '%' || *p == '?' || *p == '#' || *p <= 0x20 || *p >= 0x7f
                          ? snprintf(uri + o, cap - o, "%%%02X", *p)
                          : snprintf(uri + o, cap - o, "%c", *p));
    snprintf(uri + o, cap - o, "?mode=ro");
    sqlite3_stmt *st;
    if ((s = rl_prepare(r, "ATTACH DATABASE ?1 AS src", &st, "attaching the database imported from", err)) != LS_OK) {
        free(uri);
        return s;
    }
    sqlite3_bind_text(st, 1, uri, -1, SQLITE_TRANSIENT);
    free(uri);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return ls_fail(err, LS_EDB, "%s: cannot attach %s: %s", r->path, src_path, sqlite3_errmsg(r->db));
    if ((s = rl_begin(r, "importing", err)) == LS_OK) {
        if ((s = rl_import_rows(r, src_path, ids, n, new_ids, err)) == LS_OK)
            s = rl_commit(r, "importing", err);
        else
            rl_rollback(r);
    }
    sqlite3_exec(r->db, "DETACH DATABASE src", NULL, NULL, NULL);
    return s;
}

ls_status runlog_run_delete(runlog *r, int64_t run_id, ls_err *err)
{
    ls_status s = runlog_flush(r, err);
    if (s != LS_OK || (s = rl_begin(r, "deleting a run", err)) != LS_OK)
        return s;
    static const char *const tables[] = { "steps", "evals", "checkpoints", "run_sources", "run_processes",
                                          "run_settings", "audits", "step_tensors", "run_tensors",
                                          "run_external" };
    for (size_t i = 0; i < sizeof tables / sizeof tables[0] && s == LS_OK; i++) {
        if (!rl_has_table(r, "main", tables[i]))
            continue;
        char sql[96];
        snprintf(sql, sizeof sql, "DELETE FROM main.%s WHERE run = ?1", tables[i]);
        s = rl_exec_ids(r, sql, run_id, 0, "deleting a run", err);
    }
    if (s == LS_OK)
        s = rl_exec_ids(r, "DELETE FROM main.verdicts WHERE run_a = ?1 OR run_b = ?1", run_id, 0, "deleting a run",
                        err);
    if (s == LS_OK)
        s = rl_exec_ids(r, "DELETE FROM main.runs WHERE id = ?1", run_id, 0, "deleting a run", err);
    if (s == LS_OK && sqlite3_changes(r->db) == 0)
        s = ls_fail(err, LS_ENOTFOUND, "no run %lld in %s", (long long)run_id, r->path);
    if (s == LS_OK)
        return rl_commit(r, "deleting a run", err);
    rl_rollback(r);
    return s;
}

ls_status runlog_run_rename(runlog *r, int64_t run_id, const char *name, ls_err *err)
{
    ls_status s = runlog_check_name(name, err);
    if (s != LS_OK)
        return s;
    if ((s = runlog_flush(r, err)) != LS_OK || (s = rl_begin(r, "renaming a run", err)) != LS_OK)
        return s;
    sqlite3_stmt *st;
    if ((s = rl_prepare(r, "SELECT id FROM runs WHERE name = ?1", &st, "renaming a run", err)) == LS_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && sqlite3_column_int64(st, 0) != run_id) {
            char shown[RUNLOG_NAME_BYTES * 4];
            rl_escape_name(name, shown, sizeof shown);
            s = ls_fail(err, LS_EEXIST, "name '%s' is taken by run %lld in %s", shown,
                        (long long)sqlite3_column_int64(st, 0), r->path);
        } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            s = rl_dberr(r, "renaming a run", err);
        }
        sqlite3_finalize(st);
    }
    if (s == LS_OK && (s = rl_prepare(r, "UPDATE runs SET name = ?2 WHERE id = ?1", &st, "renaming a run", err)) ==
                          LS_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) != SQLITE_DONE)
            s = rl_dberr(r, "renaming a run", err);
        else if (sqlite3_changes(r->db) == 0)
            s = ls_fail(err, LS_ENOTFOUND, "no run %lld in %s", (long long)run_id, r->path);
        sqlite3_finalize(st);
    }
    if (s == LS_OK)
        return rl_commit(r, "renaming a run", err);
    rl_rollback(r);
    return s;
}
