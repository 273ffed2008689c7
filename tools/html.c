/* html.c — escaped text, base64 and SVG line charts (html.h). */
#include "tools/html.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "record/runlog.h"

const char HTML_CHART_CSS[] =
    "figure.chart{margin:1em 0}\n"
    "svg.chart{background:#fff;border:1px solid #ccc;max-width:100%;height:auto}\n"
    "svg.chart .frame{fill:none;stroke:#888}\n"
    "svg.chart .grid{stroke:#e4e4e4}\n"
    "svg.chart text{font:12px sans-serif;fill:#333}\n"
    "svg.chart text.t{font-weight:bold}\n"
    "svg.chart .curve{fill:none;stroke-width:1.4;stroke-linejoin:round}\n"
    "svg.chart .marker{stroke-width:1.2;stroke-dasharray:5 4}\n"
    "svg.chart text.marker-label{paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}\n"
    ".c0{stroke:#1f77b4;fill:#1f77b4;background:#1f77b4}.c1{stroke:#d62728;fill:#d62728;background:#d62728}\n"
    ".c2{stroke:#2ca02c;fill:#2ca02c;background:#2ca02c}.c3{stroke:#ff7f0e;fill:#ff7f0e;background:#ff7f0e}\n"
    ".c4{stroke:#9467bd;fill:#9467bd;background:#9467bd}.c5{stroke:#8c564b;fill:#8c564b;background:#8c564b}\n"
    ".c6{stroke:#e377c2;fill:#e377c2;background:#e377c2}.c7{stroke:#17becf;fill:#17becf;background:#17becf}\n"
    "svg.chart .curve.c0,svg.chart .curve.c1,svg.chart .curve.c2,svg.chart .curve.c3,svg.chart .curve.c4,"
    "svg.chart .curve.c5,svg.chart .curve.c6,svg.chart .curve.c7{fill:none}\n"
    ".legend{font:13px sans-serif;margin:.2em 0 0 4.5em}.legend span.sw{display:inline-block;width:1.6em;"
    "height:.25em;vertical-align:middle;margin:0 .4em 0 1em}\n";

void html_textn(FILE *f, const char *s, size_t n)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < n && s[i];) {
        const unsigned char c = (unsigned char)s[i];
        size_t len = 1;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: {
            /* The name rule's decoder (record/runlog.h): bytes that are not
             * UTF-8, and controls, show as U+FFFD; the page stays valid UTF-8. */
            const long cp = runlog_utf8_next((const unsigned char *)s + i, &len);
            if (cp < 0 || i + len > n || (cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7f && cp <= 0x9f)) {
                fputs("&#xFFFD;", f);
                len = cp < 0 || i + len > n ? 1 : len;
            } else {
                fwrite(s + i, 1, len, f);
            }
        }
        }
        i += len;
    }
}

void html_text(FILE *f, const char *s)
{
    if (s != NULL)
        html_textn(f, s, strlen(s));
}

void html_base64(FILE *f, const unsigned char *p, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        const unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0u) |
                           (i + 2 < n ? (unsigned)p[i + 2] : 0u);
        fputc(A[v >> 18 & 63], f);
        fputc(A[v >> 12 & 63], f);
        fputc(i + 1 < n ? A[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? A[v & 63] : '=', f);
    }
}

static size_t column_of(int64_t x, int64_t x0, int64_t x1, size_t w)
{
    /* (x − x0) · w / (x1 − x0 + 1) in exact integers while they fit (any
     * run's step count times a chart's width does), else in floating point. */
    const uint64_t d = (uint64_t)x - (uint64_t)x0, span = (uint64_t)x1 - (uint64_t)x0 + 1;
    size_t c;
    if (span != 0 && d <= UINT64_MAX / (w ? w : 1))
        c = (size_t)(d * w / span);
    else
        c = (size_t)((double)d / ((double)span + (span == 0 ? 18446744073709551616.0 : 0.0)) * (double)w);
    return c < w ? c : w - 1;
}

void html_downsample(const int64_t *x, const double *y, size_t n, int64_t x0, int64_t x1, size_t w,
                     html_column *cols)
{
    memset(cols, 0, w * sizeof *cols);
    if (w == 0 || x1 < x0)
        return;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(y[i]) || x[i] < x0 || x[i] > x1)
            continue;
        html_column *c = &cols[column_of(x[i], x0, x1, w)];
        if (c->n++ == 0) {
            c->lo = c->hi = c->first = y[i];
        } else {
            c->lo = y[i] < c->lo ? y[i] : c->lo;
            c->hi = y[i] > c->hi ? y[i] : c->hi;
        }
        c->last = y[i];
    }
}

