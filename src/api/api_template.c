/* Public API: nucleus_chat_render(_ex, _at) and nucleus_chat_apply (the model's
 * chat template, or the one given in nucleus_model_params.chat_template). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_template.h"
#include "chat/chat_template_builtin.h"
#include "chat/reasoning.h"
#include "chat/tool_call.h"
#include "gguf/gguf.h"
#include "model/arch.h"
#include "model/model.h"
#include "nucleus.h"
#include "tokenizer/vocab.h"

/* The text of a special token as a NUL-terminated copy, or NULL. */
static char *token_text(const nc_vocab *v, int32_t id) {
  size_t len;
  const char *p = id >= 0 ? nc_vocab_token_text(v, id, &len) : NULL;
  if (!p || memchr(p, '\0', len)) return NULL;
  char *s = malloc(len + 1);
  if (!s) return NULL;
  memcpy(s, p, len);
  s[len] = '\0';
  return s;
}

/* The template text the model renders with: the override, the file's, or
 * its family's built-in one (*builtin set); NULL when there is none. */
static const char *template_text(const nucleus_model *model, size_t *len,
                                 const nc_builtin_template **builtin) {
  if (builtin) *builtin = NULL;
  const char *tmpl = nc_model_chat_template_override(model);
  if (tmpl) {
    *len = strlen(tmpl);
    return tmpl;
  }
  gguf_str s;
  const gguf_file *g = nc_model_gguf(model);
  if (g && gguf_get_str(g, "tokenizer.chat_template", &s)) {
    *len = (size_t)s.len;
    return s.ptr;
  }
  const nc_builtin_template *b = nc_chat_template_builtin(
      nc_model_arch(model)->chat_template, nc_model_vocab(model));
  if (!b) return NULL;
  if (builtin) *builtin = b;
  *len = strlen(b->text);
  return b->text;
}

const char *nucleus_model_chat_template_source(const nucleus_model *model) {
  if (!model) return NULL;
  size_t len;
  const nc_builtin_template *b;
  if (!template_text(model, &len, &b)) return NULL;
  if (b) return b->name;
  return nc_model_chat_template_override(model) ? "override" : "file";
}

/* The model's template (or the override, or its family's), compiled. */
static nc_code compile_template(const nucleus_model *model,
                                nc_chat_template **t, nc_error *err) {
  size_t tmpl_len = 0;
  const char *tmpl = template_text(model, &tmpl_len, NULL);
  if (!tmpl)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "model has no chat template; pass --chat-template FILE");
  return nc_chat_template_compile(tmpl, tmpl_len, t, err);
}

static nc_tool_format model_tool_format(const nucleus_model *model) {
  size_t len;
  const char *src = model ? template_text(model, &len, NULL) : NULL;
  return nc_tool_format_of_template(src, src ? len : 0);
}

const char *nucleus_model_tool_format(const nucleus_model *model) {
  return nc_tool_format_name(model_tool_format(model));
}

static nc_reasoning_format model_reasoning_format(const nucleus_model *model) {
  size_t len;
  const char *src = model ? template_text(model, &len, NULL) : NULL;
  return nc_reasoning_format_of_template(src, src ? len : 0);
}

const char *nucleus_model_reasoning_format(const nucleus_model *model) {
  return nc_reasoning_format_name(model_reasoning_format(model));
}

nucleus_reasoning_markers
nucleus_model_reasoning_markers(const nucleus_model *model) {
  nc_reasoning_markers m =
      nc_reasoning_markers_of(model_reasoning_format(model));
  return (nucleus_reasoning_markers){m.open, m.close, m.force_close};
}

bool nucleus_reasoning_prompt_opens(const nucleus_model *model,
                                    const char *prompt, size_t len) {
  return nc_reasoning_prompt_opens(model_reasoning_format(model), prompt, len);
}

/* The prompt's text ends (blanks aside) with marker. */
static bool ends_with_marker(const char *text, size_t len, const char *marker) {
  while (len && strchr(" \n\t\r", text[len - 1]))
    len--;
  size_t n = strlen(marker);
  return len >= n && !memcmp(text + len - n, marker, n);
}

