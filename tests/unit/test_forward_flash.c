/* Flash attention in the forward pass (src/model/forward_flash.c,
 * nucleus_model_params.flash_attn):
 * - agreement with llama.cpp run with flash attention on
 *   (scripts/gen_logits_golden.py --fa): teacher-forced one token per
 *   decode (smollm2_q4_1_fa_decode.txt, llama.cpp's per-row flash path:
 *   rows fed as generated tokens) and the prompt in one batch
 *   (smollm2_q4_1_fa.txt, llama.cpp's tiled path for 64+ rows: rows fed
 *   as a prompt take that order), both with strict bounds;
 * - batch invariance: one call, token by token and uneven chunks give the
 *   same bits, at 1 and 3 threads; so do the engine's reuse orders, whose
 *   rows token by token give the prompt-in-one-batch bits;
 * - on and off give different (close) logits; a bad value is an error. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"

#include "golden_agreement.h"
#include "logits_golden.h"
#include "test_require.h"

#define N_USE(n) (NC_SANITIZED && (n) > 48 ? 48 : (n))

typedef struct fixture {
  int n_prompts;
  golden_prompt dec[MAX_PROMPTS]; /* one token per decode */
  golden_prompt bat[MAX_PROMPTS]; /* one batch */
  char why[640];
} fixture;

static nucleus_model *load(int n_threads, nucleus_flash_attn fa) {
  nucleus_model_params p = nucleus_model_default_params();
  p.n_threads = n_threads;
  p.no_repack = true; /* the goldens' matmul order */
  p.flash_attn = fa;
  nucleus_model *m = NULL;
  nucleus_error err;
  if (nucleus_model_load(getenv("NUCLEUS_MODEL"), &p, &m, &err) != NUCLEUS_OK)
    return NULL;
  return m;
}

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  *state = fx;
  const char *root = getenv("NUCLEUS_ROOT");
  char path[4096];
  static const char *const names[2] = {"smollm2_q4_1_fa_decode",
                                       "smollm2_q4_1_fa"};
  for (int k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "%s/tests/data/logits/%s.txt",
             root && *root ? root : ".", names[k]);
    const int n = load_golden(k ? fx->bat : fx->dec, path);
    if (n < 1 || (k && n != fx->n_prompts)) {
      fprintf(stderr, "cannot read the golden %s\n", path);
      return -1;
    }
    fx->n_prompts = n;
  }
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  for (int i = 0; i < MAX_PROMPTS; i++) {
    free(fx->dec[i].pos);
    free(fx->bat[i].pos);
  }
  free(fx);
  return 0;
}

static nucleus_model *need_model(int n_threads, nucleus_flash_attn fa) {
  const char *path = getenv("NUCLEUS_MODEL");
  if (!path || !*path) NC_MODEL_UNAVAILABLE("NUCLEUS_MODEL is not set");
  nucleus_model *m = load(n_threads, fa);
  if (!m) NC_MODEL_UNAVAILABLE("cannot load NUCLEUS_MODEL");
  return m;
}

static void report(const char *table, const char *what, const agreement *a) {
  printf("flash attention, kernels '%s' vs llama.cpp -fa on (%s): %lld "
         "positions, top-1 %.2f%%, mean KL %.3g, max KL %.3g, max |logit "
         "diff| %.4g\n",
         table, what, (long long)a->n_pos,
         100.0 * (double)a->top1 / (double)a->n_pos, a->kl_mean, a->kl_max,
         a->diff_max);
}

static void test_matches_llama_cpp_fa(void **state) {
  fixture *fx = *state;
  if (NC_SANITIZED)
    NC_SKIP_BECAUSE("sanitizer build: the release build checks the goldens");
  nucleus_model *m = need_model(2, NUCLEUS_FLASH_ATTN_ON);
  assert_true(nucleus_model_flash_attn(m));
  const char *table = nucleus_model_kernels(m);
  const bool simd = strcmp(table, "ref") != 0;
  agreement a = golden_agreement(m, fx->dec, fx->n_prompts, false);
  report(table, "one token per decode", &a);
  assert_true(a.n_pos >= 256);
  /* the bounds of test_forward.c: strict for a SIMD table in llama.cpp's
   * matmul order, looser for ref (ggml's generic dot order) */
  assert_true(100.0 * (double)a.top1 / (double)a.n_pos >= (simd ? 99.0 : 97.0));
  assert_true(a.kl_mean <= (simd ? 1e-3 : 5e-3));
  /* the prompt in one batch: llama.cpp's tiled path (64+ rows), which
   * prompt rows follow (nc_batch_add_prompt): the same bounds */
  a = golden_agreement(m, fx->bat, fx->n_prompts, true);
  report(table, "prompt in one batch: its tiled path", &a);
  assert_true(100.0 * (double)a.top1 / (double)a.n_pos >= (simd ? 99.0 : 97.0));
  assert_true(a.kl_mean <= (simd ? 1e-3 : 5e-3));
  if (simd) { /* the same float order: only the last bits may differ */
    assert_true(a.kl_mean <= 1e-6);
    assert_true(a.diff_max <= 1e-4);
  }
  nucleus_model_free(m);
}

