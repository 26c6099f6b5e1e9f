/* nucleus serve: building completion responses and chunks. */
#include "completion_json.h"

#include "harmony.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "http/json_text.h"
#include "inspect_json.h"
#include "reasoning_request.h"

#define FINGERPRINT "fp_nucleus"

const char *finish_reason_text(nucleus_finish_reason r) {
  switch (r) {
  case NUCLEUS_FINISH_STOP: return "stop";
  case NUCLEUS_FINISH_LENGTH: return "length";
  case NUCLEUS_FINISH_ABORT: return "abort";
  case NUCLEUS_FINISH_ERROR: return "error";
  case NUCLEUS_FINISH_NONE: break;
  }
  return NULL;
}

int completion_out_init(completion_out *out, server_ctx *srv,
                        const gen_request *req, int32_t prompt_tokens) {
  memset(out, 0, sizeof *out);
  out->srv = srv;
  out->req = req;
  out->n = req->params.n > 0 ? req->params.n : 1;
  out->created = (int64_t)time(NULL);
  out->model = req->model[0] ? req->model : srv->model_id;
  out->prompt_tokens = prompt_tokens;
  /* replies are read for calls, for their thinking, and harmony's always:
   * their channels hold the content */
  out->tools = req->chat && (req->reply.calls || req->reply.reasoning ||
                             harmony_model(srv->model));
  unsigned char rnd[12] = {0};
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    memcpy(rnd, &ts, sizeof rnd < sizeof ts ? sizeof rnd : sizeof ts);
  }
  int o = snprintf(out->id, sizeof out->id, "%s",
                   req->chat ? "chatcmpl-" : "cmpl-");
  for (size_t i = 0; i < sizeof rnd; i++)
    o += snprintf(out->id + o, sizeof out->id - (size_t)o, "%02x", rnd[i]);
  out->choices = calloc((size_t)out->n, sizeof *out->choices);
  return out->choices ? 0 : -1;
}

void completion_out_set_echo(completion_out *out, char *text, size_t len,
                             json_t *logprobs) {
  out->echo_text = text;
  out->echo_len = len;
  out->echo_logprobs = logprobs;
  for (int32_t i = 0; i < out->n; i++) /* the completion's text follows */
    out->choices[i].text_offset = len;
}

void completion_out_free(completion_out *out) {
  free(out->echo_text);
  json_decref(out->echo_logprobs);
  out->echo_text = NULL;
  out->echo_logprobs = NULL;
  if (!out->choices) return;
  for (int32_t i = 0; i < out->n; i++) {
    free(out->choices[i].text);
    free(out->choices[i].stop_string);
    json_decref(out->choices[i].logprobs);
    json_decref(out->choices[i].inspect);
  }
  free(out->choices);
  out->choices = NULL;
}

/* The token's text as a JSON string plus its raw bytes. */
static json_t *token_text(server_ctx *srv, int32_t id, json_t **bytes) {
  char buf[256];
  size_t len = 0;
  nucleus_error err;
  if (nucleus_token_piece(srv->model, id, buf, sizeof buf, &len, &err) !=
      NUCLEUS_OK)
    len = 0;
  if (len > sizeof buf) len = sizeof buf;
  if (bytes) {
    *bytes = json_array();
    for (size_t i = 0; *bytes && i < len; i++)
      json_array_append_new(*bytes, json_integer((unsigned char)buf[i]));
  }
  return json_text(buf, len);
}

/* Chat: {"token", "logprob", "bytes", "top_logprobs": [...]}. */
static json_t *chat_logprob_entry(server_ctx *srv, const nucleus_event *ev,
                                  int32_t top_n) {
  json_t *bytes = NULL;
  json_t *e = json_object();
  json_object_set_new(e, "token", token_text(srv, ev->token, &bytes));
  json_object_set_new(e, "logprob", json_finite(ev->logprob));
  json_object_set_new(e, "bytes", bytes);
  json_t *top = json_array();
  for (int32_t i = 0; i < ev->n_top_logprobs && i < top_n; i++) {
    json_t *alt_bytes = NULL;
    json_t *alt = json_object();
    json_object_set_new(alt, "token",
                        token_text(srv, ev->top_logprobs[i].token, &alt_bytes));
    json_object_set_new(alt, "logprob",
                        json_finite(ev->top_logprobs[i].logprob));
    json_object_set_new(alt, "bytes", alt_bytes);
    json_array_append_new(top, alt);
  }
  json_object_set_new(e, "top_logprobs", top);
  return e;
}

