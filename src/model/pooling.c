/* pooling: the pooling types and the arithmetic of a pooled vector. */
#include "pooling.h"

#include <math.h>
#include <string.h>

static const char *const NAMES[NC_POOLING_COUNT] = {"none", "mean", "cls",
                                                    "last", "rank"};

const char *nc_pooling_name(int pooling) {
  return pooling >= 0 && pooling < NC_POOLING_COUNT ? NAMES[pooling] : NULL;
}

bool nc_pooling_parse(const char *s, int *out) {
  for (int i = 0; s && i < NC_POOLING_COUNT; i++)
    if (strcmp(s, NAMES[i]) == 0) {
      *out = i;
      return true;
    }
  return false;
}

bool nc_pooling_wants_row(int pooling, bool causal, int32_t i, int32_t n) {
  switch (pooling) {
  case NC_POOLING_CLS: return i == 0;
  case NC_POOLING_LAST: return i == n - 1;
  case NC_POOLING_RANK: return causal ? i == n - 1 : i == 0;
  default: /* none, mean */ return true;
  }
}

void nc_pool_rows(int pooling, const float *rows, int32_t n_rows, int64_t n,
                  float *out) {
  if (pooling != NC_POOLING_MEAN) {
    memcpy(out, rows, sizeof(float) * (size_t)n);
    return;
  }
  const float inv = 1.0f / (float)n_rows;
  for (int64_t j = 0; j < n; j++) {
    float sum = 0.0f;
    for (int32_t r = 0; r < n_rows; r++)
      sum += rows[(int64_t)r * n + j];
    out[j] = sum * inv;
  }
}

void nc_l2_normalize(float *x, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++)
    sum += (double)x[i] * x[i];
  const float scale = sum > 0.0 ? (float)(1.0 / sqrt(sum)) : 0.0f;
  for (int64_t i = 0; i < n; i++)
    x[i] *= scale;
}
