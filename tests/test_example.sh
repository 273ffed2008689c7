#!/bin/sh
# test_example.sh — the installed library as an outside program sees it:
# `make install` into a temporary DESTDIR, examples/softmax.c built against
# the installed files alone through pkg-config (shared, and static), run (its
# runs at 1, 2, 3 and 8 threads must be bit-identical), then `make uninstall`
# must leave no file behind and remove no one else's.
#
# tests/run_tests.sh runs it as $BUILD/tests/test_example, a wrapper the
# Makefile writes with that build's CC, OPT, CFLAGS and LDFLAGS (so the make
# called here rebuilds nothing) and its -fsanitize flags (which the example
# then carries too). It prints cmocka's "[ RUN      ]" / "[       OK ]" /
# "[  FAILED  ]" lines, which run_tests.sh counts; the first failed check
# shows its log and ends the script with exit 1. Needs: make, pkg-config,
# readelf and nm (binutils). Everything it writes is under one mktemp -d.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
CC=${LS_TEST_CC:-cc}
SAN=${LS_TEST_SANITIZE:-}
PREFIX=/usr/local
# This script may itself run under make (make test): what that make was told
# reaches us through MAKEFLAGS, and must not leak into the makes below, which
# get their settings explicitly.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
D=$T/stage
L=$D$PREFIX/lib
INC=$D$PREFIX/include
log=$T/log
mkdir -p "$T/ex"

# The make of the repository, with this build's settings.
mk() {
    set -- -C "$ROOT" --no-print-directory BUILD="$BUILD" PREFIX="$PREFIX" DESTDIR="$D" "$@"
    [ -n "${LS_TEST_CC+x}" ] && set -- "$@" CC="$LS_TEST_CC"
    [ -n "${LS_TEST_OPT+x}" ] && set -- "$@" OPT="$LS_TEST_OPT"
    [ -n "${LS_TEST_CFLAGS+x}" ] && set -- "$@" CFLAGS="$LS_TEST_CFLAGS"
    [ -n "${LS_TEST_LDFLAGS+x}" ] && set -- "$@" LDFLAGS="$LS_TEST_LDFLAGS"
    flock "${LS_MAKE_LOCK:-$T/make.lock}" make "$@"   # tests/run_tests.sh runs programs side by side
}

# pkg-config as a user of this staged installation would run it.
pc() {
    PKG_CONFIG_PATH=$L/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D pkg-config "$@"
}

# check NAME FUNCTION: run the function with its output in $log.
check() {
    echo "[ RUN      ] $1"
    if "$2" >"$log" 2>&1; then
        echo "[       OK ] $1"
    else
        echo "[  FAILED  ] $1"
        sed 's/^/    /' "$log"
        exit 1
    fi
}

say() { echo "$*" >&2; }

# ---- the checks, in order; each may use what an earlier one made ----------

t_install() {
    mk install
}

# The version is the header's, as the Makefile reads it.
version_part() {
    sed -n "s/^#define LS_VERSION_$1[[:space:]][[:space:]]*\\([0-9][0-9]*\\).*/\\1/p" "$INC/lockstep.h"
}

t_installed_files() {
    V=$(version_part MAJOR).$(version_part MINOR).$(version_part PATCH)
    MAJOR=$(version_part MAJOR)
    for f in bin/lockstep lib/liblockstep.a lib/liblockstep.so.$V lib/pkgconfig/lockstep.pc \
        include/lockstep.h share/man/man1/lockstep.1; do
        [ -f "$D$PREFIX/$f" ] || { say "missing $PREFIX/$f"; return 1; }
    done
    [ -x "$D$PREFIX/bin/lockstep" ] || { say "bin/lockstep is not executable"; return 1; }
    [ "$(readlink "$L/liblockstep.so.$MAJOR")" = "liblockstep.so.$V" ] ||
        { say "lib/liblockstep.so.$MAJOR: not a link to liblockstep.so.$V"; ls -l "$L" >&2; return 1; }
    [ "$(readlink "$L/liblockstep.so")" = "liblockstep.so.$MAJOR" ] ||
        { say "lib/liblockstep.so: not a link to liblockstep.so.$MAJOR"; ls -l "$L" >&2; return 1; }
    cmp "$ROOT/include/lockstep.h" "$INC/lockstep.h" || return 1
    got=$("$D$PREFIX/bin/lockstep" --version) || return 1
    [ "$got" = "lockstep $V" ] || { say "bin/lockstep --version: '$got', not 'lockstep $V'"; return 1; }
}

t_soname() {
    readelf -d "$L/liblockstep.so.$V" | tee "$T/dyn" | grep -F "Library soname: [liblockstep.so.$MAJOR]" ||
        { cat "$T/dyn"; return 1; }
}

# The .so exports exactly the ls_* API: every function the header declares,
# and nothing that is not ls_*.
t_exports() {
    nm -D --defined-only "$L/liblockstep.so.$V" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$T/exported"
    sed -n 's/^[a-z][a-z0-9_ ]*[ *]\(ls_[a-z0-9_]*\)(.*/\1/p' "$INC/lockstep.h" | sort -u >"$T/declared"
    [ -s "$T/declared" ] || { say "no function declarations found in lockstep.h"; return 1; }
    missing=$(comm -23 "$T/declared" "$T/exported")
    extra=$(grep -v '^ls_' "$T/exported")
    [ -z "$missing" ] || say "declared in lockstep.h, not exported by the .so:" $missing
    [ -z "$extra" ] || say "exported by the .so but not ls_*:" $extra
    [ -z "$missing" ] && [ -z "$extra" ]
}

