# lockstep — build, test, demo, bench, install and checks.  `make help` lists targets.
#
# The flags that keep the arithmetic order fixed (docs/contract.md) are not
# optional: -std=c11 -ffp-contract=off, never fast-math. They are in
# LS_PINNED, which every compile line carries after the user's CFLAGS.

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
CFLAGS  ?=
WERROR  ?= -Werror
LDFLAGS ?=
PREFIX  ?= /usr/local
DESTDIR ?=
# Compile jobs of the builds the test and check targets make, and the test
# programs tests/run_tests.sh runs side by side: one per core.
LS_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
export LS_JOBS

# Flags that would let the compiler reorder or fuse floating point.
BANNED := -ffast-math -Ofast -ffp-contract=fast -ffp-contract=on -fassociative-math \
          -funsafe-math-optimizations -freciprocal-math -fno-signed-zeros -ffinite-math-only
$(foreach f,$(BANNED),$(if $(filter $(f),$(CC) $(OPT) $(CFLAGS)),\
  $(error $(f) breaks the lockstep contract (docs/contract.md, arithmetic order): the arithmetic order must stay fixed)))

LS_PINNED := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -ffp-contract=off -fno-fast-math -fno-math-errno -fopenmp-simd
# gcc for s390x in a strict C mode says FLT_EVAL_METHOD 1 and computes every
# float expression in double, rounding once at the end: a*b+c is then not the
# x86-64 or aarch64 value (engine/num/dmath.c refuses to build). The machine
# has binary32 arithmetic; -fexcess-precision=fast uses it, one rounding per
# operation, FLT_EVAL_METHOD 0 (make check-cross builds for s390x).
LS_TARGET := $(shell $(CC) -dumpmachine 2>/dev/null)
LS_PINNED += $(if $(filter s390%,$(LS_TARGET)),-fexcess-precision=fast)
WARN      := -Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion -Wstrict-prototypes \
             -Wmissing-prototypes -Wpointer-arith -Wformat=2 $(WERROR)
# PIC and INC_BUILD are set per target below (library objects, build facts).
ALL_CFLAGS = $(OPT) $(CFLAGS) $(LS_PINNED) $(WARN) $(PIC) -I. -Iinclude $(INC_BUILD) $(XXH_DISPATCH) -pthread -MMD -MP
# Debian's libxxhash picks SSE2, AVX2 or AVX-512 at run time (record/hash.c).
XXH_DISPATCH := $(if $(wildcard /usr/include/xxh_x86dispatch.h),-DLS_XXH_DISPATCH)
LIBS      := -lsqlite3 -lxxhash -lpng -lz -lm -pthread
# What the library itself needs (libpng is the tools' alone: cmd_render.c).
# lockstep.pc.in's Requires.private and Libs.private say the same.
LIB_LIBS  := $(filter-out -lpng,$(LIBS))

# The version is written once, in the public header; the file names, the
# soname and lockstep.pc take it from there. ('.' stands for the '#' that a
# makefile line cannot hold portably.)
ls_version_part = $(shell sed -n 's/^.define LS_VERSION_$(1)[[:space:]][[:space:]]*\([0-9][0-9]*\).*/\1/p' include/lockstep.h)
VERSION_MAJOR := $(call ls_version_part,MAJOR)
VERSION_MINOR := $(call ls_version_part,MINOR)
VERSION_PATCH := $(call ls_version_part,PATCH)
VERSION       := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)
$(if $(and $(VERSION_MAJOR),$(VERSION_MINOR),$(VERSION_PATCH)),,\
  $(error include/lockstep.h: LS_VERSION_MAJOR/MINOR/PATCH not found))

