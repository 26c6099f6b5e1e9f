/* arch_gemma: Gemma 2 (`gemma2`), Gemma 3 (`gemma3`) and EmbeddingGemma
 * (`gemma-embedding`: Gemma 3 with non-causal attention and symmetric
 * windows, its pooling and dense heads model_embed.c's), as llama.cpp's
 * graphs: embeddings x sqrt(n_embd); per layer RMSNorm, Q/K/V, per-head Q/K
 * RMSNorm (gemma3), NEOX RoPE (gemma3's sliding-window layers with their own
 * base), q scaled by 1/sqrt(key_length), attention over a sliding window on
 * local layers (gemma2: tanh soft-capped scores), output, RMSNorm after
 * attention, residual; RMSNorm, GeGLU FFN (GELU-tanh gate), RMSNorm after
 * the FFN, residual; final RMSNorm, the tied output head, tanh soft-capped
 * logits (gemma2; gemma3 when its file has the key). The files hold the
 * norms' final multipliers (llama.cpp's converter folds HF's 1 + w in). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "model/arch.h"
#include "model/forward.h"

typedef struct gemma_kind {
  const char *name;
  int pattern;       /* default sliding-window pattern: il % n < n - 1 local */
  int n_layer_27b;   /* the 27B's layer count (query scale from n_embd) */
  bool qk_norm;      /* attn_q_norm / attn_k_norm required */
  bool need_window;  /* sliding_window required */
  bool attn_softcap; /* scores soft-capped */
  bool own_output;   /* output.weight used when present (gemma2: never) */
} gemma_kind;

static const gemma_kind GEMMA2 = {.name = "gemma2",
                                  .pattern = 2,
                                  .n_layer_27b = 46,
                                  .need_window = true,
                                  .attn_softcap = true};
static const gemma_kind GEMMA3 = {.name = "gemma3",
                                  .pattern = 6,
                                  .n_layer_27b = 62,
                                  .qk_norm = true,
                                  .own_output = true};
/* EmbeddingGemma: gemma3's layers, a window required, the query scale
 * 1/sqrt(key_length) at any size; its local layers' RoPE base 10000 as
 * gemma3's (llama.cpp 0.3.36's; the tests' goldens), unless the file sets
 * rope.freq_base_swa */
static const gemma_kind GEMMA_EMBEDDING = {.name = "gemma-embedding",
                                           .pattern = 6,
                                           .n_layer_27b = -1,
                                           .qk_norm = true,
                                           .need_window = true,
                                           .own_output = true};

static nc_code gemma_hparams(const gemma_kind *g, const gguf_file *f,
                             nc_hparams *hp, nc_error *err) {
  const char *a = g->name;
  if (hp->n_rot != hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: rope dimension count %d must equal the head size %d", a,
                   (int)hp->n_rot, (int)hp->head_dim);
  if (hp->head_dim_v != hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: value length %d must equal the key length %d", a,
                   (int)hp->head_dim_v, (int)hp->head_dim);
  nc_code rc;
  bool found;
  hp->n_swa = 0;
  if ((rc = nc_meta_int(f, a, "attention.sliding_window", g->need_window, 1,
                        hp->n_ctx_train, &hp->n_swa, &found, err)))
    return rc;
  /* gemma2: the local layers take the file's base and scaling factor
   * (even with scaling type none, as llama.cpp's rope_freq_scale_train_swa);
   * gemma3's (and gemma-embedding's): base 10000, no scaling; any may set
   * rope.freq_base_swa */
  hp->rope_freq_base_swa = hp->rope_freq_base;
  hp->rope_freq_scale_swa = hp->rope_freq_scale_train;
  if (g == &GEMMA3 || g == &GEMMA_EMBEDDING) {
    hp->rope_freq_base_swa = 10000.0f;
    hp->rope_freq_scale_swa = 1.0f;
  }
  /* its windows reach n_swa / 2 either side (the arch is non-causal) */
  hp->swa_symmetric = g == &GEMMA_EMBEDDING;
  if ((rc = nc_meta_float(f, a, "rope.freq_base_swa", false,
                          &hp->rope_freq_base_swa, NULL, err)))
    return rc;
  if (!(hp->rope_freq_base_swa > 0))
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s.rope.freq_base_swa' = %g: must be > 0", a,
                   (double)hp->rope_freq_base_swa);
  hp->attn_softcap = g->attn_softcap ? 50.0f : 0.0f;
  hp->final_softcap = g == &GEMMA2 ? 30.0f : 0.0f;
  if (g->attn_softcap &&
      (rc = nc_meta_float(f, a, "attn_logit_softcapping", false,
                          &hp->attn_softcap, NULL, err)))
    return rc;
  if ((rc = nc_meta_float(f, a, "final_logit_softcapping", false,
                          &hp->final_softcap, &found, err)))
    return rc;
  if ((g->attn_softcap && !(hp->attn_softcap > 0)) || hp->final_softcap < 0 ||
      (g == &GEMMA2 && !(hp->final_softcap > 0)))
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: soft caps (attn_logit_softcapping %g, "
                   "final_logit_softcapping %g) must be > 0",
                   a, (double)hp->attn_softcap, (double)hp->final_softcap);
  /* q is scaled before the scores; the softmax scale is then 1 */
  hp->q_scale = hp->n_layer == g->n_layer_27b
                    ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                    : 1.0f / sqrtf((float)hp->head_dim);
  hp->attn_scale = 1.0f;
  return NC_OK;
}

