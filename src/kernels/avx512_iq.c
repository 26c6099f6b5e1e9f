/* avx512_iq: the decode rows' matmul (gemm_few: a few activation rows, the
 * path one-token decode takes) of the lattice types IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S and IQ1_M on AVX-512, bit-identical to ref_iq.c's
 * vec_dot order (llama.cpp's AVX2 vec_dot, and avx2_iq.c's gemm_few that
 * this replaces in the avx512 and amx tables).
 *
 * That order keeps, per (weight row, activation row), 8 float lanes, each
 * lane k the exact integer sum over a superblock of the products whose
 * index mod 32 lies in [4k, 4k + 4), each 16's sum times its scale, then
 * acc = fma(d_w * d_a, (float)lane, acc) superblock after superblock. The
 * integers may be formed in any grouping: here per 64 weights, the weight
 * magnitudes (grid bytes, unsigned) times the activation negated where the
 * weight's sign bit is set (a 64-bit mask: AVX-512's masked subtract in
 * place of AVX2's sign expansion), maddubs into int16 pairs and vpdpwssd
 * by the 16s' scales into 16 int32 lanes: lanes 0..7 the even 32-block's
 * and 8..15 the odd one's, whose sum is the 8 lanes exactly. Two weight
 * rows share one 512-bit float accumulator (row 0 in the low 8 lanes, row 1
 * in the high 8), so the float steps are the AVX2 ones, two rows at a time.
 *
 * The superblocks are unpacked straight into registers (grid points by
 * gathers on indices made vector-wide, signs as mask words: IQ2_XXS's,
 * IQ2_XS's and IQ3_XXS's 7-bit codes plus their parity, 32 at a time,
 * scales by one permute per 64), once per weight row for all the
 * activation rows; at one activation row that unpacking is the work. The
 * same loaders give the prompt matmul its int16 weights for IQ2/IQ3
 * (nc_avx512_iq_unpack_i16, for avx512_i16_gemm.c). IQ1's grid bytes are signed
 * (-1, 0, 1): their magnitudes and sign mask come from the bytes; the offsets
 * as in avx2_iq.c: IQ1_S's from the activation's 16-sums (an integer per
 * superblock, a scalar float accumulator per row), IQ1_M's as a second set
 * of lanes (the activation signed per group of 8) and accumulator.
 *
 * IQ4_XS's decode rows take the same gemm_few (its vec_dot order is the
 * lattice one with unit 1: lanes of 32-blocks times ls - 32): its loader
 * looks the codebook values up with vpshufb, 64 at a time. The amx table's
 * prompt tiles take the IQ2/IQ3 weights as signed bytes from the same
 * loaders (nc_avx512_iq_unpack_i8). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx2_util.h"
#include "iq_unpack.h"
#include "tables.h"

#define AI inline __attribute__((always_inline))

/* One superblock of one weight row, ready for any activation row. */
typedef struct sb512 {
  __m512i aw[4];     /* per 64 weights: their magnitudes (unsigned bytes) */
  __m512i sc[4];     /* per 64: int16, 128-bit lane L the scale of 16 #L */
  __mmask64 neg[4];  /* per 64: the weights that are negative */
  __mmask64 dneg[4]; /* IQ1_M: the weights whose offset is negative */
  __m256i dmul;      /* IQ1_S: per 16 the offset's sign times its scale */
  float dw;
} sb512;

static inline __m512i iota16(void) {
  return _mm512_set_epi32(0x001f001e, 0x001d001c, 0x001b001a, 0x00190018,
                          0x00170016, 0x00150014, 0x00130012, 0x00110010,
                          0x000f000e, 0x000d000c, 0x000b000a, 0x00090008,
                          0x00070006, 0x00050004, 0x00030002, 0x00010000);
}

/* Scales one per 16 (int16 k = 0..15 of s): 64-chunk h's multipliers. */
static inline __m512i per16_scales(__m256i s, int h) {
  const __m512i idx = _mm512_add_epi16(_mm512_srli_epi16(iota16(), 3),
                                       _mm512_set1_epi16((short)(4 * h)));
  return _mm512_permutexvar_epi16(idx, _mm512_castsi256_si512(s));
}

/* Scales one per 32, the one of 32-block ib at int16 stride * ib + off of
 * s: 64-chunk h's multipliers. */
