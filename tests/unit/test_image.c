/* Tests of the image decoder (nucleus_image_decode): the seeds of
 * scripts/gen_image_seeds.py (fuzz/corpus/image), each named for what it
 * must give. ok_*: the picture decodes to the generator's pattern (exactly
 * for lossless files, within a bound for lossy ones), in its gray, 1-bit,
 * 16-bit, palette, alpha and interlaced forms converted as stb_image
 * converts them; unsupported_*: refused with the format named; limit_*:
 * headers claiming a picture over the limits, refused before decoding;
 * format_*: truncated or corrupt data. Then every truncation of a few
 * files, the limits' own checks, the hash, and the corpus through the fuzz
 * harness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz_corpus.h"
#include "nucleus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { W = 16, H = 12 };

/* scripts/gen_image_seeds.py's pattern and gray. */
static void pattern(int x, int y, uint8_t out[3]) {
  out[0] = (uint8_t)(x * 255 / (W - 1));
  out[1] = (uint8_t)(y * 255 / (H - 1));
  out[2] = (uint8_t)((x + y) * 255 / (W + H - 2));
}

static uint8_t gray(int x, int y) {
  return (uint8_t)((x * 16 + y * 5) % 256);
}

typedef struct {
  uint8_t *p;
  size_t n;
} bytes;

static bytes read_seed(const char *name) {
  const char *root = getenv("NUCLEUS_ROOT");
  char path[4096];
  snprintf(path, sizeof path, "%s/fuzz/corpus/image/%s", root ? root : ".",
           name);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s (scripts/gen_image_seeds.py)", path);
  bytes b = {malloc(1 << 16), 0};
  b.n = fread(b.p, 1, 1 << 16, f);
  fclose(f);
  return b;
}

static nucleus_image *decode_ok(const char *name) {
  bytes b = read_seed(name);
  nucleus_image *img = NULL;
  nucleus_error err = {0};
  nucleus_status rc = nucleus_image_decode(b.p, b.n, NULL, &img, &err);
  free(b.p);
  if (rc != NUCLEUS_OK) fail_msg("%s: %s", name, err.message);
  int32_t w = 0, h = 0;
  nucleus_image_size(img, &w, &h);
  assert_int_equal(w, W);
  assert_int_equal(h, H);
  return img;
}

/* The largest difference of any channel from expect(x, y). */
static int max_error(const nucleus_image *img,
                     void (*expect)(int, int, uint8_t[3])) {
  const uint8_t *rgb = nucleus_image_rgb(img);
  int worst = 0;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      uint8_t e[3];
      expect(x, y, e);
      for (int c = 0; c < 3; c++) {
        int d = abs((int)rgb[(y * W + x) * 3 + c] - (int)e[c]);
        if (d > worst) worst = d;
      }
    }
  return worst;
}

static void expect_gray(int x, int y, uint8_t out[3]) {
  out[0] = out[1] = out[2] = gray(x, y);
}

static void expect_gray1(int x, int y, uint8_t out[3]) {
  out[0] = out[1] = out[2] = gray(x, y) >= 128 ? 255 : 0;
}

static void check(const char *name, void (*expect)(int, int, uint8_t[3]),
                  int bound) {
  nucleus_image *img = decode_ok(name);
  int e = max_error(img, expect);
  nucleus_image_free(img);
  if (e > bound)
    fail_msg("%s: a channel %d away from the pattern (at most %d)", name, e,
             bound);
}

static void test_lossless_forms(void **state) {
  (void)state;
  /* 8-bit RGB, RGBA (alpha dropped: the colour is kept as it is, not
   * blended), 16-bit RGB (the high byte), interlaced, palette (with a
   * transparent entry: still its colour), lossless WebP with alpha. */
  const char *exact[] = {"ok_rgb.png",       "ok_rgba.png",
                         "ok_rgb16.png",     "ok_interlaced.png",
                         "ok_palette.png",   "ok_palette_trns.png",
                         "ok_lossless.webp", "ok_alpha.webp"};
  for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
    check(exact[i], pattern, 0);
  /* Gray, gray + alpha and 16-bit gray: the value in all three channels
   * (the 16-bit file's low byte is 7: cut, not rounded). */
  check("ok_gray.png", expect_gray, 0);
  check("ok_gray_alpha.png", expect_gray, 0);
  check("ok_gray16.png", expect_gray, 0);
  check("ok_gray1.png", expect_gray1, 0);
}