json_t *completions_logprobs_empty(void) {
  return json_pack("{s:[],s:[],s:[],s:[]}", "tokens", "token_logprobs",
                   "top_logprobs", "text_offset");
}

/* The token's raw piece into buf (at most 256 bytes); its length. */
static size_t token_piece(server_ctx *srv, int32_t id, char buf[256]) {
  size_t len = 0;
  nucleus_error err;
  if (nucleus_token_piece(srv->model, id, buf, 256, &len, &err) != NUCLEUS_OK)
    return 0;
  return len > 256 ? 256 : len;
}

/* "bytes:\xNN..." (OpenAI's and vLLM's spelling for bytes that are not
 * whole UTF-8). */
static json_t *bytes_key(const char *buf, size_t len) {
  char hex[6 + 4 * 256 + 1];
  int o = snprintf(hex, sizeof hex, "bytes:");
  for (size_t i = 0; i < len; i++)
    o += snprintf(hex + o, sizeof hex - (size_t)o, "\\x%02x",
                  (unsigned char)buf[i]);
  return json_stringn(hex, (size_t)o);
}

/* A completions token string: the piece when it is whole UTF-8, else its
 * bytes, so that distinct tokens that render alike (the halves of one
 * character) keep distinct top_logprobs keys. */
static json_t *token_key(server_ctx *srv, int32_t id) {
  char buf[256];
  size_t len = token_piece(srv, id, buf), i = 0;
  while (i < len) {
    size_t l = utf8_sequence_length((const unsigned char *)buf + i, len - i);
    if (!l) return bytes_key(buf, len);
    i += l;
  }
  return json_stringn(buf, len);
}

/* Adds key -> logprob; a second token with the same text (a byte token
 * beside a whole one) is keyed by its bytes. */
static void top_put(server_ctx *srv, json_t *top, int32_t id, float logprob) {
  json_t *key = token_key(srv, id);
  if (key && json_object_get(top, json_string_value(key))) {
    json_decref(key);
    char buf[256];
    key = bytes_key(buf, token_piece(srv, id, buf));
    if (key && json_object_get(top, json_string_value(key))) {
      json_decref(key); /* the same bytes twice: the same token */
      return;
    }
  }
  if (key)
    json_object_set_new(top, json_string_value(key), json_finite(logprob));
  json_decref(key);
}

/* Completions: appends one token to the four parallel arrays. top_logprobs
 * holds the token (first, under the same key as in "tokens") and the top_n
 * alternatives: up to top_n + 1 entries, as OpenAI's. */
void completions_logprob_put(server_ctx *srv, json_t *lp, int32_t token,
                             bool scored, float logprob,
                             const nucleus_token_logprob *top_lp, int32_t n_top,
                             int32_t top_n, size_t offset) {
  json_array_append_new(json_object_get(lp, "tokens"), token_key(srv, token));
  json_array_append_new(json_object_get(lp, "token_logprobs"),
                        scored ? json_finite(logprob) : json_null());
  json_t *top = json_null();
  if (scored) {
    top = json_object();
    top_put(srv, top, token, logprob); /* logprobs 0: just it */
    for (int32_t i = 0; i < n_top && i < top_n; i++)
      if (top_lp[i].token != token)
        top_put(srv, top, top_lp[i].token, top_lp[i].logprob);
  }
  json_array_append_new(json_object_get(lp, "top_logprobs"), top);
  json_array_append_new(json_object_get(lp, "text_offset"),
                        json_integer((json_int_t)offset));
}

static void completions_logprob_append(server_ctx *srv, json_t *lp,
                                       const nucleus_event *ev, int32_t top_n,
                                       size_t offset) {
  completions_logprob_put(srv, lp, ev->token, true, ev->logprob,
                          ev->top_logprobs, ev->n_top_logprobs, top_n, offset);
}

/* The logprobs object for one token event (chunks and accumulation). */
static json_t *event_logprobs(const completion_out *out,
                              const nucleus_event *ev, size_t offset) {
  const gen_request *req = out->req;
  if (req->chat) {
    json_t *content = json_array();
    json_array_append_new(content,
                          chat_logprob_entry(out->srv, ev, req->top_logprobs));
    return json_pack("{s:o}", "content", content);
  }
  json_t *lp = completions_logprobs_empty();
  completions_logprob_append(out->srv, lp, ev, req->top_logprobs, offset);
  return lp;
}

