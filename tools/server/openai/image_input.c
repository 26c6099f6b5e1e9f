/* nucleus serve: data: URIs, base64 and (--allow-image-urls) http(s) URLs
 * -> decoded images, bounded. */
#include "image_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/base64.h"
#include "image_fetch.h"

static bool starts(const char *s, size_t len, const char *prefix) {
  size_t n = strlen(prefix);
  return len >= n && !strncasecmp(s, prefix, n);
}

static int append(image_list *list, nucleus_image *img, const char *param,
                  const char *path, api_error *e) {
  int32_t w, h;
  nucleus_image_size(img, &w, &h);
  if (!list) {
    nucleus_image_free(img);
    return 0;
  }
  if (list->n == IMAGE_INPUT_MAX_IMAGES) {
    nucleus_image_free(img);
    return api_fail(e, 400, param, "%s: a request may carry at most %d images",
                    path, IMAGE_INPUT_MAX_IMAGES);
  }
  if (list->pixels + (int64_t)w * h > IMAGE_INPUT_MAX_PIXELS) {
    nucleus_image_free(img);
    return api_fail(e, 400, param,
                    "%s: with this %dx%d image the request's images hold %lld "
                    "pixels; at most %d together",
                    path, (int)w, (int)h,
                    (long long)(list->pixels + (int64_t)w * h),
                    IMAGE_INPUT_MAX_PIXELS);
  }
  if (list->n == list->cap) {
    size_t cap = list->cap ? list->cap * 2 : 4;
    nucleus_image **v = realloc(list->v, cap * sizeof *v);
    if (!v) {
      nucleus_image_free(img);
      return api_fail(e, 500, NULL, "out of memory");
    }
    list->v = v;
    list->cap = cap;
  }
  list->v[list->n++] = img;
  list->pixels += (int64_t)w * h;
  return 0;
}

static int from_base64(const char *data, size_t len, const char *param,
                       const char *path, uint8_t **bytes, size_t *n,
                       api_error *e) {
  size_t bad = 0;
  int rc = base64_decode(data, len, bytes, n, &bad);
  if (rc == -2) return api_fail(e, 500, NULL, "out of memory");
  if (rc < 0)
    return bad < len ? api_fail(e, 400, param,
                                "%s: not base64: character %zu of %zu is "
                                "0x%02x",
                                path, bad, len, (unsigned char)data[bad])
                     : api_fail(e, 400, param,
                                "%s: not base64: %zu characters cannot end "
                                "an encoding",
                                path, len);
  return 0;
}

/* The file a URL holds: a data: URI's bytes, or an http(s) URL's body
 * when allowed. */
static int url_bytes(const char *url, size_t len, bool allow_urls,
                     const char *param, const char *path, uint8_t **bytes,
                     size_t *n, api_error *e) {
  if (starts(url, len, "http://") || starts(url, len, "https://")) {
    if (!allow_urls)
      return api_fail(e, 400, param,
                      "%s: a remote image URL: this server fetches nothing a "
                      "request names (--allow-image-urls); send the image "
                      "inline (data:image/png;base64,...)",
                      path);
    if (len > IMAGE_FETCH_MAX_URL || memchr(url, 0, len))
      return api_fail(e, 400, param,
                      "%s: an image URL of %zu bytes (at most %d, no NUL)",
                      path, len, IMAGE_FETCH_MAX_URL);
    char why[256];
    int rc = image_fetch(url, bytes, n, why, sizeof why);
    if (rc == -2) return api_fail(e, 500, NULL, "out of memory");
    if (rc) return api_fail(e, 400, param, "%s: %.80s: %s", path, url, why);
    return 0;
  }
  if (!starts(url, len, "data:"))
    return api_fail(e, 400, param,
                    "%s: the url must be a data: URI "
                    "(data:image/png;base64,...)%s, got '%.16s'",
                    path, allow_urls ? " or an http(s) URL" : "", url);
  const char *comma = memchr(url, ',', len);
  if (!comma || !starts(url, len, "data:image/"))
    return api_fail(e, 400, param,
                    "%s: a data: URI of an image is "
                    "data:image/TYPE;base64,DATA",
                    path);
  size_t head = (size_t)(comma - url);
  if (head < strlen(";base64") ||
      strncasecmp(comma - strlen(";base64"), ";base64", strlen(";base64")))
    return api_fail(e, 400, param,
                    "%s: the data: URI must be base64 "
                    "(data:image/TYPE;base64,DATA)",
                    path);
  return from_base64(comma + 1, len - head - 1, param, path, bytes, n, e);
}

static int decode(const uint8_t *bytes, size_t n, const char *param,
                  const char *path, image_list *list, nucleus_image **out,
                  api_error *e) {
  nucleus_error err = {0};
  nucleus_status st = nucleus_image_decode(bytes, n, NULL, out, &err);
  if (st != NUCLEUS_OK)
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, param, "%s: %s",
                    path, err.message);
  if (list) list->n_decoded++;
  return 0;
}

/* The file list has seen with these bytes, or NULL. */
static image_seen *seen_file(image_list *list, const uint8_t *bytes, size_t n) {
  for (size_t i = 0; list && i < list->n_seen; i++)
    if (list->seen[i].img && list->seen[i].n == n &&
        !memcmp(list->seen[i].bytes, bytes, n))
      return &list->seen[i];
  return NULL;
}

/* Remembers img as the decoding of bytes (owned: the memo keeps it),
 * within the memo's bounds; else forgets it (freed when owned). */
