/* dot_loops: the row and matmul loops a kernel file builds from one of its
 * single dots, for the types whose _rows and gemm are the dot repeated in
 * the order llama.cpp's vec_dot would take (one weight row against nrows
 * activation rows; every (activation, weight) pair, activation-major).
 *
 *   NC_DOT_ROWS(avx2, iq4_nl)  defines nc_avx2_dot_iq4_nl_rows from
 *                              nc_avx2_dot_iq4_nl
 *   NC_DOT_GEMM(avx2, iq4_nl)  defines nc_avx2_gemm_iq4_nl from it */
#ifndef NC_KERNELS_DOT_LOOPS_H
#define NC_KERNELS_DOT_LOOPS_H

#include <stddef.h>
#include <stdint.h>

#define NC_DOT_ROWS(prefix, name)                                              \
  void nc_##prefix##_dot_##name##_rows(                                        \
      int64_t n, const void *w, const void *a, size_t a_stride, int nrows,     \
      float *out, size_t out_stride) {                                         \
    const char *ap = a;                                                        \
    for (int r = 0; r < nrows; r++)                                            \
      out[(size_t)r * out_stride] =                                            \
          nc_##prefix##_dot_##name(n, w, ap + (size_t)r * a_stride);           \
  }

#define NC_DOT_GEMM(prefix, name)                                              \
  void nc_##prefix##_gemm_##name(int64_t n, const void *w, size_t w_stride,    \
                                 int64_t nw, const void *act, size_t a_stride, \
                                 int64_t na, float *out, size_t out_stride) {  \
    const uint8_t *wp = w, *ap = act;                                          \
    for (int64_t a = 0; a < na; a++)                                           \
      for (int64_t r = 0; r < nw; r++)                                         \
        out[(size_t)a * out_stride + (size_t)r] = nc_##prefix##_dot_##name(    \
            n, wp + (size_t)r * w_stride, ap + (size_t)a * a_stride);          \
  }

#endif
