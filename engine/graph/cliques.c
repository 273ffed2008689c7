/* cliques.c — k-clique counting and listing (cliques.h).
 *
 * Everything after the ordering works in rank space: node v becomes
 * rank[v], and the oriented graph keeps, for each rank r, the ranks above r
 * adjacent to it, sorted. A root r's candidates are that list, so local
 * index order is rank order and every local edge points from a smaller to a
 * larger local index: a candidate set intersected with row j holds only
 * indices after j, and each clique is met exactly once.
 *
 * Work units are roots, handed out from an atomic counter (a root's work
 * varies by orders of magnitude: the dense core holds most of it). Each
 * worker has its scratch allocated up front by the calling thread; workers
 * never allocate. Counts are summed per worker with overflow checks and the
 * worker totals added in worker order (integers: the order cannot change
 * the sum). A listing counts each root of a window first (capped), then
 * fills one buffer slot per root in parallel, then delivers the slots in
 * root order on the calling thread; a root with more cliques than the
 * buffer budget is listed by the calling thread straight into the callback,
 * so memory stays bounded. */
#include "engine/graph/cliques.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/simd.h"

/* ---- the degeneracy order ----------------------------------------------- */

/* An indexed binary min-heap keyed by (remaining degree, node id). A bucket
 * queue alone leaves the order inside a bucket to the order of the
 * updates; keying each node by (degree, id) makes "least degree, then
 * smallest id" the rule, so the order is a function of the graph. */
typedef struct {
    int32_t *heap;   /* node ids */
    int32_t *pos;    /* position of a node in heap, -1 when removed */
    int64_t *deg;
    int32_t size;
} dheap;

static int dheap_less(const dheap *h, int32_t a, int32_t b)
{
    return h->deg[a] < h->deg[b] || (h->deg[a] == h->deg[b] && a < b);
}

static void dheap_up(dheap *h, int32_t i)
{
    int32_t v = h->heap[i];
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!dheap_less(h, v, h->heap[parent]))
            break;
        h->heap[i] = h->heap[parent];
        h->pos[h->heap[i]] = i;
        i = parent;
    }
    h->heap[i] = v;
    h->pos[v] = i;
}

static void dheap_down(dheap *h, int32_t i)
{
    int32_t v = h->heap[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= h->size)
            break;
        if (c + 1 < h->size && dheap_less(h, h->heap[c + 1], h->heap[c]))
            c++;
        if (!dheap_less(h, h->heap[c], v))
            break;
        h->heap[i] = h->heap[c];
        h->pos[h->heap[i]] = i;
        i = c;
    }
    h->heap[i] = v;
    h->pos[v] = i;
}

ls_status cliques_degeneracy(const graph *g, int32_t *order, int32_t *rank, int32_t *degeneracy, ls_err *err)
{
    int32_t n = g->n;
    size_t nn = (size_t)(n > 0 ? n : 1);
    dheap h = {malloc(nn * sizeof(int32_t)), malloc(nn * sizeof(int32_t)), malloc(nn * sizeof(int64_t)), n};
    if (h.heap == NULL || h.pos == NULL || h.deg == NULL) {
        free(h.heap);
        free(h.pos);
        free(h.deg);
        return ls_fail(err, LS_ENOMEM, "cliques: out of memory for the ordering of %ld nodes", (long)n);
    }
    /* Nodes in id order with their degrees form a heap once sifted. */
    for (int32_t v = 0; v < n; v++) {
        h.heap[v] = v;
        h.pos[v] = v;
        h.deg[v] = g->out_off[v + 1] - g->out_off[v];
    }
    for (int32_t i = n / 2 - 1; i >= 0; i--)
        dheap_down(&h, i);
    int64_t core = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t v = h.heap[0];
        if (h.deg[v] > core)
            core = h.deg[v];
        h.size--;
        h.pos[v] = -1;
        if (h.size > 0) {
            h.heap[0] = h.heap[h.size];
            h.pos[h.heap[0]] = 0;
            dheap_down(&h, 0);
        }
        if (order != NULL)
            order[i] = v;
        if (rank != NULL)
            rank[v] = i;
        for (int64_t e = g->out_off[v]; e < g->out_off[v + 1]; e++) {
            int32_t w = g->out_adj[e];
            if (h.pos[w] >= 0) {
                h.deg[w]--;
                dheap_up(&h, h.pos[w]);
            }
        }
    }
    if (degeneracy != NULL)
        *degeneracy = (int32_t)core;
    free(h.heap);
    free(h.pos);
    free(h.deg);
    return LS_OK;
}

