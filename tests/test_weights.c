/* test_weights.c — `lockstep export --weights` and `lockstep predict`, end to
 * end with the real binary (LOCKSTEP_BIN, else build/lockstep).
 *
 * The binary trains a few runs into a database of its own (once, shared by
 * the cases): an mlp and a linear model on the teacher task, an mlp on the
 * arrays task from uint8 .npy files numpy writes, a logic run (no scores).
 * What the binary writes is read back behind its back:
 *   - the .safetensors file by a parser here (the 8-byte length, a minimal
 *     JSON reader for the header, the raw data) and the .npy file byte by
 *     byte, every float compared bit for bit with ls_session_params of the
 *     run reopened in this process (LS_REOPEN_RESTORE), the names and shapes
 *     with the model's ls_model_info.tensors, the hashes with the record
 *     (read with the raw sqlite3 API);
 *   - the same files by numpy (/usr/bin/python3): np.load, a pure-numpy
 *     safetensors reader (json + np.frombuffer) and, when the module is
 *     installed, safetensors.numpy.load_file; what they load is written back
 *     with tobytes() and compared here byte for byte; np.save of the loaded
 *     array must give the very bytes of the exported .npy;
 *   - predict --labels on each run's test split must count exactly the
 *     recorded test_acc (as a double, ==), and the argmax of its scores must
 *     be its labels; float32, float64 and uint8 inputs follow the task's rules.
 * Bad input (a wrong feature count, Fortran order, a missing file, an output
 * that is the record, a model without scores) exits 2 with one line and
 * leaves no file; a tampered record exits 1.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/core/session.h"
#include "engine/core/train.h"
#include "include/lockstep.h"
#include "tests/proc_util.h"

#define PYTHON "/usr/bin/python3"
#define DEADLINE 300.0

static char g_bin[PATH_MAX];
static char g_dir[128];
static char g_db[PATH_MAX];
static int g_trained;

static void tpath(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", g_dir, name);
}

static int file_exists(const char *name)
{
    char p[PATH_MAX];
    struct stat sb;
    tpath(name, p, sizeof p);
    return stat(p, &sb) == 0;
}

static int temp_files_left(void)
{
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return n;
}

static uint8_t *read_all(const char *name, size_t *len)
{
    char p[PATH_MAX];
    tpath(name, p, sizeof p);
    return (uint8_t *)proc_read_file(p, len, 1);
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

/* ---- running programs ------------------------------------------------------------------ */

static void run_ls(proc_res *r, const char *const *args)
{
    proc_describe("lockstep", args, r->cmd, sizeof r->cmd);
    proc_child p;
    proc_start_bin(&p, g_dir, NULL, NULL, g_bin, args);
    proc_finish(&p, r, DEADLINE);
    if (r->timed_out)
        fail_msg("%s: still running after %.0f s (killed)", r->cmd, DEADLINE);
    if (r->sig != 0)
        fail_msg("%s: died of signal %d\nstderr: %s", r->cmd, r->sig, r->err);
}

static void expect_code(const proc_res *r, int want)
{
    if (r->code != want)
        fail_msg("%s: exit %d, want %d\nstdout: %s\nstderr: %s", r->cmd, r->code, want, r->out, r->err);
}

#define LS(r, ...)                                         \
    do {                                                   \
        const char *av_[] = { __VA_ARGS__, NULL };         \
        run_ls((r), av_);                                  \
    } while (0)

#define LS_OK(...)                                         \
    do {                                                   \
        proc_res r_;                                       \
        LS(&r_, __VA_ARGS__);                              \
        expect_code(&r_, 0);                               \
        proc_res_free(&r_);                                \
    } while (0)

/* Python with numpy in g_dir; fails the case when it exits non-zero. */
static void py(const char *code)
{
    char *cmd = malloc(strlen(code) + 512);
    assert_non_null(cmd);
    sprintf(cmd, "cd '%s' && " PYTHON " - <<'EOF'\nimport numpy as np, json, struct, sys, io\n%s\nEOF", g_dir, code);
    int rc = system(cmd);
    free(cmd);
    if (rc != 0)
        fail_msg("python3/numpy failed (is python3-numpy installed? make deps)");
}

/* ---- the record, read with sqlite3 ------------------------------------------------------ */

/* The last step of run `name` and its parameter hash, its config hash and
 * its id; test_acc of the last evaluation (-1 when none). */
typedef struct {
    int64_t id, step;
    uint64_t param_hash, config_hash;
    double test_acc;
} recorded;

static recorded record_of(const char *name)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    recorded r = { -1, -1, 0, 0, -1 };
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT r.id, r.config_hash, s.step, s.param_hash FROM runs r JOIN steps s "
                                        "ON s.run = r.id WHERE r.name = ?1 ORDER BY s.step DESC LIMIT 1",
                                        -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    r.id = sqlite3_column_int64(q, 0);
    r.config_hash = (uint64_t)sqlite3_column_int64(q, 1);
    r.step = sqlite3_column_int64(q, 2);
    r.param_hash = (uint64_t)sqlite3_column_int64(q, 3);
    sqlite3_finalize(q);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT value FROM evals WHERE run = ?1 AND name = 'test_acc' ORDER BY step "
                                        "DESC LIMIT 1",
                                        -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(q, 1, r.id);
    if (sqlite3_step(q) == SQLITE_ROW)
        r.test_acc = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return r;
}

