/* test_record_ext.c — runs of other frameworks in the record (ls_record_*),
 * the canonical tensor hash, per-tensor hashes of lockstep's own runs,
 * ls_verify_ex (the first differing tensor, the loss tolerance), golden
 * files of recorded runs (v2) and the schema 1 → 2 upgrade.
 *
 * Independent paths: the tensor hash is recomputed here with the shared
 * libxxhash over the bytes laid out as docs/formats.md says; the first
 * differing tensor is found here by memcmp over the tensors the test kept;
 * a version-1 database is written here with raw sqlite3 from the version-1
 * schema text; a lockstep run's per-tensor hashes are checked against the
 * tensors `lockstep export --weights` writes, read back by a small
 * safetensors reader here, at several thread counts (1, 2, 3, 8).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "include/lockstep.h"
#include "record/runlog.h"
#include "tests/proc_util.h"

static char g_bin[PATH_MAX];

/* ---- the documented tensor hash, computed here ------------------------------ */

static void put_u64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

/* XXH3_64bits over name 0 dtype 0 ndim dims bytes, as docs/formats.md says
 * (this host is little-endian, so the bytes in memory are the LE bytes). */
static uint64_t doc_tensor_hash(const char *name, const char *dtype, size_t ndim, const size_t *shape,
                                const void *data, size_t nbytes)
{
    size_t n = strlen(name) + 1 + strlen(dtype) + 1 + 8 + 8 * ndim + nbytes;
    unsigned char *b = malloc(n);
    assert_non_null(b);
    size_t o = 0;
    memcpy(b + o, name, strlen(name) + 1);
    o += strlen(name) + 1;
    memcpy(b + o, dtype, strlen(dtype) + 1);
    o += strlen(dtype) + 1;
    put_u64(b + o, ndim);
    o += 8;
    for (size_t i = 0; i < ndim; i++, o += 8)
        put_u64(b + o, shape[i]);
    if (nbytes > 0)
        memcpy(b + o, data, nbytes);
    uint64_t h = XXH3_64bits(b, n);
    free(b);
    return h;
}

static void test_tensor_hash_documented(void **state)
{
    (void)state;
    float w[6] = { 1.5f, -2.0f, 0.0f, -0.0f, 3.25f, 1e-30f };
    size_t sh[2] = { 2, 3 };
    ls_tensor_data t = { "layer.0.weight", "float32", 2, sh, w, sizeof w };
    assert_int_equal(ls_tensor_check(&t, NULL), LS_OK);
    assert_true(ls_tensor_hash(&t) == doc_tensor_hash("layer.0.weight", "float32", 2, sh, w, sizeof w));
    /* Same bytes under another name, dtype or shape: another hash. */
    size_t sh2[2] = { 3, 2 };
    ls_tensor_data t2 = t;
    t2.shape = sh2;
    assert_true(ls_tensor_hash(&t2) != ls_tensor_hash(&t));
    t2 = t;
    t2.name = "layer.0.weights";
    assert_true(ls_tensor_hash(&t2) != ls_tensor_hash(&t));
    t2 = t;
    t2.dtype = "int32";
    assert_true(ls_tensor_hash(&t2) != ls_tensor_hash(&t));

    /* bfloat16 through its 2-byte patterns, never upcast: the hash is the
     * XXH3 of the patterns, not of the float32 values they stand for. */
    uint16_t bf[3] = { 0x3f80, 0xc000, 0x7fc0 };   /* 1, -2, NaN */
    size_t sb[1] = { 3 };
    ls_tensor_data b = { "bias", "bfloat16", 1, sb, bf, sizeof bf };
    assert_int_equal(ls_tensor_check(&b, NULL), LS_OK);
    assert_true(ls_tensor_hash(&b) == doc_tensor_hash("bias", "bfloat16", 1, sb, bf, sizeof bf));
    float up[3] = { 1.0f, -2.0f, NAN };
    assert_true(ls_tensor_hash(&b) != doc_tensor_hash("bias", "float32", 1, sb, up, sizeof up));
    assert_true(ls_tensor_hash(&b) != doc_tensor_hash("bias", "bfloat16", 1, sb, up, sizeof up));
    /* A scalar: ndim 0, no dims. */
    double x = 2.5;
    ls_tensor_data s = { "step_size", "float64", 0, NULL, &x, sizeof x };
    assert_int_equal(ls_tensor_check(&s, NULL), LS_OK);
    assert_true(ls_tensor_hash(&s) == doc_tensor_hash("step_size", "float64", 0, NULL, &x, sizeof x));

    /* The step's parameter hash: name 0 hash-LE per tensor, in sorted-name
     * order, whatever order they are given in. */
    const char *names[3] = { "z", "a.b", "a" };
    uint64_t hs[3] = { 0x1111, 0x2222, 0x3333 };
    unsigned char buf[64];
    size_t o = 0;
    const int order[3] = { 2, 1, 0 };   /* "a" < "a.b" < "z" */
    for (int k = 0; k < 3; k++) {
        size_t l = strlen(names[order[k]]) + 1;
        memcpy(buf + o, names[order[k]], l);
        o += l;
        put_u64(buf + o, hs[order[k]]);
        o += 8;
    }
    assert_true(ls_tensor_set_hash(names, hs, 3) == XXH3_64bits(buf, o));
}