static inline __m512i per32_scales(__m512i s, int h, int stride, int off) {
  const __m512i ib = _mm512_add_epi16(_mm512_srli_epi16(iota16(), 4),
                                      _mm512_set1_epi16((short)(2 * h)));
  const __m512i idx =
      _mm512_add_epi16(_mm512_mullo_epi16(ib, _mm512_set1_epi16((short)stride)),
                       _mm512_set1_epi16((short)off));
  return _mm512_permutexvar_epi16(idx, s);
}

/* 2s + 1 of the 16 nibbles of 8 scale bytes, low nibble first (k order). */
static inline __m256i nibble_scales16(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  const __m128i b = _mm_cvtsi64_si128((long long)v);
  const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(15));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15));
  const __m256i s = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(lo, hi));
  return _mm256_add_epi16(_mm256_add_epi16(s, s), _mm256_set1_epi16(1));
}

static inline uint64_t u64_at(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* The sign bytes of 7-bit sign fields (one per dword or word lane): the
 * field with its parity as bit 7 (the eighth sign makes the count of minus
 * signs even: nc_ksigns_iq2xs's rule). */
static AI __m512i parity_byte32(__m512i v) {
  __m512i t = _mm512_xor_si512(v, _mm512_srli_epi32(v, 4));
  t = _mm512_xor_si512(t, _mm512_srli_epi32(t, 2));
  t = _mm512_xor_si512(t, _mm512_srli_epi32(t, 1));
  return _mm512_or_si512(
      v, _mm512_slli_epi32(_mm512_and_si512(t, _mm512_set1_epi32(1)), 7));
}

static AI __m512i parity_byte16(__m512i v) {
  __m512i t = _mm512_xor_si512(v, _mm512_srli_epi16(v, 4));
  t = _mm512_xor_si512(t, _mm512_srli_epi16(t, 2));
  t = _mm512_xor_si512(t, _mm512_srli_epi16(t, 1));
  return _mm512_or_si512(
      v, _mm512_slli_epi16(_mm512_and_si512(t, _mm512_set1_epi16(1)), 7));
}

/* The 4 sign masks of a superblock whose 8 sign words (four 7-bit fields
 * each, bits 0..27) are the dwords stride * ib + off of src. */
static AI void sign_masks_aux(__m512i src, int stride, int off,
                              __mmask64 neg[4]) {
  const __m512i ib = _mm512_srli_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
      2);
  const __m512i shift =
      _mm512_set_epi32(21, 14, 7, 0, 21, 14, 7, 0, 21, 14, 7, 0, 21, 14, 7, 0);
  const __m512i m7 = _mm512_set1_epi32(127);
  const __m512i i_lo =
      _mm512_add_epi32(_mm512_mullo_epi32(ib, _mm512_set1_epi32(stride)),
                       _mm512_set1_epi32(off));
  const __m512i i_hi = _mm512_add_epi32(i_lo, _mm512_set1_epi32(4 * stride));
  const __m128i lo = _mm512_cvtepi32_epi8(parity_byte32(_mm512_and_si512(
      _mm512_srlv_epi32(_mm512_permutexvar_epi32(i_lo, src), shift), m7)));
  const __m128i hi = _mm512_cvtepi32_epi8(parity_byte32(_mm512_and_si512(
      _mm512_srlv_epi32(_mm512_permutexvar_epi32(i_hi, src), shift), m7)));
  neg[0] = _cvtu64_mask64((uint64_t)_mm_cvtsi128_si64(lo));
  neg[1] = _cvtu64_mask64((uint64_t)_mm_extract_epi64(lo, 1));
  neg[2] = _cvtu64_mask64((uint64_t)_mm_cvtsi128_si64(hi));
  neg[3] = _cvtu64_mask64((uint64_t)_mm_extract_epi64(hi, 1));
}

static AI void load_iq2_xxs(const block_iq2_xxs *x, sb512 *b) {
  const uint8_t *q = (const uint8_t *)x->qs;
  const __m512i v = _mm512_loadu_si512((const void *)q);
  const __m512i s2 = _mm512_srli_epi32(v, 28); /* odd dwords: the scales */
  const __m512i s =
      _mm512_add_epi32(_mm512_add_epi32(s2, s2), _mm512_set1_epi32(1));
  const uint64_t *g = nc_iq2xxs_grid;
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const uint8_t *p0 = q + 16 * h, *p1 = p0 + 8;
    b->aw[h] = _mm512_i32gather_epi64(
        _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(
            (long long)(nc_iq_u32(p0) | (uint64_t)nc_iq_u32(p1) << 32))),
        (const void *)g, 8);
    b->sc[h] = per32_scales(s, h, 4, 2); /* dword 2ib + 1's low half */
  }
  sign_masks_aux(v, 2, 1, b->neg);
  b->dw = _cvtsh_ss(x->d);
}

