/* forward_flash: flash attention over the paged KV cache (attn_flash.h),
 * in one of llama.cpp's two CPU orders per row (nc_batch.prompt_order):
 * - the row order: each (row, GQA group) walks its visible keys block by
 *   block, at most FLASH_TILE keys per kernel call, carrying the
 *   online-softmax state from tile to tile;
 * - the prompt order (F16 caches): runs of up to PROMPT_ROWS consecutive
 *   positions of one sequence, with every query head of one KV head, take
 *   the keys a tile of NC_FLASH_KTILE at a time, tiles aligned to absolute
 *   positions, each tile converted to F32 once for all the run's rows (a
 *   row's keys are those of nc_fwd_keys: a non-causal model's rows, which
 *   the embedder puts in this order, see their sequence's whole);
 *   in the split order (NC_FLASH_SPLIT) chunk by chunk of
 *   NC_FLASH_SPLIT_KEYS keys, each chunk's state folded into the row's.
 * Work items are split over the threads; every row's result depends on its
 * own keys (and its order) only. When a batch has few runs (decode), the
 * split order's chunks are work items of their own, their states kept in
 * ctx->flash_split and folded in a second pass: the same bits as one item
 * folding them in turn. */
#include <stdlib.h>
#include <string.h>

#include "base/threadpool.h"
#include "forward.h"

enum { FLASH_TILE = 64, PROMPT_ROWS = 64, KT = NC_FLASH_KTILE };

static size_t align64(size_t n) {
  return (n + 63) / 64 * 64;
}

/* Per thread: q as halves (group * hd; a Q8_0 or BF16 row takes no more),
 * M and S (group each), the F16 accumulators (group * hdv), one tile of
 * scores per query; for typed caches also the F32 accumulators (group * hdv),
 * one value row (hdv floats) and one query row (hd floats, rotated). */
static size_t row_scratch_bytes(const nc_hparams *hp) {
  const size_t g = (size_t)(hp->n_head / hp->n_head_kv);
  const size_t hdv = (size_t)hp->head_dim_v;
  return align64(g * (size_t)hp->head_dim * sizeof(nc_fp16)) +
         2 * align64(g * sizeof(float)) + align64(g * hdv * sizeof(nc_fp16)) +
         align64(g * FLASH_TILE * sizeof(float)) +
         align64(g * hdv * sizeof(float)) + align64(hdv * sizeof(float)) +
         align64((size_t)hp->head_dim * sizeof(float)) + 64;
}

/* The prompt order's, per thread: one key tile as F32 (hd x KT keys,
 * transposed) and its values (KT x hdv), then for the m = PROMPT_ROWS * g
 * rows of a run: weights (m x KT), sinks (m), M, S, acc (m x hdv), lo, hi,
 * the q and out pointers. */
typedef struct prompt_mem {
  float *kt, *v, *p;
  float *sink; /* the rows' sinks (m), when the layer has them */
  nc_flash_tstate st;
  nc_flash_tstate tot; /* the split order: the chunks folded so far */
  int32_t *lo, *hi;
  const float **q;
  float **out;
} prompt_mem;

/* Carves aligned pieces off base (NULL: only counts the bytes). */
typedef struct carver {
  uint8_t *base;
  size_t off;
} carver;

static void *take(carver *c, size_t bytes) {
  void *p = c->base ? c->base + c->off : NULL;
  c->off += align64(bytes);
  return p;
}

static prompt_mem prompt_mem_at(uint8_t *mem, const nc_hparams *hp,
                                size_t *bytes) {
  const size_t g = (size_t)(hp->n_head / hp->n_head_kv);
  const size_t m = PROMPT_ROWS * g, hd = (size_t)hp->head_dim,
               hdv = (size_t)hp->head_dim_v;
  carver c = {mem, 0};
  prompt_mem f;
  f.kt = take(&c, sizeof(float) * hd * KT);
  f.v = take(&c, sizeof(float) * KT * hdv);
  f.p = take(&c, sizeof(float) * m * KT);
  f.sink = take(&c, sizeof(float) * m);
  f.st.M = take(&c, sizeof(float) * m);
  f.st.S = take(&c, sizeof(float) * m);
  f.st.acc = take(&c, sizeof(float) * m * hdv);
  f.tot.M = take(&c, sizeof(float) * m);
  f.tot.S = take(&c, sizeof(float) * m);
  f.tot.acc = take(&c, sizeof(float) * m * hdv);
  f.lo = take(&c, sizeof(int32_t) * m);
  f.hi = take(&c, sizeof(int32_t) * m);
  f.q = take(&c, sizeof(const float *) * m);
  f.out = take(&c, sizeof(float *) * m);
  *bytes = c.off;
  return f;
}