static void sql_exec(const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(g_db, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* ---- the runs ------------------------------------------------------------------------- */

static const char *const RUNS[][20] = {
    { "teach", "--task", "teacher", "--steps", "40", "--checkpoint-every", "15", NULL },
    { "lin", "--task", "teacher", "--model", "linear", "--steps", "40", NULL },
    { "arr", "--task", "arrays", "--train-x", "x8.npy", "--train-y", "y.npy", "--test-x", "x8t.npy", "--test-y",
      "yt.npy", "--hidden", "24", "--steps", "30", NULL },
    { "lg", "--task", "teacher", "--model", "logic", "--steps", "2", NULL },
    /* A declared network (engine/models/seq/) with image layers on the 3x5 arrays. */
    { "sq", "--task", "arrays", "--model", "seq", "--train-x", "x8.npy", "--train-y", "y.npy", "--test-x", "x8t.npy",
      "--test-y", "yt.npy", "--image", "3,5,1", "--layers", "conv3x3:4,relu,maxpool1,layernorm,dense:8,gelu,dense:4",
      "--steps", "20", NULL },
    /* gpt, the text task's default model (a token network with residual branches). */
    { "gp", "--task", "text", "--file", "/usr/share/games/fortunes/cookie", "--context", "16", "--batch", "37",
      "--steps", "6", NULL },
};
#define N_RUNS (sizeof RUNS / sizeof RUNS[0])

static void need_runs(void)
{
    if (g_trained)
        return;
    /* Four classes from a fixed linear rule on 3x5 uint8 features. */
    py("r = np.random.default_rng(11)\n"
       "x = r.integers(0, 256, size=(700, 3, 5), dtype=np.uint8)\n"
       "y = np.argmax((x.reshape(700, 15) / 255.0) @ r.standard_normal((15, 4)), axis=1)\n"
       "np.save('x8.npy', x[:500]); np.save('y.npy', y[:500].astype(np.int64))\n"
       "np.save('x8t.npy', x[500:]); np.save('yt.npy', y[500:].astype(np.int16))\n");
    for (size_t i = 0; i < N_RUNS; i++) {
        const char *args[40];
        size_t n = 0;
        args[n++] = "train";
        for (size_t k = 1; RUNS[i][k] != NULL; k++)
            args[n++] = RUNS[i][k];
        const char *tail[] = { "--name", RUNS[i][0], "--db", "D", "--threads", "2", "--no-progress", NULL };
        for (size_t k = 0; tail[k] != NULL; k++)
            args[n++] = tail[k];
        args[n] = NULL;
        proc_res r;
        run_ls(&r, args);
        expect_code(&r, 0);
        proc_res_free(&r);
    }
    g_trained = 1;
}

/* The run reopened in this process at its last recorded step. */
static ls_session *restore(const char *name)
{
    need_runs();
    ls_session_opts o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.threads = 1;
    ls_session *s = NULL;
    ls_err err = { "" };
    if (ls_session_reopen(&s, g_db, name, LS_REOPEN_RESTORE, &o, &err) != LS_OK)
        fail_msg("reopen %s: %s", name, err.msg);
    return s;
}

/* θ's floats as little-endian bytes, whatever this machine's order. */
static uint8_t *params_le(const float *p, size_t n)
{
    uint8_t *b = malloc(4 * n + 1);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], 4);
        for (int k = 0; k < 4; k++)
            b[4 * i + (size_t)k] = (uint8_t)(u >> (8 * k));
    }
    return b;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

/* ---- a minimal JSON reader for the safetensors header ----------------------------------- */

#define J_MAX_TENSORS 64
#define J_MAX_META 16

typedef struct {
    char name[64], dtype[16];
    size_t ndim, shape[8];
    uint64_t off[2];
} j_tensor;

typedef struct {
    j_tensor t[J_MAX_TENSORS];
    size_t n;
    char meta_key[J_MAX_META][64], meta_val[J_MAX_META][64];
    size_t n_meta;
    int have_meta;
} j_header;

typedef struct {
    const char *p, *end;
} j_in;

static void j_ws(j_in *in)
{
    while (in->p < in->end && (*in->p == ' ' || *in->p == '\n' || *in->p == '\t' || *in->p == '\r'))
        in->p++;
}

static void j_expect(j_in *in, char c)
{
    j_ws(in);
    if (in->p >= in->end || *in->p != c)
        fail_msg("safetensors header: want '%c', found '%.10s'", c, in->p < in->end ? in->p : "(end)");
    in->p++;
}

static int j_peek(j_in *in, char c)
{
    j_ws(in);
    return in->p < in->end && *in->p == c;
}

static void j_string(j_in *in, char *out, size_t cap)
{
    j_expect(in, '"');
    size_t n = 0;
    while (in->p < in->end && *in->p != '"') {
        char c = *in->p++;
        if (c == '\\') {
            assert_true(in->p < in->end);
            c = *in->p++;
            if (c == 'u') {
                assert_true(in->end - in->p >= 4);
                char hex[5] = { in->p[0], in->p[1], in->p[2], in->p[3], 0 };
                in->p += 4;
                c = (char)strtol(hex, NULL, 16);
            } else if (c == 'n') {
                c = '\n';
            } else if (c != '"' && c != '\\' && c != '/') {
                fail_msg("safetensors header: escape \\%c", c);
            }
        }
        assert_true(n + 1 < cap);
        out[n++] = c;
    }
    out[n] = '\0';
    j_expect(in, '"');
}

static uint64_t j_uint(j_in *in)
{
    j_ws(in);
    assert_true(in->p < in->end && isdigit((unsigned char)*in->p));
    uint64_t v = 0;
    while (in->p < in->end && isdigit((unsigned char)*in->p))
        v = v * 10 + (uint64_t)(*in->p++ - '0');
    return v;
}

static size_t j_uint_array(j_in *in, uint64_t *out, size_t cap)
{
    size_t n = 0;
    j_expect(in, '[');
    if (j_peek(in, ']')) {
        in->p++;
        return 0;
    }
    for (;;) {
        assert_true(n < cap);
        out[n++] = j_uint(in);
        if (j_peek(in, ',')) {
            in->p++;
            continue;
        }
        j_expect(in, ']');
        return n;
    }
}

