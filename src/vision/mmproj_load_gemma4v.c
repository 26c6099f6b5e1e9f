/* mmproj_load_gemma4v: Gemma 4's part of the loader (gemma4v): the
 * layers' norms, scales and clamps, the column and row position tables,
 * the standardisation and the clamped input projection. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/quant.h"
#include "mmproj_load_internal.h"

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
    nc_code rc = nc_mmproj_find(mm, name, false, 1, 1, 1, 1, &t, err);
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
  return nc_mmproj_vector(mm, name, false, want, 1, out, err);
}

/* Gemma 4's parts of layer il beyond load_layer's: the Q/K norms (per
 * head or per row), the post-attention and post-MLP norms, the output
 * scale, every matrix's clamp. */
nc_code nc_mmproj_load_gemma4v_layer(nucleus_mmproj *mm, int32_t il,
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
    rc = nc_mmproj_vector(mm, NAME("attn_post_norm.weight"), false, E, 1,
                          &L->attn_post_norm, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, NAME("ffn_post_norm.weight"), false, E, 1,
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
nc_code nc_mmproj_load_gemma4v_positions(nucleus_mmproj *mm, nc_error *err) {
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
  nc_code rc = nc_mmproj_find(mm, name, true, mm->n_embd, n, 2, 1, &ti, err);
  if (rc != NC_OK) return rc;
  const int64_t count = 2 * n * mm->n_embd;
  if (ti->type == NC_TYPE_F32) {
    mm->pos_embd = ti->data;
    return NC_OK;
  }
  float *v = nc_mmproj_keep(mm, malloc((size_t)count * sizeof *v));
  if (!v) return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  nc_dequantize_row((nc_type)ti->type, ti->data, v, count);
  mm->pos_embd = v;
  return NC_OK;
}

/* Gemma 4's tensors past the layers: std_bias and std_scale (both or
 * neither), mm.input_projection [n_embd -> n_embd_text] and its clamp.
 * llama.cpp's graph has no patch bias. */
nc_code nc_mmproj_load_gemma4v(nucleus_mmproj *mm, nc_error *err) {
  const int64_t E = mm->n_embd;
  if (mm->patch_bias)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor 'v.patch_embd.bias' in a gemma4v projector "
                   "(its patch embedding has no bias)");
  nc_code rc =
      nc_mmproj_vector(mm, "v.std_bias", false, E, 1, &mm->std_bias, err);
  if (rc == NC_OK)
    rc = nc_mmproj_vector(mm, "v.std_scale", false, E, 1, &mm->std_scale, err);
  if (rc == NC_OK && !mm->std_bias != !mm->std_scale)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor '%s' without '%s' (gemma4v standardises "
                   "with both or neither)",
                   mm->std_bias ? "v.std_bias" : "v.std_scale",
                   mm->std_bias ? "v.std_scale" : "v.std_bias");
  if (rc == NC_OK)
    rc = nc_mmproj_matrix(mm, "mm.input_projection.weight", E, mm->n_embd_text,
                          &mm->input_proj, err);
  if (rc == NC_OK) rc = clamp_of(mm, &mm->input_proj, &mm->cl_proj, err);
  return rc;
}
