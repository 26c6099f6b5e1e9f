/* Gemma 4's image encoder (src/vision/encode_gemma4v.c) against llama.cpp's
 * (tests/data/vision/gemma4v_emb_*.bin, scripts/gen_vision_goldens.py
 * --gemma4v) on the random projector of `make arch-models` beside
 * build/arch/gemma4.gguf (patches of 4, 3 x 3 pooling, 2-D NEOX RoPE,
 * RMS norms, clamped linears, gated quick-GELU MLP, std bias/scale, the
 * embedder): an image of its own size (108 x 108: 81 rows), one fitted
 * wide (200 x 90 -> 204 x 96, letterboxed: 136 rows), tall (70 x 150 -> 72
 * x 156: 78 rows) and one scaled up to the 70 rows' minimum (40 x 30 ->
 * 120 x 96: 80 rows): llama.cpp's rows on the plain-C kernels and the best
 * table, at 1 and 3 threads (the same bits), flash attention off and on,
 * within MAX_BOUND / MEAN_BOUND of the rows' largest value (the RoPE
 * halves swapped, the V norm left out or the clamps left out: max 1.4 ..
 * 1.6, 0.35 .. 0.5, 1.1 .. 1.25 relative). Also the
 * grid and rows of other sizes, the image markers, and the pairings
 * refused. */
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

/* flash off, on: max and mean |diff| over the largest value. Flash off
 * measured max 0.86 .. 2.0e-4, mean 0.7 .. 1.2e-5 (the MLP's quick GELU
 * reads ggml's F16 table, so last-bit differences upstream flip half
 * steps, as Qwen2-VL's: 1.3e-4; and the unscaled attention over RMS-normed
 * Q and K is sharper than SigLIP's); flash on (K and V in F16) max 2.1 ..
 * 5.6e-4, mean 2.5 .. 5.8e-5. */
static const double MAX_BOUND[2] = {2.5e-4, 7e-4}, MEAN_BOUND[2] = {2e-5, 8e-5};

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

static float *golden(const char *kind, const char *name, bool flash,
                     int32_t *n_tok, int32_t *n_embd) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/vision/%s_emb_%s%s.bin", root(),
           kind, name, flash ? "_fa" : "");
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("%s is missing (scripts/gen_vision_goldens.py --gemma4v)", path);
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

