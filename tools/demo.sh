#!/bin/sh
# demo.sh — the main job: train the default model on Fashion-MNIST at one
# thread and at every core, record both runs in runs.db, and prove them
# bit-identical step by step.
set -e
BIN=${1:-build/lockstep}
DB=${DB:-runs.db}
cores=$(nproc)
[ "$cores" -gt 1 ] || cores=2
steps=${STEPS:-2345}   # five epochs at batch 128
echo "== lockstep demo: MLP 784-256-256-10 on Fashion-MNIST, $steps steps, threads 1 and $cores"
echo "== every step's loss, parameter hash and trajectory hash go to $DB"
"$BIN" equiv --task fashion-mnist --threads "1,$cores" --steps "$steps" --eval-every 469 --db "$DB"
ids=$("$BIN" runs --db "$DB" | tail -n 2 | awk '{print $1}' | tr '\n' ' ')
echo
echo "== lockstep verify $ids--db $DB"
# shellcheck disable=SC2086
"$BIN" verify $ids --db "$DB"
echo
echo "== the record (lockstep runs --db $DB, last two)"
"$BIN" runs --db "$DB" | sed -n '1p'
"$BIN" runs --db "$DB" | tail -n 2
