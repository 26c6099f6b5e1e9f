/* Public image entry points (include/nucleus.h): decoding, raw RGB, the
 * accessors. */
#include <string.h>

#include "vision/image.h"
#include "vision/image_decode.h"

nucleus_image_limits nucleus_image_default_limits(void) {
  return (nucleus_image_limits){.max_side = 8192, .max_pixels = 32000000};
}

nucleus_status nucleus_image_decode(const void *bytes, size_t n,
                                    const nucleus_image_limits *limits,
                                    nucleus_image **out, nucleus_error *err) {
  if (!out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "image decode: out is NULL");
  *out = NULL;
  if (!bytes && n)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "image decode: bytes is NULL with n = %zu", n);
  nucleus_image_limits defaults = nucleus_image_default_limits();
  return nc_image_decode(bytes, n, limits ? limits : &defaults, out, err);
}

nucleus_status nucleus_image_from_rgb(const uint8_t *rgb, int32_t width,
                                      int32_t height, nucleus_image **out,
                                      nucleus_error *err) {
  if (!out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "image from rgb: out is NULL");
  *out = NULL;
  if (!rgb)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "image from rgb: rgb is NULL");
  nc_code rc = nc_image_alloc(width, height, out, err);
  if (rc != NC_OK) return rc;
  memcpy((*out)->rgb, rgb, (size_t)width * (size_t)height * 3);
  nc_image_rehash(*out);
  return NC_OK;
}

void nucleus_image_free(nucleus_image *image) {
  nc_image_free(image);
}

void nucleus_image_size(const nucleus_image *image, int32_t *width,
                        int32_t *height) {
  if (width) *width = image->width;
  if (height) *height = image->height;
}

const uint8_t *nucleus_image_rgb(const nucleus_image *image) {
  return image->rgb;
}

void nucleus_image_hash(const nucleus_image *image, uint64_t out[2]) {
  out[0] = image->hash[0];
  out[1] = image->hash[1];
}
