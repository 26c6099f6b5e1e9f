/* nucleus serve: POST /v1/rerank and /rerank, in llama-server's and Jina's
 * shape: "query", "documents" (strings, or {"text": ...} objects),
 * "top_n", "return_documents" (default true); the results sorted by
 * relevance_score, best first. */
#include <stdlib.h>
#include <string.h>

#include "embed_route.h"
#include "http/http_reply.h"
#include "http/json_text.h"
#include "routes.h"

static const char *const FIELDS[] = {"query", "documents", "top_n",
                                     "return_documents", "model"};

static int check_fields(const json_t *root, api_error *e) {
  return api_check_fields(root, FIELDS, sizeof FIELDS / sizeof FIELDS[0],
                          "a rerank request", e);
}

/* Document i's text. */
static const json_t *doc_text(const json_t *d) {
  if (json_is_string(d)) return d;
  const json_t *t = json_object_get(d, "text");
  return json_is_object(d) && json_is_string(t) ? t : NULL;
}

typedef struct scored {
  size_t index;
  float score;
} scored;

/* Best first; ties in document order. */
static int by_score(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->score != y->score) return x->score < y->score ? 1 : -1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static int rerank(server_ctx *srv, const json_t *root, json_t **reply,
                  api_error *e) {
  if (check_fields(root, e)) return -1;
  const char *id;
  embed_service *svc = embed_route(srv, root, true, &id, e);
  if (!svc) return -1;
  const nucleus_model *m = embed_service_model(svc);
  const json_t *query = json_object_get(root, "query");
  if (!json_is_string(query))
    return api_fail(e, 400, "query", "'query' must be a string");
  const json_t *docs = json_object_get(root, "documents");
  const size_t n = json_array_size(docs);
  if (!json_is_array(docs) || n == 0)
    return api_fail(e, 400, "documents",
                    "'documents' must be a non-empty list of strings");
  if (n > EMBED_MAX_INPUTS)
    return api_fail(e, 400, "documents", "%zu documents: at most %d", n,
                    EMBED_MAX_INPUTS);
  const json_t *top = json_object_get(root, "top_n");
  size_t top_n = n;
  if (top && !json_is_null(top)) {
    if (!json_is_integer(top) || json_integer_value(top) < 1)
      return api_fail(e, 400, "top_n", "'top_n' must be an integer >= 1");
    if ((json_int_t)n > json_integer_value(top))
      top_n = (size_t)json_integer_value(top);
  }
  const json_t *ret = json_object_get(root, "return_documents");
  if (ret && !json_is_null(ret) && !json_is_boolean(ret))
    return api_fail(e, 400, "return_documents",
                    "'return_documents' must be true or false");
  const bool with_docs = !ret || json_is_null(ret) || json_is_true(ret);
  embed_inputs x = {.in = calloc(n, sizeof(nucleus_embed_input))};
  scored *s = calloc(n, sizeof *s);
  float *out = NULL;
  nucleus_embed_params p = nucleus_embed_default_params();
  p.pooling = NUCLEUS_POOLING_RANK;
  const int32_t w = nucleus_embed_size(m, &p);
  int rc = -1;
  if (!x.in || !s || w < 1 || !(out = malloc(sizeof(float) * n * (size_t)w))) {
    api_fail(e, 500, NULL, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    const json_t *t = doc_text(json_array_get(docs, i));
    if (!t) {
      api_fail(e, 400, "documents",
               "documents[%zu] must be a string or {\"text\": string}", i);
      goto done;
    }
    nucleus_error err = {0};
    int32_t *ids = NULL;
    size_t k = 0;
    nucleus_status st = nucleus_rerank_tokens(
        m, json_string_value(query), json_string_length(query),
        json_string_value(t), json_string_length(t), &ids, &k, &err);
    if (st != NUCLEUS_OK) {
      embed_fail(e, st, &err);
      goto done;
    }
    x.in[x.n++] = (nucleus_embed_input){ids, k};
    x.tokens += k;
  }
  nucleus_error err = {0};
  nucleus_status st = embed_service_run(svc, x.in, x.n, &p, out, &err);
  if (st != NUCLEUS_OK) {
    embed_fail(e, st, &err);
    goto done;
  }
  for (size_t i = 0; i < n; i++)
    s[i] = (scored){i, out[i * (size_t)w]};
  qsort(s, n, sizeof *s, by_score);
  json_t *results = json_array();
  for (size_t i = 0; results && i < top_n; i++) {
    json_t *r = json_pack("{s:I,s:f}", "index", (json_int_t)s[i].index,
                          "relevance_score", (double)s[i].score);
    if (r && with_docs)
      json_object_set_new(
          r, "document",
          json_pack("{s:O}", "text",
                    doc_text(json_array_get(docs, s[i].index))));
    json_array_append_new(results, r);
  }
  *reply = json_pack("{s:o,s:s,s:{s:I,s:I},s:o}", "model",
                     json_text(id, strlen(id)), "object", "list", "usage",
                     "prompt_tokens", (json_int_t)x.tokens, "total_tokens",
                     (json_int_t)x.tokens, "results", results);
  rc = *reply ? 0 : api_fail(e, 500, NULL, "out of memory");
done:
  for (size_t i = 0; x.in && i < x.n; i++)
    nucleus_free((void *)x.in[i].tokens);
  free(x.in);
  free(s);
  free(out);
  return rc;
}

enum MHD_Result handle_rerank(server_ctx *srv, struct MHD_Connection *conn,
                              const char *body, size_t len) {
  api_error e = {0};
  json_error_t jerr;
  json_t *root = json_loadb(body, len, 0, &jerr);
  if (!root || !json_is_object(root)) {
    json_decref(root);
    api_fail(&e, 400, NULL, "the request body must be a JSON object");
    return reply_error(srv, conn, &e);
  }
  json_t *reply = NULL;
  int rc = rerank(srv, root, &reply, &e);
  json_decref(root);
  if (rc) return reply_error(srv, conn, &e);
  return reply_json(srv, conn, 200, reply);
}
