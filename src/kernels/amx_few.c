/* amx_few: the amx table's Q4_0, Q4_1 and Q8_0 matmuls of a few activation
 * rows (a speculative step's fed token and drafts, a few streams' decode
 * rows: more than NC_AMX_GEMV_MAX_A, at most NC_AMX_FEW_MAX_A) on the tile
 * unit, in block order (ref_block.c): the same bits as amx_gemv.c and
 * amx_gemm.c.
 *
 * amx_gemm.c puts 16 activation rows in the A tile and unpacks each weight
 * block into a B tile (the "VNNI" layout: a transpose), then runs the float
 * steps per activation row, 16 weight rows per vector. With few activation
 * rows the transpose is a fixed cost per weight block that few rows share,
 * and amx_gemv.c's VNNI sums cost per activation row. Here the tiles go the
 * other way round:
 * - A: 16 weight rows x one 32-block, row-major, as the weights lie: Q8_0's
 *   quants load straight from the rows (the row as the stride); Q4_0's and
 *   Q4_1's nibbles are split into bytes (no transpose) into a panel first,
 *   Q4_0's minus 8;
 * - B: the R activation rows' same block in the VNNI layout (row k = dword
 *   k of each activation row), built once per call;
 * - C = A x B (tdpbssd): 16 x R exact block sums, stored with rows of 4R
 *   bytes, so R vectors of 16 (weight row, activation row) pairs: lane j of
 *   vector v is pair f = 16v + j, weight row f / R, activation row f % R.
 * Each block's float steps run on those R vectors:
 *   acc = fma((float)C, d_w * d_a, acc) (+ Q4_1: fma(m_w, s_a, acc))
 * with d_w and m_w permuted into the pairs' order per block and d_a, s_a
 * laid out in it with B: per (weight row, activation row) the operations
 * of amx_gemv.c, in the same order. Rows past the last whole 16 use the
 * plain-C reference. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "amx_tiles.h"
#include "avx2_util.h"
#include "avx512_pairs.h"
#include "ref.h"
#include "tables.h"

enum {
  RING = 4,
  MAX_R = TILE,        /* activation rows in one B tile */
  MAX_BLOCKS = 1024,   /* n <= 32768: longer rows use the reference */
  B_BYTES = 8 * 64,    /* a B tile: 8 rows (k) of up to 64 bytes */
  A_BYTES = TILE * 32, /* an A tile: 16 weight rows x 32 quants */
  PANEL_BLOCK = A_BYTES + 2 * TILE * (int)sizeof(float), /* + d_w, m_w */
};

typedef enum { FEW_Q4_0, FEW_Q4_1, FEW_Q8_0 } few_type;

/* The R activation rows, per block: the B tile; d_a and s_a in the pairs'
 * order (R vectors each); and per vector the weight row of each lane. */
typedef struct few_act {
  uint8_t *b;
  __m512 *da, *sa;
  _Alignas(64) int32_t row_of[MAX_R][TILE];
  void *mem;
} few_act;

/* Built once per call: per block, the B tile from the rows' quants (row
 * pairs dword-interleaved, then transpose_qwords: row k of B = dword k of
 * each activation row; rows past na are 0), and d_a, s_a from one header
 * gather, permuted into the pairs' order. */
