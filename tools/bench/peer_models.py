#!/usr/bin/python3
"""peer_models.py — `make bench-peer`: the declared models (cnn and gpt)
against PyTorch and against the pair, side by side.

For each model of MODELS, each repetition runs, order alternating between
repetitions: PyTorch and lockstep at 1 thread, PyTorch and lockstep at 2
threads, and the pair (two independent 1-thread lockstep processes at once,
the most the host's two cores give at that moment). Every run is its own
process: it loads the data, builds the model, takes a few warm-up steps,
then waits at a barrier (so the pair's two halves start their timed steps
together) and times STEPS training steps: samples/s = STEPS x batch / wall
time of those steps. Per repetition it takes three ratios side by side:
lockstep / PyTorch at 1 thread, at 2 threads, and lockstep at 2 threads /
the pair; it prints their medians and spreads [min..max] (stats.py), with
the samples/s behind them.

The PyTorch side runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed
from its environment (whatever the caller set; peer.py's PEER_UNSET: the
hosts pin the AVX2 kernels), OPENBLAS_NUM_THREADS, OMP_NUM_THREADS = T and
torch.set_num_threads(T). Only where OpenBLAS's own detection falls back to
pre-AVX kernels (an OpenBLAS older than the CPU) does it ask for the CPU's
kernels by name, as peer.py does, and say so. It prints the kernels
OpenBLAS chose (openblas_get_corename of the library the process loaded)
and oneDNN's ISA (PyTorch's convolutions run in oneDNN, its dense layers in
OpenBLAS), checks a matmul against float64 before timing, and checks that
its loss is finite and falls. The lockstep side is the engine through the
Python binding (build/python, `make python`): the same steps `lockstep
train` takes, with no evaluation at the end.

    /usr/bin/python3 tools/bench/peer_models.py [build/lockstep] [--models cnn,gpt]
        [--reps 5] [--steps 30] [--warmup 5]

Each model is one entry of MODELS below: the lockstep config it opens
(everything else the model's defaults) and the function that builds the
same model, data and optimiser in PyTorch from lockstep's config text. The
gpt's entry is there: it runs once its PyTorch twin, gpt_torch.py (branch
`gpt`), is in this folder, and says it is left out until then.

Not part of `make test`: it needs python3-torch (the Makefile's bench-peer
target installs it).
"""
import argparse
import ctypes
import gzip
import json
import math
import os
import platform
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ beside the scripts
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from peer import PEER_UNSET, clean_env, cpu_model, peer_openblas_env
from stats import median, row, spread

DATA_DIR = os.environ.get("LOCKSTEP_DATA_DIR") or "/usr/share/datasets/fashion-mnist"
PEER_ENV = {}   # OPENBLAS_CORETYPE by name only where OpenBLAS does not know this CPU (peer.py)


# ---------------------------------------------------------------- the models
#
# A model is one entry of MODELS:
#   what      one line naming the model and its data
#   lockstep  the config for lockstep.open (task, model, keys); everything
#             else is the model's default: its config text (batch, lr,
#             schedule, layers, ...) is what the PyTorch side mirrors
#   torch     "module:function" (a module in this folder): function(torch,
#             cfg, total_steps), cfg the lockstep config as a dict of
#             strings (with the data sources of `lockstep`), returns step(i) -> the loss tensor of training step
#             i (forward, backward and optimiser update on the i-th batch of
#             cfg["batch"] samples), with the model, data and optimiser set
#             up before it returns; it raises ValueError when cfg is not the
#             model it builds (a changed declaration must not be timed
#             against an old twin)
#   needs     files in this folder the entry needs (else it is left out,
#             and saying so)

FORTUNE = "/usr/share/games/fortunes/cookie"


def num(cfg, key):
    """A number of the config text (floats are written in hex)."""
    v = cfg[key]
    return float.fromhex(v) if "0x" in v else float(v)


def cosine_lr(cfg, t):
    """lockstep's cosine schedule at step t (its warmup, peak, floor)."""
    lr, lo, w, d = num(cfg, "lr"), num(cfg, "lr_min"), int(cfg["warmup"]), int(cfg["decay_steps"])
    if t <= w:
        return lr * t / w if w > 0 else lr
    if t >= d:
        return lo
    return lo + (lr - lo) * 0.5 * (1.0 + math.cos(math.pi * (t - w) / (d - w)))


def adamw(torch, cfg, params):
    if cfg["optimizer"] != "adamw" or cfg["lr_schedule"] != "cosine":
        raise ValueError(f"optimizer {cfg['optimizer']}, lr_schedule {cfg['lr_schedule']}: "
                         f"the twins run AdamW on the cosine schedule")
    return torch.optim.AdamW(params, lr=cosine_lr(cfg, 1), betas=(num(cfg, "beta1"), num(cfg, "beta2")),
                             eps=num(cfg, "eps"), weight_decay=num(cfg, "weight_decay"))


