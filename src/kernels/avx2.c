/* avx2: AVX2 + FMA + F16C dot kernels (compiled with those flags only; the
 * dispatcher calls them only on CPUs that have them).
 *
 * Float order. Q4_1·Q8_1 and Q8_0·Q8_0 reproduce llama.cpp's x86 kernels
 * (ggml-cpu/arch/x86/quants.c) exactly: per 32-block, 8 int32 lanes (lane k
 * = elements 4k..4k+3) converted to float and fused-multiply-added with the
 * block's d_w * d_a into 8 float lanes; then the lanes are summed as
 * (k + k+4) then (0+2, 1+3) then the two; Q4_1 adds the min terms, summed
 * with fma in block order, last. So these agree bit for bit with the
 * llama.cpp build that produced the golden logits. The F32/F16 dots keep 32
 * float lanes (4 x 8), summed pairwise at the end. Everything else falls
 * back to ref. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx2_util.h"
#include "gemm_f16.h"
#include "ref.h"
#include "sampler_simd.h"
#include "tables.h"

static inline float h2f(nc_fp16 h) {
  return _cvtsh_ss(h);
}

/* 16 packed bytes -> 32 bytes: low nibbles, then high nibbles. */
static inline __m256i unpack_nibbles(const uint8_t *p) {
  __m128i v = _mm_loadu_si128((const __m128i *)p);
  __m256i b = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
  return _mm256_and_si256(b, _mm256_set1_epi8(0x0f));
}

/* u8 x s8 products summed in groups of 4 into 8 int32 lanes. */
static inline __m256i dot_u8s8(__m256i u, __m256i s) {
  __m256i p16 = _mm256_maddubs_epi16(u, s);
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

/* The two fp16 at p (d then m, or d then s) as floats in lanes 0 and 1. */
static inline __m128 h2f_pair(const void *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return _mm_cvtph_ps(_mm_cvtsi32_si128(v));
}

/* Byte i (0..31) = 0xff where bit i of the little-endian u32 at p is set. */
static inline __m256i bit_bytes(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  const __m256i spread = _mm256_setr_epi8(
      0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  /* bytes 0, 1 */
      2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3); /* bytes 2, 3 */
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
  __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)v), spread);
  return _mm256_cmpeq_epi8(_mm256_and_si256(b, bit), bit);
}

/* ---- Q4_1 / Q5_1 (unsigned quants and a min term), llama.cpp's order:
 * per block, acc = fma(d_w d_a, lanes, acc) and summs = fma(m_w, s_a,
 * summs); result hsum8(acc) + summs. The weight block is prepared once for
 * the R activation rows of the multi-row kernel, which runs the very same
 * operations per row as the single-row one. */

typedef struct wq_min {
  __m256i q; /* 32 unsigned quants */
  __m128 dm; /* d_w, m_w in lanes 0, 1 */
} wq_min;

static inline __attribute__((always_inline)) wq_min prep_q4_1(const void *p) {
  const block_q4_1 *x = p;
  return (wq_min){unpack_nibbles(x->qs), h2f_pair(&x->d)};
}

static inline __attribute__((always_inline)) wq_min prep_q5_1(const void *p) {
  const block_q5_1 *x = p;
  __m256i hi = _mm256_and_si256(bit_bytes(x->qh), _mm256_set1_epi8(0x10));
  return (wq_min){_mm256_or_si256(unpack_nibbles(x->qs), hi), h2f_pair(&x->d)};
}

typedef wq_min (*prep_min_fn)(const void *p);

static inline __attribute__((always_inline)) void
rows_min(int64_t n, const uint8_t *x, size_t wsize, prep_min_fn prep,
         const uint8_t *a, size_t a_stride, float *out, size_t out_stride,
         const int R) {
  __m256 acc[4];
  /* lane 1 runs the min chain summs = fma(m_w, s_a, summs); lane 0 runs
   * the same kind of chain on d_w, d_a and is ignored */
  __m128 summs[4];
#pragma GCC unroll 4
  for (int r = 0; r < R; r++) {
    acc[r] = _mm256_setzero_ps();
    summs[r] = _mm_setzero_ps();
  }
  for (int64_t i = 0; i < n / QK8_1; i++) {
    const wq_min w = prep(x + (size_t)i * wsize);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      const block_q8_1 *y = (const block_q8_1 *)(a + (size_t)r * a_stride) + i;
      const __m128 yds = h2f_pair(&y->d);
      summs[r] = _mm_fmadd_ps(w.dm, yds, summs[r]);
      const __m256 d = _mm256_broadcastss_ps(_mm_mul_ss(w.dm, yds));
      __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
      acc[r] =
          _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_u8s8(w.q, qy)), acc[r]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    out[(size_t)r * out_stride] =
        nc_hsum8(acc[r]) + _mm_cvtss_f32(_mm_movehdup_ps(summs[r]));
}

