#!/bin/sh
# update_floor.sh — AdamW's update against the divider (part of `make
# bench`). The contract's AdamW (docs/contract.md, The step) does three
# float divisions and a square root a parameter (two divisions once
# 1 − β1^t rounds to 1), and the divider runs nothing else meanwhile: the
# divider's rates times the parameters are a floor no update with that
# formula goes under. Each repetition measures the rates (`bench --peak
# --op div|sqrt` at 1 thread and at 2), then the MLP's step and update
# (`lockstep bench --task fashion-mnist --threads 1,2 --reps 1`, its
# `parts` rows), so each floor is read against an update of the same
# moment. Prints medians [min..max] of REPS; the update's share of a step
# is issue 34's "the update <= 10% of a step".
#   sh tools/bench/update_floor.sh [build/lockstep]      REPS=5 STEPS=200
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
REPS=${REPS:-5}
STEPS=${STEPS:-200}
N=269322   # the MLP 784-256-256-10: 784*256+256 + 256*256+256 + 256*10+10
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
bench_machine update_floor
echo "update_floor: the MLP's $N parameters, $REPS repetitions of bench --peak --op div|sqrt and $STEPS steps"

# rate OP THREADS: G operations a second
rate() { "$BIN" bench --peak --op "$1" --threads "$2" | awk '{ print $4 }'; }

: >"$tmp/rows"
for _ in $(seq 1 "$REPS"); do
    for t in 1 2; do
        d=$(rate div $t)
        s=$(rate sqrt $t)
        echo "div-$t $d" >>"$tmp/rows"
        echo "sqrt-$t $s" >>"$tmp/rows"
        # µs a step: N parameters' divisions and square roots at these rates
        echo "$d $s" | awk -v n=$N -v t=$t '{ printf "floor2-%s %.1f\nfloor3-%s %.1f\n", t, n * (2 / $1 + 1 / $2) / 1000,
            t, n * (3 / $1 + 1 / $2) / 1000 }' >>"$tmp/rows"
    done
    "$BIN" bench --task fashion-mnist --threads 1,2 --steps "$STEPS" --reps 1 >"$tmp/out" 2>&1 || {
        cat "$tmp/out" >&2
        exit 1
    }
    # the step's row (threads ... step-µs) and the parts row (update in column 7)
    awk '$1 ~ /^[12]$/ { print "step-" $1, $7 } $1 == "parts" && $2 ~ /^[12]$/ { print "update-" $2, $7 }' \
        "$tmp/out" >>"$tmp/rows"
    awk '$1 ~ /^[12]$/ { s[$1] = $7 } $1 == "parts" && $2 ~ /^[12]$/ { u[$2] = $7 }
        END { for (t in u) printf "share-%s %.2f\n", t, 100 * u[t] / s[t] }' "$tmp/out" >>"$tmp/rows"
done

echo
bench_row threads "divisions G/s" "square roots G/s" "floor us (2 divisions)" "floor us (3 divisions)" \
    "update us" "step us" "update / step %"
for t in 1 2; do
    bench_row "$t" "$(bench_spread_of "$tmp/rows" div-$t)" "$(bench_spread_of "$tmp/rows" sqrt-$t)" \
        "$(bench_spread_of "$tmp/rows" floor2-$t %.0f)" "$(bench_spread_of "$tmp/rows" floor3-$t %.0f)" \
        "$(bench_spread_of "$tmp/rows" update-$t %.0f)" "$(bench_spread_of "$tmp/rows" step-$t %.0f)" \
        "$(bench_spread_of "$tmp/rows" share-$t %.1f)"
done
