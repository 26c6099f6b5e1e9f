/* encode_gemma4v: Gemma 4's vision tower and embedder in llama.cpp's order
 * (tools/mtmd/models/gemma4v.cpp over clip.cpp's build_vit and inputs):
 *
 * 1. The smart resize (nc_qwen_image_size: sides multiples of patch_size x
 *    n_merge, 70 .. 1120 rows' worth of pixels), the image fitted into it
 *    keeping its aspect ratio (Pillow's bicubic filter, centred on black),
 *    x / 255, (x - mean) / std, then 2 x - 1.
 * 2. Patches (F16 as ggml_conv_2d), no bias; + the column table's row px,
 *    + the row table's row py.
 * 3. Layers (RMS norms; every matrix clamped as Gemma4ClippableLinear):
 *    ln1, Q K V, Q and K RMS-normed per head (x q_norm, k_norm), 2-D NEOX
 *    RoPE (base 100: the first half of each head turned by the column, the
 *    second by the row), V RMS-normed per head without weight, attention
 *    unscaled, out, attn_post_norm, residual; ln2, gate and up, the file's
 *    activation of the gate x up, down, ffn_post_norm, residual; x
 *    out_scale.
 * 4. n_merge x n_merge average pool (ggml_pool_2d: summed, divided), x
 *    sqrt(n_embd), (x - std_bias) x std_scale, RMS norm (no weight),
 *    mm.input_projection (clamped). Rows row by row of the pooled grid. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "image.h"
#include "image_resize.h"
#include "kernels/ops.h"
#include "vit.h"

/* An encode's state: the patches' rows and the layers' scratch (vb, the
 * ViT's: nc_vit_bufs, the image's bytes and values only during begin), and
 * Gemma 4's beside them: the gate's rows (g: [N, n_ff]), the clamped
 * inputs of a product (c: [N, max(n_embd, n_ff)]), the RoPE tables (pos:
 * [2 N, head_dim / 2]). */
typedef struct bufs {
  const nucleus_mmproj *mm;
  float *out;
  int32_t N, pw, ph; /* patches: pw x ph */
  nc_vit_bufs vb;
  float *g, *c, *pos;
} bufs;

static void free_state(void *st) {
  bufs *b = st;
  if (!b) return;
  nc_vit_bufs_free(&b->vb);
  free(b->g);
  free(b->c);
  free(b->pos);
  free(b);
}

static float clampf(float x, float lo, float hi) {
  /* ggml_clamp: MAX(MIN(x, max), min) */
  x = x < hi ? x : hi;
  return x > lo ? x : lo;
}

/* y = clamp(clamp(x) W^T): Gemma4ClippableLinear over rows rows of n_in
 * (c: a scratch of rows x n_in floats for the clamped input). */
static nc_code clamped_matmul(nc_vit *v, const float *x, int64_t n_in,
                              int32_t rows, const nc_weight *w,
                              const nc_vit_clamp *cl, float *c, float *y,
                              int64_t n_out, nc_error *err) {
  const int64_t n = (int64_t)rows * n_in;
  for (int64_t i = 0; i < n; i++)
    c[i] = clampf(x[i], cl->in_min, cl->in_max);
  nc_code rc = nc_vit_matmul(v, c, n_in, rows, w, NULL, y, n_out, err);
  if (rc != NC_OK) return rc;
  const int64_t m = (int64_t)rows * n_out;
  for (int64_t i = 0; i < m; i++)
    y[i] = clampf(y[i], cl->out_min, cl->out_max);
  return NC_OK;
}

/* y += b per row of n (a bias after a clamped product, as ggml_add). */
static void add_bias(float *y, const float *b, int32_t rows, int64_t n) {
  if (!b) return;
  for (int32_t r = 0; r < rows; r++)
    nc_vit_add(y + (int64_t)r * n, b, n);
}

/* build_norm with NORM_TYPE_RMS: rms_norm, x w, + b (w, b may be NULL). */
static void rms(const float *x, const float *w, const float *b, float *y,
                int32_t rows, int64_t n, float eps) {
  nc_vit_rmsnorm(x, w, y, rows, n, eps);
  add_bias(y, b, rows, n);
}

