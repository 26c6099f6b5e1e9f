/* mmproj_load: reads and checks a projector file (llama.cpp's clip.cpp
 * loader's keys and tensor names), for the language model beside it. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/quant.h"
#include "image.h"
#include "mmproj_internal.h"

enum {
  MAX_VIT_EMBD = 16384,
  MAX_VIT_FF = 65536,
  MAX_VIT_LAYERS = 256,
  MAX_VIT_HEADS = 256,
  MAX_IMAGE_SIZE = 4096,
  MAX_MERGE = 64,
  MAX_POS_TABLE = 65536, /* gemma4v's position tables */
};

static void *keep(nucleus_mmproj *mm, void *p) {
  if (!p) return NULL;
  if (mm->n_owned == mm->cap_owned) {
    int32_t cap = mm->cap_owned ? 2 * mm->cap_owned : 64;
    void **grown = realloc(mm->owned, (size_t)cap * sizeof *grown);
    if (!grown) {
      free(p);
      return NULL;
    }
    mm->owned = grown;
    mm->cap_owned = cap;
  }
  mm->owned[mm->n_owned++] = p;
  return p;
}

void nc_mmproj_free(nucleus_mmproj *mm) {
  if (!mm) return;
  for (int32_t i = 0; i < mm->n_owned; i++)
    free(mm->owned[i]);
  free(mm->owned);
  free(mm->layers);
  gguf_close(mm->file);
  free(mm);
}

/* ---- keys */

static nc_code get_u32(const gguf_file *f, const char *key, bool required,
                       int64_t lo, int64_t hi, int32_t *out, nc_error *err) {
  int64_t v;
  if (!gguf_get_i64(f, key, &v)) {
    if (gguf_find_key(f, key) >= 0)
      return nc_fail(err, NC_ERR_FORMAT,
                     "mmproj: key '%s' is not an integer (one in [%lld, "
                     "%lld])",
                     key, (long long)lo, (long long)hi);
    if (!required) return NC_OK;
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: key '%s' is missing (an integer in [%lld, %lld])",
                   key, (long long)lo, (long long)hi);
  }
  if (v < lo || v > hi)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: key '%s' is %lld, must be in [%lld, %lld]", key,
                   (long long)v, (long long)lo, (long long)hi);
  *out = (int32_t)v;
  return NC_OK;
}

static nc_code get_floats3(const gguf_file *f, const char *key, float *out,
                           bool nonzero, nc_error *err) {
  gguf_value_type t;
  uint64_t n;
  if (!gguf_get_arr(f, key, &t, &n) || n < 3)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: key '%s' must be an array of at least 3 numbers",
                   key);
  for (uint64_t i = 0; i < 3; i++) {
    double v;
    if (!gguf_get_arr_f64(f, key, i, &v) || !isfinite(v) || (nonzero && v == 0))
      return nc_fail(err, NC_ERR_FORMAT,
                     "mmproj: key '%s' element %llu must be a finite%s "
                     "number",
                     key, (unsigned long long)i, nonzero ? ", non-zero" : "");
    out[i] = (float)v;
  }
  return NC_OK;
}

/* ---- tensors */

static void shape_text(const gguf_tensor_info *t, char *buf, size_t cap) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (uint32_t d = 0; d < t->n_dims && k < cap; d++)
    k += (size_t)snprintf(buf + k, cap - k, d ? ", %lld" : "%lld",
                          (long long)t->ne[d]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* The tensor called name with ne = {n0, n1, n2, n3} (1 for unused
 * dimensions); NULL in *out when absent and not required. */
static nc_code find(const nucleus_mmproj *mm, const char *name, bool required,
                    int64_t n0, int64_t n1, int64_t n2, int64_t n3,
                    const gguf_tensor_info **out, nc_error *err) {
  *out = NULL;
  const gguf_tensor_info *t = gguf_find_tensor(mm->file, name);
  if (!t) {
    if (!required) return NC_OK;
    return nc_fail(err, NC_ERR_FORMAT, "mmproj: tensor '%s' is missing", name);
  }
  const int64_t want[4] = {n0, n1, n2, n3};
  for (int d = 0; d < 4; d++) {
    const int64_t have = d < (int)t->n_dims ? t->ne[d] : 1;
    if (have != want[d]) {
      char s[96];
      shape_text(t, s, sizeof s);
      return nc_fail(err, NC_ERR_FORMAT,
                     "mmproj: tensor '%s' has shape %s, expected [%lld, %lld, "
                     "%lld, %lld] (ggml order)",
                     name, s, (long long)n0, (long long)n1, (long long)n2,
                     (long long)n3);
    }
  }
  *out = t;
  return NC_OK;
}

/* A vector (norm, bias, positions) of n0 x n1 elements as F32: the file's
 * data when F32, else a dequantized copy (any type the file reader takes:
 * Q8_0 files quantize the positions too). */
static nc_code vector(nucleus_mmproj *mm, const char *name, bool required,
                      int64_t n0, int64_t n1, const float **out,
                      nc_error *err) {
  *out = NULL;
  const gguf_tensor_info *t;
  nc_code rc = find(mm, name, required, n0, n1, 1, 1, &t, err);
  if (rc != NC_OK || !t) return rc;
  if (t->type == NC_TYPE_F32) {
    *out = t->data;
    return NC_OK;
  }
  float *v = keep(mm, malloc((size_t)(n0 * n1) * sizeof *v));
  if (!v) return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  nc_dequantize_row((nc_type)t->type, t->data, v, n0 * n1);
  *out = v;
  return NC_OK;
}

static nc_code check_matmul_type(const nucleus_mmproj *mm, const char *name,
                                 nc_type type, int64_t ne0, nc_error *err) {
  const nc_type_traits *tr = nc_type_traits_of(type);
  if (!tr || !mm->kern->vec_dot[type] ||
      !mm->kern->quantize_act[tr->vec_dot_type])
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: tensor '%s' has type %s, which the %s kernels "
                   "cannot multiply",
                   name, nc_type_name(type), mm->kern->name);
  if (ne0 % tr->block_size != 0 ||
      ne0 % nc_type_traits_of(tr->vec_dot_type)->block_size != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor '%s' of type %s has rows of %lld "
                   "elements, not a multiple of its block size %lld",
                   name, nc_type_name(type), (long long)ne0,
                   (long long)tr->block_size);
  return NC_OK;
}

