/* The F16 products of the SIMD tables against the plain-C models of their
 * orders (tests/reference/ref_f16_order.c): the avx2 table's vec_dot,
 * vec_dot_rows and gemm in nc_avx2_dot_f16's order (ref_f16_lanes); the
 * avx512 and amx tables' in llama.cpp's AVX-512 tinyBLAS<16> order
 * (ref_f16_tinyblas, which is ggml_vec_dot_f16's for n % 16 != 0) and
 * their gemm_few in its ggml_vec_dot_f16 (ref_f16_vec16). Every output bit
 * for bit against the model, for activation and weight counts that cut the
 * register tiles, the widened panels and the few-rows path, row lengths
 * with and without a tail past the last 16, 32 or 64, padded strides. */
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

typedef float (*f16_model)(int64_t n, const nc_fp16 *w, const nc_fp16 *a);

/* The order of a table's vec_dot, vec_dot_rows and gemm. */
static f16_model model_of(const nc_kernels *k) {
  return strcmp(k->name, "avx2") == 0 ? nc_ref_dot_f16_lanes
                                      : nc_ref_dot_f16_tinyblas;
}

static void test_model_is_the_dot(void **state) {
  (void)state;
  static const int64_t ns[] = {1,  7,  15, 16,  31,  32,   33,  48,
                               64, 80, 96, 100, 384, 1536, 1541};
  uint64_t s = 51;
  int tables = 0;
  for (size_t t = 0; t < sizeof k_tables / sizeof k_tables[0]; t++) {
    const nc_kernels *k = nc_kernels_by_name(k_tables[t]);
    if (!k) continue;
    tables++;
    const f16_model model = model_of(k);
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      for (int rep = 0; rep < 4; rep++) {
        enum { NA = 3 };
        nc_fp16 *w = random_rows(1, ns[i], &s), *a = random_rows(NA, ns[i], &s);
        float rows[NA];
        k->vec_dot_rows[NC_TYPE_F16](ns[i], w, a, sizeof(nc_fp16) * ns[i], NA,
                                     rows, 1);
        for (int j = 0; j < NA; j++) {
          const nc_fp16 *aj = a + j * ns[i];
          const float got = k->vec_dot[NC_TYPE_F16](ns[i], w, aj);
          const float want = model(ns[i], w, aj);
          if (bits(got) != bits(want) || bits(rows[j]) != bits(want))
            fail_msg("%s vec_dot F16 n=%lld: %.9g, rows %.9g, model %.9g",
                     k->name, (long long)ns[i], got, rows[j], want);
        }
        free(w);
        free(a);
      }
  }
  if (tables == 0) skip();
}

/* The avx512 and amx tables' gemm_few (decode rows): ggml_vec_dot_f16's
 * order for every n, 1..20 activation rows (its chunks of 16 widened rows,
 * tiles of 2 weight x 3 activation rows cut), odd strides. */
static void test_gemm_few_is_vec_dot(void **state) {
  (void)state;
  static const int64_t ns[] = {1, 16, 63, 64, 65, 100, 384, 1541, 4096};
  enum { NW = 9, NA = 20 };
  static const int64_t nas[] = {1, 2, 3, 4, 7, 16, 17, 20};
  uint64_t s = 52;
  int tables = 0;
  for (size_t t = 1; t < sizeof k_tables / sizeof k_tables[0]; t++) {
    const nc_kernels *k = nc_kernels_by_name(k_tables[t]);
    if (!k) continue;
    assert_non_null(k->gemm_few[NC_TYPE_F16]);
    tables++;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
      const int64_t n = ns[i], ws = n + 3, as = n + 1;
      nc_fp16 *w = random_rows(NW, ws, &s), *a = random_rows(NA, as, &s);
      float out[NA * NW];
      for (size_t y = 0; y < sizeof nas / sizeof nas[0]; y++) {
        const int64_t na = nas[y];
        k->gemm_few[NC_TYPE_F16](n, w, sizeof(nc_fp16) * (size_t)ws, NW, a,
                                 sizeof(nc_fp16) * (size_t)as, na, out, NW);
        for (int64_t j = 0; j < na; j++)
          for (int64_t r = 0; r < NW; r++) {
            const float want = nc_ref_dot_f16_vec16(n, w + r * ws, a + j * as);
            if (bits(out[j * NW + r]) != bits(want))
              fail_msg("%s gemm_few F16 n=%lld na=%lld: [%lld][%lld] = %.9g, "
                       "model %.9g",
                       k->name, (long long)n, (long long)na, (long long)j,
                       (long long)r, out[j * NW + r], want);
          }
      }
      free(w);
      free(a);
    }
  }
  if (tables == 0) skip();
}

