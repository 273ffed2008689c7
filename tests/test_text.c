/* test_text.c — the `text` task and `lockstep sample`, on a text of
 * Debian's fortunes package (/usr/share/games/fortunes/cookie, plain ASCII;
 * make deps installs it: the case fails naming the package when it is
 * missing).
 *   - mlp on text trains to one trajectory at threads 1, 2, 3, 8 and leaves
 *     of 16 and 64 (ls_equiv, runs compared with each other, no hash
 *     written down);
 *   - the data set holds every window of the text, as this test cuts the
 *     file itself (the last 10% validating), and its identity is XXH3 of
 *     the file's XXH3 and T, computed here: another T, another byte or a
 *     --val-file give another one; an empty file and a short one are
 *     refused naming the file;
 *   - the evaluation: test_loss, test_bpb, test_acc in that order; test_loss
 *     equals the mean cross-entropy of the scores this test gets from
 *     ls_session_predict on windows it builds, computed here in binary64 in
 *     the order docs/formats.md gives (bit for bit); test_bpb = test_loss /
 *     M_LN2; with zero weights (linear, --init a file of zeros written
 *     here) every sample's loss is ln 256 = 8 ln 2, so test_loss is 8 ln 2
 *     and test_bpb 8 to rounding, and test_acc is exactly the share of NUL
 *     bytes among the validation labels (every score ties: class 0);
 *   - a feature v/255.0f gives back v as lrintf(f · 255) for every byte;
 *   - `lockstep sample` prints the same bytes at 1 and 8 threads and for
 *     the same seed twice, other bytes for another seed, and at
 *     temperature 0 the prompt and then the byte of the highest score that
 *     this test computes from ls_session_predict itself; its escapes;
 *   - gpt (the task's default model: a token network with residual
 *     branches, trained at every position) to one trajectory at threads 1,
 *     2, 3, 8 and leaves of 16, 32 and 64; a run stopped at step 3 and
 *     resumed at 8 threads ends where 6 steps in one go do; `sample` from
 *     it gives the same bytes at 1 and 8 threads; `report` writes its page.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <math.h>

#include <cmocka.h>
#include <xxhash.h>

#include "include/lockstep.h"
#include "tests/proc_util.h"

#define TEXT_FILE "/usr/share/games/fortunes/cookie"
#define DEADLINE 300.0

static char g_dir[64], g_db[128], g_bin[PATH_MAX];
static const char *g_text;

static void tpath(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", g_dir, name);
}

static void write_all(const char *name, const void *p, size_t n)
{
    char path[PATH_MAX];
    tpath(name, path, sizeof path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/lockstep-text-XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    snprintf(g_db, sizeof g_db, "%s/runs.db", g_dir);
    return proc_find_bin(g_bin, "test_text", 1) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return proc_rm_tree(g_dir, 0);
}

static unsigned char *text_bytes(size_t *len)
{
    g_text = proc_need_file(TEXT_FILE, NULL, "fortunes");
    return (unsigned char *)proc_read_file(g_text, len, 1);
}

static ls_config *text_cfg(const char *model, const char *file, const char *val, int T)
{
    ls_config *cfg;
    ls_err err;
    if (ls_config_create(&cfg, "text", model, &err) != LS_OK)
        fail_msg("config: %s", err.msg);
    char v[32];
    snprintf(v, sizeof v, "%d", T);
    assert_int_equal(ls_config_set(cfg, "file", file, &err), LS_OK);
    if (val != NULL)
        assert_int_equal(ls_config_set(cfg, "val_file", val, &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "context", v, &err), LS_OK);
    if (strcmp(model, "mlp") == 0)
        assert_int_equal(ls_config_set(cfg, "hidden", "32", &err), LS_OK);
    if (strcmp(model, "gpt") == 0)   /* a short batch: its last atom holds 5 samples */
        assert_int_equal(ls_config_set(cfg, "batch", "37", &err), LS_OK);
    return cfg;
}

