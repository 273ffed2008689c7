/* cmd_report.c — `lockstep report RUN [RUN...] -o report.html`: one
 * self-contained HTML page that shows runs to a person at a glance.
 *
 * Self-contained: the CSS and the charts (SVG) are inline, a rollout picture
 * is a data: URI, and there is no script, font or image from anywhere else,
 * so the file opens offline in any browser; a Content-Security-Policy meta
 * tag forbids everything else too. Every string that comes from a database
 * (run names, config text, hosts, verdict details) goes through html_text,
 * so a run named "<script>..." shows as text.
 *
 * Page: an overview table of the runs; for two or more, a comparison of
 * each run against the first (the verify verdict with the record's rule,
 * compare.h, for runs in one or several databases), the config and
 * environment fields that differ, the losses overlaid with the first
 * divergence marked, and every evaluation figure over steps; then for each
 * run its summary, config, environment, evaluations, the verdicts and audits
 * recorded about it, and for logic runs the circuit's gate counts (and for
 * logic-ca the default rollout picture of `lockstep render`), which need the
 * run restored (run_restore: its newest checkpoint, later steps recomputed
 * and checked). Charts take one column per pixel (html.h), so a run of a
 * million steps adds tens of kilobytes, and tables of rows a run can have
 * without bound (evaluations, verdicts, audits) show at most a fixed number,
 * saying so; the page stays well under 2 MB.
 */
#include "tools/tools.h"
#include "tools/commands.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/compare.h"
#include "tools/html.h"
#include "tools/runref.h"

#define REPORT_MAX_RUNS 16
#define REPORT_MAX_EVAL_ROWS 200      /* evaluation rows shown per run (all are plotted) */
#define REPORT_MAX_VERDICTS 50        /* newest verdicts and audits shown per run */
#define REPORT_MAX_NAMES 32           /* evaluation figures charted */
#define REPORT_MAX_PNG (768 * 1024)   /* a rollout picture larger than this is left out */

typedef struct {
    runref ref;
    runlog *db;               /* borrowed from the report's list of databases */
    runlog_run run;
    int have_run;
    ls_step *steps;
    size_t n_steps;
    runlog_evalrow *evals;
    size_t n_evals;
    runlog_verdictrow *verdicts;
    size_t n_verdicts;
    runlog_audit *audits;
    size_t n_audits;
    runlog_process *procs;
    size_t n_procs;
    int64_t *x;               /* [n_steps] steps and losses for the chart (NaN: none) */
    double *loss;
    char label[RUNLOG_NAME_BYTES + 4200];
    char tag[48];             /* the page's anchor: "run-ID", "-K" added when two runs share an id */
    int is_logic, is_ca;
    char circuit_note[600];   /* why there are no gate counts, "" when there are */
    export_gates gates;
    int have_gates;
    char *png;
    size_t png_len, png_w, png_h;
    int64_t restored_step;
} report_run;

typedef struct {
    char path[4096];
    runlog *db;
} report_db;

/* ---- reading --------------------------------------------------------------------------------- */

static ls_status load_run(report_run *r, ls_err *err)
{
    int64_t id;
    ls_status st = runlog_find(r->db, r->ref.run, &id, err);
    if (st == LS_OK && (st = runlog_get_run(r->db, id, &r->run, err)) == LS_OK)
        r->have_run = 1;
    if (st == LS_OK)
        st = runlog_read_steps(r->db, id, &r->steps, &r->n_steps, err);
    if (st == LS_OK)
        st = runlog_read_evals(r->db, id, &r->evals, &r->n_evals, err);
    if (st == LS_OK)
        st = runlog_verdicts(r->db, id, &r->verdicts, &r->n_verdicts, err);
    if (st == LS_OK)
        st = runlog_audits(r->db, id, &r->audits, &r->n_audits, err);
    if (st == LS_OK)
        st = runlog_processes(r->db, id, &r->procs, &r->n_procs, err);
    if (st != LS_OK)
        return st;
    r->x = malloc((r->n_steps + 1) * sizeof *r->x);
    r->loss = malloc((r->n_steps + 1) * sizeof *r->loss);
    if (r->x == NULL || r->loss == NULL)
        return ls_fail(err, LS_ENOMEM, "out of memory for the %zu steps of run %lld", r->n_steps, (long long)id);
    for (size_t i = 0; i < r->n_steps; i++) {
        r->x[i] = r->steps[i].step;
        r->loss[i] = r->steps[i].has_loss ? hash_bits_to_double(r->steps[i].loss_bits) : NAN;
    }
    r->is_ca = strcmp(r->run.model, "logic-ca") == 0;
    r->is_logic = r->is_ca || strcmp(r->run.model, "logic") == 0;
    return LS_OK;
}

static void free_run(report_run *r)
{
    if (r->have_run)
        runlog_run_free(&r->run);
    free(r->steps);
    free(r->evals);
    free(r->verdicts);
    free(r->audits);
    free(r->procs);
    free(r->x);
    free(r->loss);
    free(r->png);
}

