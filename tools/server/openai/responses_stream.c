/* nucleus serve: a streamed /v1/responses: the chat job's deltas (the same
 * chunks chat streams, read for reasoning, text and calls) as the Responses
 * API's typed events, each with its sequence_number: response.created,
 * response.in_progress, then per item output_item.added, content_part.added,
 * output_text.delta / reasoning_text.delta ... .done, content_part.done,
 * output_item.done (a call: function_call_arguments.delta and .done), and
 * last response.completed (or .incomplete, or .failed). */
#include <stdlib.h>
#include <string.h>

#include "http/json_text.h"
#include "responses.h"
#include "responses_output.h"

/* Writes obj as the event type, numbered. */
static int emit(responses_req *r, sse_stream *s, const char *type,
                json_t *obj) {
  if (!obj) return -1;
  json_object_set_new(obj, "type", json_string(type));
  json_object_set_new(obj, "sequence_number", json_integer(r->st.seq++));
  return sse_put(s, type, obj);
}

static int emit_response(responses_req *r, sse_stream *s, const char *type,
                         const json_t *response) {
  return emit(r, s, type, json_pack("{s:O}", "response", (json_t *)response));
}

static int append(responses_stream_state *st, const char *p, size_t n) {
  if (st->len + n + 1 > st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 256;
    while (cap < st->len + n + 1)
      cap *= 2;
    char *grown = realloc(st->text, cap);
    if (!grown) return -1;
    st->text = grown;
    st->cap = cap;
  }
  memcpy(st->text + st->len, p, n);
  st->len += n;
  st->text[st->len] = '\0';
  return 0;
}

static int open_item(responses_req *r, sse_stream *s, int kind) {
  responses_stream_state *st = &r->st;
  size_t index = st->n_items++;
  bool msg = kind == RESPONSES_OPEN_MESSAGE;
  json_t *item = msg ? responses_item_message(r->hex, index, "", 0, false)
                     : responses_item_reasoning(r->hex, index, "", 0, false);
  st->open = kind;
  st->len = 0;
  if (msg) st->message_seen = true;
  char id[96];
  responses_item_id(id, sizeof id, msg ? "msg" : "rs", r->hex, index);
  json_t *part =
      msg ? json_pack("{s:s,s:s,s:[],s:[]}", "type", "output_text", "text", "",
                      "annotations", "logprobs")
          : json_pack("{s:s,s:s}", "type", "reasoning_text", "text", "");
  return emit(r, s, "response.output_item.added",
              json_pack("{s:I,s:o}", "output_index", (json_int_t)index, "item",
                        item)) ||
                 emit(r, s, "response.content_part.added",
                      json_pack("{s:s,s:I,s:i,s:o}", "item_id", id,
                                "output_index", (json_int_t)index,
                                "content_index", 0, "part", part))
             ? -1
             : 0;
}

static int close_item(responses_req *r, sse_stream *s) {
  responses_stream_state *st = &r->st;
  if (st->open == RESPONSES_OPEN_NONE) return 0;
  bool msg = st->open == RESPONSES_OPEN_MESSAGE;
  size_t index = st->n_items - 1;
  st->open = RESPONSES_OPEN_NONE;
  char id[96];
  responses_item_id(id, sizeof id, msg ? "msg" : "rs", r->hex, index);
  const char *text = st->text ? st->text : "";
  json_t *item =
      msg ? responses_item_message(r->hex, index, text, st->len, true)
          : responses_item_reasoning(r->hex, index, text, st->len, true);
  if (!item || json_array_append(st->items, item)) {
    json_decref(item);
    return -1;
  }
  json_t *part = json_array_get(json_object_get(item, "content"), 0);
  int rc =
      emit(r, s,
           msg ? "response.output_text.done" : "response.reasoning_text.done",
           msg ? json_pack("{s:s,s:I,s:i,s:o,s:[]}", "item_id", id,
                           "output_index", (json_int_t)index, "content_index",
                           0, "text", json_text(text, st->len), "logprobs")
               : json_pack("{s:s,s:I,s:i,s:o}", "item_id", id, "output_index",
                           (json_int_t)index, "content_index", 0, "text",
                           json_text(text, st->len))) ||
      emit(r, s, "response.content_part.done",
           json_pack("{s:s,s:I,s:i,s:O}", "item_id", id, "output_index",
                     (json_int_t)index, "content_index", 0, "part", part)) ||
      emit(r, s, "response.output_item.done",
           json_pack("{s:I,s:O}", "output_index", (json_int_t)index, "item",
                     item));
  json_decref(item);
  return rc ? -1 : 0;
}

