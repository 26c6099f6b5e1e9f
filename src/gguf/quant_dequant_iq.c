/* quant_dequant_iq: block -> f32 for the lattice types IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M, in the float order of ggml's
 * dequantize_row_* (bit-exact with it and with gguf-py; tests/data/quant/
 * deq_IQ*.bin). A group of 8 (IQ2, IQ1) or 4 (IQ3) weights is a point of
 * the type's grid (iq_grids.h) times a sub-block scale; IQ2/IQ3 groups
 * carry signs, IQ1 groups an offset of +-1/8. */
#include <string.h>

#include "iq_grids.h"
#include "quant_dequant_iq.h"

#define H2F(x) nc_fp16_to_fp32(x)

static uint32_t load_u32(const void *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* 8 weights: db * coordinate * (-1 where the sign bit is set). */
static void signed_group(float db, uint64_t point, uint8_t signs, float *y) {
  for (int j = 0; j < 8; j++)
    y[j] = db * (float)nc_grid8_at(point, j) * (signs >> j & 1 ? -1.f : 1.f);
}

/* Two IQ3 points make a group of 8 (the first gives elements 0..3). */
static void signed_group3(float db, uint32_t p1, uint32_t p2, uint8_t signs,
                          float *y) {
  for (int j = 0; j < 4; j++) {
    y[j] = db * (float)nc_grid4_at(p1, j) * (signs >> j & 1 ? -1.f : 1.f);
    y[j + 4] =
        db * (float)nc_grid4_at(p2, j) * (signs >> (j + 4) & 1 ? -1.f : 1.f);
  }
}

/* IQ2_XXS: per 32 weights two 32-bit words, four grid indices (bytes of the
 * first), then four 7-bit sign codes and a 4-bit scale (the second). */
static void deq_iq2_xxs(const block_iq2_xxs *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    for (int ib = 0; ib < QK_K / 32; ib++) {
      const uint8_t *q = (const uint8_t *)(x[i].qs + 4 * ib);
      const uint32_t idx = load_u32(q), aux = load_u32(q + 4);
      const float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
      for (int l = 0; l < 4; l++, y += 8)
        signed_group(db, nc_iq2xxs_grid[(idx >> 8 * l) & 255],
                     nc_ksigns_iq2xs[(aux >> 7 * l) & 127], y);
    }
  }
}

/* IQ2_XS: 16-bit codes, 9 bits of grid index and 7 of sign code; a 4-bit
 * scale per 16 weights. */
static void deq_iq2_xs(const block_iq2_xs *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    for (int ib = 0; ib < QK_K / 32; ib++) {
      const float db[2] = {
          d * (0.5f + (float)(x[i].scales[ib] & 0xf)) * 0.25f,
          d * (0.5f + (float)(x[i].scales[ib] >> 4)) * 0.25f,
      };
      for (int l = 0; l < 4; l++, y += 8) {
        const uint16_t q = x[i].qs[4 * ib + l];
        signed_group(db[l / 2], nc_iq2xs_grid[q & 511], nc_ksigns_iq2xs[q >> 9],
                     y);
      }
    }
  }
}

/* IQ2_S: 10-bit grid indices (8 low bits in qs, 2 high in qh), explicit
 * sign bytes after the 32 index bytes, a 4-bit scale per 16. */
static void deq_iq2_s(const block_iq2_s *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    const uint8_t *qs = x[i].qs, *signs = x[i].qs + QK_K / 8;
    for (int ib = 0; ib < QK_K / 32; ib++, qs += 4, signs += 4) {
      const float db[2] = {
          d * (0.5f + (float)(x[i].scales[ib] & 0xf)) * 0.25f,
          d * (0.5f + (float)(x[i].scales[ib] >> 4)) * 0.25f,
      };
      for (int l = 0; l < 4; l++, y += 8) {
        const int idx = qs[l] | ((x[i].qh[ib] << (8 - 2 * l)) & 0x300);
        signed_group(db[l / 2], nc_iq2s_grid[idx], signs[l], y);
      }
    }
  }
}

/* IQ3_XXS: 8 grid indices per 32 weights, then per 32 a word of four 7-bit
 * sign codes and a 4-bit scale. */
