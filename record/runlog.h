/* runlog.h — the SQLite record of runs (DESIGN.md §3.3).
 *
 * One database file holds every run: its canonical config, environment and
 * status, one row per step (loss as REAL and as its binary64 bits, param and
 * trajectory hash, step time), evaluations, checkpoints and the verdicts of
 * equivalence checks. WAL mode, busy_timeout, BEGIN IMMEDIATE, STRICT tables,
 * application_id and user_version set. Steps are buffered and committed in
 * batches. A run whose process died is reported as "interrupted": the row
 * keeps the pid, the process start time and the boot id of its writer, and a
 * reader that finds "running" checks them.
 *
 * Knows nothing of threads or models. Not safe to share one handle between
 * threads; several processes may write one file at once.
 */
#ifndef LS_RUNLOG_H
#define LS_RUNLOG_H

#include <stddef.h>
#include <stdint.h>

#include "../include/lockstep.h"
#include "hash.h"

#define RUNLOG_APPLICATION_ID 0x4c4b5354  /* "LKST" */
#define RUNLOG_SCHEMA_VERSION LS_RECORD_SCHEMA   /* frozen: see include/lockstep.h */

typedef struct runlog runlog;

/* Opens or creates the database. A file that is not SQLite, or a SQLite file
 * with another application_id or a newer schema, is LS_EFORMAT naming the file;
 * a directory or unwritable path is LS_EIO. */
ls_status runlog_open(runlog **out, const char *path, ls_err *err);
void runlog_close(runlog *r);     /* flushes buffered steps; accepts NULL */

typedef struct {
    const char *name;          /* unique; NULL or "" → "run-<id>" */
    const char *model, *task;
    const char *config_text;   /* canonical config */
    uint64_t config_hash;
    const char *engine_version, *compiler, *cflags, *host, *cpu, *git_commit;  /* may be NULL */
    int threads;
    const char *reduce;        /* "tree" or "unordered" */
    int64_t target_steps;      /* steps requested; 0: not recorded */
    int64_t checkpoint_every;  /* 0: no checkpoints */
    const char *checkpoint_dir;  /* where checkpoints go; may be NULL */
} runlog_run_info;

/* Inserts a run with status "running" and this process's liveness data.
 * A name already used → LS_EEXIST naming it; an all-digit name (it would read
 * as a run id) or one of 128 bytes or more → LS_EINVAL. */
ls_status runlog_run_begin(runlog *r, const runlog_run_info *info, int64_t *run_id, ls_err *err);

/* Buffers one step row (committed every RUNLOG_BATCH rows, at flush and at end). */
#define RUNLOG_BATCH 64
ls_status runlog_step(runlog *r, int64_t run_id, const ls_step *s, ls_err *err);
ls_status runlog_flush(runlog *r, ls_err *err);
/* Evaluations, checkpoints and verdicts are not buffered: each is committed
 * at once in its own transaction. An evaluation recorded again at the same
 * (step, name) replaces the first (a resumed run evaluates again). */
ls_status runlog_eval(runlog *r, int64_t run_id, int64_t step, const char *name, double value, ls_err *err);
/* status: "done", "interrupted", "diverged", "failed". Flushes first. */
ls_status runlog_run_end(runlog *r, int64_t run_id, const char *status, ls_err *err);

/* Claims an existing run for this process to continue it: status "running",
 * ended cleared, and this process's liveness data (pid, start time, boot id).
 * target_steps and checkpoint_every > 0 and a non-empty checkpoint_dir
 * replace the stored values; 0 / NULL keep them. A run that is "running"
 * in a live process is LS_EEXIST naming it (the check and the claim are one
 * transaction, so two resumers cannot both win); an unknown id LS_ENOTFOUND.
 * Any other status may be claimed: the caller decides what makes sense. */
ls_status runlog_run_resume(runlog *r, int64_t run_id, int64_t target_steps, int64_t checkpoint_every,
                            const char *checkpoint_dir, ls_err *err);

