#!/bin/sh
# bench_dense.sh — the MLP against the processor's limit (part of `make bench`).
#
# Each repetition measures, one after the other: the FP32 peak of 1 and of 2
# cores for the kernels' arithmetic (`lockstep bench --peak`: independent
# vector fused multiply-adds on the SIMD path in use), then the MLP
# (784-256-256-10, batch 128, Fashion-MNIST, the model's default leaf) at 1
# and at 2 threads, with the default optimiser (AdamW) and with the one
# `make bench-peer` times against PyTorch (SGD, lr 0.001, momentum 0.9),
# then two independent 1-thread AdamW runs at once (two processes, nothing
# shared): the two cores' capacity on this host at that moment, against
# which the 2-thread speedup is read.
# Interleaving puts the same noise of a shared machine on all of them; the
# fraction of peak is taken within each repetition. Prints the medians over
# REPS repetitions (default 7) and the spread (min..max).
#   sh tools/bench_dense.sh [build/lockstep]     REPS=7 STEPS=100
set -e
BIN=${1:-build/lockstep}
REPS=${REPS:-7}
STEPS=${STEPS:-100}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.a" "$tmp.b"' EXIT
path=$("$BIN" bench --peak --threads 1 | awk '{ print $2 }')
echo "dense: MLP 784-256-256-10, batch 128, fashion-mnist, default leaf; simd $path; $REPS interleaved repetitions of $STEPS steps"
echo "dense: load average $(cut -d' ' -f1-3 /proc/loadavg) at start on $(nproc) cores (other work makes every figure lower and the spread wider)"
echo "dense: flops counted: forward, weight gradient and input gradient (2 per multiply-add); peak = $BIN bench --peak"
rep=0
while [ "$rep" -lt "$REPS" ]; do
    for t in 1 2; do
        "$BIN" bench --peak --threads $t | awk -v r=$rep '{ print "peak", r, $3, $4 }' >>"$tmp"
    done
    for opt in adamw sgd; do
        for t in 1 2; do
            if [ "$opt" = sgd ]; then set -- --optimizer sgd --lr 0.001 --momentum 0.9; else set -- --optimizer adamw; fi
            "$BIN" bench --task fashion-mnist --batch 128 --threads $t --steps "$STEPS" --reps 1 "$@" |
                awk -v r=$rep -v t=$t -v o="$opt" '$1 == t && $2 + 0 > 0 { print "mlp", r, t, o, $2, $6 }' >>"$tmp"
        done
    done
    # Two independent 1-thread runs at once, nothing shared between them:
    # what the host gives two cores right now, the ceiling to read the
    # 2-thread speedup against (a busy host lowers both).
    "$BIN" bench --task fashion-mnist --batch 128 --threads 1 --steps "$STEPS" --reps 1 --optimizer adamw >"$tmp.a" 2>/dev/null &
    pid=$!
    "$BIN" bench --task fashion-mnist --batch 128 --threads 1 --steps "$STEPS" --reps 1 --optimizer adamw >"$tmp.b" 2>/dev/null
    wait "$pid"
    awk -v r=$rep '$1 == 1 && $2 + 0 > 0 { s += $2; n++ } END { if (n == 2) print "pair", r, s }' "$tmp.a" "$tmp.b" >>"$tmp"
    rep=$((rep + 1))
done
awk '
function med(a, n,   i, j, x) {   # sorts a[1..n] in place; returns the median
    for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
$1 == "peak" { peak[$2, $3] = $4 }
$1 == "mlp"  { sps[$2, $3, $4] = $5; gf[$2, $3, $4] = $6; reps[$2] = 1 }
$1 == "pair" { pair[$2] = $3 }
END {
    # a run that printed no figure (a bad flag, a crash) must not pass as 0
    for (r in reps) for (t = 1; t <= 2; t++) for (o = 1; o <= 2; o++)
        if (!((r, t, (o == 1 ? "adamw" : "sgd")) in sps) || !((r, t) in peak)) {
            print "bench_dense: repetition " r ", " t " thread(s): a run printed no figure" > "/dev/stderr"
            exit 1
        }
    printf "%-10s %-8s %-26s %-16s %-28s %-21s %s\n", "optimiser", "threads", "samples/s med [min..max]", "MLP GFLOP/s med", "peak GFLOP/s med [min..max]", "fraction of peak", "speedup vs 1 [min..max]"
    split("adamw sgd", opts, " ")
    for (o = 1; o <= 2; o++) {
        for (t = 1; t <= 2; t++) {
            n = 0
            for (r in reps) {
                n++
                s[n] = sps[r, t, opts[o]]; g[n] = gf[r, t, opts[o]]; p[n] = peak[r, t]
                f[n] = peak[r, t] > 0 ? gf[r, t, opts[o]] / peak[r, t] : 0
                q[n] = sps[r, 1, opts[o]] > 0 ? sps[r, t, opts[o]] / sps[r, 1, opts[o]] : 0
            }
            ms = med(s, n); lo = s[1]; hi = s[n]
            mg = med(g, n); mp = med(p, n); plo = p[1]; phi = p[n]
            mf = med(f, n); flo = f[1]; fhi = f[n]; mq = med(q, n); qlo = q[1]; qhi = q[n]
            printf "%-10s %-8d %-26s %-16.1f %-28s %-21s %s\n", opts[o], t, sprintf("%.0f [%.0f..%.0f]", ms, lo, hi), mg,
                   sprintf("%.1f [%.1f..%.1f]", mp, plo, phi), sprintf("%.1f%% [%.1f..%.1f]", 100 * mf, 100 * flo, 100 * fhi),
                   sprintf("%.2f [%.2f..%.2f]", mq, qlo, qhi)
        }
    }
    # the side-by-side pair: together, against the 1-thread run of the same
    # repetition, and the 2-thread run against the pair
    n = 0
    for (r in reps) {
        if (!(r in pair)) {
            print "bench_dense: repetition " r ": the side-by-side pair printed no figure" > "/dev/stderr"
            exit 1
        }
        n++
        s[n] = pair[r]; q[n] = pair[r] / sps[r, 1, "adamw"]; f[n] = sps[r, 2, "adamw"] / pair[r]
    }
    ms = med(s, n); lo = s[1]; hi = s[n]; mq = med(q, n); qlo = q[1]; qhi = q[n]; mf = med(f, n); flo = f[1]; fhi = f[n]
    printf "adamw, two 1-thread runs side by side (nothing shared): together %.0f [%.0f..%.0f] samples/s, %.2f [%.2f..%.2f] x one alone; the 2-thread run reaches %.0f%% [%.0f..%.0f] of the pair\n",
           ms, lo, hi, mq, qlo, qhi, 100 * mf, 100 * flo, 100 * fhi
}' "$tmp"
