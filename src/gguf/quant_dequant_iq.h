/* quant_dequant_iq: dequantization of the IQ1/IQ2/IQ3 lattice types, for
 * nc_dequantize_row. Internal to src/gguf/. */
#ifndef NC_QUANT_DEQUANT_IQ_H
#define NC_QUANT_DEQUANT_IQ_H

#include <stdbool.h>
#include <stdint.h>

#include "quant.h"

/* Dequantizes nb blocks of type into dst; false (nothing written) when type
 * is not one of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M. */
bool nc_dequantize_iq(nc_type type, const void *src, float *dst, int64_t nb);

#endif
