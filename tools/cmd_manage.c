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
#include "tools/commands.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/checkpoint.h"

#define MANAGE_MAX_ARGS 256

typedef struct {
    const char **pos;
    int n_pos;
} manage_args;

static ls_status manage_arg(void *ctx, const flag_spec *f, const char *v, ls_err *err)
{
    manage_args *m = ctx;
    (void)f;   /* no flags of their own: only arguments come here */
    if (m->n_pos == MANAGE_MAX_ARGS)
        return ls_fail(err, LS_EINVAL, "more than %d arguments", MANAGE_MAX_ARGS);
    m->pos[m->n_pos++] = v;
    return LS_OK;
}

/* --db FILE and --help through the command's table entry; the rest positional. */
static ls_status manage_parse(const char *cmd, int argc, char **argv, const char **db, int *help, const char **pos,
                              int *n_pos, ls_err *err)
{
    cli_args a;
    manage_args m = { pos, 0 };
    ls_status st = cli_parse_cmd(cmd, argc, argv, CLI_DB, -1, manage_arg, &m, &a, err);
    *db = a.db;
    *help = a.help;
    *n_pos = m.n_pos;
    return st;
}

int cmd_import(int argc, char **argv)
{
    const char *db_path, *pos[MANAGE_MAX_ARGS];
    int help, n_pos;
    ls_err err = { "" };
    ls_status st = manage_parse("import", argc, argv, &db_path, &help, pos, &n_pos, &err);
    if (st == LS_OK && !help && n_pos < 1)
        st = ls_fail(&err, LS_EINVAL, "needs the database to import from (OTHER.db)");
    if (st != LS_OK) {
        cli_error("import", &err, st);
        return EXIT_USAGE;
    }
    if (help) {
        command_usage(command_find("import"), stdout);
        return EXIT_OK;
    }
    const char *src_path = pos[0];
    runlog *src, *dst;
    if (access(src_path, F_OK) != 0) {
        fprintf(stderr, "lockstep import: %s: no such database\n", src_path);
        return EXIT_USAGE;
    }
    if ((st = cli_check_regular(NULL, src_path, &err)) != LS_OK || (st = cli_open_db(src_path, &src, &err)) != LS_OK) {
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
    ls_status st = manage_parse("rm", argc, argv, &db_path, &help, pos, &n_pos, &err);
    if (st == LS_OK && !help && n_pos != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st != LS_OK) {
        cli_error("rm", &err, st);
        return EXIT_USAGE;
    }
    if (help) {
        command_usage(command_find("rm"), stdout);
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
    ls_status st = manage_parse("rename", argc, argv, &db_path, &help, pos, &n_pos, &err);
    if (st == LS_OK && !help && n_pos != 2)
        st = ls_fail(&err, LS_EINVAL, "needs RUN (an id or a name) and its NEW name");
    if (st != LS_OK) {
        cli_error("rename", &err, st);
        return EXIT_USAGE;
    }
    if (help) {
        command_usage(command_find("rename"), stdout);
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
