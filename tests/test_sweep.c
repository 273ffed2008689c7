/* test_sweep.c — many runs in one process (engine/core/sweep.h, `lockstep sweep`):
 * every run of a sweep has, bit for bit, the trajectory of the same config
 * trained alone with one thread.
 *
 * - A sweep mixing models (an MLP and a logic gate network on the teacher
 *   task), batch sizes (16, 64, and 37: a short last atom, an atom count
 *   that is no power of two; the sweep at leaves of 32, the solo runs at 16)
 *   and seeds, run at sweep threads 1, 2,
 *   3 and 8 with the real binary; each run's final trajectory hash, read from
 *   the record with the raw SQLite API, equals that of `lockstep train
 *   --threads 1` of its config; the runs carry the sweep id and `runs --sweep`
 *   lists them all.
 * - A sweep mixing tasks, one of them the checkerboard logic CA (phases of
 *   (sample, part) units before its leaves), against its solo runs; and one
 *   of runs of different lengths.
 * - A library-level stop (the progress callback sets the stop flag after a
 *   few rounds): sweep_train returns LS_EINTR, every run is unfinished and,
 *   closed as such, recorded 'interrupted'; each then resumes (alone, or
 *   again in a sweep of the reopened sessions) to the solo trajectory.
 * - SIGINT to `lockstep sweep`: exit 130, every run 'interrupted', and
 *   `lockstep resume` of each ends on the solo trajectory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/core/sweep.h"
#include "include/lockstep.h"
#include "tests/proc_util.h"

static char g_bin[PATH_MAX];

#define DEADLINE 300.0

static int setup_dir(void **state)
{
    return proc_ctx_setup(state, "/tmp/lockstep-sweep-XXXXXX");
}

/* Runs the binary with the NULL-terminated arguments in the test directory;
 * the case fails unless it exits with `want`. */
static void run_cli(const proc_ctx *c, int want, proc_res *r, const char *const *argv)
{
    proc_child p;
    memset(r, 0, sizeof *r);
    proc_describe("lockstep", argv, r->cmd, sizeof r->cmd);
    proc_start_bin(&p, c->dir, NULL, NULL, g_bin, argv);
    proc_finish(&p, r, DEADLINE);
    if (r->code != want)
        fail_msg("%s: exit %d (signal %d), want %d\nstdout: %s\nstderr: %s", r->cmd, r->code, r->sig, want, r->out,
                 r->err);
}

#define RUN_OK(c, ...)                                                      \
    do {                                                                    \
        proc_res r_;                                                        \
        const char *const av_[] = { __VA_ARGS__, NULL };                    \
        run_cli(c, 0, &r_, av_);                                            \
        proc_res_free(&r_);                                                 \
    } while (0)

/* One integer from the database (the first column of the first row), the
 * query's ?1 bound to text; LLONG_MIN when there is no row. */
static long long sql_int(const char *db, const char *sql, const char *arg)
{
    sqlite3 *h;
    sqlite3_stmt *q;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        fail_msg("%s: cannot open", db);
    sqlite3_busy_timeout(h, 10000);   /* the sweep may be writing */
    if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    if (arg != NULL)
        sqlite3_bind_text(q, 1, arg, -1, SQLITE_TRANSIENT);
    long long v = LLONG_MIN;
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
    return v;
}

/* Runs with committed steps, or -1 while the database is still being made. */
static long long runs_with_steps(const char *db)
{
    sqlite3 *h;
    sqlite3_stmt *q;
    long long v = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        return -1;
    }
    sqlite3_busy_timeout(h, 10000);
    if (sqlite3_prepare_v2(h, "SELECT count(*) FROM (SELECT run FROM steps GROUP BY run HAVING max(step) > 0)", -1,
                           &q, NULL) == SQLITE_OK) {
        if (sqlite3_step(q) == SQLITE_ROW)
            v = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    sqlite3_close(h);
    return v;
}

static void sql_text(const char *db, const char *sql, const char *arg, char *out, size_t cap)
{
    sqlite3 *h;
    sqlite3_stmt *q;
    out[0] = '\0';
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        fail_msg("%s: cannot open", db);
    sqlite3_busy_timeout(h, 10000);   /* the sweep may be writing */
    if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    sqlite3_bind_text(q, 1, arg, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0) != NULL)
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(h);
}

/* The record's last trajectory hash of run `name`. */
static long long traj_of(const char *db, const char *name)
{
    long long v = sql_int(db, "SELECT traj_hash FROM steps WHERE run = (SELECT id FROM runs WHERE name = ?1) "
                              "ORDER BY step DESC LIMIT 1", name);
    if (v == LLONG_MIN)
        fail_msg("%s: no step rows of run '%s'", db, name);
    return v;
}

