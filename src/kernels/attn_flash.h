/* attn_flash: flash attention over F16 keys and values in the float order of
 * llama.cpp's CPU flash attention for one query row
 * (ggml_compute_forward_flash_attn_ext_f16_one_chunk with an F16 cache, x86
 * AVX-512 build):
 *
 *   q rounded to F16; per visible key j, in position order:
 *     s = dot(q, k_j)                 ggml_vec_dot_f16: 4 x 16 lanes, each a
 *                                     chain of fused multiply-adds over
 *                                     d = 64 i + 16 r + l; lanes r=0+2, 1+3,
 *                                     then 0+1, then the 16-lane halving tree;
 *                                     a tail past a multiple of 64 adds its
 *                                     products in double
 *     s = s * scale'                  scale' = scale / softcap with a softcap
 *     s = softcap * tanhf(s)          only with a softcap
 *     if s > M: ms = expf(M - s), M = s, acc = f16(acc * ms), vs = 1
 *     else:     ms = 1, vs = expf(s - M)
 *     acc = f16(fma(v_j, vs, acc))    the F16 value accumulator
 *     S = fma(S, ms, vs)
 *   out = f32(acc) * (S == 0 ? 0 : 1 / S)
 *
 * Keys that are masked out (past the row's position, outside a sliding
 * window) are skipped, as llama.cpp skips -INF mask entries, so the caller
 * passes only the visible keys, a tile at a time: no score row is longer
 * than a tile. The state (M, S, acc) carries from tile to tile, and every
 * result is a function of its own row only (batch and thread invariant).
 *
 * Two builds, plain C and AVX-512, give identical bits for finite inputs
 * (fmaf is exactly rounded, half <-> float conversions round to nearest
 * even in both). */
#ifndef NC_ATTN_FLASH_H
#define NC_ATTN_FLASH_H

#include <stddef.h>
#include <stdint.h>

#include "quant.h"

/* The queries of one call: m rows of hd halves (q + i * hd), all reading the
 * same K and V (the heads of one GQA group). */
typedef struct nc_flash_query {
  const nc_fp16 *q;
  int32_t m, hd, hdv;
  float scale;   /* applied to q.k */
  float softcap; /* 0: none */
} nc_flash_query;

/* Per query: the running maximum M, sum S and the F16 accumulator of hdv
 * halves. nc_flash_state_init sets M = -INF, S = 0, acc = 0. */
typedef struct nc_flash_state {
  float *M, *S; /* m each */
  nc_fp16 *acc; /* m * hdv: query i at acc + i * hdv */
} nc_flash_state;

typedef struct nc_attn_flash_kernels {
  const char *name;
  /* n keys and values (k + j * k_stride, v + j * v_stride halves), in
   * position order, folded into every query's state; s: n floats of
   * scratch (the tile's scores). tab maps half bits to float. */
  void (*tile)(const nc_flash_query *fq, const nc_fp16 *k, size_t k_stride,
               const nc_fp16 *v, size_t v_stride, int32_t n, const float *tab,
               float *s, nc_flash_state *st);
} nc_attn_flash_kernels;

const nc_attn_flash_kernels *nc_attn_flash_plain(void);
const nc_attn_flash_kernels *nc_attn_flash_avx512(void); /* NULL: not built */

void nc_flash_state_init(nc_flash_state *st, int32_t m, int32_t hdv);
/* out + i * out_stride = query i's result (hdv floats). */
void nc_flash_finish(const nc_flash_state *st, int32_t m, int32_t hdv,
                     const float *tab, float *out, size_t out_stride);

/* The steps of the plain build, for the SIMD builds' tails and tests. */
float nc_flash_dot_f16(const nc_fp16 *x, const nc_fp16 *y, int32_t n,
                       const float *tab);
float nc_flash_score(float dot, float scale, float softcap);

#endif
