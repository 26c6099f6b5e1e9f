/* amx_kquant: the amx table's Q4_K, Q5_K and Q6_K matmuls, in the order of
 * llama.cpp's AMX build (ref_block.c): per 256-superblock the exact integer
 *   S = sum over groups g of sc_g * I_g   (I_g: the group's integer dot)
 *   M = sum over 32-groups j of m_j * b_j (Q4_K/Q5_K; b_j: the activation
 *       32-sum, from its 16-sums)
 * then acc = fma(S, d_a * d_w, acc), acc = fma(M, -d_a * dmin_w, acc).
 * Groups are 32 quants (8 per superblock) for Q4_K/Q5_K, 16 (16) for Q6_K.
 *
 * The weight rows go 16 at a time, their quants unsigned (Q6_K's stay
 * 0..63; its I_g subtracts 32 * the activations' 16-sum) and in the
 * "VNNI" layout: row k of a B tile = dword k of the 16 weight rows.
 * - 1 to NC_AMX_KGEMV_MAX_A activation rows (decode): AVX-512 VNNI. The 16
 *   rows' quants are loaded a row at a time and transposed in registers
 *   (16 x 16 dwords); vpdpbusd of a transposed row with one broadcast
 *   activation dword adds 4 products for each of the 16 rows, so a group's
 *   dots need no horizontal sums.
 * - More: per superblock a panel block is unpacked (the B tiles: 8 rows of
 *   64 bytes per 32 quants, for Q6_K two groups of 4 rows; the scales as
 *   int32, d and dmin as floats), then one tdpbssd per group for 16
 *   activation rows x 16 weight rows, with the integer scaling and the
 *   float steps on AVX-512 (each C scaled RING - 1 steps after its store,
 *   as amx_gemm.c does).
 * Rows past the last whole 16 use the plain-C reference.
 *
 * The same tiles serve the prompts (more than NC_AMX_KGEMV_MAX_A rows) of
 * IQ4_XS and the IQ2/IQ3 lattice types in their tiled order (the avx512
 * table's, ref_nl.c / ref_iq.c: per superblock the exact S over the groups'
 * scales, then t = (float)S * d_w (lattice: d_w * unit), acc = fma(t, d_a,
 * acc)): their weights are signed bytes (IQ4_XS's codebook values, 32-groups
 * scaled by ls - 32; the lattice points with their signs from avx512_iq.c's
 * unpacking, 16-groups), so one tdpbssd per group gives I_g. Fewer rows, and
 * the rows past the last whole 16, take avx512_i16_gemm.c's kernels. */
#include <stdlib.h>
#include <string.h>

#include "amx_tiles.h"
#include "avx2_util.h"
#include "ref.h"
#include "tables.h"

enum {
  RING = 4,
  MAX_SUPER = 256, /* n <= 65536: longer rows use the reference */
  FEW_ROWS = 8,    /* a tile of up to this many activation rows: its steps
                     only for them (gemm_tile) */
  GEMV_GROUPS = 3, /* up to 3 x NC_AMX_KGEMV_MAX_A rows on the VNNI rows */
  CHUNKS = 8,      /* 32-quant chunks per superblock */
  /* panel block: quants, sc[16][16], m pairs[4][16] (int32), d, dmin */
  PB_QUANTS = CHUNKS * 8 * 64,
  PB_SC = PB_QUANTS,
  PB_MP = PB_SC + 16 * TILE * 4,
  PB_D = PB_MP + 4 * TILE * 4,
  PANEL_SUPER = PB_D + 2 * TILE * 4,
  /* activation tile (16 rows): quants by chunk [8][16][32], d_a[16], b
   * pairs [4][16], Q6_K's 32 * 16-sums [16][16] (int32) */
  AB_D = CHUNKS * TILE * 32,
  AB_BP = AB_D + TILE * 4,
  AB_C32 = AB_BP + 4 * TILE * 4,
  ACT_SUPER = AB_C32 + 16 * TILE * 4,
};

/* KIQ4 (IQ4_XS) and the IQ2/IQ3 lattice types on the same tiles (prompts,
 * in their tiled order: see nc_amx_gemm_iq4_xs_tiled) */
typedef enum {
  KQ4,
  KQ5,
  KQ6,
  KIQ4,
  KIQ2XXS,
  KIQ2XS,
  KIQ2S,
  KIQ3XXS,
  KIQ3S
} kq_type;

/* The lattice type of t, or NC_TYPE_COUNT. */
static inline nc_type lattice_of(kq_type t) {
  switch (t) {
  case KIQ2XXS: return NC_TYPE_IQ2_XXS;
  case KIQ2XS: return NC_TYPE_IQ2_XS;
  case KIQ2S: return NC_TYPE_IQ2_S;
  case KIQ3XXS: return NC_TYPE_IQ3_XXS;
  case KIQ3S: return NC_TYPE_IQ3_S;
  default: return NC_TYPE_COUNT;
  }
}

/* Groups (of 32 or 16 quants) per superblock: one scale each. */
static inline int groups_of(kq_type t) {
  return t == KQ6 || lattice_of(t) != NC_TYPE_COUNT ? 16 : 8;
}

/* ------------------------------------------------------------- panels */

/* Chunk c (quants 32c .. 32c + 31, element order) of one superblock row,
 * as unsigned bytes. */
