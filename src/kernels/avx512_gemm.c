/* avx512_gemm: AVX-512 VNNI matmul kernels (many weight rows x many
 * activation rows) for the 32-element block types Q4_0, Q4_1, Q5_0, Q5_1
 * and Q8_0, in llama.cpp's x86 float order.
 *
 * Float order. llama.cpp's AVX2 dot (and our avx2 table, bit for bit) keeps
 * 8 float lanes per (weight row, activation row) pair; per 32-block, lane k
 * gets fma(d_w * d_a, (float)I_k, lane) where I_k is the exact integer dot
 * of elements 4k..4k+3; at the end the lanes are summed by nc_hsum8, and the
 * min types add summs, the fma chain of m_w * s_a over the blocks. Integer
 * sums are exact in any order, so vpdpbusd (u8 x s8, 4 products per int32
 * lane, with a zero accumulator) yields the same I_k; we then run the same
 * float operations per lane. So every output is bit-identical to the avx2
 * table's vec_dot, hence to llama.cpp's.
 *
 * Layout. A zmm holds two pairs: lanes 0..7 for weight row r, 8..15 for row
 * r + 1, both against the same activation row, whose 32 quants are
 * broadcast to both halves. A register tile is 2 such weight-row pairs (4
 * rows) x up to 8 activation rows: 16 accumulators. From 8 activation
 * rows on, a weight panel is unpacked once (see pack_blk) and every tile
 * loads it; a single activation row (decode) goes to avx512_gemv.c. Activation
 * scales (d_a, s_a) are converted to float per chunk of 8 rows, transposed
 * per block, so the inner loop broadcasts them straight from memory.
 *
 * Signed weights (Q4_0, Q5_0, Q8_0) go in offset by a constant c so that
 * they are unsigned, and each lane's integer sum starts at -c times the sum
 * of its activation quants (see wpair): the same exact integers. */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "avx2_util.h"
#include "tables.h"

enum {
  TILE_A = 8,        /* activation rows per register tile */
  MAX_BLOCKS = 1024, /* n <= 32768: larger rows fall back to vec_dot_rows */
};

/* Up to TILE_A activation rows: per block, their scales as floats and,
 * for the signed weight types, the offset correction (see wpair). Sized
 * for nb blocks at run time (act_chunk_new). */
typedef struct act_chunk {
  const uint8_t *q[TILE_A]; /* each row's first block */
  int n_rows;
  float (*d)[TILE_A];
  float (*s)[TILE_A];         /* Q8_1 only */
  int32_t (*corr)[TILE_A][8]; /* signed types: -c * (sums of 4 quants) */
  void *mem;
} act_chunk;

static bool act_chunk_new(act_chunk *ac, int64_t nb) {
  const size_t f = sizeof(float) * TILE_A * (size_t)nb;
  const size_t bytes = 2 * f + sizeof(int32_t) * 8 * TILE_A * (size_t)nb;
  ac->mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!ac->mem) return false;
  uint8_t *p = ac->mem;
  ac->corr = (void *)p, p += sizeof(int32_t) * 8 * TILE_A * (size_t)nb;
  ac->d = (void *)p, p += f;
  ac->s = (void *)p;
  return true;
}

/* Two weight rows' block. Quants are always unsigned: the signed types
 * store q + c (Q4_0: the nibble, c = 8; Q5_0: the 5-bit value, c = 16;
 * Q8_0: q ^ 0x80, c = 128), and the activation side starts each lane's
 * integer sum at -c * (sum of its 4 activation quants), so vpdpbusd ends at
 * exactly sum q * a: the same integers as llama.cpp's sign trick. */
typedef struct wpair {
  __m512i q;
  __m512 d;  /* d_w of row r in lanes 0..7, of row r + 1 in 8..15 */
  __m128 dm; /* d_r, m_r, d_r1, m_r1 (min types) */
} wpair;

/* Two rows' 16 packed nibble bytes -> 64 bytes: row r's low nibbles, its
 * high nibbles, then row r + 1's. */
static inline __m512i nibbles2(const uint8_t *q0, const uint8_t *q1) {
  __m512i z = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)q0));
  z = _mm512_mask_broadcast_i32x4(z, 0xff00,
                                  _mm_loadu_si128((const __m128i *)q1));
  z = _mm512_srlv_epi64(z, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
  return _mm512_and_si512(z, _mm512_set1_epi8(0x0f));
}

/* Two fp16 scales (each the first half of a 32-bit header word) -> floats:
 * [h0, h0b, h1, h1b] from the two header words, and lanes 0..7 = lane 0,
 * 8..15 = lane 2. */
