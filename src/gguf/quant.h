/* quant: tensor element types (ggml's ids and block layouts), conversions
 * between f32 and half/bfloat16, dequantization of every supported type and
 * quantization of activation rows to the dot partner formats (Q8_0, Q8_1,
 * Q8_K), exactly as llama.cpp's reference C code rounds them. */
#ifndef NC_QUANT_H
#define NC_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum nc_type {
  NC_TYPE_F32 = 0,
  NC_TYPE_F16 = 1,
  NC_TYPE_Q4_0 = 2,
  NC_TYPE_Q4_1 = 3,
  NC_TYPE_Q5_0 = 6,
  NC_TYPE_Q5_1 = 7,
  NC_TYPE_Q8_0 = 8,
  NC_TYPE_Q8_1 = 9,
  NC_TYPE_Q2_K = 10,
  NC_TYPE_Q3_K = 11,
  NC_TYPE_Q4_K = 12,
  NC_TYPE_Q5_K = 13,
  NC_TYPE_Q6_K = 14,
  NC_TYPE_Q8_K = 15,
  NC_TYPE_IQ2_XXS = 16,
  NC_TYPE_IQ2_XS = 17,
  NC_TYPE_IQ3_XXS = 18,
  NC_TYPE_IQ1_S = 19,
  NC_TYPE_IQ4_NL = 20,
  NC_TYPE_IQ3_S = 21,
  NC_TYPE_IQ2_S = 22,
  NC_TYPE_IQ4_XS = 23,
  NC_TYPE_IQ1_M = 29,
  NC_TYPE_BF16 = 30,
  NC_TYPE_TQ1_0 = 34,
  NC_TYPE_TQ2_0 = 35,
  NC_TYPE_MXFP4 = 39,
  NC_TYPE_NVFP4 = 40,
  NC_TYPE_Q1_0 = 41,
  NC_TYPE_Q2_0 = 42,
  NC_TYPE_COUNT = 43 /* ids below this are known to ggml (some removed) */
} nc_type;

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK_K 256
#define QK4_NL 32
#define QK_MXFP4 32
#define QK_NVFP4 64
#define QK1_0 128
#define QK2_0 64
#define K_SCALE_SIZE 12

typedef uint16_t nc_fp16;
typedef uint16_t nc_bf16;

