/* test_cli.c — end-to-end tests of the `lockstep` binary (docs/formats.md, the SQLite record; README.md).
 *
 * Every case runs the real binary (LOCKSTEP_BIN, else build/lockstep) in a
 * child process of its own, in a fresh temporary directory with its own
 * database, and looks at what a user would see: the exit status, stdout,
 * stderr. What the binary claims is checked behind its back where it matters:
 * the database is read with the raw sqlite3 API (the independent path), so a
 * bad-input invocation that silently drops or adds rows is caught even when
 * the CLI's own output looks fine. Children get stdin from /dev/null and pipes
 * for stdout/stderr (so they never see a terminal), and are killed if they run
 * longer than a deadline, so a hang fails the case instead of the suite.
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

#include "engine/core/registry.h"
#include "tests/proc_util.h"

static char g_bin[PATH_MAX];

/* Seconds a child may run before it is killed and the case fails. */
/* A hang guard. Sanitizer builds of golden check take minutes; under
 * ThreadSanitizer the logic network's Fashion-MNIST file alone takes more
 * than two. */
#if defined(__SANITIZE_THREAD__)
#define CLI_DEADLINE 900.0
#else
#define CLI_DEADLINE 300.0
#endif

/* ---- per-test temporary directory (proc_ctx, tests/proc_util.h) ---------------- */

static int setup_dir(void **state)
{
    return proc_ctx_setup(state, "/tmp/lockstep-cli-XXXXXX");
}

/* ---- the runner (tests/proc_util.c) ---------------------------------------------- */

/* Starts the binary with argv (without argv[0]) in directory cwd; env NULL
 * means the test's own environment. */
static void cli_start(proc_child *p, const char *cwd, char **env, const char *const *argv)
{
    proc_start_bin(p, cwd, env, NULL, g_bin, argv);
}

static void cli_run_env(proc_res *r, const proc_ctx *c, char **env, const char *const *argv)
{
    proc_child p;
    proc_describe("lockstep", argv, r->cmd, sizeof r->cmd);
    cli_start(&p, c->dir, env, argv);
    proc_finish(&p, r, CLI_DEADLINE);
    if (r->timed_out)
        fail_msg("%s: still running after %.0f s (killed)", r->cmd, CLI_DEADLINE);
    if (r->sig != 0)
        fail_msg("%s: died of signal %d (%s)\nstderr: %s", r->cmd, r->sig, strsignal(r->sig), r->err);
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

/* Fails with the command and both captures when the exit status is not `want`. */
static void expect_code(const proc_res *r, int want)
{
    if (r->code != want)
        fail_msg("%s: exit %d, want %d\nstdout: %s\nstderr: %s", r->cmd, r->code, want, r->out, r->err);
}

/* Runs a command that must succeed (exit 0); frees the captures. */
#define RUN_OK(c, ...)                                    \
    do {                                                  \
        proc_res r_;                                       \
        RUN(&r_, (c), __VA_ARGS__);                       \
        expect_code(&r_, 0);                              \
        proc_res_free(&r_);                               \
    } while (0)

/* ---- text helpers ----------------------------------------------------------------- */

static size_t count_char(const char *s, size_t n, char ch)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == ch;
    return k;
}

/* "step N" as a whole number (so "step 1" does not match "step 10"). */
static int names_step(const char *s, long n)
{
    char want[32];
    int w = snprintf(want, sizeof want, "step %ld", n);
    for (const char *p = strstr(s, want); p != NULL; p = strstr(p + 1, want))
        if (!isdigit((unsigned char)p[w]))
            return 1;
    return 0;
}

/* Whole-word occurrence of `word` in the line [a, b). */
static int line_has_word(const char *a, const char *b, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = a; p + wl <= b; p++)
        if (strncmp(p, word, wl) == 0 && (p == a || !isalnum((unsigned char)p[-1]))
            && (p + wl == b || !isalnum((unsigned char)p[wl])))
            return 1;
    return 0;
}

/* Splits line [a, b) into whitespace-separated tokens (at most max). */
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

