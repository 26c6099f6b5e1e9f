# grammar: GBNF parsing and checks (src/grammar/grammar_parse.c,
# grammar_check.c), the pushdown automaton (grammar_state.c, grammar_match.c)
# and the token mask over a vocabulary trie (grammar_mask.c); its fuzzer.
# The grammar folder and what it stands on, for the fuzzers.
GRAMMAR_FUZZ_SRCS = $(call src_of,base gguf tokenizer grammar)

# test_grammar links the fuzz harness too (it replays fuzz/corpus/grammar).
UNIT_TESTS += test_grammar
$(BUILDDIR)/tests/test_grammar: tests/unit/test_grammar.c fuzz/fuzz_grammar.c \
    $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< fuzz/fuzz_grammar.c \
	  $(BUILDDIR)/libnucleus.a $(LIBS) -lcmocka -o $@

# libFuzzer target: make fuzz-grammar (clang-14), then e.g.
#   build/fuzz/fuzz_grammar -max_total_time=300 fuzz/corpus-run/grammar \
#     fuzz/corpus/grammar
# The committed corpus is replayed by test_grammar (make unit).
FUZZ_GRAMMAR_SRCS = fuzz/fuzz_grammar.c $(GRAMMAR_FUZZ_SRCS)
.PHONY: fuzz-grammar
fuzz-grammar: build/fuzz/fuzz_grammar
build/fuzz/fuzz_grammar: $(FUZZ_GRAMMAR_SRCS) $(wildcard src/grammar/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_GRAMMAR_SRCS) -ljansson -lm -o $@

# The mask dumper for tests/e2e/test_grammar_oracle.py (against llguidance),
# and the mask's CPU time per step (bench/grammar.py runs it):
#   build/release/tests/grammar_mask_bench MODEL GBNF [STEPS] [SEED] [--check]
GRAMMAR_TOOLS := grammar_mask_dump grammar_mask_bench
all e2e e2e-check: $(GRAMMAR_TOOLS:%=$(BUILDDIR)/tests/%)
$(GRAMMAR_TOOLS:%=$(BUILDDIR)/tests/%): $(BUILDDIR)/tests/%: tests/tools/%.c \
    $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(BUILDDIR)/libnucleus.a $(LIBS) -o $@
