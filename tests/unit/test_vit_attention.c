/* vit's flash attention (nc_vit_attention and _ranges with flash, the
 * tiled path of 64 rows or more: src/vision/vit.c) against the same tiles
 * driven here one query tile and one key tile at a time with the plain
 * kernels (K and V rounded to F16, each tile widened and folded in with
 * nc_flash_tile_widen_plain and nc_flash_tile_prompt_plain): the same bits
 * on the plain and the best kernel tables, at 1 and 2 threads, for head
 * sizes of 72 (SigLIP's) and 64, last tiles cut short, every key and
 * windows (each row's keys a range, tiles no row of a query tile sees
 * skipped). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/threadpool.h"
#include "gguf/quant.h"
#include "kernels/attn_flash.h"
#include "vision/vit.h"

enum { KT = NC_FLASH_KTILE, QT = 64 };

static uint32_t rng_state = 4242u;
static float frand(float lo, float hi) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(rng_state >> 8) / (float)(1u << 24);
}

typedef struct acase {
  int32_t rows, n_head, hd;
  int32_t window; /* 0: every key; else rows see [w * (i / w), + w) */
} acase;

/* The plain tiles over head h, query rows [r0, r1). */
static void ref_tile(const acase *c, const float *q, const nc_fp16 *k16,
                     const nc_fp16 *v16, const int32_t *klo, const int32_t *khi,
                     const float *tab, int32_t h, int32_t r0, int32_t r1,
                     float *out) {
  const int32_t hd = c->hd, m = r1 - r0, W = c->n_head * hd;
  float *kt = malloc(sizeof(float) * (size_t)hd * KT);
  float *vt = malloc(sizeof(float) * (size_t)hd * KT);
  float *p = malloc(sizeof(float) * (size_t)m * KT);
  float *M = malloc(sizeof(float) * (size_t)m), *S = malloc(sizeof *S * m);
  float *acc = malloc(sizeof(float) * (size_t)m * hd);
  const float **qp = malloc(sizeof *qp * (size_t)m);
  float **op = malloc(sizeof *op * (size_t)m);
  int32_t *lo = malloc(sizeof *lo * (size_t)m), *hi = malloc(sizeof *hi * m);
  assert_true(kt && vt && p && M && S && acc && qp && op && lo && hi);
  for (int32_t i = 0; i < m; i++) {
    qp[i] = q + (size_t)(r0 + i) * W + (size_t)h * hd;
    op[i] = out + (size_t)(r0 + i) * W + (size_t)h * hd;
  }
  nc_flash_tstate st = {M, S, acc};
  nc_flash_tstate_init(&st, m, hd);
  const nc_flash_rows rr = {.q = qp,
                            .lo = lo,
                            .hi = hi,
                            .m = m,
                            .hd = hd,
                            .hdv = hd,
                            .scale = 1.0f / sqrtf((float)hd),
                            .softcap = 0};
  for (int32_t j0 = 0; j0 < c->rows; j0 += KT) {
    const int32_t n = c->rows - j0 < KT ? c->rows - j0 : KT;
    bool any = false;
    for (int32_t i = 0; i < m; i++) {
      const int32_t a = klo ? klo[r0 + i] - j0 : 0;
      const int32_t b = khi ? khi[r0 + i] - j0 : n;
      lo[i] = a < 0 ? 0 : a > n ? n : a;
      hi[i] = b < 0 ? 0 : b > n ? n : b;
      any |= lo[i] < hi[i];
    }
    if (!any) continue;
    memset(kt, 0, sizeof(float) * (size_t)hd * KT);
    memset(vt, 0, sizeof(float) * (size_t)hd * KT);
    nc_flash_tile_widen_plain(k16 + (size_t)j0 * W + (size_t)h * hd, (size_t)W,
                              v16 + (size_t)j0 * W + (size_t)h * hd, (size_t)W,
                              n, hd, hd, tab, kt, vt);
    nc_flash_tile_prompt_plain(&rr, kt, vt, p, &st);
  }
  nc_flash_tfinish(&st, m, hd, NULL, op);
  free(kt), free(vt), free(p), free(M), free(S), free(acc), free(qp), free(op),
      free(lo), free(hi);
}

