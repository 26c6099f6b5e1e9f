/* avx512_kquant: AVX-512 (F, BW, VL) + VNNI kernels for Q2_K, Q3_K, Q4_K,
 * Q5_K and Q6_K · Q8_K that add in exactly llama.cpp's x86 (AVX2) order, so
 * every dot is bit-identical to llama.cpp's ggml_vec_dot_qN_K_q8_K on the
 * same inputs (and to the avx2 table's Q4_K/Q6_K kernels).
 *
 * llama.cpp's order, per (weight row, activation row) and super-block i of
 * 256 elements in 8 chunks of 32 (integer sums are exact in any order;
 * only the float operations below are fixed). Every type has 8 int32
 * lanes I_k = sum over chunks c of scale * (the 4 products of elements
 * 32c + 4k .. 32c + 4k + 3), the scale being the chunk's (Q4_K, Q5_K) or
 * its 16-element scale 2c (k < 4) / 2c+1 (k >= 4) (Q2_K, Q3_K, Q6_K), and
 * d = y.d * x.d, dmin = -y.d * x.dmin:
 *
 *   Q4_K: 4 min lanes M_k = m_2k S_2k + m_2k+1 S_2k+1 (S_s = the activation
 *         sum of chunk s, from two bsums); acc_k = fma(d, (float)I_k, acc_k),
 *         accm_k = fma(dmin, M_k, accm_k); result hsum8(acc) +
 *         ((accm_0 + accm_2) + (accm_1 + accm_3)).
 *   Q5_K: quants with a fifth bit; the min lanes summed into one integer M,
 *         summs = fma(dmin, (float)M, summs); result hsum8(acc) + summs.
 *   Q6_K: quants taken as 0..63, I_k minus 32 (bs_2k sc_2k + bs_2k+1
 *         sc_2k+1); acc_k = fma(d, (float)I_k, acc_k); result hsum8(acc).
 *   Q3_K: signed quants (-4..3) and scales; as Q6_K without the offset.
 *   Q2_K: acc_k = fma(dmin, (float)(min_2k bs_2k + min_2k+1 bs_2k+1),
 *         acc_k), then acc_k = fma(d, (float)I_k, acc_k); hsum8(acc).
 *
 * hsum8 = (k + k+4) for k < 4, then (0+2, 1+3), then the two.
 *
 * The integer lanes come from vpmaddubsw (pairs of products; no saturation:
 * |pair| <= 2 * 63 * 128, or 2 * 255 * 4 for Q3_K's gemm layout, which
 * multiplies a + 128 by the signed quants and subtracts 128 * the scaled
 * quant sums) and vpdpwssd against the int16 scales, so each
 * lane holds llama.cpp's integer exactly; the float operations are the same
 * instructions per lane. Two layouts:
 *
 *   - one row (vec_dot, and gemm with few activation rows): a zmm covers 64
 *     consecutive elements, chunk 2j in the low half and 2j+1 in the high
 *     half; the halves are added (exact, int32) into llama.cpp's 8 lanes
 *     before the float step, which runs on 8 lanes as in llama.cpp.
 *   - a pair of weight rows (gemm): zmm lanes 0..7 belong to row 2p, lanes
 *     8..15 to row 2p+1, against one activation row broadcast to both
 *     halves. gemm unpacks a panel of pairs once into a stack scratch and
 *     runs it against 8 activation rows at a time (weights reused from
 *     registers), the float accumulators of 2 rows x 8 activations in
 *     registers; the Q4_K min lanes run on 16 lanes (each M_k twice).
 *
 * Both layouts perform llama.cpp's float operations on the same values, so
 * vec_dot, vec_dot_rows and gemm agree bit for bit whatever the batch.
 *
 * Two sets of entry points: nc_avx512_*_qN_k in the vec_dot order above
 * (llama.cpp's for 1..7 activation rows: decode; the avx512 table's
 * gemm_few, and the avx2 table's order), and the *_tiled kernels at the
 * end, which reproduce llama.cpp's tiled K-quant matmul, which it runs for
 * 8 or more activation rows (prompts), from the same integer lanes (the
 * avx512 table's gemm and dots).
 *
 * Both decodes (one activation row: kq_gemv4, 4 weight rows at once for
 * Q4_K, Q5_K, Q6_K) form each super-block's integers another way, exact
 * all the same: vpdpbusd sums 4 products per lane (an int16's range),
 * vpackssdw packs two such vectors into words (the tiled order, which
 * needs only the sum) or interleave_words pairs them lane by lane (the
 * vec_dot order, which keeps llama.cpp's 8 lanes apart) and one vpdpwssd
 * applies the scales to both (k45_s1_lanes, q6k_s1_lanes). */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "avx2_util.h"
#include "tables.h"

/* gemm: activation rows per register block (per type; 6..8 measure the
 * same here), the scratch for the unpacked weight panel (stack) and the
 * batch below which rows go one by one. The panel is sized for L2, not L1:
 * every activation row is read once per panel, and at 48 KiB a panel of
 * 6144-wide rows (a Qwen3.5-shaped ffn_down) held one Q6_K row pair, so the
 * activations streamed from L3 once per two weight rows (256 KiB: 9 pairs;
 * Q6_K's prefill samples fell by 20% on a Qwen3.5-shaped file). */
enum { R_MAX = 8, KQ4_R = 8, KQ6_R = 8 };
enum { SCRATCH_BYTES = 256 * 1024, MIN_BATCH = 3 };

/* The 4 float lanes of llama.cpp's Q4_K min accumulator, summed as
 * (0 + 2) + (1 + 3). */
static inline float hsum4_m(__m128 m) {
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

static inline __m256 lo8(__m512 v) {
  return _mm512_castps512_ps256(v);
}
static inline __m256 hi8(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}
static inline __m256i lo8i(__m512i v) {
  return _mm512_castsi512_si256(v);
}
static inline __m256i hi8i(__m512i v) {
  return _mm512_extracti64x4_epi64(v, 1);
}

/* 32 bytes broadcast to both halves of a zmm. */
static inline __m512i bcast32(const void *p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
}

/* Two rows' 32 bytes: a in the low half, b in the high half. */
static inline __m512i join32(__m256i a, __m256i b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

/* A float of row 0 in lanes 0..7 and one of row 1 in lanes 8..15. */
static inline __m512 pair_ps(float a, float b) {
  return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(a), _mm512_set1_ps(b));
}

/* Constant vectors (tables, so that the unrolled loops load them instead
 * of building them): vpermw indices and per-half shift counts and bits. */
/* scale of chunk 2j in the low half, 2j+1 in the high half (one row) */
static const _Alignas(64) int16_t k_idx_k4[4][32] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
     3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
     5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
    {6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
     7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7},
};
/* chunk c of a pair: row 0's scale c (low half), row 1's 16 + c (high) */
static const _Alignas(64) int16_t k_idx_k4_pair[8][32] = {
    {0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16},
    {1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,
     17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17},
    {2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,
     18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18},
    {3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,
     19, 19, 19, 19, 19, 19, 19, 19, 19, 19, 19, 19, 19, 19, 19, 19},
    {4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,
     20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20},
    {5,  5,  5,  5,  5,  5,  5,  5,  5,  5,  5,  5,  5,  5,  5,  5,
     21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21},
    {6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,
     22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22},
    {7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,
     23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23},
};
/* 16-element scales s, s+1 | s+2, s+3 of one row (s = 4i) */
static const _Alignas(64) int16_t k_idx_16[4][32] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
     2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5,
     6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
    {8,  8,  8,  8,  8,  8,  8,  8,  9,  9,  9,  9,  9,  9,  9,  9,
     10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13,
     14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15},
};
/* chunk c of a pair: row 0's scales 2c, 2c+1 | row 1's 16 + 2c, 17 + 2c */
static const _Alignas(64) int16_t k_idx_16_pair[8][32] = {
    {0,  0,  0,  0,  0,  0,  0,  0,  1,  1,  1,  1,  1,  1,  1,  1,
     16, 16, 16, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17, 17, 17, 17},
    {2,  2,  2,  2,  2,  2,  2,  2,  3,  3,  3,  3,  3,  3,  3,  3,
     18, 18, 18, 18, 18, 18, 18, 18, 19, 19, 19, 19, 19, 19, 19, 19},
    {4,  4,  4,  4,  4,  4,  4,  4,  5,  5,  5,  5,  5,  5,  5,  5,
     20, 20, 20, 20, 20, 20, 20, 20, 21, 21, 21, 21, 21, 21, 21, 21},
    {6,  6,  6,  6,  6,  6,  6,  6,  7,  7,  7,  7,  7,  7,  7,  7,
     22, 22, 22, 22, 22, 22, 22, 22, 23, 23, 23, 23, 23, 23, 23, 23},
    {8,  8,  8,  8,  8,  8,  8,  8,  9,  9,  9,  9,  9,  9,  9,  9,
     24, 24, 24, 24, 24, 24, 24, 24, 25, 25, 25, 25, 25, 25, 25, 25},
    {10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11,
     26, 26, 26, 26, 26, 26, 26, 26, 27, 27, 27, 27, 27, 27, 27, 27},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13,
     28, 28, 28, 28, 28, 28, 28, 28, 29, 29, 29, 29, 29, 29, 29, 29},
    {14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15,
     30, 30, 30, 30, 30, 30, 30, 30, 31, 31, 31, 31, 31, 31, 31, 31},
};
/* bytes with bit 2m in the low half and bit 2m+1 in the high half */
static const _Alignas(64) uint8_t k_bits[4][64] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
     2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
    {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
     4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
     8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8},
    {16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
     16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
     32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32,
     32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32},
    {64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,
     64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,
     64,  64,  64,  64,  64,  64,  128, 128, 128, 128, 128, 128, 128,
     128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128,
     128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128},
};
/* per-half word shift counts: [0 | 4], [4 | 2], [0 | 2], [4 | 6] */
static const _Alignas(64) int16_t k_sh_0_4[32] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};
static const _Alignas(64) int16_t k_sh_4_2[32] = {
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
static const _Alignas(64) int16_t k_sh_0_2[32] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
static const _Alignas(64) int16_t k_sh_4_6[32] = {
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};

static inline __m512i ld(const void *p) {
  return _mm512_load_si512(p);
}

/* Integer lane sums (exact) and llama.cpp's tiled step (see the end of the
 * file): fma((float)S1 * d_w - dmin_w * (float)S2, d_a, acc). */
static inline int32_t hsum8i(__m256i v) {
  __m128i t =
      _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(t);
}
static inline int32_t hsum16i(__m512i v) {
  return hsum8i(_mm256_add_epi32(lo8i(v), hi8i(v)));
}
static inline float tiled_step(float acc, int32_t s1, float d, float dmin,
                               int32_t s2, float da) {
  const __m128 t = _mm_mul_ss(_mm_set_ss((float)s1), _mm_set_ss(d));
  const __m128 u = _mm_fnmadd_ss(_mm_set_ss(dmin), _mm_set_ss((float)s2), t);
  return _mm_cvtss_f32(_mm_fmadd_ss(u, _mm_set_ss(da), _mm_set_ss(acc)));
}

/* --------------------------------------------------------------- Q4_K */

/* The 6-bit scales and mins of a Q4_K block as 16 bytes: sc0..7, m0..7.
 * Bytes 0..3 hold sc0..3 (+ the top bits of sc4..7), bytes 4..7 m0..3
 * (+ the top bits of m4..7), bytes 8..11 the low nibbles of sc4..7 (low)
 * and m4..7 (high). */
static inline __m128i q4k_scales_mins(const uint8_t *s) {
  uint32_t w[3];
  memcpy(w, s, 12);
  const uint32_t k6 = 0x3f3f3f3f, k4 = 0x0f0f0f0f, k2 = 0x30303030;
  const uint32_t sm[4] = {
      w[0] & k6,
      (w[2] & k4) | ((w[0] >> 2) & k2),
      w[1] & k6,
      ((w[2] >> 4) & k4) | ((w[1] >> 2) & k2),
  };
  return _mm_set_epi32((int)sm[3], (int)sm[2], (int)sm[1], (int)sm[0]);
}

/* One super-block of one row against one activation row (see the top). */
static inline __attribute__((always_inline)) void
q4k_sb(const block_q4_K *x, const block_q8_K *y, __m256 *acc, __m128 *accm,
       float *tl) {
  const __m256i sm = _mm256_cvtepu8_epi16(q4k_scales_mins(x->scales));
  const __m512i sm512 = _mm512_castsi256_si512(sm);
  /* mins: S_s = bsum 2s + bsum 2s+1, M_k = m_2k S_2k + m_2k+1 S_2k+1 */
  const __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
  const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bs),
                                     _mm256_extracti128_si256(bs, 1));
  const __m128i prod = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), q8s);
  const float d = y->d * _cvtsh_ss(x->d);
  const float dmin = -y->d * _cvtsh_ss(x->dmin);
  if (!tl)
    *accm = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), *accm);
  /* chunk 2j (low nibbles of qs[32j..]) in the low half, 2j+1 (high
   * nibbles) in the high half */
  const __m512i shift = ld(k_sh_0_4);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    const __m512i q =
        _mm512_and_si512(_mm512_srlv_epi16(bcast32(x->qs + 32 * j), shift), m4);
    const __m512i a = _mm512_loadu_si512(y->qs + 64 * j);
    const __m512i sc = _mm512_permutexvar_epi16(ld(k_idx_k4[j]), sm512);
    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q, a), sc);
  }
  if (tl) { /* tiled order: S2 = the 4 min lanes' sum */
    __m128i m = _mm_add_epi32(prod, _mm_shuffle_epi32(prod, 0x4e));
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0xb1));
    *tl = tiled_step(*tl, hsum16i(sumi), _cvtsh_ss(x->d), _cvtsh_ss(x->dmin),
                     _mm_cvtsi128_si32(m), y->d);
    return;
  }
  const __m256i s8 = _mm256_add_epi32(lo8i(sumi), hi8i(sumi));
  *acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(s8), *acc);
}

