/* nucleus serve: POST /v1/rerank and /rerank, in llama-server's and Jina's
 * shape: "query", "documents" (strings, or {"text": ...} objects),
 * "top_n", "return_documents" (default true); the results sorted by
 * relevance_score, best first. */
#include <stdlib.h>
#include <string.h>

#include "embed_request.h"
#include "embed_route.h"
#include "http/http_reply.h"
#include "http/json_text.h"
#include "routes.h"

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
  if (rerank_check_fields(root, e)) return -1;
  const char *id;
  embed_service *svc = embed_route(srv, root, true, &id, e);
  if (!svc) return -1;
  const nucleus_model *m = embed_service_model(svc);
  rerank_request rq;
  scored *s = NULL;
  float *out = NULL;
  int rc = -1;
  if (rerank_request_parse(root, m, &rq, e)) goto done;
  const size_t n = rq.x.n, top_n = rq.top_n;
  const json_t *docs = rq.docs;
  const bool with_docs = rq.with_docs;
  nucleus_embed_params p = nucleus_embed_default_params();
  p.pooling = NUCLEUS_POOLING_RANK;
  const int32_t w = nucleus_embed_size(m, &p);
  s = calloc(n, sizeof *s);
  if (!s || w < 1 || !(out = malloc(sizeof(float) * n * (size_t)w))) {
    api_fail(e, 500, NULL, "out of memory");
    goto done;
  }
  nucleus_error err = {0};
  nucleus_status st = embed_service_run(svc, rq.x.in, rq.x.n, &p, out, &err);
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
                    rerank_doc_text(json_array_get(docs, s[i].index))));
    json_array_append_new(results, r);
  }
  *reply = json_pack("{s:o,s:s,s:{s:I,s:I},s:o}", "model",
                     json_text(id, strlen(id)), "object", "list", "usage",
                     "prompt_tokens", (json_int_t)rq.x.tokens, "total_tokens",
                     (json_int_t)rq.x.tokens, "results", results);
  rc = *reply ? 0 : api_fail(e, 500, NULL, "out of memory");
done:
  rerank_request_free(&rq);
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
