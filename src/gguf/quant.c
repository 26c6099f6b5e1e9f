/* quant: the type table, half/bfloat16 conversions and the activation
 * quantizers. Dequantization lives in quant_dequant.c. */
#include "quant.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 layout");
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1 layout");
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0 layout");
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1 layout");
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 layout");
_Static_assert(sizeof(block_q8_1) == 36, "block_q8_1 layout");
_Static_assert(sizeof(block_q2_K) == 84, "block_q2_K layout");
_Static_assert(sizeof(block_q3_K) == 110, "block_q3_K layout");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K layout");
_Static_assert(sizeof(block_q5_K) == 176, "block_q5_K layout");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K layout");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K layout");
_Static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl layout");
_Static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs layout");
_Static_assert(sizeof(block_mxfp4) == 17, "block_mxfp4 layout");
_Static_assert(sizeof(block_iq2_xxs) == 66, "block_iq2_xxs layout");
_Static_assert(sizeof(block_iq2_xs) == 74, "block_iq2_xs layout");
_Static_assert(sizeof(block_iq2_s) == 82, "block_iq2_s layout");
_Static_assert(sizeof(block_iq3_xxs) == 98, "block_iq3_xxs layout");
_Static_assert(sizeof(block_iq3_s) == 110, "block_iq3_s layout");
_Static_assert(sizeof(block_iq1_s) == 50, "block_iq1_s layout");
_Static_assert(sizeof(block_iq1_m) == 56, "block_iq1_m layout");
_Static_assert(sizeof(block_tq1_0) == 54, "block_tq1_0 layout");
_Static_assert(sizeof(block_tq2_0) == 66, "block_tq2_0 layout");
_Static_assert(sizeof(block_nvfp4) == 36, "block_nvfp4 layout");
_Static_assert(sizeof(block_q1_0) == 18, "block_q1_0 layout");
_Static_assert(sizeof(block_q2_0) == 18, "block_q2_0 layout");

/* Every ggml type id with its block geometry (ggml's type_traits). Ids with
 * a NULL name were removed from ggml and are unknown. */
#define T(id, nm, bs, ts, sup, vdt)                                            \
  [id] = {.name = nm,                                                          \
          .block_size = bs,                                                    \
          .type_size = ts,                                                     \
          .supported = sup,                                                    \
          .vec_dot_type = vdt}

static const nc_type_traits k_traits[NC_TYPE_COUNT] = {
    T(0, "F32", 1, 4, true, NC_TYPE_F32),
    T(1, "F16", 1, 2, true, NC_TYPE_F16),
    T(2, "Q4_0", 32, 18, true, NC_TYPE_Q8_0),
    T(3, "Q4_1", 32, 20, true, NC_TYPE_Q8_1),
    T(6, "Q5_0", 32, 22, true, NC_TYPE_Q8_0),
    T(7, "Q5_1", 32, 24, true, NC_TYPE_Q8_1),
    T(8, "Q8_0", 32, 34, true, NC_TYPE_Q8_0),
    T(9, "Q8_1", 32, 36, true, NC_TYPE_Q8_1),
    T(10, "Q2_K", 256, 84, true, NC_TYPE_Q8_K),
    T(11, "Q3_K", 256, 110, true, NC_TYPE_Q8_K),
    T(12, "Q4_K", 256, 144, true, NC_TYPE_Q8_K),
    T(13, "Q5_K", 256, 176, true, NC_TYPE_Q8_K),
    T(14, "Q6_K", 256, 210, true, NC_TYPE_Q8_K),
    T(15, "Q8_K", 256, 292, true, NC_TYPE_Q8_K),
    T(16, "IQ2_XXS", 256, 66, true, NC_TYPE_Q8_K),
    T(17, "IQ2_XS", 256, 74, true, NC_TYPE_Q8_K),
    T(18, "IQ3_XXS", 256, 98, true, NC_TYPE_Q8_K),
    T(19, "IQ1_S", 256, 50, true, NC_TYPE_Q8_K),
    T(20, "IQ4_NL", 32, 18, true, NC_TYPE_Q8_0),
    T(21, "IQ3_S", 256, 110, true, NC_TYPE_Q8_K),
    T(22, "IQ2_S", 256, 82, true, NC_TYPE_Q8_K),
    T(23, "IQ4_XS", 256, 136, true, NC_TYPE_Q8_K),
    T(24, "I8", 1, 1, false, NC_TYPE_F32),
    T(25, "I16", 1, 2, false, NC_TYPE_F32),
    T(26, "I32", 1, 4, false, NC_TYPE_F32),
    T(27, "I64", 1, 8, false, NC_TYPE_F32),
    T(28, "F64", 1, 8, false, NC_TYPE_F32),
    T(29, "IQ1_M", 256, 56, true, NC_TYPE_Q8_K),
    T(30, "BF16", 1, 2, true, NC_TYPE_BF16),
    T(34, "TQ1_0", 256, 54, true, NC_TYPE_Q8_K),
    T(35, "TQ2_0", 256, 66, true, NC_TYPE_Q8_K),
    T(39, "MXFP4", 32, 17, true, NC_TYPE_Q8_0),
    T(40, "NVFP4", 64, 36, true, NC_TYPE_Q8_0),
    T(41, "Q1_0", 128, 18, true, NC_TYPE_Q8_0),
    T(42, "Q2_0", 64, 18, true, NC_TYPE_Q8_0),
};
#undef T