static AI void load_iq2_xs(const block_iq2_xs *x, sb512 *b) {
  const __m256i s = nibble_scales16(x->scales);
  const uint64_t *g = nc_iq2xs_grid;
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const uint16_t *c = x->qs + 8 * h;
    b->aw[h] = _mm512_i32gather_epi64(
        _mm256_and_si256(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)c)),
            _mm256_set1_epi32(511)),
        (const void *)g, 8);
    b->sc[h] = per16_scales(s, h);
  }
  const __m256i sb = _mm512_cvtepi16_epi8(parity_byte16(
      _mm512_srli_epi16(_mm512_loadu_si512((const void *)x->qs), 9)));
  b->neg[0] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(sb, 0));
  b->neg[1] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(sb, 1));
  b->neg[2] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(sb, 2));
  b->neg[3] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(sb, 3));
  b->dw = _cvtsh_ss(x->d);
}

static AI void load_iq2_s(const block_iq2_s *x, sb512 *b) {
  const __m256i s = nibble_scales16(x->scales);
  const uint64_t *g = nc_iq2s_grid;
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const uint8_t *q = x->qs + 8 * h;
    const int h0 = x->qh[2 * h], h1 = x->qh[2 * h + 1];
    const __m256i hi = _mm256_slli_epi32(
        _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(h0 | h1 << 8),
                              _mm256_set_epi32(14, 12, 10, 8, 6, 4, 2, 0)),
            _mm256_set1_epi32(3)),
        8);
    b->aw[h] = _mm512_i32gather_epi64(
        _mm256_or_si256(
            _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q)), hi),
        (const void *)g, 8);
    b->neg[h] = _cvtu64_mask64(u64_at(x->qs + QK_K / 8 + 8 * h));
    b->sc[h] = per16_scales(s, h);
  }
  b->dw = _cvtsh_ss(x->d);
}

static AI void load_iq3_xxs(const block_iq3_xxs *x, sb512 *b) {
  const uint8_t *aux = x->qs + QK_K / 4;
  const __m256i v = _mm256_loadu_si256((const __m256i *)aux);
  const __m256i s2 = _mm256_srli_epi32(v, 28);
  const __m512i s = _mm512_castsi256_si512(
      _mm256_add_epi32(_mm256_add_epi32(s2, s2), _mm256_set1_epi32(1)));
  const uint32_t *g = nc_iq3xxs_grid;
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const uint8_t *q = x->qs + 16 * h;
    b->aw[h] = _mm512_i32gather_epi32(
        _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)q)),
        (const void *)g, 4);
    b->sc[h] = per32_scales(s, h, 2, 0); /* dword ib's low half */
  }
  sign_masks_aux(_mm512_castsi256_si512(v), 1, 0, b->neg);
  b->dw = _cvtsh_ss(x->d);
}

static AI void load_iq3_s(const block_iq3_s *x, sb512 *b) {
  uint32_t sc4;
  memcpy(&sc4, x->scales, 4);
  const __m128i sb = _mm_cvtsi32_si128((int)sc4);
  const __m128i lo = _mm_and_si128(sb, _mm_set1_epi8(15));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(sb, 4), _mm_set1_epi8(15));
  const __m128i s8 = _mm_cvtepu8_epi16(_mm_unpacklo_epi8(lo, hi));
  const __m512i s = _mm512_castsi128_si512(
      _mm_add_epi16(_mm_add_epi16(s8, s8), _mm_set1_epi16(1)));
  const uint32_t *g = nc_iq3s_grid;
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const uint8_t *q = x->qs + 16 * h;
    const int h0 = x->qh[2 * h], h1 = x->qh[2 * h + 1];
    const __m512i ql =
        _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)q));
    b->aw[h] = _mm512_i32gather_epi32(
        _mm512_mask_or_epi32(ql, _cvtu32_mask16((unsigned)(h0 | h1 << 8)), ql,
                             _mm512_set1_epi32(256)),
        (const void *)g, 4);
    b->neg[h] = _cvtu64_mask64(u64_at(x->signs + 8 * h));
    b->sc[h] = per32_scales(s, h, 1, 0);
  }
  b->dw = _cvtsh_ss(x->d);
}

