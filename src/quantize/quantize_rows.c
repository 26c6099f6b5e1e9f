/* quantize_rows: the weight quantizers, each in the float order of ggml's
 * reference quantizer for its type (the one llama.cpp's quantizer runs when
 * it has no importance matrix), so that a file quantized here holds the
 * bytes llama.cpp's would. Compiled without FMA contraction, like the
 * generic x86-64 build of ggml's base library. */
#include "quantize_rows.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "quant_round.h"
#include "quantize_iq.h"

static int clampi(int v, int lo, int hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* ---------------------------------------------------------- 32-blocks */

/* The value of largest magnitude (the first, on ties) and its magnitude. */
static float signed_max(const float *x, int n, float *amax) {
  float a = 0.0f, m = 0.0f;
  for (int j = 0; j < n; j++)
    if (a < fabsf(x[j])) {
      a = fabsf(x[j]);
      m = x[j];
    }
  *amax = a;
  return m;
}

static void min_max(const float *x, int n, float *mn, float *mx) {
  float lo = FLT_MAX, hi = -FLT_MAX;
  for (int j = 0; j < n; j++) {
    if (x[j] < lo) lo = x[j];
    if (x[j] > hi) hi = x[j];
  }
  *mn = lo;
  *mx = hi;
}

static void q5_0_row(const float *x, block_q5_0 *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += QK5_0) {
    float amax;
    const float d = signed_max(x, QK5_0, &amax) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = nc_fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_0 / 2; j++) {
      const int a = (int8_t)(x[j] * id + 16.5f);
      const int b = (int8_t)(x[j + QK5_0 / 2] * id + 16.5f);
      const uint8_t q0 = (uint8_t)(a < 31 ? a : 31),
                    q1 = (uint8_t)(b < 31 ? b : 31);
      y[i].qs[j] = (uint8_t)((q0 & 15) | (q1 & 15) << 4);
      qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + 16);
    }
    memcpy(y[i].qh, &qh, sizeof qh);
  }
}

static void q4_1_row(const float *x, block_q4_1 *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += QK4_1) {
    float mn, mx;
    min_max(x, QK4_1, &mn, &mx);
    const float d = (mx - mn) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = nc_fp32_to_fp16(d);
    y[i].m = nc_fp32_to_fp16(mn);
    for (int j = 0; j < QK4_1 / 2; j++) {
      const int a = (int8_t)((x[j] - mn) * id + 0.5f);
      const int b = (int8_t)((x[j + QK4_1 / 2] - mn) * id + 0.5f);
      y[i].qs[j] = (uint8_t)((a < 15 ? a : 15) | (b < 15 ? b : 15) << 4);
    }
  }
}

static void q5_1_row(const float *x, block_q5_1 *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += QK5_1) {
    float mn, mx;
    min_max(x, QK5_1, &mn, &mx);
    const float d = (mx - mn) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = nc_fp32_to_fp16(d);
    y[i].m = nc_fp32_to_fp16(mn);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_1 / 2; j++) {
      const uint8_t q0 = (uint8_t)((x[j] - mn) * id + 0.5f);
      const uint8_t q1 = (uint8_t)((x[j + QK5_1 / 2] - mn) * id + 0.5f);
      y[i].qs[j] = (uint8_t)((q0 & 15) | (q1 & 15) << 4);
      qh |= (uint32_t)((q0 & 0x10u) >> 4) << j | (uint32_t)((q1 & 0x10u) >> 4)
                                                     << (j + 16);
    }
    memcpy(y[i].qh, &qh, sizeof qh);
  }
}

static void q8_0_row(const float *x, block_q8_0 *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += QK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; j++)
      amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = nc_fp32_to_fp16(d);
    for (int j = 0; j < QK8_0; j++)
      y[i].qs[j] = (int8_t)roundf(x[j] * id);
  }
}

/* ----------------------------------------------------------- K-quants */

/* The error of one value: squared, or absolute (use_mad). */
static float fit_err(float diff, bool use_mad) {
  return use_mad ? fabsf(diff) : diff * diff;
}

/* ggml's make_qkx2_quants: levels 0..nmax with a scale and a min (returned
 * as -min in *neg_min) for n weighted values, searching nstep + 1 inverse
 * scales around nmax / (max - min) for the least weighted error (squared,
 * or absolute with use_mad). */
static float fit_scale_min(int n, int nmax, const float *x, const float *w,
                           uint8_t *L, float *neg_min, uint8_t *Laux,
                           float rmin, float rdelta, int nstep, bool use_mad) {
  float mn = x[0], mx = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; i++) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (mn > 0) mn = 0;
  if (mx == mn) {
    memset(L, 0, (size_t)n);
    *neg_min = -mn;
    return 0.f;
  }
  float iscale = nmax / (mx - mn);
  float scale = 1 / iscale;
  float best = 0;
  for (int i = 0; i < n; i++) {
    L[i] = (uint8_t)clampi(nc_nearest_int(iscale * (x[i] - mn)), 0, nmax);
    best += w[i] * fit_err(scale * L[i] + mn - x[i], use_mad);
  }
  for (int is = 0; is <= nstep; is++) {
    iscale = (rmin + rdelta * is + nmax) / (mx - mn);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; i++) {
      const int l = clampi(nc_nearest_int(iscale * (x[i] - mn)), 0, nmax);
      Laux[i] = (uint8_t)l;
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float err = 0;
      for (int i = 0; i < n; i++) {
        err += w[i] * fit_err(this_scale * Laux[i] + this_min - x[i], use_mad);
      }
      if (err < best) {
        memcpy(L, Laux, (size_t)n);
        best = err;
        scale = this_scale;
        mn = this_min;
      }
    }
  }
  *neg_min = -mn;
  return scale;
}

