/* test_arrays.c — the `arrays` task: .npy files written by numpy itself
 * (Debian's python3-numpy) in several dtypes and byte orders train at 1, 2,
 * 3 and 8 threads to one trajectory; the same data in another dtype or byte
 * order is the same data set; a run reopens from its recorded sources; a
 * changed file is noticed; malformed inputs are refused naming the file;
 * ls_arrays_dataset, the same files' bytes from memory, is the same data
 * set (data_hash and trajectory) and refuses a malformed image by its key.
 * Labels beyond a byte (int32, 1.2): 70000 classes (labels above 65535)
 * train the mlp, and 65536 the seq model (its grammar's largest dense
 * layer), at 1, 2, 3 and 8 threads (and the mlp at leaf 16, 32, 64) to one
 * trajectory, from label files of several integer dtypes to one θ; the
 * loss of step 1, from starting weights whose logits are the last bias
 * alone, equals numpy's float64 cross-entropy of the same labels (which
 * labels cut to 16 or 8 bits would not give). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/lockstep.h"

#define PYTHON "/usr/bin/python3"

static char dir[64], db[128];

static void py(const char *code)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && " PYTHON " - <<'EOF'\nimport numpy as np\n%s\nEOF", dir, code);
    if (system(cmd) != 0)
        fail_msg("numpy failed (is python3-numpy installed? make deps)");
}

/* The many-class data (test_many_classes): 96 training samples (one batch)
 * and 32 test samples of 6 features; labels of 70000 classes (wy*: one file
 * per dtype, the same values) and of 65536 (sy*); starting weights whose
 * last dense layer is zero, so the logits are its bias b; want.txt: numpy's
 * mean cross-entropy of the training labels under b, in float64, for both. */
