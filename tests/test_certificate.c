/* test_certificate.c — forged and malformed certificates never reproduce,
 * and reproduce finds data that were moved (tools/cmd_audit.c, `lockstep
 * reproduce`).
 *
 * Each case runs the real binary (LOCKSTEP_BIN, else build/lockstep) in a
 * fresh temporary directory. Two teacher runs that differ only in lr are
 * trained and audited with --certificate; their certificates are the
 * material a forger has. Every forged certificate is written next to them
 * and must exit 1 or 2 and never print "reproduced": another run's
 * trajectory with the config overridden through "sources", a setting in
 * sources, a source key twice, a key twice in the config, the config's lines
 * reordered, a config whose stated hash does not match, a consistent config
 * of another run with the first run's trajectory, data_hash edited, steps
 * beyond train's limit, an unknown or repeated field, a truncated file, an
 * oversized one, a FIFO and /dev/zero (these without blocking: the runner's
 * deadline would kill a blocked child). A run on .npy files checks that
 * `--source NAME=PATH` reproduces with the data moved, and that another
 * file under the same name is refused naming data_hash.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/hash.h"
#include "tests/proc_util.h"

static char g_bin[PATH_MAX];

/* A blocked reproduce is killed here, and the case fails. */
#define CERT_DEADLINE 60.0

static int setup_dir(void **state)
{
    return proc_ctx_setup(state, "/tmp/lockstep-cert-XXXXXX");
}

static void run_argv(proc_res *r, const proc_ctx *c, const char *const *argv)
{
    proc_run_checked(r, c->dir, g_bin, argv, CERT_DEADLINE);
}

/* Runs a command, checks its exit status, that stdout (or stderr, for exit
 * 2) holds `want` (NULL: anything), and that a command that should fail
 * claims nothing reproduced. */
#define EXPECT(c, code, want, ...)                        \
    do {                                                  \
        const char *av_[] = { __VA_ARGS__, NULL };        \
        proc_res r_;                                      \
        run_argv(&r_, (c), av_);                          \
        expect_run(&r_, (code), (want));                  \
        proc_res_free(&r_);                               \
    } while (0)

static void expect_run(const proc_res *r, int code, const char *want)
{
    proc_expect(r, code, want, 0);
    if (code != 0 && strstr(r->out, "reproduced") != NULL)
        fail_msg("%s: exit %d but stdout says reproduced:\n%s", r->cmd, r->code, r->out);
}

