"""lockstep from Python: training whose bits do not depend on the thread count.

A thin layer over the C extension lockstep._lockstep, which binds the
public C API (include/lockstep.h). Sessions, verify, equiv and audit run
in-process through that API, as does record() (runs of PyTorch or any
framework, hashed tensor by tensor); report and runs (listing a record) run the
`lockstep` command-line program (found as $LOCKSTEP_BIN, else on PATH),
since the C API has no call for them. See docs/python.md.

    import lockstep
    with lockstep.open(task="teacher", steps=20, threads=2, db="runs.db", name="t2") as s:
        s.train()
        print(s.traj_hash)
"""

import io
import json
import os
import shutil
import signal
import subprocess
import threading

from . import _lockstep
from ._lockstep import (Error, InvalidError, NotFoundError, FileError, FormatError, DatabaseError,
                        DivergedError, MismatchError, ExistsError, OutOfMemoryError, StoppedError,
                        FPEnvError, Dataset)
from ._record import record, Recorder, tensor_hashes

__all__ = [
    "open", "reopen", "Session", "arrays_dataset", "config_text", "verify", "equiv", "audit",
    "report", "runs", "version", "Verdict", "EquivResult", "Error", "InvalidError", "NotFoundError",
    "FileError", "FormatError", "DatabaseError", "DivergedError", "MismatchError", "ExistsError",
    "OutOfMemoryError", "StoppedError", "FPEnvError", "Dataset", "record", "Recorder", "tensor_hashes",
    "golden_save", "golden_compare", "GoldenResult",
]

__version__ = _lockstep.HEADER_VERSION

# Session settings that are not part of the config (they cannot change the bits).
OPTIONS = ("threads", "db", "name", "steps", "checkpoint_every", "checkpoint_dir", "eval_every",
           "keep_checkpoints")
# The arrays task's data sources: paths (str) or arrays in memory.
ARRAY_SOURCES = ("train_x", "train_y", "test_x", "test_y")
_HOW = {"resume": _lockstep.REOPEN_RESUME, "restore": _lockstep.REOPEN_RESTORE,
        "audit": _lockstep.REOPEN_AUDIT}


def _catch_sigint():
    """True when a long call should catch Ctrl-C itself: on the main thread,
    while Python's own SIGINT handler (KeyboardInterrupt) is in place."""
    return (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)


def version():
    """The version of the C library actually linked ("1.2.0")."""
    return _lockstep.version()


def _numpy():
    try:
        import numpy
    except ImportError as e:   # pragma: no cover - depends on the machine
        raise ImportError("lockstep: this needs numpy (Debian package python3-numpy)") from e
    return numpy


