#include "sampler_math.h"

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

float nc_row_max(const float *x, size_t n, bool *bad) {
  float acc[LANES];
  int32_t nan[LANES];
  for (int l = 0; l < LANES; l++)
    acc[l] = -INFINITY, nan[l] = 0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int l = 0; l < LANES; l++) {
      float v = x[i + l];
      acc[l] = v > acc[l] ? v : acc[l];
      nan[l] |= v != v;
    }
  float m = -INFINITY;
  int32_t any_nan = 0;
  for (int l = 0; l < LANES; l++) {
    m = acc[l] > m ? acc[l] : m;
    any_nan |= nan[l];
  }
  for (; i < n; i++) {
    m = x[i] > m ? x[i] : m;
    any_nan |= x[i] != x[i];
  }
  *bad = any_nan || m == INFINITY;
  return m;
}

size_t nc_row_find(const float *x, size_t n, float m) {
  for (size_t i = 0; i < n; i++)
    if (x[i] == m) return i;
  return n;
}

size_t nc_row_find_bad(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (x[i] != x[i] || x[i] == INFINITY) return i;
  return n;
}

/* exp of one block of at most FLUSH elements, summed in LANES float lanes;
 * stored into w when store. */
static inline double exp_block(const float *x, size_t n, float m, float scale,
                               float *w, bool store) {
  float acc[LANES] = {0};
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int l = 0; l < LANES; l++) {
      float e = expf_neg_body((x[i + l] - m) * scale);
      if (store) w[i + l] = e;
      acc[l] += e;
    }
  for (; i < n; i++) {
    float e = expf_neg_body((x[i] - m) * scale);
    if (store) w[i] = e;
    acc[0] += e;
  }
  double block = 0.0;
  for (int l = 0; l < LANES; l++)
    block += acc[l];
  return block;
}

static double exp_store(const float *x, size_t n, float m, float scale,
                        float *w) {
  double total = 0.0;
  for (size_t i = 0; i < n; i += FLUSH)
    total +=
        exp_block(x + i, n - i > FLUSH ? FLUSH : n - i, m, scale, w + i, true);
  return total;
}

static double exp_sum(const float *x, size_t n, float m, float scale) {
  double total = 0.0;
  for (size_t i = 0; i < n; i += FLUSH)
    total +=
        exp_block(x + i, n - i > FLUSH ? FLUSH : n - i, m, scale, NULL, false);
  return total;
}

double nc_row_exp(const float *x, size_t n, float m, float scale, float *w) {
  return w ? exp_store(x, n, m, scale, w) : exp_sum(x, n, m, scale);
}

size_t nc_row_collect(const float *x, size_t n, float m, float scale, float thr,
                      nc_cand *out) {
  /* s >= thr  <=>  x >= m + thr / scale (up to rounding), so blocks whose
   * max is well below that are skipped without computing s. */
  float cut = m + thr / scale;
  float loose = cut - fabsf(cut) * 1e-6f - 1e-30f;
  size_t count = 0;
  size_t i = 0;
  for (; i < n; i += LANES) {
    size_t end = n - i > LANES ? i + LANES : n;
    if (end - i == LANES) {
      float bm = -INFINITY;
      for (int l = 0; l < LANES; l++)
        bm = x[i + l] > bm ? x[i + l] : bm;
      if (!(bm >= loose)) continue;
    }
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

static void sift_down(int32_t *ids, float *vals, size_t k, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < k && worse(vals[l], ids[l], vals[m], ids[m])) m = l;
    if (r < k && worse(vals[r], ids[r], vals[m], ids[m])) m = r;
    if (m == i) return;
    float tv = vals[i];
    int32_t ti = ids[i];
    vals[i] = vals[m], ids[i] = ids[m];
    vals[m] = tv, ids[m] = ti;
    i = m;
  }
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
      float bm = -INFINITY;
      for (int l = 0; l < LANES; l++)
        bm = x[i + l] > bm ? x[i + l] : bm;
      if (!(bm > vals[0])) {
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
