/* proc_util.h — the process runner shared by the end-to-end test programs
 * (tests/test_cli.c, test_crash.c, test_badinput.c, test_export.c).
 *
 * Each of them runs real programs (mostly the `lockstep` binary) in a child
 * process of its own and looks at what a user would see. The child gets
 * stdin from /dev/null and pipes for stdout/stderr (so it never sees a
 * terminal), and is killed at a deadline so a hang fails one case instead of
 * hanging the suite. Also here: the per-test temporary directory, a copy of
 * the environment with some variables replaced, reading a whole file,
 * finding the binary (LOCKSTEP_BIN, else build/lockstep) and a copy of it
 * that the unprivileged user can run.
 *
 * These helpers are test code: they fail the running cmocka case (assert_*,
 * fail_msg) when the system refuses them, so they may only be called from
 * inside a test or a cmocka setup/teardown.
 */
#ifndef LOCKSTEP_TESTS_PROC_UTIL_H
#define LOCKSTEP_TESTS_PROC_UTIL_H

#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

/* ---- files and directories ---- */

/* Seconds on the monotonic clock. */
double proc_now(void);

/* Appends n bytes of src to the growing NUL-terminated buffer *buf (length
 * *len, capacity *cap; all three 0/NULL to start). */
void proc_append(char **buf, size_t *len, size_t *cap, const char *src, size_t n);

/* The whole file, NUL-terminated, its length in *len (len may be NULL). When
 * it cannot be opened: NULL with errno set, or, when `must` is set, the case
 * fails naming the path and the error. */
char *proc_read_file(const char *path, size_t *len, int must);

/* Removes dir and everything below it. With chmod_dirs set, each directory
 * below is given mode 0755 first (a test may have made one read-only). */
int proc_rm_tree(const char *dir, int chmod_dirs);

/* A data file a test cannot do without, installed by a Debian package (the
 * networkx Graph Atlas and WormNet of python3-networkx): the first of `path`
 * and `alt` (alt may be NULL) that can be read. When neither can, the case
 * fails naming both paths and `package`: a missing package is a machine to
 * fix (make deps), not a check to skip, so it can never pass unnoticed. */
const char *proc_need_file(const char *path, const char *alt, const char *package);

/* A fresh temporary directory per test case (cmocka setup/teardown). */
typedef struct {
    char dir[128];
} proc_ctx;

/* Makes the directory from `tmpl` (ending in XXXXXX) into a new proc_ctx in *state. */
int proc_ctx_setup(void **state, const char *tmpl);
/* Removes the directory and frees the proc_ctx; accepts NULL. */
int proc_ctx_teardown(void **state);
/* Absolute path of `name` inside the test directory. */
void proc_tpath(const proc_ctx *c, const char *name, char *buf, size_t len);

/* ---- environment ---- */

/* A copy of environ without the variables named in `unset` (NULL-terminated
 * names, may be NULL) and without those that `set` ("K=V" strings,
 * NULL-terminated, may be NULL) overrides, plus `set` at the end. Only the
 * array is allocated (free() it); the strings are borrowed. */
char **proc_make_env(const char *const *set, const char *const *unset);

/* ---- the runner ---- */

/* The unprivileged user and group of proc_opts.as_nobody. */
#define PROC_NOBODY 65534

/* Signal dispositions the child resets before exec (exec keeps an ignored
 * disposition, e.g. SIGINT of a runner started in the background). */
enum {
    PROC_SIG_KEEP = 0,     /* leave them as inherited */
    PROC_SIG_DEFAULT = 1,  /* SIGINT, SIGTERM to default; empty signal mask */
    PROC_SIG_ALL = 2,      /* the same, and SIGXFSZ, SIGPIPE to default too */
};

/* What the child does before exec besides stdin, the pipes and chdir. A NULL
 * proc_opts means { PROC_SIG_DEFAULT, 0, 0, 0 }. */
