/* plan.c — the plan of a run's steps (plan.h): chosen from what the model
 * declared and how the run is spread, once, and written out as text. */
#include "engine/core/plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reduce/tree.h"

void plan_choose(plan *p, const ls_model *m, size_t batch, int threads, int reduce_unordered, int ranks,
                 size_t unit_lo, size_t unit_hi)
{
    const ls_model_info *mi = &m->info;
    const ls_model_hints *h = &mi->hints;
    memset(p, 0, sizeof *p);
    p->threads = threads;
    p->batch = batch;
    p->leaves = mi->leaves;
    p->leaf_len = mi->leaf_len;
    p->engine_adds = !m->leaf_adds;
    /* The order of the tests is the order of precedence: a run over ranks
     * or the unordered foil sums the leaves its own way whatever the model
     * promises. The finish sums the leaves where the model holds them when
     * it holds them, says what its finish reads, and has enough finish units
     * to give every thread a share (chunks of PLAN_FINISH_CHUNK); the
     * finish_mean fold reads the sum in the update, which cannot sum held
     * leaves, so it takes the tree without its top instead. */
    if (ranks > 1)
        p->reduce = PLAN_RANKS;
    else if (reduce_unordered)
        p->reduce = PLAN_UNORDERED;
    else if (m->leaf_held != NULL && h->finish_span > 0 && !h->finish_mean &&
             mi->finish_units >= PLAN_FINISH_CHUNK * (size_t)threads)
        p->reduce = PLAN_HELD;
    else if (h->finish_mean || h->finish_span > 0)
        p->reduce = PLAN_TREE_TOP;
    else
        p->reduce = PLAN_TREE;
    p->tree_block = tree_block_size(mi->leaves, threads);

    p->phases = mi->phases;
    p->units = mi->units;
    p->unit_lo = ranks > 1 ? unit_lo : 0;
    p->unit_hi = ranks > 1 ? unit_hi : mi->units;
    /* Waves need whole groups: a rank's range that cuts one runs behind barriers. */
    const size_t group = h->phase_group;
    p->waves = mi->phases > 0 && group > 0 && p->unit_lo % group == 0 && p->unit_hi % group == 0;
    if (p->waves) {
        p->wave_group = group;
        p->wave_reach = h->phase_reach;
        p->wave_wrap = h->phase_wrap != 0;
    }

    p->finish_folded = h->finish_mean != 0;
    p->finish_units = mi->finish_units;
    p->finish_span = h->finish_span;
    p->n_params = mi->n_params;
    p->update_pieces = (mi->n_params + PLAN_UPDATE_PIECE - 1) / PLAN_UPDATE_PIECE;
    p->param_bufs = threads > 1 ? PLAN_PARAM_BUFS : 1;

    p->scratch_stride = (mi->scratch_bytes + 63) / 64 * 64;
    if (p->reduce == PLAN_HELD)
        p->held_sum_floats = (mi->leaf_len + 15) / 16 * 16;
}

const char *plan_reduce_name(plan_reduce r)
{
    static const char *const names[] = { "tree", "tree-top", "held", "unordered", "ranks", "staged" };
    return (size_t)r < sizeof names / sizeof names[0] ? names[r] : "unknown";
}

/* Appends to buf as snprintf would, keeping the full length in *at. */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(*at < len ? buf + *at : NULL, *at < len ? len - *at : 0, fmt, ap);
    va_end(ap);
    if (w > 0)
        *at += (size_t)w;
}

size_t plan_describe(const plan *p, const char *model_name, char *buf, size_t len)
{
    size_t at = 0;
    if (len > 0)
        buf[0] = '\0';
    put(buf, len, &at, "plan of model %s at %d thread%s, batch %zu\n", model_name, p->threads,
        p->threads == 1 ? "" : "s", p->batch);
    put(buf, len, &at, "  leaves   %zu of %zu floats; %s\n", p->leaves, p->leaf_len,
        p->engine_adds ? "the engine writes a leaf and adds it where the tree adds"
                       : "the model adds a leaf itself where the tree adds");
    switch (p->reduce) {
    case PLAN_TREE:
        put(buf, len, &at, "  reduce   tree: blocks of %zu %s dealt to the workers, then the tree's last pass "
            "as a pass of its own\n", p->tree_block, p->tree_block == 1 ? "leaf" : "leaves");
        break;
    case PLAN_TREE_TOP:
        put(buf, len, &at, "  reduce   tree-top: blocks of %zu %s dealt to the workers; the tree's last pass "
            "combined by the %s workers where they read the sum\n", p->tree_block, p->tree_block == 1 ? "leaf" : "leaves",
            p->finish_folded ? "update's" : "finish's");
        break;
    case PLAN_HELD:
        put(buf, len, &at, "  reduce   held: the model holds its leaves; each finish worker sums along the tree "
            "the coordinates it reads\n");
        break;
    case PLAN_UNORDERED:
        put(buf, len, &at, "  reduce   unordered: one accumulator per worker, added in worker order (bits depend "
            "on the thread count)\n");
        break;
    case PLAN_RANKS:
        put(buf, len, &at, "  reduce   ranks: this process's pieces of the tree, combined over the ranks\n");
        break;
    case PLAN_STAGED:
        put(buf, len, &at, "  reduce   staged: the caller's tree sum\n");
        break;
    }
    if (p->phases == 0)
        put(buf, len, &at, "  phases   none\n");
    else if (p->waves)
        put(buf, len, &at, "  phases   %zu of units [%zu, %zu) as waves: groups of %zu, reach %zu%s\n", p->phases,
            p->unit_lo, p->unit_hi, p->wave_group, p->wave_reach, p->wave_wrap ? ", wrapped" : "");
    else
        put(buf, len, &at, "  phases   %zu of units [%zu, %zu), a barrier after each\n", p->phases, p->unit_lo,
            p->unit_hi);
    if (p->finish_folded)
        put(buf, len, &at, "  finish   folded into the update (grad = sum / %zu)\n", p->batch);
    else if (p->reduce == PLAN_HELD || p->reduce == PLAN_TREE_TOP)
        put(buf, len, &at, "  finish   %zu units in chunks of %d, each reading %zu floats of the sum per unit\n",
            p->finish_units, PLAN_FINISH_CHUNK, p->finish_span);
    else
        put(buf, len, &at, "  finish   %zu units in chunks of %d\n", p->finish_units, PLAN_FINISH_CHUNK);
    put(buf, len, &at, "  update   %zu parameters in %zu piece%s of at most %d; θ %s\n", p->n_params, p->update_pieces,
        p->update_pieces == 1 ? "" : "s", PLAN_UPDATE_PIECE, p->param_bufs > 1 ? "written into the buffer of two steps ago (3 buffers)" : "in place");
    put(buf, len, &at, "  scratch  %zu bytes per worker", p->scratch_stride);
    if (p->reduce == PLAN_HELD)
        put(buf, len, &at, "; the finish's sum %zu floats and %zu floats of partials per worker", p->held_sum_floats,
            (size_t)TREE_SPAN_FLOATS);
    put(buf, len, &at, "\n");
    return at;
}
