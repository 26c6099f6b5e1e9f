/* engine_images: a request's images at submit (engine_images.h). */
#include "engine_images.h"

#include <stdlib.h>
#include <string.h>

#include "vision/image.h"
#include "vision/mmproj.h"

nc_code nc_images_prepare(const nucleus_mmproj *mm, int32_t max_batch,
                          const int32_t *prompt, size_t n_prompt,
                          const nucleus_request_params *p, int32_t **keyed,
                          int32_t **image_at, int32_t **image_rows,
                          nc_error *err) {
  *keyed = *image_at = *image_rows = NULL;
  if (p->n_images == 0) return NC_OK;
  if (!mm)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "images: %zu given; this engine has no mmproj (--mmproj)",
                   p->n_images);
  if (p->n_images > NUCLEUS_MAX_IMAGES)
    return nc_fail(err, NC_ERR_LIMIT, "images: %zu given, at most %d",
                   p->n_images, NUCLEUS_MAX_IMAGES);
  if (!p->images)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "images: n_images is %zu but images is NULL", p->n_images);
  if (p->beam_width > 1)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "images: beam search (beam_width %d) does not take images",
                   p->beam_width);
  if (p->speculative.type != NUCLEUS_SPEC_OFF)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "images: speculative decoding does not take images");
  for (size_t i = 0; i < p->n_images; i++)
    if (!p->images[i])
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "images[%zu] is NULL", i);
  int32_t *k = malloc(n_prompt * sizeof *k);
  int32_t *at = malloc(p->n_images * sizeof *at);
  int32_t *rows = malloc(p->n_images * sizeof *rows);
  if (!k || !at || !rows) {
    free(k);
    free(at);
    free(rows);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  nc_code rc = NC_OK;
  size_t img = 0;
  for (size_t i = 0; i < n_prompt && rc == NC_OK;) {
    if (prompt[i] != NUCLEUS_TOKEN_IMAGE) {
      k[i] = prompt[i];
      i++;
      continue;
    }
    if (img == p->n_images) {
      rc = nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "prompt[%zu]: an image row past the %zu images' rows", i,
                   p->n_images);
      break;
    }
    const nucleus_image *im = p->images[img];
    const int32_t n = nc_mmproj_image_tokens(mm, im);
    if (n > max_batch) {
      rc = nc_fail(err, NC_ERR_LIMIT,
                   "images[%zu]: %d rows, more than the engine's batch of %d "
                   "tokens (max_batch_tokens) takes at once",
                   img, (int)n, (int)max_batch);
      break;
    }
    for (int32_t r = 0; r < n; r++) {
      if (i + (size_t)r >= n_prompt ||
          prompt[i + (size_t)r] != NUCLEUS_TOKEN_IMAGE) {
        rc = nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "prompt[%zu]: images[%zu] needs %d NUCLEUS_TOKEN_IMAGE "
                     "entries from prompt[%zu] on, found %d",
                     i + (size_t)r, img, (int)n, i, (int)r);
        break;
      }
      k[i + (size_t)r] = nc_image_row_token(im->hash, r);
    }
    at[img] = (int32_t)i;
    rows[img] = n;
    i += (size_t)n;
    img++;
  }
  if (rc == NC_OK && img != p->n_images)
    rc = nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                 "images: %zu given, the prompt has rows for %zu", p->n_images,
                 img);
  if (rc != NC_OK) {
    free(k);
    free(at);
    free(rows);
    return rc;
  }
  *keyed = k;
  *image_at = at;
  *image_rows = rows;
  return NC_OK;
}

nucleus_image **nc_images_copy(const nucleus_image *const *images, size_t n) {
  nucleus_image **out = calloc(n, sizeof *out);
  if (!out) return NULL;
  for (size_t i = 0; i < n; i++) {
    const nucleus_image *src = images[i];
    const size_t bytes = (size_t)3 * (size_t)src->width * (size_t)src->height;
    out[i] = malloc(sizeof *out[i]);
    uint8_t *rgb = out[i] ? malloc(bytes) : NULL;
    if (!rgb) {
      free(out[i]);
      out[i] = NULL;
      nc_images_free(out, n);
      return NULL;
    }
    *out[i] = *src;
    memcpy(rgb, src->rgb, bytes);
    out[i]->rgb = rgb;
  }
  return out;
}

void nc_images_free(nucleus_image **images, size_t n) {
  for (size_t i = 0; images && i < n; i++) {
    if (!images[i]) continue;
    free(images[i]->rgb);
    free(images[i]);
  }
  free(images);
}

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int32_t nc_image_row_token(const uint64_t h[2], int32_t row) {
  const uint64_t z =
      mix64(mix64(h[0] ^ (0x9E3779B97F4A7C15ull * (uint64_t)(row + 1))) ^ h[1]);
  const int32_t v = (int32_t)(0x80000000u | (uint32_t)(z & 0x7FFFFFFFu));
  return v >= -2 ? INT32_MIN : v;
}

void nc_mrope_row_pos(const nucleus_mmproj *mm,
                      const nucleus_image *const *images,
                      const int32_t *image_at, const int32_t *image_rows,
                      size_t n_images, int32_t pos, int32_t out[4]) {
  int32_t shift = 0; /* the places the images before pos give back */
  for (size_t i = 0; i < n_images; i++) {
    const int32_t s = image_at[i], end = s + image_rows[i];
    if (pos < s) break;
    int32_t nx, ny;
    nc_mmproj_image_grid(mm, images[i], &nx, &ny);
    if (pos < end) { /* row k of the image: (p0, p0 + k / nx, p0 + k % nx) */
      const int32_t p0 = s - shift, k = pos - s;
      out[0] = p0;
      out[1] = p0 + k / nx;
      out[2] = p0 + k % nx;
      out[3] = 0;
      return;
    }
    shift += image_rows[i] - (nx > ny ? nx : ny);
  }
  const int32_t p = pos - shift;
  out[0] = out[1] = out[2] = p;
  out[3] = 0;
}