/* Packed block layouts (byte-identical to ggml's). */
/* one line per block layout */
/* clang-format off */
typedef struct { nc_fp16 d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
typedef struct { nc_fp16 d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;
typedef struct { nc_fp16 d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;
typedef struct { nc_fp16 d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
typedef struct { nc_fp16 d; int8_t qs[QK8_0]; } block_q8_0;
typedef struct { nc_fp16 d, s; int8_t qs[QK8_1]; } block_q8_1;
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; nc_fp16 d, dmin; } block_q2_K;
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; nc_fp16 d; } block_q3_K;
typedef struct { nc_fp16 d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K;
typedef struct { nc_fp16 d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; nc_fp16 d; } block_q6_K;
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;
typedef struct { nc_fp16 d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;
typedef struct { nc_fp16 d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; } block_iq4_xs;
typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4;
typedef struct { nc_fp16 d; uint16_t qs[QK_K / 8]; } block_iq2_xxs;
typedef struct { nc_fp16 d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; } block_iq2_xs;
typedef struct { nc_fp16 d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; } block_iq2_s;
typedef struct { nc_fp16 d; uint8_t qs[3 * QK_K / 8]; } block_iq3_xxs;
typedef struct { nc_fp16 d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64]; } block_iq3_s;
typedef struct { nc_fp16 d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; } block_iq1_s;
typedef struct { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; } block_iq1_m;
typedef struct { uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; uint8_t qh[QK_K / 64]; nc_fp16 d; } block_tq1_0;
typedef struct { uint8_t qs[QK_K / 4]; nc_fp16 d; } block_tq2_0;
typedef struct { uint8_t d[QK_NVFP4 / 16]; uint8_t qs[QK_NVFP4 / 2]; } block_nvfp4;
typedef struct { nc_fp16 d; uint8_t qs[QK1_0 / 8]; } block_q1_0;
typedef struct { nc_fp16 d; uint8_t qs[QK2_0 / 4]; } block_q2_0;
/* clang-format on */

/* Scale and min of sub-block j (0..7) of a Q4_K/Q5_K superblock: 6-bit
 * values packed in its 12 scale bytes q. */
static inline void nc_k4_scale_min(int j, const uint8_t *q, uint8_t *sc,
                                   uint8_t *m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (uint8_t)((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

/* The 16 values a 4-bit IQ4_NL / IQ4_XS code stands for (non-linear, from
 * -127 to 113), and MXFP4's: the FP4 (E2M1) values 0, 0.5, 1, 1.5, 2, 3, 4,
 * 6 and their negatives, doubled to integers (the block scale is halved to
 * match, see nc_e8m0_to_fp32_half). Defined in quant_dequant.c. */
extern const int8_t nc_iq4nl_values[16];
extern const int8_t nc_mxfp4_values[16];

/* MXFP4's E8M0 block scale 2^(e - 127), halved (the values above are
 * doubled): 2^(e - 128). Every e is finite (e = 0 and 1 give subnormal
 * floats; e = 255 gives 2^127, as ggml reads it, not NaN). */
static inline float nc_e8m0_to_fp32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
  union {
    uint32_t u;
    float f;
  } v = {.u = bits};
  return v.f;
}

/* NVFP4's UE4M3 sub-block scale (4 exponent bits, bias 7, 3 mantissa
 * bits; bit 7 ignored), halved like MXFP4's, as ggml reads it: 0x00 and
 * 0x7f are 0, exponent 0 is subnormal (mantissa x 2^-9). Always finite. */
static inline float nc_ue4m3_to_fp32_half(uint8_t x) {
  if (x == 0 || x == 0x7f) return 0.0f;
  const int e = (x >> 3) & 0x0f, m = x & 7;
  /* exact in float: (8 + m) * 2^(e - 10), or m * 2^-9 */
  const float raw = e == 0 ? (float)m * 0x1p-9f
                           : (float)(8 + m) * (0x1p-10f * (float)(1 << e));
  return raw * 0.5f;
}

/* IQ1_M keeps its half scale in the top 4 bits of its four 16-bit scale
 * words (bits 12..15 of word k are bits 4k..4k+3 of the half). */
static inline nc_fp16 nc_iq1m_half_scale(const block_iq1_m *x) {
  uint16_t sc[4];
  for (int k = 0; k < 4; k++)
    sc[k] = (uint16_t)(x->scales[2 * k] | (x->scales[2 * k + 1] << 8));
  return (nc_fp16)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
                   ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

/* The ternary value (0, 1 or 2, standing for -1, 0, 1) in the top of byte
 * q (TQ1_0 packs 5 base-3 digits per byte as a fixed-point fraction: digit
 * n of byte b is trit(b * 3^n mod 256)). */
static inline int nc_tq1_trit(uint8_t q) {
  return (int)(((uint16_t)q * 3) >> 8);
}

typedef struct nc_type_traits {
  const char *name;     /* "Q4_1" */
  int64_t block_size;   /* elements per block */
  size_t type_size;     /* bytes per block */
  bool supported;       /* we can dequantize and dot it */
  nc_type vec_dot_type; /* the activation format its dot expects */
} nc_type_traits;

/* NULL for an id ggml does not know (or that was removed). */
const nc_type_traits *nc_type_traits_of(uint32_t type);
const char *nc_type_name(uint32_t type); /* "?" when unknown */
/* Bytes for a row of n elements; 0 if n is not a multiple of the block. */
size_t nc_row_size(nc_type type, int64_t n);

float nc_fp16_to_fp32(nc_fp16 h);
nc_fp16 nc_fp32_to_fp16(float f);
float nc_bf16_to_fp32(nc_bf16 h);
nc_bf16 nc_fp32_to_bf16(float f);

/* Dequantizes n elements (a multiple of the block size) of any supported
 * type (F32, F16, BF16, Q4_0..Q8_0, Q2_K..Q6_K, Q8_K, IQ4_NL, IQ4_XS,
 * the IQ1/IQ2/IQ3 types (quant_dequant_iq.c), MXFP4, NVFP4, TQ1_0, TQ2_0,
 * Q1_0, Q2_0). */
void nc_dequantize_row(nc_type type, const void *src, float *dst, int64_t n);

/* The index of the first of nb blocks at data whose half-float scale is not
 * finite (NaN or infinity: every value of the block would be NaN or
 * infinite), or -1 when none is. Checked for IQ4_NL, IQ4_XS, the IQ1/IQ2/IQ3
 * types, TQ1_0, TQ2_0, Q1_0 and Q2_0 (quant_check.c); -1 for every other type
 * (MXFP4's E8M0 and NVFP4's UE4M3 scales are finite for every byte). */
int64_t nc_first_bad_block(nc_type type, const void *data, int64_t nb);

/* Quantizes an activation row to a dot partner format: Q8_0, Q8_1, Q8_K,
 * F16, BF16 or F32 (copy), as llama.cpp's x86 build rounds them (see
 * quant.c); and Q4_0 (a KV cache type) as ggml's quantize_row_q4_0_ref. */
void nc_quantize_row(nc_type type, const float *src, void *dst, int64_t n);

#endif
