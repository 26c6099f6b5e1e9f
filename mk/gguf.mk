# gguf: the GGUF reader (src/gguf/, over src/base/), `nucleus info`, its fuzzer.
UNIT_TESTS += test_gguf

# libFuzzer target: make fuzz-gguf (clang-14), then e.g.
#   build/fuzz/fuzz_gguf -dict=fuzz/gguf.dict -max_total_time=600 \
#     fuzz/corpus-run/gguf fuzz/corpus/gguf
FUZZ_CC ?= clang-14
FUZZ_GGUF_SRCS := fuzz/fuzz_gguf.c $(call src_of,base gguf)

.PHONY: fuzz-gguf
fuzz-gguf: build/fuzz/fuzz_gguf

build/fuzz/fuzz_gguf: $(FUZZ_GGUF_SRCS) $(wildcard src/base/*.h src/gguf/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_GGUF_SRCS) -lm -o $@
