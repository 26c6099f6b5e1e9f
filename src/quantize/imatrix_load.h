/* imatrix_load: reads an importance matrix as llama-imatrix writes it (its
 * GGUF form: "<tensor>.in_sum2" and "<tensor>.counts" per weight, with
 * imatrix.datasets / chunk_count / chunk_size; or the legacy binary .dat)
 * into the per-column weights llama-quantize hands its quantizers: the
 * summed squared activations divided by their count, per expert. */
#ifndef NC_IMATRIX_LOAD_H
#define NC_IMATRIX_LOAD_H

#include <stdint.h>

#include "base/status.h"

typedef struct nc_imatrix_entry {
  char *name;    /* the weight tensor's name */
  float *values; /* n values: ne0 per expert, experts one after another */
  int64_t n;
  int64_t seq; /* the order it was read in */
} nc_imatrix_entry;

typedef struct nc_imatrix {
  nc_imatrix_entry *entries; /* sorted by name */
  int64_t n_entries;
  char *dataset;  /* the first dataset named, or NULL */
  int32_t chunks; /* chunks it was computed on (0: not said) */
} nc_imatrix;

/* Loads path into *out (zeroed first; nc_imatrix_free releases it). A file
 * that is neither form, a GGUF one without the three metadata keys, sums
 * without counts, non-F32 data or a value that is not finite is an error
 * naming the file and the entry. */
nc_code nc_imatrix_load(const char *path, nc_imatrix *out, nc_error *err);

/* The entry for the weight named name, or NULL. */
const nc_imatrix_entry *nc_imatrix_find(const nc_imatrix *m, const char *name);

void nc_imatrix_free(nc_imatrix *m);

#endif
