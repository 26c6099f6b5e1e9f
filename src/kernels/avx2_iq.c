/* avx2_iq: AVX2 dots of the lattice types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
 * IQ3_S, IQ1_S and IQ1_M, bit-identical to ref_iq.c in both of its orders
 * (vec_dot: the avx2 table; tiled: the avx512 and amx tables, with gemm_few
 * in vec_dot's).
 *
 * A superblock is first unpacked into 256 grid bytes (each group's lattice
 * point copied whole: 8 bytes for IQ2/IQ1, two 4-byte points for IQ3), one
 * 32-bit sign word per 32 weights (bit e: weight e is negative) and the 16
 * integer scales; then per 32 weights the signs go onto the grid bytes
 * (sign_epi8), maddubs multiplies |w| by the activation carrying w's sign
 * (llama.cpp's mul_add_epi8), and madd by the 16s' scales leaves int32 lane
 * k = the 4-element sums of ref_iq.c's lanes, exactly. IQ1's grid bytes
 * are already signed (-1, 0, 1) and its sign words 0.
 *
 * The matmuls (gemm, gemm_few) unpack each weight superblock once for all
 * the activation rows, which is most of the work of a single dot. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx2_util.h"
#include "dot_loops.h"
#include "iq_unpack.h"
#include "tables.h"

typedef struct iq_unpacked {
  __m256i w[8], aw[8];  /* per 32: the signed weights, their magnitudes */
  __m256i sc[8];        /* per 32: madd multipliers (its two 16s' scales) */
  int8_t mag[QK_K];     /* grid bytes, unsigned but for IQ1 */
  uint32_t signs[8];    /* per 32 weights */
  int16_t scale[16];    /* per 16 weights: 2s + 1 */
  uint64_t dsign[8][4]; /* IQ1: per group of 8, 8 bytes of +1 or -1 */
  int8_t dsign1[8];     /* IQ1_S: the offset sign per 32 */
} iq_unpacked;

static uint32_t ksigns4(uint32_t aux) {
  return (uint32_t)nc_ksigns_iq2xs[aux & 127] |
         (uint32_t)nc_ksigns_iq2xs[(aux >> 7) & 127] << 8 |
         (uint32_t)nc_ksigns_iq2xs[(aux >> 14) & 127] << 16 |
         (uint32_t)nc_ksigns_iq2xs[(aux >> 21) & 127] << 24;
}

static void put8(int8_t *dst, uint64_t point) {
  memcpy(dst, &point, 8);
}

static void put4x2(int8_t *dst, uint32_t p1, uint32_t p2) {
  memcpy(dst, &p1, 4);
  memcpy(dst + 4, &p2, 4);
}

static const uint64_t k_plus8 = 0x0101010101010101ull;

