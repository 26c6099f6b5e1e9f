/* nucleus serve: structured output fields -> a compiled grammar
 * (nucleus_grammar) for the request: llama.cpp's `grammar` (GBNF text),
 * OpenAI's response_format {"type": "json_object"}, vLLM's guided_choice
 * and guided_grammar, and the same under vLLM's `structured_outputs`
 * ({"choice"}, {"grammar"}), and JSON Schema (response_format
 * json_schema, json_schema, guided_json). At most one of them per
 * request. */
#ifndef NUCLEUS_SERVER_STRUCTURED_H
#define NUCLEUS_SERVER_STRUCTURED_H

#include <jansson.h>

#include "http/api_error.h"
#include "nucleus.h"

/* *out: NULL when the request asks for none (free it with
 * nucleus_grammar_free); *param: the field that asked for it (a static
 * string: "response_format", "grammar", ...), or NULL. Returns 0, or -1
 * with *e (400 naming the field; a grammar error carries its line and
 * column). */
int structured_parse(const json_t *root, nucleus_grammar **out,
                     const char **param, api_error *e);

/* Logs (stderr) what the JSON Schema converter ignored: the GBNF's
 * leading "# json-schema: ..." comment lines, for the request field
 * param. */
void structured_log_schema_notes(const char *gbnf, const char *param);

/* The GBNF of any JSON object, compact (no whitespace). */
extern const char structured_json_object_gbnf[];

#endif
