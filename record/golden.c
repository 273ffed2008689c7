/* golden.c — reading and writing golden files (docs/formats.md, golden files; format in golden.h).
 *
 * A golden file pins a reference run, so the reader is strict: anything that
 * golden_write would not have produced is refused with the line number and the
 * problem, and a file that parses is one whose rows mean exactly one thing.
 * The parser never reads outside [text, text + len) and needs no terminating
 * NUL, because it is fuzzed and because files are read as bytes.
 *
 * Rules beyond the header comment of golden.h, each chosen for strictness:
 *   - every line, the last one included, ends in '\n' (a missing final
 *     newline is refused: it is how a cut-off file looks); "\r\n" counts as
 *     '\n', because a checkout or an editor on Windows turns one into the
 *     other and the rows still mean the same (golden_write writes '\n');
 *   - lines hold printable ASCII only (0x20..0x7e): no NUL, tab, nor a CR
 *     anywhere but just before the '\n';
 *   - config lines are key=value with key [a-z0-9_]+ and the keys in strictly
 *     increasing byte order (the canonical config is sorted, keys are unique);
 *     the value may be any printable text, empty included;
 *   - a row is exactly 5 fields separated by single spaces; step 0 has "-"
 *     for loss_bits and loss, every other step has both; the loss must be
 *     read by strtod whole and give exactly loss_bits (any NaN bits need a
 *     NaN text), so the two columns cannot disagree.
 * Parsing runs twice over the text: a first pass validates and counts, the
 * second fills one allocation holding the steps and the config text.
 */
#include "record/golden.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

#define GOLDEN_MAGIC "# lockstep golden v1"
/* Version 1, the files `golden check/update` re-run: still read and written
 * here; version 2 (LS_GOLDEN_FORMAT) pins a recorded run (record/golden_run.c). */
_Static_assert(LS_GOLDEN_FORMAT == 2, "the golden formats in include/lockstep.h are those record/golden*.c know");
#define GOLDEN_VERSION_PREFIX "# lockstep golden v"
#define GOLDEN_CONFIG "# config"
#define GOLDEN_STEPS "# steps: step loss_bits loss param_hash traj_hash"
#define GOLDEN_SOURCES "# sources"
#define GOLDEN_LOSS_MAX 64   /* longest loss text accepted; %.17g needs at most 24 */
#define GOLDEN_FILE_MAX ((size_t)1 << 30)

static int golden_is_nan_bits(uint64_t u)
{
    return (u & UINT64_C(0x7ff0000000000000)) == UINT64_C(0x7ff0000000000000) &&
           (u & UINT64_C(0x000fffffffffffff)) != 0;
}

static double golden_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static uint64_t golden_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* "WHAT: line N: problem" */
__attribute__((format(printf, 5, 6)))
static ls_status golden_fail(ls_err *err, ls_status st, const char *what, size_t line, const char *fmt, ...)
{
    char problem[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    return ls_fail(err, st, "%s: line %zu: %s", what, line, problem);
}

static int line_is(const char *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    return n == m && memcmp(s, lit, m) == 0;
}

/* Index of the first byte outside printable ASCII, or n. */
static size_t first_unprintable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e)
            return i;
    }
    return n;
}

static int is_hex16(const char *s, size_t n)
{
    if (n != 16)
        return 0;
    for (size_t i = 0; i < 16; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
    }
    return 1;
}

static uint64_t parse_hex16(const char *s)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 16; i++) {
        char c = s[i];
        v = (v << 4) | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return v;
}

/* Length of the key of a config line, or 0 when the line is not key=value. */
static size_t config_key_len(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
        i++;
    if (i == 0 || i == n || s[i] != '=')
        return 0;
    return i;
}

/* Byte order of two keys; a proper prefix sorts first (as strcmp). */
static int key_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t m = an < bn ? an : bn;
    int c = memcmp(a, b, m);
    if (c != 0)
        return c;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

