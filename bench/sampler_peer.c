#include "sampler_peer.h"

#include <dlfcn.h>
#include <stdlib.h>

/* The parts of llama.h's C ABI used here (llama.cpp as shipped in
 * llama-cpp-python 0.3.36). */
typedef struct ll_token_data {
  int32_t id;
  float logit;
  float p;
} ll_token_data;
typedef struct ll_token_data_array {
  ll_token_data *data;
  size_t size;
  int64_t selected;
  bool sorted;
} ll_token_data_array;
typedef struct ll_chain_params {
  bool no_perf;
} ll_chain_params;
typedef struct ll_logit_bias {
  int32_t token;
  float bias;
} ll_logit_bias;
typedef struct ll_sampler ll_sampler;

struct peer_lib {
  void *handle;
  const char *path;
  ll_chain_params (*chain_default_params)(void);
  ll_sampler *(*chain_init)(ll_chain_params);
  void (*chain_add)(ll_sampler *, ll_sampler *);
  ll_sampler *(*init_greedy)(void);
  ll_sampler *(*init_dist)(uint32_t);
  ll_sampler *(*init_top_k)(int32_t);
  ll_sampler *(*init_top_p)(float, size_t);
  ll_sampler *(*init_min_p)(float, size_t);
  ll_sampler *(*init_temp)(float);
  ll_sampler *(*init_penalties)(int32_t, int32_t, float, float, float);
  ll_sampler *(*init_logit_bias)(int32_t, int32_t, const ll_logit_bias *);
  void (*apply)(ll_sampler *, ll_token_data_array *);
  void (*accept)(ll_sampler *, int32_t);
  void (*free_sampler)(ll_sampler *);
};

struct peer_chain {
  const peer_lib *lib;
  ll_sampler *chain;
  ll_token_data *cur;
  int32_t n_vocab;
};

#define SYM(field, name)                                                       \
  do {                                                                         \
    *(void **)&lib->field = dlsym(h, name);                                    \
    if (!lib->field) goto fail;                                                \
  } while (0)

peer_lib *peer_load(void) {
  const char *guess[] = {
      getenv("LLAMA_LIB"),
      "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/llama_cpp/"
      "lib/libllama.so",
      "libllama.so",
  };
  for (size_t i = 0; i < sizeof guess / sizeof guess[0]; i++) {
    if (!guess[i]) continue;
    void *h = dlopen(guess[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    peer_lib *lib = calloc(1, sizeof *lib);
    if (!lib) {
      dlclose(h);
      return NULL;
    }
    lib->handle = h, lib->path = guess[i];
    SYM(chain_default_params, "llama_sampler_chain_default_params");
    SYM(chain_init, "llama_sampler_chain_init");
    SYM(chain_add, "llama_sampler_chain_add");
    SYM(init_greedy, "llama_sampler_init_greedy");
    SYM(init_dist, "llama_sampler_init_dist");
    SYM(init_top_k, "llama_sampler_init_top_k");
    SYM(init_top_p, "llama_sampler_init_top_p");
    SYM(init_min_p, "llama_sampler_init_min_p");
    SYM(init_temp, "llama_sampler_init_temp");
    SYM(init_penalties, "llama_sampler_init_penalties");
    SYM(init_logit_bias, "llama_sampler_init_logit_bias");
    SYM(apply, "llama_sampler_apply");
    SYM(accept, "llama_sampler_accept");
    SYM(free_sampler, "llama_sampler_free");
    return lib;
  fail:
    free(lib);
    dlclose(h);
  }
  return NULL;
}

void peer_unload(peer_lib *lib) {
  if (!lib) return;
  dlclose(lib->handle);
  free(lib);
}

const char *peer_path(const peer_lib *lib) {
  return lib->path;
}

peer_chain *peer_chain_create(peer_lib *lib, const peer_settings *s,
                              int32_t n_vocab, uint32_t seed) {
  peer_chain *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->lib = lib, c->n_vocab = n_vocab;
  c->cur = malloc((size_t)n_vocab * sizeof *c->cur);
  ll_chain_params cp = lib->chain_default_params();
  cp.no_perf = true;
  c->chain = lib->chain_init(cp);
  if (!c->cur || !c->chain) {
    peer_chain_free(c);
    return NULL;
  }
  if (s->n_bias > 0) {
    ll_logit_bias *b = malloc((size_t)s->n_bias * sizeof *b);
    if (!b) {
      peer_chain_free(c);
      return NULL;
    }
    for (int32_t i = 0; i < s->n_bias; i++)
      b[i] = (ll_logit_bias){s->bias_tokens[i], s->bias_values[i]};
    lib->chain_add(c->chain, lib->init_logit_bias(n_vocab, s->n_bias, b));
    free(b);
  }
  if (s->repetition != 1.0f || s->frequency != 0.0f || s->presence != 0.0f)
    lib->chain_add(c->chain, lib->init_penalties(n_vocab, s->penalty_last_n,
                                                 s->repetition, s->frequency,
                                                 s->presence));
  if (s->temperature == 0.0f) {
    lib->chain_add(c->chain, lib->init_greedy());
    return c;
  }
  if (s->top_k > 0) lib->chain_add(c->chain, lib->init_top_k(s->top_k));
  if (s->top_p < 1.0f) lib->chain_add(c->chain, lib->init_top_p(s->top_p, 1));
  if (s->min_p > 0.0f) lib->chain_add(c->chain, lib->init_min_p(s->min_p, 1));
  if (s->temperature != 1.0f)
    lib->chain_add(c->chain, lib->init_temp(s->temperature));
  lib->chain_add(c->chain, lib->init_dist(seed));
  return c;
}

void peer_chain_free(peer_chain *c) {
  if (!c) return;
  if (c->chain) c->lib->free_sampler(c->chain);
  free(c->cur);
  free(c);
}

void peer_accept(peer_chain *c, int32_t token) {
  c->lib->accept(c->chain, token);
}

int32_t peer_sample(peer_chain *c, const float *logits) {
  for (int32_t i = 0; i < c->n_vocab; i++)
    c->cur[i] = (ll_token_data){i, logits[i], 0.0f};
  ll_token_data_array a = {c->cur, (size_t)c->n_vocab, -1, false};
  c->lib->apply(c->chain, &a);
  if (a.selected < 0 || (size_t)a.selected >= a.size) return -1;
  return a.data[a.selected].id;
}
