#!/bin/sh
# check_cross.sh — `make check-cross` (and `make deps-cross`): the same bits
# on another instruction set and another byte order, without that hardware.
#
# docs/contract.md promises that θ_t depends on the arithmetic alone. Here the
# CLI and the test programs are cross-compiled with Debian's gcc for aarch64
# (little-endian, NEON, no x86 SIMD: the scalar twins run) and s390x
# (big-endian: every format must be written and read byte by byte), and run
# under qemu-user, whose -L prefix finds the foreign C library
# (/usr/<triplet>, from libc6-dev-<arch>-cross; no binfmt registration):
#   aarch64 with -cpu cortex-a53 and with -cpu max:
#     golden check of every file in golden/ (the files are x86-64's bits),
#     the determinism tests (runs compared across 1, 2, 3 and 8 threads) and
#     the known-answer tests of the hashes, the record and the formats,
#     the FPCR refusal (test_dmath sets FZ and DN with msr fpcr);
#   s390x: the formats' known-answer tests and golden check;
#   the fused-operation guard (tools/check_fma.sh) on the aarch64 objects,
#   and its own test (tests/test_fma_guard.sh).
# One line per check, then "N passed, N failed, N skipped"; exit 1 on a
# failure. Open MPI is left out: lockstep-mpi is not cross-built (the MPI
# path shares every kernel with the CLI; test_mpi runs natively).
#
# The foreign libraries (sqlite3, xxhash, png, zlib, cmocka) are Debian's
# :arm64 / :s390x packages, unpacked (dpkg -x) into a sysroot per
# architecture rather than installed as multi-arch packages: a Multi-Arch:
# same package must have exactly the host's version, which a mirror whose
# security suite lags for one architecture cannot give (bookworm-security
# has no s390x here), and installing them would upgrade the host's own
# -dev packages under the other builds. The sysroot touches nothing else.
#
#   sh tools/check_cross.sh deps     install what is missing (root)
#   sh tools/check_cross.sh          deps, build, run
# Environment: LS_CROSS_SYSROOT (default /opt/lockstep-cross),
# LS_CROSS_ARCHES (default "aarch64 s390x").
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
SYSROOT=${LS_CROSS_SYSROOT:-/opt/lockstep-cross}
ARCHES=${LS_CROSS_ARCHES:-aarch64 s390x}
HOST_PKGS="gcc-aarch64-linux-gnu gcc-s390x-linux-gnu binutils-aarch64-linux-gnu binutils-s390x-linux-gnu
           libc6-dev-arm64-cross libc6-dev-s390x-cross qemu-user"
# The runtime packages come along for the shared objects the -dev links point at.
LIB_PKGS="libsqlite3-dev libsqlite3-0 libxxhash-dev libxxhash0 libpng-dev libpng16-16
          zlib1g-dev zlib1g libcmocka-dev libcmocka0"

deb_arch() { case $1 in aarch64) echo arm64 ;; *) echo "$1" ;; esac; }
triplet() { echo "$1-linux-gnu"; }

