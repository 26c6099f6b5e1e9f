/* forward_flash_rows: flash attention's prompt order (the engine's reuse
 * orders' default) for the rows of a decode, one row's work spread over
 * every thread in three passes with tile_prompt's bits (attn_flash.h, "the
 * prompt order taken apart"):
 *   1. scores: items (row, KV head, TILES_PER_ITEM key tiles): each tile's
 *      keys widened once for the KV head's query heads, their scores and
 *      maxima;
 *   2. weights: items (row, query head): the maxima chain tile after tile,
 *      the weights and the tiles' sums;
 *   3. values: items (row, a slice of the value dims): the sums chain and
 *      the accumulators of every query head tile after tile over those
 *      dims (the KV heads in one kernel call: more fma chains at once),
 *      the values read from the cache as halves, then the output.
 * A decode row as one item per (row, KV head) keeps every thread busy only
 * with many rows; these passes keep them busy with one, and need no
 * widened copy of the values (forward_flash.c takes them for up to
 * MAX_UNITS (row, KV head) pairs, at any thread count). The passes'
 * scratch lives in ctx->flash_split (grown on use). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/threadpool.h"
#include "forward.h"

enum {
  KT = NC_FLASH_KTILE,
  TILES_PER_ITEM = 4,
  MAX_UNITS = 64,
  /* below this many keys per row the passes' extra hand-offs cost more
   * than the idle thread they save */
  MIN_KEYS = 256
};

/* One (row, KV head): its keys [first, end) in the tiles [tile0, tile0 +
 * n_tiles) of KT positions; its scratch at ctx->flash_split + off. */
typedef struct rows_unit {
  int32_t t, kvh, first, end, tile0, n_tiles;
  int64_t item0; /* its first score item */
  size_t off;
} rows_unit;

typedef struct rows_task {
  nc_fwd *ctx;
  int32_t layer, G, slices, n_units;
  int64_t score_items;
  float softcap;
  const float *sinks;
  const nc_batch *b;
  const float *q;
  float *out;
  rows_unit units[MAX_UNITS];
} rows_task;

static size_t pad16(size_t n) {
  return (n + 15) / 16 * 16;
}

/* A unit's scratch: scores then weights (tile, head, key), the tiles'
 * maxima and factors (tile, head), the final maxima (head), the tiles' sums
 * (tile, head; doubles). */
typedef struct unit_mem {
  float *p, *tmax, *ms, *mend;
  double *tsum;
} unit_mem;

static size_t unit_floats(int32_t G, int32_t n_tiles) {
  const size_t th = (size_t)G * (size_t)n_tiles;
  return pad16(th * KT) + 2 * pad16(th) + pad16((size_t)G) + 2 * pad16(th);
}

static unit_mem unit_at(const rows_task *a, const rows_unit *u) {
  const size_t th = (size_t)a->G * (size_t)u->n_tiles;
  float *f = a->ctx->flash_split + u->off;
  unit_mem m;
  m.p = f;
  f += pad16(th * KT);
  m.tmax = f;
  f += pad16(th);
  m.ms = f;
  f += pad16(th);
  m.mend = f;
  f += pad16((size_t)a->G);
  m.tsum = (double *)(void *)f;
  return m;
}

/* Per thread (in ctx->flash_mem): a tile of keys as F32, transposed (where
 * the prompt order keeps it: keys no row sees hold finite values), every
 * query head's accumulator and sum, one KV head's q pointers and key
 * ranges. */
typedef struct thread_mem {
  float *kt, *acc, *S;
  const float **q;
  int32_t *lo, *hi;
} thread_mem;

static size_t align64(size_t n) {
  return (n + 63) / 64 * 64;
}

static thread_mem thread_at(uint8_t *mem, const nc_hparams *hp, int32_t G) {
  const size_t H = (size_t)hp->n_head;
  thread_mem t;
  t.kt = (float *)mem;
  mem += align64(sizeof(float) * (size_t)hp->head_dim * KT);
  t.acc = (float *)mem;
  mem += align64(sizeof(float) * H * (size_t)hp->head_dim_v);
  t.S = (float *)mem;
  mem += align64(sizeof(float) * H);
  t.q = (const float **)(void *)mem;
  mem += align64(sizeof(float *) * (size_t)G);
  t.lo = (int32_t *)mem;
  mem += align64(sizeof(int32_t) * (size_t)G);
  t.hi = (int32_t *)mem;
  return t;
}

