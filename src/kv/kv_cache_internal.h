/* kv_cache_internal: the pool's state, shared by kv_cache.c (blocks and
 * sequences) and kv_prefix.c (the content-addressed index and its LRU). */
#ifndef NC_KV_CACHE_INTERNAL_H
#define NC_KV_CACHE_INTERNAL_H

#include "kv_cache.h"

/* Layer groups: every layer of a model without sliding windows is in group
 * 0; a model with them keeps its global layers in group 0 and its
 * sliding-window layers in group 1, each group with its own blocks. */
enum { NC_KV_GLOBAL = 0, NC_KV_SWA = 1, NC_KV_MAX_GROUPS = 2 };

typedef struct kv_seq {
  bool live;
  int32_t len;      /* positions written */
  int32_t n_blocks; /* entries in each group's table */
  int32_t cap;      /* allocated entries of each table */
  /* per group: block ids, entry i for positions [i * bt, (i + 1) * bt);
   * in the SWA group the entries below swa_first are -1 (released) */
  int32_t *blocks[NC_KV_MAX_GROUPS];
  int32_t swa_first;
  /* Content addressing: the chain hash of its first n_chained full blocks
   * (chain: the hash of block n_chained - 1, or the salt's root). */
  int32_t n_chained;
  uint64_t chain;
  uint64_t root; /* the salt's hash */
  /* the table entry whose block holds its rolling snapshot (-1: none) */
  int32_t snap_roll;
} kv_seq;

/* Block ids of all groups share one numbering: group g owns the ids
 * [g_first[g], g_first[g] + g_blocks[g]). A block is in one of three
 * states: taken (refcount > 0), cached (refcount 0, hashed: on its group's
 * LRU list, reusable or evictable) or free (refcount 0, not hashed: on its
 * group's free list). */
/* One layer's rows: its group, the bytes of one position's K (V) row, its
 * Hadamard rotation widths (0: none), and where its rows start: a global
 * layer's slab in k (v), a SWA layer's part of each SWA block (bytes). */
typedef struct kv_layer {
  int32_t group;
  size_t row_k, row_v;
  int32_t rot_k, rot_v;
  size_t off_k, off_v;
} kv_layer;

struct nc_kv_cache {
  int32_t n_layer, block_tokens, max_seqs;
  int64_t n_blocks; /* all groups */
  int32_t n_groups; /* 1, or 2 with sliding-window layers */
  int32_t window;   /* n_swa of the SWA group's layers (0: none) */
  int64_t g_first[NC_KV_MAX_GROUPS], g_blocks[NC_KV_MAX_GROUPS];
  kv_layer *layers;                   /* [n_layer] */
  int32_t g_layers[NC_KV_MAX_GROUPS]; /* layers per group */
  /* K (V) bytes of one block of each group, all its layers */
  size_t g_block_k[NC_KV_MAX_GROUPS], g_block_v[NC_KV_MAX_GROUPS];
  nc_kv_types types; /* of every group's rows */
  /* The global group: per global layer, its blocks x block_tokens rows. */
  uint8_t *k, *v;
  /* The SWA group: per block, its layers x block_tokens rows; storage for
   * the first swa_alloc of the group's blocks, grown (doubling) as blocks
   * past them are taken: what is allocated follows what the windows hold
   * at most, never the group's bound (g_blocks). */
  uint8_t *k_swa, *v_swa;
  int64_t swa_alloc;
  int32_t *refcount; /* [n_blocks] */
  int32_t *free_list[NC_KV_MAX_GROUPS];
  int64_t n_free[NC_KV_MAX_GROUPS];
  kv_seq *seqs; /* [max_seqs] */

