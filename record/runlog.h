/* runlog.h — the SQLite record of runs (docs/formats.md, the SQLite record).
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
 * Identity: every database has 128 random bits of its own (table
 * `identity`, one row, made by the first writer that needs it — a session
 * recording a run — in a new or an older database), kept with the device
 * and inode of the file it was given to. A file written under another
 * device/inode is a copy (cp, a backup, a restore): that writer gives it a
 * new identity, and the old one becomes an ancestor. Readers never write it. Checkpoint files carry the identity (record/checkpoint.h), so
 * a copy loads its original's checkpoints but never deletes them, and two
 * databases sharing a checkpoint directory never touch each other's files.
 * The schema version does not change: the table is created IF NOT EXISTS,
 * and readers that do not know it ignore it.
 *
 * Knows nothing of threads or models. Not safe to share one handle between
 * threads; several processes may write one file at once.
 */
#ifndef LS_RUNLOG_H
#define LS_RUNLOG_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"
#include "record/hash.h"

#define RUNLOG_APPLICATION_ID 0x4c4b5354  /* "LKST" */
#define RUNLOG_SCHEMA_VERSION LS_RECORD_SCHEMA   /* frozen: see include/lockstep.h */

typedef struct runlog runlog;

/* Opens or creates the database. A file that is not SQLite, or a SQLite file
 * with another application_id or a newer schema, is LS_EFORMAT naming the file;
 * a directory or unwritable path is LS_EIO. */
ls_status runlog_open(runlog **out, const char *path, ls_err *err);
void runlog_close(runlog *r);     /* flushes buffered steps; accepts NULL */
/* Opens an existing database to read runs from it (an import's source):
 * read-only, so nothing is ever written to it, not even a schema. A file
 * that is not a lockstep record — empty, another program's, without the
 * runs table — is LS_EFORMAT naming it. Only the reading functions may be
 * used on the handle. */
ls_status runlog_open_source(runlog **out, const char *path, ls_err *err);

#define RUNLOG_ID_BYTES 16         /* = CKPT_DBID_BYTES */
#define RUNLOG_MAX_ANCESTORS 16    /* identities remembered from before copies */

/* A database's identity. */
typedef struct {
    unsigned char id[RUNLOG_ID_BYTES];    /* never all zero */
    char hex[2 * RUNLOG_ID_BYTES + 1];    /* id in lowercase hex */
    size_t n_ancestors;                   /* newest first */
    unsigned char ancestors[RUNLOG_MAX_ANCESTORS][RUNLOG_ID_BYTES];
} runlog_identity;
/* for_writing: the identity this file writes and deletes checkpoints
 * under, made now (one write transaction) when the database has none or is
 * a copy; no random bytes (no getrandom, no /dev/urandom) is LS_EIO.
 * Otherwise: what is stored, read only, whichever file it was given to (all
 * zero, no ancestors, when there is none) — enough to decide what may be
 * loaded, never what may be deleted. *out lives as long as the handle. */
ls_status runlog_get_identity(runlog *r, int for_writing, const runlog_identity **out, ls_err *err);

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
    const char *source_text;   /* where the data are ("key=value" lines, table run_sources); may be NULL */
    const char *framework;     /* not NULL: a run of another framework (table run_external) */
} runlog_run_info;

/* Run names. A name is given by a person and read back on command lines
 * and in listings, so it must print as itself and parse as a name:
 *   - valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF);
 *   - printable: no C0 control (U+0000..U+001F, so no tab or newline), no
 *     DEL (U+007F), no C1 control (U+0080..U+009F), and none of the
 *     invisible characters that reorder or break a line on display (U+200E,
 *     U+200F, U+2028, U+2029, U+202A..U+202E, U+2066..U+2069);
 *   - not starting with '-' (it would read as a flag);
 *   - not all digits (it would read as a run id);
 *   - 1 to RUNLOG_NAME_MAX characters (code points, not bytes).
 * An empty or NULL name asks for "run-<id>". Names already in a database
 * are read back as stored, whatever they are. */
#define RUNLOG_NAME_MAX 100
#define RUNLOG_NAME_BYTES (4 * RUNLOG_NAME_MAX + 1)   /* room for the longest allowed name */

/* LS_OK for an allowed name (rule above), else LS_EINVAL with one line
 * naming the problem and the name, escaped so that it prints safely. */
ls_status runlog_check_name(const char *name, ls_err *err);
/* The code point at s (UTF-8, strict: shortest form, no surrogates, at most
 * U+10FFFF; s not empty) and its length in bytes in *len; -1 (and *len = 1)
 * when the bytes at s are not one. The name rule reads names with it, and
 * the command line's printers (tools/escape.h) read what they print. */
long runlog_utf8_next(const unsigned char *s, size_t *len);
/* 1 for a code point a name may not hold (the rule above): a control, or
 * an invisible one that reorders or breaks a line when printed. */
