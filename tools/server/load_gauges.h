/* nucleus serve: the load a router or an endpoint picker reads. One view
 * of the engine's state, rendered as the extra Prometheus gauges of
 * GET /metrics (nucleus_* names, plus vLLM's names for the llm-d /
 * Gateway API Inference Extension endpoint picker with --metrics-names
 * llm-d) and as SGLang's GET /get_load array (sglang-router's
 * power_of_two policy). Pure functions: no engine, no HTTP. */
#ifndef NUCLEUS_SERVER_LOAD_GAUGES_H
#define NUCLEUS_SERVER_LOAD_GAUGES_H

#include <jansson.h>
#include <stdint.h>

#include "nucleus.h"

typedef enum metrics_names {
  METRICS_NAMES_NUCLEUS = 0, /* nucleus_* only */
  METRICS_NAMES_LLMD = 1,    /* also vllm:*, as the endpoint picker reads */
} metrics_names;

typedef struct load_view {
  int64_t waiting;        /* requests queued for the engine */
  int64_t running;        /* sequences being prefilled or decoded */
  int64_t kv_blocks_used; /* KV pool blocks holding tokens */
  int64_t kv_blocks_free;
  int32_t kv_block_tokens; /* tokens per block */
  /* Prompt tokens looked up in the prefix cache and found there (both
   * cumulative); prefix_queries < 0: the engine keeps no such count. */
  int64_t prefix_queries;
  int64_t prefix_hits;
} load_view;

/* The view of one stats snapshot (block_tokens: the engine's block size). */
load_view load_view_of(const nucleus_engine_stats *stats, int32_t block_tokens);

/* Used blocks over all blocks, in [0, 1] (0 for an empty pool). */
double load_kv_usage(const load_view *v);

/* Hits over queries, in [0, 1]; 0 before the first query; < 0 when the
 * engine keeps no count. */
double load_prefix_hit_rate(const load_view *v);

/* The gauges' exposition text (allocated; free()), NULL when out of
 * memory. model_name labels the vllm:* series as vLLM labels them. */
char *load_gauges_render(const load_view *v, metrics_names names,
                         const char *model_name, int64_t now_unix);

/* GET /get_load: [{"dp_rank": 0, "num_reqs", "num_waiting_reqs",
 * "num_tokens"}], num_tokens being the KV tokens in use. */
json_t *load_get_load_json(const load_view *v);

#endif
