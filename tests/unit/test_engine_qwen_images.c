/* Qwen3-VL images in the engine on the random qwen3vl pair of `make
 * arch-models` (build/arch/qwen3vl.gguf + qwen3vl-mmproj.gguf: images at
 * their own aspect ratio, 64 x 64 -> 16 rows, 80 x 48 -> 15, 100 x 70 ->
 * 24; each row DeepStack-wide): the language model's M-RoPE positions of
 * an image's rows (t fixed, h and w the row and column of its merged grid)
 * and of the text after it (going on from the image's start + max(nx, ny),
 * not from its KV place), causal attention over an image's rows (llama.cpp
 * decodes Qwen's images causally) and the DeepStack slices:
 * - llama-mtmd-cli's greedy text on a prompt with two images
 *   (tests/data/vision/qwen3vl_greedy.txt, scripts/gen_vision_goldens.py
 *   --qwen3vl, flash attention off) comes out of the engine, and other
 *   images give other text;
 * - the same tokens and logprobs in chunks that stop before an image,
 *   beside a request with other images and on a prefix-cache hit past the
 *   images (the text after them at its M-RoPE positions, from the cache).
 * - Qwen2.5-VL (build/arch/qwen2vl.gguf + qwen25vl-mmproj.gguf: window
 *   attention in the encoder, qwen2vl's M-RoPE sections in the language
 *   model): llama-mtmd-cli's greedy text on the images 144 x 96 (54 rows)
 *   and 100 x 130 (48 rows) (tests/data/vision/qwen25vl_greedy.txt,
 *   scripts/gen_vision_goldens.py --qwen2vl), and other text with the
 *   images the other way round. (This random text does not tell the
 *   encoder's windows from full attention: test_mmproj_qwen2vl does.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image_engine_harness.h"
#include "nucleus.h"

/* the pair's test images: 64 x 64 -> 16 rows, 80 x 48 -> 15, 100 x 70 -> 24 */
enum { WIDE, ODD, SQUARE };
static const int32_t k_sizes[][2] = {{80, 48}, {100, 70}, {64, 64}};

static int setup(void **state) {
  return ie_setup(state, "qwen3vl", "qwen3vl-mmproj", false, k_sizes, 3);
}

/* llama-mtmd-cli's text for (square, wide); other images, other text */
static void test_llama_greedy(void **state) {
  ie_fixture *fx = ie_need(state);
  check_greedy(&fx->p, "qwen3vl_greedy.txt", fx->img[SQUARE], fx->img[WIDE],
               fx->img[ODD], fx->img[WIDE]);
}

static void test_invariance(void **state) {
  ie_fixture *fx = ie_need(state);
  /* chunks that must stop before an image (16 and 15 rows) */
  const int32_t budgets[] = {20, 23, 17};
  check_invariance(&fx->p, fx->img[SQUARE], fx->img[WIDE], fx->img[ODD],
                   fx->img[WIDE], budgets, 3, 64, NULL);
}

static void test_qwen25vl_greedy(void **state) {
  (void)state;
  vt_pair p = vt_load("qwen2vl", "qwen25vl-mmproj", false, false, 2);
  nucleus_image *wide = vt_image(144, 96), *tall = vt_image(100, 130);
  check_greedy(&p, "qwen25vl_greedy.txt", wide, tall, tall, wide);
  test_image_free(wide);
  test_image_free(tall);
  vt_unload(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_llama_greedy),
      cmocka_unit_test(test_invariance),
      cmocka_unit_test(test_qwen25vl_greedy),
  };
  return cmocka_run_group_tests(tests, setup, ie_teardown);
}
