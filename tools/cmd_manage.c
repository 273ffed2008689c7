/* cmd_manage.c — `lockstep import`, `lockstep rm`, `lockstep rename`:
 * moving runs between databases and within one (runlog.h, moving runs).
 *
 * import copies runs with everything recorded of them, keeping their config
 * hashes and trajectories, so `verify` inside one database compares runs
 * recorded on two machines. rm deletes a run's rows and the checkpoint
 * files this database wrote for it — a file's header names the database
 * and run it belongs to (record/checkpoint.h), and only a file whose header
 * names this database's identity now, this run and its registered step is
 * deleted; an imported run's files stay their writer's. */
#include "tools/tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/checkpoint.h"

#define MANAGE_MAX_ARGS 256

/* Flags --db FILE and --help, "--" ending them; the rest positional. */
static ls_status manage_parse(int argc, char **argv, const char **db, int *help, const char **pos, int *n_pos,
                              ls_err *err)
{
    int ended = 0;
    *db = "runs.db";
    *help = 0;
    *n_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (!ended && strcmp(s, "--") == 0) {
            ended = 1;
        } else if (!ended && (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0)) {
            *help = 1;
        } else if (!ended && strcmp(s, "--db") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return ls_fail(err, LS_EINVAL, "--db: needs a file name");
            *db = argv[++i];
        } else if (!ended && strncmp(s, "--db=", 5) == 0) {
            if (s[5] == '\0')
                return ls_fail(err, LS_EINVAL, "--db: needs a file name");
            *db = s + 5;
        } else if (!ended && s[0] == '-' && s[1] != '\0') {
            return ls_fail(err, LS_EINVAL, "%.60s: unknown flag", s);
        } else if (*n_pos == MANAGE_MAX_ARGS) {
            return ls_fail(err, LS_EINVAL, "more than %d arguments", MANAGE_MAX_ARGS);
        } else {
            pos[(*n_pos)++] = s;
        }
    }
    return LS_OK;
}