static int append_text(choice_state *c, const char *s, size_t n) {
  if (c->len + n + 1 > c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 256;
    while (cap < c->len + n + 1)
      cap *= 2;
    char *grown = realloc(c->text, cap);
    if (!grown) return -1;
    c->text = grown;
    c->cap = cap;
  }
  memcpy(c->text + c->len, s, n);
  c->len += n;
  c->text[c->len] = '\0';
  return 0;
}

/* The event's sampler record appended to the choice's (the end token's
 * rides on FINISH: it has no TOKEN event). */
static int add_inspect(const completion_out *out, choice_state *c,
                       const nucleus_event *ev) {
  if (!ev->inspect) return 0;
  if (!c->inspect) c->inspect = json_array();
  if (!c->inspect ||
      json_array_append_new(c->inspect, inspect_json(out->srv, ev->inspect)))
    return -1;
  return 0;
}

int completion_out_record(completion_out *out, const nucleus_event *ev,
                          bool accumulate) {
  if (ev->kind == NUCLEUS_EVENT_DONE) {
    out->timings = ev->timings;
    if (ev->usage.completion_tokens > out->completion_tokens)
      out->completion_tokens = ev->usage.completion_tokens;
    if (ev->usage.prompt_tokens > 0)
      out->prompt_tokens = ev->usage.prompt_tokens;
    out->cached_tokens = ev->usage.cached_tokens;
    out->draft_tokens = ev->usage.draft_tokens;
    out->accepted_draft_tokens = ev->usage.accepted_draft_tokens;
    out->reasoning_tokens = ev->usage.reasoning_tokens;
    return 0;
  }
  if (ev->index < 0 || ev->index >= out->n) return 0;
  choice_state *c = &out->choices[ev->index];
  if (ev->kind == NUCLEUS_EVENT_FINISH) {
    c->finish = ev->finish_reason;
    c->finished = true;
    if (ev->stop_string && !c->stop_string &&
        !(c->stop_string = strdup(ev->stop_string)))
      return -1;
    if (ev->finish_reason == NUCLEUS_FINISH_ERROR && !out->failed) {
      out->failed = true;
      out->error = ev->error;
      out->error_param = ev->error_in_grammar ? out->req->grammar_param : NULL;
    }
    if (ev->finish_reason == NUCLEUS_FINISH_ABORT) out->aborted = true;
    /* The text held back until the end (an unfinished stop string, a
     * partial character, a beam's whole text) rides on this event. */
    c->text_offset += ev->text_len;
    if ((accumulate || out->tools) && ev->text_len &&
        append_text(c, ev->text, ev->text_len))
      return -1;
    return accumulate ? add_inspect(out, c, ev) : 0;
  }
  out->completion_tokens++;
  if (accumulate && add_inspect(out, c, ev)) return -1;
  if (accumulate && out->req->logprobs) {
    if (!c->logprobs)
      c->logprobs = out->req->chat ? json_pack("{s:[]}", "content")
                                   : completions_logprobs_empty();
    if (!c->logprobs) return -1;
    if (out->req->chat)
      json_array_append_new(
          json_object_get(c->logprobs, "content"),
          chat_logprob_entry(out->srv, ev, out->req->top_logprobs));
    else
      completions_logprob_append(out->srv, c->logprobs, ev,
                                 out->req->top_logprobs, c->text_offset);
  }
  c->text_offset += ev->text_len;
  if ((accumulate || out->tools) && ev->text_len &&
      append_text(c, ev->text, ev->text_len))
    return -1;
  return 0;
}

static json_t *usage_json(const completion_out *out) {
  json_t *u =
      json_pack("{s:i,s:i,s:i,s:{s:i}}", "prompt_tokens", out->prompt_tokens,
                "completion_tokens", out->completion_tokens, "total_tokens",
                out->prompt_tokens + out->completion_tokens,
                "prompt_tokens_details", "cached_tokens", out->cached_tokens);
  /* speculative decoding: the drafts kept and rejected (OpenAI's names,
   * for predicted outputs and for the other drafters alike) */
  json_t *details = json_object();
  if (out->req->params.speculative.type != NUCLEUS_SPEC_OFF) {
    json_object_set_new(details, "accepted_prediction_tokens",
                        json_integer(out->accepted_draft_tokens));
    json_object_set_new(
        details, "rejected_prediction_tokens",
        json_integer(out->draft_tokens - out->accepted_draft_tokens));
  }
  /* a thinking model's: the tokens of its thinking blocks */
  if (reasoning_request_tracked(out->req))
    json_object_set_new(details, "reasoning_tokens",
                        json_integer(out->reasoning_tokens));
  if (u && json_object_size(details))
    json_object_set_new(u, "completion_tokens_details", details);
  else
    json_decref(details);
  return u;
}

