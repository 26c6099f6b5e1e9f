/* kernels (K-quants in llama.cpp's x86 order): a plain-C model of llama.cpp's
 * AVX2 ggml_vec_dot_q{2,3,4,5,6}_K_q8_K (its integer lanes and its float
 * operations, one by one), checked against llama.cpp's SIMD golden dots and
 * against ref; a model of llama.cpp's tiled K-quant matmul (its order for
 * 8+ activation rows) for ref_tiled.c and the *_tiled kernels the avx512
 * table uses; then every kernel claiming that order (avx512_kquant.c,
 * ref_tiled.c and the avx2 table's) bit for bit against the model on random
 * rows, and gemm / vec_dot_rows bit for bit against
 * vec_dot for any panel and batch shape (batch invariance). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_require.h"

#include "../reference/ref_tiled.h"
#include "kernels/kernels.h"
#include "kernels/ref.h"
#include "kernels/tables.h"
#include "quant_golden.h"

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static uint64_t next_u64(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

static float next_unit(uint64_t *s) { /* [-1, 1) */
  return (float)((next_u64(s) >> 40) * 0x1p-24) * 2.0f - 1.0f;
}

/* ------------------------------------------------ the llama.cpp model */

/* llama.cpp's hsum_float_8: (k + k+4), then (0+2, 1+3), then the two. */
static float hsum8(const float a[8]) {
  float r[4];
  for (int k = 0; k < 4; k++)
    r[k] = a[k + 4] + a[k];
  const float t0 = r[0] + r[2], t1 = r[1] + r[3];
  return t0 + t1;
}

