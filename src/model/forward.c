/* forward: the primitives of forward.h over an nc_fwd (set up by the
 * context): matmul dispatch (activation rows quantized once per vec_dot type,
 * threads splitting output rows) and paged attention. */
#include "forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/threadpool.h"
#include "kernels/attn_kernel.h"
#include "kernels/ops.h"

const nc_fwd_bufs *nc_fwd_scratch(nc_fwd *ctx) {
  return &ctx->bufs;
}
const nucleus_model *nc_fwd_model(const nc_fwd *ctx) {
  return ctx->m;
}
const nc_ops_kernels *nc_fwd_ops(const nc_fwd *ctx) {
  return ctx->ops;
}

void nc_fwd_parallel(nc_fwd *ctx, nc_task_fn fn, void *arg) {
  nc_threadpool_run(ctx->tp, fn, arg);
}

/* ---- row-wise steps */

/* The row-wise steps between matmuls, split over the thread pool by rows
 * when a batch has enough of them (each row's result is the same whoever
 * computes it). */
typedef enum {
  ROWS_NORM,
  ROWS_ROPE,
  ROWS_RESIDUAL,
  ROWS_SWIGLU,
  ROWS_BIAS,
  ROWS_LAYERNORM,
  ROWS_RESIDUAL_LAYERNORM,
  ROWS_BIAS_GELU
} rows_kind;

typedef struct rows_task {
  rows_kind kind;
  const nc_ops_kernels *op;
  const nc_hparams *hp;
  int32_t rows;
  int64_t n;
  const float *x, *w; /* NORM: y = norm(x) * w; RESIDUAL: y += w if w */
  float *y;
  float *acc;   /* RESIDUAL: acc += y */
  float *q, *k; /* ROPE */
  const float *cos_c, *sin_c;
  int64_t q_stride, k_stride;
  const float *up; /* SWIGLU: y = silu(y) * up */
  const float *b;  /* LAYERNORM: y = norm(x) * w + b */
  /* RESIDUAL_LAYERNORM: RESIDUAL's (w the bias), then acc = norm(acc) *
   * norm_w + norm_b */
  const float *norm_w, *norm_b;
  const nc_fp16 *gelu; /* BIAS_GELU: y = gelu(y + w) */
} rows_task;

enum { ROWS_PARALLEL_MIN = 8 };

/* The rows [lo, hi) of a RESIDUAL_LAYERNORM, NC_LAYERNORM_ROWS at a time:
 * each block's residual, then its norm while the rows are in the cache. */
static void residual_layernorm(const rows_task *t, int64_t lo, int64_t hi) {
  for (int64_t r0 = lo; r0 < hi; r0 += NC_LAYERNORM_ROWS) {
    const int64_t r1 =
        hi - r0 < NC_LAYERNORM_ROWS ? hi : r0 + NC_LAYERNORM_ROWS;
    for (int64_t r = r0; r < r1; r++) {
      if (t->w) t->op->add(t->y + r * t->n, t->w, t->n);
      t->op->add(t->acc + r * t->n, t->y + r * t->n, t->n);
    }
    nc_layernorm_rows(t->acc + r0 * t->n, t->norm_w, t->norm_b,
                      t->acc + r0 * t->n, r1 - r0, t->n, t->hp->rms_eps);
  }
}

static void rows_worker(void *p, int ith, int nth) {
  const rows_task *t = p;
  int64_t lo, hi;
  nc_split_range(t->rows, ith, nth, &lo, &hi);
  const nc_hparams *hp = t->hp;
  if (t->kind == ROWS_LAYERNORM) { /* whole blocks of rows at once */
    if (hi > lo)
      nc_layernorm_rows(t->x + lo * t->n, t->w, t->b, t->y + lo * t->n, hi - lo,
                        t->n, hp->rms_eps);
    return;
  }
  if (t->kind == ROWS_RESIDUAL_LAYERNORM) {
    residual_layernorm(t, lo, hi);
    return;
  }
  const int32_t half = hp->n_rot / 2;
  for (int64_t r = lo; r < hi; r++) {
    switch (t->kind) {
    case ROWS_NORM:
      t->op->rmsnorm(t->x + r * t->n, t->w, t->y + r * t->n, t->n, hp->rms_eps);
      break;
    case ROWS_ROPE: {
      const float *c = t->cos_c + r * half, *sn = t->sin_c + r * half;
      const bool neox = hp->rope_type == NC_ROPE_NEOX;
      if (t->q)
        t->op->rope_apply(t->q + r * t->q_stride, hp->n_head, hp->head_dim,
                          hp->n_rot, neox, c, sn);
      if (t->k)
        t->op->rope_apply(t->k + r * t->k_stride, hp->n_head_kv, hp->head_dim,
                          hp->n_rot, neox, c, sn);
      break;
    }
    case ROWS_RESIDUAL:
      if (t->w) t->op->add(t->y + r * t->n, t->w, t->n);
      t->op->add(t->acc + r * t->n, t->y + r * t->n, t->n);
      break;
    case ROWS_SWIGLU:
      t->op->swiglu(t->y + r * t->n, t->up + r * t->n, t->y + r * t->n, t->n);
      break;
    case ROWS_BIAS: t->op->add(t->y + r * t->n, t->w, t->n); break;
    case ROWS_BIAS_GELU: /* nc_fwd_add_bias, then nc_fwd_gelu's values */
      t->op->add(t->y + r * t->n, t->w, t->n);
      t->op->geglu(t->y + r * t->n, NULL, t->n, t->gelu);
      break;
    case ROWS_LAYERNORM:
    case ROWS_RESIDUAL_LAYERNORM: break; /* above */
    }
  }
}

static void run_rows(nc_fwd *ctx, rows_task *t) {
  if (t->rows >= ROWS_PARALLEL_MIN)
    nc_fwd_parallel(ctx, rows_worker, t);
  else
    rows_worker(t, 0, 1);
}

void nc_fwd_add_bias(nc_fwd *ctx, float *y, const float *bias, int32_t rows,
                     int64_t n) {
  rows_task t = {.kind = ROWS_BIAS,
                 .op = ctx->ops,
                 .hp = ctx->hp,
                 .rows = rows,
                 .n = n,
                 .w = bias,
                 .y = y};
  run_rows(ctx, &t);
}