/* ---- the oriented graph ------------------------------------------------- */

typedef struct {
    int32_t n;
    int32_t max_out;     /* the largest out-degree: the degeneracy */
    int64_t *off;        /* [n+1], by rank */
    int32_t *adj;        /* higher ranks adjacent to rank r, sorted */
    int32_t *order;      /* order[r]: the node of rank r */
} oriented;

static void oriented_free(oriented *o)
{
    free(o->off);
    free(o->adj);
    free(o->order);
}

static ls_status oriented_build(oriented *o, const graph *g, ls_err *err)
{
    memset(o, 0, sizeof *o);
    int32_t n = g->n;
    size_t nn = (size_t)n + 1;
    int32_t *rank = malloc(nn * sizeof *rank);
    o->order = malloc(nn * sizeof *o->order);
    o->off = calloc(nn, sizeof *o->off);
    o->adj = malloc((size_t)(g->n_edges > 0 ? g->n_edges : 1) * sizeof *o->adj);
    o->n = n;
    if (rank == NULL || o->order == NULL || o->off == NULL || o->adj == NULL) {
        free(rank);
        oriented_free(o);
        return ls_fail(err, LS_ENOMEM, "cliques: out of memory for %lld edges", (long long)g->n_edges);
    }
    ls_status st = cliques_degeneracy(g, o->order, rank, &o->max_out, err);
    if (st != LS_OK) {
        free(rank);
        oriented_free(o);
        return st;
    }
    for (int32_t r = 0; r < n; r++) {
        int32_t v = o->order[r];
        int64_t c = 0;
        for (int64_t e = g->out_off[v]; e < g->out_off[v + 1]; e++)
            c += rank[g->out_adj[e]] > r;
        o->off[r + 1] = o->off[r] + c;
    }
    for (int32_t r = 0; r < n; r++) {
        int32_t v = o->order[r];
        int32_t *row = o->adj + o->off[r];
        int64_t c = 0;
        for (int64_t e = g->out_off[v]; e < g->out_off[v + 1]; e++)
            if (rank[g->out_adj[e]] > r)
                row[c++] = rank[g->out_adj[e]];
        /* Insertion sort: rows hold at most the degeneracy. */
        for (int64_t i = 1; i < c; i++) {
            int32_t x = row[i];
            int64_t j = i;
            while (j > 0 && row[j - 1] > x) {
                row[j] = row[j - 1];
                j--;
            }
            row[j] = x;
        }
    }
    free(rank);
    return LS_OK;
}

/* ---- one root ----------------------------------------------------------- */

/* A worker's scratch: the local graph of one root and a candidate stack. */
typedef struct {
    int32_t *mark;       /* [n]: local index of a rank among the root's candidates, -1 otherwise */
    uint64_t *rows;      /* [d_max * words]: local out-neighbours, one bitset a candidate */
    uint64_t *stack;     /* [k * words]: the candidate set at each level */
    int32_t *path;       /* [k]: chosen local indices */
    int32_t *cand;       /* the root's candidates (ranks), d of them */
    int32_t d, words;
    uint64_t total;      /* count: this worker's sum */
    double cpu_seconds;  /* this worker's CPU time inside jobs (a measure of balance) */
    int64_t roots;       /* roots this worker took */
    int overflow;
    char pad[64];
} scratch;