static void wide_files(void)
{
    py("import json, struct\n"
       "r = np.random.default_rng(34)\n"
       "N, NT, D, H = 96, 32, 6, 8\n"
       "np.save('wx.npy', r.random((N, D), dtype=np.float32))\n"
       "np.save('wxt.npy', r.random((NT, D), dtype=np.float32))\n"
       "def labels(C, n):\n"
       "    y = r.integers(0, C, n)\n"
       "    y[:5] = [C - 1, C // 2, 65535, 256, 255]\n"
       "    y[5:20] = C - 1 - r.integers(0, 4000, 15)\n"
       "    return y\n"
       "y, yt = labels(70000, N), labels(70000, NT)\n"
       "assert (y > 65535).sum() >= 10\n"
       "np.save('wy.npy', y.astype('<i4')); np.save('wyt.npy', yt.astype('<u4'))\n"
       "np.save('wy-u8be.npy', y.astype('>u8')); np.save('wy-i8.npy', y.astype('<i8'))\n"
       "np.save('wy-u4be.npy', y.astype('>u4'))\n"
       "ys, yst = labels(65536, N), labels(65536, NT)\n"
       "np.save('sy.npy', ys.astype('<u2')); np.save('syt.npy', yst.astype('>u2'))\n"
       "def st(path, tensors):\n"
       "    hdr, off, blobs = {}, 0, []\n"
       "    for k, a in tensors:\n"
       "        b = np.ascontiguousarray(a, dtype='<f4').tobytes()\n"
       "        hdr[k] = {'dtype': 'F32', 'shape': list(np.shape(a)), 'data_offsets': [off, off + len(b)]}\n"
       "        off += len(b); blobs.append(b)\n"
       "    h = json.dumps(hdr).encode()\n"
       "    h += b' ' * (-len(h) % 8)\n"
       "    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + b''.join(blobs))\n"
       "def start(C):\n"
       "    return (r.standard_normal((D, H)) * 0.5).astype(np.float32), (np.sin(np.arange(C) * 0.37) * 3).astype(np.float32)\n"
       "def xent(b, y):\n"
       "    b = b.astype(np.float64); m = b.max()\n"
       "    return float(np.mean(m + np.log(np.sum(np.exp(b - m))) - b[y]))\n"
       "w, b = start(70000)\n"
       "st('wide0.safetensors', [('W1', w), ('b1', np.zeros(H)), ('W2', np.zeros((H, 70000))), ('b2', b)])\n"
       "ws, bs = start(65536)\n"
       "st('seq0.safetensors', [('1.w', ws), ('1.b', np.zeros(H)), ('3.w', np.zeros((H, 65536))), ('3.b', bs)])\n"
       "lm, ls = xent(b, y), xent(bs, ys)\n"
       "for cut in (0xffff, 0xff):\n"
       "    assert abs(xent(b, y & cut) - lm) > 1e-6 * lm\n"
       "assert abs(xent(bs, ys & 0xff) - ls) > 1e-6 * ls\n"
       "open('want.txt', 'w').write('%.17g %.17g\\n' % (lm, ls))\n");
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/lockstep-arrays-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(db, sizeof db, "%s/runs.db", dir);
    /* Three classes from a fixed linear rule on 12 features in [0, 1). */
    py("r = np.random.default_rng(7)\n"
       "x = r.random((600, 3, 4), dtype=np.float32)\n"
       "y = np.argmax(x.reshape(600, 12) @ r.standard_normal((12, 3)), axis=1)\n"
       "np.save('x32.npy', x); np.save('y64.npy', y.astype(np.int64))\n"
       "np.save('x64be.npy', x.astype('>f8')); np.save('y32be.npy', y.astype('>i4'))\n"
       "np.save('xt.npy', x[:100]); np.save('yt.npy', y[:100].astype(np.uint8))\n"
       "xb = (x * 255).astype(np.uint8)\n"
       "np.save('x8.npy', xb); np.save('y16.npy', y.astype(np.int16))\n"
       "from numpy.lib import format as F\n"
       "with open('x8v2.npy', 'wb') as f: F.write_array(f, xb, version=(2, 0))\n"
       "np.save('ybad.npy', np.where(np.arange(600) == 17, 2**31 - 1, y))\n"
       "np.save('yneg.npy', np.where(np.arange(600) == 5, -1, y))\n"
       "np.save('yf.npy', y.astype(np.float32))\n"
       "np.save('yshort.npy', y[:599])\n"
       "np.save('xf.npy', np.asfortranarray(x.reshape(600, 12)))\n"
       "np.save('xobj.npy', np.array([None] * 600, dtype=object), allow_pickle=True)\n"
       "np.save('xi32.npy', x.astype(np.int32))\n"
       "np.save('y2d.npy', y.reshape(600, 1))\n"
       "open('trunc.npy', 'wb').write(open('x32.npy', 'rb').read()[:-4])\n"
       "open('notnpy.npy', 'wb').write(b'just text\\n' * 20)\n");
    wide_files();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static ls_config *arrays(const char *x, const char *y, const char *tx, const char *ty)
{
    ls_config *cfg;
    ls_err err;
    assert_int_equal(ls_config_create(&cfg, "arrays", NULL, &err), LS_OK);
    const char *keys[] = { "train_x", "train_y", "test_x", "test_y" }, *files[] = { x, y, tx, ty };
    for (int i = 0; i < 4; i++) {
        if (files[i] == NULL)
            continue;
        char path[192];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        assert_int_equal(ls_config_set(cfg, keys[i], path, &err), LS_OK);
    }
    assert_int_equal(ls_config_set(cfg, "batch", "50", &err), LS_OK);
    assert_int_equal(ls_config_set(cfg, "leaf", "16", &err), LS_OK);
    return cfg;
}

static uint64_t last_param_hash;

/* Train 30 steps; returns the trajectory (θ_30's hash in last_param_hash),
 * and test_acc in *acc (-1: none). */
static uint64_t train(const ls_config *cfg, int threads, const char *name, double *acc)
{
    ls_session_opts o = { .size = sizeof(ls_session_opts),
                          .threads = threads, .db = name ? db : NULL, .name = name, .steps = 30 };
    ls_session *s;
    ls_err err;
    ls_status st = ls_session_open(&s, cfg, &o, &err);
    if (st != LS_OK)
        fail_msg("open: %s", err.msg);
    ls_metric m[LS_MAX_METRICS];
    size_t n = 0;
    if ((st = ls_session_train(s, 0, 0, NULL, m, &n, &err)) != LS_OK)
        fail_msg("train: %s", err.msg);
    ls_session_state ss;
    ls_session_state_get(s, &ss);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    *acc = n > 0 ? m[0].value : -1;
    last_param_hash = ss.param_hash;
    return ss.traj_hash;
}

static void test_threads_and_dtypes(void **state)
{
    (void)state;
    static const int threads[] = { 1, 2, 3, 8 };
    ls_config *cfg = arrays("x32.npy", "y64.npy", "xt.npy", "yt.npy");
    double acc, acc1 = 0;
    uint64_t first = 0;
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "a-t%d", threads[i]);
        uint64_t t = train(cfg, threads[i], name, &acc);
        if (i == 0) {
            first = t;
            acc1 = acc;
        }
        assert_true(t == first);
        assert_memory_equal(&acc, &acc1, sizeof acc);
    }
    assert_true(acc1 > 0.5);   /* it learns the rule */
    const uint64_t theta = last_param_hash;
    ls_config_destroy(cfg);
    /* The same values big-endian in float64 and int32: the features round
     * to the same binary32 values and the labels are equal, but the files'
     * bytes differ, so it is another data set (another data_hash). */
    cfg = arrays("x64be.npy", "y32be.npy", "xt.npy", "yt.npy");
    uint64_t be = train(cfg, 2, NULL, &acc);
    assert_true(be != first);
    assert_true(last_param_hash == theta);   /* ... yet the same values train the same θ, bit for bit */
    ls_config_destroy(cfg);
    /* uint8 features, int16 labels; a version 2.0 file of the same array
     * trains to the same run but for its identity. */
    cfg = arrays("x8.npy", "y16.npy", NULL, NULL);
    uint64_t u8 = train(cfg, 3, NULL, &acc);
    assert_true(acc == -1);   /* no test split: no figure */
    const uint64_t theta8 = last_param_hash;
    assert_true(theta8 != theta);
    ls_config_destroy(cfg);
    cfg = arrays("x8v2.npy", "y16.npy", NULL, NULL);
    uint64_t u8v2 = train(cfg, 8, NULL, &acc);
    assert_true(u8v2 != u8);
    assert_true(last_param_hash == theta8);
    ls_config_destroy(cfg);
}

