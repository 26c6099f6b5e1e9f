/* arch_qwen35_mtp: the MTP (next-token prediction) head of qwen35,
 * qwen35moe and qwen3next files, as llama.cpp's graph_mtp
 * (src/models/qwen35.cpp) and vLLM's qwen3_next_mtp.py: for a row of
 * token x at position p, with h the model's final normed hidden state at
 * p - 1 (what the model's logits at p - 1 came from; zeros before the
 * first position),
 *   u = eh_proj([enorm(embed(x)) ; hnorm(h)])     (the embedding first)
 *   u += attn(attn_norm(u))                       (gated-query attention,
 *                                                  its own K/V at p)
 *   u += ffn(post_attention_norm(u))              (the file's FFN kind)
 *   h' = shared_head_norm(u), logits = head(h')   (the token at p + 1)
 * and a second draft runs the head again on (its draft, h'), at p + 1.
 *
 * The head's K/V at p depend on the tokens up to p only, as the model's:
 * every forward of the model writes them for its rows (absorb, below),
 * so they live in the sequence's paged blocks (one cache layer more),
 * forked, cut, cached by prefix and recomputed with the model's. Only the
 * K and V projections run for those rows (nothing reads their output).
 * The hidden state a sequence's next batch starts from is kept in the
 * last n_embd floats of its recurrent state, so snapshots and forks carry
 * it too. The drafts (nc_qwen35_mtp_forward, nc_context_mtp) write the
 * head's K/V past the sequence's length, where the step's forward then
 * writes the model's own. */
#include <string.h>

#include "arch_qwen35.h"

#include "kernels/ops.h"
#include "model/forward.h"

/* The sequence's state's last n_embd floats: the final normed hidden
 * state of its last position. */
static float *seq_hidden(nc_fwd *ctx, int32_t seq) {
  float *st = nc_kv_seq_state(ctx->kv, seq);
  return st ? st + nc_kv_state_floats(ctx->kv) - ctx->hp->n_embd : NULL;
}

/* The head's input rows (the scratch's mtp_cat, whose second halves hold
 * the rows' hidden states h): [enorm(embed(token)) ; hnorm(h)]. */
static void input_rows(nc_fwd *ctx, const nc_batch *b) {
  const nc_hparams *hp = ctx->hp;
  const nc_model_weights *w = nc_model_weights_of(nc_fwd_model(ctx));
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const nc_ops_kernels *op = nc_fwd_ops(ctx);
  const int64_t E = hp->n_embd;
  nc_fwd_embed(&w->mtp_embd, b, s->xn, E);
  for (int32_t t = 0; t < b->n_tokens; t++) {
    float *cat = s->mtp_cat + (int64_t)t * 2 * E;
    op->rmsnorm(s->xn + (int64_t)t * E, w->mtp_enorm.data, cat, E, hp->rms_eps);
    op->rmsnorm(cat + E, w->mtp_hnorm.data, cat + E, E, hp->rms_eps);
  }
}

void nc_qwen35_mtp_absorb(nc_fwd *ctx, const nc_batch *b) {
  const nc_hparams *hp = ctx->hp;
  const nc_model_weights *w = nc_model_weights_of(nc_fwd_model(ctx));
  const nc_layer_weights *L = &w->mtp_layer;
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const int32_t T = b->n_tokens;
  const int64_t E = hp->n_embd, K = nc_hp_n_embd_k(hp), V = nc_hp_n_embd_v(hp);
  /* every row's final normed hidden state (the model's head takes the
   * same values for its rows) */
  nc_fwd_rmsnorm(ctx, s->x, w->output_norm.data, s->mtp_h, T, E);
  /* row t pairs with the state of its sequence's row before (its
   * positions are consecutive), else of the batch before */
  for (int32_t t = 0; t < T; t++) {
    int32_t u = t - 1;
    while (u >= 0 && b->seq[u] != b->seq[t])
      u--;
    const float *h =
        u >= 0 ? s->mtp_h + (int64_t)u * E : seq_hidden(ctx, b->seq[t]);
    memcpy(s->mtp_cat + (int64_t)t * 2 * E + E, h, sizeof(float) * (size_t)E);
  }
  input_rows(ctx, b);
  /* the state each sequence's next batch starts from (its rows in order:
   * the last one's stays), and the snapshots' part of it */
  const int64_t off = nc_kv_state_floats(ctx->kv) - E;
  for (int32_t t = 0; t < T; t++) {
    const float *row = s->mtp_h + (int64_t)t * E;
    memcpy(seq_hidden(ctx, b->seq[t]), row, sizeof(float) * (size_t)E);
    if (b->snap && b->snap[t])
      memcpy(b->snap[t] + off, row, sizeof(float) * (size_t)E);
  }
  const nc_mm eh = {&w->mtp_eh_proj, s->mtp_h, E};
  nc_fwd_matmul(ctx, s->mtp_cat, 2 * E, T, &eh, 1);
  nc_fwd_rmsnorm(ctx, s->mtp_h, L->attn_norm.data, s->xn, T, E);
  const nc_mm kv[2] = {{&L->wk, s->k, K}, {&L->wv, s->v, V}};
  nc_fwd_matmul(ctx, s->xn, E, T, kv, 2);
  nc_fwd_rmsnorm(ctx, s->k, L->k_norm.data, s->k, T * hp->n_head_kv,
                 hp->head_dim);
  nc_fwd_rope_with(ctx, NULL, 0, s->k, K, T, s->rope_cos, s->rope_sin);
  nc_fwd_kv_store(ctx, L->kv_layer, b, s->k, s->v);
}

nc_code nc_qwen35_mtp_forward(nc_fwd *ctx, const nc_batch *b, const float *h_in,
                              float *h_out, float *logits, nc_error *err) {
  (void)err;
  const nc_hparams *hp = ctx->hp;
  const nc_model_weights *w = nc_model_weights_of(nc_fwd_model(ctx));
  const nc_layer_weights *L = &w->mtp_layer;
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const int32_t T = b->n_tokens;
  const int64_t E = hp->n_embd;
  const nc_rope_params rope = nc_hp_rope(hp, false);
  for (int32_t t = 0; t < T; t++)
    memcpy(s->mtp_cat + (int64_t)t * 2 * E + E, h_in + (int64_t)t * E,
           sizeof(float) * (size_t)E);
  input_rows(ctx, b);
  const nc_mm eh = {&w->mtp_eh_proj, s->x, E};
  nc_fwd_matmul(ctx, s->mtp_cat, 2 * E, T, &eh, 1);
  nc_fwd_rope_rows(b, &rope, NULL, s->rope_cos, s->rope_sin, hp->n_rot / 2);
  nc_fwd_rmsnorm(ctx, s->x, L->attn_norm.data, s->xn, T, E);
  nc_qwen35_attention(ctx, L, b, s->xn, s->xn);
  nc_fwd_residual(ctx, s->x, s->xn, NULL, T, E);
  nc_fwd_rmsnorm(ctx, s->x, L->ffn_norm.data, s->xn, T, E);
  nc_qwen35_ffn(ctx, L, T);
  nc_fwd_residual(ctx, s->x, s->xn, NULL, T, E);
  nc_fwd_rmsnorm(ctx, s->x, w->mtp_head_norm.data, h_out, T, E);
  nc_fwd_keep_output_order(ctx, b, true);
  nc_fwd_head(ctx, h_out, T, &w->mtp_head, logits);
  return NC_OK;
}
