/* _lockstep.c — the CPython extension module lockstep._lockstep: the public
 * C API (include/lockstep.h, nothing else of the library) as Python objects.
 *
 * The pure-Python layer (python/lockstep/__init__.py) builds the friendly
 * API on top; this module keeps to what needs C: sessions, data sets made
 * from .npy images in memory, verify and equiv, and the record of runs of
 * other frameworks (a Recorder over ls_record_*, tensors as (name, dtype,
 * shape, buffer) tuples whose buffers are read in place), tensor hashes
 * and golden files. Arrays come in through the
 * buffer protocol (float32, C-contiguous, checked with PyBUF_FORMAT) and go
 * out as bytearrays the caller wraps with numpy.frombuffer, so no numpy C
 * API is needed and nothing is copied twice. Long C calls (open, reopen,
 * step, train, evaluate, checkpoint, predict, equiv) run without the GIL;
 * a session is driven by one thread at a time, so a session in use refuses
 * a second caller instead of racing it.
 *
 * Ctrl-C: train and equiv, called with sigint=1 (the Python layer does so
 * on the main thread while Python's own SIGINT handler is in place), catch
 * SIGINT for the length of the call and hand the library the stop flag it
 * checks between steps; the call then ends at a step boundary and raises
 * KeyboardInterrupt, the run intact and resumable.
 *
 * Failures become exceptions: lockstep.Error carries the ls_status in
 * .status and the library's one line as its text; EINVAL and EFORMAT are
 * also ValueErrors, ENOTFOUND a LookupError, EIO an OSError, ENOMEM a MemoryError.
 * Arguments this module checks itself raise TypeError / ValueError naming
 * the argument.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <signal.h>
#include <stdint.h>
#include <string.h>

#include <lockstep.h>

/* ---- exceptions ---------------------------------------------------------- */

static PyObject *Error;                 /* lockstep.Error */
static PyObject *exc_for[LS_EEXIST + 1];   /* per status; NULL: Error */

static PyObject *raise_status(ls_status st, const ls_err *err)
{
    PyObject *type = (st > 0 && st <= LS_EEXIST && exc_for[st] != NULL) ? exc_for[st] : Error;
    const char *text = err != NULL && err->msg[0] ? err->msg : ls_strerror(st);
    PyObject *args = Py_BuildValue("(s)", text);
    if (args == NULL)
        return NULL;
    PyObject *e = PyObject_Call(type, args, NULL);
    Py_DECREF(args);
    if (e == NULL)
        return NULL;
    PyObject *code = PyLong_FromLong((long)st);
    if (code == NULL || PyObject_SetAttrString(e, "status", code) < 0) {
        Py_XDECREF(code);
        Py_DECREF(e);
        return NULL;
    }
    Py_DECREF(code);
    PyErr_SetObject(type, e);
    Py_DECREF(e);
    return NULL;
}

/* ---- Ctrl-C ---------------------------------------------------------------- */

/* Set by the SIGINT handler while a train or equiv call holds it; read by
 * the library between steps (an int, as ls_session_train's stop is: a
 * store of one int is what a handler may do on every platform we build on). */
static volatile int stop_flag;

static void on_sigint(int sig)
{
    (void)sig;
    stop_flag = 1;
}

typedef struct {
    int on;
    struct sigaction old;
} sigint_hold;

/* Takes SIGINT for the call; -1 with KeyboardInterrupt set when one came
 * just before, caught by Python's handler but not yet raised (the call was
 * entered between its arrival and the interpreter's next check): left
 * pending, it would only be raised after the whole call. */
static int sigint_catch(sigint_hold *h, int want)
{
    h->on = 0;
    stop_flag = 0;
    if (!want)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    h->on = sigaction(SIGINT, &sa, &h->old) == 0;
    if (PyErr_CheckSignals() < 0) {
        if (h->on)
            sigaction(SIGINT, &h->old, NULL);
        h->on = 0;
        return -1;
    }
    return 0;
}

/* Puts the old handler back; 1 when SIGINT came meanwhile. */
static int sigint_release(sigint_hold *h)
{
    if (h->on)
        sigaction(SIGINT, &h->old, NULL);
    h->on = 0;
    return stop_flag != 0;
}

/* ---- data sets ----------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    ls_dataset *d;
} DatasetObject;

static void Dataset_dealloc(DatasetObject *self)
{
    ls_dataset_destroy(self->d);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Dataset_get(DatasetObject *self, void *what)
{
    const ls_dataset *d = self->d;
    switch ((int)(intptr_t)what) {
    case 0: return PyLong_FromUnsignedLongLong((unsigned long long)d->hash);
    case 1: return PyLong_FromSize_t(d->n_classes);
    case 2: return PyLong_FromSize_t(d->train.n);
    case 3: return PyLong_FromSize_t(d->test.n);
    default: return PyLong_FromSize_t(d->train.dim);
    }
}

static PyGetSetDef Dataset_getset[] = {
    { "hash", (getter)Dataset_get, NULL, "the data's identity (the config's data_hash)", (void *)0 },
    { "n_classes", (getter)Dataset_get, NULL, "classes: the largest label + 1 (at least 2)", (void *)1 },
    { "n_train", (getter)Dataset_get, NULL, "training samples", (void *)2 },
    { "n_test", (getter)Dataset_get, NULL, "test samples", (void *)3 },
    { "dim", (getter)Dataset_get, NULL, "features a sample", (void *)4 },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject DatasetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lockstep._lockstep.Dataset",
    .tp_basicsize = sizeof(DatasetObject),
    .tp_dealloc = (destructor)Dataset_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "an in-memory data set of the arrays task (from arrays_dataset)",
    .tp_getset = Dataset_getset,
};

/* arrays_dataset(train_x, train_y, test_x=None, test_y=None): each a bytes-like
 * .npy image (what numpy.save writes). */
