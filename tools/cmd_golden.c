/* cmd_golden.c — `lockstep golden check|update`: reference runs pinned as text. */
#include "tools/tools.h"
#include "tools/commands.h"

#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "engine/core/train.h"
#include "record/golden.h"

static const int CHECK_THREADS[] = { 1, 2, 3, 8 };

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

/* One golden file, read and parsed before anything runs. */
typedef struct {
    const char *path;
    golden_file g;
    ls_config cfg;
} golden_job;

/* Reads, parses and bounds path into *j (golden_free(&j->g) it); prints one
 * line and returns 0 when it is unusable. */
static int load_job(const char *path, golden_job *j)
{
    ls_err err = { "" };
    memset(j, 0, sizeof *j);
    j->path = path;
    ls_status st = golden_read(path, &j->g, &err);
    if (st == LS_OK && j->g.n_steps - 1 > GOLDEN_MAX_STEPS)
        st = ls_fail(&err, LS_EINVAL, "%s: %zu steps; a golden file holds at most %d (seconds of training)", path,
                     j->g.n_steps - 1, GOLDEN_MAX_STEPS);
    if (st == LS_OK)
        st = config_parse_text(&j->cfg, j->g.config_text, path, &err);
    /* The sources: where the data are (the text task's --file). */
    char line[CONFIG_TEXT_MAX];
    for (const char *p = j->g.source_text; st == LS_OK && p != NULL && *p != '\0';) {
        const size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        char *eq = strchr(line, '=');
        if (eq == NULL)
            st = ls_fail(&err, LS_EFORMAT, "%s: source line '%s' is not key=value", path, line);
        else {
            *eq = '\0';
            ls_err e = { "" };
            if (config_set(&j->cfg, line, eq + 1, 0, &e) != LS_OK)
                st = ls_fail(&err, LS_EFORMAT, "%s: source %s: %s", path, line, e.msg);
        }
        p += n + (p[n] == '\n');
    }
    if (st != LS_OK) {
        cli_error("golden", &err, st);
        golden_free(&j->g);
        return 0;
    }
    return 1;
}

/* The one line for a run that stopped: interrupted (130) or failed. */
static int run_failed(const char *path, ls_status st, const ls_err *err)
{
    if (st == LS_EINTR) {
        fprintf(stderr, "lockstep golden: %s: interrupted\n", path);
        return EXIT_INTERRUPTED;
    }
    cli_error("golden", err, st);
    /* A changed input (data_hash, init_hash) is bad input, not a differing step. */
    return cli_exit_code_input(st, err) == EXIT_DIFFER ? EXIT_DIFFER : EXIT_USAGE;
}

/* Returns an exit code: 0 match, 1 differ, 2 bad file, 130 interrupted.
 * threads[0 .. n_threads): the thread counts (CHECK_THREADS unless
 * --threads); prefix > 0: only steps 0 .. prefix (--steps: the first steps
 * of a file too slow to re-run whole, as under an emulator). */