size_t nc_fwd_flash_scratch_bytes(const nc_hparams *hp) {
  size_t prompt = 0;
  (void)prompt_mem_at(NULL, hp, &prompt);
  const size_t row = row_scratch_bytes(hp);
  return (row > prompt ? row : prompt) + 64;
}

/* A run of the split order whose chunks are work items of their own: rows
 * [t0, t1) with every query head of KV head kvh, keys from first, chunks
 * [c0, c0 + n_chunks) (of NC_FLASH_SPLIT_KEYS positions), items [item0,
 * item0 + n_chunks), their states at slots + slot0 + c * slot_floats
 * (split_slot). */
typedef struct split_unit {
  int32_t t0, t1, kvh, first, c0, n_chunks;
  int64_t item0;
  size_t slot0, slot_floats;
} split_unit;

/* At most this many such runs per call (a decode batch of few rows). */
enum { SPLIT_MAX_UNITS = 64 };

typedef struct flash_task {
  nc_fwd *ctx;
  int32_t layer, n_swa;
  int32_t n_prompt_rows; /* entries in the prompt order (F16 caches) */
  int32_t n_split;       /* units[0, n_split): chunks as work items */
  int64_t split_items;
  const split_unit *units;
  float softcap;
  const float *sinks; /* NULL, or n_head sinks */
  const nc_batch *b;
  const float *q;
  float *out;
  /* NULL, or the prompt-order runs listed once: run k is entries
   * [runs[2k], runs[2k + 1]), n_runs of them (prompt_runs' order) */
  const int32_t *runs;
  int32_t n_runs;
} flash_task;

/* The scratch of one (row, group) item, laid out as counted above. */
typedef struct flash_mem {
  uint8_t *q;
  nc_flash_state st;
  float *s, *vrow, *qrot;
} flash_mem;

static flash_mem flash_mem_at(uint8_t *mem, const nc_hparams *hp, int32_t g) {
  const int32_t hd = hp->head_dim, hdv = hp->head_dim_v;
  flash_mem f = {.q = mem};
  mem += align64((size_t)g * (size_t)hd * sizeof(nc_fp16));
  f.st.M = (float *)mem;
  mem += align64((size_t)g * sizeof(float));
  f.st.S = (float *)mem;
  mem += align64((size_t)g * sizeof(float));
  f.st.acc = (nc_fp16 *)mem;
  mem += align64((size_t)g * (size_t)hdv * sizeof(nc_fp16));
  f.s = (float *)mem;
  mem += align64((size_t)g * FLASH_TILE * sizeof(float));
  f.st.acc32 = (float *)mem;
  mem += align64((size_t)g * (size_t)hdv * sizeof(float));
  f.vrow = (float *)mem;
  mem += align64((size_t)hdv * sizeof(float));
  f.qrot = (float *)mem;
  return f;
}

/* The visible keys [lo, hi) of entry t (nc_fwd_keys: causal, or a
 * non-causal row's whole sequence, within the window). */
static void row_keys(const flash_task *a, int32_t t, int32_t *lo, int32_t *hi) {
  nc_fwd_keys(a->ctx, a->b, t, a->n_swa, lo, hi);
}

/* The first key that run [t0, t1) sees (its first row's) and the end of
 * its keys (its last row's): rows of a run are consecutive positions, and
 * each row's range starts and ends no earlier than the one before. */
static int32_t run_first(const flash_task *a, int32_t t0) {
  int32_t lo, hi;
  row_keys(a, t0, &lo, &hi);
  return lo;
}

static int32_t run_end(const flash_task *a, int32_t t1) {
  int32_t lo, hi;
  row_keys(a, t1 - 1, &lo, &hi);
  return hi;
}

