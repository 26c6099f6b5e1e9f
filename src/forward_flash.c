/* forward_flash: flash attention over the paged KV cache (attn_flash.h):
 * each (row, GQA group) walks its visible keys block by block, at most
 * FLASH_TILE keys per kernel call, carrying the online-softmax state from
 * tile to tile. Work items are split over the threads; every row's result
 * depends on its own keys only. */
#include <string.h>

#include "forward.h"
#include "threadpool.h"

enum { FLASH_TILE = 64 };

static size_t align64(size_t n) {
  return (n + 63) / 64 * 64;
}

/* Per thread: q as halves (group * hd; a Q8_0 or BF16 row takes no more),
 * M and S (group each), the F16 accumulators (group * hdv), one tile of
 * scores; for typed caches also the F32 accumulators (group * hdv), one
 * value row (hdv floats) and one query row (hd floats, rotated). */
size_t nc_fwd_flash_scratch_bytes(const nc_hparams *hp) {
  const size_t g = (size_t)(hp->n_head / hp->n_head_kv);
  const size_t hdv = (size_t)hp->head_dim_v;
  return align64(g * (size_t)hp->head_dim * sizeof(nc_fp16)) +
         2 * align64(g * sizeof(float)) + align64(g * hdv * sizeof(nc_fp16)) +
         align64(FLASH_TILE * sizeof(float)) +
         align64(g * hdv * sizeof(float)) + align64(hdv * sizeof(float)) +
         align64((size_t)hp->head_dim * sizeof(float)) + 64;
}

typedef struct flash_task {
  nc_fwd *ctx;
  int32_t layer, n_swa;
  float softcap;
  const nc_batch *b;
  const float *q;
  float *out;
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
  mem += align64(FLASH_TILE * sizeof(float));
  f.st.acc32 = (float *)mem;
  mem += align64((size_t)g * (size_t)hdv * sizeof(float));
  f.vrow = (float *)mem;
  mem += align64((size_t)hdv * sizeof(float));
  f.qrot = (float *)mem;
  return f;
}

/* The visible keys of row t, a tile at a time: [j0, j1) within one block. */
static int32_t flash_first(const flash_task *a, int32_t p) {
  return a->n_swa > 0 && p - a->n_swa + 1 > 0 ? p - a->n_swa + 1 : 0;
}

static int32_t flash_tile_end(int32_t j0, int32_t p, int32_t bt) {
  const int32_t block_end = (j0 / bt + 1) * bt;
  int32_t j1 = p + 1 < block_end ? p + 1 : block_end;
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
  const int32_t seq = a->b->seq[t], p = a->b->pos[t];
  const int32_t bt = nc_kv_block_tokens(c->kv);
  for (int32_t j0 = flash_first(a, p), j1; j0 <= p; j0 = j1) {
    j1 = flash_tile_end(j0, p, bt);
    const nc_fp16 *kb =
        nc_kv_k_row_c(c->kv, a->layer, seq, j0) + (int64_t)kvh * hd;
    const nc_fp16 *vb =
        nc_kv_v_row_c(c->kv, a->layer, seq, j0) + (int64_t)kvh * hdv;
    c->flash->tile(&fq, kb, (size_t)dk, vb, (size_t)dv, j1 - j0, c->f16tab, f.s,
                   &f.st);
  }
  float *o = a->out + (int64_t)t * hp->n_head * hdv + (int64_t)h0 * hdv;
  nc_flash_finish(&f.st, m, hdv, c->f16tab, o, (size_t)hdv);
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
  const size_t rk = nc_kv_k_row_bytes(c->kv), rv = nc_kv_v_row_bytes(c->kv);
  const size_t hk = rk / (size_t)hp->n_head_kv, hv = rv / (size_t)hp->n_head_kv;
  flash_mem f = flash_mem_at(mem, hp, g);
  const nc_type qt = nc_flash_q_type(ty.k);
  const size_t qb = nc_row_size(qt, hd);
  const float *qrow = a->q + (int64_t)t * hp->n_head * hd + (int64_t)h0 * hd;
  const int32_t rot_k = nc_kv_rot_k(c->kv), rot_v = nc_kv_rot_v(c->kv);
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
  const int32_t seq = a->b->seq[t], p = a->b->pos[t];
  const int32_t bt = nc_kv_block_tokens(c->kv);
  for (int32_t j0 = flash_first(a, p), j1; j0 <= p; j0 = j1) {
    j1 = flash_tile_end(j0, p, bt);
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
  nc_flash_finish_typed(&f.st, ty.v, m, hdv, c->f16tab, o, (size_t)hdv);
  if (rot_v > 0) nc_fwht(o, (int64_t)m * hdv, rot_v); /* rotated back */
}

/* Work items as att_worker's: (row, GQA group) when there is one per
 * thread, else (row, head). */
static void flash_worker(void *p, int ith, int nth) {
  const flash_task *a = p;
  const nc_hparams *hp = a->ctx->hp;
  const int32_t H = hp->n_head, G = H / hp->n_head_kv;
  const int32_t per = (int64_t)a->b->n_tokens * hp->n_head_kv >= nth ? G : 1;
  const int32_t units = H / per;
  const int64_t items = (int64_t)a->b->n_tokens * units;
  uint8_t *mem = a->ctx->flash_mem + (size_t)ith * a->ctx->flash_stride;
  const nc_kv_types ty = nc_kv_cache_types(a->ctx->kv);
  const bool typed = ty.k != NC_TYPE_F16 || ty.v != NC_TYPE_F16;
  for (int64_t i = ith; i < items; i += nth)
    (typed ? flash_group_typed : flash_group)(
        a, (int32_t)(i / units), (int32_t)(i % units) * per, per, mem);
}

void nc_fwd_attention_flash(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                            const float *q, float *out, int32_t n_swa,
                            float softcap) {
  flash_task a = {.ctx = ctx,
                  .layer = layer,
                  .n_swa = n_swa,
                  .softcap = softcap,
                  .b = b,
                  .q = q,
                  .out = out};
  nc_threadpool_run(ctx->tp, flash_worker, &a);
}