static void test_reopen_and_changed_data(void **state)
{
    (void)state;
    ls_session *s;
    ls_err err;
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 2 };
    /* The run reopens from the sources it recorded: no paths given. */
    assert_int_equal(ls_session_reopen(&s, db, "a-t1", LS_REOPEN_RESTORE, &o, &err), LS_OK);
    ls_session_state ss;
    ls_session_state_get(s, &ss);
    assert_int_equal(ss.step, 30);
    ls_session_close(s, LS_OK, &err);
    /* A changed test file: a restore that recomputes nothing does not read
     * the data, but evaluating (which does) and an audit (which recomputes)
     * find that the data's identity no longer matches. */
    py("y = np.load('yt.npy'); y[0] = (y[0] + 1) % 3; np.save('yt.npy', y)");
    assert_int_equal(ls_session_reopen(&s, db, "a-t1", LS_REOPEN_RESTORE, &o, &err), LS_OK);
    ls_metric m[LS_MAX_METRICS];
    size_t nm;
    assert_int_equal(ls_session_evaluate(s, m, &nm, &err), LS_EMISMATCH);
    assert_non_null(strstr(err.msg, "data_hash"));
    ls_session_close(s, LS_OK, NULL);
    assert_int_equal(ls_session_reopen(&s, db, "a-t1", LS_REOPEN_AUDIT, &o, &err), LS_EMISMATCH);
    assert_non_null(strstr(err.msg, "data_hash"));
}

static void refused(const char *x, const char *y, const char *file, const char *what)
{
    ls_config *cfg = arrays(x, y, NULL, NULL);
    ls_session *s;
    ls_err err = { { 0 } };
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = 1 };
    ls_status st = ls_session_open(&s, cfg, &o, &err);
    assert_true(st == LS_EFORMAT || st == LS_EIO);
    if (strstr(err.msg, file) == NULL || strstr(err.msg, what) == NULL)
        fail_msg("'%s' does not name %s and '%s'", err.msg, file, what);
    ls_config_destroy(cfg);
}

static void test_bad_files(void **state)
{
    (void)state;
    refused("x32.npy", "ybad.npy", "ybad.npy", "label 17");
    refused("x32.npy", "yneg.npy", "yneg.npy", "label 5");
    refused("x32.npy", "yf.npy", "yf.npy", "integer");
    refused("x32.npy", "yshort.npy", "yshort.npy", "599 labels");
    refused("xf.npy", "y64.npy", "xf.npy", "fortran_order");
    refused("xobj.npy", "y64.npy", "xobj.npy", "dtype");
    refused("xi32.npy", "y64.npy", "xi32.npy", "float32, float64 or uint8");
    refused("x32.npy", "y2d.npy", "y2d.npy", "shape");
    refused("trunc.npy", "y64.npy", "trunc.npy", "truncated");
    refused("notnpy.npy", "y64.npy", "notnpy.npy", "magic");
    refused("missing.npy", "y64.npy", "missing.npy", "No such file");
    refused(".", "y64.npy", "/.", "regular");
}

