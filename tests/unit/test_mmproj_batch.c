/* Encodes run as one batch (src/vision/encode_batch.c, mmproj_job.c's
 * nc_mmproj_jobs_run: jobs at the same vision layer, each weight product
 * once over all their images' patches):
 * - nc_vit_matmul over the rows of several images at once gives each row
 *   the bits of its product alone, for F32, F16 and Q8_0 weights (the
 *   vision matrices' types), on every kernel table this CPU has;
 * - two and three different images encoded together, their jobs at the
 *   same part from the begin on, and staggered (one job layers ahead: the
 *   others catch up alone, then all run as one; two ahead of a third),
 *   and two in lockstep to the finish, give each image nucleus_mmproj_encode's
 * floats bit for bit, for the random pairs of `make arch-models`: gemma3 (F32
 * and Q8_0 matrices) and qwen3vl (F32 and F16; its DeepStack taps inside the
 * batched layers), at 1 and 3 threads, flash attention off and on, the best and
 * the plain-C kernel tables;
 * - which jobs batch: the same projector at the same vision layer only
 *   (not the begin or the finish, not Qwen2-VL's layers), and a batch of
 *   jobs at other parts is refused; what a job behind costs to catch up;
 * - nothing leaks (ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/threadpool.h"
#include "gguf/quant.h"
#include "kernels/kernels.h"
#include "nucleus.h"
#include "vision/mmproj.h"
#include "vision/mmproj_internal.h"
#include "vision/vit.h"
#include "vision_test_util.h"

/* ---- the products */

static float urand(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* rows of n floats times a weight of type t (ne1 outputs), each row's
 * product alone equal to its product among all the rows */
static void check_matmul(const nc_kernels *kern, nc_type t, int64_t n,
                         int64_t ne1, nc_threadpool *tp) {
  uint32_t s = 7u + (uint32_t)t;
  const size_t rb = nc_row_size(t, n);
  uint8_t *w = malloc(rb * (size_t)ne1);
  float *row = malloc(sizeof(float) * (size_t)n);
  for (int64_t r = 0; r < ne1; r++) {
    for (int64_t i = 0; i < n; i++)
      row[i] = urand(&s);
    nc_quantize_row(t, row, w + (size_t)r * rb, n);
  }
  float *bias = malloc(sizeof(float) * (size_t)ne1);
  for (int64_t i = 0; i < ne1; i++)
    bias[i] = urand(&s);
  const nc_weight W = {
      .data = w, .type = t, .ne0 = n, .ne1 = ne1, .ne2 = 1, .row_bytes = rb};
  /* three images' rows: 1, 37 and 64 patches, together and each alone */
  static const int32_t parts[] = {1, 37, 64};
  const int32_t R = 1 + 37 + 64;
  float *x = malloc(sizeof(float) * (size_t)(R * n));
  for (int64_t i = 0; i < R * n; i++)
    x[i] = urand(&s);
  float *all = malloc(sizeof(float) * (size_t)(R * ne1));
  float *one = malloc(sizeof(float) * (size_t)(64 * ne1));
  nc_vit v;
  nc_error err = {0};
  assert_int_equal(nc_vit_init(&v, kern, tp, &err), NC_OK);
  assert_int_equal(nc_vit_matmul(&v, x, n, R, &W, bias, all, ne1, &err), NC_OK);
  int32_t off = 0;
  for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
    assert_int_equal(nc_vit_matmul(&v, x + (int64_t)off * n, n, parts[p], &W,
                                   bias, one, ne1, &err),
                     NC_OK);
    if (memcmp(one, all + (int64_t)off * ne1,
               sizeof(float) * (size_t)(parts[p] * ne1)) != 0)
      fail_msg("%s, type %d: %d rows differ among %d", kern->name, (int)t,
               (int)parts[p], (int)R);
    off += parts[p];
  }
  nc_vit_free(&v);
  free(w);
  free(row);
  free(bias);
  free(x);
  free(all);
  free(one);
}

static void test_products_batch_invariant(void **state) {
  (void)state;
  static const char *const tables[] = {"ref", "avx2", "avx512", "amx"};
  nc_threadpool *tp = NULL;
  nc_error err = {0};
  assert_int_equal(nc_threadpool_create(3, &tp, &err), NC_OK);
  for (size_t k = 0; k < sizeof tables / sizeof tables[0]; k++) {
    const nc_kernels *kern = nc_kernels_by_name(tables[k]);
    if (!kern) continue; /* not on this CPU */
    for (int pool = 0; pool < 2; pool++) {
      check_matmul(kern, NC_TYPE_F32, 128, 48, pool ? tp : NULL);
      check_matmul(kern, NC_TYPE_F16, 256, 80, pool ? tp : NULL);
      check_matmul(kern, NC_TYPE_Q8_0, 256, 40, pool ? tp : NULL);
    }
  }
  nc_threadpool_free(tp);
}

/* ---- the encodes */

typedef struct pair_files {
  const char *lm, *mm;
} pair_files;

