# tokenizer: vocab loading, pre-tokenizers, BPE/SPM, detokenizer (src/tokenizer/vocab.c,
# src/tokenizer*.c, src/unicode*.c, src/tokenizer/detokenizer.c), its fuzzer.
TOKENIZER_OBJS := base/unicode base/unicode_tables base/unicode_stream tokenizer/vocab \
  tokenizer/tokenizer_special tokenizer/tokenizer tokenizer/tokenizer_strtab tokenizer/tokenizer_split \
  tokenizer/tokenizer_bpe tokenizer/tokenizer_spm tokenizer/detokenizer tokenizer/vocab_pieces
TOKENIZER_GGUF_OBJS := base/status base/mapped_file gguf/gguf_index gguf/gguf gguf/gguf_get gguf/quant

UNIT_TESTS += test_tokenizer test_tokenizer_golden test_detokenizer
test_tokenizer_DEPS := $(TOKENIZER_OBJS) $(TOKENIZER_GGUF_OBJS)
test_tokenizer_golden_DEPS := $(TOKENIZER_OBJS) $(TOKENIZER_GGUF_OBJS)
test_detokenizer_DEPS := $(TOKENIZER_OBJS) $(TOKENIZER_GGUF_OBJS)

# libFuzzer target: make fuzz-tokenizer (clang-14), then from the repository
# root (it loads models/):
#   build/fuzz/fuzz_tokenizer -max_total_time=600 fuzz/corpus-run/tokenizer \
#     fuzz/corpus/tokenizer
FUZZ_CC ?= clang-14
FUZZ_TOKENIZER_SRCS := fuzz/fuzz_tokenizer.c \
  $(patsubst %,src/%.c,$(TOKENIZER_OBJS) $(TOKENIZER_GGUF_OBJS))

.PHONY: fuzz-tokenizer
fuzz-tokenizer: build/fuzz/fuzz_tokenizer

build/fuzz/fuzz_tokenizer: $(FUZZ_TOKENIZER_SRCS) $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_TOKENIZER_SRCS) -lm -o $@

# make bench-tokenizer: throughput vs llama.cpp and no-space scaling (needs
# llama-cpp-python; not a test).
.PHONY: bench-tokenizer
bench-tokenizer: $(BUILDDIR)/bench/tokenizer
	TOKENIZER_BENCH=$(BUILDDIR)/bench/tokenizer python3 bench/tokenizer.py

$(BUILDDIR)/bench/tokenizer: bench/tokenizer.c \
    $(patsubst %,$(BUILDDIR)/src/%.o,$(TOKENIZER_OBJS) $(TOKENIZER_GGUF_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -lm -o $@
