/* ops_avx2: ops.c's row operations with AVX2 + FMA + F16C intrinsics
 * (compiled with -mavx2 -mfma -mf16c, see mk/model.mk; chosen at run time).
 * Each lane runs the reference's exact sequence of IEEE operations (the same
 * fused multiply-adds, the same roundings, sums in the same order), so the
 * results are the reference's bits; tails shorter than a vector run the
 * reference's scalar code. */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <math.h>

#include "delta_net.h"
#include "ops.h"
#include "ops_simd.h"

static void rmsnorm_avx2(const float *x, const float *w, float *y, int64_t n,
                         float eps) {
  /* The double sum is one chain of dependent additions in the reference's
   * order: nothing to vectorize without changing its rounding. */
  const float scale = nc_rms_scale(x, n, eps);
  const __m256 vs = _mm256_set1_ps(scale);
  int64_t i = 0;
  if (w) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(y + i,
                       _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs),
                                     _mm256_loadu_ps(w + i)));
    for (; i < n; i++)
      y[i] = (x[i] * scale) * w[i];
  } else {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
    for (; i < n; i++)
      y[i] = x[i] * scale;
  }
}

static inline void rope_pair(float *v, int32_t i0, int32_t i1, float c,
                             float s) {
  const float x0 = v[i0], x1 = v[i1];
  v[i0] = fmaf(x0, c, -(x1 * s));
  v[i1] = fmaf(x0, s, x1 * c);
}

static void rope_avx2(float *x, int32_t n_heads, int32_t head_dim,
                      int32_t n_rot, bool neox, const float *cos_c,
                      const float *sin_c) {
  const int32_t half = n_rot / 2;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  int32_t k = 0;
  if (neox) {
    /* v[k] = fma(x0, c, -(x1 s)), v[k + half] = fma(x0, s, x1 c) */
    for (; k + 8 <= half; k += 8) {
      const __m256 c = _mm256_loadu_ps(cos_c + k),
                   s = _mm256_loadu_ps(sin_c + k);
      for (int32_t h = 0; h < n_heads; h++) {
        float *v = x + (int64_t)h * head_dim;
        const __m256 x0 = _mm256_loadu_ps(v + k),
                     x1 = _mm256_loadu_ps(v + k + half);
        const __m256 nx1s = _mm256_xor_ps(_mm256_mul_ps(x1, s), sign);
        _mm256_storeu_ps(v + k, _mm256_fmadd_ps(x0, c, nx1s));
        _mm256_storeu_ps(v + k + half,
                         _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c)));
      }
    }
    for (int32_t h = 0; h < n_heads; h++)
      for (int32_t kk = k; kk < half; kk++)
        rope_pair(x + (int64_t)h * head_dim, kk, kk + half, cos_c[kk],
                  sin_c[kk]);
    return;
  }
  /* Adjacent pairs, four per vector: with a = (x0, x0), b = (x1, x1) per
   * pair, out = fma(a, (c, s), b * (-s, c)); b * -s == -(x1 s) exactly. */
  for (; k + 4 <= half; k += 4) {
    const __m128 c4 = _mm_loadu_ps(cos_c + k), s4 = _mm_loadu_ps(sin_c + k);
    const __m128 ns4 = _mm_xor_ps(s4, _mm_set1_ps(-0.0f));
    const __m256 cs =
        _mm256_set_m128(_mm_unpackhi_ps(c4, s4), _mm_unpacklo_ps(c4, s4));
    const __m256 sc =
        _mm256_set_m128(_mm_unpackhi_ps(ns4, c4), _mm_unpacklo_ps(ns4, c4));
    for (int32_t h = 0; h < n_heads; h++) {
      float *v = x + (int64_t)h * head_dim + 2 * k;
      const __m256 xv = _mm256_loadu_ps(v);
      const __m256 a = _mm256_moveldup_ps(xv), b = _mm256_movehdup_ps(xv);
      _mm256_storeu_ps(v, _mm256_fmadd_ps(a, cs, _mm256_mul_ps(b, sc)));
    }
  }
  for (int32_t h = 0; h < n_heads; h++)
    for (int32_t kk = k; kk < half; kk++)
      rope_pair(x + (int64_t)h * head_dim, 2 * kk, 2 * kk + 1, cos_c[kk],
                sin_c[kk]);
}

