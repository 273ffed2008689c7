/* test_audit.c — end-to-end tests of `lockstep audit` and `lockstep reproduce`
 * (tools/cmd_audit.c, LS_REOPEN_AUDIT in engine/core/session.c).
 *
 * Each case runs the real binary (LOCKSTEP_BIN, else build/lockstep) in a
 * fresh temporary directory on a small teacher run with checkpoints, then
 * attacks the record behind the binary's back with the raw sqlite3 API (a
 * step row's loss bits or parameter hash edited) or the checkpoint files (one
 * byte changed, a file removed), and checks that both the record-only and
 * the full audit find the first bad step and name it, that a clean run is
 * proved by both at several thread counts, that the verdicts land in the
 * audits table and in `show`, and that a certificate reproduces without a
 * database while one with a changed learning rate (its config hash stale,
 * or made to match) or a malformed one does not.
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

#include "include/lockstep.h"
#include <unistd.h>

#include "engine/core/audit.h"
#include "record/hash.h"
#include "tests/proc_util.h"

static char g_bin[PATH_MAX];

#define AUDIT_DEADLINE 120.0

static int setup_dir(void **state)
{
    return proc_ctx_setup(state, "/tmp/lockstep-audit-XXXXXX");
}

static void run_argv(proc_res *r, const proc_ctx *c, const char *const *argv)
{
    proc_run_checked(r, c->dir, g_bin, argv, AUDIT_DEADLINE);
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
    proc_expect(r, code, want, 0);
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
    /* One config key changed: refused, as the certificate's config_hash is
     * not the text's; with the hash made to match, it trains another
     * config, which no longer reproduces. */
    char *lr = replaced(cert, "lr=0x1.47ae14p-7", "lr=0x1p-6");
    write_text(c, "lr.json", lr);
    EXPECT(c, 2, "\"config_hash\"", "reproduce", "lr.json", "--threads", "2");
    sqlite3 *db = db_open(c);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT config_text FROM runs WHERE id = 1", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    char *text = replaced((const char *)sqlite3_column_text(q, 0), "lr=0x1.47ae14p-7", "lr=0x1p-6");
    char was[32], now[32];
    snprintf(was, sizeof was, "\"%016llx\"", (unsigned long long)hash_bytes(sqlite3_column_text(q, 0),
                                                                          (size_t)sqlite3_column_bytes(q, 0)));
    snprintf(now, sizeof now, "\"%016llx\"", (unsigned long long)hash_bytes(text, strlen(text)));
    sqlite3_finalize(q);
    sqlite3_close(db);
    char *lr2 = replaced(lr, was, now);
    write_text(c, "lr.json", lr2);
    EXPECT(c, 1, "differs", "reproduce", "lr.json", "--threads", "2");
    free(text);
    free(lr2);
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

/* Every checkpoint kept (one every 5 steps): the full audit replays 8
 * segments concurrently. Whatever the thread count, it finds what a replay
 * from step 0 finds: the first bad step over all segments (an edit in the
 * middle of a segment, two edits in different segments, a trajectory hash,
 * two checkpoint files swapped), the same step the record-only audit names. */
