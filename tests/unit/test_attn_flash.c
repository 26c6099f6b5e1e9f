/* attn_flash (src/kernels/attn_flash*.c): the AVX-512 tile (and the prompt
 * order's widening of a tile) gives the plain build's bits; splitting the keys
 * into tiles of any size changes nothing (the online softmax runs key by key);
 * the result is attention (close to a float64 softmax); soft-capping and the
 * state helpers work as stated. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gguf/quant.h"
#include "kernels/attn_flash.h"

static float TAB[65536];

static uint32_t rng_state = 12345u;
static float frand(float lo, float hi) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(rng_state >> 8) / (float)(1u << 24);
}

static void fill_h(nc_fp16 *h, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++)
    h[i] = nc_fp32_to_fp16(frand(lo, hi));
}

typedef struct run {
  int32_t m, hd, hdv, n;
  float softcap;
} run;

/* Runs n keys through k's tile, tile keys at a time; out [m, hdv]. */
static void attend(const nc_attn_flash_kernels *k, const run *r,
                   const nc_fp16 *q, const nc_fp16 *kk, const nc_fp16 *v,
                   size_t ks, size_t vs, int32_t tile, float *out) {
  float M[4], S[4], s[4 * 256];
  nc_fp16 *acc = malloc(sizeof(nc_fp16) * (size_t)r->m * (size_t)r->hdv);
  nc_flash_state st = {.M = M, .S = S, .acc = acc};
  nc_flash_state_init(&st, r->m, r->hdv);
  const nc_flash_query fq = {.q = q,
                             .m = r->m,
                             .hd = r->hd,
                             .hdv = r->hdv,
                             .scale = 1.0f / sqrtf((float)r->hd),
                             .softcap = r->softcap};
  for (int32_t j = 0; j < r->n; j += tile)
    k->tile(&fq, kk + (size_t)j * ks, ks, v + (size_t)j * vs, vs,
            r->n - j < tile ? r->n - j : tile, TAB, s, &st);
  nc_flash_finish(&st, r->m, r->hdv, TAB, NULL, out, (size_t)r->hdv);
  free(acc);
}

static const run RUNS[] = {
    {1, 64, 64, 1, 0.0f},     {3, 64, 64, 100, 0.0f}, {2, 128, 128, 77, 0.0f},
    {1, 256, 256, 200, 0.0f}, {2, 64, 64, 90, 30.0f}, {1, 80, 80, 50, 0.0f},
    {4, 256, 256, 33, 50.0f}, {1, 96, 48, 40, 0.0f},
};

static void test_builds_and_tiles(void **state) {
  (void)state;
  const nc_attn_flash_kernels *plain = nc_attn_flash_plain();
  const nc_attn_flash_kernels *simd = nc_attn_flash_avx512();
  __builtin_cpu_init();
  if (simd && !__builtin_cpu_supports("avx512f")) simd = NULL;
  for (size_t ri = 0; ri < sizeof RUNS / sizeof RUNS[0]; ri++) {
    const run *r = &RUNS[ri];
    const size_t ks = (size_t)r->hd + 8, vs = (size_t)r->hdv + 8;
    nc_fp16 *q = malloc(sizeof(nc_fp16) * (size_t)r->m * (size_t)r->hd);
    nc_fp16 *k = malloc(sizeof(nc_fp16) * (size_t)r->n * ks);
    nc_fp16 *v = malloc(sizeof(nc_fp16) * (size_t)r->n * vs);
    fill_h(q, (size_t)r->m * (size_t)r->hd, -2.0f, 2.0f);
    fill_h(k, (size_t)r->n * ks, -2.0f, 2.0f);
    fill_h(v, (size_t)r->n * vs, -1.0f, 1.0f);
    const size_t no = (size_t)r->m * (size_t)r->hdv;
    float *a = malloc(sizeof(float) * no), *b = malloc(sizeof(float) * no);
    attend(plain, r, q, k, v, ks, vs, 64, a);
    static const int32_t tiles[] = {1, 7, 16, 200};
    for (size_t t = 0; t < 4; t++) {
      attend(plain, r, q, k, v, ks, vs, tiles[t], b);
      assert_memory_equal(a, b, sizeof(float) * no);
      if (simd) {
        attend(simd, r, q, k, v, ks, vs, tiles[t], b);
        assert_memory_equal(a, b, sizeof(float) * no);
      }
    }
    /* float64 attention: the F16 accumulator is within ~1e-3 of it */
    for (int32_t i = 0; i < r->m; i++) {
      double *sc = malloc(sizeof(double) * (size_t)r->n), mx = -INFINITY;
      for (int32_t j = 0; j < r->n; j++) {
        double d = 0;
        for (int32_t e = 0; e < r->hd; e++)
          d += (double)TAB[q[(size_t)i * (size_t)r->hd + (size_t)e]] *
               TAB[k[(size_t)j * ks + (size_t)e]];
        d /= sqrt((double)r->hd);
        if (r->softcap > 0) d = r->softcap * tanh(d / r->softcap);
        sc[j] = d;
        mx = fmax(mx, d);
      }
      double sum = 0;
      for (int32_t j = 0; j < r->n; j++)
        sum += (sc[j] = exp(sc[j] - mx));
      for (int32_t e = 0; e < r->hdv; e++) {
        double o = 0;
        for (int32_t j = 0; j < r->n; j++)
          o += sc[j] * TAB[v[(size_t)j * vs + (size_t)e]];
        o /= sum;
        const float got = a[(size_t)i * (size_t)r->hdv + (size_t)e];
        if (fabs(got - o) > 4e-3)
          fail_msg("run %zu: query %d dim %d: %g, float64 %g", ri, (int)i,
                   (int)e, (double)got, o);
      }
      free(sc);
    }
    free(q), free(k), free(v), free(a), free(b);
  }
}

