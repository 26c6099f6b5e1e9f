/* attn_flash: the plain build and the state helpers (see attn_flash.h). */
#include "attn_flash.h"

#include <math.h>
#include <string.h>

#include "ops.h"

enum { DOT_LANES = 16, DOT_ARR = 4, DOT_STEP = DOT_LANES * DOT_ARR };

float nc_flash_dot_f16(const nc_fp16 *x, const nc_fp16 *y, int32_t n,
                       const float *tab) {
  const int32_t np = n / DOT_STEP * DOT_STEP;
  float acc[DOT_ARR][DOT_LANES] = {{0}};
  for (int32_t i = 0; i < np; i += DOT_STEP)
    for (int32_t r = 0; r < DOT_ARR; r++)
      for (int32_t l = 0; l < DOT_LANES; l++) {
        const int32_t d = i + r * DOT_LANES + l;
        acc[r][l] = fmaf(tab[x[d]], tab[y[d]], acc[r][l]);
      }
  for (int32_t l = 0; l < DOT_LANES; l++) {
    acc[0][l] += acc[2][l];
    acc[1][l] += acc[3][l];
  }
  for (int32_t l = 0; l < DOT_LANES; l++)
    acc[0][l] += acc[1][l];
  double sum = (double)nc_sum16_tree(acc[0]);
  /* half * half is exact in float */
  for (int32_t d = np; d < n; d++)
    sum += (double)(tab[x[d]] * tab[y[d]]);
  return (float)sum;
}

float nc_flash_score(float dot, float scale, float softcap) {
  if (softcap == 0.0f) return dot * scale;
  const float s = dot * (scale / softcap);
  return softcap * tanhf(s);
}

static void flash_tile_plain(const nc_flash_query *fq, const nc_fp16 *k,
                             size_t k_stride, const nc_fp16 *v, size_t v_stride,
                             int32_t n, const float *tab, float *s,
                             nc_flash_state *st) {
  const int32_t hd = fq->hd, hdv = fq->hdv;
  for (int32_t i = 0; i < fq->m; i++) {
    const nc_fp16 *q = fq->q + (size_t)i * (size_t)hd;
    for (int32_t j = 0; j < n; j++)
      s[j] =
          nc_flash_score(nc_flash_dot_f16(k + (size_t)j * k_stride, q, hd, tab),
                         fq->scale, fq->softcap);
    nc_fp16 *acc = st->acc + (size_t)i * (size_t)hdv;
    float M = st->M[i], S = st->S[i];
    for (int32_t j = 0; j < n; j++) {
      float ms = 1.0f, vs = 1.0f;
      if (s[j] > M) {
        ms = expf(M - s[j]);
        M = s[j];
        for (int32_t d = 0; d < hdv; d++)
          acc[d] = nc_fp32_to_fp16(tab[acc[d]] * ms);
      } else {
        vs = expf(s[j] - M);
      }
      const nc_fp16 *vr = v + (size_t)j * v_stride;
      for (int32_t d = 0; d < hdv; d++)
        acc[d] = nc_fp32_to_fp16(fmaf(tab[vr[d]], vs, tab[acc[d]]));
      S = fmaf(S, ms, vs);
    }
    st->M[i] = M;
    st->S[i] = S;
  }
}

static const nc_attn_flash_kernels PLAIN = {
    .name = "plain",
    .tile = flash_tile_plain,
    .tile_typed = nc_flash_tile_typed_plain,
    .tile_prompt = nc_flash_tile_prompt_plain,
    .tile_scores = nc_flash_tile_scores_plain,
    .tile_exps = nc_flash_tile_exps_plain,
    .tile_values = nc_flash_tile_values_plain,
    .tile_widen = nc_flash_tile_widen_plain,
};

const nc_attn_flash_kernels *nc_attn_flash_plain(void) {
  return &PLAIN;
}

void nc_flash_state_init(nc_flash_state *st, int32_t m, int32_t hdv) {
  for (int32_t i = 0; i < m; i++) {
    st->M[i] = -INFINITY;
    st->S[i] = 0.0f;
  }
  if (st->acc) memset(st->acc, 0, sizeof(nc_fp16) * (size_t)m * (size_t)hdv);
  if (st->acc32) memset(st->acc32, 0, sizeof(float) * (size_t)m * (size_t)hdv);
}

float nc_flash_fold_sink(float sink, float M, float *S) {
  float ms = 1.0f, vs = 1.0f;
  if (sink > M)
    ms = expf(M - sink);
  else
    vs = expf(sink - M);
  *S = fmaf(*S, ms, vs);
  return ms;
}

void nc_flash_finish(const nc_flash_state *st, int32_t m, int32_t hdv,
                     const float *tab, const float *sinks, float *out,
                     size_t out_stride) {
  for (int32_t i = 0; i < m; i++) {
    float S = st->S[i];
    /* with a sink: the widened accumulator scaled, then divided */
    const float ms = sinks ? nc_flash_fold_sink(sinks[i], st->M[i], &S) : 1.0f;
    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
    const nc_fp16 *acc = st->acc + (size_t)i * (size_t)hdv;
    float *o = out + (size_t)i * out_stride;
    for (int32_t d = 0; d < hdv; d++)
      o[d] = tab[acc[d]] * ms * inv;
  }
}
