/* encode: each projector family's encoder in parts, so an encode can be
 * sliced over an engine's steps (mmproj_job.c drives them; nc_mmproj_encode
 * runs them end to end): begin (the buffers, the image's preprocessing,
 * the patch embedding), one vision layer at a time, finish (the post norm,
 * the merger or pool and the projection into the rows). Each part works in
 * the encoder's own state (opaque: the family's file) with the call's
 * scratch (vit.h); the rows go to the out given to begin (Qwen3-VL's
 * DeepStack taps write theirs during the layers). */
#ifndef NC_ENCODE_H
#define NC_ENCODE_H

#include "mmproj_internal.h"
#include "vit.h"

/* What a vision layer of an encode reads and writes beyond its scratch
 * (the state's, between its layers): a layer run over several encodes at
 * once (encode_batch.c) works on these. */
typedef struct nc_enc_rows {
  float *x;             /* [N, n_embd]: the residual stream */
  int32_t N;            /* the image's patches */
  const float *cs, *sn; /* Qwen3-VL: each patch's RoPE ([N, head_dim / 2]) */
  float *out;           /* Qwen3-VL: the image's rows (the taps' slices) */
  int32_t *tap;         /* Qwen3-VL: the DeepStack taps written so far */
} nc_enc_rows;

/* The scratch a vision layer works in, for all the rows it runs (R):
 * [R, n_embd] each: the normed rows and the products' outputs (h), Q, K,
 * V (vv), the attention's output (a); f: [R, max(n_ff, n_embd)] (the
 * MLP's rows, the DeepStack taps' fc1); Qwen3-VL's fused QKV [R, 3 n_embd],
 * the taps' normed input m [R, n_embd] and output t [R / 4 + 1,
 * n_embd_text] (unused by the others). */
typedef struct nc_enc_scratch {
  float *h, *q, *k, *vv, *a, *f, *qkv, *m, *t;
} nc_enc_scratch;

typedef struct nc_encoder {
  /* *st: the state (freed by free_state, on failure too); out:
   * nc_mmproj_image_tokens x nc_mmproj_n_embd floats, kept by the caller
   * until the state is freed. */
  nc_code (*begin)(const nucleus_mmproj *mm, const nucleus_image *image,
                   nc_vit *v, float *out, void **st, nc_error *err);
  /* Vision layer il (0 .. n_layer - 1, in order). */
  nc_code (*layer)(void *st, nc_vit *v, int32_t il, nc_error *err);
  nc_code (*finish)(void *st, nc_vit *v, nc_error *err);
  void (*free_state)(void *st); /* NULL: nothing */
  /* A state's rows (after begin); NULL with layer_batch. */
  void (*rows)(void *st, nc_enc_rows *r);
  /* Vision layer il of n encodes (their rows, each encode at layer il) as
   * one: each weight product once over all their rows in b's scratch, the
   * attention and RoPE per image; each encode's rows end as layer() leaves
   * them, bit for bit (encode_batch.c). NULL: the family's layers run one
   * encode at a time. */
  nc_code (*layer_batch)(nc_mmproj_batch *b, const nucleus_mmproj *mm,
                         const nc_enc_rows *rows, int32_t n, int32_t il,
                         nc_error *err);
} nc_encoder;

/* The pool a batch's next calls run on (NULL: the caller's thread). */
void nc_mmproj_batch_set_pool(nc_mmproj_batch *b, nc_threadpool *tp);

/* Gemma 3's SigLIP layer and Qwen3-VL's (its DeepStack taps included)
 * over the rows of n encodes in s (encode_batch.c): an encode alone runs
 * them with n = 1 in its own scratch, several run them in the batch's, so
 * both are one code path (the same bits). */
nc_code nc_enc_layer_siglip(nc_vit *v, const nc_enc_scratch *s,
                            const nucleus_mmproj *mm, const nc_enc_rows *rows,
                            int32_t n, int32_t il, nc_error *err);
nc_code nc_enc_layer_qwen3vl(nc_vit *v, const nc_enc_scratch *s,
                             const nucleus_mmproj *mm, const nc_enc_rows *rows,
                             int32_t n, int32_t il, nc_error *err);

/* The same layers in b's scratch (grown to the rows' sum) on b's pool. */
nc_code nc_enc_layer_batch_siglip(nc_mmproj_batch *b, const nucleus_mmproj *mm,
                                  const nc_enc_rows *rows, int32_t n,
                                  int32_t il, nc_error *err);
nc_code nc_enc_layer_batch_qwen3vl(nc_mmproj_batch *b, const nucleus_mmproj *mm,
                                   const nc_enc_rows *rows, int32_t n,
                                   int32_t il, nc_error *err);

extern const nc_encoder nc_encoder_gemma3;
extern const nc_encoder nc_encoder_qwen3vl;
extern const nc_encoder nc_encoder_qwen2vl; /* Qwen2-VL and Qwen2.5-VL */
extern const nc_encoder nc_encoder_gemma4v;

#endif
