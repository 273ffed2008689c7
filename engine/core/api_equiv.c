/* api_equiv.c — ls_equiv (include/lockstep.h): one config trained at several
 * thread counts and every run compared with the first, bit for bit. It is
 * the contract as a test anyone can run on their own model: the command
 * line's `lockstep equiv` and examples/softmax.c are both this loop, over
 * the public session API. Every input is checked before the first run, so a
 * refused call records nothing. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/api_size.h"
#include "engine/core/config.h"
#include "engine/core/train.h"
#include "include/lockstep.h"
#include "record/runlog.h"

/* The leaf sizes of a 1.1 caller (none for a 1.0 one). */
static size_t n_leaves(const ls_equiv_opts *o)
{
    return o->size >= sizeof *o && o->leaves != NULL ? o->n_leaves : 0;
}

/* Run i trains at threads[i mod T] and, with leaf sizes, leaves[i div T]. */
static size_t n_runs(const ls_equiv_opts *o)
{
    const size_t l = n_leaves(o);
    return o->n_threads * (l > 0 ? l : 1);
}

static int run_threads(const ls_equiv_opts *o, size_t i)
{
    return o->threads[i % o->n_threads];
}

static int run_leaf(const ls_equiv_opts *o, size_t i)
{
    return n_leaves(o) > 0 ? o->leaves[i / o->n_threads] : 0;
}

/* Run i's name: "<name>-t<threads>" (with leaf sizes "-l<leaf>" after
 * it), or NULL for "run-<id>". */
static const char *run_name(const ls_equiv_opts *o, size_t i, char *buf, size_t cap)
{
    if (o->session.db == NULL || o->session.name == NULL)
        return NULL;
    if (run_leaf(o, i) > 0)
        snprintf(buf, cap, "%s-t%d-l%d", o->session.name, run_threads(o, i), run_leaf(o, i));
    else
        snprintf(buf, cap, "%s-t%d", o->session.name, run_threads(o, i));
    return buf;
}

static ls_status check_opts(const ls_equiv_opts *o, ls_err *err)
{
    if (o == NULL)
        return ls_fail(err, LS_EINVAL, "ls_equiv: no options (the thread counts)");
    ls_status st = o->size == LS_EQUIV_OPTS_SIZE_1_0 ? LS_OK : api_size_check("ls_equiv_opts", NULL, o->size, sizeof *o, err);
    if (st == LS_OK)
        st = api_size_session_opts(&o->session, err);
    if (st != LS_OK)
        return st;
    if (o->threads == NULL || o->n_threads == 0 || o->n_threads > LS_EQUIV_MAX)
        return ls_fail(err, LS_EINVAL, "--threads: %zu thread counts (1 to %d)", o->threads ? o->n_threads : 0,
                       LS_EQUIV_MAX);
    /* Each count once: a repeat would train the same run twice, and with a
     * name give two runs one name. */
    for (size_t i = 0; i < o->n_threads; i++)
        for (size_t j = 0; j < i; j++)
            if (o->threads[i] == o->threads[j])
                return ls_fail(err, LS_EINVAL, "--threads: %d appears twice; each thread count is trained once",
                               o->threads[i]);
    const size_t nl = n_leaves(o);
    for (size_t i = 0; i < nl; i++) {
        const int l = o->leaves[i];
        if (l < LS_ATOM || l % LS_ATOM != 0 || ((l / LS_ATOM) & (l / LS_ATOM - 1)) != 0)
            return ls_fail(err, LS_EINVAL, "--leaf: %d is not %d times a power of two", l, LS_ATOM);
        for (size_t j = 0; j < i; j++)
            if (o->leaves[j] == l)
                return ls_fail(err, LS_EINVAL, "--leaf: %d appears twice; each leaf size is trained once", l);
    }
    if (n_runs(o) > LS_EQUIV_MAX)
        return ls_fail(err, LS_EINVAL, "--threads x --leaf: %zu runs (at most %d)", n_runs(o), LS_EQUIV_MAX);
    return LS_OK;
}

/* No run name taken: checked for all before the first run is recorded. */
static ls_status check_names(const ls_equiv_opts *o, ls_err *err)
{
    if (o->session.db == NULL || o->session.name == NULL)
        return LS_OK;
    runlog *db;
    ls_status st = runlog_open(&db, o->session.db, err);
    for (size_t i = 0; st == LS_OK && i < n_runs(o); i++) {
        char name[160];
        int64_t existing;
        ls_err quiet;
        run_name(o, i, name, sizeof name);
        ls_status found = runlog_find(db, name, &existing, &quiet);
        if (found == LS_OK)
            st = ls_fail(err, LS_EEXIST, "run name '%s' is already used in %s", name, o->session.db);
        else if (found != LS_ENOTFOUND) {
            *err = quiet;
            st = found;
        }
    }
    runlog_close(db);
    return st;
}

