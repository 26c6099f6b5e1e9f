/* nucleus serve: the Responses API's input items -> chat messages
 * (responses_request.h). */
#include "responses_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_input.h"

/* A call id, a function name: non-empty strings of at most this many
 * bytes. */
#define MAX_REF_BYTES 256

static int item_fail(api_error *e, size_t i, const char *what) {
  api_fail(e, 400, NULL, "input[%zu]%s", i, what);
  snprintf(e->param, sizeof e->param, "input[%zu]", i);
  return -1;
}

/* Only the keys in allowed (NULL-terminated) may appear in item. */
static int check_keys(const json_t *item, size_t i, const char *const *allowed,
                      api_error *e) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)item, key, v) {
    bool ok = false;
    for (size_t k = 0; allowed[k] && !ok; k++)
      ok = !strcmp(key, allowed[k]);
    if (!ok) {
      char what[160];
      snprintf(what, sizeof what, ".%.64s is not supported", key);
      return item_fail(e, i, what);
    }
  }
  return 0;
}

static bool short_string(const json_t *v) {
  return json_is_string(v) && json_string_length(v) > 0 &&
         json_string_length(v) <= MAX_REF_BYTES;
}

/* Text parts ([{type: input_text | output_text | reasoning_text |
 * summary_text, text}], as allowed) or a string -> one string, parts joined
 * by "\n" as chat contents are. NULL with *e on a bad part. */
static json_t *parts_text(const json_t *content, size_t i, const char *field,
                          api_error *e) {
  if (json_is_string(content)) return json_copy((json_t *)content);
  char what[200];
  if (!json_is_array(content)) {
    snprintf(what, sizeof what, ".%s must be a string or a list of parts",
             field);
    item_fail(e, i, what);
    return NULL;
  }
  size_t total = 1, k;
  const json_t *part;
  json_array_foreach(content, k, part) {
    const char *type = json_string_value(json_object_get(part, "type"));
    const json_t *text = json_object_get(part, "text");
    bool text_type =
        type &&
        (!strcmp(type, "input_text") || !strcmp(type, "output_text") ||
         !strcmp(type, "reasoning_text") || !strcmp(type, "summary_text"));
    if (!json_is_object(part) || !text_type || !json_is_string(text)) {
      snprintf(what, sizeof what,
               ".%s[%zu]: only text parts ({\"type\": \"input_text\", "
               "\"text\": ...}) are supported, got type '%.32s'",
               field, k, type ? type : "?");
      item_fail(e, i, what);
      return NULL;
    }
    total += json_string_length(text) + 1;
  }
  char *buf = malloc(total);
  if (!buf) {
    api_fail(e, 500, NULL, "out of memory");
    return NULL;
  }
  size_t o = 0;
  json_array_foreach(content, k, part) {
    const json_t *text = json_object_get(part, "text");
    if (k) buf[o++] = '\n';
    memcpy(buf + o, json_string_value(text), json_string_length(text));
    o += json_string_length(text);
  }
  json_t *s = json_stringn(buf, o);
  free(buf);
  if (!s) api_fail(e, 500, NULL, "out of memory");
  return s;
}

/* An input_image part {"type": "input_image", "image_url": DATA_URI,
 * "detail": "auto"} -> a chat image part (checked and decoded here, so a
 * bad image is a 400 naming input[i].content[k]). */
static json_t *image_part(const json_t *part, size_t i, size_t k,
                          image_list *images, api_error *e) {
  static const char *const keys[] = {"type", "image_url", "detail", "file_id",
                                     NULL};
  char path[96], what[200];
  snprintf(path, sizeof path, "input[%zu].content[%zu]", i, k);
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)part, key, v) {
    bool known = false;
    for (size_t j = 0; keys[j] && !known; j++)
      known = !strcmp(key, keys[j]);
    if (!known) {
      snprintf(what, sizeof what, ".content[%zu].%.64s is not supported", k,
               key);
      item_fail(e, i, what);
      return NULL;
    }
  }
  const json_t *url = json_object_get(part, "image_url");
  const json_t *detail = json_object_get(part, "detail");
  if (json_object_get(part, "file_id"))
    snprintf(what, sizeof what,
             ".content[%zu].file_id: nucleus keeps no files; send the image "
             "as image_url, a data: URI",
             k);
  else if (!json_is_string(url))
    snprintf(what, sizeof what,
             ".content[%zu].image_url must be a data: URI "
             "(data:image/png;base64,...)",
             k);
  else if (detail && !json_is_null(detail) &&
           (!json_is_string(detail) ||
            strcmp(json_string_value(detail), "auto")))
    snprintf(what, sizeof what,
             ".content[%zu].detail: only \"auto\" is taken (the vision "
             "projector sets the resolution)",
             k);
  else
    what[0] = 0;
  if (what[0]) {
    item_fail(e, i, what);
    return NULL;
  }
  char field[32];
  snprintf(field, sizeof field, "input[%zu]", i);
  json_t *uri =
      image_input_inline(json_string_value(url), json_string_length(url),
                         images->allow_urls, field, path, images, e);
  json_t *out = uri ? json_pack("{s:s,s:{s:o}}", "type", "image_url",
                                "image_url", "url", uri)
                    : NULL;
  if (uri && !out) api_fail(e, 500, NULL, "out of memory");
  return out;
}

