/* nucleus serve: Anthropic Messages API bodies -> chat requests. */
#include "messages_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nucleus.h"
#include "openai/image_input.h"

/* Bounds on what one body may hold (the chat path bounds the rest). */
#define MAX_BLOCKS 4096 /* content blocks per message */
#define MAX_USER_ID 256 /* metadata.user_id, as Anthropic bounds it */
#define MAX_PATH 96     /* a field's path in an error message */

static const char *const CREATE_FIELDS[] = {
    "model",       "messages",      "max_tokens",    "system",
    "temperature", "top_p",         "top_k",         "stop_sequences",
    "stream",      "metadata",      "tools",         "tool_choice",
    "thinking",    "output_config", "cache_control", NULL};
static const char *const COUNT_FIELDS[] = {
    "model",    "messages",      "system",        "tools", "tool_choice",
    "thinking", "output_config", "cache_control", NULL};

static const char *route_path(messages_route route) {
  return route == MESSAGES_CREATE ? "/v1/messages"
                                  : "/v1/messages/count_tokens";
}

/* A field's value, or NULL when it is absent or JSON null. */
static const json_t *field(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_null(v) ? NULL : v;
}

static bool listed(const char *const *names, const char *key) {
  for (size_t i = 0; names[i]; i++)
    if (!strcmp(names[i], key)) return true;
  return false;
}

/* Every key of o is among names (a null value is absent, as the readers
 * take it: clients write their unset fields as null): 0, or -1 with a 400
 * naming PATH.key. */
static int only_keys(const json_t *o, const char *const *names,
                     const char *path, api_error *e) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)o, key, v) {
    if (!json_is_null(v) && !listed(names, key))
      return api_fail(e, 400, key, "%s.%.64s: unknown field", path, key);
  }
  return 0;
}

static bool is_type(const json_t *block, const char *type) {
  const json_t *t = json_object_get(block, "type");
  return json_is_string(t) && !strcmp(json_string_value(t), type);
}

/* cache_control: {"type": "ephemeral", "ttl"?}; the prefix cache needs no
 * marks (it keeps every prefix it can), so a valid one changes nothing. */
static int check_cache_control(const json_t *block, const char *path,
                               api_error *e) {
  const json_t *cc = field(block, "cache_control");
  if (!cc) return 0;
  static const char *const keys[] = {"type", "ttl", NULL};
  if (!json_is_object(cc) || !is_type(cc, "ephemeral"))
    return api_fail(e, 400, "cache_control",
                    "%s.cache_control must be {\"type\": \"ephemeral\"}", path);
  const json_t *ttl = field(cc, "ttl");
  if (ttl && !json_is_string(ttl))
    return api_fail(e, 400, "cache_control",
                    "%s.cache_control.ttl must be a string", path);
  char sub[MAX_PATH + 16];
  snprintf(sub, sizeof sub, "%s.cache_control", path);
  return only_keys(cc, keys, sub, e);
}

/* A text block {"type": "text", "text": ...}: its text, or NULL with *e. */
static const json_t *text_block(const json_t *b, const char *path,
                                api_error *e) {
  static const char *const keys[] = {"type", "text", "cache_control",
                                     "citations", NULL};
  const json_t *text = json_object_get(b, "text");
  if (!json_is_string(text)) {
    api_fail(e, 400, "messages", "%s.text must be a string", path);
    return NULL;
  }
  const json_t *cit = field(b, "citations");
  if (cit && !(json_is_array(cit) && !json_array_size(cit))) {
    api_fail(e, 400, "messages", "%s.citations is not supported", path);
    return NULL;
  }
  if (only_keys(b, keys, path, e) || check_cache_control(b, path, e))
    return NULL;
  return text;
}

/* An image block {"type": "image", "source": {"type": "base64",
 * "media_type", "data"} or {"type": "url", "url"} (--allow-image-urls)}
 * -> a chat image part with the data as a data: URI (checked and decoded
 * here, so a bad image is a 400 naming the block). NULL with *e. */
