/* Images in the engine (docs/VISION.md) on the random gemma3 pair of `make
 * arch-models` (build/arch/gemma3.gguf + gemma3-mmproj.gguf: 16 rows an
 * image):
 * - llama.cpp's greedy text on a prompt with two images
 *   (tests/data/vision/gemma3_greedy.txt, scripts/gen_vision_goldens.py:
 *   llama-mtmd-cli, flash attention off) comes out of the engine, with
 *   flash attention off and on (the same 16 tokens there), and other images
 *   give other text;
 * - a request's tokens and logprobs are the same alone, in chunks that
 *   must stop before an image (an image's rows go through one forward),
 *   beside another request with other images, and on a prefix-cache hit:
 *   the same images again hit past them, other images with the same text
 *   only before their first image;
 * - a picture twice in one request is encoded once (a pixel-equal copy
 *   too; images_encoded_total), whole or in chunks that reach the second
 *   one steps later, with the same tokens and logprobs as the picture
 *   given twice; two pictures are two encodes;
 * - submit's refusals: images without an mmproj, rows that do not match
 *   the images, an image wider than the batch, beams with images;
 * - the encode sliced over steps (image_step_tokens 1: one part of an
 *   encode a step, docs/VISION.md "Encoding in the steps"): a decoding
 *   request gets a token every step while another request's images encode
 *   over several steps; the image request's tokens and logprobs, and the
 *   decoding one's, are the same as with the encode in one step, alone or
 *   side by side, and with two image requests encoding in the same steps;
 *   a request cancelled mid-encode, and an engine freed mid-encode, leak
 *   nothing (ASan). */
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

/* the pair's test images (16 rows each) */
enum { WIDE, TALL, SQUARE };
static const int32_t k_sizes[][2] = {{80, 60}, {45, 100}, {64, 64}};

/* flash attention off, as the golden; and on (the default), whose text on
 * this pair is the same for the golden's 16 tokens */
static int setup(void **state) {
  return ie_setup(state, "gemma3", "gemma3-mmproj", false, k_sizes, 3);
}
static int setup_flash(void **state) {
  return ie_setup(state, "gemma3", "gemma3-mmproj", true, k_sizes, 3);
}

/* A stepped engine with p's projector (512 positions, budget rows a step)
 * whose encodes take image_step_tokens' share of a step (0: the
 * default). */
static nucleus_engine *engine_sliced(const vt_pair *p, int32_t budget,
                                     int32_t image_step_tokens) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  ep.max_batch_tokens = budget;
  ep.mmproj = p->mm;
  ep.image_step_tokens = image_step_tokens;
  /* the prompt rows beside a decode unbounded: the prefill budget
   * (prefill_budget.h) is timed, so under it the steps counted below
   * would depend on the machine's load, not on the image budget alone */
  ep.decode_stall = 1000;
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  if (nc_engine_create_stepped(p->lm, &ep, &e, &err) != NUCLEUS_OK)
    fail_msg("engine: %s", err.message);
  return e;
}

/* The golden's first line: llama-mtmd-cli's text for (wide, tall); other
 * images, other text. */
static void test_llama_greedy(void **state) {
  ie_fixture *fx = ie_need(state);
  check_greedy(&fx->p, "gemma3_greedy.txt", fx->img[WIDE], fx->img[TALL],
               fx->img[TALL], fx->img[WIDE]);
}

static void test_invariance(void **state) {
  ie_fixture *fx = ie_need(state);
  /* chunks of 20 and 23 rows: an image (16 rows) never fits behind a
   * chunk's start text, so chunks stop before it; beside a request with
   * other images (the same text), arriving later; a prefix-cache hit */
  const int32_t budgets[] = {20, 23, 17};
  nucleus_engine *e = NULL;
  check_invariance(&fx->p, fx->img[WIDE], fx->img[TALL], fx->img[SQUARE],
                   fx->img[WIDE], budgets, 3, 64, &e);
  size_t n = 0;
  int32_t *prompt = prompt_of(&fx->p, fx->img[WIDE], fx->img[TALL], &n);
  job alone = {prompt, n, {fx->img[WIDE], fx->img[TALL]}, 0};
  const int32_t bt = 16; /* the engine's default kv_block_tokens */

  /* the prefix cache: the other request's images shared only the text
   * before the first image */
  int32_t first_image = 0;
  while (prompt[first_image] != NUCLEUS_TOKEN_IMAGE)
    first_image++;
  job other = {prompt, n, {fx->img[TALL], fx->img[WIDE]}, 0};
  result ro;
  run_on(e, &other, 1, &ro);
  assert_int_equal(ro.cached, first_image / bt * bt);
  /* the same first image, another second one: the hit reaches the second
   * image's block, and the rows after it continue as a cold run's (on an
   * engine that keeps every window block: gemma3's sliding-window layers
   * otherwise give the blocks that left the window back, and such a hit
   * stops at 0) */
  nucleus_engine_free(e);
  e = engine_with(&fx->p, 512, true);
  result warm;
  run_on(e, &alone, 1, &warm);
  job half = {prompt, n, {fx->img[WIDE], fx->img[SQUARE]}, 0};
  result hot, cold;
  run_on(e, &half, 1, &hot);
  nucleus_engine_free(e);
  int32_t second_image = first_image + 16;
  while (prompt[second_image] != NUCLEUS_TOKEN_IMAGE)
    second_image++;
  assert_int_equal(hot.cached, second_image / bt * bt);
  assert_true(hot.cached > first_image);
  e = engine_with(&fx->p, 512, true);
  run_on(e, &half, 1, &cold);
  nucleus_engine_free(e);
  assert_int_equal(cold.cached, 0);
  if (!same(&hot, &cold))
    fail_msg("a hit up to the second image: other output");
  nucleus_free(prompt);
}

