/* iq_fit: the sign folding and the least-squares sums of ggml's IQ2 and
 * IQ3 quantizers (quantize_row_iq2_*_impl, quantize_row_iq3_*_impl), in
 * their float order. Internal to src/quantize/. */
#ifndef NC_IQ_FIT_H
#define NC_IQ_FIT_H

#include <stdbool.h>
#include <stdint.h>

/* |x| of n values (a multiple of 8) into xval and the sign bits of each 8
 * into signs; even: an odd count of minus signs flips the sign of the value
 * of least weight*x^2 (7 bits are stored, the eighth derived). */
void nc_iq_group_signs(const float *xb, const float *w, int n, bool even,
                       float *xval, uint8_t *signs);

/* sum w x q and sum w q^2 of levels L (values 2L+1) over n values. */
void nc_iq_level_sums(const float *xval, const float *w, const int8_t *L, int n,
                      float *sumqx, float *sumq2);

#endif
