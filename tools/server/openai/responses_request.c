/* nucleus serve: a /v1/responses body -> the chat job's body and the
 * response's settings (responses_request.h). */
#include "responses_request.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "http/json_text.h"

typedef enum field_use {
  FIELD_READ,    /* read below, with its own checks */
  FIELD_IGNORED, /* changes nothing in the answer */
} field_use;

/* Every top-level field a body may hold; anything else is a 400. */
static const struct {
  const char *name;
  field_use use;
} FIELDS[] = {
    {"model", FIELD_READ},
    {"input", FIELD_READ},
    {"instructions", FIELD_READ},
    {"tools", FIELD_READ},
    {"tool_choice", FIELD_READ},
    {"parallel_tool_calls", FIELD_READ},
    {"text", FIELD_READ},
    {"reasoning", FIELD_READ},
    {"max_output_tokens", FIELD_READ},
    {"temperature", FIELD_READ},
    {"top_p", FIELD_READ},
    {"stream", FIELD_READ},
    {"stream_options", FIELD_READ},
    {"store", FIELD_READ},
    {"previous_response_id", FIELD_READ},
    {"metadata", FIELD_READ},
    {"truncation", FIELD_READ},
    {"include", FIELD_READ},
    {"background", FIELD_READ},
    {"max_reasoning_tokens", FIELD_READ}, /* nucleus: the thinking budget */
    {"user", FIELD_IGNORED},
    {"safety_identifier", FIELD_IGNORED},
    {"prompt_cache_key", FIELD_IGNORED},
    {"service_tier", FIELD_IGNORED},
};

static const json_t *field(const json_t *root, const char *key) {
  const json_t *v = json_object_get(root, key);
  return json_is_null(v) ? NULL : v;
}

static int check_fields(const json_t *root, api_error *e) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)root, key, v) {
    bool known = false;
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0] && !known; i++)
      known = !strcmp(FIELDS[i].name, key);
    if (!known)
      return api_fail(e, 400, key,
                      "'%.64s' is not supported by nucleus's /v1/responses",
                      key);
  }
  return 0;
}

/* Fields whose only accepted values change nothing: background false,
 * truncation "disabled", include [], stream_options without obfuscation. */
static int check_fixed(const json_t *root, api_error *e) {
  const json_t *bg = field(root, "background");
  if (bg && !json_is_false(bg))
    return api_fail(e, 400, "background",
                    "'background' must be false: nucleus answers on the "
                    "request's own connection");
  const json_t *tr = field(root, "truncation");
  if (tr && !(json_is_string(tr) && !strcmp(json_string_value(tr), "disabled")))
    return api_fail(e, 400, "truncation",
                    "'truncation' must be \"disabled\": a conversation "
                    "longer than the context is refused, not cut");
  const json_t *inc = field(root, "include");
  if (inc && !(json_is_array(inc) && !json_array_size(inc)))
    return api_fail(e, 400, "include",
                    "'include' must be empty: nucleus adds no optional "
                    "output data");
  const json_t *so = field(root, "stream_options");
  if (so) {
    const json_t *ob = json_object_get(so, "include_obfuscation");
    if (!json_is_object(so) || json_object_size(so) > (ob ? 1u : 0u) ||
        (ob && !json_is_false(ob)))
      return api_fail(e, 400, "stream_options",
                      "'stream_options' may only hold include_obfuscation: "
                      "false (nucleus pads no deltas)");
  }
  return 0;
}

static int get_bool(const json_t *root, const char *key, bool *out,
                    api_error *e) {
  const json_t *v = field(root, key);
  if (!v) return 0;
  if (!json_is_boolean(v))
    return api_fail(e, 400, key, "'%s' must be true or false", key);
  *out = json_is_true(v);
  return 0;
}

static int check_metadata(const json_t *md, api_error *e) {
  if (!json_is_object(md) || json_object_size(md) > RESPONSES_MAX_METADATA)
    return api_fail(e, 400, "metadata",
                    "'metadata' must be an object of at most %d pairs",
                    RESPONSES_MAX_METADATA);
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)md, key, v) {
    if (strlen(key) > RESPONSES_MAX_METADATA_KEY || !json_is_string(v) ||
        json_string_length(v) > RESPONSES_MAX_METADATA_VALUE)
      return api_fail(e, 400, "metadata",
                      "'metadata': keys are strings of at most %d bytes and "
                      "values strings of at most %d",
                      RESPONSES_MAX_METADATA_KEY, RESPONSES_MAX_METADATA_VALUE);
  }
  return 0;
}

