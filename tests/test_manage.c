/* test_manage.c — end-to-end tests of moving runs and listing them for
 * scripts (tools/cmd_manage.c, tools/cmd_record.c; runlog_import,
 * runlog_run_delete, runlog_run_rename in record/runlog.c).
 *
 * Each case runs the real binary (LOCKSTEP_BIN, else build/lockstep) in a
 * fresh temporary directory: the same config trained into two databases
 * (two "machines") verifies bit-identical across them and, after `import`,
 * inside one; an imported run keeps its rows (compared with the raw sqlite3
 * API against the original database, row for row) and is audited there; a
 * name clash is refused with nothing copied; `rm` deletes the rows and the
 * checkpoint files its database wrote, never an imported run's; `rename`
 * refuses a taken name; `runs` filters, `--json`, `--csv` and `show --json`
 * / `--steps --csv` carry the documented column names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/proc_util.h"

static char g_bin[PATH_MAX];

#define DEADLINE 120.0

static int setup_dir(void **state)
{
    return proc_ctx_setup(state, "/tmp/lockstep-manage-XXXXXX");
}

static void run_argv(proc_res *r, const proc_ctx *c, const char *const *argv)
{
    proc_run_checked(r, c->dir, g_bin, argv, DEADLINE);
}

static void expect_run(const proc_res *r, int code, const char *want)
{
    proc_expect(r, code, want, 1);
}

#define EXPECT(c, code, want, ...)                        \
    do {                                                  \
        const char *av_[] = { __VA_ARGS__, NULL };        \
        proc_res r_;                                      \
        run_argv(&r_, (c), av_);                          \
        expect_run(&r_, (code), (want));                  \
        proc_res_free(&r_);                               \
    } while (0)

/* stdout of a command that must exit 0 (malloc'ed). */
static char *output_of(const proc_ctx *c, const char *const *argv)
{
    proc_res r;
    run_argv(&r, c, argv);
    expect_run(&r, 0, NULL);
    char *s = strdup(r.out);
    proc_res_free(&r);
    return s;
}

