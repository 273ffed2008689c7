"""Runs of PyTorch (Debian's python3-torch) recorded with lockstep.record,
verify, the tensor hash against an independent xxhash, and the pytest plugin.

The oracles come from outside the library: the tensor and parameter hashes
are recomputed here with the xxhash module (Debian's python3-xxhash) over
the layout docs/formats.md gives, the first differing tensor by comparing
the saved tensors with numpy, the weights of a lockstep run by reading
`lockstep export --weights`'s safetensors file with a reader written here.
"""

import json
import os
import sqlite3
import struct
import subprocess
import sys
import textwrap

import lockstep

from .test_lockstep import Base, BIN

try:
    import torch
except ImportError:   # the tests fail, naming the package: never a skip
    torch = None
try:
    import xxhash
except ImportError:
    xxhash = None
try:
    import numpy as np
except ImportError:
    np = None


def xxh3(data):
    return xxhash.xxh3_64_intdigest(data)


def tensor_hash(name, dtype, shape, data):
    """docs/formats.md, "Tensor hash", written out independently of the library."""
    head = name.encode() + b"\0" + dtype.encode() + b"\0" + struct.pack("<Q", len(shape))
    head += b"".join(struct.pack("<Q", d) for d in shape)
    return xxh3(head + data)


def set_hash(hashes):
    """The parameter hash of an external step: sorted names, each name, 0x00, u64le(hash)."""
    return xxh3(b"".join(n.encode() + b"\0" + struct.pack("<Q", hashes[n]) for n in sorted(hashes)))


def torch_bytes(t):
    """C-order little-endian bytes of a CPU tensor (bf16/f16 as their bit patterns)."""
    t = t.detach().contiguous()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.view(torch.int16)
    return t.numpy().tobytes()


if torch is not None:
    class MLP(torch.nn.Module):
        """A small MLP; its buffer a_scale sorts first and never changes, so the
        first tensor that differs after a changed lr is not the first name."""

        def __init__(self):
            super().__init__()
            self.register_buffer("a_scale", torch.ones(3))
            self.fc1 = torch.nn.Linear(8, 16)
            self.fc2 = torch.nn.Linear(16, 3)

        def forward(self, x):
            return self.fc2(torch.tanh(self.fc1(x))) * self.a_scale


def train_torch(db, name, threads, lr=0.1, steps=6, every=1, keep=None):
    """A real PyTorch loop (SGD on random data, fixed seed), recorded. keep: a
    list that receives each step's state_dict as numpy arrays."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(96, 8)
    y = torch.randint(0, 3, (96,))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    with lockstep.record(db, name=name, config={"lr": lr, "model": "mlp 8-16-3", "seed": 0},
                         every=every) as rec:
        for step in range(steps):
            xb, yb = x[step * 16:(step + 1) * 16], y[step * 16:(step + 1) * 16]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            rec.step(loss, model)
            if keep is not None:
                keep.append({k: v.detach().numpy().copy() for k, v in model.state_dict().items()})
    return rec


class RecordBase(Base):
    def setUp(self):
        super().setUp()
        if torch is None:
            self.fail("torch is missing: install the Debian package python3-torch")
        if xxhash is None:
            self.fail("xxhash is missing: install the Debian package python3-xxhash")
        self.threads = torch.get_num_threads()

    def tearDown(self):
        torch.set_num_threads(self.threads)
        super().tearDown()

    def sql(self, query, *args):
        con = sqlite3.connect(self.db)
        try:
            return con.execute(query, args).fetchall()
        finally:
            con.close()

    def recorded_tensors(self, run, step):
        """{name: hash} of the record's per-tensor hashes of run at step (read with sqlite3)."""
        names = [r[0] for r in self.sql("SELECT t.name FROM run_tensors t JOIN runs r ON r.id = t.run "
                                        "WHERE r.name = ? ORDER BY t.idx", run)]
        rows = self.sql("SELECT s.hashes FROM step_tensors s JOIN runs r ON r.id = s.run "
                        "WHERE r.name = ? AND s.step = ?", run, step)
        if not rows:
            return None
        blob = rows[0][0]
        self.assertEqual(len(blob), 8 * len(names))
        return {n: struct.unpack_from("<Q", blob, 8 * i)[0] for i, n in enumerate(names)}

    def param_hash(self, run, step):
        rows = self.sql("SELECT s.param_hash FROM steps s JOIN runs r ON r.id = s.run "
                        "WHERE r.name = ? AND s.step = ?", run, step)
        return rows[0][0] & (2**64 - 1)   # the u64 as SQLite's signed integer