void nc_fwd_rmsnorm(nc_fwd *ctx, const float *x, const float *w, float *y,
                    int32_t rows, int64_t n) {
  rows_task t = {.kind = ROWS_NORM,
                 .op = ctx->ops,
                 .hp = ctx->hp,
                 .rows = rows,
                 .n = n,
                 .x = x,
                 .w = w,
                 .y = y};
  run_rows(ctx, &t);
}

void nc_fwd_layernorm(nc_fwd *ctx, const float *x, const float *w,
                      const float *b, float *y, int32_t rows, int64_t n) {
  rows_task t = {.kind = ROWS_LAYERNORM,
                 .op = ctx->ops,
                 .hp = ctx->hp,
                 .rows = rows,
                 .n = n,
                 .x = x,
                 .w = w,
                 .b = b,
                 .y = y};
  run_rows(ctx, &t);
}

void nc_fwd_residual(nc_fwd *ctx, float *x, float *y, const float *bias,
                     int32_t rows, int64_t n) {
  rows_task t = {.kind = ROWS_RESIDUAL,
                 .op = ctx->ops,
                 .hp = ctx->hp,
                 .rows = rows,
                 .n = n,
                 .acc = x,
                 .w = bias,
                 .y = y};
  run_rows(ctx, &t);
}

void nc_fwd_residual_layernorm(nc_fwd *ctx, float *x, float *y,
                               const float *bias, const float *w,
                               const float *b, int32_t rows, int64_t n) {
  rows_task t = {.kind = ROWS_RESIDUAL_LAYERNORM,
                 .op = ctx->ops,
                 .hp = ctx->hp,
                 .rows = rows,
                 .n = n,
                 .acc = x,
                 .w = bias,
                 .y = y,
                 .norm_w = w,
                 .norm_b = b};
  run_rows(ctx, &t);
}

void nc_fwd_bias_gelu(nc_fwd *ctx, float *y, const float *bias, int32_t rows,
                      int64_t n) {
  rows_task t = {.kind = ROWS_BIAS_GELU,
                 .op = ctx->ops,
                 .hp = ctx->hp,
                 .rows = rows,
                 .n = n,
                 .w = bias,
                 .y = y,
                 .gelu = ctx->gelu_f16};
  run_rows(ctx, &t);
}

void nc_fwd_rows_begin(nc_fwd *ctx, const nc_batch *b) {
  ctx->mm_few = NULL;
  for (int32_t t = 0; t < b->n_tokens && !ctx->mm_few; t++)
    if (b->mm_order[t] & NC_MM_FEW) ctx->mm_few = b->mm_order;
}

void nc_fwd_keep_output_order(nc_fwd *ctx, const nc_batch *b, bool out) {
  const uint8_t bit = out ? NC_MM_OUT_FEW : NC_MM_FEW;
  int32_t kept = 0;
  bool any = false;
  for (int32_t t = 0; t < b->n_tokens; t++) {
    if (!b->want_logits[t]) continue;
    ctx->few_rows[kept] = (b->mm_order[t] & bit) ? NC_MM_FEW : 0;
    any = any || ctx->few_rows[kept];
    kept++;
  }
  ctx->mm_few = any ? ctx->few_rows : NULL;
}

int32_t nc_fwd_keep_output_rows(const nc_batch *b, float *x, int64_t n) {
  int32_t kept = 0;
  for (int32_t t = 0; t < b->n_tokens; t++) {
    if (!b->want_logits[t]) continue;
    if (kept != t)
      memmove(x + (int64_t)kept * n, x + (int64_t)t * n,
              sizeof(float) * (size_t)n);
    kept++;
  }
  return kept;
}

void nc_fwd_keys(const nc_fwd *ctx, const nc_batch *b, int32_t t,
                 int32_t window, int32_t *lo, int32_t *hi) {
  const int32_t p = b->pos[t];
  const int32_t after = window > 0 && p + 1 > window ? p + 1 - window : 0;
  if (!ctx->hp->non_causal) {
    *lo = after;
    *hi = p + 1;
    /* an image's row: every row of its image (llama.cpp decodes an image
     * with causal attention off; its window still ends behind it), on
     * Gemma 4's sliding layers only (its full layers stay causal) */
    if (b->key_end && b->key_end[t] > *hi &&
        (window > 0 || !ctx->hp->image_bidir_swa_only))
      *hi = b->key_end[t];
    return;
  }
  const int32_t end = ctx->seq_end[b->seq[t]];
  if (window > 0 && ctx->hp->swa_symmetric) {
    const int32_t half = window / 2;
    *lo = p > half ? p - half : 0;
    *hi = end - p > half + 1 ? p + half + 1 : end;
    return;
  }
  *lo = after;
  *hi = end;
}

bool nc_fwd_head(nc_fwd *ctx, const float *xn, int32_t rows,
                 const nc_weight *output, float *out) {
  const int64_t E = ctx->hp->n_embd;
  if (ctx->embed_out) {
    if (rows > 0) memcpy(out, xn, sizeof(float) * (size_t)rows * (size_t)E);
    return false;
  }
  if (rows > 0) {
    const nc_mm mm = {output, out, ctx->hp->n_vocab};
    nc_fwd_matmul(ctx, xn, E, rows, &mm, 1);
  }
  return true;
}

void nc_fwd_rope(nc_fwd *ctx, float *q, int64_t q_stride, float *k,
                 int64_t k_stride, int32_t rows) {
  rows_task t = {.kind = ROWS_ROPE,
                 .op = ctx->ops,
                 .hp = ctx->hp,
                 .rows = rows,
                 .q = q,
                 .k = k,
                 .q_stride = q_stride,
                 .k_stride = k_stride,
                 .cos_c = ctx->bufs.rope_cos,
                 .sin_c = ctx->bufs.rope_sin};
  run_rows(ctx, &t);
}

void nc_fwd_rope_with(nc_fwd *ctx, float *q, int64_t q_stride, float *k,
                      int64_t k_stride, int32_t rows, const float *cos_c,
                      const float *sin_c) {
  rows_task t = {.kind = ROWS_ROPE,
                 .op = ctx->ops,
                 .hp = ctx->hp,
                 .rows = rows,
                 .q = q,
                 .k = k,
                 .q_stride = q_stride,
                 .k_stride = k_stride,
                 .cos_c = cos_c,
                 .sin_c = sin_c};
  run_rows(ctx, &t);
}

