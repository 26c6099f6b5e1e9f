/* avx512_kq16: the avx512 table's Q4_K, Q5_K and Q6_K prompt matmul (8 or more
 * activation rows) on 16 weight rows at a time, in llama.cpp's tiled
 * K-quant order (avx512_kquant.c "llama.cpp's tiled order",
 * tests/reference/ref_tiled.c): per (weight row, activation row) and
 * 256-superblock the exact integer sums S1 (sub-block dots times their
 * scales) and S2 (Q4_K: the mins against the activation's sub-block sums),
 * then t = (float)S1 * d_w, t = fma(-dmin_w, (float)S2, t),
 * acc = fma(t, d_a, acc). Integer sums are exact in any order, so only
 * the layout differs from avx512_kquant.c's pair gemm: the bits are the
 * same.
 *
 * Layout: a panel of 16 weight rows per superblock, unpacked once per call
 * (a stack scratch sized for L2) and reused by every activation row. The
 * quants are bytes (unsigned: Q4_K 0..15, Q6_K 0..63), one zmm per
 * (half h, 8 quants): 8 rows x 8 consecutive quants, against one
 * activation qword broadcast to every 64-bit lane. vpdpbusd then adds 4
 * products per dword lane; lanes 2p and 2p+1 hold the same weight row.
 * Two such vectors (halves A and B) are packed into words (vpackssdw;
 * every value fits: Q4_K accumulates 4 vpdpbusd, 16 products, |sum| <=
 * 16 * 15 * 128; Q6_K one, 4 * 63 * 128) and one vpdpwssd against the rows'
 * scales adds each row's pair of words into the row's S1 lane. vpackssdw
 * takes dwords 4l..4l+3 of A, then of B, per 128-bit lane l, so the result
 * lane 4l+m is row 4l+m when half A holds rows 4l, 4l+1 (pairs 2l, 2l+1)
 * and half B rows 4l+2, 4l+3 (kq16_row).
 *
 * Cost per 16 rows x 256 quants x 1 activation row: Q4_K 64 vpdpbusd, 8
 * vpdpwssd (scales), 8 (mins), 5 float steps; the pair gemm's
 * vpmaddubsw + vpdpwssd took 128 for the products alone. Q6_K: 64
 * vpdpbusd, 32 vpdpwssd, 8 for its -32 offset (32 * sc_g * bsum_g, taken
 * from S1), 3 float steps. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "kernels/ref.h"
#include "tables.h"

enum { ROWS = 16, KQ16_R = 8, SCRATCH_BYTES = 256 * 1024 };

/* The weight row of half h (0: A, 1: B), pair p (0..7) of a 16-row group:
 * see the top. */
static inline int kq16_row(int h, int p) {
  return 4 * (p / 2) + 2 * h + (p % 2);
}

/* One superblock of 16 Q4_K rows. */
typedef struct q4k16 {
  uint8_t q[8][2][4][64]; /* sub-block j, half h, step s: bytes 8p..8p+7 =
                             row kq16_row(h, p)'s quants 32j + 8s .. +7 */
  int32_t sc[8][16];      /* sub-block j's scale of row i, in both words */
  int32_t mn[8][16];      /* sub-block j's min of row i, in both words */
  float d[16], dmin[16];
} q4k16;

/* One superblock of 16 Q6_K rows: quants as q4k16's (0..63); the 16-quant
 * group g's scale (signed) in both words of sc[g]; neg32[k]: -32 times
 * the scales of groups 2k, 2k+1 (the offset against the bsums). */
typedef struct q6k16 {
  uint8_t q[8][2][4][64];
  int32_t sc[16][16];
  int32_t neg32[8][16];
  float d[16];
} q6k16;

static inline int32_t words(int a, int b) {
  return (int32_t)(((uint32_t)(uint16_t)(int16_t)b << 16) |
                   (uint16_t)(int16_t)a);
}

/* Row i's 256 quants (q, element order) into the group's quant layout. */
static inline void put_quants(uint8_t dst[8][2][4][64], int i,
                              const uint8_t *q) {
  int h = 0, p = 0;
  for (int hh = 0; hh < 2; hh++)
    for (int pp = 0; pp < 8; pp++)
      if (kq16_row(hh, pp) == i) h = hh, p = pp;
  for (int j = 0; j < 8; j++)
    for (int s = 0; s < 4; s++)
      memcpy(&dst[j][h][s][8 * p], q + 32 * j + 8 * s, 8);
}