float nc_avx512_dot_q4_k(int64_t n, const void *w, const void *a) {
  const block_q4_K *x = w;
  const block_q8_K *y = a;
  __m256 acc = _mm256_setzero_ps();
  __m128 accm = _mm_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++)
    q4k_sb(x + i, y + i, &acc, &accm, NULL);
  return nc_hsum8(acc) + hsum4_m(accm);
}

/* A super-block of a pair of weight rows, unpacked for gemm. */
typedef struct q4k_pair {
  __m512i q[4];  /* qs[32j..32j+31] of row 0 | of row 1 (both nibbles) */
  __m512i sc[8]; /* chunk c's scale as int16: row 0 x16 | row 1 x16 */
  __m512i mins;  /* int16 lane i: m_(i/2) of row 0 (i < 16) | row 1 */
  __m512 d;      /* x.d of row 0 in lanes 0..7 | row 1 in 8..15 */
  __m512 dmin;   /* x.dmin likewise */
} q4k_pair;

static inline void q4k_unpack_pair(const block_q4_K *x0, const block_q4_K *x1,
                                   q4k_pair *u) {
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++)
    u->q[j] = join32(_mm256_loadu_si256((const __m256i *)(x0->qs + 32 * j)),
                     _mm256_loadu_si256((const __m256i *)(x1->qs + 32 * j)));
  /* int16 lanes 0..7 sc, 8..15 mins of row 0; 16..31 the same of row 1 */
  const __m512i sm = join32(_mm256_cvtepu8_epi16(q4k_scales_mins(x0->scales)),
                            _mm256_cvtepu8_epi16(q4k_scales_mins(x1->scales)));
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++)
    u->sc[c] = _mm512_permutexvar_epi16(ld(k_idx_k4_pair[c]), sm);
  static const int16_t mins_idx[32] = {
      8,  8,  9,  9,  10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15,
      24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31,
  };
  u->mins = _mm512_permutexvar_epi16(_mm512_loadu_si512(mins_idx), sm);
  u->d = pair_ps(_cvtsh_ss(x0->d), _cvtsh_ss(x1->d));
  u->dmin = pair_ps(_cvtsh_ss(x0->dmin), _cvtsh_ss(x1->dmin));
}

/* nb super-blocks of a pair (u) against R activation rows: lanes of acc
 * and accm as in q4k_sb, row 0 in lanes 0..7, row 1 in 8..15; accm lanes
 * 2k and 2k+1 both hold M_k's accumulator. */
static inline __attribute__((always_inline)) void
q4k_pair_rows(const q4k_pair *u, int64_t nb, const uint8_t *act,
              size_t a_stride, int R, __m512 *acc, __m512 *accm) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  for (int64_t i = 0; i < nb; i++) {
    const q4k_pair *p = u + i;
    __m512i q[8];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
      q[2 * j] = _mm512_and_si512(p->q[j], m4);
      q[2 * j + 1] = _mm512_and_si512(_mm512_srli_epi16(p->q[j], 4), m4);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int c = 0; c < 8; c++)
        sumi = _mm512_dpwssd_epi32(
            sumi, _mm512_maddubs_epi16(q[c], bcast32(y->qs + 32 * c)),
            p->sc[c]);
      const __m512 d = _mm512_mul_ps(_mm512_set1_ps(y->d), p->d);
      acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sumi), acc[r]);
      /* lane 2k (and 2k+1) of pr: m_2k S_2k + m_2k+1 S_2k+1 */
      __m512i pr = _mm512_madd_epi16(bcast32(y->bsums), p->mins);
      pr = _mm512_add_epi32(pr, _mm512_shuffle_epi32(pr, _MM_PERM_CDAB));
      const __m512 dmin = _mm512_mul_ps(_mm512_set1_ps(-y->d), p->dmin);
      accm[r] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(pr), accm[r]);
    }
  }
}

/* The finished dot of row h (0, 1) of a pair from its accumulators. */
static inline float q4k_pair_result(__m512 acc, __m512 accm, int h) {
  const __m256 a = h ? hi8(acc) : lo8(acc);
  const __m256 m8 = h ? hi8(accm) : lo8(accm);
  /* accm lanes 0, 2, 4, 6 hold the 4 lanes of llama.cpp's acc_m */
  const __m128 m = _mm_shuffle_ps(_mm256_castps256_ps128(m8),
                                  _mm256_extractf128_ps(m8, 1), 0x88);
  return nc_hsum8(a) + hsum4_m(m);
}

static inline __attribute__((always_inline)) void
q4k_block(const q4k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
          int R, __m512 *st, bool first, bool last, float *out,
          size_t out_stride, bool two) {
  __m512 acc[R_MAX], accm[R_MAX];
  for (int r = 0; r < R; r++) {
    acc[r] = first ? _mm512_setzero_ps() : st[2 * r];
    accm[r] = first ? _mm512_setzero_ps() : st[2 * r + 1];
  }
  q4k_pair_rows(u, nb, act, a_stride, R, acc, accm);
  for (int r = 0; r < R && !last; r++) {
    st[2 * r] = acc[r];
    st[2 * r + 1] = accm[r];
  }
  for (int r = 0; r < R && last; r++) {
    out[(size_t)r * out_stride] = q4k_pair_result(acc[r], accm[r], 0);
    if (two)
      out[(size_t)r * out_stride + 1] = q4k_pair_result(acc[r], accm[r], 1);
  }
}

/* --------------------------------------------------------------- Q6_K */

/* Chunk c (0..7, elements 32c..32c+31) of a Q6_K block as 32 unsigned
 * 6-bit quants (value + 32). In 128-element half h = c / 4, part k = c % 4
 * takes its low nibbles from ql[64h + 32 (k & 1) ..] (low nibble for
 * k < 2, high for k >= 2) and its top two bits from bits 2k of qh[32h..]. */
static inline __m256i q6k_chunk(const block_q6_K *x, int c) {
  const int h = c / 4, k = c % 4;
  const __m256i l =
      _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h + 32 * (k & 1)));
  const __m256i hb = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
  const __m256i lo = _mm256_and_si256(k < 2 ? l : _mm256_srli_epi16(l, 4),
                                      _mm256_set1_epi8(0x0f));
  /* bits 2k, 2k+1 of each byte to bits 4, 5 (word shifts by <= 4 never
   * carry other bytes' bits into bits 4..5) */
  const __m256i hs = 2 * k <= 4 ? _mm256_slli_epi16(hb, 4 - 2 * k)
                                : _mm256_srli_epi16(hb, 2 * k - 4);
  return _mm256_or_si256(lo, _mm256_and_si256(hs, _mm256_set1_epi8(0x30)));
}

static inline __attribute__((always_inline)) void
q6k_sb(const block_q6_K *x, const block_q8_K *y, __m256 *acc, float *tl) {
  const __m256i sc16 =
      _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
  const __m512i sc512 = _mm512_castsi256_si512(sc16);
  const __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
  const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5);
  const float d = y->d * _cvtsh_ss(x->d);
  const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
  /* high-bit shifts: chunk 4h+k gets bits 2k of qh; low half k = 0 / 2,
   * high half k = 1 / 3 */
  const __m512i sl = ld(k_sh_4_2); /* k = 0 | 1, left */
  const __m512i sr = ld(k_sh_0_2); /* k = 2 | 3, right */
  __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++) {
    const __m512i l = _mm512_loadu_si512(x->ql + 64 * h);
    const __m512i hb = bcast32(x->qh + 32 * h);
    /* chunks 4h, 4h+1 (low nibbles) and 4h+2, 4h+3 (high nibbles) */
    const __m512i q01 =
        _mm512_or_si512(_mm512_and_si512(l, m4),
                        _mm512_and_si512(_mm512_sllv_epi16(hb, sl), m30));
    const __m512i q23 =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                        _mm512_and_si512(_mm512_srlv_epi16(hb, sr), m30));
    const __m512i a01 = _mm512_loadu_si512(y->qs + 128 * h);
    const __m512i a23 = _mm512_loadu_si512(y->qs + 128 * h + 64);
    /* chunk c uses scales 2c (elements 0..15) and 2c+1 (16..31) */
    const __m512i i01 = ld(k_idx_16[2 * h]), i23 = ld(k_idx_16[2 * h + 1]);
    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q01, a01),
                               _mm512_permutexvar_epi16(i01, sc512));
    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q23, a23),
                               _mm512_permutexvar_epi16(i23, sc512));
  }
  if (tl) {
    *tl = tiled_step(*tl, hsum16i(sumi) - hsum8i(corr), _cvtsh_ss(x->d), 0, 0,
                     y->d);
    return;
  }
  const __m256i s8 =
      _mm256_sub_epi32(_mm256_add_epi32(lo8i(sumi), hi8i(sumi)), corr);
  *acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(s8), *acc);
}

float nc_avx512_dot_q6_k(int64_t n, const void *w, const void *a) {
  const block_q6_K *x = w;
  const block_q8_K *y = a;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++)
    q6k_sb(x + i, y + i, &acc, NULL);
  return nc_hsum8(acc);
}

typedef struct q6k_pair {
  __m512i q[8];  /* chunk c's quants (0..63): row 0 | row 1 */
  __m512i sc[8]; /* chunk c: int16 sc_2c x8, sc_2c+1 x8 of row 0 | row 1 */
  __m512i scm;   /* -32 * the 16 scales (int16): row 0 | row 1 */
  __m512 d;      /* x.d: row 0 in lanes 0..7 | row 1 in 8..15 */
} q6k_pair;

static inline void q6k_unpack_pair(const block_q6_K *x0, const block_q6_K *x1,
                                   q6k_pair *u) {
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++)
    u->q[c] = join32(q6k_chunk(x0, c), q6k_chunk(x1, c));
  const __m512i sc = join32(
      _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x0->scales)),
      _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x1->scales)));
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++) {
    u->sc[c] = _mm512_permutexvar_epi16(ld(k_idx_16_pair[c]), sc);
  }
  u->scm = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(sc, 5));
  u->d = pair_ps(_cvtsh_ss(x0->d), _cvtsh_ss(x1->d));
}

static inline __attribute__((always_inline)) void
q6k_pair_rows(const q6k_pair *u, int64_t nb, const uint8_t *act,
              size_t a_stride, int R, __m512 *acc) {
  for (int64_t i = 0; i < nb; i++) {
    const q6k_pair *p = u + i;
    __m512i q[8];
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++)
      q[c] = p->q[c];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      /* the bsums correction first: integer, exact in any order */
      __m512i sumi = _mm512_madd_epi16(bcast32(y->bsums), p->scm);
#pragma GCC unroll 8
      for (int c = 0; c < 8; c++)
        sumi = _mm512_dpwssd_epi32(
            sumi, _mm512_maddubs_epi16(q[c], bcast32(y->qs + 32 * c)),
            p->sc[c]);
      const __m512 d = _mm512_mul_ps(_mm512_set1_ps(y->d), p->d);
      acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sumi), acc[r]);
    }
  }
}

