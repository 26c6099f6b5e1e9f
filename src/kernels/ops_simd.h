/* ops_simd: inline vector forms of ops.c's scalar helpers, shared by the
 * SIMD builds (ops_avx2.c, attn_kernel_avx2.c, ops_avx512.c). Include only
 * from files compiled with -mavx2 -mfma -mf16c (the AVX-512 helpers also
 * need -mavx512f). Internal.
 *
 * Every helper computes, lane by lane, the very same IEEE operations as
 * its scalar counterpart (same fused multiply-adds, same roundings), so the
 * results are identical bit for bit. Where the scalar code takes a rare
 * branch (exp out of its normal range, NaN inputs to the half rounding),
 * the helper reports it and the caller recomputes that vector with the
 * scalar function: exact by construction, and never taken on sane data. */
#ifndef NC_OPS_SIMD_H
#define NC_OPS_SIMD_H

#include <immintrin.h>
#include <stdint.h>

#include "gguf/quant.h"
#include "ops.h"

/* ---- ggml's exp (nc_expf_ggml), 8 lanes */

/* e^x for lanes whose n = round(x * log2(e)) is in [-126, 127] (the
 * scalar fast path); *ok becomes 0 when any lane is outside (or NaN), and
 * the caller must then use nc_v8_expf_ggml_exact. */
static inline __m256 nc_v8_expf_fast(__m256 x, int *ok) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  /* fma(-n, c, y) == fnmadd(n, c, y): the product's sign flips exactly. */
  const __m256 b =
      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                       _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 in =
      _mm256_and_ps(_mm256_cmp_ps(n, _mm256_set1_ps(-126.0f), _CMP_GE_OQ),
                    _mm256_cmp_ps(n, _mm256_set1_ps(127.0f), _CMP_LE_OQ));
  *ok &= _mm256_movemask_ps(in) == 0xff;
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b,
                                      _mm256_set1_ps(0x1.573e2ep-5f)),
                      u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b,
                                      _mm256_set1_ps(0x1.fffdb6p-2f))),
      u,
      _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
  /* 2^n by its exponent bits (n is an integer in range for kept lanes). */
  const __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(j, _mm256_castsi256_ps(e));
}

/* The scalar function on each lane. */
static inline __m256 nc_v8_expf_ggml_exact(__m256 x) {
  float v[8];
  _mm256_storeu_ps(v, x);
  for (int i = 0; i < 8; i++)
    v[i] = nc_expf_ggml(v[i]);
  return _mm256_loadu_ps(v);
}

static inline __m256 nc_v8_expf_ggml(__m256 x) {
  int ok = 1;
  const __m256 y = nc_v8_expf_fast(x, &ok);
  return ok ? y : nc_v8_expf_ggml_exact(x);
}

/* ---- float -> half (nc_fp32_to_fp16) */

/* Round to nearest even, as vcvtps2ph does; it agrees with the scalar
 * conversion on every non-NaN float (overflow to inf, half subnormals,
 * underflow to signed zero). For NaN the scalar gives sign | 0x7e00 while
 * the instruction keeps payload bits, so NaN lanes are patched. */
static inline __m128i nc_v8_to_f16(__m256 x) {
  __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  if (__builtin_expect(_mm256_movemask_ps(nan) != 0, 0)) {
    const __m128i m =
        _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(nan)),
                        _mm256_extractf128_si256(_mm256_castps_si256(nan), 1));
    h = _mm_blendv_epi8(h, _mm_and_si128(h, _mm_set1_epi16((short)0xfe00)), m);
  }
  return h;
}

/* nc_fp16_to_fp32(nc_fp32_to_fp16(x)) for 8 lanes. vcvtph2ps would quiet
 * a signalling half, but nc_v8_to_f16 never makes one. */
static inline __m256 nc_v8_round_f16(__m256 x) {
  return _mm256_cvtph_ps(nc_v8_to_f16(x));
}

/* ---- sums */

/* nc_sum16_tree of the 16 lanes lo (0..7) and hi (8..15). */
static inline float nc_v16_sum_tree(__m256 lo, __m256 hi) {
  const __m256 a = _mm256_add_ps(lo, hi);                /* i + 8 */
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), /* i + 4 */
                              _mm256_extractf128_ps(a, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b)); /* i + 2 */
  const __m128 d = _mm_add_ss(c, _mm_movehdup_ps(c));  /* i + 1 */
  return _mm_cvtss_f32(d);
}

