/* avx2_util.h: small AVX2 helpers shared by the AVX2 kernel files (include
 * only from files compiled with -mavx2 -mfma -mf16c). Internal. */
#ifndef NC_KERNELS_AVX2_UTIL_H
#define NC_KERNELS_AVX2_UTIL_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* Decode reads each weight byte once, from L3 or DRAM, and the hardware
 * prefetchers alone leave the loads waiting: the matmul loops prefetch the
 * rows about this far ahead. One 4-row tile ahead (1-4 KiB) left each
 * tile's first loads waiting on memory; 8 KiB ahead decoded the default
 * model ~1.3x faster (4..8 KiB measured alike, 16 KiB worse). */
enum { NC_PREFETCH_AHEAD = 8192 };

/* The start of the first whole tile (tile_bytes of contiguous rows) at
 * least NC_PREFETCH_AHEAD bytes after w. */
static inline const uint8_t *nc_prefetch_base(const uint8_t *w,
                                              size_t tile_bytes) {
  if (tile_bytes == 0) return w;
  return w + (NC_PREFETCH_AHEAD + tile_bytes - 1) / tile_bytes * tile_bytes;
}

/* Prefetch the cache lines of [p, p + n) into L2 (prefetcht1; a hint: p
 * may lie past the mapping). Not into L1 (prefetcht0): on an AMD EPYC (Zen
 * 4) the Q8_0 gemv of Gemma 3's 178 MB output head then streamed at 9 GB/s
 * of the core's 22, at 20-24 GB/s with prefetcht1 or t2 (CPU time, 262144
 * rows x 640); whole decode steps ran 1.2-1.6x faster. __builtin_prefetch,
 * not _mm_prefetch: GCC 12 dropped every _mm_prefetch of this loop once
 * inlined into the AVX-512 kernels (no prefetch instruction left in the
 * object; decode ran ~1.7x slower). Always inlined: left out of line (a
 * caller grown past GCC's inlining limits, as avx512_nl_gemm.c's matmuls
 * did with their panel path in 7cd6b1c) its calls have no effect that GCC
 * sees, and it deletes them: that object had no prefetch left, and a
 * mixture's MXFP4 experts streamed at ~60% of their rate at decode. */
static inline __attribute__((always_inline)) void
nc_prefetch_lines(const void *p, size_t n) {
  for (size_t o = 0; o < n; o += 64)
    __builtin_prefetch((const char *)p + o, 0, 2);
}

/* Sum of 8 floats as (k + k+4), then (0+2, 1+3), then the two: the order
 * llama.cpp's hsum_float_8 uses. */
static inline float nc_hsum8(__m256 x) {
  __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

/* From 16 int16 scales (one per 16 elements), for each 32-element chunk j
 * the madd multiplier: scale 2j in the low 8 lanes, 2j + 1 in the high 8. */
static inline void nc_pair_scales(__m256i sc16, __m256i out[8]) {
  const __m128i s_lo = _mm256_castsi256_si128(sc16);
  const __m128i s_hi = _mm256_extracti128_si256(sc16, 1);
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) {
    const __m128i src = j < 4 ? s_lo : s_hi;
    const int w0 = (2 * j) % 8, w1 = (2 * j + 1) % 8;
    out[j] = _mm256_set_m128i(
        _mm_shuffle_epi8(src, _mm_set1_epi16((short)(0x0100 + 0x0202 * w1))),
        _mm_shuffle_epi8(src, _mm_set1_epi16((short)(0x0100 + 0x0202 * w0))));
  }
}

#endif