static int check_one(golden_job *j, const int *threads_list, size_t n_threads, int64_t prefix)
{
    ls_err err = { "" };
    const golden_file *g = &j->g;
    const char *path = j->path;
    ls_dataset *data = NULL;
    ls_status st = trainer_load_data(&j->cfg, &data, &err);
    if (st != LS_OK)
        return run_failed(path, run_interrupted ? LS_EINTR : st, &err);
    int64_t steps = (int64_t)g->n_steps - 1;
    if (prefix > 0 && prefix < steps)
        steps = prefix;
    const size_t n_rows = (size_t)steps + 1;
    ls_step *rows = calloc(g->n_steps, sizeof *rows);
    if (rows == NULL) {
        dataset_destroy(data);
        fprintf(stderr, "lockstep golden: %s: out of memory for %zu step rows\n", path, g->n_steps);
        return EXIT_USAGE;
    }
    int rc = EXIT_OK;
    char threads_done[64] = "";
    for (size_t ti = 0; ti < n_threads && rc == EXIT_OK; ti++) {
        int threads = threads_list[ti];
        run_opts o = { .cfg = j->cfg, .threads = threads, .steps = steps, .data = data, .rows = rows };
        run_result r;
        st = run_train(&o, &r, &err);
        if (st != LS_OK && st != LS_EDIVERGED) {
            rc = run_failed(path, st, &err);
            break;
        }
        for (size_t i = 0; i < n_rows; i++) {
            if (i > (size_t)r.steps_done || !same_row(&rows[i], &g->steps[i])) {
                char want[160], got[160] = "(no such step: the run stopped early)";
                golden_format_step(&g->steps[i], want, sizeof want);
                if (i <= (size_t)r.steps_done)
                    golden_format_step(&rows[i], got, sizeof got);
                printf("golden: %s:%zu differs at %d thread%s (step %zu)\n  expected %s\n  got      %s\n"
                       "  if the change is intended: lockstep golden update %s, and say why in golden/CHANGES\n",
                       path, row_line(g->config_text, i), threads, threads > 1 ? "s" : "", i, want, got, path);
                rc = EXIT_DIFFER;
                break;
            }
        }
        snprintf(threads_done + strlen(threads_done), sizeof threads_done - strlen(threads_done), "%s%d",
                 ti ? "," : "", threads);
    }
    if (rc == EXIT_OK && n_rows < g->n_steps)
        printf("golden: %s matches its first %lld of %zu steps (at threads %s)\n", path, (long long)steps,
               g->n_steps - 1, threads_done);
    else if (rc == EXIT_OK)
        printf("golden: %s matches (%lld steps at threads %s)\n", path, (long long)steps, threads_done);
    free(rows);
    dataset_destroy(data);
    return rc;
}

/* Where a golden file may be written: not over a file of the default
 * record (runs.db here) nor any database, log or checkpoint
 * (cli_guard_output), not over anything that is not a regular file, not
 * over a regular file that is not a golden file, and into a directory that
 * exists and is writable. Checked before any training; one line and 0 when
 * refused. */
static int writable_golden(const char *path)
{
    ls_err err = { "" };
    ls_status st = cli_guard_output("golden file", path, "runs.db", NULL, &err);
    if (st == LS_OK)
        st = cli_check_regular("golden file", path, &err);
    struct stat sb;
    if (st == LS_OK && stat(path, &sb) == 0 && sb.st_size > 0) {
        /* Only a golden file is replaced: anything else was not made here. */
        static const char magic[] = "# lockstep golden v";
        char head[sizeof magic - 1];
        int fd;
        size_t size, n = 0;
        ls_err ignored = { "" };
        if (file_open_regular(path, &fd, &size, &ignored) == LS_OK) {
            ssize_t k = read(fd, head, sizeof head);
            n = k > 0 ? (size_t)k : 0;
            close(fd);
        }
        if (n != sizeof head || memcmp(head, magic, sizeof head) != 0)
            st = ls_fail(&err, LS_EINVAL, "golden file %s: exists and is not a golden file; refusing to replace "
                         "it", path);
    }
    if (st == LS_OK) {
        char dir[4096];
        const char *slash = strrchr(path, '/');
        if (slash == NULL)
            snprintf(dir, sizeof dir, ".");
        else
            snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
        if (access(dir, W_OK | X_OK) != 0)
            st = ls_fail(&err, LS_EIO, "golden file %s: cannot write in %s: %s", path, dir, strerror(errno));
    }
    if (st != LS_OK) {
        cli_error("golden", &err, st);
        return 0;
    }
    return 1;
}

/* The rows of a golden file: cfg trained at one thread for steps steps.
 * *text gets the config with the data hash filled in. Exit code. */