static bool few_act_new(few_act *fa, const uint8_t *a, size_t a_stride, int na,
                        int R, int64_t nb, bool has_min) {
  const size_t abytes = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
  const size_t aq = has_min ? 4 : 2;
  const size_t bb = (size_t)B_BYTES * (size_t)nb;
  const size_t vb = sizeof(__m512) * (size_t)R * (size_t)nb;
  fa->mem = aligned_alloc(64, bb + 2 * vb);
  if (!fa->mem) return false;
  fa->b = fa->mem;
  fa->da = (__m512 *)(void *)((uint8_t *)fa->mem + bb);
  fa->sa = fa->da + (size_t)R * (size_t)nb;
  _Alignas(64) int32_t act_of[MAX_R][TILE];
  for (int v = 0; v < R; v++)
    for (int j = 0; j < TILE; j++) {
      fa->row_of[v][j] = (TILE * v + j) / R;
      act_of[v][j] = (TILE * v + j) % R;
    }
  const __m512i pair_idx =
      _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hdr = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)a_stride));
  const __mmask16 live = (__mmask16)((1u << na) - 1);
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *bi = a + (size_t)i * abytes;
    __m512i v[8], t[8];
    for (int p = 0; p < 8; p++) {
      const int k0 = 2 * p, k1 = 2 * p + 1;
      const __m256i r0 =
          k0 < na ? _mm256_loadu_si256(
                        (const void *)(bi + (size_t)k0 * a_stride + aq))
                  : _mm256_setzero_si256();
      const __m256i r1 =
          k1 < na ? _mm256_loadu_si256(
                        (const void *)(bi + (size_t)k1 * a_stride + aq))
                  : _mm256_setzero_si256();
      v[p] = _mm512_permutex2var_epi32(_mm512_castsi256_si512(r0), pair_idx,
                                       _mm512_castsi256_si512(r1));
    }
    transpose_qwords(v, t);
    for (int q = 0; q < 8; q++)
      _mm512_store_si512(fa->b + (size_t)i * B_BYTES + 64 * q, t[q]);
    const __m512i h =
        _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, hdr, bi, 1);
    const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
    const __m512 s =
        has_min
            ? _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16)))
            : _mm512_setzero_ps();
    for (int u = 0; u < R; u++) {
      const __m512i idx = _mm512_load_si512(act_of[u]);
      fa->da[(size_t)i * (size_t)R + (size_t)u] = _mm512_permutexvar_ps(idx, d);
      fa->sa[(size_t)i * (size_t)R + (size_t)u] = _mm512_permutexvar_ps(idx, s);
    }
  }
  return true;
}

/* Palette 1 for R activation rows: C (tmm0, tmm1) 16 x 4R bytes, A (tmm4,
 * tmm5) 16 x 32, B (tmm6, tmm7) 8 x 4R. */
static inline void few_configure(int R) {
  tile_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  const uint8_t rows[8] = {TILE, TILE, 0, 0, TILE, TILE, 8, 8};
  const uint16_t c = (uint16_t)(4 * R);
  const uint16_t colsb[8] = {c, c, 0, 0, 32, 32, c, c};
  memcpy(cfg.rows, rows, sizeof rows);
  memcpy(cfg.colsb, colsb, sizeof colsb);
  __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

/* 16 Q4_0 / Q4_1 weight rows -> the panel: per block the A tile (each row's
 * 32 quants as bytes in element order: its 16 low nibbles, then its 16
 * high ones; Q4_0's minus 8), then d_w and m_w of the 16 rows as floats. */
static inline __attribute__((always_inline)) void
pack_nibbles(const uint8_t *w, size_t w_stride, int64_t nb, size_t bsize,
             size_t qoff, bool offset8, bool has_min, uint8_t *panel) {
  const __m512i hdr = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)w_stride));
  const __m512i rows01 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i rows23 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const uint8_t *pf = nc_prefetch_base(w, TILE * w_stride);
  const size_t pf_step = TILE * bsize;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *bi = w + (size_t)i * bsize;
    nc_prefetch_lines(pf + (size_t)i * pf_step, pf_step);
    uint8_t *pb = panel + (size_t)i * PANEL_BLOCK;
#pragma GCC unroll 4
    for (int r = 0; r < TILE; r += 4) {
      const uint8_t *q = bi + (size_t)r * w_stride + qoff;
      __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const void *)q));
      v = _mm512_inserti32x4(v, _mm_loadu_si128((const void *)(q + w_stride)),
                             1);
      v = _mm512_inserti32x4(
          v, _mm_loadu_si128((const void *)(q + 2 * w_stride)), 2);
      v = _mm512_inserti32x4(
          v, _mm_loadu_si128((const void *)(q + 3 * w_stride)), 3);
      __m512i lo = _mm512_and_si512(v, m4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      if (offset8) {
        lo = _mm512_sub_epi8(lo, _mm512_set1_epi8(8));
        hi = _mm512_sub_epi8(hi, _mm512_set1_epi8(8));
      }
      _mm512_store_si512(pb + 32 * r,
                         _mm512_permutex2var_epi64(lo, rows01, hi));
      _mm512_store_si512(pb + 32 * r + 64,
                         _mm512_permutex2var_epi64(lo, rows23, hi));
    }
    const __m512i h = _mm512_i32gather_epi32(hdr, bi, 1);
    float *f = (float *)(void *)(pb + A_BYTES);
    _mm512_store_ps(f, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)));
    if (has_min)
      _mm512_store_ps(f + TILE, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
                                    _mm512_srli_epi32(h, 16))));
  }
}