/* Scale and min j (0..7) of a Q4_K block (6 bits each, 12-byte packing). */
static void q4k_scale_min(const uint8_t *q, int j, int *sc, int *m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

/* Q4_K: 8 int lanes (lane k: elements 32c + 4k .. +3 of every chunk c,
 * times the chunk's scale), 4 min lanes; float steps as in llama.cpp. */
static float model_q4k(int64_t n, const void *w, const void *a) {
  const block_q4_K *x = w;
  const block_q8_K *y = a;
  float acc[8] = {0}, accm[4] = {0};
  for (int64_t i = 0; i < n / QK_K; i++) {
    int sc[8], m[8];
    for (int j = 0; j < 8; j++)
      q4k_scale_min(x[i].scales, j, &sc[j], &m[j]);
    int32_t lane[8] = {0};
    for (int c = 0; c < 8; c++)
      for (int e = 0; e < 32; e++) {
        const uint8_t b = x[i].qs[32 * (c / 2) + e];
        const int q = c % 2 ? b >> 4 : b & 0xf;
        lane[e / 4] += sc[c] * q * y[i].qs[32 * c + e];
      }
    int32_t mins[4];
    for (int k = 0; k < 4; k++) {
      const int s0 = y[i].bsums[4 * k] + y[i].bsums[4 * k + 1];
      const int s1 = y[i].bsums[4 * k + 2] + y[i].bsums[4 * k + 3];
      mins[k] = m[2 * k] * s0 + m[2 * k + 1] * s1;
    }
    const float d = y[i].d * nc_fp16_to_fp32(x[i].d);
    const float dmin = -y[i].d * nc_fp16_to_fp32(x[i].dmin);
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(d, (float)lane[k], acc[k]);
    for (int k = 0; k < 4; k++)
      accm[k] = fmaf(dmin, (float)mins[k], accm[k]);
  }
  const float m = (accm[0] + accm[2]) + (accm[1] + accm[3]);
  return hsum8(acc) + m;
}

/* Q6_K: quants as 0..63 times the 16-element scales, lane k as above,
 * minus 32 (bs_2k sc_2k + bs_2k+1 sc_2k+1); one fma per lane and block. */
static float model_q6k(int64_t n, const void *w, const void *a) {
  const block_q6_K *x = w;
  const block_q8_K *y = a;
  float acc[8] = {0};
  for (int64_t i = 0; i < n / QK_K; i++) {
    int32_t lane[8] = {0};
    for (int idx = 0; idx < QK_K; idx++) {
      const int h = idx / 128, part = idx % 128 / 32, e = idx % 32;
      const uint8_t l = x[i].ql[64 * h + 32 * (part & 1) + e];
      const int lo = part < 2 ? l & 0xf : l >> 4;
      const int hi = (x[i].qh[32 * h + e] >> (2 * part)) & 3;
      lane[idx % 32 / 4] +=
          x[i].scales[idx / 16] * (lo | hi << 4) * y[i].qs[idx];
    }
    for (int k = 0; k < 8; k++)
      lane[k] -= 32 * (y[i].bsums[2 * k] * x[i].scales[2 * k] +
                       y[i].bsums[2 * k + 1] * x[i].scales[2 * k + 1]);
    const float d = y[i].d * nc_fp16_to_fp32(x[i].d);
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(d, (float)lane[k], acc[k]);
  }
  return hsum8(acc);
}

/* Q5_K: Q4_K's lanes with a fifth bit (bit c of qh[e] for element e of
 * chunk c); the mins go to one float, s = fma(dmin, sum of the 4 min
 * lanes, s) per block (llama.cpp's summs += dmin * hsum, contracted);
 * result hsum8(acc) + s. */
static float model_q5k(int64_t n, const void *w, const void *a) {
  const block_q5_K *x = w;
  const block_q8_K *y = a;
  float acc[8] = {0}, summs = 0;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int sc[8], m[8];
    for (int j = 0; j < 8; j++)
      q4k_scale_min(x[i].scales, j, &sc[j], &m[j]);
    int32_t lane[8] = {0};
    for (int c = 0; c < 8; c++)
      for (int e = 0; e < 32; e++) {
        const uint8_t b = x[i].qs[32 * (c / 2) + e];
        const int q = (c % 2 ? b >> 4 : b & 0xf) | ((x[i].qh[e] >> c) & 1) << 4;
        lane[e / 4] += sc[c] * q * y[i].qs[32 * c + e];
      }
    int32_t mins = 0;
    for (int s = 0; s < 8; s++)
      mins += m[s] * (y[i].bsums[2 * s] + y[i].bsums[2 * s + 1]);
    const float d = y[i].d * nc_fp16_to_fp32(x[i].d);
    const float dmin = -y[i].d * nc_fp16_to_fp32(x[i].dmin);
    summs = fmaf(dmin, (float)mins, summs);
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(d, (float)lane[k], acc[k]);
  }
  return hsum8(acc) + summs;
}

/* Q2_K / Q3_K element c * 32 + e (chunk c = 4j + k of 128-element half j):
 * bits 2k, 2k+1 of qs[32j + e]; 16-element scales. One float accumulator:
 * Q2_K adds fma(dmin, M_k, acc) (M_k = min_2k bs_2k + min_2k+1 bs_2k+1)
 * before fma(d, I_k, acc) each block; Q3_K only the latter. */
static float model_q2k(int64_t n, const void *w, const void *a) {
  const block_q2_K *x = w;
  const block_q8_K *y = a;
  float acc[8] = {0};
  for (int64_t i = 0; i < n / QK_K; i++) {
    int32_t lane[8] = {0}, mins[8];
    for (int idx = 0; idx < QK_K; idx++) {
      const int c = idx / 32, e = idx % 32;
      const int q = (x[i].qs[32 * (c / 4) + e] >> (2 * (c % 4))) & 3;
      lane[e / 4] += (x[i].scales[idx / 16] & 0xf) * q * y[i].qs[idx];
    }
    for (int k = 0; k < 8; k++)
      mins[k] = (x[i].scales[2 * k] >> 4) * y[i].bsums[2 * k] +
                (x[i].scales[2 * k + 1] >> 4) * y[i].bsums[2 * k + 1];
    const float d = y[i].d * nc_fp16_to_fp32(x[i].d);
    const float dmin = -y[i].d * nc_fp16_to_fp32(x[i].dmin);
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(dmin, (float)mins[k], acc[k]);
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(d, (float)lane[k], acc[k]);
  }
  return hsum8(acc);
}

