/* quantize_iq1: IQ1_S and IQ1_M (ggml's quantize_row_iq1_s_impl and
 * quantize_row_iq1_m_impl): per block (32 values for IQ1_S, 16 for IQ1_M)
 * the exact best split of the sorted values into the three levels -1, 0, 1
 * shifted by +-delta (IQ1_M: a shift per half), groups of 8 off the grid
 * moved to their nearest listed grid point and the scale refit; 3-bit block
 * scales (IQ1_M: the superblock scale spread over the scale bytes). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/iq_grids.h"
#include "quant_round.h"
#include "quantize_iq.h"

/* A value and its position, sorted by value with the C library's qsort as
 * ggml sorts them (ties keep whatever order that qsort gives). */
typedef struct value_pos {
  float v;
  int32_t i;
} value_pos;

static int by_value(const void *a, const void *b) {
  const float l = ((const value_pos *)a)->v, r = ((const value_pos *)b)->v;
  return l < r ? -1 : l > r ? 1 : 0;
}

static void sort_values(const float *xb, int n, value_pos *p) {
  for (int j = 0; j < n; j++) {
    p[j].v = xb[j];
    p[j].i = j;
  }
  qsort(p, (size_t)n, sizeof *p, by_value);
}

static float superblock_sigma2(const float *x) {
  float s = 0;
  for (int i = 0; i < QK_K; i++)
    s += x[i] * x[i];
  return 2 * s / QK_K;
}

/* ggml's iq1_find_best_neighbour2: the listed grid point whose levels xx
 * at scale are nearest to xb (squared difference weighted w; the first on
 * ties); its levels to L and its index returned. */
static int best_neighbour(const nc_iq_lattice *lat, const uint16_t *nb,
                          const float *xb, const float *w, float scale,
                          const float xx[3], int8_t *L) {
  float best_d2 = FLT_MAX;
  int best = nb[1]; /* ggml aborts when no distance is below FLT_MAX */
  for (int j = 1; j <= nb[0]; j++) {
    const uint8_t *p = lat->levels + nb[j] * 8;
    float d2 = 0;
    for (int i = 0; i < 8; i++) {
      const float q = xx[p[i]];
      const float diff = scale * q - xb[i];
      d2 += w[i] * diff * diff;
    }
    if (d2 < best_d2) {
      best_d2 = d2;
      best = nb[j];
    }
  }
  for (int i = 0; i < 8; i++)
    L[i] = (int8_t)lat->levels[best * 8 + i];
  return best;
}

/* The grid index of group L[8] (levels 0..2), or of its nearest neighbour
 * (then L is moved there and *on cleared). */
static int group_index(const nc_iq_lattice *lat, const float *xb,
                       const float *w, float scale, const float xx[3],
                       int8_t *L, bool *on) {
  const uint16_t *nb = NULL;
  const int g = nc_iq_lattice_find(lat, L, &nb);
  if (g >= 0) return g;
  *on = false;
  return best_neighbour(lat, nb, xb, w, scale, xx, L);
}

static const float k_xp[3] = {-1 + NC_IQ1_DELTA, NC_IQ1_DELTA,
                              1 + NC_IQ1_DELTA};
static const float k_xm[3] = {-1 - NC_IQ1_DELTA, -NC_IQ1_DELTA,
                              1 - NC_IQ1_DELTA};

