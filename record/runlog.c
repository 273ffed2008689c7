/* runlog.c — the SQLite record of runs (docs/formats.md, the SQLite record).
 *
 * One file, opened in WAL mode with a busy timeout so that several training
 * processes and readers can share it. Every write runs inside BEGIN IMMEDIATE
 * (the write lock is taken up front, so a transaction never has to upgrade a
 * read lock and fail with SQLITE_BUSY half-way). Step rows are buffered in the
 * handle and written RUNLOG_BATCH at a time in one transaction, because one
 * commit per step would make the fsync of the log cost more than the step.
 * Runs, evaluations, checkpoints and verdicts are rare and are committed at
 * once, each in its own transaction, so a crash never loses them.
 *
 * 64-bit hashes and loss bits are stored in INTEGER columns as the int64 with
 * the same bit pattern, and read back the same way. The loss is stored twice:
 * as REAL for people and SQL (SQLite turns NaN into NULL there) and as its
 * exact binary64 bits, which is what every comparison uses.
 *
 * Liveness: a run row keeps its writer's pid, the pid's start time (field 22
 * of /proc/PID/stat) and the boot id. A reader that finds "running" reports
 * "interrupted" when that process is gone; it never rewrites the row.
 *
 * Identity (runlog.h): one row in `identity`, checked against the file's
 * device and inode when a writer first asks for it (runlog_identity), not at
 * open: a reader (show, export) must leave a copied file as it is. The check
 * is a read; only a database without an identity, or a copy, takes the
 * write lock, and it decides again under the lock, so processes writing a
 * new copy at once agree on one identity.
 * Device and inode, not the path: a path can be reused by another file and
 * one file can have several paths, but two files that exist at once never
 * share both numbers. A file whose numbers change without being copied (a
 * move across file systems, a file system that renumbers) only gets a new
 * identity too: its old checkpoints stay loadable (an ancestor's) and are
 * no longer deleted by it — a leak, never a loss.
 *
 * Errors: every SQLite failure is LS_EDB with "PATH: what: sqlite message";
 * nothing here prints.
 */
#include "record/runlog.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define RL_BEGIN_TRIES 4      /* BEGIN IMMEDIATE attempts, each waiting busy_timeout */
#define RL_BUSY_TIMEOUT_MS 10000
#define RL_NOW "strftime('%Y-%m-%dT%H:%M:%fZ','now')"

typedef struct {
    int64_t run;
    ls_step s;
} rl_row;

struct runlog {
    sqlite3 *db;
    sqlite3_stmt *ins_step;    /* prepared once: the hot insert */
    void (*commit_hook)(void *);  /* test-only: see runlog_set_commit_hook */
    void *commit_hook_ctx;
    size_t n_buf;              /* rows buffered in buf, not yet committed */
    rl_row buf[RUNLOG_BATCH];
    runlog_identity ident;     /* see runlog_identity */
    int ident_state;           /* 0: not looked at, 1: read as stored, 2: this file's, made if needed */
    char path[];               /* the file as given, for messages */
};

const char RUNLOG_FIRST_DIVERGENCE_SQL[] =
    "SELECT min(a.step)\n"
    "  FROM steps AS a\n"
    "  JOIN steps AS b ON b.run = ?2 AND b.step = a.step\n"
    " WHERE a.run = ?1\n"
    "   AND (a.param_hash <> b.param_hash\n"
    "        OR (a.step >= 1 AND a.loss_bits IS NOT b.loss_bits))";

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

/* Added to schema version 1 without changing it: created with a new
 * database, and on the first open of one made before it. `one` keeps it to
 * a single row; dev and ino are those of the file the identity was given
 * to; ancestors are earlier identities of this file's lineage, newest first,
 * space-separated hex. */
/* Where a run's data are (a task's sources, "key=value" lines): kept with
 * the run so it can be reopened, apart from the config (not part of it).
 * Created when a run first has sources; a database without the table reads
 * as runs without sources. */