/* The 16 signed 6-bit scales of a Q3_K block. */
static int q3k_scale(const uint8_t *s, int j) {
  const int lo = j < 8 ? s[j] & 0xf : s[j - 8] >> 4;
  const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (lo | hi << 4) - 32;
}

static float model_q3k(int64_t n, const void *w, const void *a) {
  const block_q3_K *x = w;
  const block_q8_K *y = a;
  float acc[8] = {0};
  for (int64_t i = 0; i < n / QK_K; i++) {
    int32_t lane[8] = {0};
    for (int idx = 0; idx < QK_K; idx++) {
      const int c = idx / 32, e = idx % 32;
      const int low = (x[i].qs[32 * (c / 4) + e] >> (2 * (c % 4))) & 3;
      const int q = low - ((x[i].hmask[e] >> c) & 1 ? 0 : 4);
      lane[e / 4] += q3k_scale(x[i].scales, idx / 16) * q * y[i].qs[idx];
    }
    const float d = y[i].d * nc_fp16_to_fp32(x[i].d);
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(d, (float)lane[k], acc[k]);
  }
  return hsum8(acc);
}

/* llama.cpp's tiled K-quant matmul (ggml-cpu/tiled; used instead of vec_dot
 * for 8 or more activation rows): per super-block the exact integer dot S1
 * and min sum S2, t = (float)S1 * d_w, t = fma(-dmin_w, (float)S2, t),
 * acc = fma(t, d_a, acc). test_kernels_ggml checks this order against
 * llama.cpp's own mul_mat (its library, every K type, bit for bit). */
static void block_ints(nc_type t, const uint8_t *wb, const block_q8_K *y,
                       int32_t *s1, int32_t *s2, float *d, float *dmin) {
  *s1 = *s2 = 0;
  *dmin = 0;
  if (t == NC_TYPE_Q4_K || t == NC_TYPE_Q5_K) {
    const block_q4_K *x4 = (const block_q4_K *)wb;
    const block_q5_K *x5 = (const block_q5_K *)wb;
    const uint8_t *sc6 = t == NC_TYPE_Q4_K ? x4->scales : x5->scales;
    const uint8_t *qs = t == NC_TYPE_Q4_K ? x4->qs : x5->qs;
    for (int c = 0; c < 8; c++) {
      int sc, m;
      q4k_scale_min(sc6, c, &sc, &m);
      int32_t raw = 0;
      for (int e = 0; e < 32; e++) {
        const uint8_t b = qs[32 * (c / 2) + e];
        int q = c % 2 ? b >> 4 : b & 0xf;
        if (t == NC_TYPE_Q5_K) q |= ((x5->qh[e] >> c) & 1) << 4;
        raw += q * y->qs[32 * c + e];
      }
      *s1 += sc * raw;
      *s2 += m * (y->bsums[2 * c] + y->bsums[2 * c + 1]);
    }
    *d = nc_fp16_to_fp32(t == NC_TYPE_Q4_K ? x4->d : x5->d);
    *dmin = nc_fp16_to_fp32(t == NC_TYPE_Q4_K ? x4->dmin : x5->dmin);
  } else if (t == NC_TYPE_Q6_K) {
    const block_q6_K *x = (const block_q6_K *)wb;
    for (int idx = 0; idx < QK_K; idx++) {
      const int h = idx / 128, part = idx % 128 / 32, e = idx % 32;
      const uint8_t l = x->ql[64 * h + 32 * (part & 1) + e];
      const int lo = part < 2 ? l & 0xf : l >> 4;
      const int hi = (x->qh[32 * h + e] >> (2 * part)) & 3;
      *s1 += x->scales[idx / 16] * ((lo | hi << 4) - 32) * y->qs[idx];
    }
    *d = nc_fp16_to_fp32(x->d);
  } else if (t == NC_TYPE_Q2_K) {
    const block_q2_K *x = (const block_q2_K *)wb;
    for (int idx = 0; idx < QK_K; idx++) {
      const int c = idx / 32, e = idx % 32;
      const int q = (x->qs[32 * (c / 4) + e] >> (2 * (c % 4))) & 3;
      *s1 += (x->scales[idx / 16] & 0xf) * q * y->qs[idx];
    }
    for (int j = 0; j < 16; j++)
      *s2 += (x->scales[j] >> 4) * y->bsums[j];
    *d = nc_fp16_to_fp32(x->d);
    *dmin = nc_fp16_to_fp32(x->dmin);
  } else { /* Q3_K */
    const block_q3_K *x = (const block_q3_K *)wb;
    for (int idx = 0; idx < QK_K; idx++) {
      const int c = idx / 32, e = idx % 32;
      const int low = (x->qs[32 * (c / 4) + e] >> (2 * (c % 4))) & 3;
      const int q = low - ((x->hmask[e] >> c) & 1 ? 0 : 4);
      *s1 += q3k_scale(x->scales, idx / 16) * q * y->qs[idx];
    }
    *d = nc_fp16_to_fp32(x->d);
  }
}