static size_t thread_bytes(const nc_hparams *hp, int32_t G) {
  const size_t H = (size_t)hp->n_head;
  return align64(sizeof(float) * (size_t)hp->head_dim * KT) +
         align64(sizeof(float) * H * (size_t)hp->head_dim_v) +
         align64(sizeof(float) * H) + align64(sizeof(float *) * (size_t)G) +
         2 * align64(sizeof(int32_t) * (size_t)G);
}

/* Tile tt of unit u: its keys [*k0, *k1) and their first position *ts. */
static void tile_keys(const rows_unit *u, int32_t tt, int32_t *ts, int32_t *k0,
                      int32_t *k1) {
  *ts = (u->tile0 + tt) * KT;
  *k0 = u->first > *ts ? u->first : *ts;
  *k1 = u->end < *ts + KT ? u->end : *ts + KT;
}

/* ---- 1. scores */

static void score_tiles(const rows_task *a, const rows_unit *u, int32_t t0,
                        int32_t t1, uint8_t *mem) {
  const nc_fwd *c = a->ctx;
  const nc_hparams *hp = c->hp;
  const int32_t G = a->G, hd = hp->head_dim, H = hp->n_head;
  const size_t dk = (size_t)nc_hp_n_embd_k(hp);
  const int32_t bt = nc_kv_block_tokens(c->kv), seq = a->b->seq[u->t];
  thread_mem tm = thread_at(mem, hp, G);
  unit_mem um = unit_at(a, u);
  for (int32_t i = 0; i < G; i++)
    tm.q[i] = a->q + (int64_t)u->t * H * hd + (int64_t)(u->kvh * G + i) * hd;
  const nc_flash_rows r = {.q = tm.q,
                           .lo = tm.lo,
                           .hi = tm.hi,
                           .m = G,
                           .hd = hd,
                           .hdv = hp->head_dim_v,
                           .scale = hp->attn_scale,
                           .softcap = a->softcap};
  for (int32_t tt = t0; tt < t1; tt++) {
    int32_t ts, k0, k1;
    tile_keys(u, tt, &ts, &k0, &k1);
    for (int32_t j = k0, e; j < k1; j = e) { /* the keys, block by block */
      e = (j / bt + 1) * bt < k1 ? (j / bt + 1) * bt : k1;
      const nc_fp16 *kr =
          nc_kv_k_row_c(c->kv, a->layer, seq, j) + (int64_t)u->kvh * hd;
      /* no values (hdv 0): the prompt order's widening of the keys only */
      c->flash->tile_widen(kr, dk, kr, 0, e - j, hd, 0, c->f16tab,
                           tm.kt + (j - ts), tm.kt);
    }
    for (int32_t i = 0; i < G; i++) {
      tm.lo[i] = k0 - ts;
      tm.hi[i] = k1 - ts;
    }
    c->flash->tile_scores(&r, tm.kt, um.p + (size_t)tt * (size_t)G * KT,
                          um.tmax + (size_t)tt * (size_t)G);
  }
}

static void scores_worker(void *p, int ith, int nth) {
  const rows_task *a = p;
  uint8_t *mem = a->ctx->flash_mem + (size_t)ith * a->ctx->flash_stride;
  int32_t u = 0;
  for (int64_t k = ith; k < a->score_items; k += nth) {
    while (u + 1 < a->n_units && k >= a->units[u + 1].item0)
      u++;
    const rows_unit *un = &a->units[u];
    const int32_t t0 = (int32_t)(k - un->item0) * TILES_PER_ITEM;
    const int32_t t1 =
        t0 + TILES_PER_ITEM < un->n_tiles ? t0 + TILES_PER_ITEM : un->n_tiles;
    score_tiles(a, un, t0, t1, mem);
  }
}

/* ---- 2. weights */