/* Row i's scales, mins and d, dmin (Q4_K and Q5_K share them). */
static inline void k45_put_scales(q4k16 *u, int i, const uint8_t *scales,
                                  nc_fp16 d, nc_fp16 dmin) {
  uint8_t sc[8], mn[8];
  for (int j = 0; j < 8; j++)
    nc_k4_scale_min(j, scales, &sc[j], &mn[j]);
  for (int j = 0; j < 8; j++) {
    u->sc[j][i] = words(sc[j], sc[j]);
    u->mn[j][i] = words(mn[j], mn[j]);
  }
  u->d[i] = nc_fp16_to_fp32(d);
  u->dmin[i] = nc_fp16_to_fp32(dmin);
}

static void q4k16_unpack(const block_q4_K *const x[ROWS], q4k16 *u) {
  for (int i = 0; i < ROWS; i++) {
    _Alignas(32) uint8_t q[QK_K];
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int c = 0; c < 4; c++) {
      const __m256i b =
          _mm256_loadu_si256((const __m256i *)(x[i]->qs + 32 * c));
      _mm256_store_si256((__m256i *)(q + 64 * c), _mm256_and_si256(b, m4));
      _mm256_store_si256((__m256i *)(q + 64 * c + 32),
                         _mm256_and_si256(_mm256_srli_epi16(b, 4), m4));
    }
    put_quants(u->q, i, q);
    k45_put_scales(u, i, x[i]->scales, x[i]->d, x[i]->dmin);
  }
}

/* Q5_K: Q4_K's layout with quants 0..31 (the fifth bit from qh). */
static void q5k16_unpack(const block_q5_K *const x[ROWS], q4k16 *u) {
  for (int i = 0; i < ROWS; i++) {
    _Alignas(32) uint8_t q[QK_K];
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    const __m256i qh = _mm256_loadu_si256((const __m256i *)x[i]->qh);
    for (int c = 0; c < 4; c++) {
      const __m256i b =
          _mm256_loadu_si256((const __m256i *)(x[i]->qs + 32 * c));
      /* bit 2c (low nibbles) and 2c + 1 (high) of qh, as 16 */
      const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one);
      const __m256i h1 =
          _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one);
      _mm256_store_si256(
          (__m256i *)(q + 64 * c),
          _mm256_or_si256(_mm256_and_si256(b, m4), _mm256_slli_epi16(h0, 4)));
      _mm256_store_si256(
          (__m256i *)(q + 64 * c + 32),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), m4),
                          _mm256_slli_epi16(h1, 4)));
    }
    put_quants(u->q, i, q);
    k45_put_scales(u, i, x[i]->scales, x[i]->d, x[i]->dmin);
  }
}

static void q6k16_unpack(const block_q6_K *const x[ROWS], q6k16 *u) {
  for (int i = 0; i < ROWS; i++) {
    int8_t qs[QK_K];
    uint8_t q[QK_K];
    nc_ref_quants_q6_k(x[i], qs);
    for (int e = 0; e < QK_K; e++)
      q[e] = (uint8_t)(qs[e] + 32);
    put_quants(u->q, i, q);
    for (int g = 0; g < 16; g++)
      u->sc[g][i] = words(x[i]->scales[g], x[i]->scales[g]);
    for (int k = 0; k < 8; k++)
      u->neg32[k][i] =
          words(-32 * x[i]->scales[2 * k], -32 * x[i]->scales[2 * k + 1]);
    u->d[i] = nc_fp16_to_fp32(x[i]->d);
  }
}

static inline __m512i ld(const void *p) {
  return _mm512_load_si512(p);
}

static inline __m512i bcast8(const int8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return _mm512_set1_epi64(v);
}