void nc_fwd_swiglu(nc_fwd *ctx, float *gate, const float *up, int32_t rows,
                   int64_t n) {
  rows_task t = {.kind = ROWS_SWIGLU,
                 .op = ctx->ops,
                 .hp = ctx->hp,
                 .rows = rows,
                 .n = n,
                 .y = gate,
                 .up = up};
  run_rows(ctx, &t);
}

/* ---- element-wise steps */

typedef enum {
  ELEM_GEGLU,
  ELEM_GELU,
  ELEM_SCALE,
  ELEM_SOFTCAP,
  ELEM_SWIGLU_OAI
} elem_kind;

typedef struct elem_task {
  elem_kind kind;
  const nc_ops_kernels *op;
  float *y;
  const float *up;
  int64_t n;
  float s;
  const nc_fp16 *gelu;
} elem_task;

enum { ELEM_PARALLEL_MIN = 8192, ELEM_UNIT = 64 };

static void elem_worker(void *p, int ith, int nth) {
  const elem_task *t = p;
  int64_t lo, hi;
  nc_split_range((t->n + ELEM_UNIT - 1) / ELEM_UNIT, ith, nth, &lo, &hi);
  lo *= ELEM_UNIT;
  hi = hi * ELEM_UNIT < t->n ? hi * ELEM_UNIT : t->n;
  float *y = t->y;
  switch (t->kind) {
  case ELEM_GEGLU:
    if (hi > lo) t->op->geglu(y + lo, t->up + lo, hi - lo, t->gelu);
    break;
  case ELEM_GELU: /* ggml_vec_gelu_f32 with its F16 table */
    if (hi > lo) t->op->geglu(y + lo, NULL, hi - lo, t->gelu);
    break;
  case ELEM_SCALE:
    for (int64_t i = lo; i < hi; i++)
      y[i] *= t->s;
    break;
  case ELEM_SOFTCAP: {
    const float inv = 1.0f / t->s;
    for (int64_t i = lo; i < hi; i++)
      y[i] = tanhf(y[i] * inv) * t->s;
    break;
  }
  case ELEM_SWIGLU_OAI: {
    const float alpha = NC_SWIGLU_OAI_ALPHA, limit = NC_SWIGLU_OAI_LIMIT;
    for (int64_t i = lo; i < hi; i++) {
      const float x = limit < y[i] ? limit : y[i]; /* std::min(y, limit) */
      const float u = t->up[i] < -limit  ? -limit
                      : limit < t->up[i] ? limit
                                         : t->up[i]; /* std::clamp */
      const float glu = x / (1.0f + expf(alpha * -x));
      y[i] = glu * (u + 1.0f);
    }
    break;
  }
  }
}

static void run_elems(nc_fwd *ctx, elem_task *t) {
  if (t->n >= ELEM_PARALLEL_MIN)
    nc_fwd_parallel(ctx, elem_worker, t);
  else
    elem_worker(t, 0, 1);
}

void nc_fwd_geglu(nc_fwd *ctx, float *gate, const float *up, int32_t rows,
                  int64_t n) {
  elem_task t = {.kind = ELEM_GEGLU,
                 .op = ctx->ops,
                 .y = gate,
                 .up = up,
                 .n = (int64_t)rows * n,
                 .gelu = ctx->gelu_f16};
  run_elems(ctx, &t);
}

void nc_fwd_gelu(nc_fwd *ctx, float *y, int32_t rows, int64_t n) {
  elem_task t = {.kind = ELEM_GELU,
                 .op = ctx->ops,
                 .y = y,
                 .n = (int64_t)rows * n,
                 .gelu = ctx->gelu_f16};
  run_elems(ctx, &t);
}

void nc_fwd_swiglu_oai(nc_fwd *ctx, float *gate, const float *up, int32_t rows,
                       int64_t n) {
  elem_task t = {
      .kind = ELEM_SWIGLU_OAI, .y = gate, .up = up, .n = (int64_t)rows * n};
  run_elems(ctx, &t);
}

void nc_fwd_embed(const nc_weight *table, const nc_batch *b, float *x,
                  int64_t n) {
  for (int32_t t = 0; t < b->n_tokens; t++) {
    if (b->embd && b->embd[t]) {
      memcpy(x + (int64_t)t * n, b->embd[t], sizeof(float) * (size_t)n);
      continue;
    }
    const uint8_t *row =
        (const uint8_t *)table->data + (size_t)b->token[t] * table->row_bytes;
    nc_dequantize_row(table->type, row, x + (int64_t)t * n, n);
  }
}

void nc_fwd_add_input_slice(const nc_batch *b, float *x, int64_t n,
                            int32_t slice) {
  for (int32_t t = 0; b->embd && t < b->n_tokens; t++) {
    if (!b->embd[t]) continue;
    const float *e = b->embd[t] + (int64_t)slice * n;
    float *xt = x + (int64_t)t * n;
    for (int64_t i = 0; i < n; i++)
      xt[i] += e[i];
  }
}

void nc_fwd_scale_tokens(nc_fwd *ctx, const nc_batch *b, float *x, float s,
                         int64_t n) {
  if (!b->embd) {
    nc_fwd_scale(ctx, x, s, b->n_tokens, n);
    return;
  }
  for (int32_t t0 = 0; t0 < b->n_tokens;) { /* runs of token rows */
    if (b->embd[t0]) {
      t0++;
      continue;
    }
    int32_t t1 = t0 + 1;
    while (t1 < b->n_tokens && !b->embd[t1])
      t1++;
    nc_fwd_scale(ctx, x + (int64_t)t0 * n, s, t1 - t0, n);
    t0 = t1;
  }
}

void nc_fwd_rope_rows(const nc_batch *b, const nc_rope_params *rope,
                      const float *ff, float *cos, float *sin, int32_t half) {
  for (int32_t t = 0; t < b->n_tokens; t++) {
    float *c = cos + (int64_t)t * half, *s = sin + (int64_t)t * half;
    if (rope->mrope != NC_MROPE_NONE)
      nc_mrope_cache(b->rope_pos + 4 * (int64_t)t, rope, ff, c, s);
    else
      nc_rope_cache(b->pos[t], rope, ff, c, s);
  }
}

