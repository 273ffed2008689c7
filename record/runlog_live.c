/* runlog_live.c — whether the process recorded as a run's writer is alive.
 *
 * Liveness: a run row keeps its writer's pid, the pid's start time (field 22
 * of /proc/PID/stat) and the boot id. A reader that finds "running" reports
 * "interrupted" when that process is gone; it never rewrites the row. The
 * writers (runlog_write.c) take this process's values from here too.
 */
#include "record/runlog_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Reads a small text file whole; -1 with errno set on failure. */
static ssize_t rl_read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < cap) {
        ssize_t k = read(fd, buf + got, cap - 1 - got);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    buf[got] = 0;
    return (ssize_t)got;
}

/* The kernel's id of this boot, or "" when unknown (not Linux). */
void rl_boot_id(char *out, size_t cap)
{
    char buf[128];
    out[0] = 0;
    if (rl_read_small("/proc/sys/kernel/random/boot_id", buf, sizeof buf) <= 0)
        return;
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        buf[--n] = 0;
    rl_copy(out, cap, (const unsigned char *)buf);
}

/* State letter (field 3) and start time in clock ticks since boot (field 22)
 * of /proc/PID/stat. The command name (field 2) may hold spaces and ')', so
 * fields are counted from the last ')'. 0, or -1 with errno (ENOENT: gone). */
int rl_proc_stat(long long pid, char *state, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    if (rl_read_small(path, buf, sizeof buf) < 0)
        return -1;
    char *p = strrchr(buf, ')');
    if (p == NULL) {
        errno = EINVAL;
        return -1;
    }
    p++;
    for (int field = 3; field <= 22; field++) {
        while (*p == ' ')
            p++;
        if (*p == 0) {
            errno = EINVAL;
            return -1;
        }
        if (field == 3)
            *state = *p;
        if (field == 22) {
            char *end;
            errno = 0;
            *start = strtoull(p, &end, 10);
            if (end == p || errno != 0) {
                errno = EINVAL;
                return -1;
            }
            return 0;
        }
        while (*p != ' ' && *p != 0)
            p++;
    }
    errno = EINVAL;
    return -1;
}

/* Whether the writer recorded in a "running" row is gone. When the record or
 * the host cannot tell (no pid, no /proc), the row is taken at its word. */
int rl_writer_gone(sqlite3_stmt *st, int col_pid, int col_start, int col_boot)
{
    if (sqlite3_column_type(st, col_pid) == SQLITE_NULL)
        return 0;
    long long pid = (long long)sqlite3_column_int64(st, col_pid);
    if (sqlite3_column_type(st, col_boot) != SQLITE_NULL) {
        char now[64];
        rl_boot_id(now, sizeof now);
        const char *then = (const char *)sqlite3_column_text(st, col_boot);
        if (now[0] != 0 && then != NULL && then[0] != 0 && strcmp(now, then) != 0)
            return 1;  /* rebooted since: every process of that boot is gone */
    }
    char state = 0;
    unsigned long long start = 0;
    if (rl_proc_stat(pid, &state, &start) == 0) {
        if (state == 'Z' || state == 'X')
            return 1;  /* exited, not yet reaped */
        if (sqlite3_column_type(st, col_start) != SQLITE_NULL &&
            rl_u64(sqlite3_column_int64(st, col_start)) != (uint64_t)start)
            return 1;  /* the pid was reused by a later process */
        return 0;
    }
    if (errno == ENOENT)
        return 1;
    /* No /proc: fall back to asking the kernel whether the pid exists. */
    if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    return 0;
}
