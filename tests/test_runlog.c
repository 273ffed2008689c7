/* test_runlog.c — the SQLite run log on real files in a temporary directory.
 *
 * Round trips are checked bit for bit (loss bits, hashes, step time), the
 * divergence query against hand-made runs whose first difference is known by
 * construction, bad files for their status and for being left untouched,
 * liveness with a child process that dies mid-run, and concurrent writers in
 * forked processes. Raw sqlite3 calls are the independent path: they build
 * foreign files and look at the stored rows behind the module's back.
 * Run names: a table of allowed and refused names (leading '-', controls,
 * DEL, C1, bidi controls, invalid UTF-8, 100 and 101 multi-byte characters,
 * all digits), each refusal one line naming the problem with the name
 * escaped, and the earlier rows intact. The database identity: made with a
 * database, kept on reopening, given to an older database without one, and
 * replaced (the old one an ancestor) when the file is a copy.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/hash.h"
#include "record/runlog.h"

static char g_dir[64];

/* ---- fixtures -------------------------------------------------------------- */

static int rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    return rmdir(dir);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/ls-test-runlog-XXXXXX");
    return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return rm_tree(g_dir);
}

static void db_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", g_dir, name);
}

static const char CONFIG[] = "batch=8\nmodel=mlp\nseed=1\n";

static runlog_run_info make_info(const char *name)
{
    runlog_run_info info;
    memset(&info, 0, sizeof info);
    info.name = name;
    info.model = "mlp";
    info.task = "xor";
    info.config_text = CONFIG;
    info.config_hash = UINT64_C(0xfedcba9876543210);  /* top bit set: int64 round trip */
    info.engine_version = "0.1";
    info.compiler = "cc";
    info.cflags = "-O2";
    info.host = "testhost";
    info.cpu = "testcpu";
    info.git_commit = NULL;
    info.threads = 3;
    info.reduce = "tree";
    return info;
}

static uint64_t splitmix(uint64_t x)
{
    uint64_t z = x + UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* Step t of a synthetic run: hashes from the seed, a real trajectory chain. */
static void gen_steps(ls_step *out, int64_t n, uint64_t seed)
{
    uint64_t traj = 0;
    for (int64_t t = 0; t < n; t++) {
        ls_step *s = &out[t];
        memset(s, 0, sizeof *s);
        s->step = t;
        s->param_hash = splitmix(seed * 100003u + (uint64_t)t);
        s->has_loss = t > 0;
        if (t == 0) {
            traj = hash_traj0(CONFIG, s->param_hash);
        } else {
            double loss = 1.0 / (double)t + (double)(seed % 7);
            s->loss_bits = hash_loss_bits(loss);
            traj = hash_traj_next(traj, s->param_hash, loss);
        }
        s->traj_hash = traj;
        s->seconds = 0.001 * (double)t + 1e-9 * (double)seed;
    }
}

static void assert_step_equal(const ls_step *a, const ls_step *b)
{
    assert_int_equal(a->step, b->step);
    assert_int_equal(a->has_loss, b->has_loss);
    assert_true(a->loss_bits == b->loss_bits);
    assert_true(a->param_hash == b->param_hash);
    assert_true(a->traj_hash == b->traj_hash);
    assert_memory_equal(&a->seconds, &b->seconds, sizeof a->seconds);
}

static runlog *open_ok(const char *path)
{
    runlog *r = NULL;
    ls_err err = {{0}};
    ls_status st = runlog_open(&r, path, &err);
    if (st != LS_OK)
        fail_msg("runlog_open %s: %s", path, err.msg);
    return r;
}

static int64_t begin_ok(runlog *r, const char *name)
{
    runlog_run_info info = make_info(name);
    int64_t id = -1;
    ls_err err = {{0}};
    if (runlog_run_begin(r, &info, &id, &err) != LS_OK)
        fail_msg("runlog_run_begin: %s", err.msg);
    return id;
}

static void write_steps_ok(runlog *r, int64_t id, const ls_step *s, int64_t n)
{
    ls_err err = {{0}};
    for (int64_t t = 0; t < n; t++)
        if (runlog_step(r, id, &s[t], &err) != LS_OK)
            fail_msg("runlog_step %lld: %s", (long long)t, err.msg);
}

/* One integer from raw SQLite on a separate connection; ?1 (if the query has
 * it) is bound to id. */
static long long raw_count(const char *path, const char *sql, int64_t id)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
                     SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("raw sql %s: %s", sql, msg);
    sqlite3_close(db);
}

/* ---- round trip -------------------------------------------------------------- */

