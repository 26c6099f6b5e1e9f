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

#define NC_INLINE static inline __attribute__((always_inline))

enum { CHUNK = 64 };

/* Row scores for keys [0, n): s[j] = the score of key j. */
static void row_scores(const nc_flash_query *fq, int32_t i, const nc_fp16 *k,
                       size_t k_stride, int32_t n, float *s) {
  const int32_t hd = fq->hd;
  const nc_fp16 *qh = fq->q + (size_t)i * (size_t)hd;
  __m512 q[MAX_REGS];
  for (int32_t r = 0; r < hd / 16; r++)
    q[r] = load_h(qh + 16 * r);
  if (fq->softcap == 0.0f) { /* nc_flash_score without a soft-cap */
    for (int32_t j = 0; j < n; j++)
      s[j] = dot64(k + (size_t)j * k_stride, q, hd) * fq->scale;
    return;
  }
  for (int32_t j = 0; j < n; j++)
    s[j] = nc_flash_score(dot64(k + (size_t)j * k_stride, q, hd), fq->scale,
                          fq->softcap);
}

/* The scalar steps of one row over n (<= CHUNK) scores, ahead of the
 * values: on a new maximum ms = expf(M - s), vs = 1, else ms = 1, vs =
 * expf(s - M); S = fma(S, ms, vs). s becomes vs. (An ms of exactly 1 on a
 * new maximum scales the F16 accumulator by 1, which changes nothing: the
 * value loop skips it.) */
static void row_weights(float *s, float *ms, int32_t n, float *M, float *S) {
  float m = *M, sum = *S;
  for (int32_t j = 0; j < n; j++) {
    float a = 1.0f, w = 1.0f;
    if (s[j] > m) {
      a = expf(m - s[j]);
      m = s[j];
    } else {
      w = expf(s[j] - m);
    }
    ms[j] = a;
    s[j] = w;
    sum = fmaf(sum, a, w);
  }
  *M = m;
  *S = sum;
}

/* The F16 accumulators of rows [0, m) (nr registers each, m * nr <= 16
 * in registers: m and nr constant at the call) over n keys, with the
 * weights row_weights left: ws + i * wstride, ms + i * CHUNK. */
NC_INLINE void values_f16(const nc_fp16 *v, size_t v_stride, int32_t n,
                          const float *ws, size_t wstride, const float *ms,
                          nc_fp16 *acch, size_t acc_stride, const int m,
                          const int nr) {
  __m512 acc[4][MAX_REGS];
#pragma GCC unroll 4
  for (int i = 0; i < m; i++)
#pragma GCC unroll 16
    for (int r = 0; r < nr; r++)
      acc[i][r] = load_h(acch + (size_t)i * acc_stride + 16 * r);
  for (int32_t j = 0; j < n; j++) {
    const nc_fp16 *vr = v + (size_t)j * v_stride;
#pragma GCC unroll 4
    for (int i = 0; i < m; i++) {
      const float a = ms[(size_t)i * CHUNK + (size_t)j];
      if (a != 1.0f) {
        const __m512 mm = _mm512_set1_ps(a);
#pragma GCC unroll 16
        for (int r = 0; r < nr; r++)
          acc[i][r] = round_h(_mm512_mul_ps(acc[i][r], mm));
      }
      const __m512 w = _mm512_set1_ps(ws[(size_t)i * wstride + (size_t)j]);
#pragma GCC unroll 16
      for (int r = 0; r < nr; r++)
        acc[i][r] = round_h(_mm512_fmadd_ps(load_h(vr + 16 * r), w, acc[i][r]));
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < m; i++)
#pragma GCC unroll 16
    for (int r = 0; r < nr; r++)
      _mm256_storeu_si256(
          (__m256i *)(acch + (size_t)i * acc_stride + 16 * r),
          _mm512_cvtps_ph(acc[i][r], _MM_FROUND_TO_NEAREST_INT));
}

/* Rows [i0, i0 + m) over keys [0, n) (n <= CHUNK). */
static void rows_chunk(const nc_flash_query *fq, int32_t i0, int32_t m,
                       const nc_fp16 *k, size_t k_stride, const nc_fp16 *v,
                       size_t v_stride, int32_t n, float *s,
                       nc_flash_state *st) {
  const int32_t hdv = fq->hdv, nr = hdv / 16;
  float ms[4 * CHUNK];
  for (int32_t i = 0; i < m; i++) {
    float *si = s + (size_t)i * (size_t)n;
    row_scores(fq, i0 + i, k, k_stride, n, si);
    row_weights(si, ms + (size_t)i * CHUNK, n, &st->M[i0 + i], &st->S[i0 + i]);
  }
  nc_fp16 *acch = st->acc + (size_t)i0 * (size_t)hdv;
  const size_t as = (size_t)hdv, ws = (size_t)n;
#define VALUES(M_, NR_) values_f16(v, v_stride, n, s, ws, ms, acch, as, M_, NR_)
  if (nr == 4 && m == 4)
    VALUES(4, 4);
  else if (nr == 4 && m == 3)
    VALUES(3, 4);
  else if (nr == 4 && m == 2)
    VALUES(2, 4);
  else if (nr == 4 && m == 1)
    VALUES(1, 4);
  else if (nr == 8 && m == 2)
    VALUES(2, 8);
  else if (nr == 8 && m == 1)
    VALUES(1, 8);
  else if (nr == 16 && m == 1)
    VALUES(1, 16);
  else
    for (int32_t i = 0; i < m; i++) /* other shapes: one row at a time */
      for (int32_t r = 0; r < nr; r++) {
        /* one register of one row (the chains are per lane) */
        values_f16(v + 16 * r, v_stride, n, s + (size_t)i * ws, ws,
                   ms + (size_t)i * CHUNK, acch + (size_t)i * as + 16 * r, as,
                   1, 1);
      }
#undef VALUES
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
  /* rows in groups whose accumulators fit the registers */
  const int32_t nr = hdv / 16, group = nr <= 4 ? 4 : nr <= 8 ? 2 : 1;
  for (int32_t j0 = 0; j0 < n; j0 += CHUNK) {
    const int32_t c = n - j0 < CHUNK ? n - j0 : CHUNK;
    for (int32_t i0 = 0; i0 < fq->m; i0 += group)
      rows_chunk(fq, i0, fq->m - i0 < group ? fq->m - i0 : group,
                 k + (size_t)j0 * k_stride, k_stride, v + (size_t)j0 * v_stride,
                 v_stride, c, s, st);
  }
}

static const nc_attn_flash_kernels AVX512 = {
    .name = "avx512",
    .tile = flash_tile_avx512,
    .tile_typed = nc_flash_tile_typed_avx512,
    .tile_prompt = nc_flash_tile_prompt_avx512,
    .tile_scores = nc_flash_tile_scores_avx512,
    .tile_exps = nc_flash_tile_exps_avx512,
    .tile_values = nc_flash_tile_values_avx512,
    .tile_widen = nc_flash_tile_widen_avx512,
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
