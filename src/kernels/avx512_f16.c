/* avx512_f16: the F16 matmul's AVX-512 tiles (gemm_f16.h): 4 weight rows x
 * 3 activation rows, each pair's four 8-lane accumulators of
 * nc_avx2_dot_f16 held as two zmm (elements i..i+15 and i+16..i+31 of each
 * 32): 24 accumulators, 4 weight vectors and one activation vector in the
 * 32 registers, 12 multiply-adds per 7 loads. */
#include <immintrin.h>

#include "avx2_util.h"
#include "gemm_f16.h"
#include "tables.h"

enum { RW = 4, RA = 3 };

static void widen_avx512(const nc_fp16 *src, float *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(
                                  (const __m256i *)(src + i))));
  for (; i < n; i++)
    dst[i] = nc_fp16_to_fp32(src[i]);
}

static inline __m256 high_half(__m512 x) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
}

/* lo = [acc0 | acc1], hi = [acc2 | acc3]: nc_avx2_dot_f16's final sum. */
static inline float finish(__m512 lo, __m512 hi) {
  const __m256 a01 = _mm256_add_ps(_mm512_castps512_ps256(lo), high_half(lo));
  const __m256 a23 = _mm256_add_ps(_mm512_castps512_ps256(hi), high_half(hi));
  return nc_hsum8(_mm256_add_ps(a01, a23));
}

static inline __attribute__((always_inline)) void
tile_rc(const int R, const int C, int64_t n32, const float *w, size_t ws,
        const float *a, size_t as, float *out, size_t os) {
  __m512 lo[RW][RA], hi[RW][RA], wv[RW];
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
#pragma GCC unroll 3
    for (int c = 0; c < C; c++)
      lo[r][c] = hi[r][c] = _mm512_setzero_ps();
  for (int64_t i = 0; i < n32; i += 32) {
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
      wv[r] = _mm512_loadu_ps(w + (size_t)r * ws + i);
#pragma GCC unroll 3
    for (int c = 0; c < C; c++) {
      const __m512 x = _mm512_loadu_ps(a + (size_t)c * as + i);
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        lo[r][c] = _mm512_fmadd_ps(wv[r], x, lo[r][c]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
      wv[r] = _mm512_loadu_ps(w + (size_t)r * ws + i + 16);
#pragma GCC unroll 3
    for (int c = 0; c < C; c++) {
      const __m512 x = _mm512_loadu_ps(a + (size_t)c * as + i + 16);
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        hi[r][c] = _mm512_fmadd_ps(wv[r], x, hi[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
#pragma GCC unroll 3
    for (int c = 0; c < C; c++)
      out[(size_t)c * os + (size_t)r] = finish(lo[r][c], hi[r][c]);
}

static void tile_avx512(int64_t n32, const float *w, size_t ws, int nw,
                        const float *a, size_t as, int na, float *out,
                        size_t os) {
  if (nw == RW) {
    if (na == 3)
      tile_rc(RW, 3, n32, w, ws, a, as, out, os);
    else if (na == 2)
      tile_rc(RW, 2, n32, w, ws, a, as, out, os);
    else
      tile_rc(RW, 1, n32, w, ws, a, as, out, os);
    return;
  }
  for (int r = 0; r < nw; r++) {
    const float *wr = w + (size_t)r * ws;
    if (na == 3)
      tile_rc(1, 3, n32, wr, ws, a, as, out + r, os);
    else if (na == 2)
      tile_rc(1, 2, n32, wr, ws, a, as, out + r, os);
    else
      tile_rc(1, 1, n32, wr, ws, a, as, out + r, os);
  }
}

static const nc_f16_tiles TILES = {.rows_w = RW,
                                   .rows_a = RA,
                                   .widen = widen_avx512,
                                   .tile = tile_avx512,
                                   .dot = nc_avx2_dot_f16};

void nc_avx512_gemm_f16(int64_t n, const void *w, size_t w_stride, int64_t nw,
                        const void *act, size_t a_stride, int64_t na,
                        float *out, size_t out_stride) {
  nc_gemm_f16_tiled(&TILES, n, w, w_stride, nw, act, a_stride, na, out,
                    out_stride);
}
