/* ref: plain-C dot kernels, the reference every SIMD table is tested
 * against. Each follows the arithmetic of ggml's generic C kernel for the
 * same pair (integer sums per block, float scaling, same accumulation
 * order); the F32/F16/BF16 dots accumulate f32 products in double. The
 * newer types (IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0: ref_nl.c; NVFP4,
 * Q1_0, Q2_0: ref_lowbit.c) follow llama.cpp's x86 order instead. */
#include <string.h>

#include "ref.h"
#include "sampler_simd.h"

#define H2F(x) nc_fp16_to_fp32(x)

float nc_ref_dot_f32(int64_t n, const void *vw, const void *va) {
  const float *w = vw, *a = va;
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++)
    sum += (double)(w[i] * a[i]);
  return (float)sum;
}

float nc_ref_dot_f16(int64_t n, const void *vw, const void *va) {
  const nc_fp16 *w = vw, *a = va;
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++)
    sum += (double)(nc_fp16_to_fp32(w[i]) * nc_fp16_to_fp32(a[i]));
  return (float)sum;
}

float nc_ref_dot_bf16(int64_t n, const void *vw, const void *va) {
  const nc_bf16 *w = vw, *a = va;
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++)
    sum += (double)(nc_bf16_to_fp32(w[i]) * nc_bf16_to_fp32(a[i]));
  return (float)sum;
}

float nc_ref_dot_q4_0(int64_t n, const void *vw, const void *va) {
  const block_q4_0 *x = vw;
  const block_q8_0 *y = va;
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK8_0; i++) {
    int s0 = 0, s1 = 0;
    for (int j = 0; j < QK8_0 / 2; j++) {
      s0 += ((x[i].qs[j] & 0x0f) - 8) * y[i].qs[j];
      s1 += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + QK8_0 / 2];
    }
    sumf += (float)(s0 + s1) * H2F(x[i].d) * H2F(y[i].d);
  }
  return sumf;
}

float nc_ref_dot_q4_1(int64_t n, const void *vw, const void *va) {
  const block_q4_1 *x = vw;
  const block_q8_1 *y = va;
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK8_1; i++) {
    int s0 = 0, s1 = 0;
    for (int j = 0; j < QK8_1 / 2; j++) {
      s0 += (x[i].qs[j] & 0x0f) * y[i].qs[j];
      s1 += (x[i].qs[j] >> 4) * y[i].qs[j + QK8_1 / 2];
    }
    sumf += (H2F(x[i].d) * H2F(y[i].d)) * (float)(s0 + s1) +
            H2F(x[i].m) * H2F(y[i].s);
  }
  return sumf;
}

static uint32_t load_u32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

