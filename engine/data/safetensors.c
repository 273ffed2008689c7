/* safetensors.c — a strict .safetensors reader (safetensors.h). */
#include "engine/data/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/file.h"

/* A cursor over the JSON header; every error names the file and the byte. */
typedef struct {
    const char *p, *end, *start;
    const char *what;
    ls_err *err;
} js;

static ls_status js_fail(js *j, const char *msg)
{
    return ls_fail(j->err, LS_EFORMAT, "%s: safetensors header, byte %zu: %s", j->what, (size_t)(j->p - j->start) + 8,
                   msg);
}

static void js_ws(js *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int js_eat(js *j, char c)
{
    js_ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return 1;
    }
    return 0;
}

/* A JSON string into out (UTF-8; \u escapes of the BMP outside the
 * surrogates, which tensor names do not need), cap bytes with its NUL. */
static ls_status js_string(js *j, char *out, size_t cap)
{
    if (!js_eat(j, '"'))
        return js_fail(j, "expected a string");
    size_t n = 0;
    while (j->p < j->end && *j->p != '"') {
        unsigned c = (unsigned char)*j->p++;
        if (c < 0x20)
            return js_fail(j, "a control character in a string");
        if (c == '\\') {
            if (j->p >= j->end)
                break;
            const char e = *j->p++;
            const char *simple = strchr("\"\\/bfnrt", e);
            if (e != '\0' && simple != NULL) {
                c = (unsigned char)"\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            } else if (e == 'u') {
                unsigned u = 0;
                for (int k = 0; k < 4; k++) {
                    const char h = j->p < j->end ? *j->p++ : 'x';
                    const char *d = strchr("0123456789abcdef0123456789ABCDEF", h);
                    if (h == '\0' || d == NULL)
                        return js_fail(j, "a bad \\u escape");
                    u = u * 16 + (unsigned)((d - "0123456789abcdef0123456789ABCDEF") % 16);
                }
                if (u >= 0xD800 && u <= 0xDFFF)
                    return js_fail(j, "a surrogate \\u escape");
                unsigned char b[3];
                size_t m = u < 0x80 ? 1 : u < 0x800 ? 2 : 3;
                if (m == 1)
                    b[0] = (unsigned char)u;
                else if (m == 2) {
                    b[0] = (unsigned char)(0xC0 | u >> 6);
                    b[1] = (unsigned char)(0x80 | (u & 0x3F));
                } else {
                    b[0] = (unsigned char)(0xE0 | u >> 12);
                    b[1] = (unsigned char)(0x80 | (u >> 6 & 0x3F));
                    b[2] = (unsigned char)(0x80 | (u & 0x3F));
                }
                if (n + m >= cap)
                    return js_fail(j, "a string is too long");
                memcpy(out + n, b, m);
                n += m;
                continue;
            } else {
                return js_fail(j, "a bad escape in a string");
            }
        }
        if (n + 1 >= cap)
            return js_fail(j, "a string is too long");
        out[n++] = (char)c;
    }
    if (j->p >= j->end)
        return js_fail(j, "a string does not end");
    j->p++;
    out[n] = '\0';
    return LS_OK;
}

/* A non-negative integer below 2^63 (no sign, fraction or exponent). */
static ls_status js_uint(js *j, uint64_t *v)
{
    js_ws(j);
    if (j->p >= j->end || *j->p < '0' || *j->p > '9')
        return js_fail(j, "expected a non-negative integer");
    if (*j->p == '0' && j->p + 1 < j->end && j->p[1] >= '0' && j->p[1] <= '9')
        return js_fail(j, "an integer with a leading zero");
    uint64_t x = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        if (x > (UINT64_C(1) << 62) / 5)
            return js_fail(j, "an integer is too large");
        x = x * 10 + (uint64_t)(*j->p++ - '0');
    }
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
        return js_fail(j, "expected an integer");
    *v = x;
    return LS_OK;
}