static void test_parallel_segments(void **state)
{
    const proc_ctx *c = *state;
    EXPECT(c, 0, "all kept", "train", "--task", "teacher", "--steps", "40", "--checkpoint-every", "5",
           "--keep-checkpoints", "all", "--db", "r.db", "--name", "x", "--threads", "2", "--no-progress");
    assert_int_equal(db_int(c, "SELECT count(*) FROM checkpoints WHERE run = 1"), 8);
    EXPECT(c, 0, "steps 0..40 re-executed at 1 thread (8 segments), 8 checkpoint files", "audit", "x", "--db",
           "r.db", "--threads", "1");
    EXPECT(c, 0, "at 3 threads (8 segments)", "audit", "x", "--db", "r.db", "--threads", "3");
    EXPECT(c, 0, "at 8 threads (8 segments)", "audit", "x", "--db", "r.db", "--threads", "8");
    EXPECT(c, 0, "at 16 threads (8 segments)", "audit", "x", "--db", "r.db", "--threads", "16");
    static const char *const threads[] = { "1", "2", "3", "8" };
    db_exec(c, "UPDATE steps SET traj_hash = traj_hash + 1 WHERE run = 1 AND step = 23");
    EXPECT(c, 1, "failed at step 23", "audit", "x", "--db", "r.db", "--record-only");
    for (size_t i = 0; i < 4; i++)
        EXPECT(c, 1, "failed at step 23 (steps 0..22 proved)", "audit", "x", "--db", "r.db", "--threads",
               threads[i]);
    db_exec(c, "UPDATE steps SET traj_hash = traj_hash - 1 WHERE run = 1 AND step = 23");
    db_exec(c, "UPDATE steps SET loss_bits = loss_bits + 1 WHERE run = 1 AND step = 17");
    EXPECT(c, 1, "failed at step 17", "audit", "x", "--db", "r.db", "--record-only");
    for (size_t i = 0; i < 4; i++)
        EXPECT(c, 1, "failed at step 17", "audit", "x", "--db", "r.db", "--threads", threads[i]);
    /* Two edits: the earlier one is named, whichever segment finishes first. */
    db_exec(c, "UPDATE steps SET param_hash = param_hash + 1 WHERE run = 1 AND step = 36");
    for (size_t i = 0; i < 4; i++)
        EXPECT(c, 1, "failed at step 17", "audit", "x", "--db", "r.db", "--threads", threads[i]);
    db_exec(c, "UPDATE steps SET loss_bits = loss_bits - 1 WHERE run = 1 AND step = 17");
    EXPECT(c, 1, "failed at step 36", "audit", "x", "--db", "r.db", "--record-only");
    for (size_t i = 0; i < 4; i++)
        EXPECT(c, 1, "failed at step 36", "audit", "x", "--db", "r.db", "--threads", threads[i]);
    db_exec(c, "UPDATE steps SET param_hash = param_hash - 1 WHERE run = 1 AND step = 36");
    /* Two checkpoint files swapped: each holds the other's step. */
    char p10[PATH_MAX], p20[PATH_MAX], tmp[PATH_MAX];
    ckpt_path(c, 10, p10, sizeof p10);
    ckpt_path(c, 20, p20, sizeof p20);
    proc_tpath(c, "swap.tmp", tmp, sizeof tmp);
    assert_int_equal(rename(p10, tmp), 0);
    assert_int_equal(rename(p20, p10), 0);
    assert_int_equal(rename(tmp, p20), 0);
    EXPECT(c, 1, "failed at step 10", "audit", "x", "--db", "r.db", "--record-only");
    for (size_t i = 0; i < 4; i++)
        EXPECT(c, 1, "failed at step 10", "audit", "x", "--db", "r.db", "--threads", threads[i]);
    assert_int_equal(rename(p10, tmp), 0);
    assert_int_equal(rename(p20, p10), 0);
    assert_int_equal(rename(tmp, p20), 0);
    EXPECT(c, 0, "proved", "audit", "x", "--db", "r.db", "--threads", "2");
    /* The verdicts: what the audit ran on, and the build. */
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE run = 1 AND build LIKE '%simd%' AND version = "
                               "'lockstep " LS_VERSION_STRING "'"), db_int(c, "SELECT count(*) FROM audits"));
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE threads = 8 AND first_bad_step = 36"), 1);
    EXPECT(c, 0, "build ", "show", "x", "--db", "r.db");
}

