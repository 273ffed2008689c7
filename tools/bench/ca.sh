#!/bin/sh
# ca.sh — the logic CA (part of `make bench`): the step time at 1 and 2
# threads of gol, the checkerboard and the asynchronous checkerboard
# (`lockstep bench --reps 1` REPS times, 1 and 2 threads side by side in
# each), and in each repetition the pair: two 1-thread runs at once, as two
# processes sharing nothing, against the 1-thread run alone of the same
# repetition (what the two cores give right now), and the 2-thread run
# against the pair. Then a whole Game of Life training (3000 steps at 2
# threads, with its evaluations and the record), wall time, GOL_REPS runs.
# Medians and spreads (min..max) of the repetitions, against the goals:
# checkerboard step <= 12 ms at 2 threads, asynchronous step <= half of
# BASE_ASYNC_MS (38.1 ms, its step before the CA's kernels were tuned), gol
# training <= 1 s.
#   sh tools/bench/ca.sh [build/lockstep]     REPS=7 GOL_REPS=5
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
REPS=${REPS:-7}
GOL_REPS=${GOL_REPS:-5}
BASE_ASYNC_MS=${BASE_ASYNC_MS:-38.1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bench_machine ca

# steps_us TASK STEPS THREADS FLAGS...: "THREADS US" for each thread count of
# one `lockstep bench` run (the step time in us is its 7th column)
steps_us() {
    _task=$1 _steps=$2 _threads=$3
    shift 3
    "$BIN" bench --task "$_task" "$@" --threads "$_threads" --steps "$_steps" --reps 1 2>/dev/null |
        awk '$1 ~ /^[0-9]+$/ && NF > 6 { print $1, $7 }'
}
one_alone() { steps_us "$@" | awk '$1 == 1 { print $2 }'; }

# step_row TASK STEPS LABEL FLAGS...: REPS repetitions, then one TSV row
step_row() {
    task=$1 steps=$2 label=$3
    shift 3
    : >"$tmp/rows"
    r=1
    while [ "$r" -le "$REPS" ]; do
        steps_us "$task" "$steps" 1,2 "$@" >"$tmp/rep"
        t1=$(awk '$1 == 1 { print $2 }' "$tmp/rep")
        t2=$(awk '$1 == 2 { print $2 }' "$tmp/rep")
        bench_pair "$tmp/pa" "$tmp/pb" one_alone "$task" "$steps" 1 "$@"
        pa=$(cat "$tmp/pa") pb=$(cat "$tmp/pb")
        if [ -z "$t1" ] || [ -z "$t2" ] || [ -z "$pa" ] || [ -z "$pb" ]; then
            echo "ca: $label, repetition $r: a run printed no step time" >&2
            exit 1
        fi
        # the pair's steps per unit of time against one alone's: t1/pa + t1/pb
        pair=$(bench_sum "$(bench_ratio "$t1" "$pa")" "$(bench_ratio "$t1" "$pb")")
        cat >>"$tmp/rows" <<ROWS
t1 $(bench_ratio "$t1" 1000)
t2 $(bench_ratio "$t2" 1000)
pair $pair
share $(bench_ratio "$(bench_ratio "$t1" "$t2")" "$pair")
ROWS
        r=$((r + 1))
    done
    m2=$(bench_median_of "$tmp/rows" t2)
    line= goal=-
    case $label in
    checkerboard) line=12 ;;
    async) line=$(bench_ratio "$BASE_ASYNC_MS" 2 %.2f) ;;
    esac
    if [ -n "$line" ]; then
        if bench_le "$m2" "$line"; then goal="met (<= $line ms)"; else goal="NOT met (<= $line ms)"; fail=1; fi
    fi
    cell() { bench_spread_of "$tmp/rows" "$@"; }   # KEY FMT [SCALE]
    bench_row "$label" "$(cell t1 %.2f)" "$(cell t2 %.2f)" "$goal" "$(cell pair %.2f)" "$(cell share %.0f 100)"
}

fail=0
bench_row "step, ms" "1 thread" "2 threads" "goal at 2 threads" "pair / one alone" "2 threads / pair %"
step_row gol 300 gol
step_row checkerboard 10 checkerboard
step_row checkerboard 6 async --async

: >"$tmp/gol.s"
r=1
while [ "$r" -le "$GOL_REPS" ]; do
    rm -rf "$tmp/gol.db" "$tmp/gol.db.ckpt"
    start=$(bench_now)
    "$BIN" train --task gol --threads 2 --db "$tmp/gol.db" --name gol --no-progress >/dev/null 2>&1
    bench_since "$start" >>"$tmp/gol.s"
    r=$((r + 1))
done
if bench_le "$(bench_median <"$tmp/gol.s")" 1; then goal="met (<= 1 s)"; else goal="NOT met (<= 1 s)"; fail=1; fi
echo
bench_row "gol training, s" "3000 steps at 2 threads, evaluations and record" goal
bench_row gol "$(bench_spread <"$tmp/gol.s")" "$goal"
echo
if [ "$fail" = 0 ]; then echo "ca: goals met"; else echo "ca: some goal NOT met"; fi
