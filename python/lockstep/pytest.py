"""The pytest plugin: golden files for training tests.

    pytest -p lockstep.pytest           (or installed: the entry point "lockstep")

    def test_train(lockstep_golden):
        torch.manual_seed(0)
        model = ...
        with lockstep_golden.record(config={"lr": 0.1}) as rec:
            for x, y in batches:
                loss = train_step(model, x, y)
                rec.step(loss, model)

The fixture records the test's loop (lockstep.record, into a database in
the test's temporary folder) and, when the block ends, compares it with the
golden file beside the test: <test folder>/<module>.<test name>.golden
(characters other than letters, digits, '.', '-', '_' in a parametrized
name become '_'). A difference fails the test with the first diverging
step, the first differing tensor and both losses. `--lockstep-update`
(re)writes the golden files of the tests it runs instead of comparing; it
is refused when the environment variable CI is set, as `lockstep golden
update` is. A test with no golden file fails, naming the option to write it.
"""

import os
import re

import pytest

import lockstep


def pytest_addoption(parser):
    group = parser.getgroup("lockstep", "lockstep golden files of training runs")
    group.addoption("--lockstep-update", action="store_true", default=False,
                    help="write the golden files of the tests run instead of comparing (refused when CI is set)")


def pytest_configure(config):
    if config.getoption("lockstep_update", False) and os.environ.get("CI"):
        raise pytest.UsageError("--lockstep-update refuses to run when CI is set: golden files are written "
                                "on a developer's machine, not in CI")
    config.addinivalue_line("markers", "lockstep: a training test checked against its lockstep golden file")


class GoldenMismatch(AssertionError):
    """A recorded run differs from its golden file."""


class Golden:
    """The lockstep_golden fixture's object: record() the test's loop; the
    check runs when its recorder closes (or at the end of the test)."""

    def __init__(self, path, db, update, run):
        self.path = path        # the golden file
        self.db = db            # the record the loop goes to
        self.update = update
        self.run = run
        self.recorder = None
        self.result = None      # the GoldenResult, after the check
        self.checked = False

    def record(self, config=None, every=1, framework=None):
        if self.recorder is not None:
            raise RuntimeError("lockstep_golden: one recorded run a test")
        self.recorder = _CheckedRecorder(self, lockstep.Recorder(self.db, name=self.run, config=config,
                                                                 every=every, framework=framework))
        return self.recorder

    def check(self):
        """Compare the recorded run with the golden file (or write it with
        --lockstep-update); raises GoldenMismatch describing the first difference."""
        __tracebackhide__ = True   # pytest shows the test's line, not the plugin's
        if self.checked:
            return self.result
        if self.recorder is None:
            raise RuntimeError("lockstep_golden: nothing was recorded (call lockstep_golden.record())")
        self.recorder.rec.close()
        self.checked = True
        if self.update:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            lockstep.golden_save(self.db, self.run, self.path)
            return None
        if not os.path.exists(self.path):
            raise GoldenMismatch("lockstep golden file %s does not exist: run pytest with --lockstep-update "
                                 "to write it" % self.path)
        r = self.result = lockstep.golden_compare(self.db, self.run, self.path)
        if not r.equal:
            raise GoldenMismatch(describe(r))
        return r


def _num(v):
    return "-" if v is None else repr(v)


def describe(r):
    """The failure text: where the run left its golden file, as a small table."""
    lines = ["training run differs from its golden file %s" % r.path,
             "  first diverging step: %d (of %d in the file)" % (r.first_diff, r.steps),
             "  first differing tensor: %s" % (r.first_tensor or "(none: the parameters are equal there)"),
             "  loss in the file: %s" % _num(r.loss_file),
             "  loss in the run:  %s" % _num(r.loss_run)]
    if r.config_differs:
        lines.append("  note: the run's config text differs from the file's")
    lines.append("  " + r.detail)
    lines.append("  (pytest --lockstep-update rewrites the file if the change is intended)")
    return "\n".join(lines)


class _CheckedRecorder:
    """A lockstep.Recorder whose context exit checks the golden file."""

    def __init__(self, golden, rec):
        self.golden = golden
        self.rec = rec

    def __getattr__(self, name):
        return getattr(self.rec, name)

    def step(self, loss, model=None, step=None):
        return self.rec.step(loss, model, step)

    def close(self):
        __tracebackhide__ = True
        self.golden.check()

    def __enter__(self):
        return self

    def __exit__(self, etype, evalue, tb):
        __tracebackhide__ = True
        if etype is None:
            self.golden.check()
        else:
            self.rec.__exit__(etype, evalue, tb)
            self.golden.checked = True   # the test failed already
        return False


def golden_path(node):
    """<test folder>/<module>.<test name>.golden"""
    folder = os.path.dirname(str(node.fspath))
    module = os.path.splitext(os.path.basename(str(node.fspath)))[0]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", node.name)
    return os.path.join(folder, "%s.%s.golden" % (module, name))


@pytest.fixture
def lockstep_golden(request, tmp_path):
    """Records the test's training loop and checks it against its golden file."""
    g = Golden(golden_path(request.node), str(tmp_path / "lockstep-runs.db"),
               request.config.getoption("lockstep_update", False), "test")
    yield g
    __tracebackhide__ = True
    if g.recorder is not None and not g.checked:
        g.check()
