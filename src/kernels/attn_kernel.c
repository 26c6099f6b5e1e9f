/* attn_kernel: the plain build and the run-time choice. */
#define ATTN_SUFFIX plain
#include "attn_kernel_impl.h"

#include <stdbool.h>

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

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static bool cpu_has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

const nc_attn_kernels *nc_attn_kernels_best(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") &&
                    __builtin_cpu_supports("fma") && cpu_has_f16c();
  const nc_attn_kernels *z = nc_attn_kernels_avx512();
  if (z && avx2 && __builtin_cpu_supports("avx512f")) return z;
  const nc_attn_kernels *v = nc_attn_kernels_avx2();
  if (v && avx2) return v;
  const nc_attn_kernels *f = nc_attn_kernels_fma();
  if (f && __builtin_cpu_supports("fma")) return f;
#endif
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
