/* avx512_gemv: AVX-512 VNNI matrix x vector (many weight rows, one to
 * NC_AVX512_GEMV_MAX_A = 24 activation rows: decode, alone or a few
 * sequences at once, or a speculative step's fed token and drafts; eight
 * at a time) for the 32-element block types Q4_0, Q4_1, Q5_0, Q5_1 and
 * Q8_0, bit-identical to the avx2 dots (llama.cpp's float order, see
 * avx512_gemm.c). The weights are streamed once, straight from their rows
 * (no panel: each 4 weight rows' tile serves every group of 8 activation
 * rows while it is in L1, and one-row decode is bound by memory). Up to 24
 * rows this beats avx512_gemm.c's panels on the default model (a forward
 * call of 17 rows 40 ms against 45, bench/forward_rows), which pay for
 * unpacking each panel where the rows are too few to share it.
 *
 * Layout: avx512_pairs.h, two weight rows' lanes interleaved in a zmm. The
 * activation block is stored once per call with each dword doubled, so a
 * pair's d_w * d_a vector is a single 8-byte broadcast of the two rows'
 * products, a plain load.
 *
 * Per tile of 4 rows, the block headers come first: 4 blocks x 4 rows at a
 * time (a load and a permute per row, or one gather: block_headers), in
 * block-major order, so the d_w * d_a products land in
 * memory as [block][activation][row] and the m_w values as [block][row].
 * The block loop then only loads, and the min types' m_w * s_a chains run
 * as one FMA per block for all (activation, row). Every lane sees the same
 * integers and float operations as the avx2 dot, hence the same bits; the 8
 * lanes of each row are summed by nc_hsum8 as there. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "avx2_util.h"
#include "avx512_pairs.h"
#include "tables.h"

enum {
  MAX_BLOCKS = 1024,  /* n <= 32768, as the gemm */
  MAX_A = 8,          /* activation rows per register tile */
  HALVES = MAX_A / 4, /* vectors of 4 activations x 4 tile rows */
  GROUPS = (NC_AVX512_GEMV_MAX_A + MAX_A - 1) / MAX_A,
};

/* The activation rows, prepared once per call: per block and row, the 8
 * quant dwords each doubled (y) and for the signed types the lanes'
 * starting sums (c); d_a and s_a by [activation][tile row] (d, s: per
 * block HALVES vectors of 4 activations, each value 4 times), and for one
 * row d_a 4 times per block (d1: 4 blocks x 4 rows per vector, as the
 * header gather). */
typedef struct act_rows {
  __m512i (*y)[MAX_A];
  __m512i (*c)[MAX_A];
  __m512 (*d)[HALVES], (*s)[HALVES];
  float (*d1)[4];
  /* a tile's headers (tile_headers): dd, (nb + 4) * 16 * HALVES floats;
   * mm, 2 (nb + 4) x 4 (one_row_tile's 8 rows). On the heap, not the
   * stack: a frame of 80 KB would hide the callers from a profiler's stack
   * copy (bench/profile.py). */
  float *dd;
  float (*mm)[4];
  void *mem;
} act_rows;

static bool act_rows_new(act_rows *ar, const uint8_t *a, size_t a_stride, int A,
                         int64_t nb, bool has_min, int offset_c) {
  const size_t v = sizeof(__m512i) * (size_t)nb;
  const size_t dd_bytes = 16 * HALVES * sizeof(float) * (size_t)(nb + 4);
  const size_t mm_bytes = 2 * 4 * sizeof(float) * (size_t)(nb + 4);
  const size_t bytes = 2 * v * MAX_A + 2 * v * HALVES + dd_bytes + mm_bytes +
                       4 * sizeof(float) * (size_t)nb;
  ar->mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!ar->mem) return false;
  uint8_t *p = ar->mem;
  ar->y = (void *)p, p += v * MAX_A;
  ar->c = (void *)p, p += v * MAX_A;
  ar->d = (void *)p, p += v * HALVES;
  ar->s = (void *)p, p += v * HALVES;
  ar->dd = (void *)p, p += dd_bytes;
  ar->mm = (void *)p, p += mm_bytes;
  ar->d1 = (void *)p;
  const size_t abytes = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
  const size_t aq = has_min ? 4 : 2;
  const __m512i d_idx =
      _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
  const __m512i s_idx = _mm512_add_epi32(d_idx, _mm512_set1_epi32(1));
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *bi = a + (size_t)i * abytes;
    nc_il_act_rows(bi, a_stride, A, aq, offset_c, ar->y[i], ar->c[i]);
    /* [d0 s0 d1 s1 ...] -> each d (s) 4 times, by activation row, rows
     * 4h .. 4h + 3 in half h */
    const __m512 ds = nc_il_act_scales(bi, a_stride, A);
    for (int h = 0; h < HALVES; h++) {
      const __m512i at = _mm512_set1_epi32(8 * h);
      ar->d[i][h] = _mm512_permutexvar_ps(_mm512_add_epi32(d_idx, at), ds);
      ar->s[i][h] = _mm512_permutexvar_ps(_mm512_add_epi32(s_idx, at), ds);
    }
    _mm_storeu_ps(ar->d1[i], _mm512_castps512_ps128(ar->d[i][0]));
  }
  return true;
}

