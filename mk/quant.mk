# quant: tensor types, dequantization, activation quantization and the dot
# kernels (src/quant*.c, src/kernels/). Each SIMD file gets its own flags;
# the dispatcher calls it only on CPUs that have them.
CFLAGS_avx2 := -mavx2 -mfma -mf16c
CFLAGS_avx2_kquant := -mavx2 -mfma -mf16c
CFLAGS_avx2_quant := -mavx2 -mfma -mf16c
CFLAGS_avx2_klow := -mavx2 -mfma -mf16c
CFLAGS_avx512 := -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl \
  -mavx512vnni -mbmi2
CFLAGS_avx512_gemm := $(CFLAGS_avx512)
CFLAGS_avx512_gemv := $(CFLAGS_avx512)
CFLAGS_avx512_kquant := $(CFLAGS_avx512)
# The tile instructions are inline asm (see amx_gemm.c): no -mamx flags.
CFLAGS_amx_gemm := $(CFLAGS_avx512)
CFLAGS_amx_gemv := $(CFLAGS_avx512)
CFLAGS_amx_kquant := $(CFLAGS_avx512)

# The backend tables (dispatch.c) hold the row ops and attention loops too.
OPS_OBJS := kernels/ops kernels/ops_avx2 kernels/ops_avx512
ATTN_OBJS := kernels/attn_kernel kernels/attn_kernel_avx2 kernels/attn_kernel_avx512 \
  kernels/attn_flash kernels/attn_flash_typed kernels/attn_flash_avx512 \
  kernels/attn_flash_prompt kernels/attn_flash_prompt_avx512 \
  kernels/attn_flash_typed_avx512
KERNEL_OBJS := kernels/ref kernels/ref_block kernels/ref_tiled kernels/avx2 kernels/avx2_kquant kernels/avx2_klow \
  kernels/avx2_quant kernels/avx512 \
  kernels/avx512_gemm kernels/avx512_gemv kernels/avx512_kquant \
  kernels/amx_gemm kernels/amx_gemv kernels/amx_kquant kernels/dispatch \
  $(OPS_OBJS) $(ATTN_OBJS)
UNIT_TESTS += test_quant test_kernels
test_quant_DEPS := gguf/quant gguf/quant_dequant
test_kernels_DEPS := gguf/quant gguf/quant_dequant $(KERNEL_OBJS)
UNIT_TESTS += test_kernels_kquant
test_kernels_kquant_DEPS := gguf/quant gguf/quant_dequant $(KERNEL_OBJS)
# The K-quant matmuls against llama.cpp's own library (llama-cpp-python's,
# loaded at run time; the tests skip without it).
UNIT_TESTS += test_kernels_ggml
test_kernels_ggml_DEPS := gguf/quant gguf/quant_dequant $(KERNEL_OBJS)

# make bench: kernel micro-benchmark (not a test), ns per dot next to
# llama.cpp's vec_dot loaded at run time.
.PHONY: bench bench-kernels
bench: bench-kernels
bench-kernels: $(BUILDDIR)/bench/kernels
$(BUILDDIR)/bench/kernels: bench/kernels.c \
    $(patsubst %,$(BUILDDIR)/src/%.o,quant quant_dequant $(KERNEL_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -ldl -lm -o $@
