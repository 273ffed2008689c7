/* pool.h — a fixed-size pool of worker threads.
 *
 * A job is a set of parts, each run exactly once by some thread of the pool;
 * the caller takes parts too, and the job returns when every part is done.
 * Which thread runs which part is decided at run time (the first free thread
 * claims the next part), so a thread the OS has descheduled — more threads
 * than cores, or another process on the machine — never holds a fixed share
 * of the work: the threads that do run take it. Results therefore must not
 * depend on which thread computes a part, only on the part: that is the
 * contract every caller keeps (a part writes its own slot; per-thread
 * scratch is indexed by the number the callback is given, which no other
 * part running at the same time is given).
 *
 * pool_run is the ggml pattern: fn(ctx, w, n) for every w in 0..n−1, n the
 * pool's thread count, where part w takes a computed slice; w names the
 * slice, not a thread. A pool of one thread runs everything inline on the
 * same code path — the sequential path is the parallel path with one worker,
 * not a second implementation.
 *
 * Workers never allocate. A pool is driven by one thread at a time.
 */
#ifndef LS_POOL_H
#define LS_POOL_H

#include <stddef.h>

#include "include/lockstep.h"

#define POOL_MAX_THREADS 256

typedef struct pool pool;
typedef void (*pool_fn)(void *ctx, int worker, int n_workers);
typedef void (*pool_part_fn)(void *ctx, size_t part, int worker);

/* n_threads in 1..POOL_MAX_THREADS; starts n_threads - 1 threads. */
ls_status pool_create(pool **out, int n_threads, ls_err *err);
void pool_destroy(pool *p);          /* joins the threads; accepts NULL */
int pool_threads(const pool *p);
/* Threads that work on a job at once: min(pool_threads, the CPUs this
 * process may use when the pool was created). A plan that cuts work into
 * pieces for the threads (the tree's block size) should size the pieces
 * for these, not for threads that would only wait for a CPU. */
int pool_active(const pool *p);
/* Wake signals the pool's jobs have sent to sleeping threads so far (for
 * tests: back-to-back jobs find their workers awake and send none). */
size_t pool_wakeups(const pool *p);

/* Calls fn(ctx, w, pool_threads(p)) exactly once for every w in
 * 0..pool_threads(p)−1, each call on some thread of the pool (the caller
 * included), calls with different w possibly at the same time; returns when
 * all have returned (a barrier). */
void pool_run(pool *p, pool_fn fn, void *ctx);
/* Runs fn(ctx, part, worker) exactly once for every part in 0..n_parts−1 and
 * returns when every part is done (a barrier). worker (0..pool_threads−1)
 * identifies the calling thread: two parts running at the same time never
 * have the same worker, so it may index per-thread scratch. Parts are
 * claimed in increasing order, so each thread sees its parts in increasing
 * order; which thread gets which part varies from run to run. */
void pool_parallel_for(pool *p, size_t n_parts, pool_part_fn fn, void *ctx);

/* Waves: `waves` rounds of `units` units, where unit u of wave k needs only
 * what wave k − 1 did in u's neighbourhood: the units of u's group (groups
 * of `group` consecutive units) at distance at most `reach` from u within
 * it, u included, the distance taken around the group when `wrap` is set (a
 * stencil over the group's units, on a line or a ring). Instead of a
 * barrier after each wave, unit u of wave k starts as soon as its
 * neighbours of wave k − 1 are done, so a thread that finished its share of
 * a wave goes on to the next one while another finishes the last unit.
 * Neighbours are symmetric (v near u ⇔ u near v), so a unit is never a wave
 * ahead of a neighbour still reading what it is about to overwrite: what a
 * wave of barriers allows, this allows, and nothing else.
 * fn(ctx, wave, unit, worker) runs exactly once for every pair; worker is as
 * for pool_parallel_for. Units are claimed wave by wave in increasing order,
 * so the lowest unfinished unit can always run: no deadlock, and a waiting
 * thread spins a bounded time, then sleeps. `done` is the caller's array of
 * `units` counters (the waves each unit has finished; pool_waves sets them
 * to 0 first). group must divide units; group = 1 makes each unit a chain
 * of its own. */
typedef void (*pool_wave_fn)(void *ctx, size_t wave, size_t unit, int worker);
typedef struct {
    size_t waves, units, group, reach;
    int wrap;
    pool_wave_fn fn;
    void *ctx;
    _Atomic size_t *done;   /* [units] */
} pool_waves_job;
void pool_waves(pool *p, const pool_waves_job *job);

/* Number of online CPUs (at least 1): the default thread count. */
int pool_online_cpus(void);

#endif
