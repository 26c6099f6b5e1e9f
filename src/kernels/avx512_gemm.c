/* avx512_gemm: AVX-512 VNNI matmuls (many weight rows x many activation
 * rows) for the 32-element block types Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0, in
 * llama.cpp's x86 float order. Up to NC_AVX512_GEMV_MAX_A activation rows
 * go to avx512_gemv.c.
 *
 * Float order. llama.cpp's AVX2 dot (and our avx2 table, bit for bit) keeps
 * 8 float lanes per (weight row, activation row) pair; per 32-block, lane k
 * gets fma(d_w * d_a, (float)I_k, lane) where I_k is the exact integer dot
 * of elements 4k..4k+3; at the end the lanes are summed by nc_hsum8, and the
 * min types add summs, the fma chain of m_w * s_a over the blocks. Integer
 * sums are exact in any order, so vpdpbusd (u8 x s8, 4 products per int32
 * lane) yields the same I_k; we then run the same float operations per
 * lane. So every output is bit-identical to the avx2 table's vec_dot, hence
 * to llama.cpp's.
 *
 * Layout (avx512_pairs.h). A zmm holds two weight rows' lanes interleaved
 * against one activation row. A weight panel (up to PACK_BUDGET bytes, on
 * the stack) is unpacked once into that layout with each pair's block
 * scales, then every chunk of up to 8 activation rows runs register tiles
 * of 2 pairs (4 rows) x the chunk: 16 accumulators. Per tile and block, the
 * d_w * d_a products of all (row, activation) are made 16 at a time before
 * the block loop, which then takes each pair's two as one 8-byte broadcast:
 * per 64 multiply-adds, vpdpbusd, a convert and an fma. The min types' m_w
 * * s_a chains run 16 (row, activation) lanes per fma. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "avx2_util.h"
#include "avx512_pairs.h"
#include "tables.h"

enum {
  TILE_A = NC_IL_TILE_A, /* activation rows per register tile */
  MAX_BLOCKS = 1024,     /* n <= 32768: larger rows fall back to vec_dot_rows */
  PACK_BUDGET = 256 * 1024,
};

/* Up to TILE_A activation rows, per block: their quants doubled (y), the
 * signed types' starting sums (c), and d_a and s_a, each twice, by row
 * ([a0 a0 a1 a1 ...]: the interleaved lanes' order). Plus d_w * d_a for
 * two tiles (dd, see tile_products). Sized for nb blocks (act_chunk_new). */
typedef struct act_chunk {
  int n_rows;
  __m512i (*y)[TILE_A];
  __m512i (*c)[TILE_A];
  __m512 *d;
  __m512 *s;
  __m512 *dd[2]; /* per pair (of 2) and block: the 16 products */
  void *mem;
} act_chunk;

static bool act_chunk_new(act_chunk *ac, int64_t nb, bool has_offset) {
  const size_t v = sizeof(__m512i) * (size_t)nb;
  const size_t bytes = v * TILE_A * (has_offset ? 2 : 1) + 6 * v;
  ac->mem = aligned_alloc(64, bytes);
  if (!ac->mem) return false;
  uint8_t *p = ac->mem;
  ac->y = (void *)p, p += v * TILE_A;
  ac->c = has_offset ? (void *)p : NULL, p += has_offset ? v * TILE_A : 0;
  ac->d = (void *)p, p += v;
  ac->s = (void *)p, p += v;
  ac->dd[0] = (void *)p, p += 2 * v;
  ac->dd[1] = (void *)p;
  return true;
}

/* Activation rows a0 .. a0 + A - 1 of a, nb blocks of abytes (fp16 d, then
 * for Q8_1 fp16 s, then the 32 quants at aq). */
