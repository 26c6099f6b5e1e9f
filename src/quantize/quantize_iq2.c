/* quantize_iq2: IQ2_XXS, IQ2_XS and IQ2_S (ggml's quantize_row_iq2_xxs_impl,
 * _iq2_xs_impl, _iq2_s_impl): per block (32 values for IQ2_XXS, 16 for the
 * others) the signs, then levels 0..2 on the E8 lattice codebook for the
 * best of a sweep of scales, groups off the grid moved to their nearest
 * grid point and the scale refit; block scales as 4-bit steps of the
 * superblock's. */
#include <math.h>
#include <string.h>

#include "iq_fit.h"
#include "quant_round.h"
#include "quantize_iq.h"
#include "quantize_rows.h"

enum { IQ2_NLEV = 3 };

static float max_of(const float *v, int n) {
  float m = v[0];
  for (int i = 1; i < n; i++)
    m = m > v[i] ? m : v[i];
  return m;
}

static float superblock_sumx2(const float *x) {
  float s = 0;
  for (int i = 0; i < QK_K; i++)
    s += x[i] * x[i];
  return s;
}

static int clamp15(int l) {
  return l < 0 ? 0 : l > 15 ? 15 : l;
}

/* The grid index of the 8 levels at L (on the grid by construction). */
static int group_index(const nc_iq_lattice *lat, const int8_t *L) {
  const uint16_t *nb;
  const int g = nc_iq_lattice_find(lat, L, &nb);
  return g < 0 ? 0 : g;
}

void nc_iq2_xxs_row(const nc_iq_lattice *lat, const float *x, block_iq2_xxs *y,
                    int64_t nb, const float *qw) {
  for (int64_t ibl = 0; ibl < nb; ibl++) {
    const float *xbl = x + QK_K * ibl;
    /* per 32-block: 4 grid indices, then 4 x 7 sign bits and the scale */
    uint32_t q2[QK_K / 16] = {0};
    float scales[QK_K / 32];
    float max_scale = 0;
    const float sigma2 = superblock_sumx2(xbl) / QK_K;
    for (int ib = 0; ib < QK_K / 32; ib++) {
      const float *xb = xbl + 32 * ib;
      const float *qb = qw + QK_K * ibl + 32 * ib;
      float w[32], wsq[32], xval[32];
      uint8_t signs[4];
      int8_t L[32], Laux[32];
      for (int i = 0; i < 32; i++)
        w[i] = qb[i] * sqrtf(sigma2 + xb[i] * xb[i]);
      for (int i = 0; i < 32; i++)
        wsq[i] = sqrtf(w[i]);
      nc_iq_group_signs(xb, w, 32, true, xval, signs);
      const float max = max_of(xval, 32);
      if (max < 1e-15f) {
        scales[ib] = 0;
        continue;
      }
      float scale = nc_fit_scale_pos(32, IQ2_NLEV + 1, xval, (uint8_t *)L, w);
      const float eff_max = scale * IQ2_NLEV;
      if (eff_max <= 0) {
        scales[ib] = 0;
        continue;
      }
      float best = 0;
      for (int is = -6; is <= 6; is++) {
        const float id = (2 * IQ2_NLEV - 1 + is * 0.1f) / eff_max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 4; k++)
          nc_iq_lattice_snap(lat, IQ2_NLEV, xval + 8 * k, wsq + 8 * k, id,
                             this_scale, Laux + 8 * k);
        float sumqx, sumq2;
        nc_iq_level_sums(xval, w, Laux, 32, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
          scale = sumqx / sumq2;
          best = scale * sumqx;
          memcpy(L, Laux, 32);
        }
      }
      if (scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 4; k++)
          nc_iq_lattice_snap(lat, IQ2_NLEV, xval + 8 * k, wsq + 8 * k, id,
                             scale, L + 8 * k);
        float sumqx, sumq2;
        nc_iq_level_sums(xval, w, L, 32, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
      }
      if (scale < 0) { /* never expected: flip the scale and the signs */
        scale = -scale;
        for (int k = 0; k < 4; k++)
          signs[k] = (uint8_t)(~signs[k] & 127);
      }
      for (int k = 0; k < 4; k++) {
        q2[2 * ib] |= (uint32_t)group_index(lat, L + 8 * k) << (8 * k);
        q2[2 * ib + 1] |= (uint32_t)signs[k] << (7 * k);
      }
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    memset(&y[ibl], 0, sizeof y[ibl]);
    if (!max_scale) continue;
    const float d = max_scale / 31;
    y[ibl].d = nc_fp32_to_fp16(d);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / 32; ib++)
      q2[2 * ib + 1] |=
          (uint32_t)clamp15(nc_nearest_int(0.5f * (id * scales[ib] - 1))) << 28;
    for (int j = 0; j < QK_K / 16; j++) {
      y[ibl].qs[2 * j] = (uint16_t)q2[j];
      y[ibl].qs[2 * j + 1] = (uint16_t)(q2[j] >> 16);
    }
  }
}

/* One 16-block of IQ2_XS or IQ2_S (xs: IQ2_XS's weights and even signs):
 * its scale and grid indices g[2] (-1: all below eps, nothing to store)
 * and sign bytes. */
