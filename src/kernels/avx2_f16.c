/* avx2_f16: the F16 matmul's AVX2 tiles (gemm_f16.h): 1 weight row x 3
 * activation rows, each pair's four 8-lane accumulators of nc_avx2_dot_f16:
 * 12 accumulators and a weight vector in the 16 registers, the activation
 * vectors read by the multiply-adds themselves. */
#include <immintrin.h>

#include "avx2_util.h"
#include "gemm_f16.h"
#include "tables.h"

enum { RA = 3 };

static void widen_avx2(const nc_fp16 *src, float *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(
        dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
  for (; i < n; i++)
    dst[i] = nc_fp16_to_fp32(src[i]);
}

static inline __attribute__((always_inline)) void
tile_c(const int C, int64_t n32, const float *w, const float *a, size_t as,
       float *out, size_t os) {
  __m256 acc[4][RA];
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
#pragma GCC unroll 3
    for (int c = 0; c < C; c++)
      acc[k][c] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n32; i += 32)
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
      const __m256 wv = _mm256_loadu_ps(w + i + 8 * k);
#pragma GCC unroll 3
      for (int c = 0; c < C; c++)
        acc[k][c] = _mm256_fmadd_ps(
            wv, _mm256_loadu_ps(a + (size_t)c * as + i + 8 * k), acc[k][c]);
    }
#pragma GCC unroll 3
  for (int c = 0; c < C; c++)
    out[(size_t)c * os] =
        nc_hsum8(_mm256_add_ps(_mm256_add_ps(acc[0][c], acc[1][c]),
                               _mm256_add_ps(acc[2][c], acc[3][c])));
}

static void tile_avx2(int64_t n32, const float *w, size_t ws, int nw,
                      const float *a, size_t as, int na, float *out,
                      size_t os) {
  for (int r = 0; r < nw; r++) {
    const float *wr = w + (size_t)r * ws;
    if (na == 3)
      tile_c(3, n32, wr, a, as, out + r, os);
    else if (na == 2)
      tile_c(2, n32, wr, a, as, out + r, os);
    else
      tile_c(1, n32, wr, a, as, out + r, os);
  }
}

static const nc_f16_tiles TILES = {.rows_w = 1,
                                   .step = 32,
                                   .rows_a = RA,
                                   .widen = widen_avx2,
                                   .tile = tile_avx2,
                                   .dot = nc_avx2_dot_f16};

void nc_avx2_gemm_f16(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *act, size_t a_stride, int64_t na, float *out,
                      size_t out_stride) {
  nc_gemm_f16_tiled(&TILES, n, w, w_stride, nw, act, a_stride, na, out,
                    out_stride);
}