static void test_roundtrip(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "roundtrip.db");
    enum { N = 201 };  /* steps 0..200: several batches and a partial one */
    ls_step *want = calloc(N, sizeof *want);
    assert_non_null(want);
    gen_steps(want, N, 11);

    runlog *r = open_ok(path);
    int64_t id = begin_ok(r, "round");
    ls_err err = {{0}};

    /* Batching: 100 rows given → one batch of RUNLOG_BATCH committed, the rest
     * buffered; a second connection sees exactly the committed rows. */
    write_steps_ok(r, id, want, 100);
    assert_int_equal(raw_count(path, "SELECT count(*) FROM steps WHERE run = ?1", id),
                     RUNLOG_BATCH);
    assert_int_equal(runlog_flush(r, &err), LS_OK);
    assert_int_equal(raw_count(path, "SELECT count(*) FROM steps WHERE run = ?1", id), 100);
    write_steps_ok(r, id, want + 100, N - 100);

    const char *names[] = {"hard_acc", "test_acc"};
    for (int64_t t = 50; t < N; t += 50)
        for (int k = 0; k < 2; k++)
            assert_int_equal(runlog_eval(r, id, t, names[k], (double)t / 1000.0 + k, &err), LS_OK);
    assert_int_equal(runlog_checkpoint(r, id, 100, "/tmp/x.ckpt", UINT64_C(0x8000000000000001),
                                       &err), LS_OK);
    assert_int_equal(runlog_run_end(r, id, "done", &err), LS_OK);
    runlog_close(r);

    r = open_ok(path);
    int64_t found = -1;
    assert_int_equal(runlog_find(r, "round", &found, &err), LS_OK);
    assert_int_equal(found, id);

    ls_step *got = NULL;
    size_t n = 0;
    assert_int_equal(runlog_read_steps(r, id, &got, &n, &err), LS_OK);
    assert_int_equal(n, N);
    for (size_t i = 0; i < n; i++)
        assert_step_equal(&got[i], &want[i]);
    free(got);

    runlog_evalrow *ev = NULL;
    assert_int_equal(runlog_read_evals(r, id, &ev, &n, &err), LS_OK);
    assert_int_equal(n, 8);
    for (size_t i = 0; i < n; i++) {
        int64_t t = 50 * (int64_t)(i / 2 + 1);
        int k = (int)(i % 2);
        assert_int_equal(ev[i].step, t);
        assert_string_equal(ev[i].name, names[k]);
        double v = (double)t / 1000.0 + k;
        assert_memory_equal(&ev[i].value, &v, sizeof v);
    }
    free(ev);

    runlog_run run;
    assert_int_equal(runlog_get_run(r, id, &run, &err), LS_OK);
    assert_int_equal(run.id, id);
    assert_string_equal(run.name, "round");
    assert_string_equal(run.model, "mlp");
    assert_string_equal(run.task, "xor");
    assert_string_equal(run.status, "done");
    assert_string_equal(run.config_text, CONFIG);
    assert_true(run.config_hash == UINT64_C(0xfedcba9876543210));
    assert_string_equal(run.engine_version, "0.1");
    assert_string_equal(run.compiler, "cc");
    assert_string_equal(run.cflags, "-O2");
    assert_string_equal(run.host, "testhost");
    assert_string_equal(run.cpu, "testcpu");
    assert_string_equal(run.git_commit, "");
    assert_string_equal(run.reduce, "tree");
    assert_int_equal(run.threads, 3);
    assert_int_equal(run.n_steps, N - 1);
    assert_true(run.last_traj_hash == want[N - 1].traj_hash);
    /* ISO-8601 UTC: 2024-01-02T03:04:05.678Z */
    assert_int_equal(strlen(run.started), 24);
    assert_int_equal(run.started[10], 'T');
    assert_int_equal(run.started[23], 'Z');
    assert_int_equal(strlen(run.ended), 24);
    runlog_run_free(&run);
    runlog_run_free(&run);  /* twice is harmless */
    runlog_run_free(NULL);

    assert_int_equal(raw_count(path, "SELECT state_hash FROM checkpoints WHERE run = ?1", id),
                     INT64_MIN + 1);

    runlog_run *runs = NULL;
    assert_int_equal(runlog_list(r, &runs, &n, &err), LS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(runs[0].id, id);
    assert_string_equal(runs[0].status, "done");
    runlog_run_free(&runs[0]);
    free(runs);

    /* The stored header marks the file as lockstep's. */
    assert_int_equal(raw_count(path, "SELECT application_id FROM pragma_application_id", 0),
                     RUNLOG_APPLICATION_ID);
    assert_int_equal(raw_count(path, "SELECT user_version FROM pragma_user_version", 0),
                     RUNLOG_SCHEMA_VERSION);
    runlog_close(r);
    runlog_close(NULL);
    free(want);
}

static void test_special_loss_bits(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "special.db");
    const uint64_t pats[] = {
        UINT64_C(0x8000000000000000),  /* -0.0: a REAL column would give +0.0 */
        UINT64_C(0x7ff8dead0000beef),  /* quiet NaN with a payload: REAL gives NULL */
        UINT64_C(0xfff0000000000001),  /* signalling negative NaN */
        UINT64_C(0x7ff0000000000000),  /* +inf */
        UINT64_C(0x0000000000000001),  /* smallest subnormal */
        UINT64_C(0xffffffffffffffff),
    };
    enum { NP = sizeof pats / sizeof pats[0] };
    ls_step want[NP + 1];
    gen_steps(want, NP + 1, 3);
    for (int i = 0; i < NP; i++)
        want[i + 1].loss_bits = pats[i];

    runlog *r = open_ok(path);
    int64_t id = begin_ok(r, "special");
    write_steps_ok(r, id, want, NP + 1);
    ls_err err = {{0}};
    assert_int_equal(runlog_run_end(r, id, "diverged", &err), LS_OK);
    runlog_close(r);

    r = open_ok(path);
    ls_step *got = NULL;
    size_t n = 0;
    assert_int_equal(runlog_read_steps(r, id, &got, &n, &err), LS_OK);
    assert_int_equal(n, NP + 1);
    for (size_t i = 0; i < n; i++)
        assert_step_equal(&got[i], &want[i]);
    free(got);
    runlog_close(r);

    /* The REAL column is for people: step 0 has none, NaN reads as NULL. */
    assert_int_equal(raw_count(path, "SELECT count(*) FROM steps WHERE run = ?1 AND loss IS NULL",
                               id), 4);
    assert_int_equal(
        raw_count(path, "SELECT count(*) FROM steps WHERE run = ?1 AND loss_bits IS NULL", id), 1);
}

/* ---- first divergence ------------------------------------------------------ */

static int64_t diverge(runlog *r, int64_t a, int64_t b)
{
    int64_t s1 = -2, s2 = -2;
    ls_err err = {{0}};
    assert_int_equal(runlog_first_divergence(r, a, b, &s1, &err), LS_OK);
    assert_int_equal(runlog_first_divergence(r, b, a, &s2, &err), LS_OK);
    assert_int_equal(s1, s2);
    return s1;
}

