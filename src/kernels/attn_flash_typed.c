/* attn_flash_typed: the plain build of flash attention over typed KV
 * caches (BF16, Q8_0, Q4_0 and F16 in any pairing; see attn_flash.h): the
 * K dots in the float order of llama.cpp's x86 vec_dot kernels, and the F32
 * value accumulator of its one-row path. */
#include <math.h>
#include <string.h>

#include "attn_flash.h"
#include "ops.h"

nc_type nc_flash_q_type(nc_type k_type) {
  switch (k_type) {
  case NC_TYPE_Q8_0:
  case NC_TYPE_Q4_0: return NC_TYPE_Q8_0;
  case NC_TYPE_BF16: return NC_TYPE_BF16;
  default: return NC_TYPE_F16;
  }
}

/* hsum_float_8's order: (l + l+4), then (0+2, 1+3), then the two. */
static float hsum8(const float a[8]) {
  float b[4];
  for (int l = 0; l < 4; l++)
    b[l] = a[l + 4] + a[l];
  const float c0 = b[0] + b[2], c1 = b[1] + b[3];
  return c0 + c1;
}

/* The quant of element e (0..31) of a Q4_0 block, in [-8, 7]. */
static int q4_at(const block_q4_0 *x, int e) {
  const uint8_t b = x->qs[e % 16];
  return (e < 16 ? b & 0x0f : b >> 4) - 8;
}

static float dot_q8_0(const block_q8_0 *x, const block_q8_0 *y, int32_t nb,
                      const float *tab) {
  float acc[8] = {0};
  for (int32_t i = 0; i < nb; i++) {
    const float d = tab[x[i].d] * tab[y[i].d];
    for (int l = 0; l < 8; l++) {
      int s = 0;
      for (int e = 4 * l; e < 4 * l + 4; e++)
        s += x[i].qs[e] * y[i].qs[e];
      acc[l] = fmaf(d, (float)s, acc[l]);
    }
  }
  return hsum8(acc);
}

static float dot_q4_0(const block_q4_0 *x, const block_q8_0 *y, int32_t nb,
                      const float *tab) {
  float acc[8] = {0};
  for (int32_t i = 0; i < nb; i++) {
    const float d = tab[x[i].d] * tab[y[i].d];
    for (int l = 0; l < 8; l++) {
      int s = 0;
      for (int e = 4 * l; e < 4 * l + 4; e++)
        s += q4_at(&x[i], e) * y[i].qs[e];
      acc[l] = fmaf(d, (float)s, acc[l]);
    }
  }
  return hsum8(acc);
}

/* vdpbf16ps: lane l of an accumulator takes pair (2l, 2l+1), the odd
 * product first; a product of two bfloat16 is exact in float, so each step
 * is one rounding (fmaf). Subnormals, which the instruction flushes, are
 * not modelled (attention rows do not reach them). */
static float dot_bf16(const nc_bf16 *x, const nc_bf16 *y, int32_t n) {
  const int32_t np = n / 64 * 64;
  float c[2][16] = {{0}};
  for (int32_t i = 0; i < np; i += 64)
    for (int h = 0; h < 2; h++)
      for (int l = 0; l < 16; l++) {
        const int32_t e = i + 32 * h + 2 * l;
        c[h][l] =
            fmaf(nc_bf16_to_fp32(x[e + 1]), nc_bf16_to_fp32(y[e + 1]), c[h][l]);
        c[h][l] = fmaf(nc_bf16_to_fp32(x[e]), nc_bf16_to_fp32(y[e]), c[h][l]);
      }
  double sum = (double)nc_sum16_tree(c[0]);
  sum += (double)nc_sum16_tree(c[1]);
  for (int32_t e = np; e < n; e++)
    sum += (double)(nc_bf16_to_fp32(x[e]) * nc_bf16_to_fp32(y[e]));
  return (float)sum;
}

float nc_flash_dot_typed(nc_type k_type, const void *k, const void *q,
                         int32_t hd, const float *tab) {
  switch (k_type) {
  case NC_TYPE_Q8_0: return dot_q8_0(k, q, hd / QK8_0, tab);
  case NC_TYPE_Q4_0: return dot_q4_0(k, q, hd / QK4_0, tab);
  case NC_TYPE_BF16: return dot_bf16(k, q, hd);
  default: return nc_flash_dot_f16(k, q, hd, tab);
  }
}

