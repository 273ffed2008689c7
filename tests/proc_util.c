/* proc_util.c — the process runner shared by the end-to-end test programs;
 * see proc_util.h. The Makefile links this file into every test program
 * (every .c file in tests/ whose name does not start with test_), so it
 * defines no main and only proc_-prefixed names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/proc_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- files and directories ---- */

double proc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void proc_append(char **buf, size_t *len, size_t *cap, const char *src, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 4096;
        while (nc < *len + n + 1)
            nc *= 2;
        char *b = realloc(*buf, nc);
        assert_non_null(b);
        *buf = b;
        *cap = nc;
    }
    memcpy(*buf + *len, src, n);
    *len += n;
    (*buf)[*len] = '\0';
}

const char *proc_need_file(const char *path, const char *alt, const char *package)
{
    if (access(path, R_OK) == 0)
        return path;
    if (alt != NULL && access(alt, R_OK) == 0)
        return alt;
    fail_msg("%s%s%s: cannot be read (%s): install the Debian package %s (make deps)", path,
             alt != NULL ? " or " : "", alt != NULL ? alt : "", strerror(errno), package);
    return NULL;
}

char *proc_read_file(const char *path, size_t *len, int must)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (must)
            fail_msg("%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 0, n = 0;
    char *buf = NULL, chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        proc_append(&buf, &n, &cap, chunk, got);
    if (buf == NULL)
        proc_append(&buf, &n, &cap, "", 0);
    fclose(f);
    if (len != NULL)
        *len = n;
    return buf;
}

int proc_rm_tree(const char *dir, int chmod_dirs)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    struct dirent *e;
    char p[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            if (chmod_dirs)
                chmod(p, 0755);
            proc_rm_tree(p, chmod_dirs);
        } else {
            unlink(p);
        }
    }
    closedir(d);
    return rmdir(dir);
}

int proc_ctx_setup(void **state, const char *tmpl)
{
    proc_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return -1;
    snprintf(c->dir, sizeof c->dir, "%s", tmpl);
    if (mkdtemp(c->dir) == NULL) {
        free(c);
        return -1;
    }
    *state = c;
    return 0;
}

int proc_ctx_teardown(void **state)
{
    proc_ctx *c = *state;
    if (c != NULL) {
        proc_rm_tree(c->dir, 0);
        free(c);
    }
    return 0;
}

void proc_tpath(const proc_ctx *c, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", c->dir, name);
}

/* ---- environment ---- */

char **proc_make_env(const char *const *set, const char *const *unset)
{
    size_t n = 0, ns = 0;
    while (environ[n] != NULL)
        n++;
    while (set != NULL && set[ns] != NULL)
        ns++;
    char **env = calloc(n + ns + 1, sizeof *env);
    assert_non_null(env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        size_t kl = strcspn(e, "=");
        int drop = 0;
        for (size_t j = 0; unset != NULL && unset[j] != NULL; j++)
            drop |= strlen(unset[j]) == kl && strncmp(e, unset[j], kl) == 0;
        for (size_t j = 0; j < ns; j++)
            drop |= strncmp(e, set[j], kl + 1) == 0;
        if (!drop)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < ns; j++)
        env[k++] = (char *)set[j];
    env[k] = NULL;
    return env;
}

/* ---- the runner ---- */

void proc_res_free(proc_res *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

void proc_describe(const char *name, const char *const *args, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "%s", name);
    for (size_t i = 0; args[i] != NULL && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, " %s", args[i][0] ? args[i] : "''");
}

