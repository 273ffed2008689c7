/* cmd_sweep.c — `lockstep sweep`: every combination of some train flags'
 * values trained at once in one process (engine/core/sweep.h), each recorded as
 * its own run tagged with the sweep's id; and the listing of one sweep's
 * runs, best first, for `lockstep runs --sweep ID`.
 *
 * A flag given a list becomes an axis: "--lr 0.01,0.05", "--model mlp,logic",
 * "--seeds 1-8" (the seed's own syntax: ranges and lists). A flag whose value
 * is itself a list (--hidden 64,64, --layers) takes its alternatives
 * separated by '/': "--hidden 32/64,64". The runs are every combination, the
 * last axis varying fastest, named PREFIX-seed3-lr0.05 (PREFIX: --name, else
 * sweep-<UTC date>-<time>, which is also the sweep id). Everything is checked
 * (flags, names, data) before the first run is recorded.
 */
#include "tools/tools.h"
#include "tools/commands.h"
#include "tools/escape.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/core/sweep.h"
#include "reduce/pool.h"

#define SWEEP_MAX_AXES 16
#define SWEEP_MAX_RUNS 1024
#define SWEEP_MAX_ARGS 256

typedef struct {
    char flag[64];              /* "--lr" */
    char label[64];             /* "lr": the key in run names */
    char *text;                 /* the value, split in place */
    char *values[SWEEP_MAX_RUNS];
    size_t n;
} sweep_axis;

/* The type of key (as a flag name, '-' for '_') in any registered model or
 * task, or -1: a mixed sweep's flags may belong to some of its models only. */
static int key_type_any(const char *flag)
{
    char key[64];
    snprintf(key, sizeof key, "%.63s", flag);
    for (char *p = key; *p; p++)
        if (*p == '-')
            *p = '_';
    for (size_t i = 0; ls_model_at(i) != NULL; i++)
        for (size_t k = 0; k < ls_model_at(i)->n_keys; k++)
            if (strcmp(ls_model_at(i)->keys[k].name, key) == 0)
                return (int)ls_model_at(i)->keys[k].type;
    for (size_t i = 0; ls_task_at(i) != NULL; i++)
        for (size_t k = 0; k < ls_task_at(i)->n_keys; k++)
            if (strcmp(ls_task_at(i)->keys[k].name, key) == 0)
                return (int)ls_task_at(i)->keys[k].type;
    return -1;
}

/* "1-8", "1,3,5", "1-4,10" into the seed axis (values as decimal text, so
 * "01" is seed 1). Each number is read by the one integer parser (0..2^64-1,
 * never saturated). */
static ls_status parse_seeds(const char *v, sweep_axis *ax, ls_err *err)
{
    snprintf(ax->flag, sizeof ax->flag, "--seed");
    snprintf(ax->label, sizeof ax->label, "seed");
    char *out = NULL;
    ls_status st = LS_OK;
    /* Two passes: count the bytes, then write them. */
    for (int pass = 0; pass < 2 && st == LS_OK; pass++) {
        size_t at = 0;
        const char *p = v;
        ax->n = 0;
        do {
            const size_t w = strcspn(p, ",");
            const char *dash = memchr(p, '-', w);
            const size_t wa = dash != NULL ? (size_t)(dash - p) : w;
            uint64_t a, b;
            if ((st = flags_u64("--seeds", v, p, wa, 0, UINT64_MAX, &a, err)) != LS_OK)
                break;
            b = a;
            if (dash != NULL && (st = flags_u64("--seeds", v, dash + 1, w - wa - 1, 0, UINT64_MAX, &b, err)) != LS_OK)
                break;
            if (b < a) {
                st = ls_fail(err, LS_EINVAL, "--seeds: '%s': a range must go up", v);
                break;
            }
            for (uint64_t s = a;; s++) {
                if (ax->n == SWEEP_MAX_RUNS) {
                    st = ls_fail(err, LS_EINVAL, "--seeds: '%s' is more than %d seeds", v, SWEEP_MAX_RUNS);
                    break;
                }
                char num[24];
                int n = snprintf(num, sizeof num, "%llu", (unsigned long long)s);
                if (pass == 1) {
                    memcpy(out + at, num, (size_t)n + 1);
                    ax->values[ax->n] = out + at;
                }
                ax->n++;
                at += (size_t)n + 1;
                if (s == b)
                    break;
            }
            p += w;
        } while (st == LS_OK && *p++ == ',');
        if (st == LS_OK && pass == 0 && (out = malloc(at)) == NULL)
            st = ls_fail(err, LS_ENOMEM, "--seeds: out of memory");
    }
    /* The message is made while the values it names are still there. */
    for (size_t i = 0; i < ax->n && st == LS_OK; i++)
        for (size_t j = 0; j < i && st == LS_OK; j++)
            if (strcmp(ax->values[i], ax->values[j]) == 0)
                st = ls_fail(err, LS_EINVAL, "--seeds: seed %s appears twice in '%s'", ax->values[i], v);
    if (st != LS_OK) {
        free(out);
        ax->n = 0;
        return st;
    }
    ax->text = out;
    return LS_OK;
}

