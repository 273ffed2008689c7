#!/bin/sh
# check_layers.sh — `make check-layers`: the folders are layers, and a file
# may include only headers of its own layer or of a layer strictly below it
# (docs/architecture.md). Bottom to top:
#
#   include/ (lockstep.h) < base/ < reduce/, record/
#     < engine/num/ < engine/nn/ < engine/data/, engine/graph/ < engine/core/
#     < engine/models/ < engine/tasks/ < engine/ (builtins.c) < tools/
#     < python/ (the Python package's C, which uses include/lockstep.h alone)
#
# Layers that share a rank sit side by side and may not include each other:
# the tree must not learn about the record, nor the record about threads; a
# data reader knows no graph algorithm. The model families under
# engine/models/ form one layer (the logic CA reuses the gate kernels).
# Includes are root-relative ("engine/core/config.h"); "buildinfo.h" comes
# from -I$(BUILD) and belongs to the file's own layer.
#
# Names, not only includes: the core, the numerics, the readers and the
# graph algorithms never name a model or a task (a string equal to a
# registered name), and no model names a task or reads the config's task
# name; only engine/tasks/ and engine/builtins.c know which task is which.
# tools/ reaches into engine/ only through the headers listed in TOOL_ONLY
# below, the tools' interface that docs/architecture.md documents ("What
# tools/ may use"); everything else it uses is include/lockstep.h.
# Functions given SIMD clones have names unique across files (clang makes
# their resolvers global symbols). One line per offence, then exit 1.
# Usage: sh tools/check_layers.sh [ROOT]   (default: the checkout above this script)
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2