/* The visible keys of row t, a tile at a time: [j0, j1) within one block. */

static int32_t flash_tile_end(int32_t j0, int32_t hi, int32_t bt) {
  const int32_t block_end = (j0 / bt + 1) * bt;
  int32_t j1 = hi < block_end ? hi : block_end;
  if (j1 - j0 > FLASH_TILE) j1 = j0 + FLASH_TILE;
  return j1;
}

static void flash_group(const flash_task *a, int32_t t, int32_t h0, int32_t m,
                        uint8_t *mem) {
  const nc_fwd *c = a->ctx;
  const nc_hparams *hp = c->hp;
  const int32_t hd = hp->head_dim, hdv = hp->head_dim_v;
  const int32_t dk = nc_hp_n_embd_k(hp), dv = nc_hp_n_embd_v(hp);
  const int32_t g = hp->n_head / hp->n_head_kv, kvh = h0 / g;
  flash_mem f = flash_mem_at(mem, hp, g);
  nc_fp16 *q16 = (nc_fp16 *)f.q;
  const float *qrow = a->q + (int64_t)t * hp->n_head * hd + (int64_t)h0 * hd;
  c->ops->to_f16(qrow, q16, (int64_t)m * hd);
  const nc_flash_query fq = {.q = q16,
                             .m = m,
                             .hd = hd,
                             .hdv = hdv,
                             .scale = hp->attn_scale,
                             .softcap = a->softcap};
  f.st.acc32 = NULL;
  nc_flash_state_init(&f.st, m, hdv);
  const int32_t seq = a->b->seq[t];
  int32_t lo, hi;
  nc_fwd_keys(c, a->b, t, a->n_swa, &lo, &hi);
  const int32_t bt = nc_kv_block_tokens(c->kv);
  for (int32_t j0 = lo, j1; j0 < hi; j0 = j1) {
    j1 = flash_tile_end(j0, hi, bt);
    const nc_fp16 *kb =
        nc_kv_k_row_c(c->kv, a->layer, seq, j0) + (int64_t)kvh * hd;
    const nc_fp16 *vb =
        nc_kv_v_row_c(c->kv, a->layer, seq, j0) + (int64_t)kvh * hdv;
    c->flash->tile(&fq, kb, (size_t)dk, vb, (size_t)dv, j1 - j0, c->f16tab, f.s,
                   &f.st);
  }
  float *o = a->out + (int64_t)t * hp->n_head * hdv + (int64_t)h0 * hdv;
  nc_flash_finish(&f.st, m, hdv, c->f16tab, a->sinks ? a->sinks + h0 : NULL, o,
                  (size_t)hdv);
}

/* The same over a typed cache (attn_flash.h's typed tiles): q converted to
 * the K type's dot format per head, as llama.cpp converts each row. */
