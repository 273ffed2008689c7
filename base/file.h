/* file.h — opening an input file that must be a regular file: the one way
 * every reader (data sets, .npy and IDX files, graph files, pairs and clubs
 * lists, golden files, checkpoints, certificates) opens what a user names,
 * and the one check made on a database path before SQLite opens it.
 * A FIFO would block the open or the read forever, and a directory or a
 * device is no data (/dev/zero never ends): each is refused, naming the path
 * and what it is, without blocking. A reader whose format bounds its size
 * reads through file_read_all with that bound, so no input makes it read
 * more than the bound. */
#ifndef LS_FILE_H
#define LS_FILE_H

#include <stddef.h>

#include "include/lockstep.h"

/* *fd: open for reading, blocking, close-on-exec; *size: its size in bytes.
 * LS_EIO with one line naming the path: it cannot be opened, or it is a
 * directory, a FIFO, a socket or a device. The open itself is non-blocking,
 * so a FIFO without a writer is refused at once. */
ls_status file_open_regular(const char *path, int *fd, size_t *size, ls_err *err);

/* The whole regular file at path in a malloc'ed buffer (*buf, freed by the
 * caller, with a NUL after its *len bytes so text readers may use it).
 * A file larger than max_bytes is refused before any read (LS_EFORMAT, one
 * line naming the path, its size and the limit); one that grows past its
 * size while read is refused too. */
ls_status file_read_all(const char *path, size_t max_bytes, unsigned char **buf, size_t *len, ls_err *err);

/* A regular file's bytes to read once, without a copy where that is
 * possible: mapped read-only (the page cache itself, no buffer to fault in
 * and no read() to copy), or, when mapping fails (an empty file, a file
 * system without mmap), read into a malloc'ed buffer as file_read_all does.
 * Open it with file_view_open, close it with file_view_close (which accepts
 * a view that failed to open or was never opened, if zeroed). */
typedef struct {
    const unsigned char *p;  /* the file's len bytes */
    size_t len;
    void *map;               /* the mapping (NULL when read) */
    unsigned char *buf;      /* the buffer (NULL when mapped) */
} file_view;

/* The same checks and messages as file_read_all: not a regular file, or
 * larger than max_bytes, is refused before any byte is read. A mapped view
 * holds the size the file had when opened; the file must not be truncated
 * while the view is open (reading a page past its new end would raise
 * SIGBUS), so use it only for files nobody rewrites in place, such as a
 * data set's. */
ls_status file_view_open(const char *path, size_t max_bytes, file_view *v, ls_err *err);
void file_view_close(file_view *v);

/* LS_OK when path is a regular file or does not exist (a command that
 * creates it reports a missing file in its own words); LS_EIO otherwise,
 * "LABEL PATH: is a FIFO, not a regular file" (label may be NULL). The check
 * made on a database path before SQLite opens it, which would open a FIFO or
 * a device and block or fail later with a vague I/O error. */
ls_status file_check_regular(const char *label, const char *path, ls_err *err);

#endif