static int is_hex16(const char *s)
{
    if (strlen(s) != 16)
        return 0;
    for (int i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

static int is_uint(const char *s)
{
    if (*s == '\0')
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* The row of `lockstep runs` whose name column is `name`: its tokens. 0 if none. */
static int runs_row(const char *out, const char *name, char tok[][64], int max)
{
    for (const char *a = out; *a;) {
        const char *b = strchr(a, '\n');
        if (b == NULL)
            b = a + strlen(a);
        int n = tokens(a, b, tok, max);
        if (n >= 6 && is_uint(tok[0]) && strcmp(tok[1], name) == 0)
            return n;
        a = *b ? b + 1 : b;
    }
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* ---- raw sqlite3: the independent view of the record --------------------------- */

static sqlite3 *sql_open(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

/* The first column of the first row of `sql` (one optional text parameter);
 * -1 on any error (no such file, no such table yet, busy). */
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
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* Step rows recorded for the run called `name`. */
static int64_t steps_of(const char *dbpath, const char *name)
{
    return sql_int(dbpath, "SELECT count(*) FROM steps WHERE run = (SELECT id FROM runs WHERE name = ?1)", name);
}

/* ---- 1. happy paths ------------------------------------------------------------------ */

static void test_train_runs_show(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    proc_res r;
    RUN(&r, c, "train", "--task", "teacher", "--steps", "20", "--db", "D", "--name", "a", "--threads", "1");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "done"));
    proc_res_free(&r);
    RUN_OK(c, "train", "--task", "teacher", "--steps", "20", "--db", "D", "--name", "b", "--threads", "3");

    RUN(&r, c, "runs", "--db", "D");
    expect_code(&r, 0);
    char tok[16][64];
    assert_true(runs_row(r.out, "a", tok, 16) >= 6);
    assert_string_equal(tok[2], "done");
    assert_string_equal(tok[5], "20");
    assert_true(runs_row(r.out, "b", tok, 16) >= 6);
    assert_string_equal(tok[2], "done");
    proc_res_free(&r);

    RUN(&r, c, "show", "a", "--db", "D");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "task=teacher"));
    assert_non_null(strstr(r.out, "model=mlp"));
    assert_non_null(strstr(r.out, "'a'"));
    assert_int_equal(r.err_len, 0);
    proc_res_free(&r);

    /* The step table: rows are the lines that start with a step number,
     * 0..20 in order (config and evaluation lines are indented). */
    RUN(&r, c, "show", "a", "--db", "D", "--steps");
    expect_code(&r, 0);
    long want = 0;
    for (const char *a = r.out; *a;) {
        const char *b = strchr(a, '\n');
        if (b == NULL)
            b = a + strlen(a);
        if (isdigit((unsigned char)*a)) {
            char t[8][64];
            int n = tokens(a, b, t, 8);
            assert_true(n >= 5);
            if (strtol(t[0], NULL, 10) != want)
                fail_msg("show --steps: row '%.*s' where step %ld was expected", (int)(b - a), a, want);
            assert_true(is_hex16(t[3]) && is_hex16(t[4]));   /* param hash, trajectory */
            if (want > 0) {
                /* The loss column is the loss-bits column printed with %.17g,
                 * which round-trips a binary64 exactly. */
                assert_true(is_hex16(t[1]));
                uint64_t bits = strtoull(t[1], NULL, 16), back;
                double loss = strtod(t[2], NULL);
                memcpy(&back, &loss, sizeof back);
                if (back != bits)
                    fail_msg("show --steps step %ld: loss %s is not the bits %s", want, t[2], t[1]);
            }
            want++;
        }
        a = *b ? b + 1 : b;
    }
    if (want != 21)
        fail_msg("show --steps printed %ld step rows, want 21 (steps 0..20)\n%s", want, r.out);
    proc_res_free(&r);
    /* The same, behind the CLI's back. */
    assert_int_equal(steps_of(db, "a"), 21);
    assert_int_equal(steps_of(db, "b"), 21);
}

/* --no-eval: the same steps and trajectory as a run that evaluates at the
 * end, and no row in evals (an oracle behind the CLI's back). */
static void test_no_eval_records_no_evaluation(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    RUN_OK(c, "train", "--task", "teacher", "--steps", "12", "--db", "D", "--name", "e", "--threads", "2");
    RUN_OK(c, "train", "--task", "teacher", "--steps", "12", "--db", "D", "--name", "n", "--threads", "3",
           "--no-eval");
    const char *evals = "SELECT count(*) FROM evals WHERE run = (SELECT id FROM runs WHERE name = ?1)";
    assert_true(sql_int(db, evals, "e") > 0);
    assert_int_equal(sql_int(db, evals, "n"), 0);
    assert_int_equal(steps_of(db, "n"), 13);
    const char *last = "SELECT traj_hash FROM steps WHERE run = (SELECT id FROM runs WHERE name = ?1) "
                       "ORDER BY step DESC LIMIT 1";
    assert_true(sql_int(db, last, "e") == sql_int(db, last, "n"));
    RUN_OK(c, "verify", "e", "n", "--db", "D");
}

static void test_verify_identical_across_threads(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    RUN_OK(c, "train", "--task", "teacher", "--steps", "20", "--db", "D", "--name", "a", "--threads", "1");
    RUN_OK(c, "train", "--task", "teacher", "--steps", "20", "--db", "D", "--name", "b", "--threads", "3");
    proc_res r;
    RUN(&r, c, "verify", "a", "b", "--db", "D");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "bit-identical"));
    proc_res_free(&r);
    /* Ids work as well as names. */
    RUN(&r, c, "verify", "1", "2", "--db", "D");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "bit-identical"));
    proc_res_free(&r);
    /* The stored rows agree: every step's hashes and loss bits are equal. */
    assert_int_equal(sql_int(db,
                             "SELECT count(*) FROM steps x JOIN steps y ON x.step = y.step"
                             " WHERE x.run = 1 AND y.run = 2 AND x.param_hash = y.param_hash"
                             " AND x.traj_hash = y.traj_hash AND x.loss_bits IS y.loss_bits",
                             NULL),
                     21);
    assert_true(sql_int(db, "SELECT count(*) FROM verdicts WHERE equal = 1", NULL) > 0);
}

