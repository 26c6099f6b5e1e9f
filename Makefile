# nucleus build. Variants: make BUILD=release (default) | debug | asan
#   make            build build/$(BUILD)/nucleus
#   make test       the full suite: layers, unit tests (release and
#                   ASan+UBSan) and end-to-end tests (what CI runs)
#   make check      the fast tier for the edit-test loop: layers, then the
#                   release unit tests beside the end-to-end tests but the
#                   slow ones (long contexts, soaks, replicas, the schema
#                   corpus: @pytest.mark.slow), each output whole when done;
#                   the long golden checks on fewer positions
#                   (NUCLEUS_TEST_SHORT=1, tests/unit/test_require.h)
#                   (test and check build with JOBS jobs, default every core)
#   make unit       unit tests of this variant only
#   make e2e        pytest end-to-end tests against the real binary and model
#                   (a bounded 60 s server soak included; skips listed)
#   make model      fetch the default model into models/
#   make format     clang-format every source file
#   make install    install the header, libnucleus.a/.so, nucleus and
#                   nucleus.pc under $(PREFIX) (default /usr/local)
BUILD ?= release
BUILDDIR := build/$(BUILD)
CC ?= cc

CSTD := -std=c17 -D_GNU_SOURCE
WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wno-format-truncation
INCLUDES := -Iinclude -Isrc
LIBS := -ljansson -lpcre2-8 -lmicrohttpd -lcurl -ljpeg -lpng16 -lwebp -lpthread -lm
# What libnucleus itself needs (the server's libraries are the binary's).
LIB_LIBS := -ljansson -ljpeg -lpng16 -lwebp -lpthread -lm
PREFIX ?= /usr/local
# The release, read from the public header (NUCLEUS_VERSION).
VERSION := $(shell sed -n 's/^\#define NUCLEUS_VERSION "\(.*\)"$$/\1/p' include/nucleus.h)

ifeq ($(BUILD),release)
  OPT := -O2 -g
else ifeq ($(BUILD),debug)
  OPT := -O0 -g3
else ifeq ($(BUILD),asan)
  OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
         -fno-sanitize-recover=all
  LDOPT := -fsanitize=address,undefined
else
  $(error unknown BUILD=$(BUILD): use release, debug or asan)
endif

CFLAGS += $(CSTD) $(WARN) $(OPT) $(INCLUDES) -MMD -MP
LDFLAGS += $(LDOPT)

LIB_SRCS := $(sort $(wildcard src/*.c src/*/*.c src/*/*/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILDDIR)/%.o)
TOOL_SRCS := $(sort $(wildcard tools/cli/*.c tools/server/*.c tools/server/*/*.c))
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILDDIR)/%.o)
# The server's files name each other from its root ("http/http_reply.h").
$(TOOL_OBJS): CFLAGS += -Itools/server
# The tools' objects but main, for the unit tests of the server's parts.
TOOLS_LIB := $(BUILDDIR)/tools/libtools.a
NUCLEUS := $(BUILDDIR)/nucleus
SHLIB := $(BUILDDIR)/libnucleus.so
# Library objects are position-independent (for libnucleus.so) and hide every
# symbol but the ones include/nucleus.h marks NUCLEUS_API. Unit tests link the
# same objects statically, where hidden symbols still resolve.
# (Their flags live here: objects built before a change of them are rebuilt.)
$(LIB_OBJS): CFLAGS += -fPIC -fvisibility=hidden
$(LIB_OBJS): Makefile

