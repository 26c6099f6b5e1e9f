/* avx512_pairs.h: the dword-interleaved pair layout shared by the AVX-512
 * VNNI gemv (avx512_gemv.c) and gemm (avx512_gemm.c). Include only from
 * files compiled with the avx512 flags (see mk/quant.mk). Internal.
 *
 * A zmm holds two (weight row, activation row) pairs with their dword lanes
 * interleaved: lane 2k is row r's lane k (elements 4k..4k+3 of a 32-block),
 * lane 2k + 1 is row r + 1's. llama.cpp's AVX2 dot keeps 8 float lanes per
 * pair and per block does lane k += d_w * d_a * (float)I_k, with I_k the
 * exact integer dot of elements 4k..4k+3 (see avx512_gemm.c): with the
 * rows interleaved, the two rows' d_w * d_a are one 8-byte broadcast.
 *
 * The weight quants go in unsigned: the signed types store q + c (Q4_0: the
 * nibble, c = 8; Q5_0: the 5-bit value, c = 16; Q8_0: q ^ 0x80, c = 128)
 * and each lane's integer sum starts at -c times the sum of its activation
 * quants, so vpdpbusd ends at exactly sum q * a. */
#ifndef NC_KERNELS_AVX512_PAIRS_H
#define NC_KERNELS_AVX512_PAIRS_H

#include <immintrin.h>
#include <string.h>

#include "kernels.h"

/* Activation dwords 0..7 -> each twice: the interleaved lanes' partner. */
static inline __m512i nc_il_double(__m256i v) {
  return _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7),
      _mm512_castsi256_si512(v));
}

/* One activation block's 32 quants, doubled, and for the signed weight
 * types (offset c != 0) the lanes' starting sums -c * (sum of 4 quants). */
static inline __m512i nc_il_act(const uint8_t *q) {
  return nc_il_double(_mm256_loadu_si256((const __m256i *)q));
}

static inline __m512i nc_il_offset(const uint8_t *q, int c) {
  const __m256i y = _mm256_loadu_si256((const __m256i *)q);
  return nc_il_double(
      _mm256_sub_epi32(_mm256_setzero_si256(),
                       _mm256_dpbusd_epi32(_mm256_setzero_si256(),
                                           _mm256_set1_epi8((char)c), y)));
}

/* Block i of up to 8 activation rows (row k at bi + k * a_stride; quants
 * at offset aq): each row's quants doubled into y[k] and, for the signed
 * weight types (offset_c != 0), its lanes' starting sums into c[k]. */
static inline void nc_il_act_rows(const uint8_t *bi, size_t a_stride, int A,
                                  size_t aq, int offset_c, __m512i *y,
                                  __m512i *c) {
  for (int k = 0; k < A; k++) {
    const uint8_t *q = bi + (size_t)k * a_stride + aq;
    y[k] = nc_il_act(q);
    if (offset_c) c[k] = nc_il_offset(q, offset_c);
  }
}

/* The block headers of up to 8 activation rows in one gather, as floats
 * [d0 s0 d1 s1 ...]: fp16 d, then s (Q8_1) or two quants (Q8_0); rows past
 * A read nothing and give 0. */
static inline __m512 nc_il_act_scales(const uint8_t *bi, size_t a_stride,
                                      int A) {
  const __m256i rows =
      _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                         _mm256_set1_epi32((int)a_stride));
  return _mm512_cvtph_ps(_mm256_mmask_i32gather_epi32(
      _mm256_setzero_si256(), (__mmask8)((1u << A) - 1), rows, bi, 1));
}

/* Two rows' 16 nibble bytes: [A0 B0 A1 B1 A2 B2 A3 B3] twice (dwords),
 * the upper half shifted to the high nibbles. */
static inline __m512i nc_il_nibbles(const uint8_t *q0, const uint8_t *q1) {
  const __m512i idx =
      _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 0, 16, 1, 17, 2, 18, 3, 19);
  __m512i z = _mm512_permutex2var_epi32(
      _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)q0)), idx,
      _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)q1)));
  z = _mm512_mask_srli_epi32(z, 0xff00, z, 4);
  return _mm512_and_si512(z, _mm512_set1_epi8(0x0f));
}

/* The 5th bits of the two rows (32 each) as a byte mask of that layout:
 * byte 8k + t is row 0's element 4k + t, byte 8k + 4 + t row 1's. */
static inline __m512i nc_il_high_bits(__m512i u, const uint8_t *h0,
                                      const uint8_t *h1) {
  uint32_t a, b;
  memcpy(&a, h0, 4);
  memcpy(&b, h1, 4);
  const __mmask64 m =
      _pdep_u64(a, 0x0f0f0f0f0f0f0f0full) | _pdep_u64(b, 0xf0f0f0f0f0f0f0f0ull);
  /* bit 4 of u is clear: the add sets it (one op, where a blend of u and
   * u | 0x10 took two) */
  return _mm512_mask_add_epi8(u, m, u, _mm512_set1_epi8(0x10));
}

/* Two rows' blocks -> their unsigned quants, interleaved. */
typedef __m512i (*nc_il_pair_fn)(const uint8_t *b0, const uint8_t *b1);

static inline __m512i nc_il_pair_q4_0(const uint8_t *b0, const uint8_t *b1) {
  return nc_il_nibbles(((const block_q4_0 *)b0)->qs,
                       ((const block_q4_0 *)b1)->qs);
}

static inline __m512i nc_il_pair_q4_1(const uint8_t *b0, const uint8_t *b1) {
  return nc_il_nibbles(((const block_q4_1 *)b0)->qs,
                       ((const block_q4_1 *)b1)->qs);
}

