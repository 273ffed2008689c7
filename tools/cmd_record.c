/* cmd_record.c — `lockstep runs`, `lockstep show`, `lockstep verify`. */
#include "tools/tools.h"
#include "tools/commands.h"

#include "tools/compare.h"
#include "tools/escape.h"
#include "tools/runref.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Readers never create a database: a mistyped path is an error, not an empty record. */
static int open_or_fail(const char *cmd, const char *path, runlog **db)
{
    ls_err err = { "" };
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "lockstep %s: %s: no such database\n", cmd, path);
        return 0;
    }
    ls_status st = cli_open_db(path, db, &err);
    if (st != LS_OK) {
        cli_error(cmd, &err, st);
        return 0;
    }
    return 1;
}

/* ---- output for scripts ------------------------------------------------------
 * Column names of `runs --json/--csv`, `show --json` and `show --steps
 * --csv` are documented in docs/formats.md and kept stable: new ones may be
 * added, none renamed or removed. Hashes are 16 lowercase hex digits, times
 * UTC ISO 8601 as stored. Every string goes through tools/escape.h, so the
 * output is valid UTF-8 JSON or RFC 4180 CSV whatever an older record holds. */

/* A double as JSON: shortest round-trip digits, null when not finite. */
static void json_num(FILE *f, double v)
{
    if (v != v || v - v != 0)
        fputs("null", f);
    else
        cli_shortest_double(f, v);
}

static void csv_num(FILE *f, double v)
{
    if (v == v && v - v == 0)   /* empty: not a number */
        cli_shortest_double(f, v);
}

/* The thread count of every process that worked on run r, in order, joined
 * by sep ("1,2"); the run's own count when no process is recorded. */
static void thread_list(runlog *db, const runlog_run *r, const char *sep, char *buf, size_t cap)
{
    ls_err err = { "" };
    snprintf(buf, cap, "%d", r->threads);
    runlog_process *pr = NULL;
    size_t n_pr = 0;
    if (runlog_processes(db, r->id, &pr, &n_pr, &err) != LS_OK || n_pr == 0)
        return;
    size_t at = 0;
    for (size_t k = 0; k < n_pr && at < cap; k++) {
        int w = snprintf(buf + at, cap - at, "%s%d", k ? sep : "", pr[k].threads);
        at += w > 0 ? (size_t)w : 0;
    }
    free(pr);
}

typedef struct {
    const char *want_status, *want_task, *want_name, *sweep_id;
    int64_t last;
    int json, csv, steps;
} list_flags;

/* The flags of runs and show (show's --steps is a switch, not a count). */
static ls_status list_flag(void *ctx, const flag_spec *f, const char *v, ls_err *err)
{
    list_flags *lf = ctx;
    if (strcmp(f->name, "--json") == 0) {
        lf->json = 1;
    } else if (strcmp(f->name, "--csv") == 0) {
        lf->csv = 1;
    } else if (strcmp(f->name, "--steps") == 0) {
        lf->steps = 1;
    } else if (strcmp(f->name, "--status") == 0) {
        static const char *const ok[] = { "running", "done", "interrupted", "diverged", "failed" };
        int known = 0;
        for (size_t k = 0; k < 5; k++)
            known |= strcmp(v, ok[k]) == 0;
        if (!known)
            return ls_fail(err, LS_EINVAL, "--status: '%.40s' is not running, done, interrupted, diverged or "
                           "failed", v);
        lf->want_status = v;
    } else if (strcmp(f->name, "--sweep") == 0) {
        lf->sweep_id = v;   /* one sweep's runs (cmd_sweep.c) */
    } else if (strcmp(f->name, "--task") == 0) {
        lf->want_task = v;
    } else if (strcmp(f->name, "--name") == 0) {
        lf->want_name = v;
    } else if (strcmp(f->name, "--last") == 0) {
        int64_t x;
        ls_status st = flags_int("--last", v, 1, INT64_MAX, &x, err);
        if (st != LS_OK)
            return st;
        lf->last = x;
    }
    return LS_OK;
}