static const pair_files PAIRS[] = {
    {"gemma3", "gemma3-mmproj"},
    {"gemma3", "gemma3-mmproj-q8"},
    {"qwen3vl", "qwen3vl-mmproj"},
    {"qwen3vl", "qwen3vl-mmproj-f16"},
};

enum { N_IMG = 3 };

typedef struct encodes {
  const nucleus_mmproj *mm;
  nc_mmproj_batch *batch;
  nc_threadpool *tp;
  nc_mmproj_job *job[N_IMG];
} encodes;

/* The next part of the jobs named in which ("012": all three) as one. */
static void run(encodes *en, const char *which) {
  nc_mmproj_job *jobs[N_IMG];
  int32_t n = 0;
  for (const char *c = which; *c; c++)
    jobs[n++] = en->job[*c - '0'];
  for (int32_t i = 1; i < n; i++)
    assert_true(nc_mmproj_job_batches_with(jobs[0], jobs[i]));
  nc_error err = {0};
  if (nc_mmproj_jobs_run(jobs, n, en->batch, en->tp, &err) != NC_OK)
    fail_msg("jobs_run %s: %s", which, err.message);
}

/* Runs the jobs of n images by schedule (a list of batches, then each
 * job alone to its end) and compares each image's rows with ref. */
static void check_schedule(encodes *en, const nucleus_image *const *imgs, int n,
                           float *const *ref, const size_t *len,
                           const char *const *schedule, const char *what) {
  nc_error err = {0};
  for (int i = 0; i < n; i++)
    assert_int_equal(
        nc_mmproj_job_begin(en->mm, imgs[i], NULL, &en->job[i], &err), NC_OK);
  for (const char *const *s = schedule; *s; s++)
    run(en, *s);
  for (int i = 0; i < n; i++) {
    bool done = nc_mmproj_job_done(en->job[i]);
    while (!done)
      assert_int_equal(nc_mmproj_job_run(en->job[i], en->tp, 0.0, &done, &err),
                       NC_OK);
    float *rows = nc_mmproj_job_take(en->job[i]);
    assert_non_null(rows);
    if (memcmp(rows, ref[i], len[i] * sizeof(float)) != 0)
      fail_msg("%s: image %d's rows differ from its encode alone", what, i);
    free(rows);
    nc_mmproj_job_free(en->job[i]);
    en->job[i] = NULL;
  }
}

static void check_pair(const pair_files *pf, bool reference, bool flash,
                       int n_threads) {
  vt_pair p = vt_load(pf->lm, pf->mm, reference, flash, n_threads);
  const nucleus_mmproj *mm = p.mm;
  assert_true(mm->n_layer >= 2);
  /* three sizes: Qwen's smart resize makes each a grid of its own */
  nucleus_image *imgs[N_IMG] = {vt_image(80, 60), vt_image(45, 100),
                                vt_image(64, 64)};
  float *ref[N_IMG];
  size_t len[N_IMG];
  for (int i = 0; i < N_IMG; i++) {
    int32_t n = 0;
    nucleus_error perr;
    assert_int_equal(nucleus_mmproj_image_tokens(mm, imgs[i], &n, &perr),
                     NUCLEUS_OK);
    len[i] = (size_t)n * (size_t)nucleus_mmproj_n_embd(mm);
    ref[i] = malloc(len[i] * sizeof(float));
    assert_int_equal(nucleus_mmproj_encode(mm, imgs[i], ref[i], len[i], &perr),
                     NUCLEUS_OK);
  }
  encodes en = {.mm = mm};
  nc_error err = {0};
  if (n_threads > 1)
    assert_int_equal(nc_threadpool_create(n_threads, &en.tp, &err), NC_OK);
  assert_int_equal(nc_mmproj_batch_new(mm, &en.batch, &err), NC_OK);
  char what[256];
  /* the schedules below are for the first two layers */
  /* same part: two images, then three, every layer as one */
  static const char *const two[] = {"0", "1", "01", "01", NULL};
  static const char *const three[] = {"0", "1", "2", "012", "012", NULL};
  /* staggered: job 0 a layer ahead waits while 1 and 2 begin alone and
   * run layer 0 as one, then all three; 0 and 1 as one ahead of 2, which
   * catches up alone */
  static const char *const stag[] = {"0", "0", "1", "2", "12", "012", NULL};
  static const char *const stag2[] = {"0", "1", "01", "2", "2", "012", NULL};
  const struct {
    const char *const *s;
    int n;
    const char *name;
  } cases[] = {{two, 2, "two at the same parts"},
               {three, 3, "three at the same parts"},
               {stag, 3, "three staggered"},
               {stag2, 3, "two ahead of a third"}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    snprintf(what, sizeof what, "%s (%s, %d threads, flash %d): %s", pf->mm,
             reference ? "ref" : "best", n_threads, flash, cases[c].name);
    check_schedule(&en, (const nucleus_image *const *)imgs, cases[c].n, ref,
                   len, cases[c].s, what);
  }
  /* the later layers too: two images in lockstep to the finish, the
   * first image again beside the second (a batch's scratch reused with
   * other row counts) */
  const nucleus_image *both[2] = {imgs[1], imgs[0]};
  float *ref2[2] = {ref[1], ref[0]};
  size_t len2[2] = {len[1], len[0]};
  const char *lock[16];
  int k = 0;
  lock[k++] = "0";
  lock[k++] = "1";
  for (int32_t l = 0; l < mm->n_layer && k < 15; l++)
    lock[k++] = "01";
  lock[k] = NULL;
  snprintf(what, sizeof what, "%s (%s, %d threads, flash %d): lockstep", pf->mm,
           reference ? "ref" : "best", n_threads, flash);
  check_schedule(&en, both, 2, ref2, len2, lock, what);
  nc_mmproj_batch_free(en.batch);
  nc_threadpool_free(en.tp);
  for (int i = 0; i < N_IMG; i++) {
    free(ref[i]);
    test_image_free(imgs[i]);
  }
  vt_unload(&p);
}

