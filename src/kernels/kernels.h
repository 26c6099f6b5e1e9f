/* kernels: the compute primitives behind one interface, with a plain-C
 * reference (ref.c) that every SIMD implementation is tested against.
 * A table is chosen once at start-up from the CPU's features. */
#ifndef NC_KERNELS_H
#define NC_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../quant.h"

/* Dot of one weight row (type w) with one activation row already quantized
 * to w's vec_dot_type; n elements. */
typedef float (*nc_vec_dot_fn)(int64_t n, const void *w, const void *a);
typedef void (*nc_quantize_fn)(const float *src, void *dst, int64_t n);
/* Dots of one weight row with nrows activation rows (each quantized to w's
 * vec_dot_type, a_stride bytes apart): out[r * out_stride] = the dot with
 * row r. Batch invariance: each out value is bit-identical to vec_dot of
 * the same table on that row alone, whatever nrows is. */
typedef void (*nc_vec_dot_rows_fn)(int64_t n, const void *w, const void *a,
                                   size_t a_stride, int nrows, float *out,
                                   size_t out_stride);

typedef struct nc_kernels {
  const char *name;                               /* "ref", "avx2", "avx512" */
  nc_vec_dot_fn vec_dot[NC_TYPE_COUNT];           /* indexed by weight type */
  nc_vec_dot_rows_fn vec_dot_rows[NC_TYPE_COUNT]; /* same, many act rows */
  nc_quantize_fn quantize_act[NC_TYPE_COUNT];     /* indexed by vec_dot type */
  /* true where this table's quantize_act writes its own layout (same size,
   * nc_row_size(type, n)): feed those rows only to this table's dots. */
  bool private_act[NC_TYPE_COUNT];
} nc_kernels;

const nc_kernels *nc_kernels_ref(void);
/* The fastest table this CPU supports (ref when nothing better), unless
 * $NUCLEUS_KERNELS names another table this CPU supports. */
const nc_kernels *nc_kernels_best(void);
/* A table by name ("ref", "avx2", "avx512"); NULL when the name is unknown
 * or this CPU lacks the instructions the table needs. */
const nc_kernels *nc_kernels_by_name(const char *name);

#endif
