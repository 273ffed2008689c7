/* model.c — model instances from registered descriptors. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

ls_status model_create(ls_model **out, const ls_config *cfg, const ls_dataset *data, ls_err *err)
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
    ls_status st = d->create(&m->self, &m->info, cfg, data, err);
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
    if (st != LS_OK) {
        model_destroy(m);
        return st;
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
