/* test_npy.c — the .npy reader (engine/data/npy.h) against files written by
 * numpy itself (Debian's python3-numpy, /usr/bin/python3): every supported
 * dtype in both byte orders and format versions 1.0, 2.0 and 3.0, each value
 * compared bit for bit with the one numpy prints; and hand-made malformed
 * files, each refused with LS_EFORMAT naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/data/npy.h"

#define PYTHON "/usr/bin/python3"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/lockstep-npy-XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* numpy writes NAME.npy from EXPR (with dtype DT, format version VER) and
 * NAME.txt: each element's bits in hex (floats as their binary32/64 bit
 * pattern, integers as two's complement, 16 hex digits). */
static void numpy_write(const char *name, const char *expr, const char *dt, const char *ver)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             PYTHON " - <<'EOF'\n"
             "import numpy as np\n"
             "from numpy.lib import format as F\n"
             "a = np.asarray(%s, dtype=np.dtype('%s'))\n"
             "with open('%s/%s.npy', 'wb') as f:\n"
             "    F.write_array(f, a, version=%s)\n"
             "b = a.astype(a.dtype.newbyteorder('<')) if a.dtype.kind in 'fiub' else a\n"
             "with open('%s/%s.txt', 'w') as f:\n"
             "    for v in b.reshape(-1):\n"
             "        if b.dtype.kind == 'f':\n"
             "            w = int(np.array(v, dtype=b.dtype).view('<u%%d' %% b.dtype.itemsize))\n"
             "        else:\n"
             "            w = int(v) & 0xffffffffffffffff\n"
             "        f.write('%%016x\\n' %% w)\n"
             "EOF",
             expr, dt, dir, name, ver, dir, name);
    if (system(cmd) != 0)
        fail_msg("numpy could not write %s (is python3-numpy installed? make deps)", name);
}

static uint8_t *slurp(const char *name, size_t *len)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    uint8_t *buf;
    uint64_t h;
    ls_err err;
    if (npy_read_file(path, &buf, len, &h, &err) != LS_OK)
        fail_msg("%s", err.msg);
    return buf;
}

