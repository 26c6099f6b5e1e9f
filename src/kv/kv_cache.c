/* kv_cache: pools of refcounted blocks and block tables per sequence.
 *
 * Storage: per group, one K array and one V array of rows; a row is one
 * position's n_head_kv heads of one layer in the cache's element type (F16,
 * BF16, or Q8_0/Q4_0 blocks of 32: each head quantized on its own since
 * head_dim is a multiple of the block), row_k / row_v bytes, which may
 * differ between layers (nc_kv_shape's second shape). A model
 * without sliding windows has one group (every layer, every block): each
 * layer owns a slab of the blocks, laid out [block][slot][row], so that the
 * positions of one block are contiguous for each layer. With them, the
 * global layers keep that layout over the global blocks, and the SWA group
 * (its own, fewer blocks, storage grown as they are taken) is laid out
 * [block][layer][slot][row]: a SWA block's rows are contiguous. Both groups
 * hold rows of the same types. */
#include "kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/attn_kernel.h"
#include "kv_cache_internal.h"

bool nc_kv_type_supported(nc_type t) {
  return t == NC_TYPE_F16 || t == NC_TYPE_BF16 || t == NC_TYPE_Q8_0 ||
         t == NC_TYPE_Q4_0;
}

/* A row of n elements of type t: 0 when t is not a cache type or n is not a
 * multiple of its block. */
static size_t kv_row_bytes(nc_type t, int32_t n) {
  return nc_kv_type_supported(t) ? nc_row_size(t, n) : 0;
}

/* Layer l's K and V row widths (elements) and head sizes. */
typedef struct layer_dims {
  int32_t dim_k, dim_v, head_k, head_v;
} layer_dims;

static layer_dims dims_of(const nc_kv_shape *s, int32_t l) {
  if (s->layer_alt && s->layer_alt[l])
    return (layer_dims){s->n_head_kv_alt * s->head_dim_alt,
                        s->n_head_kv_alt * s->head_dim_v_alt, s->head_dim_alt,
                        s->head_dim_v_alt};
  return (layer_dims){s->n_head_kv * s->head_dim, s->n_head_kv * s->head_dim_v,
                      s->head_dim, s->head_dim_v};
}

size_t nc_kv_bytes_per_position_of(nc_kv_shape shape, nc_kv_types types,
                                   const bool *layer_swa, bool swa) {
  size_t n = 0;
  for (int32_t l = 0; l < shape.n_layer; l++) {
    const layer_dims d = dims_of(&shape, l);
    const size_t k = kv_row_bytes(types.k, d.dim_k),
                 v = kv_row_bytes(types.v, d.dim_v);
    if (!k || !v) return 0;
    if (!layer_swa || layer_swa[l] == swa) n += k + v;
  }
  return n;
}

size_t nc_kv_bytes_per_position(nc_kv_shape shape, nc_kv_types types) {
  return nc_kv_bytes_per_position_of(shape, types, NULL, false);
}

size_t nc_kv_bytes_per_block(nc_kv_shape shape, int32_t block_tokens) {
  return (size_t)block_tokens *
         nc_kv_bytes_per_position(shape, NC_KV_TYPES_F16);
}

/* The attention of a sliding-window layer starts at a position that is a
 * multiple of both the block size and its 16 lanes (forward.c). */
static int32_t swa_unit(int32_t block_tokens) {
  int32_t unit = block_tokens;
  while (unit % NC_ATTN_LANES)
    unit += block_tokens;
  return unit;
}

int64_t nc_kv_swa_blocks_for(int32_t block_tokens, int32_t max_seqs,
                             int32_t window, int32_t step_tokens) {
  const int64_t bt = block_tokens;
  const int64_t per =
      ((int64_t)window + swa_unit(block_tokens) + bt - 1) / bt + 3;
  return (int64_t)max_seqs * per + ((int64_t)step_tokens + bt - 1) / bt + 1;
}

