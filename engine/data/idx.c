/* idx.c — data sets stored as gzip'ed IDX files: reading, inflating and
 * checking them (idx.h).
 *
 * Loading is strict because the data set's identity is part of a run's config:
 * every header field is checked, the data must end exactly where the header
 * says, and every error names the file and what is wrong. Each data set lives
 * in one allocation (`mem`) the splits point into. What a data set's files
 * are called and what its images must be come from the caller (idx_set).
 *
 * Loading is also the start of every run on such a data set, so the bytes
 * move as little as they can: each .gz is mapped, not read into a buffer;
 * the four gzip trailers size the one allocation, and each file inflates
 * straight into its place in it. A file whose trailer does not tell its
 * size (several gzip members, a corrupt file) goes the one-buffer path
 * (gunzip, idx_parse), which is also where every error message comes from.
 */
#include "engine/data/idx.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
 * is bounded as its inflated size is. Mapped, not copied, where possible
 * (file_view): the bytes are hashed and inflated once each, and a data
 * set's files are not rewritten in place while a run loads them. */
static ls_status open_gz(const char *path, file_view *v, ls_err *err)
{
    return file_view_open(path, IDX_MAX_INFLATED, v, err);
}

/* One call of inflate from src[*in_pos, src_len) into out[*out_pos, out_len),
 * each position moved past what it took or gave. avail_in and avail_out are
 * uInt: at most UINT_MAX of either at a time. */
static int inflate_some(z_stream *zs, const uint8_t *src, size_t src_len, size_t *in_pos, uint8_t *out,
                        size_t out_len, size_t *out_pos)
{
    const uInt ai = src_len - *in_pos > UINT_MAX ? UINT_MAX : (uInt)(src_len - *in_pos);
    const uInt ao = out_len - *out_pos > UINT_MAX ? UINT_MAX : (uInt)(out_len - *out_pos);
    zs->next_in = (Bytef *)(uintptr_t)(src + *in_pos);
    zs->avail_in = ai;
    zs->next_out = out + *out_pos;
    zs->avail_out = ao;
    const int zr = inflate(zs, Z_NO_FLUSH);
    *in_pos += ai - zs->avail_in;
    *out_pos += ao - zs->avail_out;
    return zr;
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
        int zr = inflate_some(&zs, src, src_len, &in_pos, buf, cap, &len);
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
    file_view v;
    ls_status st = open_gz(path, &v, err);
    if (st != LS_OK)
        return st;
    if (gz_hash != NULL)
        *gz_hash = XXH3_64bits(v.p, v.len);
    st = gunzip(path, v.p, v.len, buf, len, err);
    file_view_close(&v);
    return st;
}

/* ---------- IDX ---------- */

/* The header's bytes: 4 + 4 * the dimensions the magic says. */
static size_t header_len(uint32_t magic)
{
    return 4 + 4 * (size_t)(magic & 0xffu);
}

/* Checks the magic and the dimensions at the start of buf (len bytes, the
 * header and whatever follows): *need = the data bytes the header says. */
static ls_status parse_header(const uint8_t *buf, size_t len, uint32_t magic, uint32_t dims[3], size_t *need,
                              const char *what, ls_err *err)
{
    /* Only unsigned-byte IDX files (type 0x08) with 1..3 dimensions exist here. */
    uint32_t ndims = magic & 0xffu;
    if ((magic >> 8) != 0x08u || ndims < 1 || ndims > 3)
        return ls_fail(err, LS_EINVAL, "%s: unsupported IDX magic 0x%08x requested", what, (unsigned)magic);
    dims[0] = dims[1] = dims[2] = 0;
    if (buf == NULL && len > 0)
        return ls_fail(err, LS_EINVAL, "%s: no buffer", what);
    if (len < 4)
        return ls_fail(err, LS_EFORMAT, "%s: truncated IDX header (%zu bytes)", what, len);
    uint32_t got = bytes_get_be32(buf);
    if (got != magic)
        return ls_fail(err, LS_EFORMAT, "%s: bad magic number 0x%08x, expected 0x%08x", what,
                       (unsigned)got, (unsigned)magic);
    size_t hdr = header_len(magic);
    if (len < hdr)
        return ls_fail(err, LS_EFORMAT, "%s: truncated IDX header (%zu bytes, expected %zu)", what, len, hdr);
    size_t n = 1;
    int overflow = 0;
    for (uint32_t i = 0; i < ndims; i++) {
        dims[i] = bytes_get_be32(buf + 4 + 4 * i);
        if (dims[i] != 0 && n > SIZE_MAX / dims[i])
            overflow = 1;
        else
            n *= dims[i];
    }
    /* A product that does not fit in size_t can never match a real buffer. */
    if (overflow) {
        if (ndims == 3)
            return ls_fail(err, LS_EFORMAT, "%s: dimensions %ux%ux%u are too large", what,
                           (unsigned)dims[0], (unsigned)dims[1], (unsigned)dims[2]);
        return ls_fail(err, LS_EFORMAT, "%s: dimensions are too large", what);
    }
    *need = n;
    return LS_OK;
}

