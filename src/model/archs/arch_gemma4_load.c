/* arch_gemma4_load: Gemma 4's hyperparameters and tensors (`gemma4`), as
 * llama.cpp's loader reads them (llama_model_gemma4::load_arch_hparams,
 * load_arch_tensors); the graph is arch_gemma4.c's.
 *
 * Keys beyond the common ones: attention.sliding_window and the
 * sliding_window_pattern (one bool per layer), the sliding layers' own head
 * size (attention.key_length_swa = value_length_swa) and RoPE dimensions
 * (rope.dimension_count_swa) and base (rope.freq_base_swa, default 10000),
 * attention.head_count_kv and feed_forward_length as per-layer arrays,
 * attention.shared_kv_layers (the last that many layers own no K/V),
 * embedding_length_per_layer_input (0: no per-layer embeddings),
 * final_logit_softcapping (absent: none). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch_gemma4.h"

/* The sliding-window pattern: one bool per layer (required). */
static nc_code read_pattern(const gguf_file *f, nc_hparams *hp, nc_error *err) {
  const char *key = "gemma4.attention.sliding_window_pattern";
  gguf_value_type et;
  uint64_t count;
  if (!gguf_get_arr(f, key, &et, &count))
    return nc_fail(err, NC_ERR_FORMAT,
                   "missing metadata key '%s' (one bool per layer)", key);
  if (count != (uint64_t)hp->n_layer)
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s' has %llu entries for %d layers", key,
                   (unsigned long long)count, (int)hp->n_layer);
  for (int32_t l = 0; l < hp->n_layer; l++) {
    int64_t v;
    if (!gguf_get_arr_i64(f, key, (uint64_t)l, &v))
      return nc_fail(err, NC_ERR_FORMAT, "metadata '%s'[%d] is not a bool", key,
                     (int)l);
    hp->swa_layer[l] = v != 0;
  }
  return NC_OK;
}

/* Per-layer KV heads: one count for the sliding layers, one for the full
 * ones (the two attention shapes). */
static nc_code read_kv_heads(const gguf_file *f, nc_hparams *hp,
                             nc_error *err) {
  int32_t kv[2] = {0, 0}; /* full, sliding */
  for (int32_t l = 0; l < hp->n_layer; l++) {
    int32_t n = hp->n_head;
    nc_code rc = nc_meta_int_layer(f, "gemma4", "attention.head_count_kv", l,
                                   false, 1, hp->n_head, &n, NULL, err);
    if (rc) return rc;
    const int s = hp->swa_layer[l];
    if (hp->n_head % n != 0)
      return nc_fail(err, NC_ERR_FORMAT,
                     "gemma4: layer %d has %d KV heads, not a divisor of its "
                     "%d heads",
                     (int)l, (int)n, (int)hp->n_head);
    if (kv[s] && kv[s] != n)
      return nc_fail(err, NC_ERR_UNSUPPORTED,
                     "gemma4: %s layers with %d and %d KV heads: one count "
                     "per kind of layer is supported",
                     s ? "sliding" : "full", (int)kv[s], (int)n);
    kv[s] = n;
  }
  if (kv[0]) hp->n_head_kv = kv[0];
  hp->n_head_kv_swa = kv[1] ? kv[1] : hp->n_head_kv;
  return NC_OK;
}

/* The widest FFN (feed_forward_length may be a per-layer array). */
static nc_code read_ff(const gguf_file *f, nc_hparams *hp, nc_error *err) {
  hp->n_ff_max = hp->n_ff;
  for (int32_t l = 0; l < hp->n_layer; l++) {
    int32_t n = 0;
    nc_code rc = nc_meta_int_layer(f, "gemma4", "feed_forward_length", l, true,
                                   1, 1 << 24, &n, NULL, err);
    if (rc) return rc;
    if (n > hp->n_ff_max) hp->n_ff_max = n;
  }
  return NC_OK;
}

int32_t nc_gemma4_ff_of(const gguf_file *f, const nc_hparams *hp, int32_t l) {
  int32_t n = hp->n_ff;
  nc_error err;
  nc_meta_int_layer(f, "gemma4", "feed_forward_length", l, true, 1, 1 << 24, &n,
                    NULL, &err);
  return n;
}

