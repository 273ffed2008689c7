/* run.c — the command line's side of a run: the SIGINT/SIGTERM flag, the
 * progress line, the run_result the subcommands print, and finding a
 * recorded run for the commands that read one (cli_open_run). Everything a run
 * does (steps, hashes, record, checkpoints, resume, restore) is the
 * library's session (include/lockstep.h, engine/core/session.c). */
#include "tools/tools.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>


volatile int run_interrupted = 0;

static void on_signal(int sig)
{
    (void)sig;
    /* Atomic: the engine's workers read the flag (a ged or clique search,
     * an audit's segments) while the handler writes it on the main thread. */
    __atomic_store_n(&run_interrupted, 1, __ATOMIC_RELAXED);
}

void run_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* A full disk must fail a write, not kill the process mid-record. */
    signal(SIGXFSZ, SIG_IGN);
}

double run_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- progress ------------------------------------------------------------------------- */

typedef struct {
    const run_opts *o;
    double t0, printed;
    int64_t first;
    size_t batch;
} run_watch;

/* After every step: the optional row capture and the progress line
 * ("replay" for recorded steps being recomputed). */
static void on_step(void *ctx, const ls_session_state *st, int replay)
{
    run_watch *w = ctx;
    if (w->o->rows != NULL)
        w->o->rows[st->step] = (ls_step){ st->step, 1, hash_loss_bits(st->loss), st->param_hash, st->traj_hash, 0 };
    if (!w->o->progress)
        return;
    double now = run_now();
    if (now - w->printed < 0.2 && st->step != st->target)
        return;
    w->printed = now;
    double el = now - w->t0;
    int64_t done = st->step - w->first + 1;
    double sps = el > 0 ? (double)done * (double)w->batch / el : 0;
    double eta = done > 0 ? el / (double)done * (double)(st->target - st->step) : 0;
    fprintf(stderr, "\r%s %lld/%lld  loss %.5f  %.0f samples/s  ETA %.0fs   ", replay ? "replay" : "step",
            (long long)st->step, (long long)st->target, st->loss, sps, eta);
    /* At the end the line is erased, not left between the result rows. */
    if (st->step == st->target)
        fputs("\r\033[K", stderr);
    fflush(stderr);
}

static void run_result_init(run_result *r)
{
    memset(r, 0, sizeof *r);
    r->run_id = -1;
    r->test_acc = -1;
    snprintf(r->status, sizeof r->status, "failed");
}

const char *run_format_metrics(const run_result *r, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n_metrics && at < len; i++) {
        int n = snprintf(buf + at, len - at, "%s%s %.4f", i ? ", " : "", r->metrics[i].name, r->metrics[i].value);
        if (n < 0)
            break;
        at += (size_t)n;
    }
    if (r->n_metrics == 0)
        snprintf(buf, len, "not evaluated");
    return buf;
}

static ls_session_opts session_opts(const run_opts *o, run_watch *w)
{
    ls_session_opts so = {
        .size = sizeof(ls_session_opts),
        .threads = o->threads, .db = o->db_path, .name = o->name, .steps = o->steps,
        .checkpoint_every = o->checkpoint_every, .checkpoint_dir = o->checkpoint_dir, .data = o->data, .eval_every = o->eval_every,
        .no_final_checkpoint = o->no_final_checkpoint, .keep_checkpoints = o->keep_checkpoints,
        .progress = on_step, .progress_ctx = w,
    };
    return so;
}

/* The session's final evaluation over the whole test split
 * (ls_session_train's) cost more than the steps for callers that read no
 * figures (golden check: cnn-short's 20 of 21 s). */
ls_status run_steps(ls_session *s, ls_err *err)
{
    ls_session_state st;
    ls_session_state_get(s, &st);
    for (int64_t step = st.step; step < st.target; step++) {
        if (run_interrupted)
            return ls_fail(err, LS_EINTR, "interrupted after step %lld", (long long)step);
        ls_status rc = ls_session_step(s, NULL, err);
        if (rc != LS_OK)
            return rc;
    }
    return LS_OK;
}

