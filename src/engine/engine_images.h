/* engine_images: a request's images in the engine (docs/VISION.md): the
 * checks of submit, the copies a request keeps, the rows' keys and M-RoPE
 * positions (their encodes, sliced over the steps: engine_image_jobs.c). */
#ifndef NC_ENGINE_IMAGES_H
#define NC_ENGINE_IMAGES_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "nucleus.h"

/* Checks params' images against the prompt (each image's run of
 * NUCLEUS_TOKEN_IMAGE entries, in order, of nc_mmproj_image_tokens rows;
 * an image's rows at most max_batch: one forward takes them whole) and
 * the features images do not run with; then makes the prompt the request
 * keeps (each row its key, nc_image_row_token) and each image's first
 * position and row count. Without images: nothing made (NULLs). */
nc_code nc_images_prepare(const nucleus_mmproj *mm, int32_t max_batch,
                          const int32_t *prompt, size_t n_prompt,
                          const nucleus_request_params *p, int32_t **keyed,
                          int32_t **image_at, int32_t **image_rows,
                          nc_error *err);

/* Deep copies of n images (a request's own: the caller may free theirs
 * once submit returns); NULL when out of memory. */
nucleus_image **nc_images_copy(const nucleus_image *const *images, size_t n);
void nc_images_free(nucleus_image **images, size_t n);

/* The key of row `row` of an image (its content hash h), as a prompt
 * entry: a negative value (never NUCLEUS_TOKEN_IMAGE or -1) that the prefix
 * cache hashes like a token, so blocks holding an image's rows are named by
 * its content: the same image hits, another one never does. */
int32_t nc_image_row_token(const uint64_t h[2], int32_t row);

/* The M-RoPE position (t, h, w, e) of KV place pos of a prompt whose
 * images (n_images, in order) take the rows [image_at[i], image_at[i] +
 * image_rows[i]), as llama.cpp's mtmd lays them out: row k of an image of
 * nx x ny merged rows at (p0, p0 + k / nx, p0 + k % nx, 0), p0 the rope
 * position its first row would have had as text, and the text after it
 * going on from p0 + max(nx, ny) (a text row (p, p, p, 0)). */
void nc_mrope_row_pos(const nucleus_mmproj *mm,
                      const nucleus_image *const *images,
                      const int32_t *image_at, const int32_t *image_rows,
                      size_t n_images, int32_t pos, int32_t out[4]);

#endif