static void test_lossy_forms(void **state) {
  (void)state;
  check("ok_rgb.jpg", pattern, 8);
  check("ok_progressive.jpg", pattern, 8);
  check("ok_rgb_420.jpg", pattern, 24);
  check("ok_gray.jpg", expect_gray, 8);
  check("ok_lossy.webp", pattern, 24);
}

static void expect_refusal(const char *name, nucleus_status code,
                           const char *words) {
  bytes b = read_seed(name);
  nucleus_image *img = (nucleus_image *)0x1;
  nucleus_error err = {0};
  nucleus_status rc = nucleus_image_decode(b.p, b.n, NULL, &img, &err);
  free(b.p);
  assert_null(img);
  if (rc != code || !strstr(err.message, words))
    fail_msg("%s: expected %s with \"%s\"; got %s: %s", name,
             nucleus_status_name(code), words, nucleus_status_name(rc),
             err.message);
}

static void test_refused_formats(void **state) {
  (void)state;
  expect_refusal("unsupported_cmyk.jpg", NUCLEUS_ERR_UNSUPPORTED,
                 "a CMYK JPEG image");
  expect_refusal("unsupported_animated.png", NUCLEUS_ERR_UNSUPPORTED,
                 "an animated PNG");
  expect_refusal("unsupported_animated.webp", NUCLEUS_ERR_UNSUPPORTED,
                 "an animated WebP");
  expect_refusal("unsupported.gif", NUCLEUS_ERR_UNSUPPORTED,
                 "a GIF image: the formats taken are PNG, JPEG and WebP");
  expect_refusal("unsupported.bmp", NUCLEUS_ERR_UNSUPPORTED, "a BMP image");
  expect_refusal("unsupported.tiff", NUCLEUS_ERR_UNSUPPORTED, "a TIFF image");
  nucleus_image *img = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_image_decode("hello world", 11, NULL, &img, &err),
                   NUCLEUS_ERR_UNSUPPORTED);
  assert_non_null(strstr(err.message, "first bytes are 68 65 6c 6c"));
  assert_int_equal(nucleus_image_decode("", 0, NULL, &img, &err),
                   NUCLEUS_ERR_FORMAT);
  assert_non_null(strstr(err.message, "an empty image"));
}

static void test_limits_before_decoding(void **state) {
  (void)state;
  expect_refusal("limit_side.png", NUCLEUS_ERR_LIMIT,
                 "a PNG image of 100000x2 pixels: each side may be at most "
                 "8192");
  expect_refusal("limit_pixels.png", NUCLEUS_ERR_LIMIT,
                 "8000x8000 = 64000000 pixels: at most 32000000");
  expect_refusal("limit_side.jpg", NUCLEUS_ERR_LIMIT,
                 "a JPEG image of 60000x60000");
  expect_refusal("limit_side.webp", NUCLEUS_ERR_LIMIT,
                 "a WebP image of 16000x16000");
  /* Limits of the caller's: the 16x12 picture against 15 a side, 191
   * pixels; the limits' own ranges. */
  bytes b = read_seed("ok_rgb.png");
  nucleus_image *img = NULL;
  nucleus_error err = {0};
  nucleus_image_limits lim = {.max_side = 15, .max_pixels = 1000};
  assert_int_equal(nucleus_image_decode(b.p, b.n, &lim, &img, &err),
                   NUCLEUS_ERR_LIMIT);
  lim = (nucleus_image_limits){.max_side = 16, .max_pixels = 191};
  assert_int_equal(nucleus_image_decode(b.p, b.n, &lim, &img, &err),
                   NUCLEUS_ERR_LIMIT);
  lim.max_pixels = 192;
  assert_int_equal(nucleus_image_decode(b.p, b.n, &lim, &img, &err),
                   NUCLEUS_OK);
  nucleus_image_free(img);
  lim = (nucleus_image_limits){.max_side = 0, .max_pixels = 192};
  assert_int_equal(nucleus_image_decode(b.p, b.n, &lim, &img, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "max_side 0 is not in 1..65535"));
  lim = (nucleus_image_limits){.max_side = 16,
                               .max_pixels = NUCLEUS_IMAGE_MAX_PIXELS + 1};
  assert_int_equal(nucleus_image_decode(b.p, b.n, &lim, &img, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "max_pixels"));
  free(b.p);
}

