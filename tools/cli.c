/* cli.c — flag parsing shared by the subcommands. */
#include "tools/tools.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reduce/pool.h"

int cli_exit_code(ls_status st)
{
    switch (st) {
    case LS_OK: return EXIT_OK;
    case LS_EDIVERGED:
    case LS_EMISMATCH: return EXIT_DIFFER;
    case LS_EINTR: return EXIT_INTERRUPTED;
    default: return EXIT_USAGE;
    }
}

void cli_error(const char *cmd, const ls_err *err, ls_status st)
{
    fprintf(stderr, "lockstep %s: %s\n", cmd, err->msg[0] ? err->msg : ls_strerror(st));
}

static ls_status parse_int(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out, ls_err *err)
{
    errno = 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0)
        return ls_fail(err, LS_EINVAL, "%s: '%s' is not an integer", flag, v);
    if (x < lo || x > hi)
        return ls_fail(err, LS_EINVAL, "%s: %lld is out of range (%lld..%lld)", flag, x, (long long)lo, (long long)hi);
    *out = x;
    return LS_OK;
}

static ls_status parse_threads(const char *v, int list, cli_args *a, ls_err *err)
{
    a->n_threads = 0;
    const char *p = v;
    do {
        char num[24];
        size_t w = strcspn(p, ",");
        if (w == 0 || w >= sizeof num)
            return ls_fail(err, LS_EINVAL, "--threads: '%s' is not %s", v, list ? "a list like 1,2,4" : "a number");
        memcpy(num, p, w);
        num[w] = '\0';
        int64_t n;
        ls_status st = parse_int("--threads", num, 1, POOL_MAX_THREADS, &n, err);
        if (st != LS_OK)
            return st;
        if (a->n_threads == CLI_MAX_THREADS_LIST)
            return ls_fail(err, LS_EINVAL, "--threads: more than %d entries", CLI_MAX_THREADS_LIST);
        a->threads[a->n_threads++] = (int)n;
        p += w;
    } while (*p++ == ',');
    if (!list && a->n_threads != 1)
        return ls_fail(err, LS_EINVAL, "--threads: '%s' must be one number here", v);
    return LS_OK;
}

