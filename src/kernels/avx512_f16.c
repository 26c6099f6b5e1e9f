/* avx512_f16: the F16 products of the avx512 and amx tables in the orders
 * of llama.cpp's AVX-512 build (the reference: tests/reference/
 * ref_f16_order.c). Its F16 activation rows times F16 weights go, for two
 * or more rows and n % 16 == 0, through llamafile's tinyBLAS<16>: one
 * 16-lane accumulator per output, a fused multiply-add per 16 elements in
 * order (the halves widened to F32, exactly), then the 16 lanes summed as
 * _mm512_reduce_add_ps does (the halving tree, nc_v16_sum_tree): this
 * file's vec_dot, vec_dot_rows and gemm. One row (a decode step), or other
 * n, go through ggml_vec_dot_f16 instead: four 16-lane accumulators over
 * steps of 64, summed 0 + 2, 1 + 3, then the two, then the tree, the
 * products past the last whole step added in double: gemm_few (batch.h's
 * NC_MM_FEW rows), and every product when n % 16 != 0. The same
 * arrangement as the F32 entries (avx512_f32.c).
 *
 * The gemm's AVX-512 tiles (gemm_f16.h's driver, widened F32 panels):
 * 4 weight rows x 6 activation rows, 24 accumulators, 4 weight vectors and
 * one activation vector in the 32 registers, 24 multiply-adds per 10
 * loads (llamafile's 4 x 6 block); the 24 sums finished together in
 * registers (the tree's additions, 2 to 16 sums an instruction). For n %
 * 16 != 0 the gemm runs ggml_vec_dot_f16's order on the same panels: 2
 * weight rows x 3 activation rows, four accumulators a pair. */
#include <immintrin.h>
#include <stdbool.h>

#include "avx2_util.h"
#include "gemm_f16.h"
#include "ops_simd.h"
#include "tables.h"

enum { RW = 4, RA = 6 };

static inline __m512 load_h16(const nc_fp16 *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

static inline __m256 high_half(__m512 x) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
}

static inline float sum_tree(__m512 x) {
  return nc_v16_sum_tree(_mm512_castps512_ps256(x), high_half(x));
}

float nc_avx512_dot_f16_vec(int64_t n, const void *vw, const void *va) {
  const nc_fp16 *w = vw, *a = va;
  __m512 s[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                 _mm512_setzero_ps()};
  const int64_t np = n & ~(int64_t)63;
  for (int64_t i = 0; i < np; i += 64)
    for (int j = 0; j < 4; j++)
      s[j] = _mm512_fmadd_ps(load_h16(w + i + 16 * j), load_h16(a + i + 16 * j),
                             s[j]);
  s[0] = _mm512_add_ps(s[0], s[2]);
  s[1] = _mm512_add_ps(s[1], s[3]);
  double sum = sum_tree(_mm512_add_ps(s[0], s[1]));
  for (int64_t i = np; i < n; i++)
    sum += (double)(nc_fp16_to_fp32(w[i]) * nc_fp16_to_fp32(a[i]));
  return (float)sum;
}

float nc_avx512_dot_f16(int64_t n, const void *vw, const void *va) {
  if (n % 16 != 0) return nc_avx512_dot_f16_vec(n, vw, va);
  const nc_fp16 *w = vw, *a = va;
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16)
    acc = _mm512_fmadd_ps(load_h16(w + i), load_h16(a + i), acc);
  return sum_tree(acc);
}

void nc_avx512_dot_f16_rows(int64_t n, const void *w, const void *a,
                            size_t a_stride, int nrows, float *out,
                            size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_avx512_dot_f16(n, w, ap + (size_t)r * a_stride);
}

static void dots(nc_vec_dot_fn dot, int64_t n, const void *w, size_t w_stride,
                 int64_t nw, const void *act, size_t a_stride, int64_t na,
                 float *out, size_t out_stride) {
  const char *wp = w, *ap = act;
  for (int64_t k = 0; k < na; k++)
    for (int64_t r = 0; r < nw; r++)
      out[(size_t)k * out_stride + (size_t)r] =
          dot(n, wp + (size_t)r * w_stride, ap + (size_t)k * a_stride);
}

static void widen_avx512(const nc_fp16 *src, float *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, load_h16(src + i));
  for (; i < n; i++)
    dst[i] = nc_fp16_to_fp32(src[i]);
}