static inline __m256i chunk_quants(kq_type t, const uint8_t *sb, int c) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  if (t == KIQ4) { /* signed codebook values: low nibbles 0..15, high 16..31 */
    const block_iq4_xs *x = (const void *)sb;
    const __m128i table = _mm_loadu_si128((const __m128i *)nc_iq4nl_values);
    const __m128i b = _mm_loadu_si128((const __m128i *)(x->qs + 16 * c));
    const __m128i m = _mm256_castsi256_si128(m4);
    return _mm256_set_m128i(
        _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(b, 4), m)),
        _mm_shuffle_epi8(table, _mm_and_si128(b, m)));
  }
  if (t == KQ6) {
    const block_q6_K *x = (const void *)sb;
    const int h = c / 4, j = c % 4;
    const __m256i ql =
        _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h + 32 * (j & 1)));
    const __m256i lo =
        _mm256_and_si256(j >> 1 ? _mm256_srli_epi16(ql, 4) : ql, m4);
    const __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
    const __m256i hi =
        _mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), _mm256_set1_epi8(3));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
  }
  /* Q4_K, Q5_K: chunk c = 2 * k + h, nibble h of qs[32k .. 32k + 31] */
  const uint8_t *qs = t == KQ4 ? ((const block_q4_K *)(const void *)sb)->qs
                               : ((const block_q5_K *)(const void *)sb)->qs;
  const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (c / 2)));
  __m256i q = _mm256_and_si256(c & 1 ? _mm256_srli_epi16(v, 4) : v, m4);
  if (t == KQ5) {
    const __m256i qh = _mm256_loadu_si256(
        (const __m256i *)((const block_q5_K *)(const void *)sb)->qh);
    const __mmask32 bit =
        _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(1 << c)));
    q = _mm256_mask_blend_epi8(bit, q,
                               _mm256_or_si256(q, _mm256_set1_epi8(0x10)));
  }
  return q;
}

/* Superblock i of 16 weight rows -> its panel block (see the top). */
static inline __attribute__((always_inline)) void
pack_panel_super(kq_type t, const uint8_t *w, size_t w_stride, size_t bsize,
                 int64_t i, uint8_t *pb) {
  const __m512i idx =
      _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const uint8_t *sb = w + (size_t)i * bsize;
  const nc_type lt = lattice_of(t);
  if (lt != NC_TYPE_COUNT) { /* the 16 rows unpacked first */
    _Alignas(64) int8_t q[TILE][QK_K];
    int32_t s16[TILE][16];
    float *d = (float *)(void *)(pb + PB_D);
    int32_t *sc = (int32_t *)(void *)(pb + PB_SC);
    for (int r = 0; r < TILE; r++) {
      d[r] =
          nc_avx512_iq_unpack_i8(lt, w + (size_t)r * w_stride, i, q[r], s16[r]);
      d[TILE + r] = 0.0f;
      for (int g = 0; g < 16; g++)
        sc[g * TILE + r] = s16[r][g];
    }
    for (int c = 0; c < CHUNKS; c++) {
      __m512i v[8], o[8];
      for (int p = 0; p < 8; p++)
        v[p] = _mm512_permutex2var_epi32(
            _mm512_castsi256_si512(
                _mm256_load_si256((const __m256i *)(q[2 * p] + 32 * c))),
            idx,
            _mm512_castsi256_si512(
                _mm256_load_si256((const __m256i *)(q[2 * p + 1] + 32 * c))));
      transpose_qwords(v, o);
      for (int k = 0; k < 8; k++)
        _mm512_store_si512(pb + (size_t)c * 512 + 64 * k, o[k]);
    }
    return;
  }
  for (int c = 0; c < CHUNKS; c++) {
    __m512i v[8], o[8];
    for (int p = 0; p < 8; p++)
      v[p] = _mm512_permutex2var_epi32(
          _mm512_castsi256_si512(
              chunk_quants(t, sb + (size_t)(2 * p) * w_stride, c)),
          idx,
          _mm512_castsi256_si512(
              chunk_quants(t, sb + (size_t)(2 * p + 1) * w_stride, c)));
    transpose_qwords(v, o);
    for (int k = 0; k < 8; k++)
      _mm512_store_si512(pb + (size_t)c * 512 + 64 * k, o[k]);
  }
  int32_t *sc = (int32_t *)(void *)(pb + PB_SC);
  int32_t *mp = (int32_t *)(void *)(pb + PB_MP);
  float *d = (float *)(void *)(pb + PB_D), *dmin = d + TILE;
  for (int r = 0; r < TILE; r++) {
    const uint8_t *x = sb + (size_t)r * w_stride;
    if (t == KIQ4) {
      const block_iq4_xs *q = (const void *)x;
      for (int j = 0; j < 8; j++)
        sc[j * TILE + r] = (((q->scales_l[j / 2] >> 4 * (j % 2)) & 0x0f) |
                            (((q->scales_h >> 2 * j) & 3) << 4)) -
                           32;
      d[r] = nc_fp16_to_fp32(q->d);
      dmin[r] = 0.0f;
      continue;
    }
    if (t == KQ6) {
      const block_q6_K *q6 = (const void *)x;
      for (int g = 0; g < 16; g++)
        sc[g * TILE + r] = q6->scales[g];
      d[r] = nc_fp16_to_fp32(q6->d);
      dmin[r] = 0.0f;
      continue;
    }
    const uint8_t *scales = t == KQ4
                                ? ((const block_q4_K *)(const void *)x)->scales
                                : ((const block_q5_K *)(const void *)x)->scales;
    uint8_t s[8], m[8];
    for (int j = 0; j < 8; j++) {
      nc_k4_scale_min(j, scales, &s[j], &m[j]);
      sc[j * TILE + r] = s[j];
    }
    for (int p = 0; p < 4; p++)
      mp[p * TILE + r] =
          (int32_t)((uint32_t)m[2 * p] | ((uint32_t)m[2 * p + 1] << 16));
    const nc_fp16 *h = (const nc_fp16 *)(const void *)x; /* d, dmin first */
    d[r] = nc_fp16_to_fp32(h[0]);
    dmin[r] = nc_fp16_to_fp32(h[1]);
  }
}

/* --------------------------------------------------------- activations */

/* The activation 32-sums as the pairs vpdpwssd takes, and Q6_K's
 * 32 * 16-sums, of one Q8_K superblock. */
static inline void act_sums(const block_q8_K *y, int32_t bp[4],
                            int32_t c32[16]) {
  int32_t b[8];
  for (int j = 0; j < 8; j++)
    b[j] = y->bsums[2 * j] + y->bsums[2 * j + 1];
  for (int p = 0; p < 4; p++)
    bp[p] = (int32_t)(((uint32_t)b[2 * p] & 0xffffu) |
                      ((uint32_t)b[2 * p + 1] << 16));
  for (int g = 0; g < 16; g++)
    c32[g] = 32 * y->bsums[g];
}

/* ------------------------------------------------------ the float steps */