/* A minimal .npy (format 1.0) of descr and shape, data bytes given. */
static void write_npy(const proc_ctx *c, const char *name, const char *descr, const char *shape, const void *data,
                      size_t len)
{
    char dict[128], path[PATH_MAX];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
    proc_tpath(c, name, path, sizeof path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    const unsigned short hl = (unsigned short)((size_t)n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f);
    fputc(hl >> 8, f);
    fwrite(dict, 1, (size_t)n, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, len, f);
    assert_int_equal(fclose(f), 0);
}

/* A data file changed after the run: the full audit says the data are not
 * the run's and names the files they come from. */
static void test_changed_data_file(void **state)
{
    const proc_ctx *c = *state;
    float x[64 * 4], tx[16 * 4];
    long long y[64], ty[16];
    for (int i = 0; i < 64 * 4; i++)
        x[i] = (float)((i * 37) % 11) / 11.0f;
    for (int i = 0; i < 16 * 4; i++)
        tx[i] = (float)((i * 13) % 7) / 7.0f;
    for (int i = 0; i < 64; i++)
        y[i] = (i * 5) % 3;
    for (int i = 0; i < 16; i++)
        ty[i] = i % 3;
    write_npy(c, "tx.npy", "<f4", "(64, 4)", x, sizeof x);
    write_npy(c, "ty.npy", "<i8", "(64,)", y, sizeof y);
    write_npy(c, "vx.npy", "<f4", "(16, 4)", tx, sizeof tx);
    write_npy(c, "vy.npy", "<i8", "(16,)", ty, sizeof ty);
    EXPECT(c, 0, "20 steps", "train", "--task", "arrays", "--train-x", "tx.npy", "--train-y", "ty.npy", "--test-x",
           "vx.npy", "--test-y", "vy.npy", "--batch", "16", "--steps", "20", "--checkpoint-every", "5",
           "--keep-checkpoints", "all", "--db", "r.db", "--name", "a", "--no-progress");
    EXPECT(c, 0, "proved", "audit", "a", "--db", "r.db", "--threads", "2");
    x[5] = 0.5f;
    write_npy(c, "tx.npy", "<f4", "(64, 4)", x, sizeof x);
    EXPECT(c, 1, "data_hash", "audit", "a", "--db", "r.db", "--threads", "2");
    EXPECT(c, 1, "tx.npy", "audit", "a", "--db", "r.db", "--threads", "1");
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE verdict = 'failed' AND detail LIKE "
                               "'%train_x=%tx.npy%'"), 2);
}

/* The rule that shares the threads among segments (engine/core/audit.c):
 * the longest segment replays on all the threads while it is longer than
 * the side-by-side steps over the threads, then the rest again. */
static void test_audit_threads_rule(void **state)
{
    (void)state;
    int out[8];
    /* A default run's two segments: both on all the threads from 2 on. */
    const int64_t two[] = { 1900, 100 };
    audit_threads(two, 2, 1, out);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 1);
    static const int ts[] = { 2, 3, 8 };
    for (size_t i = 0; i < 3; i++) {
        audit_threads(two, 2, ts[i], out);
        assert_int_equal(out[0], ts[i]);
        assert_int_equal(out[1], ts[i]);
    }
    /* Equal segments, as many as the threads or more: all side by side. */
    const int64_t eq[] = { 100, 100, 100, 100, 100, 100, 100, 100 };
    for (int t = 1; t <= 8; t++) {
        audit_threads(eq, 8, t, out);
        for (size_t i = 0; i < 8; i++)
            assert_int_equal(out[i], 1);
    }
    /* Fewer segments than threads: every one on all the threads. */
    audit_threads(eq, 3, 4, out);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(out[i], 4);
    /* In between: the long one on the threads, the short ones side by side. */
    const int64_t mix[] = { 10, 1900, 100, 100, 100 };
    audit_threads(mix, 5, 2, out);
    assert_int_equal(out[1], 2);
    assert_int_equal(out[0] + out[2] + out[3] + out[4], 4);
    /* The next longest goes too when it is longer than what is left per
     * thread; two of 10 steps on 2 threads stay side by side. */
    const int64_t steps[] = { 1000, 600, 10, 10 };
    audit_threads(steps, 4, 2, out);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 2);
    assert_int_equal(out[2], 1);
    assert_int_equal(out[3], 1);
    const int64_t steps4[] = { 1000, 300, 300, 300, 300 };
    audit_threads(steps4, 5, 4, out);
    assert_int_equal(out[0], 4);
    for (size_t i = 1; i < 5; i++)
        assert_int_equal(out[i], 1);
}

/* A run that keeps its newest two checkpoints (the default): 200 steps with
 * one every 10 leave 190 and 200, so two segments, 0..190 and 190..200,
 * which replay on all the threads from 2 on. The step named is the one a
 * replay from step 0 names at every thread count: an edit in the long
 * segment, one in the short, both, the checkpoint file between them. A
 * record-only audit records no thread count, and show prints none. */