/* The dot in ggml_vec_dot_f16's order: four 16-lane chains summed 0+2,
 * 1+3, then the halving tree; a tail past 64 in double. Checked against
 * the same steps written out for one case where the order matters. */
static void test_dot_order(void **state) {
  (void)state;
  nc_fp16 x[80], y[80];
  fill_h(x, 80, -3.0f, 3.0f);
  fill_h(y, 80, -3.0f, 3.0f);
  float acc[4][16] = {{0}};
  for (int d = 0; d < 64; d++)
    acc[d / 16][d % 16] = fmaf(TAB[x[d]], TAB[y[d]], acc[d / 16][d % 16]);
  float l[16];
  for (int i = 0; i < 16; i++)
    l[i] = (acc[0][i] + acc[2][i]) + (acc[1][i] + acc[3][i]);
  float t8[8], t4[4];
  for (int i = 0; i < 8; i++)
    t8[i] = l[i] + l[i + 8];
  for (int i = 0; i < 4; i++)
    t4[i] = t8[i] + t8[i + 4];
  double s = (double)((t4[0] + t4[2]) + (t4[1] + t4[3]));
  for (int d = 64; d < 80; d++)
    s += (double)(TAB[x[d]] * TAB[y[d]]);
  const float want = (float)s;
  const float got = nc_flash_dot_f16(x, y, 80, TAB);
  assert_memory_equal(&want, &got, sizeof want);
}

/* No keys: S = 0 gives 0 (llama.cpp's S_inv = 0); one key: its value. */
static void test_edges(void **state) {
  (void)state;
  float M[1], S[1], out[64];
  nc_fp16 acc[64], v[64], k[64], q[64];
  nc_flash_state st = {.M = M, .S = S, .acc = acc};
  nc_flash_state_init(&st, 1, 64);
  nc_flash_finish(&st, 1, 64, TAB, NULL, out, 64);
  for (int d = 0; d < 64; d++)
    assert_true(out[d] == 0.0f);
  fill_h(v, 64, -1, 1);
  fill_h(k, 64, -1, 1);
  fill_h(q, 64, -1, 1);
  const nc_flash_query fq = {
      .q = q, .m = 1, .hd = 64, .hdv = 64, .scale = 0.125f, .softcap = 0};
  float s[1];
  nc_attn_flash_plain()->tile(&fq, k, 64, v, 64, 1, TAB, s, &st);
  assert_true(S[0] == 1.0f);
  nc_flash_finish(&st, 1, 64, TAB, NULL, out, 64);
  for (int d = 0; d < 64; d++)
    assert_true(out[d] == TAB[v[d]]);
  /* soft-capping bounds the score */
  assert_true(fabsf(nc_flash_score(1e6f, 1.0f, 30.0f)) <= 30.0f);
  assert_true(nc_flash_score(2.0f, 0.5f, 0.0f) == 1.0f);
}

/* ---- the prompt order (llama.cpp's tiled path) */

typedef struct prun {
  int32_t m, hd, hdv, n_keys;
  float softcap;
} prun;

/* m rows over n_keys keys in tiles of NC_FLASH_KTILE; row i sees keys
 * [first_i, last_i] (causal positions with a window); out m x hdv. split:
 * the split order (each chunk of NC_FLASH_SPLIT_KEYS keys from a fresh
 * state, folded into the rows' state at its end), else the tiled one. */
