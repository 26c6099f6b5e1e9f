# nucleus serve: unit tests of its parts (the load gauges routers and
# endpoint pickers read, the pure JSON/auth/metrics/config helpers, the
# request-head checker and the origin checks), linked from an archive of the
# tools' objects (tools/cli/main.c's main left out) and the library.
$(TOOLS_LIB): $(filter-out $(BUILDDIR)/tools/cli/main.o,$(TOOL_OBJS))
	@rm -f $@
	ar rcs $@ $^

SERVER_UNIT_TESTS := test_load_gauges test_server_parts test_http_head \
  test_image_input \
  test_responses test_tool_grammar
UNIT_TESTS += $(SERVER_UNIT_TESTS)
$(SERVER_UNIT_TESTS:%=$(BUILDDIR)/tests/%): $(BUILDDIR)/tests/%: \
    tests/unit/%.c $(TOOLS_LIB) $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools/server $(LDFLAGS) $< $(TOOLS_LIB) \
	  $(BUILDDIR)/libnucleus.a $(LIBS) -lcmocka -o $@

# libFuzzer target: make fuzz-http-head (clang-14), then
#   build/fuzz/fuzz_http_head -max_total_time=300 fuzz/corpus-run/http_head \
#     fuzz/corpus/http_head
.PHONY: fuzz-http-head
fuzz-http-head: build/fuzz/fuzz_http_head
build/fuzz/fuzz_http_head: fuzz/fuzz_http_head.c tools/server/http/http_head.c \
    tools/server/http/http_head.h tools/server/http/http_body.c \
    tools/server/http/http_body.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g -Itools/server \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  fuzz/fuzz_http_head.c tools/server/http/http_head.c \
	  tools/server/http/http_body.c -o $@
