/* Qwen3-VL's image encoder (src/vision/encode_qwen3vl.c) against llama.cpp's
 * (tests/data/vision/qwen3vl_emb_*.bin, scripts/gen_vision_goldens.py
 * --qwen3vl) on the random pair of `make arch-models` (build/arch/
 * qwen3vl.gguf + qwen3vl-mmproj.gguf): an image of the learned positions'
 * own grid (64 x 64: 8 x 8 patches, 16 rows), one of another grid (80 x
 * 48: the positions resized bilinearly, 15 rows) and one the smart resize
 * changes (100 x 70 -> 96 x 64 by Pillow's bicubic filter, 24 rows) give
 * llama.cpp's rows (the merger's, then the two DeepStack taps') within
 * 1e-4 of the rows' largest value, on the plain-C kernels and the best
 * table, at 1 and 3 threads (the same bits at both), and as many rows as
 * nucleus_mmproj_image_tokens says; with flash attention off and on
 * (qwen3vl_emb_*_fa.bin: llama.cpp's flash path, K and V in F16). Bounds:
 * max |diff| 2e-4 and mean 1e-5 of the largest value: the ViT's GELU reads
 * ggml's F16 table, so a last-bit difference upstream that crosses a half
 * flips one value by a half's step (measured: max 1.1e-4, mean 3e-6);
 * with flash on, q (under 64 rows), K and V rounded to halves too: max
 * 5e-4 and mean 6e-5 (measured 3.3e-4, 3.9e-5). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nucleus.h"
#include "test_image_util.h"
#include "test_require.h"

/* flash off, on: max and mean |diff| over the largest value */
static const double MAX_BOUND[2] = {2e-4, 5e-4}, MEAN_BOUND[2] = {1e-5, 6e-5};

static const char *root(void) {
  const char *r = getenv("NUCLEUS_ROOT");
  return r && *r ? r : ".";
}

/* scripts/gen_vision_goldens.py's pixels() */
static uint8_t *pixels(int32_t w, int32_t h) {
  uint8_t *p = malloc((size_t)3 * w * h);
  for (int32_t y = 0; y < h; y++)
    for (int32_t x = 0; x < w; x++)
      for (int c = 0; c < 3; c++) {
        const int64_t v =
            (x * 37 + y * 91 + c * 53 + (x * y) % 17) * 7 + (x + 2 * y) * 3;
        p[((size_t)y * w + x) * 3 + c] = (uint8_t)(v & 255);
      }
  return p;
}

static float *golden(const char *name, bool flash, int32_t *n_tok,
                     int32_t *n_embd) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/vision/qwen3vl_emb_%s%s.bin",
           root(), name, flash ? "_fa" : "");
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("%s is missing (scripts/gen_vision_goldens.py --qwen3vl)", path);
  int32_t hdr[2];
  assert_int_equal(fread(hdr, sizeof hdr, 1, f), 1);
  *n_tok = hdr[0];
  *n_embd = hdr[1];
  const size_t n = (size_t)hdr[0] * hdr[1];
  float *g = malloc(n * sizeof *g);
  assert_int_equal(fread(g, sizeof *g, n, f), n);
  fclose(f);
  return g;
}

typedef struct pair {
  nucleus_model *lm;
  nucleus_mmproj *mm;
} pair;

