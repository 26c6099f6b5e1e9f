/* nucleus serve: what routers read about a replica. sglang-router asks
 * every worker for GET /server_info and /model_info when it registers it
 * (falling back to /get_server_info and /get_model_info), and its
 * power_of_two policy polls GET /get_load. Every field is this server's
 * real state; fields SGLang has and nucleus does not (a Hugging Face
 * model_path or tokenizer_path) are left out rather than invented. */
#include <string.h>
#include <time.h>

#include "http/http_reply.h"
#include "http/json_text.h"
#include "load_gauges.h"
#include "routes.h"

static load_view current_load(server_ctx *srv) {
  nucleus_engine_stats stats;
  memset(&stats, 0, sizeof stats);
  if (srv->engine) nucleus_engine_get_stats(srv->engine, &stats);
  return load_view_of(&stats, srv->engine_params.kv_block_tokens);
}

/* GET /server_info, /get_server_info: the served model's name (the
 * router's model id) and the limits this replica runs under. */
enum MHD_Result handle_server_info(server_ctx *srv, struct MHD_Connection *conn,
                                   const char *body, size_t len) {
  (void)body;
  (void)len;
  load_view v = current_load(srv);
  int64_t blocks = v.kv_blocks_used + v.kv_blocks_free;
  const nucleus_engine_params *ep = &srv->engine_params;
  json_t *id = json_text(srv->model_id, strlen(srv->model_id));
  return reply_json(
      srv, conn, 200,
      json_pack("{s:o,s:O,s:s,s:i,s:i,s:I,s:i,s:i,s:i,s:i,s:i,s:s,s:b}",
                "served_model_name", id, "model", id, "engine", "nucleus",
                "context_length", srv->n_ctx, "n_vocab", srv->n_vocab,
                "max_total_tokens", (json_int_t)(blocks * v.kv_block_tokens),
                "max_running_requests", ep->max_running, "max_queued_requests",
                ep->max_queued, "max_prefill_tokens", ep->max_batch_tokens,
                "page_size", ep->kv_block_tokens, "dp_size", 1, "kernels",
                nucleus_model_kernels(srv->model), "draining",
                atomic_load(&srv->draining)));
}

/* GET /model_info, /get_model_info. */
enum MHD_Result handle_model_info(server_ctx *srv, struct MHD_Connection *conn,
                                  const char *body, size_t len) {
  (void)body;
  (void)len;
  const char *arch = nucleus_model_arch(srv->model);
  json_t *info =
      json_pack("{s:b,s:s,s:o,s:i,s:i}", "is_generation",
                !nucleus_model_is_embedding(srv->model), "model_type",
                arch ? arch : "", "served_model_name",
                json_text(srv->model_id, strlen(srv->model_id)), "n_ctx_train",
                nucleus_model_n_ctx_train(srv->model), "n_vocab", srv->n_vocab);
  const char *hf = nucleus_model_hf_architecture(srv->model);
  if (info && hf)
    json_object_set_new(info, "architectures", json_pack("[s]", hf));
  return reply_json(srv, conn, 200, info);
}

/* GET /get_load: SGLang's per-rank load array (one rank). */
enum MHD_Result handle_get_load(server_ctx *srv, struct MHD_Connection *conn,
                                const char *body, size_t len) {
  (void)body;
  (void)len;
  load_view v = current_load(srv);
  return reply_json(srv, conn, 200, load_get_load_json(&v));
}

/* The gauges GET /metrics adds after metrics_render's text. */
char *router_gauges_text(server_ctx *srv) {
  load_view v = current_load(srv);
  return load_gauges_render(&v, srv->cfg->metrics_names, srv->model_id,
                            (int64_t)time(NULL));
}