static float model_tiled(nc_type t, int64_t n, const void *w, const void *a) {
  const size_t bs = nc_type_traits_of(t)->type_size;
  const block_q8_K *y = a;
  float acc = 0;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int32_t s1, s2;
    float d, dmin;
    block_ints(t, (const uint8_t *)w + (size_t)i * bs, y + i, &s1, &s2, &d,
               &dmin);
    float v = (float)s1 * d;
    v = fmaf(-dmin, (float)s2, v);
    acc = fmaf(v, y[i].d, acc);
  }
  return acc;
}

/* ------------------------------------------------------------ fixtures */

typedef struct kq_case {
  nc_type t;
  nc_vec_dot_fn model;
  int d_off[2]; /* fp16 fields per block (-1: none) */
} kq_case;

static const kq_case k_cases[] = {
    {NC_TYPE_Q4_K, model_q4k, {0, 2}},    {NC_TYPE_Q6_K, model_q6k, {208, -1}},
    {NC_TYPE_Q5_K, model_q5k, {0, 2}},    {NC_TYPE_Q2_K, model_q2k, {80, 82}},
    {NC_TYPE_Q3_K, model_q3k, {108, -1}},
};
enum { N_CASES = sizeof k_cases / sizeof k_cases[0] };

/* The avx512_kquant entry points, per type. */
typedef struct kq_fns {
  nc_vec_dot_fn dot;
  nc_vec_dot_rows_fn rows;
  nc_gemm_fn gemm;
} kq_fns;

#define FNS(name)                                                              \
  (kq_fns) {                                                                   \
    nc_avx512_dot_##name, nc_avx512_dot_##name##_rows, nc_avx512_gemm_##name   \
  }
static kq_fns avx512_fns(nc_type t) {
  switch (t) {
  case NC_TYPE_Q2_K: return FNS(q2_k);
  case NC_TYPE_Q3_K: return FNS(q3_k);
  case NC_TYPE_Q4_K: return FNS(q4_k);
  case NC_TYPE_Q5_K: return FNS(q5_k);
  default: return FNS(q6_k);
  }
}
#undef FNS

#define FNS(name)                                                              \
  (kq_fns) {                                                                   \
    nc_avx512_dot_##name, nc_avx512_dot_##name##_rows, nc_avx512_gemm_##name   \
  }
static kq_fns tiled_fns(nc_type t) {
  switch (t) {
  case NC_TYPE_Q2_K: return FNS(q2_k_tiled);
  case NC_TYPE_Q3_K: return FNS(q3_k_tiled);
  case NC_TYPE_Q4_K: return FNS(q4_k_tiled);
  case NC_TYPE_Q5_K: return FNS(q5_k_tiled);
  default: return FNS(q6_k_tiled);
  }
}
#undef FNS