t_pkg_config() {
    [ "$(pc --modversion lockstep)" = "$V" ] || { say "modversion: $(pc --modversion lockstep) != $V"; return 1; }
    pc --cflags lockstep | grep -F -- "-I$INC" || { say "cflags: $(pc --cflags lockstep)"; return 1; }
    pc --libs lockstep | grep -F -- "-L$L" | grep -F -- "-llockstep" || { say "libs: $(pc --libs lockstep)"; return 1; }
}

# Shared: the way examples/README.md says, through examples/Makefile, the
# loader pointed at the staged library by an rpath. -Werror: the public
# header and the example must compile without a warning.
t_build_shared() {
    PKG_CONFIG_PATH=$L/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D \
        make -C "$T/ex" -f "$ROOT/examples/Makefile" CC="$CC" CFLAGS="-O2 -Werror $SAN" RPATH="$L" softmax ||
        return 1
    readelf -d "$T/ex/softmax" | grep -F "Shared library: [liblockstep.so.$MAJOR]" ||
        { say "softmax does not load liblockstep.so.$MAJOR"; readelf -d "$T/ex/softmax"; return 1; }
}

# Static: liblockstep.a and what pkg-config --static says it needs.
t_build_static() {
    libs=$(pc --static --libs lockstep) || return 1
    libs=$(echo "$libs" | sed "s|-llockstep|$L/liblockstep.a|")
    # shellcheck disable=SC2046,SC2086
    "$CC" -std=c11 -ffp-contract=off -O2 -Wall -Wextra -Werror $SAN $(pc --cflags lockstep) \
        "$ROOT/examples/softmax.c" -o "$T/ex/softmax-static" $libs || return 1
    if readelf -d "$T/ex/softmax-static" | grep -F 'liblockstep.so'; then
        say "softmax-static still loads a liblockstep.so"
        return 1
    fi
}

t_run_shared() {
    "$T/ex/softmax" "$T/shared.db" >"$T/out-shared" 2>&1
    rc=$?
    cat "$T/out-shared"
    [ "$rc" -eq 0 ] || { say "softmax exited $rc"; return 1; }
    [ "$(grep -c '^threads ' "$T/out-shared")" -eq 4 ] || { say "not four runs"; return 1; }
    [ "$(grep -c '^verify .*bit-identical' "$T/out-shared")" -eq 3 ] || { say "not three verdicts"; return 1; }
}

# The lockstep binary has not the example's task ('blobs', registered by
# the program): a record-only audit still proves the record (the chain and
# the checkpoint need no task code) and says the config was not read back;
# a full audit and a certificate need the task: exit 2, one line naming
# it, and no verdict stored (the audits list holds the record-only one).
t_audit_foreign_task() {
    bin=${LOCKSTEP_BIN:-$ROOT/$BUILD/lockstep}
    "$bin" audit example-t1 --db "$T/shared.db" --record-only >"$T/audit-ro" 2>&1 ||
        { cat "$T/audit-ro"; say "record-only audit of a foreign task's run failed"; return 1; }
    grep -q "^audit: run 1 'example-t1' proved: record only: steps 0\.\.50 chained.*not read back.*task 'blobs'" \
        "$T/audit-ro" || { cat "$T/audit-ro"; say "record-only audit: unexpected output"; return 1; }
    for extra in "" "--record-only --certificate $T/c.json"; do
        # shellcheck disable=SC2086
        "$bin" audit example-t1 --db "$T/shared.db" $extra >"$T/audit-out" 2>"$T/audit-err"
        rc=$?
        [ "$rc" -eq 2 ] || { cat "$T/audit-out" "$T/audit-err"; say "audit $extra: exit $rc, want 2"; return 1; }
        [ ! -s "$T/audit-out" ] && [ "$(wc -l <"$T/audit-err")" -eq 1 ] && grep -q "task 'blobs'" "$T/audit-err" ||
            { cat "$T/audit-out" "$T/audit-err"; say "audit $extra: not one line naming the task"; return 1; }
    done
    [ ! -e "$T/c.json" ] || { say "a certificate was written"; return 1; }
    n=$("$bin" show example-t1 --db "$T/shared.db" | sed -n '/^audits:/,$p' | grep -c '^  [0-9T:.-]*Z  ')
    [ "$n" -eq 1 ] || { "$bin" show example-t1 --db "$T/shared.db"; say "$n audit verdicts, want 1"; return 1; }
}

# The same program linked statically computes the same bits: its output,
# from a fresh database, is the shared one's line for line.
t_run_static() {
    "$T/ex/softmax-static" "$T/static.db" >"$T/out-static" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/out-static"; say "softmax-static exited $rc"; return 1; }
    diff "$T/out-shared" "$T/out-static"
}

# Uninstall removes every file and link install wrote, and only those: a
# file of someone else's in the same folders stays.
t_uninstall() {
    echo keep >"$L/someone-elses.txt"
    mk uninstall || return 1
    [ -f "$L/someone-elses.txt" ] || { say "uninstall removed lib/someone-elses.txt"; return 1; }
    rm -f "$L/someone-elses.txt"
    left=$(find "$D" -type f -o -type l)
    [ -z "$left" ] || { say "left after uninstall:"; say "$left"; return 1; }
}

check install t_install
check installed_files t_installed_files
check soname t_soname
check exports t_exports
check pkg_config t_pkg_config
check example_build_shared t_build_shared
check example_build_static t_build_static
check example_run_shared t_run_shared
sed 's/^/example: /' "$T/out-shared"
check example_audit_foreign_task t_audit_foreign_task
check example_run_static t_run_static
check uninstall t_uninstall
exit 0