/* Function tools, flat ({type, name, description, parameters, strict}) ->
 * chat's nested shape; the chat job checks the rest (names, schemas). */
static int chat_tools(const json_t *tools, json_t *chat, api_error *e) {
  if (!json_is_array(tools))
    return api_fail(e, 400, "tools", "'tools' must be a list of tools");
  json_t *out = json_array();
  json_object_set_new(chat, "tools", out);
  size_t i;
  const json_t *t;
  json_array_foreach(tools, i, t) {
    const char *type = json_string_value(json_object_get(t, "type"));
    if (!json_is_object(t) || !type || strcmp(type, "function"))
      return api_fail(e, 400, "tools",
                      "tools[%zu]: only function tools ({\"type\": "
                      "\"function\", \"name\": ...}) are supported, got "
                      "type '%.32s'",
                      i, type ? type : "?");
    json_t *fn = json_object();
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)t, key, v) {
      if (!strcmp(key, "type")) continue;
      if (strcmp(key, "name") && strcmp(key, "description") &&
          strcmp(key, "parameters") && strcmp(key, "strict")) {
        json_decref(fn);
        return api_fail(e, 400, "tools", "tools[%zu].%.64s is not supported", i,
                        key);
      }
      if (!json_is_null(v)) json_object_set(fn, key, (json_t *)v);
    }
    json_array_append_new(
        out, json_pack("{s:s,s:o}", "type", "function", "function", fn));
  }
  return 0;
}

/* "none" | "auto" | "required" | {"type": "function", "name"} -> chat's. */
static int chat_tool_choice(const json_t *tc, json_t *chat, api_error *e) {
  if (json_is_string(tc)) {
    json_object_set(chat, "tool_choice", (json_t *)tc);
    return 0;
  }
  const char *type = json_string_value(json_object_get(tc, "type"));
  const json_t *name = json_object_get(tc, "name");
  if (!json_is_object(tc) || !type || strcmp(type, "function") ||
      !json_is_string(name) || json_object_size(tc) != 2)
    return api_fail(e, 400, "tool_choice",
                    "'tool_choice' must be 'none', 'auto', 'required' or "
                    "{\"type\": \"function\", \"name\": ...}");
  json_object_set_new(
      chat, "tool_choice",
      json_pack("{s:s,s:{s:O}}", "type", "function", "function", "name", name));
  return 0;
}

/* text: {"format": {"type": "text" | "json_object" | "json_schema", ...}}
 * -> chat's response_format. */
static int chat_text_format(const json_t *text, json_t *chat, api_error *e) {
  if (!json_is_object(text))
    return api_fail(e, 400, "text", "'text' must be an object {\"format\"}");
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)text, key, v) {
    if (strcmp(key, "format") && !json_is_null(v))
      return api_fail(e, 400, "text",
                      "'text.%.64s' is not supported (text.format is)", key);
  }
  const json_t *f = field(text, "format");
  if (!f) return 0;
  const char *type = json_string_value(json_object_get(f, "type"));
  if (!json_is_object(f) || !type)
    return api_fail(e, 400, "text.format",
                    "'text.format' must be an object with a 'type'");
  if (!strcmp(type, "text") || !strcmp(type, "json_object")) {
    if (json_object_size(f) != 1)
      return api_fail(e, 400, "text.format",
                      "'text.format' of type '%s' takes no other field", type);
    json_object_set_new(chat, "response_format",
                        json_pack("{s:s}", "type", type));
    return 0;
  }
  if (strcmp(type, "json_schema"))
    return api_fail(e, 400, "text.format",
                    "'text.format.type' must be 'text', 'json_object' or "
                    "'json_schema', got '%.64s'",
                    type);
  json_t *js = json_object();
  json_object_foreach((json_t *)f, key, v) {
    if (!strcmp(key, "type") || !strcmp(key, "description")) continue;
    if (strcmp(key, "name") && strcmp(key, "schema") && strcmp(key, "strict")) {
      json_decref(js);
      return api_fail(e, 400, "text.format",
                      "'text.format.%.64s' is not supported", key);
    }
    json_object_set(js, key, (json_t *)v);
  }
  json_object_set_new(
      chat, "response_format",
      json_pack("{s:s,s:o}", "type", "json_schema", "json_schema", js));
  return 0;
}

/* reasoning: {"effort"} -> chat's reasoning_effort (the family's switch);
 * summaries are not made (the reasoning item carries the whole text). */
