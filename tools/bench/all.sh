#!/bin/sh
# all.sh — `make bench`: every benchmark in turn. First the MLP on
# Fashion-MNIST (784-256-256-10, batch 128) per thread count, the speedup,
# the cost of the canonical tree against unordered reduction (same leaf
# kernel, same leaf size) and of the record, at leaf 64 and 32 (`lockstep
# bench`: tree and unordered alternate inside each repetition so both see
# the same noise; medians of REPS). Then each script of this folder, and a
# whole Game of Life training with its exported circuit. docs/performance.md
# says how to read each part.
#   sh tools/bench/all.sh [build/lockstep]      REPS=7 STEPS=200
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
cores=$(bench_cores)
bench_machine bench
for leaf in 64 32; do
    echo
    "$BIN" bench --task fashion-mnist --batch 128 --leaf $leaf --threads "1,$cores" \
        --steps "${STEPS:-200}" --reps "${REPS:-7}"
done
# REPS and STEPS, when set, reach every script below (REPS=1 STEPS=5 for a
# quick check that all of them run); unset, each takes its own defaults.
echo; sh "$BENCH_LIB/atoms.sh" "$BIN"   # a step against the kernels before atoms (the atoms' cost)
echo; sh "$BENCH_LIB/dense.sh" "$BIN"   # the MLP against the core's FP32 peak and the pair
echo; sh "$BENCH_LIB/pool.sh" "$BIN"    # threads beyond cores, with and without a busy core
echo; sh "$BENCH_LIB/ca.sh" "$BIN"      # the logic CA: step times, the pair, the gol training
echo; sh "$BENCH_LIB/gnn.sh" "$BIN"     # the message-passing network on the graph tasks
echo; sh "$BENCH_LIB/process.sh" "$BIN" # a whole 1000-step training at 1 and 2 threads against the pair
echo; sh "$BENCH_LIB/update_floor.sh" "$BIN" # AdamW's update against the divider's floor

# A whole Game of Life training (the notebook's 3000 steps), then its exported
# hard circuit compiled with cc -O2 and run bit-parallel (64 cells per word).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo
"$BIN" train --task gol --threads "$cores" --db "$tmp/bench.db" --name gol --no-progress
"$BIN" export gol --db "$tmp/bench.db" --circuit -o "$tmp/gol.c" --no-progress
${CC:-cc} -O2 -DLOCKSTEP_CIRCUIT_MAIN "$tmp/gol.c" -o "$tmp/gol"
"$tmp/gol"

echo; sh "$BENCH_LIB/mpi.sh" "$BIN"     # 1-4 MPI ranks (skipped without Open MPI)
echo; sh "$BENCH_LIB/graph.sh" "$BIN"   # exact graph operations: WormNet cliques, edit distances
echo; sh "$BENCH_LIB/sweep.sh" "$BIN"   # a sweep against the same runs one after another
echo; bash "$BENCH_LIB/audit.sh" "$BIN" # the audit against training