/* The 12 scale bytes of a Q4_K/Q5_K superblock from 6-bit scales and mins
 * (nc_k4_scale_min's inverse). */
static void pack_k4_scales(const uint8_t ls[8], const uint8_t lm[8],
                           uint8_t q[K_SCALE_SIZE]) {
  for (int j = 0; j < 4; j++) {
    q[j] = (uint8_t)(ls[j] | (ls[j + 4] >> 4) << 6);
    q[j + 4] = (uint8_t)(lm[j] | (lm[j + 4] >> 4) << 6);
    q[j + 8] = (uint8_t)((ls[j + 4] & 15) | (lm[j + 4] & 15) << 4);
  }
}

/* Q4_K (nmax 15) and Q5_K (nmax 31) superblocks: per 32 a scale and min
 * fitted with weights av_x + |x|, both quantized to 6 bits against their
 * largest, then the levels requantized against the stored values.
 * Writes L[256], the 12 scale bytes, d and dmin. */
static void kquant_levels(const float *x, int nmax, float rmin, int nstep,
                          uint8_t L[QK_K], uint8_t scales[K_SCALE_SIZE],
                          nc_fp16 *dd, nc_fp16 *dmin) {
  float sc[8], mins[8], w[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; j++) {
    const float *xj = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; l++)
      sum_x2 += xj[l] * xj[l];
    const float av_x = sqrtf(sum_x2 / 32);
    for (int l = 0; l < 32; l++)
      w[l] = av_x + fabsf(xj[l]);
    sc[j] = fit_scale_min(32, nmax, xj, w, L + 32 * j, &mins[j], Laux, rmin,
                          0.1f, nstep, false);
    if (sc[j] > max_scale) max_scale = sc[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; j++) {
    const uint8_t a = (uint8_t)nc_nearest_int(inv_scale * sc[j]);
    const uint8_t b = (uint8_t)nc_nearest_int(inv_min * mins[j]);
    ls[j] = a < 63 ? a : 63;
    lm[j] = b < 63 ? b : 63;
  }
  pack_k4_scales(ls, lm, scales);
  *dd = nc_fp32_to_fp16(max_scale / 63.f);
  *dmin = nc_fp32_to_fp16(max_min / 63.f);
  for (int j = 0; j < 8; j++) {
    uint8_t s, m;
    nc_k4_scale_min(j, scales, &s, &m);
    const float d = nc_fp16_to_fp32(*dd) * s;
    if (d == 0.0f) continue;
    const float dm = nc_fp16_to_fp32(*dmin) * m;
    for (int l = 0; l < 32; l++)
      L[32 * j + l] =
          (uint8_t)clampi(nc_nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
  }
}

static void pack_q4_k(const uint8_t L[QK_K], block_q4_K *y) {
  for (int c = 0; c < 4; c++)
    for (int l = 0; l < 32; l++)
      y->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
}

static void pack_q5_k(const uint8_t L[QK_K], block_q5_K *y) {
  memset(y->qh, 0, sizeof y->qh);
  for (int c = 0; c < 4; c++)
    for (int l = 0; l < 32; l++) {
      const int a = L[64 * c + l], b = L[64 * c + 32 + l];
      y->qh[l] |= (uint8_t)((a > 15) << (2 * c) | (b > 15) << (2 * c + 1));
      y->qs[32 * c + l] = (uint8_t)((a & 15) | (b & 15) << 4);
    }
}

static void q4_k_row(const float *x, block_q4_K *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    uint8_t L[QK_K];
    kquant_levels(x, 15, -1.f, 20, L, y[i].scales, &y[i].d, &y[i].dmin);
    pack_q4_k(L, &y[i]);
  }
}

static void q5_k_row(const float *x, block_q5_K *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    uint8_t L[QK_K];
    kquant_levels(x, 31, -0.5f, 15, L, y[i].scales, &y[i].d, &y[i].dmin);
    pack_q5_k(L, &y[i]);
  }
}

/* Packs 2-bit levels of a 256-superblock as Q2_K and Q3_K hold them: byte
 * l of each 32-byte half takes levels l, l + 32, l + 64, l + 96. */