/* One block's float steps on the R vectors of pairs (see the top). */
static inline __attribute__((always_inline)) void
few_scale(__m512 acc[], const int32_t *c, __m512 dw, __m512 mw,
          const __m512 *da, const __m512 *sa, const few_act *fa, bool has_min,
          const int R) {
#pragma GCC unroll 16
  for (int v = 0; v < R; v++) {
    const __m512i rows = _mm512_load_si512(fa->row_of[v]);
    const __m512 ci = _mm512_cvtepi32_ps(_mm512_load_si512(c + TILE * v));
    const __m512 dd = _mm512_mul_ps(_mm512_permutexvar_ps(rows, dw), da[v]);
    acc[v] = _mm512_fmadd_ps(ci, dd, acc[v]);
    if (has_min)
      acc[v] = _mm512_fmadd_ps(_mm512_permutexvar_ps(rows, mw), sa[v], acc[v]);
  }
}

/* 16 weight rows (at w; Q4_0/Q4_1 unpacked in panel) x the R activation
 * rows: out[a * out_stride + r] for the na < R live ones. */
static inline __attribute__((always_inline)) void
few_tile(few_type t, int64_t nb, const uint8_t *w, size_t w_stride,
         const uint8_t *panel, const few_act *fa, int na, const int R,
         int32_t (*cbuf)[TILE * MAX_R], float *out, size_t out_stride) {
  const bool has_min = t == FEW_Q4_1;
  const __m512i hdr = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)w_stride));
  const uint8_t *pf = nc_prefetch_base(w, TILE * w_stride);
  const size_t pf_step = TILE * sizeof(block_q8_0);
  __m512 acc[MAX_R];
#pragma GCC unroll 16
  for (int v = 0; v < R; v++)
    acc[v] = _mm512_setzero_ps();
  /* the panel and B tiles are written: the tile loads below read them */
  __asm__ volatile("" ::: "memory");
#define STEP(c, ta, tb, s)                                                     \
  do {                                                                         \
    if (t == FEW_Q8_0) {                                                       \
      nc_prefetch_lines(pf + (size_t)(s)*pf_step, pf_step);                    \
      TILE_LOAD(ta, w + (size_t)(s) * sizeof(block_q8_0) + 2, w_stride);       \
    } else {                                                                   \
      TILE_LOAD(ta, panel + (size_t)(s)*PANEL_BLOCK, 32);                      \
    }                                                                          \
    TILE_LOAD(tb, fa->b + (size_t)(s)*B_BYTES, 64);                            \
    TILE_ZERO(c);                                                              \
    TILE_DPBSSD(c, ta, tb);                                                    \
  } while (0)
#define SCALE(s)                                                               \
  do {                                                                         \
    __m512 dw_, mw_ = _mm512_setzero_ps();                                     \
    if (t == FEW_Q8_0) {                                                       \
      dw_ = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(      \
          hdr, w + (size_t)(s) * sizeof(block_q8_0), 1)));                     \
    } else {                                                                   \
      const float *f_ =                                                        \
          (const float *)(const void *)(panel + (size_t)(s)*PANEL_BLOCK +      \
                                        A_BYTES);                              \
      dw_ = _mm512_load_ps(f_);                                                \
      if (has_min) mw_ = _mm512_load_ps(f_ + TILE);                            \
    }                                                                          \
    few_scale(acc, cbuf[(s) % RING], dw_, mw_,                                 \
              fa->da + (size_t)(s) * (size_t)R,                                \
              fa->sa + (size_t)(s) * (size_t)R, fa, has_min, R);               \
  } while (0)
  NC_TILE_PIPELINE_STRIDE(nb, RING, cbuf, 4 * R, STEP, SCALE);
#undef SCALE
#undef STEP
  /* pair f = m * R + a -> out[a][m] */
  _Alignas(64) float pairs[TILE * MAX_R];
#pragma GCC unroll 16
  for (int v = 0; v < R; v++)
    _mm512_store_ps(pairs + TILE * v, acc[v]);
  const __m512i m_r = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(R));
  for (int a = 0; a < na; a++)
    _mm512_storeu_ps(
        out + (size_t)a * out_stride,
        _mm512_i32gather_ps(_mm512_add_epi32(m_r, _mm512_set1_epi32(a)), pairs,
                            4));
}

/* The rows a call of na activation rows runs its steps for: na up to 9
 * (a speculative step of up to 8 drafts), else 16 (the extra B columns
 * are 0; fewer variants of the pipeline). */
