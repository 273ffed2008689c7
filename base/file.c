/* file.c — see file.h. */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ls_status file_open_regular(const char *path, int *fd, size_t *size, ls_err *err)
{
    *fd = -1;
    *size = 0;
    /* O_NONBLOCK only for the open: a FIFO without a writer would block it. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return ls_fail(err, LS_EIO, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        int e = errno;
        close(f);
        return ls_fail(err, LS_EIO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return ls_fail(err, LS_EIO, "%s: is %s, not a regular file", path,
                       S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO"
                       : S_ISSOCK(sb.st_mode) ? "a socket" : "a device");
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
