/* task_arrays.c — the `arrays` task: your own data from NumPy .npy files
 * (engine/data/npy.h), as numpy.save writes them.
 *
 * Sources (where the data are; recorded with the run, not in its config):
 * train_x, train_y (required), test_x, test_y (both or neither). Features:
 * float32, float64 or uint8, shape [N, ...] (each sample flattened, C
 * order); float64 is rounded once to binary32; uint8 reads as v/255, as
 * Fashion-MNIST's pixels do. Labels: any integer dtype (u1 u2 u4 u8 i1 i2 i4
 * i8, either byte order), shape [N], each in 0 .. 2^31 - 2; the class count
 * is the largest label + 1 over both splits (at least 2, at most 2^31 - 1).
 * The data set keeps them as bytes up to 256 classes and as int32 beyond
 * (include/lockstep.h); the identity below does not depend on which. The
 * data's identity (data_hash) = XXH3_64bits of the files' XXH3_64bits
 * (8 bytes LE each, in the order train_x, train_y, test_x, test_y), so a
 * changed file is a different config and a reopened run notices it.
 *
 * ls_arrays_dataset (public) builds the same data set from .npy images in
 * memory (the bytes numpy.save writes, as the Python package hands them):
 * the same checks, the same samples and the same identity as those bytes
 * read from files, so a run fed from memory and one fed from files are one
 * config and one trajectory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/data/dataset.h"
#include "engine/data/npy.h"

enum { SRC_TRAIN_X, SRC_TRAIN_Y, SRC_TEST_X, SRC_TEST_Y, N_SRC };

typedef struct {
    uint8_t *buf;
    size_t len;
    uint64_t hash;
    npy_array a;
    const char *path;
} npy_file;

static ls_status load_one(npy_file *f, const char *path, ls_err *err)
{
    f->path = path;
    ls_status st = npy_read_file(path, &f->buf, &f->len, &f->hash, err);
    if (st == LS_OK)
        st = npy_parse(f->buf, f->len, &f->a, path, err);
    return st == LS_EIO || st == LS_ENOMEM ? st : st == LS_OK ? LS_OK : LS_EFORMAT;
}

/* The largest label: a data set has at most 2^31 - 1 classes (int32). */
#define ARRAYS_MAX_LABEL (INT32_MAX - 1)

/* Checks a split's pair; *n and *dim from the features, *max_label raised to
 * the pair's largest label. */
static ls_status check_pair(const npy_file *x, const npy_file *y, size_t *n, size_t *dim, int64_t *max_label,
                            ls_err *err)
{
    const npy_array *a = &x->a, *b = &y->a;
    if (!((a->kind == 'f') || (a->kind == 'u' && a->size == 1)))
        return ls_fail(err, LS_EFORMAT, "%s: features are %c%zu; arrays takes float32, float64 or uint8", x->path,
                       a->kind, a->size);
    if (a->ndim < 1 || a->shape[0] == 0)
        return ls_fail(err, LS_EFORMAT, "%s: shape: needs [N, ...] with N >= 1 samples", x->path);
    size_t d = 1;
    for (size_t i = 1; i < a->ndim; i++)
        d *= a->shape[i];
    if (d == 0)
        return ls_fail(err, LS_EFORMAT, "%s: shape: a sample has no features", x->path);
    if (b->kind != 'i' && b->kind != 'u')
        return ls_fail(err, LS_EFORMAT, "%s: labels are %s; arrays takes an integer dtype", y->path,
                       b->kind == 'f' ? "floats" : "booleans");
    if (b->ndim != 1)
        return ls_fail(err, LS_EFORMAT, "%s: shape: labels must be [N], one per sample (this has %zu dimensions)",
                       y->path, b->ndim);
    if (b->shape[0] != a->shape[0])
        return ls_fail(err, LS_EFORMAT, "%s: shape: %zu labels for the %zu samples of %s", y->path, b->shape[0],
                       a->shape[0], x->path);
    for (size_t i = 0; i < b->count; i++) {
        const int64_t v = npy_int(b, i);
        if (b->kind == 'u' && b->size == 8 && npy_uint(b, i) > (uint64_t)ARRAYS_MAX_LABEL)
            return ls_fail(err, LS_EFORMAT, "%s: label %zu is %llu; labels must be 0 .. %d", y->path, i,
                           (unsigned long long)npy_uint(b, i), ARRAYS_MAX_LABEL);
        if (v < 0 || v > ARRAYS_MAX_LABEL)
            return ls_fail(err, LS_EFORMAT, "%s: label %zu is %lld; labels must be 0 .. %d", y->path, i,
                           (long long)v, ARRAYS_MAX_LABEL);
        if (v > *max_label)
            *max_label = v;
    }
    ls_status st = npy_check_finite(a, d, x->path, err);
    if (st != LS_OK)
        return st;
    *n = a->shape[0];
    *dim = d;
    return LS_OK;
}