static void root_setup(const oriented *o, scratch *s, int32_t r)
{
    const int32_t *c = o->adj + o->off[r];
    int32_t d = (int32_t)(o->off[r + 1] - o->off[r]);
    int32_t words = (d + 63) / 64;
    s->cand = (int32_t *)c;
    s->d = d;
    s->words = words;
    for (int32_t j = 0; j < d; j++)
        s->mark[c[j]] = j;
    memset(s->rows, 0, (size_t)d * (size_t)words * sizeof *s->rows);
    for (int32_t j = 0; j < d; j++) {
        uint64_t *row = s->rows + (size_t)j * (size_t)words;
        int32_t cj = c[j];
        for (int64_t e = o->off[cj]; e < o->off[cj + 1]; e++) {
            int32_t l = s->mark[o->adj[e]];
            if (l >= 0)
                row[l >> 6] |= (uint64_t)1 << (l & 63);
        }
    }
    for (int32_t j = 0; j < d; j++)
        s->mark[c[j]] = -1;
}

static int popcount_words(const uint64_t *x, int32_t from, int32_t words)
{
    int c = 0;
    for (int32_t w = from; w < words; w++)
        c += __builtin_popcountll(x[w]);
    return c;
}

/* Cliques of `need` more nodes inside cand (a set at level `lvl` of the
 * stack), at most `limit` counted (the count stops there). The body is
 * stamped out for one and two words of candidates (WormNet's δ = 125 needs
 * two) with the word count a constant, and for any count; each with and
 * without the popcnt instruction (chosen at run time: without it
 * __builtin_popcountll is a library call). Integer results: every version
 * gives the same numbers. */
#define COUNT_REC_BODY(SELF, WORDS)                                                                   \
    {                                                                                                  \
        const int32_t words = (WORDS);                                                                 \
        if (need == 1)                                                                                 \
            return (uint64_t)popcount_words(cand, from, words);                                         \
        uint64_t total = 0;                                                                            \
        uint64_t *next = s->stack + (size_t)lvl * (size_t)words;                                       \
        for (int32_t w = from; w < words; w++) {                                                       \
            uint64_t x = cand[w];                                                                      \
            while (x != 0) {                                                                           \
                int32_t j = w * 64 + __builtin_ctzll(x);                                               \
                x &= x - 1;                                                                            \
                const uint64_t *row = s->rows + (size_t)j * (size_t)words;                             \
                uint64_t c;                                                                            \
                if (need == 2) {                                                                       \
                    /* The last level: a popcount of the intersection. */                            \
                    c = 0;                                                                             \
                    for (int32_t v = w; v < words; v++)                                                \
                        c += (uint64_t)__builtin_popcountll(cand[v] & row[v]);                         \
                } else {                                                                               \
                    int32_t first = words, pc = 0;                                                     \
                    for (int32_t v = w; v < words; v++) {                                              \
                        next[v] = cand[v] & row[v];                                                    \
                        if (next[v] != 0 && first == words)                                            \
                            first = v;                                                                 \
                        pc += __builtin_popcountll(next[v]);                                           \
                    }                                                                                  \
                    if (pc < need - 1)                                                                 \
                        continue;                                                                      \
                    c = SELF(s, next, first, need - 1, lvl + 1, limit - total);                        \
                }                                                                                      \
                if (__builtin_add_overflow(total, c, &total)) {                                        \
                    s->overflow = 1;                                                                   \
                    return UINT64_MAX;                                                                 \
                }                                                                                      \
                if (total >= limit)                                                                    \
                    return total;                                                                      \
            }                                                                                          \
        }                                                                                              \
        return total;                                                                                  \
    }

typedef uint64_t (*count_fn)(scratch *s, const uint64_t *cand, int32_t from, int need, int lvl, uint64_t limit);

#define DEFINE_COUNT(NAME, ATTR, WORDS)                                                                \
    static ATTR uint64_t NAME(scratch *s, const uint64_t *cand, int32_t from, int need, int lvl,      \
                              uint64_t limit) COUNT_REC_BODY(NAME, WORDS)