/* Where the table shares widened activation rows across threads
 * (kernels.h's pack_act / gemm_packed for F16): the layout packed in two
 * parts (as two threads would), gemm_packed gives want's bits. */
static void check_gemm_packed(const nc_kernels *k, int64_t n, const nc_fp16 *w,
                              int64_t ws, int64_t nw, const nc_fp16 *a,
                              int64_t as, int64_t na, const float *want,
                              int64_t want_stride) {
  if (!k->gemm_packed[NC_TYPE_F16]) return;
  assert_non_null(k->pack_act[NC_TYPE_F16]);
  const size_t bytes = k->pack_bytes(NC_TYPE_F16, n, na);
  if (!bytes) return;
  uint8_t *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
  float *got = malloc(sizeof(float) * (size_t)(na * nw));
  assert_non_null(packed);
  assert_non_null(got);
  const int64_t unit = k->pack_rows;
  const int64_t split = (na + unit - 1) / unit / 2 * unit;
  const size_t abytes = sizeof(nc_fp16) * (size_t)as;
  k->pack_act[NC_TYPE_F16](n, a, abytes, na, split, na, packed);
  if (split > 0) k->pack_act[NC_TYPE_F16](n, a, abytes, na, 0, split, packed);
  k->gemm_packed[NC_TYPE_F16](n, w, sizeof(nc_fp16) * (size_t)ws, nw, a, abytes,
                              packed, na, got, (size_t)nw);
  for (int64_t j = 0; j < na; j++)
    for (int64_t r = 0; r < nw; r++)
      if (bits(got[j * nw + r]) != bits(want[j * want_stride + r]))
        fail_msg("%s gemm_packed F16 n=%lld nw=%lld na=%lld: [%lld][%lld] = "
                 "%.9g, model %.9g",
                 k->name, (long long)n, (long long)nw, (long long)na,
                 (long long)j, (long long)r, got[j * nw + r],
                 want[j * want_stride + r]);
  free(got);
  free(packed);
}

/* n elements a row; NW weight rows, NA activation rows, all pairs. */
static void check_gemm(const nc_kernels *k, int64_t n, uint64_t *s) {
  enum { NW = 48, NA = 100, PAD = 3 };
  static const int64_t nws[] = {1, 3, 4, 5, 17, NW};
  static const int64_t nas[] = {1, 2, 3, 4, 7, 16, 17, 43, NA};
  const int64_t ws = n + 5, as = n + 11; /* strides, in halves */
  nc_fp16 *w = random_rows(NW, ws, s), *a = random_rows(NA, as, s);
  float *want = malloc(sizeof(float) * NW * NA);
  float *out = malloc(sizeof(float) * NA * (NW + PAD));
  assert_non_null(want);
  assert_non_null(out);
  for (int64_t j = 0; j < NA; j++)
    for (int64_t r = 0; r < NW; r++)
      want[j * NW + r] = model_of(k)(n, w + r * ws, a + j * as);
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
      check_gemm_packed(k, n, w, ws, nw, a, as, na, want, NW);
    }
  free(want);
  free(out);
  free(w);
  free(a);
}

/* n = 6160: 42 rows a 1 MiB activation chunk, so 100 activation rows take
 * several chunks (the 48 weight rows panels of 20); the avx512 tables
 * take n % 16 != 0 (8, 33, 588: Gemma 3's patch embedding, 1541) in
 * ggml_vec_dot_f16's order, on tiles of their own past 2 rows. */
