/* chat_template: rendering a model's chat template for a conversation, the
 * way HF transformers' apply_chat_template does (messages, tools,
 * add_generation_prompt, bos_token, eos_token, extra template kwargs).
 *
 * Inputs are JSON text. Limits scale with the input: a long conversation
 * may render a long prompt, but a template cannot amplify its input beyond
 * a fixed factor or run unbounded work. */
#ifndef NC_CHAT_TEMPLATE_H
#define NC_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "tokenizer/vocab.h"

typedef struct nc_chat_template nc_chat_template;

/* Compiles template text (not necessarily NUL-terminated). */
nc_code nc_chat_template_compile(const char *tmpl, size_t tmpl_len,
                                 nc_chat_template **out, nc_error *err);
void nc_chat_template_free(nc_chat_template *t);

typedef struct nc_chat_args {
  const char *messages_json; /* a JSON array of message objects */
  const char *tools_json;    /* a JSON array, or NULL/"null" for none */
  const char *kwargs_json;   /* a JSON object of extra variables, or NULL */
  bool add_generation_prompt;
  const char *bos_token; /* NULL: left undefined */
  const char *eos_token; /* NULL: left undefined */
  int64_t now;           /* strftime_now clock: 0 = local time now, else
                            seconds since the epoch shown in UTC */
} nc_chat_args;

/* Renders; *out is malloc'd and NUL-terminated (free it). Thread-safe. */
nc_code nc_chat_template_apply(const nc_chat_template *t,
                               const nc_chat_args *args, char **out,
                               size_t *out_len, nc_error *err);

/* Length of the protected text at the start of s (0: none). */
typedef size_t (*nc_guard_match_fn)(const void *ctx, const char *s, size_t n);

/* As nc_chat_template_apply, and reports (*spans, sorted, malloc'd) the
 * byte ranges of the output where the request's data held text that match
 * accepts (control-token text): a tokenizer must read them as plain text
 * (see chat_template_guard.h). */
nc_code nc_chat_template_apply_guarded(const nc_chat_template *t,
                                       const nc_chat_args *a,
                                       nc_guard_match_fn match,
                                       const void *match_ctx, char **out,
                                       size_t *out_len, nc_span **spans,
                                       size_t *n_spans, nc_error *err);

/* Compile + apply in one call. */
nc_code nc_chat_template_render(const char *tmpl, size_t tmpl_len,
                                const char *messages_json,
                                const char *tools_json,
                                bool add_generation_prompt,
                                const char *bos_token, const char *eos_token,
                                char **out, size_t *out_len, nc_error *err);

#endif
