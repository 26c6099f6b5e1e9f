/* quant_round: ggml's nearest_int, the rounding every quantizer here uses.
 * Internal to src/quantize/. */
#ifndef NC_QUANT_ROUND_H
#define NC_QUANT_ROUND_H

#include <stdint.h>
#include <string.h>

/* Round to nearest, ties to even, through the float mantissa (|v| < 2^22). */
static inline int nc_nearest_int(float v) {
  const float t = v + 12582912.f;
  int32_t i;
  memcpy(&i, &t, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

#endif
