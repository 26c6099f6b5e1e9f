/* context: scratch buffers, the thread pool and batch validation around the
 * arch's forward graph (whose primitives are forward.c's). */
#include "context.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "base/threadpool.h"
#include "forward.h"
#include "kernels/attn_kernel.h"
#include "kernels/ops.h"

struct nc_context {
  nc_fwd fwd; /* what the arch's graph runs over */
  int32_t max_tokens;
  float *buf_mem;
  int32_t
      *moe_ints;  /* mixture of experts: the bufs' moe_sel, moe_at, moe_rows */
  float *rec_mem; /* NC_SCRATCH_RECURRENT: the bufs' ssm_* and qg */
  float *mtp_mem; /* hparams.mtp: the bufs' mtp_* */
  uint8_t *few;   /* the fwd's few_rows, few_tmp and few_exp */
  int32_t att_max_pos;
  int32_t *next_pos; /* [max_seqs]: validation */
  uint8_t *touched;  /* [max_seqs] */
};

static int32_t max2(int32_t a, int32_t b) {
  return a > b ? a : b;
}
static int32_t max3(int32_t a, int32_t b, int32_t c) {
  const int32_t m = a > b ? a : b;
  return m > c ? m : c;
}

nc_code nc_context_create(const nucleus_model *m, nc_kv_cache *kv,
                          int32_t max_batch_tokens, nc_context **out,
                          nc_error *err) {
  *out = NULL;
  if (!m || !kv)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "context: model and KV cache are required");
  if (max_batch_tokens < 1 || max_batch_tokens > (1 << 20))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "max_batch_tokens %d: must be in [1, %d]",
                   (int)max_batch_tokens, 1 << 20);
  nc_context *c = calloc(1, sizeof *c);
  if (!c) return nc_fail(err, NC_ERR_NOMEM, "context: out of memory");
  c->fwd.m = m;
  c->fwd.hp = nc_model_hparams(m);
  c->fwd.kern = nc_model_kernels(m);
  /* attention and row ops come with the model's kernel table */
  c->fwd.attn = c->fwd.kern->attn ? c->fwd.kern->attn() : NULL;
  c->fwd.ops = c->fwd.kern->ops ? c->fwd.kern->ops() : NULL;
  if (!c->fwd.attn) c->fwd.attn = nc_attn_kernels_plain();
  if (!c->fwd.ops) c->fwd.ops = nc_ops_plain();
  if (nc_model_flash_attn(m)) {
    c->fwd.flash = c->fwd.kern->attn_flash ? c->fwd.kern->attn_flash() : NULL;
    if (!c->fwd.flash) c->fwd.flash = nc_attn_flash_plain();
  }
  const nc_kv_types kt = nc_kv_cache_types(kv);
  if ((kt.k != NC_TYPE_F16 || kt.v != NC_TYPE_F16) && !c->fwd.flash) {
    free(c);
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "context: a KV cache of types K %s, V %s needs flash "
                   "attention (the model runs without it)",
                   nc_type_name(kt.k), nc_type_name(kt.v));
  }
  c->fwd.kv = kv;
  c->max_tokens = max_batch_tokens;
  const nc_hparams *hp = c->fwd.hp;
  const int64_t state = nc_hp_kv_shape(hp).state_floats;
  if (nc_kv_state_floats(kv) != state) {
    free(c);
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "context: the KV cache keeps %lld floats of recurrent "
                   "state per sequence, the model needs %lld",
                   (long long)nc_kv_state_floats(kv), (long long)state);
  }
  nc_code rc = nc_threadpool_create(nc_model_n_threads(m), &c->fwd.tp, err);
  if (rc) {
    free(c);
    return rc;
  }
  const size_t T = (size_t)max_batch_tokens;
  /* the widest of the layers' attention shapes (gemma4's sliding-window
   * layers have their own: hs) */
  const nc_hparams hs = nc_hp_layer(hp, true);
  const size_t hd = (size_t)max2(hp->head_dim, hs.head_dim),
               hdv = (size_t)max2(hp->head_dim_v, hs.head_dim_v);
  const size_t w_q = (size_t)hp->n_head * hd;
  const size_t w_att = (size_t)hp->n_head * hdv;
  const size_t w_k = (size_t)max2(nc_hp_n_embd_k(hp), nc_hp_n_embd_k(&hs)),
               w_v = (size_t)max2(nc_hp_n_embd_v(hp), nc_hp_n_embd_v(&hs));
  const size_t w_xn = (size_t)hp->n_embd > w_att ? (size_t)hp->n_embd : w_att;
  const size_t half = (size_t)max2(hp->n_rot, hs.n_rot) / 2;
  /* gemma4: the per-layer inputs of every layer, and a second row of the
   * residual's width (its FFN beside the experts) */
  const size_t w_ple = (size_t)hp->n_embd_per_layer * (size_t)hp->n_layer;
  const size_t w_side =
      nc_model_arch(m)->scratch & NC_SCRATCH_SIDE ? 2 * (size_t)hp->n_embd : 0;
  /* gate and up also take the per-layer inputs' projection */
  const size_t w_ff =
      (size_t)max3(max2(hp->n_ff, hp->n_ff_max), hp->n_ff_exp, (int32_t)w_ple);
  /* mixture of experts: router logits, weights, outputs per (row, slot) */
  const size_t nx = (size_t)hp->n_expert, nk = (size_t)hp->n_expert_used;
  const size_t w_moe = nx ? nx + nk + nk * (size_t)hp->n_embd : 0;
  /* RoPE tables: cos and sin, and the sliding-window layers' own pair for
   * the archs that ask for it */
  const bool swa_rope = nc_model_arch(m)->scratch & NC_SCRATCH_SWA_ROPE;
  const size_t w_rope = (swa_rope ? 4 : 2) * half;
  const size_t per_row = (size_t)hp->n_embd + w_xn + w_q + w_k + w_v + w_att +
                         w_rope + w_moe + w_ple + w_side;
  /* gate and up: a row per batch entry, and at least one per expert used
   * (one decode row's experts side by side: forward_moe.c) */
  const size_t T_ff = T > nk ? T : nk;
  c->buf_mem = malloc((T * per_row + 2 * T_ff * w_ff) * sizeof(float));
  /* Any activation format takes at most 4 bytes per element plus a block
   * header, which one extra element per 8 covers. */
  /* (dense_2's rows: the input of dense_3, the embedder's last head) */
  const int32_t w_dense = (int32_t)nc_model_weights_of(m)->dense_2.ne1;
  const size_t kmax = (size_t)max3(max2(hp->n_embd, w_dense), (int32_t)w_ff,
                                   max3((int32_t)w_att, hp->ssm_d_inner, 1));
  c->fwd.qact_bytes = T_ff * (kmax * 4 + kmax / 2 + 64);
  c->fwd.qact = malloc(c->fwd.qact_bytes);
  c->fwd.f16tab = malloc(65536 * sizeof(float));
  c->fwd.gelu_f16 = calloc(NC_GELU_TABLE_ENTRIES, sizeof(nc_fp16));
  const int64_t kv_pos =
      nc_kv_blocks_total(kv) * (int64_t)nc_kv_block_tokens(kv);
  c->att_max_pos = (int32_t)kv_pos;
  /* Per thread, for the heads of one GQA group: score rows, q rows, lane
   * sets; 64-byte aligned, and rows padded off multiples of 4 KiB (store
   * buffer aliasing between the heads' rows). */
  const size_t group =
      (size_t)max2(hp->n_head / hp->n_head_kv, hs.n_head / hs.n_head_kv);
  c->fwd.att_ss = (size_t)kv_pos / 16 * 16 + 32;
  c->fwd.att_ls = hdv * NC_ATTN_LANES + 16;
  c->fwd.att_stride = group * c->fwd.att_ss + (group * hd + 15) / 16 * 16 +
                      group * c->fwd.att_ls;
  c->fwd.att = aligned_alloc(64, c->fwd.att_stride *
                                     (size_t)nc_threadpool_size(c->fwd.tp) *
                                     sizeof(float));
  c->fwd.kv_row =
      malloc(sizeof(float) * (size_t)max3((int32_t)w_k, (int32_t)w_v, 1));
  const size_t fs = nc_fwd_flash_scratch_bytes(hp),
               fs_swa = nc_fwd_flash_scratch_bytes(&hs);
  c->fwd.flash_stride = fs > fs_swa ? fs : fs_swa;
  c->fwd.flash_mem = aligned_alloc(
      64, c->fwd.flash_stride * (size_t)nc_threadpool_size(c->fwd.tp));
  const bool rec = nc_model_arch(m)->scratch & NC_SCRATCH_RECURRENT;
  const size_t w_conv = (size_t)nc_hp_ssm_conv_dim(hp),
               w_inner = (size_t)hp->ssm_d_inner,
               w_bd = 2 * (size_t)hp->ssm_n_v_heads;
  const size_t w_packed = nc_model_arch(m)->scratch & NC_SCRATCH_SSM_PACKED
                              ? (size_t)nc_hp_ssm_packed_width(hp)
                              : 0;
  if (rec)
    c->rec_mem = malloc(T * (w_conv + 2 * w_inner + w_bd + 2 * w_q + w_packed) *
                        sizeof(float));
  if (hp->mtp) c->mtp_mem = malloc(T * 3 * (size_t)hp->n_embd * sizeof(float));
  c->next_pos = malloc(sizeof(int32_t) * (size_t)nc_kv_max_seqs(kv));
  c->touched = calloc((size_t)nc_kv_max_seqs(kv), 1);
  if (nx) c->moe_ints = malloc(T * (2 * nk + 1) * sizeof(int32_t));
  c->few = malloc(T * (2 + (nk > 0 ? nk : 1)));
  if ((nx && !c->moe_ints) || (rec && !c->rec_mem) ||
      (hp->mtp && !c->mtp_mem) || !c->few || !c->buf_mem || !c->fwd.qact ||
      !c->fwd.f16tab || !c->fwd.gelu_f16 || !c->fwd.flash_mem ||
      !c->fwd.kv_row || !c->fwd.att || !c->next_pos || !c->touched) {
    nc_context_free(c);
    return nc_fail(err, NC_ERR_NOMEM,
                   "context for %d batch tokens: out of memory",
                   (int)max_batch_tokens);
  }
  /* flash attention's tiles start as zeros (finite, forward_flash.c) */
  memset(c->fwd.flash_mem, 0,
         c->fwd.flash_stride * (size_t)nc_threadpool_size(c->fwd.tp));
  float *p = c->buf_mem;
  c->fwd.bufs.x = p, p += T * (size_t)hp->n_embd;
  c->fwd.bufs.xn = p, p += T * w_xn;
  c->fwd.bufs.q = p, p += T * w_q;
  c->fwd.bufs.k = p, p += T * w_k;
  c->fwd.bufs.v = p, p += T * w_v;
  c->fwd.bufs.attn = p, p += T * w_att;
  c->fwd.bufs.gate = p, p += T_ff * w_ff;
  c->fwd.bufs.up = p, p += T_ff * w_ff;
  c->fwd.bufs.rope_cos = p, p += T * half;
  c->fwd.bufs.rope_sin = p, p += T * half;
  if (nx) {
    c->fwd.bufs.moe_logits = p, p += T * nx;
    c->fwd.bufs.moe_w = p, p += T * nk;
    c->fwd.bufs.moe_out = p, p += T * nk * (size_t)hp->n_embd;
    c->fwd.bufs.moe_sel = c->moe_ints;
    c->fwd.bufs.moe_at = c->moe_ints + T * nk;
    c->fwd.bufs.moe_rows = c->moe_ints + 2 * T * nk;
  }
  c->fwd.few_rows = c->few;
  c->fwd.few_tmp = c->few + T;
  c->fwd.few_exp = c->few + 2 * T;
  if (swa_rope) {
    c->fwd.bufs.rope_cos_swa = p, p += T * half;
    c->fwd.bufs.rope_sin_swa = p, p += T * half;
  }
  if (w_ple) c->fwd.bufs.ple = p, p += T * w_ple;
  if (w_side) c->fwd.bufs.side = p, p += T * w_side;
  if (rec) {
    p = c->rec_mem;
    c->fwd.bufs.ssm_mix = p, p += T * w_conv;
    c->fwd.bufs.ssm_z = p, p += T * w_inner;
    c->fwd.bufs.ssm_o = p, p += T * w_inner;
    c->fwd.bufs.ssm_bd = p, p += T * w_bd;
    c->fwd.bufs.qg = p, p += T * 2 * w_q;
    if (w_packed) c->fwd.bufs.ssm_packed = p;
  }
  if (hp->mtp) {
    c->fwd.bufs.mtp_cat = c->mtp_mem;
    c->fwd.bufs.mtp_h = c->mtp_mem + T * 2 * (size_t)hp->n_embd;
  }
  for (uint32_t h = 0; h < 65536; h++)
    c->fwd.f16tab[h] = nc_fp16_to_fp32((nc_fp16)h);
  nc_fwd_gelu_table(c->fwd.gelu_f16);
  *out = c;
  return NC_OK;
}