static void test_truncated_and_corrupt(void **state) {
  (void)state;
  expect_refusal("format_truncated_rgb.png", NUCLEUS_ERR_FORMAT,
                 "a corrupt PNG image");
  expect_refusal("format_truncated_rgb.jpg", NUCLEUS_ERR_FORMAT,
                 "a corrupt JPEG image");
  expect_refusal("format_truncated_progressive.jpg", NUCLEUS_ERR_FORMAT,
                 "a corrupt JPEG image");
  expect_refusal("format_truncated_lossless.webp", NUCLEUS_ERR_FORMAT,
                 "a corrupt WebP image");
  expect_refusal("format_truncated_lossy.webp", NUCLEUS_ERR_FORMAT,
                 "a corrupt WebP image");
  expect_refusal("format_corrupt.png", NUCLEUS_ERR_FORMAT,
                 "a corrupt PNG image");
  /* Every cut of each whole file is refused (none decodes to a picture
   * with made-up rows), and never crashes. */
  const char *whole[] = {"ok_rgb.png",    "ok_interlaced.png",
                         "ok_rgb.jpg",    "ok_progressive.jpg",
                         "ok_lossy.webp", "ok_lossless.webp"};
  for (size_t i = 0; i < sizeof whole / sizeof *whole; i++) {
    bytes b = read_seed(whole[i]);
    for (size_t cut = 0; cut < b.n; cut++) {
      nucleus_image *img = NULL;
      nucleus_error err = {0};
      nucleus_status rc = nucleus_image_decode(b.p, cut, NULL, &img, &err);
      if (rc == NUCLEUS_OK)
        fail_msg("%s cut to %zu of %zu bytes decoded", whole[i], cut, b.n);
      assert_null(img);
      assert_true(err.message[0] != 0);
    }
    free(b.p);
  }
}

static void test_hash_follows_content(void **state) {
  (void)state;
  uint8_t rgb[W * H * 3];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      pattern(x, y, rgb + (y * W + x) * 3);
  nucleus_image *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_image_from_rgb(rgb, W, H, &a, &err), NUCLEUS_OK);
  rgb[100] ^= 1;
  assert_int_equal(nucleus_image_from_rgb(rgb, W, H, &b, &err), NUCLEUS_OK);
  rgb[100] ^= 1;
  /* the same bytes as another shape */
  assert_int_equal(nucleus_image_from_rgb(rgb, H, W, &c, &err), NUCLEUS_OK);
  nucleus_image *png = decode_ok("ok_rgb.png");
  uint64_t ha[2], hb[2], hc[2], hp[2];
  nucleus_image_hash(a, ha);
  nucleus_image_hash(b, hb);
  nucleus_image_hash(c, hc);
  nucleus_image_hash(png, hp);
  /* the same picture from a PNG and from raw bytes: one hash */
  assert_memory_equal(ha, hp, sizeof ha);
  assert_memory_equal(nucleus_image_rgb(a), nucleus_image_rgb(png), sizeof rgb);
  assert_memory_not_equal(ha, hb, sizeof ha);
  assert_memory_not_equal(ha, hc, sizeof ha);
  assert_int_equal(nucleus_image_from_rgb(rgb, 0, H, &d, &err),
                   NUCLEUS_ERR_FORMAT);
  assert_null(d);
  assert_int_equal(nucleus_image_from_rgb(rgb, 70000, 1, &d, &err),
                   NUCLEUS_ERR_LIMIT);
  assert_null(d);
  nucleus_image_free(a);
  nucleus_image_free(b);
  nucleus_image_free(c);
  nucleus_image_free(png);
}

static void replay_one(const uint8_t *data, size_t len, void *ctx) {
  (void)ctx;
  LLVMFuzzerTestOneInput(data, len);
}

static void test_fuzz_corpus(void **state) {
  (void)state;
  assert_true(fuzz_corpus_replay("image", replay_one, NULL) >= 30);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lossless_forms),
      cmocka_unit_test(test_lossy_forms),
      cmocka_unit_test(test_refused_formats),
      cmocka_unit_test(test_limits_before_decoding),
      cmocka_unit_test(test_truncated_and_corrupt),
      cmocka_unit_test(test_hash_follows_content),
      cmocka_unit_test(test_fuzz_corpus),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