/* [a, b, ...] of at most cap integers. */
static ls_status js_uints(js *j, uint64_t *v, size_t cap, size_t *n)
{
    *n = 0;
    if (!js_eat(j, '['))
        return js_fail(j, "expected '['");
    if (js_eat(j, ']'))
        return LS_OK;
    do {
        if (*n == cap)
            return js_fail(j, "too many entries in a list");
        ls_status st = js_uint(j, &v[(*n)++]);
        if (st != LS_OK)
            return st;
    } while (js_eat(j, ','));
    return js_eat(j, ']') ? LS_OK : js_fail(j, "expected ',' or ']'");
}

/* The metadata: an object of strings. */
static ls_status js_metadata(js *j)
{
    char s[1024];
    ls_status st;
    if (!js_eat(j, '{'))
        return js_fail(j, "__metadata__ is not an object");
    if (js_eat(j, '}'))
        return LS_OK;
    do {
        if ((st = js_string(j, s, sizeof s)) != LS_OK)
            return st;
        if (!js_eat(j, ':'))
            return js_fail(j, "expected ':'");
        if ((st = js_string(j, s, sizeof s)) != LS_OK)
            return st;
    } while (js_eat(j, ','));
    return js_eat(j, '}') ? LS_OK : js_fail(j, "expected ',' or '}'");
}

static size_t dtype_size(const char *d)
{
    static const struct {
        const char *name;
        size_t size;
    } T[] = { { "F64", 8 }, { "F32", 4 }, { "F16", 2 }, { "BF16", 2 }, { "I64", 8 }, { "I32", 4 }, { "I16", 2 },
              { "I8", 1 }, { "U64", 8 }, { "U32", 4 }, { "U16", 2 }, { "U8", 1 }, { "BOOL", 1 },
              { "F8_E4M3", 1 }, { "F8_E5M2", 1 } };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (strcmp(T[i].name, d) == 0)
            return T[i].size;
    return 0;
}

/* One tensor's object: its three fields, each once. */
static ls_status js_tensor(js *j, safetensors_tensor *t, uint64_t off[2])
{
    int have[3] = { 0, 0, 0 };
    ls_status st;
    if (!js_eat(j, '{'))
        return js_fail(j, "a tensor's entry is not an object");
    do {
        char key[32];
        if ((st = js_string(j, key, sizeof key)) != LS_OK)
            return st;
        if (!js_eat(j, ':'))
            return js_fail(j, "expected ':'");
        const int k = strcmp(key, "dtype") == 0 ? 0 : strcmp(key, "shape") == 0 ? 1
                    : strcmp(key, "data_offsets") == 0 ? 2 : -1;
        if (k < 0)
            return js_fail(j, "a tensor's field is not dtype, shape or data_offsets");
        if (have[k]++)
            return js_fail(j, "a tensor's field is repeated");
        uint64_t v[SAFETENSORS_MAX_DIMS];
        size_t n;
        if (k == 0) {
            st = js_string(j, t->dtype, sizeof t->dtype);
        } else if (k == 1) {
            if ((st = js_uints(j, v, SAFETENSORS_MAX_DIMS, &n)) == LS_OK) {
                t->ndim = n;
                for (size_t i = 0; i < n; i++)
                    t->shape[i] = (size_t)v[i];
            }
        } else if ((st = js_uints(j, off, 2, &n)) == LS_OK && n != 2) {
            st = js_fail(j, "data_offsets is not [begin, end]");
        }
        if (st != LS_OK)
            return st;
    } while (js_eat(j, ','));
    if (!js_eat(j, '}'))
        return js_fail(j, "expected ',' or '}'");
    if (!have[0] || !have[1] || !have[2])
        return js_fail(j, "a tensor lacks dtype, shape or data_offsets");
    return LS_OK;
}

void safetensors_free(safetensors_file *f)
{
    free(f->tensors);
    f->tensors = NULL;
    f->n = 0;
}