static void unpack_raw(nc_type t, const void *row, int64_t i, iq_unpacked *u) {
  switch (t) {
  case NC_TYPE_IQ2_XXS: {
    const block_iq2_xxs *x = (const block_iq2_xxs *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t *p = (const uint8_t *)(x->qs + 4 * ib);
      const uint32_t aux = nc_iq_u32(p + 4);
      u->signs[ib] = ksigns4(aux);
      u->scale[2 * ib] = u->scale[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
      for (int l = 0; l < 4; l++)
        put8(u->mag + 32 * ib + 8 * l, nc_iq2xxs_grid[p[l]]);
    }
    return;
  }
  case NC_TYPE_IQ2_XS: {
    const block_iq2_xs *x = (const block_iq2_xs *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      uint32_t sw = 0;
      for (int l = 0; l < 4; l++) {
        const uint16_t c = x->qs[4 * ib + l];
        put8(u->mag + 32 * ib + 8 * l, nc_iq2xs_grid[c & 511]);
        sw |= (uint32_t)nc_ksigns_iq2xs[c >> 9] << 8 * l;
      }
      u->signs[ib] = sw;
      u->scale[2 * ib] = (int16_t)(2 * (x->scales[ib] & 15) + 1);
      u->scale[2 * ib + 1] = (int16_t)(2 * (x->scales[ib] >> 4) + 1);
    }
    return;
  }
  case NC_TYPE_IQ2_S: {
    const block_iq2_s *x = (const block_iq2_s *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const int qh = x->qh[ib];
      for (int l = 0; l < 4; l++)
        put8(u->mag + 32 * ib + 8 * l,
             nc_iq2s_grid[x->qs[4 * ib + l] | ((qh << (8 - 2 * l)) & 0x300)]);
      u->signs[ib] = nc_iq_u32(x->qs + QK_K / 8 + 4 * ib);
      u->scale[2 * ib] = (int16_t)(2 * (x->scales[ib] & 15) + 1);
      u->scale[2 * ib + 1] = (int16_t)(2 * (x->scales[ib] >> 4) + 1);
    }
    return;
  }
  case NC_TYPE_IQ3_XXS: {
    const block_iq3_xxs *x = (const block_iq3_xxs *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t *qs = x->qs + 8 * ib;
      const uint32_t aux = nc_iq_u32(x->qs + QK_K / 4 + 4 * ib);
      u->signs[ib] = ksigns4(aux);
      u->scale[2 * ib] = u->scale[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
      for (int l = 0; l < 4; l++)
        put4x2(u->mag + 32 * ib + 8 * l, nc_iq3xxs_grid[qs[2 * l]],
               nc_iq3xxs_grid[qs[2 * l + 1]]);
    }
    return;
  }
  case NC_TYPE_IQ3_S: {
    const block_iq3_s *x = (const block_iq3_s *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const uint8_t *qs = x->qs + 8 * ib;
      const int qh = x->qh[ib];
      const int s = ib % 2 ? x->scales[ib / 2] >> 4 : x->scales[ib / 2] & 15;
      u->scale[2 * ib] = u->scale[2 * ib + 1] = (int16_t)(1 + 2 * s);
      u->signs[ib] = nc_iq_u32(x->signs + 4 * ib);
      for (int l = 0; l < 4; l++)
        put4x2(u->mag + 32 * ib + 8 * l,
               nc_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)],
               nc_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)]);
    }
    return;
  }
  case NC_TYPE_IQ1_S: {
    const block_iq1_s *x = (const block_iq1_s *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const int qh = x->qh[ib];
      u->signs[ib] = 0;
      u->scale[2 * ib] = u->scale[2 * ib + 1] =
          (int16_t)(2 * ((qh >> 12) & 7) + 1);
      u->dsign1[ib] = (int8_t)(qh & 0x8000 ? -1 : 1);
      for (int l = 0; l < 4; l++)
        put8(u->mag + 32 * ib + 8 * l,
             nc_iq1s_grid[x->qs[4 * ib + l] | (((qh >> 3 * l) & 7) << 8)]);
    }
    return;
  }
  default: { /* IQ1_M */
    const block_iq1_m *x = (const block_iq1_m *)row + i;
    for (int ib = 0; ib < 8; ib++) {
      const int sc =
          x->scales[2 * (ib / 2)] | (x->scales[2 * (ib / 2) + 1] << 8);
      const int sh = 6 * (ib % 2);
      u->signs[ib] = 0;
      u->scale[2 * ib] = (int16_t)(2 * ((sc >> sh) & 7) + 1);
      u->scale[2 * ib + 1] = (int16_t)(2 * ((sc >> (sh + 3)) & 7) + 1);
      for (int l = 0; l < 4; l++) {
        const int nib = x->qh[2 * ib + l / 2] >> (4 * (l % 2));
        u->dsign[ib][l] = nib & 8 ? ~0ull : k_plus8;
        put8(u->mag + 32 * ib + 8 * l,
             nc_iq1s_grid[x->qs[4 * ib + l] | ((nib & 7) << 8)]);
      }
    }
    return;
  }
  }
}

static float tiled_unit(nc_type t);

