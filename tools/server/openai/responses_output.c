/* nucleus serve: the Responses API's output items and final object
 * (responses_output.h). */
#include "responses_output.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http/json_text.h"

void responses_item_id(char *buf, size_t cap, const char *kind, const char *hex,
                       size_t index) {
  snprintf(buf, cap, "%s_%s_%zu", kind, hex, index);
}

static const char *status(bool done) {
  return done ? "completed" : "in_progress";
}

json_t *responses_item_message(const char *hex, size_t index, const char *text,
                               size_t len, bool done) {
  char id[96];
  responses_item_id(id, sizeof id, "msg", hex, index);
  json_t *content = json_array();
  if (done)
    json_array_append_new(
        content, json_pack("{s:s,s:o,s:[],s:[]}", "type", "output_text", "text",
                           json_text(text, len), "annotations", "logprobs"));
  return json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", id, "type", "message",
                   "status", status(done), "role", "assistant", "content",
                   content);
}

json_t *responses_item_reasoning(const char *hex, size_t index,
                                 const char *text, size_t len, bool done) {
  char id[96];
  responses_item_id(id, sizeof id, "rs", hex, index);
  json_t *content = json_array();
  if (done)
    json_array_append_new(content,
                          json_pack("{s:s,s:o}", "type", "reasoning_text",
                                    "text", json_text(text, len)));
  return json_pack("{s:s,s:s,s:s,s:[],s:o}", "id", id, "type", "reasoning",
                   "status", status(done), "summary", "content", content);
}

json_t *responses_item_call(const char *hex, size_t index, const char *call_id,
                            const char *name, const char *args, bool done) {
  char id[96];
  responses_item_id(id, sizeof id, "fc", hex, index);
  return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "id", id, "type",
                   "function_call", "status", status(done), "call_id", call_id,
                   "name", name, "arguments", done ? args : "");
}

json_t *responses_output_items(const json_t *message, const char *hex) {
  json_t *items = json_array();
  if (!items) return NULL;
  const json_t *reasoning = json_object_get(message, "reasoning_content");
  const json_t *content = json_object_get(message, "content");
  const json_t *calls = json_object_get(message, "tool_calls");
  size_t n_calls = json_array_size(calls);
  if (json_is_string(reasoning) && json_string_length(reasoning))
    json_array_append_new(
        items, responses_item_reasoning(hex, json_array_size(items),
                                        json_string_value(reasoning),
                                        json_string_length(reasoning), true));
  if ((json_is_string(content) && json_string_length(content)) || !n_calls)
    json_array_append_new(
        items, responses_item_message(
                   hex, json_array_size(items),
                   json_is_string(content) ? json_string_value(content) : "",
                   json_string_length(content), true));
  size_t i;
  const json_t *c;
  json_array_foreach(calls, i, c) {
    const json_t *fn = json_object_get(c, "function");
    const char *id = json_string_value(json_object_get(c, "id"));
    const char *name = json_string_value(json_object_get(fn, "name"));
    const char *args = json_string_value(json_object_get(fn, "arguments"));
    json_array_append_new(
        items, responses_item_call(hex, json_array_size(items), id ? id : "",
                                   name ? name : "", args ? args : "", true));
  }
  return items;
}

static json_int_t int_at(const json_t *o, const char *a, const char *b) {
  const json_t *v = json_object_get(o, a);
  if (b) v = json_object_get(v, b);
  return json_is_integer(v) ? json_integer_value(v) : 0;
}

json_t *responses_final(const json_t *skeleton, json_t *output,
                        const json_t *chat) {
  json_t *o = json_deep_copy(skeleton);
  if (!o) {
    json_decref(output);
    return NULL;
  }
  json_object_set_new(o, "output", output);
  const json_t *choice = json_array_get(json_object_get(chat, "choices"), 0);
  const char *finish =
      json_string_value(json_object_get(choice, "finish_reason"));
  bool cut = finish && !strcmp(finish, "length");
  json_object_set_new(o, "status",
                      json_string(cut ? "incomplete" : "completed"));
  json_object_set_new(o, "completed_at",
                      cut ? json_null() : json_integer((json_int_t)time(NULL)));
  json_object_set_new(o, "incomplete_details",
                      cut ? json_pack("{s:s}", "reason", "max_output_tokens")
                          : json_null());
  const json_t *u = json_object_get(chat, "usage");
  json_int_t in = int_at(u, "prompt_tokens", NULL);
  json_int_t out = int_at(u, "completion_tokens", NULL);
  json_object_set_new(
      o, "usage",
      json_pack("{s:I,s:{s:I},s:I,s:{s:I},s:I}", "input_tokens", in,
                "input_tokens_details", "cached_tokens",
                int_at(u, "prompt_tokens_details", "cached_tokens"),
                "output_tokens", out, "output_tokens_details",
                "reasoning_tokens",
                int_at(u, "completion_tokens_details", "reasoning_tokens"),
                "total_tokens", in + out));
  return o;
}
