/* cmd_graph.c — `lockstep graph cliques|ged`: the exact graph operations
 * (engine/graph/cliques.h, engine/graph/ged.h) on graph files (engine/graph/graph.h), their
 * answers on stdout for scripts, timings on stderr (on a terminal, or with
 * --time). Bad input exits 2 with one line naming file, line and field. */
#include "tools/tools.h"
#include "tools/commands.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "engine/graph/cliques.h"
#include "engine/graph/ged.h"
#include "engine/graph/graph.h"
#include "reduce/pool.h"

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int bad(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lockstep graph %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_USAGE;
}

static int parse_count(const char *cmd, const char *flag, const char *v, long long lo, long long hi, long long *out)
{
    if (v == NULL)
        return bad(cmd, "%s: needs a value", flag);
    ls_err err;
    int64_t x;
    if (flags_int(flag, v, lo, hi, &x, &err) != LS_OK)
        return bad(cmd, "%s", err.msg);
    *out = x;
    return EXIT_OK;
}

/* The next flag of operation op ("graph cliques") through the one flag
 * parser: 0 with its name in *name (NULL for an argument, in *value),
 * FLAGS_ERROR after printing the error, or FLAGS_END / FLAGS_HELP. */
static int next_flag(flags_iter *it, const char *op, const char **name, const char **value)
{
    ls_err err = { "" };
    ls_status st = LS_OK;
    int k = flags_next(it, value, &err, &st);
    *name = k >= 0 ? it->specs[k].name : NULL;
    if (k == FLAGS_ERROR) {
        cli_error(op, &err, st);
        return FLAGS_ERROR;
    }
    return k == FLAGS_END || k == FLAGS_HELP ? k : 0;
}

static ls_status make_pool(pool **p, long long threads, ls_err *err)
{
    *p = NULL;
    int t = threads > 0 ? (int)threads : pool_online_cpus();
    return pool_create(p, t, err);
}

/* ---- cliques ------------------------------------------------------------ */

/* The progress line of a long exact search: on a terminal only, at most
 * four times a second. The library calls back from any worker: the time of
 * the last line is claimed with one compare-and-swap, so one thread prints. */
typedef struct {
    double t0;
    atomic_llong last_ms;   /* ms after t0 of the last line */
    atomic_int shown;
} search_line;

static void line_init(search_line *l, double t0)
{
    l->t0 = t0;
    atomic_init(&l->last_ms, 0);
    atomic_init(&l->shown, 0);
}

/* 1 when this call is to print (and *secs the time so far). */
static int line_due(search_line *l, double *secs)
{
    *secs = now_seconds() - l->t0;
    const long long ms = (long long)(*secs * 1000.0);
    long long last = atomic_load_explicit(&l->last_ms, memory_order_relaxed);
    if (ms - last < 250 || !atomic_compare_exchange_strong(&l->last_ms, &last, ms))
        return 0;
    atomic_store(&l->shown, 1);
    return 1;
}

/* Clears the line, so what follows starts on a clean one. */
static void line_end(search_line *l)
{
    if (atomic_load(&l->shown))
        fputs("\r\033[K", stderr);
}

static void cliques_on_progress(void *ctx, int64_t done, int64_t n)
{
    double secs;
    if (line_due(ctx, &secs)) {
        fprintf(stderr, "\rcliques: %lld/%lld roots, %.0f s (Ctrl-C stops)   ", (long long)done, (long long)n, secs);
        fflush(stderr);
    }
}

typedef struct {
    const graph *g;
} list_ctx;

static int print_clique(void *ctx, const int32_t *nodes, int k)
{
    list_ctx *c = ctx;
    for (int i = 0; i < k; i++) {
        const char *name = graph_name(c->g, nodes[i]);
        if (i > 0)
            putchar(' ');
        if (name != NULL)
            fputs(name, stdout);
        else
            printf("%ld", (long)nodes[i]);
    }
    putchar('\n');
    return ferror(stdout) || run_interrupted ? 1 : 0;   /* Ctrl-C ends a listing after a whole line */
}