static void load_chunk(act_chunk *ac, const uint8_t *a, size_t a_stride,
                       int64_t a0, int A, int64_t nb, size_t abytes, size_t aq,
                       int offset_c) {
  ac->n_rows = A;
  const __m512i d_idx =
      _mm512_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
  const __m512i s_idx = _mm512_add_epi32(d_idx, _mm512_set1_epi32(1));
  const uint8_t *base = a + (size_t)a0 * a_stride;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *bi = base + (size_t)i * abytes;
    nc_il_act_rows(bi, a_stride, A, aq, offset_c, ac->y[i],
                   offset_c ? ac->c[i] : NULL);
    /* [d0 s0 d1 s1 ...] -> [d0 d0 d1 d1 ...] and [s0 s0 s1 s1 ...] */
    const __m512 ds = nc_il_act_scales(bi, a_stride, A);
    ac->d[i] = _mm512_permutexvar_ps(d_idx, ds);
    ac->s[i] = _mm512_permutexvar_ps(s_idx, ds);
  }
}

/* Two rows' block headers as {d_r, d_r1, m_r, m_r1} (m: min types). */
static inline __m128 pair_headers(const uint8_t *b0, const uint8_t *b1) {
  int32_t x, y;
  memcpy(&x, b0, 4);
  memcpy(&y, b1, 4);
  const __m128 f = _mm_cvtph_ps(_mm_setr_epi32(x, y, 0, 0));
  return _mm_shuffle_ps(f, f, _MM_SHUFFLE(3, 1, 2, 0));
}

/* A weight panel in the interleaved layout: pair p, block i at
 * [p * nb + i]. */
typedef struct panel {
  const __m512i *q;
  const float (*h)[4];
} panel;

/* d_w * d_a of every (row, activation) of a tile's P pairs, 16 per
 * multiply, into dd. The tiles use them a tile later (gemm computes the
 * next tile's before running this one): read right after they are stored,
 * the broadcasts waited on the stores (a quarter of the time at n = 576). */
static void tile_products(int64_t nb, panel pn, int P, const act_chunk *ac,
                          __m512 *dd) {
  for (int p = 0; p < P; p++)
    for (int64_t i = 0; i < nb; i++) {
      const size_t at = (size_t)p * (size_t)nb + (size_t)i;
      dd[at] = _mm512_mul_ps(nc_il_pair_bcast(pn.h[at]), ac->d[i]);
    }
}

/* One register tile: P pairs from pn (at pair 0) x the A activation rows of
 * ac, with their products dd (tile_products); out[a * out_stride + r]. */
static inline __attribute__((always_inline)) void
tile(int64_t nb, panel pn, const __m512 *ddv, bool has_min, bool has_offset,
     const act_chunk *ac, const int P, const int A, float *out,
     size_t out_stride) {
  __m512 acc[2][TILE_A], sm[2];
#pragma GCC unroll 2
  for (int p = 0; p < P; p++) {
    sm[p] = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int a = 0; a < A; a++)
      acc[p][a] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < nb; i++) {
    __m512i q[2];
    const float *dd[2];
#pragma GCC unroll 2
    for (int p = 0; p < P; p++) {
      const size_t at = (size_t)p * (size_t)nb + (size_t)i;
      q[p] = _mm512_load_si512(&pn.q[at]);
      dd[p] = (const float *)&ddv[at];
      if (has_min)
        sm[p] =
            _mm512_fmadd_ps(nc_il_pair_bcast(&pn.h[at][2]), ac->s[i], sm[p]);
    }
#pragma GCC unroll 8
    for (int a = 0; a < A; a++) {
      const __m512i y = _mm512_load_si512(&ac->y[i][a]);
      const __m512i *c0 = has_offset ? &ac->c[i][a] : NULL;
#pragma GCC unroll 2
      for (int p = 0; p < P; p++)
        acc[p][a] = _mm512_fmadd_ps(nc_il_pair_bcast(dd[p] + 2 * a),
                                    _mm512_cvtepi32_ps(nc_il_dot(c0, q[p], y)),
                                    acc[p][a]);
    }
  }
  if (P == 1) {
    acc[1][0] = sm[1] = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int a = 1; a < A; a++)
      acc[1][a] = acc[1][0];
  }
