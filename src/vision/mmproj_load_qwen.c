/* mmproj_load_qwen: the Qwen projectors' parts of the loader (qwen2vl,
 * qwen2.5vl, qwen3vl): DeepStack flags and taps, window attention, the
 * merger. */
#include <stdio.h>

#include "mmproj_load_internal.h"

/* Qwen3-VL's clip.vision.is_deepstack_layers (a bool per layer; absent:
 * none): their count must be the language model's n_deepstack_layers (its
 * input rows are n_embd x (1 + that) wide, llama.cpp's n_embd_inp). */
nc_code nc_mmproj_load_deepstack_flags(nucleus_mmproj *mm, nc_error *err) {
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
nc_code nc_mmproj_load_windows(nucleus_mmproj *mm, nc_error *err) {
  const char *key = "clip.vision.n_wa_pattern";
  const bool v25 = mm->projector == NC_PROJECTOR_QWEN25VL;
  mm->n_wa_pattern = 0;
  nc_code rc = nc_mmproj_get_u32(mm->file, key, v25, 0, MAX_VIT_LAYERS,
                                 &mm->n_wa_pattern, err);
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
  nc_code rc =
      nc_mmproj_vector(mm, NAME("norm.weight"), true, M, 1, &L->ds_norm_w, err);
  if (rc == NC_OK)
    rc =
        nc_mmproj_vector(mm, NAME("norm.bias"), true, M, 1, &L->ds_norm_b, err);
  if (rc == NC_OK)
    rc = nc_mmproj_matrix(mm, NAME("fc1.weight"), M, M, &L->ds_fc1, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, NAME("fc1.bias"), true, M, 1, &L->ds_fc1_b, err);
  if (rc == NC_OK)
    rc = nc_mmproj_matrix(mm, NAME("fc2.weight"), M, T, &L->ds_fc2, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, NAME("fc2.bias"), true, T, 1, &L->ds_fc2_b, err);
#undef NAME
  return rc;
}

/* The merger: mm.0 [4 n_embd -> 4 n_embd] and mm.2 [4 n_embd -> n_embd_text],
 * both biased (Qwen2-VL's, Qwen2.5-VL's and Qwen3-VL's alike). */
static nc_code load_merger(nucleus_mmproj *mm, nc_error *err) {
  const int64_t M = (int64_t)mm->n_embd * mm->n_merge * mm->n_merge;
  const int64_t T = mm->n_embd_text;
  nc_code rc = nc_mmproj_matrix(mm, "mm.0.weight", M, M, &mm->mm0, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, "mm.0.bias", true, M, 1, &mm->mm0_b, err);
  if (rc == NC_OK)
    rc = nc_mmproj_matrix(mm, "mm.2.weight", M, T, &mm->mm2, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, "mm.2.bias", true, T, 1, &mm->mm2_b, err);
  return rc;
}

/* Qwen3-VL's tensors past the layers: the second temporal kernel, the
 * DeepStack taps, the merger (post_ln, mm.0, mm.2). */
nc_code nc_mmproj_load_qwen3vl(nucleus_mmproj *mm, nc_error *err) {
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
  if (rc == NC_OK) rc = load_merger(mm, err);
  return rc;
}

/* Qwen2-VL / Qwen2.5-VL's tensors past the layers: the merger (mm.0,
 * mm.2). llama.cpp's graph has no patch bias (it asserts none). */
nc_code nc_mmproj_load_qwen2vl(nucleus_mmproj *mm, nc_error *err) {
  if (mm->patch_bias)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor 'v.patch_embd.bias' in a %s projector "
                   "(its patch embedding has no bias)",
                   mm->projector_name);
  return load_merger(mm, err);
}
