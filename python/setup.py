"""Builds the lockstep package (the extension lockstep._lockstep and the
pure-Python layer) with setuptools, offline:

    python3 -m venv venv
    venv/bin/pip install --no-build-isolation --no-index ./python

The C library comes from, in this order: $LOCKSTEP_BUILD (a build folder of
a checkout, liblockstep.a linked in; the header from $LOCKSTEP_ROOT/include,
default the checkout above this file); the checkout's own build/ (after
`make`); or an installed lockstep found through pkg-config (after `make
install`: linked to liblockstep.so).
"""

import os
import re
import shlex
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("LOCKSTEP_ROOT") or os.path.dirname(HERE)
BUILD = os.environ.get("LOCKSTEP_BUILD") or os.path.join(ROOT, "build")
HEADER = os.path.join(ROOT, "include", "lockstep.h")
STATIC = os.path.join(BUILD, "liblockstep.a")
# What liblockstep.a needs (the Makefile's LIB_LIBS, lockstep.pc's Libs.private).
STATIC_LIBS = ["sqlite3", "xxhash", "z", "m"]


def header_version(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parts = [re.search(r"#define LS_VERSION_%s\s+(\d+)" % p, text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def pkg_config(*args):
    try:
        return subprocess.run(["pkg-config"] + list(args), check=True, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


common = dict(sources=["src/_lockstep.c"], extra_compile_args=["-std=c11", "-ffp-contract=off"])
if os.path.exists(STATIC) and os.path.exists(HEADER):
    version = header_version(HEADER)
    ext = Extension("lockstep._lockstep", include_dirs=[os.path.dirname(HEADER)], extra_objects=[STATIC],
                    libraries=STATIC_LIBS, extra_link_args=["-pthread"], **common)
elif pkg_config("--exists", "lockstep") is not None:
    version = pkg_config("--modversion", "lockstep")
    cflags = shlex.split(pkg_config("--cflags", "lockstep"))
    libs = shlex.split(pkg_config("--libs", "lockstep"))
    libdirs = [f[2:] for f in libs if f.startswith("-L")]
    ext = Extension("lockstep._lockstep", include_dirs=[f[2:] for f in cflags if f.startswith("-I")],
                    library_dirs=libdirs, runtime_library_dirs=libdirs,
                    libraries=[f[2:] for f in libs if f.startswith("-l")], **common)
else:
    sys.exit("lockstep: no library to build against: run `make` in the checkout (%s), set LOCKSTEP_BUILD to a "
             "build folder, or `make install` it (pkg-config lockstep)" % STATIC)

setup(
    name="lockstep",
    version=version,
    description="training whose bits do not depend on the thread count: the lockstep engine from Python",
    license="see LICENSE in the lockstep repository",
    packages=["lockstep", "lockstep.tests"],
    ext_modules=[ext],
    python_requires=">=3.9",
)
