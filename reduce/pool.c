/* pool.c — the worker pool: one mutex, two condition variables.
 *
 * A job is one generation: pool_run publishes (fn, ctx), bumps the generation
 * and wakes every worker; each runs fn once outside the lock and counts itself
 * out; the last one wakes the caller. Shutdown is flagged under the lock,
 * broadcast and joined.
 *
 * Waking a sleeping thread costs tens of microseconds (more in a virtual
 * machine), and a training step runs several jobs back to back, so before
 * sleeping on a condition variable a worker watches the generation counter
 * for a short while, and the caller watches the pending count. That is only
 * done when there are no more threads than CPUs: an oversubscribed pool would
 * spin on CPUs the working threads need.
 */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Polls of a waiting thread before it sleeps: about 0.5 ms, longer than the
 * serial work between two jobs of a training step. */
#define POOL_SPIN 20000

typedef struct {
    pool *owner;
    int id;
} pool_worker;

struct pool {
    pthread_mutex_t mu;
    pthread_cond_t start_cv;   /* signals: a new generation was published, or shutdown */
    pthread_cond_t done_cv;    /* signals: the last worker of a generation finished */
    _Atomic uint64_t generation;  /* bumped once per pool_run (under mu; read outside it to spin) */
    _Atomic int pending;       /* workers (other than the caller) still running this generation */
    int spin;                  /* polls before sleeping; 0 when oversubscribed */
    int shutdown;
    pool_fn fn;
    void *ctx;
    int n_threads;
    pthread_t *threads;        /* [n_threads - 1], points into this allocation */
    pool_worker *workers;      /* [n_threads - 1], likewise */
    int n_started;
};

/* One poll of a waiting thread. Every 64th poll yields the CPU: on a machine
 * shared with other work, the thread being waited for may need this very
 * CPU, and spinning through its time slice would only delay it. */
static void pool_pause(int i)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if ((i & 63) == 63)
        sched_yield();
}

static void *pool_worker_main(void *arg)
{
    pool_worker *w = arg;
    pool *p = w->owner;
    uint64_t seen = 0;
    for (;;) {
        for (int i = 0; i < p->spin && atomic_load_explicit(&p->generation, memory_order_acquire) == seen; i++)
            pool_pause(i);
        pthread_mutex_lock(&p->mu);
        while (!p->shutdown && atomic_load_explicit(&p->generation, memory_order_relaxed) == seen)
            pthread_cond_wait(&p->start_cv, &p->mu);
        if (p->shutdown) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        seen = atomic_load_explicit(&p->generation, memory_order_relaxed);
        pool_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);
        fn(ctx, w->id, p->n_threads);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

ls_status pool_create(pool **out, int n_threads, ls_err *err)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > POOL_MAX_THREADS)
        return ls_fail(err, LS_EINVAL, "threads: %d is out of range (1..%d)", n_threads,
                       POOL_MAX_THREADS);
    size_t extra = (size_t)(n_threads - 1);
    pool *p = calloc(1, sizeof *p + extra * (sizeof(pthread_t) + sizeof(pool_worker)));
    if (p == NULL)
        return ls_fail(err, LS_ENOMEM, "pool: out of memory");
    p->n_threads = n_threads;
    p->spin = n_threads <= pool_online_cpus() ? POOL_SPIN : 0;
    p->workers = (pool_worker *)(p + 1);
    p->threads = (pthread_t *)(p->workers + extra);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (size_t i = 0; i < extra; i++) {
        p->workers[i].owner = p;
        p->workers[i].id = (int)i + 1;
        if (pthread_create(&p->threads[i], NULL, pool_worker_main, &p->workers[i]) != 0) {
            pool_destroy(p);
            return ls_fail(err, LS_ENOMEM, "pool: cannot start thread %zu of %d", i + 2, n_threads);
        }
        p->n_started++;
    }
    *out = p;
    return LS_OK;
}

void pool_destroy(pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->shutdown = 1;
    /* Ends the spinning of any worker at once, too. */
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->done_cv);
    pthread_cond_destroy(&p->start_cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int pool_threads(const pool *p)
{
    return p->n_threads;
}

void pool_run(pool *p, pool_fn fn, void *ctx)
{
    if (p->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, p->n_threads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->mu);

    fn(ctx, 0, p->n_threads);

    for (int i = 0; i < p->spin && atomic_load_explicit(&p->pending, memory_order_acquire) > 0; i++)
        pool_pause(i);
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0)
        pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

typedef struct {
    size_t n_parts;
    pool_part_fn fn;
    void *ctx;
} pool_for_job;

static void pool_for_worker(void *arg, int worker, int n_workers)
{
    const pool_for_job *job = arg;
    for (size_t part = (size_t)worker; part < job->n_parts; part += (size_t)n_workers)
        job->fn(job->ctx, part, worker);
}

void pool_parallel_for(pool *p, size_t n_parts, pool_part_fn fn, void *ctx)
{
    pool_for_job job = { n_parts, fn, ctx };
    pool_run(p, pool_for_worker, &job);
}

int pool_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
}
