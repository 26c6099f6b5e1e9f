/* quantize_iq: the lattice quantizers of the IQ1/IQ2/IQ3 types, each in
 * the float order of ggml's quantize_row_*_impl (so a file quantized here
 * holds llama.cpp's bytes). Each takes one row of nb superblocks (QK_K
 * values each), the search table of its codebook (iq_lattice.h) and the
 * row's importance weights qw (NULL: the type's own weights where ggml has
 * them; IQ2_XXS, IQ2_XS, IQ1_S and IQ1_M need qw). Internal to
 * src/quantize/. */
#ifndef NC_QUANTIZE_IQ_H
#define NC_QUANTIZE_IQ_H

#include <stdint.h>

#include "gguf/quant.h"
#include "iq_lattice.h"

void nc_iq3_xxs_row(const nc_iq_lattice *lat, const float *x, block_iq3_xxs *y,
                    int64_t nb, const float *qw);
void nc_iq3_s_row(const nc_iq_lattice *lat, const float *x, block_iq3_s *y,
                  int64_t nb, const float *qw);
void nc_iq2_xxs_row(const nc_iq_lattice *lat, const float *x, block_iq2_xxs *y,
                    int64_t nb, const float *qw);
void nc_iq2_xs_row(const nc_iq_lattice *lat, const float *x, block_iq2_xs *y,
                   int64_t nb, const float *qw);
void nc_iq2_s_row(const nc_iq_lattice *lat, const float *x, block_iq2_s *y,
                  int64_t nb, const float *qw);
void nc_iq1_s_row(const nc_iq_lattice *lat, const float *x, block_iq1_s *y,
                  int64_t nb, const float *qw);
void nc_iq1_m_row(const nc_iq_lattice *lat, const float *x, block_iq1_m *y,
                  int64_t nb, const float *qw);

#endif