#define ATTR_NONE
DEFINE_COUNT(count_rec_1, ATTR_NONE, 1)
DEFINE_COUNT(count_rec_2, ATTR_NONE, 2)
DEFINE_COUNT(count_rec_n, ATTR_NONE, s->words)

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_POPCNT_PATH 1
#define ATTR_POPCNT __attribute__((target("popcnt")))
static ATTR_POPCNT int popcount_words_hw(const uint64_t *x, int32_t from, int32_t words)
{
    int c = 0;
    for (int32_t w = from; w < words; w++)
        c += __builtin_popcountll(x[w]);
    return c;
}
#define popcount_words popcount_words_hw
DEFINE_COUNT(count_rec_1_hw, ATTR_POPCNT, 1)
DEFINE_COUNT(count_rec_2_hw, ATTR_POPCNT, 2)
DEFINE_COUNT(count_rec_n_hw, ATTR_POPCNT, s->words)
#undef popcount_words
#else
#define HAVE_POPCNT_PATH 0
#endif

static simd_switch cliques_simd = SIMD_SWITCH_INIT;

int cliques_simd_set(int enabled)
{
    return simd_set(&cliques_simd, enabled);
}

static count_fn pick_count(int32_t words)
{
#if HAVE_POPCNT_PATH
    if (simd_path(&cliques_simd) != SIMD_PATH_SCALAR && __builtin_cpu_supports("popcnt"))
        return words == 1 ? count_rec_1_hw : words == 2 ? count_rec_2_hw : count_rec_n_hw;
#endif
    return words == 1 ? count_rec_1 : words == 2 ? count_rec_2 : count_rec_n;
}

/* The k-cliques rooted at rank r, counted up to limit. k >= 2. */
static uint64_t root_count(const oriented *o, scratch *s, int32_t r, int k, uint64_t limit)
{
    root_setup(o, s, r);
    if (s->d < k - 1)
        return 0;
    uint64_t *all = s->stack;   /* level 0: every candidate */
    memset(all, 0, (size_t)s->words * sizeof *all);
    for (int32_t j = 0; j < s->d; j++)
        all[j >> 6] |= (uint64_t)1 << (j & 63);
    return pick_count(s->words)(s, all, 0, k - 1, 1, limit);
}

/* Where a listing goes: a buffer slot (k ints a clique) or the callback. */
typedef struct {
    int32_t *buf;        /* NULL: call fn */
    uint64_t room;       /* cliques the slot (or the cap) still takes */
    int (*fn)(void *ctx, const int32_t *nodes, int k);
    void *ctx;
    int stopped;         /* fn asked to stop */
    uint64_t emitted;
} sink;

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* One clique: the root, path[0..k-2) then j, as node ids sorted. Returns 0
 * when the sink is full or stopped. */
static int emit(const oriented *o, scratch *s, int32_t root, int k, sink *out)
{
    int32_t nodes[CLIQUES_MAX_K];
    nodes[0] = o->order[root];
    for (int i = 0; i < k - 1; i++)
        nodes[i + 1] = o->order[s->cand[s->path[i]]];
    if (k <= 16) {
        for (int i = 1; i < k; i++) {
            int32_t x = nodes[i];
            int j = i;
            while (j > 0 && nodes[j - 1] > x) {
                nodes[j] = nodes[j - 1];
                j--;
            }
            nodes[j] = x;
        }
    } else {
        qsort(nodes, (size_t)k, sizeof nodes[0], cmp_i32);
    }
    if (out->buf != NULL) {
        memcpy(out->buf + out->emitted * (uint64_t)k, nodes, (size_t)k * sizeof nodes[0]);
    } else if (out->fn(out->ctx, nodes, k) != 0) {
        out->stopped = 1;
    }
    out->emitted++;
    out->room--;
    return out->room > 0 && !out->stopped;
}

static int list_rec(const oriented *o, scratch *s, int32_t root, int k, const uint64_t *cand, int32_t from, int need,
                    int lvl, sink *out)
{
    int32_t words = s->words;
    uint64_t *next = s->stack + (size_t)lvl * (size_t)words;
    for (int32_t w = from; w < words; w++) {
        uint64_t x = cand[w];
        while (x != 0) {
            int32_t j = w * 64 + __builtin_ctzll(x);
            x &= x - 1;
            s->path[k - 1 - need] = j;
            if (need == 1) {
                if (!emit(o, s, root, k, out))
                    return 0;
                continue;
            }
            const uint64_t *row = s->rows + (size_t)j * (size_t)words;
            int32_t first = words, pc = 0;
            for (int32_t v = w; v < words; v++) {
                next[v] = cand[v] & row[v];
                if (next[v] != 0 && first == words)
                    first = v;
                pc += __builtin_popcountll(next[v]);
            }
            if (pc < need - 1)
                continue;
            if (!list_rec(o, s, root, k, next, first, need - 1, lvl + 1, out))
                return 0;
        }
    }
    return 1;
}

