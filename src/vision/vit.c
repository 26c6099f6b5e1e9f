/* vit: a ViT's row operations, matmuls and attention (vit.h). */
#include "vit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/quant.h"
#include "kernels/ops.h"

static float gelu_tanh(float x) {
  const float c = 0.79788456080286535587989211986876f; /* sqrt(2 / pi) */
  return 0.5f * x * (1.0f + tanhf(c * x * (1.0f + 0.044715f * x * x)));
}

/* ggml_gelu_quick_f32 */
static float gelu_quick(float x) {
  return x * (1.0f / (1.0f + expf(-1.702f * x)));
}

nc_code nc_vit_init(nc_vit *v, const nc_kernels *kern, nc_threadpool *tp,
                    nc_error *err) {
  memset(v, 0, sizeof *v);
  v->kern = kern;
  v->tp = tp;
  v->ops = kern->ops ? kern->ops() : NULL;
  /* one entry more, 0, as the row ops' GeGLU reads it */
  v->gelu = malloc(NC_GELU_TABLE_ENTRIES * sizeof *v->gelu);
  v->gelu_quick = malloc(65536 * sizeof *v->gelu_quick);
  if (!v->gelu || !v->gelu_quick) {
    nc_vit_free(v);
    return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  }
  for (uint32_t h = 0; h < 65536; h++) {
    const float x = nc_fp16_to_fp32((nc_fp16)h);
    v->gelu[h] = nc_fp32_to_fp16(gelu_tanh(x));
    v->gelu_quick[h] = nc_fp32_to_fp16(gelu_quick(x));
  }
  v->gelu[65536] = 0;
  return NC_OK;
}

void nc_vit_free(nc_vit *v) {
  free(v->gelu);
  free(v->gelu_quick);
  free(v->f16tab);
  free(v->k16);
  free(v->v16);
  free(v->qact);
  free(v->packed);
  free(v->scores);
  memset(v, 0, sizeof *v);
}

nc_code nc_vit_bufs_alloc(nc_vit_bufs *b, int32_t w, int32_t h, int32_t patch,
                          int64_t n_embd, int64_t n_ff, nc_error *err) {
  const int32_t n = (w / patch) * (h / patch);
  const int64_t E = n_embd, F = n_ff, CPP = 3 * (int64_t)patch * patch;
  b->rgb = malloc((size_t)3 * w * h);
  b->img = malloc((size_t)3 * w * h * sizeof *b->img);
  b->in = malloc((size_t)n * CPP * sizeof *b->in);
  b->x = malloc((size_t)n * E * sizeof *b->x);
  b->h = malloc((size_t)n * E * sizeof *b->h);
  b->q = malloc((size_t)n * E * sizeof *b->q);
  b->k = malloc((size_t)n * E * sizeof *b->k);
  b->v = malloc((size_t)n * E * sizeof *b->v);
  b->a = malloc((size_t)n * E * sizeof *b->a);
  b->f = malloc((size_t)n * F * sizeof *b->f);
  if (!b->rgb || !b->img || !b->in || !b->x || !b->h || !b->q || !b->k ||
      !b->v || !b->a || !b->f) {
    nc_vit_bufs_free(b);
    return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory for %d patches",
                   (int)n);
  }
  return NC_OK;
}

void nc_vit_bufs_free(nc_vit_bufs *b) {
  free(b->rgb);
  float *all[] = {b->img, b->in, b->x, b->h, b->q, b->k, b->v, b->a, b->f};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]);
  memset(b, 0, sizeof *b);
}

void nc_vit_bufs_drop_image(nc_vit_bufs *b) {
  free(b->rgb);
  free(b->img);
  b->rgb = NULL;
  b->img = NULL;
}

