#!/usr/bin/python3
"""perf_layers.py — where a declared model's training step spends its time,
by layer kind and kernel, from perf's call stacks.

The engine's own clocks (`lockstep bench`'s parts rows) put nearly all of a
cnn step in "leaves"; this splits the leaves. It trains the model through
the Python binding of a build with frame pointers, under `perf record
--call-graph fp`, and attributes every sample taken inside a training step
(a stack through trainer_step: loading the data and Python are left out) to
the innermost layer function on its stack (nn_conv_forward,
nn_conv_backward, nn_conv_pool_*, nn_dense_*, ...) and, inside it, to the
kernel (the dense kernels' GEMMs, the weight gradient's, im2col, the
layer's own loops); samples outside any layer go to the ReLUs, the update,
the tree's adds, the hash or "rest". Prints TSV: part, kernel, % of the
step's samples.

    make BUILD=build-fp OPT="-O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls" \\
         build-fp/lockstep python
    /usr/bin/python3 tools/bench/perf_layers.py build-fp [--model cnn] [--threads 1] [--steps 150]
        [--task T --set KEY=VALUE ...]

Without frame pointers and with sibling calls (the normal build) a layer
that ends in a call to a kernel drops out of the stack, and its kernel's
time lands on the caller: use the build above. Needs perf (linux-perf).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

KERNELS = (("dense_backward_weights", "GEMM, weight gradient"), ("dense_forward", "GEMM"),
           ("dense_transpose", "transpose"), ("im2col", "im2col"), ("__mem", "memset, memcpy"))
OUTSIDE = ((r"relu_", "ReLU"), (r"adamw|update_|optim_", "update (AdamW)"), (r"(?i)xxh|hash", "hash"),
           (r"tree_add", "tree adds"))


def stacks(text):
    """Each sample's frames, innermost first, offsets dropped."""
    cur = None
    for line in text.splitlines():
        if not line.strip():
            if cur:
                yield cur
            cur = None
        elif line[0] not in " \t":
            cur = []   # a header line (when perf script prints comm, tid, ...)
        else:
            cur = [] if cur is None else cur
            f = line.split(None, 1)
            cur.append(re.sub(r"\+0x[0-9a-f]+$", "", f[1].strip()) if len(f) > 1 else "?")
    if cur:
        yield cur


def attribute(text):
    parts = collections.Counter()
    total = 0
    for fr in stacks(text):
        if not any(f.startswith("trainer_step") for f in fr):
            continue
        total += 1
        layer = next((f for f in fr if f.startswith("nn_")), None)
        if layer is not None:
            kernel = next((name for key, name in KERNELS if any(f.startswith(key) for f in fr)), "own loops")
            parts[(layer, kernel)] += 1
            continue
        where = next((name for pat, name in OUTSIDE if any(re.search(pat, f) for f in fr)), "rest")
        parts[(where, "")] += 1
    return parts, total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="a build folder with frame pointers, its Python binding made")
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--task", default="fashion-mnist")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config key or data source, e.g. file=/usr/share/games/fortunes/cookie")
    a = ap.parse_args()
    extra = dict(kv.split("=", 1) for kv in a.set if "=" in kv)
    py = os.path.join(os.path.abspath(a.build), "python")
    if not os.path.isdir(os.path.join(py, "lockstep")):
        sys.exit(f"perf_layers: no Python binding in {py} (make BUILD={a.build} ... python)")
    drive = ("import sys; sys.path.insert(0, %r); import lockstep\n"
             "s = lockstep.open(dict(%r, task=%r, model=%r), threads=%d)\n"
             "for _ in range(%d): s.step()\n"
             "s.close()\n") % (py, extra, a.task, a.model, a.threads, a.steps)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-o", data, "--call-graph", "fp", "-F", "1000",
                        sys.executable, "-c", drive], check=True, stdout=subprocess.DEVNULL)
        text = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], check=True,
                              capture_output=True, text=True).stdout
    parts, total = attribute(text)
    if total == 0:
        sys.exit("perf_layers: no samples inside trainer_step (a build without symbols?)")
    by_part = collections.Counter()
    for (part, _), n in parts.items():
        by_part[part] += n
    print("part\tkernel\t% of step")
    for part, n in by_part.most_common():
        if 1000 * n < total:
            continue
        print(f"{part}\t\t{100 * n / total:.1f}")
        for (p, kernel), m in sorted(parts.items(), key=lambda kv: -kv[1]):
            if p == part and kernel and 1000 * m >= total:   # from 0.1%
                print(f"\t{kernel}\t{100 * m / total:.1f}")
    print(f"perf_layers: {a.model} on {a.task}, {a.threads} thread(s), {a.steps} steps; "
          f"{total} samples inside trainer_step")


if __name__ == "__main__":
    main()
