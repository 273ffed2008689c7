/* runlog.c — the SQLite record of runs (docs/formats.md, the SQLite record):
 * the handle, the schema and the transaction helpers.
 *
 * The record is split by concern: this file opens and closes the database,
 * holds every table's text (schema version 1 and the tables added to it
 * since, with the one column migration) and the helpers every write goes
 * through; runlog_live.c says whether a run's writer is alive,
 * runlog_identity.c gives the database its identity, runlog_names.c checks
 * run names, runlog_write.c records runs and their steps, runlog_read.c
 * reads them back, runlog_audit.c keeps audits and runlog_manage.c imports,
 * deletes and renames runs. runlog_impl.h is what they share.
 *
 * One file, opened in WAL mode with a busy timeout so that several training
 * processes and readers can share it. Every write runs inside BEGIN IMMEDIATE
 * (the write lock is taken up front, so a transaction never has to upgrade a
 * read lock and fail with SQLITE_BUSY half-way).
 *
 * Errors: every SQLite failure is LS_EDB with "PATH: what: sqlite message";
 * nothing here prints.
 */
#include "record/runlog_impl.h"

#include "base/file.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define RL_BEGIN_TRIES 4      /* BEGIN IMMEDIATE attempts, each waiting busy_timeout */
#define RL_BUSY_TIMEOUT_MS 10000

/* Schema version 1. WITHOUT ROWID for the tables keyed by (run, step[, name]):
 * the primary key is the only access path, so the rowid b-tree is waste. */
static const char rl_schema[] =
    "CREATE TABLE runs(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT UNIQUE NOT NULL,\n"
    "  model TEXT,\n"
    "  task TEXT,\n"
    "  config_text TEXT NOT NULL,\n"
    "  config_hash INTEGER NOT NULL,\n"
    "  status TEXT NOT NULL\n"
    "    CHECK(status IN ('running','done','interrupted','diverged','failed')),\n"
    "  started TEXT NOT NULL,\n"
    "  ended TEXT,\n"
    "  engine_version TEXT,\n"
    "  compiler TEXT,\n"
    "  cflags TEXT,\n"
    "  host TEXT,\n"
    "  cpu TEXT,\n"
    "  threads INTEGER,\n"
    "  reduce TEXT,\n"
    "  git_commit TEXT,\n"
    "  pid INTEGER,\n"
    "  pid_start INTEGER,\n"
    "  boot_id TEXT,\n"
    "  target_steps INTEGER,\n"
    "  checkpoint_every INTEGER,\n"
    "  checkpoint_dir TEXT\n"
    ") STRICT;\n"
    "CREATE TABLE steps(\n"
    "  run INTEGER NOT NULL REFERENCES runs(id),\n"
    "  step INTEGER NOT NULL,\n"
    "  loss REAL,\n"
    "  loss_bits INTEGER,\n"
    "  param_hash INTEGER NOT NULL,\n"
    "  traj_hash INTEGER NOT NULL,\n"
    "  seconds REAL,\n"
    "  PRIMARY KEY(run, step)\n"
    ") STRICT, WITHOUT ROWID;\n"
    "CREATE TABLE evals(\n"
    "  run INTEGER NOT NULL REFERENCES runs(id),\n"
    "  step INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  value REAL,\n"
    "  PRIMARY KEY(run, step, name)\n"
    ") STRICT, WITHOUT ROWID;\n"
    "CREATE TABLE checkpoints(\n"
    "  run INTEGER NOT NULL REFERENCES runs(id),\n"
    "  step INTEGER NOT NULL,\n"
    "  path TEXT NOT NULL,\n"
    "  state_hash INTEGER,\n"
    "  created TEXT NOT NULL\n"
    ") STRICT;\n"
    "CREATE INDEX checkpoints_run_step ON checkpoints(run, step);\n"
    "CREATE TABLE verdicts(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  kind TEXT NOT NULL,\n"
    "  run_a INTEGER REFERENCES runs(id),\n"
    "  run_b INTEGER REFERENCES runs(id),\n"
    "  equal INTEGER NOT NULL,\n"
    "  first_diff_step INTEGER,\n"
    "  detail TEXT,\n"
    "  created TEXT NOT NULL\n"
    ") STRICT;\n";

