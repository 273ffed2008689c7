/* recorder.c — recording a run of another framework (include/lockstep.h,
 * ls_record_*): a PyTorch, JAX or numpy training loop hands over its loss
 * and its tensors after each step, and the record keeps them as it keeps
 * lockstep's own runs, so that runs, show, verify, report and golden read
 * them. Nothing is recomputed here: the hashes are of the bytes given.
 *
 * Every step is committed before ls_record_step returns (runlog_flush):
 * another framework's step costs far more than one SQLite commit, and a
 * crashed training loop should keep every step it reported.
 */
#include "record/runlog.h"
#include "record/hash.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ls_recorder {
    runlog *db;
    int64_t run_id;
    int64_t step;              /* the last recorded step, 0 before the first */
    uint64_t param_hash, traj_hash;
    size_t n_tensors;          /* fixed by the first step; SIZE_MAX before it */
    char **names;              /* [n_tensors], sorted (strcmp) */
    uint64_t *hashes;          /* [n_tensors], scratch for a step, in names' order */
    size_t *order;             /* [n_tensors], scratch: the caller's tensors sorted */
};

ls_status ls_record_open(ls_recorder **out, const char *db, const char *name, const char *config_text,
                         const char *framework, ls_err *err)
{
    *out = NULL;
    if (db == NULL || db[0] == 0)
        return ls_fail(err, LS_EINVAL, "database path is empty");
    ls_recorder *rec = calloc(1, sizeof *rec);
    if (rec == NULL)
        return ls_fail(err, LS_ENOMEM, "out of memory opening a recorder");
    rec->n_tensors = SIZE_MAX;
    const char *text = config_text != NULL ? config_text : "";
    ls_status st = runlog_open(&rec->db, db, err);
    if (st == LS_OK) {
        runlog_run_info info = {
            .name = name, .model = "external", .task = "external", .config_text = text,
            .config_hash = hash_bytes(text, strlen(text)), .engine_version = "lockstep " LS_VERSION_STRING,
            .framework = framework != NULL && framework[0] ? framework : "unknown",
        };
        st = runlog_run_begin(rec->db, &info, &rec->run_id, err);
    }
    if (st != LS_OK) {
        runlog_close(rec->db);
        free(rec);
        return st;
    }
    /* The chain starts from the config text and a zero parameter hash: an
     * external run has no step 0 (no θ_0 to hash). */
    rec->traj_hash = hash_traj0(text, 0);
    *out = rec;
    return LS_OK;
}