static ls_status load(const ls_config *cfg, ls_dataset **d, ls_err *err)
{
    return ls_task_find("text")->load(cfg, d, err);
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

/* ---- training: one trajectory at every thread count and leaf size --------------------------- */

/* `model` trained `steps` steps at threads 1, 2, 3, 8 and every leaf of
 * leaves[0 .. n_leaves): one trajectory and one evaluation for all. */
static void equiv_threads_leaves(const char *model, const int *leaves, size_t n_leaves, int64_t steps)
{
    size_t len;
    free(text_bytes(&len));
    ls_config *cfg = text_cfg(model, g_text, NULL, 16);
    static const int threads[] = { 1, 2, 3, 8 };
    ls_equiv_opts eo = { .size = sizeof(ls_equiv_opts), .threads = threads, .n_threads = 4,
                         .session = { .size = sizeof(ls_session_opts), .steps = steps },
                         .leaves = leaves, .n_leaves = n_leaves };
    static ls_equiv_result res;
    ls_err err;
    if (ls_equiv(cfg, &eo, &res, &err) != LS_OK)
        fail_msg("%s equiv: %s", model, err.msg);
    assert_int_equal(res.n_runs, 4 * n_leaves);
    for (size_t i = 0; i < res.n_runs; i++) {
        if (!res.runs[i].same)
            fail_msg("%s threads %d leaf %d: trajectory %016llx, the first run's %016llx", model, res.runs[i].threads,
                     res.leaf[i], (unsigned long long)res.runs[i].traj_hash, (unsigned long long)res.runs[0].traj_hash);
        assert_int_equal(res.runs[i].steps, steps);
        assert_true(res.runs[i].n_metrics == 3);
        assert_memory_equal(&res.runs[i].metrics[0].value, &res.runs[0].metrics[0].value, sizeof(double));
    }
    assert_true(res.equal);
    ls_config_destroy(cfg);
}

static void test_threads_and_leaves(void **state)
{
    (void)state;
    static const int leaves[] = { 16, 64 };
    equiv_threads_leaves("mlp", leaves, 2, 8);
}

/* gpt (a token network trained at every position, residual branches):
 * one trajectory at threads 1, 2, 3, 8 and leaves 16, 32, 64 (its leaf is
 * always one atom, so the leaf changes nothing by construction; the runs
 * show it). */
static void test_gpt_threads_and_leaves(void **state)
{
    (void)state;
    static const int leaves[] = { 16, 32, 64 };
    equiv_threads_leaves("gpt", leaves, 3, 3);
}

static void run_ls(proc_res *r, const char *const *args);

/* The trajectory hash a train/resume result line ends with (16 hex digits). */
static void traj_of(const char *out, char *hash)
{
    const char *t = strstr(out, "trajectory ");
    if (t == NULL || strlen(t) < 11 + 16)
        fail_msg("no trajectory in:\n%s", out);
    memcpy(hash, t + 11, 16);
    hash[16] = '\0';
}

/* gpt: a run stopped at step 3 (a checkpoint there) and resumed at 8
 * threads to step 6 ends on the trajectory of 6 steps in one go at one
 * thread; `sample` from it gives the same bytes at 1 and 8 threads (the
 * last position's scores); `report` describes it. */
static void test_gpt_resume_sample(void **state)
{
    (void)state;
    size_t len;
    free(text_bytes(&len));
#define GPT_RUN "train", "--task", "text", "--file", g_text, "--context", "16", "--batch", "37", "--db", g_db, \
        "--no-progress"
    const char *whole[] = { GPT_RUN, "--steps", "6", "--threads", "1", "--name", "g6", NULL };
    proc_res r;
    char want[17], got[17];
    run_ls(&r, whole);
    proc_expect(&r, 0, "test_loss", 0);
    traj_of(r.out, want);
    proc_res_free(&r);
    /* Three steps with a checkpoint at the third ... */
    const char *stop3[] = { GPT_RUN, "--steps", "3", "--threads", "2", "--name", "g", "--checkpoint-every", "3",
                            NULL };
    run_ls(&r, stop3);
    proc_expect(&r, 0, "test_loss", 0);
    proc_res_free(&r);
    /* ... and resumed to step 6 at 8 threads. */
    const char *resume[] = { "resume", "g", "--steps", "6", "--threads", "8", "--db", g_db, "--no-progress", NULL };
    run_ls(&r, resume);
    proc_expect(&r, 0, NULL, 0);
    traj_of(r.out, got);
    proc_res_free(&r);
    if (strcmp(want, got) != 0)
        fail_msg("gpt: 6 steps in one go %s, 3 then resumed at 8 threads %s", want, got);

    const char *s1[] = { "sample", "g6", "--db", g_db, "--prompt", "The ", "--tokens", "100", "--temperature", "0.8",
                         "--seed", "3", "--threads", "1", "--no-progress", NULL };
    const char *s8[] = { "sample", "g6", "--db", g_db, "--prompt", "The ", "--tokens", "100", "--temperature", "0.8",
                         "--seed", "3", "--threads", "8", "--no-progress", NULL };
    run_ls(&r, s1);
    proc_expect(&r, 0, NULL, 1);
    char *a = strdup(r.out);
    proc_res_free(&r);
    run_ls(&r, s8);
    proc_expect(&r, 0, NULL, 1);
    assert_non_null(a);
    if (strcmp(a, r.out) != 0 || strncmp(a, "The ", 4) != 0 || strlen(a) < 105)
        fail_msg("gpt sample at 1 and 8 threads:\n%s\n---\n%s", a, r.out);
    proc_res_free(&r);
    free(a);
    char html[PATH_MAX];
    tpath("g6.html", html, sizeof html);
    const char *report[] = { "report", "g6", "--db", g_db, "-o", html, NULL };
    run_ls(&r, report);
    proc_expect(&r, 0, NULL, 0);
    proc_res_free(&r);
    size_t hlen;
    char *page = proc_read_file(html, &hlen, 1);
    if (strstr(page, "gpt") == NULL || strstr(page, "test_loss") == NULL)
        fail_msg("%s names neither the model nor its test_loss", html);
    free(page);
#undef GPT_RUN
}

/* ---- the data set: windows and identity ---------------------------------------------------- */

static void test_windows_and_hash(void **state)
{
    (void)state;
    size_t L;
    unsigned char *b = text_bytes(&L);
    const size_t T = 16, cut = L - L / 10;
    ls_config *cfg = text_cfg("mlp", g_text, NULL, (int)T);
    ls_dataset *d;
    ls_err err;
    assert_int_equal(load(cfg, &d, &err), LS_OK);
    assert_int_equal(d->n_classes, 256);
    assert_int_equal(d->train.n, cut - T);
    assert_int_equal(d->test.n, L - cut - T);
    assert_int_equal(d->train.dim, T);
    for (size_t i = 0; i < d->train.n; i++)
        if (memcmp(d->train.x8 + i * T, b + i, T) != 0 || d->train.y[i] != b[i + T])
            fail_msg("training window %zu is not bytes %zu..%zu of the file", i, i, i + T);
    for (size_t i = 0; i < d->test.n; i++)
        if (memcmp(d->test.x8 + i * T, b + cut + i, T) != 0 || d->test.y[i] != b[cut + i + T])
            fail_msg("validation window %zu is not bytes %zu..%zu of the file", i, cut + i, cut + i + T);
    uint8_t hb[16];
    put64(hb, XXH3_64bits(b, L));
    put64(hb + 8, T);
    assert_int_equal(d->hash, XXH3_64bits(hb, 16));
    const uint64_t h16 = d->hash;
    ls_dataset_destroy(d);
    ls_config_destroy(cfg);

    /* Another context, another byte, a validation file: another identity. */
    cfg = text_cfg("mlp", g_text, NULL, 17);
    assert_int_equal(load(cfg, &d, &err), LS_OK);
    assert_true(d->hash != h16);
    ls_dataset_destroy(d);
    ls_config_destroy(cfg);
    b[L / 2] ^= 1;
    write_all("changed.txt", b, L);
    char path[PATH_MAX], vpath[PATH_MAX];
    tpath("changed.txt", path, sizeof path);
    cfg = text_cfg("mlp", path, NULL, 16);
    assert_int_equal(load(cfg, &d, &err), LS_OK);
    assert_true(d->hash != h16);
    ls_dataset_destroy(d);
    ls_config_destroy(cfg);
    b[L / 2] ^= 1;
    write_all("val.txt", b + cut, L - cut);
    tpath("val.txt", vpath, sizeof vpath);
    cfg = text_cfg("mlp", g_text, vpath, 16);
    assert_int_equal(load(cfg, &d, &err), LS_OK);
    assert_true(d->hash != h16);
    assert_int_equal(d->train.n, L - T);
    assert_int_equal(d->test.n, L - cut - T);
    assert_memory_equal(d->test.x8, b + cut, T);
    ls_dataset_destroy(d);
    ls_config_destroy(cfg);

    /* An empty file and one of T bytes are refused, naming the file. */
    write_all("empty.txt", "", 0);
    tpath("empty.txt", path, sizeof path);
    cfg = text_cfg("mlp", path, NULL, 16);
    assert_int_equal(load(cfg, &d, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, path));
    ls_config_destroy(cfg);
    write_all("short.txt", b, 16);
    tpath("short.txt", path, sizeof path);
    cfg = text_cfg("mlp", g_text, path, 16);
    assert_int_equal(load(cfg, &d, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, path));
    ls_config_destroy(cfg);
    free(b);
}

/* ---- the evaluation -------------------------------------------------------------------------- */

static double metric(const ls_metric *m, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].name, name) == 0)
            return m[i].value;
    fail_msg("no figure %s", name);
    return 0;
}

