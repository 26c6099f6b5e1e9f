# grammar: GBNF parsing and checks (src/grammar/grammar_parse.c, grammar_check.c),
# the pushdown automaton (grammar_state.c, grammar_match.c) and the token
# mask over a vocabulary trie (grammar_mask.c); its fuzzer.
GRAMMAR_CORE := base/status grammar/grammar_parse grammar/grammar_check grammar/grammar_state grammar/grammar_match \
  grammar/grammar_mask grammar/grammar_memo grammar/grammar_canon grammar/grammar_trie
GRAMMAR_OBJS := $(GRAMMAR_CORE) grammar/grammar_vocab

# test_grammar links the fuzz harness too (it replays fuzz/corpus/grammar).
UNIT_TESTS += test_grammar
TEST_GRAMMAR_OBJS := $(GRAMMAR_OBJS) base/unicode base/unicode_tables base/unicode_stream tokenizer/vocab \
  tokenizer/tokenizer_special tokenizer/tokenizer tokenizer/tokenizer_strtab tokenizer/tokenizer_split \
  tokenizer/tokenizer_bpe tokenizer/tokenizer_spm tokenizer/detokenizer tokenizer/vocab_pieces \
  base/mapped_file gguf/gguf_index gguf/gguf gguf/gguf_get gguf/quant
$(BUILDDIR)/tests/test_grammar: tests/unit/test_grammar.c fuzz/fuzz_grammar.c \
    $(patsubst %,$(BUILDDIR)/src/%.o,$(TEST_GRAMMAR_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< fuzz/fuzz_grammar.c \
	  $(patsubst %,$(BUILDDIR)/src/%.o,$(TEST_GRAMMAR_OBJS)) $(LIBS) \
	  -lcmocka -o $@

# libFuzzer target: make fuzz-grammar (clang-14), then e.g.
#   build/fuzz/fuzz_grammar -max_total_time=300 fuzz/corpus-run/grammar \
#     fuzz/corpus/grammar
# The committed corpus is replayed by test_grammar (make unit).
FUZZ_GRAMMAR_SRCS := fuzz/fuzz_grammar.c $(patsubst %,src/%.c,$(GRAMMAR_CORE))
.PHONY: fuzz-grammar
fuzz-grammar: build/fuzz/fuzz_grammar
build/fuzz/fuzz_grammar: $(FUZZ_GRAMMAR_SRCS) $(wildcard src/grammar*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_GRAMMAR_SRCS) -lm -o $@

# The mask dumper for tests/e2e/test_grammar_oracle.py (against llguidance).
GRAMMAR_DUMP_OBJS := $(TEST_GRAMMAR_OBJS)
all e2e: $(BUILDDIR)/tests/grammar_mask_dump
$(BUILDDIR)/tests/grammar_mask_dump: tests/tools/grammar_mask_dump.c \
    $(patsubst %,$(BUILDDIR)/src/%.o,$(GRAMMAR_DUMP_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< \
	  $(patsubst %,$(BUILDDIR)/src/%.o,$(GRAMMAR_DUMP_OBJS)) $(LIBS) -o $@

# The mask's CPU time per step (bench/grammar.py runs it):
#   build/release/tests/grammar_mask_bench MODEL GBNF [STEPS] [SEED] [--check]
all e2e: $(BUILDDIR)/tests/grammar_mask_bench
$(BUILDDIR)/tests/grammar_mask_bench: tests/tools/grammar_mask_bench.c \
    $(patsubst %,$(BUILDDIR)/src/%.o,$(GRAMMAR_DUMP_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< \
	  $(patsubst %,$(BUILDDIR)/src/%.o,$(GRAMMAR_DUMP_OBJS)) $(LIBS) -o $@
