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
cd "$(dirname "$0")/.."
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
        rm -rf "$SYSROOT/$a"
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
# The programs run under qemu. Determinism tests (runs compared across 1, 2,
# 3 and 8 threads): test_tree, test_train, test_session, test_pool,
# test_linear, test_gnn. Known answers of the hashes, the record and the
# formats: test_hash, test_runlog, test_dmath, test_rng, test_npy,
# test_checkpoint, test_golden, test_dense.
DET_TESTS="test_tree test_pool test_train test_session test_linear test_gnn"
KAT_TESTS="test_hash test_rng test_dmath test_dense test_npy test_checkpoint test_runlog test_golden"
# Big-endian runs the formats (and golden check, below).
BE_TESTS="test_hash test_rng test_npy test_checkpoint test_runlog test_golden"

start_all=$(date +%s)
passed=0
failed=0
skipped=0
line() { # status name seconds [detail]
    printf '%-4s %-44s %4ss%s\n' "$1" "$2" "$3" "${4:+  $4}"
    case $1 in ok) passed=$((passed + 1)) ;; FAIL) failed=$((failed + 1)) ;; *) skipped=$((skipped + 1)) ;; esac
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

build() { # arch -> builds build-<arch>/lockstep and the test programs
    a=$1
    t=$(triplet "$a")
    sr="$SYSROOT/$a"
    progs="build-$a/lockstep"
    for p in $DET_TESTS $KAT_TESTS; do progs="$progs build-$a/tests/$p"; done
    # The default build's flags (the Makefile's OPT and LS_PINNED; no -march,
    # no CFLAGS: the sysroot's headers come by gcc's environment,
    # so the build facts recorded with a run are the default build's). The
    # sysroot's libraries are found by an rpath, an old-style DT_RPATH: a
    # DT_RUNPATH would not serve libpng's own need of libz.
    C_INCLUDE_PATH="$sr/usr/include:$sr/usr/include/$t" \
    make --no-print-directory -j"${LS_JOBS:-2}" BUILD="build-$a" CC="$t-gcc" \
        LDFLAGS="-L$sr/usr/lib/$t -Wl,--disable-new-dtags -Wl,-rpath-link,$sr/usr/lib/$t:$sr/lib/$t -Wl,-rpath,$sr/usr/lib/$t:$sr/lib/$t" \
        $progs >"$log" 2>&1
}

for a in $ARCHES; do
    s=$(date +%s)
    if build "$a"; then
        line ok "build $a" $(( $(date +%s) - s ))
    else
        line FAIL "build $a" $(( $(date +%s) - s ))
        sed 's/^/    /' "$log" | tail -40
    fi
done

# qemu-<arch> with the foreign C library; QEMU_LD_PREFIX is -L for children
# (test programs that start the CLI).
run_q() { # arch cpu prog args...
    a=$1; cpu=$2; shift 2
    QEMU_LD_PREFIX=/usr/$(triplet "$a") QEMU_CPU=$cpu "qemu-$a" "$@"
}

# A cmocka program passes when it exits 0 and reports at least one case.
run_test() { # arch cpu name
    a=$1; cpu=$2; p=$3
    bin="build-$a/tests/$p"
    if [ ! -x "$bin" ]; then line FAIL "$a $cpu $p" 0 "not built"; return; fi
    s=$(date +%s)
    LOCKSTEP_ROOT=$ROOT LOCKSTEP_BIN=$ROOT/build-$a/lockstep run_q "$a" "$cpu" "$bin" >"$log" 2>&1
    rc=$?
    ok=$(grep -c '^\[       OK \]' "$log")
    sk=$(grep '^\[  SKIPPED \]' "$log" | grep -vc 'test(s)')
    if [ "$rc" -eq 0 ] && [ "$ok" -gt 0 ] && [ "$sk" -eq 0 ]; then
        line ok "$a $cpu $p" $(( $(date +%s) - s )) "$ok cases"
    else
        line FAIL "$a $cpu $p" $(( $(date +%s) - s )) "exit $rc, $ok cases passed, $sk skipped"
        grep -E '^\[  (FAILED|ERROR|SKIPPED) \]|rror|FAIL' "$log" | head -20 | sed 's/^/    /'
    fi
}

run_golden() { # arch cpu
    a=$1; cpu=$2
    for g in golden/*.golden; do
        [ -f "$g" ] || continue
        s=$(date +%s)
        if run_q "$a" "$cpu" "build-$a/lockstep" golden check "$g" >"$log" 2>&1; then
            line ok "$a $cpu golden $(basename "$g" .golden)" $(( $(date +%s) - s ))
        else
            line FAIL "$a $cpu golden $(basename "$g" .golden)" $(( $(date +%s) - s ))
            tail -5 "$log" | sed 's/^/    /'
        fi
    done
}

for a in $ARCHES; do
    [ -x "build-$a/lockstep" ] || continue
    case $a in
    aarch64)
        s=$(date +%s)
        if sh tools/check_fma.sh "build-$a" >"$log" 2>&1; then
            line ok "aarch64 fused-operation guard" $(( $(date +%s) - s )) "$(tail -1 "$log")"
        else
            line FAIL "aarch64 fused-operation guard" $(( $(date +%s) - s ))
            sed 's/^/    /' "$log" | tail -20
        fi
        s=$(date +%s)
        if sh tests/test_fma_guard.sh >"$log" 2>&1; then
            line ok "test_fma_guard.sh" $(( $(date +%s) - s ))
        else
            line FAIL "test_fma_guard.sh" $(( $(date +%s) - s ))
            sed 's/^/    /' "$log" | tail -20
        fi
        for cpu in cortex-a53 max; do
            for p in $KAT_TESTS $DET_TESTS; do run_test "$a" "$cpu" "$p"; done
            run_golden "$a" "$cpu"
        done
        ;;
    s390x)
        for p in $BE_TESTS; do run_test "$a" max "$p"; done
        run_golden "$a" max
        ;;
    esac
done

echo "check-cross: $(( $(date +%s) - start_all ))s in all"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
