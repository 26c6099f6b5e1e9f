/* arch_gemma4: Gemma 4 (`gemma4`), as llama.cpp's graph
 * (src/models/gemma4.cpp): embeddings x sqrt(n_embd) (not an image's
 * rows); with per-layer embeddings (the E models) each token's row (an
 * image row: token 0's) of per_layer_token_embd x
 * sqrt(n_embd_per_layer) plus the RMS-normed projection of the embedding
 * (x 1/sqrt(n_embd)), both x 1/sqrt(2): one input per layer. Per layer:
 * RMSNorm, Q (per-head RMSNorm, NEOX RoPE), and on a layer that owns K/V
 * also K (per-head RMSNorm, RoPE) and V (attn_v, or K itself before its
 * norm; RMS-normed without a weight) into the cache; a layer that shares
 * reads the K/V of the last owner of its kind. Sliding layers have their
 * own head size, KV heads, RoPE base and window; full layers turn the
 * pairs rope_freqs leaves at 1 (proportional RoPE: 1e30 freezes the rest).
 * Scores are q.k unscaled. Output, RMSNorm, residual; RMSNorm, GeGLU FFN
 * (its width per layer), and beside experts (the 26B-A4B) that FFN
 * RMS-normed again plus the experts' (GeGLU, softmax routing of the
 * RMS-normed residual x 1/sqrt(n_embd) x a per-channel scale, each
 * expert's output x its scale) RMS-normed; RMSNorm, residual; the
 * per-layer input: gelu(gate x) x that layer's input, projected, RMSNorm,
 * residual; the layer's output scale. Final RMSNorm, tied head, tanh soft
 * cap. Loading: arch_gemma4_load.c. */
#include <math.h>
#include <string.h>

#include "arch_gemma4.h"
#include "kernels/ops.h"
#include "model/forward.h"

/* Each row's per_layer_token_embd row into x (PL floats a row): the
 * token's, and for an image's row (an input embedding) token 0's, as
 * llama.cpp's embeddings batches take the padding token's row. */
static void ple_embed(const nc_weight *table, const nc_batch *b, float *x,
                      int64_t PL) {
  for (int32_t t = 0; t < b->n_tokens; t++) {
    const int32_t id = b->embd && b->embd[t] ? 0 : b->token[t];
    const uint8_t *row =
        (const uint8_t *)table->data + (size_t)id * table->row_bytes;
    nc_dequantize_row(table->type, row, x + (int64_t)t * PL, PL);
  }
}

/* The per-layer inputs of the batch's T tokens: ple[(l * T + t) * P ...]
 * (layer-major, as llama.cpp's permuted tensor), built in gate first. */
static void per_layer_inputs(nc_fwd *ctx, const nc_batch *b) {
  const nc_hparams *hp = ctx->hp;
  const nc_model_weights *w = nc_model_weights_of(ctx->m);
  const nc_fwd_bufs *s = &ctx->bufs;
  const int32_t T = b->n_tokens, L = hp->n_layer;
  const int64_t P = hp->n_embd_per_layer, PL = P * L, E = hp->n_embd;
  /* the token's rows (only the batch's tokens are read) into up */
  ple_embed(&w->ple_tok_embd, b, s->up, PL);
  nc_fwd_scale(ctx, s->up, sqrtf((float)P), T, PL);
  /* the embedding's projection, x 1/sqrt(n_embd), normed per layer */
  const nc_mm proj = {&w->ple_model_proj, s->gate, PL};
  nc_fwd_matmul(ctx, s->x, E, T, &proj, 1);
  nc_fwd_scale(ctx, s->gate, 1.0f / sqrtf((float)E), T, PL);
  nc_fwd_rmsnorm(ctx, s->gate, w->ple_proj_norm.data, s->gate, T * L, P);
  nc_fwd_residual(ctx, s->gate, s->up, NULL, T, PL);
  nc_fwd_scale(ctx, s->gate, 1.0f / sqrtf(2.0f), T, PL);
  for (int32_t l = 0; l < L; l++)
    for (int32_t t = 0; t < T; t++)
      memcpy(s->ple + ((int64_t)l * T + t) * P, s->gate + t * PL + l * P,
             sizeof(float) * (size_t)P);
}

/* y[r, i] *= v[i] for rows rows of n. */
static void mul_rows(float *y, const float *v, int32_t rows, int64_t n) {
  for (int32_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < n; i++)
      y[r * n + i] *= v[i];
}

/* The FFN block of layer L over rows rows of x (the residual after the
 * attention); its output (before the post-FFN norm) into s->xn. */
