# gguf: the GGUF reader (mapped_file, gguf*), `nucleus info`, its fuzzer.
UNIT_TESTS += test_gguf
test_gguf_DEPS := base/status base/mapped_file gguf/gguf_index gguf/gguf gguf/gguf_get gguf/quant

# libFuzzer target: make fuzz-gguf (clang-14), then e.g.
#   build/fuzz/fuzz_gguf -dict=fuzz/gguf.dict -max_total_time=600 \
#     fuzz/corpus-run/gguf fuzz/corpus/gguf
FUZZ_CC ?= clang-14
FUZZ_GGUF_SRCS := fuzz/fuzz_gguf.c src/base/status.c src/base/mapped_file.c \
  src/gguf/gguf_index.c src/gguf/gguf.c src/gguf/gguf_get.c src/gguf/quant.c

.PHONY: fuzz-gguf
fuzz-gguf: build/fuzz/fuzz_gguf

build/fuzz/fuzz_gguf: $(FUZZ_GGUF_SRCS) src/gguf/gguf.h src/gguf/gguf_internal.h \
    src/gguf/gguf_index.h src/base/mapped_file.h src/gguf/quant.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_GGUF_SRCS) -lm -o $@
