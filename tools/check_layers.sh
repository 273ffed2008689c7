#!/bin/sh
# check_layers.sh — `make check-layers`: the folders are layers, and a file
# may include only headers of its own folder or of a layer strictly below
# it. Bottom to top:
#
#   include/ (lockstep.h) < base/ < reduce/, record/ < engine/ < tools/
#
# reduce/ (worker pool, canonical tree) and record/ (hashes, SQLite record,
# checkpoints, golden files) sit side by side and may not include each other:
# the tree must not learn about the record, nor the record about threads.
# Only `#include "..."` lines are read; system headers (<...>) are free.
# A name without a folder ("hash.h", or "buildinfo.h" from -I$(BUILD)) is
# the file's own folder. One line per offence, then exit 1.
# Usage: sh tools/check_layers.sh [ROOT]   (default: the checkout above this script)
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2

# Layer rank of a folder; reduce and record share one.
rank() {
    case $1 in
    include) echo 0 ;;
    base) echo 1 ;;
    reduce | record) echo 2 ;;
    engine) echo 3 ;;
    tools) echo 4 ;;
    *) echo "" ;;
    esac
}

fail=0
n=0
for f in include/*.[ch] base/*.[ch] reduce/*.[ch] record/*.[ch] engine/*.[ch] tools/*.[ch]; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    dir=${f%%/*}
    own=$(rank "$dir")
    # "line:target" for every quoted include (spaces allowed around '#').
    out=$(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
        sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/') || true
    [ -n "$out" ] || continue
    # A here-document, not a pipe, so `fail` is set in this shell.
    while IFS=: read -r line target; do
        # The folder the include resolves to, from the file's own folder.
        case $target in
        ../*/*) to=${target#../}; to=${to%%/*} ;;
        */*) to="$dir/${target%%/*}" ;;   # a subfolder: not a layer
        ../*) to=".." ;;
        *) to=$dir ;;
        esac
        if [ "$to" = "$dir" ]; then continue; fi
        other=$(rank "$to")
        if [ -n "$other" ] && [ "$other" -lt "$own" ]; then continue; fi
        if [ -z "$other" ]; then
            echo "$f:$line: includes $target (layer $dir may not include $to, which is not a layer)"
        else
            echo "$f:$line: includes $target (layer $dir may not include layer $to)"
        fi
        fail=1
    done <<EOF_INCLUDES
$out
EOF_INCLUDES
done
if [ "$n" -eq 0 ]; then
    echo "check-layers: no sources found under $root" >&2
    exit 2
fi
if [ "$fail" -ne 0 ]; then
    exit 1
fi
echo "check-layers: $n files, every include goes to its own folder or a lower layer"