/* The canonical tree over atoms [l, l + n) of per-atom sums a[]. */
static double tree(const double *a, size_t l, size_t n)
{
    if (n == 1)
        return a[l];
    size_t k = 1;
    while (k * 2 < n)
        k *= 2;
    return tree(a, l, k) + tree(a, l + k, n - k);
}

static void test_validation_loss(void **state)
{
    (void)state;
    size_t L;
    unsigned char *b = text_bytes(&L);
    const size_t T = 16, cut = L - L / 10, n = L - cut - T;
    ls_config *cfg = text_cfg("mlp", g_text, NULL, (int)T);
    ls_err err;
    assert_int_equal(ls_config_set(cfg, "batch", "96", &err), LS_OK);
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 2, .steps = 10 };
    ls_session *s;
    if (ls_session_open(&s, cfg, &o, &err) != LS_OK)
        fail_msg("open: %s", err.msg);
    ls_metric m[LS_MAX_METRICS];
    size_t nm = 0;
    if (ls_session_train(s, 0, 0, NULL, m, &nm, &err) != LS_OK)
        fail_msg("train: %s", err.msg);
    assert_int_equal(nm, 3);
    assert_string_equal(m[0].name, "test_loss");
    assert_string_equal(m[1].name, "test_bpb");
    assert_string_equal(m[2].name, "test_acc");

    /* Scores of every validation window, built here from the file. */
    const size_t B = 96;
    float *x = malloc(n * T * sizeof *x), *z = malloc(n * 256 * sizeof *z);
    assert_non_null(x);
    assert_non_null(z);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < T; j++)
            x[i * T + j] = (float)b[cut + i + j] / 255.0f;
    assert_int_equal(ls_session_predict(s, x, n, z, &err), LS_OK);
    /* docs/formats.md: batches of B, each the canonical tree over atoms of
     * LS_ATOM samples summed in order, the batches added in order, / n. */
    double total = 0.0, atoms[96 / LS_ATOM + 1];
    size_t correct = 0;
    for (size_t k = 0; k * B < n; k++) {
        size_t na = 0;
        for (size_t a0 = k * B; a0 < n && a0 < (k + 1) * B; a0 += LS_ATOM) {
            double sum_a = 0.0;
            for (size_t i = a0; i < a0 + LS_ATOM && i < n && i < (k + 1) * B; i++) {
                const float *zi = z + i * 256;
                size_t best = 0;
                for (size_t c = 1; c < 256; c++)
                    if (zi[c] > zi[best])
                        best = c;
                const double mx = (double)zi[best];
                double se = 0.0;
                for (size_t c = 0; c < 256; c++)
                    se = se + ls_exp((double)zi[c] - mx);
                const unsigned y = b[cut + i + T];
                sum_a = sum_a + (ls_log(se) - ((double)zi[y] - mx));
                correct += best == y;
            }
            atoms[na++] = sum_a;
        }
        total = total + tree(atoms, 0, na);
    }
    const double want = total / (double)n, got = metric(m, nm, "test_loss");
    if (memcmp(&got, &want, sizeof got) != 0)
        fail_msg("test_loss %.17g, the scores' mean cross-entropy over the %zu validation windows %.17g", got, n,
                 want);
    const double bpb = got / M_LN2, acc = (double)correct / (double)n;
    assert_memory_equal(&m[1].value, &bpb, sizeof bpb);
    assert_memory_equal(&m[2].value, &acc, sizeof acc);
    /* Evaluating again (another path into the same figures) gives the same bits. */
    ls_metric m2[LS_MAX_METRICS];
    size_t nm2;
    assert_int_equal(ls_session_evaluate(s, m2, &nm2, &err), LS_OK);
    assert_int_equal(nm2, 3);
    assert_memory_equal(&m2[0].value, &got, sizeof got);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    ls_config_destroy(cfg);
    free(x);
    free(z);
    free(b);
}