/* Storage for the SWA blocks [0, n) of the group (n <= its blocks). */
static bool swa_grow(nc_kv_cache *kv, int64_t n) {
  if (n <= kv->swa_alloc) return true;
  int64_t cap = kv->swa_alloc > 0 ? kv->swa_alloc : 16;
  while (cap < n)
    cap *= 2;
  if (cap > kv->g_blocks[NC_KV_SWA]) cap = kv->g_blocks[NC_KV_SWA];
  const size_t bk = kv->g_block_k[NC_KV_SWA], bv = kv->g_block_v[NC_KV_SWA];
  const size_t n_new = (size_t)cap, old = (size_t)kv->swa_alloc;
  uint8_t *k = realloc(kv->k_swa, n_new * bk);
  if (!k) return false;
  kv->k_swa = k;
  uint8_t *v = realloc(kv->v_swa, n_new * bv);
  if (!v) return false;
  kv->v_swa = v;
  memset(k + old * bk, 0, (n_new - old) * bk);
  memset(v + old * bv, 0, (n_new - old) * bv);
  kv->swa_alloc = cap;
  return true;
}

/* True when block b of group g has its storage (the SWA group's grows on
 * demand, swa_grow; the global group's is allocated whole). */
static bool has_storage(const nc_kv_cache *kv, int32_t g, int32_t b) {
  return g != NC_KV_SWA || b - kv->g_first[NC_KV_SWA] < kv->swa_alloc;
}

/* Storage for the next `need` SWA blocks block_take hands out: as it
 * does, free blocks with storage first, then cached ones, then free ones
 * without (which get it here). */
static bool swa_ensure(nc_kv_cache *kv, int64_t need) {
  if (kv->n_groups < 2) return true;
  const int64_t n = kv->n_free[NC_KV_SWA];
  int64_t top = 0, cached = kv->n_cached[NC_KV_SWA], i = 0;
  for (int64_t k = 0; k < need && i < n; k++) {
    const int32_t b = kv->free_list[NC_KV_SWA][n - 1 - i];
    if (has_storage(kv, NC_KV_SWA, b)) {
      i++;
    } else if (cached > 0) {
      cached--;
    } else {
      const int64_t at = b - kv->g_first[NC_KV_SWA];
      if (at + 1 > top) top = at + 1;
      i++;
    }
  }
  return swa_grow(kv, top);
}

int32_t nc_kv_swa_keep_from(const nc_kv_cache *kv, int32_t len) {
  if (kv->n_groups < 2) return 0;
  const int64_t lo = (int64_t)len + 1 - kv->window;
  if (lo <= 0) return 0;
  const int32_t unit = swa_unit(kv->block_tokens);
  return (int32_t)(lo / unit * unit);
}

