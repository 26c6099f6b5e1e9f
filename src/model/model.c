/* model: loading hyperparameters and weights from a GGUF file. */
#include "model.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "model_embed.h"
#include "model_options.h"
#include "tokenizer/vocab.h"

struct nucleus_model {
  gguf_file *gguf;
  const nc_arch *arch;
  nc_hparams hp;
  nc_model_weights w;
  nc_vocab *vocab;
  const nc_kernels *kernels;
  int n_threads;
  bool flash_attn;
  nc_type cache_k, cache_v; /* the KV cache's element types */
  char *chat_template;
  char arch_name[32];
  char *name;
};

/* ---- hyperparameters */

/* Reads an integer key {arch}.suffix that may also be a per-layer array of
 * equal values. *found is false when absent. */
nc_code nc_meta_int(const gguf_file *f, const char *arch, const char *suffix,
                    bool required, int64_t lo, int64_t hi, int32_t *out,
                    bool *found, nc_error *err) {
  return nc_meta_int_layer(f, arch, suffix, -1, required, lo, hi, out, found,
                           err);
}

nc_code nc_meta_int_layer(const gguf_file *f, const char *arch,
                          const char *suffix, int32_t layer, bool required,
                          int64_t lo, int64_t hi, int32_t *out, bool *found,
                          nc_error *err) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  if (found) *found = false;
  if (gguf_find_key(f, key) < 0) {
    if (required)
      return nc_fail(err, NC_ERR_FORMAT, "missing metadata key '%s'", key);
    return NC_OK;
  }
  int64_t v = 0;
  gguf_value_type et;
  uint64_t count;
  if (gguf_get_arr(f, key, &et, &count) && layer >= 0) {
    if ((uint64_t)layer >= count)
      return nc_fail(err, NC_ERR_FORMAT,
                     "metadata '%s' has %llu entries: no entry for layer %d",
                     key, (unsigned long long)count, (int)layer);
    if (!gguf_get_arr_i64(f, key, (uint64_t)layer, &v))
      return nc_fail(err, NC_ERR_FORMAT, "metadata '%s'[%d] is not an integer",
                     key, (int)layer);
  } else if (gguf_get_arr(f, key, &et, &count)) {
    if (count == 0)
      return nc_fail(err, NC_ERR_FORMAT, "metadata '%s' is an empty array",
                     key);
    for (uint64_t i = 0; i < count; i++) {
      int64_t e;
      if (!gguf_get_arr_i64(f, key, i, &e))
        return nc_fail(err, NC_ERR_FORMAT,
                       "metadata '%s'[%llu] is not an integer", key,
                       (unsigned long long)i);
      if (i > 0 && e != v)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "metadata '%s' varies per layer (%lld vs %lld): not "
                       "supported",
                       key, (long long)v, (long long)e);
      v = e;
    }
  } else if (!gguf_get_i64(f, key, &v)) {
    return nc_fail(err, NC_ERR_FORMAT, "metadata '%s' is not an integer", key);
  }
  if (v < lo || v > hi)
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s' = %lld: must be in [%lld, %lld]", key,
                   (long long)v, (long long)lo, (long long)hi);
  *out = (int32_t)v;
  if (found) *found = true;
  return NC_OK;
}

nc_code nc_meta_float(const gguf_file *f, const char *arch, const char *suffix,
                      bool required, float *out, bool *found, nc_error *err) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  if (found) *found = false;
  if (gguf_find_key(f, key) < 0) {
    if (required)
      return nc_fail(err, NC_ERR_FORMAT, "missing metadata key '%s'", key);
    return NC_OK;
  }
  double v;
  if (!gguf_get_f64(f, key, &v) || !isfinite(v))
    return nc_fail(err, NC_ERR_FORMAT, "metadata '%s' is not a finite number",
                   key);
  *out = (float)v;
  if (found) *found = true;
  return NC_OK;
}

/* YaRN's parameters as llama.cpp's context sets them from the scaling type
 * and freq_scale: ext_factor 1 for yarn (else 0), beta_fast 32, beta_slow 1,
 * and the magnitude: for yarn get_mscale(factor) = 1 + 0.1 ln(factor)
 * (factor > 1), times 1 / (1 + 0.1 ln(factor)), which cancels the mscale
 * the tables multiply in (llama.cpp's library is built without FMA: a
 * multiply, then an add), times rope.scaling.attn_factor. */
