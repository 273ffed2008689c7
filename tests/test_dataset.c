/* test_dataset.c — Fashion-MNIST loading (the real files and hand-made bad
 * ones), IDX parsing, the teacher data set and dataset_gather.
 *
 * Independent paths: the real files are decoded a second time here with
 * zlib's gzopen/gzread (not inflate) and compared byte for byte; the data set
 * hash is rebuilt from the files read with stdio; the pixel values and labels
 * pinned below were printed by python3's gzip module; bad files are written
 * with gzopen/gzwrite into a temporary directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zlib.h>

#include "base/bytes.h"
#include "engine/data/dataset.h"
#include "engine/data/idx.h"
#include "engine/num/rng.h"
#include "engine/tasks/fashion_mnist.h"
#include "engine/tasks/teacher.h"

static const char *const FILES[4] = {
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
};

/* ---------- helpers ---------- */

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    uint8_t *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Whole file decompressed with gzread: a second path next to inflate. */
static uint8_t *gz_decode(const char *path, size_t *len)
{
    gzFile g = gzopen(path, "rb");
    assert_non_null(g);
    size_t cap = 1 << 20, n = 0;
    uint8_t *b = malloc(cap);
    assert_non_null(b);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap);
            assert_non_null(b);
        }
        size_t want = cap - n > (1u << 30) ? (1u << 30) : cap - n;
        int got = gzread(g, b + n, (unsigned)want);
        assert_true(got >= 0);
        if (got == 0)
            break;
        n += (size_t)got;
    }
    assert_int_equal(gzclose(g), Z_OK);
    *len = n;
    return b;
}

static void gz_write(const char *path, const void *p, size_t n)
{
    gzFile g = gzopen(path, "wb");
    assert_non_null(g);
    if (n > 0)
        assert_int_equal(gzwrite(g, p, (unsigned)n), (int)n);
    assert_int_equal(gzclose(g), Z_OK);
}