void nc_vit_patches(const float *img, int32_t W, int32_t P, int32_t pw,
                    int32_t ph, float *out) {
  for (int32_t py = 0; py < ph; py++)
    for (int32_t px = 0; px < pw; px++) {
      float *row = out + ((int64_t)py * pw + px) * 3 * P * P;
      for (int c = 0; c < 3; c++)
        for (int32_t ky = 0; ky < P; ky++)
          for (int32_t kx = 0; kx < P; kx++)
            row[((int64_t)c * P + ky) * P + kx] =
                img[(((int64_t)py * P + ky) * W + px * P + kx) * 3 + c];
    }
}

static void run(const nc_vit *v, nc_task_fn fn, void *arg) {
  if (v->tp)
    nc_threadpool_run(v->tp, fn, arg);
  else
    fn(arg, 0, 1);
}

static int n_threads(const nc_vit *v) {
  return v->tp ? nc_threadpool_size(v->tp) : 1;
}

/* ---- matmul */

typedef struct quant_job {
  const float *x;
  int64_t x_stride, n;
  int32_t rows;
  uint8_t *dst;
  size_t dst_stride;
  nc_type vdt;
  nc_quantize_fn fn;
  nc_pack_act_fn pack; /* NULL, or the rows are packed into packed too */
  int pack_rows;
  uint8_t *packed;
} quant_job;

/* Each thread quantizes a range of rows; with a pack function, whole units
 * of pack_rows rows, which it then packs (no other thread's rows needed). */
static void quant_worker(void *p, int ith, int nth) {
  const quant_job *q = p;
  const int64_t unit = q->pack ? q->pack_rows : 1;
  int64_t lo, hi;
  nc_split_range((q->rows + unit - 1) / unit, ith, nth, &lo, &hi);
  lo *= unit;
  hi = hi * unit < q->rows ? hi * unit : q->rows;
  for (int64_t r = lo; r < hi; r++) {
    const float *src = q->x + r * q->x_stride;
    void *dst = q->dst + (size_t)r * q->dst_stride;
    if (q->fn)
      q->fn(src, dst, q->n);
    else
      nc_quantize_row(q->vdt, src, dst, q->n);
  }
  if (q->pack && lo < hi)
    q->pack(q->n, q->dst, q->dst_stride, q->rows, lo, hi, q->packed);
}

typedef struct mm_job {
  const nc_kernels *kern;
  const nc_ops_kernels *ops; /* the bias's add, or NULL */
  const nc_weight *w;
  const uint8_t *a;
  size_t a_stride;
  const uint8_t *packed; /* NULL, or a's shared layout for gemm_packed */
  int32_t rows;
  const float *b;
  float *y;
  int64_t y_stride;
} mm_job;

enum { MM_UNIT = 16 };

static void mm_worker(void *p, int ith, int nth) {
  const mm_job *t = p;
  const nc_weight *w = t->w;
  int64_t lo, hi;
  nc_split_range((w->ne1 + MM_UNIT - 1) / MM_UNIT, ith, nth, &lo, &hi);
  lo *= MM_UNIT;
  hi = hi * MM_UNIT < w->ne1 ? hi * MM_UNIT : w->ne1;
  if (lo >= hi) return;
  const uint8_t *base = w->data;
  const nc_gemm_fn gemm = t->kern->gemm[w->type];
  if (t->packed) {
    t->kern->gemm_packed[w->type](
        w->ne0, base + (size_t)lo * w->row_bytes, w->row_bytes, hi - lo, t->a,
        t->a_stride, t->packed, t->rows, t->y + lo, (size_t)t->y_stride);
  } else if (gemm) {
    gemm(w->ne0, base + (size_t)lo * w->row_bytes, w->row_bytes, hi - lo, t->a,
         t->a_stride, t->rows, t->y + lo, (size_t)t->y_stride);
  } else {
    const nc_vec_dot_rows_fn dots = t->kern->vec_dot_rows[w->type];
    const nc_vec_dot_fn dot = t->kern->vec_dot[w->type];
    for (int64_t r = lo; r < hi; r++) {
      const uint8_t *wr = base + (size_t)r * w->row_bytes;
      if (dots && t->rows > 1)
        dots(w->ne0, wr, t->a, t->a_stride, t->rows, t->y + r,
             (size_t)t->y_stride);
      else
        for (int32_t k = 0; k < t->rows; k++)
          t->y[(int64_t)k * t->y_stride + r] =
              dot(w->ne0, wr, t->a + (size_t)k * t->a_stride);
    }
  }
  if (t->b)
    for (int32_t k = 0; k < t->rows; k++) {
      float *yr = t->y + (int64_t)k * t->y_stride;
      if (t->ops) /* the same sums, vectorized */
        t->ops->add(yr + lo, t->b + lo, hi - lo);
      else
        for (int64_t r = lo; r < hi; r++)
          yr[r] += t->b[r];
    }
}

