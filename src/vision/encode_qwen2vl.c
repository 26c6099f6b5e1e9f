/* encode_qwen2vl: Qwen2-VL's and Qwen2.5-VL's vision towers and merger in
 * llama.cpp's order (tools/mtmd/models/qwen2vl.cpp, clip.cpp's inputs):
 *
 * 1. The smart resize and bicubic fit of Qwen3-VL (nc_qwen_image_size),
 *    x / 255, (x - mean) / std.
 * 2. Patches: both temporal kernels on the still image, summed (each an
 *    F16 convolution), in merge order; no bias, no learned positions;
 *    pre_ln when the file has one.
 * 3. Qwen2.5-VL with windows: the 2 x 2 blocks regrouped window by window
 *    (windows of attn_window x attn_window blocks, row by row; each window's
 *    blocks row by row: llama.cpp's inv_window_idx), the RoPE positions
 *    following their patches.
 * 4. Layers: norm (LayerNorm in 2, RMS norm in 2.5: weight, then bias when
 *    the file has one), Q K V (biased), 2-D RoPE as Qwen3-VL's, attention
 *    over the whole image on layers il with (il + 1) % n_wa_pattern == 0
 *    (every layer without windows), else within the row's window; out,
 *    residual; norm, the MLP (up, then quick GELU or GELU; or SiLU(gate) x
 *    up), down, residual.
 * 5. post_ln (when present), blocks as rows of 4 n_embd, mm.0, GELU, mm.2;
 *    the rows put back in block order (window_idx). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "image.h"
#include "image_resize.h"
#include "kernels/ops.h"
#include "qwen_patches.h"
#include "vit.h"

/* An encode's state: the patches' rows, the layers' scratch, the working
 * order of the blocks. */
typedef struct bufs {
  const nucleus_mmproj *mm;
  float *out;
  int32_t N; /* patches */
  float *x, *h, *q, *k, *v, *a, *f, *g, *in, *m, *cs, *sn;
  int32_t *order;     /* [N / 4]: the block each working block is */
  int32_t *klo, *khi; /* [N]: each row's window of keys */
} bufs;

static void free_state(void *st) {
  bufs *b = st;
  if (!b) return;
  float *all[] = {b->x, b->h, b->q,  b->k, b->v,  b->a,
                  b->f, b->g, b->in, b->m, b->cs, b->sn};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]);
  free(b->order);
  free(b->klo);
  free(b->khi);
  free(b);
}

/* The working order of the mx x my blocks and each row's key range: with
 * windows of w blocks a side, windows row by row, each one's blocks row by
 * row, and its rows [4 first block, 4 end block); without, the blocks as
 * they are and every row seeing every row. */
static void windows(int32_t mx, int32_t my, int32_t w, bufs *b) {
  const int32_t n = mx * my;
  if (w <= 0) {
    for (int32_t i = 0; i < n; i++)
      b->order[i] = i;
    return;
  }
  int32_t dst = 0;
  for (int32_t y = 0; y < my; y += w)
    for (int32_t x = 0; x < mx; x += w) {
      const int32_t wh = my - y < w ? my - y : w, ww = mx - x < w ? mx - x : w;
      const int32_t first = dst;
      for (int32_t dy = 0; dy < wh; dy++)
        for (int32_t dx = 0; dx < ww; dx++)
          b->order[dst++] = (y + dy) * mx + (x + dx);
      for (int32_t r = 4 * first; r < 4 * dst; r++) {
        b->klo[r] = 4 * first;
        b->khi[r] = 4 * dst;
      }
    }
}

static void norm(const nucleus_mmproj *mm, const nc_vit *v, const float *x,
                 const float *w, const float *bias, float *y, int32_t N) {
  const int64_t E = mm->n_embd;
  if (mm->projector == NC_PROJECTOR_QWEN25VL) {
    nc_vit_rmsnorm(x, w, y, N, E, mm->eps);
    if (bias)
      for (int32_t r = 0; r < N; r++)
        nc_vit_add(y + (int64_t)r * E, bias, E);
  } else {
    nc_vit_layernorm(v, x, w, bias, y, N, E, mm->eps);
  }
}