void nc_context_set_n_ctx(nc_context *c, int32_t n_ctx) {
  c->fwd.n_ctx = n_ctx > 0 ? n_ctx : 0;
}

void nc_context_set_observer(nc_context *c, const nc_fwd_observer *obs) {
  c->fwd.observer = obs;
}

nc_threadpool *nc_context_threadpool(nc_context *c) {
  return c->fwd.tp;
}

void nc_context_free(nc_context *c) {
  if (!c) return;
  nc_threadpool_free(c->fwd.tp);
  free(c->buf_mem);
  free(c->moe_ints);
  free(c->rec_mem);
  free(c->mtp_mem);
  free(c->few);
  free(c->fwd.qact);
  free(c->fwd.qpack);
  free(c->fwd.f16tab);
  free(c->fwd.gelu_f16);
  free(c->fwd.kt);
  free(c->fwd.vw);
  free(c->fwd.att);
  free(c->fwd.flash_mem);
  free(c->fwd.flash_split);
  free(c->fwd.kv_row);
  free(c->next_pos);
  free(c->touched);
  free(c);
}

/* ---- running a batch */

static nc_code validate(nc_context *ctx, const nc_batch *b, nc_error *err) {
  if (!b || b->n_tokens < 1)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "forward: empty batch");
  if (b->n_tokens > ctx->max_tokens)
    return nc_fail(err, NC_ERR_LIMIT,
                   "forward: batch of %d tokens, the context takes at most %d",
                   (int)b->n_tokens, (int)ctx->max_tokens);
  const int32_t max_seqs = nc_kv_max_seqs(ctx->fwd.kv);
  memset(ctx->touched, 0, (size_t)max_seqs);
  for (int32_t t = 0; t < b->n_tokens; t++) {
    const int32_t tok = b->token[t], s = b->seq[t], pos = b->pos[t];
    if (tok < 0 || tok >= ctx->fwd.hp->n_vocab)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "forward: row %d: token %d out of range [0, %d)", (int)t,
                     (int)tok, (int)ctx->fwd.hp->n_vocab);
    if (!nc_kv_seq_is_live(ctx->fwd.kv, s))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "forward: row %d: sequence %d is not live", (int)t,
                     (int)s);
    if (!ctx->touched[s]) {
      ctx->touched[s] = 1;
      ctx->next_pos[s] = nc_kv_seq_len(ctx->fwd.kv, s);
      /* a non-causal row sees its sequence whole: all of it in one batch */
      if (ctx->fwd.hp->non_causal && ctx->next_pos[s] != 0)
        return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                       "forward: row %d: sequence %d already holds %d "
                       "positions; a model with non-causal attention takes a "
                       "sequence whole, in one batch",
                       (int)t, (int)s, (int)ctx->next_pos[s]);
    }
    if (pos != ctx->next_pos[s])
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "forward: row %d: sequence %d expects position %d, got "
                     "%d",
                     (int)t, (int)s, (int)ctx->next_pos[s], (int)pos);
    if (pos >= nc_kv_seq_capacity(ctx->fwd.kv, s))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "forward: row %d: position %d of sequence %d has no KV "
                     "space reserved (capacity %d)",
                     (int)t, (int)pos, (int)s,
                     (int)nc_kv_seq_capacity(ctx->fwd.kv, s));
    if (pos >= ctx->att_max_pos)
      return nc_fail(err, NC_ERR_LIMIT, "forward: position %d too large",
                     (int)pos);
    ctx->next_pos[s]++;
  }
  return NC_OK;
}

