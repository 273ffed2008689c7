/* run.c — the run driver: engine steps, hashes, the record, progress. */
#include "tools.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../engine/dense.h"
#include "../engine/train.h"
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

static void progress_line(const run_opts *o, int64_t step, double loss, double t0, double last_print, double *printed)
{
    double now = run_now();
    if (now - last_print < 0.2 && step != o->steps)
        return;
    *printed = now;
    double el = now - t0;
    double sps = el > 0 ? (double)step * (double)o->cfg.batch / el : 0;
    double eta = step > 0 ? el / (double)step * (double)(o->steps - step) : 0;
    fprintf(stderr, "\rstep %lld/%lld  loss %.5f  %.0f samples/s  ETA %.0fs   ", (long long)step,
            (long long)o->steps, loss, sps, eta);
    if (step == o->steps)
        fputc('\n', stderr);
    fflush(stderr);
}

static ls_status run_record_eval(const run_opts *o, trainer *t, run_result *r, ls_err *err)
{
    double acc;
    ls_status st = trainer_evaluate(t, &acc, err);
    if (st != LS_OK)
        return st;
    r->test_acc = acc;
    if (o->db != NULL)
        return runlog_eval(o->db, r->run_id, trainer_steps_done(t), "test_acc", acc, err);
    return LS_OK;
}

ls_status run_train(const run_opts *o, run_result *r, ls_err *err)
{
    memset(r, 0, sizeof *r);
    r->run_id = -1;
    r->test_acc = -1;
    snprintf(r->status, sizeof r->status, "failed");
    ls_config cfg = o->cfg;
    trainer *t = NULL;
    ls_status st = trainer_create(&t, &cfg, o->threads, o->data, err);
    if (st != LS_OK)
        return st;

    char text[CONFIG_TEXT_MAX];
    config_text(&cfg, text, sizeof text);
    size_t n = trainer_n_params(t);
    uint64_t ph = hash_params(trainer_params(t), n);
    uint64_t traj = hash_traj0(text, ph);
    ls_step row = { 0, 0, 0, ph, traj, 0.0 };

    if (o->db != NULL) {
        char host[128] = "unknown", cpu[128];
        gethostname(host, sizeof host - 1);
        read_cpu_model(cpu, sizeof cpu);
        char cflags[256];
        snprintf(cflags, sizeof cflags, "%s; simd %s", LS_BUILD_CFLAGS, dense_simd_name());
        runlog_run_info info = {
            .name = o->name, .model = cfg.model, .task = cfg.task, .config_text = text,
            .config_hash = config_hash(&cfg), .engine_version = LS_ENGINE_VERSION,
            .compiler = LS_BUILD_CC, .cflags = cflags, .host = host, .cpu = cpu,
            .git_commit = LS_BUILD_GIT[0] ? LS_BUILD_GIT : NULL, .threads = o->threads,
            .reduce = cfg.reduce,
        };
        if ((st = runlog_run_begin(o->db, &info, &r->run_id, err)) != LS_OK)
            goto out;
        if ((st = runlog_step(o->db, r->run_id, &row, err)) != LS_OK)
            goto out;
    }
    if (o->rows != NULL)
        o->rows[0] = row;

    double t0 = run_now(), printed = 0;
    for (int64_t step = 1; step <= o->steps; step++) {
        if (run_interrupted) {
            st = ls_fail(err, LS_EINTR, "interrupted after step %lld", (long long)(step - 1));
            break;
        }
        double loss, a = run_now();
        st = trainer_step(t, &loss, err);
        double b = run_now();
        r->train_seconds += b - a;
        if (st != LS_OK)
            break;
        ph = hash_params(trainer_params(t), n);
        traj = hash_traj_next(traj, ph, loss);
        double c = run_now();
        r->hash_seconds += c - b;
        row = (ls_step){ step, 1, hash_loss_bits(loss), ph, traj, b - a };
        if (o->db != NULL && (st = runlog_step(o->db, r->run_id, &row, err)) != LS_OK)
            break;
        if (o->rows != NULL)
            o->rows[step] = row;
        r->record_seconds += run_now() - c;
        r->steps_done = step;
        r->last_loss = loss;
        if (o->progress)
            progress_line(o, step, loss, t0, printed, &printed);
        if (o->eval_every > 0 && step % o->eval_every == 0 && step != o->steps)
            if ((st = run_record_eval(o, t, r, err)) != LS_OK)
                break;
    }
    r->traj_hash = traj;
    r->param_hash = ph;
    if (r->train_seconds > 0)
        r->samples_per_second = (double)r->steps_done * (double)cfg.batch / r->train_seconds;
    int busy = 0;
    for (int w = 0; w < o->threads; w++)
        busy += trainer_worker_leaves(t)[w] > 0;
    r->busy_workers = busy;
    if (st == LS_OK && o->eval_at_end)
        st = run_record_eval(o, t, r, err);

out:
    snprintf(r->status, sizeof r->status, "%s",
             st == LS_OK ? "done" : st == LS_EDIVERGED ? "diverged" : st == LS_EINTR ? "interrupted" : "failed");
    if (o->db != NULL && r->run_id >= 0) {
        ls_err e2;
        double c = run_now();
        ls_status st2 = runlog_run_end(o->db, r->run_id, r->status, &e2);
        r->record_seconds += run_now() - c;
        if (st == LS_OK && st2 != LS_OK) {
            *err = e2;
            st = st2;
        }
    }
    trainer_destroy(t);
    return st;
}
