#!/bin/sh
# mpi.sh — the MPI part of `make bench`: one run over R = 1..4 ranks
# (build/lockstep-mpi, tools/mpi_main.c) of the MLP on Fashion-MNIST
# (784-256-256-10, batch 128, leaf 16: 8 leaves), one thread per rank.
# For each R: the step time (rank 0's wall time over the training steps,
# the combine included; median and range of REPS repetitions, the rank
# counts interleaved inside each repetition so all see the same noise),
# the bytes each rank sends per step (largest and mean over the ranks) and
# what a ring allreduce of the same buffer sends, 2(R−1)/R·N floats. The
# trajectory hash is checked equal at every R. Skipped when mpirun is
# missing.
#   sh tools/bench/mpi.sh [build/lockstep]     REPS=5 STEPS=100
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
BUILD_DIR=$(dirname "$BIN")
MPI=$BUILD_DIR/lockstep-mpi
REPS=${REPS:-5}
STEPS=${STEPS:-100}
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
    echo "mpi: skipped (no mpirun/mpicc; make deps installs Open MPI)"
    exit 0
fi
make --no-print-directory BUILD="$BUILD_DIR" mpi >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
FLAGS="--task fashion-mnist --batch 128 --leaf 16 --steps $STEPS --threads 1"
bench_machine mpi
echo "mpi: $STEPS steps of the MLP on Fashion-MNIST, batch 128, leaf 16 (8 leaves), 1 thread per rank; $REPS repetitions"
rep=1
while [ $rep -le "$REPS" ]; do
    for r in 1 2 3 4; do
        # shellcheck disable=SC2086
        mpirun --oversubscribe -np $r "$MPI" train $FLAGS --db "$tmp/b.db" >"$tmp/out" 2>"$tmp/err" ||
            { cat "$tmp/out" "$tmp/err"; exit 1; }
        traj=$(sed -n 's/^train: .* trajectory \([0-9a-f]*\)$/\1/p' "$tmp/out")
        sed -n 's/^mpi: .*(\([0-9.]*\) ms\/step.*max \([0-9]*\) bytes, mean \([0-9]*\); a ring allreduce .*: \([0-9]*\)$/\1 \2 \3 \4/p' \
            "$tmp/out" | sed "s/^/$r $traj /" >>"$tmp/rows"
    done
    rep=$((rep + 1))
done
n_traj=$(cut -d' ' -f2 "$tmp/rows" | sort -u | wc -l)
bench_row ranks "ms/step" "sent max B" "sent mean B" "ring B"
for r in 1 2 3 4; do
    # the byte counts are exact, the same in every repetition
    set -- $(grep "^$r " "$tmp/rows" | head -n1)
    bench_row "$r" "$(grep "^$r " "$tmp/rows" | cut -d' ' -f3 | bench_spread)" "$4" "$5" "$6"
done
if [ "$n_traj" -eq 1 ]; then
    echo "mpi: trajectory $(head -n1 "$tmp/rows" | cut -d' ' -f2) at every rank count"
else
    echo "mpi: TRAJECTORIES DIFFER across rank counts" >&2
    exit 1
fi