void nc_fwd_scale(nc_fwd *ctx, float *y, float s, int32_t rows, int64_t n) {
  elem_task t = {.kind = ELEM_SCALE, .y = y, .n = (int64_t)rows * n, .s = s};
  run_elems(ctx, &t);
}

void nc_fwd_softcap(nc_fwd *ctx, float *y, float cap, int32_t rows, int64_t n) {
  elem_task t = {
      .kind = ELEM_SOFTCAP, .y = y, .n = (int64_t)rows * n, .s = cap};
  run_elems(ctx, &t);
}

/* ggml's gelu (tanh approximation) as its GCC build computes it: 1 + a x^2
 * contracted to one fused multiply-add (checked against that build's
 * table: all 65536 entries equal; without the fma one differs). */
static float gelu_tanh(float x) {
  const float a = 0.044715f, c = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + tanhf(c * x * fmaf(a * x, x, 1.0f)));
}

void nc_fwd_gelu_table(nc_fp16 *tab) {
  for (uint32_t h = 0; h < 65536; h++)
    tab[h] = nc_fp32_to_fp16(gelu_tanh(nc_fp16_to_fp32((nc_fp16)h)));
}

/* ---- matmul */

typedef struct quant_task {
  const float *x;
  const int32_t *idx; /* NULL, or row t is x's row idx[t] */
  int64_t x_stride, n;
  int32_t rows;
  uint8_t *dst;
  size_t dst_stride;
  nc_type vdt;
  nc_quantize_fn fn;
  nc_pack_act_fn pack; /* NULL, or the rows are packed into packed too */
  int pack_rows;
  uint8_t *packed;
} quant_task;

/* Each thread quantizes a range of rows; with a pack function, whole units
 * of pack_rows rows, which it then packs (no other thread's rows needed). */
static void quant_worker(void *p, int ith, int nth) {
  const quant_task *q = p;
  const int64_t unit = q->pack ? q->pack_rows : 1;
  int64_t lo, hi;
  nc_split_range((q->rows + unit - 1) / unit, ith, nth, &lo, &hi);
  lo *= unit;
  hi = hi * unit < q->rows ? hi * unit : q->rows;
  for (int64_t t = lo; t < hi; t++) {
    const float *src = q->x + (q->idx ? q->idx[t] : t) * q->x_stride;
    void *dst = q->dst + (size_t)t * q->dst_stride;
    if (q->fn)
      q->fn(src, dst, q->n);
    else
      nc_quantize_row(q->vdt, src, dst, q->n);
  }
  if (q->pack && lo < hi)
    q->pack(q->n, q->dst, q->dst_stride, q->rows, lo, hi, q->packed);
}

typedef struct mm_task {
  const nc_kernels *kern;
  const nc_mm *mm[NC_FWD_MAX_MM];
  int n_mm;
  int64_t total; /* output rows over all matmuls */
  const uint8_t *a;
  size_t a_stride;
  const uint8_t *packed; /* NULL, or a's shared layout for gemm_packed */
  const uint8_t *few;    /* NULL, or per row of a: NC_MM_FEW (gemm_few) */
  int32_t rows;
  bool each;       /* matmul i of row i of a only (nc_fwd_matmul_each) */
  bool experts;    /* a mixture's experts (nc_fwd's mm_experts) */
  int64_t n_vocab; /* a matmul of this many rows is the output head */
} mm_task;

/* Thread ranges are cut in units of MM_UNIT rows so that kernels see
 * whole register tiles; a gemm call takes a thread's whole range of a
 * matrix and blocks for the caches itself. */
enum { MM_UNIT = 16, MM_PREFETCH = 8192 };

static void mm_rows_of(const mm_task *t, const nc_mm *mm, int64_t r0,
                       int64_t r1, nc_gemm_fn gemm);

/* Weight rows [r0, r1) against every activation row: the runs of rows the
 * task marks NC_MM_FEW through the table's gemm_few, the others as usual. */
static void mm_rows(const mm_task *t, const nc_mm *mm, int64_t r0, int64_t r1) {
  const nc_weight *w = mm->w;
  const nc_gemm_fn few = t->kern->gemm_few[w->type];
  /* F16/F32 experts: every row in the one-row order (nc_fwd's mm_experts) */
  if (t->experts && few && !t->packed &&
      (w->type == NC_TYPE_F16 || w->type == NC_TYPE_F32)) {
    mm_rows_of(t, mm, r0, r1, few);
    return;
  }
  if (!t->few || !few || t->packed) {
    mm_rows_of(t, mm, r0, r1, t->kern->gemm[w->type]);
    return;
  }
  for (int32_t a0 = 0; a0 < t->rows;) {
    const uint8_t f = t->few[a0] & NC_MM_FEW;
    int32_t a1 = a0 + 1;
    while (a1 < t->rows && (t->few[a1] & NC_MM_FEW) == f)
      a1++;
    mm_task run = *t;
    run.a = t->a + (size_t)a0 * t->a_stride;
    run.rows = a1 - a0;
    nc_mm out = *mm;
    out.y = mm->y + (int64_t)a0 * mm->y_stride;
    mm_rows_of(&run, &out, r0, r1, f ? few : t->kern->gemm[w->type]);
    a0 = a1;
  }
}

