/* encode_qwen3vl: Qwen3-VL's vision tower and merger in llama.cpp's order
 * (tools/mtmd/models/qwen3vl.cpp, clip.cpp's inputs):
 *
 * 1. The smart resize (nc_qwen_image_size: sides multiples of 2 patches,
 *    the pixel count within the file's budget), the image fitted into it
 *    keeping its aspect ratio (Pillow's bicubic filter, centred on black:
 *    llama.cpp's PAD_CEIL), x / 255, (x - mean) / std.
 * 2. Patches: both temporal kernels on the still image, summed (ggml_add of
 *    two ggml_conv_2d: each rounds patches and kernel to F16), put in merge
 *    order (each 2 x 2 block's patches consecutive, blocks row by row), +
 *    the patch bias, + the learned positions resized to the patch grid
 *    (ggml_interpolate, bilinear, align corners) in the same order.
 * 3. Layers: LayerNorm, Q K V (one matrix, biased), 2-D RoPE on each head
 *    (GGML_ROPE_TYPE_VISION over head_dim / 2 pairs (i, i + head_dim / 2),
 *    base 10000: the first quarter of the pairs by the patch's row, the
 *    second by its column, each quarter's theta restarting), attention over
 *    every patch, out (+ bias), residual; LayerNorm, up, GELU, down,
 *    residual; after a DeepStack layer its tap: the 4 patches of a block
 *    as one row of 4 n_embd, LayerNorm, fc1, GELU, fc2.
 * 4. post_ln per patch, blocks as rows of 4 n_embd, mm.0, GELU, mm.2.
 * Each output row: the merger's n_embd_text values, then each tap's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "image.h"
#include "image_resize.h"
#include "kernels/ops.h"
#include "qwen_patches.h"
#include "vit.h"

/* The learned positions (side x side rows of E) at patch (py, px) of a pw x
 * ph grid: ggml's bilinear upscale with align corners (the source itself
 * when the grid is side x side). */
static void position_at(const float *pos, int32_t side, int64_t E, int32_t pw,
                        int32_t ph, int32_t py, int32_t px, float *out) {
  if (pw == side && ph == side) {
    memcpy(out, pos + ((int64_t)py * side + px) * E, sizeof(float) * E);
    return;
  }
  const float sf0 = pw > 1 && side > 1 ? (float)(pw - 1) / (float)(side - 1)
                                       : (float)pw / (float)side;
  const float sf1 = ph > 1 && side > 1 ? (float)(ph - 1) / (float)(side - 1)
                                       : (float)ph / (float)side;
  const float y = (float)py / sf1, x = (float)px / sf0;
  int64_t y0 = (int64_t)floorf(y), x0 = (int64_t)floorf(x);
  int64_t y1 = y0 + 1, x1 = x0 + 1;
  y0 = y0 < 0 ? 0 : y0 > side - 1 ? side - 1 : y0;
  y1 = y1 < 0 ? 0 : y1 > side - 1 ? side - 1 : y1;
  x0 = x0 < 0 ? 0 : x0 > side - 1 ? side - 1 : x0;
  x1 = x1 < 0 ? 0 : x1 > side - 1 ? side - 1 : x1;
  float dy = y - (float)y0, dx = x - (float)x0;
  dy = dy < 0.0f ? 0.0f : dy > 1.0f ? 1.0f : dy;
  dx = dx < 0.0f ? 0.0f : dx > 1.0f ? 1.0f : dx;
  const float *a = pos + (y0 * side + x0) * E, *b = pos + (y0 * side + x1) * E;
  const float *c = pos + (y1 * side + x0) * E, *d = pos + (y1 * side + x1) * E;
  for (int64_t e = 0; e < E; e++) {
    /* a (1-dx)(1-dy) + b dx (1-dy) + c (1-dx) dy + d dx dy, contracted as
     * clang does */
    float v = a[e] * (1 - dx) * (1 - dy);
    v = fmaf(b[e] * dx, 1 - dy, v);
    v = fmaf(c[e] * (1 - dx), dy, v);
    v = fmaf(d[e] * dx, dy, v);
    out[e] = v;
  }
}

