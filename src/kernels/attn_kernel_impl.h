/* attn_kernel_impl: the body of attn_kernel's plain loops, included by
 * attn_kernel.c with ATTN_SUFFIX naming the build. Not a public header. */
#include <math.h>

#include "attn_kernel.h"
#include "ops.h"

#define ATTN_CAT2(a, b) a##b
#define ATTN_CAT(a, b) ATTN_CAT2(a, b)
#define ATTN_FN(name) ATTN_CAT(name, ATTN_SUFFIX)

static void ATTN_FN(attn_scores_)(const float *q, int32_t m, const nc_fp16 *k,
                                  size_t k_stride, int32_t n, int32_t hd,
                                  const float *tab, float *out,
                                  size_t out_stride) {
  for (int32_t i = 0; i < m; i++)
    for (int32_t j = 0; j < n; j++) {
      const float *qi = q + (size_t)i * (size_t)hd;
      const nc_fp16 *kr = k + (size_t)j * k_stride;
      float acc[NC_ATTN_LANES] = {0};
      for (int32_t d = 0; d < hd; d++)
        acc[d % NC_ATTN_LANES] =
            fmaf(qi[d], tab[kr[d]], acc[d % NC_ATTN_LANES]);
      out[(size_t)i * out_stride + (size_t)j] = nc_sum16_tree(acc);
    }
}

static void ATTN_FN(attn_accum_v_)(const float *p, int32_t m, size_t p_stride,
                                   const nc_fp16 *v, size_t v_stride,
                                   int32_t j0, int32_t n, int32_t hdv,
                                   const float *tab, float *lanes,
                                   size_t l_stride) {
  for (int32_t i = 0; i < m; i++)
    for (int32_t j = 0; j < n; j++) {
      const nc_fp16 *vr = v + (size_t)j * v_stride;
      const float pj = p[(size_t)i * p_stride + (size_t)j];
      float *ln = lanes + (size_t)i * l_stride +
                  (size_t)((j0 + j) % NC_ATTN_LANES) * (size_t)hdv;
      for (int32_t d = 0; d < hdv; d++)
        ln[d] = fmaf(pj, tab[vr[d]], ln[d]);
    }
}

static void ATTN_FN(attn_softmax_)(float *s, int32_t n, float scale,
                                   const float *tab) {
  float max = -INFINITY;
  for (int32_t j = 0; j < n; j++) {
    s[j] *= scale;
    if (s[j] > max) max = s[j];
  }
  double sum = 0.0;
  for (int32_t j0 = 0; j0 < n; j0 += NC_ATTN_LANES) {
    float lane[NC_ATTN_LANES];
    for (int32_t k = 0; k < NC_ATTN_LANES; k++)
      lane[k] = j0 + k < n ? (s[j0 + k] = nc_expf_ggml(s[j0 + k] - max)) : 0;
    sum += (double)nc_sum16_tree(lane);
  }
  const float inv = (float)(1.0 / sum);
  for (int32_t j = 0; j < n; j++)
    s[j] = tab[nc_fp32_to_fp16(s[j] * inv)];
}