static json_t *image_block(const json_t *b, const char *path,
                           image_list *images, api_error *e) {
  static const char *const keys[] = {"type", "source", "cache_control", NULL};
  static const char *const base64_keys[] = {"type", "media_type", "data", NULL};
  static const char *const media_types[] = {"image/jpeg", "image/png",
                                            "image/gif", "image/webp", NULL};
  if (only_keys(b, keys, path, e) || check_cache_control(b, path, e))
    return NULL;
  char sub[MAX_PATH + 16];
  snprintf(sub, sizeof sub, "%s.source", path);
  const json_t *src = field(b, "source");
  if (!json_is_object(src)) {
    api_fail(e, 400, "messages",
             "%s must be {\"type\": \"base64\", \"media_type\": ..., "
             "\"data\": ...}",
             sub);
    return NULL;
  }
  if (is_type(src, "url")) {
    static const char *const url_keys[] = {"type", "url", NULL};
    const json_t *url = field(src, "url");
    if (only_keys(src, url_keys, sub, e)) return NULL;
    if (!json_is_string(url)) {
      api_fail(e, 400, "messages", "%s.url must be a string", sub);
      return NULL;
    }
    json_t *uri =
        image_input_inline(json_string_value(url), json_string_length(url),
                           images->allow_urls, "messages", sub, images, e);
    json_t *part = uri ? json_pack("{s:s,s:{s:o}}", "type", "image_url",
                                   "image_url", "url", uri)
                       : NULL;
    if (uri && !part) api_fail(e, 500, NULL, "out of memory");
    return part;
  }
  if (!is_type(src, "base64")) {
    api_fail(e, 400, "messages",
             "%s.type: only \"base64\" and \"url\" sources are taken "
             "(nucleus keeps no files)",
             sub);
    return NULL;
  }
  if (only_keys(src, base64_keys, sub, e)) return NULL;
  const json_t *mt = field(src, "media_type");
  const json_t *data = field(src, "data");
  if (!json_is_string(mt) || !listed(media_types, json_string_value(mt))) {
    api_fail(e, 400, "messages",
             "%s.media_type must be image/jpeg, image/png, image/gif or "
             "image/webp",
             sub);
    return NULL;
  }
  if (!json_is_string(data)) {
    api_fail(e, 400, "messages", "%s.data must be a base64 string", sub);
    return NULL;
  }
  if (image_input_base64(json_string_value(data), json_string_length(data),
                         "messages", sub, images, e))
    return NULL;
  size_t n = strlen("data:;base64,") + json_string_length(mt) +
             json_string_length(data);
  char *uri = malloc(n + 1);
  json_t *part = NULL;
  if (uri) {
    snprintf(uri, n + 1, "data:%s;base64,%s", json_string_value(mt),
             json_string_value(data));
    part = json_pack("{s:s,s:{s:s%}}", "type", "image_url", "image_url", "url",
                     uri, n);
    free(uri);
  }
  if (!part) api_fail(e, 500, NULL, "out of memory");
  return part;
}

/* system or a tool_result's content: a string, or a list of text blocks,
 * as one string (blocks joined by "\n"). NULL with *e. */
static json_t *joined_text(const json_t *v, const char *path, api_error *e) {
  if (json_is_string(v)) return json_copy((json_t *)v);
  if (!json_is_array(v)) {
    api_fail(e, 400, path, "%s must be a string or a list of text blocks",
             path);
    return NULL;
  }
  if (json_array_size(v) > MAX_BLOCKS) {
    api_fail(e, 400, path, "%s holds %zu blocks; at most %d", path,
             json_array_size(v), MAX_BLOCKS);
    return NULL;
  }
  size_t total = 0, i;
  const json_t *b;
  char sub[MAX_PATH];
  json_array_foreach(v, i, b) {
    snprintf(sub, sizeof sub, "%s[%zu]", path, i);
    if (!json_is_object(b) || !is_type(b, "text")) {
      api_fail(e, 400, path,
               "%s must be a text block {\"type\": \"text\", \"text\": ...} "
               "(nucleus reads text only)",
               sub);
      return NULL;
    }
    const json_t *text = text_block(b, sub, e);
    if (!text) return NULL;
    total += json_string_length(text) + 1;
  }
  char *buf = malloc(total + 1);
  if (!buf) {
    api_fail(e, 500, NULL, "out of memory");
    return NULL;
  }
  size_t o = 0;
  json_array_foreach(v, i, b) {
    const json_t *text = json_object_get(b, "text");
    if (i) buf[o++] = '\n';
    memcpy(buf + o, json_string_value(text), json_string_length(text));
    o += json_string_length(text);
  }
  json_t *s = json_stringn(buf, o);
  free(buf);
  if (!s) api_fail(e, 500, NULL, "out of memory");
  return s;
}

