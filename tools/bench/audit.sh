#!/bin/bash
# audit.sh — the full audit against training and against the pair (part of
# `make bench`), on Fashion-MNIST (mlp 784-256-256-10, batch 128), STEPS
# steps (2000) with a checkpoint every EVERY (100).
#
# (a) A default run: its newest two checkpoints kept, so its audit has two
#     segments (0..1900 and 1900..2000), the long one replayed on all the
#     threads (engine/core/audit.c). Each repetition trains it at 1 thread,
#     then audits it at THREADS (2) threads: the ratio audit / training,
#     goal <= 0.6.
# (b) The same run with every checkpoint kept (--keep-checkpoints all, 20
#     segments replayed side by side), trained once: in each repetition its
#     audit at THREADS threads, then the pair (lib.sh: two 1-thread audits
#     of it at once, as two processes sharing nothing). The pair does two
#     audits' work in its time, so "audit / pair" is the audit's wall time
#     over the pair's time for one audit's work (1 / (1/a + 1/b) for the
#     pair's walls a and b): 1.00 means the threads give all the cores give
#     to two independent processes; goal <= 1.10.
# Ratios are taken within each repetition, so both sides see the same noise;
# medians [min..max] of REPS (3). Wall times are whole commands (data
# loading, record, checkpoints). A busy host lowers what the cores give; the
# machine line says its load.
#   bash tools/bench/audit.sh [build/lockstep]     REPS=3 STEPS=2000 EVERY=100 THREADS=2
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
STEPS=${STEPS:-2000}
EVERY=${EVERY:-100}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bench_machine audit

fresh() { rm -rf "$tmp/$1" "$tmp/$1-wal" "$tmp/$1-shm" "$tmp/$1.ckpt"; }
# timed CMD...: runs CMD (its stdout to $tmp/last.out), prints its wall seconds
timed() {
    _s=$(bench_now)
    "$@" >"$tmp/last.out" 2>"$tmp/last.err" || { cat "$tmp/last.err" >&2; return 1; }
    bench_since "$_s"
}
# audit1 DB NAME: a 1-thread audit, its wall seconds on stdout (for the pair)
audit1() {
    _s=$(bench_now)
    "$BIN" audit "$2" --db "$1" --threads 1 >/dev/null 2>&1 || return 1
    bench_since "$_s"
}

fresh all.db
"$BIN" train --task fashion-mnist --steps "$STEPS" --checkpoint-every "$EVERY" --keep-checkpoints all \
    --threads "$THREADS" --db "$tmp/all.db" --name all --no-progress >/dev/null
: >"$tmp/rows"
for r in $(seq 1 "$REPS"); do
    fresh def.db
    t1=$(timed "$BIN" train --task fashion-mnist --steps "$STEPS" --checkpoint-every "$EVERY" --threads 1 \
        --db "$tmp/def.db" --name def --no-progress)
    a2=$(timed "$BIN" audit def --db "$tmp/def.db" --threads "$THREADS")
    cp "$tmp/last.out" "$tmp/def.out"
    b2=$(timed "$BIN" audit all --db "$tmp/all.db" --threads "$THREADS")
    cp "$tmp/last.out" "$tmp/all.out"
    bench_pair "$tmp/pa" "$tmp/pb" audit1 "$tmp/all.db" all
    pa=$(cat "$tmp/pa") pb=$(cat "$tmp/pb")
    pair=$(bench_ratio 1 "$(bench_sum "$(bench_ratio 1 "$pa")" "$(bench_ratio 1 "$pb")")")
    cat >>"$tmp/rows" <<ROWS
train1 $t1
audit $a2
ratio_a $(bench_ratio "$a2" "$t1")
audit_all $b2
pair $pair
ratio_b $(bench_ratio "$b2" "$pair")
ROWS
done
cell() { bench_spread_of "$tmp/rows" "$@"; }   # KEY [FMT]
goal() {   # KEY LINE
    if bench_le "$(bench_median_of "$tmp/rows" "$1")" "$2"; then echo "met (<= $2)"; else echo "NOT met (<= $2)"; fi
}
echo "audit: fashion-mnist, $STEPS steps, a checkpoint every $EVERY, audits at $THREADS threads," \
    "$REPS repetitions; seconds, median [min..max]"
bench_row "(a) newest two kept" "train, 1 thread" "audit, $THREADS threads" "audit / train" "goal"
bench_row "" "$(cell train1)" "$(cell audit)" "$(cell ratio_a)" "$(goal ratio_a 0.6)"
sed 's/^/  /' "$tmp/def.out"
bench_row "(b) all kept" "the pair, per audit" "audit, $THREADS threads" "audit / pair" "goal"
bench_row "" "$(cell pair)" "$(cell audit_all)" "$(cell ratio_b)" "$(goal ratio_b 1.10)"
sed 's/^/  /' "$tmp/all.out"
