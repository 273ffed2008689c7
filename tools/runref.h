/* runref.h — a run named on the command line, perhaps in a database of its
 * own: "RUN" (an id or a name, in the --db database) or "DB:RUN".
 *
 * The rule, which `verify --help` and `report --help` state: an argument
 * holding ':' is DB:RUN when the text before one of its ':' names an
 * existing file that is not a directory; the longest such text wins (so a
 * path holding ':' works, and so does a run name holding ':' after a file
 * name). Otherwise the whole argument is a run in the --db database. Used by
 * `lockstep verify` and `lockstep report` (runs from two machines compared
 * without merging their databases).
 */
#ifndef LS_RUNREF_H
#define LS_RUNREF_H

#include <stddef.h>

#include "include/lockstep.h"

typedef struct {
    char db[4096];        /* the database file */
    const char *run;      /* id or name: points into the parsed argument */
    int explicit_db;      /* 1: DB:RUN, 0: the default database */
} runref;

/* Splits arg (rule above); default_db is the --db value. LS_EINVAL naming
 * the argument for an empty run ("x.db:") or a path too long. */
ls_status runref_parse(const char *arg, const char *default_db, runref *out, ls_err *err);

/* 1 when both paths name one file (device and inode; both must exist). */
int runref_same_file(const char *a, const char *b);

#endif