/* IQ1_S: signed grid bytes (-1, 0, 1); the offsets' multipliers per 16
 * (sign times scale of its 32) for the activation's 16-sums. */
static AI void load_iq1_s(const block_iq1_s *x, sb512 *b) {
  const uint64_t *g = nc_iq1s_grid;
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const uint8_t *q = x->qs + 8 * h;
    const uint32_t h01 = x->qh[2 * h] | (uint32_t)x->qh[2 * h + 1] << 16;
    const __m256i hi = _mm256_slli_epi32(
        _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)h01),
                              _mm256_set_epi32(25, 22, 19, 16, 9, 6, 3, 0)),
            _mm256_set1_epi32(7)),
        8);
    const __m512i m = _mm512_i32gather_epi64(
        _mm256_or_si256(
            _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q)), hi),
        (const void *)g, 8);
    b->aw[h] = _mm512_abs_epi8(m);
    b->neg[h] = _mm512_movepi8_mask(m);
  }
  const __m128i qh = _mm_loadu_si128((const __m128i *)x->qh);
  const __m128i s3 = _mm_and_si128(_mm_srli_epi16(qh, 12), _mm_set1_epi16(7));
  const __m128i s = _mm_add_epi16(_mm_add_epi16(s3, s3), _mm_set1_epi16(1));
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++)
    b->sc[h] = per32_scales(_mm512_castsi128_si512(s), h, 1, 0);
  const __m128i neg = _mm_srai_epi16(qh, 15); /* -1 where the offset is */
  const __m128i ds = _mm_sub_epi16(_mm_xor_si128(s, neg), neg);
  b->dmul =
      _mm256_set_m128i(_mm_unpackhi_epi16(ds, ds), _mm_unpacklo_epi16(ds, ds));
  b->dw = _cvtsh_ss(x->d);
}

/* IQ1_M: group g of 64-chunk h takes nibble g of qh[4h..4h+3] (low
 * first): 3 bits of grid index, bit 3 its offset's sign; scale k is bits
 * 3(k % 4).. of scale word k / 4. */
static AI void load_iq1_m(const block_iq1_m *x, sb512 *b) {
  const uint64_t *g = nc_iq1s_grid;
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const uint8_t *q = x->qs + 8 * h, *qh = x->qh + 4 * h;
    const __m256i hi = _mm256_slli_epi32(
        _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)nc_iq_u32(qh)),
                              _mm256_set_epi32(28, 24, 20, 16, 12, 8, 4, 0)),
            _mm256_set1_epi32(7)),
        8);
    const __m512i m = _mm512_i32gather_epi64(
        _mm256_or_si256(
            _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q)), hi),
        (const void *)g, 8);
    b->aw[h] = _mm512_abs_epi8(m);
    b->neg[h] = _mm512_movepi8_mask(m);
    const uint64_t bits = _pext_u32(nc_iq_u32(qh), 0x88888888u);
    b->dneg[h] = _cvtu64_mask64(_pdep_u64(bits, 0x0101010101010101ull) * 0xff);
  }
  uint64_t w4;
  memcpy(&w4, x->scales, 8);
  const __m256i words = _mm256_permutexvar_epi16(
      _mm256_srli_epi16(_mm512_castsi512_si256(iota16()), 2),
      _mm256_castsi128_si256(_mm_cvtsi64_si128((long long)w4)));
  const __m256i shift = _mm256_mullo_epi16(
      _mm256_and_si256(_mm512_castsi512_si256(iota16()), _mm256_set1_epi16(3)),
      _mm256_set1_epi16(3));
  const __m256i s3 =
      _mm256_and_si256(_mm256_srlv_epi16(words, shift), _mm256_set1_epi16(7));
  const __m256i s =
      _mm256_add_epi16(_mm256_add_epi16(s3, s3), _mm256_set1_epi16(1));
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++)
    b->sc[h] = per16_scales(s, h);
  b->dw = _cvtsh_ss(nc_iq1m_half_scale(x));
}

