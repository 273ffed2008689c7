/* graph.c — CSR graphs and the graph file readers (graph.h).
 *
 * Rows are built by two counting sorts (by target, then stably by source),
 * so each row comes out sorted without a comparison sort and repeats sit
 * next to each other; the result is a function of the set of pairs alone.
 * Files are read whole through zlib (gzread reads a plain file as it is),
 * then parsed line by line, so every error can name its line. */
#include "engine/graph/graph.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "base/file.h"

/* ---- building ----------------------------------------------------------- */

/* Entries (from[i], to[i]), i < m, into rows: off[n+1], adj (deduplicated,
 * sorted). tmp_from/tmp_to hold m each. Returns the entries kept. */
static int64_t build_rows(int32_t n, int64_t m, const int32_t *from, const int32_t *to, int64_t *off, int32_t *adj,
                          int32_t *tmp_from, int32_t *tmp_to, int64_t *cnt)
{
    /* 1: sort by `to` (counting sort). */
    memset(cnt, 0, sizeof *cnt * ((size_t)n + 1));
    for (int64_t i = 0; i < m; i++)
        cnt[to[i] + 1]++;
    for (int32_t v = 0; v < n; v++)
        cnt[v + 1] += cnt[v];
    for (int64_t i = 0; i < m; i++) {
        int64_t at = cnt[to[i]]++;
        tmp_from[at] = from[i];
        tmp_to[at] = to[i];
    }
    /* 2: stably by `from`: each row receives its targets in increasing order. */
    memset(off, 0, sizeof *off * ((size_t)n + 1));
    for (int64_t i = 0; i < m; i++)
        off[tmp_from[i] + 1]++;
    for (int32_t v = 0; v < n; v++)
        off[v + 1] += off[v];
    memcpy(cnt, off, sizeof *cnt * ((size_t)n + 1));
    for (int64_t i = 0; i < m; i++)
        adj[cnt[tmp_from[i]]++] = tmp_to[i];
    /* 3: drop repeats, compacting in place. */
    int64_t w = 0;
    for (int32_t v = 0; v < n; v++) {
        int64_t b = off[v], e = off[v + 1];
        off[v] = w;
        for (int64_t i = b; i < e; i++)
            if (i == b || adj[i] != adj[i - 1])
                adj[w++] = adj[i];
    }
    off[n] = w;
    return w;
}

static size_t align8(size_t x)
{
    return (x + 7) & ~(size_t)7;
}

