# cases.sh — sourced by the shell tests (tests/test_*.sh): a scratch folder
# $T removed at exit, and `check NAME FUNCTION`, which runs one case and
# prints cmocka's "[ RUN      ]", "[       OK ]" or "[  FAILED  ]" lines,
# the lines tests/run_tests.sh counts; a failed case shows what FUNCTION
# wrote, indented. A test ends with `exit $failed`. `say` writes to stderr,
# which a case's log holds.
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
log=$T/log
failed=0

check() {
    echo "[ RUN      ] $1"
    if "$2" >"$log" 2>&1; then
        echo "[       OK ] $1"
    else
        echo "[  FAILED  ] $1"
        sed 's/^/    /' "$log"
        failed=1
    fi
}

say() { echo "$*" >&2; }