static nc_code cache_create(nc_kv_shape shape, nc_kv_types types,
                            const bool *layer_swa, int64_t n_blocks,
                            int64_t n_swa_blocks, int32_t block_tokens,
                            int32_t max_seqs, nc_kv_cache **out,
                            nc_error *err) {
  *out = NULL;
  for (int32_t alt = 0; alt < (shape.layer_alt ? 2 : 1); alt++) {
    const int32_t hk = alt ? shape.head_dim_alt : shape.head_dim,
                  hv = alt ? shape.head_dim_v_alt : shape.head_dim_v;
    if (!kv_row_bytes(types.k, hk) || !kv_row_bytes(types.v, hv))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "KV cache types K %s, V %s for head sizes %d, %d: each "
                     "must be F16, BF16, Q8_0 or Q4_0 and its block size "
                     "must divide the head size",
                     nc_type_name(types.k), nc_type_name(types.v), (int)hk,
                     (int)hv);
  }
  if (n_blocks < 1 || n_blocks > INT32_MAX)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "KV cache blocks %lld: must be in [1, %d]",
                   (long long)n_blocks, INT32_MAX);
  if (n_blocks + n_swa_blocks > INT32_MAX)
    return nc_fail(err, NC_ERR_LIMIT,
                   "KV cache of %lld + %lld sliding-window blocks: over %d",
                   (long long)n_blocks, (long long)n_swa_blocks, INT32_MAX);
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
  if (shape.state_floats < 0 || shape.state_floats > ((int64_t)1 << 36))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "KV recurrent state of %lld floats per sequence: must be "
                   "in [0, 2^36]",
                   (long long)shape.state_floats);
  nc_kv_cache *kv = calloc(1, sizeof *kv);
  if (!kv) return nc_fail(err, NC_ERR_NOMEM, "KV cache: out of memory");
  kv->n_layer = shape.n_layer;
  kv->block_tokens = block_tokens;
  kv->max_seqs = max_seqs;
  kv->types = types;
  kv->n_groups = layer_swa ? 2 : 1;
  kv->window = layer_swa ? shape.n_swa : 0;
  kv->g_blocks[NC_KV_GLOBAL] = n_blocks;
  kv->g_blocks[NC_KV_SWA] = layer_swa ? n_swa_blocks : 0;
  kv->g_first[NC_KV_SWA] = n_blocks;
  kv->n_blocks = n_blocks + kv->g_blocks[NC_KV_SWA];
  kv->layers = calloc((size_t)kv->n_layer, sizeof *kv->layers);
  /* a global layer's slab: n_blocks blocks of its rows; a SWA layer's part
   * of each SWA block: after the SWA layers before it */
  const size_t bt = (size_t)block_tokens;
  for (int32_t l = 0; kv->layers && l < kv->n_layer; l++) {
    const int32_t g = layer_swa && layer_swa[l] ? NC_KV_SWA : NC_KV_GLOBAL;
    const layer_dims d = dims_of(&shape, l);
    kv_layer *ly = &kv->layers[l];
    ly->group = g;
    ly->row_k = kv_row_bytes(types.k, d.dim_k);
    ly->row_v = kv_row_bytes(types.v, d.dim_v);
    ly->rot_k = nc_kv_rotation(types.k, d.head_k, true);
    ly->rot_v = nc_kv_rotation(types.v, d.head_v, false);
    const size_t per = g == NC_KV_SWA ? bt : (size_t)n_blocks * bt;
    ly->off_k = per ? kv->g_block_k[g] / bt * per : 0;
    ly->off_v = per ? kv->g_block_v[g] / bt * per : 0;
    kv->g_block_k[g] += bt * ly->row_k;
    kv->g_block_v[g] += bt * ly->row_v;
    kv->g_layers[g]++;
  }
  const size_t bytes_k = (size_t)n_blocks * kv->g_block_k[NC_KV_GLOBAL],
               bytes_v = (size_t)n_blocks * kv->g_block_v[NC_KV_GLOBAL];
  kv->k = calloc(bytes_k ? bytes_k : 1, 1);
  kv->v = calloc(bytes_v ? bytes_v : 1, 1);
  kv->refcount = calloc((size_t)kv->n_blocks, sizeof(int32_t));
  kv->free_list[NC_KV_GLOBAL] = malloc((size_t)n_blocks * sizeof(int32_t));
  kv->free_list[NC_KV_SWA] =
      malloc((size_t)(kv->g_blocks[NC_KV_SWA] + 1) * sizeof(int32_t));
  kv->seqs = calloc((size_t)max_seqs, sizeof(kv_seq));
  kv->state_floats = shape.state_floats;
  if (kv->state_floats > 0) {
    kv->state = calloc((size_t)max_seqs, sizeof *kv->state);
    kv->ckpt = calloc((size_t)max_seqs, sizeof *kv->ckpt);
    kv->ckpt_len = calloc((size_t)max_seqs, sizeof *kv->ckpt_len);
  }
  if ((kv->state_floats > 0 && (!kv->state || !kv->ckpt || !kv->ckpt_len)) ||
      !kv->layers || !kv->k || !kv->v || !kv->refcount || !kv->free_list[0] ||
      !kv->free_list[1] || !kv->seqs || !nc_kv_prefix_alloc(kv) ||
      !nc_kv_snap_alloc(kv)) {
    const size_t bytes = bytes_k + bytes_v;
    nc_kv_cache_free(kv);
    return nc_fail(err, NC_ERR_NOMEM,
                   "KV cache of %lld blocks (%zu bytes): out of memory",
                   (long long)n_blocks, bytes);
  }
  /* Pop order: each group's first block first. */
  for (int32_t g = 0; g < kv->n_groups; g++) {
    const int64_t n = kv->g_blocks[g];
    for (int64_t i = 0; i < n; i++)
      kv->free_list[g][i] = (int32_t)(kv->g_first[g] + n - 1 - i);
    kv->n_free[g] = n;
  }
  *out = kv;
  return NC_OK;
}

