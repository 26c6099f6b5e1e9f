/* image: a decoded picture as the vision encoders take it (RGB8, row-major,
 * no row padding) with a hash of its content, the key that tells two images
 * apart in the prefix cache. include/nucleus.h's nucleus_image is this
 * struct, opaque there. */
#ifndef NC_IMAGE_H
#define NC_IMAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

struct nucleus_image {
  int32_t width;    /* pixels, >= 1 */
  int32_t height;   /* pixels, >= 1 */
  uint8_t *rgb;     /* width * height * 3 bytes (R, G, B), owned */
  uint64_t hash[2]; /* 128-bit hash of width, height and the rgb bytes */
};

/* A width x height image with its rgb bytes allocated, not yet filled
 * (fill them, then nc_image_rehash). width, height in 1..
 * NUCLEUS_IMAGE_MAX_SIDE with width * height <= NUCLEUS_IMAGE_MAX_PIXELS. */
nc_code nc_image_alloc(int32_t width, int32_t height,
                       struct nucleus_image **out, nc_error *err);

/* Computes image->hash from its size and bytes (not cryptographic: two
 * different pictures share a hash by accident with odds of 2^-128, but one
 * can be crafted to collide). */
void nc_image_rehash(struct nucleus_image *image);

void nc_image_free(struct nucleus_image *image);

/* Whether a and b are the same picture: size and every byte (not the hash
 * alone, which can be made to collide). */
bool nc_image_same(const struct nucleus_image *a,
                   const struct nucleus_image *b);

/* Checks a picture's size, read from a file's header, against limits
 * before anything is allocated: "format" names the file's kind in the
 * message. NC_ERR_LIMIT or NC_ERR_FORMAT (a zero side). */
nc_code nc_image_check_size(const char *format, int64_t width, int64_t height,
                            const nucleus_image_limits *limits, nc_error *err);

/* Checks limits themselves: each in 1..its NUCLEUS_IMAGE_MAX_* ceiling. */
nc_code nc_image_limits_check(const nucleus_image_limits *limits,
                              nc_error *err);

#endif
