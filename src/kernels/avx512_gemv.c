/* avx512_gemv: AVX-512 VNNI matrix x vector (many weight rows, one
 * activation row: decode) for the 32-element block types Q4_0, Q4_1, Q5_0,
 * Q5_1 and Q8_0, bit-identical to the avx2 dots (llama.cpp's float order,
 * see avx512_gemm.c).
 *
 * Layout: avx512_pairs.h, two weight rows' lanes interleaved in a zmm. The
 * activation block is stored once per call with each dword doubled, so a
 * pair's d_w * d_a vector is a single 8-byte broadcast of the two rows'
 * products, a plain load.
 *
 * Per tile of 4 rows, the block headers come first: one gather takes 4
 * blocks x 4 rows, in block-major order, so the d_w * d_a products and the
 * m_w values land in memory as [block][row]. The block loop then only
 * loads, and the min types' m_w * s_a chains run as one 4-lane FMA per
 * block. Every lane sees the same integers and float operations as the
 * avx2 dot, hence the same bits; the 8 lanes of each row are summed by
 * nc_hsum8 as there. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "avx2_util.h"
#include "avx512_pairs.h"
#include "tables.h"

enum { MAX_BLOCKS = 1024 }; /* n <= 32768, as the gemm */

/* The activation row, prepared once per call. */
typedef struct act_row {
  __m512i *y; /* per block: its 8 quant dwords, each doubled */
  __m512i
      *c; /* signed types: per block, -c * (sum of each 4 quants), doubled */
  float (*d)[4]; /* per block: d_a, 4 times (one per tile row) */
  float *s;      /* Q8_1: per block s_a */
  void *mem;
} act_row;

static bool act_row_new(act_row *ar, const uint8_t *a, int64_t nb, bool has_min,
                        int offset_c) {
  const size_t bytes =
      (size_t)nb * (2 * sizeof(__m512i) + 4 * sizeof(float) + sizeof(float));
  ar->mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!ar->mem) return false;
  uint8_t *p = ar->mem;
  ar->y = (void *)p, p += sizeof(__m512i) * (size_t)nb;
  ar->c = (void *)p, p += sizeof(__m512i) * (size_t)nb;
  ar->d = (void *)p, p += 4 * sizeof(float) * (size_t)nb;
  ar->s = (void *)p;
  const size_t abytes = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
  const size_t aq = has_min ? 4 : 2;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *blk = a + (size_t)i * abytes;
    ar->y[i] = nc_il_act(blk + aq);
    if (offset_c) ar->c[i] = nc_il_offset(blk + aq, offset_c);
    int32_t h; /* fp16 d, then s (Q8_1) or two quants (Q8_0) */
    memcpy(&h, blk, sizeof h);
    const __m128 ds = _mm_cvtph_ps(_mm_cvtsi32_si128(h));
    _mm_storeu_ps(ar->d[i], _mm_broadcastss_ps(ds));
    ar->s[i] = _mm_cvtss_f32(_mm_movehdup_ps(ds));
  }
  return true;
}

/* Rows 0..3 of the tile: per block, d_w * d_a (dd) and m_w (mm) by row.
 * The fp16 d (and m) lead every block's first dword. */
static inline __attribute__((always_inline)) void
tile_headers(const uint8_t *w, size_t w_stride, size_t bsize, int64_t nb,
             int rows, bool has_min, const act_row *ar, float (*dd)[4],
             float (*mm)[4]) {
  /* lanes of rows past the tile's (a 2-row tile) read nothing */
  const __mmask16 row_lanes = rows == 4 ? 0xffff : 0x3333;
  const __m512i idx = _mm512_add_epi32(
      _mm512_mullo_epi32(
          _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3),
          _mm512_set1_epi32((int)w_stride)),
      _mm512_mullo_epi32(
          _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
          _mm512_set1_epi32((int)bsize)));
  for (int64_t i = 0; i < nb; i += 4) {
    const __mmask16 k = nb - i >= 4 ? (__mmask16)0xffff
                                    : (__mmask16)((1u << (4 * (nb - i))) - 1);
    const __m512i h = _mm512_mask_i32gather_epi32(
        _mm512_setzero_si512(), k & row_lanes, idx, w + (size_t)i * bsize, 1);
    /* whole-vector stores (the buffers have room): the block loop's
     * loads are then forwarded or read from L1 */
    _mm512_storeu_ps(dd[i],
                     _mm512_mul_ps(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)),
                                   _mm512_maskz_loadu_ps(k, ar->d[i])));
    if (has_min)
      _mm512_storeu_ps(mm[i], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
                                  _mm512_srli_epi32(h, 16))));
  }
}

