/* lockstep.c — the command line: one binary, subcommands (README.md, a tour of the command line), found
 * in the command table (tools/commands.h). */
#include "tools/tools.h"
#include "tools/commands.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

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
    /* The commands are the table's (tools/commands.c); an operation of a
     * command ("graph cliques") is its parent's to dispatch. */
    const command *c = strchr(cmd, ' ') == NULL ? command_find(cmd) : NULL;
    if (c != NULL && c->run != NULL)
        return finish_stdout(cmd, c->run(argc - 2, argv + 2));
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        command_overview(stdout);
        return finish_stdout(NULL, EXIT_OK);
    }
    if (strcmp(cmd, "--version") == 0) {
        puts(LS_ENGINE_VERSION);
        return finish_stdout(NULL, EXIT_OK);
    }
    fprintf(stderr, "lockstep: '%s' is not a command (see lockstep --help)\n", cmd);
    return EXIT_USAGE;
}