static inline __attribute__((always_inline)) void
q6k_block(const q6k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
          int R, __m512 *st, bool first, bool last, float *out,
          size_t out_stride, bool two) {
  __m512 acc[R_MAX];
  for (int r = 0; r < R; r++)
    acc[r] = first ? _mm512_setzero_ps() : st[2 * r];
  q6k_pair_rows(u, nb, act, a_stride, R, acc);
  for (int r = 0; r < R && !last; r++)
    st[2 * r] = acc[r];
  for (int r = 0; r < R && last; r++) {
    out[(size_t)r * out_stride] = nc_hsum8(lo8(acc[r]));
    if (two) out[(size_t)r * out_stride + 1] = nc_hsum8(hi8(acc[r]));
  }
}

/* Bit k (0..7) of every byte moved to bit 4 (0x10 where set); word shifts
 * by at most 4 never carry another byte's bit into bit 4. */
static inline __m256i bit_to_16(__m256i v, int k) {
  const __m256i s =
      k <= 4 ? _mm256_slli_epi16(v, 4 - k) : _mm256_srli_epi16(v, k - 4);
  return _mm256_and_si256(s, _mm256_set1_epi8(0x10));
}

/* --------------------------------------------------------------- Q5_K */

static inline __attribute__((always_inline)) void
q5k_sb(const block_q5_K *x, const block_q8_K *y, __m256 *acc, float *summs,
       float *tl) {
  const __m256i sm = _mm256_cvtepu8_epi16(q4k_scales_mins(x->scales));
  const __m512i sm512 = _mm512_castsi256_si512(sm);
  /* the mins: llama.cpp's 4 lanes of Q4_K, summed (exact) into one int,
   * then summs = fma(dmin, (float)M, summs) */
  const __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
  const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bs),
                                     _mm256_extracti128_si256(bs, 1));
  __m128i t = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), q8s);
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
  const float d = y->d * _cvtsh_ss(x->d);
  const float dmin = -y->d * _cvtsh_ss(x->dmin);
  if (!tl)
    *summs = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(dmin),
                                        _mm_set_ss((float)_mm_cvtsi128_si32(t)),
                                        _mm_set_ss(*summs)));
  const __m512i shift = ld(k_sh_0_4);
  const __m512i m4 = _mm512_set1_epi8(0x0f), c16 = _mm512_set1_epi8(0x10);
  const __m512i hb = bcast32(x->qh);
  __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    __m512i q =
        _mm512_and_si512(_mm512_srlv_epi16(bcast32(x->qs + 32 * j), shift), m4);
    /* the fifth bit: bit c of qh[e] for element e of chunk c */
    const __mmask64 k = _mm512_test_epi8_mask(hb, ld(k_bits[j]));
    q = _mm512_mask_add_epi8(q, k, q, c16);
    const __m512i a = _mm512_loadu_si512(y->qs + 64 * j);
    const __m512i sc = _mm512_permutexvar_epi16(ld(k_idx_k4[j]), sm512);
    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q, a), sc);
  }
  if (tl) {
    *tl = tiled_step(*tl, hsum16i(sumi), _cvtsh_ss(x->d), _cvtsh_ss(x->dmin),
                     _mm_cvtsi128_si32(t), y->d);
    return;
  }
  const __m256i s8 = _mm256_add_epi32(lo8i(sumi), hi8i(sumi));
  *acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(s8), *acc);
}

float nc_avx512_dot_q5_k(int64_t n, const void *w, const void *a) {
  const block_q5_K *x = w;
  const block_q8_K *y = a;
  __m256 acc = _mm256_setzero_ps();
  float summs = 0;
  for (int64_t i = 0; i < n / QK_K; i++)
    q5k_sb(x + i, y + i, &acc, &summs, NULL);
  return nc_hsum8(acc) + summs;
}

typedef struct q5k_pair {
  __m512i q[8];  /* chunk c's quants (0..31): row 0 | row 1 */
  __m512i sc[8]; /* as q4k_pair */
  __m512i mins;  /* as q4k_pair */
  __m512 d, dmin;
} q5k_pair;

static inline __m256i q5k_chunk(const block_q5_K *x, int c) {
  const __m256i v = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * (c / 2)));
  const __m256i lo = _mm256_and_si256(c % 2 ? _mm256_srli_epi16(v, 4) : v,
                                      _mm256_set1_epi8(0x0f));
  return _mm256_or_si256(
      lo, bit_to_16(_mm256_loadu_si256((const __m256i *)x->qh), c));
}

static inline void q5k_unpack_pair(const block_q5_K *x0, const block_q5_K *x1,
                                   q5k_pair *u) {
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++)
    u->q[c] = join32(q5k_chunk(x0, c), q5k_chunk(x1, c));
  const __m512i sm = join32(_mm256_cvtepu8_epi16(q4k_scales_mins(x0->scales)),
                            _mm256_cvtepu8_epi16(q4k_scales_mins(x1->scales)));
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++)
    u->sc[c] = _mm512_permutexvar_epi16(ld(k_idx_k4_pair[c]), sm);
  static const int16_t mins_idx[32] = {
      8,  8,  9,  9,  10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15,
      24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31,
  };
  u->mins = _mm512_permutexvar_epi16(_mm512_loadu_si512(mins_idx), sm);
  u->d = pair_ps(_cvtsh_ss(x0->d), _cvtsh_ss(x1->d));
  u->dmin = pair_ps(_cvtsh_ss(x0->dmin), _cvtsh_ss(x1->dmin));
}

/* acc as in q4k_pair_rows; summ: every lane of a half holds its row's
 * summs (the min total is reduced across the half before the fma). */
static inline __attribute__((always_inline)) void
q5k_block(const q5k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
          int R, __m512 *st, bool first, bool last, float *out,
          size_t out_stride, bool two) {
  __m512 acc[R_MAX], summ[R_MAX];
  for (int r = 0; r < R; r++) {
    acc[r] = first ? _mm512_setzero_ps() : st[2 * r];
    summ[r] = first ? _mm512_setzero_ps() : st[2 * r + 1];
  }
  for (int64_t i = 0; i < nb; i++) {
    const q5k_pair *p = u + i;
    __m512i q[8];
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++)
      q[c] = p->q[c];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int c = 0; c < 8; c++)
        sumi = _mm512_dpwssd_epi32(
            sumi, _mm512_maddubs_epi16(q[c], bcast32(y->qs + 32 * c)),
            p->sc[c]);
      const __m512 d = _mm512_mul_ps(_mm512_set1_ps(y->d), p->d);
      acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sumi), acc[r]);
      __m512i pr = _mm512_madd_epi16(bcast32(y->bsums), p->mins);
      pr = _mm512_add_epi32(pr, _mm512_shuffle_epi32(pr, _MM_PERM_CDAB));
      pr = _mm512_add_epi32(pr, _mm512_shuffle_epi32(pr, _MM_PERM_BADC));
      pr = _mm512_add_epi32(pr, _mm512_shuffle_i32x4(pr, pr, 0xb1));
      const __m512 dmin = _mm512_mul_ps(_mm512_set1_ps(-y->d), p->dmin);
      summ[r] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(pr), summ[r]);
    }
  }
  for (int r = 0; r < R && !last; r++) {
    st[2 * r] = acc[r];
    st[2 * r + 1] = summ[r];
  }
  for (int r = 0; r < R && last; r++) {
    out[(size_t)r * out_stride] =
        nc_hsum8(lo8(acc[r])) + _mm512_cvtss_f32(summ[r]);
    if (two)
      out[(size_t)r * out_stride + 1] =
          nc_hsum8(hi8(acc[r])) + _mm256_cvtss_f32(hi8(summ[r]));
  }
}

/* --------------------------------------------------------------- Q2_K */

/* Chunk c = 4j + k (elements 32c..32c+31) of Q2_K / Q3_K: bits 2k, 2k+1 of
 * qs[32j..32j+31]; 16-element scales (chunk c: scales 2c, 2c+1). */
static inline __attribute__((always_inline)) void
q2k_sb(const block_q2_K *x, const block_q8_K *y, __m256 *acc, float *tl) {
  const __m128i raw = _mm_loadu_si128((const __m128i *)x->scales);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  const __m512i sc512 =
      _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(raw, m4)));
  const __m256i mins =
      _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), m4));
  const __m256i prod =
      _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)y->bsums));
  const float d = y->d * _cvtsh_ss(x->d);
  const float dmin = -y->d * _cvtsh_ss(x->dmin);
  if (!tl)
    *acc =
        _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(prod), *acc);
  const __m512i m3 = _mm512_set1_epi8(3);
  __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int j = 0; j < 2; j++) {
    const __m512i qb = bcast32(x->qs + 32 * j);
#pragma GCC unroll 2
    for (int m = 0; m < 2; m++) { /* chunks 4j+2m | 4j+2m+1 */
      const __m512i shift = ld(m ? k_sh_4_6 : k_sh_0_2);
      const __m512i q = _mm512_and_si512(_mm512_srlv_epi16(qb, shift), m3);
      const __m512i a = _mm512_loadu_si512(y->qs + 128 * j + 64 * m);
      const __m512i sc =
          _mm512_permutexvar_epi16(ld(k_idx_16[2 * j + m]), sc512);
      sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q, a), sc);
    }
  }
  if (tl) {
    *tl = tiled_step(*tl, hsum16i(sumi), _cvtsh_ss(x->d), _cvtsh_ss(x->dmin),
                     hsum8i(prod), y->d);
    return;
  }
  const __m256i s8 = _mm256_add_epi32(lo8i(sumi), hi8i(sumi));
  *acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(s8), *acc);
}

float nc_avx512_dot_q2_k(int64_t n, const void *w, const void *a) {
  const block_q2_K *x = w;
  const block_q8_K *y = a;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++)
    q2k_sb(x + i, y + i, &acc, NULL);
  return nc_hsum8(acc);
}

/* Q2_K's pair has Q5_K's layout: q[c] chunk c's quants (0..3 here),
 * sc[c] chunk c's int16 scales (sc_2c x8, sc_2c+1 x8 of row 0 | row 1),
 * mins the 16 mins (int16), d and dmin. */
typedef q5k_pair q2k_pair;

static inline __m256i q2k_chunk(const uint8_t *qs, int c) {
  const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (c / 4)));
  return _mm256_and_si256(_mm256_srli_epi16(v, 2 * (c % 4)),
                          _mm256_set1_epi8(3));
}

static inline void q2k_unpack_pair(const block_q2_K *x0, const block_q2_K *x1,
                                   q2k_pair *u) {
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++)
    u->q[c] = join32(q2k_chunk(x0->qs, c), q2k_chunk(x1->qs, c));
  const __m256i raw =
      _mm256_set_m128i(_mm_loadu_si128((const __m128i *)x1->scales),
                       _mm_loadu_si128((const __m128i *)x0->scales));
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m512i sc = _mm512_cvtepu8_epi16(_mm256_and_si256(raw, m4));
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++)
    u->sc[c] = _mm512_permutexvar_epi16(ld(k_idx_16_pair[c]), sc);
  u->mins =
      _mm512_cvtepu8_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4));
  u->d = pair_ps(_cvtsh_ss(x0->d), _cvtsh_ss(x1->d));
  u->dmin = pair_ps(_cvtsh_ss(x0->dmin), _cvtsh_ss(x1->dmin));
}

static inline __attribute__((always_inline)) void
q2k_block(const q2k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
          int R, __m512 *st, bool first, bool last, float *out,
          size_t out_stride, bool two) {
  __m512 acc[R_MAX];
  for (int r = 0; r < R; r++)
    acc[r] = first ? _mm512_setzero_ps() : st[2 * r];
  for (int64_t i = 0; i < nb; i++) {
    const q2k_pair *p = u + i;
    __m512i q[8];
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++)
      q[c] = p->q[c];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      const __m512i pr = _mm512_madd_epi16(bcast32(y->bsums), p->mins);
      const __m512 dmin = _mm512_mul_ps(_mm512_set1_ps(-y->d), p->dmin);
      acc[r] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(pr), acc[r]);
      __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int c = 0; c < 8; c++)
        sumi = _mm512_dpwssd_epi32(
            sumi, _mm512_maddubs_epi16(q[c], bcast32(y->qs + 32 * c)),
            p->sc[c]);
      const __m512 d = _mm512_mul_ps(_mm512_set1_ps(y->d), p->d);
      acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sumi), acc[r]);
    }
  }
  for (int r = 0; r < R && !last; r++)
    st[2 * r] = acc[r];
  for (int r = 0; r < R && last; r++) {
    out[(size_t)r * out_stride] = nc_hsum8(lo8(acc[r]));
    if (two) out[(size_t)r * out_stride + 1] = nc_hsum8(hi8(acc[r]));
  }
}

/* --------------------------------------------------------------- Q3_K */