static void test_first_divergence(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "diverge.db");
    runlog *r = open_ok(path);
    enum { N = 20 };
    ls_step base[N], other[N];
    gen_steps(base, N, 5);
    int64_t a = begin_ok(r, "a");
    write_steps_ok(r, a, base, N);

    /* identical */
    int64_t same = begin_ok(r, "same");
    write_steps_ok(r, same, base, N);
    assert_int_equal(diverge(r, a, same), -1);

    /* equal up to 7, the loss (only) differs at 8 */
    memcpy(other, base, sizeof base);
    other[8].loss_bits ^= 1;
    int64_t loss8 = begin_ok(r, "loss8");
    write_steps_ok(r, loss8, other, N);
    assert_int_equal(diverge(r, a, loss8), 8);

    /* -0.0 against +0.0 at step 3: equal as REAL, different as bits */
    memcpy(other, base, sizeof base);
    base[3].loss_bits = 0;
    other[3].loss_bits = bits_of(-0.0);
    int64_t pz = begin_ok(r, "pz"), nz = begin_ok(r, "nz");
    write_steps_ok(r, pz, base, N);
    write_steps_ok(r, nz, other, N);
    assert_int_equal(diverge(r, pz, nz), 3);
    gen_steps(base, N, 5);

    /* the param hash differs at step 0 */
    memcpy(other, base, sizeof base);
    other[0].param_hash ^= UINT64_C(1) << 63;
    int64_t p0 = begin_ok(r, "p0");
    write_steps_ok(r, p0, other, N);
    assert_int_equal(diverge(r, a, p0), 0);

    /* the param hash (only) differs at step 5 */
    memcpy(other, base, sizeof base);
    other[5].param_hash += 1;
    int64_t p5 = begin_ok(r, "p5");
    write_steps_ok(r, p5, other, N);
    assert_int_equal(diverge(r, a, p5), 5);

    /* different lengths: only the common steps count */
    int64_t shortr = begin_ok(r, "short");
    write_steps_ok(r, shortr, base, 10);
    assert_int_equal(diverge(r, a, shortr), -1);
    memcpy(other, base, sizeof base);
    other[15].loss_bits ^= 1;
    int64_t late = begin_ok(r, "late");
    write_steps_ok(r, late, other, N);
    assert_int_equal(diverge(r, shortr, late), -1);
    assert_int_equal(diverge(r, a, late), 15);
    other[9].param_hash ^= 4;
    int64_t late9 = begin_ok(r, "late9");
    write_steps_ok(r, late9, other, N);
    assert_int_equal(diverge(r, shortr, late9), 9);

    /* a run with no steps shares none */
    int64_t empty = begin_ok(r, "empty");
    assert_int_equal(diverge(r, a, empty), -1);

    ls_err err = {{0}};
    assert_int_equal(runlog_verdict(r, "verify", a, loss8, 0, 8, "loss differs at step 8", &err),
                     LS_OK);
    assert_int_equal(runlog_verdict(r, "golden", a, -1, 1, -1, NULL, &err), LS_OK);
    runlog_close(r);
    assert_int_equal(raw_count(path, "SELECT count(*) FROM verdicts WHERE run_a = ?1 AND "
                                     "((equal = 0 AND first_diff_step = 8) OR "
                                     "(equal = 1 AND first_diff_step IS NULL AND run_b IS NULL))",
                               a), 2);
}

/* ---- names ---------------------------------------------------------------------- */

static void test_names_and_find(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "names.db");
    runlog *r = open_ok(path);
    ls_err err = {{0}};

    int64_t id1 = begin_ok(r, "run-2");  /* a person's name that an automatic one will want */
    runlog_run_info info = make_info("run-2");
    int64_t dup = -7;
    assert_int_equal(runlog_run_begin(r, &info, &dup, &err), LS_EEXIST);
    assert_non_null(strstr(err.msg, "'run-2'"));
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(dup, -7);

    info = make_info(NULL);
    int64_t id2 = -1;
    assert_int_equal(runlog_run_begin(r, &info, &id2, &err), LS_OK);
    info = make_info("");
    int64_t id3 = -1;
    assert_int_equal(runlog_run_begin(r, &info, &id3, &err), LS_OK);

    info = make_info("123");
    assert_int_equal(runlog_run_begin(r, &info, &dup, &err), LS_EINVAL);

    runlog_run run;
    char want[64];
    assert_int_equal(runlog_get_run(r, id2, &run, &err), LS_OK);
    snprintf(want, sizeof want, "run-%lld.2", (long long)id2);  /* run-<id2> was taken */
    assert_int_equal(id2, 2);
    assert_string_equal(run.name, want);
    runlog_run_free(&run);
    assert_int_equal(runlog_get_run(r, id3, &run, &err), LS_OK);
    snprintf(want, sizeof want, "run-%lld", (long long)id3);
    assert_string_equal(run.name, want);
    runlog_run_free(&run);

    int64_t f = -1;
    assert_int_equal(runlog_find(r, "run-2", &f, &err), LS_OK);
    assert_int_equal(f, id1);
    snprintf(want, sizeof want, "%lld", (long long)id3);
    assert_int_equal(runlog_find(r, want, &f, &err), LS_OK);
    assert_int_equal(f, id3);
    assert_int_equal(runlog_find(r, "nope", &f, &err), LS_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no run 'nope' in "));
    assert_int_equal(runlog_find(r, "999", &f, &err), LS_ENOTFOUND);
    assert_int_equal(runlog_find(r, "99999999999999999999999", &f, &err), LS_ENOTFOUND);
    assert_int_equal(runlog_get_run(r, 999, &run, &err), LS_ENOTFOUND);
    assert_int_equal(runlog_run_end(r, 999, "done", &err), LS_ENOTFOUND);
    assert_int_equal(runlog_run_end(r, id1, "running", &err), LS_EINVAL);
    runlog_close(r);
}

/* ---- bad files ------------------------------------------------------------------- */

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* An import's source: opened read-only, so an empty file stays empty and is
 * refused naming it; a record is read. A full file (max_page_count through
 * the test-only LOCKSTEP_TEST_MAX_PAGES) is "disk full", never an I/O error. */
static void test_source_and_full(void **state)
{
    (void)state;
    char path[256];
    runlog *r = NULL;
    ls_err err = {{0}};
    db_path(path, sizeof path, "empty-source.db");
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(runlog_open_source(&r, path, &err), LS_EFORMAT);
    assert_null(r);
    assert_non_null(strstr(err.msg, path));
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, 0);

    db_path(path, sizeof path, "full.db");
    r = open_ok(path);
    int64_t id = begin_ok(r, "full");
    runlog_close(r);
    assert_int_equal(setenv("LOCKSTEP_TEST_MAX_PAGES", "1", 1), 0);   /* below the file: no page more */
    r = open_ok(path);
    unsetenv("LOCKSTEP_TEST_MAX_PAGES");
    enum { N = 4 * RUNLOG_BATCH };
    ls_step *rows = calloc(N, sizeof *rows);
    assert_non_null(rows);
    gen_steps(rows, N, 3);
    ls_status st = LS_OK;
    for (size_t i = 0; i < N && st == LS_OK; i++)
        st = runlog_step(r, id, &rows[i], &err);
    if (st == LS_OK)
        st = runlog_flush(r, &err);
    assert_int_equal(st, LS_EIO);
    assert_non_null(strstr(err.msg, "disk full"));
    assert_null(strstr(err.msg, "I/O error"));
    runlog_close(r);
    free(rows);

    runlog *src = NULL;
    assert_int_equal(runlog_open_source(&src, path, &err), LS_OK);
    runlog_run run;
    assert_int_equal(runlog_get_run(src, id, &run, &err), LS_OK);
    assert_string_equal(run.name, "full");
    runlog_run_free(&run);
    runlog_close(src);
}