nc_code nc_kv_cache_create(nc_kv_shape shape, int64_t n_blocks,
                           int32_t block_tokens, int32_t max_seqs,
                           nc_kv_cache **out, nc_error *err) {
  return nc_kv_cache_create_swa(shape, NC_KV_TYPES_F16, NULL, n_blocks,
                                block_tokens, max_seqs, 0, out, err);
}

nc_code nc_kv_cache_create_typed(nc_kv_shape shape, nc_kv_types types,
                                 int64_t n_blocks, int32_t block_tokens,
                                 int32_t max_seqs, nc_kv_cache **out,
                                 nc_error *err) {
  return nc_kv_cache_create_swa(shape, types, NULL, n_blocks, block_tokens,
                                max_seqs, 0, out, err);
}

nc_code nc_kv_cache_create_swa(nc_kv_shape shape, nc_kv_types types,
                               const bool *layer_swa, int64_t n_blocks,
                               int32_t block_tokens, int32_t max_seqs,
                               int32_t step_tokens, nc_kv_cache **out,
                               nc_error *err) {
  bool any = false;
  for (int32_t l = 0; layer_swa && l < shape.n_layer; l++)
    any = any || layer_swa[l];
  if (!any || shape.n_swa <= 0 || block_tokens < 1 ||
      block_tokens > (1 << 20) || max_seqs < 1 || max_seqs > (1 << 20))
    return cache_create(shape, types, NULL, n_blocks, 0, block_tokens, max_seqs,
                        out, err);
  const int64_t n_swa = nc_kv_swa_blocks_for(
      block_tokens, max_seqs, shape.n_swa, step_tokens > 0 ? step_tokens : 0);
  nc_code rc = cache_create(shape, types, layer_swa, n_blocks, n_swa,
                            block_tokens, max_seqs, out, err);
  /* storage for one sequence's window and step to start with */
  if (rc == NC_OK && !swa_grow(*out, nc_kv_swa_blocks_for(
                                         block_tokens, 1, shape.n_swa,
                                         step_tokens > 0 ? step_tokens : 0))) {
    nc_kv_cache_free(*out);
    *out = NULL;
    return nc_fail(err, NC_ERR_NOMEM, "KV cache: out of memory");
  }
  return rc;
}

void nc_kv_cache_free(nc_kv_cache *kv) {
  if (!kv) return;
  if (kv->seqs)
    for (int32_t i = 0; i < kv->max_seqs; i++)
      for (int32_t g = 0; g < NC_KV_MAX_GROUPS; g++)
        free(kv->seqs[i].blocks[g]);
  free(kv->seqs);
  nc_kv_state_free(kv);
  free(kv->layers);
  free(kv->k);
  free(kv->v);
  free(kv->k_swa);
  free(kv->v_swa);
  free(kv->refcount);
  free(kv->free_list[0]);
  free(kv->free_list[1]);
  nc_kv_prefix_free(kv);
  nc_kv_snap_free_all(kv);
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
  if (s < 0 || !nc_kv_state_init(kv, s, -1)) return -1;
  kv_seq *q = &kv->seqs[s];
  q->live = true;
  q->len = 0;
  q->n_blocks = 0;
  q->swa_first = 0;
  q->n_chained = 0;
  q->root = q->chain = nc_kv_salt_hash(NULL, 0);
  q->snap_roll = -1;
  return s;
}

static void block_release(nc_kv_cache *kv, int32_t b) {
  if (b < 0 || --kv->refcount[b] > 0) return;
  if (kv->hashed[b]) {
    nc_kv_lru_push(kv, b); /* cached: reusable until evicted */
  } else {
    const int32_t g = nc_kv_block_group(kv, b);
    nc_kv_snap_drop(kv, b);
    kv->free_list[g][kv->n_free[g]++] = b;
  }
}