static long long last_step_of(const char *db, const char *name)
{
    return sql_int(db, "SELECT max(step) FROM steps WHERE run = (SELECT id FROM runs WHERE name = ?1)", name);
}

static void status_of(const char *db, const char *name, char *out, size_t cap)
{
    sql_text(db, "SELECT status FROM runs WHERE name = ?1", name, out, cap);
}

/* ---- a sweep of mixed models and batch sizes at 1, 2, 3 and 8 threads --------------------- */

static const char *const MODELS[] = { "mlp", "logic" };
static const char *const BATCHES[] = { "16", "64", "37" };
static const char *const SEEDS[] = { "1", "2" };
#define MIXED_STEPS "12"

static void test_mixed_equals_solo(void **state)
{
    proc_ctx *c = *state;
    char solo[256], sdb[256];
    proc_tpath(c, "solo.db", solo, sizeof solo);
    proc_tpath(c, "sweep.db", sdb, sizeof sdb);
    /* The independent path: each config trained alone, one thread. */
    for (size_t m = 0; m < 2; m++)
        for (size_t b = 0; b < 3; b++)
            for (size_t s = 0; s < 2; s++) {
                char name[64];
                snprintf(name, sizeof name, "solo-%s-%s-%s", MODELS[m], BATCHES[b], SEEDS[s]);
                RUN_OK(c, "train", "--task", "teacher", "--model", MODELS[m], "--batch", BATCHES[b], "--seed",
                       SEEDS[s], "--leaf", "16", "--steps", MIXED_STEPS, "--threads", "1", "--db", "solo.db",
                       "--name", name, "--no-progress");
            }
    static const char *const THREADS[] = { "1", "2", "3", "8" };
    for (size_t t = 0; t < 4; t++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "sw%s", THREADS[t]);
        RUN_OK(c, "sweep", "--task", "teacher", "--model", "mlp,logic", "--batch", "16,64,37", "--seeds", "1-2",
               "--leaf", "32", "--steps", MIXED_STEPS, "--threads", THREADS[t], "--db", "sweep.db", "--name", prefix,
               "--no-progress");
        int rows = 0;
        for (size_t m = 0; m < 2; m++)
            for (size_t b = 0; b < 3; b++)
                for (size_t s = 0; s < 2; s++) {
                    char name[96], want[64], st[32], tag[64];
                    snprintf(name, sizeof name, "%s-model%s-batch%s-seed%s", prefix, MODELS[m], BATCHES[b], SEEDS[s]);
                    snprintf(want, sizeof want, "solo-%s-%s-%s", MODELS[m], BATCHES[b], SEEDS[s]);
                    long long got = traj_of(sdb, name), exp = traj_of(solo, want);
                    if (got != exp)
                        fail_msg("threads %s: run %s has trajectory %016llx, alone with one thread %016llx",
                                 THREADS[t], name, (unsigned long long)got, (unsigned long long)exp);
                    assert_int_equal(last_step_of(sdb, name), 12);
                    status_of(sdb, name, st, sizeof st);
                    assert_string_equal(st, "done");
                    sql_text(sdb, "SELECT value FROM run_settings WHERE key = 'sweep' AND run = "
                                  "(SELECT id FROM runs WHERE name = ?1)", name, tag, sizeof tag);
                    assert_string_equal(tag, prefix);
                    rows++;
                }
        assert_int_equal(rows, 12);
        /* runs --sweep lists exactly the sweep's 12 runs, each with an evaluation. */
        proc_res r;
        const char *const av[] = { "runs", "--sweep", prefix, "--db", "sweep.db", NULL };
        run_cli(c, 0, &r, av);
        int lines = 0;
        for (const char *p = r.out; (p = strstr(p, prefix)) != NULL; p += strlen(prefix))
            lines++;
        if (lines != 12 || strstr(r.out, "test_acc") == NULL)
            fail_msg("runs --sweep %s: want 12 runs with test_acc\n%s", prefix, r.out);
        proc_res_free(&r);
    }
}

/* ---- phases: the checkerboard logic CA beside an MLP ------------------------------------------ */