static void flash_group_typed(const flash_task *a, int32_t t, int32_t h0,
                              int32_t m, uint8_t *mem) {
  const nc_fwd *c = a->ctx;
  const nc_hparams *hp = c->hp;
  const int32_t hd = hp->head_dim, hdv = hp->head_dim_v;
  const int32_t g = hp->n_head / hp->n_head_kv, kvh = h0 / g;
  const nc_kv_types ty = nc_kv_cache_types(c->kv);
  const size_t rk = nc_kv_k_row_bytes(c->kv, a->layer),
               rv = nc_kv_v_row_bytes(c->kv, a->layer);
  const size_t hk = rk / (size_t)hp->n_head_kv, hv = rv / (size_t)hp->n_head_kv;
  flash_mem f = flash_mem_at(mem, hp, g);
  const nc_type qt = nc_flash_q_type(ty.k);
  const size_t qb = nc_row_size(qt, hd);
  const float *qrow = a->q + (int64_t)t * hp->n_head * hd + (int64_t)h0 * hd;
  const int32_t rot_k = nc_kv_rot_k(c->kv, a->layer),
                rot_v = nc_kv_rot_v(c->kv, a->layer);
  for (int32_t i = 0; i < m; i++) {
    const float *qi = qrow + (int64_t)i * hd;
    if (rot_k > 0) { /* q rotated with the keys: the same q.k */
      memcpy(f.qrot, qi, sizeof(float) * (size_t)hd);
      nc_fwht(f.qrot, hd, rot_k);
      qi = f.qrot;
    }
    nc_quantize_row(qt, qi, f.q + (size_t)i * qb, hd);
  }
  const nc_flash_tquery fq = {.q = f.q,
                              .q_bytes = qb,
                              .m = m,
                              .hd = hd,
                              .hdv = hdv,
                              .scale = hp->attn_scale,
                              .softcap = a->softcap,
                              .k_type = ty.k,
                              .v_type = ty.v};
  if (ty.v == NC_TYPE_F16)
    f.st.acc32 = NULL;
  else
    f.st.acc = NULL;
  nc_flash_state_init(&f.st, m, hdv);
  const int32_t seq = a->b->seq[t];
  int32_t lo, hi;
  nc_fwd_keys(c, a->b, t, a->n_swa, &lo, &hi);
  const int32_t bt = nc_kv_block_tokens(c->kv);
  for (int32_t j0 = lo, j1; j0 < hi; j0 = j1) {
    j1 = flash_tile_end(j0, hi, bt);
    const uint8_t *kb =
        (const uint8_t *)nc_kv_k_data_c(c->kv, a->layer, seq, j0) +
        (size_t)kvh * hk;
    const uint8_t *vb =
        (const uint8_t *)nc_kv_v_data_c(c->kv, a->layer, seq, j0) +
        (size_t)kvh * hv;
    c->flash->tile_typed(&fq, kb, rk, vb, rv, j1 - j0, c->f16tab, f.s, f.vrow,
                         &f.st);
  }
  float *o = a->out + (int64_t)t * hp->n_head * hdv + (int64_t)h0 * hdv;
  nc_flash_finish_typed(&f.st, ty.v, m, hdv, c->f16tab,
                        a->sinks ? a->sinks + h0 : NULL, o, (size_t)hdv);
  if (rot_v > 0) nc_fwht(o, (int64_t)m * hdv, rot_v); /* rotated back */
}

/* ---- the prompt order */

/* Whether entry t continues the run that entry t - 1 is in. */
static bool run_continues(const nc_batch *b, int32_t t) {
  return t > 0 && b->prompt_order[t - 1] == b->prompt_order[t] &&
         b->seq[t] == b->seq[t - 1] && b->pos[t] == b->pos[t - 1] + 1;
}

/* The runs of prompt-order entries, cut at PROMPT_ROWS: calls visit(k,
 * t0, t1) for the k-th run [t0, t1) and returns their number. */
static int32_t prompt_runs(const nc_batch *b, int32_t want, int32_t *t0,
                           int32_t *t1) {
  int32_t k = 0;
  for (int32_t t = 0; t < b->n_tokens;) {
    if (!b->prompt_order[t]) {
      t++;
      continue;
    }
    int32_t e = t + 1;
    while (e < b->n_tokens && e - t < PROMPT_ROWS && b->prompt_order[e] &&
           run_continues(b, e))
      e++;
    if (k == want) {
      *t0 = t;
      *t1 = e;
    }
    k++;
    t = e;
  }
  return k;
}

/* prompt_runs' runs, all in one pass: run k as runs[2k], runs[2k + 1];
 * returns their number. */
static int32_t prompt_runs_list(const nc_batch *b, int32_t *runs) {
  int32_t k = 0;
  for (int32_t t = 0; t < b->n_tokens;) {
    if (!b->prompt_order[t]) {
      t++;
      continue;
    }
    int32_t e = t + 1;
    while (e < b->n_tokens && e - t < PROMPT_ROWS && b->prompt_order[e] &&
           run_continues(b, e))
      e++;
    runs[2 * k] = t;
    runs[2 * k + 1] = e;
    k++;
    t = e;
  }
  return k;
}

/* Run k's entries [t0, t1): from the list when there is one, else found
 * again (prompt_runs). */
static void run_at(const flash_task *a, int32_t k, int32_t *t0, int32_t *t1) {
  if (a->runs) {
    *t0 = a->runs[2 * k];
    *t1 = a->runs[2 * k + 1];
  } else {
    prompt_runs(a->b, k, t0, t1);
  }
}

/* Keys [k0, k1) of the tile at j0 as F32: K transposed, V as rows (the
 * kernel table's tile_widen, one cache block's run at a time). */