static nc_code run(nc_context *ctx, const nc_batch *batch, float *out,
                   bool embed, nc_error *err) {
  const nc_arch *arch = nc_model_arch(ctx->fwd.m);
  if (!embed && arch->embedding_only)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "forward: a %s model has no LM head (an embedding model): "
                   "it gives embeddings, not logits",
                   arch->name);
  nc_code rc = validate(ctx, batch, err);
  if (rc) return rc;
  if (!out && nc_batch_n_logits(batch) > 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "forward: rows want output but the output is NULL");
  nc_fwd_rows_begin(&ctx->fwd, batch);
  ctx->fwd.embed_out = embed;
  ctx->fwd.seq_end = ctx->next_pos;
  rc = arch->forward(&ctx->fwd, batch, out, err);
  ctx->fwd.embed_out = false;
  if (rc) return rc;
  const int32_t max_seqs = nc_kv_max_seqs(ctx->fwd.kv);
  for (int32_t s = 0; s < max_seqs; s++)
    if (ctx->touched[s]) nc_kv_seq_set_len(ctx->fwd.kv, s, ctx->next_pos[s]);
  return NC_OK;
}

nc_code nc_context_forward(nc_context *ctx, const nc_batch *batch,
                           float *logits, nc_error *err) {
  return run(ctx, batch, logits, false, err);
}