static void test_tasks_with_phases(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    RUN_OK(c, "train", "--task", "checkerboard", "--seed", "5", "--steps", "3", "--threads", "1", "--db", "D",
           "--name", "cb", "--no-progress");
    RUN_OK(c, "train", "--task", "teacher", "--seed", "5", "--steps", "3", "--threads", "1", "--db", "D", "--name",
           "te", "--no-progress");
    RUN_OK(c, "sweep", "--task", "teacher,checkerboard", "--seed", "5", "--steps", "3", "--threads", "3", "--db", "D",
           "--name", "mix", "--no-progress");
    assert_true(traj_of(db, "mix-taskcheckerboard") == traj_of(db, "cb"));
    assert_true(traj_of(db, "mix-taskteacher") == traj_of(db, "te"));
    /* Runs of different lengths: the short one finishes (and is evaluated) first. */
    RUN_OK(c, "train", "--task", "teacher", "--seed", "5", "--steps", "9", "--threads", "1", "--db", "D", "--name",
           "te9", "--no-progress");
    RUN_OK(c, "sweep", "--task", "teacher", "--seed", "5", "--steps", "3,9", "--threads", "2", "--db", "D", "--name",
           "len", "--no-progress");
    assert_true(traj_of(db, "len-steps3") == traj_of(db, "te"));
    assert_true(traj_of(db, "len-steps9") == traj_of(db, "te9"));
    assert_int_equal(last_step_of(db, "len-steps3"), 3);
    assert_int_equal(last_step_of(db, "len-steps9"), 9);
}

/* ---- a library-level stop, then resume ----------------------------------------------------- */

#define LIB_STEPS 20

typedef struct {
    int rounds;
    volatile int stop;
} stopper;

static void stop_after(void *ctx, const sweep_progress *p)
{
    stopper *s = ctx;
    if (p->rounds >= s->rounds)
        s->stop = 1;
}

static ls_config *lib_config(const char *model, const char *batch, const char *seed)
{
    ls_config *cfg;
    ls_err err;
    assert_int_equal(ls_config_create(&cfg, "teacher", model, &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "batch", batch, &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "seed", seed, &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "leaf", "16", &err), LS_OK);
    return cfg;
}

static void test_library_stop_and_resume(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "lib.db", db, sizeof db);
    enum { N = 4 };
    static const char *const model[N] = { "mlp", "logic", "mlp", "logic" };
    static const char *const batch[N] = { "16", "64", "37", "16" };
    static const char *const seed[N] = { "3", "4", "5", "6" };
    ls_config *cfg[N];
    uint64_t solo[N];
    ls_err err = { "" };
    for (int i = 0; i < N; i++) {
        cfg[i] = lib_config(model[i], batch[i], seed[i]);
        ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 1, .steps = LIB_STEPS };
        ls_session *s;
        assert_int_equal(ls_session_open(&s, cfg[i], &o, &err), LS_OK);
        assert_int_equal(ls_session_train(s, 0, 0, NULL, NULL, NULL, &err), LS_OK);
        ls_session_state ss;
        ls_session_state_get(s, &ss);
        solo[i] = ss.traj_hash;
        ls_session_close(s, LS_OK, NULL);
    }

    sweep *sw;
    assert_int_equal(sweep_create(&sw, 3, &err), LS_OK);
    ls_session *s[N];
    char names[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "lib-%d", i);
        ls_session_opts o = { .size = sizeof(ls_session_opts),
                              .threads = 1, .db = db, .name = names[i], .steps = LIB_STEPS, .checkpoint_every = 6 };
        ls_status st = ls_session_open(&s[i], cfg[i], &o, &err);
        if (st != LS_OK)
            fail_msg("ls_session_open: %s", err.msg);
        assert_int_equal(sweep_add(sw, s[i], 0, &err), LS_OK);
    }
    assert_int_equal(sweep_tag(sw, db, "lib", &err), LS_OK);
    stopper stop = { 9, 0 };
    ls_status st = sweep_train(sw, &stop.stop, stop_after, &stop, &err);
    assert_int_equal(st, LS_EINTR);
    for (int i = 0; i < N; i++) {
        assert_int_equal(sweep_run_status(sw, (size_t)i, NULL), LS_EINTR);
        ls_session_state ss;
        ls_session_state_get(s[i], &ss);
        assert_int_equal(ss.step, 9);
        ls_session_close(s[i], LS_EINTR, NULL);
    }
    sweep_destroy(sw);
    for (int i = 0; i < N; i++) {
        char stx[32];
        status_of(db, names[i], stx, sizeof stx);
        assert_string_equal(stx, "interrupted");
        assert_int_equal(last_step_of(db, names[i]), 9);
    }

    /* Runs 0 and 1 resume alone at 2 threads; runs 2 and 3 in a new sweep of the reopened sessions. */
    for (int i = 0; i < 2; i++) {
        ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 2 };
        ls_session *r;
        assert_int_equal(ls_session_reopen(&r, db, names[i], LS_REOPEN_RESUME, &o, &err), LS_OK);
        assert_int_equal(ls_session_train(r, 0, 0, NULL, NULL, NULL, &err), LS_OK);
        ls_session_close(r, LS_OK, NULL);
    }
    assert_int_equal(sweep_create(&sw, 2, &err), LS_OK);
    ls_session *r2[2];
    for (int i = 2; i < N; i++) {
        ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 1 };
        assert_int_equal(ls_session_reopen(&r2[i - 2], db, names[i], LS_REOPEN_RESUME, &o, &err), LS_OK);
        assert_int_equal(sweep_add(sw, r2[i - 2], 0, &err), LS_OK);
    }
    assert_int_equal(sweep_train(sw, NULL, NULL, NULL, &err), LS_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sweep_run_status(sw, (size_t)i, NULL), LS_OK);
        size_t nm;
        assert_non_null(sweep_run_metrics(sw, (size_t)i, &nm));
        ls_session_close(r2[i], LS_OK, NULL);
    }
    sweep_destroy(sw);
    for (int i = 0; i < N; i++) {
        char stx[32];
        status_of(db, names[i], stx, sizeof stx);
        assert_string_equal(stx, "done");
        long long got = traj_of(db, names[i]);
        if ((uint64_t)got != solo[i])
            fail_msg("run %s resumed to trajectory %016llx; alone %016llx", names[i], (unsigned long long)got,
                     (unsigned long long)solo[i]);
        ls_config_destroy(cfg[i]);
    }
}