static void test_bad_files(void **state)
{
    (void)state;
    char path[256], side[300];
    runlog *r = NULL;
    ls_err err = {{0}};

    /* a text file: refused and left byte for byte as it was */
    db_path(path, sizeof path, "notes.txt");
    static const char text[] =
        "These are my notes, not a database.\n"
        "They are long enough to fill more than the 100 bytes of a SQLite header.\n";
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fwrite(text, 1, sizeof text - 1, fp);
    fclose(fp);
    assert_int_equal(runlog_open(&r, path, &err), LS_EFORMAT);
    assert_null(r);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "not a SQLite database"));
    char back[512];
    fp = fopen(path, "rb");
    assert_non_null(fp);
    size_t got = fread(back, 1, sizeof back, fp);
    fclose(fp);
    assert_int_equal(got, sizeof text - 1);
    assert_memory_equal(back, text, sizeof text - 1);
    snprintf(side, sizeof side, "%s-wal", path);
    assert_false(exists(side));
    snprintf(side, sizeof side, "%s-journal", path);
    assert_false(exists(side));

    /* a directory */
    db_path(path, sizeof path, "adir");
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(runlog_open(&r, path, &err), LS_EIO);
    assert_non_null(strstr(err.msg, "is a directory"));
    assert_null(r);

    /* a path under a missing directory */
    db_path(path, sizeof path, "missing/runs.db");
    assert_int_equal(runlog_open(&r, path, &err), LS_EIO);
    assert_null(r);

    /* another application's SQLite file: refused, not converted to WAL */
    db_path(path, sizeof path, "other.db");
    raw_exec(path, "PRAGMA application_id=123; CREATE TABLE t(x); INSERT INTO t VALUES(1);");
    assert_int_equal(runlog_open(&r, path, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, path));
    assert_null(r);
    {
        sqlite3 *db;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), "delete");
        sqlite3_finalize(st);
        sqlite3_close(db);
    }

    /* a SQLite file with tables but no application_id */
    db_path(path, sizeof path, "plain.db");
    raw_exec(path, "CREATE TABLE t(x);");
    assert_int_equal(runlog_open(&r, path, &err), LS_EFORMAT);
    assert_null(r);

    /* ours, but from a newer lockstep */
    db_path(path, sizeof path, "newer.db");
    r = open_ok(path);
    runlog_close(r);
    r = NULL;
    raw_exec(path, "PRAGMA user_version=99;");
    assert_int_equal(runlog_open(&r, path, &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, "newer"));
    assert_null(r);

    /* a write-protected database (root writes anyway, so only as a user) */
    db_path(path, sizeof path, "readonly.db");
    r = open_ok(path);
    runlog_close(r);
    r = NULL;
    if (geteuid() != 0) {
        assert_int_equal(chmod(path, 0444), 0);
        assert_int_equal(runlog_open(&r, path, &err), LS_EIO);
        assert_non_null(strstr(err.msg, "not writable"));
        assert_null(r);
        assert_int_equal(chmod(path, 0644), 0);
    }

    /* an empty file is a new database */
    db_path(path, sizeof path, "empty.db");
    fp = fopen(path, "wb");
    assert_non_null(fp);
    fclose(fp);
    r = open_ok(path);
    runlog_close(r);
    r = open_ok(path);  /* and reopens as ours */
    runlog_close(r);

    assert_int_equal(runlog_open(&r, "", &err), LS_EINVAL);
}

/* ---- liveness ---------------------------------------------------------------------- */

static void test_liveness(void **state)
{
    (void)state;
    char path[256], sql[256];
    db_path(path, sizeof path, "live.db");
    ls_err err = {{0}};
    runlog_close(open_ok(path));  /* create it; no connection crosses the fork */

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        runlog *c = NULL;
        runlog_run_info info = make_info("orphan");
        int64_t id;
        ls_step s;
        memset(&s, 0, sizeof s);
        if (runlog_open(&c, path, NULL) != LS_OK || runlog_run_begin(c, &info, &id, NULL) != LS_OK ||
            runlog_step(c, id, &s, NULL) != LS_OK || runlog_flush(c, NULL) != LS_OK)
            _exit(1);
        _exit(0);  /* dies "running", without closing */
    }
    /* First as a zombie (exited, not reaped: /proc/PID still exists). */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
    assert_int_equal(si.si_code, CLD_EXITED);
    assert_int_equal(si.si_status, 0);

    runlog *r = open_ok(path);
    int64_t orphan = -1;
    assert_int_equal(runlog_find(r, "orphan", &orphan, &err), LS_OK);
    runlog_run run;
    assert_int_equal(runlog_get_run(r, orphan, &run, &err), LS_OK);
    assert_string_equal(run.status, "interrupted");
    assert_int_equal(run.n_steps, 0);
    runlog_run_free(&run);

    /* Then reaped: /proc/PID is gone. */
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_int_equal(runlog_get_run(r, orphan, &run, &err), LS_OK);
    assert_string_equal(run.status, "interrupted");
    runlog_run_free(&run);
    /* reported, not rewritten */
    assert_int_equal(raw_count(path, "SELECT status = 'running' FROM runs WHERE id = ?1", orphan),
                     1);

    int64_t me = begin_ok(r, "me");
    assert_int_equal(runlog_get_run(r, me, &run, &err), LS_OK);
    assert_string_equal(run.status, "running");
    runlog_run_free(&run);

    runlog_run *runs = NULL;
    size_t n = 0;
    assert_int_equal(runlog_list(r, &runs, &n, &err), LS_OK);
    assert_int_equal(n, 2);
    assert_string_equal(runs[0].status, "interrupted");
    assert_string_equal(runs[1].status, "running");
    for (size_t i = 0; i < n; i++)
        runlog_run_free(&runs[i]);
    free(runs);

    /* a row from another boot */
    snprintf(sql, sizeof sql, "UPDATE runs SET boot_id = '00000000-0000-0000-0000-000000000000' "
                              "WHERE id = %lld", (long long)me);
    raw_exec(path, sql);
    assert_int_equal(runlog_get_run(r, me, &run, &err), LS_OK);
    assert_string_equal(run.status, "interrupted");
    runlog_run_free(&run);

    /* right boot, right pid, but another start time: the pid was reused */
    snprintf(sql, sizeof sql, "UPDATE runs SET boot_id = (SELECT boot_id FROM runs WHERE id = %lld),"
                              " pid_start = pid_start + 1 WHERE id = %lld",
             (long long)orphan, (long long)me);
    raw_exec(path, sql);
    assert_int_equal(runlog_get_run(r, me, &run, &err), LS_OK);
    assert_string_equal(run.status, "interrupted");
    runlog_run_free(&run);
    snprintf(sql, sizeof sql, "UPDATE runs SET pid_start = pid_start - 1 WHERE id = %lld",
             (long long)me);
    raw_exec(path, sql);
    assert_int_equal(runlog_get_run(r, me, &run, &err), LS_OK);
    assert_string_equal(run.status, "running");
    runlog_run_free(&run);

    /* an ended run is what it says */
    assert_int_equal(runlog_run_end(r, me, "failed", &err), LS_OK);
    assert_int_equal(runlog_get_run(r, me, &run, &err), LS_OK);
    assert_string_equal(run.status, "failed");
    runlog_run_free(&run);
    runlog_close(r);
}

