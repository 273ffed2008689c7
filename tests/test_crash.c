/* test_crash.c — crashes, checkpoints and resume, end to end with the real
 * `lockstep` binary (LOCKSTEP_BIN, else build/lockstep).
 *
 * The crash test kills `lockstep train --checkpoint-every 10` twenty times:
 * deterministically at chosen moments (LOCKSTEP_CRASH_AT=PHASE:N, see
 * tools/run.c: inside a step, inside a batch commit of the record, half-way
 * through writing a checkpoint) and at random moments (SIGKILL from here
 * after a seeded random delay). After each kill the database is checked
 * with raw sqlite3 calls (the independent path: integrity_check, the step
 * rows 0..m without a gap), `lockstep runs` must call the run interrupted,
 * and `lockstep resume` must finish it with the trajectory hash of one
 * uninterrupted run of the same config.
 *
 * Damaged checkpoints: a checkpoint with a flipped byte, one whose payload
 * was changed with the checksum made good again but not the registered
 * state hash, and one whose parameters no longer hash as the record has
 * them at its step are passed over: resume falls back to the older
 * checkpoint and ends on the uninterrupted trajectory. Negative controls: a
 * changed optimiser moment with file and record consistent loads, and then
 * the recomputation of the recorded steps fails (exit 1, naming the step) —
 * or, when no recorded step follows it, `verify` against the uninterrupted
 * run finds the divergence. Six processes write one new
 * database at once and none is refused with "database is locked".
 *
 * Children get stdin from /dev/null and pipes for stdout/stderr, and are
 * killed at a deadline so a hang fails the case instead of the suite. The
 * process runner is tests/proc_util.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "tests/proc_util.h"

static char g_bin[PATH_MAX];

#define DEADLINE 60.0

/* ---- per-test temporary directory (proc_ctx, tests/proc_util.h) ------------- */

static int setup_dir(void **state)
{
    return proc_ctx_setup(state, "/tmp/lockstep-crash-XXXXXX");
}

/* ---- environment ------------------------------------------------------------ */

/* A copy of environ without LOCKSTEP_CRASH_AT, plus `set` ("K=V" or NULL).
 * Only the array is allocated; the strings are borrowed. */
static char **make_env(const char *set)
{
    static const char *const unset[] = { "LOCKSTEP_CRASH_AT", NULL };
    const char *const kv[] = { set, NULL };
    return proc_make_env(kv, unset);
}

static char **g_env;   /* the clean environment: no crash hook */

/* ---- the runner (tests/proc_util.c) --------------------------------------------- */

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* env NULL means the clean environment g_env. */
static void cli_start(proc_child *p, const char *cwd, char **env, const char *const *argv)
{
    proc_start_bin(p, cwd, env != NULL ? env : g_env, NULL, g_bin, argv);
}

static void cli_run_env(proc_res *r, const proc_ctx *c, char **env, const char *const *argv)
{
    proc_child p;
    proc_describe("lockstep", argv, r->cmd, sizeof r->cmd);
    cli_start(&p, c->dir, env, argv);
    proc_finish(&p, r, DEADLINE);
    if (r->timed_out)
        fail_msg("%s: still running after %.0f s (killed)", r->cmd, DEADLINE);
}

#define RUN(r, c, ...)                                    \
    do {                                                  \
        const char *av_[] = { __VA_ARGS__, NULL };        \
        cli_run_env((r), (c), NULL, av_);                 \
    } while (0)

#define RUN_ENV(r, c, env, ...)                           \
    do {                                                  \
        const char *av_[] = { __VA_ARGS__, NULL };        \
        cli_run_env((r), (c), (env), av_);                \
    } while (0)

static void expect_code(const proc_res *r, int want)
{
    if (r->sig != 0 || r->code != want)
        fail_msg("%s: exit %d (signal %d), want %d\nstdout: %s\nstderr: %s", r->cmd, r->code, r->sig, want, r->out,
                 r->err);
}

#define RUN_OK(c, ...)                                    \
    do {                                                  \
        proc_res r_;                                       \
        RUN(&r_, (c), __VA_ARGS__);                       \
        expect_code(&r_, 0);                              \
        proc_res_free(&r_);                               \
    } while (0)

/* Whether the child has exited, without reaping it. */
static int has_exited(pid_t pid)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

/* ---- text helpers -------------------------------------------------------------- */