static bool has_image(const json_t *content) {
  size_t k;
  const json_t *part;
  json_array_foreach(content, k, part) {
    const char *type = json_string_value(json_object_get(part, "type"));
    if (type && !strcmp(type, "input_image")) return true;
  }
  return false;
}

/* A message's content with input_image parts among its input_text ones:
 * chat parts ([{type: text, text} | {type: image_url, image_url}]). */
static json_t *parts_with_images(const json_t *content, size_t i,
                                 image_list *images, api_error *e) {
  json_t *out = json_array();
  if (!out) {
    api_fail(e, 500, NULL, "out of memory");
    return NULL;
  }
  size_t k;
  const json_t *part;
  json_array_foreach(content, k, part) {
    const char *type = json_string_value(json_object_get(part, "type"));
    json_t *chat = NULL;
    if (type && !strcmp(type, "input_image")) {
      chat = image_part(part, i, k, images, e);
    } else {
      const json_t *text = json_object_get(part, "text");
      if (!type || strcmp(type, "input_text") || !json_is_string(text)) {
        char what[200];
        snprintf(what, sizeof what,
                 ".content[%zu]: a message with images holds input_text and "
                 "input_image parts, got type '%.32s'",
                 k, type ? type : "?");
        item_fail(e, i, what);
        json_decref(out);
        return NULL;
      }
      chat = json_pack("{s:s,s:O}", "type", "text", "text", text);
      if (!chat) api_fail(e, 500, NULL, "out of memory");
    }
    if (!chat || json_array_append_new(out, chat)) {
      if (chat) api_fail(e, 500, NULL, "out of memory");
      json_decref(out);
      return NULL;
    }
  }
  return out;
}

/* Whether an assistant message of msgs carries a call with this id. */
static bool call_known(const json_t *msgs, const char *id) {
  size_t i, k;
  const json_t *m, *c;
  json_array_foreach(msgs, i, m) {
    json_array_foreach(json_object_get(m, "tool_calls"), k, c) {
      const char *cid = json_string_value(json_object_get(c, "id"));
      if (cid && !strcmp(cid, id)) return true;
    }
  }
  return false;
}

/* A new assistant message carrying the pending reasoning, appended. */
static json_t *new_assistant(json_t *msgs, json_t **reasoning) {
  json_t *m = json_pack("{s:s,s:n}", "role", "assistant", "content");
  if (!m) return NULL;
  if (*reasoning) {
    json_object_set_new(m, "reasoning_content", *reasoning);
    *reasoning = NULL;
  }
  json_array_append_new(msgs, m);
  return m;
}

static int add_message(const json_t *item, size_t i, json_t *msgs,
                       json_t **reasoning, image_list *images, api_error *e) {
  static const char *const keys[] = {"type", "role",   "content",
                                     "id",   "status", NULL};
  if (check_keys(item, i, keys, e)) return -1;
  const char *role = json_string_value(json_object_get(item, "role"));
  if (!role || (strcmp(role, "user") && strcmp(role, "assistant") &&
                strcmp(role, "system") && strcmp(role, "developer")))
    return item_fail(e, i,
                     ".role must be 'user', 'assistant', 'system' or "
                     "'developer'");
  const json_t *content = json_object_get(item, "content");
  json_t *text =
      strcmp(role, "assistant") && json_is_array(content) && has_image(content)
          ? parts_with_images(content, i, images, e)
          : parts_text(content, i, "content", e);
  if (!text) return -1;
  if (!strcmp(role, "assistant")) {
    json_t *m = new_assistant(msgs, reasoning);
    if (!m) {
      json_decref(text);
      return api_fail(e, 500, NULL, "out of memory");
    }
    json_object_set_new(m, "content", text);
    return 0;
  }
  if (json_array_append_new(
          msgs, json_pack("{s:s,s:o}", "role", role, "content", text)))
    return api_fail(e, 500, NULL, "out of memory");
  return 0;
}

/* A call joins the assistant message just before it (the reply that made
 * it), else opens one. */