static uint8_t *gz_bytes(const void *p, size_t n, const char *tmp_path, size_t *gz_len)
{
    gz_write(tmp_path, p, n);
    uint8_t *b = read_file(tmp_path, gz_len);
    unlink(tmp_path);
    return b;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* An IDX file: magic, ndims sizes, then data_len bytes of pattern. */
static uint8_t *make_idx(uint32_t magic, const uint32_t *dims, int ndims, size_t data_len, uint8_t seed,
                         size_t *len)
{
    size_t hdr = 4 + 4 * (size_t)ndims;
    uint8_t *b = malloc(hdr + data_len + 1);
    assert_non_null(b);
    put_be32(b, magic);
    for (int i = 0; i < ndims; i++)
        put_be32(b + 4 + 4 * i, dims[i]);
    for (size_t i = 0; i < data_len; i++)
        b[hdr + i] = (uint8_t)(i * 7u + seed);
    *len = hdr + data_len;
    return b;
}

/* A small well-formed data set: 4 train and 3 test images of 28x28, label
 * of sample i = (i * 3 + split) % 10. */
#define SMALL_TRAIN 4
#define SMALL_TEST 3

typedef struct {
    char dir[64];
    char path[4][128];
} tmpset;

static void write_images(const char *path, uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols,
                         size_t extra, long missing, uint8_t seed)
{
    uint32_t dims[3] = {n, rows, cols};
    size_t data = (size_t)n * rows * cols + extra - (size_t)missing;
    size_t len;
    uint8_t *b = make_idx(magic, dims, 3, data, seed, &len);
    gz_write(path, b, len);
    free(b);
}

static void write_labels(const char *path, uint32_t n, int split, long bad_index, uint8_t bad_value)
{
    uint32_t dims[1] = {n};
    size_t len;
    uint8_t *b = make_idx(0x00000801, dims, 1, n, 0, &len);
    for (uint32_t i = 0; i < n; i++)
        b[8 + i] = (uint8_t)((i * 3u + (uint32_t)split) % 10u);
    if (bad_index >= 0)
        b[8 + bad_index] = bad_value;
    gz_write(path, b, len);
    free(b);
}

static void tmpset_create(tmpset *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/test_dataset.XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    /* A copy of the directory name: gcc -O1 cannot see that t->dir and
     * t->path[i] do not overlap (-Wrestrict). */
    char dir[sizeof t->dir];
    memcpy(dir, t->dir, sizeof dir);
    for (int i = 0; i < 4; i++)
        snprintf(t->path[i], sizeof t->path[i], "%s/%s", dir, FILES[i]);
    write_images(t->path[0], 0x803, SMALL_TRAIN, 28, 28, 0, 0, 1);
    write_labels(t->path[1], SMALL_TRAIN, 0, -1, 0);
    write_images(t->path[2], 0x803, SMALL_TEST, 28, 28, 0, 0, 2);
    write_labels(t->path[3], SMALL_TEST, 1, -1, 0);
}

static void tmpset_destroy(tmpset *t)
{
    for (int i = 0; i < 4; i++)
        unlink(t->path[i]);
    assert_int_equal(rmdir(t->dir), 0);
}

/* hash = XXH3 of the four files' XXH3 values, 8 bytes LE each. */
static uint64_t expected_hash(char paths[4][128])
{
    uint8_t hb[32];
    for (int i = 0; i < 4; i++) {
        size_t n;
        uint8_t *b = read_file(paths[i], &n);
        uint64_t h = XXH3_64bits(b, n);
        free(b);
        for (int k = 0; k < 8; k++)
            hb[8 * i + k] = (uint8_t)(h >> (8 * k));
    }
    return XXH3_64bits(hb, sizeof hb);
}

/* Loads t->dir and expects failure st with a message that contains both the
 * file's path and the words. */
static void expect_fail(const tmpset *t, int file, ls_status st, const char *words)
{
    ls_dataset *d = (ls_dataset *)1;
    ls_err err = {{0}};
    ls_status got = fashion_mnist_load(&d, t->dir, &err);
    if (got != st || strstr(err.msg, t->path[file]) == NULL || strstr(err.msg, words) == NULL)
        fail_msg("status %d, message '%s'; expected status %d naming %s and '%s'", (int)got, err.msg, (int)st,
                 t->path[file], words);
    assert_null(d);
}

/* Whether the four files were inflated straight into the data set's one
 * allocation (idx.c): then it holds the inflated files end to end, each
 * split's bytes just past its file's header (16 bytes before images, 8
 * before labels); a file that went the one-buffer path leaves the data
 * copied end to end without headers. A fast path that silently never runs
 * would pass every other test. */
static void expect_direct(const ls_dataset *d, int direct)
{
    const uint8_t *mem = d->mem;
    const size_t hx = direct ? 16 : 0, hy = direct ? 8 : 0;
    assert_ptr_equal(d->train.x8, mem + hx);
    assert_ptr_equal(d->train.y, d->train.x8 + d->train.n * d->train.dim + hy);
    assert_ptr_equal(d->test.x8, d->train.y + d->train.n + hx);
    assert_ptr_equal(d->test.y, d->test.x8 + d->test.n * d->test.dim + hy);
}

/* ---------- the real Fashion-MNIST ---------- */

static void test_fashion_real(void **state)
{
    (void)state;
    char paths[4][128];
    for (int i = 0; i < 4; i++)
        snprintf(paths[i], sizeof paths[i], "%s/%s", FASHION_MNIST_DIR, FILES[i]);
    ls_dataset *d = NULL;
    ls_err err = {{0}};
    ls_status st = fashion_mnist_load(&d, FASHION_MNIST_DIR, &err);
    if (st != LS_OK)
        fail_msg("%s (is the dataset-fashion-mnist package installed?)", err.msg);
    assert_string_equal(d->name, "fashion-mnist");
    assert_int_equal(d->n_classes, 10);
    assert_int_equal(d->train.n, 60000);
    assert_int_equal(d->test.n, 10000);
    assert_int_equal(d->train.dim, 784);
    assert_int_equal(d->test.dim, 784);
    assert_non_null(d->train.x8);
    assert_null(d->train.xf);
    assert_non_null(d->test.x8);
    assert_null(d->test.xf);
    size_t count[10] = {0};
    for (size_t i = 0; i < d->train.n; i++) {
        assert_true(d->train.y[i] < 10);
        count[d->train.y[i]]++;
    }
    for (size_t k = 0; k < 10; k++)
        assert_int_equal(count[k], 6000); /* Fashion-MNIST's train split is balanced */
    for (size_t i = 0; i < d->test.n; i++)
        assert_true(d->test.y[i] < 10);

    /* Printed once by python3: gzip.open(f).read(), pixel of sample s at
     * (r, c) = data[16 + s*784 + r*28 + c], label = data[8 + s]. */
    static const struct { size_t s, r, c; uint8_t v; } train_px[] = {
        {0, 0, 0, 0}, {0, 10, 14, 228}, {0, 14, 14, 217}, {1, 20, 5, 1}, {59999, 13, 13, 0}, {12345, 7, 21, 190},
    };
    static const struct { size_t s, r, c; uint8_t v; } test_px[] = {
        {0, 14, 14, 110}, {9999, 14, 14, 132}, {5000, 10, 10, 228},
    };
    for (size_t i = 0; i < sizeof train_px / sizeof train_px[0]; i++)
        assert_int_equal(d->train.x8[train_px[i].s * 784 + train_px[i].r * 28 + train_px[i].c], train_px[i].v);
    for (size_t i = 0; i < sizeof test_px / sizeof test_px[0]; i++)
        assert_int_equal(d->test.x8[test_px[i].s * 784 + test_px[i].r * 28 + test_px[i].c], test_px[i].v);
    static const uint8_t train_y0[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
    static const uint8_t test_y0[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
    assert_memory_equal(d->train.y, train_y0, 10);
    assert_memory_equal(d->test.y, test_y0, 10);
    assert_int_equal(d->train.y[12345], 8);
    assert_int_equal(d->train.y[59999], 5);
    assert_int_equal(d->test.y[5000], 2);
    assert_int_equal(d->test.y[9999], 5);
    unsigned long sum0 = 0;
    for (size_t k = 0; k < 784; k++)
        sum0 += d->train.x8[k];
    assert_int_equal(sum0, 76247);

    /* Every byte against the gzread decode. */
    const uint8_t *mine[4] = {d->train.x8, d->train.y, d->test.x8, d->test.y};
    const size_t hdr[4] = {16, 8, 16, 8};
    const size_t n[4] = {60000 * 784, 60000, 10000 * 784, 10000};
    for (int i = 0; i < 4; i++) {
        size_t len;
        uint8_t *ref = gz_decode(paths[i], &len);
        assert_int_equal(len, hdr[i] + n[i]);
        assert_memory_equal(mine[i], ref + hdr[i], n[i]);
        free(ref);
    }

    assert_int_equal(d->hash, expected_hash(paths));
    expect_direct(d, 1);
    ls_dataset *d2 = NULL;
    assert_int_equal(fashion_mnist_load(&d2, FASHION_MNIST_DIR, &err), LS_OK);
    assert_int_equal(d2->hash, d->hash);
    dataset_destroy(d2);
    /* The test split inflated on a second thread (idx_load_threads): the
     * same bytes and hash. */
    static const int threads[] = {2, 3, 8};
    for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
        const int prev = idx_load_threads(threads[ti]);
        assert_int_equal(fashion_mnist_load(&d2, FASHION_MNIST_DIR, &err), LS_OK);
        idx_load_threads(prev);
        assert_int_equal(d2->hash, d->hash);
        expect_direct(d2, 1);
        const uint8_t *theirs[4] = {d2->train.x8, d2->train.y, d2->test.x8, d2->test.y};
        for (int i = 0; i < 4; i++)
            assert_memory_equal(theirs[i], mine[i], n[i]);
        dataset_destroy(d2);
    }
    dataset_destroy(d);
    dataset_destroy(NULL);
}

/* ---------- small files ---------- */

static void test_fashion_small_ok(void **state)
{
    (void)state;
    tmpset t;
    tmpset_create(&t);
    ls_dataset *d = NULL;
    ls_err err = {{0}};
    assert_int_equal(fashion_mnist_load(&d, t.dir, &err), LS_OK);
    assert_int_equal(d->train.n, SMALL_TRAIN);
    assert_int_equal(d->test.n, SMALL_TEST);
    for (size_t i = 0; i < SMALL_TRAIN * 784; i++)
        assert_int_equal(d->train.x8[i], (uint8_t)(i * 7u + 1));
    for (size_t i = 0; i < SMALL_TEST * 784; i++)
        assert_int_equal(d->test.x8[i], (uint8_t)(i * 7u + 2));
    for (size_t i = 0; i < SMALL_TRAIN; i++)
        assert_int_equal(d->train.y[i], (i * 3) % 10);
    for (size_t i = 0; i < SMALL_TEST; i++)
        assert_int_equal(d->test.y[i], (i * 3 + 1) % 10);
    assert_int_equal(d->hash, expected_hash(t.path));
    expect_direct(d, 1);
    uint64_t h = d->hash;
    dataset_destroy(d);

    /* Two gzip members concatenated are one file, as for gunzip; the data
     * is the same, the identity (over the .gz bytes) is not. */
    uint32_t dims[1] = {SMALL_TRAIN};
    size_t len, la, lb;
    uint8_t *raw = make_idx(0x801, dims, 1, SMALL_TRAIN, 0, &len);
    for (uint32_t i = 0; i < SMALL_TRAIN; i++)
        raw[8 + i] = (uint8_t)((i * 3u) % 10u);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s/part", t.dir);
    uint8_t *a = gz_bytes(raw, 5, tmp, &la);
    uint8_t *b = gz_bytes(raw + 5, len - 5, tmp, &lb);
    uint8_t *both = malloc(la + lb);
    assert_non_null(both);
    memcpy(both, a, la);
    memcpy(both + la, b, lb);
    write_file(t.path[1], both, la + lb);
    assert_int_equal(fashion_mnist_load(&d, t.dir, &err), LS_OK);
    assert_int_equal(d->train.y[3], 9);
    assert_int_not_equal(d->hash, h);
    dataset_destroy(d);
    free(both);
    free(a);
    free(b);
    free(raw);
    tmpset_destroy(&t);
}

static void test_fashion_bad_inputs(void **state)
{
    (void)state;
    tmpset t;

    /* missing file */
    tmpset_create(&t);
    unlink(t.path[3]);
    expect_fail(&t, 3, LS_EIO, "No such file or directory");
    tmpset_destroy(&t);

    /* not a regular file: a FIFO nobody writes (a plain open would block
     * forever), a directory, a device that never ends; refused at once */
    tmpset_create(&t);
    unlink(t.path[2]);
    assert_int_equal(mkfifo(t.path[2], 0644), 0);
    expect_fail(&t, 2, LS_EIO, "is a FIFO, not a regular file");
    unlink(t.path[2]);
    assert_int_equal(mkdir(t.path[2], 0755), 0);
    expect_fail(&t, 2, LS_EIO, "is a directory, not a regular file");
    rmdir(t.path[2]);
    assert_int_equal(symlink("/dev/zero", t.path[2]), 0);
    expect_fail(&t, 2, LS_EIO, "is a device, not a regular file");
    tmpset_destroy(&t);

    /* truncated gzip: the trailer, or half the stream, cut off */
    tmpset_create(&t);
    size_t len;
    uint8_t *gz = read_file(t.path[1], &len);
    write_file(t.path[1], gz, len - 4);
    expect_fail(&t, 1, LS_EFORMAT, "corrupt gzip data");
    write_file(t.path[1], gz, len / 2);
    expect_fail(&t, 1, LS_EFORMAT, "corrupt gzip data (unexpected end of file)");
    write_file(t.path[1], gz, 0);
    expect_fail(&t, 1, LS_EFORMAT, "corrupt gzip data");
    /* junk after the gzip stream */
    uint8_t *junk = malloc(len + 3);
    memcpy(junk, gz, len);
    memcpy(junk + len, "abc", 3);
    write_file(t.path[1], junk, len + 3);
    expect_fail(&t, 1, LS_EFORMAT, "trailing bytes after the gzip stream");
    free(junk);
    free(gz);
    tmpset_destroy(&t);

    /* corrupted bytes: every position of the deflate data and trailer
     * (after the 10-byte gzip header), each flipped */
    tmpset_create(&t);
    gz = read_file(t.path[3], &len);
    for (size_t pos = 10; pos < len; pos++) {
        gz[pos] ^= 0xff;
        write_file(t.path[3], gz, len);
        expect_fail(&t, 3, LS_EFORMAT, "corrupt gzip data (");
        gz[pos] ^= 0xff;
    }
    gz[len - 6] ^= 0x01; /* CRC-32 byte */
    write_file(t.path[3], gz, len);
    expect_fail(&t, 3, LS_EFORMAT, "corrupt gzip data (incorrect data check)");
    free(gz);
    tmpset_destroy(&t);

    /* not gzip at all: the raw IDX bytes */
    tmpset_create(&t);
    uint32_t dims1[1] = {SMALL_TEST};
    uint8_t *raw = make_idx(0x801, dims1, 1, SMALL_TEST, 0, &len);
    write_file(t.path[3], raw, len);
    free(raw);
    expect_fail(&t, 3, LS_EFORMAT, "corrupt gzip data (incorrect header check)");
    tmpset_destroy(&t);

    /* wrong magic */
    tmpset_create(&t);
    write_images(t.path[0], 0x802, SMALL_TRAIN, 28, 28, 0, 0, 1);
    expect_fail(&t, 0, LS_EFORMAT, "bad magic number 0x00000802, expected 0x00000803");
    tmpset_destroy(&t);
    tmpset_create(&t);
    write_images(t.path[3], 0x803, SMALL_TEST, 28, 28, 0, 0, 1); /* images where labels belong */
    expect_fail(&t, 3, LS_EFORMAT, "bad magic number 0x00000803, expected 0x00000801");
    tmpset_destroy(&t);

    /* a label out of range: the exact message */
    tmpset_create(&t);
    uint32_t dims5[1] = {8};
    write_images(t.path[0], 0x803, 8, 28, 28, 0, 0, 1);
    raw = make_idx(0x801, dims5, 1, 8, 0, &len);
    for (int i = 0; i < 8; i++)
        raw[8 + i] = (uint8_t)i;
    raw[8 + 5] = 11;
    gz_write(t.path[1], raw, len);
    free(raw);
    {
        ls_dataset *d = NULL;
        ls_err err = {{0}};
        char want[256];
        snprintf(want, sizeof want, "%s: label 11 at index 5 is out of range (0..9)", t.path[1]);
        assert_int_equal(fashion_mnist_load(&d, t.dir, &err), LS_EFORMAT);
        assert_string_equal(err.msg, want);
        assert_null(d);
    }
    tmpset_destroy(&t);
    tmpset_create(&t);
    write_labels(t.path[3], SMALL_TEST, 1, SMALL_TEST - 1, 10);
    expect_fail(&t, 3, LS_EFORMAT, "label 10 at index 2 is out of range");
    tmpset_destroy(&t);

    /* image count != label count */
    tmpset_create(&t);
    write_labels(t.path[3], SMALL_TEST + 1, 1, -1, 0);
    expect_fail(&t, 3, LS_EFORMAT, "4 labels, but");
    tmpset_destroy(&t);

    /* trailing bytes after the data */
    tmpset_create(&t);
    write_images(t.path[2], 0x803, SMALL_TEST, 28, 28, 1, 0, 1);
    expect_fail(&t, 2, LS_EFORMAT, "1 trailing bytes");
    tmpset_destroy(&t);

    /* the header claims more data than present */
    tmpset_create(&t);
    write_images(t.path[0], 0x803, SMALL_TRAIN, 28, 28, 0, 1, 1);
    expect_fail(&t, 0, LS_EFORMAT, "truncated");
    tmpset_destroy(&t);
    tmpset_create(&t);
    uint8_t hdr_only[6] = {0, 0, 8, 1, 0, 0};
    gz_write(t.path[1], hdr_only, sizeof hdr_only);
    expect_fail(&t, 1, LS_EFORMAT, "truncated IDX header");
    tmpset_destroy(&t);

    /* not 28x28 */
    tmpset_create(&t);
    write_images(t.path[0], 0x803, SMALL_TRAIN, 27, 28, 0, 0, 1);
    expect_fail(&t, 0, LS_EFORMAT, "images are 27x28, expected 28x28");
    tmpset_destroy(&t);

    /* a data set of no images */
    tmpset_create(&t);
    write_images(t.path[2], 0x803, 0, 28, 28, 0, 0, 1);
    write_labels(t.path[3], 0, 1, -1, 0);
    expect_fail(&t, 2, LS_EFORMAT, "no images");
    tmpset_destroy(&t);

    /* a directory that does not exist */
    {
        ls_dataset *d = NULL;
        ls_err err = {{0}};
        assert_int_equal(fashion_mnist_load(&d, "/nonexistent/dir", &err), LS_EIO);
        assert_non_null(strstr(err.msg, "/nonexistent/dir/train-images-idx3-ubyte.gz: No such file"));
    }
}

/* The same cases with the test split loaded on a second thread: the same
 * statuses and messages; and with a bad file in each split, the first in
 * header order is still the one reported. */
static void test_fashion_bad_inputs_threads(void **state)
{
    const int prev = idx_load_threads(2);
    test_fashion_bad_inputs(state);
    tmpset t;
    tmpset_create(&t);
    write_images(t.path[0], 0x802, SMALL_TRAIN, 28, 28, 0, 0, 1);
    unlink(t.path[3]);
    expect_fail(&t, 0, LS_EFORMAT, "bad magic number 0x00000802, expected 0x00000803");
    tmpset_destroy(&t);
    tmpset_create(&t);
    write_labels(t.path[1], SMALL_TRAIN + 1, 0, -1, 0);
    write_images(t.path[2], 0x803, SMALL_TEST, 28, 28, 1, 0, 1);
    expect_fail(&t, 1, LS_EFORMAT, "labels, but");
    tmpset_destroy(&t);
    idx_load_threads(prev);
}

/* ---------- the ISIZE hint (idx.c inflates straight into the data set) ---------- */

/* Every split's bytes, the counts and the shape of two data sets equal. */
static void expect_same_data(const ls_dataset *a, const ls_dataset *b)
{
    const ls_split *sa[2] = {&a->train, &a->test}, *sb[2] = {&b->train, &b->test};
    for (int s = 0; s < 2; s++) {
        assert_int_equal(sa[s]->n, sb[s]->n);
        assert_int_equal(sa[s]->dim, sb[s]->dim);
        assert_memory_equal(sa[s]->x8, sb[s]->x8, sa[s]->n * sa[s]->dim);
        assert_memory_equal(sa[s]->y, sb[s]->y, sa[s]->n);
    }
}

/* The gzip of file i's inflated bytes as two members, split after `cut`
 * bytes (0: an empty first member; the whole length: an empty last one,
 * whose ISIZE of 0 is no hint at all). */
static void write_two_members(const tmpset *t, int i, size_t cut, int twice)
{
    size_t len, la, lb;
    uint8_t *raw = gz_decode(t->path[i], &len);
    assert_true(cut <= len);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s/part", t->dir);
    uint8_t *a = gz_bytes(raw, twice ? len : cut, tmp, &la);
    uint8_t *b = gz_bytes(twice ? raw : raw + cut, twice ? len : len - cut, tmp, &lb);
    uint8_t *both = malloc(la + lb);
    assert_non_null(both);
    memcpy(both, a, la);
    memcpy(both + la, b, lb);
    write_file(t->path[i], both, la + lb);
    free(both);
    free(a);
    free(b);
    free(raw);
}

/* Each file is inflated straight into its place when its gzip trailer's
 * ISIZE is its size. When it is not — several members (ISIZE is the last
 * member's), or a trailer that lies — the file goes the one-buffer path:
 * the same bytes as a single-member file (and as gzread's), or the same
 * error, at every thread count. */
static void test_fashion_isize_hint(void **state)
{
    (void)state;
    static const int threads[] = {1, 2, 3, 8};
    for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
        const int prev = idx_load_threads(threads[ti]);
        for (int i = 0; i < 4; i++) {
            tmpset t;
            tmpset_create(&t);
            ls_dataset *ref = NULL, *d = NULL;
            ls_err err = {{0}};
            assert_int_equal(fashion_mnist_load(&ref, t.dir, &err), LS_OK);
            size_t len;
            uint8_t *raw = gz_decode(t.path[i], &len);
            free(raw);
            /* an empty first member (ISIZE right, but not one member), a
             * cut inside the header and inside the data, an empty last
             * member (ISIZE 0: no hint, so no file goes straight) */
            const size_t cuts[] = {0, 5, len - 3, len};
            for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
                uint8_t *keep = read_file(t.path[i], &len);
                write_two_members(&t, i, cuts[c], 0);
                assert_int_equal(fashion_mnist_load(&d, t.dir, &err), LS_OK);
                expect_same_data(d, ref);
                assert_int_equal(d->hash, expected_hash(t.path));
                assert_int_not_equal(d->hash, ref->hash);
                expect_direct(d, 0);
                dataset_destroy(d);
                write_file(t.path[i], keep, len);
                free(keep);
            }
            /* the whole file twice: ISIZE is its size, the data is not */
            uint8_t *keep = read_file(t.path[i], &len);
            write_two_members(&t, i, 0, 1);
            expect_fail(&t, i, LS_EFORMAT, "trailing bytes after the");
            write_file(t.path[i], keep, len);
            /* ISIZE lies: one more or less, zero, at or past the bound, 2^32 - 1 */
            const uint32_t real = bytes_get_le32(keep + len - 4);
            const uint32_t lies[] = {real + 1, real - 1, 0, 1u << 31, 0xffffffffu};
            for (size_t k = 0; k < sizeof lies / sizeof lies[0]; k++) {
                uint8_t *bad = malloc(len);
                assert_non_null(bad);
                memcpy(bad, keep, len);
                for (int b = 0; b < 4; b++)
                    bad[len - 4 + b] = (uint8_t)(lies[k] >> (8 * b));
                write_file(t.path[i], bad, len);
                free(bad);
                char want[256];
                snprintf(want, sizeof want, "%s: corrupt gzip data (incorrect length check)", t.path[i]);
                d = (ls_dataset *)1;
                assert_int_equal(fashion_mnist_load(&d, t.dir, &err), LS_EFORMAT);
                assert_string_equal(err.msg, want);
                assert_null(d);
            }
            write_file(t.path[i], keep, len);
            free(keep);
            /* and the file restored loads as before */
            assert_int_equal(fashion_mnist_load(&d, t.dir, &err), LS_OK);
            expect_same_data(d, ref);
            assert_int_equal(d->hash, ref->hash);
            expect_direct(d, 1);
            dataset_destroy(d);
            dataset_destroy(ref);
            tmpset_destroy(&t);
        }
        idx_load_threads(prev);
    }
}

