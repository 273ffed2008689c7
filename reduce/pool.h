/* pool.h — a fixed-size pool of worker threads.
 *
 * pool_run calls fn(ctx, worker, n_workers) once on every worker at the same
 * time and returns when all have returned: the ggml pattern, where worker
 * `ith` of `nth` takes a computed slice. The calling thread is worker 0, so a
 * pool of one thread runs everything inline on the same code path — the
 * sequential path is the parallel path with one worker, not a second
 * implementation. pool_parallel_for hands part p to worker p mod n_workers, a
 * fixed schedule, so a test can see that every worker did some work.
 *
 * Workers never allocate. A pool is driven by one thread at a time.
 */
#ifndef LS_POOL_H
#define LS_POOL_H

#include <stddef.h>

#include "../include/lockstep.h"

#define POOL_MAX_THREADS 256

typedef struct pool pool;
typedef void (*pool_fn)(void *ctx, int worker, int n_workers);
typedef void (*pool_part_fn)(void *ctx, size_t part, int worker);

/* n_threads in 1..POOL_MAX_THREADS; starts n_threads - 1 threads. */
ls_status pool_create(pool **out, int n_threads, ls_err *err);
void pool_destroy(pool *p);          /* joins the threads; accepts NULL */
int pool_threads(const pool *p);

void pool_run(pool *p, pool_fn fn, void *ctx);
/* Runs fn for parts 0..n_parts-1; part p on worker p % n_workers, in
 * increasing p on each worker. Returns when every part is done (a barrier). */
void pool_parallel_for(pool *p, size_t n_parts, pool_part_fn fn, void *ctx);

/* Number of online CPUs (at least 1): the default thread count. */
int pool_online_cpus(void);

#endif