/* Blocks group g can hand out: free ones, then cached ones (evicted). */
static int64_t available(const nc_kv_cache *kv, int32_t g) {
  return kv->n_free[g] + kv->n_cached[g];
}

/* Caller checks available() first. */
static int32_t block_take(nc_kv_cache *kv, int32_t g) {
  int32_t b;
  /* a sliding-window block the pool has no storage for yet goes after the
   * cached ones: a long sequence reuses its own released window blocks, so
   * the SWA storage stays about one window per sequence */
  const bool free_ok =
      kv->n_free[g] > 0 &&
      (kv->n_cached[g] == 0 ||
       has_storage(kv, g, kv->free_list[g][kv->n_free[g] - 1]));
  if (free_ok) {
    b = kv->free_list[g][--kv->n_free[g]];
  } else {
    b = kv->lru_head[g]; /* the least recently released cached block */
    nc_kv_lru_remove(kv, b);
    nc_kv_unhash(kv, b);
    kv->evictions++;
  }
  kv->refcount[b] = 1;
  return b;
}

/* Releases table entries [from, n_blocks) of every group, last first. */
static void release_tail(nc_kv_cache *kv, kv_seq *q, int32_t from) {
  for (int32_t g = 0; g < kv->n_groups; g++)
    for (int32_t i = q->n_blocks - 1; i >= from; i--) {
      block_release(kv, q->blocks[g][i]);
      q->blocks[g][i] = -1;
    }
  q->n_blocks = from < q->n_blocks ? from : q->n_blocks;
  if (q->swa_first > q->n_blocks) q->swa_first = q->n_blocks;
}

void nc_kv_seq_free(nc_kv_cache *kv, int32_t seq) {
  kv_seq *q = seq_get(kv, seq);
  if (!q) return;
  /* Last block first: a cached prefix's head is evicted last. */
  release_tail(kv, q, 0);
  q->swa_first = 0;
  q->len = 0;
  q->live = false;
}

bool nc_kv_seq_grow_table(const nc_kv_cache *kv, kv_seq *q, int32_t need) {
  if (need <= q->cap) return true;
  int32_t cap = q->cap ? q->cap : 8;
  while (cap < need)
    cap = cap > INT32_MAX / 2 ? need : cap * 2;
  for (int32_t g = 0; g < kv->n_groups; g++) {
    int32_t *nb = realloc(q->blocks[g], sizeof(int32_t) * (size_t)cap);
    if (!nb) return false;
    q->blocks[g] = nb;
  }
  q->cap = cap;
  return true;
}

int32_t nc_kv_seq_fork(nc_kv_cache *kv, int32_t src) {
  kv_seq *p = seq_get(kv, src);
  if (!p) return -1;
  const int32_t s = seq_slot(kv);
  if (s < 0) return -1;
  kv_seq *q = &kv->seqs[s];
  if (!nc_kv_seq_grow_table(kv, q, p->n_blocks) ||
      !nc_kv_state_init(kv, s, src))
    return -1;
  for (int32_t g = 0; g < kv->n_groups; g++) {
    memcpy(q->blocks[g], p->blocks[g], sizeof(int32_t) * (size_t)p->n_blocks);
    for (int32_t i = 0; i < p->n_blocks; i++)
      if (q->blocks[g][i] >= 0) kv->refcount[q->blocks[g][i]]++;
  }
  q->n_blocks = p->n_blocks;
  q->swa_first = p->swa_first;
  q->len = p->len;
  q->n_chained = p->n_chained;
  q->chain = p->chain;
  q->root = p->root;
  q->snap_roll = -1; /* (the source's stays the source's) */
  q->live = true;
  return s;
}

/* Blocks group g takes to make room for [len, n_tokens_total). */
static int64_t group_need(const nc_kv_cache *kv, const kv_seq *q, int32_t g,
                          int32_t n_tokens_total) {
  const int64_t bt = kv->block_tokens;
  const int64_t last = ((int64_t)n_tokens_total - 1) / bt; /* last block */
  int64_t need = 0;
  /* Blocks that will be written: from the one holding position len. */
  for (int64_t i = q->len / bt; i <= last; i++) {
    const int32_t b = i < q->n_blocks ? q->blocks[g][i] : -1;
    if (b < 0)
      need++;
    else if (kv->refcount[b] > 1 || kv->hashed[b])
      need++; /* copy-on-write: shared, or named by its content */
  }
  return need;
}