static void j_parse(const char *text, size_t len, j_header *h)
{
    memset(h, 0, sizeof *h);
    j_in in = { text, text + len };
    j_expect(&in, '{');
    for (;;) {
        char key[64];
        j_string(&in, key, sizeof key);
        j_expect(&in, ':');
        j_expect(&in, '{');
        if (strcmp(key, "__metadata__") == 0) {
            assert_false(h->have_meta);
            h->have_meta = 1;
            while (!j_peek(&in, '}')) {
                assert_true(h->n_meta < J_MAX_META);
                j_string(&in, h->meta_key[h->n_meta], sizeof h->meta_key[0]);
                j_expect(&in, ':');
                j_string(&in, h->meta_val[h->n_meta], sizeof h->meta_val[0]);
                h->n_meta++;
                if (j_peek(&in, ','))
                    in.p++;
            }
            in.p++;
        } else {
            assert_true(h->n < J_MAX_TENSORS);
            j_tensor *t = &h->t[h->n++];
            snprintf(t->name, sizeof t->name, "%s", key);
            int have = 0;
            while (!j_peek(&in, '}')) {
                char field[32];
                j_string(&in, field, sizeof field);
                j_expect(&in, ':');
                uint64_t v[8];
                if (strcmp(field, "dtype") == 0) {
                    j_string(&in, t->dtype, sizeof t->dtype);
                    have |= 1;
                } else if (strcmp(field, "shape") == 0) {
                    t->ndim = j_uint_array(&in, v, 8);
                    for (size_t k = 0; k < t->ndim; k++)
                        t->shape[k] = (size_t)v[k];
                    have |= 2;
                } else if (strcmp(field, "data_offsets") == 0) {
                    assert_int_equal(j_uint_array(&in, t->off, 2), 2);
                    have |= 4;
                } else {
                    fail_msg("safetensors header: tensor %s: unknown field %s", key, field);
                }
                if (j_peek(&in, ','))
                    in.p++;
            }
            in.p++;
            assert_int_equal(have, 7);
        }
        if (j_peek(&in, ',')) {
            in.p++;
            continue;
        }
        j_expect(&in, '}');
        break;
    }
    j_ws(&in);
    assert_true(in.p == in.end);   /* only the padding (spaces) after the object */
}

static const char *meta(const j_header *h, const char *key)
{
    for (size_t i = 0; i < h->n_meta; i++)
        if (strcmp(h->meta_key[i], key) == 0)
            return h->meta_val[i];
    fail_msg("__metadata__ has no %s", key);
    return NULL;
}

/* ---- export --weights --------------------------------------------------------------------- */

/* Checks one safetensors file against the run restored here and the record. */
static void check_safetensors(const char *run, const char *file)
{
    ls_session *s = restore(run);
    recorded rec = record_of(run);
    size_t np = 0;
    const float *p = ls_session_params(s, &np);
    const ls_model_info *mi = &trainer_model(session_trainer(s))->info;
    uint8_t *want = params_le(p, np);
    size_t len;
    uint8_t *b = read_all(file, &len);
    assert_true(len >= 8);
    const uint64_t hl = le64(b);
    assert_true(hl <= len - 8);
    assert_int_equal((8 + hl) % 8, 0);
    j_header h;
    j_parse((const char *)b + 8, (size_t)hl, &h);
    /* The tensors: the model's names, shapes and order, tiling θ. */
    assert_non_null(mi->tensors);
    assert_int_equal(h.n, mi->n_tensors);
    uint64_t at = 0;
    for (size_t i = 0; i < h.n; i++) {
        const j_tensor *t = &h.t[i];
        assert_string_equal(t->name, mi->tensors[i].name);
        assert_string_equal(t->dtype, "F32");
        assert_int_equal(t->ndim, mi->tensors[i].ndim);
        uint64_t count = 1;
        for (size_t k = 0; k < t->ndim; k++) {
            assert_int_equal(t->shape[k], mi->tensors[i].shape[k]);
            count *= t->shape[k];
        }
        assert_int_equal(t->off[0], at);
        assert_int_equal(t->off[1], at + 4 * count);
        assert_int_equal(t->off[0], 4 * mi->tensors[i].offset);
        at = t->off[1];
    }
    assert_int_equal(at, 4 * np);
    assert_int_equal(len, 8 + hl + 4 * np);
    if (memcmp(b + 8 + hl, want, 4 * np) != 0)
        fail_msg("%s: the data are not the parameters' bits", file);
    /* The metadata: the run, its step, its hashes as the record has them. */
    char buf[64];
    snprintf(buf, sizeof buf, "%lld", (long long)rec.id);
    assert_string_equal(meta(&h, "lockstep_run"), buf);
    snprintf(buf, sizeof buf, "%lld", (long long)rec.step);
    assert_string_equal(meta(&h, "step"), buf);
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)rec.config_hash);
    assert_string_equal(meta(&h, "config_hash"), buf);
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)rec.param_hash);
    assert_string_equal(meta(&h, "param_hash"), buf);
    assert_string_equal(meta(&h, "format"), "pt");
    ls_session_state st;
    ls_session_state_get(s, &st);
    assert_true(st.param_hash == rec.param_hash);
    free(b);
    free(want);
    ls_session_close(s, LS_OK, NULL);
}