/* An encode's state: the patches' rows, the layers' scratch, the
 * DeepStack taps written so far. */
typedef struct bufs {
  const nucleus_mmproj *mm;
  float *out;
  int32_t N;   /* patches */
  int32_t tap; /* DeepStack taps done */
  float *x, *h, *qkv, *q, *k, *v, *a, *f, *in, *m, *t, *cs, *sn;
} bufs;

static void free_state(void *st) {
  bufs *b = st;
  if (!b) return;
  float *all[] = {b->x, b->h,  b->qkv, b->q, b->k,  b->v, b->a,
                  b->f, b->in, b->m,   b->t, b->cs, b->sn};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]);
  free(b);
}

/* rows (N / 4 of M = 4 n_embd, from x) through norm (when w), fc1, GELU,
 * fc2 into out (rows n_embd_text wide, out_stride apart). */
static nc_code merger(const nucleus_mmproj *mm, nc_vit *v, const float *x,
                      int32_t rows, const float *norm_w, const float *norm_b,
                      const nc_weight *fc1, const float *b1,
                      const nc_weight *fc2, const float *b2, float *tmp,
                      float *tmp2, float *out, int64_t out_stride,
                      nc_error *err) {
  const int64_t M = 4 * (int64_t)mm->n_embd;
  const float *in = x;
  if (norm_w) {
    nc_vit_layernorm(v, x, norm_w, norm_b, tmp2, rows, M, mm->eps);
    in = tmp2;
  }
  nc_code rc = nc_vit_matmul(v, in, M, rows, fc1, b1, tmp, M, err);
  if (rc != NC_OK) return rc;
  nc_vit_gelu(v, tmp, (int64_t)rows * M);
  return nc_vit_matmul(v, tmp, M, rows, fc2, b2, out, out_stride, err);
}

static nc_code begin(const nucleus_mmproj *mm, const nucleus_image *image,
                     nc_vit *v, float *out, void **st, nc_error *err) {
  int32_t W, Hh;
  nc_qwen_image_size(mm, image->width, image->height, &W, &Hh);
  const int32_t P = mm->patch_size, pw = W / P, ph = Hh / P, N = pw * ph;
  const int32_t side = mm->image_size / P, dh = mm->n_embd / mm->n_head;
  const int64_t E = mm->n_embd, F = mm->n_ff, CPP = 3 * (int64_t)P * P;
  const int64_t T = mm->n_embd_text;
  bufs *b = calloc(1, sizeof *b);
  *st = b;
  if (!b) return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  b->mm = mm;
  b->out = out;
  b->N = N;
  uint8_t *rgb = malloc((size_t)3 * W * Hh);
  float *img = malloc((size_t)3 * W * Hh * sizeof *img);
  b->in = malloc((size_t)N * CPP * sizeof *b->in);
  b->x = malloc((size_t)N * E * sizeof *b->x);
  b->h = malloc((size_t)N * (E > T ? E : T) * sizeof *b->h);
  b->qkv = malloc((size_t)N * 3 * E * sizeof *b->qkv);
  b->q = malloc((size_t)N * E * sizeof *b->q);
  b->k = malloc((size_t)N * E * sizeof *b->k);
  b->v = malloc((size_t)N * E * sizeof *b->v);
  b->a = malloc((size_t)N * E * sizeof *b->a);
  b->f = malloc((size_t)N * (F > E ? F : E) * sizeof *b->f);
  b->m = malloc((size_t)N * E * sizeof *b->m);
  b->t = malloc((size_t)(N / 4 + 1) * T * sizeof *b->t);
  b->cs = malloc((size_t)N * (dh / 2) * sizeof *b->cs);
  b->sn = malloc((size_t)N * (dh / 2) * sizeof *b->sn);
  nc_code rc = NC_OK;
  if (!rgb || !img || !b->in || !b->x || !b->h || !b->qkv || !b->q || !b->k ||
      !b->v || !b->a || !b->f || !b->m || !b->t || !b->cs || !b->sn)
    rc = nc_fail(err, NC_ERR_NOMEM, "vision: out of memory for %d patches",
                 (int)N);
  if (rc == NC_OK && dh / 2 > 512)
    rc = nc_fail(err, NC_ERR_UNSUPPORTED,
                 "vision: head size %d over the 1024 the 2-D RoPE takes",
                 (int)dh);
  if (rc == NC_OK)
    rc = nc_image_fit(image->rgb, image->width, image->height, rgb, W, Hh,
                      NC_RESIZE_BICUBIC, err);
  if (rc == NC_OK) {
    nc_image_normalize(rgb, (int64_t)W * Hh, mm->mean, mm->std, img);
    /* the patches in merge order, (channel, y, x) within each */
    for (int32_t r = 0; r < N; r++) {
      int32_t py, px;
      nc_qwen_merge_order(r, pw, &py, &px);
      float *row = b->in + (int64_t)r * CPP;
      for (int c = 0; c < 3; c++)
        for (int32_t ky = 0; ky < P; ky++)
          for (int32_t kx = 0; kx < P; kx++)
            row[((int64_t)c * P + ky) * P + kx] =
                img[(((int64_t)py * P + ky) * W + px * P + kx) * 3 + c];
      nc_qwen_vision_rope(dh, py, px, b->cs + (int64_t)r * (dh / 2),
                          b->sn + (int64_t)r * (dh / 2));
    }
    rc = nc_vit_matmul(v, b->in, CPP, N, &mm->patch_embd, NULL, b->x, E, err);
  }
  if (rc == NC_OK)
    rc = nc_vit_matmul(v, b->in, CPP, N, &mm->patch_embd_1, NULL, b->h, E, err);
  if (rc == NC_OK) {
    nc_vit_add_par(v, b->x, b->h, (int64_t)N * E);
    for (int32_t r = 0; r < N; r++) {
      int32_t py, px;
      nc_qwen_merge_order(r, pw, &py, &px);
      float *xr = b->x + (int64_t)r * E;
      nc_vit_add(xr, mm->patch_bias, E);
      position_at(mm->pos_embd, side, E, pw, ph, py, px, b->h);
      nc_vit_add(xr, b->h, E);
    }
    if (mm->pre_ln_w)
      nc_vit_layernorm(v, b->x, mm->pre_ln_w, mm->pre_ln_b, b->x, N, E,
                       mm->eps);
  }
  free(rgb);
  free(img);
  return rc;
}

