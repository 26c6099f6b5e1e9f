/* avx2_klow: AVX2 kernels for the low-bit K-quants, Q2_K · Q8_K and
 * Q3_K · Q8_K, single-row and multi-row (shared by both SIMD tables).
 *
 * Layout of both: two halves of 128 elements; in half h, 2-bit field j of
 * qs[32h + l] is element 128h + 32j + l, so eight shifts and masks give the
 * 256 quants in element order, 32 per vector. Each 16 elements have their
 * own scale, applied with madd to the int16 pair sums of maddubs.
 *
 * Both in llama.cpp's AVX2 order (bit-identical dots): 8 int32 lanes I_k
 * (lane k: elements 32c + 4k .. 32c + 4k + 3 of every chunk c, times their
 * 16-element scale), d = d_a * d_w, result hsum(acc).
 * Q2_K: q in 0..3 with a 4-bit scale and a 4-bit min per 16 elements; per
 *   block acc = fma(-d_a * dmin_w, M, acc) (M_k = min_2k bs_2k +
 *   min_2k+1 bs_2k+1), then acc = fma(d, I, acc).
 * Q3_K: q = 2-bit value - 4 unless the hmask bit is set, signed 6-bit
 *   scales; stored as q + 4 (unsigned), with maddubs(4, a) subtracted from
 *   each pair sum (so each lane holds exactly llama.cpp's integer);
 *   acc = fma(d, I, acc).
 * The multi-row kernels unpack each weight block once for up to 8
 * activation rows and run the same operations per row: bit-identical to
 * vec_dot whatever nrows. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "avx2_util.h"
#include "tables.h"

typedef struct klow_w {
  __m256i q[8];  /* unsigned quants in element order */
  __m256i sc[8]; /* madd multipliers per 32 elements (two scales) */
  __m256i sc16;  /* Q2_K: the 16 mins; Q3_K: the 16 scales */
  float d, dmin;
} klow_w;

/* The 2-bit fields of one block's 64 qs bytes, in element order. */
static inline __attribute__((always_inline)) void
two_bit_fields(const uint8_t *qs, __m256i q[8]) {
  const __m256i three = _mm256_set1_epi8(3);
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
      q[4 * h + j] = _mm256_and_si256(_mm256_srli_epi16(v, 2 * j), three);
  }
}

static inline __attribute__((always_inline)) void
q2k_unpack(const block_q2_K *x, klow_w *u) {
  two_bit_fields(x->qs, u->q);
  __m128i s = _mm_loadu_si128((const __m128i *)x->scales);
  const __m128i low = _mm_set1_epi8(0x0f);
  __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(s, low));
  u->sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), low));
  nc_pair_scales(sc16, u->sc);
  u->d = _cvtsh_ss(x->d);
  u->dmin = _cvtsh_ss(x->dmin);
}

/* The 16 signed 6-bit scales of Q3_K (value - 32) as int16. */
static inline __m256i q3k_scales(const uint8_t *s) {
  uint32_t w[3];
  memcpy(w, s, 12);
  const uint32_t k4 = 0x0f0f0f0f, k2 = 0x03030303;
  /* low nibbles: bytes 0..7 (scales 0..7) then their high nibbles (8..15);
   * the top two bits of scale i come from byte 8 + i % 4, shift 2 (i / 4) */
  const uint32_t v[4] = {
      (w[0] & k4) | ((w[2] & k2) << 4),
      (w[1] & k4) | (((w[2] >> 2) & k2) << 4),
      ((w[0] >> 4) & k4) | (((w[2] >> 4) & k2) << 4),
      ((w[1] >> 4) & k4) | (((w[2] >> 6) & k2) << 4),
  };
  __m256i u = _mm256_cvtepu8_epi16(
      _mm_set_epi32((int)v[3], (int)v[2], (int)v[1], (int)v[0]));
  return _mm256_sub_epi16(u, _mm256_set1_epi16(32));
}

