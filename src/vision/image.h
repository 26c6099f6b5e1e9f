/* image: a decoded picture as the vision encoders take it (RGB8, row-major,
 * no row padding) with a hash of its content, the key that tells two images
 * apart in the prefix cache. include/nucleus.h's nucleus_image is this
 * struct, opaque there. */
#ifndef NC_IMAGE_H
#define NC_IMAGE_H

#include <stdint.h>

struct nucleus_image {
  int32_t width;    /* pixels, >= 1 */
  int32_t height;   /* pixels, >= 1 */
  uint8_t *rgb;     /* width * height * 3 bytes (R, G, B), owned */
  uint64_t hash[2]; /* 128-bit hash of width, height and the rgb bytes */
};

#endif