static int train_golden(const char *path, ls_config *cfg, int64_t steps, ls_step **rows_out,
                        char text[CONFIG_TEXT_MAX], char sources[CONFIG_TEXT_MAX])
{
    ls_err err = { "" };
    *rows_out = NULL;
    ls_step *rows = calloc((size_t)steps + 1, sizeof *rows);
    if (rows == NULL) {
        fprintf(stderr, "lockstep golden: %s: out of memory for %lld step rows\n", path, (long long)steps + 1);
        return EXIT_USAGE;
    }
    ls_config ran;
    memset(&ran, 0, sizeof ran);
    run_opts o = { .cfg = *cfg, .threads = 1, .steps = steps, .rows = rows, .cfg_out = &ran };
    run_result r;
    ls_status st = run_train(&o, &r, &err);
    if (st == LS_OK && r.steps_done != steps)
        st = ls_fail(&err, LS_EINTR, "stopped at step %lld of %lld", (long long)r.steps_done, (long long)steps);
    if (st != LS_OK) {
        free(rows);
        return run_failed(path, st, &err);
    }
    /* The engine sets data_hash (0 for tasks that generate their samples)
     * and init_hash (the --init file's XXH3): the run's own config has
     * both, as the record's does, so that check names a changed input. */
    ls_config done = o.cfg;
    done.data_hash = ran.data_hash;
    done.init_hash = ran.init_hash;
    config_text(&done, text, CONFIG_TEXT_MAX);
    config_source_text(&done, sources, CONFIG_TEXT_MAX);
    *rows_out = rows;
    return EXIT_OK;
}

static int save_golden(const char *path, const char *text, const char *sources, const ls_step *rows,
                       int64_t steps)
{
    ls_err err = { "" };
    ls_status st = golden_save_sources(path, text, sources, rows, (size_t)steps + 1, &err);
    if (st != LS_OK) {
        cli_error("golden", &err, st);
        return cli_exit_code(st);
    }
    printf("golden: wrote %s (%lld steps); add a line to golden/CHANGES saying why\n", path, (long long)steps);
    return EXIT_OK;
}

/* update FILE...: every file read and checked, then every one trained, and
 * only then any written, so a bad file or a failed run changes none. */
static int update_files(golden_job *jobs, int n)
{
    for (int i = 0; i < n; i++)
        if (!writable_golden(jobs[i].path))
            return EXIT_USAGE;
    ls_step **rows = calloc((size_t)n, sizeof *rows);
    char (*texts)[CONFIG_TEXT_MAX] = calloc((size_t)n, sizeof *texts);
    char (*srcs)[CONFIG_TEXT_MAX] = calloc((size_t)n, sizeof *srcs);
    int rc = EXIT_OK;
    if (rows == NULL || texts == NULL || srcs == NULL) {
        fprintf(stderr, "lockstep golden: out of memory for %d files\n", n);
        rc = EXIT_USAGE;
    }
    for (int i = 0; i < n && rc == EXIT_OK; i++) {
        jobs[i].cfg.data_hash = 0;   /* re-read from the data (and the --init file) as they are now */
        jobs[i].cfg.init_hash = 0;
        rc = train_golden(jobs[i].path, &jobs[i].cfg, (int64_t)jobs[i].g.n_steps - 1, &rows[i], texts[i], srcs[i]);
    }
    for (int i = 0; i < n && rc == EXIT_OK; i++)
        rc = save_golden(jobs[i].path, texts[i], srcs[i], rows[i], (int64_t)jobs[i].g.n_steps - 1);
    for (int i = 0; rows != NULL && i < n; i++)
        free(rows[i]);
    free(rows);
    free(texts);
    free(srcs);
    return rc;
}

typedef struct {
    int update;
    char **files;
    int n_files;
} golden_args;

/* The file names (everything not a flag, and all after "--"); --steps only
 * with update. */
static ls_status golden_arg(void *ctx, const flag_spec *f, const char *v, ls_err *err)
{
    golden_args *g = ctx;
    if (f != NULL)
        return ls_fail(err, LS_EINVAL, "%s: only with %s", f->name,
                       strcmp(f->name, "--db") == 0 ? "save and compare (golden save RUN FILE --db DB)"
                                                    : "update FILE (golden update FILE --steps N [train flags])");
    g->files[g->n_files++] = (char *)(uintptr_t)v;
    return LS_OK;
}

