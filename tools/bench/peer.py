#!/usr/bin/python3
"""peer.py — `make bench-peer`: lockstep's MLP against PyTorch on the
same work, side by side.

The same network (784-256-256-10, ReLU, softmax cross-entropy), the same
batch (128 samples drawn from the 60000 Fashion-MNIST training images,
scaled to [0,1] as float32), the same optimiser (SGD, lr 0.001, momentum
0.9), at 1 and 2 threads. PyTorch runs in its own process per thread count
with OPENBLAS_NUM_THREADS=T and torch.set_num_threads(T) (set before its first
operation), so one thread means one core. Repetitions interleave: for each
repetition and thread count, PyTorch then lockstep, so a shared machine's
slow spells hit both. Prints medians, the spread (min..max) and the ratio
lockstep / PyTorch (median of the per-repetition ratios), as TSV rows; the
statistics are stats.py's.

    /usr/bin/python3 tools/bench/peer.py [build/lockstep] [--reps 7] [--steps 200]

Not part of `make test`: it needs python3-torch and libopenblas0-pthread
(the Makefile's bench-peer target installs them).
"""
import argparse
import gzip
import os
import platform
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ beside the scripts
from stats import median, row, spread

DATA_DIR = os.environ.get("LOCKSTEP_DATA_DIR") or "/usr/share/datasets/fashion-mnist"
LR = 0.001
MOMENTUM = 0.9
BATCH = 128


def torch_worker(threads, steps, warmup):
    """One PyTorch measurement: samples/s of `steps` training steps."""
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    with gzip.open(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz"), "rb") as f:
        raw = f.read()
    x = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(DATA_DIR, "train-labels-idx1-ubyte.gz"), "rb") as f:
        y = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    xs = torch.from_numpy(x.astype(np.float32) / np.float32(255.0))
    ys = torch.from_numpy(y.astype(np.int64))
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(1)
    # The batches' sample ids are drawn up front, like lockstep's data order.
    ids = torch.randint(0, xs.shape[0], (warmup + steps, BATCH), generator=gen)

    def step(i):
        xb = xs[ids[i]]
        yb = ys[ids[i]]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    for i in range(warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(warmup, warmup + steps):
        loss = step(i)
    float(loss)
    dt = time.perf_counter() - t0
    print(f"{steps * BATCH / dt:.1f}")


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


# What the PyTorch side never inherits: the hosts' environment pins the AVX2
# kernels (OPENBLAS_CORETYPE=Haswell, and an L2 size for them); the peer runs
# on the kernels OpenBLAS picks for this CPU itself.
PEER_UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def clean_env():
    """This process's environment without PEER_UNSET."""
    return {k: v for k, v in os.environ.items() if k not in PEER_UNSET}


def openblas_core(extra_env=None):
    """The kernel set OpenBLAS picks here (its OPENBLAS_VERBOSE=2 line), or '?'."""
    env = dict(clean_env(), OPENBLAS_VERBOSE="2", OPENBLAS_NUM_THREADS="1", **(extra_env or {}))
    out = subprocess.run([sys.executable, "-c", "import torch; torch.ones(2, 2) @ torch.ones(2, 2)"],
                         env=env, capture_output=True, text=True)
    for line in (out.stdout + out.stderr).splitlines():
        if line.startswith("Core: "):
            return line.split(":", 1)[1].strip()
    return "?"


def cpu_model():
    """The CPU's model name from /proc/cpuinfo ("?" when it gives none)."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def peer_openblas_env():
    """OPENBLAS_CORETYPE for the peer, so that it runs at its best.

    An OpenBLAS older than the CPU does not know its model number and falls
    back to its oldest x86-64 kernels (Prescott: SSE3): Debian 12's 0.3.21 on
    a Xeon of model 207 ran PyTorch's GEMMs at a quarter of their speed. Then
    the kernels for the vector extensions the CPU has are asked for by name,
    as OpenBLAS documents. The caller's PEER_UNSET never reach the peer.
    Returns (env, note).
    """
    dropped = ", ".join(f"{k}={os.environ[k]}" for k in PEER_UNSET if k in os.environ)
    dropped = f"; {dropped} not passed on" if dropped else ""
    found = openblas_core()
    flags = cpu_flags()
    if found not in ("Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Sandybridge", "Katmai"):
        return {}, f"OpenBLAS core {found} (its own detection){dropped}"
    want = None
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        want = "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    elif {"avx2", "fma"} <= flags:
        want = "Haswell"
    if want is None:
        return {}, f"OpenBLAS core {found} (its own detection){dropped}"
    got = openblas_core({"OPENBLAS_CORETYPE": want})
    return {"OPENBLAS_CORETYPE": want}, (f"OpenBLAS detected {found}, older kernels than this CPU runs; "
                                         f"OPENBLAS_CORETYPE={want} set (OpenBLAS then runs {got}){dropped}")


PEER_ENV = {}


def run_torch(threads, steps):
    env = dict(clean_env(), OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), **PEER_ENV)
    out = subprocess.run([sys.executable, __file__, "--worker", str(threads), "--steps", str(steps)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def run_lockstep(binary, threads, steps):
    out = subprocess.run([binary, "bench", "--task", "fashion-mnist", "--batch", str(BATCH),
                          "--optimizer", "sgd", "--lr", str(LR), "--momentum", str(MOMENTUM),
                          "--threads", str(threads), "--steps", str(steps), "--reps", "1"],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) > 2 and f[0] == str(threads) and f[1].replace(".", "").isdigit():
            return float(f[1])
    raise RuntimeError("no figure in lockstep bench output:\n" + out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", nargs="?", default="build/lockstep")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        torch_worker(a.worker, a.steps, warmup=20)
        return
    import torch
    threads = [int(t) for t in a.threads.split(",")]
    cpu = cpu_model()
    blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    peer_env, blas_note = peer_openblas_env()
    PEER_ENV.update(peer_env)
    print(f"peer: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    print(f"peer: PyTorch {torch.__version__} (libblas.so.3 -> {blas}), Python {platform.python_version()}; "
          f"lockstep {a.binary}")
    print(f"peer: {blas_note}")
    print(f"peer: MLP 784-256-256-10, batch {BATCH}, SGD lr {LR} momentum {MOMENTUM}, Fashion-MNIST; "
          f"{a.reps} interleaved repetitions of {a.steps} steps (PyTorch after 20 warm-up steps)")
    ls = {t: [] for t in threads}
    pt = {t: [] for t in threads}
    ratio = {t: [] for t in threads}
    for rep in range(a.reps):
        for t in threads:
            p = run_torch(t, a.steps)
            l = run_lockstep(a.binary, t, a.steps)
            pt[t].append(p)
            ls[t].append(l)
            ratio[t].append(l / p)
        if sys.stderr.isatty():
            print(f"\rrepetition {rep + 1}/{a.reps}", end="", file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    row("threads", "lockstep samples/s", "PyTorch samples/s", "lockstep / PyTorch")
    for t in threads:
        row(t, spread(ls[t]), spread(pt[t]), spread(ratio[t], "%.2f"))
    if 1 in threads:
        for t in threads:
            if t != 1:
                print(f"peer: speedup at {t} threads over 1 (median of repetitions): lockstep "
                      f"{median([x / y for x, y in zip(ls[t], ls[1])]):.2f}, PyTorch "
                      f"{median([x / y for x, y in zip(pt[t], pt[1])]):.2f}")

if __name__ == "__main__":
    main()
