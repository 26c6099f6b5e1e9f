/* avx2_kquant: AVX2 + FMA + F16C kernels for Q4_K, Q5_K and Q6_K · Q8_K,
 * single-row and multi-row (shared by the avx2 and avx512 tables).
 *
 * Within a 256-element super-block everything is integer: the sub-block
 * scales multiply int16 pair sums (maddubs, then madd with the scale), the
 * mins (Q4_K/Q5_K) and the -32 offset (Q6_K) use the activation's bsums.
 * Float order per (weight row, activation row): for each super-block,
 * acc = fma(d_w * d_a, I, acc) over 8 int32 lanes I (lane k: elements
 * 32c + 4k .. 32c + 4k + 3 of every chunk c, times the chunk's scale).
 * Q4_K, Q5_K and Q6_K are llama.cpp's AVX2 order exactly (bit-identical):
 * Q4_K adds accm = fma(-d_a * dmin_w, M, accm) over 4 lanes
 * M_k = m_2k S_2k + m_2k+1 S_2k+1 (S_s: the activation sum of 32-element
 * chunk s) and returns hsum(acc) + ((accm_0 + accm_2) + (accm_1 + accm_3)).
 * Q5_K (also llama.cpp's order) sums those 4 min lanes into one integer M,
 * s = fma(-d_a * dmin_w, (float)M, s), and returns hsum(acc) + s.
 * hsum = (k + k+4), then (0+2, 1+3), then the two.
 * The multi-row
 * kernel unpacks each weight block once for up to 8 activation rows and
 * runs the same operations per row, so it is bit-identical to vec_dot. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "avx2_util.h"
#include "tables.h"

enum { MAX_R = 8 };

/* --------------------------------------------------------------- Q4_K */

typedef struct q4k_w {
  __m256i q[8];  /* unsigned quants in element order, 32 per vector */
  __m256i sc[8]; /* scale of each 32-element sub-block, as int16 */
  __m128i mins8; /* the 8 mins as int16 (llama.cpp's Q4_K min lanes) */
  float d, dmin;
} q4k_w;

/* Word j of a 128-bit vector of int16, broadcast to all 16 lanes. */
static inline __m256i bcast_word(__m128i v, int j) {
  __m128i b = _mm_shuffle_epi8(v, _mm_set1_epi16((short)(0x0100 + 0x0202 * j)));
  return _mm256_set_m128i(b, b);
}

/* Scales and mins of a Q4_K/Q5_K block (the same 12-byte packing). */
static inline void k4_unpack_scales(const uint8_t *scales, q4k_w *u) {
  /* 6-bit scales and mins: words a = bytes 0..3, b = 4..7, c = 8..11 hold
   * sc0..3 (+ top bits of sc4..7), m0..3 (+ top bits of m4..7), and the
   * low nibbles of sc4..7 (low half) and m4..7 (high half). */
  uint32_t w[3];
  memcpy(w, scales, 12);
  const uint32_t k6 = 0x3f3f3f3f, k4 = 0x0f0f0f0f, k2 = 0x30303030;
  const uint32_t sm[4] = {
      w[0] & k6,                              /* sc0..3 */
      (w[2] & k4) | ((w[0] >> 2) & k2),       /* sc4..7 */
      w[1] & k6,                              /* m0..3 */
      ((w[2] >> 4) & k4) | ((w[1] >> 2) & k2) /* m4..7 */
  };
  const __m256i v16 = _mm256_cvtepu8_epi16(
      _mm_set_epi32((int)sm[3], (int)sm[2], (int)sm[1], (int)sm[0]));
  const __m128i sc16 = _mm256_castsi256_si128(v16);
  const __m128i mn16 = _mm256_extracti128_si256(v16, 1);
#pragma GCC unroll 8
  for (int k = 0; k < 8; k++)
    u->sc[k] = bcast_word(sc16, k);
  u->mins8 = mn16;
}

static inline __attribute__((always_inline)) void
q4k_unpack(const block_q4_K *x, q4k_w *u) {
  k4_unpack_scales(x->scales, u);
  const __m256i low = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 8
  for (int c = 0; c < 4; c++) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * c));
    u->q[2 * c] = _mm256_and_si256(v, low);
    u->q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
  }
  u->d = _cvtsh_ss(x->d);
  u->dmin = _cvtsh_ss(x->dmin);
}

/* Bit k (0..7) of every byte, moved to bit 4 (0x10 where set). Word
 * shifts of at most 4 never move bits across bytes into bit 4. */