/* The table's shared layout of rows activation rows of type vdt for w's
 * gemm_packed (v->packed, grown as needed and kept for the next matmuls),
 * or NULL: no such layout for these rows, or no memory for it (the plain
 * gemm then, the same bits). */
static uint8_t *shared_layout(nc_vit *v, const nc_weight *w, nc_type vdt,
                              int32_t rows) {
  const nc_kernels *k = v->kern;
  if (!k->pack_act[vdt] || !k->pack_bytes || k->pack_rows < 1 ||
      !k->gemm_packed[w->type])
    return NULL;
  const size_t need = k->pack_bytes(vdt, w->ne0, rows);
  if (!need) return NULL;
  if (need > v->packed_cap) {
    free(v->packed);
    v->packed = aligned_alloc(64, (need + 63) / 64 * 64);
    v->packed_cap = v->packed ? need : 0;
  }
  return v->packed;
}

nc_code nc_vit_matmul(nc_vit *v, const float *x, int64_t x_stride, int32_t rows,
                      const nc_weight *w, const float *b, float *y,
                      int64_t y_stride, nc_error *err) {
  if (rows <= 0) return NC_OK;
  const nc_type vdt = nc_type_traits_of(w->type)->vec_dot_type;
  const size_t rs = nc_row_size(vdt, w->ne0);
  const size_t need = rs * (size_t)rows;
  if (need > v->qact_cap) {
    free(v->qact);
    v->qact = aligned_alloc(64, (need + 63) / 64 * 64);
    v->qact_cap = v->qact ? need : 0;
    if (!v->qact)
      return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory (%zu bytes)",
                     need);
  }
  quant_job q = {.x = x,
                 .x_stride = x_stride,
                 .n = w->ne0,
                 .rows = rows,
                 .dst = v->qact,
                 .dst_stride = rs,
                 .vdt = vdt,
                 .fn = v->kern->quantize_act[vdt]};
  uint8_t *packed = shared_layout(v, w, vdt, rows);
  if (packed) {
    q.pack = v->kern->pack_act[vdt];
    q.pack_rows = v->kern->pack_rows;
    q.packed = packed;
  }
  run(v, quant_worker, &q);
  mm_job t = {.kern = v->kern,
              .ops = v->ops,
              .w = w,
              .a = v->qact,
              .a_stride = rs,
              .packed = packed,
              .rows = rows,
              .b = b,
              .y = y,
              .y_stride = y_stride};
  run(v, mm_worker, &t);
  return NC_OK;
}

/* ---- row operations */

typedef struct norm_job {
  const float *x, *w, *b;
  float *y;
  int32_t rows;
  int64_t n;
  float eps;
} norm_job;

static void norm_worker(void *p, int ith, int nth) {
  const norm_job *t = p;
  int64_t lo, hi;
  nc_split_range(t->rows, ith, nth, &lo, &hi);
  for (int64_t r = lo; r < hi; r++)
    nc_layernorm_row(t->x + r * t->n, t->w, t->b, t->y + r * t->n, t->n,
                     t->eps);
}

void nc_vit_layernorm(const nc_vit *v, const float *x, const float *w,
                      const float *b, float *y, int32_t rows, int64_t n,
                      float eps) {
  norm_job t = {
      .x = x, .w = w, .b = b, .y = y, .rows = rows, .n = n, .eps = eps};
  run(v, norm_worker, &t);
}