static pair load(const char *kind, bool reference, bool flash, int n_threads) {
  char lm_path[4096], mm_path[4096];
  snprintf(lm_path, sizeof lm_path, "%s/build/arch/gemma4.gguf", root());
  snprintf(mm_path, sizeof mm_path, "%s/build/arch/%s-mmproj.gguf", root(),
           kind);
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = n_threads;
  mp.reference_kernels = reference;
  mp.flash_attn = flash ? NUCLEUS_FLASH_ATTN_ON : NUCLEUS_FLASH_ATTN_OFF;
  pair p = {0};
  nucleus_error err;
  if (nucleus_model_load(lm_path, &mp, &p.lm, &err) != NUCLEUS_OK ||
      nucleus_mmproj_load(mm_path, p.lm, &mp, &p.mm, &err) != NUCLEUS_OK) {
    char why[4200];
    snprintf(why, sizeof why, "the random %s pair (make arch-models): %s", kind,
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
  int32_t w, h, rows;
} IMAGES[] = {{"square", 108, 108, 81},
              {"wide", 200, 90, 136},
              {"tall", 70, 150, 78},
              {"small", 40, 30, 80}};

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

static void check_table(const char *kind, bool reference, bool flash) {
  pair p1 = load(kind, reference, flash, 1),
       p3 = load(kind, reference, flash, 3);
  int bad = 0;
  for (size_t i = 0; i < sizeof IMAGES / sizeof IMAGES[0]; i++) {
    int32_t n_tok, n_embd;
    float *g = golden(kind, IMAGES[i].name, flash, &n_tok, &n_embd);
    assert_int_equal(n_embd, nucleus_mmproj_n_embd(p1.mm));
    size_t n1, n3;
    float *a = encode(&p1, IMAGES[i].w, IMAGES[i].h, &n1);
    float *b = encode(&p3, IMAGES[i].w, IMAGES[i].h, &n3);
    assert_int_equal(n_tok, IMAGES[i].rows);
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
    print_message("%s, %s kernels, flash %s, image %s (%d rows): max |diff| "
                  "%.3g, mean %.3g, of max |value| %.3g (%.3g and %.3g "
                  "relative)\n",
                  kind, reference ? "ref" : "best", flash ? "on" : "off",
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
    fail_msg("%s: %d images off by more than %g (max) or %g (mean) "
             "relative",
             kind, bad, MAX_BOUND[flash], MEAN_BOUND[flash]);
}

static void test_gemma4v(void **state) {
  (void)state;
  for (int ref = 0; ref < 2; ref++)
    for (int fa = 0; fa < 2; fa++)
      check_table("gemma4v", ref, fa);
}

/* The rows of other sizes (llama.cpp's calc_size_preserved_ratio with
 * sides multiples of 12, 70 .. 1120 rows: 70 x 10080 and 1120 x 161280
 * pixels), the markers around an image, and rows attending both ways in
 * the language model (mtmd_decode_use_non_causal: not E2B/E4B widths). */
static void test_grid(void **state) {
  (void)state;
  pair p = load("gemma4v", true, false, 1);
  static const struct {
    int32_t w, h, rows;
  } cases[] = {
      {12, 12, 81},       /* scaled up to 108 x 108 */
      {1000, 1000, 1089}, /* scaled down to 396 x 396: 33 x 33 */
      {240, 24, 81},      /* 240 x 24 scaled up to 324 x 36: 27 x 3 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t *px = pixels(cases[i].w, cases[i].h);
    nucleus_image *img = test_image(px, cases[i].w, cases[i].h);
    free(px);
    int32_t n = 0;
    nucleus_error err = {0};
    assert_int_equal(nucleus_mmproj_image_tokens(p.mm, img, &n, &err),
                     NUCLEUS_OK);
    print_message("%d x %d: %d rows\n", (int)cases[i].w, (int)cases[i].h,
                  (int)n);
    assert_true(n >= 70 && n <= 1120);
    assert_int_equal(n, cases[i].rows);
    /* 99 and 81 patches a side: past the file's 64 positions, refused */
    if (i > 0) {
      float *out =
          malloc((size_t)n * nucleus_mmproj_n_embd(p.mm) * sizeof *out);
      assert_int_not_equal(
          nucleus_mmproj_encode(p.mm, img, out,
                                (size_t)n * nucleus_mmproj_n_embd(p.mm), &err),
          NUCLEUS_OK);
      assert_non_null(strstr(err.message, "64 positions a side"));
      free(out);
    }
    test_image_free(img);
  }
  assert_string_equal(nucleus_mmproj_projector(p.mm), "gemma4v");
  unload(&p);
}

/* Each projector with a language model it does not feed: refused, naming
 * why. */
static void test_refusals(void **state) {
  (void)state;
  static const struct {
    const char *lm, *mm, *needle;
  } cases[] = {
      {"gemma3", "gemma4v",
       "projector gemma4v pairs with a gemma4 language model, not gemma3"},
      {"gemma4", "gemma3",
       "projector gemma3 pairs with a gemma3 language model, not gemma4"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char lm_path[4096], mm_path[4096];
    snprintf(lm_path, sizeof lm_path, "%s/build/arch/%s.gguf", root(),
             cases[i].lm);
    snprintf(mm_path, sizeof mm_path, "%s/build/arch/%s-mmproj.gguf", root(),
             cases[i].mm);
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
      cmocka_unit_test(test_grid),
      cmocka_unit_test(test_gemma4v),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
