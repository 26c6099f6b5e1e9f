/* avx512_nl: AVX-512 VNNI kernels of IQ4_NL, MXFP4, IQ4_XS, TQ1_0 and TQ2_0,
 * bit-identical to ref_nl.c (and so to avx2_nl.c): the integer products go
 * through vpdpbusd, whose int32 lanes hold the same four adjacent products
 * as the reference's lanes (element index mod 32 in [4k, 4k+4) for lane k
 * of each 32-element half), exact, and every float operation is the
 * reference's, in its order. Where an order adds blocks one after another
 * into one accumulator, the two halves of a 512-bit register carry two
 * independent dots instead (two activation rows, or the even and the odd
 * block of the paired vec_dot order). The matmuls of IQ4_NL and MXFP4 are
 * avx512_nl_gemm.c and avx512_iq4nl_gemm.c: register tiles in the same orders.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx2_util.h"
#include "dot_loops.h"
#include "ref.h"
#include "tables.h"

#define H2F(x) _cvtsh_ss(x) /* F16C: exact, as nc_fp16_to_fp32 */

/* Signed w (|w| <= 127) times signed a, per int32 lane of 4 products:
 * |w| times a with w's sign. */
static inline __m512i dot_s8(__m512i w, __m512i a) {
  const __mmask64 neg = _mm512_movepi8_mask(w);
  const __m512i aw = _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), aw);
}

static inline __m256i dot_s8_256(__m256i w, __m256i a) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(w, w),
                             _mm256_sign_epi8(a, w));
}

/* 32 nibble codes (16 bytes: low nibbles elements 0..15) looked up. */
static inline __m256i lookup32(__m128i table, const uint8_t *qs) {
  const __m128i b = _mm_loadu_si128((const __m128i *)qs);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(
      _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(b, 4), m4)),
      _mm_shuffle_epi8(table, _mm_and_si128(b, m4)));
}

static inline __m512i join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

static inline __m512 join_ps(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1);
}

static inline float hsum_lo(__m512 v) {
  return nc_hsum8(_mm512_castps512_ps256(v));
}

static inline float hsum_hi(__m512 v) {
  return nc_hsum8(_mm512_extractf32x8_ps(v, 1));
}

static inline int32_t hsum_i256(__m256i v) {
  __m128i s =
      _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

/* ---------------------------------------------- IQ4_NL, MXFP4: vec_dot */

typedef float (*scale_fn)(const uint8_t *block);

static float iq4nl_scale(const uint8_t *b) {
  nc_fp16 d;
  memcpy(&d, b, sizeof d);
  return H2F(d);
}

static float mxfp4_scale(const uint8_t *b) {
  return nc_e8m0_to_fp32_half(b[0]);
}

/* The paired order: even blocks in the low half, odd in the high half. */
static inline float nl32_pairs(int64_t n, const uint8_t *w, size_t bsize,
                               size_t qs_off, const int8_t vals[16],
                               scale_fn scale, const block_q8_0 *y) {
  const __m128i table = _mm_loadu_si128((const __m128i *)vals);
  const int64_t nb = n / 32;
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    const uint8_t *b0 = w + (size_t)i * bsize, *b1 = b0 + bsize;
    const __m512i wv =
        join(lookup32(table, b0 + qs_off), lookup32(table, b1 + qs_off));
    const __m512i av = join(_mm256_loadu_si256((const __m256i *)y[i].qs),
                            _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
    const __m512 d =
        join_ps(H2F(y[i].d) * scale(b0), H2F(y[i + 1].d) * scale(b1));
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot_s8(wv, av)), acc);
  }
  float sumf = nc_hsum8(_mm256_add_ps(_mm512_castps512_ps256(acc),
                                      _mm512_extractf32x8_ps(acc, 1)));
  for (; i < nb; i++) {
    const uint8_t *b = w + (size_t)i * bsize;
    const __m256i l = dot_s8_256(lookup32(table, b + qs_off),
                                 _mm256_loadu_si256((const __m256i *)y[i].qs));
    sumf = fmaf(H2F(y[i].d) * scale(b), (float)hsum_i256(l), sumf);
  }
  return sumf;
}

float nc_avx512_dot_iq4_nl(int64_t n, const void *w, const void *a) {
  return nl32_pairs(n, w, sizeof(block_iq4_nl), offsetof(block_iq4_nl, qs),
                    nc_iq4nl_values, iq4nl_scale, a);
}

float nc_avx512_dot_mxfp4(int64_t n, const void *w, const void *a) {
  return nl32_pairs(n, w, sizeof(block_mxfp4), offsetof(block_mxfp4, qs),
                    nc_mxfp4_values, mxfp4_scale, a);
}

/* ------------------------------------------- IQ4_NL: llamafile's order */

/* One weight row against activation rows a0 and a1 (a1 may be a0): one
 * accumulator per row, every block in turn; the two rows in the halves. */
