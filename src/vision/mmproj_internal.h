/* mmproj_internal: what a loaded projector holds (mmproj_load.c fills it,
 * the encoders read it). Weights point into the file, except the small
 * vectors (norms, biases, positions: widened to F32 at load) and Gemma 3's
 * input projection (stored transposed in the file: kept in row order). */
#ifndef NC_MMPROJ_INTERNAL_H
#define NC_MMPROJ_INTERNAL_H

#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "mmproj.h"

typedef enum nc_projector {
  NC_PROJECTOR_GEMMA3 = 1, /* SigLIP, 2-D average pool, soft-emb norm */
} nc_projector;

typedef enum nc_vit_act {
  NC_VIT_GELU_QUICK = 0, /* llama.cpp's default (clip.use_gelu false) */
  NC_VIT_GELU,           /* ggml_gelu (tanh, the F16 table) */
} nc_vit_act;

typedef struct nc_vit_layer {
  const float *ln1_w, *ln1_b, *ln2_w, *ln2_b; /* [n_embd] */
  nc_weight wq, wk, wv, wo;                   /* [n_embd -> n_embd] */
  const float *bq, *bk, *bv, *bo;             /* [n_embd] or NULL */
  nc_weight ffn_up, ffn_down;                 /* [E -> F], [F -> E] */
  const float *ffn_up_b, *ffn_down_b;         /* or NULL */
} nc_vit_layer;

struct nucleus_mmproj {
  gguf_file *file;
  const nucleus_model *lm;
  const nc_kernels *kern;
  int n_threads;
  nc_projector projector;
  const char *projector_name; /* static */
  nc_vit_act act;
  bool flash; /* attention as llama.cpp's with flash attention: the LM's */
  int32_t n_embd, n_head, n_ff, n_layer; /* the vision tower's */
  int32_t n_embd_text;                   /* the LM's: each output row */
  int32_t image_size, patch_size, n_merge;
  float eps, mean[3], std[3];
  /* the patch embedding as a matmul: [3 * P * P -> n_embd], each row the
   * kernel of one output channel in (channel, y, x) order */
  nc_weight patch_embd;
  const float *patch_bias; /* [n_embd] or NULL */
  const float *pos_embd;   /* [n_patches, n_embd] */
  const float *pre_ln_w, *pre_ln_b, *post_ln_w, *post_ln_b; /* or NULL */
  nc_vit_layer *layers;                                     /* [n_layer] */
  /* gemma3: RMS norm weight [n_embd] and projection [n_embd -> n_embd_text] */
  const float *soft_emb_norm;
  nc_weight input_proj;
  /* the owned buffers behind the F32 vectors and the transposed matrix */
  void **owned;
  int32_t n_owned, cap_owned;
};

#endif
