/* file.c — see file.h. */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) || S_ISBLK(m) ? "a device"
           : S_ISSOCK(m) ? "a socket" : "something else";
}

ls_status file_open_regular(const char *path, int *fd, size_t *size, ls_err *err)
{
    *fd = -1;
    *size = 0;
    /* O_NONBLOCK only for the open: a FIFO without a writer would block it. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) {
        int e = errno;
        return ls_fail(err, LS_EIO, "%s: %s", path, strerror(e));
    }
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        int e = errno;
        close(f);
        return ls_fail(err, LS_EIO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return ls_fail(err, LS_EIO, "%s: is %s, not a regular file", path, file_kind(sb.st_mode));
    }
    int flags = fcntl(f, F_GETFL);
    if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(f);
        return ls_fail(err, LS_EIO, "%s: %s", path, strerror(e));
    }
    *fd = f;
    *size = (size_t)sb.st_size;
    return LS_OK;
}

/* Reads fd (a regular file of `size` bytes when opened) to its end into a
 * malloc'ed buffer with a NUL after it; closes fd. Read to EOF rather than
 * trusting the size alone: a file that changes meanwhile is judged on what
 * was read, and never read past its size. */
static ls_status read_fd(const char *path, int fd, size_t size, unsigned char **buf, size_t *len, ls_err *err)
{
    unsigned char *b = malloc(size + 1);
    if (b == NULL) {
        close(fd);
        return ls_fail(err, LS_ENOMEM, "%s: out of memory for %zu bytes", path, size);
    }
    size_t got = 0;
    for (;;) {
        ssize_t k = got < size ? read(fd, b + got, size - got) : read(fd, b + got, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            free(b);
            close(fd);
            return ls_fail(err, LS_EIO, "%s: cannot read: %s", path, strerror(e));
        }
        if (k == 0)
            break;
        if (got == size) {
            free(b);
            close(fd);
            return ls_fail(err, LS_EIO, "%s: grew past its %zu bytes while being read", path, size);
        }
        got += (size_t)k;
    }
    close(fd);
    b[got] = 0;
    *buf = b;
    *len = got;
    return LS_OK;
}

/* The checked open and the size bound both readers share. */
static ls_status open_bounded(const char *path, size_t max_bytes, int *fd, size_t *size, ls_err *err)
{
    ls_status st = file_open_regular(path, fd, size, err);
    if (st != LS_OK)
        return st;
    if (*size > max_bytes || *size == SIZE_MAX) {
        close(*fd);
        *fd = -1;
        return ls_fail(err, LS_EFORMAT, "%s: %zu bytes is more than the limit of %zu bytes", path, *size,
                       max_bytes);
    }
    return LS_OK;
}

ls_status file_read_all(const char *path, size_t max_bytes, unsigned char **buf, size_t *len, ls_err *err)
{
    *buf = NULL;
    *len = 0;
    int fd;
    size_t size;
    ls_status st = open_bounded(path, max_bytes, &fd, &size, err);
    if (st != LS_OK)
        return st;
    return read_fd(path, fd, size, buf, len, err);
}

ls_status file_view_open(const char *path, size_t max_bytes, file_view *v, ls_err *err)
{
    memset(v, 0, sizeof *v);
    int fd;
    size_t size;
    ls_status st = open_bounded(path, max_bytes, &fd, &size, err);
    if (st != LS_OK)
        return st;
    /* MAP_POPULATE: the file is read once, front to back, right away, so
     * one call maps every page rather than a fault per 16 pages. An empty
     * file cannot be mapped (EINVAL) and is read. */
    void *m = size > 0 ? mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : MAP_FAILED;
    if (m == MAP_FAILED) {
        st = read_fd(path, fd, size, &v->buf, &v->len, err);
        v->p = v->buf;
        return st;
    }
    close(fd);
    v->map = m;
    v->p = m;
    v->len = size;
    return LS_OK;
}

void file_view_close(file_view *v)
{
    if (v->map != NULL)
        munmap(v->map, v->len);
    free(v->buf);
    memset(v, 0, sizeof *v);
}

ls_status file_check_regular(const char *label, const char *path, ls_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode))
        return LS_OK;
    return ls_fail(err, LS_EIO, "%s%s%s: is %s, not a regular file", label != NULL ? label : "",
                   label != NULL ? " " : "", path, file_kind(sb.st_mode));
}