static void iq4nl_tinyblas2(int64_t n, const block_iq4_nl *x,
                            const block_q8_0 *y0, const block_q8_0 *y1,
                            float *out0, float *out1) {
  const __m128i table = _mm_loadu_si128((const __m128i *)nc_iq4nl_values);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n / QK4_NL; i++) {
    const __m256i wq = lookup32(table, x[i].qs);
    const __m512i av = join(_mm256_loadu_si256((const __m256i *)y0[i].qs),
                            _mm256_loadu_si256((const __m256i *)y1[i].qs));
    const float dw = H2F(x[i].d);
    const __m512 d = join_ps(dw * H2F(y0[i].d), dw * H2F(y1[i].d));
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot_s8(join(wq, wq), av)), acc);
  }
  *out0 = hsum_lo(acc);
  *out1 = hsum_hi(acc);
}

float nc_avx512_dot_iq4_nl_tinyblas(int64_t n, const void *w, const void *a) {
  float r, unused;
  iq4nl_tinyblas2(n, w, a, a, &r, &unused);
  return r;
}

/* ------------------------------------------------------------ IQ4_XS */

/* A superblock's eight lanes (sub-block lanes times ls - 32), as ref_nl.c
 * sums them: two sub-blocks per register, the halves folded at the end. */
static inline __m256i iq4xs_lanes(const block_iq4_xs *x, const int8_t *a,
                                  __m128i table) {
  __m512i sum = _mm512_setzero_si512();
  for (int j = 0; j < QK_K / 32; j += 2) {
    const int ls0 = (((x->scales_l[j / 2] >> 0) & 0x0f) |
                     (((x->scales_h >> 2 * j) & 3) << 4)) -
                    32;
    const int ls1 = (((x->scales_l[j / 2] >> 4) & 0x0f) |
                     (((x->scales_h >> (2 * j + 2)) & 3) << 4)) -
                    32;
    const __m512i wv = join(lookup32(table, x->qs + 16 * j),
                            lookup32(table, x->qs + 16 * j + 16));
    const __m512i av = _mm512_loadu_si512((const void *)(a + 32 * j));
    const __m512i ls =
        _mm512_inserti64x4(_mm512_set1_epi32(ls0), _mm256_set1_epi32(ls1), 1);
    sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(dot_s8(wv, av), ls));
  }
  return _mm256_add_epi32(_mm512_castsi512_si256(sum),
                          _mm512_extracti64x4_epi64(sum, 1));
}

float nc_avx512_dot_iq4_xs(int64_t n, const void *vw, const void *va) {
  const block_iq4_xs *x = vw;
  const block_q8_K *y = va;
  const __m128i table = _mm_loadu_si128((const __m128i *)nc_iq4nl_values);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++)
    acc = _mm256_fmadd_ps(
        _mm256_set1_ps(H2F(x[i].d) * y[i].d),
        _mm256_cvtepi32_ps(iq4xs_lanes(&x[i], y[i].qs, table)), acc);
  return nc_hsum8(acc);
}

float nc_avx512_dot_iq4_xs_tiled(int64_t n, const void *vw, const void *va) {
  const block_iq4_xs *x = vw;
  const block_q8_K *y = va;
  const __m128i table = _mm_loadu_si128((const __m128i *)nc_iq4nl_values);
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    const int32_t s = hsum_i256(iq4xs_lanes(&x[i], y[i].qs, table));
    acc = fmaf((float)s * H2F(x[i].d), y[i].d, acc);
  }
  return acc;
}

/* ------------------------------------------------------ TQ1_0, TQ2_0 */

/* Unsigned digits q (0..2) times signed a, per int32 lane. */
static inline __m512i dot_u8(__m512i q, __m512i a) {
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, a);
}

/* Bytes times 3 and times 9, mod 256. */
static inline __m512i times3(__m512i v) {
  return _mm512_add_epi8(v, _mm512_add_epi8(v, v));
}

static inline __m512i times9(__m512i v) {
  return _mm512_add_epi8(
      _mm512_and_si512(_mm512_slli_epi16(v, 3), _mm512_set1_epi8((char)0xf8)),
      v);
}

/* (q * 3) >> 8 of each byte. */
static inline __m512i trit(__m512i q) {
  const __m512i z = _mm512_setzero_si512(), three = _mm512_set1_epi16(3);
  const __m512i lo = _mm512_srli_epi16(
      _mm512_mullo_epi16(_mm512_unpacklo_epi8(q, z), three), 8);
  const __m512i hi = _mm512_srli_epi16(
      _mm512_mullo_epi16(_mm512_unpackhi_epi8(q, z), three), 8);
  return _mm512_packus_epi16(lo, hi);
}

/* The halves' lanes folded, less the activation's 16-sums, into acc. */
static inline __m256 tq_accumulate(__m512i lanes, const block_q8_K *y,
                                   nc_fp16 xd, __m256 acc) {
  __m256i l = _mm256_add_epi32(_mm512_castsi512_si256(lanes),
                               _mm512_extracti64x4_epi64(lanes, 1));
  const __m256i bs = _mm256_madd_epi16(
      _mm256_loadu_si256((const __m256i *)y->bsums), _mm256_set1_epi16(1));
  l = _mm256_sub_epi32(l, bs);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(l), _mm256_set1_ps(y->d * H2F(xd)),
                         acc);
}