static int64_t raw_int_db(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* ---- recording, verifying --------------------------------------------------- */

typedef struct {
    char dir[128];
    char db[256];
} ctx;

static int setup(void **state)
{
    ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return -1;
    snprintf(c->dir, sizeof c->dir, "/tmp/lockstep-recext-XXXXXX");
    if (mkdtemp(c->dir) == NULL) {
        free(c);
        return -1;
    }
    snprintf(c->db, sizeof c->db, "%s/runs.db", c->dir);
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    ctx *c = *state;
    if (c != NULL)
        proc_rm_tree(c->dir, 0);
    free(c);
    return 0;
}

/* The tensors of the toy "model" at step s: three tensors given out of name
 * order, one of them bfloat16. With bump_step > 0, tensor `bump` gets one
 * element changed from that step on. */
#define TOY_N 3
typedef struct {
    float w[12];
    uint16_t bias[4];
    int32_t count[2];
} toy;

static void toy_at(toy *t, int s, int bump_step, const char *bump)
{
    for (int i = 0; i < 12; i++)
        t->w[i] = (float)(s * 0.25 + i);
    for (int i = 0; i < 4; i++)
        t->bias[i] = (uint16_t)(0x3f80 + s + i);
    t->count[0] = s;
    t->count[1] = 7;
    if (bump_step > 0 && s >= bump_step) {
        if (strcmp(bump, "w.weight") == 0)
            t->w[5] += 1.0f;
        else if (strcmp(bump, "b.bias") == 0)
            t->bias[2] ^= 1;   /* the last bit of a bfloat16: still another pattern */
        else
            t->count[1] += 1;
    }
}

static const size_t W_SHAPE[2] = { 3, 4 }, B_SHAPE[1] = { 4 }, C_SHAPE[1] = { 2 };

static void toy_tensors(toy *t, ls_tensor_data out[TOY_N])
{
    out[0] = (ls_tensor_data){ "w.weight", "float32", 2, W_SHAPE, t->w, sizeof t->w };
    out[1] = (ls_tensor_data){ "c.count", "int32", 1, C_SHAPE, t->count, sizeof t->count };
    out[2] = (ls_tensor_data){ "b.bias", "bfloat16", 1, B_SHAPE, t->bias, sizeof t->bias };
}

static double toy_loss(int s, double scale_from, int from_step)
{
    double l = 1.0 / (double)s;
    return from_step > 0 && s >= from_step ? l * scale_from : l;
}

static void record_toy(const char *db, const char *name, int steps, int bump_step, const char *bump,
                       double loss_scale, int loss_from)
{
    ls_err err = { "" };
    ls_recorder *r = NULL;
    assert_int_equal(ls_record_open(&r, db, name, "lr=0.1\nseed=3\n", "test 1.0", &err), LS_OK);
    for (int s = 1; s <= steps; s++) {
        toy t;
        ls_tensor_data tt[TOY_N];
        toy_at(&t, s, bump_step, bump);
        toy_tensors(&t, tt);
        if (ls_record_step(r, s, toy_loss(s, loss_scale, loss_from), tt, TOY_N, &err) != LS_OK)
            fail_msg("step %d: %s", s, err.msg);
    }
    int64_t step;
    ls_record_state(r, NULL, &step, NULL, NULL);
    assert_int_equal(step, steps);
    assert_int_equal(ls_record_close(r, LS_OK, &err), LS_OK);
}

/* The first tensor, in name order, whose bytes differ between two toys:
 * found by memcmp, not by hashes. */
static const char *toy_first_diff(const toy *a, const toy *b)
{
    static const char *const sorted[TOY_N] = { "b.bias", "c.count", "w.weight" };
    for (int k = 0; k < TOY_N; k++) {
        int d = strcmp(sorted[k], "b.bias") == 0 ? memcmp(a->bias, b->bias, sizeof a->bias)
              : strcmp(sorted[k], "c.count") == 0 ? memcmp(a->count, b->count, sizeof a->count)
              : memcmp(a->w, b->w, sizeof a->w);
        if (d != 0)
            return sorted[k];
    }
    return "";
}

static void test_record_and_verify(void **state)
{
    ctx *c = *state;
    ls_err err = { "" };
    record_toy(c->db, "base", 6, 0, NULL, 1.0, 0);
    record_toy(c->db, "again", 6, 0, NULL, 1.0, 0);
    ls_verify_result v;
    assert_int_equal(ls_verify_ex(c->db, "base", "again", NULL, &v, &err), LS_OK);
    assert_int_equal(v.verdict.equal, 1);
    assert_int_equal(v.verdict.first_diff, -1);
    assert_int_equal(v.verdict.steps, 6);
    assert_string_equal(v.first_tensor, "");

    const char *bumps[2] = { "w.weight", "b.bias" };
    for (int k = 0; k < 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "bump-%d", k);
        record_toy(c->db, name, 6, 3, bumps[k], 1.0, 0);
        assert_int_equal(ls_verify_ex(c->db, "base", name, NULL, &v, &err), LS_OK);
        assert_int_equal(v.verdict.equal, 0);
        assert_int_equal(v.verdict.first_diff, 3);
        toy a, b;
        toy_at(&a, 3, 0, NULL);
        toy_at(&b, 3, 3, bumps[k]);
        assert_string_equal(v.first_tensor, toy_first_diff(&a, &b));
        assert_true(v.loss_a == 1.0 / 3 && v.loss_b == 1.0 / 3);
    }

    /* The record: every step committed, names once, per-tensor hashes as
     * the documented hash of what was given. */
    runlog *r;
    assert_int_equal(runlog_open(&r, c->db, &err), LS_OK);
    int64_t id;
    assert_int_equal(runlog_find(r, "base", &id, &err), LS_OK);
    runlog_run run;
    assert_int_equal(runlog_get_run(r, id, &run, &err), LS_OK);
    assert_int_equal(run.external, 1);
    assert_string_equal(run.framework, "test 1.0");
    assert_string_equal(run.model, "external");
    assert_string_equal(run.status, "done");
    assert_int_equal(run.n_steps, 6);
    runlog_run_free(&run);
    runlog_tensor *tn;
    size_t nt;
    assert_int_equal(runlog_tensors(r, id, &tn, &nt, &err), LS_OK);
    assert_int_equal(nt, TOY_N);
    assert_string_equal(tn[0].name, "b.bias");
    assert_string_equal(tn[1].name, "c.count");
    assert_string_equal(tn[2].name, "w.weight");
    assert_string_equal(tn[2].shape, "3x4");
    uint64_t *h;
    size_t nh;
    assert_int_equal(runlog_step_hashes(r, id, 2, &h, &nh, &err), LS_OK);
    assert_int_equal(nh, TOY_N);
    toy t2;
    toy_at(&t2, 2, 0, NULL);
    assert_true(h[0] == doc_tensor_hash("b.bias", "bfloat16", 1, B_SHAPE, t2.bias, sizeof t2.bias));
    assert_true(h[2] == doc_tensor_hash("w.weight", "float32", 2, W_SHAPE, t2.w, sizeof t2.w));
    free(h);
    free(tn);
    runlog_close(r);
}