/* IQ4_XS (not a lattice type, but its vec_dot order is the same: lanes of
 * 32-blocks times their scale, fma(d_w * d_a, lane), hsum8): per 64 the
 * two 32-blocks' codebook values (vpshufb on the nibbles: low nibbles are
 * elements 0..15, high ones 16..31), their magnitudes and signs; the
 * scales ls - 32 one per 32. */
static AI void load_iq4_xs(const block_iq4_xs *x, sb512 *b) {
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)nc_iq4nl_values));
  /* per 16-bit lane: shift 0 in 128-bit lanes 0 and 2, 4 in 1 and 3 */
  const __m512i shifts =
      _mm512_set_epi64(0x0004000400040004, 0x0004000400040004, 0, 0,
                       0x0004000400040004, 0x0004000400040004, 0, 0);
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const __m512i q = _mm512_castsi256_si512(
        _mm256_loadu_si256((const __m256i *)(x->qs + 32 * h)));
    const __m512i idx = _mm512_and_si512(
        _mm512_srlv_epi16(_mm512_shuffle_i64x2(q, q, _MM_SHUFFLE(1, 1, 0, 0)),
                          shifts),
        _mm512_set1_epi8(0x0f));
    const __m512i v = _mm512_shuffle_epi8(table, idx);
    b->aw[h] = _mm512_abs_epi8(v);
    b->neg[h] = _mm512_movepi8_mask(v);
  }
  uint32_t sl;
  memcpy(&sl, x->scales_l, sizeof sl);
  const __m256i j = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i lo = _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32((int)sl), _mm256_slli_epi32(j, 2)),
      _mm256_set1_epi32(0x0f));
  const __m256i hi = _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(x->scales_h), _mm256_add_epi32(j, j)),
      _mm256_set1_epi32(3));
  const __m256i ls = _mm256_sub_epi32(
      _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
  const __m512i s = _mm512_castsi128_si512(_mm256_cvtepi32_epi16(ls));
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++)
    b->sc[h] = per32_scales(s, h, 1, 0);
  b->dw = _cvtsh_ss(x->d);
}

static AI void load_sb(nc_type t, const void *row, int64_t i, sb512 *b) {
  switch (t) {
  case NC_TYPE_IQ2_XXS: load_iq2_xxs((const block_iq2_xxs *)row + i, b); return;
  case NC_TYPE_IQ2_XS: load_iq2_xs((const block_iq2_xs *)row + i, b); return;
  case NC_TYPE_IQ2_S: load_iq2_s((const block_iq2_s *)row + i, b); return;
  case NC_TYPE_IQ3_XXS: load_iq3_xxs((const block_iq3_xxs *)row + i, b); return;
  case NC_TYPE_IQ3_S: load_iq3_s((const block_iq3_s *)row + i, b); return;
  case NC_TYPE_IQ1_S: load_iq1_s((const block_iq1_s *)row + i, b); return;
  case NC_TYPE_IQ4_XS: load_iq4_xs((const block_iq4_xs *)row + i, b); return;
  default: load_iq1_m((const block_iq1_m *)row + i, b); return;
  }
}

/* The 16 int32 lanes of a superblock against 256 activations: lanes 0..7
 * and 8..15 sum to ref_iq.c's 8 lanes. */
static AI __m512i lanes(const sb512 *b, const int8_t *a) {
  __m512i acc = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const __m512i x = _mm512_loadu_si512((const void *)(a + 64 * h));
    const __m512i xs =
        _mm512_mask_sub_epi8(x, b->neg[h], _mm512_setzero_si512(), x);
    acc =
        _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(b->aw[h], xs), b->sc[h]);
  }
  return acc;
}

/* IQ1_M's offset lanes: the activation signed per group of 8. */
static AI __m512i delta_lanes(const sb512 *b, const int8_t *a) {
  __m512i acc = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const __m512i x = _mm512_loadu_si512((const void *)(a + 64 * h));
    const __m512i xs =
        _mm512_mask_sub_epi8(x, b->dneg[h], _mm512_setzero_si512(), x);
    acc = _mm512_dpwssd_epi32(
        acc, _mm512_maddubs_epi16(_mm512_set1_epi8(1), xs), b->sc[h]);
  }
  return acc;
}

/* IQ1_S's offset sum from the activation's 16-sums: ref_iq.c's integer
 * sum over 32s of (bsum pair) * sign * scale, exactly. */
