# quantize: writing quantized model files (src/quantize/, nucleus quantize).
# tests/e2e/test_quantize.py compares whole files with llama.cpp's.
UNIT_TESTS += test_quantize_file test_iq_lattice

# libFuzzer target for the importance-matrix reader: make fuzz-imatrix
# (clang-14), then e.g.
#   build/fuzz/fuzz_imatrix -max_total_time=300 fuzz/corpus-run/imatrix \
#     fuzz/corpus/imatrix
# The committed seeds are loaded by test_quantize_file (make unit).
FUZZ_IMATRIX_SRCS := fuzz/fuzz_imatrix.c src/quantize/imatrix_load.c \
  $(call src_of,base gguf)

.PHONY: fuzz-imatrix
fuzz-imatrix: build/fuzz/fuzz_imatrix

build/fuzz/fuzz_imatrix: $(FUZZ_IMATRIX_SRCS) $(wildcard src/base/*.h \
    src/gguf/*.h src/quantize/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_IMATRIX_SRCS) -lm -o $@