static int tokens(const char *a, const char *b, char tok[][64], int max)
{
    int n = 0;
    const char *p = a;
    while (p < b && n < max) {
        while (p < b && isspace((unsigned char)*p))
            p++;
        if (p >= b)
            break;
        const char *q = p;
        while (q < b && !isspace((unsigned char)*q))
            q++;
        size_t l = (size_t)(q - p) < 63 ? (size_t)(q - p) : 63;
        memcpy(tok[n], p, l);
        tok[n][l] = '\0';
        n++;
        p = q;
    }
    return n;
}

/* The status column of `lockstep runs` for the run called `name` ("" if absent). */
static void runs_status(const proc_ctx *c, const char *name, char *status, size_t cap)
{
    proc_res r;
    RUN(&r, c, "runs", "--db", "D");
    expect_code(&r, 0);
    status[0] = '\0';
    for (const char *a = r.out; *a;) {
        const char *b = strchr(a, '\n');
        if (b == NULL)
            b = a + strlen(a);
        char tok[16][64];
        int n = tokens(a, b, tok, 16);
        if (n >= 3 && strcmp(tok[1], name) == 0)
            snprintf(status, cap, "%s", tok[2]);
        a = *b ? b + 1 : b;
    }
    proc_res_free(&r);
}

/* ---- raw sqlite3: the independent view ---------------------------------------------- */

static sqlite3 *sql_open(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 10000);
    return db;
}

