/* pool.c — the worker pool: parts claimed from one atomic word, bounded
 * spinning, then a condition variable.
 *
 * A job is one generation. The caller writes the job (function, context,
 * number of parts), resets the claim word to (generation, 0) and publishes
 * the generation; every thread then claims parts by compare-and-swap on the
 * claim word, runs each, and counts it done; the caller takes parts like
 * any worker, then waits until all are done.
 *
 * Why claims and not a fixed share per thread: with more threads than cores
 * (or another process on a core) some thread is always descheduled, and a
 * fixed share waits for it — a 13-thread pool on 2 cores ran at a third of
 * one thread's speed. Here a thread that does not run takes no part, and the
 * caller returns once the parts are done, without waiting for threads that
 * never woke. Such a late thread may look at the job after the caller moved
 * on; it reads the job and then claims with a compare-and-swap that names
 * the generation and needs a part left, and every field is a sequentially
 * consistent atomic, so a successful claim proves the job it read is still
 * the current one (the next job is written only after every part of this
 * one was claimed and done). A
 * late thread touches neither the old context nor the next job's parts.
 *
 * Waking: waking a sleeping thread costs tens of microseconds (more in a
 * virtual machine), and a training step runs several jobs back to back, so a
 * thread that finished watches the generation for a while (about 0.5 ms)
 * before it sleeps. At most min(threads, cores) − 1 threads watch at once —
 * more would only spin on cores the working threads need — and a job wakes
 * sleepers only up to that many working threads. Every 64th poll yields
 * the CPU, for the descheduled thread that may need it. Sleeping and waking
 * follow the Dekker pattern: the sleeper counts itself and then looks at
 * the generation, the publisher writes the generation and then looks at the
 * count (both sequentially consistent), so one of them sees the other — no
 * wakeup is lost. The caller's wait for the last part works the same way.
 */
#define _GNU_SOURCE   /* sched_getaffinity, CPU_COUNT */
#include "reduce/pool.h"

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
/* Most parts one job hands out; pool_parallel_for runs more as several jobs. */
#define POOL_MAX_PARTS UINT32_MAX

typedef struct {
    pool *owner;
    int id;
} pool_worker;

struct pool {
    /* The current job, written by the caller before it publishes the generation. */
    _Atomic(pool_fn) run_fn;        /* pool_run's function, or NULL */
    _Atomic(pool_part_fn) part_fn;  /* pool_parallel_for's function, or NULL */
    _Atomic(void *) ctx;
    _Atomic size_t base;            /* pool_parallel_for: part index of claim 0 */
    _Atomic uint32_t n_parts;
    _Atomic uint64_t claim;         /* (generation mod 2^32) << 32 | parts not yet claimed */
    _Atomic uint64_t generation;    /* bumped once per job */
    _Atomic uint32_t done;          /* parts of the current job finished */

    _Atomic int spinners;           /* threads watching the generation */
    _Atomic int sleepers;           /* threads asleep (or about to be) on start_cv */
    _Atomic int caller_asleep;      /* the caller is asleep (or about to be) on done_cv */
    _Atomic int shutdown;
    _Atomic size_t wakeups;         /* sleepers signalled for a job (pool_wakeups) */
    _Atomic int wave_sleepers;      /* threads asleep (or about to be) on wave_cv (pool_waves) */
    int active;                     /* threads worth running at once: min(n_threads, usable CPUs) */

    pthread_mutex_t mu;
    pthread_cond_t start_cv;        /* signals: a new generation was published, or shutdown */
    pthread_cond_t done_cv;         /* signals: the last part of a job finished */
    pthread_cond_t wave_cv;         /* signals: a unit of a wave finished (pool_waves) */
    int n_threads;
    pthread_t *threads;             /* [n_threads - 1], points into this allocation */
    pool_worker *workers;           /* [n_threads - 1], likewise */
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

/* CPUs this process may run on: the affinity mask (taskset, a container's
 * cpuset) when the system tells it, else the online CPUs. */
static int pool_usable_cpus(void)
{
    int online = pool_online_cpus();
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n >= 1 && n < online)
            return n;
    }
#endif
    return online;
}

/* Claims and runs parts of generation g until none is left (or the job is
 * no longer g); `id` is the thread's number. */
