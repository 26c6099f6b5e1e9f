/* gemm_f16: the F16 matmul's driver (see gemm_f16.h): widened panels,
 * register tiles, the tail past the last whole step. */
#include "gemm_f16.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

enum {
  PANEL_BYTES = 256 * 1024, /* F32 weight panel */
  /* F32 activation chunk: every weight is read (and, in panels, widened)
   * once per chunk; chunks of 256 KiB were 12 rows of SigLIP's FFN down
   * projection (K = 4304), its weights streamed from L3 every 12 rows */
  CHUNK_BYTES = 1024 * 1024,
  /* weights up to this many F32 bytes are widened whole, once a call (a
   * BERT FFN's 1536 x 384: 2.25 MiB; SigLIP's FFN 4304 x 1152: 19 MiB),
   * not once per activation chunk */
  WHOLE_WEIGHT_BYTES = 32 * 1024 * 1024,
  /* a register tile's activation rows up to this many bytes stay in L1
   * while weight tiles of a sub-panel stream past them from L2 (the
   * tiles' fewer weight rows are the ones read from L2 each step) */
  ACT_TILE_BYTES = 16 * 1024,
  W_SUB_BYTES = 512 * 1024, /* such a sub-panel of weights, kept in L2 */
};

/* Rows of n floats (ld apart) per block of bytes: a multiple of unit, at
 * least one unit, at most bytes where a unit fits. */
static int64_t rows_in(int64_t bytes, int64_t ld, int unit) {
  const int64_t fit = bytes / ((int64_t)sizeof(float) * ld);
  return fit < unit ? unit : fit / unit * unit;
}

/* Rows per weight panel. */
static int64_t panel_rows(int64_t ld, int unit) {
  return rows_in(PANEL_BYTES, ld, unit);
}

static void dots_per_pair(const nc_f16_tiles *t, int64_t n, const uint8_t *w,
                          size_t w_stride, int64_t nw, const uint8_t *act,
                          size_t a_stride, int64_t na, float *out,
                          size_t out_stride) {
  for (int64_t a = 0; a < na; a++)
    for (int64_t r = 0; r < nw; r++)
      out[(size_t)a * out_stride + (size_t)r] =
          t->dot(n, w + (size_t)r * w_stride, act + (size_t)a * a_stride);
}

int64_t nc_f16_packed_ld(int64_t n) {
  return (n + 15) / 16 * 16; /* rows 64-byte aligned */
}

static void widen_rows(const nc_f16_tiles *t, const uint8_t *src, size_t stride,
                       int64_t rows, int64_t n, float *dst, int64_t ld) {
  for (int64_t r = 0; r < rows; r++)
    t->widen((const nc_fp16 *)(src + (size_t)r * stride), dst + r * ld, n);
}

/* Weight panel wp (pw rows) x activation chunk ap (pa rows), both ld
 * floats a row: the tiles, then each pair's tail. Short rows (a tile's
 * activation rows fit ACT_TILE_BYTES), or tiles with a block (which keeps
 * long rows' activations in L1 itself): for each sub-panel of weights, each
 * activation tile against all its weight tiles (the activations stay in
 * L1, rows_w weight rows read from L2 a step); long rows: each weight tile
 * against all activation tiles (its rows stay in L1, rows_a activation
 * rows from L2 a step). Every output's sum is the same either way. */
