/* cmd_train.c — `lockstep train`, `lockstep equiv` and `lockstep bench`. */
#include "tools/tools.h"
#include "tools/commands.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/num/dense.h"
#include "engine/core/train.h"

/* Tasks and models from the registry; the flags of the chosen task and model
 * (with their defaults) from their descriptors. */
static void print_config_help(const ls_config *cfg)
{
    char buf[8192];
    fputs("tasks (--task):\n", stdout);
    for (size_t i = 0; ls_task_at(i) != NULL; i++) {
        const ls_task_desc *t = ls_task_at(i);
        char models[256], words[258] = " ";   /* words: " a b c ", to match whole names */
        config_task_models(t, ", ", models, sizeof models);
        config_task_models(t, " ", words + 1, sizeof words - 2);
        strcat(words, " ");
        char own[128] = "";   /* models whose default steps differ from the task's */
        for (size_t m = 0, at = 0; ls_model_at(m) != NULL && at < sizeof own; m++) {
            char word[80];
            snprintf(word, sizeof word, " %s ", ls_model_at(m)->name);
            int64_t steps = config_task_steps(t, ls_model_at(m)->name);
            if (steps != config_task_steps(t, "") && strstr(words, word) != NULL)
                at += (size_t)snprintf(own + at, sizeof own - at, ", %s %lld", ls_model_at(m)->name, (long long)steps);
        }
        printf("  %-16s %s\n  %-16s models %s (default %s); %lld steps by default%s\n", t->name,
               t->summary ? t->summary : "", "", models, config_default_model(t->name),
               (long long)config_task_steps(t, ""), own);
    }
    fputs("models (--model):\n", stdout);
    for (size_t i = 0; ls_model_at(i) != NULL; i++)
        printf("  %-16s %s\n", ls_model_at(i)->name, ls_model_at(i)->summary ? ls_model_at(i)->summary : "");
    config_help(cfg, buf, sizeof buf);
    printf("flags of task %s with model %s (part of the run's config; --task and --model change them):\n",
           cfg->task, cfg->model);
    fputs(buf, stdout);
}

static void train_usage(const ls_config *cfg)
{
    command_usage(command_find("train"), stdout);
    print_config_help(cfg);
}

static void print_result(const char *what, const run_result *r, const ls_config *cfg)
{
    char figures[256];
    printf("%s: run %lld, %lld steps, %s, final loss %.6f, %s, %.0f samples/s, "
           "trajectory %016llx\n",
           what, (long long)r->run_id, (long long)r->steps_done, r->status, r->last_loss,
           run_format_metrics(r, figures, sizeof figures),
           r->samples_per_second, (unsigned long long)r->traj_hash);
    (void)cfg;
}

/* --print-plan: the plan of cfg's steps at `threads` threads (engine/core/plan.h). */
static int print_plan(ls_config *cfg, int threads)
{
    trainer *t = NULL;
    ls_err err = { "" };
    ls_status st = trainer_create(&t, cfg, threads, NULL, &err);
    if (st != LS_OK) {
        cli_error("train", &err, st);
        return cli_exit_code(st);
    }
    char text[4096];
    plan_describe(trainer_plan(t), trainer_model(t)->name, text, sizeof text);
    fputs(text, stdout);
    trainer_destroy(t);
    return EXIT_OK;
}

/* train's own flag beside the shared ones: --print-plan. */
static ls_status train_own_flag(void *ctx, const flag_spec *f, const char *value, ls_err *err)
{
    (void)value;
    (void)err;
    if (f != NULL && strcmp(f->name, "--print-plan") == 0)
        *(int *)ctx = 1;
    return LS_OK;
}

