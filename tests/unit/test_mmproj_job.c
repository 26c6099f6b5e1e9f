/* An encode sliced into parts (src/vision/mmproj_job.c: begin, each vision
 * layer, finish) on the random pairs of `make arch-models`, for every
 * projector family (gemma3, qwen3vl, qwen2vl, qwen25vl, gemma4v):
 * - one part per call gives nucleus_mmproj_encode's floats bit for bit, at
 *   1 and 3 threads, flash attention off and on, and with the calls
 *   switching between the caller's thread and a pool of 3 (the per-thread
 *   scratch sized again); a job writing into the caller's buffer too;
 * - the parts are n_layer + 2, each with a positive cost estimate, 0 once
 *   done; a budget of 0 runs one part a call, the next part's cost that
 *   part alone, an endless one the rest in one call;
 * - a job freed before its first part, midway and done (its rows taken or
 *   not) leaks nothing (ASan). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/threadpool.h"
#include "nucleus.h"
#include "vision/mmproj.h"
#include "vision/mmproj_internal.h"
#include "vision_test_util.h"

typedef struct family {
  const char *lm, *mm;
} family;

static const family FAMILIES[] = {
    {"gemma3", "gemma3-mmproj"},   {"qwen3vl", "qwen3vl-mmproj"},
    {"qwen2vl", "qwen2vl-mmproj"}, {"qwen2vl", "qwen25vl-mmproj"},
    {"gemma4", "gemma4v-mmproj"},
};

static size_t n_floats(const nucleus_mmproj *mm, const nucleus_image *img) {
  int32_t n = 0;
  nucleus_error err;
  assert_int_equal(nucleus_mmproj_image_tokens(mm, img, &n, &err), NUCLEUS_OK);
  return (size_t)n * (size_t)nucleus_mmproj_n_embd(mm);
}

/* A job run one part a call; part k on pools[k % 2]. Returns its rows. */
static float *sliced(const nucleus_mmproj *mm, const nucleus_image *img,
                     nc_threadpool *const pools[2], float *out) {
  nc_mmproj_job *job = NULL;
  nc_error err = {0};
  if (nc_mmproj_job_begin(mm, img, out, &job, &err) != NC_OK)
    fail_msg("job_begin: %s", err.message);
  int32_t parts = 0;
  bool done = false;
  while (!done) {
    const double cost = nc_mmproj_job_cost(job);
    assert_true(cost > 0.0);
    if (nc_mmproj_job_run(job, pools[parts % 2], 0.0, &done, &err) != NC_OK)
      fail_msg("job_run: %s", err.message);
    parts++;
    assert_true(parts <= mm->n_layer + 2);
  }
  assert_int_equal(parts, mm->n_layer + 2);
  assert_true(nc_mmproj_job_done(job));
  assert_true(nc_mmproj_job_cost(job) == 0.0);
  float *rows = nc_mmproj_job_take(job);
  if (out) assert_null(rows);
  nc_mmproj_job_free(job);
  return out ? out : rows;
}

static void check_family(const family *f, bool flash, int n_threads,
                         const nucleus_image *const *imgs, int n_imgs) {
  vt_pair p = vt_load(f->lm, f->mm, false, flash, n_threads);
  nc_threadpool *tp = NULL, *tp3 = NULL;
  nc_error err = {0};
  if (n_threads > 1)
    assert_int_equal(nc_threadpool_create(n_threads, &tp, &err), NC_OK);
  assert_int_equal(nc_threadpool_create(3, &tp3, &err), NC_OK);
  for (int i = 0; i < n_imgs; i++) {
    const size_t n = n_floats(p.mm, imgs[i]);
    float *ref = malloc(n * sizeof *ref);
    nucleus_error perr;
    assert_int_equal(nucleus_mmproj_encode(p.mm, imgs[i], ref, n, &perr),
                     NUCLEUS_OK);
    /* the engine's pool every part */
    nc_threadpool *const same[2] = {tp, tp};
    float *rows = sliced(p.mm, imgs[i], same, NULL);
    if (memcmp(rows, ref, n * sizeof *ref) != 0)
      fail_msg("%s (%d threads, flash %d): sliced rows differ", f->mm,
               n_threads, flash);
    free(rows);
    /* the pool switching between parts, into the caller's buffer */
    nc_threadpool *const mixed[2] = {NULL, tp3};
    float *mine = calloc(n, sizeof *mine);
    sliced(p.mm, imgs[i], mixed, mine);
    if (memcmp(mine, ref, n * sizeof *ref) != 0)
      fail_msg("%s (flash %d): rows differ with the pools switching", f->mm,
               flash);
    free(mine);
    free(ref);
  }
  nc_threadpool_free(tp);
  nc_threadpool_free(tp3);
  vt_unload(&p);
}