ls_status graph_create_named(graph **out, int32_t n, int directed, const int32_t *src, const int32_t *dst,
                             int64_t n_pairs, const int32_t *labels, const char *const *names, graph_stats *dropped,
                             ls_err *err)
{
    *out = NULL;
    if (n < 0 || n > GRAPH_MAX_NODES)
        return ls_fail(err, LS_EINVAL, "graph: %ld nodes (the most is %ld)", (long)n, (long)GRAPH_MAX_NODES);
    if (n_pairs < 0 || n_pairs > INT64_MAX / 4 || (n_pairs > 0 && (src == NULL || dst == NULL)))
        return ls_fail(err, LS_EINVAL, "graph: bad edge arrays (%lld pairs)", (long long)n_pairs);
    int64_t loops = 0;
    for (int64_t i = 0; i < n_pairs; i++) {
        if (src[i] < 0 || src[i] >= n || dst[i] < 0 || dst[i] >= n)
            return ls_fail(err, LS_EINVAL, "graph: pair %lld: %ld %ld: node id not in 0..%ld", (long long)i,
                           (long)src[i], (long)dst[i], (long)n - 1);
        loops += src[i] == dst[i];
    }
    if (labels != NULL)
        for (int32_t v = 0; v < n; v++)
            if (labels[v] < 0)
                return ls_fail(err, LS_EINVAL, "graph: node %ld: label %ld is negative", (long)v, (long)labels[v]);
    int64_t kept = n_pairs - loops;
    int64_t m = directed ? kept : 2 * kept;
    size_t nm = (size_t)(m > 0 ? m : 1);
    int32_t *from = malloc(nm * sizeof *from), *to = malloc(nm * sizeof *to);
    int32_t *tf = malloc(nm * sizeof *tf), *tt = malloc(nm * sizeof *tt);
    int32_t *adj_o = malloc(nm * sizeof *adj_o), *adj_i = directed ? malloc(nm * sizeof *adj_i) : NULL;
    int64_t *off_o = malloc(((size_t)n + 1) * sizeof *off_o), *off_i = malloc(((size_t)n + 1) * sizeof *off_i);
    int64_t *cnt = malloc(((size_t)n + 1) * sizeof *cnt);
    ls_status st = LS_OK;
    if (!from || !to || !tf || !tt || !adj_o || (directed && !adj_i) || !off_o || !off_i || !cnt) {
        st = ls_fail(err, LS_ENOMEM, "graph: out of memory for %lld pairs", (long long)n_pairs);
        goto done;
    }
    int64_t j = 0;
    for (int64_t i = 0; i < n_pairs; i++) {
        if (src[i] == dst[i])
            continue;
        from[j] = src[i];
        to[j] = dst[i];
        j++;
        if (!directed) {
            from[j] = dst[i];
            to[j] = src[i];
            j++;
        }
    }
    int64_t n_out = build_rows(n, m, from, to, off_o, adj_o, tf, tt, cnt);
    int64_t n_in = n_out;
    if (directed)
        n_in = build_rows(n, m, to, from, off_i, adj_i, tf, tt, cnt);
    int64_t edges = directed ? n_out : n_out / 2;

    size_t name_bytes = 0;
    if (names != NULL)
        for (int32_t v = 0; v < n; v++)
            name_bytes += strlen(names[v]) + 1;
    size_t sz = align8(sizeof(graph));
    size_t at_off_o = sz;
    sz += ((size_t)n + 1) * sizeof(int64_t);
    size_t at_off_i = sz;
    if (directed)
        sz += ((size_t)n + 1) * sizeof(int64_t);
    size_t at_names = sz;
    if (names != NULL)
        sz += (size_t)n * sizeof(char *);
    size_t at_adj_o = sz;
    sz += (size_t)n_out * sizeof(int32_t);
    size_t at_adj_i = sz;
    if (directed)
        sz += (size_t)n_in * sizeof(int32_t);
    size_t at_label = sz;
    sz += (size_t)n * sizeof(int32_t);
    size_t at_chars = sz;
    sz += name_bytes;
    char *mem = calloc(1, sz);
    if (mem == NULL) {
        st = ls_fail(err, LS_ENOMEM, "graph: out of memory (%zu bytes)", sz);
        goto done;
    }
    graph *g = (graph *)(void *)mem;
    int64_t *go = (int64_t *)(void *)(mem + at_off_o);
    int32_t *ga = (int32_t *)(void *)(mem + at_adj_o);
    memcpy(go, off_o, ((size_t)n + 1) * sizeof *go);
    memcpy(ga, adj_o, (size_t)n_out * sizeof *ga);
    g->out_off = go;
    g->out_adj = ga;
    if (directed) {
        int64_t *gio = (int64_t *)(void *)(mem + at_off_i);
        int32_t *gia = (int32_t *)(void *)(mem + at_adj_i);
        memcpy(gio, off_i, ((size_t)n + 1) * sizeof *gio);
        memcpy(gia, adj_i, (size_t)n_in * sizeof *gia);
        g->in_off = gio;
        g->in_adj = gia;
    } else {
        g->in_off = go;
        g->in_adj = ga;
    }
    int32_t *gl = (int32_t *)(void *)(mem + at_label);
    int32_t max_label = 0, max_degree = 0;
    for (int32_t v = 0; v < n; v++) {
        gl[v] = labels != NULL ? labels[v] : 0;
        if (gl[v] > max_label)
            max_label = gl[v];
        if (go[v + 1] - go[v] > max_degree)
            max_degree = (int32_t)(go[v + 1] - go[v]);
    }
    g->label = gl;
    g->name = NULL;
    if (names != NULL) {
        const char **gn = (const char **)(void *)(mem + at_names);
        char *c = mem + at_chars;
        for (int32_t v = 0; v < n; v++) {
            size_t len = strlen(names[v]) + 1;
            memcpy(c, names[v], len);
            gn[v] = c;
            c += len;
        }
        g->name = gn;
    }
    g->n = n;
    g->directed = directed != 0;
    g->n_edges = edges;
    g->max_label = max_label;
    g->max_degree = max_degree;
    if (dropped != NULL) {
        dropped->self_loops = loops;
        dropped->duplicates = kept - edges;
    }
    *out = g;
done:
    free(from);
    free(to);
    free(tf);
    free(tt);
    free(adj_o);
    free(adj_i);
    free(off_o);
    free(off_i);
    free(cnt);
    return st;
}

