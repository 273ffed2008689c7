#!/bin/sh
# test_cli_docs.sh — the manual page doc/lockstep.1 and the reference
# docs/cli.md are what the command table (tools/commands.c) generates
# (`lockstep help --man`, `--markdown`; `make docs-cli` writes them), every
# command of `lockstep --help` has one section in each, and no command's
# synopsis line is listed twice. Prints [ OK ] / [ FAILED ] per check; exit
# status 1 on any failure.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case $BUILD in
    /*) BIN=${LOCKSTEP_BIN:-$BUILD/lockstep} ;;
    *) BIN=${LOCKSTEP_BIN:-$ROOT/$BUILD/lockstep} ;;
esac

. "$ROOT/tests/cases.sh"

# $1: the flag of `lockstep help`, $2: the file in the tree.
same() {
    "$BIN" help "$1" >"$T/gen" || { say "lockstep help $1: exit $?"; return 1; }
    if ! cmp -s "$T/gen" "$ROOT/$2"; then
        say "$2 differs from \`lockstep help $1\` (run make docs-cli):"
        diff "$ROOT/$2" "$T/gen" | head -n 20 >&2
        return 1
    fi
}

t_man() { same --man doc/lockstep.1; }
t_markdown() { same --markdown docs/cli.md; }

# The commands `lockstep --help` lists: the first word of its command lines.
commands() {
    "$BIN" --help | sed -n 's/^  \([a-z][a-z]*\)  *.*/\1/p'
}

t_every_command() {
    n=0
    for c in $(commands); do
        n=$((n + 1))
        k=$(grep -c "^\.SS \"lockstep $c\"\$" "$ROOT/doc/lockstep.1")
        [ "$k" -eq 1 ] || { say "doc/lockstep.1: $k sections for $c (want 1)"; return 1; }
        k=$(grep -c "^### lockstep $c\$" "$ROOT/docs/cli.md")
        [ "$k" -eq 1 ] || { say "docs/cli.md: $k sections for $c (want 1)"; return 1; }
        "$BIN" "$c" --help >"$T/out" 2>"$T/err" || { say "lockstep $c --help: exit $?"; return 1; }
        grep -q "^usage: lockstep $c" "$T/out" || { say "lockstep $c --help: no usage line"; return 1; }
    done
    [ "$n" -ge 19 ] || { say "lockstep --help lists $n commands"; return 1; }
}

# The synopsis lists each form once, and runs and show each in one line.
t_synopsis_once() {
    sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$ROOT/doc/lockstep.1" | grep '^\\fBlockstep ' | sort | uniq -d >"$T/dup"
    [ ! -s "$T/dup" ] || { say "doc/lockstep.1 SYNOPSIS repeats:"; cat "$T/dup" >&2; return 1; }
    for c in runs show; do
        k=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$ROOT/doc/lockstep.1" | grep -c "^\\\\fBlockstep $c\\\\fR")
        [ "$k" -eq 1 ] || { say "doc/lockstep.1 SYNOPSIS: $k lines for $c (want 1)"; return 1; }
    done
}

# The check can fail: a changed page is caught.
t_detects_change() {
    sed 's/^\.SH EXIT STATUS/.SH EXIT CODES/' "$ROOT/doc/lockstep.1" >"$T/changed"
    "$BIN" help --man >"$T/gen" || return 1
    if cmp -s "$T/gen" "$T/changed"; then
        say "a changed page compares equal"
        return 1
    fi
}

check cli_docs_man_generated t_man
check cli_docs_markdown_generated t_markdown
check cli_docs_every_command t_every_command
check cli_docs_synopsis_once t_synopsis_once
check cli_docs_detects_change t_detects_change
exit $failed