static void gather_tile(const flash_task *a, int32_t seq, int32_t kvh,
                        int32_t j0, int32_t k0, int32_t k1, prompt_mem *f) {
  const nc_fwd *c = a->ctx;
  const nc_hparams *hp = c->hp;
  const int32_t hd = hp->head_dim, hdv = hp->head_dim_v;
  const size_t dk = (size_t)nc_hp_n_embd_k(hp), dv = (size_t)nc_hp_n_embd_v(hp);
  const int32_t bt = nc_kv_block_tokens(c->kv);
  for (int32_t j = k0, e; j < k1; j = e) {
    e = (j / bt + 1) * bt < k1 ? (j / bt + 1) * bt : k1;
    const nc_fp16 *kr =
        nc_kv_k_row_c(c->kv, a->layer, seq, j) + (int64_t)kvh * hd;
    const nc_fp16 *vr =
        nc_kv_v_row_c(c->kv, a->layer, seq, j) + (int64_t)kvh * hdv;
    c->flash->tile_widen(kr, dk, vr, dv, e - j, hd, hdv, c->f16tab,
                         f->kt + (j - j0),
                         f->v + (size_t)(j - j0) * (size_t)hdv);
  }
}

/* The rows of run [t0, t1) with query heads [h0, h1) of KV head kvh: their
 * q, out and sinks in f (row (t - t0) * (h1 - h0) + h); returns their
 * number. */
static int32_t run_rows(const flash_task *a, int32_t t0, int32_t t1,
                        int32_t kvh, int32_t h0, int32_t h1, prompt_mem *f) {
  const nc_hparams *hp = a->ctx->hp;
  const int32_t hd = hp->head_dim, hdv = hp->head_dim_v, H = hp->n_head;
  const int32_t g = h1 - h0;
  for (int32_t t = t0; t < t1; t++)
    for (int32_t h = 0; h < g; h++) {
      const int32_t i = (t - t0) * g + h,
                    head = kvh * (H / hp->n_head_kv) + h0 + h;
      f->q[i] = a->q + (int64_t)t * H * hd + (int64_t)head * hd;
      if (a->sinks) f->sink[i] = a->sinks[head];
      f->out[i] = a->out + (int64_t)t * H * hdv + (int64_t)head * hdv;
    }
  return (t1 - t0) * g;
}

/* The run's keys in [c0, c1) (c0 tile-aligned, or the run's first key)
 * folded into st, a tile at a time; f's rows set by run_rows. */
static void run_keys(const flash_task *a, int32_t t0, int32_t t1, int32_t kvh,
                     int32_t g, int32_t c0, int32_t c1, prompt_mem *f,
                     nc_flash_tstate *st) {
  const nc_hparams *hp = a->ctx->hp;
  const nc_flash_rows r = {.q = f->q,
                           .lo = f->lo,
                           .hi = f->hi,
                           .m = (t1 - t0) * g,
                           .hd = hp->head_dim,
                           .hdv = hp->head_dim_v,
                           .scale = hp->attn_scale,
                           .softcap = a->softcap};
  const int32_t seq = a->b->seq[t0], e1 = run_end(a, t1);
  const int32_t end = e1 < c1 ? e1 : c1;
  for (int32_t j0 = c0 / KT * KT; j0 < end; j0 += KT) {
    const int32_t k0 = c0 > j0 ? c0 : j0;
    const int32_t k1 = end < j0 + KT ? end : j0 + KT;
    gather_tile(a, seq, kvh, j0, k0, k1, f);
    for (int32_t t = t0; t < t1; t++) {
      int32_t lo, hi;
      row_keys(a, t, &lo, &hi);
      const int32_t from = lo > k0 ? lo : k0, to = hi < k1 ? hi : k1;
      for (int32_t h = 0; h < g; h++) {
        f->lo[(t - t0) * g + h] = from - j0;
        f->hi[(t - t0) * g + h] = to - j0;
      }
    }
    a->ctx->flash->tile_prompt(&r, f->kt, f->v, f->p, st);
  }
}

/* The chunk of NC_FLASH_SPLIT_KEYS positions that key j is in, and the end
 * of [j, ...) in it. */