/* One value row as floats (exact for every cache type). */
static void v_to_float(nc_type t, const uint8_t *v, float *out, int32_t n,
                       const float *tab) {
  switch (t) {
  case NC_TYPE_Q8_0: {
    const block_q8_0 *x = (const block_q8_0 *)v;
    for (int32_t i = 0; i < n / QK8_0; i++) {
      const float d = tab[x[i].d];
      for (int e = 0; e < QK8_0; e++)
        out[i * QK8_0 + e] = (float)x[i].qs[e] * d;
    }
    return;
  }
  case NC_TYPE_Q4_0: {
    const block_q4_0 *x = (const block_q4_0 *)v;
    for (int32_t i = 0; i < n / QK4_0; i++) {
      const float d = tab[x[i].d];
      for (int e = 0; e < QK4_0; e++)
        out[i * QK4_0 + e] = (float)q4_at(&x[i], e) * d;
    }
    return;
  }
  case NC_TYPE_BF16: {
    const nc_bf16 *x = (const nc_bf16 *)v;
    for (int32_t d = 0; d < n; d++)
      out[d] = nc_bf16_to_fp32(x[d]);
    return;
  }
  default: {
    const nc_fp16 *x = (const nc_fp16 *)v;
    for (int32_t d = 0; d < n; d++)
      out[d] = tab[x[d]];
    return;
  }
  }
}

void nc_flash_tile_typed_plain(const nc_flash_tquery *fq, const uint8_t *k,
                               size_t k_stride, const uint8_t *v,
                               size_t v_stride, int32_t n, const float *tab,
                               float *s, float *vrow, nc_flash_state *st) {
  const int32_t hdv = fq->hdv;
  const bool v16 = fq->v_type == NC_TYPE_F16;
  for (int32_t i = 0; i < fq->m; i++) {
    const uint8_t *q = (const uint8_t *)fq->q + (size_t)i * fq->q_bytes;
    for (int32_t j = 0; j < n; j++)
      s[j] = nc_flash_score(nc_flash_dot_typed(fq->k_type,
                                               k + (size_t)j * k_stride, q,
                                               fq->hd, tab),
                            fq->scale, fq->softcap);
    float M = st->M[i], S = st->S[i];
    for (int32_t j = 0; j < n; j++) {
      const uint8_t *vr = v + (size_t)j * v_stride;
      float ms = 1.0f, vs = 1.0f;
      if (v16) {
        nc_fp16 *acc = st->acc + (size_t)i * (size_t)hdv;
        const nc_fp16 *vh = (const nc_fp16 *)vr;
        if (s[j] > M) {
          ms = expf(M - s[j]);
          M = s[j];
          for (int32_t d = 0; d < hdv; d++)
            acc[d] = nc_fp32_to_fp16(tab[acc[d]] * ms);
        } else {
          vs = expf(s[j] - M);
        }
        for (int32_t d = 0; d < hdv; d++)
          acc[d] = nc_fp32_to_fp16(fmaf(tab[vh[d]], vs, tab[acc[d]]));
      } else {
        float *acc = st->acc32 + (size_t)i * (size_t)hdv;
        if (s[j] > M) {
          ms = expf(M - s[j]);
          M = s[j];
          for (int32_t d = 0; d < hdv; d++)
            acc[d] *= ms;
        } else {
          vs = expf(s[j] - M);
        }
        v_to_float(fq->v_type, vr, vrow, hdv, tab);
        for (int32_t d = 0; d < hdv; d++)
          acc[d] = fmaf(vrow[d], vs, acc[d]);
      }
      S = fmaf(S, ms, vs);
    }
    st->M[i] = M;
    st->S[i] = S;
  }
}

void nc_flash_finish_typed(const nc_flash_state *st, nc_type v_type, int32_t m,
                           int32_t hdv, const float *tab, const float *sinks,
                           float *out, size_t out_stride) {
  if (v_type == NC_TYPE_F16) {
    nc_flash_finish(st, m, hdv, tab, sinks, out, out_stride);
    return;
  }
  for (int32_t i = 0; i < m; i++) {
    float S = st->S[i];
    const float ms = sinks ? nc_flash_fold_sink(sinks[i], st->M[i], &S) : 1.0f;
    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
    const float *acc = st->acc32 + (size_t)i * (size_t)hdv;
    float *o = out + (size_t)i * out_stride;
    for (int32_t d = 0; d < hdv; d++)
      o[d] = acc[d] * ms * inv;
  }
}
