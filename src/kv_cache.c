/* kv_cache: a pool of refcounted blocks and a block table per sequence.
 *
 * Storage: one K array and one V array, laid out [layer][block][slot][row],
 * so that the positions of one block are contiguous for each layer; a row
 * is one position's n_head_kv heads in the cache's element type (F16, BF16,
 * or Q8_0/Q4_0 blocks of 32: each head quantized on its own since head_dim
 * is a multiple of the block). */
#include "kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "kv_cache_internal.h"

bool nc_kv_type_supported(nc_type t) {
  return t == NC_TYPE_F16 || t == NC_TYPE_BF16 || t == NC_TYPE_Q8_0 ||
         t == NC_TYPE_Q4_0;
}

size_t nc_kv_bytes_per_position(const nc_hparams *hp, nc_kv_types types) {
  return (size_t)hp->n_layer * (nc_row_size(types.k, nc_hp_n_embd_k(hp)) +
                                nc_row_size(types.v, nc_hp_n_embd_v(hp)));
}

size_t nc_kv_bytes_per_block(const nc_hparams *hp, int32_t block_tokens) {
  return (size_t)block_tokens * nc_kv_bytes_per_position(hp, NC_KV_TYPES_F16);
}

nc_code nc_kv_cache_create(const nc_hparams *hp, int64_t n_blocks,
                           int32_t block_tokens, int32_t max_seqs,
                           nc_kv_cache **out, nc_error *err) {
  return nc_kv_cache_create_typed(hp, NC_KV_TYPES_F16, n_blocks, block_tokens,
                                  max_seqs, out, err);
}

/* A row of n elements of type t: 0 when t is not a cache type or n is not a
 * multiple of its block. */
static size_t kv_row_bytes(nc_type t, int32_t n) {
  return nc_kv_type_supported(t) ? nc_row_size(t, n) : 0;
}

nc_code nc_kv_cache_create_typed(const nc_hparams *hp, nc_kv_types types,
                                 int64_t n_blocks, int32_t block_tokens,
                                 int32_t max_seqs, nc_kv_cache **out,
                                 nc_error *err) {
  *out = NULL;
  if (!kv_row_bytes(types.k, hp->head_dim) ||
      !kv_row_bytes(types.v, hp->head_dim_v))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "KV cache types K %s, V %s for head sizes %d, %d: each "
                   "must be F16, BF16, Q8_0 or Q4_0 and its block size "
                   "must divide the head size",
                   nc_type_name(types.k), nc_type_name(types.v),
                   (int)hp->head_dim, (int)hp->head_dim_v);
  if (n_blocks < 1 || n_blocks > INT32_MAX)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "KV cache blocks %lld: must be in [1, %d]",
                   (long long)n_blocks, INT32_MAX);
  if (block_tokens < 1 || block_tokens > (1 << 20))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "KV block size %d tokens: must be in [1, %d]",
                   (int)block_tokens, 1 << 20);
  if (max_seqs < 1 || max_seqs > (1 << 20))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "KV max sequences %d: must be in [1, %d]", (int)max_seqs,
                   1 << 20);
  if (n_blocks * (int64_t)block_tokens > INT32_MAX)
    return nc_fail(err, NC_ERR_LIMIT,
                   "KV cache of %lld blocks x %d tokens: over %d positions",
                   (long long)n_blocks, (int)block_tokens, INT32_MAX);
  nc_kv_cache *kv = calloc(1, sizeof *kv);
  if (!kv) return nc_fail(err, NC_ERR_NOMEM, "KV cache: out of memory");
  kv->n_layer = hp->n_layer;
  kv->dim_k = nc_hp_n_embd_k(hp);
  kv->dim_v = nc_hp_n_embd_v(hp);
  kv->types = types;
  kv->row_k = kv_row_bytes(types.k, kv->dim_k);
  kv->row_v = kv_row_bytes(types.v, kv->dim_v);
  kv->rot_k = nc_kv_rotation(types.k, hp->head_dim, true);
  kv->rot_v = nc_kv_rotation(types.v, hp->head_dim_v, false);
  kv->block_tokens = block_tokens;
  kv->max_seqs = max_seqs;
  kv->n_blocks = n_blocks;
  const size_t cells =
      (size_t)kv->n_layer * (size_t)n_blocks * (size_t)block_tokens;
  kv->k = calloc(cells, kv->row_k);
  kv->v = calloc(cells, kv->row_v);
  kv->refcount = calloc((size_t)n_blocks, sizeof(int32_t));
  kv->free_list = malloc((size_t)n_blocks * sizeof(int32_t));
  kv->seqs = calloc((size_t)max_seqs, sizeof(kv_seq));
  if (!kv->k || !kv->v || !kv->refcount || !kv->free_list || !kv->seqs ||
      !nc_kv_prefix_alloc(kv)) {
    const size_t bytes = (size_t)n_blocks * (size_t)block_tokens *
                         nc_kv_bytes_per_position(hp, types);
    nc_kv_cache_free(kv);
    return nc_fail(err, NC_ERR_NOMEM,
                   "KV cache of %lld blocks (%zu bytes): out of memory",
                   (long long)n_blocks, bytes);
  }
  /* Pop order: block 0 first. */
  for (int64_t i = 0; i < n_blocks; i++)
    kv->free_list[i] = (int32_t)(n_blocks - 1 - i);
  kv->n_free = n_blocks;
  *out = kv;
  return NC_OK;
}

