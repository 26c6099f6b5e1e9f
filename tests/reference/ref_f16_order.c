/* ref_f16_order: see ref_f16_order.h. */
#include "ref_f16_order.h"

#include <math.h>

/* llama.cpp's hsum_float_8: (k + k+4), then (0+2, 1+3), then the two. */
static float hsum8(const float v[8]) {
  float r[4];
  for (int k = 0; k < 4; k++)
    r[k] = v[k + 4] + v[k];
  return (r[0] + r[2]) + (r[1] + r[3]);
}

float nc_ref_dot_f16_lanes(int64_t n, const nc_fp16 *w, const nc_fp16 *a) {
  float lane[32] = {0};
  const int64_t n32 = n / 32 * 32;
  for (int64_t i = 0; i < n32; i += 32)
    for (int j = 0; j < 32; j++)
      lane[j] =
          fmaf(nc_fp16_to_fp32(w[i + j]), nc_fp16_to_fp32(a[i + j]), lane[j]);
  float v[8];
  for (int l = 0; l < 8; l++)
    v[l] = (lane[l] + lane[8 + l]) + (lane[16 + l] + lane[24 + l]);
  float sum = hsum8(v);
  for (int64_t i = n32; i < n; i++)
    sum = fmaf(nc_fp16_to_fp32(w[i]), nc_fp16_to_fp32(a[i]), sum);
  return sum;
}
