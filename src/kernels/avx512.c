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
 * block j's exact integer dot. The last t = n / 32 % 16 blocks go in pairs
 * into a second accumulator (8 lanes per block, lane k = elements 4k..4k+3):
 * acct = fma(d_w * d_a, I, acct), then m_w s_a added by fma in lanes 0 and
 * 8; the result is the sum (_mm512_reduce_add_ps) of acc + acct, or of acc
 * when t = 0. vec_dot and vec_dot_rows run the very same operations
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
 * then the row's last t = n / 32 % 16 blocks as d[t], s[t] (fp16) and
 * their quants, 32 per block in element order. */
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
  if (b0 < nb) { /* tail of t < 16 blocks: d[t], s[t], then the quants */
    const int t = (int)(nb - b0);
    block_q8_1 tmp[GB];
    nc_avx2_quant_q8_1(src + b0 * QK8_1, tmp, (int64_t)t * QK8_1);
    for (int j = 0; j < t; j++) {
      memcpy(out + 2 * j, &tmp[j].d, 2);
      memcpy(out + 2 * t + 2 * j, &tmp[j].s, 2);
      memcpy(out + 4 * t + QK8_1 * j, tmp[j].qs, QK8_1);
    }
  }
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

/* Weight side of a tail pair (one or two blocks, natural order): quants
 * of block 2p in bytes 0..31 and of 2p + 1 in 32..63, scales and mins per
 * lane (lanes 0..7: first block, 8..15: second). */
typedef struct w_pair {
  __m512i q;
  __m512 d, m;
} w_pair;

static inline __m256i nibbles32(const uint8_t *qs) {
  __m128i v = _mm_loadu_si128((const __m128i *)qs);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v),
                          _mm256_set1_epi8(0x0f));
}

static inline __attribute__((always_inline)) void
pair_finish(__m256i q0, __m256i q1, const uint8_t *dm0, const uint8_t *dm1,
            w_pair *wp) {
  wp->q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
  int32_t v0, v1 = 0;
  memcpy(&v0, dm0, 4);
  if (dm1) memcpy(&v1, dm1, 4);
  /* fp16 lanes d0, m0, d1, m1 -> floats */
  const __m512 dm =
      _mm512_castps128_ps512(_mm_cvtph_ps(_mm_setr_epi32(v0, v1, 0, 0)));
  wp->d = _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2), dm);
  wp->m = _mm512_permutexvar_ps(
      _mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3), dm);
}

static inline __attribute__((always_inline)) void
pair_q4_1(const block_q4_1 *x, int cnt, w_pair *wp) {
  __m256i q1 = cnt > 1 ? nibbles32(x[1].qs) : _mm256_setzero_si256();
  pair_finish(nibbles32(x[0].qs), q1, (const uint8_t *)&x[0].d,
              cnt > 1 ? (const uint8_t *)&x[1].d : NULL, wp);
}

static inline __m256i nibbles32_q5(const block_q5_1 *b) {
  uint32_t qh;
  memcpy(&qh, b->qh, 4);
  return _mm256_or_si256(
      nibbles32(b->qs),
      _mm256_maskz_mov_epi8((__mmask32)qh, _mm256_set1_epi8(0x10)));
}

static inline __attribute__((always_inline)) void
pair_q5_1(const block_q5_1 *x, int cnt, w_pair *wp) {
  __m256i q1 = cnt > 1 ? nibbles32_q5(&x[1]) : _mm256_setzero_si256();
  pair_finish(nibbles32_q5(&x[0]), q1, (const uint8_t *)&x[0].d,
              cnt > 1 ? (const uint8_t *)&x[1].d : NULL, wp);
}

/* One activation row's contribution for tail pair p of a tail of t blocks
 * at a: acct = fma(d_w d_a, I, acct) over 16 lanes (8 per block), then the
 * min terms m_w s_a in lanes 0 and 8 only. */