static void nc_hp_yarn_defaults(nc_hparams *hp) {
  hp->yarn_beta_fast = 32.0f;
  hp->yarn_beta_slow = 1.0f;
  hp->yarn_ext_factor = hp->rope_scaling == NC_ROPE_SCALING_YARN ? 1.0f : 0.0f;
  float attn = 1.0f;
  if (hp->yarn_ext_factor != 0.0f) {
    const float factor = 1.0f / hp->rope_freq_scale;
    const float l = 0.1f * logf(factor);
    attn = factor <= 1.0f ? 1.0f : l + 1.0f;
    attn *= 1.0f / (1.0f + l);
  }
  hp->yarn_attn_factor = attn * hp->rope_attn_factor;
}

nc_rope_params nc_hp_rope(const nc_hparams *hp, bool swa) {
  nc_rope_params p = {
      .n_rot = hp->n_rot,
      .freq_base = swa ? hp->rope_freq_base_swa : hp->rope_freq_base,
      .freq_scale = swa ? hp->rope_freq_scale_swa : hp->rope_freq_scale,
      .ext_factor = hp->yarn_ext_factor,
      .attn_factor = hp->yarn_attn_factor,
      .mrope = hp->mrope};
  memcpy(p.sections, hp->rope_sections, sizeof p.sections);
  nc_rope_yarn_corr_dims(p.n_rot, hp->yarn_orig_ctx, p.freq_base,
                         hp->yarn_beta_fast, hp->yarn_beta_slow, p.corr_dims);
  return p;
}

/* {arch}.rope.scaling.type and .factor, as llama.cpp's loader reads them:
 * the type absent means linear; the factor absent (or 0, as old files
 * write "no scaling") means 1, the old key rope.scale_linear standing in
 * for it. A declared linear or yarn scaling needs a factor > 0. */
static nc_code load_rope_scaling(const gguf_file *f, const char *arch,
                                 nc_hparams *hp, nc_error *err) {
  static const struct {
    const char *name;
    int type;
  } types[] = {{"none", NC_ROPE_SCALING_NONE},
               {"linear", NC_ROPE_SCALING_LINEAR},
               {"yarn", NC_ROPE_SCALING_YARN},
               {"longrope", NC_ROPE_SCALING_LONGROPE}};
  char key[128];
  snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
  hp->rope_scaling = NC_ROPE_SCALING_LINEAR;
  bool declared = false;
  gguf_str st;
  if (gguf_find_key(f, key) >= 0) {
    if (!gguf_get_str(f, key, &st))
      return nc_fail(err, NC_ERR_FORMAT, "metadata '%s' is not a string", key);
    size_t i = 0;
    while (i < sizeof types / sizeof types[0] &&
           !(strlen(types[i].name) == st.len &&
             !memcmp(types[i].name, st.ptr, st.len)))
      i++;
    if (i == sizeof types / sizeof types[0])
      return nc_fail(err, NC_ERR_UNSUPPORTED,
                     "metadata '%s' = '%.*s': not a supported RoPE scaling "
                     "(none, linear, yarn, longrope)",
                     key, (int)(st.len > 32 ? 32 : st.len), st.ptr);
    hp->rope_scaling = types[i].type;
    declared = true;
  }
  float factor = 0.0f;
  bool found = false;
  nc_code rc;
  if ((rc = nc_meta_float(f, arch, "rope.scaling.factor", false, &factor,
                          &found, err)))
    return rc;
  const char *fkey = "rope.scaling.factor";
  if (!found) {
    fkey = "rope.scale_linear";
    if ((rc = nc_meta_float(f, arch, fkey, false, &factor, &found, err)))
      return rc;
  }
  if (found && factor < 0.0f)
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s.%s' = %g: must be > 0 (or 0: no scaling)",
                   arch, fkey, (double)factor);
  if (declared && factor == 0.0f &&
      (hp->rope_scaling == NC_ROPE_SCALING_LINEAR ||
       hp->rope_scaling == NC_ROPE_SCALING_YARN))
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s' = '%.*s' needs '%s.rope.scaling.factor' > 0 "
                   "(%s)",
                   key, (int)st.len, st.ptr, arch,
                   found ? "it is 0" : "it is absent");
  hp->rope_freq_scale_train = factor == 0.0f ? 1.0f : 1.0f / factor;
  if (!(hp->rope_freq_scale_train > 0.0f) ||
      !isfinite(hp->rope_freq_scale_train))
    return nc_fail(err, NC_ERR_FORMAT, "metadata '%s.%s' = %g: out of range",
                   arch, fkey, (double)factor);
  hp->rope_freq_scale = hp->rope_scaling == NC_ROPE_SCALING_NONE
                            ? 1.0f
                            : hp->rope_freq_scale_train;
  return NC_OK;
}

