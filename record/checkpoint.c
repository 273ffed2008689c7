/* checkpoint.c — checkpoint files: encode, parse, atomic save, checked load.
 *
 * A checkpoint is built as one image in memory (header, parameters, optimiser
 * block, checksum) and written with one write sequence, so the checksum is
 * one XXH3 call over the bytes that reach the disk. Atomicity comes from the
 * file system: the image goes to "<path>.tmp" (a fixed name, so a torn
 * temporary file left by a crash is simply overwritten by the next attempt),
 * is fsync'ed, renamed over <path>, and the directory is fsync'ed so that the
 * rename itself survives a power cut.
 *
 * Parsing never trusts the header: every size is checked against the length
 * of the buffer with overflow-safe arithmetic before any pointer is formed,
 * and the checksum is verified before anything is copied out. ckpt_parse is
 * the entry point the fuzz targets call; ckpt_parse_any is the same code
 * with version 1 admitted too (its header is version 2's without the owner,
 * so one parser reads both, the header size telling where the payload is).
 */
#include "record/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/bytes.h"
#include "base/file.h"
#include "record/hash.h"

#define CKPT_MAGIC_BYTES 8

static void (*ckpt_hook)(void);

void ckpt_set_test_hook(void (*hook)(void))
{
    ckpt_hook = hook;
}

/* ---- little-endian fields: base/bytes.h ------------------------------------------- */

/* int64 ↔ uint64 with the same bits, without implementation-defined casts. */
static uint64_t i64_bits(int64_t i)
{
    uint64_t u;
    memcpy(&u, &i, sizeof u);
    return u;
}

static int64_t bits_i64(uint64_t u)
{
    int64_t i;
    memcpy(&i, &u, sizeof i);
    return i;
}

/* Image size in uint64 arithmetic; 0 when it overflows 64 bits. */
static uint64_t image_bytes_u64(uint64_t header, uint64_t n_params, uint64_t opt_bytes)
{
    const uint64_t fixed = header + CKPT_TRAILER_BYTES;
    if (n_params > (UINT64_MAX - fixed) / 4)
        return 0;
    uint64_t s = fixed + 4 * n_params;
    if (opt_bytes > UINT64_MAX - s)
        return 0;
    return s + opt_bytes;
}

size_t ckpt_image_bytes(size_t n_params, size_t opt_bytes)
{
    uint64_t s = image_bytes_u64(CKPT_HEADER_BYTES, (uint64_t)n_params, (uint64_t)opt_bytes);
    if (s == 0 || s > (uint64_t)SIZE_MAX)
        return 0;
    return (size_t)s;
}

/* ---- encode / parse ------------------------------------------------------------ */

ls_status ckpt_encode_owned(unsigned char *buf, size_t cap, const ckpt_owner *owner, uint64_t config_hash,
                            int64_t step, const float *params, size_t n_params, const void *opt_state,
                            size_t opt_bytes, uint64_t *state_hash, ls_err *err)
{
    size_t len = ckpt_image_bytes(n_params, opt_bytes);
    if (len == 0)
        return ls_fail(err, LS_EINVAL, "checkpoint: %zu parameters and %zu state bytes overflow the image size",
                       n_params, opt_bytes);
    if (cap < len)
        return ls_fail(err, LS_EINVAL, "checkpoint: buffer of %zu bytes, the image needs %zu", cap, len);
    if (step < 0)
        return ls_fail(err, LS_EINVAL, "checkpoint: step %lld is negative", (long long)step);
    memcpy(buf, CKPT_MAGIC, CKPT_MAGIC_BYTES);
    bytes_put_le32(buf + 8, CKPT_VERSION);
    bytes_put_le32(buf + 12, CKPT_HEADER_BYTES);
    bytes_put_le64(buf + 16, config_hash);
    bytes_put_le64(buf + 24, i64_bits(step));
    bytes_put_le64(buf + 32, (uint64_t)n_params);
    bytes_put_le64(buf + 40, (uint64_t)opt_bytes);
    static const ckpt_owner nobody;
    if (owner == NULL)
        owner = &nobody;
    memcpy(buf + 48, owner->db_id, CKPT_DBID_BYTES);
    bytes_put_le64(buf + 64, i64_bits(owner->run_id));
    unsigned char *p = buf + CKPT_HEADER_BYTES;
    bytes_put_le32_words(p, params, n_params);
    p += 4 * n_params;
    /* The optimiser block is 32-bit words (engine/core/optim.c keeps it so),
     * stored little-endian like θ; a trailing part word, which no optimiser
     * has, would be copied as it is. */
    if (opt_bytes > 0) {
        bytes_put_le32_words(p, opt_state, opt_bytes / 4);
        memcpy(p + opt_bytes / 4 * 4, (const unsigned char *)opt_state + opt_bytes / 4 * 4, opt_bytes % 4);
    }
    p += opt_bytes;
    uint64_t sum = hash_bytes(buf, (size_t)(p - buf));
    bytes_put_le64(p, sum);
    if (state_hash != NULL)
        *state_hash = sum;
    return LS_OK;
}