ls_status safetensors_parse(const uint8_t *buf, size_t len, const char *what, safetensors_file *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    if (len < 8)
        return ls_fail(err, LS_EFORMAT, "%s: %zu bytes, shorter than a safetensors header length", what, len);
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--)
        hl = hl << 8 | buf[k];
    if (hl < 2 || hl > len - 8)
        return ls_fail(err, LS_EFORMAT, "%s: not a safetensors file (its first 8 bytes, the header length, say %llu; "
                       "the file has %zu bytes)%s", what, (unsigned long long)hl, len,
                       len >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0 ? ": it is a .npy file" : "");
    const uint8_t *data = buf + 8 + hl;
    const size_t data_len = len - 8 - (size_t)hl;
    js j = { (const char *)buf + 8, (const char *)buf + 8 + hl, (const char *)buf + 8, what, err };
    ls_status st;
    size_t cap = 0;
    if (!js_eat(&j, '{'))
        return js_fail(&j, "the header is not a JSON object");
    if (!js_eat(&j, '}')) {
        do {
            char name[sizeof out->tensors[0].name];
            if ((st = js_string(&j, name, sizeof name)) != LS_OK)
                goto fail;
            if (!js_eat(&j, ':')) {
                st = js_fail(&j, "expected ':'");
                goto fail;
            }
            if (strcmp(name, "__metadata__") == 0) {
                if ((st = js_metadata(&j)) != LS_OK)
                    goto fail;
                continue;
            }
            for (size_t i = 0; i < out->n; i++)
                if (strcmp(out->tensors[i].name, name) == 0) {
                    st = ls_fail(err, LS_EFORMAT, "%s: tensor '%s' appears twice", what, name);
                    goto fail;
                }
            if (out->n == cap) {
                cap = cap ? 2 * cap : 16;
                safetensors_tensor *nt = realloc(out->tensors, cap * sizeof *nt);
                if (nt == NULL) {
                    st = ls_fail(err, LS_ENOMEM, "%s: out of memory", what);
                    goto fail;
                }
                out->tensors = nt;
            }
            safetensors_tensor *t = &out->tensors[out->n++];
            memset(t, 0, sizeof *t);
            memcpy(t->name, name, sizeof t->name);
            uint64_t off[2];
            if ((st = js_tensor(&j, t, off)) != LS_OK)
                goto fail;
            const size_t es = dtype_size(t->dtype);
            if (es == 0) {
                st = ls_fail(err, LS_EFORMAT, "%s: tensor '%s': unknown dtype '%s'", what, name, t->dtype);
                goto fail;
            }
            uint64_t count = 1;
            for (size_t k = 0; k < t->ndim; k++) {
                if (t->shape[k] != 0 && count > (UINT64_MAX / 8) / t->shape[k]) {
                    st = ls_fail(err, LS_EFORMAT, "%s: tensor '%s': its shape overflows", what, name);
                    goto fail;
                }
                count *= t->shape[k];
            }
            if (off[0] > off[1] || off[1] > data_len || off[1] - off[0] != count * es) {
                st = ls_fail(err, LS_EFORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] do not hold its %llu "
                             "elements of %s within the %zu bytes of data", what, name, (unsigned long long)off[0],
                             (unsigned long long)off[1], (unsigned long long)count, t->dtype, data_len);
                goto fail;
            }
            t->data = data + off[0];
            t->bytes = (size_t)(off[1] - off[0]);
        } while (js_eat(&j, ','));
        if (!js_eat(&j, '}')) {
            st = js_fail(&j, "expected ',' or '}'");
            goto fail;
        }
    }
    js_ws(&j);
    if (j.p != j.end) {
        st = js_fail(&j, "text after the header's object");
        goto fail;
    }
    return LS_OK;
fail:
    safetensors_free(out);
    return st;
}

static void shape_text(char *out, size_t cap, const size_t *shape, size_t ndim)
{
    size_t at = (size_t)snprintf(out, cap, "[");
    for (size_t k = 0; k < ndim && at < cap; k++)
        at += (size_t)snprintf(out + at, cap - at, "%s%zu", k ? ", " : "", shape[k]);
    if (at < cap)
        snprintf(out + at, cap - at, "]");
}