static nc_code gemma2_hparams(const gguf_file *f, nc_hparams *hp,
                              nc_error *err) {
  return gemma_hparams(&GEMMA2, f, hp, err);
}
static nc_code gemma3_hparams(const gguf_file *f, nc_hparams *hp,
                              nc_error *err) {
  return gemma_hparams(&GEMMA3, f, hp, err);
}
static nc_code gemma_embedding_hparams(const gguf_file *f, nc_hparams *hp,
                                       nc_error *err) {
  return gemma_hparams(&GEMMA_EMBEDDING, f, hp, err);
}

/* Which layers are local: {arch}.attention.sliding_window_pattern, a uint
 * n (il % n < n - 1) or one bool per layer, else the arch's default n. No
 * window: none. */
static nc_code swa_layers(const gemma_kind *g, const gguf_file *f,
                          const nc_hparams *hp, nc_layer_weights *layers,
                          nc_error *err) {
  char key[128];
  snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", g->name);
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
      layers[l].swa = hp->n_swa > 0 && v != 0;
    }
    return NC_OK;
  }
  int32_t n = g->pattern;
  nc_code rc = nc_meta_int(f, g->name, "attention.sliding_window_pattern",
                           false, 0, hp->n_layer, &n, NULL, err);
  if (rc) return rc;
  for (int32_t l = 0; l < hp->n_layer; l++)
    layers[l].swa = hp->n_swa > 0 && n > 0 && l % n < n - 1;
  return NC_OK;
}

static nc_code gemma_load(const gemma_kind *g, const gguf_file *f,
                          const nc_hparams *hp, const nc_kernels *kern,
                          nc_model_weights *w, nc_error *err) {
  const int64_t E = hp->n_embd, V = hp->n_vocab, F = hp->n_ff;
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  const int64_t D = hp->head_dim;
  nc_code rc;
  if ((rc = nc_weight_load(f, "token_embd.weight", E, V, true, kern,
                           &w->tok_embd, err)) ||
      (rc = nc_weight_load(f, "output_norm.weight", E, 1, true, kern,
                           &w->output_norm, err)))
    return rc;
  if (g->own_output && (rc = nc_weight_load(f, "output.weight", E, V, false,
                                            kern, &w->output, err)))
    return rc;
  if (!w->output.data) w->output = w->tok_embd; /* tied embeddings */
  if (!kern->vec_dot[w->output.type])
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "tensor '%s': no dot-product kernel for type %s",
                   w->output.name, nc_type_name(w->output.type));
  w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
  if (!w->layers)
    return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", g->name);
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
        {"post_attention_norm.weight", E, 1, true, &L->attn_post_norm},
        {"ffn_norm.weight", E, 1, true, &L->ffn_norm},
        {"ffn_gate.weight", E, F, true, &L->ffn_gate},
        {"ffn_up.weight", E, F, true, &L->ffn_up},
        {"ffn_down.weight", F, E, true, &L->ffn_down},
        {"post_ffw_norm.weight", E, 1, true, &L->ffn_post_norm},
        {"attn_q_norm.weight", D, 1, g->qk_norm, &L->q_norm},
        {"attn_k_norm.weight", D, 1, g->qk_norm, &L->k_norm},
    };
    /* gemma2 has no Q/K norms: llama.cpp would not read them */
    const size_t n_t = sizeof t / sizeof t[0] - (g->qk_norm ? 0 : 2);
    for (size_t i = 0; i < n_t; i++) {
      char name[GGUF_MAX_NAME];
      snprintf(name, sizeof name, "blk.%d.%s", (int)l, t[i].suffix);
      if ((rc = nc_weight_load(f, name, t[i].ne0, t[i].ne1, t[i].required, kern,
                               t[i].out, err)))
        return rc;
    }
  }
  return swa_layers(g, f, hp, w->layers, err);
}

static nc_code gemma2_load(const gguf_file *f, const nc_hparams *hp,
                           const nc_kernels *kern, nc_model_weights *w,
                           nc_error *err) {
  return gemma_load(&GEMMA2, f, hp, kern, w, err);
}
static nc_code gemma3_load(const gguf_file *f, const nc_hparams *hp,
                           const nc_kernels *kern, nc_model_weights *w,
                           nc_error *err) {
  return gemma_load(&GEMMA3, f, hp, kern, w, err);
}
static nc_code gemma_embedding_load(const gguf_file *f, const nc_hparams *hp,
                                    const nc_kernels *kern, nc_model_weights *w,
                                    nc_error *err) {
  return gemma_load(&GEMMA_EMBEDDING, f, hp, kern, w, err);
}