static void test_loss_tolerance(void **state)
{
    ctx *c = *state;
    ls_err err = { "" };
    record_toy(c->db, "ref", 6, 0, NULL, 1.0, 0);
    /* Loss a hair off from step 2 (relative 1e-12), far off from step 5 is
     * not possible with one scale: two runs. */
    record_toy(c->db, "hair", 6, 0, NULL, 1.0 + 1e-12, 2);
    record_toy(c->db, "far", 6, 0, NULL, 1.5, 5);
    ls_verify_opts o = { .size = sizeof o, .loss_tolerance = 1, .loss_rtol = 1e-9, .loss_atol = 0 };
    ls_verify_result v;
    assert_int_equal(ls_verify_ex(c->db, "hair", "ref", &o, &v, &err), LS_OK);
    assert_int_equal(v.verdict.first_diff, 2);   /* where the bits split */
    assert_string_equal(v.first_tensor, "");     /* the parameters are equal there */
    assert_int_equal(v.tol_first, -1);           /* never mattered */
    o.loss_rtol = 0;
    assert_int_equal(ls_verify_ex(c->db, "hair", "ref", &o, &v, &err), LS_OK);
    assert_int_equal(v.tol_first, 2);
    o.loss_rtol = 0.1;
    o.loss_atol = 1e-3;
    assert_int_equal(ls_verify_ex(c->db, "far", "ref", &o, &v, &err), LS_OK);
    assert_int_equal(v.verdict.first_diff, 5);
    assert_int_equal(v.tol_first, 5);
    assert_true(v.tol_loss_a == toy_loss(5, 1.5, 5) && v.tol_loss_b == toy_loss(5, 1.0, 0));
    /* The rule at its edge, and NaNs. */
    assert_true(runlog_loss_within(1.1, 1.0, 0.1 + 1e-12, 0));
    assert_false(runlog_loss_within(1.2, 1.0, 0.1, 0.05));
    assert_true(runlog_loss_within(NAN, NAN, 0, 0));
    assert_false(runlog_loss_within(NAN, 1.0, 1e300, 1e300));
    /* Bad options. */
    o.loss_rtol = -1;
    assert_int_equal(ls_verify_ex(c->db, "far", "ref", &o, &v, &err), LS_EINVAL);
    o.size = 8;
    assert_int_equal(ls_verify_ex(c->db, "far", "ref", &o, &v, &err), LS_EINVAL);
}