static void pack_2bit(const uint8_t L[QK_K], uint8_t qs[QK_K / 4]) {
  for (int j = 0; j < QK_K; j += 128)
    for (int l = 0; l < 32; l++)
      qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 |
                                L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

/* Q2_K: per 16 a scale and min fitted by absolute error (weights |x|),
 * both quantized to 4 bits against their largest, then the levels
 * requantized against the stored values. */
static void q2_k_row(const float *x, block_q2_K *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    uint8_t L[QK_K], Laux[16];
    float w[16], sc[QK_K / 16], mins[QK_K / 16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 16; j++) {
      for (int l = 0; l < 16; l++)
        w[l] = fabsf(x[16 * j + l]);
      sc[j] = fit_scale_min(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], Laux,
                            -0.5f, 0.1f, 15, true);
      if (sc[j] > max_scale) max_scale = sc[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    memset(y[i].scales, 0, sizeof y[i].scales);
    y[i].d = nc_fp32_to_fp16(0.f);
    y[i].dmin = nc_fp32_to_fp16(0.f);
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < QK_K / 16; j++)
        y[i].scales[j] = (uint8_t)nc_nearest_int(iscale * sc[j]);
      y[i].d = nc_fp32_to_fp16(max_scale / 15.f);
    }
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < QK_K / 16; j++)
        y[i].scales[j] |= (uint8_t)(nc_nearest_int(iscale * mins[j]) << 4);
      y[i].dmin = nc_fp32_to_fp16(max_min / 15.f);
    }
    for (int j = 0; j < QK_K / 16; j++) {
      const float d = nc_fp16_to_fp32(y[i].d) * (y[i].scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = nc_fp16_to_fp32(y[i].dmin) * (y[i].scales[j] >> 4);
      for (int l = 0; l < 16; l++)
        L[16 * j + l] =
            (uint8_t)clampi(nc_nearest_int((x[16 * j + l] + dm) / d), 0, 3);
    }
    pack_2bit(L, y[i].qs);
  }
}

/* ggml's make_q3_quants with its refinement: signed levels -nmax..nmax-1
 * for n values weighted x^2, starting from -nmax / max and moving one level
 * at a time while the fit improves (at most 5 rounds); L gets level + nmax. */
static float fit_scale_q3(int n, int nmax, const float *x, int8_t *L) {
  float amax;
  const float mx = signed_max(x, n, &amax);
  if (amax < 1e-15f) {
    memset(L, 0, (size_t)n);
    return 0.f;
  }
  const float iscale = -nmax / mx;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    const int l = clampi(nc_nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = (int8_t)l;
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int itry = 0; itry < 5; itry++) {
    int changed = 0;
    for (int i = 0; i < n; i++) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx <= 0) continue;
      float sl2 = suml2 - w * L[i] * L[i];
      const int nl = clampi(nc_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (nl == L[i]) continue;
      slx += w * x[i] * nl;
      sl2 += w * nl * nl;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = (int8_t)nl;
        sumlx = slx;
        suml2 = sl2;
        changed++;
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; i++)
    L[i] = (int8_t)(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Q3_K's 6-bit scale j from its 12 packed bytes (offset by 32). */
static int q3_k_scale(const uint8_t s[12], int j) {
  const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  return (lo | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
}

/* Q3_K's levels against its stored scales, then hmask and qs. */
static void q3_k_finish(const float *x, int8_t L[QK_K], block_q3_K *y) {
  for (int j = 0; j < QK_K / 16; j++) {
    const float d = nc_fp16_to_fp32(y->d) * q3_k_scale(y->scales, j);
    if (d == 0.0f) continue;
    for (int l = 0; l < 16; l++)
      L[16 * j + l] =
          (int8_t)(clampi(nc_nearest_int(x[16 * j + l] / d), -4, 3) + 4);
  }
  memset(y->hmask, 0, sizeof y->hmask);
  uint8_t low[QK_K];
  for (int j = 0; j < QK_K; j++) {
    if (L[j] > 3) y->hmask[j % (QK_K / 8)] |= (uint8_t)(1 << (j / (QK_K / 8)));
    low[j] = (uint8_t)(L[j] > 3 ? L[j] - 4 : L[j]);
  }
  pack_2bit(low, y->qs);
}

/* Q3_K: per 16 a signed scale (fit_scale_q3), quantized to 6 bits against
 * the largest, then 3-bit levels against the stored scales: the low two
 * bits in qs, the high bit in hmask. */
static void q3_k_row(const float *x, block_q3_K *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    int8_t L[QK_K];
    float sc[QK_K / 16], max_scale = 0, amax = 0;
    for (int j = 0; j < QK_K / 16; j++) {
      sc[j] = fit_scale_q3(16, 4, x + 16 * j, L + 16 * j);
      if (fabsf(sc[j]) > amax) {
        amax = fabsf(sc[j]);
        max_scale = sc[j];
      }
    }
    memset(y[i].scales, 0, sizeof y[i].scales);
    y[i].d = nc_fp32_to_fp16(0.f);
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < QK_K / 16; j++) {
        const int l =
            clampi((int8_t)nc_nearest_int(iscale * sc[j]), -32, 31) + 32;
        if (j < 8)
          y[i].scales[j] = (uint8_t)(l & 0xF);
        else
          y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
        y[i].scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
      }
      y[i].d = nc_fp32_to_fp16(1 / iscale);
    }
    q3_k_finish(x, L, &y[i]);
  }
}

/* ggml's make_qx_quants with rmse_type 1 (weights qw, or x^2 without):
 * signed levels -nmax..nmax-1 for n values, 19 inverse scales tried around
 * -nmax / max; L gets level + nmax. */