/* The vectors of 4 activations x 4 tile rows that A activation rows take
 * (d, s, a block's dd, the summs). */
static inline int halves(int A) {
  return A > 4 ? 2 : 1;
}

/* The first dwords (fp16 d, then m or quants) of nblk <= 4 blocks of each
 * of rows 0..rows-1, 4 blocks x 4 rows in block-major order (dword 4b + r:
 * block b of row r; 0 for blocks past nblk and rows past rows), for block
 * types whose 4 headers lie within 64 bytes (3 bsize + 4 <= 64: Q4_0,
 * Q4_1). Each row's blocks are read whole (masked to what they span) and
 * their header words permuted into place: an AMD EPYC (Zen 5) takes about
 * 21 cycles for the one 16-dword gather this replaces, a quarter of a
 * one-row tile's time. */
static inline __attribute__((always_inline)) __m512i
block_headers(const uint8_t *w, size_t w_stride, size_t bsize, int64_t nblk,
              int rows) {
  /* word 2k + j of the result: word j of block k / 4's header */
  static const int16_t blk[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1,
                                  1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                  2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  const __m512i idx = _mm512_add_epi16(
      _mm512_mullo_epi16(_mm512_loadu_si512(blk),
                         _mm512_set1_epi16((int16_t)(bsize / 2))),
      _mm512_set1_epi32(0x00010000));
  const size_t need = (size_t)(nblk - 1) * bsize + 4; /* bytes read */
  const __mmask64 bytes = need >= 64 ? ~0ull : (1ull << need) - 1;
  __m512i h = _mm512_setzero_si512();
  for (int r = 0; r < rows; r++) {
    const __m512i v = _mm512_permutexvar_epi16(
        idx, _mm512_maskz_loadu_epi8(bytes, w + (size_t)r * w_stride));
    h = _mm512_mask_mov_epi32(h, (__mmask16)(0x1111u << r), v);
  }
  /* blocks past nblk: their words were read as 0 (past the mask) */
  return h;
}

/* Rows 0..3 of the tile: per block, d_w * d_a by [activation][row] (dd:
 * 4 floats per block for one activation row, 16 for 2 to 4, else 32) and
 * m_w by row (mm).
 * The fp16 d (and m) lead every block's first dword. */
static inline __attribute__((always_inline)) void
tile_headers(const uint8_t *w, size_t w_stride, size_t bsize, int64_t nb,
             int rows, bool has_min, const act_rows *ar, const int A, float *dd,
             float (*mm)[4]) {
  /* lanes of rows past the tile's (a 2-row tile) read nothing */
  const __mmask16 row_lanes = rows == 4 ? 0xffff : 0x3333;
  const __m512i idx = _mm512_add_epi32(
      _mm512_mullo_epi32(
          _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3),
          _mm512_set1_epi32((int)w_stride)),
      _mm512_mullo_epi32(
          _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
          _mm512_set1_epi32((int)bsize)));
  for (int64_t i = 0; i < nb; i += 4) {
    const __mmask16 k = nb - i >= 4 ? (__mmask16)0xffff
                                    : (__mmask16)((1u << (4 * (nb - i))) - 1);
    /* 4 blocks' headers in 64 bytes (Q4_0, Q4_1): a load and a permute
     * per row; else one gather (two loads and a two-source permute per
     * row measured slower for Q8_0) */
    const __m512i h =
        3 * bsize + 4 <= 64
            ? block_headers(w + (size_t)i * bsize, w_stride, bsize,
                            nb - i >= 4 ? 4 : nb - i, rows)
            : _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k & row_lanes,
                                          idx, w + (size_t)i * bsize, 1);
    const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
    /* whole-vector stores (the buffers have room): the block loop's
     * loads are then forwarded or read from L1 */
    if (A == 1) {
      _mm512_storeu_ps(dd + 4 * i,
                       _mm512_mul_ps(dw, _mm512_maskz_loadu_ps(k, ar->d1[i])));
    } else {
      for (int b = 0; b < 4 && i + b < nb; b++) {
        const __m512 rows4 = _mm512_permutexvar_ps(
            _mm512_add_epi32(_mm512_set1_epi32(4 * b),
                             _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2,
                                               3, 0, 1, 2, 3)),
            dw);
        for (int half = 0; half < halves(A); half++)
          _mm512_storeu_ps(dd + 16 * halves(A) * (i + b) + 16 * half,
                           _mm512_mul_ps(rows4, ar->d[i + b][half]));
      }
    }
    if (has_min)
      _mm512_storeu_ps(mm[i], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
                                  _mm512_srli_epi32(h, 16))));
  }
}