nc_code nc_context_embed(nc_context *ctx, const nc_batch *batch, float *hidden,
                         nc_error *err) {
  return run(ctx, batch, hidden, true, err);
}

nc_code nc_context_mtp(nc_context *ctx, const nc_batch *b, const float *h_in,
                       float *h_out, float *logits, nc_error *err) {
  const nc_arch *arch = nc_model_arch(ctx->fwd.m);
  if (!arch->forward_mtp || !ctx->fwd.hp->mtp)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "MTP forward: the model runs no MTP head (a %s model "
                   "loaded without mtp)",
                   arch->name);
  if (!b || b->n_tokens < 1 || b->n_tokens > ctx->max_tokens)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "MTP forward: batch of %d rows, must be in [1, %d]",
                   b ? (int)b->n_tokens : 0, (int)ctx->max_tokens);
  for (int32_t t = 0; t < b->n_tokens; t++) {
    const int32_t tok = b->token[t], s = b->seq[t], pos = b->pos[t];
    if (tok < 0 || tok >= ctx->fwd.hp->n_vocab)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "MTP forward: row %d: token %d out of range [0, %d)",
                     (int)t, (int)tok, (int)ctx->fwd.hp->n_vocab);
    if (!nc_kv_seq_is_live(ctx->fwd.kv, s))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "MTP forward: row %d: sequence %d is not live", (int)t,
                     (int)s);
    /* past the positions written (those it would clobber), within the
     * blocks reserved */
    if (pos < nc_kv_seq_len(ctx->fwd.kv, s) ||
        pos >= nc_kv_seq_capacity(ctx->fwd.kv, s) || pos >= ctx->att_max_pos)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "MTP forward: row %d: position %d of sequence %d is not "
                     "in [%d, %d)",
                     (int)t, (int)pos, (int)s,
                     (int)nc_kv_seq_len(ctx->fwd.kv, s),
                     (int)nc_kv_seq_capacity(ctx->fwd.kv, s));
    for (int32_t u = 0; u < t; u++)
      if (b->seq[u] == s && b->pos[u] >= pos)
        return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                       "MTP forward: row %d: sequence %d's positions must "
                       "increase (row %d has %d)",
                       (int)t, (int)s, (int)u, (int)b->pos[u]);
  }
  nc_fwd_rows_begin(&ctx->fwd, b);
  return arch->forward_mtp(&ctx->fwd, b, h_in, h_out, logits, err);
}

