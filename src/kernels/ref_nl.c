/* ref_nl: plain-C dots of the non-linear 4-bit types (IQ4_NL, IQ4_XS),
 * MXFP4 and the ternary types (TQ1_0, TQ2_0), the reference every SIMD
 * kernel of these types is held to bit for bit.
 *
 * Unlike ref.c's older types (ggml's generic C order), these follow the
 * float order of llama.cpp's x86 vec_dot (its AVX2 kernels, which its
 * AVX-512 builds also run for these types), because that is what a native
 * llama.cpp computes on the CPUs we run on:
 * - the integer products are exact; an 8-lane int32 vector holds, per
 *   block, the sums over the elements whose index mod 32 is in [4k, 4k+4)
 *   (lane k), then
 * - IQ4_NL, MXFP4 (Q8_0 activations): blocks in pairs, the even one into
 *   accumulator A, the odd one into B, each lane acc = fma(d_w * d_a,
 *   (float)lane, acc); the result hsum8(A + B), then a last odd block as
 *   sum = fma(d_w * d_a, (float)S, sum) with S its whole integer dot;
 * - IQ4_XS (Q8_K): per superblock the lanes of the 8 sub-blocks' dots times
 *   their scales (ls - 32), acc = fma(d_w * d_a, (float)lane, acc), then
 *   hsum8(acc);
 * - TQ1_0, TQ2_0 (Q8_K): per superblock the lanes of sum q * a with q the
 *   unsigned digit (0, 1, 2), less the activation's 16-sums (bsums 2k and
 *   2k+1 from lane k, which gives sum (q - 1) * a in total), then acc =
 *   fma((float)lane, d_a * d_w, acc), then hsum8(acc).
 * hsum8 is llama.cpp's hsum_float_8: (v[k] + v[k+4]) for k < 4, then
 * (0 + 2) + (1 + 3). The fmas are fused in that build (gcc contracts its
 * multiply-then-add intrinsics); tests/unit/test_kernels_nl.c checks every
 * dot here against llama.cpp's library bit for bit.
 *
 * IQ4_NL also has the order of llama.cpp's llamafile GEMM (tinyBLAS_Q0_AVX,
 * which that build uses for 2 or more activation rows): one accumulator,
 * acc = fma(d_w * d_a, (float)lane, acc) per block, then hsum8(acc).
 * IQ4_XS also has the order of llama.cpp's tiled matmul (ggml-cpu/tiled,
 * which that build uses for 8 or more activation rows): per superblock
 * S = sum_j (ls_j - 32) * dot_j (exact), t = (float)S * d_w, acc = fma(t,
 * d_a, acc); the avx512 table's order, as for the K-quants. */
#include <math.h>

#include "dot_loops.h"
#include "ref.h"

#define H2F(x) nc_fp16_to_fp32(x)

static float hsum8(const float v[8]) {
  const float r0 = v[0] + v[4], r1 = v[1] + v[5];
  const float r2 = v[2] + v[6], r3 = v[3] + v[7];
  return (r0 + r2) + (r1 + r3);
}

/* The lanes of one 32-element block: values vals[code] times a, codes in
 * nibbles (low nibble of byte j is element j, high nibble element j + 16). */
static void lanes32(const int8_t vals[16], const uint8_t qs[16],
                    const int8_t *a, int32_t lane[8]) {
  for (int k = 0; k < 8; k++)
    lane[k] = 0;
  for (int j = 0; j < 16; j++) {
    lane[j / 4] += vals[qs[j] & 0x0f] * a[j];
    lane[(j + 16) / 4] += vals[qs[j] >> 4] * a[j + 16];
  }
}

/* One 32-element block of IQ4_NL or MXFP4: its scale and codes. */
typedef struct nl_block {
  float d;
  const uint8_t *qs;
} nl_block;

static nl_block iq4nl_at(const void *w, int64_t i) {
  const block_iq4_nl *x = (const block_iq4_nl *)w + i;
  return (nl_block){H2F(x->d), x->qs};
}

static nl_block mxfp4_at(const void *w, int64_t i) {
  const block_mxfp4 *x = (const block_mxfp4 *)w + i;
  return (nl_block){nc_e8m0_to_fp32_half(x->e), x->qs};
}

static float dot_nl32(int64_t n, const void *w, const void *va,
                      const int8_t vals[16],
                      nl_block (*at)(const void *, int64_t)) {
  const block_q8_0 *y = va;
  const int64_t nb = n / 32;
  float acc[2][8] = {{0}};
  int64_t i = 0;
  for (; i + 1 < nb; i += 2)
    for (int h = 0; h < 2; h++) {
      const nl_block b = at(w, i + h);
      int32_t lane[8];
      lanes32(vals, b.qs, y[i + h].qs, lane);
      const float d = H2F(y[i + h].d) * b.d;
      for (int k = 0; k < 8; k++)
        acc[h][k] = fmaf(d, (float)lane[k], acc[h][k]);
    }
  float sum8[8];
  for (int k = 0; k < 8; k++)
    sum8[k] = acc[0][k] + acc[1][k];
  float sumf = hsum8(sum8);
  for (; i < nb; i++) {
    const nl_block b = at(w, i);
    int32_t lane[8], s = 0;
    lanes32(vals, b.qs, y[i].qs, lane);
    for (int k = 0; k < 8; k++)
      s += lane[k];
    sumf = fmaf(H2F(y[i].d) * b.d, (float)s, sumf);
  }
  return sumf;
}

