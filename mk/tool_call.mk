# Tool calls and reasoning: each model family's call syntax and thinking
# block parsed out of replies
# (src/chat/tool_call_*.c, reasoning.c, reply_scan.c).
UNIT_TESTS += test_tool_call test_tool_call_harmony test_reasoning

# libFuzzer target: make fuzz-tool-call (clang-14), then
#   build/fuzz/fuzz_tool_call -max_total_time=300 fuzz/corpus-run/tool_call \
#     fuzz/corpus/tool_call
FUZZ_TOOL_CALL_SRCS := fuzz/fuzz_tool_call.c \
  $(call src_of,base gguf tokenizer jinja chat)

.PHONY: fuzz-tool-call
fuzz-tool-call: build/fuzz/fuzz_tool_call

build/fuzz/fuzz_tool_call: $(FUZZ_TOOL_CALL_SRCS) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_TOOL_CALL_SRCS) -ljansson -lm -o $@