int cmd_import(int argc, char **argv)
{
    const char *db_path, *pos[MANAGE_MAX_ARGS];
    int help, n_pos;
    ls_err err = { "" };
    ls_status st = manage_parse(argc, argv, &db_path, &help, pos, &n_pos, &err);
    if (st == LS_OK && !help && n_pos < 1)
        st = ls_fail(&err, LS_EINVAL, "needs the database to import from (OTHER.db)");
    if (st != LS_OK) {
        cli_error("import", &err, st);
        return EXIT_USAGE;
    }
    if (help) {
        puts("usage: lockstep import OTHER.db [RUN...] [--db FILE]\n"
             "Copies runs (default: all) of OTHER.db into the database (--db, default runs.db, created when\n"
             "missing) with their steps, evaluations, checkpoint registrations, sources, processes, audits and\n"
             "the verdicts between them, keeping config hashes and trajectories: `verify` then compares them\n"
             "with the runs here. The checkpoint files stay where they are and stay OTHER.db's (never deleted\n"
             "from here). A run name the database has already is refused and nothing is copied.\n"
             "Prints one line per run: its id in OTHER.db and its id here.\n"
             "exit status: 0 copied, 2 bad usage or input (a name clash, a run or file that does not exist)");
        return EXIT_OK;
    }
    const char *src_path = pos[0];
    runlog *src, *dst;
    if (access(src_path, F_OK) != 0) {
        fprintf(stderr, "lockstep import: %s: no such database\n", src_path);
        return EXIT_USAGE;
    }
    if ((st = cli_open_db(src_path, &src, &err)) != LS_OK) {
        cli_error("import", &err, st);
        return EXIT_USAGE;
    }
    const size_t n_ask = (size_t)(n_pos - 1);
    int64_t *ids = NULL, *new_ids = NULL;
    runlog_run *runs = NULL;
    size_t n = 0;
    if (n_ask == 0) {
        st = runlog_list(src, &runs, &n, &err);
        if (st == LS_OK && n == 0)
            st = ls_fail(&err, LS_ENOTFOUND, "%s has no runs to import", src_path);
    } else {
        runs = calloc(n_ask, sizeof *runs);
        if (runs == NULL)
            st = ls_fail(&err, LS_ENOMEM, "out of memory");
        for (size_t i = 0; i < n_ask && st == LS_OK; i++) {
            int64_t id;
            if ((st = runlog_find(src, pos[i + 1], &id, &err)) == LS_OK &&
                (st = runlog_get_run(src, id, &runs[i], &err)) == LS_OK)
                n++;
            for (size_t j = 0; j + 1 < n && st == LS_OK; j++)
                if (runs[j].id == id)
                    st = ls_fail(&err, LS_EINVAL, "run %lld is named twice", (long long)id);
        }
    }
    if (st == LS_OK) {
        ids = malloc(n * sizeof *ids);
        new_ids = malloc(n * sizeof *new_ids);
        if (ids == NULL || new_ids == NULL)
            st = ls_fail(&err, LS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; st == LS_OK && i < n; i++)
        ids[i] = runs[i].id;
    runlog_close(src);
    struct stat sa, sb;
    if (st == LS_OK && stat(src_path, &sa) == 0 && stat(db_path, &sb) == 0 && sa.st_dev == sb.st_dev &&
        sa.st_ino == sb.st_ino)
        st = ls_fail(&err, LS_EEXIST, "%s is the database imported into (--db %s): its runs are there already",
                     src_path, db_path);
    if (st == LS_OK && (st = cli_check_regular("--db", db_path, &err)) == LS_OK &&
        (st = cli_open_db(db_path, &dst, &err)) == LS_OK) {
        st = runlog_import(dst, src_path, ids, n, new_ids, &err);
        runlog_close(dst);
    }
    if (st == LS_OK)
        for (size_t i = 0; i < n; i++)
            printf("import: run %lld '%s' of %s is run %lld in %s\n", (long long)ids[i], runs[i].name, src_path,
                   (long long)new_ids[i], db_path);
    else
        cli_error("import", &err, st);
    for (size_t i = 0; runs != NULL && i < (n_ask ? n_ask : n); i++)
        runlog_run_free(&runs[i]);
    free(runs);
    free(ids);
    free(new_ids);
    return st == LS_OK ? EXIT_OK : EXIT_USAGE;
}

int cmd_rm(int argc, char **argv)
{
    const char *db_path, *pos[MANAGE_MAX_ARGS];
    int help, n_pos;
    ls_err err = { "" };
    ls_status st = manage_parse(argc, argv, &db_path, &help, pos, &n_pos, &err);
    if (st == LS_OK && !help && n_pos != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st != LS_OK) {
        cli_error("rm", &err, st);
        return EXIT_USAGE;
    }
    if (help) {
        puts("usage: lockstep rm RUN [--db FILE]\n"
             "Deletes a run: its rows (steps, evaluations, checkpoints, sources, processes, audits, the verdicts\n"
             "naming it) and the checkpoint files this database wrote for it. A file this database did not\n"
             "write (an imported run's, another database's, an older file naming nobody) is kept, and said.\n"
             "exit status: 0 deleted, 2 bad usage or input (no such run, a run still running)");
        return EXIT_OK;
    }
    runlog *db;
    runlog_run run;
    int rc = cli_open_run("rm", db_path, pos[0], &db, &run);
    if (rc != EXIT_OK)
        return rc;
    runlog_ckpt *ck = NULL;
    size_t n_ck = 0;
    const runlog_identity *id = NULL;
    if (strcmp(run.status, "running") == 0)
        st = ls_fail(&err, LS_EEXIST, "run %lld '%s' is running (process %lld); delete it once it stops",
                     (long long)run.id, run.name, (long long)run.pid);
    if (st == LS_OK && (st = runlog_checkpoints(db, run.id, &ck, &n_ck, &err)) == LS_OK &&
        (st = runlog_get_identity(db, 1, &id, &err)) == LS_OK)
        st = runlog_run_delete(db, run.id, &err);
    if (st != LS_OK) {
        cli_error("rm", &err, st);
        runlog_checkpoints_free(ck, n_ck);
        runlog_run_free(&run);
        runlog_close(db);
        return EXIT_USAGE;
    }
    /* The rows are gone first: a failure from here on leaves a file behind,
     * never a run whose checkpoints are missing. */
    size_t deleted = 0, kept = 0;
    for (size_t i = 0; i < n_ck; i++) {
        int dup = 0;
        for (size_t j = 0; j < i; j++)
            dup |= strcmp(ck[j].path, ck[i].path) == 0;
        if (dup)
            continue;
        ckpt_info h;
        const ls_status hs = ckpt_read_head(ck[i].path, &h, NULL);
        if (hs == LS_ENOTFOUND)
            continue;
        const int ours = hs == LS_OK && h.has_owner &&
                         memcmp(h.owner.db_id, id->id, CKPT_DBID_BYTES) == 0 && h.owner.run_id == run.id &&
                         h.step == ck[i].step;
        if (ours && unlink(ck[i].path) == 0) {
            deleted++;
        } else {
            kept++;
            fprintf(stderr, "lockstep rm: kept %s (%s)\n", ck[i].path,
                    ours ? strerror(errno) : "not a file this database wrote for this run");
        }
    }
    printf("rm: run %lld '%s' deleted, %zu checkpoint file%s deleted", (long long)run.id, run.name, deleted,
           deleted == 1 ? "" : "s");
    if (kept > 0)
        printf(", %zu kept", kept);
    printf("\n");
    runlog_checkpoints_free(ck, n_ck);
    runlog_run_free(&run);
    runlog_close(db);
    return EXIT_OK;
}

int cmd_rename(int argc, char **argv)
{
    const char *db_path, *pos[MANAGE_MAX_ARGS];
    int help, n_pos;
    ls_err err = { "" };
    ls_status st = manage_parse(argc, argv, &db_path, &help, pos, &n_pos, &err);
    if (st == LS_OK && !help && n_pos != 2)
        st = ls_fail(&err, LS_EINVAL, "needs RUN (an id or a name) and its NEW name");
    if (st != LS_OK) {
        cli_error("rename", &err, st);
        return EXIT_USAGE;
    }
    if (help) {
        puts("usage: lockstep rename RUN NEW [--db FILE]\n"
             "Gives run RUN the name NEW (printable, not starting with '-', not all digits, at most 100\n"
             "characters). A name another run has is refused.\n"
             "exit status: 0 renamed, 2 bad usage or input (no such run, a bad or taken name)");
        return EXIT_OK;
    }
    runlog *db;
    runlog_run run;
    int rc = cli_open_run("rename", db_path, pos[0], &db, &run);
    if (rc != EXIT_OK)
        return rc;
    if ((st = runlog_run_rename(db, run.id, pos[1], &err)) != LS_OK) {
        cli_error("rename", &err, st);
        rc = EXIT_USAGE;
    } else {
        printf("rename: run %lld '%s' is now '%s'\n", (long long)run.id, run.name, pos[1]);
    }
    runlog_run_free(&run);
    runlog_close(db);
    return rc;
}
