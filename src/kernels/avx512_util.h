/* avx512_util.h: small AVX-512 helpers shared by the AVX-512 kernel files
 * (include only from files compiled with the avx512 flags). Internal. */
#ifndef NC_KERNELS_AVX512_UTIL_H
#define NC_KERNELS_AVX512_UTIL_H

#include <immintrin.h>

/* Byte k (0..3) of each int32 lane: 0x10 where bit shift + k of the lane
 * is set (the fifth bit of four consecutive Q5 elements). */
static inline __m512i nc_fifth_bits(__m512i qh, int shift) {
  /* copy each lane's low byte (after the shift) to its four bytes */
  const __m512i dup =
      _mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0x00000000);
  __m512i b = _mm512_shuffle_epi8(_mm512_srli_epi32(qh, (unsigned)shift), dup);
  __mmask64 set = _mm512_test_epi8_mask(b, _mm512_set1_epi32(0x08040201));
  return _mm512_maskz_mov_epi8(set, _mm512_set1_epi8(0x10));
}

#endif