/* The RoPE overrides of nucleus_model_params, applied as llama.cpp's
 * context applies its flags over the file's values: the global layers' base
 * and scale (gemma's local layers keep theirs), scaling type none forcing
 * scale 1, YaRN's parameters recomputed; a YaRN scale other than the
 * file's sets the training context to yarn_orig_ctx / scale. */
static nc_code apply_rope_overrides(const nucleus_model_params *mp,
                                    nc_hparams *hp, nc_error *err) {
  /* (ranges and names: nc_model_options_check_all, at the load's start) */
  if (mp->rope_scaling) {
    static const int types[] = {NC_ROPE_SCALING_NONE, NC_ROPE_SCALING_LINEAR,
                                NC_ROPE_SCALING_YARN};
    int i = nc_model_options_choice("rope_scaling", mp->rope_scaling);
    assert(i >= 0 && i < 3);
    hp->rope_scaling = types[i];
  }
  if (mp->rope_freq_base > 0.0f) hp->rope_freq_base = mp->rope_freq_base;
  hp->rope_freq_scale =
      mp->rope_scale > 0.0f ? 1.0f / mp->rope_scale : hp->rope_freq_scale_train;
  if (hp->rope_scaling == NC_ROPE_SCALING_NONE) hp->rope_freq_scale = 1.0f;
  if (mp->yarn_orig_ctx > 0) hp->yarn_orig_ctx = mp->yarn_orig_ctx;
  nc_hp_yarn_defaults(hp);
  if (hp->rope_scaling == NC_ROPE_SCALING_YARN &&
      hp->rope_freq_scale != hp->rope_freq_scale_train) {
    const double n = (double)hp->yarn_orig_ctx / (double)hp->rope_freq_scale;
    hp->n_ctx_train = n >= (double)INT32_MAX ? INT32_MAX : (int32_t)n;
  }
  return NC_OK;
}

nc_hparams nc_hp_layer(const nc_hparams *hp, bool swa) {
  nc_hparams h = *hp;
  if (swa && hp->head_dim_swa > 0) {
    h.n_head_kv = hp->n_head_kv_swa;
    h.head_dim = h.head_dim_v = hp->head_dim_swa;
    h.n_rot = hp->n_rot_swa;
  }
  return h;
}

/* The generic keys; an arch with per-layer arrays (layer_arrays) has
 * feed_forward_length and attention.head_count_kv read at layer 0 here
 * (its check_hparams reads the rest). */
