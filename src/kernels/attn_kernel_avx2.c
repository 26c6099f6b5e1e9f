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

/* Queries per pass: their accumulators stay in registers. */
#define MQ 4

/* Key kr's 16 lanes for M queries (a constant once inlined: the
 * accumulators stay in registers): lo[i][t] (d % 16 < 8) and hi[i][t]. */
static inline __attribute__((always_inline)) void
key_lanes(const int M, const float *qb, int32_t hd, const nc_fp16 *kr,
          __m256 lo[][8], __m256 hi[][8], int32_t t) {
  __m256 l[MQ], h[MQ];
#pragma GCC unroll 4
  for (int i = 0; i < M; i++)
    l[i] = h[i] = _mm256_setzero_ps();
  for (int32_t d = 0; d < hd; d += NC_ATTN_LANES) {
    const __m256 k0 =
        _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + d)));
    const __m256 k1 =
        _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + d + 8)));
#pragma GCC unroll 4
    for (int i = 0; i < M; i++) {
      const float *qi = qb + (size_t)i * (size_t)hd + d;
      l[i] = _mm256_fmadd_ps(_mm256_loadu_ps(qi), k0, l[i]);
      h[i] = _mm256_fmadd_ps(_mm256_loadu_ps(qi + 8), k1, h[i]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < M; i++) {
    lo[i][t] = l[i];
    hi[i][t] = h[i];
  }
}

static void scores_avx2(const float *q, int32_t m, const nc_fp16 *k,
                        size_t k_stride, int32_t n, int32_t hd,
                        const float *tab, float *out, size_t out_stride) {
  if (hd % NC_ATTN_LANES != 0) {
    nc_attn_kernels_plain()->scores(q, m, k, k_stride, n, hd, tab, out,
                                    out_stride);
    return;
  }
  for (int32_t i0 = 0; i0 < m; i0 += MQ) {
    const int32_t mm = m - i0 < MQ ? m - i0 : MQ;
    const float *qb = q + (size_t)i0 * (size_t)hd;
    float *ob = out + (size_t)i0 * out_stride;
    /* Eight keys at a time so that their tree sums share instructions. */
    __m256 lo[MQ][8], hi[MQ][8];
    for (int32_t j = 0; j < n; j += 8) {
      const int32_t nk = n - j < 8 ? n - j : 8;
      for (int32_t t = 0; t < nk; t++) {
        const nc_fp16 *kr = k + (size_t)(j + t) * k_stride;
        switch (mm) {
        case 4: key_lanes(4, qb, hd, kr, lo, hi, t); break;
        case 3: key_lanes(3, qb, hd, kr, lo, hi, t); break;
        case 2: key_lanes(2, qb, hd, kr, lo, hi, t); break;
        default: key_lanes(1, qb, hd, kr, lo, hi, t); break;
        }
      }
      for (int32_t i = 0; i < mm; i++) {
        float *o = ob + (size_t)i * out_stride + (size_t)j;
        if (nk == 8) {
          _mm256_storeu_ps(o, nc_v8x16_sum_tree(lo[i], hi[i]));
        } else {
          for (int32_t t = 0; t < nk; t++)
            o[t] = nc_v16_sum_tree(lo[i][t], hi[i][t]);
        }
      }
    }
  }
}

/* Rows [0, n) of V into the lanes of M queries (a constant once inlined:
 * the broadcast probabilities stay in registers). */
static inline __attribute__((always_inline)) void
accum_rows(const int M, const float *p, size_t p_stride, const nc_fp16 *v,
           size_t v_stride, int32_t j0, int32_t n, int32_t hdv, float *lanes,
           size_t l_stride) {
  for (int32_t j = 0; j < n; j++) {
    const nc_fp16 *vr = v + (size_t)j * v_stride;
    float *ln = lanes + (size_t)((j0 + j) % NC_ATTN_LANES) * (size_t)hdv;
    __m256 pj[MQ];
#pragma GCC unroll 4
    for (int i = 0; i < M; i++)
      pj[i] = _mm256_set1_ps(p[(size_t)i * p_stride + (size_t)j]);
    for (int32_t d = 0; d < hdv; d += 8) {
      const __m256 vv =
          _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vr + d)));
#pragma GCC unroll 4
      for (int i = 0; i < M; i++) {
        float *li = ln + (size_t)i * l_stride + d;
        _mm256_storeu_ps(li, _mm256_fmadd_ps(pj[i], vv, _mm256_loadu_ps(li)));
      }
    }
  }
}

static void accum_v_avx2(const float *p, int32_t m, size_t p_stride,
                         const nc_fp16 *v, size_t v_stride, int32_t j0,
                         int32_t n, int32_t hdv, const float *tab, float *lanes,
                         size_t l_stride) {
  if (hdv % 8 != 0) {
    nc_attn_kernels_plain()->accum_v(p, m, p_stride, v, v_stride, j0, n, hdv,
                                     tab, lanes, l_stride);
    return;
  }
  for (int32_t i0 = 0; i0 < m; i0 += MQ) {
    const float *pb = p + (size_t)i0 * p_stride;
    float *lb = lanes + (size_t)i0 * l_stride;
    switch (m - i0 < MQ ? m - i0 : MQ) {
    case 4:
      accum_rows(4, pb, p_stride, v, v_stride, j0, n, hdv, lb, l_stride);
      break;
    case 3:
      accum_rows(3, pb, p_stride, v, v_stride, j0, n, hdv, lb, l_stride);
      break;
    case 2:
      accum_rows(2, pb, p_stride, v, v_stride, j0, n, hdv, lb, l_stride);
      break;
    default:
      accum_rows(1, pb, p_stride, v, v_stride, j0, n, hdv, lb, l_stride);
      break;
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

static void softmax_avx2(float *s, int32_t n, float scale, float sink,
                         const float *tab) {
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
  max = nc_attn_sink_max(max, sink);
  const __m256 vmax = _mm256_set1_ps(max);
  double sum = 0.0;
  for (int32_t j0 = 0; j0 < n; j0 += NC_ATTN_LANES) {
    const int32_t m = n - j0 < NC_ATTN_LANES ? n - j0 : NC_ATTN_LANES;
    sum += (double)exp_group(s + j0, m, vmax);
  }
  sum += nc_attn_sink_term(max, sink);
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
