/* kv_prefix: the content-addressed index of the paged KV cache.
 *
 * A full block is named by a hash chained over its parent's hash and its
 * token ids; the root of a chain is the hash of the request's salt. The
 * model and its kernel table are fixed for a cache, and the engine puts K/V
 * here only when every row takes one float order (its reuse orders,
 * batch.h), so (salt, token ids of every position up to the block's end)
 * is everything its K/V depend on.
 * A lookup also compares the stored parent hash and token ids, so a hash
 * collision cannot hand out another prefix's K/V.
 *
 * Hashed blocks whose refcount falls to 0 stay in the index, on an LRU
 * list (a finished sequence releases its last block first, so a prefix's
 * head is evicted last); the pool takes free blocks first, then evicts the
 * least recently released cached block. Sequences, forks (n > 1, beams)
 * and prefix hits all hold the same refcounted blocks: one mechanism.
 *
 * Sliding windows: a block's SWA part (the second group) is indexed under
 * the same name as its global part, while the sequence still holds it, and
 * is evicted on its own. A hit must find every SWA block from the window
 * start of its end on (nc_kv_swa_keep_from): the run of global blocks is
 * cut back to the longest such end, so that the reused K/V are those a cold
 * run would have (the rest is recomputed).
 *
 * Recurrent state: a hit also needs the state its last block ends with;
 * the run is cut back to the last block with a snapshot (kv_snap.c), which
 * the hit copies into the sequence's state slot. */
#include <stdlib.h>
#include <string.h>

#include "kv_cache_internal.h"