int cmd_runs(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    list_flags lf;
    memset(&lf, 0, sizeof lf);
    ls_status st = cli_parse_cmd("runs", argc, argv, CLI_DB, 0, list_flag, &lf, &a, &err);
    const char *want_status = lf.want_status, *want_task = lf.want_task, *want_name = lf.want_name;
    const char *sweep_id = lf.sweep_id;
    const int64_t last = lf.last;
    const int json = lf.json, csv = lf.csv;
    if (st == LS_OK && json && csv)
        st = ls_fail(&err, LS_EINVAL, "--json and --csv: one output format at a time");
    if (st != LS_OK) {
        cli_error("runs", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        command_usage(command_find("runs"), stdout);
        return EXIT_OK;
    }
    runlog *db;
    if (!open_or_fail("runs", a.db, &db))
        return EXIT_USAGE;
    if (sweep_id != NULL) {
        int rc = cli_sweep_runs(db, a.db, sweep_id);
        runlog_close(db);
        return rc;
    }
    runlog_run *runs;
    size_t n;
    if ((st = runlog_list(db, &runs, &n, &err)) != LS_OK) {
        cli_error("runs", &err, st);
        runlog_close(db);
        return EXIT_USAGE;
    }
    /* The filters, then the newest `last` of what passes. */
    char *keep = calloc(n + 1, 1);
    size_t n_keep = 0;
    for (size_t i = 0; keep != NULL && i < n; i++) {
        keep[i] = (want_status == NULL || strcmp(runs[i].status, want_status) == 0) &&
                  (want_task == NULL || strcmp(runs[i].task, want_task) == 0) &&
                  (want_name == NULL || fnmatch(want_name, runs[i].name, 0) == 0);
        n_keep += (size_t)keep[i];
    }
    for (size_t i = 0; keep != NULL && i < n && last > 0 && n_keep > (size_t)last; i++)
        if (keep[i]) {
            keep[i] = 0;
            n_keep--;
        }
    if (json)
        printf("[");
    else if (csv)
        printf("id,name,status,model,task,steps,threads,trajectory,config_hash,started,ended,host\n");
    else
        printf("%-5s %-24s %-12s %-6s %-14s %-8s %-7s %-18s %s\n", "id", "name", "status", "model", "task", "steps",
               "threads", "trajectory", "started");
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        if (keep == NULL || !keep[i]) {
            runlog_run_free(&runs[i]);
            continue;
        }
        /* The thread count of every process that worked on the run, in order. */
        char threads[64];
        thread_list(db, &runs[i], ",", threads, sizeof threads);
        const runlog_run *r = &runs[i];
        char traj[24], ch[24];
        snprintf(traj, sizeof traj, "%016llx", (unsigned long long)r->last_traj_hash);
        snprintf(ch, sizeof ch, "%016llx", (unsigned long long)r->config_hash);
        if (json) {
            printf("%s\n  {\"id\": %lld, \"name\": ", shown ? "," : "", (long long)r->id);
            esc_json(stdout, r->name);
            printf(", \"status\": ");
            esc_json(stdout, r->status);
            printf(", \"model\": ");
            esc_json(stdout, r->model);
            printf(", \"task\": ");
            esc_json(stdout, r->task);
            char tl[64];
            thread_list(db, r, ", ", tl, sizeof tl);
            printf(", \"steps\": %lld, \"threads\": [%s], \"trajectory\": \"%s\", \"config_hash\": \"%s\", "
                   "\"started\": ", (long long)r->n_steps, tl, traj, ch);
            esc_json(stdout, r->started);
            printf(", \"ended\": ");
            if (r->ended[0])
                esc_json(stdout, r->ended);
            else
                printf("null");
            printf(", \"host\": ");
            esc_json(stdout, r->host);
            printf("}");
        } else if (csv) {
            printf("%lld,", (long long)r->id);
            esc_csv(stdout, r->name);
            printf(",%s,", r->status);
            esc_csv(stdout, r->model);
            putchar(',');
            esc_csv(stdout, r->task);
            printf(",%lld,\"%s\",%s,%s,%s,%s,", (long long)r->n_steps, threads, traj, ch, r->started, r->ended);
            esc_csv(stdout, r->host);
            putchar('\n');
        } else {
            char name[RUNLOG_NAME_BYTES * 4], model[128], task[128];
            printf("%-5lld %-24s %-12s %-6s %-14s %-8lld %-7s %s %s\n", (long long)r->id,
                   esc_str(name, sizeof name, r->name), r->status, esc_str(model, sizeof model, r->model),
                   esc_str(task, sizeof task, r->task), (long long)r->n_steps, threads, traj, r->started);
        }
        shown++;
        runlog_run_free(&runs[i]);
    }
    if (json)
        printf("%s]\n", shown ? "\n" : "");
    free(keep);
    free(runs);
    runlog_close(db);
    return EXIT_OK;
}