/* Lists the k-cliques rooted at r into out. k >= 2. */
static void root_list(const oriented *o, scratch *s, int32_t r, int k, sink *out)
{
    root_setup(o, s, r);
    if (s->d < k - 1 || out->room == 0)
        return;
    uint64_t *all = s->stack;
    memset(all, 0, (size_t)s->words * sizeof *all);
    for (int32_t j = 0; j < s->d; j++)
        all[j >> 6] |= (uint64_t)1 << (j & 63);
    list_rec(o, s, r, k, all, 0, k - 1, 1, out);
}

/* ---- the parallel driver ------------------------------------------------ */

typedef struct {
    const oriented *o;
    int k;
    scratch *scr;             /* one per worker */
    atomic_llong next;        /* the next root (index into [lo, hi)) to hand out */
    int32_t lo, hi;
    const int32_t *sequence;  /* count: the roots in the order handed out, NULL: lo, lo+1, ... */
    /* counting a window (listing) */
    uint64_t *root_counts;    /* [hi - lo], NULL when counting totals */
    uint64_t limit;
    /* filling a window */
    int32_t **slot;           /* [hi - lo]: buffer slot of each root, NULL: not buffered */
    uint64_t *slot_room;
    int mode;                 /* 0 count total, 1 count per root, 2 fill */
    /* counting a total under controls (NULL: none) */
    const cliques_control *ctl;
    atomic_llong roots_done;
    atomic_int stopped;
} job;

