"""The Python package against the command-line program: same configs, same
bits. Every comparison is of bits (trajectory hashes, bytes), two runs
against each other: no hash computed today is written here."""

import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import lockstep

try:
    import numpy as np
except ImportError:   # the test fails, naming the package: never a skip
    np = None

BIN = os.environ.get("LOCKSTEP_BIN") or shutil.which("lockstep")
# A small run that still has a test split, several steps and named tensors.
TEACHER = {"task": "teacher", "model": "mlp", "hidden": [16], "lr": 0.01, "batch": 24}
STEPS = 12


def cli_flags(config):
    """The config as the command line's flags (--key value, '-' for '_')."""
    out = []
    for k, v in config.items():
        if isinstance(v, (list, tuple)):
            v = ",".join(str(x) for x in v)
        out += ["--" + k.replace("_", "-"), str(v)]
    return out


class Base(unittest.TestCase):
    def setUp(self):
        if np is None:
            self.fail("numpy is missing: install the Debian package python3-numpy")
        if not BIN or not os.access(BIN, os.X_OK):
            self.fail("the lockstep program is missing: set LOCKSTEP_BIN or install it (make install)")
        self.dir = tempfile.mkdtemp(prefix="lockstep-py-")
        self.db = os.path.join(self.dir, "runs.db")

    def tearDown(self):
        if hasattr(self, "dir"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def cli(self, *args, ok=True):
        p = subprocess.run([BIN] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        if ok and p.returncode != 0:
            self.fail("lockstep %s: exit %d\n%s%s" % (" ".join(map(str, args)), p.returncode, p.stdout, p.stderr))
        return p

    def run_row(self, name, db=None):
        rows = json.loads(self.cli("runs", "--db", db or self.db, "--json").stdout)
        for r in rows:
            if r["name"] == name:
                return r
        self.fail("no run %r in lockstep runs --json: %s" % (name, [r["name"] for r in rows]))

    def step_rows(self, name):
        con = sqlite3.connect(self.db)
        try:
            return con.execute("SELECT COUNT(*) FROM steps JOIN runs ON runs.id = steps.run WHERE runs.name = ?",
                               (name,)).fetchone()[0]
        finally:
            con.close()

    def save_arrays(self, **arrays):
        paths = {}
        for k, a in arrays.items():
            paths[k] = os.path.join(self.dir, k + ".npy")
            np.save(paths[k], a)
        return paths


def blobs(n, dim, classes, seed, dtype):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=n).astype(np.int64)
    x = rng.normal(size=(n, dim)) + y[:, None] * 0.5
    if dtype == np.uint8:
        x = np.clip(x * 40 + 100, 0, 255).astype(np.uint8)
    else:
        x = x.astype(dtype)
    return x, y


class TestTrain(Base):
    def test_train_same_trajectory_as_cli_1_and_3_threads(self):
        for t in (1, 3):
            self.cli("train", *cli_flags(TEACHER), "--steps", STEPS, "--threads", t, "--db", self.db,
                     "--name", "cli-t%d" % t, "--no-progress")
            with lockstep.open(TEACHER, steps=STEPS, threads=t, db=self.db, name="py-t%d" % t) as s:
                s.train()
                mine = s.traj_hash
            cli_row, py_row = self.run_row("cli-t%d" % t), self.run_row("py-t%d" % t)
            self.assertEqual(mine, py_row["trajectory"])
            self.assertEqual(py_row["trajectory"], cli_row["trajectory"])
            self.assertEqual(py_row["config_hash"], cli_row["config_hash"])
            self.assertTrue(lockstep.verify(self.db, "cli-t%d" % t, "py-t%d" % t).equal)
        self.assertEqual(self.run_row("py-t1")["trajectory"], self.run_row("py-t3")["trajectory"])

    def test_step_by_step_equals_train(self):
        with lockstep.open(TEACHER, steps=STEPS, threads=2) as a:
            losses = [a.step() for _ in range(STEPS)]
            ta = a.traj_hash
        with lockstep.open(dict(TEACHER, steps=STEPS, threads=8)) as b:
            b.train()
            tb, lb = b.traj_hash, b.state["loss"]
        self.assertEqual(ta, tb)
        self.assertEqual(struct.pack("<d", losses[-1]), struct.pack("<d", lb))

    def test_run_started_in_python_is_listed_by_runs_json(self):
        with lockstep.open(TEACHER, steps=5, threads=2, db=self.db, name="from-python") as s:
            s.train()
            metrics = s.evaluate()
        self.assertIn("test_acc", metrics)
        row = self.run_row("from-python")
        self.assertEqual(row["status"], "done")
        self.assertEqual(row["steps"], 5)
        self.assertEqual([r["name"] for r in lockstep.runs(self.db)], ["from-python"])

    def test_resume_equals_uninterrupted(self):
        with lockstep.open(TEACHER, steps=STEPS, threads=2, db=self.db, name="cut", checkpoint_every=4) as s:
            s.train(steps=6)
        self.assertEqual(self.run_row("cut")["status"], "interrupted")
        with lockstep.reopen(self.db, "cut", threads=3) as s:
            self.assertEqual(s.state["resumed_from"], 4)
            s.train()
            self.assertEqual(s.step_count, STEPS)
        self.cli("train", *cli_flags(TEACHER), "--steps", STEPS, "--threads", 1, "--db", self.db, "--name",
                 "whole", "--no-progress")
        self.assertEqual(self.run_row("cut")["status"], "done")
        self.assertTrue(lockstep.verify(self.db, "whole", "cut").equal)
        # restore: the run's last parameters, recomputed and checked
        with lockstep.reopen(self.db, "whole", how="restore", threads=2) as r:
            restored = r.params().tobytes()
        with lockstep.reopen(self.db, "cut", how="restore", threads=1) as r:
            self.assertEqual(r.params().tobytes(), restored)

    def test_verify_names_first_step_of_changed_lr(self):
        for name, lr in (("a", 0.01), ("b", 0.02)):
            with lockstep.open(TEACHER, lr=lr, steps=6, threads=2, db=self.db, name=name) as s:
                s.train()
        v = lockstep.verify(self.db, "a", "b")
        self.assertFalse(v.equal)
        self.assertEqual(v.first_diff, 1)
        self.assertFalse(v.same_config)

    def test_equiv_at_several_thread_counts(self):
        r = lockstep.equiv(TEACHER, threads=[1, 2, 3, 8], steps=8, db=self.db, name="eq")
        self.assertTrue(r.equal)
        self.assertEqual([u["threads"] for u in r.runs], [1, 2, 3, 8])
        self.assertEqual(len({u["traj_hash"] for u in r.runs}), 1)
        self.assertEqual(self.run_row("eq-t8")["trajectory"], r.runs[0]["traj_hash"])

    def test_audit(self):
        with lockstep.open(TEACHER, steps=8, threads=2, db=self.db, name="proved") as s:
            s.train()
        self.assertTrue(lockstep.audit(self.db, "proved", threads=3).ok)
        # a recorded loss altered: the audit names the step
        con = sqlite3.connect(self.db)
        con.execute("UPDATE steps SET loss_bits = loss_bits + 1 WHERE step = 5")
        con.commit()
        con.close()
        r = lockstep.audit(self.db, "proved", threads=2)
        self.assertFalse(r.ok)
        self.assertIn("5", r.message)

    def test_report_through_cli(self):
        with lockstep.open(TEACHER, steps=4, threads=2, db=self.db, name="r") as s:
            s.train()
        out = os.path.join(self.dir, "r.html")
        lockstep.report(self.db, ["r"], out)
        with open(out, encoding="utf-8") as f:
            self.assertIn("<html", f.read(2000).lower())

    def test_ctrl_c_stops_train_at_a_step(self):
        # a long train in another process, Ctrl-C: KeyboardInterrupt at a step
        # boundary, the run interrupted with its steps recorded, resumable
        # The child takes Python's own Ctrl-C handler first: a test run started
        # in the background of a non-interactive shell (as CI may start it)
        # inherits SIGINT ignored, and Python then leaves it ignored.
        code = ("import signal, sys, lockstep\n"
                "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
                "s = lockstep.open(task='teacher', steps=10**8, threads=2, db=sys.argv[1], name='long')\n"
                "print('go', flush=True)\n"
                "try:\n"
                "    s.train()\n"
                "except KeyboardInterrupt:\n"
                "    print('stopped at', s.step_count, flush=True)\n"
                "    s.close()\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(lockstep.__file__)))
        p = subprocess.Popen([sys.executable, "-c", code, self.db], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
        try:
            self.assertEqual(p.stdout.readline().strip(), "go")
            # SIGINT once train() is stepping (a step after step 0 recorded:
            # step 0 is committed when the run opens), not after a fixed
            # sleep: on a loaded machine the child may not be there yet.
            deadline = time.monotonic() + 60
            while self.step_rows("long") <= 1 and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        self.assertEqual(p.returncode, 0, err)
        self.assertTrue(out.startswith("stopped at "), out + err)
        steps = int(out.split()[-1])
        self.assertGreater(steps, 0)
        row = self.run_row("long")
        self.assertEqual(row["status"], "interrupted")
        self.assertEqual(row["steps"], steps)
        with lockstep.reopen(self.db, "long", how="restore", threads=3) as r:
            self.assertEqual(r.step_count, steps)

    def test_gil_released_during_train(self):
        # two sessions trained on two Python threads at once give the bits of one alone
        hashes = {}

        def work(k):
            with lockstep.open(TEACHER, steps=STEPS, threads=2) as s:
                s.train()
                hashes[k] = s.traj_hash
        ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(hashes[0], hashes[1])


class TestArrays(Base):
    def check_same(self, x, y, xt, yt, model="mlp"):
        files = self.save_arrays(train_x=x, train_y=y, test_x=xt, test_y=yt)
        flags = ["--task", "arrays", "--model", model, "--steps", 10, "--db", self.db, "--no-progress"]
        for k, p in files.items():
            flags += ["--" + k.replace("_", "-"), p]
        for t in (1, 3):
            name = "%s-%s-t%d" % (model, x.dtype, t)
            self.cli("train", *flags, "--threads", t, "--name", "cli-" + name)
            with lockstep.open(task="arrays", model=model, train_x=x, train_y=y, test_x=xt, test_y=yt, steps=10,
                               threads=t, db=self.db, name="py-" + name) as s:
                s.train()
                self.assertEqual(s.traj_hash, self.run_row("cli-" + name)["trajectory"])
            self.assertTrue(lockstep.verify(self.db, "cli-" + name, "py-" + name).equal)
        d = lockstep.arrays_dataset(x, y, xt, yt)
        self.assertEqual(d.n_train, len(x))
        self.assertEqual(d.n_test, len(xt))

    def test_arrays_from_numpy_equal_npy_files_float32(self):
        x, y = blobs(300, 6, 3, 1, np.float32)
        xt, yt = blobs(64, 6, 3, 2, np.float32)
        self.check_same(x, y, xt, yt)

    def test_arrays_from_numpy_equal_npy_files_uint8_linear(self):
        x, y = blobs(200, 5, 4, 3, np.uint8)
        xt, yt = blobs(50, 5, 4, 4, np.uint8)
        self.check_same(x, y, xt, yt, model="linear")

    def test_arrays_from_numpy_equal_npy_files_float64(self):
        x, y = blobs(150, 4, 2, 5, np.float64)
        xt, yt = blobs(40, 4, 2, 6, np.float64)
        self.check_same(x, y, xt, yt)

    def test_arrays_many_classes(self):
        # Labels past a byte (int32 in the library): 70000 classes from numpy
        # arrays train to one trajectory at 1 and 3 threads, predict labels
        # above 65535's range of uint16, and a label of 2^31 - 1 is refused.
        x, _ = blobs(96, 5, 3, 8, np.float32)
        y = (np.arange(96, dtype=np.int64) * 7919) % 70000
        y[0] = 69999
        xt, yt = x[:32], y[:32].astype(np.uint32)
        d = lockstep.arrays_dataset(x, y, xt, yt)
        self.assertEqual(d.n_classes, 70000)
        hashes = []
        for t in (1, 3):
            with lockstep.open(task="arrays", model="mlp", hidden=[4], leaf=16, batch=32, steps=4, threads=t,
                               data=d) as s:
                s.train()
                hashes.append(s.traj_hash)
                labels = s.predict(xt, labels=True)
        self.assertEqual(hashes[0], hashes[1])
        self.assertEqual(labels.shape, (32,))
        self.assertTrue(0 <= labels.min() and labels.max() < 70000)
        with self.assertRaises(lockstep.FormatError) as e:
            lockstep.arrays_dataset(x, np.where(np.arange(96) == 4, 2**31 - 1, y))
        self.assertIn("label 4 is 2147483647", str(e.exception))

    def test_reopen_arrays_run_with_its_arrays(self):
        x, y = blobs(200, 4, 2, 7, np.float32)
        with lockstep.open(task="arrays", train_x=x, train_y=y, steps=8, threads=2, db=self.db, name="mem",
                           checkpoint_every=3) as s:
            s.train(steps=5)
        with lockstep.reopen(self.db, "mem", train_x=x, train_y=y, threads=1) as s:
            s.train()
            self.assertEqual(s.step_count, 8)
        # other arrays are other data: refused, naming data_hash
        with self.assertRaises(lockstep.MismatchError) as e:
            lockstep.reopen(self.db, "mem", how="restore", train_x=x + 1, train_y=y)
        self.assertIn("data_hash", str(e.exception))


class TestPredictWeights(Base):
    def test_predict_and_weights_equal_cli_exports(self):
        x, y = blobs(256, 7, 3, 11, np.float32)
        xt, yt = blobs(33, 7, 3, 12, np.float32)
        files = self.save_arrays(train_x=x, train_y=y, test_x=xt, test_y=yt)
        with lockstep.open(task="arrays", model="mlp", hidden=[8, 5], steps=9, threads=2, db=self.db, name="p",
                           **files) as s:
            s.train()
            scores = s.predict(xt)
            labels = s.predict(xt, labels=True)
            weights = s.weights()
            params = s.params()
        self.cli("export", "p", "--db", self.db, "--weights", os.path.join(self.dir, "w.npy"), "--threads", 3,
                 "--no-progress")
        self.cli("export", "p", "--db", self.db, "--weights", os.path.join(self.dir, "w.safetensors"),
                 "--no-progress")
        self.cli("predict", "p", "--db", self.db, "--input", files["test_x"], "-o",
                 os.path.join(self.dir, "s.npy"), "--no-progress")
        self.cli("predict", "p", "--db", self.db, "--input", files["test_x"], "-o",
                 os.path.join(self.dir, "l.npy"), "--labels", "--no-progress")
        cli_scores = np.load(os.path.join(self.dir, "s.npy"))
        self.assertEqual(scores.shape, cli_scores.shape)
        self.assertEqual(scores.dtype, np.float32)
        self.assertEqual(scores.tobytes(), cli_scores.tobytes())
        cli_labels = np.load(os.path.join(self.dir, "l.npy"))
        self.assertEqual(labels.dtype, cli_labels.dtype)
        self.assertEqual(labels.tobytes(), cli_labels.tobytes())
        self.assertEqual(params.tobytes(), np.load(os.path.join(self.dir, "w.npy")).tobytes())
        # safetensors: 8-byte header length, a JSON header, then the data
        with open(os.path.join(self.dir, "w.safetensors"), "rb") as f:
            raw = f.read()
        n = struct.unpack("<Q", raw[:8])[0]
        head = json.loads(raw[8:8 + n])
        body = raw[8 + n:]
        names = [k for k in head if k != "__metadata__"]
        self.assertEqual(sorted(names), sorted(weights))
        for k in names:
            lo, hi = head[k]["data_offsets"]
            self.assertEqual(head[k]["dtype"], "F32")
            self.assertEqual(list(weights[k].shape), head[k]["shape"])
            self.assertEqual(weights[k].tobytes(), body[lo:hi], k)
        self.assertEqual(b"".join(w.tobytes() for w in weights.values()), params.tobytes())
        # float64, big-endian and uint8 samples read as predict reads X.npy
        self.assertEqual(s_bytes(self, "p", xt.astype(np.float64)), scores.tobytes())
        self.assertEqual(s_bytes(self, "p", xt.astype(">f4")), scores.tobytes())
        x8 = (np.abs(xt) * 40).clip(0, 255).astype(np.uint8)
        np.save(os.path.join(self.dir, "x8.npy"), x8)
        self.cli("predict", "p", "--db", self.db, "--input", os.path.join(self.dir, "x8.npy"), "-o",
                 os.path.join(self.dir, "s8.npy"), "--no-progress")
        self.assertEqual(s_bytes(self, "p", x8), np.load(os.path.join(self.dir, "s8.npy")).tobytes())


def s_bytes(case, run, x):
    with lockstep.reopen(case.db, run, how="restore", threads=1) as r:
        return r.predict(x).tobytes()


class TestBadInput(Base):
    def recorded(self):
        s = lockstep.open(TEACHER, steps=20, threads=2, db=self.db, name="kept")
        for _ in range(5):
            s.step()
        return s

    def assert_kept(self, s):
        # the session still works and the record kept every earlier row
        s.step()
        s.close("interrupted")
        self.assertEqual(self.step_rows("kept"), 1 + 6)
        self.assertEqual(self.run_row("kept")["steps"], 6)

    def test_unknown_config_key(self):
        with self.assertRaises(ValueError) as e:
            lockstep.open(TEACHER, bogus_key=3)
        self.assertIn("bogus_key", str(e.exception))
        self.assertIsInstance(e.exception, lockstep.InvalidError)
        with self.assertRaises(ValueError) as e:
            lockstep.config_text({"task": "teacher", "lrr": 0.1})
        self.assertIn("lrr", str(e.exception))

    def test_bad_config_value(self):
        with self.assertRaises(ValueError) as e:
            lockstep.open(TEACHER, lr="fast")
        self.assertIn("lr", str(e.exception))
        with self.assertRaises(TypeError) as e:
            lockstep.open(TEACHER, hidden={"a": 1})
        self.assertIn("hidden", str(e.exception))
        with self.assertRaises(ValueError) as e:
            lockstep.open(task="no-such-task")
        self.assertIn("no-such-task", str(e.exception))
        with self.assertRaises(TypeError) as e:
            lockstep.open(TEACHER, db=3)
        self.assertIn("db", str(e.exception))

    def test_bad_thread_count(self):
        for bad in (-1, 100000):
            with self.assertRaises(ValueError) as e:
                lockstep.open(TEACHER, threads=bad)
            self.assertIn("threads", str(e.exception))
        with self.assertRaises(TypeError) as e:
            lockstep.open(TEACHER, threads="2")
        self.assertIn("threads", str(e.exception))
        with self.assertRaises(ValueError) as e:
            lockstep.open(TEACHER, threads=10**30)
        self.assertIn("threads", str(e.exception))
        for bad in ([1, 1], [0, 2], [], [1, "2"]):
            with self.assertRaises((ValueError, TypeError)) as e:
                lockstep.equiv(TEACHER, threads=bad, steps=2)
            self.assertIn("threads", str(e.exception))

    def test_predict_wrong_dtype_and_noncontiguous(self):
        s = self.recorded()
        inputs, _ = s._s.predict_shape()
        with self.assertRaises(TypeError) as e:
            s.predict(np.zeros((3, inputs), dtype=np.int32))
        self.assertIn("x", str(e.exception))
        with self.assertRaises(TypeError) as e:
            s._s.predict(np.zeros((3, inputs), dtype=np.float64))   # the C layer: float32 only
        self.assertIn("float32", str(e.exception))
        with self.assertRaises(ValueError) as e:
            s.predict(np.zeros((inputs, 6), dtype=np.float32).T)
        self.assertIn("C-contiguous", str(e.exception))
        with self.assertRaises(ValueError) as e:
            s.predict(np.zeros((3, inputs + 1), dtype=np.float32))
        self.assertIn("x", str(e.exception))
        with self.assertRaises(TypeError) as e:
            s._s.predict(42)
        self.assertIn("x", str(e.exception))
        for empty in (np.zeros((0, inputs), dtype=np.float32), np.zeros(0, dtype=np.float32), b""):
            with self.assertRaises((ValueError, TypeError)) as e:
                s.predict(empty)
            self.assertIn("x", str(e.exception))
        # one sample as a 1-D array is [1, outputs]
        self.assertEqual(s.predict(np.zeros(inputs, dtype=np.float32)).shape[0], 1)
        self.assert_kept(s)

    def test_bad_arrays(self):
        x, y = blobs(50, 3, 2, 1, np.float32)
        with self.assertRaises(TypeError) as e:
            lockstep.open(task="arrays", train_x=x.astype(np.complex64), train_y=y)
        self.assertIn("train_x", str(e.exception))
        with self.assertRaises(TypeError) as e:
            lockstep.open(task="arrays", train_x=x, train_y=y.astype(np.float32))
        self.assertIn("train_y", str(e.exception))
        with self.assertRaises(ValueError) as e:
            lockstep.open(task="arrays", train_x=x, train_y=y[:10])
        self.assertIn("train_y", str(e.exception))
        with self.assertRaises(ValueError) as e:
            lockstep.open(task="arrays", train_x=x, train_y=y, test_x=x)
        self.assertIn("test_x", str(e.exception))
        bad = x.copy()
        bad[3, 1] = np.nan
        with self.assertRaises(ValueError) as e:
            lockstep.open(task="arrays", train_x=bad, train_y=y)
        self.assertIn("train_x", str(e.exception))
        with self.assertRaises(lockstep.FormatError) as e:
            lockstep._lockstep.arrays_dataset(b"not a npy image", b"")
        self.assertIn("train_x", str(e.exception))
        with self.assertRaises(TypeError) as e:
            lockstep._lockstep.arrays_dataset("text", b"")
        self.assertIn("train_x", str(e.exception))
        with self.assertRaises(ValueError) as e:
            lockstep.open(task="arrays", train_x=x)
        self.assertIn("train_y", str(e.exception))
        with self.assertRaises(TypeError) as e:
            lockstep._lockstep.open("teacher", None, [["lr", "0.1"]])
        self.assertIn("config", str(e.exception))

    def test_errors_keep_the_record(self):
        s = self.recorded()
        with self.assertRaises(ValueError):
            s.train(steps=-1)
        with self.assertRaises(lockstep.NotFoundError):
            lockstep.verify(self.db, "kept", "no-such-run")
        with self.assertRaises(lockstep.ExistsError):
            lockstep.open(TEACHER, db=self.db, name="kept")
        self.assert_kept(s)
        with self.assertRaises(ValueError) as e:
            s.step()
        self.assertIn("closed", str(e.exception))