/* A corrupt train-images file whose trailer claims 1 GB (deflate could
 * reach it from its 1.1 MB): the data set's allocation is sized from the
 * claim, but its pages are not faulted in ahead of an inflate that fails
 * at once (idx.c's IDX_POPULATE_RATIO), so the process does not grow by
 * the claim. ru_maxrss is the high-water mark of the resident set. */
static void test_fashion_claim(void **state)
{
    (void)state;
    static const int threads[] = {1, 2, 3, 8};
    const size_t n = ((size_t)1 << 30) / 1000;
    uint8_t *junk = malloc(n);
    assert_non_null(junk);
    for (size_t i = 0; i < n; i++)
        junk[i] = (uint8_t)(i * 2654435761u >> 13);
    junk[0] = 0x1f;   /* gzip's magic, then a compression method zlib refuses */
    junk[1] = 0x8b;
    junk[2] = 7;
    const uint32_t claim = 1u << 30;
    for (int b = 0; b < 4; b++)
        junk[n - 4 + b] = (uint8_t)(claim >> (8 * b));
    for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
        const int prev = idx_load_threads(threads[ti]);
        tmpset t;
        tmpset_create(&t);
        write_file(t.path[0], junk, n);
        struct rusage before, after;
        assert_int_equal(getrusage(RUSAGE_SELF, &before), 0);
        expect_fail(&t, 0, LS_EFORMAT, "corrupt gzip data (unknown compression method)");
        assert_int_equal(getrusage(RUSAGE_SELF, &after), 0);
        assert_true(after.ru_maxrss - before.ru_maxrss < 256 * 1024);   /* kB */
        tmpset_destroy(&t);
        idx_load_threads(prev);
    }
    free(junk);
}

