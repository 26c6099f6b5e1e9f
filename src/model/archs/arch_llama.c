/* arch_llama: the `llama` architecture (SmolLM2, Llama 2/3.x, Mistral):
 * pre-norm blocks of GQA attention with NORMAL RoPE and a SwiGLU FFN. Its
 * graph and loader also serve the architectures that only add pieces to it
 * (arch_llama.h: Q/K/V biases, per-head Q/K norms). */
#include "arch_llama.h"

#include <stdio.h>
#include <stdlib.h>

#include "kernels/ops.h"
#include "model/forward.h"

nc_code nc_llama_check_hparams(const gguf_file *f, nc_hparams *hp,
                               nc_error *err) {
  (void)f;
  if (hp->n_rot != hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   "rope dimension count %d must equal the head size %d",
                   (int)hp->n_rot, (int)hp->head_dim);
  return NC_OK;
}

nc_code nc_llama_check_experts(const char *name, nc_hparams *hp,
                               nc_error *err) {
  if (hp->n_expert < 1)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: metadata '%s.expert_count' is absent or 0: must be "
                   ">= 1",
                   name, name);
  if (hp->n_expert_used < 1)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: metadata '%s.expert_used_count' is absent or 0: must "
                   "be in [1, %d]",
                   name, name, (int)hp->n_expert);
  /* llama.cpp: expert_feed_forward_length, else n_ff / n_expert_used */
  if (hp->n_ff_exp == 0) hp->n_ff_exp = hp->n_ff / hp->n_expert_used;
  if (hp->n_ff_exp < 1)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: no expert width: '%s.expert_feed_forward_length' is "
                   "absent and n_ff %d / %d experts used is 0",
                   name, name, (int)hp->n_ff, (int)hp->n_expert_used);
  return NC_OK;
}

nc_code nc_llama_check_mrope(const gguf_file *f, const char *name, int mrope,
                             nc_hparams *hp, nc_error *err) {
  char key[128];
  snprintf(key, sizeof key, "%s.rope.dimension_sections", name);
  gguf_value_type et;
  uint64_t count;
  if (!gguf_get_arr(f, key, &et, &count))
    return nc_fail(err, NC_ERR_FORMAT, "%s: missing metadata '%s'", name, key);
  if (count < 1 || count > 4)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: metadata '%s' has %llu entries: must have 1 to 4", name,
                   key, (unsigned long long)count);
  int64_t sum = 0;
  for (uint64_t i = 0; i < 4; i++) {
    int64_t v = 0;
    if (i < count &&
        (!gguf_get_arr_i64(f, key, i, &v) || v < 0 || v > hp->head_dim))
      return nc_fail(err, NC_ERR_FORMAT,
                     "%s: metadata '%s'[%llu]: must be an integer in [0, %d]",
                     name, key, (unsigned long long)i, (int)hp->head_dim);
    hp->rope_sections[i] = (int32_t)v;
    sum += v;
  }
  /* ggml_rope_multi: some of t, h, w turn; every sector within the head */
  if (hp->rope_sections[0] + hp->rope_sections[1] + hp->rope_sections[2] < 1 ||
      sum > hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: metadata '%s': the t, h, w sections sum to %d and all "
                   "four to %lld: must be >= 1 and at most the head size %d",
                   name, key,
                   (int)(hp->rope_sections[0] + hp->rope_sections[1] +
                         hp->rope_sections[2]),
                   (long long)sum, (int)hp->head_dim);
  hp->mrope = mrope;
  return NC_OK;
}

/* Rows [r0, r0 + n) of w, as a weight of its own (a view). */
static nc_weight weight_rows(const nc_weight *w, int64_t r0, int64_t n) {
  nc_weight v = *w;
  v.data = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
  v.ne1 = n;
  return v;
}

/* phi3's LongRoPE: rope_factors_short in rope_freqs (the short context's
 * factors; a file with rope_freqs but none of these keeps rope_freqs). */