/* Gate counts (and the rollout picture) of a logic run, from the run
 * restored at its last recorded step. A failure is said on the page. */
static void load_circuit(report_run *r, int threads, int progress)
{
    ls_err err = { "" };
    ls_session *session = NULL;
    ls_session_state info;
    ls_status st = run_restore(r->ref.db, r->run.id, threads, progress, &session, &info, &err);
    trainer *t = session != NULL ? session_trainer(session) : NULL;
    if (st == LS_OK && t == NULL)
        st = ls_fail(&err, LS_EINVAL, "the run has no state to restore");
    if (st == LS_OK) {
        r->restored_step = info.step;
        st = export_gate_counts(t, &r->gates, &err);
        r->have_gates = st == LS_OK;
    }
    if (st == LS_OK && r->is_ca) {
        FILE *m = open_memstream(&r->png, &r->png_len);
        if (m == NULL) {
            st = ls_fail(&err, LS_ENOMEM, "out of memory for the rollout picture");
        } else {
            char desc[256];
            snprintf(desc, sizeof desc, "run %lld at step %lld: default rollout", (long long)r->run.id,
                     (long long)info.step);
            st = render_default_png(t, desc, m, &r->png_w, &r->png_h, &err);
            if (fclose(m) != 0 && st == LS_OK)
                st = ls_fail(&err, LS_ENOMEM, "out of memory for the rollout picture");
            if (st == LS_OK && r->png_len > REPORT_MAX_PNG)
                st = ls_fail(&err, LS_EINVAL, "the rollout picture (%zu bytes) is larger than the page allows "
                             "(%d); lockstep render draws it", r->png_len, REPORT_MAX_PNG);
            if (st != LS_OK) {
                free(r->png);
                r->png = NULL;
                r->png_len = 0;
            }
        }
    }
    if (st != LS_OK)
        snprintf(r->circuit_note, sizeof r->circuit_note, "%s", err.msg[0] ? err.msg : ls_strerror(st));
    ls_session_close(session, LS_OK, NULL);
}

/* ---- small writers ----------------------------------------------------------------------------- */

static const char REPORT_CSS[] =
    "body{font:14px/1.45 sans-serif;color:#222;margin:1.5em auto;max-width:1100px;padding:0 1em}\n"
    "h1{font-size:1.6em;margin:.2em 0}h2{border-bottom:2px solid #ccd;padding-bottom:.2em;margin-top:1.8em}\n"
    "h3{margin:1.2em 0 .4em}\n"
    "table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ddd;padding:.2em .55em;"
    "text-align:left;vertical-align:top}\n"
    "th{background:#f2f3f7}td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
    "code,.mono{font-family:monospace;font-size:.95em}\n"
    ".ok{color:#13702a;font-weight:bold}.bad{color:#b3161b;font-weight:bold}.note{color:#666}\n"
    "p.verdict{font-size:1.1em;padding:.4em .7em;border-left:5px solid #888;background:#f7f7f9}\n"
    "p.verdict.ok{border-color:#13702a}p.verdict.bad{border-color:#b3161b}\n"
    "img.rollout{image-rendering:pixelated;border:1px solid #ccc;max-width:100%}\n"
    "section.run{margin-top:2.5em}\n";

static void td(FILE *f, const char *s)
{
    fputs("<td>", f);
    html_text(f, s);
    fputs("</td>", f);
}

static void th(FILE *f, const char *s)
{
    fputs("<th>", f);
    html_text(f, s);
    fputs("</th>", f);
}

static void row_kv(FILE *f, const char *k, const char *v)
{
    fputs("<tr>", f);
    th(f, k);
    td(f, v != NULL && v[0] ? v : "-");
    fputs("</tr>\n", f);
}

static void row_kv_mono(FILE *f, const char *k, const char *v)
{
    fputs("<tr>", f);
    th(f, k);
    fputs("<td class=\"mono\">", f);
    html_text(f, v != NULL && v[0] ? v : "-");
    fputs("</td></tr>\n", f);
}

/* A config value as text, a float's %a form with its shortest decimal beside it. */
static void config_value_html(FILE *f, const char *v, size_t vl)
{
    html_textn(f, v, vl);
    if (vl > 2 && vl < 64 && v[0] == '0' && v[1] == 'x') {
        char hex[64], dec[64];
        memcpy(hex, v, vl);
        hex[vl] = '\0';
        const float x = strtof(hex, NULL);
        for (int prec = 1; prec <= 9; prec++) {
            snprintf(dec, sizeof dec, "%.*g", prec, (double)x);
            if (strtof(dec, NULL) == x)
                break;
        }
        fputs(" <span class=\"note\">(", f);
        html_text(f, dec);
        fputs(")</span>", f);
    }
}

static double last_loss(const report_run *r)
{
    for (size_t i = r->n_steps; i-- > 0;)
        if (r->steps[i].has_loss)
            return hash_bits_to_double(r->steps[i].loss_bits);
    return NAN;
}

/* ---- the comparison ------------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    size_t off;               /* into runlog_run: a char array, or (threads) an int */
    int is_int;
} env_field;

