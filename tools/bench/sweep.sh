#!/bin/sh
# sweep.sh — `lockstep sweep` against the same runs one after another (part
# of `make bench`):
# 8 seeds of one config as one sweep on THREADS threads (default 2); the same
# 8 runs one after another in one process, each alone on THREADS threads
# (`sweep --one-by-one`: the data loaded once, the same record); and the same
# 8 runs as 8 `lockstep train --threads THREADS` processes. Wall time of the
# whole command (data loading, evaluation and record included), each into a
# fresh database. Three configs: the teacher task
# (runs far too small to keep 2 cores busy), Fashion-MNIST at batch 16 (one
# leaf of 32 samples: a run alone uses one core), and Fashion-MNIST at batch
# 128 (4 leaves: a run alone keeps 2 cores busy). Medians and spreads of REPS
# repetitions (default 3); the three alternate inside each repetition so all
# see the same noise. Every run's trajectory is checked equal across the
# three.
#
#   sh tools/bench/sweep.sh [build/lockstep]     REPS=3 THREADS=2
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# trajectory hash of run NAME in database DB
traj() {
    sqlite3 "$1" "SELECT traj_hash FROM steps WHERE run = (SELECT id FROM runs WHERE name = '$2') ORDER BY step DESC LIMIT 1"
}

# bench LABEL STEPS FLAGS...: one config, 8 seeds, three ways.
bench() {
    label=$1
    steps=$2
    shift 2
    : >"$tmp/sweep.t"
    : >"$tmp/obo.t"
    : >"$tmp/seq.t"
    r=0
    while [ "$r" -lt "$REPS" ]; do
        r=$((r + 1))
        rm -rf "$tmp"/*.db "$tmp"/*.db-* "$tmp"/*.ckpt
        t=$(bench_now)
        "$BIN" sweep --seeds 1-8 --steps "$steps" "$@" --threads "$THREADS" --db "$tmp/sweep.db" --name s \
            --no-progress >/dev/null
        bench_since "$t" >>"$tmp/sweep.t"
        t=$(bench_now)
        "$BIN" sweep --one-by-one --seeds 1-8 --steps "$steps" "$@" --threads "$THREADS" --db "$tmp/obo.db" \
            --name s --no-progress >/dev/null
        bench_since "$t" >>"$tmp/obo.t"
        t=$(bench_now)
        for seed in 1 2 3 4 5 6 7 8; do
            "$BIN" train --seed "$seed" --steps "$steps" "$@" --threads "$THREADS" --db "$tmp/seq.db" \
                --name "s-seed$seed" --no-progress >/dev/null
        done
        bench_since "$t" >>"$tmp/seq.t"
        # The sweep's runs are the runs trained alone, bit for bit.
        for seed in 1 2 3 4 5 6 7 8; do
            x=$(traj "$tmp/sweep.db" "s-seed$seed")
            y=$(traj "$tmp/obo.db" "s-seed$seed")
            z=$(traj "$tmp/seq.db" "s-seed$seed")
            if [ -z "$x" ] || [ "$x" != "$y" ] || [ "$x" != "$z" ]; then
                echo "sweep: $label seed $seed: trajectories differ: sweep $x, one by one $y, train $z" >&2
                exit 1
            fi
        done
    done
    ms=$(bench_median <"$tmp/sweep.t")
    bench_row "$label" "$(bench_spread <"$tmp/sweep.t")" \
        "$(bench_spread <"$tmp/obo.t")" "$(bench_ratio "$(bench_median <"$tmp/obo.t")" "$ms" %.2f)" \
        "$(bench_spread <"$tmp/seq.t")" "$(bench_ratio "$(bench_median <"$tmp/seq.t")" "$ms" %.2f)"
}

bench_machine sweep
echo "sweep: against the same runs one after another: 8 seeds, $THREADS threads, $REPS repetitions; wall seconds"
bench_row "8 seeds of" sweep "one by one, same process" "sweep speedup" "8 train processes" "sweep speedup"
bench "teacher mlp, batch 32, 1000 steps" 1000 --task teacher
bench "fashion-mnist mlp, batch 16, 100 steps" 100 --task fashion-mnist --batch 16
bench "fashion-mnist mlp, batch 128, 25 steps" 25 --task fashion-mnist --batch 128
echo "sweep: every run's trajectory checked equal across the three; wall time of the whole command: data loading,"
echo "sweep: evaluation and record included; one by one loads the data once, as the sweep does"
