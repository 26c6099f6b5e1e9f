/* avx2_nl: AVX2 dots of IQ4_NL, MXFP4 (with Q8_0 activations), IQ4_XS,
 * TQ1_0 and TQ2_0 (with Q8_K), bit-identical to ref_nl.c (llama.cpp's x86
 * order; IQ4_XS also in its tiled order). Each block's integer products go
 * into eight int32 lanes, lane k the elements whose index mod 32 is in
 * [4k, 4k+4), exactly as ref_nl.c adds them. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx2_util.h"
#include "dot_loops.h"
#include "ref.h"
#include "tables.h"

#define H2F(x) _cvtsh_ss(x) /* F16C: exact, as nc_fp16_to_fp32 */

/* Signed bytes w (|w| <= 127) times signed bytes a, four adjacent
 * products per int32 lane (exact: a pair is at most 2 * 127 * 127). */
static inline __m256i dot_i8(__m256i w, __m256i a) {
  const __m256i p16 =
      _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

/* Unsigned bytes q (0..3) times signed bytes a, per int32 lane. */
static inline __m256i dot_u8(__m256i q, __m256i a) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(q, a), _mm256_set1_epi16(1));
}

/* 32 codes (16 bytes of nibbles: low nibbles elements 0..15, high 16..31)
 * looked up in a 16-value table. */
static inline __m256i lookup_nibbles(__m128i table, const uint8_t *qs) {
  const __m128i b = _mm_loadu_si128((const __m128i *)qs);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(b, m4));
  const __m128i hi =
      _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(b, 4), m4));
  return _mm256_set_m128i(hi, lo);
}

static inline int32_t hsum_i32(__m256i v) {
  __m128i s =
      _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

/* ---------------------------------------------------- IQ4_NL, MXFP4 */

static inline float nl32_dot(int64_t n, const uint8_t *w, size_t bsize,
                             size_t qs_off, const int8_t vals[16],
                             float (*scale)(const uint8_t *),
                             const block_q8_0 *y) {
  const __m128i table = _mm_loadu_si128((const __m128i *)vals);
  const int64_t nb = n / 32;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    const uint8_t *b0 = w + (size_t)i * bsize, *b1 = b0 + bsize;
    const __m256i l0 = dot_i8(lookup_nibbles(table, b0 + qs_off),
                              _mm256_loadu_si256((const __m256i *)y[i].qs));
    const __m256i l1 = dot_i8(lookup_nibbles(table, b1 + qs_off),
                              _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(y[i].d) * scale(b0)),
                           _mm256_cvtepi32_ps(l0), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(y[i + 1].d) * scale(b1)),
                           _mm256_cvtepi32_ps(l1), acc1);
  }
  float sumf = nc_hsum8(_mm256_add_ps(acc0, acc1));
  for (; i < nb; i++) {
    const uint8_t *b = w + (size_t)i * bsize;
    const __m256i l = dot_i8(lookup_nibbles(table, b + qs_off),
                             _mm256_loadu_si256((const __m256i *)y[i].qs));
    sumf = fmaf(H2F(y[i].d) * scale(b), (float)hsum_i32(l), sumf);
  }
  return sumf;
}

/* llama.cpp's llamafile order (ref_nl.c): one accumulator, every block. */
float nc_avx2_dot_iq4_nl_tinyblas(int64_t n, const void *vw, const void *va) {
  const block_iq4_nl *x = vw;
  const block_q8_0 *y = va;
  const __m128i table = _mm_loadu_si128((const __m128i *)nc_iq4nl_values);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK4_NL; i++) {
    const __m256i l = dot_i8(lookup_nibbles(table, x[i].qs),
                             _mm256_loadu_si256((const __m256i *)y[i].qs));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d)),
                          _mm256_cvtepi32_ps(l), acc);
  }
  return nc_hsum8(acc);
}

static float iq4nl_scale(const uint8_t *b) {
  nc_fp16 d;
  memcpy(&d, b, sizeof d);
  return H2F(d);
}

static float mxfp4_scale(const uint8_t *b) {
  return nc_e8m0_to_fp32_half(b[0]);
}

float nc_avx2_dot_iq4_nl(int64_t n, const void *w, const void *a) {
  return nl32_dot(n, w, sizeof(block_iq4_nl), offsetof(block_iq4_nl, qs),
                  nc_iq4nl_values, iq4nl_scale, a);
}

float nc_avx2_dot_mxfp4(int64_t n, const void *w, const void *a) {
  return nl32_dot(n, w, sizeof(block_mxfp4), offsetof(block_mxfp4, qs),
                  nc_mxfp4_values, mxfp4_scale, a);
}

/* ------------------------------------------------------------ IQ4_XS */

/* A superblock's lanes: each sub-block's lanes times (ls - 32). */
static inline __m256i iq4xs_lanes(const block_iq4_xs *x, const int8_t *a,
                                  __m128i table) {
  __m256i sum = _mm256_setzero_si256();
  for (int j = 0; j < QK_K / 32; j++) {
    const int ls = (((x->scales_l[j / 2] >> 4 * (j % 2)) & 0x0f) |
                    (((x->scales_h >> 2 * j) & 3) << 4)) -
                   32;
    const __m256i l = dot_i8(lookup_nibbles(table, x->qs + 16 * j),
                             _mm256_loadu_si256((const __m256i *)(a + 32 * j)));
    sum = _mm256_add_epi32(sum, _mm256_mullo_epi32(l, _mm256_set1_epi32(ls)));
  }
  return sum;
}

