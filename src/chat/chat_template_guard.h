/* chat_template_guard: keeping the special-token text of message contents
 * out of the special tokens of the prompt.
 *
 * A chat template copies message contents into the prompt, and tokenizing
 * the prompt with parse_special would turn a user's "<|im_end|>" into the
 * real control token (a forged turn). Before rendering, every occurrence of
 * control-token text in the request's strings is replaced by a placeholder
 * (U+10FFFD, its index in decimal, U+10FFFC); after rendering the
 * placeholders are replaced back and their byte ranges reported, so the
 * tokenizer reads special tokens only in the bytes the template wrote.
 * Occurrences of the two marker characters themselves are protected the
 * same way, so any content round-trips unchanged. Protected text is
 * restored as written: a template that changes the case of a content
 * leaves it as it was, and one that cuts a placeholder apart (slicing a
 * content) makes the render fail rather than guess. */
#ifndef NC_CHAT_TEMPLATE_GUARD_H
#define NC_CHAT_TEMPLATE_GUARD_H

#include <jansson.h>
#include <stddef.h>

#include "base/status.h"
#include "chat_template.h"
#include "tokenizer/vocab.h"

typedef struct nc_chat_guard {
  nc_guard_match_fn match;
  const void *ctx;
  char **orig; /* the protected texts, by placeholder index */
  size_t *orig_len;
  size_t n, cap;
} nc_chat_guard;

/* Replaces the protected texts inside every string of v (values of arrays
 * and objects, recursively; keys are left alone). */
nc_code nc_chat_guard_wrap(nc_chat_guard *g, json_t *v, nc_error *err);

/* The render with the placeholders replaced back (*out malloc'd and
 * NUL-terminated) and the sorted byte ranges they occupy (*spans malloc'd,
 * may be NULL when *n_spans is 0). A placeholder the template cut apart
 * is an error. */
nc_code nc_chat_guard_unwrap(const nc_chat_guard *g, const char *in, size_t n,
                             char **out, size_t *out_len, nc_span **spans,
                             size_t *n_spans, nc_error *err);

void nc_chat_guard_free(nc_chat_guard *g);

#endif