static AI int32_t iq1s_delta(const sb512 *b, const block_q8_K *y) {
  const __m256i p =
      _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y->bsums), b->dmul);
  __m128i v =
      _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
  v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
  v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1));
  return _mm_cvtsi128_si32(v);
}

/* Two rows' 16 lanes each as one vector of their 8 lanes: row 0's in the
 * low half, row 1's in the high (exact int32 adds). */
static AI __m512 fold2(__m512i r0, __m512i r1) {
  const __m512i lo = _mm512_shuffle_i64x2(r0, r1, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i hi = _mm512_shuffle_i64x2(r0, r1, _MM_SHUFFLE(3, 2, 3, 2));
  return _mm512_cvtepi32_ps(_mm512_add_epi32(lo, hi));
}

static inline __m256 high8(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* Activation rows per pass: their accumulators stay in registers. */
enum { A_CHUNK = 8 };

static AI void gemm_few(nc_type t, int64_t n, const void *w, size_t w_stride,
                        int64_t nw, const void *act, size_t a_stride,
                        int64_t na, float *out, size_t out_stride) {
  const int64_t nb = n / QK_K;
  const uint8_t *wp = w, *ap = act;
  sb512 b0, b1;
  for (int64_t a0 = 0; a0 < na; a0 += A_CHUNK) {
    const int m = (int)(na - a0 < A_CHUNK ? na - a0 : A_CHUNK);
    for (int64_t r = 0; r < nw; r += 2) {
      const uint8_t *w0 = wp + (size_t)r * w_stride;
      const uint8_t *w1 = r + 1 < nw ? w0 + w_stride : w0;
      if (a0 == 0)
        nc_prefetch_lines(nc_prefetch_base(w0, 2 * w_stride), 2 * w_stride);
      __m512 acc[A_CHUNK], acc2[A_CHUNK];
      float d1[A_CHUNK][2];
      for (int a = 0; a < A_CHUNK; a++) {
        acc[a] = acc2[a] = _mm512_setzero_ps();
        d1[a][0] = d1[a][1] = 0.0f;
      }
      for (int64_t i = 0; i < nb; i++) {
        load_sb(t, w0, i, &b0);
        load_sb(t, w1, i, &b1);
        const __m512 dw2 = _mm512_castpd_ps(
            _mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(b0.dw)),
                               _mm256_castps_pd(_mm256_set1_ps(b1.dw)), 1));
        for (int a = 0; a < m; a++) {
          const block_q8_K *y =
              (const block_q8_K *)(ap + (size_t)(a0 + a) * a_stride) + i;
          const __m512 d = _mm512_mul_ps(dw2, _mm512_set1_ps(y->d));
          acc[a] = _mm512_fmadd_ps(
              d, fold2(lanes(&b0, y->qs), lanes(&b1, y->qs)), acc[a]);
          if (t == NC_TYPE_IQ1_S) {
            d1[a][0] = fmaf(b0.dw * y->d, (float)iq1s_delta(&b0, y), d1[a][0]);
            d1[a][1] = fmaf(b1.dw * y->d, (float)iq1s_delta(&b1, y), d1[a][1]);
          } else if (t == NC_TYPE_IQ1_M) {
            acc2[a] = _mm512_fmadd_ps(
                d, fold2(delta_lanes(&b0, y->qs), delta_lanes(&b1, y->qs)),
                acc2[a]);
          }
        }
      }
      for (int a = 0; a < m; a++) {
        float *o = out + (size_t)(a0 + a) * out_stride + (size_t)r;
        const float s0 = nc_hsum8(_mm512_castps512_ps256(acc[a]));
        const float s1 = nc_hsum8(high8(acc[a]));
        float v0, v1;
        if (t == NC_TYPE_IQ1_S) {
          v0 = fmaf(NC_IQ1_DELTA, d1[a][0], s0);
          v1 = fmaf(NC_IQ1_DELTA, d1[a][1], s1);
        } else if (t == NC_TYPE_IQ1_M) {
          v0 =
              fmaf(NC_IQ1_DELTA, nc_hsum8(_mm512_castps512_ps256(acc2[a])), s0);
          v1 = fmaf(NC_IQ1_DELTA, nc_hsum8(high8(acc2[a])), s1);
        } else {
          v0 = nc_iq_unit(t) * s0;
          v1 = nc_iq_unit(t) * s1;
        }
        o[0] = v0;
        if (r + 1 < nw) o[1] = v1;
      }
    }
  }
}

