/* sampler_avx2: AVX2 row passes for the sampler (see sampler_simd.h).
 * Built with -mavx2 (no -mfma: results must match the SSE2 path). */
#include "sampler_simd.h"

#if defined(__AVX2__)
#include <immintrin.h>

bool nc_sampler_avx2_built(void) {
  return true;
}
#include <math.h>

float nc_sampler_max16_avx2(const float *x, float *dst, size_t n, bool *nan) {
  __m256 acc0 = _mm256_set1_ps(-INFINITY), acc1 = acc0;
  __m256 bad = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    if (dst) {
      _mm256_storeu_ps(dst + i, a);
      _mm256_storeu_ps(dst + i + 8, b);
    }
    acc0 = _mm256_max_ps(a, acc0); /* NaN in a keeps acc */
    acc1 = _mm256_max_ps(b, acc1);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  }
  float lanes[16];
  _mm256_storeu_ps(lanes, acc0);
  _mm256_storeu_ps(lanes + 8, acc1);
  float m = -INFINITY;
  for (int l = 0; l < 16; l++)
    m = lanes[l] > m ? lanes[l] : m;
  *nan = _mm256_movemask_ps(bad) != 0;
  return m;
}

static inline __m256 exp8_neg(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.3f);
  const __m256 shifter = _mm256_set1_ps(12582912.0f);
  __m256 zero = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  __m256 xc = _mm256_max_ps(x, lo);
  __m256 t = _mm256_add_ps(
      _mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)), shifter);
  __m256 n = _mm256_sub_ps(t, shifter);
  __m256 r = _mm256_sub_ps(xc, _mm256_mul_ps(n, _mm256_set1_ps(0.693359375f)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(-2.12194440e-4f)));
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, r), r), r),
                    _mm256_set1_ps(1.0f));
  __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(zero, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

void nc_sampler_exp16_avx2(const float *x, size_t n, float m, float scale,
                           float *w, float lanes[16]) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
  __m256 vm = _mm256_set1_ps(m), vs = _mm256_set1_ps(scale);
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m256 a =
        exp8_neg(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vs));
    __m256 b = exp8_neg(
        _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm), vs));
    if (w) {
      _mm256_storeu_ps(w + i, a);
      _mm256_storeu_ps(w + i + 8, b);
    }
    acc0 = _mm256_add_ps(acc0, a);
    acc1 = _mm256_add_ps(acc1, b);
  }
  _mm256_storeu_ps(lanes, acc0);
  _mm256_storeu_ps(lanes + 8, acc1);
}
#else
bool nc_sampler_avx2_built(void) {
  return false;
}

/* Not an x86 build with AVX2 flags: never called (the dispatcher checks). */
float nc_sampler_max16_avx2(const float *x, float *dst, size_t n, bool *nan) {
  (void)x, (void)dst, (void)n;
  *nan = true;
  return 0.0f;
}
void nc_sampler_exp16_avx2(const float *x, size_t n, float m, float scale,
                           float *w, float lanes[16]) {
  (void)x, (void)n, (void)m, (void)scale, (void)w;
  for (int l = 0; l < 16; l++)
    lanes[l] = 0.0f;
}
#endif
