#!/bin/sh
# bench_sweep.sh — `lockstep sweep` against the same runs one after another:
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
# usage: tools/bench_sweep.sh [build/lockstep]     (REPS=5 THREADS=2 to change)
set -e
BIN=${1:-build/lockstep}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }

# median and spread of the numbers on stdin: "median (min..max)"
stats() {
    sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                     printf "%.2f s (%.2f..%.2f)", m, v[1], v[NR] }'
}
median() {
    sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

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
        t0=$(now)
        "$BIN" sweep --seeds 1-8 --steps "$steps" "$@" --threads "$THREADS" --db "$tmp/sweep.db" --name s \
            --no-progress >/dev/null
        t1=$(now)
        "$BIN" sweep --one-by-one --seeds 1-8 --steps "$steps" "$@" --threads "$THREADS" --db "$tmp/obo.db" \
            --name s --no-progress >/dev/null
        t2=$(now)
        for seed in 1 2 3 4 5 6 7 8; do
            "$BIN" train --seed "$seed" --steps "$steps" "$@" --threads "$THREADS" --db "$tmp/seq.db" \
                --name "s-seed$seed" --no-progress >/dev/null
        done
        t3=$(now)
        awk "BEGIN { print $t1 - $t0 }" >>"$tmp/sweep.t"
        awk "BEGIN { print $t2 - $t1 }" >>"$tmp/obo.t"
        awk "BEGIN { print $t3 - $t2 }" >>"$tmp/seq.t"
        # The sweep's runs are the runs trained alone, bit for bit.
        for seed in 1 2 3 4 5 6 7 8; do
            x=$(traj "$tmp/sweep.db" "s-seed$seed")
            y=$(traj "$tmp/obo.db" "s-seed$seed")
            z=$(traj "$tmp/seq.db" "s-seed$seed")
            if [ -z "$x" ] || [ "$x" != "$y" ] || [ "$x" != "$z" ]; then
                echo "bench_sweep: $label seed $seed: trajectories differ: sweep $x, one by one $y, train $z" >&2
                exit 1
            fi
        done
    done
    ms=$(median <"$tmp/sweep.t")
    echo "$label"
    printf "  sweep                       %s\n" "$(stats <"$tmp/sweep.t")"
    printf "  one by one, same process    %s   sweep speedup %.2fx\n" "$(stats <"$tmp/obo.t")" \
        "$(awk "BEGIN { print $(median <"$tmp/obo.t") / $ms }")"
    printf "  8 train processes           %s   sweep speedup %.2fx\n" "$(stats <"$tmp/seq.t")" \
        "$(awk "BEGIN { print $(median <"$tmp/seq.t") / $ms }")"
}

echo "sweep vs one after another: 8 seeds, $THREADS threads, $REPS reps; machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%d)"
bench "teacher mlp, batch 32, 1000 steps" 1000 --task teacher
bench "fashion-mnist mlp, batch 16, 100 steps" 100 --task fashion-mnist --batch 16
bench "fashion-mnist mlp, batch 128, 25 steps" 25 --task fashion-mnist --batch 128
echo "(every run's trajectory checked equal across the three; wall time of the whole command: data loading,"
echo " evaluation and record included; one by one loads the data once, as the sweep does)"
