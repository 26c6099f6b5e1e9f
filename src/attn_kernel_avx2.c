/* attn_kernel_avx2: attn_kernel's loops with AVX2 + F16C intrinsics
 * (compiled with -mavx2 -mfma -mf16c, see mk/model.mk; chosen at run time).
 * Each of the 16 lanes is the same chain of fused multiply-adds as the plain
 * build, eight lanes per instruction, and every sum, exp and rounding is the
 * plain build's operation on the same operands (ops_simd.h), so the results
 * are identical. Head sizes that are not a multiple of 16 (scores) or 8
 * (values) take the plain loop. */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attn_kernel.h"
#include "ops.h"
#include "ops_simd.h"

/* Key j's 16 lanes: lo (d % 16 < 8) and hi. */
static inline void score_lanes(const float *q, const nc_fp16 *kr, int32_t hd,
                               __m256 *lo_out, __m256 *hi_out) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  for (int32_t d = 0; d < hd; d += NC_ATTN_LANES) {
    __m256 k0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + d)));
    __m256 k1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + d + 8)));
    lo = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), k0, lo);
    hi = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 8), k1, hi);
  }
  *lo_out = lo;
  *hi_out = hi;
}

static void scores_avx2(const float *q, const nc_fp16 *k, size_t k_stride,
                        int32_t n, int32_t hd, const float *tab, float *out) {
  if (hd % NC_ATTN_LANES != 0) {
    nc_attn_kernels_plain()->scores(q, k, k_stride, n, hd, tab, out);
    return;
  }
  int32_t j = 0;
  /* Eight keys at a time: their eight tree sums share instructions. */
  for (; j + 8 <= n; j += 8) {
    __m256 lo[8], hi[8];
    for (int i = 0; i < 8; i++)
      score_lanes(q, k + (size_t)(j + i) * k_stride, hd, &lo[i], &hi[i]);
    _mm256_storeu_ps(out + j, nc_v8x16_sum_tree(lo, hi));
  }
  for (; j < n; j++) {
    __m256 lo, hi;
    score_lanes(q, k + (size_t)j * k_stride, hd, &lo, &hi);
    out[j] = nc_v16_sum_tree(lo, hi);
  }
}

static void accum_v_avx2(const float *p, const nc_fp16 *v, size_t v_stride,
                         int32_t j0, int32_t n, int32_t hdv, const float *tab,
                         float *lanes) {
  if (hdv % 8 != 0) {
    nc_attn_kernels_plain()->accum_v(p, v, v_stride, j0, n, hdv, tab, lanes);
    return;
  }
  for (int32_t j = 0; j < n; j++) {
    const nc_fp16 *vr = v + (size_t)j * v_stride;
    const __m256 pj = _mm256_set1_ps(p[j]);
    float *ln = lanes + (size_t)((j0 + j) % NC_ATTN_LANES) * (size_t)hdv;
    for (int32_t d = 0; d < hdv; d += 8) {
      __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vr + d)));
      _mm256_storeu_ps(ln + d,
                       _mm256_fmadd_ps(pj, vv, _mm256_loadu_ps(ln + d)));
    }
  }
}

/* e^(x - max) for 16 scores, the group's tree sum (lanes >= m are 0). */
static inline float exp_group(float *s, int32_t m, __m256 vmax) {
  if (m == NC_ATTN_LANES) {
    const __m256 e0 = nc_v8_expf_ggml(_mm256_sub_ps(_mm256_loadu_ps(s), vmax));
    const __m256 e1 =
        nc_v8_expf_ggml(_mm256_sub_ps(_mm256_loadu_ps(s + 8), vmax));
    _mm256_storeu_ps(s, e0);
    _mm256_storeu_ps(s + 8, e1);
    return nc_v16_sum_tree(e0, e1);
  }
  /* A partial group: pad with max (e^0, always the fast path), then zero
   * the padding lanes as the plain loop does. */
  float t[NC_ATTN_LANES];
  _mm256_storeu_ps(t, vmax);
  _mm256_storeu_ps(t + 8, vmax);
  memcpy(t, s, sizeof(float) * (size_t)m);
  __m256 e0 = nc_v8_expf_ggml(_mm256_sub_ps(_mm256_loadu_ps(t), vmax));
  __m256 e1 = nc_v8_expf_ggml(_mm256_sub_ps(_mm256_loadu_ps(t + 8), vmax));
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i vm = _mm256_set1_epi32(m);
  e0 = _mm256_and_ps(e0, _mm256_castsi256_ps(_mm256_cmpgt_epi32(vm, idx)));
  e1 = _mm256_and_ps(e1, _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                             vm, _mm256_add_epi32(idx, _mm256_set1_epi32(8)))));
  _mm256_storeu_ps(t, e0);
  _mm256_storeu_ps(t + 8, e1);
  memcpy(s, t, sizeof(float) * (size_t)m);
  return nc_v16_sum_tree(e0, e1);
}