/* P pairs (2P rows from w) x A activation rows; out[a * out_stride + r]. */
static inline __attribute__((always_inline)) void
tile(int64_t nb, const uint8_t *w, size_t w_stride, size_t bsize,
     nc_il_pair_fn pair, bool has_min, bool has_offset, const act_rows *ar,
     const int P, const int A, float *out, size_t out_stride) {
  const int DD = A == 1 ? 4 : 16 * halves(A); /* dd floats per block */
  float *dd = ar->dd;
  float(*mm)[4] = ar->mm;
  tile_headers(w, w_stride, bsize, nb, 2 * P, has_min, ar, A, dd, mm);
  __m512 acc[2][MAX_A];
  _Static_assert((int)MAX_A == (int)NC_IL_TILE_A, "nc_il_store_sums' tile");
#pragma GCC unroll 2
  for (int p = 0; p < P; p++)
#pragma GCC unroll 4
    for (int a = 0; a < A; a++)
      acc[p][a] = _mm512_setzero_ps();
  __m128 sm1 = _mm_setzero_ps(); /* one row: by tile row */
  __m512 sm[HALVES];             /* else by [activation][tile row] */
#pragma GCC unroll 2
  for (int h = 0; h < HALVES; h++)
    sm[h] = _mm512_setzero_ps();
  /* the rows ahead (see nc_prefetch_base), 2P blocks' bytes per block */
  const uint8_t *pf = nc_prefetch_base(w, (size_t)(2 * P) * w_stride);
  const size_t pf_step = (size_t)(2 * P) * bsize;
  for (int64_t i = 0; i < nb; i++) {
    nc_prefetch_lines(pf + (size_t)i * pf_step, pf_step);
    __m512i q[2];
#pragma GCC unroll 2
    for (int p = 0; p < P; p++) {
      const uint8_t *b0 = w + (size_t)(2 * p) * w_stride + (size_t)i * bsize;
      q[p] = pair(b0, b0 + w_stride);
    }
#pragma GCC unroll 8
    for (int a = 0; a < A; a++) {
      const __m512i y = _mm512_load_si512(&ar->y[i][a]);
      const __m512i *c0 = has_offset ? &ar->c[i][a] : NULL;
#pragma GCC unroll 2
      for (int p = 0; p < P; p++)
        acc[p][a] = _mm512_fmadd_ps(
            nc_il_pair_bcast(dd + DD * i + 4 * a + 2 * p),
            _mm512_cvtepi32_ps(nc_il_dot(c0, q[p], y)), acc[p][a]);
    }
    if (has_min && A == 1)
      sm1 = _mm_fmadd_ps(_mm_loadu_ps(mm[i]),
                         _mm512_castps512_ps128(ar->s[i][0]), sm1);
    else if (has_min) {
      const __m512 m = _mm512_broadcast_f32x4(_mm_loadu_ps(mm[i]));
      for (int h = 0; h < halves(A); h++)
        sm[h] = _mm512_fmadd_ps(m, ar->s[i][h], sm[h]);
    }
  }
  if (P == 1) { /* nc_il_store_sums reads acc[1] */
#pragma GCC unroll 8
    for (int a = 0; a < A; a++)
      acc[1][a] = _mm512_setzero_ps();
  }
  /* the summs by [activation][tile row] */
  _Alignas(64) float s[16 * HALVES];
  _mm512_store_ps(s, A == 1 ? _mm512_castps128_ps512(sm1) : sm[0]);
  if (halves(A) > 1) _mm512_store_ps(s + 16, sm[1]);
#pragma GCC unroll 4
  for (int a = 0; a < A; a += 2) {
    const int b = a + 1 < A ? a + 1 : a;
    const __m512 mins =
        has_min
            ? _mm512_insertf32x4(_mm512_castps128_ps512(_mm_load_ps(s + 4 * a)),
                                 _mm_load_ps(s + 4 * b), 1)
            : _mm512_setzero_ps();
    nc_il_store_sums(acc, has_min, mins, a, a + 1 < A, P, out, out_stride);
  }
}