int cmd_train(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    int want_plan = 0;
    ls_status st = cli_parse_cmd("train", argc, argv, CLI_CONFIG | CLI_TRAIN | CLI_DB | CLI_CKPT | CLI_NO_EVAL, 0,
                                 train_own_flag, &want_plan, &a, &err);
    if (st == LS_OK && a.checkpoint_dir != NULL && a.checkpoint_every == 0)
        st = ls_fail(&err, LS_EINVAL, "--checkpoint-dir: needs --checkpoint-every K");
    if (st == LS_OK && a.keep_checkpoints != 0 && a.checkpoint_every == 0)
        st = ls_fail(&err, LS_EINVAL, "--keep-checkpoints: needs --checkpoint-every K");
    if (st == LS_OK && !a.help)
        st = cli_check_regular("--db", a.db, &err);
    if (st != LS_OK) {
        cli_error("train", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        train_usage(&a.cfg);
        return EXIT_OK;
    }
    if (want_plan)
        return print_plan(&a.cfg, a.threads[0]);
    run_install_signals();
    run_opts o = { .cfg = a.cfg, .threads = a.threads[0], .steps = a.steps, .eval_every = a.eval_every,
                   .progress = a.progress, .eval_at_end = !a.no_eval, .name = a.name, .db_path = a.db,
                   .checkpoint_every = a.checkpoint_every, .checkpoint_dir = a.checkpoint_dir,
                   .keep_checkpoints = a.keep_checkpoints };
    run_result r;
    st = run_train(&o, &r, &err);
    if (st != LS_OK) {
        /* One line: the problem, and what became of the run as the record
         * holds it (not as the engine counted: on a full disk the steps it
         * buffered never reached the database). */
        if (r.run_id >= 0) {
            char fate[512];
            cli_run_fate(a.db, r.run_id, fate, sizeof fate);
            fprintf(stderr, "lockstep train: %s (%s)\n", err.msg[0] ? err.msg : ls_strerror(st), fate);
        } else
            cli_error("train", &err, st);
        return cli_exit_code(st);
    }
    print_result("train", &r, &a.cfg);
    if (r.checkpoints > 0)
    {
        if (a.keep_checkpoints < 0)
            printf("train: %lld checkpoints written, all kept\n", (long long)r.checkpoints);
        else
            printf("train: %lld checkpoints written, the last %lld kept\n", (long long)r.checkpoints,
                   (long long)(a.keep_checkpoints > 0 ? a.keep_checkpoints : LS_KEEP_CHECKPOINTS));
    }
    return EXIT_OK;
}

/* --- equiv ------------------------------------------------------------- */

/* The table of runs, a row printed as ls_equiv finishes each; its header
 * once the first run is under way, so a refused command prints nothing. */
typedef struct {
    int progress;
    size_t batch;
    double sps[CLI_MAX_THREADS_LIST];
    size_t rows;
    int header;
    double printed;   /* the run's train_seconds at the last progress line */
    const int *leaves;   /* equiv --leaf list: run i's leaf is leaves[i / n_threads] (NULL: no column) */
    int n_threads;
} equiv_watch;

static void equiv_header(equiv_watch *w)
{
    if (w->header)
        return;
    w->header = 1;
    if (w->leaves != NULL)
        printf("%-8s ", "leaf");
    printf("%-8s %-8s %-10s %-12s %-20s %-18s\n", "threads", "run", "status", "samples/s", "evaluation", "trajectory");
    fflush(stdout);
}

static void equiv_row(void *ctx, const ls_equiv_run *r)
{
    equiv_watch *w = ctx;
    equiv_header(w);
    if (w->progress)
        fputs("\r\033[K", stderr);
    if (r->status != LS_OK)
        return;
    double sps = r->train_seconds > 0 ? (double)r->steps * (double)w->batch / r->train_seconds : 0;
    if (w->leaves != NULL)
        printf("%-8d ", w->leaves[w->rows / (size_t)w->n_threads]);
    if (w->rows < CLI_MAX_THREADS_LIST)
        w->sps[w->rows] = sps;
    w->rows++;
    char figure[64] = "-";
    if (r->n_metrics > 0)
        snprintf(figure, sizeof figure, "%s %.4f", r->metrics[0].name, r->metrics[0].value);
    printf("%-8d %-8lld %-10s %-12.0f %-20s %016llx\n", r->threads, (long long)r->run_id, "done", sps, figure,
           (unsigned long long)r->traj_hash);
    fflush(stdout);
}

/* The progress line of the run under way (stderr, on a terminal), five
 * times a second of training at most. */
static void equiv_progress(void *ctx, const ls_session_state *st, int replay)
{
    equiv_watch *w = ctx;
    (void)replay;
    equiv_header(w);
    if (st->step == 1 || st->train_seconds < w->printed)
        w->printed = 0;   /* a new run */
    if (!w->progress || st->train_seconds - w->printed < 0.2)
        return;
    w->printed = st->train_seconds;
    double sps = st->train_seconds > 0 ? (double)st->step * (double)w->batch / st->train_seconds : 0;
    fprintf(stderr, "\r%d threads: step %lld/%lld  loss %.5f  %.0f samples/s   ", st->threads, (long long)st->step,
            (long long)st->target, st->loss, sps);
    fflush(stderr);
}

int cmd_equiv(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    ls_status st = cli_parse_cmd("equiv", argc, argv, CLI_CONFIG | CLI_TRAIN | CLI_DB | CLI_THREAD_LIST | CLI_LEAF_LIST, 0, NULL, NULL,
                                 &a, &err);
    if (st == LS_OK && !a.help)
        st = cli_check_regular("--db", a.db, &err);
    if (st != LS_OK) {
        cli_error("equiv", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        command_usage(command_find("equiv"), stdout);
        return EXIT_OK;
    }
    /* The loop is the library's (ls_equiv): it checks every input before
     * the first run is recorded (each thread count once, the data readable,
     * the run names free), trains each run, and compares it with the first. */
    run_install_signals();
    equiv_watch w = { .progress = a.progress, .batch = a.cfg.batch, .leaves = a.n_leaves > 1 ? a.leaves : NULL,
                      .n_threads = a.n_threads };
    ls_equiv_opts eo = {
        .size = sizeof(ls_equiv_opts),
        .threads = a.threads,
        .n_threads = (size_t)a.n_threads,
        .leaves = a.n_leaves > 1 ? a.leaves : NULL,
        .n_leaves = a.n_leaves > 1 ? (size_t)a.n_leaves : 0,
        .session = { .size = sizeof(ls_session_opts), .db = a.db, .name = a.name, .steps = a.steps,
                     .eval_every = a.eval_every, .progress = equiv_progress, .progress_ctx = &w },
        .stop = &run_interrupted,
        .on_run = equiv_row,
        .ctx = &w,
    };
    static ls_equiv_result res;   /* static: kept off the stack */
    st = ls_equiv(&a.cfg, &eo, &res, &err);
    if (st != LS_OK) {
        const ls_equiv_run *last = res.n_runs > 0 ? &res.runs[res.n_runs - 1] : NULL;
        if (last != NULL && last->run_id >= 0) {
            char fate[512];
            cli_run_fate(a.db, last->run_id, fate, sizeof fate);
            fprintf(stderr, "lockstep equiv: %s (%s)\n", err.msg[0] ? err.msg : ls_strerror(st), fate);
        } else {
            cli_error("equiv", &err, st);
        }
        return cli_exit_code(st);
    }
    /* The verdicts, stored in the record as `lockstep verify` stores its own. */
    runlog *db;
    if ((st = cli_open_db(a.db, &db, &err)) != LS_OK) {
        cli_error("equiv", &err, st);
        return EXIT_USAGE;
    }
    int differ = !res.equal;
    for (size_t i = 1; i < res.n_runs; i++)
        differ |= verify_runs(db, res.runs[0].run_id, res.runs[i].run_id, "equiv", 1) != 0;
    int rc = EXIT_OK;
    if (differ) {
        for (size_t i = 1; i < res.n_runs; i++)
            verify_runs(db, res.runs[0].run_id, res.runs[i].run_id, "equiv-detail", 0);
        printf("equiv: NOT identical across threads");
        rc = EXIT_DIFFER;
    } else {
        printf("equiv: bit-identical at threads");
    }
    for (int i = 0; i < a.n_threads; i++)
        printf("%s%d", i ? "," : " ", a.threads[i]);
    if (a.n_leaves > 1) {
        printf(" and leaf sizes");
        for (int i = 0; i < a.n_leaves; i++)
            printf("%s%d", i ? "," : " ", a.leaves[i]);
    }
    printf(" over %lld steps; trajectory %016llx\n", (long long)res.runs[0].steps,
           (unsigned long long)res.runs[0].traj_hash);
    for (size_t i = 1; i < w.rows && i < (size_t)a.n_threads; i++)
        printf("equiv: %d threads ran %.2fx the speed of %d\n", a.threads[i], w.sps[0] > 0 ? w.sps[i] / w.sps[0] : 0,
               a.threads[0]);
    runlog_close(db);
    return rc;
}

/* --- bench ------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* bench's own flag: --peak hands the whole command line to bench_peak. */
static ls_status bench_flag(void *ctx, const flag_spec *f, const char *value, ls_err *err)
{
    (void)f;
    (void)value;
    (void)err;
    *(int *)ctx = 1;
    return LS_OK;
}

int cmd_bench(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    int peak = 0;
    for (int i = 0; i < argc; i++)   /* --peak's flags are its own, wherever --peak stands */
        if (strcmp(argv[i], "--peak") == 0)
            return bench_peak(argc, argv);
    ls_status st = cli_parse_cmd("bench", argc, argv, CLI_CONFIG | CLI_STEPS_FLAG | CLI_THREAD_LIST | CLI_REPS, 0,
                                 bench_flag, &peak, &a, &err);
    if (peak)
        return bench_peak(argc, argv);   /* the core's FP32 peak (bench_peak.c), flags and help its own */
    if (st != LS_OK) {
        cli_error("bench", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        command_usage(command_find("bench"), stdout);
        return EXIT_OK;
    }
    if (!a.steps_given)
        a.steps = 60;
    ls_dataset *data = NULL;
    if ((st = trainer_load_data(&a.cfg, &data, &err)) != LS_OK) {
        cli_error("bench", &err, st);
        return EXIT_USAGE;
    }
    run_install_signals();
    /* The record's cost is measured on a real SQLite file, apart from runs.db. */
    char dbpath[] = "/tmp/lockstep-bench-XXXXXX";
    int fd = mkstemp(dbpath);
    if (fd >= 0)
        close(fd);
    unlink(dbpath);
    runlog *db = NULL;
    if ((st = runlog_open(&db, dbpath, &err)) != LS_OK) {
        cli_error("bench", &err, st);
        dataset_destroy(data);
        return EXIT_USAGE;
    }
    double flops = 0;   /* the model's own count, from the first run */
    printf("bench: model %s, task %s, batch %zu, leaf %zu, %lld steps x %d reps, simd %s\n", a.cfg.model,
           a.cfg.task, a.cfg.batch, (size_t)ls_config_int(&a.cfg, "leaf"), (long long)a.steps, a.reps, dense_simd_name());
    printf("%-8s %-12s %-12s %-8s %-10s %-8s %-10s %-16s %s\n", "threads", "tree smp/s", "unord smp/s", "speedup",
           "tree cost", "GFLOP/s", "step us", "sqlite/step", "hash/step");
    enum { MAX_REPS = CLI_MAX_REPS };   /* cli_parse bounds --reps to it */
    int reps = a.reps > MAX_REPS ? MAX_REPS : a.reps;
    /* [thread count][rep]: medians are taken per thread count and mode. */
    double (*tree_sps)[MAX_REPS] = calloc((size_t)a.n_threads, sizeof *tree_sps);
    double (*unord_sps)[MAX_REPS] = calloc((size_t)a.n_threads, sizeof *unord_sps);
    double (*rec)[MAX_REPS] = calloc((size_t)a.n_threads, sizeof *rec);
    double (*hash)[MAX_REPS] = calloc((size_t)a.n_threads, sizeof *hash);
    double (*step_time)[MAX_REPS] = calloc((size_t)a.n_threads, sizeof *step_time);
    enum { N_PARTS = 5 };
    double (*parts)[N_PARTS][MAX_REPS] = calloc((size_t)a.n_threads, sizeof *parts);
    int n_modes = 2;
    int rc = EXIT_OK;
    if (!tree_sps || !unord_sps || !rec || !hash || !step_time || !parts) {
        fprintf(stderr, "lockstep bench: out of memory\n");
        rc = EXIT_USAGE;
    }
    /* Every thread count and both reductions run inside each repetition, side
     * by side, so slow spells of a shared machine hit them alike. */
    for (int rep = 0; rep < reps && rc == EXIT_OK; rep++) {
        for (int i = 0; i < a.n_threads && rc == EXIT_OK; i++) {
            for (int mode = 0; mode < n_modes; mode++) {
                run_opts o = { .cfg = a.cfg, .threads = a.threads[i], .steps = a.steps,
                               .data = data, .db_path = mode == 0 ? dbpath : NULL,
                               .no_final_checkpoint = 1 };
                snprintf(o.cfg.reduce, sizeof o.cfg.reduce, "%s", mode == 0 ? "tree" : "unordered");
                run_result r;
                st = run_train(&o, &r, &err);
                if (st != LS_OK) {
                    cli_error("bench", &err, st);
                    rc = cli_exit_code(st);
                    break;
                }
                if (mode == 0) {
                    tree_sps[i][rep] = r.samples_per_second;
                    flops = r.flops_per_sample;
                    rec[i][rep] = r.record_seconds / (double)r.steps_done;
                    hash[i][rep] = r.hash_seconds / (double)r.steps_done;
                    step_time[i][rep] = r.train_seconds / (double)r.steps_done;
                    for (int k = 0; k < N_PARTS; k++)
                        parts[i][k][rep] = r.part_seconds[k] / (double)r.steps_done;
                } else {
                    unord_sps[i][rep] = r.samples_per_second;
                }
            }
        }
    }
    double base = 0;
    for (int i = 0; i < a.n_threads && rc == EXIT_OK; i++) {
        double t = median(tree_sps[i], reps), u = median(unord_sps[i], reps);
        double rs = median(rec[i], reps), hs = median(hash[i], reps), ts = median(step_time[i], reps);
        if (i == 0)
            base = t;
        char cost[32], record[48], hashed[48];
        snprintf(cost, sizeof cost, n_modes == 2 ? "%+.1f%%" : "-", u > 0 ? 100 * (u - t) / u : 0);
        snprintf(record, sizeof record, "%.0f us %.2f%%", rs * 1e6, ts > 0 ? 100 * rs / ts : 0);
        snprintf(hashed, sizeof hashed, "%.0f us %.2f%%", hs * 1e6, ts > 0 ? 100 * hs / ts : 0);
        char unord[32] = "-", gflops[32] = "-";
        if (n_modes == 2)
            snprintf(unord, sizeof unord, "%.0f", u);
        if (flops > 0)
            snprintf(gflops, sizeof gflops, "%.1f", flops * t / 1e9);
        printf("%-8d %-12.0f %-12s %-8.2f %-10s %-8s %-10.0f %-16s %s\n", a.threads[i], t, unord,
               base > 0 ? t / base : 0, cost, gflops, ts * 1e6, record, hashed);
    }
    if (rc == EXIT_OK) {
        printf("%-8s %-8s %-9s %-9s %-9s %-9s %-9s %-9s %s\n", "parts", "threads", "prepare", "phases", "leaves",
               "finish", "update", "hash", "record");
        for (int i = 0; i < a.n_threads; i++) {
            printf("%-8s %-8d", "parts", a.threads[i]);
            for (int k = 0; k < N_PARTS; k++)
                printf(" %-9.1f", median(parts[i][k], reps) * 1e6);
            printf(" %-9.1f %.1f\n", median(hash[i], reps) * 1e6, median(rec[i], reps) * 1e6);
        }
    }
    free(parts);
    free(tree_sps);
    free(unord_sps);
    free(rec);
    free(hash);
    free(step_time);
    runlog_close(db);
    unlink(dbpath);
    char side[sizeof dbpath + 8];
    snprintf(side, sizeof side, "%s-wal", dbpath);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", dbpath);
    unlink(side);
    dataset_destroy(data);
    return rc;
}