/* Train the session to its target, evaluate (when the caller wants it), close; fills r. */
static ls_status run_drive(ls_session *s, const run_opts *o, run_result *r, ls_err *err)
{
    ls_session_state st;
    ls_session_state_get(s, &st);
    r->run_id = st.run_id;
    r->n_metrics = 0;
    ls_status rc = o->eval_at_end || o->eval_every > 0
                       ? ls_session_train(s, 0, o->eval_every, &run_interrupted, r->metrics, &r->n_metrics, err)
                       : run_steps(s, err);
    if (o->progress && rc != LS_OK)
        fputs("\r\033[K", stderr);   /* the message that follows starts on a clean line */
    if (!o->eval_at_end && rc == LS_OK)
        r->n_metrics = 0;
    ls_session_state_get(s, &st);
    r->steps_done = st.step;
    r->last_loss = st.loss;
    r->traj_hash = st.traj_hash;
    r->param_hash = st.param_hash;
    r->train_seconds = st.train_seconds;
    const double parts[5] = { st.prepare_seconds, st.phase_seconds, st.leaf_seconds, st.finish_seconds,
                              st.update_seconds };
    memcpy(r->part_seconds, parts, sizeof parts);
    r->hash_seconds = st.hash_seconds;
    r->record_seconds = st.record_seconds;
    r->busy_workers = st.busy_workers;
    r->flops_per_sample = st.flops_per_sample;
    r->checkpoints = st.checkpoints;
    r->resumed_from = st.resumed_from;
    r->recomputed = st.replayed;
    r->target_steps = st.target;
    snprintf(r->checkpoint_path, sizeof r->checkpoint_path, "%s", st.checkpoint_path);
    snprintf(r->checkpoint_note, sizeof r->checkpoint_note, "%s", st.checkpoint_note);
    if (st.train_seconds > 0)
        r->samples_per_second = (double)(st.step - st.resumed_from) * (double)o->cfg.batch / st.train_seconds;
    r->test_acc = r->n_metrics > 0 ? r->metrics[0].value : -1;
    snprintf(r->status, sizeof r->status, "%s",
             rc == LS_OK ? "done" : rc == LS_EDIVERGED ? "diverged" : rc == LS_EINTR ? "interrupted" : "failed");
    ls_err e2;
    ls_status rc2 = ls_session_close(s, rc, &e2);
    if (rc == LS_OK && rc2 != LS_OK) {
        *err = e2;
        rc = rc2;
    }
    return rc;
}

ls_status run_train(const run_opts *o, run_result *r, ls_err *err)
{
    run_result_init(r);
    run_watch w = { o, run_now(), 0, 1, o->cfg.batch };
    ls_session_opts so = session_opts(o, &w);
    ls_session *s;
    ls_status st = ls_session_open(&s, &o->cfg, &so, err);
    if (st != LS_OK)
        return st;
    if (o->cfg_out != NULL)
        *o->cfg_out = *ls_session_config(s);
    if (o->rows != NULL) {
        ls_session_state ss;
        ls_session_state_get(s, &ss);
        o->rows[0] = (ls_step){ 0, 0, 0, ss.param_hash, ss.traj_hash, 0 };
    }
    return run_drive(s, o, r, err);
}

ls_status run_resume(const run_opts *o, const char *run, run_result *r, ls_err *err)
{
    run_result_init(r);
    r->bad_input = 1;
    run_watch w = { o, run_now(), 0, 1, 0 };
    ls_session_opts so = session_opts(o, &w);
    so.db = NULL;
    ls_session *s;
    ls_status st = ls_session_reopen(&s, o->db_path, run, LS_REOPEN_RESUME, &so, err);
    if (st != LS_OK) {
        r->bad_input = st != LS_EMISMATCH || cli_input_changed(st, err);
        return st;
    }
    r->bad_input = 0;
    ls_session_state ss;
    ls_session_state_get(s, &ss);
    r->run_id = ss.run_id;
    if (ss.done_already) {
        r->nothing_to_do = 1;
        r->steps_done = ss.step;
        r->traj_hash = ss.traj_hash;
        snprintf(r->status, sizeof r->status, "done");
        ls_session_close(s, LS_OK, NULL);
        return LS_OK;
    }
    w.first = ss.step + 1;
    run_opts o2 = *o;
    o2.cfg = *ls_session_config(s);
    w.batch = o2.cfg.batch;
    return run_drive(s, &o2, r, err);
}

ls_status run_restore(const char *db_path, int64_t run_id, int threads, int progress, ls_session **out,
                      ls_session_state *info, ls_err *err)
{
    memset(info, 0, sizeof *info);
    run_opts o = { .threads = threads, .progress = progress };
    run_watch w = { &o, run_now(), 0, 1, 0 };
    ls_session_opts so = session_opts(&o, &w);
    char run[32];
    snprintf(run, sizeof run, "%lld", (long long)run_id);
    ls_status st = ls_session_reopen(out, db_path, run, LS_REOPEN_RESTORE, &so, err);
    if (st == LS_OK)
        ls_session_state_get(*out, info);
    return st;
}

int cli_open_run(const char *cmd, const char *db_path, const char *id_or_name, runlog **db, runlog_run *run)
{
    ls_err err = { "" };
    *db = NULL;
    /* Readers never create a database: a mistyped path is an error. */
    if (access(db_path, F_OK) != 0) {
        fprintf(stderr, "lockstep %s: %s: no such database\n", cmd, db_path);
        return EXIT_USAGE;
    }
    ls_status st = cli_open_db(db_path, db, &err);
    int64_t id = -1;
    if (st == LS_OK)
        st = runlog_find(*db, id_or_name, &id, &err);
    if (st == LS_OK)
        st = runlog_get_run(*db, id, run, &err);
    if (st != LS_OK) {
        cli_error(cmd, &err, st);
        runlog_close(*db);
        *db = NULL;
        return EXIT_USAGE;
    }
    return EXIT_OK;
}
