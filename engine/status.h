/* status.h — result codes and error messages shared by every library module.
 *
 * Library code never prints and never exits: a function that can fail returns
 * an ls_status and, when given an ls_err, fills it with one line naming the
 * file, field or value at fault. Only tools/ prints that line and chooses the
 * exit code. The numbers are part of the API: never renumber, only append.
 */
#ifndef LS_STATUS_H
#define LS_STATUS_H

#include <stddef.h>

typedef enum {
    LS_OK = 0,
    LS_ENOMEM = 1,     /* an allocation failed */
    LS_EINVAL = 2,     /* a bad argument or configuration value */
    LS_EIO = 3,        /* reading or writing a file failed */
    LS_EFORMAT = 4,    /* a file's contents are malformed */
    LS_EDB = 5,        /* the SQLite record failed */
    LS_ENOTFOUND = 6,  /* a run, file or key does not exist */
    LS_EDIVERGED = 7,  /* the loss became NaN or infinite */
    LS_EFPENV = 8,     /* the floating-point environment breaks the contract */
    LS_EMISMATCH = 9,  /* recomputed bits differ from recorded bits */
    LS_EINTR = 10,     /* interrupted by a signal */
    LS_EEXIST = 11     /* a name or file already exists */
} ls_status;

/* One line of detail for the user; msg[0] == 0 when nothing was said. */
typedef struct {
    char msg[512];
} ls_err;

/* Short fixed text for a status ("out of memory", ...). Never NULL. */
const char *ls_strerror(ls_status st);

/* Fill err (if not NULL) with a printf-formatted line and return st, so a
 * failure reads: return ls_fail(err, LS_EINVAL, "--batch: %s is not ...", v); */
ls_status ls_fail(ls_err *err, ls_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
