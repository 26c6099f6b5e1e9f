/* Gemma 3's image encoder (src/vision/encode_gemma3.c) against llama.cpp's
 * (tests/data/vision/gemma3_emb_*.bin, scripts/gen_vision_goldens.py) on the
 * random pair of `make arch-models`: three images (letterboxed wide and
 * tall, and one of the encoder's own size) give llama.cpp's rows within
 * 1e-4 of the rows' largest value, on the plain-C kernels and the best
 * table, at 1 and 3 threads (the same bits at both: threads split output
 * rows only); with flash attention off and on (gemma3_emb_*_fa.bin:
 * llama.cpp's flash path, K and V in F16). */
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

#define REL_BOUND 1e-4
#define Q8_BOUND 3e-2 /* Q8_0 weights against the F32 file's rows */

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
  snprintf(path, sizeof path, "%s/tests/data/vision/gemma3_emb_%s%s.bin",
           root(), name, flash ? "_fa" : "");
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("%s is missing (scripts/gen_vision_goldens.py)", path);
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

/* The random pair, the projector build/arch/NAME.gguf. */
static pair load_named(const char *name, bool reference, bool flash,
                       int n_threads) {
  char lm_path[4096], mm_path[4096];
  snprintf(lm_path, sizeof lm_path, "%s/build/arch/gemma3.gguf", root());
  snprintf(mm_path, sizeof mm_path, "%s/build/arch/%s.gguf", root(), name);
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = n_threads;
  mp.reference_kernels = reference;
  mp.flash_attn = flash ? NUCLEUS_FLASH_ATTN_ON : NUCLEUS_FLASH_ATTN_OFF;
  pair p = {0};
  nucleus_error err;
  if (nucleus_model_load(lm_path, &mp, &p.lm, &err) != NUCLEUS_OK ||
      nucleus_mmproj_load(mm_path, p.lm, &mp, &p.mm, &err) != NUCLEUS_OK) {
    char why[4200];
    snprintf(why, sizeof why,
             "the random gemma3 pair, %s (make arch-models): %s", name,
             err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  return p;
}

static pair load(bool reference, bool flash, int n_threads) {
  return load_named("gemma3-mmproj", reference, flash, n_threads);
}

static void unload(pair *p) {
  nucleus_mmproj_free(p->mm);
  nucleus_model_free(p->lm);
}

static const struct {
  const char *name;
  int32_t w, h;
} IMAGES[] = {{"wide", 80, 60}, {"tall", 45, 100}, {"square", 64, 64}};

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
    double scale = 0, worst = 0;
    for (size_t k = 0; k < n1; k++)
      if (fabs(g[k]) > scale) scale = fabs(g[k]);
    for (size_t k = 0; k < n1; k++)
      if (fabs(a[k] - g[k]) > worst) worst = fabs(a[k] - g[k]);
    print_message("%s kernels, flash %s, image %s: max |diff| %.3g of max "
                  "|value| %.3g (%.3g relative)\n",
                  reference ? "ref" : "best", flash ? "on" : "off",
                  IMAGES[i].name, worst, scale, worst / scale);
    if (!(worst <= REL_BOUND * scale)) bad++;
    free(a);
    free(b);
    free(g);
  }
  unload(&p1);
  unload(&p3);
  if (bad) fail_msg("%d images off by more than %g relative", bad, REL_BOUND);
}

static void test_reference_kernels(void **state) {
  (void)state;
  check_table(true, false);
}

static void test_best_kernels(void **state) {
  (void)state;
  check_table(false, false);
}

/* llama.cpp's clip attention with flash attention on (its CPU default, and
 * nucleus's: the encoder follows the model's flash_attn) */
static void test_flash(void **state) {
  (void)state;
  check_table(true, true);
  check_table(false, true);
}

/* The same projector with its matrices in Q8_0 (gemma3-mmproj-q8.gguf:
 * make_mmproj_gguf.py --q8, as llama.cpp's converter writes a q8_0 mmproj:
 * the patch embedding and the input projection F16): the encoder's
 * matmuls take the Q8_0 weights (activations quantized to Q8_0, as
 * ggml_mul_mat), on the plain-C and the best kernels (each in its own
 * float order: the avx tables take llama.cpp's x86 one), the same bits at
 * 1 and 3 threads, within Q8_0's rounding of the F32 file's llama.cpp rows
 * and not equal to them. */
static void check_q8_0(bool reference) {
  pair p1 = load_named("gemma3-mmproj-q8", reference, false, 1);
  pair p3 = load_named("gemma3-mmproj-q8", reference, false, 3);
  for (size_t i = 0; i < sizeof IMAGES / sizeof IMAGES[0]; i++) {
    int32_t n_tok, n_embd;
    float *g = golden(IMAGES[i].name, false, &n_tok, &n_embd);
    size_t n1, n3;
    float *a = encode(&p1, IMAGES[i].w, IMAGES[i].h, &n1);
    float *b = encode(&p3, IMAGES[i].w, IMAGES[i].h, &n3);
    assert_int_equal(n1, (size_t)n_tok * n_embd);
    assert_memory_equal(a, b, n1 * sizeof *a);
    double scale = 0, worst = 0;
    for (size_t k = 0; k < n1; k++) {
      assert_true(isfinite(a[k]));
      if (fabs(g[k]) > scale) scale = fabs(g[k]);
      if (fabs(a[k] - g[k]) > worst) worst = fabs(a[k] - g[k]);
    }
    print_message("Q8_0, %s kernels, image %s: max |diff| %.3g from the F32 "
                  "rows, of max |value| %.3g (%.3g relative)\n",
                  reference ? "ref" : "best", IMAGES[i].name, worst, scale,
                  worst / scale);
    assert_true(worst > REL_BOUND * scale);
    assert_true(worst <= Q8_BOUND * scale);
    free(a);
    free(b);
    free(g);
  }
  unload(&p1);
  unload(&p3);
}

static void test_q8_0_projector(void **state) {
  (void)state;
  check_q8_0(true);
  check_q8_0(false);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_kernels),
      cmocka_unit_test(test_best_kernels),
      cmocka_unit_test(test_flash),
      cmocka_unit_test(test_q8_0_projector),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