/* The chat messages being built, and the tool_use ids of the last
 * assistant turn (a tool_result must answer one of them). */
typedef struct translation {
  json_t *msgs;
  json_t *last_call_ids; /* array of strings */
  image_list *images;    /* the decoded images, --allow-image-urls */
} translation;

static int append(translation *t, json_t *m, api_error *e) {
  if (!m || json_array_append_new(t->msgs, m))
    return api_fail(e, 500, NULL, "out of memory");
  return 0;
}

static bool answers_call(const translation *t, const char *id) {
  size_t i;
  const json_t *v;
  json_array_foreach(t->last_call_ids, i, v) {
    if (!strcmp(json_string_value(v), id)) return true;
  }
  return false;
}

static int tool_result(translation *t, const json_t *b, const char *path,
                       api_error *e) {
  static const char *const keys[] = {"type",     "tool_use_id",   "content",
                                     "is_error", "cache_control", NULL};
  if (only_keys(b, keys, path, e) || check_cache_control(b, path, e)) return -1;
  const json_t *id = json_object_get(b, "tool_use_id");
  if (!json_is_string(id) || !json_string_length(id))
    return api_fail(e, 400, "messages", "%s.tool_use_id must be a string",
                    path);
  if (!answers_call(t, json_string_value(id)))
    return api_fail(e, 400, "messages",
                    "%s: tool_use_id '%.64s' answers no tool_use block of the "
                    "previous assistant message (each tool_result must "
                    "answer one)",
                    path, json_string_value(id));
  const json_t *is_error = field(b, "is_error");
  if (is_error && !json_is_boolean(is_error))
    return api_fail(e, 400, "messages", "%s.is_error must be true or false",
                    path);
  const json_t *content = field(b, "content");
  char sub[MAX_PATH + 16];
  snprintf(sub, sizeof sub, "%s.content", path);
  json_t *text = content ? joined_text(content, sub, e) : json_string("");
  if (!text) return -1;
  if (json_is_true(is_error)) { /* the model reads that the call failed */
    json_t *marked = json_sprintf("Error: %s", json_string_value(text));
    json_decref(text);
    if (!(text = marked)) return api_fail(e, 500, NULL, "out of memory");
  }
  return append(t,
                json_pack("{s:s,s:O,s:o}", "role", "tool", "tool_call_id", id,
                          "content", text),
                e);
}

/* A user turn: its tool_result blocks become tool messages, its text one
 * user message (in the order given). */
static int user_blocks(translation *t, const json_t *content, size_t idx,
                       api_error *e) {
  json_t *parts = json_array();
  if (!parts) return api_fail(e, 500, NULL, "out of memory");
  size_t i;
  const json_t *b;
  char path[MAX_PATH];
  int rc = 0;
  json_array_foreach(content, i, b) {
    snprintf(path, sizeof path, "messages[%zu].content[%zu]", idx, i);
    if (is_type(b, "tool_result")) {
      if (json_array_size(parts)) { /* text before it goes first */
        rc = append(t, json_pack("{s:s,s:o}", "role", "user", "content", parts),
                    e);
        parts = json_array();
        if (!rc && !parts) rc = api_fail(e, 500, NULL, "out of memory");
      }
      if (rc || (rc = tool_result(t, b, path, e))) break;
    } else if (is_type(b, "text")) {
      const json_t *text = text_block(b, path, e);
      if (!text) {
        rc = -1;
        break;
      }
      if (json_array_append_new(
              parts, json_pack("{s:s,s:O}", "type", "text", "text", text))) {
        rc = api_fail(e, 500, NULL, "out of memory");
        break;
      }
    } else if (is_type(b, "image")) {
      json_t *part = image_block(b, path, t->images, e);
      if (!part || json_array_append_new(parts, part)) {
        rc = part ? api_fail(e, 500, NULL, "out of memory") : -1;
        break;
      }
    } else {
      const json_t *type = json_object_get(b, "type");
      rc = api_fail(e, 400, "messages",
                    "%s: a user message holds text, image and tool_result "
                    "blocks; "
                    "'%.32s' is not supported",
                    path, json_is_string(type) ? json_string_value(type) : "?");
      break;
    }
  }
  if (!rc && json_array_size(parts))
    rc = append(t, json_pack("{s:s,s:O}", "role", "user", "content", parts), e);
  json_decref(parts);
  return rc;
}

