#!/bin/bash
# bench_audit.sh — the full audit against training, side by side: a
# Fashion-MNIST run (mlp 784-256-256-10, batch 128) of STEPS steps (2000)
# with a checkpoint every EVERY (100), all kept, trained at THREADS threads
# (the online CPUs, at least 2), then audited (`lockstep audit`: the segments
# between checkpoints replayed concurrently) with the same threads. Train and
# audit alternate inside each of REPS repetitions (3) so both see the same
# noise; medians of wall times (each the whole command: data loading,
# evaluation, record, checkpoints) and their ratio, and the same for the CPU
# time (user + system) of each, which says how much work each does whatever
# the machine's load: the audit recomputes every step, so its CPU time is
# about the training's, and its wall time is about that over the cores
# while training's is that over its own speedup at THREADS threads.
set -e
BIN=${1:-build/lockstep}
STEPS=${STEPS:-2000}
EVERY=${EVERY:-100}
REPS=${REPS:-3}
THREADS=${THREADS:-$(nproc)}
[ "$THREADS" -gt 1 ] || THREADS=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TIMEFORMAT='%U %S'   # bash's time: user and system seconds
now() { date +%s.%N; }
cpu() { awk '{ print $1 + $2 }' "$tmp/cpu"; }
: >"$tmp/train.t"
: >"$tmp/audit.t"
: >"$tmp/train.c"
: >"$tmp/audit.c"
: >"$tmp/train1.t"
for r in $(seq 1 "$REPS"); do
    rm -rf "$tmp/b.db" "$tmp/b.db-wal" "$tmp/b.db-shm" "$tmp/b.db.ckpt"
    a=$(now)
    { time "$BIN" train --task fashion-mnist --steps "$STEPS" --checkpoint-every "$EVERY" --keep-checkpoints all \
        --threads "$THREADS" --db "$tmp/b.db" --name b --no-progress >/dev/null 2>"$tmp/err"; } 2>"$tmp/cpu"
    b=$(now)
    cpu >>"$tmp/train.c"
    { time "$BIN" audit b --db "$tmp/b.db" --threads "$THREADS" >"$tmp/audit.out" 2>"$tmp/err"; } 2>"$tmp/cpu"
    c=$(now)
    cpu >>"$tmp/audit.c"
    awk "BEGIN { print $b - $a }" >>"$tmp/train.t"
    awk "BEGIN { print $c - $b }" >>"$tmp/audit.t"
    # The same training at one thread: what "1/cores of the training time" is against.
    rm -rf "$tmp/c.db" "$tmp/c.db-wal" "$tmp/c.db-shm" "$tmp/c.db.ckpt"
    d=$(now)
    "$BIN" train --task fashion-mnist --steps "$STEPS" --checkpoint-every "$EVERY" --keep-checkpoints all \
        --threads 1 --db "$tmp/c.db" --name c --no-progress >/dev/null
    e=$(now)
    awk "BEGIN { print $e - $d }" >>"$tmp/train1.t"
done
med() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f..%.2f", lo, hi }'; }
t=$(med "$tmp/train.t")
u=$(med "$tmp/audit.t")
echo "audit: fashion-mnist $STEPS steps, a checkpoint every $EVERY, $THREADS threads, $REPS reps"
echo "  train  median $(awk "BEGIN { printf \"%.2f\", $t }") s (spread $(spread "$tmp/train.t") s)"
echo "  audit  median $(awk "BEGIN { printf \"%.2f\", $u }") s (spread $(spread "$tmp/audit.t") s)"
echo "  audit / train $(awk "BEGIN { printf \"%.2f\", $u / $t }") (wall)"
t1=$(med "$tmp/train1.t")
echo "  train at 1 thread median $(awk "BEGIN { printf \"%.2f\", $t1 }") s (spread $(spread "$tmp/train1.t") s); audit / that $(awk "BEGIN { printf \"%.2f\", $u / $t1 }")"
tc=$(med "$tmp/train.c")
uc=$(med "$tmp/audit.c")
echo "  cpu time: train median $(awk "BEGIN { printf \"%.2f\", $tc }") s (spread $(spread "$tmp/train.c") s), audit median $(awk "BEGIN { printf \"%.2f\", $uc }") s (spread $(spread "$tmp/audit.c") s), audit / train $(awk "BEGIN { printf \"%.2f\", $uc / $tc }")"
sed 's/^/  /' "$tmp/audit.out"
