# Chat templates: the sandboxed Jinja interpreter (src/jinja/) and the
# chat-template layer over it (src/chat/, src/api/api_template.c).
UNIT_TESTS += test_jinja test_chat_template test_chat_apply

# libFuzzer target: make fuzz-template (clang-14), then
#   build/fuzz/fuzz_template -max_total_time=600 -dict=fuzz/template.dict \
#     fuzz/corpus-run/template fuzz/corpus/template
FUZZ_CC ?= clang-14
FUZZ_TEMPLATE_SRCS := fuzz/fuzz_template.c \
  $(call src_of,base gguf tokenizer jinja chat)

.PHONY: fuzz-template
fuzz-template: build/fuzz/fuzz_template

build/fuzz/fuzz_template: $(FUZZ_TEMPLATE_SRCS) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_TEMPLATE_SRCS) -ljansson -lm -o $@