/* Checks a .npy of θ: numpy's exact header, then θ's bytes. */
static void check_npy(const char *run, const char *file)
{
    ls_session *s = restore(run);
    size_t np = 0;
    const float *p = ls_session_params(s, &np);
    uint8_t *want = params_le(p, np);
    size_t len;
    uint8_t *b = read_all(file, &len);
    assert_true(len > 10);
    assert_memory_equal(b, "\x93NUMPY\x01\x00", 8);
    const size_t hl = (size_t)b[8] | (size_t)b[9] << 8;
    assert_int_equal((10 + hl) % 64, 0);
    char dict[128];
    int w = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu,), }", np);
    assert_true(hl > (size_t)w);
    assert_memory_equal(b + 10, dict, (size_t)w);
    for (size_t i = 10 + (size_t)w; i < 10 + hl - 1; i++)
        assert_int_equal(b[i], ' ');
    assert_int_equal(b[10 + hl - 1], '\n');
    assert_int_equal(len, 10 + hl + 4 * np);
    if (memcmp(b + 10 + hl, want, 4 * np) != 0)
        fail_msg("%s: the data are not the parameters' bits", file);
    free(b);
    free(want);
    ls_session_close(s, LS_OK, NULL);
}

/* Python's view of both files, written back as raw bytes, equals θ here. */
static void check_python(const char *run, const char *st_file, const char *npy_file)
{
    char code[4096];
    snprintf(code, sizeof code,
             "a = np.load('%s')\n"
             "assert a.dtype == np.float32 and a.ndim == 1, (a.dtype, a.shape)\n"
             "open('%s.py-npy.bin', 'wb').write(a.tobytes())\n"
             "f = io.BytesIO(); np.save(f, a)\n"
             "assert f.getvalue() == open('%s', 'rb').read(), 'np.save writes other bytes'\n"
             "b = open('%s', 'rb').read()\n"
             "n = struct.unpack('<Q', b[:8])[0]\n"
             "h = json.loads(b[8:8 + n])\n"
             "data = b[8 + n:]\n"
             "parts = []\n"
             "for k, v in h.items():\n"
             "    if k == '__metadata__': continue\n"
             "    s, e = v['data_offsets']\n"
             "    t = np.frombuffer(data[s:e], dtype='<f4').reshape(v['shape'])\n"
             "    parts.append(t.ravel())\n"
             "open('%s.py-st.bin', 'wb').write(np.concatenate(parts).tobytes())\n"
             "try:\n"
             "    import safetensors.numpy as sn\n"
             "except ImportError:\n"
             "    sn = None\n"
             "if sn is not None:\n"
             "    d = sn.load_file('%s')\n"
             "    order = [k for k in h if k != '__metadata__']\n"
             "    assert sorted(d) == sorted(order)\n"
             "    open('%s.sn.bin', 'wb').write(np.concatenate([d[k].ravel() for k in order]).astype('<f4').tobytes())\n",
             npy_file, run, npy_file, st_file, run, st_file, run);
    py(code);
    ls_session *s = restore(run);
    size_t np = 0;
    const float *p = ls_session_params(s, &np);
    uint8_t *want = params_le(p, np);
    static const char *const SFX[] = { ".py-npy.bin", ".py-st.bin", ".sn.bin" };
    for (size_t i = 0; i < 3; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s%s", run, SFX[i]);
        if (i == 2 && !file_exists(name)) {
            print_message("(python3 has no safetensors module: safetensors.numpy.load_file not tried)\n");
            continue;
        }
        size_t len;
        uint8_t *got = read_all(name, &len);
        assert_int_equal(len, 4 * np);
        if (memcmp(got, want, len) != 0)
            fail_msg("%s: numpy's floats are not the parameters' bits", name);
        free(got);
    }
    free(want);
    ls_session_close(s, LS_OK, NULL);
}

static void export_both(const char *run)
{
    char st_file[64], npy_file[64], hex[32];
    snprintf(st_file, sizeof st_file, "%s.safetensors", run);
    snprintf(npy_file, sizeof npy_file, "%s.npy", run);
    recorded rec = record_of(run);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)rec.param_hash);
    const char *files[2] = { st_file, npy_file };
    for (size_t i = 0; i < 2; i++) {
        proc_res r;
        LS(&r, "export", run, "--weights", files[i], "--db", "D", "--no-progress");
        expect_code(&r, 0);
        /* One line on stdout naming the file and the record's hash. */
        if (strchr(r.out, '\n') != r.out + strlen(r.out) - 1 || strstr(r.out, files[i]) == NULL ||
            strstr(r.out, hex) == NULL)
            fail_msg("%s: want one line naming %s and hash %s:\n%s", r.cmd, files[i], hex, r.out);
        proc_res_free(&r);
    }
    check_safetensors(run, st_file);
    check_npy(run, npy_file);
    check_python(run, st_file, npy_file);
}

static void test_export_mlp(void **state)
{
    (void)state;
    need_runs();
    export_both("teach");
}

static void test_export_linear(void **state)
{
    (void)state;
    need_runs();
    export_both("lin");
}

/* A model without named tensors: one tensor "params" [n_params]. */
static void test_export_logic(void **state)
{
    (void)state;
    need_runs();
    LS_OK("export", "lg", "--weights", "lg.safetensors", "--db", "D", "--no-progress");
    ls_session *s = restore("lg");
    size_t np = 0;
    const float *p = ls_session_params(s, &np);
    uint8_t *want = params_le(p, np);
    size_t len;
    uint8_t *b = read_all("lg.safetensors", &len);
    const uint64_t hl = le64(b);
    assert_int_equal((8 + hl) % 8, 0);
    j_header h;
    j_parse((const char *)b + 8, (size_t)hl, &h);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.t[0].name, "params");
    assert_int_equal(h.t[0].ndim, 1);
    assert_int_equal(h.t[0].shape[0], np);
    assert_int_equal(len, 8 + hl + 4 * np);
    assert_memory_equal(b + 8 + hl, want, 4 * np);
    free(b);
    free(want);
    ls_session_close(s, LS_OK, NULL);
}