/* The data set of the n_files (2 or 4) parsed images in f; *out NULL on failure. */
static ls_status arrays_build(const npy_file *f, int n_files, ls_dataset **out, ls_err *err)
{
    *out = NULL;
    size_t n_tr = 0, n_te = 0, dim = 0, dim_te = 0;
    int64_t max_label = 0;
    ls_status st = check_pair(&f[SRC_TRAIN_X], &f[SRC_TRAIN_Y], &n_tr, &dim, &max_label, err);
    if (st == LS_OK && n_files == N_SRC) {
        st = check_pair(&f[SRC_TEST_X], &f[SRC_TEST_Y], &n_te, &dim_te, &max_label, err);
        if (st == LS_OK && dim_te != dim)
            st = ls_fail(err, LS_EFORMAT, "%s: shape: %zu features a sample, the training data has %zu", f[SRC_TEST_X].path,
                         dim_te, dim);
        if (st == LS_OK && (f[SRC_TEST_X].a.kind == 'u') != (f[SRC_TRAIN_X].a.kind == 'u'))
            st = ls_fail(err, LS_EFORMAT, "%s: features are %s but the training features are %s", f[SRC_TEST_X].path,
                         f[SRC_TEST_X].a.kind == 'u' ? "uint8" : "floats",
                         f[SRC_TRAIN_X].a.kind == 'u' ? "uint8" : "floats");
    }
    if (st == LS_OK && n_tr > UINT32_MAX)
        st = ls_fail(err, LS_EFORMAT, "%s: %zu samples; at most %u", f[SRC_TRAIN_X].path, n_tr, UINT32_MAX);
    ls_dataset *d = NULL;
    if (st == LS_OK) {
        const int bytes = f[SRC_TRAIN_X].a.kind == 'u';
        const size_t n_classes = max_label < 1 ? 2 : (size_t)max_label + 1;
        /* Byte labels up to 256 classes (every data set of 1.1 stays as it
         * was), int32 beyond, after the features at a multiple of 4 bytes. */
        const int wide = n_classes > DATASET_BYTE_CLASSES;
        const size_t feat = bytes ? 1 : sizeof(float), total = n_tr + n_te, label = wide ? sizeof(int32_t) : 1;
        d = calloc(1, sizeof *d);
        const size_t lab_off = dim <= (SIZE_MAX - 3) / feat / total ? (total * dim * feat + 3) / 4 * 4 : SIZE_MAX;
        uint8_t *mem = d != NULL && lab_off <= SIZE_MAX - label * total ? malloc(lab_off + label * total) : NULL;
        if (mem == NULL) {
            free(d);
            d = NULL;
            st = ls_fail(err, LS_ENOMEM, "task arrays: out of memory for %zu samples of %zu features", total, dim);
        } else {
            uint8_t *x = mem, *y = wide ? NULL : mem + lab_off;
            int32_t *lab = wide ? (int32_t *)(void *)(mem + lab_off) : NULL;
            for (int split = 0; split < 2; split++) {
                const size_t n = split ? n_te : n_tr, first = split ? n_tr : 0;
                if (n == 0)
                    continue;
                const npy_array *xa = &f[split ? SRC_TEST_X : SRC_TRAIN_X].a, *ya = &f[split ? SRC_TEST_Y : SRC_TRAIN_Y].a;
                for (size_t i = 0; i < n * dim; i++) {
                    if (bytes)
                        x[first * dim + i] = xa->data[i];
                    else
                        ((float *)(void *)x)[first * dim + i] = npy_float(xa, i);
                }
                for (size_t i = 0; i < n; i++) {
                    /* check_pair kept every label in 0 .. ARRAYS_MAX_LABEL */
                    if (wide)
                        lab[first + i] = (int32_t)npy_int(ya, i);
                    else
                        y[first + i] = (uint8_t)npy_int(ya, i);
                }
            }
            snprintf(d->name, sizeof d->name, "%s", "arrays");
            d->n_classes = n_classes;
            const float *xf = bytes ? NULL : (const float *)(void *)x;
            d->train = (ls_split){ .n = n_tr, .dim = dim, .x8 = bytes ? x : NULL, .xf = xf, .y = y };
            d->test = (ls_split){ .n = n_te, .dim = dim, .x8 = bytes ? x + n_tr * dim : NULL,
                                  .xf = bytes ? NULL : xf + n_tr * dim, .y = wide ? NULL : y + n_tr };
            d->train_labels = lab;
            d->test_labels = wide ? lab + n_tr : NULL;
            d->mem = mem;
            uint8_t hb[8 * N_SRC];
            for (int i = 0; i < n_files; i++)
                for (int k = 0; k < 8; k++)
                    hb[8 * i + k] = (uint8_t)(f[i].hash >> (8 * k));
            d->hash = XXH3_64bits(hb, 8 * (size_t)n_files);
        }
    }
    if (st == LS_OK)
        *out = d;
    return st;
}