/* A sign word as 32 bytes of -1 (bit set) or +1. */
static __m256i expand_signs(uint32_t sw) {
  const __m256i pick = _mm256_set_epi64x(
      0x0303030303030303ll, 0x0202020202020202ll, 0x0101010101010101ll, 0);
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
  const __m256i b = _mm256_and_si256(
      _mm256_shuffle_epi8(_mm256_set1_epi32((int)sw), pick), bit);
  return _mm256_or_si256(_mm256_cmpeq_epi8(b, bit), _mm256_set1_epi8(1));
}

static __m256i pair_scale(const iq_unpacked *u, int j) {
  return _mm256_set_m128i(_mm_set1_epi16(u->scale[2 * j + 1]),
                          _mm_set1_epi16(u->scale[2 * j]));
}

/* A superblock unpacked, its signs put on and its multipliers made once,
 * for every activation row it meets. */
static void unpack(nc_type t, const void *row, int64_t i, iq_unpacked *u) {
  unpack_raw(t, row, i, u);
  for (int j = 0; j < 8; j++) {
    u->w[j] =
        _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(u->mag + 32 * j)),
                         expand_signs(u->signs[j]));
    u->aw[j] = _mm256_sign_epi8(u->w[j], u->w[j]);
    u->sc[j] = pair_scale(u, j);
  }
}

/* IQ1's 32 weights j with their offsets: 8q + the offset sign (|.| <= 9),
 * ref_iq.c's tiled weight. */
static __m256i iq1_offset_weights(nc_type t, const iq_unpacked *u, int j) {
  const __m256i sign = t == NC_TYPE_IQ1_S
                           ? _mm256_set1_epi8(u->dsign1[j])
                           : _mm256_set_epi64x((long long)u->dsign[j][3],
                                               (long long)u->dsign[j][2],
                                               (long long)u->dsign[j][1],
                                               (long long)u->dsign[j][0]);
  const __m256i q2 = _mm256_add_epi8(u->w[j], u->w[j]);
  const __m256i q4 = _mm256_add_epi8(q2, q2);
  return _mm256_add_epi8(_mm256_add_epi8(q4, q4), sign);
}

float nc_avx2_iq_unpack_i16(nc_type t, const void *row, int64_t i,
                            int16_t *dst) {
  iq_unpacked u;
  unpack(t, row, i, &u);
  for (int j = 0; j < 8; j++) {
    const __m256i w = nc_iq_is_iq1(t) ? iq1_offset_weights(t, &u, j) : u.w[j];
    _mm256_storeu_si256(
        (__m256i *)(dst + 32 * j),
        _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(w)),
                           _mm256_set1_epi16(u.scale[2 * j])));
    _mm256_storeu_si256(
        (__m256i *)(dst + 32 * j + 16),
        _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(w, 1)),
                           _mm256_set1_epi16(u.scale[2 * j + 1])));
  }
  return _cvtsh_ss(nc_iq_half(t, row, i)) * tiled_unit(t);
}

/* The integer lanes of an unpacked superblock against 256 activations:
 * |w| times the activation carrying w's sign (maddubs), by the scales. */
static __m256i lanes(const iq_unpacked *u, const int8_t *a) {
  __m256i acc = _mm256_setzero_si256();
  for (int j = 0; j < 8; j++) {
    const __m256i x = _mm256_loadu_si256((const __m256i *)(a + 32 * j));
    const __m256i d =
        _mm256_maddubs_epi16(u->aw[j], _mm256_sign_epi8(x, u->w[j]));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(d, u->sc[j]));
  }
  return acc;
}

/* IQ1_M's offset lanes: the activation signed per group of 8. */
static __m256i delta_lanes(const iq_unpacked *u, const int8_t *a) {
  __m256i acc = _mm256_setzero_si256();
  for (int j = 0; j < 8; j++) {
    const __m256i s =
        _mm256_set_epi64x((long long)u->dsign[j][3], (long long)u->dsign[j][2],
                          (long long)u->dsign[j][1], (long long)u->dsign[j][0]);
    const __m256i x = _mm256_loadu_si256((const __m256i *)(a + 32 * j));
    const __m256i d =
        _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_sign_epi8(x, s));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(d, u->sc[j]));
  }
  return acc;
}