static void pool_work(pool *p, uint64_t g, int id)
{
    pool_fn run_fn = atomic_load(&p->run_fn);
    pool_part_fn part_fn = atomic_load(&p->part_fn);
    void *ctx = atomic_load(&p->ctx);
    size_t base = atomic_load(&p->base);
    uint32_t n = atomic_load(&p->n_parts);
    uint64_t tag = (g & 0xffffffffu) << 32;
    uint64_t w = atomic_load(&p->claim);
    for (;;) {
        /* The word counts the parts left, not the next part: a finished job
         * reads 0 whatever n this thread read, so a late thread whose n is
         * the next job's cannot claim past the end of this one. */
        if ((w & ~(uint64_t)0xffffffffu) != tag || (uint32_t)w == 0)
            return;
        if (!atomic_compare_exchange_weak(&p->claim, &w, w - 1))
            continue;   /* w now holds the current word */
        uint32_t i = n - (uint32_t)w;
        if (run_fn != NULL)
            run_fn(ctx, (int)i, p->n_threads);
        else
            part_fn(ctx, base + i, id);
        /* Nothing of the job is touched after this count. */
        if (atomic_fetch_add(&p->done, 1) + 1 == n && atomic_load(&p->caller_asleep)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
        w = atomic_load(&p->claim);
    }
}

/* Waits for a generation other than *seen; returns 0 on shutdown. */
static int pool_wait_job(pool *p, uint64_t *seen)
{
    if (atomic_fetch_add(&p->spinners, 1) < p->active - 1) {
        for (int i = 0; i < POOL_SPIN; i++) {
            if (atomic_load_explicit(&p->generation, memory_order_relaxed) != *seen)
                break;
            pool_pause(i);
        }
    }
    atomic_fetch_sub(&p->spinners, 1);
    if (atomic_load(&p->generation) == *seen) {
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->sleepers, 1);
        while (!atomic_load(&p->shutdown) && atomic_load(&p->generation) == *seen)
            pthread_cond_wait(&p->start_cv, &p->mu);
        atomic_fetch_sub(&p->sleepers, 1);
        pthread_mutex_unlock(&p->mu);
    }
    *seen = atomic_load(&p->generation);
    return !atomic_load(&p->shutdown);
}

static void *pool_worker_main(void *arg)
{
    pool_worker *w = arg;
    pool *p = w->owner;
    uint64_t seen = 0;
    while (pool_wait_job(p, &seen))
        pool_work(p, seen, w->id);
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
    int cpus = pool_usable_cpus();
    p->active = n_threads < cpus ? n_threads : cpus;
    atomic_init(&p->run_fn, NULL);
    atomic_init(&p->part_fn, NULL);
    atomic_init(&p->ctx, NULL);
    atomic_init(&p->base, 0);
    atomic_init(&p->n_parts, 0);
    atomic_init(&p->claim, 0);
    atomic_init(&p->generation, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->spinners, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_asleep, 0);
    atomic_init(&p->shutdown, 0);
    atomic_init(&p->wakeups, 0);
    atomic_init(&p->wave_sleepers, 0);
    p->workers = (pool_worker *)(p + 1);
    p->threads = (pthread_t *)(p->workers + extra);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    pthread_cond_init(&p->wave_cv, NULL);
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
    atomic_store(&p->shutdown, 1);
    /* Ends the spinning of any worker at once, too. */
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->done_cv);
    pthread_cond_destroy(&p->wave_cv);
    pthread_cond_destroy(&p->start_cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int pool_threads(const pool *p)
{
    return p->n_threads;
}

int pool_active(const pool *p)
{
    return p->active;
}

size_t pool_wakeups(const pool *p)
{
    return atomic_load_explicit(&((pool *)p)->wakeups, memory_order_relaxed);
}

/* Publishes a job of n parts (n >= 1), takes parts on the calling thread,
 * and returns when all are done. */
static void pool_job(pool *p, pool_fn run_fn, pool_part_fn part_fn, void *ctx, size_t base, uint32_t n)
{
    uint64_t g = atomic_load_explicit(&p->generation, memory_order_relaxed) + 1;
    atomic_store(&p->run_fn, run_fn);
    atomic_store(&p->part_fn, part_fn);
    atomic_store(&p->ctx, ctx);
    atomic_store(&p->base, base);
    atomic_store(&p->n_parts, n);
    atomic_store(&p->done, 0);
    atomic_store(&p->claim, (g & 0xffffffffu) << 32 | n);
    atomic_store(&p->generation, g);

    /* Wake sleepers up to `active` working threads, counting the caller and
     * every worker not asleep: one that watches the generation, and one
     * still on its way back from the last job, which looks at the generation
     * before it would sleep (it counts itself a sleeper first, and this
     * thread wrote the generation before reading that count: one of the two
     * sees the other). Counting only the watchers woke a sleeper for nearly
     * every job when a worker had just finished the last one; with more
     * threads than cores that thread then took a core from a working one
     * (16 threads on 2 cores: 25% slower than 2 threads, 5 involuntary
     * context switches a step). */
    const int sleeping = atomic_load(&p->sleepers);
    const int awake = p->n_started - sleeping;
    int want = (n < (uint32_t)p->active ? (int)n : p->active) - 1 - awake;
    if (want > 0 && sleeping > 0) {
        pthread_mutex_lock(&p->mu);
        for (int i = 0; i < want; i++)
            pthread_cond_signal(&p->start_cv);
        pthread_mutex_unlock(&p->mu);
        atomic_fetch_add_explicit(&p->wakeups, (size_t)want, memory_order_relaxed);
    }

    pool_work(p, g, 0);

    /* Parts still running on other threads: watch, then sleep. */
    for (int i = 0; i < POOL_SPIN && atomic_load_explicit(&p->done, memory_order_relaxed) != n; i++)
        pool_pause(i);
    if (atomic_load(&p->done) != n) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->caller_asleep, 1);
        while (atomic_load(&p->done) != n)
            pthread_cond_wait(&p->done_cv, &p->mu);
        atomic_store(&p->caller_asleep, 0);
        pthread_mutex_unlock(&p->mu);
    }
    /* The sequentially consistent load that saw done == n orders every
     * part's writes before the caller's reads. */
}

