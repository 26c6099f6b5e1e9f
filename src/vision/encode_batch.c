/* encode_batch: a vision layer of several encodes at once (encode.h's
 * layer_batch; mmproj_job.c's nc_mmproj_jobs_run drives it). The patches'
 * rows of all the images go through each weight product in one
 * nc_vit_matmul: the kernels give each value the bits of that row alone,
 * whatever the rows beside it (kernels.h, "Batch invariance": gemm,
 * vec_dot_rows and vec_dot agree). What mixes an image's rows, the
 * attention, runs per image; what goes row by row (the norms, RoPE, the
 * residual adds) on each image's own rows, the GELU over all of them.
 * These are the encoders' layers themselves (an encode alone runs them
 * with n = 1 in its own scratch: encode_gemma3.c, encode_qwen3vl.c), so
 * each image's rows are the bits of its encode alone
 * (tests/unit/test_mmproj_batch.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "kernels/ops.h"
#include "vit.h"

struct nc_mmproj_batch {
  const nucleus_mmproj *mm;
  nc_vit vit;       /* the products' scratch (the activation rows quantized) */
  int64_t cap;      /* the patches' rows s holds */
  nc_enc_scratch s; /* for cap rows (encode.h) */
};

static bool fused(const nucleus_mmproj *mm) {
  return mm->projector == NC_PROJECTOR_QWEN3VL;
}

static void free_bufs(nc_mmproj_batch *b) {
  nc_enc_scratch *s = &b->s;
  float *all[] = {s->h, s->q, s->k, s->vv, s->a, s->f, s->qkv, s->m, s->t};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]);
  *s = (nc_enc_scratch){0};
  b->cap = 0;
}

nc_code nc_mmproj_batch_new(const nucleus_mmproj *mm, nc_mmproj_batch **out,
                            nc_error *err) {
  *out = NULL;
  nc_mmproj_batch *b = calloc(1, sizeof *b);
  if (!b) return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  b->mm = mm;
  nc_code rc = nc_vit_init(&b->vit, mm->kern, NULL, err);
  if (rc != NC_OK) {
    free(b);
    return rc;
  }
  *out = b;
  return NC_OK;
}

void nc_mmproj_batch_free(nc_mmproj_batch *b) {
  if (!b) return;
  nc_vit_free(&b->vit);
  free_bufs(b);
  free(b);
}

void nc_mmproj_batch_set_pool(nc_mmproj_batch *b, nc_threadpool *tp) {
  nc_vit_set_pool(&b->vit, tp);
}

/* Buffers for R rows. */
static nc_code reserve(nc_mmproj_batch *b, int64_t R, nc_error *err) {
  if (R <= b->cap) return NC_OK;
  free_bufs(b);
  const nucleus_mmproj *mm = b->mm;
  const size_t r = (size_t)R, E = (size_t)mm->n_embd, F = (size_t)mm->n_ff;
  const size_t T = (size_t)mm->n_embd_text, fl = sizeof(float);
  nc_enc_scratch *s = &b->s;
  bool ok = (s->h = malloc(r * E * fl)) && (s->q = malloc(r * E * fl)) &&
            (s->k = malloc(r * E * fl)) && (s->vv = malloc(r * E * fl)) &&
            (s->a = malloc(r * E * fl)) &&
            (s->f = malloc(r * (F > E ? F : E) * fl));
  if (ok && fused(mm))
    ok = (s->qkv = malloc(r * 3 * E * fl)) && (s->m = malloc(r * E * fl)) &&
         (s->t = malloc((r / 4 + 1) * T * fl));
  if (!ok) {
    free_bufs(b);
    return nc_fail(err, NC_ERR_NOMEM,
                   "vision: out of memory for a batch of %lld patches",
                   (long long)R);
  }
  b->cap = R;
  return NC_OK;
}

/* The rows of the n images together (each below INT32_MAX / n). */
static int32_t total_rows(const nc_enc_rows *rows, int32_t n) {
  int32_t R = 0;
  for (int32_t i = 0; i < n; i++)
    R += rows[i].N;
  return R;
}

/* out (the rows together) = norm(x) of each image's rows. */
static void norm_each(nc_vit *v, const nucleus_mmproj *mm,
                      const nc_enc_rows *rows, int32_t n, const float *w,
                      const float *bias, float *out) {
  const int64_t E = mm->n_embd;
  int64_t off = 0;
  for (int32_t i = 0; i < n; i++) {
    nc_vit_layernorm(v, rows[i].x, w, bias, out + off * E, rows[i].N, E,
                     mm->eps);
    off += rows[i].N;
  }
}