void nc_iq1_s_row(const nc_iq_lattice *lat, const float *x, block_iq1_s *y,
                  int64_t nb, const float *qw) {
  enum { BS = 32 };
  for (int64_t ibl = 0; ibl < nb; ibl++) {
    block_iq1_s *b = &y[ibl];
    memset(b, 0, sizeof *b);
    const float *xbl = x + QK_K * ibl;
    float scales[QK_K / BS];
    int8_t shifts[QK_K / BS];
    float max_scale = 0;
    const float sigma2 = superblock_sigma2(xbl);
    for (int ib = 0; ib < QK_K / BS; ib++) {
      const float *xb = xbl + BS * ib;
      const float *qb = qw + QK_K * ibl + BS * ib;
      float w[BS];
      for (int i = 0; i < BS; i++)
        w[i] = qb[i] * sqrtf(sigma2 + xb[i] * xb[i]);
      float max = fabsf(xb[0]);
      for (int i = 1; i < BS; i++)
        max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
      scales[ib] = 0;
      shifts[ib] = 1;
      if (max < 1e-12f) continue;
      value_pos p[BS];
      sort_values(xb, BS, p);
      float sumx[BS + 1], sumw[BS + 1];
      sumx[0] = sumw[0] = 0;
      for (int j = 0; j < BS; j++) {
        sumx[j + 1] = sumx[j] + w[p[j].i] * xb[p[j].i];
        sumw[j + 1] = sumw[j] + w[p[j].i];
      }
      float best_score = -FLT_MAX, scale = max;
      int besti1 = -1, besti2 = -1, best_shift = 0;
      for (int i1 = 0; i1 <= BS; i1++) {
        for (int i2 = i1; i2 <= BS; i2++) {
          for (int sgn = 1; sgn >= -1; sgn -= 2) {
            const float *v = sgn == 1 ? k_xp : k_xm;
            const float sumqx = (sumx[i1] - sumx[0]) * v[0] +
                                (sumx[i2] - sumx[i1]) * v[1] +
                                (sumx[BS] - sumx[i2]) * v[2];
            const float sumq2 = (sumw[i1] - sumw[0]) * v[0] * v[0] +
                                (sumw[i2] - sumw[i1]) * v[1] * v[1] +
                                (sumw[BS] - sumw[i2]) * v[2] * v[2];
            if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
              scale = sumqx / sumq2;
              best_score = scale * sumqx;
              besti1 = i1;
              besti2 = i2;
              best_shift = sgn;
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || best_shift == 0) continue;
      int8_t L[BS];
      for (int j = 0; j < BS; j++)
        L[p[j].i] = (int8_t)(j < besti1 ? 0 : j < besti2 ? 1 : 2);
      if (scale < 0) {
        for (int j = 0; j < BS; j++)
          L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_shift = -best_shift;
      }
      const float *xx = best_shift == 1 ? k_xp : k_xm;
      bool on = true;
      int index[BS / 8];
      for (int k = 0; k < BS / 8; k++)
        index[k] =
            group_index(lat, xb + 8 * k, w + 8 * k, scale, xx, L + 8 * k, &on);
      if (!on) {
        float sumqx = 0, sumq2 = 0;
        for (int k = 0; k < BS / 8; k++) {
          const uint8_t *pg = lat->levels + index[k] * 8;
          for (int j = 0; j < 8; j++) {
            const float wj = w[8 * k + j];
            const float q = xx[pg[j]];
            sumqx += wj * q * xb[8 * k + j];
            sumq2 += wj * q * q;
          }
        }
        if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
      }
      uint16_t h = 0;
      for (int k = 0; k < BS / 8; k++) {
        b->qs[(BS / 8) * ib + k] = (uint8_t)(index[k] & 255);
        h |= (uint16_t)((index[k] >> 8) << (3 * k));
      }
      b->qh[ib] = h;
      scales[ib] = scale;
      shifts[ib] = (int8_t)best_shift;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) continue;
    const float d = max_scale / 15;
    b->d = nc_fp32_to_fp16(d * 1.125f);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / BS; ib++) {
      int l = nc_nearest_int(0.5f * (id * scales[ib] - 1));
      l = l < 0 ? 0 : l > 7 ? 7 : l;
      if (shifts[ib] == -1) l |= 8;
      b->qh[ib] |= (uint16_t)(l << 12);
    }
  }
}

/* IQ1_M's split search over a sorted 16-block: the best (i1, i2) and the
 * shift pair k (bit 1: first half -delta, bit 0: second half), from prefix
 * sums kept per half (ggml's closed form for the four shift pairs). */
static float iq1m_split(const value_pos *p, const float *xb, const float *w,
                        float scale, int *bi1, int *bi2, int *bk) {
  enum { BS = 16 };
  float px[2][BS + 1], pw[2][BS + 1];
  px[0][0] = px[1][0] = 0;
  pw[0][0] = pw[1][0] = 0;
  for (int j = 0; j < BS; j++) {
    const int i = p[j].i;
    const int h = i < BS / 2 ? 0 : 1;
    px[h][j + 1] = px[h][j] + w[i] * xb[i];
    px[1 - h][j + 1] = px[1 - h][j];
    pw[h][j + 1] = pw[h][j] + w[i];
    pw[1 - h][j + 1] = pw[1 - h][j];
  }
  const float txs[2] = {px[0][BS], px[1][BS]};
  const float tws[2] = {pw[0][BS], pw[1][BS]};
  const float p2 = k_xp[2], m2 = k_xm[2];
  const float cp1 = k_xp[0] * k_xp[0] - k_xp[1] * k_xp[1];
  const float cp2 = k_xp[1] * k_xp[1] - k_xp[2] * k_xp[2];
  const float cm1 = k_xm[0] * k_xm[0] - k_xm[1] * k_xm[1];
  const float cm2 = k_xm[1] * k_xm[1] - k_xm[2] * k_xm[2];
  float best_score = -FLT_MAX;
  for (int i1 = 0; i1 <= BS; i1++) {
    for (int i2 = i1; i2 <= BS; i2++) {
      float qx_p[2], qx_m[2], q2_p[2], q2_m[2];
      for (int h = 0; h < 2; h++) {
        const float sx = px[h][i1] + px[h][i2];
        qx_p[h] = txs[h] * p2 - sx;
        qx_m[h] = txs[h] * m2 - sx;
        q2_p[h] = tws[h] * p2 * p2 + pw[h][i1] * cp1 + pw[h][i2] * cp2;
        q2_m[h] = tws[h] * m2 * m2 + pw[h][i1] * cm1 + pw[h][i2] * cm2;
      }
      const float sumqx[4] = {qx_p[0] + qx_p[1], qx_p[0] + qx_m[1],
                              qx_m[0] + qx_p[1], qx_m[0] + qx_m[1]};
      const float sumq2[4] = {q2_p[0] + q2_p[1], q2_p[0] + q2_m[1],
                              q2_m[0] + q2_p[1], q2_m[0] + q2_m[1]};
      for (int k = 0; k < 4; k++) {
        if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
          scale = sumqx[k] / sumq2[k];
          best_score = scale * sumqx[k];
          *bi1 = i1;
          *bi2 = i2;
          *bk = k;
        }
      }
    }
  }
  return scale;
}