int64_t nc_kv_blocks_needed(const nc_kv_cache *kv, int32_t seq,
                            int32_t n_tokens_total) {
  const kv_seq *q = seq_get(kv, seq);
  if (!q) return -1;
  if (n_tokens_total <= q->len) return 0;
  return group_need(kv, q, NC_KV_GLOBAL, n_tokens_total);
}

static void block_copy(nc_kv_cache *kv, int32_t dst, int32_t src) {
  const size_t bt = (size_t)kv->block_tokens;
  const int32_t g = nc_kv_block_group(kv, dst);
  const size_t d = (size_t)(dst - kv->g_first[g]),
               s = (size_t)(src - kv->g_first[g]);
  if (g == NC_KV_SWA) { /* a SWA block's rows are contiguous */
    const size_t bk = kv->g_block_k[g], bv = kv->g_block_v[g];
    memcpy(kv->k_swa + d * bk, kv->k_swa + s * bk, bk);
    memcpy(kv->v_swa + d * bv, kv->v_swa + s * bv, bv);
    return;
  }
  for (int32_t l = 0; l < kv->n_layer; l++) {
    const kv_layer *ly = &kv->layers[l];
    if (ly->group != g) continue;
    const size_t rk = bt * ly->row_k, rv = bt * ly->row_v;
    memcpy(kv->k + ly->off_k + d * rk, kv->k + ly->off_k + s * rk, rk);
    memcpy(kv->v + ly->off_v + d * rv, kv->v + ly->off_v + s * rv, rv);
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
  for (int32_t g = 0; g < kv->n_groups; g++) {
    const int64_t need = group_need(kv, q, g, n_tokens_total);
    if (need > available(kv, g))
      return nc_fail(err, NC_ERR_BUSY,
                     "KV cache full: sequence %d needs %lld %sblocks for %d "
                     "tokens, %lld free of %lld",
                     (int)seq, (long long)need,
                     g == NC_KV_SWA ? "sliding-window " : "",
                     (int)n_tokens_total, (long long)available(kv, g),
                     (long long)kv->g_blocks[g]);
  }
  const int32_t bt = kv->block_tokens;
  const int32_t last = (n_tokens_total - 1) / bt;
  if (!nc_kv_seq_grow_table(kv, q, last + 1) ||
      (kv->n_groups > 1 &&
       !swa_ensure(kv, group_need(kv, q, NC_KV_SWA, n_tokens_total))))
    return nc_fail(err, NC_ERR_NOMEM, "KV block table: out of memory");
  for (int32_t i = q->n_blocks; i <= last; i++)
    for (int32_t g = 0; g < kv->n_groups; g++)
      q->blocks[g][i] = -1;
  if (q->n_blocks < last + 1) q->n_blocks = last + 1;
  for (int32_t g = 0; g < kv->n_groups; g++)
    for (int32_t i = q->len / bt; i <= last; i++) {
      const int32_t b = q->blocks[g][i];
      if (b < 0) {
        q->blocks[g][i] = block_take(kv, g);
      } else if (kv->refcount[b] > 1 || kv->hashed[b]) {
        const int32_t nb = block_take(kv, g);
        block_copy(kv, nb, b);
        block_release(kv, b);
        q->blocks[g][i] = nb;
      }
    }
  return NC_OK;
}

/* Releases the SWA blocks wholly before what position len reads. */
static void swa_release(nc_kv_cache *kv, kv_seq *q) {
  if (kv->n_groups < 2) return;
  int32_t first = nc_kv_swa_keep_from(kv, q->len) / kv->block_tokens;
  if (first > q->n_blocks) first = q->n_blocks;
  for (int32_t i = q->swa_first; i < first; i++) {
    block_release(kv, q->blocks[NC_KV_SWA][i]);
    q->blocks[NC_KV_SWA][i] = -1;
  }
  if (first > q->swa_first) q->swa_first = first;
}

void nc_kv_seq_truncate(nc_kv_cache *kv, int32_t seq, int32_t n_tokens) {
  kv_seq *q = seq_get(kv, seq);
  if (!q || n_tokens < 0) return;
  /* The window of position n_tokens is gone, or the recurrent state of
   * the positions past it is in the state: nothing can continue there. */
  if (n_tokens < q->len &&
      (kv->state_floats > 0 ||
       nc_kv_swa_keep_from(kv, n_tokens) / kv->block_tokens < q->swa_first)) {
    n_tokens = 0;
    q->swa_first = 0;
    nc_kv_state_zero(kv, seq);
  }
  nc_kv_seq_cut(kv, q, n_tokens);
}

void nc_kv_seq_cut(nc_kv_cache *kv, kv_seq *q, int32_t n_tokens) {
  if (n_tokens < q->len) q->len = n_tokens;
  const int32_t keep = (n_tokens + kv->block_tokens - 1) / kv->block_tokens;
  if (q->n_blocks > keep) release_tail(kv, q, keep);
  if (q->n_chained > q->len / kv->block_tokens) { /* re-chain from the root */
    q->n_chained = 0;
    q->chain = q->root;
  }
}

int32_t nc_kv_rollback_room(const nc_kv_cache *kv, int32_t len, int32_t extra) {
  if (kv->n_groups < 2) return extra;
  const int32_t keep = nc_kv_swa_keep_from(kv, len) / kv->block_tokens;
  while (extra > 0 &&
         nc_kv_swa_keep_from(kv, len + extra) / kv->block_tokens > keep)
    extra--;
  return extra;
}

int32_t nc_kv_seq_len(const nc_kv_cache *kv, int32_t seq) {
  const kv_seq *q = seq_get(kv, seq);
  return q ? q->len : 0;
}

int32_t nc_kv_seq_capacity(const nc_kv_cache *kv, int32_t seq) {
  const kv_seq *q = seq_get(kv, seq);
  return q ? q->n_blocks * kv->block_tokens : 0;
}

int32_t nc_kv_seq_window_start(const nc_kv_cache *kv, int32_t seq) {
  const kv_seq *q = seq_get(kv, seq);
  return q && kv->n_groups > 1 ? q->swa_first * kv->block_tokens : 0;
}

void nc_kv_seq_set_len(nc_kv_cache *kv, int32_t seq, int32_t n_tokens) {
  kv_seq *q = seq_get(kv, seq);
  if (!q || n_tokens < 0 || n_tokens > q->n_blocks * kv->block_tokens) return;
  q->len = n_tokens;
  swa_release(kv, q);
}

int64_t nc_kv_blocks_total(const nc_kv_cache *kv) {
  return kv->g_blocks[NC_KV_GLOBAL];
}
int64_t nc_kv_blocks_free(const nc_kv_cache *kv) {
  return available(kv, NC_KV_GLOBAL);
}
int64_t nc_kv_blocks_used(const nc_kv_cache *kv) {
  return kv->g_blocks[NC_KV_GLOBAL] - available(kv, NC_KV_GLOBAL);
}
int32_t nc_kv_block_tokens(const nc_kv_cache *kv) {
  return kv->block_tokens;
}
int32_t nc_kv_max_seqs(const nc_kv_cache *kv) {
  return kv->max_seqs;
}
int32_t nc_kv_n_groups(const nc_kv_cache *kv) {
  return kv->n_groups;
}
int64_t nc_kv_group_blocks_total(const nc_kv_cache *kv, int32_t group) {
  return group >= 0 && group < kv->n_groups ? kv->g_blocks[group] : 0;
}
int64_t nc_kv_group_blocks_used(const nc_kv_cache *kv, int32_t group) {
  if (group < 0 || group >= kv->n_groups) return 0;
  return kv->g_blocks[group] - available(kv, group);
}

/* K/V bytes of one block of group g (rows of the cache's types). */
static size_t group_block_bytes(const nc_kv_cache *kv, int32_t g) {
  return kv->g_block_k[g] + kv->g_block_v[g];
}
size_t nc_kv_bytes_used(const nc_kv_cache *kv) {
  size_t n = 0;
  for (int32_t g = 0; g < kv->n_groups; g++)
    n += (size_t)nc_kv_group_blocks_used(kv, g) * group_block_bytes(kv, g);
  return n;
}
size_t nc_kv_bytes_total(const nc_kv_cache *kv) {
  size_t n =
      (size_t)kv->g_blocks[NC_KV_GLOBAL] * group_block_bytes(kv, NC_KV_GLOBAL);
  if (kv->n_groups > 1)
    n += (size_t)kv->swa_alloc * group_block_bytes(kv, NC_KV_SWA);
  return n;
}

/* The K (k true) or V row of (layer, seq, pos), or NULL when out of
 * range or released. */
static uint8_t *row_of(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                       int32_t pos, bool k) {
  const kv_seq *q = seq_get(kv, seq);
  if (!q || layer < 0 || layer >= kv->n_layer || pos < 0) return NULL;
  const int32_t bi = pos / kv->block_tokens;
  if (bi >= q->n_blocks) return NULL;
  const kv_layer *ly = &kv->layers[layer];
  const int32_t g = ly->group, b = q->blocks[g][bi];
  if (b < 0) return NULL;
  const size_t bt = (size_t)kv->block_tokens,
               slot = (size_t)(pos % kv->block_tokens);
  const size_t row = k ? ly->row_k : ly->row_v, off = k ? ly->off_k : ly->off_v;
  if (g == NC_KV_SWA) {
    const size_t blk = k ? kv->g_block_k[g] : kv->g_block_v[g];
    return (k ? kv->k_swa : kv->v_swa) + (size_t)(b - kv->g_first[g]) * blk +
           off + slot * row;
  }
  return (k ? kv->k : kv->v) + off + ((size_t)b * bt + slot) * row;
}

const void *nc_kv_k_data_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                           int32_t pos) {
  return row_of(kv, layer, seq, pos, true);
}

