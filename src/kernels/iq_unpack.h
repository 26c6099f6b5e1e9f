/* iq_unpack: a superblock of an IQ1/IQ2/IQ3 type as plain integers, the
 * form every dot of these types (ref_iq.c and the SIMD kernels) starts
 * from: the 256 signed weights q (grid coordinate times its sign; for IQ1
 * the grid value -1, 0 or 1 without its offset), the integer scale of each
 * 16 weights (2s + 1 for the stored s), and for IQ1 the sign (+1 or -1) of
 * each group of 8's offset. The float scale of the superblock is then
 * nc_iq_half(x) times nc_iq_unit(type) (the scales' common factor: 1/8 for
 * IQ2, 1/4 for IQ3_XXS, 1 for IQ3_S, the offset 1/8 for IQ1 aside).
 * Internal to src/kernels/. */
#ifndef NC_KERNELS_IQ_UNPACK_H
#define NC_KERNELS_IQ_UNPACK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gguf/iq_grids.h"
#include "gguf/quant.h"

typedef struct nc_iq_block {
  int8_t q[QK_K];
  int16_t scale[QK_K / 16];
  int8_t delta_sign[QK_K / 8]; /* IQ1 only */
} nc_iq_block;

static inline uint32_t nc_iq_u32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void nc_iq_signed8(uint64_t point, uint8_t signs, int8_t *q) {
  for (int j = 0; j < 8; j++) {
    const int v = nc_grid8_at(point, j);
    q[j] = (int8_t)(signs >> j & 1 ? -v : v);
  }
}

static inline void nc_iq_signed4x2(uint32_t p1, uint32_t p2, uint8_t signs,
                                   int8_t *q) {
  for (int j = 0; j < 4; j++) {
    const int a = nc_grid4_at(p1, j), b = nc_grid4_at(p2, j);
    q[j] = (int8_t)(signs >> j & 1 ? -a : a);
    q[j + 4] = (int8_t)(signs >> (j + 4) & 1 ? -b : b);
  }
}

static inline void nc_iq_unpack_iq2_xxs(const block_iq2_xxs *x,
                                        nc_iq_block *b) {
  for (int ib = 0; ib < 8; ib++) {
    const uint8_t *p = (const uint8_t *)(x->qs + 4 * ib);
    const uint32_t idx = nc_iq_u32(p), aux = nc_iq_u32(p + 4);
    b->scale[2 * ib] = b->scale[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
    for (int l = 0; l < 4; l++)
      nc_iq_signed8(nc_iq2xxs_grid[(idx >> 8 * l) & 255],
                    nc_ksigns_iq2xs[(aux >> 7 * l) & 127],
                    b->q + 32 * ib + 8 * l);
  }
}

static inline void nc_iq_unpack_iq2_xs(const block_iq2_xs *x, nc_iq_block *b) {
  for (int ib = 0; ib < 8; ib++) {
    b->scale[2 * ib] = (int16_t)(2 * (x->scales[ib] & 15) + 1);
    b->scale[2 * ib + 1] = (int16_t)(2 * (x->scales[ib] >> 4) + 1);
    for (int l = 0; l < 4; l++) {
      const uint16_t c = x->qs[4 * ib + l];
      nc_iq_signed8(nc_iq2xs_grid[c & 511], nc_ksigns_iq2xs[c >> 9],
                    b->q + 32 * ib + 8 * l);
    }
  }
}

static inline void nc_iq_unpack_iq2_s(const block_iq2_s *x, nc_iq_block *b) {
  for (int ib = 0; ib < 8; ib++) {
    b->scale[2 * ib] = (int16_t)(2 * (x->scales[ib] & 15) + 1);
    b->scale[2 * ib + 1] = (int16_t)(2 * (x->scales[ib] >> 4) + 1);
    for (int l = 0; l < 4; l++) {
      const int idx = x->qs[4 * ib + l] | ((x->qh[ib] << (8 - 2 * l)) & 0x300);
      nc_iq_signed8(nc_iq2s_grid[idx], x->qs[QK_K / 8 + 4 * ib + l],
                    b->q + 32 * ib + 8 * l);
    }
  }
}

static inline void nc_iq_unpack_iq3_xxs(const block_iq3_xxs *x,
                                        nc_iq_block *b) {
  for (int ib = 0; ib < 8; ib++) {
    const uint8_t *qs = x->qs + 8 * ib;
    const uint32_t aux = nc_iq_u32(x->qs + QK_K / 4 + 4 * ib);
    b->scale[2 * ib] = b->scale[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
    for (int l = 0; l < 4; l++)
      nc_iq_signed4x2(nc_iq3xxs_grid[qs[2 * l]], nc_iq3xxs_grid[qs[2 * l + 1]],
                      nc_ksigns_iq2xs[(aux >> 7 * l) & 127],
                      b->q + 32 * ib + 8 * l);
  }
}

static inline void nc_iq_unpack_iq3_s(const block_iq3_s *x, nc_iq_block *b) {
  for (int ib = 0; ib < 8; ib++) {
    const uint8_t *qs = x->qs + 8 * ib;
    const int qh = x->qh[ib];
    const int s = ib % 2 ? x->scales[ib / 2] >> 4 : x->scales[ib / 2] & 15;
    b->scale[2 * ib] = b->scale[2 * ib + 1] = (int16_t)(1 + 2 * s);
    for (int l = 0; l < 4; l++)
      nc_iq_signed4x2(nc_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)],
                      nc_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)],
                      x->signs[4 * ib + l], b->q + 32 * ib + 8 * l);
  }
}

