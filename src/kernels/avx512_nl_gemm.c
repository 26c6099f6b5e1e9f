/* avx512_nl_gemm: AVX-512 VNNI matmuls of the 16-value codebook types with
 * 32-blocks and Q8_0 activations (IQ4_NL, MXFP4) in the order of vec_dot
 * (ref_nl.c; IQ4_NL's decode rows, MXFP4 always), bit-identical to it and
 * so to avx512_nl.c's dots: per output a zmm whose low half takes the even
 * blocks and the high half the odd ones, acc = fma(d_a * d_w, (float)lane,
 * acc); hsum8(lo + hi); a last odd block as sum = fma(d_a * d_w, (float)S,
 * sum). One activation row (decode: a mixture's experts at one token):
 * the row's block pairs and d_a made once, d_w x d_a per 16 blocks of a
 * weight row from one gather, each block pair's codes looked up from two
 * broadcast loads (row1_gemm). Two activation rows: register tiles of 4
 * weight rows x 2 activation rows straight from the rows: a block pair's
 * lookup (avx512_nl_lookup.h) serves the tile's activation rows, an
 * activation pair (and its lane sums) the tile's weight rows. From 3 rows
 * (MXFP4's prompts and a mixture's experts, IQ4_NL's short prompt tails)
 * the same order from panels made once: 4 x 4 tiles that only load,
 * multiply and add. */
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
/* One output of the paired order: the accumulator's lanes summed (both
 * halves' blocks), then the last, odd block (block nb - 1) when there is
 * one, as one more scaled product. */
static inline __attribute__((always_inline)) float
pair_sum(const nl_kind *k, __m512i table, __m512i shifts, __m512 acc,
         const uint8_t *w_row, const block_q8_0 *y, int64_t nb, bool odd) {
  float sumf = nc_hsum8(_mm256_add_ps(_mm512_castps512_ps256(acc),
                                      _mm512_extractf32x8_ps(acc, 1)));
  if (odd) {
    const int64_t i = nb - 1;
    const uint8_t *b = w_row + (size_t)i * k->bsize;
    const __m512i av = join(y[i].qs, y[i].qs);
    const __m512i l = _mm512_dpbusd_epi32(
        offset_start(av), lookup_twice(table, shifts, b + k->qs_off), av);
    const int32_t s = hsum_i256(_mm512_castsi512_si256(l));
    sumf = fmaf(H2F(y[i].d) * block_scale(k, b), (float)s, sumf);
  }
  return sumf;
}

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
      out[(size_t)a * out_stride + (size_t)r] = pair_sum(
          k, table, shifts, acc[r][a], w + (size_t)r * w_stride, y, nb, i < nb);
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

/* The same order from prepared panels (3+ activation rows: MXFP4's
 * prompts, a mixture's experts). Per activation row and block pair: the two
 * blocks' 64 quants, their lane starts (offset_start) and the two d_a
 * (join_ps), made once per panel and read by every weight tile; a tile's 4
 * weight rows looked up once per panel (64 bytes + 128 and the two d_w per
 * block pair). The tile loop then only loads, and per output and block pair
 * runs vpdpbusd, mul, cvt and fma; an odd last block as paired_tile. */
typedef struct pp_act {
  __m512i a, start;
  __m512 dy;
} pp_act;

typedef struct pp_w {
  __m512i q;
  __m512 d;
} pp_w;

enum {
  PP_PANEL_BYTES = 512 * 1024, /* a panel's activation pairs (in L2) */
  PP_PANEL_ROWS = 64,
  PP_TILE_A = 4,   /* activation rows per register tile */
  PP_MIN_ROWS = 3, /* fewer: paired_gemm straight from the rows */
};

static void pp_pack_act(const uint8_t *ap, size_t a_stride, int64_t a0,
                        int64_t a1, int64_t nbp, pp_act *pa) {
  for (int64_t a = a0; a < a1; a++) {
    const block_q8_0 *y = (const void *)(ap + (size_t)a * a_stride);
    pp_act *p = pa + (size_t)(a - a0) * (size_t)nbp;
    for (int64_t k = 0; k < nbp; k++) {
      const __m512i av = join(y[2 * k].qs, y[2 * k + 1].qs);
      _mm512_store_si512(&p[k].a, av);
      _mm512_store_si512(&p[k].start, offset_start(av));
      _mm512_store_ps(&p[k].dy, join_ps(H2F(y[2 * k].d), H2F(y[2 * k + 1].d)));
    }
  }
}

