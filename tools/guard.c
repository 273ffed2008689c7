/* guard.c — what the command line checks so that a bad path costs nothing:
 * an output path that is a file the record owns or a data file a recorded
 * run was trained on (refused before any work: writing it would replace the
 * record, or leave a run that can no longer be resumed or audited), an
 * input that is not a regular file (a FIFO would block the open forever, a
 * directory or device reads as nonsense), and, after a run failed, what
 * the record really holds (the engine's own count includes steps still
 * buffered when the disk filled up, which the record never got); and the
 * output file itself, written through a temporary file and a rename so a
 * failed command leaves no partial file (cli_out_open, cli_out_commit,
 * cli_out_abort).
 *
 * Paths are compared as files, not as names: by device and inode when both
 * exist (hard links, symbolic links, "./x" and "dir/../x" are all the same
 * file), and by their resolved path when one does not exist yet (a -wal that
 * SQLite has not created, a dangling symbolic link to it).
 */
#include "tools/tools.h"

#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- paths ------------------------------------------------------------------------------- */

/* path with symbolic links, "." and ".." resolved into out, also when the
 * path (or the end of its chain of links) does not exist yet: then its
 * directory is resolved and its name appended. 0 on success, -1 when not
 * even its directory exists (nothing can be written there either). */
static int canon_path(const char *path, char *out, size_t cap, int depth)
{
    char buf[PATH_MAX];
    if (realpath(path, buf) != NULL) {
        int w = snprintf(out, cap, "%s", buf);
        return w >= 0 && (size_t)w < cap ? 0 : -1;
    }
    struct stat lsb;
    if (depth < 40 && lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
        /* A dangling link: where it points is the file a write would create. */
        char target[PATH_MAX], joined[2 * PATH_MAX + 2];
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n < 0)
            return -1;
        target[n] = '\0';
        const char *slash = strrchr(path, '/');
        if (target[0] == '/' || slash == NULL)
            snprintf(joined, sizeof joined, "%s", target);
        else
            snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - path), path, target);
        return canon_path(joined, out, cap, depth + 1);
    }
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/'), *base = slash != NULL ? slash + 1 : path;
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        return -1;
    if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return -1;
    if (realpath(dir, buf) == NULL)
        return -1;
    int w = snprintf(out, cap, "%s%s%s", buf, strcmp(buf, "/") == 0 ? "" : "/", base);
    return w >= 0 && (size_t)w < cap ? 0 : -1;
}

ls_status cli_check_regular(const char *label, const char *path, ls_err *err)
{
    return file_check_regular(label, path, err);
}

/* Here, not in cli.c: the fuzzers link cli.o alone. */
ls_status cli_open_db(const char *path, runlog **db, ls_err *err)
{
    *db = NULL;
    /* SQLite would open a FIFO or a device and fail later with a vague I/O error. */
    ls_status st = cli_check_regular("--db", path, err);
    if (st != LS_OK)
        return st;
    return runlog_open(db, path, err);
}

/* ---- the files a record owns ------------------------------------------------------------- */

typedef struct {
    char path[PATH_MAX];   /* as the record or the user names it */
    char what[96];
    int is_dir;            /* a checkpoint directory */
    int is_source;         /* a run's data file (run_sources), not the record's own */
} owned_file;

typedef struct {
    owned_file *v;
    size_t n, cap;
} owned_list;

static ls_status owned_add(owned_list *l, const char *path, int is_dir, ls_err *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static ls_status owned_add(owned_list *l, const char *path, int is_dir, ls_err *err, const char *fmt, ...)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        owned_file *v = realloc(l->v, cap * sizeof *v);
        if (v == NULL)
            return ls_fail(err, LS_ENOMEM, "out of memory listing the record's files");
        l->v = v;
        l->cap = cap;
    }
    owned_file *f = &l->v[l->n++];
    snprintf(f->path, sizeof f->path, "%s", path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->what, sizeof f->what, fmt, ap);
    va_end(ap);
    f->is_dir = is_dir;
    f->is_source = 0;
    return LS_OK;
}

/* Run run_id's data files: its sources, "key=value" lines whose values are
 * paths (config_source_text). */