static void job_run(void *ctx, int worker, int n_workers)
{
    (void)n_workers;
    job *jb = ctx;
    scratch *s = &jb->scr[worker];
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    const cliques_control *ctl = jb->ctl;
    for (;;) {
        if (ctl != NULL && ctl->stop != NULL && __atomic_load_n(ctl->stop, __ATOMIC_RELAXED) != 0) {
            atomic_store_explicit(&jb->stopped, 1, memory_order_relaxed);
            break;
        }
        long long i = atomic_fetch_add_explicit(&jb->next, 1, memory_order_relaxed);
        if (i >= jb->hi - jb->lo)
            break;
        int32_t r = jb->sequence != NULL ? jb->sequence[i] : jb->lo + (int32_t)i;
        s->roots++;
        if (jb->mode == 0) {
            uint64_t c = root_count(jb->o, s, r, jb->k, UINT64_MAX);
            if (__builtin_add_overflow(s->total, c, &s->total))
                s->overflow = 1;
        } else if (jb->mode == 1) {
            jb->root_counts[i] = root_count(jb->o, s, r, jb->k, jb->limit);
        } else if (jb->slot[i] != NULL) {
            sink out = {jb->slot[i], jb->slot_room[i], NULL, NULL, 0, 0};
            root_list(jb->o, s, r, jb->k, &out);
        }
        if (ctl != NULL) {
            const long long done = atomic_fetch_add_explicit(&jb->roots_done, 1, memory_order_relaxed) + 1;
            if (ctl->progress != NULL)
                ctl->progress(ctl->ctx, (int64_t)done, (int64_t)(jb->hi - jb->lo));
        }
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    s->cpu_seconds += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

static void run_job(pool *p, job *jb)
{
    atomic_store(&jb->next, 0);
    if (p != NULL)
        pool_run(p, job_run, jb);
    else
        job_run(jb, 0, 1);
}

static void scratch_free(scratch *scr, int n)
{
    if (scr == NULL)
        return;
    for (int i = 0; i < n; i++) {
        free(scr[i].mark);
        free(scr[i].rows);
        free(scr[i].stack);
        free(scr[i].path);
    }
    free(scr);
}

static ls_status scratch_alloc(scratch **out, int n_workers, const oriented *o, int k, ls_err *err)
{
    scratch *scr = calloc((size_t)n_workers, sizeof *scr);
    if (scr == NULL)
        return ls_fail(err, LS_ENOMEM, "cliques: out of memory");
    int32_t words = (o->max_out + 63) / 64;
    if (words < 1)
        words = 1;
    for (int i = 0; i < n_workers; i++) {
        scr[i].mark = malloc((size_t)(o->n > 0 ? o->n : 1) * sizeof *scr[i].mark);
        scr[i].rows = malloc((size_t)(o->max_out > 0 ? o->max_out : 1) * (size_t)words * sizeof *scr[i].rows);
        scr[i].stack = malloc((size_t)(k + 1) * (size_t)words * sizeof *scr[i].stack);
        scr[i].path = malloc((size_t)(k + 1) * sizeof *scr[i].path);
        if (!scr[i].mark || !scr[i].rows || !scr[i].stack || !scr[i].path) {
            scratch_free(scr, n_workers);
            return ls_fail(err, LS_ENOMEM, "cliques: out of memory for the scratch of %d workers", n_workers);
        }
        for (int32_t v = 0; v < o->n; v++)
            scr[i].mark[v] = -1;
    }
    *out = scr;
    return LS_OK;
}

static ls_status check_args(const graph *g, int k, ls_err *err)
{
    if (g->directed)
        return ls_fail(err, LS_EINVAL, "cliques: the graph is directed (cliques are of undirected graphs)");
    if (k < 1 || k > CLIQUES_MAX_K)
        return ls_fail(err, LS_EINVAL, "-k: %d is out of range (1..%d)", k, CLIQUES_MAX_K);
    return LS_OK;
}

ls_status cliques_count(const graph *g, int k, pool *p, uint64_t *count, ls_err *err)
{
    return cliques_count_stats(g, k, p, count, NULL, err);
}

ls_status cliques_count_stats(const graph *g, int k, pool *p, uint64_t *count, cliques_stats *stats, ls_err *err)
{
    return cliques_count_run(g, k, p, NULL, count, stats, err);
}

ls_status cliques_count_run(const graph *g, int k, pool *p, const cliques_control *ctl, uint64_t *count,
                            cliques_stats *stats, ls_err *err)
{
    *count = 0;
    if (stats != NULL)
        memset(stats, 0, sizeof *stats);
    ls_status st = check_args(g, k, err);
    if (st != LS_OK)
        return st;
    if (k == 1) {
        *count = (uint64_t)g->n;
        return LS_OK;
    }
    if (k == 2) {
        *count = (uint64_t)g->n_edges;
        return LS_OK;
    }
    oriented o;
    if ((st = oriented_build(&o, g, err)) != LS_OK)
        return st;
    int nw = p != NULL ? pool_threads(p) : 1;
    scratch *scr;
    if ((st = scratch_alloc(&scr, nw, &o, k, err)) != LS_OK) {
        oriented_free(&o);
        return st;
    }
    job jb;
    memset(&jb, 0, sizeof jb);
    jb.o = &o;
    jb.k = k;
    jb.scr = scr;
    /* Roots with the most candidates first (a counting sort by out-degree,
     * ties in rank order): the heavy roots start early and the last ones
     * handed out are light, so no worker is left with a long tail. The sum
     * does not depend on this order; only the balance does. */
    int32_t *sequence = malloc((size_t)(o.n > 0 ? o.n : 1) * sizeof *sequence);
    int64_t *bucket = calloc((size_t)o.max_out + 2, sizeof *bucket);
    if (sequence == NULL || bucket == NULL) {
        free(sequence);
        free(bucket);
        scratch_free(scr, nw);
        oriented_free(&o);
        return ls_fail(err, LS_ENOMEM, "cliques: out of memory");
    }
    for (int32_t r = 0; r < o.n; r++)
        bucket[o.max_out - (o.off[r + 1] - o.off[r]) + 1]++;
    for (int32_t d = 0; d <= o.max_out; d++)
        bucket[d + 1] += bucket[d];
    for (int32_t r = 0; r < o.n; r++)
        sequence[bucket[o.max_out - (o.off[r + 1] - o.off[r])]++] = r;
    free(bucket);
    jb.lo = 0;
    jb.hi = o.n;
    jb.sequence = sequence;
    jb.mode = 0;
    jb.ctl = ctl;
    atomic_init(&jb.roots_done, 0);
    atomic_init(&jb.stopped, 0);
    run_job(p, &jb);
    free(sequence);
    if (atomic_load(&jb.stopped)) {
        const long long roots = (long long)atomic_load(&jb.roots_done);
        scratch_free(scr, nw);
        oriented_free(&o);
        return ls_fail(err, LS_EINTR, "interrupted after %lld of %lld roots: no count", roots, (long long)o.n);
    }
    uint64_t total = 0;
    int overflow = 0;
    if (stats != NULL) {
        stats->n_workers = nw;
        stats->degeneracy = o.max_out;
        for (int i = 0; i < nw; i++) {
            stats->worker_cpu_seconds[i] = scr[i].cpu_seconds;
            stats->worker_roots[i] = scr[i].roots;
        }
    }
    for (int i = 0; i < nw; i++) {
        overflow |= scr[i].overflow;
        if (__builtin_add_overflow(total, scr[i].total, &total))
            overflow = 1;
    }
    scratch_free(scr, nw);
    oriented_free(&o);
    if (overflow)
        return ls_fail(err, LS_EINVAL, "-k %d: the number of cliques exceeds 2^64 - 1", k);
    *count = total;
    return LS_OK;
}

/* Roots per window of a listing, and the most cliques buffered at once
 * (a test may lower it, to see roots listed past the buffer). */
#define LIST_WINDOW 1024
static _Atomic uint64_t list_budget = 0;   /* 0: 2^22 node ids (16 MiB) worth of cliques */

uint64_t cliques_list_budget_set(uint64_t cliques)
{
    return atomic_exchange(&list_budget, cliques);
}

ls_status cliques_list(const graph *g, int k, pool *p, uint64_t max, int (*fn)(void *ctx, const int32_t *nodes, int k),
                       void *ctx, uint64_t *listed, ls_err *err)
{
    return cliques_list_run(g, k, p, max, fn, ctx, NULL, listed, err);
}

ls_status cliques_list_run(const graph *g, int k, pool *p, uint64_t max,
                           int (*fn)(void *ctx, const int32_t *nodes, int k), void *ctx, const volatile int *stop,
                           uint64_t *listed, ls_err *err)
{
    if (listed != NULL)
        *listed = 0;
    ls_status st = check_args(g, k, err);
    if (st != LS_OK)
        return st;
    uint64_t budget = atomic_load(&list_budget);
    if (budget == 0)
        budget = ((uint64_t)1 << 22) / (uint64_t)k;
    uint64_t remaining = max == 0 ? UINT64_MAX : max;
    uint64_t done = 0;
    if (k == 1) {
        for (int32_t v = 0; v < g->n && remaining > 0; v++, remaining--) {
            done++;
            if (fn(ctx, &v, 1) != 0)
                break;
        }
        if (listed != NULL)
            *listed = done;
        return LS_OK;
    }
    oriented o;
    if ((st = oriented_build(&o, g, err)) != LS_OK)
        return st;
    int nw = p != NULL ? pool_threads(p) : 1;
    scratch *scr = NULL;
    uint64_t *counts = malloc(LIST_WINDOW * sizeof *counts);
    int32_t **slot = malloc(LIST_WINDOW * sizeof *slot);
    uint64_t *slot_room = malloc(LIST_WINDOW * sizeof *slot_room);
    int32_t *buf = malloc((size_t)budget * (size_t)k * sizeof *buf);
    if (counts == NULL || slot == NULL || slot_room == NULL || buf == NULL) {
        st = ls_fail(err, LS_ENOMEM, "cliques: out of memory for the listing buffer");
        goto done;
    }
    if ((st = scratch_alloc(&scr, nw, &o, k, err)) != LS_OK)
        goto done;
    job jb;
    memset(&jb, 0, sizeof jb);
    jb.o = &o;
    jb.k = k;
    jb.scr = scr;
    jb.root_counts = counts;
    jb.slot = slot;
    jb.slot_room = slot_room;
    /* Only the stop flag: a window's roots are searched on the pool, and a
     * stopped window is not delivered. */
    const cliques_control ctl = { stop, NULL, NULL };
    jb.ctl = stop != NULL ? &ctl : NULL;
    atomic_init(&jb.stopped, 0);
    int stopped = 0;
    int32_t counted = 0;   /* roots below this have their counts in counts[r - base] */
    int32_t base = 0;
    for (int32_t lo = 0; lo < o.n && remaining > 0 && !stopped;) {
        int32_t hi = o.n - lo > LIST_WINDOW ? lo + LIST_WINDOW : o.n;
        /* 1: count the window's roots not counted yet, each count capped
         * just above what could be buffered or is still wanted (a count
         * capped earlier, under a larger cap, stays valid). */
        if (counted < hi) {
            memmove(counts, counts + (lo - base), (size_t)(counted - lo) * sizeof *counts);
            base = lo;
            jb.root_counts = counts + (counted - base);
            jb.lo = counted;
            jb.hi = hi;
            jb.mode = 1;
            jb.limit = remaining < budget + 1 ? remaining : budget + 1;
            run_job(p, &jb);
            counted = hi;
            if (atomic_load(&jb.stopped))
                break;
        }
        if (base != lo) {
            memmove(counts, counts + (lo - base), (size_t)(counted - lo) * sizeof *counts);
            base = lo;
        }
        jb.lo = lo;
        /* 2: the roots that fit the buffer get slots; a root over the
         * budget stays unbuffered (listed below on this thread). The
         * window ends where the buffer is full or the cap is reached. */
        uint64_t used = 0, wanted = 0;
        int32_t end = lo;
        for (int32_t r = lo; r < hi; r++) {
            uint64_t c = counts[r - lo];
            if (c > 0 && c <= budget && used + c > budget)
                break;
            uint64_t take = c < remaining - wanted ? c : remaining - wanted;
            if (c > 0 && c <= budget) {
                slot[r - lo] = buf + used * (uint64_t)k;
                slot_room[r - lo] = take;
                used += take;
            } else if (c > budget) {
                /* Its count is only known to exceed the budget: it may
                 * take whatever is still wanted, and ends the window. */
                slot[r - lo] = NULL;
                slot_room[r - lo] = remaining - wanted;
                end = r + 1;
                break;
            } else {
                slot[r - lo] = NULL;
                slot_room[r - lo] = 0;
            }
            wanted += take;
            end = r + 1;
            if (wanted == remaining)
                break;
        }
        jb.hi = end;
        jb.mode = 2;
        run_job(p, &jb);
        if (atomic_load(&jb.stopped))
            break;
        /* 3: deliver in root order. */
        for (int32_t r = lo; r < end && !stopped; r++) {
            uint64_t room = slot_room[r - lo];
            if (room == 0)
                continue;
            if (slot[r - lo] != NULL) {
                for (uint64_t i = 0; i < room; i++) {
                    done++;
                    remaining--;
                    if (fn(ctx, slot[r - lo] + i * (uint64_t)k, k) != 0) {
                        stopped = 1;
                        break;
                    }
                }
            } else {
                sink out = {NULL, room, fn, ctx, 0, 0};
                root_list(&o, &scr[0], r, k, &out);
                done += out.emitted;
                remaining -= out.emitted;
                stopped = out.stopped;
            }
        }
        lo = end;
    }
    if (st == LS_OK && atomic_load(&jb.stopped))
        st = ls_fail(err, LS_EINTR, "interrupted after %llu cliques listed", (unsigned long long)done);
done:
    if (listed != NULL)
        *listed = done;
    scratch_free(scr, nw);
    free(counts);
    free(slot);
    free(slot_room);
    free(buf);
    oriented_free(&o);
    return st;
}