def cnn_torch(torch, cfg, total_steps):
    """The cnn in PyTorch (NCHW): model_seq.c's CNN_LAYERS, same padding."""
    import numpy as np
    want = "conv3x3:32,relu,maxpool2,conv3x3:64,relu,maxpool2,dense:128,relu,dense:10"
    if cfg["layers"] != want or cfg["image"] != "28,28,1":
        raise ValueError(f"layers {cfg['layers']}, image {cfg['image']}: the twin builds {want} on 28,28,1")
    with gzip.open(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz"), "rb") as f:
        x = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(DATA_DIR, "train-labels-idx1-ubyte.gz"), "rb") as f:
        y = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    xs = torch.from_numpy(x.astype(np.float32) / np.float32(255.0))
    ys = torch.from_numpy(y.astype(np.int64))
    torch.manual_seed(1)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = adamw(torch, cfg, model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(1)
    # The batches' sample ids are drawn up front, like lockstep's data order.
    ids = torch.randint(0, xs.shape[0], (total_steps, int(cfg["batch"])), generator=gen)

    def step(i):
        for g in opt.param_groups:
            g["lr"] = cosine_lr(cfg, i + 1)
        xb, yb = xs[ids[i]], ys[ids[i]]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss
    return step


def gpt_torch(torch, cfg, total_steps):
    """The gpt in PyTorch: the model of gpt_torch.py (branch `gpt`, its
    PyTorch twin) with the widths, heads, blocks and hidden size read from
    lockstep's declaration, and the text task's context, batch and schedule."""
    import re
    import numpy as np
    import gpt_torch as g
    m = re.fullmatch(r"embed:(\d+),posembed,(\d+)x\[res\(layernorm,attn:(\d+)\),"
                     r"res\(layernorm,dense:(\d+),gelu,dense:(\d+)\)\],layernorm,dense:256", cfg["layers"])
    if not m or m.group(1) != m.group(5):
        raise ValueError(f"layers {cfg['layers']}: not the pre-norm decoder gpt_torch.py builds")
    width, blocks, heads, hidden = int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4))
    T, B = int(cfg["context"]), int(cfg["batch"])
    raw = np.frombuffer(open(cfg["file"], "rb").read(), dtype=np.uint8)
    xtr, ytr = g.windows(raw[:len(raw) - len(raw) // 10], T, 1)   # the text task's split
    torch.manual_seed(1)
    model = g.GPT(T, width, heads, blocks, hidden)
    opt = adamw(torch, cfg, model.parameters())
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, xtr.shape[0], (total_steps, B), generator=gen)

    def step(i):
        for grp in opt.param_groups:
            grp["lr"] = cosine_lr(cfg, i + 1)
        z = model(xtr[ids[i]])
        loss = torch.nn.functional.cross_entropy(z.reshape(-1, 256), ytr[ids[i]].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    return step


MODELS = {
    "cnn": {
        "what": "Fashion-MNIST",
        "lockstep": {"task": "fashion-mnist", "model": "cnn"},
        "torch": "peer_models:cnn_torch",
        "needs": (),
    },
    # ==== gpt: the one entry (its model from branch `gpt`) =================
    # Left out, saying so, until gpt_torch.py (the PyTorch twin, written on
    # branch `gpt`) is in this folder; gpt_torch() above builds from it.
    "gpt": {
        "what": "the text task on " + FORTUNE,
        "lockstep": {"task": "text", "model": "gpt", "file": FORTUNE},
        "torch": "peer_models:gpt_torch",
        "needs": ("gpt_torch.py",),
    },
    # ======================================================================
}


# ---------------------------------------------------------------- workers

def barrier():
    """Tell the parent this process is ready, wait for its go."""
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        sys.exit(1)


def openblas_info():
    """(corename, config) of the OpenBLAS this process loaded, or '?'s."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "openblas" in os.path.basename(path) and ".so" in path:
                libs.add(path)
    for path in sorted(libs):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode(), lib.openblas_get_config().decode()
        except (OSError, AttributeError):
            continue
    return "?", "?"


def check_matmul(torch):
    """PyTorch's float32 matmul against float64 (an error bound of float32
    accumulation); fails the bench when it is off."""
    import numpy as np
    rng = np.random.default_rng(1)
    a = rng.standard_normal((192, 300)).astype(np.float32)
    b = rng.standard_normal((300, 160)).astype(np.float32)
    got = (torch.from_numpy(a) @ torch.from_numpy(b)).numpy().astype(np.float64)
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = 300 * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    err = np.abs(got - want)
    if not np.all(err <= bound):
        raise SystemExit("peer_models: PyTorch's matmul is off against float64 (max error %g)" % err.max())
    return float((err / np.maximum(bound, 1e-300)).max())


def torch_worker(model, cfg, threads, steps, warmup):
    import torch
    torch.set_num_threads(threads)
    entry = MODELS[model]
    check = check_matmul(torch)
    core, config = openblas_info()   # the library the matmul loaded
    modname, fn = entry["torch"].split(":")
    try:
        step = getattr(__import__(modname), fn)(torch, cfg, warmup + steps)
    except ValueError as e:
        raise SystemExit(f"peer_models: {model}: {e}")
    first = float(step(0))
    for i in range(1, warmup):
        step(i)
    barrier()
    t0 = time.perf_counter()
    for i in range(warmup, warmup + steps):
        loss = step(i)
    last = float(loss)   # waits for the step (nothing is lazy on the CPU, but be sure)
    dt = time.perf_counter() - t0
    if not (math.isfinite(first) and math.isfinite(last) and last < first):
        raise SystemExit(f"peer_models: PyTorch's {model} loss did not fall: {first} -> {last}")
    print(json.dumps({"sps": steps * int(cfg["batch"]) / dt, "first": first, "last": last,
                      "core": core, "config": config, "matmul": check, "threads": torch.get_num_threads()}))


def open_lockstep(binary, model, threads):
    """A lockstep session of the model (not recorded) and its config as a dict."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(binary)), "python"))
    import lockstep
    s = lockstep.open(MODELS[model]["lockstep"], threads=threads)
    return s, dict(line.split("=", 1) for line in s.config_text.splitlines() if "=" in line)


def lockstep_worker(binary, model, threads, steps, warmup):
    s, cfg = open_lockstep(binary, model, threads)
    first = s.step()
    for _ in range(1, warmup):
        s.step()
    barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        last = s.step()
    dt = time.perf_counter() - t0
    s.close()
    if not (math.isfinite(first) and math.isfinite(last)):
        raise SystemExit(f"peer_models: lockstep's {model} loss is not finite: {first} -> {last}")
    print(json.dumps({"sps": steps * int(cfg["batch"]) / dt, "first": first, "last": last}))


# ---------------------------------------------------------------- the parent

def peer_env(threads):
    env = dict(clean_env(), **PEER_ENV)
    env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def run_together(cmds):
    """Start every (argv, env), let them set up, release them at once; their
    results (dicts) in order. A failure stops the bench with its stderr."""
    procs = [subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for argv, env in cmds]
    for p in procs:
        line = p.stdout.readline()
        if line.strip() != "ready":
            err = p.communicate()[1]
            raise SystemExit(f"peer_models: {' '.join(p.args[2:])} failed:\n{line}{err}")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    out = []
    for p in procs:
        stdout, stderr = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"peer_models: {' '.join(p.args[2:])} failed:\n{stderr}")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def oneDNN_isa(threads):
    """oneDNN's ISA line and the convolution kernel it takes here (its verbose
    mode, in a process of its own: nothing timed runs verbose)."""
    code = ("import torch; torch.set_num_threads(1); c = torch.nn.Conv2d(1, 8, 3, padding=1); "
            "c(torch.rand(8, 1, 28, 28)).sum().backward()")
    env = dict(peer_env(threads), ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout
    isa, conv = "?", "?"
    for line in out.splitlines():
        f = line.split(",")
        if "isa:" in line:
            isa = line.split("isa:", 1)[1].strip()
        elif len(f) > 5 and f[1] == "exec" and f[3] == "convolution":
            conv = f[4]
    return isa, conv


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", nargs="?", default="build/lockstep")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated entries of MODELS (default: all, each one whose files are here)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--worker", nargs=3, metavar=("SIDE", "MODEL", "THREADS"), help=argparse.SUPPRESS)
    ap.add_argument("--cfg", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.warmup < 1 or a.steps < 1 or a.reps < 1:
        ap.error("--reps, --steps and --warmup are at least 1")
    if a.worker:
        side, model, threads = a.worker[0], a.worker[1], int(a.worker[2])
        if side == "torch":
            torch_worker(model, json.loads(a.cfg), threads, a.steps, a.warmup)
        else:
            lockstep_worker(a.binary, model, threads, a.steps, a.warmup)
        return
    models = [m for m in a.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            ap.error(f"--models: {m} is not one of {', '.join(MODELS)}")
    missing = {m: [f for f in MODELS[m]["needs"] if not os.path.exists(os.path.join(HERE, f))] for m in models}
    if not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(a.binary)), "python", "lockstep")):
        sys.exit(f"peer_models: no Python binding beside {a.binary} (make python)")
    cpu = cpu_model()
    import torch
    env, blas_note = peer_openblas_env()
    PEER_ENV.update(env)
    isa, conv = oneDNN_isa(1)
    print(f"peer_models: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at start, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"peer_models: PyTorch {torch.__version__}, Python {platform.python_version()}; "
          f"lockstep {a.binary} (Python binding), simd {os.environ.get('LOCKSTEP_SIMD', 'default')}")
    print(f"peer_models: PyTorch's environment without {' and '.join(PEER_UNSET)}: {blas_note}; "
          f"oneDNN ISA {isa}, its convolutions {conv}")

    def worker(side, model, threads):
        argv = [sys.executable, __file__, a.binary, "--worker", side, model, str(threads),
                "--steps", str(a.steps), "--warmup", str(a.warmup), "--cfg", json.dumps(cfg)]
        return argv, (peer_env(threads) if side == "torch" else dict(os.environ))

    for model in models:
        entry = MODELS[model]
        if missing[model]:
            print(f"peer_models: {model} left out: no {', '.join(missing[model])} in {HERE}")
            continue
        s, cfg = open_lockstep(a.binary, model, 1)
        s.close()
        cfg = dict({k: str(v) for k, v in entry["lockstep"].items()}, **cfg)   # with its data sources
        print(f"peer_models: {model} ({cfg['layers']}) on {entry['what']}: batch {cfg['batch']}, "
              f"{cfg['optimizer']} lr {num(cfg, 'lr'):g}, {cfg['lr_schedule']} (warmup {cfg['warmup']}, "
              f"to {num(cfg, 'lr_min'):g} at step {cfg['decay_steps']}): lockstep's defaults, PyTorch the same; "
              f"{a.reps} repetitions of {a.steps} timed steps after {a.warmup} warm-up steps, each run its own "
              f"process, order alternating")
        fig = {k: [] for k in ("pt1", "ls1", "pt2", "ls2", "pair", "r1", "r2", "rpair", "pairx")}
        cores = set()
        for rep in range(a.reps):
            runs = [("torch", 1), ("lockstep", 1), ("torch", 2), ("lockstep", 2)]
            if rep % 2:
                runs = [(s, t) for t in (2, 1) for s in ("lockstep", "torch")]
            got = {}
            for side, t in runs:
                r = run_together([worker(side, model, t)])[0]
                got[(side, t)] = r["sps"]
                if side == "torch":
                    cores.add(f"{r['core']} ({r['config']})")
            pa, pb = run_together([worker("lockstep", model, 1), worker("lockstep", model, 1)])
            pair = pa["sps"] + pb["sps"]
            for k, v in (("pt1", got[("torch", 1)]), ("ls1", got[("lockstep", 1)]),
                         ("pt2", got[("torch", 2)]), ("ls2", got[("lockstep", 2)]), ("pair", pair),
                         ("r1", got[("lockstep", 1)] / got[("torch", 1)]),
                         ("r2", got[("lockstep", 2)] / got[("torch", 2)]),
                         ("rpair", got[("lockstep", 2)] / pair), ("pairx", pair / got[("lockstep", 1)])):
                fig[k].append(v)
            print(f"peer_models: {model} repetition {rep + 1}/{a.reps}: samples/s lockstep {fig['ls1'][-1]:.0f} "
                  f"and {fig['ls2'][-1]:.0f}, PyTorch {fig['pt1'][-1]:.0f} and {fig['pt2'][-1]:.0f} (1 and 2 "
                  f"threads), the pair {pair:.0f}; load average {os.getloadavg()[0]:.2f}", flush=True)
        print(f"peer_models: OpenBLAS core {' / '.join(sorted(cores))}; PyTorch's matmul checked against "
              f"float64 and its loss fell in every run; load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
        row("model", "threads", "lockstep samples/s", "PyTorch samples/s", "lockstep / PyTorch",
            "the pair samples/s", "lockstep / pair")
        row(model, 1, spread(fig["ls1"]), spread(fig["pt1"]), spread(fig["r1"], "%.2f"), "", "")
        row(model, 2, spread(fig["ls2"]), spread(fig["pt2"]), spread(fig["r2"], "%.2f"),
            spread(fig["pair"]), spread(fig["rpair"], "%.2f"))
        print(f"peer_models: the pair is {median(fig['pairx']):.2f} x one lockstep process alone "
              f"(median of repetitions; 2.0 on an idle host)")


if __name__ == "__main__":
    main()
