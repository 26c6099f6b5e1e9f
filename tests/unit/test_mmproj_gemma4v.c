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
 * within TABLE's bounds of the rows' largest value (the RoPE
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
#include "vision_test_util.h"

static const vt_table_image IMAGES[] = {{"square", 108, 108, 81, 0},
                                        {"wide", 200, 90, 136, 0},
                                        {"tall", 70, 150, 78, 0},
                                        {"small", 40, 30, 80, 0}};

/* flash off, on: max and mean |diff| over the largest value. Flash off
 * measured max 0.86 .. 2.0e-4, mean 0.7 .. 1.2e-5 (the MLP's quick GELU
 * reads ggml's F16 table, so last-bit differences upstream flip half
 * steps, as Qwen2-VL's: 1.3e-4; and the unscaled attention over RMS-normed
 * Q and K is sharper than SigLIP's); flash on (K and V in F16) max 2.1 ..
 * 5.6e-4, mean 2.5 .. 5.8e-5. */
static const vt_table TABLE = {
    .lm = "gemma4",
    .mm = "gemma4v-mmproj",
    .kind = "gemma4v",
    .gen = " --gemma4v",
    .images = IMAGES,
    .n_images = sizeof IMAGES / sizeof IMAGES[0],
    .max_bound = {2.5e-4, 7e-4},
    .mean_bound = {2e-5, 8e-5},
};

static void test_gemma4v(void **state) {
  (void)state;
  for (int ref = 0; ref < 2; ref++)
    for (int fa = 0; fa < 2; fa++)
      vt_check_table(&TABLE, ref, fa);
}

/* The rows of other sizes (llama.cpp's calc_size_preserved_ratio with
 * sides multiples of 12, 70 .. 1120 rows: 70 x 10080 and 1120 x 161280
 * pixels), the markers around an image, and rows attending both ways in
 * the language model (mtmd_decode_use_non_causal: not E2B/E4B widths). */
static void test_grid(void **state) {
  (void)state;
  vt_pair p = vt_load("gemma4", "gemma4v-mmproj", true, false, 1);
  static const struct {
    int32_t w, h, rows;
  } cases[] = {
      {12, 12, 81},       /* scaled up to 108 x 108 */
      {1000, 1000, 1089}, /* scaled down to 396 x 396: 33 x 33 */
      {240, 24, 81},      /* 240 x 24 scaled up to 324 x 36: 27 x 3 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    nucleus_image *img = vt_image(cases[i].w, cases[i].h);
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
  vt_unload(&p);
}

/* Each projector with a language model it does not feed: refused, naming
 * why. */
static void test_refusals(void **state) {
  (void)state;
  static const struct {
    const char *lm, *mm, *needle;
  } cases[] = {
      {"gemma3", "gemma4v-mmproj",
       "projector gemma4v pairs with a gemma4 language model, not gemma3"},
      {"gemma4", "gemma3-mmproj",
       "projector gemma3 pairs with a gemma3 language model, not gemma4"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    vt_check_refused(cases[i].lm, cases[i].mm, cases[i].needle);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_grid),
      cmocka_unit_test(test_gemma4v),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
