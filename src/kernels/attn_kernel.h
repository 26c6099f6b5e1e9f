/* attn_kernel: the inner loops of attention over F16 keys and values, in
 * the float order of llama.cpp's CPU path for an F16 KV cache (its tinyBLAS
 * F16 GEMM: 16 lanes, each a chain of fused multiply-adds, then a halving
 * tree). Every result is a fixed function of its own inputs: the same bits
 * from both builds below, whatever the batch or thread count.
 *
 * Three builds: plain C (fmaf), AVX2 + F16C intrinsics (attn_kernel_avx2.c)
 * and AVX-512 (attn_kernel_avx512.c) that run the very same per-lane chains
 * 8 or 16 lanes at a time. fmaf is exactly rounded and half to float is
 * exact, so all give identical results; the backend table chosen at start
 * (kernels.h) names the build that runs. */
#ifndef NC_ATTN_KERNEL_H
#define NC_ATTN_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/quant.h"

#define NC_ATTN_LANES 16

/* The score and value loops take m queries at once (the heads of one GQA
 * group, which share K and V): each K or V row is loaded and widened once
 * for all of them, while every query's results are exactly those of a
 * one-query call. */
typedef struct nc_attn_kernels {
  const char *name;
  /* out[i * out_stride + j] = q_i . k_j for m queries (q_i = q + i * hd,
   * already rounded to F16 and widened) and n keys (k_j = k + j * k_stride
   * halves), hd values; tab maps half bits to float. */
  void (*scores)(const float *q, int32_t m, const nc_fp16 *k, size_t k_stride,
                 int32_t n, int32_t hd, const float *tab, float *out,
                 size_t out_stride);
  /* For each query i < m, with p_i = p + i * p_stride and lanes_i = lanes +
   * i * l_stride (at least 16 * hdv floats each): lanes_i[((j0 + j) % 16) *
   * hdv + d] += p_i[j] * v_j[d] (fused) for n rows of V starting at
   * position j0; lane-major so that one row of V updates one contiguous
   * lane. (A stride that is not a multiple of 4 KiB keeps the queries'
   * lanes from aliasing in the store buffer.) */
  void (*accum_v)(const float *p, int32_t m, size_t p_stride, const nc_fp16 *v,
                  size_t v_stride, int32_t j0, int32_t n, int32_t hdv,
                  const float *tab, float *lanes, size_t l_stride);
  /* accum_v over the rows of several blocks in one call (may be NULL: call
   * accum_v per block): row j < n at blocks[j / bt] + (j % bt) * v_stride,
   * position j0 + j; the same results as accum_v on each block in order.
   * Taking each lane's rows together keeps the lane in registers instead of
   * loading and storing it for every row. */
  void (*accum_v_blocks)(const float *p, int32_t m, size_t p_stride,
                         const nc_fp16 *const *blocks, int32_t bt,
                         size_t v_stride, int32_t j0, int32_t n, int32_t hdv,
                         const float *tab, float *lanes, size_t l_stride);
  /* accum_v on rows already widened to float (may be NULL): row j < n at
   * v + j * v_stride floats, position j0 + j. Half to float is exact, so
   * the results are those of accum_v on the F16 rows, without widening
   * each row again for every query group that reads it. */
  void (*accum_v_wide)(const float *p, int32_t m, size_t p_stride,
                       const float *v, size_t v_stride, int32_t j0, int32_t n,
                       int32_t hdv, float *lanes, size_t l_stride);
  /* scores from keys stored transposed (may be NULL: use scores): kt holds
   * blocks of 16 keys as floats, block b at kt + b * 16 * hd, key j of the
   * block at [d * 16 + j]; keys past n in the last block are ignored. The
   * same results as scores on the same keys; hd a multiple of 16. With the
   * keys as register lanes the 16 per-lane chains are 16 accumulators and
   * the tree is vertical adds: no widening or shuffles per query. */
  void (*scores_t)(const float *q, int32_t m, const float *kt, int32_t n,
                   int32_t hd, float *out, size_t out_stride);
  /* In place over n scores, as ggml_soft_max then llama.cpp's F16 V path:
   * s[j] *= scale; max; s[j] = nc_expf_ggml(s[j] - max), summed 16 lanes at
   * a time from position 0 (each group by nc_sum16_tree in float, lanes past
   * n being 0, the group sums added in double); then s[j] = the half
   * rounding of s[j] * (float)(1 / sum). An attention sink (gpt-oss: a
   * learned logit in the denominator only; -INFINITY: none), as ggml's
   * soft_max with sinks: max = max > sink ? max : sink before the
   * exponentials, then expf(sink - max) (libm's) added to the double sum
   * last. */
  void (*softmax)(float *s, int32_t n, float scale, float sink,
                  const float *tab);
  /* nc_attn_lanes_reduce. */
  void (*reduce)(const float *lanes, int32_t hdv, float *out);
} nc_attn_kernels;

/* The builds; the backend tables (kernels.h) say which runs: ref the plain
 * one, avx2 the AVX2 build, avx512 and amx the AVX-512 build. */
const nc_attn_kernels *nc_attn_kernels_plain(void);
const nc_attn_kernels *nc_attn_kernels_avx2(void);   /* NULL when not built */
const nc_attn_kernels *nc_attn_kernels_avx512(void); /* NULL when not built */

/* k's accum_v_blocks, or its accum_v on each block in order when it has
 * none: the same results either way. */
void nc_attn_accum_v_blocks(const nc_attn_kernels *k, const float *p, int32_t m,
                            size_t p_stride, const nc_fp16 *const *blocks,
                            int32_t bt, size_t v_stride, int32_t j0, int32_t n,
                            int32_t hdv, const float *tab, float *lanes,
                            size_t l_stride);

/* The sink's part of a softmax's max and sum (attn_kernels' softmax), for
 * the builds: *max raised to sink, and the term to add to the sum last (0
 * without a sink). */
static inline float nc_attn_sink_max(float max, float sink) {
  return max > sink ? max : sink;
}
double nc_attn_sink_term(float max, float sink);

/* out[d] = the halving-tree sum of lanes[l * hdv + d] over l = 0..15. */
void nc_attn_lanes_reduce(const float *lanes, int32_t hdv, float *out);

#endif
