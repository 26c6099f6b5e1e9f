/* arch_gptoss: OpenAI's gpt-oss (`gpt-oss`; llama.cpp's openai-moe graph).
 * Per layer: RMSNorm, Q/K/V with biases, NEOX RoPE (YaRN from the file),
 * attention with a learned sink per head (a logit in the softmax's
 * denominator only) over a sliding window on the local layers (llama.cpp's
 * default pattern: the even layers) or every earlier position, output with
 * bias, residual; RMSNorm (the file's post_attention_norm), a mixture of
 * experts: router with bias, the top expert_used_count logits, softmax over
 * those, each expert gate/up with biases, the clamped SwiGLU (alpha 1.702,
 * limit 7), down with bias, the weighted sum; residual. Final RMSNorm and
 * the output matrix. */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/ops.h"
#include "model/arch.h"
#include "model/forward.h"

#define ARCH "gpt-oss"

static nc_code gptoss_hparams(const gguf_file *f, nc_hparams *hp,
                              nc_error *err) {
  if (hp->n_rot != hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   ARCH ": rope dimension count %d must equal the head size %d",
                   (int)hp->n_rot, (int)hp->head_dim);
  if (hp->n_expert < 1)
    return nc_fail(err, NC_ERR_FORMAT,
                   ARCH ": metadata '" ARCH ".expert_count' is absent or 0: "
                        "must be >= 1");
  if (hp->n_ff_exp < 1)
    return nc_fail(err, NC_ERR_FORMAT,
                   ARCH ": metadata '" ARCH ".expert_feed_forward_length' is "
                        "absent: an expert's width is required");
  nc_code rc;
  hp->n_swa = 0;
  if ((rc = nc_meta_int(f, ARCH, "attention.sliding_window", true, 1,
                        hp->n_ctx_train, &hp->n_swa, NULL, err)))
    return rc;
  /* the local layers: the same base and scale unless the file says */
  hp->rope_freq_base_swa = hp->rope_freq_base;
  hp->rope_freq_scale_swa = hp->rope_freq_scale_train;
  if ((rc = nc_meta_float(f, ARCH, "rope.freq_base_swa", false,
                          &hp->rope_freq_base_swa, NULL, err)))
    return rc;
  if (!(hp->rope_freq_base_swa > 0))
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '" ARCH ".rope.freq_base_swa' = %g: must be > 0",
                   (double)hp->rope_freq_base_swa);
  hp->moe_gating = NC_MOE_GATING_SOFTMAX_WEIGHT;
  hp->moe_act = NC_MOE_ACT_SWIGLU_OAI;
  return NC_OK;
}

/* The local layers: {arch}.attention.sliding_window_pattern, one bool per
 * layer or a uint n (layer l local when l % n < n - 1), else n = 2. */
static nc_code swa_layers(const gguf_file *f, const nc_hparams *hp,
                          nc_layer_weights *layers, nc_error *err) {
  const char *key = ARCH ".attention.sliding_window_pattern";
  gguf_value_type et;
  uint64_t count;
  if (gguf_get_arr(f, key, &et, &count)) {
    if (count != (uint64_t)hp->n_layer)
      return nc_fail(err, NC_ERR_FORMAT,
                     "metadata '%s' has %llu entries for %d layers", key,
                     (unsigned long long)count, (int)hp->n_layer);
    for (int32_t l = 0; l < hp->n_layer; l++) {
      int64_t v;
      if (!gguf_get_arr_i64(f, key, (uint64_t)l, &v))
        return nc_fail(err, NC_ERR_FORMAT, "metadata '%s'[%d] is not a bool",
                       key, (int)l);
      layers[l].swa = v != 0;
    }
    return NC_OK;
  }
  int32_t n = 2;
  nc_code rc = nc_meta_int(f, ARCH, "attention.sliding_window_pattern", false,
                           0, hp->n_layer, &n, NULL, err);
  if (rc) return rc;
  for (int32_t l = 0; l < hp->n_layer; l++)
    layers[l].swa = n > 0 && l % n < n - 1;
  return NC_OK;
}

