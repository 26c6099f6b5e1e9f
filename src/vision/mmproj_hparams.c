/* mmproj_hparams: a projector file's hyperparameters (llama.cpp's clip.cpp
 * keys), checked against each other and the language model beside it. */
#include <string.h>

#include "mmproj_load_internal.h"

nc_code nc_mmproj_load_hparams(nucleus_mmproj *mm, nc_error *err) {
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
    rc = nc_mmproj_get_u32(f, "clip.vision.embedding_length", true, 1,
                           MAX_VIT_EMBD, &mm->n_embd, err);
  if (rc == NC_OK)
    rc = nc_mmproj_get_u32(f, "clip.vision.attention.head_count", true, 1,
                           MAX_VIT_HEADS, &mm->n_head, err);
  if (rc == NC_OK)
    rc = nc_mmproj_get_u32(f, "clip.vision.feed_forward_length", true, 1,
                           MAX_VIT_FF, &mm->n_ff, err);
  if (rc == NC_OK)
    rc = nc_mmproj_get_u32(f, "clip.vision.block_count", true, 1,
                           MAX_VIT_LAYERS, &mm->n_layer, err);
  if (rc == NC_OK)
    rc = nc_mmproj_get_u32(f, "clip.vision.projection_dim", true, 1, INT32_MAX,
                           &proj_dim, err);
  if (rc == NC_OK)
    rc = nc_mmproj_get_u32(f, "clip.vision.image_size", true, 1, MAX_IMAGE_SIZE,
                           &mm->image_size, err);
  if (rc == NC_OK)
    rc = nc_mmproj_get_u32(f, "clip.vision.patch_size", true, 1, mm->image_size,
                           &mm->patch_size, err);
  /* llama.cpp's defaults: gemma3 4 (projector.scale_factor), gemma4v 3
   * (the same key: the pooling kernel), qwen 2 (spatial_merge_size; its
   * graph merges 2 x 2 whatever the key says) */
  mm->n_merge = qwen ? 2 : g4 ? 3 : 4;
  if (rc == NC_OK)
    rc = nc_mmproj_get_u32(f,
                           qwen ? "clip.vision.spatial_merge_size"
                                : "clip.vision.projector.scale_factor",
                           false, qwen ? 2 : 1, qwen ? 2 : MAX_MERGE,
                           &mm->n_merge, err);
  if (rc != NC_OK) return rc;
  double eps;
  if (!gguf_get_f64(f, "clip.vision.attention.layer_norm_epsilon", &eps) ||
      !(eps > 0) || !(eps < 1))
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: key 'clip.vision.attention.layer_norm_epsilon' "
                   "must be a number in (0, 1)");
  mm->eps = (float)eps;
  rc = nc_mmproj_get_floats3(f, "clip.vision.image_mean", mm->mean, false, err);
  if (rc == NC_OK)
    rc = nc_mmproj_get_floats3(f, "clip.vision.image_std", mm->std, true, err);
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
    rc = nc_mmproj_load_windows(mm, err);
    if (rc != NC_OK) return rc;
  }
  if (qwen) {
    rc = nc_mmproj_load_deepstack_flags(mm, err);
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