/* IQ1_S's offset sum from the activation's 16-sums. */
static int32_t iq1s_delta(const iq_unpacked *u, const block_q8_K *y) {
  int32_t s = 0;
  for (int j = 0; j < 8; j++)
    s += (y->bsums[2 * j] + y->bsums[2 * j + 1]) * u->dsign1[j] *
         u->scale[2 * j];
  return s;
}

static int32_t hsum_i32(__m256i v) {
  __m128i s =
      _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

/* The running sums of one (weight row, activation row) pair in the vec_dot
 * order. */
typedef struct vec_acc {
  __m256 acc, acc2;
  float a1;
} vec_acc;

static void vec_step(nc_type t, const iq_unpacked *u, float dw,
                     const block_q8_K *y, vec_acc *s) {
  const __m256 d = _mm256_set1_ps(dw * y->d);
  s->acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes(u, y->qs)), s->acc);
  if (t == NC_TYPE_IQ1_S)
    s->a1 = fmaf(dw * y->d, (float)iq1s_delta(u, y), s->a1);
  else if (t == NC_TYPE_IQ1_M)
    s->acc2 =
        _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(delta_lanes(u, y->qs)), s->acc2);
}

static float vec_result(nc_type t, const vec_acc *s) {
  if (t == NC_TYPE_IQ1_S) return fmaf(NC_IQ1_DELTA, s->a1, nc_hsum8(s->acc));
  if (t == NC_TYPE_IQ1_M)
    return fmaf(NC_IQ1_DELTA, nc_hsum8(s->acc2), nc_hsum8(s->acc));
  return nc_iq_unit(t) * nc_hsum8(s->acc);
}

/* One superblock's tiled step: S exact, t = (float)S * (d_w * unit). */
static float tiled_step(nc_type t, const iq_unpacked *u, float dw_unit,
                        const block_q8_K *y, float acc) {
  int32_t s = hsum_i32(lanes(u, y->qs));
  if (t == NC_TYPE_IQ1_S)
    s = 8 * s + iq1s_delta(u, y);
  else if (t == NC_TYPE_IQ1_M)
    s = 8 * s + hsum_i32(delta_lanes(u, y->qs));
  return fmaf((float)s * dw_unit, y->d, acc);
}

static float tiled_unit(nc_type t) {
  return nc_iq_is_iq1(t) ? 0.125f : nc_iq_unit(t);
}

static float dot_vec(nc_type t, int64_t n, const void *w, const void *va) {
  const block_q8_K *y = va;
  vec_acc s = {_mm256_setzero_ps(), _mm256_setzero_ps(), 0.0f};
  iq_unpacked u;
  for (int64_t i = 0; i < n / QK_K; i++) {
    unpack(t, w, i, &u);
    vec_step(t, &u, _cvtsh_ss(nc_iq_half(t, w, i)), &y[i], &s);
  }
  return vec_result(t, &s);
}

static float dot_tiled(nc_type t, int64_t n, const void *w, const void *va) {
  const block_q8_K *y = va;
  float acc = 0.0f;
  iq_unpacked u;
  for (int64_t i = 0; i < n / QK_K; i++) {
    unpack(t, w, i, &u);
    const float dwu = _cvtsh_ss(nc_iq_half(t, w, i)) * tiled_unit(t);
    acc = tiled_step(t, &u, dwu, &y[i], acc);
  }
  return acc;
}

/* Activation rows per pass of the matmuls: their running sums stay in
 * registers' reach and their superblocks in L1/L2. */
enum { A_CHUNK = 16 };

/* out[a * out_stride + r] for every weight row r and activation row a,
 * each weight superblock unpacked once per A_CHUNK activation rows. */