bool nucleus_reasoning_params_for(const nucleus_model *model,
                                  const char *prompt, size_t len,
                                  int32_t budget,
                                  nucleus_request_params *params,
                                  bool *in_reasoning) {
  const nc_reasoning_format f = model_reasoning_format(model);
  const nc_reasoning_markers m = nc_reasoning_markers_of(f);
  *in_reasoning = false;
  params->reasoning = (nucleus_reasoning_params){.budget = -1};
  if (!m.close || !prompt) return false;
  *in_reasoning = nc_reasoning_prompt_opens(f, prompt, len);
  if (!*in_reasoning && ends_with_marker(prompt, len, m.close)) return false;
  params->reasoning = (nucleus_reasoning_params){
      .open = *in_reasoning ? NULL : m.open,
      .close = m.close,
      .force_close = m.force_close,
      .budget = budget,
  };
  return true;
}

/* tools_json names at least one tool. */
static bool has_tools(const char *tools_json) {
  json_t *t = tools_json ? json_loads(tools_json, 0, NULL) : NULL;
  bool yes = json_is_array(t) && json_array_size(t) > 0;
  json_decref(t);
  return yes;
}

static size_t match_control(const void *ctx, const char *s, size_t n) {
  return nc_vocab_match_control(ctx, s, n);
}

/* Renders; with guard, also the spans of protected content. */
static nc_code render(const nucleus_model *model, const nucleus_chat_params *p,
                      bool guard, char **out, size_t *len_out, nc_span **spans,
                      size_t *n_spans, nc_error *err) {
  nc_chat_template *t;
  nc_code rc = compile_template(model, &t, err);
  if (rc != NC_OK) return rc;
  /* A template that renders no tools: they go in the system message, in
   * the generic call syntax (tool_call.h). */
  char *generic = NULL;
  if (p->describe_tools && has_tools(p->tools_json) &&
      model_tool_format(model) == NC_TOOL_FORMAT_GENERIC) {
    generic = nc_tool_generic_messages(p->messages_json, p->tools_json);
    if (!generic) {
      nc_chat_template_free(t);
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "messages or tools are not valid JSON of the expected "
                     "shape");
    }
  }
  /* A template that writes a call's arguments key by key (Gemma 4) reads
   * them as an object, not OpenAI's JSON text. */
  if (!generic && model_tool_format(model) == NC_TOOL_FORMAT_GEMMA4 &&
      p->messages_json && strstr(p->messages_json, "tool_calls")) {
    generic = nc_tool_object_arguments(p->messages_json);
    if (!generic) {
      nc_chat_template_free(t);
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "messages are not a JSON array");
    }
  }
  const nc_vocab *v = nc_model_vocab(model);
  char *bos = v ? token_text(v, nc_vocab_bos(v)) : NULL;
  char *eos = v ? token_text(v, nc_vocab_eos(v)) : NULL;
  const bool rewritten_tools =
      generic && model_tool_format(model) == NC_TOOL_FORMAT_GENERIC;
  nc_chat_args a = {.messages_json = generic ? generic : p->messages_json,
                    .tools_json = rewritten_tools ? NULL : p->tools_json,
                    .kwargs_json = p->kwargs_json,
                    .add_generation_prompt = p->add_generation_prompt,
                    .bos_token = bos,
                    .eos_token = eos,
                    .now = p->now};
  if (guard && v)
    rc = nc_chat_template_apply_guarded(t, &a, match_control, v, out, len_out,
                                        spans, n_spans, err);
  else
    rc = nc_chat_template_apply(t, &a, out, len_out, err);
  nc_chat_template_free(t);
  free(bos);
  free(eos);
  free(generic);
  return rc;
}

/* The text of the last message's content ("" when it has none). */
static char *final_content(const char *messages_json) {
  json_t *m = json_loads(messages_json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
  const json_t *c =
      json_object_get(json_array_get(m, json_array_size(m) - 1), "content");
  if (json_is_array(c))
    c = json_object_get(json_array_get(c, json_array_size(c) - 1), "text");
  char *s = strdup(json_is_string(c) ? json_string_value(c) : "");
  json_decref(m);
  return s;
}

static bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
         c == '\v';
}

/* Cuts the render right after the last occurrence of the final message's
 * content (or of it stripped, for templates that trim), as transformers'
 * continue_final_message does. */
