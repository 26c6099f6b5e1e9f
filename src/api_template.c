/* Public API: nucleus_chat_render(_ex, _at) (the model's chat template, or the
 * one given in nucleus_model_params.chat_template). */
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "gguf.h"
#include "model.h"
#include "nucleus.h"
#include "vocab.h"

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
  const char *tmpl = nc_model_chat_template_override(model);
  size_t tmpl_len = tmpl ? strlen(tmpl) : 0;
  gguf_str s;
  const gguf_file *g = nc_model_gguf(model);
  if (!tmpl && g && gguf_get_str(g, "tokenizer.chat_template", &s)) {
    tmpl = s.ptr;
    tmpl_len = (size_t)s.len;
  }
  if (!tmpl)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "model has no chat template; pass --chat-template FILE");
  nc_chat_template *t;
  nc_code rc = nc_chat_template_compile(tmpl, tmpl_len, &t, err);
  if (rc != NC_OK) return rc;
  const nc_vocab *v = nc_model_vocab(model);
  char *bos = v ? token_text(v, nc_vocab_bos(v)) : NULL;
  char *eos = v ? token_text(v, nc_vocab_eos(v)) : NULL;
  nc_chat_args a = {.messages_json = messages_json,
                    .tools_json = tools_json,
                    .kwargs_json = kwargs_json,
                    .add_generation_prompt = add_generation_prompt,
                    .bos_token = bos,
                    .eos_token = eos,
                    .now = now};
  rc = nc_chat_template_apply(t, &a, out, len_out, err);
  nc_chat_template_free(t);
  free(bos);
  free(eos);
  return rc;
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
