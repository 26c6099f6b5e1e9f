/* avx512_iq4nl_gemm: AVX-512 VNNI matmul of IQ4_NL x Q8_0 in the order of
 * llama.cpp's llamafile GEMM (tinyBLAS_Q0_AVX, which it runs for 2+
 * activation rows; ref_nl.c, nc_ref_dot_iq4_nl_tinyblas), bit-identical
 * to it: per output one 8-lane accumulator, acc = fma(d_w * d_a,
 * (float)lane, acc) block after block, then hsum8(acc). The two halves of
 * a zmm carry two independent outputs: two activation rows, or for a
 * single activation row (decode) two weight rows. Lookups and lane starts:
 * avx512_nl_lookup.h. */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "avx2_util.h"
#include "avx512_nl_lookup.h"
#include "ref.h"
#include "tables.h"

#define H2F(x) NC_H2F(x)

enum {
  RM = 4,       /* weight rows per register tile */
  LF_P = 2,     /* activation row pairs per tile (direct) */
  LF_ONE_Q = 4, /* weight row pairs per tile, one activation row */
  PANEL = 64,   /* activation rows per panel (direct) */
};

/* Weight rows w[0..rm) against activation rows y[0..2p), the last of which
 * may be a repeat of the one before (odd: its outputs are not stored). */
static inline __attribute__((always_inline)) void
llamafile_tile(int64_t nb, const block_iq4_nl *const *x, const int rm,
               const block_q8_0 *const *y, const int p, bool odd, float *out,
               size_t out_stride) {
  const __m512i table = unsigned_table(nc_iq4nl_values),
                shifts = nibble_shifts();
  __m512 acc[RM][LF_P];
#pragma GCC unroll 4
  for (int r = 0; r < rm; r++)
#pragma GCC unroll 4
    for (int j = 0; j < p; j++)
      acc[r][j] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; i++) {
    __m512i av[LF_P], a0[LF_P];
    __m512 dy[LF_P];
#pragma GCC unroll 4
    for (int j = 0; j < p; j++) {
      av[j] = join(y[2 * j][i].qs, y[2 * j + 1][i].qs);
      a0[j] = offset_start(av[j]);
      dy[j] = join_ps(H2F(y[2 * j][i].d), H2F(y[2 * j + 1][i].d));
    }
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++) {
      const __m512i wv = lookup_twice(table, shifts, x[r][i].qs);
      const __m512 dw = _mm512_set1_ps(H2F(x[r][i].d));
#pragma GCC unroll 4
      for (int j = 0; j < p; j++) {
        const __m512i l = _mm512_dpbusd_epi32(a0[j], wv, av[j]);
        acc[r][j] = _mm512_fmadd_ps(_mm512_mul_ps(dw, dy[j]),
                                    _mm512_cvtepi32_ps(l), acc[r][j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < p; j++)
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++) {
      out[(size_t)(2 * j) * out_stride + (size_t)r] =
          nc_hsum8(_mm512_castps512_ps256(acc[r][j]));
      if (!odd || j + 1 < p)
        out[(size_t)(2 * j + 1) * out_stride + (size_t)r] =
            nc_hsum8(_mm512_extractf32x8_ps(acc[r][j], 1));
    }
}

/* One activation row (decode): the halves of a zmm take two weight rows
 * instead, the activation block in both; rows w[0..2q), the last a repeat
 * of the one before when odd (its output not stored). */
static inline __attribute__((always_inline)) void
llamafile_one_row_tile(int64_t nb, const uint8_t *w, size_t w_stride,
                       const int q, bool odd, const block_q8_0 *y, float *out) {
  const __m512i table = unsigned_table(nc_iq4nl_values),
                shifts = nibble_shifts();
  const block_iq4_nl *x[2 * LF_ONE_Q];
#pragma GCC unroll 8
  for (int r = 0; r < 2 * q; r++)
    x[r] = (const void *)(w + (size_t)(odd && r == 2 * q - 1 ? r - 1 : r) *
                                  w_stride);
  __m512 acc[LF_ONE_Q];
#pragma GCC unroll 4
  for (int k = 0; k < q; k++)
    acc[k] = _mm512_setzero_ps();
  const uint8_t *pf = nc_prefetch_base(w, (size_t)(2 * q) * w_stride);
  for (int64_t i = 0; i < nb; i++) {
#pragma GCC unroll 8
    for (int r = 0; r < 2 * q; r++)
      nc_prefetch_lines(pf + (size_t)r * w_stride + (size_t)i * sizeof *x[0],
                        sizeof *x[0]);
    const __m512i av =
        _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)y[i].qs));
    const __m512i start = offset_start(av);
    const __m512 dy = _mm512_set1_ps(H2F(y[i].d));