static int tool_use(json_t *calls, json_t *ids, const json_t *b,
                    const char *path, api_error *e) {
  static const char *const keys[] = {"type",          "id", "name", "input",
                                     "cache_control", NULL};
  if (only_keys(b, keys, path, e) || check_cache_control(b, path, e)) return -1;
  const json_t *id = json_object_get(b, "id");
  const json_t *name = json_object_get(b, "name");
  const json_t *input = json_object_get(b, "input");
  if (!json_is_string(id) || !json_string_length(id) || !json_is_string(name) ||
      !json_is_object(input))
    return api_fail(e, 400, "messages",
                    "%s must be {\"type\": \"tool_use\", \"id\": ..., "
                    "\"name\": ..., \"input\": {...}}",
                    path);
  char *args = json_dumps(input, JSON_COMPACT);
  json_t *call =
      args ? json_pack("{s:O,s:s,s:{s:O,s:s}}", "id", id, "type", "function",
                       "function", "name", name, "arguments", args)
           : NULL;
  free(args);
  if (!call || json_array_append_new(calls, call) ||
      json_array_append(ids, (json_t *)id))
    return api_fail(e, 500, NULL, "out of memory");
  return 0;
}

/* An assistant turn: thinking -> reasoning_content, text -> content,
 * tool_use -> tool_calls. */
static int assistant_blocks(translation *t, const json_t *content, size_t idx,
                            api_error *e) {
  json_t *m = json_pack("{s:s,s:[]}", "role", "assistant", "content");
  json_t *calls = json_array(), *ids = json_array();
  json_t *thought = json_array();
  if (!m || !calls || !ids || !thought) {
    json_decref(m);
    json_decref(calls);
    json_decref(ids);
    json_decref(thought);
    return api_fail(e, 500, NULL, "out of memory");
  }
  size_t i;
  const json_t *b;
  char path[MAX_PATH];
  int rc = 0;
  json_array_foreach(content, i, b) {
    snprintf(path, sizeof path, "messages[%zu].content[%zu]", idx, i);
    if (is_type(b, "text")) {
      const json_t *text = text_block(b, path, e);
      rc = !text || json_array_append_new(
                        json_object_get(m, "content"),
                        json_pack("{s:s,s:O}", "type", "text", "text", text));
    } else if (is_type(b, "tool_use")) {
      rc = tool_use(calls, ids, b, path, e);
    } else if (is_type(b, "thinking")) {
      static const char *const keys[] = {"type", "thinking", "signature", NULL};
      const json_t *text = json_object_get(b, "thinking");
      if (!json_is_string(text))
        rc = api_fail(e, 400, "messages", "%s.thinking must be a string", path);
      else
        rc = only_keys(b, keys, path, e) ||
             json_array_append_new(
                 thought, json_pack("{s:s,s:O}", "type", "text", "text", text));
    } else if (is_type(b, "redacted_thinking")) {
      rc = api_fail(e, 400, "messages",
                    "%s: redacted_thinking blocks are not supported (nucleus "
                    "never redacts)",
                    path);
    } else {
      const json_t *type = json_object_get(b, "type");
      rc = api_fail(e, 400, "messages",
                    "%s: an assistant message holds text, thinking and "
                    "tool_use blocks; '%.32s' is not supported",
                    path, json_is_string(type) ? json_string_value(type) : "?");
    }
    if (rc) break;
  }
  if (rc && !e->status) api_fail(e, 500, NULL, "out of memory");
  json_t *reasoning = NULL;
  if (!rc && json_array_size(thought)) {
    char sub[MAX_PATH];
    snprintf(sub, sizeof sub, "messages[%zu].thinking", idx);
    reasoning = joined_text(thought, sub, e);
    rc =
        reasoning ? json_object_set_new(m, "reasoning_content", reasoning) : -1;
  }
  if (!rc && json_array_size(calls)) json_object_set(m, "tool_calls", calls);
  json_decref(calls);
  json_decref(thought);
  json_decref(t->last_call_ids);
  t->last_call_ids = ids;
  if (rc) {
    json_decref(m);
    return -1;
  }
  return append(t, m, e);
}

