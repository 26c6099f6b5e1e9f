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
 * last n / 32 % 16 blocks as plain block_q8_0.
 *
 * Float order per (weight row, activation row): acc (16 lanes) = fma(d_w *
 * d_a, I, acc) per group; result = (sum of acc's lanes) + the plain tail's
 * dot in llama.cpp's x86 order (avx2.c). vec_dot and vec_dot_rows run the
 * same operations per row: bit-identical whatever nrows. */
#include <immintrin.h>
#include <string.h>

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
  if (b0 < nb) nc_avx2_quant_q8_0(src + b0 * QK8_0, out, (nb - b0) * QK8_0);
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

static inline void load_q8_0(const block_q8_0 *x, sw_group *g) {
  const uint8_t *base = (const uint8_t *)x;
  __m512i w[8];
  g->d = gather_d(base, (int)sizeof(block_q8_0));
  for (int v = 0; v < 8; v++)
    w[v] = _mm512_i32gather_epi32(
        block_offsets((int)sizeof(block_q8_0), 2 + 4 * v), base, 1);
  finish_slices(w, g);
}

static inline void load_q4_0(const block_q4_0 *x, sw_group *g) {
  const uint8_t *base = (const uint8_t *)x;
  const __m512i low = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  __m512i w[8];
  g->d = gather_d(base, (int)sizeof(block_q4_0));
  for (int c = 0; c < 4; c++) { /* word c: elements 4c.. (lo), 16 + 4c.. */
    __m512i q = _mm512_i32gather_epi32(
        block_offsets((int)sizeof(block_q4_0), 2 + 4 * c), base, 1);
    w[c] = _mm512_sub_epi8(_mm512_and_si512(q, low), eight);
    w[c + 4] =
        _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi32(q, 4), low), eight);
  }
  finish_slices(w, g);
}

/* Byte k (0..3) of each lane: 0x10 where bit shift + k of the lane's u32
 * is set. */
static inline __m512i fifth_bits(__m512i qh, int shift) {
  /* copy each lane's low byte (after the shift) to its four bytes */
  const __m512i dup =
      _mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0x00000000);
  __m512i b = _mm512_shuffle_epi8(_mm512_srli_epi32(qh, (unsigned)shift), dup);
  __mmask64 set = _mm512_test_epi8_mask(b, _mm512_set1_epi32(0x08040201));
  return _mm512_maskz_mov_epi8(set, _mm512_set1_epi8(0x10));
}

static inline void load_q5_0(const block_q5_0 *x, sw_group *g) {
  const uint8_t *base = (const uint8_t *)x;
  const __m512i low = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(16);
  __m512i w[8];
  g->d = gather_d(base, (int)sizeof(block_q5_0));
  __m512i qh = _mm512_i32gather_epi32(block_offsets((int)sizeof(block_q5_0), 2),
                                      base, 1);
  for (int c = 0; c < 4; c++) {
    __m512i q = _mm512_i32gather_epi32(
        block_offsets((int)sizeof(block_q5_0), 6 + 4 * c), base, 1);
    __m512i lo =
        _mm512_or_si512(_mm512_and_si512(q, low), fifth_bits(qh, 4 * c));
    __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(q, 4), low),
                                 fifth_bits(qh, 16 + 4 * c));
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
typedef float (*tail_fn)(int64_t n, const void *w, const void *a);

static void ld_q8_0(const void *x, int64_t b, sw_group *g) {
  load_q8_0((const block_q8_0 *)x + b, g);
}
static void ld_q4_0(const void *x, int64_t b, sw_group *g) {
  load_q4_0((const block_q4_0 *)x + b, g);
}
static void ld_q5_0(const void *x, int64_t b, sw_group *g) {
  load_q5_0((const block_q5_0 *)x + b, g);
}

static inline __attribute__((always_inline)) void
srows(int64_t n, const uint8_t *x, size_t wblock, load_fn load, tail_fn tail,
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
  for (int r = 0; r < R; r++) {
    float v = _mm512_reduce_add_ps(acc[r]);
    if (b0 < nb)
      v += tail((nb - b0) * QK8_0, x + (size_t)b0 * wblock,
                a + (size_t)r * a_stride + (size_t)b0 * sizeof(block_q8_0));
    out[(size_t)r * out_stride] = v;
  }
}

#define KERNEL(name, block, tailfn)                                            \
  float nc_avx512_dot_##name(int64_t n, const void *w, const void *a) {        \
    float out;                                                                 \
    srows(n, w, sizeof(block), ld_##name, tailfn, a, 0, 1, &out, 1);           \
    return out;                                                                \
  }                                                                            \
  void nc_avx512_dot_##name##_rows(int64_t n, const void *w, const void *a,    \
                                   size_t a_stride, int nrows, float *out,     \
                                   size_t out_stride) {                        \
    const uint8_t *ap = a;                                                     \
    int r = 0;                                                                 \
    for (; r + 8 <= nrows; r += 8)                                             \
      srows(n, w, sizeof(block), ld_##name, tailfn, ap + (size_t)r * a_stride, \
            a_stride, 8, out + (size_t)r * out_stride, out_stride);            \
    for (; r + 4 <= nrows; r += 4)                                             \
      srows(n, w, sizeof(block), ld_##name, tailfn, ap + (size_t)r * a_stride, \
            a_stride, 4, out + (size_t)r * out_stride, out_stride);            \
    for (; r < nrows; r++)                                                     \
      srows(n, w, sizeof(block), ld_##name, tailfn, ap + (size_t)r * a_stride, \
            a_stride, 1, out + (size_t)r * out_stride, out_stride);            \
  }
KERNEL(q8_0, block_q8_0, nc_avx2_dot_q8_0)
KERNEL(q4_0, block_q4_0, nc_avx2_dot_q4_0)
KERNEL(q5_0, block_q5_0, nc_avx2_dot_q5_0)
#undef KERNEL
