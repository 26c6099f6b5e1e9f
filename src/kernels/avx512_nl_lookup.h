/* avx512_nl_lookup: the pieces the AVX-512 VNNI matmuls of IQ4_NL and
 * MXFP4 (avx512_nl_gemm.c, avx512_iq4nl_gemm.c) share. The integer lanes
 * of a block dot (sums of 4 adjacent products) are exact however they are
 * formed, so the codes are looked up as unsigned bytes (value + 128) and
 * vpdpbusd, started from -128 x the activation's lane sums
 * (offset_start), gives sum(value x a) directly: no sign juggling per
 * (weight, activation) pair. Include only from files built with
 * AVX-512 F/BW/VL/DQ, VNNI and F16C. */
#ifndef NC_KERNELS_AVX512_NL_LOOKUP_H
#define NC_KERNELS_AVX512_NL_LOOKUP_H

#include <immintrin.h>
#include <stdint.h>

#define NC_H2F(x) _cvtsh_ss(x) /* F16C: exact, as nc_fp16_to_fp32 */

static inline __m512i unsigned_table(const int8_t vals[16]) {
  const __m128i t = _mm_xor_si128(_mm_loadu_si128((const __m128i *)vals),
                                  _mm_set1_epi8((char)0x80));
  return _mm512_broadcast_i32x4(t);
}

/* Per 16-bit lane: shift 0 in 128-bit lanes 0 and 2, 4 in lanes 1 and 3
 * (low nibbles, then high nibbles, of the same 16 bytes). */
static inline __m512i nibble_shifts(void) {
  return _mm512_set_epi64(0x0004000400040004, 0x0004000400040004, 0, 0,
                          0x0004000400040004, 0x0004000400040004, 0, 0);
}

/* [lo(q) | hi(q) | lo(q) | hi(q)] looked up, q the block's 16 code bytes:
 * the block's 32 weights (+ 128) in both 256-bit halves. */
static inline __m512i lookup_twice(__m512i table, __m512i shifts,
                                   const uint8_t *qs) {
  const __m512i b =
      _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)qs));
  const __m512i idx =
      _mm512_and_si512(_mm512_srlv_epi16(b, shifts), _mm512_set1_epi8(0x0f));
  return _mm512_shuffle_epi8(table, idx);
}

/* Two blocks: block q0's 32 weights (+ 128) in the low half, q1's in the
 * high half. */
static inline __m512i lookup_pair(__m512i table, __m512i shifts,
                                  const uint8_t *q0, const uint8_t *q1) {
  const __m512i x = _mm512_inserti32x4(
      _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)q0)),
      _mm_loadu_si128((const __m128i *)q1), 1);
  const __m512i b = _mm512_shuffle_i32x4(x, x, _MM_SHUFFLE(1, 1, 0, 0));
  const __m512i idx =
      _mm512_and_si512(_mm512_srlv_epi16(b, shifts), _mm512_set1_epi8(0x0f));
  return _mm512_shuffle_epi8(table, idx);
}

/* -128 x the sums of 4 adjacent activations, per int32 lane: the start
 * that turns vpdpbusd of (value + 128) into the dot with value. */
static inline __m512i offset_start(__m512i a) {
  return _mm512_sub_epi32(_mm512_setzero_si512(),
                          _mm512_dpbusd_epi32(_mm512_setzero_si512(),
                                              _mm512_set1_epi8((char)0x80), a));
}

static inline __m512i join(const int8_t *lo, const int8_t *hi) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)lo)),
      _mm256_loadu_si256((const __m256i *)hi), 1);
}

static inline __m512 join_ps(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1);
}

static inline int32_t hsum_i256(__m256i v) {
  __m128i s =
      _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

#endif
