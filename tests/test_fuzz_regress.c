/* test_fuzz_regress.c — replays every fuzzing input kept in the repository.
 *
 * tests/fuzz/corpus/<target>/ holds the seed inputs of the libFuzzer targets
 * (tests/fuzz/fuzz.mk) and tests/fuzz/crashes/<target>/ the inputs that once
 * broke a parser. Each file goes through the same checks the fuzzer applies
 * (tests/fuzz/fuzz_replay.h), so a saved crash stays a failing test until the
 * parser is fixed and a regression afterwards. Built by the normal Makefile
 * (gcc, no sanitizers, the library only), hence:
 *   - idx: idx_parse on the bytes, and idx_read_gz on the file itself;
 *   - golden: golden_parse (+ write/re-parse), its config through
 *     config_parse_text;
 *   - golden_run: golden_run_check (v2 golden files of recorded runs);
 *   - config: each NUL-separated piece through config_parse_text, and the
 *     pieces as flags through config_set — the library half of cli_parse,
 *     which lives in tools/ and is not linked here;
 *   - checkpoint: ckpt_parse, raw and with the checksum fixed;
 *   - safetensors: safetensors_parse (the --init reader).
 * The checks: no crash, status OK or a documented code, a message on error,
 * and what a parser accepts round-trips. One more for idx_read_gz, since
 * without ASan a huge allocation does not crash: the address space is capped
 * at what the process uses plus 512 MiB while a gzip file is read, and
 * "out of memory" for a file that cannot inflate to that much is a failure
 * (libFuzzer reports the same input as malloc beyond its limit).
 *
 * Files are found under $LOCKSTEP_ROOT (set by tests/run_tests.sh), else the
 * current directory. Prints how many inputs each target replayed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz_replay.h"

#define PATH_CAP 4096
#define GZ_HEADROOM ((size_t)512 << 20)
#define DEFLATE_MAX_RATIO 1032   /* deflate inflates at most ~1032:1 */

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static const char *root(void)
{
    const char *r = getenv("LOCKSTEP_ROOT");
    return r != NULL && r[0] != '\0' ? r : ".";
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted regular files of dir (not starting with '.'); *n = 0 when the
 * directory does not exist. Caller frees each name and the array. */
static char **list_dir(const char *dir, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return NULL;
    size_t cap = 16;
    char **names = malloc(cap * sizeof *names);
    assert_non_null(names);
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.')
            continue;
        char path[PATH_CAP];
        int pl = snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        struct stat sb;
        if (pl < 0 || (size_t)pl >= sizeof path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (*n == cap) {
            cap *= 2;
            names = realloc(names, cap * sizeof *names);
            assert_non_null(names);
        }
        names[*n] = strdup(ent->d_name);
        assert_non_null(names[*n]);
        (*n)++;
    }
    closedir(d);
    qsort(names, *n, sizeof *names, cmp_names);
    return names;
}

/* The whole file in a buffer of exactly its size (plus one byte so a
 * zero-length file still gets a pointer; the byte is not part of the input). */
static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long sz = ftell(f);
    assert_true(sz >= 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)sz + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *len = (size_t)sz;
    return buf;
}

/* Bytes of address space in use, from /proc/self/statm; 0 when unknown. */
static size_t vm_size(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    unsigned long pages = 0;
    int got = fscanf(f, "%lu", &pages);
    fclose(f);
    return got == 1 ? (size_t)pages * 4096 : 0;
}