static inline __m128 header2(const void *p0, const void *p1) {
  int32_t a, b;
  memcpy(&a, p0, 4);
  memcpy(&b, p1, 4);
  return _mm_cvtph_ps(_mm_setr_epi32(a, b, 0, 0));
}

static inline __m512 spread_d(__m128 f) {
  return _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2),
      _mm512_castps128_ps512(f));
}

static inline wpair offset_pair(__m512i u, __m128 hdr) {
  return (wpair){u, spread_d(hdr), hdr};
}

static inline uint64_t qh2(const uint8_t *h0, const uint8_t *h1) {
  uint32_t a, b;
  memcpy(&a, h0, 4);
  memcpy(&b, h1, 4);
  return (uint64_t)a | (uint64_t)b << 32;
}

static inline __attribute__((always_inline)) wpair prep_q4_0(const void *p0,
                                                             const void *p1) {
  const block_q4_0 *x0 = p0, *x1 = p1;
  /* block_q4_0 starts with d (2 bytes) then quants: pad the header read */
  const nc_fp16 d[4] = {x0->d, 0, x1->d, 0};
  return offset_pair(nibbles2(x0->qs, x1->qs), header2(&d[0], &d[2]));
}

static inline __attribute__((always_inline)) wpair prep_q5_0(const void *p0,
                                                             const void *p1) {
  const block_q5_0 *x0 = p0, *x1 = p1;
  const __m512i u = nibbles2(x0->qs, x1->qs);
  const __m512i q = _mm512_mask_blend_epi8(
      qh2(x0->qh, x1->qh), u, _mm512_or_si512(u, _mm512_set1_epi8(0x10)));
  const nc_fp16 d[4] = {x0->d, 0, x1->d, 0};
  return offset_pair(q, header2(&d[0], &d[2]));
}

static inline __attribute__((always_inline)) wpair prep_q8_0(const void *p0,
                                                             const void *p1) {
  const block_q8_0 *x0 = p0, *x1 = p1;
  const __m512i q = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)x0->qs)),
      _mm256_loadu_si256((const __m256i *)x1->qs), 1);
  const nc_fp16 d[4] = {x0->d, 0, x1->d, 0};
  return offset_pair(_mm512_xor_si512(q, _mm512_set1_epi8((char)0x80)),
                     header2(&d[0], &d[2]));
}

static inline __attribute__((always_inline)) wpair prep_q4_1(const void *p0,
                                                             const void *p1) {
  const block_q4_1 *x0 = p0, *x1 = p1;
  const __m128 hdr = header2(&x0->d, &x1->d);
  return (wpair){nibbles2(x0->qs, x1->qs), spread_d(hdr), hdr};
}

static inline __attribute__((always_inline)) wpair prep_q5_1(const void *p0,
                                                             const void *p1) {
  const block_q5_1 *x0 = p0, *x1 = p1;
  const __m512i u = nibbles2(x0->qs, x1->qs);
  const __m512i q = _mm512_mask_blend_epi8(
      qh2(x0->qh, x1->qh), u, _mm512_or_si512(u, _mm512_set1_epi8(0x10)));
  const __m128 hdr = header2(&x0->d, &x1->d);
  return (wpair){q, spread_d(hdr), hdr};
}

typedef wpair (*prep_fn)(const void *p0, const void *p1);

/* A weight panel unpacked once for many activation rows (prefill): per
 * (pair, block) the 64 quant bytes and the spread d_w vector, the sign mask
 * and the two m_w. Worth it from PACK_MIN_A activation rows on; the panel
 * lives on the stack, PACK_BUDGET bytes, so rows per pass shrink as n
 * grows (and very long rows fall back to unpacking in the tile loop). */
enum { PACK_MIN_A = 8, PACK_BUDGET = 256 * 1024 };

typedef struct pack_blk {
  __m512i q;
  __m512 d;
} pack_blk;

typedef struct pack_aux {
  float m[2];
} pack_aux;

enum { PACK_PAIR_BLOCK = sizeof(pack_blk) + sizeof(pack_aux) };

/* Where a tile's weights come from: raw blocks (w, w_stride, bsize, prep)
 * or a packed panel (pb, px: pair p, block i at [p * nb + i]). */
typedef struct tile_src {
  const uint8_t *w;
  size_t w_stride, bsize;
  const pack_blk *pb;
  const pack_aux *px;
} tile_src;

