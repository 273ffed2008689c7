/* cmd_golden.c — `lockstep golden check|update`: reference runs pinned as text. */
#include "tools.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/train.h"
#include "../record/golden.h"

static const int CHECK_THREADS[] = { 1, 2, 3, 8 };

static void golden_usage(void)
{
    puts("usage: lockstep golden check [FILE...]\n"
         "       lockstep golden update [FILE...]\n"
         "       lockstep golden update FILE --steps N [train flags]   (create FILE from flags)\n"
         "check re-runs each golden file's config at 1, 2, 3 and 8 threads and compares every step\n"
         "(loss bits, parameter hash, trajectory hash). Default files: golden/*.golden.\n"
         "update rewrites files from their own config (refused when CI is set); every change to a\n"
         "golden file needs a line in golden/CHANGES saying what changed and why.\n"
         "exit status: 0 all match, 1 a file differs, 2 a file is missing or unparseable");
}

/* Line number (1-based) of step row i in a golden file with this config. */
static size_t row_line(const char *config_text, size_t i)
{
    size_t k = 0;
    for (const char *p = config_text; *p; p++)
        k += *p == '\n';
    return 3 + k + 1 + i;
}

static int same_row(const ls_step *a, const ls_step *b)
{
    return a->step == b->step && a->has_loss == b->has_loss && (!a->has_loss || a->loss_bits == b->loss_bits)
           && a->param_hash == b->param_hash && a->traj_hash == b->traj_hash;
}

/* Returns an exit code: 0 match, 1 differ, 2 bad file. */
static int check_one(const char *path)
{
    ls_err err = { "" };
    golden_file g = { 0 };
    ls_status st = golden_read(path, &g, &err);
    ls_config cfg;
    if (st == LS_OK)
        st = config_parse_text(&cfg, g.config_text, path, &err);
    if (st != LS_OK) {
        cli_error("golden", &err, st);
        golden_free(&g);
        return EXIT_USAGE;
    }
    ls_dataset *data = NULL;
    if ((st = trainer_load_data(&cfg, &data, &err)) != LS_OK) {
        cli_error("golden", &err, st);
        golden_free(&g);
        return EXIT_USAGE;
    }
    int64_t steps = (int64_t)g.n_steps - 1;
    ls_step *rows = calloc(g.n_steps, sizeof *rows);
    int rc = EXIT_OK;
    char threads_done[64] = "";
    for (size_t ti = 0; ti < sizeof CHECK_THREADS / sizeof CHECK_THREADS[0] && rc == EXIT_OK; ti++) {
        int threads = CHECK_THREADS[ti];
        run_opts o = { .cfg = cfg, .threads = threads, .steps = steps, .data = data, .rows = rows };
        run_result r;
        st = run_train(&o, &r, &err);
        if (st != LS_OK && st != LS_EDIVERGED) {
            cli_error("golden", &err, st);
            rc = cli_exit_code(st) == EXIT_DIFFER ? EXIT_DIFFER : EXIT_USAGE;
            break;
        }
        for (size_t i = 0; i < g.n_steps; i++) {
            if (i > (size_t)r.steps_done || !same_row(&rows[i], &g.steps[i])) {
                char want[160], got[160] = "(no such step: the run stopped early)";
                golden_format_step(&g.steps[i], want, sizeof want);
                if (i <= (size_t)r.steps_done)
                    golden_format_step(&rows[i], got, sizeof got);
                printf("golden: %s:%zu differs at %d thread%s (step %zu)\n  expected %s\n  got      %s\n"
                       "  if the change is intended: lockstep golden update %s, and say why in golden/CHANGES\n",
                       path, row_line(g.config_text, i), threads, threads > 1 ? "s" : "", i, want, got, path);
                rc = EXIT_DIFFER;
                break;
            }
        }
        snprintf(threads_done + strlen(threads_done), sizeof threads_done - strlen(threads_done), "%s%d",
                 ti ? "," : "", threads);
    }
    if (rc == EXIT_OK)
        printf("golden: %s matches (%lld steps at threads %s)\n", path, (long long)steps, threads_done);
    free(rows);
    dataset_destroy(data);
    golden_free(&g);
    return rc;
}