/* ---- SIGINT to lockstep sweep ----------------------------------------------------------------- */

static void test_sigint_then_resume(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    proc_child p;
    const char *const av[] = { "sweep", "--task", "teacher", "--seeds", "1-4", "--steps", "100000000", "--threads",
                               "2", "--db", "D", "--name", "big", "--checkpoint-every", "25", NULL };
    proc_start_bin(&p, c->dir, NULL, NULL, g_bin, av);
    /* Wait until every run has committed steps (rows are committed in batches). */
    double t0 = proc_now();
    while (proc_now() - t0 < 30) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        if (access(db, F_OK) != 0)
            continue;
        if (runs_with_steps(db) == 4)
            break;
    }
    assert_int_equal(kill(p.pid, SIGINT), 0);
    proc_res r;
    proc_finish(&p, &r, 30);
    if (r.code != 130)
        fail_msg("after SIGINT: exit %d (signal %d), want 130\nstderr: %s", r.code, r.sig, r.err);
    proc_res_free(&r);
    for (int i = 1; i <= 4; i++) {
        char name[32], st[32], steps[32], seed[16];
        snprintf(name, sizeof name, "big-seed%d", i);
        snprintf(seed, sizeof seed, "%d", i);
        status_of(db, name, st, sizeof st);
        assert_string_equal(st, "interrupted");
        long long last = last_step_of(db, name);
        assert_true(last > 0);
        /* Resume to a few steps past where it stopped, and train the same alone. */
        snprintf(steps, sizeof steps, "%lld", last + 7);
        RUN_OK(c, "resume", name, "--db", "D", "--steps", steps, "--threads", "1", "--no-progress");
        char solo[32];
        snprintf(solo, sizeof solo, "solo-%d", i);
        RUN_OK(c, "train", "--task", "teacher", "--seed", seed, "--steps", steps, "--threads", "1", "--db", "D",
               "--name", solo, "--no-progress");
        status_of(db, name, st, sizeof st);
        assert_string_equal(st, "done");
        assert_true(traj_of(db, name) == traj_of(db, solo));
    }
}

/* --help: usage on stdout, exit 0, nothing recorded. */
static void test_help(void **state)
{
    proc_ctx *c = *state;
    proc_res r;
    const char *const av[] = { "sweep", "--help", NULL };
    run_cli(c, 0, &r, av);
    assert_non_null(strstr(r.out, "usage: lockstep sweep"));
    assert_non_null(strstr(r.out, "--seeds"));
    proc_res_free(&r);
    char p[256];
    proc_tpath(c, "runs.db", p, sizeof p);
    assert_int_not_equal(access(p, F_OK), 0);
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_sweep", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_help, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_mixed_equals_solo, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_tasks_with_phases, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_library_stop_and_resume, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_sigint_then_resume, setup_dir, proc_ctx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
