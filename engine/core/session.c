/* session.c — one run as a library object (include/lockstep.h): the trainer,
 * the hashes, the record, checkpoints, resume and restore; and the test-only
 * crash hook (LOCKSTEP_CRASH_AT).
 *
 * A new run and a reopened one share one step: it either records the step
 * (a new one) or recomputes it and compares it with the row already recorded
 * (a reopened run re-doing the steps after its checkpoint). The record is
 * never rewritten, only extended, and a reopened run that does not reproduce
 * the record stops at the first step that differs.
 *
 * Checkpoints (with a database and checkpoint_every > 0): after every step t
 * with t % checkpoint_every == 0 the session commits the step rows up to t,
 * writes <checkpoint_dir>/<db16>-run-<id>-step-<t>.ckpt (record/checkpoint.h;
 * <db16>: the first 16 hex digits of the database's identity, runlog.h),
 * registers it, then deletes the files and registrations of that run's older
 * checkpoints except the newest LS_KEEP_CHECKPOINTS (or the run's own
 * count, ls_session_opts.keep_checkpoints, kept with it; every one: none
 * deleted). Writing,
 * registering, then deleting, in that order, means a crash at any moment
 * leaves the newest registered checkpoint intact.
 *
 * A registration is a path, and a path proves nothing about the file there
 * now: directories are shared, databases are copied, files are replaced.
 * So a file is deleted, or replaced by a new checkpoint of the same name,
 * only when its header names this database (its identity now, not an
 * ancestor's: a copy never deletes its original's files) and this run and
 * step (session_owns). Anything else — another database's file, a version-1
 * file (it names nobody), an unreadable one — is left where it is; its
 * registration may go. A new checkpoint whose name is taken by a file that
 * is not ours goes to "<name>.<k>.ckpt" instead.
 *
 * Reopening (resume or restore) tries the registered checkpoints newest
 * first and takes the first that is sound, this database's (or an
 * ancestor's) for this run, registered with its state hash, and whose
 * parameters hash as the record has them at its step; with none, it starts
 * from step 0 and recomputes every recorded step. Each one passed over is
 * said in the session's note (ls_session_state.checkpoint_note). A checkpoint file
 * never refuses a run: only the record and the recomputation can.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "include/lockstep.h"
#include "record/checkpoint.h"
#include "record/hash.h"
#include "record/runlog.h"
#include "reduce/pool.h"
#include "buildinfo.h"
#include "engine/core/config.h"
#include "engine/num/dense.h"
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
};

/* ---- test-only crash hook ------------------------------------------------------
 * LOCKSTEP_CRASH_AT=PHASE:N makes the process kill itself with SIGKILL (no
 * handler, no cleanup, as a power cut would to the process) at the N-th
 * occurrence (N >= 1, counted in this process) of PHASE:
 *   step        inside trainer_step, after the leaf reduction, before the
 *               optimiser update (engine hook trainer_set_test_hook)
 *   commit      inside a batch commit of step rows, after BEGIN IMMEDIATE and
 *               the inserts, before COMMIT (runlog_set_commit_hook)
 *   checkpoint  inside a checkpoint write, after half of the temporary file,
 *               before the rest, fsync and rename (ckpt_set_test_hook)
 * It exists for tests/test_crash.c and is not a user feature. The variable is
 * read once; an unknown phase or a malformed N is ignored, so the variable
 * can end a process but never change what a run computes or records. */

enum { CRASH_NONE, CRASH_STEP, CRASH_COMMIT, CRASH_CHECKPOINT };
static int crash_phase = -1;   /* -1: not read yet */
static long long crash_at, crash_seen;

static void crash_parse(void)
{
    if (crash_phase >= 0)
        return;
    crash_phase = CRASH_NONE;
    const char *v = getenv("LOCKSTEP_CRASH_AT");
    if (v == NULL)
        return;
    static const struct { const char *name; int phase; } phases[] = {
        { "step", CRASH_STEP }, { "commit", CRASH_COMMIT }, { "checkpoint", CRASH_CHECKPOINT },
    };
    const char *colon = strchr(v, ':');
    if (colon == NULL || colon[1] < '1' || colon[1] > '9')
        return;
    char *end;
    errno = 0;
    long long n = strtoll(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || n < 1)
        return;
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
        if (strlen(phases[i].name) == (size_t)(colon - v) && strncmp(v, phases[i].name, (size_t)(colon - v)) == 0) {
            crash_phase = phases[i].phase;
            crash_at = n;
        }
    }
}

static void crash_hit(void)
{
    if (++crash_seen == crash_at)
        raise(SIGKILL);
}

static void crash_hook_ctx(void *ctx)
{
    (void)ctx;
    crash_hit();
}

static void crash_arm(trainer *t, runlog *db)
{
    crash_parse();
    if (crash_phase == CRASH_STEP && t != NULL)
        trainer_set_test_hook(t, crash_hook_ctx, NULL);
    if (crash_phase == CRASH_COMMIT && db != NULL)
        runlog_set_commit_hook(db, crash_hook_ctx, NULL);
    if (crash_phase == CRASH_CHECKPOINT)
        ckpt_set_test_hook(crash_hit);
}

/* ---- environment ------------------------------------------------------------------ */

