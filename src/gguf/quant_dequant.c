/* quant_dequant: block -> f32 for every supported type. Each formula and its
 * float operation order follow ggml's dequantize_row_* so results are bit
 * for bit the same (this file is compiled without FMA contraction). */
#include <string.h>

#include "quant.h"
#include "quant_dequant_iq.h"

#define H2F(x) nc_fp16_to_fp32(x)

static void deq_q4_0(const block_q4_0 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK4_0) {
    const float d = H2F(x[i].d);
    for (int j = 0; j < QK4_0 / 2; j++) {
      y[j] = (float)((x[i].qs[j] & 0x0f) - 8) * d;
      y[j + QK4_0 / 2] = (float)((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

static void deq_q4_1(const block_q4_1 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK4_1) {
    const float d = H2F(x[i].d), m = H2F(x[i].m);
    for (int j = 0; j < QK4_1 / 2; j++) {
      y[j] = (float)(x[i].qs[j] & 0x0f) * d + m;
      y[j + QK4_1 / 2] = (float)(x[i].qs[j] >> 4) * d + m;
    }
  }
}

static uint32_t load_u32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void deq_q5_0(const block_q5_0 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK5_0) {
    const float d = H2F(x[i].d);
    const uint32_t qh = load_u32(x[i].qh);
    for (int j = 0; j < QK5_0 / 2; j++) {
      int lo = (x[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4);
      int hi = (x[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
      y[j] = (float)(lo - 16) * d;
      y[j + QK5_0 / 2] = (float)(hi - 16) * d;
    }
  }
}

static void deq_q5_1(const block_q5_1 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK5_1) {
    const float d = H2F(x[i].d), m = H2F(x[i].m);
    const uint32_t qh = load_u32(x[i].qh);
    for (int j = 0; j < QK5_1 / 2; j++) {
      int lo = (x[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4);
      int hi = (x[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
      y[j] = (float)lo * d + m;
      y[j + QK5_1 / 2] = (float)hi * d + m;
    }
  }
}

static void deq_q8_0(const block_q8_0 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK8_0) {
    const float d = H2F(x[i].d);
    for (int j = 0; j < QK8_0; j++)
      y[j] = (float)x[i].qs[j] * d;
  }
}

static void deq_q8_1(const block_q8_1 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK8_1) {
    const float d = H2F(x[i].d);
    for (int j = 0; j < QK8_1; j++)
      y[j] = (float)x[i].qs[j] * d;
  }
}

static void deq_q2_k(const block_q2_K *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d), dmin = H2F(x[i].dmin);
    const uint8_t *q = x[i].qs;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; half++) {
          uint8_t sc = x[i].scales[is++];
          const float dl = d * (float)(sc & 0x0f), ml = dmin * (float)(sc >> 4);
          for (int l = 0; l < 16; l++)
            *y++ = dl * (float)((q[16 * half + l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

/* The 16 six-bit scales of Q3_K, still biased by 32. */
static void q3k_scales(const uint8_t s[12], int out[16]) {
  for (int i = 0; i < 16; i++) {
    int lo = i < 8 ? (s[i] & 0x0f) : (s[i - 8] >> 4);
    int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    out[i] = lo | (hi << 4);
  }
}

static void deq_q3_k(const block_q3_K *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d_all = H2F(x[i].d);
    int sc[16];
    q3k_scales(x[i].scales, sc);
    const uint8_t *q = x[i].qs;
    uint8_t m = 1;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (int half = 0; half < 2; half++) {
          const float dl = d_all * (float)(sc[is++] - 32);
          for (int l = 0; l < 16; l++) {
            int v = (q[16 * half + l] >> shift) & 3;
            if (!(x[i].hmask[16 * half + l] & m)) v -= 4;
            *y++ = dl * (float)v;
          }
        }
      }
    }
  }
}

static void deq_q4_k(const block_q4_K *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d), min = H2F(x[i].dmin);
    const uint8_t *q = x[i].qs;
    for (int c = 0; c < 4; c++, q += 32) {
      uint8_t sc, m;
      nc_k4_scale_min(2 * c, x[i].scales, &sc, &m);
      const float d1 = d * (float)sc, m1 = min * (float)m;
      nc_k4_scale_min(2 * c + 1, x[i].scales, &sc, &m);
      const float d2 = d * (float)sc, m2 = min * (float)m;
      for (int l = 0; l < 32; l++)
        *y++ = d1 * (float)(q[l] & 0x0f) - m1;
      for (int l = 0; l < 32; l++)
        *y++ = d2 * (float)(q[l] >> 4) - m2;
    }
  }
}

static void deq_q5_k(const block_q5_K *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d), min = H2F(x[i].dmin);
    const uint8_t *ql = x[i].qs, *qh = x[i].qh;
    uint8_t u1 = 1, u2 = 2;
    for (int c = 0; c < 4; c++, ql += 32, u1 <<= 2, u2 <<= 2) {
      uint8_t sc, m;
      nc_k4_scale_min(2 * c, x[i].scales, &sc, &m);
      const float d1 = d * (float)sc, m1 = min * (float)m;
      nc_k4_scale_min(2 * c + 1, x[i].scales, &sc, &m);
      const float d2 = d * (float)sc, m2 = min * (float)m;
      for (int l = 0; l < 32; l++)
        *y++ = d1 * (float)((ql[l] & 0x0f) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; l++)
        *y++ = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    }
  }
}

static void deq_q6_k(const block_q6_K *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    const uint8_t *ql = x[i].ql, *qh = x[i].qh;
    const int8_t *sc = x[i].scales;
    for (int n = 0; n < QK_K; n += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; l++) {
        int is = l / 16;
        int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[n + l] = d * (float)sc[is] * (float)q1;
        y[n + l + 32] = d * (float)sc[is + 2] * (float)q2;
        y[n + l + 64] = d * (float)sc[is + 4] * (float)q3;
        y[n + l + 96] = d * (float)sc[is + 6] * (float)q4;
      }
    }
    y += QK_K;
  }
}