/* One superblock's float steps for the 16 weight rows of a panel. */
static inline __attribute__((always_inline)) __m512
super_steps(kq_type t, __m512 acc, __m512i s, __m512i m, float da,
            const uint8_t *pb) {
  const float *d = (const float *)(const void *)(pb + PB_D);
  if (t != KQ4 && t != KQ5 && t != KQ6) /* t = (float)S * d_w (lattice: d_w *
                                           unit), acc = fma(t, d_a, acc) */
    return _mm512_fmadd_ps(
        _mm512_mul_ps(_mm512_cvtepi32_ps(s), _mm512_load_ps(d)),
        _mm512_set1_ps(da), acc);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                        _mm512_mul_ps(_mm512_set1_ps(da), _mm512_load_ps(d)),
                        acc);
  if (t != KQ6)
    acc = _mm512_fmadd_ps(
        _mm512_cvtepi32_ps(m),
        _mm512_mul_ps(_mm512_set1_ps(-da), _mm512_load_ps(d + TILE)), acc);
  return acc;
}

/* M for the 16 weight rows and one activation row's b pairs. */
static inline __m512i mins_dot(const uint8_t *pb, const int32_t bp[4]) {
  const __m512i *mp = (const __m512i *)(const void *)(pb + PB_MP);
  __m512i m = _mm512_setzero_si512();
  for (int p = 0; p < 4; p++)
    m = _mm512_dpwssd_epi32(m, _mm512_set1_epi32(bp[p]),
                            _mm512_load_si512(mp + p));
  return m;
}

/* ---------------------------------------------------------------- gemv */

/* The activation rows' per-superblock values, once per call. */
typedef struct act_vals {
  float d[NC_AMX_KGEMV_MAX_A];
  int32_t bp[NC_AMX_KGEMV_MAX_A][4];
  int32_t c32[NC_AMX_KGEMV_MAX_A][16];
} act_vals;

/* Byte b (0..3) of each dword. */
static inline __m512i byte_of(__m512i x, int b) {
  return _mm512_and_si512(_mm512_srli_epi32(x, 8 * b), _mm512_set1_epi32(0xff));
}

/* Q4_K/Q5_K: the 16 rows' scales and mins from the gathered 12 bytes (s0:
 * bytes 0..3, s1: 4..7, s2: 8..11), sc[8] and the min pairs mp[4]. */
static inline void k4_scales16(__m512i s0, __m512i s1, __m512i s2,
                               __m512i sc[8], __m512i mp[4]) {
  const __m512i m63 = _mm512_set1_epi32(63), m15 = _mm512_set1_epi32(15);
  __m512i m[8];
#pragma GCC unroll 16
  for (int j = 0; j < 4; j++) {
    sc[j] = _mm512_and_si512(byte_of(s0, j), m63);
    m[j] = _mm512_and_si512(byte_of(s1, j), m63);
    const __m512i lo = byte_of(s2, j);
    sc[j + 4] = _mm512_or_si512(
        _mm512_and_si512(lo, m15),
        _mm512_slli_epi32(_mm512_srli_epi32(byte_of(s0, j), 6), 4));
    m[j + 4] = _mm512_or_si512(
        _mm512_srli_epi32(lo, 4),
        _mm512_slli_epi32(_mm512_srli_epi32(byte_of(s1, j), 6), 4));
  }
#pragma GCC unroll 16
  for (int p = 0; p < 4; p++)
    mp[p] = _mm512_or_si512(m[2 * p], _mm512_slli_epi32(m[2 * p + 1], 16));
}

/* The decode's integer S of one weight row, lanes = its quants: per 64
 * quants vpdpbusd sums 4 products per lane (|sum| <= 4 * 63 * 128, an
 * int16), vpackssdw packs two such vectors into words (no saturation) and
 * vpdpwssd applies each word's group scale; the 16 lanes of the result add
 * up to S (exact, whatever the grouping). k_sc_*: the group of each word. */
static const _Alignas(64) int16_t k_sc_k45[2][2][32] = {
    /* packed words of 128-bit lane l: chunk 4h + (l >= 2 ? 2 : 0) (low
     * nibbles) x4, then the next chunk (high nibbles) x4; the scales are
     * words 0..7 of the first row of a pair (k45_scales4), 16..23 of the
     * second */
    {{0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1,
      2, 2, 2, 2, 3, 3, 3, 3, 2, 2, 2, 2, 3, 3, 3, 3},
     {4, 4, 4, 4, 5, 5, 5, 5, 4, 4, 4, 4, 5, 5, 5, 5,
      6, 6, 6, 6, 7, 7, 7, 7, 6, 6, 6, 6, 7, 7, 7, 7}},
    {{16, 16, 16, 16, 17, 17, 17, 17, 16, 16, 16, 16, 17, 17, 17, 17,
      18, 18, 18, 18, 19, 19, 19, 19, 18, 18, 18, 18, 19, 19, 19, 19},
     {20, 20, 20, 20, 21, 21, 21, 21, 20, 20, 20, 20, 21, 21, 21, 21,
      22, 22, 22, 22, 23, 23, 23, 23, 22, 22, 22, 22, 23, 23, 23, 23}},
};
static const _Alignas(64) int16_t k_sc_q6[2][32] = {
    /* 128-bit lane l: group 8h + l x4, then 8h + 4 + l x4 */
    {0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5,
     2, 2, 2, 2, 6, 6, 6, 6, 3, 3, 3, 3, 7, 7, 7, 7},
    {8,  8,  8,  8,  12, 12, 12, 12, 9,  9,  9,  9,  13, 13, 13, 13,
     10, 10, 10, 10, 14, 14, 14, 14, 11, 11, 11, 11, 15, 15, 15, 15},
};

/* Per-word shift counts (low 256 bits, high 256 bits) that bring a qh bit
 * of each byte to bit 4 (Q5_K: bit c of chunk c, h = 0 left, 1 right) or
 * its 2-bit pair to bits 4..5 (Q6_K). */
static inline __m512i shift_pair(int lo, int hi) {
  return _mm512_inserti64x4(_mm512_set1_epi16((short)lo),
                            _mm256_set1_epi16((short)hi), 1);
}