# The layer a path belongs to (a folder path, or "" when it is no layer).
layer() {
    case $1 in
    include/*) echo include ;;
    base/*) echo base ;;
    reduce/*) echo reduce ;;
    record/*) echo record ;;
    engine/num/*) echo engine/num ;;
    engine/nn/*) echo engine/nn ;;
    engine/data/*) echo engine/data ;;
    engine/graph/*) echo engine/graph ;;
    engine/core/*) echo engine/core ;;
    engine/models/*) echo engine/models ;;
    engine/tasks/*) echo engine/tasks ;;
    engine/*/*) echo "" ;;
    engine/*) echo engine ;;
    tools/*) echo tools ;;
    python/*) echo python ;;
    *) echo "" ;;
    esac
}

rank() {
    case $1 in
    include) echo 0 ;;
    base) echo 1 ;;
    reduce | record) echo 2 ;;
    engine/num) echo 3 ;;
    engine/nn) echo 4 ;;
    engine/data | engine/graph) echo 5 ;;
    engine/core) echo 6 ;;
    engine/models) echo 7 ;;
    engine/tasks) echo 8 ;;
    engine) echo 9 ;;
    tools) echo 10 ;;
    python) echo 11 ;;
    *) echo "" ;;
    esac
}

TOOL_ONLY="engine/core/config.h engine/core/model.h engine/core/train.h engine/core/session.h
engine/core/audit.h engine/core/sweep.h engine/data/dataset.h engine/data/npy.h engine/graph/graph.h
engine/graph/cliques.h engine/graph/ged.h engine/models/logic/circuit.h engine/models/logic_ca/logic_ca.h
engine/num/dense.h engine/num/rng.h"

sources=$(find include base reduce record engine tools python -name '*.[ch]' 2>/dev/null | LC_ALL=C sort)
fail=0
n=0
for f in $sources; do
    n=$((n + 1))
    own=$(layer "$f")
    if [ -z "$own" ]; then
        echo "$f: not in a layer (engine/ holds core, num, nn, data, graph, models, tasks and builtins.c)"
        fail=1
        continue
    fi
    own_rank=$(rank "$own")
    # "line:target" for every quoted include (spaces allowed around '#').
    out=$(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
        sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/') || true
    [ -n "$out" ] || continue
    # A here-document, not a pipe, so `fail` is set in this shell.
    while IFS=: read -r line target; do
        [ "$target" = buildinfo.h ] && continue
        case $target in
        */*) ;;
        *)
            echo "$f:$line: includes $target (includes are root-relative: folder/file.h)"
            fail=1
            continue
            ;;
        esac
        if [ ! -f "$target" ]; then
            echo "$f:$line: includes $target, which does not exist (includes are root-relative)"
            fail=1
            continue
        fi
        to=$(layer "$target")
        [ "$to" = "$own" ] && continue
        case $own:$target in
        python:include/*) ;;
        python:*)
            echo "$f:$line: includes $target (python/ is a client of the public API: include/lockstep.h alone)"
            fail=1
            continue
            ;;
        tools:engine/*)
            case " $(echo $TOOL_ONLY) " in
            *" $target "*) ;;
            *)
                echo "$f:$line: includes $target (tools/ uses include/lockstep.h and the tool-only headers listed in tools/check_layers.sh)"
                fail=1
                continue
                ;;
            esac
            ;;
        esac
        other=$(rank "$to")
        if [ -n "$other" ] && [ "$other" -lt "$own_rank" ]; then continue; fi
        echo "$f:$line: includes $target (layer $own may not include layer ${to:-outside the layers})"
        fail=1
    done <<EOF_INCLUDES
$out
EOF_INCLUDES
done
if [ "$n" -eq 0 ]; then
    echo "check-layers: no sources found under $root" >&2
    exit 2
fi

# The registered names: tasks from engine/tasks/, models from engine/models/.
names_in() {
    find "$1" -name '*.c' -exec sed -n 's/^[[:space:]]*\.name[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' {} + |
        LC_ALL=C sort -u
}
tasks=$(names_in engine/tasks)
models=$(names_in engine/models)
# name_check FOLDER WHAT NAMES: a string literal equal to one of NAMES.
name_check() {
    for name in $3; do
        hits=$(find "$1" -name '*.[ch]' -exec grep -n -F "\"$name\"" {} + 2>/dev/null) || true
        [ -n "$hits" ] || continue
        echo "$hits" | while IFS= read -r hit; do
            echo "${hit%%:*}:$(echo "$hit" | cut -d: -f2): names the $2 \"$name\" (layer ${1} may not know which $2 is which)"
        done
        fail=1
    done
}
for dir in engine/core engine/num engine/nn engine/data engine/graph; do
    name_check "$dir" task "$tasks"
    name_check "$dir" model "$models"
done
name_check engine/models task "$tasks"
hits=$(grep -rnE '(str|mem)n?cmp\([^;]*(->|\.)task\b' engine/models 2>/dev/null) || true
if [ -n "$hits" ]; then
    echo "$hits" | sed 's/$/  (a model compares the task name: a task passes what differs through its settings)/'
    fail=1
fi

# A function given SIMD clones (LS_SIMD_CLONES, NN_FMA_CLONES, or NN_TWIN's
# NAME_vec) has a name no other file gives one: clang names a static
# function's clone resolver NAME.resolver as a global symbol, so two files
# with the same cloned name do not link (clang -O2 in check-builds).
clones=$(find base reduce record engine -name '*.[ch]' | LC_ALL=C sort | xargs awk '
    FNR == 1 { pending = 0 }
    /#[[:space:]]*define/ { next }
    function named(line,   m) {
        sub(/\(.*/, "", line); n = split(line, w, /[[:space:]*]+/); return w[n]
    }
    /^[[:space:]]*NN_TWIN(_FMA)?\(/ { l = $0; sub(/^[^(]*\(/, "", l); sub(/,.*/, "", l);
        print FILENAME " " l "_vec"; next }
    pending && /\(/ { print FILENAME " " named($0); pending = 0; next }
    /(LS_SIMD_CLONES|NN_FMA_CLONES)/ {
        l = $0; sub(/.*(LS_SIMD_CLONES|NN_FMA_CLONES)/, "", l)
        if (l ~ /\(/) print FILENAME " " named(l); else pending = 1
    }' | LC_ALL=C sort -u)
dups=$(echo "$clones" | awk '{ print $2 }' | LC_ALL=C sort | uniq -d)
for name in $dups; do
    echo "$clones" | awk -v n="$name" '$2 == n { print $1 ": gives SIMD clones to a function named " n \
        ", as another file does (clang makes each clone resolver a global " n ".resolver: rename one)" }'
    fail=1
done

if [ "$fail" -ne 0 ]; then
    exit 1
fi
echo "check-layers: $n files, every include goes to its own layer or a lower one, no model or core file names a task, $(echo "$clones" | wc -l) cloned functions with distinct names"