static void test_equiv(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    proc_res r;
    RUN(&r, c, "equiv", "--task", "teacher", "--steps", "10", "--threads", "1,2,3,8", "--db", "D");
    expect_code(&r, 0);
    /* One table row per thread count: the thread count first, the trajectory
     * hash (16 hex digits) last. */
    static const char *const counts[] = { "1", "2", "3", "8" };
    char hash[4][64];
    int seen[4] = { 0 };
    for (const char *a = r.out; *a;) {
        const char *b = strchr(a, '\n');
        if (b == NULL)
            b = a + strlen(a);
        char t[8][64];
        int n = tokens(a, b, t, 8);
        if (n >= 3 && is_uint(t[0]) && is_hex16(t[n - 1]))
            for (int i = 0; i < 4; i++)
                if (strcmp(t[0], counts[i]) == 0) {
                    seen[i]++;
                    snprintf(hash[i], sizeof hash[i], "%s", t[n - 1]);
                }
        a = *b ? b + 1 : b;
    }
    for (int i = 0; i < 4; i++)
        if (seen[i] != 1)
            fail_msg("equiv: %d rows for %s threads, want 1\n%s", seen[i], counts[i], r.out);
    for (int i = 1; i < 4; i++)
        if (strcmp(hash[i], hash[0]) != 0)
            fail_msg("equiv: trajectory %s at %s threads vs %s at 1\n%s", hash[i], counts[i], hash[0], r.out);
    proc_res_free(&r);

    RUN(&r, c, "runs", "--db", "D");
    expect_code(&r, 0);
    int rows = 0;
    for (const char *a = r.out; *a;) {
        const char *b = strchr(a, '\n');
        if (b == NULL)
            b = a + strlen(a);
        char t[12][64];
        int n = tokens(a, b, t, 12);
        if (n >= 8 && is_uint(t[0])) {
            rows++;
            assert_string_equal(t[2], "done");
            assert_string_equal(t[5], "10");
            /* The trajectory column of every run is the one equiv printed. */
            assert_string_equal(t[7], hash[0]);
        }
        a = *b ? b + 1 : b;
    }
    if (rows != 4)
        fail_msg("runs after equiv lists %d runs, want 4\n%s", rows, r.out);
    proc_res_free(&r);
    assert_int_equal(sql_int(db, "SELECT count(*) FROM runs", NULL), 4);
    assert_int_equal(sql_int(db, "SELECT count(*) FROM steps", NULL), 4 * 11);
    /* The verdict is stored, and it says equal. */
    assert_true(sql_int(db, "SELECT count(*) FROM verdicts", NULL) > 0);
    assert_int_equal(sql_int(db, "SELECT count(*) FROM verdicts WHERE equal = 0", NULL), 0);
}

/* ---- 2. verify on runs that differ ------------------------------------------------ */

static void test_verify_lr_differs(void **state)
{
    proc_ctx *c = *state;
    RUN_OK(c, "train", "--task", "teacher", "--steps", "10", "--db", "D", "--name", "x", "--lr", "0.01", "--threads",
           "1");
    RUN_OK(c, "train", "--task", "teacher", "--steps", "10", "--db", "D", "--name", "y", "--lr", "0.02", "--threads",
           "1");
    /* Same seed: θ_0 and the step-1 loss (computed with θ_0) agree; θ_1 does not. */
    proc_res r;
    RUN(&r, c, "verify", "x", "y", "--db", "D");
    expect_code(&r, 1);
    if (!names_step(r.out, 1))
        fail_msg("verify (lr differs) does not name step 1:\n%s", r.out);
    assert_false(names_step(r.out, 0));
    assert_null(strstr(r.out, "bit-identical"));
    proc_res_free(&r);
}

static void test_verify_seed_differs(void **state)
{
    proc_ctx *c = *state;
    RUN_OK(c, "train", "--task", "teacher", "--steps", "10", "--db", "D", "--name", "x", "--seed", "1", "--threads",
           "1");
    RUN_OK(c, "train", "--task", "teacher", "--steps", "10", "--db", "D", "--name", "y", "--seed", "2", "--threads",
           "2");
    proc_res r;
    RUN(&r, c, "verify", "x", "y", "--db", "D");
    expect_code(&r, 1);
    if (!names_step(r.out, 0))
        fail_msg("verify (seed differs) does not name step 0:\n%s", r.out);
    assert_null(strstr(r.out, "bit-identical"));
    proc_res_free(&r);
}

static void test_verify_lengths_differ(void **state)
{
    proc_ctx *c = *state;
    RUN_OK(c, "train", "--task", "teacher", "--steps", "10", "--db", "D", "--name", "short", "--threads", "2");
    RUN_OK(c, "train", "--task", "teacher", "--steps", "20", "--db", "D", "--name", "long", "--threads", "1");
    proc_res r;
    RUN(&r, c, "verify", "short", "long", "--db", "D");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "bit-identical"));
    /* Some line names both lengths (as steps, 10/20, or as step rows, 11/21). */
    int found = 0;
    for (const char *a = r.out; *a && !found;) {
        const char *b = strchr(a, '\n');
        if (b == NULL)
            b = a + strlen(a);
        found = (line_has_word(a, b, "10") || line_has_word(a, b, "11"))
                && (line_has_word(a, b, "20") || line_has_word(a, b, "21"));
        a = *b ? b + 1 : b;
    }
    if (!found)
        fail_msg("verify of a 10- and a 20-step run does not mention both lengths:\n%s", r.out);
    proc_res_free(&r);
}

/* Several processes may write one database at once (docs/formats.md, the SQLite record): two
 * runs trained side by side are both complete, and equal. */
static void test_concurrent_writers(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    /* The file exists with its schema before the race, as it would in use. */
    RUN_OK(c, "train", "--task", "teacher", "--steps", "1", "--db", "D", "--name", "first", "--threads", "1");
    const char *a1[] = { "train", "--task", "teacher", "--steps", "200", "--db", "D", "--name", "p", "--threads", "1",
                         NULL };
    const char *a2[] = { "train", "--task", "teacher", "--steps", "200", "--db", "D", "--name", "q", "--threads", "2",
                         NULL };
    proc_child p1, p2;
    proc_res r1, r2;
    proc_describe("lockstep", a1, r1.cmd, sizeof r1.cmd);
    proc_describe("lockstep", a2, r2.cmd, sizeof r2.cmd);
    cli_start(&p1, c->dir, NULL, a1);
    cli_start(&p2, c->dir, NULL, a2);
    proc_finish(&p1, &r1, CLI_DEADLINE);
    proc_finish(&p2, &r2, CLI_DEADLINE);
    expect_code(&r1, 0);
    expect_code(&r2, 0);
    proc_res_free(&r1);
    proc_res_free(&r2);
    assert_int_equal(steps_of(db, "p"), 201);
    assert_int_equal(steps_of(db, "q"), 201);
    proc_res r;
    RUN(&r, c, "verify", "p", "q", "--db", "D");
    expect_code(&r, 0);
    proc_res_free(&r);
}

