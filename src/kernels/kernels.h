/* kernels: the compute primitives behind one interface, with a plain-C
 * reference (ref.c) that every SIMD implementation is tested against.
 * A table is chosen once at start-up from the CPU's features. */
#ifndef NC_KERNELS_H
#define NC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "../quant.h"

/* Dot of one weight row (type w) with one activation row already quantized
 * to w's vec_dot_type; n elements. */
typedef float (*nc_vec_dot_fn)(int64_t n, const void *w, const void *a);
typedef void (*nc_quantize_fn)(const float *src, void *dst, int64_t n);

typedef struct nc_kernels {
  const char *name; /* "ref", "avx2", "avx512" */
  nc_vec_dot_fn vec_dot[NC_TYPE_COUNT];       /* indexed by weight type */
  nc_quantize_fn quantize_act[NC_TYPE_COUNT]; /* indexed by vec_dot type */
} nc_kernels;

const nc_kernels *nc_kernels_ref(void);
/* The fastest table this CPU supports (ref when nothing better). */
const nc_kernels *nc_kernels_best(void);

#endif
