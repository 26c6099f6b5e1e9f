/* ops: plain-C row operations, rounding as ggml's CPU backend does. */
#include "ops.h"

#include <math.h>

#include "model.h"

void nc_rmsnorm(const float *x, const float *w, float *y, int64_t n,
                float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++)
    sum += (double)(x[i] * x[i]);
  const float mean = (float)(sum / (double)n);
  const float scale = 1.0f / sqrtf(mean + eps);
  if (w) {
    for (int64_t i = 0; i < n; i++)
      y[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] * scale;
  }
}

void nc_rope_cache(int32_t pos, int32_t n_rot, float freq_base,
                   float freq_scale, const float *freq_factors, float *cos_out,
                   float *sin_out) {
  const float theta_scale = powf(freq_base, -2.0f / (float)n_rot);
  float theta = (float)pos;
  for (int32_t k = 0; k < n_rot / 2; k++) {
    const float ff = freq_factors ? freq_factors[k] : 1.0f;
    const float t = freq_scale * (theta / ff);
    cos_out[k] = cosf(t);
    sin_out[k] = sinf(t);
    theta *= theta_scale;
  }
}

void nc_rope_apply(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot,
                   int rope_type, const float *cos_c, const float *sin_c) {
  const int32_t half = n_rot / 2;
  for (int32_t h = 0; h < n_heads; h++) {
    float *v = x + (int64_t)h * head_dim;
    for (int32_t k = 0; k < half; k++) {
      const int32_t i0 = rope_type == NC_ROPE_NEOX ? k : 2 * k;
      const int32_t i1 = rope_type == NC_ROPE_NEOX ? k + half : 2 * k + 1;
      const float x0 = v[i0], x1 = v[i1];
      v[i0] = x0 * cos_c[k] - x1 * sin_c[k];
      v[i1] = x0 * sin_c[k] + x1 * cos_c[k];
    }
  }
}

void nc_softmax(float *x, int64_t n) {
  if (n <= 0) return;
  float max = -INFINITY;
  for (int64_t i = 0; i < n; i++)
    if (x[i] > max) max = x[i];
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const float e = expf(x[i] - max);
    x[i] = e;
    sum += (double)e;
  }
  const float inv = (float)(1.0 / sum);
  for (int64_t i = 0; i < n; i++)
    x[i] *= inv;
}

float nc_silu(float x) {
  return x / (1.0f + expf(-x));
}

void nc_swiglu(const float *gate, const float *up, float *out, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    out[i] = nc_silu(gate[i]) * up[i];
}

void nc_add(float *y, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] += x[i];
}