static void softmax_avx2(float *s, int32_t n, float scale, const float *tab) {
  (void)tab;
  const __m256 vs = _mm256_set1_ps(scale);
  /* max_ps(x, m) is x > m ? x : m, the plain loop's test per lane; lanes
   * and the tail then combine with the same test. Only which zero wins
   * can differ, and e^(s - max) is 1 for s = +-0 with either. */
  __m256 vm = _mm256_set1_ps(-INFINITY);
  int32_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(s + j), vs);
    _mm256_storeu_ps(s + j, x);
    vm = _mm256_max_ps(x, vm);
  }
  float lane[8];
  _mm256_storeu_ps(lane, vm);
  float max = -INFINITY;
  for (int i = 0; i < 8; i++)
    if (lane[i] > max) max = lane[i];
  for (; j < n; j++) {
    s[j] *= scale;
    if (s[j] > max) max = s[j];
  }
  const __m256 vmax = _mm256_set1_ps(max);
  double sum = 0.0;
  for (int32_t j0 = 0; j0 < n; j0 += NC_ATTN_LANES) {
    const int32_t m = n - j0 < NC_ATTN_LANES ? n - j0 : NC_ATTN_LANES;
    sum += (double)exp_group(s + j0, m, vmax);
  }
  const float inv = (float)(1.0 / sum);
  const __m256 vi = _mm256_set1_ps(inv);
  for (j = 0; j + 8 <= n; j += 8)
    _mm256_storeu_ps(
        s + j, nc_v8_round_f16(_mm256_mul_ps(_mm256_loadu_ps(s + j), vi)));
  for (; j < n; j++)
    s[j] = nc_fp16_to_fp32(nc_fp32_to_fp16(s[j] * inv));
}

static void reduce_avx2(const float *lanes, int32_t hdv, float *out) {
  int32_t d = 0;
  for (; d + 8 <= hdv; d += 8) {
    __m256 a[8];
    for (int l = 0; l < 8; l++)
      a[l] = _mm256_add_ps(_mm256_loadu_ps(lanes + (size_t)l * hdv + d),
                           _mm256_loadu_ps(lanes + (size_t)(l + 8) * hdv + d));
    for (int l = 0; l < 4; l++)
      a[l] = _mm256_add_ps(a[l], a[l + 4]);
    for (int l = 0; l < 2; l++)
      a[l] = _mm256_add_ps(a[l], a[l + 2]);
    _mm256_storeu_ps(out + d, _mm256_add_ps(a[0], a[1]));
  }
  for (; d < hdv; d++) {
    float v[NC_ATTN_LANES];
    for (int l = 0; l < NC_ATTN_LANES; l++)
      v[l] = lanes[(size_t)l * (size_t)hdv + (size_t)d];
    out[d] = nc_sum16_tree(v);
  }
}

static const nc_attn_kernels AVX2 = {
    .name = "avx2",
    .scores = scores_avx2,
    .accum_v = accum_v_avx2,
    .softmax = softmax_avx2,
    .reduce = reduce_avx2,
};

const nc_attn_kernels *nc_attn_kernels_avx2(void) {
  return &AVX2;
}
#else
#include "attn_kernel.h"

const nc_attn_kernels *nc_attn_kernels_avx2(void) {
  return NULL;
}
#endif