/* Value of the flag at argv[*i]: "--k=v" or "--k v". */
static const char *flag_value(int argc, char **argv, int *i, const char *eq, ls_err *err, ls_status *st)
{
    if (eq != NULL)
        return eq + 1;
    if (*i + 1 >= argc) {
        *st = ls_fail(err, LS_EINVAL, "%s: needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

ls_status cli_parse(int argc, char **argv, unsigned accept, int max_positional, cli_args *a, ls_err *err)
{
    memset(a, 0, sizeof *a);
    a->db = "runs.db";
    a->progress = 1;
    a->reps = 3;
    a->n_threads = 1;
    a->threads[0] = pool_online_cpus();
    ls_status st = LS_OK;

    /* First pass: --task and --model choose the defaults the other flags
     * override, and so does --async (the asynchronous checkerboard has its
     * own grid, rollout length and batch). */
    const char *task = "fashion-mnist", *model = NULL;
    int async = 0;
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *s = argv[i];
        if (strncmp(s, "--task", 6) == 0 && (s[6] == '\0' || s[6] == '='))
            task = s[6] == '=' ? s + 7 : (i + 1 < argc ? argv[i + 1] : "");
        else if (strncmp(s, "--model", 7) == 0 && (s[7] == '\0' || s[7] == '='))
            model = s[7] == '=' ? s + 8 : (i + 1 < argc ? argv[i + 1] : "");
        else if (strcmp(s, "--async") == 0 || strcmp(s, "--async=1") == 0)
            async = 1;
    }
    if (accept & CLI_CONFIG) {
        if ((st = config_defaults(&a->cfg, task, model, err)) != LS_OK)
            return st;
        if (async && (st = config_set(&a->cfg, "async", "1", 1, err)) != LS_OK)
            return st;
    }

    int only_positional = 0;   /* after "--": a name like "-odd" is a name */
    for (int i = 0; i < argc; i++) {
        char *s = argv[i];
        if (!only_positional && strcmp(s, "--") == 0) {
            only_positional = 1;
            continue;
        }
        if (only_positional) {
            if (a->n_positional >= max_positional)
                return ls_fail(err, LS_EINVAL, "'%s': unexpected argument", s);
            a->positional[a->n_positional++] = s;
            continue;
        }
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            a->help = 1;
            continue;
        }
        if (strncmp(s, "--", 2) != 0 || s[2] == '\0') {
            if (s[0] == '-' && s[1] != '\0')
                return ls_fail(err, LS_EINVAL, "%s: unknown flag", s);
            if (a->n_positional >= max_positional)
                return ls_fail(err, LS_EINVAL, "'%s': unexpected argument", s);
            a->positional[a->n_positional++] = s;
            continue;
        }
        char name[64];
        const char *eq = strchr(s, '=');
        size_t nl = eq ? (size_t)(eq - s) : strlen(s);
        if (nl >= sizeof name)
            return ls_fail(err, LS_EINVAL, "%.40s...: unknown flag", s);
        memcpy(name, s, nl);
        name[nl] = '\0';
        const char *v;
        int64_t n;
        if (strcmp(name, "--db") == 0 && (accept & CLI_DB)) {
            if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if (*v == '\0')
                return ls_fail(err, LS_EINVAL, "--db: needs a file name");
            a->db = v;
        } else if (strcmp(name, "--threads") == 0 && (accept & (CLI_TRAIN | CLI_THREAD_LIST | CLI_THREADS))) {
            if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if ((st = parse_threads(v, (accept & CLI_THREAD_LIST) != 0, a, err)) != LS_OK)
                return st;
        } else if (strcmp(name, "--steps") == 0 && (accept & (CLI_TRAIN | CLI_STEPS_FLAG))) {
            if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if ((st = parse_int("--steps", v, 0, INT64_C(1) << 40, &a->steps, err)) != LS_OK)
                return st;
            if (a->steps == 0)
                return ls_fail(err, LS_EINVAL, "--steps: must be at least 1");
        } else if (strcmp(name, "--eval-every") == 0 && (accept & CLI_TRAIN)) {
            if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if ((st = parse_int("--eval-every", v, 0, INT64_C(1) << 40, &a->eval_every, err)) != LS_OK)
                return st;
        } else if (strcmp(name, "--name") == 0 && (accept & CLI_TRAIN)) {
            if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if (*v == '\0' || strlen(v) > 100)
                return ls_fail(err, LS_EINVAL, "--name: must be 1 to 100 characters");
            if (strspn(v, "0123456789") == strlen(v))
                return ls_fail(err, LS_EINVAL, "--name: '%s' is all digits, which would read as a run id", v);
            a->name = v;
        } else if (strcmp(name, "--no-progress") == 0 && (accept & (CLI_TRAIN | CLI_PROGRESS))) {
            a->progress = 0;
        } else if (strcmp(name, "--checkpoint-every") == 0 && (accept & CLI_CKPT)) {
            if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if ((st = parse_int("--checkpoint-every", v, 1, INT64_C(1) << 40, &a->checkpoint_every, err)) != LS_OK)
                return st;
        } else if (strcmp(name, "--checkpoint-dir") == 0 && (accept & CLI_CKPT)) {
            if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if (*v == '\0')
                return ls_fail(err, LS_EINVAL, "--checkpoint-dir: needs a directory name");
            a->checkpoint_dir = v;
        } else if (strcmp(name, "--keep-checkpoints") == 0 && (accept & CLI_CKPT)) {
            if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if (strcmp(v, "all") == 0)
                a->keep_checkpoints = -1;
            else if ((st = parse_int("--keep-checkpoints", v, 1, INT64_C(1) << 40, &a->keep_checkpoints, err)) !=
                     LS_OK)
                return ls_fail(err, LS_EINVAL, "--keep-checkpoints: '%.40s' is not a count >= 1 or 'all'", v);
        } else if (strcmp(name, "--reps") == 0 && (accept & CLI_REPS)) {
            if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if ((st = parse_int("--reps", v, 1, CLI_MAX_REPS, &n, err)) != LS_OK)
                return st;
            a->reps = (int)n;
        } else if ((accept & CLI_CONFIG) && config_has_key(&a->cfg, name + 2) &&
                   !config_key_is_internal(name + 2)) {
            /* A switch alone ("--async", "--periodic") means on; "--periodic=0" turns it off. */
            if (config_key_is_switch(&a->cfg, name + 2) && eq == NULL)
                v = "1";
            else if ((v = flag_value(argc, argv, &i, eq, err, &st)) == NULL)
                return st;
            if ((st = config_set(&a->cfg, name + 2, v, 1, err)) != LS_OK)
                return st;
        } else if ((accept & CLI_CONFIG) && !config_key_is_internal(name + 2)) {
            /* config_set says whose setting it is when another model or task has it. */
            return config_set(&a->cfg, name + 2, "", 1, err);
        } else {
            return ls_fail(err, LS_EINVAL, "%s: unknown flag", name);
        }
    }
    if (accept & CLI_CONFIG) {
        if (a->steps == 0)
            a->steps = config_default_steps(&a->cfg);
        if ((st = config_validate(&a->cfg, err)) != LS_OK)
            return st;
        /* A task's sources are recorded with the run so that resume and
         * export find the data again from any directory: as absolute paths
         * when they name existing files (others are left for the task to
         * name in its error). */
        for (size_t k = 0; a->cfg.task_desc != NULL && k < a->cfg.task_desc->n_sources; k++) {
            char abs[PATH_MAX];
            const char *v = a->cfg.src[k];
            if (v[0] != '\0' && v[0] != '/' && realpath(v, abs) != NULL && strlen(abs) < sizeof a->cfg.src[k])
                memcpy(a->cfg.src[k], abs, strlen(abs) + 1);
        }
    }
    if (!isatty(STDERR_FILENO))
        a->progress = 0;
    return LS_OK;
}


void cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s != NULL ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p == '\r')
            fputs("\\r", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void cli_shortest_double(FILE *f, double v)
{
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

/* Printable ASCII for comments: no control characters, no comment ends. */
void cli_comment_safe(char *dst, size_t cap, const char *src)
{
    size_t j = 0;
    for (size_t i = 0; src[i] != '\0' && j + 1 < cap; i++) {
        char ch = src[i];
        if (ch < 32 || ch > 126)
            ch = '?';
        if (ch == '/' && j > 0 && dst[j - 1] == '*')
            ch = '|';
        dst[j++] = ch;
    }
    dst[j] = '\0';
}