static void deq_iq3_xxs(const block_iq3_xxs *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    const uint8_t *qs = x[i].qs, *ss = x[i].qs + QK_K / 4;
    for (int ib = 0; ib < QK_K / 32; ib++, qs += 8) {
      const uint32_t aux = load_u32(ss + 4 * ib);
      const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
      for (int l = 0; l < 4; l++, y += 8)
        signed_group3(db, nc_iq3xxs_grid[qs[2 * l]],
                      nc_iq3xxs_grid[qs[2 * l + 1]],
                      nc_ksigns_iq2xs[(aux >> 7 * l) & 127], y);
    }
  }
}

/* IQ3_S: 9-bit grid indices (8 in qs, 1 in qh), sign bytes, an odd scale
 * 1 + 2s per 32 (two per scale byte). */
static void deq_iq3_s(const block_iq3_s *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    const uint8_t *qs = x[i].qs, *signs = x[i].signs;
    for (int ib = 0; ib < QK_K / 32; ib++, qs += 8, signs += 4) {
      const int s =
          ib % 2 ? x[i].scales[ib / 2] >> 4 : x[i].scales[ib / 2] & 15;
      const float db = d * (float)(1 + 2 * s);
      const int qh = x[i].qh[ib];
      for (int l = 0; l < 4; l++, y += 8)
        signed_group3(db, nc_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)],
                      nc_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)],
                      signs[l], y);
    }
  }
}

/* 8 weights of IQ1: dl * (coordinate + delta). */
static void offset_group(float dl, float delta, uint64_t point, float *y) {
  for (int j = 0; j < 8; j++)
    y[j] = dl * ((float)(int8_t)nc_grid8_at(point, j) + delta);
}

/* IQ1_S: 11-bit grid indices (8 in qs, 3 per group in qh), per 32 a 3-bit
 * scale and the sign of the offset (top bit of qh). */
static void deq_iq1_s(const block_iq1_s *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(x[i].d);
    const uint8_t *qs = x[i].qs;
    for (int ib = 0; ib < QK_K / 32; ib++, qs += 4) {
      const int qh = x[i].qh[ib];
      const float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
      const float delta = qh & 0x8000 ? -NC_IQ1_DELTA : NC_IQ1_DELTA;
      for (int l = 0; l < 4; l++, y += 8)
        offset_group(dl, delta,
                     nc_iq1s_grid[qs[l] | (((qh >> 3 * l) & 7) << 8)], y);
    }
  }
}

/* IQ1_M: as IQ1_S, but a 3-bit scale per 16 weights and an offset sign per
 * 8 (qh nibbles: 3 index bits and the sign), the half scale spread over the
 * scale words (nc_iq1m_half_scale). */
static void deq_iq1_m(const block_iq1_m *x, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++) {
    const float d = H2F(nc_iq1m_half_scale(&x[i]));
    const uint8_t *qs = x[i].qs, *qh = x[i].qh;
    for (int ib = 0; ib < QK_K / 32; ib++, qs += 4, qh += 2) {
      const int sc =
          x[i].scales[2 * (ib / 2)] | (x[i].scales[2 * (ib / 2) + 1] << 8);
      const int sh = 6 * (ib % 2);
      const float dl[2] = {d * (float)(2 * ((sc >> sh) & 7) + 1),
                           d * (float)(2 * ((sc >> (sh + 3)) & 7) + 1)};
      for (int l = 0; l < 4; l++, y += 8) {
        const int nib = qh[l / 2] >> (4 * (l % 2));
        const float delta = nib & 8 ? -NC_IQ1_DELTA : NC_IQ1_DELTA;
        offset_group(dl[l / 2], delta, nc_iq1s_grid[qs[l] | ((nib & 7) << 8)],
                     y);
      }
    }
  }
}

bool nc_dequantize_iq(nc_type type, const void *src, float *dst, int64_t nb) {
  switch (type) {
  case NC_TYPE_IQ2_XXS: deq_iq2_xxs(src, dst, nb); return true;
  case NC_TYPE_IQ2_XS: deq_iq2_xs(src, dst, nb); return true;
  case NC_TYPE_IQ2_S: deq_iq2_s(src, dst, nb); return true;
  case NC_TYPE_IQ3_XXS: deq_iq3_xxs(src, dst, nb); return true;
  case NC_TYPE_IQ3_S: deq_iq3_s(src, dst, nb); return true;
  case NC_TYPE_IQ1_S: deq_iq1_s(src, dst, nb); return true;
  case NC_TYPE_IQ1_M: deq_iq1_m(src, dst, nb); return true;
  default: return false;
  }
}