void nc_vit_rmsnorm(const float *x, const float *w, float *y, int32_t rows,
                    int64_t n, float eps) {
  for (int32_t r = 0; r < rows; r++) {
    const float *xr = x + (int64_t)r * n;
    float *yr = y + (int64_t)r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
      sum += (double)(xr[i] * xr[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++)
      yr[i] = xr[i] * scale * (w ? w[i] : 1.0f);
  }
}

typedef struct gelu_job {
  const nc_vit *v;
  float *y;
  int64_t n;
} gelu_job;

static void gelu_range(const nc_vit *v, float *y, int64_t n) {
  if (v->ops) { /* the same values, vectorized */
    v->ops->geglu(y, NULL, n, v->gelu);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    const float x = y[i];
    if (x <= -10.0f)
      y[i] = 0.0f;
    else if (x < 10.0f)
      y[i] = nc_fp16_to_fp32(v->gelu[nc_fp32_to_fp16(x)]);
  }
}

/* each value its own: split in runs of 64 */
static void gelu_worker(void *p, int ith, int nth) {
  const gelu_job *t = p;
  int64_t lo, hi;
  nc_split_range((t->n + 63) / 64, ith, nth, &lo, &hi);
  lo *= 64;
  hi = hi * 64 < t->n ? hi * 64 : t->n;
  if (lo < hi) gelu_range(t->v, t->y + lo, hi - lo);
}

void nc_vit_gelu(const nc_vit *v, float *y, int64_t n) {
  gelu_job t = {.v = v, .y = y, .n = n};
  run(v, gelu_worker, &t);
}

void nc_vit_gelu_quick(const nc_vit *v, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = nc_fp16_to_fp32(v->gelu_quick[nc_fp32_to_fp16(y[i])]);
}

void nc_vit_swiglu(float *gate, const float *up, int32_t rows, int64_t n) {
  for (int32_t r = 0; r < rows; r++)
    nc_swiglu(gate + (int64_t)r * n, up + (int64_t)r * n, gate + (int64_t)r * n,
              n);
}

void nc_vit_add(float *y, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] += x[i];
}

typedef struct range_job {
  int64_t n, unit;
  nc_vit_range_fn fn;
  void *arg;
} range_job;

static void range_worker(void *p, int ith, int nth) {
  const range_job *t = p;
  int64_t lo, hi;
  nc_split_range((t->n + t->unit - 1) / t->unit, ith, nth, &lo, &hi);
  lo *= t->unit;
  hi = hi * t->unit < t->n ? hi * t->unit : t->n;
  if (lo < hi) t->fn(t->arg, lo, hi);
}

void nc_vit_parallel(const nc_vit *v, int64_t n, int64_t unit,
                     nc_vit_range_fn fn, void *arg) {
  if (n <= 0) return;
  range_job t = {.n = n, .unit = unit < 1 ? 1 : unit, .fn = fn, .arg = arg};
  run(v, range_worker, &t);
}

typedef struct add_job {
  const nc_ops_kernels *ops;
  float *y;
  const float *x;
} add_job;

static void add_range(void *p, int64_t lo, int64_t hi) {
  const add_job *t = p;
  if (t->ops) /* the same sums, vectorized */
    t->ops->add(t->y + lo, t->x + lo, hi - lo);
  else
    nc_vit_add(t->y + lo, t->x + lo, hi - lo);
}

void nc_vit_add_par(const nc_vit *v, float *y, const float *x, int64_t n) {
  add_job t = {.ops = v->ops, .y = y, .x = x};
  nc_vit_parallel(v, n, 1024, add_range, &t);
}

typedef struct split_job {
  const float *qkv, *cs, *sn;
  float *q, *k, *v;
  int64_t E;
  int32_t H, dh;
} split_job;