float nc_avx512_dot_tq2_0(int64_t n, const void *vw, const void *va) {
  const block_tq2_0 *x = vw;
  const block_q8_K *y = va;
  const __m512i m3 = _mm512_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++) {
    __m512i lanes = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++) {
      const __m256i b = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
      /* shifts 0 and 2 (elements 32l + m, l = 0, 1), then 4 and 6 */
      for (int l = 0; l < 4; l += 2) {
        const __m512i q = _mm512_and_si512(
            join(_mm256_srli_epi16(b, 2 * l), _mm256_srli_epi16(b, 2 * l + 2)),
            m3);
        const __m512i a =
            _mm512_loadu_si512((const void *)(y[i].qs + 128 * h + 32 * l));
        lanes = _mm512_add_epi32(lanes, dot_u8(q, a));
      }
    }
    acc = tq_accumulate(lanes, &y[i], x[i].d, acc);
  }
  return nc_hsum8(acc);
}

float nc_avx512_dot_tq1_0(int64_t n, const void *vw, const void *va) {
  static const uint8_t pow3[4] = {1, 3, 9, 27};
  const block_tq1_0 *x = vw;
  const block_q8_K *y = va;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++) {
    const int8_t *a = y[i].qs;
    /* elements 0..159: digit d of qs[0..31]; pairs of digits per register */
    const __m256i q0 = _mm256_loadu_si256((const __m256i *)x[i].qs);
    const __m512i v01 = _mm512_inserti64x4(
        _mm512_castsi256_si512(q0),
        _mm256_add_epi8(q0, _mm256_add_epi8(q0, q0)), 1); /* x1 | x3 */
    const __m512i v23 = times9(v01);                      /* x9 | x27 */
    const __m512i v4 = times9(v23);                       /* x81 | x243 */
    __m512i lanes = dot_u8(trit(v01), _mm512_loadu_si512((const void *)a));
    lanes = _mm512_add_epi32(
        lanes, dot_u8(trit(v23), _mm512_loadu_si512((const void *)(a + 64))));
    /* digit 4 (low half of v4), then elements 160..191 (digits 0 and 1 of
     * qs[32..47]) */
    const __m128i q16 = _mm_loadu_si128((const __m128i *)(x[i].qs + 32));
    const __m256i t0 = _mm256_set_m128i(q16, q16);
    const __m256i t01 = _mm256_blend_epi32(
        t0, _mm256_add_epi8(t0, _mm256_add_epi8(t0, t0)), 0xf0); /* x1 | x3 */
    const __m512i v4t = join(_mm512_castsi512_si256(v4), t01);
    lanes = _mm512_add_epi32(
        lanes, dot_u8(trit(v4t), _mm512_loadu_si512((const void *)(a + 128))));
    /* elements 192..223 (digits 2, 3 of qs[32..47]), 224..239 (digit 4),
     * 240..255 (qh's digits) */
    uint8_t tail[16];
    for (int d = 0; d < 4; d++)
      for (int m = 0; m < 4; m++)
        tail[4 * d + m] = (uint8_t)(x[i].qh[m] * pow3[d]);
    const __m512i t23 = times9(_mm512_castsi256_si512(t01)); /* x9 | x27 */
    const __m256i t4 = _mm512_castsi512_si256(
        times9(_mm512_castsi256_si512(_mm512_castsi512_si256(t23))));
    const __m256i last = _mm256_set_m128i(
        _mm_loadu_si128((const __m128i *)tail), _mm256_castsi256_si128(t4));
    const __m512i v5 = join(_mm512_castsi512_si256(t23), last);
    lanes = _mm512_add_epi32(
        lanes, dot_u8(trit(v5), _mm512_loadu_si512((const void *)(a + 192))));
    acc = tq_accumulate(lanes, &y[i], x[i].d, acc);
  }
  return nc_hsum8(acc);
}

NC_DOT_ROWS(avx512, iq4_nl)
NC_DOT_ROWS(avx512, mxfp4)
NC_DOT_ROWS(avx512, iq4_xs)
NC_DOT_ROWS(avx512, iq4_xs_tiled)
NC_DOT_ROWS(avx512, tq1_0)
NC_DOT_ROWS(avx512, tq2_0)

/* vec_dot_rows in the llamafile order: two activation rows per register. */
void nc_avx512_dot_iq4_nl_tinyblas_rows(int64_t n, const void *w, const void *a,
                                        size_t a_stride, int nrows, float *out,
                                        size_t out_stride) {
  nc_avx512_gemm_iq4_nl_tinyblas(n, w, 0, 1, a, a_stride, nrows, out,
                                 out_stride);
}

/* Matmuls from the single dots (gemm, gemm_few). */
NC_DOT_GEMM(avx512, tq1_0)
NC_DOT_GEMM(avx512, tq2_0)