int runlog_char_forbidden(long cp);

/* Inserts a run with status "running" and this process's liveness data.
 * A name already used → LS_EEXIST naming it; a name the rule above refuses
 * → LS_EINVAL (runlog_check_name's line). */
ls_status runlog_run_begin(runlog *r, const runlog_run_info *info, int64_t *run_id, ls_err *err);

/* Buffers one step row (committed every RUNLOG_BATCH rows, at flush and at end). */
#define RUNLOG_BATCH 64
ls_status runlog_step(runlog *r, int64_t run_id, const ls_step *s, ls_err *err);
/* runlog_step with the step's per-tensor hashes, hashes[n] in the run's
 * tensor order (runlog_tensors_set); stored with the row, in its batch. */
ls_status runlog_step_tensors(runlog *r, int64_t run_id, const ls_step *s, const uint64_t *hashes, size_t n,
                              ls_err *err);
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
    char name[RUNLOG_NAME_BYTES];
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
    char *source_text;         /* malloc'ed or NULL: where the data are (runlog_run_info) */
    int external;              /* 1: recorded by ls_record_* (another framework): nothing to re-execute */
    char framework[128];       /* an external run's framework, else "" */
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
/* The same rule over two runs' step rows in memory (each in step order),
 * for runs in two databases: the first differing step, -1 when none. */
int64_t runlog_divergence_rows(const ls_step *a, size_t na, const ls_step *b, size_t nb);

/* Records the verdict of an equivalence check (verify or equiv). A negative
 * run_a, run_b or first_diff_step is stored as NULL ("none"). */
ls_status runlog_verdict(runlog *r, const char *kind, int64_t run_a, int64_t run_b, int equal,
                         int64_t first_diff_step, const char *detail, ls_err *err);
/* The verdicts naming a run (as run_a or run_b), oldest first; free(*rows).
 * run_a, run_b, first_diff_step: -1 for NULL. */
typedef struct {
    char kind[32];
    int64_t run_a, run_b;
    int equal;
    int64_t first_diff_step;
    char detail[512];
    char created[32];
} runlog_verdictrow;
ls_status runlog_verdicts(runlog *r, int64_t run_id, runlog_verdictrow **rows, size_t *n, ls_err *err);

/* Checkpoints: a file path registered for a run at a step, with the file's
 * state hash (record/checkpoint.h). A caller registers a checkpoint only
 * after the steps up to it are committed (runlog_flush), so a registered
 * checkpoint at step t always has the rows 0..t behind it. */
ls_status runlog_checkpoint(runlog *r, int64_t run_id, int64_t step, const char *path,
                            uint64_t state_hash, ls_err *err);
/* Removes the registration(s) of a run's checkpoint at a step, only those
 * of that path when path is not NULL (the file is the caller's business). */
ls_status runlog_checkpoint_delete(runlog *r, int64_t run_id, int64_t step, const char *path, ls_err *err);

typedef struct {
    int64_t step;
    uint64_t state_hash;
    char *path;                /* malloc'ed */
} runlog_ckpt;
/* A run's registered checkpoints in step order (the last is the newest);
 * free with runlog_checkpoints_free. Does not flush buffered steps. */
ls_status runlog_checkpoints(runlog *r, int64_t run_id, runlog_ckpt **rows, size_t *n, ls_err *err);
void runlog_checkpoints_free(runlog_ckpt *rows, size_t n);   /* accepts NULL */

/* Processes: each process that works on a run (the first, and each resume)
 * records itself (table run_processes): host, pid, thread count, build, and
 * the steps it computed (after first_step up to last_step; last_step -1
 * while it runs or when it died). */
typedef struct {
    char started[32], ended[32];   /* "" when not ended */
    char host[128];
    int64_t pid;
    int threads;
    char build[256];
    int64_t first_step, last_step;
} runlog_process;
ls_status runlog_process_begin(runlog *r, int64_t run_id, const char *host, int threads, const char *build,
                               int64_t first_step, int64_t *process_id, ls_err *err);
ls_status runlog_process_end(runlog *r, int64_t process_id, int64_t last_step, ls_err *err);
/* A run's processes, oldest first; free(*rows). None in an older database. */
ls_status runlog_processes(runlog *r, int64_t run_id, runlog_process **rows, size_t *n, ls_err *err);

/* A run's settings that are not its config (eval_every), as text. get: 1
 * when found (value written, cut to cap), 0 otherwise. */
ls_status runlog_setting_set(runlog *r, int64_t run_id, const char *key, const char *value, ls_err *err);
int runlog_setting_get(runlog *r, int64_t run_id, const char *key, char *value, size_t cap);

