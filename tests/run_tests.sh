#!/bin/sh
# run_tests.sh — runs every test program under $BUILD/tests and closes with
# one line "N passed, N failed, N skipped" over all of them. A test case
# counts as passed when cmocka printed its "[       OK ]" line, as skipped on
# "[  SKIPPED ]"; a program that fails without naming a failed case (a crash,
# an abort) counts one failure more.
BUILD=${BUILD:-build}
case $BUILD in
    /*) export LOCKSTEP_BIN="$BUILD/lockstep" ;;
    *) export LOCKSTEP_BIN="$PWD/$BUILD/lockstep" ;;
esac
export LOCKSTEP_ROOT="$PWD"
passed=0
failed=0
skipped=0
log=$(mktemp)
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    start=$(date +%s)
    "$t" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    ok=$(grep -c '^\[       OK \]' "$log")
    run=$(grep -c '^\[ RUN      \]' "$log")
    # cmocka names a skipped case twice (as it runs, and in the closing list).
    skip=$(grep '^\[  SKIPPED \]' "$log" | grep -v 'test(s)' | sort -u | wc -l)
    bad=$((run - ok - skip))
    skipped=$((skipped + skip))
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    passed=$((passed + ok))
    failed=$((failed + bad))
    if [ "$bad" -ne 0 ]; then
        echo "FAIL $name ($ok passed, $bad failed, exit $rc, ${secs}s)"
        sed 's/^/    /' "$log"
    else
        echo "ok   $name ($ok passed, ${secs}s)"
        grep -v -e '^\[' "$log" | sed 's/^/    /'
    fi
done
rm -f "$log"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