static void pp_unpack_rows(const nl_kind *k, const int8_t vals[16],
                           const uint8_t *w, size_t w_stride, int rm,
                           int64_t nbp, pp_w (*pw)[RM]) {
  const __m512i table = unsigned_table(vals), shifts = nibble_shifts();
  const size_t bs = k->bsize, qo = k->qs_off;
  for (int r = 0; r < rm; r++)
    for (int64_t i = 0; i < nbp; i++) {
      const uint8_t *b0 = w + (size_t)r * w_stride + (size_t)(2 * i) * bs;
      _mm512_store_si512(&pw[i][r].q,
                         lookup_pair(table, shifts, b0 + qo, b0 + bs + qo));
      _mm512_store_ps(&pw[i][r].d,
                      join_ps(block_scale(k, b0), block_scale(k, b0 + bs)));
    }
}

/* Weight rows [0, rm) of the unpacked tile against activation rows
 * [0, ra) of the panel (y: their rows, for an odd last block). */
static inline __attribute__((always_inline)) void
pp_tile(const nl_kind *k, const int8_t vals[16], int64_t nb,
        const pp_w (*pw)[RM], const uint8_t *w, size_t w_stride, const int rm,
        const pp_act *pa, const uint8_t *act, size_t a_stride, const int ra,
        float *out, size_t out_stride) {
  const int64_t nbp = nb / 2;
  __m512 acc[RM][PP_TILE_A];
#pragma GCC unroll 4
  for (int r = 0; r < rm; r++)
#pragma GCC unroll 4
    for (int a = 0; a < ra; a++)
      acc[r][a] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nbp; i++) {
    __m512i wv[RM];
    __m512 dw[RM];
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++) {
      wv[r] = _mm512_load_si512(&pw[i][r].q);
      dw[r] = _mm512_load_ps(&pw[i][r].d);
    }
#pragma GCC unroll 4
    for (int a = 0; a < ra; a++) {
      const pp_act *p = pa + (size_t)a * (size_t)nbp + (size_t)i;
      const __m512 dy = _mm512_load_ps(&p->dy);
#pragma GCC unroll 4
      for (int r = 0; r < rm; r++) {
        const __m512i l = _mm512_dpbusd_epi32(_mm512_load_si512(&p->start),
                                              wv[r], _mm512_load_si512(&p->a));
        acc[r][a] = _mm512_fmadd_ps(_mm512_mul_ps(dy, dw[r]),
                                    _mm512_cvtepi32_ps(l), acc[r][a]);
      }
    }
  }
  const __m512i table = unsigned_table(vals), shifts = nibble_shifts();
#pragma GCC unroll 4
  for (int a = 0; a < ra; a++) {
    const block_q8_0 *y = (const block_q8_0 *)(act + (size_t)a * a_stride);
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++) {
      out[(size_t)a * out_stride + (size_t)r] =
          pair_sum(k, table, shifts, acc[r][a], w + (size_t)r * w_stride, y, nb,
                   nb % 2 != 0);
    }
  }
}

/* paired_gemm's order through panels; false when there is no memory for
 * them (the caller then runs paired_gemm). */
