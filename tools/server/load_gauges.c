/* nucleus serve: load gauges for routers and endpoint pickers. */
#include "load_gauges.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

load_view load_view_of(const nucleus_engine_stats *s, int32_t block_tokens) {
  load_view v = {
      .waiting = s->queued,
      .running = s->running,
      .kv_blocks_used = s->kv_blocks_used,
      .kv_blocks_free = s->kv_blocks_free,
      .kv_block_tokens = block_tokens,
      .prefix_queries = s->prefix_cache_queried_tokens_total,
      .prefix_hits = s->prefix_cache_hit_tokens_total,
  };
  return v;
}

double load_kv_usage(const load_view *v) {
  int64_t used = v->kv_blocks_used > 0 ? v->kv_blocks_used : 0;
  int64_t all = used + (v->kv_blocks_free > 0 ? v->kv_blocks_free : 0);
  return all ? (double)used / (double)all : 0.0;
}

double load_prefix_hit_rate(const load_view *v) {
  if (v->prefix_queries < 0) return -1.0;
  if (v->prefix_queries == 0) return 0.0;
  int64_t hits = v->prefix_hits < 0 ? 0 : v->prefix_hits;
  if (hits > v->prefix_queries) hits = v->prefix_queries;
  return (double)hits / (double)v->prefix_queries;
}

/* A Prometheus label value: backslash, double quote and newline escaped;
 * at most 200 bytes of the name. */
static void put_label(FILE *f, const char *s) {
  size_t n = strnlen(s, 200);
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '\\' || c == '"')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f);
    else
      fputc(c, f);
  }
}

static void head(FILE *f, const char *name, const char *type,
                 const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One vllm:* series: the name, {model_name="..."[,extra]}, the value. */
static void vllm_series(FILE *f, const char *name, const char *model,
                        const char *extra, double value) {
  fprintf(f, "%s{model_name=\"", name);
  put_label(f, model);
  fprintf(f, "\"%s%s} %.17g\n", extra ? "," : "", extra ? extra : "", value);
}

static void render_nucleus(FILE *f, const load_view *v) {
  head(f, "nucleus_kv_cache_usage_ratio", "gauge",
       "Fraction of KV cache blocks in use (0 to 1).");
  fprintf(f, "nucleus_kv_cache_usage_ratio %.17g\n", load_kv_usage(v));
  head(f, "nucleus_kv_block_tokens", "gauge", "Tokens per KV cache block.");
  fprintf(f, "nucleus_kv_block_tokens %d\n", v->kv_block_tokens);
  double rate = load_prefix_hit_rate(v);
  if (rate >= 0) {
    head(f, "nucleus_prefix_cache_hit_rate", "gauge",
         "Prompt tokens found in the prefix cache over prompt tokens looked "
         "up, since start (0 to 1).");
    fprintf(f, "nucleus_prefix_cache_hit_rate %.17g\n", rate);
  }
}

static void render_vllm(FILE *f, const load_view *v, const char *model,
                        int64_t now) {
  head(f, "vllm:num_requests_waiting", "gauge",
       "Requests waiting to be processed (nucleus_queue_length).");
  vllm_series(f, "vllm:num_requests_waiting", model, NULL, (double)v->waiting);
  head(f, "vllm:num_requests_running", "gauge",
       "Sequences running (nucleus_requests_running).");
  vllm_series(f, "vllm:num_requests_running", model, NULL, (double)v->running);
  head(f, "vllm:kv_cache_usage_perc", "gauge",
       "KV-cache usage; 1 means 100 percent (nucleus_kv_cache_usage_ratio).");
  vllm_series(f, "vllm:kv_cache_usage_perc", model, NULL, load_kv_usage(v));
  head(f, "vllm:gpu_cache_usage_perc", "gauge",
       "KV-cache usage (older vLLM name of vllm:kv_cache_usage_perc).");
  vllm_series(f, "vllm:gpu_cache_usage_perc", model, NULL, load_kv_usage(v));
  char extra[96];
  int64_t blocks = (v->kv_blocks_used > 0 ? v->kv_blocks_used : 0) +
                   (v->kv_blocks_free > 0 ? v->kv_blocks_free : 0);
  snprintf(extra, sizeof extra, "block_size=\"%d\",num_gpu_blocks=\"%lld\"",
           v->kv_block_tokens, (long long)blocks);
  head(f, "vllm:cache_config_info", "gauge",
       "KV cache configuration (labels); the value is 1.");
  vllm_series(f, "vllm:cache_config_info", model, extra, 1.0);
  head(f, "vllm:lora_requests_info", "gauge",
       "LoRA adapters (nucleus serves none); the value is the time of the "
       "scrape.");
  vllm_series(f, "vllm:lora_requests_info", model,
              "max_lora=\"0\",running_lora_adapters=\"\","
              "waiting_lora_adapters=\"\"",
              (double)now);
  if (v->prefix_queries >= 0) {
    head(f, "vllm:prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache.");
    vllm_series(f, "vllm:prefix_cache_queries_total", model, NULL,
                (double)v->prefix_queries);
    head(f, "vllm:prefix_cache_hits_total", "counter",
         "Prompt tokens found in the prefix cache.");
    vllm_series(f, "vllm:prefix_cache_hits_total", model, NULL,
                (double)(v->prefix_hits < 0 ? 0 : v->prefix_hits));
    head(f, "vllm:gpu_prefix_cache_hit_rate", "gauge",
         "Prefix cache hit rate since start (0 to 1).");
    vllm_series(f, "vllm:gpu_prefix_cache_hit_rate", model, NULL,
                load_prefix_hit_rate(v));
  }
}

char *load_gauges_render(const load_view *v, metrics_names names,
                         const char *model_name, int64_t now_unix) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  render_nucleus(f, v);
  if (names == METRICS_NAMES_LLMD)
    render_vllm(f, v, model_name ? model_name : "", now_unix);
  bool failed = ferror(f) != 0;
  if (fclose(f) != 0) failed = true;
  if (failed) {
    free(buf);
    return NULL;
  }
  return buf;
}

json_t *load_get_load_json(const load_view *v) {
  int64_t used = v->kv_blocks_used > 0 ? v->kv_blocks_used : 0;
  return json_pack("[{s:i,s:I,s:I,s:I}]", "dp_rank", 0, "num_reqs",
                   (json_int_t)(v->waiting + v->running), "num_waiting_reqs",
                   (json_int_t)v->waiting, "num_tokens",
                   (json_int_t)(used * v->kv_block_tokens));
}
