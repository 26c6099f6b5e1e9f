/* avx512: AVX-512 (F, BW, VL) + VNNI kernels, for prefill throughput.
 *
 * Q4_1 · Q8_1 and Q5_1 · Q8_1 work on groups of 16 blocks (512 elements) held
 * "block per lane": int32 lane j of every vector belongs to block j of the
 * group, so eight vpdpbusd produce the 16 whole-block integer dots in one
 * register, and the float scaling costs two FMAs per 16 blocks instead of per
 * block. To make that possible this table quantizes Q8_1 activations into its
 * own layout (same byte size as block_q8_1 rows; see quantize_q8_1_il) and
 * transposes the weight blocks on the fly, once per weight row for up to
 * 16 activation rows of a vec_dot_rows call.
 *
 * Float order (one weight row, one activation row): acc (16 lanes) starts at
 * 0; for each group, acc = fma(m_w, s_a, fma(d_w * d_a, I, acc)) where I is
 * block j's exact integer dot; the result is the sum of acc's 16 lanes. The
 * last n / 32 % 16 blocks stay in the plain layout and go llama.cpp's way
 * (8 lanes, one fma per block, min terms summed by fma on the side); their
 * sum is added last. vec_dot and vec_dot_rows run the very same operations
 * per activation row, so their results are bit-identical whatever nrows.
 *
 * Q8_0, Q4_0 and Q5_0 work the same way (avx512_q8.c); the other types
 * use the avx2 kernels (standard layouts). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx512_util.h"
#include "ref.h"
#include "tables.h"

enum { GB = 16 }; /* blocks per group */

/* Activation layout: each full group of 16 Q8_1 blocks (576 bytes) as
 *   d[16] (fp16), s[16] (fp16), then 8 slices of 64 bytes: slice 2c + h
 *   holds, for each block j, its 4 quants 16 h + 4 c .. 16 h + 4 c + 3;
 * then the row's last n / 32 % 16 blocks as plain block_q8_1. */
static void quantize_q8_1_il(const float *src, void *dst, int64_t n) {
  uint8_t *out = dst;
  const int64_t nb = n / QK8_1;
  int64_t b0 = 0;
  for (; b0 + GB <= nb; b0 += GB, out += GB * sizeof(block_q8_1)) {
    block_q8_1 tmp[GB];
    nc_avx2_quant_q8_1(src + b0 * QK8_1, tmp, GB * QK8_1);
    for (int j = 0; j < GB; j++) {
      memcpy(out + 2 * j, &tmp[j].d, 2);
      memcpy(out + 2 * GB + 2 * j, &tmp[j].s, 2);
      for (int v = 0; v < 8; v++) {
        int first = 16 * (v & 1) + 4 * (v >> 1);
        memcpy(out + 4 * GB + v * 4 * GB + 4 * j, tmp[j].qs + first, 4);
      }
    }
  }
  if (b0 < nb) nc_avx2_quant_q8_1(src + b0 * QK8_1, out, (nb - b0) * QK8_1);
}

/* Weight side of one group: the 16 blocks transposed to block-per-lane. */
typedef struct w_group {
  __m512 d, m;  /* per-block scales and mins */
  __m512i q[8]; /* slice 2c + h: unsigned quants, as in the act layout */
} w_group;

/* Weight side of a full group (16 x 20 contiguous bytes = 80 dwords):
 * dword k of block j sits at dword 5 j + k. Five loads, then per field k
 * one two-source permute for dwords 0..31, one for 32..63 and one for
 * 64..79, merged by lane masks (cheaper than five 16-lane gathers). */
static inline __attribute__((always_inline)) void
load_w_q4_1(const block_q4_1 *x, w_group *wg) {
  const int32_t *p = (const int32_t *)x;
  const __m512i z0 = _mm512_loadu_si512(p), z1 = _mm512_loadu_si512(p + 16);
  const __m512i z2 = _mm512_loadu_si512(p + 32),
                z3 = _mm512_loadu_si512(p + 48);
  const __m512i z4 = _mm512_loadu_si512(p + 64);
  static const __mmask16 mid[5] = {0x1f80, 0x1f80, 0x1fc0, 0x1fc0, 0x0fc0};
  static const __mmask16 top[5] = {0xe000, 0xe000, 0xe000, 0xe000, 0xf000};
  const __m512i j5 = _mm512_setr_epi32(0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50,
                                       55, 60, 65, 70, 75);
  __m512i f[5];
#pragma GCC unroll 5
  for (int k = 0; k < 5; k++) {
    const __m512i idx = _mm512_add_epi32(j5, _mm512_set1_epi32(k));
    __m512i r = _mm512_permutex2var_epi32(z0, idx, z1);
    r = _mm512_mask_mov_epi32(r, mid[k],
                              _mm512_permutex2var_epi32(z2, idx, z3));
    f[k] = _mm512_mask_mov_epi32(r, top[k], _mm512_permutexvar_epi32(idx, z4));
  }
  wg->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(f[0]));
  wg->m = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(f[0], 16)));
  const __m512i low = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++) {
    wg->q[2 * c] = _mm512_and_si512(f[c + 1], low);
    wg->q[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi32(f[c + 1], 4), low);
  }
}

