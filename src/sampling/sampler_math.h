/* sampler_math: the passes over a whole logits row (max, exp, argmax,
 * collection, top-n), written so the compiler vectorises them. Every pass
 * reduces in a fixed order that depends only on n, so a row's result never
 * depends on the batch it came in. Internal to the sampler. */
#ifndef NC_SAMPLER_MATH_H
#define NC_SAMPLER_MATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/sampler_simd.h"

/* One candidate token: s = (logit - max) / T (<= 0), w = exp(s), key = the
 * order being selected on (ascending; ties to the lower id). */
typedef struct nc_cand {
  float key;
  float w;
  float s;
  int32_t id;
} nc_cand;

/* exp(x) for x <= 0 within ~2 ulp; 0 below -87.3 and for -inf. */
float nc_expf_neg(float x);

/* Max of x[0..n), copying x to dst when dst is not NULL, and whether any
 * element is NaN or +inf (bad). */
float nc_row_copy_max(const float *x, float *dst, size_t n, bool *bad);
/* Max of x[0..n) and whether any element is NaN or +inf (bad). */
float nc_row_max(const float *x, size_t n, bool *bad);
/* The lowest index i with x[i] == m (n when none). */
size_t nc_row_find(const float *x, size_t n, float m);
/* The first index that is NaN or +inf (n when none). */
size_t nc_row_find_bad(const float *x, size_t n);

/* Sum of exp((x[i] - m) * scale) in a fixed order; also stored into w when
 * w is not NULL. x[i] <= m is assumed (-inf gives 0). */
double nc_row_exp(const float *x, size_t n, float m, float scale, float *w);

/* The same two passes using SIMD up to a level (NC_SIMD_*, from the
 * backend table; every level gives bit-identical results); a level the CPU
 * lacks falls back. */
float nc_row_copy_max_isa(const float *x, float *dst, size_t n, bool *bad,
                          int simd);
double nc_row_exp_isa(const float *x, size_t n, float m, float scale, float *w,
                      int simd);

/* Appends every i with (x[i] - m) * scale >= thr (and x[i] finite) to out,
 * with s and w filled and key = -s; returns the count. */
size_t nc_row_collect(const float *x, size_t n, float m, float scale, float thr,
                      nc_cand *out);

/* The k largest of x (ties to the lower index), sorted descending, into
 * ids/vals; skips -inf when skip_neg_inf. Returns how many (<= k). */
size_t nc_row_topn(const float *x, size_t n, size_t k, bool skip_neg_inf,
                   int32_t *ids, float *vals);

#endif