#pragma GCC unroll 4
  for (int a = 0; a < A; a += 2) {
    /* the summs of (a, b)'s rows: [a pair 0, a pair 1, b pair 0, b pair 1] */
    const int b = a + 1 < A ? a + 1 : a;
    const __m512 mins =
        has_min
            ? _mm512_permutex2var_ps(
                  sm[0],
                  _mm512_setr_epi32(2 * a, 2 * a + 1, 16 + 2 * a, 17 + 2 * a,
                                    2 * b, 2 * b + 1, 16 + 2 * b, 17 + 2 * b, 0,
                                    0, 0, 0, 0, 0, 0, 0),
                  sm[1])
            : _mm512_setzero_ps();
    nc_il_store_sums(acc, has_min, mins, a, a + 1 < A, P, out, out_stride);
  }
}

/* Instances per (P, A) with A the activation rows of this chunk. */
static inline __attribute__((always_inline)) void
tile_any(int64_t nb, panel pn, const __m512 *dd, bool has_min, bool has_offset,
         const act_chunk *ac, int P, float *out, size_t out_stride) {
#define T(PP, AA)                                                              \
  tile(nb, pn, dd, has_min, has_offset, ac, PP, AA, out, out_stride)
#define CASES(PP)                                                              \
  switch (ac->n_rows) {                                                        \
  case 1: T(PP, 1); break;                                                     \
  case 2: T(PP, 2); break;                                                     \
  case 3: T(PP, 3); break;                                                     \
  case 4: T(PP, 4); break;                                                     \
  case 5: T(PP, 5); break;                                                     \
  case 6: T(PP, 6); break;                                                     \
  case 7: T(PP, 7); break;                                                     \
  default: T(PP, 8); break;                                                    \
  }
  if (P == 2) {
    CASES(2)
  } else {
    CASES(1)
  }
#undef CASES
#undef T
}

static inline __attribute__((always_inline)) void
gemm(int64_t n, const void *wv, size_t w_stride, int64_t nw, const void *av,
     size_t a_stride, int64_t na, float *out, size_t out_stride, size_t bsize,
     nc_il_pair_fn pair, bool has_min, int offset_c,
     nc_vec_dot_rows_fn fallback) {
  const int64_t nb = n / 32;
  const uint8_t *w = wv, *a = av;
  act_chunk ac;
  if (nb > MAX_BLOCKS || nb <= 0 || !act_chunk_new(&ac, nb, offset_c != 0)) {
    nc_il_rows_fallback(fallback, n, w, w_stride, nw, a, a_stride, (int)na, out,
                        out_stride);
    return;
  }
  const size_t abytes = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
  const size_t aq = has_min ? 4 : 2;
  const size_t pair_block = sizeof(__m512i) + 4 * sizeof(float);
  /* rows per panel: an even number that fits the budget (>= 2: nb is at
   * most MAX_BLOCKS) */
  const int64_t panel_rows = (int64_t)(PACK_BUDGET / (pair_block * nb)) * 2;
  _Alignas(64) uint8_t buf[PACK_BUDGET];
  for (int64_t r0 = 0; r0 < nw; r0 += panel_rows) {
    const int64_t rows = nw - r0 < panel_rows ? nw - r0 : panel_rows;
    const int64_t pairs = rows / 2;
    __m512i *pq = (__m512i *)buf;
    float(*ph)[4] = (void *)(buf + sizeof(__m512i) * (size_t)(pairs * nb));
    const uint8_t *wr = w + (size_t)r0 * w_stride;
    for (int64_t p = 0; p < pairs; p++) {
      const uint8_t *row = wr + (size_t)(2 * p) * w_stride;
      nc_prefetch_lines(nc_prefetch_base(row, 2 * w_stride), 2 * w_stride);
      for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b0 = row + (size_t)i * bsize;
        pq[p * nb + i] = pair(b0, b0 + w_stride);
        _mm_store_ps(ph[p * nb + i], pair_headers(b0, b0 + w_stride));
      }
    }
    for (int64_t a0 = 0; a0 < na; a0 += TILE_A) {
      const int A = na - a0 < TILE_A ? (int)(na - a0) : TILE_A;
      load_chunk(&ac, a, a_stride, a0, A, nb, abytes, aq, offset_c);
      float *o = out + (size_t)a0 * out_stride + (size_t)r0;
      tile_products(nb, (panel){pq, (const float(*)[4])ph}, pairs >= 2 ? 2 : 1,
                    &ac, ac.dd[0]);
      for (int64_t p = 0, t = 0; p < pairs; p += 2, t ^= 1) {
        const panel pn = {pq + p * nb, (const float(*)[4])ph + p * nb};
        if (p + 2 < pairs) /* the next tile's products */
          tile_products(nb, (panel){pn.q + 2 * nb, pn.h + 2 * nb},
                        pairs - p - 2 >= 2 ? 2 : 1, &ac, ac.dd[t ^ 1]);
        tile_any(nb, pn, ac.dd[t], has_min, offset_c != 0, &ac,
                 pairs - p >= 2 ? 2 : 1, o + 2 * p, out_stride);
      }
    }
    if (rows % 2) /* the odd last row */
      fallback(n, wr + (size_t)(rows - 1) * w_stride, a, a_stride, (int)na,
               out + r0 + rows - 1, out_stride);
  }
  free(ac.mem);
}

