# The server's request parsing under libFuzzer (fuzz/fuzz_request.c): the
# JSON body -> parameters (tools/server/openai/request_parse.c), the engine's
# parameter check (src/engine/engine_params.c) and the prompt (tools/server/
# prompt.c: messages, tools, token-id prompts; templates through the real
# Jinja engine), and the embeddings and rerank bodies (tools/server/openai/
# embed_request.c). make fuzz-request (clang-14), then e.g.
#   build/fuzz/fuzz_request -dict=fuzz/request.dict -max_total_time=300 \
#     fuzz/corpus-run/request fuzz/corpus/request
# The committed corpus is replayed by test_request_fuzz (make unit).
REQUEST_FUZZ_SERVER := openai/request_parse openai/structured openai/prompt \
  http/api_error http/json_text openai/tool_request openai/speculative \
  openai/request_fields openai/harmony anthropic/messages_request \
  openai/reasoning_request openai/responses_request openai/responses_input \
  openai/responses_store openai/image_input openai/image_fetch \
  http/base64 openai/embed_request openai/embed_route
# The src/ folders it stands on, and the single files of the folders above
# them that parse and check parameters (clang builds the fuzzer from sources,
# without the kernels' per-file SIMD flags).
FUZZ_REQUEST_SRCS = fuzz/fuzz_request.c \
  $(REQUEST_FUZZ_SERVER:%=tools/server/%.c) \
  $(call src_of,base gguf tokenizer jinja chat grammar) \
  src/sampling/sampler_params.c src/sampling/sampler_contract.c \
  src/engine/engine_params.c src/engine/stop_matcher.c \
  src/engine/request_checks.c src/engine/engine_options.c \
  src/api/api_grammar.c src/api/api_request_checks.c \
  src/api/api_image.c $(wildcard src/vision/image*.c)

.PHONY: fuzz-request
fuzz-request: build/fuzz/fuzz_request

build/fuzz/fuzz_request: $(FUZZ_REQUEST_SRCS) $(wildcard src/*/*.h) \
    $(wildcard tools/server/*.h tools/server/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -Itools/server -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=all $(FUZZ_REQUEST_SRCS) -ljansson $(IMAGE_LIBS) -lcurl -lm \
	  -o $@

# The corpus replay, in every unit-test build (release and ASan+UBSan).
UNIT_TESTS += test_request_fuzz
$(BUILDDIR)/tests/test_request_fuzz: tests/unit/test_request_fuzz.c \
    fuzz/fuzz_request.c $(TOOLS_LIB) $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools/server $(LDFLAGS) $< $(TOOLS_LIB) \
	  $(BUILDDIR)/libnucleus.a $(LIBS) -lcmocka -o $@
