/* The request's generator: Philox4x32-10 against Random123's known answers,
 * the uniform's range and independence of its address parts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/rng.h"

static void philox_known_answers(void **state) {
  (void)state;
  static const uint32_t cases[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
       0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
       0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
  };
  for (int c = 0; c < 3; c++) {
    uint32_t out[4];
    nc_philox4x32_10(cases[c], cases[c] + 4, out);
    for (int i = 0; i < 4; i++)
      assert_int_equal(out[i], cases[c][6 + i]);
  }
}

static void uniform_range_and_mean(void **state) {
  (void)state;
  double sum = 0.0;
  int buckets[10] = {0};
  const int n = 100000;
  for (int i = 0; i < n; i++) {
    double u = nc_rng_uniform(42, 0, (uint64_t)i, 0);
    assert_true(u >= 0.0 && u < 1.0);
    sum += u;
    buckets[(int)(u * 10)]++;
  }
  assert_true(sum / n > 0.49 && sum / n < 0.51);
  for (int b = 0; b < 10; b++)
    assert_true(buckets[b] > 9500 && buckets[b] < 10500);
}

static void address_parts_are_independent(void **state) {
  (void)state;
  double base = nc_rng_uniform(7, 3, 11, 0);
  assert_true(base == nc_rng_uniform(7, 3, 11, 0)); /* a pure function */
  assert_true(base != nc_rng_uniform(8, 3, 11, 0));
  assert_true(base != nc_rng_uniform(7, 4, 11, 0));
  assert_true(base != nc_rng_uniform(7, 3, 12, 0));
  assert_true(base != nc_rng_uniform(7, 3, 11, 1));
  /* stream and step are not interchangeable */
  assert_true(nc_rng_uniform(7, 1, 2, 0) != nc_rng_uniform(7, 2, 1, 0));
  /* neighbouring streams are uncorrelated over steps */
  double sxy = 0, sx = 0, sy = 0, sxx = 0, syy = 0;
  const int n = 20000;
  for (int i = 0; i < n; i++) {
    double x = nc_rng_uniform(1, 0, (uint64_t)i, 0);
    double y = nc_rng_uniform(1, 1, (uint64_t)i, 0);
    sx += x, sy += y, sxy += x * y, sxx += x * x, syy += y * y;
  }
  double cov = sxy / n - (sx / n) * (sy / n);
  assert_true(sxx / n > 0.32 && syy / n > 0.32); /* E[U^2] = 1/3 */
  assert_true(cov < 0.005 && cov > -0.005);      /* var(U) = 1/12 = 0.083 */
}

static void os_seeds_differ(void **state) {
  (void)state;
  uint64_t a = nc_seed_from_os(), b = nc_seed_from_os();
  assert_true(a != b);
  assert_true(nc_mix64(1) != nc_mix64(2));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(philox_known_answers),
      cmocka_unit_test(uniform_range_and_mean),
      cmocka_unit_test(address_parts_are_independent),
      cmocka_unit_test(os_seeds_differ),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