/* Schema version 2: what version 1 lacked for runs of other frameworks and
 * per-tensor hashes. run_external marks a run recorded by ls_record_* (its
 * framework); run_tensors names a run's tensors once (idx in the run's own
 * order: name order for an external run, θ's order for lockstep's own);
 * step_tensors holds each step's per-tensor hashes as one BLOB of n x 8
 * bytes, the hash of tensor idx at bytes 8·idx (u64 little-endian). A
 * version-1 file gains these tables in place (rl_migrate). */
const char rl_v2_schema[] =
    "CREATE TABLE IF NOT EXISTS run_external(\n"
    "  run INTEGER PRIMARY KEY REFERENCES runs(id),\n"
    "  framework TEXT NOT NULL\n"
    ") STRICT;\n"
    "CREATE TABLE IF NOT EXISTS run_tensors(\n"
    "  run INTEGER NOT NULL REFERENCES runs(id),\n"
    "  idx INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  dtype TEXT NOT NULL,\n"
    "  shape TEXT NOT NULL,\n"
    "  PRIMARY KEY(run, idx)\n"
    ") STRICT, WITHOUT ROWID;\n"
    "CREATE TABLE IF NOT EXISTS step_tensors(\n"
    "  run INTEGER NOT NULL REFERENCES runs(id),\n"
    "  step INTEGER NOT NULL,\n"
    "  hashes BLOB NOT NULL,\n"
    "  PRIMARY KEY(run, step)\n"
    ") STRICT, WITHOUT ROWID;\n";

/* Where a run's data are (a task's sources, "key=value" lines): kept with
 * the run so it can be reopened, apart from the config (not part of it).
 * Created when a run first has sources; a database without the table reads
 * as runs without sources. */
const char rl_sources_schema[] =
    "CREATE TABLE IF NOT EXISTS run_sources(\n"
    "  run INTEGER PRIMARY KEY REFERENCES runs(id),\n"
    "  text TEXT NOT NULL\n"
    ") STRICT;\n";

/* Every process that worked on a run (the first one, and each resume):
 * its host, build, pid, thread count and the steps it computed (from
 * first_step, the step it started after, to last_step). And a run's own
 * settings that are not its config (eval_every): kept so a resume goes on
 * with them. Both created when first written. */
const char rl_process_schema[] =
    "CREATE TABLE IF NOT EXISTS run_processes(\n"
    "  run INTEGER NOT NULL REFERENCES runs(id),\n"
    "  started TEXT NOT NULL,\n"
    "  ended TEXT,\n"
    "  host TEXT,\n"
    "  pid INTEGER,\n"
    "  threads INTEGER,\n"
    "  build TEXT,\n"
    "  first_step INTEGER NOT NULL,\n"
    "  last_step INTEGER\n"
    ") STRICT;\n"
    /* The hashes as the command line prints them (SQLite keeps the 64-bit
     * values as signed INTEGERs): SELECT * FROM steps_hex WHERE run = 1. */
    "CREATE VIEW IF NOT EXISTS steps_hex AS SELECT s.run, r.name AS run_name, s.step, s.loss,\n"
    "  iif(s.loss_bits IS NULL, NULL, printf('%016x', s.loss_bits)) AS loss_bits,\n"
    "  printf('%016x', s.param_hash) AS param_hash, printf('%016x', s.traj_hash) AS traj_hash, s.seconds\n"
    "  FROM steps s JOIN runs r ON r.id = s.run;\n"
    "CREATE TABLE IF NOT EXISTS run_settings(\n"
    "  run INTEGER NOT NULL REFERENCES runs(id),\n"
    "  key TEXT NOT NULL,\n"
    "  value TEXT NOT NULL,\n"
    "  PRIMARY KEY(run, key)\n"
    ") STRICT;\n";

/* The database's identity (runlog_identity.c), added to schema version 1
 * without changing it: created by the first writer that needs it. `one`
 * keeps it to a single row; dev and ino are those of the file the identity
 * was given to; ancestors are earlier identities of this file's lineage,
 * newest first, space-separated hex. */