static nc_weight weight_of(const gguf_tensor_info *t, int64_t ne0,
                           int64_t ne1) {
  nc_weight w = {.data = t->data,
                 .type = (nc_type)t->type,
                 .ne0 = ne0,
                 .ne1 = ne1,
                 .ne2 = 1,
                 .row_bytes = nc_row_size((nc_type)t->type, ne0),
                 .name = t->name};
  return w;
}

/* A matrix [n_in -> n_out] (ggml ne {n_in, n_out}). */
static nc_code matrix(nucleus_mmproj *mm, const char *name, int64_t n_in,
                      int64_t n_out, nc_weight *out, nc_error *err) {
  const gguf_tensor_info *t;
  nc_code rc = find(mm, name, true, n_in, n_out, 1, 1, &t, err);
  if (rc == NC_OK)
    rc = check_matmul_type(mm, name, (nc_type)t->type, n_in, err);
  if (rc != NC_OK) return rc;
  *out = weight_of(t, n_in, n_out);
  return NC_OK;
}

/* ---- the hyperparameters */

/* Qwen3-VL's clip.vision.is_deepstack_layers (a bool per layer; absent:
 * none): their count must be the language model's n_deepstack_layers (its
 * input rows are n_embd x (1 + that) wide, llama.cpp's n_embd_inp). */
static nc_code load_deepstack_flags(nucleus_mmproj *mm, nc_error *err) {
  const char *key = "clip.vision.is_deepstack_layers";
  gguf_value_type t;
  uint64_t n = 0;
  mm->n_deepstack = 0;
  if (gguf_get_arr(mm->file, key, &t, &n)) {
    if (n != (uint64_t)mm->n_layer)
      return nc_fail(err, NC_ERR_FORMAT,
                     "mmproj: key '%s' has %llu entries, one per layer (%d)",
                     key, (unsigned long long)n, (int)mm->n_layer);
    for (uint64_t i = 0; i < n; i++) {
      int64_t v;
      if (!gguf_get_arr_i64(mm->file, key, i, &v) || v < 0 || v > 1)
        return nc_fail(err, NC_ERR_FORMAT,
                       "mmproj: key '%s' element %llu must be a bool", key,
                       (unsigned long long)i);
      mm->n_deepstack += (int32_t)v;
    }
  }
  const int32_t lm = mm->lm.n_deepstack;
  if (mm->n_deepstack != lm)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "mmproj: %d DeepStack layers (%s), but the language model "
                   "takes %d (n_deepstack_layers): a projector for another "
                   "model?",
                   (int)mm->n_deepstack, key, (int)lm);
  return NC_OK;
}

/* Qwen2.5-VL's window attention (clip.vision.n_wa_pattern, required as
 * llama.cpp requires it; 0: none) over windows of 112 pixels a side
 * (llama.cpp's default attn_window_size, the key not read for this
 * projector). Qwen2-VL has none: llama.cpp reads the key for it but
 * never fills the window inputs, so a nonzero one is refused here. */
static nc_code load_windows(nucleus_mmproj *mm, nc_error *err) {
  const char *key = "clip.vision.n_wa_pattern";
  const bool v25 = mm->projector == NC_PROJECTOR_QWEN25VL;
  mm->n_wa_pattern = 0;
  nc_code rc =
      get_u32(mm->file, key, v25, 0, MAX_VIT_LAYERS, &mm->n_wa_pattern, err);
  if (rc != NC_OK) return rc;
  if (!v25 && mm->n_wa_pattern != 0)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: key '%s' is %d: projector qwen2vl_merger has no "
                   "window attention (0 or absent)",
                   key, (int)mm->n_wa_pattern);
  mm->attn_window = 112 / mm->patch_size / 2;
  if (mm->n_wa_pattern > 0 && mm->attn_window < 1)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: clip.vision.patch_size %d is over 56: a window "
                   "of 112 pixels holds no 2 x 2 block of patches",
                   (int)mm->patch_size);
  return NC_OK;
}