/* Splits value into the axis's alternatives at sep. */
static ls_status parse_axis(const char *flag, const char *value, char sep, sweep_axis *ax, ls_err *err)
{
    snprintf(ax->flag, sizeof ax->flag, "%s", flag);
    snprintf(ax->label, sizeof ax->label, "%.*s", (int)sizeof ax->label - 1, flag + 2);
    if ((ax->text = strdup(value)) == NULL)
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", flag);
    ax->n = 0;
    char *p = ax->text;
    for (;;) {
        char *e = strchr(p, sep);
        if (e != NULL)
            *e = '\0';
        if (*p == '\0')
            return ls_fail(err, LS_EINVAL, "%s: '%s' has an empty entry", flag, value);
        if (ax->n == SWEEP_MAX_RUNS)
            return ls_fail(err, LS_EINVAL, "%s: '%s' has more than %d entries", flag, value, SWEEP_MAX_RUNS);
        for (size_t j = 0; j < ax->n; j++)
            if (strcmp(ax->values[j], p) == 0)
                return ls_fail(err, LS_EINVAL, "%s: '%s' appears twice in '%s'", flag, p, value);
        ax->values[ax->n++] = p;
        if (e == NULL)
            break;
        p = e + 1;
    }
    return LS_OK;
}

typedef struct {
    sweep_axis axes[SWEEP_MAX_AXES];
    size_t n_axes;
    char *base[SWEEP_MAX_ARGS];     /* the flags every run shares */
    int n_base;
    const char *prefix;             /* --name */
    int one_by_one;                 /* --one-by-one: the benchmark's baseline */
    int help;
} sweep_cmd;

static void sweep_cmd_free(sweep_cmd *c)
{
    for (size_t i = 0; i < c->n_axes; i++)
        free(c->axes[i].text);
    c->n_axes = 0;
}

static ls_status add_axis(sweep_cmd *c, sweep_axis **out, const char *flag, ls_err *err)
{
    for (size_t i = 0; i < c->n_axes; i++)
        if (strcmp(c->axes[i].flag, flag) == 0 || (strcmp(flag, "--seed") == 0 && strcmp(c->axes[i].flag, "--seed") == 0))
            return ls_fail(err, LS_EINVAL, "%s: given twice as a list", strcmp(flag, "--seed") ? flag : "--seeds/--seed");
    if (c->n_axes == SWEEP_MAX_AXES)
        return ls_fail(err, LS_EINVAL, "%s: more than %d flags as lists", flag, SWEEP_MAX_AXES);
    *out = &c->axes[c->n_axes++];
    memset(*out, 0, sizeof **out);
    return LS_OK;
}

static ls_status push_base(sweep_cmd *c, char *arg, ls_err *err)
{
    if (c->n_base == SWEEP_MAX_ARGS)
        return ls_fail(err, LS_EINVAL, "too many arguments");
    c->base[c->n_base++] = arg;
    return LS_OK;
}

/* Sorts argv into axes (flags given lists) and the flags every run shares,
 * through the one flag parser: the sweep's own flags from the command
 * table, any other --flag (a train flag) with a value unless it is a
 * switch. What is not an axis goes to cli_parse per run, token for token. */
