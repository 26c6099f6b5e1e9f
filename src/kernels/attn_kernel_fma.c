/* attn_kernel_fma: attn_kernel's loops compiled with -mfma (see
 * mk/model.mk), so that fmaf is one instruction. Same results as plain. */
#if defined(__FMA__)
#define ATTN_SUFFIX fma
#include "attn_kernel_impl.h"

static const nc_attn_kernels FMA = {
    .name = "fma",
    .scores = attn_scores_fma,
    .accum_v = attn_accum_v_fma,
    .softmax = attn_softmax_fma,
    .reduce = nc_attn_lanes_reduce,
};

const nc_attn_kernels *nc_attn_kernels_fma(void) {
  return &FMA;
}
#else
#include "attn_kernel.h"

const nc_attn_kernels *nc_attn_kernels_fma(void) {
  return NULL;
}
#endif