/* A NaN loss stops the run: exit 1, status "diverged", the steps before it
 * kept, and it diverges identically at any thread count. (The config was
 * found by trying: plain SGD at lr 1e6 blows up within a few steps.) */
static void test_diverged(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    static const char *const names[] = { "d1", "d2" }, *const threads[] = { "1", "2" };
    for (int i = 0; i < 2; i++) {
        proc_res r;
        RUN(&r, c, "train", "--task", "teacher", "--steps", "400", "--optimizer", "sgd", "--lr", "1000000",
            "--hidden", "256,256", "--db", "D", "--name", names[i], "--threads", threads[i]);
        expect_code(&r, 1);
        assert_non_null(strstr(r.err, "diverged"));
        proc_res_free(&r);
    }
    proc_res r;
    RUN(&r, c, "runs", "--db", "D");
    expect_code(&r, 0);
    char tok[16][64];
    for (int i = 0; i < 2; i++) {
        if (runs_row(r.out, names[i], tok, 16) < 6 || strcmp(tok[2], "diverged") != 0)
            fail_msg("runs does not show %s as diverged:\n%s", names[i], r.out);
    }
    proc_res_free(&r);
    int64_t n = steps_of(db, "d1");
    assert_true(n > 0 && n < 401);
    assert_int_equal(steps_of(db, "d2"), n);
    RUN(&r, c, "verify", "d1", "d2", "--db", "D");
    expect_code(&r, 0);
    proc_res_free(&r);
}

/* bench runs, prints a row per thread count, and records nothing where the
 * user looks (no runs.db, no leftover temporary database). */
static void test_bench_smoke(void **state)
{
    proc_ctx *c = *state;
    proc_res r;
    RUN(&r, c, "bench", "--task", "teacher", "--threads", "1,2", "--steps", "5", "--reps", "1");
    expect_code(&r, 0);
    int rows[3] = { 0 }, parts[3] = { 0 };
    for (const char *a = r.out; *a;) {
        const char *b = strchr(a, '\n');
        if (b == NULL)
            b = a + strlen(a);
        char t[12][64];
        int n = tokens(a, b, t, 12);
        if (n >= 4 && is_uint(t[0]) && strtol(t[0], NULL, 10) <= 2)
            rows[strtol(t[0], NULL, 10)]++;
        /* "parts T prepare phases leaves finish update hash record", in us */
        if (n == 9 && strcmp(t[0], "parts") == 0 && is_uint(t[1]) && strtol(t[1], NULL, 10) <= 2) {
            int ok = 1;
            for (int i = 2; i < 9; i++)
                ok &= strtod(t[i], NULL) >= 0 && strspn(t[i], "0123456789.") == strlen(t[i]);
            parts[strtol(t[1], NULL, 10)] += ok;
        }
        a = *b ? b + 1 : b;
    }
    if (rows[1] != 1 || rows[2] != 1)
        fail_msg("bench: want one row for 1 and one for 2 threads:\n%s", r.out);
    if (parts[1] != 1 || parts[2] != 1)
        fail_msg("bench: want one 'parts' row of 7 figures for 1 and for 2 threads:\n%s", r.out);
    proc_res_free(&r);
    char p[256];
    proc_tpath(c, "runs.db", p, sizeof p);
    assert_false(file_exists(p));
}

/* ---- 3. help and usage ---------------------------------------------------------------- */

static void test_help_every_subcommand(void **state)
{
    proc_ctx *c = *state;
    static const char *const cmds[] = { "train", "runs", "show", "verify", "equiv", "golden", "bench",
                                        "resume", "export", "render" };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        proc_res r;
        RUN(&r, c, cmds[i], "--help");
        if (r.code != 0 || strstr(r.out, "usage") == NULL)
            fail_msg("lockstep %s --help: exit %d, stdout lacks 'usage'\nstdout: %s\nstderr: %s", cmds[i], r.code,
                     r.out, r.err);
        proc_res_free(&r);
    }
    proc_res r;
    RUN(&r, c, "--help");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "usage"));
    proc_res_free(&r);
    /* Asking for help records nothing: no default runs.db appears. */
    char p[256];
    proc_tpath(c, "runs.db", p, sizeof p);
    assert_false(file_exists(p));
}

/* stdout of `lockstep ARGS` (exit 0), malloc'ed. */
static char *help_of(proc_ctx *c, const char *const *argv)
{
    proc_res r;
    cli_run_env(&r, c, NULL, argv);
    expect_code(&r, 0);
    char *s = strdup(r.out);
    proc_res_free(&r);
    assert_non_null(s);
    return s;
}

/* The help says what the program does: predict's models with scores are
 * exactly the built-in models that have scores (ls_model_desc.scores); the
 * checkpoint file names are the ones written; verify's usage line has its
 * flags; --init's hash is in the config (as `show` prints it); --leaf
 * gives the values it takes. */