static void ffn_block(nc_fwd *ctx, const nc_layer_weights *L, int32_t rows) {
  const nc_hparams *hp = ctx->hp;
  const nc_fwd_bufs *s = &ctx->bufs;
  const int64_t E = hp->n_embd, F = L->ffn_gate.ne1;
  nc_fwd_rmsnorm(ctx, s->x, L->ffn_norm.data, s->xn, rows, E);
  const nc_mm gu[2] = {{&L->ffn_gate, s->gate, F}, {&L->ffn_up, s->up, F}};
  nc_fwd_matmul(ctx, s->xn, E, rows, gu, 2);
  nc_fwd_geglu(ctx, s->gate, s->up, rows, F);
  const nc_mm down = {&L->ffn_down, s->xn, E};
  nc_fwd_matmul(ctx, s->gate, F, rows, &down, 1);
  if (!L->ffn_gate_inp.data) return;
  /* beside the experts: the dense FFN normed, plus the experts' output */
  nc_fwd_rmsnorm(ctx, s->xn, L->ffn_post_norm_1.data, s->xn, rows, E);
  float *moe = s->side, *route = s->side + (int64_t)rows * E;
  nc_fwd_rmsnorm(ctx, s->x, L->ffn_pre_norm_2.data, moe, rows, E);
  nc_fwd_rmsnorm(ctx, s->x, NULL, route, rows, E);
  nc_fwd_scale(ctx, route, 1.0f / sqrtf((float)E), rows, E);
  mul_rows(route, L->gate_inp_scale.data, rows, E);
  const nc_moe_opts o = {.router_x = route,
                         .exp_scale = L->down_exps_scale.data};
  nc_fwd_moe_ext(ctx, L, moe, moe, rows, &o);
  nc_fwd_rmsnorm(ctx, moe, L->ffn_post_norm_2.data, moe, rows, E);
  nc_fwd_residual(ctx, s->xn, moe, NULL, rows, E);
}

/* The attention block of layer l (ctx->hp: its shape) over the batch's T
 * rows: Q, and K/V into the cache when the layer owns them; the output
 * (per head) into s->attn. */
static void attn_block(nc_fwd *ctx, const nc_batch *b, int32_t l,
                       const nc_layer_weights *L, const nc_hparams *top) {
  const nc_hparams *hp = ctx->hp;
  const nc_fwd_bufs *s = &ctx->bufs;
  const int32_t T = b->n_tokens;
  const int64_t E = hp->n_embd, D = hp->head_dim;
  const int64_t Q = (int64_t)hp->n_head * D, K = nc_hp_n_embd_k(hp);
  const bool own = L->kv_layer == l;
  nc_fwd_rmsnorm(ctx, s->x, L->attn_norm.data, s->xn, T, E);
  const nc_mm qkv[3] = {
      {&L->wq, s->q, Q}, {&L->wk, s->k, K}, {&L->wv, s->v, K}};
  nc_fwd_matmul(ctx, s->xn, E, T, qkv, own ? (L->wv.data ? 3 : 2) : 1);
  if (own && !L->wv.data) memcpy(s->v, s->k, sizeof(float) * (size_t)(T * K));
  nc_fwd_rmsnorm(ctx, s->q, L->q_norm.data, s->q, T * hp->n_head, D);
  if (own) {
    nc_fwd_rmsnorm(ctx, s->k, L->k_norm.data, s->k, T * hp->n_head_kv, D);
    nc_fwd_rmsnorm(ctx, s->v, NULL, s->v, T * hp->n_head_kv, D);
  }
  nc_fwd_rope_with(ctx, s->q, Q, own ? s->k : NULL, K, T,
                   L->swa ? s->rope_cos_swa : s->rope_cos,
                   L->swa ? s->rope_sin_swa : s->rope_sin);
  nc_fwd_attention_ext(ctx, L->kv_layer, b, s->q, own ? s->k : NULL,
                       own ? s->v : NULL, s->attn, L->swa ? top->n_swa : 0,
                       0.0f);
}

/* Layer l after its attention, over rows rows: output, norms, FFN, the
 * per-layer input (ple_l: its rows), the output scale. */