# engine/ is in rooms (docs/architecture.md): core, num, data, graph, models/<family>, tasks.
LIB_SRC  := $(wildcard base/*.c reduce/*.c record/*.c engine/*.c engine/*/*.c engine/*/*/*.c engine/*/*/*/*.c engine/*/*/*/*/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TOOL_SRC := $(filter-out tools/mpi_main.c,$(wildcard tools/*.c))
TOOL_OBJ := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
TEST_COMMON_SRC := $(filter-out tests/test_%.c tests/nn_oracle.c,$(wildcard tests/*.c))
TEST_COMMON_OBJ := $(TEST_COMMON_SRC:%.c=$(BUILD)/obj/%.o)
# Tests written in shell: run_tests.sh runs every executable $(BUILD)/tests/test_*.
# test_fma_guard.sh needs the aarch64 cross compiler: `make check-cross` runs it.
TEST_SH  := $(filter-out tests/test_fma_guard.sh,$(wildcard tests/test_*.sh))
TEST_SH_BIN := $(TEST_SH:tests/%.sh=$(BUILD)/tests/%)
# Programs the shell tests run (each a main of its own, not a shared helper).
TEST_TOOL_BIN := $(BUILD)/tests/nn_oracle
LIB      := $(BUILD)/liblockstep.a
SONAME   := liblockstep.so.$(VERSION_MAJOR)
SO       := $(BUILD)/liblockstep.so.$(VERSION)
SO_LINKS := $(BUILD)/$(SONAME) $(BUILD)/liblockstep.so
BIN      := $(BUILD)/lockstep
EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)

# Where `make install` puts things: $(DESTDIR)$(PREFIX)/...
bindir       = $(PREFIX)/bin
libdir       = $(PREFIX)/lib
includedir   = $(PREFIX)/include
mandir       = $(PREFIX)/share/man
pkgconfigdir = $(libdir)/pkgconfig
# Every file and symlink install writes, and exactly what uninstall removes.
INSTALLED = $(bindir)/lockstep $(libdir)/liblockstep.a $(libdir)/liblockstep.so.$(VERSION) \
            $(libdir)/$(SONAME) $(libdir)/liblockstep.so $(includedir)/lockstep.h \
            $(pkgconfigdir)/lockstep.pc $(mandir)/man1/lockstep.1 $(PY_INSTALLED)

# The Python package (python/, docs/python.md): the extension lockstep._lockstep
# in C over include/lockstep.h, for Debian's python3 (PYTHON= skips it in
# install). `make python` builds it against this build's liblockstep.a into
# $(BUILD)/python/ (the tests put that on PYTHONPATH); install builds it
# against the shared library it installs, into the folder python3 reads.
PYTHON  ?= /usr/bin/python3
PY_CONF := $(if $(PYTHON),$(shell $(PYTHON) -c 'import sys, sysconfig; \
             print(sysconfig.get_paths()["include"], sysconfig.get_config_var("EXT_SUFFIX"), \
             "%d.%d" % sys.version_info[:2])' 2>/dev/null))
PY_INCLUDE := $(word 1,$(PY_CONF))
PY_EXT     := $(word 2,$(PY_CONF))
PY_VER     := $(word 3,$(PY_CONF))
# Debian's python3 reads /usr/lib/python3/dist-packages and /usr/local/lib/python3.X/dist-packages.
pythondir   = $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(PY_VER)/dist-packages)
PY_SRC     := $(wildcard python/lockstep/*.py python/lockstep/tests/*.py)
PY_MOD     := $(BUILD)/python/lockstep/_lockstep$(PY_EXT)
PY_MOD_SO  := $(BUILD)/python-so/_lockstep$(PY_EXT)
PY_FILES   := $(PY_SRC:python/%=$(BUILD)/python/%)
PY_INSTALLED = $(if $(PY_CONF),$(PY_SRC:python/%=$(pythondir)/%) $(pythondir)/lockstep/_lockstep$(PY_EXT))
# Python.h comes in as a system header (-isystem): the strict warnings stay on for our code.
PY_CFLAGS   = $(OPT) $(CFLAGS) -std=c11 -ffp-contract=off -fPIC $(WARN) \
              -Iinclude -isystem $(PY_INCLUDE) -pthread

DEB_PKGS := build-essential libxxhash-dev libsqlite3-dev libcmocka-dev zlib1g-dev \
            dataset-fashion-mnist fortunes sqlite3 clang libclang-rt-14-dev libpng-dev pkg-config python3-numpy \
            libopenmpi-dev openmpi-bin python3-networkx python3-torch python3-dev python3-setuptools \
            python3-wheel python3-venv python3-pytest python3-xxhash
# `make bench-peer` only (PyTorch with OpenBLAS, the peer it is timed against).
PEER_PKGS := python3-torch libopenblas0-pthread python3-scipy

.PHONY: all deps build test demo bench bench-peer golden-check golden-update help clean mpi \
        check-builds check-asan check-tsan check-layers install uninstall examples python
.PHONY: check-report docs-cli deps-cross check-cross
.DEFAULT_GOAL := all

all: $(BIN) $(LIB) $(SO) $(SO_LINKS) $(TEST_BIN) $(TEST_SH_BIN) $(TEST_TOOL_BIN)

help:
	@echo "make deps          install missing Debian packages (apt-get, as root)"
	@echo "make               build $(BIN), $(LIB), $(SO) and the tests"
	@echo "make test          deps + build + every test; ends with 'N passed, N failed'"
	@echo "make demo          deps + build + train Fashion-MNIST at 1 thread and every core, verify"
	@echo "make bench         throughput per thread count, tree vs unordered"
	@echo "make mpi           build $(BUILD)/lockstep-mpi (Open MPI: mpirun -np R $(BUILD)/lockstep-mpi train ...)"
	@echo "make bench-peer    installs python3-torch (+ scipy): the MLP and the cnn in PyTorch at 1 and 2 threads, cliques and GED in networkx (not in test)"
	@echo "make golden-check  re-run every golden file at several thread counts"
	@echo "make docs-cli      doc/lockstep.1 and docs/cli.md from the command table (tools/commands.c)"
	@echo "make check-layers  every #include \"...\" goes to its own folder or a lower layer"
	@echo "make check-builds  gcc -O0/-O2/-O3 -march=native, clang -O2/-O3 -march=native, SIMD off: golden files identical"
	@echo "make check-cross   deps-cross + aarch64 (qemu cortex-a53, max) and s390x (qemu): golden files,"
	@echo "                   determinism and format tests, the fused-operation guard"
	@echo "make deps-cross    cross compilers, qemu-user and the :arm64/:s390x libraries (root)"
	@echo "make check-asan    the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer"
	@echo "make check-tsan    the whole test suite under ThreadSanitizer"
	@echo "make check-report  a report of two real runs opened in headless Chromium (installed if missing):"
	@echo "                   screenshot not blank, DOM holds both curves and the first diverging step"
	@echo "make fuzz          libFuzzer targets (clang, ASan+UBSan), FUZZ_SECONDS=60 each; fuzz-ci: 20 s each"
	@echo "make examples      build examples/*.c against this build into $(BUILD)/examples/"
	@echo "make python        the Python package against this build into $(BUILD)/python/ (PYTHONPATH=$(BUILD)/python)"
	@echo "make install       lockstep, liblockstep.a/.so, lockstep.h, lockstep.pc, the man page into"
	@echo "                   \$$(DESTDIR)\$$(PREFIX) (PREFIX=$(PREFIX)), and the Python package for $(or $(PYTHON),no python3)"
	@echo "make uninstall     remove exactly those files (same PREFIX and DESTDIR)"
	@echo "make clean         remove $(BUILD)/"
	@echo "variables: CC=clang  OPT='-O3'  BUILD=build-x  WERROR=  PREFIX=/usr  DESTDIR=/tmp/stage"

# Installs only what is missing, so it is a no-op (and needs no root) on a ready machine.
deps:
	@missing=$$(for p in $(DEB_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	    | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing $$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "deps: run as root to install: $$missing" >&2; exit 2; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi

build: $(BIN) $(LIB) $(SO) $(SO_LINKS) $(TEST_BIN) $(TEST_SH_BIN) $(TEST_TOOL_BIN) python

# Before the first compile in a build folder: is there a compiler, and are
# the headers of the libraries there? Without them a machine would stop at a
# compiler error deep in some file; this says in one line what to do. The
# stamp makes it a one-time cost per build folder.
DEP_HEADERS_LIB  := sqlite3.h:libsqlite3-dev xxhash.h:libxxhash-dev png.h:libpng-dev zlib.h:zlib1g-dev
DEP_HEADERS_TEST := cmocka.h:libcmocka-dev
define check_headers
	@command -v $(firstword $(CC)) >/dev/null 2>&1 || \
	  { echo "lockstep: no C compiler '$(CC)' (Debian package build-essential): run 'make deps' as root" >&2; exit 2; }
	@for hp in $(1); do h=$${hp%%:*}; p=$${hp#*:}; \
	  echo "#include <$$h>" | $(CC) $(CFLAGS) -E -x c - >/dev/null 2>&1 || \
	  { echo "lockstep: missing <$$h> (Debian package $$p): run 'make deps' as root" >&2; exit 2; }; \
	done
	@mkdir -p $(dir $@) && touch $@
endef
$(BUILD)/deps-lib.ok:
	$(call check_headers,$(DEP_HEADERS_LIB))
$(BUILD)/deps-test.ok:
	$(call check_headers,$(DEP_HEADERS_TEST))
$(LIB_OBJ) $(TOOL_OBJ) $(TEST_OBJ) $(TEST_COMMON_OBJ): | $(BUILD)/deps-lib.ok
$(TEST_OBJ) $(TEST_COMMON_OBJ): | $(BUILD)/deps-test.ok

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

# Library objects go into the static and the shared library alike, so all are
# position-independent. -fno-semantic-interposition keeps calls inside the
# library inlinable as in a non-PIC build: the .so exports only ls_*, so
# nothing in it is meant to be interposed.
$(BUILD)/obj/base/%.o $(BUILD)/obj/engine/%.o $(BUILD)/obj/reduce/%.o $(BUILD)/obj/record/%.o: \
    PIC := -fPIC -fno-semantic-interposition

$(LIB): $(LIB_OBJ)
	@rm -f $@
	@ar rcs $@ $^

# The shared library exports the public API (ls_*) and nothing else: the
# internal modules can change without breaking programs linked to it.
$(BUILD)/liblockstep.map:
	@mkdir -p $(BUILD)
	@printf '{\n  global: ls_*;\n  local: *;\n};\n' > $@

# --no-undefined: the .so names every library it needs, so a program links it
# alone. Not with sanitizers: clang leaves their run-time to the program.
comma   := ,
SO_DEFS := $(if $(filter -fsanitize=%,$(OPT) $(CFLAGS)),,-Wl$(comma)--no-undefined)
$(SO): $(LIB_OBJ) $(BUILD)/liblockstep.map
	@echo "LD $@"
	@$(CC) $(OPT) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) $(SO_DEFS) \
	    -Wl,--version-script=$(BUILD)/liblockstep.map -o $@ $(LIB_OBJ) $(LIB_LIBS)
$(BUILD)/$(SONAME): $(SO)
	@ln -sf $(notdir $<) $@
$(BUILD)/liblockstep.so: $(BUILD)/$(SONAME)
	@ln -sf $(notdir $<) $@

# Build facts recorded with every run: compiler, flags, git commit.
$(BUILD)/buildinfo.h: FORCE
	@mkdir -p $(BUILD)
	@{ echo '#define LS_BUILD_CC "'"$$($(CC) --version | head -n1 | tr -d '"\\')"'"'; \
	   echo '#define LS_BUILD_CFLAGS "'"$$(echo $(OPT) $(CFLAGS) $(LS_PINNED) | tr -d '"\\')"'"'; \
	   echo '#define LS_BUILD_GIT "'"$$(git rev-parse --short=12 HEAD 2>/dev/null || true)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty)"'"'; \
	 } > $@.tmp; cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
FORCE:

# The files that read the build facts: the tools, and engine/core/session_env.c, which
# records them with every run. (A rule for an object nobody asks for is
# inert, so this one is harmless in a tree without that file.)
$(TOOL_OBJ) $(BUILD)/obj/engine/core/session_env.o: $(BUILD)/buildinfo.h
$(BUILD)/obj/tools/%.o: INC_BUILD := -I$(BUILD)
$(BUILD)/obj/engine/core/session_env.o: INC_BUILD := -I$(BUILD)

$(BIN): $(TOOL_OBJ) $(LIB)
	@echo "LD $@"
	@$(CC) $(OPT) $(CFLAGS) $(LDFLAGS) -o $@ $(TOOL_OBJ) $(LIB) $(LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_COMMON_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(OPT) $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_COMMON_OBJ) $(LIB) -lcmocka $(LIBS)

# test_report also tests two modules of tools/ (the HTML writer, the DB:RUN rule).
REPORT_TOOL_OBJ := $(BUILD)/obj/tools/html.o $(BUILD)/obj/tools/runref.o
$(BUILD)/tests/test_report: $(BUILD)/obj/tests/test_report.o $(REPORT_TOOL_OBJ) $(TEST_COMMON_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(OPT) $(CFLAGS) $(LDFLAGS) -o $@ $< $(REPORT_TOOL_OBJ) $(TEST_COMMON_OBJ) $(LIB) -lcmocka $(LIBS)

# A shell test becomes an executable that runs tests/<name>.sh with this build's
# settings, so that the make it calls (make install) rebuilds nothing and
# what it compiles carries the same sanitizers as the library.
shq = '$(subst ','\'',$(1))'
$(TEST_SH_BIN): $(BUILD)/tests/%: tests/%.sh FORCE
	@mkdir -p $(dir $@)
	@{ echo '#!/bin/sh'; \
	   echo '# Generated by the Makefile: runs $< for build folder $(BUILD).'; \
	   echo ': "$${LOCKSTEP_ROOT:=$(CURDIR)}"'; \
	   echo ': "$${BUILD:=$(BUILD)}"'; \
	   echo 'export LOCKSTEP_ROOT BUILD'; \
	   echo $(call shq,export LS_TEST_CC=$(call shq,$(CC))); \
	   echo $(call shq,export LS_TEST_OPT=$(call shq,$(OPT))); \
	   echo $(call shq,export LS_TEST_CFLAGS=$(call shq,$(CFLAGS))); \
	   echo $(call shq,export LS_TEST_LDFLAGS=$(call shq,$(LDFLAGS))); \
	   echo $(call shq,export LS_TEST_SANITIZE=$(call shq,$(filter -fsanitize=% -fno-sanitize%,$(OPT) $(CFLAGS)))); \
	   echo 'exec sh "$$LOCKSTEP_ROOT/$<" "$$@"'; \
	 } > $@.tmp; chmod 755 $@.tmp; if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

# The examples, built against this build (no install needed): the public
# header from include/, the static library.
examples: $(EXAMPLE_BIN)
$(BUILD)/examples/%: examples/%.c include/lockstep.h $(LIB) | $(BUILD)/deps-lib.ok
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(OPT) $(CFLAGS) $(LS_PINNED) $(WARN) -Iinclude $(LDFLAGS) -o $@ $< $(LIB) $(LIBS)

# The Python package against this build: $(BUILD)/python/lockstep/ holds the
# extension (liblockstep.a linked in, so no library path is needed) and
# copies of python/lockstep/ (tests/test_python.sh runs it from there).
python: $(PY_MOD) $(PY_FILES)
$(BUILD)/deps-python.ok:
	@[ -n "$(PY_CONF)" ] || { echo "lockstep: no $(or $(PYTHON),python3) (Debian package python3): run 'make deps' as root" >&2; exit 2; }
	@[ -f "$(PY_INCLUDE)/Python.h" ] || \
	  { echo "lockstep: missing <Python.h> (Debian package python3-dev): run 'make deps' as root" >&2; exit 2; }
	@mkdir -p $(dir $@) && touch $@
$(PY_MOD): python/src/_lockstep.c include/lockstep.h $(LIB) | $(BUILD)/deps-python.ok
	@mkdir -p $(dir $@)
	@echo "CC $< (Python $(PY_VER))"
	@$(CC) $(PY_CFLAGS) $(LDFLAGS) -shared -o $@ $< $(LIB) $(LIB_LIBS)
# For install: linked to the shared library (its soname), found through the
# loader's cache, or through a run path when libdir is not a system folder.
PY_RPATH = $(if $(filter /usr/lib /usr/local/lib,$(libdir)),,-Wl$(comma)-rpath$(comma)$(libdir))
$(PY_MOD_SO): python/src/_lockstep.c include/lockstep.h $(SO) FORCE | $(BUILD)/deps-python.ok
	@mkdir -p $(dir $@)
	@echo "CC $< (Python $(PY_VER), shared)"
	@$(CC) $(PY_CFLAGS) $(LDFLAGS) -shared -o $@.tmp $< $(SO) $(PY_RPATH) -pthread && mv $@.tmp $@
$(BUILD)/python/lockstep/%.py: python/lockstep/%.py
	@mkdir -p $(dir $@)
	@cp $< $@

# Objects of the shared test helpers are not intermediate files to delete.
.SECONDARY: $(TEST_COMMON_OBJ) $(TEST_TOOL_BIN:$(BUILD)/tests/%=$(BUILD)/obj/tests/%.o)

test: deps
	@$(MAKE) --no-print-directory -j$(LS_JOBS) build
	@BUILD=$(BUILD) sh tests/run_tests.sh

check-layers:
	@sh tools/check_layers.sh

# The manual page and the CLI reference are generated from the command table
# (tools/commands.c); tests/test_cli_docs.sh fails when they are out of date.
docs-cli: $(BIN)
	@$(BIN) help --man >doc/lockstep.1.tmp && mv doc/lockstep.1.tmp doc/lockstep.1
	@$(BIN) help --markdown >docs/cli.md.tmp && mv docs/cli.md.tmp docs/cli.md
	@echo "docs-cli: wrote doc/lockstep.1 and docs/cli.md"

# A report of real runs in a real browser (tools/check_report.sh); the
# screenshot is kept as $(BUILD)/check-report/report.png (docs/report.png is
# the README's copy).
check-report: deps
	@$(MAKE) --no-print-directory -j$(LS_JOBS) $(BIN)
	@sh tools/check_report.sh $(BIN)

# build/lockstep-mpi: tools/mpi_main.c (the only file that includes mpi.h)
# over the same tool objects and library; the default build never needs MPI.
# Compiled by $(CC) with Open MPI's flags from mpicc (its headers as system
# headers, so the strict warnings stay on for our code alone).
MPICC       ?= mpicc
MPI_BIN     := $(BUILD)/lockstep-mpi
MPI_CFLAGS   = $(patsubst -I%,-isystem %,$(shell $(MPICC) --showme:compile 2>/dev/null))
MPI_LDFLAGS  = $(shell $(MPICC) --showme:link 2>/dev/null)
mpi: $(MPI_BIN)
$(MPI_BIN): tools/mpi_main.c $(filter-out $(BUILD)/obj/tools/lockstep.o,$(TOOL_OBJ)) $(LIB) $(BUILD)/buildinfo.h
	@command -v $(MPICC) >/dev/null 2>&1 || \
	  { echo "lockstep: no $(MPICC) (Debian packages libopenmpi-dev openmpi-bin): run 'make deps' as root" >&2; exit 2; }
	@mkdir -p $(BUILD)/obj/tools
	@echo "CC $< (MPI)"
	@$(CC) $(OPT) $(CFLAGS) $(LS_PINNED) $(WARN) -I. -Iinclude -I$(BUILD) -pthread $(MPI_CFLAGS) \
	    -c $< -o $(BUILD)/obj/tools/mpi_main.o
	@echo "LD $@"
	@$(CC) $(OPT) $(CFLAGS) $(LDFLAGS) -o $@ $(BUILD)/obj/tools/mpi_main.o \
	    $(filter-out $(BUILD)/obj/tools/lockstep.o,$(TOOL_OBJ)) $(LIB) $(LIBS) $(MPI_LDFLAGS)

# lockstep.pc names folders under the prefix as ${prefix}/..., so that
# pkg-config --define-variable=prefix=... can move them all.
pc_dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))

install: $(BIN) $(LIB) $(SO) include/lockstep.h lockstep.pc.in doc/lockstep.1 $(if $(PY_CONF),$(PY_MOD_SO))
	@echo "install into $(DESTDIR)$(PREFIX)"
	@install -d "$(DESTDIR)$(bindir)" "$(DESTDIR)$(libdir)" "$(DESTDIR)$(includedir)" \
	    "$(DESTDIR)$(pkgconfigdir)" "$(DESTDIR)$(mandir)/man1"
	@install -m 755 $(BIN) "$(DESTDIR)$(bindir)/lockstep"
	@install -m 644 $(LIB) "$(DESTDIR)$(libdir)/liblockstep.a"
	@install -m 755 $(SO) "$(DESTDIR)$(libdir)/liblockstep.so.$(VERSION)"
	@ln -sf liblockstep.so.$(VERSION) "$(DESTDIR)$(libdir)/$(SONAME)"
	@ln -sf $(SONAME) "$(DESTDIR)$(libdir)/liblockstep.so"
	@install -m 644 include/lockstep.h "$(DESTDIR)$(includedir)/lockstep.h"
	@sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call pc_dir,$(libdir))|g' \
	    -e 's|@INCLUDEDIR@|$(call pc_dir,$(includedir))|g' \
	    -e 's|@VERSION@|$(VERSION)|g' lockstep.pc.in > "$(DESTDIR)$(pkgconfigdir)/lockstep.pc.tmp"
	@chmod 644 "$(DESTDIR)$(pkgconfigdir)/lockstep.pc.tmp"
	@mv "$(DESTDIR)$(pkgconfigdir)/lockstep.pc.tmp" "$(DESTDIR)$(pkgconfigdir)/lockstep.pc"
	@# The page's footer names the version being installed, from the header.
	@sed 's/^\(.TH .*"lockstep \)[0-9][0-9.]*"/\1$(VERSION)"/' doc/lockstep.1 \
	    > "$(DESTDIR)$(mandir)/man1/lockstep.1.tmp"
	@chmod 644 "$(DESTDIR)$(mandir)/man1/lockstep.1.tmp"
	@mv "$(DESTDIR)$(mandir)/man1/lockstep.1.tmp" "$(DESTDIR)$(mandir)/man1/lockstep.1"
	@# The Python package, for the python3 that PYTHON names (import lockstep).
	@$(if $(PY_CONF),install -d "$(DESTDIR)$(pythondir)/lockstep/tests" && \
	    install -m 644 $(filter python/lockstep/%.py,$(filter-out python/lockstep/tests/%,$(PY_SRC))) \
	        "$(DESTDIR)$(pythondir)/lockstep/" && \
	    install -m 644 $(filter python/lockstep/tests/%,$(PY_SRC)) "$(DESTDIR)$(pythondir)/lockstep/tests/" && \
	    install -m 755 $(PY_MOD_SO) "$(DESTDIR)$(pythondir)/lockstep/_lockstep$(PY_EXT)",\
	    echo "install: no $(or $(PYTHON),PYTHON): the Python package is left out")
	@# Into the live system as root: refresh the loader's cache for the new .so.
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

# Files and symlinks only; folders stay (they may hold others' files).
uninstall:
	@for f in $(INSTALLED); do \
	  if [ -e "$(DESTDIR)$$f" ] || [ -L "$(DESTDIR)$$f" ]; then echo "rm $(DESTDIR)$$f"; rm -f "$(DESTDIR)$$f"; fi; \
	done
	@# The package's folders are its own: their byte-code caches go, then the folders if empty.
	@$(if $(PY_CONF),for d in "$(DESTDIR)$(pythondir)/lockstep/tests" "$(DESTDIR)$(pythondir)/lockstep"; do \
	  rm -rf "$$d/__pycache__"; if [ -d "$$d" ]; then rmdir "$$d" 2>/dev/null || true; fi; done)
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

demo: deps
	@$(MAKE) --no-print-directory -j$(LS_JOBS) $(BIN)
	@sh tools/demo.sh $(BIN)

bench: deps
	@$(MAKE) --no-print-directory -j$(LS_JOBS) $(BIN)
	@sh tools/bench/all.sh $(BIN)

# PyTorch + OpenBLAS on the same MLP, interleaved with lockstep's own runs;
# then the declared models (peer_models.py, through the Python binding).
bench-peer: deps
	@$(MAKE) --no-print-directory -j$(LS_JOBS) $(BIN) python
	@missing=$$(for p in $(PEER_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	    | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "bench-peer: installing $$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "bench-peer: run as root to install: $$missing" >&2; exit 2; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@/usr/bin/python3 tools/bench/peer.py $(BIN)
	@/usr/bin/python3 tools/bench/peer_graph.py $(BIN)
	@/usr/bin/python3 tools/bench/peer_models.py $(BIN)

golden-check: $(BIN)
	$(BIN) golden check

golden-update: $(BIN)
	$(BIN) golden update

check-builds: deps
	@sh tools/check_builds.sh

# Other instruction sets and byte orders (tools/check_cross.sh): the CLI and
# test programs cross-built into build-aarch64/ and build-s390x/ and run under
# qemu-user. Nothing of this is in DEB_PKGS: `make test` stays lean.
deps-cross:
	@sh tools/check_cross.sh deps

check-cross: deps-cross
	@sh tools/check_cross.sh

# The sanitizer builds run the same suite (and the same binary for the CLI
# tests) from their own folders; any report fails the run.
SAN_COMMON := -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all
check-asan: deps
	@$(MAKE) --no-print-directory -j$(LS_JOBS) BUILD=build-asan OPT="$(SAN_COMMON) -fsanitize=address,undefined" build
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86 UBSAN_OPTIONS=print_stacktrace=1 \
	    BUILD=build-asan sh tests/run_tests.sh

# ThreadSanitizer cannot run the ifunc resolvers of function multiversioning
# (they run before its runtime is up), so this build has one version of each
# element-wise loop; the dense kernels' run-time dispatch is still exercised.
# It runs the programs whose cases drive the pool, the tree, training, the
# record's writers (TSAN_TESTS): the rest (the CLI through the binary,
# formats, bad input, docs) run no thread the unit tests do not, and under
# ThreadSanitizer they would cost most of CI's time budget.
TSAN_TESTS := test_pool test_tree test_train test_session test_plan test_reference test_sweep test_audit \
              test_crash test_api test_nn test_optim test_cliques test_ged test_logic_ca test_gnn test_arrays \
              test_record_ext
check-tsan: deps
	@$(MAKE) --no-print-directory -j$(LS_JOBS) BUILD=build-tsan OPT="$(SAN_COMMON) -fsanitize=thread -DLS_NO_CLONES" build
	@TSAN_OPTIONS=halt_on_error=1:exitcode=66 BUILD=build-tsan ONLY="$(TSAN_TESTS)" sh tests/run_tests.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan build-check-* build-fuzz build-aarch64 build-s390x

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(TEST_COMMON_OBJ:.o=.d)

include tests/fuzz/fuzz.mk
