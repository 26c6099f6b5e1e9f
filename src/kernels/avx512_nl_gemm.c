/* avx512_nl_gemm: AVX-512 VNNI matmuls of the 16-value codebook types with
 * 32-blocks and Q8_0 activations (IQ4_NL, MXFP4) in the order of vec_dot
 * (ref_nl.c; IQ4_NL's decode rows, MXFP4 always), bit-identical to it and
 * so to avx512_nl.c's dots: per output a zmm whose low half takes the even
 * blocks and the high half the odd ones, acc = fma(d_a * d_w, (float)lane,
 * acc); hsum8(lo + hi); a last odd block as sum = fma(d_a * d_w, (float)S,
 * sum). Register tiles of 4 weight rows x 2 activation rows: a block
 * pair's lookup (avx512_nl_lookup.h) serves the tile's activation rows, an
 * activation pair (and its lane sums) the tile's weight rows. */
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
  RM = 4,      /* weight rows per register tile */
  PAIR_RA = 2, /* activation rows per tile */
  PANEL = 64,  /* activation rows per panel (kept in L2) */
};

typedef struct nl_kind {
  size_t bsize, qs_off;
  bool e8m0; /* MXFP4's E8M0 scale, else IQ4_NL's half */
} nl_kind;

static const nl_kind k_iq4nl = {sizeof(block_iq4_nl),
                                offsetof(block_iq4_nl, qs), false};
static const nl_kind k_mxfp4 = {sizeof(block_mxfp4), offsetof(block_mxfp4, qs),
                                true};

static inline float block_scale(const nl_kind *k, const uint8_t *b) {
  if (k->e8m0) return nc_e8m0_to_fp32_half(b[0]);
  nc_fp16 d;
  memcpy(&d, b, sizeof d);
  return H2F(d);
}

/* The 16 values + 128 as unsigned bytes, in every 128-bit lane. */
/* Weight rows w[0..rm) against activation rows y[0..ra), out[a][r] at
 * out + a * out_stride + r. */
static inline __attribute__((always_inline)) void
paired_tile(const nl_kind *k, const int8_t vals[16], int64_t nb,
            const uint8_t *w, size_t w_stride, const int rm, const uint8_t *act,
            size_t a_stride, const int ra, float *out, size_t out_stride) {
  const __m512i table = unsigned_table(vals), shifts = nibble_shifts();
  const size_t bs = k->bsize, qo = k->qs_off;
  __m512 acc[RM][PAIR_RA];
#pragma GCC unroll 4
  for (int r = 0; r < rm; r++)
#pragma GCC unroll 4
    for (int a = 0; a < ra; a++)
      acc[r][a] = _mm512_setzero_ps();
  /* the rows ahead, 2 blocks of the tile's rows per block pair */
  const uint8_t *pf = nc_prefetch_base(w, (size_t)rm * w_stride);
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++)
      nc_prefetch_lines(pf + (size_t)r * w_stride + (size_t)i * bs, 2 * bs);
    __m512i av[PAIR_RA], a0[PAIR_RA];
    __m512 dy[PAIR_RA];
#pragma GCC unroll 4
    for (int a = 0; a < ra; a++) {
      const block_q8_0 *y = (const block_q8_0 *)(act + (size_t)a * a_stride);
      av[a] = join(y[i].qs, y[i + 1].qs);
      a0[a] = offset_start(av[a]);
      dy[a] = join_ps(H2F(y[i].d), H2F(y[i + 1].d));
    }
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++) {
      const uint8_t *b0 = w + (size_t)r * w_stride + (size_t)i * bs;
      const __m512i wv = lookup_pair(table, shifts, b0 + qo, b0 + bs + qo);
      const __m512 dw = join_ps(block_scale(k, b0), block_scale(k, b0 + bs));
#pragma GCC unroll 4
      for (int a = 0; a < ra; a++) {
        const __m512i l = _mm512_dpbusd_epi32(a0[a], wv, av[a]);
        acc[r][a] = _mm512_fmadd_ps(_mm512_mul_ps(dy[a], dw),
                                    _mm512_cvtepi32_ps(l), acc[r][a]);
      }
    }
  }
#pragma GCC unroll 4
  for (int a = 0; a < ra; a++) {
    const block_q8_0 *y = (const block_q8_0 *)(act + (size_t)a * a_stride);
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++) {
      float sumf =
          nc_hsum8(_mm256_add_ps(_mm512_castps512_ps256(acc[r][a]),
                                 _mm512_extractf32x8_ps(acc[r][a], 1)));
      if (i < nb) { /* the last, odd block */
        const uint8_t *b = w + (size_t)r * w_stride + (size_t)i * bs;
        const __m512i av = join(y[i].qs, y[i].qs);
        const __m512i l = _mm512_dpbusd_epi32(
            offset_start(av), lookup_twice(table, shifts, b + qo), av);
        const int32_t s = hsum_i256(_mm512_castsi512_si256(l));
        sumf = fmaf(H2F(y[i].d) * block_scale(k, b), (float)s, sumf);
      }
      out[(size_t)a * out_stride + (size_t)r] = sumf;
    }
  }
}

/* Every (activation, weight) pair in the paired order: panels of PANEL
 * activation rows, each against the weight rows RM at a time. */
static inline __attribute__((always_inline)) void
paired_gemm(const nl_kind *k, const int8_t vals[16], int64_t n, const void *w,
            size_t w_stride, int64_t nw, const void *act, size_t a_stride,
            int64_t na, float *out, size_t out_stride) {
  const uint8_t *wp = w, *ap = act;
  const int64_t nb = n / 32;
  for (int64_t p0 = 0; p0 < na; p0 += PANEL) {
    const int64_t p1 = na - p0 < PANEL ? na : p0 + PANEL;
    for (int64_t r = 0; r < nw; r += RM) {
      const uint8_t *wr = wp + (size_t)r * w_stride;
      const int rm = nw - r < RM ? (int)(nw - r) : RM;
      for (int64_t a = p0; a < p1; a += PAIR_RA) {
        const uint8_t *y = ap + (size_t)a * a_stride;
        float *o = out + (size_t)a * out_stride + (size_t)r;
        const bool two = a + 1 < p1;
#define PT(M, A)                                                               \
  paired_tile(k, vals, nb, wr, w_stride, M, y, a_stride, A, o, out_stride)
        switch (rm * 2 + two) {
        case 8 + 1: PT(4, 2); break;
        case 8: PT(4, 1); break;
        case 6 + 1: PT(3, 2); break;
        case 6: PT(3, 1); break;
        case 4 + 1: PT(2, 2); break;
        case 4: PT(2, 1); break;
        case 2 + 1: PT(1, 2); break;
        default: PT(1, 1); break;
        }
#undef PT
      }
    }
  }
}

void nc_avx512_gemm_iq4_nl(int64_t n, const void *w, size_t w_stride,
                           int64_t nw, const void *act, size_t a_stride,
                           int64_t na, float *out, size_t out_stride) {
  paired_gemm(&k_iq4nl, nc_iq4nl_values, n, w, w_stride, nw, act, a_stride, na,
              out, out_stride);
}

void nc_avx512_gemm_mxfp4(int64_t n, const void *w, size_t w_stride, int64_t nw,
                          const void *act, size_t a_stride, int64_t na,
                          float *out, size_t out_stride) {
  paired_gemm(&k_mxfp4, nc_mxfp4_values, n, w, w_stride, nw, act, a_stride, na,
              out, out_stride);
}