#pragma GCC unroll 4
    for (int k = 0; k < q; k++) {
      const block_iq4_nl *b0 = &x[2 * k][i], *b1 = &x[2 * k + 1][i];
      const __m512i wv = lookup_pair(table, shifts, b0->qs, b1->qs);
      const __m512 dw = join_ps(H2F(b0->d), H2F(b1->d));
      acc[k] = _mm512_fmadd_ps(
          _mm512_mul_ps(dw, dy),
          _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start, wv, av)), acc[k]);
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < q; k++) {
    out[2 * k] = nc_hsum8(_mm512_castps512_ps256(acc[k]));
    if (!odd || k + 1 < q)
      out[2 * k + 1] = nc_hsum8(_mm512_extractf32x8_ps(acc[k], 1));
  }
}

static void llamafile_one_row(int64_t nb, const uint8_t *w, size_t w_stride,
                              int64_t nw, const block_q8_0 *y, float *out) {
  for (int64_t r = 0; r < nw; r += 2 * LF_ONE_Q) {
    const int64_t left = nw - r;
    const int rows = left < 2 * LF_ONE_Q ? (int)left : 2 * LF_ONE_Q;
    const int q = (rows + 1) / 2;
    const bool odd = rows % 2 != 0;
    const uint8_t *wr = w + (size_t)r * w_stride;
#define OT(Q) llamafile_one_row_tile(nb, wr, w_stride, Q, odd, y, out + r)
    switch (q) {
    case 4: OT(4); break;
    case 3: OT(3); break;
    case 2: OT(2); break;
    default: OT(1); break;
    }
#undef OT
  }
}

/* The tiles above straight from the rows: each tile looks its weight
 * blocks up and forms its activation pairs itself (few rows, or no memory
 * for the panels below). */
static void llamafile_direct(int64_t n, const void *w, size_t w_stride,
                             int64_t nw, const void *act, size_t a_stride,
                             int64_t na, float *out, size_t out_stride) {
  const uint8_t *wp = w, *ap = act;
  const int64_t nb = n / QK4_NL;
  if (na == 1) {
    llamafile_one_row(nb, wp, w_stride, nw, act, out);
    return;
  }
  for (int64_t p0 = 0; p0 < na; p0 += PANEL) {
    const int64_t p1 = na - p0 < PANEL ? na : p0 + PANEL;
    for (int64_t r = 0; r < nw; r += RM) {
      const int rm = nw - r < RM ? (int)(nw - r) : RM;
      const block_iq4_nl *x[RM];
#pragma GCC unroll 4
      for (int m = 0; m < RM; m++)
        x[m] = (const void *)(wp + (size_t)(r + (m < rm ? m : 0)) * w_stride);
      for (int64_t a = p0; a < p1; a += 2 * LF_P) {
        const int64_t left = p1 - a;
        const int rows = left < 2 * LF_P ? (int)left : 2 * LF_P;
        const block_q8_0 *y[2 * LF_P];
#pragma GCC unroll 4
        for (int j = 0; j < 2 * LF_P; j++)
          y[j] = (const void *)(ap + (size_t)(a + (j < rows ? j : rows - 1)) *
                                         a_stride);
        const int p = (rows + 1) / 2;
        const bool odd = rows % 2 != 0;
        float *o = out + (size_t)a * out_stride + (size_t)r;
#define LT(M, P) llamafile_tile(nb, x, M, y, P, odd, o, out_stride)
        switch (rm * 2 + (p - 1)) {
        case 8 + 1: LT(4, 2); break;
        case 8: LT(4, 1); break;
        case 6 + 1: LT(3, 2); break;
        case 6: LT(3, 1); break;
        case 4 + 1: LT(2, 2); break;
        case 4: LT(2, 1); break;
        case 2 + 1: LT(1, 2); break;
        default: LT(1, 1); break;
        }
#undef LT
      }
    }
  }
}

