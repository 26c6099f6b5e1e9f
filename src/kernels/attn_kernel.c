/* attn_kernel: the plain build (the backend tables choose the builds). */
#include "attn_kernel.h"

#include <math.h>

#include "ops.h"

static void attn_scores_plain(const float *q, int32_t m, const nc_fp16 *k,
                              size_t k_stride, int32_t n, int32_t hd,
                              const float *tab, float *out, size_t out_stride) {
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

static void attn_accum_v_plain(const float *p, int32_t m, size_t p_stride,
                               const nc_fp16 *v, size_t v_stride, int32_t j0,
                               int32_t n, int32_t hdv, const float *tab,
                               float *lanes, size_t l_stride) {
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

double nc_attn_sink_term(float max, float sink) {
  return sink == -INFINITY ? 0.0 : (double)expf(sink - max);
}

static void attn_softmax_plain(float *s, int32_t n, float scale, float sink,
                               const float *tab) {
  float max = -INFINITY;
  for (int32_t j = 0; j < n; j++) {
    s[j] *= scale;
    if (s[j] > max) max = s[j];
  }
  max = nc_attn_sink_max(max, sink);
  double sum = 0.0;
  for (int32_t j0 = 0; j0 < n; j0 += NC_ATTN_LANES) {
    float lane[NC_ATTN_LANES];
    for (int32_t k = 0; k < NC_ATTN_LANES; k++)
      lane[k] = j0 + k < n ? (s[j0 + k] = nc_expf_ggml(s[j0 + k] - max)) : 0;
    sum += (double)nc_sum16_tree(lane);
  }
  sum += nc_attn_sink_term(max, sink);
  const float inv = (float)(1.0 / sum);
  for (int32_t j = 0; j < n; j++)
    s[j] = tab[nc_fp32_to_fp16(s[j] * inv)];
}

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
