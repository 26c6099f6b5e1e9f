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

/* _mm512_reduce_add_ps: lane i + lane i + 8, then + 4, + 2, + 1. */
static float tree16(const float v[16]) {
  float x[16];
  for (int i = 0; i < 16; i++)
    x[i] = v[i];
  for (int half = 8; half >= 1; half /= 2)
    for (int i = 0; i < half; i++)
      x[i] = x[i] + x[i + half];
  return x[0];
}

float nc_ref_dot_f16_tinyblas(int64_t n, const nc_fp16 *w, const nc_fp16 *a) {
  if (n % 16 != 0) return nc_ref_dot_f16_vec16(n, w, a);
  float lane[16] = {0};
  for (int64_t i = 0; i < n; i += 16)
    for (int j = 0; j < 16; j++)
      lane[j] =
          fmaf(nc_fp16_to_fp32(w[i + j]), nc_fp16_to_fp32(a[i + j]), lane[j]);
  return tree16(lane);
}

float nc_ref_dot_f16_vec16(int64_t n, const nc_fp16 *w, const nc_fp16 *a) {
  float lane[64] = {0};
  const int64_t n64 = n / 64 * 64;
  for (int64_t i = 0; i < n64; i += 64)
    for (int j = 0; j < 64; j++)
      lane[j] =
          fmaf(nc_fp16_to_fp32(w[i + j]), nc_fp16_to_fp32(a[i + j]), lane[j]);
  float v[16];
  for (int l = 0; l < 16; l++)
    v[l] = (lane[l] + lane[32 + l]) + (lane[16 + l] + lane[48 + l]);
  double sum = tree16(v);
  for (int64_t i = n64; i < n; i++)
    sum += (double)(nc_fp16_to_fp32(w[i]) * nc_fp16_to_fp32(a[i]));
  return (float)sum;
}
