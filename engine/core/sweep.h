/* sweep.h — many runs trained at once in one process (docs/runs.md): a seed
 * sweep, a learning-rate grid, an ensemble, models of different kinds side
 * by side.
 *
 * A sweep is several sessions (include/lockstep.h) sharing one pool. Each
 * round takes one step of every run that still has steps to go, as work
 * units of the pool: (run) for the model's prepare, (run, unit) for each
 * phase, (run, leaf block) for the leaves, (run, buffer chunk) for the top
 * of each run's tree. Units are handed out dynamically, so no worker idles
 * while any run has work, and small runs that cannot fill the cores alone
 * fill them together; each run's finish and optimiser are a unit (run).
 * Then, run by run on the calling thread, each session records its step as
 * usual (hashes, record, checkpoint: one SQLite writer at a time);
 * evaluations run as units (run) again.
 *
 * Each run's leaves are summed by its own canonical tree: its leaves cut into
 * aligned power-of-two blocks (reduce/tree.h), each block summed by the
 * binary-counter stream, the block sums combined along the tree over blocks
 * (which is the canonical tree over the leaves, §2.2 property 2). So every
 * run's parameters after every step have the bits of the same config trained
 * alone, at any thread count — and which worker ran which unit changes no
 * bit.
 *
 * The sessions stay the caller's: it opens them (threads 1 is best: a
 * session's own pool then does only its finish, optimiser and evaluation,
 * inline on the sweep's worker that runs them, and starts no threads), adds them,
 * trains, and closes each with the status the sweep gives it. Not safe to
 * drive one sweep from two threads.
 */
#ifndef LS_SWEEP_H
#define LS_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

typedef struct sweep sweep;

/* threads: 1..POOL_MAX_THREADS workers shared by every run. */
ls_status sweep_create(sweep **out, int threads, ls_err *err);
void sweep_destroy(sweep *sw);   /* does not close the sessions; accepts NULL */

/* Adds session s (the caller keeps it; it must outlive the sweep's use of
 * it), trained to its target step; eval_every > 0 records its evaluation
 * every eval_every steps (always at the end, as ls_session_train). A session
 * with nothing to do is refused (LS_EINVAL), and so is a run with
 * --reduce unordered (the benchmark's foil, whose bits depend on the
 * thread count). */
ls_status sweep_add(sweep *sw, ls_session *s, int64_t eval_every, ls_err *err);

typedef struct {
    size_t runs, active, done, failed;
    int64_t steps, target_steps;       /* summed over the runs */
    int64_t rounds;                    /* rounds of this sweep_train */
} sweep_progress;

/* Trains every run to its target. A run whose step or evaluation fails
 * (diverged, the record failed) stops there with its status; the others go
 * on. *stop (may be NULL) is checked before every round: when set, returns
 * LS_EINTR with the unfinished runs left as they are (the caller closes them
 * as interrupted). progress (may be NULL) is called on the calling thread
 * after every round. LS_OK when every run has finished, well or not:
 * sweep_run_status says how. */
ls_status sweep_train(sweep *sw, const volatile int *stop, void (*progress)(void *ctx, const sweep_progress *p),
                      void *ctx, ls_err *err);

size_t sweep_runs(const sweep *sw);
ls_session *sweep_session(sweep *sw, size_t i);
/* LS_OK: run i reached its target and was evaluated; LS_EINTR: not finished
 * (not yet trained, or the sweep was stopped); anything else: why it failed,
 * with the message in *err (may be NULL). */
ls_status sweep_run_status(const sweep *sw, size_t i, ls_err *err);
/* Run i's last evaluation (NULL, *n 0 when none). */
const ls_metric *sweep_run_metrics(const sweep *sw, size_t i, size_t *n);

/* Records every run's sweep id in database db_path: run_settings key
 * "sweep" = sweep_id, and "sweep_threads" = the sweep's thread count. */
ls_status sweep_tag(sweep *sw, const char *db_path, const char *sweep_id, ls_err *err);

#endif