ls_status idx_parse(const uint8_t *buf, size_t len, uint32_t magic, uint32_t dims[3],
                    const uint8_t **data, size_t *data_len, const char *what, ls_err *err)
{
    if (what == NULL)
        what = "idx";
    *data = NULL;
    *data_len = 0;
    size_t need = 0;
    ls_status st = parse_header(buf, len, magic, dims, &need, what, err);
    if (st != LS_OK)
        return st;
    size_t have = len - header_len(magic);
    if (have < need)
        return ls_fail(err, LS_EFORMAT, "%s: truncated: the header says %zu bytes of data, the file has %zu",
                       what, need, have);
    if (have > need)
        return ls_fail(err, LS_EFORMAT, "%s: %zu trailing bytes after the %zu bytes of data the header says",
                       what, have - need, need);
    *data = buf + header_len(magic);
    *data_len = need;
    return LS_OK;
}

/* ---------- inflating straight into the data set ---------- */

/* The gzip trailer's ISIZE (the inflated size mod 2^32) when it can be the
 * size of an IDX file of this magic: at least its header, at most the bound,
 * and reachable by deflate from src_len bytes (at most 1032:1). A hint only:
 * a corrupt, cut or multi-member file may claim anything, so what it says is
 * checked while inflating (inflate_into). */
static int isize_hint(const uint8_t *src, size_t src_len, uint32_t magic, size_t *isize)
{
    if (src_len < 18)
        return 0;
    size_t n = bytes_get_le32(src + src_len - 4);
    if (n < header_len(magic) || n > IDX_MAX_INFLATED || n / 1032 > src_len)
        return 0;
    *isize = n;
    return 1;
}

/* Inflates src, one gzip member, into out[0..len). 1 when src is exactly
 * that (the member ends where src ends, its CRC and length check out, and
 * the output is neither shorter nor longer than len); 0 on anything else —
 * an error, another member, junk after it, a wrong ISIZE — and the caller
 * then runs gunzip, which says exactly what is wrong, or inflates what did
 * not fit. */
static int inflate_into(const uint8_t *src, size_t src_len, uint8_t *out, size_t len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return 0;
    /* Past out, a spill area that must stay empty: anything in it is more
     * than ISIZE said. */
    uint8_t spill[64];
    size_t in_pos = 0, out_pos = 0;
    int ok = 0;
    for (;;) {
        size_t spilled = 0;
        int zr = out_pos < len ? inflate_some(&zs, src, src_len, &in_pos, out, len, &out_pos)
                               : inflate_some(&zs, src, src_len, &in_pos, spill, sizeof spill, &spilled);
        out_pos += spilled;
        if (out_pos > len)
            break;
        if (zr == Z_STREAM_END) {
            ok = in_pos == src_len && out_pos == len;
            break;
        }
        /* Z_BUF_ERROR: no progress, as the output has room, the input ended early. */
        if (zr != Z_OK)
            break;
    }
    inflateEnd(&zs);
    return ok;
}

/* The data set's allocation is advised only when it can hold a few huge
 * pages (2 MB on x86-64): a small one may sit in the heap, whose mapping
 * advice would split for nothing. */
#define IDX_ADVISE_MIN ((size_t)8 << 20)

/* The most the trailers may claim per .gz byte for the data set's pages to
 * be faulted in ahead (Fashion-MNIST's files inflate 1.8 times, MNIST's
 * 4.7 times). */
#define IDX_POPULATE_RATIO 16