static nc_code load_hparams(nucleus_mmproj *mm, nc_error *err) {
  const gguf_file *f = mm->file;
  gguf_str s;
  if (!gguf_get_str(f, "general.architecture", &s) || s.len != 4 ||
      memcmp(s.ptr, "clip", 4) != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: general.architecture is '%.*s', expected 'clip' "
                   "(a projector file, llama.cpp's mmproj)",
                   s.ptr ? (int)(s.len > 64 ? 64 : s.len) : 0,
                   s.ptr ? s.ptr : "");
  bool has_vision = false;
  if (!gguf_get_bool(f, "clip.has_vision_encoder", &has_vision) || !has_vision)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: clip.has_vision_encoder is not true: the file has "
                   "no vision encoder (audio projectors are not supported)");
  if (!gguf_get_str(f, "clip.projector_type", &s) &&
      !gguf_get_str(f, "clip.vision.projector_type", &s))
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: clip.projector_type is missing");
  if (s.len == 6 && memcmp(s.ptr, "gemma3", 6) == 0) {
    mm->projector = NC_PROJECTOR_GEMMA3;
    mm->projector_name = "gemma3";
  } else if (s.len == 14 && memcmp(s.ptr, "qwen3vl_merger", 14) == 0) {
    mm->projector = NC_PROJECTOR_QWEN3VL;
    mm->projector_name = "qwen3vl_merger";
  } else if (s.len == 14 && memcmp(s.ptr, "qwen2vl_merger", 14) == 0) {
    mm->projector = NC_PROJECTOR_QWEN2VL;
    mm->projector_name = "qwen2vl_merger";
  } else if (s.len == 16 && memcmp(s.ptr, "qwen2.5vl_merger", 16) == 0) {
    mm->projector = NC_PROJECTOR_QWEN25VL;
    mm->projector_name = "qwen2.5vl_merger";
  } else if (s.len == 7 && memcmp(s.ptr, "gemma4v", 7) == 0) {
    mm->projector = NC_PROJECTOR_GEMMA4V;
    mm->projector_name = "gemma4v";
  } else {
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: clip.projector_type '%.*s' is not supported "
                   "(supported: gemma3, gemma4v, qwen2vl_merger, "
                   "qwen2.5vl_merger, qwen3vl_merger)",
                   (int)(s.len > 64 ? 64 : s.len), s.ptr);
  }
  const bool qwen = nc_mmproj_is_qwen(mm);
  const bool qwen2 = mm->projector == NC_PROJECTOR_QWEN2VL ||
                     mm->projector == NC_PROJECTOR_QWEN25VL;
  const bool g4 = mm->projector == NC_PROJECTOR_GEMMA4V;
  nc_code rc = NC_OK;
  int32_t proj_dim = 0;
  if (rc == NC_OK)
    rc = get_u32(f, "clip.vision.embedding_length", true, 1, MAX_VIT_EMBD,
                 &mm->n_embd, err);
  if (rc == NC_OK)
    rc = get_u32(f, "clip.vision.attention.head_count", true, 1, MAX_VIT_HEADS,
                 &mm->n_head, err);
  if (rc == NC_OK)
    rc = get_u32(f, "clip.vision.feed_forward_length", true, 1, MAX_VIT_FF,
                 &mm->n_ff, err);
  if (rc == NC_OK)
    rc = get_u32(f, "clip.vision.block_count", true, 1, MAX_VIT_LAYERS,
                 &mm->n_layer, err);
  if (rc == NC_OK)
    rc = get_u32(f, "clip.vision.projection_dim", true, 1, INT32_MAX, &proj_dim,
                 err);
  if (rc == NC_OK)
    rc = get_u32(f, "clip.vision.image_size", true, 1, MAX_IMAGE_SIZE,
                 &mm->image_size, err);
  if (rc == NC_OK)
    rc = get_u32(f, "clip.vision.patch_size", true, 1, mm->image_size,
                 &mm->patch_size, err);
  /* llama.cpp's defaults: gemma3 4 (projector.scale_factor), gemma4v 3
   * (the same key: the pooling kernel), qwen 2 (spatial_merge_size; its
   * graph merges 2 x 2 whatever the key says) */
  mm->n_merge = qwen ? 2 : g4 ? 3 : 4;
  if (rc == NC_OK)
    rc = get_u32(f,
                 qwen ? "clip.vision.spatial_merge_size"
                      : "clip.vision.projector.scale_factor",
                 false, qwen ? 2 : 1, qwen ? 2 : MAX_MERGE, &mm->n_merge, err);
  if (rc != NC_OK) return rc;
  double eps;
  if (!gguf_get_f64(f, "clip.vision.attention.layer_norm_epsilon", &eps) ||
      !(eps > 0) || !(eps < 1))
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: key 'clip.vision.attention.layer_norm_epsilon' "
                   "must be a number in (0, 1)");
  mm->eps = (float)eps;
  rc = get_floats3(f, "clip.vision.image_mean", mm->mean, false, err);
  if (rc == NC_OK)
    rc = get_floats3(f, "clip.vision.image_std", mm->std, true, err);
  if (rc != NC_OK) return rc;
  bool gelu = false, silu = false;
  gguf_get_bool(f, "clip.use_gelu", &gelu);
  gguf_get_bool(f, "clip.use_silu", &silu);
  if (gelu && silu)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: clip.use_gelu and clip.use_silu are both set");
  if (qwen2 || g4) {
    /* llama.cpp's ffn_op: GELU, SiLU (gated in Qwen2.5-VL), else the quick
     * GELU (Qwen2-VL; Gemma 4, whose converter writes neither key: gated) */
    mm->act = gelu ? NC_VIT_GELU : silu ? NC_VIT_SILU : NC_VIT_GELU_QUICK;
  } else if (silu)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: clip.use_silu is set: a SiLU vision MLP is not "
                   "supported for projector %s",
                   mm->projector_name);
  if (!qwen2 && !g4) mm->act = gelu ? NC_VIT_GELU : NC_VIT_GELU_QUICK;
  if (!qwen2 && !g4 && mm->act != NC_VIT_GELU)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: clip.use_gelu is not set: projector %s runs a "
                   "GELU MLP (the quick GELU is not supported)",
                   mm->projector_name);

  if (mm->n_embd % mm->n_head != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: clip.vision.embedding_length %d is not a multiple "
                   "of clip.vision.attention.head_count %d",
                   (int)mm->n_embd, (int)mm->n_head);
  if (mm->image_size % mm->patch_size != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: clip.vision.image_size %d is not a multiple of "
                   "clip.vision.patch_size %d",
                   (int)mm->image_size, (int)mm->patch_size);
  const int32_t side = mm->image_size / mm->patch_size;
  if (mm->projector == NC_PROJECTOR_GEMMA3 && side % mm->n_merge != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: %d patches a side (image_size %d / patch_size %d) "
                   "is not a multiple of clip.vision.projector.scale_factor "
                   "%d",
                   (int)side, (int)mm->image_size, (int)mm->patch_size,
                   (int)mm->n_merge);
  /* the language models whose forward takes this projector's rows */
  const char *lm_arch = mm->lm.arch;
  if (mm->projector == NC_PROJECTOR_GEMMA3 && strcmp(lm_arch, "gemma3") != 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "mmproj: projector gemma3 pairs with a gemma3 language "
                   "model, not %s",
                   lm_arch);
  if (g4 && strcmp(lm_arch, "gemma4") != 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "mmproj: projector gemma4v pairs with a gemma4 language "
                   "model, not %s",
                   lm_arch);
  if (qwen2 && strcmp(lm_arch, "qwen2vl") != 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "mmproj: projector %s pairs with a qwen2vl language model, "
                   "not %s",
                   mm->projector_name, lm_arch);
  if (mm->projector == NC_PROJECTOR_QWEN3VL &&
      strcmp(lm_arch, "qwen3vl") != 0 && strcmp(lm_arch, "qwen3vlmoe") != 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "mmproj: projector qwen3vl_merger pairs with a qwen3vl or "
                   "qwen3vlmoe language model, not %s",
                   lm_arch);
  if (qwen && (mm->n_embd / mm->n_head) % 4 != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: head size %d (clip.vision.embedding_length / "
                   "attention.head_count) is not a multiple of 4: Qwen's 2-D "
                   "RoPE turns a quarter of each head by the row, a quarter "
                   "by the column",
                   (int)(mm->n_embd / mm->n_head));
  if (g4 && (mm->n_embd / mm->n_head) % 4 != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: head size %d (clip.vision.embedding_length / "
                   "attention.head_count) is not a multiple of 4: Gemma 4's "
                   "2-D RoPE turns each half of a head in NEOX pairs",
                   (int)(mm->n_embd / mm->n_head));
  if (g4) {
    /* llama.cpp's set_limit_image_tokens(70, 1120) */
    const int64_t area =
        (int64_t)mm->patch_size * mm->patch_size * mm->n_merge * mm->n_merge;
    mm->min_pixels = 70 * area;
    mm->max_pixels = 1120 * area;
  }
  if (qwen2) {
    rc = load_windows(mm, err);
    if (rc != NC_OK) return rc;
  }
  if (qwen) {
    rc = load_deepstack_flags(mm, err);
    if (rc != NC_OK) return rc;
    /* llama.cpp's set_limit_image_tokens(8, 4096): the smart resize's
     * pixel budget in merged rows */
    const int64_t area =
        (int64_t)mm->patch_size * mm->patch_size * mm->n_merge * mm->n_merge;
    mm->min_pixels = 8 * area;
    mm->max_pixels = 4096 * area;
  }
  const int32_t lm_embd = mm->lm.n_embd;
  if (proj_dim != lm_embd)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "mmproj: clip.vision.projection_dim %d is not the language "
                   "model's embedding width %d (a projector for another "
                   "model?)",
                   (int)proj_dim, (int)lm_embd);
  mm->n_embd_text = lm_embd;
  return NC_OK;
}