ls_status safetensors_load_params(const char *path, const ls_tensor *ts, size_t n_ts, size_t n_params, float *params,
                                  uint64_t *hash, ls_err *err)
{
    const ls_tensor whole = { "params", 0, 1, { n_params } };
    if (ts == NULL) {
        ts = &whole;
        n_ts = 1;
    }
    /* A regular file only (a FIFO would block, /dev/zero never end), read
     * whole: its hash is the config's init_hash. */
    uint8_t *buf = NULL;
    size_t len = 0;
    ls_err e;
    ls_status st = file_read_all(path, SAFETENSORS_MAX_BYTES, &buf, &len, &e);
    if (st != LS_OK)
        return ls_fail(err, st, "--init %s", e.msg);
    *hash = XXH3_64bits(buf, len);
    char what[LS_SOURCE_MAX + 16];
    snprintf(what, sizeof what, "--init %s", path);
    safetensors_file sf;
    st = safetensors_parse(buf, len, what, &sf, err);
    if (st != LS_OK) {
        free(buf);
        return st;
    }
    for (size_t i = 0; i < sf.n && st == LS_OK; i++) {   /* every tensor of the file is the model's */
        size_t k = 0;
        while (k < n_ts && strcmp(ts[k].name, sf.tensors[i].name) != 0)
            k++;
        if (k == n_ts)
            st = ls_fail(err, LS_EINVAL, "%s: tensor '%s' is not one of the model's", what, sf.tensors[i].name);
    }
    for (size_t k = 0; k < n_ts && st == LS_OK; k++) {
        size_t i = 0;
        while (i < sf.n && strcmp(ts[k].name, sf.tensors[i].name) != 0)
            i++;
        if (i == sf.n) {
            st = ls_fail(err, LS_EINVAL, "%s: the model's tensor '%s' is missing", what, ts[k].name);
            break;
        }
        const safetensors_tensor *t = &sf.tensors[i];
        int same = t->ndim == ts[k].ndim;
        size_t count = 1;
        for (size_t d = 0; d < ts[k].ndim; d++) {
            same = same && t->shape[d] == ts[k].shape[d];
            count *= ts[k].shape[d];
        }
        if (!same) {
            char a[160], b[160];
            shape_text(a, sizeof a, t->shape, t->ndim);
            shape_text(b, sizeof b, ts[k].shape, ts[k].ndim);
            st = ls_fail(err, LS_EINVAL, "%s: tensor '%s' has shape %s, the model's is %s", what, t->name, a, b);
            break;
        }
        if (strcmp(t->dtype, "F32") != 0) {
            st = ls_fail(err, LS_EINVAL, "%s: tensor '%s' has dtype %s (F32 needed)", what, t->name, t->dtype);
            break;
        }
        if (ts[k].offset > n_params || count > n_params - ts[k].offset) {
            st = ls_fail(err, LS_EINVAL, "%s: the model's tensor '%s' lies past its %zu parameters", what,
                         ts[k].name, n_params);
            break;
        }
        for (size_t x = 0; x < count; x++) {   /* little-endian whatever the host */
            const uint8_t *b = t->data + 4 * x;
            const uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            /* A NaN or infinite weight diverges at the first step (or, past
             * a ReLU, trains on silently): refused here, by its bits. */
            if ((u & 0x7f800000u) == 0x7f800000u) {
                st = ls_fail(err, LS_EINVAL, "%s: tensor '%s' element %zu is %s; weights must be finite", what,
                             t->name, x, (u & 0x007fffffu) != 0 ? "NaN" : (u >> 31) == 0 ? "infinite" : "-infinite");
                break;
            }
            memcpy(&params[ts[k].offset + x], &u, sizeof u);
        }
    }
    safetensors_free(&sf);
    free(buf);
    return st;
}
