/* attn_flash_prompt: the plain build of flash attention's prompt order
 * (llama.cpp's tiled path; the steps are listed in attn_flash.h). */
#include <math.h>
#include <string.h>

#include "attn_flash.h"
#include "ops.h"

enum { KT = NC_FLASH_KTILE, GROUP = 16 };

void nc_flash_tstate_init(nc_flash_tstate *st, int32_t m, int32_t hdv) {
  for (int32_t i = 0; i < m; i++) {
    st->M[i] = -INFINITY;
    st->S[i] = 0.0f;
  }
  memset(st->acc, 0, sizeof(float) * (size_t)m * (size_t)hdv);
}

void nc_flash_tstate_fold(const nc_flash_tstate *st,
                          const nc_flash_tstate *part, int32_t m, int32_t hdv) {
  for (int32_t i = 0; i < m; i++) {
    const float Mc = part->M[i], M = st->M[i];
    if (Mc == -INFINITY) continue; /* the chunk saw no key of this row */
    float *acc = st->acc + (size_t)i * (size_t)hdv;
    const float *pc = part->acc + (size_t)i * (size_t)hdv;
    if (M == -INFINITY) { /* the first chunk that saw one */
      st->M[i] = Mc;
      st->S[i] = part->S[i];
      memcpy(acc, pc, sizeof(float) * (size_t)hdv);
      continue;
    }
    const float Mn = fmaxf(M, Mc), a = expf(M - Mn), b = expf(Mc - Mn);
    const float sa = st->S[i] * a, sb = part->S[i] * b;
    st->S[i] = sa + sb;
    st->M[i] = Mn;
    for (int32_t d = 0; d < hdv; d++) {
      const float x = acc[d] * a, y = pc[d] * b;
      acc[d] = x + y;
    }
  }
}

void nc_flash_tile_widen_plain(const nc_fp16 *k, size_t k_stride,
                               const nc_fp16 *v, size_t v_stride, int32_t n,
                               int32_t hd, int32_t hdv, const float *tab,
                               float *kt, float *vt) {
  for (int32_t j = 0; j < n; j++) {
    const nc_fp16 *kr = k + (size_t)j * k_stride,
                  *vr = v + (size_t)j * v_stride;
    for (int32_t d = 0; d < hd; d++)
      kt[(size_t)d * KT + (size_t)j] = tab[kr[d]];
    for (int32_t d = 0; d < hdv; d++)
      vt[(size_t)j * (size_t)hdv + (size_t)d] = tab[vr[d]];
  }
}

void nc_flash_tfinish(const nc_flash_tstate *st, int32_t m, int32_t hdv,
                      const float *sinks, float *const *out) {
  for (int32_t i = 0; i < m; i++) {
    float S = st->S[i];
    const float ms = sinks ? nc_flash_fold_sink(sinks[i], st->M[i], &S) : 1.0f;
    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
    const float *acc = st->acc + (size_t)i * (size_t)hdv;
    for (int32_t d = 0; d < hdv; d++)
      out[i][d] = acc[d] * ms * inv;
  }
}

/* One row: scores into p (KT floats), then the state's steps. */
static void prompt_row(const nc_flash_rows *r, int32_t i, const float *kt,
                       const float *v, float *p, nc_flash_tstate *st) {
  const int32_t hd = r->hd, hdv = r->hdv, lo = r->lo[i], hi = r->hi[i];
  const float *q = r->q[i];
  float tmax = -INFINITY;
  for (int32_t j = 0; j < KT; j++) {
    if (j < lo || j >= hi) {
      p[j] = -INFINITY;
      continue;
    }
    float s = 0.0f;
    for (int32_t d = 0; d < hd; d++)
      s = fmaf(q[d], kt[(size_t)d * KT + (size_t)j], s);
    p[j] = nc_flash_score(s, r->scale, r->softcap);
    tmax = fmaxf(tmax, p[j]);
  }
  float *acc = st->acc + (size_t)i * (size_t)hdv;
  const float M = st->M[i], Mn = fmaxf(M, tmax);
  if (Mn > M) {
    const float ms = expf(M - Mn);
    for (int32_t d = 0; d < hdv; d++)
      acc[d] *= ms;
    st->S[i] *= ms;
  }
  st->M[i] = Mn;
  double sum = 0.0;
  for (int32_t g = 0; g < KT; g += GROUP) {
    for (int32_t l = 0; l < GROUP; l++)
      p[g + l] = nc_expf_ggml(p[g + l] - Mn);
    sum += (double)nc_sum16_tree(p + g);
  }
  st->S[i] = (float)((double)st->S[i] + sum);
  for (int32_t j = lo; j < hi; j++) {
    const float *vr = v + (size_t)j * (size_t)hdv;
    for (int32_t d = 0; d < hdv; d++)
      acc[d] = fmaf(vr[d], p[j], acc[d]);
  }
}

