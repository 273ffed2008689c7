#!/bin/sh
# bench.sh — `make bench`: throughput of the MLP on Fashion-MNIST
# (784-256-256-10, batch 128) per thread count, the speedup, the cost of the
# canonical tree against unordered reduction, and the cost of the record.
set -e
BIN=${1:-build/lockstep}
cores=$(nproc)
[ "$cores" -gt 1 ] || cores=2
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(date -u +%Y-%m-%d)"
"$BIN" bench --task fashion-mnist --batch 128 --threads "1,$cores" --steps ${STEPS:-100} --reps ${REPS:-5}
