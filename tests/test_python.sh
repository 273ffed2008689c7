#!/bin/sh
# test_python.sh — the Python package (python/, docs/python.md) with Debian's
# python3: its own tests (python3 -m lockstep.tests, which compare sessions
# driven from Python with the command-line program's runs, bit for bit), run
# from this build's $BUILD/python (make python: the extension with this
# build's liblockstep.a linked in); then `pip install --no-build-isolation
# --no-index` of a copy of python/ into a fresh virtual environment, offline,
# and one step from there; then `make install` into a temporary DESTDIR, one
# step through the installed package and shared library, and pip building
# the package against that installation alone (pkg-config lockstep), whose
# pytest plugin then loads through its entry point. Also the ```python
# examples of docs/python.md and the README's PyTorch example, run as they
# stand. The package's tests include runs of PyTorch recorded with
# lockstep.record and the pytest plugin run on a sample test.
#
# A missing python3, numpy, venv, setuptools, wheel, torch, xxhash or pytest fails the first case,
# naming the Debian package (make deps installs them): never a skip. Under
# the sanitizers the extension carries their run-time calls, so python3 gets
# the sanitizer's shared run-time preloaded (leak checking off: the
# interpreter keeps its objects to the end).
#
# Prints cmocka's "[ RUN      ]" / "[       OK ]" / "[  FAILED  ]" lines
# (the package's runner prints its own), which run_tests.sh counts.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case $BUILD in
    /*) B=$BUILD ;;
    *) B=$ROOT/$BUILD ;;
esac
BIN=${LOCKSTEP_BIN:-$B/lockstep}
PYTHON=${PYTHON:-/usr/bin/python3}
SAN=${LS_TEST_SANITIZE:-}
PREFIX=/usr/local
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

. "$ROOT/tests/cases.sh"

# The make of the repository, with this build's settings (so it rebuilds nothing).
mk() {
    set -- -C "$ROOT" --no-print-directory BUILD="$BUILD" PREFIX="$PREFIX" PYTHON="$PYTHON" "$@"
    [ -n "${LS_TEST_CC+x}" ] && set -- "$@" CC="$LS_TEST_CC"
    [ -n "${LS_TEST_OPT+x}" ] && set -- "$@" OPT="$LS_TEST_OPT"
    [ -n "${LS_TEST_CFLAGS+x}" ] && set -- "$@" CFLAGS="$LS_TEST_CFLAGS"
    [ -n "${LS_TEST_LDFLAGS+x}" ] && set -- "$@" LDFLAGS="$LS_TEST_LDFLAGS"
    flock "${LS_MAKE_LOCK:-$T/make.lock}" make "$@"   # tests/run_tests.sh runs programs side by side
}

# The sanitizer run-time python3 must load first (none without sanitizers).
preload=""
san_rt() {
    for f in "$@"; do
        p=$(${LS_TEST_CC:-cc} -print-file-name="$f" 2>/dev/null)
        case $p in /*) [ -e "$p" ] && { echo "$p"; return; } ;; esac
    done
}
case $SAN in
    *-fsanitize=address*) preload=$(san_rt libasan.so libclang_rt.asan-x86_64.so) ;;
    *-fsanitize=thread*) preload=$(san_rt libtsan.so libclang_rt.tsan-x86_64.so) ;;
esac
# gcc keeps UBSan's handlers in a library of their own (clang's ASan run-time has them).
case $SAN:$preload in
    *-fsanitize=*undefined*:*clang_rt.asan*) ;;
    *-fsanitize=*undefined*:*)
        ub=$(san_rt libubsan.so libclang_rt.ubsan_standalone-x86_64.so)
        preload=${preload:+$preload }$ub ;;
esac
py() {
    if [ -n "$preload" ]; then
        LD_PRELOAD=$preload ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$PYTHON" "$@"
    else
        "$PYTHON" "$@"
    fi
}

t_deps() {
    [ -x "$PYTHON" ] || { say "no $PYTHON: install the Debian package python3 (make deps)"; return 1; }
    for mp in numpy:python3-numpy venv:python3-venv setuptools:python3-setuptools wheel:python3-wheel \
              torch:python3-torch xxhash:python3-xxhash pytest:python3-pytest; do
        "$PYTHON" -c "import ${mp%%:*}" 2>/dev/null ||
            { say "python3 cannot import ${mp%%:*}: install the Debian package ${mp#*:} (make deps)"; return 1; }
    done
    case $SAN in *-fsanitize=*)
        [ -n "$preload" ] || { say "no shared sanitizer run-time for $SAN from ${LS_TEST_CC:-cc}"; return 1; }
        say "preloaded: $preload" ;;
    esac
    mk python
}
check python_deps_and_build t_deps
[ "$failed" -eq 0 ] || exit 1

# The package's own cases, each on its own cmocka line.
PYTHONPATH=$B/python LOCKSTEP_BIN=$BIN py -m lockstep.tests || failed=1

# The ```python blocks of docs/python.md, each run as it stands (in one
# scratch folder, in order): the page's examples stay runnable.
t_doc_examples() {
    mkdir -p "$T/doc" && cd "$T/doc" || return 1
    awk -v dir="$T/doc" '/^```python$/ { n++; f = dir "/ex" n ".py"; on = 1; next }
        /^```$/ { on = 0 } on { print > f }' "$ROOT/docs/python.md" || return 1
    set -- "$T/doc"/ex*.py
    [ -f "$1" ] || { say "docs/python.md has no python block"; return 1; }
    for f in "$@"; do
        say "== $f"
        PYTHONPATH=$B/python LOCKSTEP_BIN=$BIN py "$f" || { say "docs/python.md: $(basename "$f") failed"; return 1; }
    done
}
check python_doc_examples t_doc_examples

# The README's PyTorch example (the ```python block that imports torch), run
# as it stands in a scratch folder: it must print an equal verdict.
t_readme_torch() {
    mkdir -p "$T/readme" && cd "$T/readme" || return 1
    awk -v dir="$T/readme" '/^```python$/ { n++; f = dir "/ex" n ".py"; on = 1; next }
        /^```$/ { on = 0 } on { print > f }' "$ROOT/README.md" || return 1
    f=$(grep -l '^import torch' "$T/readme"/ex*.py 2>/dev/null | head -n 1)
    [ -n "$f" ] || { say "README.md has no python block that imports torch"; return 1; }
    out=$(PYTHONPATH=$B/python LOCKSTEP_BIN=$BIN py "$f") || { say "README.md: the PyTorch example failed"; return 1; }
    say "$out"
    case $out in "Verdict(equal over "*) ;; *) say "README.md: the PyTorch example's runs are not equal"; return 1 ;; esac
    "$BIN" verify torch-t1 torch-t2 --db torch.db
}
check python_readme_torch_example t_readme_torch

# Offline into a venv, from a copy of python/ (the checkout stays clean): the
# library is this build's, named by LOCKSTEP_ROOT / LOCKSTEP_BUILD.
t_venv() {
    cp -R "$ROOT/python" "$T/src" && rm -rf "$T/src/build" "$T/src"/*.egg-info || return 1
    "$PYTHON" -m venv --system-site-packages "$T/venv" || return 1
    LOCKSTEP_ROOT=$ROOT LOCKSTEP_BUILD=$B "$T/venv/bin/pip" install --no-build-isolation --no-index \
        --disable-pip-version-check "$T/src" || return 1
    cd "$T" || return 1
    out=$(py_venv -c 'import lockstep, sys
s = lockstep.open(task="teacher", steps=3, threads=2)
loss = s.step()
s.close()
print(lockstep.__file__, lockstep.version(), loss > 0)') || return 1
    say "$out"
    case $out in "$T/venv/"*" True") ;; *) say "not imported from the venv"; return 1 ;; esac
    # its shipped tests run from there too (one of them: the rest ran above)
    LOCKSTEP_BIN=$BIN py_venv -m lockstep.tests -k unknown_config_key || return 1
    # the pytest plugin loads through the package's entry point (pytest11), no -p needed
    py_venv -m pytest -p no:cacheprovider --help >"$T/venv-pytest.txt" 2>&1 || { cat "$T/venv-pytest.txt"; return 1; }
    grep -q -- '--lockstep-update' "$T/venv-pytest.txt" ||
        { say "pytest in the venv does not load lockstep.pytest from its entry point"; return 1; }
}
py_venv() {
    if [ -n "$preload" ]; then
        LD_PRELOAD=$preload ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$T/venv/bin/python" "$@"
    else
        "$T/venv/bin/python" "$@"
    fi
}
check python_venv_pip_install_offline t_venv

# make install (staged): the package lands where Debian's python3 looks under
# PREFIX and works through the installed shared library; pip builds it from a
# copy of python/ against that installation through pkg-config; uninstall
# removes the package.
t_install() {
    D=$T/stage
    mk install DESTDIR="$D" >"$T/install.log" 2>&1 || { cat "$T/install.log"; return 1; }
    site=$("$PYTHON" -c 'import sys; print("%s/lib/python%d.%d/dist-packages" % ((sys.argv[1],) + sys.version_info[:2]))' "$PREFIX")
    # that folder is on Debian's python3 path: the unstaged install is imported without PYTHONPATH
    "$PYTHON" -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "$site" ||
        { say "$site is not on $PYTHON's sys.path"; return 1; }
    [ -f "$D$site/lockstep/__init__.py" ] || { say "no $D$site/lockstep/__init__.py"; return 1; }
    cd "$T" || return 1
    PYTHONPATH=$D$site LD_LIBRARY_PATH=$D$PREFIX/lib py -c 'import lockstep
with lockstep.open(task="teacher", steps=2, threads=3) as s:
    s.train()
print(lockstep.__file__, s.traj_hash)' || return 1
    readelf -d "$D$site"/lockstep/_lockstep*.so | grep -q 'NEEDED.*liblockstep\.so\.' ||
        { say "the installed extension does not link liblockstep.so"; return 1; }
    # pip against the installed library alone (pkg-config lockstep), no build folder
    rm -rf "$T/src2" && cp -R "$ROOT/python" "$T/src2" && rm -rf "$T/src2/build" "$T/src2"/*.egg-info &&
        "$PYTHON" -m venv --system-site-packages "$T/venv2" || return 1
    LOCKSTEP_BUILD=$T/no-build PKG_CONFIG_PATH=$D$PREFIX/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D \
        "$T/venv2/bin/pip" install --no-build-isolation --no-index --disable-pip-version-check "$T/src2" || return 1
    readelf -d "$T"/venv2/lib/python*/site-packages/lockstep/_lockstep*.so | grep -q 'NEEDED.*liblockstep\.so\.' ||
        { say "pip's extension (pkg-config) does not link liblockstep.so"; return 1; }
    if [ -n "$preload" ]; then
        LD_PRELOAD=$preload ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
            "$T/venv2/bin/python" -c 'import lockstep; lockstep.open(task="teacher", steps=1, threads=2).step()'
    else
        "$T/venv2/bin/python" -c 'import lockstep; lockstep.open(task="teacher", steps=1, threads=2).step()'
    fi || return 1
    mk uninstall DESTDIR="$D" >>"$T/install.log" 2>&1 || { cat "$T/install.log"; return 1; }
    left=$(find "$D$PREFIX/lib" -path '*python*' \( -type f -o -type l -o -name lockstep \))
    [ -z "$left" ] || { say "left after uninstall:"; say "$left"; return 1; }
}
check python_make_install t_install

exit $failed
