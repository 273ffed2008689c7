#!/bin/sh
# atoms.sh — what the atoms cost (docs/contract.md, "Atoms"): a training
# step of this binary against the kernels before atoms, side by side. The
# binary of commit PREV (the last one whose sums over samples ran in
# sequence inside a leaf) is built into a temporary worktree; then, in each
# repetition, the same training runs on both binaries one after the other
# (the order alternating), at 1 and at 2 threads, for the MLP (784-256-256-10,
# batch 128, its default leaf 64) and the logic network (its default, leaf 32
# before, one atom a leaf now) on Fashion-MNIST. The figure is the engine's
# own samples/s of each run; the ratio is this binary's step time over the
# previous one's (below 1: faster). Goal: at most 1.10.
#   sh tools/bench/atoms.sh [build/lockstep]     REPS=7 STEPS=150 PREV=f5d69f6
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
REPS=${REPS:-7}
STEPS=${STEPS:-150}
PREV=${PREV:-f5d69f6}
ROOT=$(cd "$BENCH_LIB/../.." && pwd)
tmp=$(mktemp -d)
trap 'git -C "$ROOT" worktree remove --force "$tmp/prev" >/dev/null 2>&1; rm -rf "$tmp"' EXIT

if ! git -C "$ROOT" cat-file -e "$PREV^{commit}" 2>/dev/null; then
    echo "atoms: commit $PREV is not in this clone's history (a shallow clone?): nothing to compare" >&2
    exit 2
fi
echo "atoms: building the kernels before atoms ($PREV) ..."
git -C "$ROOT" worktree add --detach "$tmp/prev" "$PREV" >/dev/null 2>&1
make -C "$tmp/prev" -j"$(bench_cores)" --no-print-directory BUILD=build build/lockstep >/dev/null
OLD=$tmp/prev/build/lockstep

bench_machine atoms
# samples/s of one training run: the train line's figure.
sps() {
    "$@" --db "$tmp/r.db" --no-progress | sed -n 's/.* \([0-9][0-9]*\) samples\/s,.*/\1/p'
    rm -f "$tmp/r.db" "$tmp/r.db-wal" "$tmp/r.db-shm"
}
for model in mlp logic; do
    for th in 1 2; do
        : >"$tmp/ratios"
        r=0
        while [ "$r" -lt "$REPS" ]; do
            set -- train --task fashion-mnist --model "$model" --steps "$STEPS" --threads "$th"
            if [ $((r % 2)) -eq 0 ]; then
                new=$(sps "$BIN" "$@"); old=$(sps "$OLD" "$@")
            else
                old=$(sps "$OLD" "$@"); new=$(sps "$BIN" "$@")
            fi
            bench_ratio "$old" "$new" >>"$tmp/ratios"   # step time new / old = sps old / sps new
            r=$((r + 1))
        done
        echo "atoms: $model at $th thread(s): step time against the kernels before atoms" \
            "$(bench_spread <"$tmp/ratios") (median [min..max] of $REPS)"
    done
done