static inline __m256 silu_mul8(__m256 g, __m256 u) {
  const __m256 e = nc_v8_expf_ggml(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)),
                       u);
}

static void swiglu_avx2(const float *gate, const float *up, float *out,
                        int64_t n) {
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    const __m256 g0 = _mm256_loadu_ps(gate + i),
                 g1 = _mm256_loadu_ps(gate + i + 8);
    const __m256 u0 = _mm256_loadu_ps(up + i), u1 = _mm256_loadu_ps(up + i + 8);
    _mm256_storeu_ps(out + i, silu_mul8(g0, u0));
    _mm256_storeu_ps(out + i + 8, silu_mul8(g1, u1));
  }
  for (; i < n; i++)
    out[i] = nc_silu(gate[i]) * up[i];
}

/* silu_plain 8 at a time (0 - x: the same exp input as -x but for the
 * sign of a zero, whose exp is 1 either way); the tail as silu_plain. */
static void silu_avx2(float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 e = nc_v8_expf_ggml(_mm256_sub_ps(_mm256_setzero_ps(), v));
    _mm256_storeu_ps(x + i,
                     _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e)));
  }
  nc_ops_plain()->silu(x + i, n - i);
}

static void add_avx2(float *y, const float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(
        y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
  for (; i < n; i++)
    y[i] += x[i];
}

static void to_f16_avx2(const float *x, nc_fp16 *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(y + i), nc_v8_to_f16(_mm256_loadu_ps(x + i)));
  for (; i < n; i++)
    y[i] = nc_fp32_to_fp16(x[i]);
}

static void round_f16_avx2(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, nc_v8_round_f16(_mm256_loadu_ps(x + i)));
  for (; i < n; i++)
    y[i] = nc_fp16_to_fp32(nc_fp32_to_fp16(x[i]));
}

/* geglu_plain 8 at a time: the halves of gate by vcvtps2ph (round to
 * nearest even, as nc_fp32_to_fp16), the table's halves gathered and
 * widened exactly. */
static void geglu_avx2(float *gate, const float *up, int64_t n,
                       const nc_fp16 *gelu) {
  int64_t i = 0;
  for (; i + 7 < n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i),
                 u = up ? _mm256_loadu_ps(up + i) : _mm256_set1_ps(1.0f);
    const __m256i h = _mm256_cvtepu16_epi32(
        _mm256_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i t = _mm256_i32gather_epi32((const int *)gelu, h, 2);
    /* the low half of each gathered dword, packed (exact) */
    const __m128i t16 = _mm_packus_epi32(
        _mm256_castsi256_si128(_mm256_and_si256(t, _mm256_set1_epi32(0xffff))),
        _mm256_extracti128_si256(_mm256_and_si256(t, _mm256_set1_epi32(0xffff)),
                                 1));
    __m256 y = _mm256_mul_ps(_mm256_cvtph_ps(t16), u);
    y = _mm256_blendv_ps(y, _mm256_mul_ps(g, u),
                         _mm256_cmp_ps(g, _mm256_set1_ps(10.0f), _CMP_GE_OQ));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(),
                         _mm256_cmp_ps(g, _mm256_set1_ps(-10.0f), _CMP_LE_OQ));
    _mm256_storeu_ps(gate + i, y);
  }
  nc_ops_plain()->geglu(gate + i, up ? up + i : NULL, n - i, gelu);
}

static const nc_ops_kernels AVX2 = {
    .name = "avx2",
    .rmsnorm = rmsnorm_avx2,
    .rope_apply = rope_avx2,
    .swiglu = swiglu_avx2,
    .silu = silu_avx2,
    .add = add_avx2,
    .to_f16 = to_f16_avx2,
    .round_f16 = round_f16_avx2,
    .geglu = geglu_avx2,
    .delta_rule = nc_delta_rule_avx2,
};

const nc_ops_kernels *nc_ops_avx2(void) {
  return &AVX2;
}
#else
#include "ops.h"

const nc_ops_kernels *nc_ops_avx2(void) {
  return NULL;
}
#endif