/* The head norms: per head when the weight is head_dim long, else per row. */
static void head_norm(float *x, const float *w, int32_t wn, int32_t rows,
                      int32_t n_head, int32_t dh, float eps) {
  if (!w) return;
  if (wn == dh)
    nc_vit_rmsnorm(x, w, x, rows * n_head, dh, eps);
  else
    nc_vit_rmsnorm(x, w, x, rows, (int64_t)n_head * dh, eps);
}

/* 2-D RoPE of a row's heads: pairs (i, i + dh/4) of the first half by the
 * column (col: dh/4 cos then dh/4 sin), of the second half by the row
 * (row: the same), as two ggml_rope_ext NEOX over dh/2 dimensions, the
 * second at offset dh/2 (ggml_rope_set_offset). */
static void rope_2d(float *x, int32_t n_head, int32_t dh, const float *col,
                    const float *row) {
  const int32_t q = dh / 4;
  nc_rope_apply(x, n_head, dh, dh / 2, NC_ROPE_NEOX, col, col + q);
  nc_rope_apply(x + dh / 2, n_head, dh, dh / 2, NC_ROPE_NEOX, row, row + q);
}

static nc_code layer(void *st, nc_vit *v, int32_t il, nc_error *err) {
  bufs *b = st;
  const nucleus_mmproj *mm = b->mm;
  const nc_vit_layer *L = &mm->layers[il];
  const int32_t N = b->N;
  const int64_t E = mm->n_embd, F = mm->n_ff;
  const int32_t H = mm->n_head, dh = mm->n_embd / mm->n_head;
  rms(b->vb.x, L->ln1_w, L->ln1_b, b->vb.h, N, E, mm->eps);
  nc_code rc =
      clamped_matmul(v, b->vb.h, E, N, &L->wq, &L->cl_q, b->c, b->vb.q, E, err);
  if (rc == NC_OK)
    rc = clamped_matmul(v, b->vb.h, E, N, &L->wk, &L->cl_k, b->c, b->vb.k, E,
                        err);
  if (rc == NC_OK)
    rc = clamped_matmul(v, b->vb.h, E, N, &L->wv, &L->cl_v, b->c, b->vb.v, E,
                        err);
  if (rc != NC_OK) return rc;
  add_bias(b->vb.q, L->bq, N, E);
  add_bias(b->vb.k, L->bk, N, E);
  add_bias(b->vb.v, L->bv, N, E);
  head_norm(b->vb.q, L->q_norm, L->q_norm_n, N, H, dh, mm->eps);
  head_norm(b->vb.k, L->k_norm, L->k_norm_n, N, H, dh, mm->eps);
  const int64_t rs = (int64_t)dh / 2; /* cos/sin entries per patch */
  for (int32_t t = 0; t < N; t++) {
    rope_2d(b->vb.q + (int64_t)t * E, H, dh, b->pos + t * rs,
            b->pos + ((int64_t)N + t) * rs);
    rope_2d(b->vb.k + (int64_t)t * E, H, dh, b->pos + t * rs,
            b->pos + ((int64_t)N + t) * rs);
  }
  nc_vit_rmsnorm(b->vb.v, NULL, b->vb.v, N * H, dh, mm->eps);
  rc = nc_vit_attention(v, b->vb.q, b->vb.k, b->vb.v, b->vb.a, N, H, dh, 1.0f,
                        mm->flash, err);
  if (rc == NC_OK)
    rc = clamped_matmul(v, b->vb.a, E, N, &L->wo, &L->cl_o, b->c, b->vb.h, E,
                        err);
  if (rc != NC_OK) return rc;
  add_bias(b->vb.h, L->bo, N, E);
  if (L->attn_post_norm)
    rms(b->vb.h, L->attn_post_norm, NULL, b->vb.h, N, E, mm->eps);
  nc_vit_add(b->vb.x, b->vb.h, (int64_t)N * E);
  rms(b->vb.x, L->ln2_w, L->ln2_b, b->vb.h, N, E, mm->eps);
  rc = clamped_matmul(v, b->vb.h, E, N, &L->ffn_up, &L->cl_up, b->c, b->vb.f, F,
                      err);
  if (rc != NC_OK) return rc;
  add_bias(b->vb.f, L->ffn_up_b, N, F);
  if (L->ffn_gate.data) {
    rc = clamped_matmul(v, b->vb.h, E, N, &L->ffn_gate, &L->cl_gate, b->c, b->g,
                        F, err);
    if (rc != NC_OK) return rc;
    add_bias(b->g, L->ffn_gate_b, N, F);
  }
  float *act = L->ffn_gate.data ? b->g : b->vb.f;
  const int64_t nf = (int64_t)N * F;
  if (mm->act == NC_VIT_SILU && L->ffn_gate.data)
    nc_vit_swiglu(b->g, b->vb.f, N, F);
  else {
    if (mm->act == NC_VIT_GELU)
      nc_vit_gelu(v, act, nf);
    else if (mm->act == NC_VIT_GELU_QUICK)
      nc_vit_gelu_quick(v, act, nf);
    else
      for (int64_t i = 0; i < nf; i++) /* ggml_silu without a gate */
        act[i] = act[i] / (1.0f + nc_expf_ggml(-act[i]));
    if (L->ffn_gate.data)
      for (int64_t i = 0; i < nf; i++)
        act[i] *= b->vb.f[i];
  }
  rc = clamped_matmul(v, act, F, N, &L->ffn_down, &L->cl_down, b->c, b->vb.h, E,
                      err);
  if (rc != NC_OK) return rc;
  add_bias(b->vb.h, L->ffn_down_b, N, E);
  if (L->ffn_post_norm)
    rms(b->vb.h, L->ffn_post_norm, NULL, b->vb.h, N, E, mm->eps);
  nc_vit_add(b->vb.x, b->vb.h, (int64_t)N * E);
  if (L->out_scale)
    for (int32_t t = 0; t < N; t++)
      for (int64_t e = 0; e < E; e++)
        b->vb.x[t * E + e] *= L->out_scale[L->out_scale_n == 1 ? 0 : e];
  return NC_OK;
}