static nc_code load_hparams(const gguf_file *f, const char *arch,
                            bool layer_arrays, nc_hparams *hp, nc_error *err) {
  memset(hp, 0, sizeof *hp);
  const int64_t BIG = 1 << 24;
  const int32_t at = layer_arrays ? 0 : -1;
  nc_code rc;
  bool found;
  if ((rc = nc_meta_int(f, arch, "context_length", true, 1, INT32_MAX,
                        &hp->n_ctx_train, NULL, err)) ||
      (rc = nc_meta_int(f, arch, "embedding_length", true, 1, BIG, &hp->n_embd,
                        NULL, err)) ||
      (rc = nc_meta_int(f, arch, "block_count", true, 1, 4096, &hp->n_layer,
                        NULL, err)) ||
      (rc = nc_meta_int_layer(f, arch, "feed_forward_length", at, true, 1, BIG,
                              &hp->n_ff, NULL, err)) ||
      (rc = nc_meta_int(f, arch, "attention.head_count", true, 1, 4096,
                        &hp->n_head, NULL, err)))
    return rc;
  hp->n_head_kv = hp->n_head;
  if ((rc = nc_meta_int_layer(f, arch, "attention.head_count_kv", at, false, 1,
                              4096, &hp->n_head_kv, NULL, err)))
    return rc;
  if (hp->n_head % hp->n_head_kv != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%d attention heads are not a multiple of %d KV heads",
                   (int)hp->n_head, (int)hp->n_head_kv);
  hp->head_dim = hp->n_embd / hp->n_head;
  if ((rc = nc_meta_int(f, arch, "attention.key_length", false, 1, 65536,
                        &hp->head_dim, &found, err)))
    return rc;
  if (!found && hp->n_embd % hp->n_head != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "n_embd %d is not a multiple of %d heads and "
                   "%s.attention.key_length is absent",
                   (int)hp->n_embd, (int)hp->n_head, arch);
  hp->head_dim_v = hp->head_dim;
  if ((rc = nc_meta_int(f, arch, "attention.value_length", false, 1, 65536,
                        &hp->head_dim_v, NULL, err)))
    return rc;
  hp->n_rot = hp->head_dim;
  if ((rc = nc_meta_int(f, arch, "rope.dimension_count", false, 0, 65536,
                        &hp->n_rot, NULL, err)))
    return rc;
  if (hp->n_rot % 2 != 0 || hp->n_rot > hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   "rope dimension count %d: must be even and at most the "
                   "head size %d",
                   (int)hp->n_rot, (int)hp->head_dim);
  /* a LayerNorm model (bert) has layer_norm_epsilon instead */
  if ((rc = nc_meta_float(f, arch, "attention.layer_norm_epsilon", false,
                          &hp->rms_eps, &found, err)))
    return rc;
  if ((rc = nc_meta_float(f, arch, "attention.layer_norm_rms_epsilon", !found,
                          &hp->rms_eps, NULL, err)))
    return rc;
  if (hp->rms_eps < 0)
    return nc_fail(err, NC_ERR_FORMAT, "RMS norm epsilon %g is negative",
                   (double)hp->rms_eps);
  hp->rope_freq_base = 10000.0f;
  if ((rc = nc_meta_float(f, arch, "rope.freq_base", false, &hp->rope_freq_base,
                          NULL, err)))
    return rc;
  if (!(hp->rope_freq_base > 0))
    return nc_fail(err, NC_ERR_FORMAT, "rope.freq_base %g: must be > 0",
                   (double)hp->rope_freq_base);
  if ((rc = load_rope_scaling(f, arch, hp, err))) return rc;
  hp->n_vocab = 0;
  if ((rc = nc_meta_int(f, arch, "vocab_size", false, 1, INT32_MAX,
                        &hp->n_vocab, NULL, err)))
    return rc;
  if (hp->n_vocab == 0) {
    gguf_value_type et;
    uint64_t count;
    if (gguf_get_arr(f, "tokenizer.ggml.tokens", &et, &count) && count > 0 &&
        count < INT32_MAX)
      hp->n_vocab = (int32_t)count;
  }
  if (hp->n_vocab == 0) {
    const gguf_tensor_info *te = gguf_find_tensor(f, "token_embd.weight");
    if (te && te->ne[1] > 0 && te->ne[1] < INT32_MAX)
      hp->n_vocab = (int32_t)te->ne[1];
  }
  if (hp->n_vocab == 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "cannot tell the vocabulary size: no %s.vocab_size, "
                   "tokenizer.ggml.tokens or token_embd.weight",
                   arch);
  hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
  if ((rc = nc_meta_int(f, arch, "expert_count", false, 0, 4096, &hp->n_expert,
                        NULL, err)) ||
      (rc = nc_meta_int(f, arch, "expert_used_count", false, 0, 4096,
                        &hp->n_expert_used, NULL, err)) ||
      (rc = nc_meta_int(f, arch, "expert_feed_forward_length", false, 1, BIG,
                        &hp->n_ff_exp, NULL, err)))
    return rc;
  if (hp->n_expert_used > hp->n_expert)
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s.expert_used_count' = %d exceeds "
                   "'%s.expert_count' = %d",
                   arch, (int)hp->n_expert_used, arch, (int)hp->n_expert);
  if (hp->n_expert > 0 && hp->n_expert_used == 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s.expert_used_count' is 0 (or absent) with %d "
                   "experts: must be in [1, %d]",
                   arch, (int)hp->n_expert, (int)hp->n_expert);
  hp->n_ctx_orig = hp->n_ctx_train;
  if ((rc = nc_meta_int(f, arch, "rope.scaling.original_context_length", false,
                        1, INT32_MAX, &hp->n_ctx_orig, NULL, err)))
    return rc;
  hp->rope_attn_factor = 1.0f;
  if ((rc = nc_meta_float(f, arch, "rope.scaling.attn_factor", false,
                          &hp->rope_attn_factor, NULL, err)))
    return rc;
  if (!(hp->rope_attn_factor > 0))
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s.rope.scaling.attn_factor' = %g: must be > 0",
                   arch, (double)hp->rope_attn_factor);
  hp->yarn_orig_ctx = hp->n_ctx_orig;
  nc_hp_yarn_defaults(hp);
  return NC_OK;
}

