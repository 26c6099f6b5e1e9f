# quant: tensor types, dequantization, activation quantization (src/gguf/
# quant*.c) and the dot kernels (src/kernels/). Each SIMD file gets its own
# flags; the dispatcher calls it only on CPUs that have them.
CFLAGS_src/kernels/avx2 := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/avx2_kquant := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/avx2_quant := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/avx2_klow := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/avx2_nl := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/avx2_lowbit := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/avx2_iq := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/avx512 := -mavx2 -mfma -mf16c -mavx512f -mavx512bw \
  -mavx512vl -mavx512vnni -mbmi2
CFLAGS_src/kernels/avx512_gemm := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/avx512_iq := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/avx512_f32 := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/avx512_gemv := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/avx512_kquant := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/avx512_kq16 := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/avx512_nl := $(CFLAGS_src/kernels/avx512) -mavx512dq
CFLAGS_src/kernels/avx512_nl_gemm := $(CFLAGS_src/kernels/avx512_nl)
CFLAGS_src/kernels/avx512_iq4nl_gemm := $(CFLAGS_src/kernels/avx512_nl)
CFLAGS_src/kernels/avx512_i16_gemm := $(CFLAGS_src/kernels/avx512_nl)
# The tile instructions are inline asm (see amx_gemm.c): no -mamx flags.
CFLAGS_src/kernels/amx_gemm := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/amx_gemv := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/amx_few := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/amx_kquant := $(CFLAGS_src/kernels/avx512)
CFLAGS_src/kernels/avx2_f16 := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/avx512_f16 := $(CFLAGS_src/kernels/avx512)

UNIT_TESTS += test_quant test_kernels test_kernels_kquant
# (the plain-C models of the F16 orders are in tests/reference/)
test_kernels_REF := 1
# (the plain-C model of the tiled K-quant order is in tests/reference/)
test_kernels_kquant_REF := 1
# The K-quant matmuls against llama.cpp's own library (llama-cpp-python's,
# loaded at run time; the tests skip without it).
UNIT_TESTS += test_kernels_ggml
test_kernels_ggml_REF := 1
# The F16 matmuls against the plain-C model of their order
# (tests/reference/ref_f16_order.c).
UNIT_TESTS += test_gemm_f16
test_gemm_f16_REF := 1

# make bench: kernel micro-benchmark (not a test), ns per dot next to
# llama.cpp's vec_dot loaded at run time.
.PHONY: bench bench-kernels
bench: bench-kernels
bench-kernels: $(BUILDDIR)/bench/kernels
$(BUILDDIR)/bench/kernels: bench/kernels.c $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -ldl -lpthread -lm -o $@

# Issue 40's types on the real model (tests/unit/test_forward_quant.c): the
# default model requantized by llama.cpp's quantizer and llama.cpp's logits
# for each file, made through llama-cpp-python into build/quant/ (never
# committed; remade when the script or the model changes).
UNIT_TESTS += test_forward_quant
QUANT_CASES := iq4_nl iq4_xs tq1_0 tq2_0 mixed mxfp4 moe_mxfp4 nvfp4 q1_0 \
  q2_0 iq3_s iq_lattice
QUANT_FILES := $(QUANT_CASES:%=build/quant/smollm2_%.txt) \
  build/quant/gemma3_iq4_nl.txt build/quant/gemma3_iq4_xs.txt
build/quant/smollm2_%.txt: scripts/make_quant_models.py \
    scripts/gen_logits_golden.py bench/make_moe_shaped.py \
    models/SmolLM2-135M-Instruct.Q4_1.gguf
	python3 scripts/make_quant_models.py build/quant $*
build/quant/gemma3_%.txt: scripts/make_quant_models.py \
    scripts/gen_logits_golden.py models/gemma-3-270m-q4_k_m.gguf
	python3 scripts/make_quant_models.py build/quant gemma3_$*
.PHONY: quant-models
quant-models: model $(QUANT_FILES)
unit: quant-models