static const kq_case *case_of(nc_type t) {
  for (int ci = 0; ci < N_CASES; ci++)
    if (k_cases[ci].t == t) return &k_cases[ci];
  return NULL;
}

static bool have_avx512(void) {
  if (nc_kernels_by_name("avx512")) return true;
  print_message("CPU lacks avx512: kernels not tested\n");
  return false;
}

/* nrows random weight rows of n elements (random bytes, finite fp16 scale
 * fields; every 7th block gets scales 100x larger, so sums reach the
 * regions where float rounding differs most between orders). */
static uint8_t *random_rows(const kq_case *kc, int64_t n, int nrows,
                            uint64_t *s) {
  const size_t row = nc_row_size(kc->t, n),
               bs = nc_type_traits_of(kc->t)->type_size;
  uint8_t *w = malloc(row * (size_t)nrows + 1);
  for (size_t i = 0; i < row * (size_t)nrows; i++)
    w[i] = (uint8_t)next_u64(s);
  for (size_t b = 0; b < row * (size_t)nrows / bs; b++)
    for (int k = 0; k < 2; k++) {
      if (kc->d_off[k] < 0) continue;
      const float big = b % 7 == 3 ? 100.0f : 1.0f;
      nc_fp16 h = nc_fp32_to_fp16(next_unit(s) * 0.02f * big);
      memcpy(w + b * bs + (size_t)kc->d_off[k], &h, 2);
    }
  return w;
}

/* nrows activation rows quantized to Q8_K, stride bytes apart (>= the row
 * size; the gap is filled with junk). Some rows are all-negative-heavy so
 * that -128 quants appear, some are large. */
static uint8_t *random_acts(int64_t n, int nrows, size_t stride, uint64_t *s) {
  uint8_t *q = malloc(stride * (size_t)nrows);
  memset(q, 0xa5, stride * (size_t)nrows);
  float *f = malloc(sizeof(float) * (size_t)n);
  for (int r = 0; r < nrows; r++) {
    const float scale = r % 3 == 0 ? 50.0f : 1.0f,
                shift = r % 4 == 1 ? -0.5f : 0;
    for (int64_t i = 0; i < n; i++)
      f[i] = (next_unit(s) + shift) * scale * (i % 97 == 5 ? 8.0f : 1.0f);
    nc_quantize_row(NC_TYPE_Q8_K, f, q + (size_t)r * stride, n);
  }
  free(f);
  return q;
}

/* ---------------------------------------------------------------- tests */

/* The model reproduces llama.cpp's SIMD golden dot bit for bit, and is
 * within a float reordering bound of ref (ggml's generic order). */
static void test_model_matches_llama_golden(void **state) {
  (void)state;
  for (int ci = 0; ci < N_CASES; ci++) {
    const kq_case *kc = &k_cases[ci];
    char name[64];
    size_t wlen, alen;
    snprintf(name, sizeof name, "dot_%s.bin", nc_type_name(kc->t));
    unsigned char *w = golden_read(name, &wlen);
    unsigned char *a = golden_read("act_Q8_K.bin", &alen);
    if (!w || !a) fail_msg("golden for %s missing", nc_type_name(kc->t));
    const size_t row = nc_row_size(kc->t, 512);
    assert_int_equal(wlen, row + 2 * sizeof(float));
    float want[2];
    memcpy(want, w + row, sizeof want);
    const float got = kc->model(512, w, a);
    if (bits(got) != bits(want[1]))
      fail_msg("model %s: %.9g, llama.cpp x86 %.9g", nc_type_name(kc->t), got,
               want[1]);
    free(w);
    free(a);
  }
}