const void *nc_kv_v_data_c(const nc_kv_cache *kv, int32_t layer, int32_t seq,
                           int32_t pos) {
  return row_of(kv, layer, seq, pos, false);
}

void *nc_kv_k_data(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos) {
  return row_of(kv, layer, seq, pos, true);
}

void *nc_kv_v_data(nc_kv_cache *kv, int32_t layer, int32_t seq, int32_t pos) {
  return row_of(kv, layer, seq, pos, false);
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

static const kv_layer *layer_of(const nc_kv_cache *kv, int32_t layer) {
  return layer >= 0 && layer < kv->n_layer ? &kv->layers[layer] : NULL;
}

int32_t nc_kv_rot_k(const nc_kv_cache *kv, int32_t layer) {
  const kv_layer *ly = layer_of(kv, layer);
  return ly ? ly->rot_k : 0;
}

int32_t nc_kv_rot_v(const nc_kv_cache *kv, int32_t layer) {
  const kv_layer *ly = layer_of(kv, layer);
  return ly ? ly->rot_v : 0;
}

nc_kv_types nc_kv_cache_types(const nc_kv_cache *kv) {
  return kv->types;
}

size_t nc_kv_k_row_bytes(const nc_kv_cache *kv, int32_t layer) {
  const kv_layer *ly = layer_of(kv, layer);
  return ly ? ly->row_k : 0;
}

size_t nc_kv_v_row_bytes(const nc_kv_cache *kv, int32_t layer) {
  const kv_layer *ly = layer_of(kv, layer);
  return ly ? ly->row_v : 0;
}

int32_t nc_kv_block_refcount(const nc_kv_cache *kv, int32_t seq, int32_t pos) {
  const kv_seq *q = seq_get(kv, seq);
  if (!q || pos < 0 || pos / kv->block_tokens >= q->n_blocks) return 0;
  const int32_t b = q->blocks[NC_KV_GLOBAL][pos / kv->block_tokens];
  return b < 0 ? 0 : kv->refcount[b];
}