const nc_type_traits *nc_type_traits_of(uint32_t type) {
  if (type >= NC_TYPE_COUNT || k_traits[type].name == NULL) return NULL;
  return &k_traits[type];
}

const char *nc_type_name(uint32_t type) {
  const nc_type_traits *t = nc_type_traits_of(type);
  return t ? t->name : "?";
}

size_t nc_row_size(nc_type type, int64_t n) {
  const nc_type_traits *t = nc_type_traits_of((uint32_t)type);
  if (!t || n < 0 || n % t->block_size != 0) return 0;
  uint64_t blocks = (uint64_t)(n / t->block_size);
  if (blocks > SIZE_MAX / t->type_size) return 0;
  return (size_t)blocks * t->type_size;
}

/* ------------------------------------------------------- half / bfloat16 */

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32_from(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float nc_fp16_to_fp32(nc_fp16 h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    /* zero or subnormal: mant * 2^-24, exact in f32 */
    float v = (float)mant * 0x1p-24f;
    return f32_from(f32_bits(v) | sign);
  }
  if (exp == 31) return f32_from(sign | 0x7f800000u | (mant << 13));
  return f32_from(sign | ((exp + 112) << 23) | (mant << 13));
}

/* Shifts m right by s (1..31) rounding to nearest, ties to even. */
static uint32_t shr_rne(uint32_t m, unsigned s) {
  uint32_t r = m >> s;
  uint32_t rem = m & ((1u << s) - 1);
  uint32_t half = 1u << (s - 1);
  if (rem > half || (rem == half && (r & 1))) r++;
  return r;
}

nc_fp16 nc_fp32_to_fp16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;  /* NaN: quiet, like ggml */
  if (a >= 0x47800000u) return sign | 0x7c00u; /* >= 2^16 (and inf) */
  uint32_t e = a >> 23;
  if (e < 102) return sign; /* below half the smallest subnormal */
  uint32_t m = (a & 0x7fffffu) | 0x800000u;
  if (e < 113) /* half subnormal: |x| / 2^-24 = m * 2^(e - 126) */
    return sign | (uint16_t)shr_rne(m, 126 - e);
  /* normal: a carry out of the mantissa bumps the exponent, up to inf */
  uint32_t r = ((e - 112) << 10) + shr_rne(a & 0x7fffffu, 13);
  return sign | (uint16_t)r;
}

float nc_bf16_to_fp32(nc_bf16 h) {
  return f32_from((uint32_t)h << 16);
}

nc_bf16 nc_fp32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (nc_bf16)((u >> 16) | 64);
  return (nc_bf16)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

/* ------------------------------------------------ activation quantizers */

/* Rounds to nearest, ties to even, and clamps to [-127, 127]. NaN gives 0.
 * Inputs are x * (127 / amax), so |v| <= 127 (+ an ulp) for finite rows. */
static int8_t round_q8(float v) {
  if (!(v == v)) return 0;
  if (v > 127.0f) return 127;
  if (v < -127.0f) return -127;
  /* 1.5 * 2^23: adding it leaves the integer part in the low mantissa bits
   * with the current (nearest-even) rounding. */
  float t = v + 12582912.0f;
  return (int8_t)((int32_t)(f32_bits(t) & 0x7fffff) - 0x400000);
}

/* Block amax the way the x86 kernel finds it: NaN-free max of |x|. */
static float block_amax(const float *x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; j++) {
    float a = fabsf(x[j]);
    if (a > amax) amax = a;
  }
  return amax;
}