static void check_against_numpy(const char *name, const char *expr, const char *dt, const char *ver,
                                size_t want_ndim, size_t want_count)
{
    numpy_write(name, expr, dt, ver);
    char fn[64];
    snprintf(fn, sizeof fn, "%s.npy", name);
    size_t len;
    uint8_t *buf = slurp(fn, &len);
    npy_array a;
    ls_err err;
    if (npy_parse(buf, len, &a, fn, &err) != LS_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(a.ndim, want_ndim);
    assert_int_equal(a.count, want_count);
    char path[128];
    snprintf(path, sizeof path, "%s/%s.txt", dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    for (size_t i = 0; i < a.count; i++) {
        unsigned long long want;
        assert_int_equal(fscanf(f, "%llx", &want), 1);
        uint64_t got;
        if (a.kind == 'f' && a.size == 4) {
            float v = npy_float(&a, i);
            uint32_t u;
            memcpy(&u, &v, sizeof u);
            got = u;
        } else if (a.kind == 'f') {
            /* binary64 files: npy_float rounds once; compare that rounding. */
            double d;
            uint64_t w = (uint64_t)want;
            memcpy(&d, &w, sizeof d);
            float v = npy_float(&a, i), r = (float)d;
            assert_memory_equal(&v, &r, sizeof v);
            continue;
        } else {
            got = (uint64_t)npy_int(&a, i);
            if (a.kind == 'u' && want > (unsigned long long)INT64_MAX)
                want = (unsigned long long)INT64_MAX;   /* npy_int saturates, as npy.h says */
        }
        if (got != (uint64_t)want)
            fail_msg("%s element %zu: %016llx, numpy says %016llx", fn, i, (unsigned long long)got, want);
    }
    fclose(f);
    free(buf);
}

static void test_numpy_files(void **state)
{
    (void)state;
    static const char *orders[] = { "<", ">" };
    static const char *versions[] = { "(1, 0)", "(2, 0)", "(3, 0)" };
    static const char *types[] = { "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8" };
    char name[64], dt[8];
    for (size_t o = 0; o < 2; o++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            snprintf(dt, sizeof dt, "%s%s", orders[o], types[t]);
            snprintf(name, sizeof name, "a%zu%zu", o, t);
            const int flt = types[t][0] == 'f', sgn = types[t][0] == 'i';
            const char *expr = flt ? "np.linspace(-3.7, 1e5, 30).reshape(5, 6) * 1.1"
                             : sgn ? "(np.arange(30) * 7 - 100).reshape(5, 6)"
                                   : "(np.arange(30) * 7 + 3).reshape(5, 6)";
            check_against_numpy(name, expr, dt, versions[t % 3], 2, 30);
        }
    check_against_numpy("bool", "[True, False, True]", "|b1", "(1, 0)", 1, 3);
    check_against_numpy("scalar", "42", "<i8", "(1, 0)", 0, 1);
    check_against_numpy("empty", "np.zeros((0, 4))", "<f4", "(1, 0)", 2, 0);
    check_against_numpy("extremes", "[-128, 127, 0, -1]", "|i1", "(1, 0)", 1, 4);
    check_against_numpy("u8max", "[18446744073709551615, 0]", ">u8", "(2, 0)", 1, 2);
}

/* Build a .npy by hand: version, header text, data bytes. */
static size_t craft(uint8_t *out, int major, const char *header, const void *data, size_t data_len)
{
    size_t at = 0;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (uint8_t)major;
    out[7] = 0;
    size_t hl = strlen(header);
    if (major == 1) {
        out[8] = (uint8_t)hl;
        out[9] = (uint8_t)(hl >> 8);
        at = 10;
    } else {
        out[8] = (uint8_t)hl;
        out[9] = (uint8_t)(hl >> 8);
        out[10] = out[11] = 0;
        at = 12;
    }
    memcpy(out + at, header, hl);
    at += hl;
    memcpy(out + at, data, data_len);
    return at + data_len;
}

static void refused(const uint8_t *buf, size_t len, const char *needle)
{
    npy_array a;
    ls_err err = { { 0 } };
    assert_int_equal(npy_parse(buf, len, &a, "x.npy", &err), LS_EFORMAT);
    if (strstr(err.msg, "x.npy") == NULL || strstr(err.msg, needle) == NULL)
        fail_msg("'%s' does not name x.npy and '%s'", err.msg, needle);
}

static void test_malformed(void **state)
{
    (void)state;
    uint8_t buf[512];
    /* 1, 2, 3, 4 as '<f4' says: little-endian binary32, on any host. */
    const uint8_t four[16] = { 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40, 0, 0, 0x80, 0x40 };
    const char *ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\n";
    size_t n = craft(buf, 1, ok, four, sizeof four);
    npy_array a;
    ls_err err;
    assert_int_equal(npy_parse(buf, n, &a, "x.npy", &err), LS_OK);   /* the baseline parses */
    assert_true(npy_float(&a, 3) == 4.0f);

    refused(buf, n - 1, "truncated");
    uint8_t more[512];
    memcpy(more, buf, n);
    more[n] = 0;
    refused(more, n + 1, "trailing");
    memcpy(more, buf, n);
    more[0] = 'X';
    refused(more, n, "magic");
    memcpy(more, buf, n);
    more[6] = 4;
    refused(more, n, "version");
    refused(buf, 9, "magic");
    n = craft(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", four, sizeof four);
    refused(buf, n, "fortran_order");
    n = craft(buf, 1, "{'descr': '|O', 'fortran_order': False, 'shape': (2, 2), }\n", four, sizeof four);
    refused(buf, n, "dtype");
    n = craft(buf, 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 2), }\n", four, sizeof four);
    refused(buf, n, "descr");
    n = craft(buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", four, sizeof four);
    refused(buf, n, "not supported");
    n = craft(buf, 1, "{'descr': '<f4', 'shape': (4,), }\n", four, sizeof four);
    refused(buf, n, "fortran_order");
    n = craft(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'extra': 1}\n", four, sizeof four);
    refused(buf, n, "extra");
    n = craft(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,) \n", four, sizeof four);
    refused(buf, n, "header");
    n = craft(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four, sizeof four);
    refused(buf, n, "newline");
    n = craft(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 99999999999), }\n",
              four, sizeof four);
    refused(buf, n, "overflow");
    n = craft(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }\n", four, sizeof four);
    refused(buf, n, "truncated");
    n = craft(buf, 2, "['descr', '<f4']\n", four, sizeof four);
    refused(buf, n, "dict");
    n = craft(buf, 1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }\n", four, sizeof four);
    refused(buf, n, "fortran_order");
    n = craft(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }\n", four, sizeof four);
    refused(buf, n, "shape");
    /* a header length beyond the file */
    n = craft(buf, 1, ok, four, sizeof four);
    buf[9] = 0x7f;
    refused(buf, n, "truncated");
}

static void test_not_regular(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/fifo.npy", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    uint8_t *buf;
    size_t len;
    ls_err err;
    assert_int_equal(npy_read_file(path, &buf, &len, NULL, &err), LS_EIO);   /* refused, not blocked on */
    assert_non_null(strstr(err.msg, "regular"));
    assert_int_equal(npy_read_file(dir, &buf, &len, NULL, &err), LS_EIO);
    snprintf(path, sizeof path, "%s/missing.npy", dir);
    assert_int_equal(npy_read_file(path, &buf, &len, NULL, &err), LS_EIO);
    assert_non_null(strstr(err.msg, "missing.npy"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numpy_files),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_not_regular),
    };
    return cmocka_run_group_tests(tests, setup, teardown) ? 1 : 0;
}