static void layer_rest(nc_fwd *ctx, const nc_layer_weights *L, int32_t rows,
                       const float *ple_l, bool last, const nc_batch *b) {
  const nc_hparams *hp = ctx->hp;
  const nc_fwd_bufs *s = &ctx->bufs;
  const int64_t E = hp->n_embd, O = (int64_t)hp->n_head * hp->head_dim_v;
  const nc_mm wo = {&L->wo, s->xn, E};
  nc_fwd_matmul(ctx, s->attn, O, rows, &wo, 1);
  if (last) nc_fwd_keep_output_order(ctx, b, true);
  nc_fwd_rmsnorm(ctx, s->xn, L->attn_post_norm.data, s->xn, rows, E);
  nc_fwd_residual(ctx, s->x, s->xn, NULL, rows, E);
  ffn_block(ctx, L, rows);
  nc_fwd_rmsnorm(ctx, s->xn, L->ffn_post_norm.data, s->xn, rows, E);
  nc_fwd_residual(ctx, s->x, s->xn, NULL, rows, E);
  if (ple_l) {
    const int64_t P = hp->n_embd_per_layer;
    const nc_mm g = {&L->ple_gate, s->gate, P};
    nc_fwd_matmul(ctx, s->x, E, rows, &g, 1);
    nc_fwd_geglu(ctx, s->gate, ple_l, rows, P);
    const nc_mm pr = {&L->ple_proj, s->xn, E};
    nc_fwd_matmul(ctx, s->gate, P, rows, &pr, 1);
    nc_fwd_rmsnorm(ctx, s->xn, L->ple_post_norm.data, s->xn, rows, E);
    nc_fwd_residual(ctx, s->x, s->xn, NULL, rows, E);
  }
  if (L->out_scale.data)
    nc_fwd_scale(ctx, s->x, ((const float *)L->out_scale.data)[0], rows, E);
}

static nc_code gemma4_forward(nc_fwd *ctx, const nc_batch *b, float *logits,
                              nc_error *err) {
  (void)err;
  const nucleus_model *m = nc_fwd_model(ctx);
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const nc_ops_kernels *op = nc_fwd_ops(ctx);
  const int32_t T = b->n_tokens;
  const int64_t E = hp->n_embd, P = hp->n_embd_per_layer;
  /* the two attention shapes, and their RoPE (full layers: rope_freqs) */
  const nc_hparams h_full = nc_hp_layer(hp, false),
                   h_swa = nc_hp_layer(hp, true);
  const nc_rope_params rope = nc_hp_rope(&h_full, false);
  const nc_rope_params rope_swa = nc_hp_rope(&h_swa, true);
  const int32_t half = h_full.n_rot / 2, half_swa = h_swa.n_rot / 2;
  int32_t rows = T; /* T, then in the last layer the rows with logits */

  nc_fwd_embed(&w->tok_embd, b, s->x, E);
  nc_fwd_rope_rows(b, &rope, w->rope_freqs.data, s->rope_cos, s->rope_sin,
                   half);
  nc_fwd_rope_rows(b, &rope_swa, NULL, s->rope_cos_swa, s->rope_sin_swa,
                   half_swa);
  /* token rows x sqrt(n_embd); an image's rows as they come */
  nc_fwd_scale_tokens(ctx, b, s->x, sqrtf((float)E), E);
  if (P > 0) per_layer_inputs(ctx, b);
  for (int32_t l = 0; l < hp->n_layer; l++) {
    const nc_layer_weights *L = &w->layers[l];
    const bool last = l == hp->n_layer - 1;
    float *ple_l = P > 0 ? s->ple + (int64_t)l * T * P : NULL;
    ctx->hp = L->swa ? &h_swa : &h_full;
    attn_block(ctx, b, l, L, hp);
    if (last) { /* the rest only for the rows with logits */
      nc_fwd_keep_output_rows(b, s->attn,
                              (int64_t)hp->n_head * ctx->hp->head_dim_v);
      if (ple_l) nc_fwd_keep_output_rows(b, ple_l, P);
      rows = nc_fwd_keep_output_rows(b, s->x, E);
      if (rows == 0) {
        ctx->hp = hp;
        return NC_OK;
      }
      nc_fwd_keep_output_order(ctx, b, false);
    }
    layer_rest(ctx, L, rows, ple_l, last, b);
    ctx->hp = hp;
  }
  /* rows: the batch's rows with logits, in order */
  for (int32_t t = 0; t < rows; t++)
    op->rmsnorm(s->x + t * E, w->output_norm.data, s->xn + t * E, E,
                hp->rms_eps);
  if (nc_fwd_head(ctx, s->xn, rows, &w->output, logits) &&
      hp->final_softcap > 0)
    nc_fwd_softcap(ctx, logits, hp->final_softcap, rows, hp->n_vocab);
  return NC_OK;
}

const nc_arch nc_arch_gemma4 = {
    .name = "gemma4",
    .hf_class = "Gemma4ForCausalLM",
    .family = "gemma4",
    .chat_template = "gemma4",
    .scratch = NC_SCRATCH_SWA_ROPE | NC_SCRATCH_SIDE,
    .layer_arrays = true,
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = nc_gemma4_hparams,
    .load_weights = nc_gemma4_load,
    .forward = gemma4_forward,
};