/* The 16 signed scales of a Q3_K block (6 bits - 32) as int8: low nibbles
 * in bytes 0..7 (scales 0..7 low, 8..15 high), top bits in bytes 8..11. */
static inline __m128i q3k_scales(const uint8_t *s) {
  uint32_t a[3];
  memcpy(a, s, 12);
  const uint32_t m2 = 0x03030303, m4 = 0x0f0f0f0f;
  const uint32_t v[4] = {
      (a[0] & m4) | ((a[2] & m2) << 4),
      (a[1] & m4) | (((a[2] >> 2) & m2) << 4),
      ((a[0] >> 4) & m4) | (((a[2] >> 4) & m2) << 4),
      ((a[1] >> 4) & m4) | (((a[2] >> 6) & m2) << 4),
  };
  return _mm_sub_epi8(_mm_set_epi32((int)v[3], (int)v[2], (int)v[1], (int)v[0]),
                      _mm_set1_epi8(32));
}

/* Quants q = low2 - 4 (hmask bit c clear) or low2 (set), -4..3: as
 * llama.cpp, maddubs of the low bits minus maddubs of the 4s. */
static inline __attribute__((always_inline)) void
q3k_sb(const block_q3_K *x, const block_q8_K *y, __m256 *acc, float *tl) {
  const __m512i sc512 =
      _mm512_castsi256_si512(_mm256_cvtepi8_epi16(q3k_scales(x->scales)));
  const float d = y->d * _cvtsh_ss(x->d);
  const __m512i m3 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
  const __m512i hb = bcast32(x->hmask);
  __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int j = 0; j < 2; j++) {
    const __m512i qb = bcast32(x->qs + 32 * j);
#pragma GCC unroll 2
    for (int m = 0; m < 2; m++) { /* chunks 4j+2m | 4j+2m+1 */
      const __m512i shift = ld(m ? k_sh_4_6 : k_sh_0_2);
      const __m512i ql = _mm512_and_si512(_mm512_srlv_epi16(qb, shift), m3);
      const __mmask64 k = _mm512_test_epi8_mask(hb, ld(k_bits[2 * j + m]));
      const __m512i qh =
          _mm512_mask_blend_epi8(k, four, _mm512_setzero_si512());
      const __m512i a = _mm512_loadu_si512(y->qs + 128 * j + 64 * m);
      const __m512i p = _mm512_sub_epi16(_mm512_maddubs_epi16(ql, a),
                                         _mm512_maddubs_epi16(qh, a));
      sumi = _mm512_dpwssd_epi32(
          sumi, p, _mm512_permutexvar_epi16(ld(k_idx_16[2 * j + m]), sc512));
    }
  }
  if (tl) {
    *tl = tiled_step(*tl, hsum16i(sumi), _cvtsh_ss(x->d), 0, 0, y->d);
    return;
  }
  const __m256i s8 = _mm256_add_epi32(lo8i(sumi), hi8i(sumi));
  *acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(s8), *acc);
}

float nc_avx512_dot_q3_k(int64_t n, const void *w, const void *a) {
  const block_q3_K *x = w;
  const block_q8_K *y = a;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK_K; i++)
    q3k_sb(x + i, y + i, &acc, NULL);
  return nc_hsum8(acc);
}

/* gemm layout: signed quants against the activation + 128 (unsigned, a
 * xor 0x80): maddubs((a + 128), q) = a q + 128 q per pair, so each row
 * carries ncorr = -(128 * its scaled quant sums), the same int32 lanes as
 * the weights alone give; the lanes stay exact. */
typedef struct q3k_pair {
  __m512i q[8];  /* chunk c's quants (-4..3): row 0 | row 1 */
  __m512i sc[8]; /* as q2k_pair (signed scales) */
  __m512i ncorr; /* -128 * sum over chunks of sc * (4 quants), per lane */
  __m512 d;
} q3k_pair;

static inline __m256i q3k_chunk(const block_q3_K *x, int c) {
  const __m256i low = q2k_chunk(x->qs, c);
  const __m256i hm = _mm256_loadu_si256((const __m256i *)x->hmask);
  const __m256i bit =
      _mm256_and_si256(_mm256_srli_epi16(hm, c), _mm256_set1_epi8(1));
  /* low - 4 where the bit is clear: (bit ^ 1) << 2 stays within bytes */
  return _mm256_sub_epi8(
      low, _mm256_slli_epi16(_mm256_xor_si256(bit, _mm256_set1_epi8(1)), 2));
}

static inline void q3k_unpack_pair(const block_q3_K *x0, const block_q3_K *x1,
                                   q3k_pair *u) {
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++)
    u->q[c] = join32(q3k_chunk(x0, c), q3k_chunk(x1, c));
  const __m512i sc = join32(_mm256_cvtepi8_epi16(q3k_scales(x0->scales)),
                            _mm256_cvtepi8_epi16(q3k_scales(x1->scales)));
  __m512i t = _mm512_setzero_si512();
  const __m512i b128 = _mm512_set1_epi8((char)0x80); /* 128 as unsigned */
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++) {
    u->sc[c] = _mm512_permutexvar_epi16(ld(k_idx_16_pair[c]), sc);
    t = _mm512_dpwssd_epi32(t, _mm512_maddubs_epi16(b128, u->q[c]), u->sc[c]);
  }
  u->ncorr = _mm512_sub_epi32(_mm512_setzero_si512(), t);
  u->d = pair_ps(_cvtsh_ss(x0->d), _cvtsh_ss(x1->d));
}

/* Q3_K's exact integer lanes (S1) for one activation block: the signed
 * quants against a + 128, ncorr removing the 128s. Shared by the vec_dot
 * and tiled orders, which differ only in the float steps after it. */
static inline __attribute__((always_inline)) __m512i
q3k_s1(const q3k_pair *p, const __m512i q[8], const block_q8_K *y) {
  const __m512i b128 = _mm512_set1_epi8((char)0x80);
  __m512i sumi = p->ncorr;
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++) {
    const __m512i au = _mm512_xor_si512(bcast32(y->qs + 32 * c), b128);
    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(au, q[c]), p->sc[c]);
  }
  return sumi;
}

static inline __attribute__((always_inline)) void
q3k_block(const q3k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
          int R, __m512 *st, bool first, bool last, float *out,
          size_t out_stride, bool two) {
  __m512 acc[R_MAX];
  for (int r = 0; r < R; r++)
    acc[r] = first ? _mm512_setzero_ps() : st[2 * r];
  for (int64_t i = 0; i < nb; i++) {
    const q3k_pair *p = u + i;
    __m512i q[8];
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++)
      q[c] = p->q[c];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      const __m512i sumi = q3k_s1(p, q, y);
      const __m512 d = _mm512_mul_ps(_mm512_set1_ps(y->d), p->d);
      acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sumi), acc[r]);
    }
  }
  for (int r = 0; r < R && !last; r++)
    st[2 * r] = acc[r];
  for (int r = 0; r < R && last; r++) {
    out[(size_t)r * out_stride] = nc_hsum8(lo8(acc[r]));
    if (two) out[(size_t)r * out_stride + 1] = nc_hsum8(hi8(acc[r]));
  }
}

/* ----------------------------------------- llama.cpp's tiled order */

/* llama.cpp's CPU backend (ggml-cpu/tiled, in the llama-cpp-python 0.3.36
 * build that makes our goldens) multiplies K-quant weights by 8 or
 * more activation rows with its "tiled" kernel, not vec_dot; batches below
 * 8 still use vec_dot. Its float order per (weight row, activation row):
 * acc = 0; for each super-block, with S1 = the block's exact integer dot
 * (sum over sub-blocks of scale * quant dot; Q6_K's quants signed) and S2
 * = sum of min_s * (activation sum of sub-block s):
 *   t = (float)S1 * d_w;  t = fma(-dmin_w, (float)S2, t) (Q4_K, Q5_K,
 *   Q2_K);  acc = fma(t, d_a, acc)   (one rounding: its microkernel's
 *   buf + t * d_a is contracted to an fma in that build).
 * These kernels reproduce that order bit for bit (same integers from the
 * vec_dot lanes, summed exactly); ref_tiled.c is the plain-C reference,
 * tests/unit/test_kernels_ggml.c checks both against llama.cpp's library. */

/* Each 256-bit half's 8 int32 lanes summed (exact) into all its lanes. */
static inline __m512i hsum_halves(__m512i v) {
  v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
  v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_BADC));
  return _mm512_add_epi32(v, _mm512_shuffle_i32x4(v, v, 0xb1));
}

/* S1 = the sum of a's lanes and S2 = the sum of b's lanes per 256-bit half
 * (exact), as floats: S1 in the even lanes, S2 in the odd ones. */
static inline __m512 hsum_halves2(__m512i a, __m512i b) {
  __m512i w = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b),
                               _mm512_unpackhi_epi32(a, b));
  w = _mm512_add_epi32(w, _mm512_shuffle_epi32(w, _MM_PERM_BADC));
  w = _mm512_add_epi32(w, _mm512_shuffle_i32x4(w, w, 0xb1));
  return _mm512_cvtepi32_ps(w);
}

/* Two activation rows' S1 (sa, sb) and S2 (ma, mb) per 256-bit half
 * (exact), as floats: in each 4 lanes row a's S1, S2, then row b's. */
static inline __m512 hsum_halves4(__m512i sa, __m512i ma, __m512i sb,
                                  __m512i mb) {
  const __m512i wa = _mm512_add_epi32(_mm512_unpacklo_epi32(sa, ma),
                                      _mm512_unpackhi_epi32(sa, ma));
  const __m512i wb = _mm512_add_epi32(_mm512_unpacklo_epi32(sb, mb),
                                      _mm512_unpackhi_epi32(sb, mb));
  __m512i v = _mm512_add_epi32(_mm512_unpacklo_epi64(wa, wb),
                               _mm512_unpackhi_epi64(wa, wb));
  v = _mm512_add_epi32(v, _mm512_shuffle_i32x4(v, v, 0xb1));
  return _mm512_cvtepi32_ps(v);
}

/* gemm blocks in the tiled order: the pair layouts above, each half's
 * lanes summed to S1 (and S2) before the float step; acc holds the row's
 * running sum in every lane of its half. */
/* The tiled step shared by Q4_K, Q5_K and Q2_K (min types): for each of
 * R activation rows, S1 from the 8 chunks' quants q and S2 from the mins,
 * acc = fma(d * S1 - dmin * S2, d_a, acc). For an even R the rows go in
 * twos, rows r and r + 1 in acc[r] (lanes 4k, 4k + 1: row r; 4k + 2,
 * 4k + 3: row r + 1; the same float operations per lane). */
static inline __attribute__((always_inline)) __m512i
kt_s1(const __m512i q[8], const __m512i sc[8], const block_q8_K *y) {
  __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++)
    sumi = _mm512_dpwssd_epi32(
        sumi, _mm512_maddubs_epi16(q[c], bcast32(y->qs + 32 * c)), sc[c]);
  return sumi;
}

static inline __attribute__((always_inline)) void
kt_min_rows(const __m512i q[8], const __m512i sc[8], __m512i mins, __m512 d,
            __m512 dmin, int64_t i, const uint8_t *act, size_t a_stride, int R,
            __m512 *acc) {
  if (R % 2) {
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      const __m512 s = hsum_halves2(kt_s1(q, sc, y),
                                    _mm512_madd_epi16(bcast32(y->bsums), mins));
      __m512 t = _mm512_mul_ps(_mm512_moveldup_ps(s), d);
      t = _mm512_fnmadd_ps(dmin, _mm512_movehdup_ps(s), t);
      acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(y->d), acc[r]);
    }
    return;
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; r += 2) {
    const block_q8_K *ya = (const block_q8_K *)(act + (size_t)r * a_stride) + i;
    const block_q8_K *yb =
        (const block_q8_K *)(act + (size_t)(r + 1) * a_stride) + i;
    const __m512 s = hsum_halves4(
        kt_s1(q, sc, ya), _mm512_madd_epi16(bcast32(ya->bsums), mins),
        kt_s1(q, sc, yb), _mm512_madd_epi16(bcast32(yb->bsums), mins));
    __m512 t = _mm512_mul_ps(_mm512_moveldup_ps(s), d);
    t = _mm512_fnmadd_ps(dmin, _mm512_movehdup_ps(s), t);
    const __m512 da = _mm512_mask_blend_ps(0xcccc, _mm512_set1_ps(ya->d),
                                           _mm512_set1_ps(yb->d));
    acc[r] = _mm512_fmadd_ps(t, da, acc[r]);
  }
}

