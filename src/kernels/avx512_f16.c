/* avx512_f16: the F16 matmul's AVX-512 tiles (gemm_f16.h): 4 weight rows x
 * 3 activation rows, each pair's four 8-lane accumulators of
 * nc_avx2_dot_f16 held as two zmm (elements i..i+15 and i+16..i+31 of each
 * 32): 24 accumulators, 4 weight vectors and one activation vector in the
 * 32 registers, 12 multiply-adds per 7 loads. The weight vectors are held
 * in registers on purpose (GCC would otherwise read them again from memory
 * for every multiply-add: 24 loads where 8 do), and a whole tile's twelve
 * sums are finished together, two to four pairs a vector, in the same
 * additions as nc_hsum8's. */
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

/* Keeps v in a register: the compiler may not fold its load into each
 * multiply-add that reads it. */
#define NC_HOLD(v) __asm__("" : "+v"(v))

/* [a0 | a1] + [a2 | a3] over 256-bit halves, for two pairs at once: given
 * x = [P0 | P1] and y = [Q0 | Q1], [P0 + P1 | Q0 + Q1]. */
static inline __m512 add_halves(__m512 x, __m512 y) {
  const __m512 straight = _mm512_mask_blend_ps(0xFF00, x, y); /* [P0 | Q1] */
  const __m512 crossed = _mm512_shuffle_f32x4(x, y, 0x4E);    /* [P1 | Q0] */
  return _mm512_add_ps(straight, crossed);
}

/* Pairs P and Q's 8-lane sums (acc0 + acc1) + (acc2 + acc3), as
 * [P | Q]. */
static inline __m512 sum8_two(__m512 lo_p, __m512 hi_p, __m512 lo_q,
                              __m512 hi_q) {
  return _mm512_add_ps(add_halves(lo_p, lo_q), add_halves(hi_p, hi_q));
}

/* The full tile's twelve outputs: nc_hsum8 of each pair's 8-lane sum, its
 * additions (k + k+4, then 0+2 and 1+3, then the two) done four pairs a
 * vector; out[c * os + r] for r < 4, c < 3. */
static inline void finish_tile(__m512 lo[RW][RA], __m512 hi[RW][RA], float *out,
                               size_t os) {
  /* v[r] = [(r,0) | (r,1)] for every r; u[k] = [(2k,2) | (2k+1,2)] */
  __m512 v[RW], u[2];
#pragma GCC unroll 4
  for (int r = 0; r < RW; r++)
    v[r] = sum8_two(lo[r][0], hi[r][0], lo[r][1], hi[r][1]);
  u[0] = sum8_two(lo[0][2], hi[0][2], lo[1][2], hi[1][2]);
  u[1] = sum8_two(lo[2][2], hi[2][2], lo[3][2], hi[3][2]);
  /* w[r]: 128-bit lane c holds pair (r,c)'s k + k+4 (lane 3 a copy) */
  __m512 w[RW];
#pragma GCC unroll 4
  for (int r = 0; r < RW; r++) {
    const __m512 x = v[r], y = u[r / 2];
    const __m512 low = r % 2 ? _mm512_shuffle_f32x4(x, y, 0xA8)
                             : _mm512_shuffle_f32x4(x, y, 0x08);
    const __m512 high = r % 2 ? _mm512_shuffle_f32x4(x, y, 0xFD)
                              : _mm512_shuffle_f32x4(x, y, 0x5D);
    w[r] = _mm512_add_ps(low, high);
  }
  /* lane c: [(0,c) 0+2, (0,c) 1+3, (1,c) 0+2, (1,c) 1+3], then rows 2, 3 */
  const __m512 z01 = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x44),
                                   _mm512_shuffle_ps(w[0], w[1], 0xEE));
  const __m512 z23 = _mm512_add_ps(_mm512_shuffle_ps(w[2], w[3], 0x44),
                                   _mm512_shuffle_ps(w[2], w[3], 0xEE));
  /* lane c: out (0,c), (1,c), (2,c), (3,c) */
  const __m512 f = _mm512_add_ps(_mm512_shuffle_ps(z01, z23, 0x88),
                                 _mm512_shuffle_ps(z01, z23, 0xDD));
  _mm_storeu_ps(out, _mm512_castps512_ps128(f));
  _mm_storeu_ps(out + os, _mm512_extractf32x4_ps(f, 1));
  _mm_storeu_ps(out + 2 * os, _mm512_extractf32x4_ps(f, 2));
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
    for (int r = 0; r < R; r++) {
      wv[r] = _mm512_loadu_ps(w + (size_t)r * ws + i);
      NC_HOLD(wv[r]);
    }
#pragma GCC unroll 3
    for (int c = 0; c < C; c++) {
      const __m512 x = _mm512_loadu_ps(a + (size_t)c * as + i);
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        lo[r][c] = _mm512_fmadd_ps(wv[r], x, lo[r][c]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      wv[r] = _mm512_loadu_ps(w + (size_t)r * ws + i + 16);
      NC_HOLD(wv[r]);
    }
#pragma GCC unroll 3
    for (int c = 0; c < C; c++) {
      const __m512 x = _mm512_loadu_ps(a + (size_t)c * as + i + 16);
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        hi[r][c] = _mm512_fmadd_ps(wv[r], x, hi[r][c]);
    }
  }
  if (R == RW && C == RA) {
    finish_tile(lo, hi, out, os);
    return;
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