static PyObject *mod_arrays_dataset(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "train_x", "train_y", "test_x", "test_y", NULL };
    PyObject *obj[4] = { NULL, NULL, Py_None, Py_None };
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO:arrays_dataset", kwlist, &obj[0], &obj[1], &obj[2], &obj[3]))
        return NULL;
    Py_buffer view[4];
    int have[4] = { 0, 0, 0, 0 };
    const void *img[4] = { NULL, NULL, NULL, NULL };
    size_t len[4] = { 0, 0, 0, 0 };
    PyObject *result = NULL;
    for (int i = 0; i < 4; i++) {
        if (obj[i] == Py_None)
            continue;
        if (PyObject_GetBuffer(obj[i], &view[i], PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Format(PyExc_TypeError, "%s: needs the bytes of a .npy image (bytes, bytearray or memoryview)",
                         kwlist[i]);
            goto out;
        }
        have[i] = 1;
        img[i] = view[i].buf;
        len[i] = (size_t)view[i].len;
    }
    if (!have[0] || !have[1]) {
        PyErr_SetString(PyExc_ValueError, "train_x and train_y are required");
        goto out;
    }
    if (have[2] != have[3]) {
        PyErr_SetString(PyExc_ValueError, "test_x and test_y go together");
        goto out;
    }
    ls_dataset *d = NULL;
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_arrays_dataset(&d, img, len, &err);
    Py_END_ALLOW_THREADS
    if (st != LS_OK) {
        raise_status(st, &err);
        goto out;
    }
    DatasetObject *o = PyObject_New(DatasetObject, &DatasetType);
    if (o == NULL) {
        ls_dataset_destroy(d);
        goto out;
    }
    o->d = d;
    result = (PyObject *)o;
out:
    for (int i = 0; i < 4; i++)
        if (have[i])
            PyBuffer_Release(&view[i]);
    return result;
}

/* ---- configs --------------------------------------------------------------- */

/* A config of task and model (None: the task's default) with pairs, a
 * sequence of (key, text) set in order. */
static ls_config *make_config(PyObject *task, PyObject *model, PyObject *pairs)
{
    const char *t = NULL, *m = NULL;
    if (!PyUnicode_Check(task)) {
        PyErr_SetString(PyExc_TypeError, "task: needs a str");
        return NULL;
    }
    if ((t = PyUnicode_AsUTF8(task)) == NULL)
        return NULL;
    if (model != Py_None) {
        if (!PyUnicode_Check(model)) {
            PyErr_SetString(PyExc_TypeError, "model: needs a str or None");
            return NULL;
        }
        if ((m = PyUnicode_AsUTF8(model)) == NULL)
            return NULL;
    }
    ls_config *cfg = NULL;
    ls_err err = { { 0 } };
    ls_status st = ls_config_create(&cfg, t, m, &err);
    if (st != LS_OK)
        return raise_status(st, &err), NULL;
    PyObject *seq = PySequence_Fast(pairs, "config: needs a sequence of (key, value) pairs");
    if (seq == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(seq, i);
        const char *k, *v;
        if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 2) {
            PyErr_Format(PyExc_TypeError, "config: item %zd is %s, not a (key, value) tuple", i, Py_TYPE(p)->tp_name);
            Py_DECREF(seq);
            goto fail;
        }
        if (!PyArg_ParseTuple(p, "ss;config: each item needs a (key, value) pair of str", &k, &v)) {
            Py_DECREF(seq);
            goto fail;
        }
        if ((st = ls_config_set(cfg, k, v, &err)) != LS_OK) {
            Py_DECREF(seq);
            raise_status(st, &err);
            goto fail;
        }
    }
    Py_DECREF(seq);
    if ((st = ls_config_check(cfg, &err)) != LS_OK) {
        raise_status(st, &err);
        goto fail;
    }
    return cfg;
fail:
    ls_config_destroy(cfg);
    return NULL;
}

static PyObject *config_text_of(const ls_config *cfg)
{
    size_t n = ls_config_text(cfg, NULL, 0);
    char *buf = PyMem_Malloc(n + 1);
    if (buf == NULL)
        return PyErr_NoMemory();
    ls_config_text(cfg, buf, n + 1);
    PyObject *s = PyUnicode_FromStringAndSize(buf, (Py_ssize_t)n);
    PyMem_Free(buf);
    return s;
}

/* config_text(task, model, pairs) -> the canonical text (keys checked). */
static PyObject *mod_config_text(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *task, *model, *pairs;
    if (!PyArg_ParseTuple(args, "OOO:config_text", &task, &model, &pairs))
        return NULL;
    ls_config *cfg = make_config(task, model, pairs);
    if (cfg == NULL)
        return NULL;
    PyObject *s = config_text_of(cfg);
    ls_config_destroy(cfg);
    return s;
}

/* ---- options ------------------------------------------------------------------ */

/* The most workers a session takes (the library's own bound may be lower;
 * it then says so). */
#define MAX_THREADS 4096

static int check_threads(long long t, const char *what, int zero_ok)
{
    if (t < (zero_ok ? 0 : 1) || t > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "%s: %lld is not a thread count (%s1..%d)", what, t,
                     zero_ok ? "0 for every online CPU, or " : "", MAX_THREADS);
        return -1;
    }
    return 0;
}

static int check_nonneg(long long v, const char *what)
{
    if (v < 0) {
        PyErr_Format(PyExc_ValueError, "%s: %lld is negative", what, v);
        return -1;
    }
    return 0;
}

/* Keyword options shared by open, reopen and equiv; finish_opts checks them
 * and fills an ls_session_opts (data: a borrowed Dataset, or NULL / None). */
typedef struct {
    long long threads, steps, checkpoint_every, eval_every, keep_checkpoints;
    const char *db, *name, *checkpoint_dir;
    PyObject *data;
} py_opts;

static int finish_opts(py_opts *p, ls_session_opts *o, int check_thr)
{
    if ((check_thr && check_threads(p->threads, "threads", 1) < 0) || check_nonneg(p->steps, "steps") < 0 ||
        check_nonneg(p->checkpoint_every, "checkpoint_every") < 0 || check_nonneg(p->eval_every, "eval_every") < 0)
        return -1;
    if (p->keep_checkpoints < -1) {
        PyErr_Format(PyExc_ValueError, "keep_checkpoints: %lld (a count, 0 for the default, -1 for all)",
                     p->keep_checkpoints);
        return -1;
    }
    if (p->data != NULL && p->data != Py_None && !PyObject_TypeCheck(p->data, &DatasetType)) {
        PyErr_SetString(PyExc_TypeError, "data: needs a Dataset (from arrays_dataset) or None");
        return -1;
    }
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->threads = (int)p->threads;
    o->db = p->db;
    o->name = p->name;
    o->steps = p->steps;
    o->checkpoint_every = p->checkpoint_every;
    o->checkpoint_dir = p->checkpoint_dir;
    o->eval_every = p->eval_every;
    o->keep_checkpoints = p->keep_checkpoints;
    o->data = p->data != NULL && p->data != Py_None ? ((DatasetObject *)p->data)->d : NULL;
    return 0;
}