static void read_cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon != NULL) {
                colon++;
                while (*colon == ' ' || *colon == '\t')
                    colon++;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(buf, len, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

/* ---- checkpoint directory ------------------------------------------------------------- */

/* mkdir -p: every missing component of path is created. */
static int mkdir_parents(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char keep = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        buf[i] = keep;
    }
    struct stat sb;
    if (stat(path, &sb) != 0)
        return -1;
    if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* The absolute checkpoint directory: dir, or "<db_path>.ckpt", created. */
static ls_status checkpoint_dir(const char *dir, const char *db_path, char *out, size_t cap, ls_err *err)
{
    char want[PATH_MAX];
    int w;
    if (dir != NULL)
        w = snprintf(want, sizeof want, "%s", dir);
    else if (db_path != NULL)
        w = snprintf(want, sizeof want, "%s.ckpt", db_path);
    else
        return ls_fail(err, LS_EINVAL, "checkpoints: no directory and no database path to derive it from");
    if (w < 0 || (size_t)w >= sizeof want || want[0] == '\0')
        return ls_fail(err, LS_EINVAL, "--checkpoint-dir: '%.60s' is not a usable directory name", want);
    if (mkdir_parents(want) != 0)
        return ls_fail(err, LS_EIO, "%s: cannot create the checkpoint directory: %s", want, strerror(errno));
    char abs[PATH_MAX];
    if (realpath(want, abs) == NULL)
        return ls_fail(err, LS_EIO, "%s: %s", want, strerror(errno));
    if (strlen(abs) + 1 > cap)
        return ls_fail(err, LS_EINVAL, "%s: the path is too long", abs);
    memcpy(out, abs, strlen(abs) + 1);
    return LS_OK;
}

/* ---- checkpoints -------------------------------------------------------------------- */

/* Whether the file at path is one this session's database wrote for this
 * run at this step: its header (read, not trusted by its name) says so,
 * with the database's current identity. */
static int session_owns(const ls_session *s, const char *path, int64_t step)
{
    ckpt_info h;
    const runlog_identity *id;
    if (runlog_get_identity(s->db, 1, &id, NULL) != LS_OK)
        return 0;
    if (ckpt_read_head(path, &h, NULL) != LS_OK || !h.has_owner)
        return 0;
    return memcmp(h.owner.db_id, id->id, CKPT_DBID_BYTES) == 0 && h.owner.run_id == s->st.run_id && h.step == step;
}

/* Deletes the run's checkpoints older than the newest LS_KEEP_CHECKPOINTS:
 * file first, then registration, so a crash in between leaves a row whose
 * file is gone — harmless, as it is never the newest, and retried next time.
 * Only files this database wrote for this run are deleted (session_owns);
 * the registration of any other goes, the file stays. A file that cannot be
 * deleted keeps its registration, to be tried again; it costs disk, not
 * the run, so it is no error. */
static ls_status prune_checkpoints(ls_session *s, ls_err *err)
{
    runlog_ckpt *ck;
    size_t n;
    ls_status st = runlog_checkpoints(s->db, s->st.run_id, &ck, &n, err);
    if (st != LS_OK)
        return st;
    /* keep_ckpt 0 keeps every one: an audit replays the segments between
     * checkpoints concurrently (engine/audit.h), so more kept is a faster
     * audit for more disk. */
    const size_t keep = s->keep_ckpt > 0 ? (size_t)s->keep_ckpt : n;
    for (size_t i = 0; n > keep && i < n - keep && st == LS_OK; i++) {
        /* Never delete a file a kept registration names, nor the rows of a
         * kept step at the same path. */
        int shared_path = 0;
        for (size_t j = n - keep; j < n; j++)
            shared_path |= strcmp(ck[i].path, ck[j].path) == 0;
        int gone = 1;
        if (!shared_path && session_owns(s, ck[i].path, ck[i].step))
            gone = unlink(ck[i].path) == 0 || errno == ENOENT;
        if (gone && !shared_path)
            st = runlog_checkpoint_delete(s->db, s->st.run_id, ck[i].step, ck[i].path, err);
    }
    runlog_checkpoints_free(ck, n);
    return st;
}

ls_status ls_session_checkpoint(ls_session *s, ls_err *err)
{
    if (s == NULL || s->t == NULL || s->db == NULL || !s->recording)
        return ls_fail(err, LS_EINVAL, "checkpoint: the session records nothing");
    if (s->ckpt_dir[0] == '\0') {
        ls_status st = checkpoint_dir(s->opts.checkpoint_dir, s->db_path, s->ckpt_dir, sizeof s->ckpt_dir, err);
        if (st != LS_OK)
            return st;
    }
    /* Steps 0..step are committed before the checkpoint is registered, so a
     * registered checkpoint always has its rows behind it (reopen relies on it). */
    ls_status st = runlog_flush(s->db, err);
    if (st != LS_OK)
        return st;
    const int64_t step = s->st.step;
    const runlog_identity *id;
    if ((st = runlog_get_identity(s->db, 1, &id, err)) != LS_OK)
        return st;
    char path[PATH_MAX + 96];
    /* The name is ours by construction (identity, run, step), but the file
     * at it may not be: one that is not ours is never replaced. */
    int k;
    for (k = 1; k <= 9; k++) {
        char alt[8] = "";
        if (k > 1)
            snprintf(alt, sizeof alt, ".%d", k);
        int w = snprintf(path, sizeof path, "%s/%.16s-run-%lld-step-%lld%s.ckpt", s->ckpt_dir, id->hex,
                         (long long)s->st.run_id, (long long)step, alt);
        if (w < 0 || (size_t)w >= sizeof path)
            return ls_fail(err, LS_EINVAL, "%s: checkpoint path too long", s->ckpt_dir);
        struct stat sb;
        if (lstat(path, &sb) != 0 && errno == ENOENT)
            break;
        if (session_owns(s, path, step))
            break;
    }
    if (k > 9)
        return ls_fail(err, LS_EEXIST, "%s: every name for the checkpoint of step %lld is taken by a file this "
                       "database did not write", path, (long long)step);
    size_t ob;
    void *os = trainer_optim_state(s->t, &ob);
    uint64_t sh;
    ckpt_owner owner;
    memcpy(owner.db_id, id->id, CKPT_DBID_BYTES);
    owner.run_id = s->st.run_id;
    if ((st = ckpt_save_owned(path, &owner, s->st.config_hash, step, trainer_params(s->t), trainer_n_params(s->t),
                              os, ob, &sh, err)) != LS_OK)
        return st;
    if ((st = runlog_checkpoint(s->db, s->st.run_id, step, path, sh, err)) != LS_OK)
        return st;
    s->st.checkpoints++;
    s->last_ckpt_step = step;
    return prune_checkpoints(s, err);
}

/* ---- audit ------------------------------------------------------------------------------ */

static const char *reason_of(const ls_err *e, const char *path);

/* LS_REOPEN_AUDIT, after step `step` was recomputed and found as recorded:
 * every checkpoint registered at that step must be a sound file whose state
 * hash is the registered one and whose contents are the recomputed state —
 * the current parameters and optimiser state encoded as the file's own
 * header says (its owner) give its checksum. Anything else, a missing file
 * included, is LS_EMISMATCH naming the file and the step. */
static ls_status audit_checkpoints(ls_session *s, int64_t step, ls_err *err)
{
    const size_t n = trainer_n_params(s->t);
    size_t ob;
    const void *os = trainer_optim_state(s->t, &ob);
    const float *params = trainer_params(s->t);
    for (size_t i = 0; i < s->n_audit_ck; i++) {
        const runlog_ckpt *k = &s->audit_ck[i];
        if (k->step != step)
            continue;
        float *fp = malloc(n * sizeof(float) + ob + 1);
        if (fp == NULL)
            return ls_fail(err, LS_ENOMEM, "audit: out of memory for a checkpoint");
        unsigned char *fo = (unsigned char *)(fp + n);
        ckpt_expect want = { s->st.config_hash, n, ob, NULL, 0, s->st.run_id };
        ckpt_info info;
        ls_err why;
        why.msg[0] = 0;
        ls_status st = ckpt_load_checked(k->path, &want, fp, fo, &info, &why);
        if (st == LS_ENOMEM) {
            free(fp);
            *err = why;
            return st;
        }
        if (st != LS_OK) {
            free(fp);
            return ls_fail(err, LS_EMISMATCH, "step %lld: checkpoint %s: %s", (long long)step, k->path,
                           reason_of(&why, k->path));
        }
        if (info.step != step || info.state_hash != k->state_hash) {
            free(fp);
            return ls_fail(err, LS_EMISMATCH, "step %lld: checkpoint %s holds step %lld with state hash %016llx; "
                           "registered: step %lld, state hash %016llx", (long long)step, k->path,
                           (long long)info.step, (unsigned long long)info.state_hash, (long long)k->step,
                           (unsigned long long)k->state_hash);
        }
        const int same_state = memcmp(fp, params, n * sizeof(float)) == 0 && (ob == 0 || memcmp(fo, os, ob) == 0);
        free(fp);
        uint64_t sh = info.state_hash;
        if (info.has_owner) {
            /* The state hash the recomputed state gives, written as this file was. */
            const size_t bytes = ckpt_image_bytes(n, ob);
            unsigned char *img = bytes > 0 ? malloc(bytes) : NULL;
            if (img == NULL)
                return ls_fail(err, LS_ENOMEM, "audit: out of memory for a checkpoint image");
            st = ckpt_encode_owned(img, bytes, &info.owner, s->st.config_hash, step, params, n, os, ob, &sh, err);
            free(img);
            if (st != LS_OK)
                return st;
        }
        if (sh != info.state_hash)
            return ls_fail(err, LS_EMISMATCH, "step %lld: checkpoint %s has state hash %016llx; the recomputed "
                           "state gives %016llx", (long long)step, k->path, (unsigned long long)info.state_hash,
                           (unsigned long long)sh);
        if (!same_state)
            return ls_fail(err, LS_EMISMATCH, "step %lld: checkpoint %s (state hash %016llx) holds parameters or "
                           "an optimiser state other than the recomputed ones", (long long)step, k->path,
                           (unsigned long long)info.state_hash);
    }
    return LS_OK;
}

static ls_status session_keep(ls_session *s, ls_err *err);

/* ---- the step ---------------------------------------------------------------------------- */

static int same_step(const ls_step *a, const ls_step *b)
{
    return a->has_loss == b->has_loss && (!a->has_loss || a->loss_bits == b->loss_bits) &&
           a->param_hash == b->param_hash && a->traj_hash == b->traj_hash;
}

ls_status ls_session_step(ls_session *s, double *loss_out, ls_err *err)
{
    if (s->t == NULL)
        return ls_fail(err, LS_EINVAL, "run %lld is done: nothing to step", (long long)s->st.run_id);
    const int64_t step = s->st.step + 1;
    double loss, a = trainer_clock();
    ls_status st = trainer_step(s->t, &loss, err);
    double b = trainer_clock();
    s->st.train_seconds += b - a;
    const trainer_times *parts = trainer_step_times(s->t);   /* since this session created the trainer */
    s->st.prepare_seconds = parts->prepare;
    s->st.phase_seconds = parts->phases;
    s->st.leaf_seconds = parts->leaves;
    s->st.finish_seconds = parts->finish;
    s->st.update_seconds = parts->update;
    s->st.busy_workers = 0;
    for (int w = 0; w < trainer_threads(s->t); w++)
        s->st.busy_workers += trainer_worker_leaves(s->t)[w] > 0;
    if (st != LS_OK)
        return st;
    const uint64_t ph = trainer_param_hash(s->t);
    const uint64_t traj = hash_traj_next(s->st.traj_hash, ph, loss);
    double d = trainer_clock();
    s->st.hash_seconds += d - b;
    ls_step row = { step, 1, hash_loss_bits(loss), ph, traj, b - a };
    const int replay = step <= s->last_recorded;
    if (replay) {
        const ls_step *want = &s->recorded[step];
        if (!same_step(&row, want))
            return ls_fail(err, LS_EMISMATCH,
                           "step %lld: recomputed loss %.17g (%016llx), param hash %016llx, trajectory %016llx; "
                           "the record has loss %.17g (%016llx), param hash %016llx, trajectory %016llx",
                           (long long)step, loss, (unsigned long long)row.loss_bits, (unsigned long long)ph,
                           (unsigned long long)traj, hash_bits_to_double(want->loss_bits),
                           (unsigned long long)want->loss_bits, (unsigned long long)want->param_hash,
                           (unsigned long long)want->traj_hash);
        s->st.replayed++;
    } else if (s->db != NULL && s->recording && (st = runlog_step(s->db, s->st.run_id, &row, err)) != LS_OK) {
        return st;
    }
    s->st.step = step;
    s->st.loss = loss;
    s->st.param_hash = ph;
    s->st.traj_hash = traj;
    if (loss_out != NULL)
        *loss_out = loss;
    if (replay && s->how == LS_REOPEN_AUDIT && (st = audit_checkpoints(s, step, err)) != LS_OK)
        return st;
    if (s->db != NULL && s->recording && s->ckpt_every > 0 && step % s->ckpt_every == 0)
        if ((st = ls_session_checkpoint(s, err)) != LS_OK)
            return st;
    s->st.record_seconds += trainer_clock() - d;
    if (s->opts.progress != NULL)
        s->opts.progress(s->opts.progress_ctx, &s->st, replay);
    return LS_OK;
}

ls_status ls_session_evaluate(ls_session *s, ls_metric *out, size_t *n_out, ls_err *err)
{
    *n_out = 0;
    if (s->t == NULL)
        return ls_fail(err, LS_EINVAL, "run %lld is done: nothing to evaluate", (long long)s->st.run_id);
    ls_status st = trainer_metrics(s->t, out, n_out, err);
    if (st != LS_OK)
        return st;
    for (size_t i = 0; i < *n_out && s->db != NULL && s->recording; i++)
        if ((st = runlog_eval(s->db, s->st.run_id, s->st.step, out[i].name, out[i].value, err)) != LS_OK)
            return st;
    return LS_OK;
}

ls_status ls_session_train(ls_session *s, int64_t until, int64_t eval_every, const volatile int *stop,
                           ls_metric *out, size_t *n_out, ls_err *err)
{
    ls_metric scratch[LS_MAX_METRICS];
    size_t n_scratch = 0;
    if (out == NULL)
        out = scratch;
    if (n_out == NULL)
        n_out = &n_scratch;
    *n_out = 0;
    const int64_t target = until > 0 ? until : s->st.target;
    if (eval_every <= 0)
        eval_every = s->eval_every;
    ls_status st = LS_OK;
    while (s->st.step < target) {
        if (stop != NULL && *stop)
            return ls_fail(err, LS_EINTR, "interrupted after step %lld", (long long)s->st.step);
        if ((st = ls_session_step(s, NULL, err)) != LS_OK)
            return st;
        if (eval_every > 0 && s->st.step % eval_every == 0 && s->st.step != target)
            if ((st = ls_session_evaluate(s, out, n_out, err)) != LS_OK)
                return st;
    }
    return s->t != NULL ? ls_session_evaluate(s, out, n_out, err) : LS_OK;
}

/* ---- opening ------------------------------------------------------------------------------- */

/* This process works on the run from now on: its row in run_processes, and
 * the run's evaluation interval kept (or read back) with the run. */
static ls_status session_claim(ls_session *s, const char *host, const char *cflags, ls_err *err)
{
    char build[512], value[32];
    snprintf(build, sizeof build, "lockstep %s; %s; %s%s%s", LS_VERSION_STRING, LS_BUILD_CC, cflags,
             LS_BUILD_GIT[0] ? "; git " : "", LS_BUILD_GIT);
    ls_status st = runlog_process_begin(s->db, s->st.run_id, host, s->st.threads, build, s->st.step, &s->process_id,
                                        err);
    if (st != LS_OK || (st = session_keep(s, err)) != LS_OK)
        return st;
    if (s->opts.eval_every > 0) {
        s->eval_every = s->opts.eval_every;
        snprintf(value, sizeof value, "%lld", (long long)s->eval_every);
        return runlog_setting_set(s->db, s->st.run_id, "eval_every", value, err);
    }
    if (runlog_setting_get(s->db, s->st.run_id, "eval_every", value, sizeof value))
        s->eval_every = strtoll(value, NULL, 10);
    return LS_OK;
}

/* How many checkpoints the run keeps: the options' (kept with the run, so
 * a resume goes on with it), else the run's recorded one, else
 * LS_KEEP_CHECKPOINTS. */
static ls_status session_keep(ls_session *s, ls_err *err)
{
    char value[32];
    s->keep_ckpt = LS_KEEP_CHECKPOINTS;
    if (s->opts.keep_checkpoints != 0) {
        s->keep_ckpt = s->opts.keep_checkpoints < 0 ? 0 : s->opts.keep_checkpoints;
        snprintf(value, sizeof value, "%lld", (long long)s->keep_ckpt);
        return runlog_setting_set(s->db, s->st.run_id, "keep_checkpoints", value, err);
    }
    if (runlog_setting_get(s->db, s->st.run_id, "keep_checkpoints", value, sizeof value))
        s->keep_ckpt = strtoll(value, NULL, 10);
    return LS_OK;
}

static ls_status session_new(ls_session **out, const ls_session_opts *opts, ls_err *err)
{
    ls_session *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ls_fail(err, LS_ENOMEM, "session: out of memory");
    static const ls_session_opts none;
    s->opts = opts != NULL ? *opts : none;
    s->st.run_id = -1;
    s->process_id = -1;
    s->last_ckpt_step = -1;
    s->last_recorded = -1;
    s->st.threads = s->opts.threads > 0 ? s->opts.threads : pool_online_cpus();
    if (s->st.threads > POOL_MAX_THREADS) {
        int asked = s->opts.threads;
        free(s);
        return ls_fail(err, LS_EINVAL, "--threads: %d is out of range (1..%d)", asked, POOL_MAX_THREADS);
    }
    if (s->opts.db != NULL) {
        if (strlen(s->opts.db) >= sizeof s->db_path) {
            free(s);
            return ls_fail(err, LS_EINVAL, "--db: the path is too long");
        }
        snprintf(s->db_path, sizeof s->db_path, "%s", s->opts.db);
    }
    s->opts.db = NULL;              /* the copies above outlive the caller's strings */
    s->opts.name = NULL;
    s->opts.checkpoint_dir = NULL;
    if (opts != NULL && opts->checkpoint_dir != NULL && s->db_path[0] != '\0') {
        ls_status st = checkpoint_dir(opts->checkpoint_dir, NULL, s->ckpt_dir, sizeof s->ckpt_dir, err);
        if (st != LS_OK) {
            free(s);
            return st;
        }
    }
    *out = s;
    return LS_OK;
}

static void session_free(ls_session *s)
{
    trainer_destroy(s->t);
    runlog_close(s->db);
    free(s->recorded);
    runlog_checkpoints_free(s->audit_ck, s->n_audit_ck);
    free(s);
}

ls_status ls_session_open(ls_session **out, const ls_config *cfg_in, const ls_session_opts *opts, ls_err *err)
{
    *out = NULL;
    ls_session *s = NULL;
    ls_status st = session_new(&s, opts, err);
    if (st != LS_OK)
        return st;
    ls_config cfg = *cfg_in;
    s->st.target = s->opts.steps > 0 ? s->opts.steps : config_default_steps(&cfg);
    s->ckpt_every = s->db_path[0] ? s->opts.checkpoint_every : 0;
    if (s->ckpt_every > 0 && s->ckpt_dir[0] == '\0' &&
        (st = checkpoint_dir(NULL, s->db_path, s->ckpt_dir, sizeof s->ckpt_dir, err)) != LS_OK)
        goto fail;
    if (s->db_path[0] && (st = runlog_open(&s->db, s->db_path, err)) != LS_OK)
        goto fail;
    s->recording = s->db != NULL;
    if ((st = trainer_create(&s->t, &cfg, s->st.threads, s->opts.data, err)) != LS_OK)
        goto fail;
    char text[CONFIG_TEXT_MAX];
    config_text(&cfg, text, sizeof text);
    s->st.config_hash = config_hash(&cfg);
    s->st.flops_per_sample = trainer_model(s->t)->info.flops_per_sample;
    s->st.param_hash = hash_params(trainer_params(s->t), trainer_n_params(s->t));
    s->st.traj_hash = hash_traj0(text, s->st.param_hash);
    if (s->db != NULL) {
        char host[128] = "unknown", cpu[128], cflags[256];
        gethostname(host, sizeof host - 1);
        read_cpu_model(cpu, sizeof cpu);
        snprintf(cflags, sizeof cflags, "%s; simd %s", LS_BUILD_CFLAGS, dense_simd_name());
        char sources[LS_MAX_SOURCES * (LS_SOURCE_MAX + 40)];
        config_source_text(&cfg, sources, sizeof sources);
        runlog_run_info info = {
            .name = opts != NULL ? opts->name : NULL, .model = cfg.model, .task = cfg.task, .config_text = text,
            .config_hash = s->st.config_hash, .engine_version = "lockstep " LS_VERSION_STRING,
            .compiler = LS_BUILD_CC, .cflags = cflags, .host = host, .cpu = cpu,
            .git_commit = LS_BUILD_GIT[0] ? LS_BUILD_GIT : NULL, .threads = s->st.threads,
            .reduce = cfg.reduce, .target_steps = s->st.target, .checkpoint_every = s->ckpt_every,
            .checkpoint_dir = s->ckpt_every > 0 ? s->ckpt_dir : NULL, .source_text = sources,
        };
        if ((st = runlog_run_begin(s->db, &info, &s->st.run_id, err)) != LS_OK)
            goto fail;
        ls_step row = { 0, 0, 0, s->st.param_hash, s->st.traj_hash, 0.0 };
        if ((st = runlog_step(s->db, s->st.run_id, &row, err)) != LS_OK ||
            (st = session_claim(s, host, cflags, err)) != LS_OK) {
            ls_session_close(s, st, NULL);
            return st;
        }
    }
    crash_arm(s->t, s->db);
    *out = s;
    return LS_OK;
fail:
    session_free(s);
    return st;
}

static ls_status reopen_checkpoint(ls_session *s, const runlog_run *run, ls_err *err);

/* Everything that can be checked before the run is claimed: the config, the
 * trainer, the step rows and the newest checkpoint at or before the last
 * step row (a newer registration can only be one a live writer made after
 * the rows were read). Leaves the trainer at the checkpoint's step. Errors
 * other than LS_EMISMATCH (the record and the recomputation disagree) are
 * bad input. */
static ls_status reopen_prepare(ls_session *s, const runlog_run *run, ls_err *err)
{
    ls_status st;
    ls_config cfg;
    char what[64 + RUNLOG_NAME_BYTES];
    snprintf(what, sizeof what, "run %lld '%s'", (long long)run->id, run->name);
    if ((st = config_parse_text(&cfg, run->config_text, what, err)) != LS_OK)
        return st;
    char text[CONFIG_TEXT_MAX];
    config_text(&cfg, text, sizeof text);
    if (strcmp(text, run->config_text) != 0 || config_hash(&cfg) != run->config_hash)
        return ls_fail(err, LS_EFORMAT, "%s: the recorded config does not read back to the same canonical text "
                       "and hash (recorded by another lockstep version?)", what);
    /* Where the data were: the same files again (their identity is checked
     * against the config's data_hash when they load). */
    for (const char *p = run->source_text; p != NULL && *p;) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        char line[LS_SOURCE_MAX + 64];
        const char *eq = memchr(p, '=', ll);
        if (ll >= sizeof line || eq == NULL)
            return ls_fail(err, LS_EFORMAT, "%s: a recorded source line is malformed", what);
        memcpy(line, p, ll);
        line[ll] = '\0';
        line[eq - p] = '\0';
        if ((st = config_set(&cfg, line, line + (eq - p) + 1, 0, err)) != LS_OK)
            return LS_EFORMAT;
        p += ll + (eol ? 1 : 0);
    }
    if ((st = trainer_create(&s->t, &cfg, s->st.threads, s->opts.data, err)) != LS_OK)
        return st;
    s->st.config_hash = config_hash(&cfg);
    const size_t n = trainer_n_params(s->t);

    size_t n_rec;
    if ((st = runlog_read_steps(s->db, run->id, &s->recorded, &n_rec, err)) != LS_OK)
        return st;
    for (size_t i = 0; i < n_rec; i++)
        if (s->recorded[i].step != (int64_t)i)
            return ls_fail(err, LS_EFORMAT, "%s: the step rows have a gap before step %lld", what,
                           (long long)s->recorded[i].step);
    s->last_recorded = (int64_t)n_rec - 1;

    /* θ_0 is recomputed whatever happens next: the record's step 0 must match. */
    s->st.param_hash = hash_params(trainer_params(s->t), n);
    s->st.traj_hash = hash_traj0(text, s->st.param_hash);
    if (n_rec > 0 && (s->recorded[0].param_hash != s->st.param_hash || s->recorded[0].traj_hash != s->st.traj_hash))
        return ls_fail(err, LS_EMISMATCH, "step 0: recomputed param hash %016llx, trajectory %016llx; the record "
                       "has param hash %016llx, trajectory %016llx", (unsigned long long)s->st.param_hash,
                       (unsigned long long)s->st.traj_hash, (unsigned long long)s->recorded[0].param_hash,
                       (unsigned long long)s->recorded[0].traj_hash);

    if (s->how == LS_REOPEN_AUDIT)
        return LS_OK;   /* an audit starts at θ_0 whatever checkpoints there are */
    return reopen_checkpoint(s, run, err);
}

/* Appends one part to the note ("; " between parts), cut (with "...")
 * when it is full. */
static void note_add(ls_session *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void note_add(ls_session *s, const char *fmt, ...)
{
    size_t used = strlen(s->note), cap = sizeof s->note;
    if (used > 0 && used + 3 < cap) {
        memcpy(s->note + used, "; ", 3);
        used += 2;
    }
    if (used + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(s->note + used, cap - used, fmt, ap);
    va_end(ap);
    if (w >= 0 && (size_t)w >= cap - used)
        memcpy(s->note + cap - 4, "...", 4);
}

/* The reason in an error line about path: the line without its "path: ". */
static const char *reason_of(const ls_err *e, const char *path)
{
    size_t n = strlen(path);
    if (strncmp(e->msg, path, n) == 0 && e->msg[n] == ':' && e->msg[n + 1] == ' ')
        return e->msg + n + 2;
    return e->msg[0] ? e->msg : "unknown";
}

/* Checks registered checkpoint k against the file, the database and the
 * record; on success θ and the optimiser state are in params/opt. Any
 * failure is a reason in why (LS_ENOMEM alone is returned as an error). */
static ls_status try_checkpoint(ls_session *s, const runlog_run *run, const runlog_ckpt *k, float *params, void *opt,
                                size_t n, size_t ob, ls_err *why)
{
    /* This database's identity and its ancestors': a copy loads the
     * checkpoints it inherited (loading is harmless; deleting is not). A
     * restore only reads: the identity as stored will do. */
    const runlog_identity *id;
    ls_status st = runlog_get_identity(s->db, s->how == LS_REOPEN_RESUME, &id, why);
    if (st != LS_OK)
        return st == LS_ENOMEM ? st : LS_EFORMAT;
    unsigned char ids[(1 + RUNLOG_MAX_ANCESTORS) * CKPT_DBID_BYTES];
    size_t n_ids = 0;
    static const unsigned char nobody[CKPT_DBID_BYTES];
    if (memcmp(id->id, nobody, CKPT_DBID_BYTES) != 0)   /* none stored: only ancestors (none) */
        memcpy(ids + CKPT_DBID_BYTES * n_ids++, id->id, CKPT_DBID_BYTES);
    for (size_t i = 0; i < id->n_ancestors; i++)
        memcpy(ids + CKPT_DBID_BYTES * n_ids++, id->ancestors[i], CKPT_DBID_BYTES);
    if (n_ids == 0)
        memset(ids, 0xff, CKPT_DBID_BYTES);   /* named in messages only: matches no file written here */
    ckpt_expect want = { s->st.config_hash, n, ob, ids, n_ids, run->id };
    ckpt_info info;
    st = ckpt_load_checked(k->path, &want, params, opt, &info, why);
    if (st == LS_ENOMEM)
        return st;
    if (st != LS_OK)
        return LS_EFORMAT;
    /* A version-1 file names no owner: the registered state hash below is
     * all that ties it to this run. */
    if (info.step != k->step)
        return ls_fail(why, LS_EFORMAT, "%s: holds step %lld but is registered as step %lld", k->path,
                       (long long)info.step, (long long)k->step);
    if (info.state_hash != k->state_hash)
        return ls_fail(why, LS_EFORMAT, "%s: state hash %016llx differs from the %016llx registered for it",
                       k->path, (unsigned long long)info.state_hash, (unsigned long long)k->state_hash);
    const uint64_t ph = hash_params(params, n);
    const ls_step *rec = &s->recorded[info.step];
    if (ph != rec->param_hash)
        return ls_fail(why, LS_EMISMATCH, "%s: its parameters hash to %016llx, the record has %016llx at step %lld",
                       k->path, (unsigned long long)ph, (unsigned long long)rec->param_hash, (long long)info.step);
    return LS_OK;
}

/* The newest usable registered checkpoint at or before the last step row,
 * loaded into the trainer; none: the trainer stays at step 0. */
static ls_status reopen_checkpoint(ls_session *s, const runlog_run *run, ls_err *err)
{
    runlog_ckpt *ck;
    size_t n_ck;
    ls_status st = runlog_checkpoints(s->db, run->id, &ck, &n_ck, err);
    if (st != LS_OK)
        return st;
    size_t use = n_ck;
    while (use > 0 && ck[use - 1].step > s->last_recorded)
        use--;
    if (use == 0) {
        runlog_checkpoints_free(ck, n_ck);
        return LS_OK;
    }
    const size_t n = trainer_n_params(s->t);
    size_t ob;
    void *os = trainer_optim_state(s->t, &ob);
    /* Loaded aside first, so a file that fails a later check leaves θ_0 and
     * the optimiser's initial state untouched. */
    float *params = malloc(n * sizeof(float) + ob + 1);
    if (params == NULL) {
        runlog_checkpoints_free(ck, n_ck);
        return ls_fail(err, LS_ENOMEM, "run %lld: out of memory for a checkpoint", (long long)run->id);
    }
    unsigned char *opt = (unsigned char *)(params + n);
    const runlog_ckpt *used = NULL;
    int passed_over = 0;
    for (size_t i = use; i-- > 0 && used == NULL;) {
        if (i + 1 < use && strcmp(ck[i].path, ck[i + 1].path) == 0 && ck[i].step == ck[i + 1].step)
            continue;   /* the same registration twice (a step checkpointed again) */
        ls_err why;
        why.msg[0] = 0;
        st = try_checkpoint(s, run, &ck[i], params, opt, n, ob, &why);
        if (st == LS_ENOMEM) {
            *err = why;
            break;
        }
        if (st == LS_OK) {
            used = &ck[i];
        } else {
            note_add(s, "checkpoint %s unusable (%s)", ck[i].path, reason_of(&why, ck[i].path));
            passed_over = 1;
        }
    }
    if (st == LS_ENOMEM) {
        free(params);
        runlog_checkpoints_free(ck, n_ck);
        return st;
    }
    if (used != NULL) {
        memcpy(trainer_params_mut(s->t), params, n * sizeof(float));
        if (ob > 0)
            memcpy(os, opt, ob);
        const int64_t step = used->step;
        trainer_set_steps_done(s->t, step);
        s->st.param_hash = s->recorded[step].param_hash;
        s->st.traj_hash = s->recorded[step].traj_hash;
        s->st.resumed_from = step;
        s->st.step = step;
        s->st.loss = s->recorded[step].has_loss ? hash_bits_to_double(s->recorded[step].loss_bits) : 0;
        snprintf(s->st.checkpoint_path, sizeof s->st.checkpoint_path, "%s", used->path);
        if (passed_over)
            note_add(s, "%s from %s (step %lld)", s->how == LS_REOPEN_RESTORE ? "restored" : "resumed", used->path,
                     (long long)step);
    } else if (passed_over) {
        note_add(s, "%s from step 0", s->how == LS_REOPEN_RESTORE ? "restored" : "resumed");
    }
    free(params);
    runlog_checkpoints_free(ck, n_ck);
    return LS_OK;
}

static ls_status reopen_resume(ls_session *s, const runlog_run *run, ls_err *err)
{
    ls_status st;
    if (strcmp(run->status, "running") == 0)
        return ls_fail(err, LS_EEXIST, "run %lld '%s' is running (process %lld); it can be resumed once it stops",
                       (long long)run->id, run->name, (long long)run->pid);
    if (strcmp(run->status, "diverged") == 0)
        return ls_fail(err, LS_EINVAL, "run %lld '%s' diverged after step %lld: resuming would diverge again",
                       (long long)run->id, run->name, (long long)run->n_steps);
    s->st.target = s->opts.steps > 0 ? s->opts.steps : run->target_steps > 0 ? run->target_steps : run->n_steps;
    if (s->st.target < run->n_steps)
        return ls_fail(err, LS_EINVAL, "--steps: %lld is below the %lld steps run %lld has recorded",
                       (long long)s->st.target, (long long)run->n_steps, (long long)run->id);
    if (strcmp(run->status, "done") == 0 && s->st.target <= run->n_steps) {
        s->st.done_already = 1;
        s->st.step = run->n_steps;
        s->st.traj_hash = run->last_traj_hash;
        s->recording = 0;
        return LS_OK;
    }
    if (s->st.target < 1)
        return ls_fail(err, LS_EINVAL, "run %lld '%s' has no recorded step count: give --steps", (long long)run->id,
                       run->name);
    s->ckpt_every = s->opts.checkpoint_every > 0 ? s->opts.checkpoint_every : run->checkpoint_every;
    if (s->ckpt_every > 0 && s->ckpt_dir[0] == '\0') {
        /* The run's own directory gone bad (now a file, no permission) does
         * not stop the run: it continues without checkpoints, and says so. A
         * directory the caller names, or the default, is the caller's to fix. */
        ls_err why;
        why.msg[0] = 0;
        st = checkpoint_dir(run->checkpoint_dir, s->db_path, s->ckpt_dir, sizeof s->ckpt_dir, &why);
        if (st != LS_OK && run->checkpoint_dir == NULL) {
            *err = why;
            return st;
        }
        if (st != LS_OK) {
            note_add(s, "checkpoint directory %s unusable (%s); resuming without checkpoints", run->checkpoint_dir,
                     reason_of(&why, run->checkpoint_dir));
            s->ckpt_every = 0;
            s->ckpt_dir[0] = '\0';
        }
    }
    if ((st = reopen_prepare(s, run, err)) != LS_OK)
        return st;
    if ((st = runlog_run_resume(s->db, run->id, s->st.target, s->ckpt_every, s->ckpt_every > 0 ? s->ckpt_dir : NULL,
                                err)) != LS_OK)
        return st;
    s->recording = 1;
    {
        char host[128] = "unknown", cflags[256];
        gethostname(host, sizeof host - 1);
        snprintf(cflags, sizeof cflags, "%s; simd %s", LS_BUILD_CFLAGS, dense_simd_name());
        if ((st = session_claim(s, host, cflags, err)) != LS_OK)
            return st;
    }
    crash_arm(s->t, s->db);
    if (s->last_recorded < 0) {
        /* Killed before its first commit: step 0 is recorded now. */
        ls_step row0 = { 0, 0, 0, s->st.param_hash, s->st.traj_hash, 0.0 };
        if ((st = runlog_step(s->db, run->id, &row0, err)) != LS_OK)
            return st;
    }
    return LS_OK;
}

static ls_status reopen_restore(ls_session *s, const runlog_run *run, ls_err *err)
{
    ls_status st = reopen_prepare(s, run, err);
    if (st != LS_OK)
        return st;
    if (s->last_recorded < 0)
        return ls_fail(err, LS_EINVAL, "run %lld '%s' has no recorded steps", (long long)run->id, run->name);
    /* Every step after the checkpoint is one the record has: each is
     * recomputed, compared, and nothing is recorded. */
    s->st.target = s->last_recorded;
    while (s->st.step < s->last_recorded)
        if ((st = ls_session_step(s, NULL, err)) != LS_OK)
            return st;
    return LS_OK;
}

/* Like a restore, but from θ_0 whatever checkpoints there are: the config,
 * the data and step 0 are checked now, every later step by ls_session_step
 * (audit_checkpoints at the steps that have checkpoints). */
static ls_status reopen_audit(ls_session *s, const runlog_run *run, ls_err *err)
{
    ls_status st = reopen_prepare(s, run, err);
    if (st != LS_OK)
        return st;
    if (s->last_recorded < 0)
        return ls_fail(err, LS_EINVAL, "run %lld '%s' has no recorded steps", (long long)run->id, run->name);
    s->st.target = s->last_recorded;
    return runlog_checkpoints(s->db, run->id, &s->audit_ck, &s->n_audit_ck, err);
}

ls_status ls_session_reopen(ls_session **out, const char *db, const char *run_name, int how,
                            const ls_session_opts *opts, ls_err *err)
{
    *out = NULL;
    if (db == NULL || access(db, F_OK) != 0)
        return ls_fail(err, LS_ENOTFOUND, "%s: no such database", db != NULL ? db : "(null)");
    if (how != LS_REOPEN_RESUME && how != LS_REOPEN_RESTORE && how != LS_REOPEN_AUDIT)
        return ls_fail(err, LS_EINVAL, "ls_session_reopen: unknown mode %d", how);
    ls_session_opts o = opts != NULL ? *opts : (ls_session_opts){ 0 };
    o.db = db;
    ls_session *s = NULL;
    ls_status st = session_new(&s, &o, err);
    if (st != LS_OK)
        return st;
    s->how = how;
    if ((st = runlog_open(&s->db, s->db_path, err)) != LS_OK) {
        session_free(s);
        return st;
    }
    runlog_run run;
    memset(&run, 0, sizeof run);
    if ((st = runlog_find(s->db, run_name, &s->st.run_id, err)) == LS_OK &&
        (st = runlog_get_run(s->db, s->st.run_id, &run, err)) == LS_OK)
        st = how == LS_REOPEN_RESUME ? reopen_resume(s, &run, err)
             : how == LS_REOPEN_AUDIT ? reopen_audit(s, &run, err) : reopen_restore(s, &run, err);
    const int claimed = s->recording;
    runlog_run_free(&run);
    if (st != LS_OK) {
        /* A claimed run that then fails ends as failed, not as running. */
        if (claimed)
            ls_session_close(s, st, NULL);
        else
            session_free(s);
        return st;
    }
    *out = s;
    return LS_OK;
}

/* An audit of one segment (engine/audit.c): LS_REOPEN_AUDIT, then, for
 * from > 0, the state of a checkpoint registered at step `from` in place of
 * θ_0. The file must be sound, of that step and config, registered with its
 * state hash, and its parameters must hash as the record has them at that
 * step; its optimiser state the record cannot vouch for, but the segment
 * before this one compares the whole file with its recomputed state at that
 * step, so the earliest finding over all segments is the sequential audit's.
 * None usable: LS_EMISMATCH naming step `from` and the file. */
ls_status session_reopen_segment(ls_session **out, const char *db, int64_t run_id, int64_t from, int64_t to,
                                 const ls_session_opts *opts, ls_err *err)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)run_id);
    ls_session *s = NULL;
    ls_status st = ls_session_reopen(&s, db, id, LS_REOPEN_AUDIT, opts, err);
    if (st != LS_OK)
        return st;
    if (from < 0 || to < from || to > s->last_recorded) {
        const long long last = (long long)s->last_recorded;
        session_free(s);
        return ls_fail(err, LS_EINVAL, "run %lld: no segment %lld..%lld in steps 0..%lld", (long long)run_id,
                       (long long)from, (long long)to, last);
    }
    s->st.target = to;
    if (from == 0) {
        *out = s;
        return LS_OK;
    }
    const size_t n = trainer_n_params(s->t);
    size_t ob;
    void *os = trainer_optim_state(s->t, &ob);
    float *params = malloc(n * sizeof(float) + ob + 1);
    if (params == NULL) {
        session_free(s);
        return ls_fail(err, LS_ENOMEM, "audit: out of memory for a checkpoint");
    }
    unsigned char *opt = (unsigned char *)(params + n);
    ls_err why = { "" };
    const runlog_ckpt *used = NULL;
    st = LS_EMISMATCH;
    for (size_t i = 0; i < s->n_audit_ck && used == NULL; i++) {
        const runlog_ckpt *k = &s->audit_ck[i];
        if (k->step != from)
            continue;
        ckpt_expect want = { s->st.config_hash, n, ob, NULL, 0, run_id };
        ckpt_info info;
        st = ckpt_load_checked(k->path, &want, params, opt, &info, &why);
        if (st == LS_ENOMEM)
            break;
        if (st == LS_OK && (info.step != from || info.state_hash != k->state_hash))
            st = ls_fail(&why, LS_EMISMATCH, "%s: holds step %lld with state hash %016llx; registered: step %lld, "
                         "state hash %016llx", k->path, (long long)info.step, (unsigned long long)info.state_hash,
                         (long long)from, (unsigned long long)k->state_hash);
        if (st == LS_OK && hash_params(params, n) != s->recorded[from].param_hash)
            st = ls_fail(&why, LS_EMISMATCH, "%s: its parameters hash to %016llx, the record has %016llx",
                         k->path, (unsigned long long)hash_params(params, n),
                         (unsigned long long)s->recorded[from].param_hash);
        if (st == LS_OK)
            used = k;
    }
    if (used == NULL) {
        free(params);
        session_free(s);
        if (st == LS_ENOMEM) {
            *err = why;
            return st;
        }
        return ls_fail(err, LS_EMISMATCH, "step %lld: checkpoint: %s", (long long)from,
                       why.msg[0] ? why.msg : "none registered at this step");
    }
    memcpy(trainer_params_mut(s->t), params, n * sizeof(float));
    if (ob > 0)
        memcpy(os, opt, ob);
    free(params);
    trainer_set_steps_done(s->t, from);
    const ls_step *rec = &s->recorded[from];
    s->st.step = from;
    s->st.param_hash = rec->param_hash;
    s->st.traj_hash = rec->traj_hash;
    s->st.loss = rec->has_loss ? hash_bits_to_double(rec->loss_bits) : 0;
    s->st.resumed_from = from;
    snprintf(s->st.checkpoint_path, sizeof s->st.checkpoint_path, "%s", used->path);
    *out = s;
    return LS_OK;
}