static void split_rope_rows(void *p, int64_t lo, int64_t hi) {
  const split_job *j = p;
  const int64_t E = j->E;
  const int32_t H = j->H, dh = j->dh;
  for (int64_t t = lo; t < hi; t++) {
    const float *r = j->qkv + t * 3 * E;
    float *q = j->q + t * E, *k = j->k + t * E;
    memcpy(q, r, sizeof(float) * E);
    memcpy(k, r + E, sizeof(float) * E);
    memcpy(j->v + t * E, r + 2 * E, sizeof(float) * E);
    const int64_t o = t * (dh / 2);
    nc_rope_apply(q, H, dh, dh, NC_ROPE_NEOX, j->cs + o, j->sn + o);
    nc_rope_apply(k, H, dh, dh, NC_ROPE_NEOX, j->cs + o, j->sn + o);
  }
}

void nc_vit_split_qkv_rope(const nc_vit *v, const float *qkv, float *q,
                           float *k, float *vv, int32_t rows, int64_t E,
                           int32_t H, int32_t dh, const float *cs,
                           const float *sn) {
  split_job j = {.qkv = qkv,
                 .cs = cs,
                 .sn = sn,
                 .q = q,
                 .k = k,
                 .v = vv,
                 .E = E,
                 .H = H,
                 .dh = dh};
  nc_vit_parallel(v, rows, 4, split_rope_rows, &j);
}

/* ---- attention */

typedef struct attn_job {
  const float *q, *k, *v;
  const int32_t *klo, *khi; /* NULL: every key */
  float *out, *scores;
  int64_t scores_cap;
  int32_t rows, n_head, head_dim;
  float scale;
} attn_job;

static void attn_worker(void *p, int ith, int nth) {
  const attn_job *t = p;
  const int64_t W = (int64_t)t->n_head * t->head_dim;
  float *s = t->scores + (int64_t)ith * t->scores_cap;
  int64_t lo, hi;
  nc_split_range((int64_t)t->n_head * t->rows, ith, nth, &lo, &hi);
  for (int64_t job = lo; job < hi; job++) {
    const int64_t h = job / t->rows, i = job % t->rows;
    const float *qi = t->q + i * W + h * t->head_dim;
    const int32_t j0 = t->klo ? t->klo[i] : 0,
                  j1 = t->khi ? t->khi[i] : t->rows;
    float mx = -INFINITY;
    for (int32_t j = j0; j < j1; j++) {
      const float *kj = t->k + (int64_t)j * W + h * t->head_dim;
      float d = 0.0f;
      for (int32_t c = 0; c < t->head_dim; c++)
        d += qi[c] * kj[c];
      s[j] = d * t->scale;
      if (s[j] > mx) mx = s[j];
    }
    double sum = 0.0;
    for (int32_t j = j0; j < j1; j++) {
      s[j] = expf(s[j] - mx);
      sum += (double)s[j];
    }
    const float inv = (float)(1.0 / sum);
    for (int32_t j = j0; j < j1; j++)
      s[j] *= inv;
    float *o = t->out + i * W + h * t->head_dim;
    for (int32_t c = 0; c < t->head_dim; c++) {
      float acc = 0.0f;
      for (int32_t j = j0; j < j1; j++)
        acc += t->v[(int64_t)j * W + h * t->head_dim + c] * s[j];
      o[c] = acc;
    }
  }
}

/* flash attention: one (head, rows [r0, r1)) job of the tiled path, or
 * of the one-row path */
typedef struct flash_job {
  const nc_vit *v;
  const float *q;
  const int32_t *klo, *khi; /* NULL: every key */
  float *out;
  int32_t rows, n_head, head_dim;
  float scale;
} flash_job;

enum { FLASH_Q_TILE = 64 }; /* ggml's GGML_FA_TILE_Q */

static int32_t key_tiles(int32_t rows) {
  return (rows + NC_FLASH_KTILE - 1) / NC_FLASH_KTILE;
}

/* A thread's scratch for the tiled path (floats from mem): every key tile
 * of one head widened (tile t's keys transposed at kt + t * hd * KTILE, its
 * values at vt + t * KTILE * hd), which tiles hold the head's (wide), then
 * one query tile's scores, state and pointers. */
