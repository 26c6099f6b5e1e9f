/* delta_net: the plain-C gated delta rule (delta_net.h). */
#include "delta_net.h"

#include <math.h>

/* s . x over S values in the lanes of delta_net.h. */
static float dot_lanes(const float *s, const float *x, int64_t S) {
  float l[NC_DELTA_LANES] = {0};
  const int64_t n8 = S / NC_DELTA_LANES * NC_DELTA_LANES;
  for (int64_t i = 0; i < n8; i += NC_DELTA_LANES)
    for (int c = 0; c < NC_DELTA_LANES; c++)
      l[c] = fmaf(s[i + c], x[i + c], l[c]);
  float sum = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
  for (int64_t i = n8; i < S; i++)
    sum = fmaf(s[i], x[i], sum);
  return sum;
}

void nc_delta_rule_plain(float *s, const float *q, const float *k,
                         const float *v, float decay, float beta, float scale,
                         float *out, int64_t S) {
  for (int64_t j = 0; j < S; j++) {
    float *row = s + j * S;
    for (int64_t i = 0; i < S; i++)
      row[i] *= decay;
    const float d = (v[j] - dot_lanes(row, k, S)) * beta;
    for (int64_t i = 0; i < S; i++)
      row[i] = fmaf(k[i], d, row[i]);
    out[j] = dot_lanes(row, q, S) * scale;
  }
}