# Each subsystem's fragment (mk/*.mk) adds its unit tests: UNIT_TESTS +=
# name builds tests/unit/name.c against libnucleus.a (the linker takes the
# objects it needs; name_REF := 1 adds the reference forwards of
# tests/reference/). Per-file flags live there too, keyed by path:
# CFLAGS_src/kernels/avx2 := -mavx2 ... (the path without .c).
UNIT_TESTS :=
# The sources of src/ folders, for the fuzzers that compile them with clang:
# $(call src_of,base gguf) is every .c file of src/base and src/gguf.
src_of = $(sort $(foreach d,$(1),$(wildcard src/$(d)/*.c src/$(d)/*/*.c)))
# Fragments may define extra targets (fuzz-*, bench-*): keep `all` the default.
.DEFAULT_GOAL := all
include $(sort $(wildcard mk/*.mk))

UNIT_BINS := $(UNIT_TESTS:%=$(BUILDDIR)/tests/%)

.PHONY: all test check unit e2e e2e-check model format clean run install layers
all: $(NUCLEUS) $(SHLIB)

$(BUILDDIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CFLAGS_$*) -c $< -o $@

$(BUILDDIR)/libnucleus.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(SHLIB): $(LIB_OBJS)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libnucleus.so $^ $(LIB_LIBS) -o $@

$(BUILDDIR)/nucleus.pc: Makefile
	@mkdir -p $(dir $@)
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' \
	  'includedir=$${prefix}/include' '' 'Name: nucleus' \
	  'Description: LLM inference engine (GGUF models, CPU)' \
	  'Version: $(VERSION)' 'Cflags: -I$${includedir}' \
	  'Libs: -L$${libdir} -lnucleus' 'Libs.private: $(LIB_LIBS)' > $@

# PREFIX is baked into nucleus.pc: rebuild it for every install.
install: $(NUCLEUS) $(SHLIB) $(BUILDDIR)/libnucleus.a
	@rm -f $(BUILDDIR)/nucleus.pc
	$(MAKE) $(BUILDDIR)/nucleus.pc
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(NUCLEUS) $(DESTDIR)$(PREFIX)/bin/nucleus
	install -m 644 include/nucleus.h $(DESTDIR)$(PREFIX)/include/nucleus.h
	install -m 644 $(BUILDDIR)/libnucleus.a $(DESTDIR)$(PREFIX)/lib/libnucleus.a
	install -m 755 $(SHLIB) $(DESTDIR)$(PREFIX)/lib/libnucleus.so
	install -m 644 $(BUILDDIR)/nucleus.pc \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/nucleus.pc

$(NUCLEUS): $(TOOL_OBJS) $(BUILDDIR)/libnucleus.a
	$(CC) $(LDFLAGS) $(TOOL_OBJS) $(BUILDDIR)/libnucleus.a $(LIBS) -o $@

.SECONDEXPANSION:
$(BUILDDIR)/tests/%: tests/unit/%.c $$(if $$($$*_REF),$(REF_OBJS)) $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(if $($*_REF),$(REF_OBJS)) \
	  $(BUILDDIR)/libnucleus.a $(LIBS) -lcmocka -o $@

# A missing or unloadable model fails the tests that need it, unless
# NUCLEUS_TESTS_WITHOUT_MODEL=1 (then they skip). The last lines count the
# passed, skipped and failed tests of every binary (scripts/run_unit.sh).
# UNIT_JOBS=N runs N test binaries at a time.
UNIT_JOBS ?= 1
unit: $(UNIT_BINS) $(NUCLEUS) model arch-models
	@NUCLEUS_MODEL=$(CURDIR)/models/SmolLM2-135M-Instruct.Q4_1.gguf \
	  NUCLEUS_ROOT=$(CURDIR) UNIT_JOBS=$(UNIT_JOBS) \
	  scripts/run_unit.sh $(BUILD) $(UNIT_BINS)

e2e: $(NUCLEUS) model arch-models
	NUCLEUS_BIN=$(CURDIR)/$(NUCLEUS) python3 -m pytest -q -rs tests/e2e

# The end-to-end tests not marked slow (tests/e2e/conftest.py says which
# are). Both tiers read the random-weight files of arch-models.
e2e-check: $(NUCLEUS) model arch-models
	NUCLEUS_BIN=$(CURDIR)/$(NUCLEUS) python3 -m pytest -q -rs -m "not slow" \
	  tests/e2e

model:
	@scripts/fetch_model.sh && scripts/fetch_gemma.sh && scripts/fetch_minilm.sh

# The layering of docs/ARCHITECTURE.md, in includes and in the objects' calls.
layers: $(LIB_OBJS) $(TOOL_OBJS)
	python3 scripts/check_layers.py $(BUILDDIR)

# The test binaries, the CLI and the generated model files of this variant
# (built in parallel by test and check before their tests run).
.PHONY: unit-bins
unit-bins: $(UNIT_BINS) $(NUCLEUS) arch-models

# Builds take every core (JOBS); the tests then run as before.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test: model
	$(MAKE) BUILD=release -j$(JOBS) layers
	$(MAKE) BUILD=release -j$(JOBS) unit-bins quant-models
	$(MAKE) BUILD=release unit
	$(MAKE) BUILD=asan -j$(JOBS) unit-bins
	$(MAKE) BUILD=asan unit
	$(MAKE) BUILD=release e2e

check: model
	$(MAKE) BUILD=release -j$(JOBS) layers
	$(MAKE) BUILD=release -j$(JOBS) unit-bins
	NUCLEUS_TEST_SHORT=1 $(MAKE) BUILD=release -j2 --output-sync=target \
	  unit e2e-check

run: $(NUCLEUS) model
	$(NUCLEUS) run -p "The three primary colors are" -n 64

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build

-include $(LIB_OBJS:.o=.d) $(TOOL_OBJS:.o=.d) $(UNIT_BINS:=.d)