  /* The content index (kv_prefix.c), over the blocks of every group: a
   * lookup matches the group too. */
  bool *hashed;       /* [n_blocks] */
  uint64_t *hash;     /* [n_blocks]: chain hash of a hashed block */
  uint64_t *parent;   /* [n_blocks]: its parent's chain hash */
  int32_t *tokens;    /* [n_blocks * block_tokens]: its token ids */
  int32_t *hash_next; /* [n_blocks]: bucket chain */
  int32_t *buckets;   /* [n_buckets] */
  int64_t n_buckets;  /* a power of two */
  int32_t *lru_prev;  /* [n_blocks]: each group's cached (refcount 0) */
  int32_t *lru_next;  /* blocks, oldest release first */
  int32_t lru_head[NC_KV_MAX_GROUPS], lru_tail[NC_KV_MAX_GROUPS];
  int64_t n_cached[NC_KV_MAX_GROUPS]; /* blocks on the LRU lists */
  int64_t n_hashed[NC_KV_MAX_GROUPS]; /* hashed blocks, taken or not */
  int64_t evictions; /* cached blocks reused for other content */
  int32_t *scratch;  /* [n_blocks] zeroed counters (exclusive blocks) */

  /* Recurrent state (kv_state.c): state_floats per sequence; state[i] the
   * slot of sequence id i, NULL until that id first goes live. */
  int64_t state_floats;
  float **state; /* [max_seqs] */
  /* Checkpoints (kv_state.c): a copy of sequence i's state and the length
   * it was taken at (-1: none), NULL until first taken. */
  float **ckpt;      /* [max_seqs] */
  int32_t *ckpt_len; /* [max_seqs] */
  /* State snapshots (kv_snap.c): max_snaps slots, each a buffer of
   * state_floats (NULL until first used), the global block it is attached
   * to (-1: free) and its last use; block_snap[b]: b's slot or -1. */
  int32_t max_snaps;
  float **snap_buf;
  int32_t *snap_block;
  uint64_t *snap_stamp, snap_clock;
  int32_t *block_snap; /* [n_blocks] */
};

/* The group of block b. */
static inline int32_t nc_kv_block_group(const nc_kv_cache *kv, int32_t b) {
  return kv->n_groups > 1 && b >= kv->g_first[NC_KV_SWA] ? NC_KV_SWA
                                                         : NC_KV_GLOBAL;
}

/* kv_cache.c */
bool nc_kv_seq_grow_table(const nc_kv_cache *kv, kv_seq *q, int32_t need);
/* The first position a sequence of length len still reads in its
 * sliding-window layers (0 without them). */
int32_t nc_kv_swa_keep_from(const nc_kv_cache *kv, int32_t len);
/* Cuts seq to n_tokens positions (releasing the blocks past them), its
 * state left as it is. */
void nc_kv_seq_cut(nc_kv_cache *kv, kv_seq *q, int32_t n_tokens);

/* kv_state.c: gives sequence id s its slot, zeroed, or a copy of src's
 * (src >= 0), and no checkpoint; false when out of memory. */
bool nc_kv_state_init(nc_kv_cache *kv, int32_t s, int32_t src);
/* Frees the slots and checkpoints. */
void nc_kv_state_free(nc_kv_cache *kv);
void nc_kv_state_zero(nc_kv_cache *kv, int32_t s);

/* kv_snap.c: the slots (none without state); dropping block b's snapshot
 * (its content goes); moving from's to to when to has none (a duplicate
 * block's snapshot to the named twin); b's snapshot or NULL (touch: counts
 * as a use for the LRU). */
bool nc_kv_snap_alloc(nc_kv_cache *kv);
void nc_kv_snap_free_all(nc_kv_cache *kv);
void nc_kv_snap_drop(nc_kv_cache *kv, int32_t b);
void nc_kv_snap_move(nc_kv_cache *kv, int32_t from, int32_t to);
const float *nc_kv_snap_of(nc_kv_cache *kv, int32_t b, bool touch);

/* kv_prefix.c */
bool nc_kv_prefix_alloc(nc_kv_cache *kv);
void nc_kv_prefix_free(nc_kv_cache *kv);
/* A refcount-0 hashed block goes on its group's LRU tail / leaves it. */
void nc_kv_lru_push(nc_kv_cache *kv, int32_t b);
void nc_kv_lru_remove(nc_kv_cache *kv, int32_t b);
/* Drops a block from the index (it is about to hold other content). */
void nc_kv_unhash(nc_kv_cache *kv, int32_t b);

#endif
