# nucleus serve: unit tests of its pure parts, linked from tools/server
# objects (the generic unit-test rule links src/ objects only).
UNIT_TESTS += test_server_parts
SERVER_PARTS := http/json_text http/auth metrics server_config
# server_config parses the model options with the CLI's model_flags.
SERVER_CLI_PARTS := model_flags
$(BUILDDIR)/tests/test_server_parts: tests/unit/test_server_parts.c \
    $(SERVER_PARTS:%=$(BUILDDIR)/tools/server/%.o) \
    $(SERVER_CLI_PARTS:%=$(BUILDDIR)/tools/cli/%.o) $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools/server $(LDFLAGS) $< \
	  $(SERVER_PARTS:%=$(BUILDDIR)/tools/server/%.o) \
	  $(SERVER_CLI_PARTS:%=$(BUILDDIR)/tools/cli/%.o) $(BUILDDIR)/libnucleus.a \
	  $(LIBS) -lcmocka -o $@

# The request-head checker and the origin checks (tools/server).
UNIT_TESTS += test_http_head
HTTP_HEAD_PARTS := http/http_head http/origin_guard
$(BUILDDIR)/tests/test_http_head: tests/unit/test_http_head.c \
    $(HTTP_HEAD_PARTS:%=$(BUILDDIR)/tools/server/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools/server $(LDFLAGS) $< \
	  $(HTTP_HEAD_PARTS:%=$(BUILDDIR)/tools/server/%.o) $(LIBS) -lcmocka -o $@

# libFuzzer target: make fuzz-http-head (clang-14), then
#   build/fuzz/fuzz_http_head -max_total_time=300 fuzz/corpus-run/http_head \
#     fuzz/corpus/http_head
.PHONY: fuzz-http-head
fuzz-http-head: build/fuzz/fuzz_http_head
build/fuzz/fuzz_http_head: fuzz/fuzz_http_head.c tools/server/http/http_head.c \
    tools/server/http/http_head.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g -Itools/server \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  fuzz/fuzz_http_head.c tools/server/http/http_head.c -o $@