/* The activation rows' quants in the layouts the weights' loads give:
 * Q4_K/Q5_K lo[h] = chunks 4h, 4h + 2 (the low nibbles of qs[64h ..]),
 * hi[h] = chunks 4h + 1, 4h + 3; Q6_K q[j] = quants 64j .. 64j + 63, and
 * off[j] = -32 * the sum of each lane's 4 quants (the -32 of every weight
 * quant, where vpdpbusd starts). */
typedef struct act_regs {
  __m512i lo[NC_AMX_KGEMV_MAX_A][2], hi[NC_AMX_KGEMV_MAX_A][2];
  __m512i q[NC_AMX_KGEMV_MAX_A][4];
  __m512i off[NC_AMX_KGEMV_MAX_A][4];
} act_regs;

/* Q4_K/Q5_K: the scales and mins of 4 rows (superblocks at x, x +
 * w_stride, ...) as bytes, row q in 128-bit lane q: sc0..7, m0..7. From
 * each block's first 16 bytes, dwords [d dmin, w0, w1, w2]: sc0..3 = w0 &
 * 3f, sc4..7 = w2 & 0f | (w0 >> 2) & 30, m0..3 = w1 & 3f, m4..7 = (w2 >> 4)
 * & 0f | (w1 >> 2) & 30 (per byte; see k4_scales16). k45_heads4: the 4
 * rows' first 16 bytes. */
static inline __m512i k45_heads4(const uint8_t *x, size_t w_stride) {
  __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)x));
  v = _mm512_inserti32x4(
      v, _mm_loadu_si128((const __m128i *)(const void *)(x + w_stride)), 1);
  v = _mm512_inserti32x4(
      v, _mm_loadu_si128((const __m128i *)(const void *)(x + 2 * w_stride)), 2);
  return _mm512_inserti32x4(
      v, _mm_loadu_si128((const __m128i *)(const void *)(x + 3 * w_stride)), 3);
}
static inline __m512i k45_scales4(__m512i v) {
  const __m512i a =
      _mm512_srlv_epi32(_mm512_shuffle_epi32(v, _MM_SHUFFLE(3, 2, 3, 1)),
                        _mm512_set4_epi32(4, 0, 0, 0));
  const __m512i b =
      _mm512_srli_epi32(_mm512_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 1, 1)), 2);
  return _mm512_ternarylogic_epi32(
      _mm512_and_si512(
          a, _mm512_set4_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f)),
      b, _mm512_set4_epi32(0x30303030, 0, 0x30303030, 0), 0xf8);
}

/* S of one Q4_K/Q5_K row (its superblock at x) against A activation rows:
 * sum[k]'s lanes add up to S. scw: its pair's scales and mins as words
 * (k45_scales4), the row q of the pair. */
static inline __attribute__((always_inline)) void
k45_row(kq_type t, const uint8_t *x, __m512i scw, int q, const act_regs *ar,
        const int A, __m512i sum[]) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const uint8_t *qs = x + (t == KQ4 ? 16 : 48);
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++) {
    const __m512i v = _mm512_loadu_si512((const void *)(qs + 64 * h));
    __m512i ql = _mm512_and_si512(v, m4);
    __m512i qu = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    if (t == KQ5) { /* bit c of qh[e]: element e of chunk c */
      const __m512i hb = _mm512_broadcast_i64x4(
          _mm256_loadu_si256((const __m256i *)(const void *)(x + 16)));
      const __m512i c10 = _mm512_set1_epi8(0x10);
      const __m512i bl = h ? _mm512_srlv_epi16(hb, shift_pair(0, 2))
                           : _mm512_sllv_epi16(hb, shift_pair(4, 2));
      const __m512i bu = h ? _mm512_srlv_epi16(hb, shift_pair(1, 3))
                           : _mm512_sllv_epi16(hb, shift_pair(3, 1));
      ql = _mm512_ternarylogic_epi32(ql, bl, c10, 0xf8); /* ql | bl & c10 */
      qu = _mm512_ternarylogic_epi32(qu, bu, c10, 0xf8);
    }
    const __m512i sc =
        _mm512_permutexvar_epi16(_mm512_load_si512(k_sc_k45[q][h]), scw);
#pragma GCC unroll 16
    for (int k = 0; k < A; k++) {
      const __m512i pl =
          _mm512_dpbusd_epi32(_mm512_setzero_si512(), ql, ar->lo[k][h]);
      const __m512i ph =
          _mm512_dpbusd_epi32(_mm512_setzero_si512(), qu, ar->hi[k][h]);
      sum[k] = _mm512_dpwssd_epi32(sum[k], _mm512_packs_epi32(pl, ph), sc);
    }
  }
}

/* S of one Q6_K row, its -32 offset included: each lane of vpdpbusd
 * starts at -32 * its 4 activations (then sums 4 (q - 32) a: |.| <= 4 * 32
 * * 128, an int16). */
static inline __attribute__((always_inline)) void
q6_row(const uint8_t *x, const act_regs *ar, const int A, __m512i sum[]) {
  const block_q6_K *b = (const void *)x;
  const __m256i sc16 =
      _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
  const __m512i scw = _mm512_castsi256_si512(sc16);
  const __m512i m4 = _mm512_set1_epi8(0x0f), c30 = _mm512_set1_epi8(0x30);
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++) {
    const __m512i l = _mm512_loadu_si512((const void *)(b->ql + 64 * h));
    const __m512i hb = _mm512_broadcast_i64x4(
        _mm256_loadu_si256((const __m256i *)(const void *)(b->qh + 32 * h)));
    /* quants 128h + 0..63: low nibbles, qh bits 0..1 (then 2..3);
     * 128h + 64..127: high nibbles, bits 4..5 (then 6..7) */
    const __m512i q01 = _mm512_ternarylogic_epi32(
        m4, l, _mm512_and_si512(_mm512_sllv_epi16(hb, shift_pair(4, 2)), c30),
        0xca);
    const __m512i q23 = _mm512_ternarylogic_epi32(
        m4, _mm512_srli_epi16(l, 4),
        _mm512_and_si512(_mm512_srlv_epi16(hb, shift_pair(0, 2)), c30), 0xca);
    const __m512i sc =
        _mm512_permutexvar_epi16(_mm512_load_si512(k_sc_q6[h]), scw);
#pragma GCC unroll 16
    for (int k = 0; k < A; k++) {
      const __m512i p01 =
          _mm512_dpbusd_epi32(ar->off[k][2 * h], q01, ar->q[k][2 * h]);
      const __m512i p23 =
          _mm512_dpbusd_epi32(ar->off[k][2 * h + 1], q23, ar->q[k][2 * h + 1]);
      sum[k] = _mm512_dpwssd_epi32(sum[k], _mm512_packs_epi32(p01, p23), sc);
    }
  }
}

