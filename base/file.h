/* file.h — opening an input file that must be a regular file: the one way
 * every reader (data sets, golden files, .npy files) opens what a user names.
 * A FIFO would block the open or the read forever, and a directory or a
 * device is no data: each is refused, naming the path and what it is,
 * without blocking. */
#ifndef LS_FILE_H
#define LS_FILE_H

#include <stddef.h>

#include "include/lockstep.h"

/* *fd: open for reading, blocking, close-on-exec; *size: its size in bytes.
 * LS_EIO with one line naming the path: it cannot be opened, or it is a
 * directory, a FIFO, a socket or a device. */
ls_status file_open_regular(const char *path, int *fd, size_t *size, ls_err *err);

#endif
