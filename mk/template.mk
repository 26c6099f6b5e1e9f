# Chat templates: the sandboxed Jinja interpreter (src/jinja_*.c) and the
# chat-template layer over it (src/chat_template.c, src/api_template.c).
JINJA_OBJS := status jinja jinja_arena jinja_buf jinja_utf8 jinja_value \
  jinja_lex jinja_parse jinja_eval jinja_exec jinja_strings jinja_methods \
  jinja_globals jinja_filters jinja_tests jinja_json

UNIT_TESTS += test_jinja
test_jinja_DEPS := $(JINJA_OBJS)
