#!/bin/sh
# run_tests.sh — runs every test program under $BUILD/tests and closes with
# one line "N passed, N failed, N skipped" over all of them. A test case
# counts as passed when its program printed cmocka's "[       OK ]" line, as
# skipped on "[  SKIPPED ]"; the shell tests (tests/test_*.sh) print the same
# lines. A program that fails without naming a failed case (a crash, an
# abort) counts one failure more, and so does a program that reports no case
# at all: a test that says nothing proves nothing.
#
# A skip is a failure unless it is on the list below: a skipped case must not
# hide a broken feature or a machine that lacks a package `make deps`
# installs (networkx, Open MPI, a subcommand whose --help fails).
BUILD=${BUILD:-build}
case $BUILD in
    /*) export LOCKSTEP_BIN="$BUILD/lockstep" ;;
    *) export LOCKSTEP_BIN="$PWD/$BUILD/lockstep" ;;
esac
export LOCKSTEP_ROOT="$PWD"

# The skips that are expected, one shell pattern a line, matched against
# "PROGRAM: TEXT" where TEXT is what follows "[  SKIPPED ] " on the skip line.
#   test_mpi under the sanitizers (check-asan, check-tsan): Open MPI's own
#   allocations and threads are not ours to check, so test_mpi.sh does not
#   run there and says why on its skip line.
EXPECTED_SKIPS='
test_mpi: mpi: not in sanitizer builds*
'

# 0 when the skip "$1" (PROGRAM: TEXT) is on the list.
expected_skip() {
    echo "$EXPECTED_SKIPS" | while IFS= read -r pat; do
        [ -n "$pat" ] || continue
        # shellcheck disable=SC2254
        case $1 in $pat) echo yes; break ;; esac
    done | grep -q yes
}

passed=0
failed=0
skipped=0
log=$(mktemp)
skips=$(mktemp)
# ONLY="test_a test_b ...": just those programs (check-tsan's threaded set).
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    if [ -n "${ONLY:-}" ]; then
        case " $ONLY " in *" $name "*) ;; *) continue ;; esac
    fi
    start=$(date +%s)
    "$t" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    ok=$(grep -c '^\[       OK \]' "$log")
    run=$(grep -c '^\[ RUN      \]' "$log")
    # cmocka names a skipped case twice (as it runs, and in the closing list).
    grep '^\[  SKIPPED \]' "$log" | grep -v 'test(s)' | sort -u | sed 's/^\[  SKIPPED \] //' >"$skips"
    skip=$(wc -l <"$skips")
    bad=$((run - ok - skip))
    unexpected=""
    while IFS= read -r s; do
        if expected_skip "$name: $s"; then
            skipped=$((skipped + 1))
        else
            unexpected="$unexpected
    unexpected skip (not in run_tests.sh's EXPECTED_SKIPS): $s"
            bad=$((bad + 1))
        fi
    done <"$skips"
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    if [ "$run" -eq 0 ] && [ "$bad" -eq 0 ]; then
        unexpected="
    no case reported (no \"[ RUN      ]\" line)"
        bad=1
    fi
    passed=$((passed + ok))
    failed=$((failed + bad))
    if [ "$bad" -ne 0 ]; then
        echo "FAIL $name ($ok passed, $bad failed, exit $rc, ${secs}s)$unexpected"
        sed 's/^/    /' "$log"
    else
        if [ "$skip" -ne 0 ]; then
            echo "ok   $name ($ok passed, $skip skipped as expected, ${secs}s)"
        else
            echo "ok   $name ($ok passed, ${secs}s)"
        fi
        grep -v -e '^\[' "$log" | sed 's/^/    /'
    fi
done
rm -f "$log" "$skips"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