static float fit_scale_signed(int n, int nmax, const float *x, const float *qw,
                              int8_t *L) {
  float mx = 0, amax = 0;
  for (int i = 0; i < n; i++)
    if (fabsf(x[i]) > amax) {
      amax = fabsf(x[i]);
      mx = x[i];
    }
  if (amax < 1e-15f) {
    memset(L, 0, (size_t)n);
    return 0.f;
  }
  float iscale = -nmax / mx;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    const int l = clampi(nc_nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = (int8_t)(l + nmax);
    const float w = qw ? qw[i] : x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; is++) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / mx;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; i++) {
      const int l = clampi(nc_nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = qw ? qw[i] : x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; i++)
        L[i] = (int8_t)(nmax +
                        clampi(nc_nearest_int(iscale * x[i]), -nmax, nmax - 1));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

static void q6_k_row(const float *x, block_q6_K *y, int64_t nb,
                     const float *qw) {
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    int8_t L[QK_K];
    float sc[16], max_scale = 0, max_abs = 0;
    for (int ib = 0; ib < 16; ib++) {
      sc[ib] =
          fit_scale_signed(16, 32, x + 16 * ib,
                           qw ? qw + QK_K * i + 16 * ib : NULL, L + 16 * ib);
      if (fabsf(sc[ib]) > max_abs) {
        max_abs = fabsf(sc[ib]);
        max_scale = sc[ib];
      }
    }
    if (max_abs < 1e-15f) {
      memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[i].d = nc_fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < 16; ib++) {
      const int s = nc_nearest_int(iscale * sc[ib]);
      y[i].scales[ib] = (int8_t)(s < 127 ? s : 127);
    }
    for (int j = 0; j < 16; j++) {
      const float d = nc_fp16_to_fp32(y[i].d) * y[i].scales[j];
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; l++)
        L[16 * j + l] =
            (int8_t)(clampi(nc_nearest_int(x[16 * j + l] / d), -32, 31) + 32);
    }
    for (int h = 0; h < 2; h++) {
      const int8_t *Lh = L + 128 * h;
      uint8_t *ql = y[i].ql + 64 * h, *qh = y[i].qh + 32 * h;
      for (int l = 0; l < 32; l++) {
        ql[l] = (uint8_t)((Lh[l] & 15) | (Lh[l + 64] & 15) << 4);
        ql[l + 32] = (uint8_t)((Lh[l + 32] & 15) | (Lh[l + 96] & 15) << 4);
        qh[l] = (uint8_t)((Lh[l] >> 4) | (Lh[l + 32] >> 4) << 2 |
                          (Lh[l + 64] >> 4) << 4 | (Lh[l + 96] >> 4) << 6);
      }
    }
  }
}

/* --------------------------------------------- non-linear 4-bit, MXFP4 */

/* The index of the table value nearest x (table ascending; ties to the
 * lower one only when x is exactly between, as ggml's best_index_int8). */
static int nearest_value(const int8_t vals[16], float x) {
  if (x <= vals[0]) return 0;
  if (x >= vals[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < vals[mid])
      hi = mid;
    else
      lo = mid;
  }
  return x - vals[hi - 1] < vals[hi] - x ? hi - 1 : hi;
}

/* The IQ4 weights of a 32-block: x^2, or with an importance matrix
 * qw * sqrt(sigma2 + x^2) (quantize_row_iq4_nl_impl). */
static void iq4_weights(const float *x, const float *qw, float sigma2,
                        float w[32]) {
  for (int j = 0; j < 32; j++)
    w[j] = qw ? qw[j] * sqrtf(sigma2 + x[j] * x[j]) : x[j] * x[j];
}

/* 2 / n times the sum of squares of n values (the IQ4 sigma2). */
static float iq4_sigma2(const float *x, int n) {
  float s = 0;
  for (int j = 0; j < n; j++)
    s += x[j] * x[j];
  return s * (2.f / n);
}

/* The weighted least-squares scale of a 32-block on the IQ4_NL table,
 * ggml's search over 15 inverse scales around the largest value's
 * (quantize_row_iq4_nl_impl, ntry 7). 0 for an all-zero block (its levels
 * left to the caller). */
