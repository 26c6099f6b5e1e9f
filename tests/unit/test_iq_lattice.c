/* iq_lattice: the IQ quantizers' search tables against their definition
 * (ggml's iq2xs_init_impl / iq3xs_init_impl: for each lattice point off the
 * grid, all grid points at its nwant smallest distinct squared distances,
 * sorted by distance then index, here by a plain qsort), and the lattice
 * quantizers on random rows: each block back within a relative error bound,
 * zero rows exact. tests/e2e/test_quantize_iq.py holds whole files to
 * llama.cpp's quantizer byte for byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gguf/quant.h"
#include "quantize/iq_lattice.h"
#include "quantize/quantize_rows.h"

static int by_dist_then_index(const void *a, const void *b) {
  const int *l = a, *r = b;
  return l[0] != r[0] ? (l[0] < r[0] ? -1 : 1) : (l[1] > r[1]) - (l[1] < r[1]);
}

/* The neighbour list of key by the definition: qsort every grid point by
 * (distance, index), keep those within the first nwant distances. */
static int reference_list(const nc_iq_lattice *lat, int32_t key, int nwant,
                          int *pairs, uint16_t *out) {
  const int mask = (1 << lat->bits) - 1;
  for (int g = 0; g < lat->n_grid; g++) {
    int d = 0;
    for (int j = 0; j < lat->dim; j++) {
      const int pos = 2 * ((key >> (lat->bits * j)) & mask) + 1;
      const int q = 2 * lat->levels[g * lat->dim + j] + 1;
      d += (q - pos) * (q - pos);
    }
    pairs[2 * g] = d;
    pairs[2 * g + 1] = g;
  }
  qsort(pairs, (size_t)lat->n_grid, 2 * sizeof(int), by_dist_then_index);
  int n = 0, have = 1, d2 = pairs[0];
  for (int g = 0; g < lat->n_grid; g++) {
    if (pairs[2 * g] > d2) {
      if (have == nwant) break;
      d2 = pairs[2 * g];
      have++;
    }
    out[n++] = (uint16_t)pairs[2 * g + 1];
  }
  return n;
}

static void check_table(nc_type t, int nwant, int key_step) {
  nc_iq_lattice *lat = NULL;
  nc_error err = {0};
  assert_int_equal(nc_iq_lattice_build(t, &lat, &err), NC_OK);
  int *pairs = malloc(sizeof(int) * 2 * (size_t)lat->n_grid);
  uint16_t *want = malloc(sizeof(uint16_t) * (size_t)lat->n_grid);
  assert_non_null(pairs);
  assert_non_null(want);
  int on_grid = 0, checked = 0;
  for (int32_t key = 0; key < lat->n_keys; key++) {
    const int32_t m = lat->map[key];
    if (m >= 0) {
      on_grid++;
      /* the grid point's own levels give back its key */
      int32_t k2 = 0;
      for (int j = 0; j < lat->dim; j++)
        k2 |= (int32_t)lat->levels[m * lat->dim + j] << (lat->bits * j);
      assert_int_equal(k2, key);
      continue;
    }
    if (key % key_step) continue;
    bool level3 = false; /* 2-bit keys with a level 3 are never looked up */
    for (int j = 0; lat->bits == 2 && j < lat->dim; j++)
      level3 |= ((key >> (2 * j)) & 3) == 3;
    if (level3) continue;
    const uint16_t *got = lat->neighbours + (-m - 1);
    const int n = reference_list(lat, key, nwant, pairs, want);
    assert_int_equal(got[0], n);
    assert_memory_equal(got + 1, want, sizeof(uint16_t) * (size_t)n);
    checked++;
  }
  assert_int_equal(on_grid, lat->n_grid); /* every grid point is in the map */
  assert_true(checked > 100);
  free(pairs);
  free(want);
  nc_iq_lattice_free(lat);
}

static void test_tables(void **state) {
  (void)state;
  check_table(NC_TYPE_IQ3_XXS, 2, 1);
  check_table(NC_TYPE_IQ3_S, 3, 2);
  check_table(NC_TYPE_IQ2_XXS, 2, 7);
  check_table(NC_TYPE_IQ2_XS, 2, 11);
  check_table(NC_TYPE_IQ2_S, 1, 13);
  check_table(NC_TYPE_IQ1_S, 3, 23);
}

static void test_not_a_lattice_type(void **state) {
  (void)state;
  nc_iq_lattice *lat = (nc_iq_lattice *)&lat;
  nc_error err = {0};
  assert_int_equal(nc_iq_lattice_build(NC_TYPE_Q4_K, &lat, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_null(lat);
  assert_non_null(strstr(err.message, "Q4_K"));
}

static float next_normal(uint64_t *s) {
  float acc = 0;
  for (int k = 0; k < 4; k++) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    acc += (float)(*s >> 40) / (float)(1 << 24) - 0.5f;
  }
  return acc;
}

static void test_rows_roundtrip(void **state) {
  (void)state;
  static const struct {
    nc_type t;
    double bound;
  } cases[] = {
      {NC_TYPE_IQ3_XXS, 0.21}, {NC_TYPE_IQ3_S, 0.17}, {NC_TYPE_IQ2_XXS, 0.42},
      {NC_TYPE_IQ2_XS, 0.37},  {NC_TYPE_IQ2_S, 0.29}, {NC_TYPE_IQ1_S, 0.6},
      {NC_TYPE_IQ1_M, 0.6},
  };
  enum { N = 512, ROWS = 3 };
  uint64_t s = 99;
  float *x = malloc(sizeof(float) * N * ROWS), *y = malloc(sizeof(float) * N);
  float *qw = malloc(sizeof(float) * N);
  uint8_t *q = malloc(sizeof(float) * N * ROWS);
  assert_non_null(x);
  assert_non_null(y);
  assert_non_null(qw);
  assert_non_null(q);
  for (int i = 0; i < N; i++)
    qw[i] = 0.5f + (float)(i % 7);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const nc_type t = cases[c].t;
    nc_iq_lattice *lat = NULL;
    nc_error err = {0};
    assert_int_equal(nc_iq_lattice_build(t, &lat, &err), NC_OK);
    assert_true(nc_quantize_weights_supported(t));
    for (int i = 0; i < N * 2; i++)
      x[i] = next_normal(&s) * 0.05f;
    memset(x + 2 * N, 0, sizeof(float) * N);
    nc_quantize_weights(t, x, q, ROWS, N, qw, lat);
    const size_t row = nc_row_size(t, N);
    for (int r = 0; r < ROWS; r++) {
      nc_dequantize_row(t, q + (size_t)r * row, y, N);
      double e = 0, ref = 0;
      for (int i = 0; i < N; i++) {
        const double d = (double)y[i] - x[r * N + i];
        e += d * d;
        ref += (double)x[r * N + i] * x[r * N + i];
      }
      if (r == 2) {
        assert_true(e == 0.0);
        continue;
      }
      const double rel = sqrt(e / ref);
      print_message("%s row %d: relative rms error %.4f (bound %.2f)\n",
                    nc_type_name(t), r, rel, cases[c].bound);
      assert_true(rel < cases[c].bound);
    }
    nc_iq_lattice_free(lat);
  }
  free(x);
  free(y);
  free(qw);
  free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables),
      cmocka_unit_test(test_not_a_lattice_type),
      cmocka_unit_test(test_rows_roundtrip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