static inline __attribute__((always_inline)) __m512
pair_dot(const w_pair *wp, const uint8_t *a, int t, int p, int cnt,
         __m512 acct) {
  const __m512i lo8 =
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  int32_t dv, sv;
  if (cnt > 1) {
    memcpy(&dv, a + 4 * p, 4);
    memcpy(&sv, a + 2 * t + 4 * p, 4);
  } else {
    uint16_t hd, hs;
    memcpy(&hd, a + 4 * p, 2);
    memcpy(&hs, a + 2 * t + 4 * p, 2);
    dv = hd;
    sv = hs;
  }
  const __m512 da = _mm512_permutexvar_ps(
      lo8, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(dv))));
  const __m512 sa = _mm512_permutexvar_ps(
      lo8, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(sv))));
  const __mmask16 k = cnt > 1 ? 0xffff : 0x00ff;
  const __m512i q = _mm512_maskz_loadu_epi32(k, a + 4 * t + 64 * p);
  const __m512i i = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wp->q, q);
  acct = _mm512_fmadd_ps(_mm512_mul_ps(wp->d, da), _mm512_cvtepi32_ps(i), acct);
  return _mm512_mask3_fmadd_ps(wp->m, sa, acct, (__mmask16)(k & 0x0101));
}

typedef void (*w_loader)(const void *x, int64_t block, w_group *wg);
typedef void (*p_loader)(const void *x, int64_t block, int cnt, w_pair *wp);

static inline __attribute__((always_inline)) void
ld_q4_1(const void *x, int64_t b, w_group *wg) {
  load_w_q4_1((const block_q4_1 *)x + b, wg);
}
static inline __attribute__((always_inline)) void
ld_q5_1(const void *x, int64_t b, w_group *wg) {
  load_w_q5_1((const block_q5_1 *)x + b, wg);
}
static inline __attribute__((always_inline)) void
lp_q4_1(const void *x, int64_t b, int cnt, w_pair *wp) {
  pair_q4_1((const block_q4_1 *)x + b, cnt, wp);
}
static inline __attribute__((always_inline)) void
lp_q5_1(const void *x, int64_t b, int cnt, w_pair *wp) {
  pair_q5_1((const block_q5_1 *)x + b, cnt, wp);
}

/* R activation rows at once (R a compile-time constant after inlining). */
static inline __attribute__((always_inline)) void
rows_r(int64_t n, const uint8_t *x, w_loader load, p_loader pload,
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
  const int t = (int)(nb - b0);
  if (t > 0) { /* the tail, in pairs of blocks, into a second accumulator */
    __m512 acct[16];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
      acct[r] = _mm512_setzero_ps();
    const size_t off = (size_t)b0 * sizeof(block_q8_1);
    for (int p = 0; 2 * p < t; p++) {
      const int cnt = t - 2 * p > 1 ? 2 : 1;
      w_pair wp;
      pload(x, b0 + 2 * p, cnt, &wp);
#pragma GCC unroll 16
      for (int r = 0; r < R; r++)
        acct[r] =
            pair_dot(&wp, a + (size_t)r * a_stride + off, t, p, cnt, acct[r]);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
      acc[r] = _mm512_add_ps(acc[r], acct[r]);
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; r++)
    out[(size_t)r * out_stride] = _mm512_reduce_add_ps(acc[r]);
}

#define KERNEL(name)                                                           \
  static float dot_##name(int64_t n, const void *w, const void *a) {           \
    float out;                                                                 \
    rows_r(n, w, ld_##name, lp_##name, a, 0, &out, 1, 1);                      \
    return out;                                                                \
  }                                                                            \
  static void dot_##name##_rows(int64_t n, const void *w, const void *a,       \
                                size_t a_stride, int nrows, float *out,        \
                                size_t out_stride) {                           \
    const uint8_t *ap = a;                                                     \
    int r = 0;                                                                 \
    for (; r + 16 <= nrows; r += 16)                                           \
      rows_r(n, w, ld_##name, lp_##name, ap + (size_t)r * a_stride, a_stride,  \
             out + (size_t)r * out_stride, out_stride, 16);                    \
    for (; r + 4 <= nrows; r += 4)                                             \
      rows_r(n, w, ld_##name, lp_##name, ap + (size_t)r * a_stride, a_stride,  \
             out + (size_t)r * out_stride, out_stride, 4);                     \
    for (; r < nrows; r++)                                                     \
      rows_r(n, w, ld_##name, lp_##name, ap + (size_t)r * a_stride, a_stride,  \
             out + (size_t)r * out_stride, out_stride, 1);                     \
  }
KERNEL(q4_1)
KERNEL(q5_1)
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
