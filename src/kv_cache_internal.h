/* kv_cache_internal: the pool's state, shared by kv_cache.c (blocks and
 * sequences) and kv_prefix.c (the content-addressed index and its LRU). */
#ifndef NC_KV_CACHE_INTERNAL_H
#define NC_KV_CACHE_INTERNAL_H

#include "kv_cache.h"

typedef struct kv_seq {
  bool live;
  int32_t len;      /* positions written */
  int32_t n_blocks; /* entries in blocks */
  int32_t cap;      /* allocated entries of blocks */
  int32_t *blocks;
  /* Content addressing: the chain hash of its first n_chained full blocks
   * (chain: the hash of block n_chained - 1, or the salt's root). */
  int32_t n_chained;
  uint64_t chain;
  uint64_t root; /* the salt's hash */
} kv_seq;

/* A block is in one of three states: taken (refcount > 0), cached
 * (refcount 0, hashed: on the LRU list, reusable or evictable) or free
 * (refcount 0, not hashed: on the free list). */
struct nc_kv_cache {
  int32_t n_layer, dim_k, dim_v, block_tokens, max_seqs;
  int64_t n_blocks;
  nc_kv_types types;
  size_t row_k, row_v;  /* bytes of one position's K (V) row of one layer */
  int32_t rot_k, rot_v; /* Hadamard rotation widths (0: none) */
  uint8_t *k, *v;
  int32_t *refcount; /* [n_blocks] */
  int32_t *free_list;
  int64_t n_free;
  kv_seq *seqs; /* [max_seqs] */

  /* The content index (kv_prefix.c). */
  bool *hashed;       /* [n_blocks] */
  uint64_t *hash;     /* [n_blocks]: chain hash of a hashed block */
  uint64_t *parent;   /* [n_blocks]: its parent's chain hash */
  int32_t *tokens;    /* [n_blocks * block_tokens]: its token ids */
  int32_t *hash_next; /* [n_blocks]: bucket chain */
  int32_t *buckets;   /* [n_buckets] */
  int64_t n_buckets;  /* a power of two */
  int32_t *lru_prev;  /* [n_blocks]: the cached (refcount 0) blocks, */
  int32_t *lru_next;  /* oldest release first */
  int32_t lru_head, lru_tail;
  int64_t n_cached;  /* blocks on the LRU list */
  int64_t n_hashed;  /* hashed blocks, taken or not */
  int64_t evictions; /* cached blocks reused for other content */
  int32_t *scratch;  /* [n_blocks] zeroed counters (exclusive blocks) */
};

/* kv_cache.c */
bool nc_kv_seq_grow_table(kv_seq *q, int32_t need);

/* kv_prefix.c */
bool nc_kv_prefix_alloc(nc_kv_cache *kv);
void nc_kv_prefix_free(nc_kv_cache *kv);
/* A refcount-0 hashed block goes on the LRU tail / leaves the list. */
void nc_kv_lru_push(nc_kv_cache *kv, int32_t b);
void nc_kv_lru_remove(nc_kv_cache *kv, int32_t b);
/* Drops a block from the index (it is about to hold other content). */
void nc_kv_unhash(nc_kv_cache *kv, int32_t b);

#endif
