/* test_pool.c — the worker pool: every slice and every part runs exactly
 * once per job, on some thread of the pool, whatever the number of threads
 * against cores (up to 64 threads per core); no wakeup is lost over many
 * short jobs back to back; a pool whose workers sleep shuts down; waves
 * keep a stencil's hazards. */
#define _GNU_SOURCE   /* sched_setaffinity */
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "reduce/pool.h"

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

/* pool_run: every slice w once, told the pool's size; the slices ran on at
 * most pool_threads distinct threads. */
static void test_run_each_worker_once(void **state)
{
    (void)state;
    int threads[] = { 1, 2, 3, 8, 16, 64 };
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
            assert_int_equal(c.calls[threads[t]], 0);
            if (threads[t] == 1)
                assert_true(pthread_equal(c.self[0], pthread_self()));
        }
        pool_destroy(p);
    }
}

typedef struct {
    int hits[1000];
    int worker_of[1000];
    _Atomic int running[POOL_MAX_THREADS];   /* parts running now with this worker number */
    _Atomic int clash;                       /* two parts ran at once with one worker number */
    size_t last[POOL_MAX_THREADS];           /* last part + 1 each worker number ran */
    int out_of_order;
} part_ctx;

static void record_part(void *arg, size_t part, int worker)
{
    part_ctx *c = arg;
    if (atomic_fetch_add(&c->running[worker], 1) != 0)
        atomic_store(&c->clash, 1);
    c->hits[part]++;
    c->worker_of[part] = worker;
    if (part + 1 <= c->last[worker])
        c->out_of_order = 1;
    c->last[worker] = part + 1;
    atomic_fetch_sub(&c->running[worker], 1);
}

/* Every part exactly once; the worker number is a valid thread number, never
 * shared by two parts running at once, and each worker's parts come in
 * increasing order. */
static void test_parallel_for_parts(void **state)
{
    (void)state;
    int threads[] = { 1, 2, 3, 7, 64 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        size_t sizes[] = { 0, 1, 5, 63, 64, 65, 999 };
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            static part_ctx c;
            memset(&c, 0, sizeof c);
            pool_parallel_for(p, sizes[s], record_part, &c);
            for (size_t i = 0; i < sizes[s]; i++) {
                assert_int_equal(c.hits[i], 1);
                assert_true(c.worker_of[i] >= 0 && c.worker_of[i] < threads[t]);
            }
            assert_int_equal(c.hits[sizes[s]], 0);
            assert_int_equal(atomic_load(&c.clash), 0);
            assert_int_equal(c.out_of_order, 0);
        }
        pool_destroy(p);
    }
}

/* A result that depends only on the part (a hash of its index, written to
 * its own slot), summed afterwards in part order: the same bits at every
 * thread count, 64 threads on however few cores included. */
static void hash_part(void *arg, size_t part, int worker)
{
    (void)worker;
    uint64_t *out = arg;
    uint64_t x = part * 0x9e3779b97f4a7c15u + 1;
    for (int i = 0; i < 200; i++)
        x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9u;
    out[part] = x;
}

static void test_oversubscribed_results(void **state)
{
    (void)state;
    enum { N = 4096 };
    static uint64_t ref[N], got[N];
    for (size_t i = 0; i < N; i++)
        hash_part(ref, i, 0);
    int threads[] = { 2, 3, 8, 64, 256 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        for (int rep = 0; rep < 20; rep++) {
            memset(got, 0, sizeof got);
            pool_parallel_for(p, N, hash_part, got);
            assert_memory_equal(got, ref, sizeof ref);
        }
        pool_destroy(p);
    }
}

/* Many short jobs back to back, both kinds alternating, with a counter that
 * must end exact: a lost wakeup hangs (the test's time limit), a part run
 * twice or never breaks the count. */
typedef struct {
    _Atomic long parts;
    _Atomic long slices;
} count_ctx;

static void count_part(void *arg, size_t part, int worker)
{
    (void)part;
    (void)worker;
    count_ctx *c = arg;
    atomic_fetch_add_explicit(&c->parts, 1, memory_order_relaxed);
}

static void count_slice(void *arg, int worker, int n_workers)
{
    (void)worker;
    (void)n_workers;
    count_ctx *c = arg;
    atomic_fetch_add_explicit(&c->slices, 1, memory_order_relaxed);
}

static void test_many_short_jobs(void **state)
{
    (void)state;
    int threads[] = { 2, 4, 64 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        count_ctx c;
        atomic_init(&c.parts, 0);
        atomic_init(&c.slices, 0);
        long want_parts = 0;
        const int jobs = threads[t] > 8 ? 2000 : 20000;
        for (int j = 0; j < jobs; j++) {
            size_t n = (size_t)(j % 5);
            pool_parallel_for(p, n, count_part, &c);
            want_parts += (long)n;
            pool_run(p, count_slice, &c);
        }
        assert_int_equal(atomic_load(&c.parts), want_parts);
        assert_int_equal(atomic_load(&c.slices), (long)jobs * threads[t]);
        pool_destroy(p);
    }
}

/* Jobs far apart (the workers have stopped watching and sleep), then
 * shutdown with every worker asleep. */
