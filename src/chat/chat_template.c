/* chat_template: JSON inputs to template variables, then a bounded render. */
#include "chat_template.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template_guard.h"
#include "jinja/jinja.h"

struct nc_chat_template {
  jinja_template *jt;
};

nc_code nc_chat_template_compile(const char *tmpl, size_t tmpl_len,
                                 nc_chat_template **out, nc_error *err) {
  *out = NULL;
  if (!tmpl) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "no chat template");
  nc_chat_template *t = calloc(1, sizeof *t);
  if (!t) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  nc_code rc = jinja_compile(tmpl, tmpl_len, &t->jt, err);
  if (rc != NC_OK) {
    nc_error_prefix(err, "chat template");
    free(t);
    return rc;
  }
  *out = t;
  return NC_OK;
}

void nc_chat_template_free(nc_chat_template *t) {
  if (!t) return;
  jinja_free(t->jt);
  free(t);
}

/* Parses one JSON input; what names it in errors. */
static nc_code parse_json(const char *text, const char *what, json_t **out,
                          nc_error *err) {
  json_error_t je;
  *out = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
  if (!*out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "%s is not valid JSON: %s (line %d, column %d)", what,
                   je.text, je.line, je.column);
  return NC_OK;
}

/* The variables the template is given by the request's own fields (and
 * the model's special tokens): extra template variables may not replace
 * them. */
static const char *const OWN_VARS[] = {"messages",  "tools",
                                       "documents", "add_generation_prompt",
                                       "bos_token", "eos_token"};

static nc_code kwargs_check(const json_t *kwargs, nc_error *err) {
  for (size_t i = 0; i < sizeof OWN_VARS / sizeof OWN_VARS[0]; i++)
    if (json_object_get(kwargs, OWN_VARS[i]))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "chat_template_kwargs: '%s' is one of the template's own "
                     "variables (messages, tools, documents, "
                     "add_generation_prompt, bos_token, eos_token), which "
                     "template kwargs cannot replace",
                     OWN_VARS[i]);
  return NC_OK;
}

static nc_code build_vars(const nc_chat_args *a, nc_chat_guard *guard,
                          json_t *vars, nc_error *err) {
  json_t *messages = NULL, *tools = NULL, *kwargs = NULL;
  nc_code rc;
  if (!a->messages_json)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "no messages given");
  if ((rc = parse_json(a->messages_json, "messages", &messages, err)))
    return rc;
  if (!json_is_array(messages)) {
    json_decref(messages);
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "messages must be a JSON array of message objects");
  }
  json_object_set_new(vars, "messages", messages);
  if (a->tools_json) {
    if ((rc = parse_json(a->tools_json, "tools", &tools, err))) return rc;
    if (!json_is_array(tools) && !json_is_null(tools)) {
      json_decref(tools);
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "tools must be a JSON array or null");
    }
  }
  json_object_set_new(vars, "tools", tools ? tools : json_null());
  json_object_set_new(vars, "documents", json_null());
  json_object_set_new(vars, "add_generation_prompt",
                      json_boolean(a->add_generation_prompt));
  if (a->kwargs_json) {
    if ((rc = parse_json(a->kwargs_json, "template kwargs", &kwargs, err)))
      return rc;
    if (!json_is_object(kwargs)) {
      json_decref(kwargs);
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "template kwargs must be a JSON object");
    }
    if ((rc = kwargs_check(kwargs, err))) {
      json_decref(kwargs);
      return rc;
    }
    json_object_update(vars, kwargs);
    json_decref(kwargs);
  }
  /* Everything the request supplied (not the special tokens below). */
  if (guard && (rc = nc_chat_guard_wrap(guard, vars, err))) return rc;
  if (a->bos_token)
    json_object_set_new(vars, "bos_token", json_string_nocheck(a->bos_token));
  if (a->eos_token)
    json_object_set_new(vars, "eos_token", json_string_nocheck(a->eos_token));
  return NC_OK;
}

/* The default limits, raised in proportion to the input so that long but
 * legitimate conversations still render. */
static jinja_limits scaled_limits(const nc_chat_args *a) {
  size_t in = strlen(a->messages_json);
  if (a->tools_json) in += strlen(a->tools_json);
  if (a->kwargs_json) in += strlen(a->kwargs_json);
  if (in > ((size_t)1 << 30)) in = (size_t)1 << 30;
  jinja_limits lim = jinja_default_limits();
  lim.max_output += 4 * in;
  lim.max_memory += 32 * in;
  lim.max_steps += 64 * (int64_t)in;
  return lim;
}

static nc_code apply(const nc_chat_template *t, const nc_chat_args *a,
                     nc_chat_guard *guard, char **out, size_t *out_len,
                     nc_error *err) {
  *out = NULL;
  if (out_len) *out_len = 0;
  json_t *vars = json_object();
  if (!vars) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  nc_code rc = build_vars(a, guard, vars, err);
  if (rc == NC_OK) {
    jinja_render_opts o = {.limits = scaled_limits(a), .now = a->now};
    rc = jinja_render(t->jt, vars, &o, out, out_len, err);
    if (rc != NC_OK) nc_error_prefix(err, "chat template");
  }
  json_decref(vars);
  return rc;
}

nc_code nc_chat_template_apply(const nc_chat_template *t, const nc_chat_args *a,
                               char **out, size_t *out_len, nc_error *err) {
  return apply(t, a, NULL, out, out_len, err);
}

nc_code nc_chat_template_apply_guarded(const nc_chat_template *t,
                                       const nc_chat_args *a,
                                       nc_guard_match_fn match,
                                       const void *match_ctx, char **out,
                                       size_t *out_len, nc_span **spans,
                                       size_t *n_spans, nc_error *err) {
  *spans = NULL;
  *n_spans = 0;
  nc_chat_guard guard = {.match = match, .ctx = match_ctx};
  char *raw = NULL;
  size_t raw_len = 0;
  nc_code rc = apply(t, a, &guard, &raw, &raw_len, err);
  *out = NULL;
  if (rc == NC_OK) {
    size_t len = 0;
    rc = nc_chat_guard_unwrap(&guard, raw, raw_len, out, &len, spans, n_spans,
                              err);
    if (out_len) *out_len = len;
  }
  free(raw);
  nc_chat_guard_free(&guard);
  return rc;
}

nc_code nc_chat_template_render(const char *tmpl, size_t tmpl_len,
                                const char *messages_json,
                                const char *tools_json,
                                bool add_generation_prompt,
                                const char *bos_token, const char *eos_token,
                                char **out, size_t *out_len, nc_error *err) {
  *out = NULL;
  nc_chat_template *t;
  nc_code rc = nc_chat_template_compile(tmpl, tmpl_len, &t, err);
  if (rc != NC_OK) return rc;
  nc_chat_args a = {.messages_json = messages_json,
                    .tools_json = tools_json,
                    .add_generation_prompt = add_generation_prompt,
                    .bos_token = bos_token,
                    .eos_token = eos_token};
  rc = nc_chat_template_apply(t, &a, out, out_len, err);
  nc_chat_template_free(t);
  return rc;
}
