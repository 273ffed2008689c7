/* test_audit.c — end-to-end tests of `lockstep audit` and `lockstep reproduce`
 * (tools/cmd_audit.c, LS_REOPEN_AUDIT in engine/session.c).
 *
 * Each case runs the real binary (LOCKSTEP_BIN, else build/lockstep) in a
 * fresh temporary directory on a small teacher run with checkpoints, then
 * attacks the record behind the binary's back with the raw sqlite3 API (a
 * step row's loss bits or parameter hash edited) or the checkpoint files (one
 * byte changed, a file removed), and checks that both the record-only and
 * the full audit find the first bad step and name it, that a clean run is
 * proved by both at several thread counts, that the verdicts land in the
 * audits table and in `show`, and that a certificate reproduces without a
 * database while one with a changed learning rate or a malformed one does
 * not.
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

#include "../record/hash.h"
#include "proc_util.h"

static char g_bin[PATH_MAX];

#define AUDIT_DEADLINE 120.0

static int setup_dir(void **state)
{
    return proc_ctx_setup(state, "/tmp/lockstep-audit-XXXXXX");
}

static void run_argv(proc_res *r, const proc_ctx *c, const char *const *argv)
{
    proc_child p;
    proc_describe("lockstep", argv, r->cmd, sizeof r->cmd);
    proc_start_bin(&p, c->dir, NULL, NULL, g_bin, argv);
    proc_finish(&p, r, AUDIT_DEADLINE);
    if (r->timed_out)
        fail_msg("%s: still running after %.0f s (killed)", r->cmd, AUDIT_DEADLINE);
    if (r->sig != 0)
        fail_msg("%s: died of signal %d\nstderr: %s", r->cmd, r->sig, r->err);
}

#define RUN(r, c, ...)                                    \
    do {                                                  \
        const char *av_[] = { __VA_ARGS__, NULL };        \
        run_argv((r), (c), av_);                          \
    } while (0)

/* Runs a command, checks its exit status and that stdout (or stderr, for
 * exit 2) holds `want` (NULL: anything). */
#define EXPECT(c, code, want, ...)                        \
    do {                                                  \
        proc_res r_;                                      \
        RUN(&r_, (c), __VA_ARGS__);                       \
        expect_run(&r_, (code), (want));                  \
        proc_res_free(&r_);                               \
    } while (0)

static void expect_run(const proc_res *r, int code, const char *want)
{
    if (r->code != code)
        fail_msg("%s: exit %d, want %d\nstdout: %s\nstderr: %s", r->cmd, r->code, code, r->out, r->err);
    const char *where = code == 2 ? r->err : r->out;
    if (want != NULL && strstr(where, want) == NULL)
        fail_msg("%s: %s lacks \"%s\"\nstdout: %s\nstderr: %s", r->cmd, code == 2 ? "stderr" : "stdout", want,
                 r->out, r->err);
}

/* A teacher run of 40 steps with a checkpoint every 10 (the newest two, at
 * steps 30 and 40, stay registered), trained at 2 threads. */
static void train_run(const proc_ctx *c)
{
    EXPECT(c, 0, "40 steps", "train", "--task", "teacher", "--steps", "40", "--checkpoint-every", "10", "--db",
           "r.db", "--name", "x", "--threads", "2", "--no-progress");
}

