/* test_report.c — `lockstep report` and `lockstep verify DB:RUN DB:RUN`:
 * the HTML writer's parts (tools/html.c: escaping, base64, the per-column
 * downsampling), the DB:RUN rule (tools/runref.c), the record's divergence
 * rule over rows in memory against its SQL (record/runlog.c), and the real
 * binary: a synthetic run of a million steps written straight through
 * record/runlog.h gives a page under 2 MB whose loss curve still reaches a
 * one-step spike, a run named like HTML shows as text, and runs trained
 * into two databases verify as bit-identical (same config) or differing at
 * step 1 (another learning rate) without either database being written.
 * Expected values come from outside the code under test: RFC 4648's base64
 * vectors, escapes written out by hand, the spike's column computed here
 * from the chart geometry, and the SQL query for the divergence rule.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/hash.h"
#include "record/runlog.h"
#include "tools/html.h"
#include "tools/runref.h"
#include "tests/proc_util.h"

static char g_bin[PATH_MAX];

#define REPORT_DEADLINE 180.0

static int setup_dir(void **state)
{
    return proc_ctx_setup(state, "/tmp/lockstep-report-XXXXXX");
}

static void run_argv(proc_res *r, const proc_ctx *c, const char *const *argv)
{
    proc_run_checked(r, c->dir, g_bin, argv, REPORT_DEADLINE);
}

#define RUN(r, c, ...)                                    \
    do {                                                  \
        const char *av_[] = { __VA_ARGS__, NULL };        \
        run_argv((r), (c), av_);                          \
    } while (0)

#define EXPECT(c, code, want, ...)                        \
    do {                                                  \
        proc_res r_;                                      \
        RUN(&r_, (c), __VA_ARGS__);                       \
        expect_run(&r_, (code), (want));                  \
        proc_res_free(&r_);                               \
    } while (0)

static void expect_run(const proc_res *r, int code, const char *want)
{
    proc_expect(r, code, want, 0);
}

/* What a writer put into a memory stream, NUL-terminated (free it). */
typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} mem;

static void mem_open(mem *m)
{
    m->f = open_memstream(&m->buf, &m->len);
    assert_non_null(m->f);
}

static char *mem_close(mem *m)
{
    assert_int_equal(fclose(m->f), 0);
    return m->buf;
}

/* ---- the writer's parts ---- */

static void test_escape(void **state)
{
    (void)state;
    mem m;
    mem_open(&m);
    html_text(m.f, "<script>alert('x' & \"y\")</script>\x01\x7f\ttab\nnl é");
    char *s = mem_close(&m);
    assert_string_equal(s, "&lt;script&gt;alert(&#39;x&#39; &amp; &quot;y&quot;)&lt;/script&gt;&#xFFFD;&#xFFFD;"
                           "\ttab\nnl é");
    free(s);
    mem_open(&m);
    html_textn(m.f, "a<b>c", 2);
    html_text(m.f, NULL);
    s = mem_close(&m);
    assert_string_equal(s, "a&lt;");
    free(s);
    /* Bytes that are not UTF-8 and C1 controls: U+FFFD, the page stays UTF-8. */
    mem_open(&m);
    html_text(m.f, "a\xff\xc3(\xc2\x85\xe2\x82\xac");
    s = mem_close(&m);
    assert_string_equal(s, "a&#xFFFD;&#xFFFD;(&#xFFFD;\xe2\x82\xac");
    free(s);
}

