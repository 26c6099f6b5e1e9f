/* nucleus serve: POST /v1/embeddings, in OpenAI's shape: "input" a string,
 * a list of strings, a list of token ids or a list of such lists;
 * "encoding_format" float or base64; "dimensions" (Matryoshka);
 * "truncate" (nucleus, as llama-server's): cut inputs longer than the
 * model takes instead of refusing them. */
#include <stdlib.h>
#include <string.h>

#include "embed_route.h"
#include "http/base64.h"
#include "http/http_reply.h"
#include "http/json_text.h"
#include "routes.h"

static const char *const FIELDS[] = {"input", "model", "encoding_format",
                                     "dimensions", "truncate"};

static int check_fields(const json_t *root, api_error *e) {
  return api_check_fields(root, FIELDS, sizeof FIELDS / sizeof FIELDS[0],
                          "an embeddings request", e);
}

/* One list of token ids as input i. */
static int add_ids(embed_inputs *x, const json_t *arr, api_error *e) {
  const size_t k = json_array_size(arr);
  int32_t *ids = malloc((k ? k : 1) * sizeof *ids);
  if (!ids) return api_fail(e, 500, NULL, "out of memory");
  for (size_t j = 0; j < k; j++) {
    const json_t *t = json_array_get(arr, j);
    if (!json_is_integer(t) || json_integer_value(t) < 0 ||
        json_integer_value(t) > INT32_MAX) {
      free(ids);
      return api_fail(e, 400, "input",
                      "input %zu: element %zu is not a token id (an integer "
                      ">= 0)",
                      x->n, j);
    }
    ids[j] = (int32_t)json_integer_value(t);
  }
  x->in[x->n++] = (nucleus_embed_input){ids, k};
  x->tokens += k;
  return 0;
}

static int parse_input(const json_t *input, const nucleus_model *m,
                       embed_inputs *x, api_error *e) {
  if (json_is_string(input)) {
    x->in = calloc(1, sizeof *x->in);
    if (!x->in) return api_fail(e, 500, NULL, "out of memory");
    return embed_inputs_add_text(x, m, json_string_value(input),
                                 json_string_length(input), e);
  }
  const size_t n = json_array_size(input);
  if (!json_is_array(input) || n == 0)
    return api_fail(e, 400, "input",
                    "'input' must be a string, a list of strings, a list of "
                    "token ids or a list of such lists, not empty");
  /* a list of integers is one input */
  if (json_is_integer(json_array_get(input, 0))) {
    x->in = calloc(1, sizeof *x->in);
    if (!x->in) return api_fail(e, 500, NULL, "out of memory");
    return add_ids(x, input, e);
  }
  if (n > EMBED_MAX_INPUTS)
    return api_fail(e, 400, "input", "%zu inputs: at most %d per request", n,
                    EMBED_MAX_INPUTS);
  x->in = calloc(n, sizeof *x->in);
  if (!x->in) return api_fail(e, 500, NULL, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const json_t *v = json_array_get(input, i);
    int rc;
    if (json_is_string(v))
      rc = embed_inputs_add_text(x, m, json_string_value(v),
                                 json_string_length(v), e);
    else if (json_is_array(v))
      rc = add_ids(x, v, e);
    else
      rc = api_fail(e, 400, "input",
                    "input %zu must be a string or a list of token ids", i);
    if (rc) return rc;
  }
  return 0;
}

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
  if (check_fields(root, e)) return -1;
  const char *id;
  embed_service *svc = embed_route(srv, root, false, &id, e);
  if (!svc) return -1;
  const nucleus_model *m = embed_service_model(svc);
  nucleus_embed_params p = nucleus_embed_default_params();
  const json_t *fmt = json_object_get(root, "encoding_format");
  bool b64 = false;
  if (fmt && !json_is_null(fmt)) {
    const char *f = json_string_value(fmt);
    if (!f || (strcmp(f, "float") && strcmp(f, "base64")))
      return api_fail(e, 400, "encoding_format",
                      "'encoding_format' must be \"float\" or \"base64\"");
    b64 = !strcmp(f, "base64");
  }
  const json_t *dims = json_object_get(root, "dimensions");
  if (dims && !json_is_null(dims)) {
    if (!json_is_integer(dims) || json_integer_value(dims) < 1 ||
        json_integer_value(dims) > INT32_MAX)
      return api_fail(e, 400, "dimensions",
                      "'dimensions' must be an integer >= 1");
    p.dimensions = (int32_t)json_integer_value(dims);
  }
  const json_t *trunc = json_object_get(root, "truncate");
  if (trunc && !json_is_null(trunc) && !json_is_boolean(trunc))
    return api_fail(e, 400, "truncate", "'truncate' must be true or false");
  nucleus_error err = {0};
  if (nucleus_embed_params_validate(m, &p, &err) != NUCLEUS_OK)
    return api_fail(e, 400, "dimensions", "%s", err.message);
  const json_t *input = json_object_get(root, "input");
  if (!input) return api_fail(e, 400, "input", "'input' is required");
  embed_inputs x = {0};
  if (parse_input(input, m, &x, e)) {
    embed_inputs_free(&x);
    return -1;
  }
  if (json_is_true(trunc)) {
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
