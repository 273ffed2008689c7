#!/bin/sh
# test_fma_guard.sh — tools/check_fma.sh can fail: a planted file computing
# a*b+c, built for aarch64 with -ffp-contract=fast, holds an fmadd in a
# function whose source calls no fmaf, and the guard must fail naming that
# function; the same file built with -ffp-contract=off (the Makefile's
# pinned flag) must pass, though its other function, which calls fmaf on
# purpose, still holds a fused instruction (the allow-list derived from the
# source lets it through). Needs the aarch64 cross compiler, so it runs in
# `make check-cross` (tools/check_cross.sh) and not in `make test` (the
# Makefile leaves it out of the shell tests).
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
CHECK=$ROOT/tools/check_fma.sh
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
. "$ROOT/tests/cases.sh"

plant() {
    mkdir -p "$T/src"
    cat >"$T/src/planted.c" <<'EOF'
#include <math.h>

float planted_contracted(float a, float b, float c);
float planted_explicit(float a, float b, float c);

float planted_contracted(float a, float b, float c)
{
    return a * b + c;
}

float planted_explicit(float a, float b, float c)
{
    return fmaf(a, b, c);
}
EOF
}

# Builds the plant with contraction $1 into $T/$1.o.
build() {
    plant
    "$CROSS_CC" -std=c11 -O2 -ffp-contract="$1" -c "$T/src/planted.c" -o "$T/$1.o" ||
        { say "$CROSS_CC failed (run make deps-cross)"; return 1; }
}

t_contracted_fails() {
    build fast || return 1
    sh "$CHECK" -s "$T/src" "$T/fast.o" >"$T/out" 2>&1
    rc=$?
    cat "$T/out" >&2
    [ "$rc" -eq 1 ] || { say "guard exit $rc, want 1"; return 1; }
    grep -q 'planted_contracted has 1 fused' "$T/out" || { say "no line naming planted_contracted"; return 1; }
    if grep -q 'planted_explicit' "$T/out"; then say "planted_explicit (an fmaf call) was refused"; return 1; fi
}

t_pinned_passes() {
    build off || return 1
    aarch64-linux-gnu-objdump -d "$T/off.o" | grep -q 'fmadd' ||
        { say "the fmaf call compiled to no fmadd: the allow-list case is not exercised"; return 1; }
    sh "$CHECK" -s "$T/src" "$T/off.o" >"$T/out" 2>&1
    rc=$?
    cat "$T/out" >&2
    [ "$rc" -eq 0 ] || { say "guard exit $rc, want 0"; return 1; }
}

check fma_guard_contracted_fails t_contracted_fails
check fma_guard_pinned_passes t_pinned_passes
exit $failed