static pair load(bool reference, bool flash, int n_threads) {
  char lm_path[4096], mm_path[4096];
  snprintf(lm_path, sizeof lm_path, "%s/build/arch/qwen3vl.gguf", root());
  snprintf(mm_path, sizeof mm_path, "%s/build/arch/qwen3vl-mmproj.gguf",
           root());
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = n_threads;
  mp.reference_kernels = reference;
  mp.flash_attn = flash ? NUCLEUS_FLASH_ATTN_ON : NUCLEUS_FLASH_ATTN_OFF;
  pair p = {0};
  nucleus_error err;
  if (nucleus_model_load(lm_path, &mp, &p.lm, &err) != NUCLEUS_OK ||
      nucleus_mmproj_load(mm_path, p.lm, &mp, &p.mm, &err) != NUCLEUS_OK) {
    char why[4200];
    snprintf(why, sizeof why, "the random qwen3vl pair (make arch-models): %s",
             err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  return p;
}

static void unload(pair *p) {
  nucleus_mmproj_free(p->mm);
  nucleus_model_free(p->lm);
}

static const struct {
  const char *name;
  int32_t w, h;
} IMAGES[] = {{"square", 64, 64}, {"wide", 80, 48}, {"odd", 100, 70}};

static float *encode(const pair *p, int32_t w, int32_t h, size_t *n_out) {
  uint8_t *px = pixels(w, h);
  nucleus_image *img = NULL;
  nucleus_error err = {0};
  img = test_image(px, w, h);
  free(px);
  int32_t n_tok = 0;
  assert_int_equal(nucleus_mmproj_image_tokens(p->mm, img, &n_tok, &err),
                   NUCLEUS_OK);
  const size_t n = (size_t)n_tok * nucleus_mmproj_n_embd(p->mm);
  float *out = malloc(n * sizeof *out);
  if (nucleus_mmproj_encode(p->mm, img, out, n, &err) != NUCLEUS_OK)
    fail_msg("encode: %s", err.message);
  test_image_free(img);
  *n_out = n;
  return out;
}

static void check_table(bool reference, bool flash) {
  pair p1 = load(reference, flash, 1), p3 = load(reference, flash, 3);
  int bad = 0;
  for (size_t i = 0; i < sizeof IMAGES / sizeof IMAGES[0]; i++) {
    int32_t n_tok, n_embd;
    float *g = golden(IMAGES[i].name, flash, &n_tok, &n_embd);
    assert_int_equal(n_embd, nucleus_mmproj_n_embd(p1.mm));
    size_t n1, n3;
    float *a = encode(&p1, IMAGES[i].w, IMAGES[i].h, &n1);
    float *b = encode(&p3, IMAGES[i].w, IMAGES[i].h, &n3);
    assert_int_equal(n1, (size_t)n_tok * n_embd);
    assert_memory_equal(a, b, n1 * sizeof *a);
    double scale = 0, worst = 0, sum = 0;
    for (size_t k = 0; k < n1; k++)
      if (fabs(g[k]) > scale) scale = fabs(g[k]);
    for (size_t k = 0; k < n1; k++) {
      const double d = fabs(a[k] - g[k]);
      sum += d;
      if (d > worst) worst = d;
    }
    const double mean = sum / (double)n1;
    print_message("%s kernels, flash %s, image %s (%d rows): max |diff| "
                  "%.3g, mean %.3g, of max |value| %.3g (%.3g and %.3g "
                  "relative)\n",
                  reference ? "ref" : "best", flash ? "on" : "off",
                  IMAGES[i].name, (int)n_tok, worst, mean, scale, worst / scale,
                  mean / scale);
    if (!(worst <= MAX_BOUND[flash] * scale) ||
        !(mean <= MEAN_BOUND[flash] * scale))
      bad++;
    free(a);
    free(b);
    free(g);
  }
  unload(&p1);
  unload(&p3);
  if (bad)
    fail_msg("%d images off by more than %g (max) or %g (mean) relative", bad,
             MAX_BOUND[flash], MEAN_BOUND[flash]);
}

static void test_reference_kernels(void **state) {
  (void)state;
  check_table(true, false);
  check_table(true, true);
}

static void test_best_kernels(void **state) {
  (void)state;
  check_table(false, false);
  check_table(false, true);
}

/* The projector with a language model it does not feed: another family
 * (gemma3, qwen2vl) or another DeepStack count (qwen3vlmoe's 1 against the
 * projector's 2 taps): refused, naming why. */
static void test_refusals(void **state) {
  (void)state;
  static const struct {
    const char *lm, *needle;
  } cases[] = {
      {"gemma3", "pairs with a qwen3vl or qwen3vlmoe language model, not "
                 "gemma3"},
      {"qwen2vl", "not qwen2vl"},
      {"qwen3vlmoe", "2 DeepStack layers (clip.vision.is_deepstack_layers), "
                     "but the language model takes 1"},
  };
  char mm_path[4096];
  snprintf(mm_path, sizeof mm_path, "%s/build/arch/qwen3vl-mmproj.gguf",
           root());
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char lm_path[4096];
    snprintf(lm_path, sizeof lm_path, "%s/build/arch/%s.gguf", root(),
             cases[i].lm);
    nucleus_model_params mp = nucleus_model_default_params();
    nucleus_model *lm = NULL;
    nucleus_mmproj *mm = NULL;
    nucleus_error err = {0};
    if (nucleus_model_load(lm_path, &mp, &lm, &err) != NUCLEUS_OK)
      NC_MODEL_UNAVAILABLE(lm_path);
    assert_int_not_equal(nucleus_mmproj_load(mm_path, lm, &mp, &mm, &err),
                         NUCLEUS_OK);
    assert_null(mm);
    if (!strstr(err.message, cases[i].needle))
      fail_msg("%s: '%s' does not say '%s'", cases[i].lm, err.message,
               cases[i].needle);
    nucleus_model_free(lm);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_reference_kernels),
      cmocka_unit_test(test_best_kernels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