static void panel_times_chunk(const nc_f16_tiles *t, int64_t n, int64_t ld,
                              const float *wp, int64_t pw, const float *ap,
                              int64_t pa, float *out, size_t out_stride) {
  const int64_t nk = n / t->step * t->step;
  const size_t lds = (size_t)ld;
  if ((int64_t)sizeof(float) * ld * t->rows_a <= ACT_TILE_BYTES || t->block) {
    const int64_t sub = panel_rows(ld, t->rows_w) * (W_SUB_BYTES / PANEL_BYTES);
    for (int64_t r0 = 0; r0 < pw; r0 += sub) {
      const int64_t r1 = pw - r0 < sub ? pw : r0 + sub;
      if (t->block) {
        t->block(nk, wp + r0 * ld, lds, (int)(r1 - r0), ap, lds, (int)pa,
                 out + (size_t)r0, out_stride);
        continue;
      }
      for (int64_t a = 0; a < pa; a += t->rows_a) {
        const int nc = pa - a < t->rows_a ? (int)(pa - a) : t->rows_a;
        for (int64_t r = r0; r < r1; r += t->rows_w) {
          const int nr = r1 - r < t->rows_w ? (int)(r1 - r) : t->rows_w;
          t->tile(nk, wp + r * ld, lds, nr, ap + a * ld, lds, nc,
                  out + (size_t)a * out_stride + (size_t)r, out_stride);
        }
      }
    }
  } else {
    for (int64_t r = 0; r < pw; r += t->rows_w) {
      const int nr = pw - r < t->rows_w ? (int)(pw - r) : t->rows_w;
      for (int64_t a = 0; a < pa; a += t->rows_a) {
        const int nc = pa - a < t->rows_a ? (int)(pa - a) : t->rows_a;
        t->tile(nk, wp + r * ld, lds, nr, ap + a * ld, lds, nc,
                out + (size_t)a * out_stride + (size_t)r, out_stride);
      }
    }
  }
  if (nk == n) return;
  for (int64_t a = 0; a < pa; a++)
    for (int64_t r = 0; r < pw; r++) {
      float *o = out + (size_t)a * out_stride + (size_t)r;
      if (t->tail_double) {
        double sum = *o;
        for (int64_t i = nk; i < n; i++)
          sum += (double)(wp[r * ld + i] * ap[a * ld + i]);
        *o = (float)sum;
        continue;
      }
      float sum = *o;
      for (int64_t i = nk; i < n; i++)
        sum = fmaf(wp[r * ld + i], ap[a * ld + i], sum);
      *o = sum;
    }
}

/* A few activation rows (the packed ones, else widened here) against the
 * weights as they are, through the tiles' direct: each weight read from
 * memory once, as a one-row product reads it (widening the weights costs
 * more than the product of so few rows). False where no memory was had. */
static bool few_direct(const nc_f16_tiles *t, int64_t n, const void *w,
                       size_t w_stride, int64_t nw, const void *act,
                       size_t a_stride, const float *packed, int64_t na,
                       float *out, size_t out_stride) {
  const int64_t ld = nc_f16_packed_ld(n);
  float *own = NULL;
  if (!packed) {
    own = aligned_alloc(64, sizeof(float) * (size_t)(ld * na));
    if (!own) return false;
    widen_rows(t, act, a_stride, na, n, own, ld);
  }
  t->direct(n, w, w_stride / sizeof(nc_fp16), (int)nw, packed ? packed : own,
            (size_t)ld, (int)na, out, out_stride);
  free(own);
  return true;
}

/* nc_gemm_f16_tiled, and with packed (not NULL) the activation rows
 * already widened there, ld floats apart (nc_gemm_f16_packed). */
