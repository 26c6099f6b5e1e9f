/* nucleus serve: metrics storage and the Prometheus text rendering. */
#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATUS_MAX 600

static const double TTFT_BUCKETS[] = {0.005, 0.01, 0.025, 0.05, 0.1,  0.25,
                                      0.5,   1.0,  2.5,   5.0,  10.0, 30.0};
static const double ITL_BUCKETS[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                     0.1,   0.25,   0.5,   1.0,  2.5};
#define N_TTFT (sizeof TTFT_BUCKETS / sizeof TTFT_BUCKETS[0])
#define N_ITL (sizeof ITL_BUCKETS / sizeof ITL_BUCKETS[0])

typedef struct histogram {
  uint64_t counts[16]; /* per bucket, not cumulative; last = +Inf */
  uint64_t n;
  double sum;
} histogram;

struct metrics {
  pthread_mutex_t mu;
  uint64_t by_status[STATUS_MAX];
  int64_t prompt_tokens;
  int64_t generated_tokens;
  histogram ttft;
  histogram itl;
};

metrics *metrics_create(void) {
  metrics *m = calloc(1, sizeof *m);
  if (m) pthread_mutex_init(&m->mu, NULL);
  return m;
}

void metrics_destroy(metrics *m) {
  if (!m) return;
  pthread_mutex_destroy(&m->mu);
  free(m);
}

void metrics_count_response(metrics *m, unsigned status) {
  if (status >= STATUS_MAX) return;
  pthread_mutex_lock(&m->mu);
  m->by_status[status]++;
  pthread_mutex_unlock(&m->mu);
}

void metrics_add_tokens(metrics *m, int64_t prompt, int64_t generated) {
  pthread_mutex_lock(&m->mu);
  m->prompt_tokens += prompt;
  m->generated_tokens += generated;
  pthread_mutex_unlock(&m->mu);
}

static void observe(metrics *m, histogram *h, const double *bounds, size_t nb,
                    double v) {
  size_t i = 0;
  while (i < nb && v > bounds[i])
    i++;
  pthread_mutex_lock(&m->mu);
  h->counts[i]++;
  h->n++;
  h->sum += v;
  pthread_mutex_unlock(&m->mu);
}

void metrics_observe_ttft(metrics *m, double s) {
  observe(m, &m->ttft, TTFT_BUCKETS, N_TTFT, s);
}

void metrics_observe_itl(metrics *m, double s) {
  observe(m, &m->itl, ITL_BUCKETS, N_ITL, s);
}

/* A growable text buffer local to rendering. */
typedef struct text {
  char *p;
  size_t len, cap;
  int failed;
} text;