typedef struct {
    int logy;
    double flo, fhi;
    int64_t x0, x1;
} chart_scale;

static double ypix(const chart_scale *k, double v)
{
    const double fv = k->logy ? log10(v) : v;
    return HTML_CHART_TOP + (k->fhi - fv) / (k->fhi - k->flo) * (HTML_CHART_BOTTOM - HTML_CHART_TOP);
}

static double xpix(const chart_scale *k, int64_t x)
{
    return HTML_CHART_LEFT + (double)column_of(x, k->x0, k->x1, HTML_CHART_COLS) + 0.5;
}

/* A round step near range / 5: 1, 2 or 5 times a power of ten. */
static double nice_step(double range)
{
    const double raw = range / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

static void y_ticks(FILE *f, const chart_scale *k)
{
    double t0, dt;
    if (k->logy) {
        dt = ceil((floor(k->fhi) - ceil(k->flo) + 1) / 8);
        t0 = ceil(k->flo);
        if (dt < 1)
            dt = 1;
    } else {
        dt = nice_step(k->fhi - k->flo);
        t0 = ceil(k->flo / dt) * dt;
    }
    /* Log axes spanning few decades also get 2 and 5 times each power of ten. */
    const int fine = k->logy && k->fhi - k->flo <= 3;
    for (double t = fine ? floor(k->flo) : t0; t <= k->fhi + 1e-9 * fabs(k->fhi - k->flo); t += dt)
        for (int mult = 1; mult <= (fine ? 5 : 1); mult += mult == 1 ? 1 : 3) {
        const double v = k->logy ? mult * pow(10, t) : t;
        if (k->logy && (log10(v) < k->flo - 1e-12 || log10(v) > k->fhi + 1e-12))
            continue;
        const double y = ypix(k, v);
        fprintf(f, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>", HTML_CHART_LEFT,
                HTML_CHART_RIGHT, y, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.6g</text>\n", HTML_CHART_LEFT - 6, y + 4,
                fabs(v) < 1e-12 * (fabs(k->fhi) + fabs(k->flo)) ? 0.0 : v);
        }
}

static void x_ticks(FILE *f, const chart_scale *k)
{
    const double range = (double)(k->x1 - k->x0);
    double dt = range > 0 ? nice_step(range) : 1;
    if (dt < 1)
        dt = 1;
    for (double t = ceil((double)k->x0 / dt) * dt; t <= (double)k->x1; t += dt) {
        const double x = xpix(k, (int64_t)t);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>", x, x, HTML_CHART_TOP,
                HTML_CHART_BOTTOM);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%lld</text>\n", x, HTML_CHART_BOTTOM + 16,
                (long long)t);
    }
}

static void curve(FILE *f, const chart_scale *k, const html_series *s, size_t idx, html_column *cols)
{
    html_downsample(s->x, s->y, s->n, k->x0, k->x1, HTML_CHART_COLS, cols);
    fprintf(f, "<path class=\"curve c%zu\" data-series=\"", idx % HTML_CHART_COLOURS);
    html_text(f, s->label);
    fputs("\" d=\"", f);
    int started = 0;
    for (size_t c = 0; c < HTML_CHART_COLS; c++) {
        if (cols[c].n == 0)
            continue;
        const double x = HTML_CHART_LEFT + (double)c + 0.5;
        const double v[4] = { cols[c].first, cols[c].lo, cols[c].hi, cols[c].last };
        double prev = NAN;
        for (int j = 0; j < 4; j++) {
            const double y = ypix(k, v[j]);
            if (y == prev)
                continue;
            fprintf(f, "%c%.1f,%.1f", started ? 'L' : 'M', x, y);
            started = 1;
            prev = y;
        }
    }
    fputs("\"/>\n", f);
    size_t finite = 0;
    for (size_t i = 0; i < s->n; i++)
        finite += isfinite(s->y[i]) != 0;
    if (finite > 60)
        return;
    for (size_t i = 0; i < s->n; i++)
        if (isfinite(s->y[i]))
            fprintf(f, "<circle class=\"dot c%zu\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"><title>step %lld: %.6g</title>"
                    "</circle>\n", idx % HTML_CHART_COLOURS, xpix(k, s->x[i]), ypix(k, s->y[i]),
                    (long long)s->x[i], s->y[i]);
}