/* One register tile: P pairs (2P weight rows) x A activation rows of ac;
 * nb blocks (abytes per activation block, its quants at offset aq).
 * out[a * out_stride + r]. */
static inline __attribute__((always_inline)) void
tile(int64_t nb, const tile_src *src, prep_fn prep, const bool packed,
     bool has_min, size_t abytes, size_t aq, const act_chunk *ac, const int P,
     const int A, float *out, size_t out_stride) {
  __m512 acc[2][TILE_A];
  __m256 summs[4]; /* per weight row, lane a = activation row a */
#pragma GCC unroll 2
  for (int p = 0; p < P; p++)
#pragma GCC unroll 8
    for (int a = 0; a < A; a++)
      acc[p][a] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int r = 0; r < 2 * P; r++)
    summs[r] = _mm256_setzero_ps();
  const __m512i zero = _mm512_setzero_si512();
  /* Raw blocks: the rows ahead are prefetched as this tile runs (see
   * nc_prefetch_base), 2P blocks' bytes per block. */
  const uint8_t *pf =
      packed ? NULL : nc_prefetch_base(src->w, (size_t)(2 * P) * src->w_stride);
  const size_t pf_step = packed ? 0 : (size_t)(2 * P) * src->bsize;
  for (int64_t i = 0; i < nb; i++) {
    wpair wp[2];
    float m[2][2];
    if (packed) {
#pragma GCC unroll 2
      for (int p = 0; p < P; p++) {
        const pack_blk *b = &src->pb[(size_t)p * (size_t)nb + (size_t)i];
        const pack_aux *x = &src->px[(size_t)p * (size_t)nb + (size_t)i];
        wp[p].q = _mm512_load_si512(&b->q);
        wp[p].d = _mm512_load_ps(&b->d);
        m[p][0] = x->m[0];
        m[p][1] = x->m[1];
      }
    } else {
      nc_prefetch_lines(pf + (size_t)i * pf_step, pf_step);
#pragma GCC unroll 2
      for (int p = 0; p < P; p++) {
        const uint8_t *b0 =
            src->w + (size_t)(2 * p) * src->w_stride + (size_t)i * src->bsize;
        wp[p] = prep(b0, b0 + src->w_stride);
      }
    }
    if (has_min) {
      const __m256 s_a =
          _mm256_maskz_loadu_ps((__mmask8)((1u << A) - 1), ac->s[i]);
#pragma GCC unroll 2
      for (int p = 0; p < P; p++) {
        /* summs = fma(m_w, s_a, summs), as llama.cpp, per activation row */
        const __m256 m0 =
            packed ? _mm256_set1_ps(m[p][0])
                   : _mm256_broadcastss_ps(_mm_movehdup_ps(wp[p].dm));
        const __m256 m1 = packed ? _mm256_set1_ps(m[p][1])
                                 : _mm256_broadcastss_ps(_mm_movehdup_ps(
                                       _mm_movehl_ps(wp[p].dm, wp[p].dm)));
        summs[2 * p] = _mm256_fmadd_ps(m0, s_a, summs[2 * p]);
        summs[2 * p + 1] = _mm256_fmadd_ps(m1, s_a, summs[2 * p + 1]);
      }
    }
#pragma GCC unroll 8
    for (int a = 0; a < A; a++) {
      const __m512i y = _mm512_broadcast_i64x4(_mm256_loadu_si256(
          (const __m256i *)(ac->q[a] + (size_t)i * abytes + aq)));
      const __m512 d_a = _mm512_set1_ps(ac->d[i][a]);
      const __m512i corr = has_min ? zero
                                   : _mm512_broadcast_i64x4(_mm256_load_si256(
                                         (const __m256i *)ac->corr[i][a]));
#pragma GCC unroll 2
      for (int p = 0; p < P; p++) {
        const __m512i l =
            _mm512_dpbusd_epi32(has_min ? zero : corr, wp[p].q, y);
        acc[p][a] = _mm512_fmadd_ps(_mm512_mul_ps(wp[p].d, d_a),
                                    _mm512_cvtepi32_ps(l), acc[p][a]);
      }
    }
  }
  float sm[4][8];
#pragma GCC unroll 4
  for (int r = 0; r < 2 * P; r++)
    _mm256_storeu_ps(sm[r], summs[r]);
#pragma GCC unroll 2
  for (int p = 0; p < P; p++)