/* show --steps --csv: the step table alone. */
static ls_status show_csv(runlog *db, int64_t id, ls_err *err)
{
    ls_step *steps;
    size_t n;
    ls_status st = runlog_read_steps(db, id, &steps, &n, err);
    if (st != LS_OK)
        return st;
    printf("step,loss,loss_bits,param_hash,trajectory,seconds\n");
    for (size_t i = 0; i < n; i++) {
        printf("%lld,", (long long)steps[i].step);
        if (steps[i].has_loss) {
            csv_num(stdout, hash_bits_to_double(steps[i].loss_bits));
            printf(",%016llx", (unsigned long long)steps[i].loss_bits);
        } else {
            printf(",");
        }
        printf(",%016llx,%016llx,", (unsigned long long)steps[i].param_hash, (unsigned long long)steps[i].traj_hash);
        if (steps[i].has_loss)
            csv_num(stdout, steps[i].seconds);
        printf("\n");
    }
    free(steps);
    return LS_OK;
}

static void json_key_str(const char *key, const char *v, int null_if_empty)
{
    printf(",\n  \"%s\": ", key);
    if (null_if_empty && (v == NULL || v[0] == '\0'))
        printf("null");
    else
        esc_json(stdout, v);
}

/* show --json: one object. */
static ls_status show_json(runlog *db, const runlog_run *run, int with_steps, ls_err *err)
{
    char threads[64];
    thread_list(db, run, ", ", threads, sizeof threads);
    printf("{\n  \"id\": %lld", (long long)run->id);
    json_key_str("name", run->name, 0);
    json_key_str("status", run->status, 0);
    json_key_str("model", run->model, 0);
    json_key_str("task", run->task, 0);
    json_key_str("started", run->started, 0);
    json_key_str("ended", run->ended, 1);
    printf(",\n  \"steps\": %lld,\n  \"target_steps\": %lld,\n  \"trajectory\": \"%016llx\",\n"
           "  \"config_hash\": \"%016llx\",\n  \"threads\": [%s],\n  \"checkpoint_every\": %lld",
           (long long)run->n_steps, (long long)run->target_steps, (unsigned long long)run->last_traj_hash,
           (unsigned long long)run->config_hash, threads, (long long)run->checkpoint_every);
    json_key_str("engine", run->engine_version, 0);
    json_key_str("compiler", run->compiler, 0);
    json_key_str("cflags", run->cflags, 0);
    json_key_str("host", run->host, 0);
    json_key_str("cpu", run->cpu, 0);
    json_key_str("git", run->git_commit, 1);
    json_key_str("reduce", run->reduce, 0);
    json_key_str("config", run->config_text, 0);
    json_key_str("sources", run->source_text, 1);
    json_key_str("framework", run->framework, 1);   /* null for lockstep's own runs */
    ls_status st = LS_OK;
    runlog_process *pr;
    size_t n_pr;
    printf(",\n  \"processes\": [");
    if ((st = runlog_processes(db, run->id, &pr, &n_pr, err)) == LS_OK) {
        for (size_t k = 0; k < n_pr; k++) {
            printf("%s\n    {\"started\": ", k ? "," : "");
            esc_json(stdout, pr[k].started);
            printf(", \"ended\": ");
            if (pr[k].ended[0])
                esc_json(stdout, pr[k].ended);
            else
                printf("null");
            printf(", \"host\": ");
            esc_json(stdout, pr[k].host);
            printf(", \"pid\": %lld, \"threads\": %d, \"first_step\": %lld, \"last_step\": ", (long long)pr[k].pid,
                   pr[k].threads, (long long)pr[k].first_step);
            if (pr[k].last_step >= 0)
                printf("%lld", (long long)pr[k].last_step);
            else
                printf("null");
            printf(", \"build\": ");
            esc_json(stdout, pr[k].build);
            printf("}");
        }
        if (n_pr > 0)
            free(pr);
    }
    printf("%s],\n  \"evaluations\": [", n_pr ? "\n  " : "");
    runlog_evalrow *ev;
    size_t n_ev = 0;
    if (st == LS_OK && (st = runlog_read_evals(db, run->id, &ev, &n_ev, err)) == LS_OK) {
        for (size_t i = 0; i < n_ev; i++) {
            printf("%s\n    {\"step\": %lld, \"name\": ", i ? "," : "", (long long)ev[i].step);
            esc_json(stdout, ev[i].name);
            printf(", \"value\": ");
            json_num(stdout, ev[i].value);
            printf("}");
        }
        free(ev);
    }
    printf("%s],\n  \"audits\": [", n_ev ? "\n  " : "");
    runlog_audit *au;
    size_t n_au = 0;
    if (st == LS_OK && (st = runlog_audits(db, run->id, &au, &n_au, err)) == LS_OK) {
        for (size_t i = 0; i < n_au; i++) {
            printf("%s\n    {\"created\": ", i ? "," : "");
            esc_json(stdout, au[i].created);
            printf(", \"mode\": ");
            esc_json(stdout, au[i].mode);
            printf(", \"verdict\": \"%s\", \"steps\": %lld, \"first_bad_step\": ", au[i].proved ? "proved" : "failed",
                   (long long)au[i].steps);
            if (au[i].first_bad >= 0)
                printf("%lld", (long long)au[i].first_bad);
            else
                printf("null");
            printf(", \"version\": ");
            esc_json(stdout, au[i].version);
            printf(", \"build\": ");
            esc_json(stdout, au[i].build);
            printf(", \"host\": ");
            esc_json(stdout, au[i].host);
            if (au[i].threads > 0)
                printf(", \"threads\": %d, \"detail\": ", au[i].threads);
            else
                printf(", \"threads\": null, \"detail\": ");   /* record-only: nothing re-executed */
            esc_json(stdout, au[i].detail);
            printf("}");
        }
        free(au);
    }
    printf("%s]", n_au ? "\n  " : "");
    if (st == LS_OK && with_steps) {
        ls_step *steps;
        size_t n;
        if ((st = runlog_read_steps(db, run->id, &steps, &n, err)) == LS_OK) {
            printf(",\n  \"step_rows\": [");
            for (size_t i = 0; i < n; i++) {
                printf("%s\n    {\"step\": %lld, \"loss\": ", i ? "," : "", (long long)steps[i].step);
                if (steps[i].has_loss) {
                    json_num(stdout, hash_bits_to_double(steps[i].loss_bits));
                    printf(", \"loss_bits\": \"%016llx\"", (unsigned long long)steps[i].loss_bits);
                } else {
                    printf("null, \"loss_bits\": null");
                }
                printf(", \"param_hash\": \"%016llx\", \"trajectory\": \"%016llx\", \"seconds\": ",
                       (unsigned long long)steps[i].param_hash, (unsigned long long)steps[i].traj_hash);
                json_num(stdout, steps[i].seconds);
                printf("}");
            }
            printf("%s]", n ? "\n  " : "");
            free(steps);
        }
    }
    printf("\n}\n");
    return st;
}

