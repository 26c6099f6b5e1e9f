/* image_formats: one decoder per file format, each over its Debian library
 * (libpng, libjpeg-turbo, libwebp). Each checks the header's size against
 * the limits before decoding and turns every library error into an
 * nc_error; none prints or exits. Internal to vision/: others call
 * nc_image_decode (image_decode.h), which picks one from the first bytes. */
#ifndef NC_IMAGE_FORMATS_H
#define NC_IMAGE_FORMATS_H

#include <stddef.h>
#include <stdint.h>

#include "vision/image.h"

nc_code nc_image_decode_png(const uint8_t *bytes, size_t n,
                            const nucleus_image_limits *limits,
                            struct nucleus_image **out, nc_error *err);
nc_code nc_image_decode_jpeg(const uint8_t *bytes, size_t n,
                             const nucleus_image_limits *limits,
                             struct nucleus_image **out, nc_error *err);
nc_code nc_image_decode_webp(const uint8_t *bytes, size_t n,
                             const nucleus_image_limits *limits,
                             struct nucleus_image **out, nc_error *err);

#endif
