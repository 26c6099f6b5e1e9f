# The server's request parsing under libFuzzer (fuzz/fuzz_request.c): the
# JSON body -> parameters (tools/server/openai/request_parse.c), the engine's
# parameter check (src/engine/engine_params.c) and the prompt (tools/server/
# prompt.c: messages, tools, token-id prompts; templates through the real
# Jinja engine). make fuzz-request (clang-14), then e.g.
#   build/fuzz/fuzz_request -dict=fuzz/request.dict -max_total_time=300 \
#     fuzz/corpus-run/request fuzz/corpus/request
# The committed corpus is replayed by test_request_fuzz (make unit).
REQUEST_FUZZ_SERVER := openai/request_parse openai/structured openai/prompt \
  http/api_error http/json_text openai/tool_request
REQUEST_FUZZ_OBJS = $(sort base/status engine/engine_params engine/stop_matcher sampling/sampler_params sampling/sampler_contract \
  api/api_request_checks \
  $(JINJA_OBJS) chat/chat_template chat/chat_template_guard \
  api/api_grammar grammar/grammar_handle grammar/grammar_parse grammar/grammar_check grammar/grammar_state grammar/json_schema \
  grammar/grammar_match grammar/grammar_mask grammar/grammar_memo grammar/grammar_canon grammar/grammar_trie)
FUZZ_REQUEST_SRCS = fuzz/fuzz_request.c \
  $(REQUEST_FUZZ_SERVER:%=tools/server/%.c) \
  $(patsubst %,src/%.c,$(REQUEST_FUZZ_OBJS))

.PHONY: fuzz-request
fuzz-request: build/fuzz/fuzz_request

build/fuzz/fuzz_request: $(FUZZ_REQUEST_SRCS) $(wildcard src/*.h) \
    $(wildcard tools/server/*.h tools/server/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -Itools/server -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=all $(FUZZ_REQUEST_SRCS) -ljansson -lm -o $@

# The corpus replay, in every unit-test build (release and ASan+UBSan).
UNIT_TESTS += test_request_fuzz
$(BUILDDIR)/tests/test_request_fuzz: tests/unit/test_request_fuzz.c \
    fuzz/fuzz_request.c $(REQUEST_FUZZ_SERVER:%=$(BUILDDIR)/tools/server/%.o) \
    $(patsubst %,$(BUILDDIR)/src/%.o,$(REQUEST_FUZZ_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools/server $(LDFLAGS) $< \
	  $(REQUEST_FUZZ_SERVER:%=$(BUILDDIR)/tools/server/%.o) \
	  $(patsubst %,$(BUILDDIR)/src/%.o,$(REQUEST_FUZZ_OBJS)) $(LIBS) \
	  -lcmocka -o $@