static void test_default_two_segments(void **state)
{
    const proc_ctx *c = *state;
    EXPECT(c, 0, "the last 2 kept", "train", "--task", "teacher", "--steps", "200", "--checkpoint-every", "10",
           "--db", "r.db", "--name", "x", "--threads", "1", "--no-progress");
    assert_int_equal(db_int(c, "SELECT count(*) FROM checkpoints WHERE run = 1 AND step IN (190, 200)"), 2);
    assert_int_equal(db_int(c, "SELECT count(*) FROM checkpoints WHERE run = 1"), 2);
    static const char *const threads[] = { "1", "2", "3", "8" };
    EXPECT(c, 0, "steps 0..200 re-executed at 1 thread (2 segments), 2 checkpoint files", "audit", "x", "--db",
           "r.db", "--threads", "1");
    EXPECT(c, 0, "at 2 threads (2 segments), 2 checkpoint files", "audit", "x", "--db", "r.db", "--threads", "2");
    EXPECT(c, 0, "at 3 threads (2 segments)", "audit", "x", "--db", "r.db", "--threads", "3");
    EXPECT(c, 0, "at 8 threads (2 segments)", "audit", "x", "--db", "r.db", "--threads", "8");
    db_exec(c, "UPDATE steps SET loss_bits = loss_bits + 1 WHERE run = 1 AND step = 77");
    EXPECT(c, 1, "failed at step 77", "audit", "x", "--db", "r.db", "--record-only");
    for (size_t i = 0; i < 4; i++)
        EXPECT(c, 1, "failed at step 77 (steps 0..76 proved)", "audit", "x", "--db", "r.db", "--threads",
               threads[i]);
    /* Both: the earlier is named, though the short segment finds its own. */
    db_exec(c, "UPDATE steps SET param_hash = param_hash + 1 WHERE run = 1 AND step = 195");
    for (size_t i = 0; i < 4; i++)
        EXPECT(c, 1, "failed at step 77", "audit", "x", "--db", "r.db", "--threads", threads[i]);
    db_exec(c, "UPDATE steps SET loss_bits = loss_bits - 1 WHERE run = 1 AND step = 77");
    EXPECT(c, 1, "failed at step 195", "audit", "x", "--db", "r.db", "--record-only");
    for (size_t i = 0; i < 4; i++)
        EXPECT(c, 1, "failed at step 195 (steps 0..194 proved)", "audit", "x", "--db", "r.db", "--threads",
               threads[i]);
    db_exec(c, "UPDATE steps SET param_hash = param_hash - 1 WHERE run = 1 AND step = 195");
    /* The file between the segments: the long one's last step finds it. */
    char path[PATH_MAX];
    ckpt_path(c, 190, path, sizeof path);
    size_t len;
    char *keep = proc_read_file(path, &len, 1);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 100, SEEK_SET), 0);
    int ch = fgetc(f);
    assert_int_equal(fseek(f, 100, SEEK_SET), 0);
    fputc(ch ^ 1, f);
    fclose(f);
    EXPECT(c, 1, "failed at step 190", "audit", "x", "--db", "r.db", "--record-only");
    for (size_t i = 0; i < 4; i++)
        EXPECT(c, 1, "failed at step 190 (steps 0..189 proved)", "audit", "x", "--db", "r.db", "--threads",
               threads[i]);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(keep, 1, len, f), len);
    fclose(f);
    free(keep);
    EXPECT(c, 0, "proved", "audit", "x", "--db", "r.db", "--threads", "2");
    /* Record-only audits: no thread count anywhere. */
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE mode = 'record-only'"), 3);
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE mode = 'record-only' AND threads IS NULL"), 3);
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE mode = 'full' AND threads IS NULL"), 0);
    assert_int_equal(db_int(c, "SELECT count(*) FROM audits WHERE mode = 'full' AND threads = 8"), 5);
    proc_res r;
    RUN(&r, c, "show", "x", "--db", "r.db");
    expect_run(&r, 0, "record-only at step 77");
    assert_null(strstr(r.out, "threads 0"));
    assert_non_null(strstr(r.out, "threads 8"));
    proc_res_free(&r);
    RUN(&r, c, "show", "x", "--db", "r.db", "--json");
    expect_run(&r, 0, "\"mode\": \"record-only\"");
    assert_null(strstr(r.out, "\"threads\": 0"));
    assert_non_null(strstr(r.out, "\"threads\": null"));
    proc_res_free(&r);
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
        cmocka_unit_test_setup_teardown(test_parallel_segments, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_changed_data_file, setup_dir, proc_ctx_teardown),
        cmocka_unit_test(test_audit_threads_rule),
        cmocka_unit_test_setup_teardown(test_default_two_segments, setup_dir, proc_ctx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