static int add_call(const json_t *item, size_t i, json_t *msgs,
                    json_t **reasoning, api_error *e) {
  static const char *const keys[] = {"type", "call_id", "name", "arguments",
                                     "id",   "status",  NULL};
  if (check_keys(item, i, keys, e)) return -1;
  const json_t *id = json_object_get(item, "call_id");
  const json_t *name = json_object_get(item, "name");
  const json_t *args = json_object_get(item, "arguments");
  if (!short_string(id) || !short_string(name) || !json_is_string(args))
    return item_fail(e, i,
                     ": a function_call needs 'call_id' and 'name' (strings "
                     "of 1 to 256 bytes) and 'arguments' (JSON text)");
  json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
  const char *role = json_string_value(json_object_get(last, "role"));
  if (!role || strcmp(role, "assistant") || *reasoning)
    last = new_assistant(msgs, reasoning);
  if (!last) return api_fail(e, 500, NULL, "out of memory");
  json_t *calls = json_object_get(last, "tool_calls");
  if (!calls) {
    calls = json_array();
    json_object_set_new(last, "tool_calls", calls);
  }
  if (json_array_append_new(calls, json_pack("{s:O,s:s,s:{s:O,s:O}}", "id", id,
                                             "type", "function", "function",
                                             "name", name, "arguments", args)))
    return api_fail(e, 500, NULL, "out of memory");
  return 0;
}

static int add_call_output(const json_t *item, size_t i, json_t *msgs,
                           api_error *e) {
  static const char *const keys[] = {"type", "call_id", "output",
                                     "id",   "status",  NULL};
  if (check_keys(item, i, keys, e)) return -1;
  const json_t *id = json_object_get(item, "call_id");
  if (!short_string(id))
    return item_fail(e, i,
                     ".call_id must be the call_id (1 to 256 bytes) of the "
                     "function_call it answers");
  if (!call_known(msgs, json_string_value(id))) {
    char what[200];
    snprintf(what, sizeof what,
             ".call_id '%.64s' answers no function_call of this "
             "conversation",
             json_string_value(id));
    return item_fail(e, i, what);
  }
  json_t *text = parts_text(json_object_get(item, "output"), i, "output", e);
  if (!text) return -1;
  if (json_array_append_new(msgs,
                            json_pack("{s:s,s:O,s:o}", "role", "tool",
                                      "tool_call_id", id, "content", text)))
    return api_fail(e, 500, NULL, "out of memory");
  return 0;
}

/* A reasoning item: its text goes with the next assistant message (the
 * template keeps or drops it, as the family does). */
static int add_reasoning(const json_t *item, size_t i, json_t **reasoning,
                         api_error *e) {
  static const char *const keys[] = {
      "type", "id", "summary", "content", "status", "encrypted_content", NULL};
  if (check_keys(item, i, keys, e)) return -1;
  const json_t *enc = json_object_get(item, "encrypted_content");
  if (enc && !json_is_null(enc))
    return item_fail(e, i,
                     ".encrypted_content is not supported: nucleus keeps "
                     "reasoning as text");
  const json_t *content = json_object_get(item, "content");
  if (!content || json_is_null(content) ||
      (json_is_array(content) && !json_array_size(content)))
    content = json_object_get(item, "summary");
  json_t *text = content && !json_is_null(content)
                     ? parts_text(content, i, "content", e)
                     : json_string("");
  if (!text) return -1;
  json_decref(*reasoning);
  *reasoning = text;
  return 0;
}

int responses_input_append(const json_t *input, json_t *msgs,
                           image_list *images, api_error *e) {
  if (json_is_string(input)) {
    if (json_array_append_new(
            msgs, json_pack("{s:s,s:O}", "role", "user", "content", input)))
      return api_fail(e, 500, NULL, "out of memory");
    return 0;
  }
  if (!json_is_array(input))
    return api_fail(e, 400, "input",
                    "'input' must be a string or a list of items");
  if (json_array_size(input) > RESPONSES_MAX_INPUT_ITEMS)
    return api_fail(e, 400, "input", "'input' holds %zu items; at most %d",
                    json_array_size(input), RESPONSES_MAX_INPUT_ITEMS);
  json_t *reasoning = NULL; /* a reasoning item's text, not yet placed */
  size_t i;
  const json_t *item;
  int rc = 0;
  json_array_foreach(input, i, item) {
    const json_t *t = json_object_get(item, "type");
    const char *type = json_is_string(t) ? json_string_value(t) : NULL;
    if (!json_is_object(item) || (t && !type)) {
      rc = item_fail(e, i, " must be an object with a 'type'");
    } else if (!type || !strcmp(type, "message")) {
      rc = add_message(item, i, msgs, &reasoning, images, e);
    } else if (!strcmp(type, "function_call")) {
      rc = add_call(item, i, msgs, &reasoning, e);
    } else if (!strcmp(type, "function_call_output")) {
      rc = add_call_output(item, i, msgs, e);
    } else if (!strcmp(type, "reasoning")) {
      rc = add_reasoning(item, i, &reasoning, e);
    } else {
      char what[160];
      snprintf(what, sizeof what,
               ": items of type '%.64s' are not supported (message, "
               "function_call, function_call_output, reasoning)",
               type);
      rc = item_fail(e, i, what);
    }
    if (rc) break;
  }
  json_decref(reasoning);
  return rc;
}