ls_status graph_create(graph **out, int32_t n, int directed, const int32_t *src, const int32_t *dst, int64_t n_pairs,
                       const int32_t *labels, graph_stats *dropped, ls_err *err)
{
    return graph_create_named(out, n, directed, src, dst, n_pairs, labels, NULL, dropped, err);
}

void graph_destroy(graph *g)
{
    free(g);
}

ls_status graph_clone(graph **out, const graph *g, ls_err *err)
{
    int64_t m = g->out_off[g->n];
    size_t nm = (size_t)(m > 0 ? m : 1);
    int32_t *s = malloc(nm * sizeof *s), *d = malloc(nm * sizeof *d);
    if (s == NULL || d == NULL) {
        free(s);
        free(d);
        *out = NULL;
        return ls_fail(err, LS_ENOMEM, "graph: out of memory copying a graph");
    }
    for (int32_t v = 0; v < g->n; v++)
        for (int64_t i = g->out_off[v]; i < g->out_off[v + 1]; i++) {
            s[i] = v;
            d[i] = g->out_adj[i];
        }
    /* An undirected row holds each edge twice: as a directed pair list that
     * is a repeat, which graph_create drops again. */
    ls_status st = graph_create_named(out, g->n, g->directed, s, d, m, g->label, g->name, NULL, err);
    free(s);
    free(d);
    return st;
}