/* Text of the kind (reasoning or message) into its open item. */
static int put_text(responses_req *r, sse_stream *s, int kind,
                    const json_t *text) {
  if (!json_is_string(text) || !json_string_length(text)) return 0;
  if (r->st.open != kind && (close_item(r, s) || open_item(r, s, kind)))
    return -1;
  const char *p = json_string_value(text);
  size_t n = json_string_length(text);
  if (append(&r->st, p, n)) return -1;
  size_t index = r->st.n_items - 1;
  bool msg = kind == RESPONSES_OPEN_MESSAGE;
  char id[96];
  responses_item_id(id, sizeof id, msg ? "msg" : "rs", r->hex, index);
  json_t *ev = json_pack("{s:s,s:I,s:i,s:O}", "item_id", id, "output_index",
                         (json_int_t)index, "content_index", 0, "delta", text);
  if (ev && msg) json_object_set_new(ev, "logprobs", json_array());
  return emit(
      r, s,
      msg ? "response.output_text.delta" : "response.reasoning_text.delta", ev);
}

/* A whole call (chat streams each once it is complete): its item. */
static int put_call(responses_req *r, sse_stream *s, const json_t *call) {
  if (close_item(r, s)) return -1;
  const json_t *fn = json_object_get(call, "function");
  const char *call_id = json_string_value(json_object_get(call, "id"));
  const char *name = json_string_value(json_object_get(fn, "name"));
  const char *args = json_string_value(json_object_get(fn, "arguments"));
  if (!call_id || !name || !args) return -1;
  size_t index = r->st.n_items++;
  char id[96];
  responses_item_id(id, sizeof id, "fc", r->hex, index);
  json_t *done = responses_item_call(r->hex, index, call_id, name, args, true);
  if (!done || json_array_append(r->st.items, done) ||
      json_array_append_new(r->st.call_ids, json_string(call_id))) {
    json_decref(done);
    return -1;
  }
  int rc =
      emit(r, s, "response.output_item.added",
           json_pack("{s:I,s:o}", "output_index", (json_int_t)index, "item",
                     responses_item_call(r->hex, index, call_id, name, args,
                                         false))) ||
      emit(r, s, "response.function_call_arguments.delta",
           json_pack("{s:s,s:I,s:s}", "item_id", id, "output_index",
                     (json_int_t)index, "delta", args)) ||
      emit(r, s, "response.function_call_arguments.done",
           json_pack("{s:s,s:I,s:s,s:s}", "item_id", id, "output_index",
                     (json_int_t)index, "name", name, "arguments", args)) ||
      emit(r, s, "response.output_item.done",
           json_pack("{s:I,s:O}", "output_index", (json_int_t)index, "item",
                     done));
  json_decref(done);
  return rc ? -1 : 0;
}

/* One chat chunk (taken): its delta's reasoning, text and calls. */
static int put_chunk(responses_req *r, sse_stream *s, json_t *chunk) {
  if (!chunk) return 0;
  const json_t *delta = json_object_get(
      json_array_get(json_object_get(chunk, "choices"), 0), "delta");
  int rc =
      put_text(r, s, RESPONSES_OPEN_REASONING,
               json_object_get(delta, "reasoning_content")) ||
      put_text(r, s, RESPONSES_OPEN_MESSAGE, json_object_get(delta, "content"));
  size_t i;
  const json_t *c;
  json_array_foreach(json_object_get(delta, "tool_calls"), i, c) {
    if (rc) break;
    rc = put_call(r, s, c);
  }
  json_decref(chunk);
  return rc ? -1 : 0;
}

