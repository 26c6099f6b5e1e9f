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
 * - 1 to NC_AMX_GEMV_MAX_A activation rows (decode): AVX-512 VNNI. The 16
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
 * Rows past the last whole 16 use the plain-C reference. */
#include <stdlib.h>

#include "amx_tiles.h"
#include "avx2_util.h"
#include "ref.h"
#include "tables.h"

enum {
  RING = 4,
  MAX_SUPER = 256, /* n <= 65536: longer rows use the reference */
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

typedef enum { KQ4, KQ5, KQ6 } kq_type;

static inline int groups_of(kq_type t) {
  return t == KQ6 ? 16 : 8;
}

/* ------------------------------------------------------------- panels */

/* Chunk c (quants 32c .. 32c + 31, element order) of one superblock row,
 * as unsigned bytes. */
static inline __m256i chunk_quants(kq_type t, const uint8_t *sb, int c) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
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
  float d[NC_AMX_GEMV_MAX_A];
  int32_t bp[NC_AMX_GEMV_MAX_A][4];
  int32_t c32[NC_AMX_GEMV_MAX_A][16];
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

/* One group's B row kk (4 quants of each of the 16 rows, unsigned) against
 * A activation rows: dot[k] += 4 products per lane. */
#define GROUP_ROW(dot, brow, g_dword)                                          \
  do {                                                                         \
    for (int k_ = 0; k_ < A; k_++)                                             \
      dot[k_] = _mm512_dpbusd_epi32(dot[k_], brow,                             \
                                    _mm512_set1_epi32(aq[k_][g_dword]));       \
  } while (0)

/* in[r] = 16 dwords of row r -> out[k] = dword k of rows 0..15. Two
 * unpack rounds make, per 128-bit lane l, u[4m + k] = dword 4l + k of rows
 * 4m .. 4m + 3; two rounds of 128-bit lane shuffles then gather lane l of
 * u[k], u[4 + k], u[8 + k], u[12 + k] into out[4l + k]. */
static inline void transpose_16x16(const __m512i in[16], __m512i out[16]) {
  __m512i t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int m = 0; m < 4; m++) {
    u[4 * m] = _mm512_unpacklo_epi64(t[4 * m], t[4 * m + 2]);
    u[4 * m + 1] = _mm512_unpackhi_epi64(t[4 * m], t[4 * m + 2]);
    u[4 * m + 2] = _mm512_unpacklo_epi64(t[4 * m + 1], t[4 * m + 3]);
    u[4 * m + 3] = _mm512_unpackhi_epi64(t[4 * m + 1], t[4 * m + 3]);
  }
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++) {
    const __m512i x0 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x44);
    const __m512i x1 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xee);
    const __m512i x2 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x44);
    const __m512i x3 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xee);
    out[k] = _mm512_shuffle_i32x4(x0, x2, 0x88);
    out[4 + k] = _mm512_shuffle_i32x4(x0, x2, 0xdd);
    out[8 + k] = _mm512_shuffle_i32x4(x1, x3, 0x88);
    out[12 + k] = _mm512_shuffle_i32x4(x1, x3, 0xdd);
  }
}

/* The 64 bytes at off of the 16 rows' superblock, transposed: out[k] =
 * dword k of each row (what 16 gathers would give, from 16 row loads). */
static inline void rows_dwords(const uint8_t *sb, size_t w_stride, size_t off,
                               __m512i out[16]) {
  __m512i in[16];
#pragma GCC unroll 16
  for (int r = 0; r < TILE; r++)
    in[r] = _mm512_loadu_si512((const void *)(sb + (size_t)r * w_stride + off));
  transpose_16x16(in, out);
}

/* 16 weight rows straight from their blocks (the quants loaded a row at a
 * time and transposed, the scales and d gathered; rows in the lanes) x A
 * activation rows. */
static inline __attribute__((always_inline)) void
gemv_tile(kq_type t, int64_t nsb, const uint8_t *w, size_t w_stride,
          size_t bsize, const uint8_t *a, size_t a_stride, const int A,
          const act_vals *av, float *out, size_t out_stride) {
  const __m512i rows = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)w_stride));
  const __m512i nib = _mm512_set1_epi32(0x0f0f0f0f);
  __m512 acc[NC_AMX_GEMV_MAX_A];
