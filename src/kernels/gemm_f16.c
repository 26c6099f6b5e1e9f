/* gemm_f16: the F16 matmul's driver (see gemm_f16.h): widened panels,
 * register tiles, the tail past the last whole step. */
#include "gemm_f16.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

enum {
  /* F32 weight panel, widened once per set of activation rows and kept in
   * L2 while the set's chunks pass */
  PANEL_BYTES = 512 * 1024,
  /* F32 activation chunk, kept in L2 while a panel's tiles pass: chunks of
   * 256 KiB were 12 rows of SigLIP's FFN down projection (K = 4304) */
  CHUNK_BYTES = 1024 * 1024,
  /* activation rows widened at once (a set): every weight panel is widened
   * once per set. The weights were widened whole up to 32 MiB, then read
   * from L3 for each chunk: 140 MiB of fresh pages an encode of Qwen3-VL's
   * 784 patches, written and faulted in on every call */
  ACTS_BYTES = 16 * 1024 * 1024,
  /* a register tile's activation rows up to this many bytes stay in L1
   * while weight tiles of a panel stream past them from L2 (the tiles'
   * fewer weight rows are the ones read from L2 each step) */
  ACT_TILE_BYTES = 16 * 1024,
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

/* Rows 64-byte aligned; a row of a multiple of 1 KiB one line longer: rows
 * 4 KiB apart (Qwen3-VL's 1,024 and 4,096) put a tile's 4 weight and 6
 * activation rows in the same L1 sets at every step. */
int64_t nc_f16_packed_ld(int64_t n) {
  const int64_t ld = (n + 15) / 16 * 16;
  return ld % 256 == 0 ? ld + 16 : ld;
}

static void widen_rows(const nc_f16_tiles *t, const uint8_t *src, size_t stride,
                       int64_t rows, int64_t n, float *dst, int64_t ld) {
  for (int64_t r = 0; r < rows; r++)
    t->widen((const nc_fp16 *)(src + (size_t)r * stride), dst + r * ld, n);
}

/* Weight panel wp (pw rows) x activation chunk ap (pa rows), both ld
 * floats a row: the tiles, then each pair's tail. Short rows (a tile's
 * activation rows fit ACT_TILE_BYTES), or tiles with a block (which keeps
 * long rows' activations in L1 itself): each activation tile against all
 * the panel's weight tiles (the activations stay in
 * L1, rows_w weight rows read from L2 a step); long rows: each weight tile
 * against all activation tiles (its rows stay in L1, rows_a activation
 * rows from L2 a step). Every output's sum is the same either way. */
static void panel_times_chunk(const nc_f16_tiles *t, int64_t n, int64_t ld,
                              const float *wp, int64_t pw, const float *ap,
                              int64_t pa, float *out, size_t out_stride) {
  const int64_t nk = n / t->step * t->step;
  const size_t lds = (size_t)ld;
  if ((int64_t)sizeof(float) * ld * t->rows_a <= ACT_TILE_BYTES || t->block) {
    if (t->block)
      t->block(nk, wp, lds, (int)pw, ap, lds, (int)pa, out, out_stride);
    else
      for (int64_t a = 0; a < pa; a += t->rows_a) {
        const int nc = pa - a < t->rows_a ? (int)(pa - a) : t->rows_a;
        for (int64_t r = 0; r < pw; r += t->rows_w) {
          const int nr = pw - r < t->rows_w ? (int)(pw - r) : t->rows_w;
          t->tile(nk, wp + r * ld, lds, nr, ap + a * ld, lds, nc,
                  out + (size_t)a * out_stride + (size_t)r, out_stride);
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
 * already widened there, ld floats apart (nc_gemm_f16_packed). The
 * activation rows (widened here, or the caller's packed rows) are taken up
 * to ACTS_BYTES at a time (all of an encoder's 784 rows; 3,072 rows of
 * 4,096 in three sets: 48 MiB read from memory for each panel took 10-15%
 * longer than sets that stay in L3); for each such set, each weight
 * panel is widened once (into memory that stays in L2) and multiplied by
 * the set's chunks in turn. Nothing larger than the activations' set and
 * one panel is written. */
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
  const int64_t pw = panel_rows(ld, t->rows_w);
  const int64_t cw = nw < pw ? nw : pw; /* rows of the widened panel */
  const int64_t pa = rows_in(CHUNK_BYTES, ld, t->rows_a);
  const int64_t sa = rows_in(ACTS_BYTES, ld, pa);
  /* a last set of a quarter set or less joins the one before */
  const int64_t big = sa + sa / 4;
  const int64_t own_a = packed ? 0 : na < big ? na : big; /* rows widened */
  float *mem = aligned_alloc(64, sizeof(float) * (size_t)(ld * (cw + own_a)));
  if (!mem) {
    dots_per_pair(t, n, w, w_stride, nw, act, a_stride, na, out, out_stride);
    return;
  }
  float *wp = mem, *ap = mem + ld * cw;
  const uint8_t *wb = w, *ab = act;
  for (int64_t s0 = 0, s1; s0 < na; s0 = s1) {
    s1 = na - s0 < sa ? na : s0 + sa;
    if (na - s1 <= sa / 4) s1 = na;
    const float *set = packed ? packed + s0 * ld : ap;
    if (!packed)
      widen_rows(t, ab + (size_t)s0 * a_stride, a_stride, s1 - s0, n, ap, ld);
    for (int64_t r0 = 0; r0 < nw; r0 += cw) {
      const int64_t r1 = nw - r0 < cw ? nw : r0 + cw;
      if (s0 == 0 || nw > cw) /* one panel: widened once */
        widen_rows(t, wb + (size_t)r0 * w_stride, w_stride, r1 - r0, n, wp, ld);
      /* chunks of pa rows, a last of a quarter chunk or less joined to
       * the one before (the same sums) */
      for (int64_t a0 = s0; a0 < s1;) {
        int64_t a1 = s1 - a0 < pa ? s1 : a0 + pa;
        if (s1 - a1 <= pa / 4) a1 = s1;
        panel_times_chunk(t, n, ld, wp, r1 - r0, set + (a0 - s0) * ld, a1 - a0,
                          out + (size_t)a0 * out_stride + (size_t)r0,
                          out_stride);
        a0 = a1;
      }
    }
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
