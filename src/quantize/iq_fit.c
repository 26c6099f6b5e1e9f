/* iq_fit: the steps the lattice quantizers (quantize_iq2.c, quantize_iq3.c)
 * share, in ggml's float order (iq_fit.h). */
#include "iq_fit.h"

/* |x| of n values and the sign bits of each 8; even: an odd count of
 * minus signs flips the sign of the value of least weight*x^2 (7 bits are
 * stored, the eighth derived). */
void nc_iq_group_signs(const float *xb, const float *w, int n, bool even,
                       float *xval, uint8_t *signs) {
  for (int k = 0; k < n / 8; k++) {
    int nflip = 0;
    uint8_t s = 0;
    for (int i = 0; i < 8; i++) {
      const float v = xb[8 * k + i];
      xval[8 * k + i] = v >= 0 ? v : -v;
      if (v < 0) {
        nflip++;
        s |= (uint8_t)(1 << i);
      }
    }
    if (even && nflip % 2) {
      int imin = 0;
      float mn = w[8 * k] * xb[8 * k] * xb[8 * k];
      for (int i = 1; i < 8; i++) {
        const float a = w[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
        if (a < mn) {
          mn = a;
          imin = i;
        }
      }
      xval[8 * k + imin] = -xval[8 * k + imin];
      s ^= (uint8_t)(1 << imin);
    }
    signs[k] = even ? (uint8_t)(s & 127) : s;
  }
}

/* sum w x q and sum w q^2 of levels L (values 2L+1), in ggml's order. */
void nc_iq_level_sums(const float *xval, const float *w, const int8_t *L, int n,
                      float *sumqx, float *sumq2) {
  float a = 0, b = 0;
  for (int i = 0; i < n; i++) {
    const float q = (float)(2 * L[i] + 1);
    a += w[i] * xval[i] * q;
    b += w[i] * q * q;
  }
  *sumqx = a;
  *sumq2 = b;
}