/* ---- weights */

nc_code nc_weight_load(const gguf_file *f, const char *name, int64_t ne0,
                       int64_t ne1, bool required, const nc_kernels *kern,
                       nc_weight *out, nc_error *err) {
  return nc_weight_load3(f, name, ne0, ne1, 1, required, kern, out, err);
}

static nc_code weight_load(const gguf_file *f, const char *name, int64_t ne0,
                           int64_t ne1, int64_t ne2, bool required, bool matrix,
                           const nc_kernels *kern, nc_weight *out,
                           nc_error *err);

nc_code nc_weight_load3(const gguf_file *f, const char *name, int64_t ne0,
                        int64_t ne1, int64_t ne2, bool required,
                        const nc_kernels *kern, nc_weight *out, nc_error *err) {
  const bool vector = ne1 == 1 && strstr(name, "token_embd") == NULL;
  return weight_load(f, name, ne0, ne1, ne2, required, !vector, kern, out, err);
}

nc_code nc_weight_load_matrix(const gguf_file *f, const char *name, int64_t ne0,
                              int64_t ne1, bool required,
                              const nc_kernels *kern, nc_weight *out,
                              nc_error *err) {
  return weight_load(f, name, ne0, ne1, 1, required, true, kern, out, err);
}

static nc_code weight_load(const gguf_file *f, const char *name, int64_t ne0,
                           int64_t ne1, int64_t ne2, bool required, bool matrix,
                           const nc_kernels *kern, nc_weight *out,
                           nc_error *err) {
  memset(out, 0, sizeof *out);
  const gguf_tensor_info *t = gguf_find_tensor(f, name);
  if (!t) {
    if (!required) return NC_OK;
    if (ne2 > 1)
      return nc_fail(err, NC_ERR_FORMAT,
                     "missing tensor '%s' (expected shape {%lld, %lld, %lld})",
                     name, (long long)ne0, (long long)ne1, (long long)ne2);
    return nc_fail(err, NC_ERR_FORMAT,
                   "missing tensor '%s' (expected shape {%lld, %lld})", name,
                   (long long)ne0, (long long)ne1);
  }
  if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2 || t->ne[3] != 1) {
    if (ne2 > 1)
      return nc_fail(err, NC_ERR_FORMAT,
                     "tensor '%s' has shape {%lld, %lld, %lld, %lld}, "
                     "expected {%lld, %lld, %lld}",
                     name, (long long)t->ne[0], (long long)t->ne[1],
                     (long long)t->ne[2], (long long)t->ne[3], (long long)ne0,
                     (long long)ne1, (long long)ne2);
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor '%s' has shape {%lld, %lld, %lld, %lld}, expected "
                   "{%lld, %lld}",
                   name, (long long)t->ne[0], (long long)t->ne[1],
                   (long long)t->ne[2], (long long)t->ne[3], (long long)ne0,
                   (long long)ne1);
  }
  const nc_type_traits *tr = nc_type_traits_of(t->type);
  if (!tr || !tr->supported)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "tensor '%s' has type %s (id %u), which is not supported",
                   name, nc_type_name(t->type), (unsigned)t->type);
  const bool vector = !matrix;
  if (vector && t->type != NC_TYPE_F32)
    return nc_fail(err, NC_ERR_FORMAT, "tensor '%s' has type %s, expected F32",
                   name, nc_type_name(t->type));
  if (!vector && kern && !kern->vec_dot[t->type])
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "tensor '%s': no dot-product kernel for type %s in the "
                   "'%s' kernels",
                   name, nc_type_name(t->type), kern->name);
  const size_t rb = nc_row_size((nc_type)t->type, ne0);
  if (rb == 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor '%s': row of %lld elements is not a whole number "
                   "of %s blocks",
                   name, (long long)ne0, nc_type_name(t->type));
  /* the expected shape comes from bounded hyperparameters (n_embd, n_ff
   * <= 2^24, experts <= 4096), so the products below do not overflow */
  const uint64_t rows = (uint64_t)ne1 * (uint64_t)ne2;
  if (!t->data || (uint64_t)rb * rows > t->nbytes)
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor '%s': data of %llu bytes, expected %llu", name,
                   (unsigned long long)t->nbytes,
                   (unsigned long long)rb * (unsigned long long)rows);
  const int64_t nb = (int64_t)(rb / tr->type_size * rows);
  const int64_t bad = nc_first_bad_block((nc_type)t->type, t->data, nb);
  if (bad >= 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor '%s': block %lld of %lld (%s) has a scale that is "
                   "not a finite number (NaN or infinity)",
                   name, (long long)bad, (long long)nb, nc_type_name(t->type));
  out->data = t->data;
  out->type = (nc_type)t->type;
  out->ne0 = ne0;
  out->ne1 = ne1;
  out->ne2 = ne2;
  out->row_bytes = rb;
  out->name = t->name;
  return NC_OK;
}