static json_t *envelope(const completion_out *out, bool chunk) {
  const char *object =
      out->req->chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                     : "text_completion";
  json_t *o = json_object();
  json_object_set_new(o, "id", json_string(out->id));
  json_object_set_new(o, "object", json_string(object));
  json_object_set_new(o, "created", json_integer(out->created));
  json_object_set_new(o, "model", json_text(out->model, strlen(out->model)));
  json_object_set_new(o, "system_fingerprint", json_string(FINGERPRINT));
  return o;
}

static json_t *finish_json(nucleus_finish_reason r) {
  const char *s = finish_reason_text(r);
  return s ? json_string(s) : json_null();
}

/* A reply that ended by itself after calls ends with "tool_calls". */
static json_t *choice_finish_json(nucleus_finish_reason r, size_t n_calls) {
  if (r == NUCLEUS_FINISH_STOP && n_calls) return json_string("tool_calls");
  return finish_json(r);
}

/* A reply max_tokens cut ends with what the cut broke dropped. */
static tool_reply_end reply_end(const choice_state *c) {
  return c->finish == NUCLEUS_FINISH_LENGTH ? TOOL_REPLY_CUT : TOOL_REPLY_WHOLE;
}

/* echo: the prompt's text, then the choice's. */
static json_t *echo_joined(const completion_out *out, const choice_state *c) {
  size_t n = out->echo_len + c->len;
  char *all = malloc(n + 1);
  if (!all) return NULL;
  memcpy(all, out->echo_text, out->echo_len);
  if (c->len) memcpy(all + out->echo_len, c->text, c->len);
  json_t *text = json_text(all, n);
  free(all);
  return text;
}

/* echo with logprobs: the prompt's tokens, then the choice's (whose
 * offsets already count the prompt's text). */
static json_t *echo_logprobs_joined(const completion_out *out,
                                    const choice_state *c) {
  json_t *lp = json_deep_copy(out->echo_logprobs);
  if (!lp || !c->logprobs) return lp;
  static const char *const keys[] = {"tokens", "token_logprobs", "top_logprobs",
                                     "text_offset"};
  for (size_t k = 0; k < 4; k++)
    json_array_extend(json_object_get(lp, keys[k]),
                      json_object_get(c->logprobs, keys[k]));
  return lp;
}

json_t *completion_out_response(const completion_out *out) {
  json_t *o = envelope(out, false);
  json_t *choices = json_array();
  for (int32_t i = 0; i < out->n; i++) {
    const choice_state *c = &out->choices[i];
    json_t *ch = json_object();
    json_object_set_new(ch, "index", json_integer(i));
    size_t n_calls = 0;
    if (out->tools) {
      json_object_set_new(ch, "message",
                          tool_reply_message(out->srv->model, &out->req->reply,
                                             c->text ? c->text : "", c->len,
                                             reply_end(c), &n_calls));
    } else {
      json_t *text = out->echo_text ? echo_joined(out, c)
                                    : json_text(c->text ? c->text : "", c->len);
      if (out->req->chat)
        json_object_set_new(
            ch, "message",
            json_pack("{s:s,s:o}", "role", "assistant", "content", text));
      else
        json_object_set_new(ch, "text", text);
    }
    json_t *lp = out->echo_logprobs ? echo_logprobs_joined(out, c)
                 : c->logprobs      ? json_incref(c->logprobs)
                                    : NULL;
    if (!lp && out->req->logprobs)
      lp = out->req->chat ? json_pack("{s:[]}", "content")
                          : completions_logprobs_empty();
    json_object_set_new(ch, "logprobs", lp ? lp : json_null());
    json_object_set_new(ch, "finish_reason",
                        choice_finish_json(c->finish, n_calls));
    if (out->req->params.sampling.inspect_top_n > 0)
      json_object_set_new(ch, "inspect",
                          c->inspect ? json_incref(c->inspect) : json_array());
    json_array_append_new(choices, ch);
  }
  json_object_set_new(o, "choices", choices);
  json_object_set_new(o, "usage", usage_json(out));
  return o;
}

