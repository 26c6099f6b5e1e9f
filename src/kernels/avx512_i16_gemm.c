/* avx512_i16_gemm: IQ4_XS x Q8_K matmul in the order of llama.cpp's
 * tiled matmul (ref_nl.c, nc_ref_dot_iq4_xs_tiled), and the same for the
 * IQ1/IQ2/IQ3 lattice types (ref_iq.c's tiled order, t = (float)S * (d_w *
 * unit), IQ1's with weights 8q + offset sign and unit 1/8) from
 * avx2_iq.c's unpacking: per output and
 * superblock the exact integer S = sum_j (ls_j - 32) x dot_j, then
 * t = (float)S * d_w, acc = fma(t, d_a, acc). S is an integer, so any
 * grouping of its products gives it exactly; only the two float steps are
 * ordered, and they run on 16 outputs at once, one per float lane.
 *
 * Panels: the weight rows of a tile (4) are unpacked once per panel into
 * int16 weights already times their sub-block's scale (|w x ls| <= 127 x
 * 32), the panel's activation rows once into int16; a 4 x 4 register tile
 * then takes 8 vpdpwssd per (weight, activation) pair and superblock, and
 * one transpose-add tree turns the 16 pairs' int32 lanes into the 16 S of
 * one vector. Every S fits int32: 256 products of at most 127 x 32 x 127
 * (lattice: grid bytes <= 62 times scales <= 31, times 127; IQ1: 9 x 15,
 * times 127). */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "tables.h"

#define H2F(x) _cvtsh_ss(x) /* F16C: exact, as nc_fp16_to_fp32 */

enum {
  XT = 4,                      /* weight rows and activation rows per tile */
  SB_I16 = QK_K,               /* int16 values per superblock */
  XS_PANEL_BYTES = 512 * 1024, /* a panel's int16 activations (in L2) */
  XS_PANEL_ROWS = 64,
};

/* Superblock i's 256 weights times their sub-block scales (ls - 32);
 * returns d_w. */
static float iq4xs_unpack(nc_type type, const void *row, int64_t i,
                          int16_t *dst) {
  (void)type;
  const block_iq4_xs *x = (const block_iq4_xs *)row + i;
  const __m128i table = _mm_loadu_si128((const __m128i *)nc_iq4nl_values);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  for (int j = 0; j < QK_K / 32; j++) {
    const int ls = (((x->scales_l[j / 2] >> 4 * (j % 2)) & 0x0f) |
                    (((x->scales_h >> 2 * j) & 3) << 4)) -
                   32;
    const __m128i b = _mm_loadu_si128((const __m128i *)(x->qs + 16 * j));
    const __m256i v = _mm256_set_m128i(
        _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(b, 4), m4)),
        _mm_shuffle_epi8(table, _mm_and_si128(b, m4)));
    _mm512_store_si512(dst + 32 * j,
                       _mm512_mullo_epi16(_mm512_cvtepi8_epi16(v),
                                          _mm512_set1_epi16((short)ls)));
  }
  return H2F(x->d);
}

