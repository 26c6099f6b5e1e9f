# Chat templates: the sandboxed Jinja interpreter (src/jinja_*.c) and the
# chat-template layer over it (src/chat_template.c, src/api_template.c).
JINJA_OBJS := base/status base/unicode jinja jinja_arena jinja_buf jinja_utf8 jinja_value \
  jinja_lex jinja_parse jinja_eval jinja_exec jinja_strings jinja_methods \
  jinja_globals jinja_filters jinja_tests jinja_json jinja_format

UNIT_TESTS += test_jinja test_chat_template
test_jinja_DEPS := $(JINJA_OBJS) chat_template chat_template_guard
test_chat_template_DEPS := $(JINJA_OBJS) chat_template chat_template_guard
UNIT_TESTS += test_chat_apply
test_chat_apply_LIB := 1

# libFuzzer target: make fuzz-template (clang-14), then
#   build/fuzz/fuzz_template -max_total_time=600 -dict=fuzz/template.dict \
#     fuzz/corpus-run/template fuzz/corpus/template
FUZZ_CC ?= clang-14
FUZZ_TEMPLATE_SRCS := fuzz/fuzz_template.c \
  $(patsubst %,src/%.c,$(JINJA_OBJS) chat_template chat_template_guard)

.PHONY: fuzz-template
fuzz-template: build/fuzz/fuzz_template

build/fuzz/fuzz_template: $(FUZZ_TEMPLATE_SRCS) $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_TEMPLATE_SRCS) -ljansson -lm -o $@