static inline __m512i nc_il_pair_q5_0(const uint8_t *b0, const uint8_t *b1) {
  const block_q5_0 *x0 = (const void *)b0, *x1 = (const void *)b1;
  return nc_il_high_bits(nc_il_nibbles(x0->qs, x1->qs), x0->qh, x1->qh);
}

static inline __m512i nc_il_pair_q5_1(const uint8_t *b0, const uint8_t *b1) {
  const block_q5_1 *x0 = (const void *)b0, *x1 = (const void *)b1;
  return nc_il_high_bits(nc_il_nibbles(x0->qs, x1->qs), x0->qh, x1->qh);
}

static inline __m512i nc_il_pair_q8_0(const uint8_t *b0, const uint8_t *b1) {
  const __m512i idx =
      _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i z = _mm512_permutex2var_epi32(
      _mm512_castsi256_si512(
          _mm256_loadu_si256((const __m256i *)((const block_q8_0 *)b0)->qs)),
      idx,
      _mm512_castsi256_si512(
          _mm256_loadu_si256((const __m256i *)((const block_q8_0 *)b1)->qs)));
  return _mm512_xor_si512(z, _mm512_set1_epi8((char)0x80));
}

/* The integer lanes of one block: c + (4-byte dot of u and y per lane),
 * c = NULL for 0. vpdpbusd only accumulates, so a zero start must be a
 * fresh register: written as the zero idiom (no execution port), where the
 * compiler would otherwise copy one zero register into each (a vector ALU
 * op per dot, a quarter of the tile's arithmetic). */
static inline __m512i nc_il_dot(const __m512i *c, __m512i u, __m512i y) {
  __m512i l;
  if (c) {
    l = _mm512_load_si512(c);
    __asm__("vpdpbusd %2, %1, %0" : "+v"(l) : "v"(u), "v"(y));
  } else {
    __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2, %1, %0"
            : "=&v"(l)
            : "v"(u), "v"(y));
  }
  return l;
}

/* Two floats (row r's, row r + 1's) at p, broadcast as a pair. */
static inline __m512 nc_il_pair_bcast(const float *p) {
  double v;
  memcpy(&v, p, sizeof v);
  return _mm512_castpd_ps(_mm512_set1_pd(v));
}

/* The avx2 rows kernel for every weight row: where the fast paths do not
 * apply (rows too long, no memory for the activation scratch). */
static inline void nc_il_rows_fallback(nc_vec_dot_rows_fn rows, int64_t n,
                                       const uint8_t *w, size_t w_stride,
                                       int64_t nw, const void *a,
                                       size_t a_stride, int na, float *out,
                                       size_t out_stride) {
  for (int64_t r = 0; r < nw; r++)
    rows(n, w + (size_t)r * w_stride, a, a_stride, na, out + r, out_stride);
}

/* Activation rows per register tile of the matmuls' sums (below). */
enum { NC_IL_TILE_A = 8 };

/* Activation rows a and (if two) a + 1 of a tile: each (row, activation)'s
 * 8 lanes summed in nc_hsum8's order, ((0+4)+(2+6))+((1+5)+(3+7)), four
 * accumulators at a time, then (has_min) plus the min types' summs, mins:
 * a's 2P rows' in floats 0..3, b's in 4..7; out[a * out_stride + r] for
 * the tile's 2P rows. For P == 1, acc[1][a] and acc[1][b] must be set (to
 * anything: their sums are not stored). */
static inline __attribute__((always_inline)) void
nc_il_store_sums(__m512 acc[2][NC_IL_TILE_A], bool has_min, __m512 mins, int a,
                 bool two, int P, float *out, size_t out_stride) {
  const int b = two ? a + 1 : a;
  /* lanes k + (k + 4): [pair 0 | pair 1] per activation row */
  const __m512 ta = _mm512_add_ps(
      _mm512_shuffle_f32x4(acc[0][a], acc[1][a], _MM_SHUFFLE(1, 0, 1, 0)),
      _mm512_shuffle_f32x4(acc[0][a], acc[1][a], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 tb = _mm512_add_ps(
      _mm512_shuffle_f32x4(acc[0][b], acc[1][b], _MM_SHUFFLE(1, 0, 1, 0)),
      _mm512_shuffle_f32x4(acc[0][b], acc[1][b], _MM_SHUFFLE(3, 2, 3, 2)));
  /* + (k + 2): quarters [a pair 0, a pair 1, b pair 0, b pair 1], each
   * (k0 row r, k0 row r + 1, k1 row r, k1 row r + 1) */
  const __m512 u =
      _mm512_add_ps(_mm512_shuffle_f32x4(ta, tb, _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm512_shuffle_f32x4(ta, tb, _MM_SHUFFLE(3, 1, 3, 1)));
  /* k0 + k1, in dwords 0 and 1 of each quarter */
  const __m512 v =
      _mm512_add_ps(u, _mm512_permute_ps(u, _MM_SHUFFLE(1, 0, 3, 2)));
  __m512 o = _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 0, 0, 0, 0, 0, 0, 0, 0), v);
  if (has_min) o = _mm512_add_ps(o, mins);
  const __mmask8 rows = P == 2 ? 0x0f : 0x03;
  _mm_mask_storeu_ps(out + (size_t)a * out_stride, rows,
                     _mm512_castps512_ps128(o));
  if (two)
    _mm_mask_storeu_ps(out + (size_t)b * out_stride, rows,
                       _mm512_extractf32x4_ps(o, 1));
}

#endif
