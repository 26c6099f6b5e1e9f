/* Sampler cost: microseconds per row for greedy, top-k + top-p and the full
 * pipeline with penalties, at vocab 49,152 and 151,936, batch 1 and 64.
 * Logits are synthetic and different for every row, in two shapes:
 *   peaked: a bulk of sd 2.5 plus 24 plausible tokens 6-16 above it (what a
 *           language model usually gives: top-p 0.95 keeps a few tokens);
 *   flat:   sd 3, no plausible tokens (the worst case for top-p without
 *           top-k: the nucleus holds thousands of tokens).
 * Next to each: llama.cpp's sampler chain on the same rows and history
 * (bench/sampler_peer.c; its default order, no logprobs) and the ratio.
 *   make bench-sampler   (or build/release/bench/sampler [seconds]) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/rng.h"
#include "sampler_peer.h"
#include "sampling/sampler.h"

/* Thread CPU time, not wall time: the machine is shared, and time spent
 * descheduled is not the sampler's cost. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fill_logits(float *x, int32_t n, uint64_t seed, bool peaked) {
  double sd = peaked ? 2.5 : 3.0;
  for (int32_t i = 0; i < n; i++) {
    double a = nc_rng_uniform(seed, 1, (uint64_t)i, 0);
    double b = nc_rng_uniform(seed, 1, (uint64_t)i, 1);
    double c = nc_rng_uniform(seed, 1, (uint64_t)i, 2);
    x[i] = (float)(sd * 2.0 * (a + b + c - 1.5)); /* sum of 3 U: sd 0.5 */
  }
  if (peaked)
    for (int32_t k = 0; k < 24; k++) {
      int32_t t = (int32_t)(nc_mix64(seed * 100 + (uint64_t)k) % (uint64_t)n);
      x[t] = (float)(6.0 + 10.0 * nc_rng_uniform(seed, 2, (uint64_t)k, 0));
    }
}

typedef struct config {
  const char *name;
  nucleus_sampling_params p;
  bool history; /* 512 prompt + 256 output tokens of history */
} config;

enum { N_PROMPT = 512, N_OUTPUT = 256 };

static int32_t history_token(int32_t r, int32_t i, int32_t V) {
  if (i < N_PROMPT)
    return (int32_t)(nc_mix64((uint64_t)(r * 1000 + i)) % (uint64_t)V);
  return (int32_t)(nc_mix64((uint64_t)(i - N_PROMPT)) % 3000);
}

static int bench(const config *c, int32_t V, int32_t batch, float *logits,
                 nc_sample_workspace *ws, double seconds, double *us_per_row) {
  nc_sampler **s = calloc((size_t)batch, sizeof *s);
  nc_sample_row *rows = calloc((size_t)batch, sizeof *rows);
  nc_sample_result *res = calloc((size_t)batch, sizeof *res);
  nc_error err = {0};
  for (int32_t r = 0; r < batch; r++) {
    if (nc_sampler_create(&c->p, V, 42 + (uint64_t)r, 0, &s[r], &err)) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    if (c->history) {
      for (int32_t i = 0; i < N_PROMPT; i++) {
        int32_t t = history_token(r, i, V);
        nc_sampler_accept_prompt(s[r], &t, 1);
      }
      for (int32_t i = N_PROMPT; i < N_PROMPT + N_OUTPUT; i++)
        nc_sampler_accept(s[r], history_token(r, i, V));
    }
    rows[r] = (nc_sample_row){.sampler = s[r],
                              .logits = logits + (size_t)r * (size_t)V};
  }
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    int iters = 0;
    double t0 = now_s(), t1;
    do {
      if (nc_sample_batch(ws, rows, batch, res, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
      }
      for (int32_t r = 0; r < batch; r++)
        nc_sampler_accept(s[r], res[r].token);
      iters++;
      t1 = now_s();
    } while (t1 - t0 < seconds / 3);
    double us = (t1 - t0) * 1e6 / ((double)iters * batch);
    best = us < best ? us : best;
  }
  *us_per_row = best;
  for (int32_t r = 0; r < batch; r++)
    nc_sampler_free(s[r]);
  free(s);
  free(rows);
  free(res);
  return 0;
}