static inline __attribute__((always_inline)) void
q3k_unpack(const block_q3_K *x, klow_w *u) {
  two_bit_fields(x->qs, u->q);
  const __m256i hm = _mm256_loadu_si256((const __m256i *)x->hmask);
  const __m256i four = _mm256_set1_epi8(4);
#pragma GCC unroll 8
  for (int k = 0; k < 8; k++) { /* chunk k uses hmask bit k: + 4 if set */
    __m256i bit = _mm256_and_si256(k <= 2 ? _mm256_slli_epi16(hm, 2 - k)
                                          : _mm256_srli_epi16(hm, k - 2),
                                   four);
    u->q[k] = _mm256_or_si256(u->q[k], bit);
  }
  u->sc16 = q3k_scales(x->scales);
  nc_pair_scales(u->sc16, u->sc);
  u->d = _cvtsh_ss(x->d);
}

static inline __attribute__((always_inline)) __m256i
klow_isum(const klow_w *u, const block_q8_K *y, bool q3) {
  __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * j));
    __m256i p = _mm256_maddubs_epi16(u->q[j], a);
    if (q3) /* undo the + 4 per pair: exact int16 */
      p = _mm256_sub_epi16(p, _mm256_maddubs_epi16(_mm256_set1_epi8(4), a));
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, u->sc[j]));
  }
  return isum;
}

/* nr (1..8) activation rows against one Q2_K (q3 = false) or Q3_K row. */
static inline __attribute__((always_inline)) void
klow_chunk(int64_t n, const uint8_t *x, bool q3, const uint8_t *a,
           size_t a_stride, int nr, float *out, size_t out_stride) {
  __m256 acc[8];
  for (int r = 0; r < nr; r++)
    acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++) {
    klow_w u;
    if (q3)
      q3k_unpack((const block_q3_K *)x + i, &u);
    else
      q2k_unpack((const block_q2_K *)x + i, &u);
    for (int r = 0; r < nr; r++) {
      const block_q8_K *y = (const block_q8_K *)(a + (size_t)r * a_stride) + i;
      if (!q3) { /* the mins first, into the same accumulator */
        __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
        __m256i m = _mm256_madd_epi16(bs, u.sc16);
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(-y->d * u.dmin),
                                 _mm256_cvtepi32_ps(m), acc[r]);
      }
      __m256i isum = klow_isum(&u, y, q3);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(u.d * y->d),
                               _mm256_cvtepi32_ps(isum), acc[r]);
    }
  }
  for (int r = 0; r < nr; r++)
    out[(size_t)r * out_stride] = nc_hsum8(acc[r]);
}

float nc_avx2_dot_q2_k(int64_t n, const void *w, const void *a) {
  float out;
  klow_chunk(n, w, false, a, 0, 1, &out, 1);
  return out;
}
void nc_avx2_dot_q2_k_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 8 <= nrows; r += 8)
    klow_chunk(n, w, false, ap + (size_t)r * a_stride, a_stride, 8,
               out + (size_t)r * out_stride, out_stride);
  for (; r + 4 <= nrows; r += 4)
    klow_chunk(n, w, false, ap + (size_t)r * a_stride, a_stride, 4,
               out + (size_t)r * out_stride, out_stride);
  for (; r < nrows; r++)
    klow_chunk(n, w, false, ap + (size_t)r * a_stride, a_stride, 1,
               out + (size_t)r * out_stride, out_stride);
}

float nc_avx2_dot_q3_k(int64_t n, const void *w, const void *a) {
  float out;
  klow_chunk(n, w, true, a, 0, 1, &out, 1);
  return out;
}
void nc_avx2_dot_q3_k_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 8 <= nrows; r += 8)
    klow_chunk(n, w, true, ap + (size_t)r * a_stride, a_stride, 8,
               out + (size_t)r * out_stride, out_stride);
  for (; r + 4 <= nrows; r += 4)
    klow_chunk(n, w, true, ap + (size_t)r * a_stride, a_stride, 4,
               out + (size_t)r * out_stride, out_stride);
  for (; r < nrows; r++)
    klow_chunk(n, w, true, ap + (size_t)r * a_stride, a_stride, 1,
               out + (size_t)r * out_stride, out_stride);
}