static uint64_t mix64(uint64_t x) { /* splitmix64's finalizer */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t nc_kv_salt_hash(const char *salt, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over the salt's bytes */
  for (size_t i = 0; salt && i < len; i++) {
    h ^= (unsigned char)salt[i];
    h *= 0x100000001b3ull;
  }
  return mix64(h ^ ((uint64_t)len << 32) ^ 0x6e75636c65757321ull);
}

static uint64_t block_hash(uint64_t parent, const int32_t *tokens, int32_t n) {
  uint64_t h = mix64(parent ^ 0x9e3779b97f4a7c15ull);
  for (int32_t i = 0; i < n; i++)
    h = mix64(h ^ (uint32_t)tokens[i] ^ ((uint64_t)i << 40));
  return h;
}

bool nc_kv_prefix_alloc(nc_kv_cache *kv) {
  const size_t n = (size_t)kv->n_blocks;
  int64_t nb = 1;
  while (nb < kv->n_blocks)
    nb *= 2;
  kv->n_buckets = nb;
  kv->hashed = calloc(n, sizeof *kv->hashed);
  kv->hash = calloc(n, sizeof *kv->hash);
  kv->parent = calloc(n, sizeof *kv->parent);
  kv->tokens = calloc(n * (size_t)kv->block_tokens, sizeof *kv->tokens);
  kv->hash_next = malloc(n * sizeof *kv->hash_next);
  kv->buckets = malloc((size_t)nb * sizeof *kv->buckets);
  kv->lru_prev = malloc(n * sizeof *kv->lru_prev);
  kv->lru_next = malloc(n * sizeof *kv->lru_next);
  kv->scratch = calloc(n, sizeof *kv->scratch);
  if (!kv->hashed || !kv->hash || !kv->parent || !kv->tokens ||
      !kv->hash_next || !kv->buckets || !kv->lru_prev || !kv->lru_next ||
      !kv->scratch)
    return false;
  for (int64_t i = 0; i < nb; i++)
    kv->buckets[i] = -1;
  for (int g = 0; g < NC_KV_MAX_GROUPS; g++)
    kv->lru_head[g] = kv->lru_tail[g] = -1;
  return true;
}

void nc_kv_prefix_free(nc_kv_cache *kv) {
  free(kv->hashed);
  free(kv->hash);
  free(kv->parent);
  free(kv->tokens);
  free(kv->hash_next);
  free(kv->buckets);
  free(kv->lru_prev);
  free(kv->lru_next);
  free(kv->scratch);
}

void nc_kv_lru_push(nc_kv_cache *kv, int32_t b) {
  const int32_t g = nc_kv_block_group(kv, b);
  kv->lru_prev[b] = kv->lru_tail[g];
  kv->lru_next[b] = -1;
  if (kv->lru_tail[g] >= 0)
    kv->lru_next[kv->lru_tail[g]] = b;
  else
    kv->lru_head[g] = b;
  kv->lru_tail[g] = b;
  kv->n_cached[g]++;
}

void nc_kv_lru_remove(nc_kv_cache *kv, int32_t b) {
  const int32_t g = nc_kv_block_group(kv, b);
  const int32_t p = kv->lru_prev[b], n = kv->lru_next[b];
  if (p >= 0)
    kv->lru_next[p] = n;
  else
    kv->lru_head[g] = n;
  if (n >= 0)
    kv->lru_prev[n] = p;
  else
    kv->lru_tail[g] = p;
  kv->n_cached[g]--;
}

static int64_t bucket_of(const nc_kv_cache *kv, uint64_t h) {
  return (int64_t)(h & (uint64_t)(kv->n_buckets - 1));
}

void nc_kv_unhash(nc_kv_cache *kv, int32_t b) {
  if (!kv->hashed[b]) return;
  int32_t *link = &kv->buckets[bucket_of(kv, kv->hash[b])];
  while (*link >= 0 && *link != b)
    link = &kv->hash_next[*link];
  if (*link == b) *link = kv->hash_next[b];
  kv->hashed[b] = false;
  nc_kv_snap_drop(kv, b);
  kv->n_hashed[nc_kv_block_group(kv, b)]--;
}

static const int32_t *block_tokens_of(const nc_kv_cache *kv, int32_t b) {
  return kv->tokens + (size_t)b * (size_t)kv->block_tokens;
}

/* The hashed block of group g named (parent, tokens), or -1. */
static int32_t lookup(const nc_kv_cache *kv, int32_t g, uint64_t h,
                      uint64_t parent, const int32_t *tokens) {
  const size_t bytes = sizeof(int32_t) * (size_t)kv->block_tokens;
  for (int32_t b = kv->buckets[bucket_of(kv, h)]; b >= 0; b = kv->hash_next[b])
    if (kv->hash[b] == h && kv->parent[b] == parent &&
        nc_kv_block_group(kv, b) == g &&
        memcmp(block_tokens_of(kv, b), tokens, bytes) == 0)
      return b;
  return -1;
}

static void insert(nc_kv_cache *kv, int32_t b, uint64_t h, uint64_t parent,
                   const int32_t *tokens) {
  kv->hashed[b] = true;
  kv->hash[b] = h;
  kv->parent[b] = parent;
  memcpy(kv->tokens + (size_t)b * (size_t)kv->block_tokens, tokens,
         sizeof(int32_t) * (size_t)kv->block_tokens);
  const int64_t k = bucket_of(kv, h);
  kv->hash_next[b] = kv->buckets[k];
  kv->buckets[k] = b;
  kv->n_hashed[nc_kv_block_group(kv, b)]++;
}

static kv_seq *live_seq(nc_kv_cache *kv, int32_t seq) {
  if (!kv || seq < 0 || seq >= kv->max_seqs || !kv->seqs[seq].live) return NULL;
  return &kv->seqs[seq];
}

/* Blocks a prompt of n_tokens may take from the cache: all its full blocks
 * but the one holding its last token (which must be fed for logits). */
static int32_t max_hit_blocks(const nc_kv_cache *kv, int32_t n_tokens) {
  return n_tokens > 0 ? (n_tokens - 1) / kv->block_tokens : 0;
}

/* The longest hit for tokens[0, n_tokens) under salt: the run of indexed
 * global blocks, cut back to the last end whose sliding-window blocks are
 * all indexed. *n_idle: the cached (refcount 0) global blocks among the
 * hit's. Returns the hit in blocks. */
static int32_t find_hit(nc_kv_cache *kv, uint64_t salt, const int32_t *tokens,
                        int32_t n_tokens, int64_t *n_idle) {
  *n_idle = 0;
  const int32_t bt = kv->block_tokens,
                max_blocks = max_hit_blocks(kv, n_tokens);
  uint64_t chain = salt;
  int32_t best = 0, run = 0; /* run: indexed SWA blocks ending at i */
  int64_t idle = 0;
  *n_idle = 0;
  for (int32_t i = 0; i < max_blocks; i++) {
    const int32_t *t = tokens + (size_t)i * (size_t)bt;
    const uint64_t h = block_hash(chain, t, bt);
    const int32_t b = lookup(kv, NC_KV_GLOBAL, h, chain, t);
    if (b < 0) break;
    if (kv->refcount[b] == 0) idle++;
    if (kv->n_groups > 1) {
      run = lookup(kv, NC_KV_SWA, h, chain, t) >= 0 ? run + 1 : 0;
      const int32_t need = i + 1 - nc_kv_swa_keep_from(kv, (i + 1) * bt) / bt;
      if (run < need) {
        chain = h;
        continue;
      }
    }
    if (kv->state_floats > 0 && !nc_kv_snap_of(kv, b, false)) {
      chain = h; /* no state to resume from at its end */
      continue;
    }
    best = i + 1;
    *n_idle = idle;
    chain = h;
  }
  return best;
}

int32_t nc_kv_prefix_peek(const nc_kv_cache *kv, uint64_t salt,
                          const int32_t *tokens, int32_t n_tokens,
                          int64_t *n_idle) {
  /* (find_hit changes nothing: it only reads the snapshots) */
  return find_hit((nc_kv_cache *)kv, salt, tokens, n_tokens, n_idle) *
         kv->block_tokens;
}

/* Takes block b (a hit) for a sequence. */
static void take_cached(nc_kv_cache *kv, int32_t b) {
  if (kv->refcount[b] == 0) nc_kv_lru_remove(kv, b);
  kv->refcount[b]++;
}

int32_t nc_kv_seq_attach_prefix(nc_kv_cache *kv, int32_t seq, uint64_t salt,
                                const int32_t *tokens, int32_t n_tokens) {
  kv_seq *q = live_seq(kv, seq);
  if (!q || q->len != 0 || q->n_blocks != 0) return 0;
  q->root = q->chain = salt;
  q->n_chained = 0;
  q->swa_first = 0;
  const int32_t bt = kv->block_tokens;
  int64_t idle;
  const int32_t hit = find_hit(kv, salt, tokens, n_tokens, &idle);
  if (hit == 0 || !nc_kv_seq_grow_table(kv, q, hit)) return 0;
  const int32_t first = nc_kv_swa_keep_from(kv, hit * bt) / bt;
  for (int32_t i = 0; i < hit; i++) {
    const int32_t *t = tokens + (size_t)i * (size_t)bt;
    const uint64_t h = block_hash(q->chain, t, bt);
    const int32_t b = lookup(kv, NC_KV_GLOBAL, h, q->chain, t);
    take_cached(kv, b);
    q->blocks[NC_KV_GLOBAL][i] = b;
    if (kv->n_groups > 1) {
      const int32_t s = i >= first ? lookup(kv, NC_KV_SWA, h, q->chain, t) : -1;
      if (s >= 0) take_cached(kv, s);
      q->blocks[NC_KV_SWA][i] = s;
    }
    q->chain = h;
    q->n_chained++;
  }
  q->n_blocks = hit;
  q->swa_first = kv->n_groups > 1 ? first : 0;
  q->len = hit * bt;
  if (kv->state_floats > 0)
    memcpy(kv->state[seq],
           nc_kv_snap_of(kv, q->blocks[NC_KV_GLOBAL][hit - 1], true),
           sizeof(float) * (size_t)kv->state_floats);
  return q->len;
}

void nc_kv_seq_publish(nc_kv_cache *kv, int32_t seq, const int32_t *tokens,
                       int32_t n_tokens) {
  kv_seq *q = live_seq(kv, seq);
  if (!q || !tokens) return;
  const int32_t bt = kv->block_tokens;
  const int32_t upto = (n_tokens < q->len ? n_tokens : q->len) / bt;
  for (int32_t i = q->n_chained; i < upto && i < q->n_blocks; i++) {
    const int32_t *t = tokens + (size_t)i * (size_t)bt;
    const uint64_t h = block_hash(q->chain, t, bt);
    /* A block already named (a hit, a fork's share) keeps its name; a
     * duplicate of another block's content stays private. The SWA part is
     * named while the sequence still holds it. */
    for (int32_t g = 0; g < kv->n_groups; g++) {
      const int32_t b = q->blocks[g][i];
      if (b < 0 || kv->hashed[b]) continue;
      const int32_t twin = lookup(kv, g, h, q->chain, t);
      if (twin < 0)
        insert(kv, b, h, q->chain, t);
      else /* its state snapshot to the named twin (same content) */
        nc_kv_snap_move(kv, b, twin);
    }
    q->chain = h;
    q->n_chained++;
  }
}

int64_t nc_kv_blocks_exclusive(nc_kv_cache *kv, const int32_t *seqs,
                               int32_t n_seqs) {
  for (int32_t s = 0; s < n_seqs; s++) {
    const kv_seq *q = live_seq(kv, seqs[s]);
    for (int32_t i = 0; q && i < q->n_blocks; i++)
      kv->scratch[q->blocks[NC_KV_GLOBAL][i]]++;
  }
  int64_t n = 0;
  for (int32_t s = 0; s < n_seqs; s++) {
    const kv_seq *q = live_seq(kv, seqs[s]);
    for (int32_t i = 0; q && i < q->n_blocks; i++) {
      const int32_t b = q->blocks[NC_KV_GLOBAL][i];
      if (kv->scratch[b] == 0) continue; /* counted already */
      if (kv->scratch[b] == kv->refcount[b]) n++;
      kv->scratch[b] = 0;
    }
  }
  return n;
}

int64_t nc_kv_blocks_cached(const nc_kv_cache *kv) {
  return kv->n_cached[NC_KV_GLOBAL];
}
int64_t nc_kv_blocks_hashed(const nc_kv_cache *kv) {
  return kv->n_hashed[NC_KV_GLOBAL];
}
int64_t nc_kv_evictions(const nc_kv_cache *kv) {
  return kv->evictions;
}