static void attend_prompt(void (*tile)(const nc_flash_rows *, const float *,
                                       const float *, float *,
                                       nc_flash_tstate *),
                          const prun *r, const float *q, const float *k,
                          const float *v, const int32_t *first,
                          const int32_t *last, bool split, float *out) {
  enum { KT = NC_FLASH_KTILE };
  const int32_t m = r->m, hd = r->hd, hdv = r->hdv;
  float *kt = calloc((size_t)hd * KT, sizeof(float));
  float *vt = calloc((size_t)KT * (size_t)hdv, sizeof(float));
  float *p = malloc(sizeof(float) * (size_t)m * KT);
  float *M = malloc(sizeof(float) * (size_t)m),
        *S = malloc(sizeof(float) * (size_t)m);
  float *acc = malloc(sizeof(float) * (size_t)m * (size_t)hdv);
  int32_t *lo = malloc(sizeof(int32_t) * (size_t)m),
          *hi = malloc(sizeof(int32_t) * (size_t)m);
  const float **qp = malloc(sizeof(float *) * (size_t)m);
  float **op = malloc(sizeof(float *) * (size_t)m);
  for (int32_t i = 0; i < m; i++) {
    qp[i] = q + (size_t)i * (size_t)hd;
    op[i] = out + (size_t)i * (size_t)hdv;
  }
  nc_flash_tstate st = {.M = M, .S = S, .acc = acc};
  nc_flash_tstate_init(&st, m, hdv);
  nc_flash_tstate tot = {.M = malloc(sizeof(float) * (size_t)m),
                         .S = malloc(sizeof(float) * (size_t)m),
                         .acc =
                             malloc(sizeof(float) * (size_t)m * (size_t)hdv)};
  nc_flash_tstate_init(&tot, m, hdv);
  const nc_flash_rows rows = {.q = qp,
                              .lo = lo,
                              .hi = hi,
                              .m = m,
                              .hd = hd,
                              .hdv = hdv,
                              .scale = 1.0f / sqrtf((float)hd),
                              .softcap = r->softcap};
  for (int32_t j0 = 0; j0 < r->n_keys; j0 += KT) {
    if (split && j0 > 0 && j0 % NC_FLASH_SPLIT_KEYS == 0) {
      nc_flash_tstate_fold(&tot, &st, m, hdv);
      nc_flash_tstate_init(&st, m, hdv);
    }
    for (int32_t j = 0; j < KT; j++) /* garbage where no row looks */
      for (int32_t d = 0; d < hd; d++)
        kt[(size_t)d * KT + j] =
            j0 + j < r->n_keys ? k[(size_t)(j0 + j) * hd + d] : 1e3f;
    for (int32_t j = 0; j < KT; j++)
      for (int32_t d = 0; d < hdv; d++)
        vt[(size_t)j * hdv + d] =
            j0 + j < r->n_keys ? v[(size_t)(j0 + j) * hdv + d] : -7.0f;
    for (int32_t i = 0; i < m; i++) {
      lo[i] = first[i] > j0 ? first[i] - j0 : 0;
      hi[i] = last[i] + 1 - j0 < KT ? last[i] + 1 - j0 : KT;
      if (hi[i] < 0) hi[i] = 0;
    }
    tile(&rows, kt, vt, p, &st);
  }
  if (split) nc_flash_tstate_fold(&tot, &st, m, hdv);
  nc_flash_tfinish(split ? &tot : &st, m, hdv, NULL, op);
  free(tot.M), free(tot.S), free(tot.acc);
  free(kt), free(vt), free(p), free(M), free(S), free(acc), free(lo), free(hi);
  free(qp), free(op);
}

/* The prompt order, tiled and split (attn_flash.h): the AVX-512 tile
 * gives the plain one's bits, the result is attention; split, the same
 * bits as tiled for rows whose keys lie in one chunk of
 * NC_FLASH_SPLIT_KEYS, and attention as close for rows across chunks. */
static void check_prompt_order(bool split) {
  static const prun RUNS_P[] = {
      {1, 64, 64, 1, 0.0f},
      {12, 64, 64, 200, 0.0f},
      {7, 256, 256, 300, 0.0f},
      {9, 64, 64, 130, 30.0f},
      {5, 80, 48, 70, 0.0f},
      {16, 128, 128, 64, 50.0f},
      {3, 96, 40, 90, 0.0f},
      {6, 64, 64, 700, 0.0f},
      {4, 128, 128, 530, 20.0f},
      /* MiniLM's heads of 32 (the last < 64 dims of four rows at once),
       * short key runs (a tile's key vectors past the rows' keys skipped) */
      {13, 32, 32, 20, 0.0f},
      {11, 32, 32, 150, 0.0f},
      {6, 32, 32, 45, 25.0f},
      {16, 16, 16, 90, 0.0f},
      /* head sizes not a multiple of 16 (SigLIP's 72, Gemma 3's vision
       * tower): the last dims a masked vector in the AVX-512 build, with
       * the others in one pass (80 and fewer) or after passes of 64 */
      {7, 72, 72, 150, 0.0f},
      {5, 72, 72, 300, 20.0f},
      {6, 72, 136, 150, 0.0f},
      {4, 80, 80, 100, 0.0f},
      {3, 56, 56, 70, 0.0f},
      {4, 40, 24, 90, 0.0f},
      {3, 8, 8, 70, 0.0f},
      {6, 100, 36, 200, 0.0f},
  };
  for (size_t c = 0; c < sizeof RUNS_P / sizeof RUNS_P[0]; c++) {
    const prun *r = &RUNS_P[c];
    const int32_t m = r->m, hd = r->hd, hdv = r->hdv, n = r->n_keys;
    float *q = malloc(sizeof(float) * (size_t)m * (size_t)hd);
    float *k = malloc(sizeof(float) * (size_t)n * (size_t)hd);
    float *v = malloc(sizeof(float) * (size_t)n * (size_t)hdv);
    float *o1 = malloc(sizeof(float) * (size_t)m * (size_t)hdv);
    float *o2 = malloc(sizeof(float) * (size_t)m * (size_t)hdv);
    int32_t first[16], last[16];
    for (size_t i = 0; i < (size_t)m * (size_t)hd; i++)
      q[i] = frand(-3, 3);
    for (size_t i = 0; i < (size_t)n * (size_t)hd; i++) /* F16 values */
      k[i] = TAB[nc_fp32_to_fp16(frand(-3, 3))];
    for (size_t i = 0; i < (size_t)n * (size_t)hdv; i++)
      v[i] = TAB[nc_fp32_to_fp16(frand(-2, 2))];
    for (int32_t i = 0; i < m; i++) { /* causal rows, some windowed */
      last[i] = n - 1 - (int32_t)(frand(0, 1) * (float)(n < 40 ? n : 40));
      if (last[i] < 0) last[i] = 0;
      first[i] = i % 3 == 2 ? last[i] - (int32_t)frand(0, 70) : 0;
      if (first[i] < 0) first[i] = 0;
    }
    attend_prompt(nc_flash_tile_prompt_plain, r, q, k, v, first, last, split,
                  o1);
    if (nc_attn_flash_avx512()) {
      attend_prompt(nc_attn_flash_avx512()->tile_prompt, r, q, k, v, first,
                    last, split, o2);
      assert_memory_equal(o1, o2, sizeof(float) * (size_t)m * (size_t)hdv);
    }
    if (split) { /* rows within one chunk: the tiled order's bits */
      attend_prompt(nc_flash_tile_prompt_plain, r, q, k, v, first, last, false,
                    o2);
      for (int32_t i = 0; i < m; i++)
        if (first[i] / NC_FLASH_SPLIT_KEYS == last[i] / NC_FLASH_SPLIT_KEYS)
          assert_memory_equal(o1 + (size_t)i * hdv, o2 + (size_t)i * hdv,
                              sizeof(float) * (size_t)hdv);
    }
    /* and it is attention: a double softmax over each row's keys */
    for (int32_t i = 0; i < m; i++) {
      double w[1024], mx = -INFINITY, sum = 0;
      for (int32_t j = first[i]; j <= last[i]; j++) {
        double s = 0;
        for (int32_t d = 0; d < hd; d++)
          s += (double)q[(size_t)i * hd + d] * k[(size_t)j * hd + d];
        s /= sqrt((double)hd);
        if (r->softcap > 0) s = r->softcap * tanh(s / r->softcap);
        w[j] = s;
        mx = fmax(mx, s);
      }
      for (int32_t j = first[i]; j <= last[i]; j++)
        sum += (w[j] = exp(w[j] - mx));
      for (int32_t d = 0; d < hdv; d++) {
        double e = 0;
        for (int32_t j = first[i]; j <= last[i]; j++)
          e += w[j] * v[(size_t)j * hdv + d];
        assert_true(fabs(e / sum - o1[(size_t)i * hdv + d]) < 1e-4);
      }
    }
    free(q), free(k), free(v), free(o1), free(o2);
  }
}