/* Which layers own K/V (the first n_layer - shared_kv_layers) and, for the
 * others, whose they read: the last owner of the same kind (llama.cpp:
 * n_layer_kv - 2 for a sliding layer, n_layer_kv - 1 for a full one, which
 * is that layer in the files it loads; other files are refused). */
static nc_code read_shared(const gguf_file *f, nc_hparams *hp, nc_error *err) {
  int32_t shared = 0;
  nc_code rc = nc_meta_int(f, "gemma4", "attention.shared_kv_layers", false, 0,
                           hp->n_layer - 1, &shared, NULL, err);
  if (rc) return rc;
  hp->n_layer_kv = hp->n_layer - shared;
  for (int32_t l = hp->n_layer_kv; l < hp->n_layer; l++)
    if (nc_gemma4_kv_layer(hp, l) < 0)
      return nc_fail(err, NC_ERR_FORMAT,
                     "gemma4: layer %d shares K/V (shared_kv_layers %d) but "
                     "no earlier %s layer owns any",
                     (int)l, (int)shared,
                     hp->swa_layer[l] ? "sliding" : "full");
  return NC_OK;
}

int32_t nc_gemma4_kv_layer(const nc_hparams *hp, int32_t l) {
  const int32_t n_kv = nc_hp_n_layer_kv(hp);
  if (l < n_kv) return l;
  for (int32_t j = n_kv - 1; j >= 0; j--)
    if (hp->swa_layer[j] == hp->swa_layer[l]) return j;
  return -1;
}

nc_code nc_gemma4_hparams(const gguf_file *f, nc_hparams *hp, nc_error *err) {
  const char *a = "gemma4";
  nc_code rc;
  if (hp->n_layer > NC_HP_MAX_SWA_LAYERS)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "gemma4: %d layers, at most %d are supported",
                   (int)hp->n_layer, NC_HP_MAX_SWA_LAYERS);
  if (hp->head_dim_v != hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   "gemma4: value length %d must equal the key length %d",
                   (int)hp->head_dim_v, (int)hp->head_dim);
  if ((rc = read_pattern(f, hp, err)) || (rc = read_kv_heads(f, hp, err)) ||
      (rc = read_ff(f, hp, err)))
    return rc;
  if ((rc = nc_meta_int(f, a, "attention.sliding_window", true, 1,
                        hp->n_ctx_train, &hp->n_swa, NULL, err)) ||
      (rc = nc_meta_int(f, a, "attention.key_length_swa", true, 1, 65536,
                        &hp->head_dim_swa, NULL, err)))
    return rc;
  int32_t hv = hp->head_dim_swa;
  if ((rc = nc_meta_int(f, a, "attention.value_length_swa", true, 1, 65536, &hv,
                        NULL, err)))
    return rc;
  if (hv != hp->head_dim_swa)
    return nc_fail(err, NC_ERR_FORMAT,
                   "gemma4: value_length_swa %d must equal key_length_swa %d",
                   (int)hv, (int)hp->head_dim_swa);
  hp->n_rot_swa = hp->n_rot;
  if ((rc = nc_meta_int(f, a, "rope.dimension_count_swa", false, 0, 65536,
                        &hp->n_rot_swa, NULL, err)))
    return rc;
  if (hp->n_rot_swa % 2 != 0 || hp->n_rot_swa > hp->head_dim_swa)
    return nc_fail(err, NC_ERR_FORMAT,
                   "gemma4: rope.dimension_count_swa %d must be even and at "
                   "most key_length_swa %d",
                   (int)hp->n_rot_swa, (int)hp->head_dim_swa);
  hp->rope_freq_base_swa = 10000.0f;
  hp->rope_freq_scale_swa = 1.0f;
  if ((rc = nc_meta_float(f, a, "rope.freq_base_swa", false,
                          &hp->rope_freq_base_swa, NULL, err)))
    return rc;
  if (!(hp->rope_freq_base_swa > 0))
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata 'gemma4.rope.freq_base_swa' = %g: must be > 0",
                   (double)hp->rope_freq_base_swa);
  if ((rc = read_shared(f, hp, err)) ||
      (rc = nc_meta_int(f, a, "embedding_length_per_layer_input", true, 0,
                        65536, &hp->n_embd_per_layer, NULL, err)))
    return rc;
  hp->image_bidir_swa_only = true;
  hp->final_softcap = 0.0f;
  if ((rc = nc_meta_float(f, a, "final_logit_softcapping", false,
                          &hp->final_softcap, NULL, err)))
    return rc;
  if (hp->final_softcap < 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "gemma4: final_logit_softcapping %g must be >= 0",
                   (double)hp->final_softcap);
  hp->moe_act = NC_MOE_ACT_GELU; /* GeGLU experts */
  /* no query scale: the scores are q.k as they are */
  hp->attn_scale = 1.0f;
  hp->q_scale = 1.0f;
  hp->attn_softcap = 0.0f;
  return NC_OK;
}