float nc_ref_dot_iq4_nl_tinyblas(int64_t n, const void *vw, const void *va) {
  const block_iq4_nl *x = vw;
  const block_q8_0 *y = va;
  float acc[8] = {0};
  for (int64_t i = 0; i < n / QK4_NL; i++) {
    int32_t lane[8];
    lanes32(nc_iq4nl_values, x[i].qs, y[i].qs, lane);
    const float d = H2F(x[i].d) * H2F(y[i].d);
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(d, (float)lane[k], acc[k]);
  }
  return hsum8(acc);
}

float nc_ref_dot_iq4_nl(int64_t n, const void *w, const void *a) {
  return dot_nl32(n, w, a, nc_iq4nl_values, iq4nl_at);
}

float nc_ref_dot_mxfp4(int64_t n, const void *w, const void *a) {
  return dot_nl32(n, w, a, nc_mxfp4_values, mxfp4_at);
}

/* An IQ4_XS superblock's lanes: sub-block j's lanes times (ls_j - 32). */
static void iq4xs_lanes(const block_iq4_xs *x, const int8_t *a,
                        int32_t lane[8]) {
  for (int k = 0; k < 8; k++)
    lane[k] = 0;
  for (int j = 0; j < QK_K / 32; j++) {
    const int ls = (((x->scales_l[j / 2] >> 4 * (j % 2)) & 0x0f) |
                    (((x->scales_h >> 2 * j) & 3) << 4)) -
                   32;
    int32_t sub[8];
    lanes32(nc_iq4nl_values, x->qs + 16 * j, a + 32 * j, sub);
    for (int k = 0; k < 8; k++)
      lane[k] += ls * sub[k];
  }
}

float nc_ref_dot_iq4_xs(int64_t n, const void *vw, const void *va) {
  const block_iq4_xs *x = vw;
  const block_q8_K *y = va;
  float acc[8] = {0};
  for (int64_t i = 0; i < n / QK_K; i++) {
    int32_t lane[8];
    iq4xs_lanes(&x[i], y[i].qs, lane);
    const float d = H2F(x[i].d) * y[i].d;
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(d, (float)lane[k], acc[k]);
  }
  return hsum8(acc);
}

float nc_ref_dot_iq4_xs_tiled(int64_t n, const void *vw, const void *va) {
  const block_iq4_xs *x = vw;
  const block_q8_K *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int32_t lane[8], s = 0;
    iq4xs_lanes(&x[i], y[i].qs, lane);
    for (int k = 0; k < 8; k++)
      s += lane[k];
    const float t = (float)s * H2F(x[i].d);
    acc = fmaf(t, y[i].d, acc);
  }
  return acc;
}

/* The ternary tail: lanes less the activation's 16-sums, into acc. */
static void tq_accumulate(int32_t lane[8], const block_q8_K *y, nc_fp16 xd,
                          float acc[8]) {
  const float d = y->d * H2F(xd);
  for (int k = 0; k < 8; k++) {
    lane[k] -= y->bsums[2 * k] + y->bsums[2 * k + 1];
    acc[k] = fmaf((float)lane[k], d, acc[k]);
  }
}

float nc_ref_dot_tq1_0(int64_t n, const void *vw, const void *va) {
  static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
  const block_tq1_0 *x = vw;
  const block_q8_K *y = va;
  float acc[8] = {0};
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    int e = 0;
    for (int d = 0; d < 5; d++)
      for (int m = 0; m < 32; m++)
        q[e++] = (int8_t)nc_tq1_trit((uint8_t)(x[i].qs[m] * pow3[d]));
    for (int d = 0; d < 5; d++)
      for (int m = 0; m < 16; m++)
        q[e++] = (int8_t)nc_tq1_trit((uint8_t)(x[i].qs[32 + m] * pow3[d]));
    for (int d = 0; d < 4; d++)
      for (int m = 0; m < 4; m++)
        q[e++] = (int8_t)nc_tq1_trit((uint8_t)(x[i].qh[m] * pow3[d]));
    int32_t lane[8] = {0};
    for (e = 0; e < QK_K; e++)
      lane[(e % 32) / 4] += q[e] * y[i].qs[e];
    tq_accumulate(lane, &y[i], x[i].d, acc);
  }
  return hsum8(acc);
}

float nc_ref_dot_tq2_0(int64_t n, const void *vw, const void *va) {
  const block_tq2_0 *x = vw;
  const block_q8_K *y = va;
  float acc[8] = {0};
  for (int64_t i = 0; i < n / QK_K; i++) {
    int32_t lane[8] = {0};
    for (int e = 0; e < QK_K; e++) {
      const int byte = 32 * (e / 128) + e % 32, shift = 2 * ((e / 32) % 4);
      lane[(e % 32) / 4] += ((x[i].qs[byte] >> shift) & 3) * y[i].qs[e];
    }
    tq_accumulate(lane, &y[i], x[i].d, acc);
  }
  return hsum8(acc);
}

NC_DOT_ROWS(ref, iq4_nl)
NC_DOT_ROWS(ref, iq4_nl_tinyblas)
NC_DOT_ROWS(ref, mxfp4)
NC_DOT_ROWS(ref, iq4_xs)
NC_DOT_ROWS(ref, iq4_xs_tiled)
NC_DOT_ROWS(ref, tq1_0)
NC_DOT_ROWS(ref, tq2_0)
