/* Sampling a batch over a thread pool gives the serial results, row for
 * row, whatever the thread count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "base/rng.h"
#include "base/threadpool.h"
#include "test_sampler_util.h"

static void parallel_equals_serial(void **state) {
  (void)state;
  enum { V = 2000, R = 37 };
  float *logits = malloc(sizeof(float) * V * R);
  nc_sampler *s[R];
  nc_sample_row rows[R];
  for (int r = 0; r < R; r++) {
    for (int32_t i = 0; i < V; i++)
      logits[r * V + i] = (float)(8.0 * nc_rng_uniform(r, 0, (uint64_t)i, 0));
    nucleus_sampling_params p = nucleus_sampling_default_params();
    p.temperature = r % 5 == 0 ? 0.0f : 0.5f + 0.1f * (float)(r % 7);
    p.top_k = r % 3 ? 0 : 20 + r;
    p.top_p = r % 2 ? 0.9f : 1.0f;
    p.logprobs = true, p.top_logprobs = r % 6;
    p.repetition_penalty = 1.0f + 0.05f * (float)(r % 4);
    s[r] = make_sampler(&p, V, 500 + (uint64_t)r);
    rows[r] = (nc_sample_row){.sampler = s[r], .logits = logits + r * V};
  }
  float nan_row[V];
  for (int32_t i = 0; i < V; i++)
    nan_row[i] = 0.0f;
  nan_row[123] = NAN;
  rows[20].logits = nan_row; /* one row fails, alone */
  nc_sample_workspace *ws1 = make_ws(V);
  nc_sample_result serial[R];
  nc_error err = {0};
  assert_int_equal(nc_sample_batch(ws1, rows, R, serial, &err),
                   NC_ERR_INVALID_ARGUMENT);
  char serial_msg[sizeof err.message];
  memcpy(serial_msg, err.message, sizeof serial_msg);
  for (int nth = 1; nth <= 4; nth++) {
    nc_threadpool *tp = NULL;
    assert_int_equal(nc_threadpool_create(nth, &tp, NULL), NC_OK);
    nc_sample_workspace *ws[4] = {NULL};
    for (int i = 0; i < nth; i++)
      ws[i] = make_ws(V);
    nc_sample_result par[R];
    nc_error perr = {0};
    assert_int_equal(nc_sample_batch_parallel(ws, nth, tp, rows, R, par, &perr),
                     NC_ERR_INVALID_ARGUMENT);
    assert_string_equal(perr.message, serial_msg);
    assert_non_null(strstr(perr.message, "row 20: logits[123]"));
    assert_memory_equal(par, serial, sizeof par);
    /* too few workspaces for the pool */
    if (nth > 1)
      assert_int_equal(
          nc_sample_batch_parallel(ws, nth - 1, tp, rows, R, par, &perr),
          NC_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < nth; i++)
      nc_sample_workspace_free(ws[i]);
    nc_threadpool_free(tp);
  }
  for (int r = 0; r < R; r++)
    nc_sampler_free(s[r]);
  nc_sample_workspace_free(ws1);
  free(logits);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parallel_equals_serial),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