/* ---- sessions ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    ls_session *s;
    PyObject *data;     /* the Dataset the session reads, kept alive with it (or NULL) */
    int busy;           /* 1 while a call runs without the GIL */
} SessionObject;

static PyTypeObject SessionType;

/* Claims the session for one call; -1 with an exception when closed or in use. */
static int claim(SessionObject *self)
{
    if (self->s == NULL) {
        PyErr_SetString(PyExc_ValueError, "the session is closed");
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the session is in use by another thread");
        return -1;
    }
    self->busy = 1;
    return 0;
}

static PyObject *new_session(ls_session *s, PyObject *data)
{
    SessionObject *o = PyObject_New(SessionObject, &SessionType);
    if (o == NULL) {
        ls_session_close(s, LS_EINTR, NULL);
        return NULL;
    }
    o->s = s;
    o->busy = 0;
    o->data = data != NULL && data != Py_None ? data : NULL;
    Py_XINCREF(o->data);
    return (PyObject *)o;
}

#define OPT_KWS "threads", "db", "name", "steps", "checkpoint_every", "checkpoint_dir", "eval_every", \
                "keep_checkpoints", "data"
#define OPT_FMT "LzzLLzLLO"
#define OPT_ARGS(p) &(p).threads, &(p).db, &(p).name, &(p).steps, &(p).checkpoint_every, &(p).checkpoint_dir, \
                    &(p).eval_every, &(p).keep_checkpoints, &(p).data

/* open(task, model, pairs, *, threads=0, db=None, name=None, steps=0, ...) -> Session */
static PyObject *mod_open(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "task", "model", "pairs", OPT_KWS, NULL };
    PyObject *task, *model, *pairs;
    py_opts p = { 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL };
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|$" OPT_FMT ":open", kwlist, &task, &model, &pairs, OPT_ARGS(p)))
        return NULL;
    ls_session_opts o;
    if (finish_opts(&p, &o, 1) < 0)
        return NULL;
    ls_config *cfg = make_config(task, model, pairs);
    if (cfg == NULL)
        return NULL;
    ls_session *s = NULL;
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_session_open(&s, cfg, &o, &err);
    Py_END_ALLOW_THREADS
    ls_config_destroy(cfg);
    if (st != LS_OK)
        return raise_status(st, &err);
    return new_session(s, p.data);
}

/* reopen(db, run, how, *, threads=0, steps=0, ...) -> Session; how 0 resume, 1 restore, 2 audit. */
static PyObject *mod_reopen(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "db", "run", "how", OPT_KWS, NULL };
    const char *db, *run;
    int how;
    py_opts p = { 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL };
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ssi|$" OPT_FMT ":reopen", kwlist, &db, &run, &how, OPT_ARGS(p)))
        return NULL;
    if (how < LS_REOPEN_RESUME || how > LS_REOPEN_AUDIT) {
        PyErr_Format(PyExc_ValueError, "how: %d (0 resume, 1 restore, 2 audit)", how);
        return NULL;
    }
    ls_session_opts o;
    if (finish_opts(&p, &o, 1) < 0)
        return NULL;
    o.db = NULL;   /* reopen takes the database as its own argument */
    ls_session *s = NULL;
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_session_reopen(&s, db, run, how, &o, &err);
    Py_END_ALLOW_THREADS
    if (st != LS_OK)
        return raise_status(st, &err);
    return new_session(s, p.data);
}