/* Train run i to its target, evaluate it, close it; fills r. */
static ls_status equiv_one(const ls_config *cfg, const ls_equiv_opts *o, const ls_dataset *data, size_t i,
                           ls_equiv_run *r, ls_err *err)
{
    char name[160];
    ls_session_opts so = o->session;
    so.threads = run_threads(o, i);
    so.name = run_name(o, i, name, sizeof name);
    so.data = data;
    memset(r, 0, sizeof *r);
    r->threads = so.threads;
    r->run_id = -1;
    ls_session *s;
    ls_status st;
    if (run_leaf(o, i) > 0) {   /* the leaf is not in the canonical text: the same config */
        ls_config *c = malloc(sizeof *c);
        char leaf[16];
        snprintf(leaf, sizeof leaf, "%d", run_leaf(o, i));
        if (c == NULL)
            st = ls_fail(err, LS_ENOMEM, "ls_equiv: out of memory");
        else {
            *c = *cfg;
            st = config_set(c, "leaf", leaf, 0, err);
        }
        if (st == LS_OK)
            st = ls_session_open(&s, c, &so, err);
        free(c);
    } else {
        st = ls_session_open(&s, cfg, &so, err);
    }
    if (st != LS_OK) {
        r->status = st;
        return st;
    }
    st = ls_session_train(s, 0, 0, o->stop, r->metrics, &r->n_metrics, err);
    ls_session_state state;
    ls_session_state_get(s, &state);
    r->run_id = state.run_id;
    r->steps = state.step;
    r->loss = state.loss;
    r->config_hash = state.config_hash;
    r->param_hash = state.param_hash;
    r->traj_hash = state.traj_hash;
    r->train_seconds = state.train_seconds;
    ls_err closing = { "" };
    ls_status cst = ls_session_close(s, st, &closing);
    if (st == LS_OK && cst != LS_OK) {
        *err = closing;
        st = cst;
    }
    if (st != LS_OK)
        r->n_metrics = 0;
    r->status = st;
    return st;
}

/* Run i against run 0: the same config, steps and trajectory, and with a
 * record the same rows at every step. */
static ls_status equiv_compare(const ls_equiv_opts *o, ls_equiv_result *out, size_t i, ls_err *err)
{
    const ls_equiv_run *a = &out->runs[0];
    ls_equiv_run *b = &out->runs[i];
    b->same = b->config_hash == a->config_hash && b->steps == a->steps && b->traj_hash == a->traj_hash;
    if (o->session.db == NULL || a->run_id < 0 || b->run_id < 0)
        return LS_OK;
    char ia[24], ib[24];
    snprintf(ia, sizeof ia, "%" PRId64, a->run_id);
    snprintf(ib, sizeof ib, "%" PRId64, b->run_id);
    ls_status st = ls_verify(o->session.db, ia, ib, &b->verdict, err);
    if (st != LS_OK)
        return st;
    b->same = b->same && b->verdict.equal && b->verdict.same_config && b->verdict.steps == b->steps + 1;
    return LS_OK;
}

ls_status ls_equiv(const ls_config *cfg, const ls_equiv_opts *opts, ls_equiv_result *out, ls_err *err)
{
    /* A 1.0 caller's result ends before leaf[]. */
    const int v11 = opts != NULL && opts->size >= sizeof *opts;
    memset(out, 0, v11 ? sizeof *out : offsetof(ls_equiv_result, leaf));
    ls_status st = check_opts(opts, err);
    if (st != LS_OK)
        return st;
    /* The data before the database, so that a refused call does not leave
     * a new empty database behind; then loaded once for every run. */
    ls_dataset *owned = NULL;
    const ls_dataset *data = opts->session.data;
    if (data == NULL) {
        if ((st = trainer_load_data(cfg, &owned, err)) != LS_OK)
            return st;
        data = owned;
    }
    st = check_names(opts, err);
    for (size_t i = 0; st == LS_OK && i < n_runs(opts); i++) {
        ls_equiv_run *r = &out->runs[i];
        if (v11)
            out->leaf[i] = run_leaf(opts, i);
        st = equiv_one(cfg, opts, data, i, r, err);
        out->n_runs = i + 1;
        r->same = st == LS_OK;   /* the first run is its own reference */
        if (st == LS_OK && i > 0)
            st = equiv_compare(opts, out, i, err);
        if (opts->on_run != NULL)
            opts->on_run(opts->ctx, r);
    }
    out->equal = st == LS_OK;
    for (size_t i = 0; i < out->n_runs; i++)
        out->equal = out->equal && out->runs[i].same;
    ls_dataset_destroy(owned);
    return st;
}
