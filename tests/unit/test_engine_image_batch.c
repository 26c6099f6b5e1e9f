/* Requests' images encoded as one batch in the engine's steps
 * (docs/VISION.md "Encoding in the steps": jobs at the same vision layer
 * in a pass run it as one product over all their patches, within the
 * step's image budget), on the random gemma3 and qwen3vl pairs of `make
 * arch-models`, requests of two images each submitted before a step (so
 * their encodes start in the same step):
 * - two and three requests with different images give the tokens and
 *   logprobs of each alone, bit for bit, and the engine counts the rows it
 *   batched (image_rows_batched: Gemma 3, every layer of both images of
 *   each request, all of them in lockstep); with no_image_batch the same
 *   outputs and none batched;
 * - a request arriving a step later, its encode behind the first's (which
 *   waits for it to catch up within the step's budget, then both run as
 *   one), and a budget of one part a step (no room for two parts: none
 *   batched) give the same outputs too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine_internal.h"
#include "image_engine_harness.h"
#include "nucleus.h"
#include "vision/mmproj.h"
#include "vision/mmproj_internal.h"

static const int32_t k_gemma3[][2] = {{80, 60}, {45, 100}, {64, 64}};
static const int32_t k_qwen3vl[][2] = {{80, 48}, {100, 70}, {64, 64}};

static int setup_gemma3(void **state) {
  return ie_setup(state, "gemma3", "gemma3-mmproj", false, k_gemma3, 3);
}
static int setup_qwen3vl(void **state) {
  return ie_setup(state, "qwen3vl", "qwen3vl-mmproj", true, k_qwen3vl, 3);
}

/* A stepped engine with p's projector (512 rows a step, prompt chunks
 * bounded by that alone: decode_stall 1000, so the rows batched do not
 * depend on the machine's speed), encodes within image_step_tokens' share
 * of a step, batched unless no_batch. */
static nucleus_engine *
engine_batching(const vt_pair *p, int32_t image_step_tokens, bool no_batch) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  ep.max_batch_tokens = 512;
  ep.mmproj = p->mm;
  ep.image_step_tokens = image_step_tokens;
  ep.no_image_batch = no_batch;
  ep.decode_stall = 1000; /* chunks by the budget alone, not timed */
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  if (nc_engine_create_stepped(p->lm, &ep, &e, &err) != NUCLEUS_OK)
    fail_msg("engine: %s", err.message);
  return e;
}

/* The image_step_tokens of about k vision layers on img. */
static int32_t layers_tokens(const vt_pair *p, const nucleus_image *img,
                             double k) {
  const double per_token = nc_image_jobs_budget(p->lm, 1);
  const double t = k * nc_mmproj_layer_flops(p->mm, img) / per_token;
  return t < 1.0 ? 1 : (int32_t)t;
}

static int64_t rows_batched(nucleus_engine *e) {
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  return st.image_rows_batched;
}

/* The n jobs through an engine (image_step_tokens, no_batch) against
 * each alone; returns the rows the engine batched. */
static int64_t check_jobs(const vt_pair *p, const job *jobs, int n,
                          int32_t image_step_tokens, bool no_batch,
                          const char *what) {
  result got[4], alone;
  nucleus_engine *e = engine_batching(p, image_step_tokens, no_batch);
  run_on(e, jobs, n, got);
  const int64_t batched = rows_batched(e);
  assert_int_equal(encoded(e), 2 * n);
  nucleus_engine_free(e);
  for (int i = 0; i < n; i++) {
    job one = jobs[i];
    one.arrival = 0;
    e = engine_batching(p, 0, true);
    run_on(e, &one, 1, &alone);
    nucleus_engine_free(e);
    assert_int_equal(got[i].n, N_GEN);
    if (!same(&got[i], &alone))
      fail_msg("%s: request %d's tokens or logprobs differ from alone", what,
               i);
  }
  return batched;
}

static void check_pair(ie_fixture *fx, bool exact) {
  const vt_pair *p = &fx->p;
  nucleus_image *const *im = fx->img;
  size_t n0 = 0, n1 = 0, n2 = 0;
  int32_t *p0 = prompt_of(p, im[0], im[1], &n0);
  int32_t *p1 = prompt_of(p, im[2], im[0], &n1);
  int32_t *p2 = prompt_of(p, im[1], im[2], &n2);
  const job three[3] = {{p0, n0, {im[0], im[1]}, 0},
                        {p1, n1, {im[2], im[0]}, 0},
                        {p2, n2, {im[1], im[2]}, 0}};
  /* the whole encodes in a step: every layer batched */
  const int64_t two = check_jobs(p, three, 2, 65536, false, "two");
  const int64_t all = check_jobs(p, three, 3, 65536, false, "three");
  assert_true(two > 0 && all > two);
  if (exact) { /* Gemma 3: every image the same patches */
    const nucleus_mmproj *mm = p->mm;
    const int64_t side = mm->image_size / mm->patch_size;
    assert_int_equal(two, 2 * mm->n_layer * 2 * side * side);
    assert_int_equal(all, 2 * mm->n_layer * 3 * side * side);
  }
  assert_int_equal(check_jobs(p, three, 3, 65536, true, "no batch"), 0);
  /* the second a step behind the first, a budget of about three layers
   * and a half a step: the first request's encode is a step ahead (its
   * second image begun), and waits a pass for the second's to catch up,
   * then both run their layers as one */
  job stag[2] = {three[0], three[1]};
  stag[1].arrival = 1;
  assert_true(check_jobs(p, stag, 2, layers_tokens(p, im[0], 3.5), false,
                         "staggered") > 0);
  /* one part a step: none batched */
  assert_int_equal(check_jobs(p, three, 3, 1, false, "one part a step"), 0);
  nucleus_free(p0);
  nucleus_free(p1);
  nucleus_free(p2);
}

static void test_gemma3(void **state) {
  check_pair(ie_need(state), true);
}

static void test_qwen3vl(void **state) {
  check_pair(ie_need(state), false);
}

int main(void) {
  const struct CMUnitTest gemma3[] = {cmocka_unit_test(test_gemma3)};
  const struct CMUnitTest qwen3vl[] = {cmocka_unit_test(test_qwen3vl)};
  int rc =
      cmocka_run_group_tests_name("gemma3", gemma3, setup_gemma3, ie_teardown);
  rc += cmocka_run_group_tests_name("qwen3vl", qwen3vl, setup_qwen3vl,
                                    ie_teardown);
  return rc;
}