/* golden save RUN FILE / golden compare FILE RUN: v2 files of recorded runs
 * (any framework's), through ls_golden_save / ls_golden_compare. */
static int golden_run_cmd(int argc, char **argv)
{
    const int save = strcmp(argv[0], "save") == 0;
    cli_args a;
    ls_err err = { "" };
    ls_status st = cli_parse_cmd("golden", argc - 1, argv + 1, CLI_DB, 2, NULL, NULL, &a, &err);
    if (st == LS_OK && a.help) {
        command_usage(command_find("golden"), stdout);
        return EXIT_OK;
    }
    if (st == LS_OK && a.n_positional != 2)
        st = ls_fail(&err, LS_EINVAL, "%s", save ? "save needs RUN FILE: lockstep golden save RUN FILE [--db DB]"
                                                 : "compare needs FILE RUN: lockstep golden compare FILE RUN [--db DB]");
    if (st != LS_OK) {
        cli_error("golden", &err, st);
        return EXIT_USAGE;
    }
    if (access(a.db, F_OK) != 0) {
        fprintf(stderr, "lockstep golden: %s: no such database\n", a.db);
        return EXIT_USAGE;
    }
    if (save) {
        const char *run = a.positional[0], *path = a.positional[1];
        const char *ci = getenv("CI");
        if (ci != NULL && *ci != '\0') {
            fprintf(stderr, "lockstep golden: save refuses to run when CI is set\n");
            return EXIT_USAGE;
        }
        if (!writable_golden(path))
            return EXIT_USAGE;
        if ((st = cli_guard_output("golden file", path, a.db, NULL, &err)) != LS_OK ||
            (st = ls_golden_save(a.db, run, path, &err)) != LS_OK) {
            cli_error("golden", &err, st);
            return EXIT_USAGE;
        }
        printf("golden: wrote %s from run %s\n", path, run);
        return EXIT_OK;
    }
    const char *path = a.positional[0], *run = a.positional[1];
    ls_golden_result r;
    if ((st = ls_golden_compare(a.db, run, path, &r, &err)) != LS_OK) {
        cli_error("golden", &err, st);
        return EXIT_USAGE;
    }
    if (r.config_differs)
        printf("note: run %s's config text is not the file's (compared all the same)\n", run);
    if (r.equal)
        printf("golden %s: run %s matches, %s\n", path, run, r.detail);
    else
        printf("golden %s: run %s differs first at %s\n", path, run, r.detail);
    return r.equal ? EXIT_OK : EXIT_DIFFER;
}