/* ---- predict ------------------------------------------------------------------------------ */

/* A .npy parsed here: its descr, shape and data (pointers into b). */
typedef struct {
    uint8_t *b;
    char descr[8];
    size_t ndim, shape[4];
    const uint8_t *data;
    size_t data_len;
} npy_file;

static void npy_read(const char *name, npy_file *f)
{
    memset(f, 0, sizeof *f);
    size_t len;
    f->b = read_all(name, &len);
    assert_true(len > 10);
    assert_memory_equal(f->b, "\x93NUMPY\x01\x00", 8);
    const size_t hl = (size_t)f->b[8] | (size_t)f->b[9] << 8;
    assert_int_equal((10 + hl) % 64, 0);
    assert_true(len >= 10 + hl);
    char hdr[256];
    assert_true(hl < sizeof hdr);
    memcpy(hdr, f->b + 10, hl);
    hdr[hl] = '\0';
    assert_int_equal(hdr[hl - 1], '\n');
    const char *d = strstr(hdr, "'descr': '");
    assert_non_null(d);
    snprintf(f->descr, sizeof f->descr, "%.3s", d + 10);
    assert_non_null(strstr(hdr, "'fortran_order': False"));
    const char *s = strstr(hdr, "'shape': (");
    assert_non_null(s);
    s += 10;
    while (*s != ')') {
        char *end;
        assert_true(f->ndim < 4);
        f->shape[f->ndim++] = (size_t)strtoull(s, &end, 10);
        s = end;
        while (*s == ',' || *s == ' ')
            s++;
    }
    f->data = f->b + 10 + hl;
    f->data_len = len - 10 - hl;
}

/* X.npy (float32 [n, dim]) of a split, written here in C. */
static void write_x(const char *name, const float *x, size_t n, size_t dim)
{
    char dict[128];
    int w = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, %zu), }", n, dim);
    size_t hl = (size_t)w + 1;
    hl += (64 - (10 + hl) % 64) % 64;
    const size_t len = 10 + hl + 4 * n * dim;
    uint8_t *b = malloc(len);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)(hl & 0xff);
    b[9] = (uint8_t)(hl >> 8);
    memset(b + 10, ' ', hl);
    memcpy(b + 10, dict, (size_t)w);
    b[10 + hl - 1] = '\n';
    uint8_t *le = params_le(x, n * dim);
    memcpy(b + 10 + hl, le, 4 * n * dim);
    write_all(name, b, len);
    free(le);
    free(b);
}

/* predict --labels and scores of run on input; the labels' accuracy against
 * y (n labels) must be the recorded test_acc, the scores' argmax the labels.
 * Returns the labels (malloc'ed) for comparisons between inputs. */
static int64_t *predict_and_check(const char *run, const char *input, const uint8_t *y, size_t n, size_t outputs)
{
    char lab[96], sco[96];
    snprintf(lab, sizeof lab, "%s-%s.labels.npy", run, input);
    snprintf(sco, sizeof sco, "%s-%s.scores.npy", run, input);
    proc_res r;
    LS(&r, "predict", run, "--input", input, "-o", lab, "--labels", "--db", "D", "--threads", "2", "--no-progress");
    expect_code(&r, 0);
    if (strchr(r.out, '\n') != r.out + strlen(r.out) - 1 || strstr(r.out, lab) == NULL)
        fail_msg("%s: want one line naming %s:\n%s", r.cmd, lab, r.out);
    proc_res_free(&r);
    LS_OK("predict", run, "--input", input, "-o", sco, "--db", "D", "--no-progress");
    npy_file L, S;
    npy_read(lab, &L);
    npy_read(sco, &S);
    assert_string_equal(L.descr, "<i8");
    assert_int_equal(L.ndim, 1);
    assert_int_equal(L.shape[0], n);
    assert_int_equal(L.data_len, 8 * n);
    assert_string_equal(S.descr, "<f4");
    assert_int_equal(S.ndim, 2);
    assert_int_equal(S.shape[0], n);
    assert_int_equal(S.shape[1], outputs);
    assert_int_equal(S.data_len, 4 * n * outputs);
    int64_t *labels = malloc(n * sizeof *labels);
    assert_non_null(labels);
    size_t right = 0;
    for (size_t i = 0; i < n; i++) {
        labels[i] = (int64_t)le64(L.data + 8 * i);
        assert_true(labels[i] >= 0 && (size_t)labels[i] < outputs);
        right += labels[i] == (int64_t)y[i];
        size_t best = 0;
        float z[256];
        assert_true(outputs <= 256);
        for (size_t k = 0; k < outputs; k++) {
            uint32_t u = 0;
            for (int b = 3; b >= 0; b--)
                u = u << 8 | S.data[4 * (i * outputs + k) + (size_t)b];
            memcpy(&z[k], &u, 4);
            if (z[k] > z[best])
                best = k;
        }
        assert_int_equal(best, (size_t)labels[i]);
    }
    recorded rec = record_of(run);
    const double acc = (double)right / (double)n;
    if (!(acc == rec.test_acc))
        fail_msg("%s on %s: %zu of %zu right = %.17g, the record's test_acc is %.17g", run, input, right, n, acc,
                 rec.test_acc);
    assert_true(right > 0 && right < n + 1);
    free(L.b);
    free(S.b);
    return labels;
}

