/* attn_kernel: the plain build (the backend tables choose the builds). */
#define ATTN_SUFFIX plain
#include "attn_kernel_impl.h"

static const nc_attn_kernels PLAIN = {
    .name = "plain",
    .scores = attn_scores_plain,
    .accum_v = attn_accum_v_plain,
    .softmax = attn_softmax_plain,
    .reduce = nc_attn_lanes_reduce,
};

const nc_attn_kernels *nc_attn_kernels_plain(void) {
  return &PLAIN;
}

void nc_attn_accum_v_blocks(const nc_attn_kernels *k, const float *p, int32_t m,
                            size_t p_stride, const nc_fp16 *const *blocks,
                            int32_t bt, size_t v_stride, int32_t j0, int32_t n,
                            int32_t hdv, const float *tab, float *lanes,
                            size_t l_stride) {
  if (k->accum_v_blocks) {
    k->accum_v_blocks(p, m, p_stride, blocks, bt, v_stride, j0, n, hdv, tab,
                      lanes, l_stride);
    return;
  }
  for (int32_t j = 0; j < n; j += bt)
    k->accum_v(p + j, m, p_stride, blocks[j / bt], v_stride, j0 + j,
               n - j < bt ? n - j : bt, hdv, tab, lanes, l_stride);
}

void nc_attn_lanes_reduce(const float *lanes, int32_t hdv, float *out) {
  for (int32_t d = 0; d < hdv; d++) {
    float v[NC_ATTN_LANES];
    for (int32_t l = 0; l < NC_ATTN_LANES; l++)
      v[l] = lanes[(size_t)l * (size_t)hdv + (size_t)d];
    out[d] = nc_sum16_tree(v);
  }
}
