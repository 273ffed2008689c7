/* cmd_record.c — `lockstep runs`, `lockstep show`, `lockstep verify`. */
#include "tools.h"

#include <errno.h>
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

int cmd_runs(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    ls_status st = cli_parse(argc, argv, CLI_DB, 0, &a, &err);
    if (st != LS_OK) {
        cli_error("runs", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        puts("usage: lockstep runs [--db FILE]\nLists the runs in the database, oldest first.");
        return EXIT_OK;
    }
    runlog *db;
    if (!open_or_fail("runs", a.db, &db))
        return EXIT_USAGE;
    runlog_run *runs;
    size_t n;
    if ((st = runlog_list(db, &runs, &n, &err)) != LS_OK) {
        cli_error("runs", &err, st);
        runlog_close(db);
        return EXIT_USAGE;
    }
    printf("%-5s %-24s %-12s %-6s %-14s %-8s %-7s %-18s %s\n", "id", "name", "status", "model", "task", "steps",
           "threads", "trajectory", "started");
    for (size_t i = 0; i < n; i++) {
        /* The thread count of every process that worked on the run, in order. */
        char threads[64];
        snprintf(threads, sizeof threads, "%d", runs[i].threads);
        runlog_process *pr;
        size_t n_pr;
        if (runlog_processes(db, runs[i].id, &pr, &n_pr, &err) == LS_OK && n_pr > 0) {
            size_t at = 0;
            for (size_t k = 0; k < n_pr && at < sizeof threads; k++) {
                int w = snprintf(threads + at, sizeof threads - at, "%s%d", k ? "," : "", pr[k].threads);
                at += w > 0 ? (size_t)w : 0;
            }
        }
        if (n_pr > 0)
            free(pr);
        printf("%-5lld %-24s %-12s %-6s %-14s %-8lld %-7s %016llx %s\n", (long long)runs[i].id, runs[i].name,
               runs[i].status, runs[i].model, runs[i].task, (long long)runs[i].n_steps, threads,
               (unsigned long long)runs[i].last_traj_hash, runs[i].started);
        runlog_run_free(&runs[i]);
    }
    free(runs);
    runlog_close(db);
    return EXIT_OK;
}

int cmd_show(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    int show_steps = 0;
    /* --steps is a switch here, not a count. */
    char *args[64];
    int n_args = 0, ended = 0;
    ls_status st = LS_OK;
    for (int i = 0; i < argc && st == LS_OK; i++) {
        ended |= strcmp(argv[i], "--") == 0;   /* after "--", "--steps" is a run's name */
        if (!ended && strcmp(argv[i], "--steps") == 0)
            show_steps = 1;
        else if (n_args == 64)
            st = ls_fail(&err, LS_EINVAL, "too many arguments");
        else
            args[n_args++] = argv[i];
    }
    if (st == LS_OK)
        st = cli_parse(n_args, args, CLI_DB, 1, &a, &err);
    if (st == LS_OK && !a.help && a.n_positional != 1)
        st = ls_fail(&err, LS_EINVAL, "needs one RUN (an id or a name)");
    if (st != LS_OK) {
        cli_error("show", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        puts("usage: lockstep show RUN [--db FILE] [--steps]\n"
             "Config, environment, summary and evaluations of a run; --steps adds the step table.");
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
    printf("run %lld '%s': %s\n", (long long)run.id, run.name, run.status);
    printf("  started %s, ended %s\n", run.started, run.ended[0] ? run.ended : "-");
    printf("  steps %lld, trajectory %016llx, config hash %016llx\n", (long long)run.n_steps,
           (unsigned long long)run.last_traj_hash, (unsigned long long)run.config_hash);
    printf("  engine %s, threads %d, reduce %s\n", run.engine_version, run.threads, run.reduce);
    printf("  compiler %s\n  flags %s\n  host %s, cpu %s, git %s\n", run.compiler, run.cflags, run.host, run.cpu,
           run.git_commit[0] ? run.git_commit : "-");
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
        }
        free(pr);
    }
    if (run.source_text != NULL && run.source_text[0]) {
        printf("data:\n");
        for (const char *p = run.source_text; *p;) {
            size_t l = strcspn(p, "\n");
            printf("  %.*s\n", (int)l, p);
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
            char bad[48] = "";
            if (au[i].first_bad >= 0)
                snprintf(bad, sizeof bad, " at step %lld", (long long)au[i].first_bad);
            printf("  %s  %s %s%s, steps 0..%lld, %s, host %s, threads %d\n    %s\n", au[i].created,
                   au[i].proved ? "proved" : "failed", au[i].mode, bad, (long long)au[i].steps, au[i].version,
                   au[i].host, au[i].threads, au[i].detail);
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

/* The row of step `step` in rows[n] (in step order), or NULL. */
static const ls_step *find_step(const ls_step *rows, size_t n, int64_t step)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rows[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && rows[lo].step == step ? &rows[lo] : NULL;
}

/* The value of key in a canonical config text ("key=value" lines), or NULL. */
static const char *config_line_value(const char *text, const char *key, size_t *len)
{
    const size_t kl = strlen(key);
    for (const char *p = text; *p;) {
        const size_t l = strcspn(p, "\n");
        if (l > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            *len = l - kl - 1;
            return p + kl + 1;
        }
        p += l + (p[l] == '\n');
    }
    return NULL;
}

/* "lr 0x1.47ae14p-7 vs 0x1.99999ap-5, seed 1 vs 2" for the keys whose
 * values differ or that only one text has. */
static void config_keys_differing(const char *a, const char *b, long long ida, long long idb, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        const char *text = pass ? b : a, *other = pass ? a : b;
        for (const char *p = text; *p && at < cap;) {
            const size_t l = strcspn(p, "\n");
            const char *eq = memchr(p, '=', l);
            if (eq != NULL) {
                char key[64];
                const size_t kl = (size_t)(eq - p) < sizeof key ? (size_t)(eq - p) : sizeof key - 1;
                memcpy(key, p, kl);
                key[kl] = '\0';
                size_t vl, ol;
                const char *v = eq + 1, *o = config_line_value(other, key, &ol);
                vl = l - kl - 1;
                int w = 0;
                if (o == NULL)
                    w = snprintf(out + at, cap - at, "%s%s only in run %lld", at ? ", " : "", key, pass ? idb : ida);
                else if (!pass && (ol != vl || memcmp(o, v, vl) != 0))
                    w = snprintf(out + at, cap - at, "%s%s %.*s vs %.*s", at ? ", " : "", key, (int)vl, v, (int)ol, o);
                at += w > 0 ? (size_t)w : 0;
            }
            p += l + (p[l] == '\n');
        }
    }
}

int verify_runs(runlog *db, int64_t a, int64_t b, const char *kind, int quiet)
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
    size_t common = 0;
    int64_t lo = -1, hi = -1;
    for (size_t i = 0, j = 0; i < na && j < nb;) {
        if (sa[i].step < sb[j].step) {
            i++;
        } else if (sa[i].step > sb[j].step) {
            j++;
        } else {
            if (common++ == 0)
                lo = sa[i].step;
            hi = sa[i].step;
            i++;
            j++;
        }
    }
    if (common == 0) {
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
    char span[96];
    if ((int64_t)common == hi - lo + 1)
        snprintf(span, sizeof span, "steps %lld..%lld", (long long)lo, (long long)hi);
    else
        snprintf(span, sizeof span, "%zu common steps from %lld to %lld", common, (long long)lo, (long long)hi);
    if (!quiet && strcmp(ra.config_text, rb.config_text) != 0) {
        char keys[512];
        config_keys_differing(ra.config_text, rb.config_text, (long long)a, (long long)b, keys, sizeof keys);
        printf("warning: runs %lld and %lld have different configs: %s\n", (long long)a, (long long)b, keys);
    }
    if (!quiet && (na != nb || na != common))
        printf("note: run %lld has %zu step rows, run %lld has %zu; comparing %s\n", (long long)a, na,
               (long long)b, nb, span);
    char detail[512];
    const ls_step *x = first >= 0 ? find_step(sa, na, first) : NULL, *y = first >= 0 ? find_step(sb, nb, first) : NULL;
    if (first >= 0 && (x == NULL || y == NULL)) {
        fprintf(stderr, "lockstep %s: the record names step %lld as the first difference, which the runs' rows do "
                "not hold\n", cmd, (long long)first);
        goto out;
    }
    if (first < 0) {
        rc = 0;
        const ls_step *last = find_step(sa, na, hi);
        snprintf(detail, sizeof detail, "identical over %s", span);
        if (!quiet)
            printf("runs %lld and %lld are bit-identical over %s (trajectory %016llx)\n", (long long)a, (long long)b,
                   span, (unsigned long long)(last != NULL ? last->traj_hash : 0));
    } else {
        rc = 1;
        char losses[256] = "";
        if (x->has_loss && y->has_loss)
            snprintf(losses, sizeof losses, "loss %.17g (%016llx) vs %.17g (%016llx)%s",
                     hash_bits_to_double(x->loss_bits), (unsigned long long)x->loss_bits,
                     hash_bits_to_double(y->loss_bits), (unsigned long long)y->loss_bits,
                     x->loss_bits == y->loss_bits ? " (equal)" : "");
        else
            snprintf(losses, sizeof losses, "no loss at step %lld", (long long)first);
        snprintf(detail, sizeof detail, "step %lld: %s; param hash %016llx vs %016llx", (long long)first, losses,
                 (unsigned long long)x->param_hash, (unsigned long long)y->param_hash);
        if (!quiet)
            printf("runs %lld and %lld differ first at %s\n", (long long)a, (long long)b, detail);
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

int cmd_verify(int argc, char **argv)
{
    cli_args a;
    ls_err err = { "" };
    ls_status st = cli_parse(argc, argv, CLI_DB, 2, &a, &err);
    if (st == LS_OK && !a.help && a.n_positional != 2)
        st = ls_fail(&err, LS_EINVAL, "needs two runs: lockstep verify RUN_A RUN_B");
    if (st != LS_OK) {
        cli_error("verify", &err, st);
        return EXIT_USAGE;
    }
    if (a.help) {
        puts("usage: lockstep verify RUN_A RUN_B [--db FILE]\n"
             "Compares the runs bit for bit: parameter hashes from step 0 and loss bits from step 1, over\n"
             "the steps both have. exit status: 0 equal, 1 differ (naming the first step and the two\n"
             "losses), 2 bad usage or unknown run.");
        return EXIT_OK;
    }
    runlog *db;
    if (!open_or_fail("verify", a.db, &db))
        return EXIT_USAGE;
    int64_t ia, ib;
    if ((st = runlog_find(db, a.positional[0], &ia, &err)) != LS_OK ||
        (st = runlog_find(db, a.positional[1], &ib, &err)) != LS_OK) {
        cli_error("verify", &err, st);
        runlog_close(db);
        return EXIT_USAGE;
    }
    int rc = verify_runs(db, ia, ib, "verify", 0);
    runlog_close(db);
    return rc;
}