/* Writes n bytes to the test directory's file name. */
static void write_bytes(const proc_ctx *c, const char *name, const char *b, size_t n)
{
    char path[PATH_MAX];
    proc_tpath(c, name, path, sizeof path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void write_text(const proc_ctx *c, const char *name, const char *text)
{
    write_bytes(c, name, text, strlen(text));
}

static char *read_text(const proc_ctx *c, const char *name)
{
    char path[PATH_MAX];
    proc_tpath(c, name, path, sizeof path);
    return proc_read_file(path, NULL, 1);
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

/* The value of the certificate's field (its JSON text, up to the line's end
 * and without the ',' after it), malloc'ed. The writer puts each field on
 * a line of its own. */
static char *field(const char *cert, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\n  \"%s\": ", name);
    const char *at = strstr(cert, key);
    if (at == NULL)
        fail_msg("the certificate lacks field %s:\n%s", name, cert);
    at += strlen(key);
    size_t n = strcspn(at, "\n");
    if (n > 0 && at[n - 1] == ',')
        n--;
    char *v = malloc(n + 1);
    assert_non_null(v);
    memcpy(v, at, n);
    v[n] = '\0';
    return v;
}

/* cert with field name's value replaced by the JSON text value (malloc'ed). */
static char *with_field(const char *cert, const char *name, const char *value)
{
    char *old = field(cert, name), from[8192], to[8192];
    snprintf(from, sizeof from, "\"%s\": %s", name, old);
    snprintf(to, sizeof to, "\"%s\": %s", name, value);
    free(old);
    return replaced(cert, from, to);
}

/* A JSON-escaped config text (only \n escapes, as the writer makes them)
 * back to its text, and that text's hash as the certificate states it:
 * "\"%016llx\"". */
static void config_hash_of(const char *json, char *out, size_t cap)
{
    char text[8192];
    size_t n = 0;
    assert_true(json[0] == '"');
    for (const char *p = json + 1; *p && *p != '"' && n + 1 < sizeof text; p++) {
        if (p[0] == '\\' && p[1] == 'n') {
            text[n++] = '\n';
            p++;
        } else {
            text[n++] = *p;
        }
    }
    snprintf(out, cap, "\"%016llx\"", (unsigned long long)hash_bytes(text, n));
}

/* Writes cert to name and checks reproduce exits code naming want. */
static void expect_cert(const proc_ctx *c, const char *name, const char *cert, int code, const char *want)
{
    write_text(c, name, cert);
    EXPECT(c, code, want, "reproduce", name, "--threads", "2");
}

/* Two teacher runs, 20 steps, lr 0.01 ("a") and 0.02 ("b"), each audited
 * with a certificate: a.json and b.json. */
static void two_runs(const proc_ctx *c)
{
    EXPECT(c, 0, "20 steps", "train", "--task", "teacher", "--steps", "20", "--db", "r.db", "--name", "a",
           "--threads", "2", "--no-progress");
    EXPECT(c, 0, "20 steps", "train", "--task", "teacher", "--steps", "20", "--lr", "0.02", "--db", "r.db",
           "--name", "b", "--threads", "2", "--no-progress");
    EXPECT(c, 0, "proved", "audit", "a", "--db", "r.db", "--threads", "2", "--certificate", "a.json");
    EXPECT(c, 0, "proved", "audit", "b", "--db", "r.db", "--threads", "2", "--certificate", "b.json");
    EXPECT(c, 0, "reproduced", "reproduce", "a.json", "--threads", "1");
    EXPECT(c, 0, "reproduced", "reproduce", "b.json", "--threads", "2");
}

/* The attack the old reader let through: a's certificate with b's lr in
 * "sources" and b's trajectory and parameter hash. */
static void test_sources_override_a_setting(void **state)
{
    const proc_ctx *c = *state;
    two_runs(c);
    char *a = read_text(c, "a.json"), *b = read_text(c, "b.json");
    char *bt = field(b, "trajectory"), *bp = field(b, "param_hash");
    char *f1 = with_field(a, "sources", "\"lr=0x1.47ae14p-6\\n\"");
    char *f2 = with_field(f1, "trajectory", bt);
    char *f3 = with_field(f2, "param_hash", bp);
    expect_cert(c, "forged-lr.json", f3, 2, "\"sources\"");
    expect_cert(c, "forged-lr.json", f3, 2, "'lr'");
    free(f1);
    free(f2);
    free(f3);
    /* Any setting, even one that changes nothing, and engine-set keys. */
    static const char *const settings[] = { "\"seed=1\\n\"", "\"data_hash=0\\n\"", "\"task=teacher\\n\"",
                                            "\"format=2\\n\"", "\"hidden=32\\n\"", "\"lr=0x1.47ae14p-7\"" };
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        char *f = with_field(a, "sources", settings[i]);
        expect_cert(c, "setting.json", f, 2, "\"sources\"");
        free(f);
    }
    /* Not a NAME=PATH line, and an empty line. */
    char *f = with_field(a, "sources", "\"just words\"");
    expect_cert(c, "words.json", f, 2, "\"sources\"");
    free(f);
    f = with_field(a, "sources", "\"\\n\\n\"");
    expect_cert(c, "empty.json", f, 2, "\"sources\"");
    free(f);
    free(bt);
    free(bp);
    free(a);
    free(b);
}

/* The config must be exactly canonical and of its stated hash. */
static void test_config_forged(void **state)
{
    const proc_ctx *c = *state;
    two_runs(c);
    char *a = read_text(c, "a.json"), *b = read_text(c, "b.json");
    char h[32];
    /* A key twice (the second would win in a plain parse), with its hash
     * made consistent: not canonical. */
    char *f = replaced(a, "lr=0x1.47ae14p-7\\n", "lr=0x1.47ae14p-7\\nlr=0x1.47ae14p-6\\n");
    char *cfg = field(f, "config");
    config_hash_of(cfg, h, sizeof h);
    char *g = with_field(f, "config_hash", h);
    expect_cert(c, "dup.json", g, 2, "\"config\"");
    free(f);
    free(g);
    free(cfg);
    /* Two lines swapped, hash consistent: not canonical. */
    f = replaced(a, "batch=32\\nbeta1=0x1.ccccccp-1\\n", "beta1=0x1.ccccccp-1\\nbatch=32\\n");
    cfg = field(f, "config");
    config_hash_of(cfg, h, sizeof h);
    g = with_field(f, "config_hash", h);
    expect_cert(c, "order.json", g, 2, "\"config\"");
    free(f);
    free(g);
    free(cfg);
    /* A value in a non-canonical spelling. */
    f = replaced(a, "batch=32\\n", "batch=032\\n");
    expect_cert(c, "spelling.json", f, 2, "\"config\"");
    free(f);
    /* A key no model or task has. */
    f = replaced(a, "seed=1\\n", "seed=1\\nbogus=1\\n");
    expect_cert(c, "unknownkey.json", f, 2, "\"config\"");
    free(f);
    /* lr changed in the config, its stated hash left: the hash does not
     * match. */
    f = replaced(a, "lr=0x1.47ae14p-7", "lr=0x1.47ae14p-6");
    expect_cert(c, "hash.json", f, 2, "\"config_hash\"");
    /* ... and the hash made consistent, a's trajectory kept: it is b's
     * config now, which does not give a's trajectory. */
    cfg = field(f, "config");
    config_hash_of(cfg, h, sizeof h);
    g = with_field(f, "config_hash", h);
    expect_cert(c, "consistent.json", g, 1, "differs");
    free(f);
    free(g);
    free(cfg);
    /* The hash field malformed or missing. */
    f = with_field(a, "config_hash", "\"zz\"");
    expect_cert(c, "hashbad.json", f, 2, "\"config_hash\"");
    free(f);
    f = replaced(a, "\"config_hash\"", "\"config_hush\"");
    expect_cert(c, "hashname.json", f, 2, "\"config_hush\"");
    free(f);
    /* data_hash that is not the config's. */
    f = with_field(a, "data_hash", "\"0000000000000001\"");
    expect_cert(c, "data.json", f, 2, "\"data_hash\"");
    free(f);
    /* A's config, b's trajectory and parameter hash. */
    char *bt = field(b, "trajectory"), *bp = field(b, "param_hash");
    f = with_field(a, "trajectory", bt);
    g = with_field(f, "param_hash", bp);
    expect_cert(c, "othertraj.json", g, 1, "differs");
    free(f);
    free(g);
    free(bt);
    free(bp);
    free(a);
    free(b);
}

/* The document itself: fields unknown, twice, steps beyond the limit, a
 * truncated file, and files that are no certificate at all. */
static void test_document_forged(void **state)
{
    const proc_ctx *c = *state;
    two_runs(c);
    char *a = read_text(c, "a.json");
    char *f = replaced(a, "{\n", "{\n  \"extra\": \"x\",\n");
    expect_cert(c, "unknown.json", f, 2, "\"extra\"");
    free(f);
    f = replaced(a, "{\n", "{\n  \"steps\": 20,\n");
    expect_cert(c, "twice.json", f, 2, "given twice");
    free(f);
    f = replaced(a, "{\n", "{\n  \"sources\": \"lr=0x1.47ae14p-6\",\n");
    expect_cert(c, "twice2.json", f, 2, "given twice");
    free(f);
    /* train refuses --steps above 2^40; so does a certificate. */
    f = with_field(a, "steps", "1099511627777");
    expect_cert(c, "steps.json", f, 2, "\"steps\"");
    free(f);
    f = with_field(a, "steps", "9223372036854775807");
    expect_cert(c, "steps-max.json", f, 2, "\"steps\"");
    free(f);
    /* Truncated anywhere: never reproduced. */
    size_t n = strlen(a);
    static const double cut[] = { 0.1, 0.5, 0.9 };
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        write_bytes(c, "trunc.json", a, (size_t)((double)n * cut[i]));
        EXPECT(c, 2, "trunc.json", "reproduce", "trunc.json");
    }
    write_bytes(c, "trunc.json", a, n - 3);
    EXPECT(c, 2, "trunc.json", "reproduce", "trunc.json");
    /* More than a certificate can be: refused by its size. */
    char path[PATH_MAX];
    proc_tpath(c, "big.json", path, sizeof path);
    FILE *big = fopen(path, "wb");
    assert_non_null(big);
    fputs(a, big);
    for (int i = 0; i < (1 << 20); i++)
        fputc(' ', big);
    assert_int_equal(fclose(big), 0);
    EXPECT(c, 2, "big.json", "reproduce", "big.json");
    /* A FIFO with no writer and /dev/zero: refused at once, not waited on
     * or read without end. */
    proc_tpath(c, "fifo.json", path, sizeof path);
    assert_int_equal(mkfifo(path, 0600), 0);
    EXPECT(c, 2, "fifo.json", "reproduce", "fifo.json");
    EXPECT(c, 2, "/dev/zero", "reproduce", "/dev/zero");
    EXPECT(c, 2, ".", "reproduce", ".");
    free(a);
}

