/* nucleus serve: the bodies of POST /v1/embeddings and /v1/rerank read into
 * what the model runs, apart from the model's run (embeddings.c,
 * rerank.c), so that the request fuzzer (fuzz/fuzz_request.c) reaches
 * them. */
#ifndef NUCLEUS_SERVER_OPENAI_EMBED_REQUEST_H
#define NUCLEUS_SERVER_OPENAI_EMBED_REQUEST_H

#include <jansson.h>
#include <stdbool.h>

#include "embed_route.h"
#include "http/api_error.h"
#include "nucleus.h"

/* An embeddings body's fields are all known ones (400 naming the other). */
int embeddings_check_fields(const json_t *root, api_error *e);

/* What an embeddings body asks for, on model m. */
typedef struct embeddings_request {
  nucleus_embed_params p; /* dimensions from the body */
  bool b64;               /* encoding_format "base64" */
  bool truncate;          /* cut long inputs (else refused) */
  embed_inputs x;         /* the inputs' token lists */
} embeddings_request;

/* Reads "encoding_format", "dimensions", "truncate" and "input" (texts
 * tokenized by m). 0, or -1 after filling *e; r->x is freed by
 * embed_inputs_free either way. */
int embeddings_request_parse(const json_t *root, const nucleus_model *m,
                             embeddings_request *r, api_error *e);

/* A rerank body's fields are all known ones (400 naming the other). */
int rerank_check_fields(const json_t *root, api_error *e);

/* What a rerank body asks for, on model m. */
typedef struct rerank_request {
  const json_t *docs; /* "documents" (borrowed from the body) */
  size_t top_n;       /* results to return, at most the documents */
  bool with_docs;     /* return_documents */
  embed_inputs x;     /* (query, document i) as input i, nucleus_malloc'd */
} rerank_request;

/* Document d's text: d itself, or its "text"; NULL when neither. */
const json_t *rerank_doc_text(const json_t *d);

/* Reads "query", "documents", "top_n" and "return_documents"; input i is
 * the query with document i in m's rerank prompt. 0, or -1 after filling
 * *e; free r with rerank_request_free either way. */
int rerank_request_parse(const json_t *root, const nucleus_model *m,
                         rerank_request *r, api_error *e);
void rerank_request_free(rerank_request *r);

#endif
