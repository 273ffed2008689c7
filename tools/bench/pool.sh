#!/bin/sh
# pool.sh — threads beyond cores (part of `make bench`): MLP throughput on
# Fashion-MNIST at threads = cores, 2x, 4x and 8x cores, on the default
# batch (128, leaf 32) and on batch 37 with leaf 3 (13 leaves: a thread
# count that does not divide the work), each without and with a busy
# process (a shell loop) keeping one core busy. Thread counts run
# interleaved inside each repetition; the figure is the median of REPS
# repetitions, the spread is (max - min) / median, the ratio is against
# threads = cores in the same condition. Goal: every ratio >= 0.90.
#   sh tools/bench/pool.sh [build/lockstep]     REPS=5 STEPS=100
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
REPS=${REPS:-5}
STEPS=${STEPS:-100}
cores=$(nproc)
tmp=$(mktemp -d)
busy_pid=
cleanup() {
    [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
bench_machine pool
echo "pool: $REPS interleaved repetitions of $STEPS steps"
threads="$cores $((2 * cores)) $((4 * cores)) $((8 * cores))"
fail=0
for cfg in "--batch 128 --leaf 32" "--batch 37 --leaf 3"; do
    for busy in 0 1; do
        if [ "$busy" = 1 ]; then
            sh -c 'while :; do :; done' &
            busy_pid=$!
        fi
        : >"$tmp/rows"
        for r in $(seq 1 "$REPS"); do
            for t in $threads; do
                # shellcheck disable=SC2086
                "$BIN" bench --task fashion-mnist $cfg --threads "$t" --steps "$STEPS" --reps 1 2>/dev/null |
                    awk -v t="$t" '$1 == t { print t, $2 }' >>"$tmp/rows"
            done
        done
        if [ "$busy" = 1 ]; then
            kill "$busy_pid" 2>/dev/null || true
            wait "$busy_pid" 2>/dev/null || true
            busy_pid=
        fi
        label="no busy process"
        [ "$busy" = 1 ] && label="one core kept busy"
        echo
        echo "pool: MLP $cfg, $label"
        bench_row threads "samples/s" spread ratio goal
        base=$(bench_median_of "$tmp/rows" "$cores" %.0f)
        for t in $threads; do
            awk -v t="$t" '$1 == t { print $2 }' "$tmp/rows" >"$tmp/one"
            m=$(bench_median_of "$tmp/rows" "$t" %.0f)
            ratio=$(bench_ratio "$m" "$base" %.2f)
            if [ "$t" = "$cores" ]; then ok="(base)"; elif bench_le 0.90 "$ratio"; then ok=met; else ok="NOT met"; fail=1; fi
            bench_row "$t" "$m" "$(bench_rel <"$tmp/one")" "$ratio" "$ok"
        done
    done
done
echo
if [ "$fail" = 0 ]; then
    echo "pool: goal met (threads up to 8x cores >= 0.90x of threads = cores, with and without a busy core)"
else
    echo "pool: goal NOT met on some line above"
fi
