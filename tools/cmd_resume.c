/* cmd_resume.c — `lockstep resume`: continue an interrupted run from its
 * newest checkpoint, proving on the way that the recorded steps after the
 * checkpoint are reproduced bit for bit (tools/run.c, run_resume). */
#include "tools/tools.h"
#include "tools/commands.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_resume(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    ls_status st = cli_parse_cmd("resume", argc, argv, CLI_DB | CLI_STEPS_FLAG | CLI_THREADS | CLI_CKPT | CLI_PROGRESS,
                                 1, NULL, NULL, &a, &err);
    if (st == LS_OK && !a.help && a.n_positional != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st != LS_OK) {
        cli_error("resume", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        command_usage(command_find("resume"), stdout);
        return EXIT_OK;
    }
    /* Resuming never creates a database: a mistyped path is an error. */
    if (access(a.db, F_OK) != 0) {
        fprintf(stderr, "lockstep resume: %s: no such database\n", a.db);
        return EXIT_USAGE;
    }
    runlog *db;
    if ((st = cli_open_db(a.db, &db, &err)) != LS_OK) {
        cli_error("resume", &err, st);
        return EXIT_USAGE;
    }
    int64_t id;
    if ((st = runlog_find(db, a.positional[0], &id, &err)) != LS_OK) {
        cli_error("resume", &err, st);
        runlog_close(db);
        return EXIT_USAGE;
    }
    run_install_signals();
    runlog_close(db);   /* the session opens the record itself */
    char run_id[32];
    snprintf(run_id, sizeof run_id, "%lld", (long long)id);
    run_opts o = { .threads = a.threads[0], .steps = a.steps, .progress = a.progress, .eval_at_end = 1,
                   .db_path = a.db, .checkpoint_every = a.checkpoint_every, .checkpoint_dir = a.checkpoint_dir,
                   .keep_checkpoints = a.keep_checkpoints };
    run_result r;
    st = run_resume(&o, run_id, &r, &err);
    if (st != LS_OK) {
        if (r.bad_input) {
            cli_error("resume", &err, st);
            return EXIT_USAGE;
        }
        /* What the record holds, read back: a failed commit loses the steps
         * the engine buffered (cli_run_fate). */
        char fate[512];
        cli_run_fate(a.db, id, fate, sizeof fate);
        fprintf(stderr, "lockstep resume: %s (%s)\n", err.msg[0] ? err.msg : ls_strerror(st), fate);
        return cli_exit_code(st);
    }
    if (r.nothing_to_do) {
        printf("resume: run %lld is done (%lld steps, trajectory %016llx); nothing to do\n", (long long)id,
               (long long)r.steps_done, (unsigned long long)r.traj_hash);
        return EXIT_OK;
    }
    /* A checkpoint passed over (damaged, missing, another database's) is
     * said, so the user learns why the resume started earlier. */
    if (r.checkpoint_note[0])
        printf("resume: %s\n", r.checkpoint_note);
    if (r.checkpoint_path[0])
        printf("resume: run %lld from the checkpoint at step %lld (%s)\n", (long long)id, (long long)r.resumed_from,
               r.checkpoint_path);
    else
        printf("resume: run %lld from step 0 (no checkpoint)\n", (long long)id);
    printf("resume: recomputed %lld recorded steps: identical\n", (long long)r.recomputed);
    char figures[256];
    printf("resume: run %lld, %lld steps, %s, final loss %.6f, %s, %.0f samples/s, trajectory %016llx\n",
           (long long)id, (long long)r.steps_done, r.status, r.last_loss,
           run_format_metrics(&r, figures, sizeof figures), r.samples_per_second,
           (unsigned long long)r.traj_hash);
    return EXIT_OK;
}
