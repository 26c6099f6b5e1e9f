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

/* Per thread: q as halves (group * hd), M and S (group each), the F16
 * accumulators (group * hdv), one tile of scores. */
size_t nc_fwd_flash_scratch_bytes(const nc_hparams *hp) {
  const size_t g = (size_t)(hp->n_head / hp->n_head_kv);
  return align64(g * (size_t)hp->head_dim * sizeof(nc_fp16)) +
         2 * align64(g * sizeof(float)) +
         align64(g * (size_t)hp->head_dim_v * sizeof(nc_fp16)) +
         align64(FLASH_TILE * sizeof(float)) + 64;
}

typedef struct flash_task {
  nc_fwd *ctx;
  int32_t layer, n_swa;
  float softcap;
  const nc_batch *b;
  const float *q;
  float *out;
} flash_task;

static void flash_group(const flash_task *a, int32_t t, int32_t h0, int32_t m,
                        uint8_t *mem) {
  const nc_fwd *c = a->ctx;
  const nc_hparams *hp = c->hp;
  const int32_t hd = hp->head_dim, hdv = hp->head_dim_v;
  const int32_t dk = nc_hp_n_embd_k(hp), dv = nc_hp_n_embd_v(hp);
  const int32_t g = hp->n_head / hp->n_head_kv, kvh = h0 / g;
  nc_fp16 *q16 = (nc_fp16 *)mem;
  mem += align64((size_t)g * (size_t)hd * sizeof(nc_fp16));
  nc_flash_state st = {.M = (float *)mem};
  mem += align64((size_t)g * sizeof(float));
  st.S = (float *)mem;
  mem += align64((size_t)g * sizeof(float));
  st.acc = (nc_fp16 *)mem;
  mem += align64((size_t)g * (size_t)hdv * sizeof(nc_fp16));
  float *s = (float *)mem;
  const float *qrow = a->q + (int64_t)t * hp->n_head * hd + (int64_t)h0 * hd;
  c->ops->to_f16(qrow, q16, (int64_t)m * hd);
  const nc_flash_query fq = {.q = q16,
                             .m = m,
                             .hd = hd,
                             .hdv = hdv,
                             .scale = hp->attn_scale,
                             .softcap = a->softcap};
  nc_flash_state_init(&st, m, hdv);
  const int32_t seq = a->b->seq[t], p = a->b->pos[t];
  const int32_t bt = nc_kv_block_tokens(c->kv);
  int32_t j0 = a->n_swa > 0 && p - a->n_swa + 1 > 0 ? p - a->n_swa + 1 : 0;
  while (j0 <= p) {
    const int32_t block_end = (j0 / bt + 1) * bt;
    int32_t j1 = p + 1 < block_end ? p + 1 : block_end;
    if (j1 - j0 > FLASH_TILE) j1 = j0 + FLASH_TILE;
    const nc_fp16 *kb =
        nc_kv_k_row_c(c->kv, a->layer, seq, j0) + (int64_t)kvh * hd;
    const nc_fp16 *vb =
        nc_kv_v_row_c(c->kv, a->layer, seq, j0) + (int64_t)kvh * hdv;
    c->flash->tile(&fq, kb, (size_t)dk, vb, (size_t)dv, j1 - j0, c->f16tab, s,
                   &st);
    j0 = j1;
  }
  float *o = a->out + (int64_t)t * hp->n_head * hdv + (int64_t)h0 * hdv;
  nc_flash_finish(&st, m, hdv, c->f16tab, o, (size_t)hdv);
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
  for (int64_t i = ith; i < items; i += nth)
    flash_group(a, (int32_t)(i / units), (int32_t)(i % units) * per, per, mem);
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
