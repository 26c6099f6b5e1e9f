/* delta_net: one token of the gated delta rule (Qwen3.5's linear
 * attention, llama.cpp's ggml_gated_delta_net) on one head's state.
 *
 * The state matrix M (S x S) is stored transposed, as ggml keeps it: row j
 * of s is column j of M (s[j * S + i] = M[i][j]). For each row j, in
 * order: s_j *= decay (decay = exp(g)); d = (v[j] - s_j . k) * beta;
 * s_j += d k; out[j] = (s_j . q) * scale. Each row depends on nothing but
 * itself, so a row is finished before the next is read.
 *
 * The dot products are summed in NC_DELTA_LANES lanes (element i into lane
 * i % 8, a fused multiply-add each), the lanes then added as
 * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), then the elements past
 * the last multiple of 8 one by one (fmaf): the plain build computes
 * exactly that, and a SIMD build must give the same bits (test_delta_net).
 * The state update is fmaf(k[i], d, s[i]). */
#ifndef NC_DELTA_NET_H
#define NC_DELTA_NET_H

#include <stdint.h>

enum { NC_DELTA_LANES = 8 };

/* The plain-C build (the reference; nc_ops_plain's delta_rule) and the
 * AVX2 one (defined where the compiler targets AVX2 and FMA, as
 * ops_avx2.c's table, which takes it). */
void nc_delta_rule_plain(float *s, const float *q, const float *k,
                         const float *v, float decay, float beta, float scale,
                         float *out, int64_t S);
void nc_delta_rule_avx2(float *s, const float *q, const float *k,
                        const float *v, float decay, float beta, float scale,
                        float *out, int64_t S);

#endif