static void test_prompt_order(void **state) {
  (void)state;
  check_prompt_order(false);
  check_prompt_order(true);
}

/* ---- the decode passes (attn_flash.h, "the prompt order taken apart") */

enum { PBT = 16 }; /* the paged cache's block in these tests */

/* Rows [0, n) of x (w floats each, values exactly halves) as halves in
 * blocks of PBT rows of stride w + 8, the blocks in reverse order in
 * memory; blk[b]: block b's row 0. */
static nc_fp16 *paged(const float *x, int32_t n, int32_t w,
                      const nc_fp16 **blk) {
  const int32_t nb = (n + PBT - 1) / PBT;
  const size_t stride = (size_t)w + 8;
  nc_fp16 *mem = calloc((size_t)nb * PBT * stride, sizeof(nc_fp16));
  for (int32_t b = 0; b < nb; b++)
    blk[b] = mem + (size_t)(nb - 1 - b) * PBT * stride;
  for (int32_t j = 0; j < n; j++)
    for (int32_t d = 0; d < w; d++)
      ((nc_fp16 *)blk[j / PBT])[(size_t)(j % PBT) * stride + (size_t)d] =
          nc_fp32_to_fp16(x[(size_t)j * (size_t)w + (size_t)d]);
  return mem;
}

/* One decode row's m query heads over keys [first, last] through the three
 * passes with kk's steps: every tile's scores, then each head's weights,
 * then the values in `slices` slices of the dims (out m x hdv). */