static int chat_reasoning(const json_t *r, json_t *chat, api_error *e) {
  if (!json_is_object(r))
    return api_fail(e, 400, "reasoning",
                    "'reasoning' must be an object {\"effort\"}");
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)r, key, v) {
    if (json_is_null(v)) continue;
    if (!strcmp(key, "effort"))
      json_object_set(chat, "reasoning_effort", (json_t *)v);
    else if (!strcmp(key, "summary") || !strcmp(key, "generate_summary"))
      return api_fail(e, 400, "reasoning.summary",
                      "'reasoning.%s' is not supported: the reasoning item "
                      "carries the whole reasoning text, not a summary",
                      key);
    else
      return api_fail(e, 400, "reasoning", "'reasoning.%.64s' is not supported",
                      key);
  }
  return 0;
}

/* The plain fields: copied under chat's names. */
static int chat_plain(const json_t *root, json_t *chat, api_error *e) {
  static const char *const map[][2] = {
      {"model", "model"},
      {"temperature", "temperature"},
      {"top_p", "top_p"},
      {"max_output_tokens", "max_completion_tokens"},
      {"parallel_tool_calls", "parallel_tool_calls"},
      {"max_reasoning_tokens", "max_reasoning_tokens"},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    const json_t *v = field(root, map[i][0]);
    if (v) json_object_set(chat, map[i][1], (json_t *)v);
  }
  const json_t *tools = field(root, "tools");
  const json_t *tc = field(root, "tool_choice");
  const json_t *text = field(root, "text");
  const json_t *reasoning = field(root, "reasoning");
  if ((tools && chat_tools(tools, chat, e)) ||
      (tc && chat_tool_choice(tc, chat, e)) ||
      (text && chat_text_format(text, chat, e)) ||
      (reasoning && chat_reasoning(reasoning, chat, e)))
    return -1;
  return 0;
}

/* The conversation: the stored one of previous_response_id, then input. */
static int conversation(server_ctx *srv, const json_t *root, responses_req *r,
                        api_error *e) {
  const json_t *prev = field(root, "previous_response_id");
  if (prev) {
    if (!json_is_string(prev))
      return api_fail(e, 400, "previous_response_id",
                      "'previous_response_id' must be a string");
    if (!srv->responses ||
        !responses_store_get(srv->responses, json_string_value(prev), NULL,
                             &r->conversation) ||
        !r->conversation)
      return api_fail(e, 400, "previous_response_id",
                      "Previous response with id '%.80s' not found (never "
                      "stored, deleted, or evicted from the store: "
                      "--responses-max, --responses-max-bytes)",
                      json_string_value(prev));
  } else {
    r->conversation = json_array();
  }
  const json_t *input = field(root, "input");
  if (!input) return api_fail(e, 400, "input", "'input' is required");
  if (!r->conversation) return api_fail(e, 500, NULL, "out of memory");
  r->images.allow_urls = srv->cfg->allow_image_urls;
  return responses_input_append(input, r->conversation, &r->images, e);
}

static json_t *or_null(const json_t *v) {
  return v ? json_incref((json_t *)v) : json_null();
}

