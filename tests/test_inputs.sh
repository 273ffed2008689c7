#!/bin/sh
# test_inputs.sh — no file the program reads can block it or make it read
# without end. Every file flag of every command, taken from the one command
# table (`lockstep help --markdown`, generated from tools/commands.c), every
# task's data source key (`train --task T --help`: the keys "where the data
# are"), the data directory of LOCKSTEP_DATA_DIR and the checkpoint file of a
# recorded run are fed a FIFO without a writer and /dev/zero. Each must end
# within seconds (timeout 10: a timeout fails the case naming the flag) with
# exit 2 (1 for the audit's verdict on a checkpoint), one line on stderr that
# names the path, and the record it was given holding every row it held.
# A flag found in the table that this script does not know how to exercise
# fails, naming the flag: a file flag added later is covered or noticed.
# Output flags (-o, --weights, --certificate, golden update's FILE) are
# written, not read, and are named here as such.
#
# Also: a long `graph ged` ends within seconds of SIGINT with exit 130.
# Prints cmocka's "[ RUN      ]" / "[       OK ]" / "[  FAILED  ]" lines,
# which run_tests.sh counts.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case $BUILD in
    /*) BIN=${LOCKSTEP_BIN:-$BUILD/lockstep} ;;
    *) BIN=${LOCKSTEP_BIN:-$ROOT/$BUILD/lockstep} ;;
esac

. "$ROOT/tests/cases.sh"
cd "$T" || exit 1
FIFO=$T/fifo
ZERO=/dev/zero
mkfifo "$FIFO" || exit 1

# A record with one run (id 1) and two checkpoints; small valid inputs.
REC=$T/rec.db
if ! "$BIN" train --task teacher --steps 20 --checkpoint-every 10 --db "$REC" --no-progress >"$T/setup.log" 2>&1; then
    echo "[ RUN      ] inputs_setup"
    sed 's/^/    /' "$T/setup.log"
    echo "[  FAILED  ] inputs_setup"
    exit 1
fi
python3 - "$T" <<'EOF' || exit 1
import struct, sys
def npy(path, descr, shape, data):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join("%d," % s for s in shape))
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data)
t = sys.argv[1]
npy(t + "/x.npy", "<f4", (8, 16), struct.pack("<128f", *[0.5] * 128))
npy(t + "/y.npy", "|u1", (8,), bytes([0, 1, 2, 3, 0, 1, 2, 3]))
EOF
# A certificate of a run whose data are four .npy files.
if ! { "$BIN" train --task arrays --train-x "$T/x.npy" --train-y "$T/y.npy" --test-x "$T/x.npy" \
    --test-y "$T/y.npy" --steps 3 --db "$T/arrays.db" --no-progress >"$T/setup.log" 2>&1 &&
    "$BIN" audit 1 --db "$T/arrays.db" --certificate "$T/cert.json" >>"$T/setup.log" 2>&1; }; then
    echo "[ RUN      ] inputs_setup_certificate"
    sed 's/^/    /' "$T/setup.log"
    echo "[  FAILED  ] inputs_setup_certificate"
    exit 1
fi
# forge.py CERT OUT I SRC: CERT with the I-th data source of its "sources"
# field replaced by SRC, written to OUT; exit 1 past the last source.
cat >"$T/forge.py" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
i, src, s = int(sys.argv[3]), sys.argv[4], c["sources"]
if isinstance(s, dict):
    keys = sorted(s)
    if i >= len(keys):
        sys.exit(1)
    s[keys[i]] = src
else:
    lines = [l for l in s.split("\n") if l]
    if i >= len(lines):
        sys.exit(1)
    lines[i] = lines[i].split("=", 1)[0] + "=" + src
    c["sources"] = "".join(l + "\n" for l in lines)
json.dump(c, open(sys.argv[2], "w"), indent=2)
EOF
steps_rows() { sqlite3 "$1" 'select count(*) from steps' 2>/dev/null || echo none; }

# run_case NAME WANT_RC PATH DB CMD...: the command ends within 10 s with
# WANT_RC, says PATH in one stderr line (2) or in its verdict (1), and DB
# (may be -) keeps its rows.
run_case() {
    name=$1 want=$2 path=$3 db=$4
    shift 4
    echo "[ RUN      ] $name"
    before=none
    [ "$db" = - ] || before=$(steps_rows "$db")
    timeout -k 5 10 "$BIN" "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    why=""
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        why="timed out after 10 s (blocked or reading without end)"
    elif [ "$rc" -ne "$want" ]; then
        why="exit $rc, expected $want"
    elif [ "$want" -eq 2 ] && [ "$(wc -l <"$T/err")" -ne 1 ]; then
        why="$(wc -l <"$T/err") lines on stderr, expected one"
    elif ! cat "$T/out" "$T/err" | grep -qF -- "$path"; then
        why="no line names $path"
    elif [ "$db" != - ] && [ "$(steps_rows "$db")" != "$before" ]; then
        why="$db held $before step rows, now $(steps_rows "$db")"
    fi
    if [ -z "$why" ]; then
        echo "[       OK ] $name"
    else
        echo "    $BIN $*"
        echo "    $why"
        sed 's/^/    stderr: /' "$T/err" | head -5
        sed 's/^/    stdout: /' "$T/out" | head -5
        echo "[  FAILED  ] $name"
        failed=1
    fi
}

# unknown NAME WHAT: a flag found in the table with no way to exercise it here.
unknown() {
    echo "[ RUN      ] $1"
    echo "    $2: a file flag this test does not know how to exercise; add it to tests/test_inputs.sh"
    echo "[  FAILED  ] $1"
    failed=1
}

# The file flags of the command table, one "COMMAND|FLAG|ARG" a line (FLAG
# "pos" for a positional FILE): from each command's synopsis and its flag
# list. An argument is a file when its placeholder says so (FILE, DIR, a
# file name with an extension, CERT, OTHER).
"$BIN" help --markdown >"$T/table.md" 2>&1 || { echo "[  FAILED  ] inputs_table"; exit 1; }
awk '
function isfile(a) { return a ~ /FILE|DIR|CERT|OTHER|\.(npy|json|db|html|png|safetensors)/ }
function clean(t) { gsub(/[][]/, "", t); return t }
/^### lockstep / { sec = substr($0, 14); inblock = 0; next }
/^## / { sec = ""; next }   # Examples and the rest: not the table
/^```/ { inblock = !inblock; next }
inblock && sec != "" {
    n = split($0, w, /[ \t]+/); start = 1
    if (w[1] == "lockstep") {
        cmd = ""; start = 2
        while (start <= n && w[start] ~ /^[a-z][a-z-]*$/) { cmd = cmd (cmd == "" ? "" : " ") w[start]; start++ }
        prevflag = ""
    }
    for (i = start; i <= n; i++) {
        t = clean(w[i]); if (t == "" || t == "|") continue
        split(t, alt, "|")
        if (alt[1] ~ /^-/) { prevflag = alt[1]; continue }
        if (prevflag != "") { if (isfile(t)) print cmd "|" prevflag "|" t; prevflag = ""; continue }
        if (isfile(t)) print cmd "|pos|" t
    }
    next
}
/^- `-/ && sec != "" {
    line = $0
    while (match(line, /`-[-a-z]+ [^`]+`/)) {
        f = substr(line, RSTART + 1, RLENGTH - 2); line = substr(line, RSTART + RLENGTH)
        split(f, p, " "); if (isfile(p[2])) print sec "|" p[1] "|" p[2]
    }
}' "$T/table.md" | sort -u >"$T/flags"
if [ ! -s "$T/flags" ]; then
    echo "[ RUN      ] inputs_table"
    echo "    no file flag found in lockstep help --markdown"
    echo "[  FAILED  ] inputs_table"
    exit 1
fi

# The arguments that make each command reach its --db (a run, its outputs).
db_args() {
    case $1 in
        train) echo "--task teacher --steps 2 --no-progress" ;;
        resume | show | audit | rm) echo "1" ;;
        export) echo "1 --circuit" ;;
        predict) echo "1 --input $T/x.npy -o $T/pred.npy" ;;
        sample) echo "1 --prompt a --tokens 1" ;;
        render) echo "1 -o $T/r.png" ;;
        runs) echo "" ;;
        verify) echo "1 1" ;;
        report) echo "1 -o $T/r.html" ;;
        import) echo "$REC" ;;
        rename) echo "1 renamed" ;;
        sweep) echo "--seeds 1 --task teacher --steps 2 --no-progress" ;;
        equiv) echo "--threads 1,2 --task teacher --steps 2" ;;
        *) return 1 ;;
    esac
}

for src in "$FIFO" "$ZERO"; do
    kind=fifo
    [ "$src" = "$ZERO" ] && kind=zero
    while IFS='|' read -r cmd flag arg; do
        cn=$(echo "$cmd" | tr ' ' '_')
        name="inputs_${cn}_${flag#--}_$kind"
        case "$cmd|$flag" in
            *"|-o" | *"|--output" | "export|--weights" | "audit|--certificate" | "golden update|pos" | "golden save|pos")
                # Written, not read: an output to a FIFO or a device is written
                # in place by design (tools/guard.c), a golden FILE is checked
                # by golden check below.
                continue ;;
            "golden save|--db")
                # save refuses to run under CI before it reads anything; the
                # database's check is the question here.
                ci_was=${CI-}
                unset CI
                run_case "$name" 2 "$src" - golden save 1 "$T/saved.golden" --db "$src"
                [ -z "$ci_was" ] || export CI="$ci_was" ;;
            "golden compare|--db" | "golden|--db")
                run_case "$name" 2 "$src" - golden compare "$ROOT/golden/teacher-sgd.golden" 1 --db "$src" ;;
            "golden compare|pos")
                run_case "$name" 2 "$src" "$REC" golden compare "$src" 1 --db "$REC" ;;
            *"|--db")
                if args=$(db_args "$cmd"); then
                    # shellcheck disable=SC2086
                    run_case "$name" 2 "$src" - $cmd $args --db "$src"
                else
                    unknown "$name" "$cmd $flag $arg"
                fi ;;
            "train|--checkpoint-dir" | "sweep|--checkpoint-dir")
                cp "$REC" "$T/ck.db"
                extra="--task teacher --steps 2 --checkpoint-every 1 --no-progress"
                [ "$cmd" = sweep ] && extra="--seeds 1 $extra"
                # shellcheck disable=SC2086
                run_case "$name" 2 "$src" "$T/ck.db" $cmd $extra --db "$T/ck.db" --checkpoint-dir "$src" ;;
            "resume|--checkpoint-dir")
                cp "$REC" "$T/ck.db"
                run_case "$name" 2 "$src" "$T/ck.db" resume 1 --steps 30 --checkpoint-every 1 --db "$T/ck.db" \
                    --checkpoint-dir "$src" --no-progress ;;
            "train|--init")
                cp "$REC" "$T/in.db"
                run_case "$name" 2 "$src" "$T/in.db" train --task teacher --steps 2 --no-progress --db "$T/in.db" \
                    --init "$src" ;;
            "predict|--input")
                run_case "$name" 2 "$src" "$REC" predict 1 --input "$src" -o "$T/pred.npy" --db "$REC" ;;
            "golden check|pos")
                run_case "$name" 2 "$src" - golden check "$src" ;;
            "reproduce|pos")
                run_case "$name" 2 "$src" - reproduce "$src" ;;
            "import|pos")
                cp "$REC" "$T/into.db"
                run_case "$name" 2 "$src" "$T/into.db" import "$src" --db "$T/into.db" ;;
            "graph cliques|pos")
                run_case "$name" 2 "$src" - graph cliques "$src" -k 3 ;;
            "graph ged|pos")
                case $arg in
                    *_A) run_case "${name}_a" 2 "$src" - graph ged "$src" "$ROOT/data/graphs/karate.edgelist" ;;
                    *_B) run_case "${name}_b" 2 "$src" - graph ged "$ROOT/data/graphs/karate.edgelist" "$src" ;;
                    *) unknown "$name" "$cmd $flag $arg" ;;
                esac ;;
            "graph ged|--pairs")
                run_case "$name" 2 "$src" - graph ged --pairs "$src" ;;
            *)
                unknown "$name" "$cmd $flag $arg" ;;
        esac
    done <"$T/flags"

    # Every task's data sources, in train and in sweep.
    tasks=$("$BIN" train --help 2>&1 | awk '/^tasks \(--task\):/{on=1; next} /^[a-z]/{on=0} on && /^  [a-z]/{print $1}')
    [ -n "$tasks" ] || unknown "inputs_tasks_$kind" "train --help lists no task"
    for task in $tasks; do
        keys=$("$BIN" train --task "$task" --help 2>&1 | awk '/where the data are/ {print $1}')
        for key in $keys; do
            for cmd in train sweep; do
                name="inputs_${cmd}_${task}_${key#--}_$kind"
                pre="--task $task --steps 2 --no-progress"
                [ "$cmd" = sweep ] && pre="--seeds 1 $pre"
                cp "$REC" "$T/src.db"
                case "$task|$key" in
                    "arrays|--train-x")
                        # shellcheck disable=SC2086
                        run_case "$name" 2 "$src" "$T/src.db" $cmd $pre --db "$T/src.db" --train-x "$src" \
                            --train-y "$T/y.npy" ;;
                    "arrays|--train-y")
                        # shellcheck disable=SC2086
                        run_case "$name" 2 "$src" "$T/src.db" $cmd $pre --db "$T/src.db" --train-x "$T/x.npy" \
                            --train-y "$src" ;;
                    "arrays|--test-x")
                        # shellcheck disable=SC2086
                        run_case "$name" 2 "$src" "$T/src.db" $cmd $pre --db "$T/src.db" --train-x "$T/x.npy" \
                            --train-y "$T/y.npy" --test-x "$src" --test-y "$T/y.npy" ;;
                    "arrays|--test-y")
                        # shellcheck disable=SC2086
                        run_case "$name" 2 "$src" "$T/src.db" $cmd $pre --db "$T/src.db" --train-x "$T/x.npy" \
                            --train-y "$T/y.npy" --test-x "$T/x.npy" --test-y "$src" ;;
                    "text|--val-file")
                        # a training text of 200 bytes (the validation file is the one read last)
                        head -c 200 "$ROOT/README.md" >"$T/text.txt"
                        # shellcheck disable=SC2086
                        run_case "$name" 2 "$src" "$T/src.db" $cmd $pre --db "$T/src.db" --file "$T/text.txt" \
                            --val-file "$src" ;;
                    *)
                        # A source key on its own (the others keep their defaults).
                        # shellcheck disable=SC2086
                        run_case "$name" 2 "$src" "$T/src.db" $cmd $pre --db "$T/src.db" "$key" "$src" ;;
                esac
            done
        done
    done

    # The data directory: its files replaced by the FIFO or /dev/zero.
    mkdir -p "$T/data_$kind"
    for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
        t10k-labels-idx1-ubyte.gz; do
        ln -sf "$src" "$T/data_$kind/$f"
    done
    cp "$REC" "$T/src.db"
    LOCKSTEP_DATA_DIR=$T/data_$kind
    export LOCKSTEP_DATA_DIR
    run_case "inputs_data_dir_$kind" 2 "$T/data_$kind/" "$T/src.db" train --task fashion-mnist --steps 1 \
        --no-progress --db "$T/src.db"
    unset LOCKSTEP_DATA_DIR

    # Each data source a certificate names (its "sources" field) pointed at
    # the FIFO or /dev/zero: reproduce refuses it naming the path.
    i=0
    while python3 "$T/forge.py" "$T/cert.json" "$T/forged.json" "$i" "$src"; do
        run_case "inputs_certificate_source${i}_$kind" 2 "$src" - reproduce "$T/forged.json"
        i=$((i + 1))
    done
    [ "$i" -gt 0 ] || unknown "inputs_certificate_sources_$kind" "the certificate of an arrays run names no source"

    # A recorded run's checkpoint replaced by the FIFO or linked to /dev/zero:
    # the audit's verdict names the file (exit 1), at once.
    cp "$REC" "$T/ck.db"
    ck=$(sqlite3 "$REC" 'select path from checkpoints order by step limit 1')
    mv "$ck" "$ck.keep"
    if [ "$kind" = fifo ]; then mkfifo "$ck"; else ln -s "$ZERO" "$ck"; fi
    run_case "inputs_checkpoint_audit_record_only_$kind" 1 "$ck" "$REC" audit 1 --record-only --db "$REC"
    run_case "inputs_checkpoint_audit_$kind" 1 "$ck" "$REC" audit 1 --db "$REC"
    rm -f "$ck"
    mv "$ck.keep" "$ck"
done

# A long exact search ends within seconds of SIGINT, with exit 130 and no
# result line. Two random 16-node graphs take minutes at --node-cap 16.
echo "[ RUN      ] inputs_ged_sigint"
python3 - "$T" <<'EOF'
import random, sys
for name, seed in (("a", 1), ("b", 2)):
    r = random.Random(seed)
    e = set()
    while len(e) < 30:
        u, v = r.sample(range(16), 2)
        e.add((min(u, v), max(u, v)))
    open(sys.argv[1] + "/" + name + ".txt", "w").write("".join("%d %d\n" % x for x in sorted(e)))
EOF
start=$(date +%s)
timeout --preserve-status -k 10 -s INT 2 "$BIN" graph ged "$T/a.txt" "$T/b.txt" --node-cap 16 >"$T/out" 2>"$T/err"
rc=$?
secs=$(($(date +%s) - start))
if [ "$rc" -eq 130 ] && [ "$secs" -le 5 ] && [ ! -s "$T/out" ] && grep -q interrupted "$T/err"; then
    echo "[       OK ] inputs_ged_sigint"
else
    echo "    exit $rc after $secs s (expected 130 within 5 s, nothing on stdout)"
    sed 's/^/    /' "$T/err" "$T/out"
    echo "[  FAILED  ] inputs_ged_sigint"
    failed=1
fi

exit $failed
