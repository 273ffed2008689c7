/* lockstep.c — the command line: one binary, subcommands (README.md, a tour of the command line). */
#include "tools/tools.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fputs("lockstep — training whose bits do not depend on the thread count\n"
          "\n"
          "usage: lockstep COMMAND [flags]     (lockstep COMMAND --help for its flags)\n"
          "\n"
          "  train   --task T [--model M] [--steps N] [--threads N] [--db FILE] [--name NAME] ...\n"
          "          [--checkpoint-every K] [--checkpoint-dir DIR]\n"
          "          train one run, recording every step's loss, parameter hash and trajectory hash\n"
          "  resume  RUN [--db FILE] [--threads N] [--steps N]\n"
          "          continue an interrupted run from its newest checkpoint, checking the recorded steps\n"
          "  export  RUN --circuit [--netlist] [-o FILE] [--db FILE]\n"
          "          the hard circuit of a logic or logic-ca run as C (64 cells per word) or a netlist\n"
          "  export  RUN --weights FILE.safetensors|FILE.npy [--db FILE]\n"
          "          the run's parameters as named float32 tensors (safetensors) or one flat .npy array\n"
          "  predict RUN --input X.npy -o Y.npy [--labels] [--db FILE] [--threads N]\n"
          "          the run's scores [N, outputs] (float32) or labels [N] (int64) for the samples in X.npy\n"
          "  render  RUN -o FILE.png [--grid N] [--steps N] [--seed S] [--scale K] [--db FILE]\n"
          "          a PNG of a logic-ca run's hard rollout, frame by frame\n"
          "  runs    [--db FILE]                 list runs\n"
          "  runs    --sweep ID [--db FILE]      a sweep's runs with final loss and evaluation, best first\n"
          "  show    RUN [--db FILE] [--steps]   config, environment, summary, step table\n"
          "  verify  RUN_A RUN_B [--db FILE]     compare two runs bit for bit, step by step\n"
          "          (a run in another database: DB:RUN, e.g. lockstep verify a.db:1 b.db:1)\n"
          "  report  RUN [RUN...] -o FILE.html [--db FILE]\n"
          "          one self-contained HTML page: runs, their diff, loss curves, verdicts, audits\n"
          "  audit   RUN [--db FILE] [--threads N] [--record-only] [--certificate FILE.json]\n"
          "          prove a recorded run: re-execute every step (or check the record's hash chain) and\n"
          "          its checkpoints; the verdict is stored and shown by show\n"
          "  reproduce CERT.json [--threads N]\n"
          "          retrain an audit certificate's config without a database and compare the trajectory\n"
          "  import  OTHER.db [RUN...] [--db FILE]  copy runs of another database here, with everything recorded\n"
          "  rm      RUN [--db FILE]             delete a run, its rows and the checkpoint files this database wrote\n"
          "  rename  RUN NEW [--db FILE]         give a run another name\n"
          "  equiv   --threads 1,2,4,8 [train flags]\n"
          "          train one config at each thread count and verify all against the first\n"
          "  golden  check [FILE...] | update [FILE...]\n"
          "  bench   [train flags] --threads 1,2 throughput per thread count, tree vs unordered\n"
          "  graph   cliques FILE -k K [--count|--list] | ged A B | ged --pairs FILE   exact graph operations\n"
          "  sweep   --seeds 1-8 [--lr 0.01,0.05] [any train flag as a list] [train flags] [--threads N]\n"
          "          train every combination at once in one process, each run recorded with the sweep's id\n"
          "\n"
          "\"--\" ends the flags of every command: what follows is a name (a run, a file).\n"
          "exit status: 0 success/equal, 1 differ/diverged (or nothing to compare), 2 bad usage or\n"
          "input (also: stdout could not be written), 130 interrupted\n",
          f);
}

/* A standard descriptor closed at start gets /dev/null, so no file the
 * command opens later (a database, a checkpoint, a data file) takes its
 * number and receives what is printed. stdout gets it read-only, so that
 * every write to a closed stdout fails and finish_stdout reports it. */
static void hold_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int n = open("/dev/null", fd == 2 ? O_WRONLY : O_RDONLY);
        if (n >= 0 && n != fd) {
            dup2(n, fd);
            close(n);
        }
    }
}

/* Output that never arrived is a failure: a full disk or a closed stdout
 * must not pass for success. rc 2 (its one line is said) and 130 stand. */
static int finish_stdout(const char *cmd, int rc)
{
    errno = 0;
    int flushed = fflush(stdout) == 0;
    int e = errno;
    int bad = !flushed || ferror(stdout);
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        flushed = 0;
        e = errno;
    }
    if (!bad || (rc != EXIT_OK && rc != EXIT_DIFFER))
        return rc;
    fprintf(stderr, "lockstep%s%s: stdout: write failed: %s\n", cmd != NULL ? " " : "", cmd != NULL ? cmd : "",
            !flushed && e != 0 ? strerror(e) : "the output is incomplete");
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    hold_std_fds();
    /* A full disk (or a file-size limit) must fail a write with an error the
     * record can report, never kill the process mid-transaction. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        fputs("lockstep: missing command (see lockstep --help)\n", stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {
        { "train", cmd_train }, { "runs", cmd_runs }, { "show", cmd_show }, { "verify", cmd_verify },
        { "equiv", cmd_equiv }, { "golden", cmd_golden }, { "bench", cmd_bench }, { "resume", cmd_resume },
        { "export", cmd_export }, { "render", cmd_render }, { "predict", cmd_predict },
        { "audit", cmd_audit }, { "reproduce", cmd_reproduce },
        { "report", cmd_report },
        { "graph", cmd_graph },
        { "sweep", cmd_sweep },
        { "import", cmd_import }, { "rm", cmd_rm }, { "rename", cmd_rename },
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(cmd, cmds[i].name) == 0)
            return finish_stdout(cmd, cmds[i].fn(argc - 2, argv + 2));
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return finish_stdout(NULL, EXIT_OK);
    }
    if (strcmp(cmd, "--version") == 0) {
        puts(LS_ENGINE_VERSION);
        return finish_stdout(NULL, EXIT_OK);
    }
    fprintf(stderr, "lockstep: '%s' is not a command (see lockstep --help)\n", cmd);
    return EXIT_USAGE;
}