int graph_has_edge(const graph *g, int32_t u, int32_t v)
{
    if (u < 0 || u >= g->n || v < 0 || v >= g->n)
        return 0;
    int64_t lo = g->out_off[u], hi = g->out_off[u + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (g->out_adj[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->out_off[u + 1] && g->out_adj[lo] == v;
}

const char *graph_name(const graph *g, int32_t v)
{
    return g->name != NULL && v >= 0 && v < g->n ? g->name[v] : NULL;
}

void graph_list_destroy(graph **gs, int32_t count)
{
    if (gs == NULL)
        return;
    for (int32_t i = 0; i < count; i++)
        graph_destroy(gs[i]);
    free(gs);
}

/* ---- reading files ------------------------------------------------------ */

/* A graph file's text, inflated: bounded so a small gzip bomb fails cleanly
 * rather than filling memory (the limit IDX files have; a graph this large
 * would be more than the exact searches here can use). */
#define GRAPH_FILE_MAX_BYTES ((size_t)1 << 31)

/* The whole file (gunzipped when it is gzip), NUL-terminated, through the
 * checked open (base/file.h): a FIFO or a device is refused at once. */
static ls_status slurp(const char *path, char **buf, size_t *len, ls_err *err)
{
    *buf = NULL;
    *len = 0;
    int fd;
    size_t size;
    ls_status st = file_open_regular(path, &fd, &size, err);
    if (st != LS_OK)
        return st;
    gzFile z = gzdopen(fd, "rb");
    if (z == NULL) {
        close(fd);
        return ls_fail(err, LS_ENOMEM, "%s: cannot initialise zlib", path);
    }
    size_t cap = size + 4096, n = 0;
    char *b = malloc(cap + 1);
    for (;;) {
        if (b == NULL) {
            gzclose(z);
            return ls_fail(err, LS_ENOMEM, "%s: out of memory reading it", path);
        }
        if (cap - n < 65536) {
            char *nb = realloc(b, cap * 2 + 1);
            if (nb == NULL) {
                free(b);
                b = NULL;
                continue;
            }
            b = nb;
            cap *= 2;
        }
        unsigned want = (unsigned)(cap - n > (1u << 30) ? (1u << 30) : cap - n);
        int got = gzread(z, b + n, want);
        if (got < 0) {
            int zerr;
            const char *msg = gzerror(z, &zerr);
            ls_fail(err, zerr == Z_ERRNO ? LS_EIO : LS_EFORMAT, "%s: %s", path,
                    zerr == Z_ERRNO ? strerror(errno) : msg);
            free(b);
            gzclose(z);
            return zerr == Z_ERRNO ? LS_EIO : LS_EFORMAT;
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n > GRAPH_FILE_MAX_BYTES) {
            free(b);
            gzclose(z);
            return ls_fail(err, LS_EFORMAT, "%s: more than the limit of %zu bytes (inflated)", path,
                           (size_t)GRAPH_FILE_MAX_BYTES);
        }
    }
    int zerr = Z_OK;
    gzerror(z, &zerr);
    gzclose(z);
    if (zerr != Z_OK && zerr != Z_BUF_ERROR) {
        free(b);
        return ls_fail(err, LS_EFORMAT, "%s: a damaged gzip stream", path);
    }
    if (memchr(b, 0, n) != NULL) {
        size_t at = (size_t)((char *)memchr(b, 0, n) - b);
        size_t line = 1;
        for (size_t i = 0; i < at; i++)
            line += b[i] == '\n';
        free(b);
        return ls_fail(err, LS_EFORMAT, "%s:%zu: a NUL byte: not a text file", path, line);
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return LS_OK;
}

/* Splits the next line of *p (NUL-terminated text) into at most max fields,
 * dropping a '#' comment and a trailing '\r'; the line is modified in place.
 * Returns the number of fields (more than max: max + 1), or -1 at the end. */
static int next_line(char **p, char **fields, int max)
{
    char *s = *p;
    if (*s == 0)
        return -1;
    char *e = strchr(s, '\n');
    if (e != NULL) {
        *e = 0;
        *p = e + 1;
    } else {
        *p = s + strlen(s);
    }
    char *hash = strchr(s, '#');
    if (hash != NULL)
        *hash = 0;
    int nf = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\v' || *s == '\f')
            s++;
        if (*s == 0)
            break;
        if (nf == max)
            return max + 1;
        fields[nf++] = s;
        while (*s != 0 && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\v' && *s != '\f')
            s++;
        if (*s != 0)
            *s++ = 0;
    }
    return nf;
}

/* A decimal integer in [0, max]: 1 and *v, else 0. */
static int parse_nonneg(const char *s, int64_t max, int64_t *v)
{
    if (*s == '+')
        s++;
    if (!isdigit((unsigned char)*s))
        return 0;
    int64_t x = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return 0;
        x = x * 10 + (*s - '0');
        if (x > max)
            return 0;
    }
    *v = x;
    return 1;
}

/* 1 if s is one or more decimal digits. */
static int all_digits(const char *s)
{
    if (*s == '+')
        s++;
    if (*s == 0)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* Shows a field in an error: at most 40 characters of it. */
#define FIELD_SHOWN "%.40s"

typedef struct {
    int32_t *a, *b;
    int64_t n, cap;
} pair_vec;

static int pair_push(pair_vec *v, int32_t a, int32_t b)
{
    if (v->n == v->cap) {
        int64_t nc = v->cap ? v->cap * 2 : 1024;
        int32_t *na = realloc(v->a, (size_t)nc * sizeof *na);
        if (na == NULL)
            return 0;
        v->a = na;
        int32_t *nb = realloc(v->b, (size_t)nc * sizeof *nb);
        if (nb == NULL)
            return 0;
        v->b = nb;
        v->cap = nc;
    }
    v->a[v->n] = a;
    v->b[v->n] = b;
    v->n++;
    return 1;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int32_t name_index(char **sorted, int32_t n, const char *s)
{
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sorted[mid], s);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* An edge list held in buf (modified). */
static ls_status parse_edgelist(graph **out, const char *path, char *buf, graph_stats *dropped, ls_err *err)
{
    pair_vec pv = {0};
    char **ends = NULL;   /* names mode: both fields of every edge line, in order */
    int64_t n_ends = 0, cap_ends = 0;
    int mode = 0;         /* 0 undecided, 1 integer ids, 2 names */
    int64_t max_id = -1;
    ls_status st = LS_OK;
    char *p = buf, *f[4];
    int nf;
    size_t line = 0;
    graph *g = NULL;
    char **sorted = NULL;
    int32_t *src = NULL, *dst = NULL;
    while ((nf = next_line(&p, f, 3)) >= 0) {
        line++;
        if (nf == 0)
            continue;
        if (nf == 1) {
            st = ls_fail(err, LS_EFORMAT, "%s:%zu: field 2: missing (an edge line is 'a b [weight]')", path, line);
            goto done;
        }
        if (nf > 3) {
            st = ls_fail(err, LS_EFORMAT, "%s:%zu: field 4: unexpected (an edge line is 'a b [weight]')", path, line);
            goto done;
        }
        if (nf == 3) {
            char *e;
            errno = 0;
            double w = strtod(f[2], &e);
            if (e == f[2] || *e != 0 || !isfinite(w)) {
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: field 3: '" FIELD_SHOWN "' is not a number (the weight)", path,
                             line, f[2]);
                goto done;
            }
        }
        int64_t ia = 0, ib = 0;
        if (mode == 0)
            mode = all_digits(f[0]) && all_digits(f[1]) ? 1 : 2;
        if (mode == 1) {
            for (int k = 0; k < 2; k++) {
                int64_t v;
                if (!parse_nonneg(f[k], GRAPH_FILE_MAX_NODES - 1, &v)) {
                    st = ls_fail(err, LS_EFORMAT,
                                 "%s:%zu: field %d: '" FIELD_SHOWN "' is not a node id (an integer 0..%ld, as on the "
                                 "first edge line)",
                                 path, line, k + 1, f[k], (long)GRAPH_FILE_MAX_NODES - 1);
                    goto done;
                }
                if (k == 0)
                    ia = v;
                else
                    ib = v;
                if (v > max_id)
                    max_id = v;
            }
            if (!pair_push(&pv, (int32_t)ia, (int32_t)ib)) {
                st = ls_fail(err, LS_ENOMEM, "%s:%zu: out of memory", path, line);
                goto done;
            }
        } else {
            if (n_ends + 2 > cap_ends) {
                int64_t nc = cap_ends ? cap_ends * 2 : 1024;
                char **ne = realloc(ends, (size_t)nc * sizeof *ne);
                if (ne == NULL) {
                    st = ls_fail(err, LS_ENOMEM, "%s:%zu: out of memory", path, line);
                    goto done;
                }
                ends = ne;
                cap_ends = nc;
            }
            ends[n_ends++] = f[0];
            ends[n_ends++] = f[1];
        }
    }
    if (mode == 2) {
        /* Node ids are ranks of the distinct names in strcmp order. */
        sorted = malloc((size_t)(n_ends > 0 ? n_ends : 1) * sizeof *sorted);
        src = malloc((size_t)(n_ends / 2 + 1) * sizeof *src);
        dst = malloc((size_t)(n_ends / 2 + 1) * sizeof *dst);
        if (sorted == NULL || src == NULL || dst == NULL) {
            st = ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
            goto done;
        }
        memcpy(sorted, ends, (size_t)n_ends * sizeof *sorted);
        qsort(sorted, (size_t)n_ends, sizeof *sorted, cmp_str);
        int64_t u = 0;
        for (int64_t i = 0; i < n_ends; i++)
            if (i == 0 || strcmp(sorted[i], sorted[i - 1]) != 0)
                sorted[u++] = sorted[i];
        if (u > GRAPH_MAX_NODES) {
            st = ls_fail(err, LS_EFORMAT, "%s: %lld distinct node names (the most is %ld)", path, (long long)u,
                         (long)GRAPH_MAX_NODES);
            goto done;
        }
        for (int64_t i = 0; i < n_ends / 2; i++) {
            src[i] = name_index(sorted, (int32_t)u, ends[2 * i]);
            dst[i] = name_index(sorted, (int32_t)u, ends[2 * i + 1]);
        }
        st = graph_create_named(&g, (int32_t)u, 0, src, dst, n_ends / 2, NULL, (const char *const *)sorted, dropped,
                                err);
    } else {
        st = graph_create(&g, (int32_t)(max_id + 1), 0, pv.a, pv.b, pv.n, NULL, dropped, err);
    }
    if (st != LS_OK) {
        char inner[sizeof err->msg];
        snprintf(inner, sizeof inner, "%s", err ? err->msg : "");
        st = ls_fail(err, st, "%s: %s", path, inner);
    }
done:
    free(pv.a);
    free(pv.b);
    free(ends);
    free(sorted);
    free(src);
    free(dst);
    *out = g;
    return st;
}

ls_status graph_load_edgelist_stats(graph **out, const char *path, graph_stats *dropped, ls_err *err)
{
    *out = NULL;
    char *buf;
    size_t len;
    ls_status st = slurp(path, &buf, &len, err);
    if (st != LS_OK)
        return st;
    st = parse_edgelist(out, path, buf, dropped, err);
    free(buf);
    return st;
}

ls_status graph_load_edgelist(graph **out, const char *path, ls_err *err)
{
    return graph_load_edgelist_stats(out, path, NULL, err);
}

/* ---- the graph text format ---------------------------------------------- */

typedef struct {
    int open;            /* a GRAPH line was seen */
    int64_t n;           /* -1 until NODES */
    int directed;
    int32_t *labels;     /* NULL until LABELS */
    size_t labels_line;
    pair_vec pv;
    size_t line;         /* the GRAPH line */
} text_graph;

static int kw(const char *s, const char *word)
{
    return strcasecmp(s, word) == 0;
}

/* Finish the graph being read and append it to *list. */
static ls_status text_finish(text_graph *t, graph ***list, int32_t *count, int32_t *cap, const char *path, ls_err *err)
{
    if (!t->open)
        return LS_OK;
    if (t->n < 0)
        return ls_fail(err, LS_EFORMAT, "%s:%zu: this GRAPH has no NODES line", path, t->line);
    if (*count == *cap) {
        int32_t nc = *cap ? *cap * 2 : 64;
        graph **nl = realloc(*list, (size_t)nc * sizeof *nl);
        if (nl == NULL)
            return ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
        *list = nl;
        *cap = nc;
    }
    graph *g;
    ls_status st = graph_create(&g, (int32_t)t->n, t->directed, t->pv.a, t->pv.b, t->pv.n, t->labels, NULL, err);
    if (st != LS_OK) {
        char inner[sizeof err->msg];
        snprintf(inner, sizeof inner, "%s", err ? err->msg : "");
        return ls_fail(err, st, "%s:%zu: %s", path, t->line, inner);
    }
    (*list)[(*count)++] = g;
    free(t->labels);
    t->labels = NULL;
    t->pv.n = 0;
    t->open = 0;
    return LS_OK;
}

static ls_status parse_text(graph ***out, int32_t *count, const char *path, char *buf, ls_err *err)
{
    graph **list = NULL;
    int32_t n_list = 0, cap = 0;
    text_graph t = {0};
    t.n = -1;
    ls_status st = LS_OK;
    char *p = buf;
    size_t line = 0;
    int maxf = 64;
    char **f = malloc((size_t)(maxf + 1) * sizeof *f);
    if (f == NULL)
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
    for (;;) {
        /* Room for every field of the line (a LABELS line may be long). */
        size_t words = 1;
        for (const char *s = p; *s && *s != '\n'; s++)
            words += *s == ' ' || *s == '\t';
        if (words > (size_t)maxf) {
            if (words > (size_t)INT32_MAX - 2) {
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: a line too long", path, line + 1);
                goto fail;
            }
            char **nf2 = realloc(f, (words + 2) * sizeof *nf2);
            if (nf2 == NULL) {
                st = ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
                goto fail;
            }
            f = nf2;
            maxf = (int)words;
        }
        int nf = next_line(&p, f, maxf);
        if (nf < 0)
            break;
        line++;
        if (nf == 0)
            continue;
        if (kw(f[0], "GRAPH")) {
            if ((st = text_finish(&t, &list, &n_list, &cap, path, err)) != LS_OK)
                goto fail;
            if (nf > 2) {
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: field 3: unexpected (GRAPH [id])", path, line);
                goto fail;
            }
            t.open = 1;
            t.n = -1;
            t.directed = 0;
            t.line = line;
            continue;
        }
        if (!t.open) {
            st = ls_fail(err, LS_EFORMAT, "%s:%zu: field 1: '" FIELD_SHOWN "' before the first GRAPH line", path, line,
                         f[0]);
            goto fail;
        }
        if (kw(f[0], "NODES")) {
            int64_t v;
            if (t.n >= 0) {
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: a second NODES line for this GRAPH", path, line);
                goto fail;
            }
            if (nf != 2 || !parse_nonneg(f[1], GRAPH_FILE_MAX_NODES, &v)) {
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: field 2: '" FIELD_SHOWN "' is not a node count (0..%ld)", path,
                             line, nf >= 2 ? f[1] : "", (long)GRAPH_FILE_MAX_NODES);
                goto fail;
            }
            t.n = v;
            continue;
        }
        if (kw(f[0], "DIRECTED")) {
            if (nf != 1 || t.pv.n > 0) {
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: DIRECTED comes alone on its line, before the edges", path,
                             line);
                goto fail;
            }
            t.directed = 1;
            continue;
        }
        if (t.n < 0) {
            st = ls_fail(err, LS_EFORMAT, "%s:%zu: field 1: '" FIELD_SHOWN "' before this GRAPH's NODES line", path,
                         line, f[0]);
            goto fail;
        }
        if (kw(f[0], "LABELS")) {
            if (t.labels != NULL) {
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: a second LABELS line (the first: line %zu)", path, line,
                             t.labels_line);
                goto fail;
            }
            if (nf - 1 != t.n) {
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: LABELS has %d values, NODES says %lld", path, line, nf - 1,
                             (long long)t.n);
                goto fail;
            }
            t.labels = malloc((size_t)(t.n > 0 ? t.n : 1) * sizeof *t.labels);
            if (t.labels == NULL) {
                st = ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
                goto fail;
            }
            for (int i = 1; i < nf; i++) {
                int64_t v;
                if (!parse_nonneg(f[i], INT32_MAX, &v)) {
                    st = ls_fail(err, LS_EFORMAT, "%s:%zu: field %d: '" FIELD_SHOWN
                                 "' is not a label (an integer 0..2147483647)", path, line, i + 1, f[i]);
                    goto fail;
                }
                t.labels[i - 1] = (int32_t)v;
            }
            t.labels_line = line;
            continue;
        }
        if (nf != 2) {
            if (nf == 1)
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: field 1: '" FIELD_SHOWN "' is not a keyword, and an edge line "
                             "is 'a b'", path, line, f[0]);
            else
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: field 3: unexpected (an edge line is 'a b')", path, line);
            goto fail;
        }
        int64_t ab[2];
        for (int k = 0; k < 2; k++)
            if (!parse_nonneg(f[k], t.n - 1, &ab[k])) {
                st = ls_fail(err, LS_EFORMAT, "%s:%zu: field %d: '" FIELD_SHOWN "' is not a node id (NODES %lld)",
                             path, line, k + 1, f[k], (long long)t.n);
                goto fail;
            }
        if (!pair_push(&t.pv, (int32_t)ab[0], (int32_t)ab[1])) {
            st = ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
            goto fail;
        }
    }
    if ((st = text_finish(&t, &list, &n_list, &cap, path, err)) != LS_OK)
        goto fail;
    free(f);
    free(t.pv.a);
    free(t.pv.b);
    *out = list;
    *count = n_list;
    return LS_OK;