void nc_kv_cache_free(nc_kv_cache *kv) {
  if (!kv) return;
  if (kv->seqs)
    for (int32_t i = 0; i < kv->max_seqs; i++)
      free(kv->seqs[i].blocks);
  free(kv->seqs);
  free(kv->k);
  free(kv->v);
  free(kv->refcount);
  free(kv->free_list);
  nc_kv_prefix_free(kv);
  free(kv);
}

static kv_seq *seq_get(const nc_kv_cache *kv, int32_t seq) {
  if (!kv || seq < 0 || seq >= kv->max_seqs || !kv->seqs[seq].live) return NULL;
  return &kv->seqs[seq];
}

bool nc_kv_seq_is_live(const nc_kv_cache *kv, int32_t seq) {
  return seq_get(kv, seq) != NULL;
}

static int32_t seq_slot(nc_kv_cache *kv) {
  for (int32_t i = 0; i < kv->max_seqs; i++)
    if (!kv->seqs[i].live) return i;
  return -1;
}

int32_t nc_kv_seq_new(nc_kv_cache *kv) {
  const int32_t s = seq_slot(kv);
  if (s < 0) return -1;
  kv_seq *q = &kv->seqs[s];
  q->live = true;
  q->len = 0;
  q->n_blocks = 0;
  q->n_chained = 0;
  q->root = q->chain = nc_kv_salt_hash(NULL, 0);
  return s;
}

static void block_release(nc_kv_cache *kv, int32_t b) {
  if (--kv->refcount[b] > 0) return;
  if (kv->hashed[b])
    nc_kv_lru_push(kv, b); /* cached: reusable until evicted */
  else
    kv->free_list[kv->n_free++] = b;
}

/* Blocks the pool can hand out: free ones, then cached ones (evicted). */
static int64_t available(const nc_kv_cache *kv) {
  return kv->n_free + kv->n_cached;
}

/* Caller checks available() first. */
static int32_t block_take(nc_kv_cache *kv) {
  int32_t b;
  if (kv->n_free > 0) {
    b = kv->free_list[--kv->n_free];
  } else {
    b = kv->lru_head; /* the least recently released cached block */
    nc_kv_lru_remove(kv, b);
    nc_kv_unhash(kv, b);
    kv->evictions++;
  }
  kv->refcount[b] = 1;
  return b;
}

void nc_kv_seq_free(nc_kv_cache *kv, int32_t seq) {
  kv_seq *q = seq_get(kv, seq);
  if (!q) return;
  /* Last block first: a cached prefix's head is evicted last. */
  for (int32_t i = q->n_blocks - 1; i >= 0; i--)
    block_release(kv, q->blocks[i]);
  q->n_blocks = 0;
  q->len = 0;
  q->live = false;
}

bool nc_kv_seq_grow_table(kv_seq *q, int32_t need) {
  if (need <= q->cap) return true;
  int32_t cap = q->cap ? q->cap : 8;
  while (cap < need)
    cap = cap > INT32_MAX / 2 ? need : cap * 2;
  int32_t *nb = realloc(q->blocks, sizeof(int32_t) * (size_t)cap);
  if (!nb) return false;
  q->blocks = nb;
  q->cap = cap;
  return true;
}