/* A whole file of dir into memory (malloc'ed). */
static uint8_t *slurp(const char *name, size_t *len)
{
    char path[192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *buf = malloc(1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, 1 << 20, f);
    assert_true(*len > 0 && *len < (1 << 20));
    fclose(f);
    return buf;
}

static void test_in_memory(void **state)
{
    (void)state;
    static const char *const files[4] = { "x32.npy", "y64.npy", "xt.npy", "yt.npy" };
    const void *img[4];
    size_t len[4];
    uint8_t *buf[4];
    for (int i = 0; i < 4; i++)
        img[i] = buf[i] = slurp(files[i], &len[i]);
    ls_dataset *d = NULL;
    ls_err err = { { 0 } };
    assert_int_equal(ls_arrays_dataset(&d, img, len, &err), LS_OK);
    assert_int_equal(d->train.n, 600);
    assert_int_equal(d->test.n, 100);
    /* The files trained from their paths, and the same bytes from memory
     * (no sources, the data set in the options) at other thread counts. */
    double acc;
    ls_config *cfg = arrays("x32.npy", "y64.npy", "xt.npy", "yt.npy");
    const uint64_t want = train(cfg, 1, NULL, &acc);
    ls_config_destroy(cfg);
    static const int counts[] = { 2, 3, 8 };
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        const int threads = counts[k];
        ls_config *mem = arrays(NULL, NULL, NULL, NULL);   /* the same settings, no sources */
        ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = threads, .steps = 30, .data = d };
        ls_session *s;
        if (ls_session_open(&s, mem, &o, &err) != LS_OK)
            fail_msg("open: %s", err.msg);
        assert_int_equal(ls_session_train(s, 0, 0, NULL, NULL, NULL, &err), LS_OK);
        ls_session_state ss;
        ls_session_state_get(s, &ss);
        assert_int_equal(ls_config_u64(ls_session_config(s), "data_hash"), d->hash);
        assert_int_equal(ss.traj_hash, want);
        ls_session_close(s, LS_OK, NULL);
        ls_config_destroy(mem);
    }
    ls_dataset_destroy(d);
    /* Refused, naming the image by its key. */
    const void *bad[4] = { img[0], "not an npy image", NULL, NULL };
    size_t bad_len[4] = { len[0], 16, 0, 0 };
    d = NULL;
    assert_int_equal(ls_arrays_dataset(&d, bad, bad_len, &err), LS_EFORMAT);
    assert_null(d);
    assert_non_null(strstr(err.msg, "train_y"));
    const void *half[4] = { img[0], img[1], img[2], NULL };
    assert_int_equal(ls_arrays_dataset(&d, half, len, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "test_y"));
    for (int i = 0; i < 4; i++)
        free(buf[i]);
}

/* A run of the many-class data: model mlp (hidden 8, leaf 16) on wy-style
 * labels of 70000 classes, or seq (dense:8,relu,dense:65536) on sy-style
 * ones; batch 96, the whole training split, from the starting weights
 * `init` (NULL: the model's own). Returns the trajectory; θ's hash in
 * last_param_hash, the last step's loss in *loss, test_acc in *acc. */
static const char *wide_leaf = "16";   /* mlp's leaf: a speed setting, not in the config */