/* The teacher's test split, taken from the run's own data here. */
static void teacher_split(const char *run, const char *name, uint8_t **y, size_t *n, size_t *dim)
{
    ls_session *s = restore(run);
    /* A restore that recomputes nothing loads no data: the config names it. */
    assert_null(trainer_data(session_trainer(s)));
    ls_config cfg = *trainer_config(session_trainer(s));
    ls_dataset *d = NULL;
    ls_err err = { "" };
    if (trainer_load_data(&cfg, &d, &err) != LS_OK)
        fail_msg("%s's data: %s", run, err.msg);
    assert_non_null(d);
    assert_non_null(d->test.xf);
    *n = d->test.n;
    *dim = d->test.dim;
    write_x(name, d->test.xf, *n, *dim);
    *y = malloc(*n);
    assert_non_null(*y);
    memcpy(*y, d->test.y, *n);
    ls_dataset_destroy(d);
    ls_session_close(s, LS_OK, NULL);
}

static void test_predict_teacher(void **state)
{
    (void)state;
    need_runs();
    static const char *const RUN_NAMES[] = { "teach", "lin" };
    for (size_t i = 0; i < 2; i++) {
        uint8_t *y;
        size_t n, dim;
        teacher_split(RUN_NAMES[i], "tx.npy", &y, &n, &dim);
        ls_session *s = restore(RUN_NAMES[i]);
        const size_t outputs = trainer_model(session_trainer(s))->info.outputs;
        ls_session_close(s, LS_OK, NULL);
        int64_t *a = predict_and_check(RUN_NAMES[i], "tx.npy", y, n, outputs);
        /* float64 of the same values rounds back to them; [N, ...] any shape
         * of the right size. */
        char code[256];
        snprintf(code, sizeof code, "x = np.load('tx.npy'); np.save('tx64.npy', x.astype('>f8').reshape(%zu, 1, %zu))",
                 n, dim);
        py(code);
        int64_t *b = predict_and_check(RUN_NAMES[i], "tx64.npy", y, n, outputs);
        assert_memory_equal(a, b, n * sizeof *a);
        free(a);
        free(b);
        free(y);
    }
}

/* uint8 features read as v/255, as the arrays task reads them. */
static void test_predict_arrays(void **state)
{
    (void)state;
    need_runs();
    py("y = np.load('yt.npy'); open('yt.bin', 'wb').write(y.astype(np.uint8).tobytes())\n");
    size_t n;
    uint8_t *y = read_all("yt.bin", &n);
    assert_int_equal(n, 200);
    int64_t *a = predict_and_check("arr", "x8t.npy", y, n, 4);
    free(a);
    free(y);
}

/* A declared model (seq): its named tensors exported, its scores predicted. */
static void test_seq(void **state)
{
    (void)state;
    need_runs();
    export_both("sq");
    py("y = np.load('yt.npy'); open('yt.bin', 'wb').write(y.astype(np.uint8).tobytes())\n");
    size_t n;
    uint8_t *y = read_all("yt.bin", &n);
    assert_int_equal(n, 200);
    int64_t *a = predict_and_check("sq", "x8t.npy", y, n, 4);
    free(a);
    free(y);
}

/* gpt: its named tensors exported; its scores (the last position's) on the
 * validation windows the text task cuts (every 64 bytes of cookie's last
 * 10%, 16 bytes each), cut here, give the record's test_acc. */
static void test_gpt(void **state)
{
    (void)state;
    need_runs();
    export_both("gp");
    py("b = np.frombuffer(open('/usr/share/games/fortunes/cookie', 'rb').read(), dtype=np.uint8)\n"
       "v = b[len(b) - len(b) // 10:]\n"
       "n = (len(v) - 16 - 1) // 64 + 1\n"
       "i = np.arange(n)[:, None] * 64 + np.arange(16)[None, :]\n"
       "np.save('gpx.npy', v[i]); open('gpy.bin', 'wb').write(v[np.arange(n) * 64 + 16].tobytes())\n");
    size_t n;
    uint8_t *y = read_all("gpy.bin", &n);
    assert_true(n > 300);
    int64_t *a = predict_and_check("gp", "gpx.npy", y, n, 256);
    free(a);
    free(y);
}

/* ---- a finished run without its data ------------------------------------------------------ */