static int32_t chunk_end(int32_t j, int32_t end) {
  const int32_t e = (j / NC_FLASH_SPLIT_KEYS + 1) * NC_FLASH_SPLIT_KEYS;
  return e < end ? e : end;
}

/* One run [t0, t1) with query heads [h0, h1) of KV head kvh (each row's
 * head's result is the same whatever the others in the call): its keys in
 * one state (the tiled order) or chunk by chunk (the split order). */
static void prompt_run(const flash_task *a, int32_t t0, int32_t t1, int32_t kvh,
                       int32_t h0, int32_t h1, uint8_t *mem) {
  const nc_hparams *hp = a->ctx->hp;
  const int32_t hd = hp->head_dim, hdv = hp->head_dim_v;
  size_t bytes;
  prompt_mem f = prompt_mem_at(mem, hp, &bytes);
  (void)bytes;
  memset(f.kt, 0, sizeof(float) * (size_t)hd * KT);
  memset(f.v, 0, sizeof(float) * (size_t)hdv * KT);
  const int32_t m = run_rows(a, t0, t1, kvh, h0, h1, &f), g = h1 - h0;
  const int32_t first = run_first(a, t0), end = run_end(a, t1);
  if (a->b->prompt_order[t0] != NC_FLASH_SPLIT) {
    nc_flash_tstate_init(&f.st, m, hdv);
    run_keys(a, t0, t1, kvh, g, first, end, &f, &f.st);
    nc_flash_tfinish(&f.st, m, hdv, a->sinks ? f.sink : NULL, f.out);
    return;
  }
  nc_flash_tstate_init(&f.tot, m, hdv);
  for (int32_t c0 = first, c1; c0 < end; c0 = c1) {
    c1 = chunk_end(c0, end);
    nc_flash_tstate_init(&f.st, m, hdv);
    run_keys(a, t0, t1, kvh, g, c0, c1, &f, &f.st);
    nc_flash_tstate_fold(&f.tot, &f.st, m, hdv);
  }
  nc_flash_tfinish(&f.tot, m, hdv, a->sinks ? f.sink : NULL, f.out);
}

/* ---- the split order's chunks as work items */

static size_t align16(size_t n) {
  return (n + 15) / 16 * 16;
}

/* The state of chunk c of unit u: M, S (m each), acc (m x hdv). */
static nc_flash_tstate split_slot(const flash_task *a, const split_unit *u,
                                  int32_t c) {
  const int32_t m =
      (u->t1 - u->t0) * (a->ctx->hp->n_head / a->ctx->hp->n_head_kv);
  float *s = a->ctx->flash_split + u->slot0 + (size_t)c * u->slot_floats;
  return (nc_flash_tstate){
      .M = s, .S = s + align16((size_t)m), .acc = s + 2 * align16((size_t)m)};
}

/* Item c of unit u: the chunk's keys from a fresh state into its slot.
 * The tile scratch is not cleared: keys no row sees may hold any finite
 * values (the context zeroes it once, then it holds widened keys). */
static void split_chunk(const flash_task *a, const split_unit *u, int32_t c,
                        uint8_t *mem) {
  const nc_hparams *hp = a->ctx->hp;
  const int32_t G = hp->n_head / hp->n_head_kv;
  size_t bytes;
  prompt_mem f = prompt_mem_at(mem, hp, &bytes);
  (void)bytes;
  const int32_t m = run_rows(a, u->t0, u->t1, u->kvh, 0, G, &f);
  nc_flash_tstate st = split_slot(a, u, c);
  nc_flash_tstate_init(&st, m, hp->head_dim_v);
  const int32_t end = run_end(a, u->t1);
  const int32_t k = (u->c0 + c) * NC_FLASH_SPLIT_KEYS;
  const int32_t c0 = u->first > k ? u->first : k;
  run_keys(a, u->t0, u->t1, u->kvh, G, c0, chunk_end(c0, end), &f, &st);
}

/* Unit u's chunks folded in position order into the first's slot (as
 * folding them into a fresh state: the first is copied), then finished. */