static void test_base64(void **state)
{
    (void)state;
    /* RFC 4648, section 10. */
    static const char *const in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
    static const char *const out[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
    for (size_t i = 0; i < 7; i++) {
        mem m;
        mem_open(&m);
        html_base64(m.f, (const unsigned char *)in[i], strlen(in[i]));
        char *s = mem_close(&m);
        assert_string_equal(s, out[i]);
        free(s);
    }
}

static void test_downsample_keeps_spike(void **state)
{
    (void)state;
    const size_t n = 1000000, w = 782, spike = 654321;
    int64_t *x = malloc(n * sizeof *x);
    double *y = malloc(n * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    for (size_t i = 0; i < n; i++) {
        x[i] = (int64_t)i;
        y[i] = 1.0 + (double)(i % 7) / 100;
    }
    y[spike] = 1e6;
    y[5] = NAN;                    /* left out */
    y[6] = -INFINITY;              /* left out */
    html_column cols[782];
    html_downsample(x, y, n, 0, (int64_t)n - 1, w, cols);
    /* Column of step s: floor(s · w / n), computed here without the code. */
    const size_t want = (size_t)((uint64_t)spike * w / n);
    size_t total = 0;
    for (size_t c = 0; c < w; c++) {
        total += cols[c].n;
        if (c == want)
            assert_true(cols[c].hi == 1e6);
        else
            assert_true(cols[c].hi <= 1.06 + 1e-12);
        assert_true(cols[c].lo >= 1.0);
    }
    assert_int_equal(total, n - 2);
    /* The first column holds steps 0..1278 without 5 and 6: first is step 0's value, last step 1278's. */
    const size_t last0 = (n + w - 1) / w - 1;   /* the greatest s with s · w < n */
    assert_int_equal(cols[0].n, last0 + 1 - 2);
    assert_true(cols[0].first == 1.0);
    assert_true(cols[0].last == 1.0 + (double)(last0 % 7) / 100);
    free(x);
    free(y);
}

static void test_runref_rule(void **state)
{
    const proc_ctx *c = *state;
    char dir[512], db[600], odd[600], arg[1400];
    snprintf(dir, sizeof dir, "%s/a:b", c->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(db, sizeof db, "%s/t.db", c->dir);
    snprintf(odd, sizeof odd, "%s/x.db:y", dir);
    FILE *f = fopen(db, "w");
    assert_non_null(f);
    fclose(f);
    assert_non_null(f = fopen(odd, "w"));
    fclose(f);
    runref r;
    ls_err err = { "" };
    /* A file, then a run. */
    snprintf(arg, sizeof arg, "%s:7", db);
    assert_int_equal(runref_parse(arg, "default.db", &r, &err), LS_OK);
    assert_string_equal(r.db, db);
    assert_string_equal(r.run, "7");
    assert_int_equal(r.explicit_db, 1);
    /* A path holding ':' twice and a run name holding ':'. */
    snprintf(arg, sizeof arg, "%s:run:1", odd);
    assert_int_equal(runref_parse(arg, "default.db", &r, &err), LS_OK);
    assert_string_equal(r.db, odd);
    assert_string_equal(r.run, "run:1");
    /* No file before any ':': a run of the default database. */
    assert_int_equal(runref_parse("nofile:3", "default.db", &r, &err), LS_OK);
    assert_string_equal(r.db, "default.db");
    assert_string_equal(r.run, "nofile:3");
    assert_int_equal(r.explicit_db, 0);
    assert_int_equal(runref_parse("plain", "d.db", &r, &err), LS_OK);
    assert_string_equal(r.db, "d.db");
    assert_string_equal(r.run, "plain");
    /* A directory is not a database: "DIR:5" is a run name. */
    snprintf(arg, sizeof arg, "%s:5", dir);
    assert_int_equal(runref_parse(arg, "d.db", &r, &err), LS_OK);
    assert_string_equal(r.db, "d.db");
    assert_string_equal(r.run, arg);
    /* A database and no run. */
    snprintf(arg, sizeof arg, "%s:", db);
    assert_int_equal(runref_parse(arg, "d.db", &r, &err), LS_EINVAL);
    assert_non_null(strstr(err.msg, "no run"));
    assert_true(runref_same_file(db, db));
    assert_false(runref_same_file(db, odd));
}

/* ---- the record's rule, in SQL and over rows in memory ---- */

static void put_run(runlog *db, const char *name, const ls_step *rows, size_t n, int64_t *id)
{
    ls_err err = { "" };
    runlog_run_info info = { 0 };
    info.name = name;
    info.model = "mlp";
    info.task = "teacher";
    info.config_text = "x=1\n";
    info.threads = 1;
    info.reduce = "tree";
    assert_int_equal(runlog_run_begin(db, &info, id, &err), LS_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(runlog_step(db, *id, &rows[i], &err), LS_OK);
    assert_int_equal(runlog_run_end(db, *id, "done", &err), LS_OK);
}

static void test_divergence_rows_match_sql(void **state)
{
    const proc_ctx *c = *state;
    char path[PATH_MAX];
    proc_tpath(c, "div.db", path, sizeof path);
    runlog *db;
    ls_err err = { "" };
    assert_int_equal(runlog_open(&db, path, &err), LS_OK);
    enum { N = 40 };
    /* Cases: equal; param hash differs at k; loss bits differ at k; loss
     * missing on one side at k; step 0's loss differs (ignored); rows missing
     * (gaps) on one side before a difference. */
    for (int kase = 0; kase < 12; kase++) {
        ls_step a[N], b[N];
        size_t na = 0, nb = 0;
        const int k = 3 + kase * 3;
        for (int s = 0; s < N; s++) {
            ls_step r = { s, s > 0, hash_loss_bits(1.0 / (s + 1)), (uint64_t)s * 7919u, (uint64_t)s * 104729u, 0 };
            ls_step q = r;
            switch (kase % 6) {
            case 1: if (s >= k) q.param_hash ^= 1; break;
            case 2: if (s == k) q.loss_bits ^= 1; break;
            case 3: if (s == k) q.has_loss = 0; break;
            case 4: if (s == 0) { q.has_loss = 1; q.loss_bits = 42; } break;
            case 5: if (s == k) q.param_hash ^= 4; break;
            default: break;
            }
            a[na++] = r;
            if (!(kase % 6 == 5 && s % 2 == 1 && s < k))   /* gaps in b before k */
                b[nb++] = q;
        }
        char an[32], bn[32];
        snprintf(an, sizeof an, "a%d", kase);
        snprintf(bn, sizeof bn, "b%d", kase);
        int64_t ia, ib, sql_step;
        put_run(db, an, a, na, &ia);
        put_run(db, bn, b, nb, &ib);
        assert_int_equal(runlog_first_divergence(db, ia, ib, &sql_step, &err), LS_OK);
        assert_int_equal(runlog_divergence_rows(a, na, b, nb), sql_step);
        assert_int_equal(runlog_divergence_rows(b, nb, a, na), sql_step);
    }
    runlog_close(db);
}

/* ---- the binary ---- */

/* The y values of the points of a path's d attribute at x == want_x. */
static double path_min_y_at(const char *d, double want_x, double *global_min_y)
{
    double best = INFINITY;
    *global_min_y = INFINITY;
    const char *p = d;
    while ((p = strpbrk(p, "ML")) != NULL) {
        double x, y;
        if (sscanf(p + 1, "%lf,%lf", &x, &y) != 2)
            break;
        if (fabs(x - want_x) < 1e-6 && y < best)
            best = y;
        if (y < *global_min_y)
            *global_min_y = y;
        p++;
    }
    return best;
}

static void test_long_run_small_page_keeps_spike(void **state)
{
    const proc_ctx *c = *state;
    char path[PATH_MAX];
    proc_tpath(c, "long.db", path, sizeof path);
    runlog *db;
    ls_err err = { "" };
    assert_int_equal(runlog_open(&db, path, &err), LS_OK);
    const int64_t n = 1000000, spike = 654321;
    runlog_run_info info = { 0 };
    info.name = "long";
    info.model = "mlp";
    info.task = "teacher";
    info.config_text = "lr=0x1.47ae14p-7\nseed=1\n";
    info.threads = 1;
    info.reduce = "tree";
    info.target_steps = n;
    int64_t id;
    const double t0 = proc_now();
    assert_int_equal(runlog_run_begin(db, &info, &id, &err), LS_OK);
    uint64_t traj = 1;
    for (int64_t s = 0; s <= n; s++) {
        const double loss = s == spike ? 1e6 : 0.5 + 1.0 / (double)(s + 1) + (double)(s % 5) / 1000;
        ls_step r = { s, s > 0, hash_loss_bits(loss), (uint64_t)s, traj = traj * 6364136223846793005u + 1, 0 };
        assert_int_equal(runlog_step(db, id, &r, &err), LS_OK);
        if (s % 10000 == 0)
            assert_int_equal(runlog_eval(db, id, s, "test_acc", 0.5 + (double)s / (4.0 * (double)n), &err), LS_OK);
    }
    assert_int_equal(runlog_run_end(db, id, "done", &err), LS_OK);
    runlog_close(db);
    const double t1 = proc_now();
    EXPECT(c, 0, "wrote long.html", "report", "--db", "long.db", "long", "-o", "long.html");
    print_message("%lld steps written through runlog in %.1f s, their report in %.1f s\n", (long long)n, t1 - t0,
                  proc_now() - t1);
    char html[PATH_MAX];
    proc_tpath(c, "long.html", html, sizeof html);
    size_t len;
    char *page = proc_read_file(html, &len, 1);
    print_message("report of a %lld-step run: %zu bytes\n", (long long)n, len);
    assert_true(len < 2u * 1024 * 1024);
    /* The loss chart: x from 0 to n (data-x0, data-x1), one column per pixel. */
    const char *chart = strstr(page, "data-x0=\"0\" data-x1=\"1000000\"");
    assert_non_null(chart);
    assert_non_null(strstr(chart, "data-log=\"1\""));   /* 0.5 .. 1e6 spans more than a factor 20 */
    const char *d = strstr(chart, "<path class=\"curve c0\" data-series=\"long\" d=\"");
    assert_non_null(d);
    d = strchr(d, 'M');
    /* The spike's column: floor(spike · cols / (n + 1)), its centre at left + column + 0.5. */
    const int64_t cols = HTML_CHART_RIGHT - HTML_CHART_LEFT;
    const double want_x = HTML_CHART_LEFT + (double)(spike * cols / (n + 1)) + 0.5;
    double top;
    const double y = path_min_y_at(d, want_x, &top);
    assert_true(y == (double)HTML_CHART_TOP);   /* the greatest value is drawn at the top */
    assert_true(top == (double)HTML_CHART_TOP); /* and nothing else is higher */
    /* The evaluation table shows 101 rows (they fit); no script anywhere. */
    assert_null(strstr(page, "<script"));
    assert_non_null(strstr(page, "id=\"run-1\""));
    free(page);
}

static void test_injection_escaped(void **state)
{
    const proc_ctx *c = *state;
    const char *evil = "<img src=x onerror=alert(1)>";
    const char *quote = "q\"uote'd & co";
    EXPECT(c, 0, "20 steps", "train", "--task", "teacher", "--steps", "20", "--db", "r.db", "--name", evil,
           "--threads", "1", "--no-progress");
    EXPECT(c, 0, "20 steps", "train", "--task", "teacher", "--steps", "20", "--db", "r.db", "--name", quote,
           "--lr", "0.02", "--threads", "1", "--no-progress");
    EXPECT(c, 0, "wrote e.html", "report", "--db", "r.db", "1", quote, "-o", "e.html");
    char html[PATH_MAX];
    proc_tpath(c, "e.html", html, sizeof html);
    char *page = proc_read_file(html, NULL, 1);
    assert_null(strstr(page, "<img src=x"));
    assert_null(strstr(page, "<script"));
    assert_non_null(strstr(page, "&lt;img src=x onerror=alert(1)&gt;"));
    assert_non_null(strstr(page, "data-series=\"q&quot;uote&#39;d &amp; co\""));
    assert_null(strstr(page, "q\"uote"));
    /* Different learning rates: the first difference is step 1, marked on the chart. */
    assert_non_null(strstr(page, "differ first at step <span class=\"first-step\">1</span>"));
    assert_non_null(strstr(page, "<line class=\"marker c1\" data-step=\"1\""));
    free(page);
}

/* The page names runs by their ids, as the command line does: runs 3 and 1
 * of a database are "run 3" and "run 1", never "run 1" and "run 2". */
static void test_report_uses_ids(void **state)
{
    const proc_ctx *c = *state;
    static const char *const names[] = { "rings-a", "rings-b", "rings-lr3" };
    static const char *const lrs[] = { "0.01", "0.01", "0.03" };
    for (int i = 0; i < 3; i++)
        EXPECT(c, 0, "20 steps", "train", "--task", "teacher", "--steps", "20", "--db", "r.db", "--name", names[i],
               "--lr", lrs[i], "--threads", "1", "--no-progress");
    EXPECT(c, 0, "wrote ids.html", "report", "--db", "r.db", "rings-lr3", "1", "-o", "ids.html");
    char html[PATH_MAX];
    proc_tpath(c, "ids.html", html, sizeof html);
    char *page = proc_read_file(html, NULL, 1);
    static const char *const want[] = { "id=\"run-3\"", "id=\"run-1\"", "<h2>Run 3: rings-lr3",
                                        "<h2>Run 1: rings-a", "against run 3 (rings-lr3)",
                                        "Run 3 (rings-lr3) and run 1 (rings-a)", "href=\"#run-3\">3</a>",
                                        "first divergence (run 1): step" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (strstr(page, want[i]) == NULL)
            fail_msg("the report lacks %s", want[i]);
    assert_null(strstr(page, "run-2"));
    assert_null(strstr(page, "Run 2"));
    assert_null(strstr(page, "run 2"));
    free(page);
}

static long long verdict_count(const proc_ctx *c, const char *name)
{
    char path[PATH_MAX];
    proc_tpath(c, name, path, sizeof path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM verdicts", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void test_verify_two_databases(void **state)
{
    const proc_ctx *c = *state;
    char dir[PATH_MAX];
    proc_tpath(c, "m:2", dir, sizeof dir);   /* the second "machine" sits below a path with ':' */
    assert_int_equal(mkdir(dir, 0755), 0);
    EXPECT(c, 0, "30 steps", "train", "--task", "teacher", "--steps", "30", "--db", "a.db", "--name", "t",
           "--threads", "1", "--no-progress");
    EXPECT(c, 0, "30 steps", "train", "--task", "teacher", "--steps", "30", "--db", "m:2/b.db", "--name", "t",
           "--threads", "3", "--no-progress");
    EXPECT(c, 0, "30 steps", "train", "--task", "teacher", "--steps", "30", "--db", "m:2/b.db", "--name", "fast",
           "--lr", "0.02", "--threads", "2", "--no-progress");
    EXPECT(c, 0, "bit-identical over steps 0..30", "verify", "a.db:t", "m:2/b.db:t");
    EXPECT(c, 0, "bit-identical over steps 0..30", "verify", "--db", "a.db", "t", "m:2/b.db:1");
    EXPECT(c, 1, "differ first at step 1:", "verify", "a.db:t", "m:2/b.db:fast");
    EXPECT(c, 1, "have different configs: lr 0x1.47ae14p-7 vs 0x1.47ae14p-6", "verify", "a.db:t", "m:2/b.db:fast");
    EXPECT(c, 2, "no run 'nope'", "verify", "a.db:t", "m:2/b.db:nope");
    EXPECT(c, 2, "no such database", "verify", "--db", "none.db", "a.db:t", "nofile.db:1");
    /* Both databases were only read. */
    assert_int_equal(verdict_count(c, "a.db"), 0);
    assert_int_equal(verdict_count(c, "m:2/b.db"), 0);
    /* In one database (given as DB:RUN twice) verify is the usual one, and stores its verdict. */
    EXPECT(c, 1, "differ first at step 1:", "verify", "m:2/b.db:t", "m:2/b.db:fast");
    assert_int_equal(verdict_count(c, "m:2/b.db"), 1);
    /* The report of runs from both databases agrees. */
    EXPECT(c, 0, "3 runs", "report", "a.db:t", "m:2/b.db:t", "m:2/b.db:fast", "-o", "two.html");
    char html[PATH_MAX];
    proc_tpath(c, "two.html", html, sizeof html);
    char *page = proc_read_file(html, NULL, 1);
    assert_non_null(strstr(page, "are <strong>bit-identical</strong> over steps 0..30"));
    assert_non_null(strstr(page, "differ first at step <span class=\"first-step\">1</span>"));
    free(page);
    EXPECT(c, 2, "needs -o", "report", "a.db:t");
    EXPECT(c, 2, "no run", "report", "a.db:zzz", "-o", "z.html");
    proc_tpath(c, "z.html", html, sizeof html);
    assert_int_equal(access(html, F_OK), -1);
}

/* A logic-ca run: the page embeds its rollout as a PNG and gives the gate
 * counts `lockstep export --circuit` reports for the same run. */
static void test_logic_ca_run(void **state)
{
    const proc_ctx *c = *state;
    EXPECT(c, 0, "20 steps", "train", "--task", "gol", "--steps", "20", "--db", "g.db", "--name", "g",
           "--threads", "2", "--no-progress");
    proc_res r;
    RUN(&r, c, "export", "g", "--circuit", "--db", "g.db", "-o", "g.c", "--no-progress");
    expect_run(&r, 0, "active gates of");
    size_t active = 0, gates = 0, trivial = 0;
    /* "..., C: 28 active gates of 2543 (28 of them wires, ...)" */
    const char *p = strstr(r.out, " active gates of ");
    assert_non_null(p);
    while (p > r.out && p[-1] >= '0' && p[-1] <= '9')
        p--;
    assert_int_equal(sscanf(p, "%zu active gates of %zu (%zu", &active, &gates, &trivial), 3);
    proc_res_free(&r);
    EXPECT(c, 0, "wrote g.html", "report", "g", "--db", "g.db", "-o", "g.html", "--no-progress");
    char html[PATH_MAX], want[160];
    proc_tpath(c, "g.html", html, sizeof html);
    char *page = proc_read_file(html, NULL, 1);
    assert_non_null(strstr(page, "src=\"data:image/png;base64,iVBORw0KGgo"));   /* the PNG signature */
    snprintf(want, sizeof want, "<tr><th>gates</th><td class=\"num\">%zu</td>", gates);
    assert_non_null(strstr(page, want));
    snprintf(want, sizeof want, "<tr><th>active gates (read by an output)</th><td class=\"num\">%zu</td>", active);
    assert_non_null(strstr(page, want));
    snprintf(want, sizeof want, "<tr><th>of them wires, inverters, constants</th><td class=\"num\">%zu</td>", trivial);
    assert_non_null(strstr(page, want));
    free(page);
}

int main(void)
{
    if (proc_find_bin(g_bin, "test_report", 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_downsample_keeps_spike),
        cmocka_unit_test_setup_teardown(test_runref_rule, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_divergence_rows_match_sql, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_long_run_small_page_keeps_spike, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_injection_escaped, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_report_uses_ids, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_verify_two_databases, setup_dir, proc_ctx_teardown),
        cmocka_unit_test_setup_teardown(test_logic_ca_run, setup_dir, proc_ctx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
