/* nucleus serve: load the model, start the engine and the HTTP listener,
 * wait for SIGINT/SIGTERM, drain, exit 0. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../cli/cli_io.h"
#include "../cli/commands.h"
#include "http/http_server.h"
#include "openai/image_fetch.h"
#include "openai/request_fields.h"
#include "openai/responses_store.h"
#include "server.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits until no request is in flight or the deadline passes. Returns
 * false when a second signal asked for an immediate exit. */
static bool wait_drained(server_ctx *srv, const sigset_t *sigs,
                         double seconds) {
  double deadline = now_s() + seconds;
  while (inflight_count(srv->inflight) > 0 && now_s() < deadline) {
    struct timespec tick = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
    if (sigtimedwait(sigs, NULL, &tick) > 0) return false;
  }
  return true;
}

static void drain(server_ctx *srv, http_server *hs, const sigset_t *sigs,
                  int sig) {
  size_t n = inflight_count(srv->inflight);
  fprintf(stderr,
          "nucleus: %s: no new requests; draining %zu in flight (up to %d "
          "s)\n",
          sig == SIGINT ? "SIGINT" : "SIGTERM", n, srv->cfg->drain_timeout_s);
  atomic_store(&srv->draining, true);
  http_server_quiesce(hs);
  bool patient = wait_drained(srv, sigs, srv->cfg->drain_timeout_s);
  if (inflight_count(srv->inflight) > 0) {
    fprintf(stderr, "nucleus: %s; cancelling %zu requests\n",
            patient ? "drain timeout" : "second signal",
            inflight_count(srv->inflight));
    inflight_cancel_all(srv->inflight);
    wait_drained(srv, sigs, 2.0);
  }
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static nucleus_engine *start_engine(const server_config *cfg,
                                    nucleus_model *model, nucleus_model *draft,
                                    const nucleus_mmproj *mmproj,
                                    nucleus_engine_params *used) {
  nucleus_engine *engine = NULL;
  nucleus_error err = {0};
  nucleus_engine_params ep = cfg->engine;
  ep.draft_model = draft;
  ep.mmproj = mmproj;
  if (nucleus_engine_create(model, &ep, &engine, &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus serve: engine: %s\n", err.message);
    return NULL;
  }
  nucleus_engine_get_params(engine, used); /* the defaults resolved */
  return engine;
}

/* The embedding worker of an embedding model (its default batch). */
static embed_service *start_embedder(const nucleus_model *m, const char *path) {
  char msg[512];
  embed_service *s = embed_service_create(m, 0, msg, sizeof msg);
  if (!s) fprintf(stderr, "nucleus serve: %s: embedder: %s\n", path, msg);
  return s;
}

static int serve(const server_config *cfg, const char *path,
                 const sigset_t *sigs) {
  int rc = 1;
  char *template_text = NULL;
  if (cfg->chat_template_path &&
      !(template_text = cli_read_file(cfg->chat_template_path, NULL))) {
    fprintf(stderr, "nucleus serve: cannot read --chat-template %s: %s\n",
            cfg->chat_template_path, strerror(errno));
    return 1;
  }
  nucleus_model_params mp = cfg->model;
  mp.chat_template = template_text;
  /* --spec mtp: the model's MTP head drafts (loaded with it) */
  mp.mtp = cfg->spec.type == NUCLEUS_SPEC_MTP;
  server_ctx srv = {.cfg = cfg};
  nucleus_error err = {0};
  http_server *hs = NULL;
  nucleus_model *draft = NULL;
  if (nucleus_model_load(path, &mp, &srv.model, &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus serve: %s: %s\n", path, err.message);
    goto out;
  }
  cli_note_template(srv.model, "nucleus serve");
  srv.n_vocab = nucleus_model_n_vocab(srv.model);
  srv.defaults = nucleus_request_params_for(srv.model, NUCLEUS_SURFACE_SERVER);
  srv.defaults.speculative = cfg->spec;
  srv.created = (int64_t)time(NULL);
  snprintf(srv.model_id, sizeof srv.model_id, "%s", base_name(path));
  srv.metrics = metrics_create();
  srv.inflight = inflight_create();
  srv.responses =
      responses_store_create(cfg->responses_max, cfg->responses_max_bytes);
  if (!srv.metrics || !srv.inflight || !srv.responses) goto out;
  if (cfg->draft_model_path &&
      nucleus_model_load(cfg->draft_model_path, &cfg->model, &draft, &err) !=
          NUCLEUS_OK) {
    fprintf(stderr, "nucleus serve: --model-draft %s: %s\n",
            cfg->draft_model_path, err.message);
    goto out;
  }
  if (nucleus_model_is_embedding(srv.model) &&
      !(srv.embed_main = start_embedder(srv.model, path)))
    goto out;
  if (cfg->mmproj_path &&
      nucleus_mmproj_load(cfg->mmproj_path, srv.model, &mp, &srv.mmproj,
                          &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus serve: --mmproj %s: %s\n", cfg->mmproj_path,
            err.message);
    goto out;
  }
  if (cfg->embedding_model_path) {
    const char *ep = cfg->embedding_model_path;
    if (nucleus_model_load(ep, &cfg->model, &srv.embed_model, &err) !=
        NUCLEUS_OK) {
      fprintf(stderr, "nucleus serve: --embedding-model %s: %s\n", ep,
              err.message);
      goto out;
    }
    if (!nucleus_model_is_embedding(srv.embed_model)) {
      fprintf(stderr,
              "nucleus serve: --embedding-model %s: not an embedding model "
              "(its file names no pooling and its attention is causal)\n",
              ep);
      goto out;
    }
    if (!(srv.embed_extra = start_embedder(srv.embed_model, ep))) goto out;
    snprintf(srv.embed_model_id, sizeof srv.embed_model_id, "%s",
             base_name(ep));
  }
  if (!(srv.engine = start_engine(cfg, srv.model, draft, srv.mmproj,
                                  &srv.engine_params)))
    goto out;
  srv.n_ctx = srv.engine_params.n_ctx;
  char msg[256];
  if (!(hs = http_server_start(&srv, msg, sizeof msg))) {
    fprintf(stderr, "nucleus serve: %s\n", msg);
    goto out;
  }
  const char *host = cfg->host;
  bool v6 = strchr(host, ':') != NULL;
  fprintf(stderr,
          "nucleus: listening on http://%s%s%s:%d (model %s, ctx %d, "
          "kernels %s, flash attention %s, KV cache K %s V %s, weights "
          "%s, %.1f MiB in 2 MiB pages)\n",
          v6 ? "[" : "", host, v6 ? "]" : "", http_server_port(hs),
          srv.model_id, srv.n_ctx, nucleus_model_kernels(srv.model),
          nucleus_model_flash_attn(srv.model) ? "on" : "off",
          nucleus_cache_type_name(nucleus_model_cache_type_k(srv.model)),
          nucleus_cache_type_name(nucleus_model_cache_type_v(srv.model)),
          nucleus_load_mode_name(nucleus_model_load_mode(srv.model)),
          (double)nucleus_model_huge_page_bytes(srv.model) / (1 << 20));
  if (!cfg->api_key && strcmp(host, "127.0.0.1") && strcmp(host, "::1") &&
      strcmp(host, "localhost"))
    fprintf(stderr, "nucleus: WARNING: listening on %s without --api-key\n",
            host);
  fflush(stderr);
  int sig = 0;
  sigwait(sigs, &sig);
  drain(&srv, hs, sigs, sig);
  rc = 0;
out:
  http_server_stop(hs);
  if (srv.engine) nucleus_engine_free(srv.engine);
  embed_service_free(srv.embed_main);
  embed_service_free(srv.embed_extra);
  nucleus_model_free(srv.embed_model);
  nucleus_mmproj_free(srv.mmproj);
  nucleus_model_free(srv.model);
  nucleus_model_free(draft);
  inflight_destroy(srv.inflight);
  responses_store_destroy(srv.responses);
  metrics_destroy(srv.metrics);
  free(template_text);
  if (rc == 0) fprintf(stderr, "nucleus: stopped\n");
  return rc;
}

int cmd_serve(int argc, char **argv) {
  server_config cfg;
  char msg[256];
  if (server_config_parse(argc, argv, &cfg, msg, sizeof msg)) {
    fprintf(stderr, "nucleus serve: %s\n\n", msg);
    server_config_usage(stderr);
    return 2;
  }
  if (cfg.help) {
    server_config_usage(stdout);
    return 0;
  }
  if (cfg.print_request_fields) {
    request_fields_print(stdout);
    return 0;
  }
  char model_buf[CLI_MODEL_PATH_MAX];
  const char *path = cfg.model_path
                         ? cfg.model_path
                         : cli_default_model(model_buf, sizeof model_buf);
  if (!path) return 1;
  if (cfg.allow_image_urls && image_fetch_init()) {
    fprintf(stderr, "nucleus serve: --allow-image-urls: libcurl did not "
                    "initialise\n");
    return 1;
  }
  /* Every thread started from here on inherits the blocked signals; this
   * thread takes them with sigwait, so no handler and no global flag. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  return serve(&cfg, path, &sigs);
}
