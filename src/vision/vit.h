/* vit: the pieces vision encoders are built from (a ViT's layers in
 * llama.cpp's clip graph order), over the language model's kernel table and
 * a thread pool. A nc_vit holds the scratch of one encode call. */
#ifndef NC_VIT_H
#define NC_VIT_H

#include <stdint.h>

#include "base/threadpool.h"
#include "kernels/kernels.h"
#include "model/model.h"

typedef struct nc_vit {
  const nc_kernels *kern;
  nc_threadpool *tp;         /* NULL: the caller's thread alone */
  const nc_ops_kernels *ops; /* the table's row ops, or NULL */
  /* [NC_GELU_TABLE_ENTRIES]: ggml's GELU table (half -> half) */
  nc_fp16 *gelu;
  nc_fp16 *gelu_quick; /* [65536]: ggml's quick-GELU table */
  uint8_t *qact;       /* activation rows in a weight's vec_dot type */
  size_t qact_cap;
  /* the table's shared layout of qact's rows (kernels.h's pack_act), kept
   * across the matmuls of an encode: the F16 gemm's widened rows, once a
   * matmul, not once per thread and call */
  uint8_t *packed;
  size_t packed_cap;
  float *scores;      /* per thread: one row of attention scores */
  int64_t scores_cap; /* floats per thread */
  /* flash attention (nc_vit_attention with flash): the kernels, half ->
   * float, K and V rounded to F16 */
  const nc_attn_flash_kernels *flash;
  float *f16tab;
  nc_fp16 *k16, *v16;
  size_t kv16_cap;
} nc_vit;

nc_code nc_vit_init(nc_vit *v, const nc_kernels *kern, nc_threadpool *tp,
                    nc_error *err);
void nc_vit_free(nc_vit *v);
/* The pool the next calls run on (NULL: the caller's thread): a scratch
 * kept across calls on another pool (an encode sliced over steps) gets its
 * per-thread parts sized again. */
void nc_vit_set_pool(nc_vit *v, nc_threadpool *tp);

/* The rows of one encode over the n = (w / patch) x (h / patch) patches
 * of an image fitted to w x h: the image's bytes (rgb: 3 w h) and its
 * normalised values (img: 3 w h floats), the patch vectors (in: [n, 3 patch
 * patch]), the residual stream and the attention's rows (x, h, q, k, v, a:
 * [n, n_embd]), the MLP's (f: [n, n_ff]). */
typedef struct nc_vit_bufs {
  uint8_t *rgb;
  float *img, *in, *x, *h, *q, *k, *v, *a, *f;
} nc_vit_bufs;

/* All of them, or none and an out-of-memory error naming the patches. */
nc_code nc_vit_bufs_alloc(nc_vit_bufs *b, int32_t w, int32_t h, int32_t patch,
                          int64_t n_embd, int64_t n_ff, nc_error *err);
void nc_vit_bufs_free(nc_vit_bufs *b);
/* rgb and img freed (NULL): an encode's later parts need only the rows. */
void nc_vit_bufs_drop_image(nc_vit_bufs *b);

/* The patch vectors of a pw x ph grid of patches of P x P over an image W
 * pixels wide (3 floats a pixel): row (py, px) holds its 3 x P x P values in
 * (channel, y, x) order, as ggml's im2col lays out a conv's inputs. */
void nc_vit_patches(const float *img, int32_t W, int32_t P, int32_t pw,
                    int32_t ph, float *out);

/* y[r] = x[r] W^T (+ b) for rows r of x (ne0 floats each, x_stride apart),
 * y rows ne1 floats (y_stride apart): the activation rows quantized to the
 * weight's vec_dot type (as ggml_mul_mat), threads splitting W's rows. */
nc_code nc_vit_matmul(nc_vit *v, const float *x, int64_t x_stride, int32_t rows,
                      const nc_weight *w, const float *b, float *y,
                      int64_t y_stride, nc_error *err);

