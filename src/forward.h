/* forward: the primitives a forward graph (arch_*.c) is built from,
 * implemented by context.c over its scratch buffers, thread pool and KV
 * cache (the nc_fwd state below). Every primitive computes each output value
 * in a fixed order that depends only on its own row, so results are
 * batch-invariant. */
#ifndef NC_FORWARD_H
#define NC_FORWARD_H

#include <stdint.h>

#include "batch.h"
#include "kernels/attn_flash.h"
#include "kernels/attn_kernel.h"
#include "kernels/ops.h"
#include "kv_cache.h"
#include "model.h"
#include "threadpool.h"

/* Scratch rows for up to max_batch_tokens entries (row-major, one row per
 * batch entry). */
typedef struct nc_fwd_bufs {
  float *x;    /* [T, n_embd] residual stream */
  float *xn;   /* [T, max(n_embd, n_head * head_dim_v)] normed / scratch */
  float *q;    /* [T, n_head * head_dim] */
  float *k;    /* [T, n_head_kv * head_dim] */
  float *v;    /* [T, n_head_kv * head_dim_v] */
  float *attn; /* [T, n_head * head_dim_v] */
  float *gate; /* [T, n_ff] */
  float *up;   /* [T, n_ff] */
  float *rope_cos, *rope_sin; /* [T, n_rot / 2]: per-row rope tables */
} nc_fwd_bufs;

/* What the primitives run over: the model, the kernels chosen once, the
 * thread pool, the KV cache and the scratch memory, all set up (and freed)
 * by the context that owns it (context.c). */
typedef struct nc_fwd {
  const nucleus_model *m;
  const nc_hparams *hp;
  const nc_kernels *kern;
  const nc_attn_kernels *attn;
  const nc_ops_kernels *ops;
  nc_kv_cache *kv;
  nc_threadpool *tp;
  nc_fwd_bufs bufs;
  uint8_t *qact; /* quantized activation rows */
  size_t qact_bytes;
  uint8_t *qpack; /* the kernels' shared activation layout (grown on use) */
  size_t qpack_cap;
  float *f16tab; /* [65536]: half bits -> float */
  float *att;    /* per thread, for one GQA group's heads: scores, q, lanes */
  size_t att_stride, att_ss, att_ls; /* floats: per thread, score row, lanes */
  float *kt;     /* prefill: the batch sequence's keys, transposed */
  size_t kt_cap; /* floats */
  float *vw;     /* and its values, widened: one row of n_embd_v per position */
  size_t vw_cap; /* floats */
  /* flash attention (forward_flash.c): the build in use, NULL when off;
   * per-thread scratch of flash_stride bytes */
  const nc_attn_flash_kernels *flash;
  uint8_t *flash_mem;
  size_t flash_stride;
} nc_fwd;

const nc_fwd_bufs *nc_fwd_scratch(nc_fwd *ctx);
const nucleus_model *nc_fwd_model(const nc_fwd *ctx);
/* The row ops build of the model's kernel table. */
const nc_ops_kernels *nc_fwd_ops(const nc_fwd *ctx);

/* One matmul of a group sharing the input: y[t * y_stride + r] = W_r . x_t
 * for every weight row r. */
typedef struct nc_mm {
  const nc_weight *w;
  float *y;
  int64_t y_stride;
} nc_mm;

/* Quantizes each of the rows of x (x_stride floats apart) once per distinct
 * vec_dot_type, then runs the n_mm (at most NC_FWD_MAX_MM) matmuls in one
 * parallel pass, threads splitting the output rows. */
#define NC_FWD_MAX_MM 8
void nc_fwd_matmul(nc_fwd *ctx, const float *x, int64_t x_stride, int32_t rows,
                   const nc_mm *mm, int n_mm);

/* Attention of one layer for the batch's rows: writes K and V (rope already
 * applied to k) into the KV cache at each row's (seq, pos), then for each
 * row and head: softmax(scale * q.K) over positions [0, pos] of the row's
 * sequence, times V, into out [T, n_head * head_dim_v]. */
void nc_fwd_attention(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                      const float *q, const float *k, const float *v,
                      float *out);

/* Flash attention (forward_flash.c, attn_flash.h) of the batch's rows over
 * K and V already in the cache: for the row at position p, the keys at
 * positions p0 <= p with p - p0 < n_swa (n_swa 0: every p0 <= p), scores
 * scaled by the model's attn_scale and soft-capped at softcap (0: none).
 * Needs ctx->flash; nc_fwd_attention calls it when flash attention is on.
 * Scratch per thread: nc_fwd_flash_scratch_bytes. */
void nc_fwd_attention_flash(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                            const float *q, float *out, int32_t n_swa,
                            float softcap);
size_t nc_fwd_flash_scratch_bytes(const nc_hparams *hp);

/* The row-wise steps between matmuls, over rows rows of n values (split
 * over the thread pool when there are enough rows; each row's result is the
 * same whoever computes it), with the row ops of the kernel table:
 * y = rmsnorm(x) * w (eps from the model); x += y (bias first added to y
 * when not NULL); RoPE of the rows' q and k heads in place with the
 * scratch's per-row tables (rope_cos/rope_sin); gate = silu(gate) * up. */
void nc_fwd_rmsnorm(nc_fwd *ctx, const float *x, const float *w, float *y,
                    int32_t rows, int64_t n);
void nc_fwd_residual(nc_fwd *ctx, float *x, float *y, const float *bias,
                     int32_t rows, int64_t n);
void nc_fwd_rope(nc_fwd *ctx, float *q, int64_t q_stride, float *k,
                 int64_t k_stride, int32_t rows);
void nc_fwd_swiglu(nc_fwd *ctx, float *gate, const float *up, int32_t rows,
                   int64_t n);
/* y += bias for each of rows rows of n values. */
void nc_fwd_add_bias(nc_fwd *ctx, float *y, const float *bias, int32_t rows,
                     int64_t n);

/* Runs fn(arg, ith, nth) on the context's thread pool. */
void nc_fwd_parallel(nc_fwd *ctx, nc_task_fn fn, void *arg);

#endif