class TestRecordTorch(RecordBase):
    def test_torch_loop_at_1_2_3_8_threads_verifies_equal(self):
        a = train_torch(self.db, "t1", 1)
        self.assertTrue(a.framework.startswith("pytorch "))
        for t in (2, 3, 8):
            b = train_torch(self.db, "t%d" % t, t)
            self.assertEqual(a.traj_hash, b.traj_hash, "threads %d" % t)
            p = self.cli("verify", "t1", "t%d" % t, "--db", self.db)
            self.assertIn("bit-identical over steps 1..6", p.stdout)
            v = lockstep.verify(self.db, "t1", "t%d" % t)
            self.assertTrue(v.equal)
            self.assertIsNone(v.first_diff)
            self.assertIsNone(v.first_tensor)
            self.assertEqual(v.steps, 6)
        row = self.run_row("t2")
        self.assertEqual(row["model"], "external")
        with self.assertRaisesRegex(TypeError, "model: 'w' is a torch.sparse_coo tensor"):
            lockstep.tensor_hashes({"w": torch.zeros(2).to_sparse()})

    def test_changed_lr_names_step_1_and_the_first_differing_tensor(self):
        ka, kb = [], []
        train_torch(self.db, "base", 1, lr=0.1, keep=ka)
        train_torch(self.db, "lr2", 2, lr=0.2, keep=kb)
        # the oracle: the first tensor in sorted (byte) order whose bytes differ after step 1
        names = sorted(ka[0], key=lambda n: n.encode())
        differ = [n for n in names if ka[0][n].tobytes() != kb[0][n].tobytes()]
        self.assertTrue(differ)
        self.assertNotEqual(differ[0], names[0])   # a_scale sorts first and is equal
        v = lockstep.verify(self.db, "base", "lr2")
        self.assertFalse(v.equal)
        self.assertEqual(v.first_diff, 1)
        self.assertEqual(v.first_tensor, differ[0])
        self.assertFalse(v.same_config)
        p = self.cli("verify", "base", "lr2", "--db", self.db, ok=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("first differing tensor at step 1: %s" % differ[0], p.stdout)
        # step 1's loss came from the same θ_0: the losses part at step 2
        t = lockstep.verify(self.db, "base", "lr2", loss_rtol=0, loss_atol=0)
        self.assertEqual(t.tol_first, 2)
        self.assertNotEqual(t.tol_loss_a, t.tol_loss_b)
        self.assertFalse(t.equal)
        wide = lockstep.verify(self.db, "base", "lr2", loss_rtol=1e6)
        self.assertIsNone(wide.tol_first)
        self.assertEqual(wide.first_diff, 1)
        with self.assertRaisesRegex(ValueError, "loss_rtol"):
            lockstep.verify(self.db, "base", "lr2", loss_rtol=-1)
        with self.assertRaisesRegex(TypeError, "loss_atol"):
            lockstep.verify(self.db, "base", "lr2", loss_atol="x")

    def test_recorded_hashes_equal_xxhash_over_the_documented_bytes(self):
        torch.manual_seed(1)
        w = torch.randn(4, 3)
        tensors = {
            "w_t": w.t(),                                   # non-contiguous: hashed in C order
            "bf": torch.randn(5).to(torch.bfloat16),        # by its 2-byte patterns
            "half": torch.randn(2, 2).to(torch.float16),
            "idx": torch.arange(6, dtype=torch.int64).reshape(2, 3),
            "mask": torch.tensor([True, False, True]),
            "scalar": torch.tensor(2.5, dtype=torch.float64),
            "np": np.arange(4, dtype=np.int32).reshape(2, 2)[:, ::-1],   # numpy, strided
            "nested": {"a": [torch.zeros(2), torch.ones(1, dtype=torch.int8)]},
        }
        with lockstep.record(self.db, name="x") as rec:
            rec.step(1.0, tensors)
        got = self.recorded_tensors("x", 1)
        want = {}
        for name, t in [("w_t", tensors["w_t"]), ("bf", tensors["bf"]), ("half", tensors["half"]),
                        ("idx", tensors["idx"]), ("mask", tensors["mask"]), ("scalar", tensors["scalar"]),
                        ("nested.a.0", tensors["nested"]["a"][0]), ("nested.a.1", tensors["nested"]["a"][1])]:
            dtype = str(t.dtype).replace("torch.", "")
            want[name] = tensor_hash(name, dtype, tuple(t.shape), torch_bytes(t))
        a = tensors["np"]
        want["np"] = tensor_hash("np", "int32", a.shape, a.tobytes())
        self.assertEqual(got, want)
        self.assertEqual(self.param_hash("x", 1), set_hash(want))
        self.assertEqual(rec.param_hash, "%016x" % set_hash(want))
        # bf16 was not upcast: its hash is not that of the float32 values
        up = tensors["bf"].float()
        self.assertNotEqual(want["bf"], tensor_hash("bf", "float32", (5,), up.numpy().tobytes()))
        self.assertEqual(want["bf"], tensor_hash("bf", "bfloat16", (5,), tensors["bf"].view(torch.int16).numpy().tobytes()))
        # lockstep.tensor_hashes gives the same without a record
        hashes, ph = lockstep.tensor_hashes(tensors)
        self.assertEqual(hashes, want)
        self.assertEqual(ph, set_hash(want))

    def test_lockstep_run_tensor_hashes_equal_export_weights(self):
        self.cli("train", "--task", "teacher", "--model", "mlp", "--hidden", "16", "--steps", "5", "--threads", "2",
                 "--db", self.db, "--name", "own", "--no-progress")
        st = os.path.join(self.dir, "w.safetensors")
        self.cli("export", "own", "--weights", st, "--db", self.db, "--no-progress")
        with open(st, "rb") as f:
            raw = f.read()
        (n,) = struct.unpack_from("<Q", raw, 0)
        header = json.loads(raw[8:8 + n])
        body = raw[8 + n:]
        mine = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            self.assertEqual(info["dtype"], "F32")
            lo, hi = info["data_offsets"]
            mine[name] = tensor_hash(name, "float32", tuple(info["shape"]), body[lo:hi])
        self.assertTrue(mine)
        self.assertEqual(self.recorded_tensors("own", 5), mine)

    def test_every_k_hashes_every_kth_step_only(self):
        class Trap(dict):
            """A state_dict that fails when read: the steps between are not hashed."""

            def keys(self):
                raise AssertionError("the model was read at a step that is not hashed")

        torch.manual_seed(0)
        real = {"w": torch.randn(3)}
        with lockstep.record(self.db, name="k", every=2) as rec:
            for step in range(1, 6):
                rec.step(0.5 * step, real if step % 2 == 0 else Trap())
        ph = {s: self.param_hash("k", s) for s in range(1, 6)}
        self.assertEqual([s for s in ph if ph[s] != 0], [2, 4])
        self.assertIsNone(self.recorded_tensors("k", 1))
        self.assertEqual(self.recorded_tensors("k", 4), {"w": tensor_hash("w", "float32", (3,), torch_bytes(real["w"]))})
        rows = self.sql("SELECT step, loss FROM steps s JOIN runs r ON r.id = s.run WHERE r.name = 'k' ORDER BY step")
        self.assertEqual(rows, [(s, 0.5 * s) for s in range(1, 6)])
        with self.assertRaisesRegex(ValueError, "every"):
            lockstep.record(self.db, name="k0", every=0)

    def test_bad_input_names_the_argument_and_keeps_the_record(self):
        t = torch.zeros(2)
        rec = lockstep.record(self.db, name="bad", config={"lr": 0.1})
        rec.step(1.0, {"w": t})
        rec.step(0.9, {"w": t})
        cases = [
            (TypeError, r"model: 'n' is int, not a tensor", {"w": t, "n": 3}),
            (TypeError, r"model: 'w' has dtype torch.complex64", {"w": torch.zeros(2, dtype=torch.complex64)}),
            (ValueError, r"model: the tensor name 'a.b' comes twice", {"a.b": t, "a": {"b": t}}),
            (TypeError, r"model: key 3 is not a str", {3: t}),
            (lockstep.InvalidError, r"2 tensors", {"w": t, "v": t}),   # not the first step's set of names
            (lockstep.InvalidError, r"\bv\b", {"v": t}),
        ]
        for exc, pattern, model in cases:
            with self.assertRaisesRegex(exc, pattern):
                rec.step(0.8, model)
        with self.assertRaisesRegex(TypeError, "loss"):
            rec.step("x", {"w": t})
        with self.assertRaisesRegex(ValueError, "loss"):
            rec.step(torch.zeros(2), {"w": t})
        with self.assertRaisesRegex(TypeError, "model: .*needs the model"):
            rec.step(0.8)
        with self.assertRaisesRegex(lockstep.InvalidError, "step"):
            rec.step(0.8, {"w": t}, step=7)
        with self.assertRaises(lockstep.ExistsError):
            lockstep.record(self.db, name="bad")
        with self.assertRaisesRegex(TypeError, "config"):
            lockstep.record(self.db, name="bad2", config=[1])
        self.assertEqual(self.step_rows("bad"), 2)       # every earlier row kept, nothing half-written
        rec.step(0.8, {"w": t})                           # and the run goes on
        rec.close()
        self.assertEqual(self.step_rows("bad"), 3)
        self.assertEqual(self.run_row("bad")["status"], "done")
        with self.assertRaisesRegex(ValueError, "closed"):
            rec.step(0.7, {"w": t})

    def test_context_exit_on_error_and_dropped_recorder(self):
        with self.assertRaises(RuntimeError):
            with lockstep.record(self.db, name="boom") as rec:
                rec.step(1.0, {"w": torch.zeros(1)})
                raise RuntimeError("training failed")
        self.assertEqual(self.run_row("boom")["status"], "failed")
        rec = lockstep.record(self.db, name="dropped")
        rec.step(1.0, {"w": torch.zeros(1)})
        del rec
        self.assertEqual(self.run_row("dropped")["status"], "interrupted")
        self.assertEqual(self.step_rows("dropped"), 1)

    def test_golden_save_and_compare_from_python(self):
        train_torch(self.db, "g1", 1)
        train_torch(self.db, "g2", 2, lr=0.2)
        path = os.path.join(self.dir, "g.golden")
        lockstep.golden_save(self.db, "g1", path)
        self.assertTrue(lockstep.golden_compare(self.db, "g1", path).equal)
        r = lockstep.golden_compare(self.db, "g2", path)
        v = lockstep.verify(self.db, "g1", "g2")
        self.assertFalse(r.equal)
        self.assertEqual((r.first_diff, r.first_tensor), (1, v.first_tensor))
        self.assertEqual(r.loss_file, r.loss_run)          # step 1: the same θ_0
        self.assertTrue(r.config_differs)


SAMPLE = '''
import os
import torch

LR = float(os.environ.get("SAMPLE_LR", "0.1"))


def test_linear(lockstep_golden):
    torch.manual_seed(0)
    torch.set_num_threads(int(os.environ.get("SAMPLE_THREADS", "1")))
    model = torch.nn.Linear(4, 3)
    x, y = torch.randn(32, 4), torch.randint(0, 3, (32,))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    with lockstep_golden.record(config={"lr": LR}) as rec:
        for i in range(4):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[8 * i:8 * i + 8]), y[8 * i:8 * i + 8])
            loss.backward()
            opt.step()
            rec.step(loss, model)
'''


class TestPytestPlugin(RecordBase):
    def pytest(self, *args, **env):
        e = dict(os.environ)
        e.pop("CI", None)
        e.update(env)
        pkg = os.path.dirname(os.path.dirname(os.path.abspath(lockstep.__file__)))
        e["PYTHONPATH"] = pkg + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        p = subprocess.run([sys.executable, "-m", "pytest", "-p", "lockstep.pytest", "-p", "no:cacheprovider",
                            "-q", "test_sample.py"] + list(args), cwd=self.dir, env=e,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return p.returncode, p.stdout

    def test_plugin_passes_fails_updates_and_refuses_under_ci(self):
        try:
            import pytest   # noqa: F401
        except ImportError:
            self.fail("pytest is missing: install the Debian package python3-pytest")
        with open(os.path.join(self.dir, "test_sample.py"), "w") as f:
            f.write(textwrap.dedent(SAMPLE))
        golden = os.path.join(self.dir, "test_sample.test_linear.golden")
        rc, out = self.pytest()
        self.assertEqual(rc, 1, out)
        self.assertIn("--lockstep-update", out)
        self.assertFalse(os.path.exists(golden))
        rc, out = self.pytest("--lockstep-update")
        self.assertEqual(rc, 0, out)
        with open(golden) as f:
            first = f.read()
        self.assertTrue(first.startswith("# lockstep golden v2"), first[:80])
        rc, out = self.pytest()
        self.assertEqual(rc, 0, out)
        rc, out = self.pytest(SAMPLE_THREADS="2")
        self.assertEqual(rc, 0, out)
        rc, out = self.pytest(SAMPLE_LR="0.2")
        self.assertEqual(rc, 1, out)
        self.assertIn("first diverging step: 1 (of 4 in the file)", out)
        self.assertRegex(out, r"first differing tensor: (bias|weight)\n")
        self.assertRegex(out, r"loss in the file: [0-9.e-]+\n")
        rc, out = self.pytest("--lockstep-update", SAMPLE_LR="0.2", CI="true")
        self.assertNotEqual(rc, 0, out)
        self.assertIn("--lockstep-update refuses to run when CI is set", out)
        with open(golden) as f:
            self.assertEqual(f.read(), first)
        rc, out = self.pytest("--lockstep-update", SAMPLE_LR="0.2")
        self.assertEqual(rc, 0, out)
        rc, out = self.pytest(SAMPLE_LR="0.2")
        self.assertEqual(rc, 0, out)
        rc, out = self.pytest()
        self.assertEqual(rc, 1, out)