static void Session_dealloc(SessionObject *self)
{
    /* Dropped without close(): the run reads as interrupted, so it can be resumed. */
    if (self->s != NULL)
        ls_session_close(self->s, LS_EINTR, NULL);
    Py_XDECREF(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *metrics_list(const ls_metric *m, size_t n)
{
    PyObject *l = PyList_New((Py_ssize_t)n);
    if (l == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(sd)", m[i].name, m[i].value);
        if (t == NULL) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, t);
    }
    return l;
}

static PyObject *Session_step(SessionObject *self, PyObject *noargs)
{
    (void)noargs;
    if (claim(self) < 0)
        return NULL;
    double loss = 0;
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_session_step(self->s, &loss, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (st != LS_OK)
        return raise_status(st, &err);
    return PyFloat_FromDouble(loss);
}

/* train(until=0, eval_every=0, sigint=0) -> [(metric, value), ...] of the last evaluation */
static PyObject *Session_train(SessionObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "until", "eval_every", "sigint", NULL };
    long long until = 0, eval_every = 0;
    int sigint = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|LLp:train", kwlist, &until, &eval_every, &sigint))
        return NULL;
    if (check_nonneg(until, "until") < 0 || check_nonneg(eval_every, "eval_every") < 0 || claim(self) < 0)
        return NULL;
    ls_metric m[LS_MAX_METRICS];
    size_t n = 0;
    ls_err err = { { 0 } };
    ls_status st;
    sigint_hold h;
    if (sigint_catch(&h, sigint) < 0) {
        self->busy = 0;
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    st = ls_session_train(self->s, until, eval_every, &stop_flag, m, &n, &err);
    Py_END_ALLOW_THREADS
    const int stopped = sigint_release(&h);
    self->busy = 0;
    if (stopped && (st == LS_OK || st == LS_EINTR)) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        return NULL;
    }
    if (st != LS_OK)
        return raise_status(st, &err);
    return metrics_list(m, n);
}

static PyObject *Session_evaluate(SessionObject *self, PyObject *noargs)
{
    (void)noargs;
    if (claim(self) < 0)
        return NULL;
    ls_metric m[LS_MAX_METRICS];
    size_t n = 0;
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_session_evaluate(self->s, m, &n, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (st != LS_OK)
        return raise_status(st, &err);
    return metrics_list(m, n);
}

static PyObject *Session_checkpoint(SessionObject *self, PyObject *noargs)
{
    (void)noargs;
    if (claim(self) < 0)
        return NULL;
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_session_checkpoint(self->s, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (st != LS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

/* close(status=0): the run ends done (0), interrupted (10), diverged (7) or failed. */
static PyObject *Session_close(SessionObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "status", NULL };
    int how = LS_OK;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|i:close", kwlist, &how))
        return NULL;
    if (self->s == NULL)
        Py_RETURN_NONE;
    if (claim(self) < 0)
        return NULL;
    ls_err err = { { 0 } };
    ls_status st;
    ls_session *s = self->s;
    self->s = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = ls_session_close(s, (ls_status)how, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    Py_CLEAR(self->data);
    if (st != LS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Session_state(SessionObject *self, PyObject *noargs)
{
    (void)noargs;
    if (claim(self) < 0)
        return NULL;
    ls_session_state s;
    ls_session_state_get(self->s, &s);
    self->busy = 0;
    return Py_BuildValue("{sLsLsLsdsKsKsKsLsLsLsisi}", "run_id", (long long)s.run_id, "step", (long long)s.step,
                         "target", (long long)s.target, "loss", s.loss, "config_hash",
                         (unsigned long long)s.config_hash, "param_hash", (unsigned long long)s.param_hash,
                         "traj_hash", (unsigned long long)s.traj_hash, "resumed_from", (long long)s.resumed_from,
                         "replayed", (long long)s.replayed, "checkpoints", (long long)s.checkpoints, "threads",
                         s.threads, "done_already", s.done_already);
}

static PyObject *Session_config_text(SessionObject *self, PyObject *noargs)
{
    (void)noargs;
    if (claim(self) < 0)
        return NULL;
    PyObject *r = config_text_of(ls_session_config(self->s));
    self->busy = 0;
    return r;
}

static PyObject *Session_predict_shape(SessionObject *self, PyObject *noargs)
{
    (void)noargs;
    if (claim(self) < 0)
        return NULL;
    size_t in = 0, out = 0;
    ls_err err = { { 0 } };
    ls_status st = ls_session_predict_shape(self->s, &in, &out, &err);
    self->busy = 0;
    if (st != LS_OK)
        return raise_status(st, &err);
    return Py_BuildValue("(nn)", (Py_ssize_t)in, (Py_ssize_t)out);
}

/* A float32 C-contiguous buffer of obj, named `what` in errors: not a
 * buffer or not float32 is a TypeError, a strided one a ValueError (the
 * buffer is asked with its strides, so the two are told apart). */
static int get_f32(PyObject *obj, Py_buffer *view, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: needs a float32 array (an object with the buffer protocol), not %s",
                     what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    const char *f = view->format != NULL ? view->format : "B";
    if (f[0] == '<' || f[0] == '=' || f[0] == '@')
        f++;
    if (strcmp(f, "f") != 0 || view->itemsize != 4) {
        PyErr_Format(PyExc_TypeError, "%s: needs float32 values, not buffer format '%s'", what,
                     view->format != NULL ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    if (!PyBuffer_IsContiguous(view, 'C')) {
        PyErr_Format(PyExc_ValueError, "%s: the array is not C-contiguous (numpy.ascontiguousarray makes it so)",
                     what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* predict(x) -> bytearray of count·outputs float32 scores; x float32 [count][inputs]. */
static PyObject *Session_predict(SessionObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "x", NULL };
    PyObject *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:predict", kwlist, &x))
        return NULL;
    Py_buffer view;
    if (get_f32(x, &view, "x") < 0)
        return NULL;
    if (claim(self) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *result = NULL;
    size_t in = 0, outs = 0;
    ls_err err = { { 0 } };
    ls_status st = ls_session_predict_shape(self->s, &in, &outs, &err);
    if (st != LS_OK) {
        raise_status(st, &err);
        goto out;
    }
    const size_t n_floats = (size_t)view.len / 4;
    if (n_floats == 0 || (view.ndim >= 1 && view.shape[0] == 0)) {
        PyErr_SetString(PyExc_ValueError, "x: no samples");
        goto out;
    }
    if (in == 0 || outs == 0) {
        PyErr_Format(PyExc_ValueError, "x: the model takes %zu features and gives %zu scores a sample", in, outs);
        goto out;
    }
    /* [count][inputs] as a 2-D array, or one sample as a 1-D one; any
     * other shape only needs whole samples. */
    const size_t width = view.ndim >= 2 ? n_floats / (size_t)view.shape[0] : view.ndim == 1 ? n_floats : in;
    if (width != in || n_floats % in != 0) {
        PyErr_Format(PyExc_ValueError, "x: %zu features a sample; the model takes %zu", width, in);
        goto out;
    }
    const size_t count = n_floats / in;
    if (count > (size_t)PY_SSIZE_T_MAX / 4 / outs) {
        PyErr_SetString(PyExc_ValueError, "x: too many samples");
        goto out;
    }
    result = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(count * outs * 4));
    if (result == NULL)
        goto out;
    float *y = (float *)(void *)PyByteArray_AS_STRING(result);
    const float *xs = view.buf;
    Py_BEGIN_ALLOW_THREADS
    st = ls_session_predict(self->s, xs, count, y, &err);
    Py_END_ALLOW_THREADS
    if (st != LS_OK) {
        Py_CLEAR(result);
        raise_status(st, &err);
    }
out:
    self->busy = 0;
    PyBuffer_Release(&view);
    return result;
}

/* tensors() -> [(name, shape, bytearray of float32), ...] in θ's order: a copy,
 * since the session's own θ moves with the next step. */
static PyObject *Session_tensors(SessionObject *self, PyObject *noargs)
{
    (void)noargs;
    if (claim(self) < 0)
        return NULL;
    size_t n = ls_session_tensor_count(self->s);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l != NULL && i < n; i++) {
        ls_tensor_view v;
        ls_err err = { { 0 } };
        ls_status st = ls_session_tensor(self->s, i, &v, &err);
        if (st != LS_OK) {
            raise_status(st, &err);
            Py_CLEAR(l);
            break;
        }
        PyObject *shape = PyTuple_New((Py_ssize_t)v.ndim);
        PyObject *bytes = PyByteArray_FromStringAndSize((const char *)v.data, (Py_ssize_t)(v.count * 4));
        for (size_t k = 0; shape != NULL && k < v.ndim; k++)
            PyTuple_SET_ITEM(shape, (Py_ssize_t)k, PyLong_FromSize_t(v.shape[k]));
        PyObject *t = shape != NULL && bytes != NULL ? Py_BuildValue("(sOO)", v.name, shape, bytes) : NULL;
        Py_XDECREF(shape);
        Py_XDECREF(bytes);
        if (t == NULL) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, t);
    }
    self->busy = 0;
    return l;
}

/* params() -> bytearray of θ's float32 values, in order. */
static PyObject *Session_params(SessionObject *self, PyObject *noargs)
{
    (void)noargs;
    if (claim(self) < 0)
        return NULL;
    size_t n = 0;
    const float *p = ls_session_params(self->s, &n);
    PyObject *r = PyByteArray_FromStringAndSize((const char *)p, (Py_ssize_t)(n * 4));
    self->busy = 0;
    return r;
}

static PyObject *Session_closed(SessionObject *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(self->s == NULL);
}

static PyMethodDef Session_methods[] = {
    { "step", (PyCFunction)Session_step, METH_NOARGS, "step() -> loss of one step" },
    { "train", (PyCFunction)(void (*)(void))Session_train, METH_VARARGS | METH_KEYWORDS,
      "train(until=0, eval_every=0) -> the last evaluation as [(name, value)]" },
    { "evaluate", (PyCFunction)Session_evaluate, METH_NOARGS, "evaluate() -> [(name, value)]" },
    { "checkpoint", (PyCFunction)Session_checkpoint, METH_NOARGS, "checkpoint(): write one now" },
    { "close", (PyCFunction)(void (*)(void))Session_close, METH_VARARGS | METH_KEYWORDS,
      "close(status=0): end the run" },
    { "state", (PyCFunction)Session_state, METH_NOARGS, "state() -> dict" },
    { "config_text", (PyCFunction)Session_config_text, METH_NOARGS, "the canonical config text" },
    { "predict_shape", (PyCFunction)Session_predict_shape, METH_NOARGS, "(inputs, outputs)" },
    { "predict", (PyCFunction)(void (*)(void))Session_predict, METH_VARARGS | METH_KEYWORDS,
      "predict(x) -> bytearray of float32 scores" },
    { "tensors", (PyCFunction)Session_tensors, METH_NOARGS, "[(name, shape, bytearray)]" },
    { "params", (PyCFunction)Session_params, METH_NOARGS, "bytearray of θ" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Session_getset[] = {
    { "closed", (getter)Session_closed, NULL, "True once closed", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lockstep._lockstep.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_dealloc = (destructor)Session_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "one run (from open or reopen)",
    .tp_methods = Session_methods,
    .tp_getset = Session_getset,
};

/* ---- the record and equivalence ---------------------------------------------- */

static PyObject *verdict_dict(const ls_verdict *v)
{
    return Py_BuildValue("{sOsLsLsLsLsO}", "equal", v->equal ? Py_True : Py_False, "steps", (long long)v->steps,
                         "first_diff", (long long)v->first_diff, "steps_a", (long long)v->steps_a, "steps_b",
                         (long long)v->steps_b, "same_config", v->same_config ? Py_True : Py_False);
}

/* verify(db, run_a, run_b, tolerance, rtol, atol) -> dict, through ls_verify_ex:
 * the verdict, the first differing tensor, both losses there and, with a
 * tolerance, the first step whose losses leave it. */
static PyObject *mod_verify(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *db, *a, *b;
    int tol = 0;
    double rtol = 0, atol = 0;
    if (!PyArg_ParseTuple(args, "sss|pdd:verify", &db, &a, &b, &tol, &rtol, &atol))
        return NULL;
    ls_verify_opts o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.loss_tolerance = tol;
    o.loss_rtol = rtol;
    o.loss_atol = atol;
    ls_verify_result r;
    memset(&r, 0, sizeof r);
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_verify_ex(db, a, b, &o, &r, &err);
    Py_END_ALLOW_THREADS
    if (st != LS_OK)
        return raise_status(st, &err);
    PyObject *d = verdict_dict(&r.verdict);
    PyObject *more = d != NULL
        ? Py_BuildValue("{sssdsdsLsdsd}", "first_tensor", r.first_tensor, "loss_a", r.loss_a, "loss_b", r.loss_b,
                        "tol_first", (long long)r.tol_first, "tol_loss_a", r.tol_loss_a, "tol_loss_b", r.tol_loss_b)
        : NULL;
    if (more == NULL || PyDict_Update(d, more) < 0) {
        Py_XDECREF(more);
        Py_XDECREF(d);
        return NULL;
    }
    Py_DECREF(more);
    return d;
}

/* equiv(task, model, pairs, threads, *, db=None, name=None, steps=0, ...) -> dict */
static PyObject *mod_equiv(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = { "task", "model", "pairs", "thread_counts", OPT_KWS, "sigint", NULL };
    PyObject *task, *model, *pairs, *tlist;
    py_opts p = { 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL };
    int sigint = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|$" OPT_FMT "p:equiv", kwlist, &task, &model, &pairs, &tlist,
                                     OPT_ARGS(p), &sigint))
        return NULL;
    int threads[LS_EQUIV_MAX];
    PyObject *seq = PySequence_Fast(tlist, "threads: needs a list of thread counts");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > LS_EQUIV_MAX) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "threads: %zd thread counts; equiv takes 1..%d", n, LS_EQUIV_MAX);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyLong_Check(it) || PyBool_Check(it)) {
            Py_DECREF(seq);
            return PyErr_Format(PyExc_TypeError, "threads: item %zd is %s, not an int", i, Py_TYPE(it)->tp_name);
        }
        long long t = PyLong_AsLongLong(it);
        if ((t == -1 && PyErr_Occurred()) || check_threads(t, "threads", 0) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        threads[i] = (int)t;
        for (Py_ssize_t k = 0; k < i; k++)
            if (threads[k] == threads[i]) {
                Py_DECREF(seq);
                return PyErr_Format(PyExc_ValueError, "threads: %d is listed twice", threads[i]);
            }
    }
    Py_DECREF(seq);
    ls_equiv_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.size = sizeof eo;
    p.threads = 0;
    if (finish_opts(&p, &eo.session, 0) < 0)
        return NULL;
    eo.threads = threads;
    eo.n_threads = (size_t)n;
    ls_config *cfg = make_config(task, model, pairs);
    if (cfg == NULL)
        return NULL;
    ls_equiv_result *r = PyMem_Calloc(1, sizeof *r);
    if (r == NULL) {
        ls_config_destroy(cfg);
        return PyErr_NoMemory();
    }
    ls_err err = { { 0 } };
    ls_status st;
    sigint_hold h;
    if (sigint_catch(&h, sigint) < 0) {
        ls_config_destroy(cfg);
        PyMem_Free(r);
        return NULL;
    }
    eo.stop = &stop_flag;
    Py_BEGIN_ALLOW_THREADS
    st = ls_equiv(cfg, &eo, r, &err);
    Py_END_ALLOW_THREADS
    const int stopped = sigint_release(&h);
    ls_config_destroy(cfg);
    PyObject *out = NULL;
    if (stopped && (st == LS_OK || st == LS_EINTR)) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        goto done;
    }
    if (st != LS_OK) {
        raise_status(st, &err);
        goto done;
    }
    PyObject *runs = PyList_New((Py_ssize_t)r->n_runs);
    for (size_t i = 0; runs != NULL && i < r->n_runs; i++) {
        const ls_equiv_run *u = &r->runs[i];
        PyObject *m = metrics_list(u->metrics, u->n_metrics), *v = verdict_dict(&u->verdict);
        PyObject *d = m != NULL && v != NULL
            ? Py_BuildValue("{sisisLsLsdsKsKsKsdsOsOsO}", "threads", u->threads, "status", (int)u->status, "run_id",
                            (long long)u->run_id, "steps", (long long)u->steps, "loss", u->loss, "config_hash",
                            (unsigned long long)u->config_hash, "param_hash", (unsigned long long)u->param_hash,
                            "traj_hash", (unsigned long long)u->traj_hash, "train_seconds", u->train_seconds,
                            "metrics", m, "same", u->same ? Py_True : Py_False, "verdict", v)
            : NULL;
        Py_XDECREF(m);
        Py_XDECREF(v);
        if (d == NULL) {
            Py_CLEAR(runs);
            break;
        }
        PyList_SET_ITEM(runs, (Py_ssize_t)i, d);
    }
    if (runs != NULL) {
        out = Py_BuildValue("{sOsO}", "equal", r->equal ? Py_True : Py_False, "runs", runs);
        Py_DECREF(runs);
    }
done:
    PyMem_Free(r);
    return out;
}

/* ---- tensors of any framework and their record (since 1.1) ------------------- */

/* Tensors handed in from Python: a sequence of (name, dtype, shape, buffer)
 * tuples, each buffer C-contiguous bytes in the layout ls_tensor_data wants
 * (the Python layer makes them so). The views stay held, and the names and
 * shapes alive, until tensors_release. */
typedef struct {
    Py_ssize_t n;
    ls_tensor_data *t;
    Py_buffer *views;
    size_t *shapes;     /* n x LS_TENSOR_NDIM_MAX */
    PyObject *seq;      /* the tuples, which own the name and dtype texts */
} tensor_pack;

static void tensors_release(tensor_pack *p)
{
    for (Py_ssize_t i = 0; p->views != NULL && i < p->n; i++)
        if (p->views[i].obj != NULL)
            PyBuffer_Release(&p->views[i]);
    PyMem_Free(p->t);
    PyMem_Free(p->views);
    PyMem_Free(p->shapes);
    Py_XDECREF(p->seq);
    memset(p, 0, sizeof *p);
}

static const char *text_arg(PyObject *o, const char *what, Py_ssize_t i)
{
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "tensors: item %zd: %s needs a str, not %s", i, what, Py_TYPE(o)->tp_name);
        return NULL;
    }
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(o, &len);
    if (s != NULL && (size_t)len != strlen(s)) {
        PyErr_Format(PyExc_ValueError, "tensors: item %zd: %s holds a NUL character", i, what);
        return NULL;
    }
    return s;
}

/* -1 with an exception naming the item; else p is filled (tensors_release it). */
static int tensors_parse(PyObject *obj, tensor_pack *p)
{
    memset(p, 0, sizeof *p);
    p->seq = PySequence_Fast(obj, "tensors: needs a list of (name, dtype, shape, buffer)");
    if (p->seq == NULL)
        return -1;
    p->n = PySequence_Fast_GET_SIZE(p->seq);
    const size_t n = p->n > 0 ? (size_t)p->n : 1;
    p->t = PyMem_Calloc(n, sizeof *p->t);
    p->views = PyMem_Calloc(n, sizeof *p->views);
    p->shapes = PyMem_Calloc(n * LS_TENSOR_NDIM_MAX, sizeof *p->shapes);
    if (p->t == NULL || p->views == NULL || p->shapes == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < p->n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(p->seq, i);
        if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 4) {
            PyErr_Format(PyExc_TypeError, "tensors: item %zd is not a (name, dtype, shape, buffer) tuple", i);
            goto fail;
        }
        ls_tensor_data *t = &p->t[i];
        if ((t->name = text_arg(PyTuple_GET_ITEM(it, 0), "the name", i)) == NULL ||
            (t->dtype = text_arg(PyTuple_GET_ITEM(it, 1), "the dtype", i)) == NULL)
            goto fail;
        PyObject *shape = PySequence_Fast(PyTuple_GET_ITEM(it, 2), "tensors: the shape needs a sequence of int");
        if (shape == NULL)
            goto fail;
        const Py_ssize_t nd = PySequence_Fast_GET_SIZE(shape);
        if (nd > LS_TENSOR_NDIM_MAX) {
            Py_DECREF(shape);
            PyErr_Format(PyExc_ValueError, "tensors: %s: %zd dimensions (at most %d)", t->name, nd,
                         LS_TENSOR_NDIM_MAX);
            goto fail;
        }
        size_t *dims = p->shapes + (size_t)i * LS_TENSOR_NDIM_MAX;
        for (Py_ssize_t d = 0; d < nd; d++) {
            PyObject *v = PySequence_Fast_GET_ITEM(shape, d);
            const long long x = PyLong_Check(v) && !PyBool_Check(v) ? PyLong_AsLongLong(v) : -1;
            if (x < 0) {
                Py_DECREF(shape);
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_ValueError, "tensors: %s: dimension %zd is not a size", t->name, d);
                goto fail;
            }
            dims[d] = (size_t)x;
        }
        Py_DECREF(shape);
        t->ndim = (size_t)nd;
        t->shape = dims;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(it, 3), &p->views[i], PyBUF_C_CONTIGUOUS) < 0) {
            p->views[i].obj = NULL;
            PyErr_Format(PyExc_ValueError, "tensors: %s: its data are not a C-contiguous buffer", t->name);
            goto fail;
        }
        t->data = p->views[i].buf;
        t->nbytes = (size_t)p->views[i].len;
        ls_err err = { { 0 } };
        const ls_status st = ls_tensor_check(t, &err);
        if (st != LS_OK) {
            raise_status(st, &err);
            goto fail;
        }
    }
    return 0;
fail:
    tensors_release(p);
    return -1;
}

