/* ref_iq: plain-C dots of the lattice types IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (Q8_K activations), the reference every
 * SIMD kernel of these types is held to bit for bit. Two float orders, both
 * llama.cpp's x86 ones (tests/unit/test_kernels_ggml.c checks them against
 * its library):
 *
 * vec_dot (llama.cpp's AVX2 kernels; 1..7 activation rows there): per
 * superblock the exact integer lanes of iq_unpack.h's weights times the
 * activation, lane k (0..7) summing the elements whose index mod 32 is in
 * [4k, 4k + 4), each 16's sum times its scale; then acc = fma(d_w * d_a,
 * (float)lane, acc) and the result unit * hsum8(acc) (unit: nc_iq_unit).
 * IQ1_S adds the offsets from the activation's 16-sums: per superblock the
 * integer D = sum over 32s of (bsum pair) * sign * scale, a = fma(d, D, a),
 * and the result fma(1/8, a, hsum8(acc)); IQ1_M keeps the offsets' lanes
 * (the activation signed per group of 8, times the scales) in a second
 * accumulator B and returns fma(1/8, hsum8(B), hsum8(acc)).
 *
 * tiled (its tiled matmul, 8+ activation rows): per superblock the exact
 * integer S = sum of scale * weight * activation (IQ1: weight 8q + offset
 * sign), t = (float)S * (d_w * unit) (IQ1: d_w / 8), acc = fma(t, d_a, acc).
 *
 * hsum8 as in ref_nl.c: (v[k] + v[k+4]) for k < 4, then (0 + 2) + (1 + 3). */
#include <math.h>

#include "dot_loops.h"
#include "iq_unpack.h"
#include "ref.h"

static float hsum8(const float v[8]) {
  const float r0 = v[0] + v[4], r1 = v[1] + v[5];
  const float r2 = v[2] + v[6], r3 = v[3] + v[7];
  return (r0 + r2) + (r1 + r3);
}

/* The integer lanes of one unpacked superblock against 256 activations. */
static void iq_lanes(const nc_iq_block *b, const int8_t *a, int32_t lane[8]) {
  for (int k = 0; k < 8; k++)
    lane[k] = 0;
  for (int j = 0; j < QK_K / 32; j++)
    for (int k = 0; k < 8; k++) {
      int32_t s = 0;
      for (int e = 32 * j + 4 * k; e < 32 * j + 4 * k + 4; e++)
        s += b->q[e] * a[e];
      lane[k] += b->scale[2 * j + k / 4] * s;
    }
}

/* IQ1_M's offset lanes: the activation signed per group of 8. */
static void iq1_delta_lanes(const nc_iq_block *b, const int8_t *a,
                            int32_t lane[8]) {
  for (int k = 0; k < 8; k++)
    lane[k] = 0;
  for (int j = 0; j < QK_K / 32; j++)
    for (int k = 0; k < 8; k++) {
      int32_t s = 0;
      for (int e = 32 * j + 4 * k; e < 32 * j + 4 * k + 4; e++)
        s += b->delta_sign[e / 8] * a[e];
      lane[k] += b->scale[2 * j + k / 4] * s;
    }
}

static float dot_vec(nc_type t, int64_t n, const void *w, const void *va) {
  const block_q8_K *y = va;
  float acc[8] = {0}, acc2[8] = {0}, a1 = 0.0f;
  nc_iq_block b;
  for (int64_t i = 0; i < n / QK_K; i++) {
    nc_iq_unpack(t, w, i, &b);
    int32_t lane[8];
    iq_lanes(&b, y[i].qs, lane);
    const float d = nc_fp16_to_fp32(nc_iq_half(t, w, i)) * y[i].d;
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(d, (float)lane[k], acc[k]);
    if (t == NC_TYPE_IQ1_S) {
      int32_t dsum = 0;
      for (int j = 0; j < QK_K / 32; j++)
        dsum += (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]) *
                b.delta_sign[4 * j] * b.scale[2 * j];
      a1 = fmaf(d, (float)dsum, a1);
    } else if (t == NC_TYPE_IQ1_M) {
      iq1_delta_lanes(&b, y[i].qs, lane);
      for (int k = 0; k < 8; k++)
        acc2[k] = fmaf(d, (float)lane[k], acc2[k]);
    }
  }
  if (t == NC_TYPE_IQ1_S) return fmaf(NC_IQ1_DELTA, a1, hsum8(acc));
  if (t == NC_TYPE_IQ1_M) return fmaf(NC_IQ1_DELTA, hsum8(acc2), hsum8(acc));
  return nc_iq_unit(t) * hsum8(acc);
}

static float dot_tiled(nc_type t, int64_t n, const void *w, const void *va) {
  const block_q8_K *y = va;
  const bool iq1 = nc_iq_is_iq1(t);
  const float unit = iq1 ? 0.125f : nc_iq_unit(t);
  float acc = 0.0f;
  nc_iq_block b;
  for (int64_t i = 0; i < n / QK_K; i++) {
    nc_iq_unpack(t, w, i, &b);
    int32_t s = 0;
    for (int e = 0; e < QK_K; e++) {
      const int q = iq1 ? 8 * b.q[e] + b.delta_sign[e / 8] : b.q[e];
      s += b.scale[e / 16] * q * y[i].qs[e];
    }
    const float tf = (float)s * (nc_fp16_to_fp32(nc_iq_half(t, w, i)) * unit);
    acc = fmaf(tf, y[i].d, acc);
  }
  return acc;
}

#define IQ_DOTS(name, type)                                                    \
  float nc_ref_dot_##name(int64_t n, const void *w, const void *a) {           \
    return dot_vec(type, n, w, a);                                             \
  }                                                                            \
  float nc_ref_dot_##name##_tiled(int64_t n, const void *w, const void *a) {   \
    return dot_tiled(type, n, w, a);                                           \
  }                                                                            \
  NC_DOT_ROWS(ref, name)                                                       \
  NC_DOT_ROWS(ref, name##_tiled)                                               \
  NC_DOT_GEMM(ref, name)

IQ_DOTS(iq2_xxs, NC_TYPE_IQ2_XXS)
IQ_DOTS(iq2_xs, NC_TYPE_IQ2_XS)
IQ_DOTS(iq2_s, NC_TYPE_IQ2_S)
IQ_DOTS(iq3_xxs, NC_TYPE_IQ3_XXS)
IQ_DOTS(iq3_s, NC_TYPE_IQ3_S)
IQ_DOTS(iq1_s, NC_TYPE_IQ1_S)
IQ_DOTS(iq1_m, NC_TYPE_IQ1_M)
