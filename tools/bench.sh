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