/* One activation row (plain decode) against 4 pairs (8 weight rows): each
 * pair's sums are one chain of FMAs over the blocks, and the 2 chains of
 * a 4-row tile waited on the FMA's latency. The same operations per
 * (row, lane) as tile(), hence the same bits. */
static inline __attribute__((always_inline)) void
one_row_tile(int64_t nb, const uint8_t *w, size_t w_stride, size_t bsize,
             nc_il_pair_fn pair, bool has_min, bool has_offset,
             const act_rows *ar, float *out) {
  /* rows 0..3's headers, then rows 4..7's: 4 floats per block each */
  float *dd[2] = {ar->dd, ar->dd + 4 * (nb + 4)};
  float(*mm[2])[4] = {ar->mm, ar->mm + (nb + 4)};
  for (int t = 0; t < 2; t++)
    tile_headers(w + (size_t)(4 * t) * w_stride, w_stride, bsize, nb, 4,
                 has_min, ar, 1, dd[t], mm[t]);
  __m512 acc[2][MAX_A]; /* [pair & 1][pair >> 1], as nc_il_store_sums' */
  __m128 sm[2] = {_mm_setzero_ps(), _mm_setzero_ps()};
  for (int p = 0; p < 4; p++)
    acc[p & 1][p >> 1] = _mm512_setzero_ps();
  const uint8_t *pf = nc_prefetch_base(w, 8 * w_stride);
  const size_t pf_step = 8 * bsize;
  for (int64_t i = 0; i < nb; i++) {
    nc_prefetch_lines(pf + (size_t)i * pf_step, pf_step);
    const __m512i y = _mm512_load_si512(&ar->y[i][0]);
    const __m512i *c0 = has_offset ? &ar->c[i][0] : NULL;
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
      const uint8_t *b0 = w + (size_t)(2 * p) * w_stride + (size_t)i * bsize;
      acc[p & 1][p >> 1] = _mm512_fmadd_ps(
          nc_il_pair_bcast(dd[p >> 1] + 4 * i + 2 * (p & 1)),
          _mm512_cvtepi32_ps(nc_il_dot(c0, pair(b0, b0 + w_stride), y)),
          acc[p & 1][p >> 1]);
    }
    if (has_min)
      for (int t = 0; t < 2; t++)
        sm[t] = _mm_fmadd_ps(_mm_loadu_ps(mm[t][i]),
                             _mm512_castps512_ps128(ar->s[i][0]), sm[t]);
  }
  /* rows 4..7 as a second activation row 4 floats further on */
  const __m512 mins =
      _mm512_insertf32x4(_mm512_castps128_ps512(sm[0]), sm[1], 1);
  nc_il_store_sums(acc, has_min, mins, 0, true, 2, out, 4);
}

static inline __attribute__((always_inline)) void
tiles(int64_t nb, const uint8_t *w, size_t w_stride, size_t bsize,
      nc_il_pair_fn pair, bool has_min, bool has_offset, const act_rows *ar,
      const int P, int A, float *out, size_t out_stride) {
#define T(AA)                                                                  \
  tile(nb, w, w_stride, bsize, pair, has_min, has_offset, ar, P, AA, out,      \
       out_stride)
  switch (A) {
  case 1: T(1); break;
  case 2: T(2); break;
  case 3: T(3); break;
  case 4: T(4); break;
  case 5: T(5); break;
  case 6: T(6); break;
  case 7: T(7); break;
  default: T(8); break;
  }
#undef T
}