static int put_failed(responses_req *r, sse_stream *s, unsigned status,
                      const char *message) {
  r->st.failed = true;
  json_t *resp = json_deep_copy(r->skeleton);
  if (!resp) return -1;
  json_object_set_new(resp, "status", json_string("failed"));
  json_object_set_new(resp, "output", json_incref(r->st.items));
  json_object_set_new(
      resp, "error",
      json_pack("{s:s,s:o}", "code",
                status >= 500 ? "server_error" : "invalid_request", "message",
                json_text(message, strlen(message))));
  int rc = emit_response(r, s, "response.failed", resp);
  json_decref(resp);
  return rc;
}

static int on_open(job *j, sse_stream *s) {
  responses_req *r = j->ext;
  r->st.items = json_array();
  r->st.call_ids = json_array();
  if (!r->st.items || !r->st.call_ids) return -1;
  return emit_response(r, s, "response.created", r->skeleton) ||
                 emit_response(r, s, "response.in_progress", r->skeleton)
             ? -1
             : 0;
}

/* The chat message with the call ids the stream gave (chat makes new ones
 * for its whole-reply message). */
static void same_call_ids(json_t *chat, const json_t *ids) {
  json_t *msg = json_object_get(
      json_array_get(json_object_get(chat, "choices"), 0), "message");
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(msg, "tool_calls"), i, c) {
    json_t *id = json_array_get(ids, i);
    if (id) json_object_set(c, "id", id);
  }
}

static int on_done(job *j, sse_stream *s) {
  responses_req *r = j->ext;
  if (r->st.failed) return 1;
  json_t *chat = completion_out_response(&j->out);
  if (!chat) return -1;
  same_call_ids(chat, r->st.call_ids);
  json_t *final =
      responses_finish(j->out.srv, r, chat, json_incref(r->st.items));
  json_decref(chat);
  if (!final) return -1;
  const char *st = json_string_value(json_object_get(final, "status"));
  int rc = emit_response(r, s,
                         st && !strcmp(st, "incomplete") ? "response.incomplete"
                                                         : "response.completed",
                         final);
  json_decref(final);
  return rc ? -1 : 1;
}

static int on_event(job *j, const nucleus_event *ev, sse_stream *s) {
  responses_req *r = j->ext;
  completion_out *out = &j->out;
  if (completion_out_record(out, ev, true)) return -1;
  switch (ev->kind) {
  case NUCLEUS_EVENT_TOKEN:
    return put_chunk(r, s, completion_chunk_token(out, ev));
  case NUCLEUS_EVENT_FINISH:
    if (ev->finish_reason == NUCLEUS_FINISH_ERROR)
      return put_failed(r, s, api_status_for(ev->error.code),
                        ev->error.message);
    if (ev->finish_reason == NUCLEUS_FINISH_ABORT)
      return put_failed(r, s, 503,
                        "the request was cancelled: the server is shutting "
                        "down");
    if (put_chunk(r, s, completion_chunk_text(out, ev)) || close_item(r, s))
      return -1;
    /* a reply of no text and no call is still one (empty) message */
    if (!r->st.message_seen && !json_array_size(r->st.call_ids) &&
        (open_item(r, s, RESPONSES_OPEN_MESSAGE) || close_item(r, s)))
      return -1;
    return 0;
  case NUCLEUS_EVENT_DONE: return on_done(j, s);
  }
  return 0;
}

static int on_failed(job *j, sse_stream *s) {
  return put_failed(j->ext, s, 500, "the engine stopped delivering events");
}

const job_stream_ops responses_stream_ops = {
    .open = on_open,
    .event = on_event,
    .failed = on_failed,
};
