/* PNG through libpng: palette, gray, 16-bit and alpha pictures become RGB8
 * the way stb_image makes them (palette looked up, gray copied to the
 * three channels, 16 bits cut to the high 8, alpha dropped); no gamma is
 * applied. A file must run to its end chunk. libpng's errors longjmp back here
 * with their message. An animated PNG (an acTL chunk before the image data) is
 * refused. */
#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "vision/image_formats.h"

/* Ancillary chunks (text, ICC profiles) are skipped beyond this size: a
 * compressed text chunk can inflate to far more than it takes. */
#define PNG_CHUNK_MAX (1u << 20)

typedef struct png_job {
  const uint8_t *bytes;
  size_t n, at;
  char message[256]; /* libpng's error */
  int animated;      /* an acTL chunk was seen */
  struct nucleus_image *img;
  png_bytep *rows;
} png_job;

static void on_error(png_structp png, png_const_charp msg) {
  png_job *job = png_get_error_ptr(png);
  snprintf(job->message, sizeof job->message, "%s", msg);
  png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

static void on_read(png_structp png, png_bytep out, size_t len) {
  png_job *job = png_get_io_ptr(png);
  if (len > job->n - job->at) png_error(png, "the data ends early");
  memcpy(out, job->bytes + job->at, len);
  job->at += len;
}

static int on_unknown_chunk(png_structp png, png_unknown_chunkp chunk) {
  png_job *job = png_get_user_chunk_ptr(png);
  if (!memcmp(chunk->name, "acTL", 4)) job->animated = 1;
  return 1; /* handled: skipped */
}

/* Everything that may longjmp; what it allocates lives in *job. */
static nc_code decode(png_structp png, png_infop info, png_job *job,
                      const nucleus_image_limits *limits, nc_error *err) {
  if (setjmp(png_jmpbuf(png)))
    return nc_fail(err, NC_ERR_FORMAT, "a corrupt PNG image: %s", job->message);
  png_set_read_fn(png, job, on_read);
  /* The size check is ours (below, an NC_ERR_LIMIT); libpng's own stops
   * only what the format forbids. */
  png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_set_chunk_malloc_max(png, PNG_CHUNK_MAX);
  static const png_byte actl[] = {'a', 'c', 'T', 'L', 0};
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_ALWAYS, actl, 1);
  png_set_read_user_chunk_fn(png, job, on_unknown_chunk);
  png_read_info(png, info);
  png_uint_32 w = png_get_image_width(png, info);
  png_uint_32 h = png_get_image_height(png, info);
  nc_code rc = nc_image_check_size("PNG", w, h, limits, err);
  if (rc != NC_OK) return rc;
  if (job->animated)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "an animated PNG (APNG): send one frame as a still image");
  int color = png_get_color_type(png, info);
  int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  /* an alpha channel, or one the palette's transparency entries add */
  if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS))
    png_set_strip_alpha(png);
  if (!(color & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != (size_t)w * 3 ||
      png_get_channels(png, info) != 3)
    return nc_fail(err, NC_ERR_INTERNAL,
                   "PNG: %zu bytes a row for %u pixels after the conversion "
                   "to RGB8",
                   (size_t)png_get_rowbytes(png, info), (unsigned)w);
  rc = nc_image_alloc((int32_t)w, (int32_t)h, &job->img, err);
  if (rc != NC_OK) return rc;
  job->rows = malloc(sizeof *job->rows * h);
  if (!job->rows)
    return nc_fail(err, NC_ERR_NOMEM, "out of memory for a %ux%u PNG",
                   (unsigned)w, (unsigned)h);
  for (png_uint_32 y = 0; y < h; y++)
    job->rows[y] = job->img->rgb + (size_t)y * w * 3;
  png_read_image(png, job->rows);
  png_read_end(png, NULL); /* a file cut after its pixels is refused too */
  return NC_OK;
}

nc_code nc_image_decode_png(const uint8_t *bytes, size_t n,
                            const nucleus_image_limits *limits,
                            struct nucleus_image **out, nc_error *err) {
  *out = NULL;
  png_job job = {.bytes = bytes, .n = n};
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, on_error, on_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info) {
    png_destroy_read_struct(&png, NULL, NULL);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory for libpng");
  }
  nc_code rc = decode(png, info, &job, limits, err);
  png_destroy_read_struct(&png, &info, NULL);
  free(job.rows);
  if (rc != NC_OK) {
    nc_image_free(job.img);
    return rc;
  }
  nc_image_rehash(job.img);
  *out = job.img;
  return NC_OK;
}
