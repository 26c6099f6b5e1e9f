/* nucleus serve: GET /health, GET /v1/models, GET /metrics, GET /props. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_reply.h"
#include "http/json_text.h"
#include "responses_store.h"
#include "routes.h"

enum MHD_Result handle_health(server_ctx *srv, struct MHD_Connection *conn,
                              const char *body, size_t len) {
  (void)body;
  (void)len;
  if (atomic_load(&srv->draining))
    return reply_json(srv, conn, 503, json_pack("{s:s}", "status", "draining"));
  return reply_json(srv, conn, 200, json_pack("{s:s}", "status", "ok"));
}

static json_t *model_object(server_ctx *srv) {
  return json_pack("{s:o,s:s,s:I,s:s,s:{s:i,s:i,s:i,s:b}}", "id",
                   json_text(srv->model_id, strlen(srv->model_id)), "object",
                   "model", "created", (json_int_t)srv->created, "owned_by",
                   "nucleus", "meta", "n_vocab", srv->n_vocab, "n_ctx",
                   srv->n_ctx, "n_ctx_train",
                   nucleus_model_n_ctx_train(srv->model), "embedding",
                   srv->embed_main != NULL);
}

/* The --embedding-model (meta: its embedding size, pooling, and rank
 * outputs for a reranker). */
static json_t *embed_model_object(server_ctx *srv) {
  const nucleus_model *m = srv->embed_model;
  nucleus_embed_params p = nucleus_embed_default_params();
  return json_pack("{s:o,s:s,s:I,s:s,s:{s:i,s:b,s:i,s:s,s:i}}", "id",
                   json_text(srv->embed_model_id, strlen(srv->embed_model_id)),
                   "object", "model", "created", (json_int_t)srv->created,
                   "owned_by", "nucleus", "meta", "n_ctx_train",
                   nucleus_model_n_ctx_train(m), "embedding", 1, "n_embd",
                   nucleus_embed_size(m, &p), "pooling",
                   nucleus_pooling_name(nucleus_model_pooling(m)), "n_cls_out",
                   nucleus_model_n_cls_out(m));
}

enum MHD_Result handle_models(server_ctx *srv, struct MHD_Connection *conn,
                              const char *body, size_t len) {
  (void)body;
  (void)len;
  json_t *data = json_pack("[o]", model_object(srv));
  if (data && srv->embed_model)
    json_array_append_new(data, embed_model_object(srv));
  return reply_json(srv, conn, 200,
                    json_pack("{s:s,s:o}", "object", "list", "data", data));
}

static bool is_id(const char *id, size_t n, const char *want) {
  return want && strlen(want) == n && !memcmp(id, want, n);
}

/* GET /v1/models/{id} (url: the request's path, its %-escapes decoded and
 * its query string cut off by libmicrohttpd, so that a '?' or '/' in it is
 * the id's own): the main model or the --embedding-model, by the id
 * /v1/models lists (OpenAI's client.models.retrieve, which escapes the id);
 * any other id is a 404 in OpenAI's shape. */
enum MHD_Result handle_model(server_ctx *srv, struct MHD_Connection *conn,
                             const char *url, size_t len) {
  const char *prefix = "/v1/models/";
  const size_t end = len, np = strlen(prefix);
  const char *id = url + np;
  const size_t n = end > np ? end - np : 0;
  if (end > np && is_id(id, n, srv->model_id))
    return reply_json(srv, conn, 200, model_object(srv));
  if (end > np && srv->embed_model && is_id(id, n, srv->embed_model_id))
    return reply_json(srv, conn, 200, embed_model_object(srv));
  api_error e;
  api_fail(&e, 404, "model", "The model '%.*s' does not exist",
           (int)(n < 200 ? n : 200), id);
  e.code = "model_not_found";
  return reply_error(srv, conn, &e);
}

