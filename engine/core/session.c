/* session.c — one run as a library object (include/lockstep.h): its
 * lifecycle. ls_session_open builds a new run (the trainer, the hashes of
 * step 0, the record), ls_session_step and ls_session_train advance it,
 * ls_session_close ends it. The other concerns of a session live beside
 * this file, sharing engine/core/session_impl.h: the checkpoints it writes
 * and keeps (session_checkpoint.c), a recorded run opened again
 * (session_reopen.c), two runs compared (session_verify.c), the facts of
 * the host and build recorded with a run (session_env.c) and the test-only
 * crash hook (session_crash.c).
 *
 * A new run and a reopened one share one step: it either records the step
 * (a new one) or recomputes it and compares it with the row already recorded
 * (a reopened run re-doing the steps after its checkpoint).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/api_size.h"
#include "engine/core/session_impl.h"
#include "record/hash.h"

/* ---- per-tensor hashes ------------------------------------------------------------------- */

/* One more hash of θ per recorded step, tensor by tensor, so that verify
 * can name the first tensor two runs disagree on. Not in the trajectory:
 * param_hash (LS_HASH_FORMAT 1) stays what it was. The update's threads
 * sum most of each tensor's XXH3 blocks as they write θ (record/hash.h),
 * so what is left here, on one thread, is a few blocks a piece and the
 * join: a whole pass over θ here took ~90 us of a 2-thread MLP step. */
ls_status session_tensor_hashes(ls_session *s, ls_err *err)
{
    size_t n = ls_session_tensor_count(s);
    if (s->thash == NULL || s->n_thash != n || s->parts_of != s->t) {
        trainer_set_tensor_hashes(s->t, NULL);
        hash_tensors_destroy(s->tensor_parts);
        s->tensor_parts = NULL;
        s->parts_of = NULL;
        free(s->thash);
        s->n_thash = 0;
        ls_tensor *ts = calloc(n ? n : 1, sizeof *ts);
        if ((s->thash = malloc((n ? n : 1) * sizeof *s->thash)) == NULL || ts == NULL) {
            free(ts);
            return ls_fail(err, LS_ENOMEM, "out of memory hashing tensors");
        }
        ls_status st = LS_OK;
        for (size_t i = 0; i < n && st == LS_OK; i++) {
            ls_tensor_view v;
            if ((st = ls_session_tensor(s, i, &v, err)) == LS_OK) {
                ts[i] = (ls_tensor){ .name = v.name, .offset = v.offset, .ndim = v.ndim };
                memcpy(ts[i].shape, v.shape, sizeof ts[i].shape);
            }
        }
        if (st == LS_OK)
            st = hash_tensors_create(&s->tensor_parts, ts, n, trainer_n_params(s->t), PLAN_UPDATE_PIECE, err);
        free(ts);
        if (st != LS_OK)
            return st;
        s->n_thash = n;
        s->parts_of = s->t;
    }
    const int fresh = trainer_tensor_parts_fresh(s->t, s->tensor_parts);
    hash_tensors_join(s->tensor_parts, trainer_params(s->t), fresh, s->thash);
    if (!fresh)   /* the next update sums them */
        trainer_set_tensor_hashes(s->t, s->tensor_parts);
    return LS_OK;
}

ls_status session_record_tensors(ls_session *s, ls_err *err)
{
    runlog_tensor *have = NULL;
    size_t n_have = 0;
    ls_status st = runlog_tensors(s->db, s->st.run_id, &have, &n_have, err);
    free(have);
    size_t n = ls_session_tensor_count(s);
    if (st != LS_OK || n_have > 0 || n == 0)
        return st;
    runlog_tensor *rt = calloc(n, sizeof *rt);
    if (rt == NULL)
        return ls_fail(err, LS_ENOMEM, "out of memory recording tensor names");
    for (size_t i = 0; i < n && st == LS_OK; i++) {
        ls_tensor_view v;
        if ((st = ls_session_tensor(s, i, &v, err)) != LS_OK)
            break;
        snprintf(rt[i].name, sizeof rt[i].name, "%s", v.name);
        snprintf(rt[i].dtype, sizeof rt[i].dtype, "float32");
        size_t o = 0;
        for (size_t d = 0; d < v.ndim && o < sizeof rt[i].shape; d++)
            o += (size_t)snprintf(rt[i].shape + o, sizeof rt[i].shape - o, "%s%zu", d ? "x" : "", v.shape[d]);
    }
    if (st == LS_OK)
        st = runlog_tensors_set(s->db, s->st.run_id, rt, n, err);
    free(rt);
    return st;
}

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
    ls_status lst = session_load_data(s, err);
    if (lst != LS_OK)
        return lst;
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
    } else if (s->db != NULL && s->recording) {
        double h0 = trainer_clock();
        if ((st = session_tensor_hashes(s, err)) != LS_OK)
            return st;
        s->st.hash_seconds += trainer_clock() - h0;
        if ((st = runlog_step_tensors(s->db, s->st.run_id, &row, s->thash, s->n_thash, err)) != LS_OK)
            return st;
    }
    s->st.step = step;
    s->st.loss = loss;
    s->st.param_hash = ph;
    s->st.traj_hash = traj;
    if (loss_out != NULL)
        *loss_out = loss;
    if (replay && s->how == LS_REOPEN_AUDIT && (st = session_audit_checkpoints(s, step, err)) != LS_OK)
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
    ls_status st = session_load_data(s, err);
    if (st != LS_OK)
        return st;
    st = trainer_metrics(s->t, out, n_out, err);
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

