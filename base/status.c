/* status.c — the version, text for result codes and the ls_fail helper:
 * the bottom of the library, which every layer may use. */
#include "include/lockstep.h"

#include <stdarg.h>
#include <stdio.h>

const char *ls_version(void)
{
    return LS_VERSION_STRING;
}

const char *ls_strerror(ls_status st)
{
    switch (st) {
    case LS_OK: return "ok";
    case LS_ENOMEM: return "out of memory";
    case LS_EINVAL: return "invalid argument";
    case LS_EIO: return "input/output error";
    case LS_EFORMAT: return "malformed input";
    case LS_EDB: return "database error";
    case LS_ENOTFOUND: return "not found";
    case LS_EDIVERGED: return "training diverged";
    case LS_EFPENV: return "floating-point environment breaks the contract";
    case LS_EMISMATCH: return "recomputed bits differ from the record";
    case LS_EINTR: return "interrupted";
    case LS_EEXIST: return "already exists";
    }
    return "unknown status";
}

ls_status ls_fail(ls_err *err, ls_status st, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}
