/* session_reopen.c — a recorded run opened again: ls_session_reopen in its
 * three modes (resume, restore, audit) and session_reopen_segment (an audit
 * of the steps between two checkpoints, engine/core/audit.c).
 *
 * A reopened run shares the step of a new one (engine/core/session.c): it
 * recomputes the steps the record already has and compares them with the
 * rows, and the record is never rewritten, only extended; a reopened run
 * that does not reproduce the record stops at the first step that differs.
 *
 * Reopening (resume or restore) tries the registered checkpoints newest
 * first and takes the first that is sound, this database's (or an
 * ancestor's) for this run, registered with its state hash, and whose
 * parameters hash as the record has them at its step; with none, it starts
 * from step 0 and recomputes every recorded step. Each one passed over is
 * said in the session's note (ls_session_state.checkpoint_note). A checkpoint file
 * never refuses a run: only the record and the recomputation can.
 *
 * A restore whose newest checkpoint is the last recorded step recomputes
 * nothing and loads no data (reopen_without_data): a finished run's
 * weights stay usable after its data moved or changed; the data are
 * loaded, and checked against data_hash, when a step is recomputed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/core/api_size.h"
#include "engine/core/registry.h"
#include "engine/core/session_impl.h"
#include "record/checkpoint.h"
#include "record/hash.h"

static ls_status reopen_checkpoint(ls_session *s, const runlog_run *run, ls_err *err);

/* The recorded config read back (checked to give the same canonical text
 * and hash) with the recorded sources set: the config the run had. */
static ls_status reopen_config(const runlog_run *run, ls_config *cfg, char *text, size_t cap, ls_err *err)
{
    ls_status st;
    char what[64 + RUNLOG_NAME_BYTES];
    snprintf(what, sizeof what, "run %lld '%s'", (long long)run->id, run->name);
    if ((st = config_parse_text(cfg, run->config_text, what, err)) != LS_OK)
        return st;
    config_text(cfg, text, cap);
    if (strcmp(text, run->config_text) != 0 || config_hash(cfg) != run->config_hash)
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
        if ((st = config_set(cfg, line, line + (eq - p) + 1, 0, err)) != LS_OK)
            return LS_EFORMAT;
        p += ll + (eol ? 1 : 0);
    }
    return LS_OK;
}

/* The step rows, and θ_0 of the trainer checked against step 0's. */
static ls_status reopen_rows(ls_session *s, const runlog_run *run, const char *text, ls_err *err)
{
    size_t n_rec;
    ls_status st = runlog_read_steps(s->db, run->id, &s->recorded, &n_rec, err);
    if (st != LS_OK)
        return st;
    for (size_t i = 0; i < n_rec; i++)
        if (s->recorded[i].step != (int64_t)i)
            return ls_fail(err, LS_EFORMAT, "run %lld '%s': the step rows have a gap before step %lld",
                           (long long)run->id, run->name, (long long)s->recorded[i].step);
    s->last_recorded = (int64_t)n_rec - 1;

    /* θ_0 is recomputed whatever happens next: the record's step 0 must match. */
    s->st.param_hash = hash_params(trainer_params(s->t), trainer_n_params(s->t));
    s->st.traj_hash = hash_traj0(text, s->st.param_hash);
    if (n_rec > 0 && (s->recorded[0].param_hash != s->st.param_hash || s->recorded[0].traj_hash != s->st.traj_hash))
        return ls_fail(err, LS_EMISMATCH, "step 0: recomputed param hash %016llx, trajectory %016llx; the record "
                       "has param hash %016llx, trajectory %016llx", (unsigned long long)s->st.param_hash,
                       (unsigned long long)s->st.traj_hash, (unsigned long long)s->recorded[0].param_hash,
                       (unsigned long long)s->recorded[0].traj_hash);
    return LS_OK;
}