static ls_status sweep_parse(int argc, char **argv, sweep_cmd *c, ls_err *err)
{
    memset(c, 0, sizeof *c);
    const command *me = command_find("sweep");
    flags_iter it;
    flags_init(&it, argc, argv, me->flags, me->n_flags);
    it.open = 1;
    ls_status st = LS_OK;
    const char *v;
    int k;
    while (st == LS_OK) {
        const int first = it.i;
        if ((k = flags_next(&it, &v, err, &st)) == FLAGS_END || k == FLAGS_ERROR)
            break;
        const char *flag = k >= 0 ? me->flags[k].name : it.name;
        int type = k == FLAGS_OTHER ? key_type_any(flag + 2) : -1;
        if (k == FLAGS_HELP) {
            c->help = 1;
            continue;
        }
        if (k == FLAGS_OTHER && !(type == LS_KEY_SWITCH && it.eq == NULL) &&
            (st = flags_take_value(&it, &v, err)) != LS_OK)
            break;
        if (k >= 0 && strcmp(flag, "--one-by-one") == 0) {
            c->one_by_one = 1;
        } else if (k >= 0 && strcmp(flag, "--seeds") == 0) {
            sweep_axis *ax;
            if ((st = add_axis(c, &ax, "--seed", err)) == LS_OK)
                st = parse_seeds(v, ax, err);
        } else if (k >= 0 && strcmp(flag, "--name") == 0) {
            c->prefix = v;
        } else {
            /* Flags of the sweep as a whole are never lists. */
            int whole = v == NULL || strcmp(flag, "--threads") == 0 || strcmp(flag, "--db") == 0 ||
                        strcmp(flag, "--checkpoint-dir") == 0;
            char sep = type == LS_KEY_LIST ? '/' : ',';
            if (!whole && strchr(v, sep) != NULL) {
                sweep_axis *ax;
                if ((st = add_axis(c, &ax, flag, err)) == LS_OK)
                    st = parse_axis(flag, v, sep, ax, err);
            } else {
                for (int i = first; i < it.i && st == LS_OK; i++)
                    st = push_base(c, argv[i], err);   /* cli_parse names what is wrong */
            }
        }
    }
    return st;
}

/* ---- the runs of one sweep ------------------------------------------------------------------ */

typedef struct {
    cli_args a;
    char name[RUNLOG_NAME_BYTES + 64];
    char label[512];            /* the axes' part of the name: "seed3-lr0.05" */
    ls_dataset *data;           /* owned when own_data */
    int own_data;
    ls_session *s;
    /* What became of it. */
    ls_status rs;
    ls_err re;
    ls_session_state ss;        /* run_id -1: never started (one-by-one, interrupted before it) */
    ls_metric met[LS_MAX_METRICS];
    size_t n_met;
} sweep_member;

/* Run k of the combinations: its flags and its name's axes part. */
static ls_status sweep_member_parse(const sweep_cmd *c, size_t k, sweep_member *m, ls_err *err)
{
    char *args[SWEEP_MAX_ARGS + SWEEP_MAX_AXES];
    char flags[SWEEP_MAX_AXES][1024];
    int n = 0;
    for (int i = 0; i < c->n_base; i++)
        args[n++] = c->base[i];
    /* The last axis varies fastest. */
    size_t rest = k;
    size_t pick[SWEEP_MAX_AXES];
    for (size_t j = c->n_axes; j-- > 0;) {
        pick[j] = rest % c->axes[j].n;
        rest /= c->axes[j].n;
    }
    size_t at = 0;
    m->label[0] = '\0';
    for (size_t j = 0; j < c->n_axes; j++) {
        const sweep_axis *ax = &c->axes[j];
        snprintf(flags[j], sizeof flags[j], "%s=%s", ax->flag, ax->values[pick[j]]);
        args[n++] = flags[j];
        int w = snprintf(m->label + at, sizeof m->label - at, "%s%s%s", j ? "-" : "", ax->label,
                         ax->values[pick[j]]);
        if (w > 0 && (size_t)w < sizeof m->label - at)
            at += (size_t)w;
    }
    ls_err e = { "" };
    ls_status st = cli_parse(n, args, CLI_CONFIG | CLI_TRAIN | CLI_DB | CLI_CKPT, 0, &m->a, &e);
    if (st == LS_OK && m->a.checkpoint_dir != NULL && m->a.checkpoint_every == 0)
        st = ls_fail(&e, LS_EINVAL, "--checkpoint-dir: needs --checkpoint-every K");
    if (st == LS_OK && strcmp(m->a.cfg.reduce, "tree") != 0)
        st = ls_fail(&e, LS_EINVAL, "--reduce: a sweep sums by the canonical tree, not '%s'", m->a.cfg.reduce);
    if (st != LS_OK) {
        if (c->n_axes > 0)
            return ls_fail(err, st, "run %s: %s", m->label, e.msg);
        *err = e;
    }
    return st;
}

