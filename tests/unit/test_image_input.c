/* nucleus serve's image parts (tools/server/openai/image_input.c): each
 * distinct file is decoded once per request.
 * - the same data: URI twice in one chat request: one decoding, two equal
 *   images (a copy: each freed on its own);
 * - a Messages or Responses image checked by the translation
 *   (image_input_inline, image_input_base64) is the one the chat path
 *   takes: no second decoding, and the data: URI the chat request carries
 *   for an Anthropic base64 source finds it too;
 * - different files are decoded apart; a bad file is a 400 naming its part
 *   and is not remembered; the memo keeps at most IMAGE_INPUT_MAX_IMAGES
 *   files (past them a file is decoded again, never refused for it);
 * - image_list_clear and image_list_forget free all (ASan: no leak). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <png.h>

#include "http/base64.h"
#include "openai/image_input.h"

/* A w x h PNG whose pixels follow seed, as base64. */
static char *png_base64(int w, int h, int seed) {
  uint8_t *rgb = malloc((size_t)w * h * 3);
  assert_non_null(rgb);
  for (int i = 0; i < w * h * 3; i++)
    rgb[i] = (uint8_t)(i * 7 + seed * 31);
  png_image img = {.version = PNG_IMAGE_VERSION,
                   .width = (png_uint_32)w,
                   .height = (png_uint_32)h,
                   .format = PNG_FORMAT_RGB};
  png_alloc_size_t n = 0;
  assert_true(png_image_write_to_memory(&img, NULL, &n, 0, rgb, 0, NULL));
  uint8_t *png = malloc(n);
  assert_non_null(png);
  assert_true(png_image_write_to_memory(&img, png, &n, 0, rgb, 0, NULL));
  size_t len = 0;
  char *b64 = base64_encode(png, n, &len);
  assert_non_null(b64);
  free(png);
  free(rgb);
  return b64;
}

static char *data_uri(const char *b64) {
  size_t n = strlen("data:image/png;base64,") + strlen(b64) + 1;
  char *uri = malloc(n);
  assert_non_null(uri);
  snprintf(uri, n, "data:image/png;base64,%s", b64);
  return uri;
}

static int add(const char *uri, image_list *list, api_error *e) {
  return image_input_url(uri, strlen(uri), false, "messages",
                         "messages[0].content[0].image_url", list, e);
}

static void assert_same_picture(const nucleus_image *a,
                                const nucleus_image *b) {
  int32_t wa, ha, wb, hb;
  nucleus_image_size(a, &wa, &ha);
  nucleus_image_size(b, &wb, &hb);
  assert_int_equal(wa, wb);
  assert_int_equal(ha, hb);
  assert_memory_equal(nucleus_image_rgb(a), nucleus_image_rgb(b),
                      (size_t)wa * ha * 3);
  uint64_t h1[2], h2[2];
  nucleus_image_hash(a, h1);
  nucleus_image_hash(b, h2);
  assert_memory_equal(h1, h2, sizeof h1);
}

static void test_same_file_twice_decodes_once(void **state) {
  (void)state;
  char *b64 = png_base64(5, 3, 1), *other_b64 = png_base64(5, 3, 2);
  char *uri = data_uri(b64), *other = data_uri(other_b64);
  image_list list = {0};
  api_error e = {0};
  assert_int_equal(add(uri, &list, &e), 0);
  assert_int_equal(add(other, &list, &e), 0);
  assert_int_equal(add(uri, &list, &e), 0);
  assert_int_equal(list.n, 3);
  assert_int_equal(list.n_decoded, 2);
  assert_ptr_not_equal(list.v[0], list.v[2]);
  assert_same_picture(list.v[0], list.v[2]);
  assert_int_equal(list.pixels, 3 * 15);
  image_list_forget(&list); /* as prompt_chat does: the images stay */
  assert_int_equal(list.n, 3);
  assert_int_equal(add(uri, &list, &e), 0); /* forgotten: decoded again */
  assert_int_equal(list.n_decoded, 3);
  image_list_clear(&list);
  assert_int_equal(list.n, 0);
  free(uri);
  free(other);
  free(b64);
  free(other_b64);
}