static void split_finish(const flash_task *a, const split_unit *u,
                         uint8_t *mem) {
  const nc_hparams *hp = a->ctx->hp;
  const int32_t G = hp->n_head / hp->n_head_kv, hdv = hp->head_dim_v;
  size_t bytes;
  prompt_mem f = prompt_mem_at(mem, hp, &bytes);
  (void)bytes;
  const int32_t m = run_rows(a, u->t0, u->t1, u->kvh, 0, G, &f);
  const nc_flash_tstate tot = split_slot(a, u, 0);
  for (int32_t c = 1; c < u->n_chunks; c++) {
    const nc_flash_tstate part = split_slot(a, u, c);
    nc_flash_tstate_fold(&tot, &part, m, hdv);
  }
  nc_flash_tfinish(&tot, m, hdv, a->sinks ? f.sink : NULL, f.out);
}

static void split_worker(void *p, int ith, int nth) {
  const flash_task *a = p;
  uint8_t *mem = a->ctx->flash_mem + (size_t)ith * a->ctx->flash_stride;
  int32_t u = 0;
  for (int64_t k = ith; k < a->split_items; k += nth) {
    while (k >= a->units[u].item0 + a->units[u].n_chunks)
      u++;
    split_chunk(a, &a->units[u], (int32_t)(k - a->units[u].item0), mem);
  }
}

static void split_finish_worker(void *p, int ith, int nth) {
  const flash_task *a = p;
  uint8_t *mem = a->ctx->flash_mem + (size_t)ith * a->ctx->flash_stride;
  for (int32_t u = ith; u < a->n_split; u += nth)
    split_finish(a, &a->units[u], mem);
}

/* Item k of n in the order that evens the threads' work: rounds of nth,
 * every other round reversed (later runs see more keys). */
static int64_t snake(int64_t k, int nth) {
  const int64_t round = k / nth, in = k % nth;
  return round % 2 == 0 ? k : round * nth + (nth - 1 - in);
}

/* Work items: the prompt order's (run, KV head), or (run, KV head, a part
 * of its query heads) when there are few of those for the threads (decode:
 * each part widens the key tiles again, no idle thread);
 * then the row order's as att_worker's: (row, GQA group) when there is one
 * per thread, else (row, head). */
static void flash_worker(void *p, int ith, int nth) {
  const flash_task *a = p;
  const nc_hparams *hp = a->ctx->hp;
  const nc_batch *b = a->b;
  uint8_t *mem = a->ctx->flash_mem + (size_t)ith * a->ctx->flash_stride;
  const int32_t KVH = hp->n_head_kv, G = hp->n_head / KVH;
  if (a->n_prompt_rows > 0) {
    int32_t t0 = 0, t1 = 0;
    const int64_t units =
        (int64_t)(a->runs ? a->n_runs : prompt_runs(b, -1, &t0, &t1)) * KVH;
    /* enough items for the threads, and an even share where few */
    int32_t parts = 1;
    while (parts < G && (units * parts < nth ||
                         (units * parts % nth != 0 && units * parts < 2 * nth)))
      parts++;
    const int64_t items = units * parts;
    for (int64_t k = ith; k < items; k += nth) {
      int64_t i = snake(k, nth);
      if (i >= items) i = k; /* the last, short round */
      const int32_t part = (int32_t)(i % parts);
      const int64_t u = i / parts;
      run_at(a, (int32_t)(u / KVH), &t0, &t1);
      prompt_run(a, t0, t1, (int32_t)(u % KVH), part * G / parts,
                 (part + 1) * G / parts, mem);
    }
  }
  if (a->n_prompt_rows == b->n_tokens) return;
  const int32_t H = hp->n_head;
  const int32_t n_rows = b->n_tokens - a->n_prompt_rows;
  const int32_t per = (int64_t)n_rows * KVH >= nth ? G : 1;
  const int32_t units = H / per;
  const int64_t items = (int64_t)b->n_tokens * units;
  const nc_kv_types ty = nc_kv_cache_types(a->ctx->kv);
  const bool typed = ty.k != NC_TYPE_F16 || ty.v != NC_TYPE_F16;
  /* the row-order entries' items only, dealt out in turn */
  int64_t n = 0;
  for (int64_t i = 0; i < items; i++) {
    const int32_t t = (int32_t)(i / units);
    if (b->prompt_order[t] && a->n_prompt_rows > 0) continue;
    if (n++ % nth != ith) continue;
    (typed ? flash_group_typed : flash_group)(a, t, (int32_t)(i % units) * per,
                                              per, mem);
  }
}