/* Keeps v in a register: the compiler may not fold its load into each
 * multiply-add that reads it. */
#define NC_HOLD(v) __asm__("" : "+v"(v))

/* The tiles' sums, several accumulators at once, in registers: each sum
 * takes the tree's additions (lane i + lane i + 8, then + 4, + 2, + 1),
 * only the additions of 2 to 16 accumulators share an instruction.
 * halves: [x's 8 sums i + 8 | y's]; quarters: of two such, [4 lanes of
 * each of the four]; pairs: of two such (128-bit lane k: accumulators k
 * of each), [2 | 2 | 2 | 2] per 128-bit lane, the first two of a's, the
 * last two of b's; ones: of two such, 1 sum each, lane k's in order
 * [a's first, a's second, b's first, b's second]. */
static inline __m512 halves(__m512 x, __m512 y) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x44),
                       _mm512_shuffle_f32x4(x, y, 0xEE));
}

static inline __m512 quarters(__m512 x, __m512 y) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88),
                       _mm512_shuffle_f32x4(x, y, 0xDD));
}

static inline __m512 pairs(__m512 x, __m512 y) {
  return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x44),
                       _mm512_shuffle_ps(x, y, 0xEE));
}

static inline __m512 ones(__m512 x, __m512 y) {
  return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x88),
                       _mm512_shuffle_ps(x, y, 0xDD));
}

/* Eight accumulators x[0..7] to pairs' form: 128-bit lane k holds the
 * pairs of x[k] and x[4 + k]. */
static inline __m512 eight_to_pairs(const __m512 x[8]) {
  return pairs(quarters(halves(x[0], x[1]), halves(x[2], x[3])),
               quarters(halves(x[4], x[5]), halves(x[6], x[7])));
}

/* Columns c0..c0 + 3 of a 4-row tile: with x[c + 4r] = acc[r][c0 + c],
 * ones() puts x[k + 4m] in lane 4k + m, i.e. column c0 + k's rows 0..3 in
 * 128-bit lane k. */
static inline __attribute__((always_inline)) void
finish_4x4(__m512 acc[RW][RA], int c0, float *out, size_t os) {
  __m512 x[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++)
    x[i] = acc[i / 4][c0 + i % 4];
  const __m512 v = ones(eight_to_pairs(x), eight_to_pairs(x + 8));
  _mm_storeu_ps(out + (size_t)c0 * os, _mm512_castps512_ps128(v));
  _mm_storeu_ps(out + (size_t)(c0 + 1) * os, _mm512_extractf32x4_ps(v, 1));
  _mm_storeu_ps(out + (size_t)(c0 + 2) * os, _mm512_extractf32x4_ps(v, 2));
  _mm_storeu_ps(out + (size_t)(c0 + 3) * os, _mm512_extractf32x4_ps(v, 3));
}

/* Columns c0, c0 + 1: with x[k] = acc[k][c0], x[4 + k] = acc[k][c0 + 1],
 * lane 4k holds row k of column c0, lane 4k + 1 of column c0 + 1. */
static inline __attribute__((always_inline)) void
finish_4x2(__m512 acc[RW][RA], int c0, float *out, size_t os) {
  __m512 x[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
    x[i] = acc[i % 4][c0 + i / 4];
  const __m512 p = eight_to_pairs(x);
  const __m512 v = _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0),
      ones(p, p));
  _mm_storeu_ps(out + (size_t)c0 * os, _mm512_castps512_ps128(v));
  _mm_storeu_ps(out + (size_t)(c0 + 1) * os, _mm512_extractf32x4_ps(v, 1));
}

/* The R x C tile's sums over the first nk elements; the weights F32 (w:
 * floats) or, half, F16 (w: halves, converted as loaded: the same values,
 * so the same sums), ws elements apart. */
static inline __attribute__((always_inline)) void
tile_rc(const int R, const int C, const bool half, int64_t nk, const void *w,
        size_t ws, const float *a, size_t as, float *out, size_t os,
        const uint8_t *pf) {
  __m512 acc[RW][RA], wv[RW];
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
#pragma GCC unroll 6
    for (int c = 0; c < C; c++)
      acc[r][c] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nk; i += 16) {
    /* (half: each row's line of the group ahead as this one's is read) */
    if (half && pf && (i & 31) == 0)
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        __builtin_prefetch(pf + 2 * ((size_t)r * ws + (size_t)i), 0, 2);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      wv[r] = half ? load_h16((const nc_fp16 *)w + (size_t)r * ws + i)
                   : _mm512_loadu_ps((const float *)w + (size_t)r * ws + i);
      NC_HOLD(wv[r]);
    }
