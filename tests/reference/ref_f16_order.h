/* ref_f16_order.c: the float order of the avx2 table's F16 dot
 * (nc_avx2_dot_f16, which the avx2 and avx512 tables use as vec_dot and
 * their F16 matmuls follow, gemm_f16.h) in plain C, one operation at a
 * time: the reference of those kernels. Only tests use it. */
#ifndef NC_REF_F16_ORDER_H
#define NC_REF_F16_ORDER_H

#include <stdint.h>

#include "gguf/quant.h"

/* 32 lanes, lane j taking fmaf(w[i + j], a[i + j], lane) over each whole
 * 32 elements; lanes summed as four 8-lane vectors (0..7, 8..15, 16..23,
 * 24..31): (v0 + v1) + (v2 + v3), then llama.cpp's hsum_float_8 of that;
 * then the last n % 32 elements one by one, sum = fmaf(w, a, sum). */
float nc_ref_dot_f16_lanes(int64_t n, const nc_fp16 *w, const nc_fp16 *a);

#endif
