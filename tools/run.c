/* run.c — the run driver: engine steps, hashes, the record, checkpoints,
 * resume, progress; and the test-only crash hook (LOCKSTEP_CRASH_AT).
 *
 * A fresh run (run_train) and a resumed one (run_resume) share one step loop.
 * The loop either records a step (a new one) or recomputes it and compares it
 * with the row already recorded (a resumed run re-doing the steps after its
 * checkpoint): the record is never rewritten, only extended, and a resume that
 * would not reproduce the record stops at the first step that differs.
 */
#include "tools.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "../engine/dense.h"
#include "../engine/train.h"
#include "../record/checkpoint.h"
#include "buildinfo.h"

volatile int run_interrupted = 0;

static void on_signal(int sig)
{
    (void)sig;
    run_interrupted = 1;
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

/* ---- environment and progress ------------------------------------------------------ */

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

/* label: "step" for new steps, "replay" for recorded steps being recomputed. */
static void progress_line(const char *label, int64_t step, int64_t first, int64_t target, size_t batch, double loss,
                          double t0, double *printed)
{
    double now = run_now();
    if (now - *printed < 0.2 && step != target)
        return;
    *printed = now;
    double el = now - t0;
    int64_t done = step - first + 1;
    double sps = el > 0 ? (double)done * (double)batch / el : 0;
    double eta = done > 0 ? el / (double)done * (double)(target - step) : 0;
    fprintf(stderr, "\r%s %lld/%lld  loss %.5f  %.0f samples/s  ETA %.0fs   ", label, (long long)step,
            (long long)target, loss, sps, eta);
    if (step == target)
        fputc('\n', stderr);
    fflush(stderr);
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

ls_status run_checkpoint_dir(const char *dir, const char *db_path, char *out, size_t cap, ls_err *err)
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

/* ---- the step loop ---------------------------------------------------------------------- */

typedef struct {
    const run_opts *o;
    run_result *r;
    trainer *t;
    runlog *db;                 /* NULL: nothing recorded */
    int64_t target;             /* last step to reach */
    uint64_t cfg_hash;
    size_t n;                   /* parameters */
    int64_t ckpt_every;         /* 0: no checkpoints */
    char ckpt_dir[PATH_MAX];
    const ls_step *recorded;    /* rows 0..last_recorded, index = step (resume) */
    int64_t last_recorded;      /* -1: nothing recorded yet */
    uint64_t ph, traj;          /* param and trajectory hash after the last step */
    int64_t eval_every;
} run_ctx;

static void run_result_init(run_result *r)
{
    memset(r, 0, sizeof *r);
    r->run_id = -1;
    r->test_acc = -1;
    snprintf(r->status, sizeof r->status, "failed");
}

/* Deletes the run's checkpoints older than the newest RUN_KEEP_CHECKPOINTS:
 * file first, then registration, so a crash in between leaves a row whose
 * file is gone — harmless, as it is never the newest, and retried next time. */
static ls_status run_prune_checkpoints(run_ctx *c, ls_err *err)
{
    runlog_ckpt *ck;
    size_t n;
    ls_status st = runlog_checkpoints(c->db, c->r->run_id, &ck, &n, err);
    if (st != LS_OK)
        return st;
    for (size_t i = 0; n > RUN_KEEP_CHECKPOINTS && i < n - RUN_KEEP_CHECKPOINTS && st == LS_OK; i++) {
        /* Never delete a file a kept registration names, nor the rows of a
         * kept step (registrations are deleted by step). */
        int shared_path = 0, shared_step = 0;
        for (size_t j = n - RUN_KEEP_CHECKPOINTS; j < n; j++) {
            shared_path |= strcmp(ck[i].path, ck[j].path) == 0;
            shared_step |= ck[i].step == ck[j].step;
        }
        if (!shared_path && unlink(ck[i].path) != 0 && errno != ENOENT)
            st = ls_fail(err, LS_EIO, "%s: cannot delete an old checkpoint: %s", ck[i].path, strerror(errno));
        if (st == LS_OK && !shared_step)
            st = runlog_checkpoint_delete(c->db, c->r->run_id, ck[i].step, err);
    }
    runlog_checkpoints_free(ck, n);
    return st;
}

/* Steps 0..step are committed before the checkpoint is registered, so a
 * registered checkpoint always has its rows behind it (resume relies on it). */
static ls_status run_checkpoint(run_ctx *c, int64_t step, ls_err *err)
{
    ls_status st = runlog_flush(c->db, err);
    if (st != LS_OK)
        return st;
    char path[PATH_MAX + 64];
    int w = snprintf(path, sizeof path, "%s/run-%lld-step-%lld.ckpt", c->ckpt_dir, (long long)c->r->run_id,
                     (long long)step);
    if (w < 0 || (size_t)w >= sizeof path)
        return ls_fail(err, LS_EINVAL, "%s: checkpoint path too long", c->ckpt_dir);
    size_t ob;
    void *os = trainer_optim_state(c->t, &ob);
    uint64_t sh;
    if ((st = ckpt_save(path, c->cfg_hash, step, trainer_params(c->t), c->n, os, ob, &sh, err)) != LS_OK)
        return st;
    if ((st = runlog_checkpoint(c->db, c->r->run_id, step, path, sh, err)) != LS_OK)
        return st;
    c->r->checkpoints++;
    return run_prune_checkpoints(c, err);
}

static ls_status run_record_eval(run_ctx *c, ls_err *err)
{
    run_result *r = c->r;
    ls_status st = trainer_metrics(c->t, r->metrics, &r->n_metrics, err);
    if (st != LS_OK)
        return st;
    /* The first figure (test_acc, or hard_acc for the CA) is the headline. */
    r->test_acc = r->n_metrics > 0 ? r->metrics[0].value : -1;
    for (size_t i = 0; i < r->n_metrics && c->db != NULL; i++)
        if ((st = runlog_eval(c->db, r->run_id, trainer_steps_done(c->t), r->metrics[i].name, r->metrics[i].value,
                              err)) != LS_OK)
            return st;
    return LS_OK;
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

static int same_step(const ls_step *a, const ls_step *b)
{
    return a->has_loss == b->has_loss && (!a->has_loss || a->loss_bits == b->loss_bits) &&
           a->param_hash == b->param_hash && a->traj_hash == b->traj_hash;
}

static ls_status run_loop(run_ctx *c, ls_err *err)
{
    const run_opts *o = c->o;
    run_result *r = c->r;
    ls_status st = LS_OK;
    int64_t first = trainer_steps_done(c->t) + 1;
    double t0 = run_now(), printed = 0;
    for (int64_t step = first; step <= c->target; step++) {
        if (run_interrupted) {
            st = ls_fail(err, LS_EINTR, "interrupted after step %lld", (long long)(step - 1));
            break;
        }
        double loss, a = run_now();
        st = trainer_step(c->t, &loss, err);
        double b = run_now();
        r->train_seconds += b - a;
        if (st != LS_OK)
            break;
        c->ph = hash_params(trainer_params(c->t), c->n);
        c->traj = hash_traj_next(c->traj, c->ph, loss);
        double d = run_now();
        r->hash_seconds += d - b;
        ls_step row = { step, 1, hash_loss_bits(loss), c->ph, c->traj, b - a };
        if (step <= c->last_recorded) {
            const ls_step *want = &c->recorded[step];
            if (!same_step(&row, want)) {
                st = ls_fail(err, LS_EMISMATCH,
                             "step %lld: recomputed loss %.17g (%016llx), param hash %016llx, trajectory %016llx; "
                             "the record has loss %.17g (%016llx), param hash %016llx, trajectory %016llx",
                             (long long)step, loss, (unsigned long long)row.loss_bits,
                             (unsigned long long)row.param_hash, (unsigned long long)row.traj_hash,
                             hash_bits_to_double(want->loss_bits), (unsigned long long)want->loss_bits,
                             (unsigned long long)want->param_hash, (unsigned long long)want->traj_hash);
                break;
            }
            r->recomputed++;
        } else if (c->db != NULL && (st = runlog_step(c->db, r->run_id, &row, err)) != LS_OK) {
            break;
        }
        if (o->rows != NULL)
            o->rows[step] = row;
        r->steps_done = step;
        r->last_loss = loss;
        if (c->db != NULL && c->ckpt_every > 0 && step % c->ckpt_every == 0)
            if ((st = run_checkpoint(c, step, err)) != LS_OK)
                break;
        r->record_seconds += run_now() - d;
        if (o->progress)
            progress_line(step <= c->last_recorded ? "replay" : "step", step, first, c->target,
                          trainer_config(c->t)->batch, loss, t0, &printed);
        if (c->eval_every > 0 && step % c->eval_every == 0 && step != c->target)
            if ((st = run_record_eval(c, err)) != LS_OK)
                break;
    }
    return st;
}

/* Statistics, the final evaluation and the run's end status; destroys the trainer. */
static ls_status run_finish(run_ctx *c, ls_status st, ls_err *err)
{
    run_result *r = c->r;
    r->traj_hash = c->traj;
    r->param_hash = c->ph;
    if (c->t != NULL) {
        if (r->train_seconds > 0) {
            int64_t stepped = r->steps_done - r->resumed_from;
            r->samples_per_second = (double)stepped * (double)trainer_config(c->t)->batch / r->train_seconds;
        }
        int busy = 0;
        for (int w = 0; w < trainer_threads(c->t); w++)
            busy += trainer_worker_leaves(c->t)[w] > 0;
        r->busy_workers = busy;
        if (st == LS_OK && c->o->eval_at_end)
            st = run_record_eval(c, err);
    }
    snprintf(r->status, sizeof r->status, "%s",
             st == LS_OK ? "done" : st == LS_EDIVERGED ? "diverged" : st == LS_EINTR ? "interrupted" : "failed");
    if (c->db != NULL && r->run_id >= 0) {
        ls_err e2;
        double t = run_now();
        ls_status st2 = runlog_run_end(c->db, r->run_id, r->status, &e2);
        r->record_seconds += run_now() - t;
        if (st == LS_OK && st2 != LS_OK) {
            *err = e2;
            st = st2;
        }
    }
    trainer_destroy(c->t);
    c->t = NULL;
    return st;
}

/* ---- a fresh run --------------------------------------------------------------------------- */

ls_status run_train(const run_opts *o, run_result *r, ls_err *err)
{
    run_result_init(r);
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.r = r;
    c.db = o->db;
    c.target = o->steps;
    c.last_recorded = -1;
    c.eval_every = o->eval_every;
    c.ckpt_every = o->db != NULL ? o->checkpoint_every : 0;
    ls_status st;
    if (c.ckpt_every > 0 && (st = run_checkpoint_dir(o->checkpoint_dir, o->db_path, c.ckpt_dir, sizeof c.ckpt_dir,
                                                     err)) != LS_OK)
        return st;
    ls_config cfg = o->cfg;
    if ((st = trainer_create(&c.t, &cfg, o->threads, o->data, err)) != LS_OK)
        return st;
    c.cfg_hash = config_hash(&cfg);
    char text[CONFIG_TEXT_MAX];
    config_text(&cfg, text, sizeof text);
    c.n = trainer_n_params(c.t);
    c.ph = hash_params(trainer_params(c.t), c.n);
    c.traj = hash_traj0(text, c.ph);
    ls_step row = { 0, 0, 0, c.ph, c.traj, 0.0 };

    if (o->db != NULL) {
        char host[128] = "unknown", cpu[128];
        gethostname(host, sizeof host - 1);
        read_cpu_model(cpu, sizeof cpu);
        char cflags[256];
        snprintf(cflags, sizeof cflags, "%s; simd %s", LS_BUILD_CFLAGS, dense_simd_name());
        runlog_run_info info = {
            .name = o->name, .model = cfg.model, .task = cfg.task, .config_text = text,
            .config_hash = c.cfg_hash, .engine_version = LS_ENGINE_VERSION,
            .compiler = LS_BUILD_CC, .cflags = cflags, .host = host, .cpu = cpu,
            .git_commit = LS_BUILD_GIT[0] ? LS_BUILD_GIT : NULL, .threads = o->threads,
            .reduce = cfg.reduce, .target_steps = o->steps, .checkpoint_every = c.ckpt_every,
            .checkpoint_dir = c.ckpt_every > 0 ? c.ckpt_dir : NULL,
        };
        if ((st = runlog_run_begin(o->db, &info, &r->run_id, err)) != LS_OK)
            return run_finish(&c, st, err);
        if ((st = runlog_step(o->db, r->run_id, &row, err)) != LS_OK)
            return run_finish(&c, st, err);
    }
    if (o->rows != NULL)
        o->rows[0] = row;
    crash_arm(c.t, o->db);
    st = run_loop(&c, err);
    return run_finish(&c, st, err);
}

/* ---- resuming a recorded run ------------------------------------------------------------------ */

/* Everything that can be checked before the run is claimed: the run's state,
 * its config, the trainer, the step rows and the newest checkpoint at or
 * before the last step row (a newer registration can only be one a live
 * writer made after the rows were read: run_restore reads live runs). Fills c
 * (trainer at the checkpoint's step, hashes at that step). Sets r->bad_input
 * except for a mismatch with the record (the checkpoint's parameters or
 * step 0 do not hash as recorded), which is LS_EMISMATCH. Shared by
 * run_resume and run_restore. */
static ls_status resume_prepare(run_ctx *c, const runlog_run *run, ls_step **rec, ls_err *err)
{
    const run_opts *o = c->o;
    run_result *r = c->r;
    ls_status st;
    ls_config cfg;
    char what[160];
    snprintf(what, sizeof what, "run %lld '%s'", (long long)run->id, run->name);
    if ((st = config_parse_text(&cfg, run->config_text, what, err)) != LS_OK)
        return st;
    char text[CONFIG_TEXT_MAX];
    config_text(&cfg, text, sizeof text);
    if (strcmp(text, run->config_text) != 0 || config_hash(&cfg) != run->config_hash)
        return ls_fail(err, LS_EFORMAT, "%s: the recorded config does not read back to the same canonical text "
                       "and hash (recorded by another lockstep version?)", what);
    if ((st = trainer_create(&c->t, &cfg, o->threads, NULL, err)) != LS_OK)
        return st;
    c->cfg_hash = config_hash(&cfg);
    c->n = trainer_n_params(c->t);

    size_t n_rec;
    if ((st = runlog_read_steps(c->db, run->id, rec, &n_rec, err)) != LS_OK)
        return st;
    for (size_t i = 0; i < n_rec; i++)
        if ((*rec)[i].step != (int64_t)i)
            return ls_fail(err, LS_EFORMAT, "%s: the step rows have a gap before step %lld", what,
                           (long long)(*rec)[i].step);
    c->recorded = *rec;
    c->last_recorded = (int64_t)n_rec - 1;

    /* θ_0 is recomputed whatever happens next: the record's step 0 must match. */
    c->ph = hash_params(trainer_params(c->t), c->n);
    c->traj = hash_traj0(text, c->ph);
    if (n_rec > 0 && ((*rec)[0].param_hash != c->ph || (*rec)[0].traj_hash != c->traj)) {
        r->bad_input = 0;
        return ls_fail(err, LS_EMISMATCH, "step 0: recomputed param hash %016llx, trajectory %016llx; the record "
                       "has param hash %016llx, trajectory %016llx", (unsigned long long)c->ph,
                       (unsigned long long)c->traj, (unsigned long long)(*rec)[0].param_hash,
                       (unsigned long long)(*rec)[0].traj_hash);
    }

    runlog_ckpt *ck;
    size_t n_ck;
    if ((st = runlog_checkpoints(c->db, run->id, &ck, &n_ck, err)) != LS_OK)
        return st;
    size_t use = n_ck;
    while (use > 0 && ck[use - 1].step > c->last_recorded)
        use--;
    if (use > 0) {
        const runlog_ckpt *k = &ck[use - 1];
        snprintf(r->checkpoint_path, sizeof r->checkpoint_path, "%s", k->path);
        size_t ob;
        void *os = trainer_optim_state(c->t, &ob);
        int64_t step = -1;
        uint64_t sh = 0;
        st = ckpt_load_hash(k->path, c->cfg_hash, c->n, ob, &step, trainer_params_mut(c->t), os, &sh, err);
        if (st == LS_OK && step != k->step)
            st = ls_fail(err, LS_EFORMAT, "%s: holds step %lld but is registered as step %lld", k->path,
                         (long long)step, (long long)k->step);
        if (st == LS_OK && sh != k->state_hash)
            st = ls_fail(err, LS_EFORMAT, "%s: state hash %016llx differs from the %016llx registered for it",
                         k->path, (unsigned long long)sh, (unsigned long long)k->state_hash);
        runlog_checkpoints_free(ck, n_ck);
        if (st != LS_OK)
            return st;
        trainer_set_steps_done(c->t, step);
        c->ph = hash_params(trainer_params(c->t), c->n);
        const ls_step *want = &(*rec)[step];
        if (c->ph != want->param_hash) {
            r->bad_input = 0;
            return ls_fail(err, LS_EMISMATCH, "step %lld: the parameters in %s hash to %016llx, the record has "
                           "%016llx", (long long)step, r->checkpoint_path, (unsigned long long)c->ph,
                           (unsigned long long)want->param_hash);
        }
        c->traj = want->traj_hash;
        r->resumed_from = step;
        r->steps_done = step;
        r->last_loss = want->has_loss ? hash_bits_to_double(want->loss_bits) : 0;
    } else {
        runlog_checkpoints_free(ck, n_ck);
    }
    return LS_OK;
}

ls_status run_resume(const run_opts *o, int64_t run_id, run_result *r, ls_err *err)
{
    run_result_init(r);
    r->run_id = run_id;
    r->bad_input = 1;
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.r = r;
    c.db = o->db;
    c.last_recorded = -1;
    if (o->db == NULL)
        return ls_fail(err, LS_EINVAL, "resume needs a database");
    runlog_run run;
    ls_status st = runlog_get_run(o->db, run_id, &run, err);
    if (st != LS_OK)
        return st;
    ls_step *rec = NULL;
    if (strcmp(run.status, "running") == 0) {
        st = ls_fail(err, LS_EEXIST, "run %lld '%s' is running (process %lld); it can be resumed once it stops",
                     (long long)run.id, run.name, (long long)run.pid);
        goto out;
    }
    if (strcmp(run.status, "diverged") == 0) {
        st = ls_fail(err, LS_EINVAL, "run %lld '%s' diverged after step %lld: resuming would diverge again",
                     (long long)run.id, run.name, (long long)run.n_steps);
        goto out;
    }
    c.target = o->steps > 0 ? o->steps : run.target_steps > 0 ? run.target_steps : run.n_steps;
    r->target_steps = c.target;
    if (c.target < run.n_steps) {
        st = ls_fail(err, LS_EINVAL, "--steps: %lld is below the %lld steps run %lld has recorded",
                     (long long)c.target, (long long)run.n_steps, (long long)run.id);
        goto out;
    }
    if (strcmp(run.status, "done") == 0 && c.target <= run.n_steps) {
        r->nothing_to_do = 1;
        r->bad_input = 0;
        r->steps_done = run.n_steps;
        r->traj_hash = run.last_traj_hash;
        snprintf(r->status, sizeof r->status, "done");
        goto out;
    }
    if (c.target < 1) {
        st = ls_fail(err, LS_EINVAL, "run %lld '%s' has no recorded step count: give --steps", (long long)run.id,
                     run.name);
        goto out;
    }
    c.ckpt_every = o->checkpoint_every > 0 ? o->checkpoint_every : run.checkpoint_every;
    if (c.ckpt_every > 0 &&
        (st = run_checkpoint_dir(o->checkpoint_dir != NULL ? o->checkpoint_dir : run.checkpoint_dir, o->db_path,
                                 c.ckpt_dir, sizeof c.ckpt_dir, err)) != LS_OK)
        goto out;
    if ((st = resume_prepare(&c, &run, &rec, err)) != LS_OK)
        goto out;
    if ((st = runlog_run_resume(o->db, run_id, c.target, c.ckpt_every, c.ckpt_every > 0 ? c.ckpt_dir : NULL,
                                err)) != LS_OK)
        goto out;
    r->bad_input = 0;
    crash_arm(c.t, o->db);
    if (c.last_recorded < 0) {
        /* Killed before its first commit: step 0 is recorded now. */
        ls_step row0 = { 0, 0, 0, c.ph, c.traj, 0.0 };
        st = runlog_step(o->db, run_id, &row0, err);
    }
    if (st == LS_OK)
        st = run_loop(&c, err);
    st = run_finish(&c, st, err);
out:
    trainer_destroy(c.t);
    free(rec);
    runlog_run_free(&run);
    return st;
}

/* ---- restoring a recorded run's trainer ---------------------------------------------------------- */

ls_status run_restore(runlog *db, int64_t run_id, int threads, int progress, trainer **out, run_restored *info,
                      ls_err *err)
{
    *out = NULL;
    memset(info, 0, sizeof *info);
    info->bad_input = 1;
    run_opts o = { .threads = threads, .progress = progress, .db = db };
    run_result r;
    run_result_init(&r);
    r.run_id = run_id;
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.o = &o;
    c.r = &r;
    c.db = db;
    c.last_recorded = -1;
    runlog_run run;
    ls_status st = runlog_get_run(db, run_id, &run, err);
    if (st != LS_OK)
        return st;
    ls_step *rec = NULL;
    r.bad_input = 1;
    st = resume_prepare(&c, &run, &rec, err);
    if (st == LS_OK && c.last_recorded < 0)
        st = ls_fail(err, LS_EINVAL, "run %lld '%s' has no recorded steps", (long long)run.id, run.name);
    if (st == LS_OK) {
        /* Every step after the checkpoint is one the record has: run_loop
         * recomputes and compares each, and records nothing. */
        r.bad_input = 0;
        c.target = c.last_recorded;
        st = run_loop(&c, err);
    }
    info->bad_input = st != LS_OK && r.bad_input;
    if (st == LS_OK) {
        info->step = c.last_recorded;
        info->from_checkpoint = r.resumed_from;
        info->replayed = r.recomputed;
        info->config_hash = c.cfg_hash;
        info->param_hash = c.ph;
        info->traj_hash = c.traj;
        snprintf(info->checkpoint_path, sizeof info->checkpoint_path, "%s", r.checkpoint_path);
        *out = c.t;
        c.t = NULL;
    }
    trainer_destroy(c.t);
    free(rec);
    runlog_run_free(&run);
    return st;
}