static int same_data(const ls_config *x, const ls_config *y)
{
    if (strcmp(x->task, y->task) != 0)
        return 0;
    for (size_t k = 0; k < LS_MAX_SOURCES; k++)
        if (strcmp(x->src[k], y->src[k]) != 0)
            return 0;
    return 1;
}

typedef struct {
    double t0, printed;
    int on;
} sweep_watch;

static void on_round(void *ctx, const sweep_progress *p)
{
    sweep_watch *w = ctx;
    if (!w->on)
        return;
    double now = run_now();
    if (now - w->printed < 0.2 && p->active > 0)
        return;
    w->printed = now;
    double el = now - w->t0;
    double frac = p->target_steps > 0 ? (double)p->steps / (double)p->target_steps : 1;
    fprintf(stderr, "\rsweep: %zu/%zu runs done%s  steps %lld/%lld  ETA %.0fs   ", p->done, p->runs,
            p->failed ? " (some failed)" : "", (long long)p->steps, (long long)p->target_steps,
            frac > 0 ? el / frac - el : 0);
    if (p->active == 0)
        fputs("\r\033[K", stderr);
    fflush(stderr);
}

/* --one-by-one, the benchmark's baseline: the same runs in the same process
 * (data loaded once, the same record), each trained alone on --threads
 * threads, one after another. An interrupt leaves the run in progress
 * interrupted and the later ones never started. */
static ls_status sweep_one_by_one(sweep_member *m, size_t n_runs, runlog *db, const char *prefix, ls_err *err)
{
    ls_status st = LS_OK;
    for (size_t k = 0; k < n_runs; k++) {
        m[k].ss.run_id = -1;
        m[k].rs = LS_EINTR;
    }
    for (size_t k = 0; k < n_runs; k++) {
        const cli_args *a = &m[k].a;
        if (run_interrupted)
            return ls_fail(err, LS_EINTR, "interrupted before run %s", m[k].name);
        ls_session_opts so = { .size = sizeof(ls_session_opts),
                               .threads = a->threads[0], .db = a->db, .name = m[k].name, .steps = a->steps,
                               .checkpoint_every = a->checkpoint_every, .checkpoint_dir = a->checkpoint_dir,
                               .data = m[k].data, .eval_every = a->eval_every };
        ls_session *s;
        if ((st = ls_session_open(&s, &a->cfg, &so, err)) != LS_OK)
            return st;
        ls_session_state_get(s, &m[k].ss);
        char threads[16];
        snprintf(threads, sizeof threads, "%d", a->threads[0]);
        if ((st = runlog_setting_set(db, m[k].ss.run_id, "sweep", prefix, err)) == LS_OK)
            st = runlog_setting_set(db, m[k].ss.run_id, "sweep_threads", threads, err);
        if (st != LS_OK) {
            ls_session_close(s, LS_EINTR, NULL);
            return st;
        }
        m[k].rs = ls_session_train(s, 0, a->eval_every, &run_interrupted, m[k].met, &m[k].n_met, &m[k].re);
        ls_session_state_get(s, &m[k].ss);
        ls_err ce = { "" };
        ls_status cs = ls_session_close(s, m[k].rs, &ce);
        if (m[k].rs == LS_OK && cs != LS_OK) {
            m[k].rs = cs;
            m[k].re = ce;
        }
        if (m[k].rs == LS_EINTR)
            return ls_fail(err, LS_EINTR, "interrupted in run %s", m[k].name);
    }
    return LS_OK;
}