#pragma GCC unroll 16
  for (int k = 0; k < A; k++)
    acc[k] = _mm512_setzero_ps();
  const uint8_t *pf = nc_prefetch_base(w, TILE * w_stride);
  const size_t pf_step = TILE * bsize;
#define GATHER(off) _mm512_i32gather_epi32(rows, sb + (off), 1)
  for (int64_t i = 0; i < nsb; i++) {
    const uint8_t *sb = w + (size_t)i * bsize;
    nc_prefetch_lines(pf + (size_t)i * pf_step, pf_step);
    const int32_t *aq[NC_AMX_GEMV_MAX_A];
#pragma GCC unroll 16
    for (int k = 0; k < A; k++)
      aq[k] =
          (const int32_t *)(const void *)((const block_q8_K
                                               *)(const void *)(a +
                                                                (size_t)k *
                                                                    a_stride) +
                                          i)
              ->qs;
    const act_vals *v = av + i;
    __m512i s[NC_AMX_GEMV_MAX_A];
#pragma GCC unroll 16
    for (int k = 0; k < A; k++)
      s[k] = _mm512_setzero_si512();
    __m512 d, dmin = _mm512_setzero_ps();
    __m512i mp[4];
    if (t == KQ6) {
      /* ql at 0, qh at 128, scales at 192, d at 208 (read as the high half
       * of the dword at 206: the block is 210 bytes) */
      d = _mm512_cvtph_ps(
          _mm512_cvtepi32_epi16(_mm512_srli_epi32(GATHER(206), 16)));
      __m512i sc[16], sc16[16];
#pragma GCC unroll 16
      for (int q = 0; q < 4; q++) {
        const __m512i x = GATHER(192 + 4 * q);
#pragma GCC unroll 16
        for (int b = 0; b < 4; b++) {
          sc[4 * q + b] =
              _mm512_srai_epi32(_mm512_slli_epi32(x, 24 - 8 * b), 24);
          sc16[4 * q + b] =
              _mm512_and_si512(sc[4 * q + b], _mm512_set1_epi32(0xffff));
        }
      }
      __m512i qhs[16];
      rows_dwords(sb, w_stride, 128, qhs); /* qh: dword 8h + kk */
#pragma GCC unroll 16
      for (int h = 0; h < 2; h++) {
        __m512i qls[16]; /* ql: dword 8 (j & 1) + kk */
        rows_dwords(sb, w_stride, 64 * (size_t)h, qls);
#pragma GCC unroll 16
        for (int kk = 0; kk < 8; kk++) {
          const __m512i qh = qhs[8 * h + kk];
          const __m512i ql0 = qls[kk];     /* j = 0, 2 */
          const __m512i ql1 = qls[8 + kk]; /* j = 1, 3 */
#pragma GCC unroll 16
          for (int j = 0; j < 4; j++) {
            const __m512i ql = j & 1 ? ql1 : ql0;
            const __m512i lo =
                _mm512_and_si512(j >> 1 ? _mm512_srli_epi32(ql, 4) : ql, nib);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi32(qh, 2 * j),
                                                _mm512_set1_epi32(0x03030303));
            const __m512i brow = _mm512_or_si512(lo, _mm512_slli_epi32(hi, 4));
            /* chunk c = 4h + j, dword kk: group 2c + kk / 4, its row kk % 4 */
            const int g = 2 * (4 * h + j) + kk / 4;
            __m512i dot[NC_AMX_GEMV_MAX_A];
#pragma GCC unroll 16
            for (int k = 0; k < A; k++)
              dot[k] = _mm512_setzero_si512();
            GROUP_ROW(dot, brow, 4 * g + kk % 4);
#pragma GCC unroll 16
            for (int k = 0; k < A; k++)
              s[k] = _mm512_add_epi32(s[k], _mm512_madd_epi16(dot[k], sc16[g]));
          }
        }
      }
/* the - 32 of every quant: - 32 * 16-sum * sc per group */
#pragma GCC unroll 16
      for (int k = 0; k < A; k++)
#pragma GCC unroll 16
        for (int g = 0; g < 16; g++)
          s[k] = _mm512_sub_epi32(
              s[k], _mm512_mullo_epi32(_mm512_set1_epi32(v->c32[k][g]), sc[g]));
    } else {
      const __m512i dd = GATHER(0);
      d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
      dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
      __m512i sc[8];
      k4_scales16(GATHER(4), GATHER(8), GATHER(12), sc, mp);
      const size_t qs_off = t == KQ4 ? 16 : 48;
      __m512i qhs[16]; /* Q5_K: dword kk of qh (16 more bytes of qs after) */
      if (t == KQ5) rows_dwords(sb, w_stride, 16, qhs);
      __m512i qss[16];
#pragma GCC unroll 16
      for (int c = 0; c < 4; c++) {
        if (c % 2 == 0) rows_dwords(sb, w_stride, qs_off + 32 * (size_t)c, qss);
        __m512i dlo[NC_AMX_GEMV_MAX_A], dhi[NC_AMX_GEMV_MAX_A];
#pragma GCC unroll 16
        for (int k = 0; k < A; k++)
          dlo[k] = dhi[k] = _mm512_setzero_si512();
#pragma GCC unroll 16
        for (int kk = 0; kk < 8; kk++) {
          const __m512i x = qss[8 * (c % 2) + kk];
          __m512i lo = _mm512_and_si512(x, nib);
          __m512i hi = _mm512_and_si512(_mm512_srli_epi32(x, 4), nib);
          if (t == KQ5) {
            const __m512i h = qhs[kk];
            const __m512i one = _mm512_set1_epi32(0x01010101);
            lo = _mm512_or_si512(
                lo, _mm512_slli_epi32(
                        _mm512_and_si512(_mm512_srli_epi32(h, 2 * c), one), 4));
            hi = _mm512_or_si512(
                hi,
                _mm512_slli_epi32(
                    _mm512_and_si512(_mm512_srli_epi32(h, 2 * c + 1), one), 4));
          }
          GROUP_ROW(dlo, lo, 8 * (2 * c) + kk);
          GROUP_ROW(dhi, hi, 8 * (2 * c + 1) + kk);
        }
#pragma GCC unroll 16
        for (int k = 0; k < A; k++)
          s[k] = _mm512_add_epi32(
              s[k],
              _mm512_add_epi32(_mm512_mullo_epi32(dlo[k], sc[2 * c]),
                               _mm512_mullo_epi32(dhi[k], sc[2 * c + 1])));
      }
    }