static const env_field ENV_FIELDS[] = {
    { "model", offsetof(runlog_run, model), 0 },
    { "task", offsetof(runlog_run, task), 0 },
    { "engine", offsetof(runlog_run, engine_version), 0 },
    { "compiler", offsetof(runlog_run, compiler), 0 },
    { "flags", offsetof(runlog_run, cflags), 0 },
    { "host", offsetof(runlog_run, host), 0 },
    { "cpu", offsetof(runlog_run, cpu), 0 },
    { "git commit", offsetof(runlog_run, git_commit), 0 },
    { "threads", offsetof(runlog_run, threads), 1 },
    { "reduce", offsetof(runlog_run, reduce), 0 },
};

static void env_value(const runlog_run *run, const env_field *e, char *buf, size_t cap)
{
    const char *base = (const char *)run + e->off;
    if (e->is_int) {
        int v;
        memcpy(&v, base, sizeof v);
        snprintf(buf, cap, "%d", v);
    } else {
        snprintf(buf, cap, "%s", base);
    }
}

static void write_config_diff(FILE *f, report_run *r, size_t n)
{
    fputs("<h3>Config: what differs</h3>\n", f);
    size_t shown = 0;
    for (size_t k = 0; k < n; k++)
        for (const char *p = r[k].run.config_text; *p;) {
            const size_t l = strcspn(p, "\n");
            const char *eq = memchr(p, '=', l);
            const size_t kl = eq != NULL ? (size_t)(eq - p) : l;
            /* Each key once: where it first appears. */
            int seen = 0;
            size_t vl;
            for (size_t j = 0; j < k && !seen; j++)
                seen = compare_config_value(r[j].run.config_text, p, kl, &vl) != NULL;
            int differs = 0;
            const char *v0 = compare_config_value(r[0].run.config_text, p, kl, &vl);
            const size_t vl0 = v0 != NULL ? vl : 0;
            for (size_t j = 1; j < n && !differs && !seen; j++) {
                const char *v = compare_config_value(r[j].run.config_text, p, kl, &vl);
                differs = (v == NULL) != (v0 == NULL) || (v != NULL && (vl != vl0 || memcmp(v, v0, vl) != 0));
            }
            if (eq != NULL && differs && !seen) {
                if (shown++ == 0) {
                    fputs("<table class=\"diff\" id=\"config-diff\"><tr><th>key</th>", f);
                    for (size_t j = 0; j < n; j++)
                        th(f, r[j].label);
                    fputs("</tr>\n", f);
                }
                fputs("<tr><th>", f);
                html_textn(f, p, kl);
                fputs("</th>", f);
                for (size_t j = 0; j < n; j++) {
                    const char *v = compare_config_value(r[j].run.config_text, p, kl, &vl);
                    fputs("<td class=\"mono\">", f);
                    if (v != NULL)
                        config_value_html(f, v, vl);
                    else
                        fputs("<span class=\"note\">(absent)</span>", f);
                    fputs("</td>", f);
                }
                fputs("</tr>\n", f);
            }
            p += l + (p[l] == '\n');
        }
    if (shown)
        fputs("</table>\n", f);
    else
        fprintf(f, "<p>The configs are identical (config hash <code>%016llx</code>).</p>\n",
                (unsigned long long)r[0].run.config_hash);
}

static void write_env_diff(FILE *f, report_run *r, size_t n)
{
    fputs("<h3>Environment: what differs</h3>\n", f);
    size_t shown = 0;
    char a[512], b[512];
    for (size_t e = 0; e < sizeof ENV_FIELDS / sizeof ENV_FIELDS[0]; e++) {
        env_value(&r[0].run, &ENV_FIELDS[e], a, sizeof a);
        int differs = 0;
        for (size_t j = 1; j < n && !differs; j++) {
            env_value(&r[j].run, &ENV_FIELDS[e], b, sizeof b);
            differs = strcmp(a, b) != 0;
        }
        if (!differs)
            continue;
        if (shown++ == 0) {
            fputs("<table class=\"diff\" id=\"env-diff\"><tr><th>field</th>", f);
            for (size_t j = 0; j < n; j++)
                th(f, r[j].label);
            fputs("</tr>\n", f);
        }
        fputs("<tr>", f);
        th(f, ENV_FIELDS[e].name);
        for (size_t j = 0; j < n; j++) {
            env_value(&r[j].run, &ENV_FIELDS[e], b, sizeof b);
            td(f, b[0] ? b : "-");
        }
        fputs("</tr>\n", f);
    }
    if (shown)
        fputs("</table>\n", f);
    else
        fputs("<p>The environments are identical (model, task, engine, compiler, flags, host, cpu, git commit, "
              "threads, reduce).</p>\n", f);
}

/* Every evaluation name any run has, in first-seen order. */
static size_t eval_names(const report_run *r, size_t n, const char **names)
{
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < r[j].n_evals; i++) {
            size_t q = 0;
            while (q < k && strcmp(names[q], r[j].evals[i].name) != 0)
                q++;
            if (q == k && k < REPORT_MAX_NAMES)
                names[k++] = r[j].evals[i].name;
        }
    return k;
}