static void test_help_texts(void **state)
{
    proc_ctx *c = *state;
    char *h = help_of(c, (const char *const[]){ "predict", "--help", NULL });
    const char *line = strstr(h, "Models with scores: ");
    assert_non_null(line);
    line += strlen("Models with scores: ");
    /* The list before the parenthesis naming those without, as ",name," words. */
    char list[256];
    const size_t n = strcspn(line, "(");
    assert_true(n + 2 < sizeof list);
    size_t k = 0;
    list[k++] = ',';
    for (size_t i = 0; i < n; i++)
        if (line[i] != ' ' && line[i] != '\n')
            list[k++] = line[i];
    list[k++] = ',';
    list[k] = '\0';
    for (size_t i = 0; i < registry_n_builtin_models; i++) {
        const ls_model_desc *d = registry_builtin_models[i];
        char word[80];
        snprintf(word, sizeof word, ",%s,", d->name);
        const int listed = strstr(list, word) != NULL;
        if (listed != (d->scores != NULL))
            fail_msg("predict --help %s model %s, which %s scores: %s", listed ? "lists" : "leaves out", d->name,
                     d->scores != NULL ? "has" : "has no", list);
    }
    free(h);
    h = help_of(c, (const char *const[]){ "help", "--markdown", NULL });   /* its FILES section */
    const char *files = strstr(h, "`DB.ckpt/`");
    assert_non_null(files);
    static const char named[] = "  \\<database id>-run-\\<id>-step-\\<t>.ckpt.";
    assert_true(strncmp(files + strcspn(files, "\n") + 1, named, sizeof named - 1) == 0);
    free(h);
    h = help_of(c, (const char *const[]){ "verify", "--help", NULL });
    static const char usage[] = "usage: lockstep verify RUN_A RUN_B [--db FILE] [--loss-rtol R] [--loss-atol A]\n";
    assert_true(strncmp(h, usage, sizeof usage - 1) == 0);
    free(h);
    h = help_of(c, (const char *const[]){ "train", "--help", NULL });
    const char *init = strstr(h, "\n  --init ");
    assert_non_null(init);
    const size_t il = strcspn(init + 1, "\n");
    if (strstr(init, "XXH3 is init_hash in the config") == NULL || strstr(init, "XXH3 is init_hash in the config") > init + il)
        fail_msg("train --help: --init does not say its hash is in the config:\n%.*s", (int)il, init + 1);
    const char *leaf = strstr(h, "\n  --leaf ");
    assert_non_null(leaf);
    const size_t ll = strcspn(leaf + 1, "\n");
    if (strstr(leaf, "16, 32, 64, ...") == NULL || strstr(leaf, "16, 32, 64, ...") > leaf + ll)
        fail_msg("train --help: --leaf does not give the values it takes:\n%.*s", (int)ll, leaf + 1);
    free(h);
}

static void test_no_args_and_unknown_command(void **state)
{
    proc_ctx *c = *state;
    proc_res r;
    {
        const char *av[] = { NULL };
        cli_run_env(&r, c, NULL, av);
    }
    expect_code(&r, 2);
    proc_res_free(&r);
    RUN(&r, c, "nosuchcmd");
    expect_code(&r, 2);
    assert_int_equal(count_char(r.err, r.err_len, '\n'), 1);
    assert_non_null(strstr(r.err, "nosuchcmd"));
    assert_int_equal(r.out_len, 0);
    proc_res_free(&r);
}

/* ---- 4. bad input ------------------------------------------------------------------------ */

/* The table of bad invocations (exit 2, one line naming the flag, value or
 * file, the record intact) is tests/test_badinput.c, one case per row. */

/* BUG: tools/cmd_train.c cmd_equiv checks run names only inside run_train
 * (runlog_run_begin), one thread count at a time. `equiv --name q --threads 1,2`
 * when "q-t2" already exists trains and records "q-t1" as done, then exits 2
 * ("run name 'q-t2' is already used") — a refused invocation leaves a new run
 * behind (and prints a "done" row on stdout), and the same command can never
 * succeed afterwards because "q-t1" is now taken too. Expected: every name is
 * checked before anything is trained; nothing recorded. */
static void test_equiv_name_clash_records_nothing(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    RUN_OK(c, "train", "--task", "teacher", "--steps", "5", "--db", "D", "--name", "q-t2", "--threads", "1");
    int64_t runs_before = sql_int(db, "SELECT count(*) FROM runs", NULL);
    proc_res r;
    RUN(&r, c, "equiv", "--task", "teacher", "--steps", "5", "--threads", "1,2", "--db", "D", "--name", "q");
    expect_code(&r, 2);
    assert_int_equal(count_char(r.err, r.err_len, '\n'), 1);
    assert_non_null(strstr(r.err, "q-t2"));
    proc_res_free(&r);
    int64_t runs_after = sql_int(db, "SELECT count(*) FROM runs", NULL);
    if (runs_after != runs_before)
        fail_msg("equiv refused (exit 2) but the database went from %lld to %lld runs ('q-t1' recorded: %lld)",
                 (long long)runs_before, (long long)runs_after,
                 (long long)sql_int(db, "SELECT count(*) FROM runs WHERE name = 'q-t1'", NULL));
}

/* ---- 5. Ctrl-C and a killed process --------------------------------------------------- */

/* Waits (up to ~20 s) until the run called `name` has committed step rows
 * past step 0 (which is committed when the run opens): it is stepping. */
static int64_t wait_for_steps(const char *dbpath, const char *name, pid_t pid)
{
    double end = proc_now() + 20.0;
    while (proc_now() < end) {
        int64_t n = steps_of(dbpath, name);
        if (n > 1)
            return n;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            fail_msg("the long run exited (status 0x%x) before recording a step", status);
        usleep(50 * 1000);
    }
    return 0;
}

static const char *const LONG_RUN[] = { "train", "--task", "fashion-mnist", "--hidden", "64", "--steps", "100000",
                                        "--db", "D", "--name", NULL, "--threads", NULL, NULL };

static void start_long(const proc_ctx *c, proc_child *p, const char *name, const char *threads)
{
    const char *av[sizeof LONG_RUN / sizeof LONG_RUN[0]];
    memcpy(av, LONG_RUN, sizeof av);
    av[10] = name;
    av[12] = threads;
    cli_start(p, c->dir, NULL, av);
}