static void test_gemm_matches_model(void **state) {
  (void)state;
  static const int64_t ns[] = {8, 16, 33, 48, 384, 588, 1541, 1552, 6160};
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

/* 2080 weight rows of 4,096 floats (rows of 4,112 widened): panels of 28
 * rows (512 KiB), each widened once and run over every activation chunk
 * (60 rows, 63 for avx2's tiles of 3 activation rows): 4 rows in one
 * chunk, 66 in one chunk and a last of 6 or 3 rows joined to it, 100 in
 * two chunks. Every activation row, every 13th weight row and the last. */
static void test_gemm_weight_panels(void **state) {
  (void)state;
  enum { N = 4096, NW = 2080, NA_MAX = 100 };
  static const int64_t nas[] = {4, 66, 100};
  uint64_t s = 45;
  nc_fp16 *w = random_rows(NW, N, &s), *a = random_rows(NA_MAX, N, &s);
  float *out = malloc(sizeof(float) * NW * NA_MAX);
  assert_non_null(out);
  int tables = 0;
  for (size_t t = 0; t < sizeof k_tables / sizeof k_tables[0]; t++) {
    const nc_kernels *k = nc_kernels_by_name(k_tables[t]);
    if (!k) continue;
    tables++;
    for (size_t i = 0; i < sizeof nas / sizeof nas[0]; i++) {
      const int64_t na = nas[i];
      k->gemm[NC_TYPE_F16](N, w, sizeof(nc_fp16) * N, NW, a,
                           sizeof(nc_fp16) * N, na, out, NW);
      for (int64_t j = 0; j < na; j++)
        for (int64_t r = 0; r < NW;
             r = r + 13 < NW || r == NW - 1 ? r + 13 : NW - 1) {
          const float want = model_of(k)(N, w + r * N, a + j * N);
          if (bits(out[j * NW + r]) != bits(want))
            fail_msg("%s gemm F16 n=%d nw=%d na=%lld: [%lld][%lld] = %.9g, "
                     "model %.9g",
                     k->name, N, NW, (long long)na, (long long)j, (long long)r,
                     out[j * NW + r], want);
        }
    }
  }
  free(out);
  free(w);
  free(a);
  if (tables == 0) skip();
}

/* Short rows (n = 384: a register tile's activation rows in L1, the
 * weights in panels kept in L2, 340 rows for avx512's tiles of 4 weight
 * rows, 341 for avx2's of 1): 700 weight rows cut the panels,
 * 13 activation rows the register tiles. */
static void test_gemm_weight_sub_panels(void **state) {
  (void)state;
  enum { N = 384, NW = 700, NA = 13 };
  uint64_t s = 46;
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
        const float want = model_of(k)(N, w + r * N, a + j * N);
        if (bits(out[j * NW + r]) != bits(want))
          fail_msg("%s gemm F16 n=%d nw=%d na=%d: [%lld][%lld] = %.9g, "
                   "model %.9g",
                   k->name, N, NW, NA, (long long)j, (long long)r,
                   out[j * NW + r], want);
      }
    check_gemm_packed(k, N, w, N, NW, a, N, NA, out, NW);
  }
  free(out);
  free(w);
  free(a);
  if (tables == 0) skip();
}

/* Long rows (n = 16,384, rows of 16,400 floats): panels of 4 weight rows,
 * chunks of 12 activation rows (a last of 3 or less joined to the one
 * before), sets of 252 rows each widened once with every panel widened
 * again for the next set, a last of a quarter set or less joined to the one
 * before (avx512's tiles; avx2's: 7, 15, 255): 260 activation rows take
 * one set (252 + 8 joined), 322 two (252 + 70, avx2's 255 + 67); the 8
 * weight rows two panels.
 * Every pair; the packed path (the same sets of the packed rows) too. */
static void test_gemm_activation_sets(void **state) {
  (void)state;
  enum { N = 16384, NW = 8, NA = 322 };
  static const int64_t nas[] = {260, NA};
  uint64_t s = 47;
  nc_fp16 *w = random_rows(NW, N, &s), *a = random_rows(NA, N, &s);
  float *out = malloc(sizeof(float) * NW * NA);
  float *want = malloc(sizeof(float) * NW * NA);
  assert_non_null(out);
  assert_non_null(want);
  int tables = 0;
  for (size_t t = 0; t < sizeof k_tables / sizeof k_tables[0]; t++) {
    const nc_kernels *k = nc_kernels_by_name(k_tables[t]);
    if (!k) continue;
    tables++;
    for (int64_t j = 0; j < NA; j++)
      for (int64_t r = 0; r < NW; r++)
        want[j * NW + r] = model_of(k)(N, w + r * N, a + j * N);
    for (size_t i = 0; i < sizeof nas / sizeof nas[0]; i++) {
      const int64_t na = nas[i];
      k->gemm[NC_TYPE_F16](N, w, sizeof(nc_fp16) * N, NW, a,
                           sizeof(nc_fp16) * N, na, out, NW);
      for (int64_t j = 0; j < na; j++)
        for (int64_t r = 0; r < NW; r++)
          if (bits(out[j * NW + r]) != bits(want[j * NW + r]))
            fail_msg("%s gemm F16 n=%d nw=%d na=%lld: [%lld][%lld] = %.9g, "
                     "model %.9g",
                     k->name, N, NW, (long long)na, (long long)j, (long long)r,
                     out[j * NW + r], want[j * NW + r]);
      check_gemm_packed(k, N, w, N, NW, a, N, na, want, NW);
    }
  }
  free(want);
  free(out);
  free(w);
  free(a);
  if (tables == 0) skip();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_is_the_dot),
      cmocka_unit_test(test_gemm_few_is_vec_dot),
      cmocka_unit_test(test_gemm_matches_model),
      cmocka_unit_test(test_gemm_weight_panels),
      cmocka_unit_test(test_gemm_weight_sub_panels),
      cmocka_unit_test(test_gemm_activation_sets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
