/* gemm_f16: F16 weights times F16 activation rows (kernels.h's nc_gemm_fn)
 * through an ISA's register tiles, in the float order of that table's F16
 * vec_dot, so that every output is bit-identical to that dot on its pair
 * alone, whatever the number of rows (batch invariance):
 * - avx2 (avx2_f16.c): nc_avx2_dot_f16's, per 32 elements i..i+31, lane l
 *   of accumulator k (k = 0..3, l = 0..7) takes fma(w[i + 8k + l],
 *   a[i + 8k + l], acc) (the halves widened to F32, exactly); then
 *   nc_hsum8((acc0 + acc1) + (acc2 + acc3)); then the last n % 32 elements
 *   one by one, sum = fmaf(w, a, sum) (step 32);
 * - avx512 and amx (avx512_f16.c): llamafile's tinyBLAS<16>, one 16-lane
 *   accumulator per pair over steps of 16, then the halving tree (step 16;
 *   n % 16 == 0); for other n ggml_vec_dot_f16's: four 16-lane
 *   accumulators per pair over steps of 64, summed 0 + 2, 1 + 3, then the
 *   two, then the tree, the rest added in double (step 64, tail_double).
 *
 * The driver (gemm_f16.c, plain C) widens the activation rows to F32 once
 * (or takes the caller's packed rows), 16 MiB of them at a time, then each
 * weight panel (512 KiB of F32, kept in L2) once, and runs an ISA's
 * register tiles of rows_w weight rows x rows_a activation rows over them:
 * every loaded vector feeds several multiply-adds and nothing is converted
 * in the inner loop; the elements past the last whole step are added one
 * by one, sum = fmaf(w, a, sum). Up to NC_F16_DIRECT_ROWS activation rows
 * (tiles with a direct) widen only the activations: the weights are read
 * as F16 once, each group of rows_w rows against every activation tile
 * while it is in L1 (widening them would cost more than so few rows'
 * products). Internal to src/kernels/. */
#ifndef NC_KERNELS_GEMM_F16_H
#define NC_KERNELS_GEMM_F16_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/quant.h"
#include "kernels.h"

typedef struct nc_f16_tiles {
  int rows_w, rows_a; /* the largest register tile */
  int step;           /* elements per step of the tiles' order: 16 or 32 */
  /* dst[i] = src[i] as F32, i < n (exact) */
  void (*widen)(const nc_fp16 *src, float *dst, int64_t n);
  /* out[a * out_stride + r] = the ISA's sum above over the first nk
   * elements (a multiple of step) of F32 weight row r (w + r * w_stride)
   * and activation row a (act + a * a_stride), r < nw <= rows_w, a < na <=
   * rows_a; rows step-float aligned need not be */
  void (*tile)(int64_t nk, const float *w, size_t w_stride, int nw,
               const float *act, size_t a_stride, int na, float *out,
               size_t out_stride);
  /* NULL, or tile over nw x na rows (any counts, int-sized), each
   * activation tile against all nw weight rows in turn (the short rows'
   * order of the driver, taken for every row length: long rows are the
   * block's to keep in L1) */
  void (*block)(int64_t nk, const float *w, size_t w_stride, int nw,
                const float *act, size_t a_stride, int na, float *out,
                size_t out_stride);
  /* NULL, or tile with the weights read as F16 (w: rows of halves,
   * w_stride halves apart, converted as loaded: the same sums) against
   * widened activation rows, nw x na rows (any counts, int-sized): the
   * driver's few-rows path (up to NC_F16_DIRECT_ROWS activation rows),
   * which reads each weight once from memory and widens no weight */
  void (*direct)(int64_t nk, const nc_fp16 *w, size_t w_stride, int nw,
                 const float *act, size_t a_stride, int na, float *out,
                 size_t out_stride);
  nc_vec_dot_fn dot; /* the F16 dot these tiles match: without memory */
  /* false: the elements past the last whole step added to the tile's sum
   * one by one, sum = fmaf(w, a, sum); true: as ggml_vec_dot_f16 adds
   * them, sum = (double)sum + (double)(w * a) each, then rounded once */
  bool tail_double;
} nc_f16_tiles;

/* kernels.h's nc_gemm_fn for F16 weights (activation rows F16) through an
 * ISA's tiles. */
void nc_gemm_f16_tiled(const nc_f16_tiles *t, int64_t n, const void *w,
                       size_t w_stride, int64_t nw, const void *act,
                       size_t a_stride, int64_t na, float *out,
                       size_t out_stride);

/* Fewer activation rows than this: the dot per pair, nothing widened
 * (tiles without a direct); up to NC_F16_DIRECT_ROWS rows (tiles with
 * one, n a multiple of step): the activation rows widened, the weights
 * read as F16 by direct (a decode step, a speculative step's verify rows:
 * the weights read from memory once, as for one row). */
enum { NC_F16_FEW_ROWS = 3, NC_F16_DIRECT_ROWS = 16 };

/* The shared widened activation rows (kernels.h's nc_pack_act_fn): row r
 * at packed + r * nc_f16_packed_ld(n), n floats; nc_f16_packed_bytes(n,
 * na) their size, 0 where the gemm would not read them (fewer than
 * NC_F16_FEW_ROWS rows). nc_f16_pack_rows widens rows [r0, r1) of act
 * there; nc_gemm_f16_packed is nc_gemm_f16_tiled reading them (act for
 * the few-rows path), the same bits. */
int64_t nc_f16_packed_ld(int64_t n);
size_t nc_f16_packed_bytes(int64_t n, int64_t na);
void nc_f16_pack_rows(const nc_f16_tiles *t, int64_t n, const void *act,
                      size_t a_stride, int64_t r0, int64_t r1, float *packed);
void nc_gemm_f16_packed(const nc_f16_tiles *t, int64_t n, const void *w,
                        size_t w_stride, int64_t nw, const void *act,
                        size_t a_stride, const float *packed, int64_t na,
                        float *out, size_t out_stride);

/* The two builds (avx2_f16.c, avx512_f16.c); avx512's shared layout
 * (kernels.h's pack_act, pack_bytes and gemm_packed for F16). */
void nc_avx2_gemm_f16(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *act, size_t a_stride, int64_t na, float *out,
                      size_t out_stride);
void nc_avx512_gemm_f16(int64_t n, const void *w, size_t w_stride, int64_t nw,
                        const void *act, size_t a_stride, int64_t na,
                        float *out, size_t out_stride);
void nc_avx512_pack_f16(int64_t n, const void *act, size_t a_stride, int64_t na,
                        int64_t r0, int64_t r1, void *packed);
void nc_avx512_gemm_packed_f16(int64_t n, const void *w, size_t w_stride,
                               int64_t nw, const void *act, size_t a_stride,
                               const void *packed, int64_t na, float *out,
                               size_t out_stride);

#endif
