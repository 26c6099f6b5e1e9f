/* avx512_f32: the F32 matmuls of the avx512 tables in the orders of
 * llama.cpp's AVX-512 build. It multiplies F32 matrices by two or more F32
 * activation rows through llamafile's tinyBLAS (when n is a multiple of
 * 16): one 16-lane accumulator per output, a fused multiply-add per 16
 * elements in order, then the 16 lanes summed as _mm512_reduce_add_ps does
 * (the halving tree, nc_sum16_tree); other n take the avx2 table's dot.
 * One row (a decode step) goes through ggml_vec_dot_f32 instead: four
 * 16-lane accumulators over steps of 64 (accumulator j takes elements
 * 16 j .. 16 j + 15 of each step), summed 0 + 2, 1 + 3, then the two, then
 * the tree, the elements past the last whole step added by fused
 * multiply-adds into that float: the gemm_few of the tables (batch.h's
 * NC_MM_FEW rows; a micro-batch of 2 to 7 rows thus gets the one-row order
 * where llama.cpp takes tinyBLAS's). F32 matrices are the routers of the
 * mixtures of experts (Mixtral, qwen3moe, gpt-oss), where the last bit of
 * a logit moves the experts' weights. */
#include <immintrin.h>
#include <math.h>

#include "ops_simd.h"
#include "tables.h"

float nc_avx512_dot_f32(int64_t n, const void *vw, const void *va) {
  if (n % 16 != 0) return nc_avx2_dot_f32(n, vw, va);
  const float *w = vw, *a = va;
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16)
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(a + i), acc);
  return nc_v16_sum_tree(
      _mm512_castps512_ps256(acc),
      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)));
}

void nc_avx512_dot_f32_rows(int64_t n, const void *w, const void *a,
                            size_t a_stride, int nrows, float *out,
                            size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_avx512_dot_f32(n, w, ap + (size_t)r * a_stride);
}

float nc_avx512_dot_f32_vec(int64_t n, const void *vw, const void *va) {
  const float *w = vw, *a = va;
  __m512 s[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                 _mm512_setzero_ps()};
  const int64_t np = n & ~(int64_t)63;
  for (int64_t i = 0; i < np; i += 64)
    for (int j = 0; j < 4; j++)
      s[j] = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16 * j),
                             _mm512_loadu_ps(a + i + 16 * j), s[j]);
  s[0] = _mm512_add_ps(s[0], s[2]);
  s[1] = _mm512_add_ps(s[1], s[3]);
  s[0] = _mm512_add_ps(s[0], s[1]);
  float sum = nc_v16_sum_tree(
      _mm512_castps512_ps256(s[0]),
      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s[0]), 1)));
  for (int64_t i = np; i < n; i++)
    sum = fmaf(w[i], a[i], sum);
  return sum;
}

void nc_avx512_gemm_f32_vec(int64_t n, const void *w, size_t w_stride,
                            int64_t nw, const void *act, size_t a_stride,
                            int64_t na, float *out, size_t out_stride) {
  const char *wp = w, *ap = act;
  for (int64_t r = 0; r < nw; r++)
    for (int64_t k = 0; k < na; k++)
      out[(size_t)k * out_stride + (size_t)r] = nc_avx512_dot_f32_vec(
          n, wp + (size_t)r * w_stride, ap + (size_t)k * a_stride);
}
