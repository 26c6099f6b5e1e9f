/* ops_avx512: the row ops where 16 lanes pay (swiglu: ggml's exp), compiled
 * with -mavx512f -mavx2 -mfma -mf16c (see mk/model.mk; chosen at run time);
 * the others are the AVX2 build's. Same operations lane by lane as the
 * plain reference (ops_simd.h), so the same bits. */
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) &&           \
    defined(__F16C__)
#include "delta_net.h"
#include "ops.h"
#include "ops_simd.h"

static void swiglu_avx512(const float *gate, const float *up, float *out,
                          int64_t n) {
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = nc_v16_expf_ggml(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    _mm512_storeu_ps(out + i, _mm512_mul_ps(s, _mm512_loadu_ps(up + i)));
  }
  for (; i < n; i++)
    out[i] = nc_silu(gate[i]) * up[i];
}

/* silu_avx2 16 at a time. */
static void silu_avx512(float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 e = nc_v16_expf_ggml(_mm512_sub_ps(_mm512_setzero_ps(), v));
    _mm512_storeu_ps(x + i,
                     _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), e)));
  }
  nc_ops_avx2()->silu(x + i, n - i);
}

static void rmsnorm_avx512(const float *x, const float *w, float *y, int64_t n,
                           float eps) {
  nc_ops_avx2()->rmsnorm(x, w, y, n, eps);
}
static void rope_avx512(float *x, int32_t n_heads, int32_t head_dim,
                        int32_t n_rot, bool neox, const float *cos_c,
                        const float *sin_c) {
  nc_ops_avx2()->rope_apply(x, n_heads, head_dim, n_rot, neox, cos_c, sin_c);
}
static void add_avx512(float *y, const float *x, int64_t n) {
  nc_ops_avx2()->add(y, x, n);
}
static void to_f16_avx512(const float *x, nc_fp16 *y, int64_t n) {
  nc_ops_avx2()->to_f16(x, y, n);
}
static void round_f16_avx512(const float *x, float *y, int64_t n) {
  nc_ops_avx2()->round_f16(x, y, n);
}

/* geglu_avx2 16 at a time. */
static void geglu_avx512(float *gate, const float *up, int64_t n,
                         const nc_fp16 *gelu) {
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i),
                 u = up ? _mm512_loadu_ps(up + i) : _mm512_set1_ps(1.0f);
    const __m512i h = _mm512_cvtepu16_epi32(
        _mm512_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m512i t = _mm512_i32gather_epi32(h, (const int *)gelu, 2);
    __m512 y = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(t)), u);
    y = _mm512_mask_mul_ps(
        y, _mm512_cmp_ps_mask(g, _mm512_set1_ps(10.0f), _CMP_GE_OQ), g, u);
    y = _mm512_mask_mov_ps(
        y, _mm512_cmp_ps_mask(g, _mm512_set1_ps(-10.0f), _CMP_LE_OQ),
        _mm512_setzero_ps());
    _mm512_storeu_ps(gate + i, y);
  }
  nc_ops_plain()->geglu(gate + i, up ? up + i : NULL, n - i, gelu);
}

static const nc_ops_kernels AVX512 = {
    .name = "avx512",
    .rmsnorm = rmsnorm_avx512,
    .rope_apply = rope_avx512,
    .swiglu = swiglu_avx512,
    .silu = silu_avx512,
    .add = add_avx512,
    .to_f16 = to_f16_avx512,
    .round_f16 = round_f16_avx512,
    .geglu = geglu_avx512,
    .delta_rule = nc_delta_rule_avx2,
};

const nc_ops_kernels *nc_ops_avx512(void) {
  return &AVX512;
}
#else
#include "ops.h"

const nc_ops_kernels *nc_ops_avx512(void) {
  return NULL;
}
#endif
