# nucleus serve: unit tests of its pure parts, linked from tools/server
# objects (the generic unit-test rule links src/ objects only).
UNIT_TESTS += test_server_parts
SERVER_PARTS := json_text auth metrics server_config
$(BUILDDIR)/tests/test_server_parts: tests/unit/test_server_parts.c \
    $(SERVER_PARTS:%=$(BUILDDIR)/tools/server/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools/server $(LDFLAGS) $< \
	  $(SERVER_PARTS:%=$(BUILDDIR)/tools/server/%.o) $(LIBS) -lcmocka -o $@