#pragma GCC unroll 8
    for (int a = 0; a < A; a++) {
      const __m512 v = acc[p][a];
      float lo = nc_hsum8(_mm512_castps512_ps256(v));
      float hi = nc_hsum8(
          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
      if (has_min) {
        lo += sm[2 * p][a];
        hi += sm[2 * p + 1][a];
      }
      out[(size_t)a * out_stride + 2 * p] = lo;
      out[(size_t)a * out_stride + 2 * p + 1] = hi;
    }
}

/* Instances per (P, A) with A the activation rows of this chunk. */
static inline __attribute__((always_inline)) void
tile_any(int64_t nb, const tile_src *src, prep_fn prep, bool packed,
         bool has_min, size_t abytes, size_t aq, const act_chunk *ac, int P,
         float *out, size_t out_stride) {
#define T(PP, AA)                                                              \
  tile(nb, src, prep, PK, has_min, abytes, aq, ac, PP, AA, out, out_stride)
#define CASES(PP)                                                              \
  switch (ac->n_rows) {                                                        \
  case 1: T(PP, 1); break;                                                     \
  case 2: T(PP, 2); break;                                                     \
  case 3: T(PP, 3); break;                                                     \
  case 4: T(PP, 4); break;                                                     \
  case 5: T(PP, 5); break;                                                     \
  case 6: T(PP, 6); break;                                                     \
  case 7: T(PP, 7); break;                                                     \
  default: T(PP, 8); break;                                                    \
  }
#define PAIRS                                                                  \
  if (P == 2) {                                                                \
    CASES(2)                                                                   \
  } else {                                                                     \
    CASES(1)                                                                   \
  }
  if (packed) {
#define PK true
    PAIRS
#undef PK
  } else {
#define PK false
    PAIRS
#undef PK
  }
#undef PAIRS
#undef CASES
#undef T
}

/* Activation rows a0 .. a0 + A - 1: block pointers and float scales,
 * 16 blocks per gather (the fp16 d, s pair leads every block) and scatter
 * into the per-block layout. */
static void load_chunk(act_chunk *ac, const uint8_t *a, size_t a_stride,
                       int64_t a0, int A, int64_t nb, size_t abytes, size_t aq,
                       bool has_min, int offset_c) {
  ac->n_rows = A;
  for (int k = 0; k < TILE_A; k++)
    ac->q[k] = a + (size_t)(a0 + (k < A ? k : 0)) * a_stride;
  const __m512i lanes =
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i src_idx =
      _mm512_mullo_epi32(lanes, _mm512_set1_epi32((int)abytes));
  const __m512i dst_idx = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(TILE_A));
  for (int64_t i = 0; i < nb; i += 16) {
    const __mmask16 m =
        nb - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nb - i)) - 1);
    for (int k = 0; k < A; k++) {
      const __m512i h = _mm512_mask_i32gather_epi32(
          _mm512_setzero_si512(), m, src_idx, ac->q[k] + (size_t)i * abytes, 1);
      const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
      _mm512_mask_i32scatter_ps(&ac->d[i][k], m, dst_idx, d, 4);
      if (has_min)
        _mm512_mask_i32scatter_ps(
            &ac->s[i][k], m, dst_idx,
            _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16))),
            4);
    }
  }
  if (offset_c) {
    const __m256i c = _mm256_set1_epi8((char)offset_c);
    for (int64_t i = 0; i < nb; i++)
      for (int k = 0; k < A; k++) {
        const __m256i y = _mm256_loadu_si256(
            (const __m256i *)(ac->q[k] + (size_t)i * abytes + aq));
        _mm256_store_si256((__m256i *)ac->corr[i][k],
                           _mm256_sub_epi32(_mm256_setzero_si256(),
                                            _mm256_dpbusd_epi32(
                                                _mm256_setzero_si256(), c, y)));
      }
  }
}

/* Weight rows [0, nw) against activation rows [0, na): 4-row tiles (2-row
 * for a pair left over), a single leftover row by the avx2 kernel. */
static inline __attribute__((always_inline)) void
rows_x_acts(int64_t nb, const tile_src *src, prep_fn prep, bool packed,
            bool has_min, size_t abytes, size_t aq, act_chunk *ac,
            const uint8_t *a, size_t a_stride, int64_t na, int64_t nw,
            float *out, size_t out_stride, nc_vec_dot_rows_fn fallback,
            int64_t n, int offset_c) {
  for (int64_t a0 = 0; a0 < na; a0 += TILE_A) {
    const int A = na - a0 < TILE_A ? (int)(na - a0) : TILE_A;
    load_chunk(ac, a, a_stride, a0, A, nb, abytes, aq, has_min, offset_c);
    float *o = out + (size_t)a0 * out_stride;
    int64_t r = 0;
    for (; r + 2 <= nw; r += r + 4 <= nw ? 4 : 2) {
      tile_src t = *src;
      if (packed) {
        t.pb += (size_t)(r / 2) * (size_t)nb;
        t.px += (size_t)(r / 2) * (size_t)nb;
      } else {
        t.w += (size_t)r * src->w_stride;
      }
      tile_any(nb, &t, prep, packed, has_min, abytes, aq, ac,
               r + 4 <= nw ? 2 : 1, o + r, out_stride);
    }
    if (r < nw && !packed)
      fallback(n, src->w + (size_t)r * src->w_stride, a + (size_t)a0 * a_stride,
               a_stride, A, o + r, out_stride);
  }
}