static inline __m256i bit_to_16(__m256i v, int k) {
  __m256i s =
      k <= 4 ? _mm256_slli_epi16(v, 4 - k) : _mm256_srli_epi16(v, k - 4);
  return _mm256_and_si256(s, _mm256_set1_epi8(0x10));
}

static inline __attribute__((always_inline)) void
q5k_unpack(const block_q5_K *x, q4k_w *u) {
  k4_unpack_scales(x->scales, u);
  const __m256i low = _mm256_set1_epi8(0x0f);
  const __m256i hb = _mm256_loadu_si256((const __m256i *)x->qh);
#pragma GCC unroll 8
  for (int c = 0; c < 4; c++) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * c));
    __m256i lo =
        _mm256_or_si256(_mm256_and_si256(v, low), bit_to_16(hb, 2 * c));
    __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), low),
                                 bit_to_16(hb, 2 * c + 1));
    u->q[2 * c] = lo;
    u->q[2 * c + 1] = hi;
  }
  u->d = _cvtsh_ss(x->d);
  u->dmin = _cvtsh_ss(x->dmin);
}

static inline __attribute__((always_inline)) void
q4k_row(const q4k_w *u, const block_q8_K *y, bool q5, __m256 *acc, float *summs,
        __m128 *accm4) {
  __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) {
    __m256i w = u->q[j];
    __m256i a = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * j));
    __m256i p = _mm256_maddubs_epi16(w, a);
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, u->sc[j]));
  }
  __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
  *acc = _mm256_fmadd_ps(_mm256_set1_ps(u->d * y->d), _mm256_cvtepi32_ps(isum),
                         *acc);
  /* llama.cpp's 4 min lanes: S_s = bsum 2s + bsum 2s+1 */
  __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bs),
                               _mm256_extracti128_si256(bs, 1));
  __m128i m = _mm_madd_epi16(u->mins8, q8s);
  if (q5) { /* their sum (exact), one scalar fma */
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
    *summs = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(-y->d * u->dmin),
                                        _mm_set_ss((float)_mm_cvtsi128_si32(m)),
                                        _mm_set_ss(*summs)));
  } else {
    *accm4 =
        _mm_fmadd_ps(_mm_set1_ps(-y->d * u->dmin), _mm_cvtepi32_ps(m), *accm4);
  }
}

/* llama.cpp's Q4_K min lanes summed as (0 + 2) + (1 + 3). */
static inline float hsum4_m(__m128 m) {
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

/* nr (1..8) activation rows against one Q4_K (q5 = false) or Q5_K row. */
static inline __attribute__((always_inline)) void
k4_chunk(int64_t n, const uint8_t *x, bool q5, const uint8_t *a,
         size_t a_stride, int nr, float *out, size_t out_stride) {
  __m256 acc[MAX_R];
  __m128 accm4[MAX_R];
  float summs[MAX_R];
  for (int r = 0; r < nr; r++) {
    acc[r] = _mm256_setzero_ps();
    accm4[r] = _mm_setzero_ps();
    summs[r] = 0;
  }
  for (int64_t i = 0; i < n / QK_K; i++) {
    q4k_w u;
    if (q5)
      q5k_unpack((const block_q5_K *)x + i, &u);
    else
      q4k_unpack((const block_q4_K *)x + i, &u);
    for (int r = 0; r < nr; r++) {
      const block_q8_K *y = (const block_q8_K *)(a + (size_t)r * a_stride);
      q4k_row(&u, y + i, q5, &acc[r], &summs[r], &accm4[r]);
    }
  }
  for (int r = 0; r < nr; r++)
    out[(size_t)r * out_stride] =
        q5 ? nc_hsum8(acc[r]) + summs[r] : nc_hsum8(acc[r]) + hsum4_m(accm4[r]);
}

float nc_avx2_dot_q4_k(int64_t n, const void *w, const void *a) {
  float out;
  k4_chunk(n, w, false, a, 0, 1, &out, 1);
  return out;
}
void nc_avx2_dot_q4_k_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 8 <= nrows; r += 8)
    k4_chunk(n, w, false, ap + (size_t)r * a_stride, a_stride, 8,
             out + (size_t)r * out_stride, out_stride);
  for (; r + 4 <= nrows; r += 4)
    k4_chunk(n, w, false, ap + (size_t)r * a_stride, a_stride, 4,
             out + (size_t)r * out_stride, out_stride);
  for (; r < nrows; r++)
    k4_chunk(n, w, false, ap + (size_t)r * a_stride, a_stride, 1,
             out + (size_t)r * out_stride, out_stride);
}

