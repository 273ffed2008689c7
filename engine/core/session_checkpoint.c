/* session_checkpoint.c — the checkpoints a recording session writes and
 * keeps: ls_session_checkpoint (after every checkpoint_every-th step, and
 * of the last step of a run that ends done) and the pruning of the older
 * ones.
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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/core/session_impl.h"
#include "record/checkpoint.h"

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
ls_status session_checkpoint_dir(const char *dir, const char *db_path, char *out, size_t cap, ls_err *err)
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
     * checkpoints concurrently (engine/core/audit.h), so more kept is a faster
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
        ls_status st = session_checkpoint_dir(s->opts.checkpoint_dir, s->db_path, s->ckpt_dir, sizeof s->ckpt_dir, err);
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