/* Plans the split order's chunks as work items when every row takes it and
 * its runs (times the KV heads) are too few to keep the threads busy, into
 * units (SPLIT_MAX_UNITS): sets a->n_split and a->split_items, growing
 * ctx->flash_split for the slots. Leaves n_split 0 (one item per run, the
 * same bits) when there is no gain or no memory. */
static void plan_split(flash_task *a, split_unit *units) {
  nc_fwd *c = a->ctx;
  const nc_batch *b = a->b;
  const nc_hparams *hp = c->hp;
  const int nth = nc_threadpool_size(c->tp);
  const int32_t KVH = hp->n_head_kv, G = hp->n_head / KVH;
  if (nth < 2 || a->n_prompt_rows != b->n_tokens) return;
  for (int32_t t = 0; t < b->n_tokens; t++)
    if (b->prompt_order[t] != NC_FLASH_SPLIT) return;
  int32_t t0 = 0, t1 = 0;
  const int32_t runs = prompt_runs(b, -1, &t0, &t1);
  if ((int64_t)runs * KVH >= 2 * nth || runs * KVH > SPLIT_MAX_UNITS) return;
  size_t floats = 0;
  int64_t items = 0;
  int32_t n = 0;
  for (int32_t k = 0; k < runs; k++) {
    prompt_runs(b, k, &t0, &t1);
    const int32_t first = run_first(a, t0), last = run_end(a, t1) - 1;
    const size_t m = (size_t)(t1 - t0) * (size_t)G;
    for (int32_t h = 0; h < KVH; h++, n++) {
      split_unit *u = &units[n];
      u->t0 = t0;
      u->t1 = t1;
      u->kvh = h;
      u->first = first;
      u->c0 = first / NC_FLASH_SPLIT_KEYS;
      u->n_chunks = last / NC_FLASH_SPLIT_KEYS - u->c0 + 1;
      u->item0 = items;
      u->slot_floats = 2 * align16(m) + align16(m * (size_t)hp->head_dim_v);
      u->slot0 = floats;
      items += u->n_chunks;
      floats += (size_t)u->n_chunks * u->slot_floats;
    }
  }
  if (items <= n) return; /* one chunk each: nothing to spread */
  if (floats > c->flash_split_cap) {
    float *grown = aligned_alloc(64, floats * sizeof(float));
    if (!grown) return;
    free(c->flash_split);
    c->flash_split = grown;
    c->flash_split_cap = floats;
  }
  a->n_split = n;
  a->split_items = items;
  a->units = units;
}

void nc_fwd_attention_flash(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                            const float *q, float *out, int32_t n_swa,
                            float softcap, const float *sinks) {
  flash_task a = {.ctx = ctx,
                  .layer = layer,
                  .n_swa = n_swa,
                  .softcap = softcap,
                  .sinks = sinks,
                  .b = b,
                  .q = q,
                  .out = out};
  const nc_kv_types ty = nc_kv_cache_types(ctx->kv);
  if (ty.k == NC_TYPE_F16 && ty.v == NC_TYPE_F16)
    for (int32_t t = 0; t < b->n_tokens; t++)
      a.n_prompt_rows += b->prompt_order[t] ? 1 : 0;
  if (a.n_prompt_rows == b->n_tokens &&
      nc_fwd_flash_rows(ctx, layer, b, q, out, n_swa, softcap, sinks))
    return;
  split_unit units[SPLIT_MAX_UNITS];
  plan_split(&a, units);
  if (a.n_split == 0) {
    /* the runs listed once for every work item (without memory each item
     * finds its own run again) */
    int32_t *runs = a.n_prompt_rows > 0
                        ? malloc(sizeof(int32_t) * 2 * (size_t)b->n_tokens)
                        : NULL;
    if (runs) a.n_runs = prompt_runs_list(b, runs);
    a.runs = runs;
    nc_threadpool_run(ctx->tp, flash_worker, &a);
    free(runs);
    return;
  }
  nc_threadpool_run(ctx->tp, split_worker, &a);
  nc_threadpool_run(ctx->tp, split_finish_worker, &a);
}
