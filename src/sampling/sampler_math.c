#include "sampler_math.h"

#include "kernels/sampler_simd.h"

#include <math.h>
#include <string.h>

/* Lanes of the explicit reductions: wide enough for AVX, fixed so the order
 * of every sum depends only on n. */
#define LANES 16
#define FLUSH 1024 /* elements summed in float lanes before going to double */

static inline float expf_neg_body(float x) {
  /* Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then a degree-7
   * polynomial for e^r (Cephes' expf coefficients) and 2^n by exponent bits.
   * The rounding trick needs IEEE semantics (no -ffast-math). */
  const float log2e = 1.44269504088896341f;
  const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
  const float shifter = 12582912.0f; /* 1.5 * 2^23 */
  float xc = x < -87.3f ? -87.3f : x;
  float t = xc * log2e + shifter;
  float n = t - shifter;
  float r = xc - n * ln2_hi - n * ln2_lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return x < -87.3f ? 0.0f : p * scale;
}

float nc_expf_neg(float x) {
  return expf_neg_body(x);
}

#if defined(__SSE2__)
#include <emmintrin.h>

/* The same operations as expf_neg_body, four at a time (bit-identical:
 * no FMA, same order). */
static inline __m128 exp4_neg(__m128 x) {
  const __m128 lo = _mm_set1_ps(-87.3f);
  const __m128 shifter = _mm_set1_ps(12582912.0f);
  __m128 zero = _mm_cmplt_ps(x, lo);
  __m128 xc = _mm_max_ps(x, lo);
  __m128 t =
      _mm_add_ps(_mm_mul_ps(xc, _mm_set1_ps(1.44269504088896341f)), shifter);
  __m128 n = _mm_sub_ps(t, shifter);
  __m128 r = _mm_sub_ps(xc, _mm_mul_ps(n, _mm_set1_ps(0.693359375f)));
  r = _mm_sub_ps(r, _mm_mul_ps(n, _mm_set1_ps(-2.12194440e-4f)));
  __m128 p = _mm_set1_ps(1.9875691500e-4f);
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.3981999507e-3f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(8.3334519073e-3f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(4.1665795894e-2f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.6666665459e-1f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(5.0000001201e-1f));
  p = _mm_add_ps(_mm_add_ps(_mm_mul_ps(_mm_mul_ps(p, r), r), r),
                 _mm_set1_ps(1.0f));
  __m128i bits = _mm_slli_epi32(
      _mm_add_epi32(_mm_cvttps_epi32(n), _mm_set1_epi32(127)), 23);
  return _mm_andnot_ps(zero, _mm_mul_ps(p, _mm_castsi128_ps(bits)));
}

static inline float hmax4(__m128 v) {
  float l[4];
  _mm_storeu_ps(l, v);
  float m = l[0];
  for (int i = 1; i < 4; i++)
    m = l[i] > m ? l[i] : m;
  return m;
}

/* Whether any of 16 floats is > t (strict) or >= t: one compare of the
 * lane-wise max against t, no horizontal reduction. NaN never passes. */
static inline __m128 block_max4x4(const float *x) {
  __m128 a = _mm_max_ps(_mm_loadu_ps(x), _mm_loadu_ps(x + 4));
  __m128 b = _mm_max_ps(_mm_loadu_ps(x + 8), _mm_loadu_ps(x + 12));
  return _mm_max_ps(a, b);
}
static inline bool block_any_gt16(const float *x, float t) {
  return _mm_movemask_ps(_mm_cmpgt_ps(block_max4x4(x), _mm_set1_ps(t))) != 0;
}
static inline bool block_any_ge16(const float *x, float t) {
  return _mm_movemask_ps(_mm_cmpge_ps(block_max4x4(x), _mm_set1_ps(t))) != 0;
}
#else
static inline bool block_any_gt16(const float *x, float t) {
  for (int l = 0; l < LANES; l++)
    if (x[l] > t) return true;
  return false;
}
static inline bool block_any_ge16(const float *x, float t) {
  for (int l = 0; l < LANES; l++)
    if (x[l] >= t) return true;
  return false;
}
#endif

static bool use_avx2(void) {
#if defined(__x86_64__) || defined(__i386__)
  return nc_sampler_avx2_built() && __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

static bool use_avx512(void) {
#if defined(__x86_64__) || defined(__i386__)
  return nc_sampler_avx512_built() && __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

float nc_row_copy_max(const float *x, float *dst, size_t n, bool *bad) {
  return nc_row_copy_max_isa(x, dst, n, bad, NC_SIMD_BEST);
}

float nc_row_copy_max_isa(const float *x, float *dst, size_t n, bool *bad,
                          int simd) {
  float m = -INFINITY;
  bool any_nan = false;
  size_t i = 0;
  if (simd >= NC_SIMD_AVX512 && use_avx512()) {
    m = nc_sampler_max16_avx512(x, dst, n, &any_nan);
    i = n - n % LANES;
  } else if (simd >= NC_SIMD_AVX2 && use_avx2()) {
    m = nc_sampler_max16_avx2(x, dst, n, &any_nan);
    i = n - n % LANES;
  }
#if defined(__SSE2__)
  else {
    __m128 acc[4], nan = _mm_setzero_ps();
    for (int l = 0; l < 4; l++)
      acc[l] = _mm_set1_ps(-INFINITY);
    for (; i + LANES <= n; i += LANES)
      for (int l = 0; l < 4; l++) {
        __m128 v = _mm_loadu_ps(x + i + 4 * l);
        if (dst) _mm_storeu_ps(dst + i + 4 * l, v);
        acc[l] = _mm_max_ps(v, acc[l]); /* NaN in v keeps acc */
        nan = _mm_or_ps(nan, _mm_cmpunord_ps(v, v));
      }
    m = hmax4(
        _mm_max_ps(_mm_max_ps(acc[0], acc[1]), _mm_max_ps(acc[2], acc[3])));
    any_nan = _mm_movemask_ps(nan) != 0;
  }
#endif
  for (; i < n; i++) {
    if (dst) dst[i] = x[i];
    m = x[i] > m ? x[i] : m;
    any_nan |= x[i] != x[i];
  }
  *bad = any_nan || m == INFINITY;
  return m;
}

float nc_row_max(const float *x, size_t n, bool *bad) {
  return nc_row_copy_max(x, NULL, n, bad);
}

size_t nc_row_find(const float *x, size_t n, float m) {
  size_t i = 0;
#if defined(__SSE2__)
  __m128 vm = _mm_set1_ps(m);
  for (; i + 4 <= n; i += 4) {
    int mask = _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(x + i), vm));
    if (mask) return i + (size_t)__builtin_ctz((unsigned)mask);
  }
#endif
  for (; i < n; i++)
    if (x[i] == m) return i;
  return n;
}

size_t nc_row_find_bad(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (x[i] != x[i] || x[i] == INFINITY) return i;
  return n;
}

/* exp of one block of at most FLUSH elements, summed in LANES float lanes
 * in a fixed order; stored into w when not NULL. */
static double exp_block(const float *x, size_t n, float m, float scale,
                        float *w, int simd) {
  float lanes[LANES] = {0};
  size_t i = 0;
  if (simd >= NC_SIMD_AVX512 && use_avx512()) {
    nc_sampler_exp16_avx512(x, n, m, scale, w, lanes);
    i = n - n % LANES;
  } else if (simd >= NC_SIMD_AVX2 && use_avx2()) {
    nc_sampler_exp16_avx2(x, n, m, scale, w, lanes);
    i = n - n % LANES;
  }
#if defined(__SSE2__)
  else {
    __m128 acc[4];
    for (int l = 0; l < 4; l++)
      acc[l] = _mm_setzero_ps();
    __m128 vm = _mm_set1_ps(m), vs = _mm_set1_ps(scale);
    for (; i + LANES <= n; i += LANES)
      for (int l = 0; l < 4; l++) {
        __m128 v = _mm_loadu_ps(x + i + 4 * l);
        __m128 e = exp4_neg(_mm_mul_ps(_mm_sub_ps(v, vm), vs));
        if (w) _mm_storeu_ps(w + i + 4 * l, e);
        acc[l] = _mm_add_ps(acc[l], e);
      }
    for (int l = 0; l < 4; l++)
      _mm_storeu_ps(lanes + 4 * l, acc[l]);
  }
#else
  else {
    for (; i + LANES <= n; i += LANES)
      for (int l = 0; l < LANES; l++) {
        float e = expf_neg_body((x[i + l] - m) * scale);
        if (w) w[i + l] = e;
        lanes[l] += e;
      }
  }
#endif
  for (; i < n; i++) {
    float e = expf_neg_body((x[i] - m) * scale);
    if (w) w[i] = e;
    lanes[0] += e;
  }
  double block = 0.0;
  for (int l = 0; l < LANES; l++)
    block += lanes[l];
  return block;
}

double nc_row_exp(const float *x, size_t n, float m, float scale, float *w) {
  return nc_row_exp_isa(x, n, m, scale, w, NC_SIMD_BEST);
}

double nc_row_exp_isa(const float *x, size_t n, float m, float scale, float *w,
                      int simd) {
  double total = 0.0;
  for (size_t i = 0; i < n; i += FLUSH)
    total += exp_block(x + i, n - i > FLUSH ? FLUSH : n - i, m, scale,
                       w ? w + i : NULL, simd);
  return total;
}

size_t nc_row_collect(const float *x, size_t n, float m, float scale, float thr,
                      nc_cand *out) {
  /* s >= thr  <=>  x >= m + thr / scale (up to rounding), so blocks whose
   * max is well below that are skipped without computing s. */
  float cut = m + thr / scale;
  float loose = cut - fabsf(cut) * 1e-6f - 1e-30f;
  size_t count = 0;
  for (size_t i = 0; i < n; i += LANES) {
    size_t end = n - i > LANES ? i + LANES : n;
    if (end - i == LANES && !block_any_ge16(x + i, loose)) continue;
    for (size_t j = i; j < end; j++) {
      if (!(x[j] >= loose) || x[j] == -INFINITY) continue;
      float s = (x[j] - m) * scale;
      if (!(s >= thr)) continue;
      out[count].s = s;
      out[count].w = expf_neg_body(s);
      out[count].key = -s;
      out[count].id = (int32_t)j;
      count++;
    }
  }
  return count;
}

/* Min-heap on (val, then higher id = worse) of the best k so far. */
static bool worse(float va, int32_t ia, float vb, int32_t ib) {
  return va < vb || (va == vb && ia > ib);
}

/* Moves the element at i down to its place (a hole travels, no swaps). */
static void sift_down(int32_t *ids, float *vals, size_t k, size_t i) {
  float v = vals[i];
  int32_t id = ids[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= k) break;
    if (c + 1 < k && worse(vals[c + 1], ids[c + 1], vals[c], ids[c])) c++;
    if (!worse(vals[c], ids[c], v, id)) break;
    vals[i] = vals[c], ids[i] = ids[c];
    i = c;
  }
  vals[i] = v, ids[i] = id;
}

