/* ref.h: the plain-C kernels by name, so the SIMD tables can fall back to
 * them for the types they do not accelerate. Internal to src/kernels/. */
#ifndef NC_KERNELS_REF_H
#define NC_KERNELS_REF_H

#include "kernels.h"

#define NC_REF_DOT(name)                                                       \
  float nc_ref_dot_##name(int64_t n, const void *w, const void *a);            \
  void nc_ref_dot_##name##_rows(int64_t n, const void *w, const void *a,       \
                                size_t a_stride, int nrows, float *out,        \
                                size_t out_stride);
NC_REF_DOT(f32)
NC_REF_DOT(f16)
NC_REF_DOT(bf16)
NC_REF_DOT(q4_0)
NC_REF_DOT(q4_1)
NC_REF_DOT(q5_0)
NC_REF_DOT(q5_1)
NC_REF_DOT(q8_0)
NC_REF_DOT(q2_k)
NC_REF_DOT(q3_k)
NC_REF_DOT(q4_k)
NC_REF_DOT(q5_k)
NC_REF_DOT(q6_k)

/* ref_block.c: the same products in block order (llama.cpp's AMX build),
 * the reference of the amx table's Q4_0, Q4_1 and Q8_0 kernels; and its
 * K-quant order (per 256-superblock). */
NC_REF_DOT(blk_q4_0)
NC_REF_DOT(blk_q4_1)
NC_REF_DOT(blk_q8_0)
NC_REF_DOT(blk_q4_k)
NC_REF_DOT(blk_q5_k)
NC_REF_DOT(blk_q6_k)

/* ref_nl.c: IQ4_NL, MXFP4, IQ4_XS, TQ1_0 and TQ2_0 in the float order of
 * llama.cpp's x86 vec_dot; iq4_xs_tiled in the order of its tiled matmul
 * (8+ activation rows), iq4_nl_tinyblas in its llamafile GEMM's (2+ rows):
 * the avx512 table's orders. */
NC_REF_DOT(iq4_nl)
NC_REF_DOT(iq4_nl_tinyblas)
NC_REF_DOT(mxfp4)
NC_REF_DOT(iq4_xs)
NC_REF_DOT(iq4_xs_tiled)
NC_REF_DOT(tq1_0)
NC_REF_DOT(tq2_0)
/* ref_lowbit.c: NVFP4, Q1_0, Q2_0 in llama.cpp's x86 vec_dot order. */
NC_REF_DOT(nvfp4)
NC_REF_DOT(q1_0)
NC_REF_DOT(q2_0)
/* ref_iq.c: the IQ1/IQ2/IQ3 lattice types in llama.cpp's x86 vec_dot
 * order, and _tiled in its tiled matmul's (8+ activation rows). */
NC_REF_DOT(iq2_xxs)
NC_REF_DOT(iq2_xs)
NC_REF_DOT(iq2_s)
NC_REF_DOT(iq3_xxs)
NC_REF_DOT(iq3_s)
NC_REF_DOT(iq1_s)
NC_REF_DOT(iq1_m)
NC_REF_DOT(iq2_xxs_tiled)
NC_REF_DOT(iq2_xs_tiled)
NC_REF_DOT(iq2_s_tiled)
NC_REF_DOT(iq3_xxs_tiled)
NC_REF_DOT(iq3_s_tiled)
NC_REF_DOT(iq1_s_tiled)
NC_REF_DOT(iq1_m_tiled)
/* ... and their vec_dot order as matmuls (kernels.h's nc_gemm_fn), the
 * tables' gemm_few. */
#define NC_REF_IQ_GEMM(name)                                                   \
  void nc_ref_gemm_##name(int64_t n, const void *w, size_t w_stride,           \
                          int64_t nw, const void *act, size_t a_stride,        \
                          int64_t na, float *out, size_t out_stride);
NC_REF_IQ_GEMM(iq2_xxs)
NC_REF_IQ_GEMM(iq2_xs)
NC_REF_IQ_GEMM(iq2_s)
NC_REF_IQ_GEMM(iq3_xxs)
NC_REF_IQ_GEMM(iq3_s)
NC_REF_IQ_GEMM(iq1_s)
NC_REF_IQ_GEMM(iq1_m)
#undef NC_REF_IQ_GEMM

#undef NC_REF_DOT

/* A K-quant superblock's quants as integers in element order (ref.c and
 * ref_block.c add them in their two orders): Q4_K 0..15, Q5_K 0..31, Q6_K
 * -32..31. */
static inline void nc_ref_quants_q4_k(const block_q4_K *x, int8_t q[QK_K]) {
  for (int c = 0; c < 4; c++)
    for (int l = 0; l < 32; l++) {
      q[64 * c + l] = (int8_t)(x->qs[32 * c + l] & 0x0f);
      q[64 * c + 32 + l] = (int8_t)(x->qs[32 * c + l] >> 4);
    }
}

static inline void nc_ref_quants_q5_k(const block_q5_K *x, int8_t q[QK_K]) {
  for (int c = 0; c < 4; c++)
    for (int l = 0; l < 32; l++) {
      const uint8_t b = x->qs[32 * c + l], h = x->qh[l];
      q[64 * c + l] = (int8_t)((b & 0x0f) + ((h >> (2 * c)) & 1) * 16);
      q[64 * c + 32 + l] = (int8_t)((b >> 4) + ((h >> (2 * c + 1)) & 1) * 16);
    }
}

static inline void nc_ref_quants_q6_k(const block_q6_K *x, int8_t q[QK_K]) {
  const uint8_t *ql = x->ql, *qh = x->qh;
  for (int h = 0; h < QK_K; h += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; l++) {
      q[h + l] = (int8_t)(((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32);
      q[h + l + 32] =
          (int8_t)(((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32);
      q[h + l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      q[h + l + 96] =
          (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
}

void nc_ref_quant_f32(const float *src, void *dst, int64_t n);
void nc_ref_quant_f16(const float *src, void *dst, int64_t n);
void nc_ref_quant_bf16(const float *src, void *dst, int64_t n);
void nc_ref_quant_q8_0(const float *src, void *dst, int64_t n);
void nc_ref_quant_q8_1(const float *src, void *dst, int64_t n);
void nc_ref_quant_q8_k(const float *src, void *dst, int64_t n);

#endif