/* ---- the tensors */

static nc_code load_layer(nucleus_mmproj *mm, int32_t il, nc_error *err) {
  const int64_t E = mm->n_embd, F = mm->n_ff;
  nc_vit_layer *L = &mm->layers[il];
  char name[GGUF_MAX_NAME];
  nc_code rc = NC_OK;
#define NAME(part)                                                             \
  (snprintf(name, sizeof name, "v.blk.%d.%s", (int)il, part), name)
  if (rc == NC_OK)
    rc = vector(mm, NAME("ln1.weight"), true, E, 1, &L->ln1_w, err);
  if (rc == NC_OK)
    rc = vector(mm, NAME("ln1.bias"), false, E, 1, &L->ln1_b, err);
  if (rc == NC_OK)
    rc = vector(mm, NAME("ln2.weight"), true, E, 1, &L->ln2_w, err);
  if (rc == NC_OK)
    rc = vector(mm, NAME("ln2.bias"), false, E, 1, &L->ln2_b, err);
  if (mm->projector == NC_PROJECTOR_QWEN3VL) { /* fused, biased */
    if (rc == NC_OK)
      rc = matrix(mm, NAME("attn_qkv.weight"), E, 3 * E, &L->wqkv, err);
    if (rc == NC_OK)
      rc = vector(mm, NAME("attn_qkv.bias"), true, 3 * E, 1, &L->bqkv, err);
  } else {
    if (rc == NC_OK) rc = matrix(mm, NAME("attn_q.weight"), E, E, &L->wq, err);
    if (rc == NC_OK) rc = matrix(mm, NAME("attn_k.weight"), E, E, &L->wk, err);
    if (rc == NC_OK) rc = matrix(mm, NAME("attn_v.weight"), E, E, &L->wv, err);
    if (rc == NC_OK)
      rc = vector(mm, NAME("attn_q.bias"), false, E, 1, &L->bq, err);
    if (rc == NC_OK)
      rc = vector(mm, NAME("attn_k.bias"), false, E, 1, &L->bk, err);
    if (rc == NC_OK)
      rc = vector(mm, NAME("attn_v.bias"), false, E, 1, &L->bv, err);
  }
  if (rc == NC_OK) rc = matrix(mm, NAME("attn_out.weight"), E, E, &L->wo, err);
  if (rc == NC_OK)
    rc = vector(mm, NAME("attn_out.bias"), false, E, 1, &L->bo, err);
  if (rc != NC_OK) return rc;
  /* llama.cpp swaps up and down of files that named them the other way
   * round (ffn_down reading n_embd); so do we */
  const gguf_tensor_info *down =
      gguf_find_tensor(mm->file, NAME("ffn_down.weight"));
  const bool swapped = mm->projector != NC_PROJECTOR_GEMMA4V && down &&
                       down->n_dims >= 1 && down->ne[0] == E && E != F;
  const char *up_name = swapped ? "ffn_down" : "ffn_up";
  const char *down_name = swapped ? "ffn_up" : "ffn_down";
  char part[32];
  snprintf(part, sizeof part, "%s.weight", up_name);
  rc = matrix(mm, NAME(part), E, F, &L->ffn_up, err);
  snprintf(part, sizeof part, "%s.bias", up_name);
  if (rc == NC_OK) rc = vector(mm, NAME(part), false, F, 1, &L->ffn_up_b, err);
  snprintf(part, sizeof part, "%s.weight", down_name);
  if (rc == NC_OK) rc = matrix(mm, NAME(part), F, E, &L->ffn_down, err);
  snprintf(part, sizeof part, "%s.bias", down_name);
  if (rc == NC_OK)
    rc = vector(mm, NAME(part), false, E, 1, &L->ffn_down_b, err);
  /* the gate: Qwen2.5-VL's SiLU MLP, and only there; Gemma 4's (GeGLU
   * with the file's activation) when the file has one */
  const bool gated =
      mm->projector == NC_PROJECTOR_GEMMA4V
          ? gguf_find_tensor(mm->file, NAME("ffn_gate.weight")) != NULL
          : mm->act == NC_VIT_SILU;
  if (rc == NC_OK && gated)
    rc = matrix(mm, NAME("ffn_gate.weight"), E, F, &L->ffn_gate, err);
  if (rc == NC_OK && gated)
    rc = vector(mm, NAME("ffn_gate.bias"), false, F, 1, &L->ffn_gate_b, err);
  if (rc == NC_OK && !gated &&
      gguf_find_tensor(mm->file, NAME("ffn_gate.weight")))
    rc = nc_fail(err, NC_ERR_UNSUPPORTED,
                 "mmproj: tensor '%s': a gated MLP is supported with "
                 "clip.use_silu (or projector gemma4v) only",
                 name);
#undef NAME
  return rc;
}