static void test_model_vs_ref(void **state) {
  (void)state;
  const nc_kernels *ref = nc_kernels_ref();
  uint64_t s = 31337;
  for (int ci = 0; ci < N_CASES; ci++) {
    const kq_case *kc = &k_cases[ci];
    for (int rep = 0; rep < 20; rep++) {
      const int64_t n = QK_K * (1 + rep % 9);
      uint8_t *w = random_rows(kc, n, 1, &s);
      uint8_t *a = random_acts(n, 1, nc_row_size(NC_TYPE_Q8_K, n), &s);
      float *fw = malloc(sizeof(float) * (size_t)n);
      float *fa = malloc(sizeof(float) * (size_t)n);
      nc_dequantize_row(kc->t, w, fw, n);
      nc_dequantize_row(NC_TYPE_Q8_K, a, fa, n);
      double abs_sum = 0;
      for (int64_t i = 0; i < n; i++)
        abs_sum += fabs((double)fw[i] * fa[i]);
      const float m = kc->model(n, w, a), r = ref->vec_dot[kc->t](n, w, a);
      const float mt = model_tiled(kc->t, n, w, a);
      if (fabs((double)m - r) > 1e-6 * abs_sum ||
          fabs((double)mt - r) > 1e-6 * abs_sum)
        fail_msg("%s n=%lld: model %.9g, tiled %.9g, ref %.9g",
                 nc_type_name(kc->t), (long long)n, m, mt, r);
      free(fw);
      free(fa);
      free(w);
      free(a);
    }
  }
}

/* A kernel in llama.cpp's vec_dot (or tiled) order equals the model bit
 * for bit. */
static void check_dot_vs_model(const char *what, nc_type t, nc_vec_dot_fn dot,
                               bool tiled) {
  const kq_case *kc = case_of(t);
  uint64_t s = 0x5eed + (uint64_t)t;
  for (int rep = 0; rep < 60; rep++) {
    const int64_t n = QK_K * (1 + rep % 13);
    uint8_t *w = random_rows(kc, n, 1, &s);
    uint8_t *a = random_acts(n, 1, nc_row_size(NC_TYPE_Q8_K, n), &s);
    const float want = tiled ? model_tiled(t, n, w, a) : kc->model(n, w, a);
    const float got = dot(n, w, a);
    if (bits(got) != bits(want))
      fail_msg("%s %s n=%lld: %.9g, llama.cpp order %.9g", what,
               nc_type_name(t), (long long)n, got, want);
    free(w);
    free(a);
  }
  /* the golden row, and n = 0 (an empty sum) */
  char name[64];
  size_t wlen, alen;
  snprintf(name, sizeof name, "dot_%s.bin", nc_type_name(t));
  unsigned char *gw = golden_read(name, &wlen);
  unsigned char *ga = golden_read("act_Q8_K.bin", &alen);
  if (!gw || !ga) fail_msg("golden for %s missing", nc_type_name(t));
  float want[2];
  memcpy(want, gw + nc_row_size(t, 512), sizeof want);
  if (tiled) want[1] = model_tiled(t, 512, gw, ga);
  if (bits(dot(512, gw, ga)) != bits(want[1]))
    fail_msg("%s %s: golden row %.9g, llama.cpp x86 %.9g", what,
             nc_type_name(t), dot(512, gw, ga), want[1]);
  assert_true(dot(0, gw, ga) == 0.0f);
  free(gw);
  free(ga);
}

static void test_avx512_dot_vs_model(void **state) {
  (void)state;
  if (!have_avx512()) NC_SKIP_BECAUSE("this CPU lacks AVX-512");
  for (int ci = 0; ci < N_CASES; ci++)
    check_dot_vs_model("avx512_kquant", k_cases[ci].t,
                       avx512_fns(k_cases[ci].t).dot, false);
}

static void test_avx512_tiled_vs_model(void **state) {
  (void)state;
  if (!have_avx512()) NC_SKIP_BECAUSE("this CPU lacks AVX-512");
  for (int ci = 0; ci < N_CASES; ci++)
    check_dot_vs_model("avx512_kquant tiled", k_cases[ci].t,
                       tiled_fns(k_cases[ci].t).dot, true);
}