/* Q8_0 and Q8_1 follow llama.cpp's x86 (AVX/AVX2) quantize_row_q8_0/q8_1,
 * which is what a native llama.cpp build on this class of CPU runs, rather
 * than the portable quantize_row_q8_*_ref: d = amax / 127 stored as half,
 * id = 127 / amax (not 1 / d), q = round-to-nearest-even(x * id). The ref
 * version uses 1 / d and roundf; both differ from ours in the last bit of
 * x * id and on exact .5 ties only, but matching the x86 path keeps our
 * logits closest to the golden logits produced by native llama.cpp. */
static void quantize_q8_0(const float *x, void *vy, int64_t n) {
  block_q8_0 *y = vy;
  for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
    float amax = block_amax(x, QK8_0);
    float d = amax / 127.0f;
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    y[i].d = nc_fp32_to_fp16(d);
    for (int j = 0; j < QK8_0; j++)
      y[i].qs[j] = round_q8(x[j] * id);
  }
}

/* s = half(d * sum(q)), as the AVX2 kernel computes it (int sum, f32 d). */
static void quantize_q8_1(const float *x, void *vy, int64_t n) {
  block_q8_1 *y = vy;
  for (int64_t i = 0; i < n / QK8_1; i++, x += QK8_1) {
    float amax = block_amax(x, QK8_1);
    float d = amax / 127.0f;
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    y[i].d = nc_fp32_to_fp16(d);
    for (int j = 0; j < QK8_1; j++) {
      y[i].qs[j] = round_q8(x[j] * id);
      sum += y[i].qs[j];
    }
    y[i].s = nc_fp32_to_fp16(d * (float)sum);
  }
}

/* Q8_K: llama.cpp uses the scalar reference on every CPU. iscale = -127 /
 * (signed value of largest magnitude), nearest-even rounding, q capped at
 * 127, d = 1 / iscale (may be negative), bsums = sums of 16 quants. */
static void quantize_q8_k(const float *x, void *vy, int64_t n) {
  block_q8_K *y = vy;
  for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK_K; j++) {
      float a = fabsf(x[j]);
      if (a > amax) {
        amax = a;
        max = x[j];
      }
    }
    if (amax == 0.0f || isinf(amax)) {
      memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < QK_K; j++)
      y[i].qs[j] = round_q8(iscale * x[j]);
    for (int k = 0; k < QK_K / 16; k++) {
      int sum = 0;
      for (int l = 0; l < 16; l++)
        sum += y[i].qs[16 * k + l];
      y[i].bsums[k] = (int16_t)sum;
    }
    y[i].d = 1.0f / iscale;
  }
}

/* Q4_0: ggml's quantize_row_q4_0_ref (what llama.cpp runs on every CPU,
 * also when it stores a q4_0 KV cache): d = (the signed value of largest
 * magnitude) / -8, id = 1 / d, q = min(15, trunc(x * id + 8.5)). */
static uint8_t nibble_q4(float v) {
  const float t = v + 8.5f;
  if (!(t >= 0.0f)) return 0; /* NaN or below: the x86 conversion gives 0 */
  return t >= 15.0f ? 15 : (uint8_t)t;
}

static void quantize_q4_0(const float *x, void *vy, int64_t n) {
  block_q4_0 *y = vy;
  for (int64_t i = 0; i < n / QK4_0; i++, x += QK4_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK4_0; j++)
      if (amax < fabsf(x[j])) {
        amax = fabsf(x[j]);
        max = x[j];
      }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = nc_fp32_to_fp16(d);
    for (int j = 0; j < QK4_0 / 2; j++)
      y[i].qs[j] = (uint8_t)(nibble_q4(x[j] * id) |
                             (nibble_q4(x[j + QK4_0 / 2] * id) << 4));
  }
}

void nc_quantize_row(nc_type type, const float *src, void *dst, int64_t n) {
  if (n <= 0) return;
  switch (type) {
  case NC_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); return;
  case NC_TYPE_F16: {
    nc_fp16 *d = dst;
    for (int64_t i = 0; i < n; i++)
      d[i] = nc_fp32_to_fp16(src[i]);
    return;
  }
  case NC_TYPE_BF16: {
    nc_bf16 *d = dst;
    for (int64_t i = 0; i < n; i++)
      d[i] = nc_fp32_to_bf16(src[i]);
    return;
  }
  case NC_TYPE_Q8_0: quantize_q8_0(src, dst, n); return;
  case NC_TYPE_Q4_0: quantize_q4_0(src, dst, n); return;
  case NC_TYPE_Q8_1: quantize_q8_1(src, dst, n); return;
  case NC_TYPE_Q8_K: quantize_q8_k(src, dst, n); return;
  default: return; /* not an activation format: nothing written */
  }
}