static inline void nc_iq_grid1(uint64_t point, int8_t *q) {
  for (int j = 0; j < 8; j++)
    q[j] = (int8_t)nc_grid8_at(point, j);
}

static inline void nc_iq_unpack_iq1_s(const block_iq1_s *x, nc_iq_block *b) {
  for (int ib = 0; ib < 8; ib++) {
    const int qh = x->qh[ib];
    b->scale[2 * ib] = b->scale[2 * ib + 1] =
        (int16_t)(2 * ((qh >> 12) & 7) + 1);
    for (int l = 0; l < 4; l++) {
      b->delta_sign[4 * ib + l] = (int8_t)(qh & 0x8000 ? -1 : 1);
      nc_iq_grid1(nc_iq1s_grid[x->qs[4 * ib + l] | (((qh >> 3 * l) & 7) << 8)],
                  b->q + 32 * ib + 8 * l);
    }
  }
}

static inline void nc_iq_unpack_iq1_m(const block_iq1_m *x, nc_iq_block *b) {
  for (int ib = 0; ib < 8; ib++) {
    const int sc = x->scales[2 * (ib / 2)] | (x->scales[2 * (ib / 2) + 1] << 8);
    const int sh = 6 * (ib % 2);
    b->scale[2 * ib] = (int16_t)(2 * ((sc >> sh) & 7) + 1);
    b->scale[2 * ib + 1] = (int16_t)(2 * ((sc >> (sh + 3)) & 7) + 1);
    for (int l = 0; l < 4; l++) {
      const int nib = x->qh[2 * ib + l / 2] >> (4 * (l % 2));
      b->delta_sign[4 * ib + l] = (int8_t)(nib & 8 ? -1 : 1);
      nc_iq_grid1(nc_iq1s_grid[x->qs[4 * ib + l] | ((nib & 7) << 8)],
                  b->q + 32 * ib + 8 * l);
    }
  }
}

/* Superblock i of a row of type t (one of the seven), unpacked. */
static inline void nc_iq_unpack(nc_type t, const void *row, int64_t i,
                                nc_iq_block *b) {
  switch (t) {
  case NC_TYPE_IQ2_XXS:
    nc_iq_unpack_iq2_xxs((const block_iq2_xxs *)row + i, b);
    return;
  case NC_TYPE_IQ2_XS:
    nc_iq_unpack_iq2_xs((const block_iq2_xs *)row + i, b);
    return;
  case NC_TYPE_IQ2_S:
    nc_iq_unpack_iq2_s((const block_iq2_s *)row + i, b);
    return;
  case NC_TYPE_IQ3_XXS:
    nc_iq_unpack_iq3_xxs((const block_iq3_xxs *)row + i, b);
    return;
  case NC_TYPE_IQ3_S:
    nc_iq_unpack_iq3_s((const block_iq3_s *)row + i, b);
    return;
  case NC_TYPE_IQ1_S:
    nc_iq_unpack_iq1_s((const block_iq1_s *)row + i, b);
    return;
  case NC_TYPE_IQ1_M:
    nc_iq_unpack_iq1_m((const block_iq1_m *)row + i, b);
    return;
  default: return;
  }
}

/* The half scale of superblock i (IQ1_M's gathered from its scale words). */
static inline nc_fp16 nc_iq_half(nc_type t, const void *row, int64_t i) {
  switch (t) {
  case NC_TYPE_IQ2_XXS: return ((const block_iq2_xxs *)row)[i].d;
  case NC_TYPE_IQ2_XS: return ((const block_iq2_xs *)row)[i].d;
  case NC_TYPE_IQ2_S: return ((const block_iq2_s *)row)[i].d;
  case NC_TYPE_IQ3_XXS: return ((const block_iq3_xxs *)row)[i].d;
  case NC_TYPE_IQ3_S: return ((const block_iq3_s *)row)[i].d;
  case NC_TYPE_IQ1_S: return ((const block_iq1_s *)row)[i].d;
  case NC_TYPE_IQ1_M: return nc_iq1m_half_scale((const block_iq1_m *)row + i);
  default: return 0;
  }
}

/* The factor llama.cpp's vec_dot applies to the whole sum (IQ2: the scales
 * are (2s + 1) / 8, IQ3_XXS: (2s + 1) / 4; 1 for IQ3_S and IQ1). */
static inline float nc_iq_unit(nc_type t) {
  switch (t) {
  case NC_TYPE_IQ2_XXS:
  case NC_TYPE_IQ2_XS:
  case NC_TYPE_IQ2_S: return 0.125f;
  case NC_TYPE_IQ3_XXS: return 0.25f;
  default: return 1.0f;
  }
}

static inline bool nc_iq_is_iq1(nc_type t) {
  return t == NC_TYPE_IQ1_S || t == NC_TYPE_IQ1_M;
}

#endif