static nc_code mlp(const nucleus_mmproj *mm, nc_vit *v, const nc_vit_layer *L,
                   bufs *b, int32_t N, nc_error *err) {
  const int64_t E = mm->n_embd, F = mm->n_ff;
  nc_code rc =
      nc_vit_matmul(v, b->h, E, N, &L->ffn_up, L->ffn_up_b, b->f, F, err);
  if (rc != NC_OK) return rc;
  if (mm->act == NC_VIT_SILU) {
    rc =
        nc_vit_matmul(v, b->h, E, N, &L->ffn_gate, L->ffn_gate_b, b->g, F, err);
    if (rc != NC_OK) return rc;
    nc_vit_swiglu(b->g, b->f, N, F);
    return nc_vit_matmul(v, b->g, F, N, &L->ffn_down, L->ffn_down_b, b->h, E,
                         err);
  }
  if (mm->act == NC_VIT_GELU)
    nc_vit_gelu(v, b->f, (int64_t)N * F);
  else
    nc_vit_gelu_quick(v, b->f, (int64_t)N * F);
  return nc_vit_matmul(v, b->f, F, N, &L->ffn_down, L->ffn_down_b, b->h, E,
                       err);
}

static nc_code layer(void *st, nc_vit *v, int32_t il, nc_error *err) {
  bufs *b = st;
  const nucleus_mmproj *mm = b->mm;
  const int32_t N = b->N;
  const nc_vit_layer *L = &mm->layers[il];
  const int64_t E = mm->n_embd;
  const int32_t H = mm->n_head, dh = mm->n_embd / mm->n_head;
  const bool full = mm->n_wa_pattern == 0 || (il + 1) % mm->n_wa_pattern == 0;
  norm(mm, v, b->x, L->ln1_w, L->ln1_b, b->h, N);
  nc_code rc = nc_vit_matmul(v, b->h, E, N, &L->wq, L->bq, b->q, E, err);
  if (rc == NC_OK)
    rc = nc_vit_matmul(v, b->h, E, N, &L->wk, L->bk, b->k, E, err);
  if (rc == NC_OK)
    rc = nc_vit_matmul(v, b->h, E, N, &L->wv, L->bv, b->v, E, err);
  if (rc != NC_OK) return rc;
  for (int32_t t = 0; t < N; t++) {
    const int64_t o = (int64_t)t * (dh / 2);
    nc_rope_apply(b->q + (int64_t)t * E, H, dh, dh, NC_ROPE_NEOX, b->cs + o,
                  b->sn + o);
    nc_rope_apply(b->k + (int64_t)t * E, H, dh, dh, NC_ROPE_NEOX, b->cs + o,
                  b->sn + o);
  }
  rc = nc_vit_attention_ranges(v, b->q, b->k, b->v, b->a, N, H, dh,
                               1.0f / sqrtf((float)dh), mm->flash,
                               full ? NULL : b->klo, full ? NULL : b->khi, err);
  if (rc == NC_OK)
    rc = nc_vit_matmul(v, b->a, E, N, &L->wo, L->bo, b->h, E, err);
  if (rc != NC_OK) return rc;
  nc_vit_add(b->x, b->h, (int64_t)N * E);
  norm(mm, v, b->x, L->ln2_w, L->ln2_b, b->h, N);
  rc = mlp(mm, v, L, b, N, err);
  if (rc != NC_OK) return rc;
  nc_vit_add(b->x, b->h, (int64_t)N * E);
  return NC_OK;
}

static nc_code alloc_bufs(const nucleus_mmproj *mm, int32_t N, bufs *b,
                          nc_error *err) {
  const int64_t E = mm->n_embd, F = mm->n_ff, T = mm->n_embd_text;
  const int64_t CPP = 3 * (int64_t)mm->patch_size * mm->patch_size;
  const int64_t M = 4 * E, dh = E / mm->n_head;
  const int64_t wide = F > M ? F : M;
  b->in = malloc((size_t)N * CPP * sizeof *b->in);
  b->x = malloc((size_t)N * E * sizeof *b->x);
  b->h = malloc((size_t)N * (E > T ? E : T) * sizeof *b->h);
  b->q = malloc((size_t)N * E * sizeof *b->q);
  b->k = malloc((size_t)N * E * sizeof *b->k);
  b->v = malloc((size_t)N * E * sizeof *b->v);
  b->a = malloc((size_t)N * E * sizeof *b->a);
  b->f = malloc((size_t)N * wide * sizeof *b->f);
  b->g = malloc((size_t)N * F * sizeof *b->g);
  b->m = malloc((size_t)(N / 4) * T * sizeof *b->m);
  b->cs = malloc((size_t)N * (dh / 2) * sizeof *b->cs);
  b->sn = malloc((size_t)N * (dh / 2) * sizeof *b->sn);
  b->order = malloc((size_t)(N / 4) * sizeof *b->order);
  b->klo = malloc((size_t)N * sizeof *b->klo);
  b->khi = malloc((size_t)N * sizeof *b->khi);
  if (!b->in || !b->x || !b->h || !b->q || !b->k || !b->v || !b->a || !b->f ||
      !b->g || !b->m || !b->cs || !b->sn || !b->order || !b->klo || !b->khi)
    return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory for %d patches",
                   (int)N);
  if (dh / 2 > 512)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "vision: head size %d over the 1024 the 2-D RoPE takes",
                   (int)dh);
  return NC_OK;
}