/* The prompt matmul's unpacking (avx512_i16_gemm.c) of the IQ2 and IQ3
 * types from the same registers: superblock i's 256 signed weights times
 * their 16's scale as int16, and d_w * unit (the tiled step's factor). */
static AI float unpack_i16(nc_type t, const void *row, int64_t i,
                           int16_t *dst) {
  sb512 b;
  load_sb(t, row, i, &b);
  const __m512i lo_idx = _mm512_slli_epi16(_mm512_srli_epi16(iota16(), 4), 3);
  const __m512i hi_idx = _mm512_add_epi16(lo_idx, _mm512_set1_epi16(16));
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    const __m512i w = _mm512_mask_sub_epi8(b.aw[h], b.neg[h],
                                           _mm512_setzero_si512(), b.aw[h]);
    _mm512_storeu_si512(
        (void *)(dst + 64 * h),
        _mm512_mullo_epi16(_mm512_cvtepi8_epi16(_mm512_castsi512_si256(w)),
                           _mm512_permutexvar_epi16(lo_idx, b.sc[h])));
    _mm512_storeu_si512(
        (void *)(dst + 64 * h + 32),
        _mm512_mullo_epi16(
            _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(w, 1)),
            _mm512_permutexvar_epi16(hi_idx, b.sc[h])));
  }
  return b.dw * nc_iq_unit(t);
}

float nc_avx512_iq_unpack_i16(nc_type t, const void *row, int64_t i,
                              int16_t *dst) {
  switch (t) {
  case NC_TYPE_IQ2_XXS: return unpack_i16(NC_TYPE_IQ2_XXS, row, i, dst);
  case NC_TYPE_IQ2_XS: return unpack_i16(NC_TYPE_IQ2_XS, row, i, dst);
  case NC_TYPE_IQ2_S: return unpack_i16(NC_TYPE_IQ2_S, row, i, dst);
  case NC_TYPE_IQ3_XXS: return unpack_i16(NC_TYPE_IQ3_XXS, row, i, dst);
  default: return unpack_i16(NC_TYPE_IQ3_S, row, i, dst);
  }
}

/* The tile unit's unpacking (amx_kquant.c) of the IQ2 and IQ3 types:
 * superblock i's 256 signed weights as bytes in element order, the scale
 * of each 16 as int32 (scale[k] for elements 16k .. 16k + 15), and d_w *
 * unit (the tiled step's factor). */
static AI float unpack_i8(nc_type t, const void *row, int64_t i, int8_t *q,
                          int32_t *scale) {
  sb512 b;
  load_sb(t, row, i, &b);
  _Alignas(64) int16_t s[4][32];
#pragma GCC unroll 4
  for (int h = 0; h < 4; h++) {
    _mm512_storeu_si512((void *)(q + 64 * h),
                        _mm512_mask_sub_epi8(b.aw[h], b.neg[h],
                                             _mm512_setzero_si512(), b.aw[h]));
    _mm512_store_si512((void *)s[h], b.sc[h]);
  }
  for (int k = 0; k < 16; k++)
    scale[k] = s[k / 4][8 * (k % 4)];
  return b.dw * nc_iq_unit(t);
}

float nc_avx512_iq_unpack_i8(nc_type t, const void *row, int64_t i, int8_t *q,
                             int32_t *scale) {
  switch (t) {
  case NC_TYPE_IQ2_XXS: return unpack_i8(NC_TYPE_IQ2_XXS, row, i, q, scale);
  case NC_TYPE_IQ2_XS: return unpack_i8(NC_TYPE_IQ2_XS, row, i, q, scale);
  case NC_TYPE_IQ2_S: return unpack_i8(NC_TYPE_IQ2_S, row, i, q, scale);
  case NC_TYPE_IQ3_XXS: return unpack_i8(NC_TYPE_IQ3_XXS, row, i, q, scale);
  default: return unpack_i8(NC_TYPE_IQ3_S, row, i, q, scale);
  }
}