static const char rl_sources_schema[] =
    "CREATE TABLE IF NOT EXISTS run_sources(\n"
    "  run INTEGER PRIMARY KEY REFERENCES runs(id),\n"
    "  text TEXT NOT NULL\n"
    ") STRICT;\n";

/* Every process that worked on a run (the first one, and each resume):
 * its host, build, pid, thread count and the steps it computed (from
 * first_step, the step it started after, to last_step). And a run's own
 * settings that are not its config (eval_every): kept so a resume goes on
 * with them. Both created when first written. */
static const char rl_process_schema[] =
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

static const char rl_identity_schema[] =
    "CREATE TABLE IF NOT EXISTS identity(\n"
    "  one INTEGER PRIMARY KEY CHECK(one = 1),\n"
    "  id TEXT NOT NULL,\n"
    "  dev INTEGER NOT NULL,\n"
    "  ino INTEGER NOT NULL,\n"
    "  path TEXT,\n"
    "  ancestors TEXT NOT NULL DEFAULT '',\n"
    "  created TEXT NOT NULL\n"
    ") STRICT;\n";

/* ---- small helpers ------------------------------------------------------ */

/* uint64 ↔ int64 with the same bits, without implementation-defined casts. */
static int64_t rl_i64(uint64_t u)
{
    int64_t i;
    memcpy(&i, &u, sizeof i);
    return i;
}

static uint64_t rl_u64(int64_t i)
{
    uint64_t u;
    memcpy(&u, &i, sizeof u);
    return u;
}

static ls_status rl_dberr(const runlog *r, const char *what, ls_err *err)
{
    int code = sqlite3_errcode(r->db) & 0xff;
    if (code == SQLITE_NOTADB)
        return ls_fail(err, LS_EFORMAT, "%s: not a SQLite database", r->path);
    return ls_fail(err, LS_EDB, "%s: %s: %s", r->path, what, sqlite3_errmsg(r->db));
}

static void rl_rollback(runlog *r)
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
static ls_status rl_begin(runlog *r, const char *what, ls_err *err)
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

static ls_status rl_commit(runlog *r, const char *what, ls_err *err)
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

