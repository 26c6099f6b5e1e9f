/* attn_flash_typed_avx512: the typed-cache tile (attn_flash.h) with SIMD
 * for Q8_0 and Q4_0 keys and values (compiled with -mavx512f -mavx2 -mfma
 * -mf16c, see mk/model.mk). The key dot is llama.cpp's AVX2 Q8_0 dot: per
 * 32-block eight int32 lanes of four products (sign trick, maddubs, madd),
 * one fused multiply-add with d_k * d_q per lane, then hsum_float_8; the
 * values are dequantized exactly and fused-multiply-added into the F32
 * accumulator 16 lanes at a time. Each lane computes the plain build's
 * operations, so the bits are the plain build's. Other types, and value
 * heads not a multiple of 32, take the plain build. */
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) &&           \
    defined(__F16C__)
#include <immintrin.h>

#include <math.h>

#include "attn_flash.h"
#include "ops.h"

/* The 32 quants of a block as int8. */
static inline __m256i q8_quants(const block_q8_0 *x) {
  return _mm256_loadu_si256((const __m256i *)x->qs);
}

static inline __m256i q4_quants(const block_q4_0 *x) {
  const __m128i b = _mm_loadu_si128((const __m128i *)x->qs);
  const __m128i m = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(b, m);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
  const __m256i q = _mm256_set_m128i(hi, lo);
  return _mm256_sub_epi8(q, _mm256_set1_epi8(8));
}

/* Eight int32 lanes: lane l the sum of products 4l .. 4l+3. */
static inline __m256 block_sums(__m256i x, __m256i y) {
  const __m256i ax = _mm256_sign_epi8(x, x);
  const __m256i sy = _mm256_sign_epi8(y, x);
  const __m256i p16 = _mm256_maddubs_epi16(ax, sy);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

static inline float hsum8(__m256 a) {
  const __m128 b =
      _mm_add_ps(_mm256_extractf128_ps(a, 1), _mm256_castps256_ps128(a));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

static float dot_q(nc_type kt, const void *k, const block_q8_0 *q, int32_t nb,
                   const float *tab) {
  __m256 acc = _mm256_setzero_ps();
  if (kt == NC_TYPE_Q8_0) {
    const block_q8_0 *x = k;
    for (int32_t i = 0; i < nb; i++) {
      const __m256 d = _mm256_set1_ps(tab[x[i].d] * tab[q[i].d]);
      acc = _mm256_fmadd_ps(d, block_sums(q8_quants(&x[i]), q8_quants(&q[i])),
                            acc);
    }
  } else {
    const block_q4_0 *x = k;
    for (int32_t i = 0; i < nb; i++) {
      const __m256 d = _mm256_set1_ps(tab[x[i].d] * tab[q[i].d]);
      acc = _mm256_fmadd_ps(d, block_sums(q4_quants(&x[i]), q8_quants(&q[i])),
                            acc);
    }
  }
  return hsum8(acc);
}

/* acc = fma(dequant(v), vs, acc) over hdv values (a multiple of 32). */
static void mad_v(nc_type vt, const uint8_t *v, float vs, float *acc,
                  int32_t hdv, const float *tab) {
  const __m512 w = _mm512_set1_ps(vs);
  for (int32_t b = 0; b < hdv / 32; b++) {
    __m512 lo, hi;
    float d;
    if (vt == NC_TYPE_Q8_0) {
      const block_q8_0 *x = (const block_q8_0 *)v + b;
      d = tab[x->d];
      const __m256i q = q8_quants(x);
      lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)));
      hi = _mm512_cvtepi32_ps(
          _mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)));
    } else {
      const block_q4_0 *x = (const block_q4_0 *)v + b;
      d = tab[x->d];
      const __m256i q = q4_quants(x);
      lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)));
      hi = _mm512_cvtepi32_ps(
          _mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)));
    }
    const __m512 vd = _mm512_set1_ps(d);
    float *a = acc + 32 * b;
    _mm512_storeu_ps(
        a, _mm512_fmadd_ps(_mm512_mul_ps(lo, vd), w, _mm512_loadu_ps(a)));
    _mm512_storeu_ps(a + 16, _mm512_fmadd_ps(_mm512_mul_ps(hi, vd), w,
                                             _mm512_loadu_ps(a + 16)));
  }
}

static bool quant(nc_type t) {
  return t == NC_TYPE_Q8_0 || t == NC_TYPE_Q4_0;
}

void nc_flash_tile_typed_avx512(const nc_flash_tquery *fq, const uint8_t *k,
                                size_t k_stride, const uint8_t *v,
                                size_t v_stride, int32_t n, const float *tab,
                                float *s, float *vrow, nc_flash_state *st) {
  const int32_t hdv = fq->hdv;
  if (!quant(fq->k_type) || !quant(fq->v_type) || hdv % 32 != 0 ||
      fq->hd % 32 != 0) {
    nc_flash_tile_typed_plain(fq, k, k_stride, v, v_stride, n, tab, s, vrow,
                              st);
    return;
  }
  for (int32_t i = 0; i < fq->m; i++) {
    const block_q8_0 *q =
        (const block_q8_0 *)((const uint8_t *)fq->q + (size_t)i * fq->q_bytes);
    for (int32_t j = 0; j < n; j++)
      s[j] = nc_flash_score(
          dot_q(fq->k_type, k + (size_t)j * k_stride, q, fq->hd / 32, tab),
          fq->scale, fq->softcap);
    float M = st->M[i], S = st->S[i];
    float *acc = st->acc32 + (size_t)i * (size_t)hdv;
    for (int32_t j = 0; j < n; j++) {
      float ms = 1.0f, vs = 1.0f;
      if (s[j] > M) {
        ms = expf(M - s[j]);
        M = s[j];
        const __m512 vm = _mm512_set1_ps(ms);
        for (int32_t d = 0; d < hdv; d += 16)
          _mm512_storeu_ps(acc + d,
                           _mm512_mul_ps(_mm512_loadu_ps(acc + d), vm));
      } else {
        vs = expf(s[j] - M);
      }
      mad_v(fq->v_type, v + (size_t)j * v_stride, vs, acc, hdv, tab);
      S = fmaf(S, ms, vs);
    }
    st->M[i] = M;
    st->S[i] = S;
  }
}
#endif