/* Qwen3-VL's DeepStack tap after layer il (v.deepstack.IL.*), when the
 * layer is one (is_deepstack_layers; the tensors then required). */
static nc_code load_deepstack(nucleus_mmproj *mm, int32_t il, bool tap,
                              nc_error *err) {
  const int64_t M = (int64_t)mm->n_embd * mm->n_merge * mm->n_merge;
  const int64_t T = mm->n_embd_text;
  nc_vit_layer *L = &mm->layers[il];
  char name[GGUF_MAX_NAME];
#define NAME(part)                                                             \
  (snprintf(name, sizeof name, "v.deepstack.%d.%s", (int)il, part), name)
  if (!tap) {
    if (gguf_find_tensor(mm->file, NAME("fc1.weight")))
      return nc_fail(err, NC_ERR_FORMAT,
                     "mmproj: tensor '%s' for a layer that "
                     "clip.vision.is_deepstack_layers does not mark",
                     name);
    return NC_OK;
  }
  nc_code rc = vector(mm, NAME("norm.weight"), true, M, 1, &L->ds_norm_w, err);
  if (rc == NC_OK)
    rc = vector(mm, NAME("norm.bias"), true, M, 1, &L->ds_norm_b, err);
  if (rc == NC_OK) rc = matrix(mm, NAME("fc1.weight"), M, M, &L->ds_fc1, err);
  if (rc == NC_OK)
    rc = vector(mm, NAME("fc1.bias"), true, M, 1, &L->ds_fc1_b, err);
  if (rc == NC_OK) rc = matrix(mm, NAME("fc2.weight"), M, T, &L->ds_fc2, err);
  if (rc == NC_OK)
    rc = vector(mm, NAME("fc2.bias"), true, T, 1, &L->ds_fc2_b, err);
#undef NAME
  return rc;
}

/* Qwen3-VL's tensors past the layers: the second temporal kernel, the
 * DeepStack taps, the merger (post_ln, mm.0, mm.2). */
static nc_code load_qwen3vl(nucleus_mmproj *mm, nc_error *err) {
  const int64_t M = (int64_t)mm->n_embd * mm->n_merge * mm->n_merge;
  const int64_t T = mm->n_embd_text;
  nc_code rc = NC_OK;
  for (int32_t il = 0; il < mm->n_layer && rc == NC_OK; il++) {
    int64_t tap = 0;
    gguf_get_arr_i64(mm->file, "clip.vision.is_deepstack_layers", (uint64_t)il,
                     &tap);
    rc = load_deepstack(mm, il, tap != 0, err);
  }
  if (rc == NC_OK && (!mm->patch_bias || !mm->post_ln_w))
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor '%s' is missing (projector qwen3vl_merger)",
                   mm->patch_bias ? "v.post_ln.weight" : "v.patch_embd.bias");
  if (rc == NC_OK) rc = matrix(mm, "mm.0.weight", M, M, &mm->mm0, err);
  if (rc == NC_OK) rc = vector(mm, "mm.0.bias", true, M, 1, &mm->mm0_b, err);
  if (rc == NC_OK) rc = matrix(mm, "mm.2.weight", M, T, &mm->mm2, err);
  if (rc == NC_OK) rc = vector(mm, "mm.2.bias", true, T, 1, &mm->mm2_b, err);
  return rc;
}

/* Qwen2-VL / Qwen2.5-VL's tensors past the layers: the merger (mm.0,
 * mm.2). llama.cpp's graph has no patch bias (it asserts none). */
static nc_code load_qwen2vl(nucleus_mmproj *mm, nc_error *err) {
  const int64_t M = (int64_t)mm->n_embd * mm->n_merge * mm->n_merge;
  const int64_t T = mm->n_embd_text;
  if (mm->patch_bias)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor 'v.patch_embd.bias' in a %s projector "
                   "(its patch embedding has no bias)",
                   mm->projector_name);
  nc_code rc = matrix(mm, "mm.0.weight", M, M, &mm->mm0, err);
  if (rc == NC_OK) rc = vector(mm, "mm.0.bias", true, M, 1, &mm->mm0_b, err);
  if (rc == NC_OK) rc = matrix(mm, "mm.2.weight", M, T, &mm->mm2, err);
  if (rc == NC_OK) rc = vector(mm, "mm.2.bias", true, T, 1, &mm->mm2_b, err);
  return rc;
}

