#!/bin/sh
# bench_gnn.sh — GNN training throughput (model gnn, GIN-style message
# passing) at 1 thread and at every core, with the speedup, for the three
# graph tasks: atlas (graph classification, 32 graphs a step), graph-edit
# (a class per node, 32 graphs a step) and karate (node classification on
# one 34-node graph, 17 nodes a step). Medians of REPS repetitions
# (`lockstep bench`). Needs Debian's python3-networkx (the Graph Atlas).
set -e
BIN=${1:-build/lockstep}
cores=$(nproc)
[ "$cores" -gt 1 ] || cores=2
echo "gnn: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(date -u +%Y-%m-%d)"
echo
"$BIN" bench --task atlas --threads "1,$cores" --steps "${STEPS:-300}" --reps "${REPS:-5}"
echo
"$BIN" bench --task graph-edit --threads "1,$cores" --steps "${STEPS:-300}" --reps "${REPS:-5}"
echo
"$BIN" bench --task karate --threads "1,$cores" --steps "${STEPS:-300}" --reps "${REPS:-5}"
