/* avx512_q8: AVX-512 + VNNI kernels for the weight types whose activation
 * format is Q8_0 (Q8_0, Q4_0, Q5_0), block per lane like avx512.c's Q4_1:
 * for a full group of 16 blocks, int32 lane j of every vector belongs to
 * block j, so eight vpdpbusd give the 16 exact block dots and the float
 * scaling is one FMA per 16 blocks.
 *
 * The weights are signed: vpdpbusd multiplies |w| (unsigned) by the
 * activation negated where w < 0 (the activation quantizer never writes
 * -128, so the negation is exact).
 *
 * Activation layout (private to the avx512 table, same size as Q8_0 rows):
 * each full group of 16 blocks (544 bytes) as d[16] (fp16), then 8 slices
 * of 64 bytes, slice v holding quants 4v..4v+3 of each block j; then the
 * last t = n / 32 % 16 blocks as d[t] then their quants in element order.
 *
 * The tail blocks go in pairs into a second accumulator (8 lanes per
 * block). Float order per (weight row, activation row): acc (16 lanes) =
 * fma(d_w * d_a, I, acc) per group, acct likewise per tail pair; result =
 * _mm512_reduce_add_ps(acc + acct) (of acc when t = 0). vec_dot and
 * vec_dot_rows run the same operations per row: bit-identical whatever
 * nrows. */
#include <immintrin.h>
#include <string.h>

#include "avx512_util.h"
#include "tables.h"

enum { GB = 16, MAX_R = 8 };

void nc_avx512_quant_q8_0(const float *src, void *dst, int64_t n) {
  uint8_t *out = dst;
  const int64_t nb = n / QK8_0;
  int64_t b0 = 0;
  for (; b0 + GB <= nb; b0 += GB, out += GB * sizeof(block_q8_0)) {
    block_q8_0 tmp[GB];
    nc_avx2_quant_q8_0(src + b0 * QK8_0, tmp, GB * QK8_0);
    for (int j = 0; j < GB; j++) {
      memcpy(out + 2 * j, &tmp[j].d, 2);
      for (int v = 0; v < 8; v++)
        memcpy(out + 2 * GB + 64 * v + 4 * j, tmp[j].qs + 4 * v, 4);
    }
  }
  if (b0 < nb) { /* tail of t < 16 blocks: d[t], then the quants */
    const int t = (int)(nb - b0);
    block_q8_0 tmp[GB];
    nc_avx2_quant_q8_0(src + b0 * QK8_0, tmp, (int64_t)t * QK8_0);
    for (int j = 0; j < t; j++) {
      memcpy(out + 2 * j, &tmp[j].d, 2);
      memcpy(out + 2 * t + QK8_0 * j, tmp[j].qs, QK8_0);
    }
  }
}

/* Weight side of a full group: |w| per slice, the lanes' negative bytes,
 * the 16 scales. */
typedef struct sw_group {
  __m512i absw[8];
  __mmask64 neg[8];
  __m512 d;
} sw_group;

static inline __m512i block_offsets(int size, int add) {
  return _mm512_add_epi32(
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                           12, 13, 14, 15),
                         _mm512_set1_epi32(size)),
      _mm512_set1_epi32(add));
}

/* The fp16 at offset 0 of each of 16 blocks. */
static inline __m512 gather_d(const uint8_t *base, int size) {
  __m512i v = _mm512_i32gather_epi32(block_offsets(size, 0), base, 1);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

static inline void finish_slices(const __m512i w[8], sw_group *g) {
  for (int v = 0; v < 8; v++) {
    g->neg[v] = _mm512_movepi8_mask(w[v]);
    g->absw[v] = _mm512_abs_epi8(w[v]);
  }
}

/* Transposes of a group's quants to block-per-lane: the index vectors of
 * two-source dword permutes (bit 4 picks the second source). */
static const int32_t k_pair_lo[2][16] = {
    /* lanes 2b, 2b+1 <- dwords {0,1} / {2,3} of 4-dword row b (8 rows) */
    {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29},
    {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31},
};
static const int32_t k_even_odd[2][16] = {
    /* lane j <- dword 2j / 2j + 1 */
    {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30},
    {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31},
};
static const int32_t k_quad[2][16] = {
    /* lanes 4b..4b+3 <- dwords {0..3} / {4..7} of 8-dword row b (4 rows) */
    {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27},
    {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31},
};

static inline __m512i perm2(__m512i a, const int32_t *idx, __m512i b) {
  return _mm512_permutex2var_epi32(a, _mm512_loadu_si512(idx), b);
}

/* 16 rows of 16 bytes (row j at base + j * stride) -> out[c], lane j =
 * dword c of row j. */
static inline __attribute__((always_inline)) void
transpose16x4(const uint8_t *base, size_t stride, __m512i out[4]) {
  __m512i z[4];
  for (int i = 0; i < 4; i++) {
    const uint8_t *r = base + (size_t)(4 * i) * stride;
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)r));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(r + stride)),
                           1);
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128((const __m128i *)(r + 2 * stride)), 2);
    z[i] = _mm512_inserti32x4(
        v, _mm_loadu_si128((const __m128i *)(r + 3 * stride)), 3);
  }
  __m512i t[4];
  for (int h = 0; h < 2; h++) {
    t[h] = perm2(z[0], k_pair_lo[h], z[1]);     /* rows 0..7 */
    t[2 + h] = perm2(z[2], k_pair_lo[h], z[3]); /* rows 8..15 */
  }
  for (int c = 0; c < 4; c++)
    out[c] = perm2(t[c / 2], k_even_odd[c % 2], t[2 + c / 2]);
}