/* A restore that recomputes nothing, without the data: a finished run's
 * weights need only its checkpoint, whose parameter hash the record holds,
 * so predict and export work after the data moved or changed; the data
 * are loaded, and their identity checked, only when steps are recomputed
 * (or the session is stepped or evaluated: session_load_data).
 *
 * The model still needs the data's shape. The run records it
 * (SESSION_DATA_SHAPE in run_settings: the class count and the features of
 * a sample), and the model is made from a data set holding that shape and
 * no samples. This is for the built-in models only: mlp, linear and logic
 * read nothing else from a data set when created; gnn reads its graph rows
 * and refuses a data set without them, and a model registered at run time
 * may read anything, so both take the path with the data. Recording the
 * shape keeps the config (and its hash) as it is; the parameter count
 * alone would not give an mlp both its input and its output width.
 *
 * Taken only when it ends where the record does: step 0 recomputed from the
 * shape as recorded, and the newest usable checkpoint at the last recorded
 * step. Anything else — no shape recorded (a run of an older version), a
 * model that cannot be made so, θ_0 or the checkpoints not as the record
 * has them — undoes it and returns 0, and the restore goes the way with the
 * data, which gives today's verdicts and messages. */
static int reopen_without_data(ls_session *s, const runlog_run *run, const ls_config *cfg, const char *text)
{
    if (s->opts.data != NULL || cfg->data_hash == 0)
        return 0;
    int builtin = 0;
    for (size_t i = 0; i < registry_n_builtin_models; i++)
        builtin |= registry_builtin_models[i] == cfg->model_desc;
    char shape_text[96];
    if (!builtin || !runlog_setting_get(s->db, run->id, SESSION_DATA_SHAPE, shape_text, sizeof shape_text))
        return 0;
    ls_dataset shape;
    memset(&shape, 0, sizeof shape);
    int used = 0;
    if (sscanf(shape_text, "classes=%zu dim=%zu%n", &shape.n_classes, &shape.train.dim, &used) != 2 ||
        shape_text[used] != '\0' || shape.n_classes == 0 || shape.train.dim == 0)
        return 0;
    char check[96];
    session_data_shape_text(&shape, check, sizeof check);
    if (strcmp(check, shape_text) != 0)
        return 0;   /* not as session_claim writes it */
    snprintf(shape.name, sizeof shape.name, "%s", cfg->task);
    shape.hash = cfg->data_hash;
    shape.train.n = 1;   /* sizes the trainer's (unused) data order; no sample is there to read */
    shape.test.dim = shape.train.dim;
    ls_config c = *cfg;
    ls_err why = { "" };
    const ls_session_state before = s->st;
    if (trainer_create(&s->t, &c, s->st.threads, &shape, &why) != LS_OK) {
        s->t = NULL;
        return 0;
    }
    trainer_drop_data(s->t);
    s->st.config_hash = config_hash(&c);
    if (reopen_rows(s, run, text, &why) == LS_OK && reopen_checkpoint(s, run, &why) == LS_OK &&
        s->last_recorded >= 0 && s->st.step == s->last_recorded) {
        s->data_lazy = 1;
        return 1;
    }
    trainer_destroy(s->t);
    s->t = NULL;
    s->parts_of = NULL;   /* the tensor hashes are made again for the next trainer */
    free(s->recorded);
    s->recorded = NULL;
    s->last_recorded = -1;
    s->st = before;
    s->note[0] = '\0';
    return 0;
}

ls_status session_load_data(ls_session *s, ls_err *err)
{
    if (!s->data_lazy)
        return LS_OK;
    ls_config cfg = *trainer_config(s->t);
    trainer *t;
    ls_status st = trainer_create(&t, &cfg, s->st.threads, NULL, err);
    if (st != LS_OK)
        return st;
    const size_t n = trainer_n_params(s->t);
    size_t ob, ob_new;
    const void *os = trainer_optim_state(s->t, &ob);
    void *os_new = trainer_optim_state(t, &ob_new);
    if (trainer_n_params(t) != n || ob_new != ob) {
        trainer_destroy(t);
        return ls_fail(err, LS_EMISMATCH, "run %lld: its data do not have the shape the run recorded",
                       (long long)s->st.run_id);
    }
    memcpy(trainer_params_mut(t), trainer_params(s->t), n * sizeof(float));
    if (ob > 0)
        memcpy(os_new, os, ob);
    trainer_set_steps_done(t, trainer_steps_done(s->t));
    trainer_destroy(s->t);
    s->t = t;
    s->parts_of = NULL;
    s->data_lazy = 0;
    return LS_OK;
}