/* Two rows' lane vectors a, b -> per 128-bit lane [a0 + a2, b0 + b2,
 * a1 + a3, b1 + b3]; two such (rows 0, 1 and 2, 3) -> per 128-bit lane
 * the 4 rows' partial sums in order. */
static inline __m512i sum_rows2(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b),
                          _mm512_unpackhi_epi32(a, b));
}
static inline __m512i sum_rows4(__m512i ab, __m512i cd) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd),
                          _mm512_unpackhi_epi64(ab, cd));
}
/* u[m] (rows 4m .. 4m + 3 per 128-bit lane) -> lane r = row r's sum. */
static inline __m512i sum_rows16(const __m512i u[4]) {
  const __m512i x = _mm512_add_epi32(_mm512_shuffle_i32x4(u[0], u[1], 0x88),
                                     _mm512_shuffle_i32x4(u[0], u[1], 0xdd));
  const __m512i y = _mm512_add_epi32(_mm512_shuffle_i32x4(u[2], u[3], 0x88),
                                     _mm512_shuffle_i32x4(u[2], u[3], 0xdd));
  return _mm512_add_epi32(_mm512_shuffle_i32x4(x, y, 0x88),
                          _mm512_shuffle_i32x4(x, y, 0xdd));
}

/* S of weight row r (superblock at sb + r * w_stride) into sum[]; scw
 * as k45_row's (Q4_K/Q5_K: rows r & ~1, r | 1). */
static inline __attribute__((always_inline)) void
row_sums(kq_type t, const uint8_t *sb, size_t w_stride, int r, __m512i scw,
         const act_regs *ar, const int A, __m512i sum[]) {
#pragma GCC unroll 16
  for (int k = 0; k < A; k++)
    sum[k] = _mm512_setzero_si512();
  if (t == KQ6)
    q6_row(sb + (size_t)r * w_stride, ar, A, sum);
  else
    k45_row(t, sb + (size_t)r * w_stride, scw, r & 1, ar, A, sum);
}

/* Q4_K/Q5_K: M's 4 partial sums of rows 4m .. 4m + 3 (row q in 128-bit
 * lane q) from their pairs' scales and mins as words (k45_scales4) and the
 * activation's 32-sums bw (words 8..15 and 24..31; 0 against the scales). */
static const _Alignas(64) int32_t k_mins4[16] = {
    4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31};
static inline __m512i mins4(__m512i sw01, __m512i sw23, __m512i bw) {
  return _mm512_permutex2var_epi32(_mm512_madd_epi16(sw01, bw),
                                   _mm512_load_si512(k_mins4),
                                   _mm512_madd_epi16(sw23, bw));
}

/* Dword 0 of each 128-bit lane of two vectors. */
static const _Alignas(64) int32_t k_firsts[16] = {0, 4, 8, 12, 16, 20, 24, 28,
                                                  0, 0, 0, 0,  0,  0,  0,  0};

/* The sums of sum_rows4(sum_rows2(z0, z1), sum_rows2(z2, z3)) hold row 4m +
 * q (z_m's 128-bit lane q) at 4q + m: to lane 4m + q. */
static const _Alignas(64) int32_t k_rows_order[16] = {
    0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

/* 16 weight rows straight from their blocks x A activation rows: each
 * row's S with its quants in the lanes (row_sums), the 16 rows' lane sums
 * reduced into one vector (row r in lane r), where the float steps run
 * with d and dmin gathered (rows in the lanes). */
static inline __attribute__((always_inline)) void
gemv_tile(kq_type t, int64_t nsb, const uint8_t *w, size_t w_stride,
          size_t bsize, const uint8_t *a, size_t a_stride, const int A,
          const act_vals *av, float *out, size_t out_stride) {
  const __m512i rows = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)w_stride));
  __m512 acc[NC_AMX_KGEMV_MAX_A];
#pragma GCC unroll 16
  for (int k = 0; k < A; k++)
    acc[k] = _mm512_setzero_ps();
  const uint8_t *pf = nc_prefetch_base(w, TILE * w_stride);
  const size_t pf_step = TILE * bsize;
#define GATHER(off) _mm512_i32gather_epi32(rows, sb + (off), 1)
  for (int64_t i = 0; i < nsb; i++) {
    const uint8_t *sb = w + (size_t)i * bsize;
    nc_prefetch_lines(pf + (size_t)i * pf_step, pf_step);
    const act_vals *v = av + i;
    act_regs ar;
    __m512i bw[NC_AMX_KGEMV_MAX_A];
#pragma GCC unroll 16
    for (int k = 0; k < A; k++) {
      const block_q8_K *y =
          (const block_q8_K *)(const void *)(a + (size_t)k * a_stride) + i;
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++)
        ar.q[k][j] = _mm512_loadu_si512((const void *)(y->qs + 64 * j));
      if (t == KQ6) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
          ar.off[k][j] = _mm512_sub_epi32(
              _mm512_setzero_si512(),
              _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(32),
                                  ar.q[k][j]));
      } else {
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
          ar.lo[k][h] =
              _mm512_shuffle_i64x2(ar.q[k][2 * h], ar.q[k][2 * h + 1], 0x44);
          ar.hi[k][h] =
              _mm512_shuffle_i64x2(ar.q[k][2 * h], ar.q[k][2 * h + 1], 0xee);
        }
        /* the 32-sums b0..7 (int16: |b| <= 32 * 128; the words of bp) in
         * the mins' words 8..15 and 24..31 */
        const __m128i b8 = _mm_loadu_si128((const __m128i *)v->bp[k]);
        bw[k] = _mm512_maskz_broadcast_i32x4(0xf0f0, b8);
      }
    }
    __m512i u[NC_AMX_KGEMV_MAX_A][4], z[NC_AMX_KGEMV_MAX_A][4], heads[4];
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
      __m512i sw01 = _mm512_setzero_si512(), sw23 = sw01;
      if (t != KQ6) {
        heads[m] = k45_heads4(sb + (size_t)(4 * m) * w_stride, w_stride);
        const __m512i sm = k45_scales4(heads[m]);
        sw01 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(sm));
        sw23 = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(sm, 1));