/* ref_tiled.c (plain C, no SIMD needed) in the same order as the model. */
static void test_ref_tiled_vs_model(void **state) {
  (void)state;
  check_dot_vs_model("ref_tiled", NC_TYPE_Q4_K, nc_ref_dot_tiled_q4_k, true);
  check_dot_vs_model("ref_tiled", NC_TYPE_Q5_K, nc_ref_dot_tiled_q5_k, true);
  check_dot_vs_model("ref_tiled", NC_TYPE_Q6_K, nc_ref_dot_tiled_q6_k, true);
}

static void test_avx2_dot_vs_model(void **state) {
  (void)state;
  const nc_kernels *k = nc_kernels_by_name("avx2");
  if (!k) NC_SKIP_BECAUSE("this CPU lacks the avx2 table");
  for (int ci = 0; ci < N_CASES; ci++)
    check_dot_vs_model("avx2", k_cases[ci].t, k->vec_dot[k_cases[ci].t], false);
}

/* The avx512 table uses the tiled-order kernels for every K type (llama.cpp
 * multiplies prompts that way): its dots are in that order, its gemm
 * agrees with its vec_dot. */
static void test_avx512_table(void **state) {
  (void)state;
  const nc_kernels *k = nc_kernels_by_name("avx512");
  if (!k) NC_SKIP_BECAUSE("this CPU lacks the avx512 table");
  uint64_t s = 1009;
  for (int ci = 0; ci < N_CASES; ci++) {
    const nc_type t = k_cases[ci].t;
    check_dot_vs_model("avx512 table", t, k->vec_dot[t], true);
    assert_non_null(k->gemm[t]);
    enum { NW = 5, NA = 9, N = 512 };
    const size_t wrow = nc_row_size(t, N), arow = nc_row_size(NC_TYPE_Q8_K, N);
    uint8_t *w = random_rows(&k_cases[ci], N, NW, &s);
    uint8_t *a = random_acts(N, NA, arow, &s);
    float out[NA * NW];
    k->gemm[t](N, w, wrow, NW, a, arow, NA, out, NW);
    for (int ai = 0; ai < NA; ai++)
      for (int r = 0; r < NW; r++)
        assert_true(bits(out[ai * NW + r]) ==
                    bits(k->vec_dot[t](N, w + (size_t)r * wrow,
                                       a + (size_t)ai * arow)));
    free(w);
    free(a);
  }
}

/* gemm: every (weight row, activation row) value equals vec_dot on that
 * pair, for odd and even panels, every register-block tail, padded
 * strides, and rows too long for the kernel's scratch (n = 64
 * blocks: super-block segments, more than 64 activation rows); the tiled
 * Q4_K and Q6_K gemm's 16-row tiles likewise. */