/* ---- closing and reading ------------------------------------------------------------------ */

ls_status ls_session_close(ls_session *s, ls_status how, ls_err *err)
{
    if (s == NULL)
        return LS_OK;
    ls_status st = LS_OK;
    /* A run that ends done keeps its last step as a checkpoint: reopening it
     * (export, predict, render) then replays nothing. */
    if (how == LS_OK && s->t != NULL && s->db != NULL && s->recording && s->st.run_id >= 0 &&
        s->st.step > 0 && s->last_ckpt_step != s->st.step && !s->opts.no_final_checkpoint)
        st = ls_session_checkpoint(s, err);
    if (s->db != NULL && s->recording && s->process_id >= 0) {
        ls_err e2;
        ls_status st2 = runlog_process_end(s->db, s->process_id, s->st.step, &e2);
        if (st == LS_OK && st2 != LS_OK) {
            st = st2;
            if (err != NULL)
                *err = e2;
        }
    }
    if (s->db != NULL && s->recording && s->st.run_id >= 0) {
        if (st != LS_OK && how == LS_OK)
            how = st;   /* a run whose final record failed is not done */
        const char *status = how == LS_OK ? "done" : how == LS_EDIVERGED ? "diverged"
                                                   : how == LS_EINTR ? "interrupted" : "failed";
        double t = trainer_clock();
        ls_err e3;
        ls_status st3 = runlog_run_end(s->db, s->st.run_id, status, &e3);
        s->st.record_seconds += trainer_clock() - t;
        if (st == LS_OK && st3 != LS_OK) {
            st = st3;
            if (err != NULL)
                *err = e3;
        }
    }
    session_free(s);
    return st;
}