/* ---- the model */

static int online_cores(void) {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (n > 512 ? 512 : (int)n);
}

/* (values checked: nc_model_options_check_all) */
static nc_type cache_type_of(nucleus_cache_type t) {
  switch (t) {
  case NUCLEUS_CACHE_F16: break;
  case NUCLEUS_CACHE_BF16: return NC_TYPE_BF16;
  case NUCLEUS_CACHE_Q8_0: return NC_TYPE_Q8_0;
  case NUCLEUS_CACHE_Q4_0: return NC_TYPE_Q4_0;
  }
  return NC_TYPE_F16;
}

static nc_file_load file_load_of(nucleus_load_mode m) {
  switch (m) {
  case NUCLEUS_LOAD_AUTO: break;
  case NUCLEUS_LOAD_READ: return NC_FILE_READ;
  case NUCLEUS_LOAD_MMAP: return NC_FILE_MMAP;
  }
  return NC_FILE_AUTO;
}

/* nucleus_model_params.mtp: the file's first MTP layer runs, its K/V in
 * one more cache layer and its input row in each sequence's state. */
static nc_code enable_mtp(nucleus_model *m, nc_error *err) {
  if (!m->arch->forward_mtp)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mtp: a %s model has no MTP head (qwen35, qwen35moe and "
                   "qwen3next files may carry one)",
                   m->arch->name);
  if (m->hp.n_layer_nextn < 1)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mtp: the file carries no MTP layers (metadata "
                   "'%s.nextn_predict_layers' is absent or 0)",
                   m->arch_name);
  m->hp.mtp = true;
  m->hp.n_layer_kv = nc_hp_n_layer_kv(&m->hp) + 1;
  return NC_OK;
}