ls_status ckpt_encode(unsigned char *buf, size_t cap, uint64_t config_hash, int64_t step, const float *params,
                      size_t n_params, const void *opt_state, size_t opt_bytes, uint64_t *state_hash, ls_err *err)
{
    return ckpt_encode_owned(buf, cap, NULL, config_hash, step, params, n_params, opt_state, opt_bytes, state_hash,
                             err);
}

/* Header size of a version this lockstep reads; 0 for any other. */
static uint32_t header_of(uint32_t version)
{
    return version == 1 ? CKPT_V1_HEADER_BYTES : version == 2 ? CKPT_HEADER_BYTES : 0;
}

/* The fixed header of either version, up to and including the owner:
 * magic, version, header size. Needs len >= the version's header. */
static ls_status parse_head(const unsigned char *buf, size_t len, const char *what, uint32_t min_version,
                            ckpt_view *out, ls_err *err)
{
    size_t m = len < CKPT_MAGIC_BYTES ? len : CKPT_MAGIC_BYTES;
    if (memcmp(buf != NULL ? buf : (const unsigned char *)"", CKPT_MAGIC, m) != 0)
        return ls_fail(err, LS_EFORMAT, "%s: not a lockstep checkpoint (bad magic)", what);
    const size_t v1_fixed = CKPT_V1_HEADER_BYTES;
    if (len < v1_fixed)
        return ls_fail(err, LS_EFORMAT, "%s: truncated: %zu bytes, a checkpoint header has at least %zu", what,
                       len, v1_fixed);
    uint32_t version = bytes_get_le32(buf + 8);
    if (version < min_version || header_of(version) == 0) {
        if (min_version == CKPT_VERSION)
            return ls_fail(err, LS_EFORMAT, "%s: checkpoint version %u is not supported (this lockstep reads %d)",
                           what, version, CKPT_VERSION);
        return ls_fail(err, LS_EFORMAT, "%s: checkpoint version %u is not supported (this lockstep reads %u to %d)",
                       what, version, min_version, CKPT_VERSION);
    }
    uint32_t header = bytes_get_le32(buf + 12);
    if (header != header_of(version))
        return ls_fail(err, LS_EFORMAT, "%s: header size %u, version %u has %u", what, header, version,
                       header_of(version));
    if (len < header)
        return ls_fail(err, LS_EFORMAT, "%s: truncated: %zu bytes, a version %u header has %u", what, len, version,
                       header);
    int64_t step = bits_i64(bytes_get_le64(buf + 24));
    out->version = version;
    out->header_bytes = header;
    out->config_hash = bytes_get_le64(buf + 16);
    out->step = step;
    out->n_params = bytes_get_le64(buf + 32);
    out->opt_bytes = bytes_get_le64(buf + 40);
    out->has_owner = version >= 2;
    if (out->has_owner) {
        memcpy(out->owner.db_id, buf + 48, CKPT_DBID_BYTES);
        out->owner.run_id = bits_i64(bytes_get_le64(buf + 64));
    }
    return LS_OK;
}