#pragma GCC unroll 6
    for (int c = 0; c < C; c++) {
      const __m512 x = _mm512_loadu_ps(a + (size_t)c * as + i);
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        acc[r][c] = _mm512_fmadd_ps(wv[r], x, acc[r][c]);
    }
  }
  int c = 0;
  if (R == RW && C >= 4) {
    finish_4x4(acc, 0, out, os);
    c = 4;
  }
  if (R == RW && C - c >= 2) {
    finish_4x2(acc, c, out, os);
    c += 2;
  }
  for (; c < C; c++)
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
      out[(size_t)c * os + (size_t)r] = sum_tree(acc[r][c]);
}

/* tile_rc for R weight rows and na (1..RA) activation rows. */
#define TILE_R(R, H, nk, w, ws, a, as, na, out, os, pf)                        \
  switch (na) {                                                                \
  case 6: tile_rc(R, 6, H, nk, w, ws, a, as, out, os, pf); break;              \
  case 5: tile_rc(R, 5, H, nk, w, ws, a, as, out, os, pf); break;              \
  case 4: tile_rc(R, 4, H, nk, w, ws, a, as, out, os, pf); break;              \
  case 3: tile_rc(R, 3, H, nk, w, ws, a, as, out, os, pf); break;              \
  case 2: tile_rc(R, 2, H, nk, w, ws, a, as, out, os, pf); break;              \
  default: tile_rc(R, 1, H, nk, w, ws, a, as, out, os, pf); break;             \
  }

static void tile_avx512(int64_t nk, const float *w, size_t ws, int nw,
                        const float *a, size_t as, int na, float *out,
                        size_t os) {
  if (nw == RW) {
    TILE_R(RW, false, nk, w, ws, a, as, na, out, os, NULL)
    return;
  }
  for (int r = 0; r < nw; r++) {
    const float *wr = w + (size_t)r * ws;
    TILE_R(1, false, nk, wr, ws, a, as, na, out + r, os, NULL)
  }
}

/* gemm_f16.h's direct: each group of RW weight rows, read as F16 from
 * memory once, against every tile of RA widened activation rows (the
 * group's rows, 4 x n halves, stay in L1 for the tiles after the first). */
static void direct_avx512(int64_t nk, const nc_fp16 *w, size_t ws, int nw,
                          const float *a, size_t as, int na, float *out,
                          size_t os) {
  int r = 0;
  for (; r + RW <= nw; r += RW)
    for (int c = 0; c < na; c += RA) {
      /* the first tile prefetches the group about NC_PREFETCH_AHEAD on */
      const uint8_t *pf =
          c == 0 ? nc_prefetch_base((const uint8_t *)(w + (size_t)r * ws),
                                    RW * ws * sizeof *w)
                 : NULL;
      const int nc = na - c < RA ? na - c : RA;
      TILE_R(RW, true, nk, w + (size_t)r * ws, ws, a + (size_t)c * as, as, nc,
             out + (size_t)c * os + (size_t)r, os, pf)
    }
  for (; r < nw; r++)
    for (int c = 0; c < na; c += RA) {
      const int nc = na - c < RA ? na - c : RA;
      TILE_R(1, true, nk, w + (size_t)r * ws, ws, a + (size_t)c * as, as, nc,
             out + (size_t)c * os + (size_t)r, os, NULL)
    }
}
#undef TILE_R

/* Long rows (nk > KC_WHOLE) go in blocks of KC elements: an activation
 * tile's block (6 rows, 9 KiB) stays in L1 against the tiles of up to GW
 * weight rows, whose partial sums (their 24 accumulators each, 12 KiB for
 * GW rows) wait in L1 between blocks: every sum's multiply-adds in the same
 * order, the tree once after the last block. */
enum { KC = 384, KC_WHOLE = 512, GW = 32 };

/* The RW x RA tile over elements [k0, k1): its accumulators from keep
 * (zero where first), then to keep, or finished into out where last. */
