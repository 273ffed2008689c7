/* npy.c — the .npy reader (npy.h). The header is parsed by hand, strictly:
 * only what numpy.save writes (a dict of three keys, Python literals) is
 * accepted, so a damaged file is named rather than half-read. */
#include "engine/data/npy.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/bytes.h"
#include "base/file.h"

static const uint8_t NPY_MAGIC[6] = { 0x93, 'N', 'U', 'M', 'P', 'Y' };

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* A quoted Python string ('x' or "x") at p into out; returns the end, or NULL. */
static const char *parse_str(const char *p, const char *end, char *out, size_t cap)
{
    if (p >= end || (*p != '\'' && *p != '"'))
        return NULL;
    const char q = *p++;
    size_t n = 0;
    while (p < end && *p != q) {
        if (*p == '\\' || n + 1 >= cap)
            return NULL;
        out[n++] = *p++;
    }
    if (p >= end)
        return NULL;
    out[n] = '\0';
    return p + 1;
}

static int starts(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* A shape tuple: "()", "(5,)", "(60000, 28, 28)". */
static const char *parse_shape(const char *p, const char *end, npy_array *a)
{
    if (p >= end || *p != '(')
        return NULL;
    p = skip_space(p + 1, end);
    a->ndim = 0;
    while (p < end && *p != ')') {
        if (*p < '0' || *p > '9' || a->ndim == NPY_MAX_DIMS)
            return NULL;
        uint64_t v = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (v > (UINT64_MAX - 9) / 10)
                return NULL;
            v = v * 10 + (uint64_t)(*p++ - '0');
        }
        if (p < end && *p == 'L')   /* Python 2 longs, as old numpy wrote them */
            p++;
        a->shape[a->ndim++] = (size_t)v;
        p = skip_space(p, end);
        if (p < end && *p == ',')
            p = skip_space(p + 1, end);
        else if (p < end && *p != ')')
            return NULL;
    }
    return p < end ? p + 1 : NULL;
}

