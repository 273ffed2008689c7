#!/bin/sh
# process.sh — the whole process as a user times it (part of `make bench`):
# `lockstep train --task fashion-mnist --steps 1000` from start to exit
# (loading and decoding the data, the steps, the record, the final
# evaluation) at 1 thread, at 2 threads, and the pair (two 1-thread
# processes at once, each with its own database: what the host's two cores
# give right now). The three run side by side in each repetition, so they
# see the same noise. The ratio is the 2-thread run's speedup over 1 thread
# against the pair's (two runs' work in the pair's wall time):
#   (t1 / t2) / (2·t1 / t_pair) = t_pair / (2·t2).
# Goal (issue 34): ratio >= 0.85. Prints medians [min..max] of REPS. With
# a second binary (the one before a change), each repetition runs both, one
# after the other, and the ratios of the two are compared repetition by
# repetition: on a shared host that is the only fair comparison.
#   sh tools/bench/process.sh [build/lockstep [OLD_BINARY]]     REPS=5 STEPS=1000
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
OLD=${2:-}
REPS=${REPS:-5}
STEPS=${STEPS:-1000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
bench_machine process
echo "process: lockstep train --task fashion-mnist --steps $STEPS, $REPS repetitions of 1 thread, 2 threads, the pair${OLD:+, $BIN and then $OLD in each}"

# run BINARY THREADS DB: one training, its stdout discarded (fails when it does)
run() {
    "$1" train --task fashion-mnist --steps "$STEPS" --threads "$2" --db "$3" --no-progress >/dev/null 2>&1
}

# measure BINARY TAG: one repetition of the three, rows "TAG-one s" ... into $tmp/rows
measure() {
    rm -f "$tmp"/*.db
    t0=$(bench_now)
    run "$1" 1 "$tmp/one.db"
    t1=$(bench_since "$t0")
    t0=$(bench_now)
    run "$1" 2 "$tmp/two.db"
    t2=$(bench_since "$t0")
    t0=$(bench_now)
    run "$1" 1 "$tmp/pair_a.db" &
    pid=$!
    rc=0
    run "$1" 1 "$tmp/pair_b.db" || rc=$?
    wait "$pid" || rc=$?
    tp=$(bench_since "$t0")
    if [ "$rc" != 0 ]; then
        echo "process: a training of $1 failed (exit status $rc)" >&2
        exit 1
    fi
    ratio=$(echo "$tp $t2" | awk '{ printf "%.4f", $1 / (2 * $2) }')
    {
        echo "$2-one $t1"
        echo "$2-two $t2"
        echo "$2-pair $tp"
        echo "$2-ratio $ratio"
    } >>"$tmp/rows"
    echo "$ratio" >"$tmp/last-$2"
}

: >"$tmp/rows"
for _ in $(seq 1 "$REPS"); do
    measure "$BIN" new
    if [ -n "$OLD" ]; then
        measure "$OLD" old
        echo "new/old $(echo "$(cat "$tmp/last-new") $(cat "$tmp/last-old")" | awk '{ printf "%.4f", $1 / $2 }')" \
            >>"$tmp/rows"
    fi
done

# table TAG NAME: the three rows and the ratio of one binary
table() {
    echo
    echo "$2"
    bench_row run "wall s" "speedup over 1 thread"
    one=$(bench_median_of "$tmp/rows" "$1-one")
    bench_row "1 thread" "$(bench_spread_of "$tmp/rows" "$1-one")" 1.00
    bench_row "2 threads" "$(bench_spread_of "$tmp/rows" "$1-two")" \
        "$(bench_ratio "$one" "$(bench_median_of "$tmp/rows" "$1-two")" %.2f)"
    bench_row "the pair (2 runs)" "$(bench_spread_of "$tmp/rows" "$1-pair")" \
        "$(bench_ratio "$(echo "2 * $one" | awk '{ print $1 * $3 }')" \
            "$(bench_median_of "$tmp/rows" "$1-pair")" %.2f)"
}

table new "$BIN"
ratio=$(bench_median_of "$tmp/rows" new-ratio %.2f)
if [ -n "$OLD" ]; then
    table old "$OLD"
    echo
    echo "process: $OLD, 2 threads against the pair $(bench_spread_of "$tmp/rows" old-ratio)"
    echo "process: the ratio, $BIN over $OLD in each repetition $(bench_spread_of "$tmp/rows" new/old)"
fi
echo
echo "process: $BIN, 2 threads against the pair $(bench_spread_of "$tmp/rows" new-ratio) (goal >= 0.85)"
if bench_le 0.85 "$ratio"; then
    echo "process: goal met"
else
    echo "process: goal NOT met"
fi
