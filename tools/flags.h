/* flags.h — the one flag parser of the command line: every command reads
 * its argv through flags_next, so the rules and the messages are the same
 * everywhere.
 *
 * The rules:
 *   --k v and --k=v are the same; a one-dash flag (-o, -k) takes its value
 *     as the next argument only. A value may start with '-' (--lr -0.5).
 *   A switch (a flag without a value) refuses --k=v, except where the caller
 *     lets a config switch be turned off (--periodic=0, cli.c).
 *   "--" ends the flags: everything after it is an argument, even "-x".
 *   --help and -h ask for the command's usage wherever they stand before "--".
 *   Any other argument that starts with '-' (and is not "-" alone, which
 *     names stdout or stdin) is a flag; the rest are arguments.
 *   A flag given twice: the last one wins, as in most Unix tools (a script
 *     can append an override to a fixed command line).
 * The messages, each one line naming the flag (the caller prints it as
 * "lockstep CMD: message" and exits with status 2):
 *   "--k: needs a value" (the spec may name what: "needs a file name"),
 *   "--k: takes no value", "--stepz: unknown flag (did you mean --steps?)".
 */
#ifndef LS_FLAGS_H
#define LS_FLAGS_H

#include <stddef.h>
#include <stdint.h>

#include "include/lockstep.h"

/* One flag of a command, as its parser reads it and as --help, the man
 * page and docs/cli.md list it (tools/commands.c). */
typedef struct {
    const char *name;    /* "--steps", "-o" */
    const char *alias;   /* another spelling ("--output" for -o), or NULL */
    const char *arg;     /* the value's name ("N", "FILE"); NULL: a switch */
    const char *help;    /* what it does; lines after the first start with '\n'; NULL: not listed */
    const char *needs;   /* what a missing or empty value lacks ("a file name"); NULL: "a value",
                            and an empty value is passed on for the command to judge */
} flag_spec;

/* What flags_next found. */
enum {
    FLAGS_END = -1,     /* argv is used up */
    FLAGS_ARG = -2,     /* an argument (not a flag): *value */
    FLAGS_HELP = -3,    /* --help or -h */
    FLAGS_OTHER = -4,   /* a --flag outside the specs, only when open: its name in it->name; the
                           caller takes a value with flags_take_value or refuses it with flags_unknown */
    FLAGS_ERROR = -5    /* *st and err are set */
};

typedef struct {
    int argc;
    char **argv;
    int i;                  /* the next argument to read */
    int ended;              /* after "--" */
    const flag_spec *specs;
    size_t n_specs;
    int open;               /* 1: unknown --flags come back as FLAGS_OTHER */
    /* Names offered as suggestions besides the specs (e.g. config keys without
     * their "--"): names(ctx, i) for i = 0, 1, ... until NULL. */
    const char *(*more_names)(void *ctx, size_t i);
    void *ctx;
    char name[64];          /* the flag just read, without "=value" */
    const char *eq;         /* its "=value" part after the '=', or NULL */
} flags_iter;

void flags_init(flags_iter *it, int argc, char **argv, const flag_spec *specs, size_t n_specs);
/* The next flag: its index in specs (*value its value, NULL for a switch),
 * or one of FLAGS_*. */
int flags_next(flags_iter *it, const char **value, ls_err *err, ls_status *st);
/* After FLAGS_OTHER: the flag's value by the same rules (--k=v or the next
 * argument). */
ls_status flags_take_value(flags_iter *it, const char **value, ls_err *err);
/* "NAME: unknown flag (did you mean --X?)" with the nearest spec name (or
 * more_names entry) when one is close enough. */
ls_status flags_unknown(const flags_iter *it, const char *name, ls_err *err);

/* The spec named name (its name or alias) in specs, or NULL. */
const flag_spec *flags_find(const flag_spec *specs, size_t n, const char *name);

/* The one integer parser of tools/: every integer flag and list item goes
 * through these two, so they all take the same text and refuse it with the
 * same line. The text is decimal digits, with one '-' before them when lo
 * is negative; leading zeros are allowed ("01" is 1); nothing else (no
 * spaces, no '+', no hex), and a value beyond 64 bits is refused, never
 * saturated. The one message: "FLAG: 'V' is not an integer in LO..HI" (V
 * cut to 40 bytes; a bound of 2^k or 2^k-1 from 2^20 up shown that way,
 * e.g. "0..2^64-1"). hi >= 0. */
ls_status flags_int(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out, ls_err *err);
/* The same for unsigned values up to 2^64-1, the text v[0, len): the whole
 * value, or an item of the list `list` (NULL: none), which the message then
 * names too: "--seeds: 'x' is not an integer in 0..2^64-1 (in '1,x')". */
ls_status flags_u64(const char *flag, const char *list, const char *v, size_t len, uint64_t lo, uint64_t hi,
                    uint64_t *out, ls_err *err);

#endif