static void test_translation_hands_its_images_on(void **state) {
  (void)state;
  char *b64 = png_base64(4, 6, 3), *anthropic_b64 = png_base64(2, 2, 4);
  char *uri = data_uri(b64);
  image_list memo = {0};
  api_error e = {0};
  /* Responses' input_image: checked, the data: URI handed on */
  json_t *carried = image_input_inline(uri, strlen(uri), false, "input[0]",
                                       "input[0].content[1]", &memo, &e);
  assert_non_null(carried);
  assert_string_equal(json_string_value(carried), uri);
  /* Anthropic's base64 source: checked; the chat part carries it as a
   * data: URI of its media type */
  assert_int_equal(image_input_base64(anthropic_b64, strlen(anthropic_b64),
                                      "messages", "messages[1].content[0]",
                                      &memo, &e),
                   0);
  assert_int_equal(memo.n_decoded, 2);
  assert_int_equal(memo.n, 0); /* remembered, not listed */
  /* the chat path (prompt_chat takes the memo) */
  image_list list = memo;
  memo = (image_list){0};
  assert_int_equal(add(json_string_value(carried), &list, &e), 0);
  size_t n = strlen("data:image/webp;base64,") + strlen(anthropic_b64) + 1;
  char *anthropic_uri = malloc(n);
  assert_non_null(anthropic_uri);
  snprintf(anthropic_uri, n, "data:image/webp;base64,%s", anthropic_b64);
  assert_int_equal(add(anthropic_uri, &list, &e), 0);
  assert_int_equal(add(json_string_value(carried), &list, &e), 0);
  assert_int_equal(list.n, 3);
  assert_int_equal(list.n_decoded, 2); /* none decoded again */
  assert_same_picture(list.v[0], list.v[2]);
  int32_t w, h;
  nucleus_image_size(list.v[1], &w, &h);
  assert_int_equal(w * 100 + h, 202);
  image_list_clear(&list);
  /* a translation whose request then fails frees its memo */
  {
    json_t *again = image_input_inline(uri, strlen(uri), false, "input[0]",
                                       "input[0].content[1]", &memo, &e);
    assert_non_null(again);
    json_decref(again);
    image_list_clear(&memo);
  }
  json_decref(carried);
  free(anthropic_uri);
  free(uri);
  free(b64);
  free(anthropic_b64);
}

static void test_bad_file_is_not_remembered(void **state) {
  (void)state;
  char *b64 = png_base64(3, 3, 5);
  size_t len = strlen(b64);
  b64[len / 2] = b64[len / 2] == 'A' ? 'B' : 'A'; /* a corrupt PNG */
  char *uri = data_uri(b64);
  image_list list = {0};
  api_error e = {0};
  assert_int_equal(add(uri, &list, &e), -1);
  assert_int_equal(e.status, 400);
  assert_non_null(strstr(e.message, "messages[0].content[0].image_url: "));
  assert_int_equal(list.n_seen, 0);
  assert_int_equal(image_input_base64(b64, strlen(b64), "messages",
                                      "messages[1].content[0].source", &list,
                                      &e),
                   -1);
  assert_non_null(strstr(e.message, "messages[1].content[0].source: "));
  assert_int_equal(list.n_seen, 0);
  image_list_clear(&list);
  free(uri);
  free(b64);
}

static void test_memo_is_bounded(void **state) {
  (void)state;
  image_list memo = {0};
  api_error e = {0};
  char *first = png_base64(1, 1, 0);
  for (int i = 0; i <= IMAGE_INPUT_MAX_IMAGES; i++) {
    char *b64 = i ? png_base64(1, 1, i) : first;
    assert_int_equal(image_input_base64(b64, strlen(b64), "messages",
                                        "messages[0].content[0].source", &memo,
                                        &e),
                     0);
    if (i) free(b64);
  }
  assert_int_equal(memo.n_seen, IMAGE_INPUT_MAX_IMAGES);
  assert_int_equal(memo.n_decoded, IMAGE_INPUT_MAX_IMAGES + 1);
  /* a remembered file is not decoded again */
  assert_int_equal(image_input_base64(first, strlen(first), "messages",
                                      "messages[0].content[0].source", &memo,
                                      &e),
                   0);
  assert_int_equal(memo.n_decoded, IMAGE_INPUT_MAX_IMAGES + 1);
  image_list_clear(&memo);
  free(first);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_file_twice_decodes_once),
      cmocka_unit_test(test_translation_hands_its_images_on),
      cmocka_unit_test(test_bad_file_is_not_remembered),
      cmocka_unit_test(test_memo_is_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
