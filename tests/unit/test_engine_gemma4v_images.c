/* Gemma 4 images in the engine on the random gemma4 pair of `make
 * arch-models` (build/arch/gemma4.gguf + gemma4v-mmproj.gguf: images at
 * their own aspect ratio, 200 x 90 -> 136 rows, 70 x 150 -> 78, 108 x 108
 * -> 81): an image's rows as input embeddings not scaled by sqrt(n_embd),
 * token 0's per-layer embeddings for them (llama.cpp's embeddings batches),
 * and attention over an image's rows both ways on the sliding-window
 * layers only, causal on the full ones (llama.cpp's
 * LLAMA_NON_CAUSAL_TYPE_SWA_ONLY for gemma4; its E2B/E4B widths are
 * causal throughout, this one's 256 is not):
 * - llama-mtmd-cli's greedy text on a prompt with two images
 *   (tests/data/vision/gemma4v_greedy.txt, scripts/gen_vision_goldens.py
 *   --gemma4v, flash attention off; the prompt as llama-mtmd-cli renders
 *   it: one user turn, no system message) comes out of the engine, and
 *   other images give other text;
 * - the same tokens and logprobs in chunks that stop before an image,
 *   beside a request with other images and on a prefix-cache hit past the
 *   images. */
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

/* the pair's test images: 200 x 90 -> 136 rows, 70 x 150 -> 78, 108 x 108
 * -> 81 */
enum { WIDE, TALL, SQUARE };
static const int32_t k_sizes[][2] = {{200, 90}, {70, 150}, {108, 108}};

static int setup(void **state) {
  return ie_setup(state, "gemma4", "gemma4v-mmproj", false, k_sizes, 3);
}

/* llama-mtmd-cli's text for (wide, tall); other images, other text */
static void test_llama_greedy(void **state) {
  ie_fixture *fx = ie_need(state);
  check_greedy(&fx->p, "gemma4v_greedy.txt", fx->img[WIDE], fx->img[TALL],
               fx->img[TALL], fx->img[WIDE]);
}

static void test_invariance(void **state) {
  ie_fixture *fx = ie_need(state);
  /* chunks that must stop before an image (136 and 78 rows) */
  const int32_t budgets[] = {140, 150, 200};
  check_invariance(&fx->p, fx->img[WIDE], fx->img[TALL], fx->img[SQUARE],
                   fx->img[WIDE], budgets, 3, 160, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_llama_greedy),
      cmocka_unit_test(test_invariance),
  };
  return cmocka_run_group_tests(tests, setup, ie_teardown);
}