/* MADV_POPULATE_WRITE (Linux 5.14) where the headers predate it; an older
 * kernel answers EINVAL, and the page faults then happen where they did. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Madvise over the whole pages of [p, p + len). Advice only: what the
 * kernel refuses (an old kernel, THP off) changes the speed, never the
 * bytes, so its answer is ignored. */
static void advise(uint8_t *p, size_t len, int advice)
{
    if (len < IDX_ADVISE_MIN)
        return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + len) & ~(page - 1);
    if (b > a)
        (void)madvise((void *)a, b - a, advice);
}

/* ---------- a data set of four files ---------- */

typedef struct {
    char path[4096];
    uint32_t magic;
    file_view gz;          /* the .gz bytes, open from load_open to load_one */
    ls_status st;          /* the file's status, and its message */
    ls_err err;
    uint8_t *dst;          /* its data's place in the data set's allocation (from ISIZE; its
                            * header is inflated into the bytes before), or NULL */
    size_t dst_len;
    uint8_t *raw;          /* the inflated file, when its data did not go to dst */
    const uint8_t *data;   /* into dst or raw */
    size_t data_len;
    uint32_t dims[3];
    uint64_t gz_hash;
} idx_file;

static void load_open(idx_file *f, const char *dir, const char *name, uint32_t magic)
{
    f->magic = magic;
    int n = snprintf(f->path, sizeof f->path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof f->path)
        f->st = ls_fail(&f->err, LS_EINVAL, "%s: path too long", dir);
    else
        f->st = open_gz(f->path, &f->gz, &f->err);
}

/* Hashes and inflates one opened file and checks its header: straight into
 * f->dst when it has one and the file is what its ISIZE says, else into a
 * buffer of its own (gunzip, idx_parse: the one path every error comes
 * from, so a message never depends on which path ran). */