/* ---- concurrent writers ------------------------------------------------------------- */

enum { NCHILD = 4, CSTEPS = 301 };  /* steps 0..300 */

/* Runs in a forked child: no cmocka asserts here (a failed assert would
 * longjmp into the child's copy of the runner). Returns the exit code and
 * says on stderr what failed. */
static int child_fail(int code, const char *what, const ls_err *err)
{
    fprintf(stderr, "child %d: %s: %s\n", (int)getpid(), what, err->msg);
    return code;
}

static int child_write(const char *path, int k)
{
    ls_step s[CSTEPS];
    gen_steps(s, CSTEPS, 1000 + (uint64_t)k);
    char name[32];
    snprintf(name, sizeof name, "worker-%d", k);
    runlog *r = NULL;
    runlog_run_info info = make_info(name);
    int64_t id;
    ls_err err = {{0}};
    if (runlog_open(&r, path, &err) != LS_OK)
        return child_fail(2, "open", &err);
    if (runlog_run_begin(r, &info, &id, &err) != LS_OK)
        return child_fail(3, "begin", &err);
    for (int t = 0; t < CSTEPS; t++) {
        if (runlog_step(r, id, &s[t], &err) != LS_OK)
            return child_fail(4, "step", &err);
        if (t % 37 == 0 && runlog_flush(r, &err) != LS_OK)
            return child_fail(5, "flush", &err);
        if (t % 100 == 0 && runlog_eval(r, id, t, "test_acc", 0.5, &err) != LS_OK)
            return child_fail(6, "eval", &err);
    }
    if (runlog_run_end(r, id, "done", &err) != LS_OK)
        return child_fail(7, "end", &err);
    runlog_close(r);
    return 0;
}

static void test_concurrent_writers(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "shared.db");  /* not created yet: first opens race too */
    pid_t pids[NCHILD];
    for (int k = 0; k < NCHILD; k++) {
        pids[k] = fork();
        assert_true(pids[k] >= 0);
        if (pids[k] == 0)
            _exit(child_write(path, k));
    }
    for (int k = 0; k < NCHILD; k++) {
        int ws = 0;
        assert_int_equal(waitpid(pids[k], &ws, 0), pids[k]);
        assert_true(WIFEXITED(ws));
        assert_int_equal(WEXITSTATUS(ws), 0);
    }

    runlog *r = open_ok(path);
    ls_err err = {{0}};
    for (int k = 0; k < NCHILD; k++) {
        char name[32];
        snprintf(name, sizeof name, "worker-%d", k);
        int64_t id = -1;
        assert_int_equal(runlog_find(r, name, &id, &err), LS_OK);
        ls_step want[CSTEPS];
        gen_steps(want, CSTEPS, 1000 + (uint64_t)k);
        ls_step *got = NULL;
        size_t n = 0;
        assert_int_equal(runlog_read_steps(r, id, &got, &n, &err), LS_OK);
        assert_int_equal(n, CSTEPS);
        for (size_t i = 0; i < n; i++)
            assert_step_equal(&got[i], &want[i]);
        free(got);
        runlog_run run;
        assert_int_equal(runlog_get_run(r, id, &run, &err), LS_OK);
        assert_string_equal(run.status, "done");
        assert_true(run.last_traj_hash == want[CSTEPS - 1].traj_hash);
        runlog_run_free(&run);
        assert_int_equal(raw_count(path, "SELECT count(*) FROM evals WHERE run = ?1", id), 4);
    }
    runlog_close(r);
}

/* ---- resume, checkpoints, the commit hook ----------------------------------------- */

/* A run started by a child that died is claimed by this process: status
 * "running" with our liveness data, ended cleared, targets replaced only
 * when given; a run whose writer lives (this process) cannot be claimed. */
