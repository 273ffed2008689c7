#!/bin/sh
# bench.sh — `make bench`: throughput of the MLP on Fashion-MNIST
# (784-256-256-10, batch 128) per thread count, the speedup, the cost of the
# canonical tree against unordered reduction (same leaf kernel, same leaf
# size), and the cost of the record. Medians of REPS repetitions; tree and
# unordered alternate inside each repetition so both see the same noise.
set -e
BIN=${1:-build/lockstep}
cores=$(nproc)
[ "$cores" -gt 1 ] || cores=2
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(date -u +%Y-%m-%d)"
for leaf in 64 32; do
    echo
    "$BIN" bench --task fashion-mnist --batch 128 --leaf $leaf --threads "1,$cores" \
        --steps "${STEPS:-200}" --reps "${REPS:-7}"
done
echo; sh "$(dirname "$0")/bench_dense.sh" "$BIN"   # the MLP against the core's FP32 peak

# Threads beyond cores, with and without a busy core (tools/bench_pool.sh).
echo
sh tools/bench_pool.sh "$BIN"

# The logic cellular automaton: step times, the whole gol training, the goals
# (tools/bench_ca.sh).
echo
sh tools/bench_ca.sh "$BIN"

# The message-passing network on the graph tasks (tools/bench_gnn.sh).
echo
"$(dirname "$0")/bench_gnn.sh" "$BIN"

# A whole Game of Life training (the notebook's 3000 steps), then its exported
# hard circuit compiled with cc -O2 and run bit-parallel (64 cells per word).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo
"$BIN" train --task gol --threads "$cores" --db "$tmp/bench.db" --name gol --no-progress
"$BIN" export gol --db "$tmp/bench.db" --circuit -o "$tmp/gol.c" --no-progress
${CC:-cc} -O2 -DLOCKSTEP_CIRCUIT_MAIN "$tmp/gol.c" -o "$tmp/gol"
"$tmp/gol"

# One run over 1-4 MPI ranks: step time and bytes per rank (tools/bench_mpi.sh; skipped without Open MPI).
echo; sh "$(dirname "$0")/bench_mpi.sh" "$BIN"
# Exact graph operations (cliques of WormNet, graph edit distance): tools/bench_graph.sh.
echo
sh "$(dirname "$0")/bench_graph.sh" "$BIN"
# Many runs in one process: lockstep sweep against the same runs one after another.
echo
sh "$(dirname "$0")/bench_sweep.sh" "$BIN"
echo; bash "$(dirname "$0")/bench_audit.sh" "$BIN"   # the audit against training (tools/bench_audit.sh)