const char rl_identity_schema[] =
    "CREATE TABLE IF NOT EXISTS identity(\n"
    "  one INTEGER PRIMARY KEY CHECK(one = 1),\n"
    "  id TEXT NOT NULL,\n"
    "  dev INTEGER NOT NULL,\n"
    "  ino INTEGER NOT NULL,\n"
    "  path TEXT,\n"
    "  ancestors TEXT NOT NULL DEFAULT '',\n"
    "  created TEXT NOT NULL\n"
    ") STRICT;\n";

/* Audits (runlog_audit.c), added to schema version 1 without changing it.
 * The first audits made the table without its build column; rl_audit_table
 * adds it. */
static const char rl_audit_schema[] =
    "CREATE TABLE IF NOT EXISTS audits(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  run INTEGER NOT NULL REFERENCES runs(id),\n"
    "  created TEXT NOT NULL,\n"
    "  version TEXT,\n"
    "  host TEXT,\n"
    "  threads INTEGER,\n"
    "  mode TEXT NOT NULL,\n"
    "  steps INTEGER NOT NULL,\n"
    "  verdict TEXT NOT NULL,\n"
    "  first_bad_step INTEGER,\n"
    "  detail TEXT,\n"
    "  build TEXT\n"
    ") STRICT;\n";

/* The audits table with its build column (an older one gains it), before
 * an audit is written or imported. */
ls_status rl_audit_table(runlog *r, const char *what, ls_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_exec(r->db, rl_audit_schema, NULL, NULL, NULL) != SQLITE_OK)
        return rl_dberr(r, what, err);
    if (sqlite3_prepare_v2(r->db, "SELECT build FROM main.audits LIMIT 0", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_finalize(st);
        return LS_OK;
    }
    if (sqlite3_exec(r->db, "ALTER TABLE main.audits ADD COLUMN build TEXT", NULL, NULL, NULL) != SQLITE_OK)
        return rl_dberr(r, what, err);
    return LS_OK;
}

/* ---- transaction helpers ------------------------------------------------ */

ls_status rl_dberr(const runlog *r, const char *what, ls_err *err)
{
    int code = sqlite3_errcode(r->db) & 0xff;
    if (code == SQLITE_NOTADB)
        return ls_fail(err, LS_EFORMAT, "%s: not a SQLite database", r->path);
    /* SQLite reports a full disk as SQLITE_FULL on some writes and as a
     * plain I/O error on others (the write-ahead log, its index); the
     * system's errno tells them apart. "disk full" is what to act on. */
    if (code == SQLITE_FULL || (code == SQLITE_IOERR && sqlite3_system_errno(r->db) == ENOSPC))
        return ls_fail(err, LS_EIO, "%s: %s: disk full (no room for the database to grow; what was committed "
                       "before is kept)", r->path, what);
    return ls_fail(err, LS_EDB, "%s: %s: %s", r->path, what, sqlite3_errmsg(r->db));
}

void rl_rollback(runlog *r)
{
    if (!sqlite3_get_autocommit(r->db))
        sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
}

static void rl_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* busy_timeout already waits inside each attempt; the loop covers the cases
 * where SQLite returns BUSY without calling the handler (e.g. WAL recovery). */
ls_status rl_begin(runlog *r, const char *what, ls_err *err)
{
    int rc = SQLITE_OK;
    for (int i = 0; i < RL_BEGIN_TRIES; i++) {
        rc = sqlite3_exec(r->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY)
            break;
        rl_sleep_ms(10);
    }
    if (rc != SQLITE_OK)
        return rl_dberr(r, what, err);
    return LS_OK;
}

ls_status rl_commit(runlog *r, const char *what, ls_err *err)
{
    int rc = SQLITE_OK;
    for (int i = 0; i < RL_BEGIN_TRIES; i++) {
        rc = sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY)
            break;  /* on BUSY the transaction is still open and may be retried */
        rl_sleep_ms(10);
    }
    if (rc != SQLITE_OK) {
        ls_status st = rl_dberr(r, what, err);
        rl_rollback(r);
        return st;
    }
    return LS_OK;
}

ls_status rl_prepare(runlog *r, const char *sql, sqlite3_stmt **st, const char *what,
                            ls_err *err)
{
    if (sqlite3_prepare_v2(r->db, sql, -1, st, NULL) != SQLITE_OK) {
        *st = NULL;
        return rl_dberr(r, what, err);
    }
    return LS_OK;
}