static void decode_passes(const nc_attn_flash_kernels *kk, const prun *r,
                          const float *q, const float *k, const float *v,
                          int32_t first, int32_t last, int32_t slices,
                          float *out) {
  enum { KT = NC_FLASH_KTILE };
  const int32_t m = r->m, hd = r->hd, hdv = r->hdv, n = r->n_keys;
  const nc_fp16 **kb = malloc(sizeof(nc_fp16 *) * (size_t)(n / PBT + 1)),
                **vb = malloc(sizeof(nc_fp16 *) * (size_t)(n / PBT + 1));
  nc_fp16 *km = paged(k, n, hd, kb), *vm = paged(v, n, hdv, vb);
  const int32_t t0 = first / KT, nt = last / KT - t0 + 1;
  float *p = malloc(sizeof(float) * (size_t)nt * (size_t)m * KT);
  float *tmax = malloc(sizeof(float) * (size_t)nt * (size_t)m);
  float *ms = malloc(sizeof(float) * (size_t)nt * (size_t)m);
  double *tsum = malloc(sizeof(double) * (size_t)nt * (size_t)m);
  float *kt = calloc((size_t)hd * KT, sizeof(float));
  float *acc = malloc(sizeof(float) * (size_t)m * (size_t)hdv);
  float *S = malloc(sizeof(float) * (size_t)m),
        *Mend = malloc(sizeof(float) * (size_t)m);
  int32_t *lo = malloc(sizeof(int32_t) * (size_t)m),
          *hi = malloc(sizeof(int32_t) * (size_t)m);
  const float **qp = malloc(sizeof(float *) * (size_t)m);
  for (int32_t i = 0; i < m; i++)
    qp[i] = q + (size_t)i * (size_t)hd;
  const nc_flash_rows rows = {.q = qp,
                              .lo = lo,
                              .hi = hi,
                              .m = m,
                              .hd = hd,
                              .hdv = hdv,
                              .scale = 1.0f / sqrtf((float)hd),
                              .softcap = r->softcap};
  for (int32_t tt = nt - 1; tt >= 0; tt--) { /* any order: last first */
    const int32_t ts = (t0 + tt) * KT, k0 = first > ts ? first : ts,
                  k1 = last + 1 < ts + KT ? last + 1 : ts + KT;
    for (int32_t j = k0, e; j < k1; j = e) {
      e = (j / PBT + 1) * PBT < k1 ? (j / PBT + 1) * PBT : k1;
      const nc_fp16 *kr = kb[j / PBT] + (size_t)(j % PBT) * (size_t)(hd + 8);
      kk->tile_widen(kr, (size_t)hd + 8, kr, 0, e - j, hd, 0, TAB,
                     kt + (j - ts), kt);
    }
    for (int32_t i = 0; i < m; i++) {
      lo[i] = k0 - ts;
      hi[i] = k1 - ts;
    }
    kk->tile_scores(&rows, kt, p + (size_t)tt * (size_t)m * KT,
                    tmax + (size_t)tt * (size_t)m);
  }
  for (int32_t i = m - 1; i >= 0; i--) {
    float M = -INFINITY;
    for (int32_t tt = 0; tt < nt; tt++) {
      const int32_t ts = (t0 + tt) * KT, k0 = first > ts ? first : ts,
                    k1 = last + 1 < ts + KT ? last + 1 : ts + KT;
      const size_t at = (size_t)tt * (size_t)m + (size_t)i;
      const float Mn = fmaxf(M, tmax[at]);
      ms[at] = Mn > M ? expf(M - Mn) : 1.0f;
      M = Mn;
      tsum[at] = kk->tile_exps(p + at * KT, k0 - ts, k1 - ts, M);
    }
    Mend[i] = M;
  }
  const int32_t nr = hdv % 16 == 0 ? hdv / 16 : 1;
  for (int32_t sl = slices - 1; sl >= 0; sl--) {
    const int32_t d0 = hdv % 16 ? 0 : 16 * (sl * nr / slices),
                  d1 = hdv % 16 ? hdv : 16 * ((sl + 1) * nr / slices);
    for (int32_t i = 0; i < m; i++) {
      S[i] = 0.0f;
      for (int32_t d = d0; d < d1; d++)
        acc[(size_t)i * hdv + d] = 0.0f;
    }
    for (int32_t tt = 0; tt < nt; tt++) {
      const int32_t ts = (t0 + tt) * KT, k0 = first > ts ? first : ts,
                    k1 = last + 1 < ts + KT ? last + 1 : ts + KT;
      const size_t at = (size_t)tt * (size_t)m;
      for (int32_t i = 0; i < m; i++) {
        if (ms[at + i] != 1.0f) S[i] *= ms[at + i];
        S[i] = (float)((double)S[i] + tsum[at + i]);
      }
      const int32_t b0 = k0 / PBT;
      const nc_flash_paged pg = {.blk = vb + b0,
                                 .off = 0,
                                 .stride = (size_t)hdv + 8,
                                 .j0 = ts - b0 * PBT,
                                 .bt = PBT};
      const nc_flash_tvals tv = {.p = p + at * KT,
                                 .ms = ms + at,
                                 .p_stride = KT,
                                 .m = m,
                                 .j0 = k0 - ts,
                                 .j1 = k1 - ts,
                                 .d0 = d0,
                                 .d1 = d1,
                                 .groups = 1};
      kk->tile_values(&tv, &pg, TAB, acc, (size_t)hdv);
    }
    for (int32_t i = 0; i < m; i++) {
      const float inv = S[i] == 0.0f ? 0.0f : 1.0f / S[i];
      for (int32_t d = d0; d < d1; d++)
        out[(size_t)i * hdv + d] = acc[(size_t)i * hdv + d] * 1.0f * inv;
    }
  }
  (void)Mend;
  free(kb), free(vb), free(km), free(vm), free(p), free(tmax), free(ms);
  free(tsum), free(kt), free(acc), free(S), free(Mend), free(lo), free(hi);
  free(qp);
}

/* The passes give tile_prompt's bits for a decode row (every head seeing
 * the same keys), in both builds, whatever the tiles' and the heads' order
 * and however the value dims are split. */
