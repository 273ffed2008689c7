/* idx.c — data sets stored as gzip'ed IDX files: reading, inflating and
 * checking them (idx.h).
 *
 * Loading is strict because the data set's identity is part of a run's config:
 * every header field is checked, the data must end exactly where the header
 * says, and every error names the file and what is wrong. Each data set lives
 * in one allocation (`mem`) the splits point into. What a data set's files
 * are called and what its images must be come from the caller (idx_set).
 */
#include "engine/data/idx.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zlib.h>

#include "base/bytes.h"
#include "base/file.h"

/* Refuse to inflate more than this: a gzip bomb should fail cleanly, and no
 * real IDX file comes near it (the MNIST family's largest is 47 MB). */
#define IDX_MAX_INFLATED ((size_t)1 << 31)

/* ---------- reading .gz files ---------- */

/* Through the checked open, never past the file's size: a FIFO would wait
 * forever for a writer, and a directory or a device is no data file (its
 * bytes would not be the data set's identity either). A compressed file
 * is bounded as its inflated size is. */
static ls_status read_whole_file(const char *path, uint8_t **out, size_t *out_len, ls_err *err)
{
    return file_read_all(path, IDX_MAX_INFLATED, out, out_len, err);
}

/* Gunzip src into a malloc'ed buffer. Several concatenated gzip members are
 * accepted (as gunzip does); anything else after the last member is an error,
 * since a golden identity over a file with junk at the end would be fragile. */
