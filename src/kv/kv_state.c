/* kv_state: the recurrent-state slots of the sequences (kv_cache.h). */
#include <stdlib.h>
#include <string.h>

#include "kv_cache.h"
#include "kv_cache_internal.h"

bool nc_kv_state_init(nc_kv_cache *kv, int32_t s, int32_t src) {
  if (kv->state_floats == 0) return true;
  const size_t bytes = (size_t)kv->state_floats * sizeof(float);
  if (!kv->state[s]) {
    kv->state[s] = malloc(bytes);
    if (!kv->state[s]) return false;
  }
  if (src >= 0)
    memcpy(kv->state[s], kv->state[src], bytes);
  else
    memset(kv->state[s], 0, bytes);
  return true;
}

void nc_kv_state_zero(nc_kv_cache *kv, int32_t s) {
  if (kv->state_floats > 0 && kv->state[s])
    memset(kv->state[s], 0, (size_t)kv->state_floats * sizeof(float));
}

float *nc_kv_seq_state(nc_kv_cache *kv, int32_t seq) {
  if (!kv || kv->state_floats == 0 || !nc_kv_seq_is_live(kv, seq)) return NULL;
  return kv->state[seq];
}

int64_t nc_kv_state_floats(const nc_kv_cache *kv) {
  return kv->state_floats;
}

size_t nc_kv_state_bytes(const nc_kv_cache *kv) {
  size_t n = 0;
  for (int32_t i = 0; kv->state_floats > 0 && i < kv->max_seqs; i++)
    if (kv->state[i]) n++;
  return n * (size_t)kv->state_floats * sizeof(float);
}
