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
  kv->ckpt_len[s] = -1;
  return true;
}

void nc_kv_state_free(nc_kv_cache *kv) {
  for (int32_t i = 0; kv->state && i < kv->max_seqs; i++)
    free(kv->state[i]);
  for (int32_t i = 0; kv->ckpt && i < kv->max_seqs; i++)
    free(kv->ckpt[i]);
  free(kv->state);
  free(kv->ckpt);
  free(kv->ckpt_len);
}

bool nc_kv_seq_checkpoint(nc_kv_cache *kv, int32_t seq) {
  float *st = nc_kv_seq_state(kv, seq);
  if (!st) return false;
  const size_t bytes = (size_t)kv->state_floats * sizeof(float);
  if (!kv->ckpt[seq] && !(kv->ckpt[seq] = malloc(bytes))) return false;
  memcpy(kv->ckpt[seq], st, bytes);
  kv->ckpt_len[seq] = nc_kv_seq_len(kv, seq);
  return true;
}

bool nc_kv_seq_rewind(nc_kv_cache *kv, int32_t seq) {
  float *st = nc_kv_seq_state(kv, seq);
  if (!st || kv->ckpt_len[seq] < 0 ||
      kv->ckpt_len[seq] > nc_kv_seq_len(kv, seq))
    return false;
  memcpy(st, kv->ckpt[seq], (size_t)kv->state_floats * sizeof(float));
  nc_kv_seq_cut(kv, &kv->seqs[seq], kv->ckpt_len[seq]);
  kv->ckpt_len[seq] = -1;
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
