/* quantize_rows: f32 weight rows to quantized blocks, as llama.cpp's
 * quantizer writes them without an importance matrix (ggml's
 * quantize_row_*_ref: the same blocks, bit for bit). Internal to
 * src/quantize/. */
#ifndef NC_QUANTIZE_ROWS_H
#define NC_QUANTIZE_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf/quant.h"
#include "iq_lattice.h"

/* Whether nc_quantize_weights can write type t: F32, F16, BF16, Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4,
 * IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M. */
bool nc_quantize_weights_supported(nc_type t);

/* Whether t's quantizer reads an importance matrix (llama.cpp's
 * quantize_row_*_impl): the 32-block types but Q8_0, the K-quants, the IQ
 * types. */
bool nc_quantize_uses_imatrix(nc_type t);
/* Whether llama.cpp refuses to write t without one (its "very low-bit"
 * types: IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M). */
bool nc_quantize_needs_imatrix(nc_type t);

/* Quantizes nrows rows of n_per_row values (a multiple of t's block size)
 * from src into dst (nrows * nc_row_size(t, n_per_row) bytes). qw: NULL, or
 * n_per_row importance weights (an importance matrix's mean squared
 * activations of each column) used for every row, as llama.cpp's quantizer
 * uses them; types that read none ignore it (and those that need one,
 * nc_quantize_needs_imatrix, must be given it). lat: the search table of
 * t's codebook for the lattice types (nc_iq_lattice_needed), else NULL. */
void nc_quantize_weights(nc_type t, const float *src, void *dst, int64_t nrows,
                         int64_t n_per_row, const float *qw,
                         const nc_iq_lattice *lat);

/* ggml's make_qp_quants: non-negative levels L[n] in 0..nmax for x
 * (weights w) and their scale, as the K-quants fit their sub-block scales
 * and IQ2_XXS its first guess. */
float nc_fit_scale_pos(int n, int nmax, const float *x, uint8_t *L,
                       const float *w);

#endif