static ls_status rl_prepare(runlog *r, const char *sql, sqlite3_stmt **st, const char *what,
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
static ls_status rl_write_one(runlog *r, sqlite3_stmt *stmt, const char *what, ls_err *err)
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

static void rl_bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    if (s != NULL)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* A count that is 0 or negative means "not given" and is stored as NULL. */
static void rl_bind_pos_or_null(sqlite3_stmt *st, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static void rl_copy(char *dst, size_t cap, const unsigned char *src)
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

/* ---- liveness ------------------------------------------------------------ */

/* Reads a small text file whole; -1 with errno set on failure. */
static ssize_t rl_read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < cap) {
        ssize_t k = read(fd, buf + got, cap - 1 - got);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    buf[got] = 0;
    return (ssize_t)got;
}

/* The kernel's id of this boot, or "" when unknown (not Linux). */
static void rl_boot_id(char *out, size_t cap)
{
    char buf[128];
    out[0] = 0;
    if (rl_read_small("/proc/sys/kernel/random/boot_id", buf, sizeof buf) <= 0)
        return;
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        buf[--n] = 0;
    rl_copy(out, cap, (const unsigned char *)buf);
}

/* State letter (field 3) and start time in clock ticks since boot (field 22)
 * of /proc/PID/stat. The command name (field 2) may hold spaces and ')', so
 * fields are counted from the last ')'. 0, or -1 with errno (ENOENT: gone). */
static int rl_proc_stat(long long pid, char *state, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    if (rl_read_small(path, buf, sizeof buf) < 0)
        return -1;
    char *p = strrchr(buf, ')');
    if (p == NULL) {
        errno = EINVAL;
        return -1;
    }
    p++;
    for (int field = 3; field <= 22; field++) {
        while (*p == ' ')
            p++;
        if (*p == 0) {
            errno = EINVAL;
            return -1;
        }
        if (field == 3)
            *state = *p;
        if (field == 22) {
            char *end;
            errno = 0;
            *start = strtoull(p, &end, 10);
            if (end == p || errno != 0) {
                errno = EINVAL;
                return -1;
            }
            return 0;
        }
        while (*p != ' ' && *p != 0)
            p++;
    }
    errno = EINVAL;
    return -1;
}

/* Whether the writer recorded in a "running" row is gone. When the record or
 * the host cannot tell (no pid, no /proc), the row is taken at its word. */
static int rl_writer_gone(sqlite3_stmt *st, int col_pid, int col_start, int col_boot)
{
    if (sqlite3_column_type(st, col_pid) == SQLITE_NULL)
        return 0;
    long long pid = (long long)sqlite3_column_int64(st, col_pid);
    if (sqlite3_column_type(st, col_boot) != SQLITE_NULL) {
        char now[64];
        rl_boot_id(now, sizeof now);
        const char *then = (const char *)sqlite3_column_text(st, col_boot);
        if (now[0] != 0 && then != NULL && then[0] != 0 && strcmp(now, then) != 0)
            return 1;  /* rebooted since: every process of that boot is gone */
    }
    char state = 0;
    unsigned long long start = 0;
    if (rl_proc_stat(pid, &state, &start) == 0) {
        if (state == 'Z' || state == 'X')
            return 1;  /* exited, not yet reaped */
        if (sqlite3_column_type(st, col_start) != SQLITE_NULL &&
            rl_u64(sqlite3_column_int64(st, col_start)) != (uint64_t)start)
            return 1;  /* the pid was reused by a later process */
        return 0;
    }
    if (errno == ENOENT)
        return 1;
    /* No /proc: fall back to asking the kernel whether the pid exists. */
    if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    return 0;
}

/* ---- open / close --------------------------------------------------------- */

/* What the file holds before we touch it: 1 = empty (needs the schema),
 * 0 = a lockstep database of a schema we read, or LS_EFORMAT naming it. */
static ls_status rl_check_file(runlog *r, int *fresh, ls_err *err)
{
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
    if (ver != RUNLOG_SCHEMA_VERSION)
        return ls_fail(err, LS_EFORMAT, "%s: unknown schema version %lld", r->path,
                       (long long)ver);
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
            sqlite3_exec(r->db, pragmas, NULL, NULL, NULL) != SQLITE_OK)
            st = rl_dberr(r, "creating the schema", err);
    }
    if (st != LS_OK) {
        rl_rollback(r);
        return st;
    }
    return rl_commit(r, "creating the schema", err);
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

/* ---- identity ---------------------------------------------------------------- */