static void test_run_resume(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "resume.db");
    ls_err err = {{0}};
    runlog_close(open_ok(path));

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        runlog *c = NULL;
        runlog_run_info info = make_info("dead");
        info.target_steps = 120;
        info.checkpoint_every = 10;
        info.checkpoint_dir = "/tmp/somewhere";
        int64_t id;
        if (runlog_open(&c, path, NULL) != LS_OK || runlog_run_begin(c, &info, &id, NULL) != LS_OK)
            _exit(1);
        _exit(0);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);

    runlog *r = open_ok(path);
    int64_t dead;
    assert_int_equal(runlog_find(r, "dead", &dead, &err), LS_OK);
    runlog_run run;
    assert_int_equal(runlog_get_run(r, dead, &run, &err), LS_OK);
    assert_string_equal(run.status, "interrupted");
    assert_int_equal(run.pid, pid);
    assert_int_equal(run.target_steps, 120);
    assert_int_equal(run.checkpoint_every, 10);
    assert_non_null(run.checkpoint_dir);
    assert_string_equal(run.checkpoint_dir, "/tmp/somewhere");
    runlog_run_free(&run);

    /* Claim it, keeping the stored values. */
    assert_int_equal(runlog_run_resume(r, dead, 0, 0, NULL, &err), LS_OK);
    assert_int_equal(runlog_get_run(r, dead, &run, &err), LS_OK);
    assert_string_equal(run.status, "running");
    assert_int_equal(run.pid, getpid());
    assert_int_equal(run.target_steps, 120);
    assert_int_equal(run.checkpoint_every, 10);
    assert_string_equal(run.checkpoint_dir, "/tmp/somewhere");
    runlog_run_free(&run);
    assert_int_equal(raw_count(path, "SELECT ended IS NULL FROM runs WHERE id = ?1", dead), 1);

    /* Now it is ours and alive: nobody else may claim it, not even us again. */
    err.msg[0] = 0;
    assert_int_equal(runlog_run_resume(r, dead, 0, 0, NULL, &err), LS_EEXIST);
    assert_non_null(strstr(err.msg, "running"));
    assert_int_equal(runlog_run_resume(r, 9999, 0, 0, NULL, &err), LS_ENOTFOUND);

    /* Ended, then claimed again with new values; ended is cleared again. */
    assert_int_equal(runlog_run_end(r, dead, "done", &err), LS_OK);
    assert_int_equal(raw_count(path, "SELECT ended IS NOT NULL FROM runs WHERE id = ?1", dead), 1);
    assert_int_equal(runlog_run_resume(r, dead, 150, 25, "/tmp/else", &err), LS_OK);
    assert_int_equal(runlog_get_run(r, dead, &run, &err), LS_OK);
    assert_string_equal(run.status, "running");
    assert_int_equal(run.target_steps, 150);
    assert_int_equal(run.checkpoint_every, 25);
    assert_string_equal(run.checkpoint_dir, "/tmp/else");
    runlog_run_free(&run);
    assert_int_equal(raw_count(path, "SELECT ended IS NULL FROM runs WHERE id = ?1", dead), 1);

    /* A run begun without targets reads them back as "none". */
    int64_t plain = begin_ok(r, "plain");
    assert_int_equal(runlog_get_run(r, plain, &run, &err), LS_OK);
    assert_int_equal(run.target_steps, 0);
    assert_int_equal(run.checkpoint_every, 0);
    assert_null(run.checkpoint_dir);
    runlog_run_free(&run);
    runlog_close(r);
}

static void test_checkpoint_rows(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "ckpt.db");
    ls_err err = {{0}};
    runlog *r = open_ok(path);
    int64_t a = begin_ok(r, "a"), b = begin_ok(r, "b");
    runlog_ckpt *ck = NULL;
    size_t n = 99;
    assert_int_equal(runlog_checkpoints(r, a, &ck, &n, &err), LS_OK);
    assert_int_equal(n, 0);
    runlog_checkpoints_free(ck, n);
    /* Registered out of order, read back in step order, hashes bit for bit. */
    const int64_t steps[] = { 30, 10, 20 };
    for (int i = 0; i < 3; i++) {
        char p[64];
        snprintf(p, sizeof p, "/ck/a-%lld", (long long)steps[i]);
        assert_int_equal(runlog_checkpoint(r, a, steps[i], p, UINT64_C(0x8000000000000001) + (uint64_t)steps[i],
                                           &err), LS_OK);
    }
    assert_int_equal(runlog_checkpoint(r, b, 10, "/ck/b-10", 7, &err), LS_OK);
    assert_int_equal(runlog_checkpoints(r, a, &ck, &n, &err), LS_OK);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        char p[64];
        assert_int_equal(ck[i].step, 10 * (int64_t)(i + 1));
        snprintf(p, sizeof p, "/ck/a-%lld", (long long)ck[i].step);
        assert_string_equal(ck[i].path, p);
        assert_true(ck[i].state_hash == UINT64_C(0x8000000000000001) + (uint64_t)ck[i].step);
    }
    runlog_checkpoints_free(ck, n);
    /* By path: another path at that step stays. */
    assert_int_equal(runlog_checkpoint(r, a, 20, "/ck/a-20.2", 5, &err), LS_OK);
    assert_int_equal(runlog_checkpoint_delete(r, a, 20, "/ck/a-20.2", &err), LS_OK);
    assert_int_equal(runlog_checkpoints(r, a, &ck, &n, &err), LS_OK);
    assert_int_equal(n, 3);
    assert_string_equal(ck[1].path, "/ck/a-20");
    runlog_checkpoints_free(ck, n);
    assert_int_equal(runlog_checkpoint_delete(r, a, 20, NULL, &err), LS_OK);
    assert_int_equal(runlog_checkpoints(r, a, &ck, &n, &err), LS_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ck[0].step, 10);
    assert_int_equal(ck[1].step, 30);
    runlog_checkpoints_free(ck, n);
    assert_int_equal(runlog_checkpoints(r, b, &ck, &n, &err), LS_OK);
    assert_int_equal(n, 1);
    runlog_checkpoints_free(ck, n);
    runlog_checkpoints_free(NULL, 0);

    /* An evaluation recorded again at the same (step, name) replaces the first. */
    assert_int_equal(runlog_eval(r, a, 30, "test_acc", 0.25, &err), LS_OK);
    assert_int_equal(runlog_eval(r, a, 30, "test_acc", 0.75, &err), LS_OK);
    runlog_evalrow *ev;
    assert_int_equal(runlog_read_evals(r, a, &ev, &n, &err), LS_OK);
    assert_int_equal(n, 1);
    assert_true(ev[0].value == 0.75);
    free(ev);
    runlog_close(r);
}

/* The commit hook runs once per batch commit, inside the transaction: the
 * rows are inserted but not yet visible to another connection. */