static void mm_rows_of(const mm_task *t, const nc_mm *mm, int64_t r0,
                       int64_t r1, nc_gemm_fn gemm) {
  const nc_weight *w = mm->w;
  const nc_vec_dot_fn dot = t->kern->vec_dot[w->type];
  const nc_vec_dot_rows_fn dots = t->kern->vec_dot_rows[w->type];
  const uint8_t *base = w->data;
  if (t->packed) {
    t->kern->gemm_packed[w->type](
        w->ne0, base + (size_t)r0 * w->row_bytes, w->row_bytes, r1 - r0, t->a,
        t->a_stride, t->packed, t->rows, mm->y + r0, (size_t)mm->y_stride);
    return;
  }
  if (gemm) {
    gemm(w->ne0, base + (size_t)r0 * w->row_bytes, w->row_bytes, r1 - r0, t->a,
         t->a_stride, t->rows, mm->y + r0, (size_t)mm->y_stride);
    return;
  }
  /* Tables without a gemm read one row at a time: prefetch the row about
   * MM_PREFETCH bytes ahead, as the avx512 kernels do for themselves (the
   * hardware prefetchers alone leave decode waiting on memory). */
  const int64_t ahead = (MM_PREFETCH + (int64_t)w->row_bytes - 1) /
                        ((int64_t)w->row_bytes > 0 ? (int64_t)w->row_bytes : 1);
  for (int64_t r = r0; r < r1; r++) {
    const uint8_t *wr = base + (size_t)r * w->row_bytes;
    if (r + ahead < r1)
      for (size_t o = 0; o < w->row_bytes; o += 64)
        __builtin_prefetch(wr + (size_t)ahead * w->row_bytes + o, 0, 2);
    if (dots && t->rows > 1) {
      dots(w->ne0, wr, t->a, t->a_stride, t->rows, mm->y + r,
           (size_t)mm->y_stride);
    } else {
      for (int32_t k = 0; k < t->rows; k++)
        mm->y[(int64_t)k * mm->y_stride + r] =
            dot(w->ne0, wr, t->a + (size_t)k * t->a_stride);
    }
  }
}

/* nc_fwd_matmul_each: matmul i over activation row i alone */
static void mm_rows_each(const mm_task *t, int i, int64_t r0, int64_t r1) {
  mm_task one = *t;
  one.each = false;
  one.a = t->a + (size_t)i * t->a_stride;
  one.few = t->few ? t->few + i : NULL;
  one.rows = 1;
  mm_rows(&one, t->mm[i], r0, r1);
}

/* The output head's rows: mm_rows under a name of its own, so that a
 * profile (bench/profile.py) tells the head from the layers. */
static __attribute__((noinline)) void
mm_head_rows(const mm_task *t, const nc_mm *mm, int64_t r0, int64_t r1) {
  mm_rows(t, mm, r0, r1);
  __asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
}

static void mm_worker(void *p, int ith, int nth) {
  const mm_task *t = p;
  int64_t lo, hi;
  nc_split_range((t->total + MM_UNIT - 1) / MM_UNIT, ith, nth, &lo, &hi);
  lo *= MM_UNIT;
  hi = hi * MM_UNIT < t->total ? hi * MM_UNIT : t->total;
  int64_t off = 0;
  for (int i = 0; i < t->n_mm && off < hi; i++) {
    const nc_mm *mm = t->mm[i];
    const int64_t ne1 = mm->w->ne1;
    const int64_t r0 = (lo > off ? lo : off) - off;
    const int64_t r1 = (hi < off + ne1 ? hi : off + ne1) - off;
    off += ne1;
    if (r0 < r1 && t->each)
      mm_rows_each(t, i, r0, r1);
    else if (r0 < r1 && ne1 == t->n_vocab)
      mm_head_rows(t, mm, r0, r1);
    else if (r0 < r1)
      mm_rows(t, mm, r0, r1);
  }
}

/* True when some row of the task takes a weight type's gemm_few (the rows
 * the batch marks, or a mixture's F16/F32 experts, mm_rows): those keep
 * the unpacked path. */
static bool takes_few(const nc_kernels *k, const mm_task *t) {
  bool any = false;
  for (int i = 0; i < t->n_mm; i++)
    any = any || k->gemm_few[t->mm[i]->w->type] != NULL;
  if (!any) return false;
  if (t->experts) return true;
  for (int32_t a = 0; t->few && a < t->rows; a++)
    if (t->few[a] & NC_MM_FEW) return true;
  return false;
}

/* True when the kernels build a shared activation layout for this matmul
 * group (every weight has a gemm_packed, the kernels want one for this many
 * rows, no row takes gemm_few) and ctx->qpack holds it. */
static bool shared_layout(nc_fwd *ctx, const mm_task *t, nc_type vdt, int64_t n,
                          int32_t rows) {
  const nc_kernels *k = ctx->kern;
  if (!k->pack_act[vdt] || !k->pack_bytes || k->pack_rows < 1) return false;
  for (int i = 0; i < t->n_mm; i++)
    if (!k->gemm_packed[t->mm[i]->w->type]) return false;
  if (takes_few(k, t)) return false;
  const size_t need = k->pack_bytes(vdt, n, rows);
  if (!need) return false;
  if (need > ctx->qpack_cap) {
    free(ctx->qpack);
    ctx->qpack = aligned_alloc(64, (need + 63) / 64 * 64);
    ctx->qpack_cap = ctx->qpack ? need : 0;
  }
  return ctx->qpack != NULL;
}

void nc_fwd_matmul(nc_fwd *ctx, const float *x, int64_t x_stride, int32_t rows,
                   const nc_mm *mm, int n_mm) {
  nc_fwd_matmul_rows(ctx, x, x_stride, NULL, rows, mm, n_mm);
}

int32_t nc_fwd_ctx_len(const nc_fwd *ctx) {
  const int64_t n = ctx->n_ctx > 0 ? ctx->n_ctx
                                   : nc_kv_blocks_total(ctx->kv) *
                                         (int64_t)nc_kv_block_tokens(ctx->kv);
  return n < ctx->hp->n_ctx_train ? (int32_t)n : ctx->hp->n_ctx_train;
}