const int8_t nc_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};
const int8_t nc_mxfp4_values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                    0, -1, -2, -3, -4, -6, -8, -12};

static void deq_iq4_nl(const block_iq4_nl *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK4_NL) {
    const float d = H2F(x[i].d);
    for (int j = 0; j < QK4_NL / 2; j++) {
      y[j] = d * (float)nc_iq4nl_values[x[i].qs[j] & 0x0f];
      y[j + QK4_NL / 2] = d * (float)nc_iq4nl_values[x[i].qs[j] >> 4];
    }
  }
}

/* Sub-block j's 6-bit scale (0..63, biased by 32) of an IQ4_XS block. */
static int iq4xs_scale(const block_iq4_xs *x, int j) {
  return ((x->scales_l[j / 2] >> 4 * (j % 2)) & 0x0f) |
         (((x->scales_h >> 2 * j) & 3) << 4);
}

static void deq_iq4_xs(const block_iq4_xs *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    const uint8_t *qs = x[i].qs;
    for (int j = 0; j < QK_K / 32; j++, y += 32, qs += 16) {
      const float dl = d * (float)(iq4xs_scale(&x[i], j) - 32);
      for (int l = 0; l < 16; l++) {
        y[l] = dl * (float)nc_iq4nl_values[qs[l] & 0x0f];
        y[l + 16] = dl * (float)nc_iq4nl_values[qs[l] >> 4];
      }
    }
  }
}

static void deq_mxfp4(const block_mxfp4 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK_MXFP4) {
    const float d = nc_e8m0_to_fp32_half(x[i].e);
    for (int j = 0; j < QK_MXFP4 / 2; j++) {
      y[j] = (float)nc_mxfp4_values[x[i].qs[j] & 0x0f] * d;
      y[j + QK_MXFP4 / 2] = (float)nc_mxfp4_values[x[i].qs[j] >> 4] * d;
    }
  }
}

/* TQ1_0: qs[0..31] hold 5 trits each for elements 0..159 (digit n of byte
 * m is element 32n + m), qs[32..47] 5 each for 160..239 (16n + m), qh[0..3]
 * 4 each for 240..255 (4n + m). */
static void deq_tq1_0(const block_tq1_0 *x, float *y, int64_t nb) {
  static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    for (int n = 0; n < 5; n++)
      for (int m = 0; m < 32; m++)
        *y++ = (float)(nc_tq1_trit((uint8_t)(x[i].qs[m] * pow3[n])) - 1) * d;
    for (int n = 0; n < 5; n++)
      for (int m = 0; m < 16; m++)
        *y++ =
            (float)(nc_tq1_trit((uint8_t)(x[i].qs[32 + m] * pow3[n])) - 1) * d;
    for (int n = 0; n < 4; n++)
      for (int m = 0; m < 4; m++)
        *y++ = (float)(nc_tq1_trit((uint8_t)(x[i].qh[m] * pow3[n])) - 1) * d;
  }
}

/* TQ2_0: 2 bits per element (0, 1, 2 for -1, 0, 1; 3 reads as 2), bits 2l
 * of byte 32h + m are element 128h + 32l + m. */