/* 16 rows of 32 bytes -> out[w], lane j = dword w of row j. */
static inline __attribute__((always_inline)) void
transpose16x8(const uint8_t *base, size_t stride, __m512i out[8]) {
  __m512i z[8], t[8], u[8];
  for (int i = 0; i < 8; i++) {
    const uint8_t *r = base + (size_t)(2 * i) * stride;
    __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)r));
    z[i] = _mm512_inserti64x4(
        v, _mm256_loadu_si256((const __m256i *)(r + stride)), 1);
  }
  for (int p = 0; p < 4; p++) /* rows 4p..4p+3, dwords 4h..4h+3 */
    for (int h = 0; h < 2; h++)
      t[2 * p + h] = perm2(z[2 * p], k_quad[h], z[2 * p + 1]);
  for (int q = 0; q < 2; q++) /* rows 8q..8q+7, dwords 4h+2g, 4h+2g+1 */
    for (int h = 0; h < 2; h++)
      for (int g = 0; g < 2; g++)
        u[4 * q + 2 * h + g] =
            perm2(t[4 * q + h], k_pair_lo[g], t[4 * q + 2 + h]);
  for (int w = 0; w < 8; w++)
    out[w] = perm2(u[w / 2], k_even_odd[w % 2], u[4 + w / 2]);
}

static inline __attribute__((always_inline)) void load_q8_0(const block_q8_0 *x,
                                                            sw_group *g) {
  const uint8_t *base = (const uint8_t *)x;
  __m512i w[8];
  g->d = gather_d(base, (int)sizeof(block_q8_0));
  transpose16x8(base + 2, sizeof(block_q8_0), w);
  finish_slices(w, g);
}

static inline __attribute__((always_inline)) void load_q4_0(const block_q4_0 *x,
                                                            sw_group *g) {
  const uint8_t *base = (const uint8_t *)x;
  const __m512i low = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  __m512i w[8], q[4];
  g->d = gather_d(base, (int)sizeof(block_q4_0));
  transpose16x4(base + 2, sizeof(block_q4_0), q);
  for (int c = 0; c < 4; c++) { /* word c: elements 4c.. (lo), 16 + 4c.. */
    w[c] = _mm512_sub_epi8(_mm512_and_si512(q[c], low), eight);
    w[c + 4] = _mm512_sub_epi8(
        _mm512_and_si512(_mm512_srli_epi32(q[c], 4), low), eight);
  }
  finish_slices(w, g);
}

static inline __attribute__((always_inline)) void load_q5_0(const block_q5_0 *x,
                                                            sw_group *g) {
  const uint8_t *base = (const uint8_t *)x;
  const __m512i low = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(16);
  __m512i w[8], q[4];
  g->d = gather_d(base, (int)sizeof(block_q5_0));
  __m512i qh = _mm512_i32gather_epi32(block_offsets((int)sizeof(block_q5_0), 2),
                                      base, 1);
  transpose16x4(base + 6, sizeof(block_q5_0), q);
  for (int c = 0; c < 4; c++) {
    __m512i lo =
        _mm512_or_si512(_mm512_and_si512(q[c], low), nc_fifth_bits(qh, 4 * c));
    __m512i hi =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(q[c], 4), low),
                        nc_fifth_bits(qh, 16 + 4 * c));
    w[c] = _mm512_sub_epi8(lo, sixteen);
    w[c + 4] = _mm512_sub_epi8(hi, sixteen);
  }
  finish_slices(w, g);
}

/* One activation row, one full group. */
static inline __attribute__((always_inline)) __m512
sgroup_dot(const sw_group *g, const uint8_t *a, __m512 acc) {
  const __m512 da = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)a));
  const uint8_t *q = a + 2 * GB;
  __m512i s0 = _mm512_setzero_si512(), s1 = s0;
