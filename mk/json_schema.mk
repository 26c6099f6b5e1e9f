# json_schema: JSON Schema -> GBNF (src/grammar/json_schema.c) and its public calls
# (src/api/api_grammar.c); its fuzzer.
JSON_SCHEMA_CORE := $(sort base/status grammar/json_schema api/api_grammar grammar/grammar_handle \
  $(GRAMMAR_CORE))

# test_json_schema links the fuzz harness too (it replays
# fuzz/corpus/json_schema), and the library (nucleus_free).
UNIT_TESTS += test_json_schema
$(BUILDDIR)/tests/test_json_schema: tests/unit/test_json_schema.c \
    fuzz/fuzz_json_schema.c $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< fuzz/fuzz_json_schema.c \
	  $(BUILDDIR)/libnucleus.a $(LIBS) -lcmocka -o $@

# libFuzzer target: make fuzz-json-schema (clang-14), then e.g.
#   build/fuzz/fuzz_json_schema -dict=fuzz/json_schema.dict -max_total_time=300 \
#     fuzz/corpus-run/json_schema fuzz/corpus/json_schema
# The committed corpus is replayed by test_json_schema (make unit).
FUZZ_JSON_SCHEMA_SRCS := fuzz/fuzz_json_schema.c \
  $(patsubst %,src/%.c,$(JSON_SCHEMA_CORE))
.PHONY: fuzz-json-schema
fuzz-json-schema: build/fuzz/fuzz_json_schema
build/fuzz/fuzz_json_schema: $(FUZZ_JSON_SCHEMA_SRCS) $(wildcard src/grammar*.h) \
    src/grammar/json_schema.h include/nucleus.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_JSON_SCHEMA_SRCS) -ljansson -lm -o $@