/* ---- Q4_0 / Q5_0 / Q8_0 (signed quants), llama.cpp's order: per block
 * acc = fma(d_w d_a, lanes, acc); result hsum8(acc). */

typedef struct wq_sgn {
  __m256i q;  /* 32 signed quants */
  __m256i aq; /* their magnitudes (the sign trick) */
  float d;
} wq_sgn;

static inline __attribute__((always_inline)) wq_sgn sgn(__m256i q, nc_fp16 d) {
  return (wq_sgn){q, _mm256_sign_epi8(q, q), h2f(d)};
}

static inline __attribute__((always_inline)) wq_sgn prep_q8_0(const void *p) {
  const block_q8_0 *x = p;
  return sgn(_mm256_loadu_si256((const __m256i *)x->qs), x->d);
}

static inline __attribute__((always_inline)) wq_sgn prep_q4_0(const void *p) {
  const block_q4_0 *x = p;
  return sgn(_mm256_sub_epi8(unpack_nibbles(x->qs), _mm256_set1_epi8(8)), x->d);
}

static inline __attribute__((always_inline)) wq_sgn prep_q5_0(const void *p) {
  const block_q5_0 *x = p;
  /* q - 16: where the fifth bit is clear, nibble | 0xf0 is nibble - 16 */
  __m256i hi =
      _mm256_andnot_si256(bit_bytes(x->qh), _mm256_set1_epi8((char)0xf0));
  return sgn(_mm256_or_si256(unpack_nibbles(x->qs), hi), x->d);
}

typedef wq_sgn (*prep_sgn_fn)(const void *p);

static inline __attribute__((always_inline)) void
rows_sgn(int64_t n, const uint8_t *x, size_t wsize, prep_sgn_fn prep,
         const uint8_t *a, size_t a_stride, float *out, size_t out_stride,
         const int R) {
  __m256 acc[4];
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK8_0; i++) {
    const wq_sgn w = prep(x + (size_t)i * wsize);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      const block_q8_0 *y = (const block_q8_0 *)(a + (size_t)r * a_stride) + i;
      const __m256 d = _mm256_set1_ps(w.d * h2f(y->d));
      __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
      __m256i l = dot_u8s8(w.aq, _mm256_sign_epi8(qy, w.q));
      acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(l), acc[r]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    out[(size_t)r * out_stride] = nc_hsum8(acc[r]);
}

float nc_avx2_dot_q4_1(int64_t n, const void *w, const void *a) {
  float out;
  rows_min(n, w, sizeof(block_q4_1), prep_q4_1, a, 0, &out, 1, 1);
  return out;
}
void nc_avx2_dot_q4_1_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 4 <= nrows; r += 4)
    rows_min(n, w, sizeof(block_q4_1), prep_q4_1, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 4);
  for (; r < nrows; r++)
    rows_min(n, w, sizeof(block_q4_1), prep_q4_1, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 1);
}

float nc_avx2_dot_q5_1(int64_t n, const void *w, const void *a) {
  float out;
  rows_min(n, w, sizeof(block_q5_1), prep_q5_1, a, 0, &out, 1, 1);
  return out;
}
void nc_avx2_dot_q5_1_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 4 <= nrows; r += 4)
    rows_min(n, w, sizeof(block_q5_1), prep_q5_1, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 4);
  for (; r < nrows; r++)
    rows_min(n, w, sizeof(block_q5_1), prep_q5_1, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 1);
}

float nc_avx2_dot_q8_0(int64_t n, const void *w, const void *a) {
  float out;
  rows_sgn(n, w, sizeof(block_q8_0), prep_q8_0, a, 0, &out, 1, 1);
  return out;
}
void nc_avx2_dot_q8_0_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 4 <= nrows; r += 4)
    rows_sgn(n, w, sizeof(block_q8_0), prep_q8_0, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 4);
  for (; r < nrows; r++)
    rows_sgn(n, w, sizeof(block_q8_0), prep_q8_0, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 1);
}

