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
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
# The programs run in the background, where a shell without job control
# ignores SIGINT: an interrupt stops the whole process group, them too.
trap 'trap - INT TERM; kill -TERM 0; exit 130' INT TERM
skips=$work/skips

# LS_JOBS programs run at once (the Makefile passes one per core; 1 when
# unset), each into its own log. The results are read in the order the
# programs start, each as soon as it ends, so the lines are the same
# whatever LS_JOBS is, the seconds apart. The longest programs (under some
# build) start first, so the last ones to end are short. The programs that
# run make in the repository (test_example, test_mpi, test_python) share
# $BUILD: they take turns through the lock $LS_MAKE_LOCK.
export LS_MAKE_LOCK="$work/make.lock"
case ${LS_JOBS:-1} in
    '' | *[!0-9]* | 0) echo "run_tests.sh: LS_JOBS=$LS_JOBS: not a count of programs to run at once (1, 2, ...)" >&2; exit 2 ;;
esac
# SOLO: programs that run with nothing beside them, first: test_pool counts
# the sleeping workers a burst of jobs wakes, which another program on the
# cores would change.
SOLO='test_pool'
FIRST='test_logic_ca test_session test_plan test_mpi test_python test_arrays test_text test_docs
       test_export test_train test_layers test_cliques test_crash test_badinput test_cli'
solo=""
list=""
for name in $SOLO; do
    [ -x "$BUILD/tests/$name" ] && solo="$solo $name"
done
for name in $FIRST; do
    [ -x "$BUILD/tests/$name" ] && list="$list $name"
done
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    case " $(echo $SOLO $FIRST) " in *" $name "*) continue ;; esac
    list="$list $name"
done
# ONLY="test_a test_b ...": just those programs (check-tsan's threaded set).
if [ -n "${ONLY:-}" ]; then
    for v in solo list; do
        kept=""
        for name in $(eval echo \$$v); do
            case " $ONLY " in *" $name "*) kept="$kept $name" ;; esac
        done
        eval "$v=\$kept"
    done
fi

# One program (sh -c "$RUN_ONE" sh BUILD NAME WORK): its output in
# WORK/NAME.log, then "status seconds" in WORK/NAME.done (renamed into
# place, so a reader sees it whole).
RUN_ONE='
    start=$(date +%s)
    "$1/tests/$2" >"$3/$2.log" 2>&1
    echo "$? $(( $(date +%s) - start ))" >"$3/$2.tmp"
    mv "$3/$2.tmp" "$3/$2.done"'
{
    for name in $solo; do
        sh -c "$RUN_ONE" sh "$BUILD" "$name" "$work"
    done
    printf '%s\n' $list | xargs -P "${LS_JOBS:-1}" -I '{}' sh -c "$RUN_ONE" sh "$BUILD" '{}' "$work"
} &
runner=$!
list="$solo $list"

for name in $list; do
    while [ ! -f "$work/$name.done" ]; do
        kill -0 "$runner" 2>/dev/null || [ -f "$work/$name.done" ] || {
            echo "FAIL $name (never ran: the runner stopped)"
            failed=$((failed + 1))
            continue 2
        }
        sleep 0.2
    done
    read -r rc secs <"$work/$name.done"
    log=$work/$name.log
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
wait "$runner"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
