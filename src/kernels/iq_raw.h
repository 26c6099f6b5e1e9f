/* iq_raw: a superblock of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S
 * or IQ1_M unpacked for the SIMD kernels (avx2_iq.c, avx512_iq.c): 256
 * grid bytes (each group's lattice point copied whole), one 32-bit sign
 * word per 32 weights, the 16 integer scales and IQ1's offset signs.
 * Include only from files compiled with -mavx2. Internal to src/kernels/. */
#ifndef NC_KERNELS_IQ_RAW_H
#define NC_KERNELS_IQ_RAW_H

#include <immintrin.h>
#include <string.h>

#include "iq_unpack.h"

typedef struct iq_unpacked {
  __m256i w[8], aw[8];  /* per 32: the signed weights, their magnitudes */
  __m256i sc[8];        /* per 32: madd multipliers (its two 16s' scales) */
  int8_t mag[QK_K];     /* grid bytes, unsigned but for IQ1 */
  uint32_t signs[8];    /* per 32 weights */
  int16_t scale[16];    /* per 16 weights: 2s + 1 */
  uint64_t dsign[8][4]; /* IQ1: per group of 8, 8 bytes of +1 or -1 */
  int8_t dsign1[8];     /* IQ1_S: the offset sign per 32 */
} iq_unpacked;

static inline uint32_t ksigns4(uint32_t aux) {
  return (uint32_t)nc_ksigns_iq2xs[aux & 127] |
         (uint32_t)nc_ksigns_iq2xs[(aux >> 7) & 127] << 8 |
         (uint32_t)nc_ksigns_iq2xs[(aux >> 14) & 127] << 16 |
         (uint32_t)nc_ksigns_iq2xs[(aux >> 21) & 127] << 24;
}

static inline void put8(int8_t *dst, uint64_t point) {
  memcpy(dst, &point, 8);
}

static inline void put4x2(int8_t *dst, uint32_t p1, uint32_t p2) {
  memcpy(dst, &p1, 4);
  memcpy(dst + 4, &p2, 4);
}

static const uint64_t k_plus8 = 0x0101010101010101ull;

static inline void unpack_raw(nc_type t, const void *row, int64_t i,
                              iq_unpacked *u) {
  switch (t) {
  case NC_TYPE_IQ2_XXS: {
    const block_iq2_xxs *x = (const block_iq2_xxs *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t *p = (const uint8_t *)(x->qs + 4 * ib);
      const uint32_t aux = nc_iq_u32(p + 4);
      u->signs[ib] = ksigns4(aux);
      u->scale[2 * ib] = u->scale[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
      for (int l = 0; l < 4; l++)
        put8(u->mag + 32 * ib + 8 * l, nc_iq2xxs_grid[p[l]]);
    }
    return;
  }
  case NC_TYPE_IQ2_XS: {
    const block_iq2_xs *x = (const block_iq2_xs *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      uint32_t sw = 0;
      for (int l = 0; l < 4; l++) {
        const uint16_t c = x->qs[4 * ib + l];
        put8(u->mag + 32 * ib + 8 * l, nc_iq2xs_grid[c & 511]);
        sw |= (uint32_t)nc_ksigns_iq2xs[c >> 9] << 8 * l;
      }
      u->signs[ib] = sw;
      u->scale[2 * ib] = (int16_t)(2 * (x->scales[ib] & 15) + 1);
      u->scale[2 * ib + 1] = (int16_t)(2 * (x->scales[ib] >> 4) + 1);
    }
    return;
  }
  case NC_TYPE_IQ2_S: {
    const block_iq2_s *x = (const block_iq2_s *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const int qh = x->qh[ib];
      for (int l = 0; l < 4; l++)
        put8(u->mag + 32 * ib + 8 * l,
             nc_iq2s_grid[x->qs[4 * ib + l] | ((qh << (8 - 2 * l)) & 0x300)]);
      u->signs[ib] = nc_iq_u32(x->qs + QK_K / 8 + 4 * ib);
      u->scale[2 * ib] = (int16_t)(2 * (x->scales[ib] & 15) + 1);
      u->scale[2 * ib + 1] = (int16_t)(2 * (x->scales[ib] >> 4) + 1);
    }
    return;
  }
  case NC_TYPE_IQ3_XXS: {
    const block_iq3_xxs *x = (const block_iq3_xxs *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t *qs = x->qs + 8 * ib;
      const uint32_t aux = nc_iq_u32(x->qs + QK_K / 4 + 4 * ib);
      u->signs[ib] = ksigns4(aux);
      u->scale[2 * ib] = u->scale[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
      for (int l = 0; l < 4; l++)
        put4x2(u->mag + 32 * ib + 8 * l, nc_iq3xxs_grid[qs[2 * l]],
               nc_iq3xxs_grid[qs[2 * l + 1]]);
    }
    return;
  }
  case NC_TYPE_IQ3_S: {
    const block_iq3_s *x = (const block_iq3_s *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t *qs = x->qs + 8 * ib;
      const int qh = x->qh[ib];
      const int s = ib % 2 ? x->scales[ib / 2] >> 4 : x->scales[ib / 2] & 15;
      u->scale[2 * ib] = u->scale[2 * ib + 1] = (int16_t)(1 + 2 * s);
      u->signs[ib] = nc_iq_u32(x->signs + 4 * ib);
      for (int l = 0; l < 4; l++)
        put4x2(u->mag + 32 * ib + 8 * l,
               nc_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)],
               nc_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)]);
    }
    return;
  }
  case NC_TYPE_IQ1_S: {
    const block_iq1_s *x = (const block_iq1_s *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const int qh = x->qh[ib];
      u->signs[ib] = 0;
      u->scale[2 * ib] = u->scale[2 * ib + 1] =
          (int16_t)(2 * ((qh >> 12) & 7) + 1);
      u->dsign1[ib] = (int8_t)(qh & 0x8000 ? -1 : 1);
      for (int l = 0; l < 4; l++)
        put8(u->mag + 32 * ib + 8 * l,
             nc_iq1s_grid[x->qs[4 * ib + l] | (((qh >> 3 * l) & 7) << 8)]);
    }
    return;
  }
  default: { /* IQ1_M */
    const block_iq1_m *x = (const block_iq1_m *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const int sc =
          x->scales[2 * (ib / 2)] | (x->scales[2 * (ib / 2) + 1] << 8);
      const int sh = 6 * (ib % 2);
      u->signs[ib] = 0;
      u->scale[2 * ib] = (int16_t)(2 * ((sc >> sh) & 7) + 1);
      u->scale[2 * ib + 1] = (int16_t)(2 * ((sc >> (sh + 3)) & 7) + 1);
      for (int l = 0; l < 4; l++) {
        const int nib = x->qh[2 * ib + l / 2] >> (4 * (l % 2));
        u->dsign[ib][l] = nib & 8 ? ~0ull : k_plus8;
        put8(u->mag + 32 * ib + 8 * l,
             nc_iq1s_grid[x->qs[4 * ib + l] | ((nib & 7) << 8)]);
      }
    }
    return;
  }
  }
}

#endif
