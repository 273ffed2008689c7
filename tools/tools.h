/* tools.h — the lockstep command line: argument parsing, the run driver
 * (engine + record), and the subcommands. Only tools/ prints and chooses
 * exit codes: 0 success/equal, 1 differ/failed check/diverged, 2 bad usage or
 * bad input, 130 interrupted. */
#ifndef LS_TOOLS_H
#define LS_TOOLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/core/config.h"
#include "engine/data/dataset.h"
#include "engine/data/npy.h"
#include "engine/core/model.h"
#include "engine/core/session.h"
#include "engine/core/train.h"
#include "include/lockstep.h"
#include "record/hash.h"
#include "record/runlog.h"
#include "tools/flags.h"

#define LS_ENGINE_VERSION "lockstep " LS_VERSION_STRING
#define CLI_MAX_THREADS_LIST 32
#define CLI_MAX_REPS 64          /* bench keeps every repetition's figures */

enum { EXIT_OK = 0, EXIT_DIFFER = 1, EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 };

/* Parsed flags shared by train, equiv, bench and golden update. */
typedef struct {
    ls_config cfg;
    int64_t steps;                       /* 0: the task's default */
    int steps_given;                     /* --steps was on the command line */
    int threads[CLI_MAX_THREADS_LIST];   /* one entry for train */
    int n_threads;
    int leaves[CLI_MAX_THREADS_LIST];    /* equiv --leaf 16,64: leaf sizes (0 of them: the config's) */
    int n_leaves;
    const char *db;
    const char *name;
    int64_t eval_every;                  /* 0: only at the end */
    int progress;                        /* 1: a progress line on a terminal */
    int no_eval;                         /* --no-eval: no evaluation after the last step */
    int reps;                            /* bench repetitions */
    int64_t checkpoint_every;            /* 0: no checkpoints (resume: the run's own) */
    const char *checkpoint_dir;          /* NULL: <db>.ckpt (resume: the run's own) */
    int64_t keep_checkpoints;            /* 0: LS_KEEP_CHECKPOINTS (resume: the run's own); -1: all */
    int help;
    int n_flags;                         /* flags read (--help aside) */
    const char *positional[4];
    int n_positional;
} cli_args;

/* The most steps a run may ask for (--steps, and a certificate's "steps"):
 * far beyond any real run, small enough that a step count from input
 * cannot ask for unbounded work or overflow a step counter. */
#define CLI_STEPS_MAX (INT64_C(1) << 40)

/* Which flags a subcommand takes. */
enum {
    CLI_CONFIG = 1,      /* model/task/optimiser flags */
    CLI_TRAIN = 2,       /* --steps --eval-every --name --no-progress */
    CLI_DB = 4,          /* --db */
    CLI_THREAD_LIST = 8, /* --threads 1,2,4 instead of one number */
    CLI_REPS = 16,       /* --reps */
    CLI_STEPS_FLAG = 32, /* --steps (without the rest of CLI_TRAIN) */
    CLI_THREADS = 64,    /* --threads N (one number, without the rest of CLI_TRAIN) */
    CLI_CKPT = 128,      /* --checkpoint-every K --checkpoint-dir DIR */
    CLI_PROGRESS = 256,  /* --no-progress (without the rest of CLI_TRAIN) */
    CLI_LEAF_LIST = 512, /* --leaf 16,64 (equiv): a list of leaf sizes */
    CLI_NO_EVAL = 1024   /* --no-eval (train, lockstep-mpi train): no evaluation at the end */
};

/* The flags of the accept bits, through the one flag parser (tools/flags.h):
 * --help sets a->help, at most max_positional arguments. */
ls_status cli_parse(int argc, char **argv, unsigned accept, int max_positional, cli_args *a, ls_err *err);
/* The flags command cmd lists in the command table (tools/commands.h): those
 * of cli_args that the accept bits take are read into *a, CLI_CONFIG takes
 * the config keys too, and every other listed flag goes to own(ctx, spec,
 * value) (value NULL for a switch). max_positional < 0: every argument goes
 * to own(ctx, NULL, argument). */
typedef ls_status (*cli_own_fn)(void *ctx, const flag_spec *f, const char *value, ls_err *err);
ls_status cli_parse_cmd(const char *cmd, int argc, char **argv, unsigned accept, int max_positional,
                        cli_own_fn own, void *ctx, cli_args *a, ls_err *err);
int cli_exit_code(ls_status st);
/* 1 when a failed reopen or restore found an input changed since the run:
 * the data (LS_EMISMATCH naming data_hash) or the --init file (init_hash).
 * That is bad input (exit 2), not a recomputed step that differs (exit 1);
 * the library keeps LS_EMISMATCH for both (include/lockstep.h). */
int cli_input_changed(ls_status st, const ls_err *err);
/* cli_exit_code, but a changed input (cli_input_changed) is EXIT_USAGE. */
int cli_exit_code_input(ls_status st, const ls_err *err);
/* Print "lockstep CMD: message" on stderr (one line). */
void cli_error(const char *cmd, const ls_err *err, ls_status st);