static inline __attribute__((always_inline)) void
tile_part(int64_t k0, int64_t k1, const float *w, size_t ws, const float *a,
          size_t as, __m512 *keep, bool first, bool last, float *out,
          size_t os) {
  __m512 acc[RW][RA], wv[RW];
  if (first) {
#pragma GCC unroll 4
    for (int r = 0; r < RW; r++)
#pragma GCC unroll 6
      for (int c = 0; c < RA; c++)
        acc[r][c] = _mm512_setzero_ps();
  } else {
#pragma GCC unroll 4
    for (int r = 0; r < RW; r++)
#pragma GCC unroll 6
      for (int c = 0; c < RA; c++)
        acc[r][c] = keep[r * RA + c];
  }
  for (int64_t i = k0; i < k1; i += 16) {
#pragma GCC unroll 4
    for (int r = 0; r < RW; r++) {
      wv[r] = _mm512_loadu_ps(w + (size_t)r * ws + i);
      NC_HOLD(wv[r]);
    }
#pragma GCC unroll 6
    for (int c = 0; c < RA; c++) {
      const __m512 x = _mm512_loadu_ps(a + (size_t)c * as + i);
#pragma GCC unroll 4
      for (int r = 0; r < RW; r++)
        acc[r][c] = _mm512_fmadd_ps(wv[r], x, acc[r][c]);
    }
  }
  if (last) {
    finish_4x4(acc, 0, out, os);
    finish_4x2(acc, 4, out, os);
    return;
  }
#pragma GCC unroll 4
  for (int r = 0; r < RW; r++)
#pragma GCC unroll 6
    for (int c = 0; c < RA; c++)
      keep[r * RA + c] = acc[r][c];
}

/* block_avx512 for long rows: per group of GW weight rows, each whole
 * activation tile in K blocks; the partial tiles over the whole row. */
static void block_long(int64_t nk, const float *w, size_t ws, int nw,
                       const float *a, size_t as, int na, float *out,
                       size_t os) {
  __m512 keep[GW / RW][RW * RA];
  for (int g = 0; g < nw; g += GW) {
    const int gn = nw - g < GW ? nw - g : GW, full = gn / RW * RW;
    for (int c = 0; c < na; c += RA) {
      const int nc = na - c < RA ? na - c : RA;
      const float *ac = a + (size_t)c * as;
      float *oc = out + (size_t)c * os;
      int r = 0;
      if (nc == RA) {
        for (int64_t k0 = 0; k0 < nk; k0 += KC) {
          const int64_t k1 = nk - k0 < KC ? nk : k0 + KC;
          for (int q = 0; q < full; q += RW)
            tile_part(k0, k1, w + (size_t)(g + q) * ws, ws, ac, as,
                      keep[q / RW], k0 == 0, k1 == nk, oc + g + q, os);
        }
        r = full;
      }
      for (; r < gn; r += RW)
        tile_avx512(nk, w + (size_t)(g + r) * ws, ws, gn - r < RW ? gn - r : RW,
                    ac, as, nc, oc + g + r, os);
    }
  }
}

/* gemm_f16.h's block: each tile of RA activation rows against the nw
 * weight rows, the whole tiles inlined here; long rows in K blocks. */
static void block_avx512(int64_t nk, const float *w, size_t ws, int nw,
                         const float *a, size_t as, int na, float *out,
                         size_t os) {
  if (nk > KC_WHOLE) {
    block_long(nk, w, ws, nw, a, as, na, out, os);
    return;
  }
  for (int c = 0; c < na; c += RA) {
    const int nc = na - c < RA ? na - c : RA;
    const float *ac = a + (size_t)c * as;
    float *oc = out + (size_t)c * os;
    int r = 0;
    if (nc == RA)
      for (; r + RW <= nw; r += RW)
        tile_rc(RW, RA, false, nk, w + (size_t)r * ws, ws, ac, as, oc + r, os,
                NULL);
    for (; r < nw; r += RW)
      tile_avx512(nk, w + (size_t)r * ws, ws, nw - r < RW ? nw - r : RW, ac, as,
                  nc, oc + r, os);
  }
}