static void test_bad_steps(void **state)
{
    ctx *c = *state;
    ls_err err = { "" };
    ls_recorder *r;
    assert_int_equal(ls_record_open(&r, c->db, "bad", NULL, NULL, &err), LS_OK);
    toy t;
    ls_tensor_data tt[TOY_N + 1];
    toy_at(&t, 1, 0, NULL);
    toy_tensors(&t, tt);
    assert_int_equal(ls_record_step(r, 2, 1.0, tt, TOY_N, &err), LS_EINVAL);   /* steps start at 1 */
    assert_non_null(strstr(err.msg, "step 2"));
    assert_int_equal(ls_record_step(r, 1, 1.0, tt, TOY_N, &err), LS_OK);
    toy_at(&t, 2, 0, NULL);
    toy_tensors(&t, tt);
    struct { const char *what, *name, *dtype; size_t nbytes; const char *want; } bad[] = {
        { "unknown dtype", "w.weight", "float8", sizeof t.w, "unknown dtype 'float8'" },
        { "nbytes", "w.weight", "float32", sizeof t.w - 4, "nbytes 44" },
        { "dtype vs bytes", "w.weight", "float64", sizeof t.w, "nbytes 48" },
        { "duplicate", "c.count", "float32", sizeof t.w, "'c.count': given twice" },
        { "another name", "v.weight", "float32", sizeof t.w, "'v.weight': not among" },
        { "empty name", "", "float32", sizeof t.w, "empty name" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ls_tensor_data b[TOY_N];
        memcpy(b, tt, sizeof b);
        b[0].name = bad[k].name;
        b[0].dtype = bad[k].dtype;
        b[0].nbytes = bad[k].nbytes;
        err.msg[0] = 0;
        assert_int_equal(ls_record_step(r, 2, 0.5, b, TOY_N, &err), LS_EINVAL);
        if (strstr(err.msg, bad[k].want) == NULL)
            fail_msg("%s: '%s' does not say '%s'", bad[k].what, err.msg, bad[k].want);
    }
    /* A tensor fewer: the one missing named. */
    assert_int_equal(ls_record_step(r, 2, 0.5, tt + 1, TOY_N - 1, &err), LS_EINVAL);
    /* Nothing was recorded: step 2 may still be given. */
    assert_int_equal(ls_record_step(r, 2, 0.5, tt, TOY_N, &err), LS_OK);
    assert_int_equal(ls_record_close(r, LS_EINTR, &err), LS_OK);
    runlog *rl;
    assert_int_equal(runlog_open(&rl, c->db, &err), LS_OK);
    int64_t id;
    assert_int_equal(runlog_find(rl, "bad", &id, &err), LS_OK);
    ls_step *rows;
    size_t n;
    assert_int_equal(runlog_read_steps(rl, id, &rows, &n, &err), LS_OK);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].step, 1);
    assert_int_equal(rows[1].step, 2);
    free(rows);
    runlog_run run;
    assert_int_equal(runlog_get_run(rl, id, &run, &err), LS_OK);
    assert_string_equal(run.status, "interrupted");
    assert_string_equal(run.framework, "unknown");
    runlog_run_free(&run);
    runlog_close(rl);
    /* A taken name. */
    assert_int_equal(ls_record_open(&r, c->db, "bad", "", "x", &err), LS_EEXIST);
}

/* Hashing every K-th step only: the other steps keep their loss, parameter
 * hash 0 and no vector; the tensor set is fixed by the first hashed step. */