static void test_idx_parse(void **state)
{
    (void)state;
    uint32_t dims[3];
    const uint8_t *data;
    size_t dlen;
    ls_err err = {{0}};
    size_t len;
    uint32_t d3[3] = {2, 3, 4};
    uint8_t *b = make_idx(0x803, d3, 3, 24, 5, &len);
    assert_int_equal(idx_parse(b, len, 0x803, dims, &data, &dlen, "x", &err), LS_OK);
    assert_int_equal(dims[0], 2);
    assert_int_equal(dims[1], 3);
    assert_int_equal(dims[2], 4);
    assert_ptr_equal(data, b + 16);
    assert_int_equal(dlen, 24);
    /* every shorter prefix is LS_EFORMAT naming the source */
    for (size_t n = 0; n < len; n++) {
        uint8_t *p = malloc(n + 1);
        memcpy(p, b, n);
        assert_int_equal(idx_parse(p, n, 0x803, dims, &data, &dlen, "pre.idx", &err), LS_EFORMAT);
        assert_non_null(strstr(err.msg, "pre.idx: "));
        free(p);
    }
    free(b);

    /* a product that overflows size_t is refused, not wrapped */
    uint32_t huge[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
    b = make_idx(0x803, huge, 3, 0, 0, &len);
    assert_int_equal(idx_parse(b, len, 0x803, dims, &data, &dlen, "big", &err), LS_EFORMAT);
    assert_non_null(strstr(err.msg, "big: "));
    free(b);
    /* a product that wraps to a small number must not match the data */
    uint32_t wrap[3] = {0x80000000u, 0x80000000u, 4u}; /* 2^64: would wrap to 0 and match no data */
    b = make_idx(0x803, wrap, 3, 0, 0, &len);
    assert_int_equal(idx_parse(b, len, 0x803, dims, &data, &dlen, "wrap", &err), LS_EFORMAT);
    free(b);
    uint32_t zero[3] = {0, 28, 28};
    b = make_idx(0x803, zero, 3, 0, 0, &len);
    assert_int_equal(idx_parse(b, len, 0x803, dims, &data, &dlen, "zero", &err), LS_OK);
    assert_int_equal(dlen, 0);
    free(b);

    uint32_t d1[1] = {3};
    b = make_idx(0x801, d1, 1, 3, 0, &len);
    assert_int_equal(idx_parse(b, len, 0x801, dims, &data, &dlen, "l", &err), LS_OK);
    assert_int_equal(dims[0], 3);
    assert_int_equal(dlen, 3);
    assert_int_equal(idx_parse(b, len, 0x803, dims, &data, &dlen, "l", &err), LS_EFORMAT);
    assert_string_equal(err.msg, "l: bad magic number 0x00000801, expected 0x00000803");
    /* only unsigned-byte IDX with 1..3 dimensions can be asked for */
    assert_int_equal(idx_parse(b, len, 0x0d01, dims, &data, &dlen, "l", &err), LS_EINVAL);
    assert_int_equal(idx_parse(b, len, 0x0804, dims, &data, &dlen, "l", &err), LS_EINVAL);
    free(b);
}

/* ---------- teacher ---------- */

static void test_teacher(void **state)
{
    (void)state;
    ls_dataset *a = NULL, *b = NULL;
    ls_err err = {{0}};
    assert_int_equal(teacher_make(&a, &err), LS_OK);
    assert_int_equal(teacher_make(&b, &err), LS_OK);
    assert_string_equal(a->name, "teacher");
    assert_int_equal(a->n_classes, TEACHER_CLASSES);
    const ls_split *sa[2] = {&a->train, &a->test}, *sb[2] = {&b->train, &b->test};
    const size_t n[2] = {TEACHER_TRAIN, TEACHER_TEST};
    for (int s = 0; s < 2; s++) {
        assert_int_equal(sa[s]->n, n[s]);
        assert_int_equal(sa[s]->dim, TEACHER_DIM);
        assert_null(sa[s]->x8);
        assert_non_null(sa[s]->xf);
        /* identical bytes on a second make */
        assert_memory_equal(sa[s]->xf, sb[s]->xf, n[s] * TEACHER_DIM * sizeof(float));
        assert_memory_equal(sa[s]->y, sb[s]->y, n[s]);
        /* inputs are the addressed uniforms */
        for (size_t i = 0; i < n[s]; i++)
            for (size_t k = 0; k < TEACHER_DIM; k++) {
                float want = rng_uniformf(TEACHER_SEED, RNG_DATA, (uint64_t)s, i, k);
                assert_memory_equal(&sa[s]->xf[i * TEACHER_DIM + k], &want, sizeof want);
            }
        /* every class has at least 10% of the samples */
        size_t count[TEACHER_CLASSES] = {0};
        for (size_t i = 0; i < n[s]; i++) {
            assert_true(sa[s]->y[i] < TEACHER_CLASSES);
            count[sa[s]->y[i]]++;
        }
        for (size_t k = 0; k < TEACHER_CLASSES; k++)
            if (count[k] * 10 < n[s])
                fail_msg("split %d class %zu has %zu of %zu samples", s, k, count[k], n[s]);
    }
    assert_int_equal(a->hash, b->hash);

    /* hash over train x (floats LE, on any host: make check-cross runs this
     * on big-endian s390x), train y, test x, test y */
    size_t xb[2] = {n[0] * TEACHER_DIM * 4, n[1] * TEACHER_DIM * 4};
    size_t total = xb[0] + n[0] + xb[1] + n[1];
    uint8_t *cat = malloc(total), *p = cat;
    assert_non_null(cat);
    for (int s = 0; s < 2; s++) {
        bytes_put_le32_words(p, sa[s]->xf, xb[s] / 4);
        p += xb[s];
        memcpy(p, sa[s]->y, n[s]);
        p += n[s];
    }
    assert_int_equal(a->hash, XXH3_64bits(cat, total));
    free(cat);
    dataset_destroy(a);
    dataset_destroy(b);
}

/* ---------- gather ---------- */

static void test_gather(void **state)
{
    (void)state;
    uint8_t x8[2 * 256];
    uint8_t y[2] = {3, 7};
    for (int i = 0; i < 256; i++) {
        x8[i] = (uint8_t)i;
        x8[256 + i] = (uint8_t)(255 - i);
    }
    ls_split s8 = {.n = 2, .dim = 256, .x8 = x8, .xf = NULL, .y = y};
    const uint32_t ids[3] = {1, 0, 1};
    float out[3 * 256];
    int32_t yo[3];
    dataset_gather(NULL, &s8, ids, 3, out, yo);
    assert_int_equal(yo[0], 7);
    assert_int_equal(yo[1], 3);
    assert_int_equal(yo[2], 7);
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 256; k++) {
            unsigned b = x8[ids[i] * 256 + k];
            /* b/255 divided in binary64 then rounded to binary32 equals the
             * correctly rounded binary32 quotient (double rounding is
             * innocuous for division when 53 >= 2*24 + 2), so this is an
             * independent computation of (float)b / 255.0f. */
            float want = (float)((double)b / 255.0);
            assert_memory_equal(&out[i * 256 + k], &want, sizeof want);
        }
    assert_true(out[255] == 0.0f && out[256 + 255] == 1.0f);

    float xf[2 * 3] = {0.5f, 0.25f, 1.0f, 0.0f, -0.0f, 0.125f};
    ls_split sf = {.n = 2, .dim = 3, .x8 = NULL, .xf = xf, .y = y};
    float o2[3 * 3];
    dataset_gather(NULL, &sf, ids, 3, o2, NULL);
    assert_memory_equal(o2, xf + 3, 3 * sizeof(float));
    assert_memory_equal(o2 + 3, xf, 3 * sizeof(float));
    assert_memory_equal(o2 + 6, xf + 3, 3 * sizeof(float));
}

