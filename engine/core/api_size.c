/* api_size.c — the check of the size field of the public structs (see
 * api_size.h): one message for every struct, so a caller learns which
 * struct, whose, and what to rebuild. */
#include "engine/core/api_size.h"

ls_status api_size_check(const char *type, const char *who, size_t got, size_t known, ls_err *err)
{
    if (got == known)
        return LS_OK;
    const char *sep = who != NULL ? " " : "";
    const char *name = who != NULL ? who : "";
    if (got == 0)
        return ls_fail(err, LS_EINVAL,
                       "%s%s%s: size is 0, not sizeof(%s) (%zu bytes in this library): set .size = sizeof(%s)",
                       type, sep, name, type, known, type);
    return ls_fail(err, LS_EINVAL,
                   "%s%s%s: size %zu, but this library's %s is %zu bytes: rebuild against its lockstep.h (%s)", type,
                   sep, name, got, type, known, LS_VERSION_STRING);
}

ls_status api_size_session_opts(const ls_session_opts *opts, ls_err *err)
{
    return opts == NULL ? LS_OK : api_size_check("ls_session_opts", NULL, opts->size, sizeof *opts, err);
}
