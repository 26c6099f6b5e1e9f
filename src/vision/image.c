/* The decoded image: allocation, size checks and the content hash. */
#include "vision/image.h"

#include <stdlib.h>
#include <string.h>

nc_code nc_image_limits_check(const nucleus_image_limits *limits,
                              nc_error *err) {
  if (limits->max_side < 1 || limits->max_side > NUCLEUS_IMAGE_MAX_SIDE)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "image limits: max_side %d is not in 1..%d",
                   (int)limits->max_side, NUCLEUS_IMAGE_MAX_SIDE);
  if (limits->max_pixels < 1 || limits->max_pixels > NUCLEUS_IMAGE_MAX_PIXELS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "image limits: max_pixels %lld is not in 1..%lld",
                   (long long)limits->max_pixels,
                   (long long)NUCLEUS_IMAGE_MAX_PIXELS);
  return NC_OK;
}

nc_code nc_image_check_size(const char *format, int64_t width, int64_t height,
                            const nucleus_image_limits *limits, nc_error *err) {
  if (width < 1 || height < 1)
    return nc_fail(err, NC_ERR_FORMAT, "a %s image of %lldx%lld pixels", format,
                   (long long)width, (long long)height);
  if (width > limits->max_side || height > limits->max_side)
    return nc_fail(err, NC_ERR_LIMIT,
                   "a %s image of %lldx%lld pixels: each side may be at most "
                   "%d",
                   format, (long long)width, (long long)height,
                   (int)limits->max_side);
  if (width * height > limits->max_pixels)
    return nc_fail(err, NC_ERR_LIMIT,
                   "a %s image of %lldx%lld = %lld pixels: at most %lld are "
                   "taken",
                   format, (long long)width, (long long)height,
                   (long long)(width * height), (long long)limits->max_pixels);
  return NC_OK;
}

nc_code nc_image_alloc(int32_t width, int32_t height,
                       struct nucleus_image **out, nc_error *err) {
  *out = NULL;
  const nucleus_image_limits ceiling = {NUCLEUS_IMAGE_MAX_SIDE,
                                        NUCLEUS_IMAGE_MAX_PIXELS};
  nc_code rc = nc_image_check_size("RGB", width, height, &ceiling, err);
  if (rc != NC_OK) return rc;
  struct nucleus_image *img = calloc(1, sizeof *img);
  size_t bytes = (size_t)width * (size_t)height * 3;
  if (img) img->rgb = malloc(bytes);
  if (!img || !img->rgb) {
    free(img);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory for a %dx%d image",
                   (int)width, (int)height);
  }
  img->width = width;
  img->height = height;
  *out = img;
  return NC_OK;
}

void nc_image_free(struct nucleus_image *image) {
  if (!image) return;
  free(image->rgb);
  free(image);
}

bool nc_image_same(const struct nucleus_image *a,
                   const struct nucleus_image *b) {
  return a->width == b->width && a->height == b->height &&
         a->hash[0] == b->hash[0] && a->hash[1] == b->hash[1] &&
         !memcmp(a->rgb, b->rgb, (size_t)a->width * (size_t)a->height * 3);
}

/* Two 64-bit lanes, each a multiply-rotate over the 8-byte words with its
 * own seed and multiplier, then a finaliser that spreads every bit. */
static uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

static uint64_t mix_final(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

void nc_image_rehash(struct nucleus_image *image) {
  const uint64_t m1 = 0x87c37b91114253d5ULL, m2 = 0x4cf5ad432745937fULL;
  uint64_t a = 0x9e3779b97f4a7c15ULL ^ (uint64_t)image->width;
  uint64_t b = 0xd6e8feb86659fd93ULL ^ ((uint64_t)image->height << 32);
  size_t n = (size_t)image->width * (size_t)image->height * 3;
  const uint8_t *p = image->rgb;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    a = rotl(a ^ (w * m1), 31) * m2;
    b = rotl(b ^ (w * m2), 27) * m1 + a;
  }
  uint64_t tail = 0;
  memcpy(&tail, p + i, n - i);
  a = rotl(a ^ (tail * m1), 31) * m2 ^ (uint64_t)n;
  b = rotl(b ^ (tail * m2), 27) * m1 + a;
  image->hash[0] = mix_final(a + b);
  image->hash[1] = mix_final(b + image->hash[0]);
}