static void head_weights(const rows_task *a, const rows_unit *u, int32_t i) {
  const nc_fwd *c = a->ctx;
  const int32_t G = a->G;
  unit_mem um = unit_at(a, u);
  float M = -INFINITY;
  for (int32_t tt = 0; tt < u->n_tiles; tt++) {
    int32_t ts, k0, k1;
    tile_keys(u, tt, &ts, &k0, &k1);
    const size_t at = (size_t)tt * (size_t)G + (size_t)i;
    const float Mn = fmaxf(M, um.tmax[at]);
    um.ms[at] = Mn > M ? expf(M - Mn) : 1.0f;
    M = Mn;
    um.tsum[at] = c->flash->tile_exps(um.p + at * KT, k0 - ts, k1 - ts, M);
  }
  um.mend[i] = M;
}

static void weights_worker(void *p, int ith, int nth) {
  const rows_task *a = p;
  for (int64_t k = ith; k < (int64_t)a->n_units * a->G; k += nth)
    head_weights(a, &a->units[k / a->G], (int32_t)(k % a->G));
}

/* ---- 3. values */

/* Row t's units (one per KV head, from u, their scratch unit_floats
 * apart): dims [d0, d1) of every query head. */
static void row_values(const rows_task *a, const rows_unit *u, int32_t d0,
                       int32_t d1, uint8_t *mem) {
  const nc_fwd *c = a->ctx;
  const nc_hparams *hp = c->hp;
  const int32_t G = a->G, hdv = hp->head_dim_v, H = hp->n_head,
                KVH = hp->n_head_kv;
  const size_t dv = (size_t)nc_hp_n_embd_v(hp);
  const size_t ug = unit_floats(G, u->n_tiles);
  const int32_t bt = nc_kv_block_tokens(c->kv), seq = a->b->seq[u->t];
  thread_mem tm = thread_at(mem, hp, G);
  const unit_mem um = unit_at(a, u);
  for (int32_t h = 0; h < H; h++) {
    memset(tm.acc + (size_t)h * (size_t)hdv + d0, 0,
           sizeof(float) * (size_t)(d1 - d0));
    tm.S[h] = 0.0f;
  }
  const nc_fp16 *blk[KT + 1];
  for (int32_t tt = 0; tt < u->n_tiles; tt++) {
    int32_t ts, k0, k1;
    tile_keys(u, tt, &ts, &k0, &k1);
    const size_t at = (size_t)tt * (size_t)G;
    for (int32_t h = 0; h < H; h++) { /* in KV head h / G's unit */
      const unit_mem uk = unit_at(a, u + h / G);
      const size_t x = at + (size_t)(h % G);
      if (uk.ms[x] != 1.0f) tm.S[h] *= uk.ms[x];
      tm.S[h] = (float)((double)tm.S[h] + uk.tsum[x]);
    }
    /* the tile's value rows: block b's row 0 at blk[b - k0 / bt] */
    const int32_t b0 = k0 / bt, b1 = (k1 - 1) / bt;
    for (int32_t bi = b0; bi <= b1; bi++) {
      const int32_t pos = bi * bt > k0 ? bi * bt : k0;
      blk[bi - b0] =
          nc_kv_v_row_c(c->kv, a->layer, seq, pos) - (size_t)(pos % bt) * dv;
    }
    const nc_flash_paged pg = {
        .blk = blk, .off = 0, .stride = dv, .j0 = ts - b0 * bt, .bt = bt};
    const nc_flash_tvals tv = {.p = um.p + at * KT,
                               .ms = um.ms + at,
                               .p_stride = KT,
                               .m = G,
                               .j0 = k0 - ts,
                               .j1 = k1 - ts,
                               .d0 = d0,
                               .d1 = d1,
                               .groups = KVH,
                               .p_group = ug,
                               .ms_group = ug,
                               .acc_group = (size_t)G * (size_t)hdv,
                               .v_group = (size_t)hdv};
    c->flash->tile_values(&tv, &pg, c->f16tab, tm.acc, (size_t)hdv);
  }
  for (int32_t h = 0; h < H; h++) { /* nc_flash_tfinish over [d0, d1) */
    float S = tm.S[h];
    const float M = unit_at(a, u + h / G).mend[h % G];
    const float ms = a->sinks ? nc_flash_fold_sink(a->sinks[h], M, &S) : 1.0f;
    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
    const float *acc = tm.acc + (size_t)h * (size_t)hdv;
    float *o = a->out + (int64_t)u->t * H * hdv + (int64_t)h * hdv;
    for (int32_t d = d0; d < d1; d++)
      o[d] = acc[d] * ms * inv;
  }
}