static inline __attribute__((always_inline)) bool
paired_panel_gemm(const nl_kind *k, const int8_t vals[16], int64_t n,
                  const void *w, size_t w_stride, int64_t nw, const void *act,
                  size_t a_stride, int64_t na, float *out, size_t out_stride) {
  const int64_t nb = n / 32, nbp = nb / 2;
  if (nbp < 1) return false;
  int64_t panel = PP_PANEL_BYTES / ((int64_t)sizeof(pp_act) * nbp);
  panel = panel < 1 ? 1 : panel > PP_PANEL_ROWS ? PP_PANEL_ROWS : panel;
  if (na < panel) panel = na;
  const size_t act_bytes = sizeof(pp_act) * (size_t)nbp * (size_t)panel;
  const size_t w_bytes = sizeof(pp_w) * RM * (size_t)nbp;
  void *mem = aligned_alloc(64, act_bytes + w_bytes);
  if (!mem) return false;
  pp_act *pa = mem;
  pp_w(*pw)[RM] = (void *)((uint8_t *)mem + act_bytes);
  const uint8_t *wp = w, *ap = act;
  for (int64_t p0 = 0; p0 < na; p0 += panel) {
    const int64_t p1 = na - p0 < panel ? na : p0 + panel;
    pp_pack_act(ap, a_stride, p0, p1, nbp, pa);
    for (int64_t r = 0; r < nw; r += RM) {
      const int rm = nw - r < RM ? (int)(nw - r) : RM;
      const uint8_t *wr = wp + (size_t)r * w_stride;
      pp_unpack_rows(k, vals, wr, w_stride, rm, nbp, pw);
      for (int64_t a = p0; a < p1; a += PP_TILE_A) {
        const int ra = p1 - a < PP_TILE_A ? (int)(p1 - a) : PP_TILE_A;
        const pp_act *pt = pa + (size_t)(a - p0) * (size_t)nbp;
        const uint8_t *y = ap + (size_t)a * a_stride;
        float *o = out + (size_t)a * out_stride + (size_t)r;
#define PT(M, A)                                                               \
  pp_tile(k, vals, nb, (const pp_w(*)[RM])pw, wr, w_stride, M, pt, y,          \
          a_stride, A, o, out_stride)
        switch (rm * 4 + (ra - 1)) {
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
  return true;
}

/* The same order for one activation row (decode: paired_tile at one row
 * spent most of its steps on what one row cannot share: per weight row
 * and block pair two scalar scale conversions joined into a vector, the
 * d_a x d_w multiply, and the lookup's inserts and shuffles). Made once
 * per call: the row's block pairs (64 quants and their lane starts) and
 * its d_a. Per weight row and 16 blocks: the 16 scales from one gather,
 * d = d_a x d_w in one vector (MXFP4's E8M0 e: d_a x 2^(e - 128) by
 * vscalefps, the exact product rounded once as the multiply by
 * nc_e8m0_to_fp32_half(e) = 2^(e - 128) rounds it; IQ4_NL's half by
 * vcvtph2ps and the multiply), kept for the block pairs. Per weight row
 * and block pair: the two blocks' 16 code bytes by a broadcast load and a
 * masked one, shift, mask, lookup; d as a broadcast and a masked one;
 * vpdpbusd from the pair's start, cvt, fma. Then pair_sum as the tiles. */
enum {
  R1_RM = 4,     /* weight rows per tile */
  R1_CHUNK = 16, /* blocks per gather of scales */
};

typedef struct r1_act {
  __m512i a, start;
} r1_act;

/* d_a x d_w for blocks [0, m) from blk (m <= R1_CHUNK) in lanes 0..m-1
 * (the others 0 x the scale of no block: unused). */
static inline __attribute__((always_inline)) __m512
r1_scales(const nl_kind *k, const uint8_t *blk, int m, __m512 dy) {
  const __m512i idx = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)k->bsize));
  const __mmask16 mk =
      m >= R1_CHUNK ? (__mmask16)0xffff : (__mmask16)((1u << m) - 1);
  const __m512i x =
      _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mk, idx, blk, 1);
  if (k->e8m0) {
    /* (x & 0xff) | 0x4b000000 is 2^23 + e; less 2^23 + 128: e - 128 */
    const __m512 big = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
        x, _mm512_set1_epi32(0xff), _mm512_set1_epi32(0x4b000000), 0xea));
    return _mm512_scalef_ps(dy, _mm512_sub_ps(big, _mm512_set1_ps(8388736.0f)));
  }
  return _mm512_mul_ps(dy, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(x)));
}

