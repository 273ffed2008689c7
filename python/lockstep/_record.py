"""Recording runs of other frameworks (PyTorch, numpy, JAX through numpy):
lockstep.record() and the tensor flattening and byte views it needs.

A step's parameters are given as a torch.nn.Module (its state_dict: the
parameters and buffers), a state_dict, or any nested pytree of dicts, lists
and tuples whose leaves are torch tensors or numpy arrays. The tree is
flattened to dotted names ({"enc": {"w": t}, "heads": [a, b]} gives
"enc.w", "heads.0", "heads.1"; a namedtuple's fields by name), then each
tensor is handed to the C library as its C-order little-endian bytes, read
in place: torch tensors through their storage's address (no numpy needed),
numpy arrays through the buffer protocol. bfloat16 and float16 go as their
2-byte patterns, never converted; a non-contiguous tensor is made
contiguous, a tensor on a GPU copied to the host first. The library sorts
them by name and hashes them (docs/formats.md, "Tensor hash").
"""

import ctypes
import os
import sys

from . import _lockstep

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")


def _torch():
    return sys.modules.get("torch")


def _is_torch_tensor(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def _is_module(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.nn.Module)


def _is_numpy_array(x):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, (np.ndarray, np.generic))


def flatten(model, what="model"):
    """[(dotted name, leaf)] of a Module, a state_dict or a nested pytree, in
    the tree's order. A leaf that is no tensor or array, a key that is no str
    or holds a '.', and a name met twice raise, naming the argument and the
    name."""
    if _is_module(model):
        model = model.state_dict()
    out = []
    seen = set()

    def walk(x, prefix):
        if _is_torch_tensor(x) or _is_numpy_array(x):
            if not prefix:
                raise TypeError("%s: a single tensor has no name: give a dict {name: tensor}" % what)
            if prefix in seen:
                raise ValueError("%s: the tensor name %r comes twice" % (what, prefix))
            seen.add(prefix)
            out.append((prefix, x))
        elif isinstance(x, dict) or (hasattr(x, "keys") and hasattr(x, "__getitem__")):
            for k in x.keys():
                if not isinstance(k, str):
                    raise TypeError("%s: key %r%s is not a str" % (what, k, " under " + repr(prefix) if prefix else ""))
                walk(x[k], prefix + "." + k if prefix else k)
        elif isinstance(x, tuple) and hasattr(x, "_fields"):
            for k in x._fields:
                walk(getattr(x, k), prefix + "." + k if prefix else k)
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(v, prefix + "." + str(i) if prefix else str(i))
        else:
            raise TypeError("%s: %r is %s, not a tensor or array (torch.Tensor or numpy.ndarray)"
                            % (what, prefix or "the value", type(x).__name__))

    walk(model, "")
    return out


_TORCH_DTYPES = None


def _torch_dtype_name(t, name, what):
    global _TORCH_DTYPES
    torch = _torch()
    if _TORCH_DTYPES is None:
        _TORCH_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
                         torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32",
                         torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool"}
    d = _TORCH_DTYPES.get(t.dtype)
    if d is None:
        raise TypeError("%s: %r has dtype %s, which lockstep does not hash (%s)"
                        % (what, name, t.dtype, ", ".join(DTYPES)))
    return d


def _torch_entry(name, t, what):
    """(name, dtype, shape, buffer, keep) of a torch tensor: its bytes in place."""
    dtype = _torch_dtype_name(t, name, what)
    torch = _torch()
    if t.layout != torch.strided:
        raise TypeError("%s: %r is a %s tensor: give it dense (.to_dense())" % (what, name, t.layout))
    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")                  # a GPU tensor: copied to the host
    t = t.contiguous()                   # C order (a copy only when it was not)
    nbytes = t.numel() * t.element_size()
    if nbytes == 0:
        buf = b""
    else:
        # The bytes where the tensor keeps them (the host is little-endian):
        # no numpy and no conversion, bfloat16 included.
        buf = (ctypes.c_ubyte * nbytes).from_address(t.data_ptr())
    return (name, dtype, tuple(int(d) for d in t.shape), buf), t


def _numpy_entry(name, a, what):
    np = sys.modules["numpy"]
    a = np.asarray(a)
    dt = a.dtype
    if dt.name == "bfloat16" and dt.itemsize == 2:   # ml_dtypes' bfloat16: its 2-byte patterns
        dtype = "bfloat16"
        a = np.ascontiguousarray(a).view(np.uint16)
    elif dt.name in DTYPES and dt.kind in "fiub":
        dtype = dt.name
    else:
        raise TypeError("%s: %r has dtype %s, which lockstep does not hash (%s)"
                        % (what, name, dt, ", ".join(DTYPES)))
    if dt.byteorder == ">" and dt.itemsize > 1:
        a = a.astype(a.dtype.newbyteorder("<"))      # the same values, little-endian bytes
    a = np.ascontiguousarray(a)
    buf = a.reshape(-1).view(np.uint8) if a.size else b""
    return (name, dtype, tuple(int(d) for d in a.shape), buf), a


def tensor_entries(model, what="model"):
    """The (name, dtype, shape, buffer) tuples the extension takes, and the
    objects that must stay alive while their buffers are read."""
    entries, keep = [], []
    for name, x in flatten(model, what):
        e, k = _torch_entry(name, x, what) if _is_torch_tensor(x) else _numpy_entry(name, x, what)
        entries.append(e)
        keep.append(k)
    return entries, keep


def tensor_hashes(model):
    """{name: canonical tensor hash (int)} of a Module, state_dict or pytree,
    and the parameter hash of the set (int), as ls_record_step computes them."""
    entries, keep = tensor_entries(model)
    hashes, set_hash = _lockstep.tensor_hashes(entries)
    del keep
    return {e[0]: h for e, h in zip(entries, hashes)}, set_hash


