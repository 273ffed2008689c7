#!/usr/bin/python3
"""peer_graph.py — lockstep's graph operations side by side with
networkx (Debian's python3-networkx) on the same inputs: k-clique counts
(networkx.enumerate_all_cliques, filtered by size, stopped past k) and graph
edit distance (networkx.graph_edit_distance, which needs scipy). Each row
gives both answers, which must agree, and both times (wall, one thread for
networkx; lockstep at the thread count given), as TSV rows (stats.py).
For `make bench-peer`.

usage: tools/bench/peer_graph.py [BIN] [--threads N] [--budget SECONDS]
"""
import argparse
import os
import subprocess
import sys
import time

import networkx as nx

sys.dont_write_bytecode = True   # no __pycache__ beside the scripts
from stats import row

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORMNET = "/usr/share/doc/networkx-2.8.8/examples/algorithms/WormNet.v3.benchmark.txt"
ATLAS = "/usr/lib/python3/dist-packages/networkx/generators/atlas.dat.gz"


def lockstep(bin_, args):
    t0 = time.monotonic()
    out = subprocess.run([bin_] + args, check=True, capture_output=True, text=True).stdout
    return out, time.monotonic() - t0


def nx_count(g, k, budget):
    """k-cliques by networkx.enumerate_all_cliques (cliques come by size:
    stop at the first larger one), or None past the time budget."""
    t0 = time.monotonic()
    n = 0
    for c in nx.enumerate_all_cliques(g):
        if len(c) > k:
            break
        if len(c) == k:
            n += 1
        if time.monotonic() - t0 > budget:
            return None, time.monotonic() - t0
    return n, time.monotonic() - t0


def read_edgelist(path):
    g = nx.Graph()
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].split()
            if len(line) >= 2 and line[0] != line[1]:
                g.add_edge(line[0], line[1])
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin", nargs="?", default=os.path.join(ROOT, "build", "lockstep"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds networkx may take per row")
    a = ap.parse_args()
    print(f"graph peer: networkx {nx.__version__} (one thread) vs lockstep ({a.threads} threads); wall seconds")
    row("graph", "k", "lockstep count", "networkx count", "lockstep s", "networkx s")
    rows = [("karate", os.path.join(ROOT, "data/graphs/karate.edgelist"), range(3, 7)),
            ("lesmis", os.path.join(ROOT, "data/graphs/lesmis.edgelist"), range(3, 11)),
            ("WormNet", WORMNET, range(3, 5))]
    bad = 0
    for name, path, ks in rows:
        if not os.path.exists(path):
            print(f"{name}: {path} missing (python3-networkx): skipped")
            continue
        g = read_edgelist(path)
        for k in ks:
            out, t_ls = lockstep(a.bin, ["graph", "cliques", path, "-k", str(k), "--count",
                                         "--threads", str(a.threads)])
            n_ls = int(out)
            n_nx, t_nx = nx_count(g, k, a.budget)
            shown = str(n_nx) if n_nx is not None else f"> {a.budget:.0f} s"
            if n_nx is not None and n_nx != n_ls:
                bad += 1
                shown += " DIFFERS"
            row(name, k, n_ls, shown, f"{t_ls:.3f}", f"{t_nx:.3f}")
    # Graph edit distance on Atlas pairs of 7 nodes.
    try:
        import scipy  # noqa: F401  (networkx's graph_edit_distance needs it)
    except ImportError:
        print("graph_edit_distance: networkx needs scipy (Debian python3-scipy): skipped")
        return 1 if bad else 0
    pairs = [(209 + (i * 37) % 1044, 209 + (i * 91 + 5) % 1044) for i in range(20)]
    with open("/tmp/lockstep-peer-pairs.txt", "w") as f:
        for x, y in pairs:
            f.write(f"{ATLAS}:{x} {ATLAS}:{y}\n")
    out, t_ls = lockstep(a.bin, ["graph", "ged", "--pairs", "/tmp/lockstep-peer-pairs.txt",
                                 "--threads", str(a.threads)])
    exact = [int(line.split()[3]) for line in out.splitlines()]
    t0 = time.monotonic()
    ref = [int(nx.graph_edit_distance(nx.graph_atlas(x), nx.graph_atlas(y))) for x, y in pairs]
    t_nx = time.monotonic() - t0
    agree = sum(e == r for e, r in zip(exact, ref))
    bad += len(pairs) - agree
    print(f"graph_edit_distance: {len(pairs)} Atlas 7-node pairs, {agree} agree; "
          f"lockstep {t_ls:.3f} s, networkx {t_nx:.3f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