/* Checks one config line (without its '\n'); prev_key/prev_len is the key of
 * the line before (prev_len 0 for the first). Returns NULL or a problem. */
static const char *check_config_line(const char *s, size_t n, const char *prev_key, size_t prev_len,
                                     size_t *key_len)
{
    if (n > 0 && s[0] == '#')
        return "expected a key=value config line or '" GOLDEN_STEPS "'";
    size_t kl = config_key_len(s, n);
    if (kl == 0)
        return "expected a config line key=value with the key made of a-z 0-9 _";
    if (prev_len > 0 && key_cmp(prev_key, prev_len, s, kl) >= 0)
        return "config keys must be unique and sorted";
    *key_len = kl;
    return NULL;
}

/* One row of the steps table. On success fills *out (when not NULL). */
static ls_status parse_row(const char *s, size_t n, size_t index, const char *what, size_t line,
                           ls_step *out, ls_err *err)
{
    const char *f[5];
    size_t fl[5];
    size_t nf = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == ' ') {
            if (i == start)
                return golden_fail(err, LS_EFORMAT, what, line,
                                   "empty field (fields are separated by single spaces)");
            if (nf == 5)
                return golden_fail(err, LS_EFORMAT, what, line, "more than 5 fields in a step row");
            f[nf] = s + start;
            fl[nf] = i - start;
            nf++;
            start = i + 1;
        }
    }
    if (nf != 5)
        return golden_fail(err, LS_EFORMAT, what, line,
                           "%zu fields in a step row, expected 5: step loss_bits loss param_hash traj_hash", nf);

    char want[32];
    int wl = snprintf(want, sizeof want, "%zu", index);
    if (wl < 0 || fl[0] != (size_t)wl || memcmp(f[0], want, fl[0]) != 0)
        return golden_fail(err, LS_EFORMAT, what, line, "step '%.*s', expected %zu (steps are 0, 1, 2, ...)",
                           (int)(fl[0] < 24 ? fl[0] : 24), f[0], index);

    ls_step st;
    memset(&st, 0, sizeof st);
    st.step = (int64_t)index;
    if (index == 0) {
        if (!line_is(f[1], fl[1], "-") || !line_is(f[2], fl[2], "-"))
            return golden_fail(err, LS_EFORMAT, what, line, "step 0 has no loss: loss_bits and loss must be '-'");
    } else {
        if (!is_hex16(f[1], fl[1]))
            return golden_fail(err, LS_EFORMAT, what, line, "loss_bits '%.*s' is not 16 lowercase hex digits",
                               (int)(fl[1] < 24 ? fl[1] : 24), f[1]);
        st.has_loss = 1;
        st.loss_bits = parse_hex16(f[1]);
        if (fl[2] >= GOLDEN_LOSS_MAX)
            return golden_fail(err, LS_EFORMAT, what, line, "loss is %zu characters long", fl[2]);
        char buf[GOLDEN_LOSS_MAX];
        memcpy(buf, f[2], fl[2]);
        buf[fl[2]] = 0;
        char *end = NULL;
        /* Fields hold no whitespace, so strtod cannot skip any: the whole
         * field must be the number. */
        double v = strtod(buf, &end);
        if (end != buf + fl[2])
            return golden_fail(err, LS_EFORMAT, what, line, "loss '%s' is not a number", buf);
        int ok = golden_is_nan_bits(st.loss_bits) ? v != v : golden_bits(v) == st.loss_bits;
        if (!ok)
            return golden_fail(err, LS_EFORMAT, what, line, "loss '%s' does not have the bits %016" PRIx64,
                               buf, st.loss_bits);
    }
    if (!is_hex16(f[3], fl[3]))
        return golden_fail(err, LS_EFORMAT, what, line, "param_hash '%.*s' is not 16 lowercase hex digits",
                           (int)(fl[3] < 24 ? fl[3] : 24), f[3]);
    if (!is_hex16(f[4], fl[4]))
        return golden_fail(err, LS_EFORMAT, what, line, "traj_hash '%.*s' is not 16 lowercase hex digits",
                           (int)(fl[4] < 24 ? fl[4] : 24), f[4]);
    st.param_hash = parse_hex16(f[3]);
    st.traj_hash = parse_hex16(f[4]);
    if (out != NULL)
        *out = st;
    return LS_OK;
}