static int cmd_cliques(int argc, char **argv)
{
    const char *file = NULL;
    long long k = -1, threads = 0, max = 0;
    int list = 0, count = 0, timing = isatty(STDERR_FILENO), max_set = 0, rc;
    const command *me = command_find("graph cliques");
    flags_iter it;
    flags_init(&it, argc, argv, me->flags, me->n_flags);
    const char *a, *v;
    int r;
    while ((r = next_flag(&it, "graph cliques", &a, &v)) != FLAGS_END) {
        if (r == FLAGS_HELP) {
            command_usage(me, stdout);
            return EXIT_OK;
        } else if (r == FLAGS_ERROR) {
            return EXIT_USAGE;
        } else if (a == NULL) {
            if (file != NULL)
                return bad("cliques", "'%s': one graph FILE only (see --help)", v);
            file = v;
        } else if (strcmp(a, "-k") == 0) {
            if ((rc = parse_count("cliques", "-k", v, 1, CLIQUES_MAX_K, &k)) != 0)
                return rc;
        } else if (strcmp(a, "--threads") == 0) {
            if ((rc = parse_count("cliques", "--threads", v, 1, POOL_MAX_THREADS, &threads)) != 0)
                return rc;
        } else if (strcmp(a, "--max") == 0) {
            if ((rc = parse_count("cliques", "--max", v, 0, INT64_MAX, &max)) != 0)
                return rc;
            max_set = 1;
        } else if (strcmp(a, "--count") == 0) {
            count = 1;
        } else if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "--time") == 0) {
            timing = 1;
        }
    }
    if (file == NULL)
        return bad("cliques", "missing FILE (see lockstep graph cliques --help)");
    if (k < 0)
        return bad("cliques", "missing -k K (the clique size)");
    if (list && count)
        return bad("cliques", "--count and --list: choose one");
    if (max_set && !list)
        return bad("cliques", "--max goes with --list");
    ls_err err = {{0}};
    graph *g;
    ls_status st = graph_load_ref(&g, file, &err);
    if (st != LS_OK) {
        cli_error("graph cliques", &err, st);
        return cli_exit_code(st);
    }
    pool *p;
    if ((st = make_pool(&p, threads, &err)) != LS_OK) {
        graph_destroy(g);
        cli_error("graph cliques", &err, st);
        return cli_exit_code(st);
    }
    cliques_stats *stats = calloc(1, sizeof *stats);
    if (stats == NULL) {
        pool_destroy(p);
        graph_destroy(g);
        fputs("lockstep graph cliques: out of memory\n", stderr);
        return EXIT_USAGE;
    }
    double t0 = now_seconds();
    uint64_t n = 0;
    run_install_signals();
    if (list) {
        list_ctx ctx;
        ctx.g = g;
        st = cliques_list_run(g, (int)k, p, (uint64_t)max, print_clique, &ctx, &run_interrupted, &n, &err);
        if (st == LS_OK && run_interrupted)
            st = ls_fail(&err, LS_EINTR, "interrupted after %llu cliques listed", (unsigned long long)n);
    } else {
        /* The count is printed only when it is complete. */
        search_line line;
        line_init(&line, t0);
        const cliques_control ctl = { &run_interrupted, isatty(STDERR_FILENO) ? cliques_on_progress : NULL, &line };
        st = cliques_count_run(g, (int)k, p, &ctl, &n, stats, &err);
        line_end(&line);
        if (st == LS_OK)
            printf("%llu\n", (unsigned long long)n);
    }
    double secs = now_seconds() - t0;
    if (st == LS_OK && timing) {
        /* The workers' CPU times: on a loaded machine the wall time says
         * little, the largest worker's CPU time bounds an idle machine's. */
        char cpu[256] = "";
        if (!list && stats->n_workers > 0) {
            double largest = 0;
            size_t at = (size_t)snprintf(cpu, sizeof cpu, "; worker CPU");
            for (int i = 0; i < stats->n_workers && at < sizeof cpu - 32; i++) {
                at += (size_t)snprintf(cpu + at, sizeof cpu - at, " %.3f", stats->worker_cpu_seconds[i]);
                if (stats->worker_cpu_seconds[i] > largest)
                    largest = stats->worker_cpu_seconds[i];
            }
            snprintf(cpu + at, sizeof cpu - at, " s, largest %.3f s", largest);
        }
        fprintf(stderr, "lockstep graph cliques: k=%lld: %llu %s in %.3f s on %d thread%s%s\n", k,
                (unsigned long long)n, list ? "listed" : "cliques", secs, pool_threads(p),
                pool_threads(p) == 1 ? "" : "s", cpu);
    }
    free(stats);
    pool_destroy(p);
    graph_destroy(g);
    if (st != LS_OK) {
        cli_error("graph cliques", &err, st);
        return cli_exit_code(st);
    }
    return EXIT_OK;
}