static void test_sigint_marks_interrupted(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    proc_child p;
    start_long(c, &p, "long", "2");
    if (wait_for_steps(db, "long", p.pid) <= 0) {
        kill(p.pid, SIGKILL);
        proc_res r;
        proc_finish(&p, &r, 10);
        fail_msg("no step recorded within 20 s\nstderr: %s", r.err);
    }
    assert_int_equal(kill(p.pid, SIGINT), 0);
    proc_res r;
    proc_finish(&p, &r, 20);
    if (r.timed_out || r.code != 130)
        fail_msg("after SIGINT: exit %d, signal %d, timed out %d; want exit 130\nstderr: %s", r.code, r.sig,
                 r.timed_out, r.err);
    proc_res_free(&r);

    RUN(&r, c, "runs", "--db", "D");
    expect_code(&r, 0);
    char tok[16][64];
    if (runs_row(r.out, "long", tok, 16) < 6 || strcmp(tok[2], "interrupted") != 0)
        fail_msg("runs does not show 'long' as interrupted:\n%s", r.out);
    long last = strtol(tok[5], NULL, 10);
    assert_true(last > 0);
    proc_res_free(&r);
    /* Its steps are kept, all of them: rows 0..last. */
    assert_int_equal(steps_of(db, "long"), last + 1);
    assert_int_equal(sql_int(db, "SELECT max(step) FROM steps WHERE run = (SELECT id FROM runs WHERE name = ?1)",
                             "long"),
                     last);

    /* And they are the steps of the config: a fresh 30-step run agrees bit for bit. */
    RUN_OK(c, "train", "--task", "fashion-mnist", "--hidden", "64", "--steps", "30", "--db", "D", "--name", "ref",
           "--threads", "1");
    RUN(&r, c, "verify", "long", "ref", "--db", "D");
    expect_code(&r, 0);
    proc_res_free(&r);
}

static void test_sigkill_shows_interrupted(void **state)
{
    proc_ctx *c = *state;
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    proc_child p;
    start_long(c, &p, "killed", "1");
    if (wait_for_steps(db, "killed", p.pid) <= 0) {
        kill(p.pid, SIGKILL);
        proc_res r;
        proc_finish(&p, &r, 10);
        fail_msg("no step recorded within 20 s\nstderr: %s", r.err);
    }
    /* While it runs it is "running". */
    proc_res r;
    RUN(&r, c, "runs", "--db", "D");
    expect_code(&r, 0);
    char tok[16][64];
    assert_true(runs_row(r.out, "killed", tok, 16) >= 6);
    assert_string_equal(tok[2], "running");
    proc_res_free(&r);

    assert_int_equal(kill(p.pid, SIGKILL), 0);
    proc_finish(&p, &r, 20);
    assert_int_equal(r.sig, SIGKILL);
    proc_res_free(&r);
    /* Its row still says "running"; liveness must show it as interrupted. */
    tok[2][0] = '\0';
    RUN(&r, c, "runs", "--db", "D");
    expect_code(&r, 0);
    if (runs_row(r.out, "killed", tok, 16) < 6 || strcmp(tok[2], "interrupted") != 0)
        fail_msg("runs shows the killed run as '%s', want interrupted:\n%s", tok[2], r.out);
    assert_null(strstr(r.out, "running"));
    proc_res_free(&r);
    RUN(&r, c, "show", "killed", "--db", "D");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "interrupted"));
    assert_null(strstr(r.out, "running"));
    proc_res_free(&r);
    assert_true(steps_of(db, "killed") > 0);
}

/* ---- 6. golden files ------------------------------------------------------------------- */

static char **env_without_ci(void)
{
    const char *unset[] = { "CI", NULL };
    return proc_make_env(NULL, unset);
}

/* Makes G.golden with `golden update` (CI unset) and returns its text. */
static char *make_golden(const proc_ctx *c, size_t *len)
{
    char **env = env_without_ci();
    proc_res r;
    RUN_ENV(&r, c, env, "golden", "update", "G.golden", "--task", "teacher", "--steps", "5");
    free(env);
    expect_code(&r, 0);
    proc_res_free(&r);
    char p[256];
    proc_tpath(c, "G.golden", p, sizeof p);
    char *text = proc_read_file(p, len, 0);
    assert_non_null(text);
    return text;
}

/* The repository's own golden files match at every thread count `golden check` uses. */
static void test_repo_golden_files(void **state)
{
    proc_ctx *c = *state;
    proc_res r;
    RUN(&r, c, "golden", "check");   /* every golden file under $LOCKSTEP_ROOT */
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "teacher-sgd.golden matches"));
    assert_non_null(strstr(r.out, "teacher-adamw-batch37.golden matches"));
    assert_non_null(strstr(r.out, "fashion-mnist-short.golden matches"));
    proc_res_free(&r);
}

static void test_golden_update_then_check(void **state)
{
    proc_ctx *c = *state;
    size_t len;
    char *text = make_golden(c, &len);
    assert_true(strncmp(text, "# lockstep golden v1\n", 21) == 0);
    assert_non_null(strstr(text, "task=teacher\n"));
    free(text);
    proc_res r;
    RUN(&r, c, "golden", "check", "G.golden");
    expect_code(&r, 0);
    assert_int_equal(r.err_len, 0);
    proc_res_free(&r);
}

/* A golden file of a run from --init weights holds init_hash in its config,
 * as the run's record does: it matches at 1, 2, 3 and 8 threads, and after
 * the weights file changed `golden check` names init_hash and the file and
 * exits 2 (a changed input, not a differing step). `golden update` then
 * reads the file as it is now. */
