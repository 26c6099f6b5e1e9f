/* nucleus serve: checking the tool-calling fields of a request. */
#include "tool_request.h"

#include <string.h>

/* OpenAI's rule for function names: ^[a-zA-Z0-9_-]{1,64}$. */
static bool valid_name(const char *s, size_t n) {
  if (!n || n > SERVER_MAX_TOOL_NAME) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  }
  return true;
}

/* A JSON Schema at the top of a function's parameters: an object whose
 * "type", when given, is "object". */
static int check_parameters(const json_t *p, size_t i, api_error *e) {
  if (!json_is_object(p))
    return api_fail(e, 400, "tools",
                    "tools[%zu].function.parameters must be a JSON Schema "
                    "object",
                    i);
  const json_t *type = json_object_get(p, "type");
  if (type &&
      !(json_is_string(type) && !strcmp(json_string_value(type), "object")))
    return api_fail(e, 400, "tools",
                    "tools[%zu].function.parameters must have \"type\": "
                    "\"object\"",
                    i);
  const json_t *props = json_object_get(p, "properties");
  if (props && !json_is_object(props))
    return api_fail(e, 400, "tools",
                    "tools[%zu].function.parameters.properties must be an "
                    "object",
                    i);
  const json_t *req = json_object_get(p, "required");
  if (req && !json_is_array(req))
    return api_fail(e, 400, "tools",
                    "tools[%zu].function.parameters.required must be a list",
                    i);
  return 0;
}

static int parse_tools(const json_t *tools, tool_opts *o, api_error *e) {
  if (!json_is_array(tools))
    return api_fail(e, 400, "tools", "'tools' must be a list of tools");
  if (json_array_size(tools) > SERVER_MAX_TOOLS)
    return api_fail(e, 400, "tools", "'tools' holds %zu tools; at most %d",
                    json_array_size(tools), SERVER_MAX_TOOLS);
  size_t i;
  const json_t *t;
  json_array_foreach(tools, i, t) {
    const json_t *type = json_object_get(t, "type");
    const json_t *fn = json_object_get(t, "function");
    if (!json_is_object(t) || !json_is_string(type) ||
        strcmp(json_string_value(type), "function") || !json_is_object(fn))
      return api_fail(e, 400, "tools",
                      "tools[%zu] must be {\"type\": \"function\", "
                      "\"function\": {\"name\": ...}}",
                      i);
    const json_t *name = json_object_get(fn, "name");
    if (!json_is_string(name) ||
        !valid_name(json_string_value(name), json_string_length(name)))
      return api_fail(e, 400, "tools",
                      "tools[%zu].function.name must be 1 to 64 letters, "
                      "digits, '_' or '-'",
                      i);
    for (size_t k = 0; k < i; k++)
      if (!strcmp(json_string_value(json_object_get(
                      json_object_get(json_array_get(tools, k), "function"),
                      "name")),
                  json_string_value(name)))
        return api_fail(e, 400, "tools",
                        "tools[%zu]: the function name '%s' is given twice", i,
                        json_string_value(name));
    const json_t *desc = json_object_get(fn, "description");
    if (desc && !json_is_string(desc))
      return api_fail(e, 400, "tools",
                      "tools[%zu].function.description must be a string", i);
    const json_t *params = json_object_get(fn, "parameters");
    if (params && check_parameters(params, i, e)) return -1;
    const json_t *strict = json_object_get(fn, "strict");
    if (strict && !json_is_boolean(strict) && !json_is_null(strict))
      return api_fail(e, 400, "tools",
                      "tools[%zu].function.strict must be true or false", i);
  }
  o->n_tools = json_array_size(tools);
  return 0;
}

static bool has_tool(const json_t *tools, const char *name) {
  size_t i;
  const json_t *t;
  json_array_foreach(tools, i, t) {
    const json_t *n = json_object_get(json_object_get(t, "function"), "name");
    if (json_is_string(n) && !strcmp(json_string_value(n), name)) return true;
  }
  return false;
}

