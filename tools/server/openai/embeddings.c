/* nucleus serve: POST /v1/embeddings, in OpenAI's shape: "input" a string,
 * a list of strings, a list of token ids or a list of such lists;
 * "encoding_format" float or base64; "dimensions" (Matryoshka);
 * "truncate" (nucleus, as llama-server's): cut inputs longer than the
 * model takes instead of refusing them. */
#include <stdlib.h>
#include <string.h>

#include "embed_request.h"
#include "embed_route.h"
#include "http/base64.h"
#include "http/http_reply.h"
#include "http/json_text.h"
#include "routes.h"

/* The floats' bytes (little-endian IEEE 754, as OpenAI's base64) in
 * base64. */
static json_t *base64_of(const float *v, size_t n) {
  size_t len = 0;
  char *s = base64_encode((const uint8_t *)v, n * sizeof(float), &len);
  json_t *j = s ? json_stringn(s, len) : NULL;
  free(s);
  return j;
}

static int embeddings(server_ctx *srv, const json_t *root, json_t **reply,
                      api_error *e) {
  if (embeddings_check_fields(root, e)) return -1;
  const char *id;
  embed_service *svc = embed_route(srv, root, false, &id, e);
  if (!svc) return -1;
  const nucleus_model *m = embed_service_model(svc);
  embeddings_request r;
  if (embeddings_request_parse(root, m, &r, e)) {
    embed_inputs_free(&r.x);
    return -1;
  }
  const nucleus_embed_params p = r.p;
  const bool b64 = r.b64;
  embed_inputs x = r.x;
  if (r.truncate) {
    size_t max = (size_t)embed_service_max_tokens(svc);
    if ((size_t)nucleus_model_n_ctx_train(m) < max)
      max = (size_t)nucleus_model_n_ctx_train(m);
    embed_inputs_truncate(&x, max);
  }
  const int32_t w = nucleus_embed_size(m, &p);
  float *out = malloc(sizeof(float) * x.n * (size_t)w);
  if (!out) {
    embed_inputs_free(&x);
    return api_fail(e, 500, NULL, "out of memory");
  }
  nucleus_error err = {0};
  nucleus_status st = embed_service_run(svc, x.in, x.n, &p, out, &err);
  if (st != NUCLEUS_OK) {
    free(out);
    embed_inputs_free(&x);
    return embed_fail(e, st, &err);
  }
  json_t *data = json_array();
  for (size_t i = 0; data && i < x.n; i++) {
    const float *v = out + i * (size_t)w;
    json_t *vec;
    if (b64) {
      vec = base64_of(v, (size_t)w);
    } else {
      vec = json_array();
      for (int32_t j = 0; vec && j < w; j++)
        json_array_append_new(vec, json_real(v[j]));
    }
    json_array_append_new(data,
                          json_pack("{s:s,s:I,s:o}", "object", "embedding",
                                    "index", (json_int_t)i, "embedding", vec));
  }
  *reply =
      json_pack("{s:s,s:o,s:o,s:{s:I,s:I}}", "object", "list", "data", data,
                "model", json_text(id, strlen(id)), "usage", "prompt_tokens",
                (json_int_t)x.tokens, "total_tokens", (json_int_t)x.tokens);
  free(out);
  embed_inputs_free(&x);
  return *reply ? 0 : api_fail(e, 500, NULL, "out of memory");
}

enum MHD_Result handle_embeddings(server_ctx *srv, struct MHD_Connection *conn,
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
  int rc = embeddings(srv, root, &reply, &e);
  json_decref(root);
  if (rc) return reply_error(srv, conn, &e);
  return reply_json(srv, conn, 200, reply);
}
