/* qwen_patches: the smart resize, merge order and 2-D RoPE of the Qwen
 * vision encoders (qwen_patches.h). */
#include "qwen_patches.h"

#include <math.h>
#include <string.h>

#include "kernels/ops.h"

void nc_qwen_image_size(const nucleus_mmproj *mm, int32_t w, int32_t h,
                        int32_t *out_w, int32_t *out_h) {
  const int32_t a = mm->patch_size * mm->n_merge;
  const float fa = (float)a;
  /* round_by_factor first, at least one step */
  int32_t wb = (int32_t)roundf((float)w / fa) * a;
  int32_t hb = (int32_t)roundf((float)h / fa) * a;
  if (wb < a) wb = a;
  if (hb < a) hb = a;
  if ((int64_t)wb * hb > mm->max_pixels) {
    const float beta = sqrtf((float)h * (float)w / (float)mm->max_pixels);
    hb = (int32_t)floorf((float)h / beta / fa) * a;
    wb = (int32_t)floorf((float)w / beta / fa) * a;
    if (hb < a) hb = a;
    if (wb < a) wb = a;
  } else if ((int64_t)wb * hb < mm->min_pixels) {
    const float beta = sqrtf((float)mm->min_pixels / ((float)h * (float)w));
    hb = (int32_t)ceilf((float)h * beta / fa) * a;
    wb = (int32_t)ceilf((float)w * beta / fa) * a;
  }
  *out_w = wb;
  *out_h = hb;
}

/* The patch (py, px) of merge-order row r of a pw x ph grid. */
void nc_qwen_merge_order(int32_t r, int32_t pw, int32_t *py, int32_t *px) {
  const int32_t block = r / 4, in = r % 4, bw = pw / 2;
  *py = (block / bw) * 2 + in / 2;
  *px = (block % bw) * 2 + in % 2;
}

/* The 2-D RoPE tables of merge-order row r: pairs [0, dh/4) by the patch's
 * row, [dh/4, dh/2) by its column, each from its own theta (ggml's vision
 * mrope: indep sections). */
void nc_qwen_vision_rope(int32_t dh, int32_t py, int32_t px, float *cos_c,
                         float *sin_c) {
  const nc_rope_params p = {.n_rot = dh / 2,
                            .freq_base = 10000.0f,
                            .freq_scale = 1.0f,
                            .attn_factor = 1.0f};
  float c[512], s[512];
  const int32_t q = dh / 4;
  nc_rope_cache(py, &p, NULL, c, s);
  memcpy(cos_c, c, sizeof(float) * q);
  memcpy(sin_c, s, sizeof(float) * q);
  nc_rope_cache(px, &p, NULL, c, s);
  memcpy(cos_c + q, c, sizeof(float) * q);
  memcpy(sin_c + q, s, sizeof(float) * q);
}