static void start_to(proc_child *p, const char *cwd, char **env, const proc_opts *opt, int stdout_to,
                     const char *const *argv)
{
    static const proc_opts dflt = { PROC_SIG_DEFAULT, 0, 0, 0 };
    if (opt == NULL)
        opt = &dflt;
    int po[2], pe[2];
    assert_int_equal(pipe(po), 0);
    assert_int_equal(pipe(pe), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Dispositions that exec would keep when ignored here: defaults, so
         * what the program does with them is its own doing. */
        if (opt->signals != PROC_SIG_KEEP) {
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            if (opt->signals == PROC_SIG_ALL) {
                signal(SIGXFSZ, SIG_DFL);
                signal(SIGPIPE, SIG_DFL);
            }
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
        }
        int in = open("/dev/null", O_RDONLY);
        if (in < 0 || dup2(in, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0 || chdir(cwd) != 0)
            _exit(127);
        close(po[0]);
        close(pe[0]);
        close(po[1]);
        close(pe[1]);
        if (stdout_to == PROC_STDOUT_FULL) {
            int full = open("/dev/full", O_WRONLY);
            if (full < 0 || dup2(full, 1) < 0)
                _exit(127);
            close(full);
        } else if (stdout_to == PROC_STDOUT_CLOSED) {
            close(1);
        }
        /* Root writes through file modes, so read-only cases run as someone else. */
        if (opt->as_nobody && geteuid() == 0) {
            if (setgroups(0, NULL) != 0 || setgid(PROC_NOBODY) != 0 || setuid(PROC_NOBODY) != 0)
                _exit(126);
        }
        if (opt->fsize > 0) {
            struct rlimit rl = { opt->fsize, opt->fsize };
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(125);
        }
        if (opt->search_path)
            execvp(argv[0], (char *const *)argv);
        else
            execve(argv[0], (char *const *)argv, env != NULL ? env : environ);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    p->pid = pid;
    p->out_fd = po[0];
    p->err_fd = pe[0];
}

void proc_start(proc_child *p, const char *cwd, char **env, const proc_opts *opt, const char *const *argv)
{
    start_to(p, cwd, env, opt, PROC_STDOUT_PIPE, argv);
}

void proc_start_bin(proc_child *p, const char *cwd, char **env, const proc_opts *opt, const char *bin,
                    const char *const *args)
{
    proc_start_bin_to(p, cwd, env, opt, PROC_STDOUT_PIPE, bin, args);
}

void proc_start_bin_to(proc_child *p, const char *cwd, char **env, const proc_opts *opt, int stdout_to,
                       const char *bin, const char *const *args)
{
    size_t n = 0;
    while (args[n] != NULL)
        n++;
    const char **av = calloc(n + 2, sizeof *av);
    assert_non_null(av);
    /* Made here in the parent, before the fork: a failed copy fails the case
     * with its reason instead of a bare exit 127 from the child. */
    av[0] = opt != NULL && opt->as_nobody && geteuid() == 0 ? proc_nobody_bin(bin) : bin;
    for (size_t i = 0; i < n; i++)
        av[i + 1] = args[i];
    start_to(p, cwd, env, opt, stdout_to, av);
    free(av);
}

void proc_finish(proc_child *p, proc_res *r, double deadline_s)
{
    size_t cap_o = 0, cap_e = 0;
    r->out = r->err = NULL;
    r->out_len = r->err_len = 0;
    proc_append(&r->out, &r->out_len, &cap_o, "", 0);
    proc_append(&r->err, &r->err_len, &cap_e, "", 0);
    r->timed_out = 0;
    double end = proc_now() + deadline_s;
    int open_fds = 2;
    struct pollfd fds[2] = { { p->out_fd, POLLIN, 0 }, { p->err_fd, POLLIN, 0 } };
    while (open_fds > 0) {
        double left = end - proc_now();
        if (left <= 0) {
            kill(p->pid, SIGKILL);
            r->timed_out = 1;
            break;
        }
        int k = poll(fds, 2, (int)(left * 1000) + 1);
        if (k < 0 && errno == EINTR)
            continue;
        assert_true(k >= 0);
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || fds[i].revents == 0)
                continue;
            char chunk[4096];
            ssize_t got = read(fds[i].fd, chunk, sizeof chunk);
            if (got > 0) {
                if (i == 0)
                    proc_append(&r->out, &r->out_len, &cap_o, chunk, (size_t)got);
                else
                    proc_append(&r->err, &r->err_len, &cap_e, chunk, (size_t)got);
            } else if (got == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    int status;
    while (waitpid(p->pid, &status, 0) < 0)
        assert_int_equal(errno, EINTR);
    r->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- the binary ---- */

int proc_find_bin(char *out, const char *prog, int need_exec)
{
    const char *bin = getenv("LOCKSTEP_BIN");
    if (bin == NULL || bin[0] == '\0')
        bin = "build/lockstep";
    if (!need_exec) {
        if (realpath(bin, out) == NULL) {
            fprintf(stderr, "%s: %s: %s (set LOCKSTEP_BIN)\n", prog, bin, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (realpath(bin, out) == NULL || access(out, X_OK) != 0) {
        fprintf(stderr, "%s: no lockstep binary at %s (set LOCKSTEP_BIN)\n", prog, bin);
        return -1;
    }
    return 0;
}

/* The copy of proc_nobody_bin: its source, directory and path; empty when none. */
static char nobody_src[PATH_MAX];
static char nobody_dir[64];
static char nobody_path[PATH_MAX];

void proc_nobody_bin_remove(void)
{
    /* The tree, not the one file: a copy cut short by a failed case may
     * have left its directory with or without a partial file. */
    if (nobody_dir[0])
        proc_rm_tree(nobody_dir, 0);
    nobody_src[0] = nobody_dir[0] = nobody_path[0] = '\0';
}

/* Copies the file `from` to the new file `to`, mode 0755. */
static void copy_exec(const char *from, const char *to)
{
    /* O_CLOEXEC: a writable descriptor of the copy inherited by a child
     * being exec'd would make its exec fail with ETXTBSY. */
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        fail_msg("%s: %s", from, strerror(errno));
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (out < 0)
        fail_msg("%s: %s", to, strerror(errno));
    char buf[65536];
    for (;;) {
        ssize_t got = read(in, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            fail_msg("%s: %s", from, strerror(errno));
        if (got == 0)
            break;
        for (ssize_t at = 0; at < got;) {
            ssize_t put = write(out, buf + at, (size_t)(got - at));
            if (put < 0 && errno == EINTR)
                continue;
            if (put < 0)
                fail_msg("%s: %s", to, strerror(errno));
            at += put;
        }
    }
    close(in);
    /* Set after creation: the umask may have taken bits from open's mode. */
    if (fchmod(out, 0755) != 0 || close(out) != 0)
        fail_msg("%s: %s", to, strerror(errno));
}

const char *proc_nobody_bin(const char *bin)
{
    static int registered;
    if (nobody_path[0]) {
        if (strcmp(bin, nobody_src) != 0)
            fail_msg("proc_nobody_bin: already a copy of %s, not of %s", nobody_src, bin);
        return nobody_path;
    }
    proc_nobody_bin_remove();   /* what an earlier copy cut short left behind */
    /* /tmp itself, not TMPDIR: TMPDIR may well be private to its owner too. */
    snprintf(nobody_dir, sizeof nobody_dir, "/tmp/lockstep-bin-XXXXXX");
    if (mkdtemp(nobody_dir) == NULL) {
        int e = errno;
        nobody_dir[0] = '\0';
        fail_msg("mkdtemp /tmp/lockstep-bin-XXXXXX: %s", strerror(e));
    }
    /* Removed at exit even when the case fails before its teardown; the
     * children never run it (they leave by exec or _exit). */
    if (!registered && atexit(proc_nobody_bin_remove) == 0)
        registered = 1;
    /* mkdtemp makes it 0700: uid 65534 must be able to enter it. */
    if (chmod(nobody_dir, 0755) != 0)
        fail_msg("%s: %s", nobody_dir, strerror(errno));
    char to[PATH_MAX];
    int w = snprintf(to, sizeof to, "%s/lockstep", nobody_dir);
    assert_true(w > 0 && (size_t)w < sizeof to);
    copy_exec(bin, to);
    snprintf(nobody_src, sizeof nobody_src, "%s", bin);
    snprintf(nobody_path, sizeof nobody_path, "%s", to);
    return nobody_path;
}

void proc_run_checked(proc_res *r, const char *dir, const char *bin, const char *const *argv, double deadline_s)
{
    proc_child p;
    proc_describe("lockstep", argv, r->cmd, sizeof r->cmd);
    proc_start_bin(&p, dir, NULL, NULL, bin, argv);
    proc_finish(&p, r, deadline_s);
    if (r->timed_out)
        fail_msg("%s: still running after %.0f s (killed)", r->cmd, deadline_s);
    if (r->sig != 0)
        fail_msg("%s: died of signal %d\nstderr: %s", r->cmd, r->sig, r->err);
}

void proc_expect(const proc_res *r, int code, const char *want, int one_line)
{
    if (r->code != code)
        fail_msg("%s: exit %d, want %d\nstdout: %s\nstderr: %s", r->cmd, r->code, code, r->out, r->err);
    const char *where = code == 2 ? r->err : r->out;
    if (want != NULL && strstr(where, want) == NULL)
        fail_msg("%s: %s lacks \"%s\"\nstdout: %s\nstderr: %s", r->cmd, code == 2 ? "stderr" : "stdout", want,
                 r->out, r->err);
    if (one_line && code == 2 && strchr(r->err, '\n') != r->err + strlen(r->err) - 1)
        fail_msg("%s: want one line on stderr, got: %s", r->cmd, r->err);
}
