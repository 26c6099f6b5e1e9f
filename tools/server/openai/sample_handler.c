/* nucleus serve: POST /sample, the inspector's what-if. The server keeps
 * nothing between requests: the client sends back a step's candidates (the
 * ids and raw logits an inspect record carries, at most 64) with other
 * settings, and the real pipeline (nucleus_sample_logits) runs on that row:
 * the record of what each stage kept, and optionally n_draws draws (steps
 * 0..n_draws-1 of the seed's generator) as a histogram. */
#include <stdlib.h>
#include <string.h>

#include "http/http_reply.h"
#include "inspect_json.h"
#include "routes.h"

#define MAX_DRAWS 1000

static const char *const SETTINGS[] = {"temperature", "top_k", "top_p", "min_p",
                                       "typical_p"};
#define N_SETTINGS (sizeof SETTINGS / sizeof SETTINGS[0])

static int parse_candidates(const json_t *root, int32_t n_vocab, int32_t *ids,
                            float *logits, int32_t *n, api_error *e) {
  const json_t *c = json_object_get(root, "candidates");
  size_t count = json_array_size(c);
  if (!json_is_array(c) || count < 1 || count > NUCLEUS_MAX_INSPECT_TOP)
    return api_fail(e, 400, "candidates",
                    "'candidates' must be a list of 1 to %d "
                    "{\"id\", \"logit\"} objects",
                    NUCLEUS_MAX_INSPECT_TOP);
  for (size_t i = 0; i < count; i++) {
    const json_t *o = json_array_get(c, i);
    const json_t *id = json_object_get(o, "id");
    const json_t *lg = json_object_get(o, "logit");
    if (!json_is_object(o) || json_object_size(o) != 2 ||
        !json_is_integer(id) || !json_is_number(lg))
      return api_fail(e, 400, "candidates",
                      "candidates[%zu] must be {\"id\": int, \"logit\": "
                      "number}",
                      i);
    json_int_t v = json_integer_value(id);
    if (v < 0 || v >= n_vocab)
      return api_fail(e, 400, "candidates",
                      "candidates[%zu].id = %lld is not a token id: allowed "
                      "range [0, %d]",
                      i, (long long)v, n_vocab - 1);
    for (size_t j = 0; j < i; j++)
      if (ids[j] == (int32_t)v)
        return api_fail(e, 400, "candidates",
                        "candidates[%zu].id = %lld is listed twice", i,
                        (long long)v);
    ids[i] = (int32_t)v;
    logits[i] = (float)json_number_value(lg);
  }
  *n = (int32_t)count;
  return 0;
}

static int parse_settings(const json_t *root, nucleus_request_params *p,
                          int32_t *n_draws, api_error *e) {
  *p = nucleus_request_default_params();
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)root, key, v) {
    if (!strcmp(key, "candidates")) continue;
    if (!strcmp(key, "seed")) {
      if (!json_is_integer(v) || json_integer_value(v) < 0)
        return api_fail(e, 400, "seed",
                        "'seed' must be a non-negative "
                        "integer");
      p->sampling.has_seed = true;
      p->sampling.seed = (uint64_t)json_integer_value(v);
      continue;
    }
    if (!strcmp(key, "n_draws")) {
      if (!json_is_integer(v) || json_integer_value(v) < 0 ||
          json_integer_value(v) > MAX_DRAWS)
        return api_fail(e, 400, "n_draws",
                        "'n_draws' must be an integer in [0, %d]", MAX_DRAWS);
      *n_draws = (int32_t)json_integer_value(v);
      continue;
    }
    size_t i = 0;
    while (i < N_SETTINGS && strcmp(key, SETTINGS[i]))
      i++;
    if (i == N_SETTINGS)
      return api_fail(e, 400, key,
                      "'%s' is not a /sample field (candidates, seed, "
                      "n_draws, temperature, top_k, top_p, min_p, typical_p)",
                      key);
    nucleus_error err = {0};
    if (!json_is_number(v) ||
        nucleus_params_set(p, key, json_number_value(v), &err) != NUCLEUS_OK)
      return api_fail(e, 400, key, "%s",
                      err.message[0] ? err.message : "must be a number");
  }
  if (!p->sampling.has_seed) p->sampling.has_seed = true; /* seed 0 */
  return 0;
}

static json_t *histogram(const int32_t *draws, int32_t n_draws,
                         const int32_t *ids, int32_t n) {
  int32_t counts[NUCLEUS_MAX_INSPECT_TOP] = {0};
  for (int32_t k = 0; k < n_draws; k++)
    if (draws[k] >= 0 && draws[k] < n) counts[draws[k]]++;
  json_t *h = json_array();
  for (int32_t i = 0; i < n; i++)
    if (counts[i])
      json_array_append_new(
          h, json_pack("{s:i,s:i}", "id", ids[i], "count", counts[i]));
  return h;
}

enum MHD_Result handle_sample(server_ctx *srv, struct MHD_Connection *conn,
                              const char *body, size_t len) {
  api_error e;
  json_error_t jerr;
  json_t *root = json_loadb(body, len, 0, &jerr);
  if (!json_is_object(root)) {
    json_decref(root);
    api_fail(&e, 400, NULL, "the request body must be a JSON object");
    return reply_error(srv, conn, &e);
  }
  int32_t ids[NUCLEUS_MAX_INSPECT_TOP], n = 0, n_draws = 0;
  float logits[NUCLEUS_MAX_INSPECT_TOP];
  nucleus_request_params p;
  int rc = parse_candidates(root, nucleus_model_n_vocab(srv->model), ids,
                            logits, &n, &e) ||
           parse_settings(root, &p, &n_draws, &e);
  json_decref(root);
  if (rc) return reply_error(srv, conn, &e);
  nucleus_inspect *in = malloc(sizeof *in);
  int32_t *draws = n_draws ? malloc((size_t)n_draws * sizeof *draws) : NULL;
  if (!in || (n_draws && !draws)) {
    free(in);
    free(draws);
    api_fail(&e, 500, NULL, "out of memory");
    return reply_error(srv, conn, &e);
  }
  nucleus_error err = {0};
  if (nucleus_sample_logits(&p.sampling, logits, n, n_draws, in, draws, &err) !=
      NUCLEUS_OK) {
    free(in);
    free(draws);
    api_fail(&e, 400, NULL, "%s", err.message);
    return reply_error(srv, conn, &e);
  }
  /* row indices back to token ids */
  for (int32_t c = 0; c < in->n_candidates; c++)
    in->candidates[c].token = ids[in->candidates[c].token];
  in->token = ids[in->token];
  for (int32_t k = 0; k < in->n_walk; k++)
    in->walk[k].token = ids[in->walk[k].token];
  json_t *o = inspect_json(srv, in);
  json_t *kept = json_array();
  for (int32_t c = 0; c < in->n_candidates; c++)
    if (in->candidates[c].removed_by < 0)
      json_array_append_new(kept, json_integer(in->candidates[c].token));
  json_object_set_new(o, "kept", kept);
  /* the row is the candidates as sent: walked by id, the row's ids are
   * their places in the request's list */
  if (in->method == NUCLEUS_DRAW_INVERSE_CDF &&
      in->order == NUCLEUS_WALK_TOKEN_ID)
    json_object_set_new(json_object_get(o, "draw"), "order",
                        json_string("candidates"));
  if (n_draws) {
    json_object_set_new(o, "n_draws", json_integer(n_draws));
    json_object_set_new(o, "histogram", histogram(draws, n_draws, ids, n));
  }
  free(in);
  free(draws);
  return reply_json(srv, conn, 200, o);
}
