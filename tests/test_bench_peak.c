/* test_bench_peak.c — `lockstep bench --peak` (tools/bench_peak.c), run as a
 * user runs it: one line "peak PATH THREADS GFLOP/s" on stdout (with --op
 * div or sqrt: "div|sqrt PATH THREADS G/s"), the path the
 * dense kernels take (LOCKSTEP_SIMD applies), a positive figure, and bad
 * flags refused with exit status 2 and one line on stderr. The figure itself
 * depends on the machine and is not checked beyond being positive. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/proc_util.h"

static char bin[PATH_MAX];

static void run(proc_res *r, const char *const *set, const char *const *args)
{
    char **env = proc_make_env(set, NULL);
    proc_child p;
    proc_start_bin(&p, ".", env, NULL, bin, args);
    memset(r, 0, sizeof *r);
    proc_describe(bin, args, r->cmd, sizeof r->cmd);
    proc_finish(&p, r, 120);
    free(env);
}

/* Parses the one line "WORD PATH THREADS FIGURE"; fails the case unless it
 * is well formed. */
static void check_op_line(const proc_res *r, const char *word, const char *want_path, int want_threads)
{
    if (r->code != 0)
        fail_msg("%s: exit %d, stderr: %s", r->cmd, r->code, r->err);
    char got[16], path[16];
    int threads = 0;
    double g = 0;
    char extra;
    if (sscanf(r->out, "%15s %15s %d %lf %c", got, path, &threads, &g, &extra) != 4 || strcmp(got, word) != 0)
        fail_msg("%s: output is not one '%s PATH THREADS FIGURE' line: %s", r->cmd, word, r->out);
    assert_int_equal(threads, want_threads);
    assert_true(g > 0);
    if (want_path != NULL)
        assert_string_equal(path, want_path);
    else
        assert_true(strcmp(path, "avx512") == 0 || strcmp(path, "avx2") == 0 || strcmp(path, "scalar") == 0);
    assert_int_equal(r->err_len, 0);
}

static void check_line(const proc_res *r, const char *want_path, int want_threads)
{
    check_op_line(r, "peak", want_path, want_threads);
}

static void test_default(void **state)
{
    (void)state;
    proc_res r;
    run(&r, NULL, (const char *const[]){ "bench", "--peak", NULL });
    check_line(&r, NULL, 1);
    proc_res_free(&r);
    run(&r, NULL, (const char *const[]){ "bench", "--peak", "--threads", "2", NULL });
    check_line(&r, NULL, 2);
    proc_res_free(&r);
}

/* LOCKSTEP_SIMD=off: the scalar twins' arithmetic; avx2: at most AVX2. */
static void test_simd_setting(void **state)
{
    (void)state;
    proc_res r;
    run(&r, (const char *const[]){ "LOCKSTEP_SIMD=off", NULL }, (const char *const[]){ "bench", "--peak", NULL });
    check_line(&r, "scalar", 1);
    proc_res_free(&r);
    run(&r, (const char *const[]){ "LOCKSTEP_SIMD=avx2", NULL }, (const char *const[]){ "bench", "--peak", NULL });
    check_line(&r, NULL, 1);
    assert_null(strstr(r.out, "avx512"));
    proc_res_free(&r);
}

/* --op div and sqrt, on the vector path and the scalar one, with --op
 * before or after --peak; --op fma is the default's line. */
static void test_ops(void **state)
{
    (void)state;
    proc_res r;
    run(&r, NULL, (const char *const[]){ "bench", "--peak", "--op", "div", NULL });
    check_op_line(&r, "div", NULL, 1);
    proc_res_free(&r);
    run(&r, NULL, (const char *const[]){ "bench", "--op", "sqrt", "--peak", "--threads", "2", NULL });
    check_op_line(&r, "sqrt", NULL, 2);
    proc_res_free(&r);
    run(&r, (const char *const[]){ "LOCKSTEP_SIMD=off", NULL }, (const char *const[]){ "bench", "--peak", "--op", "div", NULL });
    check_op_line(&r, "div", "scalar", 1);
    proc_res_free(&r);
    run(&r, (const char *const[]){ "LOCKSTEP_SIMD=off", NULL }, (const char *const[]){ "bench", "--peak", "--op", "sqrt", NULL });
    check_op_line(&r, "sqrt", "scalar", 1);
    proc_res_free(&r);
    run(&r, NULL, (const char *const[]){ "bench", "--peak", "--op", "fma", NULL });
    check_line(&r, NULL, 1);
    proc_res_free(&r);
}

static void test_bad_flags(void **state)
{
    (void)state;
    const char *const *cases[] = {
        (const char *const[]){ "bench", "--peak", "--threads", "0", NULL },
        (const char *const[]){ "bench", "--peak", "--threads", "two", NULL },
        (const char *const[]){ "bench", "--peak", "--threads", "1,2", NULL },
        (const char *const[]){ "bench", "--peak", "--steps", "3", NULL },
        (const char *const[]){ "bench", "--peak", "--op", "divide", NULL },
        (const char *const[]){ "bench", "--peak", "--op", "div,sqrt", NULL },
        (const char *const[]){ "bench", "--peak", "--op", NULL },
        (const char *const[]){ "bench", "--op", "mul", "--peak", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        proc_res r;
        run(&r, NULL, cases[i]);
        if (r.code != 2)
            fail_msg("%s: exit %d, want 2", r.cmd, r.code);
        assert_int_equal(r.out_len, 0);
        const char *nl = strchr(r.err, '\n');
        assert_non_null(nl);
        assert_true(nl[1] == '\0');   /* one line */
        proc_res_free(&r);
    }
}

int main(void)
{
    if (proc_find_bin(bin, "test_bench_peak", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_simd_setting),
        cmocka_unit_test(test_ops),
        cmocka_unit_test(test_bad_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
