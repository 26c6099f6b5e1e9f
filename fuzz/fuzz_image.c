/* libFuzzer target for the image decoder (src/vision/image_decode.c over
 * libpng, libjpeg-turbo and libwebp): any bytes either decode to an image
 * whose size is within the limits and whose hash is its content's, or fail
 * with a format, unsupported or limit error and a message; never a crash,
 * a leak or a print. Limits smaller than the defaults keep each run fast.
 * Seeds: scripts/gen_image_seeds.py (fuzz/corpus/image). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vision/image.h"
#include "vision/image_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const nucleus_image_limits limits = {.max_side = 2048, .max_pixels = 1 << 20};
  struct nucleus_image *img = NULL;
  nc_error err = {0};
  nc_code rc = nc_image_decode(data, size, &limits, &img, &err);
  if (rc == NC_OK) {
    if (!img || img->width < 1 || img->height < 1 ||
        img->width > limits.max_side || img->height > limits.max_side ||
        (int64_t)img->width * img->height > limits.max_pixels)
      abort();
    uint64_t h0 = img->hash[0], h1 = img->hash[1];
    nc_image_rehash(img);
    if (h0 != img->hash[0] || h1 != img->hash[1]) abort();
    nc_image_free(img);
  } else if (img || !err.message[0] ||
             (rc != NC_ERR_FORMAT && rc != NC_ERR_UNSUPPORTED &&
              rc != NC_ERR_LIMIT)) {
    abort();
  }
  return 0;
}