/* End of a tiled segment: keep the accumulators, or write the results. */
static inline __attribute__((always_inline)) void
kt_finish(const __m512 *acc, int R, __m512 *st, bool last, float *out,
          size_t out_stride, bool two) {
  for (int r = 0; r < R && !last; r++)
    st[2 * r] = acc[r];
  for (int r = 0; r < R && last; r++) {
    out[(size_t)r * out_stride] = _mm512_cvtss_f32(acc[r]);
    if (two) out[(size_t)r * out_stride + 1] = _mm256_cvtss_f32(hi8(acc[r]));
  }
}

/* kt_finish of kt_min_rows's accumulators: in twos for an even R. */
static inline __attribute__((always_inline)) void
kt_finish_min(const __m512 *acc, int R, __m512 *st, bool last, float *out,
              size_t out_stride, bool two) {
  if (R % 2) {
    kt_finish(acc, R, st, last, out, out_stride, two);
    return;
  }
  for (int r = 0; r < R && !last; r++)
    st[2 * r] = acc[r];
  for (int r = 0; r < R && last; r += 2) {
    float v[16];
    _mm512_storeu_ps(v, acc[r]);
    out[(size_t)r * out_stride] = v[0];
    out[(size_t)(r + 1) * out_stride] = v[2];
    if (two) {
      out[(size_t)r * out_stride + 1] = v[8];
      out[(size_t)(r + 1) * out_stride + 1] = v[10];
    }
  }
}

static inline __attribute__((always_inline)) void
q4kt_block(const q4k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
           int R, __m512 *st, bool first, bool last, float *out,
           size_t out_stride, bool two) {
  __m512 acc[R_MAX];
  for (int r = 0; r < R; r++)
    acc[r] = first ? _mm512_setzero_ps() : st[2 * r];
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  for (int64_t i = 0; i < nb; i++) {
    const q4k_pair *p = u + i;
    __m512i q[8];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
      q[2 * j] = _mm512_and_si512(p->q[j], m4);
      q[2 * j + 1] = _mm512_and_si512(_mm512_srli_epi16(p->q[j], 4), m4);
    }
    kt_min_rows(q, p->sc, p->mins, p->d, p->dmin, i, act, a_stride, R, acc);
  }
  kt_finish_min(acc, R, st, last, out, out_stride, two);
}

static inline __attribute__((always_inline)) void
q6kt_block(const q6k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
           int R, __m512 *st, bool first, bool last, float *out,
           size_t out_stride, bool two) {
  __m512 acc[R_MAX];
  for (int r = 0; r < R; r++)
    acc[r] = first ? _mm512_setzero_ps() : st[2 * r];
  for (int64_t i = 0; i < nb; i++) {
    const q6k_pair *p = u + i;
    __m512i q[8];
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++)
      q[c] = p->q[c];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      __m512i sumi = _mm512_madd_epi16(bcast32(y->bsums), p->scm);
#pragma GCC unroll 8
      for (int c = 0; c < 8; c++)
        sumi = _mm512_dpwssd_epi32(
            sumi, _mm512_maddubs_epi16(q[c], bcast32(y->qs + 32 * c)),
            p->sc[c]);
      const __m512 t =
          _mm512_mul_ps(_mm512_cvtepi32_ps(hsum_halves(sumi)), p->d);
      acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(y->d), acc[r]);
    }
  }
  kt_finish(acc, R, st, last, out, out_stride, two);
}

/* Q5_K and Q2_K (same pair layout): Q4_K's step with the 16-element mins
 * and bsums giving S2. */
static inline __attribute__((always_inline)) void
q5kt_block(const q5k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
           int R, __m512 *st, bool first, bool last, float *out,
           size_t out_stride, bool two) {
  __m512 acc[R_MAX];
  for (int r = 0; r < R; r++)
    acc[r] = first ? _mm512_setzero_ps() : st[2 * r];
  for (int64_t i = 0; i < nb; i++) {
    const q5k_pair *p = u + i;
    kt_min_rows(p->q, p->sc, p->mins, p->d, p->dmin, i, act, a_stride, R, acc);
  }
  kt_finish_min(acc, R, st, last, out, out_stride, two);
}

/* Q2_K: the Q5_K step (same pair layout), under its own name for the
 * gemm instance of its register tile. */
static inline __attribute__((always_inline)) void
q2kt_block(const q2k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
           int R, __m512 *st, bool first, bool last, float *out,
           size_t out_stride, bool two) {
  q5kt_block(u, nb, act, a_stride, R, st, first, last, out, out_stride, two);
}

/* Q3_K: signed quants against a + 128, ncorr removes the 128s: S1 exact. */
static inline __attribute__((always_inline)) void
q3kt_block(const q3k_pair *u, int64_t nb, const uint8_t *act, size_t a_stride,
           int R, __m512 *st, bool first, bool last, float *out,
           size_t out_stride, bool two) {
  __m512 acc[R_MAX];
  for (int r = 0; r < R; r++)
    acc[r] = first ? _mm512_setzero_ps() : st[2 * r];
  for (int64_t i = 0; i < nb; i++) {
    const q3k_pair *p = u + i;
    __m512i q[8];
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++)
      q[c] = p->q[c];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      const __m512i sumi = q3k_s1(p, q, y);
      const __m512 t =
          _mm512_mul_ps(_mm512_cvtepi32_ps(hsum_halves(sumi)), p->d);
      acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(y->d), acc[r]);
    }
  }
  kt_finish(acc, R, st, last, out, out_stride, two);
}

/* ------------------------------------------------------------- drivers */

/* gemm over weight pairs: unpack up to SCRATCH_BYTES of pairs, then run
 * them against R_MAX activation rows at a time (the activation block stays
 * in L1 while the unpacked panel streams from L1/L2). Rows of an odd panel
 * pair with themselves (the second result is dropped). A pair too long for
 * the scratch goes in segments of super-blocks, up to SEG_ROWS activation
 * rows at a time, the accumulators kept in st between segments (the same
 * float operations in the same order). Batches below MIN_BATCH go through
 * vec_dot, which is bit-identical per pair. */
enum { SEG_ROWS = 64 };
#define KQ_GEMM(name, blk, PAIR, unpack, block, RB, MINB)                      \
  static void block##_any(const PAIR *u, int64_t nb, const uint8_t *act,       \
                          size_t a_stride, int R, __m512 *st, bool first,      \
                          bool last, float *out, size_t out_stride,            \
                          bool two) {                                          \
    switch (R) {                                                               \
    case RB:                                                                   \
      block(u, nb, act, a_stride, RB, st, first, last, out, out_stride, two);  \
      return;                                                                  \
    case 4:                                                                    \
      block(u, nb, act, a_stride, 4, st, first, last, out, out_stride, two);   \
      return;                                                                  \
    case 2:                                                                    \
      block(u, nb, act, a_stride, 2, st, first, last, out, out_stride, two);   \
      return;                                                                  \
    default:                                                                   \
      for (int r = 0; r < R; r++)                                              \
        block(u, nb, act + (size_t)r * a_stride, a_stride, 1, st + 2 * r,      \
              first, last, out + (size_t)r * out_stride, out_stride, two);     \
    }                                                                          \
  }                                                                            \
  static void kq_gemm_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *act, size_t a_stride,     \
                             int64_t na, float *out, size_t out_stride) {      \
    const uint8_t *wb = w, *ab = act;                                          \
    const int64_t nb = n > 0 ? n / QK_K : 0;                                   \
    enum { CAP = SCRATCH_BYTES / sizeof(PAIR) };                               \
    if (na < MINB || nb == 0) {                                                \
      for (int64_t r = 0; r < nw; r++) {                                       \
        const uint8_t *wr = wb + (size_t)r * w_stride;                         \
        nc_prefetch_lines(nc_prefetch_base(wr, w_stride), w_stride);           \
        for (int64_t a = 0; a < na; a++)                                       \
          out[(size_t)a * out_stride + (size_t)r] =                            \
              nc_avx512_dot_##name(n, wr, ab + (size_t)a * a_stride);          \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    _Alignas(64) PAIR scratch[CAP];                                            \
    const int64_t per_pass = CAP / nb;                                         \
    for (int64_t r0 = 0; r0 < nw && per_pass >= 1; r0 += 2 * per_pass) {       \
      const int64_t rows = nw - r0 < 2 * per_pass ? nw - r0 : 2 * per_pass;    \
      const int64_t np = (rows + 1) / 2;                                       \
      for (int64_t p = 0; p < np; p++) {                                       \
        const int64_t ra = r0 + 2 * p, rb = ra + 1 < nw ? ra + 1 : ra;         \
        const blk *xa = (const blk *)(wb + (size_t)ra * w_stride);             \
        const blk *xb = (const blk *)(wb + (size_t)rb * w_stride);             \
        for (int64_t i = 0; i < nb; i++)                                       \
          unpack(xa + i, xb + i, &scratch[p * nb + i]);                        \
      }                                                                        \
      for (int64_t a0 = 0; a0 < na;) {                                         \
        const int64_t left = na - a0;                                          \
        const int R = left >= RB ? RB : left >= 4 ? 4 : left >= 2 ? 2 : 1;     \
        for (int64_t p = 0; p < np; p++)                                       \
          block##_any(&scratch[p * nb], nb, ab + (size_t)a0 * a_stride,        \
                      a_stride, R, NULL, true, true,                           \
                      out + (size_t)a0 * out_stride + (size_t)(r0 + 2 * p),    \
                      out_stride, r0 + 2 * p + 1 < nw);                        \
        a0 += R;                                                               \
      }                                                                        \
    }                                                                          \
    if (per_pass >= 1) return;                                                 \
    /* long rows: one pair, CAP super-blocks per segment */                    \
    _Alignas(64) __m512 st[2 * SEG_ROWS];                                      \
    for (int64_t ra = 0; ra < nw; ra += 2) {                                   \
      const int64_t rb = ra + 1 < nw ? ra + 1 : ra;                            \
      const blk *xa = (const blk *)(wb + (size_t)ra * w_stride);               \
      const blk *xb = (const blk *)(wb + (size_t)rb * w_stride);               \
      for (int64_t c0 = 0; c0 < na; c0 += SEG_ROWS) {                          \
        const int64_t c1 = na - c0 < SEG_ROWS ? na : c0 + SEG_ROWS;            \
        for (int64_t i0 = 0; i0 < nb; i0 += CAP) {                             \
          const int64_t len = nb - i0 < CAP ? nb - i0 : CAP;                   \
          for (int64_t i = 0; i < len; i++)                                    \
            unpack(xa + i0 + i, xb + i0 + i, &scratch[i]);                     \
          for (int64_t a0 = c0; a0 < c1;) {                                    \
            const int64_t left = c1 - a0;                                      \
            const int R = left >= RB ? RB : left >= 4 ? 4 : left >= 2 ? 2 : 1; \
            block##_any(                                                       \
                scratch, len,                                                  \
                ab + (size_t)a0 * a_stride + (size_t)i0 * sizeof(block_q8_K),  \
                a_stride, R, st + 2 * (a0 - c0), i0 == 0, i0 + len == nb,      \
                out + (size_t)a0 * out_stride + (size_t)ra, out_stride,        \
                ra + 1 < nw);                                                  \
            a0 += R;                                                           \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }
KQ_GEMM(q4_k, block_q4_K, q4k_pair, q4k_unpack_pair, q4k_block, KQ4_R,
        MIN_BATCH)
KQ_GEMM(q6_k, block_q6_K, q6k_pair, q6k_unpack_pair, q6k_block, KQ6_R,
        MIN_BATCH)
KQ_GEMM(q5_k, block_q5_K, q5k_pair, q5k_unpack_pair, q5k_block, KQ4_R,
        MIN_BATCH)
KQ_GEMM(q2_k, block_q2_K, q2k_pair, q2k_unpack_pair, q2k_block, KQ6_R,
        MIN_BATCH)
KQ_GEMM(q3_k, block_q3_K, q3k_pair, q3k_unpack_pair, q3k_block, KQ6_R,
        MIN_BATCH)

/* adapters: the same argument list for every type's single-row kernel */
static inline __attribute__((always_inline)) void q6k_sb4(const block_q6_K *x,
                                                          const block_q8_K *y,
                                                          __m256 *a, void *b,
                                                          float *tl) {
  (void)b;
  q6k_sb(x, y, a, tl);
}
static inline __attribute__((always_inline)) void q2k_sb4(const block_q2_K *x,
                                                          const block_q8_K *y,
                                                          __m256 *a, void *b,
                                                          float *tl) {
  (void)b;
  q2k_sb(x, y, a, tl);
}
static inline __attribute__((always_inline)) void q3k_sb4(const block_q3_K *x,
                                                          const block_q8_K *y,
                                                          __m256 *a, void *b,
                                                          float *tl) {
  (void)b;
  q3k_sb(x, y, a, tl);
}
KQ_GEMM(q4_k_tiled, block_q4_K, q4k_pair, q4k_unpack_pair, q4kt_block, KQ4_R,
        MIN_BATCH)
KQ_GEMM(q6_k_tiled, block_q6_K, q6k_pair, q6k_unpack_pair, q6kt_block, KQ6_R,
        MIN_BATCH)
KQ_GEMM(q5_k_tiled, block_q5_K, q5k_pair, q5k_unpack_pair, q5kt_block, KQ4_R,
        MIN_BATCH)
KQ_GEMM(q2_k_tiled, block_q2_K, q2k_pair, q2k_unpack_pair, q2kt_block, KQ6_R,
        MIN_BATCH)
KQ_GEMM(q3_k_tiled, block_q3_K, q3k_pair, q3k_unpack_pair, q3kt_block, KQ6_R,
        MIN_BATCH)
#undef KQ_GEMM

/* ---------------------------------------- Q4_K decode: 4 rows, 1 act */

/* The 4 int32 of each of a, b, c, d summed (exact): [sum a, b, c, d]. */
static inline __m128i hsum4x4i(__m128i a, __m128i b, __m128i c, __m128i d) {
  return _mm_hadd_epi32(_mm_hadd_epi32(a, b), _mm_hadd_epi32(c, d));
}

/* The 16 int32 of each of a, b, c, d summed (exact). */
static inline __m128i hsum4x16i(__m512i a, __m512i b, __m512i c, __m512i d) {
  const __m256i a8 = _mm256_add_epi32(lo8i(a), hi8i(a));
  const __m256i b8 = _mm256_add_epi32(lo8i(b), hi8i(b));
  const __m256i c8 = _mm256_add_epi32(lo8i(c), hi8i(c));
  const __m256i d8 = _mm256_add_epi32(lo8i(d), hi8i(d));
  const __m256i h =
      _mm256_hadd_epi32(_mm256_hadd_epi32(a8, b8), _mm256_hadd_epi32(c8, d8));
  return _mm_add_epi32(_mm256_castsi256_si128(h),
                       _mm256_extracti128_si256(h, 1));
}

/* k45_s1_lanes: the scale of each word of the packed lanes (h = 0, 1). */
static const _Alignas(64) int16_t k_idx_k4_pk[2][2][32] = {
    {{0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1,
      2, 2, 2, 2, 3, 3, 3, 3, 2, 2, 2, 2, 3, 3, 3, 3},
     {4, 4, 4, 4, 5, 5, 5, 5, 4, 4, 4, 4, 5, 5, 5, 5,
      6, 6, 6, 6, 7, 7, 7, 7, 6, 6, 6, 6, 7, 7, 7, 7}},
    /* the same from the second row's words (16 on) of a row pair */
    {{16, 16, 16, 16, 17, 17, 17, 17, 16, 16, 16, 16, 17, 17, 17, 17,
      18, 18, 18, 18, 19, 19, 19, 19, 18, 18, 18, 18, 19, 19, 19, 19},
     {20, 20, 20, 20, 21, 21, 21, 21, 20, 20, 20, 20, 21, 21, 21, 21,
      22, 22, 22, 22, 23, 23, 23, 23, 22, 22, 22, 22, 23, 23, 23, 23}},
};

/* The vec_dot order keeps llama.cpp's lane k (elements 4k..4k+3 of every
 * chunk) apart: lane i of a and b (both int16-ranged) side by side in the
 * words of dword i, for one vpdpwssd with the two chunks' scales. */
static inline __m512i interleave_words(__m512i a, __m512i b) {
  return _mm512_mask_blend_epi16(0xaaaaaaaau, a, _mm512_slli_epi32(b, 16));
}

/* k45_s1_lanes in the vec_dot order: the scales of dword i's two words,
 * chunks 4h + 2 (i >= 8) and the next (the low and high nibbles); lane i
 * then holds chunks {0, 1, 4, 5} (i < 8) or {2, 3, 6, 7} of lane k = i % 8. */
static const _Alignas(64) int16_t k_idx_k4_vec[2][2][32] = {
    {{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
      2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3},
     {4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5,
      6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7}},
    {{16, 17, 16, 17, 16, 17, 16, 17, 16, 17, 16, 17, 16, 17, 16, 17,
      18, 19, 18, 19, 18, 19, 18, 19, 18, 19, 18, 19, 18, 19, 18, 19},
     {20, 21, 20, 21, 20, 21, 20, 21, 20, 21, 20, 21, 20, 21, 20, 21,
      22, 23, 22, 23, 22, 23, 22, 23, 22, 23, 22, 23, 22, 23, 22, 23}},
};

/* The scales and mins of two Q4_K blocks as q4k_scales_mins, in vector
 * registers, as int16: words 0..7 sc0..7 and 8..15 m0..7 of the block at
 * s0, 16..31 the same of s1. Per 128-bit lane: [w0, w2, w1, w2 >> 4] &
 * [3f, 0f, 3f, 0f] | ([w0, w0, w1, w1] >> 2) & [0, 30, 0, 30] for the
 * scale dwords w0..w2 (each 16-byte load takes 4 bytes of qs, inside the
 * block). */
static inline __m512i q4k_scales_mins_v2(const uint8_t *s0, const uint8_t *s1) {
  const __m256i v =
      _mm256_loadu2_m128i((const __m128i *)s1, (const __m128i *)s0);
  const __m256i a =
      _mm256_srlv_epi32(_mm256_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0)),
                        _mm256_set_epi32(4, 0, 0, 0, 4, 0, 0, 0));
  const __m256i b =
      _mm256_srli_epi32(_mm256_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0)), 2);
  const __m256i m6 =
      _mm256_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f,
                       0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f);
  const __m256i m2 = _mm256_set_epi32(0x30303030, 0, 0x30303030, 0, 0x30303030,
                                      0, 0x30303030, 0);
  return _mm512_cvtepu8_epi16(
      _mm256_or_si256(_mm256_and_si256(a, m6), _mm256_and_si256(b, m2)));
}