static void test_sleeping_workers(void **state)
{
    (void)state;
    pool *p;
    assert_int_equal(pool_create(&p, 8, NULL), LS_OK);
    for (int j = 0; j < 3; j++) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        count_ctx c;
        atomic_init(&c.parts, 0);
        atomic_init(&c.slices, 0);
        pool_parallel_for(p, 100, count_part, &c);
        pool_run(p, count_slice, &c);
        assert_int_equal(atomic_load(&c.parts), 100);
        assert_int_equal(atomic_load(&c.slices), 8);
    }
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    pool_destroy(p);
}

/* The last part outlasts the caller's polling, so the caller sleeps and the
 * worker that finishes it must wake it; by turns the slow part is the
 * caller's own or a worker's. */
static void slow_part(void *arg, size_t part, int worker)
{
    (void)worker;
    count_ctx *c = arg;
    if (part == 1) {
        struct timespec ts = { 0, 3 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add_explicit(&c->parts, 1, memory_order_relaxed);
}

static void test_caller_sleeps(void **state)
{
    (void)state;
    int threads[] = { 2, 16 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        count_ctx c;
        atomic_init(&c.parts, 0);
        atomic_init(&c.slices, 0);
        for (int j = 0; j < 20; j++)
            pool_parallel_for(p, 2, slow_part, &c);
        assert_int_equal(atomic_load(&c.parts), 40);
        pool_destroy(p);
    }
}

/* Pinned to one CPU (as under taskset), a 16-thread pool must neither spin
 * on that CPU nor lose a job: many short jobs, exact counts. */
static void test_one_cpu(void **state)
{
    (void)state;
#ifdef __linux__
    cpu_set_t old, one;
    assert_int_equal(sched_getaffinity(0, sizeof old, &old), 0);
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &old))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    pool *p;
    assert_int_equal(pool_create(&p, 16, NULL), LS_OK);
    count_ctx c;
    atomic_init(&c.parts, 0);
    atomic_init(&c.slices, 0);
    for (int j = 0; j < 2000; j++) {
        pool_parallel_for(p, 7, count_part, &c);
        pool_run(p, count_slice, &c);
    }
    pool_destroy(p);
    assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
    assert_int_equal(atomic_load(&c.parts), 2000 * 7);
    assert_int_equal(atomic_load(&c.slices), 2000 * 16);
#endif
}

/* Jobs back to back find the workers they need awake: one watches the
 * generation, or is on its way back from the last job and will look at it
 * before it sleeps. So they wake no sleeper, at any thread count; before
 * the count of awake workers included the ones on their way back, about
 * one job in ten woke one here (320-420 wakes over these 4,000 jobs of 16
 * threads on 2 CPUs; in a training step, nearly every job), which then took
 * a core from a working thread. Sleepers are woken at the start
 * (the threads all start at once; the ones beyond the watchers sleep) and
 * after a pause, so the bound leaves room for those and for a watcher
 * descheduled past its polling on a busy machine. */
