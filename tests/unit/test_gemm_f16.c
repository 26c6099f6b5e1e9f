/* The F16 matmuls (gemm_f16.h: the avx2 and avx512 tables' gemm for F16
 * weights) against the plain-C model of their order
 * (tests/reference/ref_f16_order.c): first the model against the tables'
 * F16 vec_dot (the order it claims), then every output of each gemm bit for
 * bit against the model, for activation and weight counts that cut the
 * register tiles, the widened panels and the few-rows path, row lengths
 * with and without a tail past the last 32, padded strides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../reference/ref_f16_order.h"
#include "kernels/kernels.h"

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static uint64_t next_u64(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

/* Rows of halves: values in [-4, 4), stride elements apart. */
static nc_fp16 *random_rows(int64_t rows, int64_t stride, uint64_t *s) {
  nc_fp16 *m = malloc(sizeof(nc_fp16) * (size_t)(rows * stride));
  assert_non_null(m);
  for (int64_t i = 0; i < rows * stride; i++)
    m[i] =
        nc_fp32_to_fp16((float)((next_u64(s) >> 40) * 0x1p-24) * 8.0f - 4.0f);
  return m;
}

static const char *const k_tables[] = {"avx2", "avx512", "amx"};

static void test_model_is_the_dot(void **state) {
  (void)state;
  static const int64_t ns[] = {1, 7, 31, 32, 33, 96, 384, 1541};
  uint64_t s = 51;
  int tables = 0;
  for (size_t t = 0; t < sizeof k_tables / sizeof k_tables[0]; t++) {
    const nc_kernels *k = nc_kernels_by_name(k_tables[t]);
    if (!k) continue;
    tables++;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      for (int rep = 0; rep < 4; rep++) {
        nc_fp16 *w = random_rows(1, ns[i], &s), *a = random_rows(1, ns[i], &s);
        const float got = k->vec_dot[NC_TYPE_F16](ns[i], w, a);
        const float want = nc_ref_dot_f16_lanes(ns[i], w, a);
        if (bits(got) != bits(want))
          fail_msg("%s vec_dot F16 n=%lld: %.9g, model %.9g", k->name,
                   (long long)ns[i], got, want);
        free(w);
        free(a);
      }
  }
  if (tables == 0) skip();
}

/* n elements a row; NW weight rows, NA activation rows, all pairs. */
static void check_gemm(const nc_kernels *k, int64_t n, uint64_t *s) {
  enum { NW = 48, NA = 100, PAD = 3 };
  static const int64_t nws[] = {1, 3, 4, 5, 17, NW};
  static const int64_t nas[] = {1, 2, 3, 4, 7, 43, NA};
  const int64_t ws = n + 5, as = n + 11; /* strides, in halves */
  nc_fp16 *w = random_rows(NW, ws, s), *a = random_rows(NA, as, s);
  float *want = malloc(sizeof(float) * NW * NA);
  float *out = malloc(sizeof(float) * NA * (NW + PAD));
  assert_non_null(want);
  assert_non_null(out);
  for (int64_t j = 0; j < NA; j++)
    for (int64_t r = 0; r < NW; r++)
      want[j * NW + r] = nc_ref_dot_f16_lanes(n, w + r * ws, a + j * as);
  for (size_t x = 0; x < sizeof nws / sizeof nws[0]; x++)
    for (size_t y = 0; y < sizeof nas / sizeof nas[0]; y++) {
      const int64_t nw = nws[x], na = nas[y];
      const size_t os = (size_t)nw + PAD;
      for (size_t i = 0; i < (size_t)NA * (NW + PAD); i++)
        out[i] = -1234.5f;
      k->gemm[NC_TYPE_F16](n, w, sizeof(nc_fp16) * (size_t)ws, nw, a,
                           sizeof(nc_fp16) * (size_t)as, na, out, os);
      for (int64_t j = 0; j < na; j++) {
        for (int64_t r = 0; r < nw; r++) {
          const float got = out[(size_t)j * os + (size_t)r];
          if (bits(got) != bits(want[j * NW + r]))
            fail_msg("%s gemm F16 n=%lld nw=%lld na=%lld: [%lld][%lld] = "
                     "%.9g, model %.9g",
                     k->name, (long long)n, (long long)nw, (long long)na,
                     (long long)j, (long long)r, got, want[j * NW + r]);
        }
        for (size_t r = (size_t)nw; r < os; r++)
          if (out[(size_t)j * os + r] != -1234.5f)
            fail_msg("%s gemm F16 wrote past its rows", k->name);
      }
    }
  free(want);
  free(out);
  free(w);
  free(a);
}

/* n = 1541: 1552 floats a widened row, 42 rows a 256 KiB chunk, so 100
 * activation rows take several chunks (the 48 weight rows are widened
 * whole). */
static void test_gemm_matches_model(void **state) {
  (void)state;
  static const int64_t ns[] = {8, 33, 384, 1541};
  uint64_t s = 44;
  int tables = 0;
  for (size_t t = 0; t < sizeof k_tables / sizeof k_tables[0]; t++) {
    const nc_kernels *k = nc_kernels_by_name(k_tables[t]);
    if (!k) continue;
    assert_non_null(k->gemm[NC_TYPE_F16]);
    tables++;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      check_gemm(k, ns[i], &s);
  }
  if (tables == 0) skip();
}

/* Weights past the 16 MiB widened whole (1040 rows of 4,096 floats): the
 * weight panels of 256 KiB, each widened once per activation chunk. */
static void test_gemm_weight_panels(void **state) {
  (void)state;
  enum { N = 4096, NW = 1040, NA = 4 };
  uint64_t s = 45;
  nc_fp16 *w = random_rows(NW, N, &s), *a = random_rows(NA, N, &s);
  float *out = malloc(sizeof(float) * NW * NA);
  assert_non_null(out);
  int tables = 0;
  for (size_t t = 0; t < sizeof k_tables / sizeof k_tables[0]; t++) {
    const nc_kernels *k = nc_kernels_by_name(k_tables[t]);
    if (!k) continue;
    tables++;
    k->gemm[NC_TYPE_F16](N, w, sizeof(nc_fp16) * N, NW, a, sizeof(nc_fp16) * N,
                         NA, out, NW);
    for (int64_t j = 0; j < NA; j++)
      for (int64_t r = 0; r < NW; r++) {
        const float want = nc_ref_dot_f16_lanes(N, w + r * N, a + j * N);
        if (bits(out[j * NW + r]) != bits(want))
          fail_msg("%s gemm F16 n=%d nw=%d na=%d: [%lld][%lld] = %.9g, "
                   "model %.9g",
                   k->name, N, NW, NA, (long long)j, (long long)r,
                   out[j * NW + r], want);
      }
  }
  free(out);
  free(w);
  free(a);
  if (tables == 0) skip();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_is_the_dot),
      cmocka_unit_test(test_gemm_matches_model),
      cmocka_unit_test(test_gemm_weight_panels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
