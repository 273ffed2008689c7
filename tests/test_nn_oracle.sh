#!/bin/sh
# test_nn_oracle.sh — every layer of engine/nn/ against PyTorch autograd in
# float64: tests/nn_oracle.c (built as $BUILD/tests/nn_oracle) runs each
# layer's forward and backward on random inputs and writes them as .npy;
# tests/nn_oracle.py recomputes outputs and gradients with torch and
# compares them at float32 rounding (its header states the bound). Its
# per-layer "[       OK ]" / "[  FAILED  ]" lines are what tests/run_tests.sh
# counts. Without PyTorch (Debian's python3-torch, `make deps`) the test
# FAILS naming the package: it never turns into a pass or a skip.
# A last case shows the oracle can fail: one gradient file changed by a
# relative 1e-3 must make the script exit 1.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
. "$ROOT/tests/cases.sh"
# Debian's interpreter, where python3-torch installs (not a PATH's pyenv).
PY=/usr/bin/python3
DRIVER=$BUILD/tests/nn_oracle

if ! [ -x "$PY" ] || ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "[ RUN      ] nn_oracle_torch"
    echo "[  FAILED  ] nn_oracle_torch"
    echo "    PyTorch is missing from $PY: install the Debian package python3-torch (make deps)"
    exit 1
fi
if ! [ -x "$DRIVER" ]; then
    echo "[ RUN      ] nn_oracle_driver"
    echo "[  FAILED  ] nn_oracle_driver"
    echo "    $DRIVER is missing: build it with make"
    exit 1
fi

mkdir -p "$T/cases"
if ! "$DRIVER" "$T/cases" >"$T/driver.log" 2>&1; then
    echo "[ RUN      ] nn_oracle_driver"
    echo "[  FAILED  ] nn_oracle_driver"
    sed 's/^/    /' "$T/driver.log"
    exit 1
fi
"$PY" "$ROOT/tests/nn_oracle.py" "$T/cases" || failed=1

# The oracle can fail: dense_wide's weight gradient off by a relative 1e-3.
plant() {
    cp -R "$T/cases" "$T/planted" &&
        "$PY" - "$T/planted/dense_wide.dw.npy" <<'PYEOF' || return 1
import sys, numpy as np
a = np.load(sys.argv[1]); a[7] *= 1.001; np.save(sys.argv[1], a)
PYEOF
    "$PY" "$ROOT/tests/nn_oracle.py" "$T/planted" >"$T/planted.out" 2>&1
    st=$?
    [ "$st" -eq 1 ] && grep -q 'FAILED  \] dense_wide' "$T/planted.out" &&
        [ "$(grep -c 'FAILED' "$T/planted.out")" -eq 1 ] || { cat "$T/planted.out"; return 1; }
}
check nn_oracle_can_fail plant
exit $failed