static float iq4_block_scale(const float *x, const float *w, uint8_t L[32]) {
  const int8_t *v = nc_iq4nl_values;
  float amax = 0, mx = 0;
  for (int j = 0; j < 32; j++)
    if (fabsf(x[j]) > amax) {
      amax = fabsf(x[j]);
      mx = x[j];
    }
  if (amax < 1e-15f) return 0.0f;
  float d = -mx / v[0];
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < 32; j++) {
    const int l = nearest_value(v, id * x[j]);
    L[j] = (uint8_t)l;
    const float q = v[l];
    sumqx += w[j] * q * x[j];
    sumq2 += w[j] * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int itry = -7; itry <= 7; itry++) {
    id = (itry + v[0]) / mx;
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; j++) {
      const float q = v[nearest_value(v, id * x[j])];
      sumqx += w[j] * q * x[j];
      sumq2 += w[j] * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

static void pack_nibbles(const uint8_t *L, uint8_t *q, int n) {
  for (int i = 0; i < n / 32; i++)
    for (int j = 0; j < 16; j++)
      q[16 * i + j] = (uint8_t)(L[32 * i + j] | L[32 * i + 16 + j] << 4);
}

static void iq4_nl_row(const float *x, block_iq4_nl *y, int64_t nb,
                       const float *qw) {
  for (int64_t i = 0; i < nb; i++, x += QK4_NL) {
    uint8_t L[32];
    float w[32];
    iq4_weights(x, qw ? qw + QK4_NL * i : NULL, qw ? iq4_sigma2(x, 32) : 0, w);
    const float d = iq4_block_scale(x, w, L);
    y[i].d = nc_fp32_to_fp16(d);
    const float id = d != 0.0f ? 1 / d : 0;
    for (int j = 0; j < 32; j++)
      L[j] = (uint8_t)nearest_value(nc_iq4nl_values, id * x[j]);
    pack_nibbles(L, y[i].qs, 32);
  }
}

static void iq4_xs_row(const float *x, block_iq4_xs *y, int64_t nb,
                       const float *qw) {
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    uint8_t L[QK_K];
    float sc[8], max_scale = 0, amax_scale = 0, w[32];
    const float sigma2 = qw ? iq4_sigma2(x, QK_K) : 0;
    for (int ib = 0; ib < 8; ib++) {
      iq4_weights(x + 32 * ib, qw ? qw + QK_K * i + 32 * ib : NULL, sigma2, w);
      sc[ib] = iq4_block_scale(x + 32 * ib, w, L + 32 * ib);
      if (fabsf(sc[ib]) > amax_scale) {
        amax_scale = fabsf(sc[ib]);
        max_scale = sc[ib];
      }
    }
    const float d = -max_scale / 32;
    y[i].d = nc_fp32_to_fp16(d);
    const float id = d != 0.0f ? 1 / d : 0.f;
    y[i].scales_h = 0;
    for (int ib = 0; ib < 8; ib++) {
      const int l = clampi(nc_nearest_int(id * sc[ib]), -32, 31);
      const float dl = d * l;
      const float idl = dl != 0.0f ? 1 / dl : 0.f;
      for (int j = 0; j < 32; j++)
        L[32 * ib + j] =
            (uint8_t)nearest_value(nc_iq4nl_values, idl * x[32 * ib + j]);
      const int u = l + 32;
      if (ib % 2 == 0)
        y[i].scales_l[ib / 2] = (uint8_t)(u & 15);
      else
        y[i].scales_l[ib / 2] |= (uint8_t)((u & 15) << 4);
      y[i].scales_h |= (uint16_t)((u >> 4) << 2 * ib);
    }
    pack_nibbles(L, y[i].qs, QK_K);
  }
}

/* MXFP4: the E8M0 exponent from the block's largest magnitude (its floor
 * log2, less 2), each value the nearest of the 16 FP4 values times it (the
 * first on ties), as ggml's quantize_row_mxfp4_ref. */
static void mxfp4_row(const float *x, block_mxfp4 *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += QK_MXFP4) {
    float amax = 0.0f;
    for (int j = 0; j < QK_MXFP4; j++)
      if (amax < fabsf(x[j])) amax = fabsf(x[j]);
    const uint8_t e =
        amax > 0.0f ? (uint8_t)(floorf(log2f(amax)) - 2 + 127) : 0;
    const float d = nc_e8m0_to_fp32_half(e);
    y[i].e = e;
    for (int j = 0; j < QK_MXFP4; j++) {
      int best = 0;
      float best_err = fabsf(nc_mxfp4_values[0] * d - x[j]);
      for (int k = 1; k < 16; k++) {
        const float err = fabsf(nc_mxfp4_values[k] * d - x[j]);
        if (err < best_err) {
          best = k;
          best_err = err;
        }
      }
      if (j < QK_MXFP4 / 2)
        y[i].qs[j] = (uint8_t)best;
      else
        y[i].qs[j - QK_MXFP4 / 2] |= (uint8_t)(best << 4);
    }
  }
}

/* ------------------------------------- with an importance matrix */

/* ggml's make_qp_quants: non-negative levels 0..nmax for n values (the
 * sub-block scales or mins of a K-quant) weighted w, the best of 9 inverse
 * scales around nmax / max, then refined a level at a time (5 rounds). */
