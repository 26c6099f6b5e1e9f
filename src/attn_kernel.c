/* attn_kernel: the plain build and the run-time choice. */
#define ATTN_SUFFIX plain
#include "attn_kernel_impl.h"

static const nc_attn_kernels PLAIN = {
    .name = "plain",
    .scores = attn_scores_plain,
    .accum_v = attn_accum_v_plain,
};

const nc_attn_kernels *nc_attn_kernels_plain(void) {
  return &PLAIN;
}

const nc_attn_kernels *nc_attn_kernels_best(void) {
#if defined(__x86_64__) || defined(__i386__)
  const nc_attn_kernels *f = nc_attn_kernels_fma();
  __builtin_cpu_init();
  if (f && __builtin_cpu_supports("fma")) return f;
#endif
  return &PLAIN;
}

void nc_attn_lanes_reduce(const float *lanes, int32_t hdv, float *out) {
  for (int32_t d = 0; d < hdv; d++)
    out[d] = nc_sum16_tree(lanes + (size_t)d * NC_ATTN_LANES);
}
