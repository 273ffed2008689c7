#!/bin/sh
# dense.sh — the MLP against the processor's limit (part of `make bench`).
#
# Each repetition measures, one after the other: the FP32 peak of 1 and of 2
# cores for the kernels' arithmetic (`lockstep bench --peak`: independent
# vector fused multiply-adds on the SIMD path in use), then the MLP
# (784-256-256-10, batch 128, Fashion-MNIST, the model's default leaf) at 1
# and at 2 threads, with the default optimiser (AdamW) and with the one
# `make bench-peer` times against PyTorch (SGD, lr 0.001, momentum 0.9),
# then the pair: two independent 1-thread AdamW runs at once. Interleaving
# puts the same noise of a shared machine on all of them; the fraction of
# peak, the speedup and the pair's ratios are taken within each repetition,
# then their medians and spreads (min..max) over REPS repetitions printed.
#   sh tools/bench/dense.sh [build/lockstep]     REPS=7 STEPS=100
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
REPS=${REPS:-7}
STEPS=${STEPS:-100}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# mlp THREADS adamw|sgd -> "samples/s GFLOP/s" of one run (nothing if it failed)
mlp() {
    _t=$1
    if [ "$2" = sgd ]; then set -- --optimizer sgd --lr 0.001 --momentum 0.9; else set -- --optimizer adamw; fi
    "$BIN" bench --task fashion-mnist --batch 128 --threads "$_t" --steps "$STEPS" --reps 1 "$@" 2>/dev/null |
        awk -v t="$_t" '$1 == t && $2 + 0 > 0 { print $2, $6 }'
}
one_alone() { mlp 1 adamw | cut -d' ' -f1; }
peak() { "$BIN" bench --peak --threads "$1" | awk '{ print $4 }'; }
need() {   # a run that printed no figure (a bad flag, a crash) must not pass as 0
    [ -n "$2" ] || { echo "dense: repetition $rep: $1 printed no figure" >&2; exit 1; }
}

path=$("$BIN" bench --peak --threads 1 | awk '{ print $2 }')
bench_machine dense
echo "dense: MLP 784-256-256-10, batch 128, fashion-mnist, default leaf; simd $path; $REPS interleaved repetitions of $STEPS steps"
echo "dense: flops counted: forward, weight gradient and input gradient (2 per multiply-add); peak = $BIN bench --peak"
rep=1
while [ "$rep" -le "$REPS" ]; do
    p1=$(peak 1); need "bench --peak --threads 1" "$p1"
    p2=$(peak 2); need "bench --peak --threads 2" "$p2"
    { echo "peak.1 $p1"; echo "peak.2 $p2"; } >>"$tmp/rows"
    for opt in adamw sgd; do
        set -- $(mlp 1 $opt); need "$opt at 1 thread" "$1"; s1=$1 g1=$2
        set -- $(mlp 2 $opt); need "$opt at 2 threads" "$1"; s2=$1 g2=$2
        [ "$opt" = adamw ] && a1=$s1 a2=$s2
        cat >>"$tmp/rows" <<ROWS
$opt.1.sps $s1
$opt.2.sps $s2
$opt.1.gf $g1
$opt.2.gf $g2
$opt.1.peak $(bench_ratio "$g1" "$p1" %.4f)
$opt.2.peak $(bench_ratio "$g2" "$p2" %.4f)
$opt.1.speedup 1
$opt.2.speedup $(bench_ratio "$s2" "$s1" %.4f)
ROWS
    done
    bench_pair "$tmp/pa" "$tmp/pb" one_alone
    pa=$(cat "$tmp/pa") pb=$(cat "$tmp/pb")
    need "the pair" "$pa"; need "the pair" "$pb"
    pair=$(bench_sum "$pa" "$pb")
    cat >>"$tmp/rows" <<ROWS
pair.sps $pair
pair.x1 $(bench_ratio "$pair" "$a1" %.4f)
pair.share $(bench_ratio "$a2" "$pair" %.4f)
ROWS
    rep=$((rep + 1))
done
cell() { bench_spread_of "$tmp/rows" "$@"; }   # KEY FMT [SCALE]
bench_row optimiser threads "samples/s" "MLP GFLOP/s" "peak GFLOP/s" "fraction of peak %" "speedup vs 1"
for opt in adamw sgd; do
    for t in 1 2; do
        bench_row "$opt" "$t" "$(cell "$opt.$t.sps" %.0f)" "$(cell "$opt.$t.gf" %.1f)" "$(cell "peak.$t" %.1f)" \
            "$(cell "$opt.$t.peak" %.1f 100)" "$(cell "$opt.$t.speedup" %.2f)"
    done
done
echo
echo "dense: the pair, two 1-thread AdamW runs at once (two processes, nothing shared), against the 1-thread and 2-thread runs of the same repetition"
bench_row "pair samples/s" "pair / one alone" "2 threads / pair %"
bench_row "$(cell pair.sps %.0f)" "$(cell pair.x1 %.2f)" "$(cell pair.share %.0f 100)"
