/* amx_gemv: the amx table's matrix x vector (many weight rows, one to eight
 * activation rows: decode, a few drafts or streams) for Q4_0, Q4_1 and Q8_0 in
 * block order (see ref_block.c), with AVX-512 VNNI: the tile matmul units would
 * waste 15 of every 16 rows here, and decode is bound by memory anyway. The
 * weights are streamed once, straight from their rows, 16 rows at a time.
 *
 * Per block and activation row, the 8 pairs of rows (avx512_pairs.h
 * layout) give 8 vpdpbusd results of 2 rows x 8 partial sums; a tree of
 * 128-bit shuffles and adds reduces them to one vector of the 16 rows'
 * exact block sums, in the lane order row_of_lane(). The block's float steps
 * then run once for all 16 rows: fma(I, d_w * d_a, acc) (+ fma(m_w, s_a,
 * acc)), d_w and m_w gathered from the 16 block headers in that lane
 * order. Rows past the last whole tile of 16 use the plain-C reference. */
#include <immintrin.h>
#include <stdlib.h>

#include "avx2_util.h"
#include "avx512_pairs.h"
#include "ref.h"
#include "tables.h"

enum { MAX_A = NC_AMX_GEMV_MAX_A, TILE_ROWS = 16 };

/* Lane j of the reduced vector holds the block sum of tile row
 * row_of_lane()[j] (see reduce_pairs); lane_of_row() is its inverse. */
static inline __m512i row_of_lane(void) {
  return _mm512_setr_epi32(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14,
                           15);
}
static inline __m512i lane_of_row(void) {
  return _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14,
                           15);
}

/* 8 pair vectors (pair p: rows 2p, 2p + 1, dword lanes interleaved) ->
 * the 16 rows' sums. Level 1 adds 128-bit chunks k and k + 2 of each pair
 * (two pairs per vector), level 2 chunks 2k and 2k + 1 (four pairs per
 * vector), level 3 the two 64-bit halves of each chunk. */
static inline __m512i reduce_pairs(const __m512i v[8]) {
  __m512i l1[4], l2[2];
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++)
    l1[i] =
        _mm512_add_epi32(_mm512_shuffle_i64x2(v[2 * i], v[2 * i + 1], 0x44),
                         _mm512_shuffle_i64x2(v[2 * i], v[2 * i + 1], 0xee));
#pragma GCC unroll 2
  for (int i = 0; i < 2; i++)
    l2[i] =
        _mm512_add_epi32(_mm512_shuffle_i64x2(l1[2 * i], l1[2 * i + 1], 0x88),
                         _mm512_shuffle_i64x2(l1[2 * i], l1[2 * i + 1], 0xdd));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(l2[0], l2[1]),
                          _mm512_unpackhi_epi64(l2[0], l2[1]));
}

/* The activation rows, prepared once per call, per block: each row's
 * quants doubled (y), the signed types' lane starts (c), d_a and s_a. */
typedef struct act_rows {
  __m512i (*y)[MAX_A];
  __m512i (*c)[MAX_A];
  float (*d)[MAX_A];
  float (*s)[MAX_A];
  void *mem;
} act_rows;

static bool act_rows_new(act_rows *ar, const uint8_t *a, size_t a_stride, int A,
                         int64_t nb, bool has_min, int offset_c) {
  const size_t v = sizeof(__m512i) * MAX_A * (size_t)nb;
  const size_t f = sizeof(float) * MAX_A * (size_t)nb;
  ar->mem = aligned_alloc(64, (2 * v + 2 * f + 63) / 64 * 64);
  if (!ar->mem) return false;
  uint8_t *p = ar->mem;
  ar->y = (void *)p, p += v;
  ar->c = (void *)p, p += v;
  ar->d = (void *)p, p += f;
  ar->s = (void *)p;
  const size_t abytes = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
  const size_t aq = has_min ? 4 : 2;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *bi = a + (size_t)i * abytes;
    nc_il_act_rows(bi, a_stride, A, aq, offset_c, ar->y[i], ar->c[i]);
    _Alignas(64) float ds[16]; /* [d0 s0 d1 s1 ...], see nc_il_act_scales */
    _mm512_store_ps(ds, nc_il_act_scales(bi, a_stride, A));
    for (int k = 0; k < A; k++) {
      ar->d[i][k] = ds[2 * k];
      ar->s[i][k] = has_min ? ds[2 * k + 1] : 0.0f;
    }
  }
  return true;
}