/* ggml_vec_dot_f16's order (n % 16 != 0: Gemma 3's patch embedding, K =
 * 588) on the widened panels: R (1..VW) weight rows x C (1..VA) activation
 * rows, four accumulators per pair over steps of 64 (24 in registers), each
 * pair's finished as nc_avx512_dot_f16_vec's before its tail: s0 + s2, s1 +
 * s3, their sum, the tree; the driver adds the tail in double. */
enum { VW = 2, VA = 3 };

static inline __attribute__((always_inline)) void
vtile_rc(const int R, const int C, const bool half, int64_t nk, const void *w,
         size_t ws, const float *a, size_t as, float *out, size_t os,
         const uint8_t *pf) {
  __m512 acc[VW][VA][4], wv[VW];
#pragma GCC unroll 2
  for (int r = 0; r < R; r++)
#pragma GCC unroll 3
    for (int c = 0; c < C; c++)
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++)
        acc[r][c][j] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nk; i += 64) {
    /* (half: each row's 2 lines of the group ahead, as tile_rc) */
    if (half && pf)
#pragma GCC unroll 2
      for (int r = 0; r < R; r++) {
        const uint8_t *p = pf + 2 * ((size_t)r * ws + (size_t)i);
        __builtin_prefetch(p, 0, 2);
        __builtin_prefetch(p + 64, 0, 2);
      }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
#pragma GCC unroll 2
      for (int r = 0; r < R; r++)
        wv[r] = half
                    ? load_h16((const nc_fp16 *)w + (size_t)r * ws + i + 16 * j)
                    : _mm512_loadu_ps((const float *)w + (size_t)r * ws + i +
                                      16 * j);
#pragma GCC unroll 3
      for (int c = 0; c < C; c++) {
        const __m512 x = _mm512_loadu_ps(a + (size_t)c * as + i + 16 * j);
#pragma GCC unroll 2
        for (int r = 0; r < R; r++)
          acc[r][c][j] = _mm512_fmadd_ps(wv[r], x, acc[r][c][j]);
      }
    }
  }
#pragma GCC unroll 2
  for (int r = 0; r < R; r++)
#pragma GCC unroll 3
    for (int c = 0; c < C; c++) {
      const __m512 s0 = _mm512_add_ps(acc[r][c][0], acc[r][c][2]);
      const __m512 s1 = _mm512_add_ps(acc[r][c][1], acc[r][c][3]);
      out[(size_t)c * os + (size_t)r] = sum_tree(_mm512_add_ps(s0, s1));
    }
}

/* The tile of nw weight rows (1-2) by na activation rows (1-3); the
 * weights F32 or, when half, F16 (halves, ws apart). Always inlined, so
 * each caller's half is a constant and vtile_rc specialises on it. */
static inline __attribute__((always_inline)) void
vtile_of(bool half, int64_t nk, const void *w, size_t ws, int nw,
         const float *a, size_t as, int na, float *out, size_t os,
         const uint8_t *pf) {
#define VT(R_, C_)                                                             \
  case (R_)*4 + (C_):                                                          \
    vtile_rc(R_, C_, half, nk, w, ws, a, as, out, os, pf);                     \
    break
  switch (nw * 4 + na) {
    VT(1, 1);
    VT(1, 2);
    VT(1, 3);
    VT(2, 1);
    VT(2, 2);
    VT(2, 3);
  default: break;
  }
#undef VT
}

static void vtile_avx512(int64_t nk, const float *w, size_t ws, int nw,
                         const float *a, size_t as, int na, float *out,
                         size_t os) {
  vtile_of(false, nk, w, ws, nw, a, as, na, out, os, NULL);
}

/* gemm_few (decode rows in ggml_vec_dot_f16's order): up to VEC_CHUNK
 * activation rows widened at a time, each pair of weight rows read as F16
 * from memory once against every tile of VA of them (the pair's rows stay
 * in L1 meanwhile), the products past the last whole 64 added in double as
 * nc_avx512_dot_f16_vec adds them: its bits, with the weights read once
 * per chunk instead of once per row (the output head of a speculative
 * step's verify rows). */
enum { VEC_CHUNK = 16 };