/* One tensor of a layer. */
typedef struct layer_tensor {
  const char *suffix;
  int64_t ne0, ne1, ne2;
  bool required;
  nc_weight *out;
} layer_tensor;

static nc_code load_list(const gguf_file *f, int32_t l, const layer_tensor *t,
                         size_t n, const nc_kernels *kern, nc_error *err) {
  for (size_t i = 0; i < n; i++) {
    char name[GGUF_MAX_NAME];
    snprintf(name, sizeof name, "blk.%d.%s", (int)l, t[i].suffix);
    nc_code rc = nc_weight_load3(f, name, t[i].ne0, t[i].ne1, t[i].ne2,
                                 t[i].required, kern, t[i].out, err);
    if (rc) return rc;
  }
  return NC_OK;
}

/* A layer's experts and what surrounds them (present with ffn_gate_inp). */
static nc_code load_experts(const gguf_file *f, const nc_hparams *hp, int32_t l,
                            const nc_kernels *kern, nc_layer_weights *L,
                            nc_error *err) {
  const int64_t E = hp->n_embd, NX = hp->n_expert, FE = hp->n_ff_exp;
  if (NX == 0 || FE == 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "gemma4: layer %d has ffn_gate_inp but the file declares "
                   "%d experts of width %d (expert_count, "
                   "expert_feed_forward_length)",
                   (int)l, (int)NX, (int)FE);
  const layer_tensor t[] = {
      {"ffn_gate_inp.scale", E, 1, 1, true, &L->gate_inp_scale},
      {"pre_ffw_norm_2.weight", E, 1, 1, true, &L->ffn_pre_norm_2},
      {"post_ffw_norm_1.weight", E, 1, 1, true, &L->ffn_post_norm_1},
      {"post_ffw_norm_2.weight", E, 1, 1, true, &L->ffn_post_norm_2},
      {"ffn_gate_exps.weight", E, FE, NX, true, &L->gate_exps},
      {"ffn_up_exps.weight", E, FE, NX, true, &L->up_exps},
      {"ffn_down_exps.weight", FE, E, NX, true, &L->down_exps},
      {"ffn_down_exps.scale", NX, 1, 1, false, &L->down_exps_scale},
  };
  return load_list(f, l, t, sizeof t / sizeof t[0], kern, err);
}