/* ggml_norm (+ weight, + bias) per row of n: mean and variance summed in
 * double, scale 1/sqrtf(var + eps). w, b may be NULL. y may alias x. The
 * rows split over v's threads. */
void nc_vit_layernorm(const nc_vit *v, const float *x, const float *w,
                      const float *b, float *y, int32_t rows, int64_t n,
                      float eps);
/* ggml_rms_norm (x w) per row of n. */
void nc_vit_rmsnorm(const float *x, const float *w, float *y, int32_t rows,
                    int64_t n, float eps);
/* y = gelu(y) as ggml_gelu on the CPU: 0 at or below -10, y at or above 10,
 * else the table's half of gelu-tanh at the half of y (split over v's
 * threads). */
void nc_vit_gelu(const nc_vit *v, float *y, int64_t n);
/* y = gelu_quick(y) as ggml_gelu_quick on the CPU: the table's half of
 * x sigmoid(1.702 x) at the half of y. */
void nc_vit_gelu_quick(const nc_vit *v, float *y, int64_t n);
/* gate = silu(gate) * up, rows of n, as ggml_swiglu_split (nc_swiglu). */
void nc_vit_swiglu(float *gate, const float *up, int32_t rows, int64_t n);
/* y += x */
void nc_vit_add(float *y, const float *x, int64_t n);
/* nc_vit_add split over v's threads (each value its own: the same sums). */
void nc_vit_add_par(const nc_vit *v, float *y, const float *x, int64_t n);
/* Rows of a fused Q K V product (3 E floats each) into q, k and vv (E
 * each), q's and k's H heads of dh rotated by the 2-D RoPE (NEOX pairs,
 * row t's cos and sin at cs, sn + t dh / 2), over v's threads (each row
 * its own: the same bits at any count). */
void nc_vit_split_qkv_rope(const nc_vit *v, const float *qkv, float *q,
                           float *k, float *vv, int32_t rows, int64_t E,
                           int32_t H, int32_t dh, const float *cs,
                           const float *sn);
/* fn(arg, lo, hi) over [0, n) cut in parts of whole runs of unit (the last
 * run short), one part per thread of v (the caller alone without a pool):
 * for row loops whose rows are each their own. */
typedef void (*nc_vit_range_fn)(void *arg, int64_t lo, int64_t hi);
void nc_vit_parallel(const nc_vit *v, int64_t n, int64_t unit,
                     nc_vit_range_fn fn, void *arg);

/* Attention of every row over every row (no mask), per head: softmax(q k^T
 * * scale) v. q, k, vv, out: [rows, n_head * head_dim]. Without flash as
 * ggml's mul_mat + soft_max_ext + mul_mat (F32); with flash as llama.cpp's
 * clip graph with flash attention (its CPU default): K and V cast to F16,
 * ggml_flash_attn_ext's tiled path for 64 rows or more (q in F32, keys in
 * tiles of 64), its one-row path below (q rounded to F16) (attn_flash.h). */
nc_code nc_vit_attention(nc_vit *v, const float *q, const float *k,
                         const float *vv, float *out, int32_t rows,
                         int32_t n_head, int32_t head_dim, float scale,
                         bool flash, nc_error *err);
/* The same with row i attending to keys [klo[i], khi[i]) only (a window
 * mask of 0 inside, -inf outside, as llama.cpp's; each range non-empty):
 * without flash the softmax over the range; with flash, key tiles no row
 * of a query tile sees skipped and the one-row path over the range only,
 * as ggml's flash_attn_ext passes over -inf mask entries. */
nc_code nc_vit_attention_ranges(nc_vit *v, const float *q, const float *k,
                                const float *vv, float *out, int32_t rows,
                                int32_t n_head, int32_t head_dim, float scale,
                                bool flash, const int32_t *klo,
                                const int32_t *khi, nc_error *err);

#endif