int32_t nc_kv_seq_fork(nc_kv_cache *kv, int32_t src) {
  kv_seq *p = seq_get(kv, src);
  if (!p) return -1;
  const int32_t s = seq_slot(kv);
  if (s < 0) return -1;
  kv_seq *q = &kv->seqs[s];
  if (!nc_kv_seq_grow_table(q, p->n_blocks)) return -1;
  memcpy(q->blocks, p->blocks, sizeof(int32_t) * (size_t)p->n_blocks);
  q->n_blocks = p->n_blocks;
  for (int32_t i = 0; i < q->n_blocks; i++)
    kv->refcount[q->blocks[i]]++;
  q->len = p->len;
  q->n_chained = p->n_chained;
  q->chain = p->chain;
  q->root = p->root;
  q->live = true;
  return s;
}

int64_t nc_kv_blocks_needed(const nc_kv_cache *kv, int32_t seq,
                            int32_t n_tokens_total) {
  const kv_seq *q = seq_get(kv, seq);
  if (!q) return -1;
  if (n_tokens_total <= q->len) return 0;
  const int64_t bt = kv->block_tokens;
  const int64_t last = ((int64_t)n_tokens_total - 1) / bt; /* last block */
  int64_t need = 0;
  /* Blocks that will be written: from the one holding position len. */
  for (int64_t i = q->len / bt; i <= last; i++) {
    if (i >= q->n_blocks)
      need++;
    else if (kv->refcount[q->blocks[i]] > 1 || kv->hashed[q->blocks[i]])
      need++; /* copy-on-write: shared, or named by its content */
  }
  return need;
}

static void block_copy(nc_kv_cache *kv, int32_t dst, int32_t src) {
  const size_t bt = (size_t)kv->block_tokens;
  for (int32_t l = 0; l < kv->n_layer; l++) {
    const size_t base = (size_t)l * (size_t)kv->n_blocks;
    memcpy(kv->k + ((base + (size_t)dst) * bt) * kv->row_k,
           kv->k + ((base + (size_t)src) * bt) * kv->row_k, bt * kv->row_k);
    memcpy(kv->v + ((base + (size_t)dst) * bt) * kv->row_v,
           kv->v + ((base + (size_t)src) * bt) * kv->row_v, bt * kv->row_v);
  }
}

nc_code nc_kv_seq_reserve(nc_kv_cache *kv, int32_t seq, int32_t n_tokens_total,
                          nc_error *err) {
  kv_seq *q = seq_get(kv, seq);
  if (!q)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "KV reserve: sequence %d is not live", (int)seq);
  if (n_tokens_total < 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "KV reserve: %d tokens is negative", (int)n_tokens_total);
  if (n_tokens_total <= q->len) return NC_OK;
  const int64_t need = nc_kv_blocks_needed(kv, seq, n_tokens_total);
  if (need > available(kv))
    return nc_fail(err, NC_ERR_BUSY,
                   "KV cache full: sequence %d needs %lld blocks for %d "
                   "tokens, %lld free of %lld",
                   (int)seq, (long long)need, (int)n_tokens_total,
                   (long long)available(kv), (long long)kv->n_blocks);
  const int32_t bt = kv->block_tokens;
  const int32_t last = (n_tokens_total - 1) / bt;
  if (!nc_kv_seq_grow_table(q, last + 1))
    return nc_fail(err, NC_ERR_NOMEM, "KV block table: out of memory");
  for (int32_t i = q->len / bt; i <= last; i++) {
    if (i >= q->n_blocks) {
      q->blocks[q->n_blocks++] = block_take(kv);
    } else if (kv->refcount[q->blocks[i]] > 1 || kv->hashed[q->blocks[i]]) {
      const int32_t nb = block_take(kv);
      block_copy(kv, nb, q->blocks[i]);
      block_release(kv, q->blocks[i]);
      q->blocks[i] = nb;
    }
  }
  return NC_OK;
}

void nc_kv_seq_truncate(nc_kv_cache *kv, int32_t seq, int32_t n_tokens) {
  kv_seq *q = seq_get(kv, seq);
  if (!q || n_tokens < 0) return;
  if (n_tokens < q->len) q->len = n_tokens;
  const int32_t keep = (n_tokens + kv->block_tokens - 1) / kv->block_tokens;
  while (q->n_blocks > keep)
    block_release(kv, q->blocks[--q->n_blocks]);
  if (q->n_chained > q->len / kv->block_tokens) { /* re-chain from the root */
    q->n_chained = 0;
    q->chain = q->root;
  }
}

int32_t nc_kv_seq_len(const nc_kv_cache *kv, int32_t seq) {
  const kv_seq *q = seq_get(kv, seq);
  return q ? q->len : 0;
}

int32_t nc_kv_seq_capacity(const nc_kv_cache *kv, int32_t seq) {
  const kv_seq *q = seq_get(kv, seq);
  return q ? q->n_blocks * kv->block_tokens : 0;
}