float nc_avx2_dot_q4_0(int64_t n, const void *w, const void *a) {
  float out;
  rows_sgn(n, w, sizeof(block_q4_0), prep_q4_0, a, 0, &out, 1, 1);
  return out;
}
void nc_avx2_dot_q4_0_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 4 <= nrows; r += 4)
    rows_sgn(n, w, sizeof(block_q4_0), prep_q4_0, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 4);
  for (; r < nrows; r++)
    rows_sgn(n, w, sizeof(block_q4_0), prep_q4_0, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 1);
}

float nc_avx2_dot_q5_0(int64_t n, const void *w, const void *a) {
  float out;
  rows_sgn(n, w, sizeof(block_q5_0), prep_q5_0, a, 0, &out, 1, 1);
  return out;
}
void nc_avx2_dot_q5_0_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const uint8_t *ap = a;
  int r = 0;
  for (; r + 4 <= nrows; r += 4)
    rows_sgn(n, w, sizeof(block_q5_0), prep_q5_0, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 4);
  for (; r < nrows; r++)
    rows_sgn(n, w, sizeof(block_q5_0), prep_q5_0, ap + (size_t)r * a_stride,
             a_stride, out + (size_t)r * out_stride, out_stride, 1);
}

static inline float hsum_4x8(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  return nc_hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

float nc_avx2_dot_f32(int64_t n, const void *vw, const void *va) {
  const float *w = vw, *a = va;
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(a + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(a + i + 8),
                         s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16),
                         _mm256_loadu_ps(a + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24),
                         _mm256_loadu_ps(a + i + 24), s3);
  }
  float sum = hsum_4x8(s0, s1, s2, s3);
  for (; i < n; i++)
    sum = fmaf(w[i], a[i], sum);
  return sum;
}

static inline __m256 load_h8(const nc_fp16 *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

float nc_avx2_dot_f16(int64_t n, const void *vw, const void *va) {
  const nc_fp16 *w = vw, *a = va;
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(load_h8(w + i), load_h8(a + i), s0);
    s1 = _mm256_fmadd_ps(load_h8(w + i + 8), load_h8(a + i + 8), s1);
    s2 = _mm256_fmadd_ps(load_h8(w + i + 16), load_h8(a + i + 16), s2);
    s3 = _mm256_fmadd_ps(load_h8(w + i + 24), load_h8(a + i + 24), s3);
  }
  float sum = hsum_4x8(s0, s1, s2, s3);
  for (; i < n; i++)
    sum = fmaf(h2f(w[i]), h2f(a[i]), sum);
  return sum;
}

static inline __m256 load_b8(const nc_bf16 *p) {
  __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

float nc_avx2_dot_bf16(int64_t n, const void *vw, const void *va) {
  const nc_bf16 *w = vw, *a = va;
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(load_b8(w + i), load_b8(a + i), s0);
    s1 = _mm256_fmadd_ps(load_b8(w + i + 8), load_b8(a + i + 8), s1);
    s2 = _mm256_fmadd_ps(load_b8(w + i + 16), load_b8(a + i + 16), s2);
    s3 = _mm256_fmadd_ps(load_b8(w + i + 24), load_b8(a + i + 24), s3);
  }
  float sum = hsum_4x8(s0, s1, s2, s3);
  for (; i < n; i++)
    sum = fmaf(nc_bf16_to_fp32(w[i]), nc_bf16_to_fp32(a[i]), sum);
  return sum;
}

/* One weight row against many activation rows: a loop over the single-row
 * kernel, hence bit-identical to it. */

void nc_avx2_dot_f32_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_avx2_dot_f32(n, w, ap + (size_t)r * a_stride);
}

void nc_avx2_dot_f16_rows(int64_t n, const void *w, const void *a,
                          size_t a_stride, int nrows, float *out,
                          size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_avx2_dot_f16(n, w, ap + (size_t)r * a_stride);
}

void nc_avx2_dot_bf16_rows(int64_t n, const void *w, const void *a,
                           size_t a_stride, int nrows, float *out,
                           size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_avx2_dot_bf16(n, w, ap + (size_t)r * a_stride);
}