static ls_status owned_sources(owned_list *l, int64_t run_id, const char *text, ls_err *err)
{
    ls_status st = LS_OK;
    for (const char *p = text; p != NULL && *p != '\0' && st == LS_OK;) {
        const size_t n = strcspn(p, "\n");
        const char *eq = memchr(p, '=', n);
        if (eq != NULL && eq + 1 < p + n && (size_t)(p + n - eq - 1) < PATH_MAX) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%.*s", (int)(p + n - eq - 1), eq + 1);
            st = owned_add(l, path, 0, err, "the data file %.*s of run %lld", (int)(eq - p > 32 ? 32 : eq - p), p,
                           (long long)run_id);
            if (st == LS_OK)
                l->v[l->n - 1].is_source = 1;
        }
        p += n;
        p += *p == '\n';
    }
    return st;
}

/* The database, its side files, the default checkpoint directory and, when
 * db is open, every run's checkpoint directory, registered checkpoints and
 * data files. */
static ls_status owned_collect(owned_list *l, const char *db_path, runlog *db, ls_err *err)
{
    static const struct { const char *sfx, *what; } SIDE[] = {
        { "", "the run database" },
        { "-wal", "the run database's write-ahead log" },
        { "-shm", "the run database's shared-memory index" },
        { "-journal", "the run database's rollback journal" },
        { ".ckpt", "the run database's checkpoint directory" },
    };
    char p[PATH_MAX];
    ls_status st = LS_OK;
    for (size_t i = 0; i < sizeof SIDE / sizeof SIDE[0] && st == LS_OK; i++) {
        int w = snprintf(p, sizeof p, "%s%s", db_path, SIDE[i].sfx);
        if (w > 0 && (size_t)w < sizeof p)
            st = owned_add(l, p, strcmp(SIDE[i].sfx, ".ckpt") == 0, err, "%s", SIDE[i].what);
    }
    if (st != LS_OK || db == NULL)
        return st;
    runlog_run *runs = NULL;
    size_t n = 0;
    if ((st = runlog_list(db, &runs, &n, err)) != LS_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        if (st == LS_OK && runs[i].checkpoint_dir != NULL && runs[i].checkpoint_dir[0] != '\0')
            st = owned_add(l, runs[i].checkpoint_dir, 1, err, "run %lld's checkpoint directory",
                           (long long)runs[i].id);
        runlog_ckpt *ck = NULL;
        size_t nk = 0;
        if (st == LS_OK && (st = runlog_checkpoints(db, runs[i].id, &ck, &nk, err)) == LS_OK) {
            for (size_t k = 0; k < nk && st == LS_OK; k++)
                st = owned_add(l, ck[k].path, 0, err, "run %lld's checkpoint at step %lld", (long long)runs[i].id,
                               (long long)ck[k].step);
            runlog_checkpoints_free(ck, nk);
        }
        /* Its data files (runlog_list does not read the sources). */
        runlog_run full;
        if (st == LS_OK && (st = runlog_get_run(db, runs[i].id, &full, err)) == LS_OK) {
            st = owned_sources(l, runs[i].id, full.source_text, err);
            runlog_run_free(&full);
        }
        runlog_run_free(&runs[i]);
    }
    free(runs);
    return st;
}

/* A name the session gives checkpoints (run-<id>-step-<t>.ckpt, possibly
 * after a prefix, and its temporary files): a file of that name in a
 * checkpoint directory is the record's, now or at the next checkpoint. */
static int is_checkpoint_name(const char *base)
{
    const char *run = strstr(base, "run-");
    return run != NULL && strstr(run, "-step-") != NULL && strstr(run, ".ckpt") != NULL;
}

/* The first bytes of an existing regular file: what it is, when it is a
 * database, a log or a checkpoint (of any record, not only the one read). */
static const char *sniff(const char *path)
{
    int fd;
    size_t size;
    ls_err ignored = { "" };
    if (file_open_regular(path, &fd, &size, &ignored) != LS_OK)
        return NULL;
    unsigned char b[16] = { 0 };
    ssize_t n = read(fd, b, sizeof b);
    close(fd);
    if (n >= 16 && memcmp(b, "SQLite format 3", 16) == 0)
        return "a SQLite database";
    if (n >= 8 && memcmp(b, "LKSTCKPT", 8) == 0)
        return "a lockstep checkpoint";
    if (n >= 4 && b[0] == 0x37 && b[1] == 0x7f && b[2] == 0x06 && (b[3] == 0x82 || b[3] == 0x83))
        return "a SQLite write-ahead log";
    return NULL;
}