float nc_avx2_dot_q5_k(int64_t n, const void *w, const void *a) {
  float out;
  k4_chunk(n, w, true, a, 0, 1, &out, 1);
  return out;
}
void nc_avx2_dot_q5_k_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 8 <= nrows; r += 8)
    k4_chunk(n, w, true, ap + (size_t)r * a_stride, a_stride, 8,
             out + (size_t)r * out_stride, out_stride);
  for (; r + 4 <= nrows; r += 4)
    k4_chunk(n, w, true, ap + (size_t)r * a_stride, a_stride, 4,
             out + (size_t)r * out_stride, out_stride);
  for (; r < nrows; r++)
    k4_chunk(n, w, true, ap + (size_t)r * a_stride, a_stride, 1,
             out + (size_t)r * out_stride, out_stride);
}

/* --------------------------------------------------------------- Q6_K */

typedef struct q6k_w {
  __m256i q[8];  /* unsigned quants (0..63) in element order */
  __m256i sc[8]; /* per 32 elements: two 16-group scales as int16 */
  __m256i sc16;  /* the 16 scales as int16, for the bsums correction */
  float d;
} q6k_w;

static inline __attribute__((always_inline)) void
q6k_unpack(const block_q6_K *x, q6k_w *u) {
  const __m256i low = _mm256_set1_epi8(0x0f), hi = _mm256_set1_epi8(0x30);
#pragma GCC unroll 8
  for (int h = 0; h < 2; h++) {
    const uint8_t *ql = x->ql + 64 * h, *qh = x->qh + 32 * h;
    __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
    __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
    __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
    __m256i q0 =
        _mm256_or_si256(_mm256_and_si256(l0, low),
                        _mm256_and_si256(_mm256_slli_epi16(hb, 4), hi));
    __m256i q1 =
        _mm256_or_si256(_mm256_and_si256(l1, low),
                        _mm256_and_si256(_mm256_slli_epi16(hb, 2), hi));
    __m256i q2 =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low),
                        _mm256_and_si256(hb, hi));
    __m256i q3 =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low),
                        _mm256_and_si256(_mm256_srli_epi16(hb, 2), hi));
    u->q[4 * h] = q0;
    u->q[4 * h + 1] = q1;
    u->q[4 * h + 2] = q2;
    u->q[4 * h + 3] = q3;
  }
  u->sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
  nc_pair_scales(u->sc16, u->sc);
  u->d = _cvtsh_ss(x->d);
}

static inline __attribute__((always_inline)) void
q6k_row(const q6k_w *u, const block_q8_K *y, __m256 *acc) {
  __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) {
    __m256i w = u->q[j];
    __m256i a = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * j));
    __m256i p = _mm256_maddubs_epi16(w, a);
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, u->sc[j]));
  }
  /* the quants were stored + 32: subtract 32 * sum(scale * bsum) */
  __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
  __m256i corr = _mm256_madd_epi16(bs, u->sc16);
  isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(corr, 5));
  *acc = _mm256_fmadd_ps(_mm256_set1_ps(u->d * y->d), _mm256_cvtepi32_ps(isum),
                         *acc);
}

static inline __attribute__((always_inline)) void
q6k_chunk(int64_t n, const block_q6_K *x, const uint8_t *a, size_t a_stride,
          int nr, float *out, size_t out_stride) {
  __m256 acc[MAX_R];
  for (int r = 0; r < nr; r++)
    acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++) {
    q6k_w u;
    q6k_unpack(x + i, &u);
    for (int r = 0; r < nr; r++) {
      const block_q8_K *y = (const block_q8_K *)(a + (size_t)r * a_stride);
      q6k_row(&u, y + i, &acc[r]);
    }
  }
  for (int r = 0; r < nr; r++)
    out[(size_t)r * out_stride] = nc_hsum8(acc[r]);
}

float nc_avx2_dot_q6_k(int64_t n, const void *w, const void *a) {
  float out;
  q6k_chunk(n, w, a, 0, 1, &out, 1);
  return out;
}

void nc_avx2_dot_q6_k_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 8 <= nrows; r += 8)
    q6k_chunk(n, w, ap + (size_t)r * a_stride, a_stride, 8,
              out + (size_t)r * out_stride, out_stride);
  for (; r + 4 <= nrows; r += 4)
    q6k_chunk(n, w, ap + (size_t)r * a_stride, a_stride, 4,
              out + (size_t)r * out_stride, out_stride);
  for (; r < nrows; r++)
    q6k_chunk(n, w, ap + (size_t)r * a_stride, a_stride, 1,
              out + (size_t)r * out_stride, out_stride);
}
