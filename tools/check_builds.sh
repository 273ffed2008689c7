#!/bin/sh
# check_builds.sh — `make check-builds`: docs/contract.md says the bits do not
# depend on the compiler, the optimisation level or -march. Build the engine
# five ways, each into its own folder, and run every golden file with each,
# whole, at 1 and 3 threads (3 is more than the cores CI has; all thread
# counts are make test's concern, which checks 1, 2, 3 and 8). Then the
# default build once more with the SIMD kernels forced off
# (LOCKSTEP_SIMD=off). Every run must match the same golden files, so all
# are identical.
set -e
cd "$(dirname "$0")/.."
fail=0
summary=""
for spec in "gcc|-O0" "gcc|-O2" "gcc|-O3 -march=native" "clang|-O2" "clang|-O3 -march=native"; do
    cc=${spec%%|*}
    opt=${spec#*|}
    dir="build-check-$cc$(echo "$opt" | tr -c 'a-zA-Z0-9\n' '-')"
    echo "== $cc $opt -> $dir"
    make --no-print-directory -j"${LS_JOBS:-2}" BUILD="$dir" CC="$cc" OPT="$opt -g" "$dir/lockstep" >/dev/null
    if "$dir/lockstep" golden check --threads 1,3; then
        summary="$summary  ok    $cc $opt\n"
    else
        summary="$summary  FAIL  $cc $opt\n"
        fail=1
    fi
done
echo "== gcc -O2 with LOCKSTEP_SIMD=off (scalar twins)"
make --no-print-directory -j"${LS_JOBS:-2}" build/lockstep >/dev/null
if LOCKSTEP_SIMD=off build/lockstep golden check --threads 1,3; then
    summary="$summary  ok    gcc -O2, LOCKSTEP_SIMD=off\n"
else
    summary="$summary  FAIL  gcc -O2, LOCKSTEP_SIMD=off\n"
    fail=1
fi
printf "check-builds:\n$summary"
exit $fail
