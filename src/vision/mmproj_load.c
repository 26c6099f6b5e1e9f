/* mmproj_load: reads and checks a projector file (llama.cpp's clip.cpp
 * loader's keys and tensor names), for the language model beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/quant.h"
#include "image.h"
#include "mmproj_load_internal.h"

void nc_mmproj_free(nucleus_mmproj *mm) {
  if (!mm) return;
  for (int32_t i = 0; i < mm->n_owned; i++)
    free(mm->owned[i]);
  free(mm->owned);
  free(mm->layers);
  gguf_close(mm->file);
  free(mm);
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
    rc = nc_mmproj_vector(mm, NAME("ln1.weight"), true, E, 1, &L->ln1_w, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, NAME("ln1.bias"), false, E, 1, &L->ln1_b, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, NAME("ln2.weight"), true, E, 1, &L->ln2_w, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, NAME("ln2.bias"), false, E, 1, &L->ln2_b, err);
  if (mm->projector == NC_PROJECTOR_QWEN3VL) { /* fused, biased */
    if (rc == NC_OK)
      rc = nc_mmproj_matrix(mm, NAME("attn_qkv.weight"), E, 3 * E, &L->wqkv,
                            err);
    if (rc == NC_OK)
      rc = nc_mmproj_vector(mm, NAME("attn_qkv.bias"), true, 3 * E, 1, &L->bqkv,
                            err);
  } else {
    if (rc == NC_OK)
      rc = nc_mmproj_matrix(mm, NAME("attn_q.weight"), E, E, &L->wq, err);
    if (rc == NC_OK)
      rc = nc_mmproj_matrix(mm, NAME("attn_k.weight"), E, E, &L->wk, err);
    if (rc == NC_OK)
      rc = nc_mmproj_matrix(mm, NAME("attn_v.weight"), E, E, &L->wv, err);
    if (rc == NC_OK)
      rc = nc_mmproj_vector(mm, NAME("attn_q.bias"), false, E, 1, &L->bq, err);
    if (rc == NC_OK)
      rc = nc_mmproj_vector(mm, NAME("attn_k.bias"), false, E, 1, &L->bk, err);
    if (rc == NC_OK)
      rc = nc_mmproj_vector(mm, NAME("attn_v.bias"), false, E, 1, &L->bv, err);
  }
  if (rc == NC_OK)
    rc = nc_mmproj_matrix(mm, NAME("attn_out.weight"), E, E, &L->wo, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, NAME("attn_out.bias"), false, E, 1, &L->bo, err);
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
  rc = nc_mmproj_matrix(mm, NAME(part), E, F, &L->ffn_up, err);
  snprintf(part, sizeof part, "%s.bias", up_name);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, NAME(part), false, F, 1, &L->ffn_up_b, err);
  snprintf(part, sizeof part, "%s.weight", down_name);
  if (rc == NC_OK)
    rc = nc_mmproj_matrix(mm, NAME(part), F, E, &L->ffn_down, err);
  snprintf(part, sizeof part, "%s.bias", down_name);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, NAME(part), false, E, 1, &L->ffn_down_b, err);
  /* the gate: Qwen2.5-VL's SiLU MLP, and only there; Gemma 4's (GeGLU
   * with the file's activation) when the file has one */
  const bool gated =
      mm->projector == NC_PROJECTOR_GEMMA4V
          ? gguf_find_tensor(mm->file, NAME("ffn_gate.weight")) != NULL
          : mm->act == NC_VIT_SILU;
  if (rc == NC_OK && gated)
    rc = nc_mmproj_matrix(mm, NAME("ffn_gate.weight"), E, F, &L->ffn_gate, err);
  if (rc == NC_OK && gated)
    rc = nc_mmproj_vector(mm, NAME("ffn_gate.bias"), false, F, 1,
                          &L->ffn_gate_b, err);
  if (rc == NC_OK && !gated &&
      gguf_find_tensor(mm->file, NAME("ffn_gate.weight")))
    rc = nc_fail(err, NC_ERR_UNSUPPORTED,
                 "mmproj: tensor '%s': a gated MLP is supported with "
                 "clip.use_silu (or projector gemma4v) only",
                 name);
#undef NAME
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
  uint8_t *w = nc_mmproj_keep(mm, malloc(rb * (size_t)rows));
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
  return nc_mmproj_check_matmul_type(mm, t->name, to, n, err);
}

/* A patch embedding kernel name [P, P, 3, n_embd] (ggml order) into pw, as
 * a matmul [3 P P -> n_embd] in its convolution's type. */
static nc_code patch_kernel(nucleus_mmproj *mm, const char *name, nc_weight *pw,
                            nc_error *err) {
  const int64_t E = mm->n_embd, P = mm->patch_size;
  const gguf_tensor_info *t;
  nc_code rc = nc_mmproj_find(mm, name, true, P, P, 3, E, &t, err);
  if (rc == NC_OK)
    rc =
        nc_mmproj_check_matmul_type(mm, name, (nc_type)t->type, 3 * P * P, err);
  if (rc != NC_OK) return rc;
  *pw = nc_mmproj_weight_of(t, 3 * P * P, E);
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
  rc = nc_mmproj_vector(mm, "v.patch_embd.bias", false, E, 1, &mm->patch_bias,
                        err);
  if (rc == NC_OK && positions)
    rc = nc_mmproj_vector(mm, "v.position_embd.weight", true, E, side * side,
                          &mm->pos_embd, err);
  if (rc == NC_OK && mm->projector == NC_PROJECTOR_GEMMA4V)
    rc = nc_mmproj_load_gemma4v_positions(mm, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, "v.pre_ln.weight", false, E, 1, &mm->pre_ln_w,
                          err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, "v.pre_ln.bias", false, E, 1, &mm->pre_ln_b, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, "v.post_ln.weight", false, E, 1, &mm->post_ln_w,
                          err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, "v.post_ln.bias", false, E, 1, &mm->post_ln_b,
                          err);
  if (rc != NC_OK) return rc;
  mm->layers = calloc((size_t)mm->n_layer, sizeof *mm->layers);
  if (!mm->layers) return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  for (int32_t il = 0; il < mm->n_layer && rc == NC_OK; il++) {
    rc = load_layer(mm, il, err);
    if (rc == NC_OK && mm->projector == NC_PROJECTOR_GEMMA4V)
      rc = nc_mmproj_load_gemma4v_layer(mm, il, err);
  }
  if (rc != NC_OK) return rc;
  if (mm->projector == NC_PROJECTOR_GEMMA4V)
    return nc_mmproj_load_gemma4v(mm, err);
  if (mm->projector == NC_PROJECTOR_QWEN3VL)
    return nc_mmproj_load_qwen3vl(mm, err);
  if (qwen) return nc_mmproj_load_qwen2vl(mm, err);
  rc = nc_mmproj_vector(mm, "mm.soft_emb_norm.weight", true, E, 1,
                        &mm->soft_emb_norm, err);
  if (rc == NC_OK) rc = nc_mmproj_load_input_proj(mm, err);
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
  nc_code rc = nc_mmproj_load_hparams(mm, err);
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
