# json_schema: JSON Schema -> GBNF (src/grammar/json_schema.c) and its public
# calls (src/api/api_grammar.c); its fuzzer.

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
# The committed corpus is replayed by test_json_schema (make unit). The
# public call it fuzzes is src/api/api_grammar.c's, over the grammar folder.
FUZZ_JSON_SCHEMA_SRCS = fuzz/fuzz_json_schema.c src/api/api_grammar.c \
  $(GRAMMAR_FUZZ_SRCS)
.PHONY: fuzz-json-schema
fuzz-json-schema: build/fuzz/fuzz_json_schema
build/fuzz/fuzz_json_schema: $(FUZZ_JSON_SCHEMA_SRCS) \
    $(wildcard src/grammar/*.h) include/nucleus.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_JSON_SCHEMA_SRCS) -ljansson -lm -o $@

# Schemas as grammars of Gemma 4's call arguments: walks read back by its
# argument reader into JSON the JSON grammar accepts.
UNIT_TESTS += test_json_schema_gemma4

# The keywords of real schemas (issue 38): ranges, lengths, combinators,
# objects, refs, notes.
UNIT_TESTS += test_json_schema_cover

# uniqueItems checked by the matcher (grammar_unique.c): repeats by value,
# exhaustive walks of small vocabularies, rollback and clones.
UNIT_TESTS += test_grammar_unique

# Strings of several patterns (allOf, lookaheads, a format with a
# pattern), against PCRE2 on every short string of small alphabets.
UNIT_TESTS += test_json_schema_meet

# Schemas through the converter and random walks of their grammars, for
# bench/jsonschema_bench.py:
#   build/release/tests/json_schema_walk MODEL [STEPS] [SEED] < schemas.jsonl
$(BUILDDIR)/tests/json_schema_walk: tests/tools/json_schema_walk.c \
    $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(BUILDDIR)/libnucleus.a $(LIBS) -o $@