# ---- deps -----------------------------------------------------------------
deps() {
    missing=""
    for p in $HOST_PKGS; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
    done
    need_sysroot=""
    for a in $ARCHES; do
        [ -f "$SYSROOT/$a/.complete" ] || need_sysroot="$need_sysroot $a"
    done
    [ -z "$missing$need_sysroot" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "deps-cross: run as root to install:${missing}${need_sysroot:+ and the sysroots for$need_sysroot in $SYSROOT}" >&2
        exit 2
    fi
    export DEBIAN_FRONTEND=noninteractive
    added=""
    for a in $ARCHES; do
        da=$(deb_arch "$a")
        dpkg --print-foreign-architectures | grep -qx "$da" || { dpkg --add-architecture "$da"; added=yes; }
    done
    if [ -n "$missing" ] || [ -n "$added" ] || [ -n "$need_sysroot" ]; then
        apt-get update -q >/dev/null || { echo "deps-cross: apt-get update failed" >&2; exit 2; }
    fi
    if [ -n "$missing" ]; then
        echo "deps-cross: installing$missing"
        # qemu-user recommends qemu-user-binfmt: not wanted (qemu is called by name).
        # shellcheck disable=SC2086
        apt-get install -y -q --no-install-recommends $missing >/dev/null ||
            { echo "deps-cross: apt-get install$missing failed" >&2; exit 2; }
    fi
    for a in $need_sysroot; do
        da=$(deb_arch "$a")
        echo "deps-cross: unpacking the :$da libraries into $SYSROOT/$a"
        tmp=$(mktemp -d)
        pkgs=""
        for p in $LIB_PKGS; do pkgs="$pkgs $p:$da"; done
        # shellcheck disable=SC2086
        (cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root $pkgs >/dev/null) ||
            { echo "deps-cross: apt-get download of the :$da libraries failed" >&2; rm -rf "$tmp"; exit 2; }
        rm -rf "${SYSROOT:?}/$a"
        mkdir -p "$SYSROOT/$a"
        for d in "$tmp"/*.deb; do dpkg -x "$d" "$SYSROOT/$a" || { rm -rf "$tmp"; exit 2; }; done
        (cd "$tmp" && ls *.deb) >"$SYSROOT/$a/.complete"
        rm -rf "$tmp"
    done
}

if [ "${1:-}" = deps ]; then
    deps
    exit 0
fi
deps || exit 2

# ---- build ----------------------------------------------------------------
# The programs run under qemu, chosen for what they prove and for time (CI
# gives check-cross about 10 minutes on 2 cores; qemu costs 20-60x native):
#   determinism (runs compared across 1, 2, 3 and 8 threads, against each
#   other): test_tree, test_linear, test_gnn; and golden check,
#   which runs every golden file whole against x86-64's bits (at 1, 2, 3
#   and 8 threads; the slowest at 1: one_thread_golden). test_train and
#   test_session (15 and 23 s native, most of it Fashion-MNIST) repeat what
#   golden check shows: LS_CROSS_FULL=1 adds them.
#   known answers of the hashes, the record and the formats: test_hash,
#   test_rng, test_dmath (and the FPCR refusal), test_dense, test_npy,
#   test_checkpoint, test_runlog, test_golden; on s390x also test_weights
#   (safetensors and .npy through the CLI) and test_dataset (IDX, the data
#   hash). test_export (the circuit export) trains gol through the CLI: more
#   than 2 minutes a run under qemu-s390x, so not here.
#   test_pool is not run: besides the pool's results (test_tree and golden
#   check show those) it bounds how often workers are woken, a timing that
#   an emulator on a shared machine does not keep (it failed under -cpu max).
#   test_dmath's accuracy sweeps against libm run a twentieth of their
#   samples (LOCKSTEP_TEST_SWEEP_DIV): aarch64's 128-bit long double
#   reference is emulated in software; the known answers and frozen grids,
#   which pin dmath's bits, run whole.
DET_TESTS="test_tree test_linear test_gnn"
if [ -n "${LS_CROSS_FULL:-}" ]; then DET_TESTS="$DET_TESTS test_train test_session"; fi
KAT_TESTS="test_hash test_rng test_dmath test_dense test_npy test_checkpoint test_runlog test_golden"
BE_TESTS="test_hash test_rng test_npy test_checkpoint test_runlog test_golden test_weights test_dataset"

start_all=$(date +%s)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One line per check, into the suite's result file $res (and printed at
# the end, suite by suite: the suites run side by side).
line() { # status name seconds [detail]
    printf '%-4s %-46s %4ss%s\n' "$1" "$2" "$3" "${4:+  $4}" >>"$res"
}
detail() { sed 's/^/    /' >>"$res"; }

build() { # arch -> build-<arch>/lockstep and the test programs
    a=$1
    t=$(triplet "$a")
    sr="$SYSROOT/$a"
    progs="build-$a/lockstep"
    for p in $DET_TESTS $KAT_TESTS $BE_TESTS; do progs="$progs build-$a/tests/$p"; done
    # The default build's flags (the Makefile's OPT and LS_PINNED; no -march,
    # no CFLAGS: the sysroot's headers come by gcc's environment, so the
    # build facts recorded with a run are the default build's). The
    # sysroot's libraries are found by an rpath, an old-style DT_RPATH: a
    # DT_RUNPATH would not serve libpng's own need of libz.
    # shellcheck disable=SC2046
    C_INCLUDE_PATH="$sr/usr/include:$sr/usr/include/$t" \
    make --no-print-directory -j"${LS_JOBS:-2}" BUILD="build-$a" CC="$t-gcc" \
        LDFLAGS="-L$sr/usr/lib/$t -Wl,--disable-new-dtags -Wl,-rpath-link,$sr/usr/lib/$t:$sr/lib/$t -Wl,-rpath,$sr/usr/lib/$t:$sr/lib/$t" \
        $(echo "$progs" | tr ' ' '\n' | sort -u) >"$tmp/build-$a.log" 2>&1
}

res=$tmp/0-build
for a in $ARCHES; do
    s=$(date +%s)
    if build "$a"; then
        line ok "build $a" $(( $(date +%s) - s ))
    else
        line FAIL "build $a" $(( $(date +%s) - s ))
        grep -v '^CC \|^LD ' "$tmp/build-$a.log" | tail -30 | detail
    fi
done

# qemu-<arch> on the foreign C library (QEMU_LD_PREFIX is -L); the CPU model
# by QEMU_CPU. A test program that starts the CLI finds LOCKSTEP_BIN, a
# script that runs the foreign binary under the same qemu (the host kernel
# runs the script: no binfmt registration).
run_q() { # arch cpu prog args...
    a=$1; cpu=$2; shift 2
    QEMU_LD_PREFIX=/usr/$(triplet "$a") QEMU_CPU=$cpu "qemu-$a" "$@"
}
wrapper() { # arch cpu -> path of the CLI wrapper
    w="$tmp/lockstep-$1-$2"
    printf '#!/bin/sh\nQEMU_LD_PREFIX=/usr/%s QEMU_CPU=%s exec qemu-%s "%s" "$@"\n' \
        "$(triplet "$1")" "$2" "$1" "$ROOT/build-$1/lockstep" >"$w"
    chmod 755 "$w"
    echo "$w"
}

# Golden files whose four thread counts under qemu would cost minutes each
# (qemu runs the scalar twins 20-60 times slower than native, fmaf in
# software; each took 15 to 110 s a thread count under qemu-aarch64 and up
# to 2.5 times that under qemu-s390x on a busy 2-core host, before
# golden/CHANGES shortened three of them): under qemu they run whole at one thread, every step against
# x86-64's bits; the other thread counts are the native suite's concern
# (and test_tree, test_linear and test_gnn compare thread counts here).
# LS_CROSS_FULL=1 runs them at 1, 2, 3 and 8 threads too.
one_thread_golden() { # name -> prints why, or fails
    case $1 in
    cnn-short) echo "convolutions, fmaf in software" ;;
    checkerboard-short | checkerboard-async-short) echo "a rollout of 20 or 50 CA steps a sample" ;;
    gpt-short) echo "attention and GELU, exp and tanh in software" ;;
    fashion-mnist-short | logic-fashion-mnist-short) echo "60,000 images decoded, 128 a batch" ;;
    *) return 1 ;;
    esac
}

# A cmocka program passes when it exits 0, reports at least one case and
# skips none.
run_test() { # arch cpu name
    a=$1; cpu=$2; p=$3
    bin="build-$a/tests/$p"
    if [ ! -x "$bin" ]; then line FAIL "$a $cpu $p" 0 "not built"; return; fi
    log="$tmp/$a-$cpu-$p.log"
    s=$(date +%s)
    LOCKSTEP_ROOT=$ROOT BUILD="build-$a" LOCKSTEP_BIN=$(wrapper "$a" "$cpu") LOCKSTEP_TEST_SWEEP_DIV=20 \
        run_q "$a" "$cpu" "$bin" >"$log" 2>&1
    rc=$?
    ok=$(grep -c '^\[       OK \]' "$log")
    sk=$(grep '^\[  SKIPPED \]' "$log" | grep -vc 'test(s)')
    if [ "$rc" -eq 0 ] && [ "$ok" -gt 0 ] && [ "$sk" -eq 0 ]; then
        line ok "$a $cpu $p" $(( $(date +%s) - s )) "$ok cases"
    else
        line FAIL "$a $cpu $p" $(( $(date +%s) - s )) "exit $rc, $ok cases passed, $sk skipped"
        grep -E '^\[  (FAILED|ERROR|SKIPPED) \]|^ERROR|rror:|FAIL' "$log" | head -20 | detail
    fi
}

run_golden() { # arch cpu: each golden file whole at 1, 2, 3 and 8 threads (one_thread_golden: at 1)
    a=$1; cpu=$2
    for g in golden/*.golden; do
        [ -f "$g" ] || continue
        name=$(basename "$g" .golden)
        set -- golden check "$g"
        what=""
        if [ -z "${LS_CROSS_FULL:-}" ] && why=$(one_thread_golden "$name"); then
            set -- golden check "$g" --threads 1
            what="whole at 1 thread ($why; LS_CROSS_FULL=1: 1, 2, 3, 8)"
        fi
        log="$tmp/$a-$cpu-golden.log"
        s=$(date +%s)
        if run_q "$a" "$cpu" "build-$a/lockstep" "$@" >"$log" 2>&1; then
            line ok "$a $cpu golden $name" $(( $(date +%s) - s )) "$what"
        else
            line FAIL "$a $cpu golden $name" $(( $(date +%s) - s )) "$what"
            tail -5 "$log" | detail
        fi
    done
}

suite() { # arch cpu part tests...: part "tests", "golden" or "all"
    a=$1; cpu=$2; part=$3; shift 3
    [ "$part" = golden ] || for p in "$@"; do run_test "$a" "$cpu" "$p"; done
    [ "$part" = tests ] || run_golden "$a" "$cpu"
}

for a in $ARCHES; do
    [ -x "build-$a/lockstep" ] || continue
    case $a in
    aarch64)
        res=$tmp/1-guard
        s=$(date +%s)
        if sh tools/check_fma.sh "build-$a" >"$tmp/fma.log" 2>&1; then
            line ok "aarch64 fused-operation guard" $(( $(date +%s) - s )) "$(tail -1 "$tmp/fma.log")"
        else
            line FAIL "aarch64 fused-operation guard" $(( $(date +%s) - s ))
            tail -20 "$tmp/fma.log" | detail
        fi
        s=$(date +%s)
        if sh tests/test_fma_guard.sh >"$tmp/fma_test.log" 2>&1; then
            line ok "aarch64 test_fma_guard.sh" $(( $(date +%s) - s )) "$(grep -c '^\[       OK' "$tmp/fma_test.log") cases"
        else
            line FAIL "aarch64 test_fma_guard.sh" $(( $(date +%s) - s ))
            tail -20 "$tmp/fma_test.log" | detail
        fi
        ;;
    esac
done

# The suites, two lanes at a time (2 cores): cortex-a53 then s390x's tests
# beside max then s390x's golden files (s390x runs about twice as slow).
lane_a=""
lane_b=""
case " $ARCHES " in *" aarch64 "*) [ -x build-aarch64/lockstep ] &&
    { lane_a="aarch64:cortex-a53:all"; lane_b="aarch64:max:all"; } ;; esac
case " $ARCHES " in *" s390x "*) [ -x build-s390x/lockstep ] &&
    { lane_a="$lane_a s390x:max:tests"; lane_b="$lane_b s390x:max:golden"; } ;; esac
run_lane() {
    for sc in "$@"; do
        a=${sc%%:*}; rest=${sc#*:}; cpu=${rest%%:*}; part=${rest#*:}
        res=$tmp/2-$a-$cpu-$part
        # shellcheck disable=SC2086
        case $a in
        aarch64) suite "$a" "$cpu" "$part" $KAT_TESTS $DET_TESTS ;;
        s390x) suite "$a" "$cpu" "$part" $BE_TESTS ;;
        esac
    done
}
# shellcheck disable=SC2086
run_lane $lane_a &
pid_a=$!
# shellcheck disable=SC2086
run_lane $lane_b
wait "$pid_a"

cat "$tmp"/[0-9]-*
passed=$(cat "$tmp"/[0-9]-* | grep -c '^ok ')
failed=$(cat "$tmp"/[0-9]-* | grep -c '^FAIL ')
skipped=$(cat "$tmp"/[0-9]-* | grep -c '^skip ')
echo "check-cross: $(( $(date +%s) - start_all ))s in all"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