static int message(translation *t, const json_t *m, size_t i, api_error *e) {
  static const char *const keys[] = {"role", "content", NULL};
  char path[MAX_PATH];
  snprintf(path, sizeof path, "messages[%zu]", i);
  const json_t *role = json_object_get(m, "role");
  const char *r = json_string_value(role);
  if (!json_is_object(m) || !r || (strcmp(r, "user") && strcmp(r, "assistant")))
    return api_fail(e, 400, "messages",
                    "%s must be an object with a role of user or assistant "
                    "(the system prompt is the top-level 'system')",
                    path);
  if (only_keys(m, keys, path, e)) return -1;
  const json_t *content = json_object_get(m, "content");
  bool user = !strcmp(r, "user");
  if (json_is_string(content)) {
    json_decref(t->last_call_ids); /* a turn without calls */
    t->last_call_ids = json_array();
    return append(t, json_pack("{s:s,s:O}", "role", r, "content", content), e);
  }
  if (!json_is_array(content))
    return api_fail(e, 400, "messages",
                    "%s.content must be a string or a list of blocks", path);
  if (json_array_size(content) > MAX_BLOCKS)
    return api_fail(e, 400, "messages",
                    "%s.content holds %zu blocks; at most %d", path,
                    json_array_size(content), MAX_BLOCKS);
  size_t k;
  const json_t *b;
  json_array_foreach(content, k, b) {
    if (!json_is_object(b) || !json_is_string(json_object_get(b, "type")))
      return api_fail(e, 400, "messages",
                      "%s.content[%zu] must be a block with a 'type'", path, k);
  }
  if (!user) return assistant_blocks(t, content, i, e);
  int rc = user_blocks(t, content, i, e);
  json_decref(t->last_call_ids); /* answered (or not): the turn is over */
  t->last_call_ids = json_array();
  return rc;
}

static int translate_messages(const json_t *body, json_t *chat,
                              image_list *images, api_error *e) {
  const json_t *msgs = json_object_get(body, "messages");
  if (!json_is_array(msgs) || !json_array_size(msgs))
    return api_fail(e, 400, "messages", "'messages' must be a non-empty list");
  translation t = {json_array(), json_array(), images};
  int rc =
      t.msgs && t.last_call_ids ? 0 : api_fail(e, 500, NULL, "out of memory");
  const json_t *system = field(body, "system");
  if (!rc && system) {
    json_t *text = joined_text(system, "system", e);
    rc = text
             ? append(&t,
                      json_pack("{s:s,s:o}", "role", "system", "content", text),
                      e)
             : -1;
  }
  size_t i;
  const json_t *m;
  json_array_foreach(msgs, i, m) {
    if (rc || (rc = message(&t, m, i, e))) break;
  }
  /* A last assistant turn is a prefill: the reply continues it. */
  const json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
  const char *role = json_string_value(json_object_get(last, "role"));
  if (!rc && role && !strcmp(role, "assistant")) {
    if (json_array_size(t.last_call_ids))
      rc = api_fail(e, 400, "messages",
                    "messages[%zu] ends the conversation with tool_use "
                    "blocks: their tool_result blocks come in a user message "
                    "after it",
                    json_array_size(msgs) - 1);
    else if (json_object_set_new(chat, "continue_final_message", json_true()))
      rc = api_fail(e, 500, NULL, "out of memory");
  }
  json_decref(t.last_call_ids);
  if (!rc) rc = json_object_set(chat, "messages", t.msgs);
  json_decref(t.msgs);
  return rc;
}

/* tools: [{name, description?, input_schema, cache_control?, type?:
 * "custom"}] -> function tools. */