void nc_fwd_matmul_rows(nc_fwd *ctx, const float *x, int64_t x_stride,
                        const int32_t *idx, int32_t rows, const nc_mm *mm,
                        int n_mm) {
  bool done[NC_FWD_MAX_MM] = {false};
  if (n_mm > NC_FWD_MAX_MM) n_mm = NC_FWD_MAX_MM;
  if (ctx->observer)
    for (int i = 0; i < n_mm; i++)
      ctx->observer->matmul(ctx->observer->arg, mm[i].w, x, x_stride, idx,
                            rows);
  const uint8_t *few = ctx->mm_few;
  if (few && idx) { /* row t is x's row idx[t] */
    for (int32_t t = 0; t < rows; t++)
      ctx->few_tmp[t] = few[idx[t]];
    few = ctx->few_tmp;
  }
  for (int i = 0; i < n_mm; i++) {
    if (done[i]) continue;
    const nc_type vdt = nc_type_traits_of(mm[i].w->type)->vec_dot_type;
    const int64_t n = mm[i].w->ne0;
    mm_task t = {.kern = ctx->kern,
                 .rows = rows,
                 .n_vocab = ctx->hp->n_vocab,
                 .few = few,
                 .experts = ctx->mm_experts};
    for (int j = i; j < n_mm; j++) {
      if (done[j] || mm[j].w->ne0 != n ||
          nc_type_traits_of(mm[j].w->type)->vec_dot_type != vdt)
        continue;
      done[j] = true;
      t.mm[t.n_mm++] = &mm[j];
      t.total += mm[j].w->ne1;
    }
    quant_task q = {.x = x,
                    .idx = idx,
                    .x_stride = x_stride,
                    .n = n,
                    .rows = rows,
                    .dst = ctx->qact,
                    .dst_stride = nc_row_size(vdt, n),
                    .vdt = vdt,
                    .fn = ctx->kern->quantize_act[vdt]};
    if (shared_layout(ctx, &t, vdt, n, rows)) {
      q.pack = ctx->kern->pack_act[vdt];
      q.pack_rows = ctx->kern->pack_rows;
      q.packed = ctx->qpack;
      t.packed = ctx->qpack;
    }
    if (rows >= 4)
      nc_threadpool_run(ctx->tp, quant_worker, &q);
    else
      quant_worker(&q, 0, 1);
    t.a = ctx->qact;
    t.a_stride = q.dst_stride;
    nc_threadpool_run(ctx->tp, mm_worker, &t);
  }
}

void nc_fwd_matmul_each(nc_fwd *ctx, const float *x, int64_t x_stride,
                        const nc_mm *mm, int n_mm) {
  if (n_mm > NC_FWD_MAX_MM) n_mm = NC_FWD_MAX_MM;
  const nc_type vdt = nc_type_traits_of(mm[0].w->type)->vec_dot_type;
  const int64_t n = mm[0].w->ne0;
  bool same = true;
  for (int i = 1; i < n_mm; i++)
    same = same && mm[i].w->ne0 == n &&
           nc_type_traits_of(mm[i].w->type)->vec_dot_type == vdt;
  if (!same) { /* one pass per row */
    const uint8_t *few = ctx->mm_few;
    for (int i = 0; i < n_mm; i++) {
      ctx->mm_few = few ? few + i : NULL;
      nc_fwd_matmul(ctx, x + (int64_t)i * x_stride, x_stride, 1, &mm[i], 1);
    }
    ctx->mm_few = few;
    return;
  }
  if (ctx->observer)
    for (int i = 0; i < n_mm; i++)
      ctx->observer->matmul(ctx->observer->arg, mm[i].w,
                            x + (int64_t)i * x_stride, x_stride, NULL, 1);
  mm_task t = {.kern = ctx->kern,
               .rows = n_mm,
               .each = true,
               .few = ctx->mm_few,
               .experts = ctx->mm_experts};
  for (int i = 0; i < n_mm; i++) {
    t.mm[t.n_mm++] = &mm[i];
    t.total += mm[i].w->ne1;
  }
  quant_task q = {.x = x,
                  .x_stride = x_stride,
                  .n = n,
                  .rows = n_mm,
                  .dst = ctx->qact,
                  .dst_stride = nc_row_size(vdt, n),
                  .vdt = vdt,
                  .fn = ctx->kern->quantize_act[vdt]};
  quant_worker(&q, 0, 1);
  t.a = ctx->qact;
  t.a_stride = q.dst_stride;
  nc_threadpool_run(ctx->tp, mm_worker, &t);
}

/* ---- attention */

typedef struct att_task {
  nc_fwd *ctx;
  int32_t layer;
  const nc_batch *b;
  const float *q;
  float *out;
  const float *kt; /* NULL, or keys transposed: kt_head floats per KV head */
  size_t kt_head;
  const float *vw; /* NULL, or values widened (with kt; see keys_transposed) */
  int32_t window;  /* > 0: keys (pos - window, pos] only */
  float softcap;   /* > 0: scores soft-capped */
  const float *sinks; /* NULL, or n_head sinks */
} att_task;

/* The first key position the attention of a query whose first visible key
 * is lo reads (lo rounded down to a whole block that is also a whole
 * 16-lane group); the KV cache keeps a sliding-window layer's rows from
 * there on (nc_kv_swa_keep_from gives the same start). */
static int32_t keys_start(int32_t lo, int32_t bt) {
  int32_t unit = bt;
  while (unit % NC_ATTN_LANES)
    unit += bt;
  return lo / unit * unit;
}

/* One (row, head), as llama.cpp's non-flash path over an F16 cache: q
 * rounded to F16, scores q.k over the sequence's positions [0, pos] read
 * block by block from the paged cache, softmax as ggml (scale, max, ggml's
 * exp, 16-lane sums), probabilities rounded to F16, then the weighted sum
 * of V; dots in the order of attn_kernel. No T x T matrix: one score row
 * per (row, head). att_heads runs heads h0 .. h0 + m - 1 of row t, which
 * share one KV head, together: the kernels read each K and V row once for
 * all of them, and every head's result is the one it gets alone. */