static void test_decode_passes(void **state) {
  (void)state;
  static const prun RUNS_D[] = {
      {3, 64, 64, 700, 0.0f},    {4, 256, 256, 300, 0.0f},
      {1, 128, 128, 530, 20.0f}, {5, 80, 48, 200, 0.0f},
      {2, 96, 40, 150, 0.0f},    {9, 64, 64, 129, 0.0f},
  };
  const nc_attn_flash_kernels *builds[2] = {nc_attn_flash_plain(),
                                            nc_attn_flash_avx512()};
  __builtin_cpu_init();
  if (builds[1] && !__builtin_cpu_supports("avx512f")) builds[1] = NULL;
  for (size_t c = 0; c < sizeof RUNS_D / sizeof RUNS_D[0]; c++) {
    const prun *r = &RUNS_D[c];
    const int32_t m = r->m, hd = r->hd, hdv = r->hdv, n = r->n_keys;
    float *q = malloc(sizeof(float) * (size_t)m * (size_t)hd);
    float *k = malloc(sizeof(float) * (size_t)n * (size_t)hd);
    float *v = malloc(sizeof(float) * (size_t)n * (size_t)hdv);
    const size_t no = (size_t)m * (size_t)hdv;
    float *want = malloc(sizeof(float) * no), *got = malloc(sizeof(float) * no);
    for (size_t i = 0; i < (size_t)m * (size_t)hd; i++)
      q[i] = frand(-3, 3);
    for (size_t i = 0; i < (size_t)n * (size_t)hd; i++)
      k[i] = TAB[nc_fp32_to_fp16(frand(-3, 3))];
    for (size_t i = 0; i < (size_t)n * (size_t)hdv; i++)
      v[i] = TAB[nc_fp32_to_fp16(frand(-2, 2))];
    /* from 0, and a window starting inside a tile and a block */
    const int32_t firsts[2] = {0, n / 3 + 5};
    for (int f = 0; f < 2; f++) {
      int32_t fi[16], la[16];
      for (int32_t i = 0; i < m; i++) {
        fi[i] = firsts[f];
        la[i] = n - 1;
      }
      attend_prompt(nc_flash_tile_prompt_plain, r, q, k, v, fi, la, false,
                    want);
      for (int b = 0; b < 2; b++) {
        if (!builds[b]) continue;
        for (int32_t slices = 1; slices <= 3; slices++) {
          decode_passes(builds[b], r, q, k, v, fi[0], la[0], slices, got);
          if (memcmp(want, got, sizeof(float) * no) != 0)
            fail_msg("case %zu first %d build %s slices %d: not the tiled "
                     "order's bits",
                     c, (int)fi[0], builds[b]->name, (int)slices);
        }
      }
    }
    free(q), free(k), free(v), free(want), free(got);
  }
}

/* The values step over several groups (KV heads) in one call gives each
 * group's bits alone, in both builds, the same as the plain build's. */
static void test_values_groups(void **state) {
  (void)state;
  enum { KT = NC_FLASH_KTILE, NK = 40, J0 = 3, J1 = 37 };
  const nc_attn_flash_kernels *builds[2] = {nc_attn_flash_plain(),
                                            nc_attn_flash_avx512()};
  __builtin_cpu_init();
  if (builds[1] && !__builtin_cpu_supports("avx512f")) builds[1] = NULL;
  static const int32_t shapes[][4] = {
      /* m, hdv, groups, d1 - d0 */
      {3, 64, 3, 32}, {3, 64, 2, 64}, {1, 32, 4, 16}, {4, 256, 1, 128},
      {5, 48, 2, 48}, {2, 64, 3, 64}, {3, 40, 2, 40}};
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    const int32_t m = shapes[c][0], hdv = shapes[c][1], ng = shapes[c][2],
                  w = shapes[c][3], d0 = hdv - w, rw = ng * hdv;
    /* values: NK rows of ng * hdv (the KV heads side by side), paged */
    float *vf = malloc(sizeof(float) * NK * (size_t)rw);
    for (size_t i = 0; i < (size_t)NK * (size_t)rw; i++)
      vf[i] = TAB[nc_fp32_to_fp16(frand(-2, 2))];
    const nc_fp16 *vb[NK / PBT + 2];
    nc_fp16 *vm = paged(vf, NK, rw, vb);
    const size_t pg_f = (size_t)m * KT + 8, n_acc = (size_t)ng * m * hdv;
    float *p = malloc(sizeof(float) * (size_t)ng * pg_f);
    float *ms = malloc(sizeof(float) * (size_t)ng * 8);
    float *acc0 = malloc(sizeof(float) * n_acc);
    for (size_t i = 0; i < (size_t)ng * pg_f; i++)
      p[i] = frand(0, 1);
    for (int32_t i = 0; i < ng * 8; i++)
      ms[i] = i % 3 ? 1.0f : frand(0.1f, 0.9f);
    for (size_t i = 0; i < n_acc; i++)
      acc0[i] = frand(-1, 1);
    float *want = malloc(sizeof(float) * n_acc),
          *got = malloc(sizeof(float) * n_acc);
    const nc_flash_paged pg = {.blk = vb,
                               .off = 0,
                               .stride = (size_t)rw + 8,
                               .j0 = 5, /* the tile's key 0 at row 5 */
                               .bt = PBT};
    const nc_flash_tvals all = {.p = p,
                                .ms = ms,
                                .p_stride = KT,
                                .m = m,
                                .j0 = J0,
                                .j1 = J1 - 5,
                                .d0 = d0,
                                .d1 = hdv,
                                .groups = ng,
                                .p_group = pg_f,
                                .ms_group = 8,
                                .acc_group = (size_t)m * hdv,
                                .v_group = (size_t)hdv};
    /* each group alone, plain */
    memcpy(want, acc0, sizeof(float) * n_acc);
    for (int32_t g = 0; g < ng; g++) {
      nc_flash_tvals one = all;
      one.groups = 1;
      one.p = p + (size_t)g * pg_f;
      one.ms = ms + (size_t)g * 8;
      nc_flash_paged pgo = pg;
      pgo.off = (size_t)g * hdv;
      builds[0]->tile_values(&one, &pgo, TAB, want + (size_t)g * m * hdv,
                             (size_t)hdv);
    }
    for (int b = 0; b < 2; b++) {
      if (!builds[b]) continue;
      memcpy(got, acc0, sizeof(float) * n_acc);
      builds[b]->tile_values(&all, &pg, TAB, got, (size_t)hdv);
      if (memcmp(want, got, sizeof(float) * n_acc) != 0)
        fail_msg("shape %zu build %s: groups in one call differ", c,
                 builds[b]->name);
    }
    free(vf), free(vm), free(p), free(ms), free(acc0), free(want), free(got);
  }
}

