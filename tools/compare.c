/* compare.c — two runs compared bit for bit (compare.h). */
#include "tools/compare.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/tools.h"

const ls_step *compare_find_step(const ls_step *rows, size_t n, int64_t step)
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

void compare_span(const ls_step *a, size_t na, const ls_step *b, size_t nb, compare_result *r)
{
    memset(r, 0, sizeof *r);
    r->lo = r->hi = r->first = -1;
    for (size_t i = 0, j = 0; i < na && j < nb;) {
        if (a[i].step < b[j].step) {
            i++;
        } else if (a[i].step > b[j].step) {
            j++;
        } else {
            if (r->common++ == 0)
                r->lo = a[i].step;
            r->hi = a[i].step;
            i++;
            j++;
        }
    }
    if (r->common == 0)
        return;
    if ((int64_t)r->common == r->hi - r->lo + 1)
        snprintf(r->span, sizeof r->span, "steps %lld..%lld", (long long)r->lo, (long long)r->hi);
    else
        snprintf(r->span, sizeof r->span, "%zu common steps from %lld to %lld", r->common, (long long)r->lo,
                 (long long)r->hi);
    const ls_step *last = compare_find_step(a, na, r->hi), *last_b = compare_find_step(b, nb, r->hi);
    r->last_traj = last != NULL ? last->traj_hash : 0;
    r->last_traj_b = last_b != NULL ? last_b->traj_hash : 0;
}

void compare_print_equal(FILE *f, const char *la, const char *lb, const compare_result *r, int configs_differ)
{
    if (r->last_traj == r->last_traj_b)
        fprintf(f, "runs %s and %s are bit-identical over %s (trajectory %016llx)\n", la, lb, r->span,
                (unsigned long long)r->last_traj);
    else
        fprintf(f, "runs %s and %s are bit-identical over %s (trajectories %016llx and %016llx: the %s differ)\n",
                la, lb, r->span, (unsigned long long)r->last_traj, (unsigned long long)r->last_traj_b,
                configs_differ ? "configs" : "trajectory hashes");
}

int compare_describe(const ls_step *a, size_t na, const ls_step *b, size_t nb, compare_result *r)
{
    if (r->first < 0) {
        r->equal = 1;
        snprintf(r->detail, sizeof r->detail, "identical over %s", r->span);
        return 0;
    }
    r->equal = 0;
    const ls_step *x = compare_find_step(a, na, r->first), *y = compare_find_step(b, nb, r->first);
    if (x == NULL || y == NULL)
        return -1;
    char losses[256];
    if (x->has_loss && y->has_loss)
        snprintf(losses, sizeof losses, "loss %.17g (%016llx) vs %.17g (%016llx)%s",
                 hash_bits_to_double(x->loss_bits), (unsigned long long)x->loss_bits,
                 hash_bits_to_double(y->loss_bits), (unsigned long long)y->loss_bits,
                 x->loss_bits == y->loss_bits ? " (equal)" : "");
    else
        snprintf(losses, sizeof losses, "no loss at step %lld", (long long)r->first);
    snprintf(r->detail, sizeof r->detail, "step %lld: %s; param hash %016llx vs %016llx", (long long)r->first,
             losses, (unsigned long long)x->param_hash, (unsigned long long)y->param_hash);
    return 0;
}

void compare_rows(const ls_step *a, size_t na, const ls_step *b, size_t nb, compare_result *r)
{
    compare_span(a, na, b, nb, r);
    if (r->common == 0)
        return;
    r->first = runlog_divergence_rows(a, na, b, nb);
    compare_describe(a, na, b, nb, r);   /* the rows hold every step the merge names */
}

const char *compare_config_value(const char *text, const char *key, size_t kl, size_t *len)
{
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

void compare_config_diff(const char *a, const char *b, const char *la, const char *lb, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        const char *text = pass ? b : a, *other = pass ? a : b;
        for (const char *p = text; *p && at < cap;) {
            const size_t l = strcspn(p, "\n");
            const char *eq = memchr(p, '=', l);
            if (eq != NULL) {
                const size_t kl = (size_t)(eq - p), vl = l - kl - 1;
                size_t ol;
                const char *o = compare_config_value(other, p, kl, &ol);
                int w = 0;
                if (o == NULL)
                    w = snprintf(out + at, cap - at, "%s%.*s only in run %s", at ? ", " : "", (int)kl, p,
                                 pass ? lb : la);
                else if (!pass && (ol != vl || memcmp(o, eq + 1, vl) != 0))
                    w = snprintf(out + at, cap - at, "%s%.*s %.*s vs %.*s", at ? ", " : "", (int)kl, p, (int)vl,
                                 eq + 1, (int)ol, o);
                at += w > 0 ? (size_t)w : 0;
            }
            p += l + (p[l] == '\n');
        }
    }
}

/* One side: its database opened read-only in effect (nothing is written),
 * the run found, its rows read. "DB:ID" into label. */
typedef struct {
    runlog *db;
    runlog_run run;
    int have_run;
    ls_step *rows;
    size_t n;
    char label[4200];
} side;