void ls_session_state_get(const ls_session *s, ls_session_state *out)
{
    *out = s->st;
    snprintf(out->checkpoint_note, sizeof out->checkpoint_note, "%s", s->note);
}

const ls_config *ls_session_config(const ls_session *s)
{
    return s->t != NULL ? trainer_config(s->t) : NULL;
}

const float *ls_session_params(const ls_session *s, size_t *n)
{
    if (s->t == NULL) {
        *n = 0;
        return NULL;
    }
    *n = trainer_n_params(s->t);
    return trainer_params(s->t);
}

trainer *session_trainer(ls_session *s)
{
    return s->t;
}

/* ---- verify ------------------------------------------------------------------------------ */

ls_status ls_verify(const char *db, const char *run_a, const char *run_b, ls_verdict *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    out->first_diff = -1;
    if (db == NULL || access(db, F_OK) != 0)
        return ls_fail(err, LS_ENOTFOUND, "%s: no such database", db != NULL ? db : "(null)");
    runlog *r;
    ls_status st = runlog_open(&r, db, err);
    if (st != LS_OK)
        return st;
    int64_t ids[2];
    runlog_run runs[2];
    memset(runs, 0, sizeof runs);
    ls_step *rows[2] = { NULL, NULL };
    size_t n[2] = { 0, 0 };
    const char *names[2] = { run_a, run_b };
    for (int i = 0; i < 2 && st == LS_OK; i++) {
        if ((st = runlog_find(r, names[i], &ids[i], err)) == LS_OK &&
            (st = runlog_get_run(r, ids[i], &runs[i], err)) == LS_OK)
            st = runlog_read_steps(r, ids[i], &rows[i], &n[i], err);
    }
    if (st == LS_OK) {
        out->steps_a = (int64_t)n[0];
        out->steps_b = (int64_t)n[1];
        out->same_config = runs[0].config_hash == runs[1].config_hash;
        size_t common = n[0] < n[1] ? n[0] : n[1];
        out->steps = (int64_t)common;
        out->equal = 1;
        for (size_t i = 0; i < common; i++) {
            const ls_step *x = &rows[0][i], *y = &rows[1][i];
            int same = x->param_hash == y->param_hash && (i == 0 || x->loss_bits == y->loss_bits);
            if (!same) {
                out->equal = 0;
                out->first_diff = (int64_t)i;
                break;
            }
        }
        if (common == 0)
            out->equal = 0;   /* nothing compared proves nothing */
    }
    for (int i = 0; i < 2; i++) {
        free(rows[i]);
        runlog_run_free(&runs[i]);
    }
    runlog_close(r);
    return st;
}

ls_status session_note_setting(ls_session *s, const char *key, const char *value, ls_err *err)
{
    if (s->db == NULL || !s->recording || s->st.run_id < 0)
        return LS_OK;
    return runlog_setting_set(s->db, s->st.run_id, key, value, err);
}
