/* ref_f16_order.c: the float orders of the SIMD tables' F16 products in
 * plain C, one operation at a time: the references of those kernels. Only
 * tests use it.
 *
 * The avx2 table's F16 dot (nc_avx2_dot_f16, its vec_dot, and its F16
 * matmul, gemm_f16.h) is llama.cpp's AVX2 ggml_vec_dot_f16 but for the
 * leftovers (nc_ref_dot_f16_lanes). The avx512 and amx tables follow
 * llama.cpp's AVX-512 build: its tinyBLAS<16> for 2+ activation rows
 * (nc_ref_dot_f16_tinyblas: vec_dot, vec_dot_rows and gemm) and its
 * ggml_vec_dot_f16 for one (nc_ref_dot_f16_vec16: gemm_few). */
#ifndef NC_REF_F16_ORDER_H
#define NC_REF_F16_ORDER_H

#include <stdint.h>

#include "gguf/quant.h"

/* 32 lanes, lane j taking fmaf(w[i + j], a[i + j], lane) over each whole
 * 32 elements; lanes summed as four 8-lane vectors (0..7, 8..15, 16..23,
 * 24..31): (v0 + v1) + (v2 + v3), then llama.cpp's hsum_float_8 of that;
 * then the last n % 32 elements one by one, sum = fmaf(w, a, sum). */
float nc_ref_dot_f16_lanes(int64_t n, const nc_fp16 *w, const nc_fp16 *a);

/* llamafile's tinyBLAS<16> (llamafile_sgemm of llama.cpp's AVX-512 build,
 * which it takes for F16 weights times 2+ activation rows when n % 16 ==
 * 0): 16 lanes, lane j taking fmaf(w[i + j], a[i + j], lane) over each 16
 * elements in order; then _mm512_reduce_add_ps's halving tree (lane i +
 * lane i + 8, then + 4, + 2, + 1). Other n: nc_ref_dot_f16_vec16 (llama.cpp
 * falls back to ggml_vec_dot_f16 there). */
float nc_ref_dot_f16_tinyblas(int64_t n, const nc_fp16 *w, const nc_fp16 *a);

/* ggml_vec_dot_f16 of llama.cpp's AVX-512 build (GGML_F16_STEP 64,
 * GGML_F16_EPR 16): 64 lanes, lane j taking fmaf(w[i + j], a[i + j], lane)
 * over each whole 64 elements; the four 16-lane vectors (lanes 0..15,
 * 16..31, 32..47, 48..63) summed (v0 + v2) + (v1 + v3), then the halving
 * tree above; that float widened to double, each of the last n % 64
 * products (exact in float) added in double, the double rounded to float
 * at the end. */
float nc_ref_dot_f16_vec16(int64_t n, const nc_fp16 *w, const nc_fp16 *a);

#endif