float nc_fit_scale_pos(int n, int nmax, const float *x, uint8_t *L,
                       const float *w) {
  float mx = 0;
  for (int i = 0; i < n; i++)
    mx = mx > x[i] ? mx : x[i];
  if (mx < 1e-15f) {
    memset(L, 0, (size_t)n);
    return 0.f;
  }
  float iscale = nmax / mx;
  for (int i = 0; i < n; i++)
    L[i] = (uint8_t)nc_nearest_int(iscale * x[i]);
  const float scale = 1 / iscale;
  float best = 0;
  for (int i = 0; i < n; i++) {
    const float diff = x[i] - scale * L[i];
    best += w[i] * diff * diff;
  }
  for (int is = -4; is <= 4; is++) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * is + nmax) / mx;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; i++) {
      int l = nc_nearest_int(iscale_is * x[i]);
      l = l < nmax ? l : nmax;
      const float diff = x[i] - scale_is * l;
      mse += w[i] * diff * diff;
    }
    if (mse < best) {
      best = mse;
      iscale = iscale_is;
    }
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    int l = nc_nearest_int(iscale * x[i]);
    l = l < nmax ? l : nmax;
    L[i] = (uint8_t)l;
    sumlx += w[i] * x[i] * l;
    suml2 += w[i] * l * l;
  }
  for (int itry = 0; itry < 5; itry++) {
    int changed = 0;
    for (int i = 0; i < n; i++) {
      float slx = sumlx - w[i] * x[i] * L[i];
      float sl2 = suml2 - w[i] * L[i] * L[i];
      if (!(slx > 0 && sl2 > 0)) continue;
      int nl = nc_nearest_int(x[i] * sl2 / slx);
      nl = nl < nmax ? nl : nmax;
      if (nl == L[i]) continue;
      slx += w[i] * x[i] * nl;
      sl2 += w[i] * nl * nl;
      if (slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = (uint8_t)nl;
        sumlx = slx;
        suml2 = sl2;
        changed++;
      }
    }
    if (!changed) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* The sum of squares of n values. */
static float sum_sq(const float *x, int64_t n) {
  float s = 0;
  for (int64_t j = 0; j < n; j++)
    s += x[j] * x[j];
  return s;
}

/* Importance weights of n values: qw * sqrt(sigma2 + x^2); returns their
 * sum. */
static float imp_weights(const float *x, const float *qw, float sigma2, int n,
                         float *w) {
  float sum = 0;
  for (int l = 0; l < n; l++)
    w[l] = qw[l] * sqrtf(sigma2 + x[l] * x[l]);
  for (int l = 0; l < n; l++)
    sum += w[l];
  return sum;
}

/* Q2_K with importance weights (quantize_row_q2_K_impl): per 16 a scale and
 * min by weighted squared error, the 4-bit scales and mins by fit_scale_pos
 * weighted by each sub-block's total weight. */
static void q2_k_row_w(const float *x, block_q2_K *y, int64_t nb,
                       const float *qw) {
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    uint8_t L[QK_K], Laux[16], Ls[16], Lm[16];
    float w[16], sw[16], sc[16], mins[16];
    const float sigma2 = sum_sq(x, QK_K) / QK_K;
    for (int j = 0; j < 16; j++) {
      sw[j] = imp_weights(x + 16 * j, qw + QK_K * i + 16 * j, sigma2, 16, w);
      sc[j] = fit_scale_min(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], Laux,
                            -0.9f, 0.05f, 36, false);
    }
    y[i].d = nc_fp32_to_fp16(nc_fit_scale_pos(16, 15, sc, Ls, sw));
    y[i].dmin = nc_fp32_to_fp16(nc_fit_scale_pos(16, 15, mins, Lm, sw));
    const float dm = nc_fp16_to_fp32(y[i].d), mm = nc_fp16_to_fp32(y[i].dmin);
    for (int j = 0; j < 16; j++)
      y[i].scales[j] = (uint8_t)(Ls[j] | Lm[j] << 4);
    for (int j = 0; j < 16; j++) {
      const float d = dm * (y[i].scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float m = mm * (y[i].scales[j] >> 4);
      for (int l = 0; l < 16; l++)
        L[16 * j + l] =
            (uint8_t)clampi(nc_nearest_int((x[16 * j + l] + m) / d), 0, 3);
    }
    pack_2bit(L, y[i].qs);
  }
}

/* Q3_K with importance weights (quantize_row_q3_K_impl): the sub-block
 * scales by weighted signed search, their 6-bit levels by the same search
 * weighted by each sub-block's total weight. */
static void q3_k_row_w(const float *x, block_q3_K *y, int64_t nb,
                       const float *qw) {
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    int8_t L[QK_K], Ls[16];
    float w[16], sw[16], sc[16];
    const float sigma2 = 2 * sum_sq(x, QK_K) / QK_K;
    for (int j = 0; j < 16; j++) {
      sw[j] = imp_weights(x + 16 * j, qw + QK_K * i + 16 * j, sigma2, 16, w);
      sc[j] = fit_scale_signed(16, 4, x + 16 * j, w, L + 16 * j);
    }
    memset(y[i].scales, 0, sizeof y[i].scales);
    const float d_block = fit_scale_signed(16, 32, sc, sw, Ls);
    for (int j = 0; j < 16; j++) {
      const int l = Ls[j];
      if (j < 8)
        y[i].scales[j] = (uint8_t)(l & 0xF);
      else
        y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
      y[i].scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
    }
    y[i].d = nc_fp32_to_fp16(d_block);
    q3_k_finish(x, L, &y[i]);
  }
}

/* Q4_K (nmax 15) and Q5_K (31) with importance weights
 * (quantize_row_q{4,5}_K_impl): per 32 a scale and min by weighted squared
 * error, the 6-bit scales and mins by fit_scale_pos. */
static void kquant_levels_w(const float *x, const float *qw, int nmax,
                            uint8_t L[QK_K], uint8_t scales[K_SCALE_SIZE],
                            nc_fp16 *dd, nc_fp16 *dmin) {
  float sc[8], mins[8], sw[8], w[32];
  uint8_t Laux[32], ls[8], lm[8];
  const float sigma2 = 2 * sum_sq(x, QK_K) / QK_K;
  for (int j = 0; j < 8; j++) {
    sw[j] = imp_weights(x + 32 * j, qw + 32 * j, sigma2, 32, w);
    sc[j] = fit_scale_min(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], Laux,
                          -0.9f, 0.05f, 36, false);
  }
  const float d_block = nc_fit_scale_pos(8, 63, sc, ls, sw);
  const float m_block = nc_fit_scale_pos(8, 63, mins, lm, sw);
  pack_k4_scales(ls, lm, scales);
  *dd = nc_fp32_to_fp16(d_block);
  *dmin = nc_fp32_to_fp16(m_block);
  for (int j = 0; j < 8; j++) {
    uint8_t s, m;
    nc_k4_scale_min(j, scales, &s, &m);
    const float d = nc_fp16_to_fp32(*dd) * s;
    if (d == 0.0f) continue;
    const float dm = nc_fp16_to_fp32(*dmin) * m;
    for (int l = 0; l < 32; l++)
      L[32 * j + l] =
          (uint8_t)clampi(nc_nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
  }
}