static int write_golden(const char *path, ls_config *cfg, int64_t steps)
{
    ls_err err = { "" };
    ls_step *rows = calloc((size_t)steps + 1, sizeof *rows);
    run_opts o = { .cfg = *cfg, .threads = 1, .steps = steps, .rows = rows };
    run_result r;
    ls_status st = run_train(&o, &r, &err);
    if (st == LS_OK) {
        char text[CONFIG_TEXT_MAX];
        ls_config done = o.cfg;
        /* The trainer fills in the data hash; take it from the run's own config. */
        ls_dataset *d = NULL;
        if (done.data_hash == 0 && trainer_load_data(&done, &d, &err) == LS_OK && d != NULL)
            done.data_hash = d->hash;   /* tasks that generate their samples have none */
        dataset_destroy(d);
        config_text(&done, text, sizeof text);
        st = golden_save(path, text, rows, (size_t)steps + 1, &err);
    }
    free(rows);
    if (st != LS_OK) {
        cli_error("golden", &err, st);
        return cli_exit_code(st);
    }
    printf("golden: wrote %s (%lld steps); add a line to golden/CHANGES saying why\n", path, (long long)steps);
    return EXIT_OK;
}

static int update_from_file(const char *path)
{
    ls_err err = { "" };
    golden_file g = { 0 };
    ls_config cfg;
    ls_status st = golden_read(path, &g, &err);
    if (st == LS_OK)
        st = config_parse_text(&cfg, g.config_text, path, &err);
    int64_t steps = (int64_t)g.n_steps - 1;
    golden_free(&g);
    if (st != LS_OK) {
        cli_error("golden", &err, st);
        return EXIT_USAGE;
    }
    cfg.data_hash = 0;   /* re-read from the data as it is now */
    return write_golden(path, &cfg, steps);
}

int cmd_golden(int argc, char **argv)
{
    if (argc < 1) {
        fputs("lockstep golden: missing check or update (see lockstep golden --help)\n", stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
        golden_usage();
        return EXIT_OK;
    }
    int update = strcmp(argv[0], "update") == 0;
    if (!update && strcmp(argv[0], "check") != 0) {
        fprintf(stderr, "lockstep golden: '%s' is not check or update\n", argv[0]);
        return EXIT_USAGE;
    }
    argc--;
    argv++;
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            golden_usage();
            return EXIT_OK;
        }
    const char *ci = getenv("CI");
    if (update && ci != NULL && *ci != '\0') {
        fprintf(stderr, "lockstep golden: update refuses to run when CI is set\n");
        return EXIT_USAGE;
    }
    int has_flags = 0;
    for (int i = 0; i < argc; i++)
        has_flags |= strncmp(argv[i], "--", 2) == 0;
    if (update && has_flags) {
        cli_args a;
        ls_err err = { "" };
        ls_status st = cli_parse(argc, argv, CLI_CONFIG | CLI_STEPS_FLAG, 1, &a, &err);
        if (st == LS_OK && a.n_positional != 1)
            st = ls_fail(&err, LS_EINVAL, "update with flags needs exactly one FILE");
        if (st != LS_OK) {
            cli_error("golden", &err, st);
            return EXIT_USAGE;
        }
        return write_golden(a.positional[0], &a.cfg, a.steps);
    }
    for (int i = 0; i < argc; i++)
        if (argv[i][0] == '-') {
            fprintf(stderr, "lockstep golden: %s: unknown flag\n", argv[i]);
            return EXIT_USAGE;
        }
    glob_t gl = { 0 };
    if (argc == 0) {
        const char *root = getenv("LOCKSTEP_ROOT");
        char pattern[4096];
        snprintf(pattern, sizeof pattern, "%s%sgolden/*.golden", root ? root : "", root ? "/" : "");
        if (glob(pattern, 0, NULL, &gl) != 0 || gl.gl_pathc == 0) {
            fprintf(stderr, "lockstep golden: no golden files match %s\n", pattern);
            globfree(&gl);
            return EXIT_USAGE;
        }
        argc = (int)gl.gl_pathc;
        argv = gl.gl_pathv;
    }
    int rc = EXIT_OK;
    for (int i = 0; i < argc; i++) {
        int r = update ? update_from_file(argv[i]) : check_one(argv[i]);
        if (r == EXIT_USAGE || (r == EXIT_DIFFER && rc == EXIT_OK))
            rc = r;
    }
    globfree(&gl);
    return rc;
}