#pragma GCC unroll 16
    for (int k = 0; k < A; k++) {
      acc[k] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[k]),
                          _mm512_mul_ps(_mm512_set1_ps(v->d[k]), d), acc[k]);
      if (t != KQ6) {
        __m512i m = _mm512_setzero_si512();
#pragma GCC unroll 16
        for (int p = 0; p < 4; p++)
          m = _mm512_dpwssd_epi32(m, _mm512_set1_epi32(v->bp[k][p]), mp[p]);
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
#undef GROUP_ROW

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
 * out[t * out_stride + r], t < rows. */
static inline __attribute__((always_inline)) void
gemm_tile(kq_type t, int64_t nsb, const uint8_t *at, const uint8_t *panel,
          int32_t (*cbuf)[TILE * TILE], float *out, size_t out_stride,
          int rows) {
  const int G = groups_of(t);
  const int64_t steps = nsb * G;
  /* group g of superblock i: its A tile (16 rows of k bytes, stride 32)
   * and B tile (k / 4 rows of 64 bytes), k = 32 or 16 */
#define A_AT(s)                                                                \
  (at + (size_t)((s) / G) * ACT_SUPER +                                        \
   (t == KQ6 ? (size_t)((s) % G / 2) * TILE * 32 + 16 * ((s) % G % 2)          \
             : (size_t)((s) % G) * TILE * 32))
#define B_AT(s)                                                                \
  (panel + (size_t)((s) / G) * PANEL_SUPER +                                   \
   (size_t)((s) % G) * (512 / (G / 8)))
  __asm__ volatile("" ::: "memory");
  /* the integer sums in registers; the float accumulators in L1 */
  __m512i s_acc[TILE];
  _Alignas(64) float acc[TILE][TILE];
#pragma GCC unroll 16
  for (int r = 0; r < TILE; r++) {
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
    _Pragma("GCC unroll 16") for (int r = 0; r < TILE; r++) {                  \
      __m512i v_ =                                                             \
          _mm512_load_si512((const __m512i *)(const void *)(c_ + TILE * r));   \
      if (t == KQ6)                                                            \
        v_ = _mm512_sub_epi32(v_, _mm512_set1_epi32(c32_[g_ * TILE + r]));     \
      s_acc[r] = _mm512_add_epi32(s_acc[r], _mm512_mullo_epi32(v_, sc_));      \
    }                                                                          \
    if (g_ == G - 1) {                                                         \
      const float *da_ = (const float *)(const void *)(ab_ + AB_D);            \
      const int32_t *bp_ = (const int32_t *)(const void *)(ab_ + AB_BP);       \
      _Pragma("GCC unroll 16") for (int r = 0; r < TILE; r++) {                \
        const int32_t b4_[4] = {bp_[r], bp_[TILE + r], bp_[2 * TILE + r],      \
                                bp_[3 * TILE + r]};                            \
        const __m512i m_ = t == KQ6 ? s_acc[r] : mins_dot(pb_, b4_);           \
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

static inline __attribute__((always_inline)) void
kgemm(kq_type t, int64_t n, const void *wv, size_t w_stride, int64_t nw,
      const void *av, size_t a_stride, int64_t na, float *out,
      size_t out_stride, size_t bsize, nc_vec_dot_rows_fn fallback) {
  const int64_t nsb = n / QK_K;
  const uint8_t *w = wv, *a = av;
  int64_t r = 0;
  if (nsb > 0 && nsb <= MAX_SUPER && nw >= TILE && na >= 1) {
    if (na <= NC_AMX_GEMV_MAX_A) {
      act_vals *vals = malloc(sizeof(act_vals) * (size_t)nsb);
      if (vals) {
        for (int64_t i = 0; i < nsb; i++)
          for (int k = 0; k < na; k++) {
            const block_q8_K *y =
                (const block_q8_K *)(const void *)(a + (size_t)k * a_stride) +
                i;
            vals[i].d[k] = y->d;
            act_sums(y, vals[i].bp[k], vals[i].c32[k]);
          }
        for (; r + TILE <= nw; r += TILE) {
#define V(AA)                                                                  \
  gemv_tile(t, nsb, w + (size_t)r * w_stride, w_stride, bsize, a, a_stride,    \
            AA, vals, out + r, out_stride)
          switch (na) {
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
      const int64_t n_tiles = (na + TILE - 1) / TILE;
      const size_t panel_bytes = PANEL_SUPER * (size_t)nsb;
      const size_t tile_bytes = ACT_SUPER * (size_t)nsb;
      const size_t c_bytes = RING * sizeof(int32_t) * TILE * TILE;
      uint8_t *mem = aligned_alloc(
          64, panel_bytes + tile_bytes * (size_t)n_tiles + c_bytes);
      if (mem) {
        uint8_t *panel = mem, *tiles = mem + panel_bytes;
        int32_t(*cbuf)[TILE * TILE] =
            (void *)(tiles + tile_bytes * (size_t)n_tiles);
        for (int64_t j = 0; j < n_tiles; j++)
          for (int64_t i = 0; i < nsb; i++)
            pack_act_super(a, a_stride, j * TILE, na, i,
                           tiles + tile_bytes * (size_t)j +
                               ACT_SUPER * (size_t)i);
        tiles_configure(t == KQ6 ? 16 : 32);
        for (; r + TILE <= nw; r += TILE) {
          for (int64_t i = 0; i < nsb; i++)
            pack_panel_super(t, w + (size_t)r * w_stride, w_stride, bsize, i,
                             panel + PANEL_SUPER * (size_t)i);
          for (int64_t j = 0; j < n_tiles; j++)
            gemm_tile(t, nsb, tiles + tile_bytes * (size_t)j, panel, cbuf,
                      out + (size_t)(j * TILE) * out_stride + (size_t)r,
                      out_stride, tile_live_rows(na, j));
        }
        tiles_release();
        free(mem);
      }
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