/* Packs 32 5-bit levels as Q5_0/Q5_1 hold them. */
static void pack_5bit(const uint8_t L[32], uint8_t qs[16], uint8_t qh_out[4]) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; j++) {
    qs[j] = (uint8_t)((L[j] & 0x0F) | (L[j + 16] & 0x0F) << 4);
    qh |= (uint32_t)((L[j] & 0x10u) >> 4) << j |
          (uint32_t)((L[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  memcpy(qh_out, &qh, sizeof qh);
}

/* The 32-block types with importance weights (quantize_row_q{4,5}_{0,1}
 * _impl): sigma2 the row's mean square, per block weights
 * qw * sqrt(sigma2 + x^2); Q4_0/Q5_0 by the weighted signed search,
 * Q4_1/Q5_1 by the weighted scale-and-min search. */
static void block32_row_w(nc_type t, const float *x, void *vy, int64_t n,
                          const float *qw) {
  const float sigma2 = sum_sq(x, n) / n;
  for (int64_t ib = 0; ib < n / 32; ib++) {
    const float *xb = x + 32 * ib;
    float w[32];
    imp_weights(xb, qw + 32 * ib, sigma2, 32, w);
    uint8_t L[32], Laux[32];
    if (t == NC_TYPE_Q4_0 || t == NC_TYPE_Q5_0) {
      int8_t Ls[32];
      const float d =
          fit_scale_signed(32, t == NC_TYPE_Q4_0 ? 8 : 16, xb, w, Ls);
      for (int j = 0; j < 32; j++)
        L[j] = (uint8_t)Ls[j];
      if (t == NC_TYPE_Q4_0) {
        block_q4_0 *y = (block_q4_0 *)vy + ib;
        y->d = nc_fp32_to_fp16(d);
        for (int j = 0; j < 16; j++)
          y->qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
      } else {
        block_q5_0 *y = (block_q5_0 *)vy + ib;
        y->d = nc_fp32_to_fp16(d);
        pack_5bit(L, y->qs, y->qh);
      }
      continue;
    }
    float neg_min;
    const float d = fit_scale_min(32, t == NC_TYPE_Q4_1 ? 15 : 31, xb, w, L,
                                  &neg_min, Laux, -0.9f, 0.05f, 36, false);
    if (t == NC_TYPE_Q4_1) {
      block_q4_1 *y = (block_q4_1 *)vy + ib;
      y->d = nc_fp32_to_fp16(d);
      y->m = nc_fp32_to_fp16(-neg_min);
      for (int j = 0; j < 16; j++)
        y->qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
    } else {
      block_q5_1 *y = (block_q5_1 *)vy + ib;
      y->d = nc_fp32_to_fp16(d);
      y->m = nc_fp32_to_fp16(-neg_min);
      pack_5bit(L, y->qs, y->qh);
    }
  }
}

/* One row of type t with importance weights qw (n of them). */
static void row_weighted(nc_type t, const float *x, void *y, int64_t n,
                         int64_t nb, const float *qw) {
  switch (t) {
  case NC_TYPE_Q4_0:
  case NC_TYPE_Q4_1:
  case NC_TYPE_Q5_0:
  case NC_TYPE_Q5_1: block32_row_w(t, x, y, n, qw); break;
  case NC_TYPE_Q2_K: q2_k_row_w(x, y, nb, qw); break;
  case NC_TYPE_Q3_K: q3_k_row_w(x, y, nb, qw); break;
  case NC_TYPE_Q4_K:
    for (int64_t i = 0; i < nb; i++) {
      block_q4_K *b = (block_q4_K *)y + i;
      uint8_t L[QK_K];
      kquant_levels_w(x + QK_K * i, qw + QK_K * i, 15, L, b->scales, &b->d,
                      &b->dmin);
      pack_q4_k(L, b);
    }
    break;
  case NC_TYPE_Q5_K:
    for (int64_t i = 0; i < nb; i++) {
      block_q5_K *b = (block_q5_K *)y + i;
      uint8_t L[QK_K];
      kquant_levels_w(x + QK_K * i, qw + QK_K * i, 31, L, b->scales, &b->d,
                      &b->dmin);
      pack_q5_k(L, b);
    }
    break;
  case NC_TYPE_Q6_K: q6_k_row(x, y, nb, qw); break;
  case NC_TYPE_IQ4_NL: iq4_nl_row(x, y, nb, qw); break;
  case NC_TYPE_IQ4_XS: iq4_xs_row(x, y, nb, qw); break;
  default: break;
  }
}

/* --------------------------------------------------------------- table */

bool nc_quantize_uses_imatrix(nc_type t) {
  switch (t) {
  case NC_TYPE_Q4_0:
  case NC_TYPE_Q4_1:
  case NC_TYPE_Q5_0:
  case NC_TYPE_Q5_1:
  case NC_TYPE_Q2_K:
  case NC_TYPE_Q3_K:
  case NC_TYPE_Q4_K:
  case NC_TYPE_Q5_K:
  case NC_TYPE_Q6_K:
  case NC_TYPE_IQ4_NL:
  case NC_TYPE_IQ4_XS: return true;
  default: return nc_iq_lattice_needed(t);
  }
}

bool nc_quantize_needs_imatrix(nc_type t) {
  switch (t) {
  case NC_TYPE_IQ3_XXS:
  case NC_TYPE_IQ2_XXS:
  case NC_TYPE_IQ2_XS:
  case NC_TYPE_IQ2_S:
  case NC_TYPE_IQ1_S:
  case NC_TYPE_IQ1_M: return true;
  default: return false;
  }
}

bool nc_quantize_weights_supported(nc_type t) {
  switch (t) {
  case NC_TYPE_F32:
  case NC_TYPE_F16:
  case NC_TYPE_BF16:
  case NC_TYPE_Q4_0:
  case NC_TYPE_Q4_1:
  case NC_TYPE_Q5_0:
  case NC_TYPE_Q5_1:
  case NC_TYPE_Q8_0:
  case NC_TYPE_Q2_K:
  case NC_TYPE_Q3_K:
  case NC_TYPE_Q4_K:
  case NC_TYPE_Q5_K:
  case NC_TYPE_Q6_K:
  case NC_TYPE_IQ4_NL:
  case NC_TYPE_IQ4_XS:
  case NC_TYPE_MXFP4:
  case NC_TYPE_IQ3_XXS:
  case NC_TYPE_IQ3_S:
  case NC_TYPE_IQ2_XXS:
  case NC_TYPE_IQ2_XS:
  case NC_TYPE_IQ2_S:
  case NC_TYPE_IQ1_S:
  case NC_TYPE_IQ1_M: return true;
  default: return false;
  }
}

/* One row of a lattice type (qw: NULL or the row's weights). */
static void row_lattice(nc_type t, const nc_iq_lattice *lat, const float *x,
                        void *y, int64_t nb, const float *qw) {
  switch (t) {
  case NC_TYPE_IQ3_XXS: nc_iq3_xxs_row(lat, x, y, nb, qw); break;
  case NC_TYPE_IQ3_S: nc_iq3_s_row(lat, x, y, nb, qw); break;
  case NC_TYPE_IQ2_XXS: nc_iq2_xxs_row(lat, x, y, nb, qw); break;
  case NC_TYPE_IQ2_XS: nc_iq2_xs_row(lat, x, y, nb, qw); break;
  case NC_TYPE_IQ2_S: nc_iq2_s_row(lat, x, y, nb, qw); break;
  case NC_TYPE_IQ1_S: nc_iq1_s_row(lat, x, y, nb, qw); break;
  case NC_TYPE_IQ1_M: nc_iq1_m_row(lat, x, y, nb, qw); break;
  default: break;
  }
}

void nc_quantize_weights(nc_type t, const float *src, void *dst, int64_t nrows,
                         int64_t n_per_row, const float *qw,
                         const nc_iq_lattice *lat) {
  const size_t row = nc_row_size(t, n_per_row);
  const int64_t nb = n_per_row / nc_type_traits_of((uint32_t)t)->block_size;
  for (int64_t r = 0; r < nrows; r++) {
    const float *x = src + r * n_per_row;
    void *y = (uint8_t *)dst + (size_t)r * row;
    if (nc_iq_lattice_needed(t)) {
      row_lattice(t, lat, x, y, nb, qw);
      continue;
    }
    if (qw && nc_quantize_uses_imatrix(t)) {
      row_weighted(t, x, y, n_per_row, nb, qw);
      continue;
    }
    switch (t) {
    case NC_TYPE_F32: memcpy(y, x, row); break;
    case NC_TYPE_F16:
    case NC_TYPE_BF16:
    case NC_TYPE_Q4_0: nc_quantize_row(t, x, y, n_per_row); break;
    case NC_TYPE_Q4_1: q4_1_row(x, y, nb); break;
    case NC_TYPE_Q5_0: q5_0_row(x, y, nb); break;
    case NC_TYPE_Q5_1: q5_1_row(x, y, nb); break;
    case NC_TYPE_Q8_0: q8_0_row(x, y, nb); break;
    case NC_TYPE_Q2_K: q2_k_row(x, y, nb); break;
    case NC_TYPE_Q3_K: q3_k_row(x, y, nb); break;
    case NC_TYPE_Q4_K: q4_k_row(x, y, nb); break;
    case NC_TYPE_Q5_K: q5_k_row(x, y, nb); break;
    case NC_TYPE_Q6_K: q6_k_row(x, y, nb, NULL); break;
    case NC_TYPE_IQ4_NL: iq4_nl_row(x, y, nb, NULL); break;
    case NC_TYPE_IQ4_XS: iq4_xs_row(x, y, nb, NULL); break;
    case NC_TYPE_MXFP4: mxfp4_row(x, y, nb); break;
    default: break;
    }
  }
}