enum MHD_Result handle_metrics(server_ctx *srv, struct MHD_Connection *conn,
                               const char *body, size_t len) {
  (void)body;
  (void)len;
  nucleus_engine_stats stats;
  memset(&stats, 0, sizeof stats);
  if (srv->engine) nucleus_engine_get_stats(srv->engine, &stats);
  char *text = metrics_render(srv->metrics, srv->engine ? &stats : NULL,
                              inflight_count(srv->inflight));
  char *gauges = router_gauges_text(srv);
  if (!text || !gauges) {
    free(text);
    free(gauges);
    return MHD_NO;
  }
  size_t n = strlen(text), m = strlen(gauges);
  char *all = malloc(n + m + 1);
  if (all) {
    memcpy(all, text, n);
    memcpy(all + n, gauges, m + 1);
  }
  free(text);
  free(gauges);
  if (!all) return MHD_NO;
  enum MHD_Result r = reply_text(
      srv, conn, 200, "text/plain; version=0.0.4; charset=utf-8", all, n + m);
  free(all);
  return r;
}

/* One row of the parameter contract: its range and the default in force
 * (what the web page's settings are built from). */
static json_t *param_json(const nucleus_param_info *p, double v) {
  const char *kind = p->kind == NUCLEUS_PARAM_BOOL  ? "bool"
                     : p->kind == NUCLEUS_PARAM_INT ? "int"
                                                    : "float";
  return json_pack("{s:s,s:s,s:o,s:o,s:b,s:o,s:s}", "name", p->name, "kind",
                   kind, "min", json_finite(p->min), "max", json_finite(p->max),
                   "min_exclusive", p->min_exclusive, "default", json_finite(v),
                   "help", p->help ? p->help : "");
}

/* The defaults in force: every parameter of the contract as a request
 * starts from it, and which of them the model file recommends. */
enum MHD_Result handle_props(server_ctx *srv, struct MHD_Connection *conn,
                             const char *body, size_t len) {
  (void)body;
  (void)len;
  json_t *settings = json_object();
  json_t *from_model = json_array();
  json_t *contract = json_array();
  for (size_t i = 0; i < nucleus_params_count(); i++) {
    const nucleus_param_info *p = nucleus_params_at(i);
    double v = nucleus_params_value(&srv->defaults, p->name);
    json_object_set_new(settings, p->name,
                        p->kind == NUCLEUS_PARAM_BOOL ? json_boolean(v != 0)
                        : p->kind == NUCLEUS_PARAM_INT
                            ? json_integer((json_int_t)v)
                            : json_real(v));
    if (nucleus_model_recommends(srv->model, p->name, NULL))
      json_array_append_new(from_model, json_string(p->name));
    json_array_append_new(contract, param_json(p, v));
  }
  size_t count = 0, bytes = 0, max_count = 0, max_bytes = 0;
  if (srv->responses)
    responses_store_usage(srv->responses, &count, &bytes, &max_count,
                          &max_bytes);
  json_t *store =
      json_pack("{s:I,s:I,s:I,s:I}", "max_responses", (json_int_t)max_count,
                "max_bytes", (json_int_t)max_bytes, "responses",
                (json_int_t)count, "bytes", (json_int_t)bytes);
  return reply_json(
      srv, conn, 200,
      json_pack(
          "{s:o,s:o,s:o,s:o,s:i,s:s,s:o,s:I,s:I,s:{s:b}}",
          "default_generation_settings", settings, "recommended_by_model",
          from_model, "params", contract, "model",
          json_text(srv->model_id, strlen(srv->model_id)), "n_ctx", srv->n_ctx,
          "kernels", nucleus_model_kernels(srv->model), "responses_store",
          store, "kv_bytes_per_position",
          (json_int_t)nucleus_model_kv_bytes_per_position(srv->model),
          "state_bytes_per_sequence",
          (json_int_t)nucleus_model_state_bytes_per_sequence(srv->model, NULL),
          "modalities", "vision", srv->mmproj != NULL));
}