static const char *hook_db;
static int hook_calls;
static long long hook_visible;

static void commit_hook(void *ctx)
{
    hook_calls++;
    hook_visible = raw_count(hook_db, "SELECT count(*) FROM steps WHERE run = ?1", *(int64_t *)ctx);
}

static void test_commit_hook(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "hook.db");
    hook_db = path;
    ls_err err = {{0}};
    runlog *r = open_ok(path);
    int64_t id = begin_ok(r, "h");
    runlog_set_commit_hook(r, commit_hook, &id);
    ls_step s[RUNLOG_BATCH + 5];
    gen_steps(s, RUNLOG_BATCH + 5, 3);
    write_steps_ok(r, id, s, RUNLOG_BATCH);          /* one full batch: one commit */
    assert_int_equal(hook_calls, 1);
    assert_int_equal(hook_visible, 0);
    assert_int_equal(raw_count(path, "SELECT count(*) FROM steps WHERE run = ?1", id), RUNLOG_BATCH);
    write_steps_ok(r, id, s + RUNLOG_BATCH, 5);
    assert_int_equal(hook_calls, 1);
    assert_int_equal(runlog_flush(r, &err), LS_OK);  /* the rest: a second commit */
    assert_int_equal(hook_calls, 2);
    assert_int_equal(hook_visible, RUNLOG_BATCH);
    assert_int_equal(runlog_flush(r, &err), LS_OK);  /* nothing buffered: no commit */
    assert_int_equal(hook_calls, 2);
    runlog_set_commit_hook(r, NULL, NULL);
    runlog_close(r);
}


/* ---- run names: the rule of runlog.h ---------------------------------------------- */

/* n copies of the UTF-8 character c. */
static char *repeat(const char *c, size_t n)
{
    size_t l = strlen(c);
    char *s = malloc(l * n + 1);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        memcpy(s + i * l, c, l);
    s[l * n] = 0;
    return s;
}

static void test_name_rule(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "namerule.db");
    runlog *r = open_ok(path);
    begin_ok(r, "first");
    char *e100 = repeat("\xc3\xa9", 100), *e101 = repeat("\xc3\xa9", 101);   /* é: 2 bytes */
    char *k100 = repeat("\xe6\xbc\xa2", 100);                                 /* 漢: 3 bytes */
    char *m100 = repeat("\xf0\x9f\x98\x80", 100), *m101 = repeat("\xf0\x9f\x98\x80", 101);   /* 4 bytes */
    static char a101[102];
    memset(a101, 'a', 101);
    static const char *const say_ctl = "control or invisible character";
    const struct {
        const char *name;
        ls_status want;
        const char *says;      /* in the message (NULL: accepted) */
        const char *shown;     /* the name as the message must show it */
    } rows[] = {
        { "-x", LS_EINVAL, "starts with '-'", "'-x'" },
        { "--threads", LS_EINVAL, "starts with '-'", "'--threads'" },
        { "a\nb", LS_EINVAL, say_ctl, "'a\\x0ab'" },
        { "a\n2  fake  done", LS_EINVAL, "U+000A", "\\x0a" },
        { "esc\x1b[31mred", LS_EINVAL, "U+001B", "'esc\\x1b[31mred'" },
        { "tab\there", LS_EINVAL, "U+0009", "'tab\\x09here'" },
        { "del\x7f", LS_EINVAL, "U+007F", "'del\\x7f'" },
        { "c1\xc2\x9b", LS_EINVAL, "U+009B", "'c1\\u{009b}'" },
        { "rlo\xe2\x80\xae" "evil", LS_EINVAL, "U+202E", "\\u{202e}" },
        { "ls\xe2\x80\xa8x", LS_EINVAL, "U+2028", "\\u{2028}" },
        { "bad\xff", LS_EINVAL, "not valid UTF-8", "'bad\\xff'" },
        { "over\xc0\xaf", LS_EINVAL, "not valid UTF-8", "\\xc0" },
        { "cut\xe6\xbc", LS_EINVAL, "not valid UTF-8", "'cut\\xe6\\xbc'" },
        { "sur\xed\xa0\x80", LS_EINVAL, "not valid UTF-8", "\\xed" },
        { "123", LS_EINVAL, "all digits", "'123'" },
        { "0", LS_EINVAL, "all digits", "'0'" },
        { e101, LS_EINVAL, "101 characters", NULL },
        { m101, LS_EINVAL, "101 characters", NULL },
        { a101, LS_EINVAL, "101 characters", NULL },
        { "first", LS_EEXIST, "already used", "'first'" },
        { e100, LS_OK, NULL, NULL },
        { k100, LS_OK, NULL, NULL },
        { m100, LS_OK, NULL, NULL },
        { "x-1", LS_OK, NULL, NULL },
        { "with space", LS_OK, NULL, NULL },
        { "12a", LS_OK, NULL, NULL },
        { "caf\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97", LS_OK, NULL, NULL },
    };
    long long runs_before = 1;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        runlog_run_info info = make_info(rows[i].name);
        ls_err err = {{0}};
        int64_t id = -7;
        ls_status st = runlog_run_begin(r, &info, &id, &err);
        if (st != rows[i].want)
            fail_msg("name row %zu: status %d, want %d (%s)", i, (int)st, (int)rows[i].want, err.msg);
        if (st == LS_OK) {
            runs_before++;
            runlog_run run;
            assert_int_equal(runlog_get_run(r, id, &run, &err), LS_OK);
            assert_string_equal(run.name, rows[i].name);   /* read back whole */
            runlog_run_free(&run);
            int64_t f = -1;
            assert_int_equal(runlog_find(r, rows[i].name, &f, &err), LS_OK);
            assert_int_equal(f, id);
            assert_int_equal(runlog_check_name(rows[i].name, &err), LS_OK);
            continue;
        }
        assert_int_equal(id, -7);
        if (strstr(err.msg, rows[i].says) == NULL)
            fail_msg("name row %zu: '%s' does not say '%s'", i, err.msg, rows[i].says);
        if (rows[i].shown != NULL && strstr(err.msg, rows[i].shown) == NULL)
            fail_msg("name row %zu: '%s' does not show the name as %s", i, err.msg, rows[i].shown);
        /* One printable line: no byte below 0x20, no DEL, no C1 in UTF-8. */
        for (const unsigned char *p = (const unsigned char *)err.msg; *p; p++)
            if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
                fail_msg("name row %zu: the message has byte 0x%02x: %s", i, *p, err.msg);
        assert_int_equal(raw_count(path, "SELECT count(*) FROM runs", 0), runs_before);
    }
    assert_int_equal(raw_count(path, "SELECT count(*) FROM runs WHERE name = 'first' AND id = 1", 0), 1);
    free(e100);
    free(e101);
    free(k100);
    free(m100);
    free(m101);
    runlog_close(r);
}