/* One super-block of one weight row against the activation's chunks,
 * regrouped (al[h]: chunks 4h and 4h + 2, ah[h]: 4h + 1 and 4h + 3, the
 * layout of the low and high nibbles of qs[64h..64h+63]): S1's 16 lanes,
 * the same integers as q4k_sb's tiled path; the row's scales are row (0,
 * 1) of the pair sm2 (q4k_scales_mins_v2). vpdpbusd sums 4 products per
 * lane (|sum| <= 4 * 15 * 128, an int16), vpackssdw packs two chunks'
 * lanes into words and vpdpwssd scales both. */
static inline __attribute__((always_inline)) __m512i
k45_s1_lanes(__m512i sm2, int row, const uint8_t *qs, const uint8_t *qh,
             const __m512i al[2], const __m512i ah[2], bool vec) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++) {
    const __m512i v = _mm512_loadu_si512(qs + 64 * h);
    __m512i ql = _mm512_and_si512(v, m4);
    __m512i qu = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    if (qh) { /* Q5_K's fifth bit: bit c of qh[e], element e of chunk c */
      const __m512i hb = bcast32(qh), c16 = _mm512_set1_epi8(0x10);
      const __mmask64 hi = 0xffffffff00000000u;
      const __m512i bl =
          _mm512_mask_blend_epi8(hi, _mm512_set1_epi8((char)(1 << 4 * h)),
                                 _mm512_set1_epi8((char)(1 << (4 * h + 2))));
      const __m512i bu =
          _mm512_mask_blend_epi8(hi, _mm512_set1_epi8((char)(1 << (4 * h + 1))),
                                 _mm512_set1_epi8((char)(1 << (4 * h + 3))));
      ql = _mm512_mask_add_epi8(ql, _mm512_test_epi8_mask(hb, bl), ql, c16);
      qu = _mm512_mask_add_epi8(qu, _mm512_test_epi8_mask(hb, bu), qu, c16);
    }
    const __m512i pl = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ql, al[h]);
    const __m512i ph = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qu, ah[h]);
    /* words per 128-bit lane: pl's 4 lanes, then ph's 4 (vpackssdw: no
     * saturation); the scales alike: chunk 4h (lanes 0, 1) or 4h + 2
     * (2, 3) x4, then 4h + 1 or 4h + 3 x4 */
    const __m512i pw =
        vec ? interleave_words(pl, ph) : _mm512_packs_epi32(pl, ph);
    const __m512i sc = _mm512_permutexvar_epi16(
        ld(vec ? k_idx_k4_vec[row][h] : k_idx_k4_pk[row][h]), sm2);
    sumi = _mm512_dpwssd_epi32(sumi, pw, sc);
  }
  return sumi;
}

/* S2's 4 lanes of 4 rows from their scale pairs (q4k_scales_mins_v2):
 * lane j of row r (128-bit lane r) m_2j S_2j + m_2j+1 S_2j+1 for the
 * activation's 16-element sums S (q8s: 8 int16 pair sums). */
static const _Alignas(64) int32_t k_mins_4x4[16] = {
    4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31};
static inline __m512i k45_s2_lanes4(__m512i sm01, __m512i sm23, __m128i q8s) {
  /* q8s against the mins words (8..15 of each row), 0 against the scales */
  const __m512i q = _mm512_broadcast_i64x4(
      _mm256_inserti128_si256(_mm256_setzero_si256(), q8s, 1));
  return _mm512_permutex2var_epi32(_mm512_madd_epi16(sm01, q), ld(k_mins_4x4),
                                   _mm512_madd_epi16(sm23, q));
}

/* The 4 rows' sums of their S2 lanes (k45_s2_lanes4), row r in lane r. */
static const _Alignas(64) int32_t k_lane_heads[16] = {0, 4, 8, 12};
static inline __m128i k45_s2_rows4(__m512i m) {
  m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));
  m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_CDAB));
  return _mm512_castsi512_si128(_mm512_permutexvar_epi32(ld(k_lane_heads), m));
}

/* Four fp16 fields as floats: field at byte offset off of x0..x3. */
static inline __m128 h4_ps(const block_q4_K *const x[4], size_t off) {
  /* built in a general register: 4 narrow stores read back as one wide
   * load would stall on store forwarding */
  uint64_t v = 0;
  for (int r = 0; r < 4; r++) {
    uint16_t h;
    memcpy(&h, (const uint8_t *)x[r] + off, 2);
    v |= (uint64_t)h << (16 * r);
  }
  return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)v));
}

/* The running sums of 4 weight rows: t in the tiled order (lane r: row
 * r); a01, a23 and m in the vec_dot order (kv_fin4 says which lanes). */
typedef struct kq_acc4 {
  __m128 t;
  __m512 a01, a23, m;
} kq_acc4;

/* One super-block i of 4 weight rows (wr, w_stride apart) against the
 * activation's block yi, its quants in a[]: adds it to acc. */
typedef void (*kq_step4_fn)(const uint8_t *wr, size_t w_stride, int64_t i,
                            const block_q8_K *yi, const __m512i a[4],
                            kq_acc4 *acc);
/* The 4 rows' dots from their sums. */
typedef void (*kq_fin4_fn)(const kq_acc4 *acc, float *out);

static inline __attribute__((always_inline)) void kt_fin4(const kq_acc4 *acc,
                                                          float *out) {
  _mm_storeu_ps(out, acc->t);
}

/* K-quant weight rows x one activation row in the tiled order: 4 rows at a
 * time share the activation's loads, and the integer sums' reductions and
 * the tiled step run on the 4 rows' lanes at once (each lane the same
 * operations as tiled_step: the same bits as the type's tiled dot, which
 * takes the rows past the last 4). */