#pragma GCC unroll 16
        for (int k = 0; k < A; k++)
          z[k][m] = mins4(sw01, sw23, bw[k]);
      }
      __m512i s0[NC_AMX_KGEMV_MAX_A], s1[NC_AMX_KGEMV_MAX_A],
          p01[NC_AMX_KGEMV_MAX_A];
      row_sums(t, sb, w_stride, 4 * m, sw01, &ar, A, s0);
      row_sums(t, sb, w_stride, 4 * m + 1, sw01, &ar, A, s1);
#pragma GCC unroll 16
      for (int k = 0; k < A; k++)
        p01[k] = sum_rows2(s0[k], s1[k]);
      row_sums(t, sb, w_stride, 4 * m + 2, sw23, &ar, A, s0);
      row_sums(t, sb, w_stride, 4 * m + 3, sw23, &ar, A, s1);
#pragma GCC unroll 16
      for (int k = 0; k < A; k++)
        u[k][m] = sum_rows4(p01[k], sum_rows2(s0[k], s1[k]));
    }
    __m512 d, dmin = _mm512_setzero_ps();
    if (t == KQ6) {
      /* d at 208 (read as the high half of the dword at 206: the block is
       * 210 bytes) */
      d = _mm512_cvtph_ps(
          _mm512_cvtepi32_epi16(_mm512_srli_epi32(GATHER(206), 16)));
    } else {
      /* d, dmin: dword 0 of each row's head */
      const __m512i first = _mm512_load_si512(k_firsts);
      const __m512i dd = _mm512_inserti64x4(
          _mm512_permutex2var_epi32(heads[0], first, heads[1]),
          _mm512_castsi512_si256(
              _mm512_permutex2var_epi32(heads[2], first, heads[3])),
          1);
      d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
      dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
    }
#pragma GCC unroll 16
    for (int k = 0; k < A; k++) {
      const __m512i s = sum_rows16(u[k]);
      acc[k] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                          _mm512_mul_ps(_mm512_set1_ps(v->d[k]), d), acc[k]);
      if (t != KQ6) {
        const __m512i m =
            _mm512_permutexvar_epi32(_mm512_load_si512(k_rows_order),
                                     sum_rows4(sum_rows2(z[k][0], z[k][1]),
                                               sum_rows2(z[k][2], z[k][3])));
        acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m),
                                 _mm512_mul_ps(_mm512_set1_ps(-v->d[k]), dmin),
                                 acc[k]);
      }
    }
  }
#undef GATHER
#pragma GCC unroll 16
  for (int k = 0; k < A; k++)
    _mm512_storeu_ps(out + (size_t)k * out_stride, acc[k]);
}

/* ---------------------------------------------------------------- gemm */

/* Activation rows a0 .. a0 + 15 (zero past na) as one activation tile per
 * superblock (see the enum). */
static void pack_act_super(const uint8_t *a, size_t a_stride, int64_t a0,
                           int64_t na, int64_t i, uint8_t *ab) {
  for (int r = 0; r < TILE; r++) {
    const bool live = a0 + r < na;
    const block_q8_K *y =
        live ? (const block_q8_K *)(const void *)(a +
                                                  (size_t)(a0 + r) * a_stride) +
                   i
             : NULL;
    for (int c = 0; c < CHUNKS; c++)
      _mm256_store_si256(
          (__m256i *)(ab + (size_t)c * TILE * 32 + 32 * r),
          live ? _mm256_loadu_si256((const __m256i *)(y->qs + 32 * c))
               : _mm256_setzero_si256());
    float *d = (float *)(void *)(ab + AB_D);
    int32_t *bp = (int32_t *)(void *)(ab + AB_BP);
    int32_t *c32 = (int32_t *)(void *)(ab + AB_C32);
    int32_t p4[4] = {0, 0, 0, 0}, g16[16] = {0};
    if (live) act_sums(y, p4, g16);
    d[r] = live ? y->d : 0.0f;
    for (int p = 0; p < 4; p++)
      bp[p * TILE + r] = p4[p];
    for (int g = 0; g < 16; g++)
      c32[g * TILE + r] = g16[g];
  }
}

/* One activation tile (all superblocks) x the panel (all superblocks):
 * out[t * out_stride + r], t < rows <= R; the integer and float steps run
 * for the first R activation rows only (R a constant, 8 or 16: a tile of
 * few rows, a speculative step's, costs its own rows' steps). */
static inline __attribute__((always_inline)) void
gemm_tile(kq_type t, int64_t nsb, const uint8_t *at, const uint8_t *panel,
          int32_t (*cbuf)[TILE * TILE], float *out, size_t out_stride, int rows,
          const int R) {
  const int G = groups_of(t);
  const int64_t steps = nsb * G;
  /* group g of superblock i: its A tile (16 rows of k bytes, stride 32)
   * and B tile (k / 4 rows of 64 bytes), k = 32 or 16 */
#define A_AT(s)                                                                \
  (at + (size_t)((s) / G) * ACT_SUPER +                                        \
   (G == 16 ? (size_t)((s) % G / 2) * TILE * 32 + 16 * ((s) % G % 2)           \
            : (size_t)((s) % G) * TILE * 32))
#define B_AT(s)                                                                \
  (panel + (size_t)((s) / G) * PANEL_SUPER +                                   \
   (size_t)((s) % G) * (512 / (G / 8)))
  __asm__ volatile("" ::: "memory");
  /* the integer sums in registers; the float accumulators in L1 */
  __m512i s_acc[TILE];
  _Alignas(64) float acc[TILE][TILE];
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) {
    s_acc[r] = _mm512_setzero_si512();
    _mm512_store_ps(acc[r], _mm512_setzero_ps());
  }