/* Each image's x += its rows of h. */
static void residual_each(nc_vit *v, const nucleus_mmproj *mm,
                          const nc_enc_rows *rows, int32_t n, const float *h) {
  const int64_t E = mm->n_embd;
  int64_t off = 0;
  for (int32_t i = 0; i < n; i++) {
    nc_vit_add_par(v, rows[i].x, h + off * E, (int64_t)rows[i].N * E);
    off += rows[i].N;
  }
}

/* The attention of each image over its own rows (q, k, vv -> a). */
static nc_code attention_each(nc_vit *v, const nc_enc_scratch *s,
                              const nucleus_mmproj *mm, const nc_enc_rows *rows,
                              int32_t n, nc_error *err) {
  const int64_t E = mm->n_embd;
  const int32_t dh = mm->n_embd / mm->n_head;
  int64_t off = 0;
  for (int32_t i = 0; i < n; i++) {
    const int64_t o = off * E;
    nc_code rc = nc_vit_attention(v, s->q + o, s->k + o, s->vv + o, s->a + o,
                                  rows[i].N, mm->n_head, dh,
                                  1.0f / sqrtf((float)dh), mm->flash, err);
    if (rc != NC_OK) return rc;
    off += rows[i].N;
  }
  return NC_OK;
}

/* The attention's out product, the residual, the MLP (LayerNorm, up, GELU,
 * down) and its residual: the second half of both layers. */
static nc_code out_and_mlp(nc_vit *v, const nc_enc_scratch *s,
                           const nucleus_mmproj *mm, const nc_vit_layer *L,
                           const nc_enc_rows *rows, int32_t n, int32_t R,
                           nc_error *err) {
  const int64_t E = mm->n_embd, F = mm->n_ff;
  nc_code rc = nc_vit_matmul(v, s->a, E, R, &L->wo, L->bo, s->h, E, err);
  if (rc != NC_OK) return rc;
  residual_each(v, mm, rows, n, s->h);
  norm_each(v, mm, rows, n, L->ln2_w, L->ln2_b, s->h);
  rc = nc_vit_matmul(v, s->h, E, R, &L->ffn_up, L->ffn_up_b, s->f, F, err);
  if (rc != NC_OK) return rc;
  nc_vit_gelu(v, s->f, (int64_t)R * F);
  rc = nc_vit_matmul(v, s->f, F, R, &L->ffn_down, L->ffn_down_b, s->h, E, err);
  if (rc != NC_OK) return rc;
  residual_each(v, mm, rows, n, s->h);
  return NC_OK;
}

nc_code nc_enc_layer_siglip(nc_vit *v, const nc_enc_scratch *s,
                            const nucleus_mmproj *mm, const nc_enc_rows *rows,
                            int32_t n, int32_t il, nc_error *err) {
  const nc_vit_layer *L = &mm->layers[il];
  const int64_t E = mm->n_embd;
  const int32_t R = total_rows(rows, n);
  norm_each(v, mm, rows, n, L->ln1_w, L->ln1_b, s->h);
  nc_code rc = nc_vit_matmul(v, s->h, E, R, &L->wq, L->bq, s->q, E, err);
  if (rc == NC_OK)
    rc = nc_vit_matmul(v, s->h, E, R, &L->wk, L->bk, s->k, E, err);
  if (rc == NC_OK)
    rc = nc_vit_matmul(v, s->h, E, R, &L->wv, L->bv, s->vv, E, err);
  if (rc == NC_OK) rc = attention_each(v, s, mm, rows, n, err);
  if (rc == NC_OK) rc = out_and_mlp(v, s, mm, L, rows, n, R, err);
  return rc;
}

typedef nc_code (*enc_layer_fn)(nc_vit *v, const nc_enc_scratch *s,
                                const nucleus_mmproj *mm,
                                const nc_enc_rows *rows, int32_t n, int32_t il,
                                nc_error *err);

/* layer over the n encodes' rows in b's scratch, grown to their sum. */
static nc_code in_batch(enc_layer_fn layer, nc_mmproj_batch *b,
                        const nucleus_mmproj *mm, const nc_enc_rows *rows,
                        int32_t n, int32_t il, nc_error *err) {
  nc_code rc = reserve(b, total_rows(rows, n), err);
  if (rc != NC_OK) return rc;
  return layer(&b->vit, &b->s, mm, rows, n, il, err);
}