/* tensor_hashes([(name, dtype, shape, buffer), ...]) -> ([hash, ...], set hash) */
static PyObject *mod_tensor_hashes(PyObject *mod, PyObject *obj)
{
    (void)mod;
    tensor_pack p;
    if (tensors_parse(obj, &p) < 0)
        return NULL;
    PyObject *list = PyList_New(p.n);
    const size_t n = p.n > 0 ? (size_t)p.n : 1;
    uint64_t *h = PyMem_Calloc(n, sizeof *h);
    const char **names = PyMem_Calloc(n, sizeof *names);
    PyObject *out = NULL;
    if (list == NULL || h == NULL || names == NULL) {
        if (list != NULL)
            PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < p.n; i++) {
        h[i] = ls_tensor_hash(&p.t[i]);
        names[i] = p.t[i].name;
        PyObject *v = PyLong_FromUnsignedLongLong((unsigned long long)h[i]);
        if (v == NULL)
            goto done;
        PyList_SET_ITEM(list, i, v);
    }
    out = Py_BuildValue("(OK)", list, (unsigned long long)ls_tensor_set_hash(names, h, (size_t)p.n));
done:
    Py_XDECREF(list);
    PyMem_Free(h);
    PyMem_Free(names);
    tensors_release(&p);
    return out;
}

