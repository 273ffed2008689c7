#!/bin/sh
# test_graph_cli.sh — `lockstep graph cliques|ged` as a script sees it: the
# answers on stdout (the count alone; one `lower L exact E upper U` line a
# pair), the same bytes at 1, 2, 3 and 8 threads, --help on each, and bad
# input (files, flags, values) exiting 2 with one line on stderr naming the
# file and line. Expected counts are the oracles of docs/graphs.md, not this
# program's output. Prints cmocka's "[ RUN      ]" / "[       OK ]" /
# "[  FAILED  ]" lines, which run_tests.sh counts.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case $BUILD in
    /*) BIN=${LOCKSTEP_BIN:-$BUILD/lockstep} ;;
    *) BIN=${LOCKSTEP_BIN:-$ROOT/$BUILD/lockstep} ;;
esac
ATLAS=/usr/lib/python3/dist-packages/networkx/generators/atlas.dat.gz
KARATE=$ROOT/data/graphs/karate.edgelist
LESMIS=$ROOT/data/graphs/lesmis.edgelist

. "$ROOT/tests/cases.sh"

# expect_out WANT CMD...: exit 0, stdout exactly WANT, stderr empty.
expect_out() {
    want=$1
    shift
    "$BIN" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    got=$(cat "$T/out")
    if [ "$rc" -ne 0 ] || [ "$got" != "$want" ] || [ -s "$T/err" ]; then
        say "lockstep $*: exit $rc, stdout '$got' (want '$want'), stderr: $(cat "$T/err")"
        return 1
    fi
}

# expect_bad PATTERN CMD...: exit 2, nothing on stdout, one line on stderr
# containing PATTERN (grep -F).
expect_bad() {
    pat=$1
    shift
    "$BIN" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    lines=$(wc -l <"$T/err")
    if [ "$rc" -ne 2 ] || [ -s "$T/out" ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$pat" "$T/err"; then
        say "lockstep $*: exit $rc (want 2), $lines stderr lines (want 1, naming '$pat'):"
        cat "$T/err" >&2
        return 1
    fi
}

t_counts() {
    expect_out 45 graph cliques "$KARATE" -k 3 || return 1
    expect_out 11 graph cliques "$KARATE" -k 4 --count || return 1
    expect_out 2 graph cliques "$KARATE" -k 5 --threads 3 || return 1
    expect_out 0 graph cliques "$KARATE" -k 6 --threads 8 || return 1
    for kw in 3:467 4:639 5:644 6:476 7:252 8:91 9:20 10:2; do
        expect_out "${kw#*:}" graph cliques "$LESMIS" -k "${kw%:*}" --threads 2 || return 1
    done
}

t_list_threads() {
    "$BIN" graph cliques "$LESMIS" -k 4 --list --threads 1 >"$T/l1" || return 1
    [ "$(wc -l <"$T/l1")" -eq 639 ] || { say "639 lines wanted"; return 1; }
    for t in 2 3 8; do
        "$BIN" graph cliques "$LESMIS" -k 4 --list --threads $t >"$T/lt" || return 1
        cmp "$T/l1" "$T/lt" || { say "--list at $t threads differs"; return 1; }
    done
    "$BIN" graph cliques "$LESMIS" -k 4 --list --max 10 --threads 3 >"$T/l10" || return 1
    head -n 10 "$T/l1" | cmp - "$T/l10" || { say "--max 10 is not the first 10 lines"; return 1; }
    # Each line: names sorted in byte order (node ids are the names' ranks).
    while read -r a b c d; do
        [ "$(printf '%s\n%s\n%s\n%s\n' "$a" "$b" "$c" "$d" | LC_ALL=C sort -c 2>&1)" = "" ] ||
            { say "not sorted: $a $b $c $d"; return 1; }
    done <"$T/l10"
}

t_ged() {
    printf 'GRAPH\nNODES 4\n0 1\n1 2\n2 3\n3 0\n' >"$T/c4.txt"
    printf 'GRAPH\nNODES 4\n0 1\n0 2\n0 3\n1 2\n1 3\n2 3\n' >"$T/k4.txt"
    printf 'GRAPH\nNODES 3\n0 1\n1 2\n0 2\nGRAPH\nNODES 1\n' >"$T/two.txt"
    expect_out "lower 2 exact 2 upper 2" graph ged "$T/c4.txt" "$T/k4.txt" || return 1
    expect_out "lower 5 exact 5 upper 5" graph ged "$T/two.txt:0" "$T/two.txt:1" --threads 2 || return 1
    expect_out "lower 2 upper 2" graph ged "$T/c4.txt" "$T/k4.txt" --node-cap 3 || return 1
    # Costs: two edge insertions at 3 each.
    expect_out "lower 6 exact 6 upper 6" graph ged "$T/c4.txt" "$T/k4.txt" --costs edge-ins=3 || return 1
    # A missing Atlas is a machine to fix, not a check to pass over.
    [ -r "$ATLAS" ] || { say "$ATLAS cannot be read: install the Debian package python3-networkx (make deps)"; return 1; }
    : >"$T/pairs"
    i=0
    while [ $i -lt 60 ]; do
        echo "$ATLAS:$((209 + i * 17)) $ATLAS:$((1252 - i * 13))  # pair $i" >>"$T/pairs"
        i=$((i + 1))
    done
    "$BIN" graph ged --pairs "$T/pairs" --threads 1 >"$T/g1" 2>"$T/err" || return 1
    [ "$(wc -l <"$T/g1")" -eq 60 ] || { say "60 lines wanted"; return 1; }
    for t in 2 3 8; do
        "$BIN" graph ged --pairs "$T/pairs" --threads $t >"$T/gt" || return 1
        cmp "$T/g1" "$T/gt" || { say "--pairs at $t threads differs"; return 1; }
    done
    grep -qv '^lower [0-9]* exact [0-9]* upper [0-9]*$' "$T/g1" && { say "a line not 'lower L exact E upper U'"; return 1; }
    return 0
}

t_help() {
    for c in "graph --help" "graph cliques --help" "graph ged --help"; do
        # shellcheck disable=SC2086
        "$BIN" $c >"$T/out" 2>"$T/err" || { say "$c: exit $?"; return 1; }
        grep -q '^usage: lockstep graph' "$T/out" || { say "$c: no usage line"; return 1; }
    done
    "$BIN" --help | grep -q '^  graph ' || { say "lockstep --help does not list graph"; return 1; }
}

t_bad() {
    printf '0 1\n1 2\n2 x\n' >"$T/bad.el"
    expect_bad "$T/bad.el:3: field 2: 'x' is not a node id" graph cliques "$T/bad.el" -k 3 || return 1
    printf '0 1 2 3\n' >"$T/bad2.el"
    expect_bad "$T/bad2.el:1: field 4" graph cliques "$T/bad2.el" -k 3 --list || return 1
    printf 'GRAPH\nNODES 2\n0 5\n' >"$T/bad.txt"
    expect_bad "$T/bad.txt:3: field 2: '5' is not a node id" graph ged "$T/bad.txt" "$T/bad.txt" || return 1
    printf 'GRAPH\nNODES 2\n0 1\n' >"$T/ok.txt"
    printf '%s %s\n%s\n' "$T/ok.txt" "$T/ok.txt" "$T/ok.txt" >"$T/bad.pairs"
    expect_bad "$T/bad.pairs:2: field 2: missing" graph ged --pairs "$T/bad.pairs" || return 1
    printf '%s %s\n# fine\n%s %s\n' "$T/ok.txt" "$T/ok.txt" "$T/ok.txt" "$T/bad.txt" >"$T/bad2.pairs"
    expect_bad "$T/bad2.pairs:3: field 2: $T/bad.txt:3: field 2" graph ged --pairs "$T/bad2.pairs" || return 1
    printf '%s %s:4\n' "$T/ok.txt" "$T/ok.txt" >"$T/bad3.pairs"
    expect_bad "$T/bad3.pairs:1: field 2:" graph ged --pairs "$T/bad3.pairs" || return 1
    expect_bad "$T/missing.el" graph cliques "$T/missing.el" -k 3 || return 1
    expect_bad "is a directory" graph cliques "$T" -k 3 || return 1
    expect_bad "-k: '0' is not an integer in 1..64" graph cliques "$KARATE" -k 0 || return 1
    expect_bad "missing -k" graph cliques "$KARATE" || return 1
    expect_bad "--threads" graph cliques "$KARATE" -k 3 --threads 0 || return 1
    expect_bad "--max goes with --list" graph cliques "$KARATE" -k 3 --max 3 || return 1
    expect_bad "--bogus: unknown flag" graph cliques "$KARATE" -k 3 --bogus || return 1
    expect_bad "--costs: unknown cost 'x'" graph ged "$T/ok.txt" "$T/ok.txt" --costs x=1 || return 1
    expect_bad "needs FILE_A FILE_B" graph ged "$T/ok.txt" || return 1
    expect_bad "'frobnicate' is not an operation" graph frobnicate || return 1
    printf 'GRAPH\nNODES 2\nDIRECTED\n0 1\n' >"$T/dir.txt"
    expect_bad "directed" graph cliques "$T/dir.txt" -k 2 || return 1
    expect_bad "directed" graph ged "$T/dir.txt" "$T/ok.txt" || return 1
}

check graph_cli_counts t_counts
check graph_cli_list_threads t_list_threads
check graph_cli_ged t_ged
check graph_cli_help t_help
check graph_cli_bad_input t_bad
exit $failed