/* A safetensors file of zeros for linear's W [T][256] and b [256]. */
static void write_zero_linear(const char *name, size_t T)
{
    char hdr[256];
    const size_t nw = T * 256 * 4, nb = 256 * 4;
    int h = snprintf(hdr, sizeof hdr,
                     "{\"W\":{\"dtype\":\"F32\",\"shape\":[%zu,256],\"data_offsets\":[0,%zu]},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[256],\"data_offsets\":[%zu,%zu]}}",
                     T, nw, nw, nw + nb);
    while (h % 8 != 0)
        hdr[h++] = ' ';
    const size_t total = 8 + (size_t)h + nw + nb;
    unsigned char *f = calloc(1, total);
    assert_non_null(f);
    put64(f, (uint64_t)h);
    memcpy(f + 8, hdr, (size_t)h);
    write_all(name, f, total);
    free(f);
}

static void test_zero_weights(void **state)
{
    (void)state;
    size_t L;
    unsigned char *b = text_bytes(&L);
    const size_t T = 8, cut = L - L / 10, n = L - cut - T;
    write_zero_linear("zero.safetensors", T);
    char path[PATH_MAX];
    tpath("zero.safetensors", path, sizeof path);
    ls_config *cfg = text_cfg("linear", g_text, NULL, (int)T);
    ls_err err;
    if (ls_config_set(cfg, "init", path, &err) != LS_OK)
        fail_msg("--init: %s", err.msg);
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 3, .steps = 1 };
    ls_session *s;
    if (ls_session_open(&s, cfg, &o, &err) != LS_OK)
        fail_msg("open: %s", err.msg);
    ls_metric m[LS_MAX_METRICS];
    size_t nm = 0;
    assert_int_equal(ls_session_evaluate(s, m, &nm, &err), LS_OK);
    assert_int_equal(nm, 3);
    const double ln256 = 8.0 * M_LN2, loss = metric(m, nm, "test_loss"), bpb = metric(m, nm, "test_bpb");
    if (fabs(loss - ln256) > 1e-12 * ln256 || fabs(bpb - 8.0) > 1e-12 * 8.0)
        fail_msg("zero weights: test_loss %.17g (want ln 256 = %.17g), test_bpb %.17g (want 8)", loss, ln256, bpb);
    size_t nul = 0;
    for (size_t i = 0; i < n; i++)
        nul += b[cut + i + T] == 0;
    const double acc = (double)nul / (double)n;
    assert_memory_equal(&m[2].value, &acc, sizeof acc);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    ls_config_destroy(cfg);
    free(b);
}

