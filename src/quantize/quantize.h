/* quantize: writes a GGUF model file with its matrices quantized to a file
 * type (nucleus quantize, nucleus_quantize): the tensor types llama.cpp's
 * quantizer would choose (quantize_recipe.h), the blocks its quantizer
 * would write (quantize_rows.h), every metadata entry copied but
 * general.file_type and general.quantization_version, which are set. */
#ifndef NC_QUANTIZE_H
#define NC_QUANTIZE_H

#include "base/status.h"

/* Quantizes the model at in_path to out_path (written whole or removed);
 * type names a file type ("Q4_K_M", ...). n_threads: 1 or more.
 * imatrix_path: NULL, or an importance matrix (llama-imatrix's GGUF or
 * legacy form) whose weights steer the quantizers and the mixes' rules as
 * llama-quantize --imatrix does. */
nc_code nc_quantize_file(const char *in_path, const char *out_path,
                         const char *type, int n_threads,
                         const char *imatrix_path, nc_error *err);

/* The file type names nc_quantize_file takes, for messages. */
const char *nc_quantize_type_names(void);

#endif
