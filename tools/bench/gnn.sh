#!/bin/sh
# gnn.sh — GNN training throughput (model gnn, GIN-style message passing;
# part of `make bench`) at 1 thread and at every core, with the speedup, for
# the three graph tasks: atlas (graph classification, 32 graphs a step),
# graph-edit (a class per node, 32 graphs a step) and karate (node
# classification on one 34-node graph, 17 nodes a step). Medians of REPS
# repetitions (`lockstep bench`). Needs Debian's python3-networkx (the
# Graph Atlas).
#   sh tools/bench/gnn.sh [build/lockstep]     REPS=5 STEPS=300
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
cores=$(bench_cores)
bench_machine gnn
for task in atlas graph-edit karate; do
    echo
    "$BIN" bench --task "$task" --threads "1,$cores" --steps "${STEPS:-300}" --reps "${REPS:-5}"
done
