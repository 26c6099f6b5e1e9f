/* image_resize: llama.cpp's image preprocessing (tools/mtmd/mtmd-image.cpp):
 * Pillow's separable resampling in fixed point, the letterbox fit, and the
 * normalisation to floats. */
#ifndef NC_IMAGE_RESIZE_H
#define NC_IMAGE_RESIZE_H

#include <stdint.h>

#include "base/status.h"

typedef enum nc_resize_filter {
  NC_RESIZE_BILINEAR = 1, /* support 1: the triangle */
  NC_RESIZE_BICUBIC = 2,  /* support 2: Pillow's cubic, a = -0.5 */
} nc_resize_filter;

/* src (sw x sh RGB8) resized to dw x dh into dst (3 dw dh bytes), as
 * llama.cpp's resize_pillow: horizontal pass then vertical, 22-bit
 * fixed-point weights, rounding and clamping per pass. */
nc_code nc_image_resize(const uint8_t *src, int32_t sw, int32_t sh,
                        uint8_t *dst, int32_t dw, int32_t dh,
                        nc_resize_filter filter, nc_error *err);

/* src fitted into a size x size square keeping its aspect ratio (sides
 * ceil(side * min(size / w, size / h)) at most size), centred on black,
 * as llama.cpp's img_tool::resize with PAD_CEIL; an image of that size
 * already is copied. dst: 3 size^2 bytes. */
nc_code nc_image_fit_square(const uint8_t *src, int32_t sw, int32_t sh,
                            uint8_t *dst, int32_t size, nc_resize_filter filter,
                            nc_error *err);

/* The same into a dw x dh rectangle (Qwen's smart-resized size): sides
 * ceil(side * min(dw / w, dh / h)) at most dw, dh, centred on black. */
nc_code nc_image_fit(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst,
                     int32_t dw, int32_t dh, nc_resize_filter filter,
                     nc_error *err);

/* dst[i] = (src[i] / 255 - mean[c]) / std[c] over n pixels (interleaved). */
void nc_image_normalize(const uint8_t *src, int64_t n_pixels,
                        const float mean[3], const float std[3], float *dst);

#endif