typedef struct flash_mem {
  float *kt, *vt;
  int32_t *wide;
  int32_t head; /* the head kt and vt hold, -1: none yet */
  float *rest;
} flash_mem;

static flash_mem flash_mem_of(const flash_job *t, float *mem) {
  const size_t tiles = (size_t)key_tiles(t->rows);
  const size_t per = (size_t)t->head_dim * NC_FLASH_KTILE;
  flash_mem fm = {.kt = mem, .vt = mem + tiles * per, .head = -1};
  fm.wide = (int32_t *)(fm.vt + tiles * per);
  fm.rest = (float *)(fm.wide + (tiles + 15) / 16 * 16);
  return fm;
}

/* The keys and values of head h widened once per thread and head (not per
 * query tile): the same floats in the tiles. */
static void flash_tiled(const flash_job *t, int32_t h, int32_t r0, int32_t r1,
                        flash_mem *fm) {
  const int32_t hd = t->head_dim, m = r1 - r0, W = t->n_head * hd;
  const size_t per = (size_t)hd * NC_FLASH_KTILE;
  float *p = fm->rest;
  float *M = p + (size_t)m * NC_FLASH_KTILE, *S = M + m, *acc = S + m;
  const float **q = (const float **)(acc + (size_t)m * hd);
  float **out = (float **)(q + m);
  int32_t *lo = (int32_t *)(out + m), *hi = lo + m;
  if (fm->head != h) {
    memset(fm->wide, 0, sizeof(int32_t) * (size_t)key_tiles(t->rows));
    fm->head = h;
  }
  for (int32_t i = 0; i < m; i++) {
    q[i] = t->q + (int64_t)(r0 + i) * W + (int64_t)h * hd;
    out[i] = t->out + (int64_t)(r0 + i) * W + (int64_t)h * hd;
  }
  nc_flash_tstate st = {M, S, acc};
  nc_flash_tstate_init(&st, m, hd);
  const nc_flash_rows rr = {.q = q,
                            .lo = lo,
                            .hi = hi,
                            .m = m,
                            .hd = hd,
                            .hdv = hd,
                            .scale = t->scale,
                            .softcap = 0};
  for (int32_t j0 = 0; j0 < t->rows; j0 += NC_FLASH_KTILE) {
    const int32_t n =
        t->rows - j0 < NC_FLASH_KTILE ? t->rows - j0 : NC_FLASH_KTILE;
    /* each row's keys in this tile; a tile no row sees is skipped, as
     * ggml skips a tile whose mask is -inf throughout */
    bool any = false;
    for (int32_t i = 0; i < m; i++) {
      int32_t a = t->klo ? t->klo[r0 + i] - j0 : 0;
      int32_t b = t->khi ? t->khi[r0 + i] - j0 : n;
      lo[i] = a < 0 ? 0 : a > n ? n : a;
      hi[i] = b < 0 ? 0 : b > n ? n : b;
      any |= lo[i] < hi[i];
    }
    if (!any) continue;
    const int32_t tile = j0 / NC_FLASH_KTILE;
    float *kt = fm->kt + (size_t)tile * per, *vt = fm->vt + (size_t)tile * per;
    if (!fm->wide[tile]) {
      if (n < NC_FLASH_KTILE) { /* the keys past the last: zero */
        memset(kt, 0, sizeof(float) * per);
        memset(vt, 0, sizeof(float) * per);
      }
      t->v->flash->tile_widen(t->v->k16 + (int64_t)j0 * W + (int64_t)h * hd,
                              (size_t)W,
                              t->v->v16 + (int64_t)j0 * W + (int64_t)h * hd,
                              (size_t)W, n, hd, hd, t->v->f16tab, kt, vt);
      fm->wide[tile] = 1;
    }
    t->v->flash->tile_prompt(&rr, kt, vt, p, &st);
  }
  nc_flash_tfinish(&st, m, hd, NULL, out);
}