/* ---- ged ---------------------------------------------------------------- */

/* Graph files read once however many pairs name them. */
typedef struct {
    char *path;
    graph **list;
    int32_t count;
} loaded_file;

typedef struct {
    loaded_file *files;
    size_t n, cap;
} file_cache;

static void cache_free(file_cache *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->files[i].path);
        graph_list_destroy(c->files[i].list, c->files[i].count);
    }
    free(c->files);
}

static ls_status cache_ref(file_cache *c, const char *ref, const graph **out, ls_err *err)
{
    char path[4096];
    int32_t index;
    ls_status st = graph_ref_split(ref, path, sizeof path, &index, err);
    if (st != LS_OK)
        return st;
    loaded_file *f = NULL;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->files[i].path, path) == 0)
            f = &c->files[i];
    if (f == NULL) {
        if (c->n == c->cap) {
            size_t nc = c->cap ? c->cap * 2 : 8;
            loaded_file *nf = realloc(c->files, nc * sizeof *nf);
            if (nf == NULL)
                return ls_fail(err, LS_ENOMEM, "out of memory");
            c->files = nf;
            c->cap = nc;
        }
        f = &c->files[c->n];
        f->path = strdup(path);
        if (f->path == NULL)
            return ls_fail(err, LS_ENOMEM, "out of memory");
        if ((st = graph_load_file(&f->list, &f->count, path, err)) != LS_OK) {
            free(f->path);
            return st;
        }
        c->n++;
    }
    graph *g;
    if ((st = graph_pick(&g, f->list, f->count, path, index, err)) != LS_OK)
        return st;
    *out = g;
    return LS_OK;
}

/* A pairs file names two graph files a line: a million pairs of long paths
 * is far below this, and no search of that many pairs would finish. */
#define GRAPH_PAIRS_MAX_BYTES ((long long)1 << 30)