static void att_heads(const att_task *a, int32_t t, int32_t h0, int32_t m,
                      float *scratch) {
  const nc_fwd *c = a->ctx;
  const nc_hparams *hp = c->hp;
  const float *tab = c->f16tab;
  const int32_t hd = hp->head_dim, hdv = hp->head_dim_v;
  const int32_t dk = nc_hp_n_embd_k(hp), dv = nc_hp_n_embd_v(hp);
  const int32_t kvh = h0 / (hp->n_head / hp->n_head_kv);
  const int32_t seq = a->b->seq[t];
  int32_t lo, n;
  nc_fwd_keys(c, a->b, t, a->window, &lo, &n);
  const int32_t bt = nc_kv_block_tokens(c->kv);
  const size_t ss = c->att_ss, ls = c->att_ls;
  float *s = scratch, *qh = s + (size_t)m * ss;
  float *lanes = qh + ((size_t)m * (size_t)hd + 15) / 16 * 16;
  const float *qrow = a->q + (int64_t)t * hp->n_head * hd + (int64_t)h0 * hd;
  c->ops->round_f16(qrow, qh, (int64_t)m * hd);
  /* A window starts the work at st, the first visible key rounded down to
   * a whole block that is also a whole 16-lane group: every position keeps
   * its lane, and the keys in [st, lo) are masked (-inf, probability 0), so
   * the sums are those of the full row with llama.cpp's mask. */
  const int32_t st = keys_start(lo, bt);
  if (a->kt) {
    c->attn->scores_t(qh, m, a->kt + (size_t)kvh * a->kt_head + (size_t)st * hd,
                      n - st, hd, s + st, ss);
  } else {
    for (int32_t j0 = st; j0 < n; j0 += bt) {
      const nc_fp16 *kb =
          nc_kv_k_row_c(c->kv, a->layer, seq, j0) + (int64_t)kvh * hd;
      const int32_t jn = n - j0 < bt ? n - j0 : bt;
      c->attn->scores(qh, m, kb, (size_t)dk, jn, hd, tab, s + j0, ss);
    }
  }
  for (int32_t i = 0; i < m; i++) {
    float *si = s + (size_t)i * ss;
    if (a->softcap > 0) {
      const float cap = a->softcap, inv = 1.0f / cap;
      for (int32_t j = st; j < n; j++)
        si[j] = tanhf(si[j] * inv) * cap;
    }
    for (int32_t j = st; j < lo; j++)
      si[j] = -INFINITY;
    c->attn->softmax(si + st, n - st, hp->attn_scale,
                     a->sinks ? a->sinks[h0 + i] : -INFINITY, tab);
  }
  memset(lanes, 0, sizeof(float) * (size_t)m * ls);
  if (a->vw) {
    c->attn->accum_v_wide(s + st, m, ss,
                          a->vw + (size_t)st * (size_t)dv + (size_t)kvh * hdv,
                          (size_t)dv, st, n - st, hdv, lanes, ls);
  } else {
    /* up to ATT_BLOCKS blocks per call: the kernel can hold each lane in
     * registers across their rows */
    enum { ATT_BLOCKS = 64 };
    const nc_fp16 *blocks[ATT_BLOCKS];
    for (int32_t j0 = st; j0 < n; j0 += ATT_BLOCKS * bt) {
      const int32_t jn = n - j0 < ATT_BLOCKS * bt ? n - j0 : ATT_BLOCKS * bt;
      for (int32_t b = 0; b * bt < jn; b++)
        blocks[b] = nc_kv_v_row_c(c->kv, a->layer, seq, j0 + b * bt) +
                    (int64_t)kvh * hdv;
      nc_attn_accum_v_blocks(c->attn, s + j0, m, ss, blocks, bt, (size_t)dv, j0,
                             jn, hdv, tab, lanes, ls);
    }
  }
  for (int32_t i = 0; i < m; i++) {
    float *o = a->out + (int64_t)t * hp->n_head * hdv + (int64_t)(h0 + i) * hdv;
    c->attn->reduce(lanes + (size_t)i * ls, hdv, o);
  }
}

/* Work items: (row, GQA group) when there is at least one per thread, else
 * (row, head) (decode with many threads). A group costs ~1.3 heads (its K
 * and V are widened once for all of its heads), so even the uneven split
 * of a one-row decode (3 groups on 2 threads) beats 9 heads split 5:4. */
static void att_worker(void *p, int ith, int nth) {
  const att_task *a = p;
  const nc_hparams *hp = a->ctx->hp;
  const int32_t H = hp->n_head, G = H / hp->n_head_kv;
  const int32_t per = (int64_t)a->b->n_tokens * hp->n_head_kv >= nth ? G : 1;
  const int32_t units = H / per;
  const int64_t items = (int64_t)a->b->n_tokens * units;
  float *scratch = a->ctx->att + (size_t)ith * a->ctx->att_stride;
  for (int64_t i = ith; i < items; i += nth)
    att_heads(a, (int32_t)(i / units), (int32_t)(i % units) * per, per,
              scratch);
}

/* Prefill of one sequence (every row's keys come from it): the keys of
 * positions [0, max pos] of each KV head, widened and transposed once per
 * layer into blocks of 16 (attn_kernel's scores_t), and its values widened
 * (accum_v_wide, where the kernels have it), for all the rows' queries to
 * share. Leaves a->kt and a->vw NULL (the per-block kernels) otherwise. */
enum { KT_MIN_ROWS = 16 };

typedef struct kt_task {
  nc_fwd *ctx;
  int32_t layer, seq, n;
  int32_t from; /* the first position read (a multiple of 16) */
  size_t head;  /* floats per KV head */
  bool values;  /* also widen the values into ctx->vw */
} kt_task;

/* Whole blocks of 16 keys per thread (the threads never share a cache
 * line of the transposed keys). */
static void kt_worker(void *p, int ith, int nth) {
  const kt_task *t = p;
  const nc_fwd *ctx = t->ctx;
  const nc_hparams *hp = ctx->hp;
  const int32_t hd = hp->head_dim;
  const float *tab = ctx->f16tab;
  int64_t lo, hi;
  const int64_t g0 = t->from / 16;
  nc_split_range(((int64_t)t->n + 15) / 16 - g0, ith, nth, &lo, &hi);
  for (int32_t j = (int32_t)(g0 + lo) * 16; j < (int32_t)(g0 + hi) * 16; j++) {
    const nc_fp16 *kr =
        j < t->n ? nc_kv_k_row_c(ctx->kv, t->layer, t->seq, j) : NULL;
    for (int32_t h = 0; h < hp->n_head_kv; h++) {
      float *dst = ctx->kt + (size_t)h * t->head +
                   (size_t)(j / 16) * 16 * (size_t)hd + (size_t)(j % 16);
      for (int32_t d = 0; d < hd; d++)
        dst[(size_t)d * 16] = kr ? tab[kr[(size_t)h * hd + d]] : 0.0f;
    }
    if (t->values && j < t->n) {
      const int32_t dv = nc_hp_n_embd_v(hp);
      const nc_fp16 *vr = nc_kv_v_row_c(ctx->kv, t->layer, t->seq, j);
      float *dst = ctx->vw + (size_t)j * (size_t)dv;
      for (int32_t d = 0; d < dv; d++)
        dst[d] = tab[vr[d]];
    }
  }
}