static void test_batch_and_thread_invariance(void **state) {
  fixture *fx = *state;
  const golden_prompt *g = &fx->dec[1];
  const int32_t n = N_USE(g->n);
  nucleus_model *m1 = need_model(1, NUCLEUS_FLASH_ATTN_ON);
  const int32_t nv = nc_model_hparams(m1)->n_vocab;
  const size_t bytes = sizeof(float) * (size_t)n * (size_t)nv;
  float *one = malloc(bytes), *other = malloc(bytes);
  const int32_t all[1] = {n}, single[1] = {1}, uneven[3] = {5, 17, 1};
  run_chunked(m1, g->tokens, n, all, 1, one);
  run_chunked(m1, g->tokens, n, single, 1, other);
  assert_same_bits(one, other, (int64_t)n * nv, "token by token");
  run_chunked(m1, g->tokens, n, uneven, 3, other);
  assert_same_bits(one, other, (int64_t)n * nv, "uneven chunks");
  nucleus_model *m3 = need_model(3, NUCLEUS_FLASH_ATTN_ON);
  run_chunked(m3, g->tokens, n, all, 1, other);
  assert_same_bits(one, other, (int64_t)n * nv, "3 threads");
  nucleus_model_free(m3);
  /* off: today's order, other bits (the same distance as two float orders,
   * see above) */
  nucleus_model *off = need_model(1, NUCLEUS_FLASH_ATTN_OFF);
  assert_false(nucleus_model_flash_attn(off));
  run_chunked(off, g->tokens, n, all, 1, other);
  double md = 0;
  for (int64_t i = 0; i < (int64_t)n * nv; i++)
    md = fmax(md, fabs((double)one[i] - other[i]));
  printf("flash on vs off: max |logit diff| %g over %d positions\n", md,
         (int)n);
  assert_true(md > 0.0);
  nucleus_model_free(off);
  nucleus_model_free(m1);
  free(one);
  free(other);
}

/* The engine's reuse orders (nc_batch_add_reusable): every row in the
 * prompt order, so a position's logits are the same token by token (as
 * generated tokens), in uneven chunks and at 3 threads, and, the default
 * model's matmuls having one order, those of the prompt in one batch:
 * llama.cpp's tiled path, whose golden test_matches_llama_cpp_fa checks. */
static void test_reuse_orders(void **state) {
  fixture *fx = *state;
  const golden_prompt *g = &fx->dec[1];
  const int32_t n = N_USE(g->n);
  nucleus_model *m1 = need_model(1, NUCLEUS_FLASH_ATTN_ON);
  const int32_t nv = nc_model_hparams(m1)->n_vocab;
  const size_t bytes = sizeof(float) * (size_t)n * (size_t)nv;
  float *prompt = malloc(bytes), *other = malloc(bytes);
  const int32_t all[1] = {n}, single[1] = {1}, uneven[3] = {5, 17, 1};
  run_chunked_reusable(m1, g->tokens, n, single, 1, other);
  if (!NC_SANITIZED) { /* 64+ rows (the sanitizers take 48): all tiled */
    assert_int_equal(nc_flash_prompt_order_end(n), n);
    run_chunked(m1, g->tokens, n, all, 1, prompt);
    assert_same_bits(prompt, other, (int64_t)n * nv, "reuse vs prompt");
  }
  run_chunked_reusable(m1, g->tokens, n, all, 1, prompt);
  assert_same_bits(prompt, other, (int64_t)n * nv, "reuse, token by token");
  run_chunked_reusable(m1, g->tokens, n, uneven, 3, other);
  assert_same_bits(prompt, other, (int64_t)n * nv, "reuse, uneven chunks");
  nucleus_model *m3 = need_model(3, NUCLEUS_FLASH_ATTN_ON);
  run_chunked_reusable(m3, g->tokens, n, single, 1, other);
  assert_same_bits(prompt, other, (int64_t)n * nv, "reuse, 3 threads");
  nucleus_model_free(m3);
  nucleus_model_free(m1);
  free(prompt);
  free(other);
}

static void test_params(void **state) {
  (void)state;
  nucleus_flash_attn fa = NUCLEUS_FLASH_ATTN_OFF;
  assert_true(nucleus_flash_attn_parse("on", &fa));
  assert_int_equal(fa, NUCLEUS_FLASH_ATTN_ON);
  assert_true(nucleus_flash_attn_parse("auto", &fa));
  assert_int_equal(fa, NUCLEUS_FLASH_ATTN_AUTO);
  assert_true(nucleus_flash_attn_parse("off", &fa));
  assert_int_equal(fa, NUCLEUS_FLASH_ATTN_OFF);
  assert_false(nucleus_flash_attn_parse("yes", &fa));
  assert_false(nucleus_flash_attn_parse(NULL, &fa));
  assert_int_equal(nucleus_model_default_params().flash_attn,
                   NUCLEUS_FLASH_ATTN_AUTO);
  nucleus_model_params p = nucleus_model_default_params();
  p.flash_attn = (nucleus_flash_attn)7;
  nucleus_model *m = NULL;
  nucleus_error err;
  assert_int_equal(nucleus_model_load("/nonexistent.gguf", &p, &m, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "flash_attn"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_params),
      cmocka_unit_test(test_matches_llama_cpp_fa),
      cmocka_unit_test(test_batch_and_thread_invariance),
      cmocka_unit_test(test_reuse_orders),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