/* The entry points: gemm with the pairs of each type (has_min: Q4_1/Q5_1,
 * x Q8_1, min term; offset: the signed types' c), gemv for few rows. */
void nc_avx512_gemm_q4_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int64_t na, float *out,
                         size_t out_stride) {
  if (na <= (NC_AVX512_GEMV_MAX_A)) {
    nc_avx512_gemv_q4_0(n, w, w_stride, nw, a, a_stride, (int)na, out,
                        out_stride);
    return;
  }
  gemm(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q4_0),
       nc_il_pair_q4_0, false, 8, nc_avx2_dot_q4_0_rows);
}

void nc_avx512_gemm_q5_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int64_t na, float *out,
                         size_t out_stride) {
  if (na <= (NC_AVX512_GEMV_MAX_A)) {
    nc_avx512_gemv_q5_0(n, w, w_stride, nw, a, a_stride, (int)na, out,
                        out_stride);
    return;
  }
  gemm(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q5_0),
       nc_il_pair_q5_0, false, 16, nc_avx2_dot_q5_0_rows);
}

void nc_avx512_gemm_q8_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int64_t na, float *out,
                         size_t out_stride) {
  if (na <= (NC_AVX512_GEMV_MAX_A)) {
    nc_avx512_gemv_q8_0(n, w, w_stride, nw, a, a_stride, (int)na, out,
                        out_stride);
    return;
  }
  gemm(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q8_0),
       nc_il_pair_q8_0, false, 128, nc_avx2_dot_q8_0_rows);
}

void nc_avx512_gemm_q4_1(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int64_t na, float *out,
                         size_t out_stride) {
  if (na <= (NC_AVX512_GEMV_MAX_A)) {
    nc_avx512_gemv_q4_1(n, w, w_stride, nw, a, a_stride, (int)na, out,
                        out_stride);
    return;
  }
  gemm(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q4_1),
       nc_il_pair_q4_1, true, 0, nc_avx2_dot_q4_1_rows);
}

void nc_avx512_gemm_q5_1(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int64_t na, float *out,
                         size_t out_stride) {
  if (na <= (NC_AVX512_GEMV_MAX_A)) {
    nc_avx512_gemv_q5_1(n, w, w_stride, nw, a, a_stride, (int)na, out,
                        out_stride);
    return;
  }
  gemm(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q5_1),
       nc_il_pair_q5_1, true, 0, nc_avx2_dot_q5_1_rows);
}