/* The response object as created: the request's settings, in_progress. */
static json_t *skeleton(server_ctx *srv, const json_t *root,
                        const responses_req *r) {
  const json_t *model = field(root, "model");
  const json_t *t = field(root, "temperature");
  const json_t *p = field(root, "top_p");
  const json_t *text = field(root, "text");
  const json_t *fmt = text ? field(text, "format") : NULL;
  const json_t *reasoning = field(root, "reasoning");
  const json_t *md = field(root, "metadata");
  const json_t *tools = field(root, "tools");
  const json_t *tc = field(root, "tool_choice");
  const json_t *ptc = field(root, "parallel_tool_calls");
  json_t *o = json_object();
  json_object_set_new(o, "id", json_string(r->id));
  json_object_set_new(o, "object", json_string("response"));
  json_object_set_new(o, "created_at", json_integer((json_int_t)time(NULL)));
  json_object_set_new(o, "status", json_string("in_progress"));
  json_object_set_new(o, "background", json_false());
  json_object_set_new(o, "error", json_null());
  json_object_set_new(o, "completed_at", json_null());
  json_object_set_new(o, "incomplete_details", json_null());
  json_object_set_new(o, "instructions", or_null(field(root, "instructions")));
  json_object_set_new(o, "max_output_tokens",
                      or_null(field(root, "max_output_tokens")));
  json_object_set_new(o, "model",
                      model ? json_incref((json_t *)model)
                            : json_text(srv->model_id, strlen(srv->model_id)));
  json_object_set_new(o, "output", json_array());
  json_object_set_new(o, "parallel_tool_calls",
                      ptc ? json_incref((json_t *)ptc) : json_true());
  json_object_set_new(o, "previous_response_id",
                      or_null(field(root, "previous_response_id")));
  json_object_set_new(
      o, "reasoning",
      json_pack("{s:o,s:n}", "effort",
                or_null(reasoning ? field(reasoning, "effort") : NULL),
                "summary"));
  json_object_set_new(o, "store", json_boolean(r->store));
  json_object_set_new(o, "temperature",
                      t ? json_incref((json_t *)t)
                        : json_real(srv->defaults.sampling.temperature));
  json_object_set_new(o, "text",
                      json_pack("{s:o}", "format",
                                fmt ? json_incref((json_t *)fmt)
                                    : json_pack("{s:s}", "type", "text")));
  json_object_set_new(o, "tool_choice",
                      tc ? json_incref((json_t *)tc) : json_string("auto"));
  json_object_set_new(o, "tools",
                      tools ? json_incref((json_t *)tools) : json_array());
  json_object_set_new(o, "top_p",
                      p ? json_incref((json_t *)p)
                        : json_real(srv->defaults.sampling.top_p));
  json_object_set_new(o, "truncation", json_string("disabled"));
  json_object_set_new(o, "usage", json_null());
  json_object_set_new(o, "user", or_null(field(root, "user")));
  json_object_set_new(o, "metadata",
                      md ? json_incref((json_t *)md) : json_object());
  return o;
}

static void new_id(responses_req *r) {
  unsigned char rnd[16] = {0};
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    memcpy(rnd, &ts, sizeof ts < sizeof rnd ? sizeof ts : sizeof rnd);
  }
  int o = snprintf(r->id, sizeof r->id, "resp_");
  for (size_t i = 0; i < sizeof rnd; i++)
    o += snprintf(r->id + o, sizeof r->id - (size_t)o, "%02x", rnd[i]);
  r->hex = r->id + 5;
}

int responses_request_parse(server_ctx *srv, const json_t *root,
                            responses_req *r, api_error *e) {
  memset(r, 0, sizeof *r);
  new_id(r);
  r->store = true; /* OpenAI's default */
  if (!json_is_object(root))
    return api_fail(e, 400, NULL, "the request body must be a JSON object");
  if (check_fields(root, e) || check_fixed(root, e) ||
      get_bool(root, "stream", &r->stream, e) ||
      get_bool(root, "store", &r->store, e))
    return -1;
  const json_t *md = field(root, "metadata");
  if (md && check_metadata(md, e)) return -1;
  const json_t *instr = field(root, "instructions");
  if (instr && !json_is_string(instr))
    return api_fail(e, 400, "instructions", "'instructions' must be a string");
  if (conversation(srv, root, r, e)) return -1;
  r->chat = json_object();
  json_t *msgs = json_array();
  if (!r->chat || !msgs) {
    json_decref(msgs);
    return api_fail(e, 500, NULL, "out of memory");
  }
  json_object_set_new(r->chat, "messages", msgs);
  if (instr && json_string_length(instr))
    json_array_append_new(
        msgs, json_pack("{s:s,s:O}", "role", "system", "content", instr));
  json_array_extend(msgs, r->conversation);
  if (chat_plain(root, r->chat, e)) return -1;
  r->skeleton = skeleton(srv, root, r);
  if (!r->skeleton) return api_fail(e, 500, NULL, "out of memory");
  return 0;
}

void responses_req_free(responses_req *r) {
  json_decref(r->skeleton);
  json_decref(r->chat);
  json_decref(r->conversation);
  free(r->st.text);
  json_decref(r->st.items);
  json_decref(r->st.call_ids);
  image_list_clear(&r->images);
  memset(r, 0, sizeof *r);
}

void responses_error_param(api_error *e) {
  static const char *const map[][2] = {
      {"messages", "input"},
      {"response_format", "text.format"},
      {"max_completion_tokens", "max_output_tokens"},
      {"max_tokens", "max_output_tokens"},
      {"reasoning_effort", "reasoning.effort"},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(e->param, map[i][0])) {
      snprintf(e->param, sizeof e->param, "%s", map[i][1]);
      return;
    }
}
