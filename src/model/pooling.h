/* pooling: turning a sequence's output rows (the final hidden states the
 * forward writes in embedding mode) into one vector, and the steps after
 * it: the rank head, the dense projections, L2 normalisation and
 * Matryoshka truncation. llama.cpp's pooling types and their numbers (the
 * file's {arch}.pooling_type). */
#ifndef NC_POOLING_H
#define NC_POOLING_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

typedef enum nc_pooling {
  NC_POOLING_NONE = 0, /* every row its own vector */
  NC_POOLING_MEAN = 1, /* the mean of the sequence's rows */
  NC_POOLING_CLS = 2,  /* its first row */
  NC_POOLING_LAST = 3, /* its last row */
  NC_POOLING_RANK = 4, /* the rank head over its first row (the last for a
                          causal model), a relevance score per sequence */
} nc_pooling;
enum { NC_POOLING_COUNT = 5 };

/* "none", "mean", "cls", "last", "rank"; NULL outside the range. */
const char *nc_pooling_name(int pooling);
/* The pooling named s; false when none is. */
bool nc_pooling_parse(const char *s, int *out);

/* Whether row i of a sequence of n rows takes part in its pooling (the
 * rows the forward must output); causal: the model's attention is causal
 * (rank then reads the last row). */
bool nc_pooling_wants_row(int pooling, bool causal, int32_t i, int32_t n);

/* The pooled vector (n values) of a sequence from its wanted rows (rows of
 * n floats, in order, as nc_pooling_wants_row chose them; n_rows of them):
 * the mean (summed in order, times 1 / n_rows), or the one row. NONE is not
 * pooled (rows stay rows). */
void nc_pool_rows(int pooling, const float *rows, int32_t n_rows, int64_t n,
                  float *out);

/* x (n values) divided by its L2 norm (summed in double, as llama.cpp's
 * common_embd_normalize); a zero vector stays zero. */
void nc_l2_normalize(float *x, int64_t n);

#endif