/* First column of the first row of sql (optional text parameter ?1); -1 on error or no row. */
static int64_t sql_int(const char *path, const char *sql, const char *param)
{
    sqlite3 *db = sql_open(path);
    if (db == NULL)
        return -1;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (param != NULL)
            sqlite3_bind_text(st, 1, param, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void sql_text(const char *path, const char *sql, const char *param, char *out, size_t cap)
{
    out[0] = '\0';
    sqlite3 *db = sql_open(path);
    assert_non_null(db);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (param != NULL)
        sqlite3_bind_text(st, 1, param, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *db = sql_open(path);
    assert_non_null(db);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

#define RUN_ID "(SELECT id FROM runs WHERE name = ?1)"

static int64_t rows_of(const char *db, const char *name)
{
    return sql_int(db, "SELECT count(*) FROM steps WHERE run = " RUN_ID, name);
}

static uint64_t last_traj(const char *db, const char *name)
{
    return (uint64_t)sql_int(db, "SELECT traj_hash FROM steps WHERE run = " RUN_ID " ORDER BY step DESC LIMIT 1",
                             name);
}

/* After a kill: the file is sound and the run's rows are 0..m without a gap. */
static void check_after_kill(const char *db, const char *name, const char *what)
{
    char ok[64];
    sql_text(db, "PRAGMA integrity_check", NULL, ok, sizeof ok);
    if (strcmp(ok, "ok") != 0)
        fail_msg("%s: integrity_check says '%s'", what, ok);
    int64_t n = rows_of(db, name);
    int64_t lo = sql_int(db, "SELECT min(step) FROM steps WHERE run = " RUN_ID, name);
    int64_t hi = sql_int(db, "SELECT max(step) FROM steps WHERE run = " RUN_ID, name);
    if (n > 0 && (lo != 0 || hi != n - 1))
        fail_msg("%s: %lld step rows from %lld to %lld: a gap", what, (long long)n, (long long)lo, (long long)hi);
    if (sql_int(db, "SELECT count(*) FROM runs WHERE name = ?1", name) != 1)
        fail_msg("%s: no run row", what);
}

/* ---- checkpoint files, edited behind the binary's back --------------------------------- */

static void write_file(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The registered path of a run's checkpoint at a step. */
static void ckpt_path_of(const char *db, const char *name, int step, char *out, size_t cap)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT path FROM checkpoints WHERE run = " RUN_ID " AND step = %d", step);
    sql_text(db, sql, name, out, cap);
    if (out[0] == '\0')
        fail_msg("run %s has no checkpoint registered at step %d", name, step);
}

enum { IN_PARAMS, IN_MOMENT };
enum { RESEAL_FILE = 1, RESEAL_RECORD = 2 };

/* Flips bits of one byte of the payload (a parameter, or the first moment of
 * the optimiser); RESEAL_FILE recomputes the checksum (XXH3_64bits of the
 * bytes before it, format of record/checkpoint.h), RESEAL_RECORD also
 * stores it as the registered state hash, so the file loads and only its
 * contents lie. */
static void tamper(const char *db, const char *name, int step, int where, int reseal)
{
    char path[PATH_MAX];
    ckpt_path_of(db, name, step, path, sizeof path);
    size_t len;
    unsigned char *b = (unsigned char *)proc_read_file(path, &len, 1);
    assert_true(len > 56);
    assert_memory_equal(b, "LKSTCKPT", 8);
    uint64_t n_params = rd64(b + 32);
    size_t head = (size_t)(b[12] | b[13] << 8);   /* header size: 72 in version 2 */
    assert_int_equal(head, 72);
    /* The optimiser block starts with a 24-byte header (t, β1^t, β2^t, n),
     * then the first moment; byte 3 of a float holds its exponent's top bits. */
    size_t at = where == IN_PARAMS ? head + 4 * 5 + 3 : head + 4 * (size_t)n_params + 24 + 4 * 5 + 3;
    assert_true(at < len - 8);
    b[at] ^= 0x40;
    uint64_t h = XXH3_64bits(b, len - 8);
    if (reseal & RESEAL_FILE)
        for (int i = 0; i < 8; i++)
            b[len - 8 + i] = (unsigned char)(h >> (8 * i));
    if (reseal & RESEAL_RECORD) {
        char sql[256];
        int64_t hi;
        memcpy(&hi, &h, sizeof hi);
        snprintf(sql, sizeof sql, "UPDATE checkpoints SET state_hash = %lld WHERE step = %d AND run = "
                 "(SELECT id FROM runs WHERE name = '%s')", (long long)hi, step, name);
        sql_exec(db, sql);
    }
    write_file(path, b, len);
    free(b);
}

/* ---- the crash test ------------------------------------------------------------------- */

/* splitmix64: the seeded source of the random kill delays. */
static uint64_t g_rng = UINT64_C(20261122);

static double rand_unit(void)
{
    uint64_t z = (g_rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

#define CRASH_TRAIN(name, threads) "train", "--task", "teacher", "--hidden", "128,128", "--steps", "120", \
    "--checkpoint-every", "10", "--db", "D", "--no-progress", "--name", (name), "--threads", (threads)

/* Waits until the run row of `name` exists; the seconds it took, or -1 if the
 * process exited first or nothing appeared within 20 s. */
static double wait_for_run(const char *db, const char *name, pid_t pid)
{
    double t0 = proc_now();
    while (proc_now() - t0 < 20.0) {
        if (sql_int(db, "SELECT count(*) FROM runs WHERE name = ?1", name) == 1)
            return proc_now() - t0;
        if (has_exited(pid))
            return -1;
        sleep_s(0.002);
    }
    return -1;
}

typedef struct {
    const char *phase;   /* NULL: a random-moment SIGKILL from the test */
    int n;
} kill_plan;

static const kill_plan PLAN[] = {
    { "step", 1 },        /* before the first commit: no step rows at all */
    { "step", 37 },
    { "step", 64 },
    { "step", 120 },      /* inside the last step */
    { "commit", 1 },      /* the first batch commit rolled back */
    { "commit", 3 },
    { "commit", 7 },
    { "commit", 12 },     /* the last one (step 120) */
    { "checkpoint", 1 },  /* a torn first checkpoint: resume from step 0 */
    { "checkpoint", 4 },
    { "checkpoint", 9 },
    { "checkpoint", 12 }, /* every step recorded, the last checkpoint torn */
    { NULL, 0 }, { NULL, 0 }, { NULL, 0 }, { NULL, 0 },
    { NULL, 0 }, { NULL, 0 }, { NULL, 0 }, { NULL, 0 },
};
#define N_KILLS (sizeof PLAN / sizeof PLAN[0])

static void test_crash_recovery(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    double t_start = proc_now();

    /* The uninterrupted reference, timed from its run row to its exit. */
    const char *ref_av[] = { CRASH_TRAIN("ref", "1"), NULL };
    proc_child p;
    proc_res r;
    proc_describe("lockstep", ref_av, r.cmd, sizeof r.cmd);
    cli_start(&p, c->dir, NULL, ref_av);
    double waited = wait_for_run(db, "ref", p.pid);
    double t_row = proc_now();
    proc_finish(&p, &r, DEADLINE);
    double loop_s = proc_now() - t_row;
    expect_code(&r, 0);
    proc_res_free(&r);
    assert_true(waited >= 0);
    assert_int_equal(rows_of(db, "ref"), 121);
    uint64_t ref = last_traj(db, "ref");

    int recovered = 0, random_kills = 0, retries = 0;
    char landed[512] = "";
    for (size_t i = 0; i < N_KILLS; i++) {
        const kill_plan *k = &PLAN[i];
        char name[32], what[96], env_kv[64];
        const char *threads = i % 2 ? "2" : "1", *resume_threads = i % 3 == 0 ? "3" : i % 2 ? "1" : "2";
        int attempt = 0;
        for (;;) {
            snprintf(name, sizeof name, attempt ? "r%zu.%d" : "r%zu", i, attempt);
            const char *av[] = { CRASH_TRAIN(name, threads), NULL };
            proc_describe("lockstep", av, r.cmd, sizeof r.cmd);
            if (k->phase != NULL) {
                snprintf(env_kv, sizeof env_kv, "LOCKSTEP_CRASH_AT=%s:%d", k->phase, k->n);
                snprintf(what, sizeof what, "kill %zu (%s, %s threads)", i + 1, env_kv, threads);
                char **env = make_env(env_kv);
                cli_start(&p, c->dir, env, av);
                proc_finish(&p, &r, DEADLINE);
                free(env);
                break;
            }
            /* Random moment: somewhere in the step loop, by a seeded delay. */
            double delay = loop_s * (0.02 + 0.9 * rand_unit()) / (double)(1 << attempt);
            snprintf(what, sizeof what, "kill %zu (SIGKILL after %.3f s, %s threads)", i + 1, delay, threads);
            cli_start(&p, c->dir, NULL, av);
            if (wait_for_run(db, name, p.pid) < 0) {
                kill(p.pid, SIGKILL);
                proc_finish(&p, &r, DEADLINE);
                fail_msg("%s: the run never appeared in the record\nstderr: %s", what, r.err);
            }
            sleep_s(delay);
            kill(p.pid, SIGKILL);
            proc_finish(&p, &r, DEADLINE);
            /* A kill that lands after the run was recorded done (while the
             * process evaluates or exits) interrupted nothing. */
            char st[64];
            sql_text(db, "SELECT status FROM runs WHERE name = ?1", name, st, sizeof st);
            int finished = strcmp(st, "done") == 0;
            if ((r.sig == SIGKILL && !finished) || attempt == 3)
                break;
            /* It finished before the kill landed: try again, sooner. */
            if (r.sig != SIGKILL)
                expect_code(&r, 0);
            proc_res_free(&r);
            attempt++;
            retries++;
        }
        if (r.sig != SIGKILL)
            fail_msg("%s: %s was not killed: exit %d, signal %d\nstderr: %s", what, r.cmd, r.code, r.sig, r.err);
        proc_res_free(&r);
        random_kills += k->phase == NULL;

        check_after_kill(db, name, what);
        int64_t rows_before = rows_of(db, name);
        size_t used = strlen(landed);
        snprintf(landed + used, sizeof landed - used, "%s%lld", i ? " " : "", (long long)rows_before - 1);
        char status[64];
        runs_status(c, name, status, sizeof status);
        if (strcmp(status, "interrupted") != 0)
            fail_msg("%s: `lockstep runs` shows %s as '%s', want interrupted", what, name, status);

        RUN(&r, c, "resume", name, "--db", "D", "--threads", resume_threads, "--no-progress");
        expect_code(&r, 0);
        if (strstr(r.out, "identical") == NULL)
            fail_msg("%s: resume did not report the recomputation\n%s", what, r.out);
        proc_res_free(&r);
        check_after_kill(db, name, what);
        char st[64];
        sql_text(db, "SELECT status FROM runs WHERE name = ?1", name, st, sizeof st);
        assert_string_equal(st, "done");
        assert_int_equal(rows_of(db, name), 121);
        uint64_t got = last_traj(db, name);
        if (got != ref)
            fail_msg("%s: resumed (had %lld rows) at %s threads: trajectory %016llx, uninterrupted %016llx", what,
                     (long long)rows_before, resume_threads, (unsigned long long)got, (unsigned long long)ref);
        /* Only the newest two checkpoints stay, as registered files. */
        int64_t kept = sql_int(db, "SELECT count(*) FROM checkpoints WHERE run = " RUN_ID, name);
        if (kept < 1 || kept > 2)
            fail_msg("%s: %lld checkpoints registered, want the last 1 or 2", what, (long long)kept);
        recovered++;
    }
    printf("crash: %d/%zu kills recovered with the uninterrupted trajectory (%zu deterministic, %d random; "
           "%.1f s)\n", recovered, N_KILLS, N_KILLS - (size_t)random_kills, random_kills, proc_now() - t_start);
    printf("crash: last committed step at each kill: %s (random kills retried sooner: %d)\n", landed, retries);
    assert_int_equal(recovered, 20);
}

/* ---- tampered checkpoints ---------------------------------------------------------------- */

#define SMALL(name) "train", "--task", "teacher", "--steps", "40", "--checkpoint-every", "10", "--db", "D", \
    "--no-progress", "--threads", "1", "--name", (name)

/* Trains `name` and kills it with LOCKSTEP_CRASH_AT=`at`. */
static void crashed_run(const proc_ctx *c, const char *name, const char *at)
{
    char **env = make_env(at);
    proc_res r;
    RUN_ENV(&r, c, env, SMALL(name));
    free(env);
    if (r.sig != SIGKILL)
        fail_msg("%s with %s: exit %d, signal %d, want SIGKILL\nstderr: %s", r.cmd, at, r.code, r.sig, r.err);
    proc_res_free(&r);
}

static void test_tampered_checkpoints(void **state)
{
    proc_ctx *c = *state;
    char db[256], path[PATH_MAX];
    proc_tpath(c, "D", db, sizeof db);
    RUN_OK(c, SMALL("ref"));
    uint64_t ref = last_traj(db, "ref");
    proc_res r;

    /* (1) A flipped byte: the checksum refuses the newest checkpoint (step
     * 20), resume falls back to step 10, recomputes 11..30 against the
     * record and finishes on the uninterrupted trajectory. */
    crashed_run(c, "flip", "LOCKSTEP_CRASH_AT=checkpoint:3");   /* rows 0..30, checkpoints 10, 20 */
    assert_int_equal(rows_of(db, "flip"), 31);
    ckpt_path_of(db, "flip", 20, path, sizeof path);
    size_t len;
    unsigned char *b = (unsigned char *)proc_read_file(path, &len, 1);
    b[len / 2] ^= 0x01;
    write_file(path, b, len);
    free(b);
    RUN(&r, c, "resume", "flip", "--db", "D", "--threads", "2");
    expect_code(&r, 0);
    if (strstr(r.out, "step 10") == NULL || strstr(r.out, "recomputed 20 recorded steps: identical") == NULL)
        fail_msg("resume past a damaged checkpoint: not from step 10 with 20 steps recomputed:\n%s", r.out);
    proc_res_free(&r);
    assert_true(last_traj(db, "flip") == ref);
    RUN(&r, c, "verify", "ref", "flip", "--db", "D");
    expect_code(&r, 0);
    proc_res_free(&r);

    /* (2) Payload changed, checksum made good, registered state hash not: the
     * record disowns the file, and resume falls back to step 10. */
    crashed_run(c, "unreg", "LOCKSTEP_CRASH_AT=checkpoint:3");
    tamper(db, "unreg", 20, IN_MOMENT, RESEAL_FILE);
    RUN(&r, c, "resume", "unreg", "--db", "D");
    expect_code(&r, 0);
    if (strstr(r.out, "step 10") == NULL)
        fail_msg("resume past an unregistered checkpoint: not from step 10:\n%s", r.out);
    proc_res_free(&r);
    assert_true(last_traj(db, "unreg") == ref);

    /* (3) An optimiser moment changed, file and record consistent: it loads,
     * and recomputing recorded step 21 exposes it (exit 1, naming the step). */
    crashed_run(c, "moment", "LOCKSTEP_CRASH_AT=checkpoint:3");
    tamper(db, "moment", 20, IN_MOMENT, RESEAL_FILE | RESEAL_RECORD);
    RUN(&r, c, "resume", "moment", "--db", "D");
    expect_code(&r, 1);
    if (strstr(r.err, "step 21:") == NULL)
        fail_msg("resume with a changed moment: stderr does not name step 21:\n%s", r.err);
    proc_res_free(&r);
    assert_int_equal(rows_of(db, "moment"), 31);   /* the record was not touched */

    /* (4) A parameter changed, consistent: its hash differs from the record
     * at the checkpoint's own step, so it is passed over for step 10. */
    crashed_run(c, "param", "LOCKSTEP_CRASH_AT=checkpoint:3");
    tamper(db, "param", 20, IN_PARAMS, RESEAL_FILE | RESEAL_RECORD);
    RUN(&r, c, "resume", "param", "--db", "D");
    expect_code(&r, 0);
    if (strstr(r.out, "step 10") == NULL)
        fail_msg("resume past a checkpoint with a changed parameter: not from step 10:\n%s", r.out);
    proc_res_free(&r);
    assert_true(last_traj(db, "param") == ref);

    /* (5) No recorded step after the checkpoint (killed inside step 21): the
     * changed moment cannot be caught by recomputation; the run completes,
     * and verify against the uninterrupted run names the divergence. */
    crashed_run(c, "late", "LOCKSTEP_CRASH_AT=step:21");
    assert_int_equal(rows_of(db, "late"), 21);
    tamper(db, "late", 20, IN_MOMENT, RESEAL_FILE | RESEAL_RECORD);
    RUN(&r, c, "resume", "late", "--db", "D");
    expect_code(&r, 0);
    proc_res_free(&r);
    assert_true(last_traj(db, "late") != ref);
    RUN(&r, c, "verify", "ref", "late", "--db", "D");
    expect_code(&r, 1);
    if (strstr(r.out, "step 21:") == NULL)
        fail_msg("verify does not name step 21:\n%s", r.out);
    proc_res_free(&r);
    /* The same crash without tampering resumes to the reference. */
    crashed_run(c, "late2", "LOCKSTEP_CRASH_AT=step:21");
    RUN_OK(c, "resume", "late2", "--db", "D");
    assert_true(last_traj(db, "late2") == ref);
    RUN(&r, c, "verify", "ref", "late2", "--db", "D");
    expect_code(&r, 0);
    proc_res_free(&r);
}

/* ---- resume: the other cases -------------------------------------------------------------- */

static void test_resume_cases(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    proc_res r;

    RUN(&r, c, "resume", "--help");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "usage"));
    proc_res_free(&r);
    RUN(&r, c, "--help");
    assert_non_null(strstr(r.out, "resume"));
    proc_res_free(&r);
    RUN(&r, c, "resume", "x", "--db", "D");   /* no database */
    expect_code(&r, 2);
    proc_res_free(&r);

    RUN_OK(c, "train", "--task", "teacher", "--steps", "120", "--db", "D", "--no-progress", "--name", "ref");
    uint64_t ref = last_traj(db, "ref");

    /* Done: nothing to do, exit 0, nothing changes. */
    int64_t rows = sql_int(db, "SELECT count(*) FROM steps", NULL);
    RUN(&r, c, "resume", "ref", "--db", "D");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "nothing to do"));
    proc_res_free(&r);
    assert_int_equal(sql_int(db, "SELECT count(*) FROM steps", NULL), rows);
    RUN(&r, c, "resume", "nosuch", "--db", "D");
    expect_code(&r, 2);
    proc_res_free(&r);
    RUN(&r, c, "resume", "ref", "--db", "D", "--steps", "100");   /* below what is recorded */
    expect_code(&r, 2);
    proc_res_free(&r);

    /* Unknown or malformed crash settings have no effect. */
    static const char *const bogus[] = { "LOCKSTEP_CRASH_AT=bogus:3", "LOCKSTEP_CRASH_AT=step:0",
                                         "LOCKSTEP_CRASH_AT=step:x", "LOCKSTEP_CRASH_AT=step", "LOCKSTEP_CRASH_AT=" };
    for (size_t i = 0; i < sizeof bogus / sizeof bogus[0]; i++) {
        char name[16];
        snprintf(name, sizeof name, "b%zu", i);
        char **env = make_env(bogus[i]);
        RUN_ENV(&r, c, env, "train", "--task", "teacher", "--steps", "120", "--db", "D", "--no-progress", "--name",
                name, "--checkpoint-every", "30");
        free(env);
        expect_code(&r, 0);
        proc_res_free(&r);
        assert_true(last_traj(db, name) == ref);
    }

    /* Killed in its first steps: step 0 is on record (committed when the run
     * opens, not with the first batch of rows), and the run resumes. */
    char **env = make_env("LOCKSTEP_CRASH_AT=step:5");
    RUN_ENV(&r, c, env, "train", "--task", "teacher", "--steps", "120", "--db", "D", "--no-progress", "--name",
            "early");
    free(env);
    assert_int_equal(r.sig, SIGKILL);
    proc_res_free(&r);
    assert_int_equal(rows_of(db, "early"), 1);
    RUN(&r, c, "resume", "early", "--db", "D", "--threads", "2");
    expect_code(&r, 0);
    proc_res_free(&r);
    assert_true(last_traj(db, "early") == ref);

    /* No checkpoint at all: resume recomputes every recorded step from step 0
     * (step 0 was committed at open, rows 1..64 in one batch before the kill
     * at step 100). */
    env = make_env("LOCKSTEP_CRASH_AT=step:100");
    RUN_ENV(&r, c, env, "train", "--task", "teacher", "--steps", "120", "--db", "D", "--no-progress", "--name",
            "nock");
    free(env);
    assert_int_equal(r.sig, SIGKILL);
    proc_res_free(&r);
    assert_int_equal(rows_of(db, "nock"), 65);
    /* The resume itself is killed (inside its 5th step) and resumed again. */
    env = make_env("LOCKSTEP_CRASH_AT=step:5");
    RUN_ENV(&r, c, env, "resume", "nock", "--db", "D", "--threads", "2");
    free(env);
    assert_int_equal(r.sig, SIGKILL);
    proc_res_free(&r);
    check_after_kill(db, "nock", "killed resume");
    RUN(&r, c, "resume", "nock", "--db", "D", "--threads", "3");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "from step 0"));
    assert_non_null(strstr(r.out, "recomputed 64 recorded steps: identical"));
    proc_res_free(&r);
    assert_true(last_traj(db, "nock") == ref);

    /* A done run continued beyond its step count equals a longer fresh run,
     * and checkpoints can be switched on at resume. */
    RUN(&r, c, "resume", "nock", "--db", "D", "--steps", "150", "--checkpoint-every", "25", "--checkpoint-dir",
        "ck/sub");
    expect_code(&r, 0);
    proc_res_free(&r);
    RUN_OK(c, "train", "--task", "teacher", "--steps", "150", "--db", "D", "--no-progress", "--name", "ref150");
    assert_int_equal(rows_of(db, "nock"), 151);
    assert_true(last_traj(db, "nock") == last_traj(db, "ref150"));
    char ck[PATH_MAX], want[PATH_MAX + 64];
    sql_text(db, "SELECT path FROM checkpoints WHERE run = " RUN_ID " ORDER BY step DESC LIMIT 1", "nock", ck,
             sizeof ck);
    char db16[64];
    sql_text(db, "SELECT substr(id, 1, 16) FROM identity", NULL, db16, sizeof db16);
    assert_int_equal(strlen(db16), 16);
    snprintf(want, sizeof want, "%s/ck/sub/%s-run-%lld-step-150.ckpt", c->dir, db16,
             (long long)sql_int(db, "SELECT id FROM runs WHERE name = ?1", "nock"));
    char real_want[PATH_MAX];
    assert_non_null(realpath(want, real_want));
    assert_string_equal(ck, real_want);

    /* The default directory is <db>.ckpt/, and the run keeps its last two checkpoints. */
    RUN_OK(c, "train", "--task", "teacher", "--steps", "120", "--db", "D", "--no-progress", "--name", "dflt",
           "--checkpoint-every", "20");
    assert_int_equal(sql_int(db, "SELECT count(*) FROM checkpoints WHERE run = " RUN_ID, "dflt"), 2);
    assert_int_equal(sql_int(db, "SELECT min(step) FROM checkpoints WHERE run = " RUN_ID, "dflt"), 100);
    int64_t id = sql_int(db, "SELECT id FROM runs WHERE name = ?1", "dflt");
    for (int s = 20; s <= 120; s += 20) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/D.ckpt/%s-run-%lld-step-%d.ckpt", c->dir, db16, (long long)id, s);
        if ((access(p, F_OK) == 0) != (s >= 100))
            fail_msg("%s: %s, want only steps 100 and 120 kept", p, access(p, F_OK) == 0 ? "exists" : "missing");
    }
    RUN(&r, c, "train", "--task", "teacher", "--steps", "5", "--db", "D", "--checkpoint-dir", "x");
    expect_code(&r, 2);   /* a directory without an interval */
    proc_res_free(&r);

    /* A diverged run is not resumed (it would diverge again). */
    RUN(&r, c, "train", "--task", "teacher", "--optimizer", "sgd", "--lr", "1000000", "--hidden", "256,256",
        "--steps", "400", "--db", "D", "--name", "div", "--checkpoint-every", "10");
    expect_code(&r, 1);
    proc_res_free(&r);
    RUN(&r, c, "resume", "div", "--db", "D");
    expect_code(&r, 2);
    assert_non_null(strstr(r.err, "diverged"));
    proc_res_free(&r);

    /* A run still alive in another process is not resumed. */
    const char *long_av[] = { "train", "--task", "teacher", "--hidden", "256,256", "--steps", "1000000", "--db", "D",
                              "--no-progress", "--name", "alive", "--threads", "1", NULL };
    proc_child p;
    cli_start(&p, c->dir, NULL, long_av);
    if (wait_for_run(db, "alive", p.pid) < 0) {
        kill(p.pid, SIGKILL);
        proc_finish(&p, &r, DEADLINE);
        fail_msg("the long run never appeared\nstderr: %s", r.err);
    }
    RUN(&r, c, "resume", "alive", "--db", "D");
    int code = r.code;
    char err_copy[512];
    snprintf(err_copy, sizeof err_copy, "%s", r.err);
    proc_res_free(&r);
    kill(p.pid, SIGKILL);
    proc_finish(&p, &r, DEADLINE);
    proc_res_free(&r);
    if (code != 2 || strstr(err_copy, "running") == NULL)
        fail_msg("resume of a live run: exit %d, want 2 naming it running\nstderr: %s", code, err_copy);
}

