/* arch_llama: the `llama` architecture (SmolLM2, Llama 2/3.x, Mistral):
 * pre-norm blocks of GQA attention with NORMAL RoPE and a SwiGLU FFN. Its
 * graph and loader also serve the architectures that only add pieces to it
 * (arch_llama.h: Q/K/V biases, per-head Q/K norms). */
#include "arch_llama.h"

#include <stdio.h>
#include <stdlib.h>

#include "forward.h"
#include "kernels/ops.h"

nc_code nc_llama_check_hparams(const gguf_file *f, nc_hparams *hp,
                               nc_error *err) {
  (void)f;
  if (hp->n_rot != hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   "rope dimension count %d must equal the head size %d",
                   (int)hp->n_rot, (int)hp->head_dim);
  return NC_OK;
}

nc_code nc_llama_family_load(const gguf_file *f, const nc_hparams *hp,
                             const nc_kernels *kern, const nc_llama_pieces *pc,
                             nc_model_weights *w, nc_error *err) {
  const int64_t E = hp->n_embd, V = hp->n_vocab, F = hp->n_ff;
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = (int64_t)hp->n_head_kv * hp->head_dim;
  const int64_t Vd = (int64_t)hp->n_head_kv * hp->head_dim_v;
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  if (gguf_find_tensor(f, "blk.0.ffn_gate_inp.weight"))
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "%s: mixture-of-experts files (ffn_gate_inp) are not "
                   "supported",
                   pc->name);
  if (gguf_find_tensor(f, "blk.0.attn_qkv.weight"))
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "%s: fused attn_qkv tensors are not supported", pc->name);
  nc_code rc;
  if ((rc = nc_weight_load(f, "token_embd.weight", E, V, true, kern,
                           &w->tok_embd, err)) ||
      (rc = nc_weight_load(f, "output_norm.weight", E, 1, true, kern,
                           &w->output_norm, err)) ||
      (rc = nc_weight_load(f, "output.weight", E, V, false, kern, &w->output,
                           err)) ||
      (rc = nc_weight_load(f, "rope_freqs.weight", hp->n_rot / 2, 1, false,
                           kern, &w->rope_freqs, err)))
    return rc;
  if (!w->output.data) w->output = w->tok_embd; /* tied embeddings */
  if (!kern->vec_dot[w->output.type])
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "tensor '%s': no dot-product kernel for type %s",
                   w->output.name, nc_type_name(w->output.type));
  w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
  if (!w->layers)
    return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", pc->name);
  const int64_t D = hp->head_dim;
  for (int32_t l = 0; l < hp->n_layer; l++) {
    nc_layer_weights *L = &w->layers[l];
    struct {
      const char *suffix;
      int64_t ne0, ne1;
      bool required;
      nc_weight *out;
    } t[] = {
        {"attn_norm.weight", E, 1, true, &L->attn_norm},
        {"attn_q.weight", E, Q, true, &L->wq},
        {"attn_k.weight", E, K, true, &L->wk},
        {"attn_v.weight", E, Vd, true, &L->wv},
        {"attn_output.weight", O, E, true, &L->wo},
        {"attn_output.bias", E, 1, false, &L->bo},
        {"ffn_norm.weight", E, 1, true, &L->ffn_norm},
        {"ffn_gate.weight", E, F, true, &L->ffn_gate},
        {"ffn_up.weight", E, F, true, &L->ffn_up},
        {"ffn_down.weight", F, E, true, &L->ffn_down},
        {"attn_q.bias", Q, 1, pc->qkv_bias, &L->bq},
        {"attn_k.bias", K, 1, pc->qkv_bias, &L->bk},
        {"attn_v.bias", Vd, 1, pc->qkv_bias, &L->bv},
        {"attn_q_norm.weight", D, 1, pc->qk_norm, &L->q_norm},
        {"attn_k_norm.weight", D, 1, pc->qk_norm, &L->k_norm},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
      char name[GGUF_MAX_NAME];
      snprintf(name, sizeof name, "blk.%d.%s", (int)l, t[i].suffix);
      if ((rc = nc_weight_load(f, name, t[i].ne0, t[i].ne1, t[i].required, kern,
                               t[i].out, err)))
        return rc;
    }
  }
  return NC_OK;
}

