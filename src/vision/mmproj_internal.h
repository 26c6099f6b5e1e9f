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
  /* Qwen3-VL (qwen3vl_merger): images at their own aspect ratio, 2-D RoPE,
   * 2 x 2 merger, DeepStack taps (encode_qwen3vl.c) */
  NC_PROJECTOR_QWEN3VL = 2,
  /* Qwen2-VL (qwen2vl_merger): LayerNorm, quick-GELU MLP, full attention;
   * Qwen2.5-VL (qwen2.5vl_merger): RMS norm, gated SiLU MLP, window
   * attention but on every n_wa_pattern-th layer (encode_qwen2vl.c) */
  NC_PROJECTOR_QWEN2VL = 3,
  NC_PROJECTOR_QWEN25VL = 4,
  /* Gemma 4 (gemma4v): images at their own aspect ratio, learned column
   * and row positions, 2-D NEOX RoPE, RMS norms, clamped linears, an
   * n_merge x n_merge average pool, the embedder (encode_gemma4v.c) */
  NC_PROJECTOR_GEMMA4V = 5,
} nc_projector;

/* Gemma4ClippableLinear's bounds of one matrix: its input clamped to [in_min,
 * in_max] before the product, its output to [out_min, out_max] after
 * (-FLT_MAX / FLT_MAX where the file has none, as llama.cpp). */
typedef struct nc_vit_clamp {
  float in_min, in_max, out_min, out_max;
} nc_vit_clamp;

typedef enum nc_vit_act {
  NC_VIT_GELU_QUICK = 0, /* llama.cpp's default (clip.use_gelu false) */
  NC_VIT_GELU,           /* ggml_gelu (tanh, the F16 table) */
  NC_VIT_SILU,           /* clip.use_silu: gated, ggml_swiglu */
} nc_vit_act;

typedef struct nc_vit_layer {
  const float *ln1_w, *ln1_b, *ln2_w, *ln2_b; /* [n_embd] */
  nc_weight wq, wk, wv, wo;                   /* [n_embd -> n_embd] */
  const float *bq, *bk, *bv, *bo;             /* [n_embd] or NULL */
  nc_weight ffn_up, ffn_down;                 /* [E -> F], [F -> E] */
  const float *ffn_up_b, *ffn_down_b;         /* or NULL */
  nc_weight ffn_gate;                         /* [E -> F]: Qwen2.5-VL */
  const float *ffn_gate_b;                    /* or NULL */
  /* Qwen3-VL: Q, K, V fused [n_embd -> 3 n_embd] (+ bias) in place of
   * wq, wk, wv; a DeepStack tap after the layer (ds_fc1.data != NULL):
   * LayerNorm over 4 merged patches (ds_norm_*: [4 n_embd]), fc1 [4 n_embd
   * -> 4 n_embd] (+ bias), GELU, fc2 [4 n_embd -> n_embd_text] (+ bias) */
  nc_weight wqkv;
  const float *bqkv;
  const float *ds_norm_w, *ds_norm_b;
  nc_weight ds_fc1, ds_fc2;
  const float *ds_fc1_b, *ds_fc2_b;
  /* Gemma 4: Q and K RMS norm weights ([head_dim]: per head, or
   * [n_embd]: per row; NULL: none), the norms after the attention and the
   * MLP ([n_embd] or NULL), the layer's output scale ([out_scale_n]: 1 or
   * n_embd; NULL: none), the clamps of its matrices */
  const float *q_norm, *k_norm;
  int32_t q_norm_n, k_norm_n;
  const float *attn_post_norm, *ffn_post_norm;
  const float *out_scale;
  int32_t out_scale_n;
  nc_vit_clamp cl_q, cl_k, cl_v, cl_o, cl_up, cl_gate, cl_down;
} nc_vit_layer;

struct nucleus_mmproj {
  gguf_file *file;
  nc_mmproj_lm lm; /* lm.arch: only during the load */
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
  /* qwen3vl: the second temporal kernel (a still image takes both), the
   * merger mm.0 [4 n_embd -> 4 n_embd] and mm.2 [4 n_embd -> n_embd_text]
   * (+ biases), the DeepStack taps (each output row is n_embd_text x (1 +
   * n_deepstack) wide: the merger's, then the taps' in layer order), the
   * pixel budget of the smart resize (llama.cpp: 8 to 4096 rows) */
  nc_weight patch_embd_1;
  nc_weight mm0, mm2;
  const float *mm0_b, *mm2_b;
  int32_t n_deepstack;
  int64_t min_pixels, max_pixels;
  /* qwen2.5vl: layers il with (il + 1) % n_wa_pattern == 0 attend over the
   * whole image, the others within windows of attn_window merged rows a
   * side (llama.cpp: 112 pixels / patch / 2); 0: every layer full */
  int32_t n_wa_pattern, attn_window;
  /* gemma4v: the position tables' length (v.position_embd.weight [n_embd,
   * pos_size, 2]: columns, then rows; an image's patch grid is at most
   * pos_size a side), the standardisation after the pool (both or NULL),
   * the input projection's clamp (input_proj: [n_embd -> n_embd_text] as
   * stored) */
  int32_t pos_size;
  const float *std_bias, *std_scale;
  nc_vit_clamp cl_proj;
  /* the owned buffers behind the F32 vectors and the transposed matrix */
  void **owned;
  int32_t n_owned, cap_owned;
};

/* Whether the projector is one of the Qwen family (2-D RoPE, smart resize,
 * the 2 x 2 merger, <|vision_start|> ... <|vision_end|>). */
static inline bool nc_mmproj_is_qwen(const nucleus_mmproj *mm) {
  return mm->projector == NC_PROJECTOR_QWEN2VL ||
         mm->projector == NC_PROJECTOR_QWEN25VL ||
         mm->projector == NC_PROJECTOR_QWEN3VL;
}

/* Whether images keep their aspect ratio (the smart resize of
 * nc_qwen_image_size, the rows depending on the image's size). */
static inline bool nc_mmproj_dyn_size(const nucleus_mmproj *mm) {
  return nc_mmproj_is_qwen(mm) || mm->projector == NC_PROJECTOR_GEMMA4V;
}

/* Qwen's smart resize (llama.cpp's calc_size_preserved_ratio): the sides
 * rounded to multiples of patch_size x n_merge, then scaled into
 * [min_pixels, max_pixels] keeping the aspect ratio (Gemma 4's too: the
 * same dyn_size preprocessor in llama.cpp). */
void nc_qwen_image_size(const nucleus_mmproj *mm, int32_t w, int32_t h,
                        int32_t *out_w, int32_t *out_h);

#endif