float nc_ref_dot_q5_0(int64_t n, const void *vw, const void *va) {
  const block_q5_0 *x = vw;
  const block_q8_0 *y = va;
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK8_0; i++) {
    const uint32_t qh = load_u32(x[i].qh);
    int s0 = 0, s1 = 0;
    for (int j = 0; j < QK8_0 / 2; j++) {
      int lo = ((x[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4)) - 16;
      int hi = ((x[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4)) - 16;
      s0 += lo * y[i].qs[j];
      s1 += hi * y[i].qs[j + QK8_0 / 2];
    }
    sumf += (H2F(x[i].d) * H2F(y[i].d)) * (float)(s0 + s1);
  }
  return sumf;
}

float nc_ref_dot_q5_1(int64_t n, const void *vw, const void *va) {
  const block_q5_1 *x = vw;
  const block_q8_1 *y = va;
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK8_1; i++) {
    const uint32_t qh = load_u32(x[i].qh);
    int s0 = 0, s1 = 0;
    for (int j = 0; j < QK8_1 / 2; j++) {
      int lo = (x[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4);
      int hi = (x[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
      s0 += lo * y[i].qs[j];
      s1 += hi * y[i].qs[j + QK8_1 / 2];
    }
    sumf += (H2F(x[i].d) * H2F(y[i].d)) * (float)(s0 + s1) +
            H2F(x[i].m) * H2F(y[i].s);
  }
  return sumf;
}

float nc_ref_dot_q8_0(int64_t n, const void *vw, const void *va) {
  const block_q8_0 *x = vw;
  const block_q8_0 *y = va;
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK8_0; i++) {
    int s = 0;
    for (int j = 0; j < QK8_0; j++)
      s += x[i].qs[j] * y[i].qs[j];
    sumf += (float)s * (H2F(x[i].d) * H2F(y[i].d));
  }
  return sumf;
}

float nc_ref_dot_q2_k(int64_t n, const void *vw, const void *va) {
  const block_q2_K *x = vw;
  const block_q8_K *y = va;
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    const uint8_t *q2 = x[i].qs;
    const int8_t *q8 = y[i].qs;
    const uint8_t *sc = x[i].scales;
    int summs = 0;
    for (int j = 0; j < 16; j++)
      summs += y[i].bsums[j] * (sc[j] >> 4);
    const float dall = y[i].d * H2F(x[i].d);
    const float dmin = y[i].d * H2F(x[i].dmin);
    int isum = 0, is = 0;
    for (int k = 0; k < QK_K / 128; k++, q2 += 32) {
      for (int shift = 0; shift < 8; shift += 2, q8 += 32) {
        for (int half = 0; half < 2; half++) {
          int d = sc[is++] & 0x0f, s = 0;
          for (int l = 16 * half; l < 16 * half + 16; l++)
            s += q8[l] * ((q2[l] >> shift) & 3);
          isum += d * s;
        }
      }
    }
    sumf += dall * (float)isum - dmin * (float)summs;
  }
  return sumf;
}

/* The K-quant kernels below keep ggml's eight int32 lanes (element index
 * mod 8) per block and eight float partial sums across blocks. */

float nc_ref_dot_q3_k(int64_t n, const void *vw, const void *va) {
  const block_q3_K *x = vw;
  const block_q8_K *y = va;
  float sums[8] = {0};
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    const uint8_t *q3 = x[i].qs;
    int8_t *a = q;
    uint8_t m = 1;
    for (int j = 0; j < QK_K; j += 128, q3 += 32)
      for (int shift = 0; shift < 8; shift += 2, m <<= 1, a += 32)
        for (int l = 0; l < 32; l++)
          a[l] = (int8_t)(((q3[l] >> shift) & 3) - (x[i].hmask[l] & m ? 0 : 4));
    int sc[16];
    for (int k = 0; k < 16; k++) {
      int lo = k < 8 ? (x[i].scales[k] & 0x0f) : (x[i].scales[k - 8] >> 4);
      int hi = (x[i].scales[8 + k % 4] >> (2 * (k / 4))) & 3;
      sc[k] = (lo | (hi << 4)) - 32;
    }
    int32_t lane[8] = {0};
    for (int e = 0; e < QK_K; e++)
      lane[e % 8] += sc[e / 16] * (y[i].qs[e] * q[e]);
    const float d = H2F(x[i].d) * y[i].d;
    for (int l = 0; l < 8; l++)
      sums[l] += d * (float)lane[l];
  }
  float sumf = 0.0f;
  for (int l = 0; l < 8; l++)
    sumf += sums[l];
  return sumf;
}

/* Scales and mins of the 8 sub-blocks of Q4_K/Q5_K. */
static void k4_scales(const uint8_t *q, uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 8; j++)
    nc_k4_scale_min(j, q, &sc[j], &mn[j]);
}

/* Shared tail of Q4_K/Q5_K: q holds the 256 unsigned quants. */
static void k4_block(const int8_t *q, const uint8_t *scales, nc_fp16 xd,
                     nc_fp16 xdmin, const block_q8_K *y, float sums[8],
                     float *sumf) {
  uint8_t sc[8], mn[8];
  k4_scales(scales, sc, mn);
  int sumi = 0;
  for (int j = 0; j < QK_K / 16; j++)
    sumi += y->bsums[j] * mn[j / 2];
  int32_t lane[8] = {0};
  for (int e = 0; e < QK_K; e++)
    lane[e % 8] += sc[e / 32] * (y->qs[e] * q[e]);
  const float d = H2F(xd) * y->d;
  for (int l = 0; l < 8; l++)
    sums[l] += d * (float)lane[l];
  const float dmin = H2F(xdmin) * y->d;
  *sumf -= dmin * (float)sumi;
}

float nc_ref_dot_q4_k(int64_t n, const void *vw, const void *va) {
  const block_q4_K *x = vw;
  const block_q8_K *y = va;
  float sums[8] = {0}, sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    nc_ref_quants_q4_k(&x[i], q);
    k4_block(q, x[i].scales, x[i].d, x[i].dmin, &y[i], sums, &sumf);
  }
  for (int l = 0; l < 8; l++)
    sumf += sums[l];
  return sumf;
}