static void test_sliced_is_whole(void **state) {
  (void)state;
  nucleus_image *imgs[2] = {vt_image(80, 60), vt_image(45, 100)};
  for (size_t f = 0; f < sizeof FAMILIES / sizeof FAMILIES[0]; f++)
    for (int flash = 0; flash < 2; flash++) {
      check_family(&FAMILIES[f], flash, 1, (const nucleus_image *const *)imgs,
                   2);
      check_family(&FAMILIES[f], flash, 3, (const nucleus_image *const *)imgs,
                   2);
    }
  test_image_free(imgs[0]);
  test_image_free(imgs[1]);
}

/* What a budget runs (qwen3vl: its layers outnumber the three calls). */
static void test_budget(void **state) {
  (void)state;
  vt_pair p = vt_load(FAMILIES[1].lm, FAMILIES[1].mm, false, false, 1);
  nucleus_image *img = vt_image(80, 60);
  nc_mmproj_job *job = NULL;
  nc_error err = {0};
  assert_int_equal(nc_mmproj_job_begin(p.mm, img, NULL, &job, &err), NC_OK);
  assert_true(nc_mmproj_layer_flops(p.mm, img) > 0.0);
  assert_true(p.mm->n_layer >= 2);
  bool done = false;
  /* budget 0: one part a call; the next part's cost: that part alone;
   * every part's: the rest in one call */
  assert_int_equal(nc_mmproj_job_run(job, NULL, 0.0, &done, &err), NC_OK);
  assert_int_equal(nc_mmproj_job_parts(job), 1);
  assert_int_equal(nc_mmproj_job_run(job, NULL, 0.0, &done, &err), NC_OK);
  assert_int_equal(nc_mmproj_job_parts(job), 2);
  assert_true(nc_mmproj_job_cost(job) > 0.0);
  assert_int_equal(
      nc_mmproj_job_run(job, NULL, nc_mmproj_job_cost(job), &done, &err),
      NC_OK);
  assert_int_equal(nc_mmproj_job_parts(job), 3);
  assert_false(done);
  assert_int_equal(nc_mmproj_job_run(job, NULL, INFINITY, &done, &err), NC_OK);
  assert_true(done);
  assert_int_equal(nc_mmproj_job_parts(job), p.mm->n_layer + 2);
  float *rows = nc_mmproj_job_take(job);
  assert_non_null(rows);
  assert_null(nc_mmproj_job_take(job)); /* taken once */
  nc_mmproj_job_free(job);
  const size_t n = n_floats(p.mm, img);
  float *ref = malloc(n * sizeof *ref);
  nucleus_error perr;
  assert_int_equal(nucleus_mmproj_encode(p.mm, img, ref, n, &perr), NUCLEUS_OK);
  assert_memory_equal(rows, ref, n * sizeof *ref);
  free(ref);
  free(rows);
  test_image_free(img);
  vt_unload(&p);
}

/* Jobs freed at every stage: nothing leaks (ASan). */
static void test_free_anywhere(void **state) {
  (void)state;
  nucleus_image *img = vt_image(64, 64);
  for (size_t f = 0; f < sizeof FAMILIES / sizeof FAMILIES[0]; f++) {
    vt_pair p = vt_load(FAMILIES[f].lm, FAMILIES[f].mm, false, true, 2);
    const int32_t total = p.mm->n_layer + 2;
    const int32_t stops[] = {0, 1, 2, total - 1, total};
    for (size_t s = 0; s < sizeof stops / sizeof stops[0]; s++) {
      nc_mmproj_job *job = NULL;
      nc_error err = {0};
      assert_int_equal(nc_mmproj_job_begin(p.mm, img, NULL, &job, &err), NC_OK);
      bool done = false;
      for (int32_t k = 0; k < stops[s]; k++)
        assert_int_equal(nc_mmproj_job_run(job, NULL, 0.0, &done, &err), NC_OK);
      assert_true(done == (stops[s] == total));
      nc_mmproj_job_free(job); /* the rows with it when not taken */
    }
    vt_unload(&p);
  }
  test_image_free(img);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sliced_is_whole),
      cmocka_unit_test(test_budget),
      cmocka_unit_test(test_free_anywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
