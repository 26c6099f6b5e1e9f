/* Qwen2-VL's and Qwen2.5-VL's image encoders (src/vision/encode_qwen2vl.c)
 * against llama.cpp's (tests/data/vision/{qwen2vl,qwen25vl}_emb_*.bin,
 * scripts/gen_vision_goldens.py --qwen2vl) on the random projectors of
 * `make arch-models` beside build/arch/qwen2vl.gguf: Qwen2-VL (LayerNorm,
 * quick GELU, full attention) and Qwen2.5-VL (RMS norm, gated SiLU, window
 * attention on layers 0 and 2 over windows of 7 x 7 blocks) on an image of
 * one window (64 x 64), windows split across (144 x 96: 9 x 6 blocks) and
 * down (100 x 130, resized to 96 x 128), and a strip of 32 patches (128 x
 * 16: under 64 rows, ggml's one-row flash path; windows of 7 and 1
 * blocks): llama.cpp's rows, in its order (the windows' regrouping undone),
 * on the plain-C kernels and the best table, at 1 and 3 threads (the same
 * bits), flash attention off and on. Bounds of the rows' largest value:
 * flash off max 2e-4, mean 2e-5 (Qwen2-VL's quick GELU reads ggml's F16
 * table, so last-bit differences upstream flip half steps: measured 1.3e-4
 * and 1.65e-5 on the strip's 2,048 values; Qwen2.5-VL, no table: 2.6e-5
 * and 8e-7), flash on 5e-4 and 6e-5 (K and V in F16: measured 3.5e-4 and
 * 2.5e-5; the strip's mean 1.0e-4, below). Full attention on every layer
 * in place of the windows fails by 0.18 .. 0.84 (max, flash off). */
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

/* flash off, on: max and mean |diff| over the largest value; the strip
 * (under 64 patches) takes ggml's one-row flash path, which sums V in F16
 * (ggml_vec_mad_f16), over only 8 rows: its flash mean bound is 1.2e-4
 * (measured 1.0e-4; the others 2.5e-5 at most) */
static const double MAX_BOUND[2] = {2e-4, 5e-4}, MEAN_BOUND[2] = {2e-5, 6e-5};
static const double ONE_ROW_FLASH_MEAN = 1.2e-4;

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
    fail_msg("%s is missing (scripts/gen_vision_goldens.py --qwen2vl)", path);
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
  snprintf(lm_path, sizeof lm_path, "%s/build/arch/qwen2vl.gguf", root());
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
  int32_t w, h;
  bool one_row; /* under 64 patches */
} IMAGES[] = {{"square", 64, 64, false},
              {"wide", 144, 96, false},
              {"tall", 100, 130, false},
              {"strip", 128, 16, true}};

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
    const double mean_bound =
        flash && IMAGES[i].one_row ? ONE_ROW_FLASH_MEAN : MEAN_BOUND[flash];
    if (!(worst <= MAX_BOUND[flash] * scale) || !(mean <= mean_bound * scale))
      bad++;
    free(a);
    free(b);
    free(g);
  }
  unload(&p1);
  unload(&p3);
  if (bad)
    fail_msg("%s: %d images off by more than %g (max) or %g (mean; %g for "
             "the strip with flash) relative",
             kind, bad, MAX_BOUND[flash], MEAN_BOUND[flash],
             ONE_ROW_FLASH_MEAN);
}

static void test_qwen2vl(void **state) {
  (void)state;
  for (int ref = 0; ref < 2; ref++)
    for (int fa = 0; fa < 2; fa++)
      check_table("qwen2vl", ref, fa);
}

static void test_qwen25vl(void **state) {
  (void)state;
  for (int ref = 0; ref < 2; ref++)
    for (int fa = 0; fa < 2; fa++)
      check_table("qwen25vl", ref, fa);
}

/* Each projector with a language model it does not feed (qwen3vl's,
 * gemma3's): refused, naming why. */
static void test_refusals(void **state) {
  (void)state;
  static const struct {
    const char *lm, *mm, *needle;
  } cases[] = {
      {"qwen3vl", "qwen2vl",
       "projector qwen2vl_merger pairs with a qwen2vl language model, not "
       "qwen3vl"},
      {"gemma3", "qwen25vl",
       "projector qwen2.5vl_merger pairs with a qwen2vl language model, not "
       "gemma3"},
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
      cmocka_unit_test(test_qwen2vl),
      cmocka_unit_test(test_qwen25vl),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
