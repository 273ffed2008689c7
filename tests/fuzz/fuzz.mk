# fuzz.mk — libFuzzer targets for the parsers of outside input.
#
# Included from the top Makefile (`include tests/fuzz/fuzz.mk`, after the
# top's own variables) and run from the repository root:
#
#   make fuzz-build         build every fuzzer into $(FUZZ_BUILD)/
#   make fuzz               run each for FUZZ_SECONDS (default 60); exit 1 on any crash
#   make fuzz-ci            the same for FUZZ_CI_SECONDS (default 20) each
#   make fuzz-clean         remove $(FUZZ_BUILD)/
#
# Everything is built with clang and -fsanitize=address,undefined (UBSan
# aborts: -fno-sanitize-recover) into its own directory, never into $(BUILD):
# the library sources with -fsanitize=fuzzer-no-link, each target with
# -fsanitize=fuzzer. The arithmetic flags are the project's (LS_PINNED when the
# top Makefile defines it). A run reads the seeds in tests/fuzz/corpus/<t>/
# and any saved crashes in tests/fuzz/crashes/<t>/, writes what it finds to a
# scratch corpus $(FUZZ_BUILD)/corpus/<t>/ (so the repository's corpus is
# never touched) and crash inputs to $(FUZZ_BUILD)/artifacts/<t>/. A crash
# worth keeping is copied to tests/fuzz/crashes/<t>/, where `make test`
# replays it (tests/test_fuzz_regress.c). Every variable here starts with
# FUZZ_ so nothing collides with the top Makefile.

FUZZ_CC          ?= clang
FUZZ_BUILD       ?= build-fuzz
FUZZ_SECONDS     ?= 60
FUZZ_CI_SECONDS  ?= 20
FUZZ_DIR         := tests/fuzz
# Extra libFuzzer flags: a hang of 10 s counts as a crash; one process only.
FUZZ_RUN_FLAGS   ?= -timeout=10 -rss_limit_mb=2048 -print_final_stats=1

FUZZ_PINNED   = $(if $(LS_PINNED),$(LS_PINNED),-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
                -ffp-contract=off -fno-fast-math -fno-math-errno -fopenmp-simd)
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_WARN     ?= -Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion -Wstrict-prototypes \
                 -Wmissing-prototypes -Wno-pass-failed
FUZZ_CFLAGS    = -g -O1 $(FUZZ_PINNED) $(FUZZ_WARN) $(FUZZ_SAN) -I. -pthread -MMD -MP
FUZZ_LIBS     := -lsqlite3 -lxxhash -lpng -lz -lm -pthread

FUZZ_TARGETS  := idx golden golden_run config checkpoint safetensors
FUZZ_BINS     := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
# The compute kernels, which no parser reaches, are compiled without the
# sanitizers and coverage: instrumented they take minutes (dense.c alone:
# over ten). They are still linked, since the config parser reaches the
# model registry and the registry every model (and a model its kernels).
# The arithmetic flags stay the project's.
FUZZ_PLAIN_SRC ?= engine/num/dense.c engine/models/mlp/mlp.c engine/models/logic/logic.c engine/core/model.c \
                  engine/models/logic/kernels/x86/avx512.c engine/models/logic/kernels/x86/avx2.c \
                  engine/core/optim.c engine/core/train.c reduce/tree.c