/* Gemma 3's mm.input_projection.weight is [n_embd_text, n_embd] in ggml
 * order (llama.cpp multiplies its transpose): kept here transposed, as
 * n_embd_text rows of n_embd, in its own type (F32, F16 or BF16). */
static nc_code load_input_proj(nucleus_mmproj *mm, nc_error *err) {
  const char *name = "mm.input_projection.weight";
  const int64_t E = mm->n_embd, T = mm->n_embd_text;
  const gguf_tensor_info *t;
  nc_code rc = find(mm, name, true, T, E, 1, 1, &t, err);
  if (rc != NC_OK) return rc;
  if (t->type != NC_TYPE_F32 && t->type != NC_TYPE_F16 &&
      t->type != NC_TYPE_BF16)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: tensor '%s' has type %s, expected F32, F16 or "
                   "BF16",
                   name, nc_type_name(t->type));
  rc = check_matmul_type(mm, name, (nc_type)t->type, E, err);
  if (rc != NC_OK) return rc;
  const size_t es = t->type == NC_TYPE_F32 ? 4 : 2;
  uint8_t *tr = keep(mm, malloc((size_t)(T * E) * es));
  if (!tr) return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  const uint8_t *src = t->data;
  for (int64_t e = 0; e < E; e++)
    for (int64_t o = 0; o < T; o++)
      memcpy(tr + ((size_t)o * E + e) * es, src + ((size_t)e * T + o) * es, es);
  mm->input_proj = weight_of(t, E, T);
  mm->input_proj.data = tr;
  return NC_OK;
}

/* ---- Gemma 4 (gemma4v) */

/* Gemma4ClippableLinear's bounds of the matrix w (named X.weight): the
 * scalars X.input_min, .input_max, .output_min, .output_max, each an F32
 * tensor of one element when present (llama.cpp's get_scalar), -FLT_MAX /
 * FLT_MAX when absent. */
static nc_code clamp_of(nucleus_mmproj *mm, const nc_weight *w, nc_vit_clamp *c,
                        nc_error *err) {
  static const char *const part[4] = {"input_min", "input_max", "output_min",
                                      "output_max"};
  float *dst[4] = {&c->in_min, &c->in_max, &c->out_min, &c->out_max};
  c->in_min = c->out_min = -FLT_MAX;
  c->in_max = c->out_max = FLT_MAX;
  const size_t len = strlen(w->name);
  if (len < 7 || strcmp(w->name + len - 7, ".weight") != 0) return NC_OK;
  for (int i = 0; i < 4; i++) {
    char name[GGUF_MAX_NAME + 16];
    snprintf(name, sizeof name, "%.*s.%s", (int)(len - 7), w->name, part[i]);
    const gguf_tensor_info *t;
    nc_code rc = find(mm, name, false, 1, 1, 1, 1, &t, err);
    if (rc != NC_OK) return rc;
    if (!t) continue;
    float v;
    if (t->type != NC_TYPE_F32 || (memcpy(&v, t->data, sizeof v), isnan(v)))
      return nc_fail(err, NC_ERR_FORMAT,
                     "mmproj: tensor '%s' must be one F32 number (a clamp "
                     "bound), is %s%s",
                     name, nc_type_name((nc_type)t->type),
                     t->type == NC_TYPE_F32 ? " NaN" : "");
    *dst[i] = v;
  }
  return NC_OK;
}

/* A norm or scale vector of n0 elements where n0 is one of a or b (the
 * tensor's own length decides), NULL when absent. */
static nc_code vector_either(nucleus_mmproj *mm, const char *name, int64_t a,
                             int64_t b, const float **out, int32_t *n,
                             nc_error *err) {
  const gguf_tensor_info *t = gguf_find_tensor(mm->file, name);
  const int64_t want = t && t->n_dims >= 1 && t->ne[0] == b ? b : a;
  *n = (int32_t)want;
  return vector(mm, name, false, want, 1, out, err);
}

/* Gemma 4's parts of layer il beyond load_layer's: the Q/K norms (per
 * head or per row), the post-attention and post-MLP norms, the output
 * scale, every matrix's clamp. */
static nc_code load_gemma4v_layer(nucleus_mmproj *mm, int32_t il,
                                  nc_error *err) {
  const int64_t E = mm->n_embd, dh = mm->n_embd / mm->n_head;
  nc_vit_layer *L = &mm->layers[il];
  char name[GGUF_MAX_NAME];
#define NAME(part)                                                             \
  (snprintf(name, sizeof name, "v.blk.%d.%s", (int)il, part), name)
  nc_code rc = vector_either(mm, NAME("attn_q_norm.weight"), dh, E, &L->q_norm,
                             &L->q_norm_n, err);
  if (rc == NC_OK)
    rc = vector_either(mm, NAME("attn_k_norm.weight"), dh, E, &L->k_norm,
                       &L->k_norm_n, err);
  if (rc == NC_OK)
    rc = vector(mm, NAME("attn_post_norm.weight"), false, E, 1,
                &L->attn_post_norm, err);
  if (rc == NC_OK)
    rc = vector(mm, NAME("ffn_post_norm.weight"), false, E, 1,
                &L->ffn_post_norm, err);
  if (rc == NC_OK)
    rc = vector_either(mm, NAME("out_scale.weight"), 1, E, &L->out_scale,
                       &L->out_scale_n, err);
#undef NAME
  const nc_weight *w[7] = {&L->wq,     &L->wk,       &L->wv,      &L->wo,
                           &L->ffn_up, &L->ffn_gate, &L->ffn_down};
  nc_vit_clamp *c[7] = {&L->cl_q,  &L->cl_k,    &L->cl_v,   &L->cl_o,
                        &L->cl_up, &L->cl_gate, &L->cl_down};
  for (int i = 0; i < 7 && rc == NC_OK; i++)
    if (w[i]->data) rc = clamp_of(mm, w[i], c[i], err);
  return rc;
}