static void flash_row(const flash_job *t, int32_t h, int32_t r, float *mem) {
  const int32_t hd = t->head_dim, W = t->n_head * hd;
  nc_fp16 *qh = (nc_fp16 *)mem;
  float *s = mem + hd, *M = s + NC_FLASH_KTILE, *S = M + 1;
  nc_fp16 *acc = (nc_fp16 *)(S + 1);
  const float *qr = t->q + (int64_t)r * W + (int64_t)h * hd;
  for (int32_t d = 0; d < hd; d++)
    qh[d] = nc_fp32_to_fp16(qr[d]);
  nc_flash_state st = {M, S, acc, NULL};
  nc_flash_state_init(&st, 1, hd);
  const nc_flash_query fq = {
      .q = qh, .m = 1, .hd = hd, .hdv = hd, .scale = t->scale, .softcap = 0};
  /* ggml's one-row path passes over masked keys: only the row's range */
  const int32_t k0 = t->klo ? t->klo[r] : 0, k1 = t->khi ? t->khi[r] : t->rows;
  for (int32_t j0 = k0; j0 < k1; j0 += NC_FLASH_KTILE) {
    const int32_t n = k1 - j0 < NC_FLASH_KTILE ? k1 - j0 : NC_FLASH_KTILE;
    t->v->flash->tile(&fq, t->v->k16 + (int64_t)j0 * W + (int64_t)h * hd,
                      (size_t)W, t->v->v16 + (int64_t)j0 * W + (int64_t)h * hd,
                      (size_t)W, n, t->v->f16tab, s, &st);
  }
  nc_flash_finish(&st, 1, hd, t->v->f16tab, NULL,
                  t->out + (int64_t)r * W + (int64_t)h * hd, (size_t)hd);
}

static void flash_worker(void *p, int ith, int nth) {
  const flash_job *t = p;
  float *mem = t->v->scores + (int64_t)ith * t->v->scores_cap;
  if (t->rows >= FLASH_Q_TILE) {
    const int32_t tiles = (t->rows + FLASH_Q_TILE - 1) / FLASH_Q_TILE;
    int64_t lo, hi;
    nc_split_range((int64_t)t->n_head * tiles, ith, nth, &lo, &hi);
    flash_mem fm = flash_mem_of(t, mem);
    for (int64_t j = lo; j < hi; j++) { /* a head's query tiles in a row */
      const int32_t h = (int32_t)(j / tiles), r0 = (int32_t)(j % tiles) * 64;
      const int32_t r1 = r0 + 64 < t->rows ? r0 + 64 : t->rows;
      flash_tiled(t, h, r0, r1, &fm);
    }
    return;
  }
  int64_t lo, hi;
  nc_split_range((int64_t)t->n_head * t->rows, ith, nth, &lo, &hi);
  for (int64_t j = lo; j < hi; j++)
    flash_row(t, (int32_t)(j / t->rows), (int32_t)(j % t->rows), mem);
}

/* K and V to halves over [lo, hi) (each value its own: any split). */
typedef struct kv16_job {
  const nc_ops_kernels *ops;
  const float *k, *v;
  nc_fp16 *k16, *v16;
} kv16_job;

static void kv16_range(void *p, int64_t lo, int64_t hi) {
  const kv16_job *t = p;
  if (t->ops) {
    t->ops->to_f16(t->k + lo, t->k16 + lo, hi - lo);
    t->ops->to_f16(t->v + lo, t->v16 + lo, hi - lo);
    return;
  }
  for (int64_t i = lo; i < hi; i++) {
    t->k16[i] = nc_fp32_to_fp16(t->k[i]);
    t->v16[i] = nc_fp32_to_fp16(t->v[i]);
  }
}