static inline __attribute__((always_inline)) void
gemm(int64_t n, const void *wv, size_t w_stride, int64_t nw, const void *av,
     size_t a_stride, int64_t na, float *out, size_t out_stride, size_t bsize,
     prep_fn prep, bool has_min, int offset_c, nc_vec_dot_rows_fn fallback) {
  const int64_t nb = n / 32;
  const uint8_t *w = wv, *a = av;
  const size_t abytes = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
  const size_t aq = has_min ? 4 : 2;
  act_chunk ac;
  if (nb > MAX_BLOCKS || nb <= 0 || !act_chunk_new(&ac, nb)) {
    for (int64_t r = 0; r < nw; r++)
      fallback(n, w + (size_t)r * w_stride, a, a_stride, (int)na, out + r,
               out_stride);
    return;
  }
  /* rows per packed pass: a multiple of 4 that fits the budget */
  const int64_t pack_rows = (PACK_BUDGET / (PACK_PAIR_BLOCK * nb)) * 2 / 4 * 4;
  if (na < PACK_MIN_A || pack_rows < 4) {
    const tile_src src = {.w = w, .w_stride = w_stride, .bsize = bsize};
    rows_x_acts(nb, &src, prep, false, has_min, abytes, aq, &ac, a, a_stride,
                na, nw, out, out_stride, fallback, n, offset_c);
    free(ac.mem);
    return;
  }
  _Alignas(64) uint8_t buf[PACK_BUDGET];
  for (int64_t r0 = 0; r0 < nw; r0 += pack_rows) {
    const int64_t rows = nw - r0 < pack_rows ? nw - r0 : pack_rows;
    const int64_t pairs = rows / 2;
    pack_blk *pb = (pack_blk *)buf;
    pack_aux *px = (pack_aux *)(buf + sizeof(pack_blk) * (size_t)(pairs * nb));
    const uint8_t *wr = w + (size_t)r0 * w_stride;
    for (int64_t p = 0; p < pairs; p++)
      for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b0 = wr + (size_t)(2 * p) * w_stride + (size_t)i * bsize;
        const wpair wp = prep(b0, b0 + w_stride);
        float hdr[4];
        _mm_storeu_ps(hdr, wp.dm);
        _mm512_store_si512(&pb[p * nb + i].q, wp.q);
        _mm512_store_ps(&pb[p * nb + i].d, wp.d);
        px[p * nb + i] = (pack_aux){{hdr[1], hdr[3]}};
      }
    const tile_src src = {.pb = pb, .px = px};
    rows_x_acts(nb, &src, prep, true, has_min, abytes, aq, &ac, a, a_stride, na,
                pairs * 2, out + r0, out_stride, fallback, n, offset_c);
    if (rows % 2) /* the odd last row, unpacked */
      fallback(n, wr + (size_t)(rows - 1) * w_stride, a, a_stride, (int)na,
               out + r0 + rows - 1, out_stride);
  }
  free(ac.mem);
}

/* has_min: Q4_1/Q5_1 (x Q8_1, min term); offset: the signed types' c. */
#define GEMM(name, block, has_min, offset)                                     \
  void nc_avx512_gemm_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *a, size_t a_stride,       \
                             int64_t na, float *out, size_t out_stride) {      \
    if (na == 1) {                                                             \
      nc_avx512_gemv_##name(n, w, w_stride, nw, a, out);                       \
      return;                                                                  \
    }                                                                          \
    gemm(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block),  \
         prep_##name, has_min, offset, nc_avx2_dot_##name##_rows);             \
  }
GEMM(q4_0, block_q4_0, false, 8)
GEMM(q5_0, block_q5_0, false, 16)
GEMM(q8_0, block_q8_0, false, 128)
GEMM(q4_1, block_q4_1, true, 0)
GEMM(q5_1, block_q5_1, true, 0)
#undef GEMM