typedef struct {
    PyObject_HEAD
    ls_recorder *r;
    int busy;           /* 1 while a step is recorded without the GIL */
} RecorderObject;

static void Recorder_dealloc(RecorderObject *self)
{
    /* dropped without close(): the run ends interrupted, every step kept */
    if (self->r != NULL)
        ls_record_close(self->r, LS_EINTR, NULL);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int recorder_claim(RecorderObject *self)
{
    if (self->r == NULL) {
        PyErr_SetString(PyExc_ValueError, "the recorder is closed");
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the recorder is in use by another thread");
        return -1;
    }
    self->busy = 1;
    return 0;
}

/* step(step, loss, tensors or None) */
static PyObject *Recorder_step(RecorderObject *self, PyObject *args)
{
    long long step;
    double loss;
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "LdO:step", &step, &loss, &obj) || recorder_claim(self) < 0)
        return NULL;
    tensor_pack p;
    memset(&p, 0, sizeof p);
    if (obj != Py_None && tensors_parse(obj, &p) < 0) {
        self->busy = 0;
        return NULL;
    }
    ls_err err = { { 0 } };
    ls_status st;
    const ls_tensor_data *t = obj != Py_None ? p.t : NULL;
    Py_BEGIN_ALLOW_THREADS
    st = ls_record_step(self->r, (int64_t)step, loss, t, (size_t)p.n, &err);
    Py_END_ALLOW_THREADS
    tensors_release(&p);
    self->busy = 0;
    if (st != LS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Recorder_state(RecorderObject *self, PyObject *noargs)
{
    (void)noargs;
    if (self->r == NULL) {
        PyErr_SetString(PyExc_ValueError, "the recorder is closed");
        return NULL;
    }
    int64_t run_id, step;
    uint64_t ph, th;
    ls_record_state(self->r, &run_id, &step, &ph, &th);
    return Py_BuildValue("{sLsLsKsK}", "run_id", (long long)run_id, "step", (long long)step, "param_hash",
                         (unsigned long long)ph, "traj_hash", (unsigned long long)th);
}

/* close(how): how an ls_status (0 done, EINTR interrupted, EDIVERGED, else failed) */
static PyObject *Recorder_close(RecorderObject *self, PyObject *args)
{
    int how = 0;
    if (!PyArg_ParseTuple(args, "|i:close", &how))
        return NULL;
    if (self->r == NULL)
        Py_RETURN_NONE;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the recorder is in use by another thread");
        return NULL;
    }
    ls_recorder *r = self->r;
    self->r = NULL;
    ls_err err = { { 0 } };
    const ls_status st = ls_record_close(r, (ls_status)how, &err);
    if (st != LS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

static PyObject *Recorder_closed(RecorderObject *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(self->r == NULL);
}

static PyMethodDef Recorder_methods[] = {
    { "step", (PyCFunction)Recorder_step, METH_VARARGS, "step(step, loss, tensors or None)" },
    { "state", (PyCFunction)Recorder_state, METH_NOARGS, "the run id, last step, param and trajectory hashes" },
    { "close", (PyCFunction)Recorder_close, METH_VARARGS, "close(how=0): end the run" },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Recorder_getset[] = {
    { "closed", (getter)Recorder_closed, NULL, "True after close()", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lockstep._lockstep.Recorder",
    .tp_basicsize = sizeof(RecorderObject),
    .tp_dealloc = (destructor)Recorder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a run of another framework being recorded (from record_open)",
    .tp_methods = Recorder_methods,
    .tp_getset = Recorder_getset,
};

/* record_open(db, name, config_text, framework) -> Recorder */
static PyObject *mod_record_open(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *db, *name, *text, *framework;
    if (!PyArg_ParseTuple(args, "szzz:record_open", &db, &name, &text, &framework))
        return NULL;
    ls_recorder *r = NULL;
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_record_open(&r, db, name, text, framework, &err);
    Py_END_ALLOW_THREADS
    if (st != LS_OK)
        return raise_status(st, &err);
    RecorderObject *o = PyObject_New(RecorderObject, &RecorderType);
    if (o == NULL) {
        ls_record_close(r, LS_EINTR, NULL);
        return NULL;
    }
    o->r = r;
    o->busy = 0;
    return (PyObject *)o;
}

/* golden_save(db, run, path) */
static PyObject *mod_golden_save(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *db, *run, *path;
    if (!PyArg_ParseTuple(args, "sss:golden_save", &db, &run, &path))
        return NULL;
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_golden_save(db, run, path, &err);
    Py_END_ALLOW_THREADS
    if (st != LS_OK)
        return raise_status(st, &err);
    Py_RETURN_NONE;
}

/* golden_compare(db, run, path) -> dict */
static PyObject *mod_golden_compare(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *db, *run, *path;
    if (!PyArg_ParseTuple(args, "sss:golden_compare", &db, &run, &path))
        return NULL;
    ls_golden_result g;
    memset(&g, 0, sizeof g);
    ls_err err = { { 0 } };
    ls_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ls_golden_compare(db, run, path, &g, &err);
    Py_END_ALLOW_THREADS
    if (st != LS_OK)
        return raise_status(st, &err);
    return Py_BuildValue("{sOsLsLsssOsdsdsOss}", "equal", g.equal ? Py_True : Py_False, "steps",
                         (long long)g.steps, "first_diff", (long long)g.first_diff, "first_tensor", g.first_tensor,
                         "has_loss", g.has_loss ? Py_True : Py_False, "loss_file", g.loss_file, "loss_run",
                         g.loss_run, "config_differs", g.config_differs ? Py_True : Py_False, "detail", g.detail);
}

static PyObject *mod_version(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    return PyUnicode_FromString(ls_version());
}

static PyMethodDef mod_methods[] = {
    { "version", mod_version, METH_NOARGS, "the linked library's version" },
    { "config_text", mod_config_text, METH_VARARGS, "config_text(task, model, pairs) -> canonical text" },
    { "arrays_dataset", (PyCFunction)(void (*)(void))mod_arrays_dataset, METH_VARARGS | METH_KEYWORDS,
      "arrays_dataset(train_x, train_y, test_x=None, test_y=None) from .npy images -> Dataset" },
    { "open", (PyCFunction)(void (*)(void))mod_open, METH_VARARGS | METH_KEYWORDS,
      "open(task, model, pairs, **opts) -> Session" },
    { "reopen", (PyCFunction)(void (*)(void))mod_reopen, METH_VARARGS | METH_KEYWORDS,
      "reopen(db, run, how, **opts) -> Session" },
    { "verify", mod_verify, METH_VARARGS, "verify(db, run_a, run_b, tolerance=False, rtol=0, atol=0) -> dict" },
    { "tensor_hashes", mod_tensor_hashes, METH_O, "tensor_hashes([(name, dtype, shape, buffer)]) -> (hashes, set hash)" },
    { "record_open", mod_record_open, METH_VARARGS, "record_open(db, name, config_text, framework) -> Recorder" },
    { "golden_save", mod_golden_save, METH_VARARGS, "golden_save(db, run, path)" },
    { "golden_compare", mod_golden_compare, METH_VARARGS, "golden_compare(db, run, path) -> dict" },
    { "equiv", (PyCFunction)(void (*)(void))mod_equiv, METH_VARARGS | METH_KEYWORDS,
      "equiv(task, model, pairs, thread_counts, **opts) -> dict" },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "lockstep._lockstep", "lockstep's public C API (see the lockstep package)", -1,
    mod_methods, NULL, NULL, NULL, NULL,
};

/* The exception classes: name, status, the built-in class it also is. */
static int add_exceptions(PyObject *m)
{
    Error = PyErr_NewExceptionWithDoc("lockstep.Error", "a lockstep library call failed (.status: the ls_status)",
                                      NULL, NULL);
    if (Error == NULL || PyModule_AddObjectRef(m, "Error", Error) < 0)
        return -1;
    static const struct {
        const char *name;
        ls_status st;
    } table[] = {
        { "InvalidError", LS_EINVAL },   { "NotFoundError", LS_ENOTFOUND }, { "FileError", LS_EIO },
        { "FormatError", LS_EFORMAT },   { "DatabaseError", LS_EDB },       { "DivergedError", LS_EDIVERGED },
        { "MismatchError", LS_EMISMATCH }, { "ExistsError", LS_EEXIST },   { "OutOfMemoryError", LS_ENOMEM },
        { "StoppedError", LS_EINTR }, { "FPEnvError", LS_EFPENV },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const ls_status st = table[i].st;
        PyObject *also = st == LS_EINVAL || st == LS_EFORMAT ? PyExc_ValueError
                       : st == LS_ENOTFOUND ? PyExc_LookupError
                       : st == LS_EIO ? PyExc_OSError : st == LS_ENOMEM ? PyExc_MemoryError
                       : st == LS_EINTR ? PyExc_InterruptedError : NULL;
        PyObject *bases = also != NULL ? PyTuple_Pack(2, Error, also) : PyTuple_Pack(1, Error);
        if (bases == NULL)
            return -1;
        char full[64];
        snprintf(full, sizeof full, "lockstep.%s", table[i].name);
        PyObject *e = PyErr_NewException(full, bases, NULL);
        Py_DECREF(bases);
        if (e == NULL || PyModule_AddObjectRef(m, table[i].name, e) < 0) {
            Py_XDECREF(e);
            return -1;
        }
        exc_for[table[i].st] = e;   /* the module keeps its reference; this one is ours */
    }
    return 0;
}

PyMODINIT_FUNC PyInit__lockstep(void);
PyMODINIT_FUNC PyInit__lockstep(void)
{
    if (PyType_Ready(&DatasetType) < 0 || PyType_Ready(&SessionType) < 0 || PyType_Ready(&RecorderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    if (add_exceptions(m) < 0 || PyModule_AddType(m, &DatasetType) < 0 || PyModule_AddType(m, &SessionType) < 0 ||
        PyModule_AddType(m, &RecorderType) < 0 ||
        PyModule_AddIntConstant(m, "REOPEN_RESUME", LS_REOPEN_RESUME) < 0 ||
        PyModule_AddIntConstant(m, "REOPEN_RESTORE", LS_REOPEN_RESTORE) < 0 ||
        PyModule_AddIntConstant(m, "REOPEN_AUDIT", LS_REOPEN_AUDIT) < 0 ||
        PyModule_AddIntConstant(m, "EINTR", LS_EINTR) < 0 || PyModule_AddIntConstant(m, "EDIVERGED", LS_EDIVERGED) < 0 ||
        PyModule_AddIntConstant(m, "EINVAL", LS_EINVAL) < 0 ||
        PyModule_AddStringConstant(m, "HEADER_VERSION", LS_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