nc_code nc_model_load(const char *path, const nucleus_model_params *params,
                      nucleus_model **out, nc_error *err) {
  *out = NULL;
  if (!path) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "model path is NULL");
  nucleus_model_params defaults = {0};
  if (!params) params = &defaults;
  /* Every option against the one table (model_options.c), then what
   * relates one to another. */
  nc_code orc = nc_model_options_check_all(params, err);
  if (orc != NC_OK) return orc;
  const nc_file_load how = file_load_of(params->load_mode);
  const nc_type cache_k = cache_type_of(params->cache_type_k);
  const nc_type cache_v = cache_type_of(params->cache_type_v);
  /* Our non-flash kernels read F16 only; llama.cpp's need flash attention
   * for a quantized V (its auto turns it on then, as ours does). */
  const bool typed = cache_k != NC_TYPE_F16 || cache_v != NC_TYPE_F16;
  if (typed && params->flash_attn == NUCLEUS_FLASH_ATTN_OFF)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "KV cache types K %s, V %s need flash attention (only "
                   "f16 runs without it; llama.cpp too requires it for a "
                   "quantized V): use flash attention on or auto",
                   nc_type_name(cache_k), nc_type_name(cache_v));
  nucleus_model *m = calloc(1, sizeof *m);
  if (!m) return nc_fail(err, NC_ERR_NOMEM, "model: out of memory");
  m->cache_k = cache_k;
  m->cache_v = cache_v;
  nc_code rc = gguf_open_load(path, how, &m->gguf, err);
  if (rc) goto fail;
  gguf_str arch;
  if (!gguf_get_str(m->gguf, "general.architecture", &arch)) {
    rc = nc_fail(err, NC_ERR_FORMAT,
                 "%s: missing metadata key 'general.architecture'", path);
    goto fail;
  }
  m->arch = nc_arch_find(arch.ptr, arch.len);
  if (!m->arch || arch.len >= sizeof m->arch_name) {
    char list[256] = "";
    for (size_t i = 0, o = 0; i < nc_arch_count() && o < sizeof list; i++)
      o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "",
                            nc_arch_at(i)->name);
    rc = nc_fail(err, NC_ERR_UNSUPPORTED,
                 "%s: architecture '%.*s' is not supported (supported: %s)",
                 path, (int)(arch.len > 64 ? 64 : arch.len), arch.ptr, list);
    goto fail;
  }
  memcpy(m->arch_name, arch.ptr, arch.len);
  m->arch_name[arch.len] = '\0';
  gguf_str name;
  if (gguf_get_str(m->gguf, "general.name", &name)) {
    m->name = strndup(name.ptr, name.len);
  } else {
    m->name = strdup("");
  }
  if (!m->name) {
    rc = nc_fail(err, NC_ERR_NOMEM, "model: out of memory");
    goto fail;
  }
  if ((rc = load_hparams(m->gguf, m->arch_name, m->arch->layer_arrays, &m->hp,
                         err)))
    goto fail;
  m->hp.rope_type = m->arch->rope_type;
  if (!nc_row_size(cache_k, m->hp.head_dim) ||
      !nc_row_size(cache_v, m->hp.head_dim_v)) {
    rc = nc_fail(err, NC_ERR_UNSUPPORTED,
                 "%s: KV cache types K %s, V %s: the block size must divide "
                 "the head sizes K %d, V %d",
                 path, nc_type_name(cache_k), nc_type_name(cache_v),
                 (int)m->hp.head_dim, (int)m->hp.head_dim_v);
    goto fail;
  }
  if ((rc = nc_model_embed_hparams(m->gguf, m->arch_name, m->arch->non_causal,
                                   &m->hp, err)))
    goto fail;
  if (m->arch->check_hparams &&
      (rc = m->arch->check_hparams(m->gguf, &m->hp, err)))
    goto fail;
  if (params->mtp && (rc = enable_mtp(m, err))) goto fail;
  if ((rc = apply_rope_overrides(params, &m->hp, err))) goto fail;
  m->kernels = params->reference_kernels ? nc_kernels_ref()
                                         : nc_kernels_best(params->no_repack);
  if ((rc = m->arch->load_weights(m->gguf, &m->hp, m->kernels, &m->w, err)))
    goto fail;
  if ((rc = nc_model_embed_heads(m->gguf, m->arch_name, m->kernels, &m->hp,
                                 &m->w, err)))
    goto fail;
  m->hp.has_rope_freqs = m->w.rope_freqs.data != NULL;
  if ((rc = nc_vocab_load(m->gguf, &m->vocab, err))) goto fail;
  m->n_threads = params->n_threads ? params->n_threads : online_cores();
  m->flash_attn = params->flash_attn == NUCLEUS_FLASH_ATTN_AUTO
                      ? NC_FLASH_ATTN_AUTO_ON || typed
                      : params->flash_attn == NUCLEUS_FLASH_ATTN_ON;
  if (params->chat_template) {
    m->chat_template = strdup(params->chat_template);
    if (!m->chat_template) {
      rc = nc_fail(err, NC_ERR_NOMEM, "model: out of memory");
      goto fail;
    }
  }
  *out = m;
  return NC_OK;
fail:
  if (err && rc != NC_OK && strstr(err->message, path) == NULL)
    nc_error_prefix(err, "%s", path);
  nc_model_free(m);
  return rc;
}

void nc_model_free(nucleus_model *m) {
  if (!m) return;
  if (m->vocab) nc_vocab_free(m->vocab);
  free(m->w.layers);
  free(m->chat_template);
  free(m->name);
  gguf_close(m->gguf);
  free(m);
}