static void test_golden_init(void **state)
{
    proc_ctx *c = *state;
    RUN_OK(c, "train", "--task", "teacher", "--steps", "3", "--db", "r.db", "--name", "a", "--threads", "1",
           "--no-progress");
    RUN_OK(c, "train", "--task", "teacher", "--steps", "3", "--db", "r.db", "--name", "b", "--seed", "2", "--threads",
           "1", "--no-progress");
    RUN_OK(c, "export", "a", "--db", "r.db", "--weights", "w.safetensors");
    RUN_OK(c, "export", "b", "--db", "r.db", "--weights", "other.safetensors");
    char **env = env_without_ci();
    proc_res r;
    RUN_ENV(&r, c, env, "golden", "update", "I.golden", "--task", "teacher", "--init", "w.safetensors", "--steps", "5");
    expect_code(&r, 0);
    proc_res_free(&r);
    char p[256];
    proc_tpath(c, "I.golden", p, sizeof p);
    size_t len;
    char *text = proc_read_file(p, &len, 0);
    assert_non_null(text);
    if (strstr(text, "\ninit_hash=") == NULL || strstr(text, "\ndata_hash=") == NULL)
        fail_msg("I.golden has no init_hash (or data_hash) in its config:\n%s", text);
    free(text);
    RUN(&r, c, "golden", "check", "I.golden", "--threads", "1,2,3,8");
    expect_code(&r, 0);
    proc_res_free(&r);
    /* Other weights of the same shapes under the same name. */
    char from[256], to[256];
    proc_tpath(c, "other.safetensors", from, sizeof from);
    proc_tpath(c, "w.safetensors", to, sizeof to);
    assert_int_equal(rename(from, to), 0);
    RUN(&r, c, "golden", "check", "I.golden", "--threads", "1");
    expect_code(&r, 2);
    if (strstr(r.err, "init_hash") == NULL || strstr(r.err, "/w.safetensors") == NULL ||
        count_char(r.err, r.err_len, '\n') != 1)
        fail_msg("%s: stderr is not one line naming init_hash and w.safetensors:\n%s", r.cmd, r.err);
    proc_res_free(&r);
    RUN_ENV(&r, c, env, "golden", "update", "I.golden");
    expect_code(&r, 0);
    proc_res_free(&r);
    free(env);
    RUN(&r, c, "golden", "check", "I.golden", "--threads", "1");
    expect_code(&r, 0);
    proc_res_free(&r);
}

/* A golden file that went through a Windows checkout (CRLF line ends)
 * means the same rows: it checks as equal. */
static void test_golden_crlf_matches(void **state)
{
    proc_ctx *c = *state;
    size_t len;
    char *text = make_golden(c, &len);
    char *crlf = NULL;
    size_t n = 0, cap = 0;
    proc_append(&crlf, &n, &cap, "", 0);
    for (size_t i = 0; i < len; i++)
        proc_append(&crlf, &n, &cap, text[i] == '\n' ? "\r\n" : text + i, text[i] == '\n' ? 2 : 1);
    char p[256];
    proc_tpath(c, "W.golden", p, sizeof p);
    write_file(p, crlf);
    proc_res r;
    RUN(&r, c, "golden", "check", "W.golden");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "W.golden matches"));
    assert_int_equal(r.err_len, 0);
    proc_res_free(&r);
    free(crlf);
    free(text);
}

/* golden handles SIGINT like train: it stops between steps, exits 130 with
 * one line naming the file, and writes nothing. */
static void test_golden_sigint(void **state)
{
    proc_ctx *c = *state;
    char **env = env_without_ci();
    const char *av[] = { "golden", "update", "L.golden", "--task", "fashion-mnist", "--hidden", "64", "--steps",
                         "10000", NULL };
    proc_child p;
    proc_start_bin(&p, c->dir, env, NULL, g_bin, av);
    free(env);
    struct timespec ts = { 1, 500000000 };   /* past the data load, well before 10000 steps */
    nanosleep(&ts, NULL);
    assert_int_equal(kill(p.pid, SIGINT), 0);
    proc_res r;
    proc_finish(&p, &r, 60);
    if (r.timed_out || r.code != 130 || count_char(r.err, r.err_len, '\n') != 1 || strstr(r.err, "L.golden") == NULL)
        fail_msg("after SIGINT: exit %d, signal %d, timed out %d; want exit 130 and one line naming L.golden\n"
                 "stderr: %s", r.code, r.sig, r.timed_out, r.err);
    proc_res_free(&r);
    char path[256];
    proc_tpath(c, "L.golden", path, sizeof path);
    struct stat sb;
    assert_int_not_equal(stat(path, &sb), 0);
}

/* "--" ends the flags in every subcommand: a run named like a flag is
 * shown, verified and resumed by name. (New runs may not be named so; a
 * record made before that rule may hold one, renamed here behind the
 * binary's back.) */
static void test_double_dash(void **state)
{
    proc_ctx *c = *state;
    RUN_OK(c, "train", "--task", "teacher", "--steps", "5", "--db", "D", "--name", "odd", "--threads", "1");
    char db[256];
    proc_tpath(c, "D", db, sizeof db);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE runs SET name = '-odd' WHERE name = 'odd'", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    proc_res r;
    RUN(&r, c, "show", "--db", "D", "--", "-odd");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "'-odd'"));
    proc_res_free(&r);
    RUN(&r, c, "show", "--db", "D", "--steps", "--", "-odd");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "param hash"));
    proc_res_free(&r);
    RUN(&r, c, "verify", "--db", "D", "--", "-odd", "-odd");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "bit-identical"));
    proc_res_free(&r);
    RUN(&r, c, "resume", "--db", "D", "--threads", "1", "--", "-odd");
    expect_code(&r, 0);
    assert_non_null(strstr(r.out, "nothing to do"));
    proc_res_free(&r);
    /* Without "--" the name reads as an unknown flag. */
    RUN(&r, c, "show", "--db", "D", "-odd");
    expect_code(&r, 2);
    proc_res_free(&r);
}

