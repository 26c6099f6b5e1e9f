/* ref_block: plain-C dots in "block order", the float order of llama.cpp's
 * AMX build (ggml-cpu/amx/mmq.cpp) for Q4_0, Q4_1 and Q8_0: per 32-block,
 * the exact integer dot I of the block becomes one float and
 *   acc = fma((float)I, d_w * d_a, acc)        (all three types)
 *   acc = fma(m_w, s_a, acc)                   (Q4_1: the min term)
 * from acc = 0, blocks in order. The K-quants (Q4_K, Q5_K, Q6_K against
 * Q8_K) in the same build sum each 256-superblock in integers: the
 * sub-blocks' exact dots times their scales, S = sum_j sc_j * I_j, and for
 * Q4_K/Q5_K the mins against the activation's 32-sums, M = sum_j m_j * b_j;
 * then two float steps per superblock:
 *   acc = fma((float)S, d_a * d_w, acc)
 *   acc = fma((float)M, -d_a * dmin_w, acc)    (Q4_K, Q5_K)
 * The amx table's SIMD kernels (amx_gemv.c, amx_gemm.c; amx_kquant.c for
 * the K-quants) are tested against these bit for bit. With them, the amx
 * table gave llama.cpp's AMX build's logits to the last bit (max |diff| 0)
 * on Llama-shaped Q4_K, Q5_K and Q4_K_M (Q4_K + Q6_K) models. */
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

/* One Q4_K/Q5_K superblock (quants q[256] in element order): S and M (see
 * the top), then its two float steps on acc. */
static float k4_super(float acc, const int8_t *q, const uint8_t *scales,
                      nc_fp16 d, nc_fp16 dmin, const block_q8_K *y) {
  int64_t s = 0, m = 0;
  for (int j = 0; j < 8; j++) {
    uint8_t sc, mn;
    int dot = 0;
    nc_k4_scale_min(j, scales, &sc, &mn);
    for (int l = 0; l < 32; l++)
      dot += q[32 * j + l] * y->qs[32 * j + l];
    s += (int64_t)sc * dot;
    m += (int64_t)mn * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
  }
  acc = fmaf((float)s, y->d * H2F(d), acc);
  return fmaf((float)m, -y->d * H2F(dmin), acc);
}

float nc_ref_dot_blk_q4_k(int64_t n, const void *vw, const void *va) {
  const block_q4_K *x = vw;
  const block_q8_K *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    nc_ref_quants_q4_k(&x[i], q);
    acc = k4_super(acc, q, x[i].scales, x[i].d, x[i].dmin, &y[i]);
  }
  return acc;
}

float nc_ref_dot_blk_q5_k(int64_t n, const void *vw, const void *va) {
  const block_q5_K *x = vw;
  const block_q8_K *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    nc_ref_quants_q5_k(&x[i], q);
    acc = k4_super(acc, q, x[i].scales, x[i].d, x[i].dmin, &y[i]);
  }
  return acc;
}

float nc_ref_dot_blk_q6_k(int64_t n, const void *vw, const void *va) {
  const block_q6_K *x = vw;
  const block_q8_K *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    nc_ref_quants_q6_k(&x[i], q);
    int64_t s = 0;
    for (int g = 0; g < 16; g++) {
      int dot = 0;
      for (int l = 0; l < 16; l++)
        dot += q[16 * g + l] * y[i].qs[16 * g + l];
      s += (int64_t)x[i].scales[g] * dot;
    }
    acc = fmaf((float)s, y[i].d * H2F(x[i].d), acc);
  }
  return acc;
}

void nc_ref_dot_blk_q4_0_rows(int64_t n, const void *w, const void *a,
                              size_t a_stride, int nrows, float *out,
                              size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_blk_q4_0(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_blk_q4_1_rows(int64_t n, const void *w, const void *a,
                              size_t a_stride, int nrows, float *out,
                              size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_blk_q4_1(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_blk_q8_0_rows(int64_t n, const void *w, const void *a,
                              size_t a_stride, int nrows, float *out,
                              size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_blk_q8_0(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_blk_q4_k_rows(int64_t n, const void *w, const void *a,
                              size_t a_stride, int nrows, float *out,
                              size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_blk_q4_k(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_blk_q5_k_rows(int64_t n, const void *w, const void *a,
                              size_t a_stride, int nrows, float *out,
                              size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_blk_q5_k(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_blk_q6_k_rows(int64_t n, const void *w, const void *a,
                              size_t a_stride, int nrows, float *out,
                              size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_blk_q6_k(n, w, ap + (size_t)r * a_stride);
}