static inline __m512i bcast4(const int16_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

/* nb superblocks of one group (u) against R activation rows; lane i of
 * out row r gets row i's result (the lanes in mask). */
static inline __attribute__((always_inline)) void
k45_tile(const q4k16 *u, int64_t nb, const uint8_t *act, size_t a_stride, int R,
         float *out, size_t out_stride, __mmask16 mask, int steps) {
  __m512 acc[KQ16_R];
  for (int r = 0; r < R; r++)
    acc[r] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; i++) {
    const q4k16 *p = u + i;
    __m512i s1[KQ16_R];
    for (int r = 0; r < R; r++)
      s1[r] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
#pragma GCC unroll 8
      for (int r = 0; r < R; r++) {
        const block_q8_K *y =
            (const block_q8_K *)(act + (size_t)r * a_stride) + i;
#pragma GCC unroll 2
        for (int s0 = 0; s0 < 4; s0 += steps) {
          __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
#pragma GCC unroll 4
          for (int s = s0; s < s0 + steps; s++) {
            const __m512i x = bcast8(y->qs + 32 * j + 8 * s);
            a = _mm512_dpbusd_epi32(a, ld(p->q[j][0][s]), x);
            b = _mm512_dpbusd_epi32(b, ld(p->q[j][1][s]), x);
          }
          s1[r] = _mm512_dpwssd_epi32(s1[r], _mm512_packs_epi32(a, b),
                                      ld(p->sc[j]));
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      /* S2: sub-block j's activation sum is bsums 2j and 2j + 1 */
      __m512i s2 = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int j = 0; j < 8; j++)
        s2 = _mm512_dpwssd_epi32(s2, bcast4(y->bsums + 2 * j), ld(p->mn[j]));
      __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(s1[r]), _mm512_load_ps(p->d));
      t = _mm512_fnmadd_ps(_mm512_load_ps(p->dmin), _mm512_cvtepi32_ps(s2), t);
      acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(y->d), acc[r]);
    }
  }
  for (int r = 0; r < R; r++)
    _mm512_mask_storeu_ps(out + (size_t)r * out_stride, mask, acc[r]);
}

/* Q4_K adds 4 vpdpbusd (16 products of 0..15) before packing, Q5_K 2
 * (8 products of 0..31): |sum| <= 8 * 31 * 128 fits a word. */
static inline __attribute__((always_inline)) void
q4k16_tile(const q4k16 *u, int64_t nb, const uint8_t *act, size_t a_stride,
           int R, float *out, size_t out_stride, __mmask16 mask) {
  k45_tile(u, nb, act, a_stride, R, out, out_stride, mask, 4);
}

static inline __attribute__((always_inline)) void
q5k16_tile(const q4k16 *u, int64_t nb, const uint8_t *act, size_t a_stride,
           int R, float *out, size_t out_stride, __mmask16 mask) {
  k45_tile(u, nb, act, a_stride, R, out, out_stride, mask, 2);
}

static inline __attribute__((always_inline)) void
q6k16_tile(const q6k16 *u, int64_t nb, const uint8_t *act, size_t a_stride,
           int R, float *out, size_t out_stride, __mmask16 mask) {
  __m512 acc[KQ16_R];
  for (int r = 0; r < R; r++)
    acc[r] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; i++) {
    const q6k16 *p = u + i;
    __m512i s1[KQ16_R];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      /* the -32 offset: -32 sc_g bsum_g, groups 2k and 2k + 1 at once */
      s1[r] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int k = 0; k < 8; k++)
        s1[r] = _mm512_dpwssd_epi32(s1[r], bcast4(y->bsums + 2 * k),
                                    ld(p->neg32[k]));
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
#pragma GCC unroll 8
      for (int r = 0; r < R; r++) {
        const block_q8_K *y =
            (const block_q8_K *)(act + (size_t)r * a_stride) + i;
#pragma GCC unroll 4
        for (int s = 0; s < 4; s++) {
          const __m512i x = bcast8(y->qs + 32 * j + 8 * s);
          const __m512i a =
              _mm512_dpbusd_epi32(_mm512_setzero_si512(), ld(p->q[j][0][s]), x);
          const __m512i b =
              _mm512_dpbusd_epi32(_mm512_setzero_si512(), ld(p->q[j][1][s]), x);
          s1[r] = _mm512_dpwssd_epi32(s1[r], _mm512_packs_epi32(a, b),
                                      ld(p->sc[2 * j + s / 2]));
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const block_q8_K *y =
          (const block_q8_K *)(act + (size_t)r * a_stride) + i;
      const __m512 t =
          _mm512_mul_ps(_mm512_cvtepi32_ps(s1[r]), _mm512_load_ps(p->d));
      acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(y->d), acc[r]);
    }
  }
  for (int r = 0; r < R; r++)
    _mm512_mask_storeu_ps(out + (size_t)r * out_stride, mask, acc[r]);
}