/* P pairs (2P rows from w) x the activation row; out[0 .. 2P). */
static inline __attribute__((always_inline)) void
tile(int64_t nb, const uint8_t *w, size_t w_stride, size_t bsize,
     nc_il_pair_fn pair, bool has_min, bool has_offset, const act_row *ar,
     const int P, float *out) {
  float dd[MAX_BLOCKS + 4][4], mm[MAX_BLOCKS + 4][4];
  tile_headers(w, w_stride, bsize, nb, 2 * P, has_min, ar, dd, mm);
  __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  __m128 summs = _mm_setzero_ps();
  /* the rows ahead (see nc_prefetch_base), 2P blocks' bytes per block */
  const uint8_t *pf = nc_prefetch_base(w, (size_t)(2 * P) * w_stride);
  const size_t pf_step = (size_t)(2 * P) * bsize;
  for (int64_t i = 0; i < nb; i++) {
    nc_prefetch_lines(pf + (size_t)i * pf_step, pf_step);
    const __m512i y = _mm512_load_si512(&ar->y[i]);
    const __m512i *c0 = has_offset ? &ar->c[i] : NULL;
#pragma GCC unroll 2
    for (int p = 0; p < P; p++) {
      const uint8_t *b0 = w + (size_t)(2 * p) * w_stride + (size_t)i * bsize;
      const __m512i l = nc_il_dot(c0, pair(b0, b0 + w_stride), y);
      acc[p] = _mm512_fmadd_ps(nc_il_pair_bcast(&dd[i][2 * p]),
                               _mm512_cvtepi32_ps(l), acc[p]);
    }
    if (has_min)
      summs = _mm_fmadd_ps(_mm_loadu_ps(mm[i]), _mm_set1_ps(ar->s[i]), summs);
  }
  float sm[4];
  _mm_storeu_ps(sm, summs);
#pragma GCC unroll 2
  for (int p = 0; p < P; p++)
#pragma GCC unroll 2
    for (int odd = 0; odd < 2; odd++) {
      const float v = nc_hsum8(nc_il_lanes(acc[p], odd));
      out[2 * p + odd] = has_min ? v + sm[2 * p + odd] : v;
    }
}

static inline __attribute__((always_inline)) void
gemv(int64_t n, const void *wv, size_t w_stride, int64_t nw, const void *av,
     float *out, size_t bsize, nc_il_pair_fn pair, bool has_min, int offset_c,
     nc_vec_dot_fn fallback) {
  const int64_t nb = n / 32;
  const uint8_t *w = wv;
  act_row ar;
  if (nb > MAX_BLOCKS || nb <= 0 ||
      !act_row_new(&ar, av, nb, has_min, offset_c)) {
    for (int64_t r = 0; r < nw; r++)
      out[r] = fallback(n, w + (size_t)r * w_stride, av);
    return;
  }
  int64_t r = 0;
  for (; r + 4 <= nw; r += 4)
    tile(nb, w + (size_t)r * w_stride, w_stride, bsize, pair, has_min,
         offset_c != 0, &ar, 2, out + r);
  if (r + 2 <= nw) {
    tile(nb, w + (size_t)r * w_stride, w_stride, bsize, pair, has_min,
         offset_c != 0, &ar, 1, out + r);
    r += 2;
  }
  if (r < nw) out[r] = fallback(n, w + (size_t)r * w_stride, av);
  free(ar.mem);
}

#define GEMV(name, block, has_min, offset)                                     \
  void nc_avx512_gemv_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *a, float *out) {          \
    gemv(n, w, w_stride, nw, a, out, sizeof(block), nc_il_pair_##name,         \
         has_min, offset, nc_avx2_dot_##name);                                 \
  }
GEMV(q4_0, block_q4_0, false, 8)
GEMV(q5_0, block_q5_0, false, 16)
GEMV(q8_0, block_q8_0, false, 128)
GEMV(q4_1, block_q4_1, true, 0)
GEMV(q5_1, block_q5_1, true, 0)
#undef GEMV