/* The RoPE tables: pos[t] the column's dh/2 (cos, sin: dh/4 each) of
 * patch t, pos[N + t] its row's. */
static void rope_tables(int32_t dh, int32_t pw, int32_t N, float *pos) {
  const nc_rope_params p = {.n_rot = dh / 2,
                            .freq_base = 100.0f,
                            .freq_scale = 1.0f,
                            .attn_factor = 1.0f};
  const int32_t q = dh / 4;
  float c[512], s[512];
  for (int32_t t = 0; t < N; t++) {
    const int32_t xy[2] = {t % pw, t / pw};
    for (int a = 0; a < 2; a++) {
      float *o = pos + ((int64_t)a * N + t) * (dh / 2);
      nc_rope_cache(xy[a], &p, NULL, c, s);
      memcpy(o, c, sizeof(float) * (size_t)q);
      memcpy(o + q, s, sizeof(float) * (size_t)q);
    }
  }
}

/* Rows of the pooled grid: the average of each K x K block (summed row by
 * row, then divided, as ggml_pool_2d), x sqrt(E), standardised. */
static void pool(const nucleus_mmproj *mm, const float *x, int32_t pw,
                 int32_t ph, float *out) {
  const int32_t K = mm->n_merge, ow = pw / K, oh = ph / K;
  const int64_t E = mm->n_embd;
  const float ka = (float)(K * K), scale = sqrtf((float)E);
  for (int32_t oy = 0; oy < oh; oy++)
    for (int32_t ox = 0; ox < ow; ox++) {
      float *o = out + ((int64_t)oy * ow + ox) * E;
      for (int64_t e = 0; e < E; e++) {
        float s = 0.0f;
        for (int32_t ky = 0; ky < K; ky++)
          for (int32_t kx = 0; kx < K; kx++)
            s += x[((int64_t)(oy * K + ky) * pw + ox * K + kx) * E + e];
        s /= ka;
        s *= scale;
        if (mm->std_bias) s = (s - mm->std_bias[e]) * mm->std_scale[e];
        o[e] = s;
      }
    }
}