/* Data that are not the run's (LS_EMISMATCH naming data_hash): the message
 * names the files now at the recorded sources, so the user learns which
 * changed ("key=path" as recorded, ", " between them). A run fed from
 * memory has none and keeps the message as it is. */
static void reopen_name_sources(const runlog_run *run, ls_err *err)
{
    char sources[384] = "";
    for (const char *q = run->source_text; q != NULL && *q;) {
        const size_t l = strcspn(q, "\n"), at = strlen(sources);
        snprintf(sources + at, sizeof sources - at, "%s%.*s", at ? ", " : "", (int)l, q);
        q += l + (q[l] == '\n');
    }
    if (sources[0] == '\0')
        return;
    const size_t at = strlen(err->msg);
    snprintf(err->msg + at, sizeof err->msg - at, ": the files now at %s are not the run's data", sources);
}

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
    char text[CONFIG_TEXT_MAX];
    if ((st = reopen_config(run, &cfg, text, sizeof text, err)) != LS_OK)
        return st;
    if (s->how == LS_REOPEN_RESTORE && reopen_without_data(s, run, &cfg, text))
        return LS_OK;
    if ((st = trainer_create(&s->t, &cfg, s->st.threads, s->opts.data, err)) != LS_OK) {
        if (st == LS_EMISMATCH && strncmp(err->msg, "data_hash:", 10) == 0)
            reopen_name_sources(run, err);
        return st;
    }
    s->st.config_hash = config_hash(&cfg);
    if ((st = reopen_rows(s, run, text, err)) != LS_OK)
        return st;
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
        st = session_checkpoint_dir(run->checkpoint_dir, s->db_path, s->ckpt_dir, sizeof s->ckpt_dir, &why);
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
    session_env env;
    session_env_read(&env);
    if ((st = session_claim(s, &env, err)) != LS_OK)
        return st;
    session_crash_arm(s->t, s->db);
    /* The tensor names, unless the run has them (recorded before schema
     * version 2, it gets them now: its later steps have per-tensor hashes). */
    if (s->t != NULL && (st = session_record_tensors(s, err)) != LS_OK)
        return st;
    if (s->last_recorded < 0) {
        /* Killed before its first commit: step 0 is recorded now. */
        ls_step row0 = { 0, 0, 0, s->st.param_hash, s->st.traj_hash, 0.0 };
        if ((st = session_tensor_hashes(s, err)) != LS_OK ||
            (st = runlog_step_tensors(s->db, run->id, &row0, s->thash, s->n_thash, err)) != LS_OK)
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
    if (api_size_session_opts(opts, err) != LS_OK)
        return LS_EINVAL;
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
        (st = runlog_get_run(s->db, s->st.run_id, &run, err)) == LS_OK && run.external)
        st = ls_fail(err, LS_EINVAL, "run %lld was recorded by %s, not trained by lockstep: nothing to re-execute "
                     "(runs, show, verify, report and golden read it)", (long long)run.id, run.framework);
    else if (st == LS_OK)
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

/* An audit of one segment (engine/core/audit.c): LS_REOPEN_AUDIT, then, for
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

/* ---- audit: the checkpoints of a recomputed step ------------------------------------------------------------------------------ */

/* LS_REOPEN_AUDIT, after step `step` was recomputed and found as recorded:
 * every checkpoint registered at that step must be a sound file whose state
 * hash is the registered one and whose contents are the recomputed state —
 * the current parameters and optimiser state encoded as the file's own
 * header says (its owner) give its checksum. Anything else, a missing file
 * included, is LS_EMISMATCH naming the file and the step. */
ls_status session_audit_checkpoints(ls_session *s, int64_t step, ls_err *err)
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