/* The nc_sum16_tree of eight 16-lane accumulators at once: key j's lanes
 * are lo[j] (0..7) and hi[j] (8..15); returns the eight sums in order.
 * Each sum takes the same additions (with the same operands) as
 * nc_sum16_tree, only several sums share an instruction. */
static inline __m256 nc_v8x16_sum_tree(const __m256 lo[8], const __m256 hi[8]) {
  __m256 a[8], b[4], c[2];
  for (int j = 0; j < 8; j++)
    a[j] = _mm256_add_ps(lo[j], hi[j]); /* a_j[i] = v[i] + v[i + 8] */
  /* b: [b_j (4 lanes) | b_{j+1} (4 lanes)], b_j[i] = a_j[i] + a_j[i + 4] */
  for (int j = 0; j < 4; j++)
    b[j] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * j], a[2 * j + 1], 0x20),
                         _mm256_permute2f128_ps(a[2 * j], a[2 * j + 1], 0x31));
  /* c: [c_j0 c_j1 c_j2 c_j3 ...] pairs; c_j[i] = b_j[i] + b_j[i + 2]:
   * from b[0] = [b0 | b1] and b[1] = [b2 | b3]:
   * [b0[0] b0[1] b2[0] b2[1] | b1[0] b1[1] b3[0] b3[1]]
   * + [b0[2] b0[3] b2[2] b2[3] | b1[2] b1[3] b3[2] b3[3]] */
  for (int j = 0; j < 2; j++)
    c[j] = _mm256_add_ps(
        _mm256_shuffle_ps(b[2 * j], b[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
        _mm256_shuffle_ps(b[2 * j], b[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  /* c[0] = [c0 c2 | c1 c3] (2 lanes each), c[1] = [c4 c6 | c5 c7];
   * s_j = c_j[0] + c_j[1]: [s0 s2 s4 s6 | s1 s3 s5 s7] */
  const __m256 s =
      _mm256_add_ps(_mm256_shuffle_ps(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm256_shuffle_ps(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* ---- AVX-512 forms (files compiled with -mavx512f) */
#if defined(__AVX512F__)

/* nc_v8_expf_ggml on 16 lanes: the same operations; a vector with any lane
 * outside the scalar fast path goes through the 8-lane function (which
 * reruns such lanes with the scalar one). */
static inline __m512 nc_v16_expf_ggml(__m512 x) {
  const __m512 r = _mm512_set1_ps(0x1.8p23f);
  const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
  const __m512 n = _mm512_sub_ps(z, r);
  const __mmask16 in =
      _mm512_cmp_ps_mask(n, _mm512_set1_ps(-126.0f), _CMP_GE_OQ) &
      _mm512_cmp_ps_mask(n, _mm512_set1_ps(127.0f), _CMP_LE_OQ);
  if (__builtin_expect(in != 0xffff, 0)) {
    const __m256 lo = nc_v8_expf_ggml(_mm512_castps512_ps256(x));
    const __m256 hi = nc_v8_expf_ggml(
        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    return _mm512_castpd_ps(_mm512_insertf64x4(
        _mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
  }
  const __m512 b =
      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                       _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
  const __m512 u = _mm512_mul_ps(b, b);
  const __m512 j = _mm512_fmadd_ps(
      _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b,
                                      _mm512_set1_ps(0x1.573e2ep-5f)),
                      u,
                      _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b,
                                      _mm512_set1_ps(0x1.fffdb6p-2f))),
      u,
      _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(j, _mm512_castsi512_ps(e));
}

static inline __m256 nc_v16_lo(__m512 x) {
  return _mm512_castps512_ps256(x);
}
static inline __m256 nc_v16_hi(__m512 x) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
}

/* nc_v8_round_f16 on 16 lanes (NaN lanes through the 8-lane patch). */
static inline __m512 nc_v16_round_f16(__m512 x) {
  if (__builtin_expect(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q) != 0, 0)) {
    const __m256 lo = nc_v8_round_f16(nc_v16_lo(x));
    const __m256 hi = nc_v8_round_f16(nc_v16_hi(x));
    return _mm512_castpd_ps(_mm512_insertf64x4(
        _mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
  }
  return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}

#endif

#endif
