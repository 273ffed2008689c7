#!/bin/sh
# test_flags_cli.sh — the one flag parser (tools/flags.h) seen from the
# command line: --k v and --k=v read alike, "--" ends the flags, the last of
# a repeated flag wins, and every bad flag is one line on stderr naming it,
# exit status 2, nothing on stdout: an unknown one with the nearest flag of
# the command's own list (or of the config's keys) suggested. Nothing here
# trains or writes a database.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case $BUILD in
    /*) BIN=${LOCKSTEP_BIN:-$BUILD/lockstep} ;;
    *) BIN=${LOCKSTEP_BIN:-$ROOT/$BUILD/lockstep} ;;
esac
KARATE=$ROOT/data/graphs/karate.edgelist

. "$ROOT/tests/cases.sh"
# The cases run in the scratch folder: what they write stays there.
cd "$T" || exit 1

# expect_bad TEXT ARGS...: exit 2, stdout empty, one stderr line holding TEXT.
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

t_suggest() {
    expect_bad "--stepz: unknown flag (did you mean --steps?)" train --stepz 3 || return 1
    expect_bad "--circuits: unknown flag (did you mean --circuit?)" export 1 --circuits || return 1
    expect_bad "--jsn: unknown flag (did you mean --json?)" runs --jsn || return 1
    expect_bad "--lrr: unknown flag (did you mean --lr?)" train --lrr 0.1 || return 1
    expect_bad "--nodecap: unknown flag (did you mean --node-cap?)" graph ged a b --nodecap 3 || return 1
    expect_bad "--certificat: unknown flag (did you mean --certificate?)" audit 1 --certificat c.json || return 1
    # Nothing near: no guess.
    expect_bad "--zzzzzzzz: unknown flag" train --zzzzzzzz || return 1
    if grep -q "did you mean" "$T/err"; then
        say "a suggestion for --zzzzzzzz"
        return 1
    fi
    # Another model's setting says whose it is.
    expect_bad "a setting of model mlp" train --model logic --hidden 8 || return 1
}

t_values() {
    expect_bad "--steps: needs a value" train --steps || return 1
    expect_bad "--db: needs a file name" show 1 --db || return 1
    expect_bad "--db: needs a file name" show 1 --db= || return 1
    expect_bad "--circuit: takes no value" export 1 --circuit=1 || return 1
    expect_bad "-o: needs a file name" render 1 -o || return 1
    expect_bad "--steps: 'x' is not an integer" train --steps=x || return 1
}

# --k v and --k=v give the same answer; a repeated flag takes its last value.
t_forms() {
    "$BIN" runs --db "$T/none.db" 2>"$T/e1" >/dev/null
    "$BIN" runs --db="$T/none.db" 2>"$T/e2" >/dev/null
    cmp -s "$T/e1" "$T/e2" || { say "--db v and --db=v differ:"; cat "$T/e1" "$T/e2" >&2; return 1; }
    grep -qF "$T/none.db" "$T/e1" || { say "runs --db: the file is not named:"; cat "$T/e1" >&2; return 1; }
    "$BIN" runs --db "$T/first.db" --db "$T/last.db" 2>"$T/e3" >/dev/null
    grep -qF "$T/last.db" "$T/e3" && ! grep -qF "$T/first.db" "$T/e3" ||
        { say "runs --db A --db B: not the last one:"; cat "$T/e3" >&2; return 1; }
    [ ! -e "$T/none.db" ] && [ ! -e "$T/last.db" ] || { say "a reader created a database"; return 1; }
}

# After "--" everything is an argument, even what looks like a flag.
t_double_dash() {
    n1=$("$BIN" graph cliques -k 3 --threads 1 -- "$KARATE") || { say "graph cliques ... -- FILE failed"; return 1; }
    n2=$("$BIN" graph cliques "$KARATE" --threads=1 --k=3) || { say "graph cliques --k=3 failed"; return 1; }
    [ "$n1" = "$n2" ] || { say "'$n1' and '$n2' differ"; return 1; }
    expect_bad "'-k': one graph FILE only" graph cliques "$KARATE" -- -k 3 || return 1
}

# Every command refuses an unknown flag by name, and prints its usage for --help.
t_every_command() {
    for c in train resume export predict render runs show verify report audit reproduce import rm rename \
        equiv bench sweep help "golden check" "graph cliques" "graph ged"; do
        # shellcheck disable=SC2086
        expect_bad "--no-such-flag-here" $c --no-such-flag-here || return 1
        # shellcheck disable=SC2086
        "$BIN" $c --help >"$T/out" 2>"$T/err" || { say "lockstep $c --help: exit $?"; return 1; }
        grep -q "^usage: lockstep" "$T/out" || { say "lockstep $c --help: no usage line"; return 1; }
    done
}

check flags_suggest t_suggest
check flags_values t_values
check flags_forms t_forms
check flags_double_dash t_double_dash
check flags_every_command t_every_command
exit $failed