static void remember(image_list *list, uint8_t **bytes, size_t n,
                     nucleus_image *img, bool owned) {
  int32_t w = 0, h = 0;
  nucleus_image_size(img, &w, &h);
  const int64_t px = owned ? (int64_t)w * h : 0;
  if (!list || list->n_seen == IMAGE_INPUT_MAX_IMAGES ||
      list->seen_pixels + px > IMAGE_INPUT_MAX_PIXELS) {
    if (owned) nucleus_image_free(img);
    return;
  }
  if (!list->seen) {
    list->seen = calloc(IMAGE_INPUT_MAX_IMAGES, sizeof *list->seen);
    if (!list->seen) {
      if (owned) nucleus_image_free(img);
      return;
    }
  }
  list->seen[list->n_seen++] =
      (image_seen){.bytes = *bytes, .n = n, .img = img, .owned = owned};
  list->seen_pixels += px;
  *bytes = NULL; /* the memo's now */
}

/* The image of a file for list: the memo's own (moved), a copy of one
 * already in the list, or a fresh decoding (remembered). Appended. */
static int take(uint8_t **bytes, size_t n, const char *param, const char *path,
                image_list *list, api_error *e) {
  image_seen *s = seen_file(list, *bytes, n);
  nucleus_image *img = NULL;
  if (s && s->owned) {
    img = s->img;
    int32_t w, h;
    nucleus_image_size(img, &w, &h);
    list->seen_pixels -= (int64_t)w * h;
    s->img = NULL; /* append frees it on a refusal */
    s->owned = false;
    if (append(list, img, param, path, e)) return -1;
    s->img = img;
    return 0;
  }
  if (s) {
    int32_t w, h;
    nucleus_image_size(s->img, &w, &h);
    nucleus_error err = {0};
    nucleus_status st =
        nucleus_image_from_rgb(nucleus_image_rgb(s->img), w, h, &img, &err);
    if (st != NUCLEUS_OK)
      return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, param, "%s: %s",
                      path, err.message);
    return append(list, img, param, path, e);
  }
  if (decode(*bytes, n, param, path, list, &img, e)) return -1;
  if (!list) {
    nucleus_image_free(img);
    return 0;
  }
  if (append(list, img, param, path, e)) return -1;
  remember(list, bytes, n, img, false);
  return 0;
}

/* Checks a file for a translation: decoded unless seen has it, kept in
 * seen for the chat path. */
static int check(uint8_t **bytes, size_t n, const char *param, const char *path,
                 image_list *seen, api_error *e) {
  if (seen_file(seen, *bytes, n)) return 0;
  nucleus_image *img = NULL;
  if (decode(*bytes, n, param, path, seen, &img, e)) return -1;
  if (seen)
    remember(seen, bytes, n, img, true);
  else
    nucleus_image_free(img);
  return 0;
}

int image_input_base64(const char *data, size_t len, const char *param,
                       const char *path, image_list *seen, api_error *e) {
  uint8_t *bytes = NULL;
  size_t n = 0;
  if (from_base64(data, len, param, path, &bytes, &n, e)) return -1;
  int rc = check(&bytes, n, param, path, seen, e);
  free(bytes);
  return rc;
}

int image_input_url(const char *url, size_t len, bool allow_urls,
                    const char *param, const char *path, image_list *list,
                    api_error *e) {
  uint8_t *bytes = NULL;
  size_t n = 0;
  if (url_bytes(url, len, allow_urls, param, path, &bytes, &n, e)) return -1;
  int rc = take(&bytes, n, param, path, list, e);
  free(bytes);
  return rc;
}

/* The media type of an image file, from its first bytes (the decoder
 * checks it; this only labels a data: URI). */
static const char *media_type(const uint8_t *b, size_t n) {
  if (n >= 8 && !memcmp(b, "\x89PNG", 4)) return "image/png";
  if (n >= 3 && !memcmp(b, "\xff\xd8\xff", 3)) return "image/jpeg";
  if (n >= 12 && !memcmp(b + 8, "WEBP", 4)) return "image/webp";
  return "image/unknown";
}

json_t *image_input_inline(const char *url, size_t len, bool allow_urls,
                           const char *param, const char *path,
                           image_list *seen, api_error *e) {
  uint8_t *bytes = NULL;
  size_t n = 0;
  if (url_bytes(url, len, allow_urls, param, path, &bytes, &n, e)) return NULL;
  /* the URI the chat request carries, made before check hands the bytes
   * to the memo */
  const bool data_uri = starts(url, len, "data:");
  json_t *out = NULL;
  if (!data_uri) {
    size_t b64_len = 0;
    char *b64 = base64_encode(bytes, n, &b64_len);
    const char *type = media_type(bytes, n);
    size_t total = strlen("data:;base64,") + strlen(type) + b64_len;
    char *uri = b64 ? malloc(total + 1) : NULL;
    if (uri) {
      snprintf(uri, total + 1, "data:%s;base64,%s", type, b64);
      out = json_stringn(uri, total);
    }
    free(uri);
    free(b64);
  } else {
    out = json_stringn(url, len);
  }
  if (!out) {
    free(bytes);
    api_fail(e, 500, NULL, "out of memory");
    return NULL;
  }
  if (check(&bytes, n, param, path, seen, e)) {
    json_decref(out);
    out = NULL;
  }
  free(bytes);
  return out;
}

void image_list_forget(image_list *list) {
  for (size_t i = 0; i < list->n_seen; i++) {
    if (list->seen[i].owned) nucleus_image_free(list->seen[i].img);
    free(list->seen[i].bytes);
  }
  free(list->seen);
  list->seen = NULL;
  list->n_seen = 0;
  list->seen_pixels = 0;
}

void image_list_clear(image_list *list) {
  image_list_forget(list);
  for (size_t i = 0; i < list->n; i++)
    nucleus_image_free(list->v[i]);
  free(list->v);
  *list = (image_list){.allow_urls = list->allow_urls};
}
