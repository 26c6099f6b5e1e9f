/* delta_net_avx2: the gated delta rule of delta_net.h with AVX2 + FMA
 * (compiled with -mavx2 -mfma, mk/model.mk; chosen at run time by the ops
 * table). One vector is the 8 lanes of the plain build's dot products, the
 * same fused multiply-adds in the same order and the same final sums, so
 * the results are the plain build's bits. */
#include "delta_net.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <math.h>

/* ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) */
static inline float lanes_sum(__m256 acc) {
  const __m128 a = _mm_add_ps(_mm256_castps256_ps128(acc),
                              _mm256_extractf128_ps(acc, 1)); /* l0+l4 .. */
  const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a)); /* (0+4)+(2+6), .. */
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

void nc_delta_rule_avx2(float *s, const float *q, const float *k,
                        const float *v, float decay, float beta, float scale,
                        float *out, int64_t S) {
  const int64_t n8 = S / 8 * 8;
  const __m256 vdecay = _mm256_set1_ps(decay);
  for (int64_t j = 0; j < S; j++) {
    float *row = s + j * S;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n8; i += 8) {
      const __m256 r = _mm256_mul_ps(_mm256_loadu_ps(row + i), vdecay);
      _mm256_storeu_ps(row + i, r);
      acc = _mm256_fmadd_ps(r, _mm256_loadu_ps(k + i), acc);
    }
    float sk = lanes_sum(acc);
    for (int64_t i = n8; i < S; i++) {
      row[i] *= decay;
      sk = fmaf(row[i], k[i], sk);
    }
    const float d = (v[j] - sk) * beta;
    const __m256 vd = _mm256_set1_ps(d);
    acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n8; i += 8) {
      const __m256 r =
          _mm256_fmadd_ps(_mm256_loadu_ps(k + i), vd, _mm256_loadu_ps(row + i));
      _mm256_storeu_ps(row + i, r);
      acc = _mm256_fmadd_ps(r, _mm256_loadu_ps(q + i), acc);
    }
    float sq = lanes_sum(acc);
    for (int64_t i = n8; i < S; i++) {
      row[i] = fmaf(k[i], d, row[i]);
      sq = fmaf(row[i], q[i], sq);
    }
    out[j] = sq * scale;
  }
}
#endif