static inline __attribute__((always_inline)) void
kq_gemv4(int64_t n, const uint8_t *w, size_t w_stride, int64_t nw,
         const block_q8_K *y, float *out, kq_step4_fn step, kq_fin4_fn fin,
         float (*dot)(int64_t, const void *, const void *)) {
  const int64_t nb = n / QK_K;
  /* the prefetch of the 4 rows NC_PREFETCH_AHEAD on, spread over their
   * super-blocks (pf_step bytes each): at once, the burst of lines left the
   * Q6_K output head of 49152 x 1024 at 12-14 GB/s, spread 19-21 (CPU
   * time, AMD EPYC Zen 4) */
  const size_t span = 4 * w_stride;
  const size_t pf_step = nb > 0 ? (span / (size_t)nb + 63) & ~(size_t)63 : 0;
  int64_t r = 0;
  for (; r + 4 <= nw; r += 4) {
    const uint8_t *wr = w + (size_t)r * w_stride;
    const uint8_t *pf = nc_prefetch_base(wr, span);
    kq_acc4 acc = {_mm_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    for (int64_t i = 0; i < nb; i++) {
      const size_t off = (size_t)i * pf_step;
      if (off < span)
        nc_prefetch_lines(pf + off,
                          span - off < pf_step ? span - off : pf_step);
      __m512i a[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++)
        a[j] = _mm512_loadu_si512(y[i].qs + 64 * j);
      step(wr, w_stride, i, y + i, a, &acc);
    }
    fin(&acc, out + r);
  }
  for (; r < nw; r++)
    out[r] = dot(n, w + (size_t)r * w_stride, y);
}

/* The integer lanes of super-block i of 4 Q4_K / Q5_K weight rows
 * (k45_s1_lanes in the tiled (vec false) or vec_dot layout: s1; the min
 * lanes of row r in 128-bit lane r of *s2) and the rows' d0..3, dmin0..3
 * as floats. */
static inline __attribute__((always_inline)) __m256
k45_lanes4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
           const __m512i a[4], size_t bsz, size_t qs_off, size_t qh_off,
           bool vec, __m512i s1[4], __m512i *s2) {
  const __m256i bs = _mm256_loadu_si256((const __m256i *)yi->bsums);
  const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bs),
                                     _mm256_extracti128_si256(bs, 1));
  /* chunks 0, 2 | 1, 3 | 4, 6 | 5, 7 (see k45_s1_lanes) */
  const __m512i al[2] = {_mm512_shuffle_i64x2(a[0], a[1], 0x44),
                         _mm512_shuffle_i64x2(a[2], a[3], 0x44)};
  const __m512i ah[2] = {_mm512_shuffle_i64x2(a[0], a[1], 0xee),
                         _mm512_shuffle_i64x2(a[2], a[3], 0xee)};
  const uint8_t *x[4];
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++) /* d, dmin, scales: the same in both types */
    x[k] = wr + (size_t)k * w_stride + (size_t)i * bsz;
  const size_t sc = offsetof(block_q4_K, scales);
  const __m512i sm[2] = {q4k_scales_mins_v2(x[0] + sc, x[1] + sc),
                         q4k_scales_mins_v2(x[2] + sc, x[3] + sc)};
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
    s1[k] = k45_s1_lanes(sm[k / 2], k % 2, x[k] + qs_off,
                         qh_off ? x[k] + qh_off : NULL, al, ah, vec);
  *s2 = k45_s2_lanes4(sm[0], sm[1], q8s);
  /* the 4 rows' d, dmin pairs (the blocks' first dwords) as d0..3 in the
   * low half, dmin0..3 in the high half */
  uint32_t dm[4];
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
    memcpy(&dm[k], x[k], 4);
  const __m128i dmi = _mm_shuffle_epi8(
      _mm_set_epi64x((long long)((uint64_t)dm[3] << 32 | dm[2]),
                     (long long)((uint64_t)dm[1] << 32 | dm[0])),
      _mm_set_epi8(15, 14, 11, 10, 7, 6, 3, 2, 13, 12, 9, 8, 5, 4, 1, 0));
  return _mm256_cvtph_ps(dmi);
}

static inline __attribute__((always_inline)) void
k45_step4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
          const __m512i a[4], kq_acc4 *acc, size_t bsz, size_t qs_off,
          size_t qh_off) {
  __m512i s1[4], s2;
  const __m256 dmf =
      k45_lanes4(wr, w_stride, i, yi, a, bsz, qs_off, qh_off, false, s1, &s2);
  const __m128 f1 = _mm_cvtepi32_ps(hsum4x16i(s1[0], s1[1], s1[2], s1[3]));
  const __m128 f2 = _mm_cvtepi32_ps(k45_s2_rows4(s2));
  const __m128 t = _mm_mul_ps(f1, _mm256_castps256_ps128(dmf));
  const __m128 u = _mm_fnmadd_ps(_mm256_extractf128_ps(dmf, 1), f2, t);
  acc->t = _mm_fmadd_ps(u, _mm_set1_ps(yi->d), acc->t);
}

static inline __attribute__((always_inline)) void
q4k_step4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
          const __m512i a[4], kq_acc4 *acc) {
  k45_step4(wr, w_stride, i, yi, a, acc, sizeof(block_q4_K),
            offsetof(block_q4_K, qs), 0);
}

static inline __attribute__((always_inline)) void
q5k_step4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
          const __m512i a[4], kq_acc4 *acc) {
  k45_step4(wr, w_stride, i, yi, a, acc, sizeof(block_q5_K),
            offsetof(block_q5_K, qs), offsetof(block_q5_K, qh));
}

static void q5k_gemv_tiled(int64_t n, const uint8_t *w, size_t w_stride,
                           int64_t nw, const block_q8_K *y, float *out) {
  kq_gemv4(n, w, w_stride, nw, y, out, q5k_step4, kt_fin4,
           nc_avx512_dot_q5_k_tiled);
}

static void q4k_gemv_tiled(int64_t n, const uint8_t *w, size_t w_stride,
                           int64_t nw, const block_q8_K *y, float *out) {
  kq_gemv4(n, w, w_stride, nw, y, out, q4k_step4, kt_fin4,
           nc_avx512_dot_q4_k_tiled);
}

/* ---------------------------------------- Q6_K decode: 4 rows, 1 act */

/* The 8 int32 of each of a, b, c, d summed (exact). */
static inline __m128i hsum4x8i(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i h =
      _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
  return _mm_add_epi32(_mm256_castsi256_si128(h),
                       _mm256_extracti128_si256(h, 1));
}

/* q6k_s1_lanes: the scale of each word of the packed lanes (h = 0, 1). */
static const _Alignas(64) int16_t k_idx_q6_pk[2][32] = {
    {0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5,
     2, 2, 2, 2, 6, 6, 6, 6, 3, 3, 3, 3, 7, 7, 7, 7},
    {8,  8,  8,  8,  12, 12, 12, 12, 9,  9,  9,  9,  13, 13, 13, 13,
     10, 10, 10, 10, 14, 14, 14, 14, 11, 11, 11, 11, 15, 15, 15, 15},
};

/* q6k_s1_lanes in the vec_dot order (see interleave_words): dword i's
 * words are chunks 4h + (i >= 8) and 4h + 2 + (i >= 8), lane k = i % 8,
 * each with its 16-element scale 2c + (k >= 4). */
static const _Alignas(64) int16_t k_idx_q6_vec[2][32] = {
    {0, 4, 0, 4, 0, 4, 0, 4, 1, 5, 1, 5, 1, 5, 1, 5,
     2, 6, 2, 6, 2, 6, 2, 6, 3, 7, 3, 7, 3, 7, 3, 7},
    {8,  12, 8,  12, 8,  12, 8,  12, 9,  13, 9,  13, 9,  13, 9,  13,
     10, 14, 10, 14, 10, 14, 10, 14, 11, 15, 11, 15, 11, 15, 11, 15},
};

/* One super-block of one weight row against the activation's chunks a[]:
 * S1's 16 lanes and the offset's 8 (as q6k_sb's tiled path). */
static inline __attribute__((always_inline)) __m512i
q6k_s1_lanes(const block_q6_K *x, const __m512i a[4], __m256i bs, __m256i *corr,
             bool vec) {
  const __m256i sc16 =
      _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
  const __m512i sc512 = _mm512_castsi256_si512(sc16);
  *corr = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5);
  const __m512i m4 = _mm512_set1_epi8(0x0f), m3f = _mm512_set1_epi8(0x3f);
  const __m512i sl = ld(k_sh_4_2), sr = ld(k_sh_0_2);
  __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++) {
    const __m512i l = _mm512_loadu_si512(x->ql + 64 * h);
    const __m512i hb = bcast32(x->qh + 32 * h);
    /* the low 4 bits from l (mask m4), the top 2 from hb: one ternlog */
    const __m512i q01 =
        _mm512_ternarylogic_epi32(m4, l, _mm512_sllv_epi16(hb, sl), 0xca);
    const __m512i q23 = _mm512_ternarylogic_epi32(
        m4, _mm512_srli_epi16(l, 4), _mm512_srlv_epi16(hb, sr), 0xca);
    /* vpdpbusd: 4 products per lane (|sum| <= 4 * 63 * 128, an int16);
     * vpackssdw: per 128-bit lane j, elements 128h + 16j.. (scale 8h + j)
     * in words 0..3, 128h + 64 + 16j.. (8h + 4 + j) in 4..7 */
    const __m512i p01 = _mm512_dpbusd_epi32(
        _mm512_setzero_si512(), _mm512_and_si512(q01, m3f), a[2 * h]);
    const __m512i p23 = _mm512_dpbusd_epi32(
        _mm512_setzero_si512(), _mm512_and_si512(q23, m3f), a[2 * h + 1]);
    sumi = _mm512_dpwssd_epi32(
        sumi, vec ? interleave_words(p01, p23) : _mm512_packs_epi32(p01, p23),
        _mm512_permutexvar_epi16(ld(vec ? k_idx_q6_vec[h] : k_idx_q6_pk[h]),
                                 sc512));
  }
  return sumi;
}

/* Super-block i of 4 Q6_K weight rows: each row's S1 minus the offset in
 * 8 lanes (exact; q6k_s1_lanes in the tiled (vec false) or vec_dot
 * layout), and the rows' d0..3 as floats. */
static inline __attribute__((always_inline)) __m128
q6k_lanes4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
           const __m512i a[4], bool vec, __m256i s8[4]) {
  const __m256i bs = _mm256_loadu_si256((const __m256i *)yi->bsums);
  uint64_t dv = 0; /* the 4 rows' fp16 d (see h4_ps) */
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++) {
    const block_q6_K *x = (const block_q6_K *)(wr + (size_t)k * w_stride) + i;
    __m256i corr;
    const __m512i s1 = q6k_s1_lanes(x, a, bs, &corr, vec);
    s8[k] = _mm256_sub_epi32(_mm256_add_epi32(lo8i(s1), hi8i(s1)), corr);
    uint16_t h;
    memcpy(&h, &x->d, 2);
    dv |= (uint64_t)h << (16 * k);
  }
  return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)dv));
}

/* Q6_K: tiled_step with dmin = S2 = 0, lane-wise. */
static inline __attribute__((always_inline)) void
q6k_step4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
          const __m512i a[4], kq_acc4 *acc) {
  __m256i s8[4];
  const __m128 d = q6k_lanes4(wr, w_stride, i, yi, a, false, s8);
  const __m128i si = hsum4x8i(s8[0], s8[1], s8[2], s8[3]);
  const __m128 t = _mm_mul_ps(_mm_cvtepi32_ps(si), d);
  const __m128 u = _mm_fnmadd_ps(_mm_setzero_ps(), _mm_setzero_ps(), t);
  acc->t = _mm_fmadd_ps(u, _mm_set1_ps(yi->d), acc->t);
}

static void q6k_gemv_tiled(int64_t n, const uint8_t *w, size_t w_stride,
                           int64_t nw, const block_q8_K *y, float *out) {
  kq_gemv4(n, w, w_stride, nw, y, out, q6k_step4, kt_fin4,
           nc_avx512_dot_q6_k_tiled);
}

/* ------------------------------- vec_dot-order decode: 4 rows, 1 act */

/* The same integer lanes in the vec_dot layout (k45_s1_lanes and
 * q6k_s1_lanes with vec): llama.cpp's 8 lanes I_k of row r are lane k plus
 * lane k + 8. Its float steps run on the 4 rows at once, rows 0, 1 in
 * acc->a01 (lanes 0..7, 8..15) and 2, 3 in acc->a23: per lane the same
 * fma(d, (float)I_k, acc_k) as q4k_sb, q5k_sb and q6k_sb. */

/* Rows 0, 1 (or 2, 3) of s1[] as [I of row a | I of row b]. */
static inline __m512i kv_lanes2(__m512i sa, __m512i sb) {
  return _mm512_add_epi32(_mm512_shuffle_i64x2(sa, sb, 0x44),
                          _mm512_shuffle_i64x2(sa, sb, 0xee));
}

/* d of rows 0..3 (lanes 0..3 of d4) as [d0 x8 | d1 x8] and [d2 | d3]. */
static const _Alignas(64) int32_t k_bcast_01[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                                    1, 1, 1, 1, 1, 1, 1, 1};
static const _Alignas(64) int32_t k_bcast_23[16] = {2, 2, 2, 2, 2, 2, 2, 2,
                                                    3, 3, 3, 3, 3, 3, 3, 3};