/* Reads a pairs file: its references resolved through the cache. */
static ls_status read_pairs(const char *path, file_cache *cache, const graph ***pa, const graph ***pb, size_t *n,
                            ls_err *err)
{
    *pa = *pb = NULL;
    *n = 0;
    /* Through the checked open: a FIFO would block, /dev/zero never end. */
    int fd;
    size_t size;
    ls_status open_st = file_open_regular(path, &fd, &size, err);
    if (open_st != LS_OK)
        return open_st;
    if (size > GRAPH_PAIRS_MAX_BYTES) {
        close(fd);
        return ls_fail(err, LS_EFORMAT, "%s: %zu bytes is more than the limit of %lld bytes for a pairs file", path,
                       size, (long long)GRAPH_PAIRS_MAX_BYTES);
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        int e = errno;
        close(fd);
        return ls_fail(err, LS_EIO, "%s: %s", path, strerror(e));
    }
    char *line = NULL;
    size_t cap_line = 0, cap = 0, lineno = 0;
    ls_status st = LS_OK;
    ssize_t got;
    while ((got = getline(&line, &cap_line, f)) >= 0) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash != NULL)
            *hash = 0;
        char *save = NULL, *fields[3];
        int nf = 0;
        for (char *t = strtok_r(line, " \t\r\n", &save); t != NULL && nf < 3; t = strtok_r(NULL, " \t\r\n", &save))
            fields[nf++] = t;
        if (nf == 0)
            continue;
        if (nf != 2) {
            st = ls_fail(err, LS_EFORMAT, "%s:%zu: field %d: %s (a pair line is 'FILE_A FILE_B')", path, lineno,
                         nf < 2 ? 2 : 3, nf < 2 ? "missing" : "unexpected");
            break;
        }
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            const graph **na = realloc(*pa, nc * sizeof *na);
            if (na != NULL)
                *pa = na;
            const graph **nb = na != NULL ? realloc(*pb, nc * sizeof *nb) : NULL;
            if (nb == NULL) {
                st = ls_fail(err, LS_ENOMEM, "%s: out of memory", path);
                break;
            }
            *pb = nb;
            cap = nc;
        }
        for (int k = 0; k < 2 && st == LS_OK; k++) {
            ls_err e = {{0}};
            ls_status s2 = cache_ref(cache, fields[k], k == 0 ? &(*pa)[*n] : &(*pb)[*n], &e);
            if (s2 != LS_OK)
                st = ls_fail(err, s2 == LS_ENOMEM ? s2 : LS_EFORMAT, "%s:%zu: field %d: %s", path, lineno, k + 1,
                             e.msg);
        }
        if (st != LS_OK)
            break;
        (*n)++;
    }
    if (st == LS_OK && ferror(f))
        st = ls_fail(err, LS_EIO, "%s: read error", path);
    free(line);
    fclose(f);
    return st;
}

static void ged_on_progress(void *ctx, const ged_progress *p)
{
    double secs;
    if (line_due(ctx, &secs)) {
        fprintf(stderr, "\rged: %zu/%zu pairs, %.2f M search nodes, %.0f s (Ctrl-C stops)   ", p->pairs_done,
                p->n_pairs, (double)p->nodes * 1e-6, secs);
        fflush(stderr);
    }
}