void html_chart(FILE *f, const char *title, const char *ylabel, int allow_log, const html_series *s, size_t ns,
                const html_marker *m, size_t nm)
{
    chart_scale k = { 0, INFINITY, -INFINITY, INT64_MAX, INT64_MIN };
    int positive = 1;
    for (size_t j = 0; j < ns; j++)
        for (size_t i = 0; i < s[j].n; i++) {
            const double v = s[j].y[i];
            if (!isfinite(v))
                continue;
            k.x0 = s[j].x[i] < k.x0 ? s[j].x[i] : k.x0;
            k.x1 = s[j].x[i] > k.x1 ? s[j].x[i] : k.x1;
            k.flo = v < k.flo ? v : k.flo;
            k.fhi = v > k.fhi ? v : k.fhi;
            positive &= v > 0;
        }
    if (k.x1 < k.x0) {
        fputs("<p class=\"note\">", f);
        html_text(f, title);
        fputs(": no finite value to plot.</p>\n", f);
        return;
    }
    if (k.x0 > 0)
        k.x0 = 0;   /* steps: the axis starts at the start of training */
    k.logy = allow_log && positive && k.fhi / k.flo >= 20;
    if (k.logy) {
        k.flo = log10(k.flo);
        k.fhi = log10(k.fhi);
    }
    if (!(k.fhi > k.flo)) {
        const double d = k.logy ? 0.5 : fabs(k.flo) > 0 ? fabs(k.flo) * 0.05 : 1;
        k.flo -= d;
        k.fhi += d;
    }
    fprintf(f, "<figure class=\"chart\"><svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
            "width=\"%d\" height=\"%d\" role=\"img\" data-x0=\"%lld\" data-x1=\"%lld\" data-left=\"%d\" "
            "data-right=\"%d\" data-top=\"%d\" data-bottom=\"%d\" data-log=\"%d\" aria-label=\"",
            HTML_CHART_W, HTML_CHART_H, HTML_CHART_W, HTML_CHART_H, (long long)k.x0, (long long)k.x1, HTML_CHART_LEFT,
            HTML_CHART_RIGHT, HTML_CHART_TOP, HTML_CHART_BOTTOM, k.logy);
    html_text(f, title);
    fputs("\"><title>", f);
    html_text(f, title);
    fputs("</title>\n", f);
    y_ticks(f, &k);
    x_ticks(f, &k);
    fprintf(f, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", HTML_CHART_LEFT,
            HTML_CHART_TOP, HTML_CHART_RIGHT - HTML_CHART_LEFT, HTML_CHART_BOTTOM - HTML_CHART_TOP);
    fprintf(f, "<text class=\"t\" x=\"%d\" y=\"%d\">", HTML_CHART_LEFT, HTML_CHART_TOP - 8);
    html_text(f, title);
    fprintf(f, "%s</text>\n", k.logy ? " (log scale)" : "");
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
            (HTML_CHART_LEFT + HTML_CHART_RIGHT) / 2, HTML_CHART_BOTTOM + 34);
    fprintf(f, "<text x=\"14\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 14 %d)\">",
            (HTML_CHART_TOP + HTML_CHART_BOTTOM) / 2, (HTML_CHART_TOP + HTML_CHART_BOTTOM) / 2);
    html_text(f, ylabel);
    fputs("</text>\n", f);
    html_column *cols = malloc(HTML_CHART_COLS * sizeof *cols);
    for (size_t j = 0; j < ns && cols != NULL; j++)
        curve(f, &k, &s[j], j, cols);
    free(cols);
    for (size_t i = 0; i < nm; i++) {
        if (m[i].x < k.x0 || m[i].x > k.x1)
            continue;
        const double x = xpix(&k, m[i].x);
        fprintf(f, "<line class=\"marker c%zu\" data-step=\"%lld\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>",
                m[i].series % HTML_CHART_COLOURS, (long long)m[i].x, x, x, HTML_CHART_TOP, HTML_CHART_BOTTOM);
        fprintf(f, "<text class=\"marker-label\" x=\"%.1f\" y=\"%d\"%s>", x > HTML_CHART_RIGHT - 200 ? x - 4 : x + 4,
                HTML_CHART_TOP + 14 + 14 * (int)(i % 8), x > HTML_CHART_RIGHT - 200 ? " text-anchor=\"end\"" : "");
        html_text(f, m[i].label);
        fputs("</text>\n", f);
    }
    fputs("</svg><div class=\"legend\">", f);
    for (size_t j = 0; j < ns; j++) {
        fprintf(f, "<span class=\"sw c%zu\"></span>", j % HTML_CHART_COLOURS);
        html_text(f, s[j].label);
    }
    fputs("</div></figure>\n", f);
}