/* The tiled order's few rows (avx512_i16_gemm.c hands it 1..3 activation
 * rows; IQ4_XS and the IQ2/IQ3 types, ref_nl.c's and ref_iq.c's tiled
 * order): per superblock the exact S (the same lanes, summed), t =
 * (float)S * (d_w * unit), acc = fma(t, d_a, acc), each superblock of two
 * weight rows unpacked once for up to 8 activation rows. */
static AI void tiled_few(nc_type t, int64_t n, const void *w, size_t w_stride,
                         int64_t nw, const void *act, size_t a_stride,
                         int64_t na, float *out, size_t out_stride) {
  const int64_t nb = n / QK_K;
  const float unit = nc_iq_unit(t);
  const uint8_t *wp = w, *ap = act;
  sb512 b0, b1;
  for (int64_t a0 = 0; a0 < na; a0 += A_CHUNK) {
    const int m = (int)(na - a0 < A_CHUNK ? na - a0 : A_CHUNK);
    for (int64_t r = 0; r < nw; r += 2) {
      const uint8_t *w0 = wp + (size_t)r * w_stride;
      const uint8_t *w1 = r + 1 < nw ? w0 + w_stride : w0;
      if (a0 == 0)
        nc_prefetch_lines(nc_prefetch_base(w0, 2 * w_stride), 2 * w_stride);
      float acc0[A_CHUNK], acc1[A_CHUNK];
      for (int a = 0; a < A_CHUNK; a++)
        acc0[a] = acc1[a] = 0.0f;
      for (int64_t i = 0; i < nb; i++) {
        load_sb(t, w0, i, &b0);
        load_sb(t, w1, i, &b1);
        const float f0 = b0.dw * unit, f1 = b1.dw * unit;
        for (int a = 0; a < m; a++) {
          const block_q8_K *y =
              (const block_q8_K *)(ap + (size_t)(a0 + a) * a_stride) + i;
          const int32_t s0 = _mm512_reduce_add_epi32(lanes(&b0, y->qs));
          const int32_t s1 = _mm512_reduce_add_epi32(lanes(&b1, y->qs));
          acc0[a] = fmaf((float)s0 * f0, y->d, acc0[a]);
          acc1[a] = fmaf((float)s1 * f1, y->d, acc1[a]);
        }
      }
      for (int a = 0; a < m; a++) {
        float *o = out + (size_t)(a0 + a) * out_stride + (size_t)r;
        o[0] = acc0[a];
        if (r + 1 < nw) o[1] = acc1[a];
      }
    }
  }
}

#define TILED_FEW(name, type)                                                  \
  void nc_avx512_gemm_##name##_tiled_few(                                      \
      int64_t n, const void *w, size_t w_stride, int64_t nw, const void *act,  \
      size_t a_stride, int64_t na, float *out, size_t out_stride) {            \
    tiled_few(type, n, w, w_stride, nw, act, a_stride, na, out, out_stride);   \
  }
TILED_FEW(iq4_xs, NC_TYPE_IQ4_XS)
TILED_FEW(iq2_xxs, NC_TYPE_IQ2_XXS)
TILED_FEW(iq2_xs, NC_TYPE_IQ2_XS)
TILED_FEW(iq2_s, NC_TYPE_IQ2_S)
TILED_FEW(iq3_xxs, NC_TYPE_IQ3_XXS)
TILED_FEW(iq3_s, NC_TYPE_IQ3_S)
#undef TILED_FEW

#define IQ_GEMM_FEW(name, type)                                                \
  void nc_avx512_gemm_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *act, size_t a_stride,     \
                             int64_t na, float *out, size_t out_stride) {      \
    gemm_few(type, n, w, w_stride, nw, act, a_stride, na, out, out_stride);    \
  }

IQ_GEMM_FEW(iq2_xxs, NC_TYPE_IQ2_XXS)
IQ_GEMM_FEW(iq2_xs, NC_TYPE_IQ2_XS)
IQ_GEMM_FEW(iq2_s, NC_TYPE_IQ2_S)
IQ_GEMM_FEW(iq3_xxs, NC_TYPE_IQ3_XXS)
IQ_GEMM_FEW(iq3_s, NC_TYPE_IQ3_S)
IQ_GEMM_FEW(iq1_s, NC_TYPE_IQ1_S)
IQ_GEMM_FEW(iq1_m, NC_TYPE_IQ1_M)
IQ_GEMM_FEW(iq4_xs, NC_TYPE_IQ4_XS)
