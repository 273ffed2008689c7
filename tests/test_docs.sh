#!/bin/sh
# test_docs.sh — the documentation checks of tools/check_docs.py, first shown
# able to fail on planted files, then run on the real tree:
#   - paths: a planted doc (and a planted C comment) naming a file that does
#     not exist fails, while a path that exists, a glob, a placeholder and a
#     path in a C string pass;
#   - dates: a planted date in prose fails, the same date in a table with a
#     "measured on" column passes;
#   - transcripts: a console session captured from a real short run passes
#     as captured and fails with one hex digit of its trajectory edited;
#   - each of the three checks on the checkout itself.
# Prints cmocka's "[ RUN      ]" / "[       OK ]" / "[  FAILED  ]" lines,
# which tests/run_tests.sh counts. Everything it writes is under one
# mktemp -d.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case $BUILD in
    /*) BIN=${LOCKSTEP_BIN:-$BUILD/lockstep} ;;
    *) BIN=${LOCKSTEP_BIN:-$ROOT/$BUILD/lockstep} ;;
esac
PY=/usr/bin/python3
CHECK=$ROOT/tools/check_docs.py
. "$ROOT/tests/cases.sh"

# docs ARGS...: the checker, its output in $T/out, its exit status echoed.
docs() {
    "$PY" "$CHECK" "$@" >"$T/out" 2>&1
    echo $?
}

# expect_fail WHAT ARGS...: the checker exits 1 and prints a line holding WHAT.
expect_fail() {
    want=$1
    shift
    rc=$(docs "$@")
    if [ "$rc" -ne 1 ] || ! grep -qF -- "$want" "$T/out"; then
        say "check_docs.py $*: exit $rc (want 1) and no line with '$want'; output:"
        cat "$T/out" >&2
        return 1
    fi
}

# expect_pass ARGS...: the checker exits 0.
expect_pass() {
    rc=$(docs "$@")
    if [ "$rc" -ne 0 ]; then
        say "check_docs.py $*: exit $rc (want 0); output:"
        cat "$T/out" >&2
        return 1
    fi
}

t_paths_planted() {
    R=$T/paths
    mkdir -p "$R/docs" "$R/tools" "$R/engine/core" || return 1
    : >"$R/tools/present.sh"
    {
        echo '# Planted'
        echo
        echo 'See tools/present.sh, tests/test_*.c, engine/models/<family>/ and $(BUILD)/tests/x.c.'
        echo 'The missing one: tools/absent_tool.sh, here.'
    } >"$R/docs/planted.md"
    expect_fail "docs/planted.md:4: names tools/absent_tool.sh, which does not exist" \
        --root "$R" paths docs/planted.md || return 1
    [ "$(wc -l <"$T/out")" -eq 1 ] || { say "one offence wanted:"; cat "$T/out" >&2; return 1; }
    {
        echo '/* planted.c — a comment naming engine/core/absent.h. */'
        echo 'static const char *p = "engine/core/also_absent.h";   /* a string, not a comment */'
    } >"$R/engine/core/planted.c"
    expect_fail "engine/core/planted.c:1: names engine/core/absent.h, which does not exist" \
        --root "$R" paths engine/core/planted.c || return 1
    grep -q also_absent "$T/out" && { say "a C string was read as a comment:"; cat "$T/out" >&2; return 1; }
    # A bare .md name is looked for beside the file that names it.
    printf 'See planted.md and NOWHERE.md.\n' >"$R/docs/other.md"
    expect_fail "docs/other.md:1: names NOWHERE.md, which does not exist" --root "$R" paths docs/other.md || return 1
    [ "$(wc -l <"$T/out")" -eq 1 ] || { say "one offence wanted:"; cat "$T/out" >&2; return 1; }
}

t_dates_planted() {
    R=$T/dates
    mkdir -p "$R" || return 1
    {
        echo '# Planted'
        echo
        echo '| machine | samples/s | measured on |'
        echo '|---------|-----------|-------------|'
        echo '| one     | 100       | 2031-01-02 10:11 UTC |'
    } >"$R/README.md"
    expect_pass --root "$R" dates README.md || return 1
    { echo; echo 'It ran at 10:11 UTC.'; } >>"$R/README.md"
    expect_fail "README.md:7: holds a clock time" --root "$R" dates README.md || return 1
    { echo; echo 'Measured on 2031-01-02, a Friday.'; } >>"$R/README.md"
    expect_fail "README.md:9: holds a date" --root "$R" dates README.md || return 1
}

# The planted session: a real run captured, its rate (which varies) shown as "...".
session() {
    mkdir -p "$T/cap" || return 1
    (cd "$T/cap" && "$BIN" train --task teacher --steps 5 --threads 1 --db t.db) >"$T/cap/out" 2>&1 ||
        { say "lockstep train failed:"; cat "$T/cap/out" >&2; return 1; }
    grep -q 'trajectory [0-9a-f]\{16\}' "$T/cap/out" || { say "no trajectory in:"; cat "$T/cap/out" >&2; return 1; }
    R=$T/session
    mkdir -p "$R" || return 1
    {
        echo '# Planted'
        echo
        echo 'A short run (samples/s vary):'
        echo
        echo '```console'
        echo '$ lockstep train --task teacher --steps 5 --threads 1 \'
        echo '    --db t.db'
        sed 's/[0-9][0-9]* samples\/s/... samples\/s/' "$T/cap/out"
        echo '$ lockstep runs --db t.db >/dev/null; echo $?'
        echo '0'
        echo '```'
    } >"$R/README.md"
}

t_transcript_as_captured() {
    session || return 1
    expect_pass --root "$R" --bin "$BIN" transcripts README.md
}

t_transcript_edited_hash() {
    session || return 1
    # One hex digit of the trajectory changed (0 <-> 1 in its last place).
    sed 's/\(trajectory [0-9a-f]\{15\}\)0$/\1X/; s/\(trajectory [0-9a-f]\{15\}\)[1-9a-f]$/\10/; s/X$/1/' \
        "$R/README.md" >"$R/edited" || return 1
    cmp -s "$R/README.md" "$R/edited" && { say "the trajectory was not edited"; return 1; }
    mv "$R/edited" "$R/README.md" || return 1
    expect_fail "README.md:5: the console block's output differs" --root "$R" --bin "$BIN" transcripts README.md ||
        return 1
    grep -q '^+.*trajectory' "$T/out" && grep -q '^-.*trajectory' "$T/out" ||
        { say "the diff does not show the trajectory line:"; cat "$T/out" >&2; return 1; }
}

t_real() {
    rc=$(docs --root "$ROOT" --bin "$BIN" "$1")
    cat "$T/out" >&2
    [ "$rc" -eq 0 ]
}
t_paths_real() { t_real paths; }
t_dates_real() { t_real dates; }
t_transcripts_real() { t_real transcripts; }

[ -x "$PY" ] || { echo "[ RUN      ] docs"; echo "[  FAILED  ] docs: no $PY (Debian package python3)"; exit 1; }
check docs_paths_planted_fail t_paths_planted
check docs_dates_planted_fail t_dates_planted
check docs_transcript_as_captured t_transcript_as_captured
check docs_transcript_edited_hash_fails t_transcript_edited_hash
check docs_paths_real_tree t_paths_real
check docs_dates_real_tree t_dates_real
check docs_transcripts_real_tree t_transcripts_real
exit $failed