/* ---- the database identity ---------------------------------------------------------- */

static void raw_text(const char *path, const char *sql, char *out, size_t cap)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    out[0] = 0;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void copy_bytes(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    assert_non_null(a);
    assert_non_null(b);
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, a)) > 0)
        assert_int_equal(fwrite(buf, 1, k, b), k);
    fclose(a);
    assert_int_equal(fclose(b), 0);
}

/* The identity a writer gets (made now when needed). */
static const runlog_identity *ident_w(runlog *r)
{
    const runlog_identity *id;
    ls_err err = {{0}};
    if (runlog_get_identity(r, 1, &id, &err) != LS_OK)
        fail_msg("runlog_get_identity: %s", err.msg);
    return id;
}

static unsigned char *file_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *b = malloc(1 << 20);
    assert_non_null(b);
    *len = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

static void test_identity(void **state)
{
    (void)state;
    char path[256], copy[256], copy2[256];
    db_path(path, sizeof path, "ident.db");
    db_path(copy, sizeof copy, "ident-copy.db");
    db_path(copy2, sizeof copy2, "ident-copy2.db");
    runlog *r = open_ok(path);
    const runlog_identity *id = ident_w(r);
    char first[64];
    unsigned char first_id[RUNLOG_ID_BYTES];
    snprintf(first, sizeof first, "%s", id->hex);
    memcpy(first_id, id->id, sizeof first_id);
    assert_int_equal(strlen(first), 32);
    assert_int_equal(id->n_ancestors, 0);
    int zero = 1;
    for (int i = 0; i < RUNLOG_ID_BYTES; i++)
        zero &= id->id[i] == 0;
    assert_false(zero);
    int64_t a = begin_ok(r, "a");
    runlog_close(r);
    char stored[64];
    raw_text(path, "SELECT id FROM identity", stored, sizeof stored);
    assert_string_equal(stored, first);
    /* Reopened: the same identity; the schema version is unchanged. */
    r = open_ok(path);
    assert_string_equal(ident_w(r)->hex, first);
    runlog_close(r);
    assert_int_equal(raw_count(path, "PRAGMA user_version", 0), RUNLOG_SCHEMA_VERSION);
    assert_int_equal(raw_count(path, "SELECT count(*) FROM identity", 0), 1);

    /* A copy: opened and read, it is left byte for byte as it was, and its
     * stored identity (the original's) reads back; a writer then gives it a
     * new one, the original's its ancestor; a copy of the copy remembers
     * both; the original keeps its own. */
    copy_bytes(path, copy);
    size_t l0, l1;
    unsigned char *b0 = file_bytes(copy, &l0);
    r = open_ok(copy);
    const runlog_identity *ro;
    ls_err rerr = {{0}};
    assert_int_equal(runlog_get_identity(r, 0, &ro, &rerr), LS_OK);
    assert_string_equal(ro->hex, first);
    runlog_run ro_run;
    assert_int_equal(runlog_get_run(r, a, &ro_run, &rerr), LS_OK);
    runlog_run_free(&ro_run);
    runlog_close(r);
    unsigned char *b1 = file_bytes(copy, &l1);
    assert_int_equal(l0, l1);
    assert_memory_equal(b0, b1, l0);
    free(b0);
    free(b1);
    r = open_ok(copy);
    char second[64];
    snprintf(second, sizeof second, "%s", ident_w(r)->hex);
    assert_true(strcmp(second, first) != 0);
    assert_int_equal(ident_w(r)->n_ancestors, 1);
    assert_memory_equal(ident_w(r)->ancestors[0], first_id, RUNLOG_ID_BYTES);
    runlog_run run;
    ls_err err = {{0}};
    assert_int_equal(runlog_get_run(r, a, &run, &err), LS_OK);   /* the record itself is the same */
    assert_string_equal(run.name, "a");
    runlog_run_free(&run);
    runlog_close(r);
    r = open_ok(copy);
    assert_string_equal(ident_w(r)->hex, second);
    runlog_close(r);
    copy_bytes(copy, copy2);
    r = open_ok(copy2);
    assert_int_equal(ident_w(r)->n_ancestors, 2);
    runlog_close(r);
    char anc[128], want[128];
    raw_text(copy2, "SELECT ancestors FROM identity", anc, sizeof anc);
    snprintf(want, sizeof want, "%s %s", second, first);
    assert_string_equal(anc, want);
    r = open_ok(path);
    assert_string_equal(ident_w(r)->hex, first);
    runlog_close(r);

    /* A database made before identities (no table): readable (a reader
     * sees no identity), and given one by a writer. */
    raw_exec(copy, "DROP TABLE identity");
    r = open_ok(copy);
    assert_int_equal(runlog_get_identity(r, 0, &ro, &rerr), LS_OK);
    assert_int_equal(ro->n_ancestors, 0);
    assert_string_equal(ro->hex, "");
    assert_int_equal(strlen(ident_w(r)->hex), 32);
    assert_int_equal(ident_w(r)->n_ancestors, 0);
    assert_int_equal(runlog_get_run(r, a, &run, &err), LS_OK);
    runlog_run_free(&run);
    runlog_close(r);
    assert_int_equal(raw_count(copy, "SELECT count(*) FROM identity", 0), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_special_loss_bits),
        cmocka_unit_test(test_first_divergence),
        cmocka_unit_test(test_names_and_find),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_source_and_full),
        cmocka_unit_test(test_liveness),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_run_resume),
        cmocka_unit_test(test_checkpoint_rows),
        cmocka_unit_test(test_commit_hook),
        cmocka_unit_test(test_name_rule),
        cmocka_unit_test(test_identity),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown) ? 1 : 0;
}
