/* ref_lowbit: plain-C dots of NVFP4, Q1_0 and Q2_0 (Q8_0 activations: one
 * NVFP4 block spans two Q8_0 blocks, a Q1_0 block four, a Q2_0 block two),
 * in the float order of llama.cpp's x86 build, which multiplies them with
 * ggml_vec_dot at every batch size (no llamafile, tiled or repacked path):
 * - NVFP4 (its AVX2 kernel): per block, for each of its two Q8_0 halves h
 *   the int32 lanes of four products (lane k: elements 4k..4k+3 of the
 *   half), scale s = ue4m3(d[2h + k / 4]) * d_a(h); acc = fma(s, lane, acc)
 *   for the first half, then the second; hsum8 at the end.
 * - Q1_0 (its AVX2 kernel): per block, for each Q8_0 quarter K the lanes
 *   of sum(+-a) (bit 1: +a, bit 0: -a); t = d_a(0) * lane, then t =
 *   fma(d_a(K), lane, t) for K = 1..3; acc = fma(d_w, t, acc); hsum8.
 * - Q2_0 (its generic C, the x86 build has no SIMD kernel): per block
 *   s = 0, s = fma(d_a(k), (float)I_k, s) for its two Q8_0 halves k (I_k
 *   the exact integer dot), sum = fma(d_w, s, sum).
 * hsum8 is llama.cpp's hsum_float_8 (see ref_nl.c). The fmas are fused in
 * that build; test_kernels_ggml checks each against its library. */
#include <math.h>

#include "dot_loops.h"
#include "ref.h"

#define H2F(x) nc_fp16_to_fp32(x)

static float hsum8(const float v[8]) {
  const float r0 = v[0] + v[4], r1 = v[1] + v[5];
  const float r2 = v[2] + v[6], r3 = v[3] + v[7];
  return (r0 + r2) + (r1 + r3);
}

/* Element j (0..31) of Q8_0 half h of an NVFP4 block: its 4-bit code. */
static int nvfp4_code(const block_nvfp4 *x, int h, int j) {
  const int sub = 2 * h + j / 16, jj = j % 16;
  const uint8_t b = x->qs[8 * sub + jj % 8];
  return jj < 8 ? b & 0x0f : b >> 4;
}

float nc_ref_dot_nvfp4(int64_t n, const void *vw, const void *va) {
  const block_nvfp4 *x = vw;
  const block_q8_0 *y = va;
  float acc[8] = {0};
  for (int64_t i = 0; i < n / QK_NVFP4; i++)
    for (int h = 0; h < 2; h++) {
      const block_q8_0 *yh = &y[2 * i + h];
      const float da = H2F(yh->d);
      const float s[2] = {nc_ue4m3_to_fp32_half(x[i].d[2 * h]) * da,
                          nc_ue4m3_to_fp32_half(x[i].d[2 * h + 1]) * da};
      for (int k = 0; k < 8; k++) {
        int32_t lane = 0;
        for (int j = 4 * k; j < 4 * k + 4; j++)
          lane += nc_mxfp4_values[nvfp4_code(&x[i], h, j)] * yh->qs[j];
        acc[k] = fmaf(s[k / 4], (float)lane, acc[k]);
      }
    }
  return hsum8(acc);
}

float nc_ref_dot_q1_0(int64_t n, const void *vw, const void *va) {
  const block_q1_0 *x = vw;
  const block_q8_0 *y = va;
  float acc[8] = {0};
  for (int64_t i = 0; i < n / QK1_0; i++) {
    float t[8];
    for (int q = 0; q < 4; q++) {
      const block_q8_0 *yq = &y[4 * i + q];
      const float da = H2F(yq->d);
      for (int k = 0; k < 8; k++) {
        int32_t lane = 0;
        for (int j = 4 * k; j < 4 * k + 4; j++) {
          const int e = 32 * q + j;
          lane += (x[i].qs[e / 8] >> (e % 8)) & 1 ? yq->qs[j] : -yq->qs[j];
        }
        t[k] = q == 0 ? da * (float)lane : fmaf(da, (float)lane, t[k]);
      }
    }
    const float d = H2F(x[i].d);
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf(d, t[k], acc[k]);
  }
  return hsum8(acc);
}

float nc_ref_dot_q2_0(int64_t n, const void *vw, const void *va) {
  const block_q2_0 *x = vw;
  const block_q8_0 *y = va;
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK2_0; i++) {
    float s = 0.0f;
    for (int k = 0; k < 2; k++) {
      const block_q8_0 *yk = &y[2 * i + k];
      int32_t dot = 0;
      for (int j = 0; j < 32; j++) {
        const int e = 32 * k + j;
        dot += (((x[i].qs[e / 4] >> (2 * (e % 4))) & 3) - 1) * yk->qs[j];
      }
      s = fmaf(H2F(yk->d), (float)dot, s);
    }
    sumf = fmaf(H2F(x[i].d), s, sumf);
  }
  return sumf;
}

NC_DOT_ROWS(ref, nvfp4)
NC_DOT_ROWS(ref, q1_0)
NC_DOT_ROWS(ref, q2_0)
