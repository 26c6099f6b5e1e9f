/* quantize_rows: f32 weight rows to quantized blocks, as llama.cpp's
 * quantizer writes them without an importance matrix (ggml's
 * quantize_row_*_ref: the same blocks, bit for bit). Internal to
 * src/quantize/. */
#ifndef NC_QUANTIZE_ROWS_H
#define NC_QUANTIZE_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf/quant.h"

/* Whether nc_quantize_weights can write type t: F32, F16, BF16, Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4. */
bool nc_quantize_weights_supported(nc_type t);

/* Quantizes nrows rows of n_per_row values (a multiple of t's block size)
 * from src into dst (nrows * nc_row_size(t, n_per_row) bytes). */
void nc_quantize_weights(nc_type t, const float *src, void *dst, int64_t nrows,
                         int64_t n_per_row);

#endif