static int translate_tools(const json_t *body, json_t *chat, api_error *e) {
  const json_t *tools = field(body, "tools");
  if (!tools) return 0;
  if (!json_is_array(tools))
    return api_fail(e, 400, "tools", "'tools' must be a list of tools");
  json_t *out = json_array();
  if (!out) return api_fail(e, 500, NULL, "out of memory");
  static const char *const keys[] = {
      "type", "name", "description", "input_schema", "cache_control", NULL};
  size_t i;
  const json_t *tool;
  char path[MAX_PATH];
  json_array_foreach(tools, i, tool) {
    snprintf(path, sizeof path, "tools[%zu]", i);
    const json_t *type = field(tool, "type");
    const json_t *name = json_object_get(tool, "name");
    const json_t *desc = field(tool, "description");
    const json_t *schema = json_object_get(tool, "input_schema");
    int rc = 0;
    if (!json_is_object(tool))
      rc = api_fail(e, 400, "tools", "%s must be an object", path);
    else if (type && !is_type(tool, "custom"))
      rc = api_fail(e, 400, "tools",
                    "%s: tool type '%.48s' is not supported (nucleus runs "
                    "client tools: {\"name\", \"description\", "
                    "\"input_schema\"})",
                    path, json_is_string(type) ? json_string_value(type) : "?");
    else if (only_keys(tool, keys, path, e) ||
             check_cache_control(tool, path, e))
      rc = -1;
    else if (!json_is_string(name))
      rc = api_fail(e, 400, "tools", "%s.name must be a string", path);
    else if (desc && !json_is_string(desc))
      rc = api_fail(e, 400, "tools", "%s.description must be a string", path);
    else if (!json_is_object(schema))
      rc = api_fail(e, 400, "tools",
                    "%s.input_schema must be a JSON Schema object", path);
    json_t *fn =
        rc ? NULL : json_pack("{s:O,s:O}", "name", name, "parameters", schema);
    if (fn && desc) json_object_set(fn, "description", (json_t *)desc);
    if (!rc && (!fn || json_array_append_new(out, json_pack("{s:s,s:o}", "type",
                                                            "function",
                                                            "function", fn))))
      rc = api_fail(e, 500, NULL, "out of memory");
    if (rc) {
      json_decref(out);
      return -1;
    }
  }
  return json_object_set_new(chat, "tools", out);
}

/* tool_choice: {"type": "auto" | "any" | "tool" (with "name") | "none",
 * "disable_parallel_tool_use"?} -> auto, required, a named function, none
 * (and parallel_tool_calls). */
static int translate_tool_choice(const json_t *body, json_t *chat,
                                 api_error *e) {
  const json_t *tc = field(body, "tool_choice");
  if (!tc) return 0;
  static const char *const keys[] = {"type", "name",
                                     "disable_parallel_tool_use", NULL};
  if (!json_is_object(tc) || only_keys(tc, keys, "tool_choice", e)) {
    if (!e->status)
      api_fail(e, 400, "tool_choice",
               "'tool_choice' must be an object {\"type\": \"auto\" | "
               "\"any\" | \"tool\" | \"none\"}");
    return -1;
  }
  const json_t *name = field(tc, "name");
  const json_t *dp = field(tc, "disable_parallel_tool_use");
  if (dp && !json_is_boolean(dp))
    return api_fail(e, 400, "tool_choice",
                    "tool_choice.disable_parallel_tool_use must be true or "
                    "false");
  json_t *choice = NULL;
  if (is_type(tc, "tool")) {
    if (!json_is_string(name))
      return api_fail(e, 400, "tool_choice",
                      "tool_choice {\"type\": \"tool\"} needs the tool's "
                      "'name'");
    choice = json_pack("{s:s,s:{s:O}}", "type", "function", "function", "name",
                       name);
  } else if (name) {
    return api_fail(e, 400, "tool_choice",
                    "tool_choice.name applies only to {\"type\": \"tool\"}");
  } else if (is_type(tc, "auto") || is_type(tc, "none")) {
    choice = json_copy(json_object_get(tc, "type"));
  } else if (is_type(tc, "any")) {
    choice = json_string("required");
  } else {
    return api_fail(e, 400, "tool_choice",
                    "tool_choice.type must be auto, any, tool or none");
  }
  if (!choice || json_object_set_new(chat, "tool_choice", choice) ||
      (dp && json_object_set_new(chat, "parallel_tool_calls",
                                 json_boolean(!json_is_true(dp)))))
    return api_fail(e, 500, NULL, "out of memory");
  if (!field(body, "tools") && !is_type(tc, "none"))
    return api_fail(e, 400, "tool_choice", "'tool_choice' needs 'tools'");
  return 0;
}