/* The shape a model is made from when the data are not loaded (a restore
 * that recomputes nothing, session_reopen.c): the class count and the
 * features of a sample, the facts the built-in models other than gnn take
 * from a data set when they are created. */
void session_data_shape_text(const ls_dataset *d, char *out, size_t cap)
{
    snprintf(out, cap, "classes=%zu dim=%zu", d->n_classes, d->train.dim);
}

/* This process works on the run from now on: its row in run_processes, the
 * shape of its data and the run's evaluation interval kept (or read back)
 * with the run. */
ls_status session_claim(ls_session *s, const session_env *env, ls_err *err)
{
    char value[64];
    ls_status st = runlog_process_begin(s->db, s->st.run_id, env->host, s->st.threads, env->build, s->st.step,
                                        &s->process_id, err);
    if (st != LS_OK || (st = session_keep(s, err)) != LS_OK)
        return st;
    const ls_dataset *d = trainer_data(s->t);
    if (d != NULL) {
        session_data_shape_text(d, value, sizeof value);
        if ((st = runlog_setting_set(s->db, s->st.run_id, SESSION_DATA_SHAPE, value, err)) != LS_OK)
            return st;
    }
    if (s->opts.eval_every > 0) {
        s->eval_every = s->opts.eval_every;
        snprintf(value, sizeof value, "%lld", (long long)s->eval_every);
        return runlog_setting_set(s->db, s->st.run_id, "eval_every", value, err);
    }
    if (runlog_setting_get(s->db, s->st.run_id, "eval_every", value, sizeof value))
        s->eval_every = strtoll(value, NULL, 10);
    return LS_OK;
}


ls_status session_new(ls_session **out, const ls_session_opts *opts, ls_err *err)
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
        ls_status st = session_checkpoint_dir(opts->checkpoint_dir, NULL, s->ckpt_dir, sizeof s->ckpt_dir, err);
        if (st != LS_OK) {
            free(s);
            return st;
        }
    }
    *out = s;
    return LS_OK;
}

void session_free(ls_session *s)
{
    trainer_destroy(s->t);
    runlog_close(s->db);
    free(s->recorded);
    free(s->thash);
    hash_tensors_destroy(s->tensor_parts);
    runlog_checkpoints_free(s->audit_ck, s->n_audit_ck);
    free(s);
}

ls_status ls_session_open(ls_session **out, const ls_config *cfg_in, const ls_session_opts *opts, ls_err *err)
{
    *out = NULL;
    if (api_size_session_opts(opts, err) != LS_OK)
        return LS_EINVAL;
    ls_session *s = NULL;
    ls_status st = session_new(&s, opts, err);
    if (st != LS_OK)
        return st;
    ls_config cfg = *cfg_in;
    s->st.target = s->opts.steps > 0 ? s->opts.steps : config_default_steps(&cfg);
    s->ckpt_every = s->db_path[0] ? s->opts.checkpoint_every : 0;
    if (s->ckpt_every > 0 && s->ckpt_dir[0] == '\0' &&
        (st = session_checkpoint_dir(NULL, s->db_path, s->ckpt_dir, sizeof s->ckpt_dir, err)) != LS_OK)
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
        session_env env;
        session_env_read(&env);
        char sources[(LS_MAX_SOURCES + 1) * (LS_SOURCE_MAX + 40)];
        config_source_text(&cfg, sources, sizeof sources);
        runlog_run_info info = {
            .name = opts != NULL ? opts->name : NULL, .model = cfg.model, .task = cfg.task, .config_text = text,
            .config_hash = s->st.config_hash, .engine_version = "lockstep " LS_VERSION_STRING,
            .compiler = env.compiler, .cflags = env.cflags, .host = env.host, .cpu = env.cpu,
            .git_commit = env.git, .threads = s->st.threads,
            .reduce = cfg.reduce, .target_steps = s->st.target, .checkpoint_every = s->ckpt_every,
            .checkpoint_dir = s->ckpt_every > 0 ? s->ckpt_dir : NULL, .source_text = sources,
        };
        if ((st = runlog_run_begin(s->db, &info, &s->st.run_id, err)) != LS_OK)
            goto fail;
        ls_step row = { 0, 0, 0, s->st.param_hash, s->st.traj_hash, 0.0 };
        if ((st = session_record_tensors(s, err)) != LS_OK || (st = session_tensor_hashes(s, err)) != LS_OK ||
            (st = runlog_step_tensors(s->db, s->st.run_id, &row, s->thash, s->n_thash, err)) != LS_OK ||
            (st = session_claim(s, &env, err)) != LS_OK ||
            /* Step 0 committed now, not with the first batch of rows: a run
             * killed in its first steps still has its θ_0 on record. */
            (st = runlog_flush(s->db, err)) != LS_OK) {
            ls_session_close(s, st, NULL);
            return st;
        }
    }
    session_crash_arm(s->t, s->db);
    *out = s;
    return LS_OK;
fail:
    session_free(s);
    return st;
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

ls_status session_need_data(ls_session *s, ls_err *err)
{
    return s->t != NULL ? session_load_data(s, err) : LS_OK;
}

ls_status session_note_setting(ls_session *s, const char *key, const char *value, ls_err *err)
{
    if (s->db == NULL || !s->recording || s->st.run_id < 0)
        return LS_OK;
    return runlog_setting_set(s->db, s->st.run_id, key, value, err);
}
