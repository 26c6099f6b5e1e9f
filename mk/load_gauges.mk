# nucleus serve: the load gauges routers and endpoint pickers read
# (tools/server/load_gauges.c), tested without a model.
UNIT_TESTS += test_load_gauges
$(BUILDDIR)/tests/test_load_gauges: tests/unit/test_load_gauges.c \
    $(BUILDDIR)/tools/server/load_gauges.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools/server $(LDFLAGS) $< \
	  $(BUILDDIR)/tools/server/load_gauges.o $(LIBS) -lcmocka -o $@