static void test_byte_features(void **state)
{
    (void)state;
    for (int v = 0; v < 256; v++) {
        const float f = (float)v / 255.0f;
        assert_int_equal(lrintf(f * 255.0f), v);
    }
}

/* A token network reads bytes as v/255: features given as the raw bytes
 * (65.0 for 'A') would be the embedding's NaN rows, and their NaN scores
 * must be an error naming the sample, never scores. The same window as
 * v/255 predicts, every score finite. */
static void test_predict_raw_bytes(void **state)
{
    (void)state;
    size_t L;
    free(text_bytes(&L));
    ls_config *cfg = text_cfg("gpt", g_text, NULL, 16);
    ls_err err;
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 2, .steps = 1 };
    ls_session *s;
    if (ls_session_open(&s, cfg, &o, &err) != LS_OK)
        fail_msg("open: %s", err.msg);
    float x[2 * 16], z[2 * 256];
    for (size_t j = 0; j < 2 * 16; j++)
        x[j] = (float)('A' + (int)(j % 16)) / 255.0f;
    assert_int_equal(ls_session_predict(s, x, 2, z, &err), LS_OK);
    for (size_t k = 0; k < 2 * 256; k++)
        assert_false(isnan(z[k]));
    x[16 + 3] = 65.0f;   /* sample 1 holds one raw byte */
    memset(err.msg, 0, sizeof err.msg);
    assert_int_equal(ls_session_predict(s, x, 2, z, &err), LS_EINVAL);
    if (strstr(err.msg, "sample 1:") == NULL || strstr(err.msg, "NaN scores") == NULL)
        fail_msg("raw bytes: %s", err.msg);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    ls_config_destroy(cfg);
}

/* ---- lockstep sample --------------------------------------------------------------------------- */

