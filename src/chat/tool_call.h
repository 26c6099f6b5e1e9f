/* tool_call: the native function-call syntax of each model family, parsed
 * out of a reply into OpenAI-style calls (name, arguments as a JSON text).
 *
 * A reply is a sequence of content and calls. The scanner decides, from the
 * start of the reply, which bytes are content and which form calls; it
 * stops where the text so far cannot decide (an opener begun but not yet
 * closed, or the tail that may still grow into an opener), so a streaming
 * caller re-scans the growing reply and emits what became decided. What is
 * decided never changes as the reply grows, and the last scan (final) of a
 * reply equals the whole-reply parse: content emitted while streaming
 * concatenates to the final content, calls come out in order.
 *
 * A call whose syntax is malformed (bad JSON, no name, an opener never
 * closed by the end of the reply) is content: never a half-parsed call. */
#ifndef NC_TOOL_CALL_H
#define NC_TOOL_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

typedef enum nc_tool_format {
  /* Families whose template defines no call syntax (SmolLM2, Gemma, ...):
   * <tool_call>{"name": ..., "arguments": {...}}</tool_call>, the tools
   * described by nc_tool_generic_prompt in the system message. */
  NC_TOOL_FORMAT_GENERIC,
  /* Hermes 2/3, Qwen 2.5, Qwen 3, SmolLM3: the same tags, rendered by the
   * model's own template. */
  NC_TOOL_FORMAT_HERMES,
  /* Llama 3.1-3.3: the reply is {"name": ..., "parameters": {...}} (calls
   * separated by ';'), optionally after <|python_tag|>. */
  NC_TOOL_FORMAT_LLAMA3,
  /* Mistral Nemo: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]. */
  NC_TOOL_FORMAT_MISTRAL,
  /* Mistral Small 3.2: [TOOL_CALLS]name[CALL_ID]id[ARGS]{...}, repeated. */
  NC_TOOL_FORMAT_MISTRAL_ARGS,
  /* Granite 3.x: <|tool_call|>[{"name": ..., "arguments": {...}}, ...]. */
  NC_TOOL_FORMAT_GRANITE,
  /* DeepSeek R1:
   * <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>
   * name\n```json\n{...}\n```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>. */
  NC_TOOL_FORMAT_DEEPSEEK_R1,
  /* gpt-oss's harmony: channels (analysis: the reasoning, final: the
   * content) and calls as commentary to=functions.NAME messages whose body
   * is the arguments (tool_call_harmony.c). */
  NC_TOOL_FORMAT_HARMONY,
  /* Gemma 4: <|tool_call>call:NAME{key:value,...}<tool_call|>, the
   * arguments in its own syntax (strings between <|"|> marks, bare keys;
   * nc_gemma4_args_json). */
  NC_TOOL_FORMAT_GEMMA4,
  NC_TOOL_FORMAT_COUNT
} nc_tool_format;

/* The family of a chat template, from the call syntax its source renders
 * (GENERIC when it renders none). */
nc_tool_format nc_tool_format_of_template(const char *src, size_t len);
const char *nc_tool_format_name(nc_tool_format f);
/* The strings that open a call in replies of this format (NULL-terminated),
 * e.g. for a lazily triggered grammar or for holding text back. LLAMA3's
 * bare JSON opener counts only at the start of a reply. */
const char *const *nc_tool_format_openers(nc_tool_format f);

typedef struct nc_tool_call {
  char *name;      /* NUL-terminated, malloc'd */
  char *arguments; /* a JSON object, compact, malloc'd */
  char *id;        /* the id the model wrote (MISTRAL_ARGS), or NULL */
} nc_tool_call;

/* What a scan decided, appended to by nc_tool_scan. */
typedef struct nc_tool_scan_result {
  char *content; /* the decided content, NUL-terminated (malloc'd) */
  size_t content_len;
  /* the decided reasoning (formats with a channel for it: harmony's
   * analysis), NUL-terminated (malloc'd), or NULL */
  char *reasoning;
  size_t reasoning_len;
  nc_tool_call *calls;
  size_t n_calls;
  size_t decided; /* bytes of the reply decided (content or calls) */
} nc_tool_scan_result;

/* Scans reply[0, len): fills out (cleared first) with the content and the
 * calls decided. final: the reply is complete (everything is decided; an
 * unclosed call is content). NC_ERR_NOMEM on allocation failure; the syntax
 * of the reply never fails. */
nc_code nc_tool_scan(nc_tool_format f, const char *reply, size_t len,
                     bool final, nc_tool_scan_result *out, nc_error *err);
void nc_tool_scan_result_clear(nc_tool_scan_result *r);
/* nc_tool_scan's HARMONY scanner (tool_call_harmony.c); reasoning_inline:
 * the analysis bodies go to the content too (nothing to the reasoning). */
nc_code nc_harmony_scan(const char *reply, size_t len, bool final,
                        bool reasoning_inline, nc_tool_scan_result *out,
                        nc_error *err);

/* Gemma 4's arguments s[0, n) (an object in its syntax, the whole text)
 * as compact JSON (malloc'd); NULL when they are not one. */
char *nc_gemma4_args_json(const char *s, size_t n);

/* For GENERIC: the system-message text that describes the tools
 * (tools_json: the request's `tools` array) and the call syntax; malloc'd,
 * NULL on a tools_json that is not a JSON array or out of memory. */
char *nc_tool_generic_prompt(const char *tools_json);

/* For GENERIC: messages_json rewritten for a template without tools: the
 * tool description joined to the (first, or a new) system message, the
 * assistant's tool_calls written back as <tool_call> lines of its content,
 * and tool results as user turns of <tool_response> blocks (consecutive
 * results in one turn). malloc'd JSON, NULL on malformed input or out of
 * memory. */
char *nc_tool_generic_messages(const char *messages_json,
                               const char *tools_json);

/* For templates that read a call's arguments as an object (GEMMA4 writes
 * them key by key): messages_json with every tool call's `arguments` JSON
 * text that holds an object replaced by that object (others kept).
 * malloc'd JSON, NULL on messages_json that is not a JSON array or out of
 * memory. */
char *nc_tool_object_arguments(const char *messages_json);

#endif
