/* ref_block: plain-C dots in "block order", the float order of llama.cpp's
 * AMX build (ggml-cpu/amx/mmq.cpp) for Q4_0, Q4_1 and Q8_0: per 32-block,
 * the exact integer dot I of the block becomes one float and
 *   acc = fma((float)I, d_w * d_a, acc)        (all three types)
 *   acc = fma(m_w, s_a, acc)                   (Q4_1: the min term)
 * from acc = 0, blocks in order. The amx table's SIMD kernels (amx_gemv.c,
 * amx_gemm.c) are tested against these bit for bit. */
#include <math.h>

#include "ref.h"

#define H2F(x) nc_fp16_to_fp32(x)

float nc_ref_dot_blk_q4_0(int64_t n, const void *vw, const void *va) {
  const block_q4_0 *x = vw;
  const block_q8_0 *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK8_0; i++) {
    int s = 0;
    for (int j = 0; j < QK8_0 / 2; j++)
      s += ((x[i].qs[j] & 0x0f) - 8) * y[i].qs[j] +
           ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + QK8_0 / 2];
    acc = fmaf((float)s, H2F(x[i].d) * H2F(y[i].d), acc);
  }
  return acc;
}

float nc_ref_dot_blk_q4_1(int64_t n, const void *vw, const void *va) {
  const block_q4_1 *x = vw;
  const block_q8_1 *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK8_1; i++) {
    int s = 0;
    for (int j = 0; j < QK8_1 / 2; j++)
      s += (x[i].qs[j] & 0x0f) * y[i].qs[j] +
           (x[i].qs[j] >> 4) * y[i].qs[j + QK8_1 / 2];
    acc = fmaf((float)s, H2F(x[i].d) * H2F(y[i].d), acc);
    acc = fmaf(H2F(x[i].m), H2F(y[i].s), acc);
  }
  return acc;
}

float nc_ref_dot_blk_q8_0(int64_t n, const void *vw, const void *va) {
  const block_q8_0 *x = vw;
  const block_q8_0 *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK8_0; i++) {
    int s = 0;
    for (int j = 0; j < QK8_0; j++)
      s += x[i].qs[j] * y[i].qs[j];
    acc = fmaf((float)s, H2F(x[i].d) * H2F(y[i].d), acc);
  }
  return acc;
}

#define ROWS(fn) NC_REF_ROWS_DEFINE(dot_blk_##fn)
ROWS(q4_0)
ROWS(q4_1)
ROWS(q8_0)
#undef ROWS