void pool_run(pool *p, pool_fn fn, void *ctx)
{
    if (p->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pool_job(p, fn, NULL, ctx, 0, (uint32_t)p->n_threads);
}

void pool_parallel_for(pool *p, size_t n_parts, pool_part_fn fn, void *ctx)
{
    if (p->n_threads == 1) {
        for (size_t i = 0; i < n_parts; i++)
            fn(ctx, i, 0);
        return;
    }
    for (size_t base = 0; base < n_parts; base += POOL_MAX_PARTS) {
        size_t n = n_parts - base < POOL_MAX_PARTS ? n_parts - base : POOL_MAX_PARTS;
        pool_job(p, NULL, fn, ctx, base, (uint32_t)n);
    }
}

/* ---- waves (pool.h) ----
 * One job of waves·units parts, part k·units + u being unit u of wave k:
 * the claim word hands parts out in increasing order, so when a part is
 * claimed every part of the waves before it has been claimed, and the
 * lowest unfinished part has all its neighbours done. A part whose
 * neighbours are not done yet waits for them as the pool waits for a job:
 * polls (a yield every 64th), then a sleep on wave_cv, with the Dekker
 * pattern of pool_wait_job (the sleeper counts itself and then looks at the
 * counters; a unit that finishes stores its counter and then looks at the
 * count), so no wakeup is lost. */

typedef struct {
    pool *p;
    const pool_waves_job *job;
} pool_waves_run;

/* Unit u's neighbours of the last wave are done: every unit v of u's
 * group within distance reach (around the group with wrap) has finished at
 * least k waves. */
static int pool_wave_ready(const pool_waves_job *j, size_t k, size_t u)
{
    const size_t G = j->group > 0 ? j->group : j->units, g0 = u / G * G, i = u - g0;
    const size_t r = j->reach < G ? j->reach : G - 1;   /* no farther than the group */
    if (j->wrap && 2 * r + 1 < G) {
        for (size_t d = G - r; d <= G + r; d++)
            if (atomic_load(&j->done[g0 + (i + d) % G]) < k)
                return 0;
        return 1;
    }
    const size_t lo = j->wrap || i < r ? 0 : i - r, hi = j->wrap || G - 1 - i < r ? G - 1 : i + r;
    for (size_t v = g0 + lo; v <= g0 + hi; v++)
        if (atomic_load(&j->done[v]) < k)
            return 0;
    return 1;
}

static void pool_wave_part(void *ctx, size_t part, int worker)
{
    const pool_waves_run *r = ctx;
    const pool_waves_job *j = r->job;
    pool *p = r->p;
    const size_t k = part / j->units, u = part % j->units;
    if (k > 0 && !pool_wave_ready(j, k, u)) {
        int i = 0;
        for (; i < POOL_SPIN && !pool_wave_ready(j, k, u); i++)
            pool_pause(i);
        if (i == POOL_SPIN) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->wave_sleepers, 1);
            while (!pool_wave_ready(j, k, u))
                pthread_cond_wait(&p->wave_cv, &p->mu);
            atomic_fetch_sub(&p->wave_sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
    }
    j->fn(j->ctx, k, u, worker);
    atomic_store(&j->done[u], k + 1);
    if (atomic_load(&p->wave_sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wave_cv);
        pthread_mutex_unlock(&p->mu);
    }
}

void pool_waves(pool *p, const pool_waves_job *job)
{
    for (size_t u = 0; u < job->units; u++)
        atomic_store_explicit(&job->done[u], 0, memory_order_relaxed);
    pool_waves_run r = { p, job };
    /* pool_job publishes the job with sequentially consistent stores after these */
    pool_parallel_for(p, job->waves * job->units, pool_wave_part, &r);
}

int pool_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
}