FUZZ_LIB_SRC  := $(filter-out $(FUZZ_PLAIN_SRC),$(LIB_SRC))
FUZZ_LIB_OBJ  := $(FUZZ_LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_PLAIN_OBJ := $(FUZZ_PLAIN_SRC:%.c=$(FUZZ_BUILD)/plain/%.o)
FUZZ_LIB      := $(FUZZ_BUILD)/liblockstep-fuzz.a
# cli_parse (tools/cli.c) reads the command table and the flag parser, and
# the table names every command: the tools' objects but main and MPI's.
FUZZ_CLI_SRC  := $(filter-out tools/lockstep.c tools/mpi_main.c,$(wildcard tools/*.c))
FUZZ_CLI_OBJ  := $(FUZZ_CLI_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_MAIN_OBJ := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/obj/$(FUZZ_DIR)/fuzz_%.o)

.PHONY: fuzz fuzz-build fuzz-ci fuzz-clean
# Keep the targets' objects (make would delete them as intermediate files).
.SECONDARY: $(FUZZ_MAIN_OBJ)

fuzz-build: $(FUZZ_BINS)

# Library and tool sources: instrumented for coverage, no libFuzzer main.
$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "FUZZ-CC $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# The targets themselves (a more specific pattern wins over the one above).
$(FUZZ_BUILD)/obj/$(FUZZ_DIR)/fuzz_%.o: $(FUZZ_DIR)/fuzz_%.c
	@mkdir -p $(dir $@)
	@echo "FUZZ-CC $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -c $< -o $@

# The build facts engine/core/session_env.c (and tools/) read: this build's compiler
# and flags, written once per fuzz build folder.
$(FUZZ_BUILD)/buildinfo.h:
	@mkdir -p $(dir $@)
	@{ echo '#define LS_BUILD_CC "'"$$($(FUZZ_CC) --version | head -n1 | tr -d '"\\')"'"'; \
	   echo '#define LS_BUILD_CFLAGS "'"$$(echo $(FUZZ_CFLAGS) | tr -d '"\\')"'"'; \
	   echo '#define LS_BUILD_GIT "'"$$(git rev-parse --short=12 HEAD 2>/dev/null || true)-fuzz"'"'; \
	 } > $@
$(FUZZ_BUILD)/obj/engine/core/session_env.o $(FUZZ_CLI_OBJ): $(FUZZ_BUILD)/buildinfo.h
$(FUZZ_BUILD)/obj/engine/core/session_env.o $(FUZZ_CLI_OBJ): FUZZ_CFLAGS += -I$(FUZZ_BUILD)

# The kernels: plain objects (see FUZZ_PLAIN_SRC).
$(FUZZ_BUILD)/plain/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "FUZZ-CC (plain) $<"
	@$(FUZZ_CC) -g -O1 $(FUZZ_PINNED) $(FUZZ_WARN) -I. -pthread -MMD -MP -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJ) $(FUZZ_PLAIN_OBJ)
	@rm -f $@
	@ar rcs $@ $^

# cli_parse lives in tools/, outside the library archive.
$(FUZZ_BUILD)/fuzz_config: $(FUZZ_CLI_OBJ)

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/obj/$(FUZZ_DIR)/fuzz_%.o $(FUZZ_LIB)
	@echo "FUZZ-LD $@"
	@$(FUZZ_CC) -g $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(FUZZ_LIB) $(FUZZ_LIBS)

# $(call FUZZ_RUN,seconds): run every target in turn (one process each, the
# machine is small), print one summary line per target from libFuzzer's final
# stats, show the log tail of any target that failed, and fail at the end if
# one did. The full log of target t is $(FUZZ_BUILD)/fuzz_t.log.
define FUZZ_RUN
	@fail=""; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t; \
	  dirs="$(FUZZ_BUILD)/corpus/$$t $(FUZZ_DIR)/corpus/$$t"; \
	  [ -d $(FUZZ_DIR)/crashes/$$t ] && dirs="$$dirs $(FUZZ_DIR)/crashes/$$t"; \
	  dict=""; [ -f $(FUZZ_DIR)/$$t.dict ] && dict="-dict=$(FUZZ_DIR)/$$t.dict"; \
	  log=$(FUZZ_BUILD)/fuzz_$$t.log; \
	  touch $(FUZZ_BUILD)/artifacts/$$t/.start; \
	  echo "FUZZ $$t: $(1) s"; \
	  if $(FUZZ_BUILD)/fuzz_$$t $(FUZZ_RUN_FLAGS) $$dict -max_total_time=$(1) \
	       -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ $$dirs >$$log 2>&1; then \
	    line=$$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' $$log | tail -n 1); \
	    execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log); \
	    rate=$$(sed -n 's/^stat::average_exec_per_sec: *//p' $$log); \
	    echo "ok   $$t: $$execs execs, $$rate exec/s; $$(echo "$$line" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [^ ]+')"; \
	  else \
	    echo "FAIL $$t: see $$log; new crash inputs:"; \
	    find $(FUZZ_BUILD)/artifacts/$$t -type f -newer $(FUZZ_BUILD)/artifacts/$$t/.start \
	      ! -name .start | sed 's/^/    /'; \
	    grep -E '^(==[0-9]+== ?ERROR|SUMMARY|fuzz_|.*runtime error)' $$log | head -n 20 | sed 's/^/    /'; \
	    fail="$$fail $$t"; \
	  fi; \
	done; \
	if [ -n "$$fail" ]; then echo "fuzz: crashes in:$$fail"; exit 1; fi
endef

# The build in $(LS_JOBS) jobs (the top Makefile's: one per core).
fuzz:
	@$(MAKE) --no-print-directory -j$(LS_JOBS) fuzz-build
	$(call FUZZ_RUN,$(FUZZ_SECONDS))

fuzz-ci:
	@$(MAKE) --no-print-directory -j$(LS_JOBS) fuzz-build
	$(call FUZZ_RUN,$(FUZZ_CI_SECONDS))

fuzz-clean:
	rm -rf $(FUZZ_BUILD)

-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_PLAIN_OBJ:.o=.d) $(FUZZ_CLI_OBJ:.o=.d) $(FUZZ_MAIN_OBJ:.o=.d)