fail:
    free(f);
    free(t.pv.a);
    free(t.pv.b);
    free(t.labels);
    graph_list_destroy(list, n_list);
    return st;
}

ls_status graph_load_text(graph ***out, int32_t *count, const char *path, ls_err *err)
{
    *out = NULL;
    *count = 0;
    char *buf;
    size_t len;
    ls_status st = slurp(path, &buf, &len, err);
    if (st != LS_OK)
        return st;
    st = parse_text(out, count, path, buf, err);
    free(buf);
    return st;
}

ls_status graph_load_atlas(graph ***out, int32_t *count, const char *path, ls_err *err)
{
    ls_status st = graph_load_text(out, count, path, err);
    if (st == LS_OK && *count == 0)
        return ls_fail(err, LS_EFORMAT, "%s: no GRAPH in it (the networkx Graph Atlas has 1253)", path);
    return st;
}

/* 1 if the first line with a field starts with the keyword GRAPH. */
static int looks_like_text(const char *buf)
{
    const char *s = buf;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
            s++;
        if (*s == '#') {
            while (*s && *s != '\n')
                s++;
            continue;
        }
        return strncasecmp(s, "GRAPH", 5) == 0 && (s[5] == 0 || isspace((unsigned char)s[5]));
    }
}

ls_status graph_load_file(graph ***out, int32_t *count, const char *path, ls_err *err)
{
    *out = NULL;
    *count = 0;
    char *buf;
    size_t len;
    ls_status st = slurp(path, &buf, &len, err);
    if (st != LS_OK)
        return st;
    if (looks_like_text(buf)) {
        st = parse_text(out, count, path, buf, err);
        free(buf);
        return st;
    }
    graph **list = malloc(sizeof *list);
    if (list == NULL) {
        free(buf);
        return ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
    }
    st = parse_edgelist(&list[0], path, buf, NULL, err);
    free(buf);
    if (st != LS_OK) {
        free(list);
        return st;
    }
    *out = list;
    *count = 1;
    return LS_OK;
}

