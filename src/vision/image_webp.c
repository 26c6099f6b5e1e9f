/* WebP through libwebp: lossy and lossless still pictures as RGB8 (an
 * alpha channel is dropped, not composited); animated ones are refused. */
#include <webp/decode.h>

#include "vision/image_formats.h"

static const char *status_name(VP8StatusCode s) {
  switch (s) {
  case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
  case VP8_STATUS_INVALID_PARAM: return "an invalid parameter";
  case VP8_STATUS_BITSTREAM_ERROR: return "a bitstream error";
  case VP8_STATUS_UNSUPPORTED_FEATURE: return "an unsupported feature";
  case VP8_STATUS_SUSPENDED: return "suspended";
  case VP8_STATUS_USER_ABORT: return "aborted";
  case VP8_STATUS_NOT_ENOUGH_DATA: return "the data ends early";
  default: return "an unknown error";
  }
}

nc_code nc_image_decode_webp(const uint8_t *bytes, size_t n,
                             const nucleus_image_limits *limits,
                             struct nucleus_image **out, nc_error *err) {
  *out = NULL;
  WebPBitstreamFeatures f;
  VP8StatusCode s = WebPGetFeatures(bytes, n, &f);
  if (s != VP8_STATUS_OK)
    return nc_fail(err, NC_ERR_FORMAT, "a corrupt WebP image: %s",
                   status_name(s));
  nc_code rc = nc_image_check_size("WebP", f.width, f.height, limits, err);
  if (rc != NC_OK) return rc;
  if (f.has_animation)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "an animated WebP image: send one frame as a still image");
  struct nucleus_image *img = NULL;
  rc = nc_image_alloc(f.width, f.height, &img, err);
  if (rc != NC_OK) return rc;
  size_t stride = (size_t)f.width * 3;
  if (!WebPDecodeRGBInto(bytes, n, img->rgb, stride * (size_t)f.height,
                         (int)stride)) {
    nc_image_free(img);
    return nc_fail(err, NC_ERR_FORMAT,
                   "a corrupt WebP image: its %dx%d picture does not decode",
                   f.width, f.height);
  }
  nc_image_rehash(img);
  *out = img;
  return NC_OK;
}
