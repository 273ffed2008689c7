/* html.h — pieces of a self-contained HTML page: escaped text, base64 for
 * data: URIs, and line charts as inline SVG (no script, no external file).
 *
 * Charts of long series (a million steps) are drawn from one column per
 * pixel: html_downsample keeps each column's minimum, maximum, first and
 * last value, so a one-step spike survives into the picture while the path
 * stays a few kilobytes whatever the run's length. Used by `lockstep report`.
 */
#ifndef LS_HTML_H
#define LS_HTML_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* s as HTML text, safe in element content and in quoted attribute values:
 * & < > " ' as entities; C0 controls other than tab and newline, DEL, C1
 * controls and each byte that is not part of valid UTF-8 as U+FFFD, so the
 * page is valid UTF-8 whatever an older record holds. NULL writes nothing. */
void html_text(FILE *f, const char *s);
/* The first n bytes of s, the same way. */
void html_textn(FILE *f, const char *s, size_t n);
/* p[n] as base64 (RFC 4648, with padding), for a data: URI. */
void html_base64(FILE *f, const unsigned char *p, size_t n);

/* One pixel column of a downsampled series. */
typedef struct {
    double lo, hi;          /* least and greatest value in the column */
    double first, last;     /* the column's first and last value in x order */
    size_t n;               /* values in the column; 0: none */
} html_column;

/* Puts each (x[i], y[i]) with finite y and x0 <= x[i] <= x1 into column
 * floor((x - x0) · w / (x1 − x0 + 1)) of cols[w]; x in ascending order. */
void html_downsample(const int64_t *x, const double *y, size_t n, int64_t x0, int64_t x1, size_t w,
                     html_column *cols);

typedef struct {
    const char *label;      /* the legend's text (escaped) */
    const int64_t *x;       /* ascending */
    const double *y;        /* non-finite values are left out */
    size_t n;
} html_series;

/* A vertical line at x in the colour of series `series`, with a label. */
typedef struct {
    int64_t x;
    size_t series;
    const char *label;
} html_marker;

/* Plot geometry (pixels of the SVG's user space); the SVG also carries
 * them as data- attributes, for tests and readers of the DOM. */
#define HTML_CHART_W 880
#define HTML_CHART_H 330
#define HTML_CHART_LEFT 78
#define HTML_CHART_RIGHT 860
#define HTML_CHART_TOP 24
#define HTML_CHART_BOTTOM 290
#define HTML_CHART_COLS (HTML_CHART_RIGHT - HTML_CHART_LEFT)   /* one column per pixel */
#define HTML_CHART_COLOURS 8

/* An SVG line chart of series s[ns] over their common x range: a log y axis
 * when allow_log is set, every value is positive and they span at least a
 * factor 20; each series is one <path class="curve cK"> (K = index mod
 * HTML_CHART_COLOURS) through its columns' first, least, greatest and last
 * values; series of at most 60 points also get a dot per point. Markers are
 * dashed lines (class "marker"). Nothing is written for no finite value but
 * a note saying so. */
void html_chart(FILE *f, const char *title, const char *ylabel, int allow_log, const html_series *s, size_t ns,
                const html_marker *m, size_t nm);

/* The CSS the chart's classes need (colours cK, axes, markers). */
extern const char HTML_CHART_CSS[];

#endif
