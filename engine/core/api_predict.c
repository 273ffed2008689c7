/* api_predict.c — a session's model from outside the engine: its scores of
 * given samples (ls_session_predict) and θ as named tensors
 * (ls_session_tensor), for tools and programs that use a trained model
 * through include/lockstep.h alone. Both read the trainer under the session
 * (engine/core/session.h) and its model instance (engine/core/model.h);
 * nothing here changes θ. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/model.h"
#include "engine/core/session.h"
#include "engine/core/train.h"
#include "include/lockstep.h"

/* The session's model instance, or LS_EINVAL when it holds none or it gives
 * no scores (want_scores). */
static ls_status session_model(ls_session *s, int want_scores, const ls_model **out, ls_err *err)
{
    *out = NULL;
    trainer *t = s != NULL ? session_trainer(s) : NULL;
    if (t == NULL)
        return ls_fail(err, LS_EINVAL, "the session holds no model (a run reopened to resume, done already)");
    const ls_model *m = trainer_model(t);
    if (want_scores && (m->desc->scores == NULL || m->info.inputs == 0 || m->info.outputs == 0))
        return ls_fail(err, LS_EINVAL, "model %s gives no scores to predict with", m->name);
    *out = m;
    return LS_OK;
}

ls_status ls_session_predict_shape(ls_session *s, size_t *inputs, size_t *outputs, ls_err *err)
{
    const ls_model *m;
    ls_status st = session_model(s, 1, &m, err);
    *inputs = st == LS_OK ? m->info.inputs : 0;
    *outputs = st == LS_OK ? m->info.outputs : 0;
    return st;
}

/* A NaN score of a sample whose features are all finite: the features are
 * not what the model reads (a token network's byte outside its vocabulary,
 * or ids given as 0..255 where it reads v/255), which the model meets as a
 * NaN row rather than an error. Named, so that no NaN passes for a score. */
static ls_status predict_check(const ls_model *m, const float *x, size_t count, const float *out, ls_err *err)
{
    const size_t in = m->info.inputs, k = m->info.outputs;
    for (size_t i = 0; i < count; i++) {
        size_t j = 0;
        while (j < k && !isnan(out[i * k + j]))
            j++;
        if (j == k)
            continue;
        size_t f = 0;
        while (f < in && isfinite(x[i * in + f]))
            f++;
        if (f < in)
            continue;   /* a NaN or infinite feature: the caller's own */
        return ls_fail(err, LS_EINVAL, "sample %zu: model %s gives NaN scores for its features: they are not what "
                       "it reads (a token network, as gpt, reads each byte v as v/255: a uint8 array or floats "
                       "v/255, v below its vocabulary)", i, m->name);
    }
    return LS_OK;
}

/* One thread, the caller's: the scores of a sample depend on θ and its
 * features alone, so the engine's pool would change only the speed, and a
 * prediction between steps needs no worker to be woken. */
ls_status ls_session_predict(ls_session *s, const float *x, size_t count, float *out, ls_err *err)
{
    const ls_model *m;
    ls_status st = session_model(s, 1, &m, err);
    if (st != LS_OK || count == 0)
        return st;
    const float *params = trainer_params(session_trainer(s));
    const size_t bytes = (m->info.scratch_bytes + 63) / 64 * 64;
    void *scratch = aligned_alloc(64, bytes > 0 ? bytes : 64);
    if (scratch == NULL)
        return ls_fail(err, LS_ENOMEM, "predict: out of memory for %zu bytes of scratch", bytes);
    /* The state an evaluation needs (prepare with no batch), as the engine
     * prepares before its own evaluation. */
    st = model_prepare(m, params, NULL, NULL, err);
    if (st == LS_OK)
        m->desc->scores(m->self, params, x, count, out, scratch);
    free(scratch);
    if (st == LS_OK)
        st = predict_check(m, x, count, out, err);
    return st;
}

/* ---- tensors ------------------------------------------------------------ */

/* A model without a tensor table has one tensor: all of θ. */
static const char WHOLE[] = "params";

size_t ls_session_tensor_count(ls_session *s)
{
    const ls_model *m;
    if (session_model(s, 0, &m, NULL) != LS_OK)
        return 0;
    return m->info.tensors != NULL ? m->info.n_tensors : 1;
}

static void tensor_view(ls_session *s, const ls_model *m, size_t i, ls_tensor_view *out)
{
    const float *params = trainer_params(session_trainer(s));
    memset(out, 0, sizeof *out);
    if (m->info.tensors == NULL) {
        out->name = WHOLE;
        out->ndim = 1;
        out->shape[0] = m->info.n_params;
        out->count = m->info.n_params;
        out->data = params;
        return;
    }
    const ls_tensor *t = &m->info.tensors[i];
    out->name = t->name;
    out->ndim = t->ndim;
    out->count = 1;
    for (size_t d = 0; d < t->ndim && d < 4; d++) {
        out->shape[d] = t->shape[d];
        out->count *= t->shape[d];
    }
    out->offset = t->offset;
    out->data = params + t->offset;
}

ls_status ls_session_tensor(ls_session *s, size_t i, ls_tensor_view *out, ls_err *err)
{
    const ls_model *m;
    ls_status st = session_model(s, 0, &m, err);
    if (st != LS_OK)
        return st;
    size_t n = ls_session_tensor_count(s);
    if (i >= n)
        return ls_fail(err, LS_ENOTFOUND, "model %s: tensor %zu of %zu", m->name, i, n);
    tensor_view(s, m, i, out);
    return LS_OK;
}

ls_status ls_session_tensor_find(ls_session *s, const char *name, ls_tensor_view *out, ls_err *err)
{
    const ls_model *m;
    ls_status st = session_model(s, 0, &m, err);
    if (st != LS_OK)
        return st;
    size_t n = ls_session_tensor_count(s);
    for (size_t i = 0; name != NULL && i < n; i++) {
        tensor_view(s, m, i, out);
        if (strcmp(out->name, name) == 0)
            return LS_OK;
    }
    memset(out, 0, sizeof *out);
    return ls_fail(err, LS_ENOTFOUND, "model %s has no tensor '%s'", m->name, name != NULL ? name : "(null)");
}
