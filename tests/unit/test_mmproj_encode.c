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
#include "vision_test_util.h"

#define REL_BOUND 1e-4
#define Q8_BOUND 3e-2 /* Q8_0 weights against the F32 file's rows */

static const vt_table_image IMAGES[] = {
    {"wide", 80, 60, 0, 0}, {"tall", 45, 100, 0, 0}, {"square", 64, 64, 0, 0}};
/* max |diff| within REL_BOUND of the largest value, flash off and on */
static const vt_table TABLE = {
    .lm = "gemma3",
    .mm = "gemma3-mmproj",
    .kind = "gemma3",
    .gen = "",
    .images = IMAGES,
    .n_images = sizeof IMAGES / sizeof IMAGES[0],
    .max_bound = {REL_BOUND, REL_BOUND},
};

static void test_reference_kernels(void **state) {
  (void)state;
  vt_check_table(&TABLE, true, false);
}

static void test_best_kernels(void **state) {
  (void)state;
  vt_check_table(&TABLE, false, false);
}

/* llama.cpp's clip attention with flash attention on (its CPU default, and
 * nucleus's: the encoder follows the model's flash_attn) */
static void test_flash(void **state) {
  (void)state;
  vt_check_table(&TABLE, true, true);
  vt_check_table(&TABLE, false, true);
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
  vt_pair p1 = vt_load("gemma3", "gemma3-mmproj-q8", reference, false, 1);
  vt_pair p3 = vt_load("gemma3", "gemma3-mmproj-q8", reference, false, 3);
  for (size_t i = 0; i < TABLE.n_images; i++) {
    int32_t n_tok, n_embd;
    float *g = vt_golden("gemma3", IMAGES[i].name, false, "", &n_tok, &n_embd);
    size_t n1, n3;
    float *a = vt_encode(&p1, IMAGES[i].w, IMAGES[i].h, &n1);
    float *b = vt_encode(&p3, IMAGES[i].w, IMAGES[i].h, &n3);
    assert_int_equal(n1, (size_t)n_tok * n_embd);
    assert_memory_equal(a, b, n1 * sizeof *a);
    for (size_t k = 0; k < n1; k++)
      assert_true(isfinite(a[k]));
    const vt_diff d = vt_diff_of(a, g, n1);
    print_message("Q8_0, %s kernels, image %s: max |diff| %.3g from the F32 "
                  "rows, of max |value| %.3g (%.3g relative)\n",
                  reference ? "ref" : "best", IMAGES[i].name, d.worst, d.scale,
                  d.worst / d.scale);
    assert_true(d.worst > REL_BOUND * d.scale);
    assert_true(d.worst <= Q8_BOUND * d.scale);
    free(a);
    free(b);
    free(g);
  }
  vt_unload(&p1);
  vt_unload(&p3);
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