/* The patches of the normalised W-wide image in working order ((channel,
 * y, x) within each) and their RoPE tables. */
static void patches(const nucleus_mmproj *mm, const float *img, int32_t W,
                    int32_t pw, int32_t N, bufs *b) {
  const int32_t P = mm->patch_size, dh = mm->n_embd / mm->n_head;
  const int64_t CPP = 3 * (int64_t)P * P;
  for (int32_t r = 0; r < N; r++) {
    int32_t py, px;
    nc_qwen_merge_order(b->order[r / 4] * 4 + r % 4, pw, &py, &px);
    float *row = b->in + (int64_t)r * CPP;
    for (int c = 0; c < 3; c++)
      for (int32_t ky = 0; ky < P; ky++)
        for (int32_t kx = 0; kx < P; kx++)
          row[((int64_t)c * P + ky) * P + kx] =
              img[(((int64_t)py * P + ky) * W + px * P + kx) * 3 + c];
    nc_qwen_vision_rope(dh, py, px, b->cs + (int64_t)r * (dh / 2),
                        b->sn + (int64_t)r * (dh / 2));
  }
}

static nc_code begin(const nucleus_mmproj *mm, const nucleus_image *image,
                     nc_vit *v, float *out, void **st, nc_error *err) {
  int32_t W, Hh;
  nc_qwen_image_size(mm, image->width, image->height, &W, &Hh);
  const int32_t P = mm->patch_size, pw = W / P, ph = Hh / P, N = pw * ph;
  const int64_t E = mm->n_embd;
  const int64_t CPP = 3 * (int64_t)P * P;
  bufs *b = calloc(1, sizeof *b);
  *st = b;
  if (!b) return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  b->mm = mm;
  b->out = out;
  b->N = N;
  uint8_t *rgb = malloc((size_t)3 * W * Hh);
  float *img = malloc((size_t)3 * W * Hh * sizeof *img);
  nc_code rc = alloc_bufs(mm, N, b, err);
  if (rc == NC_OK && (!rgb || !img))
    rc = nc_fail(err, NC_ERR_NOMEM, "vision: out of memory for a %d x %d image",
                 (int)W, (int)Hh);
  if (rc == NC_OK)
    rc = nc_image_fit(image->rgb, image->width, image->height, rgb, W, Hh,
                      NC_RESIZE_BICUBIC, err);
  if (rc == NC_OK) {
    nc_image_normalize(rgb, (int64_t)W * Hh, mm->mean, mm->std, img);
    windows(pw / 2, ph / 2, mm->n_wa_pattern > 0 ? mm->attn_window : 0, b);
    patches(mm, img, W, pw, N, b);
    rc = nc_vit_matmul(v, b->in, CPP, N, &mm->patch_embd, NULL, b->x, E, err);
  }
  if (rc == NC_OK)
    rc = nc_vit_matmul(v, b->in, CPP, N, &mm->patch_embd_1, NULL, b->h, E, err);
  if (rc == NC_OK) {
    nc_vit_add(b->x, b->h, (int64_t)N * E);
    if (mm->pre_ln_w) norm(mm, v, b->x, mm->pre_ln_w, mm->pre_ln_b, b->x, N);
  }
  free(rgb);
  free(img);
  return rc;
}

static nc_code finish(void *st, nc_vit *v, nc_error *err) {
  bufs *b = st;
  const nucleus_mmproj *mm = b->mm;
  const int32_t N = b->N;
  const int64_t E = mm->n_embd, T = mm->n_embd_text, M = 4 * E;
  if (mm->post_ln_w) norm(mm, v, b->x, mm->post_ln_w, mm->post_ln_b, b->x, N);
  nc_code rc =
      nc_vit_matmul(v, b->x, M, N / 4, &mm->mm0, mm->mm0_b, b->f, M, err);
  if (rc == NC_OK) {
    nc_vit_gelu(v, b->f, (int64_t)(N / 4) * M);
    rc = nc_vit_matmul(v, b->f, M, N / 4, &mm->mm2, mm->mm2_b, b->m, T, err);
  }
  if (rc == NC_OK)
    for (int32_t r = 0; r < N / 4; r++)
      memcpy(b->out + (int64_t)b->order[r] * T, b->m + (int64_t)r * T,
             sizeof(float) * T);
  return rc;
}

const nc_encoder nc_encoder_qwen2vl = {begin,      layer, finish,
                                       free_state, NULL,  NULL};