/* 16 rows from w x A activation rows: out[a * out_stride + r]. */
static inline __attribute__((always_inline)) void
tile(int64_t nb, const uint8_t *w, size_t w_stride, size_t bsize,
     nc_il_pair_fn pair, bool has_min, bool has_offset, const act_rows *ar,
     const int A, float *out, size_t out_stride) {
  const __m512i hdr =
      _mm512_mullo_epi32(row_of_lane(), _mm512_set1_epi32((int)w_stride));
  __m512 acc[MAX_A];
#pragma GCC unroll 8
  for (int a = 0; a < A; a++)
    acc[a] = _mm512_setzero_ps();
  const uint8_t *pf = nc_prefetch_base(w, TILE_ROWS * w_stride);
  const size_t pf_step = TILE_ROWS * bsize;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *bi = w + (size_t)i * bsize;
    nc_prefetch_lines(pf + (size_t)i * pf_step, pf_step);
    const __m512i h = _mm512_i32gather_epi32(hdr, bi, 1);
    const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
    __m512i q[8];
#pragma GCC unroll 8
    for (int p = 0; p < 8; p++)
      q[p] = pair(bi + (size_t)(2 * p) * w_stride,
                  bi + (size_t)(2 * p + 1) * w_stride);
#pragma GCC unroll 8
    for (int a = 0; a < A; a++) {
      const __m512i y = _mm512_load_si512(&ar->y[i][a]);
      const __m512i *c0 = has_offset ? &ar->c[i][a] : NULL;
      __m512i v[8];
#pragma GCC unroll 8
      for (int p = 0; p < 8; p++)
        v[p] = nc_il_dot(c0, q[p], y);
      const __m512 dd = _mm512_mul_ps(dw, _mm512_set1_ps(ar->d[i][a]));
      acc[a] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(reduce_pairs(v)), dd, acc[a]);
      if (has_min)
        acc[a] = _mm512_fmadd_ps(
            _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16))),
            _mm512_set1_ps(ar->s[i][a]), acc[a]);
    }
  }
  const __m512i back = lane_of_row();
#pragma GCC unroll 8
  for (int a = 0; a < A; a++)
    _mm512_storeu_ps(out + (size_t)a * out_stride,
                     _mm512_permutexvar_ps(back, acc[a]));
}

static inline __attribute__((always_inline)) void
gemv(int64_t n, const void *wv, size_t w_stride, int64_t nw, const void *av,
     size_t a_stride, int na, float *out, size_t out_stride, size_t bsize,
     nc_il_pair_fn pair, bool has_min, int offset_c,
     nc_vec_dot_rows_fn fallback) {
  const int64_t nb = n / 32;
  const uint8_t *w = wv;
  act_rows ar;
  int64_t r = 0;
  if (na >= 1 && na <= MAX_A && nb > 0 && nw >= TILE_ROWS &&
      act_rows_new(&ar, av, a_stride, na, nb, has_min, offset_c)) {
#define T(AA)                                                                  \
  for (; r + TILE_ROWS <= nw; r += TILE_ROWS)                                  \
  tile(nb, w + (size_t)r * w_stride, w_stride, bsize, pair, has_min,           \
       offset_c != 0, &ar, AA, out + r, out_stride)
    switch (na) {
    case 1: T(1); break;
    case 2: T(2); break;
    case 3: T(3); break;
    case 4: T(4); break;
    case 5: T(5); break;
    case 6: T(6); break;
    case 7: T(7); break;
    default: T(8); break;
    }
#undef T
    free(ar.mem);
  }
  nc_il_rows_fallback(fallback, n, w + (size_t)r * w_stride, w_stride, nw - r,
                      av, a_stride, na, out + r, out_stride);
}

void nc_amx_gemv_q4_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *a, size_t a_stride, int na, float *out,
                      size_t out_stride) {
  gemv(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q4_0),
       nc_il_pair_q4_0, false, 8, nc_ref_dot_blk_q4_0_rows);
}

void nc_amx_gemv_q8_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *a, size_t a_stride, int na, float *out,
                      size_t out_stride) {
  gemv(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q8_0),
       nc_il_pair_q8_0, false, 128, nc_ref_dot_blk_q8_0_rows);
}

void nc_amx_gemv_q4_1(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *a, size_t a_stride, int na, float *out,
                      size_t out_stride) {
  gemv(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q4_1),
       nc_il_pair_q4_1, true, 0, nc_ref_dot_blk_q4_1_rows);
}
