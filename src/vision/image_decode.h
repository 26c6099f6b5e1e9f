/* image_decode: bytes of an image file -> a decoded image. The format is
 * read from the first bytes (PNG, JPEG, WebP; other known formats are
 * refused by name), the size from the header and checked against the
 * limits before anything is decoded. */
#ifndef NC_IMAGE_DECODE_H
#define NC_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "vision/image.h"

/* limits: checked (nc_image_limits_check). */
nc_code nc_image_decode(const uint8_t *bytes, size_t n,
                        const nucleus_image_limits *limits,
                        struct nucleus_image **out, nc_error *err);

#endif