static ls_status parse_image(const unsigned char *buf, size_t len, const char *what, uint32_t min_version,
                             ckpt_view *out, ls_err *err)
{
    if (what == NULL)
        what = "checkpoint";
    memset(out, 0, sizeof *out);
    if (buf == NULL)
        len = 0;
    ckpt_view h;
    memset(&h, 0, sizeof h);
    ls_status st = parse_head(buf, len, what, min_version, &h, err);
    if (st != LS_OK)
        return st;
    if (len < (size_t)h.header_bytes + CKPT_TRAILER_BYTES)
        return ls_fail(err, LS_EFORMAT, "%s: truncated: %zu bytes, a version %u checkpoint has at least %zu", what,
                       len, h.version, (size_t)h.header_bytes + CKPT_TRAILER_BYTES);
    uint64_t want = image_bytes_u64(h.header_bytes, h.n_params, h.opt_bytes);
    if (want == 0)
        return ls_fail(err, LS_EFORMAT, "%s: impossible sizes (%llu parameters, %llu state bytes)", what,
                       (unsigned long long)h.n_params, (unsigned long long)h.opt_bytes);
    if (want != (uint64_t)len)
        return ls_fail(err, LS_EFORMAT, "%s: %s: %zu bytes, the header (%llu parameters, %llu state bytes) says %llu",
                       what, (uint64_t)len < want ? "truncated" : "trailing bytes", len,
                       (unsigned long long)h.n_params, (unsigned long long)h.opt_bytes, (unsigned long long)want);
    uint64_t stored = bytes_get_le64(buf + len - CKPT_TRAILER_BYTES);
    uint64_t actual = hash_bytes(buf, len - CKPT_TRAILER_BYTES);
    if (stored != actual)
        return ls_fail(err, LS_EFORMAT, "%s: checksum mismatch (stored %016llx, contents hash to %016llx): "
                       "the file is damaged", what, (unsigned long long)stored, (unsigned long long)actual);
    if (h.step < 0)
        return ls_fail(err, LS_EFORMAT, "%s: step %lld is negative", what, (long long)h.step);
    *out = h;
    out->params = buf + h.header_bytes;
    out->opt_state = out->params + 4 * h.n_params;
    out->checksum = stored;
    return LS_OK;
}

ls_status ckpt_parse(const unsigned char *buf, size_t len, const char *what, ckpt_view *out, ls_err *err)
{
    return parse_image(buf, len, what, CKPT_VERSION, out, err);
}

ls_status ckpt_parse_any(const unsigned char *buf, size_t len, const char *what, ckpt_view *out, ls_err *err)
{
    return parse_image(buf, len, what, 1, out, err);
}

/* ---- files ------------------------------------------------------------------------ */

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* fsync of the directory holding path, so the rename is durable. File
 * systems that cannot sync a directory (EINVAL) are taken at their word. */
static int sync_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (slash == NULL) {
        snprintf(dir, sizeof dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir)
            return -1;
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e == EINVAL)
        rc = 0;
    errno = e;
    return rc;
}