static nc_code begin(const nucleus_mmproj *mm, const nucleus_image *image,
                     nc_vit *v, float *out, void **st, nc_error *err) {
  *st = NULL;
  const int32_t P = mm->patch_size;
  const int32_t dh = mm->n_embd / mm->n_head;
  int32_t W, Hh;
  nc_qwen_image_size(mm, image->width, image->height, &W, &Hh);
  const int32_t pw = W / P, ph = Hh / P, N = pw * ph;
  if (pw > mm->pos_size || ph > mm->pos_size)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "vision: the image's %d x %d patches exceed the projector's "
                   "%d positions a side",
                   (int)pw, (int)ph, (int)mm->pos_size);
  if (dh / 4 > 512)
    return nc_fail(err, NC_ERR_UNSUPPORTED, "vision: head size %d over 2048",
                   (int)dh);
  const int64_t E = mm->n_embd, F = mm->n_ff, CPP = 3 * (int64_t)P * P;
  const int64_t wide = F > E ? F : E;
  bufs *b = calloc(1, sizeof *b);
  *st = b;
  if (!b) return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  b->mm = mm;
  b->out = out;
  b->N = N;
  b->pw = pw;
  b->ph = ph;
  nc_code rc = nc_vit_bufs_alloc(&b->vb, W, Hh, P, E, F, err);
  if (rc == NC_OK) {
    b->g = malloc((size_t)N * F * sizeof *b->g);
    b->c = malloc((size_t)N * wide * sizeof *b->c);
    b->pos = malloc((size_t)2 * N * (dh / 2) * sizeof *b->pos);
    if (!b->g || !b->c || !b->pos)
      rc = nc_fail(err, NC_ERR_NOMEM, "vision: out of memory for %d patches",
                   (int)N);
  }
  uint8_t *fit = b->vb.rgb;
  float *img = b->vb.img;
  if (rc == NC_OK)
    rc = nc_image_fit(image->rgb, image->width, image->height, fit, W, Hh,
                      NC_RESIZE_BICUBIC, err);
  if (rc == NC_OK) {
    const int64_t n = (int64_t)3 * W * Hh;
    nc_image_normalize(fit, (int64_t)W * Hh, mm->mean, mm->std, img);
    for (int64_t i = 0; i < n; i++) /* ggml_scale_bias(x, 2, -1) */
      img[i] = img[i] * 2.0f + -1.0f;
    nc_vit_patches(img, W, P, pw, ph, b->vb.in);
    rc = nc_vit_matmul(v, b->vb.in, CPP, N, &mm->patch_embd, NULL, b->vb.x, E,
                       err);
  }
  if (rc == NC_OK) {
    const float *tx = mm->pos_embd, *ty = mm->pos_embd + mm->pos_size * E;
    for (int32_t t = 0; t < N; t++)
      nc_vit_add(b->vb.x + (int64_t)t * E, tx + (int64_t)(t % pw) * E, E);
    for (int32_t t = 0; t < N; t++)
      nc_vit_add(b->vb.x + (int64_t)t * E, ty + (int64_t)(t / pw) * E, E);
    rope_tables(dh, pw, N, b->pos);
    if (mm->pre_ln_w)
      rms(b->vb.x, mm->pre_ln_w, mm->pre_ln_b, b->vb.x, N, E, mm->eps);
  }
  nc_vit_bufs_drop_image(&b->vb);
  return rc;
}

static nc_code finish(void *st, nc_vit *v, nc_error *err) {
  bufs *b = st;
  const nucleus_mmproj *mm = b->mm;
  const int32_t K = mm->n_merge, rows = (b->pw / K) * (b->ph / K);
  const int64_t E = mm->n_embd;
  if (mm->post_ln_w)
    rms(b->vb.x, mm->post_ln_w, mm->post_ln_b, b->vb.x, b->N, E, mm->eps);
  pool(mm, b->vb.x, b->pw, b->ph, b->vb.h);
  nc_vit_rmsnorm(b->vb.h, NULL, b->vb.h, rows, E, mm->eps);
  return clamped_matmul(v, b->vb.h, E, rows, &mm->input_proj, &mm->cl_proj,
                        b->c, b->out, mm->n_embd_text, err);
}

const nc_encoder nc_encoder_gemma4v = {begin,      layer, finish,
                                       free_state, NULL,  NULL};
