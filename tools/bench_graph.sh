#!/bin/sh
# bench_graph.sh — exact graph operations per thread count (tools/bench.sh
# calls it): WormNet v3 k-clique counts for k = 3..6 and graph edit distance
# pairs per second on Graph Atlas pairs (7 nodes each, exact), at 1 thread
# and at every core, with the speedup. Each figure is the median of REPS
# repetitions; the thread counts alternate inside a repetition so both see
# the same noise. Times are the command's own (--time: the operation, not
# reading the file). Needs Debian's python3-networkx for the data.
set -e
BIN=${1:-build/lockstep}
REPS=${REPS:-5}
cores=$(nproc)
[ "$cores" -gt 1 ] || cores=2
WORMNET=/usr/share/doc/networkx-2.8.8/examples/algorithms/WormNet.v3.benchmark.txt
ATLAS=/usr/lib/python3/dist-packages/networkx/generators/atlas.dat.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# seconds CMD...: the "in X s" figure of a --time line.
seconds() {
    "$BIN" "$@" --time 2>&1 >/dev/null | sed -n 's/.* in \([0-9.]*\) s .*/\1/p'
}
# wall_cpu CMD...: "WALL LARGEST": the wall time and the largest worker's CPU
# time (which bounds the wall time of an idle machine).
wall_cpu() {
    "$BIN" "$@" --time 2>&1 >/dev/null | sed -n 's/.* in \([0-9.]*\) s .*largest \([0-9.]*\) s.*/\1 \2/p'
}

echo "graph: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%d)"
if [ ! -r "$WORMNET" ] || [ ! -r "$ATLAS" ]; then
    echo "graph: WormNet or the Atlas missing (Debian package python3-networkx; make deps): skipped"
    exit 0
fi

echo "WormNet v3 k-cliques (lockstep graph cliques -k K --count; median of $REPS, seconds)"
echo "  wall: elapsed time; cpu: the largest worker's CPU time (CLOCK_THREAD_CPUTIME_ID), which is what"
echo "  an idle machine's wall time would be: on a loaded machine compare the cpu columns"
printf '%3s %16s %9s %9s %8s %9s %9s %8s\n' k count "wall 1" "wall $cores" speedup "cpu 1" "cpu $cores" speedup
for k in 3 4 5 6; do
    count=$("$BIN" graph cliques "$WORMNET" -k $k --count --threads "$cores")
    : >"$tmp/t1"
    : >"$tmp/tn"
    r=0
    while [ $r -lt "$REPS" ]; do
        wall_cpu graph cliques "$WORMNET" -k $k --count --threads 1 >>"$tmp/t1"
        wall_cpu graph cliques "$WORMNET" -k $k --count --threads "$cores" >>"$tmp/tn"
        r=$((r + 1))
    done
    w1=$(cut -d' ' -f1 "$tmp/t1" | median)
    wn=$(cut -d' ' -f1 "$tmp/tn" | median)
    c1=$(cut -d' ' -f2 "$tmp/t1" | median)
    cn=$(cut -d' ' -f2 "$tmp/tn" | median)
    printf '%3d %16s %9.3f %9.3f %8.2f %9.3f %9.3f %8.2f\n' $k "$count" "$w1" "$wn" \
        "$(awk "BEGIN { print ($wn > 0 ? $w1 / $wn : 0) }")" "$c1" "$cn" "$(awk "BEGIN { print ($cn > 0 ? $c1 / $cn : 0) }")"
done

# Atlas pairs: 7-node graphs (G209..G1252) in a fixed pseudo-random pairing.
n_pairs=${GED_PAIRS:-3000}
awk -v n="$n_pairs" -v atlas="$ATLAS" 'BEGIN { s = 12345; for (i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2147483648; a = 209 + int(s / 65536) % 1044;
    s = (s * 1103515245 + 12345) % 2147483648; b = 209 + int(s / 65536) % 1044;
    print atlas ":" a " " atlas ":" b } }' >"$tmp/pairs"
echo
echo "Graph edit distance, $n_pairs Atlas pairs of 7-node graphs, exact + both bounds (lockstep graph ged --pairs; median of $REPS)"
: >"$tmp/p1"
: >"$tmp/pn"
r=0
while [ $r -lt "$REPS" ]; do
    seconds graph ged --pairs "$tmp/pairs" --threads 1 >>"$tmp/p1"
    seconds graph ged --pairs "$tmp/pairs" --threads "$cores" >>"$tmp/pn"
    r=$((r + 1))
done
m1=$(median <"$tmp/p1")
mn=$(median <"$tmp/pn")
printf '%10s %12s %12s %8s\n' threads seconds pairs/s speedup
printf '%10d %12.3f %12.0f %8s\n' 1 "$m1" "$(awk "BEGIN { print $n_pairs / $m1 }")" 1.00
printf '%10d %12.3f %12.0f %8.2f\n' "$cores" "$mn" "$(awk "BEGIN { print $n_pairs / $mn }")" \
    "$(awk "BEGIN { print $m1 / $mn }")"
"$BIN" graph ged --pairs "$tmp/pairs" --threads 1 >"$tmp/r1"
"$BIN" graph ged --pairs "$tmp/pairs" --threads "$cores" >"$tmp/rn"
if cmp -s "$tmp/r1" "$tmp/rn"; then echo "results at 1 and $cores threads: identical"; else echo "results differ!"; exit 1; fi
awk '{ if ($4 > 0) { rel += ($6 - $4) / $4; n++ } } END { if (n) printf "upper bound mean relative error over pairs with GED > 0: %.3f\n", rel / n }' "$tmp/r1"