static sqlite3 *db_open(const proc_ctx *c, const char *name)
{
    char path[PATH_MAX];
    proc_tpath(c, name, path, sizeof path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static long long db_int(const proc_ctx *c, const char *name, const char *sql)
{
    sqlite3 *db = db_open(c, name);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* Every row of a query, one line each, "|" between columns (malloc'ed). */
static char *db_dump(const proc_ctx *c, const char *name, const char *sql)
{
    sqlite3 *db = db_open(c, name);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *t = (const char *)sqlite3_column_text(st, i);
            proc_append(&buf, &len, &cap, i ? "|" : "", i ? 1 : 0);
            proc_append(&buf, &len, &cap, t != NULL ? t : "NULL", strlen(t != NULL ? t : "NULL"));
        }
        proc_append(&buf, &len, &cap, "\n", 1);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (buf == NULL)
        buf = strdup("");
    return buf;
}

static int count_files(const proc_ctx *c, const char *dir)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "ls '%s/%s' 2>/dev/null | wc -l", c->dir, dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

static void train_into(const proc_ctx *c, const char *db, const char *name, const char *threads, const char *lr)
{
    EXPECT(c, 0, "30 steps", "train", "--task", "teacher", "--steps", "30", "--checkpoint-every", "10", "--db", db,
           "--name", name, "--threads", threads, "--lr", lr, "--eval-every", "10", "--no-progress");
}

/* Two machines: one config trained into two databases at different thread
 * counts is bit-identical across them (verify A.db:RUN B.db:RUN, when the
 * build has it, is the report's; here the raw rows) and, imported, inside one. */
static void test_import_verify(void **state)
{
    const proc_ctx *c = *state;
    train_into(c, "a.db", "m1", "1", "0.01");
    train_into(c, "a.db", "m1-lr", "1", "0.02");
    EXPECT(c, 0, "proved", "audit", "m1", "--db", "a.db", "--threads", "2");
    train_into(c, "b.db", "m2", "3", "0.01");
    char *ra = db_dump(c, "a.db", "SELECT step, loss_bits, param_hash, traj_hash FROM steps WHERE run = 1 ORDER BY step");
    char *rb = db_dump(c, "b.db", "SELECT step, loss_bits, param_hash, traj_hash FROM steps WHERE run = 1 ORDER BY step");
    assert_string_equal(ra, rb);
    EXPECT(c, 0, "run 1 'm1' of a.db is run 2 in b.db", "import", "a.db", "m1", "--db", "b.db");
    EXPECT(c, 0, "bit-identical over steps 0..30", "verify", "m1", "m2", "--db", "b.db");
    /* The imported rows are the original's, row for row. */
    char *rc = db_dump(c, "b.db", "SELECT step, loss_bits, param_hash, traj_hash FROM steps WHERE run = 2 ORDER BY step");
    assert_string_equal(ra, rc);
    free(rb);
    free(rc);
    static const struct { const char *select, *order; } same[] = {
        { "SELECT name, config_text, config_hash, status, started, ended, host, threads FROM runs WHERE id = ", "" },
        { "SELECT step, name, value FROM evals WHERE run = ", " ORDER BY step, name" },
        { "SELECT step, path, state_hash FROM checkpoints WHERE run = ", " ORDER BY step" },
        { "SELECT mode, steps, verdict, first_bad_step, detail, build FROM audits WHERE run = ", " ORDER BY id" },
        { "SELECT key, value FROM run_settings WHERE run = ", " ORDER BY key" },
        { "SELECT started, threads, build, first_step, last_step FROM run_processes WHERE run = ", " ORDER BY rowid" },
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        char qa[256], qb[256];
        snprintf(qa, sizeof qa, "%s1%s", same[i].select, same[i].order);
        snprintf(qb, sizeof qb, "%s2%s", same[i].select, same[i].order);
        char *x = db_dump(c, "a.db", qa), *y = db_dump(c, "b.db", qb);
        if (strcmp(x, y) != 0 || x[0] == '\0')
            fail_msg("%s: a.db run 1 and b.db run 2 differ (or are empty):\n%s---\n%s", qa, x, y);
        free(x);
        free(y);
    }
    free(ra);
    /* Imported runs are audited here: their checkpoints load, never deleted. */
    EXPECT(c, 0, "proved", "audit", "m1", "--db", "b.db", "--threads", "2");
    EXPECT(c, 0, "proved", "audit", "m1", "--db", "b.db", "--record-only");
    /* A clash: exit 2, one line, nothing copied. */
    EXPECT(c, 2, "already has a run of that name", "import", "a.db", "--db", "b.db");
    assert_int_equal(db_int(c, "b.db", "SELECT count(*) FROM runs"), 2);
    EXPECT(c, 2, "no run 'nope'", "import", "a.db", "nope", "--db", "b.db");
    EXPECT(c, 2, "no such database", "import", "missing.db", "--db", "b.db");
    EXPECT(c, 2, "needs the database", "import", "--db", "b.db");
    /* The other run, by id; the verdict between runs both imported comes along. */
    EXPECT(c, 1, NULL, "verify", "m1", "m1-lr", "--db", "a.db");
    EXPECT(c, 0, "is run 1 in c.db", "import", "a.db", "--db", "c.db");
    assert_int_equal(db_int(c, "c.db", "SELECT count(*) FROM runs"), 2);
    assert_int_equal(db_int(c, "c.db", "SELECT count(*) FROM verdicts WHERE run_a IN (1, 2) AND run_b IN (1, 2)"),
                     db_int(c, "a.db", "SELECT count(*) FROM verdicts"));
    EXPECT(c, 1, "differ", "verify", "m1", "m1-lr", "--db", "c.db");
}

/* Configs that differ in text but train the same steps (a step schedule of
 * gamma 1 against a constant one): every step's loss and parameter hash are
 * equal, so verify says equal (exit 0), but the trajectory hashes (which
 * cover the config) differ, and the line gives both and says why, in one
 * database and across two. Runs at 1 and 3 threads. */
static void test_verify_other_trajectory(void **state)
{
    const proc_ctx *c = *state;
    EXPECT(c, 0, "30 steps", "train", "--task", "teacher", "--steps", "30", "--db", "a.db", "--name", "const",
           "--threads", "1", "--no-progress");
    EXPECT(c, 0, "30 steps", "train", "--task", "teacher", "--steps", "30", "--db", "a.db", "--name", "step1",
           "--threads", "3", "--lr-schedule", "step", "--lr-gamma", "1", "--no-progress");
    char *ta = db_dump(c, "a.db", "SELECT traj_hash FROM steps_hex WHERE run_name = 'const' AND step = 30");
    char *tb = db_dump(c, "a.db", "SELECT traj_hash FROM steps_hex WHERE run_name = 'step1' AND step = 30");
    assert_int_equal(strlen(ta), 17);
    ta[16] = tb[16] = '\0';
    assert_string_not_equal(ta, tb);
    char want[160];
    snprintf(want, sizeof want, "are bit-identical over steps 0..30 (trajectories %s and %s: the configs differ)", ta,
             tb);
    EXPECT(c, 0, want, "verify", "const", "step1", "--db", "a.db");
    EXPECT(c, 0, "is run 1 in b.db", "import", "a.db", "step1", "--db", "b.db");
    EXPECT(c, 0, want, "verify", "a.db:const", "b.db:step1");
    free(ta);
    free(tb);
}

/* rm: the rows and this database's checkpoint files; an imported run's
 * files stay (they are the other database's). rename: a taken name refused. */
static void test_rm_rename(void **state)
{
    const proc_ctx *c = *state;
    train_into(c, "a.db", "x", "2", "0.01");
    train_into(c, "a.db", "y", "2", "0.01");
    train_into(c, "b.db", "z", "2", "0.01");
    EXPECT(c, 0, "proved", "audit", "x", "--db", "a.db", "--record-only");
    EXPECT(c, 0, NULL, "verify", "x", "y", "--db", "a.db");
    assert_int_equal(count_files(c, "a.db.ckpt"), 4);
    EXPECT(c, 0, "is run 3", "import", "b.db", "--db", "a.db");
    EXPECT(c, 2, "is taken by run 2", "rename", "x", "y", "--db", "a.db");
    EXPECT(c, 2, "all digits", "rename", "x", "42", "--db", "a.db");
    EXPECT(c, 2, "no run 'w'", "rename", "w", "v", "--db", "a.db");
    EXPECT(c, 0, "run 1 'x' is now 'x2'", "rename", "x", "x2", "--db", "a.db");
    EXPECT(c, 0, "proved", "audit", "x2", "--db", "a.db", "--threads", "2");
    EXPECT(c, 0, "2 checkpoint files deleted", "rm", "x2", "--db", "a.db");
    assert_int_equal(count_files(c, "a.db.ckpt"), 2);
    assert_int_equal(db_int(c, "a.db", "SELECT count(*) FROM runs WHERE id = 1"), 0);
    static const char *const tables[] = { "steps", "evals", "checkpoints", "run_processes", "run_settings",
                                          "audits" };
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char q[128];
        snprintf(q, sizeof q, "SELECT count(*) FROM %s WHERE run = 1", tables[i]);
        assert_int_equal(db_int(c, "a.db", q), 0);
    }
    assert_int_equal(db_int(c, "a.db", "SELECT count(*) FROM verdicts WHERE run_a = 1 OR run_b = 1"), 0);
    EXPECT(c, 0, "0 checkpoint files deleted, 2 kept", "rm", "z", "--db", "a.db");
    assert_int_equal(count_files(c, "b.db.ckpt"), 2);
    EXPECT(c, 0, "proved", "audit", "z", "--db", "b.db", "--threads", "2");
    EXPECT(c, 2, "no run 'x2'", "rm", "x2", "--db", "a.db");
    EXPECT(c, 2, "needs one RUN", "rm", "--db", "a.db");
    EXPECT(c, 0, "y ", "runs", "--db", "a.db");
}

/* runs filters and formats; show --json and --steps --csv. */
static void test_listings(void **state)
{
    const proc_ctx *c = *state;
    train_into(c, "a.db", "lr-1", "1", "0.01");
    train_into(c, "a.db", "lr-2", "2", "0.02");
    EXPECT(c, 0, "3 steps", "train", "--task", "gol", "--steps", "3", "--db", "a.db", "--name", "g,1",
           "--no-progress");
    const char *const csv[] = { "runs", "--db", "a.db", "--csv", NULL };
    char *s = output_of(c, csv);
    assert_true(strncmp(s, "id,name,status,model,task,steps,threads,trajectory,config_hash,started,ended,host\n",
                        82) == 0);
    assert_non_null(strstr(s, "\n3,\"g,1\",done,"));
    free(s);
    const char *const name[] = { "runs", "--db", "a.db", "--name", "lr-*", "--csv", NULL };
    s = output_of(c, name);
    assert_non_null(strstr(s, "\n1,lr-1,"));
    assert_non_null(strstr(s, "\n2,lr-2,"));
    assert_null(strstr(s, "g,1"));
    free(s);
    const char *const last[] = { "runs", "--db", "a.db", "--task", "teacher", "--last", "1", "--json", NULL };
    s = output_of(c, last);
    assert_non_null(strstr(s, "\"name\": \"lr-2\""));
    assert_null(strstr(s, "lr-1"));
    assert_non_null(strstr(s, "\"trajectory\": \""));
    assert_int_equal(s[0], '[');
    free(s);
    const char *const none[] = { "runs", "--db", "a.db", "--status", "failed", "--json", NULL };
    s = output_of(c, none);
    assert_string_equal(s, "[]\n");
    free(s);
    const char *const js[] = { "show", "lr-1", "--db", "a.db", "--json", "--steps", NULL };
    s = output_of(c, js);
    static const char *const keys[] = { "\"id\": 1", "\"config\": \"", "\"evaluations\": [", "\"test_acc\"",
                                        "\"audits\": [", "\"processes\": [", "\"step_rows\": [",
                                        "{\"step\": 0, \"loss\": null, \"loss_bits\": null, \"param_hash\": \"" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strstr(s, keys[i]) == NULL)
            fail_msg("show --json lacks %s:\n%s", keys[i], s);
    free(s);
    const char *const sc[] = { "show", "lr-1", "--db", "a.db", "--steps", "--csv", NULL };
    s = output_of(c, sc);
    assert_true(strncmp(s, "step,loss,loss_bits,param_hash,trajectory,seconds\n0,,,", 54) == 0);
    int lines = 0;
    for (const char *p = s; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 32);
    /* The loss column reads back to the recorded bits. */
    char *row3 = strstr(s, "\n3,");
    assert_non_null(row3);
    double loss = strtod(row3 + 3, NULL);
    uint64_t bits;
    memcpy(&bits, &loss, sizeof bits);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)bits);
    assert_non_null(strstr(row3, hex));
    free(s);
    EXPECT(c, 2, "--status", "runs", "--db", "a.db", "--status", "nope");
    EXPECT(c, 2, "--last", "runs", "--db", "a.db", "--last", "0");
    EXPECT(c, 2, "--json and --csv", "runs", "--db", "a.db", "--json", "--csv");
    EXPECT(c, 2, "--csv: only with --steps", "show", "lr-1", "--db", "a.db", "--csv");
}