static void deq_tq2_0(const block_tq2_0 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    for (int h = 0; h < 2; h++)
      for (int l = 0; l < 4; l++)
        for (int m = 0; m < 32; m++)
          *y++ = (float)(((x[i].qs[32 * h + m] >> (2 * l)) & 3) - 1) * d;
  }
}

/* NVFP4: four 16-element sub-blocks, each with its UE4M3 scale; byte j of
 * sub-block s holds elements 16s + j (low nibble) and 16s + 8 + j. */
static void deq_nvfp4(const block_nvfp4 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++)
    for (int s = 0; s < 4; s++, y += 16) {
      const float d = nc_ue4m3_to_fp32_half(x[i].d[s]);
      for (int j = 0; j < 8; j++) {
        y[j] = (float)nc_mxfp4_values[x[i].qs[8 * s + j] & 0x0f] * d;
        y[j + 8] = (float)nc_mxfp4_values[x[i].qs[8 * s + j] >> 4] * d;
      }
    }
}

/* Q1_0: bit j (byte j / 8, bit j % 8) gives +d (1) or -d (0). */
static void deq_q1_0(const block_q1_0 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK1_0) {
    const float d = H2F(x[i].d), neg_d = -d;
    for (int j = 0; j < QK1_0; j++)
      y[j] = (x[i].qs[j / 8] >> (j % 8)) & 1 ? d : neg_d;
  }
}

/* Q2_0: 2 bits per element, 0..3 for -1..2, four to a byte from bit 0. */
static void deq_q2_0(const block_q2_0 *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, y += QK2_0) {
    const float d = H2F(x[i].d);
    for (int j = 0; j < QK2_0; j++)
      y[j] = (float)(((x[i].qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
  }
}

static void deq_q8_k(const block_q8_K *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++)
    for (int j = 0; j < QK_K; j++)
      *y++ = x[i].d * (float)x[i].qs[j];
}

void nc_dequantize_row(nc_type type, const void *src, float *dst, int64_t n) {
  const nc_type_traits *t = nc_type_traits_of((uint32_t)type);
  if (!t || n <= 0) return;
  const int64_t nb = n / t->block_size;
  switch (type) {
  case NC_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); return;
  case NC_TYPE_F16: {
    const nc_fp16 *h = src;
    for (int64_t i = 0; i < n; i++)
      dst[i] = nc_fp16_to_fp32(h[i]);
    return;
  }
  case NC_TYPE_BF16: {
    const nc_bf16 *h = src;
    for (int64_t i = 0; i < n; i++)
      dst[i] = nc_bf16_to_fp32(h[i]);
    return;
  }
  case NC_TYPE_Q4_0: deq_q4_0(src, dst, nb); return;
  case NC_TYPE_Q4_1: deq_q4_1(src, dst, nb); return;
  case NC_TYPE_Q5_0: deq_q5_0(src, dst, nb); return;
  case NC_TYPE_Q5_1: deq_q5_1(src, dst, nb); return;
  case NC_TYPE_Q8_0: deq_q8_0(src, dst, nb); return;
  case NC_TYPE_Q8_1: deq_q8_1(src, dst, nb); return;
  case NC_TYPE_Q2_K: deq_q2_k(src, dst, nb); return;
  case NC_TYPE_Q3_K: deq_q3_k(src, dst, nb); return;
  case NC_TYPE_Q4_K: deq_q4_k(src, dst, nb); return;
  case NC_TYPE_Q5_K: deq_q5_k(src, dst, nb); return;
  case NC_TYPE_Q6_K: deq_q6_k(src, dst, nb); return;
  case NC_TYPE_Q8_K: deq_q8_k(src, dst, nb); return;
  case NC_TYPE_IQ4_NL: deq_iq4_nl(src, dst, nb); return;
  case NC_TYPE_IQ4_XS: deq_iq4_xs(src, dst, nb); return;
  case NC_TYPE_MXFP4: deq_mxfp4(src, dst, nb); return;
  case NC_TYPE_TQ1_0: deq_tq1_0(src, dst, nb); return;
  case NC_TYPE_TQ2_0: deq_tq2_0(src, dst, nb); return;
  case NC_TYPE_NVFP4: deq_nvfp4(src, dst, nb); return;
  case NC_TYPE_Q1_0: deq_q1_0(src, dst, nb); return;
  case NC_TYPE_Q2_0: deq_q2_0(src, dst, nb); return;
  default:
    if (nc_dequantize_iq(type, src, dst, nb)) return;
    /* known but unsupported: defined output rather than garbage */
    memset(dst, 0, (size_t)n * sizeof(float));
    return;
  }
}