static void values_worker(void *p, int ith, int nth) {
  const rows_task *a = p;
  uint8_t *mem = a->ctx->flash_mem + (size_t)ith * a->ctx->flash_stride;
  const int32_t nr = a->ctx->hp->head_dim_v / 16, KVH = a->ctx->hp->n_head_kv;
  for (int64_t k = ith; k < (int64_t)a->b->n_tokens * a->slices; k += nth) {
    const int32_t s = (int32_t)(k % a->slices);
    row_values(a, &a->units[k / a->slices * KVH], 16 * (s * nr / a->slices),
               16 * ((s + 1) * nr / a->slices), mem);
  }
}

/* ---- the plan */

bool nc_fwd_flash_rows(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                       const float *q, float *out, int32_t n_swa, float softcap,
                       const float *sinks) {
  const nc_hparams *hp = ctx->hp;
  const int nth = nc_threadpool_size(ctx->tp);
  const nc_kv_types ty = nc_kv_cache_types(ctx->kv);
  const int32_t KVH = hp->n_head_kv, G = hp->n_head / KVH;
  const int64_t n_units = (int64_t)b->n_tokens * KVH;
  if (ty.k != NC_TYPE_F16 || ty.v != NC_TYPE_F16 || hp->non_causal ||
      hp->head_dim_v % 16 != 0 || n_units > MAX_UNITS ||
      thread_bytes(hp, G) > ctx->flash_stride)
    return false;
  for (int32_t t = 0; t < b->n_tokens; t++) {
    if (b->prompt_order[t] != NC_FLASH_TILED) return false;
    /* one row per run: no two rows of a sequence side by side */
    if (t > 0 && b->seq[t] == b->seq[t - 1] && b->pos[t] == b->pos[t - 1] + 1)
      return false;
  }
  rows_task a = {.ctx = ctx,
                 .layer = layer,
                 .G = G,
                 .n_units = (int32_t)n_units,
                 .softcap = softcap,
                 .sinks = sinks,
                 .b = b,
                 .q = q,
                 .out = out};
  int32_t most = 0;
  size_t floats = 0;
  for (int32_t t = 0, n = 0; t < b->n_tokens; t++) {
    int32_t lo, hi;
    nc_fwd_keys(ctx, b, t, n_swa, &lo, &hi);
    if (hi <= lo) return false;
    most = hi - lo > most ? hi - lo : most;
    for (int32_t h = 0; h < KVH; h++, n++) {
      rows_unit *u = &a.units[n];
      u->t = t;
      u->kvh = h;
      u->first = lo;
      u->end = hi;
      u->tile0 = lo / KT;
      u->n_tiles = (hi - 1) / KT - u->tile0 + 1;
      u->item0 = a.score_items;
      u->off = floats;
      a.score_items += (u->n_tiles + TILES_PER_ITEM - 1) / TILES_PER_ITEM;
      floats += unit_floats(G, u->n_tiles);
    }
  }
  if (most < MIN_KEYS) return false;
  if (floats > ctx->flash_split_cap) {
    float *grown = aligned_alloc(64, floats * sizeof(float));
    if (!grown) return false; /* the one-item-per-unit path instead */
    free(ctx->flash_split);
    ctx->flash_split = grown;
    ctx->flash_split_cap = floats;
  }
  /* value slices: enough items (rows x slices) for the threads, an even
   * share where few */
  const int32_t nr = hp->head_dim_v / 16, rows = b->n_tokens;
  a.slices = 1;
  while (a.slices < nr &&
         (rows * a.slices < nth ||
          (rows * a.slices % nth != 0 && rows * a.slices < 2 * nth)))
    a.slices++;
  nc_threadpool_run(ctx->tp, scores_worker, &a);
  nc_threadpool_run(ctx->tp, weights_worker, &a);
  nc_threadpool_run(ctx->tp, values_worker, &a);
  return true;
}