/* Item: the data moved. A run on .npy files records absolute paths; with
 * the files moved, --source points at them and it reproduces; a different
 * file under the same name is refused naming data_hash; --source with a
 * name that is not the task's source, twice, or without a path is refused. */
static void write_npy(const proc_ctx *c, const char *name, const char *descr, const char *shape, const void *data,
                      size_t len)
{
    char dict[128];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
    size_t hl = (size_t)n + pad + 1, size = 10 + hl + len;
    char *b = malloc(size);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (char)(hl & 0xff);
    b[9] = (char)(hl >> 8);
    memcpy(b + 10, dict, (size_t)n);
    memset(b + 10 + n, ' ', pad);
    b[10 + hl - 1] = '\n';
    memcpy(b + 10 + hl, data, len);
    write_bytes(c, name, b, size);
    free(b);
}

static void test_data_moved(void **state)
{
    const proc_ctx *c = *state;
    float x[64 * 4];
    long long y[64];
    for (int i = 0; i < 64 * 4; i++)
        x[i] = (float)((i * 37) % 11) / 11.0f;
    for (int i = 0; i < 64; i++)
        y[i] = (i * 5) % 3;
    write_npy(c, "tx.npy", "<f4", "(64, 4)", x, sizeof x);
    write_npy(c, "ty.npy", "<i8", "(64,)", y, sizeof y);
    EXPECT(c, 0, "12 steps", "train", "--task", "arrays", "--train-x", "tx.npy", "--train-y", "ty.npy", "--batch",
           "16", "--steps", "12", "--db", "r.db", "--name", "a", "--threads", "1", "--no-progress");
    EXPECT(c, 0, "proved", "audit", "a", "--db", "r.db", "--threads", "2", "--certificate", "a.json");
    EXPECT(c, 0, "reproduced", "reproduce", "a.json", "--threads", "2");
    char from[PATH_MAX], to[PATH_MAX];
    proc_tpath(c, "moved", to, sizeof to);
    assert_int_equal(mkdir(to, 0700), 0);
    proc_tpath(c, "tx.npy", from, sizeof from);
    proc_tpath(c, "moved/tx.npy", to, sizeof to);
    assert_int_equal(rename(from, to), 0);
    proc_tpath(c, "ty.npy", from, sizeof from);
    proc_tpath(c, "moved/ty.npy", to, sizeof to);
    assert_int_equal(rename(from, to), 0);
    EXPECT(c, 2, "tx.npy", "reproduce", "a.json");
    EXPECT(c, 0, "reproduced", "reproduce", "a.json", "--source", "train_x=moved/tx.npy", "--source",
           "train_y=moved/ty.npy", "--threads", "2");
    EXPECT(c, 0, "reproduced", "reproduce", "a.json", "--source=train_x=moved/tx.npy", "--source",
           "train_y=moved/ty.npy");
    /* Other data under the name the flag gives: the hash says so. */
    x[5] = 0.5f;
    write_npy(c, "moved/tx2.npy", "<f4", "(64, 4)", x, sizeof x);
    const char *const av[] = { "reproduce", "a.json", "--source", "train_x=moved/tx2.npy", "--source",
                               "train_y=moved/ty.npy", NULL };
    proc_res r;
    run_argv(&r, c, av);
    expect_run(&r, 1, NULL);
    if (strstr(r.err, "data_hash") == NULL)
        fail_msg("%s: stderr does not name data_hash:\n%s", r.cmd, r.err);
    proc_res_free(&r);
    /* Not the task's sources, twice, without a path, not NAME=PATH. */
    EXPECT(c, 2, "'lr'", "reproduce", "a.json", "--source", "lr=0.5", "--source", "train_y=moved/ty.npy");
    EXPECT(c, 2, "given twice", "reproduce", "a.json", "--source", "train_x=moved/tx.npy", "--source",
           "train_x=moved/tx.npy");
    EXPECT(c, 2, "no path", "reproduce", "a.json", "--source", "train_x=", "--source", "train_y=moved/ty.npy");
    EXPECT(c, 2, "--source", "reproduce", "a.json", "--source", "train_x");
    EXPECT(c, 2, "--source", "reproduce", "a.json", "--source");
    /* A source key inside the config (sources are not part of the
     * canonical text, so it is not canonical). */
    char *a = read_text(c, "a.json");
    char *f = replaced(a, "seed=1\\n", "seed=1\\ntrain_x=moved/tx2.npy\\n");
    expect_cert(c, "srcincfg.json", f, 2, "\"config\"");
    free(f);
    /* A source key twice in the certificate itself. */
    char *sources = field(a, "sources");
    char doubled[8192];
    snprintf(doubled, sizeof doubled, "%.*s%s", (int)strlen(sources) - 1, sources, sources + 1);
    f = with_field(a, "sources", doubled);
    expect_cert(c, "dupsrc.json", f, 2, "given twice");
    free(f);
    free(sources);
    free(a);
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_certificate", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sources_override_a_setting, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_config_forged, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_document_forged, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_data_moved, setup_dir, proc_ctx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
