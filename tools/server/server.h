/* nucleus serve: the state every HTTP thread shares (one per process,
 * owned by cmd_serve and passed to handlers; never a global). */
#ifndef NUCLEUS_SERVER_H
#define NUCLEUS_SERVER_H

#include <stdatomic.h>
#include <stdint.h>

#include "embed_service.h"
#include "inflight.h"
#include "metrics.h"
#include "nucleus.h"
#include "server_config.h"

struct responses_store; /* openai/responses_store.h */

typedef struct server_ctx {
  const server_config *cfg;
  nucleus_model *model;
  nucleus_mmproj *mmproj; /* --mmproj: the vision projector (NULL: none) */
  nucleus_engine *engine;
  metrics *metrics;
  inflight *inflight;
  atomic_bool draining; /* SIGTERM seen: refuse new work with 503 */
  char model_id[256];   /* what /v1/models lists */
  int64_t created;      /* unix time the model was loaded */
  int32_t n_ctx;        /* per-sequence context a prompt must fit in */
  int32_t n_vocab;
  /* The engine's parameters as started (limits /server_info reports). */
  nucleus_engine_params engine_params;
  /* What a request starts from: OpenAI's defaults, with the model's own
   * recommendations (general.sampling.*) first. */
  nucleus_request_params defaults;
  /* Embeddings and rerank (embed_service.h, openai/embed_route.c): the
   * worker over the model when it is an embedding model or a reranker
   * (NULL otherwise); the --embedding-model, its id and its worker (NULL:
   * none). */
  embed_service *embed_main;
  nucleus_model *embed_model;
  embed_service *embed_extra;
  char embed_model_id[256];
  /* The Responses API's stored responses (--responses-max, ...). */
  struct responses_store *responses;
} server_ctx;

#endif
