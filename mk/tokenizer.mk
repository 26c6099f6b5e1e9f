# tokenizer: vocab loading, pre-tokenizers, BPE/SPM, detokenizer
# (src/tokenizer/, over src/base/ and src/gguf/), its fuzzer.
UNIT_TESTS += test_tokenizer test_tokenizer_golden test_detokenizer \
  test_tokenizer_wpm

# libFuzzer target: make fuzz-tokenizer (clang-14), then from the repository
# root (it loads models/):
#   build/fuzz/fuzz_tokenizer -max_total_time=600 fuzz/corpus-run/tokenizer \
#     fuzz/corpus/tokenizer
FUZZ_CC ?= clang-14
FUZZ_TOKENIZER_SRCS := fuzz/fuzz_tokenizer.c $(call src_of,base gguf tokenizer)

.PHONY: fuzz-tokenizer fuzz-wordpiece
fuzz-tokenizer: build/fuzz/fuzz_tokenizer
# The WordPiece tokenizer over all-MiniLM-L6-v2's vocabulary:
#   build/fuzz/fuzz_wordpiece -max_total_time=600 fuzz/corpus-run/wordpiece \
#     fuzz/corpus/wordpiece
fuzz-wordpiece: build/fuzz/fuzz_wordpiece

build/fuzz/fuzz_tokenizer: $(FUZZ_TOKENIZER_SRCS) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_TOKENIZER_SRCS) -lm -o $@

build/fuzz/fuzz_wordpiece: fuzz/fuzz_wordpiece.c $(FUZZ_TOKENIZER_SRCS) \
  $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -Ifuzz fuzz/fuzz_wordpiece.c $(filter-out fuzz/%,$(FUZZ_TOKENIZER_SRCS)) \
	  -lm -o $@

# make bench-tokenizer: throughput vs llama.cpp and no-space scaling (needs
# llama-cpp-python; not a test).
.PHONY: bench-tokenizer
bench-tokenizer: $(BUILDDIR)/bench/tokenizer
	TOKENIZER_BENCH=$(BUILDDIR)/bench/tokenizer python3 bench/tokenizer.py

$(BUILDDIR)/bench/tokenizer: bench/tokenizer.c $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -lpthread -lm -o $@