static nc_code flash_attention(nc_vit *v, const float *q, const float *k,
                               const float *vv, float *out, int32_t rows,
                               int32_t n_head, int32_t head_dim, float scale,
                               const int32_t *klo, const int32_t *khi,
                               nc_error *err) {
  const int nt = n_threads(v);
  const int64_t W = (int64_t)n_head * head_dim, n = (int64_t)rows * W;
  if (!v->flash) {
    v->flash = v->kern->attn_flash ? v->kern->attn_flash() : NULL;
    if (!v->flash) v->flash = nc_attn_flash_plain();
  }
  if (!v->f16tab) {
    v->f16tab = malloc(65536 * sizeof *v->f16tab);
    if (!v->f16tab) return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
    for (uint32_t h = 0; h < 65536; h++)
      v->f16tab[h] = nc_fp16_to_fp32((nc_fp16)h);
  }
  if ((size_t)n > v->kv16_cap) {
    free(v->k16);
    free(v->v16);
    v->k16 = malloc((size_t)n * sizeof *v->k16);
    v->v16 = malloc((size_t)n * sizeof *v->v16);
    v->kv16_cap = v->k16 && v->v16 ? (size_t)n : 0;
    if (!v->kv16_cap)
      return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  }
  kv16_job kj = {.ops = v->ops, .k = k, .v = vv, .k16 = v->k16, .v16 = v->v16};
  nc_vit_parallel(v, n, 1024, kv16_range, &kj);
  /* per thread: a head's widened key tiles (kt, vt) and their flags, a
   * query tile's scores, the state and pointers of 64 rows (the tiled
   * path); or one row's (the one-row path) */
  const int64_t hd = head_dim, mrows = FLASH_Q_TILE, tiles = key_tiles(rows);
  const int64_t need =
      (2 * hd * NC_FLASH_KTILE * tiles + (tiles + 15) / 16 * 16 +
       mrows * NC_FLASH_KTILE + mrows * (2 + hd) + mrows * 6 + hd + 64 + 15) /
      16 * 16; /* 64-byte steps: aligned pointers per thread */
  if (need > v->scores_cap) {
    free(v->scores);
    v->scores = malloc((size_t)need * (size_t)nt * sizeof *v->scores);
    v->scores_cap = v->scores ? need : 0;
    if (!v->scores) return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  }
  flash_job t = {.v = v,
                 .q = q,
                 .klo = klo,
                 .khi = khi,
                 .out = out,
                 .rows = rows,
                 .n_head = n_head,
                 .head_dim = head_dim,
                 .scale = scale};
  run(v, flash_worker, &t);
  return NC_OK;
}

nc_code nc_vit_attention(nc_vit *v, const float *q, const float *k,
                         const float *vv, float *out, int32_t rows,
                         int32_t n_head, int32_t head_dim, float scale,
                         bool flash, nc_error *err) {
  return nc_vit_attention_ranges(v, q, k, vv, out, rows, n_head, head_dim,
                                 scale, flash, NULL, NULL, err);
}

nc_code nc_vit_attention_ranges(nc_vit *v, const float *q, const float *k,
                                const float *vv, float *out, int32_t rows,
                                int32_t n_head, int32_t head_dim, float scale,
                                bool flash, const int32_t *klo,
                                const int32_t *khi, nc_error *err) {
  if (flash)
    return flash_attention(v, q, k, vv, out, rows, n_head, head_dim, scale, klo,
                           khi, err);
  const int nt = n_threads(v);
  if (rows > v->scores_cap) {
    free(v->scores);
    v->scores = malloc((size_t)rows * (size_t)nt * sizeof *v->scores);
    v->scores_cap = v->scores ? rows : 0;
    if (!v->scores) return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  }
  attn_job t = {.q = q,
                .k = k,
                .v = vv,
                .klo = klo,
                .khi = khi,
                .out = out,
                .scores = v->scores,
                .scores_cap = v->scores_cap,
                .rows = rows,
                .n_head = n_head,
                .head_dim = head_dim,
                .scale = scale};
  run(v, attn_worker, &t);
  return NC_OK;
}

void nc_vit_set_pool(nc_vit *v, nc_threadpool *tp) {
  const int now = tp ? nc_threadpool_size(tp) : 1;
  if (now != n_threads(v)) { /* the per-thread scratch: sized again */
    free(v->scores);
    v->scores = NULL;
    v->scores_cap = 0;
  }
  v->tp = tp;
}
