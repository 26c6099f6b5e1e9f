/* quantize_iq3: IQ3_XXS and IQ3_S (ggml's quantize_row_iq3_xxs_impl and
 * quantize_row_iq3_s_impl): per 32 values the signs, then levels on the D4
 * lattice codebook for the best of a sweep of scales, the groups off the
 * grid moved to their nearest grid point and the scale refit; the 32-block
 * scales as 4-bit steps of the superblock's. */
#include <math.h>
#include <string.h>

#include "iq_fit.h"
#include "quant_round.h"
#include "quantize_iq.h"

enum { IQ3_NLEV = 8 };

/* Per-value weights of a 32-block: the importance weights scaled by
 * sqrt(sigma2 + x^2), or x^2 without them. */
static void block_weights(const float *xb, const float *qw, float sigma2,
                          float w[32], float wsq[32]) {
  for (int i = 0; i < 32; i++)
    w[i] = qw ? qw[i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
  for (int i = 0; i < 32; i++)
    wsq[i] = sqrtf(w[i]);
}

/* The scale and levels L of one 32-block (max: the largest xval, > 0).
 * xxs: IQ3_XXS's sweep (31 steps, groups on the grid kept in the refit),
 * else IQ3_S's (19 steps, every group refit). */
static float block_search(const nc_iq_lattice *lat, bool xxs, const float *xval,
                          const float *w, const float *wsq, float max,
                          int8_t L[32]) {
  int8_t Laux[32];
  bool on[8], on_aux[8];
  float best = 0, scale = max / (2 * IQ3_NLEV - 1);
  for (int k = 0; k < 8; k++)
    on[k] = xxs;
  const int range = xxs ? 15 : 9;
  for (int is = -range; is <= range; is++) {
    const float id = (2 * IQ3_NLEV - 1 + is * 0.2f) / max;
    const float this_scale = 1 / id;
    for (int k = 0; k < 8; k++)
      on_aux[k] = nc_iq_lattice_snap(lat, IQ3_NLEV, xval + 4 * k, wsq + 4 * k,
                                     id, this_scale, Laux + 4 * k);
    float sumqx, sumq2;
    nc_iq_level_sums(xval, w, Laux, 32, &sumqx, &sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2;
      best = scale * sumqx;
      memcpy(L, Laux, 32);
      memcpy(on, on_aux, sizeof on);
    }
  }
  int n_off = 0;
  for (int k = 0; k < 8; k++)
    n_off += !on[k];
  if (n_off > 0 && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < 8; k++) {
      if (xxs && on[k]) continue;
      nc_iq_lattice_snap(lat, IQ3_NLEV, xval + 4 * k, wsq + 4 * k, id, scale,
                         L + 4 * k);
    }
    float sumqx, sumq2;
    nc_iq_level_sums(xval, w, L, 32, &sumqx, &sumq2);
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  return scale;
}

/* The grid index of group k of L (on the grid by construction). */
static int group_index(const nc_iq_lattice *lat, const int8_t *L, int k) {
  const uint16_t *nb;
  const int g = nc_iq_lattice_find(lat, L + 4 * k, &nb);
  return g < 0 ? 0 : g;
}

static float superblock_sigma2(const float *x) {
  float sumx2 = 0;
  for (int i = 0; i < QK_K; i++)
    sumx2 += x[i] * x[i];
  return 2 * sumx2 / QK_K;
}

void nc_iq3_xxs_row(const nc_iq_lattice *lat, const float *x, block_iq3_xxs *y,
                    int64_t nb, const float *qw) {
  for (int64_t ibl = 0; ibl < nb; ibl++) {
    const float *xbl = x + QK_K * ibl;
    /* 64 grid indices, then per 32-block 4 x 7 sign bits and a 4-bit scale */
    uint8_t grid[QK_K / 4] = {0};
    uint32_t scales_signs[QK_K / 32] = {0};
    float scales[QK_K / 32];
    float max_scale = 0;
    const float sigma2 = superblock_sigma2(xbl);
    for (int ib = 0; ib < QK_K / 32; ib++) {
      const float *xb = xbl + 32 * ib;
      float w[32], wsq[32], xval[32];
      uint8_t signs[4];
      int8_t L[32] = {0};
      block_weights(xb, qw ? qw + QK_K * ibl + 32 * ib : NULL, sigma2, w, wsq);
      nc_iq_group_signs(xb, w, 32, true, xval, signs);
      float max = xval[0];
      for (int i = 1; i < 32; i++)
        max = max > xval[i] ? max : xval[i];
      if (max < 1e-8f) {
        scales[ib] = 0;
        continue;
      }
      float scale = block_search(lat, true, xval, w, wsq, max, L);
      if (scale < 0) { /* never expected: flip the scale and the signs */
        scale = -scale;
        for (int k = 0; k < 4; k++)
          signs[k] = (uint8_t)(~signs[k] & 127);
      }
      for (int k = 0; k < 8; k++)
        grid[8 * ib + k] = (uint8_t)group_index(lat, L, k);
      scales_signs[ib] = (uint32_t)signs[0] | (uint32_t)signs[1] << 7 |
                         (uint32_t)signs[2] << 14 | (uint32_t)signs[3] << 21;
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    memset(&y[ibl], 0, sizeof y[ibl]);
    if (!max_scale) continue;
    const float d = max_scale / 31;
    y[ibl].d = nc_fp32_to_fp16(d * 1.0125f);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / 32; ib++) {
      int l = nc_nearest_int(0.5f * (id * scales[ib] - 1));
      l = l < 0 ? 0 : l > 15 ? 15 : l;
      scales_signs[ib] |= (uint32_t)l << 28;
    }
    memcpy(y[ibl].qs, grid, sizeof grid);
    for (int ib = 0; ib < QK_K / 32; ib++)
      for (int b = 0; b < 4; b++)
        y[ibl].qs[QK_K / 4 + 4 * ib + b] =
            (uint8_t)(scales_signs[ib] >> (8 * b));
  }
}

void nc_iq3_s_row(const nc_iq_lattice *lat, const float *x, block_iq3_s *y,
                  int64_t nb, const float *qw) {
  for (int64_t ibl = 0; ibl < nb; ibl++) {
    const float *xbl = x + QK_K * ibl;
    block_iq3_s *b = &y[ibl];
    memset(b, 0, sizeof *b);
    /* ggml advances its grid and sign cursors only past blocks it wrote:
     * after an all-zero 32-block the later ones land 8 and 4 bytes early */
    uint8_t *qs = b->qs, *sg = b->signs;
    float scales[QK_K / 32];
    float max_scale = 0;
    const float sigma2 = superblock_sigma2(xbl);
    for (int ib = 0; ib < QK_K / 32; ib++) {
      const float *xb = xbl + 32 * ib;
      float w[32], wsq[32], xval[32];
      uint8_t signs[4];
      int8_t L[32] = {0};
      block_weights(xb, qw ? qw + QK_K * ibl + 32 * ib : NULL, sigma2, w, wsq);
      nc_iq_group_signs(xb, w, 32, false, xval, signs);
      float max = xval[0];
      for (int i = 1; i < 32; i++)
        max = max > xval[i] ? max : xval[i];
      if (!max) {
        scales[ib] = 0;
        continue;
      }
      float scale = block_search(lat, false, xval, w, wsq, max, L);
      if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; k++)
          signs[k] = (uint8_t)~signs[k];
      }
      for (int k = 0; k < 8; k++) {
        const int g = group_index(lat, L, k);
        qs[k] = (uint8_t)(g & 255);
        b->qh[ib] |= (uint8_t)((g >> 8) << k);
      }
      qs += 8;
      memcpy(sg, signs, 4);
      sg += 4;
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) continue;
    const float d = max_scale / 31;
    b->d = nc_fp32_to_fp16(d * 1.033f);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / 32; ib += 2) {
      int l1 = nc_nearest_int(0.5f * (id * scales[ib] - 1));
      int l2 = nc_nearest_int(0.5f * (id * scales[ib + 1] - 1));
      l1 = l1 < 0 ? 0 : l1 > 15 ? 15 : l1;
      l2 = l2 < 0 ? 0 : l2 > 15 ? 15 : l2;
      b->scales[ib / 2] = (uint8_t)(l1 | l2 << 4);
    }
  }
}