/* Runs one prepared write statement in its own IMMEDIATE transaction and
 * finalizes it. The error message is taken before ROLLBACK overwrites it. */
ls_status rl_write_one(runlog *r, sqlite3_stmt *stmt, const char *what, ls_err *err)
{
    ls_status st = rl_begin(r, what, err);
    if (st == LS_OK) {
        if (sqlite3_step(stmt) != SQLITE_DONE) {
            st = rl_dberr(r, what, err);
            rl_rollback(r);
        } else {
            st = rl_commit(r, what, err);
        }
    }
    sqlite3_finalize(stmt);
    return st;
}

void rl_bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    if (s != NULL)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* A count that is 0 or negative means "not given" and is stored as NULL. */
void rl_bind_pos_or_null(sqlite3_stmt *st, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

void rl_copy(char *dst, size_t cap, const unsigned char *src)
{
    size_t n = 0;
    if (src != NULL) {
        n = strlen((const char *)src);
        if (n >= cap)
            n = cap - 1;
        memcpy(dst, src, n);
    }
    dst[n] = 0;
}

/* ---- open / close --------------------------------------------------------- */

/* What the file holds before we touch it: 1 = empty (needs the schema),
 * 0 = a lockstep database of a schema we read, or LS_EFORMAT naming it. */
static ls_status rl_check_file(runlog *r, int *fresh, ls_err *err)
{
    r->schema = 0;
    static const char sql[] =
        "SELECT (SELECT application_id FROM pragma_application_id),"
        "       (SELECT user_version FROM pragma_user_version),"
        "       (SELECT count(*) FROM sqlite_master)";
    sqlite3_stmt *st;
    ls_status s = rl_prepare(r, sql, &st, "reading the header", err);
    if (s != LS_OK)
        return s;
    if (sqlite3_step(st) != SQLITE_ROW) {
        s = rl_dberr(r, "reading the header", err);
        sqlite3_finalize(st);
        return s;
    }
    int64_t app = sqlite3_column_int64(st, 0);
    int64_t ver = sqlite3_column_int64(st, 1);
    int64_t n_obj = sqlite3_column_int64(st, 2);
    sqlite3_finalize(st);

    *fresh = 0;
    if (app == 0 && ver == 0 && n_obj == 0) {
        *fresh = 1;
        return LS_OK;
    }
    if (app != RUNLOG_APPLICATION_ID) {
        if (app == 0)
            return ls_fail(err, LS_EFORMAT, "%s: a SQLite database of another program "
                           "(no lockstep application_id)", r->path);
        return ls_fail(err, LS_EFORMAT, "%s: a SQLite database of another program "
                       "(application_id 0x%llx, lockstep's is 0x%x)",
                       r->path, (unsigned long long)(uint32_t)app, RUNLOG_APPLICATION_ID);
    }
    if (ver > RUNLOG_SCHEMA_VERSION)
        return ls_fail(err, LS_EFORMAT, "%s: schema version %lld is newer than this "
                       "lockstep's (%d)", r->path, (long long)ver, RUNLOG_SCHEMA_VERSION);
    if (ver != RUNLOG_SCHEMA_VERSION && ver != 1)
        return ls_fail(err, LS_EFORMAT, "%s: unknown schema version %lld", r->path,
                       (long long)ver);
    r->schema = (int)ver;
    return LS_OK;
}

/* Creates the schema unless another process did it first: the check is
 * repeated under the write lock, so concurrent first opens are safe. */
static ls_status rl_create_schema(runlog *r, ls_err *err)
{
    ls_status st = rl_begin(r, "creating the schema", err);
    if (st != LS_OK)
        return st;
    int fresh = 0;
    st = rl_check_file(r, &fresh, err);
    if (st == LS_OK && fresh) {
        char pragmas[128];
        snprintf(pragmas, sizeof pragmas, "PRAGMA application_id=%d; PRAGMA user_version=%d;",
                 RUNLOG_APPLICATION_ID, RUNLOG_SCHEMA_VERSION);
        if (sqlite3_exec(r->db, rl_schema, NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(r->db, rl_v2_schema, NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(r->db, pragmas, NULL, NULL, NULL) != SQLITE_OK)
            st = rl_dberr(r, "creating the schema", err);
        r->schema = RUNLOG_SCHEMA_VERSION;
    }
    if (st != LS_OK) {
        rl_rollback(r);
        return st;
    }
    return rl_commit(r, "creating the schema", err);
}

/* Upgrades a version-1 file to version 2 in place: the tables version 2
 * adds, then the new user_version, in one transaction (a crash leaves
 * version 1 whole). Version 1's rows stay as they are: runs without
 * per-tensor hashes, none external. The check is repeated under the write
 * lock, so two writers opening the same old file upgrade it once. */
static ls_status rl_migrate(runlog *r, ls_err *err)
{
    ls_status st = rl_begin(r, "upgrading the schema to version 2", err);
    if (st != LS_OK)
        return st;
    int fresh = 0;
    st = rl_check_file(r, &fresh, err);
    if (st == LS_OK && r->schema == 1) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version=%d;", RUNLOG_SCHEMA_VERSION);
        if (sqlite3_exec(r->db, rl_v2_schema, NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(r->db, pragma, NULL, NULL, NULL) != SQLITE_OK)
            st = rl_dberr(r, "upgrading the schema to version 2", err);
        else
            r->schema = RUNLOG_SCHEMA_VERSION;
    }
    if (st != LS_OK) {
        rl_rollback(r);
        return st;
    }
    return rl_commit(r, "upgrading the schema to version 2", err);
}

/* Changing the journal mode needs an exclusive lock, and SQLite reports BUSY
 * at once, without the busy handler, when another connection is doing the
 * same (the first opens of a new file racing). So wait here, with backoff,
 * for as long as busy_timeout would. */
static ls_status rl_pragma(runlog *r, const char *sql, ls_err *err)
{
    int rc = SQLITE_OK;
    long waited_ms = 0, nap_ms = 1;
    for (;;) {
        rc = sqlite3_exec(r->db, sql, NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= RL_BUSY_TIMEOUT_MS)
            break;
        rl_sleep_ms(nap_ms);
        waited_ms += nap_ms;
        nap_ms = nap_ms < 64 ? nap_ms * 2 : 64;
    }
    return rc == SQLITE_OK ? LS_OK : rl_dberr(r, sql, err);
}

/* Test-only: LOCKSTEP_TEST_MAX_PAGES=N caps the file at N pages (PRAGMA
 * max_page_count, which SQLite keeps per connection, so every writer's open
 * sets it) once the schema is there. A write that needs more pages then
 * fails with SQLITE_FULL exactly as on a full disk, which lets a test of
 * the disk-full messages run anywhere, without mounting a small file
 * system. Unset (always, outside tests), nothing happens. */
static void rl_test_max_pages(runlog *r)
{
    const char *v = getenv("LOCKSTEP_TEST_MAX_PAGES");
    if (v == NULL || v[0] < '1' || v[0] > '9' || strspn(v, "0123456789") != strlen(v) || strlen(v) > 9)
        return;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count=%s", v);
    sqlite3_exec(r->db, sql, NULL, NULL, NULL);
}

ls_status runlog_open(runlog **out, const char *path, ls_err *err)
{
    *out = NULL;
    if (path == NULL || path[0] == 0)
        return ls_fail(err, LS_EINVAL, "database path is empty");
    /* SQLite would open a FIFO (and block) or a device: the one check made
     * on every database path (base/file.h); an absent file is created. */
    ls_status chk = file_check_regular(NULL, path, err);
    if (chk != LS_OK)
        return chk;

    size_t plen = strlen(path);
    runlog *r = calloc(1, sizeof *r + plen + 1);
    if (r == NULL)
        return ls_fail(err, LS_ENOMEM, "%s: out of memory opening the run log", path);
    memcpy(r->path, path, plen + 1);

    /* URI names are on so that an import can attach its source read-only
     * (runlog_import); a path that would read as a URI is given as ./path. */
    char *local = NULL;
    if (strncmp(path, "file:", 5) == 0 && (local = malloc(plen + 3)) != NULL)
        snprintf(local, plen + 3, "./%s", path);
    int rc = sqlite3_open_v2(local != NULL ? local : path, &r->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, NULL);
    free(local);
    if (rc != SQLITE_OK) {
        int code = rc & 0xff;
        ls_status st = (code == SQLITE_CANTOPEN || code == SQLITE_PERM || code == SQLITE_IOERR ||
                        code == SQLITE_READONLY) ? LS_EIO : LS_EDB;
        ls_fail(err, st, "%s: cannot open: %s", path,
                r->db != NULL ? sqlite3_errmsg(r->db) : sqlite3_errstr(rc));
        runlog_close(r);
        return st;
    }
    /* SQLite silently falls back to read-only for a write-protected file. */
    if (sqlite3_db_readonly(r->db, "main") == 1) {
        runlog_close(r);
        return ls_fail(err, LS_EIO, "%s: not writable", path);
    }
    sqlite3_busy_timeout(r->db, RL_BUSY_TIMEOUT_MS);

    /* Look before writing anything, so a file that is not ours stays untouched. */
    int fresh = 0;
    ls_status st = rl_check_file(r, &fresh, err);
    if (st == LS_OK)
        st = rl_pragma(r, "PRAGMA journal_mode=WAL", err);
    if (st == LS_OK)
        st = rl_pragma(r, "PRAGMA synchronous=NORMAL", err);
    if (st == LS_OK)
        st = rl_pragma(r, "PRAGMA foreign_keys=ON", err);
    if (st == LS_OK && fresh)
        st = rl_create_schema(r, err);
    if (st == LS_OK && r->schema == 1)
        st = rl_migrate(r, err);
    if (st == LS_OK)
        rl_test_max_pages(r);
    if (st == LS_OK)
        st = rl_prepare(r,
                        "INSERT INTO steps(run, step, loss, loss_bits, param_hash, traj_hash, seconds)"
                        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        &r->ins_step, "preparing the step insert", err);
    if (st != LS_OK) {
        runlog_close(r);
        return st;
    }
    *out = r;
    return LS_OK;
}

ls_status runlog_open_source(runlog **out, const char *path, ls_err *err)
{
    *out = NULL;
    if (path == NULL || path[0] == 0)
        return ls_fail(err, LS_EINVAL, "database path is empty");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return ls_fail(err, LS_EIO, "%s: is a directory", path);
    size_t plen = strlen(path);
    runlog *r = calloc(1, sizeof *r + plen + 1);
    if (r == NULL)
        return ls_fail(err, LS_ENOMEM, "%s: out of memory opening the run log", path);
    memcpy(r->path, path, plen + 1);
    /* Read-only and without URI names: the path is a file name, whatever it holds. */
    int rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY, NULL);
    if (rc != SQLITE_OK) {
        ls_fail(err, LS_EIO, "%s: cannot open: %s", path, r->db != NULL ? sqlite3_errmsg(r->db) : sqlite3_errstr(rc));
        runlog_close(r);
        return LS_EIO;
    }
    sqlite3_busy_timeout(r->db, RL_BUSY_TIMEOUT_MS);
    int fresh = 0;
    ls_status st = rl_check_file(r, &fresh, err);
    if (st == LS_OK && fresh)
        st = ls_fail(err, LS_EFORMAT, "%s: an empty database, not a lockstep record (it has none of the record's "
                     "tables)", path);
    if (st == LS_OK) {
        sqlite3_stmt *q;
        int has_runs = 0;
        if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'", -1, &q,
                               NULL) == SQLITE_OK) {
            has_runs = sqlite3_step(q) == SQLITE_ROW;
            sqlite3_finalize(q);
        }
        if (!has_runs)
            st = ls_fail(err, LS_EFORMAT, "%s: not a lockstep record (it has no runs table)", path);
    }
    if (st != LS_OK) {
        runlog_close(r);
        return st;
    }
    *out = r;
    return LS_OK;
}

void runlog_close(runlog *r)
{
    if (r == NULL)
        return;
    if (r->db != NULL && r->ins_step != NULL)
        runlog_flush(r, NULL);  /* best effort: a caller that cares flushes first */
    for (size_t i = 0; i < r->n_buf; i++)
        free(r->buf[i].thash);   /* rows a failed flush left behind */
    sqlite3_finalize(r->ins_step);
    sqlite3_close_v2(r->db);
    free(r);
}