int cmd_golden(int argc, char **argv)
{
    if (argc < 1) {
        fputs("lockstep golden: missing check or update (see lockstep golden --help)\n", stderr);
        return EXIT_USAGE;
    }
    const command *me = command_find("golden");
    if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
        command_usage(me, stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[0], "save") == 0 || strcmp(argv[0], "compare") == 0)
        return golden_run_cmd(argc, argv);
    int update = strcmp(argv[0], "update") == 0;
    if (!update && strcmp(argv[0], "check") != 0) {
        fprintf(stderr, "lockstep golden: '%s' is not check, update, save or compare\n", argv[0]);
        return EXIT_USAGE;
    }
    argc--;
    argv++;
    /* update takes train flags (creating FILE from them); check none. */
    cli_args a;
    ls_err err = { "" };
    /* cli_args holds a default thread count; check's default is its own list. */
    int threads_given = 0;
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
        threads_given |= strncmp(argv[i], "--threads", 9) == 0 && (argv[i][9] == '\0' || argv[i][9] == '=');
    golden_args ga = { update, calloc((size_t)argc + 1, sizeof(char *)), 0 };
    if (ga.files == NULL) {
        fputs("lockstep golden: out of memory\n", stderr);
        return EXIT_USAGE;
    }
    ls_status st = cli_parse_cmd("golden", argc, argv,
                                 update ? CLI_CONFIG | CLI_STEPS_FLAG : CLI_THREAD_LIST | CLI_STEPS_FLAG, -1, golden_arg,
                                 &ga, &a, &err);
    if (st == LS_OK && a.help) {
        command_usage(me, stdout);
        free(ga.files);
        return EXIT_OK;
    }
    if (st != LS_OK) {
        cli_error("golden", &err, st);
        free(ga.files);
        return EXIT_USAGE;
    }
    const char *ci = getenv("CI");
    if (update && ci != NULL && *ci != '\0') {
        fprintf(stderr, "lockstep golden: update refuses to run when CI is set\n");
        free(ga.files);
        return EXIT_USAGE;
    }
    run_install_signals();
    if (update && a.n_flags > 0) {
        if (ga.n_files != 1)
            st = ls_fail(&err, LS_EINVAL, "update with flags needs exactly one FILE");
        /* Bounded here, where the value is read: a golden file is checked at
         * four thread counts by every `make test`. */
        if (st == LS_OK && a.steps > GOLDEN_MAX_STEPS)
            st = ls_fail(&err, LS_EINVAL, "--steps: %lld is out of range (1..%d): a golden file pins seconds of "
                         "training", (long long)a.steps, GOLDEN_MAX_STEPS);
        if (st != LS_OK) {
            cli_error("golden", &err, st);
            free(ga.files);
            return EXIT_USAGE;
        }
        int rc = EXIT_USAGE;
        if (writable_golden(ga.files[0])) {
            ls_step *rows = NULL;
            char text[CONFIG_TEXT_MAX], sources[CONFIG_TEXT_MAX];
            rc = train_golden(ga.files[0], &a.cfg, a.steps, &rows, text, sources);
            if (rc == EXIT_OK)
                rc = save_golden(ga.files[0], text, sources, rows, a.steps);
            free(rows);
        }
        free(ga.files);
        return rc;
    }
    char **files = ga.files, **named = ga.files;
    int n_files = ga.n_files;
    glob_t gl = { 0 };
    if (n_files == 0) {
        const char *root = getenv("LOCKSTEP_ROOT");
        char pattern[4096];
        snprintf(pattern, sizeof pattern, "%s%sgolden/*.golden", root ? root : "", root ? "/" : "");
        if (glob(pattern, 0, NULL, &gl) != 0 || gl.gl_pathc == 0) {
            fprintf(stderr, "lockstep golden: no golden files match %s\n", pattern);
            globfree(&gl);
            free(named);
            return EXIT_USAGE;
        }
        n_files = (int)gl.gl_pathc;
        files = gl.gl_pathv;
    }
    /* Every file read and parsed before any is run: a bad last file costs
     * nothing and changes nothing. */
    golden_job *jobs = calloc((size_t)n_files, sizeof *jobs);
    int rc = EXIT_OK, loaded = 0;
    if (jobs == NULL) {
        fputs("lockstep golden: out of memory\n", stderr);
        rc = EXIT_USAGE;
    }
    for (; rc == EXIT_OK && loaded < n_files; loaded++)
        if (!load_job(files[loaded], &jobs[loaded]))
            rc = EXIT_USAGE;
    if (rc == EXIT_OK && update) {
        rc = update_files(jobs, n_files);
    } else if (rc == EXIT_OK) {
        for (int i = 0; i < n_files && rc != EXIT_INTERRUPTED && rc != EXIT_USAGE; i++) {
            int r = threads_given ? check_one(&jobs[i], a.threads, (size_t)a.n_threads, a.steps_given ? a.steps : 0)
                                    : check_one(&jobs[i], CHECK_THREADS, sizeof CHECK_THREADS / sizeof CHECK_THREADS[0],
                                                a.steps_given ? a.steps : 0);
            if (r == EXIT_USAGE || r == EXIT_INTERRUPTED || (r == EXIT_DIFFER && rc == EXIT_OK))
                rc = r;
        }
    }
    for (int i = 0; jobs != NULL && i < loaded; i++)
        golden_free(&jobs[i].g);
    free(jobs);
    globfree(&gl);
    free(named);
    return rc;
}
