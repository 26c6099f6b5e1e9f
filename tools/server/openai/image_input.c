/* nucleus serve: data: URIs and base64 -> decoded images, bounded. */
#include "image_input.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/base64.h"

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

int image_input_base64(const char *data, size_t len, const char *param,
                       const char *path, image_list *list, api_error *e) {
  uint8_t *bytes = NULL;
  size_t n = 0, bad = 0;
  int rc = base64_decode(data, len, &bytes, &n, &bad);
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
  nucleus_image *img = NULL;
  nucleus_error err = {0};
  nucleus_status st = nucleus_image_decode(bytes, n, NULL, &img, &err);
  free(bytes);
  if (st != NUCLEUS_OK)
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, param, "%s: %s",
                    path, err.message);
  return append(list, img, param, path, e);
}

int image_input_url(const char *url, size_t len, const char *param,
                    const char *path, image_list *list, api_error *e) {
  if (starts(url, len, "http://") || starts(url, len, "https://"))
    return api_fail(e, 400, param,
                    "%s: a remote image URL: nucleus fetches nothing a "
                    "request names; send the image inline as a data: URI "
                    "(data:image/png;base64,...)",
                    path);
  if (!starts(url, len, "data:"))
    return api_fail(e, 400, param,
                    "%s: the url must be a data: URI "
                    "(data:image/png;base64,...), got '%.16s'",
                    path, url);
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
  return image_input_base64(comma + 1, len - head - 1, param, path, list, e);
}

void image_list_clear(image_list *list) {
  for (size_t i = 0; i < list->n; i++)
    nucleus_image_free(list->v[i]);
  free(list->v);
  *list = (image_list){0};
}