/* The gemm: panels of whole 16-row groups (the last group's missing rows
 * repeat its last row and are not stored), every activation row against a
 * panel before the next is unpacked, KQ16_R rows at a time (then 4, 2,
 * 1). False, writing nothing, when one group's row does not fit the
 * scratch (n above CAP superblocks): the caller takes another gemm. */
#define KQ16_GEMM(name, blk, GROUP, unpack, tile)                              \
  static void tile##_any(const GROUP *u, int64_t nb, const uint8_t *act,       \
                         size_t a_stride, int R, float *out,                   \
                         size_t out_stride, __mmask16 mask) {                  \
    switch (R) {                                                               \
    case KQ16_R:                                                               \
      tile(u, nb, act, a_stride, KQ16_R, out, out_stride, mask);               \
      return;                                                                  \
    case 4: tile(u, nb, act, a_stride, 4, out, out_stride, mask); return;      \
    case 2: tile(u, nb, act, a_stride, 2, out, out_stride, mask); return;      \
    default: tile(u, nb, act, a_stride, 1, out, out_stride, mask); return;     \
    }                                                                          \
  }                                                                            \
  bool nc_avx512_kq16_gemm_##name(                                             \
      int64_t n, const void *w, size_t w_stride, int64_t nw, const void *act,  \
      size_t a_stride, int64_t na, float *out, size_t out_stride) {            \
    enum { CAP = SCRATCH_BYTES / sizeof(GROUP) };                              \
    const int64_t nb = n / QK_K;                                               \
    if (nb < 1 || nb > CAP || nw < 1) return false;                            \
    const uint8_t *wb = w, *ab = act;                                          \
    _Alignas(64) GROUP scratch[CAP];                                           \
    const int64_t per_pass = CAP / nb, ng = (nw + ROWS - 1) / ROWS;            \
    for (int64_t g0 = 0; g0 < ng; g0 += per_pass) {                            \
      const int64_t gn = ng - g0 < per_pass ? ng - g0 : per_pass;              \
      for (int64_t g = 0; g < gn; g++) {                                       \
        const blk *x[ROWS];                                                    \
        for (int k = 0; k < ROWS; k++) {                                       \
          int64_t row = (g0 + g) * ROWS + k;                                   \
          if (row >= nw) row = nw - 1;                                         \
          x[k] = (const blk *)(wb + (size_t)row * w_stride);                   \
        }                                                                      \
        for (int64_t i = 0; i < nb; i++) {                                     \
          unpack(x, &scratch[g * nb + i]);                                     \
          for (int k = 0; k < ROWS; k++)                                       \
            x[k]++;                                                            \
        }                                                                      \
      }                                                                        \
      for (int64_t a0 = 0; a0 < na;) {                                         \
        const int64_t left = na - a0;                                          \
        const int R = left >= KQ16_R ? KQ16_R                                  \
                      : left >= 4    ? 4                                       \
                      : left >= 2    ? 2                                       \
                                     : 1;                                         \
        for (int64_t g = 0; g < gn; g++) {                                     \
          const int64_t row0 = (g0 + g) * ROWS;                                \
          const int64_t valid = nw - row0 < ROWS ? nw - row0 : ROWS;           \
          tile##_any(&scratch[g * nb], nb, ab + (size_t)a0 * a_stride,         \
                     a_stride, R, out + (size_t)a0 * out_stride + row0,        \
                     out_stride, (__mmask16)((1u << valid) - 1));              \
        }                                                                      \
        a0 += R;                                                               \
      }                                                                        \
    }                                                                          \
    return true;                                                               \
  }
KQ16_GEMM(q4_k, block_q4_K, q4k16, q4k16_unpack, q4k16_tile)
KQ16_GEMM(q5_k, block_q5_K, q4k16, q5k16_unpack, q5k16_tile)
KQ16_GEMM(q6_k, block_q6_K, q6k16, q6k16_unpack, q6k16_tile)
#undef KQ16_GEMM