/* The same order from prepared panels. Activation rows in pairs, per pair
 * and block the two rows' 32 quants side by side, their lane starts
 * (offset_start) and d_a (8 times each): made once per panel, read by
 * every weight tile. A weight tile's rows looked up once per panel, per
 * block and row 32 bytes (+ 128) and d_w. The tile loop then only loads,
 * and per output and block runs vpdpbusd, cvt, mul and fma. */
typedef struct lf_pair {
  __m512i a, start;
  __m512 dy;
} lf_pair;

enum {
  LF_PANEL_BYTES = 512 * 1024, /* a panel's pairs (in L2) */
  LF_PANEL_PAIRS = 32,
  LF_TILE_P = 4,   /* activation pairs per register tile */
  LF_MIN_ROWS = 3, /* fewer: llamafile_direct */
};

static void lf_pack_pairs(const uint8_t *ap, size_t a_stride, int64_t a0,
                          int64_t a1, int64_t nb, lf_pair *pairs) {
  for (int64_t a = a0; a < a1; a += 2) {
    const block_q8_0 *y0 = (const void *)(ap + (size_t)a * a_stride);
    const block_q8_0 *y1 =
        a + 1 < a1 ? (const void *)(ap + (size_t)(a + 1) * a_stride) : y0;
    lf_pair *pp = pairs + (size_t)((a - a0) / 2) * (size_t)nb;
    for (int64_t i = 0; i < nb; i++) {
      const __m512i av = join(y0[i].qs, y1[i].qs);
      _mm512_store_si512(&pp[i].a, av);
      _mm512_store_si512(&pp[i].start, offset_start(av));
      _mm512_store_ps(&pp[i].dy, join_ps(H2F(y0[i].d), H2F(y1[i].d)));
    }
  }
}

static void lf_unpack_rows(const uint8_t *w, size_t w_stride, int rm,
                           int64_t nb, __m256i (*wq)[RM], float (*dw)[RM]) {
  const __m512i table = unsigned_table(nc_iq4nl_values),
                shifts = nibble_shifts();
  for (int r = 0; r < rm; r++) {
    const block_iq4_nl *x = (const void *)(w + (size_t)r * w_stride);
    for (int64_t i = 0; i < nb; i++) {
      _mm256_store_si256(&wq[i][r], _mm512_castsi512_si256(
                                        lookup_twice(table, shifts, x[i].qs)));
      dw[i][r] = H2F(x[i].d);
    }
  }
}

/* Weight rows [0, rm) of the unpacked tile against pairs [0, p); the
 * last pair's high half is not stored when odd. */
static inline __attribute__((always_inline)) void
lf_panel_tile(int64_t nb, const __m256i (*wq)[RM], const float (*dw)[RM],
              const int rm, const lf_pair *pairs, const int p, bool odd,
              float *out, size_t out_stride) {
  __m512 acc[RM][LF_TILE_P];
#pragma GCC unroll 4
  for (int r = 0; r < rm; r++)
#pragma GCC unroll 4
    for (int j = 0; j < p; j++)
      acc[r][j] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; i++) {
    __m512i wv[RM];
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++)
      wv[r] = _mm512_broadcast_i64x4(_mm256_load_si256(&wq[i][r]));
#pragma GCC unroll 4
    for (int j = 0; j < p; j++) {
      const lf_pair *pp = pairs + (size_t)j * (size_t)nb + (size_t)i;
      const __m512 dy = _mm512_load_ps(&pp->dy);
#pragma GCC unroll 4
      for (int r = 0; r < rm; r++) {
        const __m512i l = _mm512_dpbusd_epi32(_mm512_load_si512(&pp->start),
                                              wv[r], _mm512_load_si512(&pp->a));
        acc[r][j] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(dw[i][r]), dy),
                                    _mm512_cvtepi32_ps(l), acc[r][j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < p; j++)
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++) {
      out[(size_t)(2 * j) * out_stride + (size_t)r] =
          nc_hsum8(_mm512_castps512_ps256(acc[r][j]));
      if (!odd || j + 1 < p)
        out[(size_t)(2 * j + 1) * out_stride + (size_t)r] =
            nc_hsum8(_mm512_extractf32x8_ps(acc[r][j], 1));
    }
}