/* Charts of every evaluation figure of runs r[n], one series per run. */
static ls_status write_eval_charts(FILE *f, const report_run *r, size_t n, ls_err *err)
{
    const char *names[REPORT_MAX_NAMES];
    const size_t k = eval_names(r, n, names);
    for (size_t q = 0; q < k; q++) {
        html_series s[REPORT_MAX_RUNS];
        int64_t *xs[REPORT_MAX_RUNS] = { 0 };
        double *ys[REPORT_MAX_RUNS] = { 0 };
        ls_status st = LS_OK;
        for (size_t j = 0; j < n; j++) {
            xs[j] = malloc((r[j].n_evals + 1) * sizeof *xs[j]);
            ys[j] = malloc((r[j].n_evals + 1) * sizeof *ys[j]);
            if (xs[j] == NULL || ys[j] == NULL) {
                st = ls_fail(err, LS_ENOMEM, "out of memory for the evaluations");
                break;
            }
            size_t m = 0;
            for (size_t i = 0; i < r[j].n_evals; i++)
                if (strcmp(r[j].evals[i].name, names[q]) == 0) {
                    xs[j][m] = r[j].evals[i].step;
                    ys[j][m++] = r[j].evals[i].value;
                }
            s[j] = (html_series){ r[j].label, xs[j], ys[j], m };
        }
        if (st == LS_OK)
            html_chart(f, names[q], names[q], 0, s, n, NULL, 0);
        for (size_t j = 0; j < n; j++) {
            free(xs[j]);
            free(ys[j]);
        }
        if (st != LS_OK)
            return st;
    }
    if (k == 0)
        fputs("<p class=\"note\">No evaluations recorded.</p>\n", f);
    return LS_OK;
}

static void loss_chart(FILE *f, const report_run *r, size_t n, const compare_result *cmp)
{
    html_series s[REPORT_MAX_RUNS];
    html_marker m[REPORT_MAX_RUNS];
    char labels[REPORT_MAX_RUNS][96];
    size_t nm = 0;
    for (size_t j = 0; j < n; j++) {
        s[j] = (html_series){ r[j].label, r[j].x, r[j].loss, r[j].n_steps };
        if (j > 0 && cmp != NULL && cmp[j].first >= 0) {
            snprintf(labels[nm], sizeof labels[nm], "first divergence (run %lld): step %lld",
                     (long long)r[j].run.id, (long long)cmp[j].first);
            m[nm] = (html_marker){ cmp[j].first, j, labels[nm] };
            nm++;
        }
    }
    html_chart(f, "training loss", "loss", 1, s, n, m, nm);
}

static ls_status write_comparison(FILE *f, report_run *r, size_t n, ls_err *err)
{
    compare_result cmp[REPORT_MAX_RUNS];
    memset(cmp, 0, sizeof cmp);
    fprintf(f, "<section id=\"comparison\"><h2>Comparison</h2>\n<h3>Verify: bit for bit against run %lld (",
            (long long)r[0].run.id);
    html_text(f, r[0].label);
    fputs(")</h3>\n", f);
    for (size_t j = 1; j < n; j++) {
        compare_rows(r[0].steps, r[0].n_steps, r[j].steps, r[j].n_steps, &cmp[j]);
        const compare_result *c = &cmp[j];
        fprintf(f, "<p class=\"verdict %s\" id=\"verdict-%s\" data-first-step=\"%lld\">", c->equal ? "ok" : "bad",
                r[j].tag, (long long)c->first);
        fprintf(f, "Run %lld (", (long long)r[0].run.id);
        html_text(f, r[0].label);
        fprintf(f, ") and run %lld (", (long long)r[j].run.id);
        html_text(f, r[j].label);
        fputs(") ", f);
        if (c->common == 0)
            fputs("have no step in common: nothing to compare, so not equal.", f);
        else if (c->equal && c->last_traj == c->last_traj_b)
            fprintf(f, "are <strong>bit-identical</strong> over %s (trajectory <code>%016llx</code>).", c->span,
                    (unsigned long long)c->last_traj);
        else if (c->equal)   /* equal steps, another trajectory: the configs differ (compare_print_equal) */
            fprintf(f, "are <strong>bit-identical</strong> over %s (trajectories <code>%016llx</code> and "
                    "<code>%016llx</code>: the configs differ).", c->span, (unsigned long long)c->last_traj,
                    (unsigned long long)c->last_traj_b);
        else {
            fprintf(f, "<strong>differ first at step <span class=\"first-step\">%lld</span></strong>: ",
                    (long long)c->first);
            const char *d = strchr(c->detail, ':');   /* the detail without its "step N: " */
            html_text(f, d != NULL && d[1] == ' ' ? d + 2 : c->detail);
            fputs(".", f);
        }
        fputs("</p>\n", f);
    }
    write_config_diff(f, r, n);
    write_env_diff(f, r, n);
    fputs("<h3>Loss</h3>\n", f);
    loss_chart(f, r, n, cmp);
    fputs("<h3>Evaluations over steps</h3>\n", f);
    ls_status st = write_eval_charts(f, r, n, err);
    fputs("</section>\n", f);
    return st;
}