/* Gemma 4's positions: v.position_embd.weight [n_embd, pos_size, 2] (the
 * column table, then the row table; pos_size from the tensor). */
static nc_code load_gemma4v_positions(nucleus_mmproj *mm, nc_error *err) {
  const char *name = "v.position_embd.weight";
  const gguf_tensor_info *t = gguf_find_tensor(mm->file, name);
  const int64_t n = t && t->n_dims >= 2 ? t->ne[1] : 1;
  if (t && (n < 1 || n > MAX_POS_TABLE))
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor '%s' holds %lld positions, must be in "
                   "[1, %d]",
                   name, (long long)n, (int)MAX_POS_TABLE);
  mm->pos_size = (int32_t)n;
  const gguf_tensor_info *ti;
  nc_code rc = find(mm, name, true, mm->n_embd, n, 2, 1, &ti, err);
  if (rc != NC_OK) return rc;
  const int64_t count = 2 * n * mm->n_embd;
  if (ti->type == NC_TYPE_F32) {
    mm->pos_embd = ti->data;
    return NC_OK;
  }
  float *v = keep(mm, malloc((size_t)count * sizeof *v));
  if (!v) return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  nc_dequantize_row((nc_type)ti->type, ti->data, v, count);
  mm->pos_embd = v;
  return NC_OK;
}

/* Gemma 4's tensors past the layers: std_bias and std_scale (both or
 * neither), mm.input_projection [n_embd -> n_embd_text] and its clamp.
 * llama.cpp's graph has no patch bias. */
static nc_code load_gemma4v(nucleus_mmproj *mm, nc_error *err) {
  const int64_t E = mm->n_embd;
  if (mm->patch_bias)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor 'v.patch_embd.bias' in a gemma4v projector "
                   "(its patch embedding has no bias)");
  nc_code rc = vector(mm, "v.std_bias", false, E, 1, &mm->std_bias, err);
  if (rc == NC_OK)
    rc = vector(mm, "v.std_scale", false, E, 1, &mm->std_scale, err);
  if (rc == NC_OK && !mm->std_bias != !mm->std_scale)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor '%s' without '%s' (gemma4v standardises "
                   "with both or neither)",
                   mm->std_bias ? "v.std_bias" : "v.std_scale",
                   mm->std_bias ? "v.std_scale" : "v.std_bias");
  if (rc == NC_OK)
    rc = matrix(mm, "mm.input_projection.weight", E, mm->n_embd_text,
                &mm->input_proj, err);
  if (rc == NC_OK) rc = clamp_of(mm, &mm->input_proj, &mm->cl_proj, err);
  return rc;
}

/* ggml_conv_2d's im2col holds the patches in F16 (in F32 for a BF16
 * kernel), and ggml_mul_mat converts the kernel to the patches' type: the
 * convolution multiplies F16 patches by an F16 kernel, or F32 by F32. The
 * kernel is kept here in that type, so the matmul rounds the patches as
 * llama.cpp does. */
static nc_code patch_embd_type(nucleus_mmproj *mm, const gguf_tensor_info *t,
                               nc_weight *pw, nc_error *err) {
  if (t->type == NC_TYPE_F16) return NC_OK;
  if (t->type != NC_TYPE_F32 && t->type != NC_TYPE_BF16)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: tensor '%s' has type %s, expected F32, F16 or "
                   "BF16",
                   t->name, nc_type_name(t->type));
  const nc_type to = t->type == NC_TYPE_F32 ? NC_TYPE_F16 : NC_TYPE_F32;
  const int64_t n = pw->ne0, rows = pw->ne1;
  const size_t rb = nc_row_size(to, n);
  uint8_t *w = keep(mm, malloc(rb * (size_t)rows));
  float *row = malloc((size_t)n * sizeof *row);
  if (!w || !row) {
    free(row);
    return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  }
  for (int64_t r = 0; r < rows; r++) {
    nc_dequantize_row((nc_type)t->type,
                      (const uint8_t *)t->data + (size_t)r * pw->row_bytes, row,
                      n);
    nc_quantize_row(to, row, w + (size_t)r * rb, n);
  }
  free(row);
  pw->data = w;
  pw->type = to;
  pw->row_bytes = rb;
  return check_matmul_type(mm, t->name, to, n, err);
}

/* A patch embedding kernel name [P, P, 3, n_embd] (ggml order) into pw, as
 * a matmul [3 P P -> n_embd] in its convolution's type. */
static nc_code patch_kernel(nucleus_mmproj *mm, const char *name, nc_weight *pw,
                            nc_error *err) {
  const int64_t E = mm->n_embd, P = mm->patch_size;
  const gguf_tensor_info *t;
  nc_code rc = find(mm, name, true, P, P, 3, E, &t, err);
  if (rc == NC_OK)
    rc = check_matmul_type(mm, name, (nc_type)t->type, 3 * P * P, err);
  if (rc != NC_OK) return rc;
  *pw = weight_of(t, 3 * P * P, E);
  return patch_embd_type(mm, t, pw, err);
}

