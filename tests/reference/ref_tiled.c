/* ref_tiled: plain-C dots in the float order of llama.cpp's tiled K-quant
 * matmul (ggml-cpu/tiled), the reference of the avx512 table's Q4_K, Q5_K
 * and Q6_K kernels (avx512_kquant.c, whose tiled Q2_K/Q3_K kernels follow
 * the same steps). llama.cpp's x86 builds (AVX2 + FMA, or AVX-512 VNNI; in
 * llama-cpp-python 0.3.36, the build of our goldens) multiply K-quant
 * weights by 8 or more activation rows with it instead of ggml_vec_dot
 * (which they keep for 1..7 rows: llama.cpp is not batch-invariant there).
 * Per (weight row, activation row) and 256-superblock, the integer sums
 * are exact: S1 = sum_j sc_j * I_j (the sub-blocks' dots times their
 * scales; Q6_K's quants signed), S2 = sum_j m_j * b_j (Q4_K, Q5_K: the
 * mins against the activation's 32-sums); then, from acc = 0, superblocks
 * in order:
 *   t = (float)S1 * d_w
 *   t = fma(-dmin_w, (float)S2, t)              (Q4_K, Q5_K)
 *   acc = fma(t, d_a, acc)
 * the last step one rounding (its microkernel's buf + t * d_a, contracted
 * to an fma in that build: a multiply then an add differs in about half of
 * the dots of 2+ superblocks). Checked bit for bit against that library's
 * mul_mat (tests/unit/test_kernels_ggml.c). */
#include <math.h>

#include "kernels/ref.h"
#include "ref_tiled.h"

#define H2F(x) nc_fp16_to_fp32(x)

/* One Q4_K/Q5_K superblock (quants q[256] in element order): acc after its
 * step (see the top). */
static float k4_tiled(float acc, const int8_t *q, const uint8_t *scales,
                      nc_fp16 d, nc_fp16 dmin, const block_q8_K *y) {
  int32_t s1 = 0, s2 = 0;
  for (int j = 0; j < 8; j++) {
    uint8_t sc, mn;
    int32_t dot = 0;
    nc_k4_scale_min(j, scales, &sc, &mn);
    for (int l = 0; l < 32; l++)
      dot += q[32 * j + l] * y->qs[32 * j + l];
    s1 += (int32_t)sc * dot;
    s2 += (int32_t)mn * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
  }
  float t = (float)s1 * H2F(d);
  t = fmaf(-H2F(dmin), (float)s2, t);
  return fmaf(t, y->d, acc);
}

float nc_ref_dot_tiled_q4_k(int64_t n, const void *vw, const void *va) {
  const block_q4_K *x = vw;
  const block_q8_K *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    nc_ref_quants_q4_k(&x[i], q);
    acc = k4_tiled(acc, q, x[i].scales, x[i].d, x[i].dmin, &y[i]);
  }
  return acc;
}

float nc_ref_dot_tiled_q5_k(int64_t n, const void *vw, const void *va) {
  const block_q5_K *x = vw;
  const block_q8_K *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    nc_ref_quants_q5_k(&x[i], q);
    acc = k4_tiled(acc, q, x[i].scales, x[i].d, x[i].dmin, &y[i]);
  }
  return acc;
}

float nc_ref_dot_tiled_q6_k(int64_t n, const void *vw, const void *va) {
  const block_q6_K *x = vw;
  const block_q8_K *y = va;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int8_t q[QK_K];
    nc_ref_quants_q6_k(&x[i], q);
    int32_t s1 = 0;
    for (int g = 0; g < 16; g++) {
      int32_t dot = 0;
      for (int l = 0; l < 16; l++)
        dot += q[16 * g + l] * y[i].qs[16 * g + l];
      s1 += (int32_t)x[i].scales[g] * dot;
    }
    acc = fmaf((float)s1 * H2F(x[i].d), y[i].d, acc);
  }
  return acc;
}

void nc_ref_dot_tiled_q4_k_rows(int64_t n, const void *w, const void *a,
                                size_t a_stride, int nrows, float *out,
                                size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_tiled_q4_k(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_tiled_q5_k_rows(int64_t n, const void *w, const void *a,
                                size_t a_stride, int nrows, float *out,
                                size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_tiled_q5_k(n, w, ap + (size_t)r * a_stride);
}

void nc_ref_dot_tiled_q6_k_rows(int64_t n, const void *w, const void *a,
                                size_t a_stride, int nrows, float *out,
                                size_t out_stride) {
  const char *ap = a;
  for (int r = 0; r < nrows; r++)
    out[(size_t)r * out_stride] =
        nc_ref_dot_tiled_q6_k(n, w, ap + (size_t)r * a_stride);
}