ls_status ckpt_save_owned(const char *path, const ckpt_owner *owner, uint64_t config_hash, int64_t step,
                          const float *params, size_t n_params, const void *opt_state, size_t opt_bytes,
                          uint64_t *state_hash, ls_err *err)
{
    if (path == NULL || path[0] == 0)
        return ls_fail(err, LS_EINVAL, "checkpoint: empty file name");
    ls_status st = LS_OK;
    size_t len = ckpt_image_bytes(n_params, opt_bytes);
    if (len == 0)
        return ls_fail(err, LS_EINVAL, "%s: %zu parameters and %zu state bytes overflow the image size", path,
                       n_params, opt_bytes);
    size_t plen = strlen(path);
    /* One allocation: the temporary name, then the image. */
    char *tmp = malloc(plen + 5 + len);
    if (tmp == NULL)
        return ls_fail(err, LS_ENOMEM, "%s: out of memory for a %zu-byte checkpoint", path, len);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    unsigned char *image = (unsigned char *)tmp + plen + 5;
    uint64_t sum;
    if ((st = ckpt_encode_owned(image, len, owner, config_hash, step, params, n_params, opt_state, opt_bytes, &sum,
                                err)) != LS_OK) {
        free(tmp);
        return st;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = ls_fail(err, LS_EIO, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    size_t half = len / 2;
    const char *fail = NULL;
    if (write_all(fd, image, half) != 0) {
        fail = "cannot write";
    } else {
        if (ckpt_hook != NULL)
            ckpt_hook();
        if (write_all(fd, image + half, len - half) != 0)
            fail = "cannot write";
        else if (fsync(fd) != 0)
            fail = "cannot sync";
    }
    int e = errno;
    if (close(fd) != 0 && fail == NULL) {
        fail = "cannot close";
        e = errno;
    }
    if (fail == NULL && rename(tmp, path) != 0) {
        e = errno;
        st = ls_fail(err, LS_EIO, "%s: cannot rename %s over it: %s", path, tmp, strerror(e));
        unlink(tmp);
        free(tmp);
        return st;
    }
    if (fail != NULL) {
        st = ls_fail(err, LS_EIO, "%s: %s: %s", tmp, fail, strerror(e));
        unlink(tmp);
        free(tmp);
        return st;
    }
    free(tmp);
    if (sync_dir_of(path) != 0)
        return ls_fail(err, LS_EIO, "%s: cannot sync its directory: %s", path, strerror(errno));
    if (state_hash != NULL)
        *state_hash = sum;
    return LS_OK;
}

ls_status ckpt_save(const char *path, uint64_t config_hash, int64_t step, const float *params, size_t n_params,
                    const void *opt_state, size_t opt_bytes, uint64_t *state_hash, ls_err *err)
{
    return ckpt_save_owned(path, NULL, config_hash, step, params, n_params, opt_state, opt_bytes, state_hash, err);
}

ls_status ckpt_read_file(const char *path, unsigned char **buf, size_t *len, ls_err *err)
{
    *buf = NULL;
    *len = 0;
    if (path == NULL || path[0] == 0)
        return ls_fail(err, LS_EINVAL, "checkpoint: empty file name");
    /* The header first, through the checked open (a FIFO is refused, not
     * waited on): it states the image's size, the most read after it. */
    struct stat sb;
    if (lstat(path, &sb) != 0 && errno == ENOENT)
        return ls_fail(err, LS_ENOTFOUND, "%s: no such checkpoint file", path);
    int fd;
    size_t size;
    ls_status st = file_open_regular(path, &fd, &size, err);
    if (st != LS_OK)
        return st;
    unsigned char head[CKPT_HEADER_BYTES];
    size_t got = 0;
    while (got < sizeof head) {
        ssize_t k = read(fd, head + got, sizeof head - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            return ls_fail(err, LS_EIO, "%s: cannot read: %s", path, strerror(e));
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    ckpt_view v;
    memset(&v, 0, sizeof v);
    if ((st = parse_head(head, got, path, 1, &v, err)) != LS_OK)
        return st;
    uint64_t bound = image_bytes_u64(v.header_bytes, v.n_params, v.opt_bytes);
    if (bound == 0 || bound > (uint64_t)SIZE_MAX - 1)
        return ls_fail(err, LS_EFORMAT, "%s: its header states %llu parameters and %llu optimiser bytes, more than "
                       "this machine can address", path, (unsigned long long)v.n_params,
                       (unsigned long long)v.opt_bytes);
    /* A file shorter than its header states is read whole and judged by the
     * parser (truncated); a longer one is refused before any read. */
    return file_read_all(path, (size_t)bound, buf, len, err);
}

static void hex16(const unsigned char *id, char *out)
{
    for (int i = 0; i < CKPT_DBID_BYTES; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
}

ls_status ckpt_load_checked(const char *path, const ckpt_expect *want, float *params, void *opt_state,
                            ckpt_info *info, ls_err *err)
{
    if (path == NULL || path[0] == 0)
        return ls_fail(err, LS_EINVAL, "checkpoint: empty file name");
    ls_status st = LS_OK;
    unsigned char *buf;
    size_t len;
    if ((st = ckpt_read_file(path, &buf, &len, err)) != LS_OK)
        return st;
    ckpt_view v;
    st = ckpt_parse_any(buf, len, path, &v, err);
    if (st == LS_OK && v.has_owner && want->db_ids != NULL) {
        int known = 0;
        for (size_t i = 0; i < want->n_db_ids && !known; i++)
            known = memcmp(v.owner.db_id, want->db_ids + i * CKPT_DBID_BYTES, CKPT_DBID_BYTES) == 0;
        char a[2 * CKPT_DBID_BYTES + 1], b[2 * CKPT_DBID_BYTES + 1];
        hex16(v.owner.db_id, a);
        hex16(want->db_ids, b);
        if (!known)
            st = ls_fail(err, LS_EMISMATCH, "%s: written for another database (%.16s, run %lld); this one is %.16s",
                         path, a, (long long)v.owner.run_id, b);
        else if (v.owner.run_id != want->run_id)
            st = ls_fail(err, LS_EMISMATCH, "%s: written for run %lld, not run %lld", path,
                         (long long)v.owner.run_id, (long long)want->run_id);
    }
    if (st == LS_OK && v.config_hash != want->config_hash)
        st = ls_fail(err, LS_EMISMATCH, "%s: checkpoint of config %016llx, the run's config is %016llx", path,
                     (unsigned long long)v.config_hash, (unsigned long long)want->config_hash);
    if (st == LS_OK && v.n_params != (uint64_t)want->n_params)
        st = ls_fail(err, LS_EMISMATCH, "%s: checkpoint has %llu parameters, the model has %zu", path,
                     (unsigned long long)v.n_params, want->n_params);
    if (st == LS_OK && v.opt_bytes != (uint64_t)want->opt_bytes)
        st = ls_fail(err, LS_EMISMATCH, "%s: checkpoint has %llu bytes of optimiser state, the optimiser has %zu",
                     path, (unsigned long long)v.opt_bytes, want->opt_bytes);
    if (st == LS_OK) {
        bytes_get_le32_words(params, v.params, want->n_params);
        if (want->opt_bytes > 0) {
            bytes_get_le32_words(opt_state, v.opt_state, want->opt_bytes / 4);
            memcpy((unsigned char *)opt_state + want->opt_bytes / 4 * 4, v.opt_state + want->opt_bytes / 4 * 4,
                   want->opt_bytes % 4);
        }
        if (info != NULL) {
            memset(info, 0, sizeof *info);
            info->version = v.version;
            info->has_owner = v.has_owner;
            info->owner = v.owner;
            info->step = v.step;
            info->state_hash = v.checksum;
        }
    }
    free(buf);
    return st;
}

ls_status ckpt_load(const char *path, uint64_t config_hash, size_t n_params, size_t opt_bytes, int64_t *step,
                    float *params, void *opt_state, ls_err *err)
{
    ckpt_expect want = { config_hash, n_params, opt_bytes, NULL, 0, 0 };
    ckpt_info info = { 0 };   /* gcc -O3 cannot see that LS_OK means it was filled */
    ls_status st = ckpt_load_checked(path, &want, params, opt_state, &info, err);
    if (st == LS_OK)
        *step = info.step;
    return st;
}

ls_status ckpt_read_head(const char *path, ckpt_info *info, ls_err *err)
{
    memset(info, 0, sizeof *info);
    if (path == NULL || path[0] == 0)
        return ls_fail(err, LS_EINVAL, "checkpoint: empty file name");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return ls_fail(err, LS_ENOTFOUND, "%s: no such checkpoint file", path);
        return ls_fail(err, LS_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ls_fail(err, LS_EIO, "%s: not a regular file", path);
    }
    unsigned char head[CKPT_HEADER_BYTES];
    size_t got = 0;
    while (got < sizeof head) {
        ssize_t k = read(fd, head + got, sizeof head - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            return ls_fail(err, LS_EIO, "%s: cannot read: %s", path, strerror(e));
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    ckpt_view v;
    memset(&v, 0, sizeof v);
    ls_status st = parse_head(head, got, path, 1, &v, err);
    if (st != LS_OK)
        return st;
    info->version = v.version;
    info->has_owner = v.has_owner;
    info->owner = v.owner;
    info->step = v.step;
    return LS_OK;
}