static int rl_hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* 32 lowercase hex digits at s into id; 0 on success. */
static int rl_unhex(const char *s, unsigned char *id)
{
    for (int i = 0; i < RUNLOG_ID_BYTES; i++) {
        int hi = rl_hexval((unsigned char)s[2 * i]), lo = hi < 0 ? -1 : rl_hexval((unsigned char)s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        id[i] = (unsigned char)(hi * 16 + lo);
    }
    return 0;
}

static void rl_tohex(const unsigned char *id, char *out)
{
    for (int i = 0; i < RUNLOG_ID_BYTES; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* 128 bits from the kernel's generator: getrandom, else /dev/urandom. An
 * all-zero draw (nobody's identity, record/checkpoint.h) is drawn again. */
static int rl_random_id(unsigned char *id)
{
    for (int tries = 0; tries < 4; tries++) {
        size_t got = 0;
        while (got < RUNLOG_ID_BYTES) {
            ssize_t k = getrandom(id + got, RUNLOG_ID_BYTES - got, 0);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        if (got < RUNLOG_ID_BYTES) {
            int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                return -1;
            got = 0;
            while (got < RUNLOG_ID_BYTES) {
                ssize_t k = read(fd, id + got, RUNLOG_ID_BYTES - got);
                if (k < 0 && errno == EINTR)
                    continue;
                if (k <= 0)
                    break;
                got += (size_t)k;
            }
            close(fd);
            if (got < RUNLOG_ID_BYTES)
                return -1;
        }
        for (int i = 0; i < RUNLOG_ID_BYTES; i++)
            if (id[i] != 0)
                return 0;
    }
    return -1;
}

/* Reads the identity row into r->ident when it belongs to this file
 * (dev, ino): 1; 0 when there is none or it is another file's (*old_hex,
 * *old_anc: the row's id and ancestors, "" when none); <0 on a database
 * error other than a missing table. */
static int rl_identity_read(runlog *r, int any_file, uint64_t dev, uint64_t ino, char *old_hex, size_t hex_cap,
                            char *old_anc, size_t anc_cap)
{
    old_hex[0] = 0;
    old_anc[0] = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT id, dev, ino, ancestors FROM identity WHERE one = 1", -1, &st, NULL) !=
        SQLITE_OK)
        return 0;   /* no table yet: a database made before identities */
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        const char *anc = (const char *)sqlite3_column_text(st, 3);
        rl_copy(old_hex, hex_cap, (const unsigned char *)id);
        rl_copy(old_anc, anc_cap, (const unsigned char *)anc);
        int good = id != NULL && strlen(id) == 2 * RUNLOG_ID_BYTES && rl_unhex(id, r->ident.id) == 0;
        if (!good)
            old_hex[0] = 0;   /* unreadable: not an ancestor worth keeping */
        if (good && (any_file || (rl_u64(sqlite3_column_int64(st, 1)) == dev &&
                                  rl_u64(sqlite3_column_int64(st, 2)) == ino))) {
            found = 1;
            rl_copy(r->ident.hex, sizeof r->ident.hex, (const unsigned char *)id);
            r->ident.n_ancestors = 0;
            const char *p = anc != NULL ? anc : "";
            while (*p && r->ident.n_ancestors < RUNLOG_MAX_ANCESTORS) {
                while (*p == ' ')
                    p++;
                size_t n = strcspn(p, " ");
                if (n == 2 * RUNLOG_ID_BYTES && rl_unhex(p, r->ident.ancestors[r->ident.n_ancestors]) == 0)
                    r->ident.n_ancestors++;
                p += n;
            }
        }
    } else if (rc != SQLITE_DONE) {
        found = -1;
    }
    sqlite3_finalize(st);
    return found;
}

static ls_status rl_identity(runlog *r, ls_err *err)
{
    struct stat sb;
    if (stat(r->path, &sb) != 0)
        return ls_fail(err, LS_EIO, "%s: %s", r->path, strerror(errno));
    const uint64_t dev = (uint64_t)sb.st_dev, ino = (uint64_t)sb.st_ino;
    char old_hex[2 * RUNLOG_ID_BYTES + 1], old_anc[RUNLOG_MAX_ANCESTORS * (2 * RUNLOG_ID_BYTES + 1) + 1];
    int found = rl_identity_read(r, 0, dev, ino, old_hex, sizeof old_hex, old_anc, sizeof old_anc);
    if (found == 1)
        return LS_OK;
    /* None, or another file's: decide again under the write lock. */
    ls_status st = rl_begin(r, "giving the database an identity", err);
    if (st != LS_OK)
        return st;
    if (sqlite3_exec(r->db, rl_identity_schema, NULL, NULL, NULL) != SQLITE_OK) {
        st = rl_dberr(r, "giving the database an identity", err);
        rl_rollback(r);
        return st;
    }
    found = rl_identity_read(r, 0, dev, ino, old_hex, sizeof old_hex, old_anc, sizeof old_anc);
    if (found == 1) {
        rl_rollback(r);   /* another process did it first; the table existed or is kept by it */
        return LS_OK;
    }
    if (found < 0) {
        st = rl_dberr(r, "reading the database identity", err);
        rl_rollback(r);
        return st;
    }
    unsigned char id[RUNLOG_ID_BYTES];
    if (rl_random_id(id) != 0) {
        rl_rollback(r);
        return ls_fail(err, LS_EIO, "%s: no random bytes for the database identity (getrandom, /dev/urandom)",
                       r->path);
    }
    memset(&r->ident, 0, sizeof r->ident);
    memcpy(r->ident.id, id, sizeof id);
    rl_tohex(id, r->ident.hex);
    /* The copied identity first, then its own ancestors, as many as fit. */
    char anc[sizeof old_anc];
    anc[0] = 0;
    size_t an = 0;
    const char *p = old_anc;
    if (old_hex[0] != 0) {
        rl_unhex(old_hex, r->ident.ancestors[r->ident.n_ancestors++]);
        an += (size_t)snprintf(anc + an, sizeof anc - an, "%s", old_hex);
    }
    while (*p && r->ident.n_ancestors < RUNLOG_MAX_ANCESTORS) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 2 * RUNLOG_ID_BYTES && rl_unhex(p, r->ident.ancestors[r->ident.n_ancestors]) == 0) {
            r->ident.n_ancestors++;
            an += (size_t)snprintf(anc + an, sizeof anc - an, "%s%.*s", an ? " " : "", (int)n, p);
        }
        p += n;
    }
    sqlite3_stmt *q;
    st = rl_prepare(r, "INSERT OR REPLACE INTO identity(one, id, dev, ino, path, ancestors, created)"
                       " VALUES(1, ?1, ?2, ?3, ?4, ?5, " RL_NOW ")", &q, "giving the database an identity", err);
    if (st == LS_OK) {
        sqlite3_bind_text(q, 1, r->ident.hex, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 2, rl_i64(dev));
        sqlite3_bind_int64(q, 3, rl_i64(ino));
        sqlite3_bind_text(q, 4, r->path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 5, anc, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(q) != SQLITE_DONE)
            st = rl_dberr(r, "giving the database an identity", err);
        sqlite3_finalize(q);
    }
    if (st != LS_OK) {
        rl_rollback(r);
        return st;
    }
    return rl_commit(r, "giving the database an identity", err);
}

ls_status runlog_get_identity(runlog *r, int for_writing, const runlog_identity **out, ls_err *err)
{
    *out = &r->ident;
    if (r->ident_state == 2 || (r->ident_state == 1 && !for_writing))
        return LS_OK;
    if (for_writing) {
        memset(&r->ident, 0, sizeof r->ident);
        ls_status st = rl_identity(r, err);
        if (st != LS_OK) {
            memset(&r->ident, 0, sizeof r->ident);
            r->ident_state = 0;
            return st;
        }
        r->ident_state = 2;
        return LS_OK;
    }
    /* Read only: what is stored, whichever file it was given to. */
    memset(&r->ident, 0, sizeof r->ident);
    char old_hex[2 * RUNLOG_ID_BYTES + 1], old_anc[RUNLOG_MAX_ANCESTORS * (2 * RUNLOG_ID_BYTES + 1) + 1];
    int found = rl_identity_read(r, 1, 0, 0, old_hex, sizeof old_hex, old_anc, sizeof old_anc);
    if (found < 0)
        return rl_dberr(r, "reading the database identity", err);
    if (found == 0)
        memset(&r->ident, 0, sizeof r->ident);
    r->ident_state = 1;
    return LS_OK;
}

ls_status runlog_open(runlog **out, const char *path, ls_err *err)
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

    int rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
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

void runlog_close(runlog *r)
{
    if (r == NULL)
        return;
    if (r->db != NULL && r->ins_step != NULL)
        runlog_flush(r, NULL);  /* best effort: a caller that cares flushes first */
    sqlite3_finalize(r->ins_step);
    sqlite3_close_v2(r->db);
    free(r);
}

/* ---- writing ---------------------------------------------------------------- */

static int rl_all_digits(const char *s)
{
    if (s == NULL || s[0] == 0)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* ---- run names ---------------------------------------------------------------- */

/* The next code point of s (UTF-8, strict: shortest form, no surrogates,
 * at most U+10FFFF) and its length in *len; -1 (and *len = 1) when the
 * bytes at s are not one. */
static long rl_utf8_next(const unsigned char *s, size_t *len)
{
    unsigned c = s[0];
    *len = 1;
    if (c < 0x80)
        return (long)c;
    size_t n;
    unsigned long cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2; cp = c & 0x1f; min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3; cp = c & 0x0f; min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4; cp = c & 0x07; min = 0x10000;
    } else {
        return -1;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = n;
    return (long)cp;
}

/* Code points a name may not hold (runlog.h): controls, and the invisible
 * ones that reorder or break a line when printed. */
static int rl_name_forbidden(long cp)
{
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
           cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The name for an error line: printable ASCII as is (backslash and quote
 * escaped), every other byte of a refused name as \xNN, valid non-ASCII
 * characters as is unless forbidden (\u{NNNN}); at most cap - 1 bytes,
 * "..." when cut. */
static void rl_escape_name(const char *name, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)name;
    size_t o = 0;
    while (*p) {
        char piece[16];
        size_t len;
        long cp = rl_utf8_next(p, &len);
        if (cp < 0)
            snprintf(piece, sizeof piece, "\\x%02x", p[0]);
        else if (cp == '\\' || cp == '\'')
            snprintf(piece, sizeof piece, "\\%c", (char)cp);
        else if (rl_name_forbidden(cp))
            snprintf(piece, sizeof piece, cp < 0x80 ? "\\x%02lx" : "\\u{%04lx}", (unsigned long)cp);
        else {
            memcpy(piece, p, len);
            piece[len] = 0;
        }
        size_t pl = strlen(piece);
        if (o + pl + 4 > cap) {
            snprintf(out + o, cap - o, "...");
            return;
        }
        memcpy(out + o, piece, pl);
        o += pl;
        p += len;
    }
    out[o] = 0;
}

ls_status runlog_check_name(const char *name, ls_err *err)
{
    if (name == NULL || name[0] == 0)
        return ls_fail(err, LS_EINVAL, "run name is empty");
    char shown[200];
    rl_escape_name(name, shown, sizeof shown);
    if (name[0] == '-')
        return ls_fail(err, LS_EINVAL, "run name '%s' starts with '-': it would read as a flag", shown);
    if (rl_all_digits(name))
        return ls_fail(err, LS_EINVAL, "run name '%s' is all digits: it would read as a run id", shown);
    const unsigned char *p = (const unsigned char *)name;
    size_t chars = 0;
    while (*p) {
        size_t len;
        long cp = rl_utf8_next(p, &len);
        chars++;
        if (cp < 0)
            return ls_fail(err, LS_EINVAL, "run name '%s' is not valid UTF-8 (byte 0x%02x at byte %zu)", shown,
                           p[0], (size_t)(p - (const unsigned char *)name) + 1);
        if (rl_name_forbidden(cp))
            return ls_fail(err, LS_EINVAL, "run name '%s' has a control or invisible character (U+%04lX) at "
                           "character %zu: names must print as themselves", shown, (unsigned long)cp, chars);
        p += len;
    }
    if (chars > RUNLOG_NAME_MAX)
        return ls_fail(err, LS_EINVAL, "run name '%s' is %zu characters long; at most %d are allowed", shown,
                       chars, RUNLOG_NAME_MAX);
    return LS_OK;
}

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
    if (r->commit_hook != NULL)
        r->commit_hook(r->commit_hook_ctx);
    st = rl_commit(r, what, err);
    if (st == LS_OK)
        r->n_buf = 0;
    return st;
}

ls_status runlog_step(runlog *r, int64_t run_id, const ls_step *s, ls_err *err)
{
    /* A full buffer here means an earlier batch failed to commit: retry it
     * first, and refuse the new row rather than drop an old one. */
    if (r->n_buf == RUNLOG_BATCH) {
        ls_status st = runlog_flush(r, err);
        if (st != LS_OK)
            return st;
    }
    r->buf[r->n_buf].run = run_id;
    r->buf[r->n_buf].s = *s;
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

/* ---- reading ---------------------------------------------------------------
 * Every read first flushes this handle's buffered steps, so a handle always
 * sees its own writes. */

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
            return ls_fail(err, LS_ENOTFOUND, "no run '%s' in %s", id_or_name, r->path);
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
        s = ls_fail(err, LS_ENOTFOUND, "no run '%s' in %s", id_or_name, r->path);
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

/* ---- audits ---------------------------------------------------------------- */

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

ls_status runlog_audit_add(runlog *r, int64_t run_id, const runlog_audit *a, ls_err *err)
{
    if (sqlite3_exec(r->db, rl_audit_schema, NULL, NULL, NULL) != SQLITE_OK)
        return rl_dberr(r, "recording an audit", err);
    sqlite3_stmt *st;
    /* The table as the first audits made it had no build column. */
    if (sqlite3_prepare_v2(r->db, "SELECT build FROM audits LIMIT 0", -1, &st, NULL) != SQLITE_OK) {
        if (sqlite3_exec(r->db, "ALTER TABLE audits ADD COLUMN build TEXT", NULL, NULL, NULL) != SQLITE_OK)
            return rl_dberr(r, "recording an audit", err);
    } else {
        sqlite3_finalize(st);
    }
    ls_status s = rl_prepare(r,
        "INSERT INTO audits(run, created, version, host, threads, mode, steps, verdict, first_bad_step, detail,"
        " build) VALUES(?1, " RL_NOW ", ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        &st, "recording an audit", err);
    if (s != LS_OK)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    rl_bind_text_or_null(st, 2, a->version);
    rl_bind_text_or_null(st, 3, a->host);
    sqlite3_bind_int(st, 4, a->threads);
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

/* ---- moving runs: import, delete, rename ---------------------------------- */

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

/* The audits table with its build column (an older one gains it). */
static ls_status rl_audit_table(runlog *r, ls_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_exec(r->db, rl_audit_schema, NULL, NULL, NULL) != SQLITE_OK)
        return rl_dberr(r, "creating the audits table", err);
    if (sqlite3_prepare_v2(r->db, "SELECT build FROM main.audits LIMIT 0", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_finalize(st);
        return LS_OK;
    }
    if (sqlite3_exec(r->db, "ALTER TABLE main.audits ADD COLUMN build TEXT", NULL, NULL, NULL) != SQLITE_OK)
        return rl_dberr(r, "creating the audits table", err);
    return LS_OK;
}

/* Everything of the listed runs inside one transaction, src attached. */
static ls_status rl_import_rows(runlog *r, const int64_t *ids, size_t n, int64_t *new_ids, ls_err *err)
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
        char name[RUNLOG_NAME_BYTES];
        rl_copy(name, sizeof name, sqlite3_column_text(st, 0));
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
    if (s == LS_OK && rl_has_table(r, "src", "audits")) {
        sqlite3_stmt *st;
        const int has_build = sqlite3_prepare_v2(r->db, "SELECT build FROM src.audits LIMIT 0", -1, &st, NULL) ==
                              SQLITE_OK;
        if (has_build)
            sqlite3_finalize(st);
        if ((s = rl_audit_table(r, err)) == LS_OK)
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
    sqlite3_stmt *st;
    if ((s = rl_prepare(r, "ATTACH DATABASE ?1 AS src", &st, "attaching the database imported from", err)) != LS_OK)
        return s;
    sqlite3_bind_text(st, 1, src_path, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return ls_fail(err, LS_EDB, "%s: cannot attach %s: %s", r->path, src_path, sqlite3_errmsg(r->db));
    if ((s = rl_begin(r, "importing", err)) == LS_OK) {
        if ((s = rl_import_rows(r, ids, n, new_ids, err)) == LS_OK)
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
                                          "run_settings", "audits" };
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