static void check_case(const acase *c, const float *tab,
                       nc_threadpool *const pools[2]) {
  const int32_t W = c->n_head * c->hd;
  const size_t n = (size_t)c->rows * (size_t)W;
  float *q = malloc(sizeof(float) * n), *k = malloc(sizeof(float) * n);
  float *v = malloc(sizeof(float) * n), *want = malloc(sizeof(float) * n);
  float *got = malloc(sizeof(float) * n);
  nc_fp16 *k16 = malloc(sizeof(nc_fp16) * n), *v16 = malloc(sizeof *v16 * n);
  int32_t *klo = malloc(sizeof(int32_t) * (size_t)c->rows);
  int32_t *khi = malloc(sizeof(int32_t) * (size_t)c->rows);
  assert_true(q && k && v && want && got && k16 && v16 && klo && khi);
  for (size_t i = 0; i < n; i++) {
    q[i] = frand(-2, 2);
    k[i] = frand(-2, 2);
    v[i] = frand(-1, 1);
    k16[i] = nc_fp32_to_fp16(k[i]);
    v16[i] = nc_fp32_to_fp16(v[i]);
  }
  for (int32_t i = 0; i < c->rows; i++) {
    const int32_t w = c->window ? c->window : c->rows;
    klo[i] = i / w * w;
    khi[i] = klo[i] + w < c->rows ? klo[i] + w : c->rows;
  }
  const int32_t *lo = c->window ? klo : NULL, *hi = c->window ? khi : NULL;
  for (int32_t h = 0; h < c->n_head; h++)
    for (int32_t r0 = 0; r0 < c->rows; r0 += QT)
      ref_tile(c, q, k16, v16, lo, hi, tab, h, r0,
               r0 + QT < c->rows ? r0 + QT : c->rows, want);
  for (int t = 0; t < 2; t++) {
    const nc_kernels *kern = t == 0 ? nc_kernels_ref() : nc_kernels_best(false);
    assert_non_null(kern);
    nc_vit vit;
    nc_error err = {0};
    assert_int_equal(nc_vit_init(&vit, kern, NULL, &err), NC_OK);
    for (int p = 0; p < 3; p++) { /* no pool, 2 threads, no pool again */
      nc_vit_set_pool(&vit, p == 1 ? pools[1] : pools[0]);
      memset(got, 0xff, sizeof(float) * n);
      const nc_code rc =
          c->window
              ? nc_vit_attention_ranges(&vit, q, k, v, got, c->rows, c->n_head,
                                        c->hd, 1.0f / sqrtf((float)c->hd), true,
                                        klo, khi, &err)
              : nc_vit_attention(&vit, q, k, v, got, c->rows, c->n_head, c->hd,
                                 1.0f / sqrtf((float)c->hd), true, &err);
      assert_int_equal(rc, NC_OK);
      for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
          fail_msg("%s table, pass %d, rows %d heads %d hd %d window %d: "
                   "[%zu] = %.9g, tiles %.9g",
                   kern->name, p, (int)c->rows, (int)c->n_head, (int)c->hd,
                   (int)c->window, i, (double)got[i], (double)want[i]);
    }
    nc_vit_free(&vit);
  }
  free(q), free(k), free(v), free(want), free(got), free(k16), free(v16),
      free(klo), free(khi);
}

static void test_flash_driver(void **state) {
  (void)state;
  static const acase CASES[] = {
      {200, 3, 72, 0}, /* 4 query and key tiles, the last 8 rows */
      {130, 2, 64, 0},   {64, 2, 72, 0}, /* one tile each */
      {300, 2, 72, 100}, /* windows: tiles no row sees skipped */
      {256, 3, 64, 64},
  };
  float *tab = malloc(sizeof(float) * 65536);
  assert_non_null(tab);
  for (uint32_t i = 0; i < 65536; i++)
    tab[i] = nc_fp16_to_fp32((nc_fp16)i);
  nc_threadpool *pool2 = NULL;
  nc_error err = {0};
  assert_int_equal(nc_threadpool_create(2, &pool2, &err), NC_OK);
  nc_threadpool *const pools[2] = {NULL, pool2};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
    check_case(&CASES[i], tab, pools);
  nc_threadpool_free(pool2);
  free(tab);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flash_driver),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