const nc_hparams *nc_model_hparams(const nucleus_model *m) {
  return &m->hp;
}
const nc_model_weights *nc_model_weights_of(const nucleus_model *m) {
  return &m->w;
}
const gguf_file *nc_model_gguf(const nucleus_model *m) {
  return m->gguf;
}
const nc_vocab *nc_model_vocab(const nucleus_model *m) {
  return m->vocab;
}
const nc_kernels *nc_model_kernels(const nucleus_model *m) {
  return m->kernels;
}

nc_weight nc_weight_expert(const nc_weight *w, int64_t e) {
  nc_weight v = *w;
  v.ne2 = 1;
  v.expert = (int32_t)e;
  v.n_experts = (int32_t)w->ne2;
  const size_t stride =
      w->expert_bytes ? w->expert_bytes : (size_t)w->ne1 * w->row_bytes;
  if (v.data) v.data = (const uint8_t *)w->data + (size_t)e * stride;
  v.expert_bytes = 0;
  return v;
}

nc_code nc_weight_load_gate_up_exps(const gguf_file *f, int32_t l, int64_t ne0,
                                    int64_t ff, int64_t n_expert,
                                    const nc_kernels *kern, nc_weight *gate,
                                    nc_weight *up, nc_error *err) {
  char name[GGUF_MAX_NAME];
  snprintf(name, sizeof name, "blk.%d.ffn_gate_up_exps.weight", (int)l);
  nc_weight both;
  nc_code rc =
      nc_weight_load3(f, name, ne0, 2 * ff, n_expert, false, kern, &both, err);
  if (rc) return rc;
  if (both.data) {
    /* each expert: ff gate rows, then ff up rows */
    both.ne1 = ff;
    both.expert_bytes = 2 * (size_t)ff * both.row_bytes;
    *gate = both;
    *up = both;
    up->data = (const uint8_t *)both.data + (size_t)ff * both.row_bytes;
    return NC_OK;
  }
  snprintf(name, sizeof name, "blk.%d.ffn_gate_exps.weight", (int)l);
  if ((rc = nc_weight_load3(f, name, ne0, ff, n_expert, true, kern, gate, err)))
    return rc;
  snprintf(name, sizeof name, "blk.%d.ffn_up_exps.weight", (int)l);
  return nc_weight_load3(f, name, ne0, ff, n_expert, true, kern, up, err);
}

static bool has_dot(const nc_kernels *k, const nc_weight *w) {
  return !w->data || k->vec_dot[w->type] != NULL;
}

nc_code nc_model_set_kernels(nucleus_model *m, const nc_kernels *k,
                             nc_error *err) {
  if (!k) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "kernel table is NULL");
  bool ok = has_dot(k, &m->w.output);
  for (int32_t l = 0; ok && l < m->hp.n_layer; l++) {
    const nc_layer_weights *L = &m->w.layers[l];
    ok = has_dot(k, &L->wq) && has_dot(k, &L->wk) && has_dot(k, &L->wv) &&
         has_dot(k, &L->wo) && has_dot(k, &L->ffn_gate) &&
         has_dot(k, &L->ffn_up) && has_dot(k, &L->ffn_down) &&
         has_dot(k, &L->ffn_gate_inp) && has_dot(k, &L->gate_exps) &&
         has_dot(k, &L->up_exps) && has_dot(k, &L->down_exps);
  }
  if (!ok)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "the '%s' kernels lack a dot product for a weight type of "
                   "this model",
                   k->name);
  m->kernels = k;
  return NC_OK;
}
const char *nc_model_chat_template_override(const nucleus_model *m) {
  return m->chat_template;
}
bool nc_model_flash_attn(const nucleus_model *m) {
  return m->flash_attn;
}

nc_type nc_model_cache_type_k(const nucleus_model *m) {
  return m->cache_k;
}

nc_type nc_model_cache_type_v(const nucleus_model *m) {
  return m->cache_v;
}

int nc_model_n_threads(const nucleus_model *m) {
  return m->n_threads;
}
const char *nc_model_arch_name(const nucleus_model *m) {
  return m->arch_name;
}
const char *nc_model_name_str(const nucleus_model *m) {
  return m->name;
}
const nc_arch *nc_model_arch(const nucleus_model *m) {
  return m->arch;
}
