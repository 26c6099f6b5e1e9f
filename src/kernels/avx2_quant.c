/* avx2_quant: AVX2 activation quantizers, bit for bit the same as
 * nc_quantize_row (quant.c): the same float operations (amax of |x| with
 * NaN ignored, d = amax / 127, id = 127 / amax, x * id rounded to nearest
 * even, NaN to 0, clamped to +-127), only eight at a time. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "tables.h"

/* max |x| over 32 floats; vmaxps returns its second operand when the
 * first is NaN, so NaN elements are skipped as in the scalar loop. */
static inline float amax32(const float *x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int k = 0; k < 4; k++)
    m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), m);
  __m128 r = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
  r = _mm_max_ps(r, _mm_movehl_ps(r, r));
  r = _mm_max_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

/* A block scale to fp16 with F16C: the same bits as nc_fp32_to_fp16 for
 * the values a scale takes (no NaN but the default one, whose fp16 both
 * make 0xfe00), in one instruction instead of a bit-twiddling call. */
static inline nc_fp16 scale_to_fp16(float f) {
  return (nc_fp16)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

/* round(x * id) as int32, NaN -> 0, clamped to [-127, 127]. */
static inline __m256i q8_lanes(const float *x, __m256 id) {
  __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), id);
  v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)),
                    _mm256_set1_ps(127.0f));
  return _mm256_cvtps_epi32(v);
}

/* Four vectors of 8 int32 (elements 0..31 in order) -> 32 int8. */
static inline void store_q8(int8_t *dst, __m256i i0, __m256i i1, __m256i i2,
                            __m256i i3) {
  __m256i a = _mm256_packs_epi32(i0, i1); /* 0-3 8-11 4-7 12-15 */
  __m256i b = _mm256_packs_epi32(i2, i3);
  __m256i p = _mm256_packs_epi16(a, b);
  p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256((__m256i *)dst, p);
}

static inline int hsum_i32(__m256i v) {
  __m128i s =
      _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

void nc_avx2_quant_q8_0(const float *x, void *vy, int64_t n) {
  block_q8_0 *y = vy;
  for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
    const float amax = amax32(x);
    const float d = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    y[i].d = scale_to_fp16(d);
    store_q8(y[i].qs, q8_lanes(x, id), q8_lanes(x + 8, id),
             q8_lanes(x + 16, id), q8_lanes(x + 24, id));
  }
}

void nc_avx2_quant_q8_1(const float *x, void *vy, int64_t n) {
  block_q8_1 *y = vy;
  for (int64_t i = 0; i < n / QK8_1; i++, x += QK8_1) {
    const float amax = amax32(x);
    const float d = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i i0 = q8_lanes(x, id), i1 = q8_lanes(x + 8, id);
    __m256i i2 = q8_lanes(x + 16, id), i3 = q8_lanes(x + 24, id);
    const int sum = hsum_i32(
        _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
    y[i].d = scale_to_fp16(d);
    y[i].s = scale_to_fp16(d * (float)sum);
    store_q8(y[i].qs, i0, i1, i2, i3);
  }
}

void nc_avx2_quant_q8_k(const float *x, void *vy, int64_t n) {
  block_q8_K *y = vy;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < QK_K; k += 8)
      m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)), m);
    __m128 r =
        _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
    r = _mm_max_ps(r, _mm_movehl_ps(r, r));
    r = _mm_max_ss(r, _mm_movehdup_ps(r));
    const float amax = _mm_cvtss_f32(r);
    if (amax == 0.0f || isinf(amax)) {
      memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    /* the first element of largest magnitude, with its sign */
    float max = 0.0f;
    const __m256 va = _mm256_set1_ps(amax);
    for (int k = 0; k < QK_K; k += 8) {
      __m256 v = _mm256_loadu_ps(x + k);
      int hit = _mm256_movemask_ps(
          _mm256_cmp_ps(_mm256_andnot_ps(sign, v), va, _CMP_EQ_OQ));
      if (hit) {
        max = x[k + __builtin_ctz((unsigned)hit)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 is = _mm256_set1_ps(iscale);
    for (int k = 0; k < QK_K; k += 32) {
      __m256i i0 = q8_lanes(x + k, is), i1 = q8_lanes(x + k + 8, is);
      __m256i i2 = q8_lanes(x + k + 16, is), i3 = q8_lanes(x + k + 24, is);
      y[i].bsums[k / 16] = (int16_t)hsum_i32(_mm256_add_epi32(i0, i1));
      y[i].bsums[k / 16 + 1] = (int16_t)hsum_i32(_mm256_add_epi32(i2, i3));
      store_q8(y[i].qs + k, i0, i1, i2, i3);
    }
    y[i].d = 1.0f / iscale;
  }
}

void nc_avx2_quant_f16(const float *x, void *vy, int64_t n) {
  nc_fp16 *y = vy;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    /* NaN: ggml's quiet 0x7e00 with the sign, not the hardware payload */
    __m256 v = _mm256_loadu_ps(x + i);
    int nan = _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    _mm_storeu_si128((__m128i *)(y + i), h);
    for (int k = 0; nan && k < 8; k++)
      if (nan & (1 << k)) y[i + k] = nc_fp32_to_fp16(x[i + k]);
  }
  for (; i < n; i++)
    y[i] = nc_fp32_to_fp16(x[i]);
}