static ls_status gunzip(const char *path, const uint8_t *src, size_t src_len, uint8_t **out,
                        size_t *out_len, ls_err *err)
{
    *out = NULL;
    *out_len = 0;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return ls_fail(err, LS_ENOMEM, "%s: cannot initialise zlib", path);

    /* The gzip trailer ends with the input size mod 2^32 (ISIZE): a good
     * first guess, so a well-formed file is inflated without regrowing. It is
     * only a hint, and a corrupt or cut file may claim anything, so it is used
     * only when deflate could reach it (at most 1032:1). */
    size_t cap = 4096;
    if (src_len >= 18) {
        const uint8_t *t = src + src_len - 4;
        size_t isize = bytes_get_le32(t);
        if (isize > cap && isize / 1032 <= src_len)
            cap = isize;
    }
    if (cap > IDX_MAX_INFLATED)
        cap = IDX_MAX_INFLATED;
    uint8_t *buf = malloc(cap);
    if (buf == NULL) {
        inflateEnd(&zs);
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
    }
    size_t in_pos = 0, len = 0;
    ls_status st = LS_OK;
    for (;;) {
        if (len == cap) {
            if (cap >= IDX_MAX_INFLATED) {
                st = ls_fail(err, LS_EFORMAT, "%s: gzip data inflates to more than %zu bytes",
                             path, IDX_MAX_INFLATED);
                break;
            }
            size_t ncap = cap * 2 > IDX_MAX_INFLATED ? IDX_MAX_INFLATED : cap * 2;
            uint8_t *nb = realloc(buf, ncap);
            if (nb == NULL) {
                st = ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        /* avail_in/avail_out are uInt: feed at most UINT_MAX at a time. */
        size_t in_chunk = src_len - in_pos, out_chunk = cap - len;
        if (in_chunk > UINT_MAX)
            in_chunk = UINT_MAX;
        if (out_chunk > UINT_MAX)
            out_chunk = UINT_MAX;
        zs.next_in = (Bytef *)(uintptr_t)(src + in_pos);
        zs.avail_in = (uInt)in_chunk;
        zs.next_out = buf + len;
        zs.avail_out = (uInt)out_chunk;
        int zr = inflate(&zs, Z_NO_FLUSH);
        in_pos += in_chunk - zs.avail_in;
        len += out_chunk - zs.avail_out;
        if (zr == Z_STREAM_END) {
            if (in_pos == src_len)
                break;
            /* Another gzip member follows, or junk. */
            if (src_len - in_pos >= 2 && src[in_pos] == 0x1f && src[in_pos + 1] == 0x8b) {
                if (inflateReset(&zs) != Z_OK) {
                    st = ls_fail(err, LS_EFORMAT, "%s: corrupt gzip data (cannot reset stream)", path);
                    break;
                }
                continue;
            }
            st = ls_fail(err, LS_EFORMAT, "%s: corrupt gzip data (%zu trailing bytes after the gzip stream)",
                         path, src_len - in_pos);
            break;
        }
        if (zr == Z_OK)
            continue;
        if (zr == Z_BUF_ERROR) {
            /* No progress possible: if the output has room, the input ran out
             * before the end of the stream. */
            if (len < cap && in_pos == src_len) {
                st = ls_fail(err, LS_EFORMAT, "%s: corrupt gzip data (unexpected end of file)", path);
                break;
            }
            continue;
        }
        if (zr == Z_MEM_ERROR) {
            st = ls_fail(err, LS_ENOMEM, "%s: out of memory in zlib", path);
            break;
        }
        st = ls_fail(err, LS_EFORMAT, "%s: corrupt gzip data (%s)", path,
                     zs.msg != NULL ? zs.msg : "invalid stream");
        break;
    }
    inflateEnd(&zs);
    if (st != LS_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *out_len = len;
    return LS_OK;
}

ls_status idx_read_gz(const char *path, uint8_t **buf, size_t *len, uint64_t *gz_hash, ls_err *err)
{
    *buf = NULL;
    *len = 0;
    uint8_t *raw;
    size_t raw_len;
    ls_status st = read_whole_file(path, &raw, &raw_len, err);
    if (st != LS_OK)
        return st;
    if (gz_hash != NULL)
        *gz_hash = XXH3_64bits(raw, raw_len);
    st = gunzip(path, raw, raw_len, buf, len, err);
    free(raw);
    return st;
}

/* ---------- IDX ---------- */

ls_status idx_parse(const uint8_t *buf, size_t len, uint32_t magic, uint32_t dims[3],
                    const uint8_t **data, size_t *data_len, const char *what, ls_err *err)
{
    if (what == NULL)
        what = "idx";
    /* Only unsigned-byte IDX files (type 0x08) with 1..3 dimensions exist here. */
    uint32_t ndims = magic & 0xffu;
    if ((magic >> 8) != 0x08u || ndims < 1 || ndims > 3)
        return ls_fail(err, LS_EINVAL, "%s: unsupported IDX magic 0x%08x requested", what, (unsigned)magic);
    dims[0] = dims[1] = dims[2] = 0;
    *data = NULL;
    *data_len = 0;
    if (buf == NULL && len > 0)
        return ls_fail(err, LS_EINVAL, "%s: no buffer", what);
    if (len < 4)
        return ls_fail(err, LS_EFORMAT, "%s: truncated IDX header (%zu bytes)", what, len);
    uint32_t got = bytes_get_be32(buf);
    if (got != magic)
        return ls_fail(err, LS_EFORMAT, "%s: bad magic number 0x%08x, expected 0x%08x", what,
                       (unsigned)got, (unsigned)magic);
    size_t hdr = 4 + 4 * (size_t)ndims;
    if (len < hdr)
        return ls_fail(err, LS_EFORMAT, "%s: truncated IDX header (%zu bytes, expected %zu)", what, len, hdr);
    size_t need = 1;
    int overflow = 0;
    for (uint32_t i = 0; i < ndims; i++) {
        dims[i] = bytes_get_be32(buf + 4 + 4 * i);
        if (dims[i] != 0 && need > SIZE_MAX / dims[i])
            overflow = 1;
        else
            need *= dims[i];
    }
    /* A product that does not fit in size_t can never match a real buffer. */
    if (overflow) {
        if (ndims == 3)
            return ls_fail(err, LS_EFORMAT, "%s: dimensions %ux%ux%u are too large", what,
                           (unsigned)dims[0], (unsigned)dims[1], (unsigned)dims[2]);
        return ls_fail(err, LS_EFORMAT, "%s: dimensions are too large", what);
    }
    size_t have = len - hdr;
    if (have < need)
        return ls_fail(err, LS_EFORMAT, "%s: truncated: the header says %zu bytes of data, the file has %zu",
                       what, need, have);
    if (have > need)
        return ls_fail(err, LS_EFORMAT, "%s: %zu trailing bytes after the %zu bytes of data the header says",
                       what, have - need, need);
    *data = buf + hdr;
    *data_len = need;
    return LS_OK;
}

/* ---------- a data set of four files ---------- */

typedef struct {
    char path[4096];
    uint8_t *raw;          /* the inflated file */
    size_t raw_len;
    const uint8_t *data;   /* into raw */
    size_t data_len;
    uint32_t dims[3];
    uint64_t gz_hash;
} idx_file;

static ls_status load_idx(idx_file *f, const char *dir, const char *name, uint32_t magic, ls_err *err)
{
    int n = snprintf(f->path, sizeof f->path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof f->path)
        return ls_fail(err, LS_EINVAL, "%s: path too long", dir);
    ls_status st = idx_read_gz(f->path, &f->raw, &f->raw_len, &f->gz_hash, err);
    if (st != LS_OK)
        return st;
    return idx_parse(f->raw, f->raw_len, magic, f->dims, &f->data, &f->data_len, f->path, err);
}

/* Checks one split's image and label files against each other. */
static ls_status check_split(const idx_set *set, const idx_file *img, const idx_file *lab, ls_err *err)
{
    if (img->dims[1] != set->rows || img->dims[2] != set->cols)
        return ls_fail(err, LS_EFORMAT, "%s: images are %ux%u, expected %ux%u", img->path,
                       (unsigned)img->dims[1], (unsigned)img->dims[2], (unsigned)set->rows, (unsigned)set->cols);
    if (img->dims[0] != lab->dims[0])
        return ls_fail(err, LS_EFORMAT, "%s: %u labels, but %s has %u images", lab->path,
                       (unsigned)lab->dims[0], img->path, (unsigned)img->dims[0]);
    if (img->dims[0] == 0)
        return ls_fail(err, LS_EFORMAT, "%s: no images", img->path);
    for (size_t i = 0; i < lab->data_len; i++)
        if (lab->data[i] >= set->n_classes)
            return ls_fail(err, LS_EFORMAT, "%s: label %u at index %zu is out of range (0..%zu)", lab->path,
                           (unsigned)lab->data[i], i, set->n_classes - 1);
    return LS_OK;
}

/* Threads the calling thread's next idx_load_set may use (idx_load_threads). */
static _Thread_local int load_threads = 1;

int idx_load_threads(int threads)
{
    const int prev = load_threads;
    load_threads = threads > 1 ? threads : 1;
    return prev;
}

/* The test split's two files, loaded on a thread of their own while the
 * caller's thread loads the train split's. */
typedef struct {
    idx_file *f;            /* [4] */
    const char *dir;
    const idx_set *set;
    const uint32_t *magics;
    ls_status st[4];
    ls_err err[4];
} idx_loader;

static void *load_test_split(void *arg)
{
    idx_loader *l = arg;
    for (int i = 2; i < 4; i++)
        l->st[i] = load_idx(&l->f[i], l->dir, l->set->files[i], l->magics[i], &l->err[i]);
    return NULL;
}

/* The four files read and checked: each file's status in st (and its
 * message in err), in header order; with a thread to spare, the test split
 * inflates alongside the train split (Fashion-MNIST: 0.09 s of the 0.4 s
 * that decoding takes on one thread). The bytes are the same either way. */
static void load_files(idx_file *f, const char *dir, const idx_set *set, const uint32_t *magics, idx_loader *l)
{
    *l = (idx_loader){ f, dir, set, magics, { LS_OK, LS_OK, LS_OK, LS_OK }, { { { 0 } } } };
    pthread_t th;
    const int spawned = load_threads > 1 && pthread_create(&th, NULL, load_test_split, l) == 0;
    for (int i = 0; i < (spawned ? 2 : 4); i++)
        l->st[i] = load_idx(&f[i], dir, set->files[i], magics[i], &l->err[i]);
    if (spawned)
        pthread_join(th, NULL);
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

ls_status idx_load_set(ls_dataset **out, const char *dir, const idx_set *set, ls_err *err)
{
    *out = NULL;
    if (dir == NULL || set == NULL || set->name == NULL || set->n_classes == 0 || set->n_classes > 256)
        return ls_fail(err, LS_EINVAL, "IDX data set %s: needs a directory, a name and 1..256 classes",
                       set != NULL && set->name != NULL ? set->name : "(null)");
    idx_file *f = calloc(4, sizeof *f);
    if (f == NULL)
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", dir);
    static const uint32_t magics[4] = {0x00000803u, 0x00000801u, 0x00000803u, 0x00000801u};
    ls_status st = LS_OK;
    ls_dataset *d = NULL;
    idx_loader *l = malloc(sizeof *l);
    if (l == NULL) {
        free(f);
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", dir);
    }
    load_files(f, dir, set, magics, l);
    /* Files are checked in header order, so the first bad file in that
     * order is the one reported, however they were read. */
    for (int i = 0; i < 4 && st == LS_OK; i++) {
        st = l->st[i];
        if (st != LS_OK && err != NULL)
            *err = l->err[i];
        if (st == LS_OK && (i == 1 || i == 3))
            st = check_split(set, &f[i - 1], &f[i], err);
    }
    free(l);
    if (st != LS_OK)
        goto done;

    d = calloc(1, sizeof *d);
    size_t total = f[0].data_len + f[1].data_len + f[2].data_len + f[3].data_len;
    uint8_t *mem = d != NULL ? malloc(total) : NULL;
    if (mem == NULL) {
        free(d);
        d = NULL;
        st = ls_fail(err, LS_ENOMEM, "%s: out of memory for the data set", dir);
        goto done;
    }
    /* One allocation: train x, train y, test x, test y. */
    ls_split *splits[2] = {&d->train, &d->test};
    uint8_t *p = mem;
    for (int s = 0; s < 2; s++) {
        const idx_file *img = &f[2 * s], *lab = &f[2 * s + 1];
        memcpy(p, img->data, img->data_len);
        splits[s]->x8 = p;
        p += img->data_len;
        memcpy(p, lab->data, lab->data_len);
        splits[s]->y = p;
        p += lab->data_len;
        splits[s]->n = img->dims[0];
        splits[s]->dim = (size_t)set->rows * set->cols;
        splits[s]->xf = NULL;
    }
    d->mem = mem;
    snprintf(d->name, sizeof d->name, "%s", set->name);
    d->n_classes = set->n_classes;
    uint8_t hb[32];
    for (int i = 0; i < 4; i++)
        put_le64(hb + 8 * i, f[i].gz_hash);
    d->hash = XXH3_64bits(hb, sizeof hb);

done:
    for (int i = 0; i < 4; i++)
        free(f[i].raw);
    free(f);
    *out = d;
    return st;
}