static ls_status parse_descr(const char *d, npy_array *a, const char *what, ls_err *err)
{
    size_t n = strlen(d);
    if (n < 3 || strchr("<>|=", d[0]) == NULL)
        return ls_fail(err, LS_EFORMAT, "%s: dtype '%s' is not a plain number type (like '<f4' or '<i8')", what, d);
    a->big_endian = d[0] == '>';
    a->kind = d[1];
    char *endp;
    errno = 0;
    unsigned long size = strtoul(d + 2, &endp, 10);
    if (errno != 0 || *endp != '\0')
        return ls_fail(err, LS_EFORMAT, "%s: dtype '%s' is not a plain number type (like '<f4' or '<i8')", what, d);
    a->size = (size_t)size;
    int ok = (a->kind == 'f' && (size == 4 || size == 8)) ||
             ((a->kind == 'i' || a->kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
             (a->kind == 'b' && size == 1);
    if (!ok)
        return ls_fail(err, LS_EFORMAT, "%s: dtype '%s' is not supported (float32/64, integers, bool)", what, d);
    return LS_OK;
}

ls_status npy_parse(const uint8_t *buf, size_t len, npy_array *out, const char *what, ls_err *err)
{
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(buf, NPY_MAGIC, sizeof NPY_MAGIC) != 0)
        return ls_fail(err, LS_EFORMAT, "%s: not a .npy file (no \\x93NUMPY magic)", what);
    const unsigned major = buf[6], minor = buf[7];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return ls_fail(err, LS_EFORMAT, "%s: truncated in the header length", what);
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hstart = 12;
    } else {
        return ls_fail(err, LS_EFORMAT, "%s: .npy format version %u.%u is not supported (1.0, 2.0, 3.0)", what, major,
                       minor);
    }
    if (minor != 0)
        return ls_fail(err, LS_EFORMAT, "%s: .npy format version %u.%u is not supported (1.0, 2.0, 3.0)", what, major,
                       minor);
    if (hlen > len - hstart)
        return ls_fail(err, LS_EFORMAT, "%s: truncated: the header says %zu bytes, the file has %zu after it", what,
                       hlen, len - hstart);
    const char *p = (const char *)buf + hstart, *end = p + hlen;
    if (hlen == 0 || end[-1] != '\n')
        return ls_fail(err, LS_EFORMAT, "%s: the header does not end in a newline", what);
    p = skip_space(p, end);
    if (p >= end || *p != '{')
        return ls_fail(err, LS_EFORMAT, "%s: the header is not a dict", what);
    p = skip_space(p + 1, end);
    int have_descr = 0, have_order = 0, have_shape = 0;
    char descr[32];
    while (p < end && *p != '}') {
        char key[32];
        const char *q = parse_str(p, end, key, sizeof key);
        if (q == NULL)
            return ls_fail(err, LS_EFORMAT, "%s: header: a key is not a quoted name", what);
        q = skip_space(q, end);
        if (q >= end || *q != ':')
            return ls_fail(err, LS_EFORMAT, "%s: header: no ':' after '%s'", what, key);
        q = skip_space(q + 1, end);
        if (strcmp(key, "descr") == 0 && !have_descr) {
            if ((q = parse_str(q, end, descr, sizeof descr)) == NULL)
                return ls_fail(err, LS_EFORMAT, "%s: header: descr is not a simple dtype string (a structured or "
                               "object array?)", what);
            ls_status st = parse_descr(descr, out, what, err);
            if (st != LS_OK)
                return st;
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            if (starts(q, end, "True"))
                return ls_fail(err, LS_EFORMAT, "%s: fortran_order is True: save the array in C order "
                               "(numpy.ascontiguousarray)", what);
            if (!starts(q, end, "False"))
                return ls_fail(err, LS_EFORMAT, "%s: header: fortran_order is neither True nor False", what);
            q += 5;
            have_order = 1;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            if ((q = parse_shape(q, end, out)) == NULL)
                return ls_fail(err, LS_EFORMAT, "%s: header: shape is not a tuple of up to %d sizes", what,
                               NPY_MAX_DIMS);
            have_shape = 1;
        } else {
            return ls_fail(err, LS_EFORMAT, "%s: header: unexpected or repeated key '%s'", what, key);
        }
        p = skip_space(q, end);
        if (p < end && *p == ',')
            p = skip_space(p + 1, end);
        else if (p < end && *p != '}')
            return ls_fail(err, LS_EFORMAT, "%s: header: no ',' or '}' after '%s'", what, key);
    }
    if (p >= end)
        return ls_fail(err, LS_EFORMAT, "%s: header: the dict is not closed", what);
    if (!have_descr || !have_order || !have_shape)
        return ls_fail(err, LS_EFORMAT, "%s: header: missing %s", what,
                       !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    size_t count = 1;
    for (size_t i = 0; i < out->ndim; i++) {
        if (out->shape[i] != 0 && count > SIZE_MAX / out->shape[i])
            return ls_fail(err, LS_EFORMAT, "%s: shape: the element count overflows", what);
        count *= out->shape[i];
    }
    if (count > SIZE_MAX / out->size)
        return ls_fail(err, LS_EFORMAT, "%s: shape: the byte count overflows", what);
    const size_t data_at = hstart + hlen, want = count * out->size, have = len - data_at;
    if (have != want)
        return ls_fail(err, LS_EFORMAT, "%s: %s: the shape needs %zu bytes of data, the file has %zu", what,
                       have < want ? "truncated" : "trailing bytes", want, have);
    out->count = count;
    out->data = buf + data_at;
    return LS_OK;
}

ls_status npy_read_file(const char *path, uint8_t **buf, size_t *len, uint64_t *hash, ls_err *err)
{
    *buf = NULL;
    *len = 0;
    int fd;
    size_t n;
    ls_status st = file_open_regular(path, &fd, &n, err);
    if (st != LS_OK)
        return st;
    uint8_t *b = malloc(n ? n : 1);
    if (b == NULL) {
        close(fd);
        return ls_fail(err, LS_ENOMEM, "%s: out of memory for %zu bytes", path, n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = errno;
            free(b);
            close(fd);
            return ls_fail(err, LS_EIO, "%s: %s", path, r < 0 ? strerror(e) : "the file shrank while being read");
        }
        got += (size_t)r;
    }
    close(fd);
    *buf = b;
    *len = n;
    if (hash != NULL)
        *hash = XXH3_64bits(b, n);
    return LS_OK;
}

static uint64_t load_bits(const npy_array *a, size_t i)
{
    const uint8_t *p = a->data + i * a->size;
    uint64_t v = 0;
    for (size_t k = 0; k < a->size; k++)
        v |= (uint64_t)p[a->big_endian ? a->size - 1 - k : k] << (8 * k);
    return v;
}

float npy_float(const npy_array *a, size_t i)
{
    const uint64_t v = load_bits(a, i);
    if (a->kind == 'f' && a->size == 4) {
        uint32_t u = (uint32_t)v;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    if (a->kind == 'f') {
        double d;
        memcpy(&d, &v, sizeof d);
        return (float)d;
    }
    return (float)npy_int(a, i);
}

ls_status npy_check_finite(const npy_array *a, size_t dim, const char *what, ls_err *err)
{
    if (a->kind != 'f' || dim == 0)
        return LS_OK;
    for (size_t i = 0; i < a->count; i++) {
        const float f = npy_float(a, i);
        if (isfinite(f))
            continue;
        char how[48];
        if (a->size == 8 && !isnan(f)) {
            double d;
            const uint64_t v = load_bits(a, i);
            memcpy(&d, &v, sizeof d);
            if (isfinite(d))
                snprintf(how, sizeof how, "%g, beyond float32's range", d);
            else
                snprintf(how, sizeof how, "%s", d > 0 ? "infinite" : "-infinite");
        } else {
            snprintf(how, sizeof how, "%s", isnan(f) ? "NaN" : f > 0 ? "infinite" : "-infinite");
        }
        return ls_fail(err, LS_EFORMAT, "%s: sample %zu feature %zu is %s; features must be finite", what, i / dim,
                       i % dim, how);
    }
    return LS_OK;
}

int64_t npy_int(const npy_array *a, size_t i)
{
    const uint64_t v = load_bits(a, i);
    if (a->kind == 'i' && a->size < 8) {
        const unsigned bits = (unsigned)(8 * a->size);
        const uint64_t sign = UINT64_C(1) << (bits - 1);
        return (int64_t)((v ^ sign) - sign);   /* sign-extend */
    }
    if (a->kind == 'u' && v > (uint64_t)INT64_MAX)
        return INT64_MAX;
    return (int64_t)v;
}

uint64_t npy_uint(const npy_array *a, size_t i)
{
    return load_bits(a, i);
}

/* ---- writing --------------------------------------------------------------------------------- */

void npy_write_f32le(FILE *f, const float *x, size_t n)
{
    unsigned char buf[4096];
    for (size_t i = 0; i < n; i += sizeof buf / 4) {
        const size_t m = n - i < sizeof buf / 4 ? n - i : sizeof buf / 4;
        bytes_put_le32_words(buf, x + i, m);
        fwrite(buf, 1, 4 * m, f);
    }
}

void npy_write_header(FILE *f, const char *descr, const size_t *shape, size_t ndim)
{
    char dict[512], dims[400];
    size_t at = 0;
    dims[0] = '\0';
    for (size_t i = 0; i < ndim && at < sizeof dims; i++) {
        int w = snprintf(dims + at, sizeof dims - at, "%s%zu", i ? ", " : "", shape[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s%s), }", descr, dims,
                       ndim == 1 ? "," : "");
    const size_t hl = len > 0 ? (size_t)len : 0;
    /* numpy.lib.format: spaces, then '\n', so that the magic (6), the
     * version (2), the length (2) and the header end on a multiple of 64;
     * like numpy, a full 64 spaces when it would end there already. */
    const size_t pad = 64 - (10 + hl + 1) % 64, total = hl + pad + 1;
    const unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(total & 0xff),
                                    (unsigned char)(total >> 8) };
    fwrite(pre, 1, sizeof pre, f);
    fwrite(dict, 1, hl, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
}