/* nc_flash_tstate_fold's steps: a chunk that saw no key changes nothing,
 * the first that saw one is copied, later ones are rescaled to the larger
 * maximum and added, each product rounded (no fused multiply-add). */
static void test_fold(void **state) {
  (void)state;
  enum { HDV = 3 };
  float M[2] = {-INFINITY, 1.5f}, S[2] = {0.0f, 2.0f};
  float acc[2 * HDV] = {0, 0, 0, 0.25f, -1.0f, 3.0f};
  const nc_flash_tstate st = {M, S, acc};
  float pM[2] = {0.75f, -INFINITY}, pS[2] = {3.0f, 9.0f};
  float pacc[2 * HDV] = {1.0f, 2.0f, -4.0f, 5.0f, 5.0f, 5.0f};
  const nc_flash_tstate part = {pM, pS, pacc};
  nc_flash_tstate_fold(&st, &part, 2, HDV);
  /* row 0: copied; row 1: unchanged */
  assert_true(M[0] == 0.75f && S[0] == 3.0f);
  assert_true(acc[0] == 1.0f && acc[1] == 2.0f && acc[2] == -4.0f);
  assert_true(M[1] == 1.5f && S[1] == 2.0f);
  assert_true(acc[3] == 0.25f && acc[4] == -1.0f && acc[5] == 3.0f);
  /* row 0 again, a chunk with a larger maximum: the old state scaled by
   * expf(0.75 - 2), the new one by 1 */
  float qM[2] = {2.0f, -INFINITY}, qS[2] = {0.5f, 0.0f};
  float qacc[2 * HDV] = {0.125f, 1.0f / 3.0f, 7.0f, 0, 0, 0};
  const nc_flash_tstate part2 = {qM, qS, qacc};
  nc_flash_tstate_fold(&st, &part2, 2, HDV);
  const float a = expf(0.75f - 2.0f), b = expf(0.0f);
  assert_true(M[0] == 2.0f);
  volatile float x = 3.0f * a, y = 0.5f * b;
  assert_true(S[0] == x + y);
  const float old[HDV] = {1.0f, 2.0f, -4.0f};
  for (int d = 0; d < HDV; d++) {
    volatile float u = old[d] * a, w = qacc[d] * b;
    assert_true(acc[d] == u + w);
  }
}

/* Any half the cache can hold: every bit pattern but a signaling NaN (its
 * halves come from floats rounded by nc_fp32_to_fp16 or vcvtps2ph, whose
 * NaNs are quiet; vcvtph2ps would quiet a signaling one). */
static nc_fp16 cache_half(float r) {
  nc_fp16 h = (nc_fp16)r;
  if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) h |= 0x200;
  return h;
}

/* tile_widen: every key's K in its column of the transposed tile and its V
 * in its row, as floats (any half the cache holds: infinities and quiet
 * NaNs included), the AVX-512 build's bytes the plain one's, for runs of
 * any length at any column, strided rows, and the cells outside the run
 * untouched. */
static void test_tile_widen(void **state) {
  (void)state;
  enum { KT = NC_FLASH_KTILE };
  static const int32_t DIMS[][2] = {
      {64, 64},
      {128, 128},
      {256, 256},
      {48, 80},
      {80, 48},
      /* head sizes not a multiple of 16: SigLIP's 72, and tails of 8 */
      {72, 72},
      {40, 24},
      {8, 8},
      {100, 36}};
  static const int32_t SPANS[][2] = {{0, 64}, {0, 1},   {5, 11},  {16, 16},
                                     {3, 61}, {48, 16}, {33, 31}, {63, 1}};
  const nc_attn_flash_kernels *tabs[] = {nc_attn_flash_plain(),
                                         nc_attn_flash_avx512()};
  __builtin_cpu_init();
  if (tabs[1] && !__builtin_cpu_supports("avx512f")) tabs[1] = NULL;
  for (size_t di = 0; di < sizeof DIMS / sizeof DIMS[0]; di++)
    for (size_t ri = 0; ri < sizeof SPANS / sizeof SPANS[0]; ri++) {
      const int32_t hd = DIMS[di][0], hdv = DIMS[di][1];
      const int32_t col = SPANS[ri][0], n = SPANS[ri][1];
      const size_t ks = (size_t)hd * 3 + 16, vs = (size_t)hdv * 2 + 8;
      nc_fp16 *k = malloc(sizeof(nc_fp16) * ks * KT);
      nc_fp16 *v = malloc(sizeof(nc_fp16) * vs * KT);
      for (size_t i = 0; i < ks * KT; i++)
        k[i] = cache_half(frand(0, 65536.0f));
      for (size_t i = 0; i < vs * KT; i++)
        v[i] = cache_half(frand(0, 65536.0f));
      float *kt[2], *vt[2];
      for (int t = 0; t < 2; t++) {
        kt[t] = malloc(sizeof(float) * (size_t)hd * KT);
        vt[t] = malloc(sizeof(float) * (size_t)hdv * KT);
        for (size_t i = 0; i < (size_t)hd * KT; i++)
          kt[t][i] = -7.0f;
        for (size_t i = 0; i < (size_t)hdv * KT; i++)
          vt[t][i] = -7.0f;
        if (!tabs[t]) continue;
        tabs[t]->tile_widen(k, ks, v, vs, n, hd, hdv, TAB, kt[t] + col,
                            vt[t] + (size_t)col * (size_t)hdv);
      }
      for (int32_t d = 0; d < hd; d++)
        for (int32_t j = 0; j < KT; j++) {
          const float want = j >= col && j < col + n
                                 ? TAB[k[(size_t)(j - col) * ks + (size_t)d]]
                                 : -7.0f;
          const float got = kt[0][(size_t)d * KT + (size_t)j];
          assert_memory_equal(&got, &want, sizeof got);
        }
      for (int32_t j = 0; j < KT; j++)
        for (int32_t d = 0; d < hdv; d++) {
          const float want = j >= col && j < col + n
                                 ? TAB[v[(size_t)(j - col) * vs + (size_t)d]]
                                 : -7.0f;
          const float got = vt[0][(size_t)j * (size_t)hdv + (size_t)d];
          assert_memory_equal(&got, &want, sizeof got);
        }
      if (tabs[1]) {
        assert_memory_equal(kt[0], kt[1], sizeof(float) * (size_t)hd * KT);
        assert_memory_equal(vt[0], vt[1], sizeof(float) * (size_t)hdv * KT);
      }
      free(k), free(v);
      for (int t = 0; t < 2; t++)
        free(kt[t]), free(vt[t]);
    }
}

