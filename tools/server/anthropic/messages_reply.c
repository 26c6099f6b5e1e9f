/* nucleus serve: Messages API responses. */
#include "messages_reply.h"

#include <stdio.h>
#include <string.h>

#include "http/json_text.h"

void messages_id(const completion_out *out, char *buf, size_t size) {
  const char *hex = strchr(out->id, '-'); /* chatcmpl-<hex> */
  snprintf(buf, size, "msg_%s", hex ? hex + 1 : out->id);
}

const char *messages_stop_reason(const choice_state *c, size_t n_calls) {
  if (c->finish == NUCLEUS_FINISH_LENGTH) return "max_tokens";
  if (c->stop_string) return "stop_sequence";
  return n_calls ? "tool_use" : "end_turn";
}

json_t *messages_usage(const completion_out *out) {
  int32_t cached = out->cached_tokens;
  return json_pack("{s:i,s:i,s:i,s:i}", "input_tokens",
                   out->prompt_tokens - cached, "output_tokens",
                   out->completion_tokens, "cache_creation_input_tokens", 0,
                   "cache_read_input_tokens", cached);
}

/* chat's generated "call_..." ids read as Anthropic's "toolu_..." */
static json_t *tool_use_id(const json_t *id) {
  const char *s = json_string_value(id);
  if (!s) return json_string("toolu_");
  return strncmp(s, "call_", 5) ? json_copy((json_t *)id)
                                : json_sprintf("toolu_%s", s + 5);
}

json_t *messages_tool_use(const json_t *call, bool with_input) {
  const json_t *fn = json_object_get(call, "function");
  json_t *input = NULL;
  if (with_input) {
    const char *args = json_string_value(json_object_get(fn, "arguments"));
    input = args ? json_loads(args, 0, NULL) : NULL;
    if (input && !json_is_object(input)) {
      json_decref(input);
      input = NULL;
    }
  }
  return json_pack("{s:s,s:o,s:O,s:o}", "type", "tool_use", "id",
                   tool_use_id(json_object_get(call, "id")), "name",
                   json_object_get(fn, "name"), "input",
                   input ? input : json_object());
}

/* A non-empty string field of the chat message as a block of type. */
static int add_text_block(json_t *content, const json_t *msg, const char *key,
                          const char *type) {
  const json_t *v = json_object_get(msg, key);
  if (!json_is_string(v) || !json_string_length(v)) return 0;
  json_t *b = json_pack("{s:s,s:O}", "type", type, type, v);
  if (b && !strcmp(type, "thinking"))
    json_object_set_new(b, "signature", json_string(""));
  return json_array_append_new(content, b);
}

json_t *messages_response(const job *j) {
  const completion_out *out = &j->out;
  const choice_state *c = &out->choices[0];
  json_t *msg;
  size_t n_calls = 0;
  if (out->tools)
    msg = tool_reply_message(
        out->srv->model, &out->req->reply, c->text ? c->text : "", c->len,
        c->finish == NUCLEUS_FINISH_LENGTH ? TOOL_REPLY_CUT : TOOL_REPLY_WHOLE,
        &n_calls);
  else
    msg = json_pack("{s:o}", "content",
                    json_text(c->text ? c->text : "", c->len));
  json_t *content = json_array();
  if (!msg || !content) {
    json_decref(msg);
    json_decref(content);
    return NULL;
  }
  add_text_block(content, msg, "reasoning_content", "thinking");
  add_text_block(content, msg, "content", "text");
  size_t i;
  const json_t *call;
  json_array_foreach(json_object_get(msg, "tool_calls"), i, call) {
    json_array_append_new(content, messages_tool_use(call, true));
  }
  json_decref(msg);
  char id[64];
  messages_id(out, id, sizeof id);
  return json_pack("{s:s,s:s,s:s,s:s,s:o,s:s,s:o,s:o}", "id", id, "type",
                   "message", "role", "assistant", "model", out->model,
                   "content", content, "stop_reason",
                   messages_stop_reason(c, n_calls), "stop_sequence",
                   c->stop_string ? json_string(c->stop_string) : json_null(),
                   "usage", messages_usage(out));
}