static nc_code load_layer(const gguf_file *f, const nc_hparams *hp, int32_t l,
                          const nc_kernels *kern, nc_layer_weights *L,
                          nc_error *err) {
  const bool swa = hp->swa_layer[l];
  const nc_hparams h = nc_hp_layer(hp, swa);
  const int64_t E = hp->n_embd, D = h.head_dim, P = hp->n_embd_per_layer;
  const int64_t Q = (int64_t)h.n_head * D, K = nc_hp_n_embd_k(&h);
  const int64_t F = nc_gemma4_ff_of(f, hp, l);
  const bool own = l < nc_hp_n_layer_kv(hp);
  L->swa = swa;
  L->kv_layer = nc_gemma4_kv_layer(hp, l);
  const layer_tensor t[] = {
      {"attn_norm.weight", E, 1, 1, true, &L->attn_norm},
      {"attn_q.weight", E, Q, 1, true, &L->wq},
      {"attn_q_norm.weight", D, 1, 1, true, &L->q_norm},
      {"attn_output.weight", Q, E, 1, true, &L->wo},
      {"post_attention_norm.weight", E, 1, 1, true, &L->attn_post_norm},
      {"layer_output_scale.weight", 1, 1, 1, false, &L->out_scale},
      {"ffn_norm.weight", E, 1, 1, true, &L->ffn_norm},
      {"ffn_gate.weight", E, F, 1, true, &L->ffn_gate},
      {"ffn_up.weight", E, F, 1, true, &L->ffn_up},
      {"ffn_down.weight", F, E, 1, true, &L->ffn_down},
      {"post_ffw_norm.weight", E, 1, 1, true, &L->ffn_post_norm},
      {"ffn_gate_inp.weight", E, hp->n_expert > 0 ? hp->n_expert : 1, 1, false,
       &L->ffn_gate_inp},
      /* a layer that owns K/V: K, its norm, V (absent: V is K) */
      {"attn_k.weight", E, K, 1, true, &L->wk},
      {"attn_k_norm.weight", D, 1, 1, true, &L->k_norm},
      {"attn_v.weight", E, K, 1, false, &L->wv},
  };
  const size_t n = sizeof t / sizeof t[0] - (own ? 0 : 3);
  nc_code rc = load_list(f, l, t, n, kern, err);
  if (!rc && L->ffn_gate_inp.data) rc = load_experts(f, hp, l, kern, L, err);
  if (!rc && P > 0) {
    const layer_tensor pt[] = {
        {"inp_gate.weight", E, P, 1, true, &L->ple_gate},
        {"proj.weight", P, E, 1, true, &L->ple_proj},
        {"post_norm.weight", E, 1, 1, true, &L->ple_post_norm},
    };
    rc = load_list(f, l, pt, sizeof pt / sizeof pt[0], kern, err);
  }
  return rc;
}

nc_code nc_gemma4_load(const gguf_file *f, const nc_hparams *hp,
                       const nc_kernels *kern, nc_model_weights *w,
                       nc_error *err) {
  const int64_t E = hp->n_embd, V = hp->n_vocab, P = hp->n_embd_per_layer;
  nc_code rc;
  if ((rc = nc_weight_load(f, "token_embd.weight", E, V, true, kern,
                           &w->tok_embd, err)) ||
      (rc = nc_weight_load(f, "output_norm.weight", E, 1, true, kern,
                           &w->output_norm, err)) ||
      (rc = nc_weight_load(f, "output.weight", E, V, false, kern, &w->output,
                           err)))
    return rc;
  if (!w->output.data) w->output = w->tok_embd; /* tied embeddings */
  if (!kern->vec_dot[w->output.type])
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "tensor '%s': no dot-product kernel for type %s",
                   w->output.name, nc_type_name(w->output.type));
  /* proportional RoPE: the full layers' frequency factors (required when
   * there is a full layer, as llama.cpp's first full layer requires it) */
  bool any_full = false;
  for (int32_t l = 0; l < hp->n_layer; l++)
    any_full = any_full || !hp->swa_layer[l];
  if ((rc = nc_weight_load(f, "rope_freqs.weight", hp->n_rot / 2, 1, any_full,
                           kern, &w->rope_freqs, err)))
    return rc;
  if (P > 0 &&
      ((rc = nc_weight_load(f, "per_layer_token_embd.weight", P * hp->n_layer,
                            V, true, NULL, &w->ple_tok_embd, err)) ||
       (rc =
            nc_weight_load(f, "per_layer_model_proj.weight", E, P * hp->n_layer,
                           true, kern, &w->ple_model_proj, err)) ||
       (rc = nc_weight_load(f, "per_layer_proj_norm.weight", P, 1, true, kern,
                            &w->ple_proj_norm, err))))
    return rc;
  w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
  if (!w->layers) return nc_fail(err, NC_ERR_NOMEM, "gemma4: out of memory");
  for (int32_t l = 0; l < hp->n_layer; l++)
    if ((rc = load_layer(f, hp, l, kern, &w->layers[l], err))) return rc;
  return NC_OK;
}