/* The typed tile: the AVX-512 build equals the plain one bit for bit for
 * Q8_0/Q4_0 keys and values, over several tiles and query rows. */
static void typed_run(nc_type kt, nc_type vt, int32_t m, int32_t hd,
                      int32_t hdv, int32_t n, float softcap) {
  const size_t kb = nc_row_size(kt, hd), vb = nc_row_size(vt, hdv),
               qb = nc_row_size(NC_TYPE_Q8_0, hd);
  uint8_t *k = malloc(kb * (size_t)n), *v = malloc(vb * (size_t)n);
  uint8_t *q = malloc(qb * (size_t)m);
  float *row = malloc(sizeof(float) * (size_t)(hd > hdv ? hd : hdv));
  for (int32_t j = 0; j < n; j++) {
    for (int32_t d = 0; d < hd; d++)
      row[d] = frand(-2, 2);
    nc_quantize_row(kt, row, k + (size_t)j * kb, hd);
    for (int32_t d = 0; d < hdv; d++)
      row[d] = frand(-2, 2);
    nc_quantize_row(vt, row, v + (size_t)j * vb, hdv);
  }
  for (int32_t i = 0; i < m; i++) {
    for (int32_t d = 0; d < hd; d++)
      row[d] = frand(-3, 3);
    nc_quantize_row(NC_TYPE_Q8_0, row, q + (size_t)i * qb, hd);
  }
  const nc_flash_tquery fq = {.q = q,
                              .q_bytes = qb,
                              .m = m,
                              .hd = hd,
                              .hdv = hdv,
                              .scale = 1.0f / sqrtf((float)hd),
                              .softcap = softcap,
                              .k_type = kt,
                              .v_type = vt};
  float *out[2];
  for (int b = 0; b < 2; b++) {
    const nc_attn_flash_kernels *kk =
        b ? nc_attn_flash_avx512() : nc_attn_flash_plain();
    float M[4], S[4], s[64], vrow[256];
    float *acc32 = malloc(sizeof(float) * (size_t)m * (size_t)hdv);
    nc_flash_state st = {.M = M, .S = S, .acc32 = acc32};
    nc_flash_state_init(&st, m, hdv);
    for (int32_t j = 0; j < n; j += 64)
      kk->tile_typed(&fq, k + (size_t)j * kb, kb, v + (size_t)j * vb, vb,
                     n - j < 64 ? n - j : 64, TAB, s, vrow, &st);
    out[b] = malloc(sizeof(float) * (size_t)m * (size_t)hdv);
    nc_flash_finish_typed(&st, vt, m, hdv, TAB, NULL, out[b], (size_t)hdv);
    free(acc32);
  }
  assert_memory_equal(out[0], out[1], sizeof(float) * (size_t)m * (size_t)hdv);
  for (int32_t i = 0; i < m * hdv; i++) /* a convex mix of |v| <= 2 */
    assert_true(fabsf(out[0][i]) <= 2.1f);
  free(out[0]), free(out[1]), free(k), free(v), free(q), free(row);
}

static void test_typed_builds(void **state) {
  (void)state;
  if (!nc_attn_flash_avx512()) skip();
  static const nc_type T[2] = {NC_TYPE_Q8_0, NC_TYPE_Q4_0};
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      typed_run(T[a], T[b], 3, 64, 64, 150, 0.0f);
      typed_run(T[a], T[b], 4, 256, 256, 70, 0.0f);
      typed_run(T[a], T[b], 2, 128, 96, 65, 30.0f);
    }
}

int main(void) {
  for (uint32_t h = 0; h < 65536; h++)
    TAB[h] = nc_fp16_to_fp32((nc_fp16)h);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_builds_and_tiles),
      cmocka_unit_test(test_dot_order),
      cmocka_unit_test(test_edges),
      cmocka_unit_test(test_prompt_order),
      cmocka_unit_test(test_decode_passes),
      cmocka_unit_test(test_values_groups),
      cmocka_unit_test(test_fold),
      cmocka_unit_test(test_tile_widen),
      cmocka_unit_test(test_typed_builds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
