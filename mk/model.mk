# model: loading (src/model/, archs/), the paged KV cache (src/kv/), batches,
# the forward pass and the public model API (src/api/api_model.c).
# The SIMD builds of the attention loops and row ops (the backend tables
# choose them; same results).
CFLAGS_src/kernels/attn_kernel_avx2 := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/attn_kernel_avx512 := -mavx512f -mavx2 -mfma -mf16c
CFLAGS_src/kernels/attn_flash_avx512 := -mavx512f -mavx2 -mfma -mf16c
CFLAGS_src/kernels/attn_flash_prompt_avx512 := -mavx512f -mavx2 -mfma -mf16c
CFLAGS_src/kernels/attn_flash_typed_avx512 := -mavx512f -mavx2 -mfma -mf16c
CFLAGS_src/kernels/ops_avx2 := -mavx2 -mfma -mf16c
CFLAGS_src/kernels/ops_avx512 := -mavx512f -mavx2 -mfma -mf16c
CFLAGS_src/kernels/delta_net_avx2 := -mavx2 -mfma

UNIT_TESTS += test_ops test_ops_simd test_kv_cache test_forward test_model_load
UNIT_TESTS += test_attn_flash test_forward_flash test_forward_kvq
# Flash attention's split order on the random-weight files (build/arch).
UNIT_TESTS += test_forward_split
# make bench-split: the split order against the tiled one on a real model,
# teacher-forced over a long text (bench/flash_split.c; not a test).
.PHONY: bench-split
bench-split: $(BUILDDIR)/bench/flash_split
$(BUILDDIR)/bench/flash_split: bench/flash_split.c $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@
# make bench-rows: a forward call of k decode rows against one, k = 1 .. 9
# (bench/forward_rows.c; the verify step of speculative decoding).
.PHONY: bench-rows
bench-rows: $(BUILDDIR)/bench/forward_rows
$(BUILDDIR)/bench/forward_rows: bench/forward_rows.c $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@
# make bench-stream: the machine's streaming read bandwidth (bench/stream.c),
# bench/roofline.py's denominator.
.PHONY: bench-stream
bench-stream: $(BUILDDIR)/bench/stream
$(BUILDDIR)/bench/stream: bench/stream.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< -lpthread -o $@
# The list of architectures: every entry complete, names unique (links the
# test references to check that each family has one).
UNIT_TESTS += test_arch_list
test_arch_list_REF := 1
# nucleus_prompt_logprobs (a completion's echo with logprobs).
UNIT_TESTS += test_prompt_logprobs
# The option tables and the request checks: one message per failure.
UNIT_TESTS += test_param_checks