static sqlite3 *db_open(const proc_ctx *c)
{
    char path[PATH_MAX];
    proc_tpath(c, "r.db", path, sizeof path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static void db_exec(const proc_ctx *c, const char *sql)
{
    sqlite3 *db = db_open(c);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* One integer from a query (-1 for NULL). */
static long long db_int(const proc_ctx *c, const char *sql)
{
    sqlite3 *db = db_open(c);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* The path of the checkpoint registered at step (copied into out). */
static void ckpt_path(const proc_ctx *c, int step, char *out, size_t cap)
{
    sqlite3 *db = db_open(c);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT path FROM checkpoints WHERE run = 1 AND step = ?1", -1, &st,
                                        NULL), SQLITE_OK);
    sqlite3_bind_int(st, 1, step);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_clean_run_proved(void **state)
{
    const proc_ctx *c = *state;
    train_run(c);
    EXPECT(c, 0, "proved", "audit", "x", "--db", "r.db", "--record-only");
    EXPECT(c, 0, "steps 0..40 re-executed at 1 thread", "audit", "x", "--db", "r.db", "--threads", "1");
    EXPECT(c, 0, "steps 0..40 re-executed at 3 threads", "audit", "1", "--db", "r.db", "--threads", "3");
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE run = 1 AND verdict = 'proved' AND steps = 40 "
                               "AND first_bad_step IS NULL"), 3);
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE mode = 'record-only'"), 1);
    assert_int_equal(db_int(c, "SELECT threads FROM audits WHERE id = 3"), 3);
    EXPECT(c, 0, "proved full, steps 0..40", "show", "x", "--db", "r.db");
    EXPECT(c, 0, "audits:", "show", "x", "--db", "r.db");
    /* Bad input: exit 2. */
    EXPECT(c, 2, "nope", "audit", "nope", "--db", "r.db");
    EXPECT(c, 2, "no such database", "audit", "x", "--db", "missing.db");
    EXPECT(c, 2, "--certificate", "audit", "x", "--db", "r.db", "--certificate");
}

static void test_edited_rows_found(void **state)
{
    const proc_ctx *c = *state;
    train_run(c);
    db_exec(c, "UPDATE steps SET loss_bits = loss_bits + 1 WHERE run = 1 AND step = 7");
    EXPECT(c, 1, "failed at step 7", "audit", "x", "--db", "r.db", "--record-only");
    EXPECT(c, 1, "failed at step 7", "audit", "x", "--db", "r.db", "--threads", "3");
    db_exec(c, "UPDATE steps SET loss_bits = loss_bits - 1 WHERE run = 1 AND step = 7");
    db_exec(c, "UPDATE steps SET param_hash = param_hash + 1 WHERE run = 1 AND step = 12");
    EXPECT(c, 1, "failed at step 12", "audit", "x", "--db", "r.db", "--record-only");
    EXPECT(c, 1, "param hash", "audit", "x", "--db", "r.db", "--threads", "1");
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE verdict = 'failed' AND first_bad_step = 7"), 2);
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE verdict = 'failed' AND first_bad_step = 12"), 2);
    assert_int_equal(db_int(c, "SELECT steps FROM audits WHERE id = 4"), 11);
    EXPECT(c, 0, "failed full at step 12", "show", "x", "--db", "r.db");
    /* The config hash edited: a finding that is no step's. */
    db_exec(c, "UPDATE steps SET param_hash = param_hash - 1 WHERE run = 1 AND step = 12");
    db_exec(c, "UPDATE runs SET config_hash = config_hash + 1 WHERE id = 1");
    EXPECT(c, 1, "config hash", "audit", "x", "--db", "r.db", "--record-only");
    EXPECT(c, 1, "config hash", "audit", "x", "--db", "r.db");
}

static void test_checkpoint_altered_found(void **state)
{
    const proc_ctx *c = *state;
    train_run(c);
    char path[PATH_MAX];
    ckpt_path(c, 30, path, sizeof path);
    size_t len;
    char *keep = proc_read_file(path, &len, 1);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 100, SEEK_SET), 0);
    int ch = fgetc(f);
    assert_int_equal(fseek(f, 100, SEEK_SET), 0);
    fputc(ch ^ 1, f);
    fclose(f);
    EXPECT(c, 1, "failed at step 30", "audit", "x", "--db", "r.db", "--record-only");
    EXPECT(c, 1, "failed at step 30", "audit", "x", "--db", "r.db", "--threads", "3");
    assert_int_equal(unlink(path), 0);
    EXPECT(c, 1, "missing", "audit", "x", "--db", "r.db", "--record-only");
    EXPECT(c, 1, "failed at step 30", "audit", "x", "--db", "r.db", "--threads", "1");
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(keep, 1, len, f), len);
    fclose(f);
    free(keep);
    EXPECT(c, 0, "proved", "audit", "x", "--db", "r.db", "--record-only");
    EXPECT(c, 0, "proved", "audit", "x", "--db", "r.db", "--threads", "2");
}

