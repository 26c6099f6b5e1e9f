/* ops: the plain-C row operations (the reference for every SIMD build),
 * rounding as ggml's CPU backend does. */
#include "ops.h"

#include <math.h>

#include "delta_net.h"

float nc_rms_scale(const float *x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++)
    sum += (double)(x[i] * x[i]);
  const float mean = (float)(sum / (double)n);
  return 1.0f / sqrtf(mean + eps);
}

static void rmsnorm_plain(const float *x, const float *w, float *y, int64_t n,
                          float eps) {
  const float scale = nc_rms_scale(x, n, eps);
  if (w) {
    for (int64_t i = 0; i < n; i++)
      y[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] * scale;
  }
}

void nc_rope_yarn_corr_dims(int32_t n_rot, int32_t n_ctx_orig, float freq_base,
                            float beta_fast, float beta_slow, float dims[2]) {
  /* ggml_rope_yarn_corr_dim: n_dims * ln(n_ctx_orig / (beta 2 pi)) /
   * (2 ln base), in float, in ggml's order */
  const float two_ln_base = 2 * logf(freq_base);
  const float pi = 3.14159265358979323846f;
  const float fast = (float)n_rot *
                     logf((float)n_ctx_orig / (beta_fast * 2 * pi)) /
                     two_ln_base;
  const float slow = (float)n_rot *
                     logf((float)n_ctx_orig / (beta_slow * 2 * pi)) /
                     two_ln_base;
  const float start = floorf(fast), end = ceilf(slow);
  dims[0] = start > 0.0f ? start : 0.0f;
  dims[1] = end < (float)(n_rot - 1) ? end : (float)(n_rot - 1);
}

/* YaRN's ramp for pair k: 1 below corr_dims[0], 0 above corr_dims[1]
 * (ggml's rope_yarn_ramp, i0 / 2 = k) */
static float yarn_ramp(const float dims[2], int32_t k) {
  const float span = dims[1] - dims[0];
  const float y = ((float)k - dims[0]) / (span > 0.001f ? span : 0.001f);
  const float c = y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
  return 1.0f - c;
}

/* ggml's rope_yarn for pair k of theta (theta_extrap before the factor):
 * cos and sin times the magnitude mscale. */
static void rope_pair(const nc_rope_params *p, int32_t k, float theta, float ff,
                      float mscale, float *cos_out, float *sin_out) {
  const float extrap = theta / ff;
  const float interp = p->freq_scale * extrap;
  float t = interp;
  if (p->ext_factor != 0.0f) {
    const float mix = yarn_ramp(p->corr_dims, k) * p->ext_factor;
    /* interp * (1 - mix) + extrap * mix, contracted as clang does */
    t = fmaf(interp, 1.0f - mix, extrap * mix);
  }
  *cos_out = cosf(t) * mscale;
  *sin_out = sinf(t) * mscale;
}

static float rope_mscale(const nc_rope_params *p) {
  float mscale = p->attn_factor;
  /* ggml-cpu (clang, FMA) contracts 1 + 0.1 * ln(...) into one fma */
  if (p->ext_factor != 0.0f)
    mscale *= fmaf(0.1f, logf(1.0f / p->freq_scale), 1.0f);
  return mscale;
}

void nc_rope_cache(int32_t pos, const nc_rope_params *p,
                   const float *freq_factors, float *cos_out, float *sin_out) {
  const float theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot);
  const float mscale = rope_mscale(p);
  float theta = (float)pos;
  for (int32_t k = 0; k < p->n_rot / 2; k++) {
    rope_pair(p, k, theta, freq_factors ? freq_factors[k] : 1.0f, mscale,
              &cos_out[k], &sin_out[k]);
    theta *= theta_scale;
  }
}

int nc_mrope_component(int mrope, const int32_t sections[4], int32_t k) {
  const int32_t s0 = sections[0], s1 = sections[1], s2 = sections[2];
  const int32_t dims = s0 + s1 + s2 + sections[3];
  const int32_t sector = dims > 0 ? k % dims : 0;
  if (mrope == NC_MROPE_INTERLEAVED) {
    if (sector % 3 == 1 && sector < 3 * s1) return 1;
    if (sector % 3 == 2 && sector < 3 * s2) return 2;
    if (sector % 3 == 0 && sector < 3 * s0) return 0;
    return 3;
  }
  if (sector < s0) return 0;
  if (sector < s0 + s1) return 1;
  if (sector < s0 + s1 + s2) return 2;
  return 3;
}