static void test_avx512_gemm_batch_invariance(void **state) {
  (void)state;
  if (!have_avx512()) NC_SKIP_BECAUSE("this CPU lacks AVX-512");
  uint64_t s = 4711;
  static const struct {
    int64_t n;
    int nw, na;
  } shapes[] = {{256, 1, 1},
                {256, 2, 2},
                {512, 3, 3},
                {768, 5, 8},
                {1536, 64, 21},
                {1536, 7, 17},
                {2304, 9, 11},
                {256, 64, 64},
                {16384, 3, 5},
                {4096, 13, 4},
                {16384, 3, 70},
                /* avx512_kq16's 16-row tiles (tiled Q4_K, Q6_K; 8+ rows):
                 * whole groups, a padded last group of 8+ rows, a tail of
                 * pairs, every register-block tail, a panel of one group
                 * (n = 12288) and rows too long for it (n = 16384) */
                {512, 16, 8},
                {768, 24, 13},
                {1024, 37, 9},
                {256, 45, 22},
                {12288, 16, 8},
                {16384, 16, 9},
                /* one activation row (decode: Q4_K, Q6_K 4 rows at once) */
                {256, 4, 1},
                {1024, 9, 1},
                {2048, 15, 1}};
  for (int ci = 0; ci < 2 * N_CASES; ci++) {
    const kq_case *kc = &k_cases[ci % N_CASES];
    const kq_fns f = ci < N_CASES ? avx512_fns(kc->t) : tiled_fns(kc->t);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      const int64_t n = shapes[si].n;
      const int nw = shapes[si].nw, na = shapes[si].na;
      const size_t wrow = nc_row_size(kc->t, n) + 32; /* padded strides */
      const size_t arow = nc_row_size(NC_TYPE_Q8_K, n) + 48;
      uint8_t *w = calloc((size_t)nw, wrow);
      for (int r = 0; r < nw; r++) {
        uint8_t *one = random_rows(kc, n, 1, &s);
        memcpy(w + (size_t)r * wrow, one, nc_row_size(kc->t, n));
        free(one);
      }
      uint8_t *a = random_acts(n, na, arow, &s);
      const size_t ostride = (size_t)nw + 3;
      float *out = malloc(sizeof(float) * ostride * (size_t)na);
      for (size_t i = 0; i < ostride * (size_t)na; i++)
        out[i] = -1234.5f;
      f.gemm(n, w, wrow, nw, a, arow, na, out, ostride);
      for (int ai = 0; ai < na; ai++) {
        for (int r = 0; r < nw; r++) {
          const float want =
              f.dot(n, w + (size_t)r * wrow, a + (size_t)ai * arow);
          const float got = out[(size_t)ai * ostride + (size_t)r];
          if (bits(got) != bits(want))
            fail_msg("%s gemm n=%lld %dx%d: [%d][%d] %.9g, vec_dot %.9g",
                     nc_type_name(kc->t), (long long)n, nw, na, ai, r, got,
                     want);
        }
        for (size_t r = (size_t)nw; r < ostride; r++) /* stride respected */
          assert_true(out[(size_t)ai * ostride + r] == -1234.5f);
      }
      /* vec_dot_rows of the first weight row, every other output slot */
      float *ro = malloc(sizeof(float) * 2 * (size_t)na);
      for (int i = 0; i < 2 * na; i++)
        ro[i] = -1234.5f;
      f.rows(n, w, a, arow, na, ro, 2);
      for (int ai = 0; ai < na; ai++) {
        assert_true(bits(ro[2 * ai]) == bits(out[(size_t)ai * ostride]));
        assert_true(ro[2 * ai + 1] == -1234.5f);
      }
      free(ro);
      free(out);
      free(w);
      free(a);
    }
  }
}

/* n = 0: gemm writes zeros (empty sums). */
static void test_avx512_empty(void **state) {
  (void)state;
  if (!have_avx512()) NC_SKIP_BECAUSE("this CPU lacks AVX-512");
  uint8_t zero[512] = {0};
  for (int ci = 0; ci < 2 * N_CASES; ci++) {
    const nc_type t = k_cases[ci % N_CASES].t;
    const kq_fns f = ci < N_CASES ? avx512_fns(t) : tiled_fns(t);
    float out[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    f.gemm(0, zero, 0, 2, zero, 0, 4, out, 2);
    for (int i = 0; i < 8; i++)
      assert_true(out[i] == 0.0f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_matches_llama_golden),
      cmocka_unit_test(test_model_vs_ref),
      cmocka_unit_test(test_avx512_dot_vs_model),
      cmocka_unit_test(test_avx2_dot_vs_model),
      cmocka_unit_test(test_avx512_gemm_batch_invariance),
      cmocka_unit_test(test_avx512_empty),
      cmocka_unit_test(test_avx512_tiled_vs_model),
      cmocka_unit_test(test_ref_tiled_vs_model),
      cmocka_unit_test(test_avx512_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
