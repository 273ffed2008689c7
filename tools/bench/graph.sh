#!/bin/sh
# graph.sh — exact graph operations per thread count (part of `make bench`):
# WormNet v3 k-clique counts for k = 3..6 and graph edit distance pairs per
# second on Graph Atlas pairs (7 nodes each, exact), at 1 thread and at
# every core, with the speedup. Each figure is the median of REPS
# repetitions; the thread counts alternate inside a repetition so both see
# the same noise. Times are the command's own (--time: the operation, not
# reading the file). Needs Debian's python3-networkx for the data.
#   sh tools/bench/graph.sh [build/lockstep]     REPS=5 GED_PAIRS=3000
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
REPS=${REPS:-5}
cores=$(bench_cores)
WORMNET=/usr/share/doc/networkx-2.8.8/examples/algorithms/WormNet.v3.benchmark.txt
ATLAS=/usr/lib/python3/dist-packages/networkx/generators/atlas.dat.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# seconds CMD...: the "in X s" figure of a --time line.
seconds() {
    "$BIN" "$@" --time 2>&1 >/dev/null | sed -n 's/.* in \([0-9.]*\) s .*/\1/p'
}
# wall_cpu CMD...: "WALL LARGEST": the wall time and the largest worker's CPU
# time (which bounds the wall time of an idle machine).
wall_cpu() {
    "$BIN" "$@" --time 2>&1 >/dev/null | sed -n 's/.* in \([0-9.]*\) s .*largest \([0-9.]*\) s.*/\1 \2/p'
}

bench_machine graph
if [ ! -r "$WORMNET" ] || [ ! -r "$ATLAS" ]; then
    echo "graph: WormNet or the Atlas missing (Debian package python3-networkx; make deps): skipped"
    exit 0
fi

echo "graph: WormNet v3 k-cliques (lockstep graph cliques -k K --count; median of $REPS, seconds)"
echo "graph: wall is the elapsed time; cpu the largest worker's CPU time (CLOCK_THREAD_CPUTIME_ID), which is"
echo "graph: what an idle machine's wall time would be: on a loaded machine compare the cpu columns"
bench_row k count "wall 1" "wall $cores" speedup "cpu 1" "cpu $cores" speedup
for k in 3 4 5 6; do
    count=$("$BIN" graph cliques "$WORMNET" -k $k --count --threads "$cores")
    : >"$tmp/rows"
    r=0
    while [ $r -lt "$REPS" ]; do
        wall_cpu graph cliques "$WORMNET" -k $k --count --threads 1 | awk '{ print "wall1", $1; print "cpu1", $2 }' >>"$tmp/rows"
        wall_cpu graph cliques "$WORMNET" -k $k --count --threads "$cores" | awk '{ print "walln", $1; print "cpun", $2 }' >>"$tmp/rows"
        r=$((r + 1))
    done
    med() { bench_median_of "$tmp/rows" "$1"; }
    s3() { printf '%.3f' "$1"; }
    w1=$(med wall1) wn=$(med walln) c1=$(med cpu1) cn=$(med cpun)
    bench_row $k "$count" "$(s3 "$w1")" "$(s3 "$wn")" "$(bench_ratio "$w1" "$wn" %.2f)" \
        "$(s3 "$c1")" "$(s3 "$cn")" "$(bench_ratio "$c1" "$cn" %.2f)"
done

# Atlas pairs: 7-node graphs (G209..G1252) in a fixed pseudo-random pairing.
n_pairs=${GED_PAIRS:-3000}
awk -v n="$n_pairs" -v atlas="$ATLAS" 'BEGIN { s = 12345; for (i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2147483648; a = 209 + int(s / 65536) % 1044;
    s = (s * 1103515245 + 12345) % 2147483648; b = 209 + int(s / 65536) % 1044;
    print atlas ":" a " " atlas ":" b } }' >"$tmp/pairs"
echo
echo "graph: edit distance, $n_pairs Atlas pairs of 7-node graphs, exact + both bounds (lockstep graph ged --pairs; median of $REPS)"
: >"$tmp/p1"
: >"$tmp/pn"
r=0
while [ $r -lt "$REPS" ]; do
    seconds graph ged --pairs "$tmp/pairs" --threads 1 >>"$tmp/p1"
    seconds graph ged --pairs "$tmp/pairs" --threads "$cores" >>"$tmp/pn"
    r=$((r + 1))
done
m1=$(bench_median <"$tmp/p1")
mn=$(bench_median <"$tmp/pn")
bench_row threads seconds "pairs/s" speedup
bench_row 1 "$(printf '%.3f' "$m1")" "$(bench_ratio "$n_pairs" "$m1" %.0f)" 1.00
bench_row "$cores" "$(printf '%.3f' "$mn")" "$(bench_ratio "$n_pairs" "$mn" %.0f)" "$(bench_ratio "$m1" "$mn" %.2f)"
"$BIN" graph ged --pairs "$tmp/pairs" --threads 1 >"$tmp/r1"
"$BIN" graph ged --pairs "$tmp/pairs" --threads "$cores" >"$tmp/rn"
if cmp -s "$tmp/r1" "$tmp/rn"; then echo "graph: results at 1 and $cores threads identical"; else echo "graph: results differ!"; exit 1; fi
awk '{ if ($4 > 0) { rel += ($6 - $4) / $4; n++ } } END { if (n) printf "graph: upper bound mean relative error over pairs with GED > 0: %.3f\n", rel / n }' "$tmp/r1"