static int cmd_ged(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *pairs = NULL, *costs = NULL;
    int n_files = 0, timing = isatty(STDERR_FILENO), rc;
    long long node_cap = GED_DEFAULT_NODE_CAP, threads = 0;
    const command *me = command_find("graph ged");
    flags_iter it;
    flags_init(&it, argc, argv, me->flags, me->n_flags);
    const char *a, *v;
    int r;
    while ((r = next_flag(&it, "graph ged", &a, &v)) != FLAGS_END) {
        if (r == FLAGS_HELP) {
            command_usage(me, stdout);
            return EXIT_OK;
        } else if (r == FLAGS_ERROR) {
            return EXIT_USAGE;
        } else if (a == NULL) {
            if (n_files == 2)
                return bad("ged", "'%s': two graph files only (see --help)", v);
            files[n_files++] = v;
        } else if (strcmp(a, "--node-cap") == 0) {
            if ((rc = parse_count("ged", "--node-cap", v, 0, GED_MAX_NODE_CAP, &node_cap)) != 0)
                return rc;
        } else if (strcmp(a, "--threads") == 0) {
            if ((rc = parse_count("ged", "--threads", v, 1, POOL_MAX_THREADS, &threads)) != 0)
                return rc;
        } else if (strcmp(a, "--pairs") == 0) {
            pairs = v;
        } else if (strcmp(a, "--costs") == 0) {
            costs = v;
        } else if (strcmp(a, "--time") == 0) {
            timing = 1;
        }
    }
    if (pairs != NULL && n_files > 0)
        return bad("ged", "--pairs and graph files: choose one");
    if (pairs == NULL && n_files != 2)
        return bad("ged", "needs FILE_A FILE_B or --pairs FILE (see lockstep graph ged --help)");
    ls_err err = {{0}};
    ged_costs c = GED_COSTS_UNIT;
    ls_status st;
    if (costs != NULL && (st = ged_costs_parse(&c, costs, &err)) != LS_OK) {
        cli_error("graph ged", &err, st);
        return cli_exit_code(st);
    }
    file_cache cache = {0};
    const graph **pa = NULL, **pb = NULL;
    const graph *one[2];
    size_t n = 0;
    if (pairs != NULL) {
        st = read_pairs(pairs, &cache, &pa, &pb, &n, &err);
    } else {
        st = LS_OK;
        for (int k = 0; k < 2 && st == LS_OK; k++)
            st = cache_ref(&cache, files[k], &one[k], &err);
        pa = malloc(sizeof *pa);
        pb = malloc(sizeof *pb);
        if (st == LS_OK && (pa == NULL || pb == NULL))
            st = ls_fail(&err, LS_ENOMEM, "out of memory");
        if (st == LS_OK) {
            pa[0] = one[0];
            pb[0] = one[1];
            n = 1;
        }
    }
    ged_result *res = st == LS_OK ? calloc(n > 0 ? n : 1, sizeof *res) : NULL;
    if (st == LS_OK && res == NULL)
        st = ls_fail(&err, LS_ENOMEM, "out of memory for %zu pairs", n);
    pool *p = NULL;
    if (st == LS_OK)
        st = make_pool(&p, threads, &err);
    double t0 = now_seconds(), secs = 0;
    if (st == LS_OK) {
        /* Ctrl-C stops the search between nodes; nothing is printed of an
         * unfinished set (the results go out only when all are final). */
        run_install_signals();
        search_line line;
        line_init(&line, t0);
        const int tty = isatty(STDERR_FILENO);
        const ged_control ctl = { &run_interrupted, tty ? ged_on_progress : NULL, &line };
        st = ged_pairs_run(pa, pb, n, &c, (int)node_cap, p, &ctl, res, &err);
        secs = now_seconds() - t0;
        line_end(&line);
    }
    if (st == LS_OK) {
        for (size_t i = 0; i < n; i++) {
            if (res[i].exact >= 0)
                printf("lower %lld exact %lld upper %lld\n", (long long)res[i].lower, (long long)res[i].exact,
                       (long long)res[i].upper);
            else
                printf("lower %lld upper %lld\n", (long long)res[i].lower, (long long)res[i].upper);
        }
        if (timing)
            fprintf(stderr, "lockstep graph ged: %zu pair%s in %.3f s on %d thread%s: %.0f pairs/s\n", n,
                    n == 1 ? "" : "s", secs, pool_threads(p), pool_threads(p) == 1 ? "" : "s",
                    secs > 0 ? (double)n / secs : 0.0);
    }
    pool_destroy(p);
    free(res);
    free(pa);
    free(pb);
    cache_free(&cache);
    if (st != LS_OK) {
        cli_error("graph ged", &err, st);
        return cli_exit_code(st);
    }
    return EXIT_OK;
}

int cmd_graph(int argc, char **argv)
{
    if (argc < 1) {
        fputs("lockstep graph: missing operation: cliques or ged (see lockstep graph --help)\n", stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
        command_usage(command_find("graph"), stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[0], "cliques") == 0)
        return cmd_cliques(argc - 1, argv + 1);
    if (strcmp(argv[0], "ged") == 0)
        return cmd_ged(argc - 1, argv + 1);
    fprintf(stderr, "lockstep graph: '%s' is not an operation: cliques or ged (see lockstep graph --help)\n", argv[0]);
    return EXIT_USAGE;
}