/* Up to NC_AVX512_GEMV_MAX_A activation rows in groups of MAX_A (a
 * speculative step's rows): each group runs the tiles of every 4 weight
 * rows in turn, while those rows are in L1, so the weights stream from
 * memory once; each (weight row, activation row) takes the same
 * operations whatever its group. */
static inline __attribute__((always_inline)) void
gemv(int64_t n, const void *wv, size_t w_stride, int64_t nw, const void *av,
     size_t a_stride, int na, float *out, size_t out_stride, size_t bsize,
     nc_il_pair_fn pair, bool has_min, int offset_c,
     nc_vec_dot_rows_fn fallback) {
  const int64_t nb = n / 32;
  const uint8_t *w = wv, *a = av;
  act_rows ar[GROUPS];
  int ng = 0;
  if (na >= 1 && na <= GROUPS * MAX_A && nb <= MAX_BLOCKS && nb > 0)
    for (; ng * MAX_A < na; ng++) {
      const int rows = na - ng * MAX_A < MAX_A ? na - ng * MAX_A : MAX_A;
      if (!act_rows_new(&ar[ng], a + (size_t)(ng * MAX_A) * a_stride, a_stride,
                        rows, nb, has_min, offset_c))
        break;
    }
  if (ng * MAX_A < na) { /* rows out of range, or no memory */
    for (int g = 0; g < ng; g++)
      free(ar[g].mem);
    nc_il_rows_fallback(fallback, n, w, w_stride, nw, av, a_stride, na, out,
                        out_stride);
    return;
  }
  int64_t r = 0;
  if (na == 1)
    for (; r + 8 <= nw; r += 8)
      one_row_tile(nb, w + (size_t)r * w_stride, w_stride, bsize, pair, has_min,
                   offset_c != 0, &ar[0], out + r);
  for (; r + 4 <= nw; r += 4)
    for (int g = 0; g < ng; g++)
      tiles(nb, w + (size_t)r * w_stride, w_stride, bsize, pair, has_min,
            offset_c != 0, &ar[g], 2,
            na - g * MAX_A < MAX_A ? na - g * MAX_A : MAX_A,
            out + (size_t)(g * MAX_A) * out_stride + r, out_stride);
  if (r + 2 <= nw) {
    for (int g = 0; g < ng; g++)
      tiles(nb, w + (size_t)r * w_stride, w_stride, bsize, pair, has_min,
            offset_c != 0, &ar[g], 1,
            na - g * MAX_A < MAX_A ? na - g * MAX_A : MAX_A,
            out + (size_t)(g * MAX_A) * out_stride + r, out_stride);
    r += 2;
  }
  if (r < nw)
    fallback(n, w + (size_t)r * w_stride, av, a_stride, na, out + r,
             out_stride);
  for (int g = 0; g < ng; g++)
    free(ar[g].mem);
}

void nc_avx512_gemv_q4_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int na, float *out,
                         size_t out_stride) {
  gemv(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q4_0),
       nc_il_pair_q4_0, false, 8, nc_avx2_dot_q4_0_rows);
}

void nc_avx512_gemv_q5_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int na, float *out,
                         size_t out_stride) {
  gemv(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q5_0),
       nc_il_pair_q5_0, false, 16, nc_avx2_dot_q5_0_rows);
}

void nc_avx512_gemv_q8_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int na, float *out,
                         size_t out_stride) {
  gemv(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q8_0),
       nc_il_pair_q8_0, false, 128, nc_avx2_dot_q8_0_rows);
}

void nc_avx512_gemv_q4_1(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int na, float *out,
                         size_t out_stride) {
  gemv(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q4_1),
       nc_il_pair_q4_1, true, 0, nc_avx2_dot_q4_1_rows);
}

void nc_avx512_gemv_q5_1(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *a, size_t a_stride, int na, float *out,
                         size_t out_stride) {
  gemv(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q5_1),
       nc_il_pair_q5_1, true, 0, nc_avx2_dot_q5_1_rows);
}