/* stop_sequences: the library's check of each, then chat's "stop". */
static int translate_stop(const json_t *body, json_t *chat, api_error *e) {
  const json_t *v = field(body, "stop_sequences");
  if (!v) return 0;
  if (!json_is_array(v))
    return api_fail(e, 400, "stop_sequences",
                    "'stop_sequences' must be a list of strings");
  size_t i;
  const json_t *s;
  json_array_foreach(v, i, s) {
    if (!json_is_string(s))
      return api_fail(e, 400, "stop_sequences",
                      "stop_sequences[%zu] must be a string", i);
    nucleus_error err = {0};
    if (nucleus_stop_string_check(i, json_string_value(s),
                                  json_string_length(s), &err) != NUCLEUS_OK)
      return api_fail(e, 400, "stop_sequences", "stop_sequences: %s",
                      err.message);
  }
  return json_object_set(chat, "stop", (json_t *)v);
}

/* metadata: {"user_id": string}: an end-user id, which changes nothing in
 * the answer (as OpenAI's user). */
static int check_metadata(const json_t *body, api_error *e) {
  const json_t *md = field(body, "metadata");
  if (!md) return 0;
  static const char *const keys[] = {"user_id", NULL};
  if (!json_is_object(md))
    return api_fail(e, 400, "metadata", "'metadata' must be an object");
  if (only_keys(md, keys, "metadata", e)) return -1;
  const json_t *uid = field(md, "user_id");
  if (uid && (!json_is_string(uid) || json_string_length(uid) > MAX_USER_ID))
    return api_fail(e, 400, "metadata",
                    "metadata.user_id must be a string of at most %d bytes",
                    MAX_USER_ID);
  return 0;
}

/* chat_template_kwargs.KEY = value (the object made when absent). */
static int set_kwarg(json_t *chat, const char *key, json_t *value,
                     api_error *e) {
  json_t *kw = json_object_get(chat, "chat_template_kwargs");
  if (!kw &&
      json_object_set_new(chat, "chat_template_kwargs", kw = json_object()))
    kw = NULL;
  if (!kw || !value || json_object_set_new(kw, key, value))
    return api_fail(e, 500, NULL, "out of memory");
  return 0;
}

/* thinking: {"type": "disabled"} and {"type": "adaptive"} are the
 * template's enable_thinking (off, on: the model decides how long);
 * {"type": "enabled", "budget_tokens": N} is on with chat's thinking
 * budget (max_reasoning_tokens: past it the engine closes the block), N
 * below max_tokens. display "summarized" is what nucleus returns (the
 * thinking as written); "omitted" and "between_tools" are refused. */
static int translate_thinking(const json_t *body, json_t *chat, api_error *e) {
  const json_t *t = field(body, "thinking");
  if (!t) return 0;
  static const char *const keys[] = {"type", "budget_tokens", "display", NULL};
  if (!json_is_object(t) || !json_is_string(json_object_get(t, "type")))
    return api_fail(e, 400, "thinking",
                    "'thinking' must be {\"type\": \"enabled\", "
                    "\"budget_tokens\": N}, {\"type\": \"adaptive\"} or "
                    "{\"type\": \"disabled\"}");
  if (only_keys(t, keys, "thinking", e)) return -1;
  const json_t *display = field(t, "display");
  if (display && !(json_is_string(display) &&
                   !strcmp(json_string_value(display), "summarized")))
    return api_fail(e, 400, "thinking",
                    "thinking.display: nucleus returns the thinking as the "
                    "model wrote it (\"summarized\"); \"omitted\" is not "
                    "supported");
  const json_t *budget = field(t, "budget_tokens");
  if (is_type(t, "disabled") || is_type(t, "adaptive")) {
    if (budget || (display && is_type(t, "disabled")))
      return api_fail(e, 400, "thinking",
                      "thinking {\"type\": \"%s\"} takes no %s",
                      json_string_value(json_object_get(t, "type")),
                      budget ? "budget_tokens" : "display");
    return set_kwarg(chat, "enable_thinking",
                     json_boolean(is_type(t, "adaptive")), e);
  }
  if (!is_type(t, "enabled"))
    return api_fail(e, 400, "thinking",
                    "thinking.type must be enabled, adaptive or disabled");
  const json_t *max = field(body, "max_tokens");
  if (!json_is_integer(budget) || json_integer_value(budget) < 1)
    return api_fail(e, 400, "thinking",
                    "thinking.budget_tokens must be an integer of at least 1");
  if (json_is_integer(max) &&
      json_integer_value(budget) >= json_integer_value(max))
    return api_fail(e, 400, "thinking",
                    "thinking.budget_tokens (%lld) must be less than "
                    "max_tokens (%lld): the thinking counts toward it",
                    (long long)json_integer_value(budget),
                    (long long)json_integer_value(max));
  if (json_object_set(chat, "max_reasoning_tokens", (json_t *)budget))
    return api_fail(e, 500, NULL, "out of memory");
  return set_kwarg(chat, "enable_thinking", json_true(), e);
}

