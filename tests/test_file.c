/* test_file.c — base/file.h's file_view: a file's bytes mapped (or read)
 * are file_read_all's bytes, and it refuses what file_read_all refuses
 * with the same status and message.
 *
 * The oracle is file_read_all (read()) on the same file, and the bytes
 * written here with stdio.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

typedef struct {
    char dir[64];
    char path[128];
} tmpdir;

static void tmpdir_create(tmpdir *t, const char *name)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/test_file.XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    char dir[sizeof t->dir];
    memcpy(dir, t->dir, sizeof dir);
    snprintf(t->path, sizeof t->path, "%s/%s", dir, name);
}

static void write_bytes(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* The view and file_read_all agree on path: status, message, bytes. */
static void expect_same(const char *path, size_t max_bytes, ls_status want)
{
    ls_err e1 = {{0}}, e2 = {{0}};
    unsigned char *buf = NULL;
    size_t len = 0;
    ls_status s1 = file_read_all(path, max_bytes, &buf, &len, &e1);
    file_view v;
    ls_status s2 = file_view_open(path, max_bytes, &v, &e2);
    assert_int_equal(s1, want);
    assert_int_equal(s2, want);
    assert_string_equal(e1.msg, e2.msg);
    if (want == LS_OK) {
        assert_int_equal(v.len, len);
        if (len > 0)
            assert_memory_equal(v.p, buf, len);
    } else {
        assert_null(v.p);
        assert_null(v.map);
        assert_null(v.buf);
    }
    file_view_close(&v);
    file_view_close(&v);   /* closing twice is harmless: the view is zeroed */
    free(buf);
}

static void test_view_bytes(void **state)
{
    (void)state;
    tmpdir t;
    tmpdir_create(&t, "data.bin");
    /* Sizes around a page, and one of several pages that is not a multiple. */
    const size_t sizes[] = {1, 4095, 4096, 4097, 3 * 4096 + 17, 1 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned char *b = malloc(sizes[k]);
        assert_non_null(b);
        for (size_t i = 0; i < sizes[k]; i++)
            b[i] = (unsigned char)(i * 131u + k);
        write_bytes(t.path, b, sizes[k]);
        expect_same(t.path, sizes[k], LS_OK);
        /* A non-empty regular file is mapped, not copied. */
        file_view v;
        ls_err e = {{0}};
        assert_int_equal(file_view_open(t.path, sizes[k], &v, &e), LS_OK);
        assert_non_null(v.map);
        assert_null(v.buf);
        assert_memory_equal(v.p, b, sizes[k]);
        file_view_close(&v);
        /* One byte over the limit: refused before reading, as file_read_all does. */
        expect_same(t.path, sizes[k] - 1, LS_EFORMAT);
        free(b);
    }
    /* An empty file cannot be mapped: it is read (zero bytes). */
    write_bytes(t.path, (const unsigned char *)"", 0);
    expect_same(t.path, 10, LS_OK);
    file_view v;
    ls_err e = {{0}};
    assert_int_equal(file_view_open(t.path, 10, &v, &e), LS_OK);
    assert_null(v.map);
    assert_int_equal(v.len, 0);
    file_view_close(&v);
    unlink(t.path);
    assert_int_equal(rmdir(t.dir), 0);
}

static void test_view_refusals(void **state)
{
    (void)state;
    tmpdir t;
    tmpdir_create(&t, "x");
    expect_same(t.path, 100, LS_EIO);               /* missing */
    assert_int_equal(mkfifo(t.path, 0644), 0);      /* a FIFO nobody writes: refused at once */
    expect_same(t.path, 100, LS_EIO);
    unlink(t.path);
    assert_int_equal(mkdir(t.path, 0755), 0);
    expect_same(t.path, 100, LS_EIO);
    rmdir(t.path);
    assert_int_equal(symlink("/dev/zero", t.path), 0);
    expect_same(t.path, 100, LS_EIO);
    unlink(t.path);
    assert_int_equal(rmdir(t.dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_bytes),
        cmocka_unit_test(test_view_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