enum { SECT_MAGIC, SECT_CONFIG_HEAD, SECT_CONFIG, SECT_SOURCES, SECT_ROWS };

/* One pass over the text. With steps == NULL it only validates and counts;
 * otherwise it also fills steps[], cfg and src (which then have room enough). */
static ls_status parse_pass(const char *text, size_t len, const char *what, ls_step *steps, char *cfg, char *src,
                            size_t *n_steps, size_t *cfg_len, size_t *src_len, ls_err *err)
{
    int sect = SECT_MAGIC;
    size_t pos = 0, line = 0, rows = 0, clen = 0, slen = 0;
    const char *prev_key = NULL;
    size_t prev_len = 0;
    if (len == 0)
        return golden_fail(err, LS_EFORMAT, what, 1, "empty file, expected '" GOLDEN_MAGIC "'");
    while (pos < len) {
        line++;
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - s) : len - pos;
        const size_t advance = n + 1;
        if (n > 0 && s[n - 1] == '\r')
            n--;   /* a CRLF line end; a cut-off last line then says so below */

        if (sect == SECT_MAGIC) {
            if (!line_is(s, n, GOLDEN_MAGIC)) {
                size_t pl = strlen(GOLDEN_VERSION_PREFIX);
                if (n > pl && memcmp(s, GOLDEN_VERSION_PREFIX, pl) == 0 && first_unprintable(s, n) == n)
                    return golden_fail(err, LS_EFORMAT, what, line,
                                       "unsupported golden version '%.*s' (this reader knows v1; a v2 "
                                       "file pins a recorded run: lockstep golden compare FILE RUN)",
                                       (int)(n - pl < 32 ? n - pl : 32), s + pl);
                return golden_fail(err, LS_EFORMAT, what, line,
                                   "not a lockstep golden file (expected '" GOLDEN_MAGIC "')");
            }
        }
        size_t bad = first_unprintable(s, n);
        if (bad < n)
            return golden_fail(err, LS_EFORMAT, what, line, "byte 0x%02x at column %zu is not printable ASCII",
                               (unsigned)(unsigned char)s[bad], bad + 1);
        if (nl == NULL)
            return golden_fail(err, LS_EFORMAT, what, line, "missing newline at the end of the file");

        switch (sect) {
        case SECT_MAGIC:
            sect = SECT_CONFIG_HEAD;
            break;
        case SECT_CONFIG_HEAD:
            if (!line_is(s, n, GOLDEN_CONFIG))
                return golden_fail(err, LS_EFORMAT, what, line, "expected '" GOLDEN_CONFIG "'");
            sect = SECT_CONFIG;
            break;
        case SECT_SOURCES: {
            if (line_is(s, n, GOLDEN_STEPS)) {
                sect = SECT_ROWS;
                break;
            }
            size_t kl = 0;
            const char *problem = check_config_line(s, n, NULL, 0, &kl);
            if (problem != NULL)
                return golden_fail(err, LS_EFORMAT, what, line, "source: %s", problem);
            if (src != NULL) {
                memcpy(src + slen, s, n);
                src[slen + n] = '\n';
            }
            slen += n + 1;
            break;
        }
        case SECT_CONFIG: {
            if (line_is(s, n, GOLDEN_STEPS)) {
                sect = SECT_ROWS;
                break;
            }
            if (line_is(s, n, GOLDEN_SOURCES)) {
                sect = SECT_SOURCES;
                break;
            }
            size_t kl = 0;
            const char *problem = check_config_line(s, n, prev_key, prev_len, &kl);
            if (problem != NULL)
                return golden_fail(err, LS_EFORMAT, what, line, "%s", problem);
            prev_key = s;
            prev_len = kl;
            if (cfg != NULL) {
                memcpy(cfg + clen, s, n);
                cfg[clen + n] = '\n';
            }
            clen += n + 1;
            break;
        }
        default: {
            ls_status st = parse_row(s, n, rows, what, line, steps != NULL ? &steps[rows] : NULL, err);
            if (st != LS_OK)
                return st;
            rows++;
            break;
        }
        }
        pos += advance;
    }
    if (sect != SECT_ROWS)
        return golden_fail(err, LS_EFORMAT, what, line + 1, "unexpected end of file: expected '%s'",
                           sect == SECT_CONFIG_HEAD ? GOLDEN_CONFIG : GOLDEN_STEPS);
    if (rows == 0)
        return golden_fail(err, LS_EFORMAT, what, line + 1, "no step rows (step 0 is required)");
    *n_steps = rows;
    *cfg_len = clen;
    *src_len = slen;
    return LS_OK;
}