def framework_name():
    """"pytorch X" when torch is imported, else "jax X", else "numpy X", else "python X.Y"."""
    for mod, label in (("torch", "pytorch"), ("jax", "jax"), ("numpy", "numpy")):
        m = sys.modules.get(mod)
        if m is not None:
            return "%s %s" % (label, getattr(m, "__version__", "?"))
    return "python %d.%d" % sys.version_info[:2]


def config_text(config):
    """A config dict as the record's free "key=value" lines (sorted keys), or a str as given."""
    if config is None:
        return ""
    if isinstance(config, str):
        return config
    if not isinstance(config, dict):
        raise TypeError("config: needs a dict or a str, not %s" % type(config).__name__)
    lines = []
    for k in sorted(config):
        v = config[k]
        if not isinstance(k, str) or not k or "=" in k or "\n" in k:
            raise ValueError("config: %r is not a key (a str without '=' or newline)" % (k,))
        if isinstance(v, bool):
            t = "true" if v else "false"
        elif isinstance(v, (int, str)):
            t = str(v)
        elif isinstance(v, float):
            t = repr(v)
        elif isinstance(v, (list, tuple)) and all(isinstance(x, (int, float, str)) for x in v):
            t = ",".join(repr(x) if isinstance(x, float) else str(x) for x in v)
        elif v is None:
            t = ""
        else:
            raise TypeError("config: %s: %s is not a config value (str, int, float, bool or a list)"
                            % (k, type(v).__name__))
        if "\n" in t:
            raise ValueError("config: %s: the value holds a newline" % k)
        lines.append("%s=%s\n" % (k, t))
    return "".join(lines)


def _loss_value(loss):
    if isinstance(loss, bool):
        raise TypeError("loss: needs a number, not bool")
    if _is_torch_tensor(loss):
        if loss.numel() != 1:
            raise ValueError("loss: a tensor of %d elements, not one" % loss.numel())
        return float(loss.detach().to("cpu").double().item())
    try:
        return float(loss)
    except (TypeError, ValueError):
        raise TypeError("loss: needs a number (float, or a one-element tensor), not %s" % type(loss).__name__) from None


class Recorder:
    """A run of another framework, recorded step by step (lockstep.record).
    A context manager: leaving the block closes the run (done, or failed when
    the block raised; interrupted on KeyboardInterrupt)."""

    def __init__(self, db, name=None, config=None, every=1, framework=None):
        if not isinstance(db, (str, os.PathLike)):
            raise TypeError("db: needs a path, not %s" % type(db).__name__)
        if name is not None and not isinstance(name, str):
            raise TypeError("name: needs a str, not %s" % type(name).__name__)
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError("every: %r is not a step count (1: every step)" % (every,))
        if framework is not None and not isinstance(framework, str):
            raise TypeError("framework: needs a str, not %s" % type(framework).__name__)
        self.db = os.fspath(db)
        self.every = every
        self.config_text = config_text(config)
        self.framework = framework or framework_name()
        self._r = _lockstep.record_open(self.db, name, self.config_text, self.framework)
        self.name = name if name is not None else "run-%d" % self._r.state()["run_id"]
        self._final = None

    def step(self, loss, model=None, step=None):
        """Records the next step (or `step`): its loss and, on every `every`-th
        step, the tensors of model (a Module, a state_dict or a pytree) after
        it. Other steps keep the loss only; model is not read then. Bad input
        raises naming the argument and records nothing."""
        value = _loss_value(loss)
        if step is None:
            step = self._r.state()["step"] + 1
        elif not isinstance(step, int) or isinstance(step, bool):
            raise TypeError("step: needs an int, not %s" % type(step).__name__)
        if step % self.every == 0:
            if model is None:
                raise TypeError("model: step %d is hashed (every=%d) and needs the model" % (step, self.every))
            entries, keep = tensor_entries(model)
            self._r.step(step, value, entries)
            del keep
        else:
            self._r.step(step, value, None)
        return step

    @property
    def state(self):
        """run_id, step, param_hash, traj_hash (ints); after close, as it ended."""
        return dict(self._final) if self._final is not None else self._r.state()

    @property
    def run_id(self):
        return self.state["run_id"]

    @property
    def step_count(self):
        return self.state["step"]

    @property
    def traj_hash(self):
        return "%016x" % self.state["traj_hash"]

    @property
    def param_hash(self):
        return "%016x" % self.state["param_hash"]

    @property
    def closed(self):
        return self._r.closed

    def close(self, status="done"):
        """Ends the run: "done", "interrupted", "diverged" or "failed"."""
        codes = {"done": 0, "interrupted": _lockstep.EINTR, "diverged": _lockstep.EDIVERGED,
                 "failed": _lockstep.EINVAL}
        if status not in codes:
            raise ValueError("status: %r (done, interrupted, diverged or failed)" % (status,))
        if self._r.closed:
            return
        self._final = self._r.state()
        self._r.close(codes[status])

    def __enter__(self):
        return self

    def __exit__(self, etype, evalue, tb):
        if etype is None:
            self.close()
        elif issubclass(etype, KeyboardInterrupt):
            self.close("interrupted")
        else:
            self.close("failed")
        return False

    def __repr__(self):
        st = self.state
        return "<lockstep.Recorder run %d %r, step %d, trajectory %016x%s>" % (
            st["run_id"], self.name, st["step"], st["traj_hash"], ", closed" if self.closed else "")


def record(db, name=None, config=None, every=1, framework=None):
    """Starts recording a run of any framework in the SQLite record db:
    rec.step(loss, model) after each training step, rec.close() at the end
    (or use it as a context manager). See docs/python.md."""
    return Recorder(db, name=name, config=config, every=every, framework=framework)
