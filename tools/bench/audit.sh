#!/bin/bash
# audit.sh — the full audit against training, side by side (part of
# `make bench`): a
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
#   bash tools/bench/audit.sh [build/lockstep]     REPS=3 STEPS=2000 EVERY=100 THREADS=cores
set -e
. "$(dirname "$0")/lib.sh"
BIN=${1:-build/lockstep}
STEPS=${STEPS:-2000}
EVERY=${EVERY:-100}
REPS=${REPS:-3}
THREADS=${THREADS:-$(nproc)}
[ "$THREADS" -gt 1 ] || THREADS=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TIMEFORMAT='%U %S'   # bash's time: user and system seconds
cpu() { bench_sum $(cat "$tmp/cpu"); }   # user + system
: >"$tmp/train.t"
: >"$tmp/audit.t"
: >"$tmp/train.c"
: >"$tmp/audit.c"
: >"$tmp/train1.t"
bench_machine audit
for r in $(seq 1 "$REPS"); do
    rm -rf "$tmp/b.db" "$tmp/b.db-wal" "$tmp/b.db-shm" "$tmp/b.db.ckpt"
    a=$(bench_now)
    { time "$BIN" train --task fashion-mnist --steps "$STEPS" --checkpoint-every "$EVERY" --keep-checkpoints all \
        --threads "$THREADS" --db "$tmp/b.db" --name b --no-progress >/dev/null 2>"$tmp/err"; } 2>"$tmp/cpu"
    bench_since "$a" >>"$tmp/train.t"
    cpu >>"$tmp/train.c"
    b=$(bench_now)
    { time "$BIN" audit b --db "$tmp/b.db" --threads "$THREADS" >"$tmp/audit.out" 2>"$tmp/err"; } 2>"$tmp/cpu"
    bench_since "$b" >>"$tmp/audit.t"
    cpu >>"$tmp/audit.c"
    # The same training at one thread: what "1/cores of the training time" is against.
    rm -rf "$tmp/c.db" "$tmp/c.db-wal" "$tmp/c.db-shm" "$tmp/c.db.ckpt"
    d=$(bench_now)
    "$BIN" train --task fashion-mnist --steps "$STEPS" --checkpoint-every "$EVERY" --keep-checkpoints all \
        --threads 1 --db "$tmp/c.db" --name c --no-progress >/dev/null
    bench_since "$d" >>"$tmp/train1.t"
done
echo "audit: fashion-mnist $STEPS steps, a checkpoint every $EVERY, $THREADS threads, $REPS repetitions; seconds"
m() { bench_median <"$tmp/$1"; }
bench_row what "train at $THREADS threads" audit "audit / train" "train at 1 thread" "audit / train at 1 thread"
bench_row wall "$(bench_spread <"$tmp/train.t")" "$(bench_spread <"$tmp/audit.t")" \
    "$(bench_ratio "$(m audit.t)" "$(m train.t)" %.2f)" "$(bench_spread <"$tmp/train1.t")" \
    "$(bench_ratio "$(m audit.t)" "$(m train1.t)" %.2f)"
bench_row "cpu (user + system)" "$(bench_spread <"$tmp/train.c")" "$(bench_spread <"$tmp/audit.c")" \
    "$(bench_ratio "$(m audit.c)" "$(m train.c)" %.2f)" - -
sed 's/^/  /' "$tmp/audit.out"
