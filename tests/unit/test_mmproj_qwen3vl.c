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
#include "vision_test_util.h"

static const vt_table_image IMAGES[] = {
    {"square", 64, 64, 0, 0}, {"wide", 80, 48, 0, 0}, {"odd", 100, 70, 0, 0}};
/* flash off, on: max and mean |diff| over the largest value */
static const vt_table TABLE = {
    .lm = "qwen3vl",
    .mm = "qwen3vl-mmproj",
    .kind = "qwen3vl",
    .gen = " --qwen3vl",
    .images = IMAGES,
    .n_images = sizeof IMAGES / sizeof IMAGES[0],
    .max_bound = {2e-4, 5e-4},
    .mean_bound = {1e-5, 6e-5},
};

static void test_reference_kernels(void **state) {
  (void)state;
  vt_check_table(&TABLE, true, false);
  vt_check_table(&TABLE, true, true);
}

static void test_best_kernels(void **state) {
  (void)state;
  vt_check_table(&TABLE, false, false);
  vt_check_table(&TABLE, false, true);
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
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    vt_check_refused(cases[i].lm, "qwen3vl-mmproj", cases[i].needle);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_reference_kernels),
      cmocka_unit_test(test_best_kernels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