#define E(t, fn) [t] = fn
static const nc_kernels k_avx2 = {
    .name = "avx2",
    .vec_dot =
        {
            E(NC_TYPE_F32, nc_avx2_dot_f32),
            E(NC_TYPE_F16, nc_avx2_dot_f16),
            E(NC_TYPE_BF16, nc_avx2_dot_bf16),
            E(NC_TYPE_Q4_0, nc_avx2_dot_q4_0),
            E(NC_TYPE_Q4_1, nc_avx2_dot_q4_1),
            E(NC_TYPE_Q5_0, nc_avx2_dot_q5_0),
            E(NC_TYPE_Q5_1, nc_avx2_dot_q5_1),
            E(NC_TYPE_Q8_0, nc_avx2_dot_q8_0),
            E(NC_TYPE_Q2_K, nc_avx2_dot_q2_k),
            E(NC_TYPE_Q3_K, nc_avx2_dot_q3_k),
            E(NC_TYPE_Q4_K, nc_avx2_dot_q4_k),
            E(NC_TYPE_Q5_K, nc_avx2_dot_q5_k),
            E(NC_TYPE_Q6_K, nc_avx2_dot_q6_k),
            E(NC_TYPE_IQ4_NL, nc_avx2_dot_iq4_nl),
            E(NC_TYPE_IQ4_XS, nc_avx2_dot_iq4_xs),
            E(NC_TYPE_MXFP4, nc_avx2_dot_mxfp4),
            E(NC_TYPE_TQ1_0, nc_avx2_dot_tq1_0),
            E(NC_TYPE_TQ2_0, nc_avx2_dot_tq2_0),
            E(NC_TYPE_NVFP4, nc_avx2_dot_nvfp4),
            E(NC_TYPE_Q1_0, nc_avx2_dot_q1_0),
            E(NC_TYPE_Q2_0, nc_avx2_dot_q2_0),
            IQ_ENTRIES(nc_avx2_dot_, ),
        },
    .vec_dot_rows =
        {
            E(NC_TYPE_F32, nc_avx2_dot_f32_rows),
            E(NC_TYPE_F16, nc_avx2_dot_f16_rows),
            E(NC_TYPE_BF16, nc_avx2_dot_bf16_rows),
            E(NC_TYPE_Q4_0, nc_avx2_dot_q4_0_rows),
            E(NC_TYPE_Q4_1, nc_avx2_dot_q4_1_rows),
            E(NC_TYPE_Q5_0, nc_avx2_dot_q5_0_rows),
            E(NC_TYPE_Q5_1, nc_avx2_dot_q5_1_rows),
            E(NC_TYPE_Q8_0, nc_avx2_dot_q8_0_rows),
            E(NC_TYPE_Q2_K, nc_avx2_dot_q2_k_rows),
            E(NC_TYPE_Q3_K, nc_avx2_dot_q3_k_rows),
            E(NC_TYPE_Q4_K, nc_avx2_dot_q4_k_rows),
            E(NC_TYPE_Q5_K, nc_avx2_dot_q5_k_rows),
            E(NC_TYPE_Q6_K, nc_avx2_dot_q6_k_rows),
            E(NC_TYPE_IQ4_NL, nc_avx2_dot_iq4_nl_rows),
            E(NC_TYPE_IQ4_XS, nc_avx2_dot_iq4_xs_rows),
            E(NC_TYPE_MXFP4, nc_avx2_dot_mxfp4_rows),
            E(NC_TYPE_TQ1_0, nc_avx2_dot_tq1_0_rows),
            E(NC_TYPE_TQ2_0, nc_avx2_dot_tq2_0_rows),
            E(NC_TYPE_NVFP4, nc_avx2_dot_nvfp4_rows),
            E(NC_TYPE_Q1_0, nc_avx2_dot_q1_0_rows),
            E(NC_TYPE_Q2_0, nc_avx2_dot_q2_0_rows),
            IQ_ENTRIES(nc_avx2_dot_, _rows),
        },
    .gemm = {E(NC_TYPE_F16, nc_avx2_gemm_f16), IQ_ENTRIES(nc_avx2_gemm_, )},
    .quantize_act =
        {
            E(NC_TYPE_F32, nc_ref_quant_f32),
            E(NC_TYPE_F16, nc_avx2_quant_f16),
            E(NC_TYPE_BF16, nc_ref_quant_bf16),
            E(NC_TYPE_Q8_0, nc_avx2_quant_q8_0),
            E(NC_TYPE_Q8_1, nc_avx2_quant_q8_1),
            E(NC_TYPE_Q8_K, nc_avx2_quant_q8_k),
        },
    .attn = nc_attn_kernels_avx2,
    .attn_flash = nc_attn_flash_plain,
    .ops = nc_ops_avx2,
    .sampler_simd = NC_SIMD_AVX2,
};
#undef E

const nc_kernels *nc_kernels_avx2_table(void) {
  return &k_avx2;
}
