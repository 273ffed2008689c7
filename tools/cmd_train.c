/* cmd_train.c — `lockstep train`, `lockstep equiv` and `lockstep bench`. */
#include "tools/tools.h"

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
        char models[256];
        config_task_models(t, ", ", models, sizeof models);
        printf("  %-16s %s\n  %-16s models %s (default %s); %lld steps by default\n", t->name,
               t->summary ? t->summary : "", "", models, config_default_model(t->name), (long long)t->default_steps);
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
    puts("usage: lockstep train [--task T] [--model M] [--steps N] [--batch B] [--leaf L] [--seed S]\n"
         "                      [--threads N] [--db FILE] [--name NAME] [--eval-every K] [--no-progress]\n"
         "                      [--checkpoint-every K [--checkpoint-dir DIR] [--keep-checkpoints N|all]]\n"
         "                      [--print-plan] [model/optimiser flags]\n"
         "Trains one run and records every step (loss, parameter hash, trajectory hash) in the database.\n"
         "  --print-plan     print how the engine runs each step of this config at --threads N (the\n"
         "                   reduction, phases, finish, update and scratch) and exit; records nothing\n"
         "  --steps N        steps to train (default: the task's, listed below)\n"
         "  --threads N      worker threads (default: online CPUs); never changes the bits\n"
         "  --db FILE        SQLite record (default runs.db)\n"
         "  --name NAME      a unique name for the run (default run-<id>)\n"
         "  --eval-every K   record the evaluation every K steps (always at the end)\n"
         "  --no-progress    no progress line (none is shown when stderr is not a terminal)\n"
         "  --checkpoint-every K\n"
         "                   write a checkpoint (parameters, optimiser state, step) every K steps and\n"
         "                   register it in the database; the last 2 of the run are kept. An interrupted\n"
         "                   run continues from its newest one with `lockstep resume RUN`\n"
         "  --checkpoint-dir DIR\n"
         "                   where checkpoints go (default: <db>.ckpt/, created when missing);\n"
         "                   files are named <database id>-run-<id>-step-<t>.ckpt\n"
         "  --keep-checkpoints N|all\n"
         "                   keep the newest N checkpoints (default 2), or all: `lockstep audit` replays\n"
         "                   the steps between kept checkpoints concurrently");
    print_config_help(cfg);
    puts("exit status: 0 done, 1 diverged, 2 bad usage or input, 130 interrupted");
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

int cmd_train(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    /* --print-plan is this command's alone: taken out before the shared parser sees the flags. */
    int want_plan = 0, kept = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < argc)
                argv[kept++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--print-plan") == 0)
            want_plan = 1;
        else
            argv[kept++] = argv[i];
    }
    argc = kept;
    ls_status st = cli_parse(argc, argv, CLI_CONFIG | CLI_TRAIN | CLI_DB | CLI_CKPT, 0, &a, &err);
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
                   .progress = a.progress, .eval_at_end = 1, .name = a.name, .db_path = a.db,
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

static void equiv_usage(void)
{
    puts("usage: lockstep equiv --threads 1,2,4,8 [train flags]\n"
         "Trains one config at each thread count, records each run, and verifies every run\n"
         "against the first, bit for bit at every step. The verdict is stored in the database.\n"
         "exit status: 0 all identical, 1 some run differs, 2 bad usage or input");
}