void nc_avx512_gemm_f16_vec(int64_t n, const void *w, size_t w_stride,
                            int64_t nw, const void *act, size_t a_stride,
                            int64_t na, float *out, size_t out_stride) {
  const int64_t ld = (n + 15) / 16 * 16, ca = na < VEC_CHUNK ? na : VEC_CHUNK;
  float *aw = n > 0 && na > 0 && w_stride % sizeof(nc_fp16) == 0
                  ? aligned_alloc(64, sizeof(float) * (size_t)(ld * ca))
                  : NULL;
  if (!aw) {
    dots(nc_avx512_dot_f16_vec, n, w, w_stride, nw, act, a_stride, na, out,
         out_stride);
    return;
  }
  const nc_fp16 *wh = w;
  const size_t ws = w_stride / sizeof(nc_fp16), os = out_stride;
  const int64_t nk = n & ~(int64_t)63;
  for (int64_t a0 = 0; a0 < na; a0 += ca) {
    const int pa = (int)(na - a0 < ca ? na - a0 : ca);
    for (int j = 0; j < pa; j++)
      widen_avx512(
          (const nc_fp16 *)((const uint8_t *)act + (size_t)(a0 + j) * a_stride),
          aw + (size_t)j * (size_t)ld, n);
    float *o = out + (size_t)a0 * os;
    for (int64_t r = 0; r < nw; r += VW) {
      const int nr = nw - r < VW ? (int)(nw - r) : VW;
      const nc_fp16 *wr = wh + (size_t)r * ws;
      /* the first tile prefetches the group about NC_PREFETCH_AHEAD on,
       * line by line as it reads its own (a burst of the group's 36 lines
       * ahead of the tile decoded the F16 pair ~25% slower on an AMD EPYC) */
      const uint8_t *pf =
          nc_prefetch_base((const uint8_t *)wr, VW * ws * sizeof *wr);
      for (int c = 0; c < pa; c += VA)
        vtile_of(true, nk, wr, ws, nr, aw + (size_t)c * (size_t)ld, (size_t)ld,
                 pa - c < VA ? pa - c : VA, o + (size_t)c * os + (size_t)r, os,
                 c == 0 ? pf : NULL);
      for (int c = 0; c < pa && nk < n; c++)
        for (int k = 0; k < nr; k++) {
          float *y = o + (size_t)c * os + (size_t)(r + k);
          const float *x = aw + (size_t)c * (size_t)ld;
          double sum = *y;
          for (int64_t i = nk; i < n; i++)
            sum += (double)(nc_fp16_to_fp32(wr[(size_t)k * ws + (size_t)i]) *
                            x[i]);
          *y = (float)sum;
        }
    }
  }
  free(aw);
}

static const nc_f16_tiles VEC_TILES = {.rows_w = VW,
                                       .rows_a = VA,
                                       .step = 64,
                                       .widen = widen_avx512,
                                       .tile = vtile_avx512,
                                       .block = NULL,
                                       .dot = nc_avx512_dot_f16_vec,
                                       .tail_double = true};

static const nc_f16_tiles TILES = {.rows_w = RW,
                                   .rows_a = RA,
                                   .step = 16,
                                   .widen = widen_avx512,
                                   .tile = tile_avx512,
                                   .block = block_avx512,
                                   .direct = direct_avx512,
                                   .dot = nc_avx512_dot_f16};

void nc_avx512_gemm_f16(int64_t n, const void *w, size_t w_stride, int64_t nw,
                        const void *act, size_t a_stride, int64_t na,
                        float *out, size_t out_stride) {
  nc_gemm_f16_tiled(n % 16 != 0 ? &VEC_TILES : &TILES, n, w, w_stride, nw, act,
                    a_stride, na, out, out_stride);
}

void nc_avx512_pack_f16(int64_t n, const void *act, size_t a_stride, int64_t na,
                        int64_t r0, int64_t r1, void *packed) {
  (void)na;
  if (n % 16 == 0) nc_f16_pack_rows(&TILES, n, act, a_stride, r0, r1, packed);
}

void nc_avx512_gemm_packed_f16(int64_t n, const void *w, size_t w_stride,
                               int64_t nw, const void *act, size_t a_stride,
                               const void *packed, int64_t na, float *out,
                               size_t out_stride) {
  if (n % 16 != 0) {
    nc_avx512_gemm_f16(n, w, w_stride, nw, act, a_stride, na, out, out_stride);
    return;
  }
  nc_gemm_f16_packed(&TILES, n, w, w_stride, nw, act, a_stride, packed, na, out,
                     out_stride);
}
