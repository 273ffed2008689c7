#!/bin/sh
# test_mpi.sh — one run over R MPI processes is the one-thread run, bit for
# bit (tools/mpi_main.c):
#   - the trajectory hash of `mpirun -np R build/lockstep-mpi train` for
#     R = 1, 2, 3, 4 ranks × 1 and 2 threads per rank equals that of
#     `lockstep train --threads 1`, for the MLP on Fashion-MNIST (30 steps,
#     8 leaves: R = 3 gives ranks several pieces), for the checkerboard
#     logic CA (3 steps; its leaves are (sample, part) pairs) and for the
#     cnn (2 steps of 37 images, --no-eval);
#   - the same for gpt on text (ranks 1..4 x threads 1, 2, a batch of 37);
#   - the other leaf models, and a seq with dropout (its masks addressed by
#     stream position), at 3 ranks x 2 threads against one process;
#   - a rank killed with SIGKILL (LOCKSTEP_MPI_KILL_AT) ends the job within
#     30 s with a nonzero status and a message; the run is recorded as
#     interrupted, resumed first by 2 ranks up to step 60 and then by plain
#     `lockstep resume` to step 90, and ends with the uninterrupted run's
#     trajectory; the record names the ranks and hosts, and `show` says
#     them under the process.
# Builds build/lockstep-mpi itself (make mpi). Skipped, with a visible
# message, when mpicc or mpirun is missing (make deps installs Open MPI), and
# in sanitizer builds (Open MPI's own allocations are not ours to check).
# Prints cmocka's "[ RUN ]" / "[ OK ]" / "[ FAILED ]" / "[ SKIPPED ]"
# lines, which tests/run_tests.sh counts.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case $BUILD in
/*) B=$BUILD ;;
*) B=$ROOT/$BUILD ;;
esac
SAN=${LS_TEST_SANITIZE:-}
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
# Open MPI refuses root unless told; the tests run as root in CI containers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Quiet and local: no network interfaces probed, no help aggregation delays.
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1

skip() {
    echo "[ RUN      ] mpi"
    echo "[  SKIPPED ] mpi: $1"
    exit 0
}
command -v mpicc >/dev/null 2>&1 || skip "mpicc not found: install Open MPI (make deps: libopenmpi-dev openmpi-bin)"
command -v mpirun >/dev/null 2>&1 || skip "mpirun not found: install Open MPI (make deps: openmpi-bin)"
[ -z "$SAN" ] || skip "not in sanitizer builds ($SAN)"

T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
log=$T/log
LS=$B/lockstep
MPI=$B/lockstep-mpi

check() {
    t_start=$(date +%s)
    echo "[ RUN      ] $1"
    if "$2" >"$log" 2>&1; then
        echo "[       OK ] $1"
        echo "    ($(($(date +%s) - t_start)) s)" >&2
    else
        echo "[  FAILED  ] $1"
        sed 's/^/    /' "$log"
        exit 1
    fi
}
say() { echo "$*" >&2; }

mk() {
    set -- -C "$ROOT" --no-print-directory BUILD="$BUILD" "$@"
    [ -n "${LS_TEST_CC+x}" ] && set -- "$@" CC="$LS_TEST_CC"
    [ -n "${LS_TEST_OPT+x}" ] && set -- "$@" OPT="$LS_TEST_OPT"
    [ -n "${LS_TEST_CFLAGS+x}" ] && set -- "$@" CFLAGS="$LS_TEST_CFLAGS"
    [ -n "${LS_TEST_LDFLAGS+x}" ] && set -- "$@" LDFLAGS="$LS_TEST_LDFLAGS"
    flock "${LS_MAKE_LOCK:-$T/make.lock}" make "$@"   # tests/run_tests.sh runs programs side by side
}

# The trajectory hash a train/resume result line ends with.
traj() { sed -n 's/^\(train\|resume\): run .* trajectory \([0-9a-f]\{16\}\)$/\2/p' "$1" | tail -n 1; }

MLP="--task fashion-mnist --batch 64 --steps 30"
CA="--task checkerboard --steps 3"

t_build() {
    mk mpi || return 1
    [ -x "$MPI" ] || { say "no $MPI after make mpi"; return 1; }
    # The default build never needs MPI: no other object refers to it.
    if nm "$LS" | grep -q ' U MPI_'; then say "$LS refers to MPI"; return 1; fi
}

# ranks_equal NAME FLAGS [REF_FLAGS RANK_FLAGS]: one thread (with REF_FLAGS),
# then every R x threads (with RANK_FLAGS), same trajectory.
ranks_equal() {
    # shellcheck disable=SC2086
    "$LS" train $2 ${3-} --threads 1 --db "$T/$1-ref.db" --no-progress >"$T/ref.out" || return 1
    want=$(traj "$T/ref.out")
    [ -n "$want" ] || { cat "$T/ref.out"; return 1; }
    echo "one thread: $want"
    for r in 1 2 3 4; do
        for th in 1 2; do
            # shellcheck disable=SC2086
            mpirun --oversubscribe -np $r "$MPI" train $2 ${4-} --threads $th --db "$T/$1-$r-$th.db" \
                >"$T/out" 2>"$T/err" || { cat "$T/out" "$T/err"; return 1; }
            got=$(traj "$T/out")
            echo "$r ranks x $th threads: $got"
            [ "$got" = "$want" ] || { say "differs from one thread"; cat "$T/out" "$T/err"; return 1; }
        done
    done
}
# The leaf is no part of the bits: one process at leaf 64 (4 atoms a leaf)
# against ranks at leaf 16 (one atom a leaf).
t_mlp() { ranks_equal mlp "$MLP" "--leaf 64" "--leaf 16"; }
# The other leaf models at 3 ranks against one process, batches that are
# not multiples of the atom.
ranks3_equal() {
    # shellcheck disable=SC2086
    "$LS" train $2 --leaf 64 --threads 1 --db "$T/$1-ref.db" --no-progress >"$T/ref.out" || return 1
    want=$(traj "$T/ref.out")
    [ -n "$want" ] || { cat "$T/ref.out"; return 1; }
    # shellcheck disable=SC2086
    mpirun --oversubscribe -np 3 "$MPI" train $2 --leaf 16 --threads 2 --db "$T/$1-3.db" >"$T/out" 2>"$T/err" ||
        { cat "$T/out" "$T/err"; return 1; }
    got=$(traj "$T/out")
    echo "$1: one process $want, 3 ranks x 2 threads $got"
    [ "$got" = "$want" ] || { say "differs from one process"; cat "$T/out" "$T/err"; return 1; }
}
t_models() {
    ranks3_equal linear "--task teacher --model linear --batch 50 --steps 6" || return 1
    ranks3_equal logic "--task teacher --model logic --batch 45 --steps 4" || return 1
    ranks3_equal gnn "--task karate --batch 17 --steps 5" || return 1
    ranks3_equal cnn "--task fashion-mnist --model cnn --batch 37 --steps 2 --no-eval" || return 1
    # dropout's masks address a sample by its stream position, not by rank
    ranks3_equal dropout "--task fashion-mnist --model seq --layers dense:64,relu,dropout:0.25,dense:10 --batch 37 --steps 3 --no-eval"
}
# gpt (a token network, residual branches, trained at every position, the
# text task's default) at ranks 1..4 x threads 1, 2 against one process;
# a batch of 37 leaves a short last atom.
t_gpt() {
    ranks_equal gpt "--task text --file /usr/share/games/fortunes/cookie --context 16 --batch 37 --steps 3 --no-eval" \
        "--leaf 64" "--leaf 16"
}
# The cnn at R = 1..4 ranks x 1, 2 threads (no final evaluation: 10,000
# test images would cost each run more than its steps).
t_cnn() { ranks_equal cnn "--task fashion-mnist --model cnn --batch 37 --steps 2 --no-eval" "--leaf 64" "--leaf 16"; }
# A schedule and global-norm clipping (the norm's pass over the combined sum).
t_sched() { ranks_equal sched "$MLP --lr-schedule cosine --warmup 5 --decay-steps 25 --clip-norm 0.05 --decay-groups weights --weight-decay 0.1"; }
t_ca() { ranks_equal ca "$CA"; }

# Rank 1 of 3 dies at its step 25 (a checkpoint at step 20 exists).
t_kill() {
    KF="--task fashion-mnist --batch 64 --leaf 16"
    # shellcheck disable=SC2086
    "$LS" train $KF --steps 90 --threads 1 --db "$T/k-ref.db" --no-progress >"$T/ref.out" || return 1
    want=$(traj "$T/ref.out")
    # shellcheck disable=SC2086
    LOCKSTEP_MPI_KILL_AT=1:25 mpirun --oversubscribe -np 3 "$MPI" train $KF --steps 90 --threads 1 \
        --db "$T/k.db" --name killed --checkpoint-every 10 >"$T/out" 2>"$T/err" &
    pid=$!
    i=0
    until grep -q 'killing itself' "$T/err" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 600 ] || { say "rank 1 never reached step 25"; kill $pid; return 1; }
        sleep 0.1
    done
    t0=$(date +%s)
    while kill -0 $pid 2>/dev/null; do
        [ $(($(date +%s) - t0)) -le 30 ] || { say "the job is still running 30 s after the kill"; kill -9 $pid; return 1; }
        sleep 0.2
    done
    wait $pid
    rc=$?
    echo "mpirun exit status $rc after $(($(date +%s) - t0)) s"
    cat "$T/err"
    [ $rc -ne 0 ] || { say "exit status 0 after a rank died"; return 1; }
    grep -q 'exited on signal 9\|interrupted\|rank was lost' "$T/err" || { say "no clear error"; return 1; }
    "$LS" runs --db "$T/k.db" | tee "$T/runs"
    grep -q '^1 *killed *interrupted ' "$T/runs" || { say "the run is not interrupted"; return 1; }
    sqlite3 "$T/k.db" "select key || '=' || value from run_settings where run = 1 order by key" | tee "$T/set"
    host=$(hostname)
    grep -q '^mpi_ranks=3$' "$T/set" && grep -q "^mpi_hosts=$host\*3\$" "$T/set" ||
        { say "ranks and hosts not recorded"; return 1; }
    "$LS" show killed --db "$T/k.db" | tee "$T/show"
    grep -q "^    mpi: 3 ranks x 1 threads, hosts $host\*3\$" "$T/show" || { say "show does not name the ranks"; return 1; }
    # Resumed by 2 ranks to step 60, then by one process to the end.
    mpirun --oversubscribe -np 2 "$MPI" resume killed --db "$T/k.db" --threads 2 --steps 60 >"$T/out" 2>&1 ||
        { cat "$T/out"; return 1; }
    cat "$T/out"
    grep -q 'resume: run 1 from step [1-9]' "$T/out" || { say "not resumed from a checkpoint"; return 1; }
    "$LS" resume killed --db "$T/k.db" --threads 1 --steps 90 --no-progress >"$T/out" 2>&1 || { cat "$T/out"; return 1; }
    cat "$T/out"
    got=$(traj "$T/out")
    echo "uninterrupted $want, killed and resumed $got"
    [ "$got" = "$want" ]
}

check mpi_build t_build
check mpi_mlp_ranks_threads t_mlp
check mpi_ca_ranks_threads t_ca
check mpi_leaf_models_3_ranks t_models
check mpi_cnn_ranks_threads t_cnn
check mpi_schedule_clip_norm t_sched
check mpi_gpt_ranks_threads t_gpt
check mpi_rank_killed_resume t_kill
exit 0