void nc_mrope_cache(const int32_t pos[4], const nc_rope_params *p,
                    const float *freq_factors, float *cos_out, float *sin_out) {
  const float theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot);
  const float mscale = rope_mscale(p);
  float theta[4];
  for (int c = 0; c < 4; c++)
    theta[c] = (float)pos[c];
  for (int32_t k = 0; k < p->n_rot / 2; k++) {
    const int c = nc_mrope_component(p->mrope, p->sections, k);
    rope_pair(p, k, theta[c], freq_factors ? freq_factors[k] : 1.0f, mscale,
              &cos_out[k], &sin_out[k]);
    for (int i = 0; i < 4; i++)
      theta[i] *= theta_scale;
  }
}

static void rope_plain(float *x, int32_t n_heads, int32_t head_dim,
                       int32_t n_rot, bool neox, const float *cos_c,
                       const float *sin_c) {
  const int32_t half = n_rot / 2;
  for (int32_t h = 0; h < n_heads; h++) {
    float *v = x + (int64_t)h * head_dim;
    for (int32_t k = 0; k < half; k++) {
      const int32_t i0 = neox ? k : 2 * k;
      const int32_t i1 = neox ? k + half : 2 * k + 1;
      const float x0 = v[i0], x1 = v[i1];
      /* Fused as clang contracts ggml's rotate_pairs (-ffp-contract=on). */
      v[i0] = fmaf(x0, cos_c[k], -(x1 * sin_c[k]));
      v[i1] = fmaf(x0, sin_c[k], x1 * cos_c[k]);
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

float nc_expf_ggml(float x) {
  const float r = 0x1.8p23f;
  const float z = fmaf(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b =
      fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x)); /* x - n ln2 */
  if (isnan(n)) return n;
  if (fabsf(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
  const float u = b * b;
  const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                            fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                       u, fmaf(0x1.ffffecp-1f, b, 1.0f));
  const int e = (int)n;
  if (e < -126 || e > 127) return ldexpf(j, e); /* subnormal or overflow */
  union {
    uint32_t u;
    float f;
  } p2 = {.u = (uint32_t)(e + 127) << 23};
  return j * p2.f; /* exact scaling: one rounding, as scalef */
}

float nc_sum16_tree(const float v[16]) {
  float a[8], b[4], c[2];
  for (int i = 0; i < 8; i++)
    a[i] = v[i] + v[i + 8];
  for (int i = 0; i < 4; i++)
    b[i] = a[i] + a[i + 4];
  for (int i = 0; i < 2; i++)
    c[i] = b[i] + b[i + 2];
  return c[0] + c[1];
}

float nc_silu(float x) {
  return x / (1.0f + expf(-x));
}

static void swiglu_plain(const float *gate, const float *up, float *out,
                         int64_t n) {
  int64_t i = 0;
  for (; i + 15 < n; i += 16)
    for (int k = 0; k < 16; k++) {
      const float g = gate[i + k];
      out[i + k] = (g / (1.0f + nc_expf_ggml(0.0f - g))) * up[i + k];
    }
  for (; i < n; i++)
    out[i] = nc_silu(gate[i]) * up[i];
}

static void silu_plain(float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    x[i] = x[i] / (1.0f + nc_expf_ggml(-x[i]));
}

static void add_plain(float *y, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] += x[i];
}

static void to_f16_plain(const float *x, nc_fp16 *y, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = nc_fp32_to_fp16(x[i]);
}

static void round_f16_plain(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i] = nc_fp16_to_fp32(nc_fp32_to_fp16(x[i]));
}

static void geglu_plain(float *gate, const float *up, int64_t n,
                        const nc_fp16 *gelu) {
  for (int64_t i = 0; i < n; i++) {
    const float g = gate[i], u = up ? up[i] : 1.0f;
    if (g <= -10.0f)
      gate[i] = 0.0f;
    else if (g >= 10.0f)
      gate[i] = g * u;
    else
      gate[i] = nc_fp16_to_fp32(gelu[nc_fp32_to_fp16(g)]) * u;
  }
}

static const nc_ops_kernels PLAIN = {
    .name = "plain",
    .rmsnorm = rmsnorm_plain,
    .rope_apply = rope_plain,
    .swiglu = swiglu_plain,
    .silu = silu_plain,
    .add = add_plain,
    .to_f16 = to_f16_plain,
    .round_f16 = round_f16_plain,
    .geglu = geglu_plain,
    .delta_rule = nc_delta_rule_plain,
};

const nc_ops_kernels *nc_ops_plain(void) {
  return &PLAIN;
}

void nc_rmsnorm(const float *x, const float *w, float *y, int64_t n,
                float eps) {
  rmsnorm_plain(x, w, y, n, eps);
}

void nc_rope_apply(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot,
                   int rope_type, const float *cos_c, const float *sin_c) {
  rope_plain(x, n_heads, head_dim, n_rot, rope_type == NC_ROPE_NEOX, cos_c,
             sin_c);
}

void nc_swiglu(const float *gate, const float *up, float *out, int64_t n) {
  swiglu_plain(gate, up, out, n);
}

void nc_fwht(float *x, int64_t n, int32_t len) {
  const float scale = 1.0f / sqrtf((float)len);
  for (int64_t r = 0; r + len <= n; r += len) {
    float *y = x + r;
    for (int32_t j = 0; j < len; j++)
      y[j] *= scale;
    for (int32_t h = 1; h < len; h <<= 1)
      for (int32_t i = 0; i < len; i += 2 * h)
        for (int32_t j = i; j < i + h; j++) {
          const float u = y[j], v = y[j + h];
          y[j] = u + v;
          y[j + h] = u - v;
        }
  }
}

void nc_add(float *y, const float *x, int64_t n) {
  add_plain(y, x, n);
}

/* ggml_norm, then ggml_mul by w and ggml_add of b (each skipped when NULL):
 * the mean and the variance summed in double, in order; 1 / sqrtf(variance
 * + eps) in float. */
void nc_layernorm_row(const float *x, const float *w, const float *b, float *y,
                      int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++)
    sum += (double)x[i];
  const float mean = (float)(sum / (double)n);
  double sum2 = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const float v = x[i] - mean;
    y[i] = v;
    sum2 += (double)(v * v);
  }
  const float variance = (float)(sum2 / (double)n);
  const float scale = 1.0f / sqrtf(variance + eps);
  for (int64_t i = 0; i < n; i++) {
    float o = y[i] * scale;
    if (w) o *= w[i];
    if (b) o += b[i];
    y[i] = o;
  }
}

