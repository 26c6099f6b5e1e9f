/* avx2_lowbit: AVX2 dots of NVFP4, Q1_0 and Q2_0 (Q8_0 activations),
 * bit-identical to ref_lowbit.c (llama.cpp's x86 order): the integer lanes
 * are the reference's (four adjacent products of a 32-element half per
 * int32 lane, exact), the float steps its steps. The avx512 table uses
 * them too (llama.cpp's AVX-512 build runs the same AVX2 code). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx2_util.h"
#include "dot_loops.h"
#include "ref.h"
#include "tables.h"

#define H2F(x) _cvtsh_ss(x) /* F16C: exact, as nc_fp16_to_fp32 */

/* Signed w (|w| <= 127) times signed a, four products per int32 lane. */
static inline __m256i dot_i8(__m256i w, __m256i a) {
  const __m256i p16 =
      _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

static inline int32_t hsum_i32(__m256i v) {
  __m128i s =
      _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

/* -------------------------------------------------------------- NVFP4 */

/* Two 16-element sub-blocks (16 bytes: byte j holds elements j and j + 8
 * of its sub-block) as 32 values in element order. */
static inline __m256i nvfp4_pair(__m128i table, const uint8_t *qs) {
  const __m128i b = _mm_loadu_si128((const __m128i *)qs);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(b, m4));
  const __m128i hi =
      _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(b, 4), m4));
  return _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi),
                          _mm_unpacklo_epi64(lo, hi));
}

float nc_avx2_dot_nvfp4(int64_t n, const void *vw, const void *va) {
  const block_nvfp4 *x = vw;
  const block_q8_0 *y = va;
  const __m128i table = _mm_loadu_si128((const __m128i *)nc_mxfp4_values);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_NVFP4; i++)
    for (int h = 0; h < 2; h++) {
      const block_q8_0 *yh = &y[2 * i + h];
      const float da = H2F(yh->d);
      const __m256i l = dot_i8(nvfp4_pair(table, x[i].qs + 16 * h),
                               _mm256_loadu_si256((const __m256i *)yh->qs));
      const __m256 s = _mm256_set_m128(
          _mm_set1_ps(nc_ue4m3_to_fp32_half(x[i].d[2 * h + 1]) * da),
          _mm_set1_ps(nc_ue4m3_to_fp32_half(x[i].d[2 * h]) * da));
      acc = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(l), acc);
    }
  return nc_hsum8(acc);
}

/* --------------------------------------------------------------- Q1_0 */

/* The lanes of sum(bit ? a : -a) over one Q8_0 block, bits in b32. */
static inline __m256i q1_lanes(uint32_t b32, const int8_t *a) {
  const __m256i spread =
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                       2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
  const __m256i bytes =
      _mm256_shuffle_epi8(_mm256_set1_epi32((int)b32), spread);
  /* 0xff where the bit is 0: those activations are negated */
  const __m256i neg =
      _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), _mm256_setzero_si256());
  const __m256i av = _mm256_loadu_si256((const __m256i *)a);
  const __m256i sa = _mm256_sub_epi8(_mm256_xor_si256(av, neg), neg);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), sa),
                           _mm256_set1_epi16(1));
}

float nc_avx2_dot_q1_0(int64_t n, const void *vw, const void *va) {
  const block_q1_0 *x = vw;
  const block_q8_0 *y = va;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK1_0; i++) {
    __m256 t = _mm256_setzero_ps();
    for (int q = 0; q < 4; q++) {
      uint32_t b32;
      memcpy(&b32, x[i].qs + 4 * q, sizeof b32);
      const block_q8_0 *yq = &y[4 * i + q];
      const __m256 lane = _mm256_cvtepi32_ps(q1_lanes(b32, yq->qs));
      const __m256 da = _mm256_set1_ps(H2F(yq->d));
      t = q == 0 ? _mm256_mul_ps(da, lane) : _mm256_fmadd_ps(da, lane, t);
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d)), t, acc);
  }
  return nc_hsum8(acc);
}

/* --------------------------------------------------------------- Q2_0 */

/* The exact integer dot of 32 two-bit codes (8 bytes, element 4b + k in
 * bits 2k of byte b; value code - 1) with a Q8_0 block's quants. */
static inline int32_t q2_dot(const uint8_t *qs, const int8_t *a) {
  uint64_t b64;
  memcpy(&b64, qs, sizeof b64);
  const __m256i spread =
      _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4,
                       4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
  const __m256i b =
      _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)b64), spread);
  /* byte j keeps bits 2 (j % 4): the four shifts, each kept where j % 4
   * matches */
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i pos = _mm256_set1_epi32(0x03020100);
  __m256i q = _mm256_setzero_si256();
  for (int k = 0; k < 4; k++) {
    const __m256i v = _mm256_and_si256(_mm256_srli_epi16(b, 2 * k), m3);
    const __m256i at = _mm256_cmpeq_epi8(pos, _mm256_set1_epi8((char)k));
    q = _mm256_or_si256(q, _mm256_and_si256(v, at));
  }
  const __m256i av = _mm256_loadu_si256((const __m256i *)a);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i qa = _mm256_madd_epi16(_mm256_maddubs_epi16(q, av), ones);
  const __m256i sa =
      _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), av), ones);
  return hsum_i32(_mm256_sub_epi32(qa, sa)); /* sum (code - 1) * a */
}

float nc_avx2_dot_q2_0(int64_t n, const void *vw, const void *va) {
  const block_q2_0 *x = vw;
  const block_q8_0 *y = va;
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK2_0; i++) {
    float s = 0.0f;
    for (int k = 0; k < 2; k++)
      s = fmaf(H2F(y[2 * i + k].d),
               (float)q2_dot(x[i].qs + 8 * k, y[2 * i + k].qs), s);
    sumf = fmaf(H2F(x[i].d), s, sumf);
  }
  return sumf;
}

NC_DOT_ROWS(avx2, nvfp4)
NC_DOT_ROWS(avx2, q1_0)
NC_DOT_ROWS(avx2, q2_0)