__attribute__((format(printf, 2, 3))) static void put(text *t, const char *fmt,
                                                      ...) {
  if (t->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->failed = 1;
      return;
    }
    if ((size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = (t->cap + (size_t)n + 1) * 2;
    char *grown = realloc(t->p, cap);
    if (!grown) {
      t->failed = 1;
      return;
    }
    t->p = grown;
    t->cap = cap;
  }
}

static void put_histogram(text *t, const char *name, const char *help,
                          const histogram *h, const double *bounds, size_t nb) {
  put(t, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  uint64_t cum = 0;
  for (size_t i = 0; i < nb; i++) {
    cum += h->counts[i];
    put(t, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i],
        (unsigned long long)cum);
  }
  put(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->n);
  put(t, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name,
      (unsigned long long)h->n);
}

/* Speculative decoding: drafted and accepted tokens per drafter, the
 * verifying steps by how many drafts they kept, and the draft model's
 * forward calls. */
static void put_spec(text *t, const nucleus_engine_stats *s) {
  static const char *const series[2][2] = {
      {"nucleus_spec_drafted_tokens_total", "Tokens drafted, by drafter."},
      {"nucleus_spec_accepted_tokens_total",
       "Drafted tokens the model kept, by drafter."}};
  for (int k = 0; k < 2; k++) {
    put(t, "# HELP %s %s\n# TYPE %s counter\n", series[k][0], series[k][1],
        series[k][0]);
    for (int d = 1; d < NUCLEUS_SPEC_TYPE_COUNT; d++)
      put(t, "%s{drafter=\"%s\"} %lld\n", series[k][0],
          nucleus_spec_type_name((nucleus_spec_type)d),
          (long long)(k ? s->spec_accepted_total[d]
                        : s->spec_drafted_total[d]));
  }
  put(t, "# HELP nucleus_spec_accepted_per_step Steps that verified drafts, "
         "by drafts kept (le: at most).\n"
         "# TYPE nucleus_spec_accepted_per_step histogram\n");
  long long cum = 0, sum = 0;
  for (int i = 0; i <= NUCLEUS_MAX_DRAFT; i++) {
    cum += s->spec_accepted_hist[i];
    sum += (long long)i * s->spec_accepted_hist[i];
    if (i <= 8 || i == 16 || i == 32 || i == NUCLEUS_MAX_DRAFT)
      put(t, "nucleus_spec_accepted_per_step_bucket{le=\"%d\"} %lld\n", i, cum);
  }
  put(t, "nucleus_spec_accepted_per_step_bucket{le=\"+Inf\"} %lld\n", cum);
  put(t, "nucleus_spec_accepted_per_step_sum %lld\n", sum);
  put(t, "nucleus_spec_accepted_per_step_count %lld\n", cum);
  put(t,
      "# HELP nucleus_spec_draft_forward_calls_total The draft model's "
      "forward calls (each serves every completion drafting in a step).\n"
      "# TYPE nucleus_spec_draft_forward_calls_total counter\n"
      "nucleus_spec_draft_forward_calls_total %lld\n",
      (long long)s->spec_draft_forwards_total);
}

static void put_gauge(text *t, const char *name, const char *type,
                      const char *help, long long v) {
  put(t, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type, name,
      v);
}

char *metrics_render(metrics *m, const nucleus_engine_stats *stats,
                     size_t in_flight) {
  text t = {.cap = 4096};
  t.p = malloc(t.cap);
  if (!t.p) return NULL;
  t.p[0] = '\0';
  pthread_mutex_lock(&m->mu);
  put(&t, "# HELP nucleus_requests_total HTTP requests answered, by status.\n"
          "# TYPE nucleus_requests_total counter\n");
  for (unsigned s = 0; s < STATUS_MAX; s++)
    if (m->by_status[s])
      put(&t, "nucleus_requests_total{status=\"%u\"} %llu\n", s,
          (unsigned long long)m->by_status[s]);
  put_gauge(&t, "nucleus_prompt_tokens_total", "counter",
            "Prompt tokens of admitted requests.", (long long)m->prompt_tokens);
  put_gauge(&t, "nucleus_generation_tokens_total", "counter",
            "Tokens generated.", (long long)m->generated_tokens);
  put_histogram(&t, "nucleus_time_to_first_token_seconds",
                "Time from admission to the first generated token.", &m->ttft,
                TTFT_BUCKETS, N_TTFT);
  put_histogram(&t, "nucleus_inter_token_latency_seconds",
                "Time between two tokens of one completion.", &m->itl,
                ITL_BUCKETS, N_ITL);
  pthread_mutex_unlock(&m->mu);
  put_gauge(&t, "nucleus_requests_in_flight", "gauge",
            "Requests admitted and not yet finished.", (long long)in_flight);
  if (stats) {
    put_gauge(&t, "nucleus_queue_length", "gauge",
              "Requests waiting for the engine.", stats->queued);
    put_gauge(&t, "nucleus_requests_running", "gauge",
              "Sequences the engine is running.", stats->running);
    put_gauge(&t, "nucleus_kv_blocks_used", "gauge", "KV cache blocks in use.",
              (long long)stats->kv_blocks_used);
    put_gauge(&t, "nucleus_kv_blocks_free", "gauge", "KV cache blocks free.",
              (long long)stats->kv_blocks_free);
    put_gauge(&t, "nucleus_engine_steps_total", "counter", "Engine steps run.",
              (long long)stats->steps_total);
    put_gauge(&t, "nucleus_preemptions_total", "counter",
              "Sequences preempted for KV space.",
              (long long)stats->preemptions_total);
    put_gauge(&t, "nucleus_prefix_cache_queried_tokens_total", "counter",
              "Prompt tokens looked up in the prefix cache.",
              (long long)stats->prefix_cache_queried_tokens_total);
    put_gauge(&t, "nucleus_prefix_cache_hit_tokens_total", "counter",
              "Prompt tokens whose KV came from the prefix cache.",
              (long long)stats->prefix_cache_hit_tokens_total);
    put_gauge(&t, "nucleus_prefix_cache_blocks", "gauge",
              "KV blocks the prefix cache names (held or reusable).",
              (long long)stats->prefix_cache_blocks);
    put_gauge(&t, "nucleus_prefix_cache_evictions_total", "counter",
              "Cached KV blocks evicted for other content.",
              (long long)stats->prefix_cache_evictions_total);
    put_gauge(&t, "nucleus_state_bytes", "gauge",
              "Bytes of the sequences' recurrent-state slots (hybrid "
              "models).",
              (long long)stats->state_bytes);
    put_gauge(&t, "nucleus_state_snapshots", "gauge",
              "Recurrent-state snapshots the prefix cache holds.",
              (long long)stats->state_snapshots);
    put_gauge(&t, "nucleus_state_snapshot_bytes", "gauge",
              "Bytes of the recurrent-state snapshots' buffers.",
              (long long)stats->state_snapshot_bytes);
    put_gauge(&t, "nucleus_images_encoded_total", "counter",
              "Images the vision encoder ran on (a picture repeated in a "
              "request is encoded once).",
              (long long)stats->images_encoded_total);
    put_gauge(&t, "nucleus_image_rows_batched_total", "counter",
              "Patch rows that went through a vision layer's weight "
              "products together with another image's.",
              (long long)stats->image_rows_batched);
    put_spec(&t, stats);
  }
  if (t.failed) {
    free(t.p);
    return NULL;
  }
  return t.p;
}