static void keys_transposed(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                            att_task *a) {
  const nc_hparams *hp = ctx->hp;
  const int32_t hd = hp->head_dim;
  if (!ctx->attn->scores_t || hd % 16 != 0 || b->n_tokens < KT_MIN_ROWS) return;
  int32_t n = 0, lo0 = INT32_MAX;
  for (int32_t t = 0; t < b->n_tokens; t++) {
    if (b->seq[t] != b->seq[0]) return;
    int32_t lo, hi;
    nc_fwd_keys(ctx, b, t, a->window, &lo, &hi);
    if (hi > n) n = hi;
    if (lo < lo0) lo0 = lo;
  }
  /* A window: the rows read from the first row's start on (the cache may
   * hold nothing before it). */
  const int32_t from = keys_start(lo0, nc_kv_block_tokens(ctx->kv));
  const size_t n16 = ((size_t)n + 15) / 16 * 16;
  const size_t head = n16 * (size_t)hd, need = head * (size_t)hp->n_head_kv;
  if (need > ctx->kt_cap) {
    free(ctx->kt);
    ctx->kt = aligned_alloc(64, need * sizeof(float));
    ctx->kt_cap = ctx->kt ? need : 0;
    if (!ctx->kt) return;
  }
  /* the values too, when the attention kernels take widened rows */
  const size_t vneed = n16 * (size_t)nc_hp_n_embd_v(hp);
  bool values = ctx->attn->accum_v_wide != NULL;
  if (values && vneed > ctx->vw_cap) {
    free(ctx->vw);
    ctx->vw = aligned_alloc(64, vneed * sizeof(float));
    ctx->vw_cap = ctx->vw ? vneed : 0;
    values = ctx->vw != NULL;
  }
  kt_task kt = {.ctx = ctx,
                .layer = layer,
                .seq = b->seq[0],
                .n = n,
                .from = from,
                .head = head,
                .values = values};
  nc_threadpool_run(ctx->tp, kt_worker, &kt);
  a->kt = ctx->kt;
  a->kt_head = head;
  a->vw = values ? ctx->vw : NULL;
}

/* One K or V row into the cache, as llama.cpp's set_rows converts the F32
 * row (from_float of the cache type: BF16 rounds to nearest even, Q8_0 as
 * its x86 quantize_row_q8_0, Q4_0 as quantize_row_q4_0_ref: all
 * nc_quantize_row), rotated first where rot > 0 (nc_kv_rotation).
 * The row's heads are whole blocks, so each head is quantized on its own. */
static void store_row(const nc_fwd *ctx, nc_type type, int32_t rot,
                      const float *src, void *dst, int32_t n) {
  if (type == NC_TYPE_F16) {
    ctx->ops->to_f16(src, dst, n);
    return;
  }
  if (rot > 0) {
    memcpy(ctx->kv_row, src, sizeof(float) * (size_t)n);
    nc_fwht(ctx->kv_row, n, rot);
    src = ctx->kv_row;
  }
  nc_quantize_row(type, src, dst, n);
}

/* The batch's K and V rows into F16 caches, rows split over the threads
 * (store_row's F16 conversion, which needs no scratch). */
typedef struct kv_store_task {
  nc_fwd *ctx;
  int32_t layer, dk, dv;
  const nc_batch *b;
  const float *k, *v;
} kv_store_task;

enum { KV_STORE_PARALLEL_MIN = 32 };

static void kv_store_worker(void *p, int ith, int nth) {
  const kv_store_task *s = p;
  int64_t lo, hi;
  nc_split_range(s->b->n_tokens, ith, nth, &lo, &hi);
  for (int64_t t = lo; t < hi; t++) {
    const int32_t seq = s->b->seq[t], pos = s->b->pos[t];
    s->ctx->ops->to_f16(s->k + t * s->dk,
                        nc_kv_k_data(s->ctx->kv, s->layer, seq, pos), s->dk);
    s->ctx->ops->to_f16(s->v + t * s->dv,
                        nc_kv_v_data(s->ctx->kv, s->layer, seq, pos), s->dv);
  }
}

void nc_fwd_attention(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                      const float *q, const float *k, const float *v,
                      float *out) {
  nc_fwd_attention_ext(ctx, layer, b, q, k, v, out, 0, 0.0f);
}

void nc_fwd_attention_ext(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                          const float *q, const float *k, const float *v,
                          float *out, int32_t window, float softcap) {
  nc_fwd_attention_sinks(ctx, layer, b, q, k, v, out, window, softcap, NULL);
}

void nc_fwd_kv_store(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                     const float *k, const float *v) {
  const int32_t dk = nc_hp_n_embd_k(ctx->hp), dv = nc_hp_n_embd_v(ctx->hp);
  const nc_kv_types ty = nc_kv_cache_types(ctx->kv);
  const int32_t rot_k = nc_kv_rot_k(ctx->kv, layer),
                rot_v = nc_kv_rot_v(ctx->kv, layer);
  const bool parallel = ty.k == NC_TYPE_F16 && ty.v == NC_TYPE_F16 &&
                        b->n_tokens >= KV_STORE_PARALLEL_MIN;
  if (parallel) {
    kv_store_task st = {
        .ctx = ctx, .layer = layer, .dk = dk, .dv = dv, .b = b, .k = k, .v = v};
    nc_threadpool_run(ctx->tp, kv_store_worker, &st);
    return;
  }
  for (int32_t t = 0; t < b->n_tokens; t++) {
    void *kr = nc_kv_k_data(ctx->kv, layer, b->seq[t], b->pos[t]);
    void *vr = nc_kv_v_data(ctx->kv, layer, b->seq[t], b->pos[t]);
    store_row(ctx, ty.k, rot_k, k + (int64_t)t * dk, kr, dk);
    store_row(ctx, ty.v, rot_v, v + (int64_t)t * dv, vr, dv);
  }
}

void nc_fwd_attention_sinks(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                            const float *q, const float *k, const float *v,
                            float *out, int32_t window, float softcap,
                            const float *sinks) {
  if (k) nc_fwd_kv_store(ctx, layer, b, k, v);
  if (ctx->flash) {
    nc_fwd_attention_flash(ctx, layer, b, q, out, window, softcap, sinks);
    return;
  }
  att_task a = {.ctx = ctx,
                .layer = layer,
                .b = b,
                .q = q,
                .out = out,
                .window = window,
                .softcap = softcap,
                .sinks = sinks};
  keys_transposed(ctx, layer, b, &a);
  nc_threadpool_run(ctx->tp, att_worker, &a);
}