/* ---- one run ------------------------------------------------------------------------------------- */

static void write_verdicts(FILE *f, const report_run *r)
{
    fputs("<h3>Verdicts recorded (verify, equiv)</h3>\n", f);
    if (r->n_verdicts == 0) {
        fputs("<p class=\"note\">None.</p>\n", f);
        return;
    }
    const size_t from = r->n_verdicts > REPORT_MAX_VERDICTS ? r->n_verdicts - REPORT_MAX_VERDICTS : 0;
    if (from > 0)
        fprintf(f, "<p class=\"note\">The newest %d of %zu.</p>\n", REPORT_MAX_VERDICTS, r->n_verdicts);
    fputs("<table class=\"verdicts\"><tr><th>when</th><th>kind</th><th>runs</th><th>verdict</th>"
          "<th>first different step</th><th>detail</th></tr>\n", f);
    for (size_t i = from; i < r->n_verdicts; i++) {
        const runlog_verdictrow *v = &r->verdicts[i];
        char runs[64], step[32];
        snprintf(runs, sizeof runs, "%lld, %lld", (long long)v->run_a, (long long)v->run_b);
        snprintf(step, sizeof step, "%lld", (long long)v->first_diff_step);
        fputs("<tr>", f);
        td(f, v->created);
        td(f, v->kind);
        td(f, runs);
        fprintf(f, "<td class=\"%s\">%s</td>", v->equal ? "ok" : "bad", v->equal ? "equal" : "differ");
        td(f, v->first_diff_step >= 0 ? step : "-");
        td(f, v->detail);
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void write_audits(FILE *f, const report_run *r)
{
    fputs("<h3>Audits recorded</h3>\n", f);
    if (r->n_audits == 0) {
        fputs("<p class=\"note\">None.</p>\n", f);
        return;
    }
    const size_t from = r->n_audits > REPORT_MAX_VERDICTS ? r->n_audits - REPORT_MAX_VERDICTS : 0;
    if (from > 0)
        fprintf(f, "<p class=\"note\">The newest %d of %zu.</p>\n", REPORT_MAX_VERDICTS, r->n_audits);
    fputs("<table class=\"audits\"><tr><th>when</th><th>mode</th><th>verdict</th><th>steps proved</th>"
          "<th>first bad step</th><th>host, threads</th><th>build</th><th>detail</th></tr>\n", f);
    for (size_t i = from; i < r->n_audits; i++) {
        const runlog_audit *a = &r->audits[i];
        char steps[48], bad[32], where[200];
        snprintf(steps, sizeof steps, "0..%lld", (long long)a->steps);
        snprintf(bad, sizeof bad, "%lld", (long long)a->first_bad);
        if (a->threads > 0)
            snprintf(where, sizeof where, "%s, %d", a->host, a->threads);
        else
            snprintf(where, sizeof where, "%s", a->host);   /* record-only: nothing re-executed */
        fputs("<tr>", f);
        td(f, a->created);
        td(f, a->mode);
        fprintf(f, "<td class=\"%s\">%s</td>", a->proved ? "ok" : "bad", a->proved ? "proved" : "failed");
        td(f, steps);
        td(f, a->first_bad >= 0 ? bad : "-");
        td(f, where);
        td(f, a->version);
        td(f, a->detail);
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void write_evals_table(FILE *f, const report_run *r)
{
    fputs("<h3>Evaluations</h3>\n", f);
    if (r->n_evals == 0) {
        fputs("<p class=\"note\">None recorded.</p>\n", f);
        return;
    }
    const size_t n = r->n_evals, shown = n > REPORT_MAX_EVAL_ROWS ? REPORT_MAX_EVAL_ROWS : n;
    if (shown < n)
        fprintf(f, "<p class=\"note\">%zu of %zu rows, evenly spaced; the charts show them all.</p>\n", shown, n);
    fputs("<table class=\"evals\"><tr><th>step</th><th>figure</th><th>value</th></tr>\n", f);
    for (size_t k = 0; k < shown; k++) {
        const size_t i = shown == n ? k : (size_t)((double)k * (double)(n - 1) / (double)(shown - 1));
        fprintf(f, "<tr><td class=\"num\">%lld</td>", (long long)r->evals[i].step);
        td(f, r->evals[i].name);
        fprintf(f, "<td class=\"num\">%.6f</td></tr>\n", r->evals[i].value);
    }
    fputs("</table>\n", f);
}

static void write_circuit(FILE *f, const report_run *r)
{
    fputs("<h3>Circuit</h3>\n", f);
    if (!r->have_gates) {
        fputs("<p class=\"note\">No gate counts: ", f);
        html_text(f, r->circuit_note);
        fputs("</p>\n", f);
        return;
    }
    const export_gates *g = &r->gates;
    fprintf(f, "<p>The hard circuit at step %lld, as <code>lockstep export --circuit</code> writes it:</p>\n"
            "<table class=\"gates\" id=\"gates-%lld\"><tr><th>inputs</th><td class=\"num\">%zu</td></tr>"
            "<tr><th>outputs</th><td class=\"num\">%zu</td></tr><tr><th>gates</th><td class=\"num\">%zu</td></tr>"
            "<tr><th>active gates (read by an output)</th><td class=\"num\">%zu</td></tr>"
            "<tr><th>of them wires, inverters, constants</th><td class=\"num\">%zu</td></tr></table>\n",
            (long long)r->restored_step, (long long)r->run.id, g->inputs, g->outputs, g->gates, g->active,
            g->trivial);
    fputs("<table class=\"ops\"><tr><th>op</th><th>active gates</th></tr>\n", f);
    for (int k = 0; k < 16; k++)
        if (g->by_op[k] > 0 && g->op_names[k] != NULL)
            fprintf(f, "<tr><td class=\"mono\">%s</td><td class=\"num\">%zu</td></tr>\n", g->op_names[k],
                    g->by_op[k]);
    fputs("</table>\n", f);
    if (r->is_ca && r->png != NULL) {
        fprintf(f, "<h3>Rollout</h3>\n<p>The hard circuit rolling out from <code>lockstep render</code>'s default "
                "start state, frame 0 first (row by row); channel 0, black is 1.</p>\n"
                "<img class=\"rollout\" width=\"%zu\" height=\"%zu\" alt=\"rollout of run %lld\" src=\"data:image/png;base64,",
                r->png_w, r->png_h, (long long)r->run.id);
        html_base64(f, (const unsigned char *)r->png, r->png_len);
        fputs("\">\n", f);
    }
}

static ls_status write_run(FILE *f, const report_run *r, size_t n_runs, ls_err *err)
{
    const runlog_run *u = &r->run;
    fprintf(f, "<section class=\"run\" id=\"%s\"><h2>Run %lld: ", r->tag, (long long)u->id);
    html_text(f, u->name);
    fputs("</h2>\n<h3>Summary</h3>\n<table class=\"summary\">\n", f);
    char buf[256];
    row_kv_mono(f, "database", r->ref.db);
    snprintf(buf, sizeof buf, "%lld", (long long)u->id);
    row_kv(f, "id", buf);
    row_kv(f, "name", u->name);
    row_kv(f, "status", u->status);
    snprintf(buf, sizeof buf, "%s, %s", u->model, u->task);
    row_kv(f, "model, task", buf);
    snprintf(buf, sizeof buf, "%lld", (long long)u->n_steps);
    row_kv(f, "last recorded step", buf);
    if (u->target_steps > 0) {
        snprintf(buf, sizeof buf, "%lld", (long long)u->target_steps);
        row_kv(f, "target steps", buf);
    }
    snprintf(buf, sizeof buf, "%.9g", last_loss(r));
    row_kv(f, "last loss", buf);
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)u->last_traj_hash);
    row_kv_mono(f, "trajectory hash", buf);
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)u->config_hash);
    row_kv_mono(f, "config hash", buf);
    row_kv(f, "started", u->started);
    row_kv(f, "ended", u->ended);
    if (u->checkpoint_every > 0) {
        snprintf(buf, sizeof buf, "every %lld steps", (long long)u->checkpoint_every);
        row_kv(f, "checkpoints", buf);
    }
    fputs("</table>\n<h3>Config</h3>\n<table class=\"config\">\n", f);
    for (const char *p = u->config_text; *p;) {
        const size_t l = strcspn(p, "\n");
        const char *eq = memchr(p, '=', l);
        const size_t kl = eq != NULL ? (size_t)(eq - p) : l;
        fputs("<tr><th>", f);
        html_textn(f, p, kl);
        fputs("</th><td class=\"mono\">", f);
        if (eq != NULL)
            config_value_html(f, eq + 1, l - kl - 1);
        fputs("</td></tr>\n", f);
        p += l + (p[l] == '\n');
    }
    fputs("</table>\n", f);
    if (u->source_text != NULL && u->source_text[0]) {
        fputs("<h3>Data</h3>\n<pre>", f);
        html_text(f, u->source_text);
        fputs("</pre>\n", f);
    }
    fputs("<h3>Environment</h3>\n<table class=\"env\">\n", f);
    for (size_t e = 0; e < sizeof ENV_FIELDS / sizeof ENV_FIELDS[0]; e++) {
        env_value(u, &ENV_FIELDS[e], buf, sizeof buf);
        row_kv(f, ENV_FIELDS[e].name, buf);
    }
    fputs("</table>\n", f);
    if (r->n_procs > 0) {
        fputs("<table class=\"processes\"><tr><th>process started</th><th>steps</th><th>host</th><th>pid</th>"
              "<th>threads</th><th>build</th></tr>\n", f);
        for (size_t k = 0; k < r->n_procs; k++) {
            const runlog_process *q = &r->procs[k];
            if (q->last_step >= 0)
                snprintf(buf, sizeof buf, "%lld..%lld", (long long)q->first_step + 1, (long long)q->last_step);
            else
                snprintf(buf, sizeof buf, "from %lld, did not end", (long long)q->first_step + 1);
            fputs("<tr>", f);
            td(f, q->started);
            td(f, buf);
            td(f, q->host);
            fprintf(f, "<td class=\"num\">%lld</td><td class=\"num\">%d</td>", (long long)q->pid, q->threads);
            td(f, q->build);
            fputs("</tr>\n", f);
        }
        fputs("</table>\n", f);
    }
    if (n_runs == 1) {
        fputs("<h3>Loss</h3>\n", f);
        loss_chart(f, r, 1, NULL);
        fputs("<h3>Evaluation figures</h3>\n", f);
        ls_status st = write_eval_charts(f, r, 1, err);
        if (st != LS_OK)
            return st;
    }
    write_evals_table(f, r);
    write_verdicts(f, r);
    write_audits(f, r);
    if (r->is_logic)
        write_circuit(f, r);
    fputs("</section>\n", f);
    return LS_OK;
}

