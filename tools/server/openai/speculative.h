/* nucleus serve: speculative decoding's request fields
 * (docs/SPECULATIVE.md): "speculative": false or {"type": "off" | "ngram" |
 * "draft" | "mtp", "strict": B, "n_max": N, "n_min": N} over the server's
 * --spec default, and OpenAI's predicted outputs, "prediction": {"type":
 * "content", "content": TEXT or
 * [{"type": "text", "text": TEXT}, ...]} (the prediction drafter). */
#ifndef NUCLEUS_SERVER_SPECULATIVE_H
#define NUCLEUS_SERVER_SPECULATIVE_H

#include <jansson.h>

#include "http/api_error.h"
#include "nucleus.h"

typedef struct gen_request gen_request;

/* Reads both fields into r (after beam search's: a beam request keeps the
 * server's default drafter off); the prediction stays text until the
 * prompt is tokenized (completions.c). 0, or -1 with *e (400 naming the
 * field). */
int speculative_parse(const json_t *root, gen_request *r, api_error *e);

#endif