static nc_code load_rope_short(const gguf_file *f, const nc_hparams *hp,
                               const nc_kernels *kern, nc_model_weights *w,
                               nc_error *err) {
  nc_weight s;
  nc_code rc = nc_weight_load(f, "rope_factors_short.weight", hp->n_rot / 2, 1,
                              false, kern, &s, err);
  if (rc) return rc;
  if (s.data) w->rope_freqs = s;
  if (w->rope_long.data && !w->rope_freqs.data)
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor 'rope_factors_long.weight' without "
                   "'rope_factors_short.weight'");
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
  if (!pc->moe && gguf_find_tensor(f, "blk.0.ffn_gate_inp.weight"))
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "%s: mixture-of-experts files (ffn_gate_inp) are not "
                   "supported for this architecture",
                   pc->name);
  if (!pc->fused && gguf_find_tensor(f, "blk.0.attn_qkv.weight"))
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "%s: fused attn_qkv tensors are not supported", pc->name);
  if (pc->moe && (hp->n_expert < 1 || hp->n_expert_used < 1 ||
                  hp->n_expert_used > hp->n_expert || hp->n_ff_exp < 1))
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: a mixture-of-experts file needs '%s.expert_count' >= "
                   "1 and '%s.expert_used_count' in [1, expert_count] (have "
                   "%d and %d)",
                   pc->name, pc->name, pc->name, (int)hp->n_expert,
                   (int)hp->n_expert_used);
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
  if (pc->fused &&
      ((rc = nc_weight_load(f, "rope_factors_long.weight", hp->n_rot / 2, 1,
                            false, kern, &w->rope_long, err)) ||
       (rc = load_rope_short(f, hp, kern, w, err))))
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
    char qkv_name[GGUF_MAX_NAME];
    snprintf(qkv_name, sizeof qkv_name, "blk.%d.attn_qkv.weight", (int)l);
    const bool fused_qkv = pc->fused && gguf_find_tensor(f, qkv_name);
    const bool dense = !pc->moe, split_ffn = dense && !pc->fused;
    const int64_t NX = hp->n_expert, FX = hp->n_ff_exp;
    struct {
      const char *suffix;
      int64_t ne0, ne1, ne2;
      bool load, required;
      nc_weight *out;
    } t[] = {
        {"attn_norm.weight", E, 1, 1, true, true, &L->attn_norm},
        {"attn_qkv.weight", E, Q + K + Vd, 1, fused_qkv, true, &L->wq},
        {"attn_q.weight", E, Q, 1, !fused_qkv, true, &L->wq},
        {"attn_k.weight", E, K, 1, !fused_qkv, true, &L->wk},
        {"attn_v.weight", E, Vd, 1, !fused_qkv, true, &L->wv},
        {"attn_output.weight", O, E, 1, true, true, &L->wo},
        {"attn_output.bias", E, 1, 1, true, false, &L->bo},
        {"ffn_norm.weight", E, 1, 1, true, true, &L->ffn_norm},
        {"ffn_gate.weight", E, F, 1, split_ffn, true, &L->ffn_gate},
        {"ffn_up.weight", E, F, 1, split_ffn, true, &L->ffn_up},
        {"ffn_up.weight", E, 2 * F, 1, dense && pc->fused, true, &L->ffn_gate},
        {"ffn_down.weight", F, E, 1, dense, true, &L->ffn_down},
        {"ffn_gate_inp.weight", E, NX, 1, pc->moe, true, &L->ffn_gate_inp},
        {"ffn_gate_exps.weight", E, FX, NX, pc->moe, true, &L->gate_exps},
        {"ffn_up_exps.weight", E, FX, NX, pc->moe, true, &L->up_exps},
        {"ffn_down_exps.weight", FX, E, NX, pc->moe, true, &L->down_exps},
        {"attn_q.bias", Q, 1, 1, true, pc->qkv_bias, &L->bq},
        {"attn_k.bias", K, 1, 1, true, pc->qkv_bias, &L->bk},
        {"attn_v.bias", Vd, 1, 1, true, pc->qkv_bias, &L->bv},
        {"attn_q_norm.weight", D, 1, 1, true, pc->qk_norm, &L->q_norm},
        {"attn_k_norm.weight", D, 1, 1, true, pc->qk_norm, &L->k_norm},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
      if (!t[i].load) continue;
      char name[GGUF_MAX_NAME];
      snprintf(name, sizeof name, "blk.%d.%s", (int)l, t[i].suffix);
      if ((rc = nc_weight_load3(f, name, t[i].ne0, t[i].ne1, t[i].ne2,
                                t[i].required, kern, t[i].out, err)))
        return rc;
    }
    /* the fused tensors as views of their row ranges: Q, K, V; gate, up */
    if (fused_qkv) {
      const nc_weight qkv = L->wq;
      L->wq = weight_rows(&qkv, 0, Q);
      L->wk = weight_rows(&qkv, Q, K);
      L->wv = weight_rows(&qkv, Q + K, Vd);
    }
    if (dense && pc->fused) {
      const nc_weight gu = L->ffn_gate;
      L->ffn_gate = weight_rows(&gu, 0, F);
      L->ffn_up = weight_rows(&gu, F, F);
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
  /* LongRoPE (phi3): the long factors when a sequence may run past the
   * original context, as llama.cpp picks them for its n_ctx_seq */
  const float *ff = w->rope_long.data && nc_fwd_ctx_len(ctx) > hp->n_ctx_orig
                        ? w->rope_long.data
                        : w->rope_freqs.data;

  const nc_rope_params rope = nc_hp_rope(hp, false);
  int32_t rows = T; /* T, then in the last layer the rows with logits */

  nc_fwd_embed(&w->tok_embd, b, s->x, E);
  nc_fwd_rope_rows(b, &rope, ff, s->rope_cos, s->rope_sin, half);
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
    /* feed-forward block */
    nc_fwd_rmsnorm(ctx, s->x, L->ffn_norm.data, s->xn, rows, E);
    if (L->ffn_gate_inp.data) {
      nc_fwd_moe(ctx, L, s->xn, s->xn, rows);
    } else {
      const nc_mm gu[2] = {{&L->ffn_gate, s->gate, F}, {&L->ffn_up, s->up, F}};
      nc_fwd_matmul(ctx, s->xn, E, rows, gu, 2);
      nc_fwd_swiglu(ctx, s->gate, s->up, rows, F);
      const nc_mm down = {&L->ffn_down, s->xn, E};
      nc_fwd_matmul(ctx, s->gate, F, rows, &down, 1);
    }
    nc_fwd_residual(ctx, s->x, s->xn, NULL, rows, E);
    /* Qwen3-VL's DeepStack: an image row's slice l + 1 (l < n_deepstack,
     * never the last layer: all T rows are still here) */
    if (l < hp->n_deepstack) nc_fwd_add_input_slice(b, s->x, E, l + 1);
  }
  /* rows: the batch's rows with logits, in order */
  for (int32_t t = 0; t < rows; t++)
    op->rmsnorm(s->x + t * E, w->output_norm.data, s->xn + t * E, E,
                hp->rms_eps);
  nc_fwd_head(ctx, s->xn, rows, &w->output, logits);
  return NC_OK;
}

