# Chat templates: the sandboxed Jinja interpreter (src/jinja_*.c) and the
# chat-template layer over it (src/chat/chat_template.c, src/api/api_template.c).
JINJA_OBJS := base/status base/unicode jinja/jinja jinja/jinja_arena jinja/jinja_buf jinja/jinja_utf8 jinja/jinja_value \
  jinja/jinja_lex jinja/jinja_parse jinja/jinja_eval jinja/jinja_exec jinja/jinja_strings jinja/jinja_methods \
  jinja/jinja_globals jinja/jinja_filters jinja/jinja_tests jinja/jinja_json jinja/jinja_format

UNIT_TESTS += test_jinja test_chat_template
test_jinja_DEPS := $(JINJA_OBJS) chat/chat_template chat/chat_template_guard
test_chat_template_DEPS := $(JINJA_OBJS) chat/chat_template chat/chat_template_guard
UNIT_TESTS += test_chat_apply
test_chat_apply_LIB := 1

# libFuzzer target: make fuzz-template (clang-14), then
#   build/fuzz/fuzz_template -max_total_time=600 -dict=fuzz/template.dict \
#     fuzz/corpus-run/template fuzz/corpus/template
FUZZ_CC ?= clang-14
FUZZ_TEMPLATE_SRCS := fuzz/fuzz_template.c \
  $(patsubst %,src/%.c,$(JINJA_OBJS) chat/chat_template chat/chat_template_guard)

.PHONY: fuzz-template
fuzz-template: build/fuzz/fuzz_template

build/fuzz/fuzz_template: $(FUZZ_TEMPLATE_SRCS) $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_TEMPLATE_SRCS) -ljansson -lm -o $@