/* Audits (lockstep audit): the verdict of proving a recorded run, one row
 * per audit in table `audits`, created IF NOT EXISTS by the first writer
 * (the schema version does not change; a database without the table has no
 * audits). mode is "record-only" (the record checked against itself) or
 * "full" (every step re-executed); steps is the last step proved (0..steps,
 * -1 when none); first_bad the first step found wrong (-1: none, or a
 * finding that is not a step's, e.g. the config hash or the data). */
typedef struct {
    char created[32];          /* filled by the reader; the writer stores the time now */
    char version[64];          /* "lockstep 0.3.0" */
    char build[512];           /* compiler; flags; SIMD path; git commit ("" when not recorded) */
    char host[128];
    int threads;               /* of the re-execution; 0: none (record-only), stored NULL */
    char mode[16];
    int64_t steps;
    int proved;
    int64_t first_bad;
    char detail[1024];
} runlog_audit;
ls_status runlog_audit_add(runlog *r, int64_t run_id, const runlog_audit *a, ls_err *err);
/* A run's audits, oldest first; free(*rows). None in an older database. */
ls_status runlog_audits(runlog *r, int64_t run_id, runlog_audit **rows, size_t *n, ls_err *err);
/* Moving runs between databases and within one.
 * runlog_import copies runs ids[n] of the database at src_path into this
 * one, in one transaction: each run row (config text and hash, status —
 * "running" whose process is gone becomes "interrupted" —, environment,
 * times), its steps, evaluations, checkpoint registrations (the files stay
 * where they are and stay their writer's: this database never deletes
 * them), sources, settings, processes and audits, and the verdicts whose
 * runs all come along. new_ids[n] receives the new ids. A name this
 * database has already is LS_EEXIST naming it, and nothing is copied; a
 * run still running in a live process is LS_EEXIST too; a name
 * runlog_check_name refuses (an older database may hold one) is LS_EINVAL
 * naming the run and the rule, and nothing is copied. The source is
 * attached read-only: nothing is ever written to it.
 * runlog_run_delete removes a run and every row of it (verdicts naming
 * it included) — the caller deletes the files it owns first or after.
 * runlog_run_rename gives it another name (runlog_check_name's rule; a
 * name another run has is LS_EEXIST). */
ls_status runlog_import(runlog *r, const char *src_path, const int64_t *ids, size_t n, int64_t *new_ids,
                        ls_err *err);
ls_status runlog_run_delete(runlog *r, int64_t run_id, ls_err *err);
ls_status runlog_run_rename(runlog *r, int64_t run_id, const char *name, ls_err *err);

/* Per-tensor hashes (schema version 2; runlog_tensors.c).
 * A run's tensors, named once: idx 0..n-1 in the order of the hash vectors
 * its steps store. Set once per run, in one transaction, before its first
 * step with hashes. dtype and shape (text, "3x4", "" for a scalar) are for
 * people. */
typedef struct {
    char name[LS_TENSOR_NAME_MAX + 1];
    char dtype[16];
    char shape[128];
} runlog_tensor;
ls_status runlog_tensors_set(runlog *r, int64_t run_id, const runlog_tensor *t, size_t n, ls_err *err);
/* A run's tensors in idx order (malloc'ed, free()); *n 0 when none were
 * recorded (a version-1 run, a run of no tensors). */
ls_status runlog_tensors(runlog *r, int64_t run_id, runlog_tensor **t, size_t *n, ls_err *err);
/* Step `step`'s per-tensor hashes (malloc'ed, free()); *hashes NULL and *n 0
 * when that step has none. */
ls_status runlog_step_hashes(runlog *r, int64_t run_id, int64_t step, uint64_t **hashes, size_t *n, ls_err *err);
/* The first tensor, in name (strcmp) order, whose hash at step `step`
 * differs between runs a and b, or that only one of them has: its name in
 * name[cap]; "" when the hashes agree or either run has none at that step. */
ls_status runlog_first_tensor_diff(runlog *r, int64_t a, int64_t b, int64_t step, char *name, size_t cap,
                                   ls_err *err);
/* The same for runs in two databases (ra may be rb). */
ls_status runlog_first_tensor_diff2(runlog *ra, int64_t a, runlog *rb, int64_t b, int64_t step, char *name,
                                    size_t cap, ls_err *err);

/* verify's loss tolerance: 1 when |a − b| <= atol + rtol·|b|, or a and b
 * have the same bits; a NaN on either side otherwise fails. */
int runlog_loss_within(double a, double b, double rtol, double atol);

/* Test-only crash hook: when set, every batch commit of step rows calls
 * hook(ctx) after BEGIN IMMEDIATE and the inserts, just before COMMIT (a
 * hook that kills the process leaves an uncommitted transaction behind,
 * which SQLite must roll back). NULL unsets it. */
void runlog_set_commit_hook(runlog *r, void (*hook)(void *ctx), void *ctx);

#endif