/* The record's own files first (the message names both paths), then any
 * database, log or checkpoint at all. */
ls_status cli_guard_output(const char *label, const char *out, const char *db_path, runlog *db, ls_err *err)
{
    if (out == NULL || strcmp(out, "-") == 0)
        return LS_OK;
    char co[PATH_MAX];
    const int have_co = canon_path(out, co, sizeof co, 0) == 0;
    struct stat osb;
    const int out_exists = stat(out, &osb) == 0;
    ls_status st = LS_OK;
    if (db_path != NULL) {
        owned_list l = { NULL, 0, 0 };
        st = owned_collect(&l, db_path, db, err);
        for (size_t i = 0; i < l.n && st == LS_OK; i++) {
            const owned_file *f = &l.v[i];
            struct stat fsb;
            char cf[PATH_MAX];
            int same = out_exists && stat(f->path, &fsb) == 0 && fsb.st_dev == osb.st_dev &&
                       fsb.st_ino == osb.st_ino;
            const int have_cf = canon_path(f->path, cf, sizeof cf, 0) == 0;
            if (!same && have_co && have_cf)
                same = strcmp(co, cf) == 0;
            if (same && f->is_source)
                st = ls_fail(err, LS_EINVAL, "%s %s: is %s (%s); refusing to write over it: the run could no "
                             "longer be resumed or audited", label, out, f->what, f->path);
            else if (same)
                st = ls_fail(err, LS_EINVAL, "%s %s: is %s %s; refusing to write over the record", label, out,
                             f->what, f->path);
        }
        /* Then a name inside a checkpoint directory (after the exact files,
         * so a registered checkpoint is named as what it is). */
        for (size_t i = 0; i < l.n && st == LS_OK; i++) {
            const owned_file *f = &l.v[i];
            char cf[PATH_MAX];
            const int have_cf = canon_path(f->path, cf, sizeof cf, 0) == 0;
            if (f->is_dir && have_co && have_cf) {
                size_t dl = strlen(cf);
                if (strncmp(co, cf, dl) == 0 && co[dl] == '/' && strchr(co + dl + 1, '/') == NULL &&
                    is_checkpoint_name(co + dl + 1))
                    st = ls_fail(err, LS_EINVAL, "%s %s: is a checkpoint file name in %s %s; refusing to write "
                                 "there", label, out, f->what, f->path);
            }
        }
        free(l.v);
        if (st != LS_OK)
            return st;
    }
    if (out_exists && S_ISREG(osb.st_mode)) {
        const char *kind = sniff(out);
        if (kind != NULL)
            return ls_fail(err, LS_EINVAL, "%s %s: is %s; refusing to write over it", label, out, kind);
    }
    /* A -wal, -shm or -journal name beside a SQLite database is that
     * database's, whether SQLite has made it yet or not. */
    if (have_co) {
        static const char *const SFX[] = { "-wal", "-shm", "-journal" };
        const size_t cl = strlen(co);
        for (size_t i = 0; i < sizeof SFX / sizeof SFX[0]; i++) {
            const size_t sl = strlen(SFX[i]);
            if (cl <= sl || strcmp(co + cl - sl, SFX[i]) != 0)
                continue;
            char base[PATH_MAX];
            snprintf(base, sizeof base, "%.*s", (int)(cl - sl), co);
            struct stat bsb;
            const char *kind = stat(base, &bsb) == 0 && S_ISREG(bsb.st_mode) ? sniff(base) : NULL;
            if (kind != NULL && strcmp(kind, "a SQLite database") == 0)
                return ls_fail(err, LS_EINVAL, "%s %s: is the %s file of the SQLite database %s; refusing to write "
                               "over it", label, out, SFX[i] + 1, base);
        }
    }
    return LS_OK;
}

/* ---- after a failed run -------------------------------------------------------------------- */

