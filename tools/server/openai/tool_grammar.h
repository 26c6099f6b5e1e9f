/* nucleus serve: the grammar that forces a tool call (tool_choice
 * "required" or a named function): the model family's call syntax around
 * JSON that names one of the tools and whose arguments match that tool's
 * parameter schema (json_schema.h), so even a small model's call parses and
 * validates. */
#ifndef NUCLEUS_SERVER_TOOL_GRAMMAR_H
#define NUCLEUS_SERVER_TOOL_GRAMMAR_H

#include <jansson.h>

#include "http/api_error.h"
#include "nucleus.h"
#include "tool_grammar_text.h"
#include "tool_request.h"

/* At most this many calls in one forced reply (parallel_tool_calls). */
#define TOOL_GRAMMAR_MAX_CALLS 4

/* tools: the request's (checked) list; format: nucleus_model_tool_format.
 * *out: the compiled grammar (nucleus_grammar_free). 0, or -1 with *e (400
 * naming `tools` for a schema outside the supported subset). */
int tool_grammar_build(const json_t *tools, const tool_opts *o,
                       const char *format, nucleus_grammar **out, api_error *e);

/* tool_grammar_build's "harmony" (gpt-oss, tool_grammar_harmony.c): one
 * commentary message to functions.NAME whose body matches NAME's schema. */
int tool_grammar_harmony(const json_t *tools, const tool_opts *o,
                         nucleus_grammar **out, api_error *e);

/* tool_grammar_build's "gemma4" (tool_grammar_gemma4.c): calls
 * <|tool_call>call:NAME{...}<tool_call|>, the arguments NAME's schema in
 * Gemma 4's syntax; several back to back where parallel calls are
 * allowed. */
int tool_grammar_gemma4(const json_t *tools, const tool_opts *o,
                        nucleus_grammar **out, api_error *e);

/* For formats that write the name outside the arguments
 * (tool_grammar_named.c): for each tool o allows, its parameters' schema
 * converted in syntax with the rules renamed t<i>-... (appended to
 * rules), and the alternative "NAME" between t<i>-root (appended to alts,
 * joined by " | "; between: GBNF, empty or ending in a space). 0, or -1
 * with *e (400 naming `tools` for a schema outside the subset,
 * `tool_choice` when no tool is allowed). */
int tool_grammar_named(const json_t *tools, const tool_opts *o,
                       nucleus_value_syntax syntax, const char *between,
                       gbnf_buf *rules, gbnf_buf *alts, api_error *e);
/* Compiles g's text and frees it. 0, or -1 with *e. */
int tool_grammar_compile(gbnf_buf *g, nucleus_grammar **out, api_error *e);

/* For tool_choice "auto": the same grammar of calls (any tool, up to one
 * per tool) and the trigger that starts it (the format's call opener:
 * "<|tool_call>" for Gemma 4, "<|channel|>commentary to=" for harmony), for
 * a lazy grammar (nucleus_request_params.grammar_trigger). *out NULL: the
 * format has no fixed opener (llama3's bare JSON) or a tool's schema is
 * outside the subset; the reply is then only parsed. */
void tool_grammar_lazy(const json_t *tools, const tool_opts *o,
                       const char *format, nucleus_grammar **out,
                       const char **trigger);

#endif