static void sift_up(int32_t *ids, float *vals, size_t i) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!worse(vals[i], ids[i], vals[p], ids[p])) return;
    float tv = vals[i];
    int32_t ti = ids[i];
    vals[i] = vals[p], ids[i] = ids[p];
    vals[p] = tv, ids[p] = ti;
    i = p;
  }
}

size_t nc_row_topn(const float *x, size_t n, size_t k, bool skip_neg_inf,
                   int32_t *ids, float *vals) {
  if (k == 0) return 0;
  size_t size = 0;
  size_t i = 0;
  while (i < n) {
    /* Full heap: skip whole blocks that cannot beat the root. Indices only
     * grow, so an equal value never beats the root either. */
    if (size == k && n - i >= LANES) {
      if (!block_any_gt16(x + i, vals[0])) {
        i += LANES;
        continue;
      }
    }
    size_t end = n - i > LANES ? i + LANES : n;
    for (; i < end; i++) {
      float v = x[i];
      if (skip_neg_inf && v == -INFINITY) continue;
      if (size < k) {
        vals[size] = v, ids[size] = (int32_t)i;
        sift_up(ids, vals, size);
        size++;
      } else if (v > vals[0]) {
        vals[0] = v, ids[0] = (int32_t)i;
        sift_down(ids, vals, k, 0);
      }
    }
  }
  /* Heap sort: repeatedly move the worst to the end -> descending order. */
  for (size_t end = size; end > 1; end--) {
    float tv = vals[0];
    int32_t ti = ids[0];
    vals[0] = vals[end - 1], ids[0] = ids[end - 1];
    vals[end - 1] = tv, ids[end - 1] = ti;
    sift_down(ids, vals, end - 1, 0);
  }
  return size;
}