/* Writes text to the test directory's file name. */
static void write_text(const proc_ctx *c, const char *name, const char *text)
{
    char path[PATH_MAX];
    proc_tpath(c, name, path, sizeof path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* text with the first `from` replaced by `to` (malloc'ed). */
static char *replaced(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (at == NULL)
        fail_msg("the certificate lacks \"%s\":\n%s", from, text);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return s;
}

static void test_certificate(void **state)
{
    const proc_ctx *c = *state;
    train_run(c);
    EXPECT(c, 0, "proved", "audit", "x", "--db", "r.db", "--threads", "2", "--certificate", "c.json");
    EXPECT(c, 0, "reproduced", "reproduce", "c.json", "--threads", "1");
    EXPECT(c, 0, "reproduced", "reproduce", "c.json", "--threads", "3");
    EXPECT(c, 0, "proved", "audit", "x", "--db", "r.db", "--record-only", "--certificate", "rc.json");
    EXPECT(c, 0, "reproduced", "reproduce", "rc.json");
    /* The certificate is refused as a path inside the record. */
    EXPECT(c, 2, NULL, "audit", "x", "--db", "r.db", "--certificate", "r.db");
    char path[PATH_MAX];
    proc_tpath(c, "c.json", path, sizeof path);
    char *cert = proc_read_file(path, NULL, 1);
    assert_non_null(strstr(cert, "\"verdict\": \"proved\""));
    assert_non_null(strstr(cert, "\"steps\": 40"));
    /* One config key changed: it no longer reproduces. */
    char *lr = replaced(cert, "lr=0x1.47ae14p-7", "lr=0x1p-6");
    write_text(c, "lr.json", lr);
    EXPECT(c, 1, "differs", "reproduce", "lr.json", "--threads", "2");
    free(lr);
    /* Malformed: exit 2 naming the field. */
    char *bad = replaced(cert, "\"trajectory\": \"", "\"trajectory\": \"zz");
    write_text(c, "bad1.json", bad);
    EXPECT(c, 2, "\"trajectory\"", "reproduce", "bad1.json");
    free(bad);
    bad = replaced(cert, "\"steps\"", "\"stepz\"");
    write_text(c, "bad2.json", bad);
    EXPECT(c, 2, "\"stepz\"", "reproduce", "bad2.json");
    free(bad);
    bad = replaced(cert, "\"verdict\": \"proved\",", "");
    write_text(c, "bad3.json", bad);
    EXPECT(c, 2, "\"verdict\": missing", "reproduce", "bad3.json");
    free(bad);
    bad = replaced(cert, "task=teacher", "task=teacher=");
    write_text(c, "bad4.json", bad);
    EXPECT(c, 2, "\"config\"", "reproduce", "bad4.json");
    free(bad);
    write_text(c, "bad5.json", "{\"lockstep\": \"0.2.0\"");
    EXPECT(c, 2, "\"lockstep\"", "reproduce", "bad5.json");
    write_text(c, "bad6.json", "");
    EXPECT(c, 2, "not a certificate", "reproduce", "bad6.json");
    EXPECT(c, 2, NULL, "reproduce", "nothere.json");
    free(cert);
}

/* The data named by the config are not the data loaded now: the config
 * text is edited to another data_hash, with its hash made consistent, so
 * only the data (and the trajectory, which starts from the config text) can
 * tell. The full audit names data_hash; the record-only one finds step 0. */
static void test_data_identity(void **state)
{
    const proc_ctx *c = *state;
    train_run(c);
    sqlite3 *db = db_open(c);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT config_text FROM runs WHERE id = 1", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    char text[4096];
    snprintf(text, sizeof text, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    char *at = strstr(text, "data_hash=");
    assert_non_null(at);
    char *eol = strchr(at, '\n');
    assert_non_null(eol);
    char edited[4096];
    snprintf(edited, sizeof edited, "%.*sdata_hash=12345%s", (int)(at - text), text, eol);
    uint64_t h = hash_bytes(edited, strlen(edited));
    int64_t hi;
    memcpy(&hi, &h, sizeof hi);
    assert_int_equal(sqlite3_prepare_v2(db, "UPDATE runs SET config_text = ?1, config_hash = ?2 WHERE id = 1", -1,
                                        &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, edited, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, hi);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
    EXPECT(c, 1, "data_hash", "audit", "x", "--db", "r.db", "--threads", "2");
    EXPECT(c, 1, "failed at step 0", "audit", "x", "--db", "r.db", "--record-only");
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_audit", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clean_run_proved, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_edited_rows_found, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_altered_found, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_certificate, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_data_identity, setup_dir, proc_ctx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
