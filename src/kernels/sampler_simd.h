/* sampler_simd: the AVX2 and AVX-512 versions of the sampler's row passes,
 * chosen at run time from what the CPU has. They use the same 16 lanes (element
 * i goes to lane i % 16), the same operations and the same order as the SSE2
 * and plain-C versions (no FMA), so every result is bit-identical whichever
 * version runs. Internal to the sampler. */
#ifndef NC_SAMPLER_SIMD_H
#define NC_SAMPLER_SIMD_H

#include <stdbool.h>
#include <stddef.h>

/* Levels of the sampler's row passes (a backend table names one: ref the
 * portable one, SSE2 or plain C): every level gives bit-identical results,
 * and a level the CPU lacks falls back to the one below. */
enum { NC_SIMD_PORTABLE = 0, NC_SIMD_AVX2 = 1, NC_SIMD_AVX512 = 2 };
#define NC_SIMD_BEST NC_SIMD_AVX512

/* Whether the file was built with the flags that enable its version (a
 * build without them gets stubs that must never be called). */
bool nc_sampler_avx2_built(void);
bool nc_sampler_avx512_built(void);

/* Max over x[0..n - n % 16) in 16 lanes, and whether a NaN was seen;
 * dst (when not NULL) receives a copy. The caller finishes the tail. */
float nc_sampler_max16_avx2(const float *x, float *dst, size_t n, bool *nan);
/* exp((x - m) * scale) over x[0..n - n % 16) into 16 lane sums (lanes) and
 * into w when not NULL. */
void nc_sampler_exp16_avx2(const float *x, size_t n, float m, float scale,
                           float *w, float lanes[16]);

/* The same with AVX-512F (one register holds the 16 lanes). */
float nc_sampler_max16_avx512(const float *x, float *dst, size_t n, bool *nan);
void nc_sampler_exp16_avx512(const float *x, size_t n, float m, float scale,
                             float *w, float lanes[16]);

#endif