int tool_opts_parse(const json_t *root, bool chat, tool_opts *o, api_error *e) {
  memset(o, 0, sizeof *o);
  o->parallel = true;
  const json_t *tools = json_object_get(root, "tools");
  const json_t *tc = json_object_get(root, "tool_choice");
  const json_t *ptc = json_object_get(root, "parallel_tool_calls");
  if (json_is_null(tools)) tools = NULL;
  if (json_is_null(tc)) tc = NULL;
  if (json_is_null(ptc)) ptc = NULL;
  if (!chat) return 0; /* request_fields.h refuses them there */
  if (tools && parse_tools(tools, o, e)) return -1;
  if (ptc) {
    if (!json_is_boolean(ptc))
      return api_fail(e, 400, "parallel_tool_calls",
                      "'parallel_tool_calls' must be true or false");
    o->parallel = json_is_true(ptc);
  }
  o->choice = o->n_tools ? TOOL_CHOICE_AUTO : TOOL_CHOICE_NONE;
  if (!tc) return 0;
  const char *c = json_is_string(tc) ? json_string_value(tc) : NULL;
  const json_t *fn = json_object_get(tc, "function");
  const json_t *name = json_object_get(fn, "name");
  bool named =
      json_is_object(tc) && json_is_string(json_object_get(tc, "type")) &&
      !strcmp(json_string_value(json_object_get(tc, "type")), "function") &&
      json_is_string(name);
  if (!named && !(c && (!strcmp(c, "none") || !strcmp(c, "auto") ||
                        !strcmp(c, "required"))))
    return api_fail(e, 400, "tool_choice",
                    "'tool_choice' must be 'none', 'auto', 'required' or "
                    "{\"type\": \"function\", \"function\": {\"name\": ...}}");
  if (c && !strcmp(c, "none")) {
    o->choice = TOOL_CHOICE_NONE;
    return 0;
  }
  if (!o->n_tools)
    return api_fail(e, 400, "tool_choice", "'tool_choice' needs 'tools'");
  if (named) {
    if (!has_tool(tools, json_string_value(name)))
      return api_fail(e, 400, "tool_choice",
                      "'tool_choice' names the function '%.64s', which is not "
                      "among 'tools'",
                      json_string_value(name));
    o->choice = TOOL_CHOICE_NAMED;
    snprintf(o->name, sizeof o->name, "%s", json_string_value(name));
  } else {
    o->choice = strcmp(c, "required") ? TOOL_CHOICE_AUTO : TOOL_CHOICE_REQUIRED;
  }
  return 0;
}

int tool_messages_check(const json_t *messages, api_error *e) {
  size_t i;
  const json_t *m;
  json_array_foreach(messages, i, m) {
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!role) continue; /* the prompt's own checks name it */
    if (!strcmp(role, "tool")) {
      const json_t *id = json_object_get(m, "tool_call_id");
      if (!json_is_string(id) || !json_string_length(id))
        return api_fail(e, 400, "messages",
                        "messages[%zu]: a tool message needs a "
                        "'tool_call_id' (the id of the call it answers)",
                        i);
    }
    const json_t *calls = json_object_get(m, "tool_calls");
    if (!calls || json_is_null(calls)) continue;
    if (strcmp(role, "assistant"))
      return api_fail(e, 400, "messages",
                      "messages[%zu]: only assistant messages carry "
                      "'tool_calls'",
                      i);
    if (!json_is_array(calls))
      return api_fail(e, 400, "messages",
                      "messages[%zu].tool_calls must be a list", i);
    size_t k;
    const json_t *c;
    json_array_foreach(calls, k, c) {
      const json_t *fn = json_object_get(c, "function");
      const json_t *name = json_object_get(fn, "name");
      const json_t *args = json_object_get(fn, "arguments");
      const json_t *id = json_object_get(c, "id");
      if (!json_is_object(c) || !json_is_object(fn) || !json_is_string(name) ||
          !json_is_string(args) || (id && !json_is_string(id)))
        return api_fail(e, 400, "messages",
                        "messages[%zu].tool_calls[%zu] must be {\"id\": ..., "
                        "\"type\": \"function\", \"function\": {\"name\": ..., "
                        "\"arguments\": \"<JSON text>\"}}",
                        i, k);
    }
  }
  return 0;
}
