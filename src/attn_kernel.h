/* attn_kernel: the inner loops of attention over F16 keys and values, in
 * the float order of llama.cpp's CPU path for an F16 KV cache (its tinyBLAS
 * F16 GEMM: 16 lanes, each a chain of fused multiply-adds, then a halving
 * tree). Every result is a fixed function of its own inputs: the same bits
 * from both builds below, whatever the batch or thread count.
 *
 * Two builds of one source: plain C (fmaf from libm) and one compiled with
 * -mfma, chosen at run time when the CPU has FMA. fmaf is exactly rounded,
 * so both give identical results. */
#ifndef NC_ATTN_KERNEL_H
#define NC_ATTN_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "quant.h"

#define NC_ATTN_LANES 16

typedef struct nc_attn_kernels {
  const char *name;
  /* out[j] = q . k_j for n keys (k_j = k + j * k_stride halves), hd values;
   * q already rounded to F16 and widened; tab maps half bits to float. */
  void (*scores)(const float *q, const nc_fp16 *k, size_t k_stride, int32_t n,
                 int32_t hd, const float *tab, float *out);
  /* lanes[d * 16 + (j0 + j) % 16] += p[j] * v_j[d] (fused) for n rows of V
   * starting at position j0; lanes holds hdv * 16 floats. */
  void (*accum_v)(const float *p, const nc_fp16 *v, size_t v_stride, int32_t j0,
                  int32_t n, int32_t hdv, const float *tab, float *lanes);
} nc_attn_kernels;

const nc_attn_kernels *nc_attn_kernels_plain(void);
const nc_attn_kernels *nc_attn_kernels_fma(void); /* NULL when not built */
/* The FMA build when this CPU has FMA, else the plain one. */
const nc_attn_kernels *nc_attn_kernels_best(void);

/* out[d] = the halving-tree sum of lanes[d * 16 .. d * 16 + 15]. */
void nc_attn_lanes_reduce(const float *lanes, int32_t hdv, float *out);

#endif