/* The subcommands' view of a run: run_train opens a session
 * (include/lockstep.h) and trains it to its target; run_resume reopens a
 * recorded run to resume it; run_restore reopens one at its last recorded
 * step, proved to be the run's. They add the progress line, the interrupt
 * flag and a run_result to print. The session keeps the newest
 * LS_KEEP_CHECKPOINTS checkpoints of a run (include/lockstep.h). */
typedef struct {
    ls_config cfg;
    int threads;
    int64_t steps;
    int64_t eval_every;
    int progress;
    int eval_at_end;            /* report the evaluation after the last step */
    const char *name;
    const char *db_path;        /* NULL: nothing recorded */
    const ls_dataset *data;     /* NULL: loaded by the session */
    ls_step *rows;              /* if not NULL: [steps + 1] receives every step row */
    int64_t checkpoint_every;   /* 0: none (run_resume: 0 keeps the run's own) */
    const char *checkpoint_dir; /* NULL: "<db>.ckpt" (run_resume: the run's own) */
    int no_final_checkpoint;    /* a throwaway record (bench): no checkpoint at the end */
    int64_t keep_checkpoints;   /* 0: LS_KEEP_CHECKPOINTS (run_resume: the run's own); -1: every one */
    ls_config *cfg_out;         /* run_train: if not NULL, receives the config the session runs, with
                                 * what the engine sets (data_hash, init_hash) filled in */
} run_opts;

typedef struct {
    int64_t run_id;             /* -1 when not recorded */
    int64_t steps_done;
    double last_loss;
    uint64_t traj_hash;
    uint64_t param_hash;
    double train_seconds;       /* wall time inside the engine's steps */
    double part_seconds[5];     /* of which prepare, phases, leaves, finish, update (ls_session_state) */
    double hash_seconds;        /* wall time hashing parameters and trajectory */
    double record_seconds;      /* wall time writing the SQLite record (steps and end) */
    double samples_per_second;
    double flops_per_sample;    /* the model's count (0: it gives none) */
    double test_acc;            /* the first evaluation figure; -1 when not evaluated */
    ls_metric metrics[LS_MAX_METRICS];   /* every figure of the last evaluation */
    size_t n_metrics;
    char status[16];
    int busy_workers;           /* workers that computed units, leaves or update pieces in the last step */
    int64_t checkpoints;        /* checkpoints written */
    /* run_resume only: */
    int nothing_to_do;          /* the run was done already: nothing was changed */
    int bad_input;              /* failed before claiming the run (bad run, config or checkpoint) */
    int64_t resumed_from;       /* step of the checkpoint loaded, 0 when none */
    int64_t recomputed;         /* recorded steps recomputed and found identical */
    int64_t target_steps;
    char checkpoint_path[4096]; /* the checkpoint loaded, "" when none */
    char checkpoint_note[1024]; /* checkpoints passed over and what was used instead, "" when none */
} run_result;

ls_status run_train(const run_opts *o, run_result *r, ls_err *err);
/* "test_acc 0.8794" or "hard_acc 1.0000, hard_acc_64 1.0000" into buf. */
const char *run_format_metrics(const run_result *r, char *buf, size_t len);
/* o->db_path, o->threads, o->steps, o->checkpoint_*, o->progress are used. */
ls_status run_resume(const run_opts *o, const char *run, run_result *r, ls_err *err);

/* *out (ls_session_close it) is NULL on error; then LS_EMISMATCH means the
 * recomputation disagrees with the record, anything else is bad input.
 * info: where the session stands (step, checkpoint, steps replayed, hashes). */
ls_status run_restore(const char *db_path, int64_t run_id, int threads, int progress, ls_session **out,
                      ls_session_state *info, ls_err *err);

/* Set by the SIGINT/SIGTERM handler; the driver stops between steps. */
extern volatile int run_interrupted;
void run_install_signals(void);
/* Steps s to its target with no evaluation (--no-eval, golden check and
 * update, bench); LS_EINTR between steps once run_interrupted is set. */
ls_status run_steps(ls_session *s, ls_err *err);
double run_now(void);