nc_code nc_llama_family_forward(nc_fwd *ctx, const nc_batch *b, float *logits,
                                nc_error *err) {
  (void)err;
  const nucleus_model *m = nc_fwd_model(ctx);
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const nc_ops_kernels *op = nc_fwd_ops(ctx);
  const int32_t T = b->n_tokens;
  const int64_t E = hp->n_embd, F = hp->n_ff;
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  const int32_t half = hp->n_rot / 2;
  const float *ff = w->rope_freqs.data;

  for (int32_t t = 0; t < T; t++) {
    const uint8_t *row = (const uint8_t *)w->tok_embd.data +
                         (size_t)b->token[t] * w->tok_embd.row_bytes;
    nc_dequantize_row(w->tok_embd.type, row, s->x + t * E, E);
    nc_rope_cache(b->pos[t], hp->n_rot, hp->rope_freq_base, hp->rope_freq_scale,
                  ff, s->rope_cos + (int64_t)t * half,
                  s->rope_sin + (int64_t)t * half);
  }
  for (int32_t l = 0; l < hp->n_layer; l++) {
    const nc_layer_weights *L = &w->layers[l];
    /* attention block */
    nc_fwd_rmsnorm(ctx, s->x, L->attn_norm.data, s->xn, T, E);
    const nc_mm qkv[3] = {
        {&L->wq, s->q, Q}, {&L->wk, s->k, K}, {&L->wv, s->v, Vd}};
    nc_fwd_matmul(ctx, s->xn, E, T, qkv, 3);
    if (L->bq.data) nc_fwd_add_bias(ctx, s->q, L->bq.data, T, Q);
    if (L->bk.data) nc_fwd_add_bias(ctx, s->k, L->bk.data, T, K);
    if (L->bv.data) nc_fwd_add_bias(ctx, s->v, L->bv.data, T, Vd);
    /* per-head RMSNorm of q and k, before RoPE (the rows are contiguous) */
    if (L->q_norm.data)
      nc_fwd_rmsnorm(ctx, s->q, L->q_norm.data, s->q, T * hp->n_head,
                     hp->head_dim);
    if (L->k_norm.data)
      nc_fwd_rmsnorm(ctx, s->k, L->k_norm.data, s->k, T * hp->n_head_kv,
                     hp->head_dim);
    nc_fwd_rope(ctx, s->q, Q, s->k, K, T);
    nc_fwd_attention(ctx, l, b, s->q, s->k, s->v, s->attn);
    const nc_mm wo = {&L->wo, s->xn, E};
    nc_fwd_matmul(ctx, s->attn, O, T, &wo, 1);
    nc_fwd_residual(ctx, s->x, s->xn, L->bo.data, T, E);
    /* feed-forward block */
    nc_fwd_rmsnorm(ctx, s->x, L->ffn_norm.data, s->xn, T, E);
    const nc_mm gu[2] = {{&L->ffn_gate, s->gate, F}, {&L->ffn_up, s->up, F}};
    nc_fwd_matmul(ctx, s->xn, E, T, gu, 2);
    nc_fwd_swiglu(ctx, s->gate, s->up, T, F);
    const nc_mm down = {&L->ffn_down, s->xn, E};
    nc_fwd_matmul(ctx, s->gate, F, T, &down, 1);
    nc_fwd_residual(ctx, s->x, s->xn, NULL, T, E);
  }
  int32_t n_out = 0;
  for (int32_t t = 0; t < T; t++)
    if (b->want_logits[t]) {
      op->rmsnorm(s->x + t * E, w->output_norm.data, s->xn + n_out * E, E,
                  hp->rms_eps);
      n_out++;
    }
  if (n_out > 0) {
    const nc_mm out = {&w->output, logits, hp->n_vocab};
    nc_fwd_matmul(ctx, s->xn, E, n_out, &out, 1);
  }
  return NC_OK;
}

static nc_code llama_load_weights(const gguf_file *f, const nc_hparams *hp,
                                  const nc_kernels *kern, nc_model_weights *w,
                                  nc_error *err) {
  /* llama.cpp reads Q/K/V biases of llama files when they are there */
  const nc_llama_pieces pc = {.name = "llama"};
  return nc_llama_family_load(f, hp, kern, &pc, w, err);
}

const nc_arch nc_arch_llama = {
    .name = "llama",
    .rope_type = NC_ROPE_NORMAL,
    .check_hparams = nc_llama_check_hparams,
    .load_weights = llama_load_weights,
    .forward = nc_llama_family_forward,
};
