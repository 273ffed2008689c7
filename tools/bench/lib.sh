# lib.sh — what the bench scripts share, sourced by each of them:
#   . "$(dirname "$0")/lib.sh"
# The median and spread of a list (all arithmetic is stats.awk's, in this
# folder), "the pair" (two independent 1-thread processes at once, the most
# the host's two cores give at that moment), TSV rows, and the line naming
# the machine a table was measured on. POSIX sh; every function's name
# starts with bench_.

BENCH_LIB=$(cd "$(dirname "$0")" && pwd)
BENCH_AWK=$BENCH_LIB/stats.awk

# Lists: one figure a line on stdin.
# bench_spread [FMT]   "median [min..max]" in FMT (default %.2f)
bench_spread() { awk -v mode=spread -v fmt="${1:-%.2f}" -f "$BENCH_AWK"; }
# bench_median [FMT]   the median (default %.10g)
bench_median() { awk -v mode=median -v fmt="${1:-}" -f "$BENCH_AWK"; }
# bench_rel            (max - min) / median, as "37%"
bench_rel() { awk -v mode=rel -f "$BENCH_AWK"; }
# bench_stats          "KEY VALUE" lines -> KEY, median, min, max, count per key (TSV)
bench_stats() { awk -v mode=tsv -f "$BENCH_AWK"; }
# A file of "KEY VALUE" lines, one list per key (a script's repetitions):
# bench_spread_of FILE KEY [FMT [SCALE]]   KEY's "median [min..max]", times SCALE
bench_spread_of() { awk -v mode=spread -v key="$2" -v fmt="${3:-%.2f}" -v scale="${4:-1}" -f "$BENCH_AWK" "$1"; }
# bench_median_of FILE KEY [FMT]           KEY's median
bench_median_of() { awk -v mode=median -v key="$2" -v fmt="${3:-}" -f "$BENCH_AWK" "$1"; }

# bench_ratio A B [FMT]   A / B (default %.10g), "-" when B is 0
bench_ratio() { echo "$1 $2" | awk -v mode=ratio -v fmt="${3:-}" -f "$BENCH_AWK"; }
# bench_sum FIGURE...      their sum
bench_sum() { echo "$*" | awk -v mode=sum -f "$BENCH_AWK"; }
# bench_le A B             true when A <= B (a goal: a time under its line)
bench_le() { echo "$1 $2" | awk -v mode=le -f "$BENCH_AWK"; }

# bench_now; bench_since START   wall seconds since START (a bench_now)
bench_now() { date +%s.%N; }
bench_since() { echo "$1 $(bench_now)" | awk -v mode=diff -v fmt=%.3f -f "$BENCH_AWK"; }

# bench_row FIELD...   one TSV row: the fields joined by tabs. Tables are a
# header row and data rows, so `column -t -s "$(printf '\t')"` aligns them and
# a script can cut a column.
bench_row() {
    _bench_ifs=$IFS
    IFS=$(printf '\t')
    printf '%s\n' "$*"
    IFS=$_bench_ifs
}

# bench_pair OUT_A OUT_B CMD...   runs CMD twice at once, as two processes
# that share nothing, their stdout in OUT_A and OUT_B; fails if either does.
# Two 1-thread runs side by side measure what the two cores give right now
# (a busy host lowers it): the ceiling a 2-thread run is read against.
bench_pair() {
    _bench_a=$1 _bench_b=$2
    shift 2
    "$@" >"$_bench_a" 2>/dev/null &
    _bench_pid=$!
    _bench_rc=0
    "$@" >"$_bench_b" 2>/dev/null || _bench_rc=$?
    wait "$_bench_pid" || _bench_rc=$?
    return "$_bench_rc"
}

# bench_cores   the online CPUs, at least 2 (a 2-thread run is always measured)
bench_cores() {
    _bench_n=$(nproc)
    [ "$_bench_n" -gt 1 ] || _bench_n=2
    echo "$_bench_n"
}

# bench_machine LABEL   "LABEL: CPU model, N cores, load average, date": what a
# table's "measured on" cell is made of.
bench_machine() {
    echo "$1: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores," \
        "load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC'), simd ${LOCKSTEP_SIMD:-default}"
}