/* The public data set API a task's loader uses: zeroed float splits filled
 * through ls_dataset_x / ls_dataset_y, then ls_dataset_seal's identity
 * (XXH3 over train x LE, train y, test x LE, test y — the teacher's own
 * definition, so a copy of the teacher set gets the teacher's hash). */
static void test_public_dataset(void **state)
{
    (void)state;
    ls_dataset *t;
    ls_err err = { { 0 } };
    assert_int_equal(teacher_make(&t, &err), LS_OK);
    const size_t dim = t->train.dim, ntr = t->train.n, nte = t->test.n;
    ls_dataset *d = (ls_dataset *)1;
    assert_int_equal(ls_dataset_create(&d, "copy", t->n_classes, dim, ntr, nte, &err), LS_OK);
    assert_non_null(d);
    assert_string_equal(d->name, "copy");
    assert_int_equal(d->n_classes, t->n_classes);
    assert_int_equal(d->train.n, ntr);
    assert_int_equal(d->test.n, nte);
    assert_int_equal(d->train.dim, dim);
    assert_null(d->train.x8);
    assert_ptr_equal(ls_dataset_x(d, 0), d->train.xf);
    assert_ptr_equal(ls_dataset_x(d, 1), d->test.xf);
    assert_ptr_equal(ls_dataset_y(d, 0), d->train.y);
    assert_ptr_equal(ls_dataset_y(d, 1), d->test.y);
    for (size_t i = 0; i < ntr * dim; i++)   /* zeroed */
        assert_true(d->train.xf[i] == 0.0f);
    for (size_t i = 0; i < nte; i++)
        assert_int_equal(d->test.y[i], 0);
    memcpy(ls_dataset_x(d, 0), t->train.xf, ntr * dim * sizeof(float));
    memcpy(ls_dataset_x(d, 1), t->test.xf, nte * dim * sizeof(float));
    memcpy(ls_dataset_y(d, 0), t->train.y, ntr);
    memcpy(ls_dataset_y(d, 1), t->test.y, nte);
    assert_int_equal(ls_dataset_seal(d, &err), LS_OK);
    assert_true(d->hash == t->hash);
    /* one label changed: another identity */
    ls_dataset_y(d, 1)[nte - 1] ^= 1;
    assert_int_equal(ls_dataset_seal(d, &err), LS_OK);
    assert_true(d->hash != t->hash);
    /* gather through the public name equals the engine's */
    const uint32_t ids[3] = { 5, 0, (uint32_t)(ntr - 1) };
    float *a = malloc(3 * dim * sizeof(float)), *b = malloc(3 * dim * sizeof(float));
    uint8_t ya[3];
    int32_t yb[3], yc[3];
    ls_dataset_gather(&d->train, ids, 3, a, ya);
    dataset_gather(t, &t->train, ids, 3, b, yb);
    assert_memory_equal(a, b, 3 * dim * sizeof(float));
    for (int i = 0; i < 3; i++)
        assert_int_equal(ya[i], yb[i]);
    ls_dataset_gather_labels(d, 0, ids, 3, b, yc);
    assert_memory_equal(a, b, 3 * dim * sizeof(float));
    assert_memory_equal(yb, yc, sizeof yb);
    assert_null(ls_dataset_labels(d, 0));   /* byte labels: no int32 ones */
    assert_int_equal(ls_dataset_label(d, 0, ids[2]), yb[2]);
    free(a);
    free(b);
    ls_dataset_destroy(d);
    ls_dataset_destroy(NULL);
    /* refused shapes name the data set */
    const struct { size_t classes, dim, ntr; } bad[] = { { 0, 4, 10 }, { (size_t)INT32_MAX + 1, 4, 10 }, { 3, 0, 10 }, { 3, 4, 0 },
                                                        { 3, SIZE_MAX / 2, 10 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d = (ls_dataset *)1;
        err.msg[0] = 0;
        assert_int_equal(ls_dataset_create(&d, "bad", bad[i].classes, bad[i].dim, bad[i].ntr, 5, &err), LS_EINVAL);
        assert_null(d);
        assert_non_null(strstr(err.msg, "bad"));
    }
    dataset_destroy(t);
}

/* Over 256 classes the labels are int32 (1.2): ls_dataset_y is NULL, the
 * loader fills ls_dataset_labels, the seal checks every label and hashes
 * each as 4 bytes LE (docs/formats.md), recomputed here byte by byte. */
static void test_wide_dataset(void **state)
{
    (void)state;
    enum { C = 70000, NTR = 5, NTE = 3, DIM = 2 };
    static const int32_t tr[NTR] = { 0, 69999, 65536, 255, 256 }, te[NTE] = { 1, 65535, 40000 };
    ls_err err = { { 0 } };
    ls_dataset *d = NULL;
    assert_int_equal(ls_dataset_create(&d, "wide", C, DIM, NTR, NTE, &err), LS_OK);
    assert_null(d->train.y);
    assert_null(d->test.y);
    assert_null(ls_dataset_y(d, 0));
    assert_null(ls_dataset_y(d, 1));
    assert_ptr_equal(ls_dataset_labels(d, 0), d->train_labels);
    assert_ptr_equal(ls_dataset_labels(d, 1), d->test_labels);
    for (int i = 0; i < NTR * DIM; i++)
        ls_dataset_x(d, 0)[i] = 0.25f * (float)i;
    for (int i = 0; i < NTE * DIM; i++)
        ls_dataset_x(d, 1)[i] = -0.5f * (float)i;
    memcpy(ls_dataset_labels(d, 0), tr, sizeof tr);
    memcpy(ls_dataset_labels(d, 1), te, sizeof te);
    assert_int_equal(ls_dataset_seal(d, &err), LS_OK);
    uint8_t bytes[4 * (NTR * DIM + NTR + NTE * DIM + NTE)], *p = bytes;
    for (int test = 0; test < 2; test++) {
        const int n = test ? NTE : NTR;
        for (int i = 0; i < n * DIM; i++) {
            uint32_t b;
            memcpy(&b, &ls_dataset_x(d, test)[i], 4);
            for (int k = 0; k < 4; k++)
                *p++ = (uint8_t)(b >> (8 * k));
        }
        for (int i = 0; i < n; i++)
            for (int k = 0; k < 4; k++)
                *p++ = (uint8_t)((uint32_t)(test ? te : tr)[i] >> (8 * k));
    }
    assert_true(d->hash == XXH3_64bits(bytes, (size_t)(p - bytes)));
    assert_int_equal(ls_dataset_label(d, 0, 1), 69999);
    assert_int_equal(ls_dataset_label(d, 1, 1), 65535);
    const uint32_t ids[3] = { 2, 1, 2 };
    float x[3 * DIM];
    int32_t y[3];
    uint8_t y8[3] = { 7, 7, 7 };
    ls_dataset_gather_labels(d, 0, ids, 3, x, y);
    assert_int_equal(y[0], 65536);
    assert_int_equal(y[1], 69999);
    assert_true(x[0] == 1.0f && x[2] == 0.5f);
    ls_dataset_gather(&d->train, ids, 3, x, y8);   /* byte labels only: y8 untouched */
    assert_int_equal(y8[0], 7);
    ls_dataset_gather_labels(d, 1, ids + 1, 1, x, y);
    assert_int_equal(y[0], 65535);
    /* out of range either way: named */
    ls_dataset_labels(d, 1)[2] = C;
    assert_int_equal(ls_dataset_seal(d, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "test label 2 is 70000"));
    ls_dataset_labels(d, 1)[2] = -3;
    assert_int_equal(ls_dataset_seal(d, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "test label 2 is -3"));
    ls_dataset_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fashion_real),
        cmocka_unit_test(test_fashion_small_ok),
        cmocka_unit_test(test_fashion_bad_inputs),
        cmocka_unit_test(test_fashion_bad_inputs_threads),
        cmocka_unit_test(test_fashion_isize_hint),
        cmocka_unit_test(test_fashion_claim),
        cmocka_unit_test(test_idx_parse),
        cmocka_unit_test(test_teacher),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_public_dataset),
        cmocka_unit_test(test_wide_dataset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