float nc_ref_dot_q5_k(int64_t n, const void *vw, const void *va) {
  const block_q5_K *x = vw;
  const block_q8_K *y = va;
  float sums[8] = {0}, sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    nc_ref_quants_q5_k(&x[i], q);
    k4_block(q, x[i].scales, x[i].d, x[i].dmin, &y[i], sums, &sumf);
  }
  for (int l = 0; l < 8; l++)
    sumf += sums[l];
  return sumf;
}

float nc_ref_dot_q6_k(int64_t n, const void *vw, const void *va) {
  const block_q6_K *x = vw;
  const block_q8_K *y = va;
  float sums[8] = {0};
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    nc_ref_quants_q6_k(&x[i], q);
    int32_t lane[8] = {0};
    for (int e = 0; e < QK_K; e++)
      lane[e % 8] += x[i].scales[e / 16] * (y[i].qs[e] * q[e]);
    const float d = H2F(x[i].d) * y[i].d;
    for (int l = 0; l < 8; l++)
      sums[l] += d * (float)lane[l];
  }
  float sumf = 0.0f;
  for (int l = 0; l < 8; l++)
    sumf += sums[l];
  return sumf;
}

/* Multi-row entry points (ref.h). */

void nc_ref_dot_f32_rows(int64_t n, const void *w, const void *a,
                         size_t a_stride, int nrows, float *out,
                         size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_f32(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_f16_rows(int64_t n, const void *w, const void *a,
                         size_t a_stride, int nrows, float *out,
                         size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_f16(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_bf16_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_bf16(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q4_0_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q4_0(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q4_1_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q4_1(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q5_0_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q5_0(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q5_1_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q5_1(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q8_0_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q8_0(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q2_k_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q2_k(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q3_k_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q3_k(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q4_k_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q4_k(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q5_k_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q5_k(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_q6_k_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_q6_k(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_quant_f32(const float *src, void *dst, int64_t n) {
  nc_quantize_row(NC_TYPE_F32, src, dst, n);
}
void nc_ref_quant_f16(const float *src, void *dst, int64_t n) {
  nc_quantize_row(NC_TYPE_F16, src, dst, n);
}
void nc_ref_quant_bf16(const float *src, void *dst, int64_t n) {
  nc_quantize_row(NC_TYPE_BF16, src, dst, n);
}
void nc_ref_quant_q8_0(const float *src, void *dst, int64_t n) {
  nc_quantize_row(NC_TYPE_Q8_0, src, dst, n);
}
void nc_ref_quant_q8_1(const float *src, void *dst, int64_t n) {
  nc_quantize_row(NC_TYPE_Q8_1, src, dst, n);
}
void nc_ref_quant_q8_k(const float *src, void *dst, int64_t n) {
  nc_quantize_row(NC_TYPE_Q8_K, src, dst, n);
}

#define ENTRY(t, fn) [t] = fn
static const nc_kernels k_ref = {
    .name = "ref",
    .vec_dot =
        {
            ENTRY(NC_TYPE_F32, nc_ref_dot_f32),
            ENTRY(NC_TYPE_F16, nc_ref_dot_f16),
            ENTRY(NC_TYPE_BF16, nc_ref_dot_bf16),
            ENTRY(NC_TYPE_Q4_0, nc_ref_dot_q4_0),
            ENTRY(NC_TYPE_Q4_1, nc_ref_dot_q4_1),
            ENTRY(NC_TYPE_Q5_0, nc_ref_dot_q5_0),
            ENTRY(NC_TYPE_Q5_1, nc_ref_dot_q5_1),
            ENTRY(NC_TYPE_Q8_0, nc_ref_dot_q8_0),
            ENTRY(NC_TYPE_Q2_K, nc_ref_dot_q2_k),
            ENTRY(NC_TYPE_Q3_K, nc_ref_dot_q3_k),
            ENTRY(NC_TYPE_Q4_K, nc_ref_dot_q4_k),
            ENTRY(NC_TYPE_Q5_K, nc_ref_dot_q5_k),
            ENTRY(NC_TYPE_Q6_K, nc_ref_dot_q6_k),
            ENTRY(NC_TYPE_IQ4_NL, nc_ref_dot_iq4_nl),
            ENTRY(NC_TYPE_IQ4_XS, nc_ref_dot_iq4_xs),
            ENTRY(NC_TYPE_MXFP4, nc_ref_dot_mxfp4),
            ENTRY(NC_TYPE_TQ1_0, nc_ref_dot_tq1_0),
            ENTRY(NC_TYPE_TQ2_0, nc_ref_dot_tq2_0),
            ENTRY(NC_TYPE_NVFP4, nc_ref_dot_nvfp4),
            ENTRY(NC_TYPE_Q1_0, nc_ref_dot_q1_0),
            ENTRY(NC_TYPE_Q2_0, nc_ref_dot_q2_0),
            ENTRY(NC_TYPE_IQ2_XXS, nc_ref_dot_iq2_xxs),
            ENTRY(NC_TYPE_IQ2_XS, nc_ref_dot_iq2_xs),
            ENTRY(NC_TYPE_IQ2_S, nc_ref_dot_iq2_s),
            ENTRY(NC_TYPE_IQ3_XXS, nc_ref_dot_iq3_xxs),
            ENTRY(NC_TYPE_IQ3_S, nc_ref_dot_iq3_s),
            ENTRY(NC_TYPE_IQ1_S, nc_ref_dot_iq1_s),
            ENTRY(NC_TYPE_IQ1_M, nc_ref_dot_iq1_m),
        },
    .vec_dot_rows =
        {
            ENTRY(NC_TYPE_F32, nc_ref_dot_f32_rows),
            ENTRY(NC_TYPE_F16, nc_ref_dot_f16_rows),
            ENTRY(NC_TYPE_BF16, nc_ref_dot_bf16_rows),
            ENTRY(NC_TYPE_Q4_0, nc_ref_dot_q4_0_rows),
            ENTRY(NC_TYPE_Q4_1, nc_ref_dot_q4_1_rows),
            ENTRY(NC_TYPE_Q5_0, nc_ref_dot_q5_0_rows),
            ENTRY(NC_TYPE_Q5_1, nc_ref_dot_q5_1_rows),
            ENTRY(NC_TYPE_Q8_0, nc_ref_dot_q8_0_rows),
            ENTRY(NC_TYPE_Q2_K, nc_ref_dot_q2_k_rows),
            ENTRY(NC_TYPE_Q3_K, nc_ref_dot_q3_k_rows),
            ENTRY(NC_TYPE_Q4_K, nc_ref_dot_q4_k_rows),
            ENTRY(NC_TYPE_Q5_K, nc_ref_dot_q5_k_rows),
            ENTRY(NC_TYPE_Q6_K, nc_ref_dot_q6_k_rows),
            ENTRY(NC_TYPE_IQ4_NL, nc_ref_dot_iq4_nl_rows),
            ENTRY(NC_TYPE_IQ4_XS, nc_ref_dot_iq4_xs_rows),
            ENTRY(NC_TYPE_MXFP4, nc_ref_dot_mxfp4_rows),
            ENTRY(NC_TYPE_TQ1_0, nc_ref_dot_tq1_0_rows),
            ENTRY(NC_TYPE_TQ2_0, nc_ref_dot_tq2_0_rows),
            ENTRY(NC_TYPE_NVFP4, nc_ref_dot_nvfp4_rows),
            ENTRY(NC_TYPE_Q1_0, nc_ref_dot_q1_0_rows),
            ENTRY(NC_TYPE_Q2_0, nc_ref_dot_q2_0_rows),
            ENTRY(NC_TYPE_IQ2_XXS, nc_ref_dot_iq2_xxs_rows),
            ENTRY(NC_TYPE_IQ2_XS, nc_ref_dot_iq2_xs_rows),
            ENTRY(NC_TYPE_IQ2_S, nc_ref_dot_iq2_s_rows),
            ENTRY(NC_TYPE_IQ3_XXS, nc_ref_dot_iq3_xxs_rows),
            ENTRY(NC_TYPE_IQ3_S, nc_ref_dot_iq3_s_rows),
            ENTRY(NC_TYPE_IQ1_S, nc_ref_dot_iq1_s_rows),
            ENTRY(NC_TYPE_IQ1_M, nc_ref_dot_iq1_m_rows),
        },
    .quantize_act =
        {
            ENTRY(NC_TYPE_F32, nc_ref_quant_f32),
            ENTRY(NC_TYPE_F16, nc_ref_quant_f16),
            ENTRY(NC_TYPE_BF16, nc_ref_quant_bf16),
            ENTRY(NC_TYPE_Q8_0, nc_ref_quant_q8_0),
            ENTRY(NC_TYPE_Q8_1, nc_ref_quant_q8_1),
            ENTRY(NC_TYPE_Q8_K, nc_ref_quant_q8_k),
        },
    .attn = nc_attn_kernels_plain,
    .attn_flash = nc_attn_flash_plain,
    .ops = nc_ops_plain,
    .sampler_simd = NC_SIMD_PORTABLE,
};
#undef ENTRY

const nc_kernels *nc_kernels_ref(void) {
  return &k_ref;
}
