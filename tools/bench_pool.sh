#!/bin/sh
# bench_pool.sh — threads beyond cores (issue 10, goal 2): MLP throughput on
# Fashion-MNIST at threads = cores, 2x, 4x and 8x cores, on the default batch
# (128, leaf 32) and on batch 37 with leaf 3 (13 leaves: a thread count that
# does not divide the work), each without and with a busy process (a shell
# loop) keeping one core busy. Thread counts run interleaved inside each
# repetition; the figure is the median of REPS (default 5) repetitions, the
# spread is (max - min) / median, the ratio is against threads = cores in
# the same condition. Goal: every ratio >= 0.90.
set -e
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
echo "bench_pool: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores cores, $(date -u '+%Y-%m-%d %H:%M UTC'), $REPS interleaved repetitions of $STEPS steps"
threads="$cores $((2 * cores)) $((4 * cores)) $((8 * cores))"
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
fail=0
for cfg in "--batch 128 --leaf 32" "--batch 37 --leaf 3"; do
    for busy in 0 1; do
        if [ "$busy" = 1 ]; then
            sh -c 'while :; do :; done' &
            busy_pid=$!
        fi
        for r in $(seq 1 "$REPS"); do
            for t in $threads; do
                "$BIN" bench --task fashion-mnist $cfg --threads "$t" --steps "$STEPS" --reps 1 2>/dev/null |
                    awk -v t="$t" '$1 == t { print $2 }' >>"$tmp/$busy.$t"
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
        echo "MLP $cfg, $label:"
        printf '%-8s %-12s %-8s %-7s %s\n' threads "samples/s" spread ratio goal
        base=$(median <"$tmp/$busy.$cores")
        for t in $threads; do
            m=$(median <"$tmp/$busy.$t")
            spread=$(sort -g "$tmp/$busy.$t" | awk -v m="$m" 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f%%", (m > 0 ? 100 * (hi - lo) / m : 0) }')
            ratio=$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
            ok=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.90 ? "met" : "NOT met") }')
            [ "$t" = "$cores" ] && ok="(base)"
            [ "$ok" = "NOT met" ] && fail=1
            printf '%-8s %-12s %-8s %-7s %s\n' "$t" "$m" "$spread" "$ratio" "$ok"
        done
        rm -f "$tmp"/$busy.*
    done
done
echo
if [ "$fail" = 0 ]; then
    echo "bench_pool: goal met (threads up to 8x cores >= 0.90x of threads = cores, with and without a busy core)"
else
    echo "bench_pool: goal NOT met on some line above"
fi