static const char *status_word(ls_status st)
{
    return st == LS_OK ? "done" : st == LS_EDIVERGED ? "diverged" : st == LS_EINTR ? "interrupted" : "failed";
}

/* What the record holds of run id, read back after the sweep: its last
 * step, that step's loss and trajectory, and its status as `lockstep runs`
 * shows it once this process is gone (cli_run_fate's rule). A run whose commit failed (a full disk) holds
 * fewer steps than the engine computed, and its status may not have been
 * written: the summary says what the record holds, never what was hoped.
 * 0 when the record cannot be read (then the engine's figures stand). */
static int sweep_held(runlog *db, int64_t id, int64_t *steps, double *loss, uint64_t *traj, char *status,
                      size_t cap)
{
    runlog_run run;
    if (db == NULL || runlog_get_run(db, id, &run, NULL) != LS_OK)
        return 0;
    *steps = run.n_steps;
    *traj = run.last_traj_hash;
    ls_step *rows;
    size_t n;
    if (runlog_read_steps(db, id, &rows, &n, NULL) == LS_OK) {
        *loss = n > 0 && rows[n - 1].has_loss ? hash_bits_to_double(rows[n - 1].loss_bits) : 0.0 / 0.0;
        free(rows);
    }
    snprintf(status, cap, "%s", strcmp(run.status, "running") == 0 && run.pid == (int64_t)getpid()
                                    ? "interrupted" : run.status);
    runlog_run_free(&run);
    return 1;
}

