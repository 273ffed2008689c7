/* test_pool.c — the worker pool: every worker runs once per job, parts are
 * handed out by the fixed schedule, one thread runs inline. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "../reduce/pool.h"

typedef struct {
    int calls[POOL_MAX_THREADS];
    int n_seen[POOL_MAX_THREADS];
    pthread_t self[POOL_MAX_THREADS];
} run_ctx;

static void record_worker(void *arg, int worker, int n_workers)
{
    run_ctx *c = arg;
    c->calls[worker]++;
    c->n_seen[worker] = n_workers;
    c->self[worker] = pthread_self();
}

static void test_run_each_worker_once(void **state)
{
    (void)state;
    int threads[] = { 1, 2, 3, 8, 16 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        assert_int_equal(pool_threads(p), threads[t]);
        for (int job = 0; job < 50; job++) {
            run_ctx c;
            memset(&c, 0, sizeof c);
            pool_run(p, record_worker, &c);
            for (int w = 0; w < threads[t]; w++) {
                assert_int_equal(c.calls[w], 1);
                assert_int_equal(c.n_seen[w], threads[t]);
            }
            /* Worker 0 is the caller; the others are distinct threads. */
            assert_true(pthread_equal(c.self[0], pthread_self()));
            for (int w = 1; w < threads[t]; w++)
                for (int v = 0; v < w; v++)
                    assert_false(pthread_equal(c.self[w], c.self[v]));
        }
        pool_destroy(p);
    }
}

typedef struct {
    int hits[1000];
    int worker_of[1000];
} part_ctx;

static void record_part(void *arg, size_t part, int worker)
{
    part_ctx *c = arg;
    c->hits[part]++;
    c->worker_of[part] = worker;
}

static void test_parallel_for_schedule(void **state)
{
    (void)state;
    int threads[] = { 1, 2, 3, 7 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        size_t sizes[] = { 0, 1, 5, 999 };
        for (size_t s = 0; s < 4; s++) {
            part_ctx c;
            memset(&c, 0, sizeof c);
            pool_parallel_for(p, sizes[s], record_part, &c);
            for (size_t i = 0; i < sizes[s]; i++) {
                assert_int_equal(c.hits[i], 1);
                assert_int_equal(c.worker_of[i], (int)(i % (size_t)threads[t]));
            }
            assert_int_equal(c.hits[sizes[s]], 0);
        }
        pool_destroy(p);
    }
}

static void test_bad_sizes(void **state)
{
    (void)state;
    pool *p = (pool *)&p;
    ls_err err;
    assert_int_equal(pool_create(&p, 0, &err), LS_EINVAL);
    assert_null(p);
    assert_non_null(strstr(err.msg, "threads"));
    assert_int_equal(pool_create(&p, POOL_MAX_THREADS + 1, &err), LS_EINVAL);
    pool_destroy(NULL);
    assert_true(pool_online_cpus() >= 1);
}

static void test_create_destroy_loop(void **state)
{
    (void)state;
    for (int i = 0; i < 100; i++) {
        pool *p;
        assert_int_equal(pool_create(&p, 1 + i % 5, NULL), LS_OK);
        if (i % 2) {
            run_ctx c;
            memset(&c, 0, sizeof c);
            pool_run(p, record_worker, &c);
        }
        pool_destroy(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_each_worker_once),
        cmocka_unit_test(test_parallel_for_schedule),
        cmocka_unit_test(test_bad_sizes),
        cmocka_unit_test(test_create_destroy_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