/* Q5_1: 16 x 24 bytes = 96 dwords, dword k of block j at 6 j + k (d|m,
 * qh, then the four qs words). */
static inline __attribute__((always_inline)) void
load_w_q5_1(const block_q5_1 *x, w_group *wg) {
  const int32_t *p = (const int32_t *)x;
  __m512i z[6];
  for (int i = 0; i < 6; i++)
    z[i] = _mm512_loadu_si512(p + 16 * i);
  static const __mmask16 mid[6] = {0x07c0, 0x07c0, 0x07e0,
                                   0x07e0, 0x03e0, 0x03e0};
  static const __mmask16 top[6] = {0xf800, 0xf800, 0xf800,
                                   0xf800, 0xfc00, 0xfc00};
  const __m512i j6 = _mm512_setr_epi32(0, 6, 12, 18, 24, 30, 36, 42, 48, 54, 60,
                                       66, 72, 78, 84, 90);
  __m512i f[6];
#pragma GCC unroll 6
  for (int k = 0; k < 6; k++) {
    const __m512i idx = _mm512_add_epi32(j6, _mm512_set1_epi32(k));
    __m512i r = _mm512_permutex2var_epi32(z[0], idx, z[1]);
    r = _mm512_mask_mov_epi32(r, mid[k],
                              _mm512_permutex2var_epi32(z[2], idx, z[3]));
    f[k] = _mm512_mask_mov_epi32(r, top[k],
                                 _mm512_permutex2var_epi32(z[4], idx, z[5]));
  }
  wg->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(f[0]));
  wg->m = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(f[0], 16)));
  const __m512i low = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++) {
    wg->q[2 * c] = _mm512_or_si512(_mm512_and_si512(f[c + 2], low),
                                   nc_fifth_bits(f[1], 4 * c));
    wg->q[2 * c + 1] =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(f[c + 2], 4), low),
                        nc_fifth_bits(f[1], 16 + 4 * c));
  }
}

/* One activation row's contribution for one full group. */
static inline __attribute__((always_inline)) __m512
group_dot(const w_group *wg, const uint8_t *a, __m512 acc) {
  __m512 da = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)a));
  __m512 sa = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(a + 32)));
  const uint8_t *q = a + 64;
  /* two chains for latency: exact integer sums, the split changes nothing */
  __m512i s0 = _mm512_setzero_si512(), s1 = s0;
#pragma GCC unroll 4
  for (int v = 0; v < 8; v += 2) {
    s0 = _mm512_dpbusd_epi32(s0, wg->q[v], _mm512_loadu_si512(q + 64 * v));
    s1 = _mm512_dpbusd_epi32(s1, wg->q[v + 1],
                             _mm512_loadu_si512(q + 64 * (v + 1)));
  }
  __m512i sum = _mm512_add_epi32(s0, s1);
  acc = _mm512_fmadd_ps(_mm512_mul_ps(wg->d, da), _mm512_cvtepi32_ps(sum), acc);
  return _mm512_fmadd_ps(wg->m, sa, acc);
}

typedef void (*w_loader)(const void *x, int64_t block, w_group *wg);
typedef float (*tail_dot)(int64_t n, const void *w, const void *a);

static inline __attribute__((always_inline)) void
ld_q4_1(const void *x, int64_t b, w_group *wg) {
  load_w_q4_1((const block_q4_1 *)x + b, wg);
}
static inline __attribute__((always_inline)) void
ld_q5_1(const void *x, int64_t b, w_group *wg) {
  load_w_q5_1((const block_q5_1 *)x + b, wg);
}

/* R activation rows at once (R a compile-time constant after inlining).
 * The last nb % 16 blocks (plain layout) go through the avx2 kernel in
 * llama.cpp's order, added to the groups' sum. */
static inline __attribute__((always_inline)) void
rows_r(int64_t n, const uint8_t *x, size_t wblock, w_loader load, tail_dot tail,
       const uint8_t *a, size_t a_stride, float *out, size_t out_stride,
       const int R) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
    acc[r] = _mm512_setzero_ps();
  const int64_t nb = n / QK8_1;
  int64_t b0 = 0;
  for (; b0 + GB <= nb; b0 += GB) {
    w_group wg;
    load(x, b0, &wg);
    const size_t off = (size_t)b0 * sizeof(block_q8_1);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
      acc[r] = group_dot(&wg, a + (size_t)r * a_stride + off, acc[r]);
  }
  for (int r = 0; r < R; r++) {
    float v = _mm512_reduce_add_ps(acc[r]);
    if (b0 < nb)
      v += tail((nb - b0) * QK8_1, x + (size_t)b0 * wblock,
                a + (size_t)r * a_stride + (size_t)b0 * sizeof(block_q8_1));
    out[(size_t)r * out_stride] = v;
  }
}