ls_status golden_parse(const char *text, size_t len, const char *what, golden_file *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    if (what == NULL)
        what = "golden";
    if (text == NULL && len > 0)
        return ls_fail(err, LS_EINVAL, "%s: no text", what);
    size_t n_steps = 0, cfg_len = 0, src_len = 0;
    ls_status st = parse_pass(text, len, what, NULL, NULL, NULL, &n_steps, &cfg_len, &src_len, err);
    if (st != LS_OK)
        return st;
    /* All are bounded by len, so the size cannot overflow for any buffer
     * that exists; checked anyway. */
    if (n_steps > (SIZE_MAX - cfg_len - src_len - 2) / sizeof(ls_step))
        return ls_fail(err, LS_ENOMEM, "%s: too many steps", what);
    void *mem = malloc(n_steps * sizeof(ls_step) + cfg_len + 1 + src_len + 1);
    if (mem == NULL)
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", what);
    ls_step *steps = mem;
    char *cfg = (char *)(steps + n_steps);
    char *src = cfg + cfg_len + 1;
    st = parse_pass(text, len, what, steps, cfg, src, &n_steps, &cfg_len, &src_len, err);
    if (st != LS_OK) {   /* cannot happen: same text, same rules */
        free(mem);
        return st;
    }
    cfg[cfg_len] = 0;
    src[src_len] = 0;
    out->config_text = cfg;
    out->source_text = src;
    out->steps = steps;
    out->n_steps = n_steps;
    out->mem = mem;
    return LS_OK;
}

ls_status golden_read(const char *path, golden_file *out, ls_err *err)
{
    memset(out, 0, sizeof *out);
    char *buf = NULL;
    size_t len = 0;
    ls_status st = golden_read_text(path, &buf, &len, err);
    if (st == LS_OK)
        st = golden_parse(buf, len, path, out, err);
    free(buf);
    return st;
}