def _text(key, value):
    """A config value as the text the command line would take."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # repr is the shortest text that reads back as this double; the
        # library rounds it once to binary32, as it does "--lr 0.05".
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return ",".join(str(v) for v in value)
    raise TypeError("%s: %s is not a config value (str, int, float, bool or a list of int)"
                    % (key, type(value).__name__))


def _is_array(value):
    return not isinstance(value, (str, bytes, os.PathLike)) and (
        hasattr(value, "__array__") or hasattr(value, "__array_interface__") or isinstance(value, (list, tuple)))


def _npy_image(key, value, labels):
    """value as the bytes numpy.save writes, after the checks the arrays task makes."""
    np = _numpy()
    a = np.asarray(value)
    if labels:
        if a.dtype.kind not in "iu":
            raise TypeError("%s: labels need an integer dtype, not %s" % (key, a.dtype))
    elif not ((a.dtype.kind == "f" and a.dtype.itemsize in (4, 8)) or (a.dtype.kind == "u" and a.dtype.itemsize == 1)):
        # (either byte order: the task reads both, as it does in files)
        raise TypeError("%s: features need float32, float64 or uint8, not %s" % (key, a.dtype))
    buf = io.BytesIO()
    # numpy.save(file, a) is numpy.lib.format.write_array(file, a): the same bytes.
    np.lib.format.write_array(buf, a, allow_pickle=False)
    return buf.getvalue()


def arrays_dataset(train_x, train_y, test_x=None, test_y=None):
    """The arrays task's data from arrays in memory: the same data (and data_hash)
    as the same arrays written with numpy.save and given as files."""
    imgs = [None if v is None else _npy_image(k, v, k.endswith("_y"))
            for k, v in zip(ARRAY_SOURCES, (train_x, train_y, test_x, test_y))]
    return _lockstep.arrays_dataset(*imgs)


def _split(config, kw):
    """(task, model, [(key, text)], options, data) from a config dict and keywords."""
    merged = {}
    if config is not None:
        if not isinstance(config, dict):
            raise TypeError("config: needs a dict, not %s" % type(config).__name__)
        merged.update(config)
    merged.update(kw)
    for k in merged:
        if not isinstance(k, str):
            raise TypeError("config: key %r is not a str" % (k,))
    task = merged.pop("task", None)
    if task is None:
        raise ValueError("task: a session needs a task (task='teacher', 'arrays', ...)")
    model = merged.pop("model", None)
    opts = {k: merged.pop(k) for k in OPTIONS if k in merged}
    data = merged.pop("data", None)
    if task == "arrays" and data is None and not all(k in merged for k in ("train_x", "train_y")):
        raise ValueError("train_x, train_y: the arrays task needs both (numpy arrays, or paths of .npy files)")
    arrays = {k: merged[k] for k in ARRAY_SOURCES if k in merged and _is_array(merged[k])}
    if arrays:
        if data is not None:
            raise ValueError("data: given together with arrays for %s" % ", ".join(sorted(arrays)))
        if task != "arrays":
            raise ValueError("%s: arrays in memory are data of the arrays task, not of %s"
                             % (sorted(arrays)[0], task))
        for k in arrays:
            del merged[k]
        data = arrays_dataset(**arrays)
    if data is not None and not isinstance(data, Dataset):
        raise TypeError("data: needs a lockstep.Dataset (lockstep.arrays_dataset), not %s"
                        % type(data).__name__)
    pairs = [(k, _text(k, v)) for k, v in merged.items()]
    return task, model, pairs, opts, data


def _check_opts(opts):
    for k, v in opts.items():
        if k in ("db", "name", "checkpoint_dir"):
            if v is not None and not isinstance(v, (str, os.PathLike)):
                raise TypeError("%s: needs a str, not %s" % (k, type(v).__name__))
            if v is not None:
                opts[k] = os.fspath(v)
        elif not isinstance(v, int) or isinstance(v, bool):
            raise TypeError("%s: needs an int, not %s" % (k, type(v).__name__))
        elif not -2**62 < v < 2**62:
            raise ValueError("%s: %d is out of range" % (k, v))
    return opts


def config_text(config=None, **kw):
    """The canonical config text of a config (checked as a session would check it)."""
    task, model, pairs, _, _ = _split(config, kw)
    return _lockstep.config_text(task, model, pairs)


class Session:
    """One run: open() or reopen() make one. A context manager: leaving the
    block closes the run (done when it reached its target, else interrupted,
    so `lockstep resume` can continue it)."""

    def __init__(self, raw):
        self._s = raw
        self._final = None   # the state at close, so the hashes read after the block

    # -- driving the run
    def step(self):
        """One step; returns its loss (a float, the record's bits)."""
        return self._s.step()

    def train(self, steps=None, eval_every=0):
        """Train `steps` more steps (None: up to the run's target); returns
        the last evaluation as a dict {metric: value}. Ctrl-C (on the main
        thread) stops it at the next step boundary with KeyboardInterrupt."""
        if steps is None:
            until = 0
        else:
            if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
                raise ValueError("steps: %r is not a step count" % (steps,))
            if steps == 0:
                return {}
            until = self._s.state()["step"] + steps
        return dict(self._s.train(until, eval_every, _catch_sigint()))

    def evaluate(self):
        """The evaluation figures now (recorded at the current step when recording)."""
        return dict(self._s.evaluate())

    def checkpoint(self):
        """Write a checkpoint of the current step (needs a database)."""
        self._s.checkpoint()

    def close(self, status=None):
        """End the run: done when it reached its target, else interrupted
        (status: "done", "interrupted", "diverged" or "failed" to say so)."""
        if self._s.closed:
            return
        st = self._s.state()
        if status is None:
            status = "done" if st["step"] >= st["target"] else "interrupted"
        codes = {"done": 0, "interrupted": _lockstep.EINTR, "diverged": _lockstep.EDIVERGED,
                 "failed": _lockstep.EINVAL}
        if status not in codes:
            raise ValueError("status: %r (done, interrupted, diverged or failed)" % (status,))
        self._s.close(codes[status])
        self._final = st

    def __enter__(self):
        return self

    def __repr__(self):
        st = self.state
        run = "run %d" % st["run_id"] if st["run_id"] >= 0 else "not recorded"
        return "<lockstep.Session %s, step %d of %d, trajectory %016x%s>" % (
            run, st["step"], st["target"], st["traj_hash"], ", closed" if self.closed else "")

    def __exit__(self, etype, evalue, tb):
        if etype is None:
            self.close()
        elif isinstance(evalue, DivergedError):
            self.close("diverged")
        else:
            self.close("interrupted")
        return False

    @property
    def closed(self):
        return self._s.closed

    # -- what it did
    @property
    def state(self):
        """A dict: run_id, step, target, loss, config_hash, param_hash,
        traj_hash (ints), resumed_from, replayed, checkpoints, threads; after
        close, the state the run ended in."""
        if self._final is not None:
            return dict(self._final)
        return self._s.state()

    @property
    def run_id(self):
        return self.state["run_id"]

    @property
    def step_count(self):
        return self.state["step"]

    @property
    def traj_hash(self):
        """The trajectory hash after the last step, as 16 hex digits (as the CLI prints it)."""
        return "%016x" % self.state["traj_hash"]

    @property
    def param_hash(self):
        return "%016x" % self.state["param_hash"]

    @property
    def config_hash(self):
        return "%016x" % self.state["config_hash"]

    @property
    def config_text(self):
        return self._s.config_text()

    # -- the model
    def params(self):
        """θ as one flat float32 numpy array (a copy: later steps do not change it)."""
        np = _numpy()
        return np.frombuffer(self._s.params(), dtype=np.float32)

    def weights(self):
        """θ's named tensors: {name: float32 numpy array of its shape}, in θ's order."""
        np = _numpy()
        return {name: np.frombuffer(buf, dtype=np.float32).reshape(shape)
                for name, shape, buf in self._s.tensors()}

    def predict(self, x, labels=False):
        """Scores [N, outputs] (float32) of the samples x [N, ...], or with
        labels=True the predicted classes [N] (int64: the highest score, the
        lowest index on ties). float32 x is read in place (it must be
        C-contiguous); float64 is rounded once to float32 and uint8 read as
        v/255, as `lockstep predict` reads X.npy."""
        np = _numpy()
        if isinstance(x, (list, tuple)):
            x = np.asarray(x, dtype=np.float64)
        if isinstance(x, np.ndarray):
            kind, size = x.dtype.kind, x.dtype.itemsize
            if kind == "f" and size == 4:
                if not x.dtype.isnative:
                    x = x.astype(np.float32)   # the same values, in this machine's byte order
            elif kind == "f" and size == 8:
                x = x.astype(np.float32)       # rounded once, as `lockstep predict` does
            elif kind == "u" and size == 1:
                x = x.astype(np.float32) / np.float32(255.0)
            else:
                raise TypeError("x: needs float32, float64 or uint8 samples, not %s" % x.dtype)
        _, outputs = self._s.predict_shape()
        scores = np.frombuffer(self._s.predict(x), dtype=np.float32).reshape(-1, outputs)
        if labels:
            return scores.argmax(axis=1).astype(np.int64)
        return scores


def _opts(kw):
    for k in kw:
        if k not in OPTIONS and k != "data":
            raise TypeError("%s: not an option here (%s, data)" % (k, ", ".join(OPTIONS)))
    return kw


def open(config=None, **kw):
    """A new run of a config, given as a dict and/or keyword arguments:
    task, model, config keys (lr=0.05, hidden=[64]), the task's data sources
    (train_x="x.npy", or a numpy array for the arrays task), and the session
    options threads, db, name, steps, checkpoint_every, checkpoint_dir,
    eval_every, keep_checkpoints. An unknown key raises InvalidError (a
    ValueError) naming it."""
    task, model, pairs, opts, data = _split(config, kw)
    raw = _lockstep.open(task, model, pairs, data=data, **_check_opts(opts))
    return Session(raw)


def reopen(db, run, how="resume", data=None, **kw):
    """Reopen recorded run `run` (a name or an id) of database db: how is
    "resume" (continue it, recomputing and checking steps recorded after its
    checkpoint), "restore" (its last recorded parameters, nothing recorded)
    or "audit" (from step 0, each step() compared with the record). A run
    whose data were arrays in memory needs the same arrays again: data=
    lockstep.arrays_dataset(...) or the arrays as train_x=..., train_y=...."""
    if how not in _HOW:
        raise ValueError("how: %r (resume, restore or audit)" % (how,))
    arrays = {k: kw.pop(k) for k in ARRAY_SOURCES if k in kw}
    if arrays:
        if data is not None:
            raise ValueError("data: given together with arrays")
        data = arrays_dataset(**arrays)
    kw = _check_opts(_opts(kw))
    kw.pop("db", None)
    return Session(_lockstep.reopen(os.fspath(db), str(run), _HOW[how], data=data, **kw))


class Verdict:
    """Two recorded runs compared bit for bit (verify): equal, steps,
    first_diff (None when equal), first_tensor (the first tensor in name
    order whose hash differs there; None when none is named), loss_a and
    loss_b there; with a loss tolerance, tol_first (the first step whose
    losses leave it, None when none) and tol_loss_a, tol_loss_b."""

    def __init__(self, d):
        self.equal = d["equal"]
        self.steps = d["steps"]
        self.first_diff = d["first_diff"] if d["first_diff"] >= 0 else None
        self.steps_a = d["steps_a"]
        self.steps_b = d["steps_b"]
        self.same_config = d["same_config"]
        self.first_tensor = d.get("first_tensor") or None
        self.loss_a = d.get("loss_a")
        self.loss_b = d.get("loss_b")
        self.tolerance = d.get("tolerance")
        tf = d.get("tol_first", -1)
        self.tol_first = tf if tf is not None and tf >= 0 else None
        self.tol_loss_a = d.get("tol_loss_a") if self.tol_first is not None else None
        self.tol_loss_b = d.get("tol_loss_b") if self.tol_first is not None else None

    def __bool__(self):
        return self.equal

    def __repr__(self):
        if self.equal:
            # (steps 0..steps-1 of lockstep's runs, 1..steps of an external run's)
            text = "equal over %d steps" % self.steps
        else:
            text = "first diverging step %d" % self.first_diff
            if self.first_tensor:
                text += ", tensor %s" % self.first_tensor
        if self.tolerance is not None:
            if self.tol_first is None:
                text += "; losses within rtol %g, atol %g" % self.tolerance
            else:
                text += "; loss leaves rtol %g, atol %g first at step %d: %r vs %r" % (
                    self.tolerance + (self.tol_first, self.tol_loss_a, self.tol_loss_b))
        return "Verdict(%s)" % text


def verify(db, a, b, loss_rtol=None, loss_atol=None):
    """Compare runs a and b (names or ids) of db bit for bit, step by step:
    the first diverging step and tensor. With loss_rtol and/or loss_atol
    (the other 0), also the first step whose losses a, b fail
    |a - b| <= atol + rtol*|b| (Verdict.tol_first); equal stays bitwise."""
    if loss_rtol is None and loss_atol is None:
        return Verdict(_lockstep.verify(os.fspath(db), str(a), str(b)))
    tol = []
    for k, v in (("loss_rtol", loss_rtol), ("loss_atol", loss_atol)):
        if v is None:
            v = 0.0
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError("%s: needs a number, not %s" % (k, type(v).__name__))
        if not v >= 0:
            raise ValueError("%s: %r is not a tolerance (a number >= 0)" % (k, v))
        tol.append(float(v))
    d = _lockstep.verify(os.fspath(db), str(a), str(b), True, tol[0], tol[1])
    d["tolerance"] = tuple(tol)
    return Verdict(d)


class GoldenResult:
    """A recorded run against a golden file (golden_compare): equal, steps,
    first_diff (None when equal), first_tensor, loss_file, loss_run (None
    when the step has no loss on one side), config_differs, detail (one line)."""

    def __init__(self, d, path, run):
        self.path, self.run = path, run
        self.equal = d["equal"]
        self.steps = d["steps"]
        self.first_diff = d["first_diff"] if d["first_diff"] >= 0 else None
        self.first_tensor = d["first_tensor"] or None
        self.loss_file = d["loss_file"] if d["has_loss"] else None
        self.loss_run = d["loss_run"] if d["has_loss"] else None
        self.config_differs = d["config_differs"]
        self.detail = d["detail"]

    def __bool__(self):
        return self.equal

    def __repr__(self):
        if self.equal:
            return "GoldenResult(equal over %d steps)" % self.steps
        return "GoldenResult(first diverging step %d%s)" % (
            self.first_diff, ", tensor %s" % self.first_tensor if self.first_tensor else "")


def golden_save(db, run, path):
    """Write recorded run `run` of db as a golden file at path (as `lockstep golden save`)."""
    _lockstep.golden_save(os.fspath(db), str(run), os.fspath(path))
    return path


def golden_compare(db, run, path):
    """Compare recorded run `run` of db with the golden file at path; a GoldenResult."""
    return GoldenResult(_lockstep.golden_compare(os.fspath(db), str(run), os.fspath(path)), os.fspath(path), run)


class EquivResult:
    """One config trained at several thread counts (equiv)."""

    def __init__(self, d):
        self.equal = d["equal"]
        self.runs = d["runs"]
        for r in self.runs:
            r["metrics"] = dict(r["metrics"])
            r["verdict"] = Verdict(r["verdict"])
            for h in ("config_hash", "param_hash", "traj_hash"):
                r[h] = "%016x" % r[h]

    def __bool__(self):
        return self.equal

    def __repr__(self):
        return "EquivResult(equal=%s, threads=%s)" % (self.equal, [r["threads"] for r in self.runs])


def equiv(config=None, threads=(1, 2, 3, 8), **kw):
    """The config trained at each thread count in turn and compared bit for
    bit; with db= and name= run i is recorded as "<name>-t<threads[i]>"."""
    task, model, pairs, opts, data = _split(config, kw)
    opts = _check_opts(opts)
    opts.pop("threads", None)
    if isinstance(threads, int):
        threads = [threads]
    return EquivResult(_lockstep.equiv(task, model, pairs, list(threads), data=data, sigint=_catch_sigint(),
                                       **opts))


class AuditResult:
    def __init__(self, ok, steps, message):
        self.ok, self.steps, self.message = ok, steps, message

    def __bool__(self):
        return self.ok

    def __repr__(self):
        return "AuditResult(ok=%s, steps=%d%s)" % (self.ok, self.steps,
                                                   "" if self.ok else ", %r" % self.message)


def audit(db, run, threads=0, data=None, **arrays):
    """Prove a recorded run by recomputing every step from step 0 through
    the C API (reopen "audit"); returns an AuditResult (ok False with the
    library's message naming the first bad step). Unlike `lockstep audit`
    it stores no verdict in the record."""
    try:
        s = reopen(db, run, how="audit", threads=threads, data=data, **arrays)
    except MismatchError as e:
        return AuditResult(False, 0, str(e))
    with s:
        try:
            target = s.state["target"]
            while s.step_count < target:
                s.step()
        except MismatchError as e:
            return AuditResult(False, s.step_count, str(e))
        return AuditResult(True, s.step_count, "")


def _cli():
    exe = os.environ.get("LOCKSTEP_BIN") or shutil.which("lockstep")
    if not exe:
        raise FileNotFoundError("lockstep: the command-line program was not found (set LOCKSTEP_BIN or "
                                "put lockstep on PATH: make install)")
    return exe


def _run_cli(args):
    p = subprocess.run([_cli()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise Error((p.stderr.strip() or p.stdout.strip() or "lockstep %s failed" % args[0])
                    + " (exit %d)" % p.returncode)
    return p.stdout


def runs(db):
    """The runs of a record, as `lockstep runs --json` lists them (a list of dicts)."""
    return json.loads(_run_cli(["runs", "--db", os.fspath(db), "--json"]))


def report(db, runs, out, threads=0):
    """One self-contained HTML page about runs (names or ids) of db, through
    `lockstep report`; returns out."""
    if isinstance(runs, (str, int)):
        runs = [runs]
    args = ["report"] + [str(r) for r in runs] + ["-o", os.fspath(out), "--db", os.fspath(db), "--no-progress"]
    if threads:
        args += ["--threads", str(threads)]
    _run_cli(args)
    return out