int cmd_show(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    list_flags lf;
    memset(&lf, 0, sizeof lf);
    ls_status st = cli_parse_cmd("show", argc, argv, CLI_DB, 1, list_flag, &lf, &a, &err);
    const int show_steps = lf.steps, json = lf.json, csv = lf.csv;
    if (st == LS_OK && !a.help && a.n_positional != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st == LS_OK && json && csv)
        st = ls_fail(&err, LS_EINVAL, "--json and --csv: one output format at a time");
    if (st == LS_OK && csv && !show_steps)
        st = ls_fail(&err, LS_EINVAL, "--csv: only with --steps (the step table)");
    if (st != LS_OK) {
        cli_error("show", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        command_usage(command_find("show"), stdout);
        return EXIT_OK;
    }
    runlog *db;
    if (!open_or_fail("show", a.db, &db))
        return EXIT_USAGE;
    int64_t id;
    runlog_run run;
    if ((st = runlog_find(db, a.positional[0], &id, &err)) != LS_OK ||
        (st = runlog_get_run(db, id, &run, &err)) != LS_OK) {
        cli_error("show", &err, st);
        runlog_close(db);
        return EXIT_USAGE;
    }
    if (json || csv) {
        st = csv ? show_csv(db, id, &err) : show_json(db, &run, show_steps, &err);
        if (st != LS_OK)
            cli_error("show", &err, st);
        runlog_run_free(&run);
        runlog_close(db);
        return st == LS_OK ? EXIT_OK : EXIT_USAGE;
    }
    char name[RUNLOG_NAME_BYTES * 4];
    printf("run %lld '%s': %s\n", (long long)run.id, esc_str(name, sizeof name, run.name), run.status);
    printf("  started %s, ended %s\n", run.started, run.ended[0] ? run.ended : "-");
    printf("  steps %lld, trajectory %016llx, config hash %016llx\n", (long long)run.n_steps,
           (unsigned long long)run.last_traj_hash, (unsigned long long)run.config_hash);
    char host[512], cpu[512];
    if (run.external) {
        /* Trained elsewhere: no engine, threads or build of lockstep's. */
        char fw[512];
        runlog_tensor *tt = NULL;
        size_t nt = 0;
        if (runlog_tensors(db, id, &tt, &nt, &err) != LS_OK)
            nt = 0;
        free(tt);
        printf("  external run: recorded by %s through %s, %zu tensors hashed per step\n",
               esc_str(fw, sizeof fw, run.framework), run.engine_version, nt);
    } else {
        printf("  engine %s, threads %d, reduce %s\n", run.engine_version, run.threads, run.reduce);
        printf("  compiler %s\n  flags %s\n  host %s, cpu %s, git %s\n", run.compiler, run.cflags,
               esc_str(host, sizeof host, run.host), esc_str(cpu, sizeof cpu, run.cpu),
               run.git_commit[0] ? run.git_commit : "-");
    }
    runlog_process *pr;
    size_t n_pr;
    if (runlog_processes(db, id, &pr, &n_pr, &err) == LS_OK && n_pr > 0) {
        printf("processes:\n");
        for (size_t k = 0; k < n_pr; k++) {
            char steps[64];
            if (pr[k].last_step >= 0)
                snprintf(steps, sizeof steps, "steps %lld..%lld", (long long)pr[k].first_step + 1,
                         (long long)pr[k].last_step);
            else
                snprintf(steps, sizeof steps, "from step %lld, did not end", (long long)pr[k].first_step + 1);
            printf("  %s  %s, host %s, pid %lld, threads %d\n    %s\n", pr[k].started, steps, pr[k].host,
                   (long long)pr[k].pid, pr[k].threads, pr[k].build);
            char key[48], mpi[1024];   /* recorded by build/lockstep-mpi (tools/mpi_main.c) */
            snprintf(key, sizeof key, "mpi@%lld", (long long)pr[k].first_step);
            if (runlog_setting_get(db, id, key, mpi, sizeof mpi))
                printf("    mpi: %s\n", mpi);
        }
        free(pr);
    }
    if (run.source_text != NULL && run.source_text[0]) {
        printf("data:\n");
        for (const char *p = run.source_text; *p;) {
            size_t l = strcspn(p, "\n");
            char *line = strndup(p, l);   /* one line of paths: printed escaped */
            fputs("  ", stdout);
            esc_text(stdout, line != NULL ? line : "?");
            fputs("\n", stdout);
            free(line);
            p += l + (p[l] == '\n');
        }
    }
    printf("config:\n");
    for (const char *p = run.config_text; *p;) {
        size_t l = strcspn(p, "\n");
        /* Floats are written in %a form: their decimal, shortest round-trip, beside it. */
        const char *eq = memchr(p, '=', l);
        char dec[64] = "";
        if (eq != NULL && eq + 3 < p + l && eq[1] == '0' && eq[2] == 'x') {
            char hex[64];
            size_t hl = (size_t)(p + l - eq - 1);
            if (hl < sizeof hex) {
                memcpy(hex, eq + 1, hl);
                hex[hl] = '\0';
                const float f = strtof(hex, NULL);
                for (int prec = 1; prec <= 9; prec++) {
                    snprintf(dec, sizeof dec, "  (%.*g)", prec, (double)f);
                    if (strtof(dec + 3, NULL) == f)
                        break;
                }
            }
        } else if (l > 10 && strncmp(p, "data_hash=", 10) == 0) {
            /* Decimal in the config text (its hash is frozen), hex in every output: both here. */
            snprintf(dec, sizeof dec, "  (%016llx)", strtoull(p + 10, NULL, 10));
        } else if (l > 10 && strncmp(p, "init_hash=", 10) == 0) {
            snprintf(dec, sizeof dec, "  (%016llx)", strtoull(p + 10, NULL, 10));   /* as data_hash */
        }
        printf("  %.*s%s\n", (int)l, p, dec);
        p += l + (p[l] == '\n');
    }
    runlog_evalrow *ev;
    size_t n_ev;
    if (runlog_read_evals(db, id, &ev, &n_ev, &err) == LS_OK) {
        if (n_ev > 0)
            printf("evaluations:\n");
        for (size_t i = 0; i < n_ev; i++)
            printf("  step %-8lld %-12s %.6f\n", (long long)ev[i].step, ev[i].name, ev[i].value);
        free(ev);
    }
    runlog_audit *au;
    size_t n_au;
    if (runlog_audits(db, id, &au, &n_au, &err) == LS_OK) {
        if (n_au > 0)
            printf("audits:\n");
        for (size_t i = 0; i < n_au; i++) {
            char bad[48] = "", thr[32] = "";
            if (au[i].first_bad >= 0)
                snprintf(bad, sizeof bad, " at step %lld", (long long)au[i].first_bad);
            if (au[i].threads > 0)   /* a record-only audit has none */
                snprintf(thr, sizeof thr, ", threads %d", au[i].threads);
            printf("  %s  %s %s%s, steps 0..%lld, %s, host %s%s\n    %s\n", au[i].created,
                   au[i].proved ? "proved" : "failed", au[i].mode, bad, (long long)au[i].steps, au[i].version,
                   au[i].host, thr, au[i].detail);
            if (au[i].build[0])
                printf("    build %s\n", au[i].build);
        }
        free(au);
    }
    if (show_steps) {
        ls_step *steps;
        size_t n;
        if ((st = runlog_read_steps(db, id, &steps, &n, &err)) != LS_OK) {
            cli_error("show", &err, st);
        } else {
            printf("%-8s %-18s %-24s %-18s %-18s %s\n", "step", "loss bits", "loss", "param hash", "trajectory",
                   "seconds");
            for (size_t i = 0; i < n; i++) {
                if (steps[i].has_loss)
                    printf("%-8lld %016llx %-24.17g %016llx %016llx %.6f\n", (long long)steps[i].step,
                           (unsigned long long)steps[i].loss_bits, hash_bits_to_double(steps[i].loss_bits),
                           (unsigned long long)steps[i].param_hash, (unsigned long long)steps[i].traj_hash,
                           steps[i].seconds);
                else
                    printf("%-8lld %-18s %-24s %016llx %016llx\n", (long long)steps[i].step, "-", "-",
                           (unsigned long long)steps[i].param_hash, (unsigned long long)steps[i].traj_hash);
            }
            free(steps);
        }
    }
    runlog_run_free(&run);
    runlog_close(db);
    return st == LS_OK ? EXIT_OK : EXIT_USAGE;
}

int verify_runs(runlog *db, int64_t a, int64_t b, const char *kind, int quiet)
{
    return verify_runs_tol(db, a, b, kind, quiet, NULL);
}

int verify_runs_tol(runlog *db, int64_t a, int64_t b, const char *kind, int quiet, const compare_tol *tol)
{
    const char *cmd = strncmp(kind, "equiv", 5) == 0 ? "equiv" : "verify";
    ls_err err = { "" };
    runlog_run ra, rb;
    ls_step *sa = NULL, *sb = NULL;
    size_t na = 0, nb = 0;
    if (runlog_get_run(db, a, &ra, &err) != LS_OK) {
        fprintf(stderr, "lockstep %s: %s\n", cmd, err.msg);
        return 2;
    }
    if (runlog_get_run(db, b, &rb, &err) != LS_OK) {
        fprintf(stderr, "lockstep %s: %s\n", cmd, err.msg);
        runlog_run_free(&ra);
        return 2;
    }
    int64_t first = -1;
    int rc = 2;
    if (runlog_read_steps(db, a, &sa, &na, &err) != LS_OK || runlog_read_steps(db, b, &sb, &nb, &err) != LS_OK
        || runlog_first_divergence(db, a, b, &first, &err) != LS_OK) {
        fprintf(stderr, "lockstep %s: %s\n", cmd, err.msg);
        goto out;
    }
    /* The steps both runs have (rows come in step order). Equality is a
     * claim about them, so runs with none in common are not equal: there is
     * nothing to compare, and no verdict is stored. */
    compare_result cr;
    compare_span(sa, na, sb, nb, &cr);
    if (cr.common == 0) {
        rc = 1;
        if (na == 0 && nb == 0)
            fprintf(stderr, "lockstep %s: runs %lld and %lld have no step rows: nothing to compare, so not equal\n",
                    cmd, (long long)a, (long long)b);
        else if (na == 0 || nb == 0)
            fprintf(stderr, "lockstep %s: run %lld has no step rows: nothing to compare with run %lld, so not "
                    "equal\n", cmd, (long long)(na == 0 ? a : b), (long long)(na == 0 ? b : a));
        else
            fprintf(stderr, "lockstep %s: runs %lld (steps %lld..%lld) and %lld (steps %lld..%lld) have no step in "
                    "common: nothing to compare, so not equal\n", cmd, (long long)a, (long long)sa[0].step,
                    (long long)sa[na - 1].step, (long long)b, (long long)sb[0].step, (long long)sb[nb - 1].step);
        goto out;
    }
    if (!quiet && strcmp(ra.config_text, rb.config_text) != 0) {
        char keys[512];
        char la[24], lb[24];
        snprintf(la, sizeof la, "%lld", (long long)a);
        snprintf(lb, sizeof lb, "%lld", (long long)b);
        compare_config_diff(ra.config_text, rb.config_text, la, lb, keys, sizeof keys);
        printf("warning: runs %lld and %lld have different configs: %s\n", (long long)a, (long long)b, keys);
    }
    if (!quiet && (na != nb || na != cr.common))
        printf("note: run %lld has %zu step rows, run %lld has %zu; comparing %s\n", (long long)a, na,
               (long long)b, nb, cr.span);
    cr.first = first;   /* the record's own answer (SQL), which the verdict stores */
    if (compare_describe(sa, na, sb, nb, &cr) != 0) {
        fprintf(stderr, "lockstep %s: the record names step %lld as the first difference, which the runs' rows do "
                "not hold\n", cmd, (long long)first);
        goto out;
    }
    const char *detail = cr.detail;
    rc = cr.equal ? 0 : 1;
    if (!quiet && cr.equal) {
        char la[24], lb[24];
        snprintf(la, sizeof la, "%lld", (long long)a);
        snprintf(lb, sizeof lb, "%lld", (long long)b);
        compare_print_equal(stdout, la, lb, &cr, strcmp(ra.config_text, rb.config_text) != 0);
    } else if (!quiet)
        printf("runs %lld and %lld differ first at %s\n", (long long)a, (long long)b, detail);
    /* The first tensor (also into the stored detail) and the tolerance. */
    if (compare_extra(cmd, db, a, sa, na, db, b, sb, nb, &cr, quiet ? NULL : tol) != 0) {
        rc = 2;
        goto out;
    }
    /* A verdict nobody could read is not stored: the printed line is what
     * the command delivers, so a failed stdout fails the command first. */
    if (!quiet && (fflush(stdout) != 0 || ferror(stdout))) {
        fprintf(stderr, "lockstep %s: stdout: write failed: %s; no verdict stored\n", cmd, strerror(errno));
        rc = 2;
        goto out;
    }
    if (runlog_verdict(db, kind, a, b, rc == 0, first, detail, &err) != LS_OK) {
        fprintf(stderr, "lockstep %s: %s\n", cmd, err.msg);
        rc = 2;
    }
out:
    free(sa);
    free(sb);
    runlog_run_free(&ra);
    runlog_run_free(&rb);
    return rc;
}

/* --loss-rtol R, --loss-atol A: finite, 0 or more. */
static ls_status verify_flag(void *ctx, const flag_spec *f, const char *v, ls_err *err)
{
    compare_tol *tol = ctx;
    char *end = NULL;
    double x = strtod(v, &end);
    if (end == v || *end != 0 || !(x >= 0) || x > 1e300)
        return ls_fail(err, LS_EINVAL, "%s: '%.40s' is not a finite number of 0 or more", f->name, v);
    if (strcmp(f->name, "--loss-rtol") == 0)
        tol->rtol = x;
    else
        tol->atol = x;
    tol->on = 1;
    return LS_OK;
}

int cmd_verify(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    compare_tol tol = { 0, 0.0, 0.0 };
    ls_status st = cli_parse_cmd("verify", argc, argv, CLI_DB, 2, verify_flag, &tol, &a, &err);
    if (st == LS_OK && !a.help && a.n_positional != 2)
        st = ls_fail(&err, LS_EINVAL, "needs two runs: lockstep verify RUN_A RUN_B");
    if (st != LS_OK) {
        cli_error("verify", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        command_usage(command_find("verify"), stdout);
        return EXIT_OK;
    }
    runref ra, rb;
    if ((st = runref_parse(a.positional[0], a.db, &ra, &err)) != LS_OK ||
        (st = runref_parse(a.positional[1], a.db, &rb, &err)) != LS_OK) {
        cli_error("verify", &err, st);
        return EXIT_USAGE;
    }
    if (!runref_same_file(ra.db, rb.db) && strcmp(ra.db, rb.db) != 0)
        return compare_verify_across(&ra, &rb, &tol);
    runlog *db;
    if (!open_or_fail("verify", ra.db, &db))
        return EXIT_USAGE;
    int64_t ia, ib;
    if ((st = runlog_find(db, ra.run, &ia, &err)) != LS_OK ||
        (st = runlog_find(db, rb.run, &ib, &err)) != LS_OK) {
        cli_error("verify", &err, st);
        runlog_close(db);
        return EXIT_USAGE;
    }
    int rc = verify_runs_tol(db, ia, ib, "verify", 0, &tol);
    runlog_close(db);
    return rc;
}
