/* nucleus serve: images in request bodies -> decoded images. A chat
 * message's {"type": "image_url", "image_url": {"url": URL}} part, a
 * Responses input_image's image_url and an Anthropic image block's base64
 * source all arrive here; every error is a 400 naming the part's path.
 * data: URIs ("data:image/...;base64,...") are taken; http(s) URLs only on
 * a server started with --allow-image-urls (image_fetch.h), else the
 * server fetches nothing a request names. */
#ifndef NUCLEUS_SERVER_IMAGE_INPUT_H
#define NUCLEUS_SERVER_IMAGE_INPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/api_error.h"
#include "nucleus.h"

/* A file this request decoded: its bytes and its image (owned: the
 * memo's, decoded by a translator for the chat path; else one of v). */
typedef struct image_seen {
  uint8_t *bytes;
  size_t n;
  nucleus_image *img;
  bool owned;
} image_seen;

/* Images of one request, in the order their parts appear, and the files
 * it decoded: each distinct file is decoded once per request (a file seen
 * again is copied, a Messages or Responses image checked by the
 * translation is the one the chat path takes). */
typedef struct image_list {
  nucleus_image **v;
  size_t n, cap;
  int64_t pixels;   /* their pixels together */
  bool allow_urls;  /* --allow-image-urls: http(s) URLs are fetched */
  image_seen *seen; /* at most IMAGE_INPUT_MAX_IMAGES */
  size_t n_seen;
  int64_t seen_pixels; /* of the owned ones */
  size_t n_decoded;    /* files decoded (the tests' count) */
} image_list;

/* Most images one request may carry (the engine's bound), and their
 * pixels together (each image alone: nucleus_image_default_limits). */
#define IMAGE_INPUT_MAX_IMAGES NUCLEUS_MAX_IMAGES
#define IMAGE_INPUT_MAX_PIXELS 32000000

/* Decodes the image a URL holds (unless list has seen its file) and
 * appends it to list. param: the request field named in an error; path:
 * the part, e.g. "messages[1].content[0].image_url". */
int image_input_url(const char *url, size_t len, bool allow_urls,
                    const char *param, const char *path, image_list *list,
                    api_error *e);

/* For the APIs translated to chat requests (Messages, Responses): checks
 * the image a URL holds as image_input_url does and returns the URL the
 * chat request carries for it: the data: URI itself, or a data: URI of
 * the bytes an http(s) URL gave (fetched once, here). The decoded image is
 * kept in seen for the chat path (NULL: dropped). NULL with *e. */
json_t *image_input_inline(const char *url, size_t len, bool allow_urls,
                           const char *param, const char *path,
                           image_list *seen, api_error *e);

/* The same check for base64 data whose media type is given apart
 * (Anthropic's source): 0, or -1 with *e. */
int image_input_base64(const char *data, size_t len, const char *param,
                       const char *path, image_list *seen, api_error *e);

/* Drops the files list has seen (their bytes, the images not in v). */
void image_list_forget(image_list *list);

/* Frees the images and what list has seen; keeps allow_urls. */
void image_list_clear(image_list *list);

#endif