static void test_golden_tampered_row(void **state)
{
    proc_ctx *c = *state;
    size_t len;
    char *text = make_golden(c, &len);
    /* Find the row of step 3 (a line whose first token is "3" and that has
     * five tokens) and change the first hex digit of its param hash. */
    int lineno = 0, target = 0;
    char orig[64] = "", mod[64] = "";
    for (char *a = text; *a;) {
        char *b = strchr(a, '\n');
        if (b == NULL)
            b = a + strlen(a);
        lineno++;
        char t[8][64];
        if (*a != '#' && tokens(a, b, t, 8) == 5 && strcmp(t[0], "3") == 0 && is_hex16(t[3])) {
            char *h = strstr(a, t[3]);
            assert_true(h != NULL && h < b);
            snprintf(orig, sizeof orig, "%s", t[3]);
            *h = *h == '0' ? '1' : '0';
            memcpy(mod, h, 16);
            mod[16] = '\0';
            target = lineno;
            break;
        }
        a = *b ? b + 1 : b;
    }
    if (target == 0)
        fail_msg("no step-3 row in the golden file:\n%s", text);
    char p[256];
    proc_tpath(c, "G.golden", p, sizeof p);
    write_file(p, text);
    free(text);

    proc_res r;
    RUN(&r, c, "golden", "check", "G.golden");
    expect_code(&r, 1);
    char where[64];
    snprintf(where, sizeof where, "G.golden:%d", target);
    const char *at = strstr(r.out, where);
    if (at == NULL || isdigit((unsigned char)at[strlen(where)]))
        fail_msg("golden check does not name line %d:\n%s", target, r.out);
    const char *exp = strstr(r.out, "expected"), *got = strstr(r.out, "got");
    if (exp == NULL || got == NULL)
        fail_msg("golden check shows no expected/got:\n%s", r.out);
    /* expected shows the file's (tampered) hash, got the recomputed one. */
    const char *exp_end = strchr(exp, '\n'), *got_end = strchr(got, '\n');
    assert_non_null(exp_end);
    assert_non_null(got_end);
    const char *m = strstr(exp, mod), *o = strstr(got, orig);
    if (m == NULL || m > exp_end || o == NULL || o > got_end)
        fail_msg("expected/got lines do not show %s / %s:\n%s", mod, orig, r.out);
    proc_res_free(&r);
}

static void test_golden_garbage_and_ci(void **state)
{
    proc_ctx *c = *state;
    size_t len;
    char *text = make_golden(c, &len);
    char p[256];
    proc_tpath(c, "junk.golden", p, sizeof p);
    write_file(p, "hello\n");
    proc_res r;
    RUN(&r, c, "golden", "check", "junk.golden");
    expect_code(&r, 2);
    assert_int_equal(count_char(r.err, r.err_len, '\n'), 1);
    assert_non_null(strstr(r.err, "junk.golden"));
    proc_res_free(&r);

    /* update refuses under CI, and leaves the file alone. */
    const char *set[] = { "CI=1", NULL };
    char **env = proc_make_env(set, NULL);
    RUN_ENV(&r, c, env, "golden", "update", "G.golden");
    expect_code(&r, 2);
    assert_int_equal(count_char(r.err, r.err_len, '\n'), 1);
    assert_non_null(strstr(r.err, "CI"));
    proc_res_free(&r);
    RUN_ENV(&r, c, env, "golden", "update", "new.golden", "--task", "teacher", "--steps", "5");
    expect_code(&r, 2);
    proc_res_free(&r);
    free(env);
    proc_tpath(c, "G.golden", p, sizeof p);
    size_t len2;
    char *again = proc_read_file(p, &len2, 0);
    assert_non_null(again);
    assert_int_equal(len2, len);
    assert_memory_equal(again, text, len);
    proc_tpath(c, "new.golden", p, sizeof p);
    assert_false(file_exists(p));
    free(again);
    free(text);
}

/* ---- 7. no progress line when output is not a terminal ---------------------------------- */

static void test_no_progress_when_piped(void **state)
{
    proc_ctx *c = *state;
    proc_res r;
    RUN(&r, c, "train", "--task", "teacher", "--steps", "50", "--db", "D", "--name", "quiet", "--threads", "2");
    expect_code(&r, 0);
    if (r.err_len != 0)
        fail_msg("train with stderr on a pipe wrote to stderr: '%s'", r.err);
    assert_null(memchr(r.out, '\r', r.out_len));
    assert_non_null(strstr(r.out, "train:"));
    proc_res_free(&r);
    RUN(&r, c, "equiv", "--task", "teacher", "--steps", "10", "--threads", "1,2", "--db", "D");
    expect_code(&r, 0);
    assert_int_equal(r.err_len, 0);
    assert_null(memchr(r.out, '\r', r.out_len));
    proc_res_free(&r);
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(void)
{
    if (proc_find_bin(g_bin, "test_cli", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_train_runs_show, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_no_eval_records_no_evaluation, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_verify_identical_across_threads, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_equiv, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_verify_lr_differs, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_verify_seed_differs, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_verify_lengths_differ, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_diverged, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_bench_smoke, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_help_every_subcommand, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_help_texts, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_no_args_and_unknown_command, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_equiv_name_clash_records_nothing, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_sigint_marks_interrupted, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_sigkill_shows_interrupted, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_repo_golden_files, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_golden_update_then_check, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_golden_crlf_matches, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_golden_init, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_golden_sigint, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_double_dash, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_golden_tampered_row, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_golden_garbage_and_ci, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_no_progress_when_piped, setup_dir, proc_ctx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