static void test_every_k(void **state)
{
    ctx *c = *state;
    ls_err err = { "" };
    for (int k = 0; k < 2; k++) {
        ls_recorder *r;
        assert_int_equal(ls_record_open(&r, c->db, k ? "k-b" : "k-a", "", "x", &err), LS_OK);
        for (int s = 1; s <= 6; s++) {
            toy t;
            ls_tensor_data tt[TOY_N];
            toy_at(&t, s, k ? 5 : 0, "c.count");
            toy_tensors(&t, tt);
            assert_int_equal(ls_record_step(r, s, 1.0 / s, s % 2 == 0 ? NULL : tt, s % 2 == 0 ? 0 : TOY_N, &err),
                             LS_OK);
        }
        assert_int_equal(ls_record_close(r, LS_OK, &err), LS_OK);
    }
    ls_verify_result v;
    assert_int_equal(ls_verify_ex(c->db, "k-a", "k-b", NULL, &v, &err), LS_OK);
    assert_int_equal(v.verdict.first_diff, 5);   /* step 6 is not hashed; step 5 is */
    assert_string_equal(v.first_tensor, "c.count");
    assert_int_equal(raw_int_db(c->db, "SELECT param_hash FROM steps WHERE run = 1 AND step = 4"), 0);
    assert_int_equal(raw_int_db(c->db, "SELECT count(*) FROM step_tensors WHERE run = 1"), 3);
}

/* ---- golden files of recorded runs ------------------------------------------ */

static void test_golden_v2(void **state)
{
    ctx *c = *state;
    ls_err err = { "" };
    char path[300];
    snprintf(path, sizeof path, "%s/toy.golden", c->dir);
    record_toy(c->db, "g-base", 5, 0, NULL, 1.0, 0);
    record_toy(c->db, "g-same", 5, 0, NULL, 1.0, 0);
    record_toy(c->db, "g-bump", 5, 4, "b.bias", 1.0, 0);
    record_toy(c->db, "g-short", 4, 0, NULL, 1.0, 0);
    record_toy(c->db, "g-loss", 5, 0, NULL, 2.0, 2);
    assert_int_equal(ls_golden_save(c->db, "g-base", path, &err), LS_OK);
    ls_golden_result g;
    assert_int_equal(ls_golden_compare(c->db, "g-same", path, &g, &err), LS_OK);
    assert_int_equal(g.equal, 1);
    assert_int_equal(g.steps, 5);
    assert_int_equal(ls_golden_compare(c->db, "g-bump", path, &g, &err), LS_OK);
    assert_int_equal(g.equal, 0);
    assert_int_equal(g.first_diff, 4);
    assert_string_equal(g.first_tensor, "b.bias");
    assert_true(g.has_loss && g.loss_file == 0.25 && g.loss_run == 0.25);
    assert_int_equal(ls_golden_compare(c->db, "g-short", path, &g, &err), LS_OK);
    assert_int_equal(g.equal, 0);
    assert_int_equal(g.first_diff, 5);
    assert_int_equal(ls_golden_compare(c->db, "g-loss", path, &g, &err), LS_OK);
    assert_int_equal(g.first_diff, 2);
    assert_string_equal(g.first_tensor, "");
    assert_true(g.loss_file == 0.5 && g.loss_run == 1.0);
    /* The file's text as documented: magic, run line, a tensor line. */
    char *text = proc_read_file(path, NULL, 1);
    static const char head[] = "# lockstep golden v2\n# run external test 1.0\n# config\nlr=0.1\nseed=3\n";
    assert_true(strncmp(text, head, strlen(head)) == 0);
    assert_non_null(strstr(text, "\n2 float32 3x4 w.weight\n"));
    free(text);
    /* A damaged file: the line named. */
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs("6 zz\n", f);
    fclose(f);
    assert_int_equal(ls_golden_compare(c->db, "g-same", path, &g, &err), LS_EFORMAT);
    if (strstr(err.msg, "line 16: expected") == NULL)
        fail_msg("%s", err.msg);
}

/* ---- schema version 1 → 2 ---------------------------------------------------- */