static void gemm(nc_type t, bool tiled, int64_t n, const void *w,
                 size_t w_stride, int64_t nw, const void *act, size_t a_stride,
                 int64_t na, float *out, size_t out_stride) {
  const int64_t nb = n / QK_K;
  const uint8_t *wp = w, *ap = act;
  iq_unpacked u;
  for (int64_t r = 0; r < nw; r++) {
    const void *row = wp + (size_t)r * w_stride;
    for (int64_t a0 = 0; a0 < na; a0 += A_CHUNK) {
      const int m = (int)(na - a0 < A_CHUNK ? na - a0 : A_CHUNK);
      vec_acc s[A_CHUNK];
      float acc[A_CHUNK];
      for (int a = 0; a < m; a++) {
        s[a] = (vec_acc){_mm256_setzero_ps(), _mm256_setzero_ps(), 0.0f};
        acc[a] = 0.0f;
      }
      for (int64_t i = 0; i < nb; i++) {
        unpack(t, row, i, &u);
        const float dw = _cvtsh_ss(nc_iq_half(t, row, i));
        const float dwu = dw * tiled_unit(t);
        for (int a = 0; a < m; a++) {
          const block_q8_K *y =
              (const block_q8_K *)(ap + (size_t)(a0 + a) * a_stride) + i;
          if (tiled)
            acc[a] = tiled_step(t, &u, dwu, y, acc[a]);
          else
            vec_step(t, &u, dw, y, &s[a]);
        }
      }
      for (int a = 0; a < m; a++)
        out[(size_t)(a0 + a) * out_stride + (size_t)r] =
            tiled ? acc[a] : vec_result(t, &s[a]);
    }
  }
}

#define IQ_KERNELS(name, type)                                                 \
  float nc_avx2_dot_##name(int64_t n, const void *w, const void *a) {          \
    return dot_vec(type, n, w, a);                                             \
  }                                                                            \
  float nc_avx2_dot_##name##_tiled(int64_t n, const void *w, const void *a) {  \
    return dot_tiled(type, n, w, a);                                           \
  }                                                                            \
  void nc_avx2_gemm_##name(int64_t n, const void *w, size_t w_stride,          \
                           int64_t nw, const void *act, size_t a_stride,       \
                           int64_t na, float *out, size_t out_stride) {        \
    gemm(type, false, n, w, w_stride, nw, act, a_stride, na, out, out_stride); \
  }                                                                            \
  void nc_avx2_gemm_##name##_tiled(                                            \
      int64_t n, const void *w, size_t w_stride, int64_t nw, const void *act,  \
      size_t a_stride, int64_t na, float *out, size_t out_stride) {            \
    gemm(type, true, n, w, w_stride, nw, act, a_stride, na, out, out_stride);  \
  }                                                                            \
  void nc_avx2_dot_##name##_rows(int64_t n, const void *w, const void *a,      \
                                 size_t a_stride, int nrows, float *out,       \
                                 size_t out_stride) {                          \
    gemm(type, false, n, w, 0, 1, a, a_stride, nrows, out, out_stride);        \
  }                                                                            \
  void nc_avx2_dot_##name##_tiled_rows(                                        \
      int64_t n, const void *w, const void *a, size_t a_stride, int nrows,     \
      float *out, size_t out_stride) {                                         \
    gemm(type, true, n, w, 0, 1, a, a_stride, nrows, out, out_stride);         \
  }

IQ_KERNELS(iq2_xxs, NC_TYPE_IQ2_XXS)
IQ_KERNELS(iq2_xs, NC_TYPE_IQ2_XS)
IQ_KERNELS(iq2_s, NC_TYPE_IQ2_S)
IQ_KERNELS(iq3_xxs, NC_TYPE_IQ3_XXS)
IQ_KERNELS(iq3_s, NC_TYPE_IQ3_S)
IQ_KERNELS(iq1_s, NC_TYPE_IQ1_S)
IQ_KERNELS(iq1_m, NC_TYPE_IQ1_M)