static nc_code gptoss_load(const gguf_file *f, const nc_hparams *hp,
                           const nc_kernels *kern, nc_model_weights *w,
                           nc_error *err) {
  const int64_t E = hp->n_embd, V = hp->n_vocab;
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  const int64_t NX = hp->n_expert, FX = hp->n_ff_exp;
  nc_code rc;
  if ((rc = nc_weight_load(f, "token_embd.weight", E, V, true, kern,
                           &w->tok_embd, err)) ||
      (rc = nc_weight_load(f, "output_norm.weight", E, 1, true, kern,
                           &w->output_norm, err)) ||
      (rc = nc_weight_load(f, "output.weight", E, V, true, kern, &w->output,
                           err)))
    return rc;
  w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
  if (!w->layers) return nc_fail(err, NC_ERR_NOMEM, ARCH ": out of memory");
  for (int32_t l = 0; l < hp->n_layer; l++) {
    nc_layer_weights *L = &w->layers[l];
    struct {
      const char *suffix;
      int64_t ne0, ne1, ne2;
      nc_weight *out;
    } t[] = {
        {"attn_norm.weight", E, 1, 1, &L->attn_norm},
        {"attn_q.weight", E, Q, 1, &L->wq},
        {"attn_k.weight", E, K, 1, &L->wk},
        {"attn_v.weight", E, Vd, 1, &L->wv},
        {"attn_q.bias", Q, 1, 1, &L->bq},
        {"attn_k.bias", K, 1, 1, &L->bk},
        {"attn_v.bias", Vd, 1, 1, &L->bv},
        {"attn_output.weight", O, E, 1, &L->wo},
        {"attn_output.bias", E, 1, 1, &L->bo},
        {"attn_sinks.weight", hp->n_head, 1, 1, &L->attn_sinks},
        {"post_attention_norm.weight", E, 1, 1, &L->ffn_norm},
        {"ffn_gate_inp.weight", E, NX, 1, &L->ffn_gate_inp},
        {"ffn_gate_inp.bias", NX, 1, 1, &L->ffn_gate_inp_b},
        {"ffn_gate_exps.weight", E, FX, NX, &L->gate_exps},
        {"ffn_up_exps.weight", E, FX, NX, &L->up_exps},
        {"ffn_down_exps.weight", FX, E, NX, &L->down_exps},
        {"ffn_gate_exps.bias", FX, NX, 1, &L->gate_exps_b},
        {"ffn_up_exps.bias", FX, NX, 1, &L->up_exps_b},
        {"ffn_down_exps.bias", E, NX, 1, &L->down_exps_b},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
      char name[GGUF_MAX_NAME];
      snprintf(name, sizeof name, "blk.%d.%s", (int)l, t[i].suffix);
      if ((rc = nc_weight_load3(f, name, t[i].ne0, t[i].ne1, t[i].ne2, true,
                                kern, t[i].out, err)))
        return rc;
    }
    /* the experts' biases are read as rows of floats */
    const nc_weight *b[3] = {&L->gate_exps_b, &L->up_exps_b, &L->down_exps_b};
    for (int i = 0; i < 3; i++)
      if (b[i]->type != NC_TYPE_F32)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "tensor '%s' is %s: expert biases must be F32",
                       b[i]->name, nc_type_name(b[i]->type));
  }
  return swa_layers(f, hp, w->layers, err);
}

static nc_code gptoss_forward(nc_fwd *ctx, const nc_batch *b, float *logits,
                              nc_error *err) {
  (void)err;
  const nucleus_model *m = nc_fwd_model(ctx);
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const nc_ops_kernels *op = nc_fwd_ops(ctx);
  const int32_t T = b->n_tokens;
  const int64_t E = hp->n_embd;
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  const int32_t half = hp->n_rot / 2;
  const nc_rope_params rope = nc_hp_rope(hp, false);
  const nc_rope_params rope_swa = nc_hp_rope(hp, true);
  int32_t rows = T; /* T, then in the last layer the rows with logits */

  nc_fwd_embed(&w->tok_embd, b, s->x, E);
  nc_fwd_rope_rows(b, &rope, NULL, s->rope_cos, s->rope_sin, half);
  nc_fwd_rope_rows(b, &rope_swa, NULL, s->rope_cos_swa, s->rope_sin_swa, half);
  for (int32_t l = 0; l < hp->n_layer; l++) {
    const nc_layer_weights *L = &w->layers[l];
    /* attention block */
    nc_fwd_rmsnorm(ctx, s->x, L->attn_norm.data, s->xn, T, E);
    const nc_mm qkv[3] = {
        {&L->wq, s->q, Q}, {&L->wk, s->k, K}, {&L->wv, s->v, Vd}};
    nc_fwd_matmul(ctx, s->xn, E, T, qkv, 3);
    nc_fwd_add_bias(ctx, s->q, L->bq.data, T, Q);
    nc_fwd_add_bias(ctx, s->k, L->bk.data, T, K);
    nc_fwd_add_bias(ctx, s->v, L->bv.data, T, Vd);
    nc_fwd_rope_with(ctx, s->q, Q, s->k, K, T,
                     L->swa ? s->rope_cos_swa : s->rope_cos,
                     L->swa ? s->rope_sin_swa : s->rope_sin);
    nc_fwd_attention_sinks(ctx, l, b, s->q, s->k, s->v, s->attn,
                           L->swa ? hp->n_swa : 0, 0.0f, L->attn_sinks.data);
    if (l == hp->n_layer - 1) { /* the rest only for the rows with logits */
      nc_fwd_keep_output_rows(b, s->attn, O);
      rows = nc_fwd_keep_output_rows(b, s->x, E);
      if (rows == 0) return NC_OK;
      nc_fwd_keep_output_order(ctx, b, false);
    }
    const nc_mm wo = {&L->wo, s->xn, E};
    nc_fwd_matmul(ctx, s->attn, O, rows, &wo, 1);
    if (l == hp->n_layer - 1) nc_fwd_keep_output_order(ctx, b, true);
    nc_fwd_residual(ctx, s->x, s->xn, L->bo.data, rows, E);
    /* the mixture of experts */
    nc_fwd_rmsnorm(ctx, s->x, L->ffn_norm.data, s->xn, rows, E);
    nc_fwd_moe(ctx, L, s->xn, s->xn, rows);
    nc_fwd_residual(ctx, s->x, s->xn, NULL, rows, E);
  }
  /* rows: the batch's rows with logits, in order */
  for (int32_t t = 0; t < rows; t++)
    op->rmsnorm(s->x + t * E, w->output_norm.data, s->xn + t * E, E,
                hp->rms_eps);
  nc_fwd_head(ctx, s->xn, rows, &w->output, logits);
  return NC_OK;
}

const nc_arch nc_arch_gpt_oss = {
    .name = ARCH,
    .hf_class = "GptOssForCausalLM",
    .family = "gptoss",
    .scratch = NC_SCRATCH_SWA_ROPE,
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = gptoss_hparams,
    .load_weights = gptoss_load,
    .forward = gptoss_forward,
};