/* 16 vectors' lane sums, v[k]'s in lane k (exact: int32 adds). */
static inline __m512i sum16(const __m512i v[16]) {
  __m512i u[8], w[4];
  for (int k = 0; k < 8; k++)
    u[k] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * k], v[2 * k + 1]),
                            _mm512_unpackhi_epi32(v[2 * k], v[2 * k + 1]));
  for (int k = 0; k < 4; k++) /* 128-bit lane l: v[4k..4k+3]'s partial sums */
    w[k] = _mm512_add_epi32(_mm512_unpacklo_epi64(u[2 * k], u[2 * k + 1]),
                            _mm512_unpackhi_epi64(u[2 * k], u[2 * k + 1]));
  const __m512i x01 = _mm512_add_epi32(
      _mm512_shuffle_i32x4(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
      _mm512_shuffle_i32x4(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i x23 = _mm512_add_epi32(
      _mm512_shuffle_i32x4(w[2], w[3], _MM_SHUFFLE(2, 0, 2, 0)),
      _mm512_shuffle_i32x4(w[2], w[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_epi32(
      _mm512_shuffle_i32x4(x01, x23, _MM_SHUFFLE(2, 0, 2, 0)),
      _mm512_shuffle_i32x4(x01, x23, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* One 4 x 4 tile: wq[r] the tile rows' unpacked weights, aq[a] the
 * activations (int16), wd[i][r] = d_w, ad[a][i] = d_a (i the superblock).
 * Output lane 4r + a is (weight r, activation a). */
static __m512 tile4x4(int64_t nb, const int16_t *const wq[XT],
                      const float (*wd)[XT], const int16_t *const aq[XT],
                      const float *const ad[XT]) {
  const __m512i rep = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0,
                                       0, 0); /* lane 4r + a: r */
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; i++) {
    __m512i c[XT * XT];
#pragma GCC unroll 16
    for (int k = 0; k < XT * XT; k++)
      c[k] = _mm512_setzero_si512();
    const size_t o = (size_t)i * SB_I16;
#pragma GCC unroll 8
    for (int q = 0; q < SB_I16; q += 32) {
      __m512i wv[XT];
#pragma GCC unroll 4
      for (int r = 0; r < XT; r++)
        wv[r] = _mm512_load_si512(wq[r] + o + q);
#pragma GCC unroll 4
      for (int a = 0; a < XT; a++) {
        const __m512i av = _mm512_load_si512(aq[a] + o + q);
#pragma GCC unroll 4
        for (int r = 0; r < XT; r++)
          c[XT * r + a] = _mm512_dpwssd_epi32(c[XT * r + a], wv[r], av);
      }
    }
    const __m512 dw =
        _mm512_permutexvar_ps(rep, _mm512_castps128_ps512(_mm_loadu_ps(wd[i])));
    const __m512 da = _mm512_broadcast_f32x4(
        _mm_set_ps(ad[3][i], ad[2][i], ad[1][i], ad[0][i]));
    const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(sum16(c)), dw);
    acc = _mm512_fmadd_ps(t, da, acc);
  }
  return acc;
}

/* A panel's activation rows as int16 (per row nb superblocks of 256) and
 * their d_a (per row, nb floats). */
static void pack_act(const uint8_t *ap, size_t a_stride, int64_t rows,
                     int64_t nb, int16_t *aq, float *ad) {
  for (int64_t a = 0; a < rows; a++) {
    const block_q8_K *y = (const void *)(ap + (size_t)a * a_stride);
    int16_t *dst = aq + (size_t)a * (size_t)nb * SB_I16;
    for (int64_t i = 0; i < nb; i++) {
      for (int q = 0; q < SB_I16; q += 32)
        _mm512_store_si512(dst + (size_t)i * SB_I16 + q,
                           _mm512_cvtepi8_epi16(_mm256_loadu_si256(
                               (const __m256i *)(y[i].qs + q))));
      ad[(size_t)a * (size_t)nb + (size_t)i] = y[i].d;
    }
  }
}

/* The matmul for any type whose superblocks unpack_sb turns into int16
 * weights times their scales and the step's factor d (S x d, then fma with
 * d_a). Fewer than XT activation rows (decode), or no memory for the
 * panels: few_rows, a matmul in the same order that unpacks as it goes
 * (unpacking to int16 does not pay for one row). */
static void i16_gemm(int64_t n, const void *w, size_t w_stride, int64_t nw,
                     const void *act, size_t a_stride, int64_t na, float *out,
                     size_t out_stride, nc_i16_unpack_fn unpack_sb,
                     nc_gemm_fn few_rows, nc_type type) {
  const int64_t nb = n / QK_K;
  if (nb < 1 || na < XT) {
    few_rows(n, w, w_stride, nw, act, a_stride, na, out, out_stride);
    return;
  }
  const size_t row_bytes = sizeof(int16_t) * SB_I16 * (size_t)nb;
  int64_t panel = XS_PANEL_BYTES / (int64_t)row_bytes / XT * XT;
  panel = panel < XT ? XT : panel > XS_PANEL_ROWS ? XS_PANEL_ROWS : panel;
  if (panel > (na + XT - 1) / XT * XT) panel = (na + XT - 1) / XT * XT;
  const size_t aq_bytes = row_bytes * (size_t)panel;
  const size_t ad_bytes = sizeof(float) * (size_t)nb * (size_t)panel;
  const size_t wq_bytes = row_bytes * XT;
  const size_t wd_bytes = sizeof(float) * XT * (size_t)nb;
  const size_t total =
      aq_bytes + wq_bytes + (ad_bytes + wd_bytes + 63) / 64 * 64;
  uint8_t *mem = aligned_alloc(64, (total + 63) / 64 * 64);
  if (!mem) {
    few_rows(n, w, w_stride, nw, act, a_stride, na, out, out_stride);
    return;
  }
  int16_t *aq = (int16_t *)mem;
  int16_t *wq = (int16_t *)(mem + aq_bytes);
  float *ad = (float *)(mem + aq_bytes + wq_bytes);
  float(*wd)[XT] = (float(*)[XT])(ad + (size_t)nb * (size_t)panel);
  const uint8_t *wp = w, *ap = act;
  for (int64_t p0 = 0; p0 < na; p0 += panel) {
    const int64_t rows = na - p0 < panel ? na - p0 : panel;
    pack_act(ap + (size_t)p0 * a_stride, a_stride, rows, nb, aq, ad);
    for (int64_t r0 = 0; r0 < nw; r0 += XT) {
      const int rm = nw - r0 < XT ? (int)(nw - r0) : XT;
      const int16_t *wrow[XT];
      for (int r = 0; r < XT; r++) {
        const int rr = r < rm ? r : 0; /* a short tile repeats row 0 */
        const void *x = wp + (size_t)(r0 + rr) * w_stride;
        int16_t *dst = wq + (size_t)r * (size_t)nb * SB_I16;
        for (int64_t i = 0; i < nb && r < rm; i++)
          wd[i][r] = unpack_sb(type, x, i, dst + (size_t)i * SB_I16);
        wrow[r] = wq + (size_t)rr * (size_t)nb * SB_I16;
        if (r >= rm)
          for (int64_t i = 0; i < nb; i++)
            wd[i][r] = wd[i][0];
      }
      for (int64_t a0 = 0; a0 < rows; a0 += XT) {
        const int ra = rows - a0 < XT ? (int)(rows - a0) : XT;
        const int16_t *arow[XT];
        const float *drow[XT];
        for (int a = 0; a < XT; a++) {
          const int64_t aa = a0 + (a < ra ? a : 0);
          arow[a] = aq + (size_t)aa * (size_t)nb * SB_I16;
          drow[a] = ad + (size_t)aa * (size_t)nb;
        }
        float res[XT * XT];
        _mm512_storeu_ps(res,
                         tile4x4(nb, wrow, (const float(*)[XT])wd, arow, drow));
        for (int a = 0; a < ra; a++)
          for (int r = 0; r < rm; r++)
            out[(size_t)(p0 + a0 + a) * out_stride + (size_t)(r0 + r)] =
                res[XT * r + a];
      }
    }
  }
  free(mem);
}

void nc_avx512_gemm_iq4_xs_tiled(int64_t n, const void *w, size_t w_stride,
                                 int64_t nw, const void *act, size_t a_stride,
                                 int64_t na, float *out, size_t out_stride) {
  i16_gemm(n, w, w_stride, nw, act, a_stride, na, out, out_stride, iq4xs_unpack,
           nc_avx512_gemm_iq4_xs_tiled_few, NC_TYPE_IQ4_XS);
}

/* The IQ1, IQ2 and IQ3 lattice types (IQ2/IQ3 unpacked by avx512_iq.c,
 * IQ1 by avx2_iq.c, its weights as 8q + offset sign with d_w / 8; the few
 * rows avx512_iq.c's tiled_few, IQ1's the avx2 tiled matmul). */
#define LATTICE_GEMM(name, type, unpack, few)                                  \
  void nc_avx512_gemm_##name##_tiled(                                          \
      int64_t n, const void *w, size_t w_stride, int64_t nw, const void *act,  \
      size_t a_stride, int64_t na, float *out, size_t out_stride) {            \
    i16_gemm(n, w, w_stride, nw, act, a_stride, na, out, out_stride, unpack,   \
             few, type);                                                       \
  }
LATTICE_GEMM(iq2_xxs, NC_TYPE_IQ2_XXS, nc_avx512_iq_unpack_i16,
             nc_avx512_gemm_iq2_xxs_tiled_few)
LATTICE_GEMM(iq2_xs, NC_TYPE_IQ2_XS, nc_avx512_iq_unpack_i16,
             nc_avx512_gemm_iq2_xs_tiled_few)
LATTICE_GEMM(iq2_s, NC_TYPE_IQ2_S, nc_avx512_iq_unpack_i16,
             nc_avx512_gemm_iq2_s_tiled_few)
LATTICE_GEMM(iq3_xxs, NC_TYPE_IQ3_XXS, nc_avx512_iq_unpack_i16,
             nc_avx512_gemm_iq3_xxs_tiled_few)
LATTICE_GEMM(iq3_s, NC_TYPE_IQ3_S, nc_avx512_iq_unpack_i16,
             nc_avx512_gemm_iq3_s_tiled_few)
LATTICE_GEMM(iq1_s, NC_TYPE_IQ1_S, nc_avx2_iq_unpack_i16,
             nc_avx2_gemm_iq1_s_tiled)
LATTICE_GEMM(iq1_m, NC_TYPE_IQ1_M, nc_avx2_iq_unpack_i16,
             nc_avx2_gemm_iq1_m_tiled)