#define KERNEL(name, block)                                                    \
  static float dot_##name(int64_t n, const void *w, const void *a) {           \
    float out;                                                                 \
    rows_r(n, w, sizeof(block), ld_##name, nc_avx2_dot_##name, a, 0, &out, 1,  \
           1);                                                                 \
    return out;                                                                \
  }                                                                            \
  static void dot_##name##_rows(int64_t n, const void *w, const void *a,       \
                                size_t a_stride, int nrows, float *out,        \
                                size_t out_stride) {                           \
    const uint8_t *ap = a;                                                     \
    int r = 0;                                                                 \
    for (; r + 16 <= nrows; r += 16)                                           \
      rows_r(n, w, sizeof(block), ld_##name, nc_avx2_dot_##name,               \
             ap + (size_t)r * a_stride, a_stride,                              \
             out + (size_t)r * out_stride, out_stride, 16);                    \
    for (; r + 4 <= nrows; r += 4)                                             \
      rows_r(n, w, sizeof(block), ld_##name, nc_avx2_dot_##name,               \
             ap + (size_t)r * a_stride, a_stride,                              \
             out + (size_t)r * out_stride, out_stride, 4);                     \
    for (; r < nrows; r++)                                                     \
      rows_r(n, w, sizeof(block), ld_##name, nc_avx2_dot_##name,               \
             ap + (size_t)r * a_stride, a_stride,                              \
             out + (size_t)r * out_stride, out_stride, 1);                     \
  }
KERNEL(q4_1, block_q4_1)
KERNEL(q5_1, block_q5_1)
#undef KERNEL

#define E(t, fn) [t] = fn
static const nc_kernels k_avx512 = {
    .name = "avx512",
    .vec_dot =
        {
            E(NC_TYPE_F32, nc_avx2_dot_f32),
            E(NC_TYPE_F16, nc_avx2_dot_f16),
            E(NC_TYPE_BF16, nc_avx2_dot_bf16),
            E(NC_TYPE_Q4_0, nc_avx512_dot_q4_0),
            E(NC_TYPE_Q4_1, dot_q4_1),
            E(NC_TYPE_Q5_0, nc_avx512_dot_q5_0),
            E(NC_TYPE_Q5_1, dot_q5_1),
            E(NC_TYPE_Q8_0, nc_avx512_dot_q8_0),
            E(NC_TYPE_Q2_K, nc_avx2_dot_q2_k),
            E(NC_TYPE_Q3_K, nc_avx2_dot_q3_k),
            E(NC_TYPE_Q4_K, nc_avx2_dot_q4_k),
            E(NC_TYPE_Q5_K, nc_avx2_dot_q5_k),
            E(NC_TYPE_Q6_K, nc_avx2_dot_q6_k),
        },
    .vec_dot_rows =
        {
            E(NC_TYPE_F32, nc_avx2_dot_f32_rows),
            E(NC_TYPE_F16, nc_avx2_dot_f16_rows),
            E(NC_TYPE_BF16, nc_avx2_dot_bf16_rows),
            E(NC_TYPE_Q4_0, nc_avx512_dot_q4_0_rows),
            E(NC_TYPE_Q4_1, dot_q4_1_rows),
            E(NC_TYPE_Q5_0, nc_avx512_dot_q5_0_rows),
            E(NC_TYPE_Q5_1, dot_q5_1_rows),
            E(NC_TYPE_Q8_0, nc_avx512_dot_q8_0_rows),
            E(NC_TYPE_Q2_K, nc_avx2_dot_q2_k_rows),
            E(NC_TYPE_Q3_K, nc_avx2_dot_q3_k_rows),
            E(NC_TYPE_Q4_K, nc_avx2_dot_q4_k_rows),
            E(NC_TYPE_Q5_K, nc_avx2_dot_q5_k_rows),
            E(NC_TYPE_Q6_K, nc_avx2_dot_q6_k_rows),
        },
    .quantize_act =
        {
            E(NC_TYPE_F32, nc_ref_quant_f32),
            E(NC_TYPE_F16, nc_avx2_quant_f16),
            E(NC_TYPE_BF16, nc_ref_quant_bf16),
            E(NC_TYPE_Q8_0, nc_avx512_quant_q8_0),
            E(NC_TYPE_Q8_1, quantize_q8_1_il),
            E(NC_TYPE_Q8_K, nc_avx2_quant_q8_k),
        },
    .private_act =
        {
            E(NC_TYPE_Q8_0, true),
            E(NC_TYPE_Q8_1, true),
        },
};
#undef E

const nc_kernels *nc_kernels_avx512_table(void) {
  return &k_avx512;
}