static int side_open(const runref *ref, side *s)
{
    ls_err err = { "" };
    if (access(ref->db, F_OK) != 0) {
        fprintf(stderr, "lockstep verify: %s: no such database%s\n", ref->db,
                !ref->explicit_db && strchr(ref->run, ':') != NULL
                    ? " (and no existing file before a ':' of the run argument)" : "");
        return 0;
    }
    int64_t id = -1;
    ls_status st = cli_open_db(ref->db, &s->db, &err);
    if (st == LS_OK)
        st = runlog_find(s->db, ref->run, &id, &err);
    if (st == LS_OK && (st = runlog_get_run(s->db, id, &s->run, &err)) == LS_OK)
        s->have_run = 1;
    if (st == LS_OK)
        st = runlog_read_steps(s->db, id, &s->rows, &s->n, &err);
    if (st != LS_OK) {
        cli_error("verify", &err, st);
        return 0;
    }
    snprintf(s->label, sizeof s->label, "%s:%lld", ref->db, (long long)id);
    return 1;
}

static void side_close(side *s)
{
    free(s->rows);
    if (s->have_run)
        runlog_run_free(&s->run);
    runlog_close(s->db);
}

int compare_extra(const char *cmd, runlog *da, int64_t a, const ls_step *ra, size_t na, runlog *db_b, int64_t b,
                  const ls_step *rb, size_t nb, compare_result *r, const compare_tol *tol)
{
    ls_err err = { "" };
    if (!r->equal && r->first >= 0) {
        const ls_step *x = compare_find_step(ra, na, r->first), *y = compare_find_step(rb, nb, r->first);
        if (x != NULL && y != NULL && x->param_hash != y->param_hash) {
            char name[LS_TENSOR_NAME_MAX + 1];
            ls_status st = runlog_first_tensor_diff2(da, a, db_b, b, r->first, name, sizeof name, &err);
            if (st != LS_OK) {
                cli_error(cmd, &err, st);
                return 2;
            }
            if (name[0]) {
                printf("first differing tensor at step %lld: %s (in name order)\n", (long long)r->first, name);
                size_t dl = strlen(r->detail);
                snprintf(r->detail + dl, sizeof r->detail - dl, "; first tensor %s", name);
            }
        }
    }
    if (tol != NULL && tol->on) {
        int64_t bad = -1;
        double la = 0, lb = 0;
        for (size_t i = 0; i < na && bad < 0; i++) {
            const ls_step *y = compare_find_step(rb, nb, ra[i].step);
            if (y == NULL || !ra[i].has_loss || !y->has_loss)
                continue;
            la = hash_bits_to_double(ra[i].loss_bits);
            lb = hash_bits_to_double(y->loss_bits);
            if (!runlog_loss_within(la, lb, tol->rtol, tol->atol))
                bad = ra[i].step;
        }
        if (bad < 0)
            printf("losses within rtol %g, atol %g at every common step\n", tol->rtol, tol->atol);
        else
            printf("loss leaves rtol %g, atol %g first at step %lld: %.17g vs %.17g\n", tol->rtol, tol->atol,
                   (long long)bad, la, lb);
    }
    return 0;
}

int compare_verify_across(const runref *a, const runref *b, const compare_tol *tol)
{
    side x, y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    int rc = 2;
    if (!side_open(a, &x) || !side_open(b, &y))
        goto out;
    compare_result r;
    compare_rows(x.rows, x.n, y.rows, y.n, &r);
    if (r.common == 0) {
        rc = 1;
        if (x.n == 0 && y.n == 0)
            fprintf(stderr, "lockstep verify: runs %s and %s have no step rows: nothing to compare, so not equal\n",
                    x.label, y.label);
        else if (x.n == 0 || y.n == 0)
            fprintf(stderr, "lockstep verify: run %s has no step rows: nothing to compare with run %s, so not "
                    "equal\n", x.n == 0 ? x.label : y.label, x.n == 0 ? y.label : x.label);
        else
            fprintf(stderr, "lockstep verify: runs %s (steps %lld..%lld) and %s (steps %lld..%lld) have no step "
                    "in common: nothing to compare, so not equal\n", x.label, (long long)x.rows[0].step,
                    (long long)x.rows[x.n - 1].step, y.label, (long long)y.rows[0].step,
                    (long long)y.rows[y.n - 1].step);
        goto out;
    }
    if (strcmp(x.run.config_text, y.run.config_text) != 0) {
        char keys[512];
        compare_config_diff(x.run.config_text, y.run.config_text, x.label, y.label, keys, sizeof keys);
        printf("warning: runs %s and %s have different configs: %s\n", x.label, y.label, keys);
    }
    if (x.n != y.n || x.n != r.common)
        printf("note: run %s has %zu step rows, run %s has %zu; comparing %s\n", x.label, x.n, y.label, y.n, r.span);
    if (r.equal) {
        rc = 0;
        compare_print_equal(stdout, x.label, y.label, &r, strcmp(x.run.config_text, y.run.config_text) != 0);
    } else {
        rc = 1;
        printf("runs %s and %s differ first at %s\n", x.label, y.label, r.detail);
    }
    if (compare_extra("verify", x.db, x.run.id, x.rows, x.n, y.db, y.run.id, y.rows, y.n, &r, tol) != 0)
        rc = 2;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "lockstep verify: stdout: write failed: %s\n", strerror(errno));
        rc = 2;
    }
out:
    side_close(&x);
    side_close(&y);
    return rc;
}