static ls_status arrays_load(const ls_config *cfg, ls_dataset **out, ls_err *err)
{
    *out = NULL;
    static const char *const keys[N_SRC] = { "train_x", "train_y", "test_x", "test_y" };
    const char *path[N_SRC];
    for (int i = 0; i < N_SRC; i++)
        path[i] = ls_config_source(cfg, keys[i]);
    if (!path[SRC_TRAIN_X][0] || !path[SRC_TRAIN_Y][0])
        return ls_fail(err, LS_EINVAL, "task arrays: needs --train-x FILE.npy and --train-y FILE.npy");
    if (!path[SRC_TEST_X][0] != !path[SRC_TEST_Y][0])
        return ls_fail(err, LS_EINVAL, "task arrays: --test-x and --test-y go together");
    const int n_files = path[SRC_TEST_X][0] ? N_SRC : 2;
    npy_file f[N_SRC];
    memset(f, 0, sizeof f);
    ls_status st = LS_OK;
    for (int i = 0; i < n_files && st == LS_OK; i++)
        st = load_one(&f[i], path[i], err);
    if (st == LS_OK)
        st = arrays_build(f, n_files, out, err);
    for (int i = 0; i < N_SRC; i++)
        free(f[i].buf);
    return st;
}

ls_status ls_arrays_dataset(ls_dataset **out, const void *const npy[4], const size_t len[4], ls_err *err)
{
    /* The images' names in messages are the source keys a file would have
     * been given under (train_x, ...), as the Python package's arguments are. */
    static const char *const names[N_SRC] = { "train_x", "train_y", "test_x", "test_y" };
    if (out == NULL || npy == NULL || len == NULL)
        return ls_fail(err, LS_EINVAL, "ls_arrays_dataset: out, npy and len are required");
    *out = NULL;
    if (npy[SRC_TRAIN_X] == NULL || npy[SRC_TRAIN_Y] == NULL)
        return ls_fail(err, LS_EINVAL, "task arrays: needs train_x and train_y");
    if ((npy[SRC_TEST_X] == NULL) != (npy[SRC_TEST_Y] == NULL))
        return ls_fail(err, LS_EINVAL, "task arrays: test_x and test_y go together");
    const int n_files = npy[SRC_TEST_X] != NULL ? N_SRC : 2;
    npy_file f[N_SRC];
    memset(f, 0, sizeof f);
    for (int i = 0; i < n_files; i++) {
        f[i].path = names[i];
        f[i].len = len[i];
        /* The identity of a file is XXH3_64bits of all its bytes: the same here. */
        f[i].hash = XXH3_64bits(npy[i], len[i]);
        if (npy_parse(npy[i], len[i], &f[i].a, names[i], err) != LS_OK)
            return LS_EFORMAT;
    }
    return arrays_build(f, n_files, out, err);
}

static const ls_key arrays_sources[] = {
    { "test_x", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL, "test features, a .npy file (with --test-y)", 0 },
    { "test_y", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL, "test labels, a .npy file of integers", 0 },
    { "train_x", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL, "training features, a .npy file: float32, float64 or uint8", 0 },
    { "train_y", LS_KEY_TEXT, NULL, 0, 0, NULL, NULL, "training labels, a .npy file of integers 0 .. 2147483646", 0 },
};

static const ls_task_defaults arrays_defaults[] = {
    { "*", "batch=64\nleaf=16\n" },
    { NULL, NULL },
};

const ls_task_desc arrays_task = {
    .size = sizeof(ls_task_desc),
    .name = "arrays",
    .summary = "your data from NumPy .npy files (--train-x X.npy --train-y Y.npy [--test-x --test-y])",
    .models = "mlp linear logic",
    .default_steps = 200,
    .defaults = arrays_defaults,
    .sources = arrays_sources,
    .n_sources = sizeof arrays_sources / sizeof arrays_sources[0],
    .load = arrays_load,
};
