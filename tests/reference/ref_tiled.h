/* ref_tiled.c: the K-quants in the order of llama.cpp's tiled matmul (its
 * x86 builds' order for 8+ activation rows), the reference of the avx512
 * table's K-quant kernels. Only tests use it. */
#ifndef NC_REF_TILED_H
#define NC_REF_TILED_H

#include <stddef.h>
#include <stdint.h>

#define NC_REF_TILED_DOT(name)                                                 \
  float nc_ref_dot_##name(int64_t n, const void *w, const void *a);            \
  void nc_ref_dot_##name##_rows(int64_t n, const void *w, const void *a,       \
                                size_t a_stride, int nrows, float *out,        \
                                size_t out_stride);
NC_REF_TILED_DOT(tiled_q4_k)
NC_REF_TILED_DOT(tiled_q5_k)
NC_REF_TILED_DOT(tiled_q6_k)
#undef NC_REF_TILED_DOT

#endif