static nc_code llama_load_weights(const gguf_file *f, const nc_hparams *hp,
                                  const nc_kernels *kern, nc_model_weights *w,
                                  nc_error *err) {
  /* llama.cpp reads Q/K/V biases of llama files when they are there, and
   * takes a file with ffn_gate_inp as a mixture of experts (Mixtral) */
  const nc_llama_pieces pc = {
      .name = "llama",
      .moe = gguf_find_tensor(f, "blk.0.ffn_gate_inp.weight") != NULL};
  return nc_llama_family_load(f, hp, kern, &pc, w, err);
}

/* Mixtral's experts are n_ff wide (llama.cpp's llama loader reads no
 * expert_feed_forward_length). */
static nc_code llama_check_hparams(const gguf_file *f, nc_hparams *hp,
                                   nc_error *err) {
  if (hp->n_expert > 0) hp->n_ff_exp = hp->n_ff;
  return nc_llama_check_hparams(f, hp, err);
}

const nc_arch nc_arch_llama = {
    .name = "llama",
    .hf_class = "LlamaForCausalLM",
    .hf_class_moe = "MixtralForCausalLM",
    .family = "llama",
    .rope_type = NC_ROPE_NORMAL,
    .check_hparams = llama_check_hparams,
    .load_weights = llama_load_weights,
    .forward = nc_llama_family_forward,
};