/* The levels of IQ1_M group k (0: first half) under shift pair sk. */
static const float *iq1m_levels(int sk, int k) {
  if (k == 0) return sk < 2 ? k_xp : k_xm;
  return sk % 2 == 0 ? k_xp : k_xm;
}

static void iq1m_weights(const float *xb, const float *qb, float sigma2,
                         float w[16]) {
  for (int i = 0; i < 16; i++)
    w[i] = qb ? qb[i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
}

void nc_iq1_m_row(const nc_iq_lattice *lat, const float *x, block_iq1_m *y,
                  int64_t nb, const float *qw) {
  enum { BS = 16 };
  static const uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
  for (int64_t ibl = 0; ibl < nb; ibl++) {
    block_iq1_m *b = &y[ibl];
    memset(b, 0, sizeof *b);
    const float *xbl = x + QK_K * ibl;
    float scales[QK_K / BS];
    int8_t shifts[QK_K / BS];
    float max_scale = 0;
    const float sigma2 = superblock_sigma2(xbl);
    for (int ib = 0; ib < QK_K / BS; ib++) {
      const float *xb = xbl + BS * ib;
      float w[BS];
      iq1m_weights(xb, qw ? qw + QK_K * ibl + BS * ib : NULL, sigma2, w);
      float max = fabsf(xb[0]);
      for (int i = 1; i < BS; i++)
        max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
      scales[ib] = 0;
      shifts[ib] = 0;
      if (max < 1e-7f) continue;
      value_pos p[BS];
      sort_values(xb, BS, p);
      int besti1 = -1, besti2 = -1, best_k = -1;
      float scale = iq1m_split(p, xb, w, max, &besti1, &besti2, &best_k);
      if (besti1 < 0 || besti2 < 0 || best_k < 0) continue;
      int8_t L[BS];
      for (int j = 0; j < BS; j++)
        L[p[j].i] = (int8_t)(j < besti1 ? 0 : j < besti2 ? 1 : 2);
      if (scale < 0) {
        for (int j = 0; j < BS; j++)
          L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_k = 3 - best_k;
      }
      bool on = true;
      int index[2];
      for (int k = 0; k < 2; k++)
        index[k] = group_index(lat, xb + 8 * k, w + 8 * k, scale,
                               iq1m_levels(best_k, k), L + 8 * k, &on);
      if (!on) {
        float sumqx = 0, sumq2 = 0;
        for (int k = 0; k < 2; k++) {
          const float *xx = iq1m_levels(best_k, k);
          const uint8_t *pg = lat->levels + index[k] * 8;
          for (int j = 0; j < 8; j++) {
            const float wj = w[8 * k + j];
            const float q = xx[pg[j]];
            sumqx += wj * q * xb[8 * k + j];
            sumq2 += wj * q * q;
          }
        }
        if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
      }
      b->qs[2 * ib] = (uint8_t)(index[0] & 255);
      b->qs[2 * ib + 1] = (uint8_t)(index[1] & 255);
      b->qh[ib] = (uint8_t)((index[0] >> 8) | ((index[1] >> 8) << 4));
      scales[ib] = scale;
      shifts[ib] = (int8_t)best_k;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) continue;
    uint16_t sc[4] = {0};
    float d = max_scale / 15;
    const float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int ib = 0; ib < QK_K / BS; ib++) {
      int l = nc_nearest_int(0.5f * (id * scales[ib] - 1));
      l = l < 0 ? 0 : l > 7 ? 7 : l;
      sc[ib / 4] |= (uint16_t)(l << (3 * (ib % 4)));
      b->qh[ib] |= masks[shifts[ib]];
      const float *xb = xbl + BS * ib;
      float w[BS];
      iq1m_weights(xb, qw ? qw + QK_K * ibl + BS * ib : NULL, sigma2, w);
      for (int k = 0; k < 2; k++) {
        const float *xx = iq1m_levels(shifts[ib], k);
        const int g = b->qs[2 * ib + k] | ((b->qh[ib] << (8 - 4 * k)) & 0x700);
        const uint8_t *pg = lat->levels + g * 8;
        for (int j = 0; j < 8; j++) {
          const float wj = w[8 * k + j];
          const float q = xx[pg[j]] * (2 * l + 1);
          sumqx += wj * q * xb[8 * k + j];
          sumq2 += wj * q * q;
        }
      }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const uint16_t u = nc_fp32_to_fp16(d * 1.1125f);
    sc[0] |= (uint16_t)((u & 0x000f) << 12);
    sc[1] |= (uint16_t)((u & 0x00f0) << 8);
    sc[2] |= (uint16_t)((u & 0x0f00) << 4);
    sc[3] |= (uint16_t)(u & 0xf000);
    for (int k = 0; k < 4; k++) {
      b->scales[2 * k] = (uint8_t)sc[k];
      b->scales[2 * k + 1] = (uint8_t)(sc[k] >> 8);
    }
  }
}