/* Schema version 1 as lockstep 1.0 wrote it (record/runlog.c before version 2). */
static const char V1_SCHEMA[] =
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, model TEXT, task TEXT,"
    " config_text TEXT NOT NULL, config_hash INTEGER NOT NULL, status TEXT NOT NULL"
    " CHECK(status IN ('running','done','interrupted','diverged','failed')), started TEXT NOT NULL, ended TEXT,"
    " engine_version TEXT, compiler TEXT, cflags TEXT, host TEXT, cpu TEXT, threads INTEGER, reduce TEXT,"
    " git_commit TEXT, pid INTEGER, pid_start INTEGER, boot_id TEXT, target_steps INTEGER, checkpoint_every INTEGER,"
    " checkpoint_dir TEXT) STRICT;"
    "CREATE TABLE steps(run INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL, loss REAL,"
    " loss_bits INTEGER, param_hash INTEGER NOT NULL, traj_hash INTEGER NOT NULL, seconds REAL,"
    " PRIMARY KEY(run, step)) STRICT, WITHOUT ROWID;"
    "CREATE TABLE evals(run INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL, name TEXT NOT NULL,"
    " value REAL, PRIMARY KEY(run, step, name)) STRICT, WITHOUT ROWID;"
    "CREATE TABLE checkpoints(run INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL, path TEXT NOT NULL,"
    " state_hash INTEGER, created TEXT NOT NULL) STRICT;"
    "CREATE INDEX checkpoints_run_step ON checkpoints(run, step);"
    "CREATE TABLE verdicts(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, run_a INTEGER REFERENCES runs(id),"
    " run_b INTEGER REFERENCES runs(id), equal INTEGER NOT NULL, first_diff_step INTEGER, detail TEXT,"
    " created TEXT NOT NULL) STRICT;"
    "PRAGMA application_id=1280004948; PRAGMA user_version=1;";

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", path, msg);
    sqlite3_close(db);
}

static int64_t raw_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void test_migrate_v1(void **state)
{
    ctx *c = *state;
    ls_err err = { "" };
    assert_int_equal(RUNLOG_APPLICATION_ID, 1280004948);
    raw_exec(c->db, V1_SCHEMA);
    /* Two old runs, 4 steps each, differing at step 2 (a parameter hash). */
    char sql[4096];
    size_t o = 0;
    for (int run = 1; run <= 2; run++) {
        o += (size_t)snprintf(sql + o, sizeof sql - o,
                              "INSERT INTO runs(id, name, model, task, config_text, config_hash, status, started)"
                              " VALUES(%d, 'old%d', 'mlp', 'teacher', 'seed=1\n', 42, 'done', '2026-01-01');",
                              run, run);
        for (int s = 0; s < 4; s++)
            o += (size_t)snprintf(sql + o, sizeof sql - o,
                                  "INSERT INTO steps VALUES(%d, %d, %s, %s, %d, %d, 0.5);", run, s,
                                  s ? "0.5" : "NULL", s ? "4602678819172646912" : "NULL",
                                  100 + s + (run == 2 && s >= 2 ? 1000 : 0), 200 + s);
    }
    o += (size_t)snprintf(sql + o, sizeof sql - o,
                          "INSERT INTO verdicts(kind, run_a, run_b, equal, first_diff_step, created)"
                          " VALUES('verify', 1, 2, 0, 2, '2026-01-01');");
    raw_exec(c->db, sql);
    assert_int_equal(raw_int(c->db, "PRAGMA user_version"), 1);

    /* A reader that only reads (an import's source) leaves it as it is. */
    runlog *src;
    assert_int_equal(runlog_open_source(&src, c->db, &err), LS_OK);
    runlog_tensor *tn;
    size_t nt;
    assert_int_equal(runlog_tensors(src, 1, &tn, &nt, &err), LS_OK);
    assert_int_equal(nt, 0);
    runlog_close(src);
    assert_int_equal(raw_int(c->db, "PRAGMA user_version"), 1);

    /* Opened to write: upgraded in place, every earlier row read back. */
    runlog *r;
    assert_int_equal(runlog_open(&r, c->db, &err), LS_OK);
    assert_int_equal(raw_int(c->db, "PRAGMA user_version"), 2);
    assert_int_equal(raw_int(c->db, "SELECT count(*) FROM sqlite_master WHERE name IN"
                                    " ('run_external', 'run_tensors', 'step_tensors')"), 3);
    for (int run = 1; run <= 2; run++) {
        runlog_run rr;
        assert_int_equal(runlog_get_run(r, run, &rr, &err), LS_OK);
        assert_int_equal(rr.external, 0);
        assert_int_equal(rr.n_steps, 3);
        assert_string_equal(rr.config_text, "seed=1\n");
        runlog_run_free(&rr);
        ls_step *rows;
        size_t n;
        assert_int_equal(runlog_read_steps(r, run, &rows, &n, &err), LS_OK);
        assert_int_equal(n, 4);
        for (size_t s = 0; s < 4; s++) {
            assert_int_equal(rows[s].step, (int64_t)s);
            assert_int_equal(rows[s].has_loss, s > 0);
            assert_true(rows[s].param_hash == (uint64_t)(100 + s + (run == 2 && s >= 2 ? 1000 : 0)));
            assert_true(rows[s].traj_hash == 200 + s);
        }
        free(rows);
    }
    runlog_verdictrow *vr;
    size_t nv;
    assert_int_equal(runlog_verdicts(r, 1, &vr, &nv, &err), LS_OK);
    assert_int_equal(nv, 1);
    free(vr);
    runlog_close(r);
    /* verify on the old runs: the step, no tensor (none were recorded). */
    ls_verify_result v;
    assert_int_equal(ls_verify_ex(c->db, "old1", "old2", NULL, &v, &err), LS_OK);
    assert_int_equal(v.verdict.first_diff, 2);
    assert_string_equal(v.first_tensor, "");
    /* And a new external run beside them. */
    record_toy(c->db, "new", 3, 0, NULL, 1.0, 0);
    assert_int_equal(raw_int(c->db, "SELECT count(*) FROM step_tensors"), 3);
    assert_int_equal(raw_int(c->db, "PRAGMA user_version"), 2);
    /* Opening again changes nothing more. */
    assert_int_equal(runlog_open(&r, c->db, &err), LS_OK);
    runlog_close(r);
    assert_int_equal(raw_int(c->db, "PRAGMA user_version"), 2);
}

