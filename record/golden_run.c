/* golden_run.c — golden files of recorded runs (format v2, include/lockstep.h
 * ls_golden_save / ls_golden_compare; docs/formats.md, golden files).
 *
 * A v1 golden file pins a config that `lockstep golden check` re-trains. A
 * run of another framework cannot be re-trained here, so a v2 file pins a
 * recorded run instead — lockstep's own or an external one — with its
 * per-tensor hashes, and a later recorded run (the same test, another day,
 * another thread count) is compared with it: the first step that differs,
 * the first tensor there and both losses. This is what a test suite's
 * golden check of a training loop needs (the Python pytest plugin).
 *
 *     # lockstep golden v2
 *     # run external pytorch 1.13.1        ("# run lockstep" for lockstep's own)
 *     # config
 *     lr=0.1                               (the run's config text, line by line)
 *     # tensors: index dtype shape name
 *     0 float32 2x3 w                      (shape "-" for a scalar; the name is the rest of the line)
 *     # steps: step loss_bits loss param_hash traj_hash tensor_hashes
 *     1 3ff0000000000000 1 d03a4df51ff1ace3 c67f9f9432f7e769 6a1e... 90b2...
 *
 * Hashes and loss bits are 16 lowercase hex digits, the loss "%.17g" ("-"
 * for both at a step without a loss: lockstep's step 0); tensor_hashes are
 * one per tensor in index order, or "-" for a step recorded without them.
 * Steps are consecutive. Config lines may hold any byte but a control
 * character, and may not start with '#'. Lines end in '\n' ("\r\n" read).
 */
#include "record/golden.h"
#include "record/runlog.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GR_MAGIC "# lockstep golden v2"
#define GR_RUN "# run "
#define GR_CONFIG "# config"
#define GR_TENSORS "# tensors: index dtype shape name"
#define GR_STEPS "# steps: step loss_bits loss param_hash traj_hash tensor_hashes"

/* A v2 file in memory (or a run read from the record, the same shape). */
typedef struct {
    int external;
    char framework[128];
    char *config;              /* lines each ending in '\n' */
    runlog_tensor *tensors;
    size_t n_tensors;
    ls_step *steps;
    size_t n_steps;
    uint64_t *thash;           /* [n_steps][n_tensors] */
    unsigned char *has_thash;  /* [n_steps] */
} gr_run;

static void gr_free(gr_run *g)
{
    free(g->config);
    free(g->tensors);
    free(g->steps);
    free(g->thash);
    free(g->has_thash);
    memset(g, 0, sizeof *g);
}

/* ---- from the record ------------------------------------------------------ */

static ls_status gr_from_record(gr_run *g, const char *db, const char *run, ls_err *err)
{
    memset(g, 0, sizeof *g);
    if (db == NULL || access(db, F_OK) != 0)
        return ls_fail(err, LS_ENOTFOUND, "%s: no such database", db != NULL ? db : "(null)");
    runlog *r;
    ls_status st = runlog_open(&r, db, err);
    if (st != LS_OK)
        return st;
    int64_t id;
    runlog_run rr;
    memset(&rr, 0, sizeof rr);
    if ((st = runlog_find(r, run, &id, err)) == LS_OK && (st = runlog_get_run(r, id, &rr, err)) == LS_OK &&
        (st = runlog_read_steps(r, id, &g->steps, &g->n_steps, err)) == LS_OK)
        st = runlog_tensors(r, id, &g->tensors, &g->n_tensors, err);
    if (st == LS_OK) {
        g->external = rr.external;
        snprintf(g->framework, sizeof g->framework, "%s", rr.framework);
        size_t cl = strlen(rr.config_text);
        g->config = malloc(cl + 2);
        g->thash = calloc(g->n_steps * (g->n_tensors ? g->n_tensors : 1) + 1, sizeof *g->thash);
        g->has_thash = calloc(g->n_steps + 1, 1);
        if (g->config == NULL || g->thash == NULL || g->has_thash == NULL) {
            st = ls_fail(err, LS_ENOMEM, "out of memory reading run %s", run);
        } else {
            memcpy(g->config, rr.config_text, cl + 1);
            if (cl > 0 && g->config[cl - 1] != '\n')
                memcpy(g->config + cl, "\n", 2);
        }
    }
    for (size_t i = 0; st == LS_OK && g->n_tensors > 0 && i < g->n_steps; i++) {
        uint64_t *h;
        size_t n;
        if ((st = runlog_step_hashes(r, id, g->steps[i].step, &h, &n, err)) != LS_OK)
            break;
        if (n == g->n_tensors) {
            memcpy(g->thash + i * g->n_tensors, h, n * sizeof *h);
            g->has_thash[i] = 1;
        }
        free(h);
    }
    runlog_run_free(&rr);
    runlog_close(r);
    if (st != LS_OK)
        gr_free(g);
    return st;
}

