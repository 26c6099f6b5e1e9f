# The sampler: logits to tokens per request across a batch, request-owned
# randomness, beam search bookkeeping (src/sampling/, its SIMD passes in
# src/kernels/sampler_*.c).
CFLAGS_src/sampling/sampler_math := -O3 -fno-trapping-math
CFLAGS_src/kernels/sampler_avx2 := -O3 -mavx2 -ffp-contract=off
CFLAGS_src/kernels/sampler_avx512 := -O3 -mavx512f -ffp-contract=off

UNIT_TESTS += test_rng test_sampler test_sampler_pipeline test_sampler_props \
  test_beam test_sampler_parallel test_sampler_inspect test_spec_verify \
  test_spec_ngram test_spec_policy

# make bench-sampler: microseconds per row (release build), next to
# llama.cpp's sampler chain loaded at run time.
.PHONY: bench-sampler
bench-sampler: $(BUILDDIR)/bench/sampler
	$(BUILDDIR)/bench/sampler

$(BUILDDIR)/bench/sampler: bench/sampler.c bench/sampler_peer.c \
    $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ibench $(LDFLAGS) $^ -ldl -lm -lpthread -o $@

# libFuzzer target: make fuzz-sampler (clang-14), then e.g.
#   build/fuzz/fuzz_sampler -max_total_time=300 fuzz/corpus-run/sampler \
#     fuzz/corpus/sampler
# (built in one clang command: the AVX2/AVX-512 files compile to stubs and
# the portable passes run; the other kernels are not needed.)
FUZZ_SAMPLER_SRCS := fuzz/fuzz_sampler.c $(call src_of,base sampling) \
  $(wildcard src/kernels/sampler_*.c)
.PHONY: fuzz-sampler
fuzz-sampler: build/fuzz/fuzz_sampler
build/fuzz/fuzz_sampler: $(FUZZ_SAMPLER_SRCS) $(wildcard src/sampling/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_SAMPLER_SRCS) -lm -o $@