/* ---- lockstep's own runs: per-tensor hashes against export --weights ------- */

/* The tensors of a .safetensors file: for name, its data (F32) and shape. A
 * reader of just what export writes: {"NAME":{"dtype":"F32","shape":[..],
 * "data_offsets":[a,b]},...}. */
static int st_find(const char *file, size_t len, const char *name, const float **data, size_t *count,
                   size_t *shape, size_t *ndim)
{
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++)
        hl |= (uint64_t)(unsigned char)file[i] << (8 * i);
    if (8 + hl > len)
        return 0;
    char *hdr = malloc(hl + 1);
    memcpy(hdr, file + 8, hl);
    hdr[hl] = 0;
    char key[300];
    snprintf(key, sizeof key, "\"%s\":{", name);
    const char *p = strstr(hdr, key);
    int ok = 0;
    if (p != NULL) {
        const char *s = strstr(p, "\"shape\":[");
        const char *d = strstr(p, "\"data_offsets\":[");
        if (s != NULL && d != NULL) {
            s += strlen("\"shape\":[");
            *ndim = 0;
            while (*s != ']') {
                shape[(*ndim)++] = strtoul(s, (char **)&s, 10);
                if (*s == ',')
                    s++;
            }
            d += strlen("\"data_offsets\":[");
            char *e;
            unsigned long a = strtoul(d, &e, 10), b = strtoul(e + 1, NULL, 10);
            *data = (const float *)(const void *)(file + 8 + hl + a);
            *count = (b - a) / 4;
            ok = 8 + hl + b <= len;
        }
    }
    free(hdr);
    return ok;
}

static void run_cli(ctx *c, const char *const *args)
{
    proc_res r;
    memset(&r, 0, sizeof r);
    proc_run_checked(&r, c->dir, g_bin, args, 120.0);
    if (r.code != 0)
        fail_msg("%s: exit %d: %s", args[0], r.code, r.err);
    proc_res_free(&r);
}