static uint64_t train_wide(const char *model, const char *y, const char *ty, const char *init, int threads,
                           int64_t steps, double *loss, double *acc)
{
    ls_config *cfg;
    ls_err err;
    assert_int_equal(ls_config_create(&cfg, "arrays", model, &err), LS_OK);
    const char *keys[] = { "train_x", "train_y", "test_x", "test_y", "init" };
    const char *files[] = { "wx.npy", y, "wxt.npy", ty, init };
    for (int i = 0; i < 5; i++) {
        if (files[i] == NULL)
            continue;
        char path[192];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (ls_config_set(cfg, keys[i], path, &err) != LS_OK)
            fail_msg("%s: %s", keys[i], err.msg);
    }
    assert_int_equal(ls_config_set(cfg, "batch", "96", &err), LS_OK);
    if (strcmp(model, "mlp") == 0) {
        assert_int_equal(ls_config_set(cfg, "hidden", "8", &err), LS_OK);
        assert_int_equal(ls_config_set(cfg, "leaf", wide_leaf, &err), LS_OK);
    } else {
        assert_int_equal(ls_config_set(cfg, "layers", "dense:8,relu,dense:65536", &err), LS_OK);
    }
    ls_session_opts o = { .size = sizeof(ls_session_opts), .threads = threads, .steps = steps };
    ls_session *s;
    if (ls_session_open(&s, cfg, &o, &err) != LS_OK)
        fail_msg("open %s at %d threads: %s", model, threads, err.msg);
    ls_metric m[LS_MAX_METRICS];
    size_t n = 0;
    if (ls_session_train(s, 0, 0, NULL, m, &n, &err) != LS_OK)
        fail_msg("train %s at %d threads: %s", model, threads, err.msg);
    ls_session_state ss;
    ls_session_state_get(s, &ss);
    assert_int_equal(ls_session_close(s, LS_OK, &err), LS_OK);
    ls_config_destroy(cfg);
    *acc = n > 0 ? m[0].value : -1;
    *loss = ss.loss;
    last_param_hash = ss.param_hash;
    return ss.traj_hash;
}

static void test_many_classes(void **state)
{
    (void)state;
    char path[192];
    snprintf(path, sizeof path, "%s/want.txt", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    double want[2];
    assert_int_equal(fscanf(f, "%lf %lf", &want[0], &want[1]), 2);
    fclose(f);
    static const char *const models[2] = { "mlp", "seq" };
    static const char *const ys[2] = { "wy.npy", "sy.npy" }, *const tys[2] = { "wyt.npy", "syt.npy" };
    static const char *const inits[2] = { "wide0.safetensors", "seq0.safetensors" };
    static const int threads[] = { 1, 2, 3, 8 };
    for (int k = 0; k < 2; k++) {
        /* Step 1 from logits = b: numpy's loss for these labels (to float64
         * rounding: the engine's exp, log and sum orders are its own). */
        double loss, acc;
        train_wide(models[k], ys[k], tys[k], inits[k], 3, 1, &loss, &acc);
        if (!(fabs(loss - want[k]) <= 1e-9 * want[k]))
            fail_msg("%s: step 1's loss %.17g, numpy's %.17g", models[k], loss, want[k]);
        /* One trajectory at every thread count. */
        uint64_t first = 0, theta = 0;
        double acc1 = 0;
        for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
            const uint64_t t = train_wide(models[k], ys[k], tys[k], NULL, threads[i], 6, &loss, &acc);
            if (i == 0) {
                first = t;
                theta = last_param_hash;
                acc1 = acc;
            }
            if (t != first)
                fail_msg("%s: the trajectory at %d threads differs from 1 thread's", models[k], threads[i]);
            assert_memory_equal(&acc, &acc1, sizeof acc);
        }
        assert_true(acc1 >= 0);   /* evaluated over the int32 test labels */
        /* The same labels in other dtypes: another data set, the same θ;
         * the mlp's leaf of 32 and 64 samples: the same trajectory. */
        if (k == 0) {
            static const char *const leaves[] = { "32", "64" };
            for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
                wide_leaf = leaves[i];
                if (train_wide("mlp", ys[k], tys[k], NULL, 3, 6, &loss, &acc) != first)
                    fail_msg("mlp: the trajectory at leaf %s differs from leaf 16's", leaves[i]);
                wide_leaf = "16";
            }
            static const char *const other[] = { "wy-u8be.npy", "wy-i8.npy", "wy-u4be.npy" };
            for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
                const uint64_t t = train_wide("mlp", other[i], "wyt.npy", NULL, 2, 6, &loss, &acc);
                assert_true(t != first);
                if (last_param_hash != theta)
                    fail_msg("%s: another θ than the int32 file's", other[i]);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_and_dtypes),
        cmocka_unit_test(test_reopen_and_changed_data),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_in_memory),
        cmocka_unit_test(test_many_classes),
    };
    return cmocka_run_group_tests(tests, setup, teardown) ? 1 : 0;
}