void nc_avx512_gemm_iq4_nl_tinyblas(int64_t n, const void *w, size_t w_stride,
                                    int64_t nw, const void *act,
                                    size_t a_stride, int64_t na, float *out,
                                    size_t out_stride) {
  const int64_t nb = n / QK4_NL;
  int64_t panel_pairs = LF_PANEL_BYTES / ((int64_t)sizeof(lf_pair) * (nb + 1));
  panel_pairs = panel_pairs < 1                ? 1
                : panel_pairs > LF_PANEL_PAIRS ? LF_PANEL_PAIRS
                                               : panel_pairs;
  const int64_t want_pairs = (na + 1) / 2;
  if (want_pairs < panel_pairs) panel_pairs = want_pairs;
  const size_t pair_bytes = sizeof(lf_pair) * (size_t)nb * (size_t)panel_pairs;
  const size_t tile_bytes = (sizeof(__m256i) + sizeof(float)) * RM * (size_t)nb;
  void *mem = na < LF_MIN_ROWS || nb < 1
                  ? NULL
                  : aligned_alloc(64, (pair_bytes + tile_bytes + 63) / 64 * 64);
  if (!mem) {
    llamafile_direct(n, w, w_stride, nw, act, a_stride, na, out, out_stride);
    return;
  }
  lf_pair *pairs = mem;
  __m256i(*wq)[RM] = (void *)((uint8_t *)mem + pair_bytes);
  float(*dw)[RM] = (void *)((uint8_t *)wq + sizeof(__m256i) * RM * (size_t)nb);
  const uint8_t *wp = w, *ap = act;
  for (int64_t p0 = 0; p0 < na; p0 += 2 * panel_pairs) {
    const int64_t p1 = na - p0 < 2 * panel_pairs ? na : p0 + 2 * panel_pairs;
    lf_pack_pairs(ap, a_stride, p0, p1, nb, pairs);
    for (int64_t r = 0; r < nw; r += RM) {
      const int rm = nw - r < RM ? (int)(nw - r) : RM;
      lf_unpack_rows(wp + (size_t)r * w_stride, w_stride, rm, nb, wq, dw);
      for (int64_t a = p0; a < p1; a += 2 * LF_TILE_P) {
        const int64_t left = p1 - a;
        const int rows = left < 2 * LF_TILE_P ? (int)left : 2 * LF_TILE_P;
        const int p = (rows + 1) / 2;
        const bool odd = rows % 2 != 0;
        const lf_pair *pp = pairs + (size_t)((a - p0) / 2) * (size_t)nb;
        float *o = out + (size_t)a * out_stride + (size_t)r;
#define PT(M, P)                                                               \
  lf_panel_tile(nb, (const __m256i(*)[RM])wq, (const float(*)[RM])dw, M, pp,   \
                P, odd, o, out_stride)
        switch (rm * 4 + (p - 1)) {
        case 16 + 3: PT(4, 4); break;
        case 16 + 2: PT(4, 3); break;
        case 16 + 1: PT(4, 2); break;
        case 16: PT(4, 1); break;
        case 12 + 3: PT(3, 4); break;
        case 12 + 2: PT(3, 3); break;
        case 12 + 1: PT(3, 2); break;
        case 12: PT(3, 1); break;
        case 8 + 3: PT(2, 4); break;
        case 8 + 2: PT(2, 3); break;
        case 8 + 1: PT(2, 2); break;
        case 8: PT(2, 1); break;
        case 4 + 3: PT(1, 4); break;
        case 4 + 2: PT(1, 3); break;
        case 4 + 1: PT(1, 2); break;
        default: PT(1, 1); break;
        }
#undef PT
      }
    }
  }
  free(mem);
}