#define STEP_TILES(c, ta, tb, s)                                               \
  do {                                                                         \
    TILE_LOAD(ta, A_AT(s), 32);                                                \
    TILE_LOAD(tb, B_AT(s), 64);                                                \
    TILE_ZERO(c);                                                              \
    TILE_DPBSSD(c, ta, tb);                                                    \
  } while (0)
  /* Step s's C: scaled into s_acc; after a superblock's last group, its
   * float steps. */
#define SCALE(s)                                                               \
  do {                                                                         \
    const int64_t i_ = (s) / G;                                                \
    const int g_ = (int)((s) % G);                                             \
    const uint8_t *pb_ = panel + (size_t)i_ * PANEL_SUPER;                     \
    const uint8_t *ab_ = at + (size_t)i_ * ACT_SUPER;                          \
    const __m512i sc_ =                                                        \
        _mm512_load_si512((const __m512i *)(const void *)(pb_ + PB_SC) + g_);  \
    const int32_t *c_ = cbuf[(s) % RING];                                      \
    const int32_t *c32_ = (const int32_t *)(const void *)(ab_ + AB_C32);       \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                     \
      __m512i v_ =                                                             \
          _mm512_load_si512((const __m512i *)(const void *)(c_ + TILE * r));   \
      if (t == KQ6)                                                            \
        v_ = _mm512_sub_epi32(v_, _mm512_set1_epi32(c32_[g_ * TILE + r]));     \
      s_acc[r] = _mm512_add_epi32(s_acc[r], _mm512_mullo_epi32(v_, sc_));      \
    }                                                                          \
    if (g_ == G - 1) {                                                         \
      const float *da_ = (const float *)(const void *)(ab_ + AB_D);            \
      const int32_t *bp_ = (const int32_t *)(const void *)(ab_ + AB_BP);       \
      _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                   \
        const int32_t b4_[4] = {bp_[r], bp_[TILE + r], bp_[2 * TILE + r],      \
                                bp_[3 * TILE + r]};                            \
        const __m512i m_ =                                                     \
            t == KQ4 || t == KQ5 ? mins_dot(pb_, b4_) : s_acc[r];              \
        _mm512_store_ps(acc[r], super_steps(t, _mm512_load_ps(acc[r]),         \
                                            s_acc[r], m_, da_[r], pb_));       \
        s_acc[r] = _mm512_setzero_si512();                                     \
      }                                                                        \
    }                                                                          \
  } while (0)
  NC_TILE_PIPELINE(steps, RING, cbuf, STEP_TILES, SCALE);
#undef SCALE
#undef STEP_TILES
#undef A_AT
#undef B_AT
  for (int r = 0; r < rows; r++)
    _mm512_storeu_ps(out + (size_t)r * out_stride, _mm512_load_ps(acc[r]));
}

/* Weight rows [0, nw / 16 * 16) against na activation rows on the tile
 * unit; returns the rows done (0 without memory for the panels). */
static inline __attribute__((always_inline)) int64_t
tile_gemm(kq_type t, int64_t nsb, const uint8_t *w, size_t w_stride, int64_t nw,
          const uint8_t *a, size_t a_stride, int64_t na, float *out,
          size_t out_stride, size_t bsize) {
  const int64_t n_tiles = (na + TILE - 1) / TILE;
  const size_t panel_bytes = PANEL_SUPER * (size_t)nsb;
  const size_t tile_bytes = ACT_SUPER * (size_t)nsb;
  const size_t c_bytes = RING * sizeof(int32_t) * TILE * TILE;
  uint8_t *mem =
      aligned_alloc(64, panel_bytes + tile_bytes * (size_t)n_tiles + c_bytes);
  if (!mem) return 0;
  uint8_t *panel = mem, *tiles = mem + panel_bytes;
  int32_t(*cbuf)[TILE * TILE] = (void *)(tiles + tile_bytes * (size_t)n_tiles);
  for (int64_t j = 0; j < n_tiles; j++)
    for (int64_t i = 0; i < nsb; i++)
      pack_act_super(a, a_stride, j * TILE, na, i,
                     tiles + tile_bytes * (size_t)j + ACT_SUPER * (size_t)i);
  /* one tile of up to 8 rows: its C and A tiles 8 rows high */
  const bool few = n_tiles == 1 && na <= FEW_ROWS;
  tiles_configure_rows(groups_of(t) == 16 ? 16 : 32, few ? FEW_ROWS : TILE);
  int64_t r = 0;
  for (; r + TILE <= nw; r += TILE) {
    /* the next panels' lines ahead, as gemv_tile's */
    const uint8_t *pf =
        nc_prefetch_base(w + (size_t)r * w_stride, TILE * w_stride);
    for (int64_t i = 0; i < nsb; i++) {
      nc_prefetch_lines(pf + (size_t)i * TILE * bsize, TILE * bsize);
      pack_panel_super(t, w + (size_t)r * w_stride, w_stride, bsize, i,
                       panel + PANEL_SUPER * (size_t)i);
    }
    for (int64_t j = 0; j < n_tiles; j++) {
      const int live = tile_live_rows(na, j);
      const uint8_t *tj = tiles + tile_bytes * (size_t)j;
      float *o = out + (size_t)(j * TILE) * out_stride + (size_t)r;
      if (live <= FEW_ROWS)
        gemm_tile(t, nsb, tj, panel, cbuf, o, out_stride, live, FEW_ROWS);
      else
        gemm_tile(t, nsb, tj, panel, cbuf, o, out_stride, live, TILE);
    }
  }
  tiles_release();
  free(mem);
  return r;
}

