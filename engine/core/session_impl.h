/* session_impl.h — what the files of the session share (private to
 * engine/core/session*.c): the session object itself and the functions one
 * of them defines for the others. The lifecycle is session.c's, checkpoints
 * session_checkpoint.c's, reopening session_reopen.c's, the host and build
 * facts session_env.c's, the crash hook session_crash.c's.
 */
#ifndef LS_SESSION_IMPL_H
#define LS_SESSION_IMPL_H

#include <limits.h>
#include <stdint.h>

#include "include/lockstep.h"
#include "record/runlog.h"
#include "engine/core/config.h"
#include "engine/core/session.h"
#include "engine/core/train.h"

struct ls_session {
    trainer *t;                 /* NULL when a reopened run has nothing to do */
    runlog *db;                 /* NULL: nothing recorded */
    int recording;              /* 0 for a restored run: the record is only read */
    ls_session_opts opts;
    char db_path[PATH_MAX];
    ls_session_state st;
    int64_t ckpt_every;         /* 0: no checkpoints */
    char ckpt_dir[PATH_MAX];
    ls_step *recorded;          /* rows 0..last_recorded, index = step (reopened runs) */
    int64_t last_recorded;      /* -1: nothing recorded yet */
    char note[1024];            /* reopened: checkpoints passed over, and what was used instead */
    int how;                    /* reopened: LS_REOPEN_RESUME or LS_REOPEN_RESTORE */
    int64_t eval_every;         /* ls_session_train's default: the options', or the run's recorded one */
    int64_t process_id;         /* this process's row in run_processes, -1 when none */
    int64_t last_ckpt_step;     /* the step of the newest checkpoint this session wrote, -1 when none */
    runlog_ckpt *audit_ck;      /* LS_REOPEN_AUDIT: the run's registered checkpoints, in step order */
    size_t n_audit_ck;
    int64_t keep_ckpt;          /* checkpoints kept by prune_checkpoints; 0: every one */
    int data_lazy;              /* restored without its data (session_reopen.c): t's model was made
                                   from the data's recorded shape; session_load_data before t is
                                   stepped or evaluated */
    uint64_t *thash;            /* per-tensor hashes of θ now (session_tensor_hashes), [n_thash] */
    size_t n_thash;
    hash_tensors *tensor_parts; /* how they are computed: in parts by t's update, joined here */
    const trainer *parts_of;    /* the trainer tensor_parts was made for */
};

/* ---- session.c ---- */
/* A session with its options copied (the strings it keeps, into its own
 * buffers) and nothing built yet; session_free frees whatever was. */
ls_status session_new(ls_session **out, const ls_session_opts *opts, ls_err *err);
void session_free(ls_session *s);
/* Per-tensor hashes (schema version 2): the run's tensor names recorded
 * once (a resumed run that has them keeps them), and ls_tensor_hash of each
 * of θ's tensors now (float32, in θ's order) into s->thash. */
ls_status session_record_tensors(ls_session *s, ls_err *err);
ls_status session_tensor_hashes(ls_session *s, ls_err *err);

/* The host and build facts of this process (session_env.c). */
typedef struct {
    char host[128];
    char cpu[128];              /* "unknown" when /proc/cpuinfo says nothing */
    char cflags[256];           /* the build's flags, then "; simd <path>" */
    char build[512];            /* "lockstep V; compiler; cflags[; git C]": a process row's build */
    const char *compiler;
    const char *git;            /* the commit built, NULL when unknown */
} session_env;
void session_env_read(session_env *e);

/* This process works on the run from now on: its row in run_processes
 * (with env's host and build), the run's checkpoint count and evaluation
 * interval kept (or read back) with the run. */
ls_status session_claim(ls_session *s, const session_env *env, ls_err *err);

/* ---- session_checkpoint.c ---- */
/* The absolute checkpoint directory: dir, or "<db_path>.ckpt", created. */
ls_status session_checkpoint_dir(const char *dir, const char *db_path, char *out, size_t cap, ls_err *err);

/* ---- session_reopen.c ---- */
/* LS_REOPEN_AUDIT, after step `step` was recomputed and found as recorded:
 * the checkpoints registered at that step hold the recomputed state. */
ls_status session_audit_checkpoints(ls_session *s, int64_t step, ls_err *err);
/* A session restored without its data (data_lazy): its trainer made again
 * with the data loaded and their identity checked against the config's
 * data_hash (LS_EMISMATCH when they changed), holding the same state.
 * Nothing to do otherwise. */
ls_status session_load_data(ls_session *s, ls_err *err);
/* The run_settings key and text of a data set's shape (session_claim
 * records it; a restore reads it back). */
#define SESSION_DATA_SHAPE "data_shape"
void session_data_shape_text(const ls_dataset *d, char *out, size_t cap);

/* ---- session_crash.c ---- */
/* Arms LOCKSTEP_CRASH_AT's hook in t, db and the checkpoint writer. */
void session_crash_arm(trainer *t, runlog *db);

#endif
