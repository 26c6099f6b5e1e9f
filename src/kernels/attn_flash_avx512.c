/* attn_flash_avx512: attn_flash's tile with AVX-512 (compiled with
 * -mavx512f -mavx2 -mfma -mf16c, see mk/model.mk; chosen at run time). The
 * dot keeps ggml_vec_dot_f16's four 16-lane accumulators in four registers
 * and sums them as the plain build does; the value accumulator lives in
 * registers as floats that are always rounded to half (a round trip through
 * vcvtps2ph, as llama.cpp stores and reloads its F16 accumulator), so every
 * step is the plain build's. Head sizes the registers do not cover (hd not
 * a multiple of 64, hdv not a multiple of 16 or above 256) take the plain
 * build. */
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) &&           \
    defined(__F16C__)
#include <immintrin.h>

#include <math.h>

#include "attn_flash.h"
#include "ops.h"

enum { MAX_REGS = 16 };

static inline __m512 load_h(const nc_fp16 *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

static inline __m512 round_h(__m512 x) {
  return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}

/* The 16-lane halving tree (nc_sum16_tree). */
static inline float sum_tree(__m512 v) {
  const __m256 a = _mm256_add_ps(
      _mm512_castps512_ps256(v),
      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 b =
      _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  const __m128 d = _mm_add_ss(c, _mm_movehdup_ps(c));
  return _mm_cvtss_f32(d);
}

static inline float dot64(const nc_fp16 *k, const __m512 *q, int32_t hd) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int32_t i = 0; i < hd; i += 64) {
    a0 = _mm512_fmadd_ps(load_h(k + i), q[i / 16], a0);
    a1 = _mm512_fmadd_ps(load_h(k + i + 16), q[i / 16 + 1], a1);
    a2 = _mm512_fmadd_ps(load_h(k + i + 32), q[i / 16 + 2], a2);
    a3 = _mm512_fmadd_ps(load_h(k + i + 48), q[i / 16 + 3], a3);
  }
  a0 = _mm512_add_ps(a0, a2);
  a1 = _mm512_add_ps(a1, a3);
  return sum_tree(_mm512_add_ps(a0, a1));
}

static void flash_tile_avx512(const nc_flash_query *fq, const nc_fp16 *k,
                              size_t k_stride, const nc_fp16 *v,
                              size_t v_stride, int32_t n, const float *tab,
                              float *s, nc_flash_state *st) {
  const int32_t hd = fq->hd, hdv = fq->hdv;
  if (hd % 64 != 0 || hd > 16 * MAX_REGS || hdv % 16 != 0 ||
      hdv > 16 * MAX_REGS) {
    nc_attn_flash_plain()->tile(fq, k, k_stride, v, v_stride, n, tab, s, st);
    return;
  }
  const int32_t nr = hdv / 16;
  for (int32_t i = 0; i < fq->m; i++) {
    const nc_fp16 *qh = fq->q + (size_t)i * (size_t)hd;
    __m512 q[MAX_REGS];
    for (int32_t r = 0; r < hd / 16; r++)
      q[r] = load_h(qh + 16 * r);
    for (int32_t j = 0; j < n; j++)
      s[j] = nc_flash_score(dot64(k + (size_t)j * k_stride, q, hd), fq->scale,
                            fq->softcap);
    nc_fp16 *acch = st->acc + (size_t)i * (size_t)hdv;
    __m512 acc[MAX_REGS];
    for (int32_t r = 0; r < nr; r++)
      acc[r] = load_h(acch + 16 * r);
    float M = st->M[i], S = st->S[i];
    for (int32_t j = 0; j < n; j++) {
      float ms = 1.0f, vs = 1.0f;
      if (s[j] > M) {
        ms = expf(M - s[j]);
        M = s[j];
        const __m512 m = _mm512_set1_ps(ms);
        for (int32_t r = 0; r < nr; r++)
          acc[r] = round_h(_mm512_mul_ps(acc[r], m));
      } else {
        vs = expf(s[j] - M);
      }
      const nc_fp16 *vr = v + (size_t)j * v_stride;
      const __m512 w = _mm512_set1_ps(vs);
      for (int32_t r = 0; r < nr; r++)
        acc[r] = round_h(_mm512_fmadd_ps(load_h(vr + 16 * r), w, acc[r]));
      S = fmaf(S, ms, vs);
    }
    for (int32_t r = 0; r < nr; r++)
      _mm256_storeu_si256((__m256i *)(acch + 16 * r),
                          _mm512_cvtps_ph(acc[r], _MM_FROUND_TO_NEAREST_INT));
    st->M[i] = M;
    st->S[i] = S;
  }
}

static const nc_attn_flash_kernels AVX512 = {
    .name = "avx512",
    .tile = flash_tile_avx512,
    .tile_typed = nc_flash_tile_typed_avx512,
    .tile_prompt = nc_flash_tile_prompt_avx512,
};

const nc_attn_flash_kernels *nc_attn_flash_avx512(void) {
  return &AVX512;
}
#else
#include "attn_flash.h"
const nc_attn_flash_kernels *nc_attn_flash_avx512(void) {
  return NULL;
}
#endif
