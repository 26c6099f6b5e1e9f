/* sampler_avx512: AVX-512 row passes for the sampler (see sampler_simd.h):
 * one register holds the 16 lanes. Built with -mavx512f and
 * -ffp-contract=off: results must match the SSE2 path bit for bit. */
#include "sampler_simd.h"

#if defined(__AVX512F__)
#include <immintrin.h>

bool nc_sampler_avx512_built(void) {
  return true;
}
#include <math.h>

float nc_sampler_max16_avx512(const float *x, float *dst, size_t n, bool *nan) {
  __m512 acc = _mm512_set1_ps(-INFINITY);
  __mmask16 bad = 0;
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m512 a = _mm512_loadu_ps(x + i);
    if (dst) _mm512_storeu_ps(dst + i, a);
    acc = _mm512_max_ps(a, acc); /* NaN in a keeps acc */
    bad |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
  }
  float lanes[16];
  _mm512_storeu_ps(lanes, acc);
  float m = -INFINITY;
  for (int l = 0; l < 16; l++)
    m = lanes[l] > m ? lanes[l] : m;
  *nan = bad != 0;
  return m;
}

static inline __m512 exp16_neg(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.3f);
  const __m512 shifter = _mm512_set1_ps(12582912.0f);
  __mmask16 keep = _mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ); /* !(x < lo) */
  __m512 xc = _mm512_max_ps(x, lo);
  __m512 t = _mm512_add_ps(
      _mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)), shifter);
  __m512 n = _mm512_sub_ps(t, shifter);
  __m512 r = _mm512_sub_ps(xc, _mm512_mul_ps(n, _mm512_set1_ps(0.693359375f)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(-2.12194440e-4f)));
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, r), r), r),
                    _mm512_set1_ps(1.0f));
  __m512i bits = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(keep, p, _mm512_castsi512_ps(bits));
}

void nc_sampler_exp16_avx512(const float *x, size_t n, float m, float scale,
                             float *w, float lanes[16]) {
  __m512 acc = _mm512_setzero_ps();
  __m512 vm = _mm512_set1_ps(m), vs = _mm512_set1_ps(scale);
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m512 e =
        exp16_neg(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vs));
    if (w) _mm512_storeu_ps(w + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  _mm512_storeu_ps(lanes, acc);
}
#else
bool nc_sampler_avx512_built(void) {
  return false;
}

/* Not built with AVX-512 flags: never called (the dispatcher checks). */
float nc_sampler_max16_avx512(const float *x, float *dst, size_t n, bool *nan) {
  (void)x, (void)dst, (void)n;
  *nan = true;
  return 0.0f;
}
void nc_sampler_exp16_avx512(const float *x, size_t n, float m, float scale,
                             float *w, float lanes[16]) {
  (void)x, (void)n, (void)m, (void)scale, (void)w;
  for (int l = 0; l < 16; l++)
    lanes[l] = 0.0f;
}
#endif