int cmd_equiv(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    ls_status st = cli_parse(argc, argv, CLI_CONFIG | CLI_TRAIN | CLI_DB | CLI_THREAD_LIST, 0, &a, &err);
    if (st != LS_OK) {
        cli_error("equiv", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        equiv_usage();
        return EXIT_OK;
    }
    /* Every input is checked before the first run is recorded: each thread
     * count once (a repeat would train the same run twice, and with --name
     * give two runs one name), the names free, the data readable. */
    for (int i = 0; i < a.n_threads && st == LS_OK; i++)
        for (int j = 0; j < i && st == LS_OK; j++)
            if (a.threads[i] == a.threads[j])
                st = ls_fail(&err, LS_EINVAL, "--threads: %d appears twice; each thread count is trained once",
                             a.threads[i]);
    if (st != LS_OK) {
        cli_error("equiv", &err, st);
        return EXIT_USAGE;
    }
    /* The data before the database, so that a refused command does not
     * leave a new empty database behind. */
    ls_dataset *data = NULL;
    if ((st = cli_check_regular("--db", a.db, &err)) != LS_OK ||
        (st = trainer_load_data(&a.cfg, &data, &err)) != LS_OK) {
        cli_error("equiv", &err, st);
        return EXIT_USAGE;
    }
    runlog *db;
    if ((st = cli_open_db(a.db, &db, &err)) != LS_OK) {
        cli_error("equiv", &err, st);
        dataset_destroy(data);
        return EXIT_USAGE;
    }
    /* Refuse a clash before anything is trained, so a refused command records nothing. */
    for (int i = 0; a.name != NULL && i < a.n_threads; i++) {
        char name[160];
        int64_t existing;
        snprintf(name, sizeof name, "%s-t%d", a.name, a.threads[i]);
        if (runlog_find(db, name, &existing, NULL) == LS_OK) {
            fprintf(stderr, "lockstep equiv: run name '%s' is already used in %s\n", name, a.db);
            dataset_destroy(data);
            runlog_close(db);
            return EXIT_USAGE;
        }
    }
    run_install_signals();
    int64_t ids[CLI_MAX_THREADS_LIST];
    uint64_t traj[CLI_MAX_THREADS_LIST];
    int rc = EXIT_OK;
    double sps[CLI_MAX_THREADS_LIST];
    printf("%-8s %-8s %-10s %-12s %-20s %-18s\n", "threads", "run", "status", "samples/s", "evaluation", "trajectory");
    for (int i = 0; i < a.n_threads; i++) {
        char name[160];
        if (a.name != NULL)
            snprintf(name, sizeof name, "%s-t%d", a.name, a.threads[i]);
        run_opts o = { .cfg = a.cfg, .threads = a.threads[i], .steps = a.steps, .eval_every = a.eval_every,
                       .progress = a.progress, .eval_at_end = 1, .name = a.name ? name : NULL, .db_path = a.db,
                       .data = data };
        run_result r;
        st = run_train(&o, &r, &err);
        if (st != LS_OK) {
            if (r.run_id >= 0) {
                char fate[512];
                cli_run_fate(a.db, r.run_id, fate, sizeof fate);
                fprintf(stderr, "lockstep equiv: %s (%s)\n", err.msg[0] ? err.msg : ls_strerror(st), fate);
            } else {
                cli_error("equiv", &err, st);
            }
            rc = cli_exit_code(st);
            break;
        }
        ids[i] = r.run_id;
        traj[i] = r.traj_hash;
        sps[i] = r.samples_per_second;
        char figure[64] = "-";
        if (r.n_metrics > 0)
            snprintf(figure, sizeof figure, "%s %.4f", r.metrics[0].name, r.metrics[0].value);
        printf("%-8d %-8lld %-10s %-12.0f %-20s %016llx\n", a.threads[i], (long long)r.run_id, r.status,
               r.samples_per_second, figure, (unsigned long long)r.traj_hash);
        fflush(stdout);
    }
    if (rc == EXIT_OK) {
        int differ = 0;
        for (int i = 1; i < a.n_threads; i++)
            differ |= verify_runs(db, ids[0], ids[i], "equiv", 1);
        if (differ) {
            for (int i = 1; i < a.n_threads; i++)
                verify_runs(db, ids[0], ids[i], "equiv-detail", 0);
            printf("equiv: NOT identical across threads");
            rc = EXIT_DIFFER;
        } else {
            printf("equiv: bit-identical at threads");
        }
        for (int i = 0; i < a.n_threads; i++)
            printf("%s%d", i ? "," : " ", a.threads[i]);
        printf(" over %lld steps; trajectory %016llx\n", (long long)a.steps, (unsigned long long)traj[0]);
        for (int i = 1; i < a.n_threads; i++)
            printf("equiv: %d threads ran %.2fx the speed of %d\n", a.threads[i], sps[0] > 0 ? sps[i] / sps[0] : 0,
                   a.threads[0]);
    }
    dataset_destroy(data);
    runlog_close(db);
    return rc;
}

/* --- bench ------------------------------------------------------------- */

static void bench_usage(void)
{
    puts("usage: lockstep bench [train flags] --threads 1,2 [--steps N] [--reps R]\n"
         "Throughput (samples/s, median of R repetitions: R 1..64, default 3) per thread count with\n"
         "the canonical tree, and the same with --reduce unordered (same leaf kernel, same leaf\n"
         "size), the speedup over one thread, the cost of the tree against unordered, GFLOP/s of the\n"
         "MLP, and the time spent hashing and recording a step in SQLite. Then, per thread count,\n"
         "where a step's time goes (us per step, medians; rows start with 'parts'): the model's\n"
         "prepare, its phases, the leaves with the tree's blocks, the finish, the update (these two\n"
         "with the tree's last pass; the update with the hash's share), the hash and the record.\n"
         "Nothing is recorded in runs.db.\n"
         "For the logic CA (gol, checkerboard) there is no unordered foil: the step time and the\n"
         "speedup are the figures; it holds its leaves, so its whole tree runs in the finish.\n"
         "With --peak [--threads T]: the FP32 peak of T cores for the kernels' arithmetic (see\n"
         "lockstep bench --peak --help).");
}

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

int cmd_bench(int argc, char **argv)
{
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--peak") == 0)
            return bench_peak(argc, argv);   /* the core's FP32 peak (bench_peak.c) */
    cli_args a;
    ls_err err = { "" };
    ls_status st = cli_parse(argc, argv, CLI_CONFIG | CLI_STEPS_FLAG | CLI_THREAD_LIST | CLI_REPS, 0, &a, &err);
    if (st != LS_OK) {
        cli_error("bench", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        bench_usage();
        return EXIT_OK;
    }
    int explicit_steps = 0;
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
        explicit_steps |= strcmp(argv[i], "--steps") == 0 || strncmp(argv[i], "--steps=", 8) == 0;
    if (!explicit_steps)
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