static nc_code load_tensors(nucleus_mmproj *mm, nc_error *err) {
  const int64_t E = mm->n_embd;
  const int64_t side = mm->image_size / mm->patch_size;
  const bool qwen = nc_mmproj_is_qwen(mm);
  const bool positions = mm->projector == NC_PROJECTOR_GEMMA3 ||
                         mm->projector == NC_PROJECTOR_QWEN3VL;
  nc_code rc = patch_kernel(mm, "v.patch_embd.weight", &mm->patch_embd, err);
  if (rc == NC_OK && qwen)
    rc = patch_kernel(mm, "v.patch_embd.weight.1", &mm->patch_embd_1, err);
  if (rc != NC_OK) return rc;
  rc = vector(mm, "v.patch_embd.bias", false, E, 1, &mm->patch_bias, err);
  if (rc == NC_OK && positions)
    rc = vector(mm, "v.position_embd.weight", true, E, side * side,
                &mm->pos_embd, err);
  if (rc == NC_OK && mm->projector == NC_PROJECTOR_GEMMA4V)
    rc = load_gemma4v_positions(mm, err);
  if (rc == NC_OK)
    rc = vector(mm, "v.pre_ln.weight", false, E, 1, &mm->pre_ln_w, err);
  if (rc == NC_OK)
    rc = vector(mm, "v.pre_ln.bias", false, E, 1, &mm->pre_ln_b, err);
  if (rc == NC_OK)
    rc = vector(mm, "v.post_ln.weight", false, E, 1, &mm->post_ln_w, err);
  if (rc == NC_OK)
    rc = vector(mm, "v.post_ln.bias", false, E, 1, &mm->post_ln_b, err);
  if (rc != NC_OK) return rc;
  mm->layers = calloc((size_t)mm->n_layer, sizeof *mm->layers);
  if (!mm->layers) return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  for (int32_t il = 0; il < mm->n_layer && rc == NC_OK; il++) {
    rc = load_layer(mm, il, err);
    if (rc == NC_OK && mm->projector == NC_PROJECTOR_GEMMA4V)
      rc = load_gemma4v_layer(mm, il, err);
  }
  if (rc != NC_OK) return rc;
  if (mm->projector == NC_PROJECTOR_GEMMA4V) return load_gemma4v(mm, err);
  if (mm->projector == NC_PROJECTOR_QWEN3VL) return load_qwen3vl(mm, err);
  if (qwen) return load_qwen2vl(mm, err);
  rc = vector(mm, "mm.soft_emb_norm.weight", true, E, 1, &mm->soft_emb_norm,
              err);
  if (rc == NC_OK) rc = load_input_proj(mm, err);
  return rc;
}

nc_code nc_mmproj_load_gguf(gguf_file *file, const nc_mmproj_lm *lm,
                            nucleus_mmproj **out, nc_error *err) {
  *out = NULL;
  if (!file || !lm || !lm->arch || !lm->kern || lm->n_threads < 1) {
    gguf_close(file);
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "mmproj: no file or no language model given");
  }
  nucleus_mmproj *mm = calloc(1, sizeof *mm);
  if (!mm) {
    gguf_close(file);
    return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  }
  mm->file = file;
  mm->lm = *lm;
  mm->kern = lm->kern;
  mm->n_threads = lm->n_threads;
  mm->flash = lm->flash; /* llama.cpp: mtmd takes the LM's */
  nc_code rc = load_hparams(mm, err);
  if (rc == NC_OK) rc = load_tensors(mm, err);
  mm->lm.arch = NULL;
  if (rc != NC_OK) {
    if (err && strncmp(err->message, "mmproj", 6) != 0)
      nc_error_prefix(err, "mmproj");
    nc_mmproj_free(mm);
    return rc;
  }
  *out = mm;
  return NC_OK;
}

const char *nc_mmproj_projector(const nucleus_mmproj *mm) {
  return mm->projector_name;
}

int32_t nc_mmproj_n_embd(const nucleus_mmproj *mm) {
  return mm->n_embd_text * (1 + mm->n_deepstack);
}

void nc_mmproj_image_grid(const nucleus_mmproj *mm, const nucleus_image *image,
                          int32_t *nx, int32_t *ny) {
  if (nc_mmproj_dyn_size(mm)) {
    int32_t w, h;
    nc_qwen_image_size(mm, image->width, image->height, &w, &h);
    *nx = w / mm->patch_size / mm->n_merge;
    *ny = h / mm->patch_size / mm->n_merge;
    return;
  }
  /* gemma3: every image is resized to image_size */
  *nx = *ny = mm->image_size / mm->patch_size / mm->n_merge;
}

int32_t nc_mmproj_image_tokens(const nucleus_mmproj *mm,
                               const nucleus_image *image) {
  int32_t nx, ny;
  nc_mmproj_image_grid(mm, image, &nx, &ny);
  return nx * ny;
}

const char *nc_mmproj_image_begin(const nucleus_mmproj *mm) {
  return mm->projector == NC_PROJECTOR_GEMMA3    ? "<start_of_image>"
         : mm->projector == NC_PROJECTOR_GEMMA4V ? "<|image>"
         : nc_mmproj_is_qwen(mm)                 ? "<|vision_start|>"
                                                 : "";
}

const char *nc_mmproj_image_end(const nucleus_mmproj *mm) {
  return mm->projector == NC_PROJECTOR_GEMMA3    ? "<end_of_image>"
         : mm->projector == NC_PROJECTOR_GEMMA4V ? "<image|>"
         : nc_mmproj_is_qwen(mm)                 ? "<|vision_end|>"
                                                 : "";
}

bool nc_mmproj_bidirectional(const nucleus_mmproj *mm) {
  /* llama.cpp's mtmd_decode_use_non_causal: Gemma 4's images causal for
   * the E2B and E4B widths (1536, 2560) only */
  if (mm->projector == NC_PROJECTOR_GEMMA4V)
    return mm->n_embd_text != 1536 && mm->n_embd_text != 2560;
  return mm->projector == NC_PROJECTOR_GEMMA3;
}