void nc_flash_tile_scores_plain(const nc_flash_rows *r, const float *kt,
                                float *p, float *tmax) {
  for (int32_t i = 0; i < r->m; i++) {
    float *pr = p + (size_t)i * KT, t = -INFINITY;
    for (int32_t j = 0; j < KT; j++) {
      if (j < r->lo[i] || j >= r->hi[i]) {
        pr[j] = -INFINITY;
        continue;
      }
      float s = 0.0f;
      for (int32_t d = 0; d < r->hd; d++)
        s = fmaf(r->q[i][d], kt[(size_t)d * KT + (size_t)j], s);
      pr[j] = nc_flash_score(s, r->scale, r->softcap);
      t = fmaxf(t, pr[j]);
    }
    tmax[i] = t;
  }
}

double nc_flash_tile_exps_plain(float *p, int32_t lo, int32_t hi, float M) {
  double sum = 0.0;
  for (int32_t g = 0; g < KT; g += GROUP) {
    for (int32_t j = g; j < g + GROUP; j++)
      p[j] = j >= lo && j < hi ? nc_expf_ggml(p[j] - M) : 0.0f;
    sum += (double)nc_sum16_tree(p + g);
  }
  return sum;
}

/* One group of the values step (nc_flash_tvals). */
static void tile_values_group(const nc_flash_tvals *a, const float *pg,
                              const float *msg, const nc_flash_paged *v,
                              size_t v_off, const float *tab, float *acc,
                              size_t acc_stride) {
  for (int32_t i = 0; i < a->m; i++) {
    float *ac = acc + (size_t)i * acc_stride;
    if (msg[i] != 1.0f)
      for (int32_t d = a->d0; d < a->d1; d++)
        ac[d] *= msg[i];
  }
  for (int32_t j = a->j0; j < a->j1; j++) {
    const nc_fp16 *vr = nc_flash_paged_row(v, j) + v_off;
    for (int32_t i = 0; i < a->m; i++) {
      float *ac = acc + (size_t)i * acc_stride;
      const float w = pg[(size_t)i * a->p_stride + (size_t)j];
      for (int32_t d = a->d0; d < a->d1; d++)
        ac[d] = fmaf(tab[vr[d]], w, ac[d]);
    }
  }
}

void nc_flash_tile_values_plain(const nc_flash_tvals *a,
                                const nc_flash_paged *v, const float *tab,
                                float *acc, size_t acc_stride) {
  for (int32_t g = 0; g < a->groups; g++)
    tile_values_group(a, a->p + (size_t)g * a->p_group,
                      a->ms + (size_t)g * a->ms_group, v,
                      (size_t)g * a->v_group, tab,
                      acc + (size_t)g * a->acc_group, acc_stride);
}

void nc_flash_tile_prompt_plain(const nc_flash_rows *r, const float *kt,
                                const float *v, float *p, nc_flash_tstate *st) {
  for (int32_t i = 0; i < r->m; i++)
    if (r->lo[i] < r->hi[i]) prompt_row(r, i, kt, v, p + (size_t)i * KT, st);
}