static void test_own_run_tensor_hashes(void **state)
{
    ctx *c = *state;
    ls_err err = { "" };
    static const char *const threads[] = { "1", "2", "3", "8" };
    /* teacher's tensors are small; Fashion-MNIST's MLP has tensors over
     * many of the update's pieces, whose hashes the update's threads sum
     * in parts (record/hash.h) */
    static const char *const tasks[] = { "teacher", "fashion-mnist" };
    for (size_t task = 0; task < 2; task++) {
    uint64_t *first = NULL;
    size_t n_first = 0;
    for (size_t k = 0; k < 4; k++) {
        char name[32], wpath[64];
        snprintf(name, sizeof name, "%s-t%s", tasks[task], threads[k]);
        snprintf(wpath, sizeof wpath, "w%s%s.safetensors", tasks[task], threads[k]);
        const char *train[] = { "train", "--task", tasks[task], "--steps", "4", "--db", "runs.db", "--name", name,
                                "--threads", threads[k], "--no-progress", task ? "--no-eval" : NULL, NULL };
        run_cli(c, train);
        const char *exp[] = { "export", name, "--weights", wpath, "--db", "runs.db", "--threads", "1",
                              "--no-progress", NULL };
        run_cli(c, exp);
        runlog *r;
        assert_int_equal(runlog_open(&r, c->db, &err), LS_OK);
        int64_t id;
        assert_int_equal(runlog_find(r, name, &id, &err), LS_OK);
        runlog_tensor *tn;
        size_t nt;
        assert_int_equal(runlog_tensors(r, id, &tn, &nt, &err), LS_OK);
        assert_true(nt > 1);
        uint64_t *h;
        size_t nh;
        for (int64_t s = 0; s <= 4; s++) {   /* every step has its vector, step 0 included */
            assert_int_equal(runlog_step_hashes(r, id, s, &h, &nh, &err), LS_OK);
            assert_int_equal(nh, nt);
            if (s < 4)
                free(h);
        }
        char full[300];
        snprintf(full, sizeof full, "%s/%s", c->dir, wpath);
        size_t len;
        char *file = proc_read_file(full, &len, 1);
        for (size_t i = 0; i < nt; i++) {
            const float *data = NULL;
            size_t count = 0, shape[8], ndim = 0;
            if (!st_find(file, len, tn[i].name, &data, &count, shape, &ndim))
                fail_msg("%s: no tensor %s", wpath, tn[i].name);
            uint64_t want = doc_tensor_hash(tn[i].name, "float32", ndim, shape, data, count * 4);
            if (h[i] != want)
                fail_msg("threads %s, tensor %s: record %016llx, export's bytes %016llx", threads[k], tn[i].name,
                         (unsigned long long)h[i], (unsigned long long)want);
        }
        /* Every thread count: the same vector. */
        if (first == NULL) {
            first = h;
            n_first = nh;
        } else {
            assert_int_equal(nh, n_first);
            assert_memory_equal(h, first, nh * sizeof *h);
            free(h);
        }
        free(file);
        free(tn);
        runlog_close(r);
    }
    free(first);
    }
    /* verify names the first tensor of a lockstep run too: another lr
     * changes every tensor at step 1; the first in name order is named. */
    const char *other[] = { "train", "--task", "teacher", "--steps", "2", "--db", "runs.db", "--name", "lr",
                            "--lr", "0.02", "--threads", "2", "--no-progress", NULL };
    run_cli(c, other);
    ls_verify_result v;
    if (ls_verify_ex(c->db, "teacher-t1", "lr", NULL, &v, &err) != LS_OK)
        fail_msg("verify: %s", err.msg);
    assert_int_equal(v.verdict.first_diff, 1);
    runlog *r;
    assert_int_equal(runlog_open(&r, c->db, &err), LS_OK);
    int64_t ia, ib;
    assert_int_equal(runlog_find(r, "teacher-t1", &ia, &err), LS_OK);
    assert_int_equal(runlog_find(r, "lr", &ib, &err), LS_OK);
    runlog_tensor *tn;
    size_t nt;
    uint64_t *ha, *hb;
    size_t na, nb;
    assert_int_equal(runlog_tensors(r, ia, &tn, &nt, &err), LS_OK);
    assert_int_equal(runlog_step_hashes(r, ia, 1, &ha, &na, &err), LS_OK);
    assert_int_equal(runlog_step_hashes(r, ib, 1, &hb, &nb, &err), LS_OK);
    const char *want = NULL;
    for (size_t i = 0; i < nt; i++)
        if (ha[i] != hb[i] && (want == NULL || strcmp(tn[i].name, want) < 0))
            want = tn[i].name;
    assert_non_null(want);
    assert_string_equal(v.first_tensor, want);
    char want_name[LS_TENSOR_NAME_MAX + 1];
    snprintf(want_name, sizeof want_name, "%s", want);
    free(ha);
    free(hb);
    free(tn);
    runlog_close(r);
    /* The CLI says it, and refuses to audit or resume an external run. */
    record_toy(c->db, "ext", 2, 0, NULL, 1.0, 0);
    const char *verify[] = { "verify", "teacher-t1", "lr", "--db", "runs.db", NULL };
    proc_res pr;
    memset(&pr, 0, sizeof pr);
    proc_run_checked(&pr, c->dir, g_bin, verify, 60.0);
    assert_int_equal(pr.code, 1);
    char line[400];
    snprintf(line, sizeof line, "first differing tensor at step 1: %s (in name order)", want_name);
    if (strstr(pr.out, line) == NULL)
        fail_msg("verify says '%s', not '%s'", pr.out, line);
    proc_res_free(&pr);
    const char *audit[] = { "audit", "ext", "--db", "runs.db", NULL };
    proc_run_checked(&pr, c->dir, g_bin, audit, 60.0);
    assert_int_equal(pr.code, 2);
    assert_non_null(strstr(pr.err, "nothing to re-execute"));
    proc_res_free(&pr);
    const char *resume[] = { "resume", "ext", "--db", "runs.db", NULL };
    proc_run_checked(&pr, c->dir, g_bin, resume, 60.0);
    assert_int_equal(pr.code, 2);
    assert_non_null(strstr(pr.err, "nothing to re-execute"));
    proc_res_free(&pr);
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_record_ext", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_hash_documented),
        cmocka_unit_test_setup_teardown(test_record_and_verify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loss_tolerance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_k, setup, teardown),
        cmocka_unit_test_setup_teardown(test_golden_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_own_run_tensor_hashes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