/* NC_LAYERNORM_ROWS rows of nc_layernorm_row, step by step together: each
 * row's sums the same additions in the same order, the eight rows' chains
 * in registers side by side. */
#define LN_EACH(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7)
static void layernorm_block(const float *x, const float *w, const float *b,
                            float *y, int64_t n, float eps) {
  _Static_assert(NC_LAYERNORM_ROWS == 8, "LN_EACH names eight rows");
#define LN_ROW(r)                                                              \
  const float *x##r = x + (r)*n;                                               \
  float *y##r = y + (r)*n;                                                     \
  double s##r = 0.0, q##r = 0.0;
  LN_EACH(LN_ROW)
#undef LN_ROW
  for (int64_t i = 0; i < n; i++) {
#define LN_SUM(r) s##r += (double)x##r[i];
    LN_EACH(LN_SUM)
#undef LN_SUM
  }
#define LN_MEAN(r) const float m##r = (float)(s##r / (double)n);
  LN_EACH(LN_MEAN)
#undef LN_MEAN
  for (int64_t i = 0; i < n; i++) {
#define LN_VAR(r)                                                              \
  {                                                                            \
    const float v = x##r[i] - m##r;                                            \
    y##r[i] = v;                                                               \
    q##r += (double)(v * v);                                                   \
  }
    LN_EACH(LN_VAR)
#undef LN_VAR
  }
  float *rows[NC_LAYERNORM_ROWS] = {y0, y1, y2, y3, y4, y5, y6, y7};
  const double sums2[NC_LAYERNORM_ROWS] = {q0, q1, q2, q3, q4, q5, q6, q7};
  for (int r = 0; r < NC_LAYERNORM_ROWS; r++) {
    const float variance = (float)(sums2[r] / (double)n);
    const float scale = 1.0f / sqrtf(variance + eps);
    float *yr = rows[r];
    /* o = y * scale, then * w, then + b: the row's order, the tests on w
     * and b out of the loop */
    if (w && b)
      for (int64_t i = 0; i < n; i++)
        yr[i] = yr[i] * scale * w[i] + b[i];
    else if (w)
      for (int64_t i = 0; i < n; i++)
        yr[i] = yr[i] * scale * w[i];
    else if (b)
      for (int64_t i = 0; i < n; i++)
        yr[i] = yr[i] * scale + b[i];
    else
      for (int64_t i = 0; i < n; i++)
        yr[i] = yr[i] * scale;
  }
}
#undef LN_EACH

void nc_layernorm_rows(const float *x, const float *w, const float *b, float *y,
                       int64_t rows, int64_t n, float eps) {
  int64_t r = 0;
  for (; r + NC_LAYERNORM_ROWS <= rows; r += NC_LAYERNORM_ROWS)
    layernorm_block(x + r * n, w, b, y + r * n, n, eps);
  for (; r < rows; r++)
    nc_layernorm_row(x + r * n, w, b, y + r * n, n, eps);
}