ls_status graph_ref_split(const char *ref, char *path, size_t cap, int32_t *index, ls_err *err)
{
    *index = -1;
    const char *colon = strrchr(ref, ':');
    size_t plen = strlen(ref);
    if (colon != NULL && colon[1] != 0 && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        plen = (size_t)(colon - ref);
        if (strlen(colon + 1) > 9)
            return ls_fail(err, LS_EINVAL, "%.200s: graph index '%s' is too large", ref, colon + 1);
        *index = (int32_t)atol(colon + 1);
    }
    if (plen == 0)
        return ls_fail(err, LS_EINVAL, "'%.200s' names no file", ref);
    if (plen >= cap)
        return ls_fail(err, LS_EINVAL, "%.60s...: path too long", ref);
    memcpy(path, ref, plen);
    path[plen] = 0;
    return LS_OK;
}

ls_status graph_pick(graph **out, graph **list, int32_t count, const char *path, int32_t index, ls_err *err)
{
    *out = NULL;
    if (index < 0 && count != 1)
        return ls_fail(err, LS_EINVAL, "%s: holds %ld graphs: name one as %s:I (I from 0)", path, (long)count, path);
    if (index < 0)
        index = 0;
    if (index >= count)
        return ls_fail(err, LS_EINVAL, "%s: there is no graph %ld: the file holds %ld (0..%ld)", path, (long)index,
                       (long)count, (long)count - 1);
    *out = list[index];
    return LS_OK;
}

ls_status graph_load_ref(graph **out, const char *ref, ls_err *err)
{
    *out = NULL;
    char path[4096];
    int32_t index;
    ls_status st = graph_ref_split(ref, path, sizeof path, &index, err);
    if (st != LS_OK)
        return st;
    graph **list;
    int32_t count;
    if ((st = graph_load_file(&list, &count, path, err)) != LS_OK)
        return st;
    graph *g;
    if ((st = graph_pick(&g, list, count, path, index, err)) == LS_OK) {
        for (int32_t i = 0; i < count; i++)
            if (list[i] == g)
                list[i] = NULL;
        *out = g;
    }
    graph_list_destroy(list, count);
    return st;
}