static inline int few_rows(int na) {
  return na <= 9 ? na : MAX_R;
}

/* More than 16 activation rows go in groups of 16 (the last one the
 * rest), each group against every 16 weight rows in turn: the weight rows
 * (their A tiles, Q4's unpacked panel) stream from memory once, the
 * groups after the first reading them from the cache. */
enum { MAX_GROUPS = (NC_AMX_FEW_MAX_A + MAX_R - 1) / MAX_R };

/* The activation rows of group g of na. */
static inline int group_rows(int na, int g) {
  return na - g * MAX_R < MAX_R ? na - g * MAX_R : MAX_R;
}

static inline __attribute__((always_inline)) void
few(few_type t, int64_t n, const void *wv, size_t w_stride, int64_t nw,
    const void *av, size_t a_stride, int na, float *out, size_t out_stride,
    size_t bsize, nc_vec_dot_rows_fn fallback) {
  const int64_t nb = n / 32;
  const uint8_t *w = wv;
  const uint8_t *a = av;
  int64_t r = 0;
  const int R = few_rows(na);
  const int groups = (na + MAX_R - 1) / MAX_R;
  few_act fa[MAX_GROUPS];
  int made = 0;
  if (na >= 1 && na <= NC_AMX_FEW_MAX_A && nb > 0 && nb <= MAX_BLOCKS &&
      nw >= TILE) {
    for (; made < groups; made++) {
      const int g0 = made * MAX_R;
      if (!few_act_new(&fa[made], a + (size_t)g0 * a_stride, a_stride,
                       group_rows(na, made), R, nb, t == FEW_Q4_1))
        break;
    }
  }
  if (made == groups && groups > 0) {
    uint8_t *panel = t == FEW_Q8_0
                         ? NULL
                         : aligned_alloc(64, (size_t)PANEL_BLOCK * (size_t)nb);
    int32_t(*cbuf)[TILE * MAX_R] =
        aligned_alloc(64, sizeof(int32_t) * TILE * MAX_R * RING);
    if (cbuf && (panel || t == FEW_Q8_0)) {
      few_configure(R);
      for (; r + TILE <= nw; r += TILE) {
        const uint8_t *wr = w + (size_t)r * w_stride;
        if (t != FEW_Q8_0)
          pack_nibbles(wr, w_stride, nb, bsize, t == FEW_Q4_1 ? 4 : 2,
                       t == FEW_Q4_0, t == FEW_Q4_1, panel);
        for (int g = 0; g < groups; g++) {
          const int ng = group_rows(na, g);
          float *og = out + (size_t)g * MAX_R * out_stride + r;
#define T(RR)                                                                  \
  few_tile(t, nb, wr, w_stride, panel, &fa[g], ng, RR, cbuf, og, out_stride)
          switch (R) {
          case 1: T(1); break;
          case 2: T(2); break;
          case 3: T(3); break;
          case 4: T(4); break;
          case 5: T(5); break;
          case 6: T(6); break;
          case 7: T(7); break;
          case 8: T(8); break;
          case 9: T(9); break;
          default: T(MAX_R); break;
          }
#undef T
        }
      }
      tiles_release();
    }
    free(cbuf);
    free(panel);
  }
  for (int g = 0; g < made; g++)
    free(fa[g].mem);
  nc_il_rows_fallback(fallback, n, w + (size_t)r * w_stride, w_stride, nw - r,
                      av, a_stride, na, out + r, out_stride);
}

void nc_amx_few_q4_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                     const void *a, size_t a_stride, int na, float *out,
                     size_t out_stride) {
  few(FEW_Q4_0, n, w, w_stride, nw, a, a_stride, na, out, out_stride,
      sizeof(block_q4_0), nc_ref_dot_blk_q4_0_rows);
}

void nc_amx_few_q4_1(int64_t n, const void *w, size_t w_stride, int64_t nw,
                     const void *a, size_t a_stride, int na, float *out,
                     size_t out_stride) {
  few(FEW_Q4_1, n, w, w_stride, nw, a, a_stride, na, out, out_stride,
      sizeof(block_q4_1), nc_ref_dot_blk_q4_1_rows);
}

void nc_amx_few_q8_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                     const void *a, size_t a_stride, int na, float *out,
                     size_t out_stride) {
  few(FEW_Q8_0, n, w, w_stride, nw, a, a_stride, na, out, out_stride,
      sizeof(block_q8_0), nc_ref_dot_blk_q8_0_rows);
}