static void rows(void *st, nc_enc_rows *r);

/* Layer il, then its DeepStack tap (the tap's rows into out): the batched
 * layer over this encode's rows alone. */
static nc_code layer(void *st, nc_vit *v, int32_t il, nc_error *err) {
  bufs *b = st;
  nc_enc_rows r;
  rows(st, &r);
  const nc_enc_scratch s = {.h = b->h,
                            .q = b->q,
                            .k = b->k,
                            .vv = b->v,
                            .a = b->a,
                            .f = b->f,
                            .qkv = b->qkv,
                            .m = b->m,
                            .t = b->t};
  return nc_enc_layer_qwen3vl(v, &s, b->mm, &r, 1, il, err);
}

static nc_code finish(void *st, nc_vit *v, nc_error *err) {
  bufs *b = st;
  const nucleus_mmproj *mm = b->mm;
  const int64_t E = mm->n_embd, T = mm->n_embd_text;
  const int64_t stride = T * (1 + mm->n_deepstack);
  nc_vit_layernorm(v, b->x, mm->post_ln_w, mm->post_ln_b, b->x, b->N, E,
                   mm->eps);
  return merger(mm, v, b->x, b->N / 4, NULL, NULL, &mm->mm0, mm->mm0_b,
                &mm->mm2, mm->mm2_b, b->f, b->m, b->out, stride, err);
}

/* The rows a batched layer works on (encode_batch.c). */
static void rows(void *st, nc_enc_rows *r) {
  bufs *b = st;
  *r = (nc_enc_rows){.x = b->x,
                     .N = b->N,
                     .cs = b->cs,
                     .sn = b->sn,
                     .out = b->out,
                     .tap = &b->tap};
}

const nc_encoder nc_encoder_qwen3vl = {
    begin, layer, finish, free_state, rows, nc_enc_layer_batch_qwen3vl};
