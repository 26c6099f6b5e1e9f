/* nucleus serve: command-line options. */
#ifndef NUCLEUS_SERVER_CONFIG_H
#define NUCLEUS_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "load_gauges.h"
#include "nucleus.h"

#define SERVER_MAX_ALLOWED_HOSTS 16

typedef struct server_config {
  const char *model_path; /* NULL: the default model */
  const char *host;       /* bind address, 127.0.0.1 by default */
  int port;
  const char *api_key; /* NULL: no authentication */
  size_t max_body_bytes;
  int drain_timeout_s;
  int timeout_s; /* idle connection timeout (headers, body, reads) */
  int max_connections;
  const char *chat_template_path; /* NULL: the model's template */
  const char *cors_origin;        /* NULL: no CORS headers; "*" or an origin */
  /* The model options (../cli/model_flags.h: -t, -fa, -ctk, -ctv,
   * --load-mode, the RoPE overrides, --reference-kernels, --no-repack);
   * chat_template comes from chat_template_path. */
  nucleus_model_params model;
  /* The engine options (../cli/model_flags.h: -c, --kv-tokens, --parallel,
   * --max-queue, --batch-tokens, --no-prefix-cache, --swa-full, ...). */
  nucleus_engine_params engine;
  bool parse_special_in_content; /* chat contents may hold control tokens */
  bool prefix_cache_salt_by_key; /* the presented API key salts the cache */
  bool strict_params; /* an unknown request field is a 400, not a warning */
  /* --allow-image-urls: an image part's http(s) URL is fetched
   * (openai/image_fetch.h); off, it is a 400 */
  bool allow_image_urls;
  int read_timeout_s; /* a request's headers and body, in all */
  int max_connections_per_ip;
  /* Host names (besides IP literals and localhost) requests may carry in
   * their Host header; "*" allows any. */
  const char *allowed_hosts[SERVER_MAX_ALLOWED_HOSTS];
  int n_allowed_hosts;
  metrics_names metrics_names; /* --metrics-names: which names /metrics adds */
  /* --spec, --draft-max, --draft-min: every request's speculative decoding
   * unless it asks otherwise ("speculative", "prediction"). */
  nucleus_spec_params spec;
  const char *draft_model_path; /* --model-draft: the draft model's file */
  /* --mmproj: the vision projector file beside the model (images in) */
  const char *mmproj_path;
  /* --reasoning-format: false (auto): a thinking model's reasoning goes to
   * reasoning_content; true (none): it stays in the content */
  bool reasoning_inline;
  /* --embedding-model: an embedding model's file (beside the model) */
  const char *embedding_model_path;
  /* --reasoning-budget: a thinking model's max_reasoning_tokens when a
   * request gives none (-1: no budget) */
  int32_t reasoning_budget;
  /* The Responses API's store: responses kept at most, and their bytes. */
  size_t responses_max, responses_max_bytes;
  bool help;
  bool print_request_fields; /* --request-fields: print the table, exit */
} server_config;

/* Fills cfg from argv (argv[0] is "serve"). Returns 0 on success, or -1
 * after writing a message naming the bad option into msg. */
int server_config_parse(int argc, char **argv, server_config *cfg, char *msg,
                        size_t msg_cap);

void server_config_usage(FILE *out);

#endif
