/* encode_gemma3: Gemma 3's vision tower and projector in llama.cpp's order
 * (tools/mtmd/models/siglip.cpp over clip.cpp's build_vit): the image fitted
 * into image_size^2 and normalised, patch embedding, learned positions,
 * pre-norm layers (LayerNorm, attention with biases, LayerNorm, GELU MLP),
 * post_ln, an n_merge x n_merge average pool, RMS norm x soft_emb_norm,
 * mm.input_projection. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "image.h"
#include "image_resize.h"
#include "vit.h"

/* An encode's state: the patches' rows and the layers' scratch (the
 * fitted image and its normalised values only during begin). */
typedef struct enc {
  const nucleus_mmproj *mm;
  float *out;
  int32_t N; /* patches */
  nc_vit_bufs b;
} enc;

static void free_state(void *st) {
  enc *es = st;
  if (!es) return;
  nc_vit_bufs_free(&es->b);
  free(es);
}

/* Vision layer il: the batched layer over this encode's rows alone. */
static nc_code layer(void *st, nc_vit *v, int32_t il, nc_error *err) {
  enc *es = st;
  nc_vit_bufs *b = &es->b;
  const nc_enc_rows r = {.x = b->x, .N = es->N};
  const nc_enc_scratch s = {
      .h = b->h, .q = b->q, .k = b->k, .vv = b->v, .a = b->a, .f = b->f};
  return nc_enc_layer_siglip(v, &s, es->mm, &r, 1, il, err);
}

static nc_code begin(const nucleus_mmproj *mm, const nucleus_image *image,
                     nc_vit *v, float *out, void **st, nc_error *err) {
  const int32_t S = mm->image_size, P = mm->patch_size, side = S / P;
  const int32_t N = side * side;
  const int64_t E = mm->n_embd, F = mm->n_ff, CPP = 3 * (int64_t)P * P;
  enc *es = calloc(1, sizeof *es);
  *st = es;
  if (!es) return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  es->mm = mm;
  es->out = out;
  es->N = N;
  nc_vit_bufs *b = &es->b;
  nc_code rc = nc_vit_bufs_alloc(b, S, S, P, E, F, err);
  if (rc == NC_OK)
    rc = nc_image_fit_square(image->rgb, image->width, image->height, b->rgb, S,
                             NC_RESIZE_BILINEAR, err);
  if (rc == NC_OK) {
    nc_image_normalize(b->rgb, (int64_t)S * S, mm->mean, mm->std, b->img);
    nc_vit_patches(b->img, S, P, side, side, b->in);
    rc = nc_vit_matmul(v, b->in, CPP, N, &mm->patch_embd, mm->patch_bias, b->x,
                       E, err);
  }
  if (rc == NC_OK) {
    nc_vit_add(b->x, mm->pos_embd, (int64_t)N * E);
    if (mm->pre_ln_w)
      nc_vit_layernorm(v, b->x, mm->pre_ln_w, mm->pre_ln_b, b->x, N, E,
                       mm->eps);
  }
  nc_vit_bufs_drop_image(b);
  return rc;
}

static nc_code finish(void *st, nc_vit *v, nc_error *err) {
  enc *es = st;
  nc_vit_bufs *b = &es->b;
  const nucleus_mmproj *mm = es->mm;
  const int32_t side = mm->image_size / mm->patch_size, N = es->N;
  const int32_t K = mm->n_merge, ps = side / K;
  const int64_t E = mm->n_embd;
  if (mm->post_ln_w)
    nc_vit_layernorm(v, b->x, mm->post_ln_w, mm->post_ln_b, b->x, N, E,
                     mm->eps);
  /* average pool: token (ty, tx) = the mean of its K x K patches, summed
   * row by row as ggml_pool_2d */
  const float inv = 1.0f / (float)(K * K);
  for (int32_t ty = 0; ty < ps; ty++)
    for (int32_t tx = 0; tx < ps; tx++) {
      float *o = b->h + ((int64_t)ty * ps + tx) * E;
      for (int64_t e = 0; e < E; e++) {
        float s = 0.0f;
        for (int32_t ky = 0; ky < K; ky++)
          for (int32_t kx = 0; kx < K; kx++)
            s += b->x[((int64_t)(ty * K + ky) * side + tx * K + kx) * E + e];
        o[e] = s * inv;
      }
    }
  nc_vit_rmsnorm(b->h, mm->soft_emb_norm, b->h, ps * ps, E, mm->eps);
  return nc_vit_matmul(v, b->h, E, ps * ps, &mm->input_proj, NULL, es->out,
                       mm->n_embd_text, err);
}

/* The rows a batched layer works on (encode_batch.c). */
static void rows(void *st, nc_enc_rows *r) {
  enc *es = st;
  *r = (nc_enc_rows){.x = es->b.x, .N = es->N};
}

const nc_encoder nc_encoder_gemma3 = {
    begin, layer, finish, free_state, rows, nc_enc_layer_batch_siglip};