static float block16(const nc_iq_lattice *lat, bool xs, const float *xb,
                     const float *qb, float sigma2, int g[2],
                     uint8_t signs[2]) {
  float w[16], wsq[16], xval[16];
  int8_t L[16] = {0}, Laux[16];
  g[0] = g[1] = -1;
  for (int i = 0; i < 16; i++)
    w[i] = qb ? qb[i] * sqrtf(sigma2 + xb[i] * xb[i])
              : 0.25f * sigma2 + xb[i] * xb[i];
  for (int i = 0; i < 16; i++)
    wsq[i] = sqrtf(w[i]);
  nc_iq_group_signs(xb, w, 16, xs, xval, signs);
  const float max = max_of(xval, 16);
  if (max < (xs ? 1e-15f : 1e-8f)) return 0;
  float best = 0, scale = max / (2 * IQ2_NLEV - 1);
  bool on[2] = {true, true}, on_aux[2];
  for (int is = -9; is <= 9; is++) {
    const float id = (2 * IQ2_NLEV - 1 + is * 0.1f) / max;
    const float this_scale = 1 / id;
    for (int k = 0; k < 2; k++)
      on_aux[k] = nc_iq_lattice_snap(lat, IQ2_NLEV, xval + 8 * k, wsq + 8 * k,
                                     id, this_scale, Laux + 8 * k);
    float sumqx, sumq2;
    nc_iq_level_sums(xval, w, Laux, 16, &sumqx, &sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2;
      best = scale * sumqx;
      memcpy(L, Laux, 16);
      on[0] = on_aux[0];
      on[1] = on_aux[1];
    }
  }
  if ((!on[0] || !on[1]) && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < 2; k++)
      if (!on[k])
        nc_iq_lattice_snap(lat, IQ2_NLEV, xval + 8 * k, wsq + 8 * k, id, scale,
                           L + 8 * k);
    float sumqx, sumq2;
    nc_iq_level_sums(xval, w, L, 16, &sumqx, &sumq2);
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  if (scale < 0) { /* never expected: flip the scale and the signs */
    scale = -scale;
    for (int k = 0; k < 2; k++)
      signs[k] = xs ? (uint8_t)(~signs[k] & 127) : (uint8_t)~signs[k];
  }
  g[0] = group_index(lat, L);
  g[1] = group_index(lat, L + 8);
  return scale;
}

/* The 4-bit block scales of 16 blocks, two per byte, from the largest. */
static float pack_scales16(const float scales[QK_K / 16], float max_scale,
                           uint8_t out[QK_K / 32]) {
  const float d = max_scale / 31;
  const float id = 1 / d;
  for (int ib = 0; ib < QK_K / 16; ib++) {
    const int l = clamp15(nc_nearest_int(0.5f * (id * scales[ib] - 1)));
    if (ib % 2 == 0)
      out[ib / 2] = (uint8_t)l;
    else
      out[ib / 2] |= (uint8_t)(l << 4);
  }
  return d;
}

void nc_iq2_xs_row(const nc_iq_lattice *lat, const float *x, block_iq2_xs *y,
                   int64_t nb, const float *qw) {
  for (int64_t ibl = 0; ibl < nb; ibl++) {
    const float *xbl = x + QK_K * ibl;
    block_iq2_xs *b = &y[ibl];
    memset(b, 0, sizeof *b);
    uint16_t q2[QK_K / 8] = {0};
    float scales[QK_K / 16];
    float max_scale = 0;
    const float sigma2 = superblock_sumx2(xbl) / QK_K;
    for (int ib = 0; ib < QK_K / 16; ib++) {
      int g[2];
      uint8_t signs[2];
      const float scale = block16(lat, true, xbl + 16 * ib,
                                  qw + QK_K * ibl + 16 * ib, sigma2, g, signs);
      scales[ib] = scale;
      if (g[0] < 0) continue;
      for (int k = 0; k < 2; k++)
        q2[2 * ib + k] = (uint16_t)(g[k] | signs[k] << 9);
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) continue;
    b->d = nc_fp32_to_fp16(pack_scales16(scales, max_scale, b->scales));
    memcpy(b->qs, q2, sizeof q2);
  }
}

void nc_iq2_s_row(const nc_iq_lattice *lat, const float *x, block_iq2_s *y,
                  int64_t nb, const float *qw) {
  for (int64_t ibl = 0; ibl < nb; ibl++) {
    const float *xbl = x + QK_K * ibl;
    block_iq2_s *b = &y[ibl];
    memset(b, 0, sizeof *b);
    float scales[QK_K / 16];
    float max_scale = 0;
    const float sigma2 = 2 * superblock_sumx2(xbl) / QK_K;
    for (int ib = 0; ib < QK_K / 16; ib++) {
      int g[2];
      uint8_t signs[2];
      const float scale =
          block16(lat, false, xbl + 16 * ib,
                  qw ? qw + QK_K * ibl + 16 * ib : NULL, sigma2, g, signs);
      scales[ib] = scale;
      if (g[0] < 0) continue;
      for (int k = 0; k < 2; k++) {
        const int i8 = 2 * ib + k;
        b->qs[i8] = (uint8_t)(g[k] & 255);
        b->qh[i8 / 4] |= (uint8_t)((g[k] >> 8) << (2 * (i8 % 4)));
        b->qs[QK_K / 8 + i8] = signs[k];
      }
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) continue;
    b->d =
        nc_fp32_to_fp16(pack_scales16(scales, max_scale, b->scales) * 0.9875f);
  }
}