static void test_same_picture_encoded_once(void **state) {
  ie_fixture *fx = ie_need(state);
  int32_t w, h;
  nucleus_image_size(fx->img[WIDE], &w, &h);
  nucleus_image *copy = test_image(nucleus_image_rgb(fx->img[WIDE]), w, h);
  size_t n = 0;
  int32_t *prompt = prompt_of(&fx->p, fx->img[WIDE], copy, &n);
  job twice = {prompt, n, {fx->img[WIDE], fx->img[WIDE]}, 0};
  job twins = {prompt, n, {fx->img[WIDE], copy}, 0};
  result ref, r;
  nucleus_engine *e = engine(&fx->p, 512);
  run_on(e, &twice, 1, &ref);
  assert_int_equal(encoded(e), 1);
  nucleus_engine_free(e);
  /* chunks of 20 rows: the second image is reached steps after the
   * first; the copy is the same picture */
  e = engine(&fx->p, 20);
  run_on(e, &twins, 1, &r);
  assert_int_equal(encoded(e), 1);
  nucleus_engine_free(e);
  if (!same(&r, &ref)) fail_msg("a pixel-equal copy in chunks: other output");
  /* two pictures, two encodes */
  size_t n2 = 0;
  int32_t *prompt2 = prompt_of(&fx->p, fx->img[WIDE], fx->img[TALL], &n2);
  job two = {prompt2, n2, {fx->img[WIDE], fx->img[TALL]}, 0};
  e = engine(&fx->p, 512);
  run_on(e, &two, 1, &r);
  assert_int_equal(encoded(e), 2);
  nucleus_engine_free(e);
  nucleus_free(prompt2);
  nucleus_free(prompt);
  test_image_free(copy);
}

static nucleus_request *submit(nucleus_engine *e, const int32_t *prompt,
                               size_t n, const nucleus_image *const *imgs,
                               size_t n_imgs, int32_t max_tokens) {
  nucleus_request_params p = nucleus_request_default_params();
  p.sampling.temperature = 0;
  p.sampling.logprobs = true;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  p.images = imgs;
  p.n_images = n_imgs;
  nucleus_request *r = NULL;
  nucleus_error err = {0};
  if (nucleus_engine_submit(e, prompt, n, &p, &r, &err) != NUCLEUS_OK)
    fail_msg("submit: %s", err.message);
  return r;
}

/* Reads r's events into out; the tokens this call read. */
static int drain(nucleus_request *r, result *out, bool *done) {
  int got = 0;
  nucleus_event ev;
  while (!*done && nucleus_request_next_event(r, &ev, 0) == NUCLEUS_OK) {
    if (ev.kind == NUCLEUS_EVENT_TOKEN) {
      if (out->n < MAX_GEN) {
        out->tokens[out->n] = ev.token;
        out->logprobs[out->n] = ev.logprob;
      }
      out->n++;
      got++;
    } else if (ev.kind == NUCLEUS_EVENT_FINISH &&
               ev.finish_reason == NUCLEUS_FINISH_ERROR) {
      fail_msg("request: %s", ev.error.message);
    } else if (ev.kind == NUCLEUS_EVENT_DONE) {
      *done = true;
    }
  }
  return got;
}

enum { N_DECODE = 48 };

/* A text request decoding (its first token out), then the one with the
 * images a_img, b_img submitted: until the image request's first token,
 * the text one gets a token every step. Returns those steps; both results
 * in out. */
