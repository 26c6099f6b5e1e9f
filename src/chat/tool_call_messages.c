/* tool_call_messages: a conversation with tools, rewritten for a template
 * that knows nothing of tools (the GENERIC format): the tools described in
 * the system message, the assistant's earlier calls written back in the
 * call syntax, and tool results as user turns (consecutive results merged,
 * so templates that insist on alternating roles still render). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tool_call.h"

/* content as text: a string, or the text parts of a list of parts. */
static char *content_text(const json_t *msg) {
  const json_t *c = json_object_get(msg, "content");
  if (json_is_string(c)) return strdup(json_string_value(c));
  size_t cap = 1, n = 0;
  char *s = calloc(1, 1);
  if (!s) return NULL;
  size_t i;
  const json_t *part;
  if (json_is_array(c)) {
    json_array_foreach(c, i, part) {
      const json_t *t = json_object_get(part, "text");
      if (!json_is_string(t)) continue;
      size_t l = json_string_length(t);
      if (n + l + 1 > cap) {
        cap = 2 * (n + l + 1);
        char *g = realloc(s, cap);
        if (!g) {
          free(s);
          return NULL;
        }
        s = g;
      }
      memcpy(s + n, json_string_value(t), l);
      n += l;
      s[n] = '\0';
    }
  }
  return s;
}

static int append(char **s, const char *t) {
  size_t a = *s ? strlen(*s) : 0, b = strlen(t);
  char *g = realloc(*s, a + b + 1);
  if (!g) return -1;
  memcpy(g + a, t, b + 1);
  *s = g;
  return 0;
}

/* The assistant's calls as <tool_call> lines after its text. */
static char *assistant_text(const json_t *msg) {
  char *s = content_text(msg);
  const json_t *calls = json_object_get(msg, "tool_calls");
  size_t i;
  const json_t *c;
  json_array_foreach(calls, i, c) {
    const json_t *fn = json_object_get(c, "function");
    const json_t *name = json_object_get(fn, "name");
    const json_t *args = json_object_get(fn, "arguments");
    json_t *obj = json_object();
    json_object_set(obj, "name", name ? (json_t *)name : json_null());
    json_t *parsed = NULL;
    if (json_is_string(args))
      parsed = json_loads(json_string_value(args), 0, NULL);
    json_object_set_new(
        obj, "arguments",
        parsed ? parsed : (args ? json_incref((json_t *)args) : json_object()));
    char *line = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!s || !line || (s[0] && append(&s, "\n")) ||
        append(&s, "<tool_call>") || append(&s, line) ||
        append(&s, "</tool_call>")) {
      free(line);
      free(s);
      return NULL;
    }
    free(line);
  }
  return s;
}

char *nc_tool_generic_messages(const char *messages_json,
                               const char *tools_json) {
  json_t *in = json_loads(messages_json, 0, NULL);
  char *desc = nc_tool_generic_prompt(tools_json);
  json_t *out = json_array();
  char *result = NULL;
  if (!json_is_array(in) || !desc || !out) goto done;
  size_t i;
  json_t *m;
  bool have_system = false;
  json_t *pending = NULL; /* the user turn gathering tool results */
  json_array_foreach(in, i, m) {
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!role) goto done;
    if (!strcmp(role, "tool")) {
      char *body = content_text(m);
      if (!body) goto done;
      char *text = NULL;
      if (pending) {
        text = strdup(json_string_value(json_object_get(pending, "content")));
        if (text && append(&text, "\n")) {
          free(text);
          text = NULL;
        }
      }
      if ((!text && pending) || append(&text, "<tool_response>\n") ||
          append(&text, body) || append(&text, "\n</tool_response>")) {
        free(body);
        free(text);
        goto done;
      }
      free(body);
      if (!pending) {
        pending = json_pack("{s:s,s:s}", "role", "user", "content", text);
        json_array_append_new(out, pending);
      } else {
        json_object_set_new(pending, "content", json_string(text));
      }
      free(text);
      continue;
    }
    pending = NULL;
    json_t *copy = json_deep_copy(m);
    if (!copy) goto done;
    if (!strcmp(role, "assistant") && json_object_get(m, "tool_calls")) {
      char *t = assistant_text(m);
      if (!t) {
        json_decref(copy);
        goto done;
      }
      json_object_del(copy, "tool_calls");
      json_object_set_new(copy, "content", json_string(t));
      free(t);
    }
    if (!strcmp(role, "system") && !have_system) {
      char *t = content_text(m);
      if (!t || (t[0] && append(&t, "\n\n")) || append(&t, desc)) {
        free(t);
        json_decref(copy);
        goto done;
      }
      json_object_set_new(copy, "content", json_string(t));
      free(t);
      have_system = true;
    }
    json_array_append_new(out, copy);
  }
  if (!have_system)
    json_array_insert_new(
        out, 0, json_pack("{s:s,s:s}", "role", "system", "content", desc));
  result = json_dumps(out, JSON_COMPACT);
done:
  json_decref(in);
  json_decref(out);
  free(desc);
  return result;
}

char *nc_tool_object_arguments(const char *messages_json) {
  json_t *in = messages_json ? json_loads(messages_json, 0, NULL) : NULL;
  if (!json_is_array(in)) {
    json_decref(in);
    return NULL;
  }
  size_t i;
  json_t *m;
  json_array_foreach(in, i, m) {
    size_t k;
    json_t *c;
    json_array_foreach(json_object_get(m, "tool_calls"), k, c) {
      json_t *fn = json_object_get(c, "function");
      const json_t *args = json_object_get(fn, "arguments");
      json_t *parsed = json_is_string(args)
                           ? json_loads(json_string_value(args), 0, NULL)
                           : NULL;
      if (json_is_object(parsed))
        json_object_set_new(fn, "arguments", parsed);
      else
        json_decref(parsed);
    }
  }
  char *out = json_dumps(in, JSON_COMPACT);
  json_decref(in);
  return out;
}