/* idx_read_gz on a file with the address space capped (see the header). */
static int replay_idx_gz(const char *path, size_t file_len, char *why)
{
    struct rlimit old;
    size_t used = vm_size();
    int capped = 0;
    if (!UNDER_ASAN && used > 0 && getrlimit(RLIMIT_AS, &old) == 0 &&
        (old.rlim_cur == RLIM_INFINITY || old.rlim_cur > used + GZ_HEADROOM)) {
        struct rlimit lim = old;
        lim.rlim_cur = (rlim_t)(used + GZ_HEADROOM);
        capped = setrlimit(RLIMIT_AS, &lim) == 0;
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    ls_err e;
    memset(&e, 0, sizeof e);
    ls_status st = idx_read_gz(path, &buf, &len, NULL, &e);
    free(buf);
    if (capped)
        assert_int_equal(setrlimit(RLIMIT_AS, &old), 0);
    if (capped && st == LS_ENOMEM && file_len < GZ_HEADROOM / 2 / DEFLATE_MAX_RATIO)
        return fr_fail(why, "idx_read_gz: out of memory for a %zu-byte file that inflates to at most %zu "
                       "bytes (%s): it allocates what the file claims, not what it holds",
                       file_len, file_len * DEFLATE_MAX_RATIO, e.msg);
    /* The contract checks (status, message, the inflated IDX). */
    return fr_idx_gz_file(path, why);
}

static int replay(const char *target, const char *path, const unsigned char *buf, size_t len, char *why)
{
    if (strcmp(target, "idx") == 0)
        return fr_idx(buf, len, why) || replay_idx_gz(path, len, why);
    if (strcmp(target, "golden") == 0) {
        if (fr_golden((const char *)buf, len, why))
            return 1;
        golden_file g;
        ls_err e;
        int r = 0;
        if (golden_parse((const char *)buf, len, path, &g, &e) == LS_OK)
            r = fr_config_text1(g.config_text, why);
        golden_free(&g);
        return r;
    }
    if (strcmp(target, "golden_run") == 0)
        return fr_golden_run((const char *)buf, len, why);
    if (strcmp(target, "config") == 0)
        return fr_config_text(buf, len, why) || fr_config_pairs(buf, len, why);
    if (strcmp(target, "checkpoint") == 0)
        return fr_checkpoint(buf, len, why);
    if (strcmp(target, "safetensors") == 0)
        return fr_safetensors(buf, len, why);
    return fr_fail(why, "unknown fuzz target '%s'", target);
}

/* Replays corpus/<target>/ and crashes/<target>/; every failing file is
 * printed before the test fails. */
static void replay_target(const char *target)
{
    size_t counts[2] = { 0, 0 }, failures = 0;
    static const char *const kinds[2] = { "corpus", "crashes" };
    for (int k = 0; k < 2; k++) {
        char dir[PATH_CAP];
        snprintf(dir, sizeof dir, "%s/tests/fuzz/%s/%s", root(), kinds[k], target);
        size_t n;
        char **names = list_dir(dir, &n);
        for (size_t i = 0; i < n; i++) {
            char path[PATH_CAP];
            int pl = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            assert_true(pl > 0 && (size_t)pl < sizeof path);
            size_t len;
            unsigned char *buf = read_file(path, &len);
            char why[FR_WHY];
            why[0] = '\0';
            if (replay(target, path, buf, len, why)) {
                printf("FAIL %s: %s\n", path, why);
                failures++;
            }
            free(buf);
            free(names[i]);
            counts[k]++;
        }
        free(names);
    }
    printf("fuzz regress %s: %zu inputs replayed (%zu seeds, %zu saved crashes), %zu failed\n", target,
           counts[0] + counts[1], counts[0], counts[1], failures);
    if (counts[0] == 0)
        fail_msg("no seed inputs under %s/tests/fuzz/corpus/%s (wrong LOCKSTEP_ROOT?)", root(), target);
    assert_int_equal(failures, 0);
}

static void test_idx(void **state)
{
    (void)state;
    replay_target("idx");
}

static void test_safetensors(void **state)
{
    (void)state;
    replay_target("safetensors");
}

static void test_golden(void **state)
{
    (void)state;
    replay_target("golden");
}

static void test_golden_run(void **state)
{
    (void)state;
    replay_target("golden_run");
}

static void test_config(void **state)
{
    (void)state;
    replay_target("config");
}

static void test_checkpoint(void **state)
{
    (void)state;
    replay_target("checkpoint");
}

/* The harness must be able to fail: inputs that break each rule it checks
 * are built here and must be reported (fr_status, the IDX layout check). */
static void test_harness_detects(void **state)
{
    (void)state;
    char why[FR_WHY];
    ls_err e;
    memset(&e, 0, sizeof e);
    static const ls_status allowed[] = { LS_EFORMAT };
    assert_int_equal(fr_status("f", LS_OK, &e, allowed, 1, why), 0);
    assert_int_equal(fr_status("f", LS_EFORMAT, &e, allowed, 1, why), 1);   /* no message */
    snprintf(e.msg, sizeof e.msg, "x: bad");
    assert_int_equal(fr_status("f", LS_EFORMAT, &e, allowed, 1, why), 0);
    assert_int_equal(fr_status("f", LS_EIO, &e, allowed, 1, why), 1);       /* undocumented code */

    /* A valid label file passes; the same with a byte more or less is refused
     * by idx_parse, which the harness accepts (an error is not a failure). */
    const uint8_t lab[] = { 0, 0, 8, 1, 0, 0, 0, 2, 7, 9, 0 };
    assert_int_equal(fr_idx(lab, 10, why), 0);
    assert_int_equal(fr_idx(lab, 11, why), 0);
    assert_int_equal(fr_idx(lab, 9, why), 0);
    uint32_t dims[3];
    const uint8_t *data;
    size_t data_len;
    assert_int_equal(idx_parse(lab, 10, 0x801u, dims, &data, &data_len, "t", &e), LS_OK);
    assert_int_equal(idx_parse(lab, 11, 0x801u, dims, &data, &data_len, "t", &e), LS_EFORMAT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_harness_detects),
        cmocka_unit_test(test_idx),
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_golden_run),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_safetensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
