/* cli.c — the subcommands' flags read into cli_args through the one flag
 * parser (flags.h) and the command table (commands.h), and the small text
 * helpers the commands share. */
#include "tools/tools.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reduce/pool.h"
#include "tools/commands.h"
#include "tools/escape.h"
#include "tools/flags.h"

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

int cli_input_changed(ls_status st, const ls_err *err)
{
    return st == LS_EMISMATCH &&
           (strncmp(err->msg, "data_hash:", 10) == 0 || strncmp(err->msg, "init_hash:", 10) == 0);
}

int cli_exit_code_input(ls_status st, const ls_err *err)
{
    return cli_input_changed(st, err) ? EXIT_USAGE : cli_exit_code(st);
}

void cli_error(const char *cmd, const ls_err *err, ls_status st)
{
    fprintf(stderr, "lockstep %s: %s\n", cmd, err->msg[0] ? err->msg : ls_strerror(st));
}

static ls_status parse_threads(const char *v, int list, cli_args *a, ls_err *err)
{
    a->n_threads = 0;
    const char *p = v;
    do {
        const size_t w = strcspn(p, ",");
        uint64_t n;
        ls_status st = flags_u64("--threads", v, p, w, 1, POOL_MAX_THREADS, &n, err);
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

/* The flags cli_args holds, with the accept bits that take each. A command
 * in the table lists those it takes (with its own help); a caller outside
 * it (cli_parse) gets these specs for its accept bits. */
static const struct {
    flag_spec spec;
    unsigned accept;
} COMMON[] = {
    { { "--db", NULL, "FILE", "SQLite record (default runs.db)", "a file name" }, CLI_DB },
    { { "--threads", NULL, "N", "worker threads (default: online CPUs)", NULL },
      CLI_TRAIN | CLI_THREAD_LIST | CLI_THREADS },
    { { "--steps", NULL, "N", "steps", NULL }, CLI_TRAIN | CLI_STEPS_FLAG },
    { { "--eval-every", NULL, "K", "evaluation interval", NULL }, CLI_TRAIN },
    { { "--name", NULL, "NAME", "a unique name for the run", NULL }, CLI_TRAIN },
    { { "--no-progress", NULL, NULL, "no progress line", NULL }, CLI_TRAIN | CLI_PROGRESS },
    { { "--no-eval", NULL, NULL, "no evaluation at the end", NULL }, CLI_NO_EVAL },
    { { "--checkpoint-every", NULL, "K", "checkpoint interval", NULL }, CLI_CKPT },
    { { "--checkpoint-dir", NULL, "DIR", "checkpoint directory", "a directory name" }, CLI_CKPT },
    { { "--keep-checkpoints", NULL, "N|all", "checkpoints kept", NULL }, CLI_CKPT },
    { { "--reps", NULL, "R", "repetitions", NULL }, CLI_REPS },
    { { "--leaf", NULL, "L,...", "leaf sizes", NULL }, CLI_LEAF_LIST },
};
#define N_COMMON (sizeof COMMON / sizeof COMMON[0])

/* The accept bits that take flag name (0: not a cli_args flag). */
static unsigned common_accept(const char *name)
{
    for (size_t k = 0; k < N_COMMON; k++)
        if (strcmp(COMMON[k].spec.name, name) == 0)
            return COMMON[k].accept;
    return 0;
}

/* Whether cli_args flag name takes a value (a command whose table entry
 * leaves it out still reads it by these rules). */
static int common_takes_value(const char *name)
{
    for (size_t k = 0; k < N_COMMON; k++)
        if (strcmp(COMMON[k].spec.name, name) == 0)
            return COMMON[k].spec.arg != NULL;
    return 0;
}

/* One cli_args flag with its value (NULL for a switch). */
static ls_status set_common(cli_args *a, const char *name, const char *v, unsigned accept, ls_err *err)
{
    ls_status st;
    int64_t n;
    if (strcmp(name, "--db") == 0) {
        a->db = v;
    } else if (strcmp(name, "--threads") == 0) {
        return parse_threads(v, (accept & CLI_THREAD_LIST) != 0, a, err);
    } else if (strcmp(name, "--steps") == 0) {
        if ((st = flags_int("--steps", v, 1, CLI_STEPS_MAX, &a->steps, err)) != LS_OK)
            return st;
        a->steps_given = 1;
    } else if (strcmp(name, "--eval-every") == 0) {
        return flags_int("--eval-every", v, 0, INT64_C(1) << 40, &a->eval_every, err);
    } else if (strcmp(name, "--name") == 0) {
        if (*v == '\0' || strlen(v) > 100)
            return ls_fail(err, LS_EINVAL, "--name: must be 1 to 100 characters");
        if (strspn(v, "0123456789") == strlen(v))
            return ls_fail(err, LS_EINVAL, "--name: '%s' is all digits, which would read as a run id", v);
        a->name = v;
    } else if (strcmp(name, "--no-progress") == 0) {
        a->progress = 0;
    } else if (strcmp(name, "--no-eval") == 0) {
        a->no_eval = 1;
    } else if (strcmp(name, "--checkpoint-every") == 0) {
        return flags_int("--checkpoint-every", v, 1, INT64_C(1) << 40, &a->checkpoint_every, err);
    } else if (strcmp(name, "--checkpoint-dir") == 0) {
        a->checkpoint_dir = v;
    } else if (strcmp(name, "--keep-checkpoints") == 0) {
        if (strcmp(v, "all") == 0)
            a->keep_checkpoints = -1;
        else if (flags_int("--keep-checkpoints", v, 1, INT64_C(1) << 40, &a->keep_checkpoints, err) != LS_OK)
            return ls_fail(err, LS_EINVAL, "--keep-checkpoints: '%.40s' is not a count >= 1 or 'all'", v);
    } else if (strcmp(name, "--leaf") == 0) {
        /* Each value is checked by the config (16 times a power of two). */
        a->n_leaves = 0;
        const char *p = v;
        do {
            const size_t w = strcspn(p, ",");
            uint64_t l;
            if ((st = flags_u64("--leaf", v, p, w, 1, 1 << 20, &l, err)) != LS_OK)
                return st;
            if (a->n_leaves == CLI_MAX_THREADS_LIST)
                return ls_fail(err, LS_EINVAL, "--leaf: more than %d entries", CLI_MAX_THREADS_LIST);
            a->leaves[a->n_leaves++] = (int)l;
            char one[24];
            snprintf(one, sizeof one, "%llu", (unsigned long long)l);
            if ((st = config_set(&a->cfg, "leaf", one, 1, err)) != LS_OK)
                return st;
            p += w;
        } while (*p++ == ',');
    } else if (strcmp(name, "--reps") == 0) {
        if ((st = flags_int("--reps", v, 1, CLI_MAX_REPS, &n, err)) != LS_OK)
            return st;
        a->reps = (int)n;
    }
    return LS_OK;
}

/* The config keys of the chosen task and model, as suggestions for a
 * mistyped flag: the key names of the canonical text, '_' as '-'. */
typedef struct {
    char text[CONFIG_TEXT_MAX];
    const char *names[3 * CONFIG_MAX_KEYS + 16];
    size_t n;
} key_names;

static const char *key_name_at(void *ctx, size_t i)
{
    const key_names *k = ctx;
    return i < k->n ? k->names[i] : NULL;
}

static void key_names_fill(key_names *k, const ls_config *cfg)
{
    k->n = 0;
    config_text(cfg, k->text, sizeof k->text);
    for (char *line = strtok(k->text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (eq == NULL || k->n == sizeof k->names / sizeof k->names[0])
            continue;
        *eq = '\0';
        for (char *p = line; *p; p++)
            if (*p == '_')
                *p = '-';
        if (!config_key_is_internal(line))
            k->names[k->n++] = line;
    }
}

ls_status cli_parse_cmd(const char *cmd, int argc, char **argv, unsigned accept, int max_positional,
                        cli_own_fn own, void *ctx, cli_args *a, ls_err *err)
{
    memset(a, 0, sizeof *a);
    a->db = "runs.db";
    a->progress = 1;
    a->reps = 3;
    a->n_threads = 1;
    a->threads[0] = pool_online_cpus();
    ls_status st = LS_OK;

    /* The flags: the command's from the table, or those of the accept bits. */
    flag_spec specs[N_COMMON];
    const flag_spec *use = specs;
    size_t n_specs = 0;
    const command *c = cmd != NULL ? command_find(cmd) : NULL;
    if (c != NULL) {
        use = c->flags;
        n_specs = c->n_flags;
    } else {
        for (size_t k = 0; k < N_COMMON; k++)
            if (COMMON[k].accept & accept)
                specs[n_specs++] = COMMON[k].spec;
    }

    /* First, --task and --model choose the defaults the other flags
     * override, and so does --async (the asynchronous checkerboard has its
     * own grid, rollout length and batch). Which flags take a value depends
     * on the config they choose, so this look ahead reads tokens. */
    if (accept & CLI_CONFIG) {
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
        if ((st = config_defaults(&a->cfg, task, model, err)) != LS_OK)
            return st;
        if (async && (st = config_set(&a->cfg, "async", "1", 1, err)) != LS_OK)
            return st;
    }

    flags_iter it;
    flags_init(&it, argc, argv, use, n_specs);
    it.open = (accept & CLI_CONFIG) != 0;
    const char *v;
    int k;
    while ((k = flags_next(&it, &v, err, &st)) != FLAGS_END) {
        if (k == FLAGS_ERROR)
            return st;
        if (k == FLAGS_HELP) {
            a->help = 1;
            continue;
        }
        if (k == FLAGS_ARG) {
            if (own != NULL && max_positional < 0) {
                if ((st = own(ctx, NULL, v, err)) != LS_OK)
                    return st;
            } else if (a->n_positional >= max_positional || a->n_positional >= 4) {
                return ls_fail(err, LS_EINVAL, "'%s': unexpected argument", v);
            } else {
                a->positional[a->n_positional++] = v;
            }
            continue;
        }
        const char *name = k >= 0 ? use[k].name : it.name;
        const unsigned takes = common_accept(name);
        a->n_flags++;
        if ((takes & accept) && k < 0 && common_takes_value(name) && (st = flags_take_value(&it, &v, err)) != LS_OK)
            return st;
        if (takes & accept) {
            if ((st = set_common(a, name, v, accept, err)) != LS_OK)
                return st;
        } else if ((accept & CLI_CONFIG) && name[1] == '-' && config_has_key(&a->cfg, name + 2) &&
                   !config_key_is_internal(name + 2)) {
            /* A switch alone ("--async", "--periodic") means on; "--periodic=0" turns it off. */
            if (k < 0 && config_key_is_switch(&a->cfg, name + 2) && it.eq == NULL)
                v = "1";
            else if (k < 0 && (st = flags_take_value(&it, &v, err)) != LS_OK)
                return st;
            if ((st = config_set(&a->cfg, name + 2, v, 1, err)) != LS_OK)
                return st;
        } else if (k >= 0 && own != NULL) {
            if ((st = own(ctx, &use[k], v, err)) != LS_OK)
                return st;
        } else {
            /* config_set says whose setting it is when another model or
             * task has it; else the nearest flag this command takes. */
            if ((accept & CLI_CONFIG) && name[1] == '-' && !config_key_is_internal(name + 2) &&
                config_set(&a->cfg, name + 2, "", 1, err) != LS_OK && strstr(err->msg, "(a setting of") != NULL)
                return LS_EINVAL;
            static key_names keys;   /* large; the process parses one command line */
            if (accept & CLI_CONFIG) {
                key_names_fill(&keys, &a->cfg);
                it.more_names = key_name_at;
                it.ctx = &keys;
            }
            return flags_unknown(&it, name, err);
        }
    }
    if (a->no_eval && a->eval_every > 0)
        return ls_fail(err, LS_EINVAL, "--no-eval: not with --eval-every %lld", (long long)a->eval_every);
    if (accept & CLI_CONFIG) {
        if (a->steps == 0)
            a->steps = config_default_steps(&a->cfg);
        if ((st = config_validate(&a->cfg, err)) != LS_OK)
            return st;
        /* A task's sources are recorded with the run so that resume and
         * export find the data again from any directory: as absolute paths
         * when they name existing files (others are left for the task to
         * name in its error). */
        for (size_t j = 0; a->cfg.task_desc != NULL && j <= a->cfg.task_desc->n_sources; j++) {
            if (j == a->cfg.task_desc->n_sources)
                j = CONFIG_INIT_SOURCE;   /* and the starting weights' file (--init) */
            char abs[PATH_MAX];
            const char *src = a->cfg.src[j];
            if (src[0] != '\0' && src[0] != '/' && realpath(src, abs) != NULL && strlen(abs) < sizeof a->cfg.src[j])
                memcpy(a->cfg.src[j], abs, strlen(abs) + 1);
        }
    }
    if (!isatty(STDERR_FILENO))
        a->progress = 0;
    return LS_OK;
}

ls_status cli_parse(int argc, char **argv, unsigned accept, int max_positional, cli_args *a, ls_err *err)
{
    return cli_parse_cmd(NULL, argc, argv, accept, max_positional, NULL, NULL, a, err);
}

void cli_json_str(FILE *f, const char *s)
{
    esc_json(f, s);   /* the one JSON string writer (tools/escape.h) */
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