static const _Alignas(64) int32_t k_bcast_4x4[16] = {0, 0, 0, 0, 1, 1, 1, 1,
                                                     2, 2, 2, 2, 3, 3, 3, 3};

static inline __attribute__((always_inline)) void
kv_add_lanes(kq_acc4 *acc, __m128 d4, __m512i i01, __m512i i23) {
  const __m512 d = _mm512_castps128_ps512(d4);
  acc->a01 = _mm512_fmadd_ps(_mm512_permutexvar_ps(ld(k_bcast_01), d),
                             _mm512_cvtepi32_ps(i01), acc->a01);
  acc->a23 = _mm512_fmadd_ps(_mm512_permutexvar_ps(ld(k_bcast_23), d),
                             _mm512_cvtepi32_ps(i23), acc->a23);
}

/* Q4_K (qh_off 0) and Q5_K: the min lanes as in q4k_sb (Q4_K: 4 per row,
 * rows in the 4 128-bit lanes of acc->m) or q5k_sb (Q5_K: their sum, row r
 * in lane r). */
static inline __attribute__((always_inline)) void
k45_vstep4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
           const __m512i a[4], kq_acc4 *acc, size_t bsz, size_t qs_off,
           size_t qh_off) {
  __m512i s1[4], s2;
  const __m256 dmf =
      k45_lanes4(wr, w_stride, i, yi, a, bsz, qs_off, qh_off, true, s1, &s2);
  const __m128 d4 = _mm_mul_ps(_mm_set1_ps(yi->d), _mm256_castps256_ps128(dmf));
  const __m128 dmin4 =
      _mm_mul_ps(_mm_set1_ps(-yi->d), _mm256_extractf128_ps(dmf, 1));
  kv_add_lanes(acc, d4, kv_lanes2(s1[0], s1[1]), kv_lanes2(s1[2], s1[3]));
  if (!qh_off) {
    acc->m = _mm512_fmadd_ps(
        _mm512_permutexvar_ps(ld(k_bcast_4x4), _mm512_castps128_ps512(dmin4)),
        _mm512_cvtepi32_ps(s2), acc->m);
  } else {
    const __m128 m = _mm_cvtepi32_ps(k45_s2_rows4(s2));
    acc->m = _mm512_castps128_ps512(
        _mm_fmadd_ps(dmin4, m, _mm512_castps512_ps128(acc->m)));
  }
}

static inline __attribute__((always_inline)) void
q4k_vstep4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
           const __m512i a[4], kq_acc4 *acc) {
  k45_vstep4(wr, w_stride, i, yi, a, acc, sizeof(block_q4_K),
             offsetof(block_q4_K, qs), 0);
}

static inline __attribute__((always_inline)) void
q5k_vstep4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
           const __m512i a[4], kq_acc4 *acc) {
  k45_vstep4(wr, w_stride, i, yi, a, acc, sizeof(block_q5_K),
             offsetof(block_q5_K, qs), offsetof(block_q5_K, qh));
}

static inline __attribute__((always_inline)) void
q6k_vstep4(const uint8_t *wr, size_t w_stride, int64_t i, const block_q8_K *yi,
           const __m512i a[4], kq_acc4 *acc) {
  __m256i s8[4];
  const __m128 d4 = _mm_mul_ps(_mm_set1_ps(yi->d),
                               q6k_lanes4(wr, w_stride, i, yi, a, true, s8));
  kv_add_lanes(acc, d4,
               _mm512_inserti64x4(_mm512_castsi256_si512(s8[0]), s8[1], 1),
               _mm512_inserti64x4(_mm512_castsi256_si512(s8[2]), s8[3], 1));
}

/* The dots: hsum8 of each row's lanes, plus (Q4_K) hsum4_m of its min
 * lanes or (Q5_K) its summs. */
static inline __attribute__((always_inline)) void
kv_fin4(const kq_acc4 *acc, float *out, int mins) {
  const __m256 a[4] = {lo8(acc->a01), hi8(acc->a01), lo8(acc->a23),
                       hi8(acc->a23)};
  const __m128 m4[4] = {
      _mm512_extractf32x4_ps(acc->m, 0), _mm512_extractf32x4_ps(acc->m, 1),
      _mm512_extractf32x4_ps(acc->m, 2), _mm512_extractf32x4_ps(acc->m, 3)};
  float m1[4];
  _mm_storeu_ps(m1, m4[0]);
  for (int r = 0; r < 4; r++) {
    const float s = nc_hsum8(a[r]);
    out[r] = mins == 4 ? s + hsum4_m(m4[r]) : mins == 1 ? s + m1[r] : s;
  }
}
static inline __attribute__((always_inline)) void q4k_vfin4(const kq_acc4 *acc,
                                                            float *out) {
  kv_fin4(acc, out, 4);
}
static inline __attribute__((always_inline)) void q5k_vfin4(const kq_acc4 *acc,
                                                            float *out) {
  kv_fin4(acc, out, 1);
}
static inline __attribute__((always_inline)) void q6k_vfin4(const kq_acc4 *acc,
                                                            float *out) {
  kv_fin4(acc, out, 0);
}

static void q4k_gemv_vec(int64_t n, const uint8_t *w, size_t w_stride,
                         int64_t nw, const block_q8_K *y, float *out) {
  kq_gemv4(n, w, w_stride, nw, y, out, q4k_vstep4, q4k_vfin4,
           nc_avx512_dot_q4_k);
}
static void q5k_gemv_vec(int64_t n, const uint8_t *w, size_t w_stride,
                         int64_t nw, const block_q8_K *y, float *out) {
  kq_gemv4(n, w, w_stride, nw, y, out, q5k_vstep4, q5k_vfin4,
           nc_avx512_dot_q5_k);
}
static void q6k_gemv_vec(int64_t n, const uint8_t *w, size_t w_stride,
                         int64_t nw, const block_q8_K *y, float *out) {
  kq_gemv4(n, w, w_stride, nw, y, out, q6k_vstep4, q6k_vfin4,
           nc_avx512_dot_q6_k);
}

/* The vec_dot-order entry points: the dots above (nc_avx512_dot_qN_k),
 * their gemm (pairs from MIN_BATCH activation rows, the same operations),
 * one activation row 4 weight rows at a time (Q4_K, Q5_K, Q6_K). */
#define KV_ENTRY(name, gemv)                                                   \
  void nc_avx512_gemm_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *act, size_t a_stride,     \
                             int64_t na, float *out, size_t out_stride) {      \
    const kv_gemv_fn g = gemv;                                                 \
    if (g && na == 1 && nw >= 4) {                                             \
      g(n, w, w_stride, nw, act, out);                                         \
      return;                                                                  \
    }                                                                          \
    kq_gemm_##name(n, w, w_stride, nw, act, a_stride, na, out, out_stride);    \
  }                                                                            \
  void nc_avx512_dot_##name##_rows(int64_t n, const void *w, const void *a,    \
                                   size_t a_stride, int nrows, float *out,     \
                                   size_t out_stride) {                        \
    nc_avx512_gemm_##name(n, w, 0, 1, a, a_stride, nrows, out, out_stride);    \
  }
typedef void (*kv_gemv_fn)(int64_t, const uint8_t *, size_t, int64_t,
                           const block_q8_K *, float *);
static const kv_gemv_fn kv_none = NULL;
KV_ENTRY(q4_k, q4k_gemv_vec)
KV_ENTRY(q5_k, q5k_gemv_vec)
KV_ENTRY(q6_k, q6k_gemv_vec)
KV_ENTRY(q2_k, kv_none)
KV_ENTRY(q3_k, kv_none)
#undef KV_ENTRY

/* The weight rows of a tiled Q4_K/Q5_K/Q6_K gemm for avx512_kq16.c's 16-row
 * tiles (the rest go in pairs): whole groups of 16, and a last group of 8
 * or more (padded: half its work at worst); 0 for few activation rows. */
static int64_t kq16_rows(int64_t nw, int64_t na) {
  if (na < NC_KQ16_MIN_ROWS) return 0;
  const int64_t tail = nw % 16;
  return tail >= 8 ? nw : nw - tail;
}

/* The entry points (tables.h). The tiled-order dots: the single-row
 * kernels' integers, llama.cpp's tiled float step per super-block. Their
 * gemm: pairs from MIN_BATCH activation rows on, these dots below (the same
 * operations); _rows is the gemm of one weight row. */
#define KQ_TILED_ENTRIES(name, block, sb, gemv)                                \
  float nc_avx512_dot_##name##_tiled(int64_t n, const void *w,                 \
                                     const void *a) {                          \
    const block *x = w;                                                        \
    const block_q8_K *y = a;                                                   \
    float acc = 0;                                                             \
    for (int64_t i = 0; i < n / QK_K; i++)                                     \
      sb(x + i, y + i, NULL, NULL, &acc);                                      \
    return acc;                                                                \
  }                                                                            \
  void nc_avx512_gemm_##name##_tiled(                                          \
      int64_t n, const void *w, size_t w_stride, int64_t nw, const void *act,  \
      size_t a_stride, int64_t na, float *out, size_t out_stride) {            \
    if (na == 1 && nw >= 4) {                                                  \
      gemv(n, w, w_stride, nw, act, out);                                      \
      return;                                                                  \
    }                                                                          \
    const int64_t n16 = kq16_rows(nw, na);                                     \
    if (n16 > 0 &&                                                             \
        nc_avx512_kq16_gemm_##name(n, w, w_stride, n16, act, a_stride, na,     \
                                   out, out_stride)) {                         \
      w = (const uint8_t *)w + (size_t)n16 * w_stride;                         \
      out += n16;                                                              \
      nw -= n16;                                                               \
    }                                                                          \
    if (nw > 0)                                                                \
      kq_gemm_##name##_tiled(n, w, w_stride, nw, act, a_stride, na, out,       \
                             out_stride);                                      \
  }                                                                            \
  void nc_avx512_dot_##name##_tiled_rows(                                      \
      int64_t n, const void *w, const void *a, size_t a_stride, int nrows,     \
      float *out, size_t out_stride) {                                         \
    nc_avx512_gemm_##name##_tiled(n, w, 0, 1, a, a_stride, nrows, out,         \
                                  out_stride);                                 \
  }
KQ_TILED_ENTRIES(q4_k, block_q4_K, q4k_sb, q4k_gemv_tiled)
KQ_TILED_ENTRIES(q5_k, block_q5_K, q5k_sb, q5k_gemv_tiled)
KQ_TILED_ENTRIES(q6_k, block_q6_K, q6k_sb4, q6k_gemv_tiled)
#undef KQ_TILED_ENTRIES

float nc_avx512_dot_q2_k_tiled(int64_t n, const void *w, const void *a) {
  const block_q2_K *x = w;
  const block_q8_K *y = a;
  float acc = 0;
  for (int64_t i = 0; i < n / QK_K; i++)
    q2k_sb4(x + i, y + i, NULL, NULL, &acc);
  return acc;
}

void nc_avx512_gemm_q2_k_tiled(int64_t n, const void *w, size_t w_stride,
                               int64_t nw, const void *act, size_t a_stride,
                               int64_t na, float *out, size_t out_stride) {
  kq_gemm_q2_k_tiled(n, w, w_stride, nw, act, a_stride, na, out, out_stride);
}

void nc_avx512_dot_q2_k_tiled_rows(int64_t n, const void *w, const void *a,
                                   size_t a_stride, int nrows, float *out,
                                   size_t out_stride) {
  nc_avx512_gemm_q2_k_tiled(n, w, 0, 1, a, a_stride, nrows, out, out_stride);
}

float nc_avx512_dot_q3_k_tiled(int64_t n, const void *w, const void *a) {
  const block_q3_K *x = w;
  const block_q8_K *y = a;
  float acc = 0;
  for (int64_t i = 0; i < n / QK_K; i++)
    q3k_sb4(x + i, y + i, NULL, NULL, &acc);
  return acc;
}

void nc_avx512_gemm_q3_k_tiled(int64_t n, const void *w, size_t w_stride,
                               int64_t nw, const void *act, size_t a_stride,
                               int64_t na, float *out, size_t out_stride) {
  kq_gemm_q3_k_tiled(n, w, w_stride, nw, act, a_stride, na, out, out_stride);
}

void nc_avx512_dot_q3_k_tiled_rows(int64_t n, const void *w, const void *a,
                                   size_t a_stride, int nrows, float *out,
                                   size_t out_stride) {
  nc_avx512_gemm_q3_k_tiled(n, w, 0, 1, a, a_stride, nrows, out, out_stride);
}
