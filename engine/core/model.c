/* model.c — model instances from registered descriptors: created, their
 * declarations checked, their hints taken or (LOCKSTEP_HINTS=off) not, and
 * their leaves computed in either mode whether or not the model adds. */
#include "engine/core/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/simd.h"
#include "reduce/tree.h"

int model_hints_off(void)
{
    const char *v = getenv("LOCKSTEP_HINTS");
    return v != NULL && strcmp(v, "off") == 0;
}

ls_status model_create(ls_model **out, const ls_config *cfg, const ls_dataset *data, ls_err *err)
{
    return model_create_hinted(out, cfg, data, !model_hints_off(), err);
}

ls_status model_create_hinted(ls_model **out, const ls_config *cfg, const ls_dataset *data, int hints, ls_err *err)
{
    *out = NULL;
    const ls_model_desc *d = cfg->model_desc;
    if (d == NULL)
        return ls_fail(err, LS_EINVAL, "--model: the config names no model");
    ls_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ls_fail(err, LS_ENOMEM, "model %s: out of memory", d->name);
    m->desc = d;
    m->name = d->name;
    /* A model that does not sum a leaf of several atoms as their subtree
     * gets leaves of one atom (ls_model_desc.leaf_atoms). */
    const ls_config *use = cfg;
    ls_config *one_atom = NULL;
    if (!d->leaf_atoms && config_has_key(cfg, "leaf") && ls_config_int(cfg, "leaf") != LS_ATOM) {
        one_atom = malloc(sizeof *one_atom);
        if (one_atom == NULL) {
            free(m);
            return ls_fail(err, LS_ENOMEM, "model %s: out of memory", d->name);
        }
        *one_atom = *cfg;
        char v[16];
        snprintf(v, sizeof v, "%d", LS_ATOM);
        ls_status st = config_set(one_atom, "leaf", v, 0, err);
        if (st != LS_OK) {
            free(one_atom);
            free(m);
            return st;
        }
        use = one_atom;
    }
    ls_status st = d->create(&m->self, &m->info, use, data, err);
    free(one_atom);
    if (st != LS_OK) {
        free(m);
        return st;
    }
    const ls_model_info *i = &m->info;
    if (i->n_params == 0 || i->leaf_len == 0 || i->leaves == 0 || i->finish_units == 0)
        st = ls_fail(err, LS_EINVAL, "model %s: declares no parameters, leaves or finish units", d->name);
    else if (i->phases > 0 && (i->units == 0 || d->phase == NULL))
        st = ls_fail(err, LS_EINVAL, "model %s: declares %zu phases but no work units or phase function", d->name,
                     i->phases);
    else if (i->prepare_parts > 0 && d->prepare_part == NULL)
        st = ls_fail(err, LS_EINVAL, "model %s: declares %zu prepare parts but no prepare_part function", d->name,
                     i->prepare_parts);
    else if (i->prepare_parts == 0 && d->prepare_part != NULL)   /* it would never run */
        st = ls_fail(err, LS_EINVAL, "model %s: has a prepare_part function but declares no prepare parts", d->name);
    else if (i->hints.finish_mean && (i->finish_units != i->n_params || i->leaf_len < i->n_params))
        st = ls_fail(err, LS_EINVAL,
                     "model %s: declares finish_mean with %zu finish units and leaves of %zu floats for %zu parameters",
                     d->name, i->finish_units, i->leaf_len, i->n_params);
    else if (i->hints.finish_span > 0 && i->finish_units > i->leaf_len / i->hints.finish_span)
        st = ls_fail(err, LS_EINVAL, "model %s: declares finish_span %zu for %zu finish units, past its leaves of %zu floats",
                     d->name, i->hints.finish_span, i->finish_units, i->leaf_len);
    else if (i->hints.phase_group > 0 && (i->phases == 0 || i->units % i->hints.phase_group != 0))
        st = ls_fail(err, LS_EINVAL, "model %s: declares phase_group %zu for %zu phases of %zu units (it must divide them)",
                     d->name, i->hints.phase_group, i->phases, i->units);
    else if (i->hints.phase_group > 0 && i->hints.phase_reach >= i->hints.phase_group)
        st = ls_fail(err, LS_EINVAL, "model %s: declares phase_reach %zu, past its phase_group of %zu units", d->name,
                     i->hints.phase_reach, i->hints.phase_group);
    if (st != LS_OK) {
        model_destroy(m);
        return st;
    }
    /* A hint is checked above even when it is then dropped: the check mode
     * runs what the model declared, minus the shortcuts. */
    m->leaf_held = hints ? d->leaf_held : NULL;
    m->leaf_adds = hints && d->leaf_adds;
    if (!hints)
        memset(&m->info.hints, 0, sizeof m->info.hints);
    if (!m->leaf_adds) {
        m->add_at = (m->info.scratch_bytes + 63) / 64 * 64;
        m->info.scratch_bytes = m->add_at + m->info.leaf_len * sizeof(float);
    }
    *out = m;
    return LS_OK;
}

void model_destroy(ls_model *m)
{
    if (m == NULL)
        return;
    if (m->self != NULL)
        m->desc->destroy(m->self);
    free(m);
}

double model_leaf(const ls_model *m, const float *params, const ls_batch *b, size_t leaf, float *buf, int mode,
                  void *scratch)
{
    if (mode == LS_LEAF_WRITE || m->leaf_adds)
        return m->desc->leaf(m->self, params, b, leaf, buf, mode, scratch);
    float *own = (float *)(void *)((unsigned char *)scratch + m->add_at);
    const double loss = m->desc->leaf(m->self, params, b, leaf, own, LS_LEAF_WRITE, scratch);
    tree_add(buf, own, m->info.leaf_len);
    return loss;
}

typedef struct {
    const ls_model *m;
    const float *params;
} prepare_job;

static void prepare_part_unit(void *ctx, size_t part, int worker)
{
    (void)worker;   /* a part's result cannot depend on who computes it */
    const prepare_job *job = ctx;
    job->m->desc->prepare_part(job->m->self, job->params, part);
}

ls_status model_prepare(const ls_model *m, const float *params, const ls_batch *b, pool *p, ls_err *err)
{
    if (m->desc->prepare != NULL) {
        ls_status st = m->desc->prepare(m->self, params, b, err);
        if (st != LS_OK)
            return st;
    }
    const size_t parts = m->desc->prepare_part != NULL ? m->info.prepare_parts : 0;
    prepare_job job = { m, params };
    if (p != NULL && parts > 1) {
        pool_parallel_for(p, parts, prepare_part_unit, &job);
    } else {
        for (size_t i = 0; i < parts; i++)
            prepare_part_unit(&job, i, 0);
    }
    return LS_OK;
}

LS_SIMD_CLONES
static void divide_range(float *restrict out, const float *restrict in, size_t n, float d)
{
    #pragma omp simd
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] / d;
}

void model_finish_mean(const void *self, const float *sum, size_t batch, float *grad, size_t lo, size_t hi)
{
    (void)self;
    if (hi > lo)
        divide_range(grad + lo, sum + lo, hi - lo, (float)batch);
}