static void test_back_to_back_jobs_wake_no_sleeper(void **state)
{
    (void)state;
    const int threads[] = { 3, 16, 64 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        count_ctx c;
        atomic_init(&c.parts, 0);
        atomic_init(&c.slices, 0);
        const int jobs = 2000;
        pool_run(p, count_slice, &c);   /* the start's wakes, if any */
        const size_t before = pool_wakeups(p);
        for (int j = 0; j < jobs; j++) {
            pool_parallel_for(p, 5, count_part, &c);
            pool_run(p, count_slice, &c);
        }
        const size_t woken = pool_wakeups(p) - before;
        printf("%d threads, %d CPUs usable at once: %zu sleepers woken over %d jobs\n", threads[t],
               pool_active(p), woken, 2 * jobs);
        assert_true(woken <= (size_t)jobs / 10);
        assert_int_equal(atomic_load(&c.parts), 5L * jobs);
        assert_int_equal(atomic_load(&c.slices), (long)(jobs + 1) * threads[t]);
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

/* ---- pool_waves: a stencil run as waves ----
 * Unit u of wave k reads its neighbours' values of wave k − 1 from buffer
 * k & 1 and writes its own of wave k to buffer (k + 1) & 1: the read-after-
 * write and write-after-read hazards of the CA's parts. Each part checks,
 * with counters of its own (not the pool's), that every neighbour has
 * finished wave k − 1 and not started wave k + 1, before and after reading
 * and after a delay of random length; the values must equal a sequential
 * run's, each (wave, unit) run once, no worker id used by two at once. */
enum { WAVE_UNITS = 24, WAVE_MAX = 30 };

typedef struct {
    size_t units, group, reach;
    int wrap;
    uint64_t seed;
    uint64_t buf[2][WAVE_UNITS];
    _Atomic size_t started[WAVE_UNITS], finished[WAVE_UNITS];
    _Atomic int runs[WAVE_MAX][WAVE_UNITS];
    _Atomic int busy[POOL_MAX_THREADS];
    _Atomic long violations;
} wave_ctx;

static int wave_near(const wave_ctx *c, size_t u, size_t v)
{
    if (u / c->group != v / c->group)
        return 0;
    size_t d = u > v ? u - v : v - u;
    if (c->wrap && c->group - d < d)
        d = c->group - d;
    return d <= c->reach;
}

static uint64_t wave_mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

/* Unit u's value of wave k from its neighbours' of wave k − 1, in order. */
static uint64_t wave_value(const wave_ctx *c, const uint64_t *prev, size_t k, size_t u)
{
    uint64_t h = wave_mix(k * 131 + u);
    for (size_t v = 0; v < c->units; v++)
        if (wave_near(c, u, v))
            h = wave_mix(h ^ prev[v]);
    return h;
}

static void wave_check(wave_ctx *c, size_t k, size_t u)
{
    for (size_t v = 0; v < c->units; v++)
        if (wave_near(c, u, v) && (atomic_load(&c->finished[v]) < k || atomic_load(&c->started[v]) > k + 1))
            atomic_fetch_add(&c->violations, 1);
}

static void wave_unit(void *ctx, size_t k, size_t u, int worker)
{
    wave_ctx *c = ctx;
    if (atomic_exchange(&c->busy[worker], 1) != 0)
        atomic_fetch_add(&c->violations, 1);
    atomic_fetch_add(&c->runs[k][u], 1);
    atomic_store(&c->started[u], k + 1);
    wave_check(c, k, u);
    const uint64_t x = wave_value(c, c->buf[k & 1], k, u);
    for (volatile uint64_t i = 0, n = wave_mix(c->seed ^ (k << 8) ^ u) % 3000; i < n; i++) {
    }
    wave_check(c, k, u);
    c->buf[(k + 1) & 1][u] = x;
    atomic_store(&c->finished[u], k + 1);
    atomic_store(&c->busy[worker], 0);
}

static void test_waves(void **state)
{
    (void)state;
    static const struct {
        size_t units, group, reach;
        int wrap;
    } shapes[] = {
        { 24, 8, 1, 0 },   /* the checkerboard: 3 samples of 8 parts */
        { 24, 8, 1, 1 },   /* periodic borders */
        { 24, 6, 2, 0 },
        { 24, 6, 2, 1 },
        { 7, 7, 1, 0 },    /* the asynchronous checkerboard */
        { 5, 1, 0, 0 },    /* independent chains (gol's groups) */
        { 12, 12, 6, 0 },  /* a reach past the group: all of it */
        { 3, 3, 1, 1 },
    };
    static const size_t waves[] = { 1, 2, WAVE_MAX };
    static const int threads[] = { 1, 2, 3, 8, 16 };
    static wave_ctx c;
    _Atomic size_t done[WAVE_UNITS];
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        pool *p;
        assert_int_equal(pool_create(&p, threads[t], NULL), LS_OK);
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
            for (size_t w = 0; w < sizeof waves / sizeof waves[0]; w++)
                for (uint64_t rep = 0; rep < 3; rep++) {
                    memset(&c, 0, sizeof c);
                    c.units = shapes[sh].units;
                    c.group = shapes[sh].group;
                    c.reach = shapes[sh].reach;
                    c.wrap = shapes[sh].wrap;
                    c.seed = rep * 7919 + sh;
                    uint64_t ref[2][WAVE_UNITS];
                    for (size_t u = 0; u < c.units; u++)
                        c.buf[0][u] = ref[0][u] = wave_mix(1000 + u);
                    for (size_t k = 0; k < waves[w]; k++)
                        for (size_t u = 0; u < c.units; u++)
                            ref[(k + 1) & 1][u] = wave_value(&c, ref[k & 1], k, u);
                    const pool_waves_job job = { waves[w], c.units, c.group, c.reach, c.wrap, wave_unit, &c, done };
                    pool_waves(p, &job);
                    if (atomic_load(&c.violations) != 0)
                        fail_msg("%d threads, units %zu, group %zu, reach %zu, wrap %d, %zu waves: %ld violations",
                                 threads[t], c.units, c.group, c.reach, c.wrap, waves[w], atomic_load(&c.violations));
                    assert_memory_equal(c.buf[waves[w] & 1], ref[waves[w] & 1], c.units * sizeof(uint64_t));
                    for (size_t k = 0; k < waves[w]; k++)
                        for (size_t u = 0; u < c.units; u++)
                            assert_int_equal(atomic_load(&c.runs[k][u]), 1);
                    for (size_t u = 0; u < c.units; u++)
                        assert_int_equal(atomic_load(&done[u]), waves[w]);
                }
        pool_destroy(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_each_worker_once),
        cmocka_unit_test(test_parallel_for_parts),
        cmocka_unit_test(test_oversubscribed_results),
        cmocka_unit_test(test_many_short_jobs),
        cmocka_unit_test(test_sleeping_workers),
        cmocka_unit_test(test_caller_sleeps),
        cmocka_unit_test(test_one_cpu),
        cmocka_unit_test(test_back_to_back_jobs_wake_no_sleeper),
        cmocka_unit_test(test_bad_sizes),
        cmocka_unit_test(test_create_destroy_loop),
        cmocka_unit_test(test_waves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
