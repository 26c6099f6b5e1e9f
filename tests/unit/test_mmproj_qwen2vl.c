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
#include "vision_test_util.h"

/* flash off, on: max and mean |diff| over the largest value; the strip
 * (under 64 patches) takes ggml's one-row flash path, which sums V in F16
 * (ggml_vec_mad_f16), over only 8 rows: its flash mean bound is 1.2e-4
 * (measured 1.0e-4; the others 2.5e-5 at most) */
static const vt_table_image IMAGES[] = {{"square", 64, 64, 0, 0},
                                        {"wide", 144, 96, 0, 0},
                                        {"tall", 100, 130, 0, 0},
                                        {"strip", 128, 16, 0, 1.2e-4}};

static void check_table(const char *kind, bool reference, bool flash) {
  char mm[64];
  snprintf(mm, sizeof mm, "%s-mmproj", kind);
  const vt_table t = {
      .lm = "qwen2vl",
      .mm = mm,
      .kind = kind,
      .gen = " --qwen2vl",
      .images = IMAGES,
      .n_images = sizeof IMAGES / sizeof IMAGES[0],
      .max_bound = {2e-4, 5e-4},
      .mean_bound = {2e-5, 6e-5},
  };
  vt_check_table(&t, reference, flash);
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
      {"qwen3vl", "qwen2vl-mmproj",
       "projector qwen2vl_merger pairs with a qwen2vl language model, not "
       "qwen3vl"},
      {"gemma3", "qwen25vl-mmproj",
       "projector qwen2.5vl_merger pairs with a qwen2vl language model, not "
       "gemma3"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    vt_check_refused(cases[i].lm, cases[i].mm, cases[i].needle);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_qwen2vl),
      cmocka_unit_test(test_qwen25vl),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
