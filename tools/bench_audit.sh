#!/bin/sh
# bench_audit.sh — the full audit against training, side by side: a
# Fashion-MNIST run (mlp 784-256-256-10, batch 128) of STEPS steps (2000)
# with a checkpoint every EVERY (100), all kept, trained at THREADS threads
# (the online CPUs, at least 2), then audited (`lockstep audit`: the segments
# between checkpoints replayed concurrently) with the same threads. Train and
# audit alternate inside each of REPS repetitions (3) so both see the same
# noise; medians of wall times (each the whole command: data loading,
# evaluation, record, checkpoints) and their ratio.
set -e
BIN=${1:-build/lockstep}
STEPS=${STEPS:-2000}
EVERY=${EVERY:-100}
REPS=${REPS:-3}
THREADS=${THREADS:-$(nproc)}
[ "$THREADS" -gt 1 ] || THREADS=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
: >"$tmp/train.t"
: >"$tmp/audit.t"
for r in $(seq 1 "$REPS"); do
    rm -rf "$tmp/b.db" "$tmp/b.db-wal" "$tmp/b.db-shm" "$tmp/b.db.ckpt"
    a=$(now)
    "$BIN" train --task fashion-mnist --steps "$STEPS" --checkpoint-every "$EVERY" --keep-checkpoints all \
        --threads "$THREADS" --db "$tmp/b.db" --name b --no-progress >/dev/null
    b=$(now)
    "$BIN" audit b --db "$tmp/b.db" --threads "$THREADS" >"$tmp/audit.out"
    c=$(now)
    awk "BEGIN { print $b - $a }" >>"$tmp/train.t"
    awk "BEGIN { print $c - $b }" >>"$tmp/audit.t"
done
med() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f..%.2f", lo, hi }'; }
t=$(med "$tmp/train.t")
u=$(med "$tmp/audit.t")
echo "audit: fashion-mnist $STEPS steps, a checkpoint every $EVERY, $THREADS threads, $REPS reps"
echo "  train  median $(awk "BEGIN { printf \"%.2f\", $t }") s (spread $(spread "$tmp/train.t") s)"
echo "  audit  median $(awk "BEGIN { printf \"%.2f\", $u }") s (spread $(spread "$tmp/audit.t") s)"
echo "  audit / train $(awk "BEGIN { printf \"%.2f\", $u / $t }")"
sed 's/^/  /' "$tmp/audit.out"
