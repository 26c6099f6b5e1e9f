/* sampler_peer: llama.cpp's sampler chain, loaded at run time from
 * libllama.so ($LLAMA_LIB, else llama-cpp-python's copy, else the loader's
 * search path), driven the way llama_sampler_sample drives it: fill the
 * (id, logit, p) array from the logits, apply the chain, read the choice.
 * The speed peer for bench/sampler.c. */
#ifndef BENCH_SAMPLER_PEER_H
#define BENCH_SAMPLER_PEER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct peer_lib peer_lib;
typedef struct peer_chain peer_chain;

/* The settings of one bench config, in llama.cpp's default chain order:
 * logit bias, penalties, top-k, top-p, min-p, temperature, dist (greedy
 * when temperature == 0). */
typedef struct peer_settings {
  float temperature;
  int32_t top_k;
  float top_p, min_p;
  float repetition, frequency, presence;
  int32_t penalty_last_n;
  const int32_t *bias_tokens;
  const float *bias_values;
  int32_t n_bias;
} peer_settings;

peer_lib *peer_load(void); /* NULL when libllama.so is not found */
void peer_unload(peer_lib *lib);
const char *peer_path(const peer_lib *lib);

peer_chain *peer_chain_create(peer_lib *lib, const peer_settings *s,
                              int32_t n_vocab, uint32_t seed);
void peer_chain_free(peer_chain *c);
void peer_accept(peer_chain *c, int32_t token);
/* One row: returns the chosen token. */
int32_t peer_sample(peer_chain *c, const float *logits);

#endif