/* The shape as people read it: "3x4", "" for a scalar. */
static void rec_shape_text(const ls_tensor_data *t, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < t->ndim && n < cap; i++) {
        int w = snprintf(buf + n, cap - n, "%s%zu", i ? "x" : "", t->shape[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

static void rec_sort(const ls_tensor_data *t, size_t n, size_t *idx)
{
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t i = 1; i < n; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && strcmp(t[idx[j - 1]].name, t[v].name) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

/* The first step fixes the run's tensors: their names (sorted), recorded
 * once in run_tensors. */
static ls_status rec_first(ls_recorder *rec, const ls_tensor_data *tensors, size_t n, const size_t *order, ls_err *err)
{
    runlog_tensor *rt = calloc(n ? n : 1, sizeof *rt);
    rec->names = calloc(n ? n : 1, sizeof *rec->names);
    rec->hashes = calloc(n ? n : 1, sizeof *rec->hashes);
    if (rt == NULL || rec->names == NULL || rec->hashes == NULL) {
        free(rt);
        return ls_fail(err, LS_ENOMEM, "out of memory recording the tensors");
    }
    for (size_t i = 0; i < n; i++) {
        const ls_tensor_data *t = &tensors[order[i]];
        size_t len = strlen(t->name);
        if ((rec->names[i] = malloc(len + 1)) == NULL) {
            free(rt);
            return ls_fail(err, LS_ENOMEM, "out of memory recording the tensors");
        }
        memcpy(rec->names[i], t->name, len + 1);
        snprintf(rt[i].name, sizeof rt[i].name, "%s", t->name);
        snprintf(rt[i].dtype, sizeof rt[i].dtype, "%s", t->dtype);
        rec_shape_text(t, rt[i].shape, sizeof rt[i].shape);
    }
    ls_status st = runlog_tensors_set(rec->db, rec->run_id, rt, n, err);
    free(rt);
    if (st == LS_OK)
        rec->n_tensors = n;
    return st;
}

static void rec_free_names(ls_recorder *rec)
{
    for (size_t i = 0; rec->names != NULL && rec->n_tensors != SIZE_MAX && i < rec->n_tensors; i++)
        free(rec->names[i]);
    free(rec->names);
    free(rec->hashes);
    rec->names = NULL;
    rec->hashes = NULL;
}

/* A step whose parameters were not hashed (tensors NULL: a caller that
 * hashes every K-th step only): its loss, parameter hash 0, no vector. */
static ls_status rec_loss_only(ls_recorder *rec, int64_t step, double loss, ls_err *err)
{
    const uint64_t traj = hash_traj_next(rec->traj_hash, 0, loss);
    ls_step row = { step, 1, hash_loss_bits(loss), 0, traj, 0.0 };
    ls_status st = runlog_step(rec->db, rec->run_id, &row, err);
    if (st == LS_OK)
        st = runlog_flush(rec->db, err);
    if (st != LS_OK)
        return st;
    rec->step = step;
    rec->param_hash = 0;
    rec->traj_hash = traj;
    return LS_OK;
}

ls_status ls_record_step(ls_recorder *rec, int64_t step, double loss, const ls_tensor_data *tensors, size_t n,
                         ls_err *err)
{
    if (rec == NULL)
        return ls_fail(err, LS_EINVAL, "ls_record_step: no recorder");
    if (step != rec->step + 1)
        return ls_fail(err, LS_EINVAL, "step %lld: the next step to record is %lld (steps are 1, 2, 3, ...)",
                       (long long)step, (long long)(rec->step + 1));
    if (n > 0 && tensors == NULL)
        return ls_fail(err, LS_EINVAL, "step %lld: %zu tensors but no array", (long long)step, n);
    if (tensors == NULL)
        return rec_loss_only(rec, step, loss, err);
    for (size_t i = 0; i < n; i++) {
        ls_status st = ls_tensor_check(&tensors[i], err);
        if (st != LS_OK)
            return st;
    }
    if (rec->n_tensors != SIZE_MAX && n != rec->n_tensors)
        return ls_fail(err, LS_EINVAL, "step %lld: %zu tensors, but the run's first step had %zu", (long long)step, n,
                       rec->n_tensors);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (order == NULL)
        return ls_fail(err, LS_ENOMEM, "out of memory recording step %lld", (long long)step);
    rec_sort(tensors, n, order);
    ls_status st = LS_OK;
    for (size_t i = 1; i < n && st == LS_OK; i++)
        if (strcmp(tensors[order[i - 1]].name, tensors[order[i]].name) == 0)
            st = ls_fail(err, LS_EINVAL, "tensor '%s': given twice in step %lld", tensors[order[i]].name,
                         (long long)step);
    for (size_t i = 0; i < n && st == LS_OK && rec->n_tensors != SIZE_MAX; i++)
        if (strcmp(tensors[order[i]].name, rec->names[i]) != 0) {
            /* The first name (in sorted order) where the sets part. */
            int c = strcmp(tensors[order[i]].name, rec->names[i]);
            st = c < 0 ? ls_fail(err, LS_EINVAL, "tensor '%s': not among the run's tensors (fixed by its first step)",
                                 tensors[order[i]].name)
                       : ls_fail(err, LS_EINVAL, "tensor '%s': missing from step %lld (the run's first step had it)",
                                 rec->names[i], (long long)step);
        }
    if (st == LS_OK && rec->n_tensors == SIZE_MAX)
        st = rec_first(rec, tensors, n, order, err);
    if (st != LS_OK) {
        free(order);
        return st;
    }
    for (size_t i = 0; i < n; i++)
        rec->hashes[i] = ls_tensor_hash(&tensors[order[i]]);
    free(order);
    const uint64_t ph = ls_tensor_set_hash((const char *const *)rec->names, rec->hashes, n);
    const uint64_t traj = hash_traj_next(rec->traj_hash, ph, loss);
    ls_step row = { step, 1, hash_loss_bits(loss), ph, traj, 0.0 };
    if ((st = runlog_step_tensors(rec->db, rec->run_id, &row, rec->hashes, n, err)) != LS_OK ||
        (st = runlog_flush(rec->db, err)) != LS_OK)
        return st;   /* a row a failed flush kept is retried by the next flush or the close */
    rec->step = step;
    rec->param_hash = ph;
    rec->traj_hash = traj;
    return LS_OK;
}

void ls_record_state(const ls_recorder *rec, int64_t *run_id, int64_t *step, uint64_t *param_hash,
                     uint64_t *traj_hash)
{
    if (run_id != NULL)
        *run_id = rec != NULL ? rec->run_id : -1;
    if (step != NULL)
        *step = rec != NULL ? rec->step : 0;
    if (param_hash != NULL)
        *param_hash = rec != NULL ? rec->param_hash : 0;
    if (traj_hash != NULL)
        *traj_hash = rec != NULL ? rec->traj_hash : 0;
}

ls_status ls_record_close(ls_recorder *rec, ls_status how, ls_err *err)
{
    if (rec == NULL)
        return LS_OK;
    const char *status = how == LS_OK ? "done" : how == LS_EINTR ? "interrupted"
                       : how == LS_EDIVERGED ? "diverged" : "failed";
    ls_status st = runlog_run_end(rec->db, rec->run_id, status, err);
    runlog_close(rec->db);
    rec_free_names(rec);
    free(rec);
    return st;
}