float nc_avx2_dot_iq4_xs(int64_t n, const void *vw, const void *va) {
  const block_iq4_xs *x = vw;
  const block_q8_K *y = va;
  const __m128i table = _mm_loadu_si128((const __m128i *)nc_iq4nl_values);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++) {
    const __m256i l = iq4xs_lanes(&x[i], y[i].qs, table);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * y[i].d),
                          _mm256_cvtepi32_ps(l), acc);
  }
  return nc_hsum8(acc);
}

float nc_avx2_dot_iq4_xs_tiled(int64_t n, const void *vw, const void *va) {
  const block_iq4_xs *x = vw;
  const block_q8_K *y = va;
  const __m128i table = _mm_loadu_si128((const __m128i *)nc_iq4nl_values);
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    const int32_t s = hsum_i32(iq4xs_lanes(&x[i], y[i].qs, table));
    acc = fmaf((float)s * H2F(x[i].d), y[i].d, acc);
  }
  return acc;
}

/* ------------------------------------------------------ TQ1_0, TQ2_0 */

/* Bytes times 3^k mod 256 (k = 1, 2): adds and masked shifts. */
static inline __m256i times3(__m256i v) {
  return _mm256_add_epi8(v, _mm256_add_epi8(v, v));
}

static inline __m256i times9(__m256i v) {
  const __m256i v8 =
      _mm256_and_si256(_mm256_slli_epi16(v, 3), _mm256_set1_epi8((char)0xf8));
  return _mm256_add_epi8(v8, v);
}

/* The base-3 digit (q * 3) >> 8 of each byte q: 0, 1 or 2. */
static inline __m256i trit(__m256i q) {
  const __m256i z = _mm256_setzero_si256();
  const __m256i three = _mm256_set1_epi16(3);
  const __m256i lo = _mm256_srli_epi16(
      _mm256_mullo_epi16(_mm256_unpacklo_epi8(q, z), three), 8);
  const __m256i hi = _mm256_srli_epi16(
      _mm256_mullo_epi16(_mm256_unpackhi_epi8(q, z), three), 8);
  return _mm256_packus_epi16(lo, hi);
}

static inline __m256 tq_accumulate(__m256i lanes, const block_q8_K *y,
                                   nc_fp16 xd, __m256 acc) {
  const __m256i bs = _mm256_madd_epi16(
      _mm256_loadu_si256((const __m256i *)y->bsums), _mm256_set1_epi16(1));
  lanes = _mm256_sub_epi32(lanes, bs);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes),
                         _mm256_set1_ps(y->d * H2F(xd)), acc);
}

float nc_avx2_dot_tq1_0(int64_t n, const void *vw, const void *va) {
  static const uint8_t pow3[4] = {1, 3, 9, 27};
  const block_tq1_0 *x = vw;
  const block_q8_K *y = va;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++) {
    const int8_t *a = y[i].qs;
    /* elements 0..159: digit d of qs[0..31] */
    __m256i v[5];
    v[0] = _mm256_loadu_si256((const __m256i *)x[i].qs);
    v[1] = times3(v[0]);
    v[2] = times9(v[0]);
    v[3] = times9(v[1]);
    v[4] = times9(v[2]);
    __m256i lanes = _mm256_setzero_si256();
    for (int d = 0; d < 5; d++)
      lanes = _mm256_add_epi32(
          lanes, dot_u8(trit(v[d]),
                        _mm256_loadu_si256((const __m256i *)(a + 32 * d))));
    /* elements 160..255: digits of qs[32..47] (16 each), then qh's 16 */
    uint8_t tail[16];
    for (int d = 0; d < 4; d++)
      for (int m = 0; m < 4; m++)
        tail[4 * d + m] = (uint8_t)(x[i].qh[m] * pow3[d]);
    const __m128i q16 = _mm_loadu_si128((const __m128i *)(x[i].qs + 32));
    const __m256i w0 = _mm256_set_m128i(q16, q16);
    const __m256i w1 = times3(w0), w2 = times9(w0), w3 = times9(w1);
    const __m256i w4 = times9(w2);
    const __m256i u[3] = {
        _mm256_blend_epi32(w0, w1, 0xf0), _mm256_blend_epi32(w2, w3, 0xf0),
        _mm256_set_m128i(_mm_loadu_si128((const __m128i *)tail),
                         _mm256_castsi256_si128(w4))};
    for (int k = 0; k < 3; k++)
      lanes = _mm256_add_epi32(
          lanes, dot_u8(trit(u[k]), _mm256_loadu_si256(
                                        (const __m256i *)(a + 160 + 32 * k))));
    acc = tq_accumulate(lanes, &y[i], x[i].d, acc);
  }
  return nc_hsum8(acc);
}

float nc_avx2_dot_tq2_0(int64_t n, const void *vw, const void *va) {
  const block_tq2_0 *x = vw;
  const block_q8_K *y = va;
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++) {
    __m256i lanes = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
      const __m256i b = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
      for (int l = 0; l < 4; l++) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(b, 2 * l), m3);
        const __m256i a =
            _mm256_loadu_si256((const __m256i *)(y[i].qs + 128 * h + 32 * l));
        lanes = _mm256_add_epi32(lanes, dot_u8(q, a));
      }
    }
    acc = tq_accumulate(lanes, &y[i], x[i].d, acc);
  }
  return nc_hsum8(acc);
}

NC_DOT_ROWS(avx2, iq4_nl)
NC_DOT_ROWS(avx2, iq4_nl_tinyblas)
NC_DOT_ROWS(avx2, mxfp4)
NC_DOT_ROWS(avx2, iq4_xs)
NC_DOT_ROWS(avx2, iq4_xs_tiled)
NC_DOT_ROWS(avx2, tq1_0)
NC_DOT_ROWS(avx2, tq2_0)

/* Matmuls from the single dots (the avx512 table's gemm_few). */
NC_DOT_GEMM(avx2, iq4_nl)
NC_DOT_GEMM(avx2, iq4_xs)