typedef struct {
    int signals;      /* PROC_SIG_* */
    int search_path;  /* execvp: argv[0] looked up in PATH, the test's own environment */
    rlim_t fsize;     /* RLIMIT_FSIZE in the child, 0: none */
    int as_nobody;    /* when root: drop to uid/gid 65534, no supplementary groups */
} proc_opts;

typedef struct {
    pid_t pid;
    int out_fd, err_fd;
} proc_child;

typedef struct {
    int code;        /* exit status; -1 when killed by a signal */
    int sig;         /* the signal that ended the child, 0 if none */
    int timed_out;   /* killed by the runner at the deadline */
    char *out, *err; /* NUL-terminated captures */
    size_t out_len, err_len;
    char cmd[1024];  /* the command line, for failure messages (filled by the caller) */
} proc_res;

/* Frees the captures; safe to call twice. */
void proc_res_free(proc_res *r);

/* "name arg1 arg2 ..." into buf (an empty argument shown as ''), truncated to len. */
void proc_describe(const char *name, const char *const *args, char *buf, size_t len);

/* Starts argv (argv[0] the program) in directory cwd; env NULL means the
 * test's own environment (ignored with opt->search_path). */
void proc_start(proc_child *p, const char *cwd, char **env, const proc_opts *opt, const char *const *argv);

/* proc_start of the program at path `bin` with arguments `args` (without
 * argv[0]). With opt->as_nobody, when root, the child runs proc_nobody_bin's
 * copy of `bin` instead: uid 65534 may not be able to reach `bin` itself. */
void proc_start_bin(proc_child *p, const char *cwd, char **env, const proc_opts *opt, const char *bin,
                    const char *const *args);

/* Where the child's stdout goes (proc_start_bin_to). */
enum {
    PROC_STDOUT_PIPE = 0,    /* a pipe the runner reads (r->out), as proc_start_bin */
    PROC_STDOUT_FULL = 1,    /* /dev/full: every write fails with ENOSPC */
    PROC_STDOUT_CLOSED = 2,  /* descriptor 1 closed */
};

/* proc_start_bin with the child's stdout sent where stdout_to says; with
 * anything but PROC_STDOUT_PIPE, r->out of proc_finish stays empty. */
void proc_start_bin_to(proc_child *p, const char *cwd, char **env, const proc_opts *opt, int stdout_to,
                       const char *bin, const char *const *args);

/* Reads both pipes to EOF (killing the child after deadline_s seconds and
 * setting r->timed_out), then reaps it into r->code and r->sig. */
void proc_finish(proc_child *p, proc_res *r, double deadline_s);

/* proc_start_bin in dir, then proc_finish; fails the running case when the
 * child was killed at the deadline or died of a signal (r->cmd names it). */
void proc_run_checked(proc_res *r, const char *dir, const char *bin, const char *const *argv, double deadline_s);

/* Fails the running case unless r exited with `code` and its stdout (its
 * stderr, for exit 2) holds `want` (NULL: anything). With one_line set, an
 * exit 2 must also say exactly one line on stderr. */
void proc_expect(const proc_res *r, int code, const char *want, int one_line);

/* ---- the binary ---- */

/* The absolute path of LOCKSTEP_BIN (else build/lockstep) into out
 * (PATH_MAX bytes). With need_exec set it must also be executable. 0 on
 * success; else -1, after a line on stderr that starts with `prog`. */
int proc_find_bin(char *out, const char *prog, int need_exec);

/* A copy of the program at `bin` that uid PROC_NOBODY can execute. The
 * checkout (and so the binary) may sit below a directory only its owner may
 * enter (a 0700 home or mktemp -d), where exec as 65534 fails with EACCES
 * and the child exits 127. So the first call copies `bin` to a fresh
 * directory under /tmp (mkdtemp; the directory and the file mode 0755
 * whatever the umask) and later calls return the same copy; one program per
 * test process (another `bin` fails the case). The copy is removed at exit,
 * or earlier by proc_nobody_bin_remove. */
const char *proc_nobody_bin(const char *bin);

/* Removes proc_nobody_bin's copy and its directory; a no-op when there is none. */
void proc_nobody_bin_remove(void);

#endif
