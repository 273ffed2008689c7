/* audit.h — proving a recorded run by re-executing it, the segments between
 * its checkpoints at once.
 *
 * The steps between two consecutive registered checkpoints (steps a < b)
 * form a segment that depends only on the checkpoint at a: its replay loads
 * that file (checked against its registration and the record's parameter
 * hash at a) and recomputes steps a+1..b, comparing each with the record and
 * the checkpoint files of each step with the recomputed state (an audit
 * session, engine/core/session.c). The first segment starts from θ_0, the last
 * ends at the last recorded step; a run without checkpoints is one segment
 * from step 0. A segment much longer than the others replays on all the
 * threads, its steps on the session's pool as training's are; the others
 * replay side by side, one thread each, as the parts of a pool
 * (reduce/pool.h). audit_threads states which is which (audit.c says why).
 *
 * Why the verdict is the sequential one: a segment's findings are all at or
 * after its start, and a segment that starts from a file other than the
 * state the run had there (one the record cannot tell from the real one:
 * the optimiser state) may find differences later on — but the segment
 * before it compares that very file with its recomputed state at the
 * boundary and finds it first. So the earliest finding over all segments
 * (the lowest step; at equal steps, the earlier segment's words) is the one
 * a replay from step 0 would report.
 */
#ifndef LS_AUDIT_H
#define LS_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

/* What a full audit found. */
typedef struct {
    int proved;                 /* 1: every recorded step and checkpoint file as recorded */
    int64_t steps;              /* the last step proved: steps 0..steps; -1 when none */
    int64_t first_bad;          /* the first step found wrong; -1: none, or a finding no step's
                                   (the config, the data) */
    uint64_t traj_hash, param_hash;   /* at `steps` when proved */
    int64_t checkpoints;        /* checkpoint files compared with the recomputed state */
    int64_t segments;           /* segments replayed */
    int threads;                /* threads used in all */
    char detail[1024];          /* the finding (both values), or what was proved */
} audit_report;

/* How `threads` threads replay n segments of len[i] steps each: out[i]
 * is `threads` for a segment replayed on all of them (those run one after
 * another, in step order), 1 for one replayed side by side with the other
 * such segments. The rule (audit.c): the longest segment replays on all the
 * threads while it is longer than the side-by-side segments' steps over the
 * threads; threads <= 1 replays everything side by side on one thread. */
void audit_threads(const int64_t *len, size_t n, int threads, int *out);

/* Re-executes run run_id of database db (which must exist) with `threads`
 * threads in all (0: online CPUs), stopping between steps with LS_EINTR
 * once *stop (may be NULL) is nonzero. A finding (a step, a checkpoint
 * file, the data, step 0 not as recorded) is LS_OK with out->proved 0;
 * anything that keeps the audit from deciding (no such run, no steps, a
 * record or config that cannot be read, no memory) is an error. */
ls_status audit_replay(const char *db, int64_t run_id, int threads, const volatile int *stop, audit_report *out,
                       ls_err *err);

#endif