static nc_code cut_after_final(const char *messages_json, char *text,
                               size_t *len, nc_span *spans, size_t *n_spans,
                               nc_error *err) {
  char *want = final_content(messages_json);
  if (!want) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  const char *w = want;
  size_t wl = strlen(want);
  const char *hit = NULL;
  for (int pass = 0; pass < 2 && !hit; pass++) {
    if (pass == 1) { /* stripped */
      while (wl && is_ws(*w))
        w++, wl--;
      while (wl && is_ws(w[wl - 1]))
        wl--;
    }
    for (const char *p = text; wl && (size_t)(p - text) + wl <= *len;) {
      const char *m = memmem(p, *len - (size_t)(p - text), w, wl);
      if (!m) break;
      hit = m;
      p = m + 1;
    }
  }
  free(want);
  if (!hit)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "continue_final_message: the final message's content is "
                   "empty or was not found in the rendered prompt");
  size_t cut = (size_t)(hit - text) + wl;
  text[cut] = '\0';
  *len = cut;
  size_t k = 0;
  for (size_t i = 0; i < *n_spans; i++) {
    if (spans[i].off >= cut) break;
    if (spans[i].off + spans[i].len > cut) spans[i].len = cut - spans[i].off;
    k++;
  }
  *n_spans = k;
  return NC_OK;
}

nucleus_chat_params nucleus_chat_default_params(void) {
  nucleus_chat_params p;
  memset(&p, 0, sizeof p);
  p.add_generation_prompt = true;
  return p;
}

nucleus_status nucleus_chat_apply(const nucleus_model *model,
                                  const nucleus_chat_params *p, char **text_out,
                                  size_t *text_len_out, int32_t **ids_out,
                                  size_t *n_ids_out, nucleus_error *err) {
  if (text_out) *text_out = NULL;
  if (text_len_out) *text_len_out = 0;
  if (ids_out) *ids_out = NULL;
  if (n_ids_out) *n_ids_out = 0;
  if (!model || !p || !p->messages_json || (!text_out && !ids_out) ||
      (ids_out && !n_ids_out))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "nucleus_chat_apply needs a model, messages and an output");
  if (p->continue_final_message && p->add_generation_prompt)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "continue_final_message and add_generation_prompt cannot "
                   "both be true");
  const nc_vocab *v = nc_model_vocab(model);
  if (ids_out && !v)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "the model has no vocabulary");
  char *text = NULL;
  size_t len = 0, n_spans = 0;
  nc_span *spans = NULL;
  nc_code rc = render(model, p, !p->parse_special_in_content, &text, &len,
                      &spans, &n_spans, err);
  if (rc == NC_OK && p->continue_final_message)
    rc = cut_after_final(p->messages_json, text, &len, spans, &n_spans, err);
  if (rc == NC_OK && ids_out)
    rc = nc_tokenize_chat_prompt(v, text, len, spans, n_spans, ids_out,
                                 n_ids_out, err);
  free(spans);
  if (rc == NC_OK && text_out) {
    *text_out = text;
    if (text_len_out) *text_len_out = len;
  } else {
    free(text);
  }
  return rc;
}

nucleus_status
nucleus_chat_render_at(const nucleus_model *model, const char *messages_json,
                       const char *tools_json, const char *kwargs_json,
                       bool add_generation_prompt, int64_t now, char **out,
                       size_t *len_out, nucleus_error *err) {
  if (out) *out = NULL;
  if (len_out) *len_out = 0;
  if (!model || !messages_json || !out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "nucleus_chat_render needs a model, messages and out");
  nucleus_chat_params p = nucleus_chat_default_params();
  p.messages_json = messages_json;
  p.tools_json = tools_json;
  p.kwargs_json = kwargs_json;
  p.add_generation_prompt = add_generation_prompt;
  p.parse_special_in_content = true; /* text only: nothing to guard */
  p.now = now;
  return nucleus_chat_apply(model, &p, out, len_out, NULL, NULL, err);
}

nucleus_status nucleus_chat_render_ex(const nucleus_model *model,
                                      const char *messages_json,
                                      const char *tools_json,
                                      const char *kwargs_json,
                                      bool add_generation_prompt, char **out,
                                      size_t *len_out, nucleus_error *err) {
  return nucleus_chat_render_at(model, messages_json, tools_json, kwargs_json,
                                add_generation_prompt, 0, out, len_out, err);
}

nucleus_status nucleus_chat_render(const nucleus_model *model,
                                   const char *messages_json,
                                   const char *tools_json,
                                   bool add_generation_prompt, char **out,
                                   size_t *len_out, nucleus_error *err) {
  return nucleus_chat_render_ex(model, messages_json, tools_json, NULL,
                                add_generation_prompt, out, len_out, err);
}