/* ---- writing ----------------------------------------------------------------- */

static ls_status gr_write(FILE *f, const void *ctx)
{
    const gr_run *g = ctx;
    fprintf(f, GR_MAGIC "\n");
    if (g->external)
        fprintf(f, GR_RUN "external %s\n", g->framework);
    else
        fprintf(f, GR_RUN "lockstep\n");
    fprintf(f, GR_CONFIG "\n%s" GR_TENSORS "\n", g->config);
    for (size_t i = 0; i < g->n_tensors; i++)
        fprintf(f, "%zu %s %s %s\n", i, g->tensors[i].dtype, g->tensors[i].shape[0] ? g->tensors[i].shape : "-",
                g->tensors[i].name);
    fprintf(f, GR_STEPS "\n");
    for (size_t i = 0; i < g->n_steps; i++) {
        char row[160];
        golden_format_step(&g->steps[i], row, sizeof row);
        fputs(row, f);
        if (!g->has_thash[i])
            fputs(" -", f);
        for (size_t k = 0; g->has_thash[i] && k < g->n_tensors; k++)
            fprintf(f, " %016" PRIx64, g->thash[i * g->n_tensors + k]);
        fputc('\n', f);
    }
    return ferror(f) ? LS_EIO : LS_OK;
}

/* Config lines and tensor names a v2 file can hold, else LS_EINVAL. */
static ls_status gr_check_writable(const gr_run *g, const char *path, ls_err *err)
{
    for (const char *p = g->config; *p;) {
        size_t l = strcspn(p, "\n");
        if (l > 0 && p[0] == '#')
            return ls_fail(err, LS_EINVAL, "%s: config line '%.40s' starts with '#', which a golden file cannot hold",
                           path, p);
        for (size_t i = 0; i < l; i++)
            if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
                return ls_fail(err, LS_EINVAL, "%s: config line '%.40s' holds a control character", path, p);
        p += l + (p[l] == '\n');
    }
    for (size_t i = 0; i < g->n_tensors; i++)
        for (const char *c = g->tensors[i].name; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return ls_fail(err, LS_EINVAL, "%s: tensor name '%s' holds a control character", path,
                               g->tensors[i].name);
    if (strpbrk(g->framework, "\n\r") != NULL)
        return ls_fail(err, LS_EINVAL, "%s: the framework's name holds a line break", path);
    if (g->n_steps == 0)
        return ls_fail(err, LS_EINVAL, "%s: the run has no steps to pin", path);
    return LS_OK;
}

ls_status ls_golden_save(const char *db, const char *run, const char *path, ls_err *err)
{
    if (path == NULL || path[0] == 0)
        return ls_fail(err, LS_EINVAL, "golden file path is empty");
    gr_run g;
    ls_status st = gr_from_record(&g, db, run, err);
    if (st != LS_OK)
        return st;
    if ((st = gr_check_writable(&g, path, err)) == LS_OK)
        st = golden_save_with(path, gr_write, &g, err);
    gr_free(&g);
    return st;
}

/* ---- reading ----------------------------------------------------------------- */

static int gr_hex16(const char *s, size_t n, uint64_t *v)
{
    if (n != 16)
        return 0;
    uint64_t x = 0;
    for (size_t i = 0; i < 16; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9')
            x = (x << 4) | (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            x = (x << 4) | (uint64_t)(c - 'a' + 10);
        else
            return 0;
    }
    *v = x;
    return 1;
}

static int gr_is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* Appends one element to a malloc'ed array. */
static int gr_push(void **arr, size_t *n, size_t *cap, size_t elem, const void *x)
{
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        void *na = realloc(*arr, nc * elem);
        if (na == NULL)
            return 0;
        *arr = na;
        *cap = nc;
    }
    memcpy((char *)*arr + *n * elem, x, elem);
    (*n)++;
    return 1;
}

#define GR_FAIL(...) do { st = ls_fail(err, LS_EFORMAT, __VA_ARGS__); goto out; } while (0)

static ls_status gr_parse(const char *text, size_t len, const char *what, gr_run *g, ls_err *err)
{
    memset(g, 0, sizeof *g);
    enum { MAGIC, RUN, CONFIG_HEAD, CONFIG, TENSORS, ROWS } sect = MAGIC;
    size_t pos = 0, line = 0, ccap = 0, clen = 0, tcap = 0, scap = 0, hcap = 0, hn = 0, fcap = 0, fn = 0;
    ls_status st = LS_OK;
    while (pos < len) {
        line++;
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        if (nl == NULL)
            GR_FAIL("%s: line %zu: missing newline at the end of the file", what, line);
        size_t n = (size_t)(nl - s);
        pos += n + 1;
        if (n > 0 && s[n - 1] == '\r')
            n--;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
                GR_FAIL("%s: line %zu: control byte 0x%02x at column %zu", what, line, (unsigned)(unsigned char)s[i],
                        i + 1);
        switch (sect) {
        case MAGIC:
            if (!gr_is(s, n, GR_MAGIC))
                GR_FAIL("%s: line %zu: not a v2 golden file (expected '" GR_MAGIC "')", what, line);
            sect = RUN;
            break;
        case RUN:
            if (gr_is(s, n, GR_RUN "lockstep")) {
                g->external = 0;
            } else if (n > strlen(GR_RUN "external ") && memcmp(s, GR_RUN "external ", strlen(GR_RUN "external ")) == 0) {
                size_t o = strlen(GR_RUN "external ");
                g->external = 1;
                snprintf(g->framework, sizeof g->framework, "%.*s", (int)(n - o), s + o);
            } else {
                GR_FAIL("%s: line %zu: expected '# run lockstep' or '# run external FRAMEWORK'", what, line);
            }
            sect = CONFIG_HEAD;
            break;
        case CONFIG_HEAD:
            if (!gr_is(s, n, GR_CONFIG))
                GR_FAIL("%s: line %zu: expected '" GR_CONFIG "'", what, line);
            sect = CONFIG;
            break;
        case CONFIG:
            if (gr_is(s, n, GR_TENSORS)) {
                sect = TENSORS;
                break;
            }
            if (n > 0 && s[0] == '#')
                GR_FAIL("%s: line %zu: expected a config line or '" GR_TENSORS "'", what, line);
            for (size_t i = 0; i <= n; i++) {
                char c = i < n ? s[i] : '\n';
                if (!gr_push((void **)&g->config, &clen, &ccap, 1, &c))
                    GR_FAIL("%s: out of memory", what);
            }
            break;
        case TENSORS: {
            if (gr_is(s, n, GR_STEPS)) {
                sect = ROWS;
                break;
            }
            runlog_tensor t;
            memset(&t, 0, sizeof t);
            char idx[24], dt[16], sh[128];
            int nm = 0;
            char ln[512];   /* the line, terminated: sscanf must not read past it */
            if (n >= sizeof ln)
                GR_FAIL("%s: line %zu: a tensor line of %zu bytes (at most %zu)", what, line, n, sizeof ln - 1);
            memcpy(ln, s, n);
            ln[n] = 0;
            if (sscanf(ln, "%23s %15s %127s %n", idx, dt, sh, &nm) != 3 || nm <= 0 || (size_t)nm >= n ||
                s[nm - 1] != ' ')
                GR_FAIL("%s: line %zu: expected a tensor line 'index dtype shape name'", what, line);
            char want[24];
            snprintf(want, sizeof want, "%zu", g->n_tensors);
            if (strcmp(idx, want) != 0)
                GR_FAIL("%s: line %zu: tensor index '%s', expected %s", what, line, idx, want);
            if (ls_dtype_size(dt) == 0)
                GR_FAIL("%s: line %zu: unknown dtype '%s'", what, line, dt);
            if (n - (size_t)nm > LS_TENSOR_NAME_MAX)
                GR_FAIL("%s: line %zu: tensor name longer than %d bytes", what, line, LS_TENSOR_NAME_MAX);
            snprintf(t.name, sizeof t.name, "%.*s", (int)(n - (size_t)nm), s + nm);
            memcpy(t.dtype, dt, sizeof dt);
            if (strcmp(sh, "-") != 0)
                memcpy(t.shape, sh, sizeof sh);
            for (size_t k = 0; k < g->n_tensors; k++)
                if (strcmp(g->tensors[k].name, t.name) == 0)
                    GR_FAIL("%s: line %zu: tensor '%s' named twice", what, line, t.name);
            if (!gr_push((void **)&g->tensors, &g->n_tensors, &tcap, sizeof t, &t))
                GR_FAIL("%s: out of memory", what);
            break;
        }
        case ROWS: {
            const char *f[5];
            size_t fl[5], nf = 0, start = 0;
            ls_step row;
            memset(&row, 0, sizeof row);
            size_t i = 0;
            for (; i <= n && nf < 5; i++)
                if (i == n || s[i] == ' ') {
                    f[nf] = s + start;
                    fl[nf++] = i - start;
                    start = i + 1;
                }
            if (nf != 5 || i > n)
                GR_FAIL("%s: line %zu: expected 'step loss_bits loss param_hash traj_hash tensor_hashes'", what, line);
            char num[24];
            snprintf(num, sizeof num, "%.*s", (int)(fl[0] < 23 ? fl[0] : 23), f[0]);
            char *end = NULL;
            long long stp = strtoll(num, &end, 10);
            if (fl[0] == 0 || fl[0] > 18 || *end != 0 || stp < 0 || num[0] == '+' || num[0] == '-')
                GR_FAIL("%s: line %zu: step '%s' is not a step number", what, line, num);
            if (g->n_steps > 0 && stp != g->steps[g->n_steps - 1].step + 1)
                GR_FAIL("%s: line %zu: step %lld after step %lld (steps are consecutive)", what, line, stp,
                        (long long)g->steps[g->n_steps - 1].step);
            row.step = stp;
            if (gr_is(f[1], fl[1], "-") && gr_is(f[2], fl[2], "-")) {
                row.has_loss = 0;
            } else if (gr_hex16(f[1], fl[1], &row.loss_bits)) {
                row.has_loss = 1;   /* the loss text is for people; the bits are what count */
            } else {
                GR_FAIL("%s: line %zu: loss_bits '%.*s' is not 16 lowercase hex digits", what, line,
                        (int)(fl[1] < 24 ? fl[1] : 24), f[1]);
            }
            if (!gr_hex16(f[3], fl[3], &row.param_hash) || !gr_hex16(f[4], fl[4], &row.traj_hash))
                GR_FAIL("%s: line %zu: param_hash and traj_hash must be 16 lowercase hex digits", what, line);
            /* The tensor hashes: "-", or one per tensor. */
            const char *rest = s + start;
            size_t rl = start <= n ? n - start : 0;
            unsigned char has = 0;
            if (start > n || rl == 0)
                GR_FAIL("%s: line %zu: no tensor hashes (write '-' for none)", what, line);
            if (!gr_is(rest, rl, "-")) {
                has = 1;
                size_t k = 0, a = 0;
                for (size_t j = 0; j <= rl; j++)
                    if (j == rl || rest[j] == ' ') {
                        uint64_t h;
                        if (k >= g->n_tensors || !gr_hex16(rest + a, j - a, &h))
                            GR_FAIL("%s: line %zu: tensor hash %zu is not 16 lowercase hex digits, or there are "
                                    "more than %zu", what, line, k, g->n_tensors);
                        if (!gr_push((void **)&g->thash, &hn, &hcap, sizeof h, &h))
                            GR_FAIL("%s: out of memory", what);
                        k++;
                        a = j + 1;
                    }
                if (k != g->n_tensors)
                    GR_FAIL("%s: line %zu: %zu tensor hashes, the file names %zu tensors", what, line, k,
                            g->n_tensors);
            } else {
                for (size_t k = 0; k < g->n_tensors; k++) {
                    uint64_t z = 0;
                    if (!gr_push((void **)&g->thash, &hn, &hcap, sizeof z, &z))
                        GR_FAIL("%s: out of memory", what);
                }
            }
            if (!gr_push((void **)&g->steps, &g->n_steps, &scap, sizeof row, &row) ||
                !gr_push((void **)&g->has_thash, &fn, &fcap, 1, &has))
                GR_FAIL("%s: out of memory", what);
            break;
        }
        }
    }
    if (sect != ROWS)
        GR_FAIL("%s: line %zu: unexpected end of file", what, line + 1);
    if (g->n_steps == 0)
        GR_FAIL("%s: no step rows", what);
    {
        char z = 0;
        if (!gr_push((void **)&g->config, &clen, &ccap, 1, &z))
            GR_FAIL("%s: out of memory", what);
    }
out:
    if (st != LS_OK)
        gr_free(g);
    return st;
}

ls_status golden_run_check(const char *text, size_t len, const char *what, size_t *n_steps, size_t *n_tensors,
                           ls_err *err)
{
    gr_run g;
    ls_status st = gr_parse(text, len, what != NULL ? what : "golden", &g, err);
    if (st == LS_OK) {
        *n_steps = g.n_steps;
        *n_tensors = g.n_tensors;
        gr_free(&g);
    }
    return st;
}

/* A v1 file (a config `golden check` re-runs) read as a lockstep run
 * without per-tensor hashes, so a recorded run can be compared with it too. */
static ls_status gr_from_v1(const char *text, size_t len, const char *what, gr_run *g, ls_err *err)
{
    memset(g, 0, sizeof *g);
    golden_file v1;
    ls_status st = golden_parse(text, len, what, &v1, err);
    if (st != LS_OK)
        return st;
    size_t cl = strlen(v1.config_text);
    g->config = malloc(cl + 1);
    g->steps = malloc(v1.n_steps * sizeof *g->steps);
    g->has_thash = calloc(v1.n_steps, 1);
    if (g->config == NULL || g->steps == NULL || g->has_thash == NULL) {
        gr_free(g);
        golden_free(&v1);
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", what);
    }
    memcpy(g->config, v1.config_text, cl + 1);
    memcpy(g->steps, v1.steps, v1.n_steps * sizeof *g->steps);
    g->n_steps = v1.n_steps;
    golden_free(&v1);
    return LS_OK;
}

/* ---- comparing -------------------------------------------------------------- */

/* The first tensor in name order whose hash differs at file step fi / run
 * step ri, or that one side lacks; "" when either has none there. */
static void gr_first_tensor(const gr_run *a, size_t ai, const gr_run *b, size_t bi, char *out, size_t cap)
{
    out[0] = 0;
    if (!a->has_thash[ai] || !b->has_thash[bi])
        return;
    /* Quadratic in the tensor count, once per comparison: small. */
    const char *best = NULL;
    for (int side = 0; side < 2; side++) {
        const gr_run *x = side ? b : a, *y = side ? a : b;
        size_t xi = side ? bi : ai, yi = side ? ai : bi;
        for (size_t k = 0; k < x->n_tensors; k++) {
            const char *nm = x->tensors[k].name;
            size_t m = 0;
            while (m < y->n_tensors && strcmp(y->tensors[m].name, nm) != 0)
                m++;
            int differs = m == y->n_tensors ||
                          x->thash[xi * x->n_tensors + k] != y->thash[yi * y->n_tensors + m];
            if (differs && (best == NULL || strcmp(nm, best) < 0))
                best = nm;
        }
    }
    if (best != NULL)
        snprintf(out, cap, "%s", best);
}

ls_status ls_golden_compare(const char *db, const char *run, const char *path, ls_golden_result *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    out->first_diff = -1;
    char *text = NULL;
    size_t len = 0;
    gr_run file, rec;
    memset(&rec, 0, sizeof rec);
    ls_status st = golden_read_text(path, &text, &len, err);
    if (st != LS_OK)
        return st;
    if (len >= strlen(GR_MAGIC) + 1 && memcmp(text, GR_MAGIC "\n", strlen(GR_MAGIC) + 1) == 0)
        st = gr_parse(text, len, path, &file, err);
    else
        st = gr_from_v1(text, len, path, &file, err);
    free(text);
    if (st != LS_OK)
        return st;
    if ((st = gr_from_record(&rec, db, run, err)) != LS_OK) {
        gr_free(&file);
        return st;
    }
    out->steps = (int64_t)file.n_steps;
    out->config_differs = strcmp(file.config, rec.config) != 0;
    out->equal = 1;
    /* Step by step over the file's steps, then any the run has beyond them. */
    size_t n = file.n_steps > rec.n_steps ? file.n_steps : rec.n_steps;
    for (size_t i = 0; i < n && out->equal; i++) {
        const ls_step *x = i < file.n_steps ? &file.steps[i] : NULL;
        const ls_step *y = i < rec.n_steps ? &rec.steps[i] : NULL;
        if (x != NULL && y != NULL && x->step != y->step) {
            out->equal = 0;
            out->first_diff = x->step < y->step ? x->step : y->step;
            snprintf(out->detail, sizeof out->detail, "the file's steps start at %lld, the run's at %lld",
                     (long long)file.steps[0].step, (long long)rec.steps[0].step);
        } else if (x == NULL || y == NULL) {
            out->equal = 0;
            out->first_diff = x != NULL ? x->step : y->step;
            snprintf(out->detail, sizeof out->detail, "step %lld: %s (the file pins steps %lld..%lld, the run has "
                     "%lld..%lld)", (long long)out->first_diff, x != NULL ? "the run has no such step"
                     : "the file has no such step", (long long)file.steps[0].step,
                     (long long)file.steps[file.n_steps - 1].step, rec.n_steps ? (long long)rec.steps[0].step : -1LL,
                     rec.n_steps ? (long long)rec.steps[rec.n_steps - 1].step : -1LL);
        } else if (x->has_loss != y->has_loss || (x->has_loss && x->loss_bits != y->loss_bits) ||
                   x->param_hash != y->param_hash) {
            out->equal = 0;
            out->first_diff = x->step;
            out->has_loss = x->has_loss && y->has_loss;
            out->loss_file = hash_bits_to_double(x->loss_bits);
            out->loss_run = hash_bits_to_double(y->loss_bits);
            if (x->param_hash != y->param_hash)
                gr_first_tensor(&file, i, &rec, i, out->first_tensor, sizeof out->first_tensor);
            int w = snprintf(out->detail, sizeof out->detail, "step %lld: loss %.17g (%016" PRIx64 ") in the file, "
                             "%.17g (%016" PRIx64 ") in the run; param hash %016" PRIx64 " vs %016" PRIx64,
                             (long long)x->step, out->loss_file, x->loss_bits, out->loss_run, y->loss_bits,
                             x->param_hash, y->param_hash);
            if (out->first_tensor[0] && w > 0 && (size_t)w < sizeof out->detail)
                snprintf(out->detail + w, sizeof out->detail - (size_t)w, "; first tensor %s", out->first_tensor);
        }
    }
    if (out->equal)
        snprintf(out->detail, sizeof out->detail, "identical at steps %lld..%lld", (long long)file.steps[0].step,
                 (long long)file.steps[file.n_steps - 1].step);
    gr_free(&file);
    gr_free(&rec);
    return LS_OK;
}
