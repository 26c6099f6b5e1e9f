# The sampler: logits to tokens per request across a batch, request-owned
# randomness, beam search bookkeeping.
SAMPLER_OBJS := base/status base/rng sampling/sampler sampling/sampler_params sampling/sampler_contract sampling/sampler_math \
                kernels/sampler_avx2 kernels/sampler_avx512 \
                sampling/sampler_select \
                sampling/sampler_batch sampling/sampler_inspect sampling/sampler_logprobs sampling/sampler_parallel base/threadpool
CFLAGS_sampler_math := -O3 -fno-trapping-math
CFLAGS_sampler_avx2 := -O3 -mavx2 -ffp-contract=off
CFLAGS_sampler_avx512 := -O3 -mavx512f -ffp-contract=off

UNIT_TESTS += test_rng
test_rng_DEPS := base/status base/rng
test_sampler_DEPS := $(SAMPLER_OBJS)
test_sampler_pipeline_DEPS := $(SAMPLER_OBJS)
test_sampler_props_DEPS := $(SAMPLER_OBJS)
test_beam_DEPS := base/status sampling/beam

# make bench-sampler: microseconds per row (release build), next to
# llama.cpp's sampler chain loaded at run time.
.PHONY: bench-sampler
bench-sampler: $(BUILDDIR)/bench/sampler
	$(BUILDDIR)/bench/sampler

$(BUILDDIR)/bench/sampler: bench/sampler.c bench/sampler_peer.c \
    $(patsubst %,$(BUILDDIR)/src/%.o,$(SAMPLER_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ibench $(LDFLAGS) $^ -ldl -lm -lpthread -o $@
UNIT_TESTS += test_sampler
test_sampler_DEPS := $(SAMPLER_OBJS)
UNIT_TESTS += test_sampler_pipeline
test_sampler_pipeline_DEPS := $(SAMPLER_OBJS)
UNIT_TESTS += test_sampler_props
test_sampler_props_DEPS := $(SAMPLER_OBJS)
UNIT_TESTS += test_beam
test_beam_DEPS := base/status sampling/beam
UNIT_TESTS += test_sampler_parallel
test_sampler_parallel_DEPS := $(SAMPLER_OBJS)

# libFuzzer target: make fuzz-sampler (clang-14), then e.g.
#   build/fuzz/fuzz_sampler -max_total_time=300 fuzz/corpus-run/sampler \
#     fuzz/corpus/sampler
# (built in one clang command: the AVX2/AVX-512 files compile to stubs and
# the portable passes run.)
FUZZ_SAMPLER_SRCS := fuzz/fuzz_sampler.c src/base/status.c src/base/rng.c \
  src/sampling/sampler.c src/sampling/sampler_params.c src/sampling/sampler_contract.c src/sampling/sampler_math.c src/kernels/sampler_avx2.c \
  src/kernels/sampler_avx512.c src/sampling/sampler_select.c src/sampling/sampler_batch.c src/sampling/sampler_inspect.c \
  src/sampling/sampler_logprobs.c src/sampling/beam.c
.PHONY: fuzz-sampler
fuzz-sampler: build/fuzz/fuzz_sampler
build/fuzz/fuzz_sampler: $(FUZZ_SAMPLER_SRCS) src/sampling/sampler.h src/sampling/beam.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_SAMPLER_SRCS) -lm -o $@
UNIT_TESTS += test_sampler_inspect
test_sampler_inspect_DEPS := $(SAMPLER_OBJS) api/api_sample