static int beside_decode(const vt_pair *p, const nucleus_image *a_img,
                         const nucleus_image *b_img, int32_t image_step_tokens,
                         const int32_t *prompt, size_t n, result out[2]) {
  nucleus_engine *e = engine_sliced(p, 64, image_step_tokens);
  static const char *text = "<|im_start|>user\nCount to one hundred."
                            "<|im_end|>\n<|im_start|>assistant\n";
  int32_t *ids = NULL;
  size_t n_ids = 0;
  nucleus_error err = {0};
  assert_int_equal(nucleus_tokenize(p->lm, text, strlen(text), true, true, &ids,
                                    &n_ids, &err),
                   NUCLEUS_OK);
  memset(out, 0, 2 * sizeof *out);
  bool done[2] = {false, false};
  nucleus_request *d = submit(e, ids, n_ids, NULL, 0, N_DECODE);
  for (int i = 0; i < 100 && out[0].n == 0; i++) {
    nc_engine_step(e);
    drain(d, &out[0], &done[0]);
  }
  assert_int_equal(out[0].n, 1);
  const nucleus_image *imgs[2] = {a_img, b_img};
  nucleus_request *a = submit(e, prompt, n, imgs, 2, N_GEN);
  int steps = 0;
  while (out[1].n == 0) {
    nc_engine_step(e);
    steps++;
    /* the decode goes on beside the encode: one token a step */
    assert_int_equal(drain(d, &out[0], &done[0]), 1);
    drain(a, &out[1], &done[1]);
    assert_true(steps < N_DECODE - 2);
  }
  for (int i = 0; i < 1000 && !(done[0] && done[1]); i++) {
    nc_engine_step(e);
    drain(d, &out[0], &done[0]);
    drain(a, &out[1], &done[1]);
  }
  assert_true(done[0] && done[1]);
  assert_int_equal(out[0].n, N_DECODE);
  assert_int_equal(out[1].n, N_GEN);
  nucleus_request_free(d);
  nucleus_request_free(a);
  nucleus_free(ids);
  nucleus_engine_free(e);
  return steps;
}

static void test_sliced_encode(void **state) {
  ie_fixture *fx = ie_need(state);
  size_t n = 0;
  int32_t *prompt = prompt_of(&fx->p, fx->img[WIDE], fx->img[TALL], &n);
  job alone = {prompt, n, {fx->img[WIDE], fx->img[TALL]}, 0};
  result ref, r;
  nucleus_engine *e = engine(&fx->p, 64);
  run_on(e, &alone, 1, &ref);
  nucleus_engine_free(e);
  /* sliced, alone */
  e = engine_sliced(&fx->p, 64, 1);
  run_on(e, &alone, 1, &r);
  assert_int_equal(encoded(e), 2);
  nucleus_engine_free(e);
  if (!same(&r, &ref)) fail_msg("sliced encode alone: other output");
  /* two image requests encoding in the same steps (the second one's
   * images other ones) */
  job pair[2] = {{prompt, n, {fx->img[WIDE], fx->img[TALL]}, 0},
                 {prompt, n, {fx->img[SQUARE], fx->img[WIDE]}, 0}};
  result whole[2], rs[2];
  e = engine(&fx->p, 64);
  run_on(e, pair, 2, whole);
  nucleus_engine_free(e);
  e = engine_sliced(&fx->p, 64, 1);
  run_on(e, pair, 2, rs);
  assert_int_equal(encoded(e), 4);
  nucleus_engine_free(e);
  if (!same(&rs[0], &ref) || !same(&rs[1], &whole[1]))
    fail_msg("two sliced encodes side by side: other output");
  /* beside a decoding request: a token for it every step; the same
   * outputs as with the encode in one step, which takes fewer steps */
  result one[2], sliced[2];
  const int steps_whole =
      beside_decode(&fx->p, fx->img[WIDE], fx->img[TALL], 0, prompt, n, one);
  const int steps_sliced =
      beside_decode(&fx->p, fx->img[WIDE], fx->img[TALL], 1, prompt, n, sliced);
  print_message("steps to the image request's first token: %d whole, %d "
                "sliced\n",
                steps_whole, steps_sliced);
  if (steps_sliced < steps_whole + 4)
    fail_msg("the encode did not spread over steps (%d, whole %d)",
             steps_sliced, steps_whole);
  if (!same(&one[1], &ref) || !same(&sliced[1], &ref))
    fail_msg("beside a decode: the image request's output differs");
  if (!same(&one[0], &sliced[0]))
    fail_msg("the decoding request's output differs");
  nucleus_free(prompt);
}

/* A request cancelled while its encode is pending, and an engine freed
 * with one pending: the request ends aborted, nothing leaks (ASan). */
