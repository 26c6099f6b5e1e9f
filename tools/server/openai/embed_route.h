/* nucleus serve: which model an embeddings or rerank request runs on, and
 * the inputs both take (token lists from strings or ids). */
#ifndef NUCLEUS_SERVER_OPENAI_EMBED_ROUTE_H
#define NUCLEUS_SERVER_OPENAI_EMBED_ROUTE_H

#include <jansson.h>
#include <stdbool.h>

#include "embed_service.h"
#include "http/api_error.h"
#include "server.h"

/* The worker of the model the body's "model" names: the
 * --embedding-model's id, or the main model's; absent or any other name:
 * the --embedding-model when there is one, else the main model. *id: the
 * chosen model's id. 400 when that model does not embed (rank: has no rank
 * head). */
embed_service *embed_route(server_ctx *srv, const json_t *root, bool rank,
                           const char **id, api_error *e);

/* The most inputs (documents) of one request, as OpenAI's. */
#define EMBED_MAX_INPUTS 2048

/* The inputs' token lists (each malloc'd) and their count. */
typedef struct embed_inputs {
  nucleus_embed_input *in;
  size_t n;
  size_t tokens; /* all the inputs' tokens */
} embed_inputs;
void embed_inputs_free(embed_inputs *x);

/* A text (with the model's special tokens, as llama-server's embeddings) as
 * input i of x (x->in has room). */
int embed_inputs_add_text(embed_inputs *x, const nucleus_model *m,
                          const char *text, size_t len, api_error *e);
/* Cuts every input to at most max tokens. */
void embed_inputs_truncate(embed_inputs *x, size_t max);

/* A refused run as the reply's error: 400 for what the request asked
 * (naming the input), 500 for the rest. */
int embed_fail(api_error *e, nucleus_status st, const nucleus_error *err);

#endif
