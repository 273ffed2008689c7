/* runref.c — "RUN" or "DB:RUN" on the command line (runref.h). */
#include "tools/runref.h"

#include <string.h>
#include <sys/stat.h>

/* An existing file that is not a directory: a database, or something the
 * database code will refuse by name (a FIFO), which is better said than
 * reading the argument as a run name. */
static int names_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode);
}

ls_status runref_parse(const char *arg, const char *default_db, runref *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    const size_t len = strlen(arg);
    /* From the last ':' back to the first: the longest prefix that is a file. */
    for (size_t i = len; i-- > 0;) {
        if (arg[i] != ':' || i == 0)
            continue;
        if (i >= sizeof out->db)
            return ls_fail(err, LS_EINVAL, "'%.64s...': the database path is too long", arg);
        memcpy(out->db, arg, i);
        out->db[i] = '\0';
        if (!names_file(out->db))
            continue;
        if (arg[i + 1] == '\0')
            return ls_fail(err, LS_EINVAL, "'%s': names the database %s but no run after the ':'", arg, out->db);
        out->run = arg + i + 1;
        out->explicit_db = 1;
        return LS_OK;
    }
    if (strlen(default_db) >= sizeof out->db)
        return ls_fail(err, LS_EINVAL, "--db: the path is too long");
    memcpy(out->db, default_db, strlen(default_db) + 1);
    out->run = arg;
    return LS_OK;
}

int runref_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
