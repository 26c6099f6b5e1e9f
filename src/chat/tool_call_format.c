/* tool_call_format: which call syntax a chat template's family uses, its
 * openers, and the tool description for families without a syntax. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tool_call.h"

static bool has(const char *src, size_t len, const char *needle) {
  return memmem(src, len, needle, strlen(needle)) != NULL;
}

nc_tool_format nc_tool_format_of_template(const char *src, size_t len) {
  if (!src) return NC_TOOL_FORMAT_GENERIC;
  /* Most specific first: each family's own marker of a call. */
  if (has(src, len, "<|channel|>") && has(src, len, "<|message|>"))
    return NC_TOOL_FORMAT_HARMONY;
  if (has(src, len,
          "<\xef\xbd\x9ctool\xe2\x96\x81"
          "calls\xe2\x96\x81"
          "begin"))
    return NC_TOOL_FORMAT_DEEPSEEK_R1;
  if (has(src, len, "[TOOL_CALLS]") && has(src, len, "[ARGS]"))
    return NC_TOOL_FORMAT_MISTRAL_ARGS;
  if (has(src, len, "[TOOL_CALLS]")) return NC_TOOL_FORMAT_MISTRAL;
  if (has(src, len, "<|tool_call>call:")) return NC_TOOL_FORMAT_GEMMA4;
  if (has(src, len, "<|tool_call|>")) return NC_TOOL_FORMAT_GRANITE;
  if (has(src, len, "<tool_call>")) return NC_TOOL_FORMAT_HERMES;
  if (has(src, len, "<|python_tag|>") ||
      (has(src, len, "<|start_header_id|>") && has(src, len, "ipython")))
    return NC_TOOL_FORMAT_LLAMA3;
  return NC_TOOL_FORMAT_GENERIC;
}

const char *nc_tool_format_name(nc_tool_format f) {
  static const char *const names[NC_TOOL_FORMAT_COUNT] = {
      [NC_TOOL_FORMAT_GENERIC] = "generic",
      [NC_TOOL_FORMAT_HERMES] = "hermes",
      [NC_TOOL_FORMAT_LLAMA3] = "llama3",
      [NC_TOOL_FORMAT_MISTRAL] = "mistral",
      [NC_TOOL_FORMAT_MISTRAL_ARGS] = "mistral-args",
      [NC_TOOL_FORMAT_GRANITE] = "granite",
      [NC_TOOL_FORMAT_DEEPSEEK_R1] = "deepseek-r1",
      [NC_TOOL_FORMAT_HARMONY] = "harmony",
      [NC_TOOL_FORMAT_GEMMA4] = "gemma4",
  };
  return (unsigned)f < NC_TOOL_FORMAT_COUNT ? names[f] : "unknown";
}

const char *const *nc_tool_format_openers(nc_tool_format f) {
  static const char *const tags[] = {"<tool_call>", NULL};
  static const char *const llama3[] = {"<|python_tag|>", "{", NULL};
  static const char *const mistral[] = {"[TOOL_CALLS]", NULL};
  static const char *const granite[] = {"<|tool_call|>", NULL};
  static const char *const harmony[] = {"<|channel|>", "<|start|>", NULL};
  static const char *const gemma4[] = {"<|tool_call>", NULL};
  static const char *const r1[] = {"<\xef\xbd\x9ctool\xe2\x96\x81"
                                   "calls\xe2\x96\x81"
                                   "begin\xef\xbd\x9c>",
                                   NULL};
  switch (f) {
  case NC_TOOL_FORMAT_LLAMA3: return llama3;
  case NC_TOOL_FORMAT_MISTRAL:
  case NC_TOOL_FORMAT_MISTRAL_ARGS: return mistral;
  case NC_TOOL_FORMAT_GRANITE: return granite;
  case NC_TOOL_FORMAT_DEEPSEEK_R1: return r1;
  case NC_TOOL_FORMAT_HARMONY: return harmony;
  case NC_TOOL_FORMAT_GEMMA4: return gemma4;
  default: return tags;
  }
}

char *nc_tool_generic_prompt(const char *tools_json) {
  json_error_t jerr;
  json_t *tools = tools_json ? json_loads(tools_json, 0, &jerr) : NULL;
  if (!json_is_array(tools)) {
    json_decref(tools);
    return NULL;
  }
  /* One line per function: its name, description and parameter schema. */
  json_t *fns = json_array();
  size_t i;
  json_t *t;
  json_array_foreach(tools, i, t) {
    json_t *fn = json_object_get(t, "function");
    if (json_is_object(fn)) json_array_append(fns, fn);
  }
  char *list = json_dumps(fns, JSON_INDENT(2));
  json_decref(fns);
  json_decref(tools);
  if (!list) return NULL;
  static const char head[] =
      "You can call functions. The functions you may call, as JSON (name, "
      "description and a JSON Schema of the arguments):\n";
  static const char tail[] =
      "\nTo call one, reply with exactly\n<tool_call>{\"name\": "
      "\"FUNCTION_NAME\", \"arguments\": {ARGUMENTS}}</tool_call>\nwhere "
      "ARGUMENTS match the function's schema; several calls are several such "
      "lines. The result of each call comes back in a later message. To "
      "answer without a call, reply in plain text.";
  size_t n = strlen(list);
  char *out = malloc(sizeof head - 1 + n + sizeof tail);
  if (out) {
    memcpy(out, head, sizeof head - 1);
    memcpy(out + sizeof head - 1, list, n);
    memcpy(out + sizeof head - 1 + n, tail, sizeof tail);
  }
  free(list);
  return out;
}