/* output_config: {"format": {"type": "json_schema", "schema": {...}}}
 * is structured output (chat's response_format json_schema: the answer
 * follows the schema); "effort" low / medium / high is chat's
 * reasoning_effort (read by the templates that have one). */
static int translate_output_config(const json_t *body, json_t *chat,
                                   api_error *e) {
  const json_t *oc = field(body, "output_config");
  if (!oc) return 0;
  static const char *const keys[] = {"format", "effort", NULL};
  static const char *const fkeys[] = {"type", "schema", NULL};
  if (!json_is_object(oc))
    return api_fail(e, 400, "output_config",
                    "'output_config' must be an object");
  if (only_keys(oc, keys, "output_config", e)) return -1;
  const json_t *effort = field(oc, "effort");
  if (effort) {
    const char *s = json_string_value(effort);
    if (!s || (strcmp(s, "low") && strcmp(s, "medium") && strcmp(s, "high")))
      return api_fail(e, 400, "output_config",
                      "output_config.effort must be low, medium or high");
    if (json_object_set(chat, "reasoning_effort", (json_t *)effort))
      return api_fail(e, 500, NULL, "out of memory");
  }
  const json_t *fmt = field(oc, "format");
  if (!fmt) return 0;
  if (!json_is_object(fmt) || !is_type(fmt, "json_schema") ||
      !json_is_object(json_object_get(fmt, "schema")))
    return api_fail(e, 400, "output_config",
                    "output_config.format must be {\"type\": \"json_schema\", "
                    "\"schema\": {...}}");
  if (only_keys(fmt, fkeys, "output_config.format", e)) return -1;
  json_t *rf =
      json_pack("{s:s,s:{s:s,s:O}}", "type", "json_schema", "json_schema",
                "name", "output", "schema", json_object_get(fmt, "schema"));
  if (!rf || json_object_set_new(chat, "response_format", rf))
    return api_fail(e, 500, NULL, "out of memory");
  return 0;
}

/* The fields chat reads under the same names and meanings. */
static int copy_same(const json_t *body, json_t *chat, api_error *e) {
  static const char *const same[] = {"model", "max_tokens", "temperature",
                                     "top_p", "top_k",      "stream"};
  for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
    const json_t *v = field(body, same[i]);
    if (v && json_object_set(chat, same[i], (json_t *)v))
      return api_fail(e, 500, NULL, "out of memory");
  }
  return 0;
}

json_t *messages_translate(const json_t *body, messages_route route,
                           image_list *images, api_error *e) {
  if (!json_is_object(body)) {
    api_fail(e, 400, NULL, "the request body must be a JSON object");
    return NULL;
  }
  const char *const *known =
      route == MESSAGES_CREATE ? CREATE_FIELDS : COUNT_FIELDS;
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)body, key, v) {
    if (!json_is_null(v) && !listed(known, key)) {
      api_fail(e, 400, key, "'%.64s' is not a field of %s", key,
               route_path(route));
      return NULL;
    }
  }
  const json_t *model = field(body, "model");
  if (!json_is_string(model)) {
    api_fail(e, 400, "model", "'model' is required (a string)");
    return NULL;
  }
  const json_t *max_tokens = field(body, "max_tokens");
  if (route == MESSAGES_CREATE &&
      !(json_is_integer(max_tokens) && json_integer_value(max_tokens) >= 1)) {
    api_fail(e, 400, "max_tokens",
             "'max_tokens' is required: the most tokens to generate, an "
             "integer of at least 1");
    return NULL;
  }
  json_t *chat = json_object();
  if (!chat) {
    api_fail(e, 500, NULL, "out of memory");
    return NULL;
  }
  if (check_metadata(body, e) || check_cache_control(body, "request", e) ||
      translate_thinking(body, chat, e) ||
      translate_output_config(body, chat, e) || copy_same(body, chat, e) ||
      translate_messages(body, chat, images, e) ||
      translate_tools(body, chat, e) || translate_tool_choice(body, chat, e) ||
      translate_stop(body, chat, e)) {
    json_decref(chat);
    return NULL;
  }
  return chat;
}