int cmd_sweep(int argc, char **argv)
{
    sweep_cmd c;
    ls_err err = { "" };
    ls_status st = sweep_parse(argc, argv, &c, &err);
    if (st != LS_OK || c.help) {
        if (st != LS_OK)
            cli_error("sweep", &err, st);
        else
            command_usage(command_find("sweep"), stdout);
        sweep_cmd_free(&c);
        return st != LS_OK ? EXIT_USAGE : EXIT_OK;
    }
    size_t n_runs = 1;
    for (size_t j = 0; j < c.n_axes; j++) {
        if (n_runs * c.axes[j].n > SWEEP_MAX_RUNS) {
            fprintf(stderr, "lockstep sweep: more than %d runs (the product of the lists)\n", SWEEP_MAX_RUNS);
            sweep_cmd_free(&c);
            return EXIT_USAGE;
        }
        n_runs *= c.axes[j].n;
    }
    sweep_member *m = calloc(n_runs, sizeof *m);
    if (m == NULL) {
        fputs("lockstep sweep: out of memory\n", stderr);
        sweep_cmd_free(&c);
        return EXIT_USAGE;
    }
    int rc = EXIT_OK;
    runlog *db = NULL;
    sweep *sw = NULL;
    size_t opened = 0;
    char prefix[160];

    /* Every run's flags, then the data, then the names: all before anything is recorded. */
    for (size_t k = 0; k < n_runs && st == LS_OK; k++)
        st = sweep_member_parse(&c, k, &m[k], &err);
    const char *db_path = n_runs > 0 ? m[0].a.db : "runs.db";
    if (st == LS_OK)
        st = cli_check_regular("--db", db_path, &err);
    for (size_t k = 0; k < n_runs && st == LS_OK; k++) {
        for (size_t j = 0; j < k && m[k].data == NULL; j++)
            if (same_data(&m[j].a.cfg, &m[k].a.cfg) && m[j].data != NULL)
                m[k].data = m[j].data;
        if (m[k].data == NULL && (st = trainer_load_data(&m[k].a.cfg, &m[k].data, &err)) == LS_OK)
            m[k].own_data = m[k].data != NULL;
    }
    if (st == LS_OK)
        st = cli_open_db(db_path, &db, &err);
    if (st == LS_OK) {
        /* The default prefix is the time; a second sweep within the same second gets -2, -3, ... */
        char stamp[64];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(stamp, sizeof stamp, "sweep-%Y%m%d-%H%M%S", &tm);
        for (int attempt = 1; attempt < 100; attempt++) {
            if (c.prefix != NULL)
                snprintf(prefix, sizeof prefix, "%s", c.prefix);
            else if (attempt == 1)
                snprintf(prefix, sizeof prefix, "%s", stamp);
            else
                snprintf(prefix, sizeof prefix, "%s-%d", stamp, attempt);
            int taken = 0;
            for (size_t k = 0; k < n_runs && st == LS_OK && !taken; k++) {
                int w = snprintf(m[k].name, sizeof m[k].name, "%s%s%s", prefix, m[k].label[0] ? "-" : "",
                                 m[k].label);
                if (w < 0 || (size_t)w >= sizeof m[k].name) {
                    st = ls_fail(&err, LS_EINVAL, "run name '%.40s...': longer than %zu bytes (a shorter --name)",
                                 m[k].name, sizeof m[k].name - 1);
                    break;
                }
                int64_t id;
                if ((st = runlog_check_name(m[k].name, &err)) == LS_OK && runlog_find(db, m[k].name, &id, NULL) == LS_OK)
                    taken = 1;
            }
            if (!taken || st != LS_OK)
                break;
            if (c.prefix != NULL) {
                int64_t id;
                for (size_t k = 0; k < n_runs; k++)
                    if (runlog_find(db, m[k].name, &id, NULL) == LS_OK) {
                        st = ls_fail(&err, LS_EINVAL, "--name: run name '%s' is already used in %s", m[k].name,
                                     db_path);
                        break;
                    }
                break;
            }
        }
    }
    if (st == LS_OK && !c.one_by_one)
        st = sweep_create(&sw, m[0].a.threads[0], &err);
    if (st != LS_OK) {
        cli_error("sweep", &err, st);
        rc = EXIT_USAGE;
        goto out;
    }

    run_install_signals();
    sweep_watch w = { run_now(), 0, m[0].a.progress };
    ls_err terr = { "" };
    ls_status tst = LS_OK;
    if (c.one_by_one) {
        tst = sweep_one_by_one(m, n_runs, db, prefix, &terr);
    } else {
        for (size_t k = 0; k < n_runs && st == LS_OK; k++) {
            const cli_args *a = &m[k].a;
            /* One thread of its own: the session's pool then runs only its
             * finish, optimiser and evaluation, inline on the sweep's worker
             * that takes them; the sweep's pool does the rest. */
            ls_session_opts so = { .size = sizeof(ls_session_opts),
                                   .threads = 1, .db = db_path, .name = m[k].name, .steps = a->steps,
                                   .checkpoint_every = a->checkpoint_every, .checkpoint_dir = a->checkpoint_dir,
                                   .data = m[k].data, .eval_every = a->eval_every };
            if ((st = ls_session_open(&m[k].s, &a->cfg, &so, &err)) == LS_OK) {
                opened++;
                st = sweep_add(sw, m[k].s, a->eval_every, &err);
            }
        }
        if (st == LS_OK)
            st = sweep_tag(sw, db_path, prefix, &err);
        if (st != LS_OK) {
            cli_error("sweep", &err, st);
            rc = cli_exit_code(st) == EXIT_OK ? EXIT_USAGE : cli_exit_code(st);
            for (size_t k = 0; k < opened; k++)
                ls_session_close(m[k].s, LS_EINTR, NULL);   /* recorded: left resumable */
            for (size_t k = 0; k < n_runs; k++)
                m[k].s = NULL;
            goto out;
        }
        tst = sweep_train(sw, &run_interrupted, on_round, &w, &terr);
        for (size_t k = 0; k < n_runs; k++) {
            m[k].rs = sweep_run_status(sw, k, &m[k].re);
            ls_session_state_get(m[k].s, &m[k].ss);
            size_t n_met;
            const ls_metric *met = sweep_run_metrics(sw, k, &n_met);
            m[k].n_met = n_met;
            if (n_met > 0)
                memcpy(m[k].met, met, n_met * sizeof *met);
            ls_err ce = { "" };
            ls_status cs = ls_session_close(m[k].s, m[k].rs, &ce);
            m[k].s = NULL;
            if (m[k].rs == LS_OK && cs != LS_OK) {
                m[k].rs = cs;
                m[k].re = ce;
            }
        }
    }
    if (w.on && tst != LS_OK)
        fputs("\r\033[K", stderr);
    double secs = run_now() - w.t0;

    printf("%-40s %-6s %-12s %-8s %-12s %-28s %s\n", "name", "run", "status", "steps", "final loss", "evaluation",
           "trajectory");
    size_t n_done = 0, n_failed = 0;
    ls_status worst = LS_OK;
    for (size_t k = 0; k < n_runs; k++) {
        const sweep_member *r = &m[k];
        char figures[256] = "-";
        size_t at = 0;
        for (size_t i = 0; i < r->n_met && at < sizeof figures; i++) {
            int wr = snprintf(figures + at, sizeof figures - at, "%s%s %.4f", i ? ", " : "", r->met[i].name,
                              r->met[i].value);
            at += wr > 0 ? (size_t)wr : 0;
        }
        if (r->ss.run_id < 0) {
            printf("%-40s %-6s %-12s\n", r->name, "-", "not started");
            continue;
        }
        int64_t steps = r->ss.step;
        double loss = r->ss.loss;
        uint64_t traj = r->ss.traj_hash;
        char status[16];
        snprintf(status, sizeof status, "%s", status_word(r->rs));
        if (r->rs != LS_OK)
            sweep_held(db, r->ss.run_id, &steps, &loss, &traj, status, sizeof status);
        printf("%-40s %-6lld %-12s %-8lld %-12.6f %-28s %016llx\n", r->name, (long long)r->ss.run_id, status,
               (long long)steps, loss, figures, (unsigned long long)traj);
        n_done += strcmp(status, "done") == 0;
        n_failed += strcmp(status, "failed") == 0 || strcmp(status, "diverged") == 0;
        if (r->rs != LS_OK && r->rs != LS_EINTR) {
            char fate[256];
            cli_run_fate(db_path, r->ss.run_id, fate, sizeof fate);
            fprintf(stderr, "lockstep sweep: %s: %s; %s\n", r->name, r->re.msg[0] ? r->re.msg : ls_strerror(r->rs),
                    fate);
            if (worst == LS_OK || (worst == LS_EDIVERGED && r->rs != LS_EDIVERGED))
                worst = r->rs;
        }
    }
    /* Counted from the record's statuses (sweep_held), so the line agrees with `lockstep runs`. */
    printf("sweep %s: %zu runs, %zu done, %zu failed, %zu interrupted, %.2f s on %d threads%s\n", prefix, n_runs,
           n_done, n_failed, n_runs - n_done - n_failed, secs, m[0].a.threads[0],
           c.one_by_one ? " (one run after another)" : "");
    if (tst == LS_EINTR) {
        fprintf(stderr, "lockstep sweep: %s; `lockstep resume RUN` continues each\n", terr.msg);
        rc = EXIT_INTERRUPTED;
    } else if (tst != LS_OK) {
        cli_error("sweep", &terr, tst);
        rc = cli_exit_code(tst);
    } else if (worst != LS_OK) {
        rc = cli_exit_code(worst);
    }
out:
    sweep_destroy(sw);
    for (size_t k = 0; k < n_runs; k++)
        if (m[k].s != NULL)
            ls_session_close(m[k].s, LS_EINTR, NULL);
    /* Only then the data: runs share one data set per task. */
    for (size_t k = 0; k < n_runs; k++)
        if (m[k].own_data)
            dataset_destroy(m[k].data);
    free(m);
    runlog_close(db);
    sweep_cmd_free(&c);
    return rc;
}