#pragma GCC unroll 4
  for (int v = 0; v < 8; v += 2) {
    __m512i a0 = _mm512_loadu_si512(q + 64 * v);
    __m512i a1 = _mm512_loadu_si512(q + 64 * (v + 1));
    a0 = _mm512_mask_sub_epi8(a0, g->neg[v], _mm512_setzero_si512(), a0);
    a1 = _mm512_mask_sub_epi8(a1, g->neg[v + 1], _mm512_setzero_si512(), a1);
    s0 = _mm512_dpbusd_epi32(s0, g->absw[v], a0);
    s1 = _mm512_dpbusd_epi32(s1, g->absw[v + 1], a1);
  }
  __m512i sum = _mm512_add_epi32(s0, s1);
  return _mm512_fmadd_ps(_mm512_mul_ps(g->d, da), _mm512_cvtepi32_ps(sum), acc);
}

typedef void (*load_fn)(const void *x, int64_t block, sw_group *g);

static inline __attribute__((always_inline)) void
ld_q8_0(const void *x, int64_t b, sw_group *g) {
  load_q8_0((const block_q8_0 *)x + b, g);
}
static inline __attribute__((always_inline)) void
ld_q4_0(const void *x, int64_t b, sw_group *g) {
  load_q4_0((const block_q4_0 *)x + b, g);
}
static inline __attribute__((always_inline)) void
ld_q5_0(const void *x, int64_t b, sw_group *g) {
  load_q5_0((const block_q5_0 *)x + b, g);
}

/* Weight side of a tail pair (one or two blocks, natural order): |w| of
 * block 2p in bytes 0..31 and of 2p + 1 in 32..63, the negative bytes,
 * the scale per lane (lanes 0..7: first block, 8..15: second). */
typedef struct sw_pair {
  __m512i absw;
  __mmask64 neg;
  __m512 d;
} sw_pair;

static inline __attribute__((always_inline)) void
spair_finish(__m256i w0, __m256i w1, const uint8_t *d0, const uint8_t *d1,
             sw_pair *sp) {
  __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
  sp->neg = _mm512_movepi8_mask(w);
  sp->absw = _mm512_abs_epi8(w);
  uint16_t h0, h1 = 0;
  memcpy(&h0, d0, 2);
  if (d1) memcpy(&h1, d1, 2);
  const __m512 d = _mm512_castps128_ps512(
      _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)h1 << 16 | h0))));
  sp->d = _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), d);
}

static inline __m256i snib32(const uint8_t *qs, int off) {
  __m128i v = _mm_loadu_si128((const __m128i *)qs);
  __m256i b = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v),
                               _mm256_set1_epi8(0x0f));
  return _mm256_sub_epi8(b, _mm256_set1_epi8((char)off));
}

static inline __m256i q5_0_32(const block_q5_0 *b) {
  uint32_t qh;
  memcpy(&qh, b->qh, 4);
  __m256i lo = _mm256_and_si256(
      _mm256_set_m128i(
          _mm_srli_epi16(_mm_loadu_si128((const __m128i *)b->qs), 4),
          _mm_loadu_si128((const __m128i *)b->qs)),
      _mm256_set1_epi8(0x0f));
  lo = _mm256_or_si256(
      lo, _mm256_maskz_mov_epi8((__mmask32)qh, _mm256_set1_epi8(0x10)));
  return _mm256_sub_epi8(lo, _mm256_set1_epi8(16));
}

static inline __attribute__((always_inline)) void
lp_q8_0(const void *x, int64_t b, int cnt, sw_pair *sp) {
  const block_q8_0 *p = (const block_q8_0 *)x + b;
  __m256i w1 = cnt > 1 ? _mm256_loadu_si256((const __m256i *)p[1].qs)
                       : _mm256_setzero_si256();
  spair_finish(_mm256_loadu_si256((const __m256i *)p[0].qs), w1,
               (const uint8_t *)&p[0].d,
               cnt > 1 ? (const uint8_t *)&p[1].d : NULL, sp);
}

static inline __attribute__((always_inline)) void
lp_q4_0(const void *x, int64_t b, int cnt, sw_pair *sp) {
  const block_q4_0 *p = (const block_q4_0 *)x + b;
  __m256i w1 = cnt > 1 ? snib32(p[1].qs, 8) : _mm256_setzero_si256();
  spair_finish(snib32(p[0].qs, 8), w1, (const uint8_t *)&p[0].d,
               cnt > 1 ? (const uint8_t *)&p[1].d : NULL, sp);
}

