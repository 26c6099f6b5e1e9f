/* test_image_util: an image from RGB pixels for the vision tests
 * (nucleus_image_from_rgb; a failure fails the test). Header-only. */
#ifndef NC_TEST_IMAGE_UTIL_H
#define NC_TEST_IMAGE_UTIL_H

#include <stdint.h>

#include "nucleus.h"

static inline nucleus_image *test_image(const uint8_t *rgb, int32_t w,
                                        int32_t h) {
  nucleus_image *img = NULL;
  nucleus_error err = {0};
  if (nucleus_image_from_rgb(rgb, w, h, &img, &err) != NUCLEUS_OK)
    fail_msg("nucleus_image_from_rgb %dx%d: %s", (int)w, (int)h, err.message);
  return img;
}

static inline void test_image_free(nucleus_image *img) {
  nucleus_image_free(img);
}

#endif
