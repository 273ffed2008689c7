# lockstep — build, test, demo, bench and checks.  `make help` lists targets.
#
# The flags that keep the arithmetic order fixed (DESIGN.md §2.3) are not
# optional: -std=c11 -ffp-contract=off, never fast-math. They are in
# LS_PINNED, which every compile line carries after the user's CFLAGS.

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
CFLAGS  ?=
WERROR  ?= -Werror
LDFLAGS ?=

# Flags that would let the compiler reorder or fuse floating point.
BANNED := -ffast-math -Ofast -ffp-contract=fast -ffp-contract=on -fassociative-math \
          -funsafe-math-optimizations -freciprocal-math -fno-signed-zeros -ffinite-math-only
$(foreach f,$(BANNED),$(if $(filter $(f),$(CC) $(OPT) $(CFLAGS)),\
  $(error $(f) breaks the lockstep contract (DESIGN.md §2.3): the arithmetic order must stay fixed)))

LS_PINNED := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -ffp-contract=off -fno-fast-math -fno-math-errno -fopenmp-simd
WARN      := -Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion -Wstrict-prototypes \
             -Wmissing-prototypes -Wpointer-arith -Wformat=2 $(WERROR)
ALL_CFLAGS = $(OPT) $(CFLAGS) $(LS_PINNED) $(WARN) -pthread -MMD -MP
LIBS      := -lsqlite3 -lxxhash -lpng -lz -lm -pthread

LIB_SRC  := $(wildcard engine/*.c reduce/*.c record/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TOOL_SRC := $(wildcard tools/*.c)
TOOL_OBJ := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_COMMON_SRC := $(filter-out tests/test_%.c,$(wildcard tests/*.c))
TEST_COMMON_OBJ := $(TEST_COMMON_SRC:%.c=$(BUILD)/obj/%.o)
LIB      := $(BUILD)/liblockstep.a
BIN      := $(BUILD)/lockstep

DEB_PKGS := build-essential libxxhash-dev libsqlite3-dev libcmocka-dev zlib1g-dev \
            dataset-fashion-mnist sqlite3 clang libclang-rt-14-dev libpng-dev

.PHONY: all deps build test demo bench golden-check golden-update help clean \
        check-builds check-asan check-tsan
.DEFAULT_GOAL := all

all: $(BIN) $(TEST_BIN)

help:
	@echo "make deps          install missing Debian packages (apt-get, as root)"
	@echo "make               build $(BIN) and the tests"
	@echo "make test          deps + build + every test; ends with 'N passed, N failed'"
	@echo "make demo          deps + build + train Fashion-MNIST at 1 thread and every core, verify"
	@echo "make bench         throughput per thread count, tree vs unordered"
	@echo "make golden-check  re-run every golden file at several thread counts"
	@echo "make check-builds  gcc -O0/-O2/-O3 -march=native, clang -O2/-O3 -march=native, SIMD off: golden files identical"
	@echo "make check-asan    the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer"
	@echo "make check-tsan    the whole test suite under ThreadSanitizer"
	@echo "make fuzz          libFuzzer targets (clang, ASan+UBSan), FUZZ_SECONDS=60 each; fuzz-ci: 20 s each"
	@echo "make clean         remove $(BUILD)/"
	@echo "variables: CC=clang  OPT='-O3'  BUILD=build-x  WERROR="

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

build: $(BIN) $(TEST_BIN)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	@ar rcs $@ $^

# Build facts recorded with every run: compiler, flags, git commit.
$(BUILD)/buildinfo.h: FORCE
	@mkdir -p $(BUILD)
	@{ echo '#define LS_BUILD_CC "'"$$($(CC) --version | head -n1 | tr -d '"\\')"'"'; \
	   echo '#define LS_BUILD_CFLAGS "'"$$(echo $(OPT) $(CFLAGS) $(LS_PINNED) | tr -d '"\\')"'"'; \
	   echo '#define LS_BUILD_GIT "'"$$(git rev-parse --short=12 HEAD 2>/dev/null || true)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty)"'"'; \
	 } > $@.tmp; cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
FORCE:

$(BUILD)/obj/tools/%.o: tools/%.c $(BUILD)/buildinfo.h
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(ALL_CFLAGS) -I$(BUILD) -c $< -o $@

$(BIN): $(TOOL_OBJ) $(LIB)
	@echo "LD $@"
	@$(CC) $(OPT) $(CFLAGS) $(LDFLAGS) -o $@ $(TOOL_OBJ) $(LIB) $(LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_COMMON_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(OPT) $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_COMMON_OBJ) $(LIB) -lcmocka $(LIBS)

# Objects of the shared test helpers are not intermediate files to delete.
.SECONDARY: $(TEST_COMMON_OBJ)

test: deps
	@$(MAKE) --no-print-directory build
	@BUILD=$(BUILD) sh tests/run_tests.sh

demo: deps
	@$(MAKE) --no-print-directory $(BIN)
	@sh tools/demo.sh $(BIN)

bench: deps
	@$(MAKE) --no-print-directory $(BIN)
	@sh tools/bench.sh $(BIN)

golden-check: $(BIN)
	$(BIN) golden check

golden-update: $(BIN)
	$(BIN) golden update

check-builds: deps
	@sh tools/check_builds.sh

# The sanitizer builds run the same suite (and the same binary for the CLI
# tests) from their own folders; any report fails the run.
SAN_COMMON := -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all
check-asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="$(SAN_COMMON) -fsanitize=address,undefined" build
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86 UBSAN_OPTIONS=print_stacktrace=1 \
	    BUILD=build-asan sh tests/run_tests.sh

# ThreadSanitizer cannot run the ifunc resolvers of function multiversioning
# (they run before its runtime is up), so this build has one version of each
# element-wise loop; the dense kernels' run-time dispatch is still exercised.
check-tsan: deps
	@$(MAKE) --no-print-directory BUILD=build-tsan OPT="$(SAN_COMMON) -fsanitize=thread -DLS_NO_CLONES" build
	@TSAN_OPTIONS=halt_on_error=1:exitcode=66 BUILD=build-tsan sh tests/run_tests.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan build-check-* build-fuzz

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(TEST_BIN:$(BUILD)/tests/%=$(BUILD)/obj/tests/%.d)

include tests/fuzz/fuzz.mk