void nc_kv_seq_set_len(nc_kv_cache *kv, int32_t seq, int32_t n_tokens) {
  kv_seq *q = seq_get(kv, seq);
  if (!q || n_tokens < 0 || n_tokens > q->n_blocks * kv->block_tokens) return;
  q->len = n_tokens;
}

int64_t nc_kv_blocks_total(const nc_kv_cache *kv) {
  return kv->n_blocks;
}
int64_t nc_kv_blocks_free(const nc_kv_cache *kv) {
  return available(kv);
}
int64_t nc_kv_blocks_used(const nc_kv_cache *kv) {
  return kv->n_blocks - available(kv);
}
int32_t nc_kv_block_tokens(const nc_kv_cache *kv) {
  return kv->block_tokens;
}
int32_t nc_kv_max_seqs(const nc_kv_cache *kv) {
  return kv->max_seqs;
}

/* Offset in rows of (layer, seq, pos), or -1 when out of range. */
static int64_t cell_index(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                          int32_t pos) {
  const kv_seq *q = seq_get(kv, seq);
  if (!q || layer < 0 || layer >= kv->n_layer || pos < 0) return -1;
  const int32_t bi = pos / kv->block_tokens;
  if (bi >= q->n_blocks) return -1;
  return ((int64_t)layer * kv->n_blocks + q->blocks[bi]) * kv->block_tokens +
         pos % kv->block_tokens;
}

const void *nc_kv_k_data_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                           int32_t pos) {
  const int64_t c = cell_index(kv, layer, seq, pos);
  return c < 0 ? NULL : kv->k + (size_t)c * kv->row_k;
}

const void *nc_kv_v_data_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                           int32_t pos) {
  const int64_t c = cell_index(kv, layer, seq, pos);
  return c < 0 ? NULL : kv->v + (size_t)c * kv->row_v;
}

void *nc_kv_k_data(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos) {
  const int64_t c = cell_index(kv, layer, seq, pos);
  return c < 0 ? NULL : kv->k + (size_t)c * kv->row_k;
}

void *nc_kv_v_data(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos) {
  const int64_t c = cell_index(kv, layer, seq, pos);
  return c < 0 ? NULL : kv->v + (size_t)c * kv->row_v;
}

/* The F16 views: NULL unless that half of the cache is F16. */
const nc_fp16 *nc_kv_k_row_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                             int32_t pos) {
  return kv->types.k == NC_TYPE_F16 ? nc_kv_k_data_c(kv, layer, seq, pos)
                                    : NULL;
}

const nc_fp16 *nc_kv_v_row_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                             int32_t pos) {
  return kv->types.v == NC_TYPE_F16 ? nc_kv_v_data_c(kv, layer, seq, pos)
                                    : NULL;
}

nc_fp16 *nc_kv_k_row(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos) {
  return kv->types.k == NC_TYPE_F16 ? nc_kv_k_data(kv, layer, seq, pos) : NULL;
}

nc_fp16 *nc_kv_v_row(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos) {
  return kv->types.v == NC_TYPE_F16 ? nc_kv_v_data(kv, layer, seq, pos) : NULL;
}

int32_t nc_kv_rotation(nc_type t, int32_t head_dim, bool is_k) {
  if ((t != NC_TYPE_Q8_0 && t != NC_TYPE_Q4_0) || head_dim % 64 != 0) return 0;
  if (!is_k) return 64; /* llama.cpp: the smallest rotation for V */
  int32_t n = 64;
  while (head_dim % (2 * n) == 0)
    n *= 2;
  return n;
}

int32_t nc_kv_rot_k(const nc_kv_cache *kv) {
  return kv->rot_k;
}

int32_t nc_kv_rot_v(const nc_kv_cache *kv) {
  return kv->rot_v;
}

nc_kv_types nc_kv_cache_types(const nc_kv_cache *kv) {
  return kv->types;
}

size_t nc_kv_k_row_bytes(const nc_kv_cache *kv) {
  return kv->row_k;
}

size_t nc_kv_v_row_bytes(const nc_kv_cache *kv) {
  return kv->row_v;
}

int32_t nc_kv_block_refcount(const nc_kv_cache *kv, int32_t seq, int32_t pos) {
  const kv_seq *q = seq_get(kv, seq);
  if (!q || pos < 0 || pos / kv->block_tokens >= q->n_blocks) return 0;
  return kv->refcount[q->blocks[pos / kv->block_tokens]];
}
