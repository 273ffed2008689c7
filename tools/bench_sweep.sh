#!/bin/sh
# bench_sweep.sh — `lockstep sweep` against the same runs one after another:
# 8 seeds of one config as one sweep on THREADS threads (default 2), and the
# same 8 runs trained one after another by `lockstep train --threads THREADS`,
# wall time of the whole command (data loading, evaluation and record
# included), each into a fresh database. Three configs: the teacher task
# (runs far too small to keep 2 cores busy), Fashion-MNIST at batch 16 (one
# leaf of 32 samples: a run alone uses one core), and Fashion-MNIST at batch
# 128 (4 leaves: a run alone keeps 2 cores busy). Medians and spreads of REPS
# repetitions (default 3); sweep and sequential alternate inside each
# repetition so both see the same noise. Every sweep run's trajectory is
# checked against its sequential twin.
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

# bench LABEL STEPS FLAGS...: one config, 8 seeds.
bench() {
    label=$1
    steps=$2
    shift 2
    : >"$tmp/sweep.t"
    : >"$tmp/seq.t"
    : >"$tmp/ratio.t"
    r=0
    while [ "$r" -lt "$REPS" ]; do
        r=$((r + 1))
        rm -f "$tmp"/*.db "$tmp"/*.db-*
        t0=$(now)
        "$BIN" sweep --seeds 1-8 --steps "$steps" "$@" --threads "$THREADS" --db "$tmp/sweep.db" --name s \
            --no-progress >"$tmp/sweep.out"
        t1=$(now)
        for seed in 1 2 3 4 5 6 7 8; do
            "$BIN" train --seed "$seed" --steps "$steps" "$@" --threads "$THREADS" --db "$tmp/seq.db" \
                --name "q$seed" --no-progress >/dev/null
        done
        t2=$(now)
        a=$(awk "BEGIN { print $t1 - $t0 }")
        b=$(awk "BEGIN { print $t2 - $t1 }")
        echo "$a" >>"$tmp/sweep.t"
        echo "$b" >>"$tmp/seq.t"
        awk "BEGIN { print $b / $a }" >>"$tmp/ratio.t"
        # The sweep's runs are the sequential runs, bit for bit.
        for seed in 1 2 3 4 5 6 7 8; do
            x=$(sqlite3 "$tmp/sweep.db" "SELECT traj_hash FROM steps WHERE run = (SELECT id FROM runs WHERE name = 's-seed$seed') ORDER BY step DESC LIMIT 1")
            y=$(sqlite3 "$tmp/seq.db" "SELECT traj_hash FROM steps WHERE run = (SELECT id FROM runs WHERE name = 'q$seed') ORDER BY step DESC LIMIT 1")
            if [ "$x" != "$y" ] || [ -z "$x" ]; then
                echo "bench_sweep: $label seed $seed: sweep trajectory $x, alone $y" >&2
                exit 1
            fi
        done
    done
    printf "%-34s sweep %-24s sequential %-24s speedup %.2fx (median of per-rep ratios %.2fx)\n" "$label" \
        "$(stats <"$tmp/sweep.t")" "$(stats <"$tmp/seq.t")" \
        "$(awk "BEGIN { print $(median <"$tmp/seq.t") / $(median <"$tmp/sweep.t") }")" "$(median <"$tmp/ratio.t")"
}

echo "sweep vs one after another: 8 seeds, $THREADS threads, $REPS reps; machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%d)"
bench "teacher mlp, batch 32, 1000 steps" 1000 --task teacher
bench "fashion-mnist mlp, batch 16, 100 steps" 100 --task fashion-mnist --batch 16
bench "fashion-mnist mlp, batch 128, 25 steps" 25 --task fashion-mnist --batch 128
echo "(identical trajectories checked for every run; wall time includes data loading, evaluation and record)"