nc_fwd *nc_context_fwd(nc_context *ctx) {
  return &ctx->fwd;
}

/* ---- reference mode */

static nc_code nocache_setup(const nucleus_model *m, int32_t n,
                             nc_kv_cache **kv, nc_context **ctx, nc_batch *b,
                             nc_error *err) {
  *kv = NULL;
  *ctx = NULL;
  memset(b, 0, sizeof *b);
  if (n < 1)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "no-cache forward: %d tokens, need at least 1", (int)n);
  nc_code rc = nc_kv_cache_create_typed(nc_hp_kv_shape(nc_model_hparams(m)),
                                        nc_model_kv_types(m), 1, n, 1, kv, err);
  if (!rc) rc = nc_context_create(m, *kv, n, ctx, err);
  if (!rc) nc_context_set_n_ctx(*ctx, nc_model_hparams(m)->n_ctx_train);
  if (!rc) rc = nc_batch_init(b, n, err);
  return rc;
}

static nc_code nocache_prefix(nc_context *ctx, nc_batch *b,
                              const int32_t *tokens, int32_t n, float *logits,
                              nc_error *err) {
  nc_kv_cache *kv = ctx->fwd.kv;
  nc_kv_seq_free(kv, 0);
  const int32_t s = nc_kv_seq_new(kv);
  nc_code rc = nc_kv_seq_reserve(kv, s, n, err);
  if (rc) return rc;
  nc_batch_clear(b);
  for (int32_t i = 0; i < n; i++)
    nc_batch_add_prompt(b, tokens[i], i, s,
                        i == n - 1 ? NC_LOGITS_LAST : NC_LOGITS_NONE, n);
  return nc_context_forward(ctx, b, logits, err);
}

nc_code nc_forward_nocache_last(const nucleus_model *m, const int32_t *tokens,
                                int32_t n, float *logits, nc_error *err) {
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch b;
  nc_code rc = nocache_setup(m, n, &kv, &ctx, &b, err);
  if (!rc) rc = nocache_prefix(ctx, &b, tokens, n, logits, err);
  nc_batch_free(&b);
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
  return rc;
}

nc_code nc_forward_nocache(const nucleus_model *m, const int32_t *tokens,
                           int32_t n, float *logits_all, nc_error *err) {
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch b;
  nc_code rc = nocache_setup(m, n, &kv, &ctx, &b, err);
  const int64_t nv = nc_model_hparams(m)->n_vocab;
  for (int32_t i = 0; !rc && i < n; i++)
    rc = nocache_prefix(ctx, &b, tokens, i + 1, logits_all + i * nv, err);
  nc_batch_free(&b);
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
  return rc;
}