int cmd_train(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_equiv(int argc, char **argv);
int cmd_golden(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int bench_peak(int argc, char **argv);   /* bench --peak (bench_peak.c) */
int cmd_resume(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_reproduce(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_rename(int argc, char **argv);

/* Helpers shared by subcommands. */
/* s (NULL: "") as a JSON string: esc_json (tools/escape.h), kept under this name. */
void cli_json_str(FILE *f, const char *s);
/* A finite double in the fewest %g digits that read back to the same bits. */
void cli_shortest_double(FILE *f, double v);
/* runlog_open, after refusing (LS_EIO naming it) a path that exists and is
 * not a regular file: a FIFO, a device, a directory. */
ls_status cli_open_db(const char *path, runlog **db, ls_err *err);
/* Opens the database db_path (which must exist: readers never create one)
 * and reads run id_or_name (an id or a name) into *run (runlog_run_free it,
 * runlog_close *db). On failure prints one line and returns EXIT_USAGE. */
int cli_open_run(const char *cmd, const char *db_path, const char *id_or_name, runlog **db, runlog_run *run);
/* An output file written to a temporary file next to it and renamed over it
 * by cli_out_commit, so a failed or interrupted command leaves no partial
 * file; path NULL or "-" is stdout; a symbolic link to a regular file (or to
 * nothing yet) is written the same way at the file it points to, keeping the
 * link; an existing device or pipe is written in place. cli_out_open first
 * refuses (cli_guard_output, LS_EINVAL naming both paths) a path that is a
 * file of the record at db_path (db: that record, open, or NULL), and fails
 * (LS_EIO naming the path) when the file cannot be created there, before any
 * work is done. label is how the command line names the path ("-o"). */
typedef struct {
    FILE *f;
    int to_stdout, in_place;
    char path[4096], tmp[4096 + 16];
} cli_out;
ls_status cli_out_open(cli_out *o, const char *label, const char *path, const char *db_path, runlog *db,
                       ls_err *err);
ls_status cli_out_commit(cli_out *o, ls_err *err);
void cli_out_abort(cli_out *o);   /* removes the temporary file; no-op after commit */
/* The .npy writer (engine/data/npy.h) under the names the commands use. */
static inline void cli_npy_header(FILE *f, const char *descr, const size_t *shape, size_t ndim)
{
    npy_write_header(f, descr, shape, ndim);
}
static inline void cli_write_f32le(FILE *f, const float *x, size_t n)
{
    npy_write_f32le(f, x, n);
}
/* src as printable ASCII safe inside a C or '#' comment (no "* /", no newline). */
void cli_comment_safe(char *dst, size_t cap, const char *src);

/* Refuses an output path out (named `label` on the command line, e.g. "-o")
 * that is a file the record at db_path owns: the database, its -wal, -shm and
 * -journal, its checkpoint directory "<db>.ckpt", and when db (that record,
 * open) is not NULL every run's checkpoint directory and registered
 * checkpoint files, or a checkpoint file name inside such a directory, and
 * every run's recorded data files (its sources: overwritten, the run could
 * no longer be resumed or audited).
 * Compared by device and inode when both exist, else by the resolved path
 * (symbolic links, "./", "..", hard links all caught). Also refuses, whatever
 * db_path (may be NULL), an existing SQLite database, write-ahead log or
 * lockstep checkpoint, and a -wal/-shm/-journal name beside a SQLite
 * database. LS_EINVAL naming both paths; LS_OK for NULL or "-" (stdout). */
ls_status cli_guard_output(const char *label, const char *out, const char *db_path, runlog *db, ls_err *err);
/* file_check_regular (base/file.h) under the name the commands use: LS_EIO
 * ("LABEL PATH: is a FIFO, not a regular file") when path exists and is not
 * a regular file; LS_OK when it is one or does not exist. label may be NULL.
 * Looks with stat, so it never blocks on a FIFO. */
ls_status cli_check_regular(const char *label, const char *path, ls_err *err);
/* After a recorded run failed: what the record at db_path holds of it, read
 * back from the database (a failed commit loses buffered steps the engine
 * counted), with its status as `lockstep runs` shows it once this process is
 * gone: "run 3: the record holds steps 0..191, status interrupted". */
void cli_run_fate(const char *db_path, int64_t run_id, char *buf, size_t cap);

/* Compare two runs over their common steps; prints the verdict; 0 equal, 1
 * differ or nothing in common (a run without step rows is not equal to any:
 * one line on stderr names it, no verdict is stored), 2 the record failed. */
int verify_runs(runlog *db, int64_t a, int64_t b, const char *kind, int quiet);
/* verify --loss-rtol R --loss-atol A (tools/compare.h): on = 1 when either
 * flag was given. verify_runs_tol: verify_runs with it (NULL: none). */
typedef struct {
    int on;
    double rtol, atol;
} compare_tol;

int verify_runs_tol(runlog *db, int64_t a, int64_t b, const char *kind, int quiet, const compare_tol *tol);

/* The default picture of `lockstep render` (no flags) of a restored
 * logic-ca run's trainer, as a PNG written to f (tools/cmd_render.c). */
ls_status render_default_png(trainer *t, const char *desc, FILE *f, size_t *width, size_t *height, ls_err *err);
/* The hard circuit of a restored logic or logic-ca run's trainer as
 * `lockstep export --circuit` flattens it: gates, the active ones (read by
 * an output) and of those the wires, inverters and constants, and the
 * active gates by op (tools/export_circuit.c). */
typedef struct {
    size_t inputs, outputs, gates, active, trivial;
    size_t by_op[16];
    const char *op_names[16];
} export_gates;
ls_status export_gate_counts(trainer *t, export_gates *g, ls_err *err);
/* `lockstep runs --sweep ID` (cmd_sweep.c): the runs tagged with sweep ID,
 * with final loss and evaluation, best first; exit status. */
int cli_sweep_runs(runlog *db, const char *db_path, const char *sweep_id);

#endif