/* The value of evaluation `name` at run `run`'s last evaluation. */
static double eval_of(const char *run, const char *name)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT e.value FROM evals e JOIN runs r ON r.id = e.run WHERE r.name = ?1 "
                                        "AND e.name = ?2 ORDER BY e.step DESC LIMIT 1",
                                        -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(q, 1, run, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    const double v = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

static void move_file(const char *from, const char *to)
{
    char a[PATH_MAX], b[PATH_MAX];
    tpath(from, a, sizeof a);
    tpath(to, b, sizeof b);
    if (rename(a, b) != 0)
        fail_msg("rename %s %s failed", a, b);
}

/* A finished run's weights need only its checkpoint: with its training
 * files moved away, predict and export --weights give the very bytes they
 * gave before; with a training file changed in place, predict still works
 * (nothing is recomputed) while resume and audit, which recompute, refuse
 * on data_hash. Each failed before the restore loaded data lazily. */
static void test_data_moved(void **state)
{
    (void)state;
    need_runs();
    static const char *const SRC[4] = { "mv_x.npy", "mv_y.npy", "mv_xt.npy", "mv_yt.npy" };
    py("import shutil\n"
       "for a, b in (('x8.npy', 'mv_x.npy'), ('y.npy', 'mv_y.npy'), ('x8t.npy', 'mv_xt.npy'), ('yt.npy', 'mv_yt.npy')):\n"
       "    shutil.copyfile(a, b)\n");
    LS_OK("train", "--task", "arrays", "--train-x", SRC[0], "--train-y", SRC[1], "--test-x", SRC[2], "--test-y", SRC[3],
          "--hidden", "16", "--steps", "20", "--name", "mvd", "--db", "D", "--threads", "2", "--no-progress");
    LS_OK("predict", "mvd", "--input", "x8t.npy", "-o", "mv1.npy", "--db", "D", "--no-progress");
    LS_OK("export", "mvd", "--weights", "mv1.safetensors", "--db", "D", "--no-progress");
    char moved[PATH_MAX];
    tpath("moved", moved, sizeof moved);
    assert_int_equal(mkdir(moved, 0700), 0);
    char to[64];
    for (size_t i = 0; i < 4; i++) {
        snprintf(to, sizeof to, "moved/%s", SRC[i]);
        move_file(SRC[i], to);
    }
    LS_OK("predict", "mvd", "--input", "x8t.npy", "-o", "mv2.npy", "--db", "D", "--threads", "2", "--no-progress");
    LS_OK("export", "mvd", "--weights", "mv2.safetensors", "--db", "D", "--no-progress");
    static const char *const SAME[][2] = { { "mv1.npy", "mv2.npy" }, { "mv1.safetensors", "mv2.safetensors" } };
    for (size_t i = 0; i < 2; i++) {
        size_t la, lb;
        uint8_t *a = read_all(SAME[i][0], &la), *b = read_all(SAME[i][1], &lb);
        if (la != lb || memcmp(a, b, la) != 0)
            fail_msg("%s and %s differ: the data's move changed what the run's weights give", SAME[i][0],
                     SAME[i][1]);
        free(a);
        free(b);
    }
    /* The same names, one training feature changed. */
    for (size_t i = 0; i < 4; i++) {
        snprintf(to, sizeof to, "moved/%s", SRC[i]);
        move_file(to, SRC[i]);
    }
    assert_int_equal(rmdir(moved), 0);
    py("x = np.load('mv_x.npy'); x[0, 0, 0] ^= 1; np.save('mv_x.npy', x)\n");
    LS_OK("predict", "mvd", "--input", "x8t.npy", "-o", "mv3.npy", "--db", "D", "--no-progress");
    size_t la, lb;
    uint8_t *a = read_all("mv1.npy", &la), *b = read_all("mv3.npy", &lb);
    assert_true(la == lb && memcmp(a, b, la) == 0);
    free(a);
    free(b);
    static const char *const RECOMPUTE[][8] = {
        { "resume", "mvd", "--steps", "25", "--no-progress" },
        { "audit", "mvd" },
    };
    for (size_t i = 0; i < 2; i++) {
        const char *args[16];
        size_t n = 0;
        for (; RECOMPUTE[i][n] != NULL; n++)
            args[n] = RECOMPUTE[i][n];
        args[n++] = "--db";
        args[n++] = "D";
        args[n] = NULL;
        proc_res r;
        run_ls(&r, args);
        if (r.code == 0 || (strstr(r.err, "data_hash") == NULL && strstr(r.out, "data_hash") == NULL))
            fail_msg("%s: want a refusal naming data_hash, got exit %d\nstdout: %s\nstderr: %s", r.cmd, r.code, r.out,
                     r.err);
        proc_res_free(&r);
    }
    assert_int_equal(record_of("mvd").step, 20);
}

/* test_loss covers every test sample: it equals the mean cross-entropy of
 * predict's scores over the whole test split, computed here from the
 * float32 scores in binary64 with the engine's ls_exp and ls_log, by the
 * formula of engine/models/mlp/mlp.c's leaf and in the engine's order
 * (docs/formats.md): each batch of B = 32 consecutive samples (the last of
 * the 200 mod 32 = 8 left) summed from 0.0 in sample order — one leaf per
 * batch, as the mlp's leaf of 64 samples is capped by the batch, and the
 * tree of one leaf is that leaf — the batches added in order from 0.0,
 * divided by the 200 samples. Compared bit for bit; the mean over the
 * first 192 samples alone (the old definition) must differ. */
static void test_test_loss_whole_split(void **state)
{
    (void)state;
    need_runs();
    LS_OK("predict", "arr", "--input", "x8t.npy", "-o", "tl.npy", "--db", "D", "--no-progress");
    py("y = np.load('yt.npy'); open('yt.bin', 'wb').write(y.astype(np.uint8).tobytes())\n");
    size_t n;
    uint8_t *y = read_all("yt.bin", &n);
    assert_int_equal(n, 200);
    npy_file S;
    npy_read("tl.npy", &S);
    assert_string_equal(S.descr, "<f4");
    const size_t C = 4, B = 32;
    assert_int_equal(S.shape[0], n);
    assert_int_equal(S.shape[1], C);
    double total = 0.0, first_full = 0.0;
    for (size_t k = 0; k * B < n; k++) {
        double batch = 0.0;
        for (size_t i = k * B; i < n && i < (k + 1) * B; i++) {
            float z[4];
            for (size_t c = 0; c < C; c++) {
                uint32_t u = 0;
                for (int bb = 3; bb >= 0; bb--)
                    u = u << 8 | S.data[4 * (i * C + c) + (size_t)bb];
                memcpy(&z[c], &u, 4);
            }
            float zmax = z[0];
            for (size_t c = 1; c < C; c++)
                if (z[c] > zmax)
                    zmax = z[c];
            const double m = (double)zmax;
            double sum = 0.0;
            for (size_t c = 0; c < C; c++)
                sum = sum + ls_exp((double)z[c] - m);
            batch = batch + (ls_log(sum) - ((double)z[y[i]] - m));
        }
        total = total + batch;
        if ((k + 1) * B <= n)
            first_full = total;
    }
    const double want = total / (double)n, old = first_full / (double)(n / B * B);
    const double got = eval_of("arr", "test_loss");
    if (memcmp(&got, &want, sizeof got) != 0)
        fail_msg("test_loss %.17g, the scores' mean cross-entropy over all %zu test samples %.17g", got, n, want);
    assert_true(old != want);
    free(S.b);
    free(y);
}

/* ---- bad input ------------------------------------------------------------------------------ */

typedef struct {
    const char *args[16];
    const char *want;       /* in the one line on stderr */
} bad_case;

static void test_bad_input(void **state)
{
    (void)state;
    need_runs();
    py("x = np.load('x8t.npy')\n"
       "np.save('wrong.npy', x.reshape(200, 15)[:, :14])\n"
       "np.save('fort.npy', np.asfortranarray(x.reshape(200, 15).astype(np.float32)))\n"
       "np.save('ints.npy', x.astype(np.int32))\n");
    static const bad_case BAD[] = {
        { { "predict", "arr", "--input", "wrong.npy", "-o", "o1.npy" }, "(200, 14)" },
        { { "predict", "arr", "--input", "fort.npy", "-o", "o1.npy" }, "fort.npy" },
        { { "predict", "arr", "--input", "missing.npy", "-o", "o1.npy" }, "missing.npy" },
        { { "predict", "arr", "--input", "ints.npy", "-o", "o1.npy" }, "ints.npy" },
        { { "predict", "arr", "--input", "x8t.npy", "-o", "D" }, "D" },
        { { "predict", "arr", "--input", "x8t.npy", "-o", "D-wal" }, "D-wal" },
        { { "predict", "lg", "--input", "x8t.npy", "-o", "o1.npy" }, "no scores" },
        { { "predict", "arr", "--input", "x8t.npy" }, "-o" },
        { { "predict", "arr", "-o", "o1.npy" }, "--input" },
        { { "predict", "nosuchrun", "--input", "x8t.npy", "-o", "o1.npy" }, "nosuchrun" },
        { { "export", "arr", "--weights", "D" }, "D" },
        { { "export", "arr", "--weights", "o1.txt" }, ".safetensors" },
        { { "export", "arr", "--weights", "o1.npy", "--circuit" }, "--circuit" },
        { { "export", "arr", "--weights", "" }, "--weights" },
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        const char *args[24];
        size_t n = 0;
        for (; BAD[i].args[n] != NULL; n++)
            args[n] = BAD[i].args[n];
        args[n++] = "--db";
        args[n++] = "D";
        args[n++] = "--no-progress";
        args[n] = NULL;
        proc_res r;
        run_ls(&r, args);
        expect_code(&r, 2);
        if (r.out[0] != '\0' || strchr(r.err, '\n') != r.err + strlen(r.err) - 1 ||
            strstr(r.err, BAD[i].want) == NULL)
            fail_msg("%s: want one line on stderr naming '%s', nothing on stdout\nstdout: %s\nstderr: %s", r.cmd,
                     BAD[i].want, r.out, r.err);
        proc_res_free(&r);
    }
    assert_false(file_exists("o1.npy"));
    assert_false(file_exists("o1.txt"));
    assert_int_equal(temp_files_left(), 0);
    /* The record is intact. */
    recorded rec = record_of("arr");
    assert_int_equal(rec.step, 30);
    static const char *const HELP[][2] = { { "predict", "--labels" }, { "export", "--weights" } };
    for (size_t i = 0; i < 2; i++) {
        proc_res r;
        LS(&r, HELP[i][0], "--help");
        expect_code(&r, 0);
        if (strstr(r.out, HELP[i][1]) == NULL)
            fail_msg("%s --help does not mention %s:\n%s", HELP[i][0], HELP[i][1], r.out);
        proc_res_free(&r);
    }
}

/* A record that disagrees with the recomputation: exit 1 naming the step,
 * nothing written. */
static void test_tampered_record(void **state)
{
    (void)state;
    need_runs();
    LS_OK("train", "--task", "teacher", "--model", "linear", "--steps", "30", "--checkpoint-every", "20", "--name",
          "tamper", "--db", "D", "--no-progress");
    /* Step 30's hash disowns the last checkpoint, so the restore starts at
     * step 20's and meets step 25 first. */
    sql_exec("UPDATE steps SET param_hash = (param_hash | 1) - (param_hash & 1) WHERE step IN (25, 30) AND run = "
             "(SELECT id FROM runs WHERE name = 'tamper')");
    uint8_t *y;
    size_t n, dim;
    teacher_split("lin", "tx.npy", &y, &n, &dim);
    free(y);
    proc_res r;
    LS(&r, "predict", "tamper", "--input", "tx.npy", "-o", "t.npy", "--db", "D", "--no-progress");
    expect_code(&r, 1);
    if (strstr(r.err, "step 25") == NULL)
        fail_msg("want step 25 named:\n%s", r.err);
    proc_res_free(&r);
    LS(&r, "export", "tamper", "--weights", "t.safetensors", "--db", "D", "--no-progress");
    expect_code(&r, 1);
    proc_res_free(&r);
    assert_false(file_exists("t.npy"));
    assert_false(file_exists("t.safetensors"));
    assert_int_equal(temp_files_left(), 0);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/lockstep-weights-XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    tpath("D", g_db, sizeof g_db);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    proc_rm_tree(g_dir, 0);
    return 0;
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_weights", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_mlp),
        cmocka_unit_test(test_export_linear),
        cmocka_unit_test(test_export_logic),
        cmocka_unit_test(test_predict_teacher),
        cmocka_unit_test(test_predict_arrays),
        cmocka_unit_test(test_seq),
        cmocka_unit_test(test_gpt),
        cmocka_unit_test(test_data_moved),
        cmocka_unit_test(test_test_loss_whole_split),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_tampered_record),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown) ? 1 : 0;
}