nc_code nc_enc_layer_batch_siglip(nc_mmproj_batch *b, const nucleus_mmproj *mm,
                                  const nc_enc_rows *rows, int32_t n,
                                  int32_t il, nc_error *err) {
  return in_batch(nc_enc_layer_siglip, b, mm, rows, n, il, err);
}

/* Qwen3-VL's DeepStack tap after layer L: each image's blocks of 4 patches
 * as rows of 4 n_embd, LayerNorm, fc1, GELU, fc2, into the image's next
 * tap slice (encode_qwen3vl.c's merger). */
static nc_code tap(nc_vit *v, const nc_enc_scratch *s, const nucleus_mmproj *mm,
                   const nc_vit_layer *L, const nc_enc_rows *rows, int32_t n,
                   int32_t R, nc_error *err) {
  const int64_t E = mm->n_embd, M = 4 * E, T = mm->n_embd_text;
  const int64_t stride = T * (1 + mm->n_deepstack);
  int64_t off = 0;
  for (int32_t i = 0; i < n; i++) { /* the blocks: each image's N / 4 */
    if (L->ds_norm_w)
      nc_vit_layernorm(v, rows[i].x, L->ds_norm_w, L->ds_norm_b, s->m + off * E,
                       rows[i].N / 4, M, mm->eps);
    else
      memcpy(s->m + off * E, rows[i].x,
             sizeof(float) * (size_t)rows[i].N * (size_t)E);
    off += rows[i].N;
  }
  nc_code rc =
      nc_vit_matmul(v, s->m, M, R / 4, &L->ds_fc1, L->ds_fc1_b, s->f, M, err);
  if (rc != NC_OK) return rc;
  nc_vit_gelu(v, s->f, (int64_t)(R / 4) * M);
  rc = nc_vit_matmul(v, s->f, M, R / 4, &L->ds_fc2, L->ds_fc2_b, s->t, T, err);
  if (rc != NC_OK) return rc;
  int64_t blk = 0;
  for (int32_t i = 0; i < n; i++) {
    const int32_t tp = ++*rows[i].tap;
    for (int32_t j = 0; j < rows[i].N / 4; j++)
      memcpy(rows[i].out + T * tp + j * stride, s->t + (blk + j) * T,
             sizeof(float) * (size_t)T);
    blk += rows[i].N / 4;
  }
  return NC_OK;
}

nc_code nc_enc_layer_qwen3vl(nc_vit *v, const nc_enc_scratch *s,
                             const nucleus_mmproj *mm, const nc_enc_rows *rows,
                             int32_t n, int32_t il, nc_error *err) {
  const nc_vit_layer *L = &mm->layers[il];
  const int64_t E = mm->n_embd;
  const int32_t H = mm->n_head, dh = mm->n_embd / mm->n_head;
  const int32_t R = total_rows(rows, n);
  norm_each(v, mm, rows, n, L->ln1_w, L->ln1_b, s->h);
  nc_code rc =
      nc_vit_matmul(v, s->h, E, R, &L->wqkv, L->bqkv, s->qkv, 3 * E, err);
  if (rc != NC_OK) return rc;
  int64_t g = 0; /* the rows' first, of image i */
  for (int32_t i = 0; i < n; i++) {
    nc_vit_split_qkv_rope(v, s->qkv + g * 3 * E, s->q + g * E, s->k + g * E,
                          s->vv + g * E, rows[i].N, E, H, dh, rows[i].cs,
                          rows[i].sn);
    g += rows[i].N;
  }
  rc = attention_each(v, s, mm, rows, n, err);
  if (rc == NC_OK) rc = out_and_mlp(v, s, mm, L, rows, n, R, err);
  if (rc == NC_OK && L->ds_fc1.data) rc = tap(v, s, mm, L, rows, n, R, err);
  return rc;
}

nc_code nc_enc_layer_batch_qwen3vl(nc_mmproj_batch *b, const nucleus_mmproj *mm,
                                   const nc_enc_rows *rows, int32_t n,
                                   int32_t il, nc_error *err) {
  return in_batch(nc_enc_layer_qwen3vl, b, mm, rows, n, il, err);
}
