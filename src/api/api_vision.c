/* The public projector calls (include/nucleus.h, "images"): loading an
 * mmproj beside a model, the rows an image becomes, encoding, and
 * tokenizing a prompt whose text marks its images. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "nucleus.h"
#include "tokenizer/vocab.h"
#include "vision/mmproj.h"

static nc_file_load load_of(const nucleus_model_params *p) {
  if (!p) return NC_FILE_AUTO;
  switch (p->load_mode) {
  case NUCLEUS_LOAD_READ: return NC_FILE_READ;
  case NUCLEUS_LOAD_MMAP: return NC_FILE_MMAP;
  case NUCLEUS_LOAD_AUTO: break;
  }
  return NC_FILE_AUTO;
}

NUCLEUS_API nucleus_status
nucleus_mmproj_load(const char *path, const nucleus_model *model,
                    const nucleus_model_params *params, nucleus_mmproj **out,
                    nucleus_error *err) {
  if (!out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "'out' must not be NULL");
  *out = NULL;
  if (params && (params->n_threads < 0 || params->n_threads > 1024))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'n_threads' must be in [0, 1024], got %d",
                   params->n_threads);
  return nc_mmproj_load(path, model, load_of(params),
                        params ? params->n_threads : 0, out, err);
}

NUCLEUS_API void nucleus_mmproj_free(nucleus_mmproj *mmproj) {
  nc_mmproj_free(mmproj);
}

NUCLEUS_API const char *nucleus_mmproj_projector(const nucleus_mmproj *mmproj) {
  return mmproj ? nc_mmproj_projector(mmproj) : "";
}

NUCLEUS_API int32_t nucleus_mmproj_n_embd(const nucleus_mmproj *mmproj) {
  return mmproj ? nc_mmproj_n_embd(mmproj) : 0;
}

static nc_code check_pair(const nucleus_mmproj *mm, const nucleus_image *image,
                          nc_error *err) {
  if (!mm) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "mmproj is NULL");
  if (!image) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "image is NULL");
  return NC_OK;
}

NUCLEUS_API nucleus_status nucleus_mmproj_image_tokens(
    const nucleus_mmproj *mmproj, const nucleus_image *image, int32_t *n_tokens,
    nucleus_error *err) {
  if (n_tokens) *n_tokens = 0;
  nc_code rc = check_pair(mmproj, image, err);
  if (rc != NC_OK) return rc;
  if (n_tokens) *n_tokens = nc_mmproj_image_tokens(mmproj, image);
  return NC_OK;
}

NUCLEUS_API nucleus_status nucleus_mmproj_encode(const nucleus_mmproj *mmproj,
                                                 const nucleus_image *image,
                                                 float *out, size_t cap,
                                                 nucleus_error *err) {
  nc_code rc = check_pair(mmproj, image, err);
  if (rc != NC_OK) return rc;
  const size_t need = (size_t)nc_mmproj_image_tokens(mmproj, image) *
                      (size_t)nc_mmproj_n_embd(mmproj);
  if (!out || cap < need)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'cap' %zu floats is below the %zu the image's rows take "
                   "(%d rows of %d)",
                   cap, need, (int)nc_mmproj_image_tokens(mmproj, image),
                   (int)nc_mmproj_n_embd(mmproj));
  return nc_mmproj_encode(mmproj, image, NULL, out, err);
}

/* ---- prompts with images */

typedef struct ids_buf {
  int32_t *v;
  size_t n, cap;
} ids_buf;

static nc_code push(ids_buf *b, const int32_t *ids, size_t n, int32_t fill,
                    nc_error *err) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n)
      cap *= 2;
    int32_t *g = realloc(b->v, cap * sizeof *g);
    if (!g) return nc_fail(err, NC_ERR_NOMEM, "out of memory for a prompt");
    b->v = g;
    b->cap = cap;
  }
  for (size_t i = 0; i < n; i++)
    b->v[b->n + i] = ids ? ids[i] : fill;
  b->n += n;
  return NC_OK;
}

static nc_code push_text(ids_buf *b, const nc_vocab *v, const char *text,
                         size_t len, bool first, nc_error *err) {
  if (!first && len == 0) return NC_OK;
  int32_t *ids = NULL;
  size_t n = 0;
  nc_code rc =
      first ? nc_tokenize_chat_prompt(v, text, len, NULL, 0, &ids, &n, err)
            : nc_tokenize(v, text, len, false, true, &ids, &n, err);
  if (rc == NC_OK) rc = push(b, ids, n, 0, err);
  free(ids);
  return rc;
}

static size_t count_markers(const char *text, size_t len) {
  const size_t ml = strlen(NUCLEUS_MEDIA_MARKER);
  size_t n = 0;
  for (size_t i = 0; i + ml <= len;) {
    if (memcmp(text + i, NUCLEUS_MEDIA_MARKER, ml) == 0) {
      n++;
      i += ml;
    } else {
      i++;
    }
  }
  return n;
}

NUCLEUS_API nucleus_status nucleus_tokenize_with_images(
    const nucleus_model *model, const nucleus_mmproj *mmproj, const char *text,
    size_t len, const nucleus_image *const *images, size_t n_images,
    int32_t **ids_out, size_t *n_out, nucleus_error *err) {
  if (!ids_out || !n_out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'ids_out' and 'n_out' must not be NULL");
  *ids_out = NULL;
  *n_out = 0;
  const nc_vocab *v = model ? nc_model_vocab(model) : NULL;
  if (!v)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   model ? "the model has no vocabulary" : "model is NULL");
  if (!text && len)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "text is NULL");
  if (n_images > NUCLEUS_MAX_IMAGES)
    return nc_fail(err, NC_ERR_LIMIT, "%zu images: at most %d per prompt",
                   n_images, NUCLEUS_MAX_IMAGES);
  if (n_images && !mmproj)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "a prompt with images needs an mmproj (NULL given)");
  for (size_t i = 0; i < n_images; i++)
    if (!images || !images[i])
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "image %zu is NULL", i);
  const size_t markers = count_markers(text, len);
  if (markers != n_images)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "the text has %zu image markers ('%s') for %zu images: "
                   "one marker per image",
                   markers, NUCLEUS_MEDIA_MARKER, n_images);
  const size_t ml = strlen(NUCLEUS_MEDIA_MARKER);
  ids_buf b = {0};
  nc_code rc = NC_OK;
  size_t start = 0, img = 0;
  bool first = true;
  /* as llama.cpp's mtmd: each text piece tokenized alone (special-token
   * text parsed), the image's begin and end text as pieces of their own */
  for (size_t i = 0; i + ml <= len && rc == NC_OK;) {
    if (memcmp(text + i, NUCLEUS_MEDIA_MARKER, ml) != 0) {
      i++;
      continue;
    }
    rc = push_text(&b, v, text + start, i - start, first, err);
    first = false;
    const char *beg = nc_mmproj_image_begin(mmproj);
    const char *end = nc_mmproj_image_end(mmproj);
    if (rc == NC_OK) rc = push_text(&b, v, beg, strlen(beg), false, err);
    if (rc == NC_OK)
      rc = push(&b, NULL, (size_t)nc_mmproj_image_tokens(mmproj, images[img]),
                NUCLEUS_TOKEN_IMAGE, err);
    if (rc == NC_OK) rc = push_text(&b, v, end, strlen(end), false, err);
    img++;
    i += ml;
    start = i;
  }
  if (rc == NC_OK) rc = push_text(&b, v, text + start, len - start, first, err);
  if (rc != NC_OK) {
    free(b.v);
    return rc;
  }
  *ids_out = b.v;
  *n_out = b.n;
  return NC_OK;
}