void cli_run_fate(const char *db_path, int64_t run_id, char *buf, size_t cap)
{
    ls_err err = { "" };
    runlog *db = NULL;
    runlog_run run;
    ls_status st = db_path != NULL ? runlog_open(&db, db_path, &err) : LS_EINVAL;
    if (st == LS_OK)
        st = runlog_get_run(db, run_id, &run, &err);
    if (st != LS_OK) {
        snprintf(buf, cap, "run %lld: the record could not be read back: %s", (long long)run_id,
                 err.msg[0] ? err.msg : ls_strerror(st));
        runlog_close(db);
        return;
    }
    /* A row still 'running' under this process's pid is one this process
     * failed to close; once it exits, `lockstep runs` shows it interrupted. */
    const char *status = strcmp(run.status, "running") == 0 && run.pid == (int64_t)getpid() ? "interrupted"
                                                                                            : run.status;
    if (run.n_steps < 0)
        snprintf(buf, cap, "run %lld: the record holds no step rows, status %s", (long long)run_id, status);
    else
        snprintf(buf, cap, "run %lld: the record holds steps 0..%lld, status %s", (long long)run_id,
                 (long long)run.n_steps, status);
    runlog_run_free(&run);
    runlog_close(db);
}

ls_status cli_out_open(cli_out *o, const char *label, const char *path, const char *db_path, runlog *db,
                       ls_err *err)
{
    memset(o, 0, sizeof *o);
    if (path == NULL || strcmp(path, "-") == 0) {
        o->f = stdout;
        o->to_stdout = 1;
        return LS_OK;
    }
    ls_status st = cli_guard_output(label, path, db_path, db, err);
    if (st != LS_OK)
        return st;
    struct stat sb, lsb;
    const int exists = stat(path, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode))
        return ls_fail(err, LS_EIO, "%s %s: is a directory", label, path);
    /* A device or a pipe is written in place: renaming a file over it would
     * replace it (think of /dev/null). So is a dangling symbolic link: the
     * write creates the file it names, as the user asked. */
    const int link = lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode);
    if ((exists && !S_ISREG(sb.st_mode)) || (link && !exists)) {
        if ((o->f = fopen(path, "wb")) == NULL)
            return ls_fail(err, LS_EIO, "%s %s: cannot write: %s", label, path, strerror(errno));
        o->in_place = 1;
        snprintf(o->path, sizeof o->path, "%s", path);
        return LS_OK;
    }
    /* A symbolic link keeps pointing where it did: the temporary file and
     * the rename go to the file it points to, so a failed command never
     * leaves a truncated file behind the link either. */
    const char *target = path;
    char *resolved = NULL;
    if (link) {
        if ((resolved = realpath(path, NULL)) == NULL)
            return ls_fail(err, LS_EIO, "%s %s: cannot resolve the symbolic link: %s", label, path, strerror(errno));
        target = resolved;
    }
    int w = snprintf(o->path, sizeof o->path, "%s", target);
    int wt = snprintf(o->tmp, sizeof o->tmp, "%s.tmp-XXXXXX", target);
    free(resolved);
    if (w < 0 || (size_t)w >= sizeof o->path || wt < 0 || (size_t)wt >= sizeof o->tmp)
        return ls_fail(err, LS_EINVAL, "%s %.60s...: the path is too long", label, path);
    int fd = mkstemp(o->tmp);
    if (fd < 0)
        return ls_fail(err, LS_EIO, "%s %s: cannot write: %s", label, path, strerror(errno));
    /* mkstemp makes the file 0600; give it what a plain fopen would. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || (o->f = fdopen(fd, "wb")) == NULL) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        return ls_fail(err, LS_EIO, "%s %s: cannot write: %s", label, path, strerror(e));
    }
    return LS_OK;
}

ls_status cli_out_commit(cli_out *o, ls_err *err)
{
    if (o->f == NULL)
        return LS_OK;
    if (o->to_stdout) {
        o->f = NULL;
        if (fflush(stdout) != 0 || ferror(stdout))
            return ls_fail(err, LS_EIO, "stdout: write failed: %s", strerror(errno));
        return LS_OK;
    }
    int bad = fflush(o->f) != 0 || ferror(o->f);
    int e = errno;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (o->in_place)
        return bad ? ls_fail(err, LS_EIO, "%s: write failed: %s", o->path, strerror(e)) : LS_OK;
    if (!bad && rename(o->tmp, o->path) == 0)
        return LS_OK;
    if (!bad)
        e = errno;
    unlink(o->tmp);
    return ls_fail(err, LS_EIO, "%s: write failed: %s", o->path, strerror(e));
}

void cli_out_abort(cli_out *o)
{
    if (o->f == NULL || o->to_stdout) {
        o->f = NULL;
        return;
    }
    fclose(o->f);
    o->f = NULL;
    if (!o->in_place)
        unlink(o->tmp);
}
