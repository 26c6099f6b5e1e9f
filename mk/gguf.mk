# gguf: the GGUF reader (mapped_file, gguf*), `nucleus info`, its fuzzer.
UNIT_TESTS += test_gguf
test_gguf_DEPS := base/status base/mapped_file gguf_index gguf gguf_get quant

# libFuzzer target: make fuzz-gguf (clang-14), then e.g.
#   build/fuzz/fuzz_gguf -dict=fuzz/gguf.dict -max_total_time=600 \
#     fuzz/corpus-run/gguf fuzz/corpus/gguf
FUZZ_CC ?= clang-14
FUZZ_GGUF_SRCS := fuzz/fuzz_gguf.c src/base/status.c src/base/mapped_file.c \
  src/gguf_index.c src/gguf.c src/gguf_get.c src/quant.c

.PHONY: fuzz-gguf
fuzz-gguf: build/fuzz/fuzz_gguf

build/fuzz/fuzz_gguf: $(FUZZ_GGUF_SRCS) src/gguf.h src/gguf_internal.h \
    src/gguf_index.h src/base/mapped_file.h src/quant.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_GGUF_SRCS) -lm -o $@
