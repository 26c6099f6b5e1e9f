/* nucleus serve: bounded http(s) fetches of image URLs (libcurl). */
#include "image_fetch.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nucleus.h"

typedef struct sink {
  uint8_t *p;
  size_t n, cap;
  bool over, nomem;
} sink;

static size_t on_data(char *data, size_t size, size_t count, void *arg) {
  sink *s = arg;
  size_t k = size * count;
  if (k > IMAGE_FETCH_MAX_BYTES - s->n) {
    s->over = true;
    return 0; /* stops the transfer */
  }
  if (s->n + k > s->cap) {
    size_t cap = s->cap ? s->cap : 1 << 16;
    while (cap < s->n + k)
      cap *= 2;
    uint8_t *p = realloc(s->p, cap);
    if (!p) {
      s->nomem = true;
      return 0;
    }
    s->p = p;
    s->cap = cap;
  }
  memcpy(s->p + s->n, data, k);
  s->n += k;
  return k;
}

int image_fetch_init(void) {
  return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

int image_fetch(const char *url, uint8_t **out, size_t *n, char *why,
                size_t cap) {
  *out = NULL;
  *n = 0;
  CURL *c = curl_easy_init();
  if (!c) return -2;
  sink s = {0};
  char err[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)IMAGE_FETCH_TIMEOUT_MS);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE,
                   (curl_off_t)IMAGE_FETCH_MAX_BYTES);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "nucleus/" NUCLEUS_VERSION);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  int result = 0;
  if (s.nomem) {
    result = -2;
  } else if (s.over || rc == CURLE_FILESIZE_EXCEEDED) {
    snprintf(why, cap, "the image is larger than %u bytes",
             IMAGE_FETCH_MAX_BYTES);
    result = -1;
  } else if (rc == CURLE_OPERATION_TIMEDOUT) {
    snprintf(why, cap, "fetching it took longer than %d ms",
             IMAGE_FETCH_TIMEOUT_MS);
    result = -1;
  } else if (rc != CURLE_OK) {
    snprintf(why, cap, "fetching it failed: %s",
             err[0] ? err : curl_easy_strerror(rc));
    result = -1;
  } else if (status != 200) {
    snprintf(why, cap, "fetching it answered HTTP %ld, not 200", status);
    result = -1;
  }
  if (result) {
    free(s.p);
    return result;
  }
  *out = s.p;
  *n = s.n;
  return 0;
}