ls_status golden_read_text(const char *path, char **text, size_t *text_len, ls_err *err)
{
    *text = NULL;
    *text_len = 0;
    /* Opened without blocking and looked at before reading: a FIFO would
     * wait forever for a writer, a directory or a device is no golden file. */
    int fd;
    size_t size;
    ls_status open_st = file_open_regular(path, &fd, &size, err);
    if (open_st != LS_OK)
        return open_st;
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        int e = errno;
        close(fd);
        return ls_fail(err, LS_EIO, "%s: %s", path, strerror(e));
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ls_status st = LS_OK;
    if (buf == NULL)
        st = ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
    while (st == LS_OK) {
        if (len == cap) {
            if (cap >= GOLDEN_FILE_MAX) {
                st = ls_fail(err, LS_EFORMAT, "%s: larger than %zu bytes", path, GOLDEN_FILE_MAX);
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                st = ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                st = ls_fail(err, LS_EIO, "%s: read error: %s", path, strerror(errno != 0 ? errno : EIO));
            break;
        }
    }
    fclose(f);
    if (st != LS_OK) {
        free(buf);
        return st;
    }
    *text = buf;
    *text_len = len;
    return LS_OK;
}

void golden_free(golden_file *g)
{
    if (g == NULL)
        return;
    free(g->mem);
    memset(g, 0, sizeof *g);
}

void golden_format_step(const ls_step *s, char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return;
    if (!s->has_loss) {
        snprintf(buf, len, "%" PRId64 " - - %016" PRIx64 " %016" PRIx64, s->step, s->param_hash,
                 s->traj_hash);
        return;
    }
    double v = golden_double(s->loss_bits);
    char loss[GOLDEN_LOSS_MAX];
    /* glibc prints a NaN with the sign bit set as "-nan"; the format has one
     * spelling, and the bits column keeps the payload. */
    if (v != v)
        snprintf(loss, sizeof loss, "nan");
    else
        snprintf(loss, sizeof loss, "%.17g", v);
    snprintf(buf, len, "%" PRId64 " %016" PRIx64 " %s %016" PRIx64 " %016" PRIx64, s->step, s->loss_bits,
             loss, s->param_hash, s->traj_hash);
}

/* Source lines: key=value each, any order. */
static ls_status golden_check_sources(const char *source_text, const char *what, ls_err *err)
{
    const size_t slen = strlen(source_text);
    if (slen > 0 && source_text[slen - 1] != '\n')
        return ls_fail(err, LS_EINVAL, "%s: source text does not end in a newline", what);
    for (size_t pos = 0, line = 1; pos < slen; line++) {
        const char *s = source_text + pos;
        size_t n = (size_t)((const char *)memchr(s, '\n', slen - pos) - s);
        size_t kl = 0;
        const char *problem = first_unprintable(s, n) < n ? "a byte that is not printable ASCII"
                                                           : check_config_line(s, n, NULL, 0, &kl);
        if (problem == NULL && (line_is(s, n, GOLDEN_STEPS) || line_is(s, n, GOLDEN_SOURCES)))
            problem = "a section header";
        if (problem != NULL)
            return ls_fail(err, LS_EINVAL, "%s: source line %zu: %s", what, line, problem);
        pos += n + 1;
    }
    return LS_OK;
}

/* What golden_write refuses: anything golden_parse would refuse. */
static ls_status golden_check_input(const char *config_text, const ls_step *steps, size_t n_steps,
                                    const char *what, ls_err *err)
{
    if (n_steps == 0 || steps == NULL)
        return ls_fail(err, LS_EINVAL, "%s: no steps (step 0 is required)", what);
    size_t clen = strlen(config_text);
    if (clen > 0 && config_text[clen - 1] != '\n')
        return ls_fail(err, LS_EINVAL, "%s: config text does not end in a newline", what);
    const char *prev_key = NULL;
    size_t prev_len = 0;
    for (size_t pos = 0, line = 1; pos < clen; line++) {
        const char *s = config_text + pos;
        size_t n = (size_t)((const char *)memchr(s, '\n', clen - pos) - s);
        size_t kl = 0;
        const char *problem = first_unprintable(s, n) < n ? "a byte that is not printable ASCII"
                                                           : check_config_line(s, n, prev_key, prev_len, &kl);
        if (problem == NULL && line_is(s, n, GOLDEN_STEPS))
            problem = "the steps header";
        if (problem != NULL)
            return ls_fail(err, LS_EINVAL, "%s: config line %zu: %s", what, line, problem);
        prev_key = s;
        prev_len = kl;
        pos += n + 1;
    }
    for (size_t i = 0; i < n_steps; i++) {
        if (steps[i].step != (int64_t)i)
            return ls_fail(err, LS_EINVAL, "%s: row %zu has step %" PRId64, what, i, steps[i].step);
        if ((steps[i].has_loss != 0) != (i > 0))
            return ls_fail(err, LS_EINVAL, "%s: step %zu %s a loss", what, i, i > 0 ? "lacks" : "has");
    }
    return LS_OK;
}

static ls_status golden_write_sources(FILE *f, const char *config_text, const char *source_text,
                                     const ls_step *steps, size_t n_steps)
{
    if (config_text == NULL)
        config_text = "";
    if (source_text == NULL)
        source_text = "";
    ls_status st = golden_check_input(config_text, steps, n_steps, "golden", NULL);
    if (st == LS_OK)
        st = golden_check_sources(source_text, "golden", NULL);
    if (st != LS_OK)
        return st;
    fputs(GOLDEN_MAGIC "\n" GOLDEN_CONFIG "\n", f);
    fputs(config_text, f);
    if (source_text[0] != '\0') {
        fputs(GOLDEN_SOURCES "\n", f);
        fputs(source_text, f);
    }
    fputs(GOLDEN_STEPS "\n", f);
    char row[160];
    for (size_t i = 0; i < n_steps; i++) {
        golden_format_step(&steps[i], row, sizeof row);
        fputs(row, f);
        fputc('\n', f);
    }
    return ferror(f) ? LS_EIO : LS_OK;
}

ls_status golden_write(FILE *f, const char *config_text, const ls_step *steps, size_t n_steps)
{
    return golden_write_sources(f, config_text, NULL, steps, n_steps);
}

typedef struct {
    const char *config_text, *source_text;
    const ls_step *steps;
    size_t n_steps;
} golden_v1_ctx;

static ls_status golden_write_v1(FILE *f, const void *ctx)
{
    const golden_v1_ctx *c = ctx;
    return golden_write_sources(f, c->config_text, c->source_text, c->steps, c->n_steps);
}

ls_status golden_save_sources(const char *path, const char *config_text, const char *source_text,
                              const ls_step *steps, size_t n_steps, ls_err *err)
{
    if (config_text == NULL)
        config_text = "";
    if (source_text == NULL)
        source_text = "";
    ls_status st = golden_check_input(config_text, steps, n_steps, path, err);
    if (st == LS_OK)
        st = golden_check_sources(source_text, path, err);
    if (st != LS_OK)
        return st;
    golden_v1_ctx c = { config_text, source_text, steps, n_steps };
    return golden_save_with(path, golden_write_v1, &c, err);
}

ls_status golden_save(const char *path, const char *config_text, const ls_step *steps, size_t n_steps,
                      ls_err *err)
{
    return golden_save_sources(path, config_text, NULL, steps, n_steps, err);
}

ls_status golden_save_with(const char *path, ls_status (*write)(FILE *f, const void *ctx), const void *ctx,
                           ls_err *err)
{
    ls_status st = LS_OK;
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    if (tmp == NULL)
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
    snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());

    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        st = ls_fail(err, LS_EIO, "%s: %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    /* Write, flush, fsync, then rename: a reader sees the old file or the
     * whole new one, never a part. */
    int e = 0;
    errno = 0;
    if (write(f, ctx) != LS_OK || fflush(f) != 0 || fsync(fileno(f)) != 0)
        e = errno != 0 ? errno : EIO;
    if (fclose(f) != 0 && e == 0)
        e = errno != 0 ? errno : EIO;
    if (e == 0 && rename(tmp, path) != 0)
        e = errno != 0 ? errno : EIO;
    if (e != 0) {
        unlink(tmp);
        st = ls_fail(err, LS_EIO, "%s: %s", path, strerror(e));
        free(tmp);
        return st;
    }
    free(tmp);

    /* Make the rename itself durable; best effort (some file systems refuse
     * fsync on a directory, and the data is already safe). */
    char *dir = strdup(path);
    if (dir != NULL) {
        char *slash = strrchr(dir, '/');
        const char *d = ".";
        if (slash == dir)
            d = "/";
        else if (slash != NULL) {
            *slash = 0;
            d = dir;
        }
        int fd = open(d, O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
            (void)fsync(fd);
            close(fd);
        }
        free(dir);
    }
    return LS_OK;
}