/* Writes s to dir/name. */
static void put_file(const proc_ctx *c, const char *name, const char *s)
{
    char path[PATH_MAX];
    proc_tpath(c, name, path, sizeof path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(s, f);
    assert_int_equal(fclose(f), 0);
}

/* 0 when python3 reads dir/name with `code` (the file is sys.argv[1]). */
static int python_reads(const proc_ctx *c, const char *name, const char *code)
{
    char cmd[PATH_MAX + 1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && python3 -c '%s' '%s'", c->dir, code, name);
    return system(cmd);
}

/* An older database may hold a name and a source path with a newline, a
 * quote, a tab, an escape and a byte that is not UTF-8. Every JSON output
 * (runs --json, show --json, an audit certificate) is read by a strict JSON
 * reader, CSV by a CSV reader that decodes UTF-8 strictly, and the plain
 * listing stays one line a run with no control character in it. */
static void test_strict_outputs(void **state)
{
    const proc_ctx *c = *state;
    EXPECT(c, 0, "20 steps", "train", "--task", "teacher", "--steps", "20", "--checkpoint-every", "10", "--db",
           "a.db", "--name", "t", "--threads", "1", "--no-progress");
    sqlite3 *db = db_open(c, "a.db");
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS run_sources(run INTEGER PRIMARY KEY REFERENCES "
                                      "runs(id), text TEXT NOT NULL) STRICT;"
                                      "INSERT INTO run_sources(run, text) VALUES(1, 'train_x=/d/a\"b' || char(9) || "
                                      "'c' || char(10) || 'train_y=/d/' || CAST(x'ff' AS TEXT) || char(27) || '.npy')",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    /* The source path comes along with an import; the name is made bad afterwards, as an older record holds it. */
    EXPECT(c, 0, "is run 1 in b.db", "import", "a.db", "--db", "b.db");
    db = db_open(c, "b.db");
    assert_int_equal(sqlite3_exec(db, "UPDATE runs SET name = 'n\"q' || char(9) || 'x' || char(10) || '2     forged'"
                                      " || CAST(x'ff' AS TEXT) || char(27) || '[31m' WHERE id = 1", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    static const char *const json_cmds[][8] = {
        { "runs", "--db", "b.db", "--json", NULL },
        { "show", "1", "--db", "b.db", "--json", NULL },
        { "show", "1", "--db", "b.db", "--json", "--steps", NULL },
    };
    const int have_python = system("python3 -c 1 >/dev/null 2>&1") == 0;
    if (!have_python)
        print_message("python3 not found: the outputs are checked for raw bytes only\n");
    for (size_t i = 0; i < sizeof json_cmds / sizeof json_cmds[0]; i++) {
        char *out = output_of(c, json_cmds[i]);
        assert_null(strchr(out, '\x1b'));
        assert_null(strstr(out, "\xff"));
        put_file(c, "out.json", out);
        if (have_python && python_reads(c, "out.json", "import json,sys; d=json.loads(open(sys.argv[1],\"rb\").read()"
                                        ".decode(\"utf-8\")); d=d[0] if isinstance(d,list) else d; "
                                        "assert d[\"name\"].startswith(\"n\\\"q\\tx\\n2\"), d[\"name\"]; "
                                        "assert all(type(t) is int for t in d[\"threads\"]), d[\"threads\"]") != 0)
            fail_msg("a strict JSON reader refuses `lockstep %s %s %s %s`:\n%s", json_cmds[i][0], json_cmds[i][1],
                     json_cmds[i][2], json_cmds[i][3], out);
        free(out);
    }
    /* The sources, in show --json and the certificate. */
    const char *const cert[] = { "audit", "1", "--db", "b.db", "--record-only", "--certificate", "c.json", NULL };
    proc_res r;
    run_argv(&r, c, cert);
    expect_run(&r, 0, "proved");
    proc_res_free(&r);
    if (have_python &&
        python_reads(c, "c.json", "import json,sys; d=json.loads(open(sys.argv[1],\"rb\").read().decode(\"utf-8\"));"
                     " assert \"\\ufffd\" in d[\"sources\"] and \"\\t\" in d[\"sources\"]") != 0)
        fail_msg("a strict JSON reader refuses the certificate");
    const char *const csv[] = { "runs", "--db", "b.db", "--csv", NULL };
    char *out = output_of(c, csv);
    put_file(c, "out.csv", out);
    if (have_python && python_reads(c, "out.csv", "import csv,io,sys; t=open(sys.argv[1],\"rb\").read().decode("
                                    "\"utf-8\"); rows=list(csv.reader(io.StringIO(t, newline=\"\"))); "
                                    "assert len(rows) == 2 and rows[1][1].startswith(\"n\\\"q\\tx\\n2\"), rows") != 0)
        fail_msg("a CSV reader refuses `lockstep runs --csv`:\n%s", out);
    free(out);
    /* The listing: a header and one line, the name escaped (no forged second row). */
    const char *const plain[] = { "runs", "--db", "b.db", NULL };
    out = output_of(c, plain);
    int lines = 0;
    for (const char *p = out; *p; p++) {
        lines += *p == '\n';
        if ((unsigned char)*p < 0x20 && *p != '\n')
            fail_msg("`lockstep runs` prints control character 0x%02x:\n%s", (unsigned char)*p, out);
    }
    assert_int_equal(lines, 2);
    assert_non_null(strstr(out, "n\"q\\x09x\\x0a2     forged\\xff\\x1b[31m"));
    free(out);
    const char *const show[] = { "show", "1", "--db", "b.db", NULL };
    out = output_of(c, show);
    assert_null(strchr(out, '\x1b'));
    assert_null(strstr(out, "\xff"));
    assert_non_null(strstr(out, "run 1 'n\"q\\x09x\\x0a2     forged\\xff\\x1b[31m': done"));
    assert_non_null(strstr(out, "  train_x=/d/a\"b\\x09c\n  train_y=/d/\\xff\\x1b.npy\n"));
    /* data_hash: decimal in the config text (its hash is frozen), the hex every other output uses beside it. */
    const char *dh = strstr(out, "  data_hash=");
    assert_non_null(dh);
    unsigned long long dec = 0, hex = 0;
    if (sscanf(dh, "  data_hash=%llu  (%16llx)", &dec, &hex) != 2 || dec != hex || dec == 0)
        fail_msg("show: the data_hash line is not decimal with its hex beside it:\n%.80s", dh);
    free(out);
}

/* A full disk (SQLite's max_page_count, set through the test-only
 * LOCKSTEP_TEST_MAX_PAGES on every writer's open): the sweep's summary says
 * what the record holds of each run, and the messages say "disk full". */
static void test_disk_full(void **state)
{
    const proc_ctx *c = *state;
    EXPECT(c, 0, "5 steps", "train", "--task", "teacher", "--steps", "5", "--checkpoint-every", "5", "--db", "s.db",
           "--name", "first", "--threads", "1", "--no-progress");
    char cap[32];
    snprintf(cap, sizeof cap, "%lld", db_int(c, "s.db", "PRAGMA page_count") + 4);
    assert_int_equal(setenv("LOCKSTEP_TEST_MAX_PAGES", cap, 1), 0);
    const char *const sweep[] = { "sweep", "--task", "teacher", "--steps", "2000", "--lr", "0.01,0.02", "--db", "s.db",
                                  "--name", "full", "--threads", "2", "--no-progress", NULL };
    proc_res r;
    run_argv(&r, c, sweep);
    unsetenv("LOCKSTEP_TEST_MAX_PAGES");
    if (r.code == 0 || strstr(r.err, "disk full") == NULL)
        fail_msg("sweep on a full disk: exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    assert_null(strstr(r.err, "I/O error"));
    /* Each run's row against the record. */
    for (long long id = 2; id <= 3; id++) {
        char want[64], sql[128];
        snprintf(want, sizeof want, "\nfull-lr0.0%lld ", id - 1);
        const char *row = strstr(r.out, want);
        if (row == NULL)
            fail_msg("no row for run %lld:\n%s", id, r.out);
        long long run = -1, steps = -1;
        char status[32] = "";
        if (sscanf(row + 1, "%*s %lld %31s %lld", &run, status, &steps) != 3)
            fail_msg("unreadable row: %s", row + 1);
        assert_int_equal(run, id);
        snprintf(sql, sizeof sql, "SELECT max(step) FROM steps WHERE run = %lld", id);
        const long long held = db_int(c, "s.db", sql);
        if (steps != held || held >= 2000 || strcmp(status, "interrupted") != 0)
            fail_msg("run %lld: the summary says %s at step %lld, the record holds steps 0..%lld\n%s", id, status,
                     steps, held, r.out);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM steps WHERE run = %lld", id);
        assert_int_equal(db_int(c, "s.db", sql), held + 1);
    }
    assert_non_null(strstr(r.out, "2 runs, 0 done, 0 failed, 2 interrupted"));
    assert_non_null(strstr(r.err, "the record holds steps 0.."));
    proc_res_free(&r);
    /* An audit that cannot store its verdict. */
    snprintf(cap, sizeof cap, "%lld", db_int(c, "s.db", "PRAGMA page_count"));
    assert_int_equal(setenv("LOCKSTEP_TEST_MAX_PAGES", cap, 1), 0);
    const char *const audit[] = { "audit", "first", "--db", "s.db", "--threads", "1", NULL };
    run_argv(&r, c, audit);
    unsetenv("LOCKSTEP_TEST_MAX_PAGES");
    if (r.code != 2 || strstr(r.err, "disk full") == NULL || strstr(r.err, "I/O error") != NULL)
        fail_msg("audit on a full disk: exit %d\nstderr: %s", r.code, r.err);
    proc_res_free(&r);
}

/* --keep-checkpoints: the run keeps that many of its newest checkpoints,
 * and a resume goes on with the count recorded with the run. */
static void test_keep_checkpoints(void **state)
{
    const proc_ctx *c = *state;
    EXPECT(c, 0, "the last 3 kept", "train", "--task", "teacher", "--steps", "20", "--checkpoint-every", "5",
           "--keep-checkpoints", "3", "--db", "a.db", "--name", "k", "--no-progress");
    assert_int_equal(db_int(c, "a.db", "SELECT count(*) FROM checkpoints WHERE run = 1"), 3);
    assert_int_equal(db_int(c, "a.db", "SELECT min(step) FROM checkpoints WHERE run = 1"), 10);
    assert_int_equal(count_files(c, "a.db.ckpt"), 3);
    EXPECT(c, 0, NULL, "resume", "k", "--db", "a.db", "--steps", "40", "--no-progress");
    assert_int_equal(db_int(c, "a.db", "SELECT count(*) FROM checkpoints WHERE run = 1"), 3);
    assert_int_equal(db_int(c, "a.db", "SELECT min(step) FROM checkpoints WHERE run = 1"), 30);
    assert_int_equal(count_files(c, "a.db.ckpt"), 3);
    EXPECT(c, 0, "all kept", "train", "--task", "teacher", "--steps", "20", "--checkpoint-every", "5",
           "--keep-checkpoints", "all", "--db", "a.db", "--name", "all", "--no-progress");
    assert_int_equal(db_int(c, "a.db", "SELECT count(*) FROM checkpoints WHERE run = 2"), 4);
    EXPECT(c, 0, "(4 segments)", "audit", "all", "--db", "a.db", "--threads", "2");
    EXPECT(c, 0, "the last 2 kept", "train", "--task", "teacher", "--steps", "20", "--checkpoint-every", "5",
           "--db", "a.db", "--name", "two", "--no-progress");
    assert_int_equal(db_int(c, "a.db", "SELECT count(*) FROM checkpoints WHERE run = 3"), 2);
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_manage", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_import_verify, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_rm_rename, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_verify_other_trajectory, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_listings, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_keep_checkpoints, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_strict_outputs, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup_dir, proc_ctx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