static ls_status write_page(FILE *f, report_run *r, size_t n, ls_err *err)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
          "img-src data:\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"" LS_ENGINE_VERSION "\">\n<title>lockstep report: ", f);
    for (size_t j = 0; j < n; j++) {
        fputs(j ? ", " : "", f);
        html_text(f, r[j].run.name);
    }
    fprintf(f, "</title>\n<style>\n%s%s</style></head><body>\n<h1>lockstep report</h1>\n", REPORT_CSS,
            HTML_CHART_CSS);
    char when[64] = "";
    const time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) != NULL)
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "<p class=\"note\">%zu run%s, written by %s at %s.</p>\n", n, n == 1 ? "" : "s", LS_ENGINE_VERSION,
            when);
    fputs("<table class=\"overview\"><tr><th>id</th><th>run</th><th>database</th><th>model</th><th>task</th>"
          "<th>status</th><th>steps</th><th>last loss</th><th>last evaluation</th><th>trajectory</th>"
          "<th>audit</th></tr>\n", f);
    for (size_t j = 0; j < n; j++) {
        const report_run *q = &r[j];
        char buf[160];
        fprintf(f, "<tr><td class=\"num\"><a href=\"#%s\">%lld</a></td>", q->tag, (long long)q->run.id);
        td(f, q->run.name);
        fputs("<td class=\"mono\">", f);
        html_text(f, q->ref.db);
        fputs("</td>", f);
        td(f, q->run.model);
        td(f, q->run.task);
        td(f, q->run.status);
        fprintf(f, "<td class=\"num\">%lld</td><td class=\"num\">%.6g</td>", (long long)q->run.n_steps,
                last_loss(q));
        fputs("<td>", f);
        if (q->n_evals > 0) {
            const int64_t last = q->evals[q->n_evals - 1].step;
            fprintf(f, "step %lld:", (long long)last);
            for (size_t i = 0; i < q->n_evals; i++)
                if (q->evals[i].step == last) {
                    fputs(" ", f);
                    html_text(f, q->evals[i].name);
                    fprintf(f, " %.4f", q->evals[i].value);
                }
        } else {
            fputs("-", f);
        }
        fputs("</td>", f);
        snprintf(buf, sizeof buf, "%016llx", (unsigned long long)q->run.last_traj_hash);
        fprintf(f, "<td class=\"mono\">%s</td>", buf);
        if (q->n_audits > 0) {
            const runlog_audit *a = &q->audits[q->n_audits - 1];
            fprintf(f, "<td class=\"%s\">%s (", a->proved ? "ok" : "bad", a->proved ? "proved" : "failed");
            html_text(f, a->mode);
            fputs(")</td>", f);
        } else {
            fputs("<td class=\"note\">none</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    ls_status st = LS_OK;
    if (n >= 2)
        st = write_comparison(f, r, n, err);
    for (size_t j = 0; j < n && st == LS_OK; j++)
        st = write_run(f, &r[j], n, err);
    fputs("</body></html>\n", f);
    return st;
}

/* ---- the command ---------------------------------------------------------------------------------- */

typedef struct {
    const char *out_path, *runs[REPORT_MAX_RUNS];
    int n_runs;
} report_args;

/* -o, and the runs (every argument). */
static ls_status report_arg(void *ctx, const flag_spec *f, const char *v, ls_err *err)
{
    report_args *ra = ctx;
    if (f != NULL) {
        ra->out_path = v;
        return LS_OK;
    }
    if (ra->n_runs == REPORT_MAX_RUNS)
        return ls_fail(err, LS_EINVAL, "at most %d runs", REPORT_MAX_RUNS);
    ra->runs[ra->n_runs++] = v;
    return LS_OK;
}

int cmd_report(int argc, char **argv)
{
    ls_err err = { "" };
    cli_args a;
    report_args ra;
    memset(&ra, 0, sizeof ra);
    ls_status st = cli_parse_cmd("report", argc, argv, CLI_DB | CLI_THREADS | CLI_PROGRESS, -1, report_arg, &ra, &a,
                                 &err);
    const char *out_path = ra.out_path, *const *runs = ra.runs;
    const int n_runs = ra.n_runs;
    if (st == LS_OK && a.help) {
        command_usage(command_find("report"), stdout);
        return EXIT_OK;
    }
    if (st == LS_OK && n_runs == 0)
        st = ls_fail(&err, LS_EINVAL, "needs at least one RUN (an id, a name, or DB:RUN)");
    if (st == LS_OK && out_path == NULL)
        st = ls_fail(&err, LS_EINVAL, "needs -o FILE.html");
    if (st != LS_OK) {
        cli_error("report", &err, st);
        return EXIT_USAGE;
    }

    report_run *r = calloc((size_t)n_runs, sizeof *r);
    report_db dbs[REPORT_MAX_RUNS];
    size_t n_dbs = 0;
    if (r == NULL) {
        fputs("lockstep report: out of memory\n", stderr);
        return EXIT_USAGE;
    }
    /* Each database file is opened once, however many runs it gives. */
    for (int j = 0; j < n_runs && st == LS_OK; j++) {
        st = runref_parse(runs[j], a.db, &r[j].ref, &err);
        size_t d = 0;
        while (st == LS_OK && d < n_dbs && !runref_same_file(dbs[d].path, r[j].ref.db) &&
               strcmp(dbs[d].path, r[j].ref.db) != 0)
            d++;
        if (st == LS_OK && d == n_dbs) {
            if (access(r[j].ref.db, F_OK) != 0)
                st = ls_fail(&err, LS_ENOTFOUND, "%s: no such database%s", r[j].ref.db,
                             strchr(runs[j], ':') != NULL && !r[j].ref.explicit_db
                                 ? " (and no file before a ':' of the RUN argument)" : "");
            if (st == LS_OK)
                st = cli_open_db(r[j].ref.db, &dbs[d].db, &err);
            if (st == LS_OK) {
                snprintf(dbs[d].path, sizeof dbs[d].path, "%s", r[j].ref.db);
                n_dbs++;
            }
        }
        if (st == LS_OK) {
            r[j].db = dbs[d].db;
            st = load_run(&r[j], &err);
        }
    }
    /* Series labels: the run's name, with its database when two runs share a name. */
    for (int j = 0; j < n_runs && st == LS_OK; j++) {
        int clash = 0;
        for (int k = 0; k < n_runs; k++)
            clash |= k != j && strcmp(r[k].run.name, r[j].run.name) == 0;
        if (clash)
            snprintf(r[j].label, sizeof r[j].label, "%s (%s)", r[j].run.name, r[j].ref.db);
        else
            snprintf(r[j].label, sizeof r[j].label, "%s", r[j].run.name);
        /* Anchors and every "run N" on the page are the record's ids, as the
         * command line names runs; runs of two databases may share one. */
        int same_id = 0;
        for (int k = 0; k < n_runs; k++)
            same_id |= k != j && r[k].run.id == r[j].run.id;
        if (same_id)
            snprintf(r[j].tag, sizeof r[j].tag, "run-%lld-%d", (long long)r[j].run.id, j + 1);
        else
            snprintf(r[j].tag, sizeof r[j].tag, "run-%lld", (long long)r[j].run.id);
    }
    /* The output is checked against every record first of all. */
    for (size_t d = 0; d < n_dbs && st == LS_OK; d++)
        st = cli_guard_output("-o", out_path, dbs[d].path, dbs[d].db, &err);
    cli_out out;
    memset(&out, 0, sizeof out);
    if (st == LS_OK)
        st = cli_out_open(&out, "-o", out_path, dbs[0].path, dbs[0].db, &err);
    int code = EXIT_OK;
    if (st != LS_OK) {
        cli_error("report", &err, st);
        code = EXIT_USAGE;
        goto done;
    }
    run_install_signals();
    for (int j = 0; j < n_runs && !run_interrupted; j++)
        if (r[j].is_logic)
            load_circuit(&r[j], a.threads[0], a.progress);
    if (run_interrupted) {
        cli_out_abort(&out);
        fputs("lockstep report: interrupted\n", stderr);
        code = EXIT_INTERRUPTED;
        goto done;
    }
    st = write_page(out.f, r, (size_t)n_runs, &err);
    long size = out.to_stdout ? -1 : ftell(out.f);
    if (st == LS_OK)
        st = cli_out_commit(&out, &err);
    if (st != LS_OK) {
        cli_out_abort(&out);
        cli_error("report", &err, st);
        code = EXIT_USAGE;
        goto done;
    }
    if (!out.to_stdout)
        printf("report: %d run%s, %ld bytes, wrote %s\n", n_runs, n_runs == 1 ? "" : "s", size, out_path);
done:
    for (int j = 0; j < n_runs; j++)
        free_run(&r[j]);
    free(r);
    for (size_t d = 0; d < n_dbs; d++)
        runlog_close(dbs[d].db);
    return code;
}