static void gemm_tiled(const nc_f16_tiles *t, int64_t n, const void *w,
                       size_t w_stride, int64_t nw, const void *act,
                       size_t a_stride, const float *packed, int64_t na,
                       float *out, size_t out_stride) {
  if (nw <= 0 || na <= 0) return;
  if (n > 0 && t->direct && na <= NC_F16_DIRECT_ROWS && n % t->step == 0 &&
      nw <= INT32_MAX && w_stride % sizeof(nc_fp16) == 0 &&
      few_direct(t, n, w, w_stride, nw, act, a_stride, packed, na, out,
                 out_stride))
    return;
  if (n <= 0 || na < NC_F16_FEW_ROWS) {
    dots_per_pair(t, n, w, w_stride, nw, act, a_stride, na, out, out_stride);
    return;
  }
  const int64_t ld = nc_f16_packed_ld(n);
  const int64_t whole = WHOLE_WEIGHT_BYTES / ((int64_t)sizeof(float) * ld);
  const int64_t pw = nw <= whole ? nw : panel_rows(ld, t->rows_w);
  const int64_t pa = rows_in(CHUNK_BYTES, ld, t->rows_a);
  const int64_t cw = nw < pw ? nw : pw, ca = na < pa ? na : pa;
  const bool one_panel = nw <= cw; /* widened once for every chunk */
  /* weights widened per chunk: a last chunk of a quarter chunk or less
   * joins the one before (Qwen3-VL's merger at one thread: 196 rows in
   * chunks of 64, 64, 68, its 4096 x 4096 weights widened 3 times, not 4) */
  const int64_t tail = na > ca ? na % ca : 0;
  const int64_t fold = !one_panel && tail <= ca / 4 ? tail : 0;
  const int64_t own_a = packed ? 0 : ca + fold; /* rows widened here */
  float *mem = aligned_alloc(64, sizeof(float) * (size_t)(ld * (cw + own_a)));
  if (!mem) {
    dots_per_pair(t, n, w, w_stride, nw, act, a_stride, na, out, out_stride);
    return;
  }
  float *wp = mem, *ap = mem + ld * cw;
  const uint8_t *wb = w, *ab = act;
  if (one_panel) widen_rows(t, wb, w_stride, nw, n, wp, ld);
  for (int64_t a0 = 0; a0 < na;) {
    int64_t a1 = na - a0 < ca ? na : a0 + ca;
    if (na - a1 <= fold) a1 = na;
    const float *chunk = packed ? packed + a0 * ld : ap;
    if (!packed)
      widen_rows(t, ab + (size_t)a0 * a_stride, a_stride, a1 - a0, n, ap, ld);
    for (int64_t r0 = 0; r0 < nw; r0 += cw) {
      const int64_t r1 = nw - r0 < cw ? nw : r0 + cw;
      if (!one_panel)
        widen_rows(t, wb + (size_t)r0 * w_stride, w_stride, r1 - r0, n, wp, ld);
      panel_times_chunk(t, n, ld, wp, r1 - r0, chunk, a1 - a0,
                        out + (size_t)a0 * out_stride + (size_t)r0, out_stride);
    }
    a0 = a1;
  }
  free(mem);
}

void nc_gemm_f16_tiled(const nc_f16_tiles *t, int64_t n, const void *w,
                       size_t w_stride, int64_t nw, const void *act,
                       size_t a_stride, int64_t na, float *out,
                       size_t out_stride) {
  gemm_tiled(t, n, w, w_stride, nw, act, a_stride, NULL, na, out, out_stride);
}

size_t nc_f16_packed_bytes(int64_t n, int64_t na) {
  if (n <= 0 || na < NC_F16_FEW_ROWS) return 0;
  return sizeof(float) * (size_t)nc_f16_packed_ld(n) * (size_t)na;
}

void nc_f16_pack_rows(const nc_f16_tiles *t, int64_t n, const void *act,
                      size_t a_stride, int64_t r0, int64_t r1, float *packed) {
  const int64_t ld = nc_f16_packed_ld(n);
  for (int64_t r = r0; r < r1; r++)
    t->widen((const nc_fp16 *)((const uint8_t *)act + (size_t)r * a_stride),
             packed + r * ld, n);
}

void nc_gemm_f16_packed(const nc_f16_tiles *t, int64_t n, const void *w,
                        size_t w_stride, int64_t nw, const void *act,
                        size_t a_stride, const float *packed, int64_t na,
                        float *out, size_t out_stride) {
  gemm_tiled(t, n, w, w_stride, nw, act, a_stride,
             nc_f16_packed_bytes(n, na) ? packed : NULL, na, out, out_stride);
}