/* Weight rows [0, rm) against the prepared activation row. */
static inline __attribute__((always_inline)) void
r1_tile(const nl_kind *k, __m512i table, __m512i shifts, int64_t nb,
        const uint8_t *w, size_t w_stride, const int rm, const r1_act *pa,
        const float *dyf, const block_q8_0 *y, float *out) {
  const int64_t nbp = nb / 2;
  const size_t bs = k->bsize, qo = k->qs_off;
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  _Alignas(64) float d[R1_RM][R1_CHUNK];
  __m512 acc[R1_RM];
#pragma GCC unroll 4
  for (int r = 0; r < rm; r++)
    acc[r] = _mm512_setzero_ps();
  const uint8_t *pf = nc_prefetch_base(w, (size_t)rm * w_stride);
  for (int64_t c = 0; c < nbp; c += R1_CHUNK / 2) {
    const int64_t b0 = 2 * c;
    const int m = 2 * nbp - b0 < R1_CHUNK ? (int)(2 * nbp - b0) : R1_CHUNK;
    const __m512 dy = _mm512_load_ps(dyf + b0);
#pragma GCC unroll 4
    for (int r = 0; r < rm; r++)
      _mm512_store_ps(
          d[r],
          r1_scales(k, w + (size_t)r * w_stride + (size_t)b0 * bs, m, dy));
    for (int j = 0; j < m; j += 2) {
      const int64_t i = b0 + j; /* the pair's first block */
#pragma GCC unroll 4
      for (int r = 0; r < rm; r++)
        nc_prefetch_lines(pf + (size_t)r * w_stride + (size_t)i * bs, 2 * bs);
      const r1_act *p = pa + i / 2;
#pragma GCC unroll 4
      for (int r = 0; r < rm; r++) {
        const uint8_t *q = w + (size_t)r * w_stride + (size_t)i * bs + qo;
        __m512i b = _mm512_broadcast_i32x4(_mm_loadu_si128((const void *)q));
        b = _mm512_mask_broadcast_i32x4(
            b, 0xff00, _mm_loadu_si128((const void *)(q + bs)));
        const __m512i wv = _mm512_shuffle_epi8(
            table, _mm512_and_si512(_mm512_srlv_epi16(b, shifts), m4));
        __m512 dd = _mm512_set1_ps(d[r][j]);
        dd = _mm512_mask_broadcastss_ps(dd, 0xff00, _mm_load_ss(&d[r][j + 1]));
        /* the start loaded for each row (no register copies) */
        __m512i l;
        __asm__("vmovdqa64 %1, %0\n\tvpdpbusd %3, %2, %0"
                : "=&v"(l)
                : "m"(p->start), "v"(wv), "m"(p->a));
        acc[r] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(l), acc[r]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < rm; r++)
    out[r] = pair_sum(k, table, shifts, acc[r], w + (size_t)r * w_stride, y, nb,
                      nb % 2 != 0);
}

/* Every weight row against one activation row; false when there is no
 * memory for the prepared row (the caller then runs paired_gemm). */
static inline __attribute__((always_inline)) bool
row1_gemm(const nl_kind *k, const int8_t vals[16], int64_t n, const void *w,
          size_t w_stride, int64_t nw, const void *act, float *out) {
  const int64_t nb = n / 32, nbp = nb / 2;
  if (nbp < 1) return false;
  const int64_t nd = (2 * nbp + R1_CHUNK - 1) / R1_CHUNK * R1_CHUNK;
  const size_t act_bytes = sizeof(r1_act) * (size_t)nbp;
  void *mem = aligned_alloc(64, act_bytes + sizeof(float) * (size_t)nd);
  if (!mem) return false;
  r1_act *pa = mem;
  float *dyf = (float *)((uint8_t *)mem + act_bytes);
  const block_q8_0 *y = act;
  for (int64_t i = 0; i < nbp; i++) {
    const __m512i av = join(y[2 * i].qs, y[2 * i + 1].qs);
    _mm512_store_si512(&pa[i].a, av);
    _mm512_store_si512(&pa[i].start, offset_start(av));
  }
  for (int64_t b = 0; b < nd; b++)
    dyf[b] = b < 2 * nbp ? H2F(y[b].d) : 0.0f;
  const __m512i table = unsigned_table(vals), shifts = nibble_shifts();
  const uint8_t *wp = w;
  for (int64_t r = 0; r < nw; r += R1_RM) {
    const uint8_t *wr = wp + (size_t)r * w_stride;
    const int rm = nw - r < R1_RM ? (int)(nw - r) : R1_RM;
#define RT(M)                                                                  \
  r1_tile(k, table, shifts, nb, wr, w_stride, M, pa, dyf, y, out + r)
    switch (rm) {
    case 4: RT(4); break;
    case 3: RT(3); break;
    case 2: RT(2); break;
    default: RT(1); break;
    }
#undef RT
  }
  free(mem);
  return true;
}

void nc_avx512_gemm_iq4_nl(int64_t n, const void *w, size_t w_stride,
                           int64_t nw, const void *act, size_t a_stride,
                           int64_t na, float *out, size_t out_stride) {
  if (na == 1 &&
      row1_gemm(&k_iq4nl, nc_iq4nl_values, n, w, w_stride, nw, act, out))
    return;
  if (na >= PP_MIN_ROWS &&
      paired_panel_gemm(&k_iq4nl, nc_iq4nl_values, n, w, w_stride, nw, act,
                        a_stride, na, out, out_stride))
    return;
  paired_gemm(&k_iq4nl, nc_iq4nl_values, n, w, w_stride, nw, act, a_stride, na,
              out, out_stride);
}

void nc_avx512_gemm_mxfp4(int64_t n, const void *w, size_t w_stride, int64_t nw,
                          const void *act, size_t a_stride, int64_t na,
                          float *out, size_t out_stride) {
  if (na == 1 &&
      row1_gemm(&k_mxfp4, nc_mxfp4_values, n, w, w_stride, nw, act, out))
    return;
  if (na >= PP_MIN_ROWS &&
      paired_panel_gemm(&k_mxfp4, nc_mxfp4_values, n, w, w_stride, nw, act,
                        a_stride, na, out, out_stride))
    return;
  paired_gemm(&k_mxfp4, nc_mxfp4_values, n, w, w_stride, nw, act, a_stride, na,
              out, out_stride);
}