/* The same rows through llama.cpp's chain (-1 when it is missing). */
static double bench_peer(peer_lib *lib, const config *c, int32_t V,
                         int32_t batch, const float *logits, double seconds) {
  const nucleus_sampling_params *p = &c->p;
  int32_t bias_tokens[16];
  float bias_values[16];
  for (size_t i = 0; i < p->n_logit_bias && i < 16; i++)
    bias_tokens[i] = p->logit_bias[i].token,
    bias_values[i] = p->logit_bias[i].bias;
  peer_settings ps = {
      .temperature = p->temperature,
      .top_k = p->top_k,
      .top_p = p->top_p,
      .min_p = p->min_p,
      .repetition = p->repetition_penalty,
      .frequency = p->frequency_penalty,
      .presence = p->presence_penalty,
      .penalty_last_n = N_PROMPT + N_OUTPUT,
      .bias_tokens = bias_tokens,
      .bias_values = bias_values,
      .n_bias = (int32_t)(p->n_logit_bias < 16 ? p->n_logit_bias : 16),
  };
  peer_chain **ch = calloc((size_t)batch, sizeof *ch);
  for (int32_t r = 0; r < batch; r++) {
    ch[r] = peer_chain_create(lib, &ps, V, 42 + (uint32_t)r);
    if (!ch[r]) return -1;
    if (c->history)
      for (int32_t i = 0; i < N_PROMPT + N_OUTPUT; i++)
        peer_accept(ch[r], history_token(r, i, V));
  }
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    int iters = 0;
    double t0 = now_s(), t1;
    do {
      for (int32_t r = 0; r < batch; r++) {
        int32_t t = peer_sample(ch[r], logits + (size_t)r * (size_t)V);
        if (t >= 0) peer_accept(ch[r], t);
      }
      iters++;
      t1 = now_s();
    } while (t1 - t0 < seconds / 3);
    double us = (t1 - t0) * 1e6 / ((double)iters * batch);
    best = us < best ? us : best;
  }
  for (int32_t r = 0; r < batch; r++)
    peer_chain_free(ch[r]);
  free(ch);
  return best;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 0.2;
  static nucleus_logit_bias bias[10];
  for (int i = 0; i < 10; i++)
    bias[i] = (nucleus_logit_bias){i * 97, 1.5f};
  config cfg[5];
  for (int i = 0; i < 5; i++)
    cfg[i].p = nucleus_sampling_default_params();
  cfg[0].name = "greedy";
  cfg[0].p.temperature = 0.0f, cfg[0].history = false;
  cfg[1].name = "T=1, no truncation";
  cfg[1].history = false;
  cfg[2].name = "top-k 40 + top-p 0.95";
  cfg[2].p.temperature = 0.8f, cfg[2].p.top_k = 40, cfg[2].p.top_p = 0.95f;
  cfg[2].history = false;
  for (int i = 3; i < 5; i++) {
    nucleus_sampling_params *p = &cfg[i].p;
    p->temperature = 0.8f, p->top_p = 0.95f, p->min_p = 0.05f;
    p->repetition_penalty = 1.1f, p->presence_penalty = 0.5f;
    p->frequency_penalty = 0.5f, p->logit_bias = bias, p->n_logit_bias = 10;
    p->logprobs = true, p->top_logprobs = 5;
    cfg[i].history = true;
  }
  cfg[3].name = "full: top-k 40, top/min-p, penalties, bias, logprobs 5";
  cfg[3].p.top_k = 40;
  cfg[4].name = "full without top-k (top-p over the vocab)";
  const int32_t vocabs[2] = {49152, 151936};
  const int32_t batches[2] = {1, 64};
  peer_lib *lib = peer_load();
  printf("peer: %s\n", lib ? peer_path(lib) : "libllama.so not found");
  printf("%-58s %6s %8s %6s %10s %10s %7s\n", "config", "logits", "vocab",
         "batch", "us/row", "llama.cpp", "ratio");
  for (int vi = 0; vi < 4; vi++) {
    int32_t V = vocabs[vi / 2];
    bool peaked = vi % 2 == 0;
    float *logits = malloc(sizeof(float) * (size_t)V * 64);
    for (int r = 0; r < 64; r++)
      fill_logits(logits + (size_t)r * V, V, 7 + r, peaked);
    nc_sample_workspace *ws = NULL;
    if (nc_sample_workspace_create(V, &ws, NULL)) return 1;
    for (int ci = 0; ci < 5; ci++)
      for (int bi = 0; bi < 2; bi++) {
        double us;
        if (bench(&cfg[ci], V, batches[bi], logits, ws, seconds, &us)) return 1;
        double peer =
            lib ? bench_peer(lib, &cfg[ci], V, batches[bi], logits, seconds)
                : -1.0;
        printf("%-58s %6s %8d %6d %10.1f %10.1f %7.3f\n", cfg[ci].name,
               peaked ? "peaked" : "flat", V, batches[bi], us, peer,
               peer > 0 ? us / peer : 0.0);
        fflush(stdout);
      }
    nc_sample_workspace_free(ws);
    free(logits);
  }
  peer_unload(lib);
  return 0;
}