/* A chunk with one choice: delta (chat) or text (completions). */
static json_t *chunk(const completion_out *out, int32_t index, json_t *delta,
                     const char *text, size_t len, json_t *logprobs,
                     nucleus_finish_reason finish) {
  json_t *o = envelope(out, true);
  json_t *ch = json_object();
  json_object_set_new(ch, "index", json_integer(index));
  if (out->req->chat)
    json_object_set_new(ch, "delta", delta ? delta : json_object());
  else
    json_object_set_new(ch, "text", json_text(text ? text : "", len));
  json_object_set_new(ch, "logprobs", logprobs ? logprobs : json_null());
  json_object_set_new(
      ch, "finish_reason",
      choice_finish_json(finish, out->tools && index >= 0 && index < out->n
                                     ? out->choices[index].tools.calls_sent
                                     : 0));
  json_object_set_new(o, "choices", json_pack("[o]", ch));
  if (out->req->include_usage) json_object_set_new(o, "usage", json_null());
  return o;
}

json_t *completion_chunk_role(const completion_out *out, int32_t index) {
  if (!out->req->chat)
    return out->echo_text
               ? chunk(out, index, NULL, out->echo_text, out->echo_len,
                       out->echo_logprobs ? json_deep_copy(out->echo_logprobs)
                                          : NULL,
                       NUCLEUS_FINISH_NONE)
               : NULL;
  json_t *delta = json_pack("{s:s,s:s}", "role", "assistant", "content", "");
  return chunk(out, index, delta, NULL, 0, NULL, NUCLEUS_FINISH_NONE);
}

/* Adds the event's inspect record to a one-choice chunk. */
static json_t *with_inspect(const completion_out *out, json_t *o,
                            const nucleus_event *ev) {
  if (o && ev->inspect)
    json_object_set_new(json_array_get(json_object_get(o, "choices"), 0),
                        "inspect",
                        json_pack("[o]", inspect_json(out->srv, ev->inspect)));
  return o;
}

json_t *completion_chunk_token(const completion_out *out,
                               const nucleus_event *ev) {
  if (ev->index < 0 || ev->index >= out->n) return NULL;
  if (!ev->text_len && !out->req->logprobs && !ev->inspect) return NULL;
  /* text_offset was already advanced past this token by record(). */
  size_t offset = out->choices[ev->index].text_offset - ev->text_len;
  json_t *lp = out->req->logprobs ? event_logprobs(out, ev, offset) : NULL;
  json_t *delta = NULL;
  if (out->tools) {
    choice_state *c = &out->choices[ev->index];
    delta = tool_reply_delta(out->srv->model, &out->req->reply, &c->tools,
                             c->text ? c->text : "", c->len, TOOL_REPLY_GOING);
    if (!delta && !lp && !ev->inspect) return NULL;
  } else if (out->req->chat) {
    delta = json_pack("{s:o}", "content", json_text(ev->text, ev->text_len));
  }
  return with_inspect(out,
                      chunk(out, ev->index, delta, ev->text, ev->text_len, lp,
                            NUCLEUS_FINISH_NONE),
                      ev);
}

json_t *completion_chunk_text(const completion_out *out,
                              const nucleus_event *ev) {
  if (ev->index < 0 || ev->index >= out->n) return NULL;
  if (out->tools) { /* the end decides all: held text, unclosed calls */
    choice_state *c = &out->choices[ev->index];
    json_t *delta =
        tool_reply_delta(out->srv->model, &out->req->reply, &c->tools,
                         c->text ? c->text : "", c->len, reply_end(c));
    return delta || ev->inspect
               ? with_inspect(out,
                              chunk(out, ev->index, delta, NULL, 0, NULL,
                                    NUCLEUS_FINISH_NONE),
                              ev)
               : NULL;
  }
  if (!ev->text_len && !ev->inspect) return NULL;
  json_t *delta = NULL;
  if (out->req->chat)
    delta = json_pack("{s:o}", "content", json_text(ev->text, ev->text_len));
  return with_inspect(out,
                      chunk(out, ev->index, delta, ev->text, ev->text_len, NULL,
                            NUCLEUS_FINISH_NONE),
                      ev);
}

json_t *completion_chunk_finish(const completion_out *out, int32_t index) {
  if (index < 0 || index >= out->n) return NULL;
  return chunk(out, index, NULL, NULL, 0, NULL, out->choices[index].finish);
}

json_t *completion_chunk_usage(const completion_out *out) {
  json_t *o = envelope(out, true);
  json_object_set_new(o, "choices", json_array());
  json_object_set_new(o, "usage", usage_json(out));
  return o;
}
