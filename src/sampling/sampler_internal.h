/* sampler_internal: the sampler's state, shared by the files of the sampler
 * module (sampler.c owns it, sampler_batch.c reads it). */
#ifndef NC_SAMPLER_INTERNAL_H
#define NC_SAMPLER_INTERNAL_H

#include "sampler.h"

/* One distinct token seen in the prompt or the output. */
typedef struct nc_seen {
  int32_t token;
  int32_t count; /* occurrences in the output */
} nc_seen;

struct nc_sampler {
  nucleus_sampling_params p; /* array pointers point at the copies below */
  int32_t n_vocab;
  uint64_t seed, stream, step;
  nucleus_logit_bias *bias; /* clamped to [-100, 100] */
  int32_t *allowed;         /* sorted, unique; NULL = all */
  int32_t *banned;          /* sorted, unique */
  size_t n_bias, n_allowed, n_banned;
  bool has_allowed;
  /* Penalty history (kept only when a penalty is active): the distinct
   * tokens in seen[0..n_seen) and an open-addressing index into it. */
  bool track;
  nc_seen *seen;
  int32_t n_seen, cap_seen;
  int32_t *slots; /* -1 empty, else index into seen; n_slots a power of 2 */
  uint32_t n_slots;
};

#endif