static void test_cancel_mid_encode(void **state) {
  ie_fixture *fx = ie_need(state);
  size_t n = 0;
  int32_t *prompt = prompt_of(&fx->p, fx->img[WIDE], fx->img[TALL], &n);
  const nucleus_image *imgs[2] = {fx->img[WIDE], fx->img[TALL]};
  nucleus_engine *e = engine_sliced(&fx->p, 64, 1);
  nucleus_request *a = submit(e, prompt, n, imgs, 2, N_GEN);
  for (int i = 0; i < 3; i++)
    nc_engine_step(e);
  assert_int_equal(encoded(e), 1);
  nucleus_request_cancel(a);
  bool more = true;
  for (int i = 0; i < 10 && more; i++)
    more = nc_engine_step(e);
  assert_false(more);
  nucleus_event ev;
  bool aborted = false, done = false;
  while (nucleus_request_next_event(a, &ev, 0) == NUCLEUS_OK) {
    assert_int_not_equal(ev.kind, NUCLEUS_EVENT_TOKEN);
    if (ev.kind == NUCLEUS_EVENT_FINISH)
      aborted = ev.finish_reason == NUCLEUS_FINISH_ABORT;
    if (ev.kind == NUCLEUS_EVENT_DONE) done = true;
  }
  assert_true(aborted && done);
  nucleus_request_free(a);
  /* the engine still serves (the same request again, whole) */
  result r;
  job alone = {prompt, n, {fx->img[WIDE], fx->img[TALL]}, 0};
  run_on(e, &alone, 1, &r);
  assert_int_equal(r.n, N_GEN);
  /* freed with an encode pending (other images: the prefix cache holds
   * only the text before them) */
  const nucleus_image *other[2] = {fx->img[SQUARE], fx->img[TALL]};
  nucleus_request *b = submit(e, prompt, n, other, 2, N_GEN);
  nc_engine_step(e);
  nc_engine_step(e);
  assert_int_equal(encoded(e), 4);
  nucleus_engine_free(e);
  nucleus_request_free(b);
  nucleus_free(prompt);
}

static void test_refusals(void **state) {
  ie_fixture *fx = ie_need(state);
  size_t n = 0;
  int32_t *prompt = prompt_of(&fx->p, fx->img[WIDE], fx->img[TALL], &n);
  const nucleus_image *imgs[2] = {fx->img[WIDE], fx->img[TALL]};
  nucleus_request_params p = nucleus_request_default_params();
  p.images = imgs;
  p.n_images = 2;
  nucleus_request *r = NULL;
  nucleus_error err = {0};

  /* no mmproj */
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  nucleus_engine *e = NULL;
  assert_int_equal(nc_engine_create_stepped(fx->p.lm, &ep, &e, &err), NC_OK);
  assert_int_equal(nucleus_engine_submit(e, prompt, n, &p, &r, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "images: 2 given; this engine has no mmproj (--mmproj)");
  nucleus_engine_free(e);

  e = engine(&fx->p, 512);
  p.n_images = 1; /* rows for two */
  assert_int_equal(nucleus_engine_submit(e, prompt, n, &p, &r, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "an image row past the 1 images' rows"));
  p.n_images = 0; /* rows without images */
  assert_int_equal(nucleus_engine_submit(e, prompt, n, &p, &r, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(
      strstr(err.message, "NUCLEUS_TOKEN_IMAGE needs params.images"));
  p.n_images = 2;
  p.beam_width = 2;
  assert_int_equal(nucleus_engine_submit(e, prompt, n, &p, &r, &err),
                   NUCLEUS_ERR_UNSUPPORTED);
  assert_non_null(strstr(err.message, "beam search"));
  p.beam_width = 1;
  /* a run cut short: one image row missing */
  int32_t *cut = malloc(n * sizeof *cut);
  size_t k = 0;
  bool dropped = false;
  for (size_t i = 0; i < n; i++) {
    if (!dropped && prompt[i] == NUCLEUS_TOKEN_IMAGE) {
      dropped = true;
      continue;
    }
    cut[k++] = prompt[i];
  }
  assert_int_equal(nucleus_engine_submit(e, cut, k, &p, &r, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "needs 16 NUCLEUS_TOKEN_IMAGE entries"));
  free(cut);
  nucleus_engine_free(e);

  /* an image wider than the batch */
  e = engine(&fx->p, 8);
  assert_int_equal(nucleus_engine_submit(e, prompt, n, &p, &r, &err),
                   NUCLEUS_ERR_LIMIT);
  assert_non_null(strstr(err.message, "images[0]: 16 rows, more than"));
  nucleus_engine_free(e);
  nucleus_free(prompt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_llama_greedy),
      cmocka_unit_test(test_invariance),
      cmocka_unit_test(test_same_picture_encoded_once),
      cmocka_unit_test(test_sliced_encode),
      cmocka_unit_test(test_cancel_mid_encode),
  };
  return cmocka_run_group_tests(tests, setup, ie_teardown) |
         cmocka_run_group_tests(tests, setup_flash, ie_teardown);
}