static void load_one(idx_file *f)
{
    if (f->st != LS_OK)
        return;
    f->gz_hash = XXH3_64bits(f->gz.p, f->gz.len);
    const size_t hl = header_len(f->magic);
    size_t need = 0;
    if (f->dst != NULL && inflate_into(f->gz.p, f->gz.len, f->dst - hl, hl + f->dst_len) &&
        parse_header(f->dst - hl, hl, f->magic, f->dims, &need, f->path, NULL) == LS_OK && need == f->dst_len) {
        f->data = f->dst;
        f->data_len = need;
    } else {
        size_t raw_len;
        f->st = gunzip(f->path, f->gz.p, f->gz.len, &f->raw, &raw_len, &f->err);
        if (f->st == LS_OK)
            f->st = idx_parse(f->raw, raw_len, f->magic, f->dims, &f->data, &f->data_len, f->path, &f->err);
    }
    file_view_close(&f->gz);
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

/* What the second thread does (load_files). */
typedef struct {
    idx_file *f;            /* [4] */
    uint8_t *mem;           /* the data set's allocation, or NULL */
    size_t mem_len;         /* the bytes to fault in ahead, or 0 */
} idx_loader;

static void *load_test_split(void *arg)
{
    idx_loader *l = arg;
    for (int i = 2; i < 4; i++)
        load_one(&l->f[i]);
    /* Then the pages the train images will still be inflated into are
     * faulted in here rather than one by one on the caller's thread, which
     * is still inflating them (the kernel skips those already there). */
    if (l->mem != NULL)
        advise(l->mem, l->mem_len, MADV_POPULATE_WRITE);
    return NULL;
}

/* The four opened files hashed, inflated and checked, each file's status in
 * its st (and its message in err); with a thread to spare, the test split
 * inflates alongside the train split, and that thread then faults in the
 * pages the train images are still to fill. The bytes are the same either
 * way. Fashion-MNIST: inflating the train images takes 0.2 s (zlib, one
 * stream, so one thread), the test split 0.03 s; a `train --steps 1`
 * process took 0.21 s at 2 threads and 0.25 s at 1, against 0.32 and
 * 0.36 s when each file was read into a buffer, inflated into another and
 * copied (docs/performance.md). */
static void load_files(idx_file *f, uint8_t *mem, size_t mem_len)
{
    idx_loader l = { f, mem, mem_len };
    pthread_t th;
    const int spawned = load_threads > 1 && pthread_create(&th, NULL, load_test_split, &l) == 0;
    for (int i = 0; i < (spawned ? 2 : 4); i++)
        load_one(&f[i]);
    if (spawned)
        pthread_join(th, NULL);
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
    for (int i = 0; i < 4; i++)
        load_open(&f[i], dir, set->files[i], magics[i]);

    /* One allocation: train x, train y, test x, test y, sized from the four
     * trailers so each file inflates straight into its place: the four
     * inflated files end to end, each split pointing past its file's header. */
    size_t total = 0, gz_total = 0;
    int hinted = 1;
    for (int i = 0; i < 4 && hinted; i++) {
        size_t isize = 0;
        hinted = f[i].st == LS_OK && isize_hint(f[i].gz.p, f[i].gz.len, f[i].magic, &isize) &&
                 isize <= SIZE_MAX - total;   /* four claims of 2 GB overflow a 32-bit size_t */
        if (hinted) {
            f[i].dst_len = isize - header_len(f[i].magic);
            total += isize;
            gz_total += f[i].gz.len;
        }
    }
    uint8_t *mem = hinted ? malloc(total) : NULL;
    if (mem != NULL) {
        /* Huge pages (THP in `madvise` mode) for the 55 MB of
         * Fashion-MNIST: a fault per 2 MB rather than per 4 kB (1.2k page
         * faults rather than 14k; 0.01 s of kernel time rather than 0.05). */
        advise(mem, total, MADV_HUGEPAGE);
        uint8_t *p = mem;
        for (int i = 0; i < 4; i++) {
            f[i].dst = p + header_len(f[i].magic);
            p = f[i].dst + f[i].dst_len;
        }
    }
    /* The pages are faulted in ahead of the inflate only when the trailers
     * claim a plausible ratio: a corrupt file claiming up to 1032 times its
     * size is inflated, and fails, without first committing memory it
     * never fills. */
    load_files(f, mem, total / IDX_POPULATE_RATIO <= gz_total ? total : 0);

    /* Files are checked in header order, so the first bad file in that
     * order is the one reported, however they were read. */
    ls_status st = LS_OK;
    ls_dataset *d = NULL;
    for (int i = 0; i < 4 && st == LS_OK; i++) {
        st = f[i].st;
        if (st != LS_OK && err != NULL)
            *err = f[i].err;
        if (st == LS_OK && (i == 1 || i == 3))
            st = check_split(set, &f[i - 1], &f[i], err);
    }
    if (st != LS_OK)
        goto done;

    /* A file whose trailer did not give its size (several gzip members:
     * ISIZE is the last one's) went to a buffer of its own, or the trailers
     * gave no allocation at all: then the four are copied into one
     * allocation of the sizes found, as before. */
    int direct = mem != NULL;
    for (int i = 0; i < 4; i++)
        direct = direct && f[i].data == f[i].dst;
    if (!direct) {
        total = f[0].data_len + f[1].data_len + f[2].data_len + f[3].data_len;
        uint8_t *copy = malloc(total);
        if (copy == NULL) {
            st = ls_fail(err, LS_ENOMEM, "%s: out of memory for the data set", dir);
            goto done;
        }
        uint8_t *p = copy;
        for (int i = 0; i < 4; i++) {
            memcpy(p, f[i].data, f[i].data_len);
            f[i].data = p;
            p += f[i].data_len;
        }
        free(mem);
        mem = copy;
    }
    d = calloc(1, sizeof *d);
    if (d == NULL) {
        st = ls_fail(err, LS_ENOMEM, "%s: out of memory for the data set", dir);
        goto done;
    }
    ls_split *splits[2] = {&d->train, &d->test};
    for (int s = 0; s < 2; s++) {
        const idx_file *img = &f[2 * s], *lab = &f[2 * s + 1];
        splits[s]->x8 = img->data;
        splits[s]->y = lab->data;
        splits[s]->n = img->dims[0];
        splits[s]->dim = (size_t)set->rows * set->cols;
        splits[s]->xf = NULL;
    }
    d->mem = mem;
    mem = NULL;
    snprintf(d->name, sizeof d->name, "%s", set->name);
    d->n_classes = set->n_classes;
    uint8_t hb[32];
    for (int i = 0; i < 4; i++)
        bytes_put_le64(hb + 8 * i, f[i].gz_hash);
    d->hash = XXH3_64bits(hb, sizeof hb);

done:
    free(mem);
    for (int i = 0; i < 4; i++) {
        file_view_close(&f[i].gz);
        free(f[i].raw);
    }
    free(f);
    *out = d;
    return st;
}