typedef struct {
    int64_t id;
    char name[128];
    char model[32], task[32];
    char status[16];           /* as stored, or "interrupted" when its process is gone */
    char started[32], ended[32];
    char engine_version[64], compiler[128], cflags[256], host[128], cpu[128], git_commit[64];
    char reduce[16];
    int threads;
    uint64_t config_hash;
    int64_t n_steps;           /* highest recorded step, -1 when none */
    uint64_t last_traj_hash;
    int64_t pid;               /* the last writer's pid, -1 when unknown */
    int64_t target_steps;      /* steps requested, 0 when not recorded */
    int64_t checkpoint_every;  /* 0 when none */
    char *checkpoint_dir;      /* malloc'ed or NULL; free with runlog_run_free */
    char *config_text;         /* malloc'ed; free with runlog_run_free */
} runlog_run;

/* Every read below first flushes this handle's buffered steps, so a handle
 * sees its own writes. */

/* id_or_name: a decimal run id or a unique name. Unknown → LS_ENOTFOUND naming it. */
ls_status runlog_find(runlog *r, const char *id_or_name, int64_t *run_id, ls_err *err);
ls_status runlog_get_run(runlog *r, int64_t run_id, runlog_run *out, ls_err *err);
void runlog_run_free(runlog_run *run);
/* All runs, oldest first: *runs malloc'ed array (free each with runlog_run_free, then free()). */
ls_status runlog_list(runlog *r, runlog_run **runs, size_t *n, ls_err *err);
/* Step rows of a run in step order (malloc'ed array). */
ls_status runlog_read_steps(runlog *r, int64_t run_id, ls_step **steps, size_t *n, ls_err *err);

/* Evaluations of a run in (step, name) order. */
typedef struct { int64_t step; char name[32]; double value; } runlog_evalrow;
ls_status runlog_read_evals(runlog *r, int64_t run_id, runlog_evalrow **rows, size_t *n, ls_err *err);

/* The first step at which runs a and b differ (param hash at any step, or loss
 * bits from step 1) over the steps both have; *step = -1 when none. One SQL
 * query; RUNLOG_FIRST_DIVERGENCE_SQL is the text the README shows. */
extern const char RUNLOG_FIRST_DIVERGENCE_SQL[];
ls_status runlog_first_divergence(runlog *r, int64_t a, int64_t b, int64_t *step, ls_err *err);

/* Records the verdict of an equivalence check (verify or equiv). A negative
 * run_a, run_b or first_diff_step is stored as NULL ("none"). */
ls_status runlog_verdict(runlog *r, const char *kind, int64_t run_a, int64_t run_b, int equal,
                         int64_t first_diff_step, const char *detail, ls_err *err);

/* Checkpoints: a file path registered for a run at a step, with the file's
 * state hash (record/checkpoint.h). A caller registers a checkpoint only
 * after the steps up to it are committed (runlog_flush), so a registered
 * checkpoint at step t always has the rows 0..t behind it. */
ls_status runlog_checkpoint(runlog *r, int64_t run_id, int64_t step, const char *path,
                            uint64_t state_hash, ls_err *err);
/* Removes the registration(s) of a run's checkpoint at a step (the file is
 * the caller's business). */
ls_status runlog_checkpoint_delete(runlog *r, int64_t run_id, int64_t step, ls_err *err);

typedef struct {
    int64_t step;
    uint64_t state_hash;
    char *path;                /* malloc'ed */
} runlog_ckpt;
/* A run's registered checkpoints in step order (the last is the newest);
 * free with runlog_checkpoints_free. Does not flush buffered steps. */
ls_status runlog_checkpoints(runlog *r, int64_t run_id, runlog_ckpt **rows, size_t *n, ls_err *err);
void runlog_checkpoints_free(runlog_ckpt *rows, size_t n);   /* accepts NULL */

/* Test-only crash hook: when set, every batch commit of step rows calls
 * hook(ctx) after BEGIN IMMEDIATE and the inserts, just before COMMIT (a
 * hook that kills the process leaves an uncommitted transaction behind,
 * which SQLite must roll back). NULL unsets it. */
void runlog_set_commit_hook(runlog *r, void (*hook)(void *ctx), void *ctx);

#endif