static nc_code gemma_forward(nc_fwd *ctx, const nc_batch *b, float *logits,
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
  const nc_rope_params rope = nc_hp_rope(hp, false);
  const nc_rope_params rope_swa = nc_hp_rope(hp, true);
  int32_t rows = T; /* T, then in the last layer the rows with logits */

  nc_fwd_embed(&w->tok_embd, b, s->x, E);
  nc_fwd_rope_rows(b, &rope, NULL, s->rope_cos, s->rope_sin, half);
  nc_fwd_rope_rows(b, &rope_swa, NULL, s->rope_cos_swa, s->rope_sin_swa, half);
  nc_fwd_scale_tokens(ctx, b, s->x, sqrtf((float)E), E);
  for (int32_t l = 0; l < hp->n_layer; l++) {
    const nc_layer_weights *L = &w->layers[l];
    /* attention block */
    nc_fwd_rmsnorm(ctx, s->x, L->attn_norm.data, s->xn, T, E);
    const nc_mm qkv[3] = {
        {&L->wq, s->q, Q}, {&L->wk, s->k, K}, {&L->wv, s->v, Vd}};
    nc_fwd_matmul(ctx, s->xn, E, T, qkv, 3);
    if (L->q_norm.data)
      nc_fwd_rmsnorm(ctx, s->q, L->q_norm.data, s->q, T * hp->n_head,
                     hp->head_dim);
    if (L->k_norm.data)
      nc_fwd_rmsnorm(ctx, s->k, L->k_norm.data, s->k, T * hp->n_head_kv,
                     hp->head_dim);
    nc_fwd_rope_with(ctx, s->q, Q, s->k, K, T,
                     L->swa ? s->rope_cos_swa : s->rope_cos,
                     L->swa ? s->rope_sin_swa : s->rope_sin);
    nc_fwd_scale(ctx, s->q, hp->q_scale, T, Q);
    nc_fwd_attention_ext(ctx, l, b, s->q, s->k, s->v, s->attn,
                         L->swa ? hp->n_swa : 0, hp->attn_softcap);
    if (l == hp->n_layer - 1) { /* the rest only for the rows with logits */
      nc_fwd_keep_output_rows(b, s->attn, O);
      rows = nc_fwd_keep_output_rows(b, s->x, E);
      if (rows == 0) return NC_OK;
      nc_fwd_keep_output_order(ctx, b, false);
    }
    const nc_mm wo = {&L->wo, s->xn, E};
    nc_fwd_matmul(ctx, s->attn, O, rows, &wo, 1);
    if (l == hp->n_layer - 1) nc_fwd_keep_output_order(ctx, b, true);
    nc_fwd_rmsnorm(ctx, s->xn, L->attn_post_norm.data, s->xn, rows, E);
    nc_fwd_residual(ctx, s->x, s->xn, NULL, rows, E);
    /* feed-forward block */
    nc_fwd_rmsnorm(ctx, s->x, L->ffn_norm.data, s->xn, rows, E);
    const nc_mm gu[2] = {{&L->ffn_gate, s->gate, F}, {&L->ffn_up, s->up, F}};
    nc_fwd_matmul(ctx, s->xn, E, rows, gu, 2);
    nc_fwd_geglu(ctx, s->gate, s->up, rows, F);
    const nc_mm down = {&L->ffn_down, s->xn, E};
    nc_fwd_matmul(ctx, s->gate, F, rows, &down, 1);
    nc_fwd_rmsnorm(ctx, s->xn, L->ffn_post_norm.data, s->xn, rows, E);
    nc_fwd_residual(ctx, s->x, s->xn, NULL, rows, E);
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

const nc_arch nc_arch_gemma2 = {
    .name = "gemma2",
    .hf_class = "Gemma2ForCausalLM",
    .family = "gemma",
    .chat_template = "gemma",
    .scratch = NC_SCRATCH_SWA_ROPE,
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = gemma2_hparams,
    .load_weights = gemma2_load,
    .forward = gemma_forward,
};

const nc_arch nc_arch_gemma3 = {
    .name = "gemma3",
    .hf_class = "Gemma3ForCausalLM",
    .family = "gemma",
    .chat_template = "gemma",
    .scratch = NC_SCRATCH_SWA_ROPE,
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = gemma3_hparams,
    .load_weights = gemma3_load,
    .forward = gemma_forward,
};

const nc_arch nc_arch_gemma_embedding = {
    .name = "gemma-embedding",
    .hf_class = "Gemma3TextModel",
    .family = "gemma",
    .chat_template = "gemma",
    .scratch = NC_SCRATCH_SWA_ROPE,
    .rope_type = NC_ROPE_NEOX,
    .non_causal = true,
    .check_hparams = gemma_embedding_hparams,
    .load_weights = gemma_embedding_load,
    .forward = gemma_forward,
};
