/* imatrix_save: writes an importance matrix in llama-imatrix's GGUF form
 * (general.type "imatrix"; imatrix.datasets, imatrix.chunk_count,
 * imatrix.chunk_size; per weight "<name>.in_sum2" [ne0, n_mat] and
 * "<name>.counts" [1, n_mat], F32, by name), which llama-quantize
 * --imatrix and nucleus quantize --imatrix read. */
#ifndef NC_IMATRIX_SAVE_H
#define NC_IMATRIX_SAVE_H

#include <stdint.h>

#include "base/status.h"

/* One weight's statistics: per matrix (an expert, or the one matrix) the
 * sums of its input columns' squares and the rows summed. */
typedef struct nc_imatrix_stat {
  const char *name;
  const float *sums;     /* n_mat * ne0 */
  const int64_t *counts; /* n_mat */
  int64_t ne0;
  int32_t n_mat;
} nc_imatrix_stat;

/* Writes path (whole, or removed on an error). stats need not be sorted. */
nc_code nc_imatrix_save(const char *path, const nc_imatrix_stat *stats,
                        int64_t n, const char *const *datasets, int n_datasets,
                        uint32_t chunk_count, uint32_t chunk_size,
                        nc_error *err);

#endif
