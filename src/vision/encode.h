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
} nc_encoder;

extern const nc_encoder nc_encoder_gemma3;
extern const nc_encoder nc_encoder_qwen3vl;
extern const nc_encoder nc_encoder_qwen2vl; /* Qwen2-VL and Qwen2.5-VL */
extern const nc_encoder nc_encoder_gemma4v;

#endif