static void run_ls(proc_res *r, const char *const *args)
{
    proc_describe("lockstep", args, r->cmd, sizeof r->cmd);
    proc_run_checked(r, g_dir, g_bin, args, DEADLINE);
}

static char *sample(const char *threads, const char *temp, const char *seed)
{
    const char *args[] = { "sample", "s", "--db", g_db, "--prompt", "The ", "--tokens", "300", "--temperature", temp,
                           "--seed", seed, "--threads", threads, "--no-progress", NULL };
    proc_res r;
    run_ls(&r, args);
    proc_expect(&r, 0, NULL, 1);
    char *out = strdup(r.out);
    proc_res_free(&r);
    assert_non_null(out);
    assert_int_equal(strncmp(out, "The ", 4), 0);
    return out;
}

static void test_sample(void **state)
{
    (void)state;
    size_t L;
    free(text_bytes(&L));
    const char *train[] = { "train", "--task", "text", "--model", "mlp", "--file", g_text, "--context", "16", "--hidden",
                            "32", "--steps", "30", "--name", "s", "--db", g_db, "--threads", "2", "--no-progress", NULL };
    proc_res r;
    run_ls(&r, train);
    proc_expect(&r, 0, "test_loss", 0);
    proc_res_free(&r);

    char *a1 = sample("1", "0.9", "5"), *a8 = sample("8", "0.9", "5"), *again = sample("3", "0.9", "5");
    char *other = sample("1", "0.9", "6"), *g1 = sample("1", "0", "0"), *g8 = sample("8", "0", "7");
    if (strcmp(a1, a8) != 0 || strcmp(a1, again) != 0)
        fail_msg("sample differs between thread counts or runs:\n%s\n---\n%s\n---\n%s", a1, a8, again);
    if (strcmp(a1, other) == 0)
        fail_msg("seeds 5 and 6 give the same text:\n%s", a1);
    assert_string_equal(g1, g8);   /* temperature 0: no draw, so no seed */

    /* Temperature 0: the first byte after the prompt is the argmax of the
     * scores of the prompt padded on the left with newlines. */
    ls_session *s;
    ls_err err;
    if (ls_session_reopen(&s, g_db, "s", LS_REOPEN_RESTORE, NULL, &err) != LS_OK)
        fail_msg("reopen: %s", err.msg);
    float x[16], z[256];
    const char *prompt = "The ";
    for (size_t j = 0; j < 16; j++)
        x[j] = (float)(j < 12 ? '\n' : (unsigned char)prompt[j - 12]) / 255.0f;
    assert_int_equal(ls_session_predict(s, x, 1, z, &err), LS_OK);
    int best = 0;
    for (int k = 1; k < 256; k++)
        if (z[k] > z[best])
            best = k;
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    char want[16];
    if (best == '\\')
        snprintf(want, sizeof want, "\\\\");
    else if ((best >= 0x20 && best < 0x7f) || best == '\n' || best == '\t')
        snprintf(want, sizeof want, "%c", best);
    else
        snprintf(want, sizeof want, "\\x%02x", (unsigned)best & 0xffu);
    if (strncmp(g1 + 4, want, strlen(want)) != 0)
        fail_msg("temperature 0: the first byte should be %d ('%s'):\n%s", best, want, g1);
    /* The output's escapes: a backslash doubled, tab and newline as they
     * are, any other byte outside printable ASCII as \xNN. */
    const char *esc[] = { "sample", "s", "--db", g_db, "--prompt", "a\\b\tc\n\001\377", "--tokens", "1",
                          "--no-progress", NULL };
    run_ls(&r, esc);
    proc_expect(&r, 0, NULL, 1);
    const char *want_esc = "a\\\\b\tc\n\\x01\\xff";
    if (strncmp(r.out, want_esc, strlen(want_esc)) != 0)
        fail_msg("escapes: got '%s'", r.out);
    proc_res_free(&r);
    free(a1);
    free(a8);
    free(again);
    free(other);
    free(g1);
    free(g8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_features),
        cmocka_unit_test(test_windows_and_hash),
        cmocka_unit_test(test_validation_loss),
        cmocka_unit_test(test_zero_weights),
        cmocka_unit_test(test_predict_raw_bytes),
        cmocka_unit_test(test_threads_and_leaves),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_gpt_threads_and_leaves),
        cmocka_unit_test(test_gpt_resume_sample),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