static void test_batched_is_alone(void **state) {
  (void)state;
  for (size_t f = 0; f < sizeof PAIRS / sizeof PAIRS[0]; f++)
    for (int flash = 0; flash < 2; flash++) {
      check_pair(&PAIRS[f], false, flash, 1);
      check_pair(&PAIRS[f], false, flash, 3);
    }
  check_pair(&PAIRS[0], true, false, 2);
  check_pair(&PAIRS[2], true, true, 2);
}

/* Which jobs batch, and a batch of jobs at other parts refused. */
static void test_which_batch(void **state) {
  (void)state;
  vt_pair g = vt_load("gemma3", "gemma3-mmproj", false, false, 1);
  vt_pair q = vt_load("qwen2vl", "qwen2vl-mmproj", false, false, 1);
  nucleus_image *img = vt_image(80, 60);
  nc_mmproj_job *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  nc_error err = {0};
  assert_int_equal(nc_mmproj_job_begin(g.mm, img, NULL, &a, &err), NC_OK);
  assert_int_equal(nc_mmproj_job_begin(g.mm, img, NULL, &b, &err), NC_OK);
  assert_int_equal(nc_mmproj_job_begin(q.mm, img, NULL, &c, &err), NC_OK);
  assert_int_equal(nc_mmproj_job_begin(q.mm, img, NULL, &d, &err), NC_OK);
  assert_false(nc_mmproj_job_batches_with(a, b)); /* the begin */
  bool done = false;
  assert_int_equal(nc_mmproj_job_run(a, NULL, 0.0, &done, &err), NC_OK);
  assert_false(nc_mmproj_job_batches_with(a, b)); /* other parts */
  /* b catches up with its begin, then runs layer 0 with a; a, behind
   * nothing, has none */
  const double up = nc_mmproj_job_catch_up(a, b), b0 = nc_mmproj_job_cost(b);
  assert_true(up > b0);
  assert_true(nc_mmproj_job_catch_up(b, a) == 0.0);
  assert_int_equal(nc_mmproj_job_run(b, NULL, 0.0, &done, &err), NC_OK);
  assert_true(nc_mmproj_job_batches_with(a, b)); /* layer 0, both */
  assert_true(up == b0 + nc_mmproj_job_cost(b));
  assert_int_equal(nc_mmproj_job_run(c, NULL, 0.0, &done, &err), NC_OK);
  assert_int_equal(nc_mmproj_job_run(d, NULL, 0.0, &done, &err), NC_OK);
  assert_false(nc_mmproj_job_batches_with(c, d)); /* Qwen2-VL: alone */
  assert_false(nc_mmproj_job_batches_with(a, c)); /* other projectors */
  assert_int_equal(nc_mmproj_job_run(b, NULL, 0.0, &done, &err), NC_OK);
  nc_mmproj_batch *batch = NULL;
  assert_int_equal(nc_mmproj_batch_new(g.mm, &batch, &err), NC_OK);
  nc_mmproj_job *ab[2] = {a, b};
  assert_int_equal(nc_mmproj_jobs_run(ab, 2, batch, NULL, &err),
                   NC_ERR_INTERNAL);
  /* to the finish: the last layer batches, the finish does not */
  while (nc_mmproj_job_parts(a) < nc_mmproj_job_parts(b))
    assert_int_equal(nc_mmproj_job_run(a, NULL, 0.0, &done, &err), NC_OK);
  while (nc_mmproj_job_parts(a) <= g.mm->n_layer) {
    assert_true(nc_mmproj_job_batches_with(a, b));
    assert_int_equal(nc_mmproj_jobs_run(ab, 2, batch, NULL, &err), NC_OK);
  }
  assert_false(nc_mmproj_job_batches_with(a, b));
  assert_true(nc_mmproj_job_catch_up(a, b) == 0.0); /* at the finish */
  nc_mmproj_batch_free(batch);
  nc_mmproj_job_free(a); /* midway: nothing leaks */
  nc_mmproj_job_free(b);
  nc_mmproj_job_free(c);
  nc_mmproj_job_free(d);
  test_image_free(img);
  vt_unload(&g);
  vt_unload(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_products_batch_invariant),
      cmocka_unit_test(test_batched_is_alone),
      cmocka_unit_test(test_which_batch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
