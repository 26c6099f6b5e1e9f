/* attn_kernel_avx2: attn_kernel's loops with AVX2 + F16C intrinsics
 * (compiled with -mavx2 -mfma -mf16c, see mk/model.mk; chosen at run time).
 * Each of the 16 lanes is the same chain of fused multiply-adds as the plain
 * build, eight lanes per instruction, so the results are identical. Head
 * sizes that are not a multiple of 16 (scores) or 8 (values) take the plain
 * loop. */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#include <math.h>

#include "attn_kernel.h"
#include "ops.h"

static void scores_avx2(const float *q, const nc_fp16 *k, size_t k_stride,
                        int32_t n, int32_t hd, const float *tab, float *out) {
  if (hd % NC_ATTN_LANES != 0) {
    nc_attn_kernels_plain()->scores(q, k, k_stride, n, hd, tab, out);
    return;
  }
  for (int32_t j = 0; j < n; j++) {
    const nc_fp16 *kr = k + (size_t)j * k_stride;
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int32_t d = 0; d < hd; d += NC_ATTN_LANES) {
      __m256 k0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + d)));
      __m256 k1 =
          _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + d + 8)));
      lo = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), k0, lo);
      hi = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 8), k1, hi);
    }
    float acc[NC_ATTN_LANES];
    _mm256_storeu_ps(acc, lo);
    _mm256_storeu_ps(acc + 8, hi);
    out[j] = nc_sum16_tree(acc);
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

static const nc_attn_kernels AVX2 = {
    .name = "avx2",
    .scores = scores_avx2,
    .accum_v = accum_v_avx2,
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