/* ---- lockstep runs --sweep ID --------------------------------------------------------------- */

typedef struct {
    runlog_run run;
    int has_loss;
    double loss;
    int64_t eval_step;
    char figures[256];
    char first[32];             /* the first figure's name at the last evaluation */
    double key;                 /* its value */
} sweep_row;

static const char *sort_metric;  /* set while sorting: the figure all rows share, or NULL */

static int sweep_row_cmp(const void *pa, const void *pb)
{
    const sweep_row *a = pa, *b = pb;
    if (sort_metric != NULL) {
        int ha = strcmp(a->first, sort_metric) == 0, hb = strcmp(b->first, sort_metric) == 0;
        if (ha != hb)
            return hb - ha;
        if (ha && a->key != b->key)
            return a->key > b->key ? -1 : 1;   /* accuracies: higher first */
    }
    if (a->has_loss != b->has_loss)
        return b->has_loss - a->has_loss;
    if (a->has_loss && a->loss != b->loss)
        return a->loss < b->loss ? -1 : 1;
    return (a->run.id > b->run.id) - (a->run.id < b->run.id);
}

int cli_sweep_runs(runlog *db, const char *db_path, const char *sweep_id)
{
    ls_err err = { "" };
    runlog_run *runs;
    size_t n;
    ls_status st = runlog_list(db, &runs, &n, &err);
    if (st != LS_OK) {
        cli_error("runs", &err, st);
        return EXIT_USAGE;
    }
    sweep_row *rows = calloc(n ? n : 1, sizeof *rows);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        char v[160];
        if (rows == NULL || !runlog_setting_get(db, runs[i].id, "sweep", v, sizeof v) || strcmp(v, sweep_id) != 0) {
            runlog_run_free(&runs[i]);
            continue;
        }
        sweep_row *r = &rows[m++];
        r->run = runs[i];
        snprintf(r->figures, sizeof r->figures, "-");
        ls_step *steps;
        size_t ns;
        if (runlog_read_steps(db, r->run.id, &steps, &ns, &err) == LS_OK) {
            if (ns > 0 && steps[ns - 1].has_loss) {
                r->has_loss = 1;
                r->loss = hash_bits_to_double(steps[ns - 1].loss_bits);
            }
            free(steps);
        }
        runlog_evalrow *ev;
        size_t ne;
        if (runlog_read_evals(db, r->run.id, &ev, &ne, &err) == LS_OK) {
            if (ne > 0) {
                int64_t last = ev[ne - 1].step;
                size_t at = 0, first = ne;
                for (size_t k = 0; k < ne; k++)
                    if (ev[k].step == last) {
                        if (first == ne)
                            first = k;
                        int w = snprintf(r->figures + at, sizeof r->figures - at, "%s%s %.4f", at ? ", " : "",
                                         ev[k].name, ev[k].value);
                        if (w > 0 && (size_t)w < sizeof r->figures - at)
                            at += (size_t)w;
                    }
                snprintf(r->first, sizeof r->first, "%s", ev[first].name);
                r->key = ev[first].value;
                r->eval_step = last;
            }
            free(ev);
        }
    }
    free(runs);
    if (m == 0) {
        fprintf(stderr, "lockstep runs: --sweep: no runs of sweep '%s' in %s\n", sweep_id, db_path);
        free(rows);
        return EXIT_USAGE;
    }
    /* Best first: by the evaluation every run has (accuracy, higher first),
     * else by the final loss. */
    sort_metric = rows[0].first[0] ? rows[0].first : NULL;
    for (size_t i = 1; i < m && sort_metric != NULL; i++)
        if (strcmp(rows[i].first, sort_metric) != 0)
            sort_metric = NULL;
    qsort(rows, m, sizeof *rows, sweep_row_cmp);
    sort_metric = NULL;
    printf("%-5s %-40s %-12s %-6s %-14s %-8s %-12s %-28s %s\n", "id", "name", "status", "model", "task", "steps",
           "final loss", "evaluation", "trajectory");
    for (size_t i = 0; i < m; i++) {
        char loss[32] = "-";
        if (rows[i].has_loss)
            snprintf(loss, sizeof loss, "%.6f", rows[i].loss);
        char name[RUNLOG_NAME_BYTES * 4];
        printf("%-5lld %-40s %-12s %-6s %-14s %-8lld %-12s %-28s %016llx\n", (long long)rows[i].run.id,
               esc_str(name, sizeof name, rows[i].run.name), rows[i].run.status, rows[i].run.model, rows[i].run.task,
               (long long)rows[i].run.n_steps, loss, rows[i].figures, (unsigned long long)rows[i].run.last_traj_hash);
        runlog_run_free(&rows[i].run);
    }
    free(rows);
    return EXIT_OK;
}