static inline __attribute__((always_inline)) void
lp_q5_0(const void *x, int64_t b, int cnt, sw_pair *sp) {
  const block_q5_0 *p = (const block_q5_0 *)x + b;
  __m256i w1 = cnt > 1 ? q5_0_32(&p[1]) : _mm256_setzero_si256();
  spair_finish(q5_0_32(&p[0]), w1, (const uint8_t *)&p[0].d,
               cnt > 1 ? (const uint8_t *)&p[1].d : NULL, sp);
}

/* One activation row, tail pair p of a tail of t blocks at a:
 * acct = fma(d_w d_a, I, acct) over 16 lanes (8 per block). */
static inline __attribute__((always_inline)) __m512
spair_dot(const sw_pair *sp, const uint8_t *a, int t, int p, int cnt,
          __m512 acct) {
  int32_t dv;
  if (cnt > 1) {
    memcpy(&dv, a + 4 * p, 4);
  } else {
    uint16_t h;
    memcpy(&h, a + 4 * p, 2);
    dv = h;
  }
  const __m512 da = _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
      _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(dv))));
  const __mmask16 k = cnt > 1 ? 0xffff : 0x00ff;
  __m512i q = _mm512_maskz_loadu_epi32(k, a + 2 * t + 64 * p);
  q = _mm512_mask_sub_epi8(q, sp->neg, _mm512_setzero_si512(), q);
  const __m512i i = _mm512_dpbusd_epi32(_mm512_setzero_si512(), sp->absw, q);
  return _mm512_fmadd_ps(_mm512_mul_ps(sp->d, da), _mm512_cvtepi32_ps(i), acct);
}

typedef void (*pload_fn)(const void *x, int64_t block, int cnt, sw_pair *sp);

static inline __attribute__((always_inline)) void
srows(int64_t n, const uint8_t *x, load_fn load, pload_fn pload,
      const uint8_t *a, size_t a_stride, const int R, float *out,
      size_t out_stride) {
  __m512 acc[MAX_R];
#pragma GCC unroll 8
  for (int r = 0; r < R; r++)
    acc[r] = _mm512_setzero_ps();
  const int64_t nb = n / QK8_0;
  int64_t b0 = 0;
  for (; b0 + GB <= nb; b0 += GB) {
    sw_group g;
    load(x, b0, &g);
    const size_t off = (size_t)b0 * sizeof(block_q8_0);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
      acc[r] = sgroup_dot(&g, a + (size_t)r * a_stride + off, acc[r]);
  }
  const int t = (int)(nb - b0);
  if (t > 0) { /* the tail, in pairs of blocks, into a second accumulator */
    __m512 acct[MAX_R];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
      acct[r] = _mm512_setzero_ps();
    const size_t off = (size_t)b0 * sizeof(block_q8_0);
    for (int p = 0; 2 * p < t; p++) {
      const int cnt = t - 2 * p > 1 ? 2 : 1;
      sw_pair sp;
      pload(x, b0 + 2 * p, cnt, &sp);
#pragma GCC unroll 8
      for (int r = 0; r < R; r++)
        acct[r] =
            spair_dot(&sp, a + (size_t)r * a_stride + off, t, p, cnt, acct[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
      acc[r] = _mm512_add_ps(acc[r], acct[r]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; r++)
    out[(size_t)r * out_stride] = _mm512_reduce_add_ps(acc[r]);
}

#define KERNEL(name)                                                           \
  float nc_avx512_dot_##name(int64_t n, const void *w, const void *a) {        \
    float out;                                                                 \
    srows(n, w, ld_##name, lp_##name, a, 0, 1, &out, 1);                       \
    return out;                                                                \
  }                                                                            \
  void nc_avx512_dot_##name##_rows(int64_t n, const void *w, const void *a,    \
                                   size_t a_stride, int nrows, float *out,     \
                                   size_t out_stride) {                        \
    const uint8_t *ap = a;                                                     \
    int r = 0;                                                                 \
    for (; r + 8 <= nrows; r += 8)                                             \
      srows(n, w, ld_##name, lp_##name, ap + (size_t)r * a_stride, a_stride,   \
            8, out + (size_t)r * out_stride, out_stride);                      \
    for (; r + 4 <= nrows; r += 4)                                             \
      srows(n, w, ld_##name, lp_##name, ap + (size_t)r * a_stride, a_stride,   \
            4, out + (size_t)r * out_stride, out_stride);                      \
    for (; r < nrows; r++)                                                     \
      srows(n, w, ld_##name, lp_##name, ap + (size_t)r * a_stride, a_stride,   \
            1, out + (size_t)r * out_stride, out_stride);                      \
  }
KERNEL(q8_0)
KERNEL(q4_0)
KERNEL(q5_0)
#undef KERNEL