static inline __attribute__((always_inline)) void
kgemm(kq_type t, int64_t n, const void *wv, size_t w_stride, int64_t nw,
      const void *av, size_t a_stride, int64_t na, float *out,
      size_t out_stride, size_t bsize, nc_vec_dot_rows_fn fallback) {
  const int64_t nsb = n / QK_K;
  const uint8_t *w = wv, *a = av;
  int64_t r = 0;
  if (nsb > 0 && nsb <= MAX_SUPER && nw >= TILE && na >= 1) {
    if (na <= GEMV_GROUPS * NC_AMX_KGEMV_MAX_A) {
      /* groups of up to NC_AMX_KGEMV_MAX_A activation rows, each over
       * every 16 weight rows in turn (in L1 for the next group) */
      const int ng = (int)((na + NC_AMX_KGEMV_MAX_A - 1) / NC_AMX_KGEMV_MAX_A);
      act_vals *vals = malloc(sizeof(act_vals) * (size_t)nsb * (size_t)ng);
      if (vals) {
        for (int64_t k = 0; k < na; k++)
          for (int64_t i = 0; i < nsb; i++) {
            const block_q8_K *y =
                (const block_q8_K *)(const void *)(a + (size_t)k * a_stride) +
                i;
            act_vals *v = vals +
                          (size_t)(k / NC_AMX_KGEMV_MAX_A) * (size_t)nsb +
                          (size_t)i;
            const int64_t kk = k % NC_AMX_KGEMV_MAX_A;
            v->d[kk] = y->d;
            act_sums(y, v->bp[kk], v->c32[kk]);
          }
        for (; r + TILE <= nw; r += TILE)
          for (int g = 0; g < ng; g++) {
            const int64_t rows = na - g * NC_AMX_KGEMV_MAX_A;
            const uint8_t *ag = a + (size_t)(g * NC_AMX_KGEMV_MAX_A) * a_stride;
            const act_vals *vg = vals + (size_t)g * (size_t)nsb;
            float *og = out + (size_t)(g * NC_AMX_KGEMV_MAX_A) * out_stride + r;
#define V(AA)                                                                  \
  gemv_tile(t, nsb, w + (size_t)r * w_stride, w_stride, bsize, ag, a_stride,   \
            AA, vg, og, out_stride)
            switch (rows) {
            case 1: V(1); break;
            case 2: V(2); break;
            case 3: V(3); break;
            default: V(4); break;
            }
#undef V
          }
        free(vals);
      }
    } else {
      r = tile_gemm(t, nsb, w, w_stride, nw, a, a_stride, na, out, out_stride,
                    bsize);
    }
  }
  for (; r < nw; r++)
    fallback(n, w + (size_t)r * w_stride, a, a_stride, (int)na, out + r,
             out_stride);
}

void nc_amx_gemm_q4_k(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *a, size_t a_stride, int64_t na, float *out,
                      size_t out_stride) {
  kgemm(KQ4, n, w, w_stride, nw, a, a_stride, na, out, out_stride,
        sizeof(block_q4_K), nc_ref_dot_blk_q4_k_rows);
}

void nc_amx_gemm_q5_k(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *a, size_t a_stride, int64_t na, float *out,
                      size_t out_stride) {
  kgemm(KQ5, n, w, w_stride, nw, a, a_stride, na, out, out_stride,
        sizeof(block_q5_K), nc_ref_dot_blk_q5_k_rows);
}

void nc_amx_gemm_q6_k(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *a, size_t a_stride, int64_t na, float *out,
                      size_t out_stride) {
  kgemm(KQ6, n, w, w_stride, nw, a, a_stride, na, out, out_stride,
        sizeof(block_q6_K), nc_ref_dot_blk_q6_k_rows);
}

/* IQ4_XS in the avx512 table's tiled order (ref_nl.c's iq4_xs_tiled: per
 * superblock the exact S = sum_j (ls_j - 32) x dot_j, t = (float)S * d_w,
 * acc = fma(t, d_a, acc); llama.cpp's AMX build has an order of its own
 * for IQ4_XS, fma((float)S, d_a * d_w, acc), not followed): S on the tile
 * unit as the K-quants' (codebook values as signed bytes, one tdpbssd per
 * 32 and the scale as an int32 multiply) for more than
 * NC_AMX_KGEMV_MAX_A activation rows; fewer, and the rows past the last
 * whole 16, avx512_i16_gemm.c's kernel. */
void nc_amx_gemm_iq4_xs_tiled(int64_t n, const void *w, size_t w_stride,
                              int64_t nw, const void *a, size_t a_stride,
                              int64_t na, float *out, size_t out_stride) {
  const int64_t nsb = n / QK_K;
  int64_t r = 0;
  if (nsb > 0 && nsb <= MAX_SUPER && nw >= TILE && na > NC_AMX_KGEMV_MAX_A)
    r = tile_gemm(KIQ4, nsb, w, w_stride, nw, a, a_stride, na, out, out_stride,
                  sizeof(block_iq4_xs));
  if (r < nw)
    nc_avx512_gemm_iq4_xs_tiled(n, (const uint8_t *)w + (size_t)r * w_stride,
                                w_stride, nw - r, a, a_stride, na, out + r,
                                out_stride);
}

/* The IQ2/IQ3 lattice types likewise, in their tiled order (ref_iq.c: S
 * over the 16s' scales, t = (float)S * (d_w * unit), acc = fma(t, d_a,
 * acc)), weights from avx512_iq.c's unpacking, one tdpbssd per 16. */
#define LATTICE_AMX(name, kt)                                                  \
  void nc_amx_gemm_##name##_tiled(int64_t n, const void *w, size_t w_stride,   \
                                  int64_t nw, const void *a, size_t a_stride,  \
                                  int64_t na, float *out, size_t out_stride) { \
    const int64_t nsb = n / QK_K;                                              \
    int64_t r = 0;                                                             \
    if (nsb > 0 && nsb <= MAX_SUPER && nw >= TILE && na > NC_AMX_KGEMV_MAX_A)  \
      r = tile_gemm(kt, nsb, w, w_stride, nw, a, a_stride, na, out,            \
                    out_stride, sizeof(block_##name));                         \
    if (r < nw)                                                                \
      nc_avx512_gemm_##name##_tiled(                                           \
          n, (const uint8_t *)w + (size_t)r * w_stride, w_stride, nw - r, a,   \
          a_stride, na, out + r, out_stride);                                  \
  }
LATTICE_AMX(iq2_xxs, KIQ2XXS)
LATTICE_AMX(iq2_xs, KIQ2XS)
LATTICE_AMX(iq2_s, KIQ2S)
LATTICE_AMX(iq3_xxs, KIQ3XXS)
LATTICE_AMX(iq3_s, KIQ3S)
#undef LATTICE_AMX