/* ---- several writers ------------------------------------------------------------------- */

#define WRITERS 6

static void test_six_writers(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    /* No database yet: the six race to create it, then write side by side. */
    proc_child p[WRITERS];
    proc_res r[WRITERS];
    char names[WRITERS][16], threads[WRITERS][4];
    for (int i = 0; i < WRITERS; i++) {
        snprintf(names[i], sizeof names[i], "w%d", i);
        snprintf(threads[i], sizeof threads[i], "%d", 1 + i % 3);
        const char *av[] = { "train", "--task", "teacher", "--hidden", "128,128", "--steps", "200", "--db", "D",
                             "--no-progress", "--name", names[i], "--threads", threads[i], "--checkpoint-every", "25",
                             NULL };
        proc_describe("lockstep", av, r[i].cmd, sizeof r[i].cmd);
        cli_start(&p[i], c->dir, NULL, av);
    }
    for (int i = 0; i < WRITERS; i++)
        proc_finish(&p[i], &r[i], DEADLINE);
    uint64_t first = 0;
    for (int i = 0; i < WRITERS; i++) {
        if (strstr(r[i].err, "locked") != NULL || strstr(r[i].err, "busy") != NULL)
            fail_msg("%s: %s", r[i].cmd, r[i].err);
        expect_code(&r[i], 0);
        proc_res_free(&r[i]);
        assert_int_equal(rows_of(db, names[i]), 201);
        assert_int_equal(sql_int(db, "SELECT max(step) FROM steps WHERE run = " RUN_ID, names[i]), 200);
        assert_int_equal(sql_int(db, "SELECT count(*) FROM checkpoints WHERE run = " RUN_ID, names[i]), 2);
        if (i == 0)
            first = last_traj(db, names[i]);
        else
            assert_true(last_traj(db, names[i]) == first);
    }
    assert_int_equal(sql_int(db, "SELECT count(*) FROM steps", NULL), WRITERS * 201);
    char ok[64];
    sql_text(db, "PRAGMA integrity_check", NULL, ok, sizeof ok);
    assert_string_equal(ok, "ok");
    printf("writers: %d processes wrote one new database at once: %d x 201 rows, identical trajectories\n", WRITERS,
           WRITERS);
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_crash", 1) != 0)
        return 1;
    g_env = make_env(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crash_recovery, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_tampered_checkpoints, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_resume_cases, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_six_writers, setup_dir, proc_ctx_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_env);
    return rc ? 1 : 0;
}
