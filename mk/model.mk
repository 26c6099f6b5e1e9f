# model: loading (model, arch_*), the paged KV cache, batches, the forward
# pass (context, ops, threadpool) and the public model API (api_model).
# Recursive (=) so that KERNEL_OBJS and TOKENIZER_OBJS (fragments included
# later) expand.
MODEL_OBJS = base/status base/mapped_file gguf/gguf_index gguf/gguf gguf/gguf_get gguf/quant gguf/quant_dequant \
             $(KERNEL_OBJS) base/threadpool model/batch kv/kv_cache kv/kv_prefix \
             model/model model/model_options api/api_model_options model/archs/arch_llama model/archs/arch_qwen2 model/archs/arch_qwen3 model/archs/arch_phi3 model/archs/arch_qwen3moe \
             model/archs/arch_gemma model/forward model/forward_moe model/forward_flash model/context api/api_model \
             $(TOKENIZER_OBJS)
# The SIMD builds of the attention loops and row ops (the backend tables
# choose them; same results).
CFLAGS_attn_kernel_avx2 := -mavx2 -mfma -mf16c
CFLAGS_attn_kernel_avx512 := -mavx512f -mavx2 -mfma -mf16c
CFLAGS_attn_flash_avx512 := -mavx512f -mavx2 -mfma -mf16c
CFLAGS_attn_flash_prompt_avx512 := -mavx512f -mavx2 -mfma -mf16c
CFLAGS_attn_flash_typed_avx512 := -mavx512f -mavx2 -mfma -mf16c
CFLAGS_ops_avx2 := -mavx2 -mfma -mf16c
CFLAGS_ops_avx512 := -mavx512f -mavx2 -mfma -mf16c

UNIT_TESTS += test_ops test_ops_simd test_kv_cache test_forward test_model_load
UNIT_TESTS += test_attn_flash test_forward_flash test_forward_kvq
test_attn_flash_DEPS = $(KERNEL_OBJS) gguf/quant gguf/quant_dequant
test_forward_flash_DEPS = $(MODEL_OBJS)
test_forward_kvq_DEPS = $(MODEL_OBJS)
test_ops_DEPS = $(KERNEL_OBJS) base/threadpool base/status gguf/quant gguf/quant_dequant
test_ops_simd_DEPS = $(KERNEL_OBJS) gguf/quant gguf/quant_dequant
test_kv_cache_DEPS := base/status kv/kv_cache kv/kv_prefix model/batch gguf/quant gguf/quant_dequant
test_forward_DEPS = $(MODEL_OBJS)
test_model_load_DEPS = $(MODEL_OBJS)

# The public boundary checks: the model-option table, the structured
# request parameters' checks and setters (no model needed).
UNIT_TESTS += test_param_checks
test_param_checks_LIB := 1
