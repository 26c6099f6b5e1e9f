/* kv_snap: snapshots of the recurrent state at block ends (kv_cache.h), so
 * that a state model's prefix can be reused: a hit must restore the state
 * its last block ends with, which the blocks alone do not hold.
 *
 * A snapshot belongs to one global block, the one whose last position it
 * follows; it goes with the block's content (the block freed unnamed, or
 * evicted from the index) and is only found through the index (a named
 * block). At most max_snaps exist (state_floats floats each, allocated as
 * first used); past that the least recently taken or hit one is dropped.
 * A sequence keeps one rolling snapshot: taking a rolling one drops its
 * previous rolling one, so a long generation holds one, not one per
 * block. */
#include <stdlib.h>
#include <string.h>

#include "kv_cache_internal.h"

/* The slot arrays for max_snaps snapshots, none taken. */
static bool alloc_slots(nc_kv_cache *kv) {
  kv->snap_buf = calloc((size_t)kv->max_snaps, sizeof *kv->snap_buf);
  kv->snap_block = malloc(sizeof(int32_t) * (size_t)kv->max_snaps);
  kv->snap_stamp = calloc((size_t)kv->max_snaps, sizeof *kv->snap_stamp);
  if (!kv->snap_buf || !kv->snap_block || !kv->snap_stamp) return false;
  for (int32_t i = 0; i < kv->max_snaps; i++)
    kv->snap_block[i] = -1;
  return true;
}

bool nc_kv_snap_alloc(nc_kv_cache *kv) {
  kv->max_snaps = kv->state_floats > 0 ? kv->max_seqs : 0;
  if (kv->max_snaps == 0) return true;
  kv->block_snap = malloc(sizeof(int32_t) * (size_t)kv->n_blocks);
  if (!kv->block_snap) return false;
  for (int64_t b = 0; b < kv->n_blocks; b++)
    kv->block_snap[b] = -1;
  return alloc_slots(kv);
}

nc_code nc_kv_snaps_set_max(nc_kv_cache *kv, int32_t n, nc_error *err) {
  if (n < 1 || n > NC_KV_MAX_SNAPS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "state snapshots: %d, must be in [1, %d]", (int)n,
                   NC_KV_MAX_SNAPS);
  if (kv->max_snaps == 0) return NC_OK; /* no state: nothing to keep */
  for (int32_t i = 0; i < kv->max_snaps; i++)
    if (kv->snap_buf[i])
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "state snapshots: the bound is set before the first "
                     "snapshot is taken");
  free(kv->snap_buf);
  free(kv->snap_block);
  free(kv->snap_stamp);
  kv->max_snaps = n;
  if (!alloc_slots(kv)) {
    free(kv->snap_buf);
    free(kv->snap_block);
    free(kv->snap_stamp);
    kv->snap_buf = NULL;
    kv->snap_block = NULL;
    kv->snap_stamp = NULL;
    kv->max_snaps = 0;
    return nc_fail(err, NC_ERR_NOMEM, "state snapshots: out of memory");
  }
  return NC_OK;
}

void nc_kv_snap_free_all(nc_kv_cache *kv) {
  for (int32_t i = 0; kv->snap_buf && i < kv->max_snaps; i++)
    free(kv->snap_buf[i]);
  free(kv->snap_buf);
  free(kv->block_snap);
  free(kv->snap_block);
  free(kv->snap_stamp);
}

static void detach(nc_kv_cache *kv, int32_t slot) {
  const int32_t b = kv->snap_block[slot];
  if (b >= 0) kv->block_snap[b] = -1;
  kv->snap_block[slot] = -1;
}

void nc_kv_snap_drop(nc_kv_cache *kv, int32_t b) {
  if (kv->max_snaps > 0 && b >= 0 && kv->block_snap[b] >= 0)
    detach(kv, kv->block_snap[b]);
}

void nc_kv_snap_move(nc_kv_cache *kv, int32_t from, int32_t to) {
  if (kv->max_snaps == 0 || kv->block_snap[from] < 0 || kv->block_snap[to] >= 0)
    return;
  const int32_t slot = kv->block_snap[from];
  kv->block_snap[from] = -1;
  kv->block_snap[to] = slot;
  kv->snap_block[slot] = to;
}

const float *nc_kv_snap_of(nc_kv_cache *kv, int32_t b, bool touch) {
  if (kv->max_snaps == 0 || b < 0 || kv->block_snap[b] < 0) return NULL;
  const int32_t slot = kv->block_snap[b];
  if (touch) kv->snap_stamp[slot] = ++kv->snap_clock;
  return kv->snap_buf[slot];
}

/* A slot for a new snapshot: a free one, else the least recently used of
 * those on a named block (one on an unnamed block may be the target of a
 * row of the step being built); -1 when there is none. */
static int32_t slot_for_new(nc_kv_cache *kv) {
  int32_t lru = -1;
  for (int32_t i = 0; i < kv->max_snaps; i++) {
    if (kv->snap_block[i] < 0) return i;
    if (kv->hashed[kv->snap_block[i]] &&
        (lru < 0 || kv->snap_stamp[i] < kv->snap_stamp[lru]))
      lru = i;
  }
  if (lru >= 0) detach(kv, lru);
  return lru;
}

float *nc_kv_snap_take(nc_kv_cache *kv, int32_t seq, int32_t end,
                       bool rolling) {
  if (!kv || kv->max_snaps == 0 || seq < 0 || seq >= kv->max_seqs ||
      !kv->seqs[seq].live)
    return NULL;
  kv_seq *q = &kv->seqs[seq];
  const int32_t bt = kv->block_tokens;
  if (end < bt || end % bt != 0 || end / bt > q->n_blocks) return NULL;
  const int32_t i = end / bt - 1, b = q->blocks[NC_KV_GLOBAL][i];
  /* only the sequence's own block that this step writes */
  if (b < 0 || kv->refcount[b] != 1 || kv->hashed[b] || q->len >= end)
    return NULL;
  if (rolling && q->snap_roll >= 0 && q->snap_roll < q->n_blocks &&
      q->snap_roll != i)
    nc_kv_snap_drop(kv, q->blocks[NC_KV_GLOBAL][q->snap_roll]);
  int32_t slot = kv->block_snap[b];
  if (slot < 0) slot = slot_for_new(kv);
  if (slot < 0) return NULL;
  if (!kv->snap_buf[slot]) {
    kv->snap_buf[slot] = malloc(sizeof(float) * (size_t)kv->state_floats);
    if (!kv->snap_buf[slot]) return NULL;
  }
  kv->snap_block[slot] = b;
  kv->block_snap[b] = slot;
  kv->snap_stamp[slot] = ++kv->snap_clock;
  if (rolling) q->snap_roll = i;
  return kv->snap_buf[slot];
}

int32_t nc_kv_snaps_held(const nc_kv_cache *kv) {
  int32_t n = 0;
  for (int32_t i = 0; i < kv->max_snaps; i++)
    n += kv->snap_block[i] >= 0;
  return n;
}

int32_t nc_kv_snaps_max(const nc_kv_cache *kv) {
  return kv->max_snaps;
}

size_t nc_kv_snap_bytes(const nc_kv_cache *kv) {
  size_t n = 0;
  for (int32_t i = 0; i < kv->max_snaps; i++)
    n += kv->snap_buf[i] != NULL;
  return n * (size_t)kv->state_floats * sizeof(float);
}
